"""StopSignals: SIGINT, SIGTERM and SIGHUP as one request to stop cleanly, in every command.

Who calls it: `gapwatch record`, `gapwatch replay --headless`, and `gapwatch.ui.start_and_show`
around the dashboard (inside its event loop the app handles them itself, see `GapwatchApp`).
A stop signal sets `event`: the command's wait ends, the runtime stops, the recording is closed
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
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

from gapwatch.base.quit_early import stop_under_way

STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopSignals:
    """While installed, a stop signal sets `event` and calls the `on_signal` callbacks."""

    def __init__(self) -> None:
        self.event = threading.Event()
        #: The first stop signal received, if any.
        self.received: signal.Signals | None = None
        self._old: dict[signal.Signals, Any] = {}
        self._callbacks: list[Callable[[signal.Signals], None]] = []

    def on_signal(self, callback: Callable[[signal.Signals], None]) -> None:
        """Also call `callback(signum)` (in the main thread, between two bytecodes: it must
        only set flags or hand over to an event loop thread-safely)."""
        self._callbacks.append(callback)

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
        self.event.set()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        sig = signal.Signals(signum)
        self.note(sig)
        for callback in self._callbacks:
            callback(sig)

    def __enter__(self) -> StopSignals:
        self.install()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.restore()
