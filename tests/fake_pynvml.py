"""A fake `pynvml` module for the NVML source tests, installed in `sys.modules` by `install()`.

It mimics what gapwatch relies on from nvidia-ml-py and a real H200 (see
/work/shared/reference/nvml-facts.md): NVMLError subclasses built from the real NVML_ERROR_*
values, a GPM metrics request shaped like `c_nvmlGpmMetricsGet_t`, field values carrying their
own CPU-µs timestamp and `valueType`, 32-bit wrapping PCIe byte counters, and GPM counters that
refresh only every 100 ms (so sampling faster returns all-zero "no new data" readings, as the
hardware does).

Time is the fake's `now_ns`, advanced by the tests (`tick()`), so a device's counters and the
sampler's timestamps agree exactly. Each device's activity is a step function of time.

`stalls` make the next call block for seconds (a prover's exit freeing its pinned pool), moving
the clock; the exiting PIDs leave the process lists.

The link: `nvmlDeviceGetCurrPcieLinkGeneration/Width` answer `trained` (default: the maximum)
while the device moves data, and `idle_gen` when it does not, as a real link that down-trains
to save power. `processes` are the PIDs `nvmlDeviceGetComputeRunningProcesses` lists, each
holding `process_gpu_memory` bytes (1 GiB unless set).

Health: each device answers memory, temperature, power and its limit, clocks, clocks event
reasons, volatile ECC counts and the PCIe replay counter from its fields (tests change them
between ticks). XID events: `FakeNvml.xid(device, code)` queues one; `nvmlEventSetWait_v2`
returns it, or raises Timeout after blocking at most its timeout (on a real condition
variable, so the watch thread really sleeps).
"""

from __future__ import annotations

import sys
import threading
import types
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_RESET_REQUIRED = 16
NVML_ERROR_UNKNOWN = 999

_ERROR_TEXT = {
    NVML_ERROR_UNINITIALIZED: "Uninitialized",
    NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
    NVML_ERROR_NOT_FOUND: "Not Found",
    NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
    NVML_ERROR_TIMEOUT: "Timeout",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
    NVML_ERROR_GPU_IS_LOST: "GPU is lost",
    NVML_ERROR_RESET_REQUIRED: "GPU requires restart",
    NVML_ERROR_UNKNOWN: "Unknown Error",
}

MIB = 1 << 20
GPM_REFRESH_NS = 100_000_000


class NVMLError(Exception):
    """Like pynvml's: `NVMLError(code)` returns the subclass for that code, `.value` is the code."""

    _by_code: dict[int, type[NVMLError]] = {}
    value: int | None

    def __new__(cls, value: int | None = None) -> NVMLError:
        if cls is NVMLError:
            cls = NVMLError._by_code.get(value or 0, NVMLError)
        obj = Exception.__new__(cls)
        # Subclasses, like pynvml's, carry their own code: NVMLError_GpuIsLost() has value 15.
        obj.value = getattr(cls, "_code", value)
        return obj

    def __init__(self, value: int | None = None) -> None:
        super().__init__(self.value)

    def __str__(self) -> str:
        return _ERROR_TEXT.get(self.value or 0, f"NVML Error with code {self.value}")


for _name, _code in list(globals().items()):
    if _name.startswith("NVML_ERROR_"):
        _cls_name = "NVMLError_" + _name[len("NVML_ERROR_"):].title().replace("_", "")
        NVMLError._by_code[_code] = type(_cls_name, (NVMLError,), {"_code": _code})


class _Union:
    """c_nvmlValue_t: the same integer seen through every member."""

    def __init__(self, value: int) -> None:
        self.uiVal = value & 0xFFFFFFFF
        self.ulVal = self.ullVal = self.sllVal = value
        self.siVal = value
        self.dVal = float(value)


@dataclass
class FieldValue:
    fieldId: int
    timestamp: int = 0
    valueType: int = 1
    nvmlReturn: int = NVML_SUCCESS
    value: _Union = field(default_factory=lambda: _Union(0))
    scopeId: int = 0
    latencyUsec: int = 0


@dataclass
class GpmMetric:
    metricId: int = 0
    nvmlReturn: int = NVML_SUCCESS
    value: float = 0.0


class GpmMetricsGet:
    """Shaped like c_nvmlGpmMetricsGet_t (a shorter `metrics` array)."""

    def __init__(self) -> None:
        self.version = 0
        self.numMetrics = 0
        self.sample1: GpmSample | None = None
        self.sample2: GpmSample | None = None
        self.metrics = [GpmMetric() for _ in range(8)]


@dataclass
class GpmSample:
    device: FakeDevice | None = None
    snapshot_ns: int | None = None


@dataclass
class Utilization:
    gpu: int
    memory: int = 0


@dataclass
class FakeDevice:
    """One GPU. `activity` is a step function: (from_ns, sm_pct, rx_bytes_per_s, tx_bytes_per_s)."""

    name: str = "NVIDIA H200"
    uuid: str = "GPU-00000000-fake"
    gen: int = 5
    width: int = 16
    gpm: bool = True
    counters: bool = True
    util: int = 50
    activity: list[tuple[int, float, float, float]] = field(
        default_factory=lambda: [(0, 0.0, 1.5 * MIB, 1.5 * MIB)]
    )
    #: When set, nvmlGpmMetricsGet answers these (sm, rx MiB/s, tx MiB/s) in order instead.
    gpm_script: list[tuple[float, float, float]] | None = None
    #: Function name -> NVML error code that function raises for this device.
    fail: dict[str, int] = field(default_factory=dict)
    #: GPM metric id -> per-metric nvmlReturn.
    metric_ret: dict[int, int] = field(default_factory=dict)
    #: Field id -> per-value nvmlReturn.
    field_ret: dict[int, int] = field(default_factory=dict)
    #: Counter width as reported by valueType (1 = 32-bit unsigned int, 3 = 64-bit).
    counter_value_type: int = 1
    #: Added to the byte counters (to start near the 32-bit wrap).
    counter_offset: int = 0
    pcie_kbps: tuple[int, int] = (2_000_000, 1_000)  # (rx, tx) KB/s
    #: PIDs of the compute processes on this GPU (nvmlDeviceGetComputeRunningProcesses).
    processes: list[int] = field(default_factory=list)
    #: (gen, width) the link runs at while data moves; None = its maximum.
    trained: tuple[int, int] | None = None
    #: The generation an idle link drops to (power saving); the width stays.
    idle_gen: int = 1
    #: GPU memory of each listed PID (bytes); unlisted PIDs hold 1 GiB.
    process_gpu_memory: dict[int, int] = field(default_factory=dict)
    # Health, as an H200 at work (nvml-facts.md): bytes, degrees C, mW, MHz, a reasons mask.
    memory_used: int = 60 << 30
    memory_total: int = 141 << 30
    temperature: int = 52
    power_mw: int = 450_000
    power_limit_mw: int = 700_000
    sm_clock: int = 1980
    memory_clock: int = 3201
    clocks_event_reasons: int = 0
    ecc: dict[int, int] = field(default_factory=lambda: {0: 0, 1: 0})
    pcie_replays: int = 0
    #: nvmlDeviceGetRemappedRows: (rows remapped for correctable errors, for uncorrectable
    #: ones, a remap pending, a remap failed), unsigned ints as pynvml gives them.
    remapped_rows: tuple[int, int, int, int] = (0, 0, 0, 0)
    calls: Counter[str] = field(default_factory=Counter)

    def moving(self, t_ns: int) -> bool:
        """Does the activity at t_ns move data (more than 100 MB/s either way)?"""
        rates = [(r, x) for start, _, r, x in self.activity if start <= t_ns]
        return bool(rates) and max(rates[-1]) > 100e6

    def current_link(self, t_ns: int) -> tuple[int, int]:
        if self.moving(t_ns):
            return self.trained or (self.gen, self.width)
        return self.idle_gen, (self.trained or (self.gen, self.width))[1]

    def integral(self, t_ns: int) -> tuple[float, float, float]:
        """(SM %·s, RX bytes, TX bytes) accumulated from 0 to t_ns."""
        sm = rx = tx = 0.0
        for i, (start, s, r, x) in enumerate(self.activity):
            end = self.activity[i + 1][0] if i + 1 < len(self.activity) else None
            hi = t_ns if end is None else min(t_ns, end)
            if hi <= start:
                break
            dt_s = (hi - start) / 1e9
            sm, rx, tx = sm + s * dt_s, rx + r * dt_s, tx + x * dt_s
        return sm, rx, tx


class FakeNvml:
    """State behind the fake module: devices, the clock, init failures."""

    def __init__(self, devices: list[FakeDevice]) -> None:
        self.devices = devices
        self.now_ns = 0
        self.init_error: int | None = None
        self.initialised = False
        self.samples_allocated = 0
        self.samples_freed = 0
        #: NVML going blind: (from_ns, block_ns, exiting PIDs). The first device call at or
        #: after `from_ns` does not return for `block_ns` (the clock moves on that much), as
        #: every NVML call waits while the driver frees an exiting process's pinned pool (1.9 s
        #: for 24 GiB, 5.4 s for 72 GiB on an H200); the PIDs are gone from every device's
        #: process list when it returns.
        self.stalls: list[tuple[int, int, tuple[int, ...]]] = []
        #: The same, on the n-th call of a function (a run on the real clock, where the fake's
        #: time does not move): (function name, n, block_ns, exiting PIDs).
        self.stalls_on_call: list[tuple[str, int, int, tuple[int, ...]]] = []
        #: A test's clock (FakeClock) that a stall moves too, so the caller measures it; or, for
        #: a run on the real clock, a sleep (`time.sleep`) that a stall really waits in.
        self.clock: Any = None
        self.sleep: Any = None
        #: XID events waiting for nvmlEventSetWait_v2: (device, code); sets created and freed.
        self.xids: list[tuple[FakeDevice, int]] = []
        self.xid_ready = threading.Condition()
        self.event_sets_created = 0
        self.event_sets_freed = 0
        self.registered: list[tuple[FakeDevice, int]] = []
        self.waits = 0
        #: Real seconds one nvmlEventSetWait_v2 blocks at most (the driver blocks the whole
        #: timeout asked, 500 ms, and closing a source waits for it): 50 ms here, so that each
        #: test of a source does not wait half a second to close it; None for the whole timeout
        #: (the test that checks the thread sleeps in the driver).
        self.xid_wait_cap_s: float | None = 0.05
        self.module = self._build_module()

    def xid(self, device: FakeDevice, code: int) -> None:
        """An XID critical error on `device`: the event set's waiter wakes with it."""
        with self.xid_ready:
            self.xids.append((device, code))
            self.xid_ready.notify_all()

    def tick(self, source: Any, t_ns: int, lateness_ns: int = 0) -> Any:
        """Move the clock to t_ns and take one reading with `source`."""
        self.now_ns = t_ns
        return source.read(t_ns, 1_796_000_000.0 + t_ns / 1e9, lateness_ns)

    def run(self, source: Any, period_ns: int, n: int, start_ns: int = 0) -> list[Any]:
        return [self.tick(source, start_ns + i * period_ns) for i in range(n)]

    # ------------------------------------------------------------------ the module

    def _stall(self, fn: str, nth: int) -> None:
        for i, (from_ns, block_ns, exits) in enumerate(self.stalls):
            if self.now_ns >= from_ns:
                del self.stalls[i]
                self._block(block_ns, exits)
                return
        for i, (name, n, block_ns, exits) in enumerate(self.stalls_on_call):
            if name == fn and nth == n:
                del self.stalls_on_call[i]
                self._block(block_ns, exits)
                return

    def _block(self, block_ns: int, exits: tuple[int, ...]) -> None:
        self.now_ns += block_ns
        if self.clock is not None:
            self.clock.advance_ns(block_ns)
        if self.sleep is not None:
            self.sleep(block_ns / 1e9)
        for d in self.devices:
            d.processes = [p for p in d.processes if p not in exits]

    def _dev(self, handle: FakeDevice, fn: str) -> FakeDevice:
        handle.calls[fn] += 1
        self._stall(fn, handle.calls[fn])
        code = handle.fail.get(fn)
        if code is not None:
            raise NVMLError(code)
        return handle

    def _build_module(self) -> types.ModuleType:
        m = types.ModuleType("pynvml")
        m.__dict__.update({k: v for k, v in globals().items() if k.startswith("NVML_")})
        m.__dict__.update(NVMLError=NVMLError, NVML_GPM_METRICS_GET_VERSION=1,
                          c_nvmlGpmMetricsGet_t=GpmMetricsGet, nvmlEventTypeXidCriticalError=8)
        for cls in NVMLError._by_code.values():
            setattr(m, cls.__name__, cls)
        fake = self

        def nvmlInit() -> None:
            if fake.init_error is not None:
                raise NVMLError(fake.init_error)
            fake.initialised = True

        def nvmlShutdown() -> None:
            fake.initialised = False

        def nvmlDeviceGetCount() -> int:
            return len(fake.devices)

        def nvmlDeviceGetHandleByIndex(i: int) -> FakeDevice:
            return fake._dev(fake.devices[i], "nvmlDeviceGetHandleByIndex")

        def nvmlDeviceGetName(h: FakeDevice) -> str:
            return fake._dev(h, "nvmlDeviceGetName").name

        def nvmlDeviceGetUUID(h: FakeDevice) -> str:
            return fake._dev(h, "nvmlDeviceGetUUID").uuid

        def nvmlDeviceGetMaxPcieLinkGeneration(h: FakeDevice) -> int:
            return fake._dev(h, "nvmlDeviceGetMaxPcieLinkGeneration").gen

        def nvmlDeviceGetMaxPcieLinkWidth(h: FakeDevice) -> int:
            return fake._dev(h, "nvmlDeviceGetMaxPcieLinkWidth").width

        def nvmlGpmQueryDeviceSupport(h: FakeDevice) -> Any:
            d = fake._dev(h, "nvmlGpmQueryDeviceSupport")
            return types.SimpleNamespace(version=1, isSupportedDevice=int(d.gpm))

        def nvmlGpmSampleAlloc() -> GpmSample:
            fake.samples_allocated += 1
            return GpmSample()

        def nvmlGpmSampleFree(sample: GpmSample) -> None:
            fake.samples_freed += 1

        def nvmlGpmSampleGet(h: FakeDevice, sample: GpmSample) -> GpmSample:
            d = fake._dev(h, "nvmlGpmSampleGet")
            sample.device = d
            # The hardware counters behind GPM move only every ~100 ms.
            sample.snapshot_ns = fake.now_ns // GPM_REFRESH_NS * GPM_REFRESH_NS
            return sample

        def nvmlGpmMetricsGet(get: GpmMetricsGet) -> GpmMetricsGet:
            s1, s2 = get.sample1, get.sample2
            assert s1 is not None and s2 is not None and s1 is not s2
            assert s1.device is s2.device and s1.device is not None
            d = fake._dev(s1.device, "nvmlGpmMetricsGet")
            assert get.version == 1 and 0 < get.numMetrics <= len(get.metrics)
            values = fake._gpm_values(d, s1, s2)
            for metric in get.metrics[: get.numMetrics]:
                metric.nvmlReturn = d.metric_ret.get(metric.metricId, NVML_SUCCESS)
                metric.value = values.get(metric.metricId, 0.0) if not metric.nvmlReturn else 0.0
            return get

        def nvmlDeviceGetFieldValues(h: FakeDevice, ids: list[int]) -> list[FieldValue]:
            d = fake._dev(h, "nvmlDeviceGetFieldValues")
            _, rx, tx = d.integral(fake.now_ns)
            out = []
            for fid in ids:
                ret = d.field_ret.get(fid, NVML_SUCCESS if d.counters else NVML_ERROR_NOT_SUPPORTED)
                total = int({197: tx, 198: rx}.get(fid, 0)) + d.counter_offset
                raw = total & 0xFFFFFFFF if d.counter_value_type == 1 else total
                out.append(
                    FieldValue(
                        fieldId=fid,
                        # NVML stamps each value in CPU microseconds (here: the fake clock).
                        timestamp=1_796_000_000_000_000 + fake.now_ns // 1000,
                        valueType=d.counter_value_type,
                        nvmlReturn=ret,
                        value=_Union(raw if ret == NVML_SUCCESS else 0),
                    )
                )
            return out

        def nvmlDeviceGetUtilizationRates(h: FakeDevice) -> Utilization:
            return Utilization(gpu=fake._dev(h, "nvmlDeviceGetUtilizationRates").util)

        def nvmlDeviceGetPcieThroughput(h: FakeDevice, counter: int) -> int:
            d = fake._dev(h, "nvmlDeviceGetPcieThroughput")
            return d.pcie_kbps[0] if counter == 1 else d.pcie_kbps[1]

        def nvmlDeviceGetCurrPcieLinkGeneration(h: FakeDevice) -> int:
            d = fake._dev(h, "nvmlDeviceGetCurrPcieLinkGeneration")
            return d.current_link(fake.now_ns)[0]

        def nvmlDeviceGetCurrPcieLinkWidth(h: FakeDevice) -> int:
            d = fake._dev(h, "nvmlDeviceGetCurrPcieLinkWidth")
            return d.current_link(fake.now_ns)[1]

        def nvmlDeviceGetComputeRunningProcesses(h: FakeDevice) -> list[Any]:
            d = fake._dev(h, "nvmlDeviceGetComputeRunningProcesses")
            # pynvml's friendly objects: pid, usedGpuMemory, gpuInstanceId, computeInstanceId.
            return [types.SimpleNamespace(pid=pid, usedGpuMemory=d.process_gpu_memory.get(pid, 1 << 30),
                                          gpuInstanceId=0xFFFFFFFF,
                                          computeInstanceId=0xFFFFFFFF) for pid in d.processes]

        def nvmlDeviceGetMemoryInfo(h: FakeDevice) -> Any:
            d = fake._dev(h, "nvmlDeviceGetMemoryInfo")
            return types.SimpleNamespace(total=d.memory_total, used=d.memory_used,
                                         free=d.memory_total - d.memory_used)

        def nvmlDeviceGetTemperature(h: FakeDevice, sensor: int) -> int:
            assert sensor == 0
            return fake._dev(h, "nvmlDeviceGetTemperature").temperature

        def nvmlDeviceGetPowerUsage(h: FakeDevice) -> int:
            return fake._dev(h, "nvmlDeviceGetPowerUsage").power_mw

        def nvmlDeviceGetEnforcedPowerLimit(h: FakeDevice) -> int:
            return fake._dev(h, "nvmlDeviceGetEnforcedPowerLimit").power_limit_mw

        def nvmlDeviceGetClockInfo(h: FakeDevice, clock: int) -> int:
            d = fake._dev(h, "nvmlDeviceGetClockInfo")
            return {1: d.sm_clock, 2: d.memory_clock}[clock]

        def nvmlDeviceGetCurrentClocksEventReasons(h: FakeDevice) -> int:
            return fake._dev(h, "nvmlDeviceGetCurrentClocksEventReasons").clocks_event_reasons

        def nvmlDeviceGetTotalEccErrors(h: FakeDevice, error_type: int, counter: int) -> int:
            assert counter == 0  # volatile
            return fake._dev(h, "nvmlDeviceGetTotalEccErrors").ecc[error_type]

        def nvmlDeviceGetPcieReplayCounter(h: FakeDevice) -> int:
            return fake._dev(h, "nvmlDeviceGetPcieReplayCounter").pcie_replays

        def nvmlDeviceGetRemappedRows(h: FakeDevice) -> tuple[int, int, int, int]:
            return fake._dev(h, "nvmlDeviceGetRemappedRows").remapped_rows

        def nvmlEventSetCreate() -> Any:
            fake.event_sets_created += 1
            return types.SimpleNamespace(freed=False)

        def nvmlEventSetFree(es: Any) -> None:
            es.freed = True
            fake.event_sets_freed += 1

        def nvmlDeviceRegisterEvents(h: FakeDevice, types_mask: int, es: Any) -> None:
            d = fake._dev(h, "nvmlDeviceRegisterEvents")
            fake.registered.append((d, types_mask))

        def nvmlEventSetWait_v2(es: Any, timeout_ms: int) -> Any:
            assert not es.freed, "waited on a freed event set"
            with fake.xid_ready:
                fake.waits += 1
                if not fake.xids:
                    cap = fake.xid_wait_cap_s
                    fake.xid_ready.wait(timeout_ms / 1000 if cap is None
                                        else min(cap, timeout_ms / 1000))
                if not fake.xids:
                    raise NVMLError(NVML_ERROR_TIMEOUT)
                d, code = fake.xids.pop(0)
            return types.SimpleNamespace(device=d, eventType=8, eventData=code,
                                         gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF)

        for fn in list(locals().values()):
            if callable(fn) and getattr(fn, "__name__", "").startswith("nvml"):
                setattr(m, fn.__name__, fn)
        return m

    def _gpm_values(self, d: FakeDevice, s1: GpmSample, s2: GpmSample) -> dict[int, float]:
        if d.gpm_script is not None:
            sm, rx, tx = d.gpm_script.pop(0)
            return {2: sm, 21: rx, 20: tx}
        assert s1.snapshot_ns is not None and s2.snapshot_ns is not None
        if s2.snapshot_ns == s1.snapshot_ns:  # no refresh in between: every metric exactly 0.0
            return {2: 0.0, 21: 0.0, 20: 0.0}
        a, b = d.integral(s1.snapshot_ns), d.integral(s2.snapshot_ns)
        dt_s = (s2.snapshot_ns - s1.snapshot_ns) / 1e9
        return {
            2: (b[0] - a[0]) / dt_s,
            21: (b[1] - a[1]) / dt_s / MIB,
            20: (b[2] - a[2]) / dt_s / MIB,
        }


class Clocked:
    """A GPU source whose fake NVML's clock follows the sampler's: each read sets the fake's
    time to the tick's, so the devices' activity follows the ticks (and a stall, moving the
    sampler's clock too, is seen by the source)."""

    def __init__(self, fake: FakeNvml, source: Any) -> None:
        self.fake, self.source = fake, source

    def open(self) -> Any:
        return self.source.open()

    def read(self, t_mono_ns: int, t_wall_s: float, lateness_ns: int) -> Any:
        self.fake.now_ns = t_mono_ns
        return self.source.read(t_mono_ns, t_wall_s, lateness_ns)

    def close(self) -> None:
        self.source.close()


def install(monkeypatch: Any, devices: list[FakeDevice]) -> FakeNvml:
    """Put a fake pynvml with these devices in sys.modules for the duration of a test."""
    fake = FakeNvml(devices)
    monkeypatch.setitem(sys.modules, "pynvml", fake.module)
    return fake
