"""The lines of a gzip recording, inflated member after member in large chunks.

Who calls it: `gapwatch.sources.recording` (every `.gz` recording: `report`, `export`, replay,
the parallel report's workers). The standard library's `gzip.GzipFile` hands out a line at a
time through a buffered reader over small reads; a 30 min x 8 GPU recording (47 MB of JSON)
took 0.15 s to iterate that way against 0.02 s for the plain file. Here zlib inflates
`CHUNK_BYTES` of input at a time and the lines of each piece are split in one C call
(`io.BytesIO.readlines`), so iterating costs about as much as inflating (0.05 s there).

The same bytes as `GzipFile`, the same end: a file is any number of gzip members (the recorder
starts one per write batch), zero padding between them is passed over, and a file cut inside a
member (kill -9, a full disk) gives every whole line inflated before the cut, then raises
`EOFError` as `GzipFile` does (the reader counts it "truncated"); the half line is dropped.
Data that is not gzip after a member raises `gzip.BadGzipFile`; corrupt data `zlib.error`.
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Generator, Iterator
from itertools import chain
from typing import IO

#: Compressed bytes inflated at a time (their output is ~14x as much for a recording: ~0.9 MB
#: of lines held at a time; 16 to 256 KiB inflate equally fast).
CHUNK_BYTES = 1 << 16
#: Most bytes inflated from one call (a highly compressed stretch is inflated in steps).
OUT_BYTES = 1 << 23
GZIP_WBITS = 31  # zlib's gzip container: header and trailer (CRC, size) checked
#: `GzipFile`'s words for a file cut inside a member.
CUT_WORDS = "Compressed file ended before the end-of-stream marker was reached"


class GzipLines:
    """A gzip file's lines (newlines kept), for `for line in ...` and `readline()`."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self._pieces_left = self._pieces()
        self._lines: Iterator[bytes] = chain.from_iterable(self._pieces_left)

    def __iter__(self) -> Iterator[bytes]:
        return self._lines

    def readline(self) -> bytes:
        """The next line, or b"" at the end."""
        return next(self._lines, b"")

    def close(self) -> None:
        """Close the file and let go of the piece being read (its lines and inflated bytes, a
        few MB): the generator refers back to this object, and while the report runs without
        the cycle collector nothing else would free them."""
        self._pieces_left.close()
        self._lines = iter(())
        self._raw.close()

    def _pieces(self) -> Generator[list[bytes], None, None]:
        """Lists of whole lines, in order; the last one may lack its newline (the file's last
        line was written without one)."""
        z = zlib.decompressobj(GZIP_WBITS)
        #: The start of a line not yet ended, in pieces (a long line is joined once, not
        #: copied again with every chunk).
        tail: list[bytes] = []
        started = False  # inside a member: its end must come before the file's
        read = self._raw.read
        data = b""
        full = False  # the last call stopped at OUT_BYTES: it may hold more output
        while True:
            if not data and not full:
                data = read(CHUNK_BYTES)
                if not data:
                    break
            if not started:
                data = data.lstrip(b"\x00")  # padding between members
                if not data:
                    continue
                if len(data) >= 2 and data[:2] != b"\x1f\x8b":
                    raise gzip.BadGzipFile(f"Not a gzipped file ({data[:2]!r})")
                started = True
            out = z.decompress(data, OUT_BYTES)
            full = len(out) == OUT_BYTES
            if z.eof:
                full = False
                data = z.unused_data
                z = zlib.decompressobj(GZIP_WBITS)
                started = False
            else:
                data = z.unconsumed_tail
            if b"\n" not in out:
                if out:
                    tail.append(out)
                continue
            if tail:
                tail.append(out)
                out = b"".join(tail)
                tail = []
            lines = io.BytesIO(out).readlines()
            if not lines[-1].endswith(b"\n"):
                tail.append(lines.pop())
            yield lines
        if started:
            raise EOFError(CUT_WORDS)
        if tail:
            yield [b"".join(tail)]
