"""Replay controls (the dashboard's ←/→, [ ], Home/End, +/-, p) on a real runtime over a
recording: seeking on feeds at once, seeking back starts the file again with an empty store and
detector and feeds up to the target, the next gap is reached, a pause holds the position, the
speed steps, the position is said in the status; a replay whose records go to a recording
cannot go back and says why."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from faults import until
from replay_fakes import pageable_recording

from gapwatch.config import build_config
from gapwatch.engine.replay import ReplayDriver
from gapwatch.engine.runtime import Runtime, build_runtime


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pageable_recording(tmp_path_factory.mktemp("rec"))


def _until(cond: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    return until(cond, timeout_s)


def _started(path: Path, speed: float = 0.5, **kw: object) -> tuple[Runtime, ReplayDriver]:
    # Automatic snapshots (BREAKDOWN) beside the recording, never in the working directory.
    config = build_config({"snapshot": {"dir": str(path.parent / "snapshots")}})
    rt = build_runtime(config, f"replay:{path}", speed=speed, **kw)  # type: ignore[arg-type]
    rt.start()
    replay = rt.replay
    assert replay is not None
    assert _until(lambda: replay.position_wall_s is not None)
    return rt, replay


def _at_40_s(replay: ReplayDriver) -> float:
    """Seek `replay` 40 s into its file and wait until it is there; the file's start."""
    start = replay.start_wall_s
    assert start is not None
    assert replay.seek_to(start + 40) is None
    assert _until(lambda: (replay.position_wall_s or 0) >= start + 40)
    return start


def test_seeking_on_feeds_at_once_and_back_starts_over_with_an_empty_store(
        recording: Path) -> None:
    rt, replay = _started(recording)
    try:
        start = _at_40_s(replay)
        gaps_at_40 = {g.gap_id for g in rt.store.snapshot().gaps}
        assert gaps_at_40  # the pageable breakdown began within 40 s
        assert replay.seek_to(start + 10) is None  # back: the file again, fed up to 10 s
        assert _until(lambda: start + 10 <= (replay.position_wall_s or 0) < start + 15)
        snap = rt.store.snapshot()
        assert all(g.end_s is None or g.end_s < start + 15 for g in snap.gaps)
        samples = snap.gpu_samples[0]
        assert samples[0].t_wall_s < start + 1  # from the file's start again
        assert samples[-1].t_wall_s < start + 15  # nothing of the later 40 s kept
        words = replay.position_words()
        assert words is not None and words.startswith("replay ") and "(+0:1" in words
        assert "replay " in rt.status().replay  # type: ignore[operator]
    finally:
        rt.stop()


def test_the_next_gap_is_reached_and_a_pause_holds_the_position(recording: Path) -> None:
    rt, replay = _started(recording)
    try:
        before = len([g for g in rt.store.snapshot().gaps if g.end_s is not None])
        assert replay.seek_next_gap() is None
        assert _until(lambda: len([g for g in rt.store.snapshot().gaps
                                   if g.end_s is not None]) > before)
        assert replay.toggle_pause()
        time.sleep(0.3)
        held = replay.position_wall_s
        time.sleep(0.5)
        assert replay.position_wall_s == held
        assert "paused" in (replay.position_words() or "")
        assert not replay.toggle_pause()
        assert _until(lambda: replay.position_wall_s != held)
    finally:
        rt.stop()


def test_speed_steps_through_its_list(recording: Path) -> None:
    rt, replay = _started(recording, speed=1.0)
    try:
        assert replay.step_speed(True) == 2.0
        assert replay.step_speed(False) == 1.0
        assert replay.step_speed(False) == 0.5
        assert "x0.5" in (replay.position_words() or "")
    finally:
        rt.stop()


def test_a_replay_that_records_cannot_go_back_and_says_why(recording: Path, tmp_path: Path) -> None:
    rt, replay = _started(recording, record_path=str(tmp_path / "again.jsonl.gz"))
    try:
        start = replay.start_wall_s
        assert start is not None
        assert replay.seek_to(start + 20) is None  # on is fine
        assert _until(lambda: (replay.position_wall_s or 0) >= start + 20)
        why = replay.seek_to(start)
        assert why is not None and "cannot go back" in why
    finally:
        rt.stop()


async def test_the_dashboards_keys_move_a_replay(recording: Path) -> None:
    from ui_fakes import screen_text

    from gapwatch.ui.app import GapwatchApp

    rt, replay = _started(recording)
    try:
        app = GapwatchApp(rt, status_every_s=0.2)
        async with app.run_test(size=(80, 24)) as pilot:
            start = replay.start_wall_s
            assert start is not None
            await pilot.press("right", "right")  # 20 s on (the second from where it is then)
            assert _until(lambda: (replay.position_wall_s or 0) >= start + 19)
            await pilot.press("plus")
            assert replay.speed == 1.0
            await pilot.press("end")
            assert _until(lambda: rt.done.is_set())
            await pilot.pause(0.5)
            text = screen_text(app)
            assert "REPLAY ENDED" in text
            await pilot.press("home")
            await pilot.pause()
            assert "the replay has ended" in screen_text(app)
    finally:
        rt.stop()


async def test_a_paused_replay_says_where_it_is_and_a_seek_claims_no_breakdown_since(
        recording: Path) -> None:
    """explore9 #7: paused at 80x24 the footer said `snapshot: …/gapwatch-snapshot-… · period
    100 ms (replayed)`, neither where the replay was nor `paused` (the position, 3 cells longer
    paused, lost its place to the snapshot's path); after `[` the banner said `since: GPU0
    entered BREAKDOWN` of the data the seek fed again. Paused, the position leads the status;
    a seek adds no `since:`, and the banner does not say sampling goes on."""
    from ui_fakes import screen_text

    from gapwatch.ui.app import GapwatchApp
    from gapwatch.ui.widgets.status_footer import StatusFooter

    rt, replay = _started(recording, speed=4.0)
    try:
        start = _at_40_s(replay)  # the pageable breakdown began: BREAKDOWN entered
        app = GapwatchApp(rt, status_every_s=0.2)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.5)
            app.query_one(StatusFooter).show_message(
                "snapshot: …/gapwatch-snapshot-vm-20261205T211258Z")
            await pilot.press("p")
            assert _until(lambda: replay.paused)
            await pilot.pause(0.5)
            footer = screen_text(app).splitlines()[22]
            assert footer.startswith("replay ") and " paused" in footer
            at = replay.position_wall_s or 0.0
            await pilot.press("left_square_bracket")  # back to the previous gap
            assert _until(lambda: (replay.position_wall_s or at) < at)
            await pilot.pause(0.5)
            text = screen_text(app)
            assert start < (replay.position_wall_s or 0.0)
        assert "PAUSED" in text and "since:" not in text
        assert "sampling and detection go on" not in text
        assert text.splitlines()[22].startswith("replay ")
    finally:
        rt.stop()


async def test_a_playing_replay_says_where_it_is_before_a_snapshots_path(
        recording: Path) -> None:
    """verify9: playing, the footer read `snapshot: …/gapwatch-snapshot-… · replay 22:23:03
    (+1:04) x10`, the snapshot's path first, where docs/dashboard.md says the position comes
    first and a paused replay's line leads with it: one order, whether it plays or not."""
    from ui_fakes import screen_text

    from gapwatch.ui.app import GapwatchApp
    from gapwatch.ui.widgets.status_footer import StatusFooter

    rt, replay = _started(recording)
    try:
        app = GapwatchApp(rt, status_every_s=0.2)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.5)
            app.query_one(StatusFooter).show_message(
                "snapshot: …/gapwatch-snapshot-vm-20261205T222202Z")
            await pilot.pause(0.5)
            footer = screen_text(app).splitlines()[22]
        assert not replay.paused
        assert footer.startswith("replay ") and " · snapshot: …/gapwatch-snapshot-" in footer
    finally:
        rt.stop()


async def test_replay_keys_on_a_live_source_say_what_they_are_for(tmp_path: Path) -> None:
    from ui_fakes import FakeRuntime, fill_breakdown, make_config, screen_text

    from gapwatch.ui.app import GapwatchApp

    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    app = GapwatchApp(rt)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("right")
        await pilot.pause()
        assert "seeking is for replays" in screen_text(app)


def test_a_seek_back_after_the_file_was_removed_or_replaced_says_why_and_the_replay_goes_on(
        recording: Path, tmp_path: Path) -> None:
    """A seek back reads the file again: removed, cut or replaced by another run's recording
    since the replay opened it, the reopen raised out of the replay's loop, and its thread
    died (THREAD DIED, exit 1, no seek any more). Now the seek is refused in a notice, the
    replay goes on from where it was, and once the file is back a seek back plays it again."""
    import msgspec

    from gapwatch.sinks.recorder import write_recording
    from gapwatch.sources.files import read_any

    path = tmp_path / "r.jsonl.gz"
    shutil.copy(recording, path)
    rt, replay = _started(path)
    try:
        start = _at_40_s(replay)
        path.unlink()
        assert replay.seek_to(start + 10) is None

        def said() -> list[str]:
            return [n.message for n in rt.store.snapshot().notices
                    if "cannot go back" in n.message]

        assert _until(lambda: len(said()) == 1)
        assert "no such file" in said()[0] and "stays where it is" in said()[0]
        held = replay.position_wall_s or 0
        assert held >= start + 40 and _until(lambda: (replay.position_wall_s or 0) > held)
        # Another run's recording in its place: not fed after this one's records.
        other = read_any(recording)
        write_recording(path, msgspec.structs.replace(
            other.header, started_wall_s=other.header.started_wall_s + 3600), other.records)
        assert replay.seek_to(start + 10) is None
        assert _until(lambda: len(said()) == 2)
        assert "no longer the recording this replay opened" in said()[1]
        assert (replay.position_wall_s or 0) >= start + 40
        shutil.copy(recording, path)  # the file back: going back works again
        assert replay.seek_to(start + 10) is None
        assert _until(lambda: start + 10 <= (replay.position_wall_s or 0) < start + 15)
        assert not replay.died and replay.running()
    finally:
        rt.stop()
