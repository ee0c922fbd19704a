"""`fmt.clock` works the time of day out of the seconds (every gap's explanation writes a few)
and says what `datetime` says of the same time: at the edges of a second, where rounding to
microseconds carries into the next one, and outside the range `datetime` can give."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from gapwatch.core.fmt import clock


def _by_datetime(t_wall_s: float, millis: bool) -> str:
    base = datetime.fromtimestamp(t_wall_s, UTC).strftime("%H:%M:%S")
    if not millis:
        return base
    # To the microsecond (logs print that), then cut to the ms, as their first digits read.
    whole_s, us = divmod(round(t_wall_s * 1_000_000), 1_000_000)
    if whole_s >= 253_402_300_800:  # datetime's last second: nothing to carry into
        return f"{base}.{int((t_wall_s % 1) * 1000):03d}"
    return datetime.fromtimestamp(whole_s, UTC).strftime("%H:%M:%S") + f".{us // 1000:03d}"


def test_milliseconds_are_the_nearest_as_a_log_line_prints_them() -> None:
    """`00.123Z` in cuzk's line is 1778616000.123 as a float, just below: cut to the ms, it
    read `.122` beside the line it came from; 70.05 s read `.049`. To the microsecond, then
    cut: the line's own first digits, and the same second as `clock` without them."""
    assert clock(1778616000.123, millis=True) == "20:00:00.123"
    assert clock(70.05, millis=True) == "00:01:10.050"
    assert clock(59.9995, millis=True) == "00:00:59.999"
    assert clock(59.9995) == "00:00:59"
    assert clock(59.9999996, millis=True) == "00:01:00.000" and clock(59.9999996) == "00:01:00"
    assert clock(-0.5, millis=True) == "23:59:59.500"


def _times() -> list[float]:
    rng = random.Random(7)
    times = [rng.uniform(0, 253_402_300_799) for _ in range(2000)]
    times += [rng.uniform(1.7e9, 1.8e9) for _ in range(2000)]
    # The fractions where datetime's rounding to microseconds carries, or nearly does.
    times += [s + f for s in (0, 59, 3599, 86_399, 1_796_000_059)
              for f in (0.0, 0.5, 0.998, 0.999, 0.9999994, 0.9999995, 0.9999996)]
    return [*times, 253_402_300_799.9999, -0.5, -86_400.25, 4e-7]


@pytest.mark.parametrize("millis", [False, True])
def test_the_time_of_day_is_what_datetime_says(millis: bool) -> None:
    for t in _times():
        assert clock(t, millis) == _by_datetime(t, millis), t


@pytest.mark.parametrize("t", [253_402_300_800.0, float("nan"), float("inf")])
def test_a_time_datetime_cannot_give_fails_as_it_fails(t: float) -> None:
    with pytest.raises((ValueError, OverflowError)) as ours:
        clock(t)
    with pytest.raises((ValueError, OverflowError)) as theirs:
        _by_datetime(t, False)
    assert type(ours.value) is type(theirs.value)
