"""The fleet screen driven by a Pilot at 80x24: hundreds of rows scroll, worst first; a
Prometheus that starts failing is said in the footer while the last table stays; Enter opens a
box's recent minutes, saying what Prometheus can and cannot give."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from fleet_fakes import FakeProm, Reply, box, fake_prometheus, matrix, promql, refused, vector
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import DataTable, Static
from ui_fakes import screen_text

from gapwatch.fleet.client import PromClient, PromError
from gapwatch.fleet.detail import WHAT_IS_SHOWN
from gapwatch.fleet.rows import FleetOptions
from gapwatch.ui import fleet as fleet_ui
from gapwatch.ui.fleet import DetailScreen, FleetApp


def _footer(app: FleetApp) -> str:
    return str(app.query_one("#fleet-footer", Static).content)


async def _until(pilot: Pilot[Any], cond: Callable[[], bool]) -> None:
    """Let the app run until `cond` holds (5 s at most; the test's assertions say the rest)."""
    for _ in range(100):
        if cond():
            return
        await pilot.pause(0.05)


async def _open_first_box(app: FleetApp, pilot: Pilot[Any]) -> None:
    """Wait for the table's first row, then open that box's detail (Enter)."""
    table: DataTable[Text] = app.query_one(DataTable)
    await _until(pilot, lambda: table.row_count > 0)
    await pilot.press("enter")
    await pilot.pause(0.1)

@asynccontextmanager
async def _seventy_five_boxes(breakdown: int) -> AsyncIterator[
        tuple[FakeProm, FleetApp, Pilot[Any], DataTable[Text]]]:
    """75 boxes of 4 GPUs (300 rows), all CHAINED but box `breakdown`, and the screen over them
    at 80x24 once its table holds rows (refreshed once: the tests ask for more)."""
    with fake_prometheus() as fake:
        for i in range(75):
            box(fake, f"box{i:03d}:9400", 4, "BREAKDOWN" if i == breakdown else "CHAINED")
        app = FleetApp(PromClient(fake.url), FleetOptions(), refresh_s=3600)
        async with app.run_test(size=(80, 24)) as pilot:
            table: DataTable[Text] = app.query_one(DataTable)
            await _until(pilot, lambda: table.row_count > 0)
            yield fake, app, pilot, table


async def test_three_hundred_rows_scroll_at_80x24_and_a_failing_prometheus_keeps_the_table(
        ) -> None:
    async with _seventy_five_boxes(breakdown=40) as (fake, app, pilot, table):
        assert table.row_count == 300
        first = [str(c) for c in table.get_row_at(0)]
        assert first[:3] == ["box040:9400", "0", "BREAKDOWN"]
        assert first[7] == "[memory] safety_margin"  # text, not markup
        assert "300 rows at" in _footer(app)
        await pilot.press("pagedown", "ctrl+end")
        assert table.cursor_row == 299 and table.scroll_y > 0

        fake.replies.clear()
        fake.default = Reply(503, b"")
        await pilot.press("r")
        await _until(pilot, lambda: "NOT read" in _footer(app) or "HTTP 503" in _footer(app))
        assert "HTTP 503" in _footer(app) and "showing the last table" in _footer(app)
        assert table.row_count == 300


async def test_enter_on_a_row_shows_that_box_recent_minutes() -> None:
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1, "BREAKDOWN")
        fake.range_replies["sum by (gpu, kind)"] = matrix(
            # A minute of the last 30, as Prometheus stamps its points (the range asked).
            ({"gpu": "0", "kind": "pcie_starved"}, [(time.time() - 120, 12.5)]))
        app = FleetApp(PromClient(fake.url), FleetOptions(), refresh_s=3600)
        async with app.run_test(size=(80, 24)) as pilot:
            await _open_first_box(app, pilot)
            assert isinstance(app.screen, DetailScreen)
            body = app.screen.query_one("#detail-body", Static)
            await _until(pilot, lambda: "pcie_starved" in str(body.content))
            text = str(body.content)
            assert text.startswith(WHAT_IS_SHOWN) and "GPU0 idle 12.5s (pcie_starved 12.5s)" in text
            # A refresh that lands while the detail is open reaches the table behind it.
            asked = len(fake.asked)
            app.action_refresh_now()
            await _until(pilot, lambda: "rows at" in _footer(app) and len(fake.asked) > asked + 10)
            await pilot.pause(0.2)
            assert isinstance(app.screen, DetailScreen) and app.return_code is None
            await pilot.press("escape")
            assert not isinstance(app.screen, DetailScreen)


#: An OSC 52 clipboard write, a one-byte CSI, a right-to-left override, and markup.
_HOSTILE = "\x1b]52;c;ZXZpbA==\x07\x9b2J\u202e[/][@click=app.quit]Q[/]"
_RAW = ("\x1b", "\x9b", "\u202e")


async def test_a_dead_box_says_prometheus_reason_in_the_table_and_its_detail() -> None:
    """Its CAUSE cell and its detail's first line say why Prometheus cannot scrape it (its
    targets API); a box that is up says no reason, in the table or its detail."""
    with fake_prometheus() as fake:
        box(fake, "dead:9400", 1, "CHAINED", up=0.0, age_s=400.0)
        box(fake, "up:9400", 1, "GAPS")
        fake.targets[0]["lastError"] = refused("dead:9400") + _HOSTILE
        app = FleetApp(PromClient(fake.url), FleetOptions(), refresh_s=3600)
        async with app.run_test(size=(80, 24)) as pilot:
            await _open_first_box(app, pilot)
            said = str(app.screen.query_one("#detail-scrape", Static).content)
            await pilot.press("escape")
            table: DataTable[Text] = app.query_one(DataTable)
            dead, up = ([str(c) for c in table.get_row_at(i)] for i in (0, 1))
            table.move_cursor(row=1)
            await pilot.press("enter")
            await pilot.pause(0.1)
            up_opened, up_scrape = isinstance(app.screen, DetailScreen), \
                len(app.screen.query("#detail-scrape"))
    assert dead[:3] == ["dead:9400", "0", "DOWN"]
    # Cut to the column's 60 cells, said by its "…" (the detail has the whole of it).
    assert dead[-1] == "scrape failed: connection refused\\x1b]52;c;ZXZpbA==\\x07\\x9b…"
    assert up[-1] == "a/b/c copied from pageable memory"
    assert said.startswith("Prometheus cannot scrape this box: scrape failed: connection "
                           "refused\\x1b]52;c;")
    assert "; last tried 2026-12-0" in said and said.endswith("; scraping "
                                                             "http://dead:9400/metrics")
    assert not any(c in dead[-1] + said for c in _RAW) and up_opened and up_scrape == 0


async def test_a_state_label_of_escapes_reaches_no_terminal_through_the_fleet_table() -> None:
    """The `state` label went into its cell raw (the other labels were made visible): a state
    of `\\x1b]0;x` sent an escape to the terminal of whoever watched the fleet."""
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1, f"\x1b]0;{_HOSTILE}")
        app = FleetApp(PromClient(fake.url), FleetOptions(), refresh_s=3600)
        async with app.run_test(size=(120, 24)) as pilot:
            table: DataTable[Text] = app.query_one(DataTable)
            await _until(pilot, lambda: table.row_count > 0)
            state = str(table.get_row_at(0)[2])
            assert state.startswith("\\x1b]0;\\x") and not any(c in state for c in _RAW)
            assert app.return_code is None


async def _box_detail(idle_reply: Reply, shown: Callable[[str], bool]
                      ) -> tuple[str, bool, int | None]:
    """One BREAKDOWN box whose detail's idle query gets `idle_reply`, its detail opened: the
    detail's text once `shown` says it is there, whether the detail is still the screen then,
    and the app's return code (None: still running)."""
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1, "BREAKDOWN")
        fake.range_replies["sum by (gpu, kind)"] = idle_reply
        app = FleetApp(PromClient(fake.url), FleetOptions(), refresh_s=3600)
        async with app.run_test(size=(120, 24)) as pilot:
            await _open_first_box(app, pilot)
            body = app.screen.query_one("#detail-body", Static)
            await _until(pilot, lambda: shown(str(body.content)))
            return str(body.content), isinstance(app.screen, DetailScreen), app.return_code


async def test_a_prometheus_error_of_escapes_reaches_no_terminal_through_a_boxs_detail() -> None:
    """Prometheus's own error words (its JSON `error`) were put on the detail screen raw."""
    text, _detail, code = await _box_detail(Reply(400, json.dumps(
        {"status": "error", "errorType": "bad_data", "error": _HOSTILE}).encode()),
        lambda text: "could not answer" in text)
    assert "Prometheus could not answer: HTTP 400: " in text
    assert "\\x1b]52;c;ZXZpbA==\\x07\\x9b2J\\u202e[/][@click=app.quit]Q[/]" in text
    assert not any(c in text for c in _RAW) and code is None


async def test_a_range_answer_stamped_out_of_time_ranges_does_not_end_the_fleet_screen() -> None:
    """A detail point stamped 1e308 (or -1e20) reached `time.localtime`: OverflowError out of
    the detail's worker, which ended the whole fleet screen with a traceback (exit 1)."""
    text, detail, code = await _box_detail(matrix(
        ({"gpu": "0", "kind": "pcie_starved"}, [(1e308, 5.0), (-1e20, 6.0)]),
        ({"gpu": "1", "kind": "host_stall"}, [(time.time() - 120, 7.5)])),
        lambda text: "asking" not in text)
    assert detail and code is None
    assert "GPU1 idle 7.5s (host_stall 7.5s)" in text and "GPU0" not in text


async def test_a_kind_label_of_escapes_reaches_no_terminal_through_a_boxs_detail() -> None:
    """The `kind` label of the detail's idle answer was put on the detail screen raw."""
    text, _detail, code = await _box_detail(matrix(
        ({"gpu": "0", "kind": _HOSTILE}, [(time.time() - 120, 12.5)])),
        lambda text: "GPU0" in text)
    assert "(\\x1b]52;c;ZXZpbA==\\x07\\x9b2J\\u202e[/][@click=app.quit]Q[/] 12.5s)" in text
    assert not any(c in text for c in _RAW) and code is None


async def test_a_hundred_thousand_rows_fill_the_screen_up_to_its_cap_worst_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Prometheus may answer 100,000 series a query: the table took all of them, 15 s of the UI
    thread at each refresh. It holds the worst MAX_SCREEN_ROWS (here 40 of 300, to stay quick)
    and the footer says how many more there are."""
    monkeypatch.setattr(fleet_ui, "MAX_SCREEN_ROWS", 40)
    async with _seventy_five_boxes(breakdown=70) as (_fake, app, _pilot, table):
        assert table.row_count == 40
        assert [str(c) for c in table.get_row_at(0)][:3] == ["box070:9400", "0", "BREAKDOWN"]
        assert "300 rows at" in _footer(app) and "showing the worst 40" in _footer(app)


async def test_the_screen_ending_cuts_a_refresh_still_waiting_on_prometheus() -> None:
    """`run` returns once the refresh's worker thread has: a stop signal or q while Prometheus
    was slow kept the process to the refresh's deadline (`--timeout`), the terminal already
    given back. Ending the screen aborts the client (tests/test_fleet_hostile_http.py pins the
    cut itself)."""
    with fake_prometheus() as fake:
        fake.default = Reply(body=b"", delay_s=0.5)
        client = PromClient(fake.url)
        app = FleetApp(client, FleetOptions(budget_s=60), refresh_s=3600)
        async with app.run_test(size=(80, 24)) as pilot:
            await _until(pilot, lambda: len(fake.asked) > 0)
            await pilot.press("q")
        with pytest.raises(PromError, match="stopped"):
            client.instant("up")


async def test_two_long_box_names_that_differ_at_their_ends_read_apart_on_the_screen() -> None:
    """Cropped at the BOX column's cells, `gpu-prover-0001.ams.example.net:9400` and `:9401`
    read the same, with nothing to say they were cut; the name now keeps both ends."""
    with fake_prometheus() as fake:
        for port in (9400, 9401):
            box(fake, f"gpu-prover-0001.ams.example.net:{port}", 1, "CHAINED")
        app = FleetApp(PromClient(fake.url), FleetOptions(), refresh_s=3600)
        async with app.run_test(size=(80, 24)) as pilot:
            table: DataTable[Text] = app.query_one(DataTable)
            await _until(pilot, lambda: table.row_count == 2)
            names = {str(table.get_row_at(i)[0]) for i in range(2)}
    assert names == {"gpu-prov…et:9400", "gpu-prov…et:9401"}


async def _screen_at(size: tuple[int, int], rows: int) -> list[str]:
    """The fleet screen's lines at `size` over two boxes whose long realistic names differ in
    the middle, their PoSts gone wrong with the settings their advice names."""
    a, b = "prover-host-01.example.net:9400", "prover-host-02.example.net:9400"
    with fake_prometheus() as fake:
        box(fake, a, 1, "CHAINED")
        box(fake, b, 1, "CHAINED")
        fake.replies[promql("post_late")] = vector(({"instance": a}, 1.0), ({"instance": b}, 2.0))
        fake.replies[promql("post_failed")] = vector(({"instance": b}, 1.0))
        fake.replies[promql("post_trouble_age_s")] = vector(({"instance": a}, 720.0),
                                                            ({"instance": b}, 180.0))
        fake.replies[promql("post_setting")] = vector(
            ({"instance": a, "verdict": "late", "setting": "[pipeline] synthesis_concurrency"},
             1), ({"instance": b, "verdict": "late", "setting": "[memory] eviction_min_idle"}, 1))
        app = FleetApp(PromClient(fake.url), FleetOptions(), refresh_s=3600)
        async with app.run_test(size=size) as pilot:
            table: DataTable[Text] = app.query_one(DataTable)
            await _until(pilot, lambda: table.row_count == rows)
            await pilot.pause(0.1)
            return [line.rstrip() for line in screen_text(app).splitlines()]


async def test_box_and_headline_grow_with_the_terminal_and_two_boxes_never_read_the_same(
        ) -> None:
    """BOX was 16 cells and HEADLINE 40 at any width: at 200 columns, 100 of them free,
    `prover-host-01.example.net:9400` and `-02` both read `prover-h…et:9400` and the headline
    was cut at `[pipeline] synthesis_concu…`. They grow with the terminal: whole at 200
    columns; at 80 the name keeps what sets it apart from the other box's."""
    wide = await _screen_at((200, 50), 2)
    assert any(line.startswith("prover-host-01.example.net:9400 ") and
               "PoSt 1 late 12m ago: [pipeline] synthesis_concurrency " in line for line in wide)
    assert any(line.startswith("prover-host-02.example.net:9400 ") and
               "PoSt 2 late, 1 failed 3m ago: [memory] eviction_min_idle " in line
               for line in wide)
    narrow = await _screen_at((80, 24), 2)
    firsts = [line.split(" ", 1)[0] for line in narrow if line.startswith("prover-")]
    assert len(firsts) == 2 and len(set(firsts)) == 2, firsts
    assert all(len(line) <= 80 for line in narrow)


async def test_question_mark_says_what_each_column_and_health_letter_means() -> None:
    """HLTH's `TD` or `XR` was said nowhere on the screen (docs/fleet.md only): `?` lists every
    column, the health letters in words; Escape comes back to the table."""
    from gapwatch.fleet.rows import COLUMN_LEGEND, COLUMNS
    from gapwatch.ui.fleet import LegendScreen

    assert [h for h, _ in COLUMN_LEGEND] == [h for h, _ in COLUMNS]
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1, "CHAINED")
        app = FleetApp(PromClient(fake.url), FleetOptions(), refresh_s=3600)
        async with app.run_test(size=(80, 24)) as pilot:
            await _until(pilot, lambda: "?: the columns" in _footer(app))
            await pilot.press("question_mark")
            assert isinstance(app.screen, LegendScreen)
            text = str(app.screen.query_one("#legend-body", Static).content)
            assert "D data holes" in text and "X a GPU error" in text and "R prover restarts" in text
            await pilot.press("escape")
            assert not isinstance(app.screen, LegendScreen) and app.return_code is None


async def test_a_box_losing_posts_is_the_first_row_at_80x24_saying_post_and_its_setting() -> None:
    """The box whose WinningPoSts went late ranked last at 80x24, SETTING `none`, its PoSt
    column off screen, and its detail said nothing of PoSt: it is the first row now, its
    HEADLINE on screen says PoSt and the setting its advice names, and its detail says them
    above its idle minutes."""
    with fake_prometheus() as fake:
        box(fake, "bad:9400", 1, "BREAKDOWN")
        box(fake, "post:9400", 1, "CHAINED")
        fake.replies[promql("post_late")] = vector(({"instance": "post:9400"}, 2.0))
        fake.replies[promql("post_setting")] = vector(
            ({"instance": "post:9400", "verdict": "late",
              "setting": "[memory] eviction_min_idle"}, 1))
        app = FleetApp(PromClient(fake.url), FleetOptions(), refresh_s=3600)
        async with app.run_test(size=(80, 24)) as pilot:
            table: DataTable[Text] = app.query_one(DataTable)
            await _until(pilot, lambda: table.row_count == 2)
            await pilot.pause(0.1)
            lines = screen_text(app).splitlines()
            await pilot.press("enter")
            await pilot.pause(0.1)
            post = str(app.screen.query_one("#detail-post", Static).content)
    (first,) = [line for line in lines if line.startswith(("post:9400", "bad:9400"))][:1]
    assert first.startswith("post:9400") and "PoSt 2 late: [memory] eviction_min_idle" in first
    assert post.startswith("PoSt in the last 1h: 2 went late")


async def test_at_80x24_each_box_says_its_one_thing_and_keeps_its_name_scrolled_sideways(
        ) -> None:
    """At 80x24 SETTING was cut to `[pipeline] max_parallel_sy`, the title's legend to `(~ =
    stale, ? = not known`, and a dead box's reason was in CAUSE only; scrolled sideways to it,
    BOX went off screen, so the reason named no box. HEADLINE says each box's one thing whole
    beside a scrollbar, the legend comes before the address, and BOX stays."""
    synthesis = "[pipeline] max_parallel_synthesis"
    with fake_prometheus() as fake:
        for i in range(30):  # enough rows for a scrollbar
            box(fake, f"box{i:03d}:9400", 1, "GAPS")
        box(fake, "dead:9400", 1, "GAPS", up=0.0, age_s=77.0)
        box(fake, "xid:9400", 1, "BREAKDOWN")  # first: on screen
        fake.replies[promql("verdict")] = vector(*(
            ({"job": "gapwatch", "instance": f"box{i:03d}:9400", "gpu": "0", "state": "GAPS",
              "cause": "waits_on_synthesis", "cause_words": "the GPU waits on synthesis",
              "setting": synthesis}, 1) for i in range(30)))
        fake.replies[promql("payoff_gain")] = vector(*(
            ({"job": "gapwatch", "instance": f"box{i:03d}:9400", "gpu": "0"}, 2.1)
            for i in range(30)))
        fake.replies[promql("gpu_errors")] = vector(({"instance": "xid:9400", "gpu": "0"}, 1))
        app = FleetApp(PromClient(fake.url), FleetOptions(), refresh_s=3600)
        async with app.run_test(size=(80, 24)) as pilot:
            table: DataTable[Text] = app.query_one(DataTable)
            await _until(pilot, lambda: table.row_count == 32)
            table.move_cursor(row=0)
            await pilot.pause(0.1)
            before = screen_text(app).splitlines()
            # Forty columns sideways: thirty-nine at once (each `right` is an animated scroll of
            # a column, ~90 ms of waiting), the last one the key.
            table.scroll_to(x=39, animate=False, immediate=True)
            await pilot.press("right")
            assert table.scroll_x == 40
            await pilot.pause(0.1)
            after = screen_text(app).splitlines()
    assert before[0].startswith("gapwatch fleet (? before a state: not known if fresh): http://")
    rows = {line.split()[0]: line for line in before[2:] if line.split()[:1] and
            line.split()[0].endswith(":9400")}
    assert f"{synthesis} 2.1x" in rows["box000:9400"]
    assert "connection refused" in rows["dead:9400"]
    assert "GPU errors: 1" in rows["xid:9400"]
    scrolled = [line for line in after[2:] if line.strip()][:12]
    assert all(line.startswith(("box0", "dead:9400", "xid:9400")) for line in scrolled[:-1])
    # Scrolled: SETTING, past 80 columns before, is on screen beside BOX.
    assert "SETTING" not in before[1] and after[1].startswith("BOX") and "SETTING" in after[1]


async def test_two_boxes_whose_names_hold_a_nul_are_two_rows_not_a_duplicate_key_ending_the_screen(
        ) -> None:
    """The table's row key joined a box and its GPU with a NUL: box `a` GPU `b\\x00c` and box
    `a\\x00b` GPU `c` (label values from Prometheus may hold one) made the same key, and
    Textual's DuplicateKey ended the whole fleet screen with a traceback. Enter on the second
    row opens its own box, not the first's."""
    with fake_prometheus() as fake:
        fake.replies[promql("state")] = vector(
            ({"job": "gapwatch", "instance": "a", "gpu": "b\x00c", "state": "CHAINED"}, 1),
            ({"job": "gapwatch", "instance": "a\x00b", "gpu": "c", "state": "BREAKDOWN"}, 1))
        app = FleetApp(PromClient(fake.url), FleetOptions(), refresh_s=3600)
        async with app.run_test(size=(120, 24)) as pilot:
            table: DataTable[Text] = app.query_one(DataTable)
            await _until(pilot, lambda: table.row_count > 0 or app.return_code is not None)
            assert app.return_code is None and table.row_count == 2
            await pilot.press("enter")  # the BREAKDOWN box, first
            await _until(pilot, lambda: isinstance(app.screen, DetailScreen))
            title = str(app.screen.query_one("#detail-title", Static).content)
            assert title.startswith("a\\x00b: ")
