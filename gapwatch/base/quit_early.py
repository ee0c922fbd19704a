"""Stop signals before a command takes them: a clean exit 0, never a traceback.

Who calls it: `gapwatch.__main__.run` (the `gapwatch` script and `python -m gapwatch`), first
thing, before the ~0.3 s of imports. Python's own SIGINT handler raises KeyboardInterrupt
wherever the main thread is (an import, a JSON decoder), which printed a traceback and exited
130; SIGTERM and SIGHUP killed the process outright (143, 129), an export's hidden temporary
left behind.

Here a stop signal (SIGINT, SIGTERM, SIGHUP) raises `StopRequested`, a `SystemExit` of status 0:
it unwinds the stack like any exit, so every `finally` and `except BaseException` runs (an
export removes its temporary) and Python prints no traceback for it. Further stop signals are
ignored from then on: the clean-up cannot itself be interrupted. Commands that stop
gracefully instead (`record`, `replay --headless`, the dashboard) install their own handlers
over these (`gapwatch.engine.stop_signals`) while they run.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

#: The signals that ask gapwatch to stop (the same three as `engine.stop_signals`).
STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopRequested(SystemExit):
    """A stop signal arrived: exit with status 0. `signal` says which."""

    def __init__(self, sig: signal.Signals) -> None:
        super().__init__(0)
        self.signal = sig


def _stop(signum: int, frame: FrameType | None) -> None:
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    raise StopRequested(signal.Signals(signum))


def quit_on_stop_signals() -> None:
    """From now on a stop signal ends the process with status 0 (main thread only)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, _stop)


@contextmanager
def stop_signals_deferred() -> Iterator[None]:
    """Hold stop signals back (they wait, blocked) while the body runs: a file created and
    handed to the caller's clean-up in one step cannot be left behind by a signal between the
    two. Main thread only; elsewhere it holds nothing back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
