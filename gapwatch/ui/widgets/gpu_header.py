"""GpuHeader: every GPU's state at a glance, the banners (paused, source ended), and the selected
GPU's verdict with its whole hint, in words.

Who drives it: `GapwatchApp` calls `show(view)` on each redraw. It is the first thing the user
reads in a glance at the tmux pane, so BREAKDOWN is a word AND a colour (NO_COLOR still reads).

How it fits any number of GPUs into any pane (`layout_rows`):
- one full line per GPU (name, state, busy share, SM, RX/TX and % of link) while they fit in
  the header's share of the pane;
- else compact cells, several per line (`▶0 BREAKDOWN  64% RX  4.1G`): 8 GPUs take 3 lines at 80
  columns;
- else the page of cells that holds the selected GPU and a line "GPU 0-8 of 16, +7 more: g to
  cycle" that names the worst state among the hidden ones.

The verdict is the selected GPU's (the one the charts show): its state, since when and what it
rests on now (the live window, `core.verdict`)
and the latest gap's hint, wrapped over as many lines as it needs; only when the pane is too
short for all of it is it cut, at a phrase boundary. Another GPU in a worse state gets one line
saying so. The header sets its own height to its line count, so nothing below is pushed off.
"""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.widget import Widget

from gapwatch.core import fmt
from gapwatch.core.hints import HINT_SEP
from gapwatch.core.models import Gap
from gapwatch.core.verdict import verdict_words
from gapwatch.engine.summary import gap_counts_text
from gapwatch.ui.fit import cut_at_phrase, fit_indices, fit_phrases
from gapwatch.ui.view import View

_STATE_CLASS = {
    "CHAINED": "gpu-header--chained",
    "GAPS": "gpu-header--gaps",
    "BREAKDOWN": "gpu-header--breakdown",
    "IDLE": "gpu-header--idle",
    "NO_DATA": "gpu-header--nodata",
}

#: Width of one compact GPU cell, and the space between two.
CELL_WIDTH = 26
CELL_GAP = 1


def latest_gap(gaps: tuple[Gap, ...], gpu: int) -> Gap | None:
    """The newest gap of `gpu` (the ledger's view holds no retracted gaps)."""
    for gap in reversed(gaps):
        if gap.gpu == gpu:
            return gap
    return None


def header_budget(screen_height: int) -> int:
    """Lines the header may use: a third of the pane (8 at 24 rows), never fewer than 5."""
    return max(5, screen_height // 3)


def layout_rows(n_gpus: int, width: int, gpu_rows: int) -> tuple[str, int]:
    """How to lay out `n_gpus` in at most `gpu_rows` lines of `width` cells.

    Returns:
        ("full", 1) one line per GPU; ("cells", k) k compact cells per line, all GPUs;
        ("page", k) k cells per line, a page of them plus a line naming the hidden ones.
    """
    if n_gpus <= gpu_rows:
        return "full", 1
    per_line = max(1, (width + CELL_GAP) // (CELL_WIDTH + CELL_GAP))
    if n_gpus <= per_line * gpu_rows:
        return "cells", per_line
    return "page", per_line


class GpuHeader(Widget):
    """The per-GPU state lines, the banners and the verdict."""

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
        "gpu-header--ended",
    }

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.lines: list[Text] = [Text("waiting for the first samples…")]

    def show(self, view: View) -> None:
        width = self.size.width or self.app.size.width
        lines = self.build(view, width, header_budget(self.app.size.height))
        if lines == self.lines:
            return
        relayout = len(lines) != len(self.lines)
        self.lines = lines
        if relayout:
            self.styles.height = len(lines)
        self.refresh(layout=relayout)

    def render(self) -> Group:
        return Group(*self.lines)

    # -- building -----------------------------------------------------------------------------

    def build(self, view: View, width: int, budget: int) -> list[Text]:
        """Every line of the header, each at most `width` cells, at most `budget` lines (the
        verdict gives way first, at a phrase boundary)."""
        width = max(20, width)
        banners = self._banners(view, width)
        also = self._also_line(view, width)
        gpus = view.gpu_indices()
        gpu_rows_budget = max(1, budget - len(banners) - len(also) - 3)
        rows = self._gpu_rows(view, gpus, width, gpu_rows_budget)
        verdict_budget = max(2, budget - len(rows) - len(banners) - len(also))
        verdict = self._verdict(view, width, verdict_budget)
        return rows + banners + verdict + also

    def _gpu_rows(self, view: View, gpus: list[int], width: int, budget: int) -> list[Text]:
        mode, per_line = layout_rows(len(gpus), width, budget)
        if mode == "full":
            return [self._full_line(view, gpu, width) for gpu in gpus]
        if mode == "cells":
            shown, hidden = gpus, []
            cell_rows = budget
        else:
            cell_rows = max(1, budget - 1)
            per_page = per_line * cell_rows
            pos = gpus.index(view.gpu) if view.gpu in gpus else 0
            first = pos // per_page * per_page
            shown = gpus[first:first + per_page]
            hidden = [g for g in gpus if g not in shown]
        lines: list[Text] = []
        for i in range(0, len(shown), per_line):
            line = Text(no_wrap=True)
            for j, gpu in enumerate(shown[i:i + per_line]):
                if j:
                    line.append(" " * CELL_GAP)
                self._cell(view, gpu, line)
            lines.append(line)
            if len(lines) >= cell_rows:
                break
        if hidden:
            lines.append(self._hidden_line(view, gpus, shown, hidden, width))
        return lines

    def _full_line(self, view: View, gpu: int, width: int) -> Text:
        """Name, state, busy, SM, RX and TX of one GPU: as many whole phrases as fit."""
        style = self.get_component_rich_style
        info = view.gpu_info(gpu)
        name = view.state_name(gpu)
        sample = view.latest(gpu)
        link = view.link_bytes_per_s(gpu)
        selected = gpu == view.gpu
        # (priority, text, style class): lower priorities stay when the line is narrow.
        phrases: list[tuple[int, str, str]] = [
            (0, f"{'▶' if selected else ' '}GPU{gpu}", "gpu-header--selected" if selected else ""),
            (5, f"{info.name.removeprefix('NVIDIA ')[:10]:<10}", ""),
            (0, f" {name} ", _STATE_CLASS[name]),
            (1, f"busy {fmt.frac_pct(view.snap.busy_share(gpu)):>4}", ""),
        ]
        if sample is not None:
            if sample.sm_active_pct is not None:
                phrases.append((3, f"SM {fmt.pct(sample.sm_active_pct):>4}", ""))
            else:
                phrases.append((3, f"util {fmt.pct(sample.gpu_util_pct):>4}", ""))
            rx, tx = sample.pcie_rx_bytes_per_s, sample.pcie_tx_bytes_per_s
            phrases.append((2, f"RX {fmt.gbps(rx)}GB/s {fmt.link_pct(rx, link)}", ""))
            phrases.append((4, f"TX {fmt.gbps(tx)}GB/s {fmt.link_pct(tx, link)}", ""))
        out = Text(no_wrap=True)
        for n, i in enumerate(fit_indices([(p, t) for p, t, _ in phrases], width, "  ")):
            _, text, cls = phrases[i]
            if n:
                out.append("  ")
            out.append(text, style(cls) if cls else "")
        return out

    def _cell(self, view: View, gpu: int, line: Text) -> None:
        """`▶0 BREAKDOWN  64% RX  4.1G` (CELL_WIDTH cells; RX in GB/s)."""
        style = self.get_component_rich_style
        name = view.state_name(gpu)
        sample = view.latest(gpu)
        rx = sample.pcie_rx_bytes_per_s if sample is not None else None
        selected = gpu == view.gpu
        line.append(f"{'▶' if selected else ' '}{gpu:<2}",
                    style("gpu-header--selected") if selected else "")
        line.append(f"{name:<9}", style(_STATE_CLASS[name]))
        line.append(f" {fmt.frac_pct(view.snap.busy_share(gpu)):>4} RX{fmt.gbps(rx):>5}"
                    f"{'G' if rx is not None else ' '}")

    def _hidden_line(self, view: View, gpus: list[int], shown: list[int], hidden: list[int],
                     width: int) -> Text:
        style = self.get_component_rich_style
        worst = max(hidden, key=view.severity)
        counts: dict[str, int] = {}
        for gpu in sorted(hidden, key=view.severity, reverse=True):
            counts[view.state_name(gpu)] = counts.get(view.state_name(gpu), 0) + 1
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"GPU {shown[0]}-{shown[-1]} of {len(gpus)}, +{len(hidden)} more: g to cycle")
        line.append(" · hidden: ")
        worst_name = view.state_name(worst)
        line.append(f"GPU{worst} {worst_name}", style(_STATE_CLASS[worst_name]))
        rest = ", ".join(f"{n} {state}" for state, n in counts.items())
        line.append(f" (of {rest})")
        line.truncate(width, overflow="ellipsis")
        return line

    def _banners(self, view: View, width: int) -> list[Text]:
        style = self.get_component_rich_style
        banners: list[Text] = []
        if view.ended:
            banner = Text(no_wrap=True)
            tag = " REPLAY ENDED " if view.source.startswith("replay") else " SOURCE ENDED "
            banner.append(tag, style("gpu-header--ended"))
            rest = fit_phrases([
                (0, f"gaps, final: {gap_counts_text(view.snap.gap_tally)}"),
                (2, "an open gap at the end is retracted, as `gapwatch report` counts it"),
                (1, "q quits"),
            ], width - len(tag) - 1, " · ")
            banner.append(" " + " · ".join(rest))
            banners.append(banner)
        if view.paused:
            banner = Text(no_wrap=True)
            banner.append(" PAUSED ", style("gpu-header--paused"))
            rest = fit_phrases([
                (0, "view frozen"),
                (2, "sampling and detection go on"),
                (1, "p resumes"),
            ], width - 9 - (len(view.note) + 9 if view.note else 0), " · ")
            banner.append(" " + "; ".join(rest))
            if view.note:
                banner.append(f"  since: {view.note}", style("gpu-header--breakdown"))
            banner.truncate(width)
            banners.append(banner)
        return banners

    def _also_line(self, view: View, width: int) -> list[Text]:
        """One line naming the GPUs in a worse state than the selected one (none: no line)."""
        mine = view.severity(view.gpu)
        worse = sorted((g for g in view.gpu_indices() if view.severity(g) > mine),
                       key=lambda g: (-view.severity(g), g))
        if not worse:
            return []
        style = self.get_component_rich_style
        line = Text(no_wrap=True)
        line.append("also: ")
        room = width - len("also: ") - len("  (g selects)")
        for i, gpu in enumerate(worse):
            name = view.state_name(gpu)
            piece = f"GPU{gpu} {name}"
            sep = ", " if i else ""
            if line.cell_len + len(sep) + len(piece) - 6 > room:
                line.append(f", +{len(worse) - i} more")
                break
            line.append(sep)
            line.append(piece, style(_STATE_CLASS[name]))
        line.append("  (g selects)")
        line.truncate(width)
        return [line]

    def _verdict(self, view: View, width: int, budget: int) -> list[Text]:
        """The selected GPU's state, reason and hint, wrapped; cut at a phrase if too long."""
        style = self.get_component_rich_style
        gpu = view.gpu
        state = view.state(gpu)
        name = view.state_name(gpu)
        head = f"GPU{gpu} {name}"
        # Since when, and what the state rests on now: the live window, never the count the
        # state was entered on (that froze at "2 pcie_starved gaps" while 13 were in view).
        body = verdict_words(state, view.snap.windows.get(gpu), view.detector)
        gap = latest_gap(view.snap.gaps, gpu) if name in ("GAPS", "BREAKDOWN", "IDLE") else None
        hint = gap.hint if gap is not None and gap.hint else ""
        # Everything that fits in `budget` lines of `width`: head + body, then the hint, cut at a
        # phrase boundary (its "; ") when the pane is too short for all of it.
        fixed = len(head) + 1 + len(body)
        limit = budget * width - width // 4  # leave room for word wrapping's ragged ends
        if hint:
            hint = cut_at_phrase(hint, max(0, limit - fixed - len("  hint: ")), HINT_SEP)
        text = Text()
        text.append(head, style(_STATE_CLASS[name]) if name in ("GAPS", "BREAKDOWN")
                    else style("gpu-header--verdict"))
        text.append(" " + body if body.startswith("since") else ": " + body)
        if hint:
            # After the data ended (IDLE) the hint is the last gap's, not a live one.
            text.append("  last gap: " if name == "IDLE" else "  hint: ", style("gpu-header--hint"))
            text.append(hint)
        lines = list(text.wrap(self.app.console, width, overflow="fold"))
        if len(lines) > budget:
            lines = lines[:budget]
            last = lines[-1]
            last.truncate(width - 2)
            last.append(" …")
        for line in lines:
            line.no_wrap = True
        return lines
