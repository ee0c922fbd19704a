"""HelpScreen: the key bindings and the legend, shown over the dashboard by `?`.

Who pushes it: `GapwatchApp.action_help`. Any of escape, q or ? closes it.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Static

HELP = """\
gapwatch: why the GPU stops being busy

keys
  s   snapshot: folder with the dashboard (SVG), a replayable recording,
      the gaps (JSON) and summary.md
  p   pause the view (sampling, detection and auto-snapshots go on)
  g   next GPU        w   chart window (30 s / 60 s / 2 min / 10 min)
  d   detail chart (plotext) of the selected GPU, redrawn about once a second
  ?   this help       q   quit

states
  CHAINED    the two workers keep the GPU busy
  GAPS       idle gaps between GPU work
  BREAKDOWN  chaining broke: repeated pcie_starved gaps (host-to-device copies
             trickling at a few GB/s, typically from pageable memory)

gap marks under the charts
  S pcie_starved   T transfer_bound   H host_stall   ? unknown (no PCIe reading)
  blank chart columns = no data (never drawn as zero)
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "dismiss_help", "close"),
        Binding("question_mark", "dismiss_help", "close"),
        Binding("q", "dismiss_help", "close"),
    ]

    def compose(self) -> ComposeResult:
        yield Static(Text(HELP), id="help-text")

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
