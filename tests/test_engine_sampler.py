"""The sampler: deadline scheduling without drift, lateness kept as data, missed ticks skipped,
a failing source reported but never fatal."""

from __future__ import annotations

from evaluation.simulate import ListSink
from gapwatch.base.clock import FakeClock
from gapwatch.core.models import GpuInfo, GpuSample, HostSample, Notice
from gapwatch.engine.sampler import Sampler
from gapwatch.engine.session import Session, default_header
from gapwatch.engine.store import SeriesStore
from gapwatch.sources import Tick

PERIOD_NS = 100_000_000


class CountingSource:
    """Returns one sample per read and remembers when it was asked; can slow the clock down."""

    def __init__(self, clock: FakeClock, work_ns: dict[int, int] | None = None,
                 fail_on: set[int] | None = None) -> None:
        self.clock = clock
        self.calls: list[int] = []
        self.work_ns = work_ns or {}
        self.fail_on = fail_on or set()

    def open(self) -> list[GpuInfo]:
        return [GpuInfo(index=0)]

    def read(self, t_mono_ns: int, t_wall_s: float, lateness_ns: int) -> Tick:
        n = len(self.calls)
        self.calls.append(t_mono_ns)
        self.clock.advance_ns(self.work_ns.get(n, 0))  # simulated time spent in NVML
        if n in self.fail_on:
            raise RuntimeError("driver hiccup")
        return Tick(gpu=[GpuSample(0, t_mono_ns, t_wall_s, PERIOD_NS, 50.0, 50.0, 1.0, 1.0,
                                   lateness_ns=lateness_ns)])

    def close(self) -> None:
        pass


def _session() -> tuple[Session, ListSink]:
    sink = ListSink()
    header = default_header("test", [GpuInfo(index=0)], 100.0)
    return Session(header, SeriesStore([GpuInfo(index=0)], 0.1), sinks=[sink]), sink


def test_deadlines_do_not_drift_when_reads_take_time() -> None:
    clock = FakeClock(start_mono_ns=0)
    src = CountingSource(clock, work_ns={i: 30_000_000 for i in range(100)})
    session, _ = _session()
    Sampler(src, None, session, clock, PERIOD_NS, duration_ns=2 * 10**9).run()
    # Each read takes 30 ms, yet ticks stay on the 100 ms grid: deadline = start + k * period.
    assert src.calls == [k * PERIOD_NS for k in range(21)]


def test_lateness_is_recorded_on_samples_and_in_stats() -> None:
    clock = FakeClock(start_mono_ns=0)
    clock.late_by_ns = 2_000_000  # the OS wakes us 2 ms late every time
    src = CountingSource(clock)
    session, sink = _session()
    sampler = Sampler(src, None, session, clock, PERIOD_NS, duration_ns=10**9)
    sampler.run()
    late = [r.lateness_ns for r in sink.records if isinstance(r, GpuSample)]
    assert late[0] == 0 and set(late[1:]) == {2_000_000}
    stats = sampler.lateness()
    assert stats.p50_ms == 2.0 and stats.max_ms == 2.0 and stats.skipped_ticks == 0


def test_a_stall_skips_missed_deadlines_instead_of_bursting() -> None:
    clock = FakeClock(start_mono_ns=0)
    src = CountingSource(clock, work_ns={3: 450_000_000})  # one read stalls 450 ms
    session, _ = _session()
    sampler = Sampler(src, None, session, clock, PERIOD_NS, duration_ns=10**9)
    sampler.run()
    ms = [c // 1_000_000 for c in src.calls]
    # The stalled tick's successor runs once, late (its lateness says so), then the loop goes
    # back to the grid without a burst of catch-up reads: the hole stays a hole.
    assert ms[:7] == [0, 100, 200, 300, 750, 800, 900]
    assert sampler.skipped_ticks == 3


def test_a_failing_read_is_a_notice_and_sampling_goes_on() -> None:
    clock = FakeClock(start_mono_ns=0)
    src = CountingSource(clock, fail_on={2})
    session, sink = _session()
    sampler = Sampler(src, None, session, clock, PERIOD_NS, duration_ns=10**9)
    sampler.run()
    notices = [r for r in sink.records if isinstance(r, Notice)]
    assert len(notices) == 1 and "driver hiccup" in notices[0].message
    assert sum(isinstance(r, GpuSample) for r in sink.records) == 10
    assert sampler.source_errors == 1


class HostStub:
    def read(self, t_mono_ns: int, t_wall_s: float) -> HostSample:
        return HostSample(t_mono_ns, t_wall_s, None, 1.0, None, None, None, None, None, None,
                          None, None)

    def close(self) -> None:
        pass


def test_host_source_is_read_every_tick() -> None:
    clock = FakeClock(start_mono_ns=0)
    session, sink = _session()
    Sampler(CountingSource(clock), HostStub(), session, clock, PERIOD_NS,
            duration_ns=5 * PERIOD_NS).run()
    assert sum(isinstance(r, HostSample) for r in sink.records) == 6


def test_stop_ends_the_thread_promptly() -> None:
    from gapwatch.base.clock import SystemClock

    session, _ = _session()
    clock = FakeClock()
    sampler = Sampler(CountingSource(clock), None, session, SystemClock(), 10 * PERIOD_NS)
    sampler.start()
    sampler.stop(timeout_s=5)
    assert sampler.finished.is_set()
