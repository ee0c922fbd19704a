"""The report's payoff: busy fraction and throughput gain if the gaps of each kind (and all of
them) were closed, over all GPUs and per GPU, with partitions per hour where the prover's log
gave a partition table (`gapwatch.offline.throughput`'s rule, compare's too). The arithmetic is
`gapwatch.core.payoff.if_closed`'s.

Who calls it: `gapwatch.offline.report.summarise` (the report's `payoff`, and each advice's
through `gap_payoff`), its text and JSON (`gapwatch.offline.report_text`, `report.to_json`),
`gapwatch.offline.compare` (each side's busy share, payoff of all gaps, partitions per hour).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gapwatch.core.ledger import Tally
from gapwatch.core.models import GAP_KINDS
from gapwatch.core.payoff import (
    PAYOFF_METHOD,
    GpuSpan,
    IfClosed,
    LinkFloor,
    floor_over_gpus,
    if_closed,
)
from gapwatch.core.track import GpuTotals
from gapwatch.cuzk.advice import StallGaps
from gapwatch.cuzk.partitions import RunTimeline
from gapwatch.offline.compare_windows import NoData
from gapwatch.offline.throughput import partitions_per_hour

#: The key of closing every gap, after the kinds' own in `if_closed_by_kind`.
ALL = "all"


@dataclass(frozen=True, slots=True)
class Closing:
    """The busy fraction now and what closing each kind's gaps would give: the kinds with idle
    time, in `GAP_KINDS` order, then `ALL` (always there)."""

    busy_fraction: float | None
    if_closed_by_kind: dict[str, IfClosed]

    @property
    def all(self) -> IfClosed:
        return self.if_closed_by_kind[ALL]

    def json(self) -> dict[str, Any]:
        return {"busy_fraction": self.busy_fraction,
                "if_closed": {k: v.json() for k, v in self.if_closed_by_kind.items()}}


@dataclass(frozen=True, slots=True)
class GpuPayoff:
    gpu: int
    closing: Closing


@dataclass(frozen=True, slots=True)
class Payoff:
    """The report's payoff (docs/detection.md, "Report JSON": `payoff`)."""

    overall: Closing
    per_gpu: list[GpuPayoff]
    #: Partitions whose GPU work ended inside the GPUs' working span, per hour of it in which
    #: some GPU was read (`gapwatch.offline.throughput`: compare's figure too); None without a
    #: table (no log) or with an empty span.
    partitions_per_hour: float | None
    #: What `partitions_per_hour` counts: the table's rows (`RunTimeline.rate_unit`):
    #: "partitions", "batch jobs" or "GPU jobs" (they mix); and sectors per hour where the rows
    #: are PoRep batch jobs of one known size (`RunTimeline.sectors_per_batch`), else None.
    rate_unit: str = "partitions"
    sectors_per_hour: float | None = None

    def json(self) -> dict[str, Any]:
        return {"method": PAYOFF_METHOD, "partitions_per_hour": self.partitions_per_hour,
                "rate_unit": self.rate_unit, "sectors_per_hour": self.sectors_per_hour,
                "overall": self.overall.json(),
                "per_gpu": [{"gpu": p.gpu, **p.closing.json()} for p in self.per_gpu]}


def busy_fraction(t: GpuTotals) -> float | None:
    """Busy share of the working span (first to last busy reading): idle before the work started
    and after it ended is not counted against the GPU."""
    return t.busy_s / t.active_s if t.active_s > 0 else None


def report_payoff(totals: list[GpuTotals], tally: dict[tuple[int, str], Tally],
                  partitions: RunTimeline | None, no_data: list[NoData] | None = None,
                  stepped_back_s: float = 0.0) -> Payoff:
    """The payoff of each GPU and of all of them; the idle seconds of each (GPU, kind) are the
    ledger's (`GapLedger.tally`); `no_data`, `stepped_back_s`: the run's stretches with no
    reading and its wall clock's step back (`throughput`), for partitions per hour."""
    idle_by_gpu: dict[int, dict[str, Tally]] = {}
    for (gpu, kind), kept in tally.items():
        per = idle_by_gpu.setdefault(gpu, {})
        was = per.get(kind, Tally())
        per[kind] = Tally(was.count + kept.count, was.seconds + kept.seconds)
    per_gpu = []
    all_busy = all_active = 0.0
    all_by_kind: dict[str, Tally] = {}
    for t in totals:
        by_kind = idle_by_gpu.get(t.gpu, {})
        all_busy += t.busy_s
        all_active += t.active_s
        for k, v in by_kind.items():
            was = all_by_kind.get(k, Tally())
            all_by_kind[k] = Tally(was.count + v.count, was.seconds + v.seconds)
        per_gpu.append(GpuPayoff(t.gpu, _closing(busy_fraction(t), t.busy_s, t.active_s,
                                                 by_kind, _fixed(t.link_floor_s))))

    def floor_of(kind: str) -> LinkFloor | None:
        """The GPUs' floor once `kind`'s gaps (`ALL`: every kind's) are closed on each."""
        return floor_over_gpus(
            GpuSpan(t.gpu, t.active_s, _idle_s(idle_by_gpu.get(t.gpu, {}), kind),
                    t.link_floor_s)
            for t in totals)

    overall = _closing(all_busy / all_active if all_active > 0 else None, all_busy, all_active,
                       all_by_kind, floor_of)
    ends = None if partitions is None else ((p.gpu, p.gpu_end_s) for p in partitions.partitions)
    rate = partitions_per_hour(ends, totals, no_data or [], stepped_back_s)
    if partitions is None:
        return Payoff(overall, per_gpu, rate)
    size = partitions.sectors_per_batch
    sectors = (rate * size if rate is not None and size is not None
               and partitions.rate_unit == "batch jobs" else None)
    return Payoff(overall, per_gpu, rate, partitions.rate_unit, sectors)


def gap_payoff(totals: list[GpuTotals], gaps: StallGaps) -> IfClosed:
    """The payoff of closing these gaps, over every GPU's working span (the figure each advice
    carries), each GPU's span never below its own link's floor (`core.payoff.floor_over_gpus`:
    the gaps' idle time by GPU, `StallGaps.idle_by_gpu`)."""
    busy = sum(t.busy_s for t in totals)
    active = sum(t.active_s for t in totals)
    floor = floor_over_gpus(GpuSpan(t.gpu, t.active_s, gaps.idle_by_gpu.get(t.gpu, 0.0),
                                    t.link_floor_s) for t in totals)
    return if_closed(busy, active, gaps.idle_s, len(gaps), floor)


def _fixed(floor_s: float | None) -> Callable[[str], float | LinkFloor | None]:
    """One GPU's floor, whichever of its kinds is closed."""
    return lambda _kind: floor_s


def _idle_s(by_kind: dict[str, Tally], kind: str) -> float:
    """One GPU's idle seconds in `kind`'s gaps (`ALL`: every kind's)."""
    if kind == ALL:
        return sum((v.seconds for v in by_kind.values()), 0.0)
    kept = by_kind.get(kind)
    return 0.0 if kept is None else kept.seconds


def _closing(busy_fraction: float | None, busy_s: float, active_s: float,
             idle_by_kind: dict[str, Tally],
             floor_of: Callable[[str], float | LinkFloor | None] = lambda _k: None
             ) -> Closing:
    """Closing each kind with idle time (in `GAP_KINDS` order), then all of them; each with
    its gaps, said beside the figure (`core.payoff.gpu_time_words`), and never below the
    links' floor once that kind is closed (`floor_of(kind)`, `ALL` for every kind: one GPU's
    own `link_floor_s`, several GPUs' `core.payoff.floor_over_gpus`; None: no PCIe reading,
    no floor)."""
    kept = [(k, idle_by_kind[k]) for k in GAP_KINDS if k in idle_by_kind]
    by_kind: dict[str, IfClosed] = {
        k: if_closed(busy_s, active_s, v.seconds, v.count, floor_of(k))
        for k, v in kept if v.seconds > 0}
    by_kind[ALL] = if_closed(busy_s, active_s, sum((v.seconds for _, v in kept), 0.0),
                             sum(v.count for _, v in kept), floor_of(ALL))
    return Closing(busy_fraction, by_kind)

