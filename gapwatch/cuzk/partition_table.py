"""The partition table of a long log in bounded memory: what each event did to a row, spooled,
folded into the rows at the end, the rows spooled in table order.

Who calls it: `gapwatch.cuzk.partitions.TimelineBuilder` only (it turns events into the row
operations below; this module keeps them and makes the rows). A day of 8 GPUs names ~456,000
partitions and a week ~3.2 M: held as rows until the end they took ~470 bytes each (~1.5 GB
for the week), the most of a week's report.

A row's values depend only on the operations on its key (run, job, partition: a monolithic
job's rows are keyed by worker; the prover's `/status` polls of a partition, run `STATUS_RUN`),
in the order they came, so the rows need not be held while the log is read:
- Operations are buffered by key while the key is recent; a key untouched for `IDLE_S` of log
  time, or the oldest once `MAX_HELD_KEYS` are held, is written to a sorted spool as one
  fragment (looked for every `CHECK_EVERY` operations). A later operation on a written key
  starts a new fragment: nothing depends on the window being right (a hostile log's times
  only make more fragments).
- At the end the spool is read grouped by the hash of (job, partition), every run's fragments
  of a partition together (and a monolithic job's rows with its synthesis time and warning,
  which are keyed by job), each key's operations applied as they are read back (`_Fold`),
  each group's rows made (`_rows_of`), the prover's `/status` filling what the logs lack,
  and the rows added to a second spool keyed by the table's order (`partitions._order`, ties
  in the order the rows were made, as `sorted` over a dict of rows gave).
- The run's figures are summed as the rows go by; the intervals they need in time order go
  to spools of their own (`Intervals`).
Payloads are pickled: this process wrote them to its own unlinked temporary files, and any
value a hostile log can put in a field (a 100-digit partition) goes through unchanged.
"""

from __future__ import annotations

import math
import pickle
import struct
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from operator import itemgetter
from typing import Any, Final, overload

from gapwatch.base.sorted_spool import SortedSpool

#: A key untouched for this long (the log's time) is written out: a partition's lines span
#: its synthesis and its GPU work, a few minutes at the worst seen.
IDLE_S: Final = 600.0
#: Keys held at most (the oldest written out first), whatever the log's times say.
MAX_HELD_KEYS: Final = 50_000
#: Operations a key holds at most before they are written out (a fragment).
MAX_KEY_OPS: Final = 1024
#: Operations between two looks for keys to write out.
CHECK_EVERY: Final = 256
#: Rows (and intervals) held in memory before a spool writes a run.
RUN_ITEMS: Final = 50_000
#: Holes between lock regions at least this long are counted (`RunTimeline.long_idle_gaps`).
LONG_IDLE_S: Final = 0.1

#: A row's key part: a partition's number, ("w", worker) for a monolithic job's row, None for
#: what a monolithic job's rows share (its synthesis time and `unpinned` warning).
Part = int | tuple[str, int | None] | None
#: (run, job, part).
Key = tuple[int, str | None, Part]
#: An operation: its code, its sequence number, its values (applied by `_Fold`).
Op = tuple[Any, ...]

_PICKLE: Final = pickle.HIGHEST_PROTOCOL
_END = struct.Struct("<d")

# Operation codes.
GPU_EDGE: Final = "G"  # (G, seq, is_start, t, worker, gpu, gpu_ms, mono_kind)
SYNTH_MS: Final = "Y"  # (Y, seq, ms)
UNPINNED: Final = "U"  # (U, seq): `is_pinned=false`, or a pool fallback warning naming it
POOL_FAILED: Final = "F"  # (F, seq): a pool fallback warning named it (its checkout failed)
PINNED: Final = "P"  # (P, seq): the log said `is_pinned=true`
FIRST_WAVE: Final = "W"  # (W, seq)
LOCK: Final = "L"  # (L, seq, own, worker, held, wait, total, ntt, barrier, start, end)
STATUS: Final = "S"  # (S, seq, t, state, synth_ms, gpu_ms, on_worker, worker, gpu)
#: The run of a `/status` key (run, job, partition index): the daemon's runs count from 1.
STATUS_RUN: Final = 0


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
    #: What the log said of its a/b/c's pinning: False where a line said `is_pinned=false` of
    #: it or a pinned-pool fallback warning named it (`models.POOL_FALLBACK_WARNINGS`: the
    #: checkout failed, it fell back to pageable memory, pipeline.rs:1632), True where one said
    #: `is_pinned=true` (and none of those), None where no line said either (a log kept at
    #: WARN drops the INFO `is_pinned` lines, but keeps the fallback warnings).
    pinned_said: bool | None = None
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
    #: Its synthesis started before the first synthesis of its circuit type (its job's proof
    #: kind) in its run ended: no capacity hint of that type existed yet, so it was synthesised
    #: unpinned (pipeline.rs:181-204, 270-275), a first wave, one per run and circuit type (a
    #: SnapDeals one may come hours after PoRep's; `partitions.TimelineBuilder` marks it).
    #: Never where the log said `is_pinned=true` of it (pipeline.rs:2397-2402): pinned, it had
    #: a hint (pipeline.rs:273-275), and the log's word wins over the times' inference. Nor
    #: where a pinned-pool fallback warning named it (`pool_failed`).
    first_wave: bool = False
    #: A pinned-pool fallback warning named it (`models.POOL_FALLBACK_WARNINGS`: `pinned pool
    #: checkout FAILED`, `cudaHostAlloc failed`): it tried the pinned pool, which cuzk does
    #: only with a capacity hint (pipeline.rs:273-275, 301-308), so it is no first wave, and
    #: its a/b/c are pageable because the pool failed (the table's `no (pool failed)`).
    pool_failed: bool = False

    @property
    def monolithic(self) -> bool:
        return self.partition is None

    @property
    def unpinned(self) -> bool:
        """The log said it was synthesised unpinned (`pinned_said` False)."""
        return self.pinned_said is False

    @property
    def synthesised_unpinned(self) -> bool | None:
        """Whether its a/b/c were synthesised outside the pinned pool, the one rule of the
        table's `pinned` cell, its count of rows synthesised unpinned and their JSON: True for
        a monolithic job (PoSt, a batch, the pipeline off: no pool on any of their paths,
        pipeline.rs:1632, 3015, 3210, 3388), a partition the log said unpinned (`is_pinned=false`
        or a pinned-pool fallback warning naming it) or one of a first wave (no capacity hint
        yet); False only where the log said `is_pinned=true`; None where nothing was said (a
        log kept at WARN, a partition only /status knew, a window's partition synthesised
        more than the log's read-around before the window: its line, if any, was not read): no
        line, no "yes"."""
        if self.monolithic or self.unpinned or self.first_wave:
            return True
        return False if self.pinned_said else None

    @property
    def pinned_words(self) -> str:
        """The table's `pinned` cell (`synthesised_unpinned`): "no", "yes" or "-" (unknown)."""
        unpinned = self.synthesised_unpinned
        return "-" if unpinned is None else "no" if unpinned else "yes"

    def gpu_moments(self, first_poll_s: float | None = None) -> list[float]:
        """The moments the row places its GPU work at (a row is a partition that reached a
        GPU): its GPU start and end as read, its lock region, the first `/status` poll that
        saw it on a GPU, and the first that saw it `done` or `failed` unless that was the
        first poll read (`first_poll_s`): done then, it may have run wholly before it (a
        window's first poll lists its jobs' partitions done long before); done at a later
        poll, it ended since the poll before, which did not list its job (a hole in the
        polls)."""
        times = [t for t in (self.gpu_start_s, self.gpu_end_s, self.busy_start_s,
                             self.busy_end_s) if t is not None]
        for state, t in self.states_seen.items():
            if state == "gpu" or (state in ("done", "failed") and first_poll_s is not None
                                  and t > first_poll_s):
                times.append(t)
        return times

    def works_within(self, since_s: float | None, until_s: float | None,
                     first_poll_s: float | None = None) -> bool:
        """Whether its GPU work, from the first to the last of its `gpu_moments`, overlaps
        `since_s`..`until_s` (None: open on that side): the report's span, a window's or
        the recording's. A row that places none of it does not. Its synthesis does not count:
        a partition synthesised in a window and proved after it has no row in the window's
        table (the window's log holds no GPU line of it), one synthesised before and proved
        in it has, its pinning then not known (`synthesised_unpinned`)."""
        times = self.gpu_moments(first_poll_s)
        if not times:
            return False
        return ((until_s is None or min(times) <= until_s)
                and (since_s is None or max(times) >= since_s))


#: States in which a partition has been (or is) on a GPU.
_GPU_STATES = frozenset(("gpu", "done", "failed"))

#: How a row was made, for the table's ties: by an event (then when), by a lock region alone
#: (they were placed after every event), or by the prover's `/status` alone (after those).
BY_EVENT, BY_LOCK, BY_STATUS = 0, 1, 2


class _Locks:
    """One key's lock regions of one attribution (the parser's or the one redone from the C++
    lines), applied in order: what the last said, the last worker named, the last busy span."""

    __slots__ = ("first_seq", "worker", "values", "busy")

    def __init__(self) -> None:
        self.first_seq: int | None = None
        self.worker: int | None = None
        self.values: tuple[Any, ...] | None = None
        self.busy: tuple[float, float] | None = None

    def add(self, op: Op) -> None:
        _c, seq, _own, worker, held, wait, total, ntt, barrier, b_start, b_end = op
        if self.first_seq is None:
            self.first_seq = seq
        if worker is not None:
            self.worker = worker
        self.values = (held, wait, total, ntt, barrier)
        if isinstance(b_start, float) and isinstance(b_end, float):
            self.busy = (b_start, b_end)

    def apply(self, rec: PartitionTiming) -> None:
        """Onto the row, after every event's operation (where they were once placed)."""
        if self.worker is not None:
            rec.worker = self.worker
        if self.values is not None:
            (rec.mutex_held_ms, rec.mutex_wait_ms, rec.gpu_total_ms, rec.h2d_in_ntt_ms,
             rec.barrier_wait_ms) = self.values
        if self.busy is not None:
            rec.busy_start_s, rec.busy_end_s = self.busy


class _Fold:
    """One key's operations applied as they come, in order (a hostile log's millions of
    operations on one key take no more memory than one)."""

    __slots__ = ("rec", "first_seq", "synth_ms", "unpinned", "pinned", "first_wave",
                 "pool_failed", "locks")

    def __init__(self, run: int, job: str | None, part: Part) -> None:
        partition = part if isinstance(part, int) else None
        self.rec = PartitionTiming(job_id=job, partition=partition, run=run,
                                   source="status" if run == STATUS_RUN else "log")
        #: Its first GPU edge (a `/status` key: its first poll).
        self.first_seq: int | None = None
        self.synth_ms: int | None = None
        self.unpinned = False
        self.pinned = False
        self.first_wave = False
        self.pool_failed = False
        #: The parser's lock regions, then the ones redone from the C++ lines (`own`).
        self.locks = (_Locks(), _Locks())

    def add(self, op: Op) -> None:
        code = op[0]
        if code == GPU_EDGE:
            self._edge(op)
        elif code == STATUS:
            self._poll(op)
        elif code == SYNTH_MS:
            self.synth_ms = op[2]
        elif code == UNPINNED:
            self.unpinned = True
        elif code == PINNED:
            self.pinned = True
        elif code == POOL_FAILED:
            self.unpinned = self.pool_failed = True
        elif code == FIRST_WAVE:
            self.first_wave = True
        elif code == LOCK:
            self.locks[1 if op[2] else 0].add(op)

    def _edge(self, op: Op) -> None:
        _c, seq, start, t, worker, gpu, gpu_ms, mono_kind = op
        rec = self.rec
        if self.first_seq is None:
            self.first_seq = seq
        rec.worker = worker if worker is not None else rec.worker
        rec.gpu = gpu if gpu is not None else rec.gpu
        if rec.kind is None and mono_kind is not None:
            rec.kind = mono_kind
        if start:
            rec.gpu_start_s = t
        else:
            rec.gpu_end_s, rec.timeline_gpu_ms = t, gpu_ms

    def _poll(self, op: Op) -> None:
        """A `/status` poll of the partition (`synth_ms` and `gpu_ms` count up while a phase
        runs: the first poll in `gpu` places its GPU start, the first `done` its end)."""
        _c, seq, t, state, synth_ms, gpu_ms, on_worker, worker, gpu = op
        rec = self.rec
        if self.first_seq is None:
            self.first_seq = seq
        rec.states_seen.setdefault(state, t)
        if synth_ms is not None:
            rec.synth_ms = synth_ms  # counts up while synthesising: the last is final
        if gpu_ms is not None:
            if state == "gpu" and rec.gpu_start_s is None:
                rec.gpu_start_s = t - gpu_ms / 1000.0
            elif state in ("done", "failed"):
                rec.timeline_gpu_ms = gpu_ms
                if rec.gpu_start_s is not None and rec.gpu_end_s is None:
                    rec.gpu_end_s = rec.gpu_start_s + gpu_ms / 1000.0
        if on_worker:
            rec.worker, rec.gpu = worker, gpu

    def row(self, shared: _Fold | None, parser_locks: bool
            ) -> tuple[PartitionTiming, tuple[int, int]] | None:
        """The log's row of this key, with how it was made (None: no GPU edge nor lock region,
        e.g. a synthesis that never reached a GPU). `shared`: a monolithic job's synthesis
        time and warning (a partition's are its own)."""
        locks = self.locks[0 if parser_locks else 1]
        if self.first_seq is not None:
            when = (BY_EVENT, self.first_seq)
        elif locks.first_seq is not None:
            when = (BY_LOCK, locks.first_seq)
        else:
            return None
        rec = self.rec
        values = self if rec.partition is not None else shared
        if values is not None:
            values.said(rec)
        locks.apply(rec)
        return rec, when

    @property
    def says(self) -> bool:
        """Whether the log said anything of its synthesis (time, pinning, first wave)."""
        return (self.synth_ms is not None or self.unpinned or self.pinned
                or self.first_wave or self.pool_failed)

    def said(self, rec: PartitionTiming) -> None:
        """What the log said of the synthesis onto `rec`: its time, its pinning, its wave."""
        if self.synth_ms is not None:
            rec.synth_ms = self.synth_ms
        # The unpinned word wins: a partition that fell back has no pinned a/b/c.
        rec.pinned_said = (False if self.unpinned else True if self.pinned
                           else None)
        # A checkout tried (and failed) had a capacity hint: no first wave, whatever the times.
        rec.pool_failed = self.pool_failed and rec.partition is not None
        rec.first_wave = (self.first_wave and not self.pinned and not rec.pool_failed
                          and rec.partition is not None)


def _rows_of(folds: dict[Key, _Fold], parser_locks: bool, last_run: int
             ) -> Iterator[tuple[PartitionTiming, tuple[int, int]]]:
    """The rows of one group of keys: the log's, the prover's `/status` filling what they
    lack in each partition's latest row (the last made: of its last run), or making a row of
    its own for a partition the logs never named, if it reached a GPU (in the last run)."""
    made = [row for (run, job, part), fold in folds.items()
            if run != STATUS_RUN and part is not None
            and (row := fold.row(folds.get((run, job, None)) if not isinstance(part, int)
                                 else None, parser_locks)) is not None]
    for (run, job, index), fold in folds.items():
        if run != STATUS_RUN or fold.first_seq is None:
            continue
        st = fold.rec
        latest = max(((rec, when) for rec, when in made
                      if rec.partition == index and rec.job_id == job),
                     key=itemgetter(1), default=None)
        if latest is not None:
            _fill_from_status(latest[0], st)
        elif not _GPU_STATES.isdisjoint(st.states_seen):
            st.run = last_run
            _said_of(folds, job, index, st)
            made.append((st, (BY_STATUS, fold.first_seq)))
    yield from made


def _said_of(folds: dict[Key, _Fold], job: str | None, index: Part,
             st: PartitionTiming) -> None:
    """What the log said of the synthesis of a partition only `/status` saw reach a GPU
    (its latest run's fold): a recording that ended between its `is_pinned=true` line and its
    GPU_START read "pinning not known" of it."""
    said = max((fold for (run, fold_job, part), fold in folds.items()
                if run != STATUS_RUN and fold_job == job and part == index and fold.says),
               key=lambda fold: fold.rec.run, default=None)
    if said is not None:
        said.said(st)
        st.source = "log+status"


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


def group_of(job: str | None, part: Part) -> int:
    """The spool's grouping hash: a partition's rows of every run together, and a monolithic
    job's rows with what they share."""
    return hash((job, part if isinstance(part, int) else None))


class PartitionOps:
    """The row operations of a log, by key, in bounded memory (see the module docstring)."""

    def __init__(self) -> None:
        self._held: OrderedDict[Key, list[Any]] = OrderedDict()  # key -> [touched_s, ops]
        self._spool = SortedSpool(RUN_ITEMS, ties=2, one_file=True)
        self._seq = 0
        self._now_s = -math.inf

    def add(self, run: int, job: str | None, part: Part, t_s: float, code: str,
            *values: object) -> None:
        """One operation on the row (run, job, part), read at `t_s` (the event's time)."""
        self._seq = seq = self._seq + 1
        if t_s > self._now_s:
            self._now_s = t_s
        key = (run, job, part)
        held = self._held.get(key)
        if held is None:
            held = self._held[key] = [self._now_s, []]
        else:
            self._held.move_to_end(key)
            held[0] = self._now_s
        ops = held[1]
        ops.append((code, seq, *values))
        if len(ops) >= MAX_KEY_OPS:  # a key a hostile log names forever: written as it goes
            del self._held[key]
            self._write(key, ops)
        if not seq % CHECK_EVERY:  # a look at the oldest key costs more than the add
            self._write_idle()

    def add_news(self, run: int, job: str | None, part: Part, t_s: float, code: str,
                 *values: object) -> None:
        """`add`, unless the key's latest operation (held) says the same but its time (the
        first value): a `/status` poll that repeats the partition's previous one changes
        nothing (its state was seen already, its figures are set), and ~90 % of polls do."""
        held = self._held.get((run, job, part))
        if held is not None and held[1][-1][3:] == values[1:]:
            self._held.move_to_end((run, job, part))
            if t_s > self._now_s:
                self._now_s = t_s
            held[0] = self._now_s
            return
        self.add(run, job, part, t_s, code, *values)

    def _write_idle(self) -> None:
        held = self._held
        old_s = self._now_s - IDLE_S
        while held:
            key, (touched_s, ops) = next(iter(held.items()))
            if touched_s >= old_s and len(held) <= MAX_HELD_KEYS:
                return
            del held[key]
            self._write(key, ops)

    def _write(self, key: Key, ops: list[Op]) -> None:
        run, job, part = key
        self._spool.add(0.0, pickle.dumps((key, ops), _PICKLE), (group_of(job, part), run))

    def rows(self, parser_locks: bool, last_run: int
             ) -> Iterator[tuple[PartitionTiming, tuple[int, int]]]:
        """Every row, with how it was made (`_Fold.row`), a group (same `group_of`) at a
        time; the operations' spool read once, then closed. `parser_locks`: whether the
        parser attributed lock regions (then only its regions count); `last_run`: the
        daemon's last run (a row only `/status` knew belongs to it)."""
        for key, (_touched_s, ops) in self._held.items():
            self._write(key, ops)
        self._held.clear()
        folds: dict[Key, _Fold] = {}
        at: int | None = None
        try:
            for batch in self._spool.batches():
                for spool_key, payload in batch:
                    if spool_key[1] != at and folds:
                        yield from _rows_of(folds, parser_locks, last_run)
                        folds = {}
                    at = spool_key[1]
                    key, ops = pickle.loads(payload)
                    fold = folds.get(key)
                    if fold is None:
                        fold = folds[key] = _Fold(*key)
                    for op in ops:
                        fold.add(op)
            yield from _rows_of(folds, parser_locks, last_run)
        finally:
            self._spool.close()


class Intervals:
    """[start, end] intervals added in any order, merged in time order at the end (a sorted
    spool: a day has one per partition)."""

    def __init__(self) -> None:
        self._spool = SortedSpool(RUN_ITEMS, one_file=True)
        self.count = 0
        self.first_s = math.inf
        self.last_s = -math.inf

    def add(self, start_s: float, end_s: float) -> None:
        self.count += 1
        # min() and max() over every edge, as the figures have always taken the wall time.
        self.first_s = min(self.first_s, start_s, end_s)
        self.last_s = max(self.last_s, start_s, end_s)
        if end_s > start_s:  # empty or reversed ones cover nothing
            self._spool.add(start_s, _END.pack(end_s))

    def merged(self) -> Iterator[tuple[float, float]]:
        """The sorted, non-overlapping union (empty or reversed intervals dropped), streamed."""
        cur: tuple[float, float] | None = None
        for start, payload in self._spool.sorted():
            (end,) = _END.unpack(payload)
            if cur is not None and start <= cur[1]:
                if end > cur[1]:
                    cur = (cur[0], end)
            else:
                if cur is not None:
                    yield cur
                cur = (start, end)
        if cur is not None:
            yield cur

    def close(self) -> None:
        self._spool.close()


class PartitionRows(Sequence[PartitionTiming]):
    """The table's rows, in table order, read from their spool each time they are iterated
    (the first few by slicing: `rows[:50]`)."""

    def __init__(self, spool: SortedSpool, count: int) -> None:
        self._spool = spool
        self._count = count

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[PartitionTiming]:
        for _t, payload in self._spool.sorted():
            yield PartitionTiming(*pickle.loads(payload))

    @overload
    def __getitem__(self, i: int) -> PartitionTiming: ...

    @overload
    def __getitem__(self, i: slice) -> list[PartitionTiming]: ...

    def __getitem__(self, i: int | slice) -> PartitionTiming | list[PartitionTiming]:
        if isinstance(i, slice):
            if i.step in (None, 1) and (i.start or 0) >= 0 and (i.stop or 0) >= 0:
                return list(islice(self, i.start, i.stop))
            return list(self)[i]
        if i < 0:
            i += self._count
        if not 0 <= i < self._count:
            raise IndexError(i)
        return next(islice(self, i, None))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __repr__(self) -> str:
        return f"PartitionRows({self._count} rows)"

    def close(self) -> None:
        self._spool.close()


def rows_spool() -> SortedSpool:
    """The spool the table's rows go to: keyed by their place in the table (a time), then
    (how each was made, when)."""
    return SortedSpool(RUN_ITEMS, ties=2, one_file=True)


def add_row(spool: SortedSpool, order_s: float, values: tuple[Any, ...],
            made: tuple[int, int]) -> None:
    """A row, as its fields' values in order, at `order_s` in the table (a time that is not a
    number sorts last)."""
    spool.add(order_s if order_s == order_s else math.inf, pickle.dumps(values, _PICKLE), made)
