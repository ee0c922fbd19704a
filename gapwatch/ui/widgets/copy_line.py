"""CopyLine: host-to-device bytes per second of each GPU, split by the host memory they came from.

Who drives it: `GapwatchApp` with the slow panels (once a second). It reads the copy trace's
records from the store (`--copytrace`: the CUPTI library names the memory of every copy) and
sums, per GPU over the last `WINDOW_S` of data, the H2D bytes from pinned and from pageable
memory, using the same summary the gap evidence uses (`core.evidence.summarise_copies`). Each
kind shows its average H2D rate over the window and the rate its copies themselves ran at:
pageable copies at a few GB/s beside pinned ones at ~55 GB/s is the breakdown in one line.
Hidden (no height) until a first copy arrives, so a session without the trace looks as before.
"""

from __future__ import annotations

from gapwatch.core import fmt
from gapwatch.core.evidence import summarise_copies
from gapwatch.core.models import CopyRecord
from gapwatch.ui.view import View
from gapwatch.ui.widgets.run_lines import RunLines

#: Seconds of data each line sums (a partition's copies take 0.1-3 s).
WINDOW_S = 10.0


def copy_runs(gpu: int, copies: list[CopyRecord], now_s: float) -> list[tuple[str, str]]:
    """(text, style key) runs of one GPU's line; keys "label", "pageable", ""."""
    h2d = [c for c in copies if c.gpu == gpu and c.direction == "h2d"]
    summary = summarise_copies(h2d, now_s - WINDOW_S, now_s, now_s, now_s)
    by = summary.kinds()
    runs: list[tuple[str, str]] = [(f"H2D GPU{gpu} last {WINDOW_S:g} s", "label")]
    for kind in ("pinned", "pageable", "other"):
        e = by.get(kind)
        if e is None:
            continue
        avg = e.h2d_bytes / WINDOW_S
        own = e.bytes_per_s
        runs.append((f" · {kind} ", "label"))
        runs.append((fmt.rate(avg), "pageable" if kind == "pageable" else ""))
        if own is not None:
            runs.append((f" (copies ran at {fmt.rate(own)})", ""))
    if not by:
        runs.append((" · no copies", ""))
    return runs


class CopyLine(RunLines):
    """One line per GPU seen in the copy trace, the selected GPU's first."""

    COMPONENT_CLASSES = {"copy-line--label", "copy-line--pageable"}
    STYLE_CLASSES = {"label": "copy-line--label", "pageable": "copy-line--pageable"}

    def show(self, view: View) -> None:
        copies = list(view.snap.copies)
        if not copies:
            return
        # The window ends at the newest reading (as the charts do), so that a prover whose
        # copies stopped shows none, not its last ten seconds forever.
        newest = [s.t_wall_s for g in view.gpu_indices() if (s := view.latest(g)) is not None]
        now_s = max(newest) if newest else max(c.end_wall_s for c in copies)
        # The selected GPU's line first (the chart above is of it): a short pane keeps it
        # alone (`app.under_chart_rows`).
        gpus = sorted({c.gpu for c in copies if c.gpu is not None},
                      key=lambda g: (g != view.gpu, g))
        self.show_lines([copy_runs(gpu, copies, now_s) for gpu in gpus])
