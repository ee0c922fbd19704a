"""The Textual dashboard (the only package that imports textual, plotext and textual_plotext).

Who calls it: `gapwatch watch`, `demo` and `replay` call `start_and_show(runtime)`. Importing
this package itself imports nothing heavy (Textual is imported when the dashboard starts).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from gapwatch.engine.console import say
from gapwatch.engine.status import RuntimeStatus
from gapwatch.engine.stop_signals import StopSignals

if TYPE_CHECKING:
    from gapwatch.ui.app import DashboardRuntime, GapwatchApp

    class _Startable(DashboardRuntime, Protocol):
        """A runtime the dashboard can show, and start and stop around it."""

        def start(self) -> None: ...

        def stop(self) -> None: ...


def dashboard_app(runtime: DashboardRuntime,
                  stop_signals: StopSignals | None = None) -> GapwatchApp:
    """The app as the dashboard commands run it (the benchmarks' dashboards are built here
    too, never the tests'): everything built so far, Textual, rich and the runtime included
    (~55,000 objects), lives as long as the process, so it is put out of the cyclic garbage
    collector's reach (`gc.freeze`). The collector's full passes, which come every minute or
    so as the store's rings turn over, then walk the dashboard's own objects alone: ~8 ms
    each instead of ~60 ms on the dev VM. Only cycles are the collector's: frozen objects
    are still freed by reference counting.

    The youngest generation is collected after `YOUNG_GC_THRESHOLD` more allocations than
    frees instead of Python's 700: a second's redraw allocates thousands of short-lived
    objects (strips, segments, rows), most freed by reference counting before a collection
    would find them. On the dev VM over the simulator: 1.4 young collections a second
    (0.44 ms of CPU) and a middle one every 7 s (0.2 ms a second) fell to one young
    collection every 5 s (~1.2 ms each, 0.2-0.25 ms a second)."""
    from gapwatch.ui.app import GapwatchApp

    app = GapwatchApp(runtime, stop_signals=stop_signals)
    gc.freeze()
    _young, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_GC_THRESHOLD, middle, old)
    return app


#: Net allocations that start a collection of the youngest generation in the dashboard's
#: process (`dashboard_app`; Python's default is 700).
YOUNG_GC_THRESHOLD = 5000


def start_and_show(runtime: _Startable, command: str = "watch") -> int:
    """Start the runtime, run the dashboard over it, stop the runtime however the UI ends, and
    say on stderr how the recording (if any) ended.

    The runtime is started before the App so that sampling never waits on the UI; it is stopped
    in `finally` so a crash in the UI still settles the detector and closes the recording. Stop
    signals are taken from before the start to the end of the teardown: the app's event loop
    handles them while it runs (it exits cleanly, restoring the terminal), `StopSignals` before
    and after (asyncio gives them back to their defaults when its loop closes, and a second
    SIGTERM must not cut the recording's close short).
    """
    stop = StopSignals()
    stop.install()
    replay = getattr(runtime, "replay", None)
    if replay is not None:
        # The dashboard can seek back from the end of the file (←, [, Home).
        replay.interactive = True
    snapshots: list[Path] = []
    try:
        runtime.start()
        died = False
        try:
            app = dashboard_app(runtime, stop)
            snapshots = app.snapshots  # the same list, filled as they are written
            result = int(app.run() or 0)
        finally:
            stop.install()
            runtime.stop()
            died = _say_how_it_ended(command, runtime.status(), stop)
            # After the terminal is restored: the folders left behind (`snapshot.dir` is the
            # current folder by default; the demo left one there, and nothing said so).
            if (line := snapshots_line(command, snapshots)) is not None:
                say(line)
        return 1 if died and result == 0 else result
    finally:
        stop.restore()


#: Snapshot folders named in the closing line; past them, their count and folder.
SNAPSHOTS_NAMED = 3


def snapshots_line(command: str, paths: Sequence[Path]) -> str | None:
    """The closing line naming the snapshot folders the dashboard wrote (None: none), each
    as it would be typed from here (relative below the current folder, else whole)."""
    if not paths:
        return None
    names = [_as_typed(p) for p in paths]
    shown = ", ".join(names[:SNAPSHOTS_NAMED])
    more = (f" and {len(names) - SNAPSHOTS_NAMED} more in {_as_typed(paths[-1].parent)}"
            if len(names) > SNAPSHOTS_NAMED else "")
    what = "snapshot folder" if len(names) == 1 else f"{len(names)} snapshot folders"
    return f"gapwatch {command}: wrote {what}: {shown}{more}"


def _as_typed(path: Path) -> str:
    whole = os.path.abspath(path)
    here = os.getcwd()
    if whole == here or not whole.startswith(here + os.sep):
        return whole
    return "./" + os.path.relpath(whole, here)


def _say_how_it_ended(command: str, status: RuntimeStatus, stop: StopSignals) -> bool:
    """The closing lines; True when a thread of gapwatch's died (the exit status says so)."""
    rec = status.recording
    why = f" ({stop.received.name})" if stop.received is not None else ""
    dead = status.dead_threads_text()
    if dead:
        say(f"gapwatch {command}: gapwatch's own threads died: {dead}")
    if rec is None:
        if why:
            say(f"gapwatch {command}: stopped{why}")
        return dead is not None
    say(f"gapwatch {command}: stopped{why}; {rec.summary()}")
    return dead is not None
