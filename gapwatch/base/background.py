"""Background: the start/stop/finished life cycle shared by gapwatch's long-lived loops.

Who uses it: `gapwatch.engine.sampler.Sampler` and `gapwatch.engine.replay.ReplayDriver`. A
subclass writes `_loop()`, checks `stop_event` (or sleeps on it) so that `stop()` ends it within
one period,
and may be run synchronously with `run()` (the simulator and tests do that on a virtual clock).
`finished` is set however the loop ends, so a runtime can wait on it.
"""

from __future__ import annotations

import threading


class Background:
    """A loop on its own daemon thread, stoppable, with a `finished` event."""

    thread_name = "gapwatch-loop"

    def __init__(self) -> None:
        self.stop_event = threading.Event()
        self.finished = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name=self.thread_name, daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 2.0) -> None:
        self.stop_event.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def run(self) -> None:
        """Run the loop in the calling thread until it returns or is stopped."""
        try:
            self._loop()
        finally:
            self.finished.set()

    def _loop(self) -> None:
        raise NotImplementedError
