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
  which are keyed by job), each group folded into its rows (`partitions._fold`), the prover's
  `/status` filling what the logs lack, and the rows added to a second spool keyed by the
  table's order (`partitions._order`, ties in the order the rows were made, as `sorted` over
  a dict of rows gave).
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
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Any, Final, Generic, TypeVar, overload

from gapwatch.base.sorted_spool import SortedSpool

#: A row (`gapwatch.cuzk.partitions.PartitionTiming`: a dataclass made from its values).
Row = TypeVar("Row")

#: A key untouched for this long (the log's time) is written out: a partition's lines span
#: its synthesis and its GPU work, a few minutes at the worst seen.
IDLE_S: Final = 600.0
#: Keys held at most (the oldest written out first), whatever the log's times say.
MAX_HELD_KEYS: Final = 50_000
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
#: An operation: its code, its sequence number, its values (see `_fold`).
Op = tuple[Any, ...]

_PICKLE: Final = pickle.HIGHEST_PROTOCOL
_END = struct.Struct("<d")

# Operation codes.
GPU_EDGE: Final = "G"  # (G, seq, is_start, t, worker, gpu, gpu_ms, mono_kind)
SYNTH_MS: Final = "Y"  # (Y, seq, ms)
UNPINNED: Final = "U"  # (U, seq)
FIRST_WAVE: Final = "W"  # (W, seq)
LOCK: Final = "L"  # (L, seq, own, worker, held, wait, total, ntt, barrier, start, end)
STATUS: Final = "S"  # (S, seq, t, state, synth_ms, gpu_ms, on_worker, worker, gpu)
#: The run of a `/status` key (run, job, partition index): the daemon's runs count from 1.
STATUS_RUN: Final = 0


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
        held[1].append((code, seq, *values))
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

    def groups(self) -> Iterator[dict[Key, list[Op]]]:
        """Every key's operations in order, a group (same `group_of`) at a time; the spool
        read once, then closed."""
        for key, (_touched_s, ops) in self._held.items():
            self._write(key, ops)
        self._held.clear()
        group: dict[Key, list[Op]] = {}
        at: int | None = None
        try:
            for batch in self._spool.batches():
                for spool_key, payload in batch:
                    if spool_key[1] != at and group:
                        yield group
                        group = {}
                    at = spool_key[1]
                    key, ops = pickle.loads(payload)
                    group.setdefault(key, []).extend(ops)
            if group:
                yield group
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
        """The sorted, non-overlapping union (`partitions.merge_intervals`), streamed."""
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


class PartitionRows(Sequence[Row], Generic[Row]):
    """The table's rows, in table order, read from their spool each time they are iterated
    (the first few by slicing: `rows[:50]`); `make` makes a row of its values."""

    def __init__(self, spool: SortedSpool, count: int, make: Callable[..., Row]) -> None:
        self._spool = spool
        self._count = count
        self._make = make

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Row]:
        make = self._make
        for _t, payload in self._spool.sorted():
            yield make(*pickle.loads(payload))

    @overload
    def __getitem__(self, i: int) -> Row: ...

    @overload
    def __getitem__(self, i: slice) -> list[Row]: ...

    def __getitem__(self, i: int | slice) -> Row | list[Row]:
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
