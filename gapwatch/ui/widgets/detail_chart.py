"""DetailChart: a plotext chart of one GPU (SM %, PCIe RX/TX GB/s, gaps) for close study.

Who drives it: `GapwatchApp` shows it instead of the Overview when the user presses `d`. plotext
costs 15-30 ms per build (shared/reference/ui-performance.md), so this chart is rebuilt only when
its data, window, GPU or size changed, and at most once per `ui.detail_redraw_s`; a change inside
that interval is drawn when the interval ends (a one-shot timer), so the chart is never stale.

Data is reduced to the chart's width first, keeping each column's minimum and maximum (drawn as
the line's envelope), and split at missing columns so plotext never bridges a hole.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.timer import Timer
from textual_plotext import PlotextPlot

from gapwatch.core.models import GpuSample
from gapwatch.ui.reduce import Column, gap_columns, reduce_minmax
from gapwatch.ui.view import View

_KIND_COLOR = {"pcie_starved": "red", "transfer_bound": "yellow", "host_stall": "magenta"}


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

    def _maybe_draw(self) -> None:
        view = self._view
        if view is None or not self.display or self.size.width < 20 or self.size.height < 6:
            return  # hidden, or not laid out yet: on_resize calls again once it has a size
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
        columns = max(10, self.size.width - 12)
        t0, t1 = view.t_start_ns, view.t_end_ns
        samples = view.samples_since(view.gpu, t0)
        x_of = [-view.window_s + (i + 0.5) * view.window_s / columns for i in range(columns)]

        def series(value_of: Callable[[GpuSample], float | None], unit: float) -> list[Column]:
            pts = [
                (s.t_mono_ns, None if (v := value_of(s)) is None else v / unit)
                for s in samples
            ]
            return reduce_minmax(pts, t0, t1, columns)

        def busy(s: GpuSample) -> float | None:
            return s.sm_active_pct if s.sm_active_pct is not None else s.gpu_util_pct

        def rx(s: GpuSample) -> float | None:
            return s.pcie_rx_bytes_per_s

        def tx(s: GpuSample) -> float | None:
            return s.pcie_tx_bytes_per_s

        # Two stacked plots with their own y axes: plotext's second y axis proved unreliable.
        plt.subplots(2, 1)
        top = plt.subplot(1, 1)
        for xs, ys in envelope_segments(series(busy, 1.0), x_of):
            top.plot(xs, ys, color="green", marker="braille")
        marks = gap_columns(view.snap.gaps, view.gpu, t0, t1, columns)
        for kind, color in _KIND_COLOR.items():
            xs = [x for x, m in zip(x_of, marks, strict=True) if m == kind]
            if xs:
                top.scatter(xs, [-4.0] * len(xs), color=color, marker="■")
        top.title(f"GPU{view.gpu} SM % (envelope of min/max)  gaps: ■ red starved, "
                  "yellow transfer-bound, magenta host stall")
        top.xlim(-view.window_s, 0)
        top.ylim(-8, 105)
        bottom = plt.subplot(2, 1)
        for value_of, color in ((rx, "cyan"), (tx, "blue")):
            for xs, ys in envelope_segments(series(value_of, 1e9), x_of):
                bottom.plot(xs, ys, color=color, marker="braille")
        bottom.title("PCIe GB/s: RX (host to GPU) cyan, TX blue")
        bottom.xlim(-view.window_s, 0)
        bottom.xlabel("seconds before the newest sample")
        self.builds += 1
        self.refresh()
