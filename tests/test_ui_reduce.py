"""Display reduction and block rendering: short gaps survive, missing data stays missing."""

from __future__ import annotations

from ui_fakes import gap, t_ns

from gapwatch.ui.blocks import BLANK, RANGE, SOLID, ZERO, nice_scale, render_rows
from gapwatch.ui.reduce import MISSING, Column, gap_columns, reduce_minmax

S = 1_000_000_000


def busy_with_dip(total_s: int, dip_at_s: float, dip_s: float) -> list[tuple[int, float | None]]:
    points: list[tuple[int, float | None]] = []
    for i in range(total_s * 10):
        t = i / 10
        points.append((int(t * S), 0.0 if dip_at_s <= t < dip_at_s + dip_s else 100.0))
    return points


def test_a_300ms_dip_in_a_10_minute_window_still_reaches_zero() -> None:
    points = busy_with_dip(600, dip_at_s=301.0, dip_s=0.3)
    cols = reduce_minmax(points, 0, 600 * S, 100)
    dipped = [c for c in cols if c.lo == 0.0]
    assert len(dipped) == 1
    assert dipped[0].hi == 100.0  # the same column also kept the busy maximum
    assert all(c.lo == 100.0 for c in cols if c is not dipped[0])


def test_columns_without_values_are_missing_not_zero_and_not_bridged() -> None:
    points: list[tuple[int, float | None]] = [(0, 50.0), (1 * S, None), (2 * S, None), (3 * S, 60.0)]
    cols = reduce_minmax(points, 0, 4 * S, 4)
    assert cols[0] == Column(50.0, 50.0)
    assert cols[1] is MISSING or cols[1].missing
    assert cols[2].missing
    assert cols[3] == Column(60.0, 60.0)


def test_points_outside_the_window_are_ignored_and_the_newest_lands_in_the_last_column() -> None:
    cols = reduce_minmax([(-S, 99.0), (0, 1.0), (10 * S, 7.0), (11 * S, 99.0)], 0, 10 * S, 5)
    assert cols[0] == Column(1.0, 1.0)
    assert cols[-1] == Column(7.0, 7.0)
    assert [c.missing for c in cols[1:4]] == [True, True, True]


def test_degenerate_windows() -> None:
    assert reduce_minmax([(0, 1.0)], 0, 10, 0) == []
    assert reduce_minmax([(0, 1.0)], 5, 5, 3) == [MISSING] * 3


def test_a_short_gap_marks_at_least_one_column_with_its_kind() -> None:
    short = gap(1, 0, 300.0, 300.3, kind="host_stall")
    marks = gap_columns([short], 0, t_ns(0), t_ns(600), 100)
    assert marks.count("host_stall") == 1
    assert marks[50] == "host_stall"


def test_gap_marks_ignore_other_gpus_and_prefer_starved() -> None:
    """(Retracted gaps never reach the chart: the store's ledger drops them.)"""
    gaps = [
        gap(1, 1, 10.0, 20.0),  # other GPU
        gap(3, 0, 50.0, 55.0, kind="transfer_bound"),
        gap(4, 0, 54.0, 58.0, kind="pcie_starved"),
        gap(5, 0, 59.0, None, kind="unknown"),  # open: runs to the right edge
    ]
    marks = gap_columns(gaps, 0, t_ns(0), t_ns(60), 60)
    assert marks[15] is None and marks[35] is None
    assert marks[51] == "transfer_bound"
    assert marks[54] == "pcie_starved"
    assert marks[59] == "unknown"


def test_block_rows_tell_zero_from_missing_and_busy_from_mixed() -> None:
    cols = [Column(100.0, 100.0), Column(0.0, 100.0), Column(0.0, 0.0), MISSING]
    rows = render_rows(cols, rows=2, scale=100.0)
    top = "".join(chars for chars, _ in rows[0])
    bottom = [(chars, style) for chars, style in rows[1]]
    assert top == "██  "
    assert bottom == [("█", SOLID), ("█", RANGE), ("▁", ZERO), (" ", BLANK)]


def test_nice_scale_rounds_up_to_1_2_5() -> None:
    assert nice_scale(41.0, 1.0) == 50.0
    assert nice_scale(2.8, 1.0) == 5.0
    assert nice_scale(None, 1.0) == 1.0
    assert nice_scale(0.0, 1.0) == 1.0
    assert nice_scale(100.0, 1.0) == 100.0
