"""LogPane: the prover's parsed log events, newest at the bottom, warnings highlighted.

Who drives it: `GapwatchApp.show(view)`. Log text is the prover's, not ours: it is put into a
rich `Text` as plain characters, never parsed as markup, so a line holding `[bold]` or
`[link=...]` is shown exactly as written (and cannot restyle or hijack the dashboard), and its
control characters are made visible (`fmt.visible`: `\x1b[?1049l` is shown, not obeyed).
"""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.widget import Widget

from gapwatch.core import fmt
from gapwatch.core.models import LogEvent
from gapwatch.ui.view import View


def event_line(event: LogEvent) -> Text:
    """One log event as literal text: time, the warning tag if any, the raw line."""
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(fmt.clock(event.t_wall_s, millis=True))
    line.append(" ")
    if event.warning:
        line.append(f"[{event.warning}] ")
    # Text.append of a str never interprets markup; the raw line stays as the prover wrote it,
    # with its control characters shown rather than sent to the terminal.
    line.append(fmt.visible(event.raw.rstrip("\r\n")) or f"({event.kind} {event.name})")
    return line


class LogPane(Widget):
    """The last lines that fit, oldest at the top."""

    COMPONENT_CLASSES = {"log-pane--warning", "log-pane--time", "log-pane--title"}

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self._events: tuple[LogEvent, ...] = ()

    def show(self, view: View) -> None:
        events = view.snap.log_events
        # The store's ring only grows at the end: same length and same last event = unchanged.
        if len(events) != len(self._events) or (events and events[-1] is not self._events[-1]):
            self._events = events
            self.refresh()

    def render(self) -> Group:
        title = Text(f"prover log ({len(self._events)} events)", no_wrap=True)
        title.stylize(self.get_component_rich_style("log-pane--title"))
        room = max(0, self.size.height - 1)
        shown = self._events[-room:] if room else ()
        warning = self.get_component_rich_style("log-pane--warning")
        time_style = self.get_component_rich_style("log-pane--time")
        lines = [title]
        for event in shown:
            line = event_line(event)
            line.stylize(time_style, 0, 12)
            if event.warning:
                line.stylize(warning, 13)
            lines.append(line)
        if not self._events:
            lines.append(Text("no prover log events (use --log PATH)", style="dim"))
        return Group(*lines)
