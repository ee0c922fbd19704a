"""cuzk's engine runs as its TIMELINE lines show them, and the start line that places each run's
lines in wall time when they are read apart from it.

Who calls it: `gapwatch.cuzk.post.PostTracker` (a run's clock: `offsets_began_again`),
`gapwatch.logs.parse.LogParser` (the start lines it read, `StartLines`; the runs of a file read
apart, `RunsApart`) and `gapwatch.logs.files` (`placing`: which start line each such run takes).

What cuzk writes (extern/cuzk): `TIMELINE,<offset_ms>,...` (engine.rs:349-353, `eprintln!`, so
on stderr) counts its milliseconds from `TIMELINE_EPOCH`, a process-wide `OnceLock<Instant>` set
in `Engine::start` (1242) right before `info!("starting cuzk engine")` (1244-1247, a tracing
line on stdout, timestamped), which the daemon calls once (cuzk-daemon main.rs:119). So each
run of the daemon writes one start line, and its offsets count from it; a restart is a new
process, whose offsets begin again at 0 after its own start line. An offset well behind the
latest one of its run (`OFFSETS_BACK_S`) is a new run's.

cuzk's stderr given as a file of its own beside its stdout (`cuzk > out.log 2> err.log`: read
after the others, apart, `gapwatch.logs.files.read_order`) holds every run's TIMELINE lines, the
stdout every run's start line. Placed by the last start line read (the parser's anchor once the
whole stdout was read), the earlier runs' lines were put in the latest run: a restart's two runs
read as one of 3 s, its cost misjudged, a `post` recording's first runs' PoSt said lost in
restart (its payoff's partitions an hour 1,685 for 3,476). Now the file's runs are counted first
(a read of their own: `RunsApart`, no anchor), and matched to the start lines in order, the
first run to the first start line, only where the two agree (`placing`): as many runs as start
lines, and no run's lines after the next run's start line (by more than `OFFSETS_BACK_S`: a
clock stepped between two runs). With more start lines than runs (runs that died at their start,
a crash loop's, wrote no TIMELINE line), the runs take the start lines of the one way that fits
those rules (`only_fit`). Otherwise which start line a run is of is not known (more than one way
fits, as with an idle last run; files cut or rotated at other times), and a guess could put a
run's work in another's: none of the file's TIMELINE lines is placed by
a start line, and it is said once (`runs_note`). The start lines kept are the latest
`MAX_START_LINES`: the runs of those before them are placed by none, and that is said too.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Final

from gapwatch.core import fmt

#: A TIMELINE offset this far behind the latest one read (s) is a new engine's: cuzk's
#: offsets are one `Instant`'s elapsed time, which never goes back within a run (a line's
#: offset is taken before it waits for stderr's lock: milliseconds out of order, not this).
OFFSETS_BACK_S: Final = 10.0

#: `starting cuzk engine` lines kept (the latest) for the runs of a file read apart: a log of
#: more restarts than this places the latest runs' lines only (the earlier ones' said).
MAX_START_LINES: Final = 1024


def offsets_began_again(latest_s: float | None, offset_s: float) -> bool:
    """Whether a TIMELINE offset of `offset_s` is a new engine run's, the latest offset of the
    run read so far being `latest_s` (None: none read yet)."""
    return latest_s is not None and offset_s < latest_s - OFFSETS_BACK_S


@dataclass(slots=True)
class StartLines:
    """The wall times of the `starting cuzk engine` lines read, in order: the latest
    `MAX_START_LINES`, and how many before them were dropped (bounded for any log)."""

    times_s: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_START_LINES))
    dropped: int = 0

    def add(self, t_wall_s: float) -> None:
        if len(self.times_s) == self.times_s.maxlen:
            self.dropped += 1
        self.times_s.append(t_wall_s)

    @property
    def read(self) -> int:
        """How many were read, kept or not."""
        return self.dropped + len(self.times_s)

    def resume_state(self) -> tuple[tuple[float, ...], int]:
        """A copy of what it holds (for `LogParser.resume_state`)."""
        return tuple(self.times_s), self.dropped


@dataclass(slots=True)
class RunsApart:
    """The TIMELINE lines of a file read apart, followed in the order read: which engine run each
    is of (the first line's is the first run; each time the offsets begin again, the next) and
    the start line's wall time that places it (`anchor_s`)."""

    #: The wall time each run's offsets count from, in order, from run `first_placed` (0 the
    #: first) on; a run before it or past them is placed by none.
    anchors_s: tuple[float, ...] = ()
    first_placed: int = 0
    #: The runs seen so far (the current one is the last), and its latest offset.
    runs: int = 0
    latest_s: float | None = None
    #: The TIMELINE lines with an offset seen.
    lines: int = 0
    #: The latest offset of each of the latest `MAX_START_LINES` runs (`placing`'s check that
    #: each run ends before the next one's start line).
    ends_s: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_START_LINES))

    def anchor_s(self, offset_ms: int) -> float | None:
        """The wall time the line of `offset_ms` counts from (None: its run's start line is
        not known), the line counted in its run."""
        offset_s = offset_ms / 1000.0
        self.lines += 1
        if self.runs == 0 or offsets_began_again(self.latest_s, offset_s):
            self.runs += 1
            self.latest_s = None
            self.ends_s.append(offset_s)
        if self.latest_s is None or offset_s > self.latest_s:
            self.latest_s = offset_s
            self.ends_s[-1] = offset_s
        i = self.runs - 1 - self.first_placed
        return self.anchors_s[i] if 0 <= i < len(self.anchors_s) else None

    def resume_state(self) -> tuple[object, ...]:
        """A copy of what it holds (for `LogParser.resume_state`)."""
        return (self.anchors_s, self.first_placed, self.runs, self.latest_s, self.lines,
                tuple(self.ends_s))


@dataclass(frozen=True, slots=True)
class Placing:
    """How a file read apart has its TIMELINE lines placed (`placing`)."""

    #: What follows its runs as it is read, each given its start line; None: its lines are
    #: placed as any file's (no start line was read beside it, or it has no TIMELINE line).
    runs: RunsApart | None
    #: Why some or all of its runs are placed by no start line (None: each is), for `runs_note`.
    why_not: str | None


def placing(seen: RunsApart, starts: StartLines) -> Placing:
    """The start line each engine run of a file read apart takes, its runs `seen` (the whole
    file followed by a `RunsApart` of no anchor) and the start lines read before it `starts`:
    see the module docstring."""
    if starts.read == 0 or seen.runs == 0:
        return Placing(None, None)
    none = RunsApart()
    if seen.runs < starts.read and not starts.dropped:
        fitted = only_fit(tuple(starts.times_s), tuple(seen.ends_s))
        if fitted is not None:  # the start lines of runs that wrote no TIMELINE line known
            return Placing(RunsApart(fitted), None)
    if seen.runs != starts.read:
        return Placing(none, (
            f"it shows {seen.runs:,} engine run(s) (its offsets begin again "
            f"{seen.runs - 1:,} time(s)), they show {starts.read:,} `starting cuzk engine` "
            "line(s), and which run each start line is of is not known (a run that wrote no "
            "TIMELINE line, files cut or rotated at other times)"))
    anchors = tuple(starts.times_s)
    ends = tuple(seen.ends_s)[-len(anchors):]  # the same runs: as many of each were read
    for k, (start_s, end_s, next_s) in enumerate(zip(anchors[:-1], ends[:-1], anchors[1:],
                                                     strict=True), 1):
        late_s = start_s + end_s - next_s
        if late_s > OFFSETS_BACK_S:
            run = starts.dropped + k
            return Placing(none, (
                f"it shows as many engine runs as they show `starting cuzk engine` lines "
                f"({seen.runs:,}), but run {run:,}'s lines would end {late_s:,.1f} s after run "
                f"{run + 1:,}'s start line: which run each start line is of is not known"))
    why = None if not starts.dropped else (
        f"its first {starts.dropped:,} engine run(s) started more than {MAX_START_LINES:,} "
        "`starting cuzk engine` lines before their last one (only the latest are kept)")
    return Placing(RunsApart(anchors, starts.dropped), why)


def only_fit(starts_s: tuple[float, ...], ends_s: tuple[float, ...]) -> tuple[float, ...] | None:
    """The start line of each run, where fewer runs wrote TIMELINE lines than start lines were
    read (runs that died at their start: a crash loop before cuzk came up), if only one choice
    fits; else None. Runs take start lines in order, and a run's lines (its latest offset
    `ends_s[i]` from its start line) end before the next start line, whichever run's, by at
    most `OFFSETS_BACK_S` (one daemon: a new process starts once the old one is gone). The
    choices are counted from the last run back, capped at 2: runs times start lines steps,
    at most `MAX_START_LINES` squared, once a file."""
    runs, lines = len(ends_s), len(starts_s)

    def fits(run: int, line: int) -> bool:
        return line + 1 == lines or \
            starts_s[line] + ends_s[run] <= starts_s[line + 1] + OFFSETS_BACK_S

    # ways[run][j]: the choices that fit for runs run.. with run `run` at start line j.
    ways = [[0] * lines for _ in range(runs)]
    ways[-1] = [int(fits(runs - 1, j)) for j in range(lines)]
    for run in range(runs - 2, -1, -1):
        later = 0  # the choices for the next run at a start line after j
        for j in range(lines - 1, -1, -1):
            if fits(run, j):
                ways[run][j] = later
            later = min(2, later + ways[run + 1][j])
    if sum(ways[0]) != 1:
        return None
    # One choice in all: at each run, one start line after the last run's has any.
    chosen, after = [], -1
    for run in range(runs):
        after = next(j for j in range(after + 1, lines) if ways[run][j])
        chosen.append(starts_s[after])
    return tuple(chosen)


def runs_note(path: str, lines: int, why_not: str, placed: list[str],
              flag: str = "--log ") -> str:
    """What is said, once, of a file read apart whose `lines` TIMELINE lines could not be placed
    by their own run's start line in the `placed` files (`placing`'s `why_not`); `flag`: how the
    command names a file it was given."""
    beside = ", ".join(f"{flag}{p}" for p in placed)
    return fmt.visible(
        f"{flag}{path}: {lines:,} TIMELINE line(s) placed in wall time by no start line of "
        f"{beside}: {why_not}; give cuzk's stdout and stderr as one file (`> cuzk.log 2>&1`) "
        "or the journal")
