"""bench/nvml_h200.py: its pure helpers, and one short end-to-end run over the fake pynvml."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from fake_pynvml import FakeDevice, install

ROOT = Path(__file__).parent.parent
spec = importlib.util.spec_from_file_location("nvml_h200", ROOT / "bench" / "nvml_h200.py")
assert spec is not None and spec.loader is not None
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def sample(t: float, interval_s: float = 0.1, **fields: object) -> dict[str, object]:
    base = {"t_wall_s": t, "interval_ns": int(interval_s * 1e9), "sm_active_pct": 0.0,
            "gpu_util_pct": 0.0, "pcie_rx_bytes_per_s": 1e6, "pcie_tx_bytes_per_s": 1e6,
            "sm_source": "gpm", "pcie_source": "gpm"}
    base.update(fields)
    return base


def test_percentile_and_mean():
    assert bench.percentile([], 0.5) is None
    assert bench.percentile([3.0, 1.0, 2.0, 4.0], 0.5) == 3.0
    assert bench.percentile([1.0] * 99 + [50.0], 0.99) == 50.0
    assert bench.mean([1.0, 3.0]) == 2.0 and bench.mean([]) is None


def test_only_samples_wholly_inside_a_phase_count():
    phase = {"name": "pinned_h2d", "start_wall_s": 10.0, "end_wall_s": 12.0,
             "timed_bytes_per_s": 50e9, "wall_bytes_per_s": 49e9}
    samples = [
        sample(10.2, pcie_rx_bytes_per_s=1e9),  # starts at 10.1: inside the 0.25 s margin
        sample(10.5, pcie_rx_bytes_per_s=54e9),
        sample(11.0, pcie_rx_bytes_per_s=53e9),
        sample(11.9, pcie_rx_bytes_per_s=2e9),  # ends in the margin
    ]
    out = bench.phase_summary(samples, phase)
    assert out["samples"] == 2
    assert out["pcie_rx_bytes_per_s_mean"] == pytest.approx(53.5e9)
    assert out["rx_over_timed"] == pytest.approx(53.5 / 50)
    assert out["rx_over_wall"] == pytest.approx(53.5 / 49)


def test_report_counts_fake_idle_in_matmul_and_sources():
    phases = [{"name": "matmul", "start_wall_s": 0.0, "end_wall_s": 3.0}]
    samples = [sample(0.1 * k, sm_active_pct=96.0) for k in range(5, 25)]
    samples[10] = sample(1.5, sm_active_pct=0.0, pcie_rx_bytes_per_s=0.0, pcie_tx_bytes_per_s=0.0)
    r = bench.report(samples, phases, [0.1, 0.2, 5.0], ticks=40,
                     cpu={"elapsed_s": 4.0, "gpu_read_cpu_s": 0.004, "thread_cpu_s": 0.01},
                     n_gpus=1)
    assert r["fake_idle_in_matmul"] == 1 and r["all_zero_samples"] == 1
    assert r["signal_sources"] == ["sm=gpm pcie=gpm"]
    assert r["lateness_ms"] == {"p50": 0.2, "p99": 5.0, "max": 5.0}
    assert r["sampler_cpu_pct_of_core_per_gpu"]["gpu_source_read"] == pytest.approx(0.1)
    assert r["samples_per_tick_per_gpu"] == pytest.approx(0.5)


def test_help_runs(capsys):
    with pytest.raises(SystemExit) as done:
        bench.parse_args(["--help"])
    assert done.value.code == 0
    assert "--period-ms" in capsys.readouterr().out


def test_short_run_over_fake_nvml_writes_results_and_a_readable_recording(
    monkeypatch, tmp_path
):
    install(monkeypatch, [FakeDevice(activity=[(0, 96.0, 20e9, 1e9)])])

    def fake_workload(args, result):
        return [{"name": "matmul", "start_wall_s": 0.0, "end_wall_s": 1.0}]

    monkeypatch.setattr(bench, "workload", fake_workload)
    out, rec = tmp_path / "r.json", tmp_path / "r.jsonl"
    code = bench.main(["--duration", "0.3", "--period-ms", "50", "--out", str(out),
                       "--record", str(rec)])
    result = json.loads(out.read_text())
    assert code == 0, result["errors"]
    assert result["gpus"][0]["sm_source"] == "gpm"
    assert result["report"]["ticks"] >= 1
    from gapwatch.sources.files import read_any

    recording = read_any(rec)
    records = list(recording.records)
    assert recording.header.gpus[0].name == "NVIDIA H200"
    assert any(r.type == "gpu" for r in records) and any(r.type == "host" for r in records)
