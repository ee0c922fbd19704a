"""The idle stretch at the end of data that was cut, not ended: one rule for the report and the
headless replay.

At the end of the data the detector retracts a gap still open (idle after the last busy
period is no gap: `GapDetector.finish`), whatever ended the data. Where the data went on past
the end read, that idle stretch is the GPU's all the same, and is said under the GPU: a
`--until` window ending before the recording does (`report.data_after`), or a snapshot's
recording (`SessionHeader.snapshot_wall_s`: the session went on after it was taken, and the
stretch is the gap its summary.md and gaps.json give as still open then). A recording's own end
says nothing: nothing came after it.

Who calls it: `gapwatch.offline.report` (`data_after`, kept on the report),
`gapwatch.offline.report_text` (a line under each GPU of `gapwatch report`, and a BREAKDOWN
entered at the data's last reading: `breakdown_at_end`) and
`gapwatch.commands.replay` (`replay --headless`'s closing lines).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from gapwatch.core import fmt
from gapwatch.core.models import SessionHeader
from gapwatch.core.track import GpuTotals, OpenAtEnd
from gapwatch.sources.files import data_end
from gapwatch.sources.time_window import TimeWindow

#: What cut the end of the data read while the data went on: a `--until` window's end, or a
#: snapshot taken while the session ran.
CutBy = Literal["window", "snapshot"]


def data_after(path: str | Path, window: TimeWindow | None) -> bool:
    """Whether the recording goes on past `window`'s end: its data's end read from the file's
    end (`data_end`, a bounded read), True where that is not known; False without a window
    or `--until`."""
    if window is None or window.until_s is None:
        return False
    end_s = data_end(path)
    return end_s is None or window.until_s < end_s


def cut_by(header: SessionHeader, window_data_after: bool) -> CutBy | None:
    """What cut the end of the data read (`window_data_after`: a window's end lies before the
    recording's data ends, `data_after`); None where the data ended there."""
    if window_data_after:
        return "window"
    if header.snapshot_wall_s is not None:
        return "snapshot"
    return None


def idle_at_cut_end(t: GpuTotals, cut: CutBy | None) -> str | None:
    """For a GPU whose gap was still open at a cut end (`GpuTotals.open_at_end`: the
    detector's, retracted there, no busy reading bounding it in the data read), that gap said
    as cut there, one sentence for both cuts: its kind, start and idle time so far; None where
    the end was not cut or no gap was open at it (an idle stretch shorter than the detector's
    min gap is none). A window that ended 10 s into a restart's idle said "busy 100 %, no
    gaps" and nothing more; a snapshot taken the moment a GPU entered BREAKDOWN on a gap still
    open said "no gaps" of it."""
    gap = t.open_at_end
    if cut is None or gap is None or t.last_busy_s is None:
        return None
    # One sentence for both cuts: only what the reader can do about it differs (a window's
    # end moves with --until; a snapshot's is fixed, its own files had the gap open).
    hint = ("--until later reads it" if cut == "window"
            else "the snapshot's summary.md and gaps.json give it as the detector had it then")
    return (f"{_gap_from(gap)} still open at the {cut}'s end, idle {fmt.duration(gap.idle_s)} "
            f"so far: cut there, no gap of it (as at a recording's end); {hint}")


def _gap_from(gap: OpenAtEnd) -> str:
    """`the pcie_starved gap from 21:31:45.846`: the gap open at the end, as both lines name it."""
    return f"the {gap.kind} gap from {fmt.clock(gap.start_s, millis=True)}"


def breakdown_at_end(entered_s: float, entered_on: str, t: GpuTotals | None,
                     cut: CutBy | None) -> str:
    """A BREAKDOWN entered at the GPU's last reading (`report.Breakdown.entered_at_end`): no
    period of it was read, so it is said at the end of the data, with what it was entered on
    and, where that end was cut on a gap still open, that gap in `idle_at_cut_end`'s words
    (said in full under the GPU). It read `22:28:24.327 - 22:28:24.327 (0.0 s): no gaps (0.0 s
    idle) in the period, up to 0 in a 30 s window; entered on 1 pcie_starved gap ...`: the
    demo's snapshot is taken the moment GPU0 enters BREAKDOWN, its gap still open, retracted at
    the data's end."""
    end = "the recording's end" if cut is None else f"the {cut}'s end"
    words = (f"at {end}, {fmt.clock(entered_s, millis=True)} (no period of it read): "
             f"entered on {entered_on}")
    # The gap where the GPU's line says it cut (`idle_at_cut_end`), named as that line does.
    if t is not None and t.open_at_end is not None and idle_at_cut_end(t, cut) is not None:
        words += f"; {_gap_from(t.open_at_end)} still open then, cut there (said under the GPU)"
    return words
