"""cuzk's first waves: the syntheses begun before their circuit type's capacity hint was cached.

Who calls it: `gapwatch.cuzk.pipeline.PipelineFacts` (its view's `first_waves`, which
`gapwatch.cuzk.advice.stall_of` reads) and `gapwatch.cuzk.paths.PathsSeen` (`PathFacts`), each
feeding every tracing line; both ask `wave_of` whether a gap falls in a wave and say it with
`wave_words`; the paths ask `in_waves` how many of a stall's gaps do (judged as a whole);
`gapwatch.cuzk.prover.CuzkGap` asks `unpinned_by_design` for a gap's hint (its `is_pinned=false`
warnings in a wave said as by design).
Pure, bounded (`MAX_WAVES`).

Upstream (curio e0294b0f, cuzk unchanged since 2026-05-05), `cuzk-core/src/pipeline.rs`:
- one hint per circuit type, process statics (`OnceLock`): PoRep 32G/64G share one, SnapDeals
  32G/64G one, WinningPoSt and WindowPoSt one each (181-193, 197-204). A restart loses them all,
  so every run of cuzk has its own first waves, one per circuit type it proves;
- a synthesis that finds no hint logs `no capacity hint cached — first synthesis will grow
  organically circuit_id=...` (270) and is not pinned (275: pinned only with a hint);
- every synthesis, hinted or not, ends by caching the hint and logging `cached synthesis
  capacity hint circuit_id=...` (214-238, called at 355): the first such line of a type in a run
  is when its wave stopped growing; syntheses begun after it are hinted;
- a partition's synthesis then logs `partition synthesis complete ... is_pinned=...` (PoRep,
  2397-2402) or `SnapDeals partition synthesis complete ... is_pinned=...` (2866-2871). The
  wave's partitions finish after its hint is cached (the first of them caches it), and their
  a/b/c are copied to the GPU after that: a wave's window runs on to its last unpinned
  completion, not just to the hint.

Several daemons' logs (`gapwatch.cuzk.daemons`): each daemon's hints are its process's, so each
has its waves (`WavesByDaemon`); read as one, a PoSt-only cuzk starting beside the PoRep one
(both at boot, seconds apart) ended the PoRep daemon's first wave at its start.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from gapwatch.core import fmt
from gapwatch.core.models import Gap, LogEvent
from gapwatch.core.prover import UnpinnedByDesign, UnpinnedSpan
from gapwatch.cuzk.daemons import PerDaemon
from gapwatch.cuzk.log_lines import ANCHOR_MESSAGE, NO_CAPACITY_HINT_MESSAGE

HINT_CACHED = "cached synthesis capacity hint"
#: A partition synthesis's completion line -> the hint it used (pipeline.rs:2397-2402,
#: 2866-2871); no other synthesis logs whether it was pinned (PoSt and batches never are).
COMPLETIONS = {"partition synthesis complete": "porep",
               "SnapDeals partition synthesis complete": "snap"}
#: A hint -> the completion lines of its partitions (`COMPLETIONS` inverted): the warnings its
#: wave leaves unpinned by design. A hint with none (PoSt) covers no warning.
_LINES_OF_HINT = {hint: frozenset(n for n, h in COMPLETIONS.items() if h == hint)
                  for hint in set(COMPLETIONS.values())}
#: Waves kept: 4 hint types (pipeline.rs:181-193) x the latest 16 runs. A crash loop restarts
#: thousands of times; a report's gaps are matched against the latest waves, and older ones go.
MAX_WAVES = 64
#: Hint keys tracked at once in a run: upstream has 4; a log naming more circuits is not cuzk's.
MAX_OPEN = 8


def hint_of(circuit_id: str) -> str:
    """The hint a circuit shares (pipeline.rs:197-204: porep-32g and porep-64g one, snap-32g
    and snap-64g one): its id without the sector size (srs_manager.rs:46-57 prints them)."""
    return circuit_id.rsplit("-", 1)[0]


@dataclass(frozen=True, slots=True)
class FirstWave:
    """One run's first wave of one circuit type."""

    #: The run's `starting cuzk engine` (None: the log began after it).
    run_start_s: float | None
    #: The circuit the first unhinted line named (`porep-32g`), None where it named none.
    circuit: str | None
    start_s: float
    #: The last moment the wave was seen: its last unpinned completion, or its hint cached;
    #: None while no hint is cached yet (still open).
    end_s: float | None
    syntheses: int
    #: When its type's hint was first cached (None: not yet, or cuzk restarted first).
    hinted_s: float | None

    def holds(self, t_s: float) -> bool:
        return self.start_s <= t_s and (self.end_s is None or t_s <= self.end_s)


class _Wave:
    """A wave still being read (mutable), made a `FirstWave` when asked."""

    __slots__ = ("circuit", "start_s", "last_s", "syntheses", "done", "hinted_s")

    def __init__(self, circuit: str | None, start_s: float) -> None:
        self.circuit, self.start_s, self.last_s = circuit, start_s, start_s
        self.syntheses = self.done = 0
        self.hinted_s: float | None = None

    def frozen(self, run_start_s: float | None, end_s: float | None) -> FirstWave:
        return FirstWave(run_start_s, self.circuit, self.start_s, end_s, self.syntheses,
                         self.hinted_s)


class FirstWaves:
    """Fed every tracing line (`feed`); `waves()` gives the waves read, oldest first."""

    def __init__(self) -> None:
        self.unhinted = 0
        self._run_start_s: float | None = None
        #: This run's waves by hint, and the hints this run has cached.
        self._open: dict[str, _Wave] = {}
        self._hinted: set[str] = set()
        self._closed: deque[FirstWave] = deque(maxlen=MAX_WAVES)
        self._said: tuple[FirstWave, ...] | None = ()

    def feed(self, ev: LogEvent) -> None:
        name = ev.name
        if name == ANCHOR_MESSAGE:
            self._restart(ev.t_wall_s)
        elif name.startswith(NO_CAPACITY_HINT_MESSAGE):
            self._unhinted(ev)
        elif name == HINT_CACHED:
            self._cached(ev)
        elif ev.warning == "unpinned" and name in COMPLETIONS:
            self._completed(COMPLETIONS[name], ev.t_wall_s)

    def _circuit(self, ev: LogEvent) -> tuple[str | None, str]:
        circuit = ev.fields.get("circuit_id")
        text = circuit if isinstance(circuit, str) else None
        return text, hint_of(text) if text else "?"

    def _restart(self, t_s: float) -> None:
        """cuzk started again: its hints are gone (process statics). A wave with no hint yet
        ends here; one with its hint runs to its last completion, already read."""
        for wave in self._open.values():
            self._closed.append(wave.frozen(self._run_start_s,
                                            wave.last_s if wave.hinted_s is not None else t_s))
        self._open.clear()
        self._hinted.clear()
        self._run_start_s = t_s
        self._said = None

    def _unhinted(self, ev: LogEvent) -> None:
        self.unhinted += 1
        circuit, hint = self._circuit(ev)
        wave = self._open.get(hint)
        if wave is None:
            if len(self._open) >= MAX_OPEN:
                return
            wave = self._open[hint] = _Wave(circuit, ev.t_wall_s)
        wave.syntheses += 1
        wave.last_s = max(wave.last_s, ev.t_wall_s)
        self._said = None

    def _cached(self, ev: LogEvent) -> None:
        """Logged after every synthesis (pipeline.rs:355): only the first of a type counts."""
        _circuit, hint = self._circuit(ev)
        if hint in self._hinted or len(self._hinted) >= MAX_OPEN:
            return  # (past MAX_OPEN keys the log is not cuzk's: bounded, not followed)
        self._hinted.add(hint)
        wave = self._open.get(hint)
        if wave is not None:
            wave.hinted_s = ev.t_wall_s
            wave.last_s = max(wave.last_s, ev.t_wall_s)
            self._said = None

    def _completed(self, hint: str, t_s: float) -> None:
        """An unpinned partition synthesis done: one of its wave's, while it has some left."""
        wave = self._open.get(hint)
        if wave is None or wave.done >= wave.syntheses:
            return
        wave.done += 1
        wave.last_s = max(wave.last_s, t_s)
        self._said = None

    def waves(self) -> tuple[FirstWave, ...]:
        """Every wave kept, oldest first (at most `MAX_WAVES`): made again only after a change
        (a view is asked for far more often than a wave changes)."""
        if self._said is None:
            run = self._run_start_s
            live = [w.frozen(run, w.last_s if w.hinted_s is not None else None)
                    for w in self._open.values()]
            both = [*self._closed, *sorted(live, key=lambda w: w.start_s)]
            self._said = tuple(both[-MAX_WAVES:])
        return self._said


class WavesByDaemon:
    """`FirstWaves` a daemon, fed every tracing line (`feed`); `waves()` every daemon's, by
    their start."""

    def __init__(self) -> None:
        self._by = PerDaemon(FirstWaves)

    @property
    def unhinted(self) -> int:
        return sum(w.unhinted for w in self._by.each)

    def feed(self, ev: LogEvent) -> None:
        waves, _new = self._by.of_log(ev)
        waves.feed(ev)

    def feed_of(self, daemon: int, ev: LogEvent) -> None:
        """`feed`, its daemon told by the caller's router (no second one run a line)."""
        self._by.get(daemon).feed(ev)

    def waves(self) -> tuple[FirstWave, ...]:
        """Every daemon's waves kept, by their start (the latest `MAX_WAVES`)."""
        return self.waves_of(range(len(self._by.each)))

    def waves_of(self, daemons: Iterable[int]) -> tuple[FirstWave, ...]:
        """The waves of `daemons` (a gap's: `RestartsByDaemon.of_gpu`; another daemon's hints
        are its own process's and its syntheses feed another GPU), by their start."""
        each = self._by.each
        mine = [each[d] for d in daemons if d < len(each)]
        if len(mine) == 1:
            return mine[0].waves()
        every = sorted((w for one in mine for w in one.waves()), key=lambda w: w.start_s)
        return tuple(every[-MAX_WAVES:])


def wave_of(waves: tuple[FirstWave, ...], t_s: float | None) -> FirstWave | None:
    """The latest wave whose window holds `t_s`, or None."""
    if t_s is None:
        return None
    for wave in reversed(waves):
        if wave.holds(t_s):
            return wave
    return None


def in_waves(waves: tuple[FirstWave, ...], moments: Iterable[float]
             ) -> tuple[int, float | None]:
    """How many of `moments` some wave's window holds (as `wave_of` would find), and the latest
    such moment (None: none). Each moment is looked up in the windows' union, sorted, so a
    day's gaps against the kept waves take a bisection each, not a pass over every wave."""
    spans = sorted((w.start_s, math.inf if w.end_s is None else w.end_s) for w in waves)
    starts: list[float] = []
    ends: list[float] = []
    for start, end in spans:
        if ends and start <= ends[-1]:
            ends[-1] = max(ends[-1], end)
        else:
            starts.append(start)
            ends.append(end)
    count, latest = 0, None
    for t in moments:
        i = bisect_right(starts, t) - 1
        if i >= 0 and t <= ends[i]:
            count += 1
            if latest is None or t > latest:
                latest = t
    return count, latest


def wave_words(wave: FirstWave | None, unhinted: int) -> str:
    """A first wave in one sentence: which run and circuit, how many, how long, that it
    repeats. `wave` None: the log's first waves in general (`unhinted` syntheses in all)."""
    if wave is None:
        which, count, lasted = "after cuzk started", unhinted or "the", ""
    else:
        run = (f" of the run started at {fmt.clock(wave.run_start_s)}"
               if wave.run_start_s is not None else "")
        which = f"of {wave.circuit or 'a circuit type'}{run}"
        count = wave.syntheses or "the"
        lasted = (f", {fmt.duration(wave.hinted_s - wave.start_s)} from "
                  f"{fmt.clock(wave.start_s)} until its hint was cached"
                  if wave.hinted_s is not None else f", from {fmt.clock(wave.start_s)}")
    return (f"first wave {which}: {count} partition synthesis(es) began before the first of "
            f"their circuit type finished{lasted}, so had no capacity hint and were unpinned "
            "(pipeline.rs:181-204, 270-275); no setting: each circuit type's hint is lost at "
            "every restart, so it repeats after every restart of cuzk, for each circuit type's "
            "first proof")


#: How far before a gap's start a wave still counts for its hint: a gap's own evidence window
#: begins a few seconds before it (the detector's `evidence_before_s`); the core checks each
#: warning's time against the waves' spans, so reaching further only passes more spans.
WAVE_REACH_S = 60.0


def unpinned_by_design(waves: tuple[FirstWave, ...], start_s: float, end_s: float,
                       restarted: bool, latest_s: float) -> UnpinnedByDesign | None:
    """The first waves around a gap over [start_s, end_s] as the hint's `UnpinnedByDesign`
    (None: none): their syntheses are unpinned by design (pipeline.rs:270-275, no capacity hint
    yet), said as the new run's where the gap spans a restart (`restarted`), else its run's.
    `waves` are the gap's daemons' (`WavesByDaemon.waves_of`); each span covers its circuit
    type's completion lines only (`_LINES_OF_HINT`; any where the wave named no circuit), and a
    wave still open (no hint cached yet) runs to `latest_s` (the latest the gap's evidence
    reaches), not for ever: an open wave's span to infinity explained away every later
    unpinned partition as by design."""
    lo = start_s - WAVE_REACH_S
    spans = tuple(UnpinnedSpan(w.start_s, latest_s if w.end_s is None else w.end_s,
                               _lines_of(w))
                  for w in waves
                  if w.start_s <= end_s and (w.end_s is None or w.end_s >= lo)
                  and _lines_of(w) != frozenset())
    if not spans:
        return None
    run = "the new run's" if restarted else "the run's"
    return UnpinnedByDesign(spans, f"{run} first syntheses, unpinned by design (its first "
                                   "wave: no capacity hint yet)")


def _lines_of(wave: FirstWave) -> frozenset[str] | None:
    """The completion lines a wave's partitions log (None: its circuit not named, any)."""
    if wave.circuit is None:
        return None
    return _LINES_OF_HINT.get(hint_of(wave.circuit), frozenset())


def gap_moment(g: Gap) -> float:
    """The moment a gap is placed in a wave by: the latest `is_pinned=false` completion among
    its log events (that partition's synthesis is the wave's or not), else its start."""
    unpinned = [e.t_s for e in g.log_events if e.warning == "unpinned"]
    return max(unpinned) if unpinned else g.start_s
