"""Overview: the always-on charts of the selected GPU (SM activity, PCIe RX, PCIe TX, gap marks).

Who drives it: `GapwatchApp.show(view)` on each redraw; it passes the View down to its charts.
The rows each chart gets come from gapwatch.tcss (fr heights), so a taller pane gets taller
charts and 80x24 still fits one row per metric.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from gapwatch.core import fmt
from gapwatch.core.models import GpuSample
from gapwatch.ui.view import View
from gapwatch.ui.widgets.gap_strip import GapStrip
from gapwatch.ui.widgets.strip_chart import StripChart


def _busy_pct(sample: GpuSample) -> float | None:
    # SM activity decides "idle"; utilization.gpu stands in only where SM activity is unknown.
    return sample.sm_active_pct if sample.sm_active_pct is not None else sample.gpu_util_pct


def _rx(sample: GpuSample) -> float | None:
    return sample.pcie_rx_bytes_per_s


def _tx(sample: GpuSample) -> float | None:
    return sample.pcie_tx_bytes_per_s


class Overview(Vertical):
    """Title line, three strip charts, the gap strip."""

    _title: Text | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="overview-title")
        yield StripChart("SM %", _busy_pct, fixed_max=100, unit_label="", id="chart-sm")
        yield StripChart("RX GB/s", _rx, unit=1e9, floor=1.0, id="chart-rx")
        yield StripChart("TX GB/s", _tx, unit=1e9, floor=1.0, id="chart-tx")
        yield GapStrip(id="gap-strip")

    def show(self, view: View) -> None:
        title = Text(no_wrap=True, overflow="ellipsis")
        title.append(f"GPU{view.gpu} · last {fmt.window_label(view.window_s)}")
        title.append(
            "  gaps: S starved  T transfer-bound  H host stall  ? unknown  (blank = no data)"
        )
        if title != self._title:
            self._title = title
            self.query_one("#overview-title", Static).update(title)
        for chart in self.query(StripChart):
            chart.show(view)
        self.query_one(GapStrip).show(view)
