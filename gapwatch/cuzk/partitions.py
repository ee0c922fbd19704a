"""The derived per-partition timeline of a cuzk run, computed from its log events and, where
the logs are missing, from the prover's own `/status` snapshots.

Who calls it: `gapwatch report` (the detection loop feeds a `TimelineBuilder`), `gapwatch parse
--timeline`, tests. Log events and `ProverStatus` records (live or recorded) in, a
`RunTimeline` out; the rows wait on disk beyond a few thousand (`partition_table`), so a
week's table takes no more memory than an hour's.

From status snapshots (`TimelineBuilder.add_status`), poll by poll: `synth_ms` and `gpu_ms`
count up while a phase runs, so the first poll that sees a partition in `gpu` places its GPU
start at `poll time - gpu_ms`, and the first that sees it `done` gives its final `gpu_ms` and
end; the worker and GPU come from the worker that named it; every state's first poll is kept
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

A row is a partition, or a monolithic GPU job (no partition): a batch of 2+ PoRep or SnapDeals
requests (`[scheduler] max_batch_size` > 1) or a PoSt. The run counts them apart
(`RunTimeline.units_words`, `rate_unit`: the table's headline and the payoff's unit), with a
batch's sectors where its log lines say one size, and its rows synthesised unpinned by the one
rule of their `pinned` cell (`PartitionTiming.synthesised_unpinned`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from operator import attrgetter
from sys import intern
from typing import Final, TypeVar

from msgspec.structs import replace

from gapwatch.core.models import POOL_FALLBACK_WARNINGS, FieldValue, LogEvent, ProverStatus
from gapwatch.core.sizes import TEXT_CHARS, cut_text
from gapwatch.core.values import int_field
from gapwatch.cuzk.daemons import Daemons
from gapwatch.cuzk.log_lines import (
    ANCHOR_MESSAGE,
    CONFIGURATION_LOADED_MESSAGE,
    DAEMON_STARTING_MESSAGE,
    INIT_WORKERS_MESSAGE,
    PARTITION_KIND,
    PROVE_START_MESSAGE,
    SYNTH_SENT_MESSAGE,
    UNPLACED_FIELD,
    WORKER_STARTED_MESSAGE,
    LockAttributor,
    busy_span,
    is_bad_step,
    step_ms,
)
from gapwatch.cuzk.partition_table import (
    FIRST_WAVE,
    GPU_EDGE,
    LOCK,
    LONG_IDLE_S,
    PINNED,
    POOL_FAILED,
    STATUS,
    STATUS_RUN,
    SYNTH_MS,
    UNPINNED,
    Intervals,
    Part,
    PartitionOps,
    PartitionRows,
    PartitionTiming,
    add_row,
    rows_spool,
)
from gapwatch.cuzk.pipeline import BATCH_KINDS, POST_KINDS

__all__ = ["PartitionTiming", "RunTimeline", "TimelineBuilder", "derive_timeline",
           "timeline_event"]


_K = TypeVar("_K")
_V = TypeVar("_V")

#: A row's fields' values, in order (`PartitionTiming(*values)` makes it again).
_values = attrgetter(*(f.name for f in fields(PartitionTiming)))


@dataclass(slots=True)
class RunTimeline:
    #: In table order (`_order`); a long log's on disk (`partition_table.PartitionRows`).
    partitions: Sequence[PartitionTiming] = field(default_factory=list)
    #: Rows synthesised unpinned (`PartitionTiming.synthesised_unpinned`: the table's `pinned`
    #: cell "no"), rows whose pinning is not known (it None: "-"), where the rows came from
    #: ("log", "status", "log+status"), and the prover's runs they belong to.
    unpinned: int = 0
    pinning_unknown: int = 0
    sources: frozenset[str] = frozenset()
    runs: frozenset[int] = frozenset()
    wall_start_s: float | None = None
    wall_end_s: float | None = None
    #: Union of GPU_START..GPU_END intervals / wall time (cuzk's "GPU efficiency").
    merged_efficiency: float | None = None
    #: Sum of gpu_total_ms (else mutex_held_ms) / wall time (cuzk's "kernel utilisation").
    kernel_utilisation: float | None = None
    #: Union of mutex-held intervals / wall time.
    occupied_fraction: float | None = None
    #: Holes between merged mutex-held intervals: how many of `LONG_IDLE_S` or more, the
    #: longest (None: no hole).
    long_idle_gaps: int = 0
    longest_idle_gap_s: float | None = None
    #: What the rows are (`units_words`): batch jobs (a monolithic row of a `BATCH_KINDS` kind:
    #: 2+ requests proved as one GPU job, engine.rs:2053, 2672-2713) and the other monolithic
    #: jobs (PoSt, a kind not said); the rest are partitions. The batch kinds among the rows.
    batch_jobs: int = 0
    other_jobs: int = 0
    other_all_post: bool = True
    batch_kinds: frozenset[str] = frozenset()
    #: The `sectors` each batch's `synthesis complete, sending to GPU batch_size>1` line said
    #: (engine.rs:2746-2752), the first `MAX_SIZES` kept: one value is the batch size.
    batch_sectors: frozenset[int] = frozenset()
    #: Durations in cuzk's timing lines that no step takes (negative, over a day, longer than
    #: the run had run: `log_lines.step_ms`; a garbled or hostile line), each read as no
    #: duration ("-"), never summed nor placed: counted so that the table says why its cells
    #: are empty.
    bad_durations: int = 0

    @property
    def wall_s(self) -> float | None:
        if self.wall_start_s is None or self.wall_end_s is None:
            return None
        return self.wall_end_s - self.wall_start_s

    @property
    def partition_rows(self) -> int:
        return len(self.partitions) - self.batch_jobs - self.other_jobs

    @property
    def sectors_per_batch(self) -> int | None:
        """The sectors every batch job proved, where the log says one size and every batch is
        a PoRep one; None otherwise (a SnapDeals batch synthesises only its first request,
        engine.rs:2706-2713, and says `sectors=0`; timeout flushes make smaller batches)."""
        if self.batch_kinds != {"porep-c2"} or len(self.batch_sectors) != 1:
            return None
        (n,) = self.batch_sectors
        return n if n > 1 else None

    @property
    def rate_unit(self) -> str:
        """What a row of the table is, the unit of its count and of the payoff's rate:
        "partitions", "batch jobs", or "GPU jobs" where the rows mix them (or hold PoSt)."""
        if not self.batch_jobs and not self.other_jobs:
            return "partitions"
        if self.batch_jobs and not self.other_jobs and not self.partition_rows:
            return "batch jobs"
        return "GPU jobs"

    def units_words(self) -> str:
        """The rows counted by what they are: `52 batch jobs (2 sectors each)`, `40 partitions,
        3 PoSt jobs`."""
        out = []
        if self.partition_rows or not (self.batch_jobs or self.other_jobs):
            out.append(f"{self.partition_rows} partitions")
        if self.batch_jobs:
            size = self.sectors_per_batch
            each = (f" ({size} sectors each)" if size is not None else
                    " (SnapDeals: only the first request synthesised)"
                    if self.batch_kinds == {"snap-update"} else "")
            out.append(f"{self.batch_jobs} batch jobs{each}")
        if self.other_jobs:
            what = "PoSt jobs" if self.other_all_post else "monolithic jobs (PoSt or other)"
            out.append(f"{self.other_jobs} {what}")
        return ", ".join(out)

    def bad_durations_note(self) -> str | None:
        """What the table says of `bad_durations` (the report's and `parse --timeline`'s one
        sentence), or None: there were none."""
        n = self.bad_durations
        if not n:
            return None
        return (f"{n} duration(s) in cuzk's timing lines that no step takes (negative, over a "
                "day, or longer than cuzk's run had run: synth_ms, gpu_ms or a lock region's "
                "*_ms; a garbled or hostile line): each read as no duration, '-', never summed")


#: Batch sizes kept at most (`RunTimeline.batch_sectors`): a hostile log's endless sizes.
MAX_SIZES: Final = 16

#: The TIMELINE events `derive_timeline` reads.
_TIMELINE_NAMES = ("GPU_START", "GPU_END", "SYNTH_START", "SYNTH_END")
#: The lines that say the daemon's GPUs (`TimelineBuilder._gpus_named`).
_GPUS_SAID = (INIT_WORKERS_MESSAGE, WORKER_STARTED_MESSAGE)
#: Tracing lines read whole: a lock's holder, the start lines and the listen address that
#: tell a run and a daemon (`gapwatch.cuzk.daemons`).
_TRACING_KEPT = frozenset((PROVE_START_MESSAGE, ANCHOR_MESSAGE, DAEMON_STARTING_MESSAGE,
                           CONFIGURATION_LOADED_MESSAGE, SYNTH_SENT_MESSAGE))


def timeline_event(e: LogEvent) -> LogEvent | None:
    """`e` as `derive_timeline` needs it (its raw line dropped), or None when it does not read
    it: what a caller keeps of a long log (a million lines) to derive the timeline afterwards,
    so that memory grows with the partitions, not with the lines."""
    kind = e.kind
    # One string per job id, however many lines name it: the timeline keeps a job id in each
    # partition's record and keys (a day of 8 GPUs has ~450,000 partitions). Cut as the
    # detector's copy is (`sizes.TEXT_CHARS`): callers give the event whole, and a 16 KiB job
    # id (as much as the rules read of a line) made every partition row of the report and
    # `parse --timeline` 16 KiB wide.
    job = intern(cut_text(e.job_id, TEXT_CHARS)) if e.job_id is not None else None
    if (kind == PARTITION_KIND or kind in ("cuzk_timing", "cuzk_ntt_h")
            or (kind == "timeline" and e.name in _TIMELINE_NAMES)
            or (kind == "tracing" and (e.name in _TRACING_KEPT
                                       or e.name.startswith(_GPUS_SAID)))):
        return replace(e, raw="", job_id=job)
    if kind == "tracing" and e.name in DISPATCH_KINDS:  # its job's kind: its job id alone
        return replace(e, raw="", fields={}, job_id=job)
    if _says_unpinned(e):
        return replace(e, raw="", fields={}, job_id=job)
    if e.fields.get("is_pinned") is True:  # `is_pinned=true`: the table's `pinned` cell
        return replace(e, raw="", fields={"is_pinned": True}, job_id=job)
    return None


def _pool_fell_back(e: LogEvent) -> bool:
    """Whether `e` is a pinned-pool fallback warning naming a partition of a job: it tried the
    pool (with a capacity hint, pipeline.rs:273-275, 301-308) and fell back to pageable a/b/c."""
    return (e.warning in POOL_FALLBACK_WARNINGS and e.job_id is not None
            and e.partition is not None)


def _says_unpinned(e: LogEvent) -> bool:
    """Whether `e` says its partition (or monolithic job) was synthesised unpinned: its
    `is_pinned=false`, or a pinned-pool fallback warning naming a partition of a job (a log
    kept at WARN has only these: without them its partitions read "yes" with no word said)."""
    return e.warning == "unpinned" or _pool_fell_back(e)


def _order(r: PartitionTiming) -> float:
    """A row's place in the table: its GPU start, else its lock region's, else the first
    `/status` poll that saw it."""
    if r.gpu_start_s is not None:
        return r.gpu_start_s
    if r.busy_start_s is not None:
        return r.busy_start_s
    return min(r.states_seen.values(), default=0.0)


def derive_timeline(events: Iterable[LogEvent],
                    statuses: Iterable[ProverStatus] = ()) -> RunTimeline:
    """Build the per-partition records and run figures from a run's events (in arrival order)
    and the prover's status snapshots (in time order), the latter where the logs are silent."""
    builder = TimelineBuilder()
    for e in events:
        slim = timeline_event(e)  # what the report's and `parse --timeline`'s builders get
        if slim is not None:
            builder.add(slim)
    for st in statuses:
        builder.add_status(st)
    return builder.finish()


#: A lock region as the parser or `LockAttributor` gives it: job, partition, worker, then mutex
#: held, mutex wait, GPU total, NTT kernels, barrier wait (ms) and the busy span (s, s), as read.
_LockRow = tuple[str | None, int | None, int | None, int | None, int | None, int | None,
                 int | None, int | None, FieldValue, FieldValue]


#: A lock region's durations (ms), in `_LockRow`'s order.
_LOCK_DURATIONS: Final = ("mutex_held_ms", "mutex_wait_ms", "gpu_total_ms", "ntt_kernels_ms",
                          "barrier_wait_ms")


def _lock_row(e: LogEvent, within_s: float | None) -> _LockRow:
    f = e.fields
    # Durations: one no step takes is no duration (a hostile or garbled line: -935 ms held
    # the mutex, taken as given, made the partition table's sums and shares negative; 1e17
    # ms made its wall time 1e14 s), and its busy span none either (a recording's event
    # placed it by that figure).
    held, wait, total, ntt, barrier = (step_ms(f.get(k), within_s) for k in _LOCK_DURATIONS)
    return (e.job_id, e.partition, e.worker, held, wait, total, ntt, barrier,
            *busy_span(f, within_s))


def _bad_steps(fields: dict[str, FieldValue], keys: Iterable[str], within_s: float | None
               ) -> int:
    """How many of `keys` hold a duration no step takes (what `step_ms` reads as none)."""
    return sum(is_bad_step(fields.get(k), within_s) for k in keys)


#: Workers' jobs and monolithic jobs' kinds kept at most (the latest): a few dozen are in
#: flight; a hostile log's endless new names must not grow them.
_KEPT: Final = 4096


def _keep(table: dict[_K, _V], key: _K, value: _V) -> None:
    """`table[key] = value`, forgetting the oldest entry when `_KEPT` are held."""
    if key not in table and len(table) >= _KEPT:
        del table[next(iter(table))]
    table[key] = value


#: Circuit types whose first wave is known over in a run (`TimelineBuilder._wave_over`).
MAX_KINDS: Final = 64
#: In a run's waves over: the log between the run's start and the part read was not read, so
#: no first wave of that run can be told (`TimelineBuilder._new_run`). No proof kind is named
#: so (cuzk's are a handful of words; a job's kind is read from its dispatch line or /status).
WAVES_NOT_READ: Final = "\x00not read"
#: The INFO line a partitioned job's dispatch writes before its partitions start, and the
#: proof kind it says (engine.rs:2261-2265 PoRep, 2415-2419 SnapDeals); `/status` names a job's
#: kind too (`ProverStatus.job_kinds`). A first wave is a circuit type's (`FIRST_WAVE`).
DISPATCH_KINDS: Final = {
    "dispatching per-partition synthesis (budget-gated)": "porep-c2",
    "dispatching per-partition SnapDeals synthesis (budget-gated)": "snap-update",
}


def _part(partition: int | None, worker: int | None) -> Part:
    """A row's key part: its partition, or its worker for a monolithic job."""
    return partition if partition is not None else ("w", worker)


class TimelineBuilder:
    """`derive_timeline` one event at a time (`add`, then `finish`), in bounded memory: what
    each event does to a row is written down (`partition_table.PartitionOps`) and the rows are
    made at `finish`, never the events held: `parse --timeline` over a log of a million lines,
    or a week's report, holds the few partitions in flight, not the run's."""

    def __init__(self, read_from_s: float | None = None) -> None:
        """`read_from_s`: where the log events it is given begin, the daemon's startup lines
        aside (a window's, `gapwatch.offline.log_span.log_read_from`; None: the log from its
        start): a run whose start line lies before it has first waves that cannot be told."""
        self._read_from_s = read_from_s
        #: The first `/status` poll read (`PartitionTiming.gpu_moments`).
        self._first_poll_s: float | None = None
        #: The rows the last `finish` left out: their work outside its span.
        self.rows_left_out = 0
        self._ops = PartitionOps()
        #: The daemon's run (1, 2 after the first `starting cuzk engine` that follows work),
        #: whether the run has seen work yet, and the proof kinds whose first synthesis in the
        #: run has ended (None: of a partition whose job's kind is not known). The capacity
        #: hints are one per circuit type, process statics (pipeline.rs:181-204): a SnapDeals
        #: wave hours after PoRep's is a first wave too (`gapwatch.cuzk.first_wave`).
        self._run = 1
        self._run_busy = False
        self._waves_over: set[str | None] = set()
        #: Several daemons' logs (`gapwatch.cuzk.daemons`): each counts its own runs (another
        #: daemon's start line made a run 2 of the first's rows). The daemon whose run the
        #: three above are, and each daemon's (run, busy, waves over) while another's are.
        self._daemons = Daemons()
        self._daemon = 0
        self._runs: list[tuple[int, bool, set[str | None], float | None]] = []
        #: When the current daemon's run started (its `starting cuzk engine`); None: not read.
        self._run_start_s: float | None = None
        #: (run, job) -> a partitioned job's proof kind (`DISPATCH_KINDS`, `/status`).
        self._job_kind: dict[tuple[int, str | None], str] = {}
        #: Each worker's job as of its latest GPU_START: the job of a lock region that names
        #: only its worker (the region ends before its partition's GPU_END).
        self._worker_job: dict[tuple[int, int], str | None] = {}
        #: (run, job) -> a monolithic job's proof kind (its SYNTH_START `kind=`).
        self._mono_kind: dict[tuple[int, str | None], str] = {}
        #: Whether the parser attributed lock regions (its `PARTITION_KIND` events): then its
        #: attribution wins, and the one redone here from the C++ lines is dropped.
        self._parser_locks = False
        #: The attribution redone from the C++ lines and prove_start lines (None: off).
        self._attributor: LockAttributor | None = LockAttributor()
        #: The first GPU the events named: a second switches that attribution off.
        self._gpu: int | None = None
        #: Durations no step takes, read as none (`RunTimeline.bad_durations`); those of the
        #: lock regions redone here apart: they count only where the parser's do not win.
        self._negative = 0
        self._negative_own = 0
        #: `RunTimeline.batch_sectors`.
        self._batch_sectors: set[int] = set()

    def _new_run(self, t_s: float) -> None:
        """`starting cuzk engine` at `t_s`: a later one, after work, starts the next run's
        rows. A start the log was not read on from (its startup line kept before a window):
        which circuit types' first synthesis ended between it and the log read is not known,
        so no partition of that run is marked first wave (`WAVES_NOT_READ`): the window's first
        synthesis started before any of its own ended was marked one, "pinned: no (first
        wave)", an hour into the run."""
        if self._run_busy:
            self._run += 1
        self._run_busy = False
        self._run_start_s = t_s
        self._waves_over = set()
        if self._read_from_s is not None and t_s < self._read_from_s:
            self._waves_over.add(WAVES_NOT_READ)

    def _within(self, t_s: float) -> float | None:
        """The seconds the current run had run at `t_s` (a step ending then took no longer:
        `log_lines.step_ms`); None where its start was not read, or `t_s` is before it (a line
        out of order proves nothing)."""
        start = self._run_start_s
        return None if start is None or t_s < start else t_s - start

    def _gpus_named(self, e: LogEvent) -> None:
        """Lock attribution from the C++ lines holds on one GPU only, as the parser's does
        (`LogParser._learn_worker_gpu`): their in-lock lines of two GPUs interleave with
        nothing to tell them apart. A second GPU named, or a start that says several, ends it."""
        if self._attributor is None:
            return
        gpu = e.gpu
        if gpu is not None:
            if self._gpu is None:
                self._gpu = gpu
            elif gpu != self._gpu:
                self._attributor = None
                return
        if e.kind == "tracing" and e.name.startswith(INIT_WORKERS_MESSAGE):
            n = int_field(e.fields.get("num_gpus"))
            if n is not None and n > 1:
                self._attributor = None

    def _synth_start(self, e: LogEvent) -> None:
        if e.partition is not None:
            # In its kind's first wave while no synthesis of that kind has ended in this run
            # (the first to end caches the hint, pipeline.rs:214-238, 355).
            over = self._waves_over
            if (len(over) < MAX_KINDS and WAVES_NOT_READ not in over
                    and self._job_kind.get((self._run, e.job_id)) not in over):
                self._ops.add(self._run, e.job_id, e.partition, e.t_wall_s, FIRST_WAVE)
            return
        kind = e.fields.get("kind")
        if isinstance(kind, str):  # a monolithic job: its row is made at GPU_START
            _keep(self._mono_kind, (self._run, e.job_id), kind)

    def _synth_end(self, e: LogEvent) -> None:
        """A synthesis ended: its kind's hint is cached (every synthesis caches it,
        pipeline.rs:355; a batch's too, its circuit type's), so its kind's first wave is over.
        Any partition's ending also ends the wave of the partitions whose job's kind is not
        known: for want of their kinds, the first partition to end does (the rule before kinds
        were read); a monolithic job's does not (PoSt has hints of its own)."""
        if e.partition is None:
            mono = self._mono_kind.get((self._run, e.job_id))
            if mono is not None:
                self._wave_over(mono)
            return
        self._wave_over(self._job_kind.get((self._run, e.job_id)))
        self._wave_over(None)

    def _wave_over(self, kind: str | None) -> None:
        """`kind`'s first wave over in this run. cuzk has a handful of circuit types; kinds
        come from `/status` too, so a hostile one naming a new kind at every poll is held to
        `MAX_KINDS` (past them a wave is taken as over: no partition is marked by guess)."""
        if len(self._waves_over) < MAX_KINDS:
            self._waves_over.add(kind)

    def _gpu_edge(self, e: LogEvent) -> None:
        """A partition's (or a monolithic job's) GPU_START or GPU_END."""
        start = e.name == "GPU_START"
        if start and e.worker is not None:
            _keep(self._worker_job, (self._run, e.worker), e.job_id)
        mono_kind = (None if e.partition is not None
                     else self._mono_kind.get((self._run, e.job_id), "monolithic"))
        within = self._within(e.t_wall_s)
        gpu_ms = None if start else step_ms(e.fields.get("gpu_ms"), within)
        if not start:
            self._negative += _bad_steps(e.fields, ("gpu_ms",), within)
        self._ops.add(self._run, e.job_id, _part(e.partition, e.worker), e.t_wall_s, GPU_EDGE,
                      start, e.t_wall_s, e.worker, e.gpu, gpu_ms, mono_kind)

    def _lock(self, row: _LockRow, t_s: float, own: bool) -> None:
        """A lock region, on its partition's row of this run: the job it names, else its
        worker's as of now."""
        job, partition, worker = row[:3]
        if job is None and worker is not None:
            job = self._worker_job.get((self._run, worker))
        self._ops.add(self._run, job, _part(partition, worker), t_s, LOCK, own, worker,
                      *row[3:])

    def _daemon_of(self, e: LogEvent) -> None:
        """Its daemon's run made the current one (a C++ line, no daemon's own, keeps it)."""
        d, _new = self._daemons.of_log(e)
        if d == self._daemon:
            return
        while len(self._runs) <= max(d, self._daemon):
            self._runs.append((1, False, set(), None))
        self._runs[self._daemon] = (self._run, self._run_busy, self._waves_over,
                                    self._run_start_s)
        self._run, self._run_busy, self._waves_over, self._run_start_s = self._runs[d]
        self._daemon = d

    def add(self, e: LogEvent) -> None:
        kind, name = e.kind, e.name
        if kind == "tracing" or kind == "timeline":
            self._daemon_of(e)
        self._gpus_named(e)
        if kind == "tracing" and name == ANCHOR_MESSAGE:
            self._new_run(e.t_wall_s)
            return
        if kind == "tracing" and name in DISPATCH_KINDS:
            _keep(self._job_kind, (self._run, e.job_id), DISPATCH_KINDS[name])
        if kind == "tracing" and name == SYNTH_SENT_MESSAGE:
            self._batch_sent(e)
        if kind == "timeline":
            self._run_busy = True
        if kind == "timeline" and name == "SYNTH_START":
            self._synth_start(e)
        elif kind == "timeline" and name in ("GPU_START", "GPU_END"):
            self._gpu_edge(e)
        elif kind == "timeline" and name == "SYNTH_END":
            self._synth_end(e)
            within = self._within(e.t_wall_s)
            ms = step_ms(e.fields.get("synth_ms"), within)
            self._negative += _bad_steps(e.fields, ("synth_ms",), within)
            if ms is not None:
                self._ops.add(self._run, e.job_id, e.partition, e.t_wall_s, SYNTH_MS, ms)
        elif _says_unpinned(e):
            self._ops.add(self._run, e.job_id, e.partition, e.t_wall_s,
                          POOL_FAILED if _pool_fell_back(e) else UNPINNED)
        elif e.fields.get("is_pinned") is True and e.partition is not None:
            self._ops.add(self._run, e.job_id, e.partition, e.t_wall_s, PINNED)
        if kind == PARTITION_KIND:
            self._parser_locks = True
            self._attributor = None  # the parser's attribution wins
            within = self._within(e.t_wall_s)
            self._negative += _bad_steps(e.fields, _LOCK_DURATIONS, within)
            self._lock(_lock_row(e, within), e.t_wall_s, own=False)
            return
        attributor = self._attributor
        if attributor is None:
            return
        lock = None
        if kind in ("cuzk_timing", "cuzk_ntt_h"):
            lock = attributor.feed_cpp(dict(e.fields), None)
        elif kind == "tracing" and name == PROVE_START_MESSAGE:
            lock = attributor.feed_prove_start(e.worker, e.partition, e.t_wall_s, e.time_source,
                                               None, e.fields.get("prove_start_ms"),
                                               e.fields.get(UNPLACED_FIELD) is True)
        if lock is not None:
            within = self._within(lock.end_wall_s)
            self._negative_own += _bad_steps(lock.fields, _LOCK_DURATIONS, within)
            self._lock(_lock_row(LogEvent(
                t_wall_s=lock.end_wall_s, time_source=e.time_source, kind=PARTITION_KIND,
                name="gpu_lock", raw="", worker=lock.worker, partition=lock.partition,
                fields=lock.fields), within), e.t_wall_s, own=True)

    def _batch_sent(self, e: LogEvent) -> None:
        """`synthesis complete, sending to GPU`: a batch's (batch_size > 1) `sectors` kept."""
        size, sectors = int_field(e.fields.get("batch_size")), int_field(e.fields.get("sectors"))
        if (size is not None and size > 1 and sectors is not None and sectors >= 0
                and len(self._batch_sectors) < MAX_SIZES):
            self._batch_sectors.add(sectors)

    def add_status(self, st: ProverStatus) -> None:
        """One of the prover's `/status` snapshots (in time order): where the logs are silent,
        its partitions fill the table (`_status_row`)."""
        on_worker = {(w.job_id, w.partition): w for w in st.workers
                     if w.state == "proving" and w.job_id is not None}
        t = st.t_wall_s
        if self._first_poll_s is None:
            self._first_poll_s = t
        for job, job_kind in st.job_kinds.items():
            if self._job_kind.get((self._run, job)) != job_kind:
                _keep(self._job_kind, (self._run, job), job_kind)
        add = self._ops.add_news
        for p in st.partitions:
            w = on_worker.get((p.job_id, p.index))
            add(STATUS_RUN, p.job_id, p.index, t, STATUS, t, p.state, p.synth_ms, p.gpu_ms,
                w is not None, w.worker_id if w else None, w.gpu if w else None)

    def finish(self, span: tuple[float | None, float | None] | None = None) -> RunTimeline:
        """The table: its rows on disk beyond a few thousand (`RunTimeline.partitions`).
        `span`: (since, until), the report's span (a window's, or the recording's; None: open
        on that side): only the rows whose work overlaps it (`PartitionTiming.works_within`);
        None: every row. The rows left out are counted (`rows_left_out`)."""
        rows = rows_spool()
        summary = _Summary()
        self.rows_left_out = 0
        last_run = max([self._run, *(run for run, _, _, _ in self._runs)])
        for row, when in self._ops.rows(self._parser_locks, last_run):
            if span is not None and not row.works_within(*span, self._first_poll_s):
                self.rows_left_out += 1
                continue
            add_row(rows, _order(row), _values(row), when)
            summary.add(row)
        run = summary.timeline(PartitionRows(rows, summary.count))
        run.bad_durations = self._negative + (0 if self._parser_locks
                                                   else self._negative_own)
        run.batch_sectors = frozenset(self._batch_sectors)
        return run


class _Summary:
    """The run's figures, summed as the rows go by (the intervals kept in time order on disk)."""

    def __init__(self) -> None:
        self.count = 0
        self.unpinned = 0
        self.pinning_unknown = 0
        self.sources: set[str] = set()
        self.runs: set[int] = set()
        self.spans = Intervals()
        self.busy = Intervals()
        self.kernel_ms = 0
        self.kernel_known = False
        self.batch_jobs = 0
        self.other_jobs = 0
        self.other_all_post = True
        self.batch_kinds: set[str] = set()

    def add(self, p: PartitionTiming) -> None:
        self.count += 1
        unpinned = p.synthesised_unpinned
        self.unpinned += unpinned is True
        self.pinning_unknown += unpinned is None
        kind = p.kind
        if p.monolithic:
            if kind is not None and kind in BATCH_KINDS:
                self.batch_jobs += 1
                self.batch_kinds.add(kind)
            else:
                self.other_jobs += 1
                self.other_all_post = self.other_all_post and kind in POST_KINDS
        self.sources.add(p.source)
        self.runs.add(p.run)
        if p.gpu_start_s is not None and p.gpu_end_s is not None:
            self.spans.add(p.gpu_start_s, p.gpu_end_s)
        if p.busy_start_s is not None and p.busy_end_s is not None:
            self.busy.add(p.busy_start_s, p.busy_end_s)
        ms = p.gpu_total_ms if p.gpu_total_ms is not None else p.mutex_held_ms
        if ms is not None:
            self.kernel_ms += ms
            self.kernel_known = True

    def timeline(self, rows: PartitionRows) -> RunTimeline:
        run = RunTimeline(partitions=rows, unpinned=self.unpinned,
                          pinning_unknown=self.pinning_unknown,
                          sources=frozenset(self.sources), runs=frozenset(self.runs),
                          batch_jobs=self.batch_jobs, other_jobs=self.other_jobs,
                          other_all_post=self.other_all_post,
                          batch_kinds=frozenset(self.batch_kinds))
        try:
            _summarise(run, self)
        finally:
            self.spans.close()
            self.busy.close()
        return run


def _summarise(run: RunTimeline, sums: _Summary) -> None:
    """The run's figures (see the module docstring) from its rows' sums."""
    spans, busy = sums.spans, sums.busy
    if not spans.count and not busy.count:
        return
    run.wall_start_s = min(spans.first_s, busy.first_s)
    run.wall_end_s = max(spans.last_s, busy.last_s)
    wall = run.wall_end_s - run.wall_start_s
    if not wall > 0:
        return
    if spans.count:
        covered = 0.0
        for a, b in spans.merged():  # summed in order, as sum() over the merged list did
            covered += b - a
        run.merged_efficiency = covered / wall
    if sums.kernel_known:
        run.kernel_utilisation = sums.kernel_ms / 1000.0 / wall
    if busy.count:
        occupied = 0.0
        last_end: float | None = None
        for a, b in busy.merged():
            occupied += b - a
            if last_end is not None:
                hole = a - last_end
                run.long_idle_gaps += hole >= LONG_IDLE_S
                if run.longest_idle_gap_s is None or hole > run.longest_idle_gap_s:
                    run.longest_idle_gap_s = hole
            last_end = b
        run.occupied_fraction = occupied / wall
