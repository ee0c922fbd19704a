"""Bounds on numbers that come from outside: log lines, recordings, trace CSVs, headers.

Who calls it: the log parser (`gapwatch.logs.parse`: integers in fields), the recording reader
(through the constrained types below, which `gapwatch.core.models` puts on its record fields, so
that the record codec, `gapwatch.core.codec`, refuses out-of-range values while decoding), the
trace CSV reader, and every consumer of a header's period; the sampler config takes its period's
default and bound from here. Pure, no I/O.

Why: a number gapwatch cannot hold or print is worse than a missing one. An integer beyond 64
bits cannot be held by most JSON readers nor by Prometheus (one such log field once dropped its
event from the recording, the detector and /metrics); a timestamp of 1e300 overflows every
conversion to nanoseconds or to a date; a GPU index of 1e30 is not a GPU; a period of 0 divides
by zero. Each such value is refused where it enters, counted and said, and the rest of the input
is used.
"""

from __future__ import annotations

import math
from typing import Annotated

import msgspec

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
#: No box has more GPUs than this; a larger index in a file is junk, not a GPU.
MAX_GPU_INDEX = 255
#: Latest Unix time gapwatch accepts (2262-04-11): every accepted wall time converts to
#: nanoseconds within 64 bits (trace CSVs derive `t_mono_ns` from it) and to a printable date.
MAX_WALL_S = INT64_MAX / 1e9
#: The sampling period: `SamplerConfig.period_ms`'s default, what the detector assumes before two
#: samples tell the real spacing, and what a file that states no usable period is read with.
#: 100 ms matches GPM's refresh; below it GPM repeats stale intervals.
DEFAULT_PERIOD_MS = 100.0
DEFAULT_PERIOD_NS = round(DEFAULT_PERIOD_MS * 1_000_000)
#: The longest sampling period: the sampler's bound and the most a header may state.
MAX_PERIOD_MS = 60_000.0

# Constrained types for record fields read from files, declared once: the record codec checks
# them while decoding. A value outside them makes the line a bad record (skipped, counted,
# said), never a record that crashes a later stage.
I64 = Annotated[int, msgspec.Meta(ge=INT64_MIN, le=INT64_MAX)]
MonoNs = Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)]
GpuIndex = Annotated[int, msgspec.Meta(ge=0, le=MAX_GPU_INDEX)]
WallS = Annotated[float, msgspec.Meta(ge=0, le=MAX_WALL_S)]


def fits_i64(n: int) -> bool:
    """Does `n` fit a signed 64-bit integer (what JSON writers and Prometheus can hold)?"""
    return INT64_MIN <= n <= INT64_MAX


def wall_s_ok(t: float) -> bool:
    """Is `t` a usable Unix time: finite, not before 1970, not after `MAX_WALL_S`?"""
    return 0.0 <= t <= MAX_WALL_S  # NaN fails both comparisons


def gpu_index(value: float) -> int | None:
    """`value` as a GPU index (a whole number 0..MAX_GPU_INDEX), or None if it is not one."""
    if not (0 <= value <= MAX_GPU_INDEX) or value != math.floor(value):
        return None
    return int(value)


def usable_period_ms(period_ms: float) -> float | None:
    """A stated sampling period if it can be used (finite, > 0, at most a minute), else None."""
    if 0.0 < period_ms <= MAX_PERIOD_MS:
        return period_ms
    return None
