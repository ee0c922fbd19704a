"""Samples that come without an SM reading: NVML's GPM calls fail now and then (the sampler then
sends the GPU's sample with no reading, and its next reading measures the interval since the
last good one). One such miss is passed over, as a stale GPM reading is; misses for longer than
a hole are no data; a hole in all of a GPU's samples is judged as a hole whatever sample comes
first after it.

Why it matters: each lone miss was NO_DATA at once. It ended a BREAKDOWN that the next reading
entered again (a page each: 8 for one breakdown with 9 missed readings in a simulated run) and
cut an idle stretch into two gaps."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from msgspec.structs import replace
from test_detect_unit import LINK, T0_WALL, final_gaps, run, sample, stream

from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import NO_READING_SINCE, NO_READING_THEN_SILENT, GapDetector
from gapwatch.core.models import Gap, GpuInfo, GpuSample, HostSample, SignalSource, StateChange


def detector(gpus: int = 1, sm_source: SignalSource | None = None) -> GapDetector:
    return GapDetector(DetectorConfig(),
                       [GpuInfo(index=i, link_bytes_per_s=LINK, sm_source=sm_source)
                        for i in range(gpus)], live=True)


def missed(samples: list[GpuSample], *at_s: float) -> list[GpuSample]:
    """The samples, those taken at `at_s` without an SM reading (as the sampler sends them)."""
    at = {round(t * 10) for t in at_s}
    return [replace(x, sm_active_pct=None, sm_source=None) if round(x.t_mono_ns / 1e8) in at
            else x for x in samples]


def without(samples: list[GpuSample], from_s: float, to_s: float) -> list[GpuSample]:
    """The samples, none taken in [from_s, to_s] (a hole: NVML blind, the sampler stalled)."""
    return [x for x in samples if not from_s - 1e-9 <= x.t_mono_ns / 1e9 <= to_s + 1e-9]


def states(events: list[tuple[float, Gap | StateChange]]) -> list[StateChange]:
    return [e for _, e in events if isinstance(e, StateChange)]


def three_starved_stalls() -> list[GpuSample]:
    return stream([(2, 95, 2e6), (0.8, 0, 2.5e9), (1, 95, 2e6), (0.8, 0, 2.5e9),
                   (1, 95, 2e6), (0.8, 0, 2.5e9), (2, 95, 2e6)])


def test_lone_missed_readings_neither_cut_a_gap_nor_end_a_breakdown() -> None:
    det = detector()
    events = run(det, missed(three_starved_stalls(), 3.5, 5.5, 6.0))
    said = [s.state for s in states(events)]
    assert said.count("BREAKDOWN") == 1 and "NO_DATA" not in said, said
    assert len(final_gaps(events)) == 3 and det.counters["no_data"] == 3
    assert det.counters["holes"] == 0


def test_a_missed_reading_takes_nothing_off_the_busy_time_its_next_reading_measured() -> None:
    """The reading after a miss covers both ticks (NVML's GPM interval runs from the last good
    reading): the busy time is the same as with no miss, and never negative."""
    busy = stream([(3, 95, 2e6)])
    after_miss = [replace(x, interval_ns=200_000_000) if round(x.t_mono_ns / 1e8) == 26 else x
                  for x in missed(busy, 2.5)]
    totals = []
    for samples in (busy, after_miss):
        det = detector()
        run(det, samples)
        (t,) = det.totals()
        totals.append((round(t.busy_s, 6), round(t.data_s, 6)))
    assert totals[0] == totals[1] and totals[1][0] > 0


def test_misses_for_longer_than_a_hole_are_no_data_from_the_last_reading() -> None:
    """Idle 3-4.5 s with 0.6 s of samples without readings in it (the sampler goes on): NO_DATA
    from the last reading, said as missing readings (not as a GPU gone silent), and the stretch
    is cut there as a hole cuts it: two gaps, the misses in neither."""
    samples = stream([(2, 95, 2e6), (1.5, 0, 2.5e9), (2, 95, 2e6)])
    det = detector()
    events = run(det, missed(samples, 3.5, 3.6, 3.7, 3.8, 3.9, 4.0))
    (no_data,) = [s for s in states(events) if s.state == "NO_DATA"]
    assert no_data.reason == NO_READING_SINCE
    assert no_data.t_wall_s == pytest.approx(T0_WALL + 3.4)  # the last reading
    before, after = sorted(final_gaps(events), key=lambda g: g.start_s)
    assert before.end_s == pytest.approx(T0_WALL + 3.4)
    assert after.start_s == pytest.approx(T0_WALL + 4.1)  # the first reading after
    assert det.counters["holes"] == 1 and det.counters["silent"] == 0


def test_with_the_hosts_samples_going_on_missing_readings_are_no_silence() -> None:
    """The host's samples judge GPUs that stop sending samples. A GPU whose samples come
    without readings is not silent: its NO_DATA says the readings are missing."""
    samples = missed(stream([(2, 95, 2e6), (2, 0, 2.5e9)]), *[3.5 + 0.1 * i for i in range(5)])
    det = detector()
    said: list[StateChange] = []
    for s in samples:
        said += [e for e in det.feed_host(_host(s.t_mono_ns)) if isinstance(e, StateChange)]
        said += [e for e in det.feed_gpu(s) if isinstance(e, StateChange)]
    reasons = [s.reason for s in said if s.state == "NO_DATA"]
    assert reasons == [NO_READING_SINCE] and det.counters["silent"] == 0


def test_a_miss_first_after_a_hole_is_passed_over_as_the_hole_is_judged() -> None:
    """A BREAKDOWN, 0.5 s with no samples at all (shorter than the window), then one sample
    without a reading: the hole is judged as if that sample were not there (a hole, the state
    held); the miss was no data at once, a NO_DATA and a second BREAKDOWN page."""
    samples = missed(without(three_starved_stalls(), 6.0, 6.4), 6.5)
    det = detector()
    events = run(det, samples)
    said = [s.state for s in states(events)]
    assert said.count("BREAKDOWN") == 1 and "NO_DATA" not in said, said
    assert det.counters["holes"] == 1


def test_misses_after_a_hole_bridge_nothing() -> None:
    """Idle 3-4.5 s; no samples 3.5-3.8 s, then two without readings, then readings: one hole,
    the stretch cut there (two gaps, the hole and the misses in neither), never one gap over
    it."""
    samples = missed(without(stream([(2, 95, 2e6), (1.5, 0, 2.5e9), (2, 95, 2e6)]), 3.5, 3.8),
                     3.9, 4.0)
    det = detector()
    events = run(det, samples)
    before, after = sorted(final_gaps(events), key=lambda g: g.start_s)
    assert before.end_s == pytest.approx(T0_WALL + 3.4)
    assert after.start_s == pytest.approx(T0_WALL + 4.1)
    assert det.counters["holes"] == 1


def test_a_gpm_gpus_first_sample_without_a_reading_is_no_no_data() -> None:
    """NVML's first GPM sample only opens the first interval: every GPM GPU's first sample
    has no reading. It was a NO_DATA for one tick at the start of every session."""
    det = detector()
    events = run(det, missed(stream([(3, 95, 2e6)]), 1.1))
    assert [s.state for s in states(events)] == ["CHAINED"]


def test_a_gpm_gpus_first_sample_without_a_reading_is_not_counted_as_a_miss() -> None:
    """No reading was due at a track's first sample: counted, it put `no_data 1` in the input
    line of every healthy NVML recording, which an operator reads as a fault."""
    det = detector(gpus=2, sm_source="gpm")
    gpu0 = missed(stream([(3, 95, 2e6)]), 1.1)
    gpu1 = [replace(x, gpu=1) for x in gpu0]
    run(det, sorted([*gpu0, *gpu1], key=lambda x: (x.t_mono_ns, x.gpu)))
    assert det.counters["no_data"] == 0


def test_a_later_miss_still_counts_after_an_unread_first_sample() -> None:
    """Only the track's first sample is let off: a miss right after it (the second sample)
    and one mid-run are each counted."""
    det = detector(sm_source="gpm")
    run(det, missed(stream([(3, 95, 2e6)]), 1.1, 1.2, 2.5))
    assert det.counters["no_data"] == 2


def test_another_sources_first_sample_without_a_reading_is_a_miss() -> None:
    """Only GPM's first sample opens its interval (the header says the GPU's source: the unread
    sample names none); a source that reads at every sample owed one at its first."""
    for source in ("legacy", None):
        det = detector(sm_source=source)
        run(det, missed(stream([(3, 95, 2e6)]), 1.1))
        assert det.counters["no_data"] == 1, source


def test_a_gpu_that_never_gives_a_reading_counts_every_sample_but_its_first_as_a_miss() -> None:
    det = detector(sm_source="gpm")
    run(det, [sample(1.0 + 0.1 * i, None) for i in range(10)])
    assert det.counters["no_data"] == 9


def test_a_gpu_that_never_gives_a_reading_is_no_data_from_its_first_sample() -> None:
    det = detector()
    no_readings = [sample(1.0 + 0.1 * i, None) for i in range(10)]
    (said,) = states(run(det, no_readings))
    assert said.state == "NO_DATA" and said.t_wall_s == pytest.approx(T0_WALL + 1.0)


def test_misses_in_an_idle_stretch_take_nothing_off_the_busy_total() -> None:
    """Busy 0.1 s, idle 10 s with every other sample missing its reading, busy 0.1 s; each
    reading's interval is its own tick (NVML's legacy and counter modes, a GPM metric failing
    alone, the simulator): the missed ticks are covered by nothing, neither idle nor busy.
    The busy total took them off and read -4.8 s (and 3.9 for 4.0 s with one miss)."""
    det = detector()
    run(det, missed(stream([(0.1, 95, 2e6), (10, 0, 2.5e9), (0.1, 95, 2e6)]),
                    *[1.2 + 0.2 * i for i in range(50)]))
    (totals,) = det.totals()
    assert totals.busy_s == pytest.approx(0.2)
    det = detector()
    run(det, missed(stream([(2, 95, 2e6), (1.5, 0, 2.5e9), (2, 95, 2e6)]), 3.5))
    (totals,) = det.totals()
    assert totals.busy_s == pytest.approx(4.0)


def test_frequent_lone_misses_teach_no_longer_spacing_and_a_hole_stays_a_hole() -> None:
    """Every other sample without a reading, and no sample at all 3.7-4.1 s (readings 3.6 then
    4.2 s): a hole, as without the misses. The spacing across each miss (200 ms) was learnt,
    and the hole was bridged: one gap over it."""
    samples = without(missed(stream([(2, 95, 2e6), (4, 0, 2.5e9), (2, 95, 2e6)]),
                             *[1.1 + 0.2 * i for i in range(40)]), 3.7, 4.1)
    det = detector()
    gaps = final_gaps(run(det, samples))
    assert det.counters["holes"] == 1 and len(gaps) == 2


def test_a_sample_before_the_latest_miss_is_out_of_order() -> None:
    samples = missed(stream([(3, 95, 2e6)]), 2.5)
    at = next(i for i, x in enumerate(samples) if round(x.t_mono_ns / 1e8) == 25)
    samples.insert(at + 1, sample(2.45, 95))
    det = detector()
    run(det, samples)
    assert det.counters["out_of_order"] == 1


def _fed(det: GapDetector, records: list[GpuSample | HostSample], gpu: int) -> list[StateChange]:
    """Feed records in time order (a tick's host sample first); the states said of `gpu`."""
    said = []
    for r in sorted(records, key=lambda r: (r.t_mono_ns, isinstance(r, GpuSample))):
        said += [e for e in det.feed(r) if isinstance(e, StateChange) and e.gpu == gpu]
    said += [e for e in det.finish() if isinstance(e, StateChange) and e.gpu == gpu]
    return said


def _hosts(to_s: float) -> list[HostSample]:
    return [_host(int(round(i * 1e8))) for i in range(int(round(to_s * 10)) + 1)]


def test_a_gpu_whose_few_samples_had_no_reading_and_then_stopped_is_no_data() -> None:
    """GPU 1 sends two samples without readings, then nothing, while GPU 0 and the host go
    on: NO_DATA from its first sample (it never was: the silence judge passed over a GPU
    with no reading yet, the misses were too few to judge themselves)."""
    det = detector(gpus=2)
    (said,) = _fed(det, [*stream([(5, 95, 2e6)]), sample(1.1, None, gpu=1),
                         sample(1.2, None, gpu=1), *_hosts(6.0)], gpu=1)
    assert (said.state, said.reason) == ("NO_DATA", NO_READING_THEN_SILENT)
    assert said.t_wall_s == pytest.approx(T0_WALL + 1.1)


def test_silence_after_misses_is_said_from_the_last_reading_as_missing_readings() -> None:
    """Readings to 2.0 s, samples without one at 2.1 and 2.2 s, then nothing while the host
    goes on: NO_DATA from 2.0 s said as readings missing, then no samples (it said "no sample
    from this GPU since" 2.0 s, when two came)."""
    gpu1 = [*[replace(x, gpu=1) for x in stream([(1, 95, 2e6)])],
            sample(2.1, None, gpu=1), sample(2.2, None, gpu=1)]
    no_data = [s for s in _fed(detector(gpus=2), [*stream([(5, 95, 2e6)]), *gpu1, *_hosts(6.0)],
                               gpu=1) if s.state == "NO_DATA"]
    assert [s.reason for s in no_data] == [NO_READING_THEN_SILENT]
    assert no_data[0].t_wall_s == pytest.approx(T0_WALL + 2.0)


def test_a_gpu_in_a_run_of_misses_is_still_the_clock_that_finds_another_gone_silent() -> None:
    """No host samples: GPU 0 reads to 2.0 s, then only misses to 4.0 s; GPU 1 stops at 2.0 s.
    GPU 0's samples, read or not, are the clock: GPU 1 is NO_DATA while they come (and the
    GPU clock was used: a split report reads such a recording in one process)."""
    det = detector(gpus=2)
    clocked: list[int] = []
    det.on_gpu_clock = lambda: clocked.append(1)
    gpu0 = missed(stream([(3, 95, 2e6)]), *[2.1 + 0.1 * i for i in range(20)])
    said = []
    for r in sorted([*gpu0, *[replace(x, gpu=1) for x in stream([(1, 95, 2e6)])]],
                    key=lambda r: (r.t_mono_ns, r.gpu)):
        said += [e.state for e in det.feed(r) if isinstance(e, StateChange) and e.gpu == 1]
    assert said[-1] == "NO_DATA" and clocked


def test_the_data_ends_at_a_gpus_latest_sample_read_or_not() -> None:
    """No host samples. GPU 1 stops at 1.8 s; GPU 0 reads to 2.0 s, then two samples without a
    reading to 2.2 s: at the end GPU 1 has been silent 0.4 s (more than 3 spacings) while GPU
    0's sampler went on, so it ends NO_DATA (the end was GPU 0's last reading, 0.2 s)."""
    det = detector(gpus=2)
    gpu0 = missed(stream([(1.2, 95, 2e6)]), 2.1, 2.2)
    said = _fed(det, [*gpu0, *[replace(x, gpu=1) for x in stream([(0.8, 95, 2e6)])]], gpu=1)
    assert [s.state for s in said][-1] == "NO_DATA"

def ticks(segments: Sequence[tuple[float, float, float, float]],
          missed_at: Callable[[int, float], bool] = lambda i, period_s: False,
          skip: Callable[[float], bool] = lambda t_s: False) -> list[GpuSample]:
    """Samples from (duration s, period s, SM %, RX) segments, each covering its own period;
    the i-th (from 1) without a reading where `missed_at(i, period)`, none taken where
    `skip(t)`."""
    out, t, i = [], 1.0, 0
    for duration_s, period_s, sm, rx in segments:
        for _ in range(int(round(duration_s / period_s))):
            t, i = round(t + period_s, 6), i + 1
            if skip(t):
                continue
            s = sample(t, sm, rx=rx, interval_s=period_s)
            out.append(replace(s, sm_active_pct=None, sm_source=None) if missed_at(i, period_s)
                       else s)
    return out


def test_a_gpu_missing_every_other_tick_still_follows_its_sampler_to_twice_the_period() -> None:
    """GPM failing every other tick throughout; the sampler slows from 100 to 200 ms. The
    spacing is learnt between samples, read or not: both stalls are gaps (learnt between
    readings only, nothing was ever learnt, each reading 400 ms apart was a hole, and the
    second stall no gap)."""
    segments = [(4, 0.1, 95, 2e6), (2, 0.1, 0, 2.5e9), (2, 0.1, 95, 2e6),
                (4, 0.2, 95, 2e6), (2, 0.2, 0, 2.5e9), (2, 0.2, 95, 2e6)]
    det = GapDetector(DetectorConfig(), [GpuInfo(index=0, link_bytes_per_s=LINK)], period_s=0.1)
    gaps = final_gaps(run(det, ticks(segments, lambda i, _: i % 2 == 0)))
    assert len(gaps) == 2


def test_a_spacing_learnt_long_is_unlearnt_under_misses_and_a_hole_stays_a_hole() -> None:
    """The sampler ran at 400 ms, then at 100 ms with every other tick missed; no sample at all
    13.0-14.0 s inside an idle stretch: two gaps (the 400 ms learnt stayed, 1.2 s allowed,
    and one gap ran over the hole)."""
    segments = [(8, 0.4, 95, 2e6), (3, 0.1, 95, 2e6), (3, 0.1, 0, 2.5e9), (2, 0.1, 95, 2e6)]
    det = GapDetector(DetectorConfig(), [GpuInfo(index=0, link_bytes_per_s=LINK)], period_s=0.1)
    samples = ticks(segments, lambda i, period_s: period_s == 0.1 and i % 2 == 0,
                    skip=lambda t_s: 13.0 < t_s < 14.05)
    gaps = final_gaps(run(det, samples))
    assert len(gaps) == 2 and not any(
        g.start_s < T0_WALL + 13.0 and (g.end_s or 0.0) > T0_WALL + 14.05 for g in gaps)


def test_misses_after_a_hole_longer_than_the_window_carry_no_state_across_it() -> None:
    """A BREAKDOWN, no sample for 40 s (the recorder stalled), five samples without a reading,
    readings: NO_DATA from the last reading before the hole, as without the misses (it was
    said at the first miss after the hole: the BREAKDOWN ran across 40 s of nothing)."""
    before = three_starved_stalls()
    end_s = before[-1].t_mono_ns / 1e9
    after = stream([(2, 95, 2e6)], start_s=end_s + 40.0)
    after = [replace(x, sm_active_pct=None, sm_source=None) if i < 5 else x
             for i, x in enumerate(after)]
    (no_data,) = [s for s in states(run(detector(), before + after)) if s.state == "NO_DATA"]
    assert no_data.t_mono_ns / 1e9 == pytest.approx(end_s) and no_data.reason.startswith(
        "no data for 40.")


def _host(t_mono_ns: int) -> HostSample:
    return HostSample(t_mono_ns=t_mono_ns, t_wall_s=T0_WALL + t_mono_ns / 1e9, interval_ns=None,
                      mem_used_pct=40.0, mem_available_bytes=None, swap_used_bytes=None,
                      cpu_busy_pct=None, psi_mem_some_avg10=None, psi_mem_full_avg10=None,
                      psi_mem_some_share=None, psi_mem_full_share=None, major_faults_per_s=None)
