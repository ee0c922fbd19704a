"""Block-character rendering of reduced columns: the cheap chart of the always-on view.

Who calls it: `widgets.strip_chart.StripChart` on each redraw. Pure (no Textual), so the drawing
rules are unit-tested:

- a column's bar reaches its maximum, in eighth-blocks (▁▂▃▄▅▆▇█);
- a cell below the column's minimum is drawn "solid", a cell between minimum and maximum is drawn
  "range" (dimmer): a column that holds busy work and a short idle dip shows as a dim full bar,
  while the gap row beneath names the dip;
- a present zero is a baseline `▁` in the "zero" style, so it is never confused with missing data;
- a missing column is blank in every row.

Cells come back as runs of (text, style key) per row, top row first, so the widget builds one
rich `Text` per row with a handful of spans instead of one per character.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from gapwatch.ui.reduce import Column

EIGHTHS = " ▁▂▃▄▅▆▇█"

#: Style keys a renderer maps to real styles (the widget's component classes).
SOLID, RANGE, ZERO, BLANK = "solid", "range", "zero", "blank"

Run = tuple[str, str]


def _column_key(col: Column, rows: int, scale: float) -> tuple[int, int, bool] | None:
    """What decides a column's look: eighths filled, whole rows under its minimum, flat."""
    if col.lo is None or col.hi is None:
        return None
    hi_eighths = max(0.0, min(1.0, col.hi / scale)) * rows * 8
    if hi_eighths < 1:
        return (0, 0, True)  # a present reading too small for one eighth: a baseline
    lo_rows = int(max(0.0, min(1.0, col.lo / scale)) * rows)
    return (int(round(hi_eighths)), lo_rows, col.lo == col.hi)


@lru_cache(maxsize=4096)
def _column_cells(key: tuple[int, int, bool] | None, rows: int) -> tuple[tuple[str, str], ...]:
    """The cells of one column, bottom row first. Cached: most columns of a chart look alike
    (busy at ~95 %, idle at 0), so a redraw computes only the few new shapes."""
    if key is None:
        return ((" ", BLANK),) * rows
    eighths, lo_rows, flat = key
    if eighths == 0:
        return (("▁", ZERO),) + ((" ", BLANK),) * (rows - 1)
    cells = []
    for r in range(rows):
        filled = eighths - r * 8
        if filled <= 0:
            cells.append((" ", BLANK))
            continue
        # Solid when the column's minimum also covers this whole cell: busy all the time.
        cells.append((EIGHTHS[min(8, filled)], SOLID if lo_rows >= r + 1 or flat else RANGE))
    return tuple(cells)


def render_rows(columns: Sequence[Column], rows: int, scale: float) -> list[list[Run]]:
    """Runs of (characters, style key) for each row of the chart, top row first."""
    if rows <= 0:
        return []
    scale = scale if scale > 0 else 1.0
    stacks = [_column_cells(_column_key(col, rows, scale), rows) for col in columns]
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


def nice_scale(peak: float | None, floor: float) -> float:
    """Round a peak up to 1, 2 or 5 x 10^n (at least `floor`), so the axis label stays readable
    and the scale does not jitter with every sample."""
    value = max(peak or 0.0, floor)
    mag = 1.0
    while mag * 10 <= value:
        mag *= 10
    while mag > value:
        mag /= 10
    for step in (1, 2, 5, 10):
        if step * mag >= value:
            return step * mag
    return 10 * mag
