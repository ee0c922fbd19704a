"""Where the prover itself says a GPU's idle gap waited: the finer cause, from its `/status`.

Who calls it: `gapwatch.core.evidence` (each gap's `prover_cause`, `prover_states` and
`prover_evidence`), the dashboard (the pipeline line, the worker states on gap rows),
`gapwatch.sinks.prometheus` (workers by state), `gapwatch.offline.report` (gaps by cause) and
`gapwatch.cuzk.advice`. Pure: no I/O, no clocks.

`/status` read as upstream serves it (docs/cuzk-status.md; `gapwatch.cuzk.pipeline` holds the
facts): the synthesis capacity is cuzk's `synth_worker_count` (from its log, else its formula
over the memory budget), never `synthesis.max_concurrent` (the budget over the smallest
partition: 83 on a 750 GiB box); busy synthesis is the partitions in `synthesizing`, with
`synthesis.active` only a cross-check (it drifts up after failed syntheses).

The rules, for one GPU, per snapshot, first match:

- `inside_workers`: every worker of this GPU is `proving`: the wait is inside the workers
  (copies, the GPU mutex, CPU work), not in the pipeline that feeds them;
- `dispatch_stall`: partitions wait in `synth_done` while a worker of this GPU is `idle` and
  shown free: status.rs marks a worker idle when its previous partition's result is processed,
  in the finalizer, even after it picked up its next (engine.rs:3185, 3238), so an idle worker
  counts free only beyond the partitions in `gpu` that no worker names
  (`free_idle_workers`); with none free the snapshot gives no cause and the log's holds decide;
- with no partition in `synth_done`:
  - `waits_on_budget`: partitions pending, a synthesis worker free, and cuzk's memory budget
    has less free than one pending partition needs (the dispatcher acquires the budget before
    a worker takes a partition, engine.rs);
  - `pacer_hold`: partitions pending, a worker free, the budget free, and the dispatch pacer on
    (`[pipeline] max_gpu_queue_depth` > 0: the log says so): the pacer holds synthesis back;
  - a worker free is known by the capacity (`gapwatch.cuzk.pipeline.workers_free`), or with
    fewer syntheses than cuzk's least workers; where it is not known and the budget is short
    or the pacer on, the snapshot gives no cause: every worker busy (synthesis holds the
    GPU) and a worker free (the budget or the pacer does) are both possible, and a guessed
    count (cuzk's default cap taken for its config) judged 3 busy workers of 3 free;
  - `waits_on_synthesis`: partitions synthesizing: the GPU waits for one (the evidence says
    whether every synthesis worker is busy);
  - `no_work`: nothing pending or synthesizing, no worker proving.

`empty_pipeline` comes from the log alone (`PipelineFacts._empty_start_view`): the gap's start
found nothing in flight (no synthesis, nothing queued for the GPU, no job) and it ended on the
first synthesis of work that came after: the wait for that work and one synthesis's latency,
however many synthesis workers. It stands over the snapshots' `waits_on_synthesis` (taken during
that synthesis, they see every worker busy on it), not over a `no_work` they saw most of the gap;
where the log shows the wait for the request was most of the gap, it says `no_work` itself.

The log can say more (`gapwatch.cuzk.pipeline.PipelineFacts.log_view`: an SRS load, PoSt or other
monolithic work `/status` never lists, a budget wait line, a queue wait, a synthesis that ended
during the gap): where the snapshots give no cause or `no_work`, the log's cause stands
(`srs_loading`, `monolithic`, ...). Its `inside_workers` (a partition queued through the gap
while every worker of the GPU held one, `gapwatch.cuzk.gpu_workers`) and its `pinned_pool`
stand over the snapshots' `dispatch_stall` (`with_log_cause`); its `dispatch_stall` where it
shows a worker free (its prove_start returned, nothing picked up since) stands over the
snapshots' `inside_workers` (status.rs shows a worker proving until its finalizer ends).
A `restart` (the gap spans one of cuzk, from the restart to its new run's first GPU work:
`gapwatch.cuzk.restarts`, from its start lines or `/status` uptime going back) stands whatever
the snapshots say: they saw a daemon going down and a new one reloading its SRS and
synthesising its first wave, all of it the restart's cost. So does the `no_work` the log gives
such a gap where most of it the new run, ready, waited for its first job (its `job enqueued`
line says when it came): Curio sent nothing.
A gap's cause is the most frequent cause among the snapshots taken during it (ties in the
order of `PROVER_CAUSES`); a gap with no snapshot of its own (shorter than the poll period) takes
the cause of the latest snapshot before it, within the evidence window, and says so. Synthesis
and the GPU queue are shared by all GPUs of a prover; workers are per GPU (`gpu_ordinal`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gapwatch.core.evidence_types import ProverState
from gapwatch.core.models import ProverStatus, ProverWorker
from gapwatch.core.units import GIB
from gapwatch.cuzk.pipeline import (
    CAPACITY_NOT_READ,
    EMPTY_PIPELINE_CAUSE,
    POREP_PARTITION_FULL_BYTES,
    Capacity,
    pending_partition_bytes,
    workers_free,
)
from gapwatch.cuzk.restarts import NO_WORK_CAUSE

#: The finer causes, in tie-break order (see the module docstring).
PROVER_CAUSES: tuple[str, ...] = (
    "restart", "inside_workers", "dispatch_stall", "waits_on_budget", "pacer_hold",
    "srs_loading", "waits_on_synthesis", "monolithic", "pinned_pool", "batch_wait",
    EMPTY_PIPELINE_CAUSE, "no_work",
)
#: What the log alone can tell of a gap /status snapshots read as waiting on synthesis: nothing
#: was in flight at its start (`EMPTY_PIPELINE_CAUSE`).
_FROM_AN_EMPTY_START = frozenset((EMPTY_PIPELINE_CAUSE, "waits_on_synthesis"))
#: One letter per worker state on the dashboard's gap rows and pipeline line.
WORKER_LETTER = {"proving": "P", "idle": "I"}


def workers_on(status: ProverStatus, gpu: int) -> list[ProverWorker]:
    """The prover's workers on `gpu`; all of them when none says its GPU (a one-GPU prover)."""
    if not any(w.gpu is not None for w in status.workers):
        return list(status.workers)
    return [w for w in status.workers if w.gpu == gpu]


def concerns(status: ProverStatus, gpu: int) -> bool:
    """Does this snapshot say anything about `gpu`? Yes when a worker runs on it, or when the
    snapshot names no worker's GPU at all."""
    return bool(workers_on(status, gpu)) or not status.workers


def synthesis_drift(status: ProverStatus) -> int | None:
    """How far cuzk's `synthesis.active` is above the partitions in `synthesizing` (its count
    is never decremented for a failed synthesis, status.rs / engine.rs); None when either is
    unknown or they agree."""
    active, busy = status.synthesis_active, status.partition_counts.get("synthesizing")
    if active is None or busy is None or active == busy:
        return None
    return active - busy


def live_pending(status: ProverStatus) -> int:
    """Pending partitions that can still run: a failed synthesis fails its job, whose other
    partitions cuzk's dispatcher then skips, yet `/status` keeps listing them as pending (the
    job is never marked completed, engine.rs)."""
    pending = status.partition_counts.get("pending") or 0
    if not pending or not status.partition_counts.get("failed"):
        return pending
    failed_jobs = {p.job_id for p in status.partitions if p.state == "failed"}
    dead = sum(1 for p in status.partitions if p.state == "pending" and p.job_id in failed_jobs)
    return max(0, pending - dead)


def budget_short(status: ProverStatus) -> tuple[int, int] | None:
    """(free bytes, bytes one pending partition needs) when cuzk's budget cannot start the next
    pending partition; None when it can or when that is not known."""
    free = status.memory_available_bytes
    if free is None or not live_pending(status):
        return None
    need = pending_partition_bytes(status) or POREP_PARTITION_FULL_BYTES
    return (free, need) if free < need else None


def unclaimed_gpu_partitions(status: ProverStatus) -> int:
    """Partitions in state `gpu` that no `proving` worker names (`current_job`,
    `current_partition`). status.rs's `partition_gpu_end(job, partition, worker_id)` sets that
    worker idle and clears its current partition unconditionally, and cuzk calls it in the
    finalizer (`process_partition_result`), which runs apart while the worker loops back to the
    queue once `gpu_prove_start` returns (engine.rs:3139-3185): a worker that picked up its
    next partition before its previous one's finalizer ended shows `idle` with that partition
    in `gpu`, named by no worker. (Such a partition may also be one in its own finalizer whose
    worker took another since: the snapshot cannot tell which.)"""
    named = {(w.job_id, w.partition) for w in status.workers if w.state == "proving"}
    return sum(1 for p in status.partitions
               if p.state == "gpu" and (p.job_id, p.index) not in named)


def free_idle_workers(status: ProverStatus, gpu: int) -> list[ProverWorker]:
    """The idle workers of `gpu` that the snapshot shows free: those beyond as many as the
    partitions in `gpu` no worker names (`unclaimed_gpu_partitions`), each of which an idle
    worker may hold; counted over the whole snapshot (its partitions do not say their GPU)."""
    idle = sorted((w for w in workers_on(status, gpu) if w.state == "idle"),
                  key=lambda w: w.worker_id)
    held = unclaimed_gpu_partitions(status) if idle else 0
    return idle[held:] if held < len(idle) else []


def snapshot_cause(status: ProverStatus, gpu: int, capacity: Capacity | None = None,
                   pacer_on: bool = False) -> str | None:
    """The cause one snapshot gives for an idle `gpu`, or None when no rule applies.
    `capacity`: how many syntheses cuzk runs (`PipelineFacts.capacity`); `pacer_on`: the log
    said the dispatch pacer is enabled."""
    mine = workers_on(status, gpu)
    counts = status.partition_counts
    synth_done = counts.get("synth_done")
    if mine and all(w.state == "proving" for w in mine):
        return "inside_workers"
    if synth_done and free_idle_workers(status, gpu):
        return "dispatch_stall"
    if synth_done != 0:
        # Unknown (no pipelines list), or partitions ready but no worker here shown free (an
        # idle one may hold a partition: `free_idle_workers`); the log's holds can tell.
        return None
    busy = counts.get("synthesizing") or 0
    pending = live_pending(status)
    if pending:
        free = workers_free(busy, capacity)
        short = budget_short(status) is not None
        paced = pacer_on and status.memory_available_bytes is not None
        if free and short:
            return "waits_on_budget"
        if free and paced:
            return "pacer_hold"
        if free is None and (short or paced):
            # A worker free (the budget or the pacer holds the next partition) or every one
            # busy (synthesis does): which is not known, so neither is said.
            return None
    if busy:
        return "waits_on_synthesis"
    if not pending and not any(w.state == "proving" for w in mine):
        return "no_work"
    return None


def snapshot_evidence(status: ProverStatus, gpu: int, cause: str | None,
                      capacity: Capacity | None) -> list[str]:
    """The facts of one snapshot behind `cause`, in plain words."""
    counts = status.partition_counts
    busy = counts.get("synthesizing") or 0
    pending = live_pending(status)
    dead = (counts.get("pending") or 0) - pending
    out: list[str] = []
    if cause == "inside_workers":
        out.append(f"every worker of GPU {gpu} proving ({worker_letters(workers_on(status, gpu))})")
    elif cause == "dispatch_stall":
        idle = [w.worker_id for w in workers_on(status, gpu) if w.state == "idle"]
        out.append(f"{counts.get('synth_done')} partition(s) in synth_done while worker(s) "
                   f"{', '.join(str(w) for w in idle)} of GPU {gpu} idle")
        unclaimed = unclaimed_gpu_partitions(status)
        if unclaimed:
            free = len(free_idle_workers(status, gpu))
            out.append(f"{unclaimed} partition(s) in state gpu named by no worker, each of "
                       "which an idle worker may hold (status.rs partition_gpu_end marks a "
                       "worker idle when its previous partition's result is processed, in the "
                       "finalizer, engine.rs:3185, 3238, even after it picked up the next): "
                       f"{free} of them counted free")
    elif cause in ("waits_on_synthesis", "waits_on_budget", "pacer_hold"):
        out.append("no partition in synth_done")
        if capacity is not None:
            all_busy = "every synthesis worker busy" if busy >= capacity.workers else (
                f"{capacity.workers - busy} synthesis worker(s) free")
            out.append(f"{busy} of {capacity.workers} synthesis workers busy ({all_busy}; "
                       f"workers: {capacity.words()})")
        else:
            out.append(f"{busy} partition(s) synthesizing; how many synthesis workers cuzk "
                       f"runs is not known ({CAPACITY_NOT_READ})")
        if pending:
            out.append(f"{pending} partition(s) pending")
        if status.synthesis_max is not None and capacity is not None \
                and status.synthesis_max != capacity.workers:
            out.append(f"/status max_concurrent={status.synthesis_max} is the memory budget over "
                       "the smallest partition (status.rs), not the worker count")
    if cause == "waits_on_budget":
        short = budget_short(status)
        if short is not None:
            free, need = short
            total = status.memory_total_bytes
            of = f" of {total / GIB:.0f} GiB" if total is not None else ""
            out.append(f"memory budget {free / GIB:.1f} GiB free{of}: the next partition "
                       f"needs {need / GIB:.0f} GiB (memory.rs)")
    drift = synthesis_drift(status)
    if drift:
        out.append(f"/status synthesis.active={status.synthesis_active} but {busy} partition(s) "
                   f"synthesizing: active is not decremented when a synthesis fails "
                   f"(status.rs), so it is {'ahead' if drift > 0 else 'behind'} by {abs(drift)}")
    if dead:
        out.append(f"{dead} pending partition(s) of failed job(s) will never run (cuzk skips a "
                   "failed job's partitions and never drops the job from /status)")
    if cause == "no_work":
        out.append("no partition pending or synthesizing in /status, no worker proving")
    return out


def cause_detail(status: ProverStatus, gpu: int, cause: str | None,
                 capacity: Capacity | None) -> str:
    """The one figure a hint adds to the cause's words ("18 of 18 synthesis workers busy"),
    or ""."""
    counts = status.partition_counts
    busy = counts.get("synthesizing") or 0
    if cause == "waits_on_synthesis":
        if capacity is None:
            return f"{busy} synthesizing, synthesis workers unknown"
        return f"{busy} of {capacity.workers} synthesis workers busy"
    if cause == "waits_on_budget":
        short = budget_short(status)
        if short is not None:
            return (f"budget {short[0] / GIB:.1f} GiB free, a partition needs "
                    f"{short[1] / GIB:.0f} GiB")
    if cause == "pacer_hold" and capacity is not None:
        return f"{counts.get('pending')} pending, {busy} of {capacity.workers} workers busy"
    if cause == "dispatch_stall":
        return f"{counts.get('synth_done')} in synth_done"
    return ""


def decide_cause(during: Mapping[str, int], before: str | None) -> tuple[str | None, bool]:
    """The gap's cause from the causes counted during it and the one just before it.

    Returns (cause, seen during the gap). The most frequent cause during the gap wins, ties in
    `PROVER_CAUSES` order; with none during it, the cause just before (or None).
    """
    best: str | None = None
    for cause in PROVER_CAUSES:
        n = during.get(cause, 0)
        if n and (best is None or n > during.get(best, 0)):
            best = cause
    if best is not None:
        return best, True
    return before, False


def with_log_cause(snapshots_cause: str | None, log_cause: str | None,
                   seen_during: bool = True, spans_restart: bool = False,
                   log_worker_free: bool = False) -> str | None:
    """The snapshots' cause, unless they gave none or `no_work` and the log names one: an SRS
    load, PoSt work and a request held in the batch collector are invisible in `/status`, and
    the log's budget waits, queue waits and synthesis ends say more than a gap without
    snapshots. A pinned pool that failed refines `inside_workers` (the workers' copies ran
    from pageable memory: that is why), and stands over a `dispatch_stall` too: the log gives
    it only to a pcie_starved gap, the GPU copying a/b/c under the per-GPU lock that its
    workers share (cuzk-log-formats.md §3.2), so a worker shown idle (status.rs marks one idle
    after its finalizer even when it holds its next partition: `free_idle_workers`) could only
    have waited on that lock; its advice (the pool's) is the one that closes the gap. The log's
    `inside_workers` (every worker of the GPU held a partition through most of the gap, read
    from their pickups and prove_start lines: `gapwatch.cuzk.gpu_workers`) stands over the
    snapshots' `dispatch_stall`, whose idle flag that finalizer may have set. The other way,
    the log's `dispatch_stall` that rests on a worker it shows free (`log_worker_free`: its
    prove_start returned before or during the gap and it picked nothing up after) stands over
    the snapshots' `inside_workers`: status.rs shows a worker `proving` until its partition's
    finalizer ends (`partition_gpu_end`, engine.rs:3185), long after the worker looped back
    to the queue, so snapshots taken during finalizers see every worker proving while one
    waits free. A `dispatch_stall` of the log with no worker count or pickup read does not
    (it knows of no free worker). A restart the
    gap spans is its cause whatever the snapshots say, and so is the wait for work after it
    where that was most of the gap (see the module docstring).
    Not a synthesis that ended in the gap over `no_work` the snapshots saw during most of it
    (`seen_during`): nothing was pending or synthesising then, so that synthesis began on
    work that arrived mid-gap; the GPU waited for work. It read `waits_on_synthesis` (raise
    max_parallel_synthesis) wherever the log was followed, and a change of load read as a
    gain or a loss in `compare`, never as load.
    A gap the log shows began with the pipeline empty (`empty_pipeline`: nothing synthesising,
    synthesised or queued at its start, work that came after it synthesised by its end) is that
    over the snapshots' `waits_on_synthesis`: they were taken during that work's synthesis and
    saw every worker busy on it, which read "raise max_parallel_synthesis", although the
    workers had all started it at once and more of them could not have ended the gap sooner.
    What was in flight at the gap's start decides, not what the middle of it saw. Its `no_work`
    (the wait for the request most of the gap) is the log's over the snapshots'
    `waits_on_synthesis` alone; over any snapshot cause only where the gap spans a restart
    (`spans_restart`: the new run's wait for its first job)."""
    if log_cause is None:
        return snapshots_cause
    if spans_restart:  # the restart, or its new run's wait for its first job
        return log_cause
    if snapshots_cause == "no_work" and seen_during and log_cause in _FROM_AN_EMPTY_START:
        return snapshots_cause
    if snapshots_cause == "waits_on_synthesis" and log_cause == EMPTY_PIPELINE_CAUSE:
        return log_cause
    if snapshots_cause in (None, "no_work"):
        return log_cause
    if log_cause == NO_WORK_CAUSE and snapshots_cause == "waits_on_synthesis":
        # An empty pipeline's wait for the next request only over the synthesis they saw it
        # start, not over a budget wait, the pacer or an SRS load they saw (each its own).
        return log_cause
    if log_cause == "pinned_pool" and snapshots_cause in ("inside_workers", "dispatch_stall"):
        return log_cause
    if log_cause == "inside_workers" and snapshots_cause == "dispatch_stall":
        return log_cause
    if log_cause == "dispatch_stall" and log_worker_free and snapshots_cause == "inside_workers":
        return log_cause
    return snapshots_cause


def worker_letters(workers: Iterable[ProverWorker]) -> str:
    """`PI`: one letter per worker in id order (P proving, I idle, ? other)."""
    return "".join(WORKER_LETTER.get(w.state, "?")
                   for w in sorted(workers, key=lambda w: w.worker_id))


def gap_state(status: ProverStatus, gpu: int, cause: str | None = None,
              capacity: Capacity | None = None) -> ProverState:
    """A snapshot as a gap's evidence for `gpu`: compact, JSON-ready."""
    counts = status.partition_counts
    return ProverState(
        t_s=status.t_wall_s,
        prover=status.prover,
        cause=cause,
        workers=worker_letters(workers_on(status, gpu)),
        pending=counts.get("pending"),
        synthesizing=counts.get("synthesizing"),
        synth_done=counts.get("synth_done"),
        gpu=counts.get("gpu"),
        synthesis_workers=capacity.workers if capacity is not None else None,
        synthesis_workers_from=capacity.source if capacity is not None else None,
        synthesis_active=status.synthesis_active,
        synthesis_max=status.synthesis_max,
        memory_available_bytes=status.memory_available_bytes,
        memory_total_bytes=status.memory_total_bytes,
        queue_depth=status.queue_depth,
    )
