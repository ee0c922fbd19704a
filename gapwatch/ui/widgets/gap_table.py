"""GapTable: the detector's gaps, newest on top: time, GPU, duration, kind, RX, hint.

Who drives it: `GapwatchApp.show(view)`. Drawn as plain fixed-width rich Text (not a DataTable):
open gaps grow on every sample, and rebuilding a handful of lines is far cheaper than updating
table cells. Only as many gaps as fit are built.
"""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.widget import Widget

from gapwatch.core import fmt
from gapwatch.core.models import Gap
from gapwatch.ui.view import View


class GapTable(Widget):
    """Newest gaps first; an open gap is marked with '+' after its growing duration."""

    COMPONENT_CLASSES = {
        "gap-table--header",
        "gap-table--pcie_starved",
        "gap-table--transfer_bound",
        "gap-table--host_stall",
        "gap-table--unknown",
        "gap-table--hint",
    }

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self._gaps: tuple[Gap, ...] = ()

    def show(self, view: View) -> None:
        gaps = view.snap.gaps  # the ledger's view: retracted gaps are not in it
        if gaps != self._gaps:
            self._gaps = gaps
            self.refresh()

    def render(self) -> Group:
        style = self.get_component_rich_style
        head = Text(no_wrap=True, overflow="ellipsis")
        head.append(
            f"{'time':<8} {'GPU':>3} {'dur':>7} {'kind':<14} {'RX GB/s':>7}  hint",
            style("gap-table--header"),
        )
        lines = [head]
        room = max(0, self.size.height - 1)
        for gap in list(reversed(self._gaps))[:room]:
            line = Text(no_wrap=True, overflow="ellipsis")
            dur = fmt.duration(gap.duration_s) + ("+" if gap.is_open else " ")
            line.append(f"{fmt.clock(gap.start_s):<8} {gap.gpu:>3} {dur:>7} ")
            line.append(f"{gap.kind:<14}", style(f"gap-table--{gap.kind}"))
            line.append(f" {fmt.gbps(gap.pcie_rx_bytes_per_s):>7}  ")
            line.append(gap.hint or "-", style("gap-table--hint"))
            lines.append(line)
        if not self._gaps:
            lines.append(Text("no gaps detected", style="dim"))
        return Group(*lines)
