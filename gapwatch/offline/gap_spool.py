"""A report's gaps and its `--log` events on disk, sorted, read back one at a time.

Who calls it: `gapwatch.offline.detect.detect_records` (final gap versions go to a `GapSpool` as
the detector lets them go, so a report holds the gaps of a few seconds, not of the run),
`gapwatch.offline.report_parallel` (the workers' gaps, renumbered in their encoded bytes:
`renumbered`, `GapKey`), `gapwatch.offline.report` (its summaries are one pass over them),
`gapwatch.offline.report.spool_logs` and `gapwatch.offline.log_split` (the `--log` files'
events, parsed whole but held on disk until the detector reaches them, each with the
detector's bounded copy of it: `EventSpool.bounded`). Both are `SortedSpool`s of records
encoded with msgpack (floats kept bit for bit, NaN included): what is read back equals what
was added.

A `GapSpool` is a read-only sequence of gaps in start order (start time, GPU, id: the
order `GapLedger.closed` gives): `len`, iteration, indexing and `==` against a list, so a
report's `gaps` reads as the list it was; each iteration reads the spool from disk again. Few
gaps never touch the disk (`GAP_RUN_ITEMS`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import IO, Final, Generic, TypeVar, overload

import msgspec
from msgspec.structs import replace

from gapwatch.base.sorted_spool import SortedSpool
from gapwatch.core.models import Gap, LogEvent
from gapwatch.core.sizes import bounded_event, surely_bounded

#: Gaps held in memory before a run is written: a gap with its evidence is ~1-4 KB encoded.
GAP_RUN_ITEMS: Final = 4096
#: Log events held in memory before a run is written (~0.4 KB each encoded).
EVENT_RUN_ITEMS: Final = 32_768

T = TypeVar("T", Gap, LogEvent)


class _StructSpool(Generic[T]):
    """Structs of one type, sorted by a key, encoded on the way in, decoded on the way out."""

    def __init__(self, kind: type[T], run_items: int, ties: int, *, first_seq: int = 0,
                 run_file: IO[bytes] | None = None) -> None:
        self._spool = SortedSpool(run_items=run_items, ties=ties, first_seq=first_seq,
                                  run_file=run_file)
        self._encode = msgspec.msgpack.Encoder().encode
        self._decode: Callable[[bytes], T] = msgspec.msgpack.Decoder(kind).decode

    def __len__(self) -> int:
        return len(self._spool)

    @property
    def runs(self) -> int:
        """Runs written to disk (0: all in memory)."""
        return self._spool.runs

    def __iter__(self) -> Iterator[T]:
        decode = self._decode
        for batch in self._spool.batches():
            for _key, payload in batch:
                yield decode(payload)

    def spill(self) -> list[tuple[int, int]]:
        """`SortedSpool.spill`."""
        return self._spool.spill()

    def adopt(self, f: IO[bytes], runs: list[tuple[int, int]], items: int) -> None:
        """`SortedSpool.adopt`."""
        self._spool.adopt(f, runs, items)

    def close(self) -> None:
        """Free the disk space (the spool reads as empty after)."""
        self._spool.close()
        self._spool = SortedSpool(ties=0)


#: A gap as `GapSpool.encoded` gives it back, and a gap as it holds one.
decode_gap: Callable[[bytes], Gap] = msgspec.msgpack.Decoder(Gap).decode
encode_gap: Callable[[Gap], bytes] = msgspec.msgpack.Encoder().encode


class GapKey(msgspec.Struct, frozen=True, gc=False, tag_field="type", tag="gap"):
    """What orders an encoded gap in a `GapSpool` (its id, GPU and start), read from it
    without decoding the rest (its evidence, most of its bytes, is passed over)."""

    gap_id: int
    gpu: int
    start_s: float


#: An encoded gap's `GapKey`.
gap_key: Callable[[bytes], GapKey] = msgspec.msgpack.Decoder(GapKey).decode

#: How every encoded gap starts after its map's head: the tag, then the id's key (`Gap`'s
#: first field); the id's value follows.
_GAP_ID_AT: Final = b"\xa4type\xa3gap\xa6gap_id"
#: A msgpack map's head by its first byte: fixmap, map 16, map 32 (bytes it takes).
_MAP_HEAD: Final = {**dict.fromkeys(range(0x80, 0x90), 1), 0xDE: 3, 0xDF: 5}
#: A msgpack integer's length by its first byte (fixints, then 8 to 64 bits, unsigned and
#: signed).
_INT_LEN: Final = {**dict.fromkeys(range(0x80), 1), **dict.fromkeys(range(0xE0, 0x100), 1),
                   0xCC: 2, 0xCD: 3, 0xCE: 5, 0xCF: 9, 0xD0: 2, 0xD1: 3, 0xD2: 5, 0xD3: 9}
_encode_int: Callable[[int], bytes] = msgspec.msgpack.Encoder().encode


def renumbered(payload: bytes, gap_id: int) -> bytes:
    """An encoded gap with its id replaced: the bytes `encode(replace(decode(payload),
    gap_id=gap_id))` gives, made by replacing the id's value where it stands (a split report's
    workers' gaps, renumbered by the parent: decoding and encoding each again cost ~0.25 s an
    hour of 8 GPUs with logs). A payload not laid out as expected is decoded and encoded."""
    head = _MAP_HEAD.get(payload[0], 0) if payload else 0
    at = head + len(_GAP_ID_AT)
    size = _INT_LEN.get(payload[at], 0) if head and len(payload) > at else 0
    if not size or not payload.startswith(_GAP_ID_AT, head):
        return encode_gap(replace(decode_gap(payload), gap_id=gap_id))
    return b"".join((payload[:at], _encode_int(gap_id), payload[at + size:]))


class GapSpool(_StructSpool[Gap], Sequence[Gap]):
    """Final versions of closed gaps, given back in start order (start, GPU, id).

    A split report's workers' gaps are put together without being written again: each
    worker's runs are adopted (`adopt`, from a file the parent shares with it), and the ids,
    the workers' own, are given out in the one sequence as the gaps are read (`number`). The
    order is the same either way: gaps of two workers never share a GPU, and a worker's ids
    keep their order in the one sequence."""

    def __init__(self, run_items: int | None = None, *,
                 run_file: IO[bytes] | None = None) -> None:
        """`run_file`: every run is appended to it (a file another process adopts them from)."""
        super().__init__(Gap, run_items or GAP_RUN_ITEMS, ties=2, run_file=run_file)
        self._ids: Callable[[int, int], int] | None = None

    def number(self, ids: Callable[[int, int], int]) -> None:
        """From now on each gap is read with the id `ids(gpu, its id as held)`."""
        self._ids = ids

    def __iter__(self) -> Iterator[Gap]:
        ids = self._ids
        if ids is None:
            yield from super().__iter__()
            return
        for g in super().__iter__():
            yield replace(g, gap_id=ids(g.gpu, g.gap_id))

    def add(self, gap: Gap) -> None:
        self._spool.add(gap.start_s, self._encode(gap), (gap.gpu, gap.gap_id))

    def add_encoded(self, key: GapKey, payload: bytes) -> None:
        """A gap already encoded (`key`: its own, `gap_key`), held as it is."""
        self._spool.add(key.start_s, payload, (key.gpu, key.gap_id))

    def encoded(self) -> Iterator[bytes]:
        """The gaps in order, encoded (`decode_gap` reads one): for another process, without
        decoding them here (a numbered spool's ids replaced in their bytes: `renumbered`)."""
        ids = self._ids
        for batch in self._spool.batches():
            for _key, payload in batch:
                if ids is None:
                    yield payload
                else:
                    key = gap_key(payload)
                    yield renumbered(payload, ids(key.gpu, key.gap_id))

    def extend(self, gaps: Iterable[Gap]) -> None:
        for g in gaps:
            self.add(g)

    @overload
    def __getitem__(self, i: int) -> Gap: ...
    @overload
    def __getitem__(self, i: slice) -> list[Gap]: ...

    def __getitem__(self, i: int | slice) -> Gap | list[Gap]:
        """By position (a pass over the spool: for tests and the first rows of a table)."""
        if isinstance(i, slice):
            return list(self)[i] if (i.step or 1) < 0 or (i.start or 0) < 0 or (
                i.stop is not None and i.stop < 0) else list(islice(self, i.start, i.stop, i.step))
        n = len(self)
        if not -n <= i < n:
            raise IndexError(i)
        return next(islice(self, i % n, None))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, GapSpool | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __repr__(self) -> str:
        return f"GapSpool({len(self)} gaps, {self.runs} runs on disk)"


#: A `--log` event and what the detector is given of it (`bounded_event`: the event itself
#: unless its text is cut).
Bounded = tuple[LogEvent, LogEvent]


class EventSpool(_StructSpool[LogEvent]):
    """Log events, given back by time (equal times in the order added: a stable sort's).
    `first_seq`, `run_file`: written by another process to be adopted (`SortedSpool`).

    Each event is judged against the detector's bounds once, as it is added (`bounded_event`):
    every worker of a split report reads every event back (`bounded`), and each paid for the
    check (0.16 CPU-s over the 248,590 events of an hour of 8 GPUs). An event within them (all
    but hostile lines) is held as it was; one cut is held with its cut copy beside it (a list
    of the two)."""

    def __init__(self, run_items: int | None = None, *, first_seq: int = 0,
                 run_file: IO[bytes] | None = None) -> None:
        super().__init__(LogEvent, run_items or EVENT_RUN_ITEMS, ties=0, first_seq=first_seq,
                         run_file=run_file)
        self._decode_held: Callable[[bytes], LogEvent | list[LogEvent]] = \
            msgspec.msgpack.Decoder(LogEvent | list[LogEvent]).decode

    def add(self, event: LogEvent, key_s: float | None = None) -> None:
        """`event`, given back at its time, or at `key_s` where given (an event timed when it
        was read, kept beside the lines around it: `gapwatch.commands.parse`)."""
        payload = self._encode(event)
        if not surely_bounded(event, len(payload)):
            kept = bounded_event(event)
            if kept is not event:
                payload = self._encode((event, kept))
        self._spool.add(event.t_wall_s if key_s is None else key_s, payload)

    def __iter__(self) -> Iterator[LogEvent]:
        for event, _kept in self.bounded():
            yield event

    def bounded(self) -> Iterator[Bounded]:
        """Every event with what the detector is given of it, by time."""
        decode = self._decode_held
        for batch in self._spool.batches():
            for _key, payload in batch:
                held = decode(payload)
                yield (held[0], held[1]) if isinstance(held, list) else (held, held)

