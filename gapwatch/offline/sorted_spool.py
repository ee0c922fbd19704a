"""Items sorted by time in bounded memory: an external merge sort of (time, bytes) pairs.

Who calls it: `gapwatch.offline.perfetto.TraceBuilder`, whose trace of a day of 8 GPUs is tens of
millions of events (held as Python dicts it took ~1.6 GB per hour of recording). Items are kept
in memory up to `RUN_ITEMS`, then sorted and written to a temporary file as one run; `sorted()`
merges the runs and what is left in memory. The order is `sorted(items, key=time)`'s: by time,
ties in the order added (each item carries its sequence number), so the output is the same
however many runs there were. The temporary folder (in the system's, or `folder`) is removed on
`close()`.
"""

from __future__ import annotations

import heapq
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Final

#: Items held in memory before a run is written (a trace event is ~150-300 bytes encoded).
RUN_ITEMS: Final = 200_000


class SortedSpool:
    """Add (time, payload) pairs in any order; read them back sorted by time, once."""

    def __init__(self, run_items: int | None = None, folder: str | None = None) -> None:
        self._run_items = run_items or RUN_ITEMS
        self._dir = folder
        self._tmp: Path | None = None
        self._items: list[tuple[float, int, bytes]] = []
        self._runs: list[Path] = []
        self._seq = 0

    def __len__(self) -> int:
        return self._seq

    def add(self, t: float, payload: bytes) -> None:
        """`payload` must not hold a newline (JSON does not)."""
        self._items.append((t, self._seq, payload))
        self._seq += 1
        if len(self._items) >= self._run_items:
            self._spill()

    def _spill(self) -> None:
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="gapwatch-spool-", dir=self._dir))
        self._items.sort()
        path = self._tmp / f"run{len(self._runs)}"
        with open(path, "wb") as f:
            f.writelines(b"%r %d %b\n" % (t, seq, payload) for t, seq, payload in self._items)
        self._runs.append(path)
        self._items = []

    def sorted(self) -> Iterator[tuple[float, bytes]]:
        """Every item, by time (ties in the order added)."""
        self._items.sort()
        files = [open(p, "rb") for p in self._runs]  # noqa: SIM115 - closed below
        try:
            streams = [_read_run(f) for f in files] + [iter(self._items)]
            for t, _seq, payload in heapq.merge(*streams):
                yield t, payload
        finally:
            for f in files:
                f.close()

    def close(self) -> None:
        self._items = []
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        self._runs = []


def _read_run(f: IO[bytes]) -> Iterator[tuple[float, int, bytes]]:
    for line in f:
        t, seq, payload = line.rstrip(b"\n").split(b" ", 2)
        yield float(t), int(seq), payload
