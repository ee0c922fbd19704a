"""Console: the one writer of gapwatch's live lines to stderr, which survives stderr going away,
and never lets the text it writes command the terminal.

Who calls it: the commands (`record`'s gap, state and notice lines, from the sampler and tailer
threads; start and summary lines; the dashboard commands' closing line). Every live line goes
through `say`, so that a closed pipe (`gapwatch record ... 2>&1 | head -1`), a terminal that hung
up (a closed tmux pane), or a stderr closed at start (`2>&-`) never stops monitoring: the first
failed write marks stderr as gone, later lines are counted and dropped, and the caller carries
on. (Python ignores SIGPIPE, so a closed pipe is an EPIPE here, not a signal.)

Lines quote outside text (a copy-trace NOTE, a log path, a problem in a file): each line is
shown through `fmt.visible`, so an escape in it is written out (`\x1b]0;title\x07`), never
obeyed (`record` used to pass OSC sequences, window titles and OSC 52 clipboard writes, to the
terminal).
"""

from __future__ import annotations

import io
import os
import sys
import threading
from typing import Any, TextIO

from gapwatch.core import fmt


class Console:
    """Writes whole lines to a text stream (stderr by default); never raises for the stream."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        #: True once a write failed for good (EPIPE, EIO, closed): nothing more is attempted.
        self.gone = False
        #: Lines that could not be written.
        self.dropped_lines = 0
        #: Whether a transient line (`show`) is on the screen, to be cleared before the next.
        self._shown = False

    def _target(self) -> TextIO | None:
        # Looked up at each write: tests (and embedders) swap sys.stderr.
        return self._stream if self._stream is not None else sys.stderr

    def say(self, *lines: str) -> bool:
        """Write each of `lines` and a newline, flushed; False when it could not be written.
        Each is one line: a newline inside one is written out (`\\x0a`) like any control, never
        obeyed. A notice quoting a recording, a log or a copy-trace NOTE that held "\\n" used
        to start a line of its own on stderr (a forged `gapwatch record: stopped; ...`); a
        message gapwatch itself writes over several lines gives them one by one."""
        with self._lock:
            if self.gone:
                self.dropped_lines += 1
                return False
            stream = self._target()
            if stream is None:  # Python sets sys.stderr to None when fd 2 was closed at start
                self._lose()
                return False
            try:
                stream.write(self._unshow() + "".join(fmt.visible(line) + "\n" for line in lines))
                stream.flush()
            except BlockingIOError:  # a non-blocking stderr that is full: this line only
                self.dropped_lines += 1
                return False
            except (OSError, ValueError):  # EPIPE, EIO (hung-up tty), closed file
                self._lose()
                return False
            return True

    def is_terminal(self) -> bool:
        """Whether the stream is a terminal that can show a transient line: not a file or a
        pipe, nor a terminal that says it is dumb (TERM=dumb: Emacs's shell buffers print the
        erase sequence as text)."""
        stream = self._target()
        if os.environ.get("TERM") == "dumb":
            return False
        try:
            return bool(stream is not None and not self.gone and stream.isatty())
        except (OSError, ValueError):  # a closed stream
            return False

    def show(self, text: str) -> None:
        """`text` as a transient line (a long command's progress: `gapwatch.offline.progress`),
        written over the one before it, cut to the terminal's width (`fmt.fit`: in cells, with
        a "…") and never ended: the next
        `say` or `erase` clears it first. Only for a terminal (the caller asks `is_terminal`):
        elsewhere its carriage returns would pile up in a file."""
        with self._lock:
            stream = self._target()
            if self.gone or stream is None:
                return
            width = _width(stream)
            try:
                stream.write("\r" + fmt.fit(fmt.visible(text), width - 1, pad=False) + "\x1b[K")
                stream.flush()
                self._shown = True
            except BlockingIOError:  # full: the next progress line will say it
                pass
            except (OSError, ValueError):
                self._lose()

    def erase(self) -> None:
        """Clear the transient line, if one is shown (the command's output comes next)."""
        with self._lock:
            stream = self._target()
            if not self._shown or self.gone or stream is None:
                return
            try:
                stream.write(self._unshow())
                stream.flush()
            except BlockingIOError:
                pass
            except (OSError, ValueError):
                self._lose()

    def _unshow(self) -> str:
        """What clears the transient line (nothing when none is shown)."""
        if not self._shown:
            return ""
        self._shown = False
        return "\r\x1b[K"

    def _lose(self) -> None:
        self.gone = True
        self.dropped_lines += 1
        if self._stream is None and sys.stderr is not None:
            # Whatever else writes to stderr later (a warning, the interpreter's flush at exit)
            # must not fail either.
            try:
                sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
            except OSError:
                pass


def _width(stream: TextIO) -> int:
    """The terminal's width in columns (80 when it cannot say: a pseudo-terminal nobody sized,
    as `script` makes one, says 0)."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 80
    return columns if columns > 0 else 80


#: The process's stderr.
STDERR = Console()


def say(*lines: str) -> bool:
    """Write lines to stderr through `STDERR`, one line each (see the module docstring)."""
    return STDERR.say(*lines)


class OutputFailed(Exception):
    """Writing a command's output (standard output) failed: a full disk, a closed pipe, EIO.
    Raised by the commands where a read error would otherwise be blamed on their input;
    `gapwatch.cli` says it in one line and exits 2."""

    def __init__(self, exc: OSError) -> None:
        super().__init__(exc.strerror or str(exc))
        self.error = exc


class StdoutBytes(io.BufferedIOBase):
    """Standard output's bytes (`sys.stdout.buffer`) for a command that writes its output
    there among other files (`export --out -`): a failed write or flush is raised as
    `OutputFailed`, the output's, never taken for a problem of the input it reads. Closing it
    (or losing it) leaves standard output open."""

    def __init__(self) -> None:
        super().__init__()
        self._out = sys.stdout.buffer

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        try:
            return self._out.write(data)
        except OSError as exc:
            raise OutputFailed(exc) from None

    def flush(self) -> None:
        try:
            self._out.flush()
        except OSError as exc:
            raise OutputFailed(exc) from None

    def close(self) -> None:
        # IOBase's close flushes (also when collected): standard output is not ours to close,
        # and a flush that fails there could only be printed as "Exception ignored".
        pass


def reader_gone(exc: BaseException) -> bool:
    """Whether `exc` says the reader of standard output went away (EPIPE: `| head -1` read
    what it wanted and closed the pipe): every command then stops quietly, exit 0."""
    if isinstance(exc, OutputFailed):
        exc = exc.error
    return isinstance(exc, BrokenPipeError)


def stdout_failed(exc: BaseException) -> str | None:
    """The one line for a failed write of standard output (no file name: not a file gapwatch
    opened), or None for anything else. Standard output is then pointed at /dev/null, so that
    Python's own flush at exit fails no more ("Exception ignored ... BrokenPipeError")."""
    if isinstance(exc, OutputFailed):
        exc = exc.error
    if not isinstance(exc, OSError) or exc.filename is not None or exc.errno is None:
        return None
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
    return f"cannot write its output (standard output): {exc.strerror or exc}"
