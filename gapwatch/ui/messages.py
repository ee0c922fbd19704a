"""Messages that travel up to `GapwatchApp` (messages up, attributes down).

Who posts them: the session and store listeners installed by the app (called on the sampler
thread: they only call `post_message`, the one thread-safe call), and the snapshot worker thread
when it is done.
"""

from __future__ import annotations

from pathlib import Path

from textual.message import Message

from gapwatch.core.models import Gap, Notice, StateChange


class StateChanged(Message):
    """A GPU's chaining state changed (the detector decided it on the sampler thread)."""

    def __init__(self, state: StateChange) -> None:
        super().__init__()
        self.state = state


class WordsChanged(Message):
    """What the dashboard says in words changed in the store (a gap opened or closed, a state
    was set): posted by the store's listener on the writing thread, at most one at a time."""


class NoticeRaised(Message):
    """The core has something to tell the user (GPU lost, log rotated, bad line...)."""

    def __init__(self, notice: Notice) -> None:
        super().__init__()
        self.notice = notice


class SnapshotFinished(Message):
    """A snapshot folder was written (`path`) or could not be (`error`, for the user)."""

    def __init__(self, path: Path | None, error: str | None, automatic: bool) -> None:
        super().__init__()
        self.path = path
        self.error = error
        self.automatic = automatic


class GapChosen(Message):
    """A gap was chosen in the gap table (a click on the selected row): open its detail."""

    def __init__(self, gap: Gap) -> None:
        super().__init__()
        self.gap = gap
