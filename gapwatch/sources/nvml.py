"""The NVML GPU source: per-GPU SM activity, PCIe RX/TX and utilization.gpu, read from the driver.

Who calls it: the sampler thread only (`gapwatch.engine.sampler`), through the `GpuSource` protocol:
`open()` once, `read()` every tick, `close()` at the end. NVML calls serialise on a driver lock and
must all come from that one thread. This is the only module that imports `pynvml`, and it does so
inside `open()`, so importing it works on a machine without the driver.

Per GPU it picks the best signal once, at `open()` (see docs/sampling.md):
1. GPM (Hopper and newer): SM_UTIL, PCIE_RX/TX_PER_SEC between two GPM samples. GPM refreshes about
   every 100 ms; a reading with no new data comes back as all exact zeros and is NOT emitted: the
   older sample stays the start of the interval and the next real reading covers all of it.
2. The 32-bit PCIe byte counters (fields 197/198), unwrapped with NVML's own timestamps; an
   interval too long to rule out a wrap at the link's rate is flagged `pcie_lower_bound`.
3. utilization.gpu plus, at most every `legacy_pcie_every_s` and one blocking call per tick,
   `nvmlDeviceGetPcieThroughput`.

Two slow readings ride on the same ticks (docs/sampling.md, "Slow readings"), their records in
`Tick.other`:
- every `procmem_every_s`: the processes NVML lists on each GPU
  (`nvmlDeviceGetComputeRunningProcesses`) and their host memory from /proc/PID/status
  (`gapwatch.sources.procmem`): `ProcessMemory` records, pinned vs heap, a hint for the gaps;
- at most every `link_every_s` per GPU, and only on a tick whose reading shows data moving
  (idle links down-train to save power): the link's current generation and width; a
  `LinkState` record when they change, and a warning when the link trained below its maximum.

GPU health (docs/health.md), also in `Tick.other`:
- every `health_every_s` (1 s): a `GpuHealth` per GPU (memory, temperature, power and its
  enforced limit, SM/memory clocks, throttle reasons, volatile ECC counts; each call ~2 us on the
  H200), and a `HardwareEvent` when an ECC count grew;
- every `row_remap_every_s` (60 s): the memory's row remapping (`nvmlDeviceGetRemappedRows`,
  Ampere and newer), a `row_remap_pending` or `row_remap_failure` event once a run per GPU;
- every `pcie_replay_every_s` (60 s; 171 us a call): the PCIe replay counter, an event when it
  grew;
- XID critical errors: `_XidWatch`, a thread blocked in `nvmlEventSetWait_v2` (NVML is
  thread-safe; the wait sleeps in the driver), hands each event to the next tick. The GPUs are
  registered at `open()` (the driver queues an XID from then on); the thread starts at the first
  `read()`, under `watch` (the runtime's `ThreadWatch`, set after `open()`): a wait that dies is
  said and restarted like every other thread, and `/metrics` has it in `thread_up`.
The process round (`procmem_every_s`, 1 s) also carries each process's GPU memory, and a
process whose GPU memory keeps growing for an hour is a warning (`gapwatch.core.health`).
Total energy (3.3 ms a call) is not read.

Every NVML call goes through `_call`/`_on_code`: unsupported → None for that field, said once;
GPU lost → that GPU stops, the others go on; init failure → `SourceUnavailable`.
"""

from __future__ import annotations

import ctypes
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from gapwatch.base.background import Background
from gapwatch.base.watch import UNWATCHED, ThreadWatch
from gapwatch.config import SamplerConfig
from gapwatch.core.blind import blind_words
from gapwatch.core.bounds import (
    INT64_MAX,
    MAX_BYTES_PER_S,
    MAX_ERRORS_PER_EVENT,
    MAX_MEMORY_BYTES,
    MAX_MHZ,
    MAX_PCIE_GEN,
    MAX_PCIE_WIDTH,
    MAX_TEMPERATURE_C,
    MAX_WATTS,
    MIN_POWER_LIMIT_W,
    MIN_TEMPERATURE_C,
    within,
)
from gapwatch.core.health import MemoryGrowth, event_level, event_words
from gapwatch.core.hints import link_text, link_trained_down_words
from gapwatch.core.models import (
    GEN5_X16_BYTES_PER_S,
    BlindSpot,
    ExitedProcess,
    GpuHealth,
    GpuInfo,
    GpuSample,
    HardwareEvent,
    HardwareEventKind,
    LinkState,
    Notice,
    PinningProcess,
    ProcessMemory,
    SignalSource,
    link_bytes_per_s,
)
from gapwatch.core.readings import is_stale_gpm
from gapwatch.sources import SourceUnavailable, Tick
from gapwatch.sources.procmem import ProcReading, ProcStatusReader, problem_text

#: A tick whose NVML calls take this many sampling periods is a blind spot: the detector calls a
#: silence that long a hole (`detector.nodata_after_periods`, 3), and no healthy tick comes close
#: (calls cost microseconds to ~21 ms; context changes stall them 12-106 ms on an H200).
STALL_PERIODS = 3.0
#: Pinned memory (RssShmem) grown this much across a blind spot names the process pinning it:
#: the pools that block NVML are GiBs (a prover's a/b/c buffers), a process's own churn is not.
PINNING_MIN_BYTES = 1 << 30
#: ... counted from the reading before the latest one when that is this recent: on the H200 a
#: 48 GiB pool's last seconds of pinning blocked NVML 2.8 s with only 0.85 GiB left to grow
#: after the latest reading (58.2 -> 63.2 GiB in the 5 s before it).
PINNING_LOOKBACK_S = 15.0

# NVML return codes (nvml.h). Hard-coded because they are ABI and the module must import without
# pynvml; the fake in tests uses the same values.
NVML_SUCCESS = 0
_NOT_SUPPORTED = 3
_NO_PERMISSION = 4
_NOT_FOUND = 6
_DRIVER_NOT_LOADED = 9
_LIBRARY_NOT_FOUND = 12
_FUNCTION_NOT_FOUND = 13
_GPU_IS_LOST = 15
_RESET_REQUIRED = 16
_TIMEOUT = 10
_UNKNOWN = 999
#: The field cannot be read on this GPU/driver/VM: None from now on, said once.
_UNSUPPORTED_CODES = frozenset({_NOT_SUPPORTED, _NO_PERMISSION, _NOT_FOUND, _FUNCTION_NOT_FOUND})
#: The device is gone: stop reading it.
_LOST_CODES = frozenset({_GPU_IS_LOST, _UNKNOWN, _RESET_REQUIRED})

_FI_PCIE_TX_BYTES = 197
_FI_PCIE_RX_BYTES = 198
_COUNTER_FIELDS = [_FI_PCIE_TX_BYTES, _FI_PCIE_RX_BYTES]
_GPM_SM_UTIL = 2
_GPM_PCIE_TX_PER_SEC = 20
_GPM_PCIE_RX_PER_SEC = 21
_PCIE_UTIL_TX_BYTES = 0
_PCIE_UTIL_RX_BYTES = 1
# What the slow readings' NVML calls are called in notices (and in `_Gpu.unsupported`).
_PROCESSES = "running processes"
_CURR_GEN = "current PCIe generation"
_CURR_WIDTH = "current PCIe width"
_REPLAY = "PCIe replay counter"
_REMAP = "row remapping"
#: The states `nvmlDeviceGetRemappedRows` answers (its 4th and 3rd values), each said once.
_REMAP_STATES: tuple[HardwareEventKind, HardwareEventKind] = ("row_remap_failure",
                                                              "row_remap_pending")
# nvml.h enums the health reading passes (ABI, as the return codes above).
_TEMPERATURE_GPU = 0
_CLOCK_SM = 1
_CLOCK_MEM = 2
_ECC_CORRECTED = 0
_ECC_UNCORRECTED = 1
_VOLATILE_ECC = 0
_EVENT_XID_CRITICAL = 0x0000000000000008
#: How long one wait for an XID event blocks (ms): the watch thread's stop answers within it.
XID_WAIT_MS = 500

_MIB = float(1 << 20)
#: nvmlDeviceGetPcieThroughput answers in KB/s; NVML's KB is 1024 bytes.
_KIB = 1024.0

HINT = "run `gapwatch demo` for a simulated prover, or `--source replay:FILE` to replay a recording"

Mode = Literal["gpm", "counters", "legacy"]
_FAILED: Any = object()  # sentinel: the NVML call failed and was reported


class _GpuLost(Exception):
    """Internal: abort the current GPU's reading, it has been marked lost."""


@dataclass(slots=True)
class _Gpu:
    """What the source keeps per GPU between ticks."""

    index: int
    handle: Any = None
    mode: Mode = "legacy"
    lost: bool = False
    link_bytes_per_s: float | None = None
    max_gen: int | None = None
    max_width: int | None = None
    #: The current link is read again no earlier than this (monotonic ns).
    link_next_ns: int = 0
    #: (gen, width) of the last link reading under traffic; a record is made when it changes.
    link_seen: tuple[int, int] | None = None
    #: Fields found unsupported: never called again (saves the call and the exception each tick).
    unsupported: set[str] = field(default_factory=set)
    # GPM: bufs[0] is the start of the current interval, bufs[1] is overwritten by the next sample.
    gpm_bufs: list[Any] = field(default_factory=list)
    gpm_get: Any = None
    gpm_start_ns: int | None = None
    # Counters: (value, NVML timestamp µs) of the previous reading, per direction.
    prev_tx: tuple[int, int] | None = None
    prev_rx: tuple[int, int] | None = None
    #: Longest interval (µs) over which a 32-bit counter cannot wrap at the link's full rate.
    wrap_safe_us: float = 0.0
    # Legacy: when the next PcieThroughput pair is due, and which direction comes next.
    legacy_next_ns: int = 0
    legacy_rx_next: bool = True
    prev_t_ns: int | None = None
    #: Last volatile ECC counts (corrected, uncorrected) and PCIe replay count: a growth is an
    #: event.
    ecc_prev: tuple[int | None, int | None] = (None, None)
    replay_prev: int | None = None
    #: The row remap states said this run (`row_remap_pending`, `row_remap_failure`).
    remap_said: set[str] = field(default_factory=set)


@dataclass(slots=True)
class _Every:
    """A slow reading's schedule: due at the first tick, then once `every_ns` has passed
    (0: never). One rule for the process, health, PCIe replay and row remap rounds."""

    every_ns: int
    next_ns: int | None = None

    def due(self, t_mono_ns: int) -> bool:
        if not self.every_ns or (self.next_ns is not None and t_mono_ns < self.next_ns):
            return False
        self.next_ns = t_mono_ns + self.every_ns
        return True


@dataclass(slots=True)
class _ProcSeen:
    """What /proc said of a process NVML listed: its name and its last two pinned sizes
    (t_wall_s, RssShmem bytes), oldest first."""

    name: str
    sizes: list[tuple[float, int]] = field(default_factory=list)

    @property
    def pinned_bytes(self) -> int | None:
        """Its pinned pool at the latest reading that had one (what its exit frees)."""
        return self.sizes[-1][1] if self.sizes else None


class NvmlSource:
    """`GpuSource` over NVML. Construct with the `[sampler]` config section."""

    def __init__(
        self,
        config: SamplerConfig,
        *,
        now_ns: Callable[[], int] = time.monotonic_ns,
        proc_root: str = "/",
    ) -> None:
        self.config = config
        #: Measures how far into a tick each GPU was read (GPUs are read one after another);
        #: tests pass a constant so that timestamps are exactly the tick's.
        self._now_ns = now_ns
        #: /proc/PID/status of the processes on the GPUs (tests pass a fake tree's root).
        self._procs = ProcStatusReader(proc_root)
        self._procmem = _Every(int(config.procmem_every_s * 1e9))
        self._link_every_ns = int(config.link_every_s * 1e9)
        self._link_reads = 0
        self._health = _Every(int(config.health_every_s * 1e9))
        self._replay = _Every(int(config.pcie_replay_every_s * 1e9))
        self._remap = _Every(int(config.row_remap_every_s * 1e9))
        #: GPU memory NVML gave for each (GPU, pid) at the latest listing.
        self._gpu_memory: dict[tuple[int, int], int | None] = {}
        self._growth = MemoryGrowth()
        self._xid: _XidWatch | None = None
        #: Hears the XID thread die (the runtime gives its own before the first tick).
        self.watch: ThreadWatch = UNWATCHED
        self._nv: Any = None
        self._gpus: list[_Gpu] = []
        self._said: set[tuple[object, ...]] = set()
        #: Notices raised outside a tick (open) wait here for the first tick's timestamp.
        self._pending: list[tuple[Literal["info", "warning", "error"], str, int | None]] = []
        #: GPUs lost before the first tick (at open): (GPU, NVML code), their `gpu_lost`
        #: events made with the first tick's time.
        self._pending_lost: list[tuple[int, int | None]] = []
        self._legacy_every_ns = int(config.legacy_pcie_every_s * 1e9)
        self._legacy_spent = False
        #: A tick whose calls take this long is a blind spot (NVML did not answer).
        self._stall_ns = int(STALL_PERIODS * config.period_ms * 1e6)
        #: The PIDs NVML listed on each GPU last (a new dict at each listing, so a tick can
        #: keep the one it began with for free), and what /proc said of each PID: what a blind
        #: spot compares against to name the process that exited or was pinning.
        self._listed: dict[int, set[int]] = {}
        self._seen: dict[int, _ProcSeen] = {}
        #: The PIDs the previous /proc round listed.
        self._listed_last: set[int] = set()
        #: The tick being read (notices go into it); None before the first tick.
        self._tick: Tick | None = None
        self._t_mono_ns, self._t_wall_s = 0, 0.0

    # ---------------------------------------------------------------- open / close

    def open(self) -> list[GpuInfo]:
        try:
            # The only pynvml import in gapwatch. nvidia-ml-py ships neither stubs nor
            # py.typed (and typeshed has none), so the module is Any to the type checker
            # (pyproject's mypy override says so once).
            import pynvml
        except ImportError as exc:
            raise SourceUnavailable(
                f"NVML unavailable: the nvidia-ml-py package cannot be imported ({exc}); {HINT}"
            ) from None
        nv: Any = pynvml
        self._nv = nv
        try:
            nv.nvmlInit()
        except nv.NVMLError as exc:
            raise SourceUnavailable(f"NVML unavailable: {_init_reason(exc)}; {HINT}") from None
        except OSError as exc:  # a broken libnvidia-ml can fail in the loader itself
            raise SourceUnavailable(f"NVML unavailable: {exc}; {HINT}") from None
        try:
            count = int(nv.nvmlDeviceGetCount())
        except nv.NVMLError as exc:
            self._shutdown()
            raise SourceUnavailable(
                f"NVML unavailable: cannot count GPUs ({exc}); {HINT}"
            ) from None
        if count == 0:
            self._shutdown()
            raise SourceUnavailable(f"NVML unavailable: no NVIDIA GPU found; {HINT}")
        wanted = list(self.config.gpus) or list(range(count))
        missing = [i for i in wanted if not 0 <= i < count]
        if missing:
            self._shutdown()
            raise SourceUnavailable(
                f"GPU {', '.join(map(str, missing))} not found: this machine has {count} "
                f"(0-{count - 1}); fix --gpus / sampler.gpus"
            )
        infos = []
        for index in wanted:
            gpu = _Gpu(index)
            self._gpus.append(gpu)
            try:
                infos.append(self._open_gpu(gpu))
            except _GpuLost:
                infos.append(GpuInfo(index=index))
        if self.config.xid_events:
            self._start_xid()
        return infos

    def _start_xid(self) -> None:
        """Register every GPU for XID critical errors and start the thread that waits for
        them; a GPU or driver that cannot is said once (info) and left out."""
        nv = self._nv
        create = getattr(nv, "nvmlEventSetCreate", None)
        if create is None:
            return
        try:
            event_set = create()
        except nv.NVMLError as exc:
            self._pending.append(("info", f"XID events not available ({exc})", None))
            return
        handles = {}
        for gpu in self._gpus:
            if gpu.lost:
                continue
            try:
                nv.nvmlDeviceRegisterEvents(gpu.handle, _EVENT_XID_CRITICAL, event_set)
            except nv.NVMLError as exc:
                self._pending.append(("info", f"GPU {gpu.index}: XID events not available "
                                      f"({exc}): XID errors are not watched", gpu.index))
                continue
            handles[_handle_key(gpu.handle)] = gpu.index
        if not handles:
            _free_event_set(nv, event_set)
            return
        self._xid = _XidWatch(nv, event_set, handles)  # started by the first read()

    def _open_gpu(self, gpu: _Gpu) -> GpuInfo:
        nv = self._nv
        handle = self._call(gpu, "device handle", nv.nvmlDeviceGetHandleByIndex, gpu.index)
        if handle is _FAILED:
            # A code that loses the GPU was said as lost by `_call`; any other (no permission,
            # insufficient power...) leaves a GPU that cannot be read, not one that fell off
            # the bus: said, not paged as `gpu_lost` ("NVML: no answer" where NVML answered).
            self._lose(gpu, "no device handle", lost=False)
        gpu.handle = handle
        name = self._call(gpu, "name", nv.nvmlDeviceGetName, handle)
        uuid = self._call(gpu, "UUID", nv.nvmlDeviceGetUUID, handle)
        gen = self._call(gpu, "max PCIe generation", nv.nvmlDeviceGetMaxPcieLinkGeneration, handle)
        width = self._call(gpu, "max PCIe width", nv.nvmlDeviceGetMaxPcieLinkWidth, handle)
        gen = None if gen is _FAILED else within(_int(gen), 1, MAX_PCIE_GEN)
        width = None if width is _FAILED else within(_int(width), 1, MAX_PCIE_WIDTH)
        gpu.max_gen, gpu.max_width = gen, width
        gpu.link_bytes_per_s = link_bytes_per_s(gen, width)
        # Without the link, the wrap test assumes the fastest link these boxes have.
        gpu.wrap_safe_us = 2**32 / (gpu.link_bytes_per_s or GEN5_X16_BYTES_PER_S) * 1e6

        sources: tuple[SignalSource, SignalSource]
        if self.config.use_gpm and self._open_gpm(gpu):
            gpu.mode, sources = "gpm", ("gpm", "gpm")
        elif self.config.use_counters and self._open_counters(gpu):
            gpu.mode, sources = "counters", ("util", "counters")
        else:
            gpu.mode, sources = "legacy", ("util", "legacy")
        if gpu.mode != "gpm":
            pcie = (
                "the PCIe byte counters"
                if gpu.mode == "counters"
                else f"nvmlDeviceGetPcieThroughput every {self.config.legacy_pcie_every_s:g} s"
            )
            self._pending.append((
                "info",
                f"GPU {gpu.index}: no GPM (needs Hopper or newer and sampler.use_gpm): idle is "
                f"judged from utilization.gpu, which counts copies as busy; PCIe from {pcie}",
                gpu.index,
            ))
        return GpuInfo(
            index=gpu.index,
            name=_text(name) if name is not _FAILED else "unknown",
            uuid=_text(uuid) if uuid is not _FAILED else None,
            link_gen=gen,
            link_width=width,
            link_bytes_per_s=gpu.link_bytes_per_s,
            sm_source=sources[0],
            pcie_source=sources[1],
        )

    def _open_gpm(self, gpu: _Gpu) -> bool:
        """Set up two GPM sample buffers and a reusable metrics request; False if no GPM."""
        nv = self._nv
        query = getattr(nv, "nvmlGpmQueryDeviceSupport", None)
        if query is None:  # nvidia-ml-py older than GPM
            return False
        support = self._probe(gpu, query, gpu.handle)
        if support is _FAILED or not support.isSupportedDevice:
            return False
        bufs: list[Any] = []  # pynvml's opaque GPM sample handles
        for _ in range(2):
            buf = self._probe(gpu, nv.nvmlGpmSampleAlloc)
            if buf is _FAILED:
                self._free_gpm(bufs)
                return False
            bufs.append(buf)
        # One request struct per GPU, reused every tick: it holds NVML_GPM_METRIC_MAX entries
        # (~20 KB), too big to rebuild 10 times a second per GPU.
        get = nv.c_nvmlGpmMetricsGet_t()
        get.version = nv.NVML_GPM_METRICS_GET_VERSION
        get.numMetrics = 3
        get.metrics[0].metricId = _GPM_SM_UTIL
        get.metrics[1].metricId = _GPM_PCIE_RX_PER_SEC
        get.metrics[2].metricId = _GPM_PCIE_TX_PER_SEC
        gpu.gpm_bufs, gpu.gpm_get = bufs, get
        return True

    def _open_counters(self, gpu: _Gpu) -> bool:
        values = self._probe(gpu, self._nv.nvmlDeviceGetFieldValues, gpu.handle, _COUNTER_FIELDS)
        return values is not _FAILED and all(v.nvmlReturn == NVML_SUCCESS for v in values)

    def close(self) -> None:
        if self._xid is not None:
            self._xid.stop(XID_WAIT_MS / 1000 * 4)
            if not self._xid.is_alive():
                _free_event_set(self._nv, self._xid.event_set)
            self._xid = None
        for gpu in self._gpus:
            self._free_gpm(gpu.gpm_bufs)
            gpu.gpm_bufs = []
        self._gpus = []
        self._shutdown()

    def _free_gpm(self, bufs: list[Any]) -> None:
        for buf in bufs:
            try:
                self._nv.nvmlGpmSampleFree(buf)
            except self._nv.NVMLError:
                pass  # freeing on a lost GPU: nothing left to do

    def _shutdown(self) -> None:
        if self._nv is None:
            return
        nv, self._nv = self._nv, None
        try:
            nv.nvmlShutdown()
        except nv.NVMLError:
            pass

    # ---------------------------------------------------------------- the tick

    def read(self, t_mono_ns: int, t_wall_s: float, lateness_ns: int) -> Tick:
        tick = Tick()
        self._tick = tick
        self._t_mono_ns, self._t_wall_s = t_mono_ns, t_wall_s
        if self._pending:
            tick.notices.extend(
                Notice(t_mono_ns, t_wall_s, level, msg, gpu) for level, msg, gpu in self._pending
            )
            self._pending.clear()
        for index, code in self._pending_lost:
            tick.other.append(HardwareEvent(gpu=index, t_mono_ns=t_mono_ns, t_wall_s=t_wall_s,
                                            kind="gpu_lost", code=code))
        self._pending_lost.clear()
        self._legacy_spent = False
        listed_before = self._listed
        entry_ns = self._now_ns()
        for gpu in self._gpus:
            if gpu.lost:
                continue
            # GPUs are read one after another: stamp each with when its reading was taken.
            offset_ns = self._now_ns() - entry_ns
            t_ns, wall_s = t_mono_ns + offset_ns, t_wall_s + offset_ns / 1e9
            try:
                if gpu.mode == "gpm":
                    sample = self._read_gpm(gpu, t_ns, wall_s, lateness_ns)
                elif gpu.mode == "counters":
                    sample = self._read_counters(gpu, t_ns, wall_s, lateness_ns)
                else:
                    sample = self._read_legacy(gpu, t_ns, wall_s, lateness_ns)
                if sample is not None:
                    tick.gpu.append(sample)
                    self._watch_link(tick, gpu, sample)
            except _GpuLost:
                continue
        # The slow readings come after every GPU's sample, so they never delay their times.
        self._health_round(tick, t_mono_ns, t_wall_s, entry_ns)
        self._remap_round(tick, t_mono_ns, t_wall_s, entry_ns)
        xid = self._xid  # once: a close() from another thread sets it None
        if xid is not None:
            if not xid.started:
                xid.watch = self.watch
                xid.start()
            for ev in xid.drain():
                self._event(tick, ev)
        if self._procmem.due(t_mono_ns):
            offset_ns = self._now_ns() - entry_ns
            self._read_procmem(tick, t_mono_ns + offset_ns, t_wall_s + offset_ns / 1e9)
        took_ns = self._now_ns() - entry_ns
        if took_ns >= self._stall_ns:
            self._blind_spot(tick, t_mono_ns, t_wall_s, took_ns, listed_before)
        return tick

    # ---------------------------------------------------------------- GPU health

    def _health_round(self, tick: Tick, t_mono_ns: int, t_wall_s: float, entry_ns: int) -> None:
        """Every `health_every_s`: a `GpuHealth` per GPU (and the replay counter when due)."""
        if not self._health.due(t_mono_ns):
            return
        replay = self._replay.due(t_mono_ns)
        for gpu in self._gpus:
            if gpu.lost:
                continue
            offset_ns = self._now_ns() - entry_ns
            try:
                self._read_health(tick, gpu, t_mono_ns + offset_ns,
                                  t_wall_s + offset_ns / 1e9, replay)
            except _GpuLost:
                continue

    def _remap_round(self, tick: Tick, t_mono_ns: int, t_wall_s: float, entry_ns: int) -> None:
        """Every `row_remap_every_s`, whatever the health round does (`health_every_s = 0`
        turned it off too: a failed remap, a critical alert, went unread): the row remapping
        of each GPU whose states are not both said yet."""
        if not self._remap.due(t_mono_ns):
            return
        for gpu in self._gpus:
            if gpu.lost or len(gpu.remap_said) == len(_REMAP_STATES):
                continue  # both said: nothing left to learn this run
            offset_ns = self._now_ns() - entry_ns
            try:
                self._read_remap(tick, gpu, t_mono_ns + offset_ns, t_wall_s + offset_ns / 1e9)
            except _GpuLost:
                continue

    def _opt(self, gpu: _Gpu, what: str, fn: Callable[..., Any] | None, *args: Any) -> Any:
        """One health call: its value, or None (unsupported from now on, failed this time,
        or a function this nvidia-ml-py lacks)."""
        if fn is None or what in gpu.unsupported:
            return None
        value = self._call(gpu, what, fn, *args)
        return None if value is _FAILED else value

    def _read_health(self, tick: Tick, gpu: _Gpu, t_ns: int, wall_s: float,
                     replay: bool) -> None:
        nv, h = self._nv, gpu.handle
        mem = self._opt(gpu, "memory info", nv.nvmlDeviceGetMemoryInfo, h)
        temp = self._opt(gpu, "temperature", nv.nvmlDeviceGetTemperature, h, _TEMPERATURE_GPU)
        power = self._opt(gpu, "power", nv.nvmlDeviceGetPowerUsage, h)
        limit = self._opt(gpu, "power limit", nv.nvmlDeviceGetEnforcedPowerLimit, h)
        sm = self._opt(gpu, "SM clock", nv.nvmlDeviceGetClockInfo, h, _CLOCK_SM)
        memclk = self._opt(gpu, "memory clock", nv.nvmlDeviceGetClockInfo, h, _CLOCK_MEM)
        reasons_fn = (getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
                      or getattr(nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None))
        mask = self._opt(gpu, "clocks event reasons", reasons_fn, h)
        ecc = getattr(nv, "nvmlDeviceGetTotalEccErrors", None)
        corr = self._opt(gpu, "ECC counts", ecc, h, _ECC_CORRECTED, _VOLATILE_ECC)
        uncorr = self._opt(gpu, "ECC counts", ecc, h, _ECC_UNCORRECTED, _VOLATILE_ECC)
        replays = None
        if replay:
            replays = self._opt(gpu, _REPLAY, getattr(nv, "nvmlDeviceGetPcieReplayCounter", None),
                                h)
        health = GpuHealth(
            gpu=gpu.index, t_mono_ns=t_ns, t_wall_s=wall_s,
            # NVML's "not available" sentinels (0xFFFFFFFF...) and anything no GPU reads are
            # None: what is written must read back (`bounds.within`).
            memory_used_bytes=within(_int(getattr(mem, "used", None)), 0, MAX_MEMORY_BYTES),
            memory_total_bytes=within(_int(getattr(mem, "total", None)), 0, MAX_MEMORY_BYTES),
            temperature_c=within(_float(temp), MIN_TEMPERATURE_C, MAX_TEMPERATURE_C),
            power_w=within(_float(power, 1000.0), 0.0, MAX_WATTS),
            # A limit of 0 W is none read (no GPU runs on it): the report said "of 0 W" and
            # /metrics exported it, where the header already took it as none.
            power_limit_w=within(_float(limit, 1000.0), MIN_POWER_LIMIT_W, MAX_WATTS),
            sm_clock_mhz=within(_int(sm), 0, MAX_MHZ),
            memory_clock_mhz=within(_int(memclk), 0, MAX_MHZ),
            clocks_event_mask=within(_int(mask), 0, INT64_MAX),
            ecc_corrected_total=within(_int(corr), 0, INT64_MAX),
            ecc_uncorrected_total=within(_int(uncorr), 0, INT64_MAX),
            pcie_replay_total=within(_int(replays), 0, INT64_MAX),
        )  # fmt: skip
        tick.other.append(health)
        self._grown(tick, gpu, health)

    def _read_remap(self, tick: Tick, gpu: _Gpu, t_ns: int, wall_s: float) -> None:
        """The memory's row remapping: NVML answers (rows remapped for correctable errors, for
        uncorrectable ones, a remap pending, a remap failed). A pending remap takes effect at
        the next GPU reset; a failed one means the memory has a row it could not retire. Each
        is a state: an event the first time it is seen this run, already true at start too
        (an ECC count is volatile, its growth is the news; these persist until a reset)."""
        got = self._opt(gpu, _REMAP, getattr(self._nv, "nvmlDeviceGetRemappedRows", None),
                        gpu.handle)
        if not isinstance(got, (tuple, list)) or len(got) != 4:
            return
        for kind, on in zip(_REMAP_STATES, (got[3], got[2]), strict=True):
            if _int(on) and kind not in gpu.remap_said:
                gpu.remap_said.add(kind)
                self._event(tick, HardwareEvent(gpu=gpu.index, t_mono_ns=t_ns, t_wall_s=wall_s,
                                                kind=kind))

    def _grown(self, tick: Tick, gpu: _Gpu, h: GpuHealth) -> None:
        """ECC counts and the replay counter that grew since the last reading: events."""
        was_corr, was_uncorr = gpu.ecc_prev
        counts: tuple[tuple[HardwareEventKind, int | None, int | None], ...] = (
            ("ecc_corrected", was_corr, h.ecc_corrected_total),
            ("ecc_uncorrected", was_uncorr, h.ecc_uncorrected_total),
            ("pcie_replay", gpu.replay_prev, h.pcie_replay_total))
        for kind, was, now in counts:
            # A growth beyond any count (a counter read as garbage once) is no count read: the
            # record must read back (`bounds.MAX_ERRORS_PER_EVENT`).
            if was is not None and now is not None and 0 < now - was <= MAX_ERRORS_PER_EVENT:
                self._event(tick, HardwareEvent(gpu=gpu.index, t_mono_ns=h.t_mono_ns,
                                                t_wall_s=h.t_wall_s, kind=kind, count=now - was))
        gpu.ecc_prev = (h.ecc_corrected_total if h.ecc_corrected_total is not None else was_corr,
                        h.ecc_uncorrected_total if h.ecc_uncorrected_total is not None
                        else was_uncorr)
        if h.pcie_replay_total is not None:
            gpu.replay_prev = h.pcie_replay_total

    def _event(self, tick: Tick, ev: HardwareEvent) -> None:
        """A GPU error: its record, and a notice in words (never rate-limited away: each one
        is its own message)."""
        tick.other.append(ev)
        level: Literal["warning", "error"] = "error" if event_level(ev) == "error" else "warning"
        tick.notices.append(Notice(ev.t_mono_ns, ev.t_wall_s, level, event_words(ev), ev.gpu))

    def _blind_spot(self, tick: Tick, t_mono_ns: int, t_wall_s: float, took_ns: int,
                    listed_before: dict[int, set[int]]) -> None:
        """This tick's calls took `took_ns`, far over a period: NVML did not answer meanwhile
        (every call blocks while the driver frees a process's pinned memory). Record it, with
        the processes NVML listed before and not now (the list is read again at once), and say
        it (`gapwatch.core.blind`)."""
        gpus = [g.index for g in self._gpus if not g.lost]
        now = self._list_processes()
        still = set().union(*now.values())
        # Compared GPU by GPU, only where the listing answered after the stall: a GPU whose
        # listing failed then says nothing of who exited.
        gone = set().union(*(listed_before.get(g, set()) - pids for g, pids in now.items()))
        exited = []
        for pid in sorted(gone - still):
            seen = self._seen.get(pid)
            exited.append(ExitedProcess(pid=pid, name=seen.name if seen else "",
                                        pinned_bytes=seen.pinned_bytes if seen else None))
        pinning = self._pinning_across(still, t_wall_s, t_wall_s + took_ns / 1e9)
        spot = BlindSpot(t_mono_ns=t_mono_ns, t_wall_s=t_wall_s, duration_s=took_ns / 1e9,
                         source="nvml", gpus=gpus, exited=exited, pinning=pinning)
        tick.other.append(spot)
        tick.notices.append(Notice(t_mono_ns, t_wall_s, "warning", blind_words(spot)))

    def _pinning_across(self, pids: set[int], t_wall_s: float,
                        now_wall_s: float) -> list[PinningProcess]:
        """The processes still listed after a blind spot (which began at `t_wall_s`) whose
        pinned memory (RssShmem) grew by `PINNING_MIN_BYTES` or more from their reading before
        the latest one (within `PINNING_LOOKBACK_S`; else the latest) to /proc read again now
        (`now_wall_s`, the stall's end, which is when this reading is kept as taken): one small
        file per process, only after a blind spot. Pinning a large pool blocks NVML as freeing
        one does (measured on the H200: `bench/blind_spot_h200.py`)."""
        out = []
        for pid in sorted(pids):
            seen = self._seen.get(pid)
            if seen is None or not seen.sizes:
                continue
            st = self._procs.read(pid).status
            after = st.rss_shmem_bytes if st is not None else None
            if st is None or after is None:
                continue
            oldest, latest = seen.sizes[0], seen.sizes[-1]
            since_wall_s, before = oldest if t_wall_s - oldest[0] <= PINNING_LOOKBACK_S \
                else latest
            self._pinned(pid, st.name, now_wall_s, after)
            if after - before >= PINNING_MIN_BYTES:
                out.append(PinningProcess(pid=pid, name=st.name, before_bytes=before,
                                          after_bytes=after,
                                          # Never negative (a wall clock stepped back
                                          # between the readings): a duration reads back.
                                          since_s=max(0.0, round(t_wall_s - since_wall_s, 1))))
        return out

    def _pinned(self, pid: int, name: str, wall_s: float, rss_shmem_bytes: int | None) -> None:
        """Note what /proc said of a process (`_ProcSeen`). A process already exiting has a
        status without memory lines (seen on the H200 as a 48 GiB pool was freed): the sizes
        read before are kept."""
        seen = self._seen.get(pid)
        if seen is None:
            seen = self._seen[pid] = _ProcSeen(name)
        seen.name = name
        if rss_shmem_bytes is not None:
            seen.sizes = [*seen.sizes[-1:], (wall_s, rss_shmem_bytes)]

    def _list_processes(self) -> dict[int, set[int]]:
        """The PIDs NVML lists on each GPU now (GPUs that cannot list them are left out); kept
        as the latest listing."""
        listed: dict[int, set[int]] = {}
        lister = self._nv.nvmlDeviceGetComputeRunningProcesses
        for gpu in self._gpus:
            if gpu.lost or _PROCESSES in gpu.unsupported:
                continue
            try:
                procs = self._call(gpu, _PROCESSES, lister, gpu.handle)
            except _GpuLost:
                continue
            if procs is not _FAILED:
                listed[gpu.index] = {int(p.pid) for p in procs}
                for p in procs:
                    self._gpu_memory[(gpu.index, int(p.pid))] = within(
                        _int(getattr(p, "usedGpuMemory", None)), 0, MAX_MEMORY_BYTES)
        self._listed = {**self._listed, **listed}
        return listed

    @property
    def counters(self) -> dict[str, int]:
        """The slow readings so far: /proc readings (`procmem_read`) and their problems
        (`procmem_vanished`, `procmem_denied`, `procmem_no_rss_fields`, `procmem_unreadable`),
        and link readings under traffic (`link_reads`)."""
        out = {f"procmem_{k}": n for k, n in self._procs.counts.items()}
        out["link_reads"] = self._link_reads
        return out

    # ---------------------------------------------------------------- the slow readings

    def _read_procmem(self, tick: Tick, t_ns: int, wall_s: float) -> None:
        """One round: the processes on each GPU and their host memory. A process on two GPUs
        is read once and reported for each; every record of the round shares its time."""
        readings: dict[int, ProcReading] = {}
        by_index = {g.index: g for g in self._gpus}
        self._gpu_memory = {}
        for gpu_index, pids in self._list_processes().items():
            gpu = by_index[gpu_index]
            growth: list[tuple[int, str, int | None]] = []
            # MIG lists a process once per instance it uses: one record per (GPU, pid).
            for pid in sorted(pids):
                r = readings.get(pid)
                if r is None:
                    r = readings[pid] = self._procs.read(pid)
                    if r.problem is not None:
                        level: Literal["info", "warning"] = (
                            "warning" if r.problem in ("denied", "unreadable") else "info")
                        self._say_once(("procmem", r.problem), level,
                                       problem_text(r.problem, pid), None)
                st = r.status
                if st is not None:
                    self._pinned(pid, st.name, wall_s, st.rss_shmem_bytes)
                used = self._gpu_memory.get((gpu.index, pid))
                growth.append((pid, st.name if st is not None else "", used))
                tick.other.append(ProcessMemory(
                    t_mono_ns=t_ns, t_wall_s=wall_s, gpu=gpu.index, pid=pid,
                    name=st.name if st is not None else "",
                    rss_shmem_bytes=st.rss_shmem_bytes if st is not None else None,
                    rss_anon_bytes=st.rss_anon_bytes if st is not None else None,
                    vm_locked_bytes=st.vm_locked_bytes if st is not None else None,
                    vm_pinned_bytes=st.vm_pinned_bytes if st is not None else None,
                    gpu_memory_bytes=used,
                ))  # fmt: skip
            for text in self._growth.round(gpu.index, wall_s, growth):
                self._say_once(("growth", text), "warning", text, gpu.index)
        # Forgotten only when absent from two rounds in a row, so the maps stay small over weeks
        # of prover restarts. Not after one: a stall in this very tick (a 48 GiB pool freed as
        # this round listed the GPUs, on the H200) names its process from them after the round.
        for pid in [p for p in self._seen if p not in readings and p not in self._listed_last]:
            del self._seen[pid]
        self._listed_last = set(readings)

    def _watch_link(self, tick: Tick, gpu: _Gpu, sample: GpuSample) -> None:
        """While data moves, at most every `link_every_s`: the link as trained. A record when
        it changed; a warning (once per trained-down shape) when it is below the maximum. Idle
        links down-train to save power, so only a reading under traffic says anything."""
        if not self._link_every_ns or sample.t_mono_ns < gpu.link_next_ns:
            return
        if _CURR_GEN in gpu.unsupported or _CURR_WIDTH in gpu.unsupported:
            return
        moving = max(sample.pcie_rx_bytes_per_s or 0.0, sample.pcie_tx_bytes_per_s or 0.0)
        if moving <= self.config.link_check_min_bytes_per_s:
            return
        gpu.link_next_ns = sample.t_mono_ns + self._link_every_ns
        nv = self._nv
        self._link_reads += 1
        gen = self._call(gpu, _CURR_GEN, nv.nvmlDeviceGetCurrPcieLinkGeneration, gpu.handle)
        width = self._call(gpu, _CURR_WIDTH, nv.nvmlDeviceGetCurrPcieLinkWidth, gpu.handle)
        if gen is _FAILED or width is _FAILED:
            return
        gen, width = within(_int(gen), 1, MAX_PCIE_GEN), within(_int(width), 1, MAX_PCIE_WIDTH)
        if gen is None or width is None:
            return  # a link NVML cannot say (width 0: not trained) is no reading
        now = (gen, width)
        was = gpu.link_seen
        if now == was:
            return
        gpu.link_seen = now
        link = LinkState(
            gpu=gpu.index, t_mono_ns=sample.t_mono_ns, t_wall_s=sample.t_wall_s,
            gen=now[0], width=now[1], max_gen=gpu.max_gen, max_width=gpu.max_width,
            bytes_per_s=link_bytes_per_s(*now), max_bytes_per_s=gpu.link_bytes_per_s,
        )  # fmt: skip
        tick.other.append(link)
        if link.trained_down:
            text = link_trained_down_words(link.gen, link.width, link.bytes_per_s, link.max_gen,
                                           link.max_width, link.max_bytes_per_s, moving)
            self._say_once((gpu.index, "link down", now), "warning", f"GPU {gpu.index}: {text}",
                           gpu.index)
        elif was is not None:
            self._say_once((gpu.index, "link back", now), "info",
                           f"GPU {gpu.index}: PCIe link back at "
                           f"{link_text(link.gen, link.width, link.bytes_per_s)} while moving data",
                           gpu.index)

    def _read_gpm(self, gpu: _Gpu, t_ns: int, wall_s: float, lateness_ns: int) -> GpuSample | None:
        nv = self._nv
        bufs = gpu.gpm_bufs
        if self._call(gpu, "GPM sample", nv.nvmlGpmSampleGet, gpu.handle, bufs[1]) is _FAILED:
            return self._gpu_sample(gpu, t_ns, wall_s, lateness_ns, None, None, None, None)
        start_ns = gpu.gpm_start_ns
        if start_ns is None:  # first sample: it only opens the first interval
            bufs.reverse()
            gpu.gpm_start_ns = t_ns
            return self._gpu_sample(gpu, t_ns, wall_s, lateness_ns, None, None, None, None)
        get = gpu.gpm_get
        get.sample1, get.sample2 = bufs[0], bufs[1]
        if self._call(gpu, "GPM metrics", nv.nvmlGpmMetricsGet, get) is _FAILED:
            # Keep the start sample: the next successful reading covers this tick too.
            return self._gpu_sample(gpu, t_ns, wall_s, lateness_ns, None, None, None, None)
        metrics = get.metrics
        sm = self._metric(gpu, metrics[0], "SM activity (GPM SM_UTIL)")
        rx = self._metric(gpu, metrics[1], "PCIe RX (GPM)")
        tx = self._metric(gpu, metrics[2], "PCIe TX (GPM)")
        # No new data since the start sample (GPM refreshes ~every 100 ms): keep the start
        # sample and let the next real reading cover the whole interval (bounded, so that a
        # stuck counter still shows as data).
        if is_stale_gpm(sm, rx, tx, t_ns - start_ns):
            return None
        bufs.reverse()
        gpu.gpm_start_ns = t_ns
        return self._gpu_sample(
            gpu,
            t_ns,
            wall_s,
            lateness_ns,
            t_ns - start_ns,
            sm,
            None if rx is None else rx * _MIB,
            None if tx is None else tx * _MIB,
        )

    def _metric(self, gpu: _Gpu, metric: Any, what: str) -> float | None:
        if what in gpu.unsupported:
            return None
        code = metric.nvmlReturn
        if code != NVML_SUCCESS:
            self._on_code(gpu, what, code)
            return None
        return float(metric.value)

    def _read_counters(
        self, gpu: _Gpu, t_ns: int, wall_s: float, lateness_ns: int
    ) -> GpuSample:
        values = self._call(
            gpu, "PCIe byte counters", self._nv.nvmlDeviceGetFieldValues, gpu.handle,
            _COUNTER_FIELDS,
        )
        if values is _FAILED:
            gpu.prev_tx = gpu.prev_rx = None
            return self._gpu_sample(gpu, t_ns, wall_s, lateness_ns, None, None, None, None)
        tx_v, rx_v = values[0], values[1]
        tx, tx_lb, tx_dt_us, gpu.prev_tx = self._counter_rate(gpu, tx_v, gpu.prev_tx, "PCIe TX")
        rx, rx_lb, rx_dt_us, gpu.prev_rx = self._counter_rate(gpu, rx_v, gpu.prev_rx, "PCIe RX")
        dt_us = rx_dt_us if rx_dt_us is not None else tx_dt_us
        return self._gpu_sample(
            gpu,
            t_ns,
            wall_s,
            lateness_ns,
            None if dt_us is None else dt_us * 1000,
            None,
            rx,
            tx,
            lower_bound=rx_lb or tx_lb,
        )

    def _counter_rate(
        self, gpu: _Gpu, value: Any, prev: tuple[int, int] | None, what: str
    ) -> tuple[float | None, bool, int | None, tuple[int, int] | None]:
        """Rate from one counter field: (bytes/s, lower_bound, interval µs, new previous)."""
        code = value.nvmlReturn
        if code != NVML_SUCCESS:
            self._on_code(gpu, what, code)
            return None, False, None, None
        raw, bits = _field_value(value)
        now = (raw, int(value.timestamp))
        if prev is None:
            return None, False, None, now
        dt_us = now[1] - prev[1]
        if dt_us <= 0:  # the driver handed back the same reading: no new data, keep the start
            return None, False, None, prev
        delta = (raw - prev[0]) % (1 << bits)  # unwrap: at most one wrap is assumed ...
        # ... which holds only if the link cannot move 2^32 bytes within the interval.
        lower_bound = bits == 32 and dt_us > gpu.wrap_safe_us
        return delta * 1e6 / dt_us, lower_bound, dt_us, now

    def _read_legacy(self, gpu: _Gpu, t_ns: int, wall_s: float, lateness_ns: int) -> GpuSample:
        rx = tx = None
        # nvmlDeviceGetPcieThroughput blocks ~21 ms: at most ONE such call per tick for all GPUs
        # together, and per GPU one RX + one TX (consecutive ticks) every legacy_pcie_every_s.
        if t_ns >= gpu.legacy_next_ns and not self._legacy_spent and "PCIe" not in gpu.unsupported:
            self._legacy_spent = True
            counter = _PCIE_UTIL_RX_BYTES if gpu.legacy_rx_next else _PCIE_UTIL_TX_BYTES
            throughput = self._nv.nvmlDeviceGetPcieThroughput
            kbps = self._call(gpu, "PCIe", throughput, gpu.handle, counter)
            if kbps is not _FAILED:
                if gpu.legacy_rx_next:
                    rx = float(kbps) * _KIB
                else:
                    tx = float(kbps) * _KIB
            if not gpu.legacy_rx_next:
                gpu.legacy_next_ns = t_ns + self._legacy_every_ns
            gpu.legacy_rx_next = not gpu.legacy_rx_next
        interval_ns = None if gpu.prev_t_ns is None else t_ns - gpu.prev_t_ns
        gpu.prev_t_ns = t_ns
        return self._gpu_sample(gpu, t_ns, wall_s, lateness_ns, interval_ns, None, rx, tx)

    def _gpu_sample(
        self,
        gpu: _Gpu,
        t_ns: int,
        wall_s: float,
        lateness_ns: int,
        interval_ns: int | None,
        sm: float | None,
        rx: float | None,
        tx: float | None,
        *,
        lower_bound: bool = False,
    ) -> GpuSample:
        """Finish a reading: utilization.gpu is read last and always recorded beside."""
        util = None
        if "utilization.gpu" not in gpu.unsupported:
            rates = self._call(
                gpu, "utilization.gpu", self._nv.nvmlDeviceGetUtilizationRates, gpu.handle
            )
            if rates is not _FAILED:
                util = float(rates.gpu)
        gpm = gpu.mode == "gpm"
        return GpuSample(
            gpu=gpu.index,
            t_mono_ns=t_ns,
            t_wall_s=wall_s,
            interval_ns=interval_ns,
            # At most 100 %, as a recording reads it back (GPM's ratio may round above it).
            sm_active_pct=None if sm is None else min(sm, 100.0),
            gpu_util_pct=None if util is None else min(util, 100.0),
            # A counter that went back (a GPU reset) unwraps to ~1e20 B/s: no reading.
            pcie_rx_bytes_per_s=within(rx, 0.0, MAX_BYTES_PER_S),
            pcie_tx_bytes_per_s=within(tx, 0.0, MAX_BYTES_PER_S),
            sm_source="gpm" if gpm else "util",
            pcie_source="gpm" if gpm else gpu.mode,
            pcie_lower_bound=lower_bound,
            lateness_ns=lateness_ns,
        )

    # ---------------------------------------------------------------- the error choke point

    def _call(self, gpu: _Gpu, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        """Every per-GPU NVML call: the value, or `_FAILED` after the error was handled."""
        try:
            return fn(*args)
        except self._nv.NVMLError as exc:
            self._on_code(gpu, what, getattr(exc, "value", _UNKNOWN), str(exc))
            return _FAILED

    def _probe(self, gpu: _Gpu, fn: Callable[..., Any], *args: Any) -> Any:
        """A capability probe at open: a failure only means "use the next signal"."""
        try:
            return fn(*args)
        except self._nv.NVMLError as exc:
            code = getattr(exc, "value", None)
            if code in _LOST_CODES:
                self._lose(gpu, str(exc), code)
            return _FAILED

    def _on_code(self, gpu: _Gpu, what: str, code: int, text: str | None = None) -> None:
        if text is None:
            text = _error_text(self._nv, code)
        if code in _LOST_CODES:
            self._lose(gpu, f"{what}: {text}", code)
        if code in _UNSUPPORTED_CODES:
            gpu.unsupported.add(what)
            self._say(gpu, what, code, "info", f"{what} not available ({text}): shown as missing")
        else:
            self._say(gpu, what, code, "warning", f"{what} failed ({text}): missing this tick")

    def _lose(self, gpu: _Gpu, why: str, code: int | None = None, lost: bool = True) -> None:
        """The GPU is gone (fell off the bus, needs a reset): never read again this session.
        Said in words, and a `gpu_lost` event (recording, report, /metrics, the alert rule,
        `--on-event`): a GPU error as grave as an XID, not only a notice that scrolls by.
        `lost=False`: it cannot be read for another reason (no handle at open): said only."""
        if gpu.lost:
            raise _GpuLost
        gpu.lost = True
        if not lost:
            self._say(gpu, "lost", 0, "error", f"cannot be read ({why}): no samples from it")
            raise _GpuLost
        self._say(gpu, "lost", 0, "error", f"lost ({why}): no more samples from it")
        if self._tick is None:
            self._pending_lost.append((gpu.index, code))
        else:
            # Its record only: the notice above already said it, with NVML's words.
            self._tick.other.append(HardwareEvent(
                gpu=gpu.index, t_mono_ns=self._t_mono_ns, t_wall_s=self._t_wall_s,
                kind="gpu_lost", code=code))
        raise _GpuLost

    def _say(
        self, gpu: _Gpu, what: str, code: int, level: Literal["info", "warning", "error"], msg: str
    ) -> None:
        self._say_once((gpu.index, what, code), level, f"GPU {gpu.index}: {msg}", gpu.index)

    def _say_once(self, key: tuple[object, ...], level: Literal["info", "warning", "error"],
                  text: str, gpu: int | None) -> None:
        """A notice, the first time `key` comes up in this session."""
        if key in self._said:
            return
        self._said.add(key)
        if self._tick is None:
            self._pending.append((level, text, gpu))
        else:
            self._tick.notices.append(Notice(self._t_mono_ns, self._t_wall_s, level, text, gpu))


class _XidWatch(Background):
    """Waits for XID critical errors on its own thread (`nvmlEventSetWait_v2`, at most
    `XID_WAIT_MS` at a time so that `stop()` answers), keeping each as a `HardwareEvent`
    timed when the wait returned; the sampler's next tick takes them (`drain`). Bounded: at
    most 1024 waiting (a GPU spewing XIDs between two ticks)."""

    thread_name = "gapwatch-nvml-xid"

    def __init__(self, nv: Any, event_set: Any, handles: dict[int, int]) -> None:
        super().__init__()
        self.nv, self.event_set, self._handles = nv, event_set, handles
        self._events: deque[HardwareEvent] = deque(maxlen=1024)
        self.errors = 0

    @property
    def started(self) -> bool:
        return self._thread is not None

    def is_alive(self) -> bool:
        t = self._thread
        return t is not None and t.is_alive()

    def _loop(self) -> None:
        nv = self.nv
        wait = getattr(nv, "nvmlEventSetWait_v2", None) or nv.nvmlEventSetWait
        while not self.stop_event.is_set():
            try:
                data = wait(self.event_set, XID_WAIT_MS)
            except nv.NVMLError as exc:
                if getattr(exc, "value", None) != _TIMEOUT:
                    # Not a timeout: back off a second rather than spin on a broken set.
                    self.errors += 1
                    self.stop_event.wait(1.0)
                continue
            gpu = self._handles.get(_handle_key(data.device))
            if gpu is None:
                continue
            self._events.append(HardwareEvent(
                gpu=gpu, t_mono_ns=time.monotonic_ns(), t_wall_s=time.time(), kind="xid",
                code=_int(getattr(data, "eventData", None))))

    def drain(self) -> list[HardwareEvent]:
        out = []
        while self._events:
            out.append(self._events.popleft())
        return out


def _handle_key(handle: Any) -> int:
    """A device handle as a number that equals for two handles of one device (pynvml's are
    ctypes pointers, which do not compare equal; a fake's are objects)."""
    try:
        value = ctypes.cast(handle, ctypes.c_void_p).value
        return int(value) if value is not None else id(handle)
    except (TypeError, ctypes.ArgumentError):
        return id(handle)


def _free_event_set(nv: Any, event_set: Any) -> None:
    try:
        nv.nvmlEventSetFree(event_set)
    except nv.NVMLError:
        pass  # a lost GPU or a shut-down library: nothing left to free


def _float(value: Any, per: float = 1.0) -> float | None:
    """An NVML number as a float (divided by `per`: milliwatts to watts), or None."""
    n = _int(value)
    return None if n is None else n / per


def _int(value: Any) -> int | None:
    """An NVML integer, or None (None, or not a number: pynvml gives None for
    NVML_VALUE_NOT_AVAILABLE in some fields)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _field_value(value: Any) -> tuple[int, int]:
    """A counter field's integer and its width in bits, from its `valueType`."""
    kind = value.valueType
    if kind == 1:
        return int(value.value.uiVal), 32
    if kind == 2:
        return int(value.value.ulVal), 64
    if kind == 4:
        return int(value.value.sllVal), 64
    if kind == 5:
        return int(value.value.siVal), 32
    return int(value.value.ullVal), 64


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _error_text(nv: Any, code: int) -> str:
    try:
        return str(nv.NVMLError(code))
    except Exception:  # nvmlErrorString itself may fail on a dying driver
        return f"NVML error {code}"


def _init_reason(exc: Any) -> str:
    code = getattr(exc, "value", None)
    if code == _LIBRARY_NOT_FOUND:
        return "libnvidia-ml.so.1 not found (no NVIDIA driver installed here?)"
    if code == _DRIVER_NOT_LOADED:
        return "the NVIDIA driver is not loaded"
    if code == _NO_PERMISSION:
        return "no permission to open the NVIDIA devices"
    return f"nvmlInit failed ({exc})"
