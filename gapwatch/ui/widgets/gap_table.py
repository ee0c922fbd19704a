"""GapTable: the detector's gaps, newest on top: time, GPU, duration, kind, RX, hint; with the
prover's `/status` polled, also the GPU's worker states during each gap (`wk`: P proving, I idle,
from the latest snapshot the gap kept).

Every row names its GPU (`GPU7`), and the rows of the GPU the charts show carry the `▶` marker
of the header, so with 8 GPUs the table reads without counting columns.

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
from gapwatch.ui.kinds import KINDS
from gapwatch.ui.view import View


class GapTable(Widget):
    """Newest gaps first; an open gap is marked with '+' after its growing duration."""

    COMPONENT_CLASSES = {
        "gap-table--header",
        *(f"gap-table--{kind}" for kind in KINDS),
        "gap-table--hint",
    }

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self._gaps: tuple[Gap, ...] = ()
        self._selected: int | None = None

    def show(self, view: View) -> None:
        gaps = view.snap.gaps  # the ledger's view: retracted gaps are not in it
        if gaps != self._gaps or view.gpu != self._selected:
            self._gaps = gaps
            self._selected = view.gpu
            self.refresh()

    def render(self) -> Group:
        style = self.get_component_rich_style
        head = Text(no_wrap=True, overflow="ellipsis")
        room = max(0, self.size.height - 1)
        shown = list(reversed(self._gaps))[:room]
        # The worker column only when the prover's status was polled: otherwise as before.
        wk = any(g.prover_states for g in shown)
        head.append(
            f"{'time':<8} {'GPU':<6}{'dur':>6} {'kind':<14} " + ("wk  " if wk else "")
            + f"{'RX GB/s':>7}  hint",
            style("gap-table--header"),
        )
        lines = [head]
        for gap in shown:
            line = Text(no_wrap=True, overflow="ellipsis")
            dur = fmt.duration(gap.duration_s) + ("+" if gap.is_open else " ")
            gpu = f"{'▶' if gap.gpu == self._selected else ' '}GPU{gap.gpu}"
            line.append(f"{fmt.clock(gap.start_s):<8} {gpu:<6}{dur:>6} ")
            line.append(f"{gap.kind:<14}", style(f"gap-table--{gap.kind}"))
            if wk:
                letters = gap.prover_states[-1].workers if gap.prover_states else ""
                line.append(f" {(letters or '-')[:3]:<3}")
            line.append(f" {fmt.gbps(gap.pcie_rx_bytes_per_s):>7}  ")
            line.append(fmt.visible(gap.hint) or "-", style("gap-table--hint"))
            lines.append(line)
        if not self._gaps:
            lines.append(Text("no gaps detected", style="dim"))
        return Group(*lines)
