"""GapStrip: the row under the charts that marks the detector's gaps by kind, and the time axis.

Who drives it: `Overview`, on each redraw. Gaps come from the detector's list (`snap.gaps`), so
a 300 ms gap in a 10-minute window still marks at least one column (`ui.reduce.gap_columns`).
Each kind has a letter as well as a colour, so the marks read without colour (NO_COLOR, mono).
"""

from __future__ import annotations

from rich.segment import Segment
from textual.strip import Strip
from textual.widget import Widget

from gapwatch.core import fmt
from gapwatch.ui.kinds import KINDS
from gapwatch.ui.reduce import gap_columns
from gapwatch.ui.view import View
from gapwatch.ui.widgets.strip_chart import LABEL_WIDTH
from gapwatch.ui.widgets.text_lines import refresh_changed


def axis_line(columns: int, window_s: float) -> str:
    """Tick labels at the left edge, the quarters and "now" at the right edge."""
    chars = [" "] * columns
    if columns < 8:
        return "".join(chars)
    ticks = [(0, f"-{fmt.window_label(window_s).replace(' ', '')}")]
    if columns >= 40:
        for q in (1, 2, 3):
            ago = window_s * (4 - q) / 4
            label = f"-{ago / 60:g}m" if window_s >= 120 else f"-{ago:g}s"
            ticks.append((columns * q // 4 - len(label) // 2, label))
    ticks.append((columns - 3, "now"))
    for pos, label in ticks:
        for i, ch in enumerate(label):
            if 0 <= pos + i < columns:
                chars[pos + i] = ch
    return "".join(chars)


class GapStrip(Widget):
    """Gap marks (S/T/H) per column, then the time axis."""

    COMPONENT_CLASSES = {
        *(f"gap-strip--{kind}" for kind in KINDS),
        "gap-strip--label",
        "gap-strip--axis",
    }

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self._view: View | None = None
        self._shown: list[Strip] = []

    def show(self, view: View) -> None:
        # Repaint only when the marks or the axis changed (columns sit on `View.grid`).
        self._view = view
        lines = self._lines(view, self.size.width)
        refresh_changed(self, self._shown, lines, self.size.width)  # the axis mostly stays
        self._shown = lines

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if self._view is None or width - LABEL_WIDTH <= 0 or y > 1:
            return Strip.blank(width, self.rich_style)
        if not self._shown or self._shown[0].cell_length != width:  # resized since show()
            self._shown = self._lines(self._view, width)
        return self._shown[y]

    def _lines(self, view: View, width: int) -> list[Strip]:
        columns = width - LABEL_WIDTH
        base = self.rich_style
        if columns <= 0:
            return []
        style = self.get_component_rich_style
        axis = Strip([
            Segment(" " * LABEL_WIDTH, base),
            Segment(axis_line(columns, view.window_s), base + style("gap-strip--axis")),
        ], width)
        t_start, t_end = view.grid(columns)
        marks = gap_columns(view.snap.gaps, view.gpu, t_start, t_end, columns)
        segments = [Segment(f"{'gaps':<{LABEL_WIDTH - 1}}│", base + style("gap-strip--label"))]
        run_kind: str | None = None
        run_len = 0
        for kind in [*marks, "end"]:
            if kind != run_kind and run_len:
                if run_kind is None:
                    segments.append(Segment(" " * run_len, base))
                else:
                    segments.append(Segment(KINDS[run_kind].letter * run_len,
                                            base + style(f"gap-strip--{run_kind}")))
                run_len = 0
            run_kind = kind
            run_len += 1
        return [Strip(segments, width), axis]
