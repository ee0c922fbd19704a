"""The one explainer: from a gap's measured facts and its evidence to what is said about it,
its hint and the prover's cause with the snapshots and facts behind it.

Who calls it: `gapwatch.core.detector` only, for every version of a gap it publishes (a gap's
versions while open, its close, and its re-publication when late evidence reaches it), live and
offline alike; the report, snapshots, the dashboard and `/metrics` read the gaps it explained
(from a `GapLedger`), so each says the same. The advice over many gaps (the prover package's
settings, e.g. `gapwatch.cuzk.advice`) groups these explained gaps by their cause.

A hint leads with the memory behind the copies when something names it (the copy trace saw the
memory kind, or the prover's log warned), then what the GPU did and what PCIe did, then the
likeliest cause (the prover's own words where it gave a cause: `gapwatch.core.prover`), then
/proc and host pressure; `gapwatch.core.hints` holds the words. A host stall (PCIe quiet: no
copy's memory was what the GPU waited on) the prover gave a cause leads with that cause (a
restart, a batch wait), its memory words after the GPU's; warnings the prover leaves unpinned
by design (its `UnpinnedByDesign`) are said as such. Pure functions over values.
"""

from __future__ import annotations

from dataclasses import dataclass

from msgspec import UnsetType

from gapwatch.core.evidence_types import (
    CopiesEvidence,
    EventEvidence,
    HostEvidence,
    LinkDown,
    ProverGapFacts,
    ProverState,
)
from gapwatch.core.hints import (
    HINT_SEP,
    activity_phrase,
    cause_phrases,
    hole_phrase,
    host_pressure,
    memory_phrases,
    process_memory_words,
    prover_leads,
)
from gapwatch.core.models import AfterHole
from gapwatch.core.prover import NO_VIEW, ProverView


@dataclass(frozen=True, slots=True)
class GapFacts:
    """What the detector measured of a gap, as the explainer needs it.

    RX is what the GPU receives (host-to-device, "H2D"), TX what it sends (D2H).
    `quiet_below_bytes_per_s`: the detector's "quiet" rate (a host stall's PCIe is quiet most of
    the time, its average may be higher). `since_s`: the start of the gap's own evidence window;
    a warning from before it (a recent one, cited because the window has none) is said as seen
    earlier, not as this gap's."""

    kind: str
    duration_s: float
    rx_bytes_per_s: float | None
    tx_bytes_per_s: float | None
    link_bytes_per_s: float
    confidence: str
    is_open: bool = False
    quiet_below_bytes_per_s: float | None = None
    since_s: float | None = None
    #: Seconds without readings right after the gap (a hole cut it: `Gap.hole_after_s`), and
    #: what the first reading after that hole showed (`Gap.read_after_hole`).
    hole_after_s: float | None = None
    read_after_hole: AfterHole | None = None


@dataclass(frozen=True, slots=True)
class Evidence:
    """What was around a gap: host maxima, the prover's log events, the copies (traced, or the
    memory kind inferred), the link seen trained down under traffic (None: not seen), and what
    the prover says (`ProverView`; `NO_VIEW` without one)."""

    host: HostEvidence
    events: list[EventEvidence]
    copies: CopiesEvidence
    link_down: LinkDown | None = None
    prover: ProverView = NO_VIEW
    #: A GPU error the gap follows, in words (`EvidenceBuffer.hardware_words`), or "".
    hardware: str = ""


@dataclass(frozen=True, slots=True)
class Explanation:
    """What is said about a gap: the hint, and the prover's cause with what decided it: its
    snapshots, its facts in words (`prover_evidence`) and, typed, those the prover package's
    advice reads (`prover_facts`, `gapwatch.core.evidence_types.ProverGapFacts`)."""

    hint: str
    prover_cause: str | None
    prover_states: list[ProverState]
    prover_evidence: list[str]
    prover_facts: ProverGapFacts | UnsetType


def explain(gap: GapFacts, evidence: Evidence) -> Explanation:
    """The hint and the prover's cause of one gap. With a live copy trace (`copies` traced) the
    memory kind is stated; without, it is inferred and the hint says so. When the prover said
    where it waited, its words are said instead of a guess."""
    view = evidence.prover
    return Explanation(hint_of(gap, evidence), view.cause, view.states, view.evidence,
                       view.facts)


def hint_of(gap: GapFacts, evidence: Evidence) -> str:
    """One line in plain words, in named steps: the memory behind the copies (said first), what
    the GPU and PCIe did, the likeliest cause, the prover's own words, /proc, host pressure. A
    host stall the prover gave a cause (a restart, a batch wait) leads with the prover's words
    instead, its memory words after: PCIe was quiet, so no copy's memory was what the GPU
    waited on."""
    kind, copies, events, view = gap.kind, evidence.copies, evidence.events, evidence.prover
    traced = copies.traced is True
    memory = memory_phrases(kind, events, copies if traced else None, gap.since_s,
                            view.unpinned_by_design, gap.is_open)
    leads = prover_leads(kind, view.words)
    parts = [view.words] if leads else []
    parts.append(activity_phrase(kind, gap.duration_s, gap.is_open, gap.confidence,
                                 gap.rx_bytes_per_s, gap.tx_bytes_per_s, gap.link_bytes_per_s,
                                 evidence.link_down, gap.quiet_below_bytes_per_s))
    if gap.hole_after_s is not None:
        parts.append(hole_phrase(gap.hole_after_s, gap.read_after_hole))
    parts += cause_phrases(kind, events, traced, bool(memory),
                           view.cause is not None or bool(view.words))
    if view.words and not leads:
        parts.append(view.words)
    if view.error_words:
        parts.append(view.error_words)
    if evidence.hardware:
        parts.append(evidence.hardware)
    if leads:
        parts += memory
    if not traced and kind in ("pcie_starved", "transfer_bound"):
        procs = process_memory_words(copies.process_list())
        if procs:
            parts.append(procs)
    pressure = host_pressure(evidence.host)
    if pressure:
        parts.append(f"host: {pressure}")
    return HINT_SEP.join(parts if leads else memory + parts)
