"""SVG snapshot tests of the dashboard (pytest-textual-snapshot). Fixed data, fixed times: the
pictures never depend on the wall clock. Update with `pytest tests/test_ui_snapshots.py
--snapshot-update` after checking the new pictures by eye."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ui_fakes import H200, H200_B, WALL0_S, FakeRuntime, fill_breakdown, make_config

from gapwatch.ui.app import GapwatchApp


def breakdown_app(tmp_path: Path, two_gpus: bool = False) -> GapwatchApp:
    rt = FakeRuntime(make_config(tmp_path), gpus=[H200, H200_B] if two_gpus else [H200])
    fill_breakdown(rt.store, gpus=(0, 1) if two_gpus else (0,))
    return GapwatchApp(rt, wall_clock=lambda: WALL0_S + 100)


def test_breakdown_at_80x24(snap_compare: Any, tmp_path: Path) -> None:
    """At 80x24 the first line reads `GPU0 H200  BREAKDOWN  busy 81%`, the next lines say why
    (3 pcie_starved gaps in 30 s) and start the hint (pageable copies at 2.8 GB/s). The SM chart
    has a blank stretch at -40..-38 s (no data, not zero) and drops to the baseline in the gaps;
    the gap row shows five runs of `S`; the host line shows PSI some 23.5 %; the gap table lists
    the newest gap (0.40 s) first; the log shows `[bold]not markup[/bold]` literally and the
    `[unpinned]` warning; the footer shows sampler lateness and the keys."""
    assert snap_compare(breakdown_app(tmp_path), terminal_size=(80, 24))


def test_breakdown_at_160x48(snap_compare: Any, tmp_path: Path) -> None:
    """At 160x48 the same data uses the room: the whole hint on the verdict lines, taller charts
    (SM over 7 rows, RX and TX with their scales ≤50 and ≤2 GB/s), rules between panels, and the
    gap table beside the prover log, all five gaps listed with their hints."""
    assert snap_compare(breakdown_app(tmp_path), terminal_size=(160, 48))


def test_two_gpus_second_selected_paused_at_160x48(snap_compare: Any, tmp_path: Path) -> None:
    """Two GPUs: two header lines, the `▶` marker on GPU1 after `g`, the charts titled `GPU1 ·
    last 2 min` after `w`, and the yellow PAUSED banner after `p` saying that sampling and
    detection go on."""
    assert snap_compare(breakdown_app(tmp_path, two_gpus=True), terminal_size=(160, 48),
                        press=["g", "w", "p"])


def test_detail_view_at_160x48(snap_compare: Any, tmp_path: Path) -> None:
    """`d` replaces the block charts with the plotext detail chart of GPU0: SM % in green on the
    left axis, RX/TX GB/s on the right, a hole at -40..-38 s (no data, not bridged), and red
    gap squares under the five starved gaps."""
    assert snap_compare(breakdown_app(tmp_path), terminal_size=(160, 48), press=["d"])


def test_help_at_80x24(snap_compare: Any, tmp_path: Path) -> None:
    """`?` shows the keys, the three chaining states in words, and the gap letters S/T/H/?."""
    assert snap_compare(breakdown_app(tmp_path), terminal_size=(80, 24), press=["question_mark"])
