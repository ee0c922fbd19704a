"""GpuHeader: one line per GPU (state, busy %, SM %, RX/TX and % of link) and a line saying what is
wrong with the worst GPU, in words.

Who drives it: `GapwatchApp` calls `show(view)` on each redraw. It is the first thing the user
reads in a glance at the tmux pane, so BREAKDOWN is a word AND a colour (NO_COLOR still reads).
"""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.widget import Widget

from gapwatch.core import fmt
from gapwatch.core.models import STATE_SEVERITY, Gap
from gapwatch.ui.view import View

_STATE_CLASS = {
    "CHAINED": "gpu-header--chained",
    "GAPS": "gpu-header--gaps",
    "BREAKDOWN": "gpu-header--breakdown",
    "IDLE": "gpu-header--idle",
    "NO_DATA": "gpu-header--nodata",
}


def _latest_gap(gaps: tuple[Gap, ...], gpu: int) -> Gap | None:
    for gap in reversed(gaps):
        if gap.gpu == gpu:
            return gap
    return None


class GpuHeader(Widget):
    """The per-GPU state lines and the verdict line."""

    COMPONENT_CLASSES = {
        "gpu-header--chained",
        "gpu-header--gaps",
        "gpu-header--breakdown",
        "gpu-header--idle",
        "gpu-header--nodata",
        "gpu-header--selected",
        "gpu-header--verdict",
        "gpu-header--hint",
        "gpu-header--paused",
    }

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.lines: list[Text] = [Text("waiting for the first samples…")]

    def show(self, view: View) -> None:
        lines = self.build(view)
        if lines == self.lines:
            return
        # Layout (the costly part) only when the height may change: another line count, or
        # another verdict (it wraps). The GPU lines change every redraw but never wrap.
        relayout = len(lines) != len(self.lines) or lines[-1].plain != self.lines[-1].plain
        self.lines = lines
        self.refresh(layout=relayout)

    def render(self) -> Group:
        return Group(*self.lines)

    def build(self, view: View) -> list[Text]:
        """The GPU lines (cut at the pane's width), the pause banner, the verdict (wraps)."""
        style = self.get_component_rich_style
        lines: list[Text] = []
        worst: tuple[int, int] | None = None  # (severity, gpu)
        for gpu in view.gpu_indices():
            out = Text(no_wrap=True, overflow="ellipsis")
            lines.append(out)
            info = view.gpu_info(gpu)
            state = view.state(gpu)
            name = state.state if state else "NO_DATA"
            if worst is None or STATE_SEVERITY[name] > worst[0]:
                worst = (STATE_SEVERITY[name], gpu)
            marker = "▶" if gpu == view.gpu else " "
            out.append(f"{marker}GPU{gpu} ", style("gpu-header--selected") if marker != " " else "")
            out.append(f"{info.name.removeprefix('NVIDIA ')[:10]} ")
            out.append(f" {name} ", style(_STATE_CLASS[name]))
            busy = view.snap.busy_share(gpu)
            out.append(f" busy {fmt.frac_pct(busy):>4}")
            sample = view.latest(gpu)
            link = view.link_bytes_per_s(gpu)
            if sample is not None:
                if sample.sm_active_pct is not None:
                    out.append(f"  SM {fmt.pct(sample.sm_active_pct):>4}")
                else:
                    out.append(f"  util {fmt.pct(sample.gpu_util_pct):>4}")
                rx, tx = sample.pcie_rx_bytes_per_s, sample.pcie_tx_bytes_per_s
                out.append(f"  RX {fmt.gbps(rx)}GB/s {fmt.link_pct(rx, link)}")
                out.append(f"  TX {fmt.gbps(tx)}GB/s {fmt.link_pct(tx, link)}")
        if view.paused:
            banner = Text(no_wrap=True, overflow="ellipsis")
            banner.append(" PAUSED ", style("gpu-header--paused"))
            banner.append(" view frozen; sampling and detection go on (p resumes)")
            if view.note:
                banner.append(f"  since: {view.note}", style("gpu-header--breakdown"))
            lines.append(banner)
        if worst is not None:
            lines.append(self._verdict(view, worst[1]))
        return lines

    def _verdict(self, view: View, gpu: int) -> Text:
        """One line, in words: what the worst GPU is doing and what to do about it."""
        style = self.get_component_rich_style
        state = view.state(gpu)
        gap = _latest_gap(view.snap.gaps, gpu)
        line = Text()
        if state is None or state.state == "NO_DATA":
            line.append(f"GPU{gpu}: no data yet", style("gpu-header--verdict"))
            return line
        if state.state == "CHAINED":
            line.append(f"GPU{gpu}: chaining holds", style("gpu-header--verdict"))
            line.append(" — no starved gaps in the detector window")
            return line
        if state.state == "IDLE":
            line.append(f"GPU{gpu}: idle (no work)", style("gpu-header--verdict"))
            return line
        line.append(f"GPU{gpu} {state.state}: ", style(_STATE_CLASS[state.state]))
        line.append(state.reason or "idle gaps between GPU work")
        if gap is not None and gap.hint:
            line.append("  hint: ", style("gpu-header--hint"))
            line.append(gap.hint)
        return line
