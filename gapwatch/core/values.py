"""Field values as a Rust prover's log writes them: the one conversion of a field's text
(`partition=Some(3)`, `ema_waiting="7.9"`, `true`, `1e999`) into a scalar, and the one rule for
"this field is a number of ...".

Who calls it: the log parser (`gapwatch.logs.parse`: tracing fields, user rules) and the
prover packages' own line formats (e.g. `gapwatch.cuzk.log_lines`), which sit below the log
layer and so cannot import it. Pure: a bounded table of converted texts, no I/O.
"""

from __future__ import annotations

import math
import re
from enum import Enum
from typing import Final, TypeGuard

from gapwatch.core.bounds import fits_i64
from gapwatch.core.models import FieldValue

#: A number as tracing writes one (`-3`, `2.5`, `.5`, `1e9`).
NUMBER = re.compile(r"-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?", re.ASCII)


def int_field(value: FieldValue) -> int | None:
    """An int field, or None (a bool is not one: `type` is exact, and half the cost of two
    `isinstance`). The one rule for "this field is a number of ..." (the parser and the prover
    packages' timelines)."""
    return value if type(value) is int else None


def count_field(value: FieldValue) -> int | None:
    """An int field that counts or sizes something (workers, buffers, GiB, ms: what a Rust
    prover holds in an unsigned integer), or None: a negative one is no count, and taken as
    given it was advised on ("raise it above -5"). Fields that may be negative (a signed
    offset) are read with `int_field`. The pipeline's facts keep what they drop and the
    advice names it, the settings count it (`is_bad_count`); the partition table's durations
    are left None ("-"), unsaid."""
    return value if type(value) is int and value >= 0 else None


#: The least size above 0 a prover can write in GiB: one byte (it divides a count of bytes by
#: 2^30). A figure above 0 and below it (`size_gib=5e-324`, `1e-300`) is no size, and made the
#: pinned-pool advice's arithmetic overflow (`3 x 5e-324` steps in 512 GiB: infinity).
MIN_SIZE_GIB: Final = 1.0 / (1 << 30)
#: The most: 1 PiB of host memory, past any GPU box (the largest hold tens of TiB).
#: `pool_total_gib=1e300` or `size_gib=1e308` is no size of any box ("3 x 1e308 GiB = inf").
MAX_SIZE_GIB: Final = float(1 << 20)
#: How `size_field`'s bounds are said where a figure is dropped by them.
SIZE_BOUNDS_WORDS: Final = "0, or a byte to 1 PiB"


def size_field(value: object) -> float | None:
    """A size a prover computes as a float in GiB (from bytes, an `f64`), or None for no size:
    not a number (a bool is not one), negative, infinite or NaN, or a size no GPU box can
    have (above 0 and below a byte, or above 1 PiB: `MIN_SIZE_GIB`, `MAX_SIZE_GIB`). The one
    bound of the GiB figures of a prover's lines, where they are read: every sum and ratio of
    them after it stays finite."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    n = float(value)
    if not (math.isfinite(n) and n >= 0) or n > MAX_SIZE_GIB:
        return None
    return n if n == 0 or n >= MIN_SIZE_GIB else None


def is_bad_count(value: FieldValue) -> TypeGuard[int]:
    """An int where a count was wanted that `count_field` drops (a negative one)."""
    return type(value) is int and value < 0


#: Field texts already converted (short ones), at most `_VALUES_MAX`: a prover's lines repeat
#: their values (partitions, workers, job ids, flags, small timings); of the 1,054 values in
#: tests/data's two logs of a prover (e.g. cuzk) read once in order, 822 (78 %) had been seen
#: before. Values are immutable, so one table serves every parser; a full one is emptied, like
#: the timestamp cache (`gapwatch.logs.parse.prefixes._SECOND_CACHE`).
_VALUES: dict[str, FieldValue] = {}
_VALUES_MAX = 4096
_VALUE_CHARS = 40


class _Unseen(Enum):
    """What the table gives for a text not in it (None is a value: `None`); an Enum member, so
    that a check by identity narrows the type."""

    UNSEEN = 0


_UNSEEN: Final = _Unseen.UNSEEN


def convert_value(raw: str) -> FieldValue:
    """A field's text as the most specific scalar: int, float, bool, None, or the string.

    `Some(x)` is x; a quoted string is unquoted; lists and other Debug output stay strings.
    Digits with a leading zero stay text (no Rust integer is written so: an id, `007`).
    Numbers gapwatch could not write or export stay text: an integer beyond 64 bits
    (`Some(99999999999999999999)`), a float that overflows to infinity (`1e999`), digits other
    than ASCII ones (`²`, which int() refuses or reads as another number).
    """
    kept = _VALUES.get(raw, _UNSEEN)  # one lookup: safe while another thread empties it
    if kept is not _UNSEEN:
        return kept
    value = _convert(raw)
    if len(raw) <= _VALUE_CHARS:
        if len(_VALUES) >= _VALUES_MAX:
            _VALUES.clear()
        _VALUES[raw] = value
    return value


def digits_value(raw: str) -> int | str:
    """A run of ASCII digits (the caller has checked) as `convert_value` reads it: the integer,
    or the text when it does not fit 64 bits. Without the table: for a value that is new on
    almost every line (a TIMELINE offset), which would only fill it."""
    return int(raw) if len(raw) < 19 else _bounded_int(raw)


def _convert(raw: str) -> FieldValue:
    """`convert_value` without the table: an integer, Rust's `Some(..)`/`None`, a quoted
    string, a boolean, a finite float, else the text as written."""
    if raw.isdigit() and raw.isascii():
        # Rust writes no integer with a leading zero: `007` is an id as written, and made 7 it
        # named no job its TIMELINE lines name (`LogParser._tracing` gives the text back).
        return raw if raw[0] == "0" and len(raw) > 1 else digits_value(raw)
    if not raw:
        return ""
    c = raw[0]
    if c == "-" and raw[1:].isdigit() and raw.isascii():
        return int(raw) if len(raw) < 20 else _bounded_int(raw)
    if c == "S" and raw.startswith("Some(") and raw.endswith(")"):
        return _convert(raw[5:-1])
    if c == '"' and len(raw) >= 2 and raw.endswith('"'):
        return raw[1:-1].replace('\\"', '"')
    if raw in _WORDS:
        return _WORDS[raw]
    return _float_or_text(raw)


#: Rust's words for booleans and an absent `Option`, as values.
_WORDS: dict[str, FieldValue] = {"true": True, "false": False, "None": None}


def _float_or_text(raw: str) -> FieldValue:
    """A finite decimal number as a float; anything else (`inf`, `NaN`, words) as written."""
    if (raw[0].isdigit() or raw[0] in "-.") and NUMBER.fullmatch(raw):
        number = float(raw)
        return number if math.isfinite(number) else raw
    return raw


#: Significant digits of the longest integer that fits 64 bits (9223372036854775807).
_I64_DIGITS = 19


def _bounded_int(raw: str) -> int | str:
    """A long run of digits (a sign allowed): the integer if it fits 64 bits, else the text
    as written. Decided by its length first: `int()` refuses more than 4,300 digits
    (ValueError, Python's guard against its quadratic conversion): a field of a million digits
    made the whole line unparsed (`internal_errors`), its other fields lost with it."""
    digits = raw.removeprefix("-").lstrip("0")  # leading zeros count for int()'s limit too
    if len(digits) > _I64_DIGITS:
        return raw
    n = int(digits or "0")
    n = -n if raw.startswith("-") else n
    return n if fits_i64(n) else raw
