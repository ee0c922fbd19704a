"""`tail -F` for prover logs: follow file NAMES (and stdin), hand complete lines to a callback.

Who calls it: `gapwatch.logs.follow.LogFollower` (live) and `gapwatch.commands.parse` (the
`LineSplitter`, for whole files). No parsing here and no UI imports.

Following a name, looked at when its folder changes (`gapwatch.logs.wake`: inotify on Linux; at
most once per `poll_ms`, and every `idle_poll_ms` when nothing changed), or polled every
`poll_ms` (50 ms default: worst-case latency one period) where changes cannot be heard:
- a file that does not exist yet is waited for, then read from its start;
- at start an existing file is read from its end, unless `from_start`;
- rotation by rename or delete + re-create (the name points to a new inode): the old file is
  drained to its end, then the new one is read from its start;
- copytruncate (same inode, cut to 0 and written again): read again from its start (past a
  NUL hole where the filesystem tells). Seen as a size below the read position, or, when the
  writer has already written past that position again, as other bytes just before it than the
  last ones read there;
- deletion: drain, close, wait for the name to come back;
- a FIFO or character device: read as a stream (non-blocking, never seeked; a writer closing
  ends its last line); a directory: said once, waited on.
Every open and read is non-blocking, so no name can hold up the other files or `stop()`.

What cannot be seen (docs/logs.md, bench/rotation_storm.py measures it): lines written less
than one poll before a copytruncate are only in the copy; a file rotated away within one poll
of its creation is never opened; a copytruncate refilled, within one poll, with the same bytes
just before the old position as before (a log of identical, untimed lines) reads as growth.
Bytes -> lines (`LineSplitter`): a partial line is kept until its newline (or until the file is
replaced, when it is flushed as is), NUL bytes are dropped (copytruncate leaves NUL padding when
the writer's offset runs ahead of the truncated file), a line longer than `max_line_bytes` is cut
there (rest discarded up to the newline, counted), bytes are decoded as UTF-8 with replacement.
CR and ANSI colours are left to the parser.

Threads: one for all files (woken or polling), one for stdin (blocking read through select, so
`stop()` returns within a poll period). The callback runs on those threads.
"""

from __future__ import annotations

import os
import select
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from gapwatch.base.clock import Clock, SystemClock
from gapwatch.base.input_files import file_kind
from gapwatch.base.watch import UNWATCHED, ThreadWatch
from gapwatch.config import LogsConfig
from gapwatch.core.models import NoticeLevel
from gapwatch.logs.wake import FolderWake

#: on_line(source, text, arrival_mono_ns, arrival_wall_s)
LineCallback = Callable[[str, str, int, float], None]
#: on_notice(level, message)
NoticeCallback = Callable[[NoticeLevel, str], None]

#: The constructors' defaults are the `[logs]` config's (one source: `LogsConfig`).
_DEFAULTS = LogsConfig()
_READ_CHUNK = 1 << 16
#: Bytes read from one file per poll, so that one busy file cannot starve the others.
_MAX_READ_PER_POLL = 8 << 20
#: Bytes kept from just before the read position to recognise a refilled copytruncate.
_TAIL_BYTES = 256


class LineSplitter:
    """Bytes in, complete decoded lines out; the partial tail is kept between feeds."""

    def __init__(self, max_line_bytes: int = _DEFAULTS.max_line_bytes) -> None:
        self.max_line_bytes = max_line_bytes
        self._buf = bytearray()
        self._discarding = False  # inside the rest of an over-long line
        self.cut_lines = 0
        self.nul_bytes = 0

    @property
    def pending_bytes(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[str]:
        if b"\0" in data:
            before = len(data)
            data = data.translate(None, b"\0")  # replace() held the GIL 19x as long
            self.nul_bytes += before - len(data)
        out: list[str] = []
        start = 0
        n = len(data)
        limit = self.max_line_bytes
        while start < n:
            nl = data.find(b"\n", start)
            if nl < 0:
                if not self._discarding:
                    self._buf += data[start:]
                    if len(self._buf) > limit:
                        out.append(self._cut())
                break
            if self._discarding:
                self._discarding = False
            else:
                if self._buf:
                    self._buf += data[start:nl]
                    line = bytes(self._buf)
                    self._buf.clear()
                else:
                    line = data[start:nl]
                if len(line) > limit:
                    self.cut_lines += 1
                    line = line[:limit]
                out.append(line.decode("utf-8", "replace"))
            start = nl + 1
        return out

    def _cut(self) -> str:
        self.cut_lines += 1
        line = bytes(self._buf[: self.max_line_bytes])
        self._buf.clear()
        self._discarding = True
        return line.decode("utf-8", "replace")

    def flush(self) -> list[str]:
        """The unterminated tail as a line (end of a file that is being replaced or closed)."""
        self._discarding = False
        if not self._buf:
            return []
        line = bytes(self._buf).decode("utf-8", "replace")
        self._buf.clear()
        return [line]


def nul_words(path: str, nul_bytes: int, stream: bool) -> str:
    """The warning for the first NUL bytes dropped from a followed log (said once a file)."""
    why = ("a device or writer of zeros: is it /dev/zero?" if stream else
           "a writer without O_APPEND after a copytruncate leaves a hole of them")
    return (f"log {path}: {nul_bytes} NUL bytes dropped, no line made of them ({why}); "
            "further ones only counted (nul_bytes)")


#: State of a followed file before the first look, and after a first look found no file.
WAITING = "waiting for file"
MISSING = "missing: no such file (waiting for it)"
#: State of a followed file whose name cannot be looked at (the file as opened is read on).
NAME_UNREADABLE = "name unreadable, the file as opened read on"


@dataclass(slots=True)
class SourceStatus:
    path: str
    state: str
    lines: int = 0
    bytes: int = 0
    cut_lines: int = 0
    nul_bytes: int = 0
    rotations: int = 0
    truncations: int = 0
    errors: int = 0


class _FileFollower:
    """The state of one followed name. Driven by `poll()` from the tailer thread.

    Every open is non-blocking (a FIFO without a writer would otherwise block `open()` for
    as long as it has none, deaf to SIGINT). What the name points to decides the mode:
    a regular file is followed by offset (`_poll_file`); a FIFO, character device or other
    special file is read as a stream, never seeked (`_poll_stream`); a directory is said once
    and waited on, in case a file takes its place.
    """

    def __init__(self, path: str, from_start: bool, max_line_bytes: int) -> None:
        self.path = path
        self.status = SourceStatus(path, WAITING)
        self.splitter = LineSplitter(max_line_bytes)
        self._fd: int | None = None
        self._ident: tuple[int, int] | None = None
        self._stream = False
        self._pos = 0
        #: The last bytes read before `_pos` (at most `_TAIL_BYTES`): a copytruncate that the
        #: writer refills past `_pos` within one poll shows as different bytes there.
        self._tail = b""
        self._said_directory = False
        self._said_nuls = False
        # Only a file that exists when following starts is read from its end.
        self._first_open_at_end = not from_start
        #: Read from its start (`from_start`), a file that existed when following started
        #: holds lines written before: its size then. Reading below it, the lines' arrival
        #: says when they were read, not written (`read_backlog`, said for the lines of each
        #: read); None once read past it, or when there was none.
        self._backlog_end: int | None = None
        self._first_open = True
        self.read_backlog = False
        #: Its last read stopped at `_MAX_READ_PER_POLL`: more may be written than was read.
        self.cut = False

    def close(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None

    def _open(self, notice: NoticeCallback, at_end: bool) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            if self.status.state == WAITING:
                # Said once, at start, like tail -F's "cannot open 'x' for reading": a mistyped
                # path must not look like a prover that is merely quiet.
                self.status.state = MISSING
                notice("warning", f"log {self.path}: cannot open for reading: No such file or "
                                  "directory; following it once it appears")
            return
        except OSError as exc:
            if self.status.state != f"unreadable: {exc.strerror}":
                self.status.errors += 1
                notice("warning", f"log {self.path}: cannot open: {exc.strerror}")
            self.status.state = f"unreadable: {exc.strerror}"
            return
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            os.close(fd)
            if not self._said_directory:
                self._said_directory = True
                self.status.errors += 1
                notice("warning", f"log {self.path}: is a directory, not a log file; give the "
                                  "file in it (waiting in case a file takes its place)")
            self.status.state = "is a directory"
            return
        if self._said_directory:
            # Said as awaited ("waiting in case a file takes its place"): its coming is said
            # too (a FIFO or file that took a folder's place was followed without a word).
            notice("info", f"log {self.path}: {file_kind(st.st_mode)} took the directory's "
                           "place; following it")
        self._said_directory = False
        self._fd = fd
        self._first_open = False  # a file opened later (re-created, rotated) holds new lines
        self._ident = (st.st_dev, st.st_ino)
        self._stream = not stat.S_ISREG(st.st_mode)
        if self._stream:
            # A FIFO or device has no position and no history: read what comes.
            self._pos = 0
            self._tail = b""
            self.status.state = "following (stream)"
            return
        self._pos = st.st_size if at_end else 0
        self._tail = b""
        if at_end and self._pos:
            os.lseek(fd, self._pos, os.SEEK_SET)
            self._tail = os.pread(fd, _TAIL_BYTES, max(0, self._pos - _TAIL_BYTES))
        self.status.state = "following"

    def _read(self) -> list[str]:
        assert self._fd is not None
        lines: list[str] = []
        total = 0
        end = self._backlog_end
        self.read_backlog = end is not None and self._pos < end
        # A read in the backlog stops at its end: the lines after it were written after
        # following began (read in the same batch, they were taken for the backlog's).
        limit = min(_MAX_READ_PER_POLL, end - self._pos) if self.read_backlog and end else \
            _MAX_READ_PER_POLL
        while total < limit:
            try:
                data = os.read(self._fd, min(_READ_CHUNK, limit - total))
            except BlockingIOError:
                break  # a stream with nothing to read now
            except OSError as exc:
                self.status.errors += 1
                self.status.state = f"unreadable: {exc.strerror}"
                break
            if not data:
                if self._stream:
                    # The writer closed its end: its last line is complete. The FIFO stays
                    # open for the next writer.
                    lines.extend(self.splitter.flush())
                break
            total += len(data)
            self._pos += len(data)
            if not self._stream:
                tail = data[-_TAIL_BYTES:]
                if len(tail) < _TAIL_BYTES:
                    tail = (self._tail + tail)[-_TAIL_BYTES:]
                self._tail = tail
            lines.extend(self.splitter.feed(data))
        self.status.bytes += total
        self.cut = total >= _MAX_READ_PER_POLL
        if end is not None and self._pos >= end:
            self._backlog_end = None  # read past the lines written before following began
        return lines

    def prime(self, notice: NoticeCallback) -> None:
        """Open an existing file at its end now, on the caller's thread: "start at the end"
        then means the end when following started, not whenever the thread first looks (a
        line written in between would otherwise be skipped as history)."""
        if self._fd is None and self._first_open_at_end:
            self._first_open_at_end = False
            self._open(notice, at_end=True)

    def poll(self, notice: NoticeCallback) -> list[str]:
        """Read what is new; handle appearance, rotation, truncation, deletion. The first NUL
        bytes dropped are said (once: counted after that, `nul_bytes`)."""
        self.cut = False
        lines = self._poll(notice)
        if self.splitter.nul_bytes and not self._said_nuls:
            self._said_nuls = True
            notice("warning", nul_words(self.path, self.splitter.nul_bytes, self._stream))
        return lines

    @property
    def in_backlog(self) -> bool:
        """Whether lines it held when following began are still to be read (closed, deleted,
        a read that failed: none will be soon, and a file held behind it must not wait)."""
        return (self._fd is not None and self._backlog_end is not None
                and not self.status.state.startswith("unreadable"))

    def hold(self, notice: NoticeCallback) -> None:
        """Open it if it is not open yet, reading nothing (`Tailer`'s `backlogs_after`): its
        backlog is the file as it is now, not as it is once it is read."""
        if self._fd is None:
            self._look_first(notice)

    def _look_first(self, notice: NoticeCallback) -> None:
        """Open it (not open): from its end when following began so, else from its start,
        the file as it is now its backlog the first time."""
        at_end = self._first_open_at_end
        self._first_open_at_end = False
        was_missing = self.status.state == MISSING
        first = self._first_open
        self._open(notice, at_end)
        if self._fd is None:
            return
        if first and not at_end and not was_missing and not self._stream:
            # Read from its start, the file as it was when following began.
            self._backlog_end = os.fstat(self._fd).st_size or None
        if was_missing:
            notice("info", f"log {self.path}: has appeared; following it from its start")
        elif not at_end and not self._stream:
            notice("info", f"log {self.path}: following from its start")

    def _poll(self, notice: NoticeCallback) -> list[str]:
        if self._fd is None:
            self._look_first(notice)
            if self._fd is None:
                return []
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            lines = self._read() + self.splitter.flush()
            self.close()
            self.status.state = "deleted, waiting for file"
            notice("warning", f"log {self.path}: deleted; waiting for it to come back")
            return lines
        except OSError as exc:
            # ELOOP (a link loop put at the name), EACCES (the folder's permission revoked),
            # ENOTDIR: the file as opened still reads; the name, and so a rotation, cannot be
            # seen. Said once (it was only counted: "following", nothing said).
            self.status.errors += 1
            state = f"{NAME_UNREADABLE}: {exc.strerror}"
            if self.status.state != state:
                self.status.state = state
                notice("warning", f"log {self.path}: its name cannot be looked at "
                                  f"({exc.strerror}); reading on from the file as opened, a "
                                  "rotation seen once the name can be looked at again")
            return self._read()
        if self.status.state.startswith(NAME_UNREADABLE):
            self.status.state = "following"
            notice("info", f"log {self.path}: its name can be looked at again")
        if (st.st_dev, st.st_ino) != self._ident:
            # Rotated by rename or delete + re-create: what was written to the old file since
            # the last poll is still readable through our descriptor, read to its end first,
            # a poll's read at a time (one read was all it got: a 20 MiB file rotated after
            # the first poll's 8 MiB lost its last 4 MiB, 41,942 lines).
            lines = self._read()
            if self._unread_in_old():
                return lines
            lines += self.splitter.flush()
            old_backlog = self.read_backlog
            self._backlog_end = None  # the new file's lines are new
            self.close()
            self.status.rotations += 1
            notice("info", f"log {self.path}: rotated; following the new file from its start")
            self._open(notice, at_end=False)
            if self._fd is not None:
                if not self._stream:
                    self.status.state = "following (rotated)"
                if not old_backlog:  # one poll's lines are one kind: backlog or not
                    lines.extend(self._read())
            return lines
        lines = self._check_truncated(st, notice) if not self._stream else []
        return lines + self._read()

    def _unread_in_old(self) -> bool:
        """Whether the file as opened (a regular one, rotated away) holds more than was read."""
        if self._fd is None or self._stream:
            return False
        try:
            return os.fstat(self._fd).st_size > self._pos
        except OSError:
            return False

    def _check_truncated(self, st: os.stat_result, notice: NoticeCallback) -> list[str]:
        """Copytruncate: the same file, cut to 0 and written again. Seen as a size below the
        read position or, when the writer already wrote up to or past it again within one
        poll, as other bytes just before it than the ones read there (one small pread per
        poll: size and mtime alone miss a refill to the same size within the mtime's tick)."""
        assert self._fd is not None
        if st.st_size >= self._pos:
            if not self._tail:
                return []
            start = self._pos - len(self._tail)
            try:
                if os.pread(self._fd, len(self._tail), start) == self._tail:
                    return []
            except OSError:
                return []
        self.status.truncations += 1
        self._backlog_end = None  # what is written again is new
        notice("info", f"log {self.path}: truncated; reading again from its start")
        # A line cut by the truncation is complete as far as this file goes.
        lines = self.splitter.flush()
        # A writer without O_APPEND goes on at its old offset: the file is a hole (read as
        # NULs) up to there. Skip the hole where the filesystem says where data starts.
        try:
            self._pos = os.lseek(self._fd, 0, os.SEEK_DATA)
        except OSError:  # ENXIO: no data yet; EINVAL: no SEEK_DATA here
            self._pos = os.lseek(self._fd, 0, os.SEEK_SET)
        self._tail = b""
        self.status.state = "following (truncated)"
        return lines


def _is_regular(fd: int) -> bool:
    """Whether `fd` is a regular file (a shell's `< file`), not a pipe, terminal or socket."""
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    except (OSError, ValueError):
        return False


class Tailer:
    """Follows `paths` ("-" = stdin) and calls `on_line` for every complete line."""

    def __init__(self, paths: list[str], on_line: LineCallback, *,
                 on_backlog: LineCallback | None = None,
                 from_start: bool = _DEFAULTS.from_start,
                 poll_ms: float = _DEFAULTS.poll_ms,
                 idle_poll_ms: float = _DEFAULTS.idle_poll_ms,
                 max_line_bytes: int = _DEFAULTS.max_line_bytes,
                 on_notice: NoticeCallback | None = None, clock: Clock | None = None,
                 stdin_fd: int = 0, backlogs_after: frozenset[str] = frozenset(),
                 on_pass: Callable[[], None] | None = None) -> None:
        """`backlogs_after`: paths whose backlog (`from_start`) is read only once every file
        before it in `paths` has had its own read: cuzk's stderr read apart, whose TIMELINE
        lines each take their engine run's start line among those of the stdout
        (`gapwatch.logs.follow`). Read 8 MiB of each a pass, a day's stdout was still being
        read when the stderr's backlog came, its later runs' start lines not read yet.
        `on_pass`: called after each pass over the files (`backlogs_read` may have changed)
        and after each wait on stdin: the live reader's clock, by which what waits for a line
        that may never come is closed (`gapwatch.logs.follow`)."""
        self.on_line = on_line
        self.on_pass = on_pass
        self._backlogs_after = backlogs_after
        #: Takes the lines a file held when following started from its start (`from_start`):
        #: their arrival says when they were read, not written. None: `on_line` takes them.
        self.on_backlog = on_backlog
        self.on_notice: NoticeCallback = on_notice or (lambda level, message: None)
        self.clock: Clock = clock or SystemClock()
        self.poll_s = poll_ms / 1000.0
        self.idle_poll_s = max(idle_poll_ms, poll_ms) / 1000.0
        #: Wakes the file thread when a followed folder changes (made at `start`).
        self._wake: FolderWake | None = None
        self._files = [_FileFollower(p, from_start, max_line_bytes) for p in paths if p != "-"]
        self._stdin: SourceStatus | None = SourceStatus("-", "following") if "-" in paths else None
        self._stdin_fd = stdin_fd
        self._stdin_splitter = LineSplitter(max_line_bytes)
        #: stdin redirected from a file (`--log - < cuzk.log`): every line of it was written
        #: before it was read, at once; a pipe cannot be told from a live writer.
        self._stdin_is_file = self._stdin is not None and _is_regular(stdin_fd)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        #: Hears a thread of ours die (and restarts it: the files' state lives in the objects).
        self.watch: ThreadWatch = UNWATCHED
        #: The clock (monotonic ns, wall s) when the files' last pass uncut began, and stdin's
        #: last read that took all it held: each line written before it was read (`read_to`).
        self._files_read_to: tuple[int, float] | None = None
        self._stdin_read_to: tuple[int, float] | None = None

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> None:
        for f in self._files:
            f.prime(self.on_notice)
        if self._files:
            self._wake = FolderWake([f.path for f in self._files])
            self._threads.append(self.watch.start("gapwatch-tail", self._run_files,
                                                  restart=True, stop=self._stop))
        if self._stdin is not None:
            self._threads.append(self.watch.start("gapwatch-stdin", self._run_stdin,
                                                  restart=True, stop=self._stop))

    def stop(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        if self._wake is not None:
            self._wake.interrupt()
        for t in self._threads:
            t.join(timeout_s)
        for f in self._files:
            f.close()
        if self._wake is not None and not any(t.is_alive() for t in self._threads):
            self._wake.close()

    @property
    def woken(self) -> bool:
        """Are the files looked at when their folders change (False: polled every `poll_ms`)?"""
        return self._wake is not None and self._wake.active

    def status(self) -> list[SourceStatus]:
        out = []
        for f in self._files:
            f.status.cut_lines = f.splitter.cut_lines
            f.status.nul_bytes = f.splitter.nul_bytes
            out.append(f.status)
        if self._stdin is not None:
            self._stdin.cut_lines = self._stdin_splitter.cut_lines
            self._stdin.nul_bytes = self._stdin_splitter.nul_bytes
            out.append(self._stdin)
        return out

    # ---------------------------------------------------------------- files
    def poll_once(self) -> int:
        """One pass over every file (the thread's loop body; tests call it directly)."""
        began = self._now()
        count = 0
        before_in_backlog = False  # a file before this one has backlog still to read
        for f in self._files:
            held = before_in_backlog and f.path in self._backlogs_after
            try:
                if held:
                    f.hold(self.on_notice)
                    lines = []
                else:
                    lines = f.poll(self.on_notice)
            except Exception as exc:  # noqa: BLE001 - one bad file must not stop the others
                f.status.errors += 1
                f.close()
                f.status.state = f"error: {exc}"
                self.on_notice("error", f"log {f.path}: {exc}")
                continue
            before_in_backlog = before_in_backlog or f.in_backlog
            if lines:
                backlog = f.read_backlog and self.on_backlog is not None
                self._deliver(f.path, f.status, lines, backlog)
                count += len(lines)
        if not any(f.cut for f in self._files):
            self._files_read_to = began
        if self.on_pass is not None:
            self.on_pass()
        return count

    def backlogs_read(self) -> bool:
        """Whether every file's backlog (`from_start`) has been read, as of the last pass."""
        return not any(f.in_backlog for f in self._files)

    def reading_backlog(self) -> bool:
        """Whether lines written before following began are still being read: a file's
        backlog, or stdin redirected from a file not read to its end (all of it is)."""
        stdin = self._stdin
        return not self.backlogs_read() or (
            self._stdin_is_file and stdin is not None and stdin.state == "following")

    def read_to(self) -> tuple[int, float] | None:
        """The clock (monotonic ns, wall s) up to which every line written to what it follows
        has been read and handed on (`on_line`): when the latest pass over the files began
        whose reads were not cut at `_MAX_READ_PER_POLL`, and stdin's latest read that took
        all it held (the earlier of the two). None while lines written before following began
        are read (`reading_backlog`), or before any such pass. Not the time a pass ends: a
        log 8 MiB ahead is read in several passes, each taking seconds to parse, and the lines
        not read yet are no silence (`gapwatch.logs.follow`: the reader's clock)."""
        if self.reading_backlog():
            return None
        times = ([self._files_read_to] if self._files else []) + (
            [self._stdin_read_to] if self._stdin is not None else [])
        known = [t for t in times if t is not None]
        return min(known) if known and len(known) == len(times) else None

    def _now(self) -> tuple[int, float]:
        return self.clock.monotonic_ns(), self.clock.wall_s()

    def _deliver(self, source: str, status: SourceStatus, lines: list[str],
                 backlog: bool = False) -> None:
        mono = self.clock.monotonic_ns()
        wall = self.clock.wall_s()
        status.lines += len(lines)
        take = self.on_backlog if backlog and self.on_backlog is not None else self.on_line
        for line in lines:
            take(source, line, mono, wall)

    def _run_files(self) -> None:
        wake = self._wake
        while not self._stop.is_set():
            started = time.monotonic()
            self.poll_once()
            if wake is None or not wake.active:
                if self._stop.wait(self.poll_s):
                    break
                continue
            wake.wait(self.idle_poll_s)
            # A stream of writes wakes it at once each time: still at most one pass per
            # `poll_s`, as when polling (a pass reads all that came meanwhile).
            rest = self.poll_s - (time.monotonic() - started)
            if rest > 0 and self._stop.wait(rest):
                break

    # ---------------------------------------------------------------- stdin
    def read_stdin_once(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for stdin data and deliver its lines; False at EOF."""
        assert self._stdin is not None
        try:
            ready, _, _ = select.select([self._stdin_fd], [], [], timeout_s)
        except (OSError, ValueError) as exc:
            self._stdin.state = f"error: {exc}"
            return False
        looked = self._now()
        if not ready:
            self._stdin_read_to = looked
            return True
        try:
            data = os.read(self._stdin_fd, _READ_CHUNK)
        except OSError as exc:
            self._stdin.state = f"error: {exc.strerror}"
            return False
        if len(data) < _READ_CHUNK:
            self._stdin_read_to = looked  # all it held (a full chunk: more may be waiting)
        if not data:
            lines = self._stdin_splitter.flush()
            if lines:
                self._deliver("-", self._stdin, lines, self._stdin_is_file)
            self._stdin.state = "closed (end of input)"
            self.on_notice("info", "log stdin: end of input")
            return False
        self._stdin.bytes += len(data)
        said = self._stdin_splitter.nul_bytes
        lines = self._stdin_splitter.feed(data)
        if not said and self._stdin_splitter.nul_bytes:
            self.on_notice("warning", nul_words("stdin", self._stdin_splitter.nul_bytes, True))
        if lines:
            self._deliver("-", self._stdin, lines, self._stdin_is_file)
        return True

    def _run_stdin(self) -> None:
        while not self._stop.is_set():
            more = self.read_stdin_once(self.poll_s)
            if self.on_pass is not None:
                self.on_pass()  # the clock of `journalctl -f | gapwatch record --log -` too
            if not more:
                break
