"""The fleet screen: every box's GPUs in one scrolling table, worst first, from Prometheus.

Who calls it: `gapwatch.commands.fleet` (`gapwatch fleet --prometheus URL` without `--once`).
The queries and rows are `gapwatch.fleet` (headless); this module only shows them. A refresh
runs on a worker thread every `refresh_s`; while one is in flight no other starts. A refresh
whose rows could not be read keeps the previous table and says why in the footer, as does a
refresh where only some queries failed (their columns show "-"). A box Prometheus cannot scrape
says why in its CAUSE cell (`rows.cells`). Enter on a row opens the box's recent minutes
(`gapwatch.fleet.detail`), under why Prometheus cannot scrape it when it cannot; Escape comes
back; `?` says what each column means; q quits.
"""

from __future__ import annotations

import json
import time

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Static

from gapwatch.core import fmt
from gapwatch.fleet.client import PromClient, PromError
from gapwatch.fleet.detail import (
    WHAT_IS_SHOWN,
    box_lines,
    post_line,
    scrape_line,
)
from gapwatch.fleet.layout import box_labels, screen_widths
from gapwatch.fleet.rows import COLUMN_LEGEND, COLUMNS, FleetOptions, Refresh, cells, refresh

#: The most rows the table holds, the worst first (a farm of 250 8-GPU boxes). Prometheus may
#: answer 100,000 series a query (`client.MAX_SERIES`): filling the table with that many took
#: 15 s of the UI thread at every refresh (a minute at the first), so that keys went unanswered
#: and q did not quit. The rest are counted in the footer; `--once --json` has them all.
MAX_SCREEN_ROWS = 2000


#: A refresh's table as shown: the columns' widths, and the rows (key, cells).
Shown = tuple[tuple[int, ...], list[tuple[str, tuple[Text, ...]]]]


def screen_rows(result: Refresh, terminal_cells: int) -> Shown:
    """The table of a refresh on a terminal `terminal_cells` wide: the columns' widths
    (`layout.screen_widths`: BOX and HEADLINE grow with it) and the worst `MAX_SCREEN_ROWS`
    rows (the cut keeps the starved), each cell fit to its column with a "…" where it is cut
    (`fmt.fit`: the table crops at the column's end saying nothing, so a cause cut at 60 cells
    read as the whole of it), each box's name as no other box's (`layout.box_labels`). The
    detail and `--once` show every cell whole. Text, not str: a str cell is read as markup
    (`[memory] safety_margin` lost its section, and a label from Prometheus could style the
    screen)."""
    texts = [cells(row) for row in result.rows[:MAX_SCREEN_ROWS]]
    headings = [h for h, _ in COLUMNS]
    box_i, head_i = headings.index("BOX"), headings.index("HEADLINE")
    widths = screen_widths(terminal_cells, (c[box_i] for c in texts),
                           (c[head_i] for c in texts))
    boxes = box_labels([c[box_i] for c in texts], widths[box_i])
    rows = [(row_key(row.instance, row.gpu),
             tuple(Text(boxes[c] if i == box_i else fmt.fit(c, width, pad=False),
                        no_wrap=True)
                   for i, (c, width) in enumerate(zip(row_cells, widths, strict=True))))
            for row, row_cells in zip(result.rows, texts, strict=False)]
    return widths, rows


def row_key(instance: str, gpu: str) -> str:
    """A row's key in the table: its box and GPU, each whole (JSON). Joined by a NUL, box `a`
    GPU `b\\x00c` and box `a\\x00b` GPU `c` (label values Prometheus may send) made one key,
    and Textual's DuplicateKey ended the whole fleet screen."""
    return json.dumps([instance, gpu])


def key_instance(key: str) -> str:
    """The box of a row's key (`row_key`): Enter opens its detail."""
    return str(json.loads(key)[0])


#: What the marks before a state mean, said first on the title line (`title_text`).
TITLE_LEGEND = "? before a state: not known if fresh"


def title_text(url: str, selector: str) -> str:
    """The title line: the marks' legend first, then the Prometheus asked and the selector.
    The legend came last, after a URL and selector of any length, and 80 columns cut it
    (`(~ = stale, ? = not known`); what is cut now is the end of the address."""
    return f"gapwatch fleet ({TITLE_LEGEND}): {fmt.visible(url)} {fmt.visible(selector)}"


def footer_text(result: Refresh | None, error: str, url: str) -> str:
    """The footer: when the table was read and how long it took, or what went wrong (the
    table above is then the last good one)."""
    if result is None:
        return f"asking {url} ..." if not error else f"Prometheus {url}: {error}"
    stamp = time.strftime("%H:%M:%S", time.localtime(result.t_wall_s))
    head = (f"{len(result.rows)} rows at {stamp} ({result.took_s:.2f} s, Prometheus "
            f"{result.prometheus_s:.2f} s)")
    if len(result.rows) > MAX_SCREEN_ROWS:
        head += f"; showing the worst {MAX_SCREEN_ROWS} (--once --json has all)"
    if result.rows_failed:
        return f"{head}; rows NOT read, showing the last table: {_errors(result, url)}"
    if result.errors:
        return f"{head}; {len(result.errors)} queries failed: {_errors(result, url)}"
    if result.names_cut:
        return f"{head}; {_errors(result, url)}"
    return f"{head}; Enter: a box's recent minutes, ?: the columns, q: quit"


def _errors(result: Refresh, url: str) -> str:
    """What failed, each error once (`Refresh.error_lines`, as `--once` says it on stderr):
    the first three."""
    return "; ".join(fmt.visible(line) for line in result.error_lines(url)[:3])


class LegendScreen(Screen[None]):
    """What each column says (`rows.COLUMN_LEGEND`): HLTH's letters are no words."""

    BINDINGS = [Binding("escape", "app.pop_screen", "back"),
                Binding("question_mark", "app.pop_screen", "back"),
                Binding("q", "app.pop_screen", "back")]

    def compose(self) -> ComposeResult:
        yield Static("The columns (Escape: back)", id="legend-title", markup=False)
        with VerticalScroll():
            yield Static("\n".join(f"{heading:<8} {words}" for heading, words in COLUMN_LEGEND),
                         id="legend-body", markup=False)


class DetailScreen(Screen[None]):
    """One box's recent minutes (what Prometheus holds, said on the first line), under why
    Prometheus cannot scrape the box (`scrape`, already made visible) when it cannot, and its
    PoSts gone wrong (`post`, already made visible) when some did."""

    BINDINGS = [Binding("escape", "app.pop_screen", "back"), Binding("q", "app.pop_screen",
                                                                     "back")]

    def __init__(self, client: PromClient, opts: FleetOptions, instance: str,
                 scrape: str | None = None, post: str | None = None) -> None:
        super().__init__()
        self._client, self._opts, self._instance = client, opts, instance
        self._scrape, self._post = scrape, post

    def compose(self) -> ComposeResult:
        yield Static(f"{fmt.visible(self._instance)}: recent gaps (Escape: back)",
                     id="detail-title", markup=False)
        if self._scrape is not None:  # from the table's refresh: shown at once, not asked
            yield Static(self._scrape, id="detail-scrape", markup=False)
        if self._post is not None:  # likewise: a lost block is said before the idle minutes
            yield Static(self._post, id="detail-post", markup=False)
        with VerticalScroll():
            yield Static("asking Prometheus ...", id="detail-body", markup=False)

    def on_mount(self) -> None:
        self.run_worker(self._load, thread=True, group="detail")

    def _load(self) -> None:
        try:
            lines = box_lines(self._client, self._opts, self._instance)
        except PromError as exc:
            # Its words may quote Prometheus's own (its JSON `error`): shown, never obeyed.
            lines = [f"Prometheus could not answer: {fmt.visible(str(exc))}"]
        except Exception as exc:  # noqa: BLE001 - as `FleetApp._ask`: a worker that raises
            # ends the whole app (Textual's default), so a detail that cannot be shown is said
            # here and the fleet stays on screen.
            lines = [f"the detail failed: {type(exc).__name__}: {fmt.visible(str(exc))}"]
        text = "\n".join([WHAT_IS_SHOWN, "", *lines])
        self.app.call_from_thread(self.query_one("#detail-body", Static).update, text)


class FleetApp(App[int]):
    """The table, refreshed every `refresh_s` seconds."""

    CSS = """
    #fleet-title { height: 1; background: $primary; color: $text; }
    #fleet-footer { height: 2; background: $panel; }
    DataTable { height: 1fr; }
    """
    BINDINGS = [Binding("q", "quit", "quit"), Binding("r", "refresh_now", "refresh"),
                Binding("question_mark", "legend", "columns")]

    def __init__(self, client: PromClient, opts: FleetOptions, refresh_s: float) -> None:
        super().__init__()
        self.client, self.opts, self.refresh_s = client, opts, refresh_s
        self.last: Refresh | None = None
        self.error = ""
        self._busy = False
        self._keys: list[str] = []
        self._widths: tuple[int, ...] = ()
        #: The width the latest resize fitted the table to (a height alone changes nothing).
        self._resized_to: int | None = None
        # Made here and held: every refresh reaches them directly, also one that lands while a
        # box's detail screen is on top (tests/test_ui_fleet.py pins that case).
        # BOX stays on screen while the table scrolls sideways (`fixed_columns`): scrolled to
        # CAUSE at 80 columns, a row no longer said which box it was.
        self.table: DataTable[Text] = DataTable(cursor_type="row", zebra_stripes=True,
                                                cell_padding=0, fixed_columns=1)
        self.footer = Static(footer_text(None, "", client.base_url), id="fleet-footer",
                             markup=False)

    def compose(self) -> ComposeResult:
        yield Static(title_text(self.client.base_url, self.opts.selector), id="fleet-title",
                     markup=False)
        yield self.table
        yield self.footer

    def on_mount(self) -> None:
        self._set_columns(tuple(w for _, w in COLUMNS))
        self.action_refresh_now()
        self.set_interval(self.refresh_s, self.action_refresh_now)

    def _set_columns(self, widths: tuple[int, ...]) -> None:
        """The table's columns at `widths` (each one more: the gap after it), made again where
        they changed (a resize, a longer box name or headline): a column's width is set as it
        is added. Its rows go with them: the caller adds them again."""
        if widths == self._widths:
            return
        self.table.clear(columns=True)
        for (heading, _), width in zip(COLUMNS, widths, strict=True):
            self.table.add_column(heading, width=width + 1)
        self._widths = widths

    def on_resize(self) -> None:
        """The widths follow the terminal's (BOX and HEADLINE grow with it): the last table's
        cells made again on a worker thread, as a refresh's are (`_ask`): a resize comes in
        bursts while a window is dragged, and 2,000 rows' cells took 0.07-0.39 s on the UI
        thread each time."""
        last = self.last
        if last is not None and not last.rows_failed:
            width = self.size.width
            if width == self._resized_to:
                return  # a height alone: the widths, and so the cells, are the same
            self._resized_to = width
            self.run_worker(lambda: self._fit(last, width), thread=True, group="resize",
                            exclusive=True)

    def _fit(self, last: Refresh, width: int) -> None:
        shown = screen_rows(last, width)
        self.call_from_thread(self._refit, last, width, shown)

    def _refit(self, last: Refresh, width: int, shown: Shown) -> None:
        # A later refresh or resize made this one stale: its own rows are on the way.
        if last is self.last and width == self.size.width:
            self._put_rows(shown)

    def on_unmount(self) -> None:
        # However the screen ends (q, a stop signal): a refresh still waiting on Prometheus is
        # cut now. `run` returns only once its worker thread has, which was at the refresh's
        # deadline (`--timeout`: 18 s of a 20 s one after a SIGTERM, the terminal given back).
        self.client.abort()

    def action_legend(self) -> None:
        if not isinstance(self.screen, LegendScreen):
            self.push_screen(LegendScreen())

    def action_refresh_now(self) -> None:
        if self._busy:
            return
        self._busy = True
        self.run_worker(self._ask, thread=True, group="refresh", exclusive=False)

    def _ask(self) -> None:
        """A refresh and its table's cells, on the worker thread: the cells of 2,000 rows
        took 0.07-0.39 s (a cause of wide characters is measured cell by cell), on the UI
        thread at every refresh."""
        shown: Shown = ((), [])
        try:
            result: Refresh | None = refresh(self.client, self.opts)
            error = ""
            if result is not None and not result.rows_failed:
                shown = screen_rows(result, self.size.width)
        except Exception as exc:  # noqa: BLE001 - the view must stay whatever happens
            result, error = None, f"refresh failed: {type(exc).__name__}: {exc}"
        self.call_from_thread(self.show, result, error, shown)

    def show(self, result: Refresh | None, error: str, shown: Shown) -> None:
        """Put a refresh on screen (on the UI thread): `shown`, its rows as `screen_rows`
        made them on the worker thread."""
        self._busy = False
        footer = self.footer
        if result is None or result.rows_failed:
            self.error = error or (result and _errors(result, self.client.base_url)) or ""
            footer.update(footer_text(result, self.error, self.client.base_url) +
                          (" (showing the last table)" if self.last is not None else ""))
            return
        self.last = result
        self._put_rows(shown)
        footer.update(footer_text(result, "", self.client.base_url))

    def _put_rows(self, shown: Shown) -> None:
        """The table's columns and rows as `screen_rows` made them, the cursor kept on its
        row's box and GPU."""
        table = self.table
        selected = self._keys[table.cursor_row] if 0 <= table.cursor_row < len(self._keys) \
            else None
        table.clear()
        self._set_columns(shown[0])
        self._keys = []
        for key, row_cells in shown[1]:
            table.add_row(*row_cells, key=key)
            self._keys.append(key)
        if selected in self._keys:
            table.move_cursor(row=self._keys.index(selected))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if key:
            instance = key_instance(key)
            rows = self.last.rows if self.last is not None else []
            self.push_screen(DetailScreen(
                self.client, self.opts, instance, scrape_line(rows, instance),
                post_line(rows, instance, self.opts.lookback)))


def run_fleet_screen(client: PromClient, opts: FleetOptions, refresh_s: float) -> int:
    """Run the fleet screen until the user quits; returns the exit status."""
    return int(FleetApp(client, opts, refresh_s).run() or 0)
