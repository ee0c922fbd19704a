"""StopSignals: SIGINT, SIGTERM and SIGHUP as one request to stop cleanly, in every command.

Who calls it: `gapwatch record`, `gapwatch replay --headless`, and `gapwatch.ui.start_and_show`
around the dashboard (inside its event loop the app handles them itself, see `GapwatchApp`).
A stop signal asks for a stop: the command's wait ends, the runtime stops, the recording is closed
whole (gzip trailer included), the summary is printed where stderr still exists. Nothing is
interrupted mid-write (no KeyboardInterrupt from inside a sink), and further signals while
stopping change nothing: stopping is bounded (every thread is joined with a timeout). Nor do
they after the handlers are given back (`restore`): the stop is then under way in
`gapwatch.base.quit_early` too, and the process ignores them from the command's end to its exit.

SIGHUP is a stop signal because closing a tmux pane or an ssh session sends it; Python's default
would end the process at once, leaving a gzip recording without its trailer.
"""

from __future__ import annotations

import signal
import threading
import time
from types import FrameType, TracebackType
from typing import Any

from gapwatch.base.quit_early import stop_under_way

STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: Each stop signal by its number (the handler is given a number; `signal.Signals(n)` is a call).
_BY_NUMBER: dict[int, signal.Signals] = {int(s): s for s in STOP_SIGNALS}


#: How often `StopSignals.wait` looks for a stop: the most a stop waits to be seen.
POLL_S = 0.05


class StopSignals:
    """While installed, a stop signal asks for a stop: `requested()` says so, `wait` ends.

    The handler only sets plain attributes. It runs in the main thread between two bytecodes,
    maybe inside a wait that holds a lock: it set a `threading.Event`, whose lock is a plain
    one, so a signal landing inside `Event.wait`'s locked stretch deadlocked `record` for good
    (a storm of signals hung it 1 time in 16 on a loaded box), and handlers nested in handlers
    while a storm outran them ended in RecursionError, exit 1 (8 of 120). Whoever waits polls
    instead (`wait`, every `POLL_S`)."""

    def __init__(self) -> None:
        #: The first stop signal received, if any.
        self.received: signal.Signals | None = None
        self._asked = False
        self._old: dict[signal.Signals, Any] = {}

    def requested(self) -> bool:
        """Whether a stop was asked for (a signal, or `note`)."""
        return self._asked

    def wait(self, timeout_s: float) -> bool:
        """Up to `timeout_s` for a stop to be asked for; whether one was. Polls (see the class
        docstring): a signal does not cut `time.sleep` short (PEP 475)."""
        end = time.monotonic() + timeout_s
        while not self._asked:
            left = end - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(left, POLL_S))
        return True

    def install(self) -> None:
        """Take the stop signals (again: an asyncio loop resets them when it closes). Does
        nothing outside the main thread, where Python cannot set handlers."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in STOP_SIGNALS:
            old = signal.signal(sig, self._handle)
            self._old.setdefault(sig, old)

    def restore(self) -> None:
        """Give the signals back their handlers from before `install`. After a stop signal,
        `gapwatch.base.quit_early` is told a stop is under way: one more in a storm of them
        is absorbed there, not a second stop that cuts the summary short."""
        if self._old and self.received is not None:
            stop_under_way(self.received)
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    def note(self, sig: signal.Signals) -> None:
        """Record a stop signal received by someone else's handler (the dashboard's event
        loop), as if it had come here."""
        if self.received is None:
            self.received = sig
        self._asked = True

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        # Plain attributes and a dict lookup only: no lock, no call (see the class docstring).
        if self.received is None:
            self.received = _BY_NUMBER[signum]  # installed for these only
        self._asked = True

    def __enter__(self) -> StopSignals:
        self.install()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.restore()
