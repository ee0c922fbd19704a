"""A replay seeking back is bounded in time for a long recording (issue 28 item 4): the file is
read again, but samples more than the store's history before the target are not fed, and the
fresh detector then finds the gaps the first pass found."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from faults import WAIT_S, until
from replay_fakes import pageable_recording

from gapwatch.config import build_config
from gapwatch.core.models import Gap, Notice, StateChange
from gapwatch.engine.replay import ReplayDriver
from gapwatch.engine.runtime import Runtime, build_runtime


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pageable_recording(tmp_path_factory.mktemp("rec"))


def _until(cond: Callable[[], bool], timeout_s: float = 20.0) -> bool:
    return until(cond, timeout_s)


def _dashboard_replay(recording: Path, tmp_path: Path) -> tuple[Runtime, ReplayDriver]:
    """A replay as the dashboard runs it (`interactive`: it waits at the end), not started; its
    automatic BREAKDOWN snapshots go to `tmp_path`, never the working directory."""
    rt = build_runtime(build_config({"snapshot": {"dir": str(tmp_path)}}),
                       f"replay:{recording}", speed=0)
    replay = rt.replay
    assert replay is not None
    replay.interactive = True
    return rt, replay


def _spans(gaps: list[Gap]) -> list[tuple[int, int | None, str]]:
    return [(g.start_mono_ns, g.end_mono_ns, g.kind) for g in gaps]


def test_a_seek_back_feeds_only_the_history_before_it_and_finds_the_same_gaps(
        recording: Path) -> None:
    """History 30 s (the detector's window; the snapshot and chart windows set to 10 s): on to
    80 s, then back to 70 s. The file is read again; the samples before 40 s are not fed (the
    store's first sample is at 40 s), and every gap the first pass closed after 41 s is found
    again, to the nanosecond."""
    config = build_config({"snapshot": {"history_s": 10}, "ui": {"windows_s": [10],
                                                                 "window_s": 10}})
    rt = build_runtime(config, f"replay:{recording}", speed=0.5)
    assert rt.store.history_s == 30.0
    closed: list[Gap] = []

    def heard(ev: Gap | StateChange | Notice) -> None:
        if isinstance(ev, Gap):
            closed.append(ev)

    rt.session.subscribe(heard)
    rt.start()
    replay = rt.replay
    assert replay is not None
    try:
        assert _until(lambda: replay.start_wall_s is not None)
        start = replay.start_wall_s
        assert start is not None
        assert replay.seek_to(start + 80) is None
        assert _until(lambda: (replay.position_wall_s or 0) >= start + 80)
        first = [g for g in closed if g.end_s is not None and g.end_s < start + 70]
        closed.clear()
        assert replay.seek_to(start + 70) is None
        assert _until(lambda: replay.refed_from_wall_s is not None
                      and (replay.position_wall_s or 0) >= start + 70)
        samples = rt.store.snapshot().gpu_samples[0]
        refed = replay.refed_from_wall_s
    finally:
        rt.stop()
    assert refed is not None and start + 40 <= refed < start + 40.2
    assert samples[0].t_wall_s == refed  # nothing older was fed
    again = [g for g in first if g.start_s > start + 41]
    assert len(again) >= 5
    assert _spans([g for g in closed if g.start_s > start + 41
                   and g.end_s is not None and g.end_s < start + 70]) == _spans(again)


def test_the_dashboards_replay_can_go_back_from_the_end_of_the_file(
        recording: Path, tmp_path: Path) -> None:
    """In the dashboard (`interactive`) the end of the file settles the detector and says so
    (`done`, "ended"), then waits: a seek on says it is at the end, a seek back plays the file
    again (no longer done)."""
    rt, replay = _dashboard_replay(recording, tmp_path)
    rt.start()
    try:
        assert _until(lambda: rt.status().done)
        words = replay.position_words()
        assert replay.at_end and words is not None and words.endswith(" ended")
        assert replay.seek_by(10) == "the replay is at its end: ←, [ or Home go back"
        assert replay.seek_next_gap() == "the replay has ended"
        start = replay.start_wall_s
        assert start is not None
        replay.paused = True  # so that it stays where the seek takes it
        assert replay.seek_to(start + 30) is None
        assert _until(lambda: not rt.status().done
                      and start + 30 <= (replay.position_wall_s or 0) < start + 31)
    finally:
        rt.stop()


async def test_the_banner_goes_when_the_dashboard_seeks_back_from_the_end(
        recording: Path, tmp_path: Path) -> None:
    from ui_fakes import screen_text

    from gapwatch.ui.app import GapwatchApp

    rt, replay = _dashboard_replay(recording, tmp_path)
    rt.start()
    try:
        app = GapwatchApp(rt)
        async with app.run_test(size=(80, 24)) as pilot:
            async def shown(ended: bool) -> bool:
                # Polled up to the suite's wait (`faults.WAIT_S`), not a fixed 10 s: on a
                # loaded box the seek back re-reads the recording slower than that.
                deadline = time.monotonic() + WAIT_S
                while ("REPLAY ENDED" in screen_text(app)) != ended:
                    if time.monotonic() > deadline:
                        return False
                    await pilot.pause(0.05)
                return True

            assert await shown(ended=True)
            await pilot.press("p", "home")  # paused: it stays at the start
            assert await shown(ended=False)
            assert not replay.at_end
    finally:
        rt.stop()
