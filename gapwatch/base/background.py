"""Background: the start/stop/finished life cycle shared by gapwatch's long-lived loops.

Who uses it: `gapwatch.engine.sampler.Sampler`, `gapwatch.engine.replay.ReplayDriver` and
`gapwatch.sources.cuzk_status.StatusPoller`. A subclass writes `_loop()`, checks `stop_event`
(or sleeps on it) so that `stop()` ends it within one period, and may be run synchronously with
`run()` (the simulator and tests do that on a virtual clock). `finished` is set however the
loop ends, so a runtime can wait on it.

On its thread the loop runs under `watch` (`gapwatch.base.watch`): a loop that raises is said,
counted and, when the subclass is `restartable` (its state lives in the object, so running
`_loop` again resumes it), restarted; `died` says whether it ended by dying.
"""

from __future__ import annotations

import threading

from gapwatch.base.watch import UNWATCHED, ThreadWatch


class Background:
    """A loop on its own daemon thread, stoppable, with a `finished` event."""

    thread_name = "gapwatch-loop"
    #: May `_loop` run again after it raised (it resumes from the object's state)?
    restartable = True

    def __init__(self) -> None:
        self.stop_event = threading.Event()
        self.finished = threading.Event()
        #: Hears the loop die on its thread (the runtime gives its own).
        self.watch: ThreadWatch = UNWATCHED
        #: True when the loop ended by raising (and was not, or no longer, restarted).
        self.died = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        name = self.watch.register(self.thread_name)
        self._thread = threading.Thread(target=self._watched, args=(name,), name=name,
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 2.0) -> None:
        self.stop_event.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def running(self) -> bool:
        """Is the loop's thread still running (started, and not yet returned, even when asked
        to stop: `stop` waits a while only)?"""
        return self._thread is not None and self._thread.is_alive()

    def run(self) -> None:
        """Run the loop in the calling thread until it returns or is stopped (exceptions go to
        the caller)."""
        try:
            self._loop()
        finally:
            self.finished.set()

    def _watched(self, name: str) -> None:
        try:
            self.died = not self.watch.run(name, self._loop, restart=self.restartable,
                                           stop=self.stop_event)
        finally:
            self.finished.set()

    def _loop(self) -> None:
        raise NotImplementedError
