"""DetailChart: a plotext chart of one GPU (busy %, PCIe RX/TX % of link, gaps) for close study.

Who drives it: `GapwatchApp` shows it instead of the Overview when the user presses `d`. plotext
costs 15-30 ms per build (shared/reference/ui-performance.md), so this chart is rebuilt only when
its data, window, GPU or size changed, and at most once per `ui.detail_redraw_s`; a change inside
that interval is drawn when the interval ends (a one-shot timer), so the chart is never stale.

Data is reduced to the chart's width first, with the same rules as the always-on charts
(`ui.series`: busy share per column, the detector's gaps as marks, rates as % of the link), and
split at missing columns so plotext never bridges a hole. Axes are fixed at 0-100 (no room below
zero for markers: gap marks sit on the zero line). Where the pane is short (80x24) it draws the
busy plot alone, with its x labels spaced so they never run into each other. The verdict above
it comes first: when the whole hint leaves the chart fewer than `MIN_ROWS` rows (the app sizes
it), it is one line saying so instead of a plot with no room for data.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import RenderResult
from textual.timer import Timer
from textual_plotext import PlotextPlot

from gapwatch.core import fmt
from gapwatch.ui.fit import fit_phrases
from gapwatch.ui.kinds import KINDS, legend
from gapwatch.ui.reduce import Column
from gapwatch.ui.series import busy_cells, rx_cells, tx_cells
from gapwatch.ui.view import View


def envelope_segments(
    cols: list[Column], x_of: list[float]
) -> list[tuple[list[float], list[float]]]:
    """The envelope of reduced columns as line segments: for each contiguous run of present
    columns, one line through the maxima and one through the minima (a dip inside a busy column
    shows on the lower line). A missing column ends the run, so no line bridges a hole."""
    segments: list[tuple[list[float], list[float]]] = []
    xs: list[float] = []
    lows: list[float] = []
    highs: list[float] = []

    def close() -> None:
        if xs:
            segments.append((list(xs), list(highs)))
            if lows != highs:
                segments.append((list(xs), list(lows)))
            xs.clear()
            lows.clear()
            highs.clear()

    for x, col in zip(x_of, cols, strict=True):
        if col.lo is None or col.hi is None:
            close()
            continue
        xs.append(x)
        lows.append(col.lo)
        highs.append(col.hi)
    close()
    return segments


#: Rows the busy plot needs to show data: plotext's frame, the 0 / 50 / 100 ticks, the x labels
#: and their caption (with fewer, the frame and labels take every row).
MIN_ROWS = 7


def short_note(width: int) -> str:
    """What the chart says in place of a plot when the verdict above took its rows."""
    return " · ".join(fit_phrases([
        (0, f"busy plot: needs {MIN_ROWS} rows"),
        (2, "the whole hint has them"),
        (1, "d: back to the charts"),
    ], width, " · "))


class DetailChart(PlotextPlot):
    """plotext chart of the selected GPU, throttled."""

    def __init__(self, min_interval_s: float, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self._min_interval_s = min_interval_s
        self._view: View | None = None
        self._drawn_key: tuple[int, float, int, int, int] | None = None
        self._last_build = 0.0
        self._pending: Timer | None = None
        #: Number of plotext rebuilds (the bench and tests read it).
        self.builds = 0

    def show(self, view: View) -> None:
        self._view = view
        self._maybe_draw()

    def on_resize(self) -> None:
        self._maybe_draw()

    def render(self) -> RenderResult:
        if self.size.height < MIN_ROWS:
            return Text(short_note(self.size.width), no_wrap=True, overflow="ellipsis",
                        style="italic")
        return super().render()

    def _maybe_draw(self) -> None:
        view = self._view
        if view is None or not self.display or self.size.width < 20 \
                or self.size.height < MIN_ROWS:
            return  # hidden, too short, or not laid out yet: on_resize calls again
        key = (view.snap.version, view.window_s, view.gpu, self.size.width, self.size.height)
        if key == self._drawn_key:
            return
        wait = self._last_build + self._min_interval_s - time.monotonic()
        if wait > 0:
            if self._pending is None:
                self._pending = self.set_timer(wait, self._flush)
            return
        self._drawn_key = key
        self._last_build = time.monotonic()
        self._build(view)

    def _flush(self) -> None:
        self._pending = None
        self._maybe_draw()

    def _build(self, view: View) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        width, height = self.size.width, self.size.height
        columns = max(10, width - 12)
        t0, t1 = view.grid(columns)
        window_s = (t1 - t0) / 1e9
        x_of = [-window_s + (i + 0.5) * window_s / columns for i in range(columns)]
        # x ticks: at most one label per 16 cells, so "-45" and the y labels never collide.
        n_ticks = max(2, min(7, width // 16))
        xticks = [-window_s + i * window_s / (n_ticks - 1) for i in range(n_ticks)]
        xlabels = [f"{x:.0f}" if x else "now" for x in xticks]
        # Two stacked plots where there is room for both (16 rows); at 80x24 the busy plot alone.
        two = height >= 16
        if two:
            plt.subplots(2, 1)
            top = plt.subplot(1, 1)
        else:
            top = plt
        cells = busy_cells(view, columns, t0, t1)
        shares = [Column(None, None) if share is None else Column(share * 100, share * 100)
                  for share, _ in cells]
        for xs, ys in envelope_segments(shares, x_of):
            top.plot(xs, ys, color="green", marker="braille")
        for kind, look in KINDS.items():
            xs = [x for x, (_, mark) in zip(x_of, cells, strict=True) if mark == kind]
            if xs:
                top.scatter(xs, [0.0] * len(xs), color=look.plot, marker="■")
        top.title(f"GPU{view.gpu} busy % of each column's time (SM ≥ "
                  f"{view.detector.idle_sm_pct:g} %); ■ gaps: {legend(plot=True)}")
        top.xlim(-window_s, 0)
        top.ylim(0, 100)
        top.yticks([0, 50, 100])
        top.xticks(xticks, xlabels)
        if not two:
            top.xlabel("seconds before the newest sample (d: back; the RX/TX plot needs 16 rows)")
            self.builds += 1
            self.refresh()
            return
        bottom = plt.subplot(2, 1)
        link = view.link_bytes_per_s(view.gpu)
        for cells_of, color in ((rx_cells, "cyan"), (tx_cells, "blue")):
            rates = [Column(None, None) if share is None else Column(share * 100, share * 100)
                     for share, _ in cells_of(view, columns, t0, t1)]
            for xs, ys in envelope_segments(rates, x_of):
                bottom.plot(xs, ys, color=color, marker="braille")
        bottom.title(f"PCIe % of the {fmt.rate(link)} link: RX (host to GPU) cyan, TX blue")
        bottom.xlim(-window_s, 0)
        bottom.ylim(0, 100)
        bottom.yticks([0, 50, 100])
        bottom.xticks(xticks, xlabels)
        bottom.xlabel("seconds before the newest sample")
        self.builds += 1
        self.refresh()
