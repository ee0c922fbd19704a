"""HostPanel: host memory pressure at a glance (memory used, PSI, major faults, bandwidth).

Who drives it: `GapwatchApp.show(view)`. Pageable host-to-device copies slow down when the host is
short of memory bandwidth, so this panel sits beside the gap table: a starved gap next to high PSI
tells the user where to look. Fields the kernel does not expose read "n/a".
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from gapwatch.core import fmt
from gapwatch.ui.view import View

#: PSI "some" avg10 above this (percent) is shown as pressure.
PSI_WARN_PCT = 10.0


class HostPanel(Widget):
    """Two short lines of host pressure numbers."""

    COMPONENT_CLASSES = {"host-panel--label", "host-panel--warn"}

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self._text = Text("host: no sample yet")

    def show(self, view: View) -> None:
        text = self.build(view)
        if text != self._text:
            self._text = text
            self.refresh()

    def render(self) -> Text:
        return self._text

    def build(self, view: View) -> Text:
        label = self.get_component_rich_style("host-panel--label")
        warn = self.get_component_rich_style("host-panel--warn")
        host = view.latest_host()
        out = Text(overflow="ellipsis")
        out.append("host ", label)
        if host is None:
            out.append("no sample yet")
            return out
        out.append(f"mem {fmt.pct(host.mem_used_pct)} used, ")
        out.append(f"{fmt.bytes_iec(host.mem_available_bytes)} avail, ")
        out.append(f"swap {fmt.bytes_iec(host.swap_used_bytes)} · ")
        out.append("PSI ", label)
        some = host.psi_mem_some_avg10
        out.append(
            f"some {fmt.pct(some, 1)}",
            warn if some is not None and some >= PSI_WARN_PCT else "",
        )
        out.append(f" full {fmt.pct(host.psi_mem_full_avg10, 1)} · ")
        out.append("majflt ", label)
        faults = host.major_faults_per_s
        out.append("n/a" if faults is None else f"{faults:.0f}/s")
        out.append(" · membw ", label)
        bw = host.mem_bandwidth_bytes_per_s
        out.append("n/a" if bw is None else f"{fmt.gbps(bw)} GB/s")
        out.append(" · cpu ", label)
        out.append(fmt.pct(host.cpu_busy_pct))
        return out
