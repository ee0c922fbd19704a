"""Small typed tuples kept in the order added, on disk beyond a few tens of thousands, read back
as often as asked.

Who calls it: `gapwatch.offline.compare`, whose sides keep each gap, partition end and
host-to-device copy of a recording as a slim tuple until both sides are read (a day of 8 GPUs
is ~330,000 gaps and ~460,000 partitions a side: 88 MB a side held as tuples, ~0.6 GB a week).
Encoded with msgpack (floats bit for bit) and decoded back to their type, so what is read back
equals what was added; a `SortedSpool` of one key underneath (its order is the order added),
whose runs are unlinked temporary files, freed when the spool is collected.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Final, Generic, TypeVar

import msgspec

from gapwatch.base.sorted_spool import SortedSpool

#: Tuples held in memory before a run is written (~100 bytes each held).
RUN_ITEMS: Final = 20_000

T = TypeVar("T")


class TupleSpool(Generic[T]):
    """Tuples of `kind` (a NamedTuple or a `tuple[...]` type msgspec decodes) in the order
    added; iterable again and again (each pass reads the disk anew)."""

    def __init__(self, kind: Any, items: Iterable[T] = ()) -> None:
        self._spool = SortedSpool(run_items=RUN_ITEMS)
        self._encode = msgspec.msgpack.Encoder().encode
        self._decode = msgspec.msgpack.Decoder(kind).decode
        for item in items:
            self.add(item)

    def add(self, item: T) -> None:
        self._spool.add(0.0, self._encode(item))

    def __len__(self) -> int:
        return len(self._spool)

    def __iter__(self) -> Iterator[T]:
        decode = self._decode
        for batch in self._spool.batches():
            for _key, payload in batch:
                yield decode(payload)

    def __eq__(self, other: object) -> bool:
        """Equal to another spool or a list holding the same tuples in the same order."""
        if not isinstance(other, TupleSpool | list):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)
