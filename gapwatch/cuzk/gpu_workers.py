"""Which partition (or monolithic job) each of cuzk's GPU workers holds, as its log tells it.

Who calls it: `gapwatch.cuzk.pipeline.PipelineFacts` (feeds it every TIMELINE and tracing event
that names a GPU worker, and a restart; asks it of a gap a queued partition waited through), and
`gapwatch.cuzk.post.PostTracker` (asks it what a PoSt queued for the GPU waited behind; tells it
its monolithic workers' jobs and a restart shown by the TIMELINE offsets alone). One rule of what
a worker holds for both: the watcher held a worker to its partition's GPU_END and said a PoSt
waited behind a worker the gaps called free. And one keeper a process: where both are fed the
same records (the session, the report), the PoSt reads `PipelineFacts`' (`CuzkWatch`'s
`holds`); only a `PostTracker` with no `PipelineFacts` beside it (`gapwatch parse`) keeps and
feeds its own.
Pure: no I/O, no clocks; bounded (`HISTORY` holds kept, `MAX_WORKERS` workers).

Why: a partition queued for the GPU (GPU_QUEUE) and picked up (GPU_PICKUP) only after an idle
gap is a dispatch stall only where a worker of that GPU was free to take it. cuzk's GPU worker
loop (engine.rs, curio e0294b0f; cuzk-log-formats.md §1.1, §1.4, §3.2) pops a partition
(GPU_PICKUP, 3023), takes the status and job trackers (`GPU_TIMING hot_path pre-prove
overhead`, 3057), writes GPU_START (3131) and runs `gpu_prove_start` on a blocking thread: CPU
prep, the per-GPU C++ mutex that GPU's workers share, the a/b/c copies and kernels under it,
`barrier_wait` for CPU prep with the lock held. It returns once the lock is released
(`GPU_TIMING spawn_blocking prove_start`, 3139, then `GPU_TIMING prove_start returned`, 3148),
the finalizer (b_g2_msm, the epilogue, GPU_END 3196, the result) is spawned apart, and the
worker loops back to the queue. So a worker holds its partition from GPU_PICKUP until
prove_start returns. With two workers per GPU, both holding one (one under the lock, one waiting
on it), a third partition queued waits for a worker, not for dispatch: the GPU's idle is inside
the workers.

A hold ends at the first of: its `spawn_blocking prove_start` or `prove_start returned` line
(the same worker and partition); its GPU_END (written after prove_start returned: where the
tracing lines are not read); in its worker's span, its prove start's failure or its skip (a
failed job's partition, engine.rs:3034-3042, 3282, 3302), or, the prove synchronous
(`CUZK_DISABLE_SPLIT_PROVE=1`, 3078-3118: no GPU_START, no GPU_END, no prove_start line), its
result line there; its worker's next GPU_PICKUP (a worker holds one at a time); its daemon's
restart (cuzk keeps nothing across one). A line of an earlier partition read late (cuzk's stdout
and stderr read apart) ends nothing: a line ends a hold only at or after its pickup.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from gapwatch.core import fmt
from gapwatch.core.bounds import keep_latest
from gapwatch.core.models import LogEvent
from gapwatch.cuzk.log_lines import (
    GPU_FAILED_MESSAGES,
    GPU_WORKER_SPAN,
    MONOLITHIC_END_MESSAGES,
    MONOLITHIC_PROCESSING_MESSAGE,
    PROVE_START_MESSAGE,
    SKIPPED_GPU_PROVE_MESSAGE,
    SYNC_GPU_DONE_MESSAGES,
)

#: engine.rs:3148, INFO in the worker's span: `gpu_prove_start` returned; the worker loops.
PROVE_RETURNED_MESSAGE = "GPU_TIMING prove_start returned"
#: The tracing lines that end the hold of the worker (and partition) they name: prove_start
#: returned (3139, on the blocking thread, no span; 3148, in the span).
_RETURNED = frozenset((PROVE_START_MESSAGE, PROVE_RETURNED_MESSAGE))
#: The lines that end a hold only where written in its worker's span (`GPU_WORKER_SPAN`): the
#: finalizer writes the same messages in no span, after the worker had looped back. Its job's
#: result processed there (the synchronous prove's, `CUZK_DISABLE_SPLIT_PROVE=1`, engine.rs:
#: 3078-3118: `partition GPU prove complete` and, failed, `partition GPU proving failed`,
#: 474-479, 656, 679 via 3105), its GPU step's failure (3282, 3302), or its skip (3034-3042).
_IN_SPAN_ENDS = frozenset((*GPU_FAILED_MESSAGES, SKIPPED_GPU_PROVE_MESSAGE,
                           *SYNC_GPU_DONE_MESSAGES))
#: Holds kept after their end (a busy prover's last half hour or so of partitions).
HISTORY = 512
#: Workers kept (their latest hold and GPU): cuzk runs GPUs x gpu_workers_per_device of them.
MAX_WORKERS = 256


@dataclass(slots=True)
class Hold:
    """One worker holding one partition (or a monolithic job: `partition` None) from its
    GPU_PICKUP (`since_s`) until the line that ended it (`until_s`, None while held)."""

    daemon: int
    worker: int
    #: Its GPU as the line said it (the parser's worker map), None where not known then.
    gpu: int | None
    job: str
    partition: int | None
    since_s: float
    until_s: float | None = None
    #: What ended it, in words (`_END_WORDS`' or the line's message).
    ended_by: str = ""
    #: A monolithic worker's job's kind as its line said it (the pipeline off: `monolithic`).
    kind: str | None = None

    def what(self) -> str:
        job = fmt.visible(self.job)
        return (f"partition {self.partition} of {job}" if self.partition is not None
                else f"job {job}")

    def words(self, until_s: float) -> str:
        """`worker 0: partition 0 of J since 14:00:06.000`, with its end where it came before
        `until_s` (the gap's end)."""
        out = f"worker {self.worker}: {self.what()} since {fmt.clock(self.since_s, millis=True)}"
        if self.until_s is not None and self.until_s <= until_s:
            out += f" until {fmt.clock(self.until_s, millis=True)} ({self.ended_by})"
        return out

    def freed_words(self) -> str:
        """`worker 0: free since 14:00:08.000 (partition 0 of J: prove_start returned ...)`:
        a worker whose latest hold ended before a stretch and held nothing in it."""
        until = fmt.clock(self.until_s, millis=True) if self.until_s is not None else "?"
        return f"worker {self.worker}: free since {until} ({self.what()}: {self.ended_by})"


@dataclass(frozen=True, slots=True)
class HeldOver:
    """What the holds of one GPU's workers say of a stretch of time (`WorkerHolds.over`)."""

    #: Seconds of the stretch in which fewer workers than the GPU has held work.
    free_s: float
    #: The holds that met the stretch, by worker then time.
    holds: tuple[Hold, ...]
    #: Of each worker that held nothing in the stretch, its latest hold before it.
    freed: tuple[Hold, ...]
    #: How many workers the GPU has, and where that number came from, in words.
    workers: int
    workers_from: str
    #: The log shows a worker free: one whose latest hold ended before the stretch (`freed`)
    #: or within it, its worker holding nothing after. A dispatch stall resting on this stands
    #: over a `/status` that shows every worker proving (status.rs keeps a worker `proving`
    #: until its finalizer ends, after it looped back: `gapwatch.cuzk.causes.with_log_cause`).
    free_shown: bool = False


class WorkerHolds:
    """Each GPU worker's holds, fed one event at a time (`feed`, `restarted`)."""

    __slots__ = ("open", "done", "worker_gpu")

    def __init__(self) -> None:
        #: (daemon, worker) -> its hold now (a worker holds one at a time).
        self.open: dict[tuple[int, int], Hold] = {}
        #: Ended holds, oldest first.
        self.done: deque[Hold] = deque(maxlen=HISTORY)
        #: (daemon, worker) -> its GPU, the latest a line of it said (worker ids are one
        #: daemon's: engine.rs:2936-2940 numbers them GPU-major from 0 in each).
        self.worker_gpu: dict[tuple[int, int], int] = {}

    def feed(self, ev: LogEvent, daemon: int) -> None:
        """One event of `daemon`'s lines: a pickup begins a hold, an end line ends one."""
        w = ev.worker
        if w is None:
            return
        key = (daemon, w)
        if ev.gpu is not None and self.worker_gpu.get(key) != ev.gpu:
            keep_latest(self.worker_gpu, key, ev.gpu, MAX_WORKERS)
        if ev.kind == "timeline":
            if ev.name == "GPU_PICKUP" and ev.job_id is not None:
                self._end(key, ev.t_wall_s, "its next GPU_PICKUP")
                keep_latest(self.open, key, Hold(daemon, w, ev.gpu, ev.job_id, ev.partition,
                                                 ev.t_wall_s), MAX_WORKERS)
            elif ev.name == "GPU_END":
                self._end_of(key, ev, "its GPU_END, engine.rs:3196")
        elif ev.kind == "tracing":
            if ev.name in _RETURNED:
                self._end_of(key, ev, "prove_start returned, engine.rs:3139-3148")
            elif ev.name in _IN_SPAN_ENDS and ev.fields.get("spans") == GPU_WORKER_SPAN:
                self._end_of(key, ev, f"'{ev.name}' in its worker's span")

    def _end_of(self, key: tuple[int, int], ev: LogEvent, words: str) -> None:
        """End `key`'s hold where the line is of its partition (and job, where it names one)
        and not older than its pickup."""
        hold = self.open.get(key)
        if hold is None or ev.t_wall_s < hold.since_s or ev.partition != hold.partition:
            return
        if ev.job_id is not None and ev.job_id != hold.job:
            return
        self._end(key, ev.t_wall_s, words)

    def _end(self, key: tuple[int, int], t_s: float, words: str) -> None:
        hold = self.open.pop(key, None)
        if hold is not None:
            hold.until_s, hold.ended_by = max(t_s, hold.since_s), words
            self.done.append(hold)

    def monolithic(self, ev: LogEvent, daemon: int) -> None:
        """A line of one of `daemon`'s monolithic workers (the pipeline off) about its job
        (`pipeline.monolithic_worker_line`): `processing job (monolithic)` begins its hold,
        its completion or failure ends it (engine.rs:3397-3475). Not fed by `feed`: only a
        line of the run (a stray one of another run is the caller's to pass over)."""
        w, job = ev.worker, ev.job_id
        if w is None or job is None:
            return
        key = (daemon, w)
        if ev.name == MONOLITHIC_PROCESSING_MESSAGE:
            self._end(key, ev.t_wall_s, "its next job")
            kind = ev.fields.get("proof_kind")
            keep_latest(self.open, key, Hold(daemon, w, ev.gpu, job, None, ev.t_wall_s,
                                             kind=kind if isinstance(kind, str) else None),
                        MAX_WORKERS)
        elif ev.name in MONOLITHIC_END_MESSAGES:
            self._end_of(key, ev, f"'{ev.name}' in its worker's span")

    def held(self, daemon: int) -> list[Hold]:
        """What `daemon`'s workers hold now, by worker."""
        return sorted((h for k, h in self.open.items() if k[0] == daemon),
                      key=lambda h: h.worker)

    def restarted(self, daemon: int | None, t_s: float) -> None:
        """`daemon` (None: not known which, every one) restarted at `t_s`: what its workers
        held died with its old run."""
        for key in [k for k, h in self.open.items()
                    if (daemon is None or k[0] == daemon) and h.since_s <= t_s]:
            self._end(key, t_s, "cuzk restarted")

    def _gpu_of(self, hold: Hold) -> int | None:
        """A hold's GPU: its line's, else the latest its worker's lines said."""
        if hold.gpu is not None:
            return hold.gpu
        return self.worker_gpu.get((hold.daemon, hold.worker))

    def workers_seen(self, gpu: int, daemon: int, one_gpu: bool) -> int:
        """How many distinct workers of `gpu` (of `daemon`) the holds kept name."""
        return len({h.worker for h in self._all() if self._of(h, gpu, daemon, one_gpu)})

    def over(self, gpu: int, daemon: int, one_gpu: bool, from_s: float, until_s: float,
             workers: tuple[int, str]) -> HeldOver:
        """The holds of `gpu`'s workers over [from_s, until_s] and the seconds of it in which
        fewer than `workers` (how many it has, and whence) held work. `one_gpu`: the log says
        one GPU (or nothing of how many): a hold whose GPU is not known is then `gpu`'s."""
        mine = [h for h in self._all() if self._of(h, gpu, daemon, one_gpu)]
        holds = sorted((h for h in mine if h.since_s < until_s
                        and (h.until_s is None or h.until_s > from_s)),
                       key=lambda h: (h.worker, h.since_s))
        holding = {(h.daemon, h.worker) for h in holds}
        freed: dict[tuple[int, int], Hold] = {}
        for h in mine:  # oldest first: the latest of each stays
            if (h.daemon, h.worker) not in holding and h.until_s is not None \
                    and h.until_s <= from_s:
                freed[(h.daemon, h.worker)] = h
        n, whence = workers
        return HeldOver(_free_s(holds, from_s, until_s, n), tuple(holds),
                        tuple(sorted(freed.values(), key=lambda h: h.worker)), n, whence,
                        bool(freed) or _ended_within(holds, until_s))

    def _all(self) -> list[Hold]:
        return [*self.done, *self.open.values()]

    def _of(self, hold: Hold, gpu: int, daemon: int, one_gpu: bool) -> bool:
        if hold.daemon != daemon:
            return False  # another daemon's workers feed another GPU
        g = self._gpu_of(hold)
        return g == gpu or (g is None and one_gpu)


def _ended_within(holds: list[Hold], until_s: float) -> bool:
    """Did a worker's latest hold of `holds` end before `until_s`, leaving it free after?"""
    latest: dict[tuple[int, int], Hold] = {}
    for h in holds:  # by worker then time: the latest of each stays
        latest[(h.daemon, h.worker)] = h
    return any(h.until_s is not None and h.until_s < until_s for h in latest.values())


def _free_s(holds: list[Hold], from_s: float, until_s: float, workers: int) -> float:
    """Seconds of [from_s, until_s] in which fewer than `workers` of `holds` were held (a
    sweep over their clipped starts and ends)."""
    edges: list[tuple[float, int]] = []
    for h in holds:
        lo = max(h.since_s, from_s)
        hi = until_s if h.until_s is None else min(h.until_s, until_s)
        if hi > lo:
            edges += [(lo, 1), (hi, -1)]
    edges.sort()
    free_s, held, t = 0.0, 0, from_s
    for at_s, step in edges:
        if held < workers:
            free_s += at_s - t
        held, t = held + step, at_s
    if held < workers:
        free_s += until_s - t
    return free_s
