"""The Prometheus exporter: `/metrics` for one gapwatch session, served by prometheus-client.

Who calls it: the runtime (`gapwatch.engine.runtime`) calls
`start_exporter(config.prometheus.listen, session, status_fn)` when `--prometheus HOST:PORT` is
given to `watch`, `record` or `replay`, and
`handle.stop()` when it stops. Tests call it the same way.

How it works, and why:
- `MetricsSink` (gapwatch.sinks.metrics) is a session Sink. It counts what must never be
  missed between two scrapes: closed gaps and their seconds by GPU and kind (a gap's seconds
  are counted once, when it closes), prover log events by kind, unparsed lines, samples,
  notices, and the sampler's tick lateness (a histogram). It is called under the session
  lock, so it only bumps integers.
- `GapwatchCollector` builds every family at scrape time: the counters above, plus gauges read
  from `session.store.snapshot()` (latest SM activity, PCIe rates, chaining state, host memory
  pressure, open gaps). Reading the store at scrape time costs nothing between scrapes.
- Everything lives in a private `CollectorRegistry`, never prometheus-client's global one, so
  two sessions (or two tests) in one process never collide.
- A reading that is None is left out of its family (the series goes absent for that scrape),
  never exported as 0: Prometheus then shows a hole, as the dashboard does.

Bind address: a bare port (`9400`, `:9400`) binds 127.0.0.1. Binding wider (`0.0.0.0:9400`) is
the user's explicit choice: the endpoint has no authentication (see docs/export.md).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
)

from gapwatch import __version__
from gapwatch.base.watch import thread_label
from gapwatch.config import split_listen
from gapwatch.core import fmt
from gapwatch.core.chaining import ChainingFigure
from gapwatch.core.health import CLOCKS_EVENT_REASONS
from gapwatch.core.ledger import Tally
from gapwatch.core.models import (
    CHAIN_STATES,
    GAP_KINDS,
    HARDWARE_EVENT_KINDS,
    BlindSpot,
    GpuHealth,
    GpuSample,
    LinkState,
    Notice,
    ProcessMemory,
    SessionHeader,
)
from gapwatch.core.sizes import TEXT_CHARS, cut_text
from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.core.util_figure import UtilFigure
from gapwatch.cuzk.causes import PROVER_CAUSES
from gapwatch.cuzk.prover import view_of
from gapwatch.logs.parse import BUILT_IN_KINDS
from gapwatch.sinks.metrics import LATENESS_BUCKETS_S, MetricsSink, SinkCounts
from gapwatch.sinks.metrics_server import MetricsServer, ServerLimits
from gapwatch.sinks.proof_advice_metrics import proof_advice_families
from gapwatch.sinks.prover_event_metrics import families as prover_event_families
from gapwatch.sinks.prover_metrics import prover_families
from gapwatch.sinks.verdict_metrics import verdict_families
from gapwatch.sources.cuzk_status import PollerStatus


class _SnapshotSource(Protocol):
    def snapshot(self) -> StoreSnapshot: ...


class ExportedSession(Protocol):
    """What the exporter needs of a session: its store's snapshot, its header, and a place for
    the metrics sink (`gapwatch.engine.session.Session` is one; the exporter sits below the
    engine and never imports it)."""

    @property
    def store(self) -> _SnapshotSource: ...

    @property
    def header(self) -> SessionHeader: ...

    def add_sink(self, sink: MetricsSink) -> None: ...

    def on_notice(self, notice: Notice) -> None: ...


class ExporterError(Exception):
    """The exporter cannot start (bad address, port in use). The message is for the user."""


def parse_listen(listen: str) -> tuple[str, int]:
    """Split `HOST:PORT`, `:PORT` or `PORT` (IPv6 as `[::1]:PORT`) into (host, port).

    A missing host means 127.0.0.1: serving metrics beyond loopback must be asked for.

    Raises:
        ExporterError: the text is not an address with a port in 0..65535.
    """
    try:
        return split_listen(listen, "--prometheus")
    except ValueError as exc:
        raise ExporterError(str(exc)) from None


def _gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"gapwatch_{name}", doc, labels=labels)


def _ratio(pct: float | None) -> float | None:
    return None if pct is None else pct / 100.0


#: The families `gapwatch_exporter_verdict_errors_total{family}` counts the failures of
#: (bounded): the GPUs' verdict (`gapwatch_gpu_verdict*`) and the PoSt advice
#: (`gapwatch_proof_advice_info`). One count for both did not say which went dark.
VERDICT_FAMILIES = ("verdict", "proof_advice")


class GapwatchCollector:
    """Builds every gapwatch metric family at scrape time (a prometheus-client custom collector)."""

    def __init__(
        self,
        session: ExportedSession,
        sink: MetricsSink,
        status_fn: Callable[[], Any] | None = None,
    ) -> None:
        self._session = session
        self._sink = sink
        self._status_fn = status_fn
        self.status_errors = 0
        #: Scrapes whose verdict families could not be built, by which (`VERDICT_FAMILIES`:
        #: the GPUs' verdict, `_verdicts`; the PoSt advice, `_proof_advice`), and the kinds of
        #: error already said (each said once, then only counted).
        self.verdict_errors: dict[str, int] = dict.fromkeys(VERDICT_FAMILIES, 0)
        self._verdict_errors_said: set[tuple[str, str]] = set()

    def describe(self) -> Iterable[Metric]:
        # Returning nothing keeps registration from calling collect() (which reads the store).
        return []

    def collect(self) -> Iterator[Metric]:
        for metric in self._families():
            yield _inert_labels(metric)

    def _families(self) -> Iterator[Metric]:
        snap = self._session.store.snapshot()
        counts = self._sink.copy_counts()
        header = self._session.header
        status, logs, log_counters, pollers = self._runtime_status()
        # A lost GPU (fell off the bus: NVML reads it no more) has no current reading: its
        # last ones, left in the store, would go on saying 52 degrees and 450 W of a GPU that
        # is gone. Absent, as any reading gapwatch does not have (docs/export.md).
        lost = snap.lost_gpus()
        # Built first, so that their failures are in this scrape's count, not the next's.
        verdicts, proof_advice = self._verdicts(snap), self._proof_advice(snap)
        yield from self._gpu_gauges(snap.gpus, snap.gpu_samples, lost)
        yield from self._state_gauges(snap, lost)
        yield from verdicts
        yield from self._host_gauges(snap.host_samples[-1] if snap.host_samples else None)
        gpus = [g.index for g in snap.gpus]
        yield from _tally_counters(
            "gapwatch_gaps", f"Closed idle gaps, by GPU and kind ({', '.join(GAP_KINDS)}).",
            "gapwatch_gap_seconds",
            "Seconds of closed idle gaps, by GPU and kind (counted when a gap closes).", "kind",
            GAP_KINDS,
            gpus, snap.gap_tally)
        yield from _tally_counters(
            "gapwatch_gaps_by_prover_cause", "Closed idle gaps by the cause the prover's "
            "/status or log gave (waits_on_synthesis, waits_on_budget, srs_loading, ...).",
            "gapwatch_gap_seconds_by_prover_cause", "Seconds of those gaps.", "cause",
            PROVER_CAUSES, gpus, snap.cause_tally)
        yield from self._counters(counts, log_counters)
        yield from self._log_files(logs, log_counters)
        yield self._lateness(counts)
        yield from _recording(getattr(status, "recording", None))
        yield from _threads(getattr(status, "threads", None) or [])
        yield from self._copytrace(counts, getattr(status, "copytrace", None))
        yield from self._slow_readings(snap.links, {
            gpu: procs for gpu, procs in snap.procmem.items() if gpu not in lost})
        yield from _blind_spots(snap.blind_spots, snap.blind_total)
        yield from _health({gpu: h for gpu, h in snap.health.items() if gpu not in lost})
        yield from _hw_events(gpus, snap.hw_counts)
        yield from _chaining({gpu: f for gpu, f in snap.chaining.items() if gpu not in lost})
        yield _gpu_util({gpu: f for gpu, f in snap.util.items() if gpu not in lost})
        yield from prover_families(snap.provers, pollers, view_of(snap.pipeline))
        yield from prover_event_families(counts.prover)
        yield from proof_advice
        period = _gauge("sampler_period_seconds", "Configured sampling period.", [])
        period.add_metric([], header.period_ms / 1000.0)
        yield period
        build = InfoMetricFamily("gapwatch_build", "gapwatch version and data source.")
        build.add_metric([], {"version": __version__, "source": header.source})
        yield build

    def _verdicts(self, snap: StoreSnapshot) -> list[Metric]:
        """The verdict families (`verdict_metrics`: each GPU's cause and the setting its
        advice changes), built whole before any is served (`_guarded`)."""
        return self._guarded("verdict", verdict_families, snap, "the GPUs' verdict",
                             "gapwatch_gpu_verdict* are")

    def _proof_advice(self, snap: StoreSnapshot) -> list[Metric]:
        """The PoSt advice family (`proof_advice_metrics`): it reads each proof's own timing,
        guarded as the verdict's (`_guarded`)."""
        return self._guarded("proof_advice", proof_advice_families, snap, "the PoSt advice",
                             "gapwatch_proof_advice_info is")

    def _guarded(self, family: str, build: Callable[[StoreSnapshot], Iterable[Metric]],
                 snap: StoreSnapshot, what: str, left_out: str) -> list[Metric]:
        """`build`'s families, built whole before any is served. They read the prover's own
        figures: a failure there (an input no bound caught, a bug) cost the whole reply, a
        silent empty /metrics (the server drops a handler's exception), a box dark in the
        fleet. Now it costs these families for this scrape only, counted by `family`
        (`gapwatch_exporter_verdict_errors_total`) and said once a kind of error (an error
        notice: the recording, the footer, stderr); the rest of the scrape is served."""
        try:
            return list(build(snap))
        except Exception as exc:  # noqa: BLE001 - the rest of the scrape must be served
            self.verdict_errors[family] += 1
            self._say_verdict_error(snap, exc, what, left_out)
            return []

    def _say_verdict_error(self, snap: StoreSnapshot, exc: Exception, what: str,
                           left_out: str) -> None:
        """An error notice for the first failure of its kind of `what`, at the data's time."""
        kind = type(exc).__name__
        if (what, kind) in self._verdict_errors_said:
            return
        self._verdict_errors_said.add((what, kind))
        latest = [s[-1] for s in snap.gpu_samples.values() if s]
        last = max(latest, key=lambda s: s.t_mono_ns) if latest else None
        t_mono, t_wall = (last.t_mono_ns, last.t_wall_s) if last else (0, time.time())
        with contextlib.suppress(Exception):  # saying it must not cost the scrape either
            self._session.on_notice(Notice(
                t_mono, t_wall, "error",
                f"/metrics: {what} could not be built ({kind}: "
                f"{str(exc)[:200]}); {left_out} left out of the scrapes it "
                "fails, the rest is served; counted in gapwatch_exporter_verdict_errors_total, "
                "further failures of this kind only counted"))

    def _slow_readings(self, links: dict[int, LinkState],
                       procmem: dict[int, tuple[ProcessMemory, ...]]) -> Iterator[Metric]:
        """The link as last trained under traffic, and the /proc memory of the processes on
        each GPU (absent until read; a field /proc could not give is absent, never 0)."""
        trained = _gauge("gpu_pcie_link_trained_capacity_bytes_per_second",
                         "Per-direction capacity of the PCIe link as trained, read while data "
                         "moved.", ["gpu"])
        down = _gauge("gpu_pcie_link_trained_down", "1 when the link was last seen below its "
                      "maximum generation or width while data moved, else 0.", ["gpu"])
        for gpu, link in sorted(links.items()):
            if link.bytes_per_s is not None:
                trained.add_metric([str(gpu)], link.bytes_per_s)
            down.add_metric([str(gpu)], 1.0 if link.trained_down else 0.0)
        pinned = _gauge("process_pinned_host_memory_bytes", "RssShmem of a process on the GPU "
                        "(cudaHostAlloc-pinned memory counts here; a hint: cudaHostRegister'ed "
                        "memory does not).", ["gpu", "pid", "name"])
        heap = _gauge("process_heap_host_memory_bytes", "RssAnon of a process on the GPU "
                      "(ordinary heap, and cudaHostRegister'ed memory).", ["gpu", "pid", "name"])
        gpu_mem = _gauge("process_gpu_memory_bytes", "GPU memory NVML says the process holds "
                         "on the GPU.", ["gpu", "pid", "name"])
        for gpu, readings in sorted(procmem.items()):
            for r in readings:
                label = [str(gpu), str(r.pid), r.name]
                if r.rss_shmem_bytes is not None:
                    pinned.add_metric(label, r.rss_shmem_bytes)
                if r.rss_anon_bytes is not None:
                    heap.add_metric(label, r.rss_anon_bytes)
                if r.gpu_memory_bytes is not None:
                    gpu_mem.add_metric(label, r.gpu_memory_bytes)
        yield from (trained, down, pinned, heap, gpu_mem)

    def _copytrace(self, c: SinkCounts, status: Any) -> Iterator[Metric]:
        """Copies and bytes by GPU, direction and memory kind, and what the trace dropped
        (`status`: the runtime's `CopyTraceStatus`, None when the copy trace is off)."""
        n = CounterMetricFamily("gapwatch_copies", "Host<->device copies seen by the copy "
                                "trace, by GPU, direction and host memory kind.",
                                labels=["gpu", "direction", "memory_kind"])
        b = CounterMetricFamily("gapwatch_copy_bytes", "Bytes of those copies.",
                                labels=["gpu", "direction", "memory_kind"])
        for key in sorted(c.copies):
            n.add_metric(list(key), c.copies[key])
            b.add_metric(list(key), c.copy_bytes.get(key, 0))
        yield from (n, b)
        if status is not None:
            d = CounterMetricFamily("gapwatch_copytrace_dropped", "Copies the copy trace "
                                    "lost: the prover could not deliver them (where=send) or "
                                    "CUPTI's buffers were full (where=cupti), since gapwatch "
                                    "heard each prover; bad = datagrams gapwatch refused.",
                                    labels=["where"])
            d.add_metric(["send"], status.dropped_send)
            d.add_metric(["cupti"], status.dropped_cupti)
            d.add_metric(["bad"], status.bad)
            procs = _gauge("copytrace_processes", "Provers the copy trace heard from in the "
                           "last minute.", [])
            procs.add_metric([], status.processes)
            yield from (d, procs)

    def _runtime_status(
        self,
    ) -> tuple[Any, dict[str, str], dict[str, int], list[PollerStatus] | None]:
        """The runtime's `RuntimeStatus` (or None), its log files (path -> state), tailer
        counters (`.log_counters`: lines, parsed, unparsed) and status pollers (`.provers`;
        None without a runtime, e.g. a replay driven in-process). A failing status_fn costs the
        metrics that come from it for this scrape, counted, never the scrape."""
        if self._status_fn is None:
            return None, {}, {}, None
        try:
            status = self._status_fn()
            logs = {str(k): str(v) for k, v in dict(getattr(status, "logs", {}) or {}).items()}
            counters = {str(k): int(v) for k, v in
                        dict(getattr(status, "log_counters", {}) or {}).items()}
            pollers = list(getattr(status, "provers", None) or [])
        except Exception:  # noqa: BLE001 - a scrape must answer even if the runtime cannot
            self.status_errors += 1
            return None, {}, {}, None
        return status, logs, counters, pollers

    def _log_files(self, logs: dict[str, str], counters: dict[str, int]) -> Iterator[Metric]:
        files = InfoMetricFamily("gapwatch_log_file",
                                 "A followed prover log and its state (following, waiting...).",
                                 labels=["path"])
        for path, state in sorted(logs.items()):
            files.add_metric([path], {"state": state})
        lines = CounterMetricFamily("gapwatch_log_lines", "Prover log lines read.")
        if "lines" in counters:
            lines.add_metric([], counters["lines"])
        errors = CounterMetricFamily("gapwatch_exporter_status_errors",
                                     "Scrapes whose runtime status could not be read.")
        errors.add_metric([], self.status_errors)
        verdict = CounterMetricFamily("gapwatch_exporter_verdict_errors",
                                      "Scrapes whose GPUs' verdict (family verdict: "
                                      "gapwatch_gpu_verdict*) or PoSt advice (family "
                                      "proof_advice: gapwatch_proof_advice_info) could not "
                                      "be built: left out of that scrape, the rest served.",
                                      labels=["family"])
        for family, count in self.verdict_errors.items():
            verdict.add_metric([family], count)
        yield from (files, lines, errors, verdict)

    def _gpu_gauges(
        self, gpus: Iterable[Any], samples: dict[int, tuple[GpuSample, ...]],
        lost: set[int] | frozenset[int] = frozenset(),
    ) -> Iterator[Metric]:
        """The latest sample's gauges of each GPU; a lost GPU's only its last sample's time
        (how stale it is) and what does not change (its link, its name)."""
        sm = _gauge("gpu_sm_active_ratio", "Fraction of SMs busy in the latest sample (0..1).",
                    ["gpu"])
        util = _gauge("gpu_utilization_ratio",
                      "NVML utilization.gpu in the latest sample (0..1; counts copies as busy).",
                      ["gpu"])
        rx = _gauge("gpu_pcie_rx_bytes_per_second",
                    "PCIe host-to-device bytes per second in the latest sample.", ["gpu"])
        tx = _gauge("gpu_pcie_tx_bytes_per_second",
                    "PCIe device-to-host bytes per second in the latest sample.", ["gpu"])
        link = _gauge("gpu_pcie_link_capacity_bytes_per_second",
                      "Per-direction PCIe capacity from the link's max generation and width.",
                      ["gpu"])
        last = _gauge("gpu_last_sample_timestamp_seconds",
                      "Unix time of the latest sample of this GPU.", ["gpu"])
        info = InfoMetricFamily("gapwatch_gpu", "The GPU and which measurement feeds its signals.",
                                labels=["gpu"])
        for g in gpus:
            label = [str(g.index)]
            latest = samples.get(g.index, ())[-1:] or [None]
            s = latest[0]
            if g.link_bytes_per_s is not None:
                link.add_metric(label, g.link_bytes_per_s)
            if s is not None and g.index not in lost:
                for fam, value in ((sm, _ratio(s.sm_active_pct)), (util, _ratio(s.gpu_util_pct)),
                                   (rx, s.pcie_rx_bytes_per_s), (tx, s.pcie_tx_bytes_per_s)):
                    if value is not None:
                        fam.add_metric(label, value)
            if s is not None:
                last.add_metric(label, s.t_wall_s)
            sm_source = (s.sm_source if s is not None else None) or g.sm_source
            pcie_source = (s.pcie_source if s is not None else None) or g.pcie_source
            info.add_metric(label, {"name": g.name, "uuid": g.uuid or "",
                                    "sm_source": sm_source or "none",
                                    "pcie_source": pcie_source or "none"})
        yield from (sm, util, rx, tx, link, last, info)

    def _state_gauges(self, snap: StoreSnapshot,
                      lost: set[int] | frozenset[int] = frozenset()) -> Iterator[Metric]:
        chain = _gauge("gpu_chain_state",
                       "1 for the GPU's current chaining state, 0 for the others "
                       "(NO_DATA until the detector has judged).", ["gpu", "state"])
        breakdown = _gauge("gpu_breakdown",
                           "1 while the GPU's chaining state is BREAKDOWN, else 0.", ["gpu"])
        busy = _gauge("gpu_busy_ratio",
                      "Busy fraction of the detector's chaining window, refreshed about once "
                      "a second.",
                      ["gpu"])
        open_gap = _gauge("gpu_open_gap_seconds",
                          "Length so far of the GPU's open gap, by kind (0 when none is open).",
                          ["gpu", "kind"])
        open_by: dict[tuple[int, str], float] = {
            (gap.gpu, gap.kind): gap.duration_s for gap in snap.gaps if gap.is_open
        }
        for info in snap.gpus:
            gpu = info.index
            current = snap.state_name(gpu)
            for state in CHAIN_STATES:
                chain.add_metric([str(gpu), state], 1.0 if state == current else 0.0)
            breakdown.add_metric([str(gpu)], 1.0 if current == "BREAKDOWN" else 0.0)
            frac = snap.busy_share(gpu)
            if frac is not None and gpu not in lost:
                busy.add_metric([str(gpu)], frac)
            for kind in GAP_KINDS:
                open_gap.add_metric([str(gpu), kind], open_by.get((gpu, kind), 0.0))
        yield from (chain, breakdown, busy, open_gap)

    def _host_gauges(self, h: Any) -> Iterator[Metric]:
        if h is None:
            return
        fields: list[tuple[str, str, float | None]] = [
            ("host_memory_used_ratio", "Host memory in use (0..1).", _ratio(h.mem_used_pct)),
            ("host_memory_available_bytes", "Host memory available.", h.mem_available_bytes),
            ("host_swap_used_bytes", "Swap in use.", h.swap_used_bytes),
            ("host_cpu_busy_ratio", "Host CPU busy (0..1).", _ratio(h.cpu_busy_pct)),
            ("host_memory_pressure_some_avg10_ratio",
             "PSI memory 'some' avg10 (0..1): share of time some task stalled on memory.",
             _ratio(h.psi_mem_some_avg10)),
            ("host_memory_pressure_full_avg10_ratio",
             "PSI memory 'full' avg10 (0..1): share of time all tasks stalled on memory.",
             _ratio(h.psi_mem_full_avg10)),
            ("host_memory_stall_some_ratio",
             "Share of the last sampling interval in which some task stalled on memory (PSI).",
             h.psi_mem_some_share),
            ("host_memory_stall_full_ratio",
             "Share of the last sampling interval in which all tasks stalled on memory (PSI).",
             h.psi_mem_full_share),
            ("host_major_page_faults_per_second", "Major page faults per second.",
             h.major_faults_per_s),
            ("host_memory_bandwidth_bytes_per_second", "Memory bandwidth (resctrl MBM).",
             h.mem_bandwidth_bytes_per_s),
            ("host_cpu_pressure_some_avg10_ratio",
             "PSI cpu 'some' avg10 (0..1): share of time some runnable task waited for a CPU.",
             _ratio(h.psi_cpu_some_avg10)),
            ("host_cpu_stall_some_ratio",
             "Share of the last sampling interval in which some runnable task waited for a CPU "
             "(PSI).", h.psi_cpu_some_share),
        ]
        for name, doc, value in fields:
            if value is not None:
                fam = _gauge(name, doc, [])
                fam.add_metric([], float(value))
                yield fam

    def _counters(self, c: SinkCounts, log_counters: dict[str, int]) -> Iterator[Metric]:
        samples = CounterMetricFamily("gapwatch_gpu_samples", "GPU samples taken.",
                                      labels=["gpu"])
        for gpu, n in sorted(c.samples.items()):
            samples.add_metric([str(gpu)], n)
        sampled = CounterMetricFamily(
            "gapwatch_gpu_sampled_seconds", "Seconds of the GPU's time its samples covered: "
            "fine (an interval as short as the source gives: at most 2.5 periods, never under "
            "250 ms) or merged (a longer one: ticks skipped, NVML blocked). rate() of both "
            "below 1 is time with no reading.", labels=["gpu", "kind"])
        for (gpu, kind), seconds in sorted(c.sampled_s.items()):
            sampled.add_metric([str(gpu), kind], seconds)
        yield sampled
        events = CounterMetricFamily("gapwatch_prover_log_events",
                                     "Prover log lines understood, by rule kind.",
                                     labels=["kind"])
        for kind, n in sorted(c.log_events.items()):
            events.add_metric([kind], n)
        # Unparsed lines reach us two ways: as `unparsed` events (the live follower keeps them)
        # and in the follower's own counters; they count the same lines, so the larger figure
        # is the number of lines, never their sum.
        unparsed = CounterMetricFamily("gapwatch_log_unparsed_lines",
                                       "Prover log lines no rule understood.")
        unparsed.add_metric([], max(c.unparsed_events, log_counters.get("unparsed", 0)))
        log_counter_metric = CounterMetricFamily(
            "gapwatch_log_counter",
            "The log follower's own counters (lines, parsed, unparsed, cut_lines...).",
            labels=["name"])
        for key, n in sorted(log_counters.items()):
            log_counter_metric.add_metric([key], n)
        notices = CounterMetricFamily("gapwatch_notices", "Notices (GPU lost, field "
                                      "unsupported, file rotated...), by level.", labels=["level"])
        for level in ("info", "warning", "error"):
            notices.add_metric([level], c.notices.get(level, 0))
        yield from (samples, events, unparsed, log_counter_metric, notices)

    def _lateness(self, c: SinkCounts) -> Metric:
        buckets = [(repr(b), float(n)) for b, n in zip(LATENESS_BUCKETS_S, c.lateness_buckets,
                                                         strict=True)]
        buckets.append(("+Inf", float(c.lateness_count)))
        hist = HistogramMetricFamily("gapwatch_sampler_tick_lateness_seconds",
                                     "How late sampler ticks ran behind their deadline.")
        hist.add_metric([], buckets, sum_value=c.lateness_sum_s)
        return hist


def label_text(value: str) -> str:
    """A label value as /metrics shows it: controls written out (`fmt.visible`), cut to
    `sizes.TEXT_CHARS`. The exposition escapes only backslash, quote and LF: a GPU, process or
    prover name from a recording or `/status` holding CR (a new line to any reader that splits
    on it, Python's text mode among them: a forged series) or OSC 52 (obeyed by the terminal of
    whoever runs `curl /metrics`) went out raw, and a 1 MB name went out whole on every scrape."""
    return cut_text(fmt.visible(value), TEXT_CHARS)


def _inert_labels(metric: Metric) -> Metric:
    """`metric` with every label value through `label_text`: one rule for every family, since
    any of them may carry outside text (the common case, all printable and short, is left)."""
    for i, sample in enumerate(metric.samples):
        if not all(v.isprintable() and len(v) <= TEXT_CHARS for v in sample.labels.values()):
            metric.samples[i] = sample._replace(
                labels={k: label_text(v) for k, v in sample.labels.items()})
    return metric


def _blind_spots(spots: tuple[BlindSpot, ...], total: tuple[int, float]) -> Iterator[Metric]:
    """NVML's blind spots (`core.blind`): how many, how long in all, and the latest (its
    length, when it began, and whether gapwatch saw a process exit meanwhile)."""
    n, seconds = total
    count = CounterMetricFamily("gapwatch_nvml_blocked", "Times NVML did not answer for more "
                                "than 3 sampling periods (every call blocks while the driver "
                                "frees a process's pinned memory): holes in the readings.",
                                labels=[])
    count.add_metric([], n)
    secs = CounterMetricFamily("gapwatch_nvml_blocked_seconds", "Seconds NVML did not answer, "
                               "in all (no readings meanwhile).", labels=[])
    secs.add_metric([], seconds)
    yield from (count, secs)
    if not spots:
        return
    last = spots[-1]
    longest = _gauge("nvml_last_block_seconds", "How long the latest NVML block lasted.", [])
    longest.add_metric([], last.duration_s)
    began = _gauge("nvml_last_block_start_time_seconds", "When the latest NVML block began "
                   "(Unix time).", [])
    began.add_metric([], last.t_wall_s)
    exits = _gauge("nvml_last_block_process_exits", "Processes NVML listed before the latest "
                   "block and not after it (they exited meanwhile).", [])
    exits.add_metric([], float(len(last.exited)))
    yield from (longest, began, exits)


#: GpuHealth field -> (metric, help, scale to the metric's unit).
_HEALTH_GAUGES: tuple[tuple[str, str, str, float], ...] = (
    ("memory_used_bytes", "gpu_memory_used_bytes", "GPU memory in use (NVML).", 1.0),
    ("memory_total_bytes", "gpu_memory_total_bytes", "GPU memory in all (NVML).", 1.0),
    ("temperature_c", "gpu_temperature_celsius", "GPU core temperature.", 1.0),
    ("power_w", "gpu_power_watts", "GPU power draw.", 1.0),
    ("limit_w", "gpu_power_limit_watts", "GPU power limit as enforced.", 1.0),
    ("sm_clock_mhz", "gpu_sm_clock_hertz", "SM clock.", 1e6),
    ("memory_clock_mhz", "gpu_memory_clock_hertz", "Memory clock.", 1e6),
)


def _health(health: dict[int, GpuHealth]) -> Iterator[Metric]:
    """The latest health reading of each GPU (every `sampler.health_every_s`); a reading NVML
    could not give is absent, never 0. Throttle reasons one series per reason, 1 while set."""
    fams = [(field_name, _gauge(name, doc, ["gpu"]), scale)
            for field_name, name, doc, scale in _HEALTH_GAUGES]
    throttle = _gauge("gpu_clocks_event_reason", "1 while NVML says this reason holds the "
                      "GPU's clocks down (power cap, thermal, ...; gpu_idle is not a slowdown), "
                      "else 0.", ["gpu", "reason"])
    ecc = CounterMetricFamily("gapwatch_gpu_ecc_errors", "Volatile ECC errors NVML counts "
                              "since the driver loaded.", labels=["gpu", "type"])
    for gpu, h in sorted(health.items()):
        label = [str(gpu)]
        for field_name, fam, scale in fams:
            value = getattr(h, field_name)
            if value is not None:
                fam.add_metric(label, float(value) * scale)
        if h.clocks_event_mask is not None:
            for bit, (reason, _, _) in CLOCKS_EVENT_REASONS.items():
                throttle.add_metric([str(gpu), reason], 1.0 if h.clocks_event_mask & bit else 0.0)
        for kind, value in (("corrected", h.ecc_corrected_total),
                            ("uncorrected", h.ecc_uncorrected_total)):
            if value is not None:
                ecc.add_metric([str(gpu), kind], value)
    yield from (fam for _, fam, _ in fams)
    yield from (throttle, ecc)


def _hw_events(gpus: list[int], counts: dict[tuple[int, str], int]) -> Iterator[Metric]:
    """GPU errors gapwatch saw (XID events, ECC counts that grew, PCIe replays, a GPU lost),
    by kind: every GPU and kind present from the start, so that `increase()` sees the first
    one."""
    events = CounterMetricFamily("gapwatch_gpu_hardware_events", "GPU errors seen by NVML: "
                                 "XID critical errors, ECC errors, PCIe replays, the GPU lost "
                                 "(GPU_IS_LOST: fell off the bus or needs a reset), a memory "
                                 "row remap pending or failed (states: once a run).",
                                 labels=["gpu", "kind"])
    for gpu in sorted(set(gpus) | {g for g, _ in counts}):
        for kind in HARDWARE_EVENT_KINDS:
            events.add_metric([str(gpu), kind], counts.get((gpu, kind), 0))
    yield events


def _chaining(figures: dict[int, ChainingFigure]) -> Iterator[Metric]:
    ratio = _gauge("chaining_ratio", "Share (0..1) of host-to-device copy time over the last "
                   "minute that ran while the GPU's SMs were busy (copies overlapped with "
                   "kernels); absent before any copy was seen.", ["gpu"])
    basis = InfoMetricFamily("gapwatch_chaining_basis", "What the chaining ratio was worked "
                             "out from: copies (the copy trace) or pcie (estimated from PCIe "
                             "bytes and SM activity).",
                             labels=["gpu"])
    for gpu, f in sorted(figures.items()):
        ratio.add_metric([str(gpu)], f.share)
        basis.add_metric([str(gpu)], {"basis": f.basis})
    yield from (ratio, basis)


def _gpu_util(figures: dict[int, UtilFigure]) -> Metric:
    """nvidia-smi's GPU-Util over the window `gpu_busy_ratio` is of (`core.util_figure`): the
    two side by side say what a GPU-Util dashboard hides."""
    util = _gauge("gpu_util_window_ratio",
                  "nvidia-smi's GPU-Util (utilization.gpu: any kernel or copy running), averaged "
                  "over the detector's chaining window, the window gapwatch_gpu_busy_ratio is of; "
                  "absent without SM activity readings beside it.", ["gpu"])
    for gpu, f in sorted(figures.items()):
        util.add_metric([str(gpu)], f.util_share)
    return util


def _threads(threads: list[Any]) -> Iterator[Metric]:
    """Every thread the runtime started (`RuntimeStatus.threads`): alive, and how often it
    died. A dead one is a sampler, reader, writer or poller that no longer works."""
    if not threads:
        return
    up = _gauge("thread_up", "1 while the thread runs (or ended as it should), 0 once it "
                "died for good (not restarted).", ["thread"])
    deaths = CounterMetricFamily("gapwatch_thread_deaths", "Times the thread died (raised); "
                                 "each is an error notice, restarted where that is safe.",
                                 labels=["thread"])
    for t in threads:
        name = thread_label(t.name)
        up.add_metric([name], 1.0 if t.alive else 0.0)
        deaths.add_metric([name], t.deaths)
    yield from (up, deaths)


def _recording(rec: Any) -> Iterator[Metric]:
    """The recording's health (`RuntimeStatus.recording`); nothing without a recording."""
    if rec is None:
        return
    failing = _gauge("recording_failing",
                     "1 while the recording cannot be written (disk full, I/O error), else 0.",
                     [])
    failing.add_metric([], 1.0 if rec.state == "failing" else 0.0)
    errors = CounterMetricFamily("gapwatch_recording_write_errors",
                                 "Failed write attempts to the recording (each is retried).")
    errors.add_metric([], rec.write_errors)
    written = CounterMetricFamily("gapwatch_recording_records",
                                  "Records written to the recording.")
    written.add_metric([], rec.records_written)
    dropped = CounterMetricFamily("gapwatch_recording_dropped_records",
                                  "Records that will never be in the recording (memory bound "
                                  "reached while the disk failed).")
    dropped.add_metric([], rec.records_dropped)
    pending = _gauge("recording_pending_records",
                     "Records in memory waiting for the disk.", [])
    pending.add_metric([], rec.records_pending)
    yield from (failing, errors, written, dropped, pending)


class ExporterHandle:
    """A bound `/metrics` server. `address` is HOST:PORT as bound (port 0 resolved).

    `bind_exporter` binds it (so that a taken port fails before anything else starts);
    `serve(session, status_fn)` starts counting and answering; `stop()` returns at once.
    """

    def __init__(self, server: MetricsServer, host: str) -> None:
        self.server = server
        self.registry: CollectorRegistry | None = None
        self.sink: MetricsSink | None = None
        port = int(server.server_address[1])
        self.address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.url = f"http://{self.address}/metrics"

    def serve(self, session: ExportedSession, status_fn: Callable[[], Any] | None = None,
              named_kinds: frozenset[str] = BUILT_IN_KINDS) -> None:
        """Register a `MetricsSink` on the session (counting starts now: call it before feeding
        records) and start answering scrapes. `status_fn` returns the runtime's
        `RuntimeStatus`; its logs, log counters and recording feed their metrics.
        `named_kinds`: the log event kinds always counted by name (the config's rules')."""
        sink = MetricsSink(named_kinds)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(GapwatchCollector(session, sink, status_fn))
        # gapwatch's own cost, for a fleet to compare and trust: CPU seconds, resident memory,
        # open files (`gapwatch_self_process_*`, read from /proc/self at each scrape; nothing
        # where there is no /proc). `self`: `gapwatch_process_*` are the prover's processes.
        ProcessCollector(namespace="gapwatch_self", registry=registry)
        session.add_sink(sink)
        self.registry, self.sink = registry, sink
        self.server.serve(registry)

    def stop(self) -> None:
        """Stop serving and free the port, at once. Safe to call twice."""
        self.server.stop()


def bind_exporter(listen: str, limits: ServerLimits | None = None) -> ExporterHandle:
    """Bind `listen` (HOST:PORT, :PORT or PORT; port 0 = any free) without serving yet.

    Raises:
        ExporterError: the address is malformed or cannot be bound.
    """
    host, port = parse_listen(listen)
    try:
        server = MetricsServer(host, port, limits)
    except OSError as exc:
        raise ExporterError(f"--prometheus {listen!r}: cannot listen on {host}:{port}: "
                            f"{exc.strerror or exc}") from None
    return ExporterHandle(server, host)


def start_exporter(
    listen: str,
    session: ExportedSession,
    status_fn: Callable[[], Any] | None = None,
    limits: ServerLimits | None = None,
) -> ExporterHandle:
    """Bind `listen` and serve the session's metrics there (`bind_exporter` + `serve`).

    Raises:
        ExporterError: the address is malformed or cannot be bound.
    """
    handle = bind_exporter(listen, limits)
    handle.serve(session, status_fn)
    return handle


def _tally_counters(name: str, doc: str, secs_name: str, secs_doc: str, label: str,
                    values: tuple[str, ...], gpus: list[int], tally: dict[tuple[int, str], Tally]
                    ) -> Iterator[Metric]:
    """Closed gaps (count and seconds) from a ledger tally by (GPU, `label`). Every (gpu,
    value) starts at 0, so that rate() and increase() work from the first scrape."""
    gaps = CounterMetricFamily(name, doc, labels=["gpu", label])
    secs = CounterMetricFamily(secs_name, secs_doc, labels=["gpu", label])
    keys = {(gpu, v) for gpu in gpus for v in values} | set(tally)
    for gpu, v in sorted(keys):
        t = tally.get((gpu, v), Tally())
        gaps.add_metric([str(gpu), v], t.count)
        secs.add_metric([str(gpu), v], t.seconds)
    yield from (gaps, secs)
