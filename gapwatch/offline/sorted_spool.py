"""Items sorted by a key in bounded memory: an external merge sort of (key, bytes) pairs.

Who calls it: `gapwatch.offline.perfetto.TraceBuilder`, whose trace of a day of 8 GPUs is tens of
millions of events (held as Python dicts it took ~1.6 GB per hour of recording), and
`gapwatch.offline.gap_spool` (a report's gaps, in start order, and the `--log` files' events, in
time order). Items are kept in memory up to `run_items` (or until their payloads reach
`RUN_BYTES`), then sorted and written to a temporary file as one run; `sorted()` merges the runs
and what is left in memory. The key is a time and, where the caller gives them, `ties`
integers; items with equal keys come back in the order added (each item carries its sequence
number), so the output is the same however many runs there were: `sorted(items, key=key)`'s
order.

The runs are anonymous temporary files (`tempfile.TemporaryFile`, in the system's folder or
`folder`): unlinked as they are made, so nothing is left behind even when the process is
killed; `close()` (or the process ending) frees their space. The payload is bytes of any kind
(a run stores its length). Runs are read at explicit offsets (`os.pread`), never through the
file's shared position: processes forked from the one that wrote a spool (the parallel report's
workers, `gapwatch.offline.report_parallel`) each read it whole, at the same time.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import struct
import tempfile
from collections.abc import Iterator
from typing import IO, Final


class SpoolError(OSError):
    """A run could not be written (a full or read-only temporary folder): its `filename` names
    the folder and says that it holds the spool, so a command's message points at it."""


#: Items held in memory before a run is written (a trace event is ~150-300 bytes encoded).
RUN_ITEMS: Final = 200_000
#: Payload bytes held in memory before a run is written, however few the items: a gap's slice
#: in a trace is ~3 KB (its evidence), and a day's 330,000 of them held 200,000 at a time
#: took ~0.9 GB.
RUN_BYTES: Final = 32 << 20

#: Bytes of a run read at a time.
READ_BYTES: Final = 1 << 20

#: An item: its time, its tie integers, its sequence number and its payload.
_Item = tuple[float, tuple[int, ...], int, bytes]


class SortedSpool:
    """Add (time, payload) pairs in any order; read them back sorted by time (then `tie`).

    `sorted()` may be called more than once (not while another of its iterators is running):
    each call reads the runs from their start."""

    def __init__(self, run_items: int | None = None, folder: str | None = None,
                 ties: int = 0) -> None:
        self._run_items = run_items or RUN_ITEMS
        self._run_bytes = RUN_BYTES
        self._bytes = 0
        self._dir = folder
        self._ties = ties
        # Time, ties, sequence number, payload length.
        self._head = struct.Struct(f"<d{ties}qqI")
        self._items: list[_Item] = []
        self._runs: list[IO[bytes]] = []
        self._seq = 0
        self._sorted = True

    def __len__(self) -> int:
        return self._seq

    @property
    def runs(self) -> int:
        """Runs written to disk so far (0: everything is still in memory)."""
        return len(self._runs)

    def add(self, t: float, payload: bytes, tie: tuple[int, ...] = ()) -> None:
        """`tie`: `ties` integers that order items of equal time (before the order added)."""
        self._items.append((t, tie, self._seq, payload))
        self._seq += 1
        self._sorted = False
        self._bytes += len(payload)
        if len(self._items) >= self._run_items or self._bytes >= self._run_bytes:
            self._spill()

    def _spill(self) -> None:
        self._items.sort()
        folder = self._dir or tempfile.gettempdir()
        try:
            f = tempfile.TemporaryFile(prefix="gapwatch-spool-", dir=folder)  # noqa: SIM115
        except OSError as exc:
            raise _spool_error(exc, folder) from None
        pack = self._head.pack
        try:
            f.writelines(b"".join((pack(t, *tie, seq, len(payload)), payload))
                         for t, tie, seq, payload in self._items)
            f.flush()
        except OSError as exc:
            with contextlib.suppress(OSError):  # closing flushes the rest: full again
                f.close()  # unlinked already: its space is freed
            raise _spool_error(exc, folder) from None
        self._runs.append(f)
        self._items = []
        self._bytes = 0

    def sorted(self) -> Iterator[tuple[float, bytes]]:
        """Every item, by time (then ties; equal keys in the order added)."""
        if not self._sorted:
            self._items.sort()
            self._sorted = True
        streams = [self._read_run(f) for f in self._runs]
        items = heapq.merge(*streams, iter(self._items)) if streams else iter(self._items)
        for t, _tie, _seq, payload in items:
            yield t, payload

    def _read_run(self, f: IO[bytes]) -> Iterator[_Item]:
        head = self._head
        size, unpack_from, ties = head.size, head.unpack_from, self._ties
        fd, pos = f.fileno(), 0
        buf, at = b"", 0
        while True:
            if len(buf) - at < size:
                buf, at = buf[at:] + os.pread(fd, READ_BYTES, pos), 0
                pos += READ_BYTES
                if len(buf) < size:
                    return
            *key, seq, n = unpack_from(buf, at)
            at += size
            if len(buf) - at < n:  # the payload runs past what was read
                buf, at = buf[at:] + os.pread(fd, max(n, READ_BYTES), pos), 0
                pos += max(n, READ_BYTES)
            yield key[0], tuple(key[1:1 + ties]), seq, buf[at:at + n]
            at += n

    def close(self) -> None:
        self._items = []
        self._bytes = 0
        for f in self._runs:
            f.close()
        self._runs = []


def _spool_error(exc: OSError, folder: str) -> SpoolError:
    return SpoolError(exc.errno, exc.strerror or str(exc),
                      f"{folder} (temporary files of the report; TMPDIR says where)")
