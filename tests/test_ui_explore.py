"""Every gap explorable, live, paused and in a replay: ↑/↓ (and the mouse) select a row of the gap
table, Enter opens the gap whole (hint, evidence, advice with payoff, copies by memory kind,
partitions, host pressure, log lines around it), Esc goes back; PgUp/PgDn scroll the log; the
gap table speaks an operator's words. Driven through Textual's pilot, reading the screen."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from msgspec.structs import replace
from ui_fakes import (
    LAG_S,
    STARVED_GAPS,
    FakeRuntime,
    fill_breakdown,
    fixed_wall,
    log_event,
    make_config,
    screen_text,
)

from gapwatch.core.evidence_types import (
    CopiesEvidence,
    CopyKindEvidence,
    EventEvidence,
    HostEvidence,
    ProcessEvidence,
)
from gapwatch.core.models import Gap
from gapwatch.ui.app import GapwatchApp
from gapwatch.ui.gap_detail import GapDetailScreen, gap_detail_lines
from gapwatch.ui.kinds import kind_words
from gapwatch.ui.widgets.gap_table import GapTable
from gapwatch.ui.widgets.log_pane import LogPane

COPIES = CopiesEvidence(
    traced=True, memory_kind="pageable", memory_kind_source="copy trace",
    by_kind={"pageable": CopyKindEvidence(count=7, bytes=11 << 30, h2d_bytes=11 << 30,
                                          d2h_bytes=0, copy_s=3.4, streams=[13, 17],
                                          bytes_per_s=3.3e9, busy_s=2.8, in_gap_s=1.39,
                                          in_gap_bytes=4 << 30, in_gap_copy_s=1.3)},
    processes=[ProcessEvidence(pid=512, name="cuzk", pinned_bytes=8 << 20,
                               heap_bytes=27 << 30)],
    window_start_s=100.0, gap_start_s=102.0)


def _runtime(tmp_path: Path) -> FakeRuntime:
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    # The oldest gap (id 1) with what a live session attaches: copies, the prover's words, host
    # pressure, its partitions' log lines.
    g = next(g for g in rt.store.snapshot().gaps if g.gap_id == 1)
    rt.store.upsert_gap(replace(
        g, copies=COPIES, prover_cause="pinned_pool",
        prover_evidence=["pinned pool: 10 checkout(s) FAILED, falling back to pageable a/b/c"],
        host=HostEvidence(psi_mem_some_share_max=0.39, major_faults_per_s_max=154.0),
        log_events=[EventEvidence(t_s=g.start_s, name="partition synthesis complete",
                                  partition=7, warning="unpinned")]))
    for i in range(40):  # enough log lines to scroll
        rt.store.append_log(log_event(30.0 + i * 0.5, f"INFO cuzk line {i}"))
    return rt


def test_a_gaps_detail_holds_everything_known_of_it(tmp_path: Path) -> None:
    rt = _runtime(tmp_path)
    snap = rt.store.snapshot()
    gap = next(g for g in snap.gaps if g.gap_id == 1)
    text = "\n".join(gap_detail_lines(gap, snap))
    assert text.startswith("gap 1 on GPU0: slow copies (pageable) (pcie_starved), 1.20 s idle")
    assert "hint\n  pageable host-to-device copies at 2.8 GB/s" in text
    assert "the prover says it waited: pinned pool" in text
    assert "pinned pool: 10 checkout(s) FAILED" in text
    assert "what to change (payoff over the last 60 s of this GPU)" in text
    assert "memory behind the copies: pageable (from copy trace)" in text
    # The window's copies (11 GiB, the 2 s before the gap included), what moved in the gap.
    assert "copies by host memory kind, in the gap and the 2 s before it" in text
    assert "pageable     7 copies" in text and "(1.39 s, 4.0 GiB of it in the gap)" in text
    assert "partition 7: unpinned" in text
    assert "tasks stalled on memory (PSI), max: 39 % of the time" in text
    # Log lines from 5 s before the gap to 5 s after, the ones inside it marked.
    assert "INFO cuzk line 6" in text and "INFO cuzk line 2 " not in text
    assert any(line.startswith(" >") for line in text.splitlines())


def test_a_gap_the_prover_said_nothing_of_says_what_gapwatch_lacks(tmp_path: Path) -> None:
    """Without the prover's log and /status (the store's cuzk prover saw neither), a gap's
    detail says so, not a guess: the prover package's own `lacks`, word for word."""
    rt = _runtime(tmp_path)
    snap = rt.store.snapshot()
    gap = next(g for g in snap.gaps if not g.prover_cause and not g.prover_evidence)
    text = "\n".join(gap_detail_lines(gap, snap))
    assert "none from the prover: gapwatch lacks" in text
    assert "  - no cuzk /status snapshot (poll it: --cuzk-status URL)" in text
    # Once the prover has nothing left to lack, the detail says the prover named no wait.
    text = "\n".join(gap_detail_lines(gap, dataclasses.replace(snap, prover_lacks=())))
    assert "none from the prover: it named no wait around this gap" in text
    assert "gapwatch lacks" not in text


def test_kinds_read_as_an_operator_says_them() -> None:
    assert kind_words("pcie_starved", "pageable") == "slow copies (pageable)"
    assert kind_words("pcie_starved") == "slow copies"
    assert kind_words("transfer_bound") == "copies not overlapped"
    assert kind_words("host_stall") == "host stall"


async def test_arrows_select_enter_opens_the_gap_and_esc_goes_back(tmp_path: Path) -> None:
    app = GapwatchApp(_runtime(tmp_path), wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.query_one(GapTable)
        assert table.selected() is None
        for _ in range(6):  # down past the end: stays on the oldest
            await pilot.press("down")
        selected = table.selected()
        assert selected is not None and selected.gap_id == 1
        screen = screen_text(app)
        assert "enter: whole gap" in screen
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, GapDetailScreen)
        assert "gap 1 on GPU0: slow copies (pageable)" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, GapDetailScreen)
        await pilot.press("up")
        selected = table.selected()
        assert selected is not None and selected.gap_id == 2
        await pilot.press("escape")  # lets go: the table follows the newest again
        assert table.selected() is None


async def test_a_selection_holds_while_new_gaps_arrive_and_when_paused(tmp_path: Path) -> None:
    rt = _runtime(tmp_path)
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("down", "down")
        table = app.query_one(GapTable)
        chosen = table.selected()
        assert chosen is not None
        a, b = STARVED_GAPS[-1]
        rt.store.upsert_gap(Gap(77, 0, "host_stall", 0, chosen.start_s + 20, None, None, 0.5,
                                1e6, None, 63e9, hint="quiet"))
        app.redraw(force=True)
        await pilot.pause()
        assert table.selected() == chosen
        await pilot.press("p", "enter")
        await pilot.pause()
        assert isinstance(app.screen, GapDetailScreen)
        assert f"gap {chosen.gap_id} on GPU0" in screen_text(app)


async def test_a_click_selects_a_row_and_a_second_click_opens_it(tmp_path: Path) -> None:
    app = GapwatchApp(_runtime(tmp_path), wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.query_one(GapTable)
        await pilot.click(GapTable, offset=(2, 1))
        first = table.selected()
        assert first is not None and first == table.newest_first()[0]
        await pilot.click(GapTable, offset=(2, 1))
        await pilot.pause()
        assert isinstance(app.screen, GapDetailScreen)


async def test_the_log_scrolls_back_and_says_so(tmp_path: Path) -> None:
    app = GapwatchApp(_runtime(tmp_path), wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        log = app.query_one(LogPane)
        before = screen_text(app)
        assert "INFO cuzk line 39" in before
        await pilot.press("pageup")
        await pilot.pause()
        after = screen_text(app)
        assert log.back > 0 and "lines back" in after
        assert "INFO cuzk line 39" not in after
        await pilot.press("pagedown", "pagedown")
        await pilot.pause()
        assert log.back == 0 and "INFO cuzk line 39" in screen_text(app)


def test_gap_marks_sit_where_the_gaps_do() -> None:
    """The fixture's starved gaps lie where the marks are drawn (guards the data above)."""
    assert all(b > a for a, b in STARVED_GAPS) and LAG_S == 0.1


async def test_a_gap_opened_while_open_follows_it_as_it_grows_and_closes(tmp_path: Path) -> None:
    """explore9 #9: the box Enter opens kept saying `to still open`, `0.39 s idle` 6 s after
    the gap had closed: what it was when it was opened. It follows the gap now (the scrollbar's
    thumb, `▇▇` beside the box's right edge in a text capture, is the box's own, not the chart
    drawn through it). Paused, it stays as the frozen view has it."""
    from ui_fakes import gap, gpu_sample

    rt = _runtime(tmp_path)
    rt.store.upsert_gap(gap(77, 0, 59.5, None))
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("enter")  # the newest gap, still open
        await pilot.pause()
        assert isinstance(app.screen, GapDetailScreen)
        assert "to still open" in screen_text(app)
        for i in range(1, 16):
            rt.store.append_gpu([gpu_sample(0, 60 + i / 10, 97.0, 40e9, 1e9)])
        rt.store.upsert_gap(gap(77, 0, 59.5, 61.0))
        app._tick()  # the once-a-second redraw
        await pilot.pause()
        text = screen_text(app)
        assert "gap 77 on GPU0: slow copies (pcie_starved), 1.50 s idle" in text
        assert "to 09:07:22.000" in text and "still open" not in text
        await pilot.press("escape", "p", "enter")  # paused: the frozen view's gap
        await pilot.pause()
        rt.store.upsert_gap(replace(gap(77, 0, 59.5, 61.0), hint="a later word"))
        app._tick()
        await pilot.pause()
        assert "a later word" not in screen_text(app)
