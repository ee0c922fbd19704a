"""The copy trace on the dashboard: H2D bytes/s of each GPU split by host memory kind, with the
rate the copies themselves ran at; nothing of it without copy-trace data."""

from __future__ import annotations

from pathlib import Path

from ui_fakes import WALL0_S, FakeRuntime, fill_breakdown, make_config, screen_text

from gapwatch.core.models import CopyRecord
from gapwatch.ui.app import GapwatchApp
from gapwatch.ui.widgets.copy_line import CopyLine, copy_runs

GIB = 1 << 30


def copy(start: float, end: float, kind: str, *, gpu: int = 0, stream: int = 13) -> CopyRecord:
    return CopyRecord(start_wall_s=WALL0_S + start, end_wall_s=WALL0_S + end, bytes=3 * GIB // 2,
                      direction="h2d", src_kind=kind, dst_kind="device",  # type: ignore[arg-type]
                      gpu=gpu, cuda_device=gpu, stream_id=stream, context_id=1,
                      correlation_id=int(start * 1000), pid=4242)


def test_a_gpus_line_shows_pageable_beside_pinned_with_the_rates_the_copies_ran_at() -> None:
    copies = [copy(52.0, 52.027, "pinned"), copy(55.0, 55.5, "pageable")]
    text = "".join(t for t, _ in copy_runs(0, copies, WALL0_S + 60.0))
    assert text.startswith("H2D GPU0 last 10 s")
    assert "pinned 0.16 GB/s (copies ran at 59.7 GB/s)" in text
    assert "pageable 0.16 GB/s (copies ran at 3.2 GB/s)" in text


def test_copies_older_than_the_window_are_not_counted() -> None:
    text = "".join(t for t, _ in copy_runs(0, [copy(10.0, 10.5, "pageable")], WALL0_S + 60.0))
    assert text.endswith("· no copies")


async def test_the_copy_line_shows_at_80x24_once_copies_arrive(tmp_path: Path) -> None:
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    app = GapwatchApp(rt)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert not app.query_one(CopyLine).display
        assert "H2D GPU0" not in screen_text(app)
        rt.store.append_copy(copy(57.0, 57.5, "pageable"))
        app.refresh_status()
        app.redraw(force=True)
        await pilot.pause(1.2)
        assert app.query_one(CopyLine).display
        assert "H2D GPU0 last 10 s · pageable" in screen_text(app)
