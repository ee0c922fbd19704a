"""The Textual dashboard (the only package that imports textual, plotext and textual_plotext).

Who calls it: `gapwatch watch`, `demo` and `replay` call `start_and_show(runtime)`. Importing
this package itself imports nothing heavy (Textual is imported when the dashboard starts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from gapwatch.ui.app import DashboardRuntime


def run_dashboard(runtime: DashboardRuntime) -> int:
    """Run the dashboard in the terminal until the user quits; returns the exit status."""
    from gapwatch.ui.app import GapwatchApp

    app = GapwatchApp(runtime)
    result = app.run()
    return int(result or 0)


class _Startable(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...


def start_and_show(runtime: _Startable) -> int:
    """Start the runtime, run the dashboard over it, stop the runtime however the UI ends.

    The runtime is started before the App so that sampling never waits on the UI; it is stopped
    in `finally` so a crash in the UI still settles the detector and closes the recording.
    """
    runtime.start()
    try:
        return run_dashboard(runtime)  # type: ignore[arg-type]
    finally:
        runtime.stop()
