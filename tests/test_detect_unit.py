"""GapDetector on hand-built sample streams: what is a gap, when it is reported, what kind."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import GapDetector
from gapwatch.core.evidence import RECENT_GAPS, EvidenceBuffer
from gapwatch.core.models import (
    Gap,
    GpuInfo,
    GpuSample,
    HardwareEvent,
    HostSample,
    LogEvent,
    StateChange,
)

T0_WALL = 1_796_000_000.0
LINK = 63e9


def sample(t_s: float, sm: float | None, rx: float | None = 2e6, tx: float | None = 2e6,
           gpu: int = 0, interval_s: float | None = 0.1, util: float | None = None,
           source: str = "sim") -> GpuSample:
    return GpuSample(
        gpu=gpu, t_mono_ns=int(round(t_s * 1e9)), t_wall_s=T0_WALL + t_s,
        interval_ns=None if interval_s is None else int(round(interval_s * 1e9)),
        sm_active_pct=sm, gpu_util_pct=util, pcie_rx_bytes_per_s=rx, pcie_tx_bytes_per_s=tx,
        sm_source=source if sm is not None else None,  # type: ignore[arg-type]
    )


def detector(**cfg: float) -> GapDetector:
    return GapDetector(DetectorConfig(**cfg), [GpuInfo(index=0, link_bytes_per_s=LINK)])


def run(det: GapDetector, samples: list[GpuSample]) -> list[tuple[float, Gap | StateChange]]:
    """Feed samples; return (sample time, output) for everything emitted, finish() at +inf."""
    out: list[tuple[float, Gap | StateChange]] = []
    for s in samples:
        out += [(s.t_mono_ns / 1e9, r) for r in det.feed_gpu(s)]
    out += [(float("inf"), r) for r in det.finish()]
    return out


def stream(pattern: Sequence[tuple[float, float, float]], start_s: float = 1.0,
           period_s: float = 0.1) -> list[GpuSample]:
    """Samples every period from (duration_s, sm, rx) segments."""
    out, t = [], start_s
    for duration, sm, rx in pattern:
        n = int(round(duration / period_s))
        for _ in range(n):
            t = round(t + period_s, 6)
            out.append(sample(t, sm, rx=rx))
    return out


def final_gaps(events: list[tuple[float, Gap | StateChange]]) -> list[Gap]:
    latest: dict[int, Gap] = {}
    for _, e in events:
        if isinstance(e, Gap):
            latest[e.gap_id] = e
    return [g for g in latest.values() if g.end_s is not None and not g.retracted]


def test_idle_between_busy_periods_is_a_gap_with_edges_inside_samples() -> None:
    events = run(detector(), stream([(2, 95, 2e6), (1.0, 0, 2.5e9), (2, 95, 2e6)]))
    gaps = final_gaps(events)
    assert len(gaps) == 1
    g = gaps[0]
    assert g.kind == "pcie_starved"
    assert abs(g.start_s - (T0_WALL + 3.0)) < 0.02
    assert abs(g.end_s - (T0_WALL + 4.0)) < 0.02  # type: ignore[operator]
    assert abs(g.duration_s - 1.0) < 0.02
    assert g.confidence == "high"
    assert "H2D ran at 2.5 GB/s (4 % of link)" in g.hint


def test_partial_busy_sample_moves_the_edge_inside_it() -> None:
    samples = stream([(2, 95, 2e6)]) + [sample(3.1, 24, rx=2e6)]  # busy first quarter
    samples += stream([(1, 0, 2.5e9)], start_s=3.1) + [sample(4.2, 47.5)]  # busy last half
    samples += stream([(1, 95, 2e6)], start_s=4.2)
    (g,) = final_gaps(run(detector(), samples))
    assert abs(g.start_s - (T0_WALL + 3.025)) < 0.005
    assert abs(g.end_s - (T0_WALL + 4.15)) < 0.005  # type: ignore[operator]


def test_short_idle_is_not_a_gap() -> None:
    events = run(detector(), stream([(2, 95, 2e6), (0.2, 0, 2.5e9), (2, 95, 2e6)]))
    assert final_gaps(events) == []
    assert not any(isinstance(e, Gap) for _, e in events)


def test_gap_is_reported_open_at_min_length_then_updated_then_closed() -> None:
    events = run(detector(), stream([(2, 95, 2e6), (3.0, 0, 2.5e9), (2, 95, 2e6)]))
    versions = [(t, e) for t, e in events if isinstance(e, Gap)]
    first_t, first = versions[0]
    assert first.end_s is None and first.is_open
    assert abs(first_t - 3.3) < 1e-6  # the sample on which the idle stretch reached 300 ms
    open_times = [t for t, e in versions if e.end_s is None]
    # Updated while open, at most every ~500 ms of data time, not on every sample.
    assert 4 <= len(open_times) <= 7
    assert all(b - a >= 0.5 - 1e-6 for a, b in zip(open_times, open_times[1:], strict=False))
    last_t, last = versions[-1]
    assert last.end_s is not None and abs(last_t - 6.1) < 1e-6
    assert len({e.gap_id for _, e in versions}) == 1


def test_idle_before_first_busy_and_after_last_busy_is_not_a_gap() -> None:
    events = run(detector(), stream([(3, 0, 2e6), (2, 95, 2e6), (3, 0, 2e6)]))
    assert final_gaps(events) == []
    # The trailing idle was published open (live cannot know it is the end), then retracted.
    retracted = [e for _, e in events if isinstance(e, Gap) and e.retracted]
    assert len(retracted) == 1
    last_state = [e for _, e in events if isinstance(e, StateChange)][-1]
    assert last_state.state == "IDLE" and "retracted" in last_state.reason


def test_hole_in_the_data_is_not_bridged() -> None:
    """Idle, 0.6 s without samples, idle, busy: two gaps, one each side of the hole, neither
    covering it (the GPU may have worked in it); busy after the hole is what makes the one
    before it a gap."""
    samples = stream([(2, 95, 2e6), (0.5, 0, 2.5e9)])
    samples += stream([(0.5, 0, 2.5e9), (2, 95, 2e6)], start_s=4.0)  # nothing from 3.5 to 4.1
    det = detector()
    before, after = sorted(final_gaps(run(det, samples)), key=lambda g: g.start_s)
    assert det.counters["holes"] == 1
    assert before.end_s == pytest.approx(T0_WALL + 3.5) and before.hole_after_s == pytest.approx(0.6)
    assert after.start_s == pytest.approx(T0_WALL + 4.1) and after.hole_after_s is None


def test_missing_sm_reading_is_no_data_and_ends_the_idle_stretch() -> None:
    """Readings missing for longer than a hole (0.4 s: over 3 spacings) are no data: the idle
    stretch is cut there, the idle read on each side a gap; one missing reading alone is
    passed over (test_detect_missed_readings.py)."""
    samples = stream([(2, 95, 2e6), (0.5, 0, 2.5e9)])
    samples += [sample(3.6 + 0.1 * i, None) for i in range(4)]
    samples += stream([(0.5, 0, 2.5e9), (2, 95, 2e6)], start_s=3.9)
    events = run(detector(), samples)
    before, after = sorted(final_gaps(events), key=lambda g: g.start_s)
    assert before.end_s == pytest.approx(T0_WALL + 3.5)  # its last idle reading
    assert after.start_s == pytest.approx(T0_WALL + 4.0)  # the first reading after it
    assert any(isinstance(e, StateChange) and e.state == "NO_DATA" for _, e in events)


def test_stale_gpm_zeros_do_not_open_gaps() -> None:
    samples = []
    for i in range(60):
        t = 1.0 + i * 0.05
        if i % 2:
            samples.append(sample(t, 0.0, rx=0.0, tx=0.0, source="gpm", interval_s=0.05))
        else:
            samples.append(sample(t, 95.0, source="gpm", interval_s=0.05))
    det = detector()
    assert final_gaps(run(det, samples)) == []
    assert det.counters["stale_gpm"] == 30


def test_gpm_zeros_over_a_second_are_idle_not_stale_as_the_sampler_believes_them() -> None:
    # At a 1 s sampling period every GPM reading covers a second: all-zero over that long is a
    # GPU that moved nothing (the sampler emits it), never a stale reading to drop.
    det = GapDetector(DetectorConfig(), [GpuInfo(index=0, link_bytes_per_s=LINK)], period_s=1.0)
    levels = [95.0] * 6 + [0.0] * 3 + [95.0] * 6
    samples = [sample(1.0 + i, sm, rx=2e6 if sm else 0.0, tx=2e6 if sm else 0.0, source="gpm",
                      interval_s=1.0) for i, sm in enumerate(levels)]
    (gap,) = final_gaps(run(det, samples))
    assert det.counters["stale_gpm"] == 0 and det.counters["holes"] == 0
    assert 2.5 < gap.duration_s < 3.5


def test_kind_from_dominant_pcie_direction_against_link() -> None:
    def kind_of(rx: float, tx: float) -> str:
        samples = stream([(2, 95, 2e6)])
        samples += [sample(3.0 + i * 0.1, 0, rx=rx, tx=tx) for i in range(1, 11)]
        samples += stream([(2, 95, 2e6)], start_s=4.0)
        (g,) = final_gaps(run(detector(), samples))
        return g.kind

    assert kind_of(2.8e9, 0.2e9) == "pcie_starved"
    assert kind_of(0.2e9, 2.8e9) == "pcie_starved"  # D2H dominant
    assert kind_of(40e9, 1e9) == "transfer_bound"
    assert kind_of(2e6, 2e6) == "host_stall"
    assert kind_of(None, None) == "unknown"  # type: ignore[arg-type]


def test_utilization_only_gpu_gives_low_confidence_gaps() -> None:
    det = GapDetector(DetectorConfig(), [GpuInfo(index=0, sm_source="util")])
    samples = [sample(1 + i * 0.1, None, util=100 if not 20 <= i < 30 else 3, rx=2.5e9)
               for i in range(50)]
    (g,) = final_gaps(run(det, samples))
    assert g.confidence == "low" and "utilization.gpu only" in g.hint


def test_breakdown_is_raised_on_the_sample_that_meets_the_rule() -> None:
    pattern = [(2, 95, 2e6), (1, 0, 2.5e9), (2, 95, 2e6), (1, 0, 2.5e9), (2, 95, 2e6)]
    events = run(detector(), stream(pattern))
    states = [(t, e.state) for t, e in events if isinstance(e, StateChange)]
    breakdown_t = next(t for t, s in states if s == "BREAKDOWN")
    # The second starved gap opened at 6.0 + 0.3 s: that sample raises BREAKDOWN.
    assert abs(breakdown_t - 6.3) < 1e-6
    assert [s for _, s in states][:3] == ["CHAINED", "GAPS", "BREAKDOWN"]


def test_one_long_starved_gap_raises_breakdown_by_idle_fraction() -> None:
    events = run(detector(), stream([(2, 95, 2e6), (4, 0, 2.5e9), (2, 95, 2e6)]))
    bd = [(t, e) for t, e in events if isinstance(e, StateChange) and e.state == "BREAKDOWN"]
    assert bd and abs(bd[0][0] - 6.0) < 1e-6  # 3 s = 10 % of the 30 s window
    assert "idle" in bd[0][1].reason


def test_host_stall_gaps_are_gaps_not_breakdown() -> None:
    pattern = [(2, 95, 2e6), (1, 0, 2e6), (2, 95, 2e6), (1, 0, 2e6), (2, 95, 2e6)]
    changes = [e for _, e in run(detector(), stream(pattern)) if isinstance(e, StateChange)]
    states = [e.state for e in changes]
    assert "GAPS" in states and "BREAKDOWN" not in states
    gaps = next(e for e in changes if e.state == "GAPS")
    assert gaps.reason == "1 host_stall gap in the last 30 s, none pcie_starved"


def test_a_lone_starved_gap_is_named_in_the_gaps_reason_with_what_breakdown_takes() -> None:
    """The only gap is pcie_starved: the reason must not say "not pcie_starved enough"."""
    changes = [e for _, e in run(detector(), stream([(2, 95, 2e6), (1, 0, 2.5e9), (2, 95, 2e6)]))
               if isinstance(e, StateChange)]
    gaps = next(e for e in changes if e.state == "GAPS")
    assert gaps.reason == ("1 pcie_starved gap in the last 30 s: BREAKDOWN takes 2 pcie_starved "
                           "gaps, or 3 s idle in them")


def test_evidence_host_pressure_and_unpinned_partition_in_hint() -> None:
    det = detector()
    out: list[Gap | StateChange] = []
    det.feed_log(LogEvent(t_wall_s=T0_WALL + 2.5, time_source="line", kind="tracing",
                          name="partition synthesis complete", raw="... is_pinned=false",
                          partition=3, warning="unpinned"))
    for s in stream([(2, 95, 2e6), (1.2, 0, 2.8e9), (2, 95, 2e6)]):
        det.feed_host(HostSample(t_mono_ns=s.t_mono_ns, t_wall_s=s.t_wall_s, interval_ns=None,
                                 mem_used_pct=50.0, mem_available_bytes=None,
                                 swap_used_bytes=None, cpu_busy_pct=None,
                                 psi_mem_some_avg10=None, psi_mem_full_avg10=None,
                                 psi_mem_some_share=0.4, psi_mem_full_share=None,
                                 major_faults_per_s=None))
        out += det.feed_gpu(s)
    (g,) = [e for e in out if isinstance(e, Gap) and e.end_s is not None]
    assert g.host.psi_mem_some_share_max == 0.4
    assert g.log_events and g.log_events[0].partition == 3
    assert "partition 3 was synthesised with is_pinned=false" in g.hint
    assert "stalled on memory 40 %" in g.hint


def _faulting_gap(swap_used_bytes: int | None) -> Gap:
    """A host-stall gap with 6,599 major faults/s during it and this much swap in use."""
    det = detector()
    out: list[Gap | StateChange] = []
    for s in stream([(2, 95, 2e6), (1.2, 0, 2e6), (2, 95, 2e6)]):
        det.feed_host(HostSample(t_mono_ns=s.t_mono_ns, t_wall_s=s.t_wall_s, interval_ns=None,
                                 mem_used_pct=3.0, mem_available_bytes=None,
                                 swap_used_bytes=swap_used_bytes, cpu_busy_pct=None,
                                 psi_mem_some_avg10=None, psi_mem_full_avg10=None,
                                 psi_mem_some_share=None, psi_mem_full_share=None,
                                 major_faults_per_s=6599.0))
        out += det.feed_gpu(s)
    (g,) = [e for e in out if isinstance(e, Gap) and e.end_s is not None]
    return g


def _cpu_waiting_gap(cpu_wait: float | None | list[float]) -> Gap:
    """A host-stall gap (PCIe quiet) with runnable tasks waiting for a CPU this share of each
    host interval (PSI; a list: sample by sample, the last repeated) and no memory pressure."""
    det = detector()
    out: list[Gap | StateChange] = []
    waits: list[float | None] = list(cpu_wait) if isinstance(cpu_wait, list) else [cpu_wait]
    for i, s in enumerate(stream([(2, 95, 2e6), (1.2, 0, 2e6), (2, 95, 2e6)])):
        det.feed_host(HostSample(t_mono_ns=s.t_mono_ns, t_wall_s=s.t_wall_s, interval_ns=None,
                                 mem_used_pct=40.0, mem_available_bytes=None,
                                 swap_used_bytes=0, cpu_busy_pct=99.0,
                                 psi_mem_some_avg10=0.0, psi_mem_full_avg10=0.0,
                                 psi_mem_some_share=0.0, psi_mem_full_share=0.0,
                                 major_faults_per_s=0.0,
                                 psi_cpu_some_share=waits[min(i, len(waits) - 1)]))
        out += det.feed_gpu(s)
    (g,) = [e for e in out if isinstance(e, Gap) and e.end_s is not None]
    return g


def test_a_host_stall_on_oversubscribed_cores_says_runnable_tasks_waited_for_a_cpu() -> None:
    g = _cpu_waiting_gap(0.45)
    assert g.kind == "host_stall" and g.host.psi_cpu_some_share_mean == pytest.approx(0.45)
    assert "runnable tasks waited for a CPU 45 % of the time (PSI)" in g.hint
    assert "stalled on memory" not in g.hint


def test_a_little_cpu_wait_or_none_read_is_not_said() -> None:
    assert "waited for a CPU" not in _cpu_waiting_gap(0.05).hint
    none_read = _cpu_waiting_gap(None)
    assert none_read.host.psi_cpu_some_share_mean is None and "CPU" not in none_read.hint


def test_one_bursty_tick_of_cpu_wait_in_a_gap_is_its_mean_not_its_hint() -> None:
    """CPU PSI comes in bursts (0.4-0.75 a tick on a loaded VM): one tick at 25 % in a 1.2 s
    gap of 2 % ticks is a mean of ~4 %, not "waited for a CPU 25 % of the time"."""
    waits = [0.02] * 30
    waits[25] = 0.25  # a tick inside the gap (the busy stretch before it is 20 samples)
    g = _cpu_waiting_gap(waits)
    mean = g.host.psi_cpu_some_share_mean
    assert isinstance(mean, float) and mean < 0.05
    assert "waited for a CPU" not in g.hint


def test_major_faults_with_no_swap_in_use_are_file_pages_never_swapping() -> None:
    """On the H100 host (no swap at all) a load generator's exit faulted 6,599 pages a second
    back from disk; the hint said "(swapping?)" beside the header's "swap 0 B"."""
    g = _faulting_gap(swap_used_bytes=0)
    assert g.host.swap_used_bytes_max == 0
    assert "6599 major faults/s (no swap in use: file pages read from disk)" in g.hint
    assert "swapping" not in g.hint


def test_major_faults_with_swap_in_use_say_how_much_and_ask_whether_it_swaps() -> None:
    g = _faulting_gap(swap_used_bytes=3 * 2**30)
    assert "6599 major faults/s (swapping? 3.0 GiB of swap in use)" in g.hint


def test_major_faults_without_a_swap_reading_say_only_that_pages_were_read_from_disk() -> None:
    g = _faulting_gap(swap_used_bytes=None)
    assert g.host.swap_used_bytes_max is None
    assert "6599 major faults/s (pages read from disk)" in g.hint


def test_a_gaps_log_events_keep_their_job_and_its_hint_names_it() -> None:
    """A partition number alone names no partition once several jobs are in flight: the job a
    line names reaches the gap's evidence, and its hint."""
    det = detector()
    out: list[Gap | StateChange] = []
    for t, job, part in ((2.3, "porep-1000-3", 8), (2.5, "porep-1000-4", 0)):
        det.feed_log(LogEvent(t_wall_s=T0_WALL + t, time_source="line", kind="tracing",
                              name="partition synthesis complete", raw="... is_pinned=false",
                              job_id=job, partition=part, warning="unpinned"))
    for s in stream([(2, 95, 2e6), (1.2, 0, 2.8e9), (2, 95, 2e6)]):
        out += det.feed_gpu(s)
    (g,) = [e for e in out if isinstance(e, Gap) and e.end_s is not None]
    assert [(e.job_id, e.partition) for e in g.log_events] == [("porep-1000-3", 8),
                                                               ("porep-1000-4", 0)]
    assert g.hint.startswith("porep-1000-3 partition 8 and porep-1000-4 partition 0 were "
                             "synthesised with is_pinned=false")


def _host(s: GpuSample, mem: float | None, share: float | None = None) -> HostSample:
    return HostSample(t_mono_ns=s.t_mono_ns, t_wall_s=s.t_wall_s, interval_ns=None,
                      mem_used_pct=mem, mem_available_bytes=None, swap_used_bytes=None,
                      cpu_busy_pct=None, psi_mem_some_avg10=None, psi_mem_full_avg10=None,
                      psi_mem_some_share=share, psi_mem_full_share=None, major_faults_per_s=None)


def test_host_maxima_cover_the_whole_gap_however_long_and_pass_over_non_readings() -> None:
    """A report publishes a gap once, when it closes; a gap of 200 s has seen 2,000 host samples,
    twice what the host buffer keeps: the early peak still counts. NaN and negatives are no
    readings; the host sample before the gap does not count."""
    det = GapDetector(DetectorConfig(), [GpuInfo(index=0, link_bytes_per_s=LINK)], live=False)
    samples = stream([(2, 95, 2e6), (200, 0, 2e6), (2, 95, 2e6)])
    out: list[Gap | StateChange] = []
    for i, s in enumerate(samples):
        t = s.t_mono_ns / 1e9
        mem = 99.0 if i == 18 else 91.0 if 5.0 <= t < 5.2 else float("nan") if t < 6 else 40.0
        det.feed_host(_host(s, mem, share=-1.0 if i % 2 else 0.25))
        out += det.feed_gpu(s)
    (g,) = [e for e in out if isinstance(e, Gap)]
    assert g.duration_s > 199
    assert g.host.mem_used_pct_max == 91.0
    assert g.host.psi_mem_some_share_max == 0.25
    assert g.host.major_faults_per_s_max is None


def test_a_log_line_that_arrived_out_of_time_order_does_not_hide_the_warnings_before_it() -> None:
    """cuzk's C++ lines have no time of their own: they are stamped when read, a little behind
    the tracing lines around them. The warning read before such a line still reaches the gap."""
    det = detector()
    out: list[Gap | StateChange] = []
    det.feed_log(LogEvent(t_wall_s=T0_WALL + 2.5, time_source="line", kind="tracing",
                          name="partition synthesis complete", raw="... is_pinned=false",
                          partition=3, warning="unpinned"))
    det.feed_log(LogEvent(t_wall_s=T0_WALL - 1.0, time_source="arrival", kind="cuzk_timing",
                          name="pre_lock_cpu_ms", raw="CUZK_TIMING: pre_lock_cpu_ms=850"))
    for s in stream([(2, 95, 2e6), (1.2, 0, 2.8e9), (2, 95, 2e6)]):
        out += det.feed_gpu(s)
    (g,) = [e for e in out if isinstance(e, Gap) and e.end_s is not None]
    assert "partition 3 was synthesised with is_pinned=false" in g.hint


def test_late_log_event_republishes_the_closed_gap_at_once() -> None:
    """As a late copy or /status snapshot does: the log event's own call returns the new
    version (it used to wait for the next GPU sample, which may never come)."""
    det = detector()
    out: list[Gap | StateChange] = []
    for s in stream([(2, 95, 2e6), (1.0, 0, 2.8e9), (1, 95, 2e6)]):
        out += det.feed_gpu(s)
    closed = [e for e in out if isinstance(e, Gap) and e.end_s is not None]
    assert len(closed) == 1 and not closed[0].log_events
    again = det.feed_log(LogEvent(t_wall_s=T0_WALL + 3.5, time_source="line", kind="tracing",
                                  name="pinned pool checkout FAILED", raw="...",
                                  warning="pinned_pool_fallback"))
    assert len(again) == 1 and isinstance(again[0], Gap)
    assert again[0].gap_id == closed[0].gap_id
    assert "pinned pool checkout failed" in again[0].hint
    assert [e for e in det.feed_gpu(sample(5.1, 95)) if isinstance(e, Gap)] == []


def test_out_of_order_samples_are_dropped_and_counted() -> None:
    det = detector()
    det.feed_gpu(sample(2.0, 95))
    assert det.feed_gpu(sample(1.5, 95)) == []
    assert det.feed_gpu(sample(2.0, 95)) == []
    assert det.counters["out_of_order"] == 2


def test_gpus_are_independent() -> None:
    det = GapDetector(DetectorConfig(), [GpuInfo(index=0), GpuInfo(index=1)])
    out: list[Gap | StateChange] = []
    for i in range(50):
        t = 1 + i * 0.1
        out += det.feed_gpu(sample(t, 95, gpu=0))
        out += det.feed_gpu(sample(t, 0 if 20 <= i < 30 else 95, gpu=1, rx=2.5e9))
    gaps = [e for e in out if isinstance(e, Gap) and e.end_s is not None]
    assert [g.gpu for g in gaps] == [1]


def test_offline_mode_gives_the_same_final_gaps_and_states_without_open_versions() -> None:
    pattern = [(2, 95, 2e6), (1, 0, 2.5e9), (2, 95, 2e6), (4, 0, 2.5e9), (2, 95, 2e6), (2, 0, 2e6)]
    live = run(detector(), stream(pattern))
    offline = run(GapDetector(DetectorConfig(), [GpuInfo(index=0, link_bytes_per_s=LINK)],
                              live=False), stream(pattern))
    assert final_gaps(offline) == final_gaps(live)
    assert [e for _, e in offline if isinstance(e, StateChange)] == \
        [e for _, e in live if isinstance(e, StateChange)]
    assert all(e.end_s is not None and not e.retracted for _, e in offline if isinstance(e, Gap))


READING_EDGES = [None, float("nan"), -1.0, -0.0, 0.0, 0.5, 50.0, float("inf")]


def test_the_per_sample_path_takes_as_a_reading_exactly_what_readings_reading_does() -> None:
    """`feed_gpu` checks "None, NaN or negative is no reading" inline for speed; the rule's
    home is `core.readings.reading`. The two must agree on every edge, for SM activity and for
    the PCIe rates of an idle stretch."""
    from gapwatch.core.readings import reading

    for v in READING_EDGES:
        det = detector()  # after a reading: a track's unread first sample is no miss
        det.feed_gpu(sample(1.0, 90.0, source="legacy"))
        det.feed_gpu(sample(1.1, v, source="legacy"))
        assert (det.counters["no_data"] == 1) == (reading(v) is None), v
        det = detector()
        det.feed_gpu(sample(1.0, 90.0))
        det.feed_gpu(sample(1.1, 0.0, rx=v, tx=None))
        assert (det._tracks[0].rx_weight_ns > 0) == (reading(v) is not None), v


def test_a_gap_after_an_xid_says_so_in_its_hint_and_one_long_after_does_not() -> None:
    """Issue 27: a gap that follows a GPU error says so (the driver or the GPU may be why it
    went idle); corrected ECC errors are not such an error."""
    det = detector()
    det.feed(HardwareEvent(0, 1_500_000_000, T0_WALL + 1.5, "xid", code=79))
    det.feed(HardwareEvent(0, 1_600_000_000, T0_WALL + 1.6, "ecc_corrected", count=3))
    out: list[Gap | StateChange] = []
    for s in stream([(2, 95, 2e6), (1.0, 0, 2.8e9), (1, 95, 2e6)]):
        out += det.feed_gpu(s)
    (gap,) = [e for e in out if isinstance(e, Gap) and e.end_s is not None]
    assert "after a GPU error at" in gap.hint and "XID 79" in gap.hint
    later = detector()
    later.feed(HardwareEvent(0, 1_500_000_000, T0_WALL - 500.0, "xid", code=79))
    out = []
    for s in stream([(2, 95, 2e6), (1.0, 0, 2.8e9), (1, 95, 2e6)]):
        out += later.feed_gpu(s)
    (gap,) = [e for e in out if isinstance(e, Gap) and e.end_s is not None]
    assert "GPU error" not in gap.hint


def test_a_row_remap_state_read_at_start_is_no_gpu_error_a_gap_follows_from() -> None:
    """A remap pending for days is said at gapwatch's first reading: every gap of the two
    minutes after each start read "after a GPU error at <the start>"."""
    det = detector()
    det.feed(HardwareEvent(0, 1_500_000_000, T0_WALL + 1.5, "row_remap_pending"))
    det.feed(HardwareEvent(0, 1_500_000_000, T0_WALL + 1.5, "row_remap_failure"))
    out: list[Gap | StateChange] = []
    for s in stream([(2, 95, 2e6), (1.0, 0, 2.8e9), (1, 95, 2e6)]):
        out += det.feed_gpu(s)
    (gap,) = [e for e in out if isinstance(e, Gap) and e.end_s is not None]
    assert "GPU error" not in gap.hint


def _late_line(t_wall_s: float, gpu: int | None) -> LogEvent:
    return LogEvent(t_wall_s=t_wall_s, time_source="line", kind="tracing", name="late line",
                    raw="...", gpu=gpu)


def test_a_busy_gpu_does_not_push_another_gpus_closed_gaps_out_of_late_evidence() -> None:
    """Each GPU's closed gaps listen on their own: 40 gaps closed on GPU 1 (more than a GPU
    keeps) do not stop a late line from reaching GPU 0's gap, and the time that ends a gap's
    listening is its own GPU's (GPU 1's data far ahead does not end it)."""
    buf = EvidenceBuffer(before_s=1.0, late_s=10.0)
    buf.close_gap(buf.open_gap(0, 10.0), 11.0)
    for k in range(RECENT_GAPS + 8):
        buf.close_gap(buf.open_gap(1, 11.0 + k * 0.01), 11.005 + k * 0.01)
    buf.prune({0: 12.0, 1: 100.0})
    assert buf.add_log(_late_line(10.5, gpu=0))
    assert [len(acc.events) for acc in buf.take_dirty_closed()] == [1]
    assert not buf.add_log(_late_line(11.001, gpu=1))  # GPU 1's: listening no more
    buf.prune({0: 21.5, 1: 100.0})
    assert not buf.add_log(_late_line(10.6, gpu=None))


def test_a_gap_with_partial_edges_takes_back_exactly_their_idle_shares_from_busy() -> None:
    """Busy at 95 % to 3.0 s, a 24 % sample (3.0-3.1 s), idle to 4.6 s, a 40 % sample, busy:
    4.2 s of busy samples, of which the start edge leaves 24/95 of its sample busy and the
    end edge 40/95 of its own."""
    samples = [*stream([(2, 95, 2e6)]), sample(3.1, 24, rx=2e6),
               *stream([(1.5, 0, 2.5e9)], start_s=3.1), sample(4.7, 40, rx=2e6),
               *stream([(2, 95, 2e6)], start_s=4.7)]
    det = GapDetector(DetectorConfig(), [GpuInfo(index=0, link_bytes_per_s=LINK)])
    run(det, samples)
    (totals,) = det.totals()
    assert totals.busy_s == pytest.approx(4.0 + 0.1 * (24 + 40) / 95)


def test_a_windows_busy_share_and_its_gaps_idle_never_add_past_the_window() -> None:
    """A GPU that works and waits in a 2 s rhythm: a 40 % sample that closes the gap (its
    second half busy, as the end edge says), 80 % for 0.8 s, a 40 % sample that opens the next
    one (its first half busy), 1 s waiting on slow copies. Each cycle is 0.9 s busy and 1.1 s
    in a pcie_starved gap, so any 30 s holds 13.5 s busy and 16.5 s of gaps: busy 45 %, and
    the two add up to the window, whether a gap is open then or not. The window's busy count
    used to take the edge samples as busy whole (busy 50 %, 105 % in all), where the run's
    total takes their idle shares back."""
    cycle = [(0.1, 40, 2e6), (0.8, 80, 2e6), (0.1, 40, 2e6), (1.0, 0, 2.5e9)]
    det = detector()
    seen = 0
    for s in stream([(1.0, 80, 2e6)] + cycle * 40):
        det.feed_gpu(s)
        t_ns = s.t_mono_ns
        # Read where the window's one-second counts cover exactly the last 30 s: at the last
        # sample of a second, a minute in (gaps' idle is over the last 30 s to the ns).
        if t_ns < 60_000_000_000 or t_ns % 1_000_000_000 != 900_000_000:
            continue
        window = det.window_now(0)
        assert window is not None and window.busy_fraction is not None
        assert window.busy_fraction == pytest.approx(13.5 / 30)
        assert window.starved_idle_s == pytest.approx(16.5)
        assert window.busy_fraction + window.starved_idle_s / window.window_s \
            == pytest.approx(1.0)
        seen += 1
    assert seen == 22
