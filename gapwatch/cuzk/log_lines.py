"""cuzk's own line kinds: TIMELINE CSV, `CUZK_TIMING:` / `CUZK_NTT_H:`, warnings, lock attribution.

Who calls it: `gapwatch.logs.parse.LogParser` (the parse functions, per line) and
`gapwatch.cuzk.partitions` (the `LockAttributor`, over a recorded list of events).

See /work/shared/reference/cuzk-log-formats.md (copied in spirit into docs/logs.md):
- `TIMELINE,<offset_ms>,<EVENT>,<job_id>,<detail>`: split on at most 4 commas (detail holds
  commas: `worker=1,partition=3,gpu_ms=3356`). Old builds emit `CHAN_SEND` instead of GPU_QUEUE.
- `CUZK_TIMING: k=v ...` (integer ms, no suffix) and `CUZK_NTT_H: k=NNms ...` (ms suffix) carry
  no time, job, worker or partition. On one GPU, every line from `pre_lock_cpu_ms/mutex_wait_ms`
  to `mutex_held_ms` belongs to the lock holder that the next
  `GPU_TIMING spawn_blocking prove_start worker_id=W partition=Some(P)` names: `LockAttributor`
  pairs them and yields one attributed `PartitionLock` per partition.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

import msgspec

from gapwatch.core import fmt
from gapwatch.core.models import FieldValue, LogEvent, TimeSource
from gapwatch.core.values import convert_value, count_field, digits_value, is_bad_count

#: The kind of the event the parser adds per attributed lock region (`PartitionLock`).
PARTITION_KIND = "cuzk_partition"
PROVE_START_MESSAGE = "GPU_TIMING spawn_blocking prove_start"
ANCHOR_MESSAGE = "starting cuzk engine"
#: engine.rs:1892, INFO: the dispatcher's settings (`max_batch_size`, `max_batch_wait_ms`).
DISPATCHER_MESSAGE = "synthesis dispatcher started (budget-gated)"
#: engine.rs:2150, INFO: a batch handed to synthesis, in the span that says why it was sent
#: then: `synth_timeout_flush` when `max_batch_wait_ms` ran out on its first request
#: (engine.rs:2012; batch_collector.rs:145-156), which cuzk held meanwhile.
PROCESSING_BATCH_MESSAGE = "processing batch"
TIMEOUT_FLUSH_SPAN = "synth_timeout_flush"
#: The line a whole-proof synthesis (a batch, PoSt) writes after its SYNTH_END, in its batch's
#: span (engine.rs:2746-2752): `synth_ms circuit_id batch_size sectors` (batch_size 1 but for a
#: batch; `sectors` the sectors synthesised: a PoRep batch's every one, a SnapDeals batch's 0).
SYNTH_SENT_MESSAGE = "synthesis complete, sending to GPU"
#: srs_manager.rs:203, INFO: an SRS load begins (its circuit_id, path, size).
SRS_LOADING_MESSAGE = "loading SRS from disk"
#: srs_manager.rs:224, INFO: an SRS load ended (`elapsed_ms`).
SRS_LOADED_MESSAGE = "SRS loaded successfully"
#: srs_manager.rs:282, INFO: an SRS freed to make room.
SRS_EVICTED_MESSAGE = "SRS evicted"
#: pipeline.rs:198-204, INFO: a circuit type's first synthesis in this process, unpinned.
NO_CAPACITY_HINT_MESSAGE = "no capacity hint cached"
#: pinned_pool.rs:212, INFO: a buffer pinned with `cudaHostAlloc`.
POOL_ALLOCATED_MESSAGE = "pinned pool: allocated new buffer"
WORKER_STARTED_MESSAGE = "pipeline GPU worker started"
#: `job enqueued job_id proof_kind priority queue_position` (scheduler.rs:67-73, INFO): a request
#: arrived (gRPC SubmitProof or Prove, engine.rs:3519-3554); every request passes there.
JOB_ENQUEUED_MESSAGE = "job enqueued"
#: `assigned pipeline sequence number job_id job_seq` (engine.rs:2296, INFO; SnapDeals' at
#: 2449): a PoRep or SnapDeals job's place in its run's GPU queue order. `job_seq` counts up from
#: 0 each run (engine.rs:1431, 2295, 2448, one counter for both), the queue pops the least
#: (job_seq, partition) first (engine.rs:28-79).
PIPELINE_SEQ_MESSAGE = "assigned pipeline sequence number"
SEQ_MESSAGES = (PIPELINE_SEQ_MESSAGE, "assigned SnapDeals pipeline sequence number")
#: cuzk-daemon main.rs:63, the first line a daemon writes.
DAEMON_STARTING_MESSAGE = "cuzk-daemon starting"
#: main.rs:64 (`info!(listen = %config.daemon.listen, "configuration loaded")`): its gRPC
#: address, which no two daemons of a box share.
CONFIGURATION_LOADED_MESSAGE = "configuration loaded"
#: The lines a daemon writes once a run as it starts (main.rs:63-64, engine.rs:1244): lines
#: that hold one are a run of their own, however far their times lie from a file's other lines
#: (`starts_a_run`).
RUN_START_MESSAGES = frozenset((DAEMON_STARTING_MESSAGE, CONFIGURATION_LOADED_MESSAGE,
                                ANCHOR_MESSAGE))
#: main.rs:85-91: `set CUZK_GPU_THREADS for C++ groth16_pool gpu_threads=N`, written only when
#: `[gpus] gpu_threads` > 0 (else an operator-set `CUZK_GPU_THREADS` is honoured, or all CPUs),
#: before `RAYON_THREADS_MESSAGE` (main.rs:95-115), which every start writes.
GPU_THREADS_MESSAGE = "set CUZK_GPU_THREADS for C++ groth16_pool"
#: main.rs:111: `rayon global thread pool configured rayon_threads=N`, `[synthesis] threads`
#: resolved (0 is logged as the CPU count).
RAYON_THREADS_MESSAGE = "rayon global thread pool configured"
#: main.rs:133 (`info!(addr = %status_listen, "status HTTP server listening")`).
STATUS_LISTENING_MESSAGE = "status HTTP server listening"
#: `initializing GPU workers num_gpus=N ...` (engine.rs:1339): how many GPUs the daemon drives.
INIT_WORKERS_MESSAGE = "initializing GPU workers"
#: `[pipeline] enabled = false` (engine.rs:3362-3505): each GPU's one worker (1333-1337) takes a
#: request from the scheduler and proves the whole proof in one call (3422-3440), writing inside
#: its span `monolithic_worker{worker_id gpu job_id proof_kind}` (3394) and no TIMELINE line.
MONOLITHIC_WORKER_STARTED_MESSAGE = "monolithic GPU worker started"  # engine.rs:3378
MONOLITHIC_SPAN = "monolithic_worker"
#: Taken from the queue, its proving begins (engine.rs:3397).
MONOLITHIC_PROCESSING_MESSAGE = "processing job (monolithic)"
#: Done (engine.rs:3455-3462): `total_ms` from submission, `queue_ms` (that total less the
#: prover's own), `deser_ms`, `prove_ms` (the proving call: synthesis and GPU together).
MONOLITHIC_COMPLETED_MESSAGE = "proof completed successfully (monolithic)"
#: Its ERROR lines when it fails (engine.rs:3471, 3475, `error = %e`); the worker is free again
#: after them. Its span names the job.
MONOLITHIC_FAILED_MESSAGES = ("proof failed", "proof task panicked")
#: The lines that end a monolithic worker's job: its completion or its failure.
MONOLITHIC_END_MESSAGES = (MONOLITHIC_COMPLETED_MESSAGE, *MONOLITHIC_FAILED_MESSAGES)
#: A monolithic worker's lines of its job: its pickup and its end.
MONOLITHIC_JOB_MESSAGES = (MONOLITHIC_PROCESSING_MESSAGE, *MONOLITHIC_END_MESSAGES)
#: A pipelined job's GPU worker span, `gpu_worker{worker_id gpu job_id proof_kind batch_size
#: partition}` (engine.rs:3005-3012); a PoSt's has `partition=None` and its own job id.
GPU_WORKER_SPAN = "gpu_worker"
#: The ERROR lines (`error = %e`) by which a pipelined job's GPU step failed, written inside
#: that span, so naming the job: `GPU prove start failed` / `GPU prove start task panicked`
#: (engine.rs:3282, 3302, after its GPU_START, 3131; the worker is free again: curio e0294b0f
#: writes only the panic, a CUDA error being one in supraseal-c2, and never 3282, which needs
#: bellperson's `MalformedSrs`, read for another build; gapwatch.cuzk.post_advice); `GPU proving
#: failed` / `GPU proving task panicked` (engine.rs:977, 998) only where
#: `process_monolithic_result` runs inside the span (engine.rs:3111 with
#: CUZK_DISABLE_SPLIT_PROVE=1, 3349 without cuda-supraseal). From the split prove's finalizer,
#: the default (engine.rs:3257, in a task spawned at 3185 outside the span), and for a
#: synthesis that failed (`synthesis failed` / `synthesis task panicked`, engine.rs:2855, 2870,
#: in span `synth_single{proof_kind}`, 2099: a kind, no job), the line names no job: it fails
#: only the one PoSt that alone can be its job, never a guess among several
#: (`gapwatch.cuzk.post.PostTracker._unnamed_failure`); what explains gaps ends the one
#: monolithic job in flight that can be its, and none where several can or where the lines were
#: not read in the order written (`gapwatch.cuzk.unnamed_failure`, the one rule of both)
#: (`gapwatch.cuzk.pipeline.PipelineFacts._monolithic_failed`).
GPU_WORKER_FAILED_MESSAGES = ("GPU prove start failed", "GPU prove start task panicked",
                              "GPU proving failed", "GPU proving task panicked")
#: Those of them the split prove's finalizer writes, in no span (engine.rs:977, 998 via 3257):
#: its job's `gpu_prove_finish` failed after its GPU_START (3131), before its GPU_END (3196).
FINALIZER_FAILED_MESSAGES = ("GPU proving failed", "GPU proving task panicked")
#: The span of a request dispatched alone (engine.rs:2099, every PoSt: not batchable), which
#: names its kind, not its job; and the lines written in it when its synthesis fails, after its
#: SYNTH_START (2665), in place of its SYNTH_END (2745): `synthesis failed` / `synthesis task
#: panicked` (2855, 2870).
SYNTH_SINGLE_SPAN = "synth_single"
SINGLE_SYNTH_FAILED_MESSAGES = ("synthesis failed", "synthesis task panicked")
#: The ERROR lines cuzk writes in place of a synthesis's `SYNTH_END` when it fails: a
#: partition's (`partition synthesis failed` / `... task panicked`, engine.rs:1784, 1810, with
#: `job_id partition`, after its SYNTH_START at 1719) and a monolithic job's (`synthesis
#: failed` / `synthesis task panicked`, 2855, 2870, naming no job, after its SYNTH_START at 2665).
PARTITION_SYNTH_FAILED_MESSAGES = ("partition synthesis failed",
                                   "partition synthesis task panicked")
SYNTH_FAILED_MESSAGES = (*PARTITION_SYNTH_FAILED_MESSAGES, *SINGLE_SYNTH_FAILED_MESSAGES)
#: The ERROR lines of a single-request PoRep or SnapDeals batch whose input parse or SRS load
#: failed before its first SYNTH_START (engine.rs:2217, 2230, 2371, 2384): they name no job,
#: only their kind (`types.rs:25-34` as the `job enqueued` line writes it).
INPUT_PARSE_FAILED_KINDS = {
    "Phase 7: C1 parse/SRS load failed": "porep-c2",
    "Phase 7: C1 parse task panicked": "porep-c2",
    "SnapDeals parse/SRS load failed": "snap-update",
    "SnapDeals parse task panicked": "snap-update",
}
#: The failure lines that name no job where cuzk writes them by default: a monolithic
#: synthesis's and the split prove finalizer's (`gapwatch.cuzk.unnamed_failure`).
UNNAMED_FAILED_MESSAGES = (*SINGLE_SYNTH_FAILED_MESSAGES, *FINALIZER_FAILED_MESSAGES)
#: The ERROR lines cuzk writes in place of a GPU step's `GPU_END` when it fails: the GPU worker's
#: (`GPU_WORKER_FAILED_MESSAGES`) and a partition's result (`partition GPU proving failed` /
#: `... task panicked`, engine.rs:656, 679). After a GPU_START (3131) only on the split prove, the
#: default: `gpu_prove_start` failed (3282, 3302) or `gpu_prove_finish` did, before its GPU_END
#: (3196), said by the finalizer (3238, 3257). With CUZK_DISABLE_SPLIT_PROVE=1 or without
#: cuda-supraseal (3105-3111, 3340-3349) cuzk writes no GPU_START and no GPU_END at all.
GPU_FAILED_MESSAGES = (*GPU_WORKER_FAILED_MESSAGES, "partition GPU proving failed",
                       "partition GPU proving task panicked")
#: engine.rs:839-846, INFO (`process_monolithic_result`): a pipelined monolithic job (PoSt, a
#: single request) proved, `total_ms` from its submission. Written by the split prove's
#: finalizer after its GPU_END (3196; called at 3257 in a task spawned at 3185 outside any
#: span: it names no job), and, where cuzk writes no GPU_START or GPU_END
#: (`CUZK_DISABLE_SPLIT_PROVE=1`, 3078-3118: called at 3111), inside the job's GPU worker's
#: span (`GPU_WORKER_SPAN`, 3005-3012, the async block instrumented at 3356), which names it.
PIPELINE_COMPLETED_MESSAGE = "proof completed successfully (pipeline)"
#: engine.rs:725-731, 817, the same function's lines for a batch (its job id, in TIMELINE and
#: in the span, is its first request's, engine.rs:2664, 2724, 2984): its proof made and split
#: per sector, or its split failed (ERROR). Written where its completion line would be: in the
#: span only with the prove synchronous.
BATCH_COMPLETED_MESSAGE = "batched proof completed — splitting results"
BATCH_SPLIT_FAILED_MESSAGE = "failed to split batched proofs"
#: The lines that end a pipelined monolithic job's GPU step written inside its GPU worker's
#: span, which names it: with the prove synchronous (`CUZK_DISABLE_SPLIT_PROVE=1`) they are
#: its only end, no GPU_END being written (`gapwatch.cuzk.pipeline.PipelineFacts._sync_done`).
#: Its failures there (`GPU proving failed` ...) are `GPU_WORKER_FAILED_MESSAGES`'.
SYNC_DONE_MESSAGES = (PIPELINE_COMPLETED_MESSAGE, BATCH_COMPLETED_MESSAGE,
                      BATCH_SPLIT_FAILED_MESSAGE)
#: `process_partition_result`'s lines for a partition whose GPU step returned a proof
#: (engine.rs:474-479, 451-455 its job failed meanwhile, 648-652 WARN its job gone): like the
#: completion line, written by the split prove's finalizer (3238, no span) after its GPU_END,
#: and by the synchronous prove (3105) inside the GPU worker's span, no GPU_END written.
PARTITION_RESULT_MESSAGES = ("partition GPU prove complete",
                             "discarding GPU result for failed job",
                             "assembler not found, discarding partition result")
#: The lines by which a job's GPU work was done, where written inside its GPU worker's span:
#: only the synchronous prove writes them there (`gapwatch.cuzk.restarts.RestartWatch`).
SYNC_GPU_DONE_MESSAGES = (*SYNC_DONE_MESSAGES, *PARTITION_RESULT_MESSAGES)
#: engine.rs:3034-3042, INFO: a partition picked up (its GPU_PICKUP written) of a job that had
#: failed meanwhile: no GPU_START follows, the worker is free again.
SKIPPED_GPU_PROVE_MESSAGE = "skipping GPU prove for failed partitioned job"

# Two one-off CUZK_TIMING lines are prose, not key=value.
_POOL_THRESHOLD_WORDS = "set pool release threshold to MAX on gpu "
_POOL_THRESHOLD = re.compile(re.escape(_POOL_THRESHOLD_WORDS) + r"(-?\d+)")
_DA_CACHE_WORDS = "d_a_cache allocated "
_DA_CACHE = re.compile(re.escape(_DA_CACHE_WORDS) + r"(\d+) MiB on gpu (-?\d+)")

#: The field set on a line that cannot be placed among the other streams' lines (its reader
#: says so: `LogParser.parse_line(apart=True)`): a C++ line or `spawn_blocking prove_start` line
#: so marked takes no part in lock attribution (`LockAttributor`), as parsed and as recorded.
UNPLACED_FIELD = "unplaced"

#: The log parser's counter of the C++ lines so read (`gapwatch.logs.parse.UNPLACED`).
UNPLACED_COUNTER = "cpp_lines_unplaced"


@dataclass(frozen=True, slots=True)
class Unplaced:
    """A file read whole whose `lines` C++ lines could not be placed beside the lines of the
    `placed` files (it shows no time of its own: `gapwatch.logs.files.read_order`): said once
    (`unplaced_note`), when what stands in for them is known."""

    path: str
    lines: int
    placed: tuple[str, ...]


def starts_a_run(ev: LogEvent) -> bool:
    """Whether `ev` is one of the lines a daemon writes as it starts (`RUN_START_MESSAGES`):
    asked by `gapwatch.offline.log_span` of a file's far lines, which are never a clock set
    wrong where they hold a start (an idle daemon's start days before its work, a new run
    appended to an old run's log)."""
    return ev.kind == "tracing" and ev.name in RUN_START_MESSAGES


def unplaced_note(unplaced: Unplaced, flag: str = "--log ",
                  recorded_locks: int | None = None) -> str:
    """What is said, once, of an `Unplaced` file; `flag`: how the command names a file it was
    given; `recorded_locks`: the GPU lock regions of a recording read with it that stand in
    for the file's (`gapwatch.logs.once.LinesOnce.locks_kept`: `record --log` paired them as
    the lines came, in the order written; None: no recording). Where the recording holds
    some, the partitions' lock times are theirs: "tied to no partition" was said of a report
    whose every partition had its held and wait times from them."""
    beside = ", ".join(f"{flag}{p}" for p in unplaced.placed)
    head = (f"{flag}{unplaced.path}: {unplaced.lines:,} untimestamped C++ timing line(s) "
            f"(CUZK_TIMING, CUZK_NTT_H) cannot be placed beside the lines of {beside} (it "
            "shows no time of its own)")
    if recorded_locks:
        return fmt.visible(
            f"{head}: they are paired with no partition; the partitions' GPU lock times are "
            f"the recording's own {recorded_locks:,} lock region(s), paired as they were "
            "written (`record --log`)")
    return fmt.visible(
        f"{head}: their GPU lock times are tied to no partition; give cuzk's stdout and "
        "stderr as one file (`> cuzk.log 2>&1`) or the journal")


def backlog_note(source: str) -> str:
    """What is said, once, of a followed source whose backlog's C++ lines could not be placed
    beside the other sources' lines (`gapwatch.logs.follow`)."""
    return fmt.visible(
        f"log {source}: the untimestamped C++ timing lines (CUZK_TIMING, CUZK_NTT_H) it held "
        "before following began cannot be placed beside the other logs' lines (read at once, "
        "not as written): their GPU lock times are tied to no partition (counted: "
        f"{UNPLACED_COUNTER}); the lines written from now on are placed as they arrive")


# In-lock lines: the fields the attributor keeps, by the key that marks the line.
_IN_LOCK_KEYS = ("ntt_msm_h_ms", "barrier_wait_ms", "batch_add_ms", "tail_msm_ms",
                 "gpu_total_ms")


#: The longest a step of cuzk's timing lines can take, ms: a day. Every `*_ms` of the C++
#: timing lines (`CUZK_TIMING`, `CUZK_NTT_H`) and of TIMELINE (`synth_ms`, `gpu_ms`) times one
#: step of one partition or one proof (cuzk-log-formats.md 1.1-1.3: a synthesis, a GPU
#: region, a lock wait; seconds to minutes, a PoRep C2 of 10 partitions takes minutes). One of
#: `mutex_held_ms=99999999999999999` (3 million years) made a ten-minute log's wall time 1e14 s,
#: GPU efficiency 0 % and GPU occupied 100 %.
MAX_STEP_MS = 86_400_000
#: What a step may seem to outlast its run by, s: the run's start (`starting cuzk engine`) and
#: the line that ends the step are timed by their own lines, and cuzk truncates to the ms.
RUN_SLACK_S = 1.0


def step_ms(value: FieldValue, within_s: float | None = None) -> int | None:
    """A duration of cuzk's timing lines, ms, or None where it is none a step can take:
    negative (`count_field`), over a day (`MAX_STEP_MS`), not an integer, or longer than the
    time its run had run when the step ended (`within_s`: since the run's `starting cuzk
    engine`, where the log read it; None: not known): every step is timed inside the engine,
    whose TIMELINE epoch is set at that line (engine.rs:1242). The one rule for those figures,
    read where they are summed or placed: the partition table, the lock region's busy span."""
    n = count_field(value)
    if n is None or n > MAX_STEP_MS:
        return None
    return n if within_s is None or n <= (within_s + RUN_SLACK_S) * 1000 else None


def busy_span(fields: dict[str, FieldValue], within_s: float | None = None
              ) -> tuple[FieldValue, FieldValue]:
    """A lock region's busy span as its event gives it (`gpu_busy_start_s`, `gpu_busy_end_s`),
    or (None, None) where its `mutex_held_ms`, which placed it, is none a step takes
    (`step_ms`, `within_s` as there): a recording's event placed by
    `mutex_held_ms=99999999999999999` began 1e14 s before the log (the partition table's wall
    time, the Perfetto trace's lock slice)."""
    if "mutex_held_ms" in fields and step_ms(fields["mutex_held_ms"], within_s) is None:
        return None, None
    return fields.get("gpu_busy_start_s"), fields.get("gpu_busy_end_s")


def is_bad_step(value: FieldValue, within_s: float | None = None) -> bool:
    """An integer where a duration was wanted that `step_ms` drops: counted, said."""
    return is_bad_count(value) or (type(value) is int and step_ms(value, within_s) is None)


def warning_of(text: str) -> str | None:
    """The gap-explaining warning a line carries, if any (cheap substring tests)."""
    if "is_pinned=false" in text:
        return "unpinned"
    if "checkout FAILED" in text and "unpinned" in text:
        return "pinned_pool_fallback"
    if "cudaHostAlloc failed" in text:
        return "cuda_host_alloc_failed"
    return None


#: The log parser's counter of TIMELINE lines whose `partition=` names none cuzk writes
#: (`TimelineLine.partition_unread`): no event of theirs, each an `unparsed` line.
PARTITION_UNREAD_COUNTER = "timeline_partition_unread"


class TimelineLine(msgspec.Struct, gc=False):
    """One TIMELINE line's parts (a Struct: made once a line, it costs a third of a dataclass)."""

    #: None when the offset is too large to be one (beyond 64 bits): the field keeps its text.
    offset_ms: int | None
    event: str
    job_id: str | None
    fields: dict[str, FieldValue]
    #: Its `partition=P`; None where it names no partition (a monolithic job's line:
    #: `kind=K`, `monolithic`, `worker=W` alone, engine.rs:2665-3196) or one that does not read.
    partition: int | None = None
    #: It names a partition that is none cuzk writes (`partition_of`).
    partition_unread: bool = False


def partition_of(fields: dict[str, FieldValue]) -> tuple[int | None, bool]:
    """A TIMELINE line's partition and whether it names one that does not read: the one rule
    of "this line is a partition's, not a monolithic job's" (`parse_timeline`; a tracing
    line's Debug fields: `tracing_partition_of`; every consumer
    reads `LogEvent.partition`, None for a monolithic job). cuzk writes `partition={p}` of a
    `usize` (engine.rs:1719, 1752, 1778, 3023, 3131, 3196) or no partition at all; a value
    that is no count (beyond 64 bits, `abc`, `-1`, `007`, `None`, a bare `partition`) names a
    partition gapwatch cannot know, and read as None every consumer took the line for a
    monolithic job's (the partition table's monolithic row, the pipeline's monolithic job in
    flight, a whole job on the GPU, a LOST item of the GPU queue)."""
    if "partition" not in fields:
        return None, False
    p = count_field(fields["partition"])
    return p, p is None


#: The log parser's counter of tracing lines whose `partition` field names none cuzk writes
#: (`tracing_partition_of`): no event of theirs, each an `unparsed` line.
TRACING_PARTITION_UNREAD_COUNTER = "tracing_partition_unread"


def tracing_partition_of(value: FieldValue) -> tuple[int | None, bool]:
    """A tracing line's `partition` field, as the parser converted it, and whether it names one
    that does not read: `partition_of`'s rule for cuzk's tracing fields, which write the Debug
    of an `Option<usize>` (`Some(3)` is 3, `None` no partition: engine.rs:3057, a monolithic
    job's worker span) where TIMELINE writes the number. Anything else (`Some(2^64)`, `-1`,
    `abc`) read as None made an ERROR in a partition's span a monolithic job's failure."""
    if value is None:
        return None, False
    p = count_field(value)
    return p, p is None


def parse_timeline(text: str) -> TimelineLine | None:
    """`TIMELINE,812345,SYNTH_END,porep-1-2,partition=3,synth_ms=28413`; None if malformed.
    A line naming a partition that does not read is returned with `partition_unread` set: the
    parser gives no event of it, counted (`PARTITION_UNREAD_COUNTER`)."""
    parts = text.split(",", 4)
    if len(parts) < 3 or not parts[1].isdigit() or not parts[1].isascii() or not parts[2]:
        return None
    offset = digits_value(parts[1])  # an int, or the text when it does not fit 64 bits
    fields: dict[str, FieldValue] = {"offset_ms": offset}
    job_id = parts[3] if len(parts) > 3 and parts[3] else None
    if len(parts) > 4 and parts[4]:
        for item in parts[4].split(","):
            key, eq, value = item.partition("=")
            if eq:
                fields[key.strip()] = convert_value(value.strip())
            elif key:
                fields[key.strip()] = True  # `monolithic`
    partition, unread = partition_of(fields)
    return TimelineLine(offset if isinstance(offset, int) else None, parts[2], job_id, fields,
                        partition, unread)


def parse_cuzk_timing(body: str) -> tuple[str, dict[str, FieldValue]] | None:
    """The part after `CUZK_TIMING: `: (name, fields), name = first key other than gpu_tid."""
    # The prose lines' fixed words first (one C scan each), the pattern only where they are.
    m = _DA_CACHE.search(body) if _DA_CACHE_WORDS in body else None
    if m is not None:
        return "d_a_cache_allocated", {"size_mib": convert_value(m.group(1)),
                                       "gpu": convert_value(m.group(2))}
    m = _POOL_THRESHOLD.search(body) if _POOL_THRESHOLD_WORDS in body else None
    if m is not None:
        return "pool_release_threshold", {"gpu": convert_value(m.group(1))}
    fields: dict[str, FieldValue] = {}
    name = ""
    for token in body.split():
        key, eq, value = token.partition("=")
        if not eq or not key:
            continue
        fields[key] = convert_value(value)
        if not name and key != "gpu_tid":
            name = key
    if not fields:
        return None
    return name or "gpu_tid", fields


#: A token (a run of non-space, as `str.split` cuts them) with a key before its first `=`: what
#: makes `parse_cuzk_timing` and `parse_cuzk_ntt_h` give fields.
_KEYED_TOKEN = re.compile(r"(?<!\S)[^\s=]\S*=")


def cuzk_cpp_parses(body: str, timing: bool) -> bool:
    """Whether `parse_cuzk_timing(body)` (`timing`) or `parse_cuzk_ntt_h(body)` gives fields (is
    not None), without converting any: for a line whose event is not kept (the parser's
    `drops_untimed`), which is still counted as parsed (tests/test_parse_fast_paths.py holds
    the two to the same answer)."""
    if _KEYED_TOKEN.search(body) is not None:
        return True
    return timing and (
        (_DA_CACHE_WORDS in body and _DA_CACHE.search(body) is not None)
        or (_POOL_THRESHOLD_WORDS in body and _POOL_THRESHOLD.search(body) is not None))


def parse_cuzk_ntt_h(body: str) -> dict[str, FieldValue] | None:
    """The part after `CUZK_NTT_H: `: `ntt_kernels=3ms` becomes `ntt_kernels_ms=3`."""
    fields: dict[str, FieldValue] = {}
    for token in body.split():
        key, eq, value = token.partition("=")
        if not eq or not key:
            continue
        if value.endswith("ms"):
            fields[key + "_ms"] = convert_value(value[:-2])
        else:
            fields[key] = convert_value(value)
    return fields or None


@dataclass(slots=True)
class PartitionLock:
    """One GPU-lock region, attributed to the worker/partition that held it."""

    worker: int | None
    partition: int | None
    #: Time of the `spawn_blocking prove_start` line: the lock was released just before it.
    end_wall_s: float
    time_source: TimeSource
    fields: dict[str, FieldValue] = field(default_factory=dict)

    @property
    def mutex_held_ms(self) -> int | None:
        return step_ms(self.fields.get("mutex_held_ms"))


class _PendingProveStart(msgspec.Struct, gc=False):
    worker: int | None
    partition: int | None
    t_wall_s: float
    time_source: TimeSource
    arrival_mono_ns: int | None
    prove_start_ms: FieldValue
    #: Where it was read (`LockAttributor`: None, or the followed file whose backlog it is).
    place: str | None = None


class LockAttributor:
    """Pairs in-lock C++ lines with the `spawn_blocking prove_start` line that names the holder.

    Fed in arrival order. In one file (`2>&1` or journald) the C++ group always comes first. When
    stdout and stderr are two followed files the tracing line can be read first, so unmatched
    prove_start lines wait (at most `max_skew_ns` of arrival time) for a group, and finished groups
    wait for a name. Disabled once more than one GPU is known: in-lock lines of different GPUs
    interleave with nothing to tell them apart, and a wrong attribution is worse than none. A line
    marked `UNPLACED_FIELD` is not taken: read in an order that is not the order written (a
    second file read whole after the first, a backlog), groups and names pair by their place in
    the reading, not by the lock they describe.

    Each line comes from a `place`: None for lines placed by their arrival (followed live) or
    read in the order written (a file read whole), or the followed file whose backlog
    (`--from-start`: what it held when following began) it is. A backlog arrives at once, a
    file after another, between the live lines of the others: its lines are in the order
    written only among themselves. Groups and names pair only within one place: a file
    holding both (`2>&1`) pairs its backlog as written, and none of it is paired with a line
    read live or with another file's backlog (a stdout's backlog names, paired with the
    stderr's first live region, tied it to a partition of the backlog).
    """

    def __init__(self, max_skew_ns: int = 1_000_000_000, max_pending: int = 8) -> None:
        #: The group being read, by place (None, and one per followed backlog at most).
        self._open: dict[str | None, dict[str, FieldValue]] = {}
        #: Groups read whole and names waiting for each other, oldest first, each with its
        #: place (see the class docstring).
        self._done: deque[tuple[dict[str, FieldValue], int | None, str | None]] = deque()
        self._names: deque[_PendingProveStart] = deque()
        self._max_skew_ns = max_skew_ns
        self._max_pending = max_pending
        self.enabled = True
        self.dropped_groups = 0
        self.attributed = 0

    def feed_cpp(self, fields: dict[str, FieldValue], arrival_mono_ns: int | None,
                 place: str | None = None) -> PartitionLock | None:
        """A CUZK_TIMING / CUZK_NTT_H line's fields (`place`: see the class docstring);
        returns a lock region if one completes."""
        if not self.enabled or fields.get(UNPLACED_FIELD) is True:
            return None
        if "mutex_wait_ms" in fields:
            if place in self._open:
                self.dropped_groups += 1  # no mutex_held for the previous one (cut log)
            self._open[place] = {k: fields[k] for k in ("pre_lock_cpu_ms", "mutex_wait_ms")
                                 if k in fields}
            return None
        group = self._open.get(place)
        if group is None:
            return None
        if "ntt_kernels_ms" in fields:
            group["ntt_kernels_ms"] = fields["ntt_kernels_ms"]
            group["ntt_h_total_ms"] = fields.get("total_ms")
            return None
        for key in _IN_LOCK_KEYS:
            if key in fields:
                group[key] = fields[key]
        if "mutex_held_ms" in fields:
            group["mutex_held_ms"] = fields["mutex_held_ms"]
            group["total_start_fn_ms"] = fields.get("total_start_fn_ms")
            del self._open[place]
            self._done.append((group, arrival_mono_ns, place))
            return self._pair(arrival_mono_ns, place)
        return None

    def feed_prove_start(self, worker: int | None, partition: int | None, t_wall_s: float,
                         time_source: TimeSource, arrival_mono_ns: int | None,
                         prove_start_ms: FieldValue, unplaced: bool = False,
                         place: str | None = None) -> PartitionLock | None:
        """A `spawn_blocking prove_start` line, naming the holder (`unplaced`: the line is
        marked `UNPLACED_FIELD`, and names none; `place`: see the class docstring); returns a
        lock region if one completes."""
        if not self.enabled or unplaced:
            return None
        self._names.append(_PendingProveStart(worker, partition, t_wall_s, time_source,
                                              arrival_mono_ns, prove_start_ms, place))
        return self._pair(arrival_mono_ns, place)

    def resume_state(self) -> tuple[object, ...]:
        """What of this attributor shapes the regions it will pair (not its counts), for
        `LogParser.resume_state`."""
        return (self.enabled, self._open, list(self._done), list(self._names),
                self._max_skew_ns, self._max_pending)

    def disable(self) -> None:
        self.enabled = False
        self._open.clear()
        self._done.clear()
        self._names.clear()

    def _expire(self, now_ns: int | None) -> None:
        if now_ns is not None:
            while self._names and self._names[0].arrival_mono_ns is not None and (
                now_ns - self._names[0].arrival_mono_ns > self._max_skew_ns
            ):
                self._names.popleft()  # a prove_start with no C++ lines (older build, cut)
            while self._done and self._done[0][1] is not None and (
                now_ns - (self._done[0][1] or 0) > self._max_skew_ns
            ):
                self._done.popleft()
                self.dropped_groups += 1
        while len(self._names) > self._max_pending:
            self._names.popleft()
        while len(self._done) > self._max_pending:
            self._done.popleft()
            self.dropped_groups += 1

    def _pair(self, now_ns: int | None, place: str | None) -> PartitionLock | None:
        """The oldest group and the oldest name of `place` (the place of the line just read:
        only there can a pair have come), paired."""
        self._expire(now_ns)
        if not self._done or not self._names:
            return None
        done = next((d for d in self._done if d[2] == place), None)
        name = next((n for n in self._names if n.place == place), None)
        if done is None or name is None:
            return None
        self._done.remove(done)
        self._names.remove(name)
        group = done[0]
        group["prove_start_ms"] = name.prove_start_ms
        held = step_ms(group.get("mutex_held_ms"))
        if held is not None:  # a figure no step takes places no busy span (`step_ms`)
            group["gpu_busy_start_s"] = name.t_wall_s - held / 1000.0
            group["gpu_busy_end_s"] = name.t_wall_s
        self.attributed += 1
        return PartitionLock(name.worker, name.partition, name.t_wall_s, name.time_source,
                             {k: v for k, v in group.items() if v is not None})


def says_when_written(record: object, arrival_timed: bool) -> bool:
    """Whether a record's time says when it was written: any but a log line timed when it was
    read from its file's backlog (`--from-start`: "backlog"), or by its arrival where arrival
    means nothing (`arrival_timed` False: `gapwatch parse` reads a file at once)."""
    source = getattr(record, "time_source", None)
    return source != "backlog" and (arrival_timed or source != "arrival")
