"""Partitions per hour: the one throughput figure an operator compares across runs, one rule in
one place.

Who calls it: `gapwatch.offline.payoff.report_payoff` (the report's `partitions_per_hour`, its
payoff lines, `report --json`) and `gapwatch.offline.compare` (each side's whole-run
`partitions/h`, all GPUs and per GPU, and so the payoff's "achieved" ratio). Before this module
the report counted every partition of the log's table over the table's wall span and compare the
finished ones over the GPUs' working span: one run read 2,469/h in `report` and 2,444/h in
`compare`.

The rule: partitions whose GPU work ended (a GPU end in the log or `/status`) inside the GPUs'
working span, per hour of that span in which some GPU was read.
- Finished, by the end of their GPU work: a partition still on the GPU when the recording
  stopped is not yet throughput, and counting it made the figure depend on where the recording
  was cut; its GPU end (not synthesis, not the proof's return) is the GPU's work done, which is
  what closing the gaps speeds up.
- Over the working span (first busy reading to the last, of any GPU): the span the busy share
  and the payoff are over, so "2,444 → 3,860 partitions per hour" scales the rate the busy share
  belongs to; idle before the work started and after it ended is no part of either. The log's
  own span (which starts at the first synthesis) depends on how deep the pipeline is, and a
  window grid's on `--window`: neither is the run's.
- Less the stretches no GPU was read (the detector's NO_DATA: unknown, neither busy nor idle):
  those are not hours of no partitions, and a partition that ended in one is not counted.
- Per GPU (compare's per-GPU rows): the same over that GPU's span and stretches, with its own
  partitions (one with no GPU said is the only GPU's).
- Across a wall clock stepped back, wall times place nothing: every finished partition over the
  longest working span in data time (`GpuTotals.active_s`).
None (never 0) when there is no partition table, no partition whose GPU end is known, or no
span to divide by.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from gapwatch.core.detector import CLOCK_JUMP_S
from gapwatch.core.models import StateChange
from gapwatch.core.track import GpuTotals
from gapwatch.offline.compare_windows import NoData, Silences, all_silent, seconds_within

#: The key of one pseudo-GPU: the stretches in which no GPU was read.
_NONE_READ = -2


def partitions_per_hour(ends: Iterable[tuple[int | None, float | None]] | None,
                        totals: Sequence[GpuTotals], no_data: Sequence[NoData] = (),
                        stepped_back_s: float = 0.0, gpu: int | None = None) -> float | None:
    """Finished partitions per hour (see the module docstring) of all GPUs (`gpu` None) or of
    one. `ends`: each partition's (GPU, end of its GPU work), GPU and end None where the log
    did not say; None: no partition table. `no_data`: each GPU's stretches with no reading
    (`no_data_stretches`); `stepped_back_s`: `clock_stepped_back_s`."""
    if ends is None:
        return None
    mine = [t for t in totals if gpu is None or t.gpu == gpu]
    only = totals[0].gpu if len(totals) == 1 else None
    gpus = {t.gpu for t in mine}

    def counted(g: int | None) -> bool:
        return gpu is None or g == gpu or (g is None and only == gpu)

    if stepped_back_s > 0:
        hours_s = max((t.active_s for t in mine), default=0.0)
        n, known = _count(ends, lambda g, _t: counted(g))
        return n * 3600 / hours_s if hours_s > 0 and known else None
    firsts = [t.first_busy_s for t in mine if t.first_busy_s is not None]
    lasts = [t.last_busy_s for t in mine if t.last_busy_s is not None]
    if not firsts or not lasts:
        return None
    start, end_s = min(firsts), max(lasts)
    silent = all_silent(no_data, sorted(gpus))
    hours_s = end_s - start - seconds_within(silent, start, end_s)
    if not hours_s > 0:
        return None
    unread = Silences([NoData(_NONE_READ, a, b) for a, b in silent])
    n, known = _count(ends, lambda g, t: start <= t <= end_s and counted(g)
                      and not unread.inside(_NONE_READ, t))
    return n * 3600 / hours_s if known else None


def _count(ends: Iterable[tuple[int | None, float | None]],
           takes: Callable[[int | None, float], bool]) -> tuple[int, bool]:
    """The partitions `takes` (their GPU, the end of their GPU work), and whether any GPU end
    was known at all: none known (a log without its TIMELINE anchor) is no figure, never 0.0
    partitions an hour (`compare` called that a change against a side with them). One pass:
    `ends` may be a spool read from disk."""
    n, known = 0, False
    for g, t in ends:
        if t is not None:
            known = True
            n += takes(g, t)
    return n, known


def no_data_stretches(states: Sequence[StateChange]) -> list[NoData]:
    """Each GPU's stretches with no reading: from a NO_DATA state (at the GPU's last reading) to
    the GPU's next state (its readings back), or on to the end; the states taken in data order
    (a wall clock stepped back would pair a NO_DATA state with a state before it)."""
    out: list[NoData] = []
    since: dict[int, float] = {}
    for st in sorted(states, key=lambda x: x.t_mono_ns):
        start = since.pop(st.gpu, None)
        if start is not None:
            out.append(NoData(st.gpu, start, st.t_wall_s))
        if st.state == "NO_DATA":
            since[st.gpu] = st.t_wall_s
    out += [NoData(gpu, start, float("inf")) for gpu, start in since.items()]
    return out


class WallSteps:
    """The largest step back of the wall clock so far, fed a run's states as they come (each
    GPU's in its data order): `clock_stepped_back_s`'s rule, for the offline loop, which judges
    the prover's words by wall time as they are said (`gapwatch.offline.detect`)."""

    __slots__ = ("_last", "worst_s")

    def __init__(self) -> None:
        self._last: dict[int, float] = {}
        #: The largest step back seen (0.0: none).
        self.worst_s = 0.0

    def add(self, st: StateChange) -> None:
        prev = self._last.get(st.gpu)
        if prev is not None and prev - st.t_wall_s > CLOCK_JUMP_S:
            self.worst_s = max(self.worst_s, prev - st.t_wall_s)
        self._last[st.gpu] = st.t_wall_s


def clock_stepped_back_s(states: Sequence[StateChange]) -> float:
    """The largest step back of the wall clock inside a run (0.0: none): a GPU's states in
    data order whose wall times go back by more than the detector's `CLOCK_JUMP_S` (at a
    jump the detector says NO_DATA at the last reading, then the next state at the new wall
    time)."""
    steps = WallSteps()
    for st in sorted(states, key=lambda x: x.t_mono_ns):
        steps.add(st)
    return steps.worst_s
