"""The dashboard driven by a Pilot: breakdown flag, snapshots, pause, literal log text, keys."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from ui_fakes import (
    H200,
    H200_B,
    STARVED_GAPS,
    WALL0_S,
    FakeRuntime,
    Terminal,
    fill_breakdown,
    fixed_wall,
    gap,
    gpu_sample,
    make_config,
    screen_text,
    t_ns,
)

from gapwatch.core.detector import GapDetector
from gapwatch.core.models import StateChange
from gapwatch.ui.app import GapwatchApp
from gapwatch.ui.widgets.detail_chart import DetailChart
from gapwatch.ui.widgets.help_screen import HelpScreen
from gapwatch.ui.widgets.overview import Overview


def filled_app(snapshot_dir: Path, **ui: object) -> tuple[FakeRuntime, GapwatchApp]:
    """A dashboard over the fixed 60 s breakdown data, snapshots going to `snapshot_dir`."""
    rt = FakeRuntime(make_config(snapshot_dir, **ui))
    fill_breakdown(rt.store)
    return rt, GapwatchApp(rt, wall_clock=fixed_wall)


def feed_chaining_then_starved(rt: FakeRuntime, until_s: float) -> None:
    """Busy GPU, then idle stretches with PCIe trickling at 2.8 GB/s (4 % of the link)."""
    for i in range(int(until_s * 10)):
        s = i / 10
        idle = s >= 10 and any(a - 20 <= s < b - 20 for a, b in STARVED_GAPS + [(50, 52), (56, 58)])
        rt.session.on_gpu_samples([gpu_sample(0, s, 0.0 if idle else 96.0,
                                              2.8e9 if idle else 30e9)])


async def _snapshot(app: GapwatchApp, pilot: Pilot[Any]) -> None:
    """Press `s` and wait until the snapshot's worker is done and the screen says so."""
    await pilot.press("s")
    await app.workers.wait_for_complete()
    await pilot.pause()

async def test_the_breakdown_flag_appears_when_the_detector_raises_it(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    detector = GapDetector(config.detector, [H200], period_s=0.1)
    rt = FakeRuntime(config, detector=detector)
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(100, 30)) as pilot:
        feed_chaining_then_starved(rt, 9.0)
        await pilot.pause()
        app.redraw()
        await pilot.pause()
        assert "CHAINED" in screen_text(app)
        assert "BREAKDOWN" not in screen_text(app)
        feed_chaining_then_starved(rt, 40.0)  # the state change is posted from this "sampler"
        await pilot.pause()
        assert rt.store.snapshot().states[0].state == "BREAKDOWN"
        text = screen_text(app)
        assert "GPU0 BREAKDOWN since" in text
        assert "hint:" in text
        await app.workers.wait_for_complete()
        await pilot.pause()
    # BREAKDOWN also took an automatic snapshot.
    assert len(app.snapshots) == 1
    assert "entered BREAKDOWN" in (app.snapshots[0] / "summary.md").read_text()


async def test_s_writes_a_complete_snapshot_folder_and_shows_its_path(tmp_path: Path) -> None:
    rt, app = filled_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await _snapshot(app, pilot)
        assert len(app.snapshots) == 1
        folder = app.snapshots[0]
        assert f"snapshot: {folder}" in screen_text(app).replace("\n", "")
    assert folder.parent == tmp_path
    assert sorted(p.name for p in folder.iterdir()) == [
        "dashboard.svg", "gaps.json", "recording.jsonl.gz", "summary.md"]
    svg = (folder / "dashboard.svg").read_text()
    assert svg.startswith("<svg") and "BREAKDOWN" in svg
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    # The screen as it was, not the footer's "writing…" (it said so in its own picture); no
    # web font to fetch, every text run fitted to its cells whatever font the viewer has.
    assert "writing" not in svg
    assert "@font-face" not in svg and "cdnjs" not in svg and "woff" not in svg
    runs = re.findall(r"<text\b[^>]*textLength=[^>]*>", svg)
    assert runs and all('lengthAdjust="spacingAndGlyphs"' in run for run in runs)
    assert "font-family: \"Fira Code\", \"DejaVu Sans Mono\"" in svg


async def test_a_snapshot_failure_is_shown_and_monitoring_goes_on(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    rt, app = filled_app(blocker)
    async with app.run_test(size=(160, 48)) as pilot:
        await _snapshot(app, pilot)
        assert "snapshot FAILED" in screen_text(app)
        rt.store.upsert_gap(gap(99, 0, 59.0, None, kind="host_stall"))
        app.redraw()
        await pilot.pause()
        assert "host stall" in screen_text(app)  # the table's words for host_stall
        assert app.is_running


async def test_pause_freezes_the_view_while_detection_goes_on(tmp_path: Path) -> None:
    rt, app = filled_app(tmp_path, redraw_hz=20)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("p")
        frozen = app.view
        assert frozen is not None and frozen.paused
        assert "PAUSED" in screen_text(app)
        rt.session.on_gpu_samples([gpu_sample(0, 61.0, 3.0, 2.0e9)])
        rt.store.upsert_gap(gap(42, 0, 60.5, None, kind="host_stall"))
        await pilot.pause(0.2)  # several redraw ticks
        assert app.view is not None and app.view.snap is frozen.snap
        assert "host stall" not in screen_text(app)
        assert any(g.gap_id == 42 for g in rt.store.snapshot().gaps)  # the core went on
        rt.session._derived([StateChange(0, t_ns(61), WALL0_S + 61, "BREAKDOWN", 0.7, "x")])
        await pilot.pause()
        assert "since: GPU0 entered BREAKDOWN" in screen_text(app)
        await pilot.press("p")
        await pilot.pause()
        assert app.view is not None and app.view.snap is not frozen.snap
        assert "host stall" in screen_text(app)
        assert "PAUSED" not in screen_text(app)


async def test_markup_in_a_log_line_is_shown_literally(tmp_path: Path) -> None:
    rt, app = filled_app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:  # narrow: the log pane is full width
        await pilot.pause()
        text = screen_text(app)
    assert "[bold]not markup[/bold] [link=x]y[/link]" in text
    assert "[unpinned] WARN cuzk_core::pool" in text


async def test_keys_cycle_gpu_window_detail_and_help(tmp_path: Path) -> None:
    rt = FakeRuntime(make_config(tmp_path), gpus=[H200, H200_B])
    fill_breakdown(rt.store, gpus=(0, 1))
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "GPU0 · last 60 s" in screen_text(app)
        await pilot.press("g")
        assert app.gpu == 1 and "GPU1 · last 60 s" in screen_text(app)
        await pilot.press("g")
        assert app.gpu == 0
        await pilot.press("w")
        assert app.window_s == 120.0 and "last 2 min" in screen_text(app)
        for expected in (600.0, 30.0, 60.0):
            await pilot.press("w")
            assert app.window_s == expected
        await pilot.press("d")
        await pilot.pause()
        detail = app.query_one(DetailChart)
        assert detail.display and not app.query_one(Overview).display
        assert detail.builds == 1
        await pilot.press("d")
        assert app.query_one(Overview).display
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("q")
    assert not app.is_running


async def test_an_empty_store_waits_without_crashing(tmp_path: Path) -> None:
    rt = FakeRuntime(make_config(tmp_path))
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "waiting for the first samples" in screen_text(app)
        await _snapshot(app, pilot)  # a snapshot of nothing is still a valid folder
        assert len(app.snapshots) == 1


def test_mono_colour_is_this_apps_no_color_and_leaves_the_environment_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from textual.filter import Monochrome

    monkeypatch.delenv("NO_COLOR", raising=False)
    app = GapwatchApp(FakeRuntime(make_config(tmp_path, color="mono")))
    assert app.no_color
    assert any(isinstance(f, Monochrome) for f in app.get_line_filters())
    assert "NO_COLOR" not in os.environ
    plain = GapwatchApp(FakeRuntime(make_config(tmp_path)))
    assert not plain.no_color
    assert not any(isinstance(f, Monochrome) for f in plain.get_line_filters())


async def test_a_timer_tick_that_comes_after_the_widgets_are_gone_is_ignored(
    tmp_path: Path,
) -> None:
    """On a loaded box the status and redraw timers can fire while the app closes, after its
    widgets were removed: they used to raise NoMatches ('StatusFooter') out of the app."""
    rt, app = filled_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
    calls = rt.status_calls
    app.refresh_status()
    app.redraw(force=True)
    assert rt.status_calls == calls  # nothing asked, nothing drawn, nothing raised


async def test_a_redraw_tick_between_repaints_takes_no_snapshot_unless_words_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Numbers are repainted once a second and words at once: a tick in between that finds
    only new samples builds nothing (no store snapshot); a new gap is still shown at that tick."""
    rt, app = filled_app(tmp_path, redraw_hz=0.5)  # the timer stays out of the way
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        taken: list[int] = []
        real = rt.store.snapshot

        def counted() -> object:
            snap = real()
            taken.append(snap.version)
            return snap

        monkeypatch.setattr(rt.store, "snapshot", counted)
        app.redraw(force=True)  # a repaint now: the next second's numbers wait
        assert len(taken) == 1
        rt.store.append_gpu([gpu_sample(0, 60.1, 96.0, 30e9)])
        app.redraw()
        assert len(taken) == 1  # only a number changed: nothing built
        rt.store.upsert_gap(gap(99, 0, 60.0, None))
        app.redraw()
        await pilot.pause()
        assert len(taken) == 2  # a new gap is said at once
        assert app.view is not None and app.view.snap.gaps[-1].gap_id == 99


@pytest.mark.parametrize("a_file", [False, True], ids=["written", "failed"])
async def test_a_snapshot_dir_with_control_characters_reaches_no_terminal_through_the_footer(
        tmp_path: Path, a_file: bool) -> None:
    """`[snapshot] dir` holding an OSC 52, a C1 CSI and a bidi override: the footer said the
    path raw ("snapshot: PATH", "snapshot FAILED: ... PATH"), only the toast wrote it out."""
    from gapwatch.ui.widgets.status_footer import StatusFooter

    where = tmp_path / "snaps\x1b]52;c;ZXZpbA==\x07\x9b2J\u202e"
    if a_file:
        where.write_text("a file, not a folder")
    rt, app = filled_app(where)
    async with app.run_test(size=(300, 48)) as pilot:
        await _snapshot(app, pilot)
        footer = "".join(row.plain for row in app.query_one(StatusFooter).build_rows())
        assert ("snapshot FAILED" in footer) == a_file and len(app.snapshots) == (not a_file)
        assert "snaps\\x1b]52;c;ZXZpbA==\\x07\\x9b2J\\u202e" in footer
        assert not any(c in footer for c in ("\x1b", "\x07", "\x9b", "\u202e"))
        assert app.is_running


async def test_a_source_that_ended_without_a_sample_says_so_instead_of_waiting(
        tmp_path: Path) -> None:
    """A recording of its header alone, replayed: the header said "waiting for the first
    samples…" for good, as if more were coming, after the replay had ended."""
    rt = FakeRuntime(make_config(tmp_path))
    rt.done = True
    app = GapwatchApp(rt, wall_clock=fixed_wall, status_every_s=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.3)
        text = screen_text(app)
        for key in ("d", "t", "g", "w", "p", "enter", "escape", "up", "pageup", "p"):
            await pilot.press(key)  # every key with no data: nothing raises
        await pilot.pause()
        assert app.is_running
    assert "waiting for the first samples" not in text
    assert "no readings: the source ended before its first sample" in text


async def test_paused_before_the_first_sample_the_end_of_the_source_is_still_said(
        tmp_path: Path) -> None:
    """`p` pressed while waiting for data, then the source ends with none: the header kept
    "waiting for the first samples…" beside the footer's "source ended" until unpaused."""
    rt = FakeRuntime(make_config(tmp_path))
    app = GapwatchApp(rt, wall_clock=fixed_wall, status_every_s=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
        await pilot.press("p")
        assert app.paused and "waiting for the first samples" in screen_text(app)
        rt.done = True
        await pilot.pause(0.4)
        text = screen_text(app)
        assert app.paused
    assert "waiting for the first samples" not in text
    assert "no readings: the source ended before its first sample" in text


async def test_a_storm_of_prover_notices_keeps_at_most_three_toasts_on_screen(
    tmp_path: Path,
) -> None:
    """A restart and panic storm: the session says 5 notices of each kind every 10 s and their
    summaries, each a toast of up to 13 rows for 8 s, stacked on the right half of the pane
    (at 80x24 they covered it for the storm's length). At most 3 on screen, the newest shown."""
    from textual.widgets._toast import Toast

    from gapwatch.core.models import Notice
    from gapwatch.ui.messages import NoticeRaised

    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.pause()
        for i in range(200):
            kind = ("prover restart", "prover error", "prover restart cost")[i % 3]
            app.post_message(NoticeRaised(Notice(
                t_ns(50), WALL0_S + 50, "error" if i % 3 == 1 else "warning",
                f"{kind} at 09:07:11: storm line {i} " + "x" * 300)))
        await pilot.pause(0.3)
        toasts = list(app.screen.query(Toast))
        assert 1 <= len(toasts) <= 3
        assert any("storm line 199" in str(t.render()) for t in toasts)


async def test_at_80x24_a_storm_of_notices_covers_at_most_a_quarter_of_the_pane(
    tmp_path: Path,
) -> None:
    """explore9 #6: at 80x24 three toasts of up to 13 rows each covered the right half of the
    gap table, the log and the footer's alert for 10-20 s of a restart or XID storm. There one
    toast at a time now, of a few rows: the newest notice's first words; the worst is on the
    footer's alert line, every one in the help screen's status and the recording. A taller
    pane keeps more (two at 120x40)."""
    from textual.widgets._toast import Toast

    from gapwatch.core.models import Notice
    from gapwatch.ui.messages import NoticeRaised

    for size, at_once in (((80, 24), 1), ((120, 40), 2)):
        rt = FakeRuntime(make_config(tmp_path))
        fill_breakdown(rt.store)
        app = GapwatchApp(rt, wall_clock=fixed_wall)
        async with app.run_test(size=size, notifications=True) as pilot:
            await pilot.pause()
            for i in range(6):
                app.post_message(NoticeRaised(Notice(
                    t_ns(50), WALL0_S + 50, "warning",
                    f"prover restart at 09:07:1{i}: notice {i} " + "word " * 100)))
            await pilot.pause(0.3)
            toasts = list(app.screen.query(Toast))
            assert len(toasts) == at_once
            assert "notice 5" in str(toasts[-1].render())
            covered = sum(t.outer_size.height + 1 for t in toasts)  # + its margin
            assert covered <= size[1] // 2
            if size == (80, 24):
                assert covered <= 24 // 3


#: A restart's notice with two daemons (review6 #7): longer than a toast at 80x24 holds.
RESTART_NOTICE = (
    "daemon 127.0.0.1:9820 (GPU 0): cuzk restarted with no shutdown line before it (killed or "
    "crashed: cuzk handles SIGINT alone, so systemd's default SIGTERM, an OOM kill or a crash "
    "ends it without a word)")


async def test_at_80x24_a_toast_too_long_for_its_rows_is_cut_at_a_word_with_its_mark(
    tmp_path: Path,
) -> None:
    """review6 #7: at 80x24 a toast holds 148 cells, and a restart's notice was cut inside a
    word (`...systemd's default S…`). It ends at a whole word, ` …` after it."""
    from textual.widgets._toast import Toast

    from gapwatch.core.models import Notice
    from gapwatch.ui.app import toast_room
    from gapwatch.ui.messages import NoticeRaised

    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.pause()
        app.post_message(NoticeRaised(Notice(t_ns(50), WALL0_S + 50, "warning",
                                             RESTART_NOTICE)))
        await pilot.pause(0.3)
        [toast] = list(app.screen.query(Toast))
        shown = toast._notification.message
    room = toast_room(80, 24)[1]
    assert len(RESTART_NOTICE) > room >= len(shown)
    assert shown.endswith(" …")
    kept = shown.removesuffix(" …")
    assert RESTART_NOTICE.startswith(kept) and RESTART_NOTICE[len(kept)] == " "
    assert kept.endswith("systemd's default")


@pytest.mark.parametrize("keys", [[], ["question_mark"], ["enter"]],
                         ids=["dashboard", "help", "gap detail"])
async def test_toasts_that_time_out_leave_nothing_drawn_on_the_pane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keys: list[str],
) -> None:
    """Three notices of a few lines each, one after another. Once, their toasts were taller
    than the pane, Textual's rack scrolled to show the newest, and the layout that removed a
    toast once it timed out repainted where it was before that scroll: its text stayed drawn
    over the charts and the headline until a full repaint (`?`, Esc). Since, the toasts are
    trimmed to what the pane holds (`toast_room`: one at 80x24, its rows cut), so the rack
    no longer scrolls here and `repaint_where_toasts_leave` (kept for a rack that would) is
    not what this pins: that nothing of a timed-out toast stays drawn, whichever rule keeps
    it so. What the terminal was sent is what a full repaint draws."""
    from textual.widgets._toast import Toast

    from gapwatch.core.models import Notice
    from gapwatch.ui import app as app_module
    from gapwatch.ui.messages import NoticeRaised

    # Long enough that the third toast is still up when looked at on a loaded box (at 0.5 s
    # it had timed out there once, the clean clone beside a reviewer): each then times out
    # when the test says, its timer's own callback (`Toast._expire`) run in turn, oldest
    # first, as their timers would (waiting 2 s of real timeouts cost each case its wall).
    monkeypatch.setattr(app_module, "TOAST_S", 60.0)
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    terminal = Terminal(app)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()
        screen = app.screen
        for i in range(3):
            app.post_message(NoticeRaised(Notice(
                t_ns(50), WALL0_S + 50, "warning",
                f"prover restart at 09:07:1{i}: notice {i} " + "x" * 300)))
            await pilot.pause()
        assert "notice 2" in terminal.text()
        assert app.screen is screen and len(app.screen_stack) == 1 + len(keys)
        expired: set[Toast] = set()
        while left := [t for t in app.screen.query(Toast) if t not in expired]:
            left[0]._expire()  # the oldest on the rack
            expired.add(left[0])
            await pilot.pause()
        assert len(expired) >= 1 and not app.screen.query(Toast)
        await pilot.pause()
        sent, full = terminal.text(), screen_text(app)
    assert "xxxxxxxx" not in sent
    assert sent.splitlines() == [line.rstrip() for line in full.splitlines()]


async def test_a_notice_of_a_megabyte_is_a_toast_of_a_few_rows_not_a_stall(
    tmp_path: Path,
) -> None:
    """A recording's notice is as long as its writer made it: a toast of a 900 KB notice was
    wrapped whole on the UI thread (4.6 s in which no key was answered) and stood thousands of
    rows tall over the dashboard. The toast says its first 500 cells (`TOAST_MAX_CELLS`), and
    "…"; the whole notice stays in the store and the recording."""
    from textual.widgets._toast import Toast

    from gapwatch.core.models import Notice
    from gapwatch.ui.messages import NoticeRaised

    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.pause()
        app.post_message(NoticeRaised(Notice(
            t_ns(50), WALL0_S + 50, "warning", "prover said: " + "word \u202e" * 150_000)))
        await pilot.pause(0.3)
        toasts = list(app.screen.query(Toast))
        assert len(toasts) == 1
        shown = toasts[0]._notification.message
        assert shown.startswith("prover said: word \\u202e") and shown.endswith("…")
        assert len(shown) <= 500
        assert toasts[0].outer_size.height <= 20
