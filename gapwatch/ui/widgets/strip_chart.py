"""StripChart: one metric of the selected GPU over the chart window, in block characters.

Who drives it: `Overview` hands it the View on each redraw; the widget asks its `cells_of`
function (see `ui.series`) for one cell per display column and draws them with `ui.blocks`. Work
is done with Textual's line API (Segments straight into Strips, no rich Text layout). The columns
sit on a fixed time grid (`View.grid`), so most redraws change no pixel: `show()` draws the rows and
asks Textual to repaint only when they differ from what is on screen (the compositor's repaint is
the costly part, ~20 ms a frame at 160x48 on a slow core).

Every chart has its scale on the left: the title with its unit on the first row ("busy %",
"RX %link") and the range on the second when there is one ("0-100"). The scales are fixed
(0-100 % of the time, 0-100 % of the link), so a glance compares windows, GPUs and moments.

This is the always-on chart: it costs a fraction of a millisecond per redraw, where a plotext
chart of the same size costs 15-30 ms (see docs/dashboard.md and bench/ui_bench.py).
"""

from __future__ import annotations

from collections.abc import Callable

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

from gapwatch.core.models import GAP_KINDS
from gapwatch.ui.blocks import BLANK, GAP_PREFIX, SOLID, ZERO, Cell, ScrollingRows, row_runs
from gapwatch.ui.series import SeriesCache
from gapwatch.ui.view import View
from gapwatch.ui.widgets.text_lines import refresh_changed

#: Width of the label column left of every chart (title and scale, then `│`).
LABEL_WIDTH = 9

#: Cells of a chart: (view, columns, window start ns, window end ns, the chart's cache) -> one
#: Cell per column.
CellsOf = Callable[[View, int, int, int, SeriesCache], list[Cell]]


def one_row_label(title: str, cells: list[Cell]) -> str:
    """`RX  13%`: the title's first word and the newest column's share of the scale (`-`
    when no column has data)."""
    latest = next((share for share, _ in reversed(cells) if share is not None), None)
    value = "-" if latest is None else f"{100 * latest:.0f}%"
    return f"{title.split()[0]} {value:>4}"[: LABEL_WIDTH - 1]


class StripChart(Widget):
    """A block-character chart of one metric, with its title and scale on the left."""

    COMPONENT_CLASSES = {
        "strip-chart--solid",
        "strip-chart--zero",
        "strip-chart--label",
        *(f"strip-chart--gap-{kind}" for kind in GAP_KINDS),
    }

    def __init__(
        self,
        title: str,
        cells_of: CellsOf,
        *,
        scale_label: str = "0-100",
        one_row_sqrt: bool = False,
        id: str | None = None,  # noqa: A002 (Textual's name)
        classes: str | None = None,
    ) -> None:
        """
        Args:
            title: the first label row, with the unit ("busy %", "RX %link").
            cells_of: the cells to draw (see `ui.series`).
            scale_label: the second label row (the range of the scale).
            one_row_sqrt: a rate chart: when it has one row, draw it on a square-root scale
                with the newest level in its label (two rates never read alike).
        """
        super().__init__(id=id, classes=classes)
        self.title = title
        self._cells_of = cells_of
        self._scale_label = scale_label
        self._one_row_sqrt = one_row_sqrt
        self._view: View | None = None
        self._drawn_size: tuple[int, int] = (0, 0)
        self._shown: list[Strip] = []
        #: Rich styles per style key, resolved once (resolving them is most of a redraw's cost);
        #: dropped when the styles change (theme, NO_COLOR).
        self._style_cache: dict[str, Style] | None = None
        self._blanks_join = False
        #: Column values that can no longer change (see `ui.series.SeriesCache`).
        self._series_cache = SeriesCache()
        #: The rows as text, kept between redraws (`ui.blocks.ScrollingRows`), the grid they
        #: were drawn on ((view choices, columns), end time, column width), and each row's
        #: (label, characters, styles) with its strip: a row that reads as before keeps its
        #: strip, is not built again and is not repainted.
        self._scrolling = ScrollingRows()
        self._grid: tuple[tuple[object, ...], int, int] | None = None
        self._strips: list[tuple[tuple[str, str, str], Strip]] = []

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style_cache = None
        self._strips = []  # the styles are baked into the strips

    def show(self, view: View) -> None:
        self._view = view
        strips = self._rows(view)
        # The rows that read the same (a busy top row, a blank one) are not repainted.
        refresh_changed(self, self._shown, strips, self.size.width)
        self._shown = strips

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

    def _styles(self) -> dict[str, Style]:
        if self._style_cache is not None:
            return self._style_cache
        base = self.rich_style
        style = self.get_component_rich_style
        styles = {
            SOLID: base + style("strip-chart--solid"),
            ZERO: base + style("strip-chart--zero"),
            BLANK: base,
        }
        for kind in GAP_KINDS:
            styles[GAP_PREFIX + kind] = base + style(f"strip-chart--gap-{kind}")
        styles["label"] = base + style("strip-chart--label")
        self._style_cache = styles
        self._blanks_join = self._blanks_may_join(styles)
        return styles

    @staticmethod
    def _blanks_may_join(styles: dict[str, Style]) -> bool:
        """A space shows its background alone: where every style of the bars differs from the
        blank one by its foreground colour only (the theme's; a CSS rule could add a background
        or an underline), blank cells may be drawn in the style of the run beside them
        (`ui.blocks.row_runs`): the same picture in far fewer segments."""
        blank = styles[BLANK]
        return all(st.bgcolor == blank.bgcolor and st.without_color == blank.without_color
                   for key, st in styles.items() if key != "label")

    def _draw(self, view: View, columns: int, rows: int) -> list[Strip]:
        t_start, t_end = view.grid(columns)
        cells = self._cells_of(view, columns, t_start, t_end, self._series_cache)
        sqrt = rows == 1 and self._one_row_sqrt
        chars, codes = self._scrolling.rows(cells, rows, sqrt,
                                            self._shift(view, columns, t_start, t_end))
        labels = [self.title, self._scale_label]
        if sqrt:
            # One row (80x24): the bar is on a square-root scale (`ui.blocks`); the label says
            # the newest column's level as a number, so two rates never read alike.
            labels = [one_row_label(self.title, cells)]
        kept = self._strips
        self._strips = []
        for y, (row_chars, row_codes) in enumerate(zip(chars, codes, strict=True)):
            label = labels[y] if y < len(labels) else ""
            key = (label, row_chars, row_codes)
            if y < len(kept) and kept[y][0] == key:
                self._strips.append(kept[y])
            else:
                self._strips.append((key, self._strip(label, row_chars, row_codes, columns)))
        return [strip for _, strip in self._strips]

    def _shift(self, view: View, columns: int, t_start: int, t_end: int) -> int | None:
        """Columns the window moved on since the last draw on the same grid, else None."""
        choices = (view.gpu, view.window_s, columns)
        col_ns = (t_end - t_start) // columns
        last, self._grid = self._grid, (choices, t_end, col_ns)
        if last is None or last[0] != choices or last[2] != col_ns or t_end < last[1] \
                or (t_end - last[1]) % col_ns:
            return None
        return (t_end - last[1]) // col_ns

    def _strip(self, label: str, chars: str, codes: str, columns: int) -> Strip:
        styles = self._styles()
        segments = [Segment(f"{label[: LABEL_WIDTH - 1]:<{LABEL_WIDTH - 1}}│", styles["label"])]
        segments += [Segment(text, styles[style_key])
                     for text, style_key in row_runs(chars, codes, self._blanks_join)]
        return Strip(segments, LABEL_WIDTH + columns)
