"""Recorder: the session sink that writes every record to a JSON Lines file (gzip for `.gz`).

Who calls it: the runtime (`record --out`, `watch/demo --record`), snapshots and conversions
(`write_recording`), tests. The format and its reader are in `gapwatch.sources.recording`.

Writes are buffered and flushed at least every `flush_interval_s`; a `.gz` file is flushed with
Z_SYNC_FLUSH so that a `kill -9` loses at most the last interval and what was written still reads.
"""

from __future__ import annotations

import gzip
import time
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import IO

import orjson

from gapwatch.core.models import Record, SessionHeader


class Recorder:
    """A session sink that writes every record to a JSON Lines file (gzip when `.gz`).

    Writes are buffered and flushed when `flush_interval_s` has passed since the last flush
    (checked on every record: the sampler delivers records every period) and on `close()`.
    """

    def __init__(self, path: str | Path, flush_interval_s: float = 1.0) -> None:
        self.path = Path(path)
        self._flush_interval_ns = int(flush_interval_s * 1e9)
        self._raw: IO[bytes] = open(self.path, "wb")  # noqa: SIM115 - closed in close()
        self._gz: gzip.GzipFile | None = None
        if self.path.suffix == ".gz":
            self._gz = gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=6)
        self._buf: list[bytes] = []
        self._last_flush_ns = time.monotonic_ns()
        self.records_written = 0
        self.closed = False

    def on_header(self, header: SessionHeader) -> None:
        self._buf.append(header.model_dump_json().encode() + b"\n")
        self.flush()

    def on_record(self, record: Record) -> None:
        if self.closed:
            return
        self._buf.append(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))
        self.records_written += 1
        if time.monotonic_ns() - self._last_flush_ns >= self._flush_interval_ns:
            self.flush()

    def flush(self) -> None:
        if self.closed:
            return
        data = b"".join(self._buf)
        self._buf.clear()
        if self._gz is not None:
            self._gz.write(data)
            # A sync flush ends the deflate block on a byte boundary: everything so far is
            # decodable even if the process dies before the gzip trailer is written.
            self._gz.flush(zlib.Z_SYNC_FLUSH)
        else:
            self._raw.write(data)
        self._raw.flush()
        self._last_flush_ns = time.monotonic_ns()

    def close(self) -> None:
        if self.closed:
            return
        self.flush()
        self.closed = True
        if self._gz is not None:
            self._gz.close()
        self._raw.close()


def write_recording(path: str | Path, header: SessionHeader, records: Iterable[Record]) -> int:
    """Write a whole recording at once (snapshots, CSV conversion, tests). Returns the count."""
    rec = Recorder(path)
    rec.on_header(header)
    for r in records:
        rec.on_record(r)
    rec.close()
    return rec.records_written
