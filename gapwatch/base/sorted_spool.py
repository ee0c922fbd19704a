"""Items sorted by a key in bounded memory: an external merge sort of (key, bytes) pairs.

Who calls it: `gapwatch.offline.perfetto.TraceBuilder`, whose trace of a day of 8 GPUs is tens of
millions of events (held as Python dicts it took ~1.6 GB per hour of recording),
`gapwatch.offline.gap_spool` (a report's gaps, in start order, and the `--log` files' events, in
time order) and `gapwatch.cuzk.partition_table` (the partition table's operations, keyed by
partition, and its rows). Items are kept in memory up to `run_items` (or until their payloads reach
`RUN_BYTES`), then sorted and written to a temporary file as one run; `sorted()` merges the runs
and what is left in memory. The key is a time and, where the caller gives them, `ties`
integers; items with equal keys come back in the order added (each item carries its sequence
number), so the output is the same however many runs there were: `sorted(items, key=key)`'s
order.

A run is written in blocks (`BLOCK_ITEMS` items or `BLOCK_BYTES` of payload): the keys of a
block's items, fixed-size, then their payloads. The merge holds a block of each run it has
started and works a batch at a time: every item up to the smallest of those blocks' last keys
(no item still unread can come before it: each run is sorted and keys are unique, the
sequence number among them) is sorted in one `list.sort` and given back. A run starts (its
first block read) only when that smallest last key reaches its first key, read from its
first block's head: items added almost in time order make runs that each cover a stretch of
time, and the merge holds one or two of them at a time, whatever their number (a week of
`--log` events, ~1,300 runs, held a block of every run before: ~1.6 GB in each reader). Items
added in no order (a hostile log's times, operations keyed by a hash) make runs that all
overlap: once more than `MAX_DEPTH` runs overlap at one key, the runs of the level with the
most are merged into one run of the next level (`_compact`: each item rewritten once a
level, ~log32 of the runs), so the merge holds a block of at most ~`MAX_DEPTH` runs a level,
not of every run (a block of each was ~1.3 MB for a run of log events). Each parallel report
worker reads the `--log` events of a day (~6 M, ~180 runs) this way: an item at a time (a heap
merge of items unpacked one by one) the reading and merging cost ~15 s of each worker's day
(sampled), decoding aside; 2 M items in 61 runs read back in 1.2 s against 4.0.

The runs are anonymous temporary files (`tempfile.TemporaryFile`, in the system's folder or
`folder`; a file each, or all in one with `one_file`): unlinked as they are made, so nothing is
left behind even when the process is killed; `close()` (or the process ending) frees their
space (a merged run's sources are freed as it is written, unless they share one file). The
payload is bytes of any kind (a block stores each one's length). Runs are read at explicit
offsets (`os.pread`), never through the file's shared position: processes forked from the one
that wrote a spool (the parallel report's workers, `gapwatch.offline.report_parallel`) each
read it whole, at the same time.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import struct
import tempfile
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from itertools import accumulate
from operator import itemgetter
from typing import IO, Any, Final


class SpoolError(OSError):
    """A run could not be written (a full or read-only temporary folder): its `filename` names
    the folder and says that it holds the spool, so a command's message points at it."""


#: Items held in memory before a run is written (a trace event is ~150-300 bytes encoded).
RUN_ITEMS: Final = 200_000
#: Payload bytes held in memory before a run is written, however few the items: a gap's slice
#: in a trace is ~3 KB (its evidence), and a day's 330,000 of them held 200,000 at a time
#: took ~0.9 GB.
RUN_BYTES: Final = 32 << 20

#: A run's block: at most this many items, and payloads of about this many bytes (one larger
#: payload is a block of its own). The merge holds a block of each run that overlaps the
#: stretch it is at (of every run, for items added in no order: a day's `--log` events are
#: ~180 runs).
BLOCK_ITEMS: Final = 1024
BLOCK_BYTES: Final = 256 << 10

#: Runs whose keys overlap at one key, at most: beyond, the runs of one level are merged into
#: one run of the next (`_compact`). Items added almost in time order make runs that barely
#: overlap and are never merged; items in no order (a hostile log's times, a spool keyed by
#: a hash) would make the merge hold a block of every run, ~1.3 MB each for log events.
MAX_DEPTH: Final = 32

#: An item: its time, its tie integers, its sequence number and its payload.
_Item = tuple[float, tuple[int, ...], int, bytes]
#: An item as the merge holds it: its key (time, the ties, sequence number, payload length:
#: as a block stores it; unique by the sequence number) and its payload.
_Keyed = tuple[tuple[Any, ...], bytes]
#: A block's items, and how many of them have been given back.
_Block = tuple[list[_Keyed], int]
#: A block's head: its items and its payloads' bytes.
_BLOCK_HEAD = struct.Struct("<II")
_key_of = itemgetter(0)


class SortedSpool:
    """Add (time, payload) pairs in any order; read them back sorted by time (then `tie`).

    `sorted()` may be called more than once (not while another of its iterators is running):
    each call reads the runs from their start."""

    def __init__(self, run_items: int | None = None, folder: str | None = None,
                 ties: int = 0, *, first_seq: int = 0, run_file: IO[bytes] | None = None,
                 one_file: bool = False) -> None:
        """`first_seq`, `run_file`: a spool written by another process for this one to adopt
        (`adopt`): its items come after all of this one's of equal key, and its runs are
        appended to `run_file` (a temporary file both share), not to files of their own.
        `one_file`: every run is appended to one temporary file, made at the first run (a
        spool whose runs all overlap, read while others are: one descriptor, one buffer)."""
        self._run_items = run_items or RUN_ITEMS
        self._run_bytes = RUN_BYTES
        self._bytes = 0
        self._dir = folder
        # Time, ties, sequence number, payload length.
        self._head = struct.Struct(f"<d{ties}qqI")
        self._items: list[_Item] = []
        #: Each run: its file, where it starts and ends there; beside it, its level (0 as
        #: written, 1 + its sources' once merged; None: adopted, never merged) and its first
        #: and last keys.
        self._runs: list[tuple[IO[bytes], int, int]] = []
        self._levels: list[tuple[int, tuple[Any, ...], tuple[Any, ...]] | None] = []
        self._run_file = run_file
        self._one_file = one_file
        self._seq = first_seq
        self._count = 0
        self._sorted = True

    def __len__(self) -> int:
        return self._count

    @property
    def runs(self) -> int:
        """Runs written to disk so far (0: everything is still in memory)."""
        return len(self._runs)

    def add(self, t: float, payload: bytes, tie: tuple[int, ...] = ()) -> None:
        """`tie`: `ties` integers that order items of equal time (before the order added)."""
        self._items.append((t, tie, self._seq, payload))
        self._seq += 1
        self._count += 1
        self._sorted = False
        self._bytes += len(payload)
        if len(self._items) >= self._run_items or self._bytes >= self._run_bytes:
            self._spill()

    def _spill(self) -> None:
        self._items.sort()
        keyed = [((t, *tie, seq, len(p)), p) for t, tie, seq, p in self._items]
        self._write_run(keyed, 0)
        self._items = []
        self._bytes = 0
        while (level := self._too_deep()) is not None:
            self._compact(level)

    def _run_target(self) -> tuple[IO[bytes], str]:
        """The file a new run goes to, and the folder it is in."""
        folder = self._dir or tempfile.gettempdir()
        f = self._run_file
        try:
            if f is None:
                f = tempfile.TemporaryFile(prefix="gapwatch-spool-", dir=folder)  # noqa: SIM115
                if self._one_file:
                    self._run_file = f
        except OSError as exc:
            raise _spool_error(exc, folder) from None
        return f, folder

    def _write_run(self, keyed: Iterable[_Keyed], level: int) -> None:
        """Items in key order, as a run of `level` (none: no run)."""
        f, folder = self._run_target()
        bounds: list[tuple[Any, ...]] = []
        try:
            start = f.seek(0, os.SEEK_END)
            f.writelines(self._blocks(keyed, bounds))
            f.flush()
            end = f.tell()
        except OSError as exc:
            if f is not self._run_file:
                with contextlib.suppress(OSError):  # closing flushes the rest: full again
                    f.close()  # unlinked already: its space is freed
            raise _spool_error(exc, folder) from None
        if not bounds:
            if f is not self._run_file:
                f.close()
            return
        self._runs.append((f, start, end))
        self._levels.append((level, bounds[0], bounds[-1]))

    def _too_deep(self) -> int | None:
        """The level whose runs to merge when more than `MAX_DEPTH` runs overlap at one key
        (the level with the most runs), else None."""
        known = [info for info in self._levels if info is not None]
        if len(known) <= MAX_DEPTH:
            return None
        ends: list[tuple[Any, ...]] = []
        deepest = 0
        for _level, first, last in sorted(known, key=itemgetter(1)):
            while ends and ends[0] < first:
                heapq.heappop(ends)
            heapq.heappush(ends, last)
            deepest = max(deepest, len(ends))
        if deepest <= MAX_DEPTH:
            return None
        by_level = Counter(level for level, _first, _last in known)
        level, n = by_level.most_common(1)[0]
        return level if n > 1 else None

    def _compact(self, level: int) -> None:
        """Merge the runs of `level` into one run of the next: the merge then holds a block
        of that one where it held one of each. Their files are closed where no run is left
        in them (a shared file keeps its space until the spool is closed)."""
        chosen: list[int] = []
        sources = []
        for i, info in enumerate(self._levels):
            if info is not None and info[0] == level:
                chosen.append(i)
                sources.append((info[1], self._read_run(*self._runs[i])))
        merged = (item for batch in self._merge(sources) for item in batch)
        old = [self._runs[i] for i in chosen]
        self._write_run(merged, level + 1)
        gone = set(chosen)
        self._runs = [r for i, r in enumerate(self._runs) if i not in gone]
        self._levels = [x for i, x in enumerate(self._levels) if i not in gone]
        kept = {id(f) for f, _start, _end in self._runs}
        for f, _start, _end in old:
            if id(f) not in kept and f is not self._run_file:
                f.close()

    def spill(self) -> list[tuple[int, int]]:
        """Write what is held in memory as a run; where each run starts and ends in its file
        (for a spool with a `run_file`, to be adopted)."""
        if self._items:
            self._spill()
        return [(start, end) for _f, start, end in self._runs]

    def adopt(self, f: IO[bytes], runs: list[tuple[int, int]], items: int) -> None:
        """Take the runs another process wrote to `f` (its `spill()`), `items` in all, as
        this spool's own (`f` is closed with this spool's runs; they are never merged)."""
        self._runs += [(f, start, end) for start, end in runs]
        self._levels += [None] * len(runs)
        self._count += items

    def _blocks(self, keyed: Iterable[_Keyed], bounds: list[tuple[Any, ...]]
                ) -> Iterator[bytes]:
        """Items in key order as a run's blocks: each its head, its items' keys, their
        payloads. `bounds` gets the first and the last key."""
        pack = self._head.pack
        block: list[_Keyed] = []
        size = 0
        for item in keyed:
            if block and (len(block) >= BLOCK_ITEMS or size >= BLOCK_BYTES):
                yield from _block_bytes(block, size, pack)
                block, size = [], 0
            if not bounds:
                bounds.append(item[0])
            block.append(item)
            size += len(item[1])
        if block:
            bounds.append(block[-1][0])
            yield from _block_bytes(block, size, pack)

    def sorted(self) -> Iterator[tuple[float, bytes]]:
        """Every item, by time (then ties; equal keys in the order added)."""
        for batch in self.batches():
            for key, payload in batch:
                yield key[0], payload

    def batches(self) -> Iterator[list[_Keyed]]:
        """Every item in order (as `sorted`), a batch at a time: (key, payload) pairs, the
        key's first member the time (see the module docstring)."""
        if not self._sorted:
            self._items.sort()
            self._sorted = True
        return self._merge(self._sources())

    @staticmethod
    def _merge(sources: Iterable[tuple[tuple[Any, ...], Iterator[list[_Keyed]]]]
               ) -> Iterator[list[_Keyed]]:
        """The items of `sources` (each: its first key, its blocks) in order, a batch at a
        time."""
        # Runs wait, by their first key, until the merge reaches it (`_Waiting`).
        waiting = _Waiting(sources)
        current: list[tuple[_Block, Iterator[list[_Keyed]]]] = []
        while current or waiting:
            if not current:
                current.append(waiting.take())
            # No unread item of the current runs comes before the smallest last key of their
            # blocks; a run whose first key is not after it takes part from here on.
            horizon = min(block[-1][0] for (block, _at), _src in current)
            while waiting.starts_by(horizon):
                started = waiting.take()
                current.append(started)
                horizon = min(horizon, started[0][0][-1][0])
            if len(current) == 1 and not waiting:  # one run left: its blocks as they are
                (block, at), src = current[0]
                yield block[at:] if at else block
                yield from src
                return
            batch: list[_Keyed] = []
            took = 0
            for i, ((block, at), src) in enumerate(current):
                if block[at][0] > horizon:
                    continue
                end = bisect_right(block, horizon, at, key=_key_of)
                batch += block[at:end] if at or end < len(block) else block
                took += 1
                if end < len(block):
                    current[i] = ((block, end), src)
                    continue
                nxt = next(src, None)
                current[i] = ((nxt, 0), src) if nxt else ((block, end), src)
            current = [c for c in current if c[0][1] < len(c[0][0])]
            if took > 1:
                batch.sort()
            yield batch

    def _sources(self) -> Iterator[tuple[tuple[Any, ...], Iterator[list[_Keyed]]]]:
        """Each run on disk, and the items still in memory (sorted), as (first key, blocks)."""
        for f, start, end in self._runs:
            first = self._first_key(f, start, end)
            if first is not None:
                yield first, self._read_run(f, start, end)
        if self._items:
            block = [((t, *tie, seq, len(p)), p) for t, tie, seq, p in self._items]
            yield block[0][0], iter([block])

    def _first_key(self, f: IO[bytes], start: int, end: int) -> tuple[Any, ...] | None:
        """The key of a run's first item, read without its block (None: an empty run)."""
        size = _BLOCK_HEAD.size + self._head.size
        top = os.pread(f.fileno(), size, start) if end - start >= size else b""
        if len(top) < size or _BLOCK_HEAD.unpack_from(top)[0] == 0:
            return None
        return self._head.unpack_from(top, _BLOCK_HEAD.size)

    def _read_run(self, f: IO[bytes], start: int, end: int) -> Iterator[list[_Keyed]]:
        """A run's blocks, one at a time, as (key, payload) pairs."""
        head = self._head
        size, iter_unpack = head.size, head.iter_unpack
        fd, pos = f.fileno(), start
        while pos < end:
            top = os.pread(fd, _BLOCK_HEAD.size, pos)
            if len(top) < _BLOCK_HEAD.size:
                return
            n, payload_bytes = _BLOCK_HEAD.unpack(top)
            pos += _BLOCK_HEAD.size
            body = os.pread(fd, n * size + payload_bytes, pos)
            pos += len(body)
            keys = list(iter_unpack(body[:n * size]))
            ends = list(accumulate([k[-1] for k in keys], initial=n * size))
            payloads = [body[a:b] for a, b in zip(ends, ends[1:], strict=False)]
            yield list(zip(keys, payloads, strict=True))

    def close(self) -> None:
        self._items = []
        self._bytes = 0
        for f, _start, _end in self._runs:
            f.close()
        self._runs = []
        self._levels = []
        if self._run_file is not None:
            self._run_file.close()


class _Waiting:
    """The runs a merge has not started, by their first key: a run is read (its first block
    held) only once the merge reaches that key. The runs of items added almost in time order
    (a log, gaps by start) each cover a stretch of time, so the merge holds a block of the one
    or two runs that overlap there, not one of every run: a week of `--log` events is ~1,300
    runs, ~1.3 MB each as the merge holds a block (a block of each took ~1.6 GB in every
    reader of the spool)."""

    def __init__(self, sources: Iterable[tuple[tuple[Any, ...], Iterator[list[_Keyed]]]]
                 ) -> None:
        # Smallest first key last, to pop (keys are unique: each has its sequence number).
        self._runs = sorted(sources, key=_key_of, reverse=True)

    def __bool__(self) -> bool:
        return bool(self._runs)

    def starts_by(self, key: tuple[Any, ...]) -> bool:
        """Whether a waiting run's first item is not after `key`."""
        return bool(self._runs) and self._runs[-1][0] <= key

    def take(self) -> tuple[_Block, Iterator[list[_Keyed]]]:
        """The waiting run with the smallest first key, started: its first block, its rest."""
        _first, src = self._runs.pop()
        block = next(src)  # its first key was read from it: the block is there
        return (block, 0), src


def _block_bytes(block: list[_Keyed], size: int, pack: Callable[..., bytes]) -> Iterator[bytes]:
    """A block as written: its head, its items' keys, their payloads."""
    yield _BLOCK_HEAD.pack(len(block), size)
    yield b"".join([pack(*key) for key, _payload in block])
    yield b"".join([payload for _key, payload in block])


def _spool_error(exc: OSError, folder: str) -> SpoolError:
    return SpoolError(exc.errno, exc.strerror or str(exc),
                      f"{folder} (temporary files of the report; TMPDIR says where)")
