"""Stop signals before a command takes them: a clean exit 0, never a traceback.

Who calls it: `gapwatch.__main__.run` (the `gapwatch` script and `python -m gapwatch`), first
thing, before the ~0.3 s of imports. Python's own SIGINT handler raises KeyboardInterrupt
wherever the main thread is (an import, a JSON decoder), which printed a traceback and exited
130; SIGTERM and SIGHUP killed the process outright (143, 129), an export's hidden temporary
left behind.

Here a stop signal (SIGINT, SIGTERM, SIGHUP) raises `StopRequested`, a `SystemExit` of status 0:
it unwinds the stack like any exit, so every `finally` and `except BaseException` runs (an
export removes its temporary) and Python prints no traceback for it. Further stop signals are
ignored for 2 s: the clean-up is not itself interrupted. Raised where Python cannot
raise (a weakref callback of the import machinery), it is not printed and the signal comes
again a moment later (`_unraisable`). Commands that stop
gracefully instead (`record`, `replay --headless`, the dashboard) install their own handlers
over these (`gapwatch.engine.stop_signals`) while they run.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
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


class _Pending:
    """The stop under way: the signal that asked for it, and whether its exception was
    swallowed (raised inside a weakref callback or a `__del__`, where Python only prints it)."""

    signal: signal.Signals | None = None
    swallowed = False
    since_mono = 0.0


#: A stop signal this long after the first raises again (code that caught the first and went on
#: must still be stoppable); sooner, it is ignored while the clean-up runs.
_AGAIN_AFTER_S = 2.0


def _stop(signum: int, frame: FrameType | None) -> None:
    now = time.monotonic()
    if (_Pending.signal is not None and not _Pending.swallowed
            and now - _Pending.since_mono < _AGAIN_AFTER_S):
        return  # already stopping: the clean-up is not interrupted again
    if _Pending.signal is None:
        _Pending.signal, _Pending.since_mono = signal.Signals(signum), now
    _Pending.swallowed = False
    raise StopRequested(_Pending.signal)


def _unraisable(args: sys.UnraisableHookArgs) -> None:
    """A `StopRequested` raised where Python cannot raise (the import machinery's weakref
    callback: a stop signal during the imports printed "Exception ignored in ..." with a
    traceback, and the command ran on) is not printed: the signal is sent again a moment
    later, to land in a frame that can raise."""
    if not isinstance(args.exc_value, StopRequested):
        _previous_hook(args)
        return
    _Pending.swallowed = True
    again = threading.Timer(0.01, os.kill, (os.getpid(), args.exc_value.signal))
    again.daemon = True
    again.start()


_previous_hook = sys.unraisablehook


def quit_on_stop_signals() -> None:
    """From now on a stop signal ends the process with status 0 (main thread only)."""
    sys.unraisablehook = _unraisable
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
