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


def render_rows(columns: Sequence[Cell], rows: int, sqrt_one_row: bool = False
                ) -> list[list[Run]]:
    """Runs of (characters, style key) for each row of the chart, top row first; a chart of one
    row on the square-root scale with `sqrt_one_row`."""
    if rows <= 0:
        return []
    sqrt = sqrt_one_row and rows == 1
    stacks = [_column_cells(_column_key(share, mark, rows, sqrt), rows)
              for share, mark in columns]
    out: list[list[Run]] = []
    for r in range(rows - 1, -1, -1):
        runs: list[Run] = []
        text: list[str] = []
        cur_style = ""
        for stack in stacks:
            char, style = stack[r]
            if style != cur_style and text:
                runs.append(("".join(text), cur_style))
                text = []
            cur_style = style
            text.append(char)
        if text:
            runs.append(("".join(text), cur_style))
        out.append(runs)
    return out
