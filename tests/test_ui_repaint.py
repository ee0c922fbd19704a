"""The dashboard repaints only what changed. Its text widgets (`ui.widgets.text_lines`: the
header, the gap table, the host line, the footer, the prover log, the pipeline and copy lines)
draw each line once, keep it while it reads the same (a line that only moved keeps its strip),
and ask Textual to repaint only the lines that differ; the lines they draw are the cells
Textual's own rendering of the same rows gives. Driven through Textual's pilot."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest
from msgspec.structs import replace
from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.strip import Strip
from textual.visual import RichVisual, Visual
from textual.widget import Widget
from ui_fakes import (
    FakeRuntime,
    fill_breakdown,
    fixed_wall,
    gap,
    gpu_sample,
    log_event,
    make_config,
)

from gapwatch.ui.app import GapwatchApp
from gapwatch.ui.widgets.gap_strip import GapStrip
from gapwatch.ui.widgets.gap_table import GapTable
from gapwatch.ui.widgets.gpu_header import GpuHeader
from gapwatch.ui.widgets.log_pane import LogPane
from gapwatch.ui.widgets.status_footer import StatusFooter
from gapwatch.ui.widgets.strip_chart import StripChart
from gapwatch.ui.widgets.text_lines import TextLines, line_strip, rich_strip


def _app(tmp_path: Path) -> tuple[FakeRuntime, GapwatchApp]:
    rt = FakeRuntime(make_config(tmp_path, redraw_hz=0.5))  # the timer stays out of the way
    fill_breakdown(rt.store)
    for i in range(40):
        rt.store.append_log(log_event(30.0 + i * 0.5, f"INFO cuzk line {i}"))
    return rt, GapwatchApp(rt, wall_clock=fixed_wall)


def _cells(strips: list[Strip]) -> list[list[tuple[str, Style | None]]]:
    """Each row's characters with the style each is drawn in (however the segments split)."""
    return [[(ch, seg.style) for seg in strip for ch in seg.text] for strip in strips]


class Watch:
    """The lines Textual asks a widget for while something changes, and how many of the strips
    it got back were rendered anew (not one the widget had drawn before)."""

    def __init__(self, widget: Widget, monkeypatch: pytest.MonkeyPatch) -> None:
        self.asked: list[int] = []
        real = widget.render_line
        # The strips themselves are kept (not their ids, which a new strip may reuse).
        self._before = [real(y) for y in range(widget.size.height)]
        self._got: list[Strip] = []

        def render_line(y: int) -> Strip:
            self.asked.append(y)
            strip = real(y)
            self._got.append(strip)
            return strip

        monkeypatch.setattr(widget, "render_line", render_line)

    @property
    def rendered(self) -> int:
        return sum(all(strip is not old for old in self._before) for strip in self._got)


async def _change(app: GapwatchApp, kind: type[TextLines] | type[GapStrip],
                  change: Callable[[], object], monkeypatch: pytest.MonkeyPatch,
                  ) -> tuple[list[str], list[str], Watch]:
    """The lines of the app's widget of `kind` before and after `change` is shown (at 160x48),
    and what Textual asked it for meanwhile."""
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        widget = app.query_one(kind)
        before = _texts(widget)
        watch = Watch(widget, monkeypatch)
        change()
        app.redraw(force=True)
        await pilot.pause()
        return before, _texts(widget), watch


def _texts(widget: Widget) -> list[str]:
    if isinstance(widget, TextLines):
        return [str(line) for line in widget.lines]
    draw = type(widget).render_line  # not the Watch's: these are the test's reads
    return [draw(widget, y).text for y in range(widget.size.height)]


async def test_every_text_widget_draws_the_cells_textuals_rendering_of_its_rows_gives(
    tmp_path: Path,
) -> None:
    """Line by line (each cut to the width first) and through Textual's renderable path (as they
    were all drawn before, and still are while text is selected): the same cells, long lines'
    ellipses and the styles of every word included."""
    rt, app = _app(tmp_path)
    rt.store.append_log(log_event(51.0, "WARN pinned pool " + "checkout FAILED " * 20,
                                  warning="pinned"))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        widgets = [w for w in app.query(TextLines) if w.display]
        assert {type(w) for w in widgets} >= {GpuHeader, GapTable, LogPane, StatusFooter}
        for widget in widgets:
            width, height = widget.size
            mine = [widget.render_line(y) for y in range(height)]
            theirs = Visual.to_strips(widget, RichVisual(widget, widget.render()), width, height,
                                      widget.visual_style)
            theirs += [Strip.blank(width, widget.visual_style.rich_style)] * (height - len(theirs))
            assert _cells(mine) == _cells(theirs), type(widget).__name__
        log = _cells([app.query_one(LogPane).render_line(y) for y in range(18)])
        assert any("…" in "".join(ch for ch, _ in row) for row in log)


async def test_an_open_gap_growing_repaints_its_own_row_of_the_table_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    rt, app = _app(tmp_path)
    rt.store.upsert_gap(gap(99, 0, 58.0, None))
    grown = replace(gap(99, 0, 58.0, None), duration_s=2.5)
    _, after, watch = await _change(app, GapTable, lambda: rt.store.upsert_gap(grown),
                                    monkeypatch)
    assert "2.50s+" in after[1]  # the newest row, under the column heads
    assert watch.asked == [1]
    assert watch.rendered == 1


async def test_a_new_log_line_renders_itself_and_the_title_while_the_others_move_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every row of the pane moves up a line, so Textual repaints them all, but only the new
    line and the title (its event count) are rendered: the rest keep their strips."""
    rt, app = _app(tmp_path)
    _, after, watch = await _change(
        app, LogPane, lambda: rt.store.append_log(log_event(60.0, "INFO the newest")),
        monkeypatch)
    assert "INFO the newest" in after[-1]
    assert sorted(watch.asked) == list(range(len(after)))
    assert watch.rendered == 2


async def test_the_footer_repaints_its_status_line_and_never_the_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    rt, app = _app(tmp_path)

    def late_post() -> None:
        rt.prover_alert = "PoSt late by 12 s"
        app.refresh_status()

    before, after, watch = await _change(app, StatusFooter, late_post, monkeypatch)
    assert "PoSt late" in after[0] and "PoSt late" not in before[0]
    assert watch.asked == [0]


async def test_a_new_sample_repaints_only_the_header_lines_whose_words_or_figures_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    rt, app = _app(tmp_path)
    before, after, watch = await _change(
        app, GpuHeader, lambda: rt.store.append_gpu([gpu_sample(0, 60.1, 12.0, 1e9)]),
        monkeypatch)
    changed = [y for y, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert changed and len(changed) < len(after)  # the GPU's figures; not the verdict
    assert sorted(watch.asked) == changed
    assert watch.rendered == len(changed)


def test_the_store_says_words_changed_when_a_gap_opens_closes_or_changes_kind_not_as_it_grows(
) -> None:
    """The dashboard is told (`listen_words`) instead of asking ten times a second; an open gap
    growing is a number (repainted once a second), not words."""
    store = FakeRuntime(make_config()).store
    told: list[int] = []
    store.listen_words(lambda: told.append(store.words_version))
    store.upsert_gap(gap(7, 0, 10.0, None))
    assert told == [1]  # opened
    store.upsert_gap(replace(gap(7, 0, 10.0, None), duration_s=0.5))
    assert told == [1]  # grew: nothing said
    store.upsert_gap(gap(7, 0, 10.0, None, kind="host_stall"))
    store.upsert_gap(gap(7, 0, 10.0, 11.0, kind="host_stall"))
    assert told == [1, 2, 3]  # changed kind, closed
    store.reset()
    assert told == [1, 2, 3, 4]  # emptied (a replay seeking back): still listened to


async def test_a_gap_that_opens_is_in_the_table_at_once_without_waiting_for_a_tick(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(GapwatchApp, "_tick", lambda self: None)  # no once-a-second repaint
    rt, app = _app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        table = app.query_one(GapTable)
        assert "0.50s+" not in str(table.lines[1])
        rt.session._derived([replace(gap(99, 0, 59.5, None), duration_s=0.5)])
        await pilot.pause()
        assert "0.50s+" in str(table.lines[1])


async def test_a_new_gap_repaints_the_gap_strips_marks_and_not_its_time_axis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    rt, app = _app(tmp_path)
    before, after, watch = await _change(
        app, GapStrip, lambda: rt.store.upsert_gap(gap(99, 0, 57.0, 58.5)), monkeypatch)
    assert after[0] != before[0] and after[1] == before[1]  # a new mark; the same axis
    assert watch.asked == [0]


async def test_a_chart_repaints_the_rows_that_changed_and_keeps_the_strips_of_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A second of new samples moves the window on: the rows of scattered bars change and are
    drawn and repainted; the blank top row reads as before, keeps its strip (not built again)
    and is not repainted."""
    rt, app = _app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        chart = app.query_one("#chart-rx", StripChart)
        height = chart.size.height
        app.redraw(force=True)  # drawn once more after the start's style passes
        await pilot.pause()
        before = [chart.render_line(y) for y in range(height)]
        watch = Watch(chart, monkeypatch)
        rt.store.append_gpu([gpu_sample(0, 60.0 + i / 10, 97.0, 41e9 if i % 3 else 6e9, 1.2e9)
                             for i in range(1, 11)])
        app.redraw(force=True)
        await pilot.pause()
        after = [StripChart.render_line(chart, y) for y in range(height)]
    changed = [y for y in range(height) if after[y].text != before[y].text]
    kept = [y for y in range(height) if after[y] is before[y]]
    assert changed and 0 in kept
    assert kept == [y for y in range(height) if y not in changed]
    assert sorted(set(watch.asked)) == changed


async def test_blank_chart_cells_drawn_in_a_neighbours_style_show_the_same_picture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where blank cells join the run beside them (the theme's chart styles differ by their
    foreground alone) every cell has the same character, every bar the same style and every
    cell the same background as when each run was its own segment: a space shows its
    background only. The rows are a few segments instead of one per bar."""
    _, app = _app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        chart = app.query_one("#chart-rx", StripChart)
        joined = [chart.render_line(y) for y in range(chart.size.height)]
        monkeypatch.setattr(StripChart, "_blanks_may_join", staticmethod(lambda styles: False))
        chart.notify_style_update()
        assert app.view is not None
        chart.show(app.view)
        apart = [chart.render_line(y) for y in range(chart.size.height)]
    for mine, theirs in zip(_cells(joined), _cells(apart), strict=True):
        assert [ch for ch, _ in mine] == [ch for ch, _ in theirs]
        for (ch, style), (_, their_style) in zip(mine, theirs, strict=True):
            assert style is not None and their_style is not None
            assert style.bgcolor == their_style.bgcolor
            assert ch == " " or style == their_style
    assert sum(len(list(s)) for s in joined) < sum(len(list(s)) for s in apart) / 2


def test_a_line_drawn_the_quick_way_is_the_cells_richs_rendering_gives() -> None:
    """`line_strip` draws common lines (characters of one cell, spans apart) without rich's
    rendering: the cells, the ellipsis of a long line and the strip's length are the same as
    rich's for lines of every kind (wide characters, joiners, tabs and overlapping spans take
    rich's way)."""
    console = Console(width=200, color_system="truecolor", force_terminal=True)
    base = Style(color="white", bgcolor="black")
    warn = Style(color="yellow", bold=True)
    rng = random.Random(28)
    alphabet = ["a", "b", " ", "·", "…", "▶", "漢", "\t", "\u200d", "[", "]"]
    for _ in range(400):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        line = Text(text, overflow=rng.choice(["ellipsis", "fold", "crop", None]),
                    no_wrap=True)
        for _ in range(rng.randint(0, 3)):
            start = rng.randint(0, len(text))
            styles: list[Style | str] = [warn, "bold", "dim red"]
            style = rng.choice(styles)
            line.stylize(style, start,
                         rng.randint(start, len(text) + 2))
        width = rng.randint(1, 50)
        mine, theirs = line_strip(line, width, base, console), rich_strip(line, width, base,
                                                                          console)
        assert _cells([mine]) == _cells([theirs]), (text, width)
        assert mine.cell_length == theirs.cell_length
