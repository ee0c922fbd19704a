"""A `--log` that does not belong to the recording: its lines outside the recording's span.

Who calls it: `gapwatch.offline.detect.detect_records` (with the `--log` files' events as it merges
them, and for those left after the last sample), `gapwatch.offline.replay_logs` (a replay's, the
same way); `gapwatch.offline.report` shows it the events as
they are parsed (`observe`), before the detector reads them back from disk. A log from another day
(two days before the recording) once switched the report's advice to a pinned-pool setting citing a
line of that other day; now the lines outside the recording's span, give or take `MARGIN_S`, are not
fed to the detector: not used for causes, advice or partition figures. One line per file says how
many and how far apart. A file's own span is its bulk's (`_File`): a few lines from a clock
years off, first or last in the file, neither make it another run's log nor drop its startup
lines; they are said. Kept from a file that does overlap the span: its startup lines before it
(the settings cuzk logs once at start, `gapwatch.cuzk.settings.STARTUP_FIELDS`, and its deprecation
warnings), which describe the run being recorded. It also carries what reading the files found
to say of them (from `gapwatch.logs.files`), said with its own notes: a file whose C++ lines
could not be placed beside the others' (`unplaced`), in words that depend on what the recording
holds (its own lock regions stand in for that file's: `notes(recorded_locks=)`), and a file whose
TIMELINE lines could not all be placed by their own engine run's start line (`runs_unplaced`),
and a file that is no prover log at all (`not_logs`: `gapwatch.logs.not_a_log`).
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from hashlib import blake2b
from typing import TypeVar

from gapwatch.core import fmt
from gapwatch.core.models import LogEvent
from gapwatch.cuzk.log_lines import RUN_START_MESSAGES, Unplaced, starts_a_run, unplaced_note
from gapwatch.cuzk.settings import DEPRECATED, STARTUP_FIELDS

T = TypeVar("T")

#: Lines this close to the recording's ends still count (evidence reaches a little before a gap).
MARGIN_S = 300.0
_STARTUP = frozenset(STARTUP_FIELDS) | {"CUDA pinned memory pool initialized",
                                        "pipeline GPU worker started"}


def report_span(started_wall_s: float, since_s: float | None, until_s: float | None,
                windowed: bool, end_s: float | None, stepped_back: bool
                ) -> tuple[float | None, float | None]:
    """The one rule for the span a report covers (from, until; None: open on that side): which
    of the prover's words are the report's (`gapwatch.offline.detect._Side`, judging them as
    they are said, `end_s` None until the data has ended) and which partitions its table keeps
    (`gapwatch.offline.report.report_span`). A window's: from its start (`since_s`, or the
    recording's if later) to the end of the data read (`end_s`; `until_s` while not known),
    the log read around it (`MARGIN_S` each side, for the gaps' evidence) adding nothing of
    before or after it. A whole report's: the recording's, `MARGIN_S` either side (as the
    `--log` lines fed, `LogSpan.kept`): a recording whose log begins before its samples lists
    the PoSt and the partitions of its first minute alike. Where wall times place nothing (a
    wall clock stepped back inside the run, as `throughput` says; no start known: a trace
    CSV's times counted from 0), a window's own bounds only, a whole report's none: the
    recording's own log after a step back of an hour was left out of the PoSt list, its
    partitions kept in the table."""
    if stepped_back or started_wall_s <= 0:
        return (since_s, until_s) if windowed else (None, None)
    start_s = started_wall_s if since_s is None else max(started_wall_s, since_s)
    if windowed:
        return start_s, end_s if end_s is not None else until_s
    return start_s - MARGIN_S, None if end_s is None else end_s + MARGIN_S


def log_read_from(span: LogSpan | None, since_s: float | None) -> float | None:
    """Where the log events a report feeds begin, the daemon's startup lines aside: a `--log`
    file's `MARGIN_S` before the span's start (`LogSpan.kept`), else a window's recorded ones
    at its start (`since_s`); None: from the start of what was recorded (a whole recording
    with its log inside, or none). What the partition timeline is told
    (`TimelineBuilder(read_from_s=)`): a run begun before it has first waves it cannot tell."""
    if span is not None and span.files and span.start_s > 0:
        return span.start_s - MARGIN_S
    return since_s


def is_startup(ev: LogEvent) -> bool:
    """A line cuzk logs once as it starts (its settings, its workers, deprecation warnings):
    it describes the run after it, however long before a window it was."""
    return ev.kind == "tracing" and (ev.name in _STARTUP or DEPRECATED in ev.name)


#: At most this many lines at either end of a file's times may lie far from its other lines
#: and not move its span (`_File`), and never, both ends together, as many as the rest (a file
#: of two lines has none, of three one at most).
STRAY_MAX = 16
#: How far beyond the next line's time a line at either end must be to be a stray: a clock
#: set wrong is wrong by years (an RTC before NTP sets it), while the daemon's start an hour
#: before its first work, or a file of another day, are honest lines and move the span. Far
#: is not enough (`_File`): an RTC's lines are strays where out of time order and holding no
#: daemon start; the daemon's own start line from a clock set ahead (systemd before NTP) is
#: read as a run of its own, counted as a line after the recording, not called a stray, the
#: span still the bulk's: nothing of the recording's lines is lost.
STRAY_GAP_S = 86_400.0  # "more than a day" in the note (`LogSpan._stray_notes`)
#: A file's sets of marked times (`_File.behind`, `ahead`, `starts`) are cut back to the times
#: it holds past this many (a file of a thousand restarts, or one whose times only fall).
_MARKED_MAX = 4 * (STRAY_MAX + 1)


@dataclass
class _File:
    """A file's timed lines as the span judges it: how many, its `STRAY_MAX` + 1 earliest and
    latest times (in any order they are seen: a file is read in the order written, in two
    processes when large, and a line from a clock set years ahead may be its first), and what
    `LogSpan.kept`/`after_end` found. Its span is its bulk's (`first_s`, `last_s`): one stray
    line first or last made a file of this recording "not this recording's log" (its span
    printed backwards), or another run's (its startup lines, the budget, dropped).

    Which far lines are strays: only those implausible as a run of their own. A clock set
    wrong, then corrected, writes lines out of time order with the file's others: set ahead,
    the far-late lines are written before lines a day earlier than them (`ahead`); set behind,
    the far-early lines after lines a day later (`behind`). Honest runs only jump forward: a
    new run appended to an old run's log (an idle daemon's few startup lines days after the
    old run's bulk), a daemon started on Friday and working on Monday; both were called
    strays, the appended run's file judged another run's and its startup lines (the budget)
    dropped. And lines holding a daemon's start (`log_lines.starts_a_run`) are a run of their
    own in any order (rotated pieces joined newest first): never strays.

    One jump back is read one way, never both: the line behind (a clock set behind) or the
    lines ahead of it (one set ahead). Both were taken: a run's Friday bulk, Monday's work
    in time order days later, then one line of 2020 last made Monday's lines strays with it,
    the file's span ending on Friday ("not this recording's log"). The reading kept is the
    one leaving the fewest strays with the rest in time order (`_in_order_without`: the 2020
    line alone); where none does (too many far lines for the bound), the most the ends may
    give, as before."""

    lines: int = 0
    #: The earliest times and the latest, each in order (the same whatever order the lines
    #: came in: a file parsed in two processes is the file parsed in one).
    low: list[float] = field(default_factory=list)
    high: list[float] = field(default_factory=list)
    #: Times among `low` of lines written after a line more than `STRAY_GAP_S` later, each
    #: with the earliest such later line written before it (what its jump back is from),
    #: times among `high` of lines written before a line more than `STRAY_GAP_S` earlier,
    #: and times of lines holding a daemon's start (each may hold times no longer held:
    #: `_mark`, `_mark_behind`).
    behind: dict[float, float] = field(default_factory=dict, compare=False, repr=False)
    ahead: set[float] = field(default_factory=set, compare=False, repr=False)
    starts: set[float] = field(default_factory=set, compare=False, repr=False)
    before: int = 0
    after: int = 0
    belongs: bool = True
    #: The earliest line written before a line more than `STRAY_GAP_S` earlier than it where
    #: that earlier line is no longer in `behind` (never among `low`, or cut back): a jump
    #: back whose line behind is never a stray, so only the lines ahead can explain it.
    far_before_kept_s: float = field(default=float("inf"), compare=False, repr=False)
    #: (`lines` when worked out, the bulk's first and last time): `_bulk`.
    _bulk_of: tuple[int, float, float] = field(default=(-1, 0.0, 0.0), compare=False,
                                               repr=False)

    def see(self, t: float, start: bool = False) -> None:
        """One line's time, and whether it holds a daemon's start (the hot path: every
        `--log` event)."""
        jumped_back = bool(self.high) and t < self.high[-1] - STRAY_GAP_S
        self._hold(t)
        if jumped_back:
            self._jumped_back(t)
        if start:
            self._mark(self.starts, t)

    def _hold(self, t: float) -> None:
        """Count the line, its time kept where among the earliest or latest."""
        self.lines += 1
        low, high = self.low, self.high
        if len(high) <= STRAY_MAX:
            insort(low, t)
            insort(high, t)
            return
        if t > high[0]:
            insort(high, t)
            del high[0]
        if t < low[-1]:
            insort(low, t)
            del low[-1]

    def _jumped_back(self, t: float) -> None:
        """A line more than `STRAY_GAP_S` before a line written earlier (rare: a clock
        corrected): it may be `behind`, and the latest lines it is that far before may be
        `ahead`; which of the two it is, `_ends_cut` reads once the file is seen."""
        far_s = _far_after(self.high, t)
        if t <= self.low[-1]:
            self._mark_behind(t, far_s)
        else:
            self.far_before_kept_s = min(self.far_before_kept_s, far_s)
        for later in reversed(self.high):
            if later <= t + STRAY_GAP_S:
                break
            self._mark(self.ahead, later)

    def _mark_behind(self, t: float, far_s: float) -> None:
        """`t` is `behind` a line as early as `far_s`; cut back as `_mark`, what is cut kept
        in `far_before_kept_s` (its line no longer held is no stray)."""
        self.behind[t] = min(self.behind.get(t, far_s), far_s)
        if len(self.behind) > _MARKED_MAX:
            self._cut_behind()

    def _cut_behind(self) -> None:
        """`behind` cut back to the times held, each cut one's jump kept in
        `far_before_kept_s`: a line no longer held is never a stray, its jump back explained
        by the lines ahead or by none."""
        held = set(self.low + self.high)
        for t in [t for t in self.behind if t not in held]:
            self.far_before_kept_s = min(self.far_before_kept_s, self.behind.pop(t))

    def _mark(self, marked: set[float], t: float) -> None:
        marked.add(t)
        if len(marked) > _MARKED_MAX:
            marked.intersection_update(self.low + self.high)

    def merge(self, other: _File) -> None:
        """`other`'s lines as if seen here (the rest of the file, parsed in another process:
        every line of it written after every line here)."""
        if self.high and other.low:
            for t in other.low:
                if t < self.high[-1] - STRAY_GAP_S:
                    far_s = _far_after(self.high, t)
                    self.behind[t] = min(self.behind.get(t, far_s), far_s)
            for t in self.high:
                if t > other.low[0] + STRAY_GAP_S:
                    self.ahead.add(t)
        self.lines += other.lines
        self.low = sorted(self.low + other.low)[:STRAY_MAX + 1]
        self.high = sorted(self.high + other.high)[-(STRAY_MAX + 1):]
        held = self.low + self.high
        for mine, theirs in ((self.ahead, other.ahead), (self.starts, other.starts)):
            mine |= theirs
            mine.intersection_update(held)
        for t, far_s in other.behind.items():
            self.behind[t] = min(self.behind.get(t, far_s), far_s)
        self.far_before_kept_s = min(self.far_before_kept_s, other.far_before_kept_s)
        self._cut_behind()

    def _cuts(self, ends: list[float], out_of_order: set[float]) -> list[int]:
        """How many of `ends` (from the extreme inwards) may be strays, each count: beyond
        `STRAY_GAP_S` of the rest, each written out of time order with the file
        (`out_of_order`: `behind` for the earliest, `ahead` for the latest), none holding a
        daemon's start; 0 always."""
        cuts = [0]
        for i in range(1, min(STRAY_MAX, len(ends) - 1) + 1):
            t = ends[i - 1]
            if t not in out_of_order or t in self.starts:
                break
            if abs(ends[i] - t) > STRAY_GAP_S:
                cuts.append(i)
        return cuts

    def _ends_cut(self) -> tuple[int, int]:
        """How many strays at the early end, and at the late end: the most the two ends may
        give together while fewer than the rest (each end's alone once stripped 16 of 33
        lines, both together 32: the bulk one line). Where two ways give as many, neither end
        is told from the other's bulk: no strays."""
        ways = [(early, late) for early in self._cuts(self.low, set(self.behind))
                for late in self._cuts(self.high[::-1], self.ahead)
                if 2 * (early + late) < self.lines]
        in_order = [way for way in ways if self._in_order_without(*way)]
        if in_order:  # each jump back read one way: the fewest strays that explain them all
            fewest = min(early + late for early, late in in_order)
            best = [way for way in in_order if sum(way) == fewest]
        else:
            most = max(early + late for early, late in ways)
            best = [way for way in ways if sum(way) == most]
        return best[0] if len(best) == 1 else (0, 0)

    def _in_order_without(self, early: int, late: int) -> bool:
        """Whether the lines left once the `early` earliest and `late` latest are taken as
        strays jump back by no more than `STRAY_GAP_S`: every jump back seen has its line
        behind among the early strays, or every line it is behind among the late ones."""
        last_kept_s = self.high[-1 - late]
        if self.far_before_kept_s <= last_kept_s:
            return False
        strays = set(self.low[:early])
        return all(t in strays or far_s > last_kept_s for t, far_s in self.behind.items())

    def _bulk(self) -> tuple[float, float]:
        """The bulk's earliest and latest times, worked out once for the lines seen (asked for
        each event `after_end` sees past the span)."""
        if self._bulk_of[0] != self.lines:
            early, late = self._ends_cut()
            self._bulk_of = (self.lines, self.low[early], self.high[-1 - late])
        return self._bulk_of[1], self._bulk_of[2]

    @property
    def first_s(self) -> float:
        """The bulk's earliest time: the earliest line's, unless strays lie before it."""
        return self._bulk()[0]

    @property
    def last_s(self) -> float:
        """The bulk's latest time: the latest line's, unless strays lie after it."""
        return self._bulk()[1]

    @property
    def earliest_s(self) -> float:
        return self.low[0]

    @property
    def latest_s(self) -> float:
        return self.high[-1]

    def strays(self) -> list[float]:
        """The stray lines' times, earliest first."""
        early, late = self._ends_cut()
        return sorted([*self.low[:early], *self.high[len(self.high) - late:]])


def _far_after(high: list[float], t: float) -> float:
    """The earliest of `high` (sorted) more than `STRAY_GAP_S` after `t`: of the lines a
    line at `t` jumps back from, the one a stray reading of the later lines must reach."""
    return high[bisect_right(high, t + STRAY_GAP_S)]


#: One timed line in `REPEAT_SAMPLE` is remembered to tell a `--log` that repeats another's lines,
#: at most `REPEAT_KEYS` of them (a few MB): a day's log is not held. Past that the sample is
#: thinned (`Repeats.sample` doubles), never closed.
REPEAT_SAMPLE = 8
REPEAT_KEYS = 100_000


@dataclass
class Repeats:
    """Lines one `--log` file holds again from another (a copy of part of it given beside
    it): each is read twice, its events counted twice. Told by a sample of the timed lines
    (their time and text), never by times alone: cuzk's stdout and stderr overlap in time
    and repeat nothing. Watched only with two `--log` files or more (`parse_logs_for`): the
    one log of a day costs nothing for it."""

    seen: dict[int, str] = field(default_factory=dict)
    #: (the file repeating, the file first holding) -> repeats (each sampled one counts for
    #: the lines its sample stands for), first and last time.
    found: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    #: One key in `sample` is remembered: `REPEAT_SAMPLE`, doubled each time `seen` is full.
    sample: int = field(default_factory=lambda: REPEAT_SAMPLE)  # read when made (tests set it)

    def see(self, ev: LogEvent) -> None:
        if ev.time_source not in ("line", "prefix") or not ev.raw:
            return
        # The same in every process and run (`hash` of a str is not): the same report twice.
        # 64 bits: a 32-bit crc of two logs of a million lines each, sharing none, matched
        # by chance ~17 times (sampled 1 in 8), and the note said lines were counted twice.
        key = int.from_bytes(blake2b(f"{ev.t_wall_s!r} {ev.raw}".encode("utf-8", "replace"),
                                     digest_size=8).digest())
        if key % self.sample:
            return
        first = self.seen.get(key)
        if first is None:
            self.seen[key] = ev.stream
            if len(self.seen) > REPEAT_KEYS:
                self._thin()
        elif first != ev.stream:
            got = self.found.setdefault((ev.stream, first), [0, ev.t_wall_s, ev.t_wall_s])
            got[0] += self.sample
            got[2] = ev.t_wall_s

    def _thin(self) -> None:
        """Keep one key in twice as many. The files are seen one after the other, and a sample
        that took no key once full (a day's log of 8 million lines filled it in ~2.3 h) never
        saw a later file's lines: a copy of today's log after yesterday's was read twice,
        nothing said. Thinned by the key itself, a line's copies are kept or dropped alike,
        and the sample covers every file in the same room (amortised: each thinning halves
        what the next one has to walk before it comes)."""
        while len(self.seen) > REPEAT_KEYS:
            self.sample *= 2
            self.seen = {k: s for k, s in self.seen.items() if k % self.sample == 0}

    def notes(self) -> list[str]:
        return [f"--log {again} repeats lines of --log {first} ({_day(t0)} to {_day(t1)}; "
                f"about {n:.0f} of them): a copy of it given beside it? Each is read "
                "twice, its events counted twice (failures, partitions); give each line once"
                for (again, first), (n, t0, t1) in self.found.items()]


@dataclass
class LogSpan:
    """Which `--log` events fall inside the recording (see the module docstring)."""

    start_s: float
    files: dict[str, _File] = field(default_factory=dict)
    #: A windowed report (`--since`/`--until`): `start_s` is the window's start, and the notes
    #: speak of the window, not of the recording.
    windowed: bool = False
    #: Lines a file repeats from another; None: not watched (one `--log` file).
    repeats: Repeats | None = None
    #: The files whose C++ lines could not be placed beside the other files' lines
    #: (`gapwatch.logs.files.read_order`), known once the files are read; each said in one
    #: line (`log_lines.unplaced_note`).
    unplaced: list[Unplaced] = field(default_factory=list)
    #: One line per file whose TIMELINE lines could not all be placed by their own engine
    #: run's start line (`gapwatch.cuzk.engine_runs.runs_note`), known once the files are read.
    runs_unplaced: list[str] = field(default_factory=list)
    #: One line per file that is no prover log: none of its lines understood, or a recording
    #: given as a log (`gapwatch.logs.not_a_log`), known once the files are read.
    not_logs: list[str] = field(default_factory=list)

    def observe(self, ev: LogEvent) -> None:
        """See one `--log` event (all of them, before `kept`; in the order parsed, which is
        each file's order, not time's): each file's times (`_File`), and lines a file repeats
        from another (`Repeats`)."""
        if self.repeats is not None:
            self.repeats.see(ev)
        f = self.files.get(ev.stream)
        t = ev.t_wall_s
        if f is None:
            self.files[ev.stream] = f = _File()
        elif t >= f.high[-1] and len(f.high) > STRAY_MAX:
            # `_File.see`'s common case inlined (every `--log` event): a new latest line,
            # before no line of the file.
            f.lines += 1
            f.high.append(t)
            del f.high[0]
            if ev.name in RUN_START_MESSAGES and starts_a_run(ev):  # the name first: cheap
                f._mark(f.starts, t)
            return
        f.see(t, ev.name in RUN_START_MESSAGES and starts_a_run(ev))

    def observed_after(self, later: dict[str, _File]) -> None:
        """What another span `observe`d of the events after all of this one's (the rest of a
        file parsed in another process, `gapwatch.offline.log_split`), as if seen here."""
        for stream, f in later.items():
            mine = self.files.get(stream)
            if mine is None:
                self.files[stream] = f
            else:
                mine.merge(f)

    def kept(self, items: Iterable[tuple[LogEvent, T]]) -> Iterator[tuple[LogEvent, T]]:
        """`items`, each an event and what goes with it (the detector's copy of it), sorted by
        time, every event `observe`d, without those before the recording's start: a file with
        no line from the start on is dropped whole, another keeps its startup lines. Read
        lazily: a day's events are never held."""
        if self.start_s <= 0:
            yield from items  # no start known (a trace CSV): nothing to judge by
            return
        cut = self.start_s - MARGIN_S
        for f in self.files.values():
            f.belongs = f.last_s >= cut
        for item in items:
            ev = item[0]
            f = self.files[ev.stream]
            if ev.t_wall_s >= cut or (f.belongs and is_startup(ev)):
                yield item
            else:
                f.before += 1

    def after_end(self, ev: LogEvent, end_s: float | None) -> bool:
        """Whether an event left after the last sample is still inside the span (else counted)."""
        if end_s is None or ev.t_wall_s <= end_s + MARGIN_S:
            return True
        f = self.files.get(ev.stream)
        if f is not None:
            f.after += 1
            if f.first_s > end_s + MARGIN_S:
                f.belongs = False
        return False

    def used(self, events: Iterable[LogEvent], end_s: float | None) -> Iterator[LogEvent]:
        """The `--log` events (sorted by time, every one `observe`d) that a recording's
        outputs use, by the rule the report's detector feeds them by (`kept`, then
        `after_end` past the data's end `end_s`): the Perfetto export drew every event of
        the files, a log of another day's lines in the trace, its origin 207 days back,
        while the report said "not this recording's log" and used none of them. Called on
        a copy of the report's span (it counts what it leaves out, as the detector's did)."""
        for ev, _ in self.kept((ev, None) for ev in events):
            if self.after_end(ev, end_s):
                yield ev

    def notes_before_reading(self, unplaced: bool = True) -> list[str]:
        """The `notes` line of each file that ends before the span starts, of each whose
        TIMELINE lines could not all be placed by their run's start line (`runs_unplaced`),
        and (`unplaced`) of each whose C++ lines could not be placed, said as where no
        recorded lock region stands in for them: known before any event is read (all its
        files `observe`d), a replay says them as it starts, not at the end of an hour played
        at the recorded pace."""
        said = [*self.not_logs, *(unplaced_note(u) for u in self.unplaced if unplaced),
                *self.runs_unplaced]
        if self.start_s <= 0:
            return said
        cut = self.start_s - MARGIN_S
        return [*said, *self._stray_notes(),
                *(self._unused(path, f, None) for path, f in self.files.items()
                  if f.last_s < cut)]

    def _stray_notes(self) -> list[str]:
        """One line per file with stray lines (`_File.strays`): how many, and when."""
        out = []
        for path, f in self.files.items():
            strays = f.strays()
            if not strays:
                continue
            when = ", ".join(_day(t) for t in strays[:3]) + (", ..." if len(strays) > 3 else "")
            out.append(f"--log {path}: {len(strays)} line(s) timed more than a day from "
                       f"its other lines and written out of time order with them ({when}): "
                       "a clock set wrong while written? The file is judged by its other lines "
                       f"({_day(f.first_s)} to {_day(f.last_s)})")
        return out

    def notes(self, end_s: float | None, recorded_locks: int | None = None) -> list[str]:
        """One line per file with lines outside the span: how many, and how far apart; one
        per file repeating another's lines; one per file whose C++ lines could not be
        placed where no recorded lock region stands in for them (`recorded_locks`: how many
        the recording held that no file did, `LinesOnce.locks_kept`; where some do,
        `stood_in_notes` says it); one per file whose TIMELINE lines could not all be
        placed by their run's start line."""
        out = [*self.not_logs,
               *(unplaced_note(u) for u in self.unplaced if not recorded_locks),
               *self.runs_unplaced,
               *(self.repeats.notes() if self.repeats is not None else []),
               *(self._stray_notes() if self.start_s > 0 else [])]
        for path, f in self.files.items():
            if not (f.before or f.after):
                continue
            if not f.belongs:
                out.append(self._unused(path, f, end_s))
                continue
            parts = []
            if f.before:
                parts.append(f"{f.before} line(s) before it (from {_day(f.earliest_s)}, "
                             f"{fmt.far(self.start_s - f.earliest_s)} earlier)")
            if f.after:
                parts.append(f"{f.after} after it (to {_day(f.latest_s)})")
            if self.windowed:
                continue  # a window leaves the rest of the log out on purpose
            out.append(f"--log {path}: {' and '.join(parts)} the recording's span: not used "
                       "for causes, advice or partitions (its startup lines kept)")
        return out

    def stood_in_notes(self, recorded_locks: int | None) -> list[str]:
        """One line per file whose C++ lines could not be placed, where the recording's own
        lock regions (`recorded_locks`) stand in for them: the partitions' lock times are
        the same as without the files, so `report.said_of_input` says it as a note on the
        input, not as a problem that changes what the report means (the H100 e2e run's
        `report rec --log stdout --log stderr` led with a WARNING over a table identical to
        the recording's alone)."""
        if not recorded_locks:
            return []
        return [unplaced_note(u, recorded_locks=recorded_locks) for u in self.unplaced]

    def _unused(self, path: str, f: _File, end_s: float | None) -> str:
        """The line for a file none of whose events is used (outside the window, or another
        run's log)."""
        if self.windowed:
            return (f"--log {path}: no line within the window (its lines {_day(f.first_s)} to "
                    f"{_day(f.last_s)}); none of its events is used")
        far = (self.start_s - f.last_s if f.last_s < self.start_s
               else f.first_s - (end_s or f.first_s))
        side = "before" if f.last_s < self.start_s else "after"
        return (f"--log {path}: not this recording's log: its lines ({_day(f.first_s)} to "
                f"{_day(f.last_s)}) end {fmt.far(far)} {side} the recording; none of its events "
                "is used")

def _day(t: float) -> str:
    """Date and time: a log from another day must say its day."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")

