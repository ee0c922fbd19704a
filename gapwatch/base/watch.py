"""ThreadWatch: every long-lived thread of gapwatch runs under one, so that none dies unheard.

Who uses it: `Background` (the sampler, the replay driver, the status pollers), the log tailer's
threads, the copy-trace reader, the recorder's writer and the `/metrics` server's selector thread
run their loops through `ThreadWatch.run`. The runtime (`gapwatch.engine.runtime`) gives them
one watch whose `on_death` turns a death into an error notice (stderr for `record`, the
dashboard's toast and the recording), a store counter; `health()` feeds the footer's alert,
the `/metrics` gauges and `record`'s exit status.

A loop that raises is restarted after a pause when its owner says that is safe (its state lives
in its object, not in the dead frame: the sampler's schedule, a tailer's file positions), at
most `max_restarts` times in `restart_window_s`; then it stays dead, said so. A watch nobody
gave a handler to prints the traceback on stderr, as Python does for a thread that dies, so a
thread never dies in silence even outside a runtime.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

ThreadState = Literal["running", "restarting", "dead", "ended"]

#: Called with the thread's name, what killed it, and whether it is being restarted.
DeathHandler = Callable[[str, BaseException, bool], None]


@dataclass(frozen=True, slots=True)
class ThreadHealth:
    """One watched thread, for the footer, `/metrics` and `record`'s closing line."""

    name: str
    state: ThreadState
    #: Times it died (restarts included).
    deaths: int
    #: What killed it last (`repr` of the exception), or None.
    last_error: str | None

    @property
    def alive(self) -> bool:
        return self.state in ("running", "restarting", "ended")


@dataclass(slots=True)
class _Entry:
    state: ThreadState
    deaths: int = 0
    last_error: str | None = None


class ThreadWatch:
    """Runs loops, hears each one that dies, restarts those that may be restarted."""

    def __init__(self, on_death: DeathHandler | None = None, *, max_restarts: int = 3,
                 restart_window_s: float = 600.0, restart_delay_s: float = 1.0) -> None:
        self.on_death = on_death
        self.max_restarts = max_restarts
        self.restart_window_s = restart_window_s
        self.restart_delay_s = restart_delay_s
        self._lock = threading.Lock()
        self._threads: dict[str, _Entry] = {}
        self._death_times: dict[str, deque[float]] = {}

    def register(self, name: str) -> str:
        """Add a thread to the watch under `name` (made unique: `gapwatch-tail-2` for a second
        tailer); returns the name it is known by."""
        with self._lock:
            unique, n = name, 1
            while unique in self._threads:
                n += 1
                unique = f"{name}-{n}"
            self._threads[unique] = _Entry("running")
            return unique

    def start(self, name: str, body: Callable[[], None], *, restart: bool,
              stop: threading.Event | None = None) -> threading.Thread:
        """`run` on a new daemon thread called `name` (made unique, see `register`)."""
        name = self.register(name)
        thread = threading.Thread(target=self.run, args=(name, body),
                                  kwargs={"restart": restart, "stop": stop}, name=name,
                                  daemon=True)
        thread.start()
        return thread

    def run(self, name: str, body: Callable[[], None], *, restart: bool,
            stop: threading.Event | None = None) -> bool:
        """Run `body` in this thread until it returns (True) or dies for good (False). `stop`:
        set when the owner stops it (no restart then, and the pause before one ends early)."""
        with self._lock:
            entry = self._threads.setdefault(name, _Entry("running"))
            entry.state = "running"
        while True:
            try:
                body()
            except Exception as exc:  # noqa: BLE001 - the point: heard, said, maybe restarted
                again = restart and not (stop is not None and stop.is_set()) \
                    and self._may_restart(name)
                with self._lock:
                    entry.deaths += 1
                    entry.last_error = repr(exc)
                    entry.state = "restarting" if again else "dead"
                    deaths = entry.deaths
                self._report(name, exc, again)
                if not again:
                    return False
                pause = self.restart_delay_s * 2 ** min(deaths - 1, 5)
                if stop is not None and stop.wait(pause):
                    with self._lock:
                        entry.state = "ended"
                    return True
                if stop is None:
                    time.sleep(pause)
                with self._lock:
                    entry.state = "running"
                continue
            with self._lock:
                entry.state = "ended"
            return True

    def _may_restart(self, name: str) -> bool:
        now = time.monotonic()
        with self._lock:
            times = self._death_times.setdefault(name, deque())
            while times and now - times[0] > self.restart_window_s:
                times.popleft()
            times.append(now)
            return len(times) <= self.max_restarts

    def _report(self, name: str, exc: BaseException, restarting: bool) -> None:
        if self.on_death is not None:
            try:
                self.on_death(name, exc, restarting)
                return
            except Exception:  # noqa: BLE001 - the handler failing must not hide the death
                pass
        try:
            print(f"gapwatch: thread {name} died ({'restarting' if restarting else 'not restarted'}"
                  "):", file=sys.stderr)
            traceback.print_exception(exc, file=sys.stderr)
        except (OSError, ValueError, AttributeError):  # no stderr left: nothing more to do
            pass

    def health(self) -> list[ThreadHealth]:
        with self._lock:
            return [ThreadHealth(name, e.state, e.deaths, e.last_error)
                    for name, e in self._threads.items()]

    @property
    def deaths(self) -> int:
        with self._lock:
            return sum(e.deaths for e in self._threads.values())


#: The watch of threads that were given none: a death is printed on stderr with its traceback.
UNWATCHED = ThreadWatch()


def thread_label(name: str) -> str:
    """`gapwatch-cuzk-status` -> `cuzk-status`: how a thread is named to the user."""
    return name.removeprefix("gapwatch-")
