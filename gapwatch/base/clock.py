"""Clocks for the loops that schedule work and stamp records, so tests and simulations own time.

The sampler (its deadline schedule and every sample's timestamps) and the log follower (arrival
times) take a `Clock`: `SystemClock` is the real thing, `FakeClock` moves only when a test says,
`ScaledClock` runs N times faster, `VirtualClock` runs a simulation as fast as possible (its sleep
advances time instead of waiting). What is about the real machine rather than the data (the
recorder's flush interval, the replay driver's pacing, a session header's start time) reads
`time` directly. The core never reads a clock.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def monotonic_ns(self) -> int: ...

    def wall_s(self) -> float: ...

    def sleep_until_ns(self, deadline_mono_ns: int, stop: threading.Event | None = None) -> bool:
        """Sleep until `deadline_mono_ns`; return False if `stop` was set meanwhile."""
        ...


def _wait(delay_s: float, stop: threading.Event | None) -> bool:
    """Sleep `delay_s` (on `stop`, so a shutdown never waits out a period); False if stopped."""
    if delay_s <= 0:
        return not (stop is not None and stop.is_set())
    if stop is None:
        time.sleep(delay_s)
        return True
    return not stop.wait(delay_s)


class SystemClock:
    """Real time. Sleeping waits on `stop` so that a shutdown never waits out a period."""

    def monotonic_ns(self) -> int:
        return time.monotonic_ns()

    def wall_s(self) -> float:
        return time.time()

    def sleep_until_ns(self, deadline_mono_ns: int, stop: threading.Event | None = None) -> bool:
        return _wait((deadline_mono_ns - time.monotonic_ns()) / 1e9, stop)


class FakeClock:
    """A clock that moves only when told to (`advance`), or when a sleeper asks it to.

    `sleep_until_ns` jumps straight to the deadline, plus `late_by_ns` when a test wants to
    simulate a stalled thread.
    """

    def __init__(self, start_mono_ns: int = 1_000_000_000, start_wall_s: float = 1_796_000_000.0):
        self._mono_ns = start_mono_ns
        self._wall0_s = start_wall_s
        self._mono0_ns = start_mono_ns
        self.late_by_ns = 0
        self._lock = threading.Lock()

    def monotonic_ns(self) -> int:
        with self._lock:
            return self._mono_ns

    def wall_s(self) -> float:
        with self._lock:
            return self._wall0_s + (self._mono_ns - self._mono0_ns) / 1e9

    def advance_ns(self, delta_ns: int) -> None:
        with self._lock:
            self._mono_ns += delta_ns

    def sleep_until_ns(self, deadline_mono_ns: int, stop: threading.Event | None = None) -> bool:
        if stop is not None and stop.is_set():
            return False
        with self._lock:
            self._mono_ns = max(self._mono_ns, deadline_mono_ns + self.late_by_ns)
        return True


class VirtualClock(FakeClock):
    """Simulated time that runs as fast as the CPU allows (`--speed 0`)."""


#: The fastest a `ScaledClock` runs (times real time). Its times are real time times the speed,
#: and records hold them as 64-bit nanoseconds before 2262: at 1e300 every record of a simulated
#: recording stood beyond 64 bits (all of them bad records to every reader), and at 1e9 a
#: second of simulated time passed between two looks at the clock, so `--duration` never came.
#: At 1000 the times hold for 80 days of real time; faster than the simulator can keep up with
#: anyway (its ticks are skipped from ~100), and `--speed 0` (`VirtualClock`) is as fast as it can.
MAX_SCALED_SPEED = 1000.0


class ScaledClock:
    """Time that runs `speed` times faster than real time (`--speed X` for the simulator).

    Wall time starts at `start_wall_s` and advances `speed` seconds per real second, so a
    simulated session keeps its own timestamps consistent at any speed up to `MAX_SCALED_SPEED`.
    """

    def __init__(self, speed: float, start_wall_s: float | None = None):
        if speed <= 0:
            raise ValueError("ScaledClock needs speed > 0; use VirtualClock for speed 0")
        if not speed <= MAX_SCALED_SPEED:
            raise ValueError(f"ScaledClock runs at most {MAX_SCALED_SPEED:g} times real time, "
                             f"not {speed:g}")
        self.speed = speed
        self._real0_ns = time.monotonic_ns()
        self._wall0_s = time.time() if start_wall_s is None else start_wall_s

    def monotonic_ns(self) -> int:
        return self._real0_ns + int((time.monotonic_ns() - self._real0_ns) * self.speed)

    def wall_s(self) -> float:
        return self._wall0_s + (time.monotonic_ns() - self._real0_ns) * self.speed / 1e9

    def sleep_until_ns(self, deadline_mono_ns: int, stop: threading.Event | None = None) -> bool:
        real_deadline_ns = self._real0_ns + (deadline_mono_ns - self._real0_ns) / self.speed
        return _wait((real_deadline_ns - time.monotonic_ns()) / 1e9, stop)
