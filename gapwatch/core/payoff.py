"""The payoff of closing idle time: one rule for every figure gapwatch gives as "if these gaps
were closed".

Work is taken as fixed: closing `closed_s` of idle time shrinks the working span by that much,
so the busy fraction becomes busy / (span - closed) and throughput scales by
span / (span - closed). An upper bound (`PAYOFF_METHOD` says so in words).

Who calls it: the report's payoff per kind and per GPU (`gapwatch.offline.payoff`), each
advice's payoff (`gapwatch.cuzk.advice`, the caller gives the span), the dashboard's gap detail
and the snapshot (throughput only: they do not sum busy time), the verdict (`cuzk.why_now`).

A figure is said with what it rests on (`gain_words`): the span it is over and the gaps it
closes. One worked out over the live window at the moment a GPU enters BREAKDOWN rests on the
2 gaps that tipped it, and read bare ("payoff ~1.0x") it said there was nothing to gain while
the same recording's report, over minutes of the breakdown, said 1.58x: every output that
says a payoff (the dashboard's headline, `--on-event`, summary.md and the report's advice, the
alert's `why`) says it by `gain_words`.
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
    #: The working span the figure is over (seconds; of several GPUs, their sum).
    span_s: float = 0.0

    def json(self) -> dict[str, float | None]:
        """As the report's and the advice's JSON give it (docs/detection.md, docs/advice.md)."""
        return {"idle_s": self.idle_s, "busy_fraction": self.busy_fraction,
                "throughput_gain": self.throughput_gain, "span_s": self.span_s}


def if_closed(busy_s: float | None, active_s: float, closed_s: float) -> IfClosed:
    """The payoff of closing `closed_s` of idle time in a working span of `active_s`. `busy_s`
    None: the busy time is not known (only the gain is)."""
    left = active_s - closed_s
    if active_s <= 0 or left <= 0:
        return IfClosed(closed_s, None, None, max(active_s, 0.0))
    return IfClosed(closed_s, None if busy_s is None else min(1.0, busy_s / left),
                    active_s / left, active_s)


def span_words(seconds: float) -> str:
    """`21 s`, `3.0 min`, `5.2 h`: a span a payoff is over, as a person says it."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def gain_words(gain: float, over: str, gaps: int | None = None) -> str:
    """`~1.58x over the last 30 s (20 gaps)`: a throughput gain as every output says it, with
    the span it is over (`over`: "the last 21 s", "3.0 min of GPU time") and the gaps it would
    close (None: not said). Two decimals: `1.0x` of a 3 % gain read "nothing to gain"."""
    count = "" if gaps is None else f" ({gaps} gap{'' if gaps == 1 else 's'})"
    return f"~{gain:.2f}x over {over}{count}"

