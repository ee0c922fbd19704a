"""The simulated prover: a seeded, deterministic two-worker-per-GPU pipeline, sampled like NVML.

Who calls it: `gapwatch demo` and `--source sim[:SCENARIO]` (through `gapwatch.engine.runtime`), the
tests and benchmarks (through `simulate`). It implements `GpuSource` and `HostSource`, writes
cuzk-style log lines through a callback, and keeps ground truth (every partition's GPU compute
interval), so the detector can be scored.

The model, per GPU (see `../shared/reference/cuzk-log-formats.md` section 3 and the H200 traces):
synthesis threads produce partitions into a bounded queue; two GPU workers each take a
partition, copy its a/b/c vectors host-to-device (PCIe RX at the copy rate, SMs idle), then take a
narrow per-GPU compute lock and run kernels (SMs ~95 % busy). While one worker computes, the
other copies: when the copy is shorter than the compute, the GPU never waits ("chained"). Pageable
memory copies run through a bounce buffer whose rate falls as synthesis threads load host memory
bandwidth; once the copy outlasts the compute, gaps open with PCIe trickling (the breakdown).

Sampling integrates the simulated intervals exactly over each sample's window, so a sample's
`sm_active_pct` is the covered fraction of the window, as GPM reports it.

The pipeline's own view (`status_document()`) is the JSON cuzk's `GET /status` serves, with
upstream's semantics (curio e0294b0f `status.rs`, `engine.rs`; docs/cuzk-status.md): each job's
10 partitions pending -> synthesizing -> synth_done (queued for the GPU) -> gpu (a worker picked
it up: copy, mutex wait, compute) -> done, or failed; each worker idle or proving; the memory
budget (`SIM_BUDGET_BYTES`, 14 GiB reserved per partition in flight, the SRS beside);
`synthesis.max_concurrent` the budget over 9 GiB (NOT the synthesis workers: those the log's
`starting pipeline ... synth_worker_count` line says); `synthesis.active` incremented at each
synthesis start and decremented on success only, so it drifts upward after a failed synthesis
(`synth_fail_every`), whose job then stays listed with its pending partitions that never run.
Its monolithic work (the `post*` scenarios' PoSt, batches, every proof of `post-pipeline-off`,
whose one worker per GPU is `gapwatch.sources.sim_monolithic`'s) is not listed, as cuzk lists
none; nor is a request cuzk's batch collector holds (`batch-wait`'s, whose requests come one
at a time: `gapwatch.sources.sim_batch_wait`), whose job is listed once it is sent; a killed
simulated cuzk answers no `/status` until its new run listens. At speed > 0 the
runtime serves it over HTTP (`gapwatch.sources.cuzk_status_server`); at speed 0 `SimStatusFeed`
hands snapshots straight to the session. Reads and the status document take one lock, as cuzk's
tracker lock: the sampler thread advances the model while the server thread reads it.

The box's memory (`read_host`, `SIM_MEM_TOTAL_BYTES`): 517 GiB, cuzk's 512 GiB budget being
"auto" with the default 5 GiB margin, 38-88 % in use as synthesis loads the host; MemAvailable
and the used share are one figure each way, so MemTotal reads back from them as from a real
host's. Where a scenario's pins fail (`pageable`: `cuda_err=2`, out of memory, at the pool's
first buffer) the box is short of RAM (`Scenario.ram_short`, ~1.5 GiB available, below one
a/b/c buffer), as those lines say: the advice judges a pool's failures by the host's readings
then (`gapwatch.cuzk.pin_host`). The failures stay scripted: nothing here makes the pins follow
the RAM (a pinned buffer stands for a/b/c inside its partition's reservation, pinned_pool.rs:
127-129, 194-198, and no model of who holds the rest of the box is attempted), so a setting
changed here shows nothing of the advice working. One box, one pool: a mix
(`sim:pageable,chained`) is short of RAM for every GPU while its chained GPU's pins succeed.
"""

from __future__ import annotations

import heapq
import json
import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from typing import Literal, Protocol

from gapwatch.config import BATCH_WAIT_MAX_BATCH_SIZE, BATCH_WAIT_MAX_BATCH_WAIT_MS, MAX_SIM_GPUS
from gapwatch.core.models import (
    GEN5_X16_BYTES_PER_S,
    CopyRecord,
    GpuInfo,
    GpuSample,
    HostSample,
    MemoryKind,
    ProverStatus,
)
from gapwatch.core.units import GIB
from gapwatch.cuzk.pipeline import (
    POREP_PARTITION_FULL_BYTES,
    max_concurrent_of,
    synth_worker_count,
)
from gapwatch.sources import Tick
from gapwatch.sources.cuzk_status_server import NotServing
from gapwatch.sources.sim_batch_wait import TURNAROUND_S, BatchWaitScript
from gapwatch.sources.sim_lines import dequeued, enqueued
from gapwatch.sources.sim_monolithic import MonolithicScript
from gapwatch.sources.sim_post import CYCLES, Kept, PostScript

ScenarioName = Literal["chained", "pageable", "host-stall", "transfer-bound", "post", "batched",
                       "post-failed", "post-pipeline-off", "batch-wait"]
SCENARIOS: tuple[ScenarioName, ...] = ("chained", "pageable", "host-stall", "transfer-bound",
                                       "post", "batched", "post-failed", "post-pipeline-off",
                                       "batch-wait")
LINK_BYTES_PER_S = GEN5_X16_BYTES_PER_S
#: What utilization.gpu reads of a copy beyond its rate over the pinned rate (`_sample`).
COPY_UTIL_FLOOR = 0.03
IDLE_PCIE_BYTES_PER_S = 1.5 * 2**20  # an idle H200 link reads ~0.7-2.7 MiB/s each way

#: (stream, text): stream is "stdout" for tracing lines, "stderr" for TIMELINE / CUZK lines.
LineSink = Callable[[str, str], None]


class StatusListener(Protocol):
    """The server of the simulated prover's `/status` (`CuzkStatusServer`), as the prover's
    death and restart drive it."""

    def stop_listening(self) -> None: ...
    def listen_again(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Scenario:
    """Parameters of one simulated prover setup."""

    name: ScenarioName
    pinned: bool
    abc_bytes: float  # a/b/c bytes copied host-to-device per partition
    compute_s: float  # kernel time per partition
    synth_s: float  # synthesis time per partition per thread
    threads_start: int  # synthesis threads at the start ...
    threads_end: int  # ... and after the ramp
    ramp_start_s: float
    ramp_end_s: float
    pinned_rate: float = 55.5e9  # measured H2D from pinned memory on the H200
    pageable_rate: float = 8.5e9  # pageable H2D with a quiet host
    pageable_floor_frac: float = 0.25  # pageable rate under full host pressure, as a fraction
    queue_depth: int = 4
    #: `[scheduler] max_batch_size` (1: every request partitioned). Above 1, with cuzk fed,
    #: each unit of work is a full batch of that many PoRep sectors, proved as one monolithic
    #: job (engine.rs:2053, 2672-2680): unpinned, absent from /status; with requests one at a
    #: time (`request_after_proof_s`) each is sent alone, partitioned (engine.rs:2179).
    max_batch_size: int = 1
    #: `[scheduler] max_batch_wait_ms` (config.rs:206, default 10 000): how long cuzk's batch
    #: collector holds a batch that has not filled (batch_collector.rs:165-173).
    max_batch_wait_ms: int = 10_000
    #: `[pipeline] synthesis_concurrency` (config.rs:355-357, default 1): how many batches the
    #: dispatcher synthesises at once (engine.rs:1907-1972: awaited inline at 1, else spawned
    #: holding one of that many permits). Partitions never count against it (one batch
    #: dispatches all ten, 2179-2300); a monolithic batch holds its permit through its synthesis.
    synthesis_concurrency: int = 1
    #: None: Curio keeps cuzk fed (every partition there at once; with max_batch_size > 1
    #: every batch full). Set: Curio sends one PoRep request at a time, this long after the
    #: last proof came back, so no batch fills and each request waits out max_batch_wait_ms
    #: (`gapwatch.sources.sim_batch_wait`).
    request_after_proof_s: float | None = None
    #: The first wave after start unpinned (upstream always has one: no capacity hint until the
    #: first synthesis finishes). Off only where it would hide the scenario's own story.
    first_wave: bool = True
    #: `[pipeline] enabled` (cuzk's whole daemon): off, each GPU has one monolithic worker
    #: proving whole proofs (`gapwatch.sources.sim_monolithic`), no TIMELINE line.
    pipeline: bool = True
    #: The box is short of RAM (`SHORT_AVAILABLE_BYTES` available): its pins fail for want of
    #: it, as its failure lines say (cuda_err=2, cudaErrorMemoryAllocation, at the pool's first
    #: buffer), and its host readings say so too (`SimProver.read_host`).
    ram_short: bool = False


SCENARIO_PARAMS: dict[ScenarioName, Scenario] = {
    # Pinned pool, fast synthesis: copies take ~80 ms, hidden behind the other worker's kernels.
    "chained": Scenario("chained", True, 4.5e9, 0.9, 2.0, 4, 4, 0.0, 0.0),
    # The seeds' story: pageable a/b/c; fine with 3 synthesis threads (copy ~0.55 s < 0.9 s
    # compute), then threads ramp to 20, host memory bandwidth saturates, H2D falls to ~2.5 GB/s,
    # copies take ~1.8 s and the GPU idles ~0.9 s per partition with PCIe trickling.
    # Its pins fail for want of RAM: the budget ("auto": MemTotal - the default 5 GiB margin)
    # counts on RAM the rest of the box holds, so cuzk's SRS and first wave leave less than
    # one a/b/c buffer available (`ram_short`).
    "pageable": Scenario("pageable", False, 4.5e9, 0.9, 2.0, 3, 20, 8.0, 20.0, ram_short=True),
    # Synthesis cannot keep up: the queue runs dry and the GPU waits with PCIe quiet.
    "host-stall": Scenario("host-stall", True, 4.5e9, 0.9, 3.5, 2, 2, 0.0, 0.0),
    # Copies at line rate, but each moves so much that it outlasts the other worker's kernels.
    # (No first wave: ten 70 GB pageable copies would take the first ~40 s.)
    "transfer-bound": Scenario("transfer-bound", True, 70e9, 0.5, 1.0, 6, 6, 0.0, 0.0,
                               first_wave=False),
    # The chained pipeline plus PoSt, a late PoSt, a panic and a restart on a fixed script
    # (`gapwatch.sources.sim_post`).
    "post": Scenario("post", True, 4.5e9, 0.9, 2.0, 4, 4, 0.0, 0.0),
    # `post`'s pipeline and on-time WinningPoSt, then one whose GPU prove start fails.
    "post-failed": Scenario("post-failed", True, 4.5e9, 0.9, 2.0, 4, 4, 0.0, 0.0),
    # `[pipeline] enabled = false`: one monolithic worker per GPU proving whole PoRep C2 proofs;
    # a WinningPoSt on time, one late behind a whole PoRep, one that fails
    # (`gapwatch.sources.sim_monolithic`).
    "post-pipeline-off": Scenario("post-pipeline-off", False, 4.5e9, 0.9, 2.0, 4, 4, 0.0, 0.0,
                                  first_wave=False, pipeline=False),
    # `[scheduler] max_batch_size = 2`: every two PoRep requests are one monolithic batch,
    # synthesised with no pinned pool; its a/b/c copy (pageable, ~2.7 s) outlasts the other
    # worker's batch kernels (1.8 s), so the GPU idles ~0.9 s per batch with PCIe trickling.
    # Its four batches synthesised at once are `[pipeline] synthesis_concurrency = 4`.
    "batched": Scenario("batched", False, 22e9, 1.8, 4.0, 4, 4, 0.0, 0.0, max_batch_size=2,
                        synthesis_concurrency=4),
    # `chained`'s pipeline with `[scheduler] max_batch_size = 2`, `max_batch_wait_ms = 5000`,
    # and Curio sending one PoRep request at a time: cuzk's batch collector holds each for 5 s
    # before sending it alone, the GPU idle meanwhile (`gapwatch.sources.sim_batch_wait`).
    # Its two batch settings are `[sim.batch_wait]`'s (`with_batch_settings`).
    "batch-wait": Scenario("batch-wait", True, 4.5e9, 0.9, 2.0, 4, 4, 0.0, 0.0,
                           max_batch_size=BATCH_WAIT_MAX_BATCH_SIZE,
                           max_batch_wait_ms=BATCH_WAIT_MAX_BATCH_WAIT_MS,
                           request_after_proof_s=TURNAROUND_S),
}

#: What cuzk-daemon's main says of itself (main.rs:57-64, 93-115): its lines' target, its
#: gRPC address (`[daemon] listen`, config.rs:43-45's default, Curio's socket), and the rayon
#: pool's size (`[synthesis] threads` 0: the simulated host's CPUs).
DAEMON_TARGET = "cuzk_daemon"
SIM_GRPC_LISTEN = "unix:///run/curio/cuzk.sock"
SIM_HOST_CPUS = 96

#: The capacity hint's figures (pipeline.rs:355, 32G PoRep) and one a/b/c buffer (3 per
#: partition), as the simulated cuzk logs them.
_NUM_CONSTRAINTS = 130_278_869
_BUF_GIB = round(_NUM_CONSTRAINTS * 32 / GIB, 6)


def _batch_full_span(size: int) -> str:
    """The span a full batch is processed in (engine.rs:2055-2058), as tracing prints it."""
    return f"synth_batch_full{{batch_size={size} proof_kind=porep-c2}}: "


def with_batch_settings(sc: Scenario, max_batch_size: int | None,
                        max_batch_wait_ms: int | None) -> Scenario:
    """`sc` with cuzk's `[scheduler] max_batch_size` and `max_batch_wait_ms` as given (None:
    the scenario's own), where its requests come one at a time through cuzk's batch collector
    (`batch-wait`: `[sim.batch_wait]`, so that the advice for its gaps can be followed); any
    other scenario as it is: its batching is its story (`batched`: fed, every batch full)."""
    if sc.request_after_proof_s is None:
        return sc
    return replace(sc, max_batch_size=sc.max_batch_size if max_batch_size is None
                   else max_batch_size,
                   max_batch_wait_ms=sc.max_batch_wait_ms if max_batch_wait_ms is None
                   else max_batch_wait_ms)


def parse_scenarios(scenario: str | Sequence[str], gpus: int = 1) -> list[ScenarioName]:
    """Scenario names per GPU from `pageable`, `pageable,chained` or a list; `gpus` copies a
    single name. Raises ValueError naming an unknown scenario, a count that disagrees, or more
    than `MAX_SIM_GPUS` of them (300 named ran 300 GPUs, past the 256 a recording holds: the
    recording written could not be read back, its GPUs from 256 on bad records)."""
    given = [n.strip() for n in scenario.split(",")] if isinstance(scenario, str) \
        else list(scenario)
    if len(given) > MAX_SIM_GPUS:
        raise ValueError(f"{len(given)} scenarios: the simulator runs at most {MAX_SIM_GPUS} "
                         "GPUs, one scenario each")
    names = [_scenario_name(name) for name in given]
    off = [n for n in names if not SCENARIO_PARAMS[n].pipeline]
    if off and len(off) != len(names):
        raise ValueError(f"{off[0]} turns cuzk's pipeline off, for the whole daemon: it cannot "
                         "be mixed with scenarios of the pipeline on")
    one_by_one = [n for n in names if SCENARIO_PARAMS[n].request_after_proof_s is not None]
    if one_by_one and (len(names) > 1 or gpus > 1):
        raise ValueError(f"{one_by_one[0]} is one GPU's: cuzk's batch collector is the "
                         "daemon's, one for every GPU; run it on its own, with one GPU")
    if len(names) == 1:
        return [names[0]] * max(1, gpus)
    if gpus not in (1, len(names)):
        raise ValueError(f"{len(names)} scenarios for {gpus} GPUs: give one per GPU")
    return names


def _scenario_name(name: str) -> ScenarioName:
    for known in SCENARIOS:
        if name == known:
            return known
    raise ValueError(f"unknown scenario {name!r}; choose from {', '.join(SCENARIOS)}")


@dataclass(frozen=True, slots=True)
class TruthInterval:
    """Ground truth: one partition's GPU compute interval (Unix seconds)."""

    gpu: int
    worker: int
    partition: int
    start_s: float
    end_s: float
    h2d_ms: float
    pinned: bool


@dataclass(slots=True)
class _Span:
    start: float
    end: float
    rate: float = 0.0  # bytes/s for copies


@dataclass(frozen=True, slots=True)
class SimCopy:
    """One partition's a/b/c host-to-device copy as the simulator ran it (wall seconds)."""

    gpu: int
    worker: int
    start_wall_s: float
    end_wall_s: float
    bytes: int
    pinned: bool


@dataclass(slots=True)
class _Worker:
    wid: int
    busy: bool = False
    job: str | None = None
    partition: int | None = None
    since_s: float = 0.0


@dataclass(slots=True)
class _Part:
    """One partition's place in the pipeline, for the status document (simulated seconds)."""

    state: str = "pending"
    synth_start_s: float | None = None
    synth_end_s: float | None = None
    gpu_start_s: float | None = None
    gpu_end_s: float | None = None


@dataclass(slots=True)
class _Job:
    """A job of `_PARTS_PER_JOB` partitions (simulated seconds)."""

    started_s: float
    parts: list[_Part]
    finished_s: float | None = None
    #: A partition's synthesis failed: the job failed, its pending partitions never run.
    failed: bool = False


#: Partitions per job (cuzk PoRep 32G), and how long a finished job stays in the status.
_PARTS_PER_JOB = 10
_JOB_KEEP_S = 30.0
#: The simulated prover's memory budget (`[memory] total_budget`) and its PoRep SRS.
SIM_BUDGET_BYTES = 512 * GIB
SIM_SRS_BYTES = 47 * GIB
#: The simulated box's RAM: its budget is "auto", MemTotal less cuzk's default 5 GiB
#: `[memory] safety_margin` (config.rs:100-104; cuzk-log-formats.md 3.3), as the log's
#: `total_budget_gib=512` says.
SIM_DEFAULT_SAFETY_MARGIN_BYTES = 5 * GIB
SIM_MEM_TOTAL_BYTES = SIM_BUDGET_BYTES + SIM_DEFAULT_SAFETY_MARGIN_BYTES
#: MemAvailable of a box short of RAM (`Scenario.ram_short`), give or take `SHORT_NOISE_BYTES`
#: a reading, never outside `SHORT_AVAILABLE_RANGE`: below one PoRep a/b/c buffer (3.88 GiB),
#: so that its failed pins are as its host readings say.
SHORT_AVAILABLE_BYTES = 1.5 * GIB
SHORT_NOISE_BYTES = 0.25 * GIB
SHORT_AVAILABLE_RANGE = (0.5 * GIB, 3.0 * GIB)


@dataclass
class _Gpu:
    index: int
    rng: random.Random
    workers: list[_Worker]
    scenario: Scenario
    queue: list[tuple[str, int, float, bool]] = field(default_factory=list)  # job, part, synth_ms
    lock_free_at: float = 0.0
    synth_active: int = 0
    next_partition: int = 0
    copies: list[_Span] = field(default_factory=list)
    computes: list[_Span] = field(default_factory=list)
    #: Partitions sent to synthesis so far (None: Curio keeps cuzk fed, every one there at
    #: once): `batch-wait`'s requests release ten at a time.
    parts_released: int | None = None


def _workers(gpu: int, scenario: Scenario) -> list[_Worker]:
    """A GPU's workers: two with the pipeline on, one with it off (engine.rs:1333-1337; worker
    ids in GPU order, 1349-1357)."""
    if not scenario.pipeline:
        return [_Worker(gpu)]
    return [_Worker(gpu * 2 + k) for k in range(2)]


class SimProver:
    """The simulated prover. Time is taken from the readings' timestamps (any `Clock`)."""

    def __init__(
        self,
        scenario: str | Sequence[str] = "pageable",
        seed: int = 1,
        gpus: int = 1,
        on_line: LineSink | None = None,
        keep_truth: bool = True,
        synth_fail_every: int = 0,
        max_batch_size: int | None = None,
        max_batch_wait_ms: int | None = None,
    ) -> None:
        """`scenario`: one for every GPU, or one per GPU (a box where one GPU's pipeline breaks
        down and another's chains: `sim:pageable,chained`); `gpus` is then their number.
        `synth_fail_every`: every Nth partition synthesis fails (0: none), as cuzk's can.
        `max_batch_size`, `max_batch_wait_ms`: cuzk's `[scheduler]` settings where requests
        come one at a time (`batch-wait`, `with_batch_settings`); None: the scenario's own."""
        names = parse_scenarios(scenario, gpus)
        params = [with_batch_settings(SCENARIO_PARAMS[name], max_batch_size, max_batch_wait_ms)
                  for name in names]
        #: GPU 0's scenario (the one the demo names).
        self.scenario = params[0]
        self.seed = seed
        self.on_line = on_line
        #: Ground truth for scoring (tests, benches). A live demo runs for weeks and scores
        #: nothing: `keep_truth=False` keeps it empty instead of growing ~0.4 MB an hour.
        self.truth: list[TruthInterval] = []
        self._keep_truth = keep_truth
        self._gpus = [_Gpu(g, random.Random(seed * 1000 + g), _workers(g, sc), sc)
                      for g, sc in enumerate(params)]
        #: cuzk's synthesis workers for these scenarios (fixed: `synth_worker_count`).
        self._synth_workers = synth_worker_count(SIM_BUDGET_BYTES, sum(
            max(g.scenario.threads_start, g.scenario.threads_end) for g in self._gpus))
        self._rng = random.Random(seed)
        self._events: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = 0
        self._now = 0.0  # simulated seconds since start
        self._t0_mono_ns: int | None = None
        self._t0_wall_s = 0.0
        self._last_t: float | None = None
        self._last_host_t: float | None = None
        #: Simulated seconds until which NVML answers nothing (`nvml_blind_for`): no GPU
        #: reading, as on a real box while the driver frees a killed run's pinned memory.
        self._nvml_blind_until = 0.0
        self._psi_some_avg10 = 0.0
        self._job = 1000
        # One lock for the model: the sampler thread advances it, the status server reads it.
        self._lock = threading.Lock()
        self._jobs: dict[str, _Job] = {}
        self.jobs_completed = 0
        #: cuzk's `synthesis.active`: +1 at each synthesis start, -1 only on success.
        self.synth_active_counter = 0
        self.synth_fail_every = synth_fail_every
        self.syntheses = 0
        self.syntheses_failed = 0
        #: cuzk's capacity hint (a process-wide OnceLock, pipeline.rs:176-230): cached when the
        #: first synthesis finishes; every synthesis started before is unpinned (the first wave).
        self.hint_cached = False
        self.first_wave = 0
        #: The `post` scenario's script (PoSt, a panic, a restart), and its state: the daemon
        #: killed (`down`), the current run's TIMELINE epoch (simulated seconds).
        self.post_script: PostScript | None = None
        #: The pipeline-off scenario's workers and script.
        self.monolithic_script: MonolithicScript | None = None
        #: `batch-wait`'s requests and batch collector.
        self.batch_script: BatchWaitScript | None = None
        self.down = False
        self._epoch = 0.0
        #: The process is alive (False from a kill to its restart's engine start): only a
        #: live one answers `/status`. Its server, when one serves it (speed > 0), is told.
        self.process_alive = True
        self.status_listener: StatusListener | None = None
        #: Where its status server listens, for cuzk's line when it cannot bind again.
        self.status_listen = ""
        #: Each finished a/b/c copy, for a simulated copy trace (`SimCopyFeed` sets it to a
        #: list and drains it; None: nobody reads copies, none kept).
        self.finished_copies: list[SimCopy] | None = None

    # --- GpuSource / HostSource --------------------------------------------------------------

    def open(self) -> list[GpuInfo]:
        return [
            GpuInfo(
                index=g.index,
                # The model, as NVML names a GPU: every scenario simulates the same H200 on
                # the same link; the scenario is the prover's settings and load (the header's
                # `source` says it). With it in the name, `compare` of a pageable run against
                # a chained one said "different hardware" and claimed no share of the gain.
                name="Simulated H200",
                link_gen=5,
                link_width=16,
                link_bytes_per_s=LINK_BYTES_PER_S,
                sm_source="sim",
                pcie_source="sim",
            )
            for g in self._gpus
        ]

    def close(self) -> None:
        pass

    def read(self, t_mono_ns: int, t_wall_s: float, lateness_ns: int = 0) -> Tick:
        with self._lock:
            return self._read(t_mono_ns, t_wall_s, lateness_ns)

    def _read(self, t_mono_ns: int, t_wall_s: float, lateness_ns: int) -> Tick:
        if self._t0_mono_ns is None:
            self._start(t_mono_ns, t_wall_s)
        t = (t_mono_ns - (self._t0_mono_ns or 0)) / 1e9
        self._advance(t)
        if t < self._nvml_blind_until:
            # NVML blocked: no reading. The next one covers the time since the last, as a real
            # GPM reading after the stall does (its interval spans the hole).
            return Tick()
        prev = self._last_t
        self._last_t = t
        if prev is None or t <= prev:
            return Tick()  # the first reading only opens the first interval, like GPM
        return Tick(gpu=[self._sample(g, prev, t, t_mono_ns, t_wall_s, lateness_ns)
                         for g in self._gpus])

    def read_host(self, t_mono_ns: int, t_wall_s: float) -> HostSample:
        with self._lock:
            return self._read_host(t_mono_ns, t_wall_s)

    def _read_host(self, t_mono_ns: int, t_wall_s: float) -> HostSample:
        if self._t0_mono_ns is None:
            self._start(t_mono_ns, t_wall_s)
        t = (t_mono_ns - (self._t0_mono_ns or 0)) / 1e9
        self._advance(t)
        prev, self._last_host_t = self._last_host_t, t
        p = self.pressure(t)
        noise = self._rng.gauss(0, 1)
        dt = None if prev is None else t - prev
        share = min(1.0, max(0.0, 0.01 + 0.35 * p + 0.02 * noise))
        if dt:
            # avg10 is an exponential average over 10 s, updated continuously.
            alpha = min(1.0, dt / 10.0)
            self._psi_some_avg10 += alpha * (share * 100 - self._psi_some_avg10)
        used_pct, available = self._memory(p, noise)
        return HostSample(
            t_mono_ns=t_mono_ns,
            t_wall_s=t_wall_s,
            interval_ns=None if dt is None else int(dt * 1e9),
            mem_used_pct=used_pct,
            mem_available_bytes=available,
            swap_used_bytes=0,
            cpu_busy_pct=round(min(100.0, 20 + 70 * p + noise), 1),
            psi_mem_some_avg10=round(self._psi_some_avg10, 2),
            psi_mem_full_avg10=round(self._psi_some_avg10 * 0.3, 2),
            psi_mem_some_share=None if dt is None else round(share, 4),
            psi_mem_full_share=None if dt is None else round(share * 0.3, 4),
            major_faults_per_s=None if dt is None else round(max(0.0, 2 + 25 * p + 2 * noise), 1),
            mem_bandwidth_bytes_per_s=round((25 + 150 * p) * 1e9),
            # The simulated box is short of memory bandwidth, not of cores: its synthesis
            # threads fit the CPUs, so runnable tasks rarely wait for one (under the hint's 20 %).
            psi_cpu_some_share=None if dt is None else round(
                min(1.0, max(0.0, 0.02 + 0.08 * p + 0.01 * noise)), 4),
            psi_cpu_some_avg10=round(100 * (0.02 + 0.08 * p), 2),
        )

    def _memory(self, p: float, noise: float) -> tuple[float, int]:
        """The box's RAM in use (%) and available (bytes) at host pressure `p`, one figure
        each way of `SIM_MEM_TOTAL_BYTES` (MemTotal = available / (1 - used), as a real
        host's readings give it). Short of RAM where any GPU's scenario is (`ram_short`: one
        box, one pool): `SHORT_AVAILABLE_BYTES`, unrounded so the total reads back whole;
        else 38-88 % in use as synthesis loads the host."""
        total = SIM_MEM_TOTAL_BYTES
        if any(g.scenario.ram_short for g in self._gpus):
            low, high = SHORT_AVAILABLE_RANGE
            available = int(min(high, max(low, SHORT_AVAILABLE_BYTES + SHORT_NOISE_BYTES * noise)))
            return 100.0 * (total - available) / total, available
        used = round(min(99.0, 38 + 50 * p + 0.5 * noise), 2)
        return used, int((1 - used / 100) * total)

    # --- model -------------------------------------------------------------------------------

    def threads(self, t: float, g: _Gpu | None = None) -> int:
        """Synthesis threads feeding GPU `g` (default GPU 0) at `t`."""
        sc = (g or self._gpus[0]).scenario
        if t <= sc.ramp_start_s or sc.ramp_end_s <= sc.ramp_start_s:
            return sc.threads_start if t <= sc.ramp_start_s else sc.threads_end
        if t >= sc.ramp_end_s:
            return sc.threads_end
        frac = (t - sc.ramp_start_s) / (sc.ramp_end_s - sc.ramp_start_s)
        return round(sc.threads_start + frac * (sc.threads_end - sc.threads_start))

    def pressure(self, t: float) -> float:
        """Host memory-bandwidth pressure 0..1: saturation sets in past ~4 busy threads (of the
        GPU with the most: one host serves them all)."""
        return max(min(1.0, max(0.0, (self.threads(t, g) - 3) / 15)) for g in self._gpus)

    def h2d_rate(self, g: _Gpu, t: float, pinned: bool | None = None) -> float:
        """H2D rate of a copy starting at `t`: pinned at the link's rate, pageable through the
        bounce buffer (slower as host memory pressure rises); `pinned` None: the scenario's."""
        sc = g.scenario
        if sc.pinned if pinned is None else pinned:
            return sc.pinned_rate * g.rng.uniform(0.97, 1.0)
        frac = 1.0 - (1.0 - sc.pageable_floor_frac) * self.pressure(t)
        return sc.pageable_rate * frac * g.rng.uniform(0.9, 1.1)

    def synth_worker_count(self) -> int:
        """The synthesis workers the simulated cuzk runs (its log line says it), one pool for
        every GPU as cuzk's: its formula (engine.rs, `gapwatch.cuzk.pipeline.synth_worker_count`)
        with `max_parallel_synthesis` the most threads the GPUs' scenarios ever use together,
        so never fewer than 2 nor more than the budget holds (36 of 512 GiB: five `pageable`
        GPUs ask for 100). Worked out once: the scenarios are fixed."""
        return self._synth_workers

    def _start(self, t_mono_ns: int, t_wall_s: float) -> None:
        self._t0_mono_ns = t_mono_ns
        self._t0_wall_s = t_wall_s
        self.startup_lines()
        self.status_server_starts(again=False)
        if not self._gpus[0].scenario.pipeline:
            self.monolithic_script = MonolithicScript(self)
            self.monolithic_script.start()
            return
        if self._gpus[0].scenario.request_after_proof_s is not None:
            self.batch_script = BatchWaitScript(self)
            self.batch_script.start()
        for g in self._gpus:
            self._at(0.05, partial(self._fill_synthesis, g))
        self._at(0.5, Kept(self._tick_threads))
        cycle = next((CYCLES[g.scenario.name] for g in self._gpus
                      if g.scenario.name in CYCLES), None)
        if cycle is not None:
            self.post_script = PostScript(self, cycle)
            self.post_script.schedule()
            self.post_script.load_porep_srs()  # its first PoRep's SRS, before any synthesis

    def startup_lines(self) -> None:
        """The startup lines cuzk writes, in its order: cuzk-daemon's main (main.rs:63-64, 111,
        with `[gpus] gpu_threads` 0: no CUZK_GPU_THREADS line, main.rs:85-91), `Engine::new`
        (engine.rs:1198, 1219), then `start()` (1244, 1328, 1339, then the pipeline's or the
        monolithic workers' lines). Its status server's line comes after, once the engine has
        started (`status_server_starts`, main.rs:118-133)."""
        n, t = len(self._gpus), self._now
        pipeline = self._gpus[0].scenario.pipeline
        self._trace(t, "cuzk-daemon starting", target=DAEMON_TARGET)  # main.rs:63
        self._trace(t, f"configuration loaded listen={SIM_GRPC_LISTEN}",
                    target=DAEMON_TARGET)  # main.rs:64
        self._trace(t, f"rayon global thread pool configured rayon_threads={SIM_HOST_CPUS}",
                    target=DAEMON_TARGET)  # main.rs:93-115, [synthesis] threads 0: every CPU
        self._trace(t, f"memory budget initialized total_budget_gib={SIM_BUDGET_BYTES // GIB}")
        self._trace(t, "CUDA pinned memory pool initialized")
        self._trace(t, f"starting cuzk engine pipeline_enabled={'true' if pipeline else 'false'}")
        self._trace(t, "evictor callback wired")  # engine.rs:1328, before the GPUs are read
        per_device = 2 if pipeline else 1  # engine.rs:1333-1337
        self._trace(t, f"initializing GPU workers num_gpus={n} "
                       f"gpu_workers_per_device={per_device} total_workers={per_device * n} "
                       f"gpus=[{', '.join(str(i) for i in range(n))}]")
        if not pipeline:
            self._monolithic_startup_lines()
            return
        in_budget = SIM_BUDGET_BYTES // POREP_PARTITION_FULL_BYTES
        self._trace(t, f"starting pipeline: synthesis task + GPU workers (budget-gated) "
                         f"configured_lookahead=1 max_partitions_in_budget={in_budget} "
                         f"effective_lookahead={max(1, min(in_budget, 32))} "
                         f"synth_worker_count={self.synth_worker_count()} num_gpus={2 * n}")
        for g in self._gpus:
            for k, w in enumerate(g.workers):
                self._trace(t, f"pipeline GPU worker started worker_id={w.wid} gpu={g.index} "
                               f"sub_id={k}")
        batch = max(g.scenario.max_batch_size for g in self._gpus)
        wait_ms = self._gpus[0].scenario.max_batch_wait_ms
        concurrency = max(g.scenario.synthesis_concurrency for g in self._gpus)
        self._trace(t, f"synthesis dispatcher started (budget-gated) max_batch_size={batch} "
                       f"max_batch_wait_ms={wait_ms} slot_size=0 "
                       f"synthesis_concurrency={concurrency}")
        # A (re)start has no capacity hint: its first wave is unpinned (pipeline.rs:176-230).
        self.hint_cached = False

    def _monolithic_startup_lines(self) -> None:
        """engine.rs start() with the pipeline off, after its workers are counted: each of its
        one worker per GPU started (3378), then `cuzk engine started` (3510-3514)."""
        n, t = len(self._gpus), self._now
        for g in self._gpus:
            self._trace(t, f"monolithic GPU worker started worker_id={g.workers[0].wid} "
                           f"gpu={g.index}")
        self._trace(t, f"cuzk engine started num_workers={n} pipeline=false")

    def add_copy(self, g: _Gpu, start: float, end: float, rate: float) -> None:
        """A host-to-device copy on `g` over [start, end] at `rate` bytes/s: PCIe RX then."""
        g.copies.append(_Span(start, end, rate))

    def nvml_blind_for(self, seconds: float) -> None:
        """From now on, for `seconds`, NVML answers no GPU reading (the sampler sees a hole)."""
        self._nvml_blind_until = self._now + seconds

    def process_gone(self) -> None:
        """The process died (a kill): its status server with it, nothing answers `/status`."""
        self.process_alive = False
        if self.status_listener is not None:
            self.status_listener.stop_listening()

    def status_server_starts(self, again: bool = True) -> None:
        """A run's status server, after the engine's start (cuzk-daemon main.rs:118-137): where
        cuzk serves `/status` at an address (`[daemon] status_listen` set, main.rs:127: the
        simulator's `status_listen`, given where a server serves it) it binds it and says
        `status HTTP server listening addr=` (main.rs:133), every run alike; where it cannot,
        cuzk's own ERROR line (main.rs:137) and no `/status` for that run, as cuzk runs on
        without it. `again`: a restart's server binds again (the first run's is bound by whoever
        serves it, `gapwatch.engine.sim_wiring`)."""
        self.process_alive = True
        if again and self.status_listener is not None:
            failed = self.status_listener.listen_again()
            if failed is not None:
                self._trace(self._now, f"failed to bind status HTTP server "
                                       f"addr={self.status_listen} error={failed}",
                            target=DAEMON_TARGET, level="ERROR")
                return
        if self.status_listen:
            self._trace(self._now, f"status HTTP server listening addr={self.status_listen}",
                        target=DAEMON_TARGET)

    def add_compute(self, g: _Gpu, start: float, end: float) -> None:
        """Kernels on `g` over [start, end] (simulated seconds): SMs busy then."""
        g.computes.append(_Span(start, end))

    def _tick_threads(self) -> None:
        # Synthesis threads ramp up over time: give new threads work even if nothing finished.
        for g in self._gpus:
            self._fill_synthesis(g)
        self._at(self._now + 0.5, Kept(self._tick_threads))

    def _at(self, t: float, fn: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._events, (t, self._seq, fn))

    def _advance(self, t: float) -> None:
        while self._events and self._events[0][0] <= t:
            when, _, fn = heapq.heappop(self._events)
            self._now = when
            fn()
        self._now = t

    def _fill_synthesis(self, g: _Gpu) -> None:
        # Start synthesis tasks while threads are free and the look-ahead (queue) is not full,
        # and while one of cuzk's synthesis workers (shared by every GPU) is free: a GPU held
        # back by the others' syntheses gets its turn at the next tick (`_tick_threads`).
        if self.down or not g.scenario.pipeline:
            return
        threads = self.threads(self._now, g)
        workers = self._synth_workers
        while g.synth_active < threads and len(g.queue) + g.synth_active < \
                g.scenario.queue_depth + threads and \
                sum(o.synth_active for o in self._gpus) < workers and \
                (g.parts_released is None or g.next_partition < g.parts_released):
            part = g.next_partition
            g.next_partition += 1
            if g.scenario.max_batch_size > 1 and g.parts_released is None:
                # Fed, every batch fills; gated (`batch-wait`), each request goes alone.
                self._start_batch(g, part)
                continue
            job = f"porep-{self._job + g.index}-{part // 10}"
            entry = self._jobs.get(job)
            if entry is not None and entry.failed:
                # engine.rs: the dispatcher drops a failed job's remaining partitions (they
                # stay `pending` in /status: nothing updates them again).
                self._trace(self._now, f"skipping synthesis for failed job job_id={job} "
                                       f"partition={part % 10}")
                continue
            g.synth_active += 1
            self.synth_active_counter += 1
            rec = self._part(job, part)
            rec.state, rec.synth_start_s = "synthesizing", self._now
            dur = g.scenario.synth_s * g.rng.uniform(0.9, 1.15)
            self._timeline(self._now, "SYNTH_START", job, f"partition={part % 10}")
            pinned = self._checkout(g, job, part % 10)
            self._at(self._now + dur, partial(self._synth_done, g, job, part, dur, pinned))

    def _checkout(self, g: _Gpu, job: str, p: int) -> bool:
        """The pinned pool as `synthesize_with_hint` uses it (pipeline.rs:250-358), with its
        lines: no hint yet (the first wave) -> unpinned; else a checkout, which pins a new
        buffer with cudaHostAlloc; in a pageable scenario that fails (pinned_pool.rs:57-69,
        202-205) and the partition falls back to unpinned (pipeline.rs:301-308)."""
        span = f'synthesize_partition{{job_id="{job}" partition={p}}}: '
        pipe, pool = "cuzk_core::pipeline", "cuzk_core::pinned_pool"
        if not self.hint_cached and g.scenario.first_wave:
            self.first_wave += 1
            self._trace(self._now, "no capacity hint cached — first synthesis will grow "
                                   "organically circuit_id=porep-32g", span=span, target=pipe)
            return False
        self._trace(self._now, "using cached capacity hint for synthesis circuit_id=porep-32g",
                    span=span, target=pipe)
        self._trace(self._now, f"attempting pinned memory synthesis circuit_id=porep-32g "
                               f"num_constraints={_NUM_CONSTRAINTS} scalar_size=32 "
                               f"buf_gib={_BUF_GIB}", span=span, target=pipe)
        if g.scenario.pinned:
            self._trace(self._now, "pinned prover created for partition synthesis", span=span,
                        target=pipe)
            return True
        self._trace(self._now, f"cudaHostAlloc failed size_gib={_BUF_GIB} cuda_err=2",
                    span=span, target=pool, level=" WARN")
        self._trace(self._now, f"pinned pool: cudaHostAlloc failed size_gib={_BUF_GIB}",
                    span=span, target=pool, level=" WARN")
        self._trace(self._now, f"pinned pool checkout FAILED — falling back to unpinned "
                               f"num_constraints={_NUM_CONSTRAINTS} pool_free=0 "
                               "pool_total_gib=0", span=span, target=pipe, level=" WARN")
        return False

    def _start_batch(self, g: _Gpu, unit: int) -> None:
        """A batch of `max_batch_size` PoRep requests, one monolithic job (engine.rs:2053,
        2644-2680): its TIMELINE lines carry `kind=`/`monolithic`, no partition; never in
        /status; a/b/c unpinned (pipeline.rs:1632 gets no pinned pool).

        Its lines as cuzk writes them: Curio sends the batch's requests as a synthesis permit
        frees (the simulator's fed cuzk), each `job enqueued` (scheduler.rs:67-73, the queue
        empty: position 0) and at once `job dequeued for proving` (scheduler.rs:85-89) by the
        dispatcher waiting on the scheduler (engine.rs:2027, 2029-2041), which adds it to the
        batch collector (2053-2055); the last fills it (batch_collector.rs:122-129), sent in
        span `synth_batch_full{batch_size proof_kind}` (engine.rs:2055-2058): `processing
        batch` (2150-2155) and, after its SYNTH_END, its `synthesis complete, sending to GPU`
        (2746-2752) inside it. The batch's job is its first request's (2664:
        `reqs[0].job_id`)."""
        size = g.scenario.max_batch_size
        requests = [f"porep-{self._job + g.index}-{unit * size + k}" for k in range(size)]
        for job in requests:
            enqueued(self, job, "porep-c2")
            dequeued(self, job, "porep-c2")
        job = requests[0]
        g.synth_active += 1
        self._trace(self._now, f"processing batch batch_size={size} proof_kind=porep-c2 "
                               "slot_size=0", span=_batch_full_span(size))
        self._timeline(self._now, "SYNTH_START", job, "kind=porep-c2")
        dur = g.scenario.synth_s * g.rng.uniform(0.9, 1.15)
        self._at(self._now + dur, partial(self._batch_synth_done, g, job, unit, dur))

    def _batch_synth_done(self, g: _Gpu, job: str, unit: int, dur: float) -> None:
        g.synth_active -= 1
        ms = int(dur * 1000)
        size = g.scenario.max_batch_size
        self._timeline(self._now, "SYNTH_END", job, f"synth_ms={ms}")  # engine.rs:2745
        self._trace(self._now, f"synthesis complete, sending to GPU synth_ms={ms} "
                               f"circuit_id=porep-32g batch_size={size} sectors={size}",
                    span=_batch_full_span(size))
        self._timeline(self._now, "GPU_QUEUE", job, "monolithic")
        g.queue.append((job, -1 - unit, ms, False))
        self._dispatch(g)
        self._fill_synthesis(g)

    def _part(self, job: str, part: int) -> _Part:
        """The pipeline record of a partition; its job (all 10 pending) is created on first use."""
        entry = self._jobs.get(job)
        if entry is None:
            entry = self._jobs[job] = _Job(self._now, [_Part() for _ in range(_PARTS_PER_JOB)])
        return entry.parts[part % _PARTS_PER_JOB]

    def _synth_done(self, g: _Gpu, job: str, part: int, dur: float, pinned: bool) -> None:
        g.synth_active -= 1
        rec = self._part(job, part)
        p = part % 10
        self.syntheses += 1
        if self.synth_fail_every and self.syntheses % self.synth_fail_every == 0:
            # status.rs `partition_failed`: the partition is failed, `active` keeps its +1,
            # and the job is never marked completed (it stays listed).
            self.syntheses_failed += 1
            rec.state = "failed"
            self._jobs[job].failed = True
            self._trace(self._now, f"partition synthesis failed error=simulated synthesis error "
                                   f"job_id={job} partition={p}", level="ERROR")
            self._fill_synthesis(g)
            return
        self.synth_active_counter -= 1
        rec.state, rec.synth_end_s = "synth_done", self._now
        ms = int(dur * 1000)
        span = f'synthesize_partition{{job_id="{job}" partition={p}}}: '
        if not self.hint_cached:
            self.hint_cached = True
            self._trace(self._now, f"cached synthesis capacity hint circuit_id=porep-32g "
                                   f"num_constraints={_NUM_CONSTRAINTS} num_aux=1291730 "
                                   "num_inputs=329", span=span, target="cuzk_core::pipeline")
        self._trace(self._now, f"partition synthesis complete partition={p} synth_ms={ms} "
                               f"is_pinned={'true' if pinned else 'false'}",
                    span=span, target="cuzk_core::pipeline")
        self._timeline(self._now, "SYNTH_END", job, f"partition={p},synth_ms={ms}")
        self._timeline(self._now, "GPU_QUEUE", job, f"partition={p}")
        g.queue.append((job, part, ms, pinned))
        self._dispatch(g)
        self._fill_synthesis(g)

    def _dispatch(self, g: _Gpu) -> None:
        if self.post_script is not None:
            self.post_script.dispatch(g)  # PoSt first: cuzk's GPU queue key (0,0)
        for w in g.workers:
            if not w.busy and g.queue:
                job, part, _, pinned = g.queue.pop(0)
                w.busy = True
                self._begin_copy(g, w, job, part, pinned)

    def _begin_copy(self, g: _Gpu, w: _Worker, job: str, part: int, pinned: bool) -> None:
        where = f"worker={w.wid}"
        if part >= 0:  # a partition (a batch, part < 0, is monolithic: not in /status)
            p = part % 10
            rec = self._part(job, part)
            rec.state, rec.gpu_start_s = "gpu", self._now
            w.job, w.partition, w.since_s = job, p, self._now
            where += f",partition={p}"
        self._timeline(self._now, "GPU_PICKUP", job, where)
        self._timeline(self._now, "GPU_START", job, where)
        rate = self.h2d_rate(g, self._now, pinned)
        dur = g.scenario.abc_bytes / rate
        start = self._now
        g.copies.append(_Span(start, start + dur, rate))
        self._at(start + dur, lambda: self._copy_done(g, w, job, part, pinned, start))

    def _copy_done(self, g: _Gpu, w: _Worker, job: str, part: int, pinned: bool,
                   copy_start: float) -> None:
        lock_at = max(self._now, g.lock_free_at)
        compute = g.scenario.compute_s * g.rng.uniform(0.97, 1.04)
        g.lock_free_at = lock_at + compute
        if self.finished_copies is not None:
            self.finished_copies.append(SimCopy(
                g.index, w.wid, self._t0_wall_s + copy_start, self._t0_wall_s + self._now,
                int(g.scenario.abc_bytes), pinned))
        h2d_ms = (self._now - copy_start) * 1000
        wait_ms = (lock_at - self._now) * 1000
        g.computes.append(_Span(lock_at, lock_at + compute))

        def locked() -> None:
            self._raw(f"CUZK_TIMING: pre_lock_cpu_ms={int(h2d_ms)} mutex_wait_ms={int(wait_ms)}")

        def done() -> None:
            if self.post_script is not None and self.post_script.take_panic(g, w, job, part):
                return
            cms = int(compute * 1000)
            self._raw(f"CUZK_NTT_H: d_b_alloc=0ms ntt_kernels={int(h2d_ms)}ms coset_intt_sync=40ms "
                      f"msm_init=1ms msm_invoke={int(cms * 0.5)}ms msm_dtor=1ms "
                      f"total={int(h2d_ms) + 42 + int(cms * 0.5)}ms")
            self._raw(f"CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms={int(h2d_ms) + int(cms * 0.55)}")
            self._raw(f"CUZK_TIMING: gpu_tid=0 tail_msm_ms=20 gpu_total_ms={cms}")
            self._raw(f"CUZK_TIMING: mutex_held_ms={cms} "
                      f"total_start_fn_ms={int(h2d_ms + wait_ms) + cms}")
            total = int((self._now - copy_start) * 1000)
            some = f"Some({part % 10})" if part >= 0 else "None"
            self._trace(self._now, f"GPU_TIMING spawn_blocking prove_start worker_id={w.wid} "
                                   f"partition={some} spawn_to_enter_ms=0 "
                                   f"prove_start_ms={total}")
            where = f"worker={w.wid}" + (f",partition={part % 10}" if part >= 0 else "")
            self._timeline(self._now, "GPU_END", job, f"{where},gpu_ms={total}")
            if self._keep_truth:
                self.truth.append(TruthInterval(
                    g.index, w.wid, part, self._t0_wall_s + lock_at,
                    self._t0_wall_s + lock_at + compute, round(h2d_ms, 1), pinned))
            w.busy = False
            w.job = w.partition = None
            if part >= 0:
                rec = self._part(job, part)
                rec.state, rec.gpu_end_s = "done", self._now
                entry = self._jobs[job]
                if all(x.state == "done" for x in entry.parts):
                    entry.finished_s = self._now
                    self.jobs_completed += 1
                    if self.batch_script is not None:
                        self.batch_script.proof_done(job, entry)
            else:
                self.jobs_completed += 1
            self._dispatch(g)

        self._at(lock_at, locked)
        self._at(lock_at + compute, done)

    # --- the pipeline's own status (cuzk GET /status) ----------------------------------------

    def status_document(self) -> dict[str, object]:
        """The pipeline as cuzk's `/status` JSON (cuzk-status.md), as of the last reading.
        Raises NotServing while the process is dead (killed, not yet started again)."""
        with self._lock:
            if not self.process_alive:
                raise NotServing("the simulated cuzk is not running")
            return self._status_document()

    def status_bytes(self) -> bytes:
        return json.dumps(self.status_document()).encode()

    def _status_document(self) -> dict[str, object]:
        now = self._now
        for job in [j for j, e in self._jobs.items()
                    if e.finished_s is not None and now - e.finished_s > _JOB_KEEP_S]:
            del self._jobs[job]

        def ms(a: float | None, b: float | None) -> int | None:
            # Running phases count up to now, as cuzk's do.
            return None if a is None else int(((b if b is not None else now) - a) * 1000)

        pipelines = [{
            "job_id": job, "proof_kind": "porep-c2",
            "started_secs_ago": round(now - e.started_s, 3),
            "total_partitions": len(e.parts),
            "partitions_done": sum(1 for p in e.parts if p.state == "done"),
            "partitions": [{"index": i, "state": p.state,
                            "synth_ms": ms(p.synth_start_s, p.synth_end_s),
                            "gpu_ms": ms(p.gpu_start_s, p.gpu_end_s)}
                           for i, p in enumerate(e.parts)],
        } for job, e in self._jobs.items()]
        workers = [{
            "worker_id": w.wid, "gpu_ordinal": g.index,
            # A monolithic batch is never registered (engine.rs): its worker reads idle.
            "state": "proving" if w.busy and w.job is not None else "idle",
            "current_job": w.job, "current_partition": w.partition,
            "busy_secs": round(now - w.since_s, 3) if w.busy and w.job is not None else None,
        } for g in self._gpus for w in g.workers]
        in_flight = sum(1 for e in self._jobs.values() for p in e.parts
                        if p.state in ("synthesizing", "synth_done", "gpu"))
        total = SIM_BUDGET_BYTES
        # cuzk reserves 14 GiB per PoRep partition in flight, and the SRS permanently; with the
        # pipeline off its monolithic path loads parameters through filecoin-proofs, outside
        # its SRS manager and budget (engine.rs:3422-3440).
        pipeline = self._gpus[0].scenario.pipeline
        srs_bytes = SIM_SRS_BYTES if pipeline else 0
        used = min(total, in_flight * POREP_PARTITION_FULL_BYTES + srs_bytes)
        if self.post_script is not None and now < self.post_script.budget_short_until_s:
            used = total  # its script's full budget, which evicts a PoSt SRS (sim_post)
        return {
            "uptime_secs": round(now - self._epoch, 3),
            "memory": {"total_bytes": total, "used_bytes": used,
                       "available_bytes": total - used},
            "synthesis": {"max_concurrent": max_concurrent_of(total),
                          "active": self.synth_active_counter},
            "pipelines": pipelines,
            "gpu_workers": workers,
            "allocations": {"srs": [{"circuit_id": "porep-32g", "bytes": SIM_SRS_BYTES,
                                     "last_used_secs_ago": 0.0, "evictable": False}]
                            if pipeline else [],
                            "pce": []},
            "counters": {"total_completed": self.jobs_completed, "total_failed": 0,
                         "completed_by_kind": {"porep-c2": self.jobs_completed},
                         "failed_by_kind": {}, "queue_depth": 0},
            "buffers": {"synth_in_flight": sum(g.synth_active for g in self._gpus),
                        "provers_in_flight": sum(1 for g in self._gpus for w in g.workers
                                                 if w.busy),
                        "aux_in_flight": 0, "shells_in_flight": 0, "pending_handles": 0},
        }

    # --- sampling ----------------------------------------------------------------------------

    def _sample(self, g: _Gpu, a: float, b: float, t_mono_ns: int, t_wall_s: float,
                lateness_ns: int) -> GpuSample:
        width = b - a
        busy = 0.0
        for s in g.computes:
            busy += max(0.0, min(b, s.end) - max(a, s.start))
        moved = 0.0
        union = busy
        # utilization.gpu counts a copy while its DMA engine runs: the whole copy at the pinned
        # rate, a pageable one's share about its own rate over the pinned one, and a little (it
        # is staged through a bounce buffer, the engine idle while the host fills it). Measured
        # on an H200 with SMs idle: pinned copies 99.3 %, pageable at 7.6 GB/s 15.7 %, at ~3
        # GB/s 8-10 % (docs/sampling.md): rate / pinned + 3 points gives 99-100, 16.7 and 8.4.
        # The union of kernels and copies is approximated by their largest.
        per_pinned = 1.0 / g.scenario.pinned_rate if g.scenario.pinned_rate > 0 else 0.0
        for s in g.copies:
            ov = max(0.0, min(b, s.end) - max(a, s.start))
            moved += ov * s.rate
            union = max(union, ov * min(1.0, s.rate * per_pinned + COPY_UTIL_FLOOR))
        # Forget spans that can no longer overlap a future window.
        g.computes = [s for s in g.computes if s.end > a]
        g.copies = [s for s in g.copies if s.end > a]
        sm = min(100.0, 100.0 * busy / width * g.rng.uniform(0.93, 0.98))
        rx = min(LINK_BYTES_PER_S, moved / width) + IDLE_PCIE_BYTES_PER_S * g.rng.uniform(0.5, 1.8)
        tx = IDLE_PCIE_BYTES_PER_S * g.rng.uniform(0.5, 1.8) + 0.01 * moved / width
        util = min(100.0, 100.0 * max(busy, union) / width)
        return GpuSample(
            gpu=g.index,
            t_mono_ns=t_mono_ns,
            t_wall_s=t_wall_s,
            interval_ns=int(round(width * 1e9)),
            sm_active_pct=round(sm, 2),
            gpu_util_pct=round(util),
            pcie_rx_bytes_per_s=round(rx),
            pcie_tx_bytes_per_s=round(tx),
            sm_source="sim",
            pcie_source="sim",
            lateness_ns=lateness_ns,
        )

    # --- log lines ---------------------------------------------------------------------------

    def _raw(self, text: str, stream: str = "stderr") -> None:
        if self.on_line is not None:
            self.on_line(stream, text)

    def _timeline(self, t: float, event: str, job: str, detail: str) -> None:
        self._raw(f"TIMELINE,{int((t - self._epoch) * 1000)},{event},{job},{detail}")

    def _trace(self, t: float, message: str, span: str = "", target: str = "cuzk_core::engine",
               level: str = " INFO") -> None:
        ts = datetime.fromtimestamp(self._t0_wall_s + t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self._raw(f"{ts} {level} {span}{target}: {message}", stream="stdout")


def truth_gaps(
    truth: list[TruthInterval], gpu: int, min_gap_s: float = 0.3
) -> list[tuple[float, float]]:
    """Holes of at least `min_gap_s` between the merged compute intervals of one GPU."""
    spans = sorted((t.start_s, t.end_s) for t in truth if t.gpu == gpu)
    gaps: list[tuple[float, float]] = []
    end: float | None = None
    for s, e in spans:
        if end is not None and s - end >= min_gap_s:
            gaps.append((end, s))
        end = e if end is None else max(end, e)
    return gaps



class SimStatusFeed:
    """A session sink that, every `period_s` of data time, hands `emit` a snapshot of the
    simulator's status, parsed from its JSON exactly as a polled one is. For speed 0 (virtual
    time), where no poller can keep pace with the data: the runtime and `evaluation.simulate`
    attach it; at speed > 0 the runtime serves the same JSON over HTTP instead."""

    def __init__(self, sim: SimProver, period_s: float,
                 emit: Callable[[ProverStatus], None]) -> None:
        self.sim = sim
        self.period_ns = int(period_s * 1e9)
        self.emit = emit
        self._next_ns: int | None = None

    def on_header(self, header: object) -> None:
        pass

    def on_record(self, record: object) -> None:
        if not isinstance(record, GpuSample):
            return
        t = record.t_mono_ns
        if self._next_ns is not None and t < self._next_ns:
            return
        self._next_ns = t + self.period_ns
        from gapwatch.cuzk.status import parse_status

        try:
            body = self.sim.status_bytes()
        except NotServing:
            return  # a dead process answers no poll: no snapshot, as a refused poll gives none
        self.emit(parse_status(body, "sim", t, record.t_wall_s, 0.0))

    def close(self) -> None:
        pass


class SimCopyFeed:
    """A session sink that hands `emit` the simulator's copies as the copy trace would see
    them (`CopyRecord`s, the copies ended since the last GPU sample in one list, as a flush
    of the trace delivers them), each partition's a/b/c copy cut into `per_partition` equal
    copies one after the other on its worker's stream (cuzk makes tens per partition:
    ../shared/reference/copy-attribution.md), delivered at the first GPU sample after it ended
    (on the sampler's thread, which advances the model). The runtime attaches it with `[sim]
    copy_trace` (the demo's default), `evaluation.simulate` with `copies_per_partition`
    (benchmarks and tests of recordings with a copy trace)."""

    #: The simulated prover's pid, and its streams' base (CUDA stream ids are small integers).
    PID = 4242
    STREAM_BASE = 13

    def __init__(self, sim: SimProver, per_partition: int,
                 emit: Callable[[list[CopyRecord]], None]) -> None:
        if per_partition < 1:
            raise ValueError(f"per_partition must be >= 1, got {per_partition}")
        self.sim = sim
        self.per_partition = per_partition
        self.emit = emit
        self._correlation = 0
        sim.finished_copies = []

    def on_header(self, header: object) -> None:
        pass

    def on_record(self, record: object) -> None:
        done = self.sim.finished_copies
        if not done or not isinstance(record, GpuSample):
            return
        self.sim.finished_copies = []
        # Together, as a flush of the trace delivers them (`Session.on_copies`).
        out: list[CopyRecord] = []
        for c in done:
            self._cut(c, out)
        self.emit(out)

    def _cut(self, c: SimCopy, out: list[CopyRecord]) -> None:
        n = self.per_partition
        step_s = (c.end_wall_s - c.start_wall_s) / n
        kind: MemoryKind = "pinned" if c.pinned else "pageable"
        for i in range(n):
            self._correlation += 1
            out.append(CopyRecord(
                start_wall_s=c.start_wall_s + i * step_s,
                end_wall_s=c.end_wall_s if i == n - 1 else c.start_wall_s + (i + 1) * step_s,
                bytes=c.bytes // n, direction="h2d", src_kind=kind, dst_kind="device",
                gpu=c.gpu, cuda_device=c.gpu, stream_id=self.STREAM_BASE + c.worker,
                context_id=1 + c.gpu, correlation_id=self._correlation, pid=self.PID))

    def close(self) -> None:
        pass


class SimHostSource:
    """The simulated prover's host side, as a `HostSource` for the sampler."""

    def __init__(self, sim: SimProver) -> None:
        self.sim = sim

    def read(self, t_mono_ns: int, t_wall_s: float) -> HostSample:
        return self.sim.read_host(t_mono_ns, t_wall_s)

    def close(self) -> None:
        pass
