"""HelpScreen: the keys, the legend of the charts, the whole status line, and what to change,
over the dashboard.

Who pushes it: `GapwatchApp.action_help`, with the runtime's status phrases, the snapshots
written so far (the footer has room for only part of them at 80 columns) and what to change so
far (`gapwatch.cuzk.advice.session_advice`: the PoSt that failed, were lost, late or at risk
first, then the cuzk setting for each stall of the gaps, its evidence, whether it is a guess).
Any of escape, q or ? closes it; the arrow keys, PgUp/PgDn and the mouse wheel scroll it.

Every line of `HELP` is at most 72 characters, so at 80 columns (border and padding included)
no line wraps into an orphan.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gapwatch.core.fmt import visible
from gapwatch.ui.toasts import repaint_where_toasts_leave

HELP = """\
gapwatch: why the GPU stops being busy   (↑↓ PgDn scroll, esc closes)

keys
  ?  this help          q  quit (the recording is closed whole)
  s  snapshot: a folder with the dashboard (SVG), a replayable
     recording, the gaps (JSON) and summary.md
  p  pause the view (sampling, detection, auto-snapshots go on)
  g  next GPU           w  chart window (30 s / 60 s / 2 min / 10 min)
  d  detail chart (plotext) of the selected GPU, redrawn once a second
  ↑↓ select a gap in the table (the mouse too: click, wheel); enter
     opens it whole: hint, evidence, advice and payoff, copies by
     memory kind, partitions, host pressure, log lines around it;
     esc goes back, and lets go of the selection
  PgUp PgDn  scroll the prover log back / forward (or the wheel)

replay (gapwatch replay FILE; where it is: first in the status line)
  ← →  10 s back / on      [ ]  previous gap / on to the next one
  Home End  the start / the end of the file     + -  faster / slower
  p  pauses the replay too: it resumes where it was; seeks still work
  Back needs a replay without --record / --prometheus (records would
  be counted twice); after the end, run it again
  t  processes on the selected GPU (pid, name, GPU memory, pinned host
     memory, copies' memory kind) in place of the gaps; t/esc: back.
     At 80x24 too: it takes the gap table's and the log's rows

health (header; one GPU: in words, several: a cell per GPU)
  0  60G 52° 64%!c 92   GPU 0: 60 GiB GPU memory used, 52 °C, power
                        64 % of its limit, ! = clocks held down by heat
                        or a HW slowdown (not the power cap) or a row
                        remap failed or pending (named in the verdict),
                        c 92 = chaining 92 %
  chaining   share of host-to-device copy time in the last minute that
             ran while SMs were busy (copies overlapped with kernels):
             from the copy trace, else estimated from PCIe bytes and
             SM activity. Falling (93 % -> 41 %) is chaining breaking
             before gaps pile up; - (or "no copies to speak of"):
             under 0.1 s of copies, no share said
  GPU-Util   (one GPU) what nvidia-smi shows over the window busy % is
             of: the time any kernel or copy ran, so pinned copies
             with idle SMs read as busy; hold it against busy %

states
  CHAINED    the two workers keep the GPU busy
  GAPS       idle gaps between GPU work, not enough pcie_starved ones
             for BREAKDOWN
  BREAKDOWN  chaining broke: repeated pcie_starved gaps (host-to-device
             copies trickling at a few GB/s, typically pageable memory)
  IDLE       no work (or: end of data, the last idle stretch retracted)
  NO_DATA    no readings to judge from (not yet, or the GPU went silent)

charts (the selected GPU, newest on the right)
  busy %     share of each column's time with SM activity at or above
             the detector's idle threshold: a column holding a 0.5 s
             gap is drawn lower than a busy one, in any window
  ▓ / red    a column that holds a detector gap (any length)
  RX/TX      highest PCIe rate in the column, % of the link capacity;
             a one-row chart (80x24) is on a square-root scale, its
             label gives the newest column's % (8 and 3 GB/s differ)
  ▁          a reading of zero      blank  no data (never drawn as 0)

gap marks (the row under the charts) and the gap table's words
  S slow copies: SMs idle while H2D trickled (pageable memory?)
  T copies not overlapped: copies at full speed, kernels waiting
  H host stall: SMs idle, PCIe quiet: the host did not feed it
  ? idle, no PCIe reading (cause unknown)

prover log: in time order; `~` after a time = the line has no time of
its own, this is when gapwatch read it
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "dismiss_help", "close"),
        Binding("question_mark", "dismiss_help", "close"),
        Binding("q", "dismiss_help", "close"),
    ]

    def __init__(self, status: Sequence[str] = (), snapshots: Sequence[str] = (),
                 advice: Sequence[str] = ()) -> None:
        """
        Args:
            status: the footer's status phrases, in full.
            snapshots: paths of the snapshots written in this session.
            advice: what to change, for the PoSt and gaps so far (`advice_lines`).
        """
        super().__init__()
        self._status = list(status)
        self._snapshots = list(snapshots)
        self._advice = list(advice)

    def text(self) -> str:
        extra = ["", "now"] + [f"  {part}" for part in self._status]
        if self._advice:
            extra += ["", "what to change (cuzk's settings, for the PoSt and gaps so far)",
                      *self._advice]
        if self._snapshots:
            extra += ["", "snapshots written"] + [f"  {path}" for path in self._snapshots]
        # The status quotes outside text (a followed log's name, a snapshot folder, the
        # prover's settings in the advice): each line written out, never sent raw.
        return HELP + "\n".join(visible(line) for line in extra)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-scroll"):
            yield Static(Text(self.text()), id="help-text")

    def on_mount(self) -> None:
        repaint_where_toasts_leave(self)
        self.query_one("#help-scroll").focus()

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
