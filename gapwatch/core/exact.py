"""Arithmetic that must stay in the interpreter: nanoseconds to seconds, correctly rounded.

Who calls it: the compiled detection path (`gapwatch.core.detector`, setup.py's `COMPILED`),
wherever an absolute time in ns becomes seconds. Python's `int / int` is correctly rounded for
ints of any size; code compiled with mypyc converts both ints to doubles first, which rounds a
`t_mono_ns` above 2**53 (~104 days of uptime, or an epoch-based clock: 1.8e18) before dividing,
and a compiled build's gap times would then differ from a pure one's in the last digits. This
module is never compiled, so both builds divide alike (tests/test_compiled_build.py compares
them). Durations (well below 2**53 ns) may be divided anywhere.
"""

from __future__ import annotations

_NS = 1_000_000_000


def ns_to_s(ns: int) -> float:
    """`ns / 1e9`, correctly rounded whatever the size of `ns` (see the module docstring)."""
    return ns / _NS
