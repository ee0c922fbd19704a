"""Files given from outside that gapwatch reads whole (a config, a recording, an offline log):
what kind each is, and waiting, within a bound, for a FIFO's writer.

Who calls it: `gapwatch.config` (`--config`), and through `open_whole`
`gapwatch.sources.recording` (every recording file is opened there) and `gapwatch.logs.files`
(an offline `--log`). A path from outside may name anything: `/dev/zero` (read for ever), a
FIFO nobody writes to (`open()` blocks for ever, and a non-blocking read says "end" at once), a
socket. These are refused, or waited for within a bound, before a byte is read.
"""

from __future__ import annotations

import io
import math
import os
import select
import stat
import time
from collections.abc import Callable
from typing import Any

#: A file's kind as a refusal names it, by its `st_mode` test.
_KINDS: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)

#: How long a FIFO given as a whole file (a recording: `replay <(zcat gw.jsonl.gz)`; an
#: offline log) may wait for its writer's first bytes: one nobody writes to blocked `open()`
#: for ever. The readers name it in their own modules (`sources.recording`, `logs.files`).
FIFO_FIRST_BYTES_S = 10.0
#: The longest slice of that wait (`fifo_heard`): a stop signal's handler runs between them.
_SLICE_MS = 250

#: Linux's limits on a path (PATH_MAX, counting the NUL) and on one name in it (NAME_MAX: 255
#: bytes on ext4, xfs, btrfs, tmpfs). A path beyond them can never be opened, and pathlib's
#: `exists()`/`is_dir()` raise ENAMETOOLONG for it instead of answering (Python 3.11): a
#: 300-character `--config`, `replay FILE`, `export --out` or
#: `$XDG_CONFIG_HOME` was a traceback.
PATH_MAX = 4096
NAME_MAX = 255


def file_kind(mode: int) -> str:
    """`st_mode` in words, for a one-line refusal ("a character device")."""
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def fifo_heard(fd: int, within_s: float) -> bool:
    """Whether the FIFO open non-blocking on `fd` has bytes to read, or had a writer who left
    (its end), within `within_s` seconds. A non-blocking read says b"" both at the writer's end
    and while no writer ever came; poll tells them apart (POLLHUP only once one came and went).
    Waits in slices of at most `_SLICE_MS`, so that a stop signal's handler runs in time, each
    cut to what is left of `within_s` (a whole slice overran a shorter bound)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    deadline_s = time.monotonic() + within_s
    while True:
        left_s = deadline_s - time.monotonic()
        left_ms = math.ceil(left_s * 1000) if math.isfinite(left_s) else _SLICE_MS
        if poller.poll(max(0, min(_SLICE_MS, left_ms))):
            return True
        if time.monotonic() >= deadline_s:
            return False


class NotWhole(Exception):
    """`open_whole` refused a path before reading a byte: its `mode` (`st_mode`), a FIFO among
    them when its writer said nothing within the wait (`silent`)."""

    def __init__(self, mode: int, silent: bool = False) -> None:
        super().__init__(file_kind(mode))
        self.mode = mode
        self.silent = silent

    @property
    def kind(self) -> str:
        """What the path is, in words (`file_kind`)."""
        return file_kind(self.mode)


def open_whole(path: str | os.PathLike[str], wait_s: float) -> int:
    """`path` open for reading whole (a blocking descriptor, the caller's to close): a regular
    file, or a FIFO whose writer speaks within `wait_s` (then read to its writer's end: its
    pauses are waited out). Opened non-blocking first: opening a FIFO nobody writes to blocks,
    deaf to any bound. The one rule for files read whole (a recording, an offline log).

    Raises:
        OSError: it cannot be opened.
        NotWhole: a FIFO that said nothing, or no file to read whole (a device: `/dev/zero`
            is read for ever; a directory, a socket).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISFIFO(mode):
            if not fifo_heard(fd, wait_s):
                raise NotWhole(mode, silent=True)
        elif not stat.S_ISREG(mode):
            raise NotWhole(mode)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def named(exc: OSError, path: str | os.PathLike[str]) -> OSError:
    """`exc` naming `path` where it names no file. A read's error (`read()`: EIO of a failing
    disk, of `/proc/self/mem`) names none, unlike an `open()`'s: `report --log` said only
    "cannot read: Input/output error", `export` blamed its --out file, `replay --log` said
    "cannot read log None". The one rule for the readers of files read whole."""
    if exc.filename is None:
        exc.filename = os.fspath(path)
    return exc


class NamedReads(io.FileIO):
    """A file open for reading (the descriptor `open_whole` gave) whose failed reads name it
    (`named`): what a `BufferedReader` over it raises says which file failed."""

    def __init__(self, fd: int, path: str | os.PathLike[str]) -> None:
        super().__init__(fd, "rb")
        self._path = path

    def readinto(self, buffer: Any) -> int | None:
        try:
            return super().readinto(buffer)
        except OSError as exc:
            raise named(exc, self._path) from None

    def readall(self) -> bytes:
        try:
            return super().readall()
        except OSError as exc:
            raise named(exc, self._path) from None


def path_problem(text: str) -> str | None:
    """Why `text` can name no file on this system (empty, too long, a name in it too long),
    or None. The one rule for path flags (`argtypes.path`) and paths from elsewhere
    (`--source replay:FILE`, `$XDG_CONFIG_HOME`): a path that fails it can never be opened."""
    if not text:
        return "an empty path names no file"
    raw = os.fsencode(text)
    if len(raw) >= PATH_MAX:
        return f"a path of {len(raw)} bytes is longer than the system takes ({PATH_MAX - 1})"
    longest = max(len(part) for part in raw.split(b"/"))
    if longest > NAME_MAX:
        return (f"a name of {longest} bytes in the path is longer than the system takes "
                f"({NAME_MAX})")
    return None

