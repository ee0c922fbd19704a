"""The prover behind the GPU work, as the core sees it: a small protocol a prover package
implements, and `NoProver`, what the core does without one.

Who calls it: `gapwatch.core.detector` (feeds the prover every log event and status snapshot
and asks it about each gap), `gapwatch.core.evidence` (one `ProverGap` per gap) and the
explainer (`gapwatch.core.explain`: the prover's cause and its words join the hint). A prover
package (e.g. `gapwatch.cuzk.prover.CuzkProver`) implements it; the composition roots
(`gapwatch.engine.runtime`, `gapwatch.offline.detect`) pick one and hand it to the detector.

What the core asks, and nothing more:
- what the prover was doing around a gap (`ProverGap.view`: its cause, the snapshots, the facts
  in words and, typed, those its advice reads back, the phrase the hint says, and where it
  left buffers unpinned by design);
- which status snapshots concern a GPU (`concerns`);
- nothing of the host samples it is fed (`feed_host`) but what its own facts make of them;
- that the data ended (`end`: what was never seen again, such as work queued and never taken,
  can then be said of the gaps still open to late evidence);
- what it has learnt about its pipeline so far (`facts`: an immutable view of the package's own
  type, kept by the store for the dashboard, `/metrics` and the advice), and what it lacks
  (`lacks`: said where a user reads why a cause is missing).

Without a prover (any CUDA process: NVML and the copy trace) `NoProver` answers: no cause, no
facts, and what is missing. Pure: no I/O, no clocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from msgspec import UNSET, UnsetType

from gapwatch.core.evidence_types import ProverGapFacts, ProverState
from gapwatch.core.models import HostSample, LogEvent, ProcessMemory, ProverStatus


@dataclass(frozen=True, slots=True)
class UnpinnedSpan:
    """A span of wall time in which the prover left buffers unpinned by design, and which of
    its warning lines (their event names: e.g. cuzk's PoRep and SnapDeals completions are
    apart, each circuit type its own first wave) it covers; `lines` None: any."""

    from_s: float
    until_s: float
    lines: frozenset[str] | None = None

    def holds(self, t_s: float, line: str) -> bool:
        return self.from_s <= t_s <= self.until_s and (self.lines is None or line in self.lines)


@dataclass(frozen=True, slots=True)
class UnpinnedByDesign:
    """Where the prover leaves buffers unpinned by design (e.g. cuzk's first syntheses of a run,
    before its pinned pool is used): the spans it did so (of the gap's own daemon, each bounded),
    and the words that say why. A gap's `is_pinned=false` warnings each inside a span that
    covers its line are said in these words, not as pageable memory to look into
    (`gapwatch.core.hints.memory_phrases`)."""

    spans: tuple[UnpinnedSpan, ...]
    words: str

    def holds(self, t_s: float, line: str) -> bool:
        return any(span.holds(t_s, line) for span in self.spans)


@dataclass(frozen=True, slots=True)
class ProverView:
    """What the prover says about one gap: its cause (None: it gives none), the snapshots of the
    evidence window as the gap keeps them, the facts behind the cause in plain words, and the
    phrase the hint says ("" for none)."""

    cause: str | None
    states: list[ProverState]
    evidence: list[str]
    words: str = ""
    #: The prover failed just before or during the gap (e.g. a panic, a CUDA error): said in
    #: the hint after the cause ("" for none).
    error_words: str = ""
    #: The facts of `evidence` its package's advice reads, typed (`Gap.prover_facts`); UNSET:
    #: the prover decides none (its words are all there is).
    facts: ProverGapFacts | UnsetType = UNSET
    #: Unpinned syntheses around the gap the prover expects (None: none it knows of).
    unpinned_by_design: UnpinnedByDesign | None = None


#: A prover that says nothing about a gap.
NO_VIEW = ProverView(None, [], [], "")


class ProverGap(Protocol):
    """What a prover gathers for one gap of one GPU while it is open (and a while after)."""

    def add_status(self, status: ProverStatus) -> None:
        """Take a status snapshot from the gap's evidence window (the caller checked
        `Prover.concerns`)."""

    def has_evidence(self) -> bool:
        """Can `view` say anything (a snapshot, or a prover log line seen)? False skips it."""

    def view(self, end_s: float | None, start_s: float, kind: str, reach_s: float) -> ProverView:
        """What the prover says about the gap over [start_s, end_s] (`end_s` None: open, so
        far, reaching `reach_s`), of detector `kind`."""


class Prover(Protocol):
    """A prover package as the detector calls it."""

    def feed_log(self, event: LogEvent) -> None:
        """Take a parsed log event (before the evidence slims it)."""

    def feed_status(self, status: ProverStatus) -> None:
        """Take a status snapshot."""

    def feed_process(self, reading: ProcessMemory) -> None:
        """Take a reading of a process on a GPU (NVML's list, its memory from /proc): the
        prover's own process seen anew is its restart, where nothing else says so."""

    def feed_host(self, sample: HostSample) -> None:
        """Take a host sample: the host's memory as the prover's own failures met it (e.g.
        cuzk's pinned pool failing to pin with RAM available, or short)."""

    def concerns(self, status: ProverStatus, gpu: int) -> bool:
        """Does this snapshot say anything about `gpu`?"""

    def end(self, t_wall_s: float) -> None:
        """The data ended at `t_wall_s` (the detector's `finish`): nothing more will be fed,
        so what was never seen again can be said (e.g. work queued and never taken)."""

    def open_gap(self, gpu: int, start_s: float, idle_since_s: float | None = None
                 ) -> ProverGap:
        """An accumulator for a gap of `gpu` that opened at `start_s` (wall seconds);
        `idle_since_s`: the GPU's last busy reading before it (None: not known), earlier than
        `start_s` where holes in the data cut its idle stretch into several gaps (a prover's
        restart anywhere in that stretch is this gap's too)."""

    def facts(self) -> object:
        """What the prover has said about its pipeline so far: an immutable view of the
        package's own type (None: nothing known)."""

    def lacks(self) -> list[str]:
        """The prover facts gapwatch lacks, in plain words ([]: none)."""


class _NoGap:
    __slots__ = ()

    def add_status(self, status: ProverStatus) -> None:
        return None

    def has_evidence(self) -> bool:
        return False

    def view(self, end_s: float | None, start_s: float, kind: str, reach_s: float) -> ProverView:
        return NO_VIEW


_NO_GAP = _NoGap()


class NoProver:
    """No prover package: gaps are found and classified from NVML, the host and the copy trace
    alone; no prover cause, no pipeline facts."""

    def feed_log(self, event: LogEvent) -> None:
        return None

    def feed_status(self, status: ProverStatus) -> None:
        return None

    def feed_process(self, reading: ProcessMemory) -> None:
        return None

    def feed_host(self, sample: HostSample) -> None:
        return None

    def concerns(self, status: ProverStatus, gpu: int) -> bool:
        return False

    def end(self, t_wall_s: float) -> None:
        return None

    def open_gap(self, gpu: int, start_s: float, idle_since_s: float | None = None
                 ) -> ProverGap:
        return _NO_GAP

    def facts(self) -> object:
        return None

    def lacks(self) -> list[str]:
        return ["no prover known: no prover cause (where the prover's own pipeline waited), "
                "no pipeline facts and no setting to change"]
