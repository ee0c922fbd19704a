"""The payoff of closing idle time: one rule for every figure gapwatch gives as "if these gaps
were closed".

Work is taken as fixed: closing `closed_s` of idle time shrinks the working span by that much,
so the busy fraction becomes busy / (span - closed) and throughput scales by
span / (span - closed). An upper bound (`PAYOFF_METHOD` says so in words).

Who calls it: the report's payoff per kind and per GPU (`gapwatch.offline.payoff`), each
advice's payoff (`gapwatch.cuzk.advice`, the caller gives the span), the dashboard's gap detail
and the snapshot (throughput only: they do not sum busy time), the verdict (`cuzk.why_now`).

A figure is said with what it rests on (`gain_words`; a recording's by `gpu_time_words`): the
span it is over and the gaps it closes. One worked out over the live window at the moment a
GPU enters BREAKDOWN rests on the 2 gaps that tipped it, and read bare ("payoff ~1.0x") it said
there was nothing to gain while the same recording's report, over minutes of the breakdown,
said 1.58x: every output that says a payoff (the dashboard's headline, `--on-event`,
summary.md, the report's Payoff section and advice, `compare`'s prediction, the alert's `why`)
says it by `gain_words`.
"""

from __future__ import annotations

import math
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
    #: How many gaps `idle_s` is (None: not counted). Said with the figure
    #: (`gpu_time_words`), not in `json()`: an advice's JSON has its own `gaps`.
    gaps: int | None = None

    def json(self) -> dict[str, float | None]:
        """As the report's and the advice's JSON give it (docs/detection.md, docs/advice.md)."""
        return {"idle_s": self.idle_s, "busy_fraction": self.busy_fraction,
                "throughput_gain": self.throughput_gain, "span_s": self.span_s}


def if_closed(busy_s: float | None, active_s: float, closed_s: float,
              gaps: int | None = None) -> IfClosed:
    """The payoff of closing `closed_s` of idle time (`gaps` gaps, None: not counted) in a
    working span of `active_s`. `busy_s` None: the busy time is not known (only the gain is).
    A span or idle time that is not a finite number gives no figure (NaN compares false with
    everything, and was said `~nanx`)."""
    left = active_s - closed_s
    if not (math.isfinite(active_s) and math.isfinite(closed_s)) or active_s <= 0 or left <= 0:
        return IfClosed(closed_s, None, None,
                        active_s if math.isfinite(active_s) and active_s > 0 else 0.0, gaps)
    return IfClosed(closed_s, None if busy_s is None else min(1.0, busy_s / left),
                    active_s / left, active_s, gaps)


#: The longest span a payoff is said over: ten years of GPU time (a month's recording of
#: 64 GPUs is 0.2 of it). Past it, or not a finite number, the figure is said without a span:
#: 1e300 s was said as a 300-digit number of hours.
MAX_SPAN_S = 10 * 365.25 * 86400.0


def span_words(seconds: float, *, whole_seconds: bool = False) -> str | None:
    """`21 s`, `3.0 min`, `5.2 h`: a span a payoff is over, as a person says it; under a
    second with a decimal (`0.4 s`; `0 s` read as no span at all); None for no span to say
    (negative, not finite, past `MAX_SPAN_S`). `whole_seconds`: seconds however long (the
    live window's, which the alert's `why`, a Prometheus template, says in seconds too)."""
    if not 0 <= seconds <= MAX_SPAN_S:  # NaN fails this too
        return None
    if seconds < 1:
        return "under 0.1 s" if seconds < 0.05 else f"{seconds:.1f} s"
    if whole_seconds or seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def gain_words(gain: float, over: str | None, gaps: int | None = None) -> str:
    """`~1.58x over the last 30 s (20 gaps)`: a throughput gain as every output says it, with
    the span it is over (`over`: "the last 21 s", "3.0 min of GPU time"; None: not said) and
    the gaps it would close (None: not said). Two decimals: `1.0x` of a 3 % gain read
    "nothing to gain". A gain that is not a finite number is said `not known`."""
    if not math.isfinite(gain):
        return "not known"
    span = "" if over is None else f" over {over}"
    count = "" if gaps is None else f" ({gaps} gap{'' if gaps == 1 else 's'})"
    return f"~{gain:.2f}x{span}{count}"


def gpu_time_words(gain: float, span_s: float, gaps: int | None) -> str:
    """`~1.58x over 3.3 min of GPU time (103 gaps)`: a recording's payoff, over its GPUs'
    working spans summed, as the report's Payoff section, its advice, summary.md and `compare`
    say it (`gain_words`; the live verdict says `over the last 30 s`, `WhyNow.payoff_words`).
    The report's Payoff section said `about 1.58× throughput` with neither span nor gaps
    beside its advice's words for the same figure."""
    span = span_words(span_s)
    return gain_words(gain, None if span is None else f"{span} of GPU time", gaps)
