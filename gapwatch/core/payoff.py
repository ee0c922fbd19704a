"""The payoff of closing idle time: one rule for every figure gapwatch gives as "if these gaps
were closed".

Work is taken as fixed: closing `closed_s` of idle time shrinks the working span by that much,
so the busy fraction becomes busy / (span - closed) and throughput scales by
span / (span - closed). An upper bound (`PAYOFF_METHOD` says so in words).

Who calls it: the report's payoff per kind and per GPU (`gapwatch.offline.payoff`), each
advice's payoff (`gapwatch.cuzk.advice`, the caller gives the span), the dashboard's gap detail
and the snapshot (throughput only: they do not sum busy time), the verdict (`cuzk.why_now`).
"""

from __future__ import annotations

from dataclasses import dataclass

PAYOFF_METHOD = (
    "Work is taken as fixed: closing the gaps of a kind removes their idle time from the working "
    "span (first to last busy reading), so busy fraction becomes busy / (span - gap time) and "
    "throughput scales by span / (span - gap time). Upper bound: assumes compute itself does "
    "not slow down and that nothing else (synthesis, a second bottleneck) becomes the limit; "
    "idle stretches shorter than min_gap_ms stay."
)


@dataclass(frozen=True, slots=True)
class IfClosed:
    """What closing `idle_s` of idle time would give."""

    idle_s: float
    #: The busy share of the shortened span; None when the busy time is not known or the
    #: span would be gone.
    busy_fraction: float | None
    #: span / (span - idle); None when the span is empty or the idle time fills it.
    throughput_gain: float | None

    def json(self) -> dict[str, float | None]:
        """As the report's and the advice's JSON give it (docs/detection.md, docs/advice.md)."""
        return {"idle_s": self.idle_s, "busy_fraction": self.busy_fraction,
                "throughput_gain": self.throughput_gain}


def if_closed(busy_s: float | None, active_s: float, closed_s: float) -> IfClosed:
    """The payoff of closing `closed_s` of idle time in a working span of `active_s`. `busy_s`
    None: the busy time is not known (only the gain is)."""
    left = active_s - closed_s
    if active_s <= 0 or left <= 0:
        return IfClosed(closed_s, None, None)
    return IfClosed(closed_s, None if busy_s is None else min(1.0, busy_s / left),
                    active_s / left)
