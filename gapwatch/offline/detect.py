"""Run the detector over a whole recorded input: the one loop behind `report` and `export`.

Who calls it: `gapwatch.offline.report` (one process) and `gapwatch.offline.report_parallel`
(each worker process runs this same loop over its share of the GPUs). Live sessions drive the
same `GapDetector.feed` one record at a time (`gapwatch.engine.session`); both keep gaps in a
`GapLedger`, so live and offline outputs apply one rule.

Log events come from the recording and from `--log` files (already parsed, in time order): the
files' events are merged in by wall time, each fed just before the first GPU sample at or after
it; a line both hold (a recording made with `record --log` of the file given) is fed once, the
file's copy (`gapwatch.logs.once`). Directly, without a Session or store: a 24 h, 8-GPU
recording is ~7 M samples and the store's lock and ring buffers would only cost time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter, itemgetter
from typing import Any, Final, Protocol

from gapwatch.core.blind import Bye, byes_in
from gapwatch.core.chaining import WINDOW_S, ChainingFigure, ChainingMeter
from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import GapDetector
from gapwatch.core.health import MAX_REPORT_EVENTS, HealthStats, StatesSeen
from gapwatch.core.ledger import Change, GapLedger, Tally
from gapwatch.core.models import (
    PROVER_EVENT_KINDS,
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
from gapwatch.core.prover_watch import ProverWatch, SaidWithin, Unheard
from gapwatch.core.sizes import bounded_event
from gapwatch.core.track import GpuTotals
from gapwatch.core.util_figure import UtilFigure
from gapwatch.cuzk.partitions import TimelineBuilder, timeline_event
from gapwatch.cuzk.pipeline import PipelineView
from gapwatch.cuzk.post_deadlines import PostDeadlines
from gapwatch.cuzk.prover import CuzkProver, view_of
from gapwatch.logs.follow import read_by_at_end
from gapwatch.logs.once import LinesOnce, may_hold_log_lines
from gapwatch.offline import log_span
from gapwatch.offline.copy_sums import CopySums
from gapwatch.offline.gap_spool import Bounded, EventSpool, GapSpool
from gapwatch.offline.log_span import LogSpan, log_read_from
from gapwatch.offline.prover_events import ProverCounts, ProverEvents
from gapwatch.offline.throughput import WallSteps
from gapwatch.sources.recording import PassedOver, StillWritten, WakeAt

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
    #: The closed gaps (final versions, retracted ones gone), in start order, on disk beyond a
    #: few thousand (`GapSpool`): the loop lets each go once the detector can no longer
    #: re-publish it.
    gaps: GapSpool
    #: Closed gaps by (GPU, kind), as the ledger counted them (`GapLedger.tally`).
    gap_tally: dict[tuple[int, str], Tally]
    #: Every state change, in `_state_order`.
    states: list[StateChange]
    totals: list[GpuTotals]
    #: The detector's own counters (out_of_order, stale_gpm, holes, ...), non-zero ones.
    detector_counters: dict[str, int]
    #: The partition timeline, fed the log events it reads (`partitions.timeline_event`) and
    #: the `/status` snapshots as they went by; None when neither was read.
    timeline: TimelineBuilder | None
    #: How many of the prover's `/status` snapshots the input held (cuzk); they went to the
    #: partition timeline and the listener as they came (a day of 1 s polls held ~26 KB each).
    prover_status_count: int = 0
    #: The line at which each gap id (1, 2, ...) was assigned, when the caller gave `line_of`.
    gap_id_lines: list[int] = field(default_factory=list)
    #: The copy trace's copies, summed as they came (`CopySums`; none without a copy trace).
    copies: CopySums = field(default_factory=CopySums)
    #: What the prover's log said about its pipeline (the advice reads it).
    pipeline: PipelineView = field(default_factory=PipelineView)
    #: What the prover package could not learn from the input (`Prover.lacks`), in its words.
    prover_lacks: list[str] = field(default_factory=list)
    #: The source's blind spots (NVML blocked), and the copy trace's BYEs (a prover exiting),
    #: which can name their cause (`gapwatch.core.blind`).
    blind_spots: list[BlindSpot] = field(default_factory=list)
    byes: list[Bye] = field(default_factory=list)
    #: What the `--log` files' reading and span found, one line each (`LogSpan.notes`: lines
    #: outside the recording's span, a file that is no log, ...): they change what the report
    #: means.
    log_notes: list[str] = field(default_factory=list)
    #: One line per `--log` file whose lines the recording held too (`LinesOnce.notes`): each
    #: counted once, as it should be; a note, not a problem of the data.
    log_recorded_notes: list[str] = field(default_factory=list)
    #: The recording's log events left out as lines the `--log` files hold too (their copies
    #: fed in their place: `gapwatch.logs.once`).
    log_already_recorded: int = 0
    #: Reading counters and problems (filled in by the caller, which owns the reader); a
    #: recording still being written is said by the report's warning, not among the problems.
    counters: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    still_written: StillWritten | None = None
    #: GPU health over the run per GPU, and the GPU errors (at most `MAX_REPORT_EVENTS`; all
    #: counted in `hw_event_count`, and the errors they stand for by kind in `hw_errors`).
    health: dict[int, HealthStats] = field(default_factory=dict)
    hw_events: list[HardwareEvent] = field(default_factory=list)
    hw_event_count: int = 0
    hw_errors: dict[str, int] = field(default_factory=dict)
    #: The chaining figure per GPU over the whole run, and its worst minute (start, share).
    chaining: dict[int, ChainingFigure] = field(default_factory=dict)
    chaining_worst: dict[int, tuple[float, float]] = field(default_factory=dict)
    #: GPU-Util over the working span per GPU (`gapwatch.core.util_figure`).
    util: dict[int, UtilFigure] = field(default_factory=dict)
    #: What the prover's watcher said (PoSt proofs, restarts, errors, lost GPU jobs), in order:
    #: every one counted, the first `MAX_KEPT` of each kind kept.
    prover_events: ProverEvents = field(default_factory=ProverEvents)
    #: The watcher's words left out, by kind: said outside the report's span (a whole
    #: report's: more than `MARGIN_S` outside the recording's; `_Side.keep_within`). Its
    #: "proof" counts PoSt proofs, as the PoSt list does (`ProverCounts.by_proof`), not their
    #: words.
    said_left_out: dict[str, int] = field(default_factory=dict)
    #: The most closed gaps the loop held in memory at once (the others were final, spooled):
    #: bounded by the window the detector can revise, not by the recording's length.
    most_gaps_held: int = 0
    #: Wall time of the latest host sample (`GapDetector.last_host_wall_s`; None: none).
    last_host_wall_s: float | None = None
    #: The deadlines the PoSt were judged by, and where each came from (the recording's own
    #: or this run's config: `gapwatch.cuzk.post_deadlines`); set by the caller that chose
    #: them (`report.detect_either`), None where none did.
    post_deadlines: PostDeadlines | None = None


class RunListener(Protocol):
    """What reads every log event and `/status` snapshot beside the detection
    (`detect_records`' `listener`): `compare`'s settings, `report`'s paths."""

    def feed_log(self, ev: LogEvent) -> None: ...

    def feed_status(self, st: ProverStatus) -> None: ...


@dataclass
class LogInput:
    """The `--log` files parsed once (`gapwatch.offline.report.parse_log_input`): their events
    sorted on disk, what `LogSpan` saw of them, the parser's counters. One process or every
    worker of a split report reads the spool from its start; each run takes a copy of `span`
    (`kept` and `after_end` count into it)."""

    spool: EventSpool
    span: LogSpan
    counters: dict[str, int]

    def close(self) -> None:
        self.spool.close()


#: A run without a prover's watcher (cuzk's rules off, `[logs] cuzk = false`): no count of its
#: events is known.
NO_WATCHER: Final = Unheard({k: "no prover watcher (cuzk's rules off: [logs] cuzk = false)"
                             for k in PROVER_EVENT_KINDS})

#: Closed gaps counted between two looks at which of them are final (then spooled).
SETTLE_EVERY: Final = 256


class _Published:
    """What the detector published, taken a list at a time: gap versions counted by the ledger,
    and every closed gap handed to the spool once its last version is final (not among the
    detector's `revisable_gap_ids`), so that the loop holds a few hundred gaps, not the run's;
    state changes kept in order."""

    def __init__(self, det: GapDetector, spool: GapSpool, states: list[StateChange],
                 steps: WallSteps) -> None:
        self.ledger = GapLedger()
        self.spool = spool
        self.states = states
        #: Told every state as it comes (the prover's words are judged by wall time as said).
        self.steps = steps
        self._det = det
        self._closed = 0
        #: The most closed gaps held at once (`Detected.most_gaps_held`).
        self.most_held = 0

    def take(self, out: list[Gap | StateChange]) -> None:
        # Settled only after the whole list: a later version of a gap may follow in it.
        for x in out:
            if isinstance(x, Gap):
                if self.ledger.add(x) is Change.CLOSED:
                    self._closed += 1
            else:
                self.states.append(x)
                self.steps.add(x)
        if self._closed >= SETTLE_EVERY:
            self.most_held = max(self.most_held, self.ledger.closed_count())
            self.spool.extend(self.ledger.take_final(self._det.revisable_gap_ids()))
            self._closed = 0

    def finish(self) -> GapSpool:
        """After the detector's last word: every closed gap is final."""
        self.most_held = max(self.most_held, self.ledger.closed_count())
        self.spool.extend(self.ledger.take_final(set()))
        return self.spool


class _Side:
    """What the loop keeps beside the gaps from the log events and `/status` snapshots it
    feeds: the partition timeline and the prover's watcher's events, and the caller's
    listener."""

    def __init__(self, watch: ProverWatch | None, listener: RunListener | None,
                 timeline: bool = True) -> None:
        self.watch = watch
        self.listener = listener
        self.timeline: TimelineBuilder | None = None
        self.prover_events = ProverEvents()
        self.statuses = 0
        #: Whether to build the timeline (a split report's other workers do not), and where
        #: the log events it is fed begin (`log_span.log_read_from`).
        self.builds_timeline = timeline
        self.log_from_s: float | None = None
        #: The span the prover's events are kept in (`say`, `log_span.report_span`): from
        #: the first event, its end once the data has ended; open while `keep_within` is not
        #: told (a split report's log parse).
        self.said = SaidWithin()
        #: What `keep_within` was told: the recording's (or window's) start, the window.
        self._span_of: tuple[float, float | None, float | None, bool] | None = None
        #: The wall clock's steps back so far, fed the states as they come (`_Published`):
        #: past one, wall times place no word (`log_span.report_span`).
        self.steps = WallSteps()
        self._stepped_back = False
        #: The words left out (`Detected.said_left_out`), counted as the kept ones are: a
        #: proof is said twice or more (late while running, then done), counted by its rows
        #: as the PoSt list counts them.
        self._left_out = ProverCounts()

    def keep_within(self, span: LogSpan, windowed: bool, since_s: float | None,
                    until_s: float | None = None) -> None:
        """Which of the prover's words are the report's: those said inside its span, the one
        rule the partition table keeps its rows by (`log_span.report_span`, as
        `report.report_span` asks it). A window's log is read around it either way (a `--log`
        file, `log_window`; the recording's own, `startup_lines.recorded_around`: before it
        and after it); a whole report's PoSt logged a minute before `record` began is listed,
        as its partitions are, by a recording holding its log or by `--log` alike; the rest
        are counted (`left_out`). Its end is the data's, once read (`data_ended`)."""
        self._span_of = (span.start_s, since_s, until_s, windowed)
        self._bound(None)

    def data_ended(self, end_s: float | None) -> None:
        """The data's end (the latest sample's wall time, None: none): the words said after
        it are judged against it."""
        self._bound(end_s)

    def _bound(self, end_s: float | None) -> None:
        if self._span_of is None:
            return
        started_s, since_s, until_s, windowed = self._span_of
        self.said.from_s, self.said.until_s = log_span.report_span(
            started_s, since_s, until_s, windowed, end_s, self._stepped_back)

    def say(self, said: list[ProverEvent]) -> None:
        """The watcher's words, those inside the span kept (`SaidWithin`: a restart's cost
        where its restart is; the `--log` lines read 5 minutes each side of a window made a
        window of 55 s list 5 PoSt, 2 restarts and 4 errors of its log where its own were 1,
        1 and 2), the others counted."""
        if not self._stepped_back and self.steps.worst_s > 0:
            self._stepped_back = True  # wall times place nothing from here on
            self._bound(None)
        for e in said:
            if self.said.keeps(e):
                self.prover_events.add(e)
            else:
                self._left_out.add(e)

    @property
    def left_out(self) -> dict[str, int]:
        """The words left out, by kind (`Detected.said_left_out`): "proof" counts proofs."""
        return self._left_out.by_proof()

    def _builder(self) -> TimelineBuilder:
        """The timeline, made by the first event or snapshot it reads."""
        if self.timeline is None:
            self.timeline = TimelineBuilder(self.log_from_s)
        return self.timeline

    def log(self, event: LogEvent) -> None:
        slim = timeline_event(event) if self.builds_timeline else None
        if slim is not None:
            self._builder().add(slim)
        if self.listener is not None:
            self.listener.feed_log(event)

    def status(self, st: ProverStatus) -> None:
        self.statuses += 1
        if self.builds_timeline:
            self._builder().add_status(st)
        if self.listener is not None:
            self.listener.feed_status(st)


def data_end_s(totals: Iterable[GpuTotals]) -> float | None:
    """Where the data ends: the wall time of the latest sample of any GPU, with a reading or
    without (None: no sample). The one rule for the `--log` lines after it (`detect_records`,
    `LogSpan.after_end`), the report's span (`report.report_span`) and the lines export draws
    (`commands.export`), which restated it."""
    return max((t.last_sample_wall_s for t in totals if t.last_sample_wall_s is not None),
               default=None)


def samples_end_s(totals: Iterable[GpuTotals], last_host_wall_s: float | None
                  ) -> float | None:
    """Where the recording's samples end: the wall time of the latest sample of any GPU (with
    a reading or without; a GPU without a sample time, by its last reading) or of the host
    (None: no sample). A GPU lost while recording (XID 79) stops its samples while the host's,
    `/status` and the logs go on: the one end the report's warnings judge a GPU's data as
    stopped early by (`report._no_data_lines`) and the trace keeps the recorder's own records
    by (`commands.export._recorded_span`), which ended at the last GPU sample and left out a
    notice two hours on as one no recorder writes."""
    ends = [t.last_sample_wall_s if t.last_sample_wall_s is not None else t.last_wall_s
            for t in totals if t.last_sample_wall_s is not None or t.last_t_ns is not None]
    if last_host_wall_s is not None:
        ends.append(last_host_wall_s)
    return max(ends, default=None)


def detect_records(
    header: SessionHeader,
    records: Iterable[Record | PassedOver],
    config: DetectorConfig,
    extra_logs: Iterable[LogEvent] = (),
    *,
    line_of: Callable[[], int] | None = None,
    max_parallel_synthesis: int | None = None,
    prover: CuzkProver | None = None,
    listener: RunListener | None = None,
    watch: ProverWatch | None = None,
    span: LogSpan | None = None,
    gap_spool: GapSpool | None = None,
    copies: CopySums | None = None,
    timeline: bool = True,
    wake_at: WakeAt | None = None,
    end_of_data: Callable[[float | None], float | None] | None = None,
    on_gpu_clock: Callable[[], None] | None = None,
    since_s: float | None = None,
    until_s: float | None = None,
    windowed: bool = False,
    run_of: Callable[[], int] | None = None,
) -> Detected:
    """Feed every record (and `extra_logs`, in time order, merged by time) to one offline
    `GapDetector`.

    Args:
        extra_logs: the `--log` files' events, sorted by time: a list, or a stream read once
            (`gapwatch.offline.gap_spool.EventSpool`) whose files `span` has already seen
            (`LogSpan.observe`); without `span` they are looked at first.
        max_parallel_synthesis: `[cuzk] max_parallel_synthesis` (the prover's synthesis
            workers when its log does not say them).
        prover: the detector's prover (a new `CuzkProver` of `max_parallel_synthesis` when
            None): given where `watch` reads what it keeps (`CuzkWatch`'s `holds`).
        line_of: where the reader is (the line of the record being fed); when given, the line
            that assigned each gap id is kept, so that split runs can renumber their gaps.
        listener: fed every log event (recorded and `extra_logs`) as it is fed, and every
            `/status` snapshot in order: what a caller reads beside the detector (`compare`
            reads the prover's settings, `report` its paths).
        watch: the prover's watcher, fed every record but GPU samples (as the live session
            feeds it); its events are `Detected.prover_events`.
        gap_spool: where the closed gaps go (a new `GapSpool` when None).
        copies: what sums the copy trace's copies (a new `CopySums` when None).
        timeline: build the partition timeline (`Detected.timeline`).
        wake_at: a split report's worker (`gapwatch.offline.report_parallel`): kept at the
            time of the next `extra_logs` event, for the reader, whose `PassedOver` lines
            (other workers' samples) feed the events up to them as their samples would.
        end_of_data: given the end of this loop's data (the latest GPU sample's wall time),
            the end of all the data (a split report's workers each see some GPUs'): what the
            events left after the last sample are judged against.
        on_gpu_clock: `GapDetector.on_gpu_clock` (a split report's worker gives up there).
        since_s: a window's start (`--since`): its records were read from there (where the
            log events begin: `log_span.log_read_from`).
        until_s: a window's end (`--until`): its words said after it are past the span
            (the recording's log past it may be fed, `startup_lines.recorded_around`).
        windowed: a window's report (`--since`/`--until`): the prover's events kept are those
            said inside the window; a whole report's, those said within `MARGIN_S` of the
            recording's span (`_Side.keep_within`).
        run_of: the run of a set (0: its first) that the record being fed belongs to
            (`Recording.run`): a GPU state is news once per GPU per run (`_HealthSide`).
            None: one run.
    """
    # cuzk is the prover gapwatch knows: its facts stay empty where its log and /status are not
    # in the input, and the gaps are explained without them.
    det = GapDetector(config, list(header.gpus), period_s=header.period_ms / 1000, live=False,
                      prover=prover if prover is not None
                      else CuzkProver(max_parallel_synthesis))
    states: list[StateChange] = []
    side = _Side(watch, listener, timeline)
    published = _Published(det, gap_spool if gap_spool is not None else GapSpool(), states,
                           side.steps)
    take = published.take
    copies = copies if copies is not None else CopySums()
    blind_spots: list[BlindSpot] = []
    byes: list[Bye] = []
    gap_id_lines: list[int] = []
    health_side = _HealthSide(ChainingMeter(list(header.gpus), config, window_s=None), run_of)
    chaining = health_side.chaining
    if line_of is not None:
        det.on_gap_id = lambda _gid: gap_id_lines.append(line_of())
    det.on_gpu_clock = on_gpu_clock
    # A window cut before the recording's end ends no recording: its gaps say nothing of it.
    det.ends_recording = until_s is None

    # Hot loop (~7 M records): GPU samples, the bulk, go straight to feed_gpu and host samples
    # to feed_host (what `feed` would call), after the merge test; every other record through
    # `feed`. The record classes are read from locals (a module global is a dict lookup).
    gpu_sample, host_sample, log_event = GpuSample, HostSample, LogEvent
    if span is None:
        span = LogSpan(header.started_wall_s)
        extra_logs = list(extra_logs)
        for ev in extra_logs:
            span.observe(ev)
    side.log_from_s = log_read_from(span, since_s)  # before the first event makes the builder
    side.keep_within(span, windowed or since_s is not None, since_s, until_s)
    # A line both the recording and a `--log` file hold is fed once, as the file has it.
    once = LinesOnce(span.kept(_bounded(extra_logs)), itemgetter(0),
                     look=may_hold_log_lines(header), since_s=span.start_s)
    if watch is not None:
        # The recording's copy of a line fed as the file has it says when it was read live:
        # the watcher's end (`finish`'s reader's clock) runs from there, as with it alone.
        once.tell_lines_read(watch.line_read)
    extra = iter(once)
    recorded_too = once.recorded
    head = next(extra, None)
    next_log_t = head[0].t_wall_s if head is not None else float("inf")
    wake = wake_at if wake_at is not None else WakeAt()
    wake.t_wall_s = next_log_t
    # A run of copies (a flush of the trace: a partition's tens) goes to the detector at once,
    # before the next other record, so a closed gap they reach is re-published once.
    held_copies: list[CopyRecord] = []
    copy_record = CopyRecord
    last_host_mono_ns: int | None = None
    for r in records:
        if held_copies and type(r) is not copy_record:
            take(det.feed_copies(held_copies))
            held_copies = []
        if type(r) is gpu_sample:
            if r.t_wall_s >= next_log_t:
                head, late = _feed_extra(det, side, head, extra, r.t_wall_s)
                take(late)
                next_log_t = wake.t_wall_s = head[0].t_wall_s if head is not None else float("inf")
            out = det.feed_gpu(r)
            chaining.add_sample(r)
        elif type(r) is host_sample:
            out = det.feed_host(r)
            last_host_mono_ns = r.t_mono_ns  # the end's reader's clock (`read_by_at_end`)
        elif isinstance(r, log_event):
            if recorded_too(r):
                continue  # the `--log` file's copy of its line is fed in its place
            side.log(r)
            # The detector and the watcher see a log event as a live session's do
            # (`Session.on_record`: its text cut to the store's bounds).
            kept = bounded_event(r)
            if watch is not None:
                if said := watch.feed(kept):  # most events say nothing: no call then
                    side.say(said)
            out = det.feed_log(kept)  # what `feed` calls for a log event
        else:
            if type(r) is ProverEvent:
                continue  # derived: the watcher says them again
            if isinstance(r, PassedOver):
                # Another worker's sample: the log events up to it, as its sample would feed.
                if r.t_wall_s >= next_log_t:
                    head, out = _feed_extra(det, side, head, extra, r.t_wall_s)
                    next_log_t = wake.t_wall_s = (
                        head[0].t_wall_s if head is not None else float("inf"))
                    take(out)
                continue
            if watch is not None:
                if said := watch.feed(r):
                    side.say(said)
            health_side.add(r)
            if type(r) is ProverStatus:
                side.status(r)
            else:
                _keep_side(r, copies, blind_spots, byes)
            if type(r) is copy_record:
                held_copies.append(r)
                continue
            out = det.feed(r)
        if out:
            take(out)
    take(det.feed_copies(held_copies))
    # The `--log` lines left after the last sample, as far as they are inside the span.
    end_s = data_end_s(det.totals())
    if end_of_data is not None:
        end_s = end_of_data(end_s)
    side.data_ended(end_s)  # the words said past it are past the span
    # A line the recording held too is inside it, wherever it falls.
    rest = (e for e in chain((head,) if head is not None else (), extra)
            if once.paired(e[0]) or span.after_end(e[0], end_s))
    take(_feed_extra(det, side, next(rest, None), rest, float("inf"))[1])
    if watch is not None:
        # Live, the reader's passes moved the watcher's "now" on where no line came; the
        # recording's end tells where they had got to (a PoSt said LATE live is late here too).
        side.say(watch.finish(read_by_at_end(header, last_host_mono_ns)))
    # The counts nothing read could give are not known, never 0 (`ProverEvents.unheard`).
    side.prover_events.unheard = watch.unheard() if watch is not None else NO_WATCHER
    take(det.finish())
    states.sort(key=_state_order)
    return Detected(
        header=header, gaps=published.finish(), gap_tally=published.ledger.tally(),
        states=states, totals=det.totals(),
        detector_counters={k: v for k, v in det.counters.items() if v},
        timeline=side.timeline, prover_status_count=side.statuses, gap_id_lines=gap_id_lines,
        copies=copies, pipeline=view_of(det.prover.facts()), prover_lacks=det.prover.lacks(),
        blind_spots=blind_spots, byes=byes,
        log_notes=span.notes(end_s, once.locks_kept),
        log_recorded_notes=[*once.notes(), *span.stood_in_notes(once.locks_kept)],
        log_already_recorded=once.count,
        **health_side.fields(),
        prover_events=side.prover_events, said_left_out=side.left_out,
        most_gaps_held=published.most_held,
        last_host_wall_s=det.last_host_wall_s,
    )  # fmt: skip


def _bounded(events: Iterable[LogEvent]) -> Iterator[Bounded]:
    """Each event with the detector's copy of it (`bounded_event`): a spool judged each once,
    as it was added (`EventSpool.bounded`)."""
    if isinstance(events, EventSpool):
        return events.bounded()
    return ((ev, bounded_event(ev)) for ev in events)


def _feed_extra(det: GapDetector, side: _Side, head: Bounded | None,
                rest: Iterator[Bounded], until_s: float,
                ) -> tuple[Bounded | None, list[Gap | StateChange]]:
    """Feed the extra log events from `head` on (then `rest`) up to `until_s` (merged by time
    into the records), as a session would (the detector and the watcher each event's bounded
    copy; the side, its timeline and the listener, the event); returns the first one not fed
    (None: none left), and what the detector said."""
    out: list[Gap | StateChange] = []
    watch = side.watch
    while head is not None:
        event, kept = head
        if not event.t_wall_s <= until_s:
            break
        out += det.feed_log(kept)  # what `feed` calls for a log event
        side.log(event)
        if watch is not None:
            if said := watch.feed(kept):
                side.say(said)
        head = next(rest, None)
    return head, out


def _keep_side(r: Record, copies: CopySums, blind_spots: list[BlindSpot],
               byes: list[Bye]) -> None:
    """Keep a record the report reads beside the gaps (the rare ones: not GPU, host, log or
    `/status`)."""
    if isinstance(r, CopyRecord):
        copies.add(r)
    elif isinstance(r, BlindSpot):
        blind_spots.append(r)
    elif isinstance(r, Notice):
        byes.extend(byes_in((r,)))


class _HealthSide:
    """What the report says of GPU health beside the gaps: the chaining figure's sums (fed every
    GPU sample by the loop, every copy here), health over the run per GPU, the GPU errors (the
    first `MAX_REPORT_EVENTS`, all counted; a state once per GPU per run, `run_of` the run of
    the record being fed)."""

    def __init__(self, chaining: ChainingMeter, run_of: Callable[[], int] | None = None) -> None:
        self.chaining = chaining
        self._run_of = run_of
        self.health: dict[int, HealthStats] = {}
        self.hw_events: list[HardwareEvent] = []
        self.hw_count = 0
        #: Errors by kind: an event's `count` each (5 uncorrected ECC errors in one reading
        #: are one event, 5 errors), as `/metrics`' `gapwatch_gpu_hardware_events_total` sums.
        self.hw_errors: dict[str, int] = {}
        #: The states (`health.GPU_STATE_KINDS`) seen per GPU in this run: each is news once
        #: a run (forgotten where the next run begins).
        self.states_seen = StatesSeen()

    def add(self, r: Record) -> None:
        if isinstance(r, CopyRecord):
            self.chaining.add_copy(r)
        elif isinstance(r, GpuHealth):
            stats = self.health.get(r.gpu)
            if stats is None:
                stats = self.health[r.gpu] = HealthStats(r.gpu)
            stats.add(r)
        elif isinstance(r, HardwareEvent):
            # Counted as a session's store and /metrics count it (`health.counted`): a state
            # (a GPU lost, a row remap) once per GPU a run, whatever count it was recorded
            # with; said again in the run, it is no news ("gpu_lost 4" of one GPU was four
            # losses in the report, one in replay). A later run's is news: a set of a week's
            # runs counted a GPU lost Monday and again Thursday once, Thursday's unlisted.
            # The run by where the reader is, not by time: a run's clock may overlap the one
            # before (stepped back at the reboot a lost GPU forces).
            n = self.states_seen.counted(r, self._run_of() if self._run_of is not None else 0)
            if n is None:
                return
            self.hw_count += 1
            self.hw_errors[r.kind] = self.hw_errors.get(r.kind, 0) + n
            if len(self.hw_events) < MAX_REPORT_EVENTS:
                self.hw_events.append(r)

    def fields(self) -> dict[str, Any]:
        """`Detected`'s health fields."""
        figures = self.chaining.figures()
        worst = {g: w for g in figures
                 if (w := self.chaining.worst_window(g, WINDOW_S)) is not None}
        return {"health": self.health, "hw_events": self.hw_events,
                "hw_event_count": self.hw_count, "hw_errors": dict(self.hw_errors),
                "chaining": figures, "chaining_worst": worst,
                "util": self.chaining.util_figures()}


def sort_states(states: list[StateChange]) -> None:
    """Put merged states in the canonical order `detect_records` gives (in place)."""
    states.sort(key=_state_order)
