"""Sizes and durations as people write them (`1GiB`, `512MiB`, `2GB`, `1d`, `6h`, `90m`).

Who calls it: every module that says or computes sizes in GiB (`GIB`); the command-line types
(`gapwatch.commands.argtypes`: `--rotate-size`, `--rotate-age`) and the config (`[record]
rotate_size`, `rotate_age`), so that both read the same words the same way. Pure.
"""

from __future__ import annotations

import math
import re
from typing import Final

#: One gibibyte: the one definition every module that says or computes GiB uses.
GIB: Final = 1 << 30

_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1 << 10, "kib": 1 << 10, "kb": 1000,
    "m": 1 << 20, "mib": 1 << 20, "mb": 1000 ** 2,
    "g": GIB, "gib": GIB, "gb": 1000 ** 3,
    "t": 1 << 40, "tib": 1 << 40, "tb": 1000 ** 4,
}
_DURATION_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0,
                   "w": 7 * 86400.0}
_AMOUNT = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*", re.ASCII)


def parse_size(text: str) -> int:
    """`1GiB` -> 1073741824 (binary units: KiB/MiB/GiB/TiB and K/M/G/T; decimal: KB/MB/GB/TB;
    a bare number is bytes). Raises ValueError naming what it could not read."""
    m = _AMOUNT.fullmatch(text)
    unit = _SIZE_UNITS.get(m.group(2).lower()) if m else None
    if m is None or unit is None:
        raise ValueError(f"{text!r} is not a size (write it like 1GiB, 512MiB or 2GB)")
    value = float(m.group(1)) * unit
    if not math.isfinite(value) or value >= 1 << 62:
        raise ValueError(f"{text!r} is not a size gapwatch can hold")
    return int(value)


def parse_duration(text: str) -> float:
    """`1d` -> 86400.0 (s, m or min, h, d, w; a bare number is seconds). Raises ValueError."""
    m = _AMOUNT.fullmatch(text)
    unit = _DURATION_UNITS.get(m.group(2).lower()) if m else None
    if m is None or unit is None:
        raise ValueError(f"{text!r} is not a duration (write it like 1d, 6h, 90m or 3600s)")
    value = float(m.group(1)) * unit
    if not math.isfinite(value) or value > 100 * 365 * 86400.0:
        raise ValueError(f"{text!r} is not a duration gapwatch can hold")
    return value
