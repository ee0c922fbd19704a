"""`gapwatch compare BEFORE AFTER`: did a change to the prover pay off, figure by figure.

Who calls it: `gapwatch.commands.compare` (text, `--json`, `--markdown` through
`gapwatch.offline.compare_format`), tests, bench/compare_bench.py.

Each side is read as `report` reads it (a recording, a folder or a glob of segments, with its own
`--log` files) and detected by the same code (`gapwatch.offline.report.detect_either`: split
across processes for a large recording, with or without logs, else the one-process loop),
one side after the other: of a
side only slim tuples are kept (each gap's GPU, kind, cause and times; each partition's GPU and
end; each H2D copy's GPU, memory kind, end, bytes and time), so that the second side is detected
with the first's report gone. Then both sides are cut into the same fixed windows
(`compare_windows`; the window is the largest of 60, 30, 20, 10, 5, 3, 2, 1 s giving the shorter
side 8 whole windows, or `--window`), and each figure's windows are tested
(`compare_stats.judge`: Mann-Whitney U, p < 0.01, and a change above a floor). The whole-run
partitions per hour, of all GPUs and of each, is the report's rule (`gapwatch.offline.
throughput`), not the windows' sum.

Load is not a gain: idle for want of work (the prover's `/status` cause `no_work`) is a figure of
its own, never judged; when it differs measurably between the sides, the figures it moves (busy
share, gaps and idle per hour, partitions per hour) say "different load" instead of better or
worse. Idle while cuzk's batch collector held a request (`batch_wait`, from its log; `/status`
alone calls it `no_work`) is the change's where the sides show different batch settings (judged,
and the load is different only where both `no_work` and `no_work` + `batch_wait` changed: a
drop in offered work raises both, waits turned into want of work move only the first, waits
removed with the load held only the second); with the same batch settings it is load too
(`_load_differs`). Idle while cuzk's pipeline held nothing at a gap's start (`empty_pipeline`,
from its log: the wait for the next request plus its first synthesis) is load as well, never
judged, though not taken as want of work (`EMPTY_PIPELINE`). Different GPU sets or lengths are
said in the head. The prover's settings come from each side's own lines and `/status`
(`gapwatch.cuzk.settings`); BEFORE's advice and its payoff (work taken as fixed) are set against
what AFTER achieved, box against box. PoSt: each side's PoSts by their last word, proved (their
latency, and their share past the deadline) or failed or lost (their share; both shares judged on
counts: `compare_stats.judge_counts`); a
side told to lose more is never the better one by its survivors' latency.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction
from pathlib import Path
from statistics import fmean
from typing import Any, NamedTuple

from gapwatch.base.tuple_spool import TupleSpool
from gapwatch.config import Config
from gapwatch.core import fmt
from gapwatch.core.health import GPU_ERROR_KINDS
from gapwatch.core.models import Gap, GpuInfo, ProverEvent
from gapwatch.core.payoff import IfClosed, limited_by_json
from gapwatch.core.track import GpuTotals
from gapwatch.cuzk.advice import AdviceReport, advice_json
from gapwatch.cuzk.pipeline import POST_KINDS
from gapwatch.cuzk.post_advice import ProofAdvice
from gapwatch.cuzk.post_deadlines import PostDeadlines, unlike_words
from gapwatch.cuzk.settings import (
    AdvisedChange,
    ProverSettings,
    Restarts,
    SettingChange,
    SettingsSeen,
    advised_change,
    changes,
    not_shown,
    runs_after,
)
from gapwatch.offline.compare_stats import (
    Better,
    Spread,
    Test,
    Verdict,
    judge,
    judge_counts,
    spread,
)
from gapwatch.offline.compare_windows import (
    ALL,
    PAGEABLE_SHARE,
    POST_FAILED,
    POST_LATE,
    POST_LATENCY,
    GpuWindows,
    Grid,
    NoData,
    PostOutcome,
    SlimCopy,
    SlimGap,
    SlimPost,
    accumulate,
    choose_window_s,
    seconds_within,
    series,
)
from gapwatch.offline.copy_sums import CopySums
from gapwatch.offline.progress import Progress
from gapwatch.offline.prover_events import MAX_KEPT
from gapwatch.offline.report import (
    READ_MORE_THAN_ONCE,
    collector_off,
    detect_either,
    logs_parsed,
    summarise,
)
from gapwatch.offline.report_parallel import plan_workers
from gapwatch.offline.throughput import (
    clock_stepped_back_s,
    no_data_stretches,
    partitions_per_hour,
)
from gapwatch.sources.files import refuse_a_stream
from gapwatch.sources.time_window import TimeWindow

COMPARE_SCHEMA_VERSION = 1
#: Figures whose change follows the load (how much work the prover was given), not a setting.
LOAD_SENSITIVE = ("busy share", "gaps/h", "idle s/h", "partitions/h")
NO_WORK = "idle s/h, prover: no_work"
BATCH_WAIT = "idle s/h, prover: batch_wait"
#: Idle while cuzk's pipeline held nothing at the gap's start (its log's `empty_pipeline`): the
#: wait for the next request plus that request's first synthesis, so its size follows how the
#: client sends work and how many proofs an hour run (a gap between every two), not a cuzk
#: setting: the load's, never judged. Not in `_load_differs`' want of work either: a change
#: that proves faster, the offered load held, has more of it an hour (docs/compare.md).
EMPTY_PIPELINE = "idle s/h, prover: empty_pipeline"
#: The settings whose change makes `batch_wait` idle the change's rather than the load's.
BATCH_SETTINGS = ("[scheduler] max_batch_size", "[scheduler] max_batch_wait_ms")
#: Lengths differing by more than this factor are said.
LENGTH_RATIO_SAID = 1.25
#: A side's GPU held down by heat or a hardware slowdown in at least this share of its health
#: readings is said (`_gpu_health_note`): a passing spike is not.
HELD_DOWN_SAID = 0.05
#: The most window cells (windows x accumulators: each GPU's and all GPUs') a side is cut
#: into, about half a KiB each: a side whose wall time runs 10 years (a clock stepped ahead
#: inside it) in the 10 s windows the other side chose was 31 million windows, gigabytes and
#: minutes; `--window 0.00001` over two 2-minute runs took 11.5 GB. Past it the side's
#: figures are whole-run only (`unwindowed`). A day of 8 GPUs fits in 4 s windows.
MAX_WINDOW_CELLS = 250_000
METHOD = (
    "per-window values (the window and how many on each side said above) compared by the "
    "Mann-Whitney U test, two-sided, tie- and continuity-corrected normal approximation, its "
    "variance widened by how much each window follows the one before (lag-1 autocorrelation): a "
    "change is said when p < 0.01 and the means differ by more than 1 percentage point (shares) "
    "or 5 % (rates, counts); busy share per window counts idle inside gaps >= min gap only"
)


@dataclass
class Side:
    """What one side showed, kept small (see the module docstring)."""

    label: str
    path: str
    log_files: list[str]
    gpus: list[GpuInfo]
    totals: list[GpuTotals]
    #: Each closed gap and each partition's GPU end in the order the side's report gave them,
    #: each H2D copy by its end (`CopySums.h2d`): on disk beyond a few tens of thousands
    #: (`TupleSpool`, `CopySums`), as lists in tests.
    gaps: Iterable[SlimGap]
    partition_ends: Iterable[tuple[int | None, float]] | None
    copies: Iterable[SlimCopy]
    settings: ProverSettings
    advice: AdviceReport
    #: The report's payoff of closing every gap (`if_closed` over all GPUs).
    payoff_all: IfClosed
    busy_fraction: float | None
    partitions_per_hour: float | None
    statuses: int
    #: What `partitions_per_hour` counts: the report's rows (`RunTimeline.rate_unit`:
    #: "partitions", "batch jobs" or "GPU jobs"), the rate figure's unit (`rate_label`).
    rate_unit: str = "partitions"
    problems: list[str] = field(default_factory=list)
    #: What the report says of its input that is no problem of the data (`ReportData.notes`:
    #: its log's lines already in the recording, each counted once), said as notes.
    notes: list[str] = field(default_factory=list)
    #: Each finished PoSt (WinningPoSt, WindowPoSt) the prover's watcher timed.
    posts: list[SlimPost] = field(default_factory=list)
    #: The part of the recording read (`compare --at`, or `--since/--until`), or None: all of
    #: it.
    window: TimeWindow | None = None
    #: Whether `window` is the side's own (`--since/--until`), not its part of the `--at` cut:
    #: a restart inside it is then said as of a whole recording's (`_at_s`).
    window_own: bool = False
    #: Each GPU's stretches with no reading (the detector's NO_DATA state): unknown, not idle
    #: and not busy (`compare_windows`).
    no_data: list[NoData] = field(default_factory=list)
    #: The largest step back of the wall clock inside the side, in seconds (0.0: none;
    #: `clock_stepped_back_s`): its times cannot be cut into windows.
    stepped_back_s: float = 0.0
    #: The machine its recording was made on (its header's `host`; "" not known).
    host: str = ""
    #: The GPU's own errors by kind (`health.GPU_ERROR_KINDS`: XIDs, uncorrected ECC, a GPU
    #: lost, a failed row remap), and each GPU's clocks held down by heat or a hardware
    #: slowdown (`HealthStats.held_down`: the reason, its share of the health readings).
    gpu_errors: dict[str, int] = field(default_factory=dict)
    held_down: dict[int, tuple[str, float]] = field(default_factory=dict)
    #: The deadlines its PoSt were judged by (its recording's own, or this run's config's:
    #: `gapwatch.cuzk.post_deadlines`); None where nothing chose them (a side made in a test).
    post_deadlines: PostDeadlines | None = None

    @property
    def start_s(self) -> float | None:
        firsts = [t.first_busy_s for t in self.totals if t.first_busy_s is not None]
        return min(firsts) if firsts else None

    @property
    def span_s(self) -> float:
        if self.stepped_back_s > 0:
            # Wall times tell no length across the step (the last busy reading came an hour
            # "before" the first: -3570 s of work): the longest working span in data time,
            # the report's.
            return max((t.active_s for t in self.totals), default=0.0)
        lasts = [t.last_busy_s for t in self.totals if t.last_busy_s is not None]
        start = self.start_s
        return max(0.0, max(lasts) - start) if lasts and start is not None else 0.0


def read_side(label: str, path: str | Path, config: Config, logs: list[str],
              progress: Progress | None = None, window: TimeWindow | None = None,
              window_own: bool = False) -> Side:
    """Detect one side as `report` does and keep only what the comparison reads (`progress`:
    told how far, as `build_report` tells it; `window`: only that part of the recording, as
    `report --since/--until` reads it; `window_own`: it is the side's own `--since/--until`,
    not its part of an `--at` cut).

    Raises:
        gapwatch.sources.recording.RecordingError: not a usable recording.
        OSError: a `--log` file cannot be read.
    """
    refuse_a_stream(Path(path), READ_MORE_THAN_ONCE)  # each side is, as a report reads it
    with collector_off():
        n = plan_workers(path, logs)
        with logs_parsed(path, config, logs, progress, window) as parsed:
            found, seen = detect_either(path, config, logs, n, parsed, SettingsSeen,
                                        keep_h2d=True, progress=progress, window=window)
        rep = summarise(path, found, logs, config.detector.window_s, window=window)
        copies, statuses = _SlimCopies(found.copies), found.prover_status_count
        posts = _slim_posts(found.prover_events)
        unkept = found.prover_events.not_kept.get("proof", 0)
        no_data = no_data_stretches(found.states)
        stepped_back = clock_stepped_back_s(found.states)
        judged = found.post_deadlines
        del found
        ends = None
        if rep.partitions is not None:
            ends = TupleSpool[tuple[int | None, float]](
                tuple[int | None, float], ((p.gpu, p.gpu_end_s) for p in rep.partitions.partitions
                                           if p.gpu_end_s is not None))
        gaps = TupleSpool[SlimGap](SlimGap, (_slim_gap(g) for g in rep.gaps
                                             if g.end_s is not None))
        return Side(
            label=label, path=str(path), log_files=list(logs), gpus=list(rep.header.gpus),
            host=rep.header.host,
            totals=rep.totals, gaps=gaps, partition_ends=ends, copies=copies,
            settings=seen.result(), advice=rep.advice,
            payoff_all=rep.payoff.overall.all,
            busy_fraction=rep.payoff.overall.busy_fraction,
            partitions_per_hour=rep.payoff.partitions_per_hour,
            rate_unit=rep.payoff.rate_unit,
            statuses=statuses, posts=posts,
            problems=[*rep.warnings, *rep.problems, *_posts_not_kept(unkept)],
            # What its PoSt were judged by, where this run's config says other (`report`'s line).
            notes=[*rep.notes, *([said] if judged and (said := judged.said()) else [])],
            post_deadlines=judged,
            window=window, window_own=window_own, no_data=no_data,
            stepped_back_s=stepped_back,
            gpu_errors={k: n for k, n in rep.hw_errors.items() if k in GPU_ERROR_KINDS},
            held_down={g: held for g, h in rep.health.items()
                       if (held := h.held_down()) is not None},
        )  # fmt: skip


def _slim_gap(g: Gap) -> SlimGap:
    return SlimGap(g.gpu, g.kind, g.prover_cause, g.start_s, g.duration_s)


def _posts_not_kept(n: int) -> list[str]:
    """Said when PoSt latency is read from the proofs kept, not all (`MAX_KEPT`)."""
    return [f"PoSt latency from the first {MAX_KEPT:,} proof events: {n:,} more were counted, "
            "not kept"] if n else []


def _slim_posts(events: Sequence[ProverEvent]) -> list[SlimPost]:
    """Each PoSt's last word (`ProofTiming.last_word`: one a proof), proved, failed or lost
    (given up). A failed one's time is to its failure, a lost one's to when it was given up:
    no latency (None), but each counts among the PoSts that ended without a proof: kept to
    proved ones only, a run failing half its WinningPoSts read "better" for its fast survivors.
    A proved one not timed (the watcher's verdict "unknown": its lines lost, or read from
    mid-proof) is neither late nor on time (`late` None): counted on time, 14 untimed of 20 made
    a late share of 60 % -> 10 % "better"."""
    out = []
    for e in events:
        p = e.proof
        if e.kind != "proof" or p is None or not p.last_word or p.proof_kind not in POST_KINDS:
            continue
        outcome: PostOutcome = ("proved" if p.proved else "failed" if p.done else "lost")
        late = (False if outcome != "proved" else None if p.verdict == "unknown"
                else p.verdict == "late")
        out.append(SlimPost(e.gpu, p.proof_kind, e.t_wall_s,
                            p.total_s if outcome == "proved" else None, outcome, late=late))
    return out


class _SlimCopies:
    """A side's H2D copies of watched GPUs, read back from its `CopySums` at each pass."""

    def __init__(self, sums: CopySums) -> None:
        self._sums = sums

    def __iter__(self) -> Iterator[SlimCopy]:
        for c in self._sums.h2d():
            yield SlimCopy(*c)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _SlimCopies | list):
            return NotImplemented
        return list(self) == list(other)


@dataclass(frozen=True, slots=True)
class Figure:
    """One figure of one GPU (or all): each side's whole value and windows, and the verdict."""

    gpu: int
    name: str
    better: Better
    share: bool
    before: float | None
    after: float | None
    before_windows: Spread
    after_windows: Spread
    test: Test
    #: A share counted whole (`POST_FAILED`): each side's (hits, of how many); None: by windows.
    counts: tuple[tuple[int, int], tuple[int, int]] | None = None
    #: The late share (`POST_LATE`): each side's PoSts proved but not timed, left out of
    #: `counts` (whether late is not known); None: another figure.
    not_timed: tuple[int, int] | None = None

    def said(self, verdict: Verdict) -> Figure:
        """The same figure with `verdict` in place of its test's (said, not judged)."""
        return replace(self, test=replace(self.test, verdict=verdict))


@dataclass
class Comparison:
    before: Side
    after: Side
    window_s: float
    figures: list[Figure]
    setting_changes: list[SettingChange]
    notes: list[str]
    load_differs: bool
    load_known: bool
    #: The GPUs both sides have differ in model or PCIe link (`hardware_differences`): what
    #: AFTER achieved is not a measure of the change.
    hardware_differs: bool = False
    #: What the load was judged the same by, in words (`_load_same_words`).
    load_same_words: str = "idle for want of work did not change"
    #: The rate figure's label (`RATE`) with the sides' units (`rate_label`).
    rate_label: str = "partitions/h"
    #: The settings one side shows and the other does not (`settings.not_shown`): changed or
    #: not, not known; never among `setting_changes`.
    settings_not_shown: list[SettingChange] = field(default_factory=list)


def compare(before: Side, after: Side, window_s: float | None = None) -> Comparison:
    """Both sides cut into the same windows, every figure judged (see the module docstring)."""
    shorter = min(before.span_s, after.span_s)
    w = window_s or choose_window_s(shorter)
    wins, wholes, counted = {}, {}, {}
    for s in (before, after):
        wins[s.label], wholes[s.label], counted[s.label] = _windows(s, w)
    for s in (before, after):
        _zeros_for_absent(wins[s.label], wholes[s.label], _other(s, before, after, wins),
                          prover_seen=_prover_seen(s))
    gpus = sorted({t.gpu for t in before.totals} & {t.gpu for t in after.totals})
    # All GPUs (each side's box) wherever a side has more than the GPUs both have: two GPUs
    # against one showed GPU 0 alone, "partitions/h x1.65 better" while the payoff's box fell
    # 0.62x, and the note promised an 'all GPUs' section that never came.
    more = len(before.totals) > len(gpus) or len(after.totals) > len(gpus)
    keys = [ALL, *gpus] if len(gpus) > 1 or not gpus or more else gpus
    batch_changed = batch_settings_changed(before, after)
    figures: list[Figure] = []
    for gpu in keys:
        b_win, a_win = wins["BEFORE"].get(gpu, {}), wins["AFTER"].get(gpu, {})
        b_all, a_all = wholes["BEFORE"].get(gpu, {}), wholes["AFTER"].get(gpu, {})
        for name in _figure_names(b_win, a_win, b_all, a_all):
            better, share = _direction(name, batch_changed)
            bw, aw = b_win.get(name, []), a_win.get(name, [])
            if name.startswith((POST_FAILED, POST_LATE)):
                figures.append(_counted_figure(gpu, name, better, share, b_all.get(name),
                                               a_all.get(name),
                                               counted["BEFORE"].get(gpu, {}).get(name),
                                               counted["AFTER"].get(gpu, {}).get(name)))
                continue
            test = judge(bw, aw, better, share)
            if (not bw or not aw) and b_all.get(name) is not None \
                    and a_all.get(name) is not None:
                # Both sides have the figure, one has no usable window of it (a side shorter
                # than half a window, or all of it a hole): too short, not "one side only".
                test = Test(None, None, "too few windows")
            figures.append(Figure(gpu, name, better, share, b_all.get(name), a_all.get(name),
                                  spread(bw), spread(aw), test))
    figures, failing = _latency_of_survivors(figures)
    if _log_on_one_side(before, after) is not None:
        figures = [_cause_unlike(f) for f in figures]
    unlike_rows = batch_rows_unlike(before, after) or rate_units_unlike(before, after)
    if unlike_rows is not None:
        figures = [f.said("not comparable") if f.name == "partitions/h" else f for f in figures]
    if len(before.totals) != len(after.totals):
        # All GPUs' partitions/h is the box's, per wall hour: two GPUs' output against one's.
        figures = [f.said("not comparable") if f.name == "partitions/h" and f.gpu == ALL
                   else f for f in figures]
    load_known = before.statuses > 0 and after.statuses > 0
    load_differs = any(_load_differs(wins["BEFORE"].get(gpu, {}), wins["AFTER"].get(gpu, {}),
                                     figures, gpu, batch_changed) for gpu in keys)
    if load_differs:
        figures = [_load_said(f) for f in figures]
    figures, unlike_deadlines = _deadlines_unlike(before, after, figures)
    notes = _notes(before, after, w) + failing + unlike_deadlines + _not_timed_notes(
        figures, keys) + (
        [unlike_rows] if unlike_rows else []) + [
        note for s in (before, after)
        if (note := _drift_note(s.label, wins[s.label].get(keys[0], {}) if keys else {}))]
    if batch_changed and not load_differs and _waits_became_want_of_work(figures):
        notes.append(WAITS_BECAME_WANT_OF_WORK)
    return Comparison(before, after, w, figures, changes(before.settings, after.settings),
                      notes, load_differs, load_known,
                      hardware_differs=bool(hardware_differences(before, after)),
                      load_same_words=_load_same_words(figures, batch_changed),
                      rate_label=rate_label(before, after),
                      settings_not_shown=not_shown(before.settings, after.settings))


def _deadlines_unlike(before: Side, after: Side, figures: list[Figure]
                      ) -> tuple[list[Figure], list[str]]:
    """A late share of PoSt judged by different deadlines on the two sides (each side's own
    recording's, `post_deadlines.judged_by`: 20 s on one box, 30 s on the other) is no measure
    of the change: said "not comparable", and why, once per kind, as a note."""
    if before.post_deadlines is None or after.post_deadlines is None:
        return figures, []
    sides = [(before.label, before.post_deadlines), (after.label, after.post_deadlines)]
    words = {kind: said for kind in POST_KINDS if (said := unlike_words(kind, sides))}
    if not words:
        return figures, []
    late = {f"{POST_LATE}{kind}" for kind in words}
    return ([f.said("not comparable") if f.name in late else f for f in figures],
            [f"{POST_LATE}{kind}: {said}" for kind, said in words.items()])


class Counted(NamedTuple):
    """A PoSt share of one side counted whole: its hits, of how many, and (the late share)
    how many proved PoSts were left out, not timed."""

    hits: int
    of: int
    not_timed: int = 0


def _counted_figure(gpu: int, name: str, better: Better, share: bool, before: float | None,
                    after: float | None, b_n: Counted | None, a_n: Counted | None) -> Figure:
    """A share counted whole (`POST_FAILED`, `POST_LATE`), judged on its counts. A side whose
    PoSts ended but none timed has no late share: too few PoSts, not one side only."""
    b_n, a_n = b_n or Counted(0, 0), a_n or Counted(0, 0)
    test = judge_counts((b_n.hits, b_n.of), (a_n.hits, a_n.of), better)
    late = name.startswith(POST_LATE)
    if late and all(n.of + n.not_timed for n in (b_n, a_n)) and not (b_n.of and a_n.of):
        test = Test(None, None, "too few PoSts")
    return Figure(gpu, name, better, share, before, after, spread([]), spread([]), test,
                  ((b_n.hits, b_n.of), (a_n.hits, a_n.of)),
                  (b_n.not_timed, a_n.not_timed) if late else None)


def _not_timed_notes(figures: list[Figure], keys: list[int]) -> list[str]:
    """Said of each late share (of the first GPU key: the box where there is one) where a
    side proved PoSts not timed: left out of it, whether late is not known."""
    out = []
    for f in figures:
        if f.not_timed is None or not any(f.not_timed) or not keys or f.gpu != keys[0]:
            continue
        assert f.counts is not None
        where = "" if f.gpu == ALL else f" on GPU {f.gpu}"
        sides = ", ".join(f"{label} {n} of the {n + of} that ended" for label, n, (_, of)
                          in zip(("BEFORE", "AFTER"), f.not_timed, f.counts, strict=True))
        out.append(f"{f.name}{where}: PoSts proved but not timed (their lines lost or read from "
                   f"mid-proof: whether late is not known) are left out of the late share: "
                   f"{sides}")
    return out


def _latency_of_survivors(figures: list[Figure]) -> tuple[list[Figure], list[str]]:
    """PoSt latency, and the late share, are of the proofs that came; a side told to fail or
    lose more of that kind's PoSts (`POST_FAILED`'s verdict "worse" against it) is never the
    better one by them: a failed WinningPoSt loses its block as a late one does, and a run
    failing half its proofs fast read "better" (x0.24) for its survivors. Such a verdict is
    said "not comparable", and why, as a note; so is one whose side failed more by more than
    the floor where the counts cannot tell it at `ALPHA` ("too few PoSts") but chance is still
    unlikely (`VOID_ALPHA`). A difference within the floor, or likely chance, voids nothing:
    one PoSt of 40 lost made a 4x gain "not comparable"; where the favoured side failed more, a
    note says so."""
    failed = {(f.gpu, f.name.removeprefix(POST_FAILED)): f for f in figures
              if f.name.startswith(POST_FAILED)}
    out, notes = [], []
    for f in figures:
        prefix = next((x for x in (POST_LATENCY, POST_LATE) if f.name.startswith(x)), None)
        fails = None if prefix is None else failed.get((f.gpu, f.name.removeprefix(prefix)))
        if (fails is not None and fails.counts is not None and fails.before is not None
                and fails.after is not None and f.test.verdict in ("better", "worse")):
            favoured_after = f.test.verdict == "better"
            mine, other = ((fails.after, fails.before) if favoured_after
                           else (fails.before, fails.after))
            # "worse" of the failures is AFTER's: against the side the figure favours.
            told = (fails.test.verdict == ("worse" if favoured_after else "better")
                    or _fails_more_likely(fails, mine, other))
            note = _survivors_note(fails, favoured_after, told)
            if told:
                f = f.said("not comparable")
            if mine > other and note not in notes:
                notes.append(note)
        out.append(f)
    return out, notes


#: The evidence that voids a latency or late-share verdict of the side that failed more: looser
#: than the verdicts' own `ALPHA`, as voiding a "better" only withholds a claim. 0 of 8 -> 10 of
#: 20 WinningPoSts failed (Fisher p 0.025, "too few PoSts" to call worse) left AFTER's fast
#: survivors "better" and its late share "50 % -> 0 % better"; 1 lost of 40 (p 1.0) voids none.
VOID_ALPHA = 0.05


def _fails_more_likely(fails: Figure, mine: float, other: float) -> bool:
    """Whether the favoured side's larger failure share, untold at `ALPHA` ("too few PoSts":
    above `SHARE_FLOOR`), is still unlikely to be chance (p < `VOID_ALPHA`). Within the floor
    the row says "no measurable change" and voids nothing: 3 -> 13 of 1000 failed (p 0.021)
    voided a 4x latency "better" beside it."""
    p = fails.test.p_value
    return (fails.test.verdict == "too few PoSts" and mine > other and p is not None
            and p < VOID_ALPHA)


def _survivors_note(fails: Figure, after_favoured: bool, told: bool) -> str:
    assert fails.counts is not None
    (fb, nb), (fa, na) = fails.counts
    kind = fails.name.removeprefix(POST_FAILED)
    who, other = ("AFTER", "BEFORE") if after_favoured else ("BEFORE", "AFTER")
    where = "" if fails.gpu == ALL else f" on GPU {fails.gpu}"
    said = (f"not judged better than {other}'s" if told else
            f"their verdicts stand: the failures' difference is not told ({fails.test.verdict})")
    return (f"{kind}{where}: AFTER failed or lost {fa} of {na}, BEFORE {fb} of {nb}: no proof "
            f"came of those (a lost block, as a late one); {who}'s PoSt figures are of the "
            f"proofs that came, {said}")


def batch_settings_changed(before: Side, after: Side) -> bool:
    """Whether the sides' cuzk logs show different batch settings (`BATCH_SETTINGS`, each
    read on both sides): then idle while the batch collector held a request is the change's."""
    return any(SettingChange(key, before.settings.values.get(key),
                             after.settings.values.get(key)).changed for key in BATCH_SETTINGS)


def batch_rows_unlike(before: Side, after: Side) -> str | None:
    """Why the sides' partitions per hour are not one measure, or None. A PoRep or SnapDeals
    batch (`[scheduler] max_batch_size` > 1) is one monolithic GPU job, one row of the
    partition table (engine.rs:2672-2680), for all its sectors' partitions: a side that
    batched counts a job where the other counts a partition. After the advice to set
    max_batch_size = 1, the simulator's batched run against a partitioned one read
    "partitions/h x2.52 better, 630 % of the predicted gain" (1.24x)."""
    b, a = before.settings.batches > 0, after.settings.batches > 0
    if not (b or a):
        return None
    key = "[scheduler] max_batch_size"
    size_b, size_a = before.settings.values.get(key), after.settings.values.get(key)
    if b and a and size_b is not None and size_b == size_a:
        return None  # batches of one size on both sides: jobs against jobs
    which = "both sides" if b and a else "BEFORE" if b else "AFTER"
    return (f"{which} proved batches (max_batch_size {size_b or '?'} → {size_a or '?'}): a "
            "batch is one GPU job for all its sectors' partitions, counted as one: "
            "partitions/h not comparable, throughput from the busy share")


def rate_label(before: Side, after: Side) -> str:
    """The rate figure's label, its unit the report's (`Side.rate_unit`): `GPU jobs/h` where
    both sides count the same rows, `partitions/h → GPU jobs/h` where they do not."""
    b, a = f"{before.rate_unit}/h", f"{after.rate_unit}/h"
    return b if b == a else f"{b} → {a}"


def rate_units_unlike(before: Side, after: Side) -> str | None:
    """Why the sides' rates are not one measure, or None: each counts its partition table's
    rows (`Side.rate_unit`), and a side with PoSt jobs among its partitions counts "GPU jobs"
    where the other counts partitions (a PoSt job is no partition). The batch case says its own
    words (`batch_rows_unlike`); a side with no partition table has no rate to compare."""
    b, a = before.rate_unit, after.rate_unit
    if b == a or before.partition_ends is None or after.partition_ends is None:
        return None
    return (f"the rate counts {b} on BEFORE and {a} on AFTER (the partition table's rows): "
            "not comparable, throughput from the busy share")


def _verdict_of(figures: list[Figure], gpu: int, name: str) -> Verdict | None:
    return next((f.test.verdict for f in figures if f.gpu == gpu and f.name == name), None)


def _summed(windows: dict[str, list[float]], names: tuple[str, ...]) -> list[float]:
    """The window values of `names` added window by window (a figure the side lacks: 0 in
    each of its usable windows, as `_zeros_for_absent` fills one the other side has)."""
    n = len(windows.get("busy share", []))
    columns = [windows.get(name) or [0.0] * n for name in names]
    return [sum(vs) for vs in zip(*columns, strict=True)]


def _load_differs(b_win: dict[str, list[float]], a_win: dict[str, list[float]],
                  figures: list[Figure], gpu: int, batch_changed: bool) -> bool:
    """Whether the load of `gpu` differs: its idle for want of work changed measurably. Where
    a side has idle while cuzk's batch collector held a request, what `/status` alone calls
    no work is both (`NO_WORK` + `BATCH_WAIT`): with the batch settings unchanged that sum is
    the load's figure; with them changed, the load differs only where both the sum and
    `NO_WORK` changed. A drop in offered work raises both (never a gain); waits the change
    removed while the load held leave `NO_WORK` as it was (a gain); waits that became want of
    work in an open loop leave the sum as it was (no gain, and no load change either)."""
    no_work = _verdict_of(figures, gpu, NO_WORK) == "load"
    if _verdict_of(figures, gpu, BATCH_WAIT) is None:
        return no_work
    both = (NO_WORK, BATCH_WAIT)
    total = judge(_summed(b_win, both), _summed(a_win, both), "none", False).verdict == "load"
    return (no_work and total) if batch_changed else total


#: Said when the batch settings changed and the waits became want of work (`compare`).
WAITS_BECAME_WANT_OF_WORK = (
    "idle for want of work changed, but with the batch waits (batch_wait) it did not: the "
    "change turned cuzk's waits for a batch to fill into waits for work, the load held; each "
    "request starts up to max_batch_wait_ms sooner, the GPU is no busier for it")


def _load_same_words(figures: list[Figure], batch_changed: bool) -> str:
    """What a load judged the same rests on (`_load_differs`), in words: with batch waits on a
    side it is not idle for want of work alone (it read "did not change" beside a note saying
    it had). Within the text's 100 columns."""
    if not any(f.name == BATCH_WAIT for f in figures):
        return "idle for want of work did not change"
    if not batch_changed:
        return "want of work and batch waits, together, did not change"
    if _waits_became_want_of_work(figures):
        return "want of work, with the batch waits it took in, unchanged"
    return "idle for want of work did not change"


def _waits_became_want_of_work(figures: list[Figure]) -> bool:
    return any(f.name == NO_WORK and f.test.verdict == "load" for f in figures)


#: The figures a side is checked for a drift within it (`_drift_note`).
DRIFT_FIGURES = ("busy share", "partitions/h")


def _drift_note(label: str, windows: dict[str, list[float]]) -> str | None:
    """Said when a side's own first and second halves differ by the one test (`judge`): a
    start-up (the prover's first wave), a load that ramps or a change inside the side, which
    a verdict between the sides mixes in (a side of mostly first wave read as "worse" against
    half an hour of the same settings)."""
    said = []
    for name in DRIFT_FIGURES:
        vs = windows.get(name, [])
        half = len(vs) // 2
        better, share = _direction(name)
        test = judge(vs[:half], vs[half:], better, share)
        if test.verdict in ("better", "worse"):
            a, b = fmean(vs[:half]), fmean(vs[half:])
            said.append(f"{name} {_plain(a, share)} in its first half, {_plain(b, share)} "
                        "in its second")
    if not said:
        return None
    return (f"{label} is not steady: {'; '.join(said)} (a start-up, a load that ramps, a "
            "change inside it): its verdicts mix both")


def _plain(v: float, share: bool) -> str:
    return f"{v * 100:.0f} %" if share else f"{v:.0f}"


def _other(side: Side, before: Side, after: Side,
           wins: dict[str, dict[int, dict[str, list[float]]]]) -> dict[int, dict[str, Any]]:
    return wins["AFTER" if side is before else "BEFORE"]


def _prover_seen(side: Side) -> bool:
    """Whether the side heard the prover at all (its log or /status): without, a prover cause
    absent there is unknown, not zero."""
    return side.statuses > 0 or side.partition_ends is not None or bool(side.settings.values)


def _zeros_for_absent(mine: dict[int, dict[str, list[float]]],
                      whole: dict[int, dict[str, float | None]],
                      other: dict[int, dict[str, Any]], prover_seen: bool) -> None:
    """An idle figure the other side has and this side has not is 0 here (no such gap), in
    every usable window; a prover cause only when this side heard the prover."""
    for gpu, figs in mine.items():
        n = len(figs.get("busy share", []))
        for name in other.get(gpu, {}):
            absent_is_zero = name.startswith("idle s/h: ") or (
                name.startswith("idle s/h, prover: ") and prover_seen)
            if absent_is_zero and name not in figs:
                figs[name] = [0.0] * n
                if gpu in whole and whole[gpu]:
                    whole[gpu][name] = 0.0


def _log_on_one_side(before: Side, after: Side) -> Side | None:
    """The side that read the prover's log when the other read none, else None."""
    b, a = before.settings.log_lines > 0, after.settings.log_lines > 0
    return None if b == a else before if b else after


def _causes_without_log(side: Side) -> str:
    """Where the side without the prover's log has its prover causes from, in words: its
    `/status` snapshots, or nowhere (it said "/status only" of a side that had none)."""
    if side.statuses > 0:
        return f"{side.label} has /status only"
    return f"{side.label} has no /status either: no prover cause at all"


def _cause_unlike(f: Figure) -> Figure:
    """A prover cause read from the log on one side and from `/status` alone on the other is
    not the same measure (the log names `pinned_pool` where `/status` says `inside_workers`):
    said, never judged. `no_work` is `/status`'s on both sides."""
    if f.name.startswith("idle s/h, prover: ") and f.name != NO_WORK:
        return f.said("not comparable")
    return f


def _load_said(f: Figure) -> Figure:
    if f.name in LOAD_SENSITIVE or f.name.startswith("idle s/h: "):
        if f.test.verdict in ("better", "worse"):
            return f.said("different load")
    return f


def _direction(name: str, batch_changed: bool = True) -> tuple[Better, bool]:
    """`batch_changed` False: batch waits come and go with the load, never judged."""
    if name in (NO_WORK, EMPTY_PIPELINE) or (name == BATCH_WAIT and not batch_changed):
        return "none", False
    if name == "busy share":
        return "higher", True
    if name == PAGEABLE_SHARE or name.startswith((POST_FAILED, POST_LATE)):
        return "lower", True
    if name == "partitions/h" or name.startswith("H2D rate"):
        return "higher", False
    return "lower", False


def _figure_names(*maps: dict[str, Any]) -> list[str]:
    """Figures in a fixed order: busy, partitions, gaps, idle (total, by kind, by prover
    cause), H2D rates by memory kind."""
    names = {n for m in maps for n in m}
    order = ["busy share", "partitions/h", "gaps/h", "idle s/h"]
    groups = ("idle s/h: ", "idle s/h, prover: ", "H2D rate: ", PAGEABLE_SHARE, POST_FAILED,
              POST_LATE, POST_LATENCY)
    out = [n for n in order if n in names]
    for prefix in groups:
        out += sorted(n for n in names if n.startswith(prefix))
    return out + sorted(n for n in names if n not in out)


def unwindowed(side: Side, window_s: float) -> str | None:
    """Why `side` is not cut into windows of `window_s`, in words, or None: its wall clock
    stepped back inside it (its times overlap), or its wall time is more windows than
    `MAX_WINDOW_CELLS` allows. Such a side's figures are whole-run only, each verdict "too
    few windows" (`compare`)."""
    if side.stepped_back_s > 0:
        return (f"{side.label}'s wall clock stepped back {fmt.far(side.stepped_back_s)} "
                "inside it (an NTP step): its times cannot be cut into windows, its figures "
                "are whole-run only (compare the part after the step: --at)")
    start = side.start_s
    if start is None:
        return None
    n = _windows_in(side, window_s)
    accumulators = len(side.totals) + 1
    if n * accumulators <= MAX_WINDOW_CELLS:
        return None
    fits = _up_to_3_digits(side.span_s / (MAX_WINDOW_CELLS // accumulators))
    return (f"{side.label}'s {fmt.far(side.span_s)} of wall time is {_count_words(n)} windows of "
            f"{window_s:g} s, more than a side is cut into for {len(side.totals)} GPU(s): its "
            f"figures are whole-run only (a clock stepped ahead? --window {fits:g} or more, "
            "or --at with --span)")


def _up_to_3_digits(x: float) -> float:
    """A number of 3 significant digits above `x`: a window that is said to fit must fit
    (3.1103 said as 3.11 was itself refused), also where `x` has 3 digits or fewer and the
    division it came from rounded down."""
    d = Decimal(repr(x * (1 + 1e-9)))
    return float(d.quantize(Decimal(1).scaleb(d.adjusted() - 2), rounding=ROUND_CEILING))


def _windows_in(side: Side, window_s: float) -> int:
    """The windows of `window_s` that cover the side's span, the last one partial. Past what
    a float holds, counted as fractions: `--window 1e-310` made the quotient infinite, and
    `int` of it a traceback."""
    q = -(-side.span_s // window_s)
    if math.isfinite(q):
        return max(1, int(q))
    return max(1, math.ceil(Fraction(side.span_s) / Fraction(window_s)))


def _count_words(n: int) -> str:
    """`n` with thousands separators, or its order of magnitude past 15 digits (a count of a
    window of 1e-300 s is 300 digits long)."""
    return f"{n:,}" if n < 10**15 else f"~10^{len(str(n)) - 1}"


def _extent(side: Side) -> tuple[float, float]:
    """The earliest and latest time of anything the windows read of `side`."""
    lo, hi = float("inf"), float("-inf")

    def take(t: float) -> None:
        nonlocal lo, hi
        lo, hi = min(lo, t), max(hi, t)

    for t in side.totals:
        for x in (t.first_busy_s, t.last_busy_s):
            if x is not None:
                take(x)
    for g in side.gaps:
        take(g.start_s)
        take(g.start_s + g.duration_s)
    for _gpu, end in side.partition_ends or ():
        take(end)
    for c in side.copies:
        take(c.end_s)
    for p in side.posts:
        take(p.end_s)
    return (lo, hi) if lo <= hi else (0.0, 0.0)


def _windows(side: Side, window_s: float) -> tuple[dict[int, dict[str, list[float]]],
                                                  dict[int, dict[str, float | None]],
                                                  dict[int, dict[str, Counted]]]:
    """Each GPU's (and `ALL`'s) figures per usable window, and over the whole side (the same
    accumulators summed over every window, the last partial one too; busy share: the
    report's; per hour of the GPU's working span; partitions per hour: `throughput`'s, of all
    GPUs and of each).
    A side `unwindowed` gives no window values: its accumulators are one window over all it
    holds, for the whole-run figures. Third, the shares counted whole (`_post_counts`)."""
    start = side.start_s
    if start is None:
        return {}, {}, {}
    n = _windows_in(side, window_s)
    cut = unwindowed(side, window_s) is None
    if cut:
        grid = Grid(start, window_s, n)
    elif side.stepped_back_s > 0:
        lo, hi = _extent(side)
        grid = Grid(lo, hi - lo + 1.0, 1)  # half-open: its latest time inside too
    else:
        # The windows' own extent, as one (past 2^53 windows, worked out as a fraction: the
        # product of a 300-digit count and the window overflowed a float).
        grid = Grid(start, n * window_s if n < 2**53 else float(n * Fraction(window_s)), 1)
    # Across a step back, wall times cannot say where a GPU had no reading (a stretch read
    # from a NO_DATA state to the next state may cover real data): none is left out.
    no_data = side.no_data if side.stepped_back_s <= 0 else []
    # The whole run's partitions per hour is the report's (`throughput`: one rule, one home),
    # not the windows' sum (the last window runs past the span, as far as `--window` says).
    # None (no partition whose GPU end is known: a log without its TIMELINE anchor): no
    # window's partitions either (each was 0, and the test called it a change).
    pph_all = partitions_per_hour(side.partition_ends, side.totals, no_data, side.stepped_back_s)
    ends = side.partition_ends if pph_all is not None else None
    acc = accumulate(grid, side.totals, side.gaps, ends, side.copies, side.posts, no_data)
    spans = {t.gpu: (t.busy_s, t.active_s) for t in side.totals}
    spans[ALL] = (sum(t.busy_s for t in side.totals), sum(t.active_s for t in side.totals))
    counts = {gpu: _post_counts(w) for gpu, w in acc.items() if gpu in spans}
    wholes = {gpu: _whole(w, counts[gpu], *spans[gpu]) for gpu, w in acc.items() if gpu in spans}
    for gpu, figures in wholes.items():
        pph = pph_all if gpu == ALL else partitions_per_hour(
            ends, side.totals, no_data, side.stepped_back_s, gpu)
        if figures and pph is not None:
            figures["partitions/h"] = pph
    if cut:
        wins = {gpu: series(w, window_s, gpu == ALL) for gpu, w in acc.items()}
    else:  # every figure it has, without a window value (the other side's absent kinds: 0)
        wins = {gpu: {name: [] for name in wholes.get(gpu, {})} for gpu in acc}
    return wins, wholes, counts


def _post_counts(w: GpuWindows) -> dict[str, Counted]:
    """Each PoSt kind's (failed or lost, of those ended) over the whole side, by `POST_FAILED`
    name, and its (proved late, of those ended less those proved not timed, the not timed),
    by `POST_LATE` name: counted whole, as the failures are."""
    out = {}
    for kind, ended in w.posts_ended.items():
        if sum(ended):
            not_timed = sum(w.posts_not_timed.get(kind, ()))
            out[f"{POST_FAILED}{kind}"] = Counted(sum(w.posts_failed.get(kind, ())), sum(ended))
            out[f"{POST_LATE}{kind}"] = Counted(sum(w.posts_late.get(kind, ())),
                                                sum(ended) - not_timed, not_timed)
    return out


def _whole(w: GpuWindows, counts: dict[str, Counted], busy_s: float, active_s: float
           ) -> dict[str, float | None]:
    """The whole side's figures of one GPU (or all: `ALL`), the PoSt shares from `counts`
    (`_post_counts`, counted once for the shares' tests too)."""
    if active_s <= 0:
        return {}
    per_h = 3600 / active_s
    out: dict[str, float | None] = {
        "busy share": busy_s / active_s,
        "gaps/h": sum(w.gaps) * per_h,
        "idle s/h": sum(w.gap_idle_s) * per_h,
    }
    for kind, vs in w.idle_by_kind.items():
        out[f"idle s/h: {kind}"] = sum(vs) * per_h
    for cause, vs in w.idle_by_cause.items():
        out[f"idle s/h, prover: {cause}"] = sum(vs) * per_h
    for kind, bs in w.h2d_bytes.items():
        secs = sum(w.h2d_s[kind])
        out[f"H2D rate: {kind}"] = sum(bs) / secs if secs > 0 else None
    if w.h2d_bytes:
        total_b = sum(sum(bs) for bs in w.h2d_bytes.values())
        total_s = sum(sum(ss) for ss in w.h2d_s.values())
        out["H2D rate: all"] = total_b / total_s if total_s > 0 else None
        out[PAGEABLE_SHARE] = (sum(w.h2d_bytes.get("pageable", [])) / total_b
                               if total_b > 0 else None)
    for kind, post_s in w.post_s.items():
        proofs = sum(w.posts[kind])
        out[f"{POST_LATENCY}{kind}"] = sum(post_s) / proofs if proofs else None
    for name, n in counts.items():
        out[name] = n.hits / n.of if n.of else None  # none timed: its late share not known
    return out


def _link(g: GpuInfo) -> str | None:
    """`PCIe Gen5 x16` (`fmt.link_shape`), None where either is not known."""
    return (None if g.link_gen is None or g.link_width is None
            else f"PCIe {fmt.link_shape(g.link_gen, g.link_width)}")


def hardware_differences(before: Side, after: Side) -> list[str]:
    """How the GPUs both sides have differ (by index): their model, their PCIe link (what the
    header read of each; one not known on a side is not a difference). Two recordings of an
    H200 box and an H100 box with a Gen4 link read "better, 85 % of the predicted gain" with
    nothing said: the hardware's difference was taken for the setting's."""
    b = {g.index: g for g in before.gpus}
    a = {g.index: g for g in after.gpus}
    out: list[str] = []
    for i in sorted(b.keys() & a.keys()):
        gb, ga = b[i], a[i]
        if "unknown" not in (gb.name, ga.name) and gb.name != ga.name:
            out.append(f"GPU {i} {gb.name} → {ga.name}")
        lb, la = _link(gb), _link(ga)
        if lb is not None and la is not None and lb != la:
            out.append(f"GPU {i} {lb} → {la}")
    return out


def _notes(before: Side, after: Side, window_s: float) -> list[str]:
    """What makes the sides less than like for like, in plain words."""
    out: list[str] = []
    hardware = hardware_differences(before, after)
    if hardware:
        shown = "; ".join(hardware[:4]) + (f" (+{len(hardware) - 4} more)"
                                           if len(hardware) > 4 else "")
        out.append(f"different hardware: {shown}: the figures compare the GPUs as well as the "
                   "settings; what AFTER achieved is not a measure of the change")
    if before.host and after.host and before.host != after.host:
        out.append(f"different machines: BEFORE on {before.host}, AFTER on {after.host}: "
                   "their RAM, CPUs and load differ besides the settings")
    b_gpus = sorted(t.gpu for t in before.totals)
    a_gpus = sorted(t.gpu for t in after.totals)
    if b_gpus != a_gpus:
        box = ("'all GPUs' is each side's whole box (per GPU-hour; partitions/h per wall "
               "hour" + (", not comparable)" if len(b_gpus) != len(a_gpus) else ")"))
        out.append(f"different GPUs: BEFORE {len(b_gpus)} ({_list(b_gpus)}), AFTER "
                   f"{len(a_gpus)} ({_list(a_gpus)}); per-GPU figures only for the GPUs both "
                   f"have; {box}")
    b, a = before.span_s, after.span_s
    if b > 0 and a > 0 and max(a, b) / min(a, b) > LENGTH_RATIO_SAID:
        out.append(f"different lengths: BEFORE {fmt.far(b)} of work, AFTER "
                   f"{fmt.far(a)}: rates compare, totals do not")
    with_log = _log_on_one_side(before, after)
    if with_log is not None:
        other = after if with_log is before else before
        out.append(f"only {with_log.label} has the prover's log: prover causes not compared "
                   f"({_causes_without_log(other)})")
    spans = [n for s in (before, after) if (n := _span_without_restarts(s)) is not None]
    # Both sides one recording, each read whole (`compare REC REC`): `--at` cuts it.
    one = before.path == after.path and before.window is None and after.window is None
    out += [note for s in (before, after)
            if (note := _restart_note(s, min(spans, default=None), one)) is not None]
    out += [note for s in (before, after) if (note := _gpu_health_note(s)) is not None]
    for s in (before, after):
        silent = _silent_in_span(s) if not s.stepped_back_s else ""
        if silent:
            out.append(f"{s.label} has no reading for {silent}: left out, neither busy nor idle")
    for s in (before, after):
        why = unwindowed(s, window_s)
        if why is not None:
            out.append(why)
            continue
        if s.start_s is None or not s.span_s > 0:
            # No window of any size helps a side without a span ("pass --window smaller" was
            # said of one with no sample at all).
            out.append(f"{s.label} has no span of data (no sample, or a single one): nothing "
                       "to cut into windows, nothing to tell a change by")
            continue
        whole = int(s.span_s // window_s)
        if whole < 5:
            out.append(f"{s.label} holds {whole} whole window(s) of {window_s:g} s: too short "
                       "to tell a change (pass --window smaller)")
    return out


def _gpu_health_note(side: Side) -> str | None:
    """Said when the side's GPUs erred or ran held down by heat or a hardware slowdown in at
    least `HELD_DOWN_SAID` of their health readings: a run whose GPU throttled read "worse"
    after a setting that was not to blame, and one with an XID "better" for a restart."""
    parts = []
    if side.gpu_errors:
        parts.append("GPU errors " + ", ".join(f"{k} {n}" for k, n in
                                               sorted(side.gpu_errors.items())))
    held = [f"GPU {g} {words} in {share * 100:.0f} % of its health readings"
            for g, (words, share) in sorted(side.held_down.items()) if share >= HELD_DOWN_SAID]
    if held:
        parts.append("clocks held down: " + "; ".join(held[:4])
                     + (f" (+{len(held) - 4} more)" if len(held) > 4 else ""))
    if not parts:
        return None
    return (f"{side.label} had {'; '.join(parts)}: its figures show the GPU's state as well "
            "as the settings (docs/health.md)")


def _restart_note(side: Side, span_s: int | None = None,
                  one_recording: bool = False) -> str | None:
    """Said when cuzk started again after the side's first busy reading: the side is two runs
    or more (each start begins with an unpinned first wave and reloads its SRS,
    cuzk-upstream-paths.md 4.4), and its settings column shows only the last start's values;
    where a setting changed at a restart, the change the comparison is about may sit inside
    the side. A start before the first busy reading (the side's own start, or the startup
    lines replayed from before an `--at` window) is no restart inside it, nor one after its
    window's end (`runs_after`: the window's rule, `report --since/--until`'s): they were
    counted, and the `--at` said of them lay outside the window. `span_s`: the `--span` that
    leaves both sides' restarts out (`_span_without_restarts`), said of a side read as a
    window; `one_recording`: both sides are one recording read whole (`_restarts_left_out`)."""
    runs = _restarts_inside(side)
    if runs is None:
        return None
    changed = "; ".join(f"{k} {' → '.join(v)}" for k, v in sorted(runs.changed.items()))
    count = f"more than {len(runs.times)}" if runs.more else str(len(runs.times))
    return (f"{side.label} holds {count} restart(s) of cuzk after its first busy "
            "reading (each begins with an unpinned first wave and reloads its SRS), so its "
            "figures mix the runs"
            + (f"; changed at them: {changed} (its settings show the last)" if changed else "")
            + _restarts_left_out(side, runs.times, span_s, one_recording))


def _restarts_inside(side: Side) -> Restarts | None:
    """cuzk's starts inside the side after its first busy reading (`_restart_note`), or None."""
    first = side.start_s
    if first is None:
        return None
    runs = runs_after(side.settings, first, None if side.window is None else side.window.until_s)
    return runs if runs.times else None


def _at_s(side: Side) -> float | None:
    """The `--at` moment of a side read as its part of the cut (BEFORE's end, AFTER's start),
    in whole seconds as it is said; None: a whole recording, or a window of the side's own
    (`--since/--until`: no moment is shared, and its restarts lie inside it, where `--at` the
    last one cuts as in a whole recording)."""
    w = None if side.window_own else side.window
    at = None if w is None else w.until_s if side.label == "BEFORE" else w.since_s
    return None if at is None else math.floor(at)


def _span_without_restarts(side: Side) -> int | None:
    """The longest `--span`, whole seconds, whose window on this side holds none of its
    restarts (BEFORE's since after its last, AFTER's until before its first); None: no
    restart, or not a window; 0: none does (a restart within a second of the moment)."""
    runs, at_s = _restarts_inside(side), _at_s(side)
    if runs is None or at_s is None:
        return None
    t = runs.times
    return max(0, math.ceil(at_s - t[-1] if side.label == "BEFORE" else t[0] - at_s) - 1)


def _restarts_left_out(side: Side, times: tuple[float, ...], span_s: int | None,
                       one_recording: bool) -> str:
    """What to run instead, in words. A side of its own (two recordings, or a window of its
    own): its own window from its last restart on, `--before-since` (`--after-since`) the
    first whole second after it, on that side's own clock: `--at` there read BEFORE *up to*
    that moment, keeping the restarts, and AFTER (another run) from that moment of its own
    recording, and beside `--since` it was refused. One recording read whole on both sides:
    `--at` its last restart. A side read as an `--at` window: the same moment with a span that
    leaves both sides' restarts out (`--at` the last restart, said of a window, lay outside it,
    and from it the next run said it again)."""
    at_s = _at_s(side)
    if at_s is None:
        if one_recording:
            return f"; compare across the last: --at {_iso(times[-1])}"
        flag = "--before-since" if side.label == "BEFORE" else "--after-since"
        return f"; leave them out: {flag} {_iso(math.floor(times[-1]) + 1)}"
    if not span_s:
        return ""
    return f"; leave them out: --at {_iso(at_s)} --span {span_s}s"


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))


def _silent_in_span(side: Side) -> str:
    """Each GPU's time with no reading inside its working span, in words ("" when none)."""
    out = []
    for t in side.totals:
        if t.first_busy_s is None or t.last_busy_s is None:
            continue
        first, last = t.first_busy_s, t.last_busy_s
        s = seconds_within(((h.start_s, h.end_s) for h in side.no_data if h.gpu == t.gpu),
                           first, last)
        if s > 0:
            out.append(f"{fmt.duration(s)} of GPU {t.gpu}'s working span")
    return ", ".join(out)


def _list(xs: list[int]) -> str:
    return ", ".join(str(x) for x in xs) or "none"


def predicted_vs_achieved(c: Comparison) -> dict[str, Any]:
    """BEFORE's advice with its predicted payoff, and what AFTER achieved (busy share, and the
    throughput ratio from partitions per hour when both sides have them, else from busy)."""
    b, a = c.before, c.after
    advice = []
    for x in b.advice.advice:
        # By what shows the setting (`advised_change`), not by its name among the changed
        # ones: cuzk logs `[pipeline] max_parallel_synthesis` only as synth_worker_count, the
        # budget in GiB, env knobs by their lines, so a name match never marked them.
        advice.append({
            "setting": x.setting, "stall": x.stall, "gaps": x.gaps, "idle_s": x.idle_s,
            "busy_fraction": None if x.payoff is None else x.payoff.busy_fraction,
            "throughput_gain": None if x.payoff is None else x.payoff.throughput_gain,
            "span_s": None if x.payoff is None else x.payoff.span_s,
            "link_limit_s": None if x.payoff is None else x.payoff.link_limit_s,
            "link_limited_by": [] if x.payoff is None else limited_by_json(x.payoff.limited_by),
            **_changed_json(advised_change(x.setting, b.settings, a.settings))})
    top = c.figures[0].gpu if c.figures else ALL
    proofs = [_proof_advice_payoff(x, c, top) for x in b.advice.proofs if x.setting is not None]
    counts = (len(b.totals), len(a.totals))
    # The box's figures against the box's: the figures of one GPU (the only one both sides
    # have) are not the box where a side has others (GPU 0's partitions/h beside the box's
    # busy share and a box-wide prediction read "277 % of the predicted gain" while the box's
    # partitions/h fell 6386 -> 3976). Then the sides' own whole-run totals, untested.
    box = top == ALL or counts == (1, 1)
    whole = {f.name: (f.before, f.after) for f in c.figures if f.gpu == top} if box else {
        "partitions/h": (b.partitions_per_hour, a.partitions_per_hour),
        "busy share": (b.busy_fraction, a.busy_fraction)}
    verdicts: dict[str, Verdict] = {f.name: f.test.verdict for f in c.figures
                                    if f.gpu == top and box}
    if counts[0] != counts[1]:
        # Two GPUs' totals against one's measure the GPUs as much as the setting.
        verdicts = {name: "not comparable" for name in ("busy share", "partitions/h")}
    too_short = {name for name, v in verdicts.items() if v == "too few windows"}
    ratio, basis = None, None
    pb, pa = whole.get("partitions/h", (None, None))
    bb, ba = whole.get("busy share", (b.busy_fraction, a.busy_fraction))
    # Rows of unlike units (batches, PoSt jobs) are no one measure at any GPU count.
    if pb and pa and not (batch_rows_unlike(b, a) or rate_units_unlike(b, a)):
        ratio, basis = pa / pb, "partitions/h"
    elif bb and ba is not None:
        ratio, basis = ba / bb, "busy share"
    not_measured = None
    if basis is not None and basis in too_short:
        # A side too short to tell a change (its verdict says so) is no measure of the gain
        # either: a ratio from a few seconds would read as "achieved" with no test behind it.
        not_measured = f"too few windows of {basis}"
        ratio, basis = None, None
    predicted = b.payoff_all.throughput_gain
    verdict = None if basis is None else verdicts.get(basis)
    share = None
    # A ratio its own figure's test does not tell from the runs' spread is no gain, nor a
    # loss: no share of the predicted gain is claimed for it ("-32 % of the predicted gain"
    # beside "no measurable change" on every figure).
    # Nor on other GPUs or links: the ratio is the hardware's as much as the setting's.
    if ratio is not None and predicted is not None and predicted > 1 \
            and verdict in ("better", "worse") and not c.hardware_differs:
        share = (ratio - 1) / (predicted - 1)
    return {
        "advice": advice,
        "proof_advice": proofs,
        "advice_changed": advice_changed([x["changed"] for x in (*advice, *proofs)]),
        "all_gaps": {"busy_fraction": b.payoff_all.busy_fraction,
                     "throughput_gain": predicted, "span_s": b.payoff_all.span_s,
                     "gaps": b.payoff_all.gaps, "link_limit_s": b.payoff_all.link_limit_s,
                     "link_limited_by": limited_by_json(b.payoff_all.limited_by)},
        "achieved": {"busy_before": b.busy_fraction, "busy_after": a.busy_fraction,
                     "throughput_ratio": ratio, "basis": basis, "verdict": verdict,
                     "share_of_predicted_gain": share,
                     "not_measured": not_measured,
                     "load_differs": c.load_differs,
                     "hardware_differs": c.hardware_differs,
                     "gpu_counts": list(counts)},
    }


def advice_changed(changed: list[bool | None]) -> bool | None:
    """Whether AFTER followed BEFORE's advice, from each advised setting's `changed`: True
    where one changed, False where every one is known unchanged, None where there was none
    or none is known. With False, what AFTER achieved is not the advice's gain: "unchanged ...
    on both" then read "(108 % of the predicted gain)", and no line said what had changed."""
    if any(c is True for c in changed):
        return True
    if changed and all(c is False for c in changed):
        return False
    return None


#: The PoSt figure an advice for proofs of each verdict was meant to move: a late proof's share
#: past the deadline (the mean latency of all proofs moves little when 4 of 8 are late: 21 ->
#: 20 s "no measurable change" was all the payoff said), an at-risk one's latency, a failed or
#: lost one's share without a proof.
PROOF_ADVICE_MOVES = {"late": POST_LATE, "at_risk": POST_LATENCY, "failed": POST_FAILED,
                      "lost": POST_FAILED}


def _changed_json(moved: AdvisedChange) -> dict[str, Any]:
    """Whether an advised setting changed, and what showed it (the payoff's advice rows)."""
    return {"changed": moved.changed, "changed_not_known_why": moved.why_not_known,
            "shown_by": [{"setting": s.setting, "before": s.before, "after": s.after}
                         for s in moved.shown_by]}


def _proof_advice_payoff(x: ProofAdvice, c: Comparison, top: int) -> dict[str, Any]:
    """A PoSt advice of BEFORE's report that names a setting (`ProofAdvice`): whether the
    setting changed, as the gaps' advice is read (`advised_change`), and the PoSt figure it was
    meant to move (`PROOF_ADVICE_MOVES`) on the GPUs the achieved line reads. The payoff said
    "BEFORE's report advised no setting" beside a report advising `[memory] eviction_min_idle`
    for its late WinningPoSts."""
    assert x.setting is not None
    name = PROOF_ADVICE_MOVES.get(x.verdict, POST_LATENCY) + x.proof_kind
    f = next((f for f in c.figures if f.gpu == top and f.name == name), None)
    return {"setting": x.setting, "proof_kind": x.proof_kind, "verdict": x.verdict,
            "count": x.count, "cause": x.cause,
            **_changed_json(advised_change(x.setting, c.before.settings, c.after.settings)),
            "figure": {"figure": name, "before": None if f is None else f.before,
                       "after": None if f is None else f.after,
                       "verdict": None if f is None else f.test.verdict}}


def to_json(c: Comparison) -> dict[str, Any]:
    """The JSON document (docs/compare.md)."""
    return {
        "schema_version": COMPARE_SCHEMA_VERSION,
        "method": METHOD,
        "window_s": c.window_s,
        "sides": {s.label: _side_json(s, c.window_s, n)
                  for s, n in zip((c.before, c.after), usable_windows(c), strict=True)},
        "notes": c.notes,
        "load": {"known": c.load_known, "differs": c.load_differs},
        "settings": {
            "before": _settings_json(c.before.settings),
            "after": _settings_json(c.after.settings),
            # Shown by both sides and different (`SettingChange.changed`); "not_shown": shown
            # by one side only, changed or not not known, never among "changed".
            "changed": [{"setting": ch.setting, "before": ch.before, "after": ch.after}
                        for ch in c.setting_changes],
            "not_shown": [{"setting": ch.setting, "before": ch.before, "after": ch.after}
                          for ch in c.settings_not_shown],
        },
        "figures": [_figure_json(f) for f in c.figures],
        "payoff": predicted_vs_achieved(c),
        "before_advice": advice_json(c.before.advice),
    }


def usable_windows(c: Comparison) -> tuple[int, int]:
    """How many windows each side's figures are judged over (BEFORE, AFTER): the busy share's
    of the first GPU listed (a window counts where it is at least half inside the working span,
    the last one too), as the text's head says it."""
    busy = next((f for f in c.figures if f.name == "busy share"), None)
    return (busy.before_windows.n, busy.after_windows.n) if busy else (0, 0)


def _side_json(s: Side, window_s: float, usable: int) -> dict[str, Any]:
    return {"path": s.path, "log_files": s.log_files,
            "window": None if s.window is None else {"since_s": s.window.since_s,
                                                     "until_s": s.window.until_s,
                                                     "said": s.window.said},
            "gpus": [t.gpu for t in s.totals],
            "start_s": s.start_s, "span_s": s.span_s, "windows": _whole_windows(s, window_s),
            "usable_windows": usable,
            "busy_fraction": s.busy_fraction, "partitions_per_hour": s.partitions_per_hour,
            "rate_unit": s.rate_unit, "status_snapshots": s.statuses, "problems": s.problems,
            "notes": s.notes,
            # What its PoSt were judged by (`report`'s `post_deadlines`).
            "post_deadlines": (s.post_deadlines.json() if s.post_deadlines is not None
                               else None)}


def _whole_windows(side: Side, window_s: float) -> int | None:
    """The whole windows of `window_s` in the side's span; None past what a JSON integer
    holds (2^63: a `--window` of 1e-310 s, whose float count was infinite, a traceback)."""
    q = side.span_s // window_s
    n = int(q) if math.isfinite(q) else Fraction(side.span_s) // Fraction(window_s)
    return n if n < 2**63 else None


def _settings_json(s: ProverSettings) -> dict[str, Any]:
    return {"values": s.values, "seen_in": s.seen_in, "deprecated": list(s.deprecated),
            "env": s.env, "batches": s.batches, "dropped": list(s.dropped),
            "dropped_fields": s.dropped_fields}


def _spread_json(s: Spread) -> dict[str, Any]:
    return {"n": s.n, "median": s.median, "p10": s.p10, "p90": s.p90, "mean": s.mean}


def _figure_json(f: Figure) -> dict[str, Any]:
    return {"gpu": None if f.gpu == ALL else f.gpu, "figure": f.name, "better": f.better,
            "before": f.before, "after": f.after,
            "before_windows": _spread_json(f.before_windows),
            "after_windows": _spread_json(f.after_windows),
            "delta_mean": f.test.delta_mean, "p_value": f.test.p_value,
            "verdict": f.test.verdict,
            **({} if f.counts is None else _counts_json(f))}


def _counts_json(f: Figure) -> dict[str, Any]:
    """A share counted whole with its counts: `{"failed": 10, "ended": 20}`; the late share's
    with those proved not timed, which its share leaves out (`{"late": 2, "ended": 20,
    "not_timed": 14}`: 2 of 6)."""
    assert f.counts is not None
    (hb, nb), (ha, na) = f.counts
    if f.not_timed is None:
        return {"before_count": {"failed": hb, "ended": nb},
                "after_count": {"failed": ha, "ended": na}}
    ub, ua = f.not_timed
    return {"before_count": {"late": hb, "ended": nb + ub, "not_timed": ub},
            "after_count": {"late": ha, "ended": na + ua, "not_timed": ua}}

