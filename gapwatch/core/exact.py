"""Nanoseconds to seconds, correctly rounded whatever the size, in both builds.

Who calls it: the detection path (`gapwatch.core.detector`), wherever an absolute time in ns
becomes seconds. Python's `int / int` is correctly rounded for ints of any size; code compiled
with mypyc (setup.py's `COMPILED`, this module among them) divides two doubles instead, which
rounds a `t_mono_ns` above 2**53 (~104 days of uptime, or a clock counted from the epoch:
1.8e18) before dividing, and a compiled build's gap times would differ from a pure one's in the
last digits. Below 2**53 both ints are exact doubles and the double division is correctly
rounded, which is what Python does there too; above, `operator.truediv` is Python's own
division, whichever build calls it. tests/test_compiled_build.py holds the two builds to each
other on a clock past 2**53.
"""

from __future__ import annotations

from operator import truediv
from typing import Final

_NS: Final = 1_000_000_000
#: Ints of smaller magnitude are exact as doubles.
_EXACT_BELOW: Final = 1 << 53


def ns_to_s(ns: int) -> float:
    """`ns / 1e9`, correctly rounded whatever the size of `ns` (see the module docstring)."""
    if -_EXACT_BELOW < ns < _EXACT_BELOW:
        return ns / _NS
    return float(truediv(ns, _NS))
