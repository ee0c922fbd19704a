"""GapwatchApp: the dashboard's composition root. It composes the widgets, pulls the store on a
timer, pushes a View down to the widgets, and handles keys and messages. No drawing logic here.

Who creates it: `gapwatch.ui.dashboard_app` (watch, demo, replay) and the tests, with a runtime
(`gapwatch.engine.runtime.Runtime`, or any object with the same few attributes). The app never
starts or stops the runtime: the command that built it does, so the same runtime also runs headless.

Threads: the session and the store call our listeners on the sampler thread; the listeners only
post messages (StateChanged, NoticeRaised, WordsChanged). Snapshots are written by a thread
worker that posts SnapshotFinished. Nothing calls `call_from_thread`.

When it draws (`redraw`): words (a gap opens or closes, a state) as soon as the store says they
changed (WordsChanged, at most `ui.redraw_hz` times a second), the numbers and the footer's
status once a second (`_tick`), the `d` detail chart at `ui.redraw_hz` while it is shown. Nothing
wakes the app ten times a second to find nothing to do: each wake-up of the event loop costs
more than most repaints do.
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar, Protocol

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.filter import LineFilter, Monochrome
from textual.notifications import Notify
from textual.screen import Screen
from textual.timer import Timer

from gapwatch.config import Config
from gapwatch.core import fmt
from gapwatch.core.models import Gap, Notice, SessionHeader, StateChange
from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.cuzk.advice import advice_lines, session_advice
from gapwatch.engine.replay import ReplayDriver as ReplayControl
from gapwatch.engine.session import Session
from gapwatch.engine.status import RuntimeStatus
from gapwatch.engine.stop_signals import STOP_SIGNALS, StopSignals
from gapwatch.engine.store import SeriesStore
from gapwatch.sinks.snapshot import SnapshotError, write_snapshot
from gapwatch.ui.gap_detail import GapDetailScreen
from gapwatch.ui.kinds import kind_css
from gapwatch.ui.messages import (
    GapChosen,
    NoticeRaised,
    SnapshotFinished,
    StateChanged,
    WordsChanged,
)
from gapwatch.ui.svg import self_contained
from gapwatch.ui.toasts import repaint_where_toasts_leave
from gapwatch.ui.view import View, newest_time_ns
from gapwatch.ui.widgets.copy_line import CopyLine
from gapwatch.ui.widgets.detail_chart import MIN_ROWS as DETAIL_MIN_LINES
from gapwatch.ui.widgets.detail_chart import DetailChart
from gapwatch.ui.widgets.gap_table import GapTable
from gapwatch.ui.widgets.gpu_header import GpuHeader
from gapwatch.ui.widgets.help_screen import HelpScreen
from gapwatch.ui.widgets.host_panel import HostPanel
from gapwatch.ui.widgets.log_pane import LogPane
from gapwatch.ui.widgets.overview import Overview
from gapwatch.ui.widgets.pipeline_line import PipelineLine
from gapwatch.ui.widgets.process_panel import ProcessPanel
from gapwatch.ui.widgets.status_footer import StatusFooter, status_parts

#: Seconds between repaints of the numbers: header figures, open gaps' durations, host panel,
#: log pane (see `_push`).
SLOW_PANEL_EVERY_S = 1.0
#: Rows of the footer, and the least rows of the gap table with the log (gapwatch.tcss:
#: `#footer`, `#lower`); the detail chart's are `detail_chart.MIN_ROWS`.
FOOTER_LINES = 2
LOWER_MIN_LINES = 6
#: The least rows of the charts (gapwatch.tcss: `#overview`): the title, one row each of busy,
#: RX and TX, the gap strip and its time axis.
OVERVIEW_MIN_LINES = 6


def under_chart_rows(spare: int, wants: Sequence[int]) -> list[int]:
    """Rows each of the panels under the chart may have (the copy line, the host line, the
    prover's pipeline, in that order; `wants`: the rows each has to show) in the `spare` rows
    the charts' and the lower panels' least rows leave: first a row each, in that order, then
    the rest in the order host, copies, pipeline. The copy line's first row is the selected
    GPU's (`CopyLine`), the host line's first its memory and PSI.

    Why: with two GPUs at 80x24 (a header line and a copy line more than one GPU) they took
    the gap table's and the log's rows, every one of them; the panels under the chart are
    one-line summaries, the gap table and the log are what the README promises at 80x24."""
    caps = [0] * len(wants)
    for i, want in enumerate(wants):
        if spare > 0 and want > 0:
            caps[i] = 1
            spare -= 1
    for i in (1, 0, 2):
        more = min(spare, max(0, wants[i] - caps[i]))
        caps[i] += more
        spare -= more
    return caps
#: Toasts on screen at once at most (`_on_notify`; fewer in a short pane, `toast_room`), and
#: how long each stays.
MAX_TOASTS = 3
TOAST_S = 8.0
#: The most cells of text a toast shows (`toast_text`; fewer in a small pane, `toast_room`):
#: ~13 rows of a toast at 80 columns (Textual's toast is 40 cells wide there, 37 of text, its
#: height as tall as its text).
TOAST_MAX_CELLS = 500


def toast_room(width: int, height: int) -> tuple[int, int]:
    """(toasts on screen at once, cells of text each) for a pane of `width` x `height`: each
    toast at most a sixth of the pane's rows of text, all of them at most half its rows.
    Textual's toast is 60 cells wide, at most half the pane, with a row of padding above and
    below its text and one of margin. At 80x24 three toasts of 13 rows covered the right half
    of the gap table, the log and the footer's alert for 10-20 s in a restart or XID storm
    (explore9 #6); one toast of 4 rows now, its notice whole in the footer's alert (the
    worst), the help screen's status and the recording."""
    rows = max(2, height // 6)
    text_width = max(10, min(60, width // 2) - 3)
    at_once = max(1, min(MAX_TOASTS, (height // 2) // (rows + 3)))
    return at_once, min(TOAST_MAX_CELLS, rows * text_width)

class DashboardRuntime(Protocol):
    """What the dashboard needs from a runtime (`gapwatch.engine.runtime.Runtime` has it)."""

    config: Config
    header: SessionHeader
    session: Session
    store: SeriesStore

    def status(self) -> RuntimeStatus: ...


class GapwatchApp(App[int]):
    """The live dashboard over one runtime."""

    CSS_PATH = "gapwatch.tcss"
    #: The gap kinds' colours, from their one table (loaded after CSS_PATH).
    CSS = kind_css()
    TITLE = "gapwatch"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (140, "-wide")]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "snapshot", "snapshot"),
        Binding("p", "pause", "pause"),
        Binding("g", "next_gpu", "next GPU"),
        Binding("w", "next_window", "window"),
        Binding("d", "detail", "detail"),
        Binding("t", "processes", "processes"),
        Binding("escape", "close_panel", "back", show=False),
        Binding("up", "gap_move(-1)", "select gap", show=False),
        Binding("down", "gap_move(1)", "select gap", show=False),
        Binding("enter", "open_gap", "open gap", show=False),
        Binding("pageup", "log_page(1)", "log back", show=False),
        Binding("pagedown", "log_page(-1)", "log forward", show=False),
        # Replay only (a live source says so): seek, gaps, speed.
        Binding("left", "seek(-10)", "back 10 s", show=False),
        Binding("right", "seek(10)", "on 10 s", show=False),
        Binding("left_square_bracket", "gap_seek(-1)", "previous gap", show=False),
        Binding("right_square_bracket", "gap_seek(1)", "next gap", show=False),
        Binding("home", "seek_end(0)", "start", show=False),
        Binding("end", "seek_end(1)", "end", show=False),
        Binding("plus", "speed(1)", "faster", show=False),
        Binding("equals_sign", "speed(1)", "faster", show=False),
        Binding("minus", "speed(-1)", "slower", show=False),
        Binding("question_mark", "help", "help"),
        Binding("q", "quit", "quit"),
        # Every terminal monitor (htop, nvtop, watch) quits on Ctrl-C; Textual would only show a
        # "press ctrl+q" toast. Priority: it quits whatever has the focus.
        Binding("ctrl+c", "quit", "quit", show=False, priority=True),
    ]

    def __init__(
        self,
        runtime: DashboardRuntime,
        *,
        wall_clock: Callable[[], float] = time.time,
        status_every_s: float = 1.0,
        stop_signals: StopSignals | None = None,
    ) -> None:
        """
        Args:
            runtime: where the data comes from (store, session, header, config, status()).
            wall_clock: time used to name snapshots (tests pass a fixed one).
            status_every_s: how often the footer asks the runtime for its status.
            stop_signals: when given (the real dashboard, not tests), SIGINT, SIGTERM and SIGHUP
                end the app cleanly (terminal restored) and are noted there.
        """
        super().__init__()
        self.runtime = runtime
        self._stop_signals = stop_signals
        self.config = runtime.config
        # `[ui] color = "mono"` is the user's NO_COLOR for this app alone (Textual reads the
        # variable itself when NO_COLOR is set; nothing here touches the process environment).
        self._mono_filter: LineFilter | None = None
        if self.config.ui.color == "mono" and not self.no_color:
            self.no_color = True
            self._mono_filter = Monochrome()
        self._wall_clock = wall_clock
        self._status_every_s = status_every_s
        self.paused = False
        self.view: View | None = None
        self.gpu = runtime.header.gpus[0].index if runtime.header.gpus else 0
        windows = list(self.config.ui.windows_s) or [self.config.ui.window_s]
        if self.config.ui.window_s not in windows:
            windows = sorted([*windows, self.config.ui.window_s])
        self._windows = windows
        self.window_s = self.config.ui.window_s
        self._drawn_version = -1
        #: The store's `words_version` at the last snapshot taken (`redraw`).
        self._drawn_words = -1
        #: The numbers (header figures, host pressure, prover log...) are due a repaint: the
        #: redraw timer sets it once a second (`_tick`), the next push does it.
        self._numbers_due = True
        #: A WordsChanged is on its way (set on the sampler thread, cleared when handled).
        self._words_posted = False
        #: When words were last repainted for a WordsChanged, and whether a repaint held back
        #: by `ui.redraw_hz` is waiting on a timer.
        self._words_mono = float("-inf")
        self._words_held = False
        #: A BREAKDOWN was just drawn and its burst is not over (`_breakdown_redraw`), and
        #: whether one came meanwhile and was not drawn.
        self._breakdowns_held = False
        self._breakdowns_missed = False
        #: The detail chart (asked at every redraw whether it is shown), and the timer that
        #: redraws while it is (paused while it is not).
        self._detail: DetailChart | None = None
        self._detail_timer: Timer | None = None
        #: What the header and gap table said in words at their last repaint (`_words_key`).
        self._words_key: tuple[object, ...] = ()
        self._pause_note = ""
        #: The caps on the panels under the chart (`_fit_under_chart`; None: uncapped).
        self._under_chart_limits: list[int | None] = [None, None, None]
        #: Where a paused replay was when its view was frozen (a seek moves it: frozen anew).
        self._frozen_at: float | None = None
        #: The source said it ended (end of a replay): the header shows the banner.
        self._ended = False
        self._snapshot_busy = False
        #: Whether the detail chart had room for its plot at the last fit (None: not fitted).
        self._detail_fits: bool | None = None
        self._last_auto_snapshot_mono: float | None = None
        #: Paths of snapshots written in this session (tests and the footer read them).
        self.snapshots: list[Path] = []

    # -- composition --------------------------------------------------------------------------

    def get_line_filters(self) -> Sequence[LineFilter]:
        filters = super().get_line_filters()
        return [*filters, self._mono_filter] if self._mono_filter is not None else filters

    def get_default_screen(self) -> Screen[None]:
        return DashboardScreen(self._relayout, id="_default")

    def _relayout(self) -> None:
        """The pane changed size (the screen has laid its widgets out for it): the words are
        laid out again. A redraw comes only when the store changed, and once the data stopped
        (a replay at its end, a paused view, a source gone quiet) none came: the header, the
        host line and the gap table kept the old width's layout, cut in mid-figure, for as
        long as the pane stayed that size."""
        if not self._widgets_gone():
            self._repush()

    def compose(self) -> ComposeResult:
        yield GpuHeader(id="header")
        yield Overview(id="overview")
        yield DetailChart(self.config.ui.detail_redraw_s, id="detail")
        yield HostPanel(id="host")
        yield PipelineLine(id="pipeline")
        yield CopyLine(id="copies")
        with Vertical(id="lower"):
            yield GapTable(id="gaps")
            yield LogPane(id="log")
            yield ProcessPanel(id="procs")
        yield StatusFooter(id="footer")

    def on_mount(self) -> None:
        self._take_stop_signals()
        self._detail = self.query_one(DetailChart)
        self._detail.display = False
        self.query_one(PipelineLine).display = False  # until a prover snapshot arrives
        self.query_one(CopyLine).display = False  # until the copy trace delivers a copy
        self.query_one(ProcessPanel).display = False  # until `t`
        self.runtime.session.subscribe(self._on_core_event)
        self.runtime.store.listen_words(self._on_words)
        self.set_interval(SLOW_PANEL_EVERY_S, self._tick)
        self._detail_timer = self.set_interval(1.0 / self.config.ui.redraw_hz, self.redraw,
                                               pause=True)
        if not self._status_on_tick():
            self.set_interval(self._status_every_s, self.refresh_status)
        self.refresh_status()
        self.redraw()
        # The runtime started before the app (sampling never waits on the UI): what it warned
        # about before we subscribed (a log path that does not exist...) is shown now.
        for notice in self.runtime.store.snapshot().notices:
            if notice.level != "info":
                self.post_message(NoticeRaised(notice))

    # -- stop signals -------------------------------------------------------------------------

    def _take_stop_signals(self) -> None:
        """Handle the stop signals in our event loop: `exit()` unwinds Textual, which leaves the
        alternate screen and turns mouse tracking off (the default action of SIGTERM and SIGHUP
        would kill the process with the terminal still in application mode)."""
        stop = self._stop_signals
        if stop is None:
            return
        loop = asyncio.get_running_loop()
        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, self._stop_by_signal, sig)
        if stop.requested():  # one came while the app was starting
            self.exit()

    def _stop_by_signal(self, sig: signal.Signals) -> None:
        if self._stop_signals is not None:
            self._stop_signals.note(sig)
        self.exit()

    # -- threads -> UI (sampler thread: post_message only) ------------------------------------

    def _on_core_event(self, event: Gap | StateChange | Notice) -> None:
        if isinstance(event, StateChange):
            self.post_message(StateChanged(event))
        elif isinstance(event, Notice) and event.level != "info":
            self.post_message(NoticeRaised(event))
        # Gaps are pulled from the store on the next redraw; open gaps change every tick.

    # -- attributes down ----------------------------------------------------------------------

    def _status_on_tick(self) -> bool:
        """Whether the once-a-second tick also refreshes the footer's status (it is not asked
        for more often): then the status and the numbers change on the same tick and Textual
        repaints them in one pass, where two timers drifted apart and made two."""
        return SLOW_PANEL_EVERY_S <= self._status_every_s

    def _tick(self) -> None:
        """Once a second: the numbers (header figures, open gaps' durations, host, log...) and
        the footer's status."""
        self._numbers_due = True
        self.redraw()
        if self._status_on_tick():
            self.refresh_status()

    def _on_words(self) -> None:
        """The store's words changed (sampler thread): one message on its way at a time."""
        if not self._words_posted:
            self._words_posted = True
            self.post_message(WordsChanged())

    def on_words_changed(self, message: WordsChanged) -> None:
        """Repaint the words now, or when `ui.redraw_hz` allows (a burst of gaps on many GPUs
        is repainted at most that often)."""
        self._words_posted = False
        wait_s = self._words_mono + 1.0 / self.config.ui.redraw_hz - time.monotonic()
        if wait_s > 0:
            if not self._words_held:
                self._words_held = True
                self.set_timer(wait_s, self._words_redraw)
            return
        self._words_redraw()

    def _words_redraw(self) -> None:
        self._words_held = False
        self._words_mono = time.monotonic()
        self.redraw()

    def redraw(self, force: bool = False) -> None:
        """Pull the store (if it changed) and push a View down. Skipped while paused, and
        between the once-a-second repaints unless something said in words changed (`_push`)."""
        if self.paused:
            return
        store = self.runtime.store
        if not force and (store.version == self._drawn_version
                          or not self._view_wanted(store.words_version)):
            return
        if self._widgets_gone():
            return
        self._drawn_words = store.words_version  # read before the snapshot: never newer
        snap = store.snapshot()
        t_end = newest_time_ns(snap)
        if t_end is None:
            if self._ended:
                self._no_data_ended(snap)
            return
        self._drawn_version = snap.version
        self._push(self._make_view(snap, t_end), force=force)

    def _no_data_ended(self, snap: StoreSnapshot | None = None) -> None:
        """The source ended before its first sample, if the store (`snap` of it, else one
        taken now) still has none: said in the header (`GpuHeader.no_data_ended`)."""
        if snap is None:
            snap = self.runtime.store.snapshot()
        if newest_time_ns(snap) is None:
            self.query_one(GpuHeader).no_data_ended(self.runtime.header.source)

    def _view_wanted(self, words_version: int) -> bool:
        """Whether a redraw would show anything: the numbers are repainted once a second,
        words (a state, a gap) at once, the detail chart at its own pace. Between those, a
        snapshot of the store and a View were built ten times a second and then thrown away
        by every widget (`_push`), which was about a third of what the dashboard cost."""
        if words_version != self._drawn_words or self._numbers_due:
            return True
        return self._detail is not None and bool(self._detail.display)

    def _make_view(self, snap: StoreSnapshot, t_end_ns: int) -> View:
        return View(snap=snap, gpu=self.gpu, window_s=self.window_s, t_end_ns=t_end_ns,
                    detector=self.config.detector,
                    period_ns=int(self.runtime.header.period_ms * 1e6),
                    paused=self.paused, note=self._pause_note, ended=self._ended,
                    source=self.runtime.header.source)

    def _push(self, view: View, force: bool = False) -> None:
        self.view = view
        slow_tick = force or view.paused or self._numbers_due
        if slow_tick:
            self._numbers_due = False
        # Words change at once (a state, a new gap, a banner, another GPU or window); numbers a
        # person reads at human pace (SM %, RX, an open gap's growing duration, host pressure,
        # the scrolling log) are repainted once a second: the compositor's repaint of a changed
        # line is most of what the dashboard costs.
        words = _words_key(view)
        detail = self.query_one(DetailChart)
        if slow_tick or words != self._words_key:
            self._words_key = words
            header = self.query_one(GpuHeader)
            if detail.display:
                # The panels under the chart come and go (the pipeline line appears with the
                # first /status answer): the verdict's lines are worked out afresh.
                header.detail_lines = self._detail_header_lines()
            header.show(view)
            self.query_one(GapTable).show(view)
        if detail.display:
            self._fit_detail_chart()
            detail.show(view)
        else:
            self.query_one(Overview).show(view, every_column=slow_tick)
        if slow_tick:
            self.query_one(HostPanel).show(view)
            self.query_one(PipelineLine).show(view)
            self.query_one(CopyLine).show(view)
            self.query_one(LogPane).show(view)
            procs = self.query_one(ProcessPanel)
            if procs.display:
                procs.show(view)
            self._fit_under_chart()
            if isinstance(self.screen, GapDetailScreen):
                self.screen.follow(view.snap)  # the gap opened whole grows and closes there too

    def _repush(self) -> None:
        """Redraw the frozen (paused) view with the current choices (GPU, window, note), or
        pull afresh when live."""
        if self.paused and self.view is not None:
            self._push(dataclasses.replace(self.view, gpu=self.gpu, window_s=self.window_s,
                                           note=self._pause_note))
        else:
            self.redraw(force=True)

    def _widgets_gone(self) -> bool:
        """The app is closing and its widgets are already removed: a timer's tick that a
        loaded box ran late finds nothing to draw on (and must not raise NoMatches)."""
        try:
            self.query_one(StatusFooter)
        except NoMatches:
            return True
        return False

    def refresh_status(self) -> None:
        if self._widgets_gone():
            return
        status = self.runtime.status()
        self.query_one(StatusFooter).show_status(status)
        if status.done != self._ended:
            # Nothing more will come: say so at the top (the REPLAY ENDED banner), now; a
            # replay seeking back from its end plays again (the banner goes).
            self._ended = status.done
            if not self.paused:
                self.redraw(force=True)
            elif self.view is None and self._ended:
                # Paused before any sample: nothing is frozen, so the end is still said
                # (the header kept "waiting for the first samples…" beside the footer's
                # "source ended" until the user unpaused).
                self._no_data_ended()
        replay = self._replay()
        if self.paused and replay is not None and self.view is not None \
                and replay.position_wall_s != self._frozen_at:
            # A seek while paused: freeze the view again where the replay now is.
            self._frozen_at = replay.position_wall_s
            snap = self.runtime.store.snapshot()
            t_end = newest_time_ns(snap)
            if t_end is not None:
                self._push(dataclasses.replace(self._make_view(snap, t_end), paused=True))

    # -- messages up --------------------------------------------------------------------------

    def on_state_changed(self, message: StateChanged) -> None:
        state = message.state
        if state.state != "BREAKDOWN":
            return
        replay = self._replay()
        if self.paused and (replay is None or not replay.paused):
            # Said of data that came while the view was frozen. A paused replay feeds nothing
            # but what a seek (`[`, ←) feeds again, and the view is frozen anew where it lands:
            # `since: GPU0 entered BREAKDOWN` said of that re-fed data claimed what had not
            # happened since the pause.
            self._pause_note = f"GPU{state.gpu} entered BREAKDOWN"
        self._breakdown_redraw()
        snap_cfg = self.config.snapshot
        now = time.monotonic()
        last = self._last_auto_snapshot_mono
        if snap_cfg.auto and (last is None or now - last >= snap_cfg.auto_min_interval_s):
            self._last_auto_snapshot_mono = now
            # After the refresh, so the SVG shows the BREAKDOWN line.
            self.call_after_refresh(self.take_snapshot,
                                    f"automatically: GPU{state.gpu} entered BREAKDOWN", True)

    def _breakdown_redraw(self) -> None:
        """A GPU entered BREAKDOWN: shown at once (within this redraw, not the next tick), and
        the bell; once for a burst. Every BREAKDOWN was a whole redraw of its own (a snapshot
        of the store, every widget pushed) and a bell: a replay of 256 GPUs breaking down
        together, or `End` over an hour of states flapping, queued hundreds of them and the UI
        thread answered no key for seconds. The first of a burst is drawn now; those that
        come while the app still has messages queued are drawn once after them
        (`_breakdowns_drawn`)."""
        if self._breakdowns_held:
            self._breakdowns_missed = True
            return
        self._breakdowns_held = True
        self._breakdowns_missed = False
        self._repush()
        if self.config.ui.bell:
            self.bell()
        # Runs once the messages queued now (the rest of the burst) have been handled.
        self.call_later(self._breakdowns_drawn)

    def _breakdowns_drawn(self) -> None:
        """The burst's messages are handled: one redraw for those held back, if any."""
        self._breakdowns_held = False
        if self._breakdowns_missed:
            self._breakdowns_missed = False
            self._repush()

    def on_notice_raised(self, message: NoticeRaised) -> None:
        notice = message.notice
        # A notice may quote outside text (a NOTE from the copy-trace library, a log path):
        # shown, never obeyed, and never read as markup.
        self.notify(toast_text(notice.message, toast_room(*self.size)[1]),
                    severity="error" if notice.level == "error" else "warning",
                    timeout=TOAST_S, markup=False)

    def _on_notify(self, event: Notify) -> None:
        """At most `MAX_TOASTS` toasts on screen (`toast_room`: 1 at 80x24), the newest: a
        storm of prover restarts and panics raised 5 notices of each kind (and their
        summaries) every 10 s, each a toast of up to 13 rows for 8 s, stacked on the right
        half of the pane: at 80x24 they covered it for as long as the storm lasted. The oldest
        go; the footer's alert keeps the worst, the help screen's status and the recording
        keep every notice. (Textual adds a toast when its Notify message is handled: here, so
        a burst is trimmed as it lands, the oldest let go before the new one is added and the
        toasts drawn once.)"""
        shown = list(self._notifications)
        at_once = toast_room(*self.size)[0]
        for old in shown[:max(0, len(shown) - at_once + 1)]:
            self._unnotify(old, refresh=False)
        super()._on_notify(event)

    def on_snapshot_finished(self, message: SnapshotFinished) -> None:
        self._snapshot_busy = False
        footer = self.query_one(StatusFooter)
        if message.path is not None:
            self.snapshots.append(message.path)
            footer.show_message(snapshot_message(message.path, self.size.width))
        else:
            footer.show_message(f"snapshot FAILED: {message.error}", error=True)
            self.notify(toast_text(str(message.error), toast_room(*self.size)[1]),
                        title="snapshot failed",
                        severity="error", timeout=10, markup=False)

    # -- snapshots ----------------------------------------------------------------------------

    def take_snapshot(self, reason: str = "by hand (key s)", automatic: bool = False) -> None:
        """Render the SVG here (UI thread), write the folder in a thread worker."""
        if self._snapshot_busy:
            self.query_one(StatusFooter).show_message("snapshot: still writing the previous one")
            return
        self._snapshot_busy = True
        # The screen as the user saw it, before the footer says it is being written (the SVG's
        # own footer read "snapshot: writing…"), without web fonts (`ui.svg`).
        svg = self_contained(self.export_screenshot(title=f"gapwatch {self.runtime.header.host}"))
        self.query_one(StatusFooter).show_message("snapshot: writing…")
        snap = self.runtime.store.snapshot()
        status_lines = status_parts(self.runtime.status())
        t_wall_s = self._wall_clock()
        runtime = self.runtime

        def write() -> None:
            try:
                path = write_snapshot(
                    self.config.snapshot.dir, snap, runtime.header, self.config,
                    t_wall_s=t_wall_s, svg=svg, reason=reason, status_lines=status_lines,
                )
            except SnapshotError as exc:
                self.post_message(SnapshotFinished(None, str(exc), automatic))
            except Exception as exc:  # noqa: BLE001 - a worker's error would end the dashboard
                self.post_message(SnapshotFinished(None, internal_error(exc), automatic))
            else:
                self.post_message(SnapshotFinished(path, None, automatic))

        self.run_worker(write, thread=True, group="snapshot", name="snapshot")

    # -- keys ---------------------------------------------------------------------------------

    def action_snapshot(self) -> None:
        self.take_snapshot()

    # -- replay -------------------------------------------------------------------------------

    def _replay(self) -> ReplayControl | None:
        replay = getattr(self.runtime, "replay", None)
        return replay if isinstance(replay, ReplayControl) else None

    def _replay_said(self, why: str | None) -> None:
        """Say a replay key's outcome in the footer (why it could not, or where it is)."""
        footer = self.query_one(StatusFooter)
        if why is not None:
            footer.show_message(why, error=True)
        else:
            self.refresh_status()

    def action_seek(self, seconds: float) -> None:
        """←/→: 10 s back/on in a replay."""
        replay = self._replay()
        if replay is None:
            self._replay_said("seeking is for replays (gapwatch replay FILE)")
            return
        self._replay_said(replay.seek_by(seconds))

    def action_gap_seek(self, direction: int) -> None:
        """[ / ]: to the previous gap (its end, so it shows closed) / on until the next closes."""
        replay = self._replay()
        if replay is None:
            self._replay_said("stepping through gaps is for replays (gapwatch replay FILE)")
            return
        if direction > 0:
            self._replay_said(replay.seek_next_gap())
            return
        pos = replay.position_wall_s
        snap = self.runtime.store.snapshot()
        ends = [g.end_s for g in snap.gaps
                if g.end_s is not None and pos is not None and g.end_s < pos - 1.0]
        if not ends:
            self._replay_said("no earlier gap in memory")
            return
        self._replay_said(replay.seek_to(ends[-1] + 0.5))

    def action_seek_end(self, end: int) -> None:
        """Home: the replay's start; End: on at once to the end of the file."""
        replay = self._replay()
        if replay is None:
            self._replay_said("Home/End are for replays (gapwatch replay FILE)")
            return
        if end:
            self._replay_said(replay.seek_to(float("inf")))
        elif replay.start_wall_s is not None:
            self._replay_said(replay.seek_to(replay.start_wall_s))

    def action_speed(self, step: int) -> None:
        """+/-: a replay faster/slower."""
        replay = self._replay()
        if replay is None:
            self._replay_said("speed is for replays and the demo's --speed")
            return
        replay.step_speed(step > 0)
        self._replay_said(None)

    def action_pause(self) -> None:
        replay = self._replay()
        if replay is not None and replay.paused == self.paused:
            replay.toggle_pause()  # a replay pauses its feeding too, and resumes where it was
            self._frozen_at = replay.position_wall_s
        self.paused = not self.paused
        if self.paused:
            if self.view is not None:
                self._push(dataclasses.replace(self.view, paused=True))
        else:
            self._pause_note = ""
            self.redraw(force=True)

    def action_next_gpu(self) -> None:
        indices = [g.index for g in self.runtime.header.gpus] or [self.gpu]
        pos = indices.index(self.gpu) if self.gpu in indices else -1
        self.gpu = indices[(pos + 1) % len(indices)]
        self._repush()

    def action_next_window(self) -> None:
        pos = self._windows.index(self.window_s) if self.window_s in self._windows else -1
        self.window_s = self._windows[(pos + 1) % len(self._windows)]
        self._repush()

    def action_detail(self) -> None:
        detail = self.query_one(DetailChart)
        detail.display = not detail.display
        if self._detail_timer is not None:
            # The detail chart is looked at `ui.redraw_hz` times a second while it is shown
            # (it draws at its own pace, `ui.detail_redraw_s`).
            (self._detail_timer.resume if detail.display else self._detail_timer.pause)()
        self.query_one(Overview).display = not detail.display
        self.query_one(GpuHeader).detail_lines = self._detail_header_lines() \
            if detail.display else None
        self._repush()

    def action_processes(self) -> None:
        """The processes on the selected GPU in place of the gap table and the log (so the
        panel is there at 80x24 too); again, or Esc, goes back."""
        procs = self.query_one(ProcessPanel)
        procs.display = not procs.display
        self.query_one(GapTable).display = not procs.display
        self.query_one(LogPane).display = not procs.display
        self._repush()

    def action_close_panel(self) -> None:
        """Esc: back from a panel opened over the gaps (the processes), else let go of the
        selected gap (the table follows the newest again)."""
        if self.query_one(ProcessPanel).display:
            self.action_processes()
        else:
            self.query_one(GapTable).clear()

    def action_gap_move(self, delta: int) -> None:
        """↑/↓: select the gap above/below in the table (newest on top)."""
        table = self.query_one(GapTable)
        if table.display:
            table.move(delta)

    def action_open_gap(self) -> None:
        """Enter: the selected gap whole (the newest when none is selected)."""
        table = self.query_one(GapTable)
        gap = table.selected()
        if gap is None:
            newest = table.newest_first()
            gap = newest[0] if newest else None
        if gap is not None:
            self._open_gap(gap)

    def on_gap_chosen(self, message: GapChosen) -> None:
        self._open_gap(message.gap)

    def _open_gap(self, gap: Gap) -> None:
        # The snapshot on screen (a paused view keeps its own), the gap's latest version in it.
        snap = self.view.snap if self.view is not None else self.runtime.store.snapshot()
        latest = next((g for g in snap.gaps if g.gap_id == gap.gap_id), gap)
        self.push_screen(GapDetailScreen(latest, snap))

    def action_log_page(self, pages: int) -> None:
        """PgUp/PgDn: scroll the prover log back/forward a page."""
        log = self.query_one(LogPane)
        if log.display:
            log.page(pages)

    def _detail_header_lines(self) -> int:
        """Lines the header may take in the detail view: the whole verdict is what `d`
        promises, so it may take the chart's rows too, all but the one that says the plot
        gave way; never the gap table's and the log's least rows, nor the lines under the
        chart."""
        return self.size.height - self._fixed_lines() - LOWER_MIN_LINES - 1

    def _fixed_lines(self) -> int:
        """Rows that neither the header nor the chart nor the lower panels can have: the
        footer, the lines shown under the chart, and the rules of a wide pane."""
        used = FOOTER_LINES
        for widget in (self.query_one(HostPanel), self.query_one(PipelineLine),
                       self.query_one(CopyLine)):
            if widget.display:
                used += widget.outer_size.height
        if self.screen.has_class("-wide"):
            used += 3  # the rules above the chart, the host line and the lower panels
        return used

    def _fit_under_chart(self) -> None:
        """Cap the panels under the chart to the rows the header, the footer, the charts' and
        the lower panels' least rows leave (`under_chart_rows`); in the detail view (its
        header leaves the lower panels their rows itself) and where they all fit, uncapped."""
        panels = [self.query_one(CopyLine), self.query_one(HostPanel),
                  self.query_one(PipelineLine)]
        wants = [len(p.lines) if p.display else 0 for p in panels]
        spare = (self.size.height - FOOTER_LINES - len(self.query_one(GpuHeader).lines)
                 - OVERVIEW_MIN_LINES - LOWER_MIN_LINES
                 - (3 if self.screen.has_class("-wide") else 0))
        detail = self.query_one(DetailChart).display
        caps = wants if detail or spare >= sum(wants) else under_chart_rows(spare, wants)
        limits = [None if cap >= want else cap for want, cap in zip(wants, caps, strict=True)]
        if limits == self._under_chart_limits:
            return  # as they are: no layout
        self._under_chart_limits = limits
        for panel, limit in zip(panels, limits, strict=True):
            panel.styles.max_height = limit  # None: gapwatch.tcss's

    def _fit_detail_chart(self) -> None:
        """The detail chart takes the rows the verdict left: its share of them (`1fr` beside
        the lower panels) while `DETAIL_MIN_LINES` fit above their least rows, else one line
        saying that the plot gave way (the rest goes to the gap table and the log)."""
        detail = self.query_one(DetailChart)
        left = self.size.height - self._fixed_lines() - len(self.query_one(GpuHeader).lines)
        fits = left - LOWER_MIN_LINES >= DETAIL_MIN_LINES
        if fits == self._detail_fits:
            return
        self._detail_fits = fits
        # A wide pane's rule above the chart is inside its height.
        note = 2 if self.screen.has_class("-wide") else 1
        detail.styles.height = "1fr" if fits else note
        detail.styles.min_height = DETAIL_MIN_LINES if fits else note

    def action_help(self) -> None:
        self.push_screen(HelpScreen(status_parts(self.runtime.status()),
                                    [str(p.resolve()) for p in self.snapshots],
                                    help_advice(self.runtime.store.snapshot())))


class DashboardScreen(Screen[None]):
    """The dashboard's screen: it tells the app when the pane changed size, once its widgets
    have their new sizes (the app's own Resize comes before the screen's layout)."""

    def __init__(self, resized: Callable[[], None], *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self._resized = resized

    def on_mount(self) -> None:
        repaint_where_toasts_leave(self)

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self._resized)


def help_advice(snap: StoreSnapshot) -> list[str]:
    """What to change so far, as the help screen (`?`) ends with it (`session_advice`, as the
    snapshot's summary.md says it): the PoSt that failed, were lost, late or at risk first,
    then the gaps, the one open now included (its idle time so far, said as still open: `?`
    is pressed while the GPU idles), retracted ones never (`advise` drops them); none before
    the first gap or PoSt trouble."""
    try:
        report = session_advice(snap, snap.gaps)
        if not snap.gaps and not report.proofs:
            return []
        return advice_lines(report)
    except Exception as exc:  # noqa: BLE001 - the help must open, the dashboard run on
        return [f"  not worked out: {internal_error(exc)}"]


def internal_error(exc: Exception) -> str:
    """A failure of gapwatch's own (a bug, an input no bound caught) in a key's work (`?`'s
    advice, `s`'s files), said in one line instead of ending the dashboard: a Textual worker's
    or handler's exception ends the app and the operator's pane with it, where /metrics keeps
    serving (`GapwatchCollector._guarded`)."""
    return f"{type(exc).__name__}: {exc} (a gapwatch bug: please report it; the dashboard runs on)"


def _words_key(view: View) -> tuple[object, ...]:
    """What the header and the gap table say in words: a change here is shown at once."""
    states = tuple((gpu, st.state, st.reason) for gpu, st in sorted(view.snap.states.items()))
    gaps = tuple((g.gap_id, g.is_open, g.retracted, g.kind) for g in view.snap.gaps[-8:])
    return (states, gaps, len(view.snap.gaps), view.gpu, view.window_s, view.paused,
            view.note, view.ended)


def toast_text(message: str, max_cells: int = TOAST_MAX_CELLS) -> str:
    """A notice as a toast shows it: written out (`fmt.visible`: it may quote outside text),
    cut to `max_cells` (`toast_room`) with "…". A notice's words are as long as its maker made them,
    and a recording's are anyone's: a toast of a 900 KB notice was wrapped whole on the UI
    thread (4.6 s without a key answered) and stood thousands of rows tall. The whole notice
    is in the store and the recording. Cut by characters first, so nothing here reads the
    whole of it. Cut at a word, ` …` after it: cut mid-word at 80x24 it read `systemd's
    default S…`; a word longer than half the room (a path) is cut inside, as it must be."""
    room = max_cells + 1  # a character more than fits, so `fit` says where it cut
    shown = fmt.visible(message[:room])
    if len(message) > room:
        shown += "…"
    if fmt.cells(shown) <= max_cells:
        return shown
    # Room for " …" after the words kept: `fit` leaves a cell for its own mark.
    body = fmt.fit(shown, max_cells - 1, pad=False)[:-1]
    if shown[len(body)] != " ":
        word_end = body.rfind(" ")
        if word_end >= len(body) // 2:
            body = body[:word_end]
    return body.rstrip() + " …"


def snapshot_message(path: Path, width: int) -> str:
    """"snapshot: /full/path", or "snapshot: …/folder-name" where the full path would not fit
    beside the keys (the full path is in the help screen)."""
    full = f"snapshot: {path.resolve()}"
    return full if len(full) <= width - 20 else f"snapshot: …/{path.name}"
