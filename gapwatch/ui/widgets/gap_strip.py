"""GapStrip: the row under the charts that marks the detector's gaps by kind, and the time axis.

Who drives it: `Overview`, on each redraw. Gaps come from the detector's list (`snap.gaps`), so
a 300 ms gap in a 10-minute window still marks at least one column (`ui.reduce.gap_columns`).
Each kind has a letter as well as a colour, so the marks read without colour (NO_COLOR, mono).
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
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
        #: The styles (resolving them cost more than the rest of a redraw; Textual drops its own
        #: cache on every refresh), and each line with what it was drawn from: a line that reads
        #: as before keeps its strip. Dropped when the styles change.
        self._styles: dict[str, Style] | None = None
        self._marks: tuple[list[str | None], Strip] | None = None
        self._axis: tuple[tuple[int, float], Strip] | None = None

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = None
        self._marks = self._axis = None

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

    def _style(self, name: str) -> Style:
        if self._styles is None:
            base = self.rich_style
            styles = {part: base + self.get_component_rich_style(f"gap-strip--{part}")
                      for part in (*KINDS, "label", "axis")}
            self._styles = {**styles, "": base}
        return self._styles[name]

    def _lines(self, view: View, width: int) -> list[Strip]:
        columns = width - LABEL_WIDTH
        if columns <= 0:
            return []
        t_start, t_end = view.grid(columns)
        marks: list[str | None] = list(
            gap_columns(view.snap.gaps, view.gpu, t_start, t_end, columns))
        if self._marks is None or self._marks[0] != marks:
            self._marks = (marks, self._marks_strip(marks, width))
        if self._axis is None or self._axis[0] != (columns, view.window_s):
            self._axis = ((columns, view.window_s), Strip([
                Segment(" " * LABEL_WIDTH, self._style("")),
                Segment(axis_line(columns, view.window_s), self._style("axis")),
            ], width))
        return [self._marks[1], self._axis[1]]

    def _marks_strip(self, marks: list[str | None], width: int) -> Strip:
        segments = [Segment(f"{'gaps':<{LABEL_WIDTH - 1}}│", self._style("label"))]
        run_kind: str | None = None
        run_len = 0
        for kind in [*marks, "end"]:
            if kind != run_kind and run_len:
                if run_kind is None:
                    segments.append(Segment(" " * run_len, self._style("")))
                else:
                    segments.append(Segment(KINDS[run_kind].letter * run_len,
                                            self._style(run_kind)))
                run_len = 0
            run_kind = kind
            run_len += 1
        return Strip(segments, width)
