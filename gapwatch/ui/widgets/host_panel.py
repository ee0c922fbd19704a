"""HostPanel: host pressure at a glance (memory used, PSI, major faults, bandwidth, CPU busy and
waiting).

Who drives it: `GapwatchApp.show(view)`. Pageable host-to-device copies slow down when the host is
short of memory bandwidth, so this panel sits beside the gap table: a starved gap next to high PSI
tells the user where to look. Fields the kernel does not expose read "n/a".
"""

from __future__ import annotations

from rich.text import Text

from gapwatch.core import fmt
from gapwatch.core.hints import CPU_PSI_SHARE_PRESSURE
from gapwatch.core.models import HostSample
from gapwatch.ui.fit import pack_phrases
from gapwatch.ui.view import View
from gapwatch.ui.widgets.text_lines import TextLines

#: PSI "some" avg10 above this (percent) is shown as pressure.
PSI_WARN_PCT = 10.0
#: CPU PSI `some avg10` from which the host line highlights `cpu wait`: the hint's threshold
#: (`hints.CPU_PSI_SHARE_PRESSURE`, a share), as a percentage.
CPU_WAIT_WARN_PCT = 100.0 * CPU_PSI_SHARE_PRESSURE


class HostPanel(TextLines):
    """Host pressure numbers, one or two lines (broken between phrases, never inside one)."""

    COMPONENT_CLASSES = {"host-panel--label", "host-panel--warn"}

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self._rows = [Text("host: no sample yet")]

    def show(self, view: View) -> None:
        self.set_rows(self.build(view))

    def build(self, view: View) -> list[Text]:
        """The host numbers as phrases, packed into lines that break only between phrases."""
        label = self.component_style("host-panel--label")
        warn = self.component_style("host-panel--warn")
        host = view.latest_host()
        if host is None:
            out = Text()
            out.append("host ", label)
            out.append("no sample yet")
            return [out]
        phrases = host_phrases(host)
        width = self.size.width or self.app.size.width
        lines = []
        for line in pack_phrases([a + b for a, b, _ in phrases], width):
            out = Text()
            for k, i in enumerate(line):
                name, value, hot = phrases[i]
                if k:
                    out.append(" · ")
                out.append(name, label)
                out.append(value, warn if hot else "")
            lines.append(out)
        return lines


def host_phrases(host: HostSample) -> list[tuple[str, str, bool]]:
    """The host line's phrases, (label, value, highlighted) each, in display order."""
    some = host.psi_mem_some_avg10
    faults = host.major_faults_per_s
    cpu_wait = host.psi_cpu_some_avg10
    return [
        ("host mem ", f"{fmt.pct(host.mem_used_pct)} used, "
                      f"{fmt.size(host.mem_available_bytes)} avail", False),
        ("swap ", fmt.size(host.swap_used_bytes), False),
        ("PSI some ", fmt.pct(some, 1), some is not None and some >= PSI_WARN_PCT),
        ("full ", fmt.pct(host.psi_mem_full_avg10, 1), False),
        ("majflt ", "n/a" if faults is None else f"{faults:.0f}/s", False),
        ("membw ", fmt.rate(host.mem_bandwidth_bytes_per_s), False),
        ("cpu ", fmt.pct(host.cpu_busy_pct), False),
        # Runnable tasks waiting for a CPU (PSI avg10, smoothed as memory's PSI above: a loaded
        # box's ticks wait in bursts); a fifth of the time is cores oversubscribed.
        ("cpu wait ", fmt.pct(cpu_wait, 1), cpu_wait is not None
         and cpu_wait >= CPU_WAIT_WARN_PCT),
    ]
