"""Sampler: the deadline-scheduled loop that reads the GPU and host sources every period.

Who calls it: `gapwatch.engine.runtime` (as a thread, for nvml and sim sources) and
`evaluation.simulate` (synchronously, on a virtual clock). All source calls happen on this one
thread: NVML calls
serialise on a driver lock and must never come from the UI.

Scheduling: deadlines are `start + k * period`, never "sleep period after the work", so there is
no drift. The lateness of every tick (actual read time minus its deadline) is data: it is put on
each GpuSample, kept here for the dashboard footer (the last 600 ticks) and summarised over the
whole run (`LatenessHistogram`) for `record`'s closing line. When the loop falls more than a period
behind (a stalled process), it skips the missed deadlines rather than firing a burst, and counts
them: the resulting hole in the data is visible, not papered over.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from gapwatch.base.background import Background
from gapwatch.base.clock import Clock
from gapwatch.core.models import Notice
from gapwatch.engine.lateness import LatenessHistogram
from gapwatch.engine.session import Session
from gapwatch.sources import GpuSource, HostSource


@dataclass(frozen=True, slots=True)
class LatenessStats:
    """Tick lateness: `p50_ms`/`p99_ms`/`max_ms` over the recent window (the last
    `keep_lateness` ticks: the footer), `run_*` over the whole run (the closing summary: exact
    maximum, percentiles from `LatenessHistogram`'s buckets)."""

    ticks: int
    skipped_ticks: int
    source_errors: int
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    window_ticks: int = 0
    run_p50_ms: float | None = None
    run_p99_ms: float | None = None
    run_max_ms: float | None = None


class Sampler(Background):
    """Reads `gpu_source` (and `host_source`) every `period_ns` and feeds `session`."""

    thread_name = "gapwatch-sampler"

    def __init__(
        self,
        gpu_source: GpuSource,
        host_source: HostSource | None,
        session: Session,
        clock: Clock,
        period_ns: int,
        duration_ns: int | None = None,
        keep_lateness: int = 600,
    ) -> None:
        self.gpu_source = gpu_source
        self.host_source = host_source
        self.session = session
        self.clock = clock
        self.period_ns = period_ns
        self.duration_ns = duration_ns
        super().__init__()
        self.ticks = 0
        self.skipped_ticks = 0
        self.source_errors = 0
        self._lateness_ns: deque[int] = deque(maxlen=keep_lateness)
        self._run_lateness = LatenessHistogram()
        #: The schedule, kept here so that a loop restarted after it died (see `Background`)
        #: keeps the run's start (`--duration` counts from it) and its deadlines.
        self._start_ns: int | None = None
        self._deadline_ns = 0

    def _loop(self) -> None:
        """Returns when stopped or when `duration_ns` of clock time has passed."""
        if self._start_ns is None:
            start = self._start_ns = self.clock.monotonic_ns()
            self._deadline_ns = start + self.period_ns
            # Take a first reading at once: rate sources (GPM, counters) need a starting point.
            self._tick(start, 0)
        start = self._start_ns
        while True:
            deadline = self._deadline_ns
            if self.duration_ns is not None and deadline - start > self.duration_ns:
                return
            if not self.clock.sleep_until_ns(deadline, self.stop_event):
                return
            now = self.clock.monotonic_ns()
            lateness = now - deadline
            # The next deadline first: a tick that raises is not taken again after a restart.
            deadline += self.period_ns
            if now - deadline >= self.period_ns:
                missed = (now - deadline) // self.period_ns + 1
                self.skipped_ticks += missed
                deadline += missed * self.period_ns
            self._deadline_ns = deadline
            self._tick(now, lateness)

    def _tick(self, now_ns: int, lateness_ns: int) -> None:
        wall = self.clock.wall_s()
        self.ticks += 1
        self._lateness_ns.append(lateness_ns)
        self._run_lateness.add(lateness_ns)
        try:
            tick = self.gpu_source.read(now_ns, wall, lateness_ns)
        except Exception as exc:  # a source bug must not kill sampling: say it, count it
            self.source_errors += 1
            self.session.on_notice(Notice(now_ns, wall, "error", f"GPU source failed: {exc!r}"))
        else:
            if tick.gpu:
                self.session.on_gpu_samples(tick.gpu)
            for n in tick.notices:
                self.session.on_notice(n)
            for r in tick.other:
                self.session.on_record(r)
        if self.host_source is not None:
            try:
                host = self.host_source.read(now_ns, wall)
            except Exception as exc:
                self.source_errors += 1
                self.session.on_notice(
                    Notice(now_ns, wall, "error", f"host source failed: {exc!r}")
                )
            else:
                self.session.on_record(host)

    def lateness(self) -> LatenessStats:
        values = sorted(self._lateness_ns)
        run = self._run_lateness

        def ms(ns: int | None) -> float | None:
            return None if ns is None else ns / 1e6

        whole = {"run_p50_ms": ms(run.percentile_ns(0.5)),
                 "run_p99_ms": ms(run.percentile_ns(0.99)), "run_max_ms": ms(run.max_ns)}
        if not values:
            return LatenessStats(self.ticks, self.skipped_ticks, self.source_errors, None, None,
                                 None, 0, **whole)

        def pct(q: float) -> float:
            return values[min(len(values) - 1, int(q * len(values)))] / 1e6

        return LatenessStats(self.ticks, self.skipped_ticks, self.source_errors,
                             pct(0.5), pct(0.99), values[-1] / 1e6, len(values), **whole)
