"""LogPane: the prover's parsed log events in time order, newest at the bottom, warnings
highlighted.

Who drives it: `GapwatchApp.show(view)`. Log text is the prover's, not ours: it is put into a
rich `Text` as plain characters, never parsed as markup, so a line holding `[bold]` or
`[link=...]` is shown exactly as written (and cannot restyle or hijack the dashboard), and its
control characters are made visible (`fmt.visible`: `\x1b[?1049l` is shown, not obeyed).

Which time, which order: each line shows the event's time, the one the detector ties to gaps
(the line's own timestamp, a journald prefix, or cuzk's TIMELINE offset). Lines are ordered by
that time, not by arrival: cuzk writes its tracing lines, its TIMELINE lines and its untimed C++
lines through different buffers, so in arrival order the times jump back and forth (.318, .239,
.238, .307) and the pane cannot be read against the gap table. A line without any time of its
own carries the time it was read, marked `~` after the time.

Scrolling: PgUp/PgDn (through the app) and the mouse wheel move the pane back through the
events in memory; while scrolled back the title says how far and the pane stays put as new
lines arrive (End, or scrolling down to the bottom, follows the newest again).

Drawing: line by line (`TextLines`). The pane changes once a second as lines arrive (in the
demo every line of it); handing Textual the whole `Group` made it measure, wrap and crop prover
lines of hundreds of characters through the console, ~2 ms a time and the dashboard's costliest
widget. Each event's line is built once, cut to the width and rendered once; as new lines push
it up it keeps its strip, so a second's repaint renders only the lines that arrived.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

from rich.text import Text

from gapwatch.core import fmt
from gapwatch.core.models import READ_TIMES, LogEvent
from gapwatch.ui.view import View
from gapwatch.ui.widgets.text_lines import TextLines

_T_WALL = attrgetter("t_wall_s")


def event_line(event: LogEvent) -> Text:
    """One log event as literal text: time, the warning tag if any, the raw line."""
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(fmt.clock(event.t_wall_s, millis=True))
    # `~`: no time of its own in the line; this is when gapwatch read it.
    line.append("~" if event.time_source in READ_TIMES else " ")
    if event.warning:
        line.append(f"[{event.warning}] ")
    # Text.append of a str never interprets markup; the raw line stays as the prover wrote it,
    # with its control characters shown rather than sent to the terminal.
    line.append(fmt.visible(event.raw.rstrip("\r\n")) or f"({event.kind} {event.name})")
    return line


#: How far back (in events received) a late line may sort in: cuzk's buffers hold lines back by
#: well under a second, a few dozen lines at most.
_SORT_WINDOW = 256


def newest_by_time(events: Sequence[LogEvent], n: int) -> list[LogEvent]:
    """The `n` newest of the last events received, in time order (ties keep arrival order)."""
    if n <= 0:
        return []
    recent = sorted(events[-max(n, _SORT_WINDOW):], key=_T_WALL)
    return recent[-n:]


class LogPane(TextLines):
    """The last lines that fit, oldest at the top."""

    COMPONENT_CLASSES = {"log-pane--warning", "log-pane--time", "log-pane--title"}

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self._events: tuple[LogEvent, ...] = ()
        #: Lines scrolled back from the newest (0: following the newest).
        self.back = 0
        #: Each event's line as last built, by the event's id (the event kept beside it, so an
        #: id reused by a newer event is never taken for it): an event is built once.
        self._built: dict[int, tuple[LogEvent, Text]] = {}

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._built = {}  # the styles are baked into the lines

    def scroll_lines(self, delta: int) -> None:
        """Scroll `delta` lines back (positive) or forward (negative), within the events kept."""
        room = max(1, self.size.height - 1)
        self.back = max(0, min(max(0, len(self._events) - room), self.back + delta))
        self.set_rows(self.build_rows())

    def page(self, pages: int) -> None:
        self.scroll_lines(pages * max(1, self.size.height - 2))

    def on_mouse_scroll_up(self, event: object) -> None:
        self.scroll_lines(3)

    def on_mouse_scroll_down(self, event: object) -> None:
        self.scroll_lines(-3)

    def show(self, view: View) -> None:
        events = view.snap.log_events
        # The store's ring only grows at the end: same length and same last event = unchanged.
        if len(events) != len(self._events) or (events and events[-1] is not self._events[-1]):
            if self.back:  # scrolled back: keep the same lines in view as new ones arrive
                self.back += max(0, len(events) - len(self._events))
            self._events = events
            # The lines move up as new ones arrive: each keeps its strip (`TextLines`).
            self.set_rows(self.build_rows())

    def build_rows(self) -> list[Text]:
        """The title, then the events that fit (or the note that there are none)."""
        where = (f"{self.back} lines back, PgDn/End: newest · " if self.back else "")
        title = Text(f"prover log ({len(self._events)} events, {where}by time; ~ = time read)",
                     no_wrap=True, overflow="ellipsis")
        title.stylize(self.component_style("log-pane--title"))
        room = max(0, self.size.height - 1)
        shown = newest_by_time(self._events, room + self.back)[:room] if self.back \
            else newest_by_time(self._events, room)
        built = [self._line(event) for event in shown]
        self._built = {id(event): (event, text) for event, text in built}
        lines = [title, *(text for _, text in built)]
        if not self._events:
            lines.append(Text("no prover log events (use --log PATH)", style="dim"))
        return lines

    def _line(self, event: LogEvent) -> tuple[LogEvent, Text]:
        """The event's line, styled (built once per event)."""
        kept = self._built.get(id(event))
        if kept is not None and kept[0] is event:
            return kept
        line = event_line(event)
        line.stylize(self.component_style("log-pane--time"), 0, 12)
        if event.warning:
            line.stylize(self.component_style("log-pane--warning"), 13)
        return event, line
