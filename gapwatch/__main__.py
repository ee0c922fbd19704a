"""`python -m gapwatch` and the `gapwatch` script: stop signals first, then the command line."""

from __future__ import annotations


def run() -> int:
    """The program: stop signals are a clean exit from the first moment (imports included),
    then `gapwatch.cli.main`; once it is over, they are ignored while Python exits
    (`quit_early.exiting`: its shutdown gave them their default action back, and a second
    Ctrl-C killed the process)."""
    from gapwatch.base.quit_early import StopRequested, exiting, import_held, quit_on_stop_signals

    quit_on_stop_signals()
    try:
        _unencodable_text_escaped()
        try:
            main = import_held("gapwatch.cli").main
            return int(main())
        except StopRequested as stop:
            exiting()
            _say_stopped(stop)
            return 0
        except Exception as exc:
            # Python 3.11 wraps what a descriptor's `__set_name__` raises in a RuntimeError: a
            # stop signal that lands while a dataclass is made (a lazy import, mid-command)
            # comes so.
            within = _stop_within(exc)
            if within is None:
                raise
            exiting()
            _say_stopped(within)
            return 0
    finally:
        exiting()


def _unencodable_text_escaped() -> None:
    """A character the terminal's encoding cannot take is written `\\u2265`, not raised:
    with `PYTHONIOENCODING=ascii` (or a Latin-1 locale), `report`'s `≥` and `compare`'s `×`
    were a UnicodeEncodeError traceback after half the output was written."""
    import sys

    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)  # None when fd 1/2 was closed
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def _stop_within(exc: BaseException) -> BaseException | None:
    """The `StopRequested` that `exc` was raised from, directly or a few causes down."""
    from gapwatch.base.quit_early import StopRequested

    cause: BaseException | None = exc
    for _ in range(8):  # a chain of causes is short; a cycle must not hold the exit
        if cause is None or isinstance(cause, StopRequested):
            return cause
        cause = cause.__cause__
    return None


def _say_stopped(stop: BaseException) -> None:
    import sys

    try:
        name = getattr(getattr(stop, "signal", None), "name", "a signal")
        print(f"gapwatch: stopped ({name})", file=sys.stderr, flush=True)
    except (OSError, ValueError):  # no stderr left: nothing more to say
        pass


if __name__ == "__main__":
    raise SystemExit(run())
