"""Wake the log tailer when something changes where its files live, instead of on a fixed poll.

Who calls it: `gapwatch.logs.tail.Tailer` (its file thread waits here between passes). Polling
two quiet logs every 50 ms cost ~0.4 % of a core on the 2-core dev box (a stat, a pread and a
read per file, twenty times a second), about what separates the dashboard from a third of
nvitop's cost. On Linux an inotify instance (through ctypes: the standard library has none)
watches the folder of each followed name, and of the file a symlinked name points to: a write,
truncation, rename, creation or deletion there wakes the tailer at once (no poll period of
latency at all), and a quiet log costs nothing but one pass every `idle_poll_s`.

The tailer's own pass still decides what happened (growth, rotation, copytruncate): a wake is
only "look now". What inotify cannot see is why the idle pass remains: writes from another host
to a network filesystem, a followed folder deleted and made again (its watch ends with it), a
symlink pointed at a file in another folder after the start. Where inotify is unavailable (not
Linux, no watches left, a folder that cannot be watched) or a followed name is a FIFO or device
(written without touching a folder), `active` is False and the tailer polls every `poll_ms` as
before.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import stat
import sys
from typing import Final

#: inotify_init1 flags (linux/inotify.h): non-blocking, closed on exec.
_IN_NONBLOCK: Final = 0o4000
_IN_CLOEXEC: Final = 0o2000000
#: What a folder watch reports for the files in it (and the folder itself going away).
_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x002, 0x004, 0x008
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x040, 0x080, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF = 0x400, 0x800
_MASK: Final = (_IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO
                | _IN_CREATE | _IN_DELETE | _IN_DELETE_SELF | _IN_MOVE_SELF)


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


def folders_to_watch(paths: list[str]) -> list[str] | None:
    """The folders whose changes concern `paths`: each name's folder and, for a symlink, its
    target's. None when a name is a FIFO, socket or device (its writes touch no folder)."""
    folders: list[str] = []
    for path in paths:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = None  # not there yet: its folder says when it appears
        if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            return None
        for name in (path, os.path.realpath(path)):
            folder = os.path.dirname(os.path.abspath(name))
            if folder not in folders:
                folders.append(folder)
    return folders


class FolderWake:
    """Blocks until a followed folder changes, `interrupt()` is called, or a timeout."""

    def __init__(self, paths: list[str]) -> None:
        self._fd: int | None = None
        #: Written by `interrupt()` so that `stop()` need not wait out an idle pass.
        self._pipe_r, self._pipe_w = os.pipe()
        os.set_blocking(self._pipe_r, False)
        os.set_blocking(self._pipe_w, False)
        folders = folders_to_watch(paths)
        libc = _libc()
        if folders is None or libc is None:
            return
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return
        for folder in folders:
            if libc.inotify_add_watch(fd, os.fsencode(folder), _MASK) < 0:
                os.close(fd)  # ENOENT, EACCES, ENOSPC (no watches left): poll instead
                return
        self._fd = fd

    @property
    def active(self) -> bool:
        """Do changes wake `wait` (False: the caller polls on its own clock)?"""
        return self._fd is not None

    def wait(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for a change; True when one (or `interrupt`) woke it."""
        fds = [self._pipe_r] if self._fd is None else [self._fd, self._pipe_r]
        try:
            ready, _, _ = select.select(fds, [], [], timeout_s)
        except (OSError, ValueError):
            return False
        for fd in ready:
            self._drain(fd)
        return bool(ready)

    def interrupt(self) -> None:
        """Wake a `wait` now (from another thread)."""
        try:
            os.write(self._pipe_w, b"x")
        except OSError:
            pass  # the pipe is full: a wake is already pending

    def close(self) -> None:
        for fd in (self._fd, self._pipe_r, self._pipe_w):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._fd = None

    @staticmethod
    def _drain(fd: int) -> None:
        """Read the events away: which file changed does not matter, the pass looks at all."""
        try:
            while os.read(fd, 1 << 16):
                pass
        except OSError:
            pass  # EAGAIN: drained
