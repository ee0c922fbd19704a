"""MetricsSink: the session sink that counts, for the Prometheus exporter, what a scrape must
never miss between two scrapes: samples, prover log events by kind, unparsed lines, notices,
the sampler's tick lateness (histogram buckets), the seconds each GPU's samples covered (the
data's quality) and the prover's events (PoSt latency,
restarts, errors: `prover_event_metrics`). Gaps are not counted here: the collector reads
the store's gap ledger (`StoreSnapshot.gap_tally`), the one count every output shares.

Who calls it: `Session` (under its lock, from the sampler and tailer threads) feeds it;
`gapwatch.sinks.prometheus.GapwatchCollector` reads `copy_counts()` at each scrape. It only
bumps integers under its own lock: a sink must not block the session.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from gapwatch.core.models import (
    CopyRecord,
    GpuSample,
    LogEvent,
    Notice,
    ProverEvent,
    Record,
    SessionHeader,
)
from gapwatch.logs.parse import BUILT_IN_KINDS
from gapwatch.sinks.prover_event_metrics import ProverEventCounts

#: Tick lateness buckets (seconds): from "on time" to "several 100 ms periods behind".
LATENESS_BUCKETS_S: tuple[float, ...] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
)

#: Log event kinds counted one by one on `/metrics` (`gapwatch_prover_log_events_total{kind}`):
#: the built-in rules' dozen and the config's user rules fit; further kinds add to `OTHER_KIND`.
MAX_LOG_KINDS = 64
OTHER_KIND = "other"

#: How a sample covers its GPU's time: "fine", an interval as short as the source gives at
#: this period (`fine_interval_ns`); "merged", a longer one (ticks skipped, NVML blocked: an
#: average over it, edges inside it unseen). Time no sample covers is neither:
#: `1 - rate(fine) - rate(merged)` is the share with no reading at all.
SAMPLED_KINDS: tuple[str, str] = ("fine", "merged")
#: Fine: at most 2.5 periods, and never less than 250 ms: GPM refreshes about every 100 ms,
#: so at a 50 ms period a real reading covers ~100 ms, jittering both ways across two periods
#: (the H200's 50 ms recording: half its samples a hair over), and at 10 ms every one is
#: "longer than two periods" though as fine as GPM gives.
FINE_PERIODS = 2.5
FINE_MIN_NS = 250_000_000


def fine_interval_ns(period_ms: float) -> int:
    """The longest interval of a "fine" sample at `period_ms` (`SAMPLED_KINDS`)."""
    return max(FINE_MIN_NS, int(period_ms * 1e6 * FINE_PERIODS))


@dataclass(slots=True)
class SinkCounts:
    """What the sink has counted since the session started (guarded by `MetricsSink.lock`)."""

    samples: dict[int, int] = field(default_factory=dict)
    #: Seconds of each GPU's time its samples covered, by (GPU, "fine" or "merged"): the data's
    #: quality (`SAMPLED_KINDS`, docs/export.md).
    sampled_s: dict[tuple[int, str], float] = field(default_factory=dict)
    log_events: dict[str, int] = field(default_factory=dict)
    unparsed_events: int = 0
    notices: dict[str, int] = field(default_factory=dict)
    lateness_buckets: list[int] = field(default_factory=lambda: [0] * len(LATENESS_BUCKETS_S))
    lateness_count: int = 0
    lateness_sum_s: float = 0.0
    #: The copy trace's copies and bytes by (GPU label, direction, host memory kind).
    copies: dict[tuple[str, str, str], int] = field(default_factory=dict)
    copy_bytes: dict[tuple[str, str, str], int] = field(default_factory=dict)
    #: The prover's events (PoSt latency, restarts, errors, lost GPU jobs).
    prover: ProverEventCounts = field(default_factory=ProverEventCounts)


class MetricsSink:
    """A session Sink that counts samples, events, notices and tick lateness for the collector."""

    def __init__(self, named_kinds: frozenset[str] = BUILT_IN_KINDS) -> None:
        """`named_kinds`: the log event kinds counted by name whatever else comes
        (`gapwatch.logs.parse.named_kinds` of the session's config)."""
        self.lock = threading.Lock()
        self._named_kinds = named_kinds
        self.counts = SinkCounts()
        self._last_tick_ns: int | None = None
        #: A sample's interval up to this is "fine" (the period's resolution), past it "merged".
        self._fine_ns: int | None = None
        #: Each GPU's latest sample time: an interval counts no further back than it (a
        #: recorded interval of 2**62 ns read as 146 years of "merged" time).
        self._last_sample_ns: dict[int, int] = {}
        #: Samples this close to the tick last observed are of that tick (`_on_sample`).
        self._half_period_ns = 1

    def on_header(self, header: SessionHeader) -> None:
        with self.lock:
            self._fine_ns = fine_interval_ns(header.period_ms)
            self._half_period_ns = max(1, int(header.period_ms * 1e6 / 2))
            for gpu in header.gpus:
                self.counts.samples.setdefault(gpu.index, 0)
                for kind in SAMPLED_KINDS:
                    self.counts.sampled_s.setdefault((gpu.index, kind), 0.0)

    def on_record(self, record: Record) -> None:
        with self.lock:
            if isinstance(record, GpuSample):
                self._on_sample(record)
            elif isinstance(record, LogEvent):
                if record.kind == "unparsed":
                    self.counts.unparsed_events += 1
                else:
                    kinds = self.counts.log_events
                    # A kind is a rule's name live (a few, and the config's user rules), but a
                    # replayed recording's events carry any text: one series each (50,000 made
                    # up, growing for good). Beyond MAX_LOG_KINDS they count under "other",
                    # but for the config's rules' own, however many made-up ones came first.
                    kind = record.kind
                    if kind not in kinds and len(kinds) >= MAX_LOG_KINDS \
                            and kind not in self._named_kinds:
                        kind = OTHER_KIND
                    kinds[kind] = kinds.get(kind, 0) + 1
            elif isinstance(record, Notice):
                self.counts.notices[record.level] = self.counts.notices.get(record.level, 0) + 1
            elif isinstance(record, ProverEvent):
                self.counts.prover.count(record)
            elif isinstance(record, CopyRecord):
                # A copy of no watched GPU is counted under gpu="" (never dropped from totals).
                key = ("" if record.gpu is None else str(record.gpu), record.direction,
                       record.host_kind)
                c = self.counts
                c.copies[key] = c.copies.get(key, 0) + 1
                c.copy_bytes[key] = c.copy_bytes.get(key, 0) + record.bytes

    def close(self) -> None:
        """Nothing to release: the counts stay readable until the exporter stops."""

    def _count_sampled(self, sample: GpuSample) -> None:
        """Add the sample's interval to its GPU's fine or merged seconds: never further back
        than the GPU's previous counted sample (nor, for its first, than a fine interval), so
        that recorded intervals that overlap or lie count no time twice. A sample without an
        interval (NVML kept the older reading as the start: the next covers both ticks) or
        out of time order moves nothing."""
        c, fine_ns = self.counts, self._fine_ns
        interval = sample.interval_ns
        before = self._last_sample_ns.get(sample.gpu)
        if interval is None or interval <= 0 or (before is not None
                                                  and sample.t_mono_ns <= before):
            return
        self._last_sample_ns[sample.gpu] = sample.t_mono_ns
        fine = fine_ns is None or interval <= fine_ns
        if before is not None:
            interval = min(interval, max(0, sample.t_mono_ns - before))
        elif fine_ns is not None:
            interval = min(interval, fine_ns)
        key = (sample.gpu, SAMPLED_KINDS[0] if fine else SAMPLED_KINDS[1])
        c.sampled_s[key] += interval / 1e9

    def _on_sample(self, sample: GpuSample) -> None:
        c = self.counts
        n = c.samples.get(sample.gpu)
        if n is None:  # a GPU the header did not list: its read time's both series, from 0
            for kind in SAMPLED_KINDS:
                c.sampled_s[(sample.gpu, kind)] = 0.0
        c.samples[sample.gpu] = (n or 0) + 1
        self._count_sampled(sample)
        # One tick produces one sample per GPU with the same lateness: observe it once per tick.
        # NVML stamps each GPU when it was read (a few ms into the tick), so a tick is told by
        # time: a sample within half a period of the tick last observed is of that tick (the
        # histogram counted ticks x GPUs on a box of several).
        last = self._last_tick_ns
        if sample.lateness_ns is None or (
                last is not None and abs(sample.t_mono_ns - last) < self._half_period_ns):
            return
        self._last_tick_ns = sample.t_mono_ns
        late_s = max(0, sample.lateness_ns) / 1e9
        c.lateness_count += 1
        c.lateness_sum_s += late_s
        for i, bound in enumerate(LATENESS_BUCKETS_S):
            if late_s <= bound:
                c.lateness_buckets[i] += 1

    def copy_counts(self) -> SinkCounts:
        """A consistent copy for one scrape."""
        with self.lock:
            c = self.counts
            return SinkCounts(
                samples=dict(c.samples),
                sampled_s=dict(c.sampled_s),
                log_events=dict(c.log_events),
                unparsed_events=c.unparsed_events,
                notices=dict(c.notices),
                lateness_buckets=list(c.lateness_buckets),
                lateness_count=c.lateness_count,
                lateness_sum_s=c.lateness_sum_s,
                copies=dict(c.copies),
                copy_bytes=dict(c.copy_bytes),
                prover=c.prover.copy(),
            )
