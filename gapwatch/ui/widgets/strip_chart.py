"""StripChart: one metric of the selected GPU over the chart window, in block characters.

Who drives it: `Overview` hands it the View on each redraw; the widget reduces the samples to
its own width (per-column min and max, `ui.reduce`) and draws them with `ui.blocks`. Work is done
with Textual's line API (Segments straight into Strips, no rich Text layout). The columns sit on a
fixed time grid (`View.grid`), so most redraws change no pixel: `show()` draws the rows and asks
Textual to repaint only when they differ from what is on screen (the compositor's repaint is the
costly part, ~20 ms a frame at 160x48 on a slow core).

This is the always-on chart: it costs a fraction of a millisecond per redraw, where a plotext
chart of the same size costs 15-30 ms (see docs/dashboard.md and bench/ui_bench.py).
"""

from __future__ import annotations

from collections.abc import Callable

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

from gapwatch.core.models import GpuSample
from gapwatch.ui.blocks import BLANK, RANGE, SOLID, ZERO, nice_scale, render_rows
from gapwatch.ui.reduce import reduce_minmax
from gapwatch.ui.view import View

#: Width of the label column left of every chart (title and scale).
LABEL_WIDTH = 8

ValueOf = Callable[[GpuSample], float | None]


class StripChart(Widget):
    """A block-character chart of one metric, with its title and scale on the left."""

    COMPONENT_CLASSES = {
        "strip-chart--solid",
        "strip-chart--range",
        "strip-chart--zero",
        "strip-chart--label",
    }

    def __init__(
        self,
        title: str,
        value_of: ValueOf,
        *,
        unit: float = 1.0,
        unit_label: str = "",
        fixed_max: float | None = None,
        floor: float = 1.0,
        id: str | None = None,  # noqa: A002 (Textual's name)
        classes: str | None = None,
    ) -> None:
        """
        Args:
            title: shown top left ("SM %", "RX GB/s").
            value_of: reads the metric from a sample (None = missing).
            unit: divide values by this for display (1e9 for GB/s).
            unit_label: suffix of the scale label.
            fixed_max: a fixed top of scale in display units (100 for percentages), else the
                window's peak rounded up to 1/2/5 x 10^n, never below `floor`.
        """
        super().__init__(id=id, classes=classes)
        self.title = title
        self._value_of = value_of
        self._unit = unit
        self._unit_label = unit_label
        self._fixed_max = fixed_max
        self._floor = floor
        self._view: View | None = None
        self._drawn_size: tuple[int, int] = (0, 0)
        self._shown: list[Strip] = []

    def show(self, view: View) -> None:
        self._view = view
        strips = self._rows(view)
        if strips != self._shown:
            self._shown = strips
            self.refresh()

    def _rows(self, view: View) -> list[Strip]:
        width, height = self.size.width, self.size.height
        self._drawn_size = (width, height)
        if width <= LABEL_WIDTH or height <= 0:
            return []
        return self._draw(view, width - LABEL_WIDTH, height)

    def render_line(self, y: int) -> Strip:
        view = self._view
        width, height = self.size.width, self.size.height
        if view is None or width <= LABEL_WIDTH or height <= 0:
            if y == 0:
                return Strip([Segment(self.title, self.rich_style)]).adjust_cell_length(width)
            return Strip.blank(width, self.rich_style)
        if (width, height) != self._drawn_size:  # resized since the last show()
            self._shown = self._rows(view)
        if y < len(self._shown):
            return self._shown[y]
        return Strip.blank(width, self.rich_style)

    def _draw(self, view: View, columns: int, rows: int) -> list[Strip]:
        value_of, unit = self._value_of, self._unit
        t_start, t_end = view.grid(columns)
        points = [
            (s.t_mono_ns, None if (v := value_of(s)) is None else v / unit)
            for s in view.samples_since(view.gpu, t_start)
        ]
        cols = reduce_minmax(points, t_start, t_end, columns)
        if self._fixed_max is not None:
            scale = self._fixed_max
        else:
            peak = max((c.hi for c in cols if c.hi is not None), default=None)
            scale = nice_scale(peak, self._floor)
        base = self.rich_style
        styles: dict[str, Style] = {
            SOLID: base + self.get_component_rich_style("strip-chart--solid"),
            RANGE: base + self.get_component_rich_style("strip-chart--range"),
            ZERO: base + self.get_component_rich_style("strip-chart--zero"),
            BLANK: base,
        }
        label_style = base + self.get_component_rich_style("strip-chart--label")
        labels = [self.title, f"≤{scale:g}{self._unit_label}"]
        strips: list[Strip] = []
        for i, runs in enumerate(render_rows(cols, rows, scale)):
            label = labels[i] if i < len(labels) else ""
            segments = [Segment(f"{label[: LABEL_WIDTH - 1]:<{LABEL_WIDTH - 1}}│", label_style)]
            segments += [Segment(chars, styles[style_key]) for chars, style_key in runs]
            strips.append(Strip(segments, LABEL_WIDTH + columns))
        return strips
