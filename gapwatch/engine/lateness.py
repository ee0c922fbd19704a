"""LatenessHistogram: the sampler's tick lateness over a whole run, in bounded memory.

Who calls it: `gapwatch.engine.sampler.Sampler` (one `add` per tick) and, through its
`LatenessStats`, `record`'s closing summary. The footer shows the last 600 ticks (a window that
moves); a summary of a week-long run needs every tick: a 112 ms stall an hour ago must not read
"max 41 ms". So: the exact count and maximum, and percentiles from fixed logarithmic buckets
(16 per doubling, 10 us .. ~170 s: a percentile is the upper bound of its bucket, at most 4.4 %
above the true value), ~390 integers whatever the run's length.
"""

from __future__ import annotations

import bisect
import math

_FIRST_BOUND_NS = 10_000
_PER_DOUBLING = 16
_DOUBLINGS = 24
#: Upper bounds (ns) of the buckets after the first ("on time or early": lateness <= 0).
BOUNDS_NS: tuple[int, ...] = tuple(
    math.ceil(_FIRST_BOUND_NS * 2 ** (i / _PER_DOUBLING))
    for i in range(_DOUBLINGS * _PER_DOUBLING + 1)
)


class LatenessHistogram:
    """Counts of tick lateness by bucket, with the exact count and maximum."""

    def __init__(self) -> None:
        # counts[0]: lateness <= 0; counts[i + 1]: BOUNDS_NS[i - 1] < lateness <= BOUNDS_NS[i];
        # the last bucket takes everything above the last bound.
        self._counts = [0] * (len(BOUNDS_NS) + 2)
        self.count = 0
        self.max_ns: int | None = None

    def add(self, lateness_ns: int) -> None:
        self.count += 1
        if self.max_ns is None or lateness_ns > self.max_ns:
            self.max_ns = lateness_ns
        if lateness_ns <= 0:
            self._counts[0] += 1
        else:
            self._counts[1 + bisect.bisect_left(BOUNDS_NS, lateness_ns)] += 1

    def percentile_ns(self, q: float) -> int | None:
        """The upper bound of the bucket holding the q-quantile (never above the maximum)."""
        if self.count == 0 or self.max_ns is None:
            return None
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for i, n in enumerate(self._counts):
            seen += n
            if seen >= rank:
                if i == 0:
                    return min(0, self.max_ns)
                bound = BOUNDS_NS[i - 1] if i - 1 < len(BOUNDS_NS) else self.max_ns
                return min(bound, self.max_ns)
        return self.max_ns
