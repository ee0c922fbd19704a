"""The derived per-partition timeline of a cuzk run, computed from its log events and, where
the logs are missing, from the prover's own `/status` snapshots.

Who calls it: the detector (evidence), `gapwatch report`, the dashboard and `gapwatch parse
--timeline`. Pure function over a list of `LogEvent`s and `ProverStatus` records (live or
recorded) -> dataclasses.

From status snapshots (`status_partitions`), poll by poll: `synth_ms` and `gpu_ms` count up
while a phase runs, so the first poll that sees a partition in `gpu` places its GPU start at
`poll time - gpu_ms`, and the first that sees it `done` gives its final `gpu_ms` and end; the
worker and GPU come from the worker that named it; every state's first poll is kept
(`states_seen`), so a transition lies between that poll and the one before. A partition the
logs describe keeps the logs' figures; status only fills what they lack (`source` says which).

Per partition: the TIMELINE GPU_START..GPU_END interval (`gpu_ms` includes mutex wait and CPU
b_g2_msm, so it overstates GPU use), the GPU-occupied interval (`mutex_held_ms`, placed ending at
the `spawn_blocking prove_start` line), H2D-inside-NTT time (`CUZK_NTT_H ntt_kernels`: with
pageable a/b/c the host blocks there while staging the copy), mutex wait, barrier wait.

Per run, the two figures cuzk's design docs compute by hand (they quote 90.1 % vs 46.3 %):
- "GPU efficiency (merged intervals)": union of GPU_START..GPU_END over the wall time;
- "kernel utilisation": sum of gpu_total_ms (else mutex_held_ms) over the wall time;
plus `occupied_fraction` (union of the mutex-held intervals over the wall time), the closest of
the three to true GPU busy time, and the idle holes between those intervals.
Wall time runs from the first GPU_START to the last GPU_END (or occupied interval).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from sys import intern

from msgspec.structs import replace

from gapwatch.core.models import FieldValue, LogEvent, ProverStatus
from gapwatch.core.values import int_field
from gapwatch.cuzk.log_lines import PARTITION_KIND, LockAttributor


@dataclass(slots=True)
class PartitionTiming:
    job_id: str | None
    partition: int | None
    worker: int | None = None
    gpu: int | None = None
    gpu_start_s: float | None = None
    gpu_end_s: float | None = None
    #: TIMELINE GPU_END gpu_ms (includes mutex wait and b_g2_msm).
    timeline_gpu_ms: int | None = None
    busy_start_s: float | None = None
    busy_end_s: float | None = None
    mutex_held_ms: int | None = None
    mutex_wait_ms: int | None = None
    gpu_total_ms: int | None = None
    #: CUZK_NTT_H ntt_kernels: H2D of a/b/c absorbed by the NTT enqueue (pageable memory).
    h2d_in_ntt_ms: int | None = None
    barrier_wait_ms: int | None = None
    unpinned: bool = False
    #: Synthesis time (TIMELINE SYNTH_END, else the prover's status).
    synth_ms: int | None = None
    #: "log", "status" (only the prover's /status snapshots knew it) or "log+status".
    source: str = "log"
    #: First poll (Unix s) that saw the partition in each state (status snapshots only).
    states_seen: dict[str, float] = field(default_factory=dict)
    #: Which run of the prover it belongs to (1, then 2 after the first restart...: a job id
    #: Curio retries after a restart is a new row, not an overwrite).
    run: int = 1
    #: A monolithic job's proof kind (TIMELINE `SYNTH_START kind=...`: PoSt, a batch), None for
    #: a partition. cuzk never pins a monolithic job's a/b/c (pipeline.rs:3015, 3210).
    kind: str | None = None
    #: Its synthesis started before the run's first synthesis ended: no capacity hint existed
    #: yet, so it was synthesised unpinned (pipeline.rs:176-230), the first wave after a start.
    first_wave: bool = False

    @property
    def monolithic(self) -> bool:
        return self.partition is None

    @property
    def pinned_words(self) -> str:
        """The table's `pinned` cell: "no" for a monolithic job (never pinned), a partition
        the log said unpinned or one of a first wave (no capacity hint yet), "-" where only
        /status knew it, else "yes"."""
        if self.monolithic or self.unpinned or self.first_wave:
            return "no"
        return "yes" if self.source != "status" else "-"


@dataclass(slots=True)
class RunTimeline:
    partitions: list[PartitionTiming] = field(default_factory=list)
    wall_start_s: float | None = None
    wall_end_s: float | None = None
    #: Union of GPU_START..GPU_END intervals / wall time (cuzk's "GPU efficiency").
    merged_efficiency: float | None = None
    #: Sum of gpu_total_ms (else mutex_held_ms) / wall time (cuzk's "kernel utilisation").
    kernel_utilisation: float | None = None
    #: Union of mutex-held intervals / wall time.
    occupied_fraction: float | None = None
    #: Holes between merged mutex-held intervals: (start_s, end_s).
    idle_gaps: list[tuple[float, float]] = field(default_factory=list)

    @property
    def wall_s(self) -> float | None:
        if self.wall_start_s is None or self.wall_end_s is None:
            return None
        return self.wall_end_s - self.wall_start_s


def merge_intervals(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Sorted, non-overlapping union of [start, end] intervals (empty or reversed ones dropped)."""
    merged: list[tuple[float, float]] = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


#: The TIMELINE events `derive_timeline` reads.
_TIMELINE_NAMES = ("GPU_START", "GPU_END", "SYNTH_START", "SYNTH_END")
#: The line that starts each run of the daemon (engine.rs:1244, the TIMELINE epoch).
RUN_START = "starting cuzk engine"


def timeline_event(e: LogEvent) -> LogEvent | None:
    """`e` as `derive_timeline` needs it (its raw line dropped), or None when it does not read
    it: what a caller keeps of a long log (a million lines) to derive the timeline afterwards,
    so that memory grows with the partitions, not with the lines."""
    kind = e.kind
    # One string per job id, however many lines name it: the timeline keeps a job id in each
    # partition's record and keys (a day of 8 GPUs has ~450,000 partitions).
    job = intern(e.job_id) if e.job_id is not None else None
    if (kind == PARTITION_KIND or kind in ("cuzk_timing", "cuzk_ntt_h")
            or (kind == "timeline" and e.name in _TIMELINE_NAMES)
            or (kind == "tracing" and e.name in ("GPU_TIMING spawn_blocking prove_start",
                                                 RUN_START))):
        return replace(e, raw="", job_id=job)
    if e.warning == "unpinned":
        return replace(e, raw="", fields={}, job_id=job)
    return None


def status_partitions(statuses: Iterable[ProverStatus]) -> dict[tuple[str, int], PartitionTiming]:
    """Per-partition timings from the prover's status snapshots (in time order), by (job, index)."""
    out: dict[tuple[str, int], PartitionTiming] = {}
    for st in statuses:
        t = st.t_wall_s
        on_worker = {(w.job_id, w.partition): w for w in st.workers
                     if w.state == "proving" and w.job_id is not None}
        for p in st.partitions:
            key = (p.job_id, p.index)
            rec = out.get(key)
            if rec is None:
                rec = out[key] = PartitionTiming(job_id=p.job_id, partition=p.index,
                                                 source="status")
            rec.states_seen.setdefault(p.state, t)
            if p.synth_ms is not None:
                rec.synth_ms = p.synth_ms  # counts up while synthesising: the last is final
            if p.gpu_ms is not None:
                if p.state == "gpu" and rec.gpu_start_s is None:
                    rec.gpu_start_s = t - p.gpu_ms / 1000.0
                elif p.state in ("done", "failed"):
                    rec.timeline_gpu_ms = p.gpu_ms
                    if rec.gpu_start_s is not None and rec.gpu_end_s is None:
                        rec.gpu_end_s = rec.gpu_start_s + p.gpu_ms / 1000.0
            w = on_worker.get(key)
            if w is not None:
                rec.worker, rec.gpu = w.worker_id, w.gpu
    return out


#: States in which a partition has been (or is) on a GPU.
_GPU_STATES = frozenset(("gpu", "done", "failed"))


def _order(r: PartitionTiming) -> float:
    if r.gpu_start_s is not None:
        return r.gpu_start_s
    if r.busy_start_s is not None:
        return r.busy_start_s
    return min(r.states_seen.values(), default=0.0)


def _fill_from_status(rec: PartitionTiming, st: PartitionTiming) -> None:
    """A log-described partition keeps its figures; the status fills what the logs lack."""
    filled = False
    for name in ("synth_ms", "gpu_start_s", "gpu_end_s", "timeline_gpu_ms", "worker", "gpu"):
        if getattr(rec, name) is None and getattr(st, name) is not None:
            setattr(rec, name, getattr(st, name))
            filled = True
    rec.states_seen = dict(st.states_seen)
    if filled:
        rec.source = "log+status"


def derive_timeline(events: Iterable[LogEvent],
                    statuses: Iterable[ProverStatus] = ()) -> RunTimeline:
    """Build the per-partition records and run figures from a run's events (in arrival order)
    and the prover's status snapshots (in time order), the latter where the logs are silent."""
    builder = TimelineBuilder()
    for e in events:
        builder.add(e)
    return builder.finish(statuses)


#: A lock region as `TimelineBuilder` keeps it: job, partition, worker, then mutex held, mutex
#: wait, GPU total, NTT kernels, barrier wait (ms) and the busy span (s, s), as read.
_LockRow = tuple[str | None, int | None, int | None, int | None, int | None, int | None,
                 int | None, int | None, FieldValue, FieldValue]


def _lock_row(e: LogEvent) -> _LockRow:
    f = e.fields
    return (e.job_id, e.partition, e.worker, int_field(f.get("mutex_held_ms")),
            int_field(f.get("mutex_wait_ms")), int_field(f.get("gpu_total_ms")),
            int_field(f.get("ntt_kernels_ms")), int_field(f.get("barrier_wait_ms")),
            f.get("gpu_busy_start_s"), f.get("gpu_busy_end_s"))


class TimelineBuilder:
    """`derive_timeline` one event at a time (`add`, then `finish`), holding what the table
    needs (a record per partition, a row per lock region), never the events: `parse --timeline`
    over a log of a million lines grows with its partitions, not its lines."""

    def __init__(self) -> None:
        #: (run, job, partition or ("w", worker)) -> its record.
        self._parts: dict[tuple[int, object, object], PartitionTiming] = {}
        #: The daemon's run (1, 2 after the first `starting cuzk engine` that follows work),
        #: whether the run has seen work yet, and whether its first synthesis has ended.
        self._run = 1
        self._run_busy = False
        self._wave_over = False
        #: Each worker's job as of its latest GPU_START (the whole log's, at `finish`).
        self._worker_job: dict[tuple[int, int], str | None] = {}
        #: A partition's synthesis time and `unpinned` warning, by (run, job, partition), until
        #: its row is made (then they are the row's: keeping them here too cost ~185 bytes a
        #: partition, and the day of bench/report_memory.py names ~456,000); a monolithic job's
        #: until `finish`.
        self._unpinned: set[tuple[int, str | None, int | None]] = set()
        self._synth_ms: dict[tuple[int, str | None, int | None], int] = {}
        #: (run, job, partition) synthesised before the run's first synthesis ended.
        self._first_wave: set[tuple[int, str | None, int | None]] = set()
        #: (run, job) -> a monolithic job's proof kind (its SYNTH_START `kind=`).
        self._mono_kind: dict[tuple[int, str | None], str] = {}
        #: Lock regions the parser attributed (its `PARTITION_KIND` events), with their run;
        #: without any, the attribution redone here from the C++ lines and prove_start lines.
        self._parser_locks: list[tuple[int, _LockRow]] = []
        self._attributor: LockAttributor | None = LockAttributor()
        self._own_locks: list[tuple[int, _LockRow]] = []

    def _get(self, job_id: str | None, partition: int | None,
             worker: int | None, run: int | None = None) -> PartitionTiming:
        run = self._run if run is None else run
        key = (run, job_id, partition if partition is not None else ("w", worker))
        rec = self._parts.get(key)
        if rec is None:
            rec = self._parts[key] = PartitionTiming(job_id=job_id, partition=partition, run=run)
            if partition is not None:
                mine = (run, job_id, partition)
                rec.synth_ms = self._synth_ms.pop(mine, None)
                if mine in self._unpinned:
                    self._unpinned.discard(mine)
                    rec.unpinned = True
        return rec

    def _row(self, partition: int | None, job_id: str | None) -> PartitionTiming | None:
        """This run's row of a partition, if made (None for a monolithic job's events)."""
        if partition is None:
            return None
        return self._parts.get((self._run, job_id, partition))

    def _new_run(self) -> None:
        """`starting cuzk engine`: a later one, after work, starts the next run's rows."""
        if self._run_busy:
            self._run += 1
        self._run_busy = False
        self._wave_over = False

    def _synth_start(self, e: LogEvent) -> None:
        if e.partition is not None:
            if not self._wave_over:
                self._first_wave.add((self._run, e.job_id, e.partition))
            return
        kind = e.fields.get("kind")
        if isinstance(kind, str):  # a monolithic job: its row is made at GPU_START
            self._mono_kind[(self._run, e.job_id)] = kind

    def _gpu_edge(self, e: LogEvent) -> None:
        """A partition's (or a monolithic job's) GPU_START or GPU_END."""
        rec = self._get(e.job_id, e.partition, e.worker)
        rec.worker = e.worker if e.worker is not None else rec.worker
        rec.gpu = e.gpu if e.gpu is not None else rec.gpu
        if rec.monolithic and rec.kind is None:
            rec.kind = self._mono_kind.get((self._run, e.job_id), "monolithic")
        if e.name == "GPU_START":
            rec.gpu_start_s = e.t_wall_s
            if e.worker is not None:
                self._worker_job[(self._run, e.worker)] = e.job_id
        else:
            rec.gpu_end_s = e.t_wall_s
            rec.timeline_gpu_ms = int_field(e.fields.get("gpu_ms"))

    def add(self, e: LogEvent) -> None:
        kind, name = e.kind, e.name
        if kind == "tracing" and name == RUN_START:
            self._new_run()
            return
        if kind == "timeline":
            self._run_busy = True
        if kind == "timeline" and name == "SYNTH_START":
            self._synth_start(e)
        elif kind == "timeline" and name in ("GPU_START", "GPU_END"):
            self._gpu_edge(e)
        elif kind == "timeline" and name == "SYNTH_END":
            self._wave_over = True
            ms = int_field(e.fields.get("synth_ms"))
            if ms is not None:
                row = self._row(e.partition, e.job_id)
                if row is not None:
                    row.synth_ms = ms
                else:
                    self._synth_ms[(self._run, e.job_id, e.partition)] = ms
        elif e.warning == "unpinned":
            row = self._row(e.partition, e.job_id)
            if row is not None:
                row.unpinned = True
            else:
                self._unpinned.add((self._run, e.job_id, e.partition))
        if kind == PARTITION_KIND:
            self._parser_locks.append((self._run, _lock_row(e)))
            self._attributor, self._own_locks = None, []  # the parser's attribution wins
            return
        attributor = self._attributor
        if attributor is None:
            return
        lock = None
        if kind in ("cuzk_timing", "cuzk_ntt_h"):
            lock = attributor.feed_cpp(dict(e.fields), None)
        elif kind == "tracing" and name == "GPU_TIMING spawn_blocking prove_start":
            lock = attributor.feed_prove_start(e.worker, e.partition, e.t_wall_s, e.time_source,
                                               None, e.fields.get("prove_start_ms"))
        if lock is not None:
            self._own_locks.append((self._run, _lock_row(LogEvent(
                t_wall_s=lock.end_wall_s, time_source=e.time_source, kind=PARTITION_KIND,
                name="gpu_lock", raw="", worker=lock.worker, partition=lock.partition,
                fields=lock.fields))))

    def finish(self, statuses: Iterable[ProverStatus] = ()) -> RunTimeline:
        """The table, with the prover's status snapshots (in time order) where the logs are
        silent. Lock regions are placed after every event, by each worker's last job."""
        parts = self._parts
        for run, (job, partition, worker, held, wait, total, ntt, barrier, start, end) in (
                self._parser_locks or self._own_locks):
            if job is None and worker is not None:
                job = self._worker_job.get((run, worker))
            rec = self._get(job, partition, worker, run)
            rec.worker = worker if worker is not None else rec.worker
            rec.mutex_held_ms, rec.mutex_wait_ms, rec.gpu_total_ms = held, wait, total
            rec.h2d_in_ntt_ms, rec.barrier_wait_ms = ntt, barrier
            if isinstance(start, float) and isinstance(end, float):
                rec.busy_start_s, rec.busy_end_s = start, end
        latest: dict[tuple[object, object], PartitionTiming] = {}
        for (run, _job, _part), rec in parts.items():
            mine = (run, rec.job_id, rec.partition)
            if rec.partition is None:  # a partition's came with its row (`_get`)
                rec.unpinned = mine in self._unpinned
                rec.synth_ms = self._synth_ms.get(mine)
            rec.first_wave = mine in self._first_wave
            if rec.partition is not None:
                latest[(rec.job_id, rec.partition)] = rec  # runs in order: the last run's wins
        for key, st in status_partitions(statuses).items():
            known = latest.get(key)
            if known is not None:
                _fill_from_status(known, st)
            elif not _GPU_STATES.isdisjoint(st.states_seen):
                # The logs never named it: a row of its own, if it reached a GPU.
                st.run = self._run
                parts[(self._run, key[0], key[1])] = st
        ordered = sorted(parts.values(), key=_order)
        return _summarise(ordered)


def _summarise(parts: list[PartitionTiming]) -> RunTimeline:
    run = RunTimeline(partitions=parts)
    spans = [(p.gpu_start_s, p.gpu_end_s) for p in parts
             if p.gpu_start_s is not None and p.gpu_end_s is not None]
    busy = [(p.busy_start_s, p.busy_end_s) for p in parts
            if p.busy_start_s is not None and p.busy_end_s is not None]
    edges = [t for pair in spans + busy for t in pair]
    if not edges:
        return run
    run.wall_start_s, run.wall_end_s = min(edges), max(edges)
    wall = run.wall_end_s - run.wall_start_s
    if wall <= 0:
        return run
    if spans:
        run.merged_efficiency = sum(b - a for a, b in merge_intervals(spans)) / wall
    kernel_ms = [p.gpu_total_ms if p.gpu_total_ms is not None else p.mutex_held_ms for p in parts]
    known = [ms for ms in kernel_ms if ms is not None]
    if known:
        run.kernel_utilisation = sum(known) / 1000.0 / wall
    if busy:
        merged = merge_intervals(busy)
        run.occupied_fraction = sum(b - a for a, b in merged) / wall
        run.idle_gaps = [(merged[i][1], merged[i + 1][0]) for i in range(len(merged) - 1)]
    return run
