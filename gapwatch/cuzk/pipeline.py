"""cuzk's pipeline as upstream builds it: its constants and formulas, and what its log tells.

Who calls it: `gapwatch.cuzk.causes` (the synthesis capacity behind "every worker busy"),
`gapwatch.core.evidence` (feeds `PipelineFacts` every log event, asks it what the log says about
a gap), `gapwatch.cuzk.advice` (the settings), the store (the dashboard's pipeline line and
`/metrics` read a `PipelineView`), the simulator and the load generator (they serve `/status`
with `max_concurrent_of`). Pure: no I/O, no clocks; every history is bounded.

Every fact here is read from curio's source (main e0294b0f, 2026-08-20; cuzk's code unchanged
since 2026-05-05), file by file (docs/cuzk-status.md lists them):

- `memory.rs`: a partition's budget (PoRep 14 GiB, SnapDeals 9 GiB, WindowPoSt 14 GiB,
  WinningPoSt 0.5 GiB), a batch's (PoRep 136 GiB); the budget wait (`waiting for budget
  (acquire blocked)`, DEBUG, at every wake-up); a request over the whole total (its WARN) is
  never granted, and the total is fixed for the process's life, so a budget figure of another
  total is another process (`PipelineFacts._budget_total`).
- `engine.rs`: `synth_worker_count = max(2, min(total_bytes / 14 GiB, max_parallel_synthesis))`
  (0 = 18), logged once in `starting pipeline: synthesis task + GPU workers (budget-gated)`;
  one dispatcher acquires each partition's budget *before* a synthesis worker takes it, so a
  partition waiting on the budget is still `pending`, and a partition's request over the total
  holds every partition whatever `synthesis_concurrency` (which spawns batch tasks,
  `OverBudget.blocks`); the status tracker exists a few ms before
  the TIMELINE epoch; monolithic work (PoSt, `[pipeline] enabled = false`) is never registered in
  `/status`, only in TIMELINE (`SYNTH_START kind=...`, `GPU_QUEUE monolithic`, `GPU_PICKUP
  worker=W`, `GPU_END worker=W,gpu_ms=..`; a step that failed gets an ERROR line in place of its
  SYNTH_END or GPU_END, naming the job in its GPU worker's span, else none: it ends the job it
  names or the one it can only be, read in the order written, `PipelineFacts._monolithic_failed`,
  `gapwatch.cuzk.unnamed_failure`; with
  `CUZK_DISABLE_SPLIT_PROVE=1` no GPU_START or GPU_END is written, 3078-3118, and the job ends
  at its completion line in its GPU worker's span, `PipelineFacts._sync_done`, else by its
  worker's next GPU_PICKUP, `PipelineFacts._worker_moved_on`) or, with the pipeline
  off, in its monolithic workers' lines (`processing job (monolithic)` .. `proof completed
  successfully (monolithic)` or `proof failed`, engine.rs:3394-3475: one call synthesises and
  proves, the GPU idle through the synthesis); the pacer's `pacer: status` line.
- `status.rs`: `synthesis.max_concurrent = total_bytes / SNAP_PARTITION_FULL_BYTES`: NOT a slot
  count; `synthesis.active` is not decremented when a synthesis fails.
- `pinned_pool.rs`: the pool grows on demand (`allocated new buffer ... total_buffers
  total_gib`), hands out free buffers (`checkout (reuse) ... free_remaining`), takes them back
  (`checkin`), is shrunk only by the evictor (`freed buffer (evictor)`); it is not in the memory
  budget, so a checkout fails only when `cudaHostAlloc` fails (`pipeline.rs`: `pinned pool
  checkout FAILED — falling back to unpinned ... pool_free pool_total_gib`); the evictor
  freeing idle buffers that cuzk then pins again, over and over, is churn, the failures'
  precursor (`gapwatch.cuzk.pool_churn`, said with the failures in `pool_evidence`).
- `pipeline.rs`: the capacity hint, one per circuit type and lost at every restart: the first
  wave of each type in each run is unpinned (`gapwatch.cuzk.first_wave`, the view's
  `first_waves`).
- `srs_manager.rs`: `loading SRS from disk` ... `SRS loaded successfully elapsed_ms`; `SRS
  evicted`; while it loads, its mutex is held and `/status` lists no SRS entry.

Restarts are `gapwatch.cuzk.restarts.RestartWatch`'s to find (its start lines, `/status` uptime
going back): `PipelineFacts` feeds one its log events and snapshots, and a gap that spans a
restart is the restart's (`log_view`'s first rule), whatever else ran in it, but for its new
run's wait for its first job, no work (`restarts.Spanned.cause` says which most of it was).

What was in flight at a gap's start decides between the GPU waiting on synthesis and an empty
pipeline: each daemon's partition syntheses in flight and ended (`SynthFlight`, engine.rs:1719,
1752), partitions queued for the GPU, batch collector holds and pacer (`DaemonRun`) and `job
enqueued` lines (scheduler.rs:67-73) are kept, its restart ending its own work in flight only,
a gap of a GPU asking only the daemons whose lines named it (`gapwatch.cuzk.daemons`: another
daemon feeds another GPU), and a gap whose start found nothing in flight and that ended on
the first synthesis of a request that came after is `empty_pipeline` (or `no_work`, the wait
for that request most of it: `PipelineFacts._empty_start_view`): cuzk's free synthesis workers
all start a new request's partitions at once (engine.rs:1475, 1678), so more of them cannot
shorten it; with the dispatch pacer on it paces them instead, one a tick (1480-1524), which the
evidence then says.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from gapwatch.core import fmt
from gapwatch.core.bounds import MAX_PROVERS, keep_latest
from gapwatch.core.evidence_types import CauseSaidBy, ProverGapFacts
from gapwatch.core.gpu_pids import GpuPids
from gapwatch.core.models import (
    FieldValue,
    HostSample,
    LogEvent,
    ProcessMemory,
    ProverEvent,
    ProverStatus,
)
from gapwatch.core.units import GIB
from gapwatch.core.values import count_field, is_bad_count, size_field
from gapwatch.cuzk.daemons import MAX_STREAMS, RestartsByDaemon
from gapwatch.cuzk.first_wave import FirstWave, WavesByDaemon
from gapwatch.cuzk.gpu_workers import HeldOver, WorkerHolds
from gapwatch.cuzk.log_lines import (
    ANCHOR_MESSAGE,
    DISPATCHER_MESSAGE,
    GPU_THREADS_MESSAGE,
    GPU_WORKER_FAILED_MESSAGES,
    GPU_WORKER_SPAN,
    JOB_ENQUEUED_MESSAGE,
    MONOLITHIC_COMPLETED_MESSAGE,
    MONOLITHIC_END_MESSAGES,
    MONOLITHIC_FAILED_MESSAGES,
    MONOLITHIC_JOB_MESSAGES,
    MONOLITHIC_PROCESSING_MESSAGE,
    MONOLITHIC_SPAN,
    NO_CAPACITY_HINT_MESSAGE,
    PARTITION_SYNTH_FAILED_MESSAGES,
    POOL_ALLOCATED_MESSAGE,
    PROCESSING_BATCH_MESSAGE,
    RAYON_THREADS_MESSAGE,
    SEQ_MESSAGES,
    SINGLE_SYNTH_FAILED_MESSAGES,
    SRS_EVICTED_MESSAGE,
    SRS_LOADED_MESSAGE,
    SRS_LOADING_MESSAGE,
    SYNC_DONE_MESSAGES,
    TIMEOUT_FLUSH_SPAN,
)
from gapwatch.cuzk.pin_host import HostAtFailures, HostMemory
from gapwatch.cuzk.pool_churn import (
    HOST_ALLOC_FAILED,
    POOL_CHECKOUT_FAILED,
    POOL_FREED,
    POOL_INITIALIZED,
    PoolChurn,
    PoolChurnView,
)
from gapwatch.cuzk.restarts import (
    NO_WORK_CAUSE,
    REPLACED_LEAD,
    RESTART_CAUSE,
    is_cuzk_process,
    replaced_evidence,
)
from gapwatch.cuzk.unnamed_failure import RunStream

#: memory.rs: per-partition budget (PoRep 32G, one circuit), `POREP_PARTITION_FULL_BYTES`.
POREP_PARTITION_FULL_BYTES = 14 * GIB
#: memory.rs: `SNAP_PARTITION_FULL_BYTES`, the smallest partition (status.rs divides by it).
SNAP_PARTITION_FULL_BYTES = 9 * GIB
#: memory.rs:41 `POREP_BATCH_FULL_BYTES`: what a PoRep batch of 2+ requests acquires.
POREP_BATCH_FULL_BYTES = 136 * GIB
#: memory.rs: the budget each proof kind's partition acquires (`proof_kind_full_bytes`), by the
#: `proof_kind` string `/status` and TIMELINE carry (types.rs `ProofKind` Display).
PARTITION_BYTES_BY_KIND: dict[str, int] = {
    "porep-c2": POREP_PARTITION_FULL_BYTES,
    "snap-update": SNAP_PARTITION_FULL_BYTES,
    "window-post": 14 * GIB,
    "winning-post": GIB // 2,
}
#: engine.rs:2644-2648: the budget a monolithic batch of 2+ requests acquires, by its proof
#: kind (TIMELINE `SYNTH_START kind=`): a PoRep batch `POREP_BATCH_FULL_BYTES`, any other its
#: kind's `proof_kind_full_bytes`, so a SnapDeals batch one SnapDeals partition's 9 GiB for the
#: whole batch, however many requests it holds.
BATCH_BYTES_BY_KIND: dict[str, int] = {
    "porep-c2": POREP_BATCH_FULL_BYTES,
    "snap-update": PARTITION_BYTES_BY_KIND["snap-update"],
}
#: The proof kinds cuzk's batch collector holds (PoRep, SnapDeals; PoSt is never batched): a
#: monolithic job of one of them (TIMELINE `SYNTH_START kind=`, no partition) is a batch of 2+
#: requests (`[scheduler] max_batch_size` > 1), as a gap's evidence quotes it; PoRep first.
#: The one home of the list (the advice, the partition table, the paths read it).
BATCH_KINDS: tuple[str, ...] = tuple(BATCH_BYTES_BY_KIND)
#: PoSt proof kinds, as TIMELINE `SYNTH_START kind=`, `/status` and a monolithic worker's
#: `proof_kind` name them (types.rs `ProofKind` Display); their names for people:
#: `gapwatch.cuzk.post.POST_NAMES`.
POST_KINDS: tuple[str, ...] = ("winning-post", "window-post")
#: engine.rs / config.rs: `[pipeline] max_parallel_synthesis`, 0 = this default.
DEFAULT_MAX_PARALLEL_SYNTHESIS = 18
#: engine.rs: never fewer synthesis workers than this.
MIN_SYNTH_WORKERS = 2
#: config.rs: `[gpus] gpu_workers_per_device` default (2: the dual-worker interlock).
DEFAULT_GPU_WORKERS_PER_DEVICE = 2

STARTING_PIPELINE = "starting pipeline: synthesis task + GPU workers (budget-gated)"
INIT_WORKERS = "initializing GPU workers"
BUDGET_INITIALIZED = "memory budget initialized"
PACER_ENABLED = "GPU queue target dispatch pacer enabled"
PACER_STATUS = "pacer: status"
#: The pacer formats these with `format!()`, so tracing writes them as quoted strings.
PACER_TEXT_NUMBERS = ("ema_waiting", "gpu_proc_ms", "gpu_eff_ms", "ema_synth_ms", "integral")
BUDGET_WAIT = "waiting for budget (acquire blocked)"
#: memory.rs:200-204 (DEBUG): a request granted, with the budget's `total_gib`.
BUDGET_ACQUIRED = "budget acquired"
#: memory.rs:187-192: WARN, then the acquire loops until used + amount <= total, which never
#: holds for an amount over the total: the job waits until cuzk restarts.
BUDGET_OVER = "acquire request exceeds total budget — will block until possible"
POOL_REUSE = "pinned pool: checkout (reuse)"
POOL_CHECKIN = "pinned pool: checkin"
#: The beginnings of the pinned pool's lines (`PipelineFacts._pool`).
_POOL_PREFIXES = ("pinned pool", HOST_ALLOC_FAILED, NO_CAPACITY_HINT_MESSAGE)
#: Every other message `PipelineFacts._tracing` reads.
_TRACING_MESSAGES = frozenset((
    POOL_INITIALIZED, STARTING_PIPELINE, INIT_WORKERS, BUDGET_INITIALIZED, ANCHOR_MESSAGE,
    PACER_ENABLED, PACER_STATUS, BUDGET_WAIT, BUDGET_OVER, BUDGET_ACQUIRED, SRS_LOADING_MESSAGE,
    SRS_LOADED_MESSAGE, SRS_EVICTED_MESSAGE, DISPATCHER_MESSAGE, PROCESSING_BATCH_MESSAGE,
    MONOLITHIC_PROCESSING_MESSAGE, MONOLITHIC_COMPLETED_MESSAGE, *MONOLITHIC_FAILED_MESSAGES,
    JOB_ENQUEUED_MESSAGE, *SINGLE_SYNTH_FAILED_MESSAGES, *GPU_WORKER_FAILED_MESSAGES,
    *SYNC_DONE_MESSAGES, *PARTITION_SYNTH_FAILED_MESSAGES, GPU_THREADS_MESSAGE,
    RAYON_THREADS_MESSAGE, *SEQ_MESSAGES))
#: A job's place in its run's GPU queue order (`DaemonRun.sequenced`).
_SEQ_MESSAGES = frozenset(SEQ_MESSAGES)
#: A partition's synthesis failed: cuzk writes this ERROR line (with `job_id partition`) in
#: place of its SYNTH_END (engine.rs:1784, 1810): it is no longer in flight (`SynthFlight`).
_PARTITION_SYNTH_FAILED = frozenset(PARTITION_SYNTH_FAILED_MESSAGES)
#: The cause the log gives a gap whose start found cuzk's pipeline empty and that ended on the
#: first synthesis of work that came after it (`PipelineFacts._empty_start_view`): the wait for
#: that work and one synthesis's latency, which more synthesis workers cannot shorten.
EMPTY_PIPELINE_CAUSE = "empty_pipeline"
#: Why more synthesis workers cannot shorten an empty pipeline's gap, pacer off (the default):
#: one dispatcher hands the new work's partitions to a channel the worker pool reads
#: (`ProverGapFacts.new_work_at_once`).
_AT_ONCE = ("whatever the number of synthesis workers (the free ones all "
            "start the new work's partitions at once, engine.rs:1475, 1678)")
#: A gap's facts where nothing is decided.
NO_FACTS = ProverGapFacts()
#: The lines that set what a run of cuzk is (its settings): read of the first daemon only,
#: where the logs are of several (`gapwatch.cuzk.daemons`).
_RUN_SETTINGS = frozenset((STARTING_PIPELINE, INIT_WORKERS, BUDGET_INITIALIZED, ANCHOR_MESSAGE,
                           PACER_ENABLED, DISPATCHER_MESSAGE, GPU_THREADS_MESSAGE,
                           RAYON_THREADS_MESSAGE))
#: The lines of a daemon's run that are its own whichever daemon it is (`DaemonRun`).
_DAEMON_RUN_LINES = frozenset((ANCHOR_MESSAGE, DISPATCHER_MESSAGE, PACER_ENABLED))
#: `BATCH_KINDS` as a set (`PipelineFacts._tracing` asks of every enqueued job; a private name:
#: the public names `_tracing` compares are messages, tests/test_cuzk_upstream.py).
_BATCHED_KINDS = frozenset(BATCH_KINDS)
#: A monolithic worker's lines that end its job (engine.rs:3455-3475): it is free again.
_MONOLITHIC_ENDS = frozenset(MONOLITHIC_END_MESSAGES)
#: A monolithic worker's lines `PipelineFacts._monolithic_worker` reads (in its span).
_MONOLITHIC_LINES = frozenset(MONOLITHIC_JOB_MESSAGES)
#: cuzk's ERROR lines written in place of a pipelined monolithic job's SYNTH_END and of its
#: GPU_END when that step fails (`PipelineFacts._monolithic_failed`; among the lines
#: `gapwatch.cuzk.restarts.RestartWatch._failed` ends a step at: the partitions' others).
_SYNTH_FAILED = frozenset(SINGLE_SYNTH_FAILED_MESSAGES)
_STEP_FAILED = frozenset((*SINGLE_SYNTH_FAILED_MESSAGES, *GPU_WORKER_FAILED_MESSAGES))
#: The lines that end a pipelined monolithic job's GPU step in its GPU worker's span where cuzk
#: writes no GPU_END (`CUZK_DISABLE_SPLIT_PROVE=1`: `PipelineFacts._sync_done`).
_SYNC_DONE = frozenset(SYNC_DONE_MESSAGES)
#: The kind of a panic message's event (the parser reads its lines as one: gapwatch.cuzk.panics).
PANIC_KIND = "panic"
#: The WARNs that are failures: a self-check that failed (prover.rs:261) and a budget request
#: that can never be granted (`BUDGET_OVER`); every ERROR line is one too.
SELF_CHECK_FAILED = "self-check FAILED"
#: An error this long before a gap's start can explain it: a failed partition fails its whole
#: job, its remaining partitions are skipped (engine.rs:1635, 3037) and the GPU idles until
#: the next job's partitions are synthesised (~30-60 s).
ERROR_REACH_S = 120.0

#: Most entries of each history kept (a few hours of a busy prover; then the oldest go).
HISTORY = 512
#: A pinned-pool failure this long before a gap's end can explain its pageable copies: a
#: partition synthesised into pageable buffers reaches the GPU a synthesis (~30-60 s) later,
#: or longer behind a deep queue.
POOL_FAILURE_REACH_S = 600.0
#: What cuzk's per-GPU lock covers (cuzk-log-formats.md 3.2): one C++ std::mutex per GPU, shared
#: by that GPU's workers (engine.rs:2916-2955), taken after a worker's split-vector allocation and
#: its prep thread's start, released after the tail MSMs (groth16_cuda.cu:900-1070). The one
#: home of that fact: the advice says it in full (`COPIES_UNDER_LOCK`, and beside a second GPU
#: worker), a transfer_bound gap's hint in short (`COPIES_UNDER_LOCK_HINT`, `CuzkGap.view`).
GPU_LOCK_WORDS = (
    "one mutex per GPU, shared by its GPU workers, is held from the H2D copies of a/b/c through "
    "the NTTs, the H MSM, the wait for CPU prep (barrier_wait), the batch additions and the "
    "tail MSMs (groth16_cuda.cu:900-1070, engine.rs:2916-2955)")
#: What the lock means for a transfer_bound gap's copies, whatever the worker count.
COPIES_NEVER_OVERLAP = "one worker's copies never overlap another worker's kernels"
#: What a transfer_bound gap's copies are in cuzk, and why no worker count hides them.
COPIES_UNDER_LOCK = (
    f"cuzk copies under the GPU's lock: {GPU_LOCK_WORDS}, a partition's a/b/c and the SRS "
    "points its MSMs read streaming from host memory inside it (about 23.6 GiB host-to-device "
    "a PoRep partition by c2-optimization-proposal-9, sizes approximate), so "
    f"{COPIES_NEVER_OVERLAP}, whatever gpu_workers_per_device; at line rate they are pinned "
    "already, and upstream names no setting that shrinks them")
#: The same, as a transfer_bound gap's hint says it in place of the core's question ("is the
#: next partition's upload chained behind the other worker's kernels?", which the advice
#: answered no to beside it).
COPIES_UNDER_LOCK_HINT = (
    "cuzk copies under the GPU's lock (one mutex per GPU held from the H2D copies through the "
    f"kernels, groth16_cuda.cu:900-1070): {COPIES_NEVER_OVERLAP}")
#: A GPU_QUEUE this close after a gap's start (or before its end) counts as "during" it: log
#: lines are stamped to the ms, samples place the gap's edges to ~0.1 s.
EDGE_SLACK_S = 0.25
#: How long after a partition's GPU_QUEUE a pickup of a greater key shows it no longer queued
#: (`DaemonRun.picked`): the line is written just before the push (engine.rs:1778-1779), TIMELINE
#: offsets are whole milliseconds, and a thread may be preempted between the two.
QUEUE_RACE_S = 0.1
#: The hint's words for the log's dispatch stall where no worker's holds were read: the queue
#: wait alone says it (`PipelineFacts._queue_wait_view`), no worker shown idle.
NO_HOLDS_LEAD = ("synthesised partitions queued for the GPU and not taken (a dispatch stall, or "
                 "every GPU worker busy: no GPU worker's holds read)")
#: The same where holds were read (the worker count, or some workers' pickups) but none shows
#: a worker free (`HeldOver.free_shown`): fewer workers seen holding work than the GPU has is
#: not a worker shown free (a pickup may lie before the log read), so no words say one was.
UNSHOWN_FREE_LEAD = ("synthesised partitions queued for the GPU and not taken (a dispatch stall, "
                     "or every GPU worker busy: no GPU worker's holds read showing one free)")


def max_concurrent_of(total_bytes: int) -> int:
    """status.rs: what `/status` calls `synthesis.max_concurrent` (NOT the worker count)."""
    return total_bytes // SNAP_PARTITION_FULL_BYTES


def synth_worker_count(total_bytes: int, max_parallel_synthesis: int) -> int:
    """engine.rs: how many synthesis workers cuzk runs for a budget of `total_bytes`."""
    cap = max_parallel_synthesis or DEFAULT_MAX_PARALLEL_SYNTHESIS
    return max(MIN_SYNTH_WORKERS, min(total_bytes // POREP_PARTITION_FULL_BYTES, cap))


def timeline_epoch(status: ProverStatus) -> float | None:
    """The wall time of cuzk's TIMELINE offset 0, from a `/status` snapshot: its tracker is
    created a few ms before the TIMELINE epoch (engine.rs `Engine::new`, then `start()`), and
    `uptime_secs` counts from it. The snapshot was built somewhere within the request, so half
    its latency is added to when it was sent. None without an uptime."""
    if status.uptime_s is None:
        return None
    return status.t_wall_s + status.latency_ms / 2000.0 - status.uptime_s


def partition_bytes(kind: str | None) -> int | None:
    """The budget one partition of this proof kind acquires (memory.rs), or None."""
    return PARTITION_BYTES_BY_KIND.get(kind or "")


def capacity_of(synth_workers: int | None, status: ProverStatus | None,
                budget_total_bytes: int | None, max_parallel_synthesis: int | None
                ) -> Capacity | None:
    """How many syntheses cuzk runs at once: the log's `synth_worker_count`, else cuzk's
    formula over the budget (`/status`'s `memory.total_bytes`, else the log's `memory budget
    initialized`) and the operator's `[cuzk] max_parallel_synthesis` (None: not given: then
    the budget decides alone only where it allows no more than `MIN_SYNTH_WORKERS`), else
    unknown (None). Never cuzk's default cap taken for its config: a prover run with
    `max_parallel_synthesis = 3` on a 512 GiB budget read `1/~18`."""
    if synth_workers is not None:
        return Capacity(synth_workers, "log")
    total = status.memory_total_bytes if status is not None else None
    if total is None:
        total = budget_total_bytes
    if total is None:
        return None
    if max_parallel_synthesis is None:
        if total // POREP_PARTITION_FULL_BYTES > MIN_SYNTH_WORKERS:
            return None
        return Capacity(MIN_SYNTH_WORKERS, "budget")
    return Capacity(synth_worker_count(total, max_parallel_synthesis), "budget")


def workers_free(busy: int, capacity: Capacity | None) -> bool | None:
    """Is a synthesis worker free with `busy` syntheses running? By the capacity where it is
    known; below cuzk's least (`MIN_SYNTH_WORKERS`) whatever it is; else None (not known).
    The one test of "every synthesis worker busy" that `gapwatch.cuzk.causes` rules take."""
    if capacity is not None:
        return busy < capacity.workers
    return True if busy < MIN_SYNTH_WORKERS else None


#: Why the number of synthesis workers is not known, as every output says it.
CAPACITY_NOT_READ = ("no 'starting pipeline ... synth_worker_count' line in the log read, and "
                     "no memory budget with a [cuzk] max_parallel_synthesis to apply cuzk's "
                     "formula to")


@dataclass(frozen=True, slots=True)
class Capacity:
    """How many syntheses cuzk runs at once, and where that number came from."""

    workers: int
    #: "log": `synth_worker_count` of the `starting pipeline` line; "budget": cuzk's formula
    #: over `/status`'s `memory.total_bytes` and `[cuzk] max_parallel_synthesis` (or a budget
    #: that allows no more than cuzk's least, whatever the cap).
    source: str

    def words(self) -> str:
        if self.source == "log":
            return "synth_worker_count in the log"
        return ("cuzk's formula: memory budget / 14 GiB, at least 2, at most [cuzk] "
                "max_parallel_synthesis")


def pending_partition_bytes(status: ProverStatus) -> int | None:
    """The smallest budget a pending partition of this snapshot needs (its job's proof kind),
    or None when no pending partition's kind is known."""
    sizes = [partition_bytes(status.job_kinds.get(p.job_id)) for p in status.partitions
             if p.state == "pending"]
    known = [s for s in sizes if s is not None]
    return min(known) if known else None


def _num(value: FieldValue) -> float | None:
    """A field as a finite number (`3`, `3.5`, `"7.9"`), or None."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        n = float(value)
    except ValueError:
        return None
    return n if math.isfinite(n) else None


def numeric_text_fields(fields: dict[str, FieldValue], keys: tuple[str, ...]) -> None:
    """Turn the quoted numbers of `keys` (`ema_waiting="7.9"`) into numbers, in place."""
    for key in keys:
        value = fields.get(key)
        if isinstance(value, str):
            n = _num(value)
            if n is not None:
                fields[key] = int(n) if n.is_integer() and "." not in value else n


class QueueWait(NamedTuple):
    """A partition that waited in the GPU queue: queued (GPU_QUEUE) until a worker picked it up
    (GPU_PICKUP), on the picking GPU (None: not known) of its daemon (0: the first)."""

    job: str
    partition: int
    queued_s: float
    picked_s: float
    gpu: int | None
    daemon: int


@dataclass(slots=True)
class PoolState:
    """cuzk's pinned pool (pinned_pool.rs) as its lines tell it; None: not said yet."""

    total_gib: float | None = None
    #: Buffers the pool holds: allocated (`total_buffers` counts every allocation ever) less
    #: those the evictor freed.
    buffers: int | None = None
    free: int | None = None
    checkout_failed: int = 0
    alloc_failed: int = 0
    #: The latest failure's figures: `pool_free`, `pool_total_gib`, `cuda_err`, `size_gib`.
    last_failure: dict[str, FieldValue] = field(default_factory=dict)
    last_failure_s: float | None = None
    #: `no capacity hint cached`: a first-wave synthesis of a circuit type in a run (every
    #: run's, every type's), unpinned by design; which wave each was in: the view's
    #: `first_waves`.
    first_syntheses: int = 0
    #: The buffer that failed to pin, GiB: the latest failure line's own size (`size_gib` of
    #: `cudaHostAlloc failed`, WARN, or the failed checkout's `num_constraints` x 32 B, the
    #: a/b/c buffer it asked for, pipeline.rs:282-346); never a buffer that pinned (`allocated
    #: new buffer` may be another circuit type's). None: no failure gave one. Kept apart from
    #: `last_failure`, which the failed checkout after the pin replaces.
    buffer_gib: float | None = None
    #: The failed checkout's `num_constraints` that `buffer_gib` came from; None: it came from
    #: a `cudaHostAlloc failed` line's `size_gib` (or no failure gave one).
    buffer_constraints: int | None = None
    #: The latest failure's own run's figures, as its daemon's start gave them before it: a
    #: restart after it (fewer workers, another budget) leaves them as they were. None: not
    #: read, or the failure is another daemon's (`failure_apart` says so).
    failure_workers: int | None = None
    failure_budget_bytes: int | None = None
    #: Why the figures of the view (the first daemon's settings) are not the failure's: it is
    #: another daemon's lines; None: they are its own.
    failure_apart: str | None = None
    #: The CUDA error of the latest `cudaHostAlloc failed` line (`cuda_err`, pinned_pool.rs:61);
    #: None: no such line gave one (the failed checkout after it replaces `last_failure`).
    cuda_err: FieldValue | None = None
    #: What the host's memory readings said at the failed pins (`gapwatch.cuzk.pin_host`,
    #: `HostMemory.at_failures`, put in by `PipelineFacts.view`); None: no failed pin, or no
    #: host sample fed.
    host: HostAtFailures | None = None


#: Bytes of one a/b/c element: a buffer is the circuit's `num_constraints` x this
#: (pipeline.rs:282-346; PoRep 32G's 130 278 869 constraints: 3.882613 GiB).
SCALAR_BYTES = 32
#: A failed checkout's `pool_total_gib` this close to the INFO lines' `total_gib` is the same
#: size, rounded differently.
HELD_ROUNDING_GIB = 0.01


def _checkout_failed_sizes(pool: PoolState, n: int | None, held: float | None) -> None:
    """A failed checkout's figures beside its counts (read and bounded by the caller): the
    buffer it asked for (its `num_constraints`), and what the pool held (`pool_total_gib`), the
    latest word on the pool's size: a figure above what the INFO lines left (none read, or cut
    by RUST_LOG) proves buffers pinned that those lines did not count, so their count is no
    longer known."""
    if n:
        pool.buffer_gib, pool.buffer_constraints = n * SCALAR_BYTES / GIB, n
    if held is not None and held >= 0 and (
            pool.total_gib is None or abs(held - pool.total_gib) > HELD_ROUNDING_GIB):
        pool.total_gib, pool.buffers = held, None


def pacing(target: int | None) -> bool:
    """Whether a dispatch pacer of this `gpu_queue_target` is on (`[pipeline]
    max_gpu_queue_depth` > 0; 0, the default, is no pacer)."""
    return target is not None and target > 0


class _Limits:
    """What both the live facts and their view answer from the same four facts."""

    __slots__ = ()
    synth_workers: int | None
    budget_total_bytes: int | None
    max_parallel_synthesis: int | None

    @property
    def pacer_target(self) -> int | None:
        """The first daemon's dispatch-pacer target: a field of the view, read from the first
        `DaemonRun` by the live facts (its one home)."""
        raise NotImplementedError

    def capacity(self, status: ProverStatus | None = None) -> Capacity | None:
        """How many syntheses run at once (`capacity_of`)."""
        return capacity_of(self.synth_workers, status, self.budget_total_bytes,
                           self.max_parallel_synthesis)

    @property
    def pacer_on(self) -> bool:
        """The log said the (first daemon's) dispatch pacer is on (`pacing`)."""
        return pacing(self.pacer_target)


@dataclass(frozen=True, slots=True)
class PipelineView(_Limits):
    """What the log has said about the pipeline as of now: the dashboard's and `/metrics`'s
    view of `PipelineFacts` (immutable, cheap to copy)."""

    synth_workers: int | None = None
    budget_total_bytes: int | None = None
    gpu_workers_per_device: int | None = None
    pipeline_enabled: bool | None = None
    #: Known off by the run's monolithic workers' lines alone, its start line not read.
    pipeline_off_by_workers: bool = False
    pool: PoolState | None = None
    pacer_target: int | None = None
    pacer: dict[str, FieldValue] | None = None
    #: Circuit ids whose SRS is loading now (`loading SRS from disk` without its end), and
    #: those evicted so far (`SRS evicted`).
    srs_loading: tuple[str, ...] = ()
    srs_evictions: tuple[str, ...] = ()
    #: Count fields the log gave that were no count, as it gave them (`synth_worker_count=-5`):
    #: dropped, so the figure above is None (`PipelineFacts.dropped`).
    dropped: tuple[str, ...] = ()
    #: Count and size fields dropped so in all (each line's, not only the latest of a key).
    figures_dropped: int = 0
    #: Partitions queued for the GPU and not picked up yet, and the latest queue wait (s).
    queued: int = 0
    last_queue_wait_s: float | None = None
    budget_waits: int = 0
    #: The latest budget request larger than the whole budget (None: none read).
    over_budget: OverBudget | None = None
    monolithic_in_flight: tuple[str, ...] = ()
    #: The operator's `[cuzk] max_parallel_synthesis` (cuzk's own cap, copied); None: not
    #: given, so cuzk's formula over the budget is not applied (`capacity_of`).
    max_parallel_synthesis: int | None = None
    #: Every run's first wave of each circuit type, oldest first (bounded: `MAX_WAVES`): a gap
    #: in one of their windows is a first wave's (`gapwatch.cuzk.first_wave.wave_of`).
    first_waves: tuple[FirstWave, ...] = ()
    #: The pinned pool churning (`gapwatch.cuzk.pool_churn`): None where no log was read.
    pool_churn: PoolChurnView | None = None
    #: The daemon's thread pools as its start logged them (`PipelineFacts._threads`):
    #: `[gpus] gpu_threads` (0: its start was read without the line, which cuzk writes only
    #: for a value > 0; then an operator-set CUZK_GPU_THREADS env, if any, sizes the pool) and
    #: `rayon_threads` (`[synthesis] threads` resolved, 0 logged as the CPU count). None: no
    #: start read.
    gpu_threads: int | None = None
    rayon_threads: int | None = None
    #: Failure lines naming no job that more than one monolithic job (or one read apart from
    #: it) could be the failure of, so ended none (`PipelineFacts.mono_failures_unplaced`).
    mono_failures_unplaced: int = 0


@dataclass(slots=True)
class _Mono:
    """One monolithic job: PoSt or a batch from TIMELINE, or, with `[pipeline] enabled =
    false`, any proof a monolithic worker proves in one call (`one_call`: from its
    `processing job (monolithic)` line, `pickup_s`, to the line that ends it, `end_s`). A
    pipelined one ends at its GPU_END or at the failure line of its step
    (`PipelineFacts._monolithic_failed`); proved without GPU_START and GPU_END
    (`CUZK_DISABLE_SPLIT_PROVE=1`), at its completion line in its GPU worker's span
    (`PipelineFacts._sync_done`), else by its worker's next GPU_PICKUP
    (`PipelineFacts._worker_moved_on`)."""

    job: str
    kind: str
    synth_start_s: float | None = None
    synth_end_s: float | None = None
    pickup_s: float | None = None
    #: Its GPU_START (the split prove's: engine.rs:3131); None: none read.
    gpu_start_s: float | None = None
    end_s: float | None = None
    #: Its end was not read, only bounded: `end_s` is its worker's next GPU_PICKUP, by which
    #: it had ended (`PipelineFacts._worker_moved_on`), until a line of its own says when.
    end_unread: bool = False
    worker: int | None = None
    gpu: int | None = None
    one_call: bool = False
    #: The daemon whose lines told it (`RestartsByDaemon.daemon_of`): a failure line or a gap
    #: of another daemon's GPU is not its.
    daemon: int = 0
    #: The first failure line naming no job that may be this job's, written while it and
    #: others could have been the one that failed (`PipelineFacts._monolithic_failed`): (when,
    #: its message, how many could). None: none such.
    unplaced_failure: tuple[float, str, int] | None = None
    #: The stream its TIMELINE lines were read on (`unnamed_failure.RunStream.in_order`).
    stream: str = ""

    def could_have_failed(self, synth: bool, t_s: float) -> bool:
        """Whether a pipelined failure line at `t_s` naming no job can be this job's: its
        synthesis (`synth`: begun by then, not ended) or its GPU step (picked up by then, its
        GPU_END not read). A job begun after the line is not its, whatever order the lines
        were read in (cuzk's stdout and stderr read apart)."""
        if self.one_call:
            return False  # the pipeline off: its worker's own lines name it (`proof failed`)
        if synth:
            return (self.synth_start_s is not None and self.synth_start_s <= t_s
                    and self.synth_end_s is None and self.pickup_s is None)
        return self.pickup_s is not None and self.pickup_s <= t_s


@dataclass(slots=True)
class SrsLoad:
    """One SRS load (srs_manager.rs): from `loading SRS from disk` to `SRS loaded
    successfully` (`end_s` None while it runs)."""

    circuit: str
    start_s: float
    end_s: float | None = None
    elapsed_ms: int | None = None


class SynthFlight:
    """cuzk's partition syntheses as its TIMELINE tells them (`SYNTH_START` engine.rs:1719 ..
    `SYNTH_END` 1752, or the ERROR line written in its place, 1784, 1810), kept so that what was
    synthesising at a past moment can be told: a gap's start, asked once the gap has closed.

    A log read from mid-run holds syntheses begun before it, whose SYNTH_START was never read:
    "none in flight" is said only from a moment the set is known whole (`known_s`): a run's
    start (cuzk keeps nothing across one), or, mid-run, the first SYNTH_END of a synthesis whose
    SYNTH_START was read (one begun after the log did has ended, and those begun before it,
    bar one far slower, have too). Any synthesis whose end comes after a moment, its start not
    read, was in flight then whenever it began (`in_flight_at`), and so was one whose
    partition was queued for the GPU (GPU_QUEUE, written after its SYNTH_END, engine.rs:1778)
    with neither of its lines read. Bounded: `HISTORY` of each."""

    __slots__ = ("open", "ended", "ended_keys", "known_s")

    def __init__(self) -> None:
        #: (job, partition) -> its SYNTH_START, not yet ended, oldest first. A plain dict: a key
        #: is started once, and what every partition pays is an insert and a pop (`done`),
        #: cheaper on a dict than an OrderedDict (about 0.53 against 0.73 us the pair, CPython
        #: 3.11); evicting, dearer on it, happens only past `HISTORY` syntheses open at once.
        self.open: dict[tuple[str, int], float] = {}
        #: (its SYNTH_START, None where not read; its end), oldest first.
        self.ended: deque[tuple[float | None, float]] = deque(maxlen=HISTORY)
        #: The partitions whose end was read, oldest first: a GPU_QUEUE of another ends its
        #: synthesis (`PipelineFacts._timeline`). An OrderedDict: past `HISTORY` every
        #: partition evicts one, and its `popitem(last=False)` is cheaper than a plain dict's
        #: `del d[next(iter(d))]` (about 0.55 against 0.70 us an insert and eviction).
        self.ended_keys: OrderedDict[tuple[str, int], None] = OrderedDict()
        self.known_s: float | None = None

    def new_run(self, t_s: float) -> None:
        """A run of cuzk started at `t_s` (its start line): the old run's syntheses died with
        it, and the new run's lines are read from its start, so the set is whole from then if
        not before. (A restart only `/status` uptime or a new pid said is not taken here: a
        pid is read minutes after its run began, and another daemon's restart is not this
        one's; the old run's syntheses then stay counted, the gaps read as waiting on
        synthesis as before, until `HISTORY` newer ones push them out.)"""
        for key in [k for k, start in self.open.items() if start < t_s]:
            del self.open[key]
        if self.known_s is None or self.known_s > t_s:
            self.known_s = t_s

    def started(self, key: tuple[str, int], t_s: float) -> None:
        opened = self.open
        opened[key] = t_s
        if len(opened) > HISTORY:
            del opened[next(iter(opened))]

    def done(self, key: tuple[str, int], t_s: float) -> None:
        """Its SYNTH_END, or the failure line in its place."""
        start = self.open.pop(key, None)
        self.ended.append((start, t_s))
        ended = self.ended_keys
        ended[key] = None
        if len(ended) > HISTORY:
            ended.popitem(last=False)
        if start is not None and self.known_s is None:
            self.known_s = t_s

    def in_flight_at(self, t_s: float) -> bool | None:
        """Whether a synthesis was running at `t_s`; None: not known (the log began mid-run
        and nothing has made the set whole by then)."""
        if any(start < t_s for start in self.open.values()):
            return True
        if any(end > t_s and (start is None or start < t_s) for start, end in self.ended):
            return True
        return None if self.known_s is None or t_s < self.known_s else False

    def first_start(self, from_s: float, until_s: float) -> float | None:
        """The first SYNTH_START read in [from_s, until_s], or None."""
        starts = [s for s in self.open.values() if from_s <= s <= until_s]
        starts += [s for s, _ in self.ended if s is not None and from_s <= s <= until_s]
        return min(starts, default=None)


class DaemonRun:
    """What `PipelineFacts` keeps of each daemon's run apart, where the logs are of several
    (`gapwatch.cuzk.daemons`: a PoSt-only cuzk beside a PoRep one): another daemon's work feeds
    another GPU, so a gap of a GPU asks only the daemons whose lines named it. Its partition
    syntheses (`SynthFlight`) and partitions queued for its GPUs; the stream its start line was
    read on while its run is followed whole (`RunStream`: where a failure line naming no job can
    be placed, as that daemon's own `PostTracker` places it, one a daemon in
    `gapwatch.cuzk.watch.CuzkWatch`); its
    `[scheduler] max_batch_wait_ms` and the stretches its batch collector held a request
    (`PipelineFacts._batch_sent`); its dispatch pacer target."""

    __slots__ = ("synth", "queued", "parts_queued", "queue_times", "job_seqs", "run",
                 "batch_wait_ms", "batch_first_s", "batch_holds", "pacer_target")

    def __init__(self) -> None:
        self.synth = SynthFlight()
        #: (job, partition) -> time queued for the GPU (GPU_QUEUE), not picked up yet; and the
        #: times of each GPU_QUEUE (synthesis done, ready for the GPU).
        self.queued: OrderedDict[tuple[str, int], float] = OrderedDict()
        #: `queued`'s keys by job (job -> its partitions queued): a pickup asks only the jobs
        #: queued, not every partition (`picked`, once a pickup; the queue holds hundreds).
        self.parts_queued: dict[str, set[int]] = {}
        self.queue_times: deque[float] = deque(maxlen=HISTORY)
        #: job -> (its `job_seq` in this run, when that line was read), oldest first: the GPU
        #: queue's order between jobs (`picked`).
        self.job_seqs: OrderedDict[str, tuple[int, float]] = OrderedDict()
        self.run = RunStream()
        #: Its run's dispatcher line's `max_batch_wait_ms`, and the (from, until) stretches its
        #: batch collector held a request: they do not overlap (one batch pending at a time).
        self.batch_wait_ms: int | None = None
        self.batch_holds: deque[tuple[float, float]] = deque(maxlen=HISTORY)
        #: The first PoRep or SnapDeals request's `job enqueued` since its latest batch was
        #: sent: where a held request's wait began.
        self.batch_first_s: float | None = None
        #: `gpu_queue_target` of its pacer line (`[pipeline] max_gpu_queue_depth`).
        self.pacer_target: int | None = None

    def new_run(self, stream: str, t_s: float) -> None:
        """Its start line (`starting cuzk engine`) read on `stream` at `t_s`: what its old run
        held died with it; its new run is followed whole from here."""
        self.synth.new_run(t_s)
        self.forget_before(t_s)
        self.run.started(stream)
        self.batch_wait_ms = None  # the new run's dispatcher line says its own
        self.batch_first_s = None

    def forget_before(self, t_s: float) -> None:
        """Its run ended by `t_s` (a restart: its start line, or one only `/status` uptime or a
        new pid told, `PipelineFacts._restarted`; for a new pid, the old pid's last reading
        alive):
        what it had queued for the GPU died with it, and `job_seq` counts from 0 again. What
        was queued after `t_s` is the new run's."""
        for key in [k for k, q in self.queued.items() if q <= t_s]:
            self._unqueue(key)
        for job in [j for j, (_, read_s) in self.job_seqs.items() if read_s <= t_s]:
            del self.job_seqs[job]

    def sequenced(self, job: str, job_seq: int, t_s: float) -> None:
        """`assigned pipeline sequence number` of `job`, read at `t_s`."""
        seqs = self.job_seqs
        seqs[job] = (job_seq, t_s)
        seqs.move_to_end(job)
        if len(seqs) > HISTORY:
            seqs.popitem(last=False)

    def picked(self, key: tuple[str, int], t_s: float) -> float | None:
        """GPU_PICKUP of `key` (job, partition) at `t_s`: when it was queued (None: not read),
        and the partitions it shows no longer queued let go. cuzk's GPU queue pops its least
        key (job_seq, partition) (`PriorityWorkQueue::try_pop`, engine.rs:28-79): a partition
        of a smaller key still listed when this one was popped was not in the queue then, its
        own GPU_PICKUP line lost or not parsed. Kept there, it made every later host stall of
        the GPU a dispatch stall naming it. The queue is no FIFO: a partition queued earlier
        with a greater key (a later partition of the job, synthesised first) is popped later
        and stays. Only a pickup `QUEUE_RACE_S` after the partition's GPU_QUEUE counts (cuzk
        writes that line just before the push, engine.rs:1778-1779: a worker may pop in
        between)."""
        queued_s = self._unqueue(key)
        if not self.queued:
            return queued_s
        cut_s = t_s - QUEUE_RACE_S
        queued, job, part = self.queued, key[0], key[1]
        stale = [(job, p) for p in self.parts_queued.get(job, ()) if p < part]
        theirs = self.job_seqs.get(job)
        if theirs is not None:  # another job's partition is before it when its job_seq is lower
            for other, parts in self.parts_queued.items():
                mine = self.job_seqs.get(other)
                if mine is not None and mine[0] < theirs[0] and other != job:
                    stale += [(other, p) for p in parts]
        for k in stale:
            if queued[k] < cut_s:
                self._unqueue(k)
        return queued_s

    def queue(self, key: tuple[str, int], t_s: float) -> None:
        """GPU_QUEUE of `key` (job, partition) at `t_s`: queued for the GPU (the oldest let go
        past `HISTORY`)."""
        queued = self.queued
        queued[key] = t_s
        queued.move_to_end(key)
        self.parts_queued.setdefault(key[0], set()).add(key[1])
        self.queue_times.append(t_s)
        if len(queued) > HISTORY:
            self._unqueue(next(iter(queued)))

    def _unqueue(self, key: tuple[str, int]) -> float | None:
        """`key` no longer queued: when it was queued (None: it was not)."""
        queued_s = self.queued.pop(key, None)
        if queued_s is not None:
            parts = self.parts_queued[key[0]]
            parts.discard(key[1])
            if not parts:
                del self.parts_queued[key[0]]
        return queued_s

    @property
    def pacer_on(self) -> bool:
        return pacing(self.pacer_target)


#: The requests cuzk's single partition dispatcher makes (engine.rs:1623-1628: a PoRep or
#: SnapDeals partition's `proof_kind_full_bytes`), in whole GiB as memory.rs:188-192 divides them.
PARTITION_REQUEST_GIB = frozenset(PARTITION_BYTES_BY_KIND[k] // GIB
                                  for k in ("porep-c2", "snap-update"))
#: The spans a job's batch task runs in (engine.rs:1993-2099, `info_span!("synth_...")` around
#: `process_batch`): a line in one was written by that job's task, not by the partition
#: dispatcher (which runs in no span). INFO spans, so a log kept at `warn` names none.
JOB_TASK_SPAN = "synth_"
#: What a job's own request over the budget holds up (engine.rs:1927-1971): the dispatcher
#: awaits `process_batch` inline at `synthesis_concurrency` 1, else spawns it holding one of N
#: semaphore permits until it returns.
_JOB_BLOCKS = ("that job waits, and with [pipeline] synthesis_concurrency = 1 (the default) "
               "every later job too, its batch task being awaited inline; above 1 it holds one "
               "of the N synthesis slots for good (engine.rs:1927-1971)")


@dataclass(frozen=True, slots=True)
class OverBudget:
    """A budget request larger than cuzk's whole budget (`BUDGET_OVER`, or a wait line whose
    `needed_gib` is over its `total_gib`): the acquire loops until used + amount fits the total,
    which never holds, so it waits until cuzk's process ends (memory.rs:187-236). What waits
    behind it depends on who asked (`blocks`)."""

    t_s: float
    #: The line's `amount_gib` and `total_gib` (whole GiB, as memory.rs divides them); None
    #: where the line did not give a number.
    amount_gib: float | None
    total_gib: float | None
    #: The job task's span the line was written in (`synth_single proof_kind=porep-c2`), None
    #: where it named none (the partition dispatcher's, or a log without INFO spans).
    task: str | None = None

    def blocks(self) -> str:
        """Who waits behind it, as engine.rs makes them wait: a job's own request holds that
        job (and, at synthesis_concurrency 1, every later one); a partition's holds cuzk's one
        partition dispatcher, so every partition of every job, whatever synthesis_concurrency
        says (it limits batch tasks, not the dispatcher)."""
        if self.task is not None:
            return f"a job's own request (made in its batch task, span {self.task}): {_JOB_BLOCKS}"
        if self.amount_gib is not None and self.amount_gib not in PARTITION_REQUEST_GIB:
            return ("not a partition's size, so a job's own request (a batch's working set, an "
                    f"SRS load): {_JOB_BLOCKS}")
        return ("if it is a partition's (PoRep 14 GiB, SnapDeals 9 GiB), cuzk's single partition "
                "dispatcher waits on it, and every partition of every job behind it, whatever "
                "[pipeline] synthesis_concurrency says (engine.rs:1478, 1623-1628); if it is a "
                f"job's own (a WindowPoSt's working set, an SRS load), {_JOB_BLOCKS}")

    def words(self) -> str:
        amount = f"{self.amount_gib:g} GiB" if self.amount_gib is not None else "?"
        total = f"{self.total_gib:g} GiB" if self.total_gib is not None else "?"
        return (f"a {amount} budget request exceeds cuzk's {total} total budget at "
                f"{_hms(self.t_s)}: it can never be granted, so it waits until cuzk restarts "
                f"(memory.rs:187-236); {self.blocks()}")

    def waits_of(self, t_s: float, f: dict[str, FieldValue]) -> bool:
        """Whether a budget line (`PipelineFacts.budget_waits`) is this request's: its WARN, or
        a wait line it logs each time a release wakes it (memory.rs:230-236, DEBUG), whose
        `needed_gib` is over its `total_gib` (or is this request's pair, where whole GiB tie)."""
        if t_s == self.t_s:
            return True
        needed, total = _num(f.get("needed_gib")), _num(f.get("total_gib"))
        if needed is None or total is None:
            return False
        return needed > total or (needed, total) == (self.amount_gib, self.total_gib)


def over_budget_of(ev: LogEvent) -> OverBudget:
    """The request of a `BUDGET_OVER` line (`amount_gib`), or of a wait line over its total
    (`needed_gib`)."""
    f = ev.fields
    amount = f.get("amount_gib", f.get("needed_gib"))
    spans = f.get("spans")
    task = None
    if isinstance(spans, str) and JOB_TASK_SPAN in spans:
        kind = f.get("proof_kind")
        task = spans + (f" proof_kind={kind}" if isinstance(kind, str) else "")
    return OverBudget(ev.t_wall_s, size_field(amount), size_field(f.get("total_gib")),
                      fmt.visible(task) if task is not None else None)


def monolithic_worker_line(ev: LogEvent) -> bool:
    """A line of one of cuzk's monolithic workers about its job, in its span: its `processing
    job (monolithic)` or the line that ends it (engine.rs:3397-3475)."""
    return ev.name in _MONOLITHIC_LINES and ev.fields.get("spans") == MONOLITHIC_SPAN


class PipelineMode:
    """Whether a run of cuzk has its pipeline on, as its lines tell: its start line's
    `pipeline_enabled`, else, that line not read (a log followed from its end, as a
    long-running cuzk's is), off as its monolithic workers' lines alone say
    (`monolithic_worker_line`: cuzk runs those workers only with the pipeline off,
    engine.rs:1333-1337, 3362). The one rule `PipelineFacts` and `gapwatch.cuzk.paths.PathsSeen`
    read it by, each fed the first daemon's lines."""

    __slots__ = ("enabled", "off_by_workers")

    def __init__(self) -> None:
        self.enabled: bool | None = None
        #: Known off by the run's monolithic workers' lines alone, its start line not read.
        self.off_by_workers = False

    def started(self, fields: dict[str, FieldValue]) -> None:
        """The run's start line (`starting cuzk engine`), with its fields."""
        enabled = fields.get("pipeline_enabled")
        self.enabled = enabled if isinstance(enabled, bool) else None
        self.off_by_workers = False

    def worker_line(self) -> None:
        """A monolithic worker's line (`monolithic_worker_line`): where the start line did not
        say, the pipeline is off."""
        if self.enabled is None:
            self.enabled, self.off_by_workers = False, True


@dataclass(frozen=True, slots=True)
class PoolSaid:
    """The pinned pool's failures in words (`PipelineFacts.pool_said`), and the index among
    them of the line that says whether the pool churned before them (None: none does)."""

    lines: list[str]
    churn_line: int | None


@dataclass(frozen=True, slots=True)
class LogView:
    """What the log says about one gap: the cause it gives (or None) and the facts."""

    cause: str | None
    evidence: list[str]
    #: The short figure a hint adds to the cause's words.
    detail: str = ""
    #: What said it: the log's lines, or, for a restart, only `/status` (its uptime going
    #: back: "status") or NVML's processes (a new cuzk pid: "processes").
    said_by: CauseSaidBy = "log"
    #: The gap spans a restart (its cause the restart's, or its new run's wait for work):
    #: then it stands over any snapshot's (`gapwatch.cuzk.causes.with_log_cause`).
    spans_restart: bool = False
    #: The cause's words where this gap's differ from its cause's own (`PROVER_CAUSE_WORDS`):
    #: a restart /proc alone showed, of a process not known to be cuzk's ("" for none).
    lead: str = ""
    #: Its `dispatch_stall` rests on a worker the log shows free (`HeldOver.free_shown`): then
    #: it stands over the snapshots' `inside_workers` (`with_log_cause`), not where no worker
    #: count or pickup was read.
    worker_free: bool = False
    #: The facts of `evidence` the advice reads, typed, decided here with their words
    #: (`ProverGapFacts`; `pool_churn_line` indexes `evidence`).
    facts: ProverGapFacts = NO_FACTS


class PipelineFacts(_Limits):
    """Everything cuzk's log says about its pipeline, fed one event at a time."""

    def __init__(self, max_parallel_synthesis: int | None = None) -> None:
        self.max_parallel_synthesis = max_parallel_synthesis
        #: A cuzk line was fed: only then can the log say anything about a gap.
        self.seen = False
        #: A `/status` snapshot was fed.
        self.status_seen = False
        #: A restart was said by a reading of a process on a GPU (a new cuzk pid, or a process
        #: of any name replaced by a new pid of its name: `gpu_pids`): then a gap has something
        #: to be told (`CuzkGap.has_evidence`) with no line or snapshot read.
        self.restart_seen = False
        #: The pids read on each GPU, and each process replaced by a new pid of its name
        #: (`gapwatch.core.gpu_pids`): a gap whose idle stretch holds one is the restart's
        #: (`log_view`), whatever the process's name (it is counted as cuzk's restart only
        #: under cuzk's name: `RestartWatch.feed_process`).
        self.gpu_pids = GpuPids()
        self.synth_workers: int | None = None
        self.budget_total_bytes: int | None = None
        self.gpu_workers_per_device: int | None = None
        #: The thread pools the daemon's start logged (`PipelineView.gpu_threads`), and whether
        #: its gpu_threads line came since the last rayon line (`_threads`).
        self.gpu_threads: int | None = None
        self.rayon_threads: int | None = None
        self._gpu_threads_said = False
        #: `initializing GPU workers num_gpus` (engine.rs:1339): how many GPUs its workers
        #: drive (a worker's hold of no known GPU is the gap's where it is one).
        self.num_gpus: int | None = None
        #: Which partition each GPU worker holds (`gapwatch.cuzk.gpu_workers`): a queued
        #: partition waits for a worker where every worker of its GPU holds one.
        self.holds = WorkerHolds()
        #: Whether the first daemon's run has its pipeline on (`pipeline_enabled`,
        #: `pipeline_off_by_workers`).
        self.mode = PipelineMode()
        self.pool = PoolState()
        self.pool_seen = False
        #: The host's memory readings, told each pool failure line (`PoolState.host`).
        self.host_memory = HostMemory()
        #: Each run's first wave of each circuit type (`gapwatch.cuzk.first_wave`).
        self.first_waves = WavesByDaemon()
        #: `pool_said`'s words, the pool state they were said of and the index of its churn line
        #: (see there).
        self._pool_words: tuple[tuple[object, ...], list[str], int | None] | None = None
        #: The pool churning before it fails (`gapwatch.cuzk.pool_churn`: the same rule the
        #: watcher's warning says).
        self.churn = PoolChurn()
        self._pool_freed = 0
        self.pacer: dict[str, FieldValue] | None = None
        self.pacer_t_s: float | None = None
        self.srs_loads: deque[SrsLoad] = deque(maxlen=HISTORY)
        self.srs_evictions: deque[tuple[float, str]] = deque(maxlen=HISTORY)
        self.budget_waits: deque[tuple[float, dict[str, FieldValue]]] = deque(maxlen=HISTORY)
        #: This run's latest request over the whole budget: it blocks until its process ends
        #: (gaps then are explained by it), so it is let go at any sign of that (`_restarted`,
        #: `_budget_total`); and the latest of any run (what the advice sizes).
        self.over_budget: OverBudget | None = None
        self.over_budget_said: OverBudget | None = None
        #: What read would show a restart: INFO lines (cuzk's start lines are INFO, so a log
        #: kept at `warn` has none) or `/status` uptimes (going back). With neither, a request
        #: over the budget's words say a restart since it may have gone unseen.
        self._info_read = False
        self._uptime_read = False
        #: Partitions that waited in the GPU queue, the latest `HISTORY`: each daemon's
        #: partitions queued are its `DaemonRun.queued`.
        self.queue_waits: deque[QueueWait] = deque(maxlen=HISTORY)
        #: Each daemon's partition syntheses in flight and ended (`SynthFlight`; index: the
        #: daemon, `RestartsByDaemon.daemon_of`), and each request's `job enqueued` (when, its
        #: job, its daemon): what a gap's start found (`_empty_start_view`), asked of the
        #: daemons of the gap's GPU only (another daemon's synthesis feeds another GPU).
        self.daemon_runs: list[DaemonRun] = [DaemonRun()]
        #: stream -> its daemon's `DaemonRun` (`_run_of`), valid while the streams' daemons
        #: are as at `_runs_version` (`Daemons.version`); at most `MAX_STREAMS`.
        self._run_by_stream: dict[str, DaemonRun] = {}
        self._runs_version = 0
        self.enqueued: deque[tuple[float, str | None, int]] = deque(maxlen=HISTORY)
        self.mono: OrderedDict[str, _Mono] = OrderedDict()
        self.mono_done: deque[_Mono] = deque(maxlen=HISTORY)
        #: (stream, worker) -> the monolithic job it picked up last (`_worker_moved_on`), and
        #: the jobs ended there whose own end line may still come (`_sync_done`): the latest
        #: `HISTORY` of each.
        self._on_worker: OrderedDict[tuple[str, int], str] = OrderedDict()
        self._ends_unread: OrderedDict[str, _Mono] = OrderedDict()
        #: Failure lines naming no job that several monolithic jobs in flight could be the
        #: failure of: none of them is ended by it (`_monolithic_failed`), each is marked.
        self.mono_failures_unplaced = 0
        #: Per prover: its SRS list was seen non-empty; since when it is empty; the spans it
        #: was empty (prover, from, until).
        self._srs_listed: dict[str, bool] = {}
        self._srs_empty_since: dict[str, float] = {}
        self.srs_empty: deque[tuple[str, float, float]] = deque(maxlen=HISTORY)
        #: Failure lines and panics (time, words): a gap after one says so in its hint.
        self.errors: deque[tuple[float, str]] = deque(maxlen=HISTORY)
        #: `starting cuzk engine` lines read (each starts a run: in-flight state is reset).
        self.runs = 0
        #: The restarts (`gapwatch.cuzk.restarts`): the gaps that span one are its. Its
        #: router says each stream's daemon (`_run_of`).
        self.restarts = RestartsByDaemon()
        self._router = self.restarts.router
        #: Count and size fields that were none (`synth_worker_count=-5`): dropped (None,
        #: never 0), the latest such value of each while no good one replaced it (the view's
        #: `dropped`, which the advice names).
        self.dropped: dict[str, int | float] = {}
        #: How many figures were dropped so, in all (the view's `figures_dropped`).
        self.figures_dropped = 0
        #: The latest time of a cuzk line read (TIMELINE or tracing; None: none), and when the
        #: data ended (`end`; None: it goes on, as live): a partition queued and never picked
        #: up is said so only once nothing more will be read (`_left_words`).
        self.last_line_s: float | None = None
        self.data_end_s: float | None = None

    # -- feeding -------------------------------------------------------------------------------

    def end(self, t_wall_s: float) -> None:
        """The data ended at `t_wall_s` (a recording or a replay read to its end: the
        detector's `finish`): nothing more will be read, so a partition still queued for the
        GPU was never picked up in what was."""
        self.data_end_s = t_wall_s

    def feed(self, ev: LogEvent) -> None:
        """Take one parsed log event (with its fields: before evidence slims it)."""
        kind = ev.kind
        if kind == "timeline" or kind == "tracing":
            self.seen = True
            last = self.last_line_s
            if last is None or ev.t_wall_s > last:
                self.last_line_s = ev.t_wall_s
            restarted = self.restarts.feed_log(ev)
            if restarted:  # every event comes here: no call for the many that say nothing
                self._restarted(restarted, self.restarts.daemon_of(ev.stream))
            if ev.worker is not None:  # (most events name none: no call for them)
                self.holds.feed(ev, self.restarts.daemon_of(ev.stream))
            if kind == "timeline":
                self._timeline(ev)
            else:
                self.churn.feed(ev)
                self._tracing(ev)
        if (kind == "tracing" and ev.level in ("ERROR", "WARN")) or kind == PANIC_KIND:
            if is_failure(ev):
                self.seen = True
                self.errors.append((ev.t_wall_s, failure_words(ev)))

    def _new_run(self, t_s: float) -> None:
        """`starting cuzk engine`: the daemon started (again). What was in flight in the old
        run is gone with it (cuzk keeps nothing across a restart); totals and histories stay."""
        self._drop_mono_of(0)
        self._on_worker.clear()
        self.pacer, self.pacer_t_s = None, None
        kept = [load for load in self.srs_loads if load.end_s is not None]
        self.srs_loads.clear()
        self.srs_loads.extend(kept)
        self._srs_empty_since.clear()
        self.over_budget = None  # the blocked request died with the old process
        self.runs += 1

    def _run_of(self, stream: str) -> DaemonRun:
        """The run of the daemon whose lines `stream` holds. Every partition line asks it: the
        answer is kept a stream (a dict look-up, not two calls into the router), dropped
        whenever a stream's daemon changes (`Daemons.version`)."""
        if self._runs_version != self._router.version:
            self._run_by_stream.clear()
            self._runs_version = self._router.version
        run = self._run_by_stream.get(stream)
        if run is None:
            run = self._daemon_run(self.restarts.daemon_of(stream))
            if len(self._run_by_stream) >= MAX_STREAMS:
                self._run_by_stream.clear()
            self._run_by_stream[stream] = run
        return run

    def _daemon_run(self, d: int) -> DaemonRun:
        """Daemon `d`'s run (one made as each is first read, at most `MAX_DAEMONS`: `Daemons`
        caps the index)."""
        runs = self.daemon_runs
        while len(runs) <= d:
            runs.append(DaemonRun())
        return runs[d]

    def _runs_of_gpu(self, gpu: int) -> list[DaemonRun]:
        """The runs of the daemons whose lines named `gpu` (every daemon where none did)."""
        runs = self.daemon_runs
        return [runs[d] for d in self.restarts.of_gpu(gpu) if d < len(runs)]

    def _restarted(self, events: list[ProverEvent], daemon: int | None,
                   old_alive_s: float | None = None) -> None:
        """The restarts `RestartWatch` said of `daemon` (its start lines, `/status` uptime
        going back, a new pid; None: not known whose, every daemon's): the new run's pool is
        empty, its re-pins no churn of the old one's frees, and a request over the budget made
        before one died with its process. `old_alive_s`: where the restart's time is later
        than the new run's start (a new pid's first reading), the latest the old run was known
        alive (its pid's last reading alive, `gpu_pids.Replaced.alive_s`): only what was
        queued by then died with it."""
        if not events:
            return
        restarts = [e for e in events if e.kind == "restart"]
        if restarts:
            self.churn.restart()
            for e in restarts:  # what its GPU workers held died with its old run
                self.holds.restarted(daemon, e.t_wall_s)
            # Until the new run's start line is read, no failure naming no job is placed; what
            # the old run had queued for the GPU died with it (a restart no start line told:
            # INFO filtered out, /status uptime or a new pid its only sign).
            for run in (self.daemon_runs if daemon is None else [self._daemon_run(daemon)]):
                run.run.lost()
                for e in restarts:
                    run.forget_before(e.t_wall_s if old_alive_s is None
                                      else min(e.t_wall_s, old_alive_s))
        over = self.over_budget
        if over is not None and any(e.t_wall_s > over.t_s for e in restarts):
            self.over_budget = None

    def _budget_total(self, t_s: float, total_gib: float | None) -> None:
        """A figure of cuzk's budget total read at `t_s` (`/status` memory.total_bytes, a budget
        line's `total_gib`). The total is fixed for a process's life (memory.rs: `MemoryBudget::new`
        sets it, nothing changes it), so another total than the one a request over the budget
        was refused by is another process: that request is gone."""
        over = self.over_budget
        if (over is None or over.total_gib is None or total_gib is None or t_s <= over.t_s
                or not math.isfinite(total_gib)):
            return
        if math.floor(total_gib) != math.floor(over.total_gib):
            self.over_budget = None

    def error_words(self, start_s: float, end_s: float) -> str:
        """The hint's words for a gap over [start_s, end_s] that follows a prover error (the
        latest within `ERROR_REACH_S` before its start, or during it), else ""."""
        for t, words in reversed(self.errors):
            if t <= end_s and t >= start_s - ERROR_REACH_S:
                return f"after a prover error at {_hms(t)}: {words}"
            if t < start_s - ERROR_REACH_S:
                break
        return ""

    def _timeline(self, ev: LogEvent) -> None:
        name, job, part, t = ev.name, ev.job_id, ev.partition, ev.t_wall_s
        if job is None:
            return
        if name == "GPU_PICKUP" and self._on_worker:
            self._worker_moved_on(ev, job)
        if part is not None:
            key = (job, part)
            if name == "SYNTH_START":
                self._run_of(ev.stream).synth.started(key, t)
            elif name == "SYNTH_END":
                self._run_of(ev.stream).synth.done(key, t)
            elif name == "GPU_QUEUE":
                run = self._run_of(ev.stream)
                synth = run.synth
                if key not in synth.ended_keys:  # its SYNTH_END not read
                    synth.done(key, t)
                run.queue(key, t)
            elif name == "GPU_PICKUP":
                since = self._run_of(ev.stream).picked(key, t)
                if since is not None:
                    self.queue_waits.append(QueueWait(job, part, since, t, ev.gpu,
                                                      self.restarts.daemon_of(ev.stream)))
            return
        # No partition: a monolithic job (engine.rs 2665, 2745, 2848, 3023, 3196).
        fields = ev.fields
        entry = self.mono.get(job)
        if name == "SYNTH_START" and "kind" in fields:
            entry = self.mono[job] = _Mono(job, str(fields["kind"]), synth_start_s=t,
                                           stream=ev.stream,
                                           daemon=self.restarts.daemon_of(ev.stream))
            self._drop_oldest_mono()
            return
        if entry is None:
            if name in ("GPU_QUEUE", "GPU_PICKUP", "GPU_START") and (
                    "monolithic" in fields or ev.worker is not None):
                entry = self.mono[job] = _Mono(job, "monolithic", stream=ev.stream,
                                               daemon=self.restarts.daemon_of(ev.stream))
            else:
                return
        if name == "SYNTH_END":
            entry.synth_end_s = t
        elif name == "GPU_PICKUP":
            entry.pickup_s, entry.worker, entry.gpu = t, ev.worker, ev.gpu
            if ev.worker is not None:  # one daemon's stderr: its worker ids are its own
                keep_latest(self._on_worker, (ev.stream, ev.worker), job, HISTORY)
        elif name == "GPU_START":
            entry.gpu_start_s = t
        elif name == "GPU_END":
            self._mono_ended(entry, t)

    def _tracing(self, ev: LogEvent) -> None:
        msg, f, t = ev.name, ev.fields, ev.t_wall_s
        # its lines are not all in _TRACING_MESSAGES; its daemon the restarts' router's
        self.first_waves.feed_of(self._router.of_stream(ev.stream), ev)
        if ev.level == "INFO":
            self._info_read = True
        if msg not in _TRACING_MESSAGES and not msg.startswith(_POOL_PREFIXES):
            return  # most lines (a partition's synthesis, its GPU timing): one look, not 15
        if msg in _DAEMON_RUN_LINES:  # each daemon's own, whichever it is
            self._daemon_run_line(ev)
        if msg in _RUN_SETTINGS and self.restarts.of_another(ev.stream):
            # Another daemon's settings (a PoSt-only cuzk beside this one): the view, the
            # advice and the rules below read the first daemon's (docs/post.md, "Two daemons");
            # its start, or restart, leaves the first's work in flight as it is.
            return
        if msg.startswith(_POOL_PREFIXES) or msg == POOL_INITIALIZED:
            if msg.startswith(POOL_CHECKOUT_FAILED) or HOST_ALLOC_FAILED in msg:
                self._failure_run(ev.stream)
            self._pool(msg, f, t, ev.stream)
        elif msg == STARTING_PIPELINE:
            self.synth_workers = self._count(f, "synth_worker_count")
        elif msg in (GPU_THREADS_MESSAGE, RAYON_THREADS_MESSAGE):
            self._threads(msg, f)
        elif msg == INIT_WORKERS:
            self.gpu_workers_per_device = self._count(f, "gpu_workers_per_device")
            self.num_gpus = self._count(f, "num_gpus")
        elif msg == BUDGET_INITIALIZED:
            gib = self._size_count(f, "total_budget_gib")
            self.budget_total_bytes = gib * GIB if gib is not None else None
            self._budget_total(t, gib)
        elif msg == ANCHOR_MESSAGE:
            self._new_run(t)
            self.mode.started(f)
        elif msg == PACER_STATUS:
            self.pacer = {k: v for k, v in f.items() if k not in ("target", "spans")}
            self.pacer_t_s = t
        elif msg in (BUDGET_WAIT, BUDGET_OVER, BUDGET_ACQUIRED):
            self._budget_line(ev)
        elif msg == SRS_LOADING_MESSAGE:
            self.srs_loads.append(SrsLoad(str(f.get("circuit_id", "?")), t))
        elif msg == SRS_LOADED_MESSAGE:
            circuit = str(f.get("circuit_id", "?"))
            ms = self._count(f, "elapsed_ms")
            for load in reversed(self.srs_loads):
                if load.circuit == circuit and load.end_s is None:
                    load.end_s, load.elapsed_ms = t, ms
                    break
            else:  # the start was before the log we read: place it from elapsed_ms
                self.srs_loads.append(SrsLoad(circuit, t - (ms or 0) / 1000, t, ms))
        elif msg == SRS_EVICTED_MESSAGE:
            self.srs_evictions.append((t, str(f.get("circuit_id", "?"))))
        elif msg == PROCESSING_BATCH_MESSAGE:
            self._batch_sent(self._run_of(ev.stream), t, f)
        elif msg == JOB_ENQUEUED_MESSAGE:
            self.enqueued.append((t, ev.job_id, self.restarts.daemon_of(ev.stream)))
            run = self._run_of(ev.stream)
            if run.batch_first_s is None and f.get("proof_kind") in _BATCHED_KINDS:
                run.batch_first_s = t
        elif msg in _SEQ_MESSAGES:
            seq = count_field(f.get("job_seq"))
            if ev.job_id is not None and seq is not None:
                self._run_of(ev.stream).sequenced(ev.job_id, seq, t)
        elif msg in _MONOLITHIC_LINES:
            self._monolithic_worker(ev)
        elif msg in _PARTITION_SYNTH_FAILED:
            if ev.job_id is not None and ev.partition is not None:
                self._run_of(ev.stream).synth.done((ev.job_id, ev.partition), t)
        elif msg in _STEP_FAILED:
            self._monolithic_failed(ev)
        elif msg in _SYNC_DONE:
            self._sync_done(ev)

    def _daemon_run_line(self, ev: LogEvent) -> None:
        """A line of a daemon's run that is its own whichever daemon it is
        (`_DAEMON_RUN_LINES`): its start line, its dispatcher's and its pacer's settings."""
        run, msg = self._run_of(ev.stream), ev.name
        if msg == ANCHOR_MESSAGE:  # its daemon's work in flight died with its old run
            run.new_run(ev.stream, ev.t_wall_s)
            d = self.restarts.daemon_of(ev.stream)
            self.holds.restarted(d, ev.t_wall_s)
            if d != 0:  # the first daemon's: `_new_run`, after its run's settings are read
                self._drop_mono_of(d)
        elif msg == DISPATCHER_MESSAGE:
            run.batch_wait_ms = self._count(ev.fields, "max_batch_wait_ms")
        elif msg == PACER_ENABLED:
            run.pacer_target = self._count(ev.fields, "gpu_queue_target")

    def _drop_mono_of(self, daemon: int) -> None:
        """Daemon `daemon`'s monolithic jobs in flight died with its old run (another
        daemon's go on)."""
        for job in [m.job for m in self.mono.values() if m.daemon == daemon]:
            del self.mono[job]

    def _mono_ended(self, entry: _Mono, t_s: float, unread: bool = False) -> None:
        """A monolithic job ended at `t_s` (its GPU_END, its worker's end line, its failure;
        `unread`: its worker's next pickup, by which it had ended): no longer in flight; kept
        for the gaps it spans."""
        entry.end_s, entry.end_unread = t_s, unread
        self.mono.pop(entry.job, None)
        self.mono_done.append(entry)
        if unread:
            keep_latest(self._ends_unread, entry.job, entry, HISTORY)

    def _sync_done(self, ev: LogEvent) -> None:
        """A line that ends a pipelined monolithic job's GPU step (`_SYNC_DONE`: its completion
        line, engine.rs:839-846, or a batch's, 725-731, 817) inside its GPU worker's span, which
        names it (`gpu_worker{job_id partition=None}`, 3005-3012). cuzk writes it there when it
        proves in one synchronous call (`CUZK_DISABLE_SPLIT_PROVE=1`, 3078-3118:
        `process_monolithic_result` at 3111), which writes no GPU_START and no GPU_END: this is
        the job's end (without it, it stayed in flight for good and every later gap of its GPU
        waited on it). Outside the span (the split prove's finalizer, 3257, after its GPU_END)
        the line names no job and ends nothing here. A job already ended by its worker's next
        pickup (`_worker_moved_on`: cuzk's stdout read after its stderr) takes this line's
        time, its own end."""
        job = ev.job_id
        if job is None or ev.partition is not None or ev.fields.get("spans") != GPU_WORKER_SPAN:
            return
        entry = self.mono.get(job)
        if entry is not None:
            if not entry.one_call:
                self._mono_ended(entry, ev.t_wall_s)
            return
        self._ended_late(job, ev.t_wall_s)

    def _ended_late(self, job: str, t_s: float) -> None:
        """A line of `job`'s own end (its completion or failure in its GPU worker's span) read
        after its worker's next pickup ended it, its end bounded (`_worker_moved_on`): it ended
        at `t_s`."""
        bounded = self._ends_unread.pop(job, None)
        if bounded is not None:
            bounded.end_s, bounded.end_unread = t_s, False

    def _worker_moved_on(self, ev: LogEvent, job: str) -> None:
        """A GPU worker picked up `job` (GPU_PICKUP, engine.rs:3023): a worker proves one job
        at a time. The pipelined monolithic job it picked up before, with no GPU_START read,
        was proved in one synchronous call (`CUZK_DISABLE_SPLIT_PROVE=1`, 3078-3118: the worker
        loops only after its result is processed, 3111-3118; the split prove writes GPU_START,
        3131, to the same stream before the worker can loop), so it had ended by now: where its
        completion line was not read (cuzk's stdout not followed, or not yet), it ends here,
        its end bounded, not read (`_Mono.end_unread`). One with a GPU_START read is in its
        finalizer still (its GPU_END ends it). Worker ids are one daemon's: the same stream's
        pickups only."""
        w = ev.worker
        if w is None:
            return
        held = self._on_worker.pop((ev.stream, w), None)
        entry = self.mono.get(held) if held is not None and held != job else None
        if (entry is not None and not entry.one_call and entry.worker == w
                and entry.gpu_start_s is None):
            self._mono_ended(entry, ev.t_wall_s, unread=True)

    def _monolithic_failed(self, ev: LogEvent) -> None:
        """A failure line in place of a step's end (`_STEP_FAILED`, ERROR): the pipelined
        monolithic job whose step failed gets no GPU_END (engine.rs:2853-2882, 3278-3318, 977,
        998), so without this it stayed in flight and every later gap waited on it. A line in
        its GPU worker's span names the job (`gpu_worker{job_id partition=None}`, 3005-3012): it
        ends that one. A monolithic synthesis's `synthesis failed` / `synthesis task panicked`
        (2855, 2870, span `synth_single{proof_kind}` or a batch's) and the split prove
        finalizer's `GPU proving failed` (3257, no span) name no job: it ends the one job that
        can be its (synthesising, or on a GPU, by then; of the line's kind where its span says
        one), where the line and that job's were read on the run's start-line stream (every
        line written before the failure read before it: `gapwatch.cuzk.unnamed_failure`, the
        rule `PostTracker` follows; read apart, a job picked up before it may be unread), and
        otherwise, or where several can, none, by no guess: each is marked and the line
        counted (`mono_failures_unplaced`). A partition's (`partition=Some(..)` in the GPU
        worker's span; its own messages, `partition ... failed`, are not read here) is a
        partitioned job's, never listed here."""
        if ev.level != "ERROR" or ev.partition is not None:
            return
        if ev.job_id is not None:
            named = self.mono.get(ev.job_id)
            if named is not None and not named.one_call:
                self._mono_ended(named, ev.t_wall_s)
            elif named is None:
                self._ended_late(ev.job_id, ev.t_wall_s)
            return
        synth, t = ev.name in _SYNTH_FAILED, ev.t_wall_s
        kind = ev.fields.get("proof_kind")
        d = self.restarts.daemon_of(ev.stream)  # another daemon's job is not its failure
        could = [m for m in self.mono.values() if m.daemon == d
                 and m.could_have_failed(synth, t)
                 and (not isinstance(kind, str) or m.kind == kind)]
        if len(could) == 1 and self._daemon_run(d).run.in_order(ev.stream, could[0].stream):
            self._mono_ended(could[0], t)
            return
        if could:
            self.mono_failures_unplaced += 1
            for m in could:
                if m.unplaced_failure is None:
                    m.unplaced_failure = (t, ev.name, len(could))

    def _monolithic_worker(self, ev: LogEvent) -> None:
        """A monolithic worker's line (the pipeline off): the proof it took, proved in one call
        with the GPU idle through its synthesis (engine.rs:3397-3440), or its end. /status lists
        none of it (engine.rs:3400-3405), so without this a gap in such a proof read "no work".
        cuzk runs these workers only with the pipeline off (engine.rs:1333-1337, 3362): where
        this run's start line said it on, the line is not this run's and is passed over."""
        if self.pipeline_enabled is True or not monolithic_worker_line(ev):
            return
        if self.restarts.of_another(ev.stream):
            return  # another daemon's pipeline off says nothing of the first's
        self.mode.worker_line()
        job, t = ev.job_id, ev.t_wall_s
        if job is None:
            return
        if ev.name in _MONOLITHIC_ENDS:
            entry = self.mono.get(job)
            if entry is not None:
                self._mono_ended(entry, t)
            return
        for held in [m for m in self.mono.values()
                     if m.one_call and m.gpu == ev.gpu and m.worker == ev.worker]:
            # A worker proves one proof at a time: its end line was lost.
            del self.mono[held.job]
        kind = ev.fields.get("proof_kind")
        self.mono[job] = _Mono(job, str(kind) if kind is not None else "monolithic",
                               pickup_s=t, worker=ev.worker, gpu=ev.gpu, one_call=True,
                               daemon=self.restarts.daemon_of(ev.stream))
        self._drop_oldest_mono()

    def _drop_oldest_mono(self) -> None:
        """`mono` held to `HISTORY`; one dropped in flight may be a failure's other candidate:
        no failure naming no job is placed for the rest of its daemon's run (`DaemonRun.run`)."""
        while len(self.mono) > HISTORY:
            _, old = self.mono.popitem(last=False)
            if old.end_s is None:
                self._daemon_run(old.daemon).run.lost()

    def _batch_sent(self, run: DaemonRun, t_s: float, f: dict[str, FieldValue]) -> None:
        """A batch of `run`'s daemon sent to synthesis at `t_s`: in span `synth_timeout_flush`
        it is sent because `max_batch_wait_ms` ran out on its first request (batch_collector.rs:
        145-156, checked when the timer set to that wait fires, engine.rs:1984-2012), so cuzk
        held that request for that wait, listing it nowhere in /status: from its `job enqueued`
        where read, else from the wait before the line. Not up to the line: with
        `synthesis_concurrency` > 1 it is written once a synthesis slot is free (engine.rs:1941,
        2154), and a wait for a slot is the GPU waiting on synthesis, not on the batch."""
        first_s, run.batch_first_s = run.batch_first_s, None
        wait_ms = run.batch_wait_ms
        if wait_ms is None or wait_ms <= 0 or TIMEOUT_FLUSH_SPAN not in str(f.get("spans", "")):
            return
        wait_s = wait_ms / 1000
        start_s = first_s if first_s is not None and first_s <= t_s else t_s - wait_s
        run.batch_holds.append((start_s, min(start_s + wait_s, t_s)))

    def _budget_line(self, ev: LogEvent) -> None:
        """A line of memory.rs's acquire: its WARN over the whole budget, a wait, a grant."""
        msg, f, t = ev.name, ev.fields, ev.t_wall_s
        self._budget_total(t, _num(f.get("total_gib")))
        if msg == BUDGET_ACQUIRED:
            return
        needed, total = _num(f.get("needed_gib")), _num(f.get("total_gib"))
        if msg == BUDGET_OVER or (self.over_budget is None and needed is not None
                                  and total is not None and needed > total):
            # A wait over the whole total is such a request too, its WARN not read (the log
            # began after it): memory.rs WARNs once, then logs a wait at every wake-up.
            self.over_budget = self.over_budget_said = over_budget_of(ev)
        self.budget_waits.append((t, {k: f[k] for k in ("needed_gib", "available_gib",
                                                       "total_gib", "amount_gib") if k in f}))

    def _threads(self, msg: str, f: dict[str, FieldValue]) -> None:
        """The daemon's thread pools from its start: `gpu_threads=N` where logged; where its
        rayon line (main.rs:111, every start writes it) comes with no gpu_threads line before
        it (main.rs:85-91, written only for a value > 0), the setting is 0."""
        if msg == GPU_THREADS_MESSAGE:
            self.gpu_threads = self._count(f, "gpu_threads")
            self._gpu_threads_said = True
            return
        self.rayon_threads = self._count(f, "rayon_threads")
        if not self._gpu_threads_said:
            self.gpu_threads = 0
        self._gpu_threads_said = False

    def _count(self, f: dict[str, FieldValue], key: str) -> int | None:
        """A count or size of cuzk's lines (a Rust unsigned integer): a negative one is no
        count, dropped (None) and kept in `dropped`."""
        value = f.get(key)
        n = count_field(value)
        self._judged(key, n, value if is_bad_count(value) else None)
        return n

    def _gib(self, f: dict[str, FieldValue], key: str) -> float | None:
        """A size in GiB of cuzk's lines (an `f64` of bytes it counts): one no GPU box can
        have (negative; above 0 and below a byte, `size_gib=5e-324`; above 1 PiB,
        `pool_total_gib=1e300`: `values.size_field`) is no size, dropped as a negative count
        is (`total_gib=-20` took the pool's size below zero; `5e-324` made the pinned-pool
        advice's steps infinite)."""
        n = _num(f.get(key))
        good = size_field(n)
        self._judged(key, good, n if good is None else None)
        return good

    def _size_count(self, f: dict[str, FieldValue], key: str) -> int | None:
        """A whole number of GiB (`total_budget_gib`, a Rust `u64`): a count (`_count`) that
        is also a size some box can have (`values.size_field`), else dropped as either is."""
        value = f.get(key)
        n = count_field(value)
        good = n if n is not None and size_field(n) is not None else None
        self._judged(key, good, value if good is None and type(value) is int else None)
        return good

    def _buffer_constraints(self, f: dict[str, FieldValue]) -> int | None:
        """A failed checkout's `num_constraints` where its a/b/c buffer (x 32 B) is a size
        some box can have (`values.size_field`); else dropped as a bad size is."""
        value = f.get("num_constraints")
        n = count_field(value)
        good = n if n is not None and size_field(n * SCALAR_BYTES / GIB) is not None else None
        self._judged("num_constraints", good,
                     value if good is None and type(value) is int else None)
        return good

    def _judged(self, key: str, good: float | None, bad: float | None) -> None:
        """`dropped` after a field was read: a good value lets go of a bad one before it, a
        bad one is kept (its latest) and counted (`figures_dropped`)."""
        if good is not None:
            self.dropped.pop(key, None)
        elif bad is not None:
            self.dropped[key] = bad
            self.figures_dropped += 1

    def _pool(self, msg: str, f: dict[str, FieldValue], t: float, stream: str) -> None:
        pool = self.pool
        self.pool_seen = True
        if msg == POOL_INITIALIZED:
            # engine.rs: a new pool is empty.
            pool.total_gib, pool.buffers, pool.free = 0.0, 0, 0
            self._pool_freed = 0
        elif msg == POOL_ALLOCATED_MESSAGE:
            pool.total_gib = self._gib(f, "total_gib")
            total = self._count(f, "total_buffers")
            if total is not None:
                pool.buffers = max(0, total - self._pool_freed)
        elif msg == POOL_REUSE:
            pool.free = self._count(f, "free_remaining")
        elif msg == POOL_CHECKIN:
            if pool.free is not None:
                pool.free += 1
        elif msg == POOL_FREED:
            gib = self._gib(f, "freed_gib")
            if pool.total_gib is not None and gib is not None:
                pool.total_gib = max(0.0, pool.total_gib - gib)
            if pool.free is not None:
                pool.free = max(0, pool.free - 1)
            self._pool_freed += 1
            if pool.buffers is not None:
                pool.buffers = max(0, pool.buffers - 1)
        else:
            self._pool_failure(msg, f, t, stream)

    def _failure_run(self, stream: str) -> None:
        """A failure line's own run's figures, kept with it (`PoolState.failure_workers`): the
        settings read as of now, the latest start before it, where it is the first daemon's
        (the only one whose settings are read); where another daemon's, none, and why."""
        pool = self.pool
        if self.restarts.of_another(stream):
            pool.failure_workers = pool.failure_budget_bytes = None
            pool.failure_apart = (
                f"the failure is another daemon's (its lines in {stream or 'a stream'}), and "
                "only the first daemon's start is read for synth_worker_count and the budget "
                "(docs/post.md, 'Two daemons')")
            return
        pool.failure_workers, pool.failure_budget_bytes = (self.synth_workers,
                                                           self.budget_total_bytes)
        pool.failure_apart = None

    def _pool_failure(self, msg: str, f: dict[str, FieldValue], t: float, stream: str) -> None:
        """A pool line that is not about its size: a failed checkout or cudaHostAlloc, or a
        first synthesis (unpinned by design). A failed pin's lines are told to the host's
        readings (`HostMemory`), which match the pin once, however many of its lines were read."""
        pool = self.pool
        if msg.startswith(POOL_CHECKOUT_FAILED):
            pool.checkout_failed += 1
            pool.last_failure = {k: f[k] for k in ("pool_free", "pool_total_gib",
                                                   "num_constraints") if k in f}
            pool.last_failure_s = t
            self.host_memory.checkout_failed(t, stream)
            free = self._count(f, "pool_free")
            if free is not None:
                pool.free = free
            _checkout_failed_sizes(pool, self._buffer_constraints(f),
                                   self._gib(f, "pool_total_gib"))
        elif HOST_ALLOC_FAILED in msg:
            # pinned_pool.rs writes two lines per failure (`cudaHostAlloc failed` with the
            # CUDA error, then `pinned pool: cudaHostAlloc failed`): one failure.
            if "cuda_err" in f or not msg.startswith("pinned pool"):
                pool.alloc_failed += 1
                pool.last_failure = {**pool.last_failure, **{
                    k: f[k] for k in ("cuda_err", "size_gib") if k in f}}
                pool.last_failure_s = t
                pool.cuda_err = f.get("cuda_err", pool.cuda_err)
                self.host_memory.alloc_failed(t, stream)
            size = self._gib(f, "size_gib")
            if size:
                pool.buffer_gib, pool.buffer_constraints = size, None
        elif msg.startswith(NO_CAPACITY_HINT_MESSAGE):
            pool.first_syntheses += 1

    def feed_host(self, sample: HostSample) -> None:
        """Take a host sample: its memory readings, which the pool's failure lines are matched
        with (`gapwatch.cuzk.pin_host`: was RAM short when pinning failed?)."""
        self.host_memory.feed(sample)

    def feed_process(self, reading: ProcessMemory) -> None:
        """Take a reading of a process on a GPU: a new cuzk pid where another was read is a
        restart (`RestartWatch.feed_process`), the cause of the gap that spans it where no log
        line or `/status` says more (with NVML alone, the watcher said the restart and no gap
        was its); a process of any name replaced by a new pid of its name is a restart for the
        gaps whose idle stretch holds it (`gpu_pids`, `log_view`)."""
        replaced = self.gpu_pids.feed(reading)
        if replaced is not None:
            self.restart_seen = True
        restarted = self.restarts.feed_process(reading)
        if restarted:
            self.restart_seen = True
            # The restart dates from the new pid's first reading, at its first CUDA work: the
            # new run may have queued partitions before it. The old pid's last reading alive
            # (`gpu_pids.Replaced`, this same reading's) bounds the old run's queue.
            self._restarted(restarted, self.restarts.fed_daemon,
                            replaced.alive_s if replaced is not None else None)

    def feed_status(self, status: ProverStatus) -> None:
        """Take a `/status` snapshot: an SRS list that goes empty after listing entries means
        the SRS manager's mutex is held (engine.rs `detailed_status` skips its entries then:
        a load, srs_manager.rs `ensure_loaded`, or an eviction)."""
        self.status_seen = True
        self._restarted(self.restarts.feed_status(status), self.restarts.fed_daemon)
        if status.uptime_s is not None:
            self._uptime_read = True
        if status.memory_total_bytes is not None:
            self._budget_total(status.t_wall_s, status.memory_total_bytes / GIB)
        srs = status.srs_circuits
        if srs is None:
            return
        prover, t = status.prover, status.t_wall_s
        if srs:
            since = self._srs_empty_since.pop(prover, None)
            if since is not None:
                self.srs_empty.append((prover, since, t))
            # Per prover name, bounded: a recording may name any number of provers.
            keep_latest(self._srs_listed, prover, True, MAX_PROVERS)
        elif self._srs_listed.get(prover) and prover not in self._srs_empty_since:
            keep_latest(self._srs_empty_since, prover, t, MAX_PROVERS)

    def srs_busy_words(self, start_s: float, end_s: float) -> str | None:
        """The words for an SRS list gone empty over [start_s, end_s] (`feed_status`), or None."""
        spans = [*((p, t0, None) for p, t0 in self._srs_empty_since.items()),
                 *reversed(self.srs_empty)]
        for prover, t0, t1 in spans:
            if t0 <= end_s and (t1 is None or t1 >= start_s):
                until = f", listed again at {_hms(t1)}" if t1 is not None else ""
                return (f"{prover}: allocations.srs went empty at {_hms(t0)}{until}: cuzk's SRS "
                        "manager was busy, a load or an eviction (engine.rs detailed_status "
                        "skips its entries while its mutex is held)")
        return None

    # -- asking --------------------------------------------------------------------------------

    @property
    def pipeline_enabled(self) -> bool | None:
        """The first daemon's run has its pipeline on (None: not known; `PipelineMode`)."""
        return self.mode.enabled

    @property
    def pipeline_off_by_workers(self) -> bool:
        """Its pipeline known off by its monolithic workers' lines alone (`PipelineMode`)."""
        return self.mode.off_by_workers

    @property
    def pacer_target(self) -> int | None:
        """The first daemon's pacer target, the one advised on: its `DaemonRun`'s, the one
        home of each daemon's (its `GPU queue target dispatch pacer enabled` line)."""
        return self.daemon_runs[0].pacer_target

    def pacer_on_for(self, status: ProverStatus) -> bool:
        """Whether the dispatch pacer of the daemon that answered `status` is on: its own
        `DaemonRun`'s (`Daemons.of_status`: the one whose `status HTTP server listening addr=`
        has the polled port), the first daemon's where whose it is is not known. A PoSt-only
        cuzk beside a PoRep one pacing its GPU paces nothing of its own GPU's."""
        d = self._router.of_status(status)
        runs = self.daemon_runs
        return (runs[d] if d is not None and d < len(runs) else runs[0]).pacer_on

    def view(self) -> PipelineView:
        pool = self.pool
        return PipelineView(
            synth_workers=self.synth_workers, budget_total_bytes=self.budget_total_bytes,
            gpu_workers_per_device=self.gpu_workers_per_device,
            pipeline_enabled=self.pipeline_enabled,
            pipeline_off_by_workers=self.pipeline_off_by_workers,
            pool=(replace(pool, last_failure=dict(pool.last_failure),
                          host=self.host_memory.at_failures) if self.pool_seen else None),
            pacer_target=self.pacer_target, pacer=dict(self.pacer) if self.pacer else None,
            srs_loading=tuple(load.circuit for load in self.srs_loads if load.end_s is None),
            srs_evictions=tuple(dict.fromkeys(c for _, c in self.srs_evictions)),
            queued=sum(len(run.queued) for run in self.daemon_runs),
            last_queue_wait_s=(self.queue_waits[-1].picked_s - self.queue_waits[-1].queued_s
                               if self.queue_waits else None),
            budget_waits=len(self.budget_waits), over_budget=self.over_budget_said,
            monolithic_in_flight=tuple(
                f"{m.kind} {m.job}" + (" (failed?)" if m.unplaced_failure is not None else "")
                for m in self.mono.values()),
            max_parallel_synthesis=self.max_parallel_synthesis,
            dropped=tuple(f"{k}={v}" for k, v in self.dropped.items()),
            figures_dropped=self.figures_dropped,
            first_waves=self.first_waves.waves(),
            pool_churn=self.churn.view() if self.seen else None,
            gpu_threads=self.gpu_threads, rayon_threads=self.rayon_threads,
            mono_failures_unplaced=self.mono_failures_unplaced,
        )

    def pool_evidence(self) -> list[str]:
        """The pinned pool's failures so far, in plain words (none: [])."""
        return self.pool_said().lines

    def pool_said(self) -> PoolSaid:
        """`pool_evidence`'s words, and which of them says whether the pool churned before its
        failures (a gap's `ProverGapFacts.pool_churn_line`, once placed in its evidence)."""
        pool = self.pool
        if not (pool.checkout_failed or pool.alloc_failed):
            return PoolSaid([], None)
        # Said for every pcie_starved gap (most gaps of a starved box) while the pool changes
        # far less often: the words are kept with what they were made of. `last_failure` is
        # replaced, never changed in place, and each failure also counts up.
        churn = self.churn
        state = (pool.checkout_failed, pool.alloc_failed, pool.last_failure_s,
                 id(pool.last_failure), pool.total_gib, pool.free, pool.buffers,
                 churn.spans[-1] if churn.spans else None, churn.info_kept, churn.info_read,
                 churn.failure_held_gib)
        kept = self._pool_words
        if kept is None or kept[0] != state:
            out = self._pool_words_now(pool)
            churned = self._churn_words()
            kept = self._pool_words = (state, out + churned, len(out) if churned else None)
        return PoolSaid(list(kept[1]), kept[2])

    def _churn_words(self) -> list[str]:
        """The churn that preceded the pool's failures, or that it is not known (no INFO line
        read: its lines at WARN are the failures alone), or that a pool that pinned nothing did
        not churn (INFO lines read, none of the pool's), or nothing."""
        view = self.churn.view()
        span = view.before_failure()
        if span is not None:
            return [span.failure_words()]
        unseen = view.unseen()
        return [] if unseen is None else [unseen.words]

    @staticmethod
    def _pool_words_now(pool: PoolState) -> list[str]:
        out = []
        last = " ".join(f"{k}={v}" for k, v in pool.last_failure.items())
        when = f" at {_hms(pool.last_failure_s)}" if pool.last_failure_s is not None else ""
        if pool.checkout_failed:
            out.append(f"pinned pool: {pool.checkout_failed} checkout(s) FAILED, falling back to "
                       f"pageable a/b/c (pipeline.rs); the latest{when}: {last}")
        if pool.alloc_failed:
            out.append(f"{pool.alloc_failed} cudaHostAlloc failure(s): the pool grows on demand "
                       "and is not in the memory budget, so a checkout fails only when pinning "
                       "a new buffer fails (pinned_pool.rs)")
        if pool.total_gib is not None:
            out.append(_pool_holds_words(pool.total_gib, pool.buffers, pool.free))
        return out

    def srs_load_during(self, start_s: float, end_s: float) -> SrsLoad | None:
        """An SRS load that ran during [start_s, end_s] (the latest), or None."""
        for load in reversed(self.srs_loads):
            if load.start_s <= end_s and (load.end_s is None or load.end_s >= start_s):
                return load
        return None

    def mono_during(self, start_s: float, end_s: float, gpu: int) -> _Mono | None:
        """A monolithic job of a daemon of `gpu` in flight during [start_s, end_s]:
        synthesising (any GPU of its daemon waits on it) or on a worker of `gpu`."""
        daemons = self.restarts.of_gpu(gpu)
        for m in [*self.mono.values(), *reversed(self.mono_done)]:
            if m.daemon not in daemons:
                continue  # another daemon's work feeds another GPU
            lo = m.synth_start_s if m.synth_start_s is not None else m.pickup_s
            hi = m.end_s
            if lo is None or lo > end_s or (hi is not None and hi < start_s):
                continue
            if m.one_call and m.gpu is not None and m.gpu != gpu:
                continue  # proved on another GPU's worker: this one's GPU was not its
            if m.gpu is not None and m.gpu != gpu and m.pickup_s is not None \
                    and m.pickup_s <= start_s:
                continue  # on another GPU's worker for the whole gap
            return m
        return None

    def batch_held_s(self, start_s: float, end_s: float, gpu: int
                     ) -> tuple[float, tuple[float, float] | None, int | None]:
        """How much of [start_s, end_s] the batch collector of a daemon of `gpu` held a
        request (the stretches `_batch_sent` read; one daemon's do not overlap: one batch is
        pending at a time), the latest stretch that did (None: none), and that daemon's
        `max_batch_wait_ms`. Another daemon's hold feeds another GPU; of several daemons of
        `gpu` (its lines named by none), the one that held it longest."""
        best: tuple[float, tuple[float, float] | None, int | None] = (0.0, None, None)
        for run in self._runs_of_gpu(gpu):
            held, latest = 0.0, None
            for lo, hi in run.batch_holds:
                inside = min(hi, end_s) - max(lo, start_s)
                if inside > 0:
                    held, latest = held + inside, (lo, hi)
            if held > best[0]:
                best = (held, latest, run.batch_wait_ms)
        return best

    def budget_waits_during(self, start_s: float, end_s: float
                            ) -> list[tuple[float, dict[str, FieldValue]]]:
        return [w for w in self.budget_waits if start_s <= w[0] <= end_s]

    def queued_at(self, t_s: float, gpu: int) -> int:
        """Partitions queued for the GPUs of `gpu`'s daemon (GPU_QUEUE of a daemon of it) and
        not picked up by `t_s`. One daemon has one GPU work queue, read by the workers of all
        its GPUs (engine.rs:1427, 1779): a partition waiting there was `gpu`'s to take, whichever
        GPU's worker took it; another daemon's queue is not `gpu`'s."""
        n = sum(1 for run in self._runs_of_gpu(gpu) for q in run.queued.values() if q <= t_s)
        mine = set(self.restarts.of_gpu(gpu))
        of: dict[int, bool] = {}  # a picking GPU -> whether one of its daemons is `gpu`'s
        for _, _, q, p, g, _daemon in self.queue_waits:
            if q <= t_s < p:
                if g is None:
                    n += 1
                    continue
                took = of.get(g)
                if took is None:
                    took = of[g] = not mine.isdisjoint(self.restarts.of_gpu(g))
                n += took
        return n

    def log_view(self, gpu: int, start_s: float, end_s: float, kind: str,
                 is_open: bool = False, idle_since_s: float | None = None) -> LogView:
        """What the log says about a gap of `gpu` over [start_s, end_s] (of detector `kind`;
        `is_open`: still open, `end_s` its start): the cause it alone gives, first rule that
        holds, and the facts behind it. `idle_since_s`: the GPU's last busy reading before
        the gap (before its start where holes cut its idle stretch into several gaps): a
        restart in that stretch holds the gap where its new run's first GPU work was not
        read (`RestartWatch.during`, `gpu_pids`)."""
        lo, hi = start_s - EDGE_SLACK_S, end_s + EDGE_SLACK_S
        spanned = self.restarts.during(start_s, end_s, EDGE_SLACK_S, gpu, idle_since_s)
        if spanned is not None:
            # Its SRS reload, pool and first wave are the restart's cost, said in it; its new
            # run's wait for a first job is no work, and the cause where it is most of the gap.
            return LogView(spanned.cause(), spanned.evidence(), spanned.detail(),
                           said_by=spanned.said_by, spans_restart=True)
        stretch_s = start_s if idle_since_s is None else min(start_s, idle_since_s)
        replaced = self.gpu_pids.replaced_in(gpu, stretch_s - EDGE_SLACK_S, hi)
        if replaced is not None:
            # The same rule: the gap is the restart's, said by the GPU's processes (/proc
            # alone: the process is not known to be cuzk's, its name may be any). Only under
            # cuzk's name is its advice cuzk's restart procedure (`replaced_process`).
            return LogView(RESTART_CAUSE, [replaced_evidence(replaced)], replaced.words(),
                           said_by="processes", spans_restart=True, lead=REPLACED_LEAD,
                           facts=ProverGapFacts(
                               replaced_process=not is_cuzk_process(replaced.name)))
        batch = self.batch_held_s(start_s, end_s, gpu)
        held = self._batch_wait_view(start_s, end_s, batch)
        if held is not None:
            return held
        load = self.srs_load_during(start_s, end_s)
        if load is not None:
            ms = load.elapsed_ms
            done = f"loaded after {ms / 1000:.1f} s" if ms is not None else "loaded"
            return LogView("srs_loading", [
                f"SRS {load.circuit}: 'loading SRS from disk' at {_hms(load.start_s)}, "
                + (f"{done} at {_hms(load.end_s)}" if load.end_s is not None
                   else "not loaded by the gap's end") + " (srs_manager.rs)"],
                f"SRS {load.circuit} loading")
        waits = self.budget_waits_during(lo - 2.0, hi)
        over = self.over_budget
        if waits and over is not None and over.waits_of(*waits[-1]):
            # The latest wait is the request over the whole budget (with DEBUG lines on, it
            # logs one at every wake-up): its words, not a budget wait's.
            return self._over_budget_view(over)
        if waits:
            t, f = waits[-1]
            said = " ".join(f"{k}={v}" for k, v in f.items())
            return LogView("waits_on_budget", [
                f"{len(waits)} budget wait line(s) around the gap, the latest at {_hms(t)}: "
                f"'waiting for budget (acquire blocked)' {said} (memory.rs)"], said)
        mono = self.mono_during(start_s, end_s, gpu)
        if mono is not None and mono.one_call:
            return self._one_call_view(mono)
        if mono is not None:
            phase = ("synthesising" if mono.pickup_s is None or mono.pickup_s > end_s
                     else "on the GPU")
            evidence = [
                f"{mono.kind} job {mono.job} {phase} during the gap (TIMELINE "
                f"SYNTH_START kind={mono.kind}): monolithic work /status never lists "
                "(engine.rs registers only partitioned jobs)"]
            failure = mono.unplaced_failure
            if failure is not None and failure[0] <= end_s:
                evidence.append(_unplaced_failure_words(*failure))
            if mono.end_unread and mono.end_s is not None:
                evidence.append(_end_unread_words(mono.worker, mono.end_s))
            return LogView("monolithic", evidence, f"{mono.kind} {phase}",
                           facts=ProverGapFacts(monolithic_kind=mono.kind))
        if kind == "pcie_starved":
            pool = self.pool
            failed_s = pool.last_failure_s
            if failed_s is not None and end_s - POOL_FAILURE_REACH_S <= failed_s <= hi:
                # A failed checkout is the cudaHostAlloc failure behind it (pipeline.rs falls
                # back when pinned_pool.rs could not pin): one failure, not two.
                fails = max(pool.checkout_failed, pool.alloc_failed)
                pool_words = self.pool_said()
                return LogView("pinned_pool", pool_words.lines, f"{fails} failure(s) so far",
                               facts=ProverGapFacts(pool_churn_line=pool_words.churn_line))
            return LogView(None, [])
        if kind != "host_stall":
            return LogView(None, [])
        waited = [w for w in self.queue_waits
                  if w.queued_s <= start_s + EDGE_SLACK_S and w.picked_s >= end_s - EDGE_SLACK_S
                  and (w.gpu is None or w.gpu == gpu)]
        if waited:
            return self._queue_wait_view(gpu, start_s, end_s, waited[-1])
        left = self._never_picked(gpu, start_s + EDGE_SLACK_S)
        if left is not None:
            # Queued through the gap as surely as one picked up after it: the same rule.
            return self._queue_wait_view(gpu, start_s, end_s, *left)
        queued_then = self.queued_at(start_s + EDGE_SLACK_S, gpu)
        ready_s = min((t for run in self._runs_of_gpu(gpu) for t in run.queue_times
                       if lo < t <= hi), default=None)
        if queued_then == 0 and (ready_s is not None or is_open):
            empty = self._empty_start_view(gpu, start_s, end_s, ready_s, batch)
            if empty is not None:
                return empty
            if ready_s is not None:
                return LogView("waits_on_synthesis", [
                    "no partition was queued for the GPU at the gap's start; the next one "
                    f"finished synthesis (SYNTH_END, GPU_QUEUE) {ready_s - start_s:.1f} s into "
                    "the gap: the GPU waited on synthesis (from the log)"],
                    "nothing queued for the GPU at the gap's start")
        if over is not None and over.t_s <= hi:
            # Nothing nearer explains the idle; a request that can never be granted does.
            return self._over_budget_view(over)
        return LogView(None, [])

    def _never_picked(self, gpu: int, t_s: float) -> tuple[QueueWait, int] | None:
        """The partition queued longest by `t_s` for the GPUs of `gpu`'s daemons and picked up
        in no line read so far (its `QueueWait`, `picked_s` infinite), and how many were so
        queued then; None: none. One daemon's queue is read by the workers of all its GPUs
        (`queued_at`); cuzk writes GPU_PICKUP for every partition a worker pops (engine.rs:
        3023), so one still queued was not taken by the latest line read."""
        runs = self.daemon_runs
        left = [QueueWait(job, part, q, math.inf, None, d)
                for d in self.restarts.of_gpu(gpu) if d < len(runs)
                for (job, part), q in runs[d].queued.items() if q <= t_s]
        if not left:
            return None
        return min(left, key=lambda w: w.queued_s), len(left)

    def _queue_wait_view(self, gpu: int, start_s: float, end_s: float,
                         wait: QueueWait, queued_n: int = 1) -> LogView:
        """A host_stall gap of `gpu` a partition waited in the GPU queue through (its GPU_QUEUE
        before the gap, its GPU_PICKUP at or after its end, or none read: `picked_s` infinite,
        `queued_n` so queued at the gap's start): a dispatch stall only where a
        worker of `gpu` was free to take it for most of the gap (`gapwatch.cuzk.gpu_workers`:
        a worker holds its partition from GPU_PICKUP until prove_start returns, engine.rs:3023,
        3139-3148). Where every worker held one for most of it, the partition waited for a
        worker and the GPU's idle was inside the workers (`inside_workers`: CPU prep and
        barrier_wait under the per-GPU lock, the lock itself, the JobTracker after pickup), as
        /status says of every worker proving; the majority decides, as the snapshots' does.
        Either way the partitions were synthesised: no synthesis shortfall. Never picked up and
        the data ended (`end`): said so, and when it ended (`_left_words`)."""
        job, part, q, p, _, daemon = wait
        if math.isinf(p):
            more = f", {queued_n - 1} more queued with it" if queued_n > 1 else ""
            queued = (f"partition {part} of {fmt.visible(job)} was queued for the GPU "
                      f"(GPU_QUEUE) at {_hms(q)}, before the gap, and not picked up (no "
                      f"GPU_PICKUP of it read) by its end{more}: {end_s - q:.1f} s in the queue "
                      "by then while the GPU idled")
            detail = f"{queued_n} partition(s) queued, none picked up"
            left, ended_s = self._left_words(queued_n), self.data_end_s
            if left is not None and ended_s is not None:
                detail += f" by the recording's end at {_hms(ended_s)}"
        else:
            queued = (f"partition {part} of {fmt.visible(job)} was queued for the GPU "
                      f"(GPU_QUEUE) at {_hms(q)}, before the gap, and picked up (GPU_PICKUP) "
                      f"only at {_hms(p)}: {p - q:.1f} s in the queue while the GPU idled")
            detail = f"partition {part} {p - q:.1f} s in the GPU queue"
            left = None
        tail = [] if left is None else [left]
        from_s, until_s = max(start_s, q), min(end_s, p)
        if until_s <= from_s:  # the edges' slack: the wait met the gap only at its edges
            from_s, until_s = start_s, end_s
        held = self._held_over(gpu, daemon, from_s, until_s)
        if held is None or (held.free_s * 2 >= until_s - from_s):
            # A dispatch stall by the queue wait; a worker free only where the holds show one.
            shown = held is not None and held.free_shown
            facts = ProverGapFacts(queued_at_end=left is not None, worker_free_unshown=not shown)
            evidence = [queued]
            if held is None:
                evidence.append(_no_holds_words(gpu))
                lead = NO_HOLDS_LEAD
            elif shown:
                evidence.append(_free_words(held, from_s, until_s, gpu))
                lead = ""
            else:
                evidence.append(_unshown_free_words(held, from_s, until_s, gpu))
                lead = UNSHOWN_FREE_LEAD
            return LogView("dispatch_stall", evidence + tail, detail, worker_free=shown,
                           facts=facts, lead=lead)
        facts = NO_FACTS if left is None else ProverGapFacts(queued_at_end=True)
        return LogView("inside_workers", [
            f"{_held_words(held, gpu)} for {until_s - from_s - held.free_s:.1f} s of the "
            f"{until_s - from_s:.1f} s gap ({', '.join(h.words(until_s) for h in held.holds)}; "
            f"workers: {held.workers_from})",
            queued,
            "a GPU worker holds its partition from GPU_PICKUP until gpu_prove_start returns "
            "(GPU_TIMING spawn_blocking prove_start, prove_start returned: engine.rs:3023, "
            "3139-3148), then loops back to the queue: the partition waited for a worker, not "
            "for dispatch; the GPU idled inside the workers (CPU prep and barrier_wait under "
            "the per-GPU lock, the lock itself, the JobTracker after pickup)", *tail],
            f"{_held_words(held, gpu)}; {detail}", facts=facts)

    def _left_words(self, queued_n: int) -> str | None:
        """That the `queued_n` partitions queued at a gap's start and not picked up by its end
        were never picked up before the data ended (`end`), and when the log's last line was;
        None while it goes on."""
        end_s = self.data_end_s
        if end_s is None:
            return None
        last = (f" (the log's last line at {_hms(self.last_line_s)})"
                if self.last_line_s is not None else "")
        return (f"none of these {queued_n} partition(s) was picked up before the recording "
                f"ended at {_hms(end_s)}{last}: the prover took no more "
                "work from its GPU queue, whose partitions were synthesised (no synthesis "
                "shortfall); it or its GPU workers stopped (its load ended, a shutdown, a hung "
                "worker?), or the recording ended first")

    def _held_over(self, gpu: int, daemon: int, from_s: float,
                   until_s: float) -> HeldOver | None:
        """What `gpu`'s workers of `daemon` (the queued partition's: only its own workers
        can take it; another daemon on the GPU has its own queue and worker count) held over
        [from_s, until_s] (`WorkerHolds.over`), or None where how many workers it has is not
        known (no `initializing GPU workers` line of it and no worker of it seen picking up)."""
        one_gpu = self.num_gpus is None or self.num_gpus <= 1
        per_device = self.gpu_workers_per_device if daemon == 0 else None
        if per_device:
            workers = (per_device, f"gpu_workers_per_device={per_device} in '{INIT_WORKERS}'")
        else:
            seen = self.holds.workers_seen(gpu, daemon, one_gpu)
            if not seen:
                return None
            workers = (seen, f"{seen} seen picking up on it; no '{INIT_WORKERS}' line read")
        return self.holds.over(gpu, daemon, one_gpu, from_s, until_s, workers)

    def _empty_start_view(self, gpu: int, start_s: float, end_s: float, ready_s: float | None,
                          batch: tuple[float, tuple[float, float] | None, int | None]
                          ) -> LogView | None:
        """A gap of `gpu` whose start found its daemon's pipeline empty (no synthesis of the
        daemons whose lines named `gpu` in flight: `SynthFlight`;
        nothing queued for the GPU, no batch held, no monolithic job, no budget wait: the rules
        before this one) and that ended when the first partition of work that came after it was
        synthesised (`ready_s`; None: the gap is still open, that work synthesising now). Its
        free synthesis workers all took that work's partitions at once (one dispatcher, a
        channel the worker pool reads, engine.rs:1475, 1623-1628, 1678), so the gap is the wait
        for the request and one synthesis's latency, whatever the worker count:
        `empty_pipeline`, or `no_work` where the wait for the request was most of it (the client
        sent nothing). None where a synthesis was in flight at the start, or that is not known
        (a log read from mid-run): the GPU waited on synthesis; and for an open gap, where no
        work has come yet (/status says no work)."""
        daemons = self.restarts.of_gpu(gpu)
        runs = self._runs_of_gpu(gpu)
        synths = [run.synth for run in runs]
        if not synths or any(s.in_flight_at(start_s) is not False for s in synths):
            return None
        until_s = ready_s if ready_s is not None else math.inf
        came = next(((t, job) for t, job, d in self.enqueued
                     if d in daemons and start_s - EDGE_SLACK_S <= t <= until_s), None)
        began = min((t for s in synths
                     if (t := s.first_start(start_s - EDGE_SLACK_S, until_s)) is not None),
                    default=None)
        arrived_s = came[0] if came is not None else began
        evidence = [f"nothing in cuzk's pipeline at the gap's start ({_hms(start_s)}): no "
                    "partition synthesising or queued for the GPU (TIMELINE), no batch held, no "
                    "monolithic job"]
        if arrived_s is None:
            if ready_s is None:
                return None
            evidence.append(f"a partition finished synthesis (SYNTH_END, GPU_QUEUE) "
                            f"{ready_s - start_s:.1f} s into the gap")
            return LogView(EMPTY_PIPELINE_CAUSE, evidence)
        wait_s = max(0.0, arrived_s - start_s)
        if came is not None:
            job = f" job_id={fmt.visible(came[1])}" if came[1] is not None else ""
            evidence.append(f"the next request came {wait_s:.1f} s into the gap ('job enqueued"
                            f"{job}' at {_hms(came[0])})")
        else:
            evidence.append(f"the next synthesis began {wait_s:.1f} s into the gap (SYNTH_START "
                            f"at {_hms(arrived_s)}; no 'job enqueued' line read for it)")
        held_s, _, wait_ms = batch
        if held_s > 0:
            evidence.append(
                f"cuzk held it {held_s:.1f} s in the batch collector before sending it to "
                f"synthesis (max_batch_wait_ms={wait_ms}: 'processing batch' in span "
                "synth_timeout_flush, engine.rs:1984-2012)")
        why, pacer_target = self._new_work(runs)
        facts = ProverGapFacts(batch_held=held_s > 0, new_work_at_once=pacer_target is None,
                               new_work_pacer_target=pacer_target)
        if ready_s is None:
            evidence.append(f"its partitions synthesising, none done yet (the gap still open): "
                            f"it waits one synthesis's latency, {why}")
            return LogView(EMPTY_PIPELINE_CAUSE, evidence,
                           f"work came {wait_s:.1f} s in, its first synthesis running",
                           facts=facts)
        # The synthesis's latency from its first SYNTH_START: the batch collector's hold
        # before it is said apart (above), not folded into one synthesis's latency.
        synth_from_s = began if began is not None else arrived_s + held_s
        synth_s = max(0.0, ready_s - synth_from_s)
        evidence.append(
            f"its first partition finished synthesis (SYNTH_END, GPU_QUEUE) at {_hms(ready_s)}, "
            f"{synth_s:.1f} s after its synthesis began: one synthesis's latency, {why}")
        cause = NO_WORK_CAUSE if wait_s * 2 > end_s - start_s else EMPTY_PIPELINE_CAUSE
        return LogView(cause, evidence,
                       f"work came {wait_s:.1f} s in, its first synthesis took {synth_s:.1f} s",
                       facts=facts)

    @staticmethod
    def _new_work(runs: list[DaemonRun]) -> tuple[str, int | None]:
        """How cuzk starts the partitions of work that came to an empty pipeline, in words and
        by the pacer that paced them (None: none did): all at once, or, the dispatch pacer on
        (`[pipeline] max_gpu_queue_depth` > 0), one a tick, a drained pipeline re-entering its
        bootstrap (engine.rs:1480-1524), ticks at least 2 s apart once the GPU's rate is known
        (262-266): the worker count is then not what spaces them. `runs`: the daemons of the
        gap's GPU (its pacer, not another daemon's: the first daemon's pacer said of a PoSt-only
        daemon's gaps contradicted them)."""
        paced = next((run for run in runs if run.pacer_on), None)
        if paced is None:
            return _AT_ONCE, None
        return (f"the dispatch pacer on ([pipeline] max_gpu_queue_depth, gpu_queue_target="
                f"{paced.pacer_target}) pacing the new work's partitions: one dispatched a "
                "tick, a drained pipeline re-entering its bootstrap, ticks at least 2 s apart once "
                "the GPU's rate is known (engine.rs:1480-1524, 262-266)"), paced.pacer_target

    def _batch_wait_view(self, start_s: float, end_s: float,
                         batch: tuple[float, tuple[float, float] | None, int | None]
                         ) -> LogView | None:
        """A gap cuzk's batch collector held a request through most of: the work was there,
        cuzk kept it waiting for company (`[scheduler] max_batch_size` > 1), which /status
        shows as no work at all. Most, as the snapshots' majority decides a cause: the held
        stretch itself, not the synthesis after the flush (the GPU waiting on synthesis then,
        which a gap mostly of that is)."""
        held_s, latest, _ = batch
        if latest is None or held_s * 2 < end_s - start_s:
            return None
        since, until = latest
        return LogView("batch_wait", [
            f"cuzk's batch collector held a request for {held_s:.1f} s of the gap: 'processing "
            f"batch' in span {TIMEOUT_FLUSH_SPAN} at {_hms(until)}, sent when "
            f"max_batch_wait_ms={(until - since) * 1000:.0f} ran out waiting for a batch to "
            "fill (engine.rs:2012, batch_collector.rs:145-156); /status lists no held request"],
            f"held {held_s:.1f} s")

    def _one_call_view(self, mono: _Mono) -> LogView:
        """A gap in a proof a monolithic worker proved in one call (the pipeline off): its GPU
        idles while the same call synthesises."""
        where = f"worker {mono.worker}" if mono.worker is not None else "a worker"
        if mono.gpu is not None:
            where += f" of GPU {mono.gpu}"
        started = _hms(mono.pickup_s) if mono.pickup_s is not None else "?"
        return LogView("monolithic", [
            f"cuzk's monolithic {where} was proving {mono.job} ({mono.kind}) in one call "
            f"during the gap ('processing job (monolithic)' at {started}, engine.rs:3397): "
            "synthesis then GPU, nothing overlapping (engine.rs:3422-3440); /status lists no "
            "job with the pipeline off (engine.rs:3400-3405)"], f"{mono.kind} in one call",
            facts=ProverGapFacts(monolithic_kind=mono.kind, one_call=True))

    def _over_budget_view(self, over: OverBudget) -> LogView:
        """A request over the whole budget, as a gap's cause; where nothing read could show a
        restart (a log kept at `warn`, no `/status`), said so: the request lives only as long as
        its process, and its end would not show."""
        evidence = [over.words()]
        if not (self._info_read or self._uptime_read):
            evidence.append(
                "nothing read could show a restart of cuzk since (the log has no INFO line, "
                "the level of its start lines, main.rs:63, engine.rs:1244; no /status uptime "
                "was read): if cuzk restarted, the request died with it")
        return LogView("waits_on_budget", evidence, "a request over the whole budget",
                       facts=ProverGapFacts(over_budget=True))


def _pool_holds_words(total_gib: float, buffers: int | None, free: int | None) -> str:
    """`pool holds 46.6 GiB in 12 buffer(s), 0 free`: what the pool's lines said it holds, a
    count they did not give said so in words (a failed checkout gives the GiB and the free
    buffers, not how many it holds: "in ? buffer(s)" put a "?" inside the sentence)."""
    held = f"pool holds {total_gib:.1f} GiB"
    if buffers is None and free is None:
        return f"{held} (buffer counts not logged)"
    if buffers is None:
        return f"{held} (buffer count not logged), {free} free"
    if free is None:
        return f"{held} in {buffers} buffer(s) (free count not logged)"
    return f"{held} in {buffers} buffer(s), {free} free"


def _held_words(held: HeldOver, gpu: int) -> str:
    """`both GPU workers of GPU 0 held partitions`: every worker of a GPU holding work."""
    what = "partitions" if all(h.partition is not None for h in held.holds) else "work"
    if held.workers == 1:
        return f"the one GPU worker of GPU {gpu} held " + (
            "a partition" if what == "partitions" else "work")
    every = "both" if held.workers == 2 else f"all {held.workers}"
    return f"{every} GPU workers of GPU {gpu} held {what}"


def _no_holds_words(gpu: int) -> str:
    """A dispatch stall's evidence where no worker's holds were read (`_held_over` None)."""
    return (f"no GPU worker's holds read for GPU {gpu} (no GPU_PICKUP naming a worker of it, no "
            f"'{INIT_WORKERS}' line): the partition was queued and not taken, whether a worker "
            "was free to take it is not shown")


def _free_words(held: HeldOver, from_s: float, until_s: float, gpu: int) -> str:
    """A dispatch stall's worker free: for how long, and what the others held."""
    said = [h.freed_words() for h in held.freed] + [h.words(until_s) for h in held.holds]
    return (f"a GPU worker of GPU {gpu} was free for {held.free_s:.1f} s of the "
            f"{until_s - from_s:.1f} s gap ({', '.join(said) or 'no worker held work'}; "
            f"workers: {held.workers_from}): the partition waited with a worker free to take it")


def _unshown_free_words(held: HeldOver, from_s: float, until_s: float, gpu: int) -> str:
    """A dispatch stall's evidence where holds were read but none shows a worker free
    (`HeldOver.free_shown` False): fewer workers seen holding work than the GPU has, for how
    long, and that whether one was free is not shown (`_queue_wait_view`)."""
    said = [h.words(until_s) for h in held.holds]
    return (f"fewer than {held.workers} GPU worker(s) of GPU {gpu} seen holding work for "
            f"{held.free_s:.1f} s of the {until_s - from_s:.1f} s gap "
            f"({', '.join(said) or 'none seen holding work'}; workers: {held.workers_from}), "
            "but no worker's hold read ended before or in it: the partition was queued and not "
            "taken, and the log does not show whether any worker was idle then (a pickup before "
            "the log read would not be seen)")


def _unplaced_failure_words(t_s: float, message: str, could: int) -> str:
    """What a gap's evidence says of a failure line naming no job that this monolithic job,
    among `could`, may be the failure of (`PipelineFacts._monolithic_failed`)."""
    where = ("engine.rs:2855, 2870 write it in place of a monolithic synthesis's SYNTH_END, in "
             "a span naming its kind, not its job" if message in _SYNTH_FAILED else
             "the split prove's finalizer writes it in place of GPU_END outside its GPU "
             "worker's span, engine.rs:3185, 3257")
    which = (f"while {could} monolithic jobs could have been the one that failed, this one "
             "among them" if could > 1 else
             "and this monolithic job was the only one read that could have been the one that "
             "failed, but not read in the order cuzk wrote them (its stdout and stderr read "
             "apart): another written before it may be unread")
    return (f"'{message}' at {_hms(t_s)} named no job {which} ({where}): if it was this one's, "
            "the job ended there and no work of it kept the GPU waiting after")


def _end_unread_words(worker: int | None, next_pickup_s: float) -> str:
    """The words of a monolithic job whose end was not read, only bounded by its worker's next
    pickup (`PipelineFacts._worker_moved_on`)."""
    return (f"its end was not read: cuzk wrote no GPU_END for it (no GPU_START either: a "
            "synchronous prove, CUZK_DISABLE_SPLIT_PROVE=1, engine.rs:3078-3118) and its "
            f"completion line was not read; its worker {worker} picked up its next job at "
            f"{_hms(next_pickup_s)}: on the GPU at most until then")


def is_failure(ev: LogEvent) -> bool:
    """A line that says cuzk failed: an ERROR line, a self-check FAILED, a panic (the one rule:
    gapwatch.cuzk.errors says them as events, `PipelineFacts` in gap hints)."""
    if ev.kind == PANIC_KIND:
        return True
    return ev.kind == "tracing" and (ev.level == "ERROR" or (
        ev.level == "WARN" and (SELF_CHECK_FAILED in ev.name or ev.name == BUDGET_OVER)))


def failure_words(ev: LogEvent) -> str:
    """A failure in one line: what, which job and partition, the error."""
    if ev.kind == PANIC_KIND:
        message = str(ev.fields.get("message", "")).replace("\n", " | ")
        return fmt.visible(f"panic in {ev.fields.get('location', '?')}: {message}")
    if ev.name == BUDGET_OVER:
        return over_budget_of(ev).words()
    where = "".join([f" job {ev.job_id}" if ev.job_id else "",
                     f" partition {ev.partition}" if ev.partition is not None else "",
                     f" GPU {ev.gpu}" if ev.gpu is not None else ""])
    return fmt.visible(f"{ev.name}{where}{_error_tail(ev)}")


def failure_what(ev: LogEvent) -> str:
    """`failure_words` without where (job, partition, GPU): what happened and its error, the
    words an error event's alert says after its typed where (`ProverEvent.what`). A panic's
    and an over-budget request's words name no where of the line's: they are said whole."""
    if ev.kind == PANIC_KIND or ev.name == BUDGET_OVER:
        return failure_words(ev)
    return error_words(ev)


def error_words(ev: LogEvent) -> str:
    """A failure line's message and its error, without where (`proof failed:
    generate_winning_post_with_vanilla failed`): what a failed proof says of its failure
    (`gapwatch.cuzk.post`). An error that begins with the message already is said alone:
    `gpu_prove_start` wraps its error as `GPU prove start failed: {:?}` (pipeline.rs:1405),
    and the line said it twice, which an 80-column footer could not spare."""
    error = ev.fields.get("error")
    if isinstance(error, str) and error.startswith(ev.name):
        return fmt.visible(error)
    return fmt.visible(f"{ev.name}{_error_tail(ev)}")


def _error_tail(ev: LogEvent) -> str:
    """`: <its error field>` (cuzk's `error = %e`), or nothing."""
    error = ev.fields.get("error")
    return f": {error}" if error is not None else ""


def _hms(t: float) -> str:
    """`14:13:32.351`: a wall time in evidence phrases (UTC, as cuzk's tracing writes it)."""
    return fmt.clock(t, millis=True)
