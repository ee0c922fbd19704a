"""GPU-Util beside busy: what nvidia-smi shows held against the SMs' busy share, in seconds.

The figure (`gapwatch.core.util_figure`) is kept by the chaining meter over each reading's
interval; the report, the dashboard's one-GPU health line and the snapshot say it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from sim_recordings import ran_to_end, record_sim

from evaluation.simulate import simulate
from gapwatch.config import Config, build_config
from gapwatch.core.chaining import ChainingMeter
from gapwatch.core.codec import gap_json as to_json_gap
from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import GapDetector
from gapwatch.core.models import Gap, GpuInfo, GpuSample, SignalSource
from gapwatch.offline.report import build_report, to_json
from gapwatch.offline.report_text import format_text
from gapwatch.sinks.snapshot import SUMMARY_NAME, write_snapshot
from gapwatch.sources.sim import truth_gaps
from gapwatch.ui.gap_detail import head_lines

DATA = Path(__file__).parent / "data"
PERIOD_NS = 100_000_000


def _sample(i: int, sm: float | None, util: float | None, rx: float = 1e9, tx: float = 1e6,
            source: SignalSource = "sim") -> GpuSample:
    """The `i`th reading of GPU 0, 100 ms apart."""
    return GpuSample(gpu=0, t_mono_ns=(i + 1) * PERIOD_NS, t_wall_s=1000.0 + (i + 1) * 0.1,
                     interval_ns=PERIOD_NS, sm_active_pct=sm, gpu_util_pct=util,
                     pcie_rx_bytes_per_s=rx, pcie_tx_bytes_per_s=tx, sm_source=source)


def _meter(window_s: float | None = None) -> ChainingMeter:
    return ChainingMeter([GpuInfo(index=0, link_bytes_per_s=63e9)], DetectorConfig(), window_s)


def test_over_the_working_span_gpu_util_shows_the_pinned_copies_as_busy_time() -> None:
    meter = _meter()
    for i in range(20):  # 2 s idle before any work: outside the working span
        meter.add_sample(_sample(i, sm=0.0, util=50.0))
    for i in range(20, 80):  # 6 s of kernels: both say busy
        meter.add_sample(_sample(i, sm=95.0, util=99.0))
    for i in range(80, 120):  # 4 s of pinned copies with the SMs idle: GPU-Util 99 %
        meter.add_sample(_sample(i, sm=0.0, util=99.0, rx=55e9))
    meter.add_sample(_sample(120, sm=95.0, util=99.0))  # the span's last busy reading
    for i in range(121, 141):  # 2 s idle after the work: outside it too
        meter.add_sample(_sample(i, sm=0.0, util=0.0))
    f = meter.util_figure(0)
    assert f is not None and f.window_s is None
    assert f.read_s == pytest.approx(10.1)
    assert f.util_share == pytest.approx(0.99)
    busy = 6.1 / 10.1  # the report's busy share of the same span
    assert f.excess_s(busy) == pytest.approx(0.99 * 10.1 - 6.1)
    assert f.words(busy) == ("GPU-Util (what nvidia-smi shows) 99 % over the same span: 3.9 s "
                             "more of it busy than the SMs (copies, or kernels on few SMs)")
    assert f.cell() == "GPU-Util 99%"


def test_gpu_util_under_the_busy_share_is_no_excess_whatever_its_readings_alignment() -> None:
    """NVML averages GPU-Util over its own period: an idle reading next to a busy one may read
    busy (the H200 host-stall run: 1.6 s of such readings), while GPU-Util over the span read
    less than the SMs. The figure holds averages, not those readings."""
    meter = _meter()
    for i in range(100):
        busy = i % 10 < 5
        # GPU-Util trails by one reading: each stretch's first idle reading reads busy, its
        # first busy one idle.
        util = 99.0 if 1 <= i % 10 <= 5 else 0.0
        meter.add_sample(_sample(i, sm=95.0 if busy else 0.0, util=util))
    f = meter.util_figure(0)
    busy_share = 50 / 95  # the span: the first busy reading to the last (0 to 94)
    assert f is not None and f.read_s == pytest.approx(9.5)
    assert f.excess_s(busy_share) == 0.0
    assert f.words(busy_share).endswith(": about the busy share")


def test_a_reading_after_a_sampler_stall_counts_one_period_as_the_detector_counts_it() -> None:
    """A 30 s stall: NVML's GPM interval spans it, GPU-Util is its own short average. Counted
    whole, a span busy 50 % read GPU-Util 71 %."""
    meter = _meter()
    for i in range(100):  # 10 s: busy and idle in turn, GPU-Util as the SMs
        busy = i % 2 == 0
        meter.add_sample(_sample(i, sm=95.0 if busy else 0.0, util=100.0 if busy else 0.0))
    stall = _sample(400, sm=0.0, util=100.0)  # 30 s later, its interval the whole stall
    meter.add_sample(stall.__class__(**{f: getattr(stall, f) for f in stall.__struct_fields__
                                        if f != "interval_ns"}, interval_ns=30_100_000_000))
    meter.add_sample(_sample(401, sm=95.0, util=100.0))
    f = meter.util_figure(0)
    # 102 readings of 0.1 s each, the stall's among them: 5.2 s of them GPU-Util busy.
    assert f is not None and f.read_s == pytest.approx(10.2)
    assert f.util_share == pytest.approx(5.2 / 10.2)


def test_gpu_utils_span_is_the_reports_working_span_across_holes(tmp_path: Path) -> None:
    """"Over the same span" holds where the data has holes (a 3 s one, and a 30 s sampler
    stall): the meter learns its own expected period and the detector its own, and both count
    one period after a hole."""
    rec, _ = record_sim(tmp_path, "pageable", 120.0)
    lines = rec.read_text().splitlines()
    kept, t0 = lines[:1], None
    for line in lines[1:]:
        doc = json.loads(line)
        if doc.get("type") == "gpu":
            t = doc["t_mono_ns"] / 1e9
            t0 = t if t0 is None else t0
            if 40 < t - t0 < 43 or 70 < t - t0 < 100:
                continue
        kept.append(line)
    holed = tmp_path / "holed.jsonl"
    holed.write_text("\n".join(kept) + "\n")
    r = build_report(holed, Config())
    (t,) = r.totals
    assert t.active_s < 90.0  # the holes are out of the span, as the report counts it
    assert r.util[0].read_s == pytest.approx(t.active_s, abs=0.2)


def test_a_reading_without_both_figures_counts_for_nothing_and_none_is_no_figure() -> None:
    meter = _meter()
    for i in range(50):  # GPU-Util missing: nothing to hold the SMs against
        meter.add_sample(_sample(i, sm=95.0, util=None))
    for i in range(50, 100):  # SM activity missing (a NaN is no reading either)
        meter.add_sample(_sample(i, sm=float("nan") if i % 2 else None, util=99.0))
    assert meter.util_figure(0) is None
    assert meter.util_figures() == {}
    meter.add_sample(_sample(100, sm=95.0, util=40.0))  # 0.1 s: under a second is no figure
    assert meter.util_figure(0) is None


def test_gpu_util_well_under_the_busy_share_is_said_less_not_about_the_same() -> None:
    meter = _meter()
    for i in range(100):
        meter.add_sample(_sample(i, sm=95.0, util=30.0))
    f = meter.util_figure(0)
    assert f is not None
    assert f.words(1.0).endswith(": 7.0 s less busy than the SMs")
    assert f.excess_s(1.0) == 0.0


def test_a_gpu_never_busy_has_no_working_span_and_no_figure() -> None:
    meter = _meter()
    for i in range(100):
        meter.add_sample(_sample(i, sm=0.0, util=99.0, rx=55e9))
    assert meter.util_figure(0) is None


def test_a_stale_gpm_reading_is_left_out_as_the_detector_leaves_it_out() -> None:
    meter = _meter()
    for i in range(0, 40, 2):
        meter.add_sample(_sample(i, sm=95.0, util=50.0, source="gpm"))
        # GPM with nothing new: every metric exactly 0.0 over a short interval. Its GPU-Util
        # (read apart from GPM) would have pulled the average up to 75 %.
        meter.add_sample(_sample(i + 1, sm=0.0, util=100.0, rx=0.0, tx=0.0, source="gpm"))
    f = meter.util_figure(0)
    assert f is not None and f.util_share == pytest.approx(0.5)


def test_the_live_window_has_the_detectors_whole_seconds_for_a_fractional_window() -> None:
    config = DetectorConfig(window_s=2.5)
    meter = ChainingMeter([GpuInfo(index=0, link_bytes_per_s=63e9)], config, window_s=60.0)
    for i in range(100):
        meter.add_sample(_sample(i, sm=95.0, util=99.0))
    f = meter.util_figure(0)
    # Seconds 8, 9 and 10 of monotonic time, the last only begun (as the detector's buckets).
    assert f is not None and f.window_s == config.window_seconds == 3
    assert f.read_s == pytest.approx(2.1)


def test_the_live_figure_is_over_the_detectors_window_in_monotonic_seconds() -> None:
    meter = _meter(window_s=60.0)
    for i in range(1200):  # two minutes: GPU-Util 99 %, then 10 % over the last minute
        meter.add_sample(_sample(i, sm=95.0, util=99.0 if i < 600 else 10.0))
    f = meter.util_figure(0)
    assert f is not None and f.window_s == DetectorConfig().window_s == 30.0
    assert 29.0 <= f.read_s <= 30.0 and f.util_share == pytest.approx(0.10)


def test_a_wall_clock_stepped_back_an_hour_does_not_freeze_the_live_figure() -> None:
    meter = _meter(window_s=60.0)
    for i in range(600):
        meter.add_sample(_sample(i, sm=95.0, util=99.0))
    for i in range(600, 1200):  # the wall clock steps back an hour; monotonic time goes on
        s = _sample(i, sm=95.0, util=10.0)
        meter.add_sample(s.__class__(**{f: getattr(s, f) for f in s.__struct_fields__
                                       if f != "t_wall_s"}, t_wall_s=s.t_wall_s - 3600.0))
    f = meter.util_figure(0)
    assert f is not None and f.util_share == pytest.approx(0.10)


def test_the_report_holds_the_h200s_gpu_util_against_its_busy_share() -> None:
    """The shared H200 pageable recording: nvidia-smi's GPU-Util over the working span read
    about the SMs' busy share (pageable copies keep the copy engine busy only ~8-10 % of the
    time), a few points either way: said as no cause. Its gaps hide in nvidia-smi's one-second
    averages instead."""
    r = build_report(DATA / "pageable.csv", Config())
    f = r.util[0]
    (t,) = r.totals
    busy = t.busy_s / t.active_s
    assert f.util_share == pytest.approx(0.64, abs=0.01) and busy == pytest.approx(0.62, abs=0.01)
    assert ("busy 62 % of 17.2 s (link 63.0 GB/s); 5 pcie_starved (6.1 s)\n"
            "         GPU-Util (what nvidia-smi shows) 64 % over the same span: about the busy "
            "share\n") in format_text(r)
    doc = to_json(r)["gpu_util"]["0"]
    assert doc == {"read_s": f.read_s, "gpu_util_share": f.util_share, "busy_share": busy,
                   "excess_busy_s": f.excess_s(busy)}


def test_the_h200s_transfer_bound_run_reads_busy_on_gpu_util_while_its_sms_sat_idle() -> None:
    """Pinned copies at line rate that the kernels do not overlap (the H200 end-to-end run,
    recorded live from NVML): GPU-Util over the working span 100 % against busy 22 %, 26.2 s
    more busy time than the SMs had: its 26.3 s of transfer_bound gaps."""
    r = build_report(DATA / "h200-e2e" / "transfer-bound" / "rec.jsonl.gz", Config())
    f = r.util[0]
    (t,) = r.totals
    busy = t.busy_s / t.active_s
    assert f.util_share == pytest.approx(1.0, abs=0.01) and busy == pytest.approx(0.22, abs=0.01)
    excess = f.excess_s(busy)
    assert excess is not None and excess == pytest.approx(26.2, abs=0.1)


def _inside_gaps(scenario: str) -> list[GpuSample]:
    r = simulate(scenario, seed=1, duration_s=60)
    gaps = truth_gaps(r.truth, 0)
    assert len(gaps) >= 4
    return [s for s in r.records if isinstance(s, GpuSample)
            and any(a + 0.15 < s.t_wall_s - 0.1 and s.t_wall_s < b - 0.15 for a, b in gaps)]


def test_the_simulators_gpu_util_reads_as_the_h200s_did_low_under_pageable_copies() -> None:
    # Measured on the H200 with idle SMs: pageable copies at ~3-8 GB/s 8-16 %, pinned 99 %.
    inside = _inside_gaps("pageable")
    assert inside and all(s.gpu_util_pct is not None and s.gpu_util_pct < 20 for s in inside)


def test_the_simulators_gpu_util_reads_busy_under_pinned_copies_with_idle_sms() -> None:
    inside = [s for s in _inside_gaps("transfer-bound")
              if (s.pcie_rx_bytes_per_s or 0) > 0.5 * 63e9]
    assert inside and all(s.gpu_util_pct is not None and s.gpu_util_pct >= 50 for s in inside)


def test_the_live_store_and_summary_md_hold_the_minutes_gpu_util_beside_the_sms(
        tmp_path: Path) -> None:
    """Pinned copies not overlapped with kernels (`sim:transfer-bound`): GPU-Util over the
    detector's window reads far above the busy share of the same window (the header's), and
    the snapshot's health table says both."""
    config = build_config({"snapshot": {"auto": False}})
    rt = ran_to_end(config, "sim:transfer-bound", 90.0)
    snap = rt.store.snapshot()
    f = snap.util[0]
    busy = snap.busy_share(0)
    assert f.window_s == 30.0 and 25.0 <= f.read_s <= 30.0
    assert busy is not None and f.util_share > busy + 0.2
    folder = write_snapshot(tmp_path, snap, rt.header, config, t_wall_s=snap.states[0].t_wall_s,
                            reason="by hand (key s)")
    summary = (folder / SUMMARY_NAME).read_text()
    assert f"| {f.util_share * 100:.0f}% (busy {busy * 100:.0f}%) |" in summary


def test_each_gap_says_the_gpu_util_nvidia_smi_showed_through_it() -> None:
    """The H200's transfer-bound gaps, pinned copies with the SMs idle, read GPU-Util 100 %
    through each (a GPU-Util dashboard shows them busy); its pageable run's about 7-12 %."""
    bound = build_report(DATA / "h200-e2e" / "transfer-bound" / "rec.jsonl.gz", Config()).gaps
    assert len(bound) == 18 and all(g.gpu_util_pct == pytest.approx(100.0, abs=0.5) for g in bound)
    assert head_lines(bound[0])[-1] == ("  GPU-Util (what nvidia-smi shows) through it: 100 %: a "
                                        "GPU-Util dashboard shows it busy")
    paged = build_report(DATA / "h200-e2e" / "pageable" / "rec.jsonl.gz", Config()).gaps
    util = [g.gpu_util_pct for g in paged]
    assert all(u is not None and u <= 20.0 for u in util), util
    assert 5.0 <= sorted(u for u in util if u is not None)[len(util) // 2] <= 15.0
    assert to_json_gap(paged[0])["gpu_util_pct"] == paged[0].gpu_util_pct


def test_a_gap_judged_by_utilization_gpu_alone_has_no_gpu_util_beside_it() -> None:
    det = GapDetector(DetectorConfig(),
                      [GpuInfo(index=0, link_bytes_per_s=63e9, sm_source="util")])
    gaps = []
    for i in range(60):  # busy, then 2 s idle by utilization.gpu alone, then busy
        util = 5.0 if 20 <= i < 40 else 95.0
        for out in det.feed_gpu(_sample(i, sm=None, util=util)):
            if isinstance(out, Gap) and out.end_s is not None:
                gaps.append(out)
    assert gaps and all(g.confidence == "low" and g.gpu_util_pct is None for g in gaps)


def test_a_gaps_gpu_util_leaves_out_the_readings_nvml_still_averages_the_work_before_into() -> None:
    """NVML's GPU-Util averages over its own last 200 ms, reported up to a period late: a host
    stall with no copy at all read 100, 100, then 0 through it, and a 0.5 s gap was said
    "25 %" (at 50 %, "a GPU-Util dashboard shows it busy")."""
    det = GapDetector(DetectorConfig(), [GpuInfo(index=0, link_bytes_per_s=63e9)])
    utils = [100.0] * 20 + [100.0, 100.0, 0.0, 0.0, 0.0] + [100.0] * 20  # busy, idle, busy
    closed = []
    for i, util in enumerate(utils):
        sm = 0.0 if 20 <= i < 25 else 95.0
        for out in det.feed_gpu(_sample(i, sm=sm, util=util, rx=2e6)):
            if isinstance(out, Gap) and out.end_s is not None:
                closed.append(out)
    (gap,) = closed
    assert gap.gpu_util_pct == 0.0
    assert "busy" not in head_lines(gap)[-1]



def _one_gap(idle: Sequence[tuple[float | None, float]], gpu: GpuInfo | None = None,
             before: tuple[float | None, float] = (95.0, 100.0)) -> Gap:
    """The one closed gap of 2 s busy (`before`: SM, GPU-Util), then `idle` readings (SM,
    GPU-Util), then 2 s busy, 100 ms apart."""
    det = GapDetector(DetectorConfig(), [gpu or GpuInfo(index=0, link_bytes_per_s=63e9)])
    readings = [before] * 20 + list(idle) + [(95.0, 100.0)] * 20
    closed = [out for i, (sm, util) in enumerate(readings)
              for out in det.feed_gpu(_sample(i, sm=sm, util=util, rx=2e6))
              if isinstance(out, Gap) and out.end_s is not None]
    (gap,) = closed
    return gap


@pytest.mark.parametrize(("util", "busy_words"), [(60.0, False), (95.0, True)])
def test_a_gap_is_said_busy_on_gpu_util_only_from_ninety_percent(util: float,
                                                                  busy_words: bool) -> None:
    """Half is half busy: "a GPU-Util dashboard shows it busy" is said from 90 % on."""
    gap = _one_gap([(0.0, 100.0)] * 3 + [(0.0, util)] * 10)  # the first 300 ms: NVML lags
    assert gap.gpu_util_pct == pytest.approx(util)
    assert ("a GPU-Util dashboard shows it busy" in head_lines(gap)[-1]) is busy_words


def test_a_gap_judged_partly_by_utilization_gpu_has_no_gpu_util_beside_it() -> None:
    """A GPU whose SM activity came only partway through a gap: the gap is of low confidence,
    and its GPU-Util, part of what judged it, is not held against it."""
    gap = _one_gap([(None, 5.0)] * 5 + [(0.0, 60.0)] * 10, before=(None, 95.0))
    assert gap.confidence == "low" and gap.gpu_util_pct is None
