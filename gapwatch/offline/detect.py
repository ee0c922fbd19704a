"""Run the detector over a whole recorded input: the one loop behind `report` and `export`.

Who calls it: `gapwatch.offline.report` (one process) and `gapwatch.offline.report_parallel`
(each worker process runs this same loop over its share of the GPUs). Live sessions drive the
same `GapDetector.feed` one record at a time (`gapwatch.engine.session`); both keep gaps in a
`GapLedger`, so live and offline outputs apply one rule.

Log events come from the recording and from `--log` files (already parsed, in time order): the
files' events are merged in by wall time, each fed just before the first GPU sample at or after
it. Directly, without a Session or store: a 24 h, 8-GPU recording is ~7 M samples and the store's
lock and ring buffers would only cost time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from gapwatch.core.blind import Bye, byes_in
from gapwatch.core.chaining import WINDOW_S, ChainingFigure, ChainingMeter
from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import GapDetector
from gapwatch.core.health import MAX_REPORT_EVENTS, HealthStats
from gapwatch.core.ledger import GapLedger
from gapwatch.core.models import (
    BlindSpot,
    CopyRecord,
    Gap,
    GpuHealth,
    GpuSample,
    HardwareEvent,
    HostSample,
    LogEvent,
    Notice,
    ProverEvent,
    ProverStatus,
    Record,
    SessionHeader,
    StateChange,
)
from gapwatch.core.prover_watch import ProverWatch
from gapwatch.core.sizes import bounded_event
from gapwatch.core.track import GpuTotals
from gapwatch.cuzk.partitions import timeline_event
from gapwatch.cuzk.pipeline import DEFAULT_MAX_PARALLEL_SYNTHESIS, PipelineView
from gapwatch.cuzk.prover import CuzkProver, view_of
from gapwatch.offline.log_span import LogSpan

#: States in one canonical order: by data time, then GPU (stable: each GPU's own order kept).
#: A one-process and a split run give the same list however their outputs interleave.
_state_order = attrgetter("t_mono_ns", "gpu")


@dataclass
class Detected:
    """What running the detector over a whole input gave, before it is summed up.

    Built by `detect_records` (one process) or merged from the workers' by
    `gapwatch.offline.report_parallel`; both must give equal values for the same input.
    """

    header: SessionHeader
    #: The gaps (final versions, retracted ones gone), as every output counts them.
    ledger: GapLedger
    #: Every state change, in `_state_order`.
    states: list[StateChange]
    totals: list[GpuTotals]
    #: The detector's own counters (out_of_order, stale_gpm, holes, ...), non-zero ones.
    detector_counters: dict[str, int]
    #: The log events the partition timeline reads (`partitions.timeline_event`), in order.
    log_events: list[LogEvent]
    #: The prover's `/status` snapshots in the input (cuzk), in order.
    prover_statuses: list[ProverStatus] = field(default_factory=list)
    #: The line at which each gap id (1, 2, ...) was assigned, when the caller gave `line_of`.
    gap_id_lines: list[int] = field(default_factory=list)
    #: The copy trace's copies, in input order (empty without a copy trace).
    copies: list[CopyRecord] = field(default_factory=list)
    #: What the prover's log said about its pipeline (the advice reads it).
    pipeline: PipelineView = field(default_factory=PipelineView)
    #: The source's blind spots (NVML blocked), and the copy trace's BYEs (a prover exiting),
    #: which can name their cause (`gapwatch.core.blind`).
    blind_spots: list[BlindSpot] = field(default_factory=list)
    byes: list[Bye] = field(default_factory=list)
    #: `--log` files with lines outside the recording's span, one line each (`log_span`).
    log_notes: list[str] = field(default_factory=list)
    #: Reading counters and problems (filled in by the caller, which owns the reader).
    counters: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    #: GPU health over the run per GPU, and the GPU errors (at most `MAX_REPORT_EVENTS`; all
    #: counted in `hw_event_count`).
    health: dict[int, HealthStats] = field(default_factory=dict)
    hw_events: list[HardwareEvent] = field(default_factory=list)
    hw_event_count: int = 0
    #: The chaining figure per GPU over the whole run, and its worst minute (start, share).
    chaining: dict[int, ChainingFigure] = field(default_factory=dict)
    chaining_worst: dict[int, tuple[float, float]] = field(default_factory=dict)
    #: What the prover's watcher said (PoSt proofs, restarts, errors, lost GPU jobs), in order.
    prover_events: list[ProverEvent] = field(default_factory=list)


def detect_records(
    header: SessionHeader,
    records: Iterable[Record],
    config: DetectorConfig,
    extra_logs: Sequence[LogEvent] = (),
    *,
    line_of: Callable[[], int] | None = None,
    max_parallel_synthesis: int = DEFAULT_MAX_PARALLEL_SYNTHESIS,
    on_log: Callable[[LogEvent], None] | None = None,
    watch: ProverWatch | None = None,
) -> Detected:
    """Feed every record (and `extra_logs`, merged by time) to one offline `GapDetector`.

    Args:
        max_parallel_synthesis: `[cuzk] max_parallel_synthesis` (the prover's synthesis
            workers when its log does not say them).
        line_of: where the reader is (the line of the record being fed); when given, the line
            that assigned each gap id is kept, so that split runs can renumber their gaps.
        on_log: called with every log event (recorded and `extra_logs`) as it is fed: what
            a caller reads beside the detector (`compare` reads the prover's settings).
        watch: the prover's watcher, fed every record but GPU samples (as the live session
            feeds it); its events are `Detected.prover_events`.
    """
    # cuzk is the prover gapwatch knows: its facts stay empty where its log and /status are not
    # in the input, and the gaps are explained without them.
    det = GapDetector(config, list(header.gpus), period_s=header.period_ms / 1000, live=False,
                      prover=CuzkProver(max_parallel_synthesis))
    ledger = GapLedger()
    states: list[StateChange] = []
    log_events: list[LogEvent] = []
    prover_statuses: list[ProverStatus] = []
    copies: list[CopyRecord] = []
    blind_spots: list[BlindSpot] = []
    byes: list[Bye] = []
    gap_id_lines: list[int] = []
    health_side = _HealthSide(ChainingMeter(list(header.gpus), config, window_s=None))
    chaining = health_side.chaining
    prover_events: list[ProverEvent] = []
    if line_of is not None:
        det.on_gap_id = lambda _gid: gap_id_lines.append(line_of())

    # Hot loop (~7 M records): GPU samples, the bulk, go straight to feed_gpu and host samples
    # to feed_host (what `feed` would call), after the merge test; every other record through
    # `feed`. The record classes are read from locals (a module global is a dict lookup).
    gpu_sample, host_sample, log_event, gap_type = GpuSample, HostSample, LogEvent, Gap
    span = LogSpan(header.started_wall_s)
    extra_logs = span.before_start(list(extra_logs)) if extra_logs else extra_logs
    li, n_extra = 0, len(extra_logs)
    next_log_t = extra_logs[0].t_wall_s if extra_logs else float("inf")
    for r in records:
        if type(r) is gpu_sample:
            if li < n_extra and r.t_wall_s >= next_log_t:
                li = _feed_extra(det, watch, extra_logs, li, r.t_wall_s, log_events,
                                 prover_events, on_log)
                next_log_t = extra_logs[li].t_wall_s if li < n_extra else float("inf")
            out = det.feed_gpu(r)
            chaining.add_sample(r)
        elif type(r) is host_sample:
            out = det.feed_host(r)
        elif isinstance(r, log_event):
            _keep_for_timeline(log_events, r)
            if on_log is not None:
                on_log(r)
            # The detector and the watcher see a log event as a live session's do
            # (`Session.on_record`: its text cut to the store's bounds).
            kept = bounded_event(r)
            if watch is not None:
                prover_events += watch.feed(kept)
            out = det.feed(kept)
        else:
            if type(r) is ProverEvent:
                continue  # derived: the watcher says them again
            if watch is not None:
                prover_events += watch.feed(r)
            health_side.add(r)
            _keep_side(r, prover_statuses, copies, blind_spots, byes)
            out = det.feed(r)
        for x in out:
            if isinstance(x, gap_type):
                ledger.add(x)
            else:
                states.append(x)
    # The `--log` lines left after the last sample, as far as they are inside the span.
    end_s = max((t.last_wall_s for t in det.totals() if t.samples), default=None)
    rest = [e for e in extra_logs[li:] if span.after_end(e, end_s)]
    _feed_extra(det, watch, rest, 0, float("inf"), log_events, prover_events, on_log)
    if watch is not None:
        prover_events += watch.finish()
    for x in det.finish():
        if isinstance(x, Gap):
            ledger.add(x)
        else:
            states.append(x)
    states.sort(key=_state_order)
    return Detected(
        header=header, ledger=ledger, states=states, totals=det.totals(),
        detector_counters={k: v for k, v in det.counters.items() if v},
        log_events=log_events, prover_statuses=prover_statuses, gap_id_lines=gap_id_lines,
        copies=copies, pipeline=view_of(det.prover.facts()), blind_spots=blind_spots, byes=byes,
        log_notes=span.notes(end_s), **health_side.fields(),
        prover_events=prover_events,
    )  # fmt: skip


def _feed_extra(det: GapDetector, watch: ProverWatch | None, extra_logs: Sequence[LogEvent],
                li: int, until_s: float, log_events: list[LogEvent],
                prover_events: list[ProverEvent],
                on_log: Callable[[LogEvent], None] | None = None) -> int:
    """Feed the extra log events from `li` on up to `until_s` (merged by time into the
    records), as a session would (and to `on_log`); returns the index of the first one not
    fed."""
    while li < len(extra_logs) and extra_logs[li].t_wall_s <= until_s:
        kept = bounded_event(extra_logs[li])
        det.feed(kept)
        _keep_for_timeline(log_events, extra_logs[li])
        if on_log is not None:
            on_log(extra_logs[li])
        if watch is not None:
            prover_events.extend(watch.feed(kept))
        li += 1
    return li


def _keep_side(r: Record, prover_statuses: list[ProverStatus], copies: list[CopyRecord],
               blind_spots: list[BlindSpot], byes: list[Bye]) -> None:
    """Keep a record the report reads beside the gaps (the rare ones: not GPU, host or log)."""
    if isinstance(r, ProverStatus):
        prover_statuses.append(r)
    elif isinstance(r, CopyRecord):
        copies.append(r)
    elif isinstance(r, BlindSpot):
        blind_spots.append(r)
    elif isinstance(r, Notice):
        byes.extend(byes_in((r,)))


class _HealthSide:
    """What the report says of GPU health beside the gaps: the chaining figure's sums (fed every
    GPU sample by the loop, every copy here), health over the run per GPU, the GPU errors (the
    first `MAX_REPORT_EVENTS`, all counted)."""

    def __init__(self, chaining: ChainingMeter) -> None:
        self.chaining = chaining
        self.health: dict[int, HealthStats] = {}
        self.hw_events: list[HardwareEvent] = []
        self.hw_count = 0

    def add(self, r: Record) -> None:
        if isinstance(r, CopyRecord):
            self.chaining.add_copy(r)
        elif isinstance(r, GpuHealth):
            stats = self.health.get(r.gpu)
            if stats is None:
                stats = self.health[r.gpu] = HealthStats(r.gpu)
            stats.add(r)
        elif isinstance(r, HardwareEvent):
            self.hw_count += 1
            if len(self.hw_events) < MAX_REPORT_EVENTS:
                self.hw_events.append(r)

    def fields(self) -> dict[str, Any]:
        """`Detected`'s health fields."""
        figures = self.chaining.figures()
        worst = {g: w for g in figures
                 if (w := self.chaining.worst_window(g, WINDOW_S)) is not None}
        return {"health": self.health, "hw_events": self.hw_events,
                "hw_event_count": self.hw_count, "chaining": figures, "chaining_worst": worst}


def _keep_for_timeline(kept: list[LogEvent], event: LogEvent) -> None:
    slim = timeline_event(event)
    if slim is not None:
        kept.append(slim)


def sort_states(states: list[StateChange]) -> None:
    """Put merged states in the canonical order `detect_records` gives (in place)."""
    states.sort(key=_state_order)
