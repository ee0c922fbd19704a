"""The real H200 recordings made by bench/nvml_h200.py (100 ms and 50 ms) read back and show
what the NVML source is for: copies at SM 0 %, a matmul at ~96 %, PCIe matching timed copies,
and no fake idle from stale GPM readings at 50 ms. Their phases come from the *.bench.json files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from evaluation import nvml_h200 as bench
from gapwatch.config import Config
from gapwatch.offline.report import build_report
from gapwatch.sources.files import read_any
from gapwatch.sources.recording import Recording

DATA = Path(__file__).parent / "data"


def load(name: str) -> tuple[Recording, list[dict[str, Any]], dict[str, dict[str, Any]]]:
    recording = read_any(DATA / f"{name}.jsonl.gz")
    gpu = [msgspec.structs.asdict(r) for r in recording.records if r.type == "gpu"]
    phases = json.loads((DATA / f"{name}.bench.json").read_text())["phases"]
    return recording, gpu, {p["name"]: p for p in phases}


@pytest.mark.parametrize("name", ["h200-sampler", "h200-sampler-50ms"])
def test_real_recording_tells_copies_from_compute(name: str) -> None:
    recording, gpu, phases = load(name)
    assert recording.header.gpus[0].sm_source == "gpm"
    assert not recording.problems
    pinned = bench.phase_summary(gpu, phases["pinned_h2d"])
    pageable = bench.phase_summary(gpu, phases["pageable_h2d"])
    matmul = bench.phase_summary(gpu, phases["matmul"])
    # Copies keep utilization.gpu high (pinned) while SMs do nothing: the reason SM activity,
    # not utilization.gpu, decides idle.
    assert pinned["sm_active_pct_mean"] < 1 and pinned["gpu_util_pct_mean"] > 90
    assert pageable["sm_active_pct_mean"] < 1
    assert matmul["sm_active_pct_mean"] > 90 and matmul["idle_samples"] == 0
    # GPM PCIe RX agrees with timed copies within 10 % (PCIe protocol overhead: ~+7 %).
    for copy in (pinned, pageable):
        assert 0.9 < copy["rx_over_timed"] < 1.1
    assert pinned["timed_bytes_per_s"] > 5 * pageable["timed_bytes_per_s"]


def test_50ms_recording_has_no_stale_zero_samples() -> None:
    _, gpu, _ = load("h200-sampler-50ms")
    real = [s for s in gpu if s["interval_ns"]]
    assert not any(
        s["sm_active_pct"] == 0 and s["pcie_rx_bytes_per_s"] == 0 and s["pcie_tx_bytes_per_s"] == 0
        for s in real
    )
    # Stale ticks emit nothing, and the next reading covers them: the intervals tile time, so
    # every stretch of the run is accounted for exactly once.
    for prev, cur in zip(real, real[1:], strict=False):  # consecutive pairs
        assert cur["t_mono_ns"] - cur["interval_ns"] == prev["t_mono_ns"]
    # About one reading per GPM refresh (~100 ms), i.e. half the 50 ms ticks.
    assert sum(s["interval_ns"] >= 90_000_000 for s in real) > 0.95 * len(real)


def test_a_healthy_h200_recording_reports_no_missed_reading() -> None:
    """The GPU's first GPM sample has no reading (it opens GPM's first interval), and no
    other sample missed one: the report's input line said `detector_no_data 1` all the same."""
    _, gpu, _ = load("h200-sampler-50ms")
    assert gpu[0]["sm_active_pct"] is None
    assert all(s["sm_active_pct"] is not None for s in gpu[1:])
    report = build_report(DATA / "h200-sampler-50ms.jsonl.gz", Config(), workers=1)
    assert "detector_no_data" not in report.counters
