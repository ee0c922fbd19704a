"""A gzip file's inflated bytes, in pieces of bounded size, as `GzipFile` would give them.

Who calls it: `gapwatch.sources.gzip_lines` (gzip recordings, split into lines there) and
`gapwatch.logs.files` (a prover log gzipped by logrotate, `cuzk.log.1.gz`), and
`gapwatch.offline.startup_lines` (a gzip recording searched for the daemon's start as bytes).

zlib inflates `CHUNK_BYTES` of input at a time, at most `OUT_BYTES` of output per call. The
same bytes as `GzipFile`, the same end: a file is any number of gzip members (the recorder
starts one per write batch; `cat a.gz b.gz` makes two), zero padding between them is passed
over, and a file cut inside a member (kill -9, a full disk, a copy cut short) gives every byte
inflated before the cut, then raises `EOFError` as `GzipFile` does. Data that is not gzip after a
member raises `gzip.BadGzipFile` (an OSError); corrupt data `zlib.error`.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from typing import IO, Final

#: Compressed bytes inflated at a time (their output is ~14x as much for a recording: ~0.9 MB
#: of lines held at a time; 16 to 256 KiB inflate equally fast).
CHUNK_BYTES = 1 << 16
#: Most bytes inflated from one call (a highly compressed stretch is inflated in steps).
OUT_BYTES = 1 << 23
GZIP_WBITS: Final = 31  # zlib's gzip container: header and trailer (CRC, size) checked
#: How every gzip member starts.
GZIP_MAGIC: Final = b"\x1f\x8b"
#: Bytes of a file's start `is_gzip` reads: the magic, the method and the flags.
GZIP_HEAD_BYTES: Final = 4
#: `GzipFile`'s words for a file cut inside a member.
CUT_WORDS: Final = "Compressed file ended before the end-of-stream marker was reached"


def is_gzip(head: bytes) -> bool:
    """Whether a file starting with `head` (its first `GZIP_HEAD_BYTES` or more) is gzip: the
    magic, deflate (the one method gzip has) and no reserved flag set (RFC 1952). A text
    file whose first two bytes happen to be the magic (`\x1f\x8b junk`) was taken for gzip,
    said to "end early" and read as nothing."""
    return (len(head) >= GZIP_HEAD_BYTES and head[:2] == GZIP_MAGIC and head[2] == 8
            and not head[3] & 0xE0)


def inflated(raw: IO[bytes]) -> Iterator[bytes]:
    """The inflated bytes of the gzip file `raw` from where it is, in pieces of at most
    `OUT_BYTES` (every member in turn; see the module docstring for the end and for damage)."""
    z = zlib.decompressobj(GZIP_WBITS)
    started = False  # inside a member: its end must come before the file's
    read = raw.read
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
            if len(data) >= 2 and data[:2] != GZIP_MAGIC:
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
        if out:
            yield out
    if started:
        raise EOFError(CUT_WORDS)
