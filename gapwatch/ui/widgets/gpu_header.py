"""GpuHeader: every GPU's state at a glance, the banners (paused, source ended), and the selected
GPU's verdict with its whole hint, in words.

Who drives it: `GapwatchApp` calls `show(view)` on each redraw. It is the first thing the user
reads in a glance at the tmux pane, so BREAKDOWN is a word AND a colour (NO_COLOR still reads).

How it fits any number of GPUs into any pane (`layout_rows`):
- one full line per GPU while they fit, in fixed-width fields (`full_fields`): the state badge
  is at the same column whatever the numbers read, and which fields a narrow pane leaves out
  (the name first, then TX, SM...) depends on the width alone;
- else compact cells, several per line (`▶0 BREAKDOWN  64% RX  4.1G`): 8 GPUs take 3 lines at 80
  columns;
- else the page of cells that holds the selected GPU and a line "GPU 0-8 of 16, +7 more: g to
  cycle" that names the worst state among the hidden ones.

RX and TX are the charts' newest column that holds a reading (its highest reading,
`series.last_column_rates`: the last column, or the one before it while a GPM reading drawn
`gpm_lag_ms` back still falls there), so the header and the chart beside it say the same thing.

The header's height is fixed for a pane size and GPU count (`header_lines`, `verdict_lines`):
5 lines at 80x24. Under the GPU lines, in a fixed number of lines: the banners (PAUSED, SOURCE
ENDED), the selected GPU's verdict (its state, since when, what it rests on now: the live
window, `core.verdict`) with the latest gap's hint, cut at a phrase boundary to the lines left
("… d: whole hint"; the detail view gives the verdict more lines), and a line naming another
GPU in a worse state. Nothing below it moves when the hint grows, a banner appears or `p` is
pressed: the gap table and the log stay where they are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rich.console import Console
from rich.style import Style
from rich.text import Text

from gapwatch.core import fmt
from gapwatch.core.chaining import chain_cell_share
from gapwatch.core.health import (
    HEALTH_CELL_WIDTH,
    health_cell,
    health_cells,
    held_down_words,
    short_state,
    throttle_words,
)
from gapwatch.core.hints import HINT_SEP
from gapwatch.core.models import Gap
from gapwatch.core.verdict import STARVED, verdict_words
from gapwatch.cuzk.why_now import NO_CAUSE, WhyNow, why_now
from gapwatch.engine.summary import gap_counts_text
from gapwatch.ui.fit import fit_indices, fit_phrases, index_digits
from gapwatch.ui.kinds import kind_words
from gapwatch.ui.series import last_column_rates
from gapwatch.ui.view import View
from gapwatch.ui.widgets.strip_chart import LABEL_WIDTH
from gapwatch.ui.widgets.text_lines import TextLines

_STATE_CLASS = {
    "CHAINED": "gpu-header--chained",
    "GAPS": "gpu-header--gaps",
    "BREAKDOWN": "gpu-header--breakdown",
    "IDLE": "gpu-header--idle",
    "NO_DATA": "gpu-header--nodata",
}

#: Width of one compact GPU cell with one-digit GPU indices, and the space between two.
CELL_WIDTH = 26
#: Width of a GPU's chaining cell when there are no health readings (`0 chaining  87%`), with
#: one-digit GPU indices.
CHAIN_CELL_WIDTH = 15
CELL_GAP = 1


def latest_gap(gaps: tuple[Gap, ...], gpu: int) -> Gap | None:
    """The newest gap of `gpu` (the ledger's view holds no retracted gaps)."""
    for gap in reversed(gaps):
        if gap.gpu == gpu:
            return gap
    return None


def header_lines(screen_height: int) -> int:
    """Lines the header has in the main view, GPU lines included: 5 at 24 rows (so the charts
    and the gap table and log keep their rows), a quarter of a taller pane."""
    return max(5, (screen_height - 4) // 4)


#: Characters of verdict (state, window, hint) the main view makes room for: four lines at 80
#: columns, three at 200.
VERDICT_CHARS = 480


def verdict_lines(screen_height: int, width: int, gpu_rows: int,
                  detail_lines: int | None = None) -> int:
    """Lines under the GPU lines for the banners, the verdict and the "also" line: fixed for a
    pane size and GPU count, at least 2. In the detail view (`d`) the header may have
    `detail_lines` in all (what the panels below leave: the app works it out)."""
    want = -(-VERDICT_CHARS // max(20, width))
    if detail_lines is not None:
        return max(2, min(detail_lines - gpu_rows, 2 * want))
    # Three lines at least from 24 rows up (8 GPUs' cells take 3 of the 5): the state, the
    # window and a phrase of the hint; the panels below keep their least rows even then.
    least = 3 if screen_height >= 24 else 2
    return max(least, min(want, header_lines(screen_height) - gpu_rows))


def layout_rows(n_gpus: int, width: int, gpu_rows: int,
                cell_width: int = CELL_WIDTH) -> tuple[str, int]:
    """How to lay out `n_gpus` in at most `gpu_rows` lines of `width` cells (compact cells
    `cell_width` wide: wider for GPU indices of more digits).

    Returns:
        ("full", 1) one line per GPU; ("cells", k) k compact cells per line, all GPUs;
        ("page", k) k cells per line, a page of them plus a line naming the hidden ones.
    """
    if n_gpus <= gpu_rows:
        return "full", 1
    per_line = max(1, (width + CELL_GAP) // (cell_width + CELL_GAP))
    if n_gpus <= per_line * gpu_rows:
        return "cells", per_line
    return "page", per_line


class GpuHeader(TextLines):
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
        "gpu-header--health",
        "gpu-header--throttle",
    }

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        #: (store version, GPU) and what `why_now` said for them (`_change_words`).
        self._why: tuple[tuple[int, int], WhyNow] | None = None
        #: What the verdict was last wrapped from, and its lines (`_verdict`).
        self._verdict_drawn: tuple[tuple[object, ...], list[Text]] | None = None
        self._rows = [Text("waiting for the first samples…")]
        #: Lines the header may have in the detail view (set by the app while `d` shows it;
        #: None: the main view).
        self.detail_lines: int | None = None

    def no_data_ended(self, source: str) -> None:
        """The source ended before its first reading (a recording of its header alone, a
        replay window with no sample): said, where "waiting for the first samples…" stayed on
        screen for good, as if more were coming."""
        what = "the replay ended" if source.startswith("replay") else "the source ended"
        self.set_rows([Text(f"no readings: {what} before its first sample (nothing to show; "
                            "q quits)")])

    def show(self, view: View) -> None:
        width = self.size.width or self.app.size.width
        lines = self.build(view, width, self.app.size.height, self.detail_lines)
        if len(lines) != len(self._rows):
            self.styles.height = len(lines)
            self.refresh(layout=True)
        # Once a second most lines read the same (a GPU's figures, the verdict's window count
        # change): only the lines that differ are repainted.
        self.set_rows(lines)

    # -- building -----------------------------------------------------------------------------

    def build(self, view: View, width: int, height: int,
              detail_lines: int | None = None) -> list[Text]:
        """Every line of the header, each at most `width` cells: the GPU lines, then exactly
        `verdict_lines` lines (banners first, the verdict cut at a phrase to fit, the "also"
        line when there is room), so the header's height depends on the pane and the GPU count
        alone. In the detail view, up to `detail_lines` in all: as many as the verdict needs."""
        width = max(20, width)
        gpus = view.gpu_indices()
        rows, shown = self._gpu_rows(view, gpus, width, max(1, header_lines(height) - 2))
        if detail_lines is None:  # the detail view gives its rows to the hint and the plot
            # The health of the GPUs on the page above (all of them when they all fit): the
            # health of 200 GPUs took 40 lines at 80x24, every row of the pane.
            rows += self._health_rows(view, shown, width, index_digits(gpus))
        area = verdict_lines(height, width, len(rows), detail_lines)
        banners = self._banners(view, width)[:max(0, area - 1)]
        also = self._also_line(view, width)
        room = area - len(banners)
        if room - len(also) < 1:
            also = []
        verdict = self._verdict(view, width, room - len(also), span=width >= 120,
                                more=MORE_HINT if detail_lines is None else MORE_IN_SNAPSHOT)
        lines = rows + banners + verdict + also
        if detail_lines is not None:
            return lines  # the detail view: what the verdict needs, up to its lines
        return lines + [Text("") for _ in range(len(rows) + area - len(lines))]

    def _gpu_rows(self, view: View, gpus: list[int], width: int,
                  budget: int) -> tuple[list[Text], list[int]]:
        """The GPU lines within `budget` lines, and the GPUs they show (a page of them when
        they do not all fit)."""
        digits = index_digits(gpus)
        mode, per_line = layout_rows(len(gpus), width, budget, CELL_WIDTH + digits - 1)
        if mode == "full":
            return [self._full_line(view, gpu, width) for gpu in gpus], gpus
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
                self._cell(view, gpu, line, digits)
            lines.append(line)
            if len(lines) >= cell_rows:
                break
        if hidden:
            lines.append(self._hidden_line(view, gpus, shown, hidden, width))
        return lines, shown

    def _health_rows(self, view: View, gpus: list[int], width: int,
                     digits: int) -> list[Text]:
        """GPU health and the chaining figure of `gpus` (those the GPU lines show): one line
        in words for one GPU; else compact cells (`core.health.health_cell`, the index in
        `digits` columns), four to a line at 80 columns (8 GPUs: two lines). None until the
        first health reading or copy time (a source without health, e.g. the simulator, shows
        the chaining figure alone)."""
        snap = view.snap
        # A lasting state (a row remap failed or pending) is said with no health reading too
        # (`health_every_s = 0`, a replay of a recording without them): nothing else does once
        # the footer's 5 minutes are over.
        if not snap.health and not snap.chaining and not snap.util and \
                not any(snap.lasting_states(gpu) for gpu in gpus):
            return []
        style = self.component_style
        if len(view.gpu_indices()) == 1:
            return [self._health_words(view, gpus[0], width)]
        if not snap.health:  # no health readings (the simulator): the chaining figure alone
            return self._chain_rows(view, gpus, width, digits)
        per_line = max(1, (width + 1) // (HEALTH_CELL_WIDTH + digits))
        lost = snap.lost_gpus()
        lines = []
        for i in range(0, len(gpus), per_line):
            line = Text(no_wrap=True)
            for j, gpu in enumerate(gpus[i:i + per_line]):
                if j:
                    line.append(" ")
                if gpu in lost:  # its last readings are of a GPU that is gone
                    line.append(f"{gpu:<{digits}} LOST".ljust(HEALTH_CELL_WIDTH + digits - 1),
                                style("gpu-header--throttle"))
                    continue
                h = snap.health.get(gpu)
                chain = snap.chaining.get(gpu)
                # A lasting state (a row remap failed) flags the cell as throttling does; the
                # GPU alone, or the snapshot, says it in words.
                lasting = bool(snap.lasting_states(gpu))
                throttled = (h is not None and bool(held_down_words(h.clocks_event_mask))) \
                    or lasting
                cell = health_cell(gpu, h, chain, digits, flagged=lasting)
                line.append(cell, style("gpu-header--throttle") if throttled
                            else style("gpu-header--health"))
            lines.append(line)
        return lines

    def _chain_rows(self, view: View, gpus: list[int], width: int, digits: int) -> list[Text]:
        """`0 chaining 87%` per GPU (the index in `digits` columns), as many to a line as
        fit."""
        style = self.component_style
        cell_width = CHAIN_CELL_WIDTH + digits - 1
        per_line = max(1, (width + 1) // (cell_width + 1))
        lines = []
        for i in range(0, len(gpus), per_line):
            line = Text(no_wrap=True)
            for j, gpu in enumerate(gpus[i:i + per_line]):
                line.append(" " if j else "")
                states = view.snap.lasting_states(gpu)
                if states:  # the state in the chaining figure's place: it matters more
                    line.append(f"{gpu:<{digits}} {short_state(states[0])}".ljust(cell_width),
                                style("gpu-header--throttle"))
                    continue
                share = chain_cell_share(view.snap.chaining.get(gpu))
                line.append(f"{gpu:<{digits}} chaining {share:>4}".ljust(cell_width),
                            style("gpu-header--health"))
            lines.append(line)
        return lines

    def _health_words(self, view: View, gpu: int, width: int) -> Text:
        """`health 60G/141G · 52°C · 450/700W · power cap · chaining 92 % (copy trace) ·
        GPU-Util 97%` (nvidia-smi's figure over the chaining window, which the line above's
        busy share is of: `core.util_figure`)."""
        style = self.component_style
        line = Text(no_wrap=True, overflow="ellipsis")
        if gpu in view.snap.lost_gpus():
            # Its last temperature and power went on showing, as if read now.
            line.append("LOST: NVML reads this GPU no more (fell off the bus or needs a reset)",
                        style("gpu-header--throttle"))
            line.truncate(width, overflow="ellipsis")
            return line
        h = view.snap.health.get(gpu)
        chain = view.snap.chaining.get(gpu)
        cells = health_cells(h) if h is not None else []
        states = view.snap.lasting_states(gpu)
        for n, words in enumerate(states):  # first: they matter more than a reading
            line.append(f"{words}{' · ' if cells or chain or n < len(states) - 1 else ''}",
                        style("gpu-header--throttle"))
        if cells:
            line.append("health ", style("gpu-header--health"))
        # All the slowing reasons are said; only heat and hardware slowdowns in the warning
        # colour (the power cap is a loaded GPU's normal).
        throttle = throttle_words(h.clocks_event_mask) if h is not None else ""
        held = bool(held_down_words(h.clocks_event_mask)) if h is not None else False
        for i, cell in enumerate(cells):
            if i:
                line.append(" · ")
            line.append(cell, style("gpu-header--throttle") if held and cell == throttle
                        else "")
        if chain is not None:
            line.append(" · " if cells else "")
            basis = "copy trace" if chain.basis == "copies" else "PCIe+SM"
            # No copies to speak of: no figure, so nothing it was estimated from.
            line.append(f"{chain.words(compact=True)} ({basis})" if chain.has_copies()
                        else chain.words(compact=True))
        util = view.snap.util.get(gpu)
        if util is not None:  # what nvidia-smi shows, beside the busy share above it
            line.append(f"{' · ' if cells or chain else ''}{util.cell()}")
        line.truncate(width, overflow="ellipsis")
        return line

    def _full_line(self, view: View, gpu: int, width: int) -> Text:
        """Name, state, busy, SM, RX and TX of one GPU in fixed-width fields (`full_fields`)."""
        style = self.component_style
        out = Text(no_wrap=True)
        for n, (text, cls) in enumerate(full_fields(view, gpu, width)):
            if n:
                out.append(FIELD_SEP)
            out.append(text, style(cls) if cls else "")
        return out

    def _cell(self, view: View, gpu: int, line: Text, digits: int) -> None:
        """`▶0 BREAKDOWN  64% RX  4.1G` (CELL_WIDTH cells with one-digit indices, the index in
        `digits` columns and a space; RX in GB/s, the charts' last column)."""
        style = self.component_style
        name = view.state_name(gpu)
        rx, _ = last_column_rates(view, gpu, chart_columns(self.app.size.width))
        selected = gpu == view.gpu
        line.append(f"{'▶' if selected else ' '}{gpu:<{digits}} ",
                    style("gpu-header--selected") if selected else "")
        line.append(f"{name:<9}", style(_STATE_CLASS[name]))
        line.append(f" {fmt.frac_pct(view.snap.busy_share(gpu)):>4} RX{fmt.gbps(rx):>5}"
                    f"{'G' if rx is not None else ' '}")

    def _hidden_line(self, view: View, gpus: list[int], shown: list[int], hidden: list[int],
                     width: int) -> Text:
        style = self.component_style
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
        style = self.component_style
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
            # A replay pauses its feeding too (`ReplayDriver.toggle_pause`): nothing goes on.
            going = "the replay waits" if view.source.startswith("replay") \
                else "sampling and detection go on"
            rest = fit_phrases([
                (0, "view frozen"),
                (2, going),
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
        style = self.component_style
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

    def _change_words(self, view: View, gpu: int, gaps: bool = True) -> str:
        """`; set [scheduler] max_batch_size = 1; payoff ~1.80x over the last 30 s (12 gaps)` for
        the GPU's gaps in the window
        (`cuzk.why_now`, the alerts' and --on-event's facts: the setting with the way its
        advice moves it), "" when no setting closes them; worked out once per store version.
        `gaps` False: the payoff without its own gap count where the verdict says its span
        (`WhyNow.payoff_words`), for lines too short for it."""
        key = (view.snap.version, gpu)
        if self._why is None or self._why[0] != key:
            self._why = (key, why_now(view.snap, gpu))
        why = self._why[1]
        if why.setting == NO_CAUSE:
            return ""
        # The payoff with what it rests on, as the alert and the event say it (entered on 2
        # gaps, "(payoff ~1.0x)" read as nothing to gain), less what the verdict's words say
        # already: its span ("in the last 30 s") and, where the same, its count.
        span_s, count = said_window(view, gpu)
        pay = f"; {why.payoff_words(span_s, count, gaps)}" if why.payoff_gain is not None else ""
        return f"; {why.change_words()}{pay}"

    def _verdict(self, view: View, width: int, budget: int, span: bool = True,
                 more: str = "") -> list[Text]:
        """The selected GPU's state, since when, what it rests on now, and the latest gap's
        hint, wrapped to at most `budget` lines: the hint is cut at a phrase boundary (its
        "; "), saying where the rest is; a verdict too long even without a hint is cut at the
        last line."""
        style = self.component_style
        gpu = view.gpu
        state = view.state(gpu)
        name = view.state_name(gpu)
        window = view.snap.windows.get(gpu)
        # Since when, and what the state rests on now: the live window, never the count the
        # state was entered on (that froze at "2 pcie_starved gaps" while 13 were in view).
        words = operator_words(verdict_words(state, window, view.detector, span=span))
        brief = operator_words(
            verdict_words(state, window, view.detector, span=span, witness=False))
        flagged = name in ("GAPS", "BREAKDOWN")
        change = self._change_words(view, gpu) if flagged else ""
        # The payoff's figure without its own count (the verdict says the window it is over):
        # the last shortening, never a payoff cut inside (`payoff ~1.62x over …`).
        bare = self._change_words(view, gpu, gaps=False) if flagged else ""
        chain = view.snap.chaining.get(gpu)
        # A fall of the chaining figure is said here ("chaining 93%→41%"); the figure itself
        # is on the health line.
        fall = f"; {chain.words(compact=True)}" \
            if chain is not None and name in ("GAPS", "BREAKDOWN") and chain.fell() else ""
        health = view.snap.health.get(gpu)
        throttle = held_down_words(health.clocks_event_mask) if health is not None else ""
        lasting = (f"; clocks held down: {throttle}" if throttle else "") + "".join(
            f"; {words}" for words in view.snap.lasting_states(gpu))  # the GPU's `!` in words
        # The flag says what to do about it at once: the setting and its payoff, before the
        # hint. Where the lines are short, whole phrases go, never the setting: first the
        # chaining fall (the health line has the figure), then the copy trace's witness (the
        # hint says the memory too, `d` shows it), then the payoff's own gap count.
        bodies = tuple(dict.fromkeys((words + change + fall + lasting,
                                      words + change + lasting,
                                      brief + change + lasting,
                                      brief + bare + lasting)))
        gap = latest_gap(view.snap.gaps, gpu) if name in ("GAPS", "BREAKDOWN", "IDLE") else None
        phrases = tuple(gap.hint.split(HINT_SEP)) if gap is not None and gap.hint else ()
        # After the data ended (IDLE) the hint is the last gap's, not a live one.
        label = "  last gap: " if name == "IDLE" else "  hint: "
        head = (f"GPU{gpu} {name}", style(_STATE_CLASS[name])
                if name in ("GAPS", "BREAKDOWN") else style("gpu-header--verdict"))
        key = (head, bodies, phrases, label, more, width, budget, style("gpu-header--hint"))
        # The same words as at the last repaint (most seconds): the same lines, not wrapped
        # again (a long hint is wrapped once per phrase it may drop).
        if self._verdict_drawn is None or self._verdict_drawn[0] != key:
            self._verdict_drawn = (key, wrap_verdict(
                head, bodies, phrases, label, more, width, budget,
                style("gpu-header--hint"), self.app.console))
        return list(self._verdict_drawn[1])


def said_window(view: View, gpu: int) -> tuple[float | None, int | None]:
    """The span and the gap count the verdict's words lead with (`core.verdict.window_words`:
    "14 gaps (slow copies) in the last 30 s"): the window's span, and its pcie_starved gaps in
    BREAKDOWN, its gaps in GAPS where they are of one kind (several kinds are counted each);
    None where the words do not say it."""
    window = view.snap.windows.get(gpu)
    name = view.state_name(gpu)
    if window is None or name not in ("GAPS", "BREAKDOWN"):
        return None, None
    if name == "BREAKDOWN":
        return window.window_s, window.gaps.get(STARVED, 0)
    return window.window_s, window.n_gaps if len(window.gaps) == 1 else None


def verdict_text(head: tuple[str, Style], body: str, phrases: Sequence[str], keep: int,
                 label: str, more: str, hint_style: Style) -> Text:
    """One verdict on one line: the head, the body, the first `keep` hint phrases and where the
    rest is. No phrase kept: where the hint is (`d: the hint`), never a label with nothing after
    it (`hint: … d: whole hint` said no word of it); `more` empty: nothing about the hint."""
    text = Text()
    text.append(*head)
    text.append(" " + body if body.startswith("since") else ": " + body)
    if keep:
        text.append(label, hint_style)
        text.append(HINT_SEP.join(phrases[:keep]))
        if keep < len(phrases):
            text.append(f"{HINT_SEP}… {more}", hint_style)
    elif phrases and more:
        what = "the last gap's hint" if "last gap" in label else "the hint"
        text.append("  " + HINT_ELSEWHERE.get(more, more).format(what=what), hint_style)
    return text


def wrap_verdict(head: tuple[str, Style], bodies: Sequence[str], phrases: Sequence[str],
                 label: str, more: str, width: int, budget: int, hint_style: Style,
                 console: Console) -> list[Text]:
    """The verdict wrapped to at most `budget` lines of `width`, cut only between phrases.

    `bodies`: the verdict's words, whole first, then with fewer phrases (the setting to change
    is in each: it is never cut). The first body that fits with the most hint phrases wins
    (down to none, saying where the hint is); where even the last does not, it goes without
    that pointer, and only then is the last line cut (a pane too narrow for any of it)."""
    tries = [(body, keep, more) for body in bodies
             for keep in range(len(phrases), -1, -1)]
    tries.append((bodies[-1], 0, ""))
    lines: list[Text] = []
    for body, keep, pointer in tries:
        text = verdict_text(head, body, phrases, keep, label, pointer, hint_style)
        if text.cell_len > budget * width:
            continue  # cannot fit however it wraps: not worth wrapping
        lines = list(text.wrap(console, width, overflow="fold"))
        if len(lines) <= budget:
            break
    else:
        text = verdict_text(head, bodies[-1], phrases, 0, label, "", hint_style)
        lines = list(text.wrap(console, width, overflow="fold"))
    if len(lines) > budget:
        lines = lines[:max(1, budget)]
        lines[-1].truncate(width - 2)
        lines[-1].append(" …")
    for line in lines:
        line.no_wrap = True
    return lines


#: "11 pcie_starved gaps" in the core's verdict words (JSON and /metrics keep the kind names).
_KIND_COUNT = re.compile(r"\b(\d+) (pcie_starved|transfer_bound|host_stall|unknown) (gaps?)\b")


def operator_words(text: str) -> str:
    """The core's verdict as an operator reads it: "11 gaps (slow copies) in the last 30 s"."""
    return _KIND_COUNT.sub(lambda m: f"{m[1]} {m[3]} ({kind_words(m[2])})", text)


#: Where the rest of a hint cut to the header's lines is: the detail view, and where even its
#: lines do not hold it, a snapshot's summary.md (and `gapwatch report`).
MORE_HINT = "d: whole hint"
MORE_IN_SNAPSHOT = "s: a snapshot has it whole"
#: Where the hint is when no phrase of it fits the verdict's lines.
HINT_ELSEWHERE = {MORE_HINT: "d: {what}", MORE_IN_SNAPSHOT: "s: a snapshot has {what}"}
#: Between two fields of a full GPU line.
FIELD_SEP = "  "
#: Cells of a GPU's name in its full line (`H200 SXM5…`).
NAME_WIDTH = 10


def chart_columns(screen_width: int) -> int:
    """Columns of the charts (the full width, less their labels): the header's RX/TX are read
    on the same grid."""
    return max(1, screen_width - LABEL_WIDTH)


def full_fields(view: View, gpu: int, width: int) -> list[tuple[str, str]]:
    """The fields of one GPU's full line, (text, style class), each of a fixed width: which ones
    fit `width` is decided by their widths alone (never by what the numbers read), so the state
    badge and every figure keep their columns from one redraw to the next."""
    info = view.gpu_info(gpu)
    name = view.state_name(gpu)
    sample = view.latest(gpu)
    link = view.link_bytes_per_s(gpu)
    selected = gpu == view.gpu
    rx, tx = last_column_rates(view, gpu, chart_columns(width))
    sm = sample.sm_active_pct if sample is not None else None
    util = sample is not None and sm is None and sample.gpu_util_pct is not None
    level = f"util {fmt.pct(sample.gpu_util_pct):>4}" if util and sample is not None \
        else f"SM   {fmt.pct(sm):>4}"
    # (priority, text, style class) in display order: lower priorities stay when narrow.
    fields: list[tuple[int, str, str]] = [
        (0, f"{'▶' if selected else ' '}GPU{gpu:<{max(2, index_digits(view.gpu_indices()))}}",
         "gpu-header--selected" if selected else ""),
        # Outside text (a recording's header): written out, then cut and padded by terminal
        # cells, so a wide, zero-width or escaped character never moves the badge after it.
        (5, fmt.fit(fmt.visible(info.name.removeprefix("NVIDIA ")), NAME_WIDTH), ""),
        (0, f" {name:<9} ", _STATE_CLASS[name]),
        (1, f"busy {fmt.frac_pct(view.snap.busy_share(gpu)):>4}", ""),
        (3, level, ""),
        (2, f"RX {fmt.rate(rx):>9} {fmt.link_pct(rx, link):>4}", ""),
        (4, f"TX {fmt.rate(tx):>9} {fmt.link_pct(tx, link):>4}", ""),
    ]
    kept = fit_indices([(p, t) for p, t, _ in fields], width, FIELD_SEP)
    return [(fields[i][1], fields[i][2]) for i in kept]
