"""A recording's set id: made, read back from a file's header, and taken over by a later run.

Who calls it: `gapwatch.sinks.segments` (which segments are this set's: the budget removes
only those; a later run on the same name continues the set), `gapwatch.sinks.output_file`
(`--rotate`: the next file continues the set of the one it rotates past), and
`gapwatch.sinks.recorder` (a new id for a file that starts a set). The readers
(`gapwatch.sources.recording_set`) join only files of one set.

Reading is bounded and never trusts the file: at most `HEADER_MAX_BYTES` are read (inflated),
the first line is decoded leniently (only `type`, `set_id` and `host`; anything that is not a
header, nested JSON included, is "no mark").
"""

from __future__ import annotations

import os
import secrets
import stat
import zlib
from pathlib import Path

import msgspec

from gapwatch.base.gzip_stream import is_gzip

#: The most of a file read to find its header line (a header with its config is a few KB).
HEADER_MAX_BYTES = 64 << 10


def new_set_id() -> str:
    """A recording set's id: 64 random bits, in hex."""
    return secrets.token_hex(8)


class SetMark(msgspec.Struct):
    """What a header says about the set its file belongs to (other fields are ignored)."""

    type: str = ""
    set_id: str | None = None
    host: str | None = None


def _first_line(fd: int) -> bytes | None:
    """The first line of the open file (gzip inflated), reading at most `HEADER_MAX_BYTES`;
    None when there is none within that."""
    raw = os.pread(fd, HEADER_MAX_BYTES, 0)
    if is_gzip(raw):
        try:
            raw = zlib.decompressobj(31).decompress(raw, HEADER_MAX_BYTES)
        except zlib.error:
            return None
    end = raw.find(b"\n")
    return raw[:end] if end >= 0 else None


def read_mark(fd: int) -> SetMark | None:
    """The set mark of the open file's header, None when its first line is not a header."""
    line = _first_line(fd)
    if line is None:
        return None
    try:
        mark = msgspec.json.decode(line, type=SetMark)
    except (msgspec.DecodeError, RecursionError, ValueError):
        return None
    return mark if mark.type == "header" else None


def inherited_set_id(paths: list[Path], host: str) -> str | None:
    """The set id of the first of `paths` (newest first) that is a recording written on
    `host` by this user (a regular file it owns), None when none is."""
    for path in paths:
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                continue
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            mark = read_mark(fd)
        except OSError:
            mark = None
        finally:
            os.close(fd)
        if mark is not None and mark.set_id and mark.host == host:
            return mark.set_id
    return None
