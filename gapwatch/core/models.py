"""Value types every part of gapwatch shares: samples, log events, gaps, states, the session header.

Owned here so that sources, the tailer, the detector, the recorder, the exporters and the UI agree
on one vocabulary. Everything is immutable. Every record and the session header is a frozen
msgspec `Struct`: cheap to build at 10 Hz x 8 GPUs, and the one record codec
(`gapwatch.core.codec`) encodes and decodes them directly, with the bounds of
`gapwatch.core.bounds` checked while decoding. Records are tagged by their `type` (the JSON key
`"type"`, also a class attribute for code that names a record's type); the `Record` union is
what a recording line decodes to. `gc=False`: records hold no reference cycles (they are values:
numbers, strings, dicts and lists of plain data), so the garbage collector need not track the
millions of them a long report decodes.

Conventions:
- units live in names (`t_mono_ns`, `pcie_rx_bytes_per_s`, `sm_active_pct`);
- a reading that was not taken, not supported or not trustworthy is `None`, never 0: a hole in
  the data is information, and nothing downstream may interpolate over it;
- `t_mono_ns` orders and measures (durations, rates); `t_wall_s` (Unix seconds) aligns with the
  prover's log lines and is what reports print.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, get_args

from msgspec import UNSET, Meta, Struct, UnsetType, field, structs

from gapwatch.core.bounds import (
    I64,
    MAX_SNAPSHOT_JOBS,
    MAX_SNAPSHOT_PARTITIONS,
    MAX_SNAPSHOT_SRS,
    MAX_SNAPSHOT_STATES,
    MAX_SNAPSHOT_WORKERS,
    MIN_POWER_LIMIT_W,
    ByteRate,
    Celsius,
    CopyBytes,
    Count,
    DurationMs,
    DurationS,
    ErrorCount,
    EventRate,
    GpuIndex,
    GpuPct,
    HostByteRate,
    MemoryBytes,
    Mhz,
    MonoNs,
    PcieGen,
    PcieWidth,
    Pct,
    ProcessName,
    Share,
    SnapshotText,
    StretchS,
    WallS,
    Watts,
    copy_span_problem,
)
from gapwatch.core.evidence_types import (
    CopiesEvidence,
    EventEvidence,
    HostEvidence,
    ProverGapFacts,
    ProverState,
)

SCHEMA_VERSION = 1

#: Which measurement produced a field: GPM (Hopper+), the PCIe byte counters (fields 197/198),
#: the legacy calls (utilization rates / PcieThroughput), a simulator, or a CSV trace.
SignalSource = Literal["gpm", "counters", "legacy", "util", "sim", "trace"]

#: Why a GPU idled, from PCIe during the gap (see docs/detection.md). "unknown": no PCIe reading
#: during the gap, so the cause cannot be told (never guessed as host_stall).
GapKind = Literal["pcie_starved", "transfer_bound", "host_stall", "unknown"]
ChainState = Literal["CHAINED", "GAPS", "BREAKDOWN", "IDLE", "NO_DATA"]
#: How a gap was judged idle: "high" from SM activity, "low" from utilization.gpu alone.
Confidence = Literal["high", "low"]
#: The same, as tuples, for everything that lists them (tables, metrics, tests).
GAP_KINDS: tuple[GapKind, ...] = get_args(GapKind)
#: What the first reading after a hole that cut a gap showed (`Gap.read_after_hole`).
AfterHole = Literal["busy", "idle"]
CHAIN_STATES: tuple[ChainState, ...] = get_args(ChainState)
#: How bad each state is: the dashboard leads with the worst GPU.
STATE_SEVERITY: dict[ChainState, int] = {
    "BREAKDOWN": 4, "GAPS": 3, "NO_DATA": 2, "IDLE": 1, "CHAINED": 0,
}


class GpuSample(Struct, frozen=True, gc=False, tag_field="type", tag="gpu"):
    """One reading of one GPU, averaged over `interval_ns` ending at `t_mono_ns`.

    `sm_active_pct` is the fraction of SMs busy (GPM SM_UTIL), the signal that decides "idle".
    `gpu_util_pct` is NVML's "GPU utilization", which counts copies as busy: kept beside, never
    used alone to call a GPU idle when SM activity exists.
    """

    gpu: GpuIndex
    t_mono_ns: MonoNs
    t_wall_s: WallS
    interval_ns: I64 | None
    sm_active_pct: GpuPct | None
    gpu_util_pct: GpuPct | None
    pcie_rx_bytes_per_s: ByteRate | None
    pcie_tx_bytes_per_s: ByteRate | None
    sm_source: SignalSource | None = None
    pcie_source: SignalSource | None = None
    #: True when a byte-counter interval was too long to rule out a 32-bit wrap: the rate is then
    #: a lower bound.
    pcie_lower_bound: bool = False
    #: How late the sampler tick that produced this reading was (deadline scheduling), or None
    #: when the reading did not come from a live tick (replay).
    lateness_ns: I64 | None = None
    type: ClassVar[Literal["gpu"]] = "gpu"


class HostSample(Struct, frozen=True, gc=False, tag_field="type", tag="host"):
    """Host memory and CPU pressure at one tick. Every field is None where the kernel does not
    expose it."""

    t_mono_ns: MonoNs
    t_wall_s: WallS
    interval_ns: I64 | None
    mem_used_pct: Pct | None
    mem_available_bytes: I64 | None
    swap_used_bytes: I64 | None
    cpu_busy_pct: Pct | None
    psi_mem_some_avg10: Pct | None
    psi_mem_full_avg10: Pct | None
    #: Share (0..1) of the last interval in which some / all tasks stalled on memory, from the PSI
    #: `total` counters (microseconds): finer than avg10, which lags by seconds.
    psi_mem_some_share: Share | None
    psi_mem_full_share: Share | None
    major_faults_per_s: EventRate | None
    mem_bandwidth_bytes_per_s: HostByteRate | None = None
    #: Share (0..1) of the last interval in which some runnable task waited for a CPU, from
    #: /proc/pressure/cpu's `some total` (µs): synthesis threads outnumbering the cores. None
    #: where the kernel has no CPU PSI, and in recordings made before it was read.
    psi_cpu_some_share: Share | None = None
    #: /proc/pressure/cpu's `some avg10` (% of the last 10 s some runnable task waited for a
    #: CPU): what the host line shows, smoothed as memory's PSI there is.
    psi_cpu_some_avg10: Pct | None = None
    type: ClassVar[Literal["host"]] = "host"


#: How a log event's time was found: from the line itself, from a journald/`ts` prefix, from a
#: TIMELINE offset anchored to the prover's start line (e.g. cuzk's `starting cuzk engine`), or
#: the time gapwatch read the line. "around": an untimestamped line of a file read offline (a
#: panic's), placed at the timed line before it (else after it). "backlog": the time gapwatch
#: read a line its file held when following began from its start (`--from-start`): read, not
#: written, then (a PoSt's TIMELINE lines so timed are timed by their offsets).
TimeSource = Literal["line", "prefix", "timeline", "arrival", "around", "backlog"]
#: Times that say when gapwatch read a line, not when it was written.
READ_TIMES: tuple[TimeSource, ...] = ("arrival", "backlog")

FieldValue = str | int | float | bool | None
#: A field value as read from a recording: integers bounded to 64 bits (the parser keeps larger
#: ones as text, see `gapwatch.core.bounds`).
_RecordedField = str | I64 | float | bool | None
#: The `LogEvent.warning`s of a failed pinned-pool checkout: its fallback to pageable memory,
#: or the `cudaHostAlloc` failure behind it (cuzk writes them with the partition's `job_id`
#: and `partition`: it synthesises that partition into pageable memory, as `is_pinned=false`
#: says at INFO). The one home of the pair (the hints, the evidence, the partition table).
POOL_FALLBACK_WARNINGS = frozenset(("pinned_pool_fallback", "cuda_host_alloc_failed"))


class LogEvent(Struct, frozen=True, gc=False, tag_field="type", tag="log"):
    """One prover log line, parsed and placed on the wall clock."""

    t_wall_s: WallS
    time_source: TimeSource
    #: Which built-in or user rule matched (e.g. cuzk's "timeline", "cuzk_timing",
    #: "cuzk_ntt_h"; "tracing", "chan_send", "user:<name>"); "unparsed" for lines no rule
    #: understood (kept, counted).
    kind: str
    #: The event's name: a TIMELINE event (`GPU_START`), a message (`GPU_TIMING spawn_blocking
    #: prove_start`), or the first key of a key=value line (e.g. cuzk's CUZK_TIMING).
    name: str
    raw: str
    stream: str = ""
    level: str | None = None
    job_id: str | None = None
    worker: I64 | None = None
    partition: I64 | None = None
    gpu: GpuIndex | None = None
    fields: dict[str, _RecordedField] = field(default_factory=dict)
    #: A warning that explains gaps: "unpinned" (is_pinned=false), "pinned_pool_fallback",
    #: "cuda_host_alloc_failed", or None.
    warning: str | None = None
    #: Monotonic time gapwatch received the line (None when replayed from a file).
    t_arrival_mono_ns: I64 | None = None
    type: ClassVar[Literal["log"]] = "log"


class Gap(Struct, frozen=True, gc=False, tag_field="type", tag="gap"):
    """An idle stretch of one GPU between busy periods, with its cause and evidence.

    A gap is published while open (`end_s` None, `duration_s` growing) and again when closed;
    `gap_id` ties the versions together. A gap that was open when the data ended turned out to
    be idle after the last busy period, not a gap: its last version has `retracted` True (and
    `end_s` = the last idle reading). A gap a hole cut
    while open is retracted live at the hole and published closed, with `hole_after_s`, once
    the GPU works again after it. Consumers keep the latest version per `gap_id` and must not
    count or show retracted gaps as gaps.
    """

    gap_id: I64
    gpu: GpuIndex
    kind: GapKind
    start_mono_ns: I64
    start_s: float
    end_mono_ns: I64 | None
    end_s: float | None
    duration_s: float
    pcie_rx_bytes_per_s: float | None
    pcie_tx_bytes_per_s: float | None
    link_bytes_per_s: float | None
    #: "high" when decided from SM activity, "low" when only utilization.gpu was available.
    confidence: Confidence = "high"
    hint: str = ""
    host: HostEvidence = field(default_factory=HostEvidence)
    log_events: list[EventEvidence] = field(default_factory=list)
    retracted: bool = False
    #: What the copy trace saw in `[start - evidence_before_s, end]` by host memory kind, or,
    #: without one, the memory kind inferred and from what (docs/detection.md, "copies").
    copies: CopiesEvidence = field(default_factory=CopiesEvidence)
    #: Capacity of the link as trained when it was seen below its maximum while data moved
    #: (None: not seen trained down; `link_bytes_per_s` is always the maximum).
    link_current_bytes_per_s: float | None = None
    #: Where the prover itself says the wait was (its package's causes, e.g. cuzk's), decided
    #: from its `/status` snapshots during the gap; None without any.
    prover_cause: str | None = None
    #: The prover's snapshots for this GPU from the evidence window (compact, see
    #: as the prover package keeps them, e.g. cuzk's `gap_state`), oldest first.
    prover_states: list[ProverState] = field(default_factory=list)
    #: The facts that decided `prover_cause`, in plain words ("18 of 18 synthesis workers
    #: busy (synth_worker_count from the log)", "partition 3 queued 1.2 s before pickup"):
    #: from the snapshots and from what the prover's log said (`gapwatch.core.prover`).
    prover_evidence: list[str] = field(default_factory=list)
    #: The facts behind `prover_cause` its prover package decided, typed, for its advice to
    #: read (`ProverGapFacts`; their words are in `prover_evidence`). UNSET: a gap no prover
    #: package explained (it has no `prover_evidence` either), or one made before these facts
    #: existed (an older recording's gap line, never advised on: gaps are detected again):
    #: it has none, and its words are never read for them (`gapwatch.cuzk.advice.facts_of`).
    #: Left out of the gap's JSON documents (`gapwatch.core.codec.gap_json`); a recording
    #: holds them.
    prover_facts: ProverGapFacts | UnsetType = UNSET
    #: Seconds without readings right after its end: a hole in the data cut the gap, which
    #: then ends at its last idle reading and was published once the GPU worked again after
    #: the hole (the hole is never counted as idle). None: busy ended it, as usual.
    hole_after_s: float | None = None
    #: What the first reading after that hole showed: "busy" (the GPU worked again at once) or
    #: "idle" (idle again: the idle went on past the hole, the GPU worked again only later).
    #: None: no hole cut it, or a recording made before this was read. A restart's holes
    #: (NVML blind while the driver frees a killed run's pool) are mostly "idle": its first
    #: two gaps on the H200 said "the GPU worked again after it" of readings still idle.
    read_after_hole: AfterHole | None = None
    #: nvidia-smi's GPU-Util (`utilization.gpu`) during the gap, time-weighted over its idle
    #: readings judged by SM activity from 400 ms into it (NVML's average still holds the work
    #: before it until then: `detector.UTIL_AVERAGED_NS`): ~100 where pinned copies ran with the
    #: SMs idle, which a GPU-Util dashboard shows as busy (docs/detection.md, "GPU-Util beside
    #: busy"). None: no such reading (a gap shorter than that), a gap of low confidence, or an
    #: older recording's gap line.
    gpu_util_pct: float | None = None
    type: ClassVar[Literal["gap"]] = "gap"

    @property
    def is_open(self) -> bool:
        return self.end_s is None


class StateChange(Struct, frozen=True, gc=False, tag_field="type", tag="state"):
    """The chaining state of one GPU changed (CHAINED / GAPS / BREAKDOWN ...)."""

    gpu: GpuIndex
    t_mono_ns: I64
    t_wall_s: float
    state: ChainState
    busy_fraction: float | None
    reason: str = ""
    type: ClassVar[Literal["state"]] = "state"


#: How much a notice matters: "info" is said once and goes by, "warning" and "error" stay.
NoticeLevel = Literal["info", "warning", "error"]


class Notice(Struct, frozen=True, gc=False, tag_field="type", tag="notice"):
    """Something the user should know that is not a measurement: a GPU lost, a field unsupported,
    a log file rotated, a bad line skipped. Recorded so that a replay tells the same story.
    Its times are bounded as every record's read back (a recording's notice at -1e300 became
    the origin of its Perfetto trace: every event at 1e306 us)."""

    t_mono_ns: MonoNs
    t_wall_s: WallS
    level: NoticeLevel
    message: str
    gpu: GpuIndex | None = None
    type: ClassVar[Literal["notice"]] = "notice"


#: A partition's state in the prover's pipeline (e.g. cuzk's `/status`).
PartitionState = Literal["pending", "synthesizing", "synth_done", "gpu", "done", "failed"]
PARTITION_STATES: tuple[PartitionState, ...] = get_args(PartitionState)
#: A GPU worker's state: "proving" from GPU pickup until the partition's result is processed,
#: so it includes the wait for the GPU mutex and the tail work.
WorkerState = Literal["idle", "proving"]
WORKER_STATES: tuple[WorkerState, ...] = get_args(WorkerState)


class ProverWorker(Struct, frozen=True, gc=False):
    """One GPU worker of the prover, as its `/status` said."""

    worker_id: I64
    #: The CUDA ordinal the worker runs on (e.g. cuzk's `gpu_ordinal`), taken as the NVML index.
    gpu: GpuIndex | None
    state: SnapshotText
    job_id: SnapshotText | None = None
    partition: I64 | None = None
    #: Seconds the worker has been proving (None when idle).
    busy_s: DurationS | None = None


class ProverPartition(Struct, frozen=True, gc=False):
    """One partition of a job in flight. `synth_ms` / `gpu_ms` count up while the phase runs."""

    job_id: SnapshotText
    index: I64
    state: SnapshotText
    synth_ms: Count | None = None
    gpu_ms: Count | None = None


class ProverStatus(Struct, frozen=True, gc=False, tag_field="type", tag="prover"):
    """One snapshot of the prover's own pipeline (e.g. cuzk's `GET /status`), time-stamped by
    gapwatch.

    `t_mono_ns` / `t_wall_s` are when the request was sent, `latency_ms` how long the answer
    took (the snapshot was built somewhere in between). Counts that the prover did not report
    are None, never 0.

    The fields are read as the prover serves them; what they mean for one prover is its
    package's to say (e.g. cuzk's: docs/cuzk-status.md, where `synthesis_max` is a memory
    budget over the smallest partition, not how many syntheses can run).
    """

    #: Which prover (the status URL's host:port; "sim" for the built-in simulator's own feed).
    prover: str
    t_mono_ns: MonoNs
    t_wall_s: WallS
    latency_ms: DurationMs
    uptime_s: DurationS | None
    #: Partitions of the jobs in flight by state (every state of `PARTITION_STATES`, 0 included).
    #: Its lists and texts hold at most what one poll reads (`bounds.MAX_SNAPSHOT_*`): a
    #: recorded snapshot beyond them is a bad record, never memory.
    partition_counts: Annotated[dict[SnapshotText, Count],
                                Meta(max_length=MAX_SNAPSHOT_STATES)]
    workers: Annotated[list[ProverWorker], Meta(max_length=MAX_SNAPSHOT_WORKERS)]
    synthesis_active: Count | None
    synthesis_max: Count | None
    queue_depth: Count | None
    #: Jobs in flight (`len(pipelines)`); None when the answer had no readable list.
    jobs: Count | None
    completed_total: Count | None = None
    failed_total: Count | None = None
    partitions: Annotated[list[ProverPartition], Meta(max_length=MAX_SNAPSHOT_PARTITIONS)] = \
        field(default_factory=list)
    #: The prover's memory budget (`memory`): bytes in all, reserved, still free. None: not
    #: reported.
    memory_total_bytes: Count | None = None
    memory_used_bytes: Count | None = None
    memory_available_bytes: Count | None = None
    #: SRS entries loaded (`allocations.srs[].circuit_id`) and their bytes. None: not reported;
    #: an empty list can also mean the prover's SRS manager was busy (e.g. cuzk's, during a
    #: load).
    srs_circuits: Annotated[list[SnapshotText], Meta(max_length=MAX_SNAPSHOT_SRS)] | None = None
    srs_bytes: Count | None = None
    #: Each job's `proof_kind` (`porep-c2`, `snap-update`): the budget one partition needs.
    job_kinds: Annotated[dict[SnapshotText, SnapshotText], Meta(max_length=MAX_SNAPSHOT_JOBS)] = \
        field(default_factory=dict)
    type: ClassVar[Literal["prover"]] = "prover"


class ProverUnchanged(Struct, frozen=True, gc=False, tag_field="type", tag="prover_same"):
    """In a recording only, never a record of a session: a prover snapshot that equals the one
    before it from the same prover in the same file but for when it was taken. The recorder
    writes it in place of the snapshot (an idle prover answers the same every second); the
    reader (`gapwatch.sources.recording`) gives the snapshot back, with these times."""

    prover: str
    t_mono_ns: MonoNs
    t_wall_s: WallS
    latency_ms: DurationMs
    uptime_s: DurationS | None

    def expand(self, previous: ProverStatus) -> ProverStatus:
        return structs.replace(previous, t_mono_ns=self.t_mono_ns, t_wall_s=self.t_wall_s,
                               latency_ms=self.latency_ms, uptime_s=self.uptime_s)

    @staticmethod
    def of(status: ProverStatus, previous: ProverStatus | None) -> ProverUnchanged | None:
        """The marker for `status` when it equals `previous` but for its times, else None."""
        if previous is None or previous.prover != status.prover:
            return None
        marker = ProverUnchanged(status.prover, status.t_mono_ns, status.t_wall_s,
                                 status.latency_ms, status.uptime_s)
        return marker if marker.expand(previous) == status else None


#: Where the host side of a copy lives, as CUPTI names it (CUpti_ActivityMemoryKind).
MemoryKind = Literal[
    "unknown", "pageable", "pinned", "device", "array", "managed", "device_static",
    "managed_static",
]
#: Host-to-device ("h2d", what the GPU receives, PCIe RX) or device-to-host ("d2h", TX).
CopyDirection = Literal["h2d", "d2h"]


class CopyRecord(Struct, frozen=True, gc=False, tag_field="type", tag="copy"):
    """One host<->device copy the prover made, as CUPTI saw it inside the prover (the copy trace,
    `gapwatch.sources.copytrace`), on the wall clock (CLOCK_REALTIME, like the prover's logs).

    `gpu` is the NVML index the CUDA device was matched to (by UUID, see docs/copytrace.md);
    None when it matched no watched GPU. `src_kind`/`dst_kind` say where each side lives: for an
    H2D copy `src_kind` "pageable" means the driver staged it through a bounce buffer.
    """

    start_wall_s: WallS
    end_wall_s: WallS
    #: At most `bounds.MAX_COPY_BYTES`: a gap sums its copies' bytes, and the sum must stay a
    #: 64-bit integer that every output can write.
    bytes: CopyBytes
    direction: CopyDirection
    src_kind: MemoryKind
    dst_kind: MemoryKind
    gpu: GpuIndex | None
    cuda_device: I64
    stream_id: I64
    context_id: I64
    correlation_id: I64
    pid: I64
    #: Monotonic time gapwatch received the copy (None when replayed from a file).
    t_arrival_mono_ns: I64 | None = None
    type: ClassVar[Literal["copy"]] = "copy"

    def __post_init__(self) -> None:
        # A copy that ends before it starts, or lasts days, is a bad record of a recording
        # (msgspec reports the ValueError as a validation error), as it is a bad datagram
        # live: one such copy made a gap's pageable rate "0 MB/s" and covered every gap.
        problem = copy_span_problem(self.end_wall_s - self.start_wall_s)
        if problem is not None:
            raise ValueError(f"not a copy: {problem}")

    @property
    def host_kind(self) -> MemoryKind:
        """The memory kind of the host side: the source of an H2D copy, the destination of D2H."""
        return self.src_kind if self.direction == "h2d" else self.dst_kind

    @property
    def t_wall_s(self) -> float:
        """When the copy was over (replay paces and orders records by it)."""
        return self.end_wall_s

    @property
    def duration_s(self) -> float:
        return max(0.0, self.end_wall_s - self.start_wall_s)

    @property
    def bytes_per_s(self) -> float | None:
        d = self.end_wall_s - self.start_wall_s
        return self.bytes / d if d > 0 else None


class ProcessMemory(Struct, frozen=True, gc=False, tag_field="type", tag="procmem"):
    """Host memory of one process that NVML lists on a GPU, from /proc/PID/status: a hint of how
    much of it is pinned, never a verdict. `cudaHostAlloc` memory is a shared mapping, so it
    counts in RssShmem; ordinary heap is RssAnon, and so is memory pinned after the fact with
    `cudaHostRegister` (invisible here). Read by `gapwatch.sources.procmem` every
    `sampler.procmem_every_s`; all readings of one GPU in one round share `t_mono_ns`. None: the
    process vanished, /proc is hidden from gapwatch, or the kernel lacks the line."""

    t_mono_ns: MonoNs
    t_wall_s: WallS
    gpu: GpuIndex
    pid: I64
    #: Its comm, at most `bounds.MAX_PROCESS_NAME` characters.
    name: ProcessName
    rss_shmem_bytes: MemoryBytes | None
    rss_anon_bytes: MemoryBytes | None
    #: VmLck (mlock'ed) and VmPin (pinned by drivers that account for it): recorded beside.
    vm_locked_bytes: MemoryBytes | None = None
    vm_pinned_bytes: MemoryBytes | None = None
    #: GPU memory NVML says the process holds on this GPU (`usedGpuMemory`); None where NVML
    #: does not say (MIG without privileges, WDDM) or in recordings made before it was read.
    gpu_memory_bytes: MemoryBytes | None = None
    type: ClassVar[Literal["procmem"]] = "procmem"


class LinkState(Struct, frozen=True, gc=False, tag_field="type", tag="link"):
    """One GPU's PCIe link as trained at a moment when data was moving (idle links drop to a
    lower generation to save power, so only a reading under traffic says anything). Published
    when it changes; `bytes_per_s` is the capacity at the current generation and width."""

    gpu: GpuIndex
    t_mono_ns: MonoNs
    t_wall_s: WallS
    gen: PcieGen | None
    width: PcieWidth | None
    max_gen: PcieGen | None
    max_width: PcieWidth | None
    bytes_per_s: HostByteRate | None
    max_bytes_per_s: HostByteRate | None
    type: ClassVar[Literal["link"]] = "link"

    @property
    def trained_down(self) -> bool:
        """Below the link's maximum generation or width (both known)."""
        return (self.gen is not None and self.max_gen is not None and self.gen < self.max_gen) \
            or (self.width is not None and self.max_width is not None
                and self.width < self.max_width)


class ExitedProcess(Struct, frozen=True, gc=False):
    """A process NVML listed on a GPU before a blind spot and not after it: it exited meanwhile."""

    pid: I64
    name: ProcessName = ""
    #: Its pinned host memory (RssShmem) at the last /proc reading before it went; None: unknown.
    #: Bounded as a /proc reading is (a recording's -2^63 was said "-8388608.0 TiB").
    pinned_bytes: MemoryBytes | None = None


class PinningProcess(Struct, frozen=True, gc=False):
    """A process still on a GPU after a blind spot whose pinned host memory grew up to it:
    pinning a large pool (`cudaHostAlloc`) blocks NVML as freeing one does (on the H200, 0.6 s
    while a 24 GiB pool was being pinned, 1.4 s for 48 GiB)."""

    pid: I64
    name: ProcessName = ""
    #: RssShmem at a /proc reading before the blind spot (the one before the latest, when
    #: recent), and read again right after it; `since_s` seconds from that reading to the stall.
    #: Bounded as a /proc reading and a duration are: a recording's `since_s` of 1e308 was
    #: printed in 309 digits, its bytes as "-8388608.0 TiB".
    before_bytes: MemoryBytes = 0
    after_bytes: MemoryBytes = 0
    since_s: DurationS = 0.0


class BlindSpot(Struct, frozen=True, gc=False, tag_field="type", tag="blind"):
    """A stretch in which a source could not read the GPUs, and what gapwatch knows of why.

    NVML: every call blocks while the driver frees a process's pinned host memory (on an H200,
    1.9 s for a 24 GiB pool, 5.4 s for 72 GiB, whichever call it is), so a prover's exit leaves
    a hole in the readings. The NVML source times each tick's calls; a tick that took longer
    than `nodata_after_periods` periods is a blind spot: `t_mono_ns` / `t_wall_s` when its first
    call was made, `duration_s` how long the calls took, `exited` the processes NVML listed
    before and not after (the process list is read again at once), `pinning` the processes
    still there whose pinned memory (RssShmem, /proc read again at once) grew across it. The copy
    trace's BYE (a notice, `gapwatch.core.blind`) can name the exit too. Words:
    `gapwatch.core.blind`.
    """

    t_mono_ns: MonoNs
    t_wall_s: WallS
    duration_s: StretchS
    source: str = "nvml"
    #: The GPUs whose readings waited.
    gpus: list[GpuIndex] = field(default_factory=list)
    exited: list[ExitedProcess] = field(default_factory=list)
    pinning: list[PinningProcess] = field(default_factory=list)
    type: ClassVar[Literal["blind"]] = "blind"


class GpuHealth(Struct, frozen=True, gc=False, tag_field="type", tag="health"):
    """One GPU's health at one moment (NVML, every `sampler.health_every_s`, 1 s by default):
    memory, temperature, power against its enforced limit, clocks and why they are held down.
    Every field NVML could not give is None (unsupported, failed this time, not read this
    round). Words for the clocks' reasons: `gapwatch.core.health`."""

    gpu: GpuIndex
    t_mono_ns: MonoNs
    t_wall_s: WallS
    memory_used_bytes: MemoryBytes | None = None
    memory_total_bytes: MemoryBytes | None = None
    temperature_c: Celsius | None = None
    power_w: Watts | None = None
    power_limit_w: Watts | None = None
    sm_clock_mhz: Mhz | None = None
    memory_clock_mhz: Mhz | None = None
    #: NVML's clocks event (throttle) reasons, a bitmask (`nvmlClocksEventReason*`).
    clocks_event_mask: Count | None = None
    #: Volatile ECC error counts since the driver loaded (corrected / uncorrected).
    ecc_corrected_total: Count | None = None
    ecc_uncorrected_total: Count | None = None
    #: The PCIe replay counter (cumulative; read rarely: 171 us per call on the H200), None in
    #: the readings that did not read it.
    pcie_replay_total: Count | None = None
    type: ClassVar[Literal["health"]] = "health"

    @property
    def limit_w(self) -> float | None:
        """`power_limit_w` where it is a limit, else None: under `MIN_POWER_LIMIT_W` none was
        read (the NVML source refuses one; a recording written before it did holds 0 W, which
        the report said as "of 0 W" and /metrics exported). Every reader of the limit reads
        it here."""
        limit = self.power_limit_w
        return limit if limit is not None and limit >= MIN_POWER_LIMIT_W else None


#: What went wrong on the GPU itself: an XID critical error (NVML event), ECC errors (NVML
#: event or a count that grew), PCIe replays (the counter grew between two readings), the GPU
#: lost (NVML answered GPU_IS_LOST, RESET_REQUIRED or UNKNOWN: it fell off the bus or needs a
#: reset; gapwatch reads it no more). Recordings written before "gpu_lost" read as they did (a
#: member added to the Literal).
#: "row_remap_pending": the GPU memory remapped a row that takes effect at the next GPU reset;
#: "row_remap_failure": a row could not be remapped (NVML's `nvmlDeviceGetRemappedRows`, Ampere
#: and newer). Both are states, said once a run per GPU when first seen.
HardwareEventKind = Literal["xid", "ecc_corrected", "ecc_uncorrected", "pcie_replay", "gpu_lost",
                            "row_remap_pending", "row_remap_failure"]
HARDWARE_EVENT_KINDS: tuple[HardwareEventKind, ...] = get_args(HardwareEventKind)


class HardwareEvent(Struct, frozen=True, gc=False, tag_field="type", tag="hw_event"):
    """A GPU error seen by NVML (prover-neutral: any CUDA workload). `code` is the XID number
    for an XID, NVML's return code for a lost GPU (15 GPU_IS_LOST, 16 RESET_REQUIRED, 999
    UNKNOWN), else None; `count` how many errors (ECC, replays) the event stands for.
    Timed when gapwatch heard it (an XID's wait returns at once; a count when it was read)."""

    gpu: GpuIndex
    t_mono_ns: MonoNs
    t_wall_s: WallS
    kind: HardwareEventKind
    #: Never negative (NVML's event data and counters are unsigned): a recording's negative
    #: count was summed into /metrics' GPU error counter, taking errors off it. A count is at
    #: most `bounds.MAX_ERRORS_PER_EVENT`, so that sums of them stay 64-bit integers.
    code: Count | None = None
    count: ErrorCount = 1
    type: ClassVar[Literal["hw_event"]] = "hw_event"
#: What a prover event says happened (any prover; the words are in `message`):
#: "proof": a proof whose latency is watched (e.g. cuzk's WinningPoSt, WindowPoSt) completed, or
#: passed its deadline still running; "restart": the prover started again (its uptime went
#: back, its start line, a new pid on the GPU); "restart_cost": the GPU time a restart cost,
#: as one stretch with its parts (its cost less its new run's wait for a first job, `cost_s`);
#: "error": a failure or panic line (one event per message, however many lines); "lost_job": a
#: job queued for the GPU and never picked up while later ones were; "warning": a sign the
#: prover is heading for failures, said before them (e.g. cuzk's pinned pool churning, the
#: precursor of its pinning failures; always level "warning"); "setup": what the prover's
#: logs show of how it is set up that changes how they are read (e.g. the logs of two cuzk
#: daemons, each followed apart), said at level "warning" so a person reads it, but no sign
#: of failure: nothing pages on it (the alert on "warning" told of pool churn for it).
#: Recordings written before "warning" read as they did (a member added to the Literal).
ProverEventKind = Literal["proof", "restart", "restart_cost", "error", "lost_job", "warning",
                          "setup"]
PROVER_EVENT_KINDS: tuple[ProverEventKind, ...] = get_args(ProverEventKind)
#: A watched proof against its deadline: within it, past `at_risk_share` of it, or past it;
#: "unknown": its total could not be known (its begin was not read: a stray `GPU_END`), so
#: whether it met its deadline is not known either (never "ok": it was counted on time);
#: "failed": the prover said it failed (`ProofTiming.error`): no proof came of it, whatever
#: its time (a WinningPoSt that fails loses its block as a late one does), said when its
#: failure is read, its last word. Recordings written before "unknown" or "failed" read as
#: they did (members added to the Literal).
ProofVerdict = Literal["ok", "at_risk", "late", "unknown", "failed"]
PROOF_VERDICTS: tuple[ProofVerdict, ...] = get_args(ProofVerdict)
#: Why a proof was said without its end (`ProofTiming.given_up`): "restart" (the prover started
#: again while it was in flight: it will not complete), "too_many" (more proofs in flight at
#: once than a watcher follows: the oldest is given up, its end never said).
ProofGivenUp = Literal["restart", "too_many"]
#: A watched proof's phases, in order: arrival to synthesis start, synthesis, queued for the
#: GPU to picked up, on the GPU, GPU end to done; "prove": synthesis and GPU in one call (a
#: proof proved in one step, `ProofTiming.one_step`). The one home of their names: the metric's
#: `phase` label (`gapwatch.sinks.prover_event_metrics`), the phase a late proof's cause names
#: (`gapwatch.cuzk.post`), the report's table (`gapwatch.offline.prover_events`).
ProofPhase = Literal["queue", "synthesis", "gpu_wait", "gpu", "finalize", "prove"]
PROOF_PHASES: tuple[ProofPhase, ...] = get_args(ProofPhase)
#: How people read each phase ("GPU wait"): tables, a running proof's phase.
PHASE_WORDS: dict[ProofPhase, str] = {
    "queue": "queue", "synthesis": "synthesis", "gpu_wait": "GPU wait", "gpu": "GPU",
    "finalize": "finalize", "prove": "prove"}
#: Seconds under which a part of a proof's total is none (`ProofTiming.unread_s`), and so is
#: the least its total can be (`gapwatch.cuzk.post._least_total`): it is said to a tenth of a
#: second, and "0.0 s not read" or "more than 0.0 s" says nothing but noise.
UNREAD_LEAST_S = 0.05
#: Characters of a failed proof's error kept (`ProofTiming.error`): a prover's error is a line
#: or two; a hostile line's 16 KiB is not copied into every output.
MAX_ERROR_CHARS = 1024


class ProofTiming(Struct, frozen=True, gc=False):
    """One watched proof's latency, phase by phase (seconds; None: its lines were not read)."""

    proof_kind: str
    #: Arrival (queued in the prover) to the start of its synthesis.
    queue_s: float | None = None
    synth_s: float | None = None
    #: Queued for the GPU to picked up by a GPU worker.
    gpu_wait_s: float | None = None
    gpu_s: float | None = None
    #: Arrival (else synthesis start) to done (else to now, for a proof still running).
    total_s: float | None = None
    #: With neither its arrival nor its synthesis start read (`total_s` None): the least its
    #: total can be, its first line read to its last or its longest phase. A proof late by it
    #: alone is late; else its verdict is "unknown".
    total_at_least_s: float | None = None
    deadline_s: float | None = None
    verdict: ProofVerdict = "ok"
    done: bool = True
    #: What held the GPU workers while it waited for one ("worker 1: porep-... partition 3"),
    #: the first few; how many more were not listed.
    waited_behind: list[str] = field(default_factory=list)
    waited_behind_more: Count = 0
    #: The setting that would have freed it, with its source, when one exists.
    setting: str | None = None
    #: Its GPU work's end to its result processed (the prover's completion line), when read.
    finalize_s: float | None = None
    #: Set when it was said for the last time without its end (`ProofGivenUp`): this is its
    #: final word, and a later proof under the same job id (a retry) is another proof.
    given_up: ProofGivenUp | None = None
    #: Proved in one step: a worker took it from the queue and ran synthesis and GPU in one
    #: call, saying only their sum (cuzk with its pipeline off). Its phases are then its queue
    #: (its wait for a worker) and `prove_s`; `synth_s`, `gpu_wait_s` and `gpu_s` are not known
    #: (None, never 0).
    one_step: bool = False
    #: Taken by a worker to done, proved in one step (`one_step`; None before it was taken).
    prove_s: float | None = None
    #: Its failure in the prover's words (verdict "failed": the line that said it, its error),
    #: cut to `MAX_ERROR_CHARS`; None for a proof not failed (and in recordings from before).
    error: str | None = None
    #: What made it fail or late, as its prover names it, typed: what the report's "What to
    #: change" groups proofs by (one line a cause). Failed: the failure line's message (cuzk:
    #: `GPU prove start failed`); late or at risk: the cause its `setting` addresses (cuzk:
    #: `srs_evicted`, `srs_first_load`, `synthesis_queue`, ...). None: none known (and in
    #: recordings from before).
    cause: str | None = None

    @property
    def worker_wait_s(self) -> float | None:
        """Its wait for a GPU worker: its GPU wait, or, proved in one step, its queue."""
        return self.queue_s if self.one_step else self.gpu_wait_s

    @property
    def proved(self) -> bool:
        """It ended with a proof: done and not failed. A failed proof's total is its time to
        its failure, no latency: not among the proofs' latencies (histograms, compare)."""
        return self.done and self.verdict != "failed"

    @property
    def last_word(self) -> bool:
        """Whether it is its proof's last word: done, or said without its end (lost in a
        restart, given up): nothing more is said of that proof after it."""
        return self.done or self.given_up is not None

    @property
    def judged_s(self) -> float | None:
        """What it is judged by: its total, else the least its total can be."""
        return self.total_s if self.total_s is not None else self.total_at_least_s

    def phases(self) -> list[tuple[ProofPhase, float | None]]:
        """Its phases as it was proved, in order, with their seconds (None: not read): proved
        in one step its queue and prove, else queue, synthesis, GPU wait, GPU and finalize.
        Those after the last one read never ran where it failed (a proof that failed in its
        synthesis had no GPU wait) and have not begun where it still runs: not among them."""
        seconds: dict[ProofPhase, float | None] = {
            "queue": self.queue_s, "synthesis": self.synth_s, "gpu_wait": self.gpu_wait_s,
            "gpu": self.gpu_s, "finalize": self.finalize_s, "prove": self.prove_s}
        shape = ("queue", "prove") if self.one_step else PROOF_PHASES[:5]
        out = [(phase, seconds[phase]) for phase in shape]
        if self.verdict == "failed" or not self.done:
            while out and out[-1][1] is None:
                out.pop()
        return out

    def unread(self) -> tuple[list[ProofPhase], float | None]:
        """The phases whose lines were not read (before a window, before the log's first line)
        and the part of its total they took: its total less the phases read (they follow one
        another from its arrival to its end). The part is None where its total is not known
        (its begin not read: the phases before its first line read may be of any length);
        none ([], 0.0) where every phase was read or the rest is under `UNREAD_LEAST_S` (a
        phase whose lines were not read but took no time: its total counted from its
        synthesis start, its arrival not read)."""
        phases = self.phases()
        unread = [phase for phase, s in phases if s is None]
        if self.total_s is None:
            return unread, None
        rest = self.total_s - sum(s for _phase, s in phases if s is not None)
        if not unread or rest < UNREAD_LEAST_S:
            return [], 0.0
        return unread, rest

    def longest_phase(self) -> ProofPhase | None:
        """The phase that took longest, where what was read ranks it: None where no phase was
        read, where a phase was not read and its total is not known (the part not read may
        be any length), or where the part of its total not read is longer than the longest
        phase read (that part may be one phase: 33 s of synthesis before a window, beside
        1.7 s of GPU read in it). A part not read no longer than the longest phase read holds
        no phase longer than it: that phase ranks first."""
        read = [(phase, s) for phase, s in self.phases() if s is not None]
        if not read:
            return None
        phase, longest_s = max(read, key=lambda ps: ps[1])
        unread, rest_s = self.unread()
        if unread and (rest_s is None or rest_s > longest_s):
            return None
        return phase

    def behind_words(self) -> str:
        """"worker 1: porep-... partition 3, worker 2: ..." and how many more ("" for none)."""
        more = f" and {self.waited_behind_more} more" if self.waited_behind_more else ""
        return ", ".join(self.waited_behind) + more


class StretchPart(Struct, frozen=True, gc=False):
    """One named part of a stretch (down, pool pinned again, SRS reloaded, ...)."""

    name: str
    start_s: float
    end_s: float


class ProverEvent(Struct, frozen=True, gc=False, tag_field="type", tag="prover_event"):
    """Something the prover did that is not a gap: a watched proof's latency, a restart and
    what it cost, an error, a lost GPU job. Derived from the prover's log lines, its status
    and the processes on the GPU (a prover's watcher, e.g. `gapwatch.cuzk.watch`), so replay
    and report derive them again; recorded beside the gaps. `t_wall_s`: when it happened
    (a proof: when it completed or went late)."""

    t_wall_s: WallS
    kind: ProverEventKind
    level: NoticeLevel
    message: str
    job_id: str | None = None
    gpu: GpuIndex | None = None
    proof: ProofTiming | None = None
    #: A restart's cost, or a lost job's wait: (start, end) of the one stretch, and its parts.
    start_s: float | None = None
    end_s: float | None = None
    parts: list[StretchPart] = field(default_factory=list)
    #: Of the stretch, the time the prover sat ready with no work sent to it (a restart's new
    #: run waiting for its first job): in the stretch, not its cost (`cost_s`). None: no such
    #: wait was read. Recordings written before it read as they did (a field with a default).
    waited_s: float | None = None
    #: The prover daemon it is of, where the logs read are of several (a PoRep cuzk and a
    #: PoSt-only one beside it): its listen address, else its log file (`--log FILE`); and
    #: the GPUs its lines named. None and empty with one daemon (and in recordings from
    #: before): its words then name none either.
    daemon: str | None = None
    daemon_gpus: list[GpuIndex] = field(default_factory=list)
    #: What caused it, as a fixed token where its watcher knows one: a restart's
    #: `how the run before ended` (cuzk: `sigint`, `killed`, `unknown`). None: none said.
    cause: str | None = None
    #: Of an error: the partition its line named (None: none), and what happened without
    #: where or which daemon (`GPU prove start task panicked: task 41 panicked ...`): the
    #: footer's alert says the typed where first (`gpu`, `job_id`, `partition`), these words,
    #: then `daemon` (`core.prover_watch.alert_line`), never parsing `message`. None: the
    #: message alone says it (other kinds, recordings from before).
    partition: int | None = None
    what: str | None = None
    type: ClassVar[Literal["prover_event"]] = "prover_event"

    @property
    def length_s(self) -> float | None:
        if self.start_s is None or self.end_s is None:
            return None
        return self.end_s - self.start_s

    @property
    def cost_s(self) -> float | None:
        """What the stretch cost the GPU: its length less the wait for work in it (`waited_s`);
        None where its length is not known."""
        length = self.length_s
        if length is None:
            return None
        return length if self.waited_s is None else length - self.waited_s


#: Every record a recording holds after its header (what one line decodes to, by its "type").
Record = (
    GpuSample | HostSample | LogEvent | Gap | StateChange | Notice | CopyRecord | ProcessMemory
    | LinkState | ProverStatus | BlindSpot | GpuHealth | HardwareEvent | ProverEvent
)
#: The record classes, for what lists them (the codec's tests, the docs).
RECORD_TYPES: tuple[type[Record], ...] = get_args(Record)


#: Record types the detector derives (gaps, states) and the prover's watcher derives (prover
#: events). Those found in a recording are never fed
#: back or shown as such: replay, report and export recompute them, so every output shows what
#: this version detects, from the same samples.
DERIVED_TYPES = ("gap", "state", "prover_event")


class GpuInfo(Struct, frozen=True, forbid_unknown_fields=True):
    """What is known about one GPU for the whole session (header of a recording)."""

    index: int
    name: str = "unknown"
    uuid: str | None = None
    link_gen: int | None = None
    link_width: int | None = None
    #: Per-direction PCIe capacity in bytes/s from max generation x max width (Gen5 x16 ~63 GB/s);
    #: the detector judges "low bandwidth" against it. None when unknown.
    link_bytes_per_s: float | None = None
    sm_source: SignalSource | None = None
    pcie_source: SignalSource | None = None


class SessionHeader(
    Struct, frozen=True, forbid_unknown_fields=True, tag_field="type", tag="header", kw_only=True,
):
    """Line 1 of a recording: enough to replay and to interpret every later record."""

    schema_version: int = SCHEMA_VERSION
    gapwatch_version: str
    host: str
    source: str
    started_wall_s: float
    started_mono_ns: int
    period_ms: float
    gpus: list[GpuInfo]
    config: dict[str, Any] = field(default_factory=dict)
    #: The recording set this file belongs to (random; every segment of a set carries it, and
    #: a folder joins only files of one set). None in recordings made before set ids.
    set_id: str | None = None
    #: The inode number of the file the recorder wrote this header into. A copy of the file
    #: (`cp`, a restore) is another inode: a header whose `file_inode` is not its own file's
    #: is a copy, which gapwatch never removes to keep a budget and never continues the set
    #: of (`gapwatch.sinks.segments`). None where the recorder did not write the file itself
    #: (`write_recording`: snapshots, conversions) and in recordings made before it.
    file_inode: int | None = None
    #: A snapshot's recording (`gapwatch.sinks.snapshot`): when the snapshot was taken. The
    #: session went on after it, so the file's end cuts the data as a `--until` window's end
    #: does, rather than ending it: an idle stretch at its end (the gap still open when it was
    #: taken) is said as cut there (`report`, `replay --headless`). None in every other
    #: recording and in snapshots made before it.
    snapshot_wall_s: float | None = None
    type: ClassVar[Literal["header"]] = "header"


#: PCIe generation -> (transfer rate per lane in transfers/s, encoding efficiency). Gen1/2 use
#: 8b/10b encoding, Gen3+ 128b/130b; Gen6 (PAM4, FLIT) is taken as 64 GT/s with ~242/256.
_PCIE_GENERATIONS: dict[int, tuple[float, float]] = {
    1: (2.5e9, 8 / 10),
    2: (5.0e9, 8 / 10),
    3: (8.0e9, 128 / 130),
    4: (16.0e9, 128 / 130),
    5: (32.0e9, 128 / 130),
    6: (64.0e9, 242 / 256),
}


def _payload_bytes_per_s(gen: int, width: int) -> float:
    rate, eff = _PCIE_GENERATIONS[gen]
    return rate * width * eff / 8


def link_bytes_per_s(gen: int | None, width: int | None) -> float | None:
    """Per-direction PCIe payload capacity from generation and lane count, None when either is
    unknown. Gen5 x16: 32e9 * 16 * 128/130 / 8 = 63.0e9 B/s."""
    if gen is None or width is None or gen not in _PCIE_GENERATIONS or width <= 0:
        return None
    return _payload_bytes_per_s(gen, width)


#: Gen5 x16 (~63.0 GB/s per direction), the link of the H100/H200 boxes gapwatch is built for:
#: the detector's default link (`DetectorConfig.default_link_bytes_per_s`), the worst case the
#: NVML source assumes for counter wraps when it cannot tell the link, the simulator's link.
GEN5_X16_BYTES_PER_S = _payload_bytes_per_s(5, 16)
