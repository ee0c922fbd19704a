"""The latest round of /proc readings per GPU: what the store shows and a gap's evidence cites.

Who calls it: the store (`gapwatch.engine.store.SeriesStore.set_procmem`: the process panel,
`/metrics`) and the evidence buffer (`gapwatch.core.evidence`: the processes a gap's `copies`
evidence lists). Pure.

All readings of one GPU in one round share a `t_mono_ns` (`models.ProcessMemory`); a round of
another time, earlier or later, replaces the one held. Why a class of its own: a recording may
hold any number of readings of one round (40,000 made-up pids at one time): the store looked
through its whole round for each reading (57 s of `replay --headless` for those 40,000,
quadratic), the evidence kept every one, and each gap's evidence carried them all. A round
holds at most `MAX_PROCS_PER_ROUND` processes (NVML lists those using the GPU: a few, or one
per MPS client), each reading taken in constant time; a pid read twice in a round keeps its
latest reading.
"""

from __future__ import annotations

from gapwatch.core.models import ProcessMemory

#: Processes one GPU's round holds at most (the rest of the round is not kept, counted).
MAX_PROCS_PER_ROUND = 256


class ProcRounds:
    """The latest round per GPU, keyed by pid, at most `MAX_PROCS_PER_ROUND` a round."""

    __slots__ = ("_t_mono_ns", "_rounds")

    def __init__(self) -> None:
        self._t_mono_ns: dict[int, int] = {}
        self._rounds: dict[int, dict[int, ProcessMemory]] = {}

    def add(self, reading: ProcessMemory) -> bool:
        """Take a reading; False when it is not kept (a process beyond the round's bound: the
        caller counts it). A reading of another time starts a new round, earlier or later: one
        reader reads them in time order, and a round held because its time was later (one
        junk reading of a recording at 2^63 ns) would have kept every real round out."""
        gpu, t = reading.gpu, reading.t_mono_ns
        if self._t_mono_ns.get(gpu) != t:
            self._t_mono_ns[gpu] = t
            per = self._rounds[gpu] = {}
        else:
            per = self._rounds[gpu]
        if reading.pid not in per and len(per) >= MAX_PROCS_PER_ROUND:
            return False
        per[reading.pid] = reading
        return True

    def of(self, gpu: int) -> tuple[ProcessMemory, ...]:
        """The GPU's latest round (empty before its first)."""
        per = self._rounds.get(gpu)
        return tuple(per.values()) if per else ()

    def all(self) -> dict[int, tuple[ProcessMemory, ...]]:
        """Every GPU's latest round."""
        return {gpu: tuple(per.values()) for gpu, per in self._rounds.items()}
