"""GPU health, processes and GPU errors from the NVML source, against the fake pynvml: health every
second per GPU with missing readings None, ECC counts and PCIe replays that grow as events, XID
critical errors from a thread that waits for them, each process's GPU memory, and a process whose
GPU memory keeps growing for an hour said once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import pytest
from fake_pynvml import (
    NVML_ERROR_GPU_IS_LOST,
    NVML_ERROR_NO_PERMISSION,
    NVML_ERROR_NOT_SUPPORTED,
    FakeDevice,
    FakeNvml,
    install,
)
from proc_fakes import PROVER_STATUS, fake_proc

from gapwatch.cli import main
from gapwatch.config import SamplerConfig
from gapwatch.core.health import (
    HealthStats,
    event_level,
    event_words,
    health_cells,
    throttle_words,
)
from gapwatch.core.models import GpuHealth, HardwareEvent, Notice, ProcessMemory
from gapwatch.sources import Tick
from gapwatch.sources.files import read_any
from gapwatch.sources.nvml import NvmlSource

R = TypeVar("R")
MS = 1_000_000
S = 1_000_000_000
GIB = 1 << 30


def make(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *devices: FakeDevice,
         whole_xid_waits: bool = False, **config: Any) -> tuple[FakeNvml, NvmlSource]:
    fake = install(monkeypatch, list(devices) or [FakeDevice()])
    if whole_xid_waits:
        fake.xid_wait_cap_s = None  # each wait blocks the driver's whole timeout
    root = fake_proc(tmp_path, {4242: PROVER_STATUS})
    config.setdefault("xid_events", False)
    source = NvmlSource(SamplerConfig(**config), now_ns=lambda: 0, proc_root=str(root))
    source.open()
    return fake, source


def others(ticks: list[Tick], kind: type[R]) -> list[R]:
    return [r for t in ticks for r in t.other if isinstance(r, kind)]


def test_health_is_read_once_a_second_per_gpu_with_every_field(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    fake, source = make(monkeypatch, tmp_path, FakeDevice(), FakeDevice(uuid="GPU-1"))
    ticks = fake.run(source, 100 * MS, 31)  # 3 s at 100 ms
    health = others(ticks, GpuHealth)
    assert sorted({h.t_mono_ns // S for h in health}) == [0, 1, 2, 3]
    assert [h.gpu for h in health[:2]] == [0, 1]
    h = health[0]
    assert (h.memory_used_bytes, h.memory_total_bytes) == (60 * GIB, 141 * GIB)
    assert (h.temperature_c, h.power_w, h.power_limit_w) == (52.0, 450.0, 700.0)
    assert (h.sm_clock_mhz, h.memory_clock_mhz, h.clocks_event_mask) == (1980, 3201, 0)
    assert (h.ecc_corrected_total, h.ecc_uncorrected_total) == (0, 0)
    # Nine cheap calls per GPU per second, never per tick.
    assert fake.devices[0].calls["nvmlDeviceGetTemperature"] == 4


def test_nvml_not_available_sentinels_are_none_not_readings_a_recording_cannot_hold(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # NVML answers "not available" with all-ones values in some fields: 2^64-1 ECC errors or
    # 4.29 MW could not be read back from the recording they were written to.
    dev = FakeDevice(power_mw=0xFFFFFFFF, temperature=0xFFFFFFFF, memory_clock=0xFFFFFFFF,
                     ecc={0: 0xFFFFFFFFFFFFFFFF, 1: 3})
    fake, source = make(monkeypatch, tmp_path, dev)
    h = others(fake.run(source, 100 * MS, 1), GpuHealth)[0]
    assert (h.power_w, h.temperature_c, h.memory_clock_mhz) == (None, None, None)
    assert (h.ecc_corrected_total, h.ecc_uncorrected_total) == (None, 3)
    assert (h.power_limit_w, h.sm_clock_mhz) == (700.0, 1980)
    assert msgspec.json.decode(msgspec.json.encode(h), type=GpuHealth) == h


def test_a_power_limit_of_zero_is_none_read_not_a_limit(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    """A 0 W limit (no GPU runs on it) was kept: the report said "450 W of 0 W" and /metrics
    exported 0, where the header took it as none. It is None at the source, for all of them."""
    fake, source = make(monkeypatch, tmp_path, FakeDevice(power_limit_mw=0))
    h = others(fake.run(source, 100 * MS, 1), GpuHealth)[0]
    assert (h.power_w, h.power_limit_w) == (450.0, None)


def test_the_pcie_replay_counter_is_read_rarely(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    fake, source = make(monkeypatch, tmp_path, pcie_replay_every_s=60.0)
    ticks = fake.run(source, 100 * MS, 1201)  # 2 min
    assert fake.devices[0].calls["nvmlDeviceGetPcieReplayCounter"] == 3
    replays = [h.pcie_replay_total for h in others(ticks, GpuHealth)]
    assert replays.count(0) == 3 and replays.count(None) == len(replays) - 3


def test_an_unsupported_reading_is_none_said_once_and_not_called_again(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    dev = FakeDevice(fail={"nvmlDeviceGetTemperature": NVML_ERROR_NOT_SUPPORTED,
                           "nvmlDeviceGetTotalEccErrors": NVML_ERROR_NOT_SUPPORTED})
    fake, source = make(monkeypatch, tmp_path, dev)
    ticks = fake.run(source, 100 * MS, 51)
    health = others(ticks, GpuHealth)
    assert all(h.temperature_c is None and h.ecc_uncorrected_total is None for h in health)
    assert all(h.power_w == 450.0 for h in health)
    assert dev.calls["nvmlDeviceGetTemperature"] == 1
    said = [n.message for t in ticks for n in t.notices if "temperature" in n.message]
    assert said == ["GPU 0: temperature not available (Not Supported): shown as missing"]


def test_a_gpu_whose_every_health_reading_nvml_refuses_is_said_so_not_no_readings(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    refused = {name: NVML_ERROR_NOT_SUPPORTED for name in (
        "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetTemperature", "nvmlDeviceGetPowerUsage",
        "nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetClockInfo",
        "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetTotalEccErrors",
        "nvmlDeviceGetPcieReplayCounter")}
    fake, source = make(monkeypatch, tmp_path, FakeDevice(fail=refused))
    ticks = fake.run(source, 100 * MS, 31)
    stats = HealthStats(0)
    for h in others(ticks, GpuHealth):
        assert h == GpuHealth(0, h.t_mono_ns, h.t_wall_s)  # every field None, never 0
        stats.add(h)
    assert sum(len(t.gpu) for t in ticks) > 20  # the GPU's samples go on
    assert stats.words() == ("GPU 0: no value in 4 readings (NVML gave none: not supported "
                             "here?)")
    assert HealthStats(1).words() == "GPU 1: no readings"


def test_ecc_counts_and_replays_that_grow_are_events_with_their_count(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    dev = FakeDevice()
    fake, source = make(monkeypatch, tmp_path, dev, pcie_replay_every_s=1.0)
    ticks = fake.run(source, 100 * MS, 11)
    dev.ecc[1] = 2
    dev.pcie_replays = 40
    ticks += fake.run(source, 100 * MS, 11, start_ns=11 * 100 * MS)
    events = others(ticks, HardwareEvent)
    assert [(e.kind, e.count) for e in events] == [("ecc_uncorrected", 2), ("pcie_replay", 40)]
    words = [n for t in ticks for n in t.notices if "ECC" in n.message or "replay" in n.message]
    assert [n.level for n in words] == ["error", "warning"]
    assert "2 uncorrected ECC errors" in words[0].message


def test_a_row_remap_pending_or_failed_is_said_once_a_run_already_so_at_start_too(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Row remapping (Ampere and newer) was not read: a GPU whose memory had a remap pending
    (retired only at the next reset) or one that failed ran on with nothing said. Each is a
    state: said when first seen, already true at gapwatch's start too, and not again."""
    pending, failed = FakeDevice(remapped_rows=(0, 1, 1, 0)), FakeDevice(uuid="GPU-1")
    fake, source = make(monkeypatch, tmp_path, pending, failed, row_remap_every_s=1.0)
    ticks = fake.run(source, 100 * MS, 11)
    failed.remapped_rows = (0, 3, 1, 1)
    ticks += fake.run(source, 100 * MS, 30, start_ns=11 * 100 * MS)
    events = [(e.gpu, e.kind) for e in others(ticks, HardwareEvent)]
    assert events == [(0, "row_remap_pending"), (1, "row_remap_failure"),
                      (1, "row_remap_pending")]
    said = {n.message: n.level for t in ticks for n in t.notices if "remap" in n.message}
    assert said == {
        "GPU 0: memory row remap pending (a row with errors is retired at the next GPU reset; "
        "until then its errors can recur: reset at the next pause)": "warning",
        "GPU 1: memory row remapping failed (a row with errors could not be remapped: reset "
        "the GPU; if it fails again, the GPU needs replacing)": "error",
        "GPU 1: memory row remap pending (a row with errors is retired at the next GPU reset; "
        "until then its errors can recur: reset at the next pause)": "warning"}
    assert pending.calls["nvmlDeviceGetRemappedRows"] == 5  # once a second here, not a tick
    assert failed.calls["nvmlDeviceGetRemappedRows"] == 3  # both said: not asked again


def test_row_remapping_is_read_with_the_health_round_off(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    """It was read inside the health round: `health_every_s = 0` left a failed remap, a
    critical alert, unread while `row_remap_every_s` said every minute."""
    dev = FakeDevice(remapped_rows=(0, 1, 1, 1))
    fake, source = make(monkeypatch, tmp_path, dev, health_every_s=0, row_remap_every_s=1.0)
    ticks = fake.run(source, 100 * MS, 11)
    assert not others(ticks, GpuHealth)
    assert [e.kind for e in others(ticks, HardwareEvent)] == ["row_remap_failure",
                                                              "row_remap_pending"]


def test_a_gpu_without_row_remapping_says_so_once_and_reads_on(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    old = FakeDevice(fail={"nvmlDeviceGetRemappedRows": NVML_ERROR_NOT_SUPPORTED})
    fake, source = make(monkeypatch, tmp_path, old, row_remap_every_s=1.0)
    ticks = fake.run(source, 100 * MS, 31)
    assert old.calls["nvmlDeviceGetRemappedRows"] == 1
    assert not others(ticks, HardwareEvent) and len(others(ticks, GpuHealth)) == 4
    assert [n.message for t in ticks for n in t.notices if "remap" in n.message] == [
        "GPU 0: row remapping not available (Not Supported): shown as missing"]


def test_a_gpu_that_falls_off_the_bus_is_a_gpu_lost_event_once_and_the_others_go_on(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # It was a notice only: nothing in the recording, the report's GPU errors, /metrics' GPU
    # errors, the alert rule or --on-event said that a GPU had gone.
    gone = FakeDevice(uuid="GPU-1")
    fake, source = make(monkeypatch, tmp_path, FakeDevice(), gone)
    ticks = fake.run(source, 100 * MS, 11)
    gone.fail = {name: NVML_ERROR_GPU_IS_LOST for name in (
        "nvmlGpmSampleGet", "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetComputeRunningProcesses")}
    ticks += fake.run(source, 100 * MS, 30, start_ns=11 * 100 * MS)
    events = others(ticks, HardwareEvent)
    assert [(e.gpu, e.kind, e.code) for e in events] == [(1, "gpu_lost", NVML_ERROR_GPU_IS_LOST)]
    assert event_words(events[0]) == ("GPU 1: lost (NVML: GPU is lost; fell off the bus or "
                                      "needs a reset): no more readings from it")
    assert event_level(events[0]) == "error"
    said = [n.message for t in ticks for n in t.notices if "lost" in n.message]
    assert len(said) == 1  # the notice with NVML's words, not a second one for the event
    late = [h.gpu for h in others(ticks[12:], GpuHealth)]
    assert late and set(late) == {0}


def test_a_gpu_whose_handle_nvml_refuses_without_losing_it_is_said_not_paged_as_lost(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A handle refused for no permission (or too little power) made a critical `gpu_lost`
    event saying "NVML: no answer", where NVML answered, and paged as a GPU off the bus. It
    is said as a GPU that cannot be read; one that NVML says is lost still is an event."""
    refused = FakeDevice(uuid="GPU-1", fail={"nvmlDeviceGetHandleByIndex":
                                             NVML_ERROR_NO_PERMISSION})
    fake, source = make(monkeypatch, tmp_path, FakeDevice(), refused)
    ticks = fake.run(source, 100 * MS, 11)
    assert others(ticks, HardwareEvent) == []
    said = [n.message for t in ticks for n in t.notices if "GPU 1" in n.message]
    assert any("cannot be read (no device handle)" in m for m in said), said
    assert {h.gpu for h in others(ticks, GpuHealth)} == {0}

    gone = FakeDevice(uuid="GPU-1", fail={"nvmlDeviceGetHandleByIndex": NVML_ERROR_GPU_IS_LOST})
    (tmp_path / "lost").mkdir()
    fake, source = make(monkeypatch, tmp_path / "lost", FakeDevice(), gone)
    ticks = fake.run(source, 100 * MS, 11)
    assert [(e.gpu, e.kind) for e in others(ticks, HardwareEvent)] == [(1, "gpu_lost")]


def test_a_throttled_gpu_says_why_in_words_and_idle_is_not_throttling() -> None:
    assert throttle_words(0x001) == ""
    assert throttle_words(0x004 | 0x020 | 0x001) == "power cap, thermal"
    h = GpuHealth(gpu=0, t_mono_ns=0, t_wall_s=0.0, memory_used_bytes=60 * GIB,
                  memory_total_bytes=141 * GIB, temperature_c=83.0, power_w=699.6,
                  power_limit_w=700.0, clocks_event_mask=0x004)
    assert health_cells(h) == ["60G/141G", "83°C", "700/700W", "power cap"]
    assert health_cells(GpuHealth(gpu=0, t_mono_ns=0, t_wall_s=0.0)) == ["mem ?", "?°C", "?W"]


def test_each_process_carries_its_gpu_memory(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    dev = FakeDevice(processes=[4242], process_gpu_memory={4242: 20 * GIB})
    fake, source = make(monkeypatch, tmp_path, dev)
    ticks = fake.run(source, 100 * MS, 21)
    procs = others(ticks, ProcessMemory)
    assert len(procs) == 3  # once a second: the processes panel's rhythm
    assert {(p.pid, p.name, p.gpu_memory_bytes) for p in procs} == {(4242, "cuzk-daemon", 20 * GIB)}


def test_gpu_memory_that_keeps_growing_for_an_hour_is_a_warning_said_once(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    dev = FakeDevice(processes=[4242], process_gpu_memory={4242: 20 * GIB})
    fake, source = make(monkeypatch, tmp_path, dev, procmem_every_s=60.0, health_every_s=0)
    said: list[str] = []
    for minute in range(0, 181):
        dev.process_gpu_memory[4242] = 20 * GIB + minute * (40 << 20)  # +40 MiB a minute
        tick = fake.tick(source, minute * 60 * S)
        said += [n.message for n in tick.notices if "grew" in n.message]
    # 2.3 GiB in the first hour: said then; again only once the growth doubled (4.6 GiB).
    assert len(said) == 2
    assert said[0].startswith("GPU 0: process 4242 (cuzk-daemon) GPU memory grew 2.3 GiB over 1.0 h")


def test_a_process_whose_gpu_memory_falls_back_is_not_a_leak(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    dev = FakeDevice(processes=[4242])
    fake, source = make(monkeypatch, tmp_path, dev, procmem_every_s=60.0, health_every_s=0)
    said = []
    for minute in range(0, 181):
        # Grows 2 GiB over 50 minutes, then frees it: a prover's batches, not a leak.
        dev.process_gpu_memory[4242] = 20 * GIB + (minute % 50) * (40 << 20)
        said += [n for n in fake.tick(source, minute * 60 * S).notices if "grew" in n.message]
    assert said == []


def test_an_xid_is_heard_by_its_thread_and_comes_with_the_next_tick(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake, source = make(monkeypatch, tmp_path, FakeDevice(), FakeDevice(uuid="GPU-1"),
                        xid_events=True)
    try:
        assert [mask for _, mask in fake.registered] == [8, 8]
        fake.tick(source, 0)
        fake.xid(fake.devices[1], 79)
        deadline = time.monotonic() + 5
        events: list[HardwareEvent] = []
        notices = []
        while not events and time.monotonic() < deadline:
            time.sleep(0.01)
            tick = fake.tick(source, 100 * MS)
            events = [r for r in tick.other if isinstance(r, HardwareEvent)]
            notices = tick.notices
        assert [(e.gpu, e.kind, e.code) for e in events] == [(1, "xid", 79)]
        assert [(n.level, n.message) for n in notices] == [
            ("error", "GPU 1: XID 79 (critical GPU error reported by the driver)")]
    finally:
        source.close()
    assert fake.event_sets_freed == fake.event_sets_created == 1


def test_the_xid_thread_sleeps_in_the_driver_between_events(monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path: Path) -> None:
    fake, source = make(monkeypatch, tmp_path, whole_xid_waits=True, xid_events=True)
    try:
        fake.tick(source, 0)  # the thread starts with the first tick
        time.sleep(1.2)
        # Each wait blocks its full timeout (500 ms): a handful of wake-ups, not a spin.
        assert 1 <= fake.waits <= 4
    finally:
        started = time.monotonic()
        source.close()
        assert time.monotonic() - started < 2.0


def test_a_driver_without_xid_events_says_so_and_the_rest_works(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    dev = FakeDevice(fail={"nvmlDeviceRegisterEvents": NVML_ERROR_NOT_SUPPORTED})
    fake, source = make(monkeypatch, tmp_path, dev, xid_events=True)
    tick = fake.tick(source, 0)
    assert any("XID events not available" in n.message for n in tick.notices)
    assert others([tick], GpuHealth)
    source.close()
    assert fake.event_sets_freed == 1


def test_an_xid_wait_that_dies_is_said_and_restarted_like_every_other_thread(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The XID thread was started at `open()`, before the runtime gave its threads a watch: a
    wait that raised printed a bare traceback, and neither the recording, the dashboard nor
    `/metrics` (`thread_up`) heard of it. It starts at the first tick now, under the watch."""
    fake = install(monkeypatch, [FakeDevice()])
    wait = fake.module.nvmlEventSetWait_v2
    broken: list[bool] = []

    def breaks_once(event_set: Any, timeout_ms: int) -> Any:
        if not broken:
            broken.append(True)
            raise RuntimeError("the driver's wait broke")
        return wait(event_set, timeout_ms)

    monkeypatch.setattr(fake.module, "nvmlEventSetWait_v2", breaks_once)
    out = tmp_path / "r.jsonl"
    # Exit 1, as for any thread of gapwatch's that died, restarted or not.
    assert main(["record", "--period-ms", "10", "--duration", "1.5", "--quiet",
                 "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    said = ("the nvml-xid thread died (RuntimeError(\"the driver's wait broke\")); "
            "restarted in a moment")
    assert said in err
    assert "gapwatch's own threads died: nvml-xid died 1x" in err
    assert [n.level for n in read_any(out).records
            if isinstance(n, Notice) and said in n.message] == ["error"]


def test_an_ecc_counter_that_jumps_beyond_any_count_is_no_event(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An event's count is at most `MAX_ERRORS_PER_EVENT`, so that sums of them stay 64-bit
    integers and what the source writes reads back: a counter that jumps by 2^40 (read as
    garbage once) is no count read, no event; a real growth after it still is."""
    dev = FakeDevice()
    fake, source = make(monkeypatch, tmp_path, dev, pcie_replay_every_s=1.0)
    ticks = fake.run(source, 100 * MS, 11)
    dev.ecc[1] = 1 << 40
    ticks += fake.run(source, 100 * MS, 11, start_ns=11 * 100 * MS)
    dev.ecc[1] = (1 << 40) + 3
    ticks += fake.run(source, 100 * MS, 11, start_ns=22 * 100 * MS)
    events = others(ticks, HardwareEvent)
    assert [(e.kind, e.count) for e in events] == [("ecc_uncorrected", 3)]
    for e in events:
        assert msgspec.json.decode(msgspec.json.encode(e), type=HardwareEvent) == e
