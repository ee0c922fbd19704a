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

import os
import sys
import threading
from typing import TextIO

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
                stream.write("".join(fmt.visible(line) + "\n" for line in lines))
                stream.flush()
            except BlockingIOError:  # a non-blocking stderr that is full: this line only
                self.dropped_lines += 1
                return False
            except (OSError, ValueError):  # EPIPE, EIO (hung-up tty), closed file
                self._lose()
                return False
            return True

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
