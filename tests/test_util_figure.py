"""GPU-Util beside the SMs: what nvidia-smi shows held against what the SMs did, in seconds.

The figure (`gapwatch.core.util_figure`) is kept by the chaining meter over each reading's
interval; the report, the dashboard's one-GPU health line and the snapshot say it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sim_recordings import ran_to_end

from evaluation.simulate import simulate
from gapwatch.config import Config, build_config
from gapwatch.core.chaining import ChainingMeter
from gapwatch.core.config import DetectorConfig
from gapwatch.core.models import GpuInfo, GpuSample, SignalSource
from gapwatch.offline.report import build_report, to_json
from gapwatch.offline.report_text import format_text
from gapwatch.sinks.snapshot import SUMMARY_NAME, write_snapshot
from gapwatch.sources.sim import truth_gaps

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


def test_idle_sms_under_pinned_copies_are_the_seconds_gpu_util_called_busy() -> None:
    meter = _meter()
    for i in range(60):  # 6 s of kernels: both say busy
        meter.add_sample(_sample(i, sm=95.0, util=99.0))
    for i in range(60, 100):  # 4 s of pinned copies with the SMs idle: GPU-Util 99 %
        meter.add_sample(_sample(i, sm=0.0, util=99.0, rx=55e9))
    f = meter.util_figure(0)
    assert f is not None and f.window_s is None
    assert f.read_s == pytest.approx(10.0)
    assert f.util_share == pytest.approx(0.99)
    assert f.sm_busy_share == pytest.approx(0.6)
    assert f.idle_s == pytest.approx(4.0) and f.idle_util_s == pytest.approx(3.96)
    assert f.hidden_share() == pytest.approx(0.4)
    assert f.words() == ("GPU-Util (what nvidia-smi shows) 99 % against SMs busy 60 % of "
                         "10.0 s: it counted 4.0 s of the 4.0 s the SMs sat idle as busy")
    assert f.cell() == "GPU-Util 99%"


def test_a_reading_without_both_figures_counts_for_nothing_and_none_is_no_figure() -> None:
    meter = _meter()
    for i in range(50):  # GPU-Util missing: nothing to hold the SMs against
        meter.add_sample(_sample(i, sm=0.0, util=None))
    for i in range(50, 100):  # SM activity missing (a NaN is no reading either)
        meter.add_sample(_sample(i, sm=float("nan") if i % 2 else None, util=99.0))
    assert meter.util_figure(0) is None
    assert meter.util_figures() == {}
    meter.add_sample(_sample(100, sm=0.0, util=40.0))  # 0.1 s: under a second is no figure
    assert meter.util_figure(0) is None


def test_a_stale_gpm_reading_is_left_out_as_the_detector_leaves_it_out() -> None:
    meter = _meter()
    for i in range(0, 40, 2):
        meter.add_sample(_sample(i, sm=95.0, util=99.0, source="gpm"))
        # GPM with nothing new: every metric exactly 0.0 over a short interval. Its GPU-Util
        # (read apart from GPM) would have counted 2 s of idle SMs as busy.
        meter.add_sample(_sample(i + 1, sm=0.0, util=99.0, rx=0.0, tx=0.0, source="gpm"))
    f = meter.util_figure(0)
    assert f is not None and f.idle_util_s == 0.0 and f.sm_busy_share == 1.0


def test_the_live_figure_is_over_the_last_minute_only() -> None:
    meter = _meter(window_s=60.0)
    for i in range(1200):  # two minutes: GPU-Util 99 % with idle SMs, then 10 % with busy SMs
        early = i < 600
        meter.add_sample(_sample(i, sm=0.0 if early else 95.0, util=99.0 if early else 10.0))
    f = meter.util_figure(0)
    assert f is not None and f.window_s == 60.0
    assert f.read_s <= 60.0 and f.util_share == pytest.approx(0.10)
    assert f.sm_busy_share == 1.0 and f.idle_util_s == 0.0


def test_the_report_holds_the_h200s_gpu_util_against_its_sms() -> None:
    """The shared H200 pageable recording: nvidia-smi's GPU-Util averaged about what the SMs
    did (pageable copies keep the copy engine busy only ~8-10 % of the time), and counted 1 s
    of the 23.8 s of idle SMs as busy."""
    r = build_report(DATA / "pageable.csv", Config())
    f = r.util[0]
    assert f.util_share == pytest.approx(0.32, abs=0.01)
    assert f.sm_busy_share == pytest.approx(0.33, abs=0.01)
    assert f.idle_s == pytest.approx(23.8, abs=0.1) and f.idle_util_s == pytest.approx(1.0, abs=0.1)
    text = format_text(r)
    assert ("GPU-Util (what nvidia-smi shows) 32 % against SMs busy 33 % of 35.2 s: it counted "
            "1.0 s of the 23.8 s the SMs sat idle as busy") in text
    doc = to_json(r)["gpu_util"]["0"]
    assert doc["gpu_util_share"] == pytest.approx(f.util_share)
    assert doc["sm_idle_util_busy_s"] == pytest.approx(f.idle_util_s)
    assert set(doc) == {"read_s", "gpu_util_share", "sm_busy_share", "sm_idle_s",
                        "sm_idle_util_busy_s", "util_busy_sm_idle_share"}


def test_the_h200s_transfer_bound_run_reads_busy_on_gpu_util_while_its_sms_sat_idle() -> None:
    """Pinned copies at line rate that the kernels do not overlap (the H200 end-to-end run,
    recorded live from NVML): nvidia-smi's GPU-Util averaged 86 %, the SMs were busy 22 % of
    the time, and 27 of their 33 idle seconds read as busy."""
    r = build_report(DATA / "h200-e2e" / "transfer-bound" / "rec.jsonl.gz", Config())
    f = r.util[0]
    assert f.util_share == pytest.approx(0.86, abs=0.01)
    assert f.sm_busy_share == pytest.approx(0.22, abs=0.01)
    assert f.idle_s == pytest.approx(33.0, abs=0.1) and f.idle_util_s == pytest.approx(27.0, abs=0.1)


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
    """Pinned copies not overlapped with kernels (`sim:transfer-bound`): GPU-Util reads far
    above the share of time the SMs were busy, and the snapshot's health table says both."""
    config = build_config({"snapshot": {"auto": False}})
    rt = ran_to_end(config, "sim:transfer-bound", 90.0)
    snap = rt.store.snapshot()
    f = snap.util[0]
    assert f.window_s == 60.0 and 50.0 <= f.read_s <= 60.0
    assert f.util_share > f.sm_busy_share + 0.2 and f.idle_util_s > 5.0
    folder = write_snapshot(tmp_path, snap, rt.header, config, t_wall_s=snap.states[0].t_wall_s,
                            reason="by hand (key s)")
    summary = (folder / SUMMARY_NAME).read_text()
    assert (f"| {f.util_share * 100:.0f}% vs SMs busy {f.sm_busy_share * 100:.0f}% |"
            in summary)
