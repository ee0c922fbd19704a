"""`gapwatch report`: what the detector finds in a recording or a trace CSV, summed up.

Who calls it: `gapwatch.commands.report` (text or JSON to stdout), `gapwatch.commands.export`
(the Perfetto trace shows the same gaps and log events), `gapwatch.offline.compare` (each side
detected by `detect_either`, as the report detects), tests, the bench. The detection itself is
`gapwatch.offline.detect.detect_records` (one process) or `gapwatch.offline.report_parallel`
(GPUs split across processes, same result); this module reads the inputs, picks between the two,
and adds up gaps (from the run's `GapLedger`), breakdown periods, partitions and payoff.

Gaps and states stored in a recording are ignored and recomputed, so a report always shows what
this version detects. Log events come from the recording and from `--log` files (parsed by
`gapwatch.logs.parse.LogParser`), fed to the detector in time order with the samples.

Memory: bounded by what a window needs, not by the recording's length. The `--log` files are
parsed whole (one large file in two processes: `gapwatch.offline.log_split`) but their events
wait on disk, sorted (`spool_logs`), until the detector reaches them; the detection loop lets
each closed gap go to a spool on disk once it is final (`gapwatch.offline.gap_spool`); every
sum over the gaps (per-GPU prover causes, breakdown periods, the copy table, the advice) is
one pass over that spool (`_GapSums`), and `report --json` writes the gaps from it one at a
time. What stays in memory grows with what the
report lists whole: state changes, each advice's gap ids and idle seconds (16 bytes a gap as
machine numbers, 24 for a gap of pageable or slow copies, whose first-wave moment is kept too,
`gapwatch.cuzk.advice.StallGaps`: ~5 MB for a day of 8 GPUs); the partition
table and the copy trace's copies go to spools too (`gapwatch.cuzk.partition_table`,
`gapwatch.offline.copy_sums`).

The JSON document is described in docs/detection.md ("Report JSON"); `REPORT_SCHEMA_VERSION`
changes whenever a field is renamed or removed or its meaning changes (adding fields keeps the
version).
"""

from __future__ import annotations

import copy
import gc
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass, field, replace
from heapq import heappush, heapreplace
from itertools import chain
from pathlib import Path
from typing import Any, Final, TypeVar

from gapwatch.config import Config, judged_config
from gapwatch.core import fmt
from gapwatch.core.blind import Bye, blind_words
from gapwatch.core.chaining import ChainingFigure
from gapwatch.core.codec import encode_json, gap_json
from gapwatch.core.config import DetectorConfig
from gapwatch.core.evidence_types import known
from gapwatch.core.health import HealthStats, event_words
from gapwatch.core.ledger import Tally
from gapwatch.core.models import (
    GAP_KINDS,
    BlindSpot,
    Gap,
    GpuInfo,
    HardwareEvent,
    LogEvent,
    Record,
    SessionHeader,
    StateChange,
)
from gapwatch.core.track import GpuTotals
from gapwatch.core.util_figure import UtilFigure
from gapwatch.cuzk.advice import (
    AdviceReport,
    advice_json,
    advise_stalls,
    by_stall,
    with_proofs,
)
from gapwatch.cuzk.log_lines import Unplaced
from gapwatch.cuzk.partitions import PartitionTiming, RunTimeline, TimelineBuilder
from gapwatch.cuzk.paths import PathFacts, PathsSeen, path_notes, path_rule
from gapwatch.cuzk.pipeline import PipelineView, timeline_epoch
from gapwatch.cuzk.post_deadlines import PostDeadlines
from gapwatch.cuzk.prover import CuzkProver
from gapwatch.cuzk.watch import watch_beside
from gapwatch.logs.files import LinesRead, log_file_events
from gapwatch.logs.not_a_log import not_a_log_notes
from gapwatch.offline import log_span
from gapwatch.offline.copy_sums import CopySums, CopyTable, PageableSweep
from gapwatch.offline.cut_end import data_after
from gapwatch.offline.detect import (
    Detected,
    LogInput,
    RunListener,
    data_end_s,
    detect_records,
    samples_end_s,
)
from gapwatch.offline.gap_spool import EventSpool
from gapwatch.offline.log_around import LogAround
from gapwatch.offline.log_span import LogSpan, Repeats
from gapwatch.offline.log_split import spool_split
from gapwatch.offline.log_window import spool_window
from gapwatch.offline.payoff import Payoff, busy_fraction, gap_payoff, report_payoff
from gapwatch.offline.progress import DataTime, LogBytes, Progress, progress_of, tell
from gapwatch.offline.prover_events import ProverEvents, prover_events_json
from gapwatch.offline.report_parallel import detect_parallel, plan_workers
from gapwatch.offline.startup_lines import window_lead_in
from gapwatch.offline.throughput import clock_stepped_back_s, no_data_stretches
from gapwatch.sources.files import data_span, header_of, read_any, refuse_a_stream
from gapwatch.sources.recording import Reading, StillWritten
from gapwatch.sources.time_window import TimeWindow

#: 2: `partitions.items[].unpinned` may be null (nothing said of its pinning) and is true for a
#: monolithic job (PoSt, batch, the pipeline off) and a first wave, which `partitions.unpinned`
#: counts too; in 1 it was true only where the log said the row unpinned (docs/detection.md).
REPORT_SCHEMA_VERSION = 2
#: Why a report refuses a FIFO (`refuse_a_stream`): the header, its checks against the data
#: and the detection pass each read the recording.
READ_MORE_THAN_ONCE = "a report reads its recording more than once"
#: Rows of the text's tables (gaps, partitions) without `--all`.
TABLE_ROWS = 50


@dataclass
class Breakdown:
    gpu: int
    start_s: float
    end_s: float
    #: What BREAKDOWN was entered on (the detector's reason at the state change).
    reason: str = ""
    #: Seconds of data time from start to end: immune to wall-clock jumps, never negative
    #: (`end_s - start_s` is not, when the wall clock was stepped in between).
    duration_s: float = 0.0
    #: The pcie_starved gaps that ended inside the period, their idle seconds, and the most of
    #: them one chaining window held (what the period rested on, not only how it began).
    starved_gaps: int = 0
    starved_idle_s: float = 0.0
    max_in_window: int = 0
    #: Entered at the GPU's last reading and still on there: no period of it was read (the
    #: demo's snapshot, taken the moment GPU0 entered it, read as `22:28:24.327 -
    #: 22:28:24.327 (0.0 s): no gaps`); the report says it at the data's end
    #: (`cut_end.breakdown_at_end`).
    entered_at_end: bool = False


@dataclass
class ReportData:
    """Everything a report says, before formatting."""

    path: str
    header: SessionHeader
    totals: list[GpuTotals]
    #: Final version of every closed gap (retracted ones left out), in start order: a
    #: `GapSpool` (on disk, read one at a time) from `build_report`.
    gaps: Sequence[Gap]
    breakdowns: list[Breakdown]
    states: list[StateChange]
    payoff: Payoff
    partitions: RunTimeline | None = None
    #: The copy trace's table (`CopySums.table`); None when the recording has no copy.
    copies: CopyTable | None = None
    log_files: list[str] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    #: Stretches the source could not read (NVML blocked), and the copy trace's BYEs that can
    #: name their cause (`gapwatch.core.blind`).
    blind_spots: list[BlindSpot] = field(default_factory=list)
    byes: list[Bye] = field(default_factory=list)
    #: What makes the figures above less than the whole story (samples dropped as out of
    #: order, clock jumps, a GPU whose data stopped early, a recording still being written):
    #: said first, in plain words (`said_of_input` decides what is one).
    warnings: list[str] = field(default_factory=list)
    #: What is worth saying of the input but changes nothing the report means (a `--log`'s
    #: lines the recording held too, each counted once): said beside the warnings, not as one.
    notes: list[str] = field(default_factory=list)
    #: What to change (cuzk's settings for the stalls the gaps show; docs/advice.md).
    advice: AdviceReport = field(default_factory=AdviceReport)
    #: GPU health over the run, GPU errors (XID, ECC, PCIe replays; the first
    #: `MAX_REPORT_EVENTS`, `hw_event_count` of them in all, the errors they stand for by kind
    #: in `hw_errors`), the chaining figure per GPU and its worst minute
    #: (`gapwatch.core.health`, `gapwatch.core.chaining`).
    health: dict[int, HealthStats] = field(default_factory=dict)
    hw_events: list[HardwareEvent] = field(default_factory=list)
    hw_event_count: int = 0
    hw_errors: dict[str, int] = field(default_factory=dict)
    chaining: dict[int, ChainingFigure] = field(default_factory=dict)
    chaining_worst: dict[int, tuple[float, float]] = field(default_factory=dict)
    #: GPU-Util over the working span per GPU (`gapwatch.core.util_figure`).
    util: dict[int, UtilFigure] = field(default_factory=dict)
    #: Closed gaps by (GPU, kind): count and idle seconds, as the ledger counted them (the one
    #: count every output says: `GapLedger.tally`).
    gap_tally: dict[tuple[int, str], Tally] = field(default_factory=dict)
    #: What the prover did besides gaps: PoSt proofs, restarts and their cost, errors, lost
    #: GPU jobs (`gapwatch.core.models.ProverEvent`), in order: every one counted, the first
    #: `MAX_KEPT` of each kind kept.
    prover_events: ProverEvents = field(default_factory=ProverEvents)
    #: Each GPU's closed gaps by the prover's finer cause (`gaps_by_prover_cause`); a GPU
    #: without any left out.
    prover_causes: dict[int, dict[str, dict[str, float]]] = field(default_factory=dict)
    #: Of those, how many each source said, by GPU and cause (`ProverGapFacts.said_by`:
    #: "status", "log", "processes"): the GPUs line names them; a gap whose source was not
    #: kept, or of no cause ("none"), in none.
    prover_cause_said_by: dict[int, dict[str, dict[str, int]]] = field(default_factory=dict)
    #: What the prover package could not learn from the input (`Prover.lacks`): why gaps may
    #: have no prover cause and stalls no setting.
    prover_lacks: list[str] = field(default_factory=list)
    #: The part of the recording read (`--since`/`--until`), or None: the whole of it.
    window: TimeWindow | None = None
    #: Whether the recording's data goes on past the window's end (or its end is not known):
    #: a later `--until` reads more of it (`cut_end.data_after`).
    data_after: bool = False
    #: The `TABLE_ROWS` longest closed gaps, in start order (the text's gap table, where there
    #: are more: a day's first rows are its first minute; `_GapSums`).
    longest_gaps: list[Gap] = field(default_factory=list)
    #: The deadlines the PoSt were judged by and where each came from (the recording's own, or
    #: this run's config: `gapwatch.cuzk.post_deadlines`); None where nothing chose them.
    post_deadlines: PostDeadlines | None = None
    #: Wall time of the latest host sample (None: none): with the GPUs', where the samples
    #: end (`detect.samples_end_s`).
    last_host_wall_s: float | None = None
    #: The span the report covers (`report_span`; None: open on that side): the prover's
    #: words and the partitions said or worked outside it are left out (`left_out_note`), and
    #: the trace leaves out the log lines outside it (`commands.export`).
    span: tuple[float | None, float | None] = (None, None)


def spool_logs(paths: Iterable[str], config: Config, timeline_epoch_s: float | None = None,
               observe: Callable[[LogEvent], None] | None = None,
               progress: Progress | None = None, notes: list[str] | None = None,
               unplaced: list[Unplaced] | None = None, read: list[LinesRead] | None = None,
               ) -> tuple[EventSpool, dict[str, int]]:
    """The `--log` files parsed (`logs.files.log_file_events`), the events held on disk: read
    back sorted by time (equal times in the order parsed), one at a time; `observe` sees each
    as it is parsed (`LogSpan.observe`); `progress` is told how far the files are read;
    `notes` gets what the reading says of the files' engine runs (`LogSpan.runs_unplaced`),
    `unplaced` the files whose C++ lines could not be placed (`LogSpan.unplaced`), `read`
    what of each file's lines was understood (`LinesRead`). The caller closes the spool.
    Raises OSError."""
    counters: dict[str, int] = {}
    spool = EventSpool()
    paths = list(paths)
    on_read = LogBytes(progress, paths).at if progress is not None else None
    try:
        for ev in log_file_events(paths, config, timeline_epoch_s, counters, on_read,
                                  notes, unplaced, read):
            if observe is not None:
                observe(ev)
            spool.add(ev)
    except BaseException:
        spool.close()
        raise
    return spool, counters


def build_report(
    path: str | Path, config: Config, log_paths: list[str] | None = None,
    workers: int | None = None, *, parsed: LogInput | None = None,
    progress: Progress | None = None, window: TimeWindow | None = None,
) -> ReportData:
    """Read `path` (recording or trace CSV), run the detector, add up gaps, states and payoff.

    `workers`: processes to split the GPUs across; None picks (several only for a large
    recording with several GPUs, on several CPUs: see
    `gapwatch.offline.report_parallel.plan_workers`); 1 forces one process. The result is the
    same. The `--log` files are parsed once, whichever runs; `parsed`: already parsed
    (`logs_parsed`, for a caller that reads them again beside the report: the caller closes it).
    `progress`: told which step the report is at and how far (`gapwatch.offline.progress`).
    `window`: only the records inside it, the report of the recording as if cut there
    (`gapwatch.sources.time_window`; `parsed` must have been parsed for it).

    Raises:
        gapwatch.sources.recording.RecordingError: the file is not a usable recording.
        OSError: a `--log` file cannot be read.
    """
    logs = list(log_paths or [])
    refuse_a_stream(Path(path), READ_MORE_THAN_ONCE)
    n = plan_workers(path, logs) if workers is None else workers
    with ExitStack() as own:
        if parsed is None:  # parsed here, closed here
            parsed = own.enter_context(logs_parsed(path, config, logs, progress, window))
        with collector_off():
            found, paths = detect_either(path, config, logs, n, parsed,
                                         lambda: PathsSeen(_bounds(window)),
                                         progress=progress, window=window)
            tell(progress, "summing up")
            report = summarise(path, found, logs, config.detector.window_s, paths.result(),
                               window)
            report.data_after = data_after(path, window)
            return report


L = TypeVar("L", bound=RunListener)


def _bounds(window: TimeWindow | None) -> tuple[float | None, float | None] | None:
    """A window's bounds (None: no window, the whole recording)."""
    return None if window is None else (window.since_s, window.until_s)


def detect_either(path: str | Path, config: Config, logs: list[str], n: int,
                  parsed: LogInput | None, new_listener: Callable[[], L],
                  keep_h2d: bool = False, progress: Progress | None = None,
                  window: TimeWindow | None = None) -> tuple[Detected, L]:
    """Detect over `path` split across `n` processes where it splits, else in one (the same
    result), the `--log` files already `parsed` (None: none given); a listener made by
    `new_listener` is fed every log event and `/status` snapshot, in the order one process
    feeds them (a split run's in this process); `keep_h2d`: the copy trace's sums keep each
    host-to-device copy (`CopySums`, for `compare`); `progress`: told how far the detection is
    (by the data's time); `window`: only the records inside it, after the daemon's startup
    lines the recording holds from before it (`startup_lines.recorded_startup`) and, without
    `--log`, the log it holds around the window (`startup_lines.recorded_around`: on disk,
    freed here). Used by `build_report` and `compare`'s sides. Its PoSt are judged by the
    recording's own deadlines where this run's config names none (`judged_config`), said in
    `Detected.post_deadlines`."""
    judged, config = judged_config(header_of(path), config)
    # Without `--log`, the recording's own log is read around the window, as a `--log` is.
    around = window_lead_in(path, window, config.logs.cuzk, own_log=not logs)
    with closing(around):
        if n > 1:
            listener = new_listener()
            found = detect_parallel(path, config, n, parsed, listener=listener,
                                    keep_h2d=keep_h2d, progress=progress, window=window,
                                    around=around or None)
            if found is not None:
                _count_logs(found, parsed)
                found.post_deadlines = judged
                return found, listener
        listener = new_listener()  # what a split run that gave up saw is not kept
        found = detect(path, config, logs, listener=listener, parsed=parsed, keep_h2d=keep_h2d,
                       progress=progress, window=window, around=around or None)
        found.post_deadlines = judged
        return found, listener


@contextmanager
def collector_off() -> Iterator[None]:
    """The cyclic garbage collector off while a report reads and detects, as it was after.

    It finds nothing to free there (records and gaps hold no cycles), but with millions of
    objects alive its full passes cost seconds (~10 % of a 24 h report); forked workers
    inherit it off."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


@contextmanager
def logs_parsed(path: str | Path, config: Config, log_paths: list[str],
                progress: Progress | None = None, window: TimeWindow | None = None
                ) -> Iterator[LogInput | None]:
    """The `--log` files of the recording at `path` parsed once (`parse_log_input`; None
    without any), closed at the end: for a caller that reads their events beside the report
    (the Perfetto export: `build_report(..., parsed=)`, then the spool again) or detects
    without `build_report` (`compare`'s sides: `detect_either`). Raises what
    `parse_log_input` raises."""
    with collector_off():
        parsed = (parse_log_input(path, config, log_paths, progress, window) if log_paths
                  else None)
    try:
        yield parsed
    finally:
        if parsed is not None:
            parsed.close()


#: Records looked through for a first `/status` snapshot: one is polled about every second,
#: so a recording that has any has one within its first few thousand lines.
EPOCH_SCAN_RECORDS = 100_000
#: Snapshots looked at after the first, for another prover's: each poller asks about once a
#: second, so a second `--cuzk-status` shows among the next few.
OTHER_PROVER_SNAPSHOTS = 4


def recorded_timeline_epoch(path: str | Path) -> float | None:
    """TIMELINE's epoch from the first recorded `/status` snapshot with an uptime (a second
    pass over the file's start, stopped a few snapshots later), or None: none, or snapshots
    of more than one prover (two cuzk daemons polled, `gapwatch.cuzk.daemons`: which log is
    whose is not known, and one's uptime placed both daemons' lines, as live it does not,
    `gapwatch.engine.runtime`)."""
    rec = read_any(path)
    records = rec.records
    first: tuple[str, float] | None = None
    after = 0
    try:
        for i, r in enumerate(records):
            if i >= EPOCH_SCAN_RECORDS or after > OTHER_PROVER_SNAPSHOTS:
                break
            if r.type != "prover":
                continue
            if first is not None:
                if r.prover != first[0]:
                    return None
                after += 1
                continue
            epoch = timeline_epoch(r)
            if epoch is not None:
                first = (r.prover, epoch)
        return first[1] if first is not None else None
    finally:
        rec.close()


def parse_log_input(path: str | Path, config: Config, log_paths: list[str],
                    progress: Progress | None = None, window: TimeWindow | None = None
                    ) -> LogInput:
    """The `--log` files of the recording at `path`, parsed once into their spool (which the
    caller closes; `progress`: told how far; `window`: the events judged against it, not the
    whole recording: `LogSpan`). Raises OSError (a log), RecordingError (the recording's
    header)."""
    # Logs without their TIMELINE anchor line are placed by the recorded /status uptime.
    epoch = recorded_timeline_epoch(path) if log_paths else None
    return parse_logs_for(header_of(path).started_wall_s, epoch, config, log_paths, progress,
                          window)


def parse_logs_for(start_s: float, epoch: float | None, config: Config, log_paths: list[str],
                   progress: Progress | None = None, window: TimeWindow | None = None
                   ) -> LogInput:
    """`parse_log_input` of a recording already read: its start (`started_wall_s`) and
    TIMELINE's epoch from its `/status` uptime (None: the logs' own anchor lines only). Raises
    OSError (a log)."""
    since_s = window.since_s if window is not None else None
    span = LogSpan(start_s if since_s is None else max(start_s, since_s),
                   windowed=window is not None,
                   repeats=Repeats() if len(log_paths) > 1 else None)
    # A window's part of a large file (`gapwatch.offline.log_window`: only the lines around
    # it), else a large file in two processes (`gapwatch.offline.log_split`) or the files in
    # one (the same spool).
    part = (spool_window(log_paths, config, epoch, span, window, progress) if window is not None
            else None)
    split = part or spool_split(log_paths, config, epoch, span, progress)
    read: list[LinesRead] = []
    extra, counters = split or spool_logs(log_paths, config, epoch, span.observe, progress,
                                          span.runs_unplaced, span.unplaced, read)
    if split is not None:  # one file, parsed in parts: the parser's counters are its own
        read = [LinesRead.counted(log_paths[0], counters)]
    span.not_logs = not_a_log_notes(read)
    if span.repeats is not None:
        span.repeats.seen.clear()  # all read: what was found stays, the sample is not needed
    return LogInput(extra, span, counters)


def _count_logs(found: Detected, parsed: LogInput | None) -> None:
    """The log parser's counters after the others, as `detect` orders them, the recording's
    log events left out as lines of the `--log` files (`gapwatch.logs.once`), and the failure
    lines naming no job that the prover's facts could tie to no one monolithic job
    (`log_failures_unplaced`: `PipelineView.mono_failures_unplaced`, beside the parser's lines
    placed nowhere, `log_cpp_lines_unplaced` and `log_timeline_lines_unplaced`)."""
    if parsed is not None:
        found.counters.update({f"log_{k}": v for k, v in parsed.counters.items() if v})
    if found.log_already_recorded:
        found.counters["log_already_recorded"] = found.log_already_recorded
    if found.pipeline.mono_failures_unplaced:
        found.counters["log_failures_unplaced"] = found.pipeline.mono_failures_unplaced


def detect(path: str | Path, config: Config, log_paths: list[str],
           listener: RunListener | None = None,
           parsed: LogInput | None = None, keep_h2d: bool = False,
           progress: Progress | None = None, window: TimeWindow | None = None,
           around: LogAround | None = None) -> Detected:
    """Read the whole input (and the `--log` files, or `parsed`: them, already parsed; the
    caller closes it) and detect over it in one process (`listener`: see `detect_records`;
    `keep_h2d`, `progress`, `window`: see `detect_either`; `around`: recorded log events fed
    before the records and after them, `LogAround.before` and `after`)."""
    own = parsed is None
    logs = (parse_log_input(path, config, log_paths, progress, window) if parsed is None
            else parsed)
    rec = read_any(path, Reading(window=window))
    records: Iterable[Record] = rec.records if progress is None else progress_of(
        rec.records, DataTime(progress, data_span(path, rec.header.started_wall_s, window)))
    if around:
        records = chain(around.before(), records, around.after())
    # The detector's prover and the watcher: one keeper of the workers' holds (`watch_beside`).
    prover = CuzkProver(config.cuzk.max_parallel_synthesis)
    watch = watch_beside(prover, config.cuzk, config.logs.cuzk)
    try:
        found = detect_records(rec.header, records, config.detector, logs.spool,
                               prover=prover, listener=listener, watch=watch,
                               copies=CopySums(keep_h2d=keep_h2d),
                               span=copy.deepcopy(logs.span),
                               since_s=window.since_s if window is not None else None,
                               until_s=window.until_s if window is not None else None,
                               run_of=lambda: rec.run,
                               windowed=window is not None)
    finally:
        if own:
            logs.close()
    counters = dict(rec.counters)
    counters.update({f"detector_{k}": v for k, v in found.detector_counters.items()})
    found.counters = counters
    _count_logs(found, logs)
    found.still_written = rec.still_written
    # Said once: the report's warning carries the reader's line and why (`_still_written`).
    found.problems = rec.problems_kept(beside_report=True)
    return found


def summarise(path: str | Path, found: Detected, log_paths: list[str],
              window_s: float = DetectorConfig().window_s,
              paths: PathFacts | None = None, window: TimeWindow | None = None
              ) -> ReportData:
    """Closed gaps in start order, breakdown periods, per-partition timeline and payoff;
    the advice on the paths the prover's log shows (`paths`, `gapwatch.cuzk.paths`).
    `window`: the part of the recording read (None: the whole)."""
    facts = paths or PathFacts()
    totals = found.totals
    sums = _GapSums(found.gaps, found.copies, found.pipeline)
    tally = found.gap_tally
    span = report_span(found, window)
    partitions = _partitions(found.timeline, span)
    said = said_of_input(path, found)
    if window is None:
        said = replace(said, warnings=[*said.warnings, *left_out_note(
            found.said_left_out, _rows_left_out(found.timeline))])
    gap_advice = advise_stalls(sums.stalls, found.pipeline,
                           lambda these: gap_payoff(totals, these),
                           rules=lambda stall, these: path_rule(stall, these, facts),
                           notes=path_notes(facts))
    # The PoSt that failed or were late first, over every proof of the run.
    advice = with_proofs(gap_advice, found.prover_events.troubles())
    return ReportData(
        path=str(path), header=found.header, totals=totals, gaps=found.gaps,
        breakdowns=_breakdowns(found.states, totals, sums.starved, window_s),
        states=found.states,
        payoff=report_payoff(totals, tally, partitions, no_data_stretches(found.states),
                             clock_stepped_back_s(found.states)),
        partitions=partitions,
        log_files=list(log_paths), counters=found.counters, problems=list(found.problems),
        copies=found.copies.table(sums.copy_gaps) if found.copies else None,
        warnings=said.warnings, notes=said.notes,
        blind_spots=list(found.blind_spots), byes=list(found.byes),
        advice=advice,
        health=found.health, hw_events=found.hw_events, hw_event_count=found.hw_event_count,
        hw_errors=found.hw_errors,
        chaining=found.chaining, chaining_worst=found.chaining_worst, util=found.util,
        gap_tally=tally,
        prover_events=found.prover_events,
        prover_causes=sums.causes,
        prover_cause_said_by=sums.said_by,
        prover_lacks=list(found.prover_lacks),
        longest_gaps=sums.longest(), window=window, post_deadlines=found.post_deadlines,
        last_host_wall_s=found.last_host_wall_s, span=span,
    )  # fmt: skip


class _GapSums:
    """Everything the report sums over its gaps, in one pass over them in start order (each
    sum in the order it always took): each GPU's prover causes, the starved gaps the breakdown
    periods count, each GPU's gap time and pageable copy time within it (`CopySums.table`), and the
    gaps of each stall as the advice reads them (`gapwatch.cuzk.advice.StallGaps`)."""

    def __init__(self, gaps: Iterable[Gap], copies: CopySums, pipeline: PipelineView) -> None:
        self.causes: dict[int, dict[str, dict[str, float]]] = {}
        self.said_by: dict[int, dict[str, dict[str, int]]] = {}
        #: (end in data time, idle seconds) of each GPU's pcie_starved gaps, by end.
        self.starved: dict[int, list[tuple[int, float]]] = {}
        #: Per GPU with gaps: (gap seconds, pageable copy seconds within them).
        self.copy_gaps: dict[int, tuple[float, float]] = {}
        #: The `TABLE_ROWS` longest gaps so far, a min-heap of (duration, -order, gap): the
        #: order breaks ties (the earlier gap stays) and keeps gaps from being compared.
        self._longest: list[tuple[float, int, Gap]] = []
        sweep = PageableSweep(copies.pageable_spans()) if copies else None
        self.stalls = by_stall(self._each(gaps, sweep), pipeline)
        for mine in self.starved.values():
            mine.sort(key=lambda e: e[0])

    def longest(self) -> list[Gap]:
        """The longest gaps (`TABLE_ROWS` of them), in start order."""
        return [g for _d, _o, g in sorted(self._longest, key=lambda e: -e[1])]

    def _each(self, gaps: Iterable[Gap], sweep: PageableSweep | None) -> Iterable[Gap]:
        """The gaps, passed on to the advice's digest once summed here."""
        longest = self._longest
        for order, g in enumerate(gaps):
            entry = (g.duration_s, -order, g)
            if len(longest) < TABLE_ROWS:
                heappush(longest, entry)
            elif entry[:2] > longest[0][:2]:
                heapreplace(longest, entry)
            _add_cause(self.causes, self.said_by, g)
            if g.kind == "pcie_starved" and g.end_mono_ns is not None:
                self.starved.setdefault(g.gpu, []).append((g.end_mono_ns, g.duration_s))
            if sweep is not None:
                gap_s, pageable_s = self.copy_gaps.get(g.gpu, (0.0, 0.0))
                if g.end_s is not None:
                    gap_s += g.duration_s
                    pageable_s += sweep.time_in(g.gpu, g.start_s, g.end_s)
                self.copy_gaps[g.gpu] = (gap_s, pageable_s)
            yield g


@dataclass(frozen=True, slots=True)
class InputSaid:
    """What the report says of its input, sorted (`said_of_input`)."""

    #: What changes what the report means: said first, under WARNING.
    warnings: list[str]
    #: What does not: said beside them, as notes.
    notes: list[str]


def said_of_input(path: str | Path, found: Detected) -> InputSaid:
    """The one home where what is said of the input is sorted into warnings and notes.

    Warnings change what the report means: the `--log` files' span and reading (a log of
    another run, lines outside the recording, a file that is no log: `LogSpan.notes`), a gzip
    log cut short, a recording still being written (read only up to where it stood: `replay`
    says it as a warning too), the data's own problems (`data_warnings`). Notes do not: a
    `--log` file's lines the recording held too are each counted once, the report the same
    as without them (it was under WARNING, a data problem it is not)."""
    warnings = [*found.log_notes, *log_warnings(found.counters),
                *_still_written(path, found.counters, found.still_written),
                *data_warnings(found.detector_counters, found.totals,
                               [g.index for g in found.header.gpus], found.last_host_wall_s)]
    return InputSaid(warnings, list(found.log_recorded_notes))


def _still_written(path: str | Path, counters: dict[str, int],
                   still: StillWritten | None) -> list[str]:
    """A recording another process is writing (its writer's lock held: the reader counts it
    `still_written`), said once: with the line the reader read to and why more may come
    (`StillWritten`, whose own problem line the report leaves out of its problems; before,
    the text and --json said it twice)."""
    if not counters.get("still_written"):
        return []
    stood = (f"up to line {still.line_no}, where it stood when read ({still.why})"
             if still is not None else "up to where it stood when read")
    return [f"{path} is still being written by another process: this report reads it only "
            f"{stood}; its last part is not in it: report it again for more"]


def log_warnings(counters: dict[str, int]) -> list[str]:
    """What the `--log` files' reading found that changes what the report means: a gzip file
    cut short (`logs.files.LogFile`) gives no events past its cut."""
    cut = counters.get("log_ends_early", 0)
    return [f"{cut} --log gzip file(s) end early (a copy or a compression still running?): "
            "their events stop where they are cut"] if cut else []


def data_warnings(detector_counters: dict[str, int], totals: list[GpuTotals],
                  named: Iterable[int] = (),
                  last_host_wall_s: float | None = None) -> list[str]:
    """The data's own problems that change what the report means, in plain words: samples out
    of time order (dropped: a report of a shuffled file would otherwise just say "0 gaps"),
    clock jumps, GPUs whose data stopped while the others went on, GPUs the header names
    (`named`) without a sample of them (left out of every table without a word before)."""
    out = _unsampled(named, totals)
    dropped = detector_counters.get("out_of_order", 0)
    if dropped:
        seen = dropped + sum(t.samples for t in totals)
        out.append(
            f"{dropped} of {seen} GPU samples ({100 * dropped / seen:.0f} %) were out of time "
            "order and were dropped: the file is not in time order (files joined? sorted by "
            "something else?); this report covers only the samples in order"
        )
    belied = detector_counters.get("interval_belied", 0)
    if belied:
        out.append(f"{belied} GPU sample(s) hold an interval_ns belied by their spacing (shorter "
                   "than half the spacing the GPU's samples come at: no time a reading "
                   "covered); the spacing used in its place")
    jumps = detector_counters.get("clock_jumps", 0)
    if jumps:
        out.append(f"the wall clock jumped against data time {jumps} time(s) (an NTP step, "
                   "files joined): gaps and breakdown periods are cut at each jump")
    return out + _no_data_lines(totals, last_host_wall_s)


def _no_data_lines(totals: list[GpuTotals], last_host_wall_s: float | None) -> list[str]:
    """A line per GPU whose data ended before the end of the data (the latest sample of any
    GPU or of the host) with NO_DATA at the end: when its last reading was, and, by where its
    latest sample lies, whether its samples went on without a reading to the end, came without
    one for a while and then stopped, or stopped while the other inputs went on; a GPU that
    never gave a reading is said so. Not by its last NO_DATA's reason: that is what it was
    entered on, and the samples may stop, or come back unread, after it."""
    ends = {t.gpu: t.last_wall_s if t.last_sample_wall_s is None else t.last_sample_wall_s
            for t in totals}
    end_s = samples_end_s(totals, last_host_wall_s)
    if end_s is None:
        end_s = 0.0  # no sample at all: each GPU is said to have given no reading
    out = []
    for t in totals:
        if t.final_state != "NO_DATA":
            continue
        if t.last_t_ns is None:
            out.append(f"GPU {t.gpu}: no SM activity reading at all ({t.samples} samples, "
                       "each without one); NO_DATA throughout")
            continue
        early = end_s - t.last_wall_s
        if early > 0:
            unread = ends[t.gpu] > t.last_wall_s
            if unread and end_s - ends[t.gpu] <= t.silent_after_s:
                went_on = "its samples going on without a reading"
            elif unread:
                went_on = (f"its samples without a reading to "
                           f"{fmt.clock(ends[t.gpu], millis=True)}, then none while the other "
                           "inputs went on")
            else:
                went_on = "while the other inputs went on"
            out.append(f"GPU {t.gpu}: no data after {fmt.clock(t.last_wall_s, millis=True)}, "
                       f"{early:.1f} s before the end of the data, {went_on}; NO_DATA from then")
    return out


def _unsampled(named: Iterable[int], totals: list[GpuTotals]) -> list[str]:
    """One line per GPU the recording's header names of which no sample was read (NVML lost
    it at the start, every sample of it a bad record, none in the window)."""
    sampled = {t.gpu for t in totals}
    return [f"GPU {i}: named in the recording's header, but no sample of it was read: "
            "neither busy nor idle, left out of every figure"
            for i in sorted(set(named) - sampled)]



def _rows_left_out(timeline: TimelineBuilder | None) -> int:
    return timeline.rows_left_out if timeline is not None else 0


def _partitions(timeline: TimelineBuilder | None,
                span: tuple[float | None, float | None]) -> RunTimeline | None:
    """The partition table: the timeline the detection loop fed (None: no log event it reads,
    no `/status` snapshot), its rows those whose work overlaps `span` (`report_span`); None
    without partitions."""
    if timeline is None:
        return None
    run = timeline.finish(span)
    return run if run.partitions else None


def report_span(found: Detected, window: TimeWindow | None) -> tuple[float | None, float | None]:
    """The span the report covers, as the partition table keeps its rows by (a partition is
    the report's when its GPU work overlaps it, `PartitionTiming.works_within`): the one rule
    its PoSt list and prover events are kept by too (`log_span.report_span`), of the data read
    (its latest sample's wall time) and whether its wall clock stepped back. A window's
    `/status` polls add no partitions of its jobs done before it either. A recording whose log
    begins before its samples (`record --log --from-start`, or a `--log` from a minute before
    `record`) listed its first PoSt and restarts, its table not their partitions (203 of 304,
    3 PoSt jobs of 5)."""
    end_s = data_end_s(found.totals)
    return log_span.report_span(
        found.header.started_wall_s, window.since_s if window is not None else None,
        window.until_s if window is not None else None, window is not None, end_s,
        clock_stepped_back_s(found.states) > 0)


#: How `left_out_note` names each kind of the watcher's words left out, in its order: the
#: PoSt proofs by proof (`Detected.said_left_out`), not by the words said of them.
_LEFT_OUT_WORDS: Final = {"proof": "PoSt proof(s)", "error": "error(s)", "restart": "restart(s)",
                          "restart_cost": "restart cost(s)", "lost_job": "lost GPU job(s)",
                          "warning": "warning(s)", "setup": "setup note(s)"}


def left_out_note(said: dict[str, int], rows: int) -> list[str]:
    """The one line of what a whole report leaves out of its prover events and partition
    table: said or worked more than `MARGIN_S` outside the recording's span (its own log
    recorded from long before it, `record --from-start`); [] where nothing was."""
    if not any(said.values()) and not rows:
        return []
    kinds = [*_LEFT_OUT_WORDS, *sorted(set(said) - set(_LEFT_OUT_WORDS))]
    words = ", ".join(f"{said[kind]} {_LEFT_OUT_WORDS.get(kind, kind.replace('_', ' '))}"
                      for kind in kinds if said.get(kind))
    parts = [*([words] if words else []), *([f"{rows} partition(s)"] if rows else [])]
    return [f"{' and '.join(parts)} of the log more than {fmt.far(log_span.MARGIN_S)} outside "
            "the recording's span: left out of the prover events and the partition table alike"]


def _breakdowns(states: list[StateChange], totals: list[GpuTotals],
                starved: dict[int, list[tuple[int, float]]], window_s: float
                ) -> list[Breakdown]:
    """BREAKDOWN periods: from the change into BREAKDOWN to the next change (or end of data),
    each with the starved gaps it held (`starved`: each GPU's pcie_starved gaps as (end in data
    time, idle seconds), by end). Durations are data time (`t_mono_ns`), so a wall-clock step
    cannot make them negative."""
    out: list[Breakdown] = []
    open_: dict[int, StateChange] = {}

    last = {t.gpu: t for t in totals}

    def period(start: StateChange, end_s: float, end_ns: int) -> Breakdown:
        seconds = max(0.0, (end_ns - start.t_mono_ns) / 1e9)
        inside, most = _starved_in(starved.get(start.gpu, []), start.t_mono_ns, end_ns, window_s)
        # Entered at the GPU's last reading: ended there by the data's end (the end-of-data
        # IDLE of the same moment, or no state after it), no period of it read.
        t = last.get(start.gpu)
        last_ns = None if t is None else t.last_t_ns
        at_end = end_ns <= start.t_mono_ns and (last_ns is None or end_ns >= last_ns)
        return Breakdown(start.gpu, start.t_wall_s, end_s, start.reason, seconds, len(inside),
                         sum(idle for _end, idle in inside), most, at_end)

    for st in states:
        started = open_.pop(st.gpu, None)
        if started is not None:
            out.append(period(started, st.t_wall_s, st.t_mono_ns))
        if st.state == "BREAKDOWN":
            open_[st.gpu] = st
    for gpu, started in open_.items():
        t = last.get(gpu)
        if t is None or t.last_t_ns is None:
            out.append(period(started, started.t_wall_s, started.t_mono_ns))
        else:
            out.append(period(started, t.last_wall_s, t.last_t_ns))
    out.sort(key=lambda b: (b.start_s, b.gpu))
    return out


def _starved_in(starved: list[tuple[int, float]], start_ns: int, end_ns: int,
                window_s: float) -> tuple[list[tuple[int, float]], int]:
    """The starved gaps (sorted by end) that ended in `[start_ns, end_ns]`, and the most of any
    that one window of `window_s` ending at one of those ends held (gaps before the period
    count in its first windows, as they did for the detector)."""
    window_ns = int(window_s * 1e9)
    ends = [end for end, _idle in starved]
    inside = [g for g, e in zip(starved, ends, strict=True) if start_ns <= e <= end_ns]
    most = 0
    for e in ends:
        if start_ns <= e <= end_ns:
            most = max(most, bisect_right(ends, e) - bisect_left(ends, e - window_ns))
    return inside, most


def gaps_by_prover_cause(r: ReportData, gpu: int) -> dict[str, dict[str, float]] | None:
    """Count and idle seconds of a GPU's gaps by the prover's finer cause (`"none"`: snapshots
    seen but no rule applied); None when no gap had any prover snapshot (no `/status` polled)."""
    return r.prover_causes.get(gpu)


def _add_cause(causes: dict[int, dict[str, dict[str, float]]],
               said_by: dict[int, dict[str, dict[str, int]]], g: Gap) -> None:
    """Count one gap (in start order) in its GPU's `gaps_by_prover_cause`, and its cause's
    source in `ReportData.prover_cause_said_by`."""
    if g.prover_cause is None and not g.prover_states:
        return
    entry = causes.setdefault(g.gpu, {}).setdefault(g.prover_cause or "none",
                                                    {"count": 0, "idle_s": 0.0})
    entry["count"] += 1
    entry["idle_s"] += g.duration_s
    facts = known(g.prover_facts)
    source = facts.said_by if facts is not None and g.prover_cause is not None else None
    if source is not None:
        sources = said_by.setdefault(g.gpu, {}).setdefault(g.prover_cause or "none", {})
        sources[source] = sources.get(source, 0) + 1


def _kind_entry(tally: Tally | None) -> dict[str, float]:
    """A GPU's gaps of one kind in the JSON: the ledger's count and idle seconds (0 without)."""
    if tally is None:
        return {"count": 0, "idle_s": 0}
    return {"count": tally.count, "idle_s": tally.seconds}


def to_json(r: ReportData, *, gaps: bool = True) -> dict[str, Any]:
    """The stable JSON document (see docs/detection.md). `gaps=False`: its `gaps` list and the
    partitions' `items` left empty, for a writer that streams them (`write_json`)."""
    infos: dict[int, GpuInfo] = {g.index: g for g in r.header.gpus}
    gpus = []
    for t in r.totals:
        info = infos.get(t.gpu)
        gpus.append({
            "index": t.gpu,
            "name": info.name if info else None,
            "link_bytes_per_s": t.link_bytes_per_s,
            "busy_fraction": busy_fraction(t),
            "busy_s": t.busy_s,
            "active_s": t.active_s,
            "data_s": t.data_s,
            "confidence": t.confidence,
            "final_state": t.final_state,
            "last_data_s": t.last_wall_s if t.last_t_ns is not None else None,
            "gaps_by_kind": {k: _kind_entry(r.gap_tally.get((t.gpu, k))) for k in GAP_KINDS},
            "gaps_by_prover_cause": gaps_by_prover_cause(r, t.gpu),
        })  # fmt: skip
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "file": r.path,
        "source": r.header.source,
        "host": r.header.host,
        "period_ms": r.header.period_ms,
        "log_files": r.log_files,
        # The part read (`--since`/`--until`): wall times, null for an open side; null when
        # the whole recording was read.
        "window": None if r.window is None else {
            "since_s": r.window.since_s, "until_s": r.window.until_s},
        "gpus": gpus,
        "gaps": [gap_json(g) for g in r.gaps] if gaps else [],
        "breakdowns": [
            {"gpu": b.gpu, "start_s": b.start_s, "end_s": b.end_s,
             "duration_s": b.duration_s, "reason": b.reason,
             "pcie_starved_gaps": b.starved_gaps, "pcie_starved_idle_s": b.starved_idle_s,
             "max_in_window": b.max_in_window, "entered_at_end": b.entered_at_end}
            for b in r.breakdowns
        ],
        "payoff": r.payoff.json(),
        **advice_json(r.advice),
        "prover_lacks": r.prover_lacks,
        "blind_spots": [
            {"start_s": b.t_wall_s, "duration_s": b.duration_s, "source": b.source,
             "gpus": list(b.gpus),
             "exited": [{"pid": p.pid, "name": p.name, "pinned_bytes": p.pinned_bytes}
                        for p in b.exited],
             "pinning": [{"pid": p.pid, "name": p.name, "before_bytes": p.before_bytes,
                          "after_bytes": p.after_bytes, "since_s": p.since_s}
                         for p in b.pinning],
             "words": blind_words(b, r.byes)}
            for b in r.blind_spots
        ],
        "partitions": _partitions_json(r.partitions, items=gaps),
        "prover_events": prover_events_json(r.prover_events),
        # What the PoSt were judged by: the recording's deadlines or this run's config's.
        "post_deadlines": r.post_deadlines.json() if r.post_deadlines is not None else None,
        "copies": None if r.copies is None else r.copies.json(),
        "chaining": {
            str(gpu): {"share": f.share, "copy_s": f.copy_s, "basis": f.basis,
                       "worst_minute": (None if gpu not in r.chaining_worst else
                                        {"start_s": r.chaining_worst[gpu][0],
                                         "share": r.chaining_worst[gpu][1]})}
            for gpu, f in sorted(r.chaining.items())
        },
        # GPU-Util over the working span, beside the busy share of the same span.
        "gpu_util": {str(t.gpu): r.util[t.gpu].json(busy_fraction(t))
                     for t in r.totals if t.gpu in r.util},
        "health": {
            str(gpu): {"readings": h.readings, "max_temperature_c": h.max_temperature_c,
                       "max_power_w": h.max_power_w, "power_limit_w": h.power_limit_w,
                       "max_memory_used_bytes": h.max_memory_used_bytes,
                       "memory_total_bytes": h.memory_total_bytes,
                       "throttled_readings": h.throttled}
            for gpu, h in sorted(r.health.items())
        },
        "gpu_errors": {
            "count": r.hw_event_count,
            # The errors the events stand for, by kind: what /metrics counts.
            "errors_by_kind": r.hw_errors,
            "items": [{"gpu": e.gpu, "t_wall_s": e.t_wall_s, "kind": e.kind, "code": e.code,
                       "count": e.count, "words": event_words(e)} for e in r.hw_events],
        },
        "counters": r.counters,
        # The data's own problems first (out of order, clock jumps, silent GPUs), then the
        # reader's (bad lines, truncation).
        "problems": [*r.warnings, *r.problems],
        # What changes nothing the report means (`said_of_input`).
        "notes": r.notes,
    }


def _partitions_json(run: RunTimeline | None, items: bool = True) -> dict[str, Any] | None:
    if run is None:
        return None
    return {
        "count": len(run.partitions),
        "wall_start_s": run.wall_start_s,
        "wall_end_s": run.wall_end_s,
        "occupied_fraction": run.occupied_fraction,
        "merged_efficiency": run.merged_efficiency,
        "kernel_utilisation": run.kernel_utilisation,
        "unpinned": run.unpinned,
        "pinning_unknown": run.pinning_unknown,
        "unit": run.rate_unit,
        "partition_rows": run.partition_rows,
        "batch_jobs": run.batch_jobs,
        "other_jobs": run.other_jobs,
        "sectors_per_batch": run.sectors_per_batch,
        "bad_durations": run.bad_durations,
        "items": [_partition_json(p) for p in run.partitions] if items else [],
    }


def _partition_json(p: PartitionTiming) -> dict[str, Any]:
    """One row of the partition table (`gapwatch.cuzk.partitions.PartitionTiming`)."""
    return {
        "job_id": p.job_id, "partition": p.partition, "run": p.run, "kind": p.kind,
        "first_wave": p.first_wave, "pool_failed": p.pool_failed, "worker": p.worker,
        "gpu": p.gpu,
        "gpu_start_s": p.gpu_start_s, "gpu_end_s": p.gpu_end_s,
        "mutex_held_ms": p.mutex_held_ms, "mutex_wait_ms": p.mutex_wait_ms,
        "h2d_in_ntt_ms": p.h2d_in_ntt_ms, "unpinned": p.synthesised_unpinned,
        "synth_ms": p.synth_ms, "gpu_ms": p.timeline_gpu_ms, "source": p.source,
        "states_seen": p.states_seen,
    }  # fmt: skip


@dataclass(frozen=True)
class _Streamed:
    """A list of the document written an item at a time: where it sits, empty, in the indented
    document (`empty`, found after `after`), how it opens and closes with items, and the
    indent of its items."""

    after: str
    empty: str
    opens: str
    closes: str
    indent: str


#: The gaps (a member of the document) and the partition rows (the last member of
#: "partitions", before "prover_events"), as `encode_json(..., indent=2)` writes them.
_GAPS = _Streamed('\n  "gaps": ', '\n  "gaps": [],\n', '\n  "gaps": [\n', "\n  ],\n", "    ")
_PARTITION_ROWS = _Streamed('\n  "partitions": {', '\n    "items": []\n  },\n',
                            '\n    "items": [\n', "\n    ]\n  },\n", "      ")


def write_json(r: ReportData, write: Callable[[str], object]) -> None:
    """The document, indented by 2 as `encode_json(to_json(r), indent=2)` writes it, byte for
    byte, but with its gaps and its partition rows encoded one at a time (the gaps read from
    the report's spool): a day's report holds ~300,000 gaps and ~450,000 partitions, and the
    whole document as dicts, then as bytes, then formatted, then as text took ~4 copies."""
    rest = encode_json(to_json(r, gaps=False), indent=2).decode()
    rows = r.partitions.partitions if r.partitions is not None else []
    for where, items in ((_GAPS, map(gap_json, r.gaps)), (_PARTITION_ROWS,
                                                          map(_partition_json, rows))):
        rest = _write_streamed(rest, where, items, write)
    write(rest)


def _write_streamed(text: str, where: _Streamed, items: Iterable[dict[str, Any]],
                    write: Callable[[str], object]) -> str:
    """Write `text` up to the empty list `where`, then the list with `items` (left empty when
    there are none); returns what follows it, not yet written."""
    at = text.find(where.after)
    cut = text.find(where.empty, at) if at >= 0 else -1
    if cut < 0:
        return text
    write(text[:cut])
    first = True
    for item in items:
        body = encode_json(item, indent=2).decode().replace("\n", "\n" + where.indent)
        write((where.opens if first else ",\n") + where.indent + body)
        first = False
    write(where.empty if first else where.closes)
    return text[cut + len(where.empty):]
