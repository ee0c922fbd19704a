"""Block-character rendering of reduced columns: the cheap chart of the always-on view.

Who calls it: `widgets.strip_chart.StripChart` on each redraw. Pure (no Textual), so the drawing
rules are unit-tested:

- a column's bar reaches its value (a share of the scale, 0..1), in eighth-blocks (▁▂▃▄▅▆▇█);
- a column that holds any of the detector's gaps is drawn in the gap's style, its whole cells as
  `▓` instead of `█`: it never reads as busy, in colour or without (NO_COLOR, a text capture),
  however little of the column the gap took;
- a present zero is a baseline `▁` in the "zero" style, so it is never confused with missing
  data; a present value too small for one eighth is a baseline in the bar's own style;
- a missing column is blank in every row;
- a rate chart of one row (80x24; `sqrt_one_row`) is drawn on a square-root scale: on a
  linear one its eight levels drew 8 GB/s and 3 GB/s of a 63 GB/s link both as the baseline
  `▁` (a flat line for two different rates); on the square root they are `▃` and `▂`, and
  41 GB/s is `▆`. The widget also writes the newest column's value in its label.

Cells come back as runs of (text, style key) per row, top row first, so the widget builds one
`Segment` per run instead of one per character.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from functools import lru_cache

EIGHTHS = " ▁▂▃▄▅▆▇█"
#: A whole cell of a column that holds a gap (textured, so it never passes for a busy `█`).
GAP_CELL = "▓"

#: Style keys a renderer maps to real styles (the widget's component classes). A column with a
#: gap uses the key `GAP_PREFIX + kind`.
SOLID, ZERO, BLANK = "solid", "zero", "blank"
GAP_PREFIX = "gap-"

Run = tuple[str, str]
#: One column to draw: its value as a share of the scale (None = no data) and the kind of the
#: gap it holds (None = no gap).
Cell = tuple[float | None, str | None]


def _column_key(share: float | None, mark: str | None, rows: int,
                sqrt: bool = False) -> tuple[int, str, bool] | None:
    """What decides a column's look: eighths filled, style key, exactly zero; with `sqrt`, on
    the square-root scale (module docstring)."""
    if share is None:
        return None
    style = SOLID if mark is None else GAP_PREFIX + mark
    level = max(0.0, min(1.0, share))
    if sqrt:
        level = math.sqrt(level)
    eighths = int(round(level * rows * 8))
    return (eighths, style, share <= 0.0)


@lru_cache(maxsize=4096)
def _column_cells(key: tuple[int, str, bool] | None, rows: int) -> tuple[tuple[str, str], ...]:
    """The cells of one column, bottom row first. Cached: most columns of a chart look alike
    (busy all the time, or idle), so a redraw computes only the few new shapes."""
    if key is None:
        return ((" ", BLANK),) * rows
    eighths, style, zero = key
    if eighths == 0:
        base_style = ZERO if zero and not style.startswith(GAP_PREFIX) else style
        return (("▁", base_style),) + ((" ", BLANK),) * (rows - 1)
    full = GAP_CELL if style.startswith(GAP_PREFIX) else EIGHTHS[8]
    cells = []
    for r in range(rows):
        filled = eighths - r * 8
        if filled <= 0:
            cells.append((" ", BLANK))
        else:
            cells.append((full if filled >= 8 else EIGHTHS[filled], style))
    return tuple(cells)


#: One character per style key (`_code`), so that a row's styles are a string and its runs of
#: one style are found by a regular expression rather than cell by cell in Python.
_CODES: dict[str, str] = {}
_KEYS: dict[str, str] = {}
_RUN = re.compile(r"(.)\1*", re.DOTALL)


def _code(style: str) -> str:
    code = _CODES.get(style)
    if code is None:
        code = _CODES[style] = chr(0xE000 + len(_CODES))  # private use: never a style's own
        _KEYS[code] = style
    return code


@lru_cache(maxsize=4096)
def _column_strings(key: tuple[int, str, bool] | None, rows: int) -> tuple[str, str]:
    """One column as (its characters, its style codes), top row first."""
    cells = _column_cells(key, rows)[::-1]
    return "".join(ch for ch, _ in cells), "".join(_code(style) for _, style in cells)


#: A chart's rows as text: each row's characters and style codes, top row first.
RowStrings = tuple[list[str], list[str]]


def row_strings(columns: Sequence[Cell], rows: int, sqrt: bool = False) -> RowStrings:
    """The rows of `columns` (`render_rows` cuts them into runs)."""
    stacks = [_column_strings(_column_key(share, mark, rows, sqrt), rows)
              for share, mark in columns]
    if not stacks:
        return [""] * rows, [""] * rows
    chars = ["".join(row) for row in zip(*[c for c, _ in stacks], strict=True)]
    codes = ["".join(row) for row in zip(*[s for _, s in stacks], strict=True)]
    return chars, codes


#: A run of one style with the blank cells after it (and, first in a row, before it).
_JOINED_RUN = re.compile(f"{_code(BLANK)}*([^{_code(BLANK)}])(?:\\1|{_code(BLANK)})*", re.DOTALL)


def row_runs(chars: str, codes: str, blanks_join: bool = False) -> list[Run]:
    """One row's runs of (characters, style key). With `blanks_join`, blank cells are drawn in
    the style of the run before them (first in the row, of the run after them): a space shows
    its background alone, so where every style differs from the blank one by its foreground
    colour only (the widget checks) the picture is the same, in far fewer segments (a row of
    scattered bars was one segment per bar and per space between two)."""
    keys = _KEYS
    if blanks_join:
        runs = [(chars[m.start():m.end()], keys[m.group(1)]) for m in _JOINED_RUN.finditer(codes)]
        return runs if runs or not chars else [(chars, BLANK)]
    return [(chars[m.start():m.end()], keys[m.group(1)]) for m in _RUN.finditer(codes)]


def render_rows(columns: Sequence[Cell], rows: int, sqrt_one_row: bool = False
                ) -> list[list[Run]]:
    """Runs of (characters, style key) for each row of the chart, top row first; a chart of one
    row on the square-root scale with `sqrt_one_row`."""
    if rows <= 0:
        return []
    chars, codes = row_strings(columns, rows, sqrt_one_row and rows == 1)
    return [row_runs(c, s) for c, s in zip(chars, codes, strict=True)]


class ScrollingRows:
    """A chart's rows kept between redraws, so that a redraw draws only the columns that are new
    or changed: the columns sit on a fixed time grid (`View.grid`), so when the window moves on
    by `shift` columns, every column that reads as it did is the same characters `shift` places
    to the left (a 160-column chart gains two or three columns a second; drawing all 160 of
    every row again was most of what a chart's redraw cost)."""

    def __init__(self) -> None:
        self._columns: list[Cell] = []
        self._shape: tuple[int, bool] = (0, False)
        self._rows: RowStrings = ([], [])

    def rows(self, columns: list[Cell], rows: int, sqrt: bool, shift: int | None) -> RowStrings:
        """The rows of `columns` (top row first); `shift`: how many columns the window moved on
        since the last call (None: not known, e.g. another GPU or window: drawn whole)."""
        old = self._columns
        kept = 0
        if shift is not None and (rows, sqrt) == self._shape and len(old) == len(columns) \
                and 0 <= shift < len(old):
            room = len(old) - shift
            kept = room if columns[:room] == old[shift:] else next(
                i for i in range(room) if columns[i] != old[shift + i])
        if shift is not None and kept:
            new_chars, new_codes = row_strings(columns[kept:], rows, sqrt)
            chars, codes = self._rows
            cut = slice(shift, shift + kept)
            self._rows = ([c[cut] + n for c, n in zip(chars, new_chars, strict=True)],
                          [c[cut] + n for c, n in zip(codes, new_codes, strict=True)])
        else:
            self._rows = row_strings(columns, rows, sqrt)
        self._columns, self._shape = columns, (rows, sqrt)
        return self._rows
