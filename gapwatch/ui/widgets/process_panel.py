"""ProcessPanel: the processes on the selected GPU, as nvtop and nvitop list them, plus what a
pipelined prover's operator needs beside: pinned host memory and the memory kind of the copies.

Columns: pid, name, GPU memory (NVML), pinned host memory (RssShmem: `cudaHostAlloc` memory;
a hint, see docs/health.md), heap (RssAnon), and with the copy trace on, the memory kinds of the
process's host-to-device copies still in memory (`pinned 64`, `pageable 33`). A missing reading
is `?`, never 0.

Who drives it: `GapwatchApp` (key `t` shows it in place of the gap table and the log, so it is
reachable at 80x24; `t` or Esc goes back), `show(view)` once a second. Plain rich Text: a
handful of rows.
"""

from __future__ import annotations

from collections import Counter

from rich.console import Group
from rich.text import Text
from textual.widget import Widget

from gapwatch.core import fmt
from gapwatch.core.models import CopyRecord, ProcessMemory
from gapwatch.ui.view import View


def copy_kinds(copies: tuple[CopyRecord, ...], gpu: int) -> dict[int, Counter[str]]:
    """Per pid, its host-to-device copies on `gpu` by host memory kind."""
    out: dict[int, Counter[str]] = {}
    for c in copies:
        if c.gpu == gpu and c.direction == "h2d":
            out.setdefault(c.pid, Counter())[c.host_kind] += 1
    return out


#: The name column's width, in terminal cells.
NAME_CELLS = 16


def _size(n: int | None) -> str:
    return "?" if n is None else fmt.size(n)


def process_rows(procs: tuple[ProcessMemory, ...], copies: tuple[CopyRecord, ...], gpu: int,
                 copytrace: bool) -> list[str]:
    """The panel's rows, largest GPU memory first (text only: the widget styles the head)."""
    kinds = copy_kinds(copies, gpu)
    rows = []
    for p in sorted(procs, key=lambda p: (-(p.gpu_memory_bytes or 0), p.pid)):
        if copytrace:
            mine = kinds.get(p.pid)
            copy = ", ".join(f"{k} {n}" for k, n in mine.most_common()) if mine else "none"
        else:
            copy = "-"
        # Cut and padded by terminal cells, not characters: a name of wide (CJK) characters,
        # combining or zero-width marks, or tabs moved every column after it.
        name = fmt.fit(fmt.visible(p.name or "?"), NAME_CELLS)
        rows.append(f"{p.pid:>8} {name} {_size(p.gpu_memory_bytes):>9} "
                    f"{_size(p.rss_shmem_bytes):>9} {_size(p.rss_anon_bytes):>9}  {copy}")
    return rows


class ProcessPanel(Widget):
    """The processes NVML lists on the selected GPU."""

    COMPONENT_CLASSES = {"process-panel--header", "process-panel--title"}

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self._lines: list[Text] = [Text("no process readings yet")]

    def show(self, view: View) -> None:
        style = self.get_component_rich_style
        gpu = view.gpu
        procs = view.snap.procmem.get(gpu, ())
        copytrace = bool(view.snap.copies)
        title = Text(no_wrap=True, overflow="ellipsis")
        title.append(f"processes on GPU{gpu} ({len(procs)})", style("process-panel--title"))
        title.append("  t or esc: back to the gaps · g: next GPU")
        head = Text(f"{'pid':>8} {'name':<16} {'GPU mem':>9} {'pinned':>9} {'heap':>9}  "
                    + ("H2D copies by memory kind" if copytrace else "copies (copy trace off)"),
                    style("process-panel--header"), no_wrap=True, overflow="ellipsis")
        lines = [title, head]
        rows = process_rows(procs, view.snap.copies, gpu, copytrace)
        lines += [Text(r, no_wrap=True, overflow="ellipsis") for r in rows]
        if not rows:
            lines.append(Text("none listed (NVML lists compute processes, every "
                              "sampler.procmem_every_s)", style="dim", no_wrap=True,
                              overflow="ellipsis"))
        if lines != self._lines:
            self._lines = lines
            self.refresh()

    def render(self) -> Group:
        return Group(*self._lines)
