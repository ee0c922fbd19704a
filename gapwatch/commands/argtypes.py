"""argparse `type=` functions for the numbers on gapwatch's command line.

Who calls it: `gapwatch.cli` (common flags) and the subcommands' `add_arguments`. A number that
makes no sense (`nan`, `inf`, negative, zero where zero cannot work) is refused by argparse with
a message naming the flag, and exit status 2, before anything starts: `--duration nan` would
otherwise run forever and `--duration 0` write an empty recording.
"""

from __future__ import annotations

import argparse
import math


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive_seconds(text: str) -> float:
    """A finite number of seconds > 0 (`--duration`)."""
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text!r}")
    return value


def positive_ms(text: str) -> float:
    """A finite number of milliseconds > 0 (`--period-ms`)."""
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 ms, got {text!r}")
    return value


def speed(text: str) -> float:
    """A finite speed factor >= 0 (`--speed`: 1 = real time, 0 = as fast as possible)."""
    value = _finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"must be 0 (as fast as possible) or more, got {text!r}")
    return value
