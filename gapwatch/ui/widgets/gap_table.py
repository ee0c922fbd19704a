"""GapTable: the detector's gaps, newest on top: time, GPU, duration, kind, RX, hint; with the
prover's `/status` polled, also how many of the GPU's workers were proving during each gap
(`workers`: `1/2 busy`, from the latest snapshot the gap kept).

Every row names its GPU (`GPU7`), and the rows of the GPU the charts show carry the `▶` marker
of the header, so with 8 GPUs the table reads without counting columns.

Who drives it: `GapwatchApp.show(view)`. Drawn as plain fixed-width rich Text (not a DataTable):
open gaps grow on every sample, and rebuilding a handful of lines is far cheaper than updating
table cells. Only as many gaps as fit are built.

Selection (keys ↑/↓ through the app, the mouse here): a selected gap is kept by its id, so new
gaps arriving live do not move it; the rows scroll to keep it in view; Enter opens it
(`ui.gap_detail`), Esc lets go (the table follows the newest again). A click selects a row; a
click on the selected row opens it; the wheel moves the selection.
"""

from __future__ import annotations

from rich.text import Text

from gapwatch.core import fmt
from gapwatch.core.models import Gap
from gapwatch.ui.fit import index_digits
from gapwatch.ui.kinds import KINDS, gap_words
from gapwatch.ui.messages import GapChosen
from gapwatch.ui.view import View
from gapwatch.ui.widgets.text_lines import TextLines

#: Width of the kind column: the operator's words ("slow copies (pageable)").
KIND_WIDTH = 22
#: Width of the GPU column with one-digit GPU indices (`▶GPU5` and a space); a digit more
#: takes a column more (`fit.index_digits`), so `GPU12` never runs into its duration.
GPU_COLUMN = 6


class GapTable(TextLines):
    """Newest gaps first; an open gap is marked with '+' after its growing duration."""

    COMPONENT_CLASSES = {
        "gap-table--header",
        *(f"gap-table--{kind}" for kind in KINDS),
        "gap-table--hint",
        "gap-table--selected",
    }

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self._gaps: tuple[Gap, ...] = ()
        self._selected: int | None = None
        #: Width of the GPU column, for the widest GPU index of the session.
        self._gpu_width = GPU_COLUMN
        #: The selected gap's id (None: none selected, the newest rows are shown).
        self.selected_id: int | None = None
        #: Index (newest first) of the first row shown.
        self._top = 0

    # -- selection -----------------------------------------------------------------------------

    def newest_first(self) -> list[Gap]:
        return list(reversed(self._gaps))

    def _index(self) -> int | None:
        if self.selected_id is None:
            return None
        for i, g in enumerate(self.newest_first()):
            if g.gap_id == self.selected_id:
                return i
        return None

    def move(self, delta: int) -> None:
        """Select the gap `delta` rows down (older) from the selected one (the newest when none
        is selected)."""
        gaps = self.newest_first()
        if not gaps:
            return
        i = self._index()
        i = 0 if i is None else max(0, min(len(gaps) - 1, i + delta))
        self.selected_id = gaps[i].gap_id
        self._keep_in_view(i)
        self.set_rows(self.build_rows())

    def select_end(self, oldest: bool) -> None:
        gaps = self.newest_first()
        if gaps:
            self.move(len(gaps) if oldest else -len(gaps))

    def clear(self) -> bool:
        """Let go of the selection; False when there was none."""
        if self.selected_id is None:
            return False
        self.selected_id, self._top = None, 0
        self.set_rows(self.build_rows())
        return True

    def selected(self) -> Gap | None:
        """The selected gap, or None."""
        i = self._index()
        return None if i is None else self.newest_first()[i]

    def _room(self) -> int:
        return max(1, self.size.height - 1)

    def _keep_in_view(self, i: int) -> None:
        room = self._room()
        if i < self._top:
            self._top = i
        elif i >= self._top + room:
            self._top = i - room + 1

    def on_click(self, event: object) -> None:
        row = getattr(event, "y", 0) - 1  # the first line is the column heads
        gaps = self.newest_first()
        i = self._top + row
        if row < 0 or i >= len(gaps):
            return
        if gaps[i].gap_id == self.selected_id:
            self.post_message(GapChosen(gaps[i]))
            return
        self.selected_id = gaps[i].gap_id
        self.set_rows(self.build_rows())

    def on_mouse_scroll_down(self, event: object) -> None:
        self.move(1)

    def on_mouse_scroll_up(self, event: object) -> None:
        self.move(-1)

    def show(self, view: View) -> None:
        gaps = view.snap.gaps  # the ledger's view: retracted gaps are not in it
        gpu_width = GPU_COLUMN + index_digits(view.gpu_indices()) - 1
        if gaps != self._gaps or view.gpu != self._selected or gpu_width != self._gpu_width:
            self._gaps = gaps
            self._selected = view.gpu
            self._gpu_width = gpu_width
            # An open gap's growing duration changes its own row alone: only it is repainted.
            self.set_rows(self.build_rows())

    def build_rows(self) -> list[Text]:
        """The column heads, then the gaps that fit (newest first, the selection in view)."""
        style = self.component_style
        head = Text(no_wrap=True, overflow="ellipsis")
        room = max(0, self.size.height - 1)
        i = self._index()
        if i is None:
            self._top = 0
        else:
            self._keep_in_view(i)
        shown = self.newest_first()[self._top:self._top + room]
        # The worker column only when the prover's status was polled: otherwise as before.
        wk = any(g.prover_states for g in shown)
        # While a gap is selected the hint column's head says where it is and what the keys do.
        last = ("hint" if i is None else
                f"{i + 1}/{len(self._gaps)} enter: whole gap · esc: newest")
        head.append(
            f"{'time':<8} {'GPU':<{self._gpu_width}}{'dur':>6} {'kind':<{KIND_WIDTH}} "
            + ("workers  " if wk else "")
            + f"{'RX GB/s':>7}  {last}",
            style("gap-table--header"),
        )
        lines = [head]
        for gap in shown:
            line = Text(no_wrap=True, overflow="ellipsis")
            dur = fmt.duration(gap.duration_s) + ("+" if gap.is_open else " ")
            gpu = f"{'▶' if gap.gpu == self._selected else ' '}GPU{gap.gpu}"
            line.append(f"{fmt.clock(gap.start_s):<8} {gpu:<{self._gpu_width}}{dur:>6} ")
            line.append(f"{gap_words(gap.copies, gap.kind)[:KIND_WIDTH]:<{KIND_WIDTH}}",
                        style(f"gap-table--{gap.kind}"))
            if wk:
                letters = gap.prover_states[-1].workers if gap.prover_states else ""
                busy = f"{letters.count('P')}/{len(letters)} busy" if letters else "-"
                line.append(f" {busy:<8}")
            line.append(f" {fmt.gbps(gap.pcie_rx_bytes_per_s):>7}  ")
            line.append(fmt.visible(gap.hint) or "-", style("gap-table--hint"))
            if gap.gap_id == self.selected_id:
                line.stylize(style("gap-table--selected"))
            lines.append(line)
        if not self._gaps:
            lines.append(Text("no gaps detected", style="dim"))
        return lines
