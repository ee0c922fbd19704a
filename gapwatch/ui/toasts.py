"""A toast that leaves takes its picture with it: the screen is repainted whole after a layout
in which a toast went.

Why: Textual (8.2) stacks toasts in a rack that scrolls to its end when they are taller than the
pane (at 80x24, two notices of a few lines already are). That scroll lays out only what is
visible and leaves the screen's full map as it was before the scroll; the next full layout,
the one that removes a toast, compares against that stale map and repaints the toast's place
before the scroll, not where it was drawn. The toast's text stayed on the pane over the
headline and the charts ("ghosts") until something repainted those cells: for minutes after a
replay ended, where nothing else changes (`replay sim:post --speed 50`, a storm of restart and
panic notices). A full repaint (`?` then Esc) showed they were gone.

The repaint comes in the same update as the layout that removed the toast (the layout runs
first, then the repaint it asked for), so no ghost reaches the terminal for longer than that
one update; it costs one redraw of the pane's cells (no widget renders again) per toast that
leaves, at most a few every 8 s (`app.MAX_TOASTS`, `app.TOAST_S`).

Who calls it: every screen that shows toasts, on mount: the dashboard's (`app.DashboardScreen`),
the help (`widgets.help_screen.HelpScreen`) and a gap's detail (`gap_detail.GapDetailScreen`).
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets._toast import Toast


def repaint_where_toasts_leave(screen: Screen[Any]) -> None:
    """After each layout of `screen`, repaint it whole if a toast it had laid out is gone."""
    laid_out: set[Toast] = set()

    def after_layout(_: Screen[Any]) -> None:
        now = set(screen.query(Toast))
        if laid_out - now:
            screen.refresh()
        laid_out.clear()
        laid_out.update(now)

    # Immediate: called inside the layout, so the repaint it asks for is done in the same
    # update, right after the layout's own (partial, stale) one.
    screen.screen_layout_refresh_signal.subscribe(screen, after_layout, immediate=True)
