"""A session as Chrome Trace Event JSON, for Perfetto (ui.perfetto.dev) and chrome://tracing.

Who calls it: `gapwatch.commands.export` (`gapwatch export FILE --format perfetto`), which feeds
a `TraceBuilder` the recording's samples, log events and notices plus the gaps and states the
report finds (`gapwatch.offline.report`; gap versions go through a `GapLedger`), then calls
`write`. No clocks. The events are encoded as they are added and kept in a `SortedSpool`
(`gapwatch.base.sorted_spool`: sorted runs in a temporary folder beyond `RUN_ITEMS`), and
`write` streams them out in time order: the trace of a day is never held whole (as dicts it
took ~1.6 GB per hour of an 8-GPU recording). The bytes are those of encoding the whole trace
at once.

Layout of the trace (format: "Trace Event Format", Google, the JSON Object form):
- one process per GPU ("GPU 0 ..."): counter tracks `SM active %`, `GPU util %`,
  `PCIe RX bytes/s`, `PCIe TX bytes/s`; a `gaps` thread with one slice per gap, named by kind,
  the hint and evidence as args; a `chaining state` thread; a `no data` thread with a slice over
  every stretch without an SM reading (a counter track holds its last value, so the hole would
  otherwise be invisible);
- a `host` process: counter tracks for memory used %, PSI memory some/full avg10 %, stall share;
- a `prover` process: per worker, slices GPU_START..GPU_END named by partition, and the
  GPU-occupied region (mutex held) on a `worker N gpu lock` thread; the copy trace's copies as
  slices on one `copies, stream N` track per CUDA stream under their GPU; synthesis
  SYNTH_START..SYNTH_END as async slices (they overlap across synthesis threads);
- instant events for warnings (`is_pinned=false`, pinned-pool fallbacks) and warning/error
  notices;
- the prover's events (docs/post.md) on the prover's track: each watched proof (PoSt) as a slice
  from its arrival to its end named by kind and verdict, a restart's cost and a lost job's wait
  as slices with their parts, and every warning or error among them as an instant.

Times: `ts` in microseconds from the earliest time in the trace (`otherData.origin_unix_s` keeps
that origin, so a reader can get wall times back). Counters are placed at the start of the
interval their sample covers, which reaches no further back than the GPU's previous sample (the
first one's, one period): an `interval_ns` of 2^63-1 in a recording put that start, and the
trace's origin, 292 years back. Perfetto takes no time before the origin, so one event far from
the recording moves every other: the records whose times no reader vets (copies, health
readings, notices) are drawn only within `RECORDED_REACH_S` of the recording's span
(`keep_within`: its start to its latest GPU or host sample, `detect.samples_end_s`); the others
are counted (`far_off`) and said by the export. The log lines, recorded or `--log`, are drawn
only inside the span the report covers (`logs_within`: `report.report_span`, 5 minutes,
`log_span.MARGIN_S`, either side of a whole recording): a recorded log's backlog of months is
counted (`logs_left_out`) and said, as the report leaves its prover events and partitions out;
the prover events drawn are the report's, kept by that span already.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import IO, Any, Final

import msgspec

from gapwatch.base.sorted_spool import SortedSpool
from gapwatch.core import fmt
from gapwatch.core.bounds import MAX_COPY_LATE_S, MAX_COPY_S
from gapwatch.core.codec import encode_json, gap_json
from gapwatch.core.ledger import GapLedger
from gapwatch.core.models import (
    CopyRecord,
    Gap,
    GpuHealth,
    GpuInfo,
    GpuSample,
    HostSample,
    LogEvent,
    Notice,
    ProverEvent,
    Record,
    SessionHeader,
    StateChange,
)
from gapwatch.core.readings import reading
from gapwatch.core.sizes import bounded_event
from gapwatch.cuzk.log_lines import busy_span

HOST_PID = 1
PROVER_PID = 2
GPU_PID_BASE = 100
_TID_GAPS, _TID_STATE, _TID_NODATA = 1, 2, 3
_TID_SYNTH = 10
_TID_WORKER_BASE = 1000
_TID_LOCK_BASE = 2000
#: Copy-trace tracks: one per CUDA stream (tid = base + stream id), under its GPU.
_TID_STREAM_BASE = 100_000
#: Events encoded per write.
_WRITE_BATCH: Final = 4096
#: How far from the recording's span a record gapwatch wrote while recording can lie: each is
#: stamped near its arrival, and a copy the furthest, begun up to an hour before it ended
#: (`MAX_COPY_S`), ended up to ten minutes before it arrived (`MAX_COPY_LATE_S`).
RECORDED_REACH_S: Final = MAX_COPY_S + MAX_COPY_LATE_S
#: The host sampler's key among the GPUs' (`TraceBuilder._interval_start`).
_HOST_KEY: Final = -1

_GPU_COUNTERS: tuple[tuple[str, str], ...] = (
    ("sm_active_pct", "SM active %"),
    ("gpu_util_pct", "GPU util %"),
    ("pcie_rx_bytes_per_s", "PCIe RX bytes/s"),
    ("pcie_tx_bytes_per_s", "PCIe TX bytes/s"),
)
_HOST_COUNTERS: tuple[tuple[str, str], ...] = (
    ("mem_used_pct", "host memory used %"),
    ("psi_mem_some_avg10", "PSI memory some avg10 %"),
    ("psi_mem_full_avg10", "PSI memory full avg10 %"),
    ("psi_mem_some_share", "memory stall share (some)"),
    ("psi_cpu_some_share", "CPU wait share (some)"),
)


#: GpuHealth fields drawn as counters on the GPU's track.
_HEALTH_COUNTERS: tuple[tuple[str, str], ...] = (
    ("temperature_c", "temperature °C"), ("power_w", "power W"),
    ("memory_used_bytes", "GPU memory used bytes"), ("sm_clock_mhz", "SM clock MHz"),
)


def _gpu_pid(gpu: int) -> int:
    return GPU_PID_BASE + gpu


def _phase_label(partition: int | None) -> str:
    return f"partition {partition}" if partition is not None else "monolithic"


class TraceBuilder:
    """Collects trace events; `events()` returns them sorted, `write()` writes the JSON."""

    def __init__(self, header: SessionHeader,
                 keep_within: tuple[float | None, float | None] = (None, None),
                 logs_within: tuple[float | None, float | None] = (None, None)) -> None:
        """`keep_within`: the recording's span (its start, its samples' end; None: open on that
        side); a copy, health reading or notice further than `RECORDED_REACH_S` from it is
        left out (`far_off`). `logs_within`: the report's span (`report.report_span`, the
        one rule its prover events and partition table are kept by); a log line outside it
        is left out (`logs_left_out`)."""
        self.header = header
        lo, hi = keep_within
        self._lo = None if lo is None else lo - RECORDED_REACH_S
        self._hi = None if hi is None else hi + RECORDED_REACH_S
        #: Records left out as far off the recording, by type.
        self.far_off: dict[str, int] = {}
        self._logs_from, self._logs_until = logs_within
        #: Log lines left out as outside the report's span (a recorded log's backlog).
        self.logs_left_out = 0
        #: Each GPU's (and the host's, `_HOST_KEY`) latest sample time: where the next one's
        #: interval may reach back to.
        self._sample_s: dict[int, float] = {}
        self._period_s = header.period_ms / 1000.0
        #: Events by absolute start (Unix seconds): their duration in seconds (or `-`), a space,
        #: and the event's JSON without ts/dur (`_add`).
        self._events = SortedSpool()
        self._gpus: dict[int, GpuInfo] = {g.index: g for g in header.gpus}
        self._ledger = GapLedger()
        #: Final gaps given whole (`final_gaps`), drawn instead of the ledger's.
        self._final: Iterable[Gap] | None = None
        self._last_state: dict[int, StateChange] = {}
        self._nodata_since: dict[int, float] = {}
        self._open_gpu: dict[tuple[str | None, int | None, int | None], LogEvent] = {}
        self._open_synth: dict[tuple[str | None, int | None], LogEvent] = {}
        self._workers: dict[int, int | None] = {}
        self._last_s: float | None = None
        #: (process, CUDA stream) pairs that had copies: one named track each.
        self._streams: set[tuple[int, int]] = set()
        #: Log lines that could not be placed: an END without START, a START never ended.
        self.unmatched = 0

    # -- feeding ------------------------------------------------------------------------------
    def add(self, record: Record | Gap | StateChange | ProverEvent) -> None:
        if isinstance(record, Notice | CopyRecord | GpuHealth) and self._far(record):
            self.far_off[record.type] = self.far_off.get(record.type, 0) + 1
            return
        if isinstance(record, GpuSample):
            self._sample(record)
        elif isinstance(record, HostSample):
            start = self._interval_start(_HOST_KEY, record.t_wall_s, record.interval_ns)
            for attr, name in _HOST_COUNTERS:
                value = getattr(record, attr)
                if value is not None:
                    self._counter(start, HOST_PID, name, value)
            self._seen(record.t_wall_s)
        elif isinstance(record, LogEvent):
            if self._log_outside(record.t_wall_s):
                self.logs_left_out += 1
                return
            # Cut as the detector's copy is (`sizes.bounded_event`): a trace is a display, and
            # a 1 MiB line (in a warning's instant) or a 16 KiB job id (in every slice's name,
            # id and args) went into it whole.
            self._log(bounded_event(record))
        elif isinstance(record, Gap):
            self._ledger.add(record)
        elif isinstance(record, StateChange):
            self._state(record)
        elif isinstance(record, Notice):
            if record.level != "info":
                self._instant(record.t_wall_s, f"{record.level}: {record.message}",
                              {"message": record.message}, record.gpu)
            self._seen(record.t_wall_s)
        elif isinstance(record, CopyRecord):
            self._copy(record)
        elif isinstance(record, GpuHealth) and record.gpu in self._gpus:
            # Health as counters on the GPU's track (GPU errors come as their notices above).
            pid = _gpu_pid(record.gpu)
            for attr, name in _HEALTH_COUNTERS:
                value = getattr(record, attr)
                if value is not None:
                    self._counter(record.t_wall_s, pid, name, value)
        elif isinstance(record, ProverEvent):
            self._prover_event(record)

    def _far(self, r: Notice | CopyRecord | GpuHealth) -> bool:
        """Whether `r` lies further than `RECORDED_REACH_S` from the recording's span."""
        first, last = (r.start_wall_s, r.end_wall_s) if isinstance(r, CopyRecord) else (
            r.t_wall_s, r.t_wall_s)
        return (self._lo is not None and first < self._lo) or (
            self._hi is not None and last > self._hi)

    def _log_outside(self, t: float) -> bool:
        """Whether a log line at `t` lies outside the report's span: `record --from-start`
        recorded a log's backlog of 207 days, whose lines the report leaves out of its prover
        events and partition table, and the trace drew them, its origin 207 days back, a
        job's start never ended drawn over the 207 days."""
        return (self._logs_from is not None and t < self._logs_from) or (
            self._logs_until is not None and t > self._logs_until)

    def _interval_start(self, key: int, t: float, interval_ns: int | None) -> float:
        """Where a sample read at `t` over `interval_ns` begins: no further back than the
        previous sample of its GPU (`key`), nor, for the first, than one period (as `/metrics`
        counts sampled time); at `t` without an interval."""
        before = self._sample_s.get(key)
        if before is None or t > before:
            self._sample_s[key] = t
        if interval_ns is None or interval_ns <= 0:
            return t
        earliest = t - self._period_s if before is None else min(before, t)
        return max(t - interval_ns / 1e9, earliest)

    def _prover_event(self, ev: ProverEvent) -> None:
        """A prover event on the prover's track: a stretch (a restart's cost, a lost job's
        wait) or a watched proof as a slice from its arrival, else an instant."""
        self._seen(ev.t_wall_s)
        args: dict[str, Any] = {"message": ev.message, "job_id": ev.job_id}
        p = ev.proof
        if ev.start_s is not None and ev.end_s is not None:
            args["parts"] = [{"name": x.name, "start_s": x.start_s, "end_s": x.end_s}
                             for x in ev.parts]
            self._slice(ev.start_s, ev.end_s, PROVER_PID, 0, ev.kind, args, "prover")
        elif p is not None and p.done and p.total_s is not None:
            args["verdict"] = p.verdict
            if p.error is not None:
                args["error"] = p.error
            self._slice(ev.t_wall_s - p.total_s, ev.t_wall_s, PROVER_PID, 0,
                        f"{p.proof_kind} {p.verdict}", args, "prover")
        if ev.level != "info":
            self._instant(ev.t_wall_s, f"{ev.level}: {ev.kind} {ev.job_id or ''}".rstrip(),
                          args, ev.gpu)

    def _copy(self, c: CopyRecord) -> None:
        """One slice per copy on a track per (GPU, stream), named by direction and memory kind
        ("H2D pageable 1.5 GiB"); copies of no watched GPU go to the prover process."""
        pid = _gpu_pid(c.gpu) if c.gpu is not None else PROVER_PID
        if c.gpu is not None and c.gpu not in self._gpus:
            self._gpus[c.gpu] = GpuInfo(index=c.gpu)
        self._streams.add((pid, c.stream_id))
        self._slice(c.start_wall_s, c.end_wall_s, pid, _TID_STREAM_BASE + c.stream_id,
                    f"{c.direction.upper()} {c.host_kind} {fmt.size(c.bytes)}",
                    {"bytes": c.bytes, "bytes_per_s": c.bytes_per_s, "src_kind": c.src_kind,
                     "dst_kind": c.dst_kind, "pid": c.pid, "cuda_device": c.cuda_device,
                     "correlation_id": c.correlation_id}, "copy")
        self._seen(c.end_wall_s)

    def final_gaps(self, gaps: Iterable[Gap]) -> None:
        """The gaps, final and closed, in start order (a report's `GapSpool`): drawn at `write`
        as the ledger's gaps would be, read once then (never held here)."""
        self._final = gaps

    def extend(self, records: Iterable[Record | Gap | StateChange | ProverEvent]) -> None:
        for r in records:
            self.add(r)

    def _seen(self, t: float) -> None:
        if self._last_s is None or t > self._last_s:
            self._last_s = t

    def _add(self, t: float, dur: float | None, event: dict[str, Any]) -> None:
        self._events.add(t, (b"-" if dur is None else b"%r" % dur) + b" " + encode_json(event))

    def _counter(self, t: float, pid: int, name: str, value: float) -> None:
        self._add(t, None, {"ph": "C", "pid": pid, "tid": 0, "name": name,
                            "args": {"value": float(value)}})

    def _slice(self, start: float, end: float, pid: int, tid: int, name: str,
               args: dict[str, Any], cat: str) -> None:
        self._add(start, max(0.0, end - start),
                  {"ph": "X", "pid": pid, "tid": tid, "name": name, "cat": cat, "args": args})

    def _instant(self, t: float, name: str, args: dict[str, Any], gpu: int | None) -> None:
        pid = _gpu_pid(gpu) if gpu is not None and gpu in self._gpus else PROVER_PID
        self._add(t, None, {"ph": "i", "s": "p", "pid": pid, "tid": 0, "name": name,
                            "cat": "warning", "args": args})

    def _sample(self, s: GpuSample) -> None:
        if s.gpu not in self._gpus:
            self._gpus[s.gpu] = GpuInfo(index=s.gpu)
        start = self._interval_start(s.gpu, s.t_wall_s, s.interval_ns)
        pid = _gpu_pid(s.gpu)
        for attr, name in _GPU_COUNTERS:
            # NaN or negative is no reading (`readings.reading`, the detector's rule): a
            # recording's -1e300 B/s was drawn as a counter value, its track scaled to it.
            value = reading(getattr(s, attr))
            if value is not None:
                self._counter(start, pid, name, value)
        if s.sm_active_pct is None:
            self._nodata_since.setdefault(s.gpu, start)
        elif s.gpu in self._nodata_since:
            self._slice(self._nodata_since.pop(s.gpu), start, pid, _TID_NODATA, "no SM data",
                        {}, "data")
        self._seen(s.t_wall_s)

    def _state(self, st: StateChange) -> None:
        prev = self._last_state.get(st.gpu)
        if prev is not None:
            self._state_slice(prev, st.t_wall_s)
        self._last_state[st.gpu] = st
        self._seen(st.t_wall_s)

    def _state_slice(self, st: StateChange, end: float) -> None:
        self._slice(st.t_wall_s, end, _gpu_pid(st.gpu), _TID_STATE, st.state,
                    {"busy_fraction": st.busy_fraction, "reason": st.reason}, "state")

    def _log(self, ev: LogEvent) -> None:
        self._seen(ev.t_wall_s)
        if ev.warning is not None:
            self._instant(ev.t_wall_s, ev.warning, {"line": ev.raw, "job_id": ev.job_id,
                                                    "partition": ev.partition}, ev.gpu)
        if ev.worker is not None and ev.gpu is not None:
            self._workers[ev.worker] = ev.gpu
        if ev.kind == "cuzk_partition":
            self._gpu_lock(ev)
        if ev.kind != "timeline":
            return
        if ev.name == "GPU_START":
            self._workers.setdefault(ev.worker if ev.worker is not None else -1, ev.gpu)
            self._open_gpu[(ev.job_id, ev.worker, ev.partition)] = ev
        elif ev.name == "GPU_END":
            start = self._open_gpu.pop((ev.job_id, ev.worker, ev.partition), None)
            if start is None:
                self.unmatched += 1
                return
            tid = _TID_WORKER_BASE + (ev.worker if ev.worker is not None else -1)
            self._slice(start.t_wall_s, ev.t_wall_s, PROVER_PID, tid, _phase_label(ev.partition),
                        {"job_id": ev.job_id, **ev.fields}, "gpu")
        elif ev.name == "SYNTH_START":
            self._open_synth[(ev.job_id, ev.partition)] = ev
        elif ev.name == "SYNTH_END":
            start = self._open_synth.pop((ev.job_id, ev.partition), None)
            if start is None:
                self.unmatched += 1
                return
            self._synth(start.t_wall_s, ev.t_wall_s, ev, {"job_id": ev.job_id, **ev.fields})

    def _synth(self, start: float, end: float, ev: LogEvent, args: dict[str, Any]) -> None:
        # Async (b/e): synthesis of several partitions overlaps, which one thread cannot nest.
        ident = f"{ev.job_id}:{ev.partition}"
        name = f"synth {_phase_label(ev.partition)}"
        base = {"pid": PROVER_PID, "tid": _TID_SYNTH, "name": name, "cat": "synthesis",
                "id": ident}
        self._add(start, None, {**base, "ph": "b", "args": args})
        self._add(end, None, {**base, "ph": "e", "args": {}})

    def _gpu_lock(self, ev: LogEvent) -> None:
        # Placed by its mutex_held_ms: none where that is no step's (`log_lines.busy_span`).
        start, end = busy_span(ev.fields)
        end = ev.t_wall_s if end is None and "gpu_busy_end_s" not in ev.fields else end
        if not isinstance(start, int | float) or not isinstance(end, int | float):
            return
        worker = ev.worker if ev.worker is not None else -1
        self._workers.setdefault(worker, ev.gpu)
        self._slice(float(start), float(end), PROVER_PID, _TID_LOCK_BASE + worker,
                    f"gpu lock {_phase_label(ev.partition)}",
                    {"job_id": ev.job_id, **ev.fields}, "gpu_lock")

    # -- output -------------------------------------------------------------------------------
    def _finish(self) -> None:
        """Add the end-of-data pieces (open gaps, last states, open phases), once."""
        end = self._last_s if self._last_s is not None else self.header.started_wall_s
        for gap in self._ledger.gaps() if self._final is None else self._final:
            g_end = gap.end_s if gap.end_s is not None else max(end, gap.start_s)
            self._slice(gap.start_s, g_end, _gpu_pid(gap.gpu), _TID_GAPS, gap.kind,
                        gap_json(gap), "gap")
        for st in self._last_state.values():
            self._state_slice(st, max(end, st.t_wall_s))
        for gpu, since in self._nodata_since.items():
            self._slice(since, max(end, since), _gpu_pid(gpu), _TID_NODATA, "no SM data", {},
                        "data")
        for ev in self._open_gpu.values():
            tid = _TID_WORKER_BASE + (ev.worker if ev.worker is not None else -1)
            self._slice(ev.t_wall_s, max(end, ev.t_wall_s), PROVER_PID, tid,
                        _phase_label(ev.partition), {"job_id": ev.job_id, "unterminated": True},
                        "gpu")
        for ev in self._open_synth.values():
            self._synth(ev.t_wall_s, max(end, ev.t_wall_s), ev,
                        {"job_id": ev.job_id, "unterminated": True})

    def _metadata(self) -> list[dict[str, Any]]:
        meta: list[dict[str, Any]] = []

        def name(pid: int, tid: int | None, text: str, sort: int) -> None:
            if tid is None:
                meta.append({"ph": "M", "pid": pid, "tid": 0, "name": "process_name",
                             "args": {"name": text}})
                meta.append({"ph": "M", "pid": pid, "tid": 0, "name": "process_sort_index",
                             "args": {"sort_index": sort}})
            else:
                meta.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name",
                             "args": {"name": text}})
                meta.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index",
                             "args": {"sort_index": sort}})

        for idx, info in sorted(self._gpus.items()):
            pid = _gpu_pid(idx)
            name(pid, None, f"GPU {idx} {info.name}".rstrip(), idx)
            name(pid, _TID_GAPS, "gaps", 1)
            name(pid, _TID_STATE, "chaining state", 2)
            name(pid, _TID_NODATA, "no data", 3)
        for pid, stream in sorted(self._streams):
            name(pid, _TID_STREAM_BASE + stream, f"copies, stream {stream}", 10 + stream)
        name(HOST_PID, None, f"host {self.header.host}", 900)
        name(PROVER_PID, None, "prover (log)", 1000)
        name(PROVER_PID, _TID_SYNTH, "synthesis", 0)
        for worker, gpu in sorted(self._workers.items()):
            on = f" (GPU {gpu})" if gpu is not None else ""
            name(PROVER_PID, _TID_WORKER_BASE + worker, f"worker {worker}{on}", 2 * worker + 10)
            name(PROVER_PID, _TID_LOCK_BASE + worker, f"worker {worker} gpu lock", 2 * worker + 11)
        return meta

    def trace(self) -> dict[str, Any]:
        """The whole trace as a JSON-ready dict (`traceEvents` sorted by time): for tests and
        small traces; `write` streams. Like `write`, once per builder."""
        out = io.BytesIO()
        self.write(out)
        trace: dict[str, Any] = msgspec.json.decode(out.getvalue())
        return trace

    def write(self, out: IO[bytes]) -> int:
        """Write the trace JSON, streamed in time order (metadata first); returns the number of
        trace events. Ends the builder (its spooled events are gone)."""
        self._finish()
        meta = self._metadata()
        n = len(meta)
        out.write(b'{"traceEvents":[' + b",".join(map(encode_json, meta)))
        origin: float | None = None
        batch: list[bytes] = []
        try:
            for t, payload in self._events.sorted():
                if origin is None:
                    origin = t  # the earliest time in the trace
                dur, event = payload.split(b" ", 1)
                tail = b"" if dur == b"-" else b',"dur":' + encode_json(round(float(dur) * 1e6, 3))
                batch.append(event[:-1] + b',"ts":' + encode_json(round((t - origin) * 1e6, 3))
                             + tail + b"}")
                if len(batch) >= _WRITE_BATCH:
                    n += self._flush(out, batch, first=n == 0)
            n += self._flush(out, batch, first=n == 0)
        finally:
            self._events.close()
        other = {"origin_unix_s": origin if origin is not None else self.header.started_wall_s,
                 "source": self.header.source, "host": self.header.host,
                 "gapwatch": self.header.gapwatch_version}
        out.write(b'],"displayTimeUnit":"ms","otherData":' + encode_json(other) + b"}")
        return n

    @staticmethod
    def _flush(out: IO[bytes], batch: list[bytes], first: bool) -> int:
        """Write `batch` (emptied) after what is written; `first`: no event is written yet."""
        if not batch:
            return 0
        out.write((b"" if first else b",") + b",".join(batch))
        n = len(batch)
        batch.clear()
        return n
