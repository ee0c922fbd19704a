"""A layout that holds at 80x24 (issue 20, item 2): a long hint, a pause or a banner never pushes
the gap table and the log off the screen; the state badge keeps its column whatever the numbers
read; the header's RX/TX are the chart's last column."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import msgspec
from textual.pilot import Pilot
from ui_fakes import (
    LINK,
    FakeRuntime,
    breakdown_with_hint,
    fill_breakdown,
    fixed_wall,
    gpu_sample,
    h200,
    make_config,
    screen_text,
)

from gapwatch.config import Config
from gapwatch.ui.app import GapwatchApp
from gapwatch.ui.series import last_column_rates, rx_cells
from gapwatch.ui.view import View, newest_time_ns
from gapwatch.ui.widgets.detail_chart import DetailChart
from gapwatch.ui.widgets.gpu_header import chart_columns, full_fields, header_lines

#: As long as `sim:transfer-bound`'s hints (seven lines at 80 columns with the verdict).
LONG_HINT = ("SMs idle 0.8 s while H2D ran at 63.0 GB/s (100 % of link); copies at full speed "
             "but not overlapped with compute: is the next partition's upload chained behind the "
             "other worker's kernels?; prover status: the wait is inside the workers (copies, "
             "the GPU mutex, CPU work): every worker of this GPU is proving; host: tasks stalled "
             "on memory 13 % of the time (PSI), host memory bandwidth 55.0 GB/s")


def _view(rt: FakeRuntime, **changes: object) -> View:
    snap = rt.store.snapshot()
    t_end = newest_time_ns(snap)
    assert t_end is not None
    view = View(snap=snap, gpu=0, window_s=60.0, t_end_ns=t_end, detector=Config().detector)
    return replace(view, **changes)  # type: ignore[arg-type]


def _row_of(lines: list[str], prefix: str) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(prefix))


async def test_a_long_hint_and_a_pause_leave_the_gap_table_and_the_log_where_they_are(
    tmp_path: Path,
) -> None:
    short = FakeRuntime(make_config(tmp_path))
    fill_breakdown(short.store)
    long = breakdown_with_hint(tmp_path, LONG_HINT, kind="transfer_bound", rx=63e9)
    screens = []
    for rt, keys in ((short, ()), (long, ()), (long, ("p",))):
        app = GapwatchApp(rt, wall_clock=fixed_wall)
        async with app.run_test(size=(80, 24)) as pilot:
            for key in keys:
                await pilot.press(key)
            await pilot.pause()
            screens.append(screen_text(app).splitlines())
    rows = [(_row_of(s, "GPU0 · last"), _row_of(s, "time     GPU"), _row_of(s, "prover log"))
            for s in screens]
    assert rows[0] == rows[1] == rows[2]  # nothing moved: not the charts, the table, the log
    assert rows[0][0] == header_lines(24)  # five header lines at 80x24
    assert "… d: whole hint" in " ".join(screens[1][:5])
    assert screens[2][1].startswith("chaining 87% (PCIe+SM)")  # the GPU's health line
    assert screens[2][2].startswith(" PAUSED ")


def test_the_state_badge_keeps_its_column_whatever_the_numbers_read(tmp_path: Path) -> None:
    """The name used to come and go with RX's width, moving the badge 9 columns."""
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    base = _view(rt)
    for width in (80, 120, 200):
        offsets = set()
        for rx in (None, 2e6, 0.6e9, 2.2e9, 63e9):
            for sm in (None, 0.0, 100.0):
                sample = msgspec.structs.replace(base.snap.gpu_samples[0][-1],
                                                 pcie_rx_bytes_per_s=rx, sm_active_pct=sm)
                snap = replace(base.snap, gpu_samples={0: (*base.snap.gpu_samples[0][:-1],
                                                           sample)})
                fields = full_fields(replace(base, snap=snap), 0, width)
                texts = [t for t, _ in fields]
                badge = next(i for i, t in enumerate(texts) if "BREAKDOWN" in t)
                offsets.add(sum(len(t) + 2 for t in texts[:badge]))
                assert sum(len(t) for t in texts) + 2 * (len(texts) - 1) <= width
        assert len(offsets) == 1, (width, offsets)


def test_the_headers_rx_is_the_charts_last_column_not_the_latest_reading(
    tmp_path: Path,
) -> None:
    """Chained copies come in bursts: the latest reading is often between two of them (the
    header read "RX 0.00GB/s 0%" in 16 of 20 captures while the chart's RX row showed 40-60 %)."""
    rt = FakeRuntime(make_config(tmp_path), gpus=[h200(0)])
    for i in range(600):
        # 0.3 s copies every second, then quiet; the last second copies until the newest
        # reading, which falls between two copies.
        rate = 40e9 if i % 10 < 3 or 590 <= i < 599 else 0.0
        rt.store.append_gpu([gpu_sample(0, i / 10, 95.0, rate, 1e9)])
    view = _view(rt)
    latest = view.latest(0)
    assert latest is not None and latest.pcie_rx_bytes_per_s == 0.0
    columns = chart_columns(80)
    rx, _ = last_column_rates(view, 0, columns)
    t0, t1 = view.grid(columns)
    chart_last = rx_cells(view, columns, t0, t1)[-1][0]
    assert chart_last is not None and rx == chart_last * LINK == 40e9
    shown = " ".join(t for t, _ in full_fields(view, 0, 80))
    assert "RX 40.0 GB/s  63%" in shown


async def _detail_drawn_for_its_size(app: GapwatchApp, pilot: Pilot[int]) -> None:
    """Wait (5 s at most) until the detail chart has been built for its size now. It is
    rebuilt at most once per `ui.detail_redraw_s`, by design: the runtime's config sets that
    at its least (0.2 s), and this polls instead of sleeping past it (a sleep of the period
    and a little more waited 1.2 s a case, and could come short on a loaded box)."""
    detail = app.query_one(DetailChart)
    for _ in range(100):
        drawn = detail._drawn_key
        if detail._pending is None and drawn is not None \
                and drawn[3:] == (detail.size.width, detail.size.height):
            return
        await pilot.pause(0.05)


async def _screen_after_resize(rt: FakeRuntime, first: tuple[int, int],
                               final: tuple[int, int], keys: tuple[str, ...] = ()) -> str:
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=first) as pilot:
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
        await pilot.pause()
        await pilot.resize_terminal(*final)
        if "d" in keys:
            await _detail_drawn_for_its_size(app, pilot)
        await pilot.pause()
        return screen_text(app)


async def test_a_pane_resized_once_the_data_stopped_is_laid_out_for_its_new_size(
        tmp_path: Path) -> None:
    """A replay that has ended (or a paused view, or a source gone quiet): nothing changes in
    the store, so no redraw came, and a pane resized from 200x50 to 80x24 kept the header, the
    host line and the gap table laid out for 200 columns, cut at 80 in mid-figure (`TX   4`,
    `in the last 3`), its RX read on the wider chart's grid, for as long as it stayed."""
    for keys in ((), ("p",), ("d",)):
        rt = FakeRuntime(make_config(tmp_path, detail_redraw_s=0.2))
        fill_breakdown(rt.store, gpus=(0, 1))
        rt.done = True
        resized = await _screen_after_resize(rt, (200, 50), (80, 24), keys)
        fresh = await _screen_after_resize(rt, (80, 24), (80, 24), keys)
        assert resized == fresh, keys


def test_the_headers_rx_is_never_n_a_while_readings_arrive_at_a_column_boundary(
    tmp_path: Path,
) -> None:
    """GPM readings are drawn `gpm_lag_ms` before they were read, so for the first 100 ms of
    each chart column its newest readings still fall in the column before: the last column
    is empty and the header read "RX n/a" (an H100 run under a steady chained load: 3 of 9
    captures) while a reading had come every 100 ms. The header shows the newest column that
    holds a reading; n/a only where none came."""
    columns = chart_columns(80)
    for last in range(590, 610):
        rt = FakeRuntime(make_config(tmp_path), gpus=[h200(0)])
        rt.store.append_gpu([gpu_sample(0, i / 10, 95.0, 20e9, 1e9) for i in range(last + 1)])
        view = _view(rt)
        rx, tx = last_column_rates(view, 0, columns)
        assert (rx, tx) == (20e9, 1e9), last
    # Readings that stopped are said as none: a column with no reading for longer than the
    # lag reads n/a.
    rt = FakeRuntime(make_config(tmp_path), gpus=[h200(0)])
    rt.store.append_gpu([gpu_sample(0, i / 10, 95.0, 20e9, 1e9) for i in range(300)]
                        + [gpu_sample(0, 30 + i / 10, 95.0, None, None) for i in range(300)])
    assert last_column_rates(_view(rt), 0, columns) == (None, None)
