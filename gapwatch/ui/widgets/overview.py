"""Overview: the always-on charts of the selected GPU (busy share, PCIe RX, PCIe TX, gap marks).

Who drives it: `GapwatchApp._push(view)` on each redraw; it passes the View down to its charts.
The rows each chart gets come from gapwatch.tcss (fr heights), so a taller pane gets taller
charts and 80x24 still fits one row per metric. The title line says which GPU and window, and
the scales, with as many of its phrases as the width holds (`ui.fit`).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from gapwatch.core import fmt
from gapwatch.ui.fit import fit_phrases
from gapwatch.ui.kinds import legend
from gapwatch.ui.series import busy_cells, rx_cells, tx_cells
from gapwatch.ui.view import View
from gapwatch.ui.widgets.gap_strip import GapStrip
from gapwatch.ui.widgets.strip_chart import LABEL_WIDTH, StripChart


def title_phrases(view: View) -> list[tuple[int, str]]:
    """(priority, phrase) of the title line, in display order (lower priority kept first)."""
    link = view.link_bytes_per_s(view.gpu)
    return [
        (0, f"GPU{view.gpu} · last {fmt.window_label(view.window_s)}"),
        (3, f"busy = time with SM ≥ {view.detector.idle_sm_pct:g} %"),
        (1, f"RX/TX % of {fmt.rate(link)} link"),
        (2, f"gaps: {legend()}"),
        (4, "blank = no data"),
    ]


class Overview(Vertical):
    """Title line, three strip charts, the gap strip."""

    _title: str | None = None
    #: What the charts were last drawn for: (view choices, grid end of the chart columns).
    _drawn: tuple[object, ...] | None = None

    def compose(self) -> ComposeResult:
        # Kept, not queried: `show` runs once a second and a DOM query costs as much as a chart.
        self._title_line = Static(id="overview-title")
        self._charts = [
            StripChart("busy %", busy_cells, id="chart-sm"),
            StripChart("RX %link", rx_cells, id="chart-rx", one_row_sqrt=True),
            StripChart("TX %link", tx_cells, id="chart-tx", one_row_sqrt=True),
        ]
        self._gap_strip = GapStrip(id="gap-strip")
        yield self._title_line
        yield from self._charts
        yield self._gap_strip

    def show(self, view: View, every_column: bool = False) -> None:
        """Redraw the charts once a second (`every_column`: the app's once-a-second tick), and
        at once when the view's choices change (GPU, window, pause, size), never at every
        redraw: a repaint of the charts (every row shifts when the window advances) is the
        costliest thing the dashboard does, and a column covers 0.2 s (30 s window) to 4 s (10
        min), so advancing a few columns a second shows the same picture. A gap that opens or
        closes is said at once in the header and the gap table (words); its mark in the charts
        comes with the next second's columns, as every other figure of the charts does."""
        title = " · ".join(fit_phrases(title_phrases(view), self.size.width or 80, " · "))
        if title != self._title:
            self._title = title
            self._title_line.update(Text(title, no_wrap=True))
        chart = self._charts[0]
        columns = max(1, chart.size.width - LABEL_WIDTH)
        drawn = (view.gpu, view.window_s, view.paused, columns, chart.size.height)
        if drawn == self._drawn and not every_column:
            return
        self._drawn = drawn
        for c in self._charts:
            c.show(view)
        self._gap_strip.show(view)
