"""A recording's set id: made, read back from a file's header, and taken over by a later run.

Who calls it: `gapwatch.sinks.segments` (which segments are this set's: the budget removes
only those; a later run on the same name continues the set), `gapwatch.sinks.output_file`
(`--rotate`: the next file continues the set of the one it rotates past), and
`gapwatch.sinks.recorder` (a new id for a file that starts a set). The readers
(`gapwatch.sources.recording_set`) join only files of one set.

Reading is bounded and never trusts the file: at most `HEADER_MAX_BYTES` are read (inflated),
the first line is decoded leniently (only `type`, `set_id`, `host` and `file_inode`; anything
that is not a header, nested JSON included, is "no mark").

A header the recorder wrote names the inode of its file (`file_inode`): a file whose header
names another inode is a copy (`cp`, a restore), which no gapwatch wrote there; it is never
taken for a segment of the set it names (`is_copy`). A header without it (written before, or
by `write_recording`) proves nothing either way, and is judged by its set id alone.
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
#: What is read first: a run that starts looks at every segment of its name (`segments`),
#: thousands where every one is kept.
HEADER_FIRST_BYTES = 16 << 10


def new_set_id() -> str:
    """A recording set's id: 64 random bits, in hex."""
    return secrets.token_hex(8)


class SetMark(msgspec.Struct):
    """What a header says about the set its file belongs to (other fields are ignored)."""

    type: str = ""
    set_id: str | None = None
    host: str | None = None
    file_inode: int | None = None


def _first_line(fd: int) -> bytes | None:
    """The first line of the open file (gzip inflated), reading `HEADER_FIRST_BYTES`, then
    at most `HEADER_MAX_BYTES`; None when there is none within that."""
    for size in (HEADER_FIRST_BYTES, HEADER_MAX_BYTES):
        raw = os.pread(fd, size, 0)
        short = len(raw) < size  # the whole file: reading more finds nothing more
        if is_gzip(raw):
            try:
                raw = zlib.decompressobj(31).decompress(raw, HEADER_MAX_BYTES)
            except zlib.error:
                return None
        end = raw.find(b"\n")
        if end >= 0:
            return raw[:end]
        if short:
            return None
    return None


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


def is_copy(mark: SetMark, st: os.stat_result) -> bool:
    """Whether the file `st` describes holds a header the recorder wrote into another file: a
    copy, not a file gapwatch wrote where it is (see the module docstring)."""
    return mark.file_inode is not None and mark.file_inode != st.st_ino


def own_mark(path: Path) -> tuple[SetMark, os.stat_result] | None:
    """The set mark of `path` and the file's status, when it is a regular file of this user
    (a link is never followed) whose first line is a header; None otherwise."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        now = os.fstat(fd)
        mark = read_mark(fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    return (mark, now) if mark is not None else None


def inherited_set_id(paths: list[Path], host: str) -> str | None:
    """The set id of the first of `paths` (newest first) that is a recording written on
    `host` by this user (a regular file it owns) and not a copy; None when none is."""
    for path in paths:
        found = own_mark(path)
        if found is None:
            continue
        mark, st = found
        if mark.set_id and mark.host == host and not is_copy(mark, st):
            return mark.set_id
    return None
