"""The dashboard's screen as plain text: what `tmux capture-pane -p` would show.

Who calls it: `evaluation/pane_gpu.py` (the pane on a real GPU, captured for the lead to read)
and the UI tests (`tests/ui_fakes.py`), so that both read the screen by one rule.
"""

from __future__ import annotations

import io


def screen_text(app: object) -> str:
    """The app's current screen, every cell, as text (a full repaint's worth, not the updates
    a terminal was sent: `tests/ui_fakes.Terminal` reads those)."""
    from rich.console import Console

    width, height = app.size  # type: ignore[attr-defined]
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True))  # type: ignore[attr-defined]
    return console.export_text()
