"""NvmlSource against a fake pynvml: signal choice, GPM staleness, counters, legacy, errors."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from fake_pynvml import MIB, FakeDevice, FakeNvml, install

from gapwatch.config import SamplerConfig
from gapwatch.core.models import GpuSample
from gapwatch.sources import SourceUnavailable, Tick
from gapwatch.sources.nvml import NvmlSource

MS = 1_000_000
DATA = Path(__file__).parent / "data"

#: Each source a test opens is closed at its end (its XID thread stops): tests/conftest.py.
pytestmark = pytest.mark.usefixtures("nvml_sources_closed")


def make(monkeypatch: pytest.MonkeyPatch, *devices: FakeDevice,
         **config: Any) -> tuple[FakeNvml, NvmlSource]:
    fake = install(monkeypatch, list(devices) or [FakeDevice()])
    source = NvmlSource(SamplerConfig(**config), now_ns=lambda: 0)
    return fake, source


def samples(ticks: list[Tick], gpu: int = 0) -> list[GpuSample]:
    return [s for t in ticks for s in t.gpu if s.gpu == gpu]


def notices(ticks: list[Tick]) -> list[str]:
    return [n.message for t in ticks for n in t.notices]


# ---------------------------------------------------------------- GPM


def test_gpm_gives_sm_activity_and_pcie_in_bytes_per_s(monkeypatch: pytest.MonkeyPatch) -> None:
    dev = FakeDevice(activity=[(0, 96.0, 50e9, 2e9)])
    fake, source = make(monkeypatch, dev)
    [info] = source.open()
    assert (info.name, info.sm_source, info.pcie_source) == ("NVIDIA H200", "gpm", "gpm")
    assert info.link_gen == 5 and info.link_width == 16
    assert info.link_bytes_per_s == pytest.approx(63.0e9, rel=0.01)

    ticks = fake.run(source, 100 * MS, 5)
    first, *rest = samples(ticks)
    # The first sample only opens the first GPM interval.
    assert first.sm_active_pct is None and first.interval_ns is None
    assert len(rest) == 4
    for s in rest:
        assert s.sm_active_pct == pytest.approx(96.0)
        assert s.pcie_rx_bytes_per_s == pytest.approx(50e9)
        assert s.pcie_tx_bytes_per_s == pytest.approx(2e9)
        assert s.interval_ns == 100 * MS
        assert (s.sm_source, s.pcie_source, s.gpu_util_pct) == ("gpm", "gpm", 50.0)


def test_a_gpm_ratio_above_100_percent_is_written_as_100_so_it_reads_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fake, source = make(monkeypatch, FakeDevice(activity=[(0, 100.4, 50e9, 2e9)]))
    source.open()
    s = samples(fake.run(source, 100 * MS, 3))[-1]
    assert s.sm_active_pct == 100.0
    assert msgspec.json.decode(msgspec.json.encode(s), type=GpuSample) == s


def test_gpm_at_50ms_extends_the_interval_instead_of_reporting_fake_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    # GPU fully busy the whole time: any sample with SM 0 would be an invented idle gap.
    fake, source = make(monkeypatch, FakeDevice(activity=[(0, 95.0, 13e6, 4e6)]))
    source.open()
    ticks = fake.run(source, 50 * MS, 41)
    real = samples(ticks)[1:]
    assert real, "no samples at all"
    assert all(s.sm_active_pct == pytest.approx(95.0) for s in real)
    assert all(s.interval_ns == 100 * MS for s in real)
    assert len(real) == 20  # one per GPM refresh, none for the stale readings in between


def test_gpm_at_25ms_the_real_reading_covers_all_stale_ticks(monkeypatch: pytest.MonkeyPatch) -> None:
    # Busy for the first 300 ms, then idle: the averages must match the whole interval.
    dev = FakeDevice(activity=[(0, 96.0, 1e9, 1e9), (300 * MS, 0.0, 2e6, 1e6)])
    fake, source = make(monkeypatch, dev)
    source.open()
    ticks = fake.run(source, 25 * MS, 25)
    real = samples(ticks)[1:]
    assert [s.t_mono_ns for s in real] == [100 * MS * k for k in range(1, 7)]
    assert [s.sm_active_pct for s in real] == pytest.approx([96.0, 96.0, 96.0, 0.0, 0.0, 0.0])
    assert all(s.interval_ns == 100 * MS for s in real)


def test_gpm_reading_all_zero_for_a_second_is_believed(monkeypatch: pytest.MonkeyPatch) -> None:
    # A link that truly moved nothing: after GPM_MAX_EXTEND_NS the zeros are a measurement.
    fake, source = make(monkeypatch, FakeDevice(activity=[(0, 0.0, 0.0, 0.0)]))
    source.open()
    real = samples(fake.run(source, 100 * MS, 25))[1:]
    assert [s.interval_ns for s in real] == [1000 * MS, 1000 * MS]
    assert all(s.sm_active_pct == 0.0 and s.pcie_rx_bytes_per_s == 0.0 for s in real)


def test_real_h200_50ms_trace_pattern_gives_no_zero_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    """Feed the stale/real alternation recorded on the H200 (tests/data slice of pinned.csv)."""
    with open(DATA / "h200-pinned-50ms-slice.csv") as f:
        rows = [
            (float(r["sm_active_pct"]), float(r["pcie_rx_bytes_per_s"]) / MIB,
             float(r["pcie_tx_bytes_per_s"]) / MIB)
            for r in csv.DictReader(f)
        ]
    fake, source = make(monkeypatch, FakeDevice(gpm_script=list(rows)))
    source.open()
    real = samples(fake.run(source, 50 * MS, len(rows) + 1))[1:]
    non_stale = [r for r in rows if any(r)]
    assert len(real) == len(non_stale) == len(rows) // 2
    assert [s.sm_active_pct for s in real] == [r[0] for r in non_stale]
    assert not any(
        s.sm_active_pct == 0 and s.pcie_rx_bytes_per_s == 0 and s.pcie_tx_bytes_per_s == 0
        for s in real
    )
    # Each real reading after the first covers its stale predecessor too.
    assert {s.interval_ns for s in real[1:]} == {100 * MS}
    # The compute phase of the trace is visible, as it was on the GPU.
    assert max(s.sm_active_pct or 0.0 for s in real) > 95


def test_gpm_metric_unsupported_leaves_that_field_none_and_says_so_once(monkeypatch: pytest.MonkeyPatch) -> None:
    dev = FakeDevice(activity=[(0, 50.0, 1e9, 1e9)], metric_ret={2: 3})
    fake, source = make(monkeypatch, dev)
    source.open()
    ticks = fake.run(source, 100 * MS, 6)
    real = samples(ticks)[1:]
    assert all(s.sm_active_pct is None for s in real)
    assert all(s.pcie_rx_bytes_per_s == pytest.approx(1e9) for s in real)
    said = [m for m in notices(ticks) if "SM_UTIL" in m]
    assert len(said) == 1 and "Not Supported" in said[0]


# ---------------------------------------------------------------- counters


def counter_device(**kw: Any) -> FakeDevice:
    return FakeDevice(gpm=False, **kw)


def test_no_gpm_falls_back_to_counters_and_says_util_counts_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    fake, source = make(monkeypatch, counter_device(gen=4, activity=[(0, 0.0, 3e9, 1e9)]))
    [info] = source.open()
    assert (info.sm_source, info.pcie_source) == ("util", "counters")
    ticks = fake.run(source, 100 * MS, 4)
    assert any("counts copies as busy" in m for m in notices(ticks))
    first, *rest = samples(ticks)
    assert first.pcie_rx_bytes_per_s is None  # no previous counter yet
    for s in rest:
        assert s.pcie_rx_bytes_per_s == pytest.approx(3e9, rel=1e-6)
        assert s.pcie_tx_bytes_per_s == pytest.approx(1e9, rel=1e-6)
        assert s.sm_active_pct is None and s.gpu_util_pct == 50.0
        assert s.interval_ns == 100 * MS
        assert s.pcie_lower_bound is False  # Gen4 x16: 2^32 B takes 136 ms at line rate


def test_counter_wrap_is_unwrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    # Start 1 GB below 2^32 and move 10 GB/s: the counter wraps during the second interval.
    dev = counter_device(
        gen=4, activity=[(0, 0.0, 10e9, 0.0)], counter_offset=2**32 - 1_500_000_000
    )
    fake, source = make(monkeypatch, dev)
    source.open()
    rates = [s.pcie_rx_bytes_per_s for s in samples(fake.run(source, 100 * MS, 4))[1:]]
    assert rates == pytest.approx([10e9] * 3, rel=1e-6)


def test_counter_interval_longer_than_a_wrap_at_link_rate_is_a_lower_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    fake, source = make(monkeypatch, counter_device(gen=4))
    source.open()
    fake.tick(source, 0)
    fake.tick(source, 100 * MS)
    late = fake.tick(source, 300 * MS).gpu[0]  # a 200 ms interval: Gen4 x16 wraps in 136 ms
    assert late.pcie_lower_bound is True and late.interval_ns == 200 * MS
    assert fake.tick(source, 400 * MS).gpu[0].pcie_lower_bound is False


def test_counters_on_gen5_at_100ms_are_lower_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    fake, source = make(monkeypatch, counter_device(gen=5))
    source.open()
    assert all(s.pcie_lower_bound for s in samples(fake.run(source, 100 * MS, 3))[1:])


def test_64bit_counters_never_need_the_lower_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    fake, source = make(monkeypatch, counter_device(gen=5, counter_value_type=3))
    source.open()
    assert not any(s.pcie_lower_bound for s in samples(fake.run(source, 300 * MS, 3)))


def test_a_64bit_counter_that_goes_back_is_no_reading_not_1e20_bytes_a_second(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A GPU reset starts its counters again: unwrapped modulo 2^64 the drop read as ~1e20 B/s,
    # which the live detector summed and a recording could not read back.
    dev = counter_device(gen=5, counter_value_type=3, activity=[(0, 0.0, 3e9, 1e9)],
                         counter_offset=10**12)
    fake, source = make(monkeypatch, dev)
    source.open()
    fake.tick(source, 0)
    fake.tick(source, 100 * MS)
    dev.counter_offset = 0
    reset = fake.tick(source, 200 * MS).gpu[0]
    assert reset.pcie_rx_bytes_per_s is None and reset.pcie_tx_bytes_per_s is None
    after = fake.tick(source, 300 * MS).gpu[0]
    assert after.pcie_rx_bytes_per_s == pytest.approx(3e9, rel=1e-6)


# ---------------------------------------------------------------- legacy


def test_legacy_calls_pcie_throughput_rarely_and_once_per_tick_at_most(monkeypatch: pytest.MonkeyPatch) -> None:
    devs = [FakeDevice(gpm=False, counters=False), FakeDevice(gpm=False, counters=False)]
    fake, source = make(monkeypatch, *devs, legacy_pcie_every_s=5.0)
    infos = source.open()
    assert [(i.sm_source, i.pcie_source) for i in infos] == [("util", "legacy")] * 2
    per_tick = []
    ticks = []
    for k in range(100):  # 10 s at 100 ms
        before = sum(d.calls["nvmlDeviceGetPcieThroughput"] for d in devs)
        ticks.append(fake.tick(source, k * 100 * MS))
        per_tick.append(sum(d.calls["nvmlDeviceGetPcieThroughput"] for d in devs) - before)
    assert max(per_tick) == 1
    # RX then TX for each GPU, every 5 s: 2 rounds x 2 GPUs x 2 directions.
    assert sum(per_tick) == 8
    rx = [s.pcie_rx_bytes_per_s for s in samples(ticks) if s.pcie_rx_bytes_per_s is not None]
    assert rx == [2_000_000 * 1024.0] * 2
    assert all(s.gpu_util_pct == 50.0 and s.pcie_source == "legacy" for s in samples(ticks))
    # Between the rare calls PCIe is missing, not 0.
    assert sum(s.pcie_rx_bytes_per_s is None for s in samples(ticks)) == 98


def test_use_counters_off_goes_straight_to_legacy(monkeypatch: pytest.MonkeyPatch) -> None:
    fake, source = make(monkeypatch, FakeDevice(), use_gpm=False, use_counters=False)
    [info] = source.open()
    assert info.pcie_source == "legacy"


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("code", [3, 4, 6], ids=["not_supported", "no_permission", "not_found"])
def test_unsupported_utilization_is_none_said_once_and_not_retried(
        monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    dev = FakeDevice(fail={"nvmlDeviceGetUtilizationRates": code})
    fake, source = make(monkeypatch, dev)
    source.open()
    ticks = fake.run(source, 100 * MS, 10)
    assert all(s.gpu_util_pct is None for s in samples(ticks))
    assert all(s.sm_active_pct is not None for s in samples(ticks)[1:])
    said = [m for m in notices(ticks) if "utilization.gpu" in m]
    assert len(said) == 1
    assert dev.calls["nvmlDeviceGetUtilizationRates"] == 1


def test_transient_error_is_a_warning_once_and_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    dev = FakeDevice(fail={"nvmlDeviceGetUtilizationRates": 10})  # TIMEOUT
    fake, source = make(monkeypatch, dev)
    source.open()
    ticks = fake.run(source, 100 * MS, 3)
    del dev.fail["nvmlDeviceGetUtilizationRates"]
    ticks += fake.run(source, 100 * MS, 2, start_ns=300 * MS)
    utils = [s.gpu_util_pct for s in samples(ticks)]
    assert utils == [None, None, None, 50.0, 50.0]
    assert [n.level for t in ticks for n in t.notices] == ["warning"]


@pytest.mark.parametrize("code", [15, 999], ids=["gpu_is_lost", "unknown"])
def test_lost_gpu_stops_while_the_other_goes_on(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    gpu0 = FakeDevice(activity=[(0, 90.0, 1e9, 1e9)])
    gpu1 = FakeDevice(uuid="GPU-1", activity=[(0, 10.0, 1e9, 1e9)])
    fake, source = make(monkeypatch, gpu0, gpu1)
    source.open()
    ticks = fake.run(source, 100 * MS, 3)
    gpu1.fail["nvmlGpmSampleGet"] = code
    ticks += fake.run(source, 100 * MS, 5, start_ns=300 * MS)
    assert len(samples(ticks, 0)) == 8
    assert len(samples(ticks, 1)) == 3
    lost = [n for t in ticks for n in t.notices if n.level == "error"]
    assert len(lost) == 1 and lost[0].gpu == 1 and "lost" in lost[0].message
    assert gpu1.calls["nvmlGpmSampleGet"] == 4  # never asked again after it was lost


def test_gpu_lost_at_open_is_reported_and_the_others_start(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu1 = FakeDevice(fail={"nvmlDeviceGetHandleByIndex": 15})
    fake, source = make(monkeypatch, FakeDevice(), gpu1)
    infos = source.open()
    assert infos[1].index == 1 and infos[1].sm_source is None
    ticks = fake.run(source, 100 * MS, 2)
    assert len(samples(ticks, 0)) == 2 and not samples(ticks, 1)
    assert any(n.gpu == 1 and n.level == "error" for n in ticks[0].notices)


@pytest.mark.parametrize(
    ("code", "why"), [(12, "libnvidia-ml.so.1 not found"), (9, "driver is not loaded")]
)
def test_no_driver_is_a_one_line_pointer_to_demo_and_replay(
        monkeypatch: pytest.MonkeyPatch, code: int, why: str) -> None:
    fake, source = make(monkeypatch)
    fake.init_error = code
    with pytest.raises(SourceUnavailable) as err:
        source.open()
    message = str(err.value)
    assert why in message and "\n" not in message
    assert "gapwatch demo" in message and "--source replay:FILE" in message


def test_missing_pynvml_package_is_source_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(SourceUnavailable, match="nvidia-ml-py.*gapwatch demo"):
        NvmlSource(SamplerConfig()).open()


def test_no_gpu_and_unknown_gpu_index_are_source_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = install(monkeypatch, [])
    with pytest.raises(SourceUnavailable, match="no NVIDIA GPU"):
        NvmlSource(SamplerConfig()).open()
    fake.devices.append(FakeDevice())
    with pytest.raises(SourceUnavailable, match=r"GPU 3 not found.*has 1"):
        NvmlSource(SamplerConfig(gpus=[0, 3])).open()
    assert not fake.initialised  # shut NVML down again


def test_gpu_selection_reads_only_the_chosen_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    fake, source = make(monkeypatch, FakeDevice(), FakeDevice(), gpus=[1])
    assert [i.index for i in source.open()] == [1]
    assert {s.gpu for s in samples(fake.run(source, 100 * MS, 3), 1)} == {1}


def test_close_frees_gpm_samples_and_shuts_nvml_down(monkeypatch: pytest.MonkeyPatch) -> None:
    fake, source = make(monkeypatch, FakeDevice(), FakeDevice())
    source.open()
    fake.run(source, 100 * MS, 2)
    source.close()
    assert fake.samples_allocated == fake.samples_freed == 4
    assert not fake.initialised


def test_importing_the_module_does_not_import_pynvml() -> None:
    code = "import sys, gapwatch.sources.nvml; assert 'pynvml' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parent.parent)


def test_fake_raises_the_error_subclass_like_pynvml() -> None:
    from fake_pynvml import NVMLError

    err = NVMLError(15)
    assert type(err).__name__ == "NVMLError_GpuIsLost" and err.value == 15
    assert isinstance(err, NVMLError) and str(err) == "GPU is lost"
    assert FakeNvml([]).module.NVMLError_NotSupported().value == 3
