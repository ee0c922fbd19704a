"""Display reduction and block rendering: short gaps survive, missing data stays missing."""

from __future__ import annotations

import pytest
from ui_fakes import T0_NS, gap, gpu_sample, t_ns

from gapwatch.core.config import DetectorConfig
from gapwatch.core.models import GpuSample
from gapwatch.core.readings import busy_reading
from gapwatch.ui import blocks
from gapwatch.ui.blocks import (
    BLANK,
    GAP_PREFIX,
    SOLID,
    ZERO,
    Cell,
    ScrollingRows,
    render_rows,
    row_runs,
    row_strings,
)
from gapwatch.ui.reduce import MISSING, Column, busy_shares, gap_columns, reduce_minmax
from gapwatch.ui.widgets.strip_chart import one_row_label

S = 1_000_000_000
_CONFIG = DetectorConfig()


def _busy_of(sample: GpuSample) -> bool | None:
    return busy_reading(sample, _CONFIG, True)


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


def test_block_rows_tell_zero_from_missing_and_busy_from_a_column_with_a_gap() -> None:
    cells = [(1.0, None), (1.0, "pcie_starved"), (0.0, None), (None, None), (0.5, None)]
    rows = render_rows(cells, rows=2)
    top = "".join(chars for chars, _ in rows[0])
    bottom = [(chars, style) for chars, style in rows[1]]
    assert top == "█▓   "
    assert bottom == [("█", SOLID), ("▓", GAP_PREFIX + "pcie_starved"), ("▁", ZERO),
                      (" ", BLANK), ("█", SOLID)]


def test_a_column_with_a_gap_never_reads_as_busy_even_when_the_gap_is_tiny() -> None:
    """A 0.1 s gap in an 8 s column leaves it 99 % busy: the height rounds to full, but the
    cells are the gap's texture and style, not the busy `█`."""
    busy = render_rows([(0.99, None)], rows=2)
    gapped = render_rows([(0.99, "host_stall")], rows=2)
    assert busy != gapped
    assert all("█" not in chars for row in gapped for chars, _ in row)


def test_a_fully_idle_column_in_a_gap_is_a_baseline_in_the_gap_style() -> None:
    rows = render_rows([(0.0, "pcie_starved")], rows=2)
    assert rows[-1] == [("▁", GAP_PREFIX + "pcie_starved")]
    assert rows[0] == [(" ", BLANK)]


def _scrolled(n: int) -> list[Cell]:
    """A chart's columns `n` columns on: busy with a dip every 7th, a gap every 11th, a
    missing column every 13th (as a window moving on shows them)."""
    return [(None if i % 13 == 0 else (0.25 if i % 7 == 0 else 1.0),
             "pcie_starved" if i % 11 == 0 else None) for i in range(n, n + 40)]


def test_scrolling_rows_draw_only_the_columns_that_are_new_and_read_as_drawn_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The window moved on 3 columns: the 37 others are the same characters 3 places left, so
    only the 3 new ones are drawn; a column that changed (a gap found late) is drawn again
    from there; another GPU or window (no shift known) is drawn whole."""
    rows = ScrollingRows()
    drawn: list[int] = []
    real = blocks.row_strings

    def counted(columns: list[Cell], n: int, sqrt: bool = False) -> blocks.RowStrings:
        drawn.append(len(columns))
        return real(columns, n, sqrt)

    monkeypatch.setattr(blocks, "row_strings", counted)
    rows.rows(_scrolled(0), 3, False, None)
    assert rows.rows(_scrolled(3), 3, False, 3) == real(_scrolled(3), 3)
    late = _scrolled(6)
    late[30] = (0.0, "host_stall")
    assert rows.rows(late, 3, False, 3) == real(late, 3)
    assert rows.rows(_scrolled(6), 3, False, None) == real(_scrolled(6), 3)
    assert drawn == [40, 3, 10, 40]


def test_blank_cells_may_join_the_run_beside_them_and_the_characters_stay_the_same() -> None:
    """A row of scattered bars is a few runs instead of one per bar and per space between two;
    every non-blank cell keeps its style."""
    chars, codes = row_strings([(None, None), (1.0, None), (0.0, None), (1.0, None),
                                (1.0, "host_stall"), (None, None)], rows=1)
    assert row_runs(chars[0], codes[0]) == [(" ", BLANK), ("█", SOLID), ("▁", ZERO), ("█", SOLID),
                                            ("▓", GAP_PREFIX + "host_stall"), (" ", BLANK)]
    assert row_runs(chars[0], codes[0], blanks_join=True) == [
        (" █", SOLID), ("▁", ZERO), ("█", SOLID), ("▓ ", GAP_PREFIX + "host_stall")]
    blank_chars, blank_codes = row_strings([(None, None)] * 4, rows=1)
    assert row_runs(blank_chars[0], blank_codes[0], blanks_join=True) == [("    ", BLANK)]


def test_busy_share_is_the_busy_part_of_each_columns_covered_time() -> None:
    # 10 s of 100 ms samples; idle (sm 0) from 2.0 to 2.5 s; columns of 1 s.
    samples = [gpu_sample(0, (i + 1) / 10, 0.0 if 20 <= i < 25 else 97.0, 30e9)
               for i in range(100)]
    shares = busy_shares(samples, T0_NS, T0_NS + 10 * S, 10, busy_of=_busy_of,
                         lag_ns=0, default_interval_ns=S // 10, max_interval_ns=S)
    assert shares[2] == 0.5  # half of the third second was idle
    assert shares[0] == shares[9] == 1.0


def test_busy_share_places_readings_earlier_by_the_lag_as_the_detector_does() -> None:
    samples = [gpu_sample(0, (i + 1) / 10, 0.0 if 20 <= i < 25 else 97.0, 30e9)
               for i in range(100)]
    shares = busy_shares(samples, T0_NS, T0_NS + 10 * S, 10, busy_of=_busy_of,
                         lag_ns=S // 2, default_interval_ns=S // 10, max_interval_ns=S)
    # The idle half second now lies at 1.5..2.0 s: in the second column.
    assert shares[1] == 0.5 and shares[2] == 1.0


def test_a_column_no_reading_covers_is_missing_not_idle() -> None:
    samples = [gpu_sample(0, (i + 1) / 10, 97.0, 30e9) for i in range(100) if not 30 <= i < 60]
    shares = busy_shares(samples, T0_NS, T0_NS + 10 * S, 10, busy_of=_busy_of,
                         lag_ns=0, default_interval_ns=S // 10, max_interval_ns=S // 5)
    assert shares[3] is None and shares[4] is None  # the hole is not painted by the next sample
    assert shares[6] == 1.0


def test_one_idle_sample_lowers_its_column_in_a_ten_minute_window() -> None:
    """600 s over 72 columns: 8.3 s each. One 100 ms idle reading takes 1.2 % of its column:
    the share says so (and a gap there marks the column, see the block tests)."""
    samples = [gpu_sample(0, (i + 1) / 10, 0.0 if i == 3000 else 97.0, 30e9)
               for i in range(6000)]
    shares = busy_shares(samples, T0_NS, T0_NS + 600 * S, 72, busy_of=_busy_of,
                         lag_ns=0, default_interval_ns=S // 10, max_interval_ns=S)
    lowered = [i for i, share in enumerate(shares) if share is not None and share < 1.0]
    assert len(lowered) == 1
    assert 0.98 < shares[lowered[0]] < 0.99  # type: ignore[operator]


def test_busy_reading_follows_the_detectors_thresholds_and_stale_gpm_rule() -> None:
    config = DetectorConfig()
    assert busy_reading(gpu_sample(0, 1, 10.0, 1e9), config, True) is True
    assert busy_reading(gpu_sample(0, 1, 9.9, 1e9), config, True) is False
    stale = gpu_sample(0, 1, 0.0, 0.0, 0.0)
    assert busy_reading(stale, config, True) is None  # carries no interval of its own
    no_sm = gpu_sample(0, 1, None, 1e9)
    assert busy_reading(no_sm, config, True) is None  # missing data, not util


def test_the_column_cache_draws_what_a_full_reduction_draws_as_data_streams_in() -> None:
    """Redraw after redraw (every 0.25 s of data, with a hole and stale GPM readings on the
    way), the cached columns equal the ones computed from all samples afresh."""
    from ui_fakes import H200

    from gapwatch.engine.store import SeriesStore
    from gapwatch.ui.series import SeriesCache, busy_cells, rx_cells
    from gapwatch.ui.view import View, newest_time_ns

    store = SeriesStore([H200], period_s=0.1, history_s=600)
    busy_cache, rx_cache = SeriesCache(), SeriesCache()
    for i in range(1, 900):
        s = i / 10
        if 30 <= s < 31:
            continue  # a hole
        stale = i % 37 == 0
        sm = 0.0 if stale else (0.0 if int(s) % 7 == 0 else 97.0)
        rx = 0.0 if stale else (2.8e9 if sm == 0 else 41e9)
        store.append_gpu([gpu_sample(0, s, sm, rx, 0.0 if stale else 1e9)])
        if i % 3:
            continue
        snap = store.snapshot()
        end = newest_time_ns(snap)
        assert end is not None
        view = View(snap=snap, gpu=0, window_s=60.0, t_end_ns=end, detector=_CONFIG)
        t0, t1 = view.grid(71)
        assert busy_cells(view, 71, t0, t1, busy_cache) == busy_cells(view, 71, t0, t1)
        assert rx_cells(view, 71, t0, t1, rx_cache) == rx_cells(view, 71, t0, t1)


def test_a_one_row_chart_tells_chaining_from_breakdown_rates_apart() -> None:
    """At 80x24 the RX chart has one row: 8 GB/s (chaining) and 3 GB/s (breakdown) of a 63 GB/s
    link used to be the same baseline `▁`; on the square-root scale they differ, and 41 GB/s
    pinned bursts stand out."""
    link = 63e9
    cells: list[tuple[float | None, str | None]] = [(8e9 / link, None), (3e9 / link, None),
                                                    (41e9 / link, None)]
    assert "".join(t for t, _ in render_rows(cells, rows=1)[0]) == "▁▁▅"  # linear: flat
    (row,) = render_rows(cells, rows=1, sqrt_one_row=True)
    chars = "".join(text for text, _ in row)
    assert chars == "▃▂▆"
    assert len(set(chars)) == 3


def test_a_one_row_chart_says_its_newest_level_in_its_label() -> None:
    assert one_row_label("RX %link", [(0.12, None), (0.05, None), (None, None)]) == "RX   5%"
    assert one_row_label("TX %link", [(None, None)]) == "TX    -"
