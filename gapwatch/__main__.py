"""`python -m gapwatch` and the `gapwatch` script: stop signals first, then the command line."""

from __future__ import annotations


def run() -> int:
    """The program: stop signals are a clean exit from the first moment (imports included),
    then `gapwatch.cli.main`."""
    from gapwatch.base.quit_early import StopRequested, quit_on_stop_signals

    quit_on_stop_signals()
    try:
        from gapwatch.cli import main

        return main()
    except StopRequested as stop:
        _say_stopped(stop)
        return 0


def _say_stopped(stop: BaseException) -> None:
    import sys

    try:
        name = getattr(getattr(stop, "signal", None), "name", "a signal")
        print(f"gapwatch: stopped ({name})", file=sys.stderr, flush=True)
    except (OSError, ValueError):  # no stderr left: nothing more to say
        pass


if __name__ == "__main__":
    raise SystemExit(run())
