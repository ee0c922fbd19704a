"""Prover logs followed by a real `LogFollower` for tests: its threads started, the events and
notices it gives collected, stopped at the end (`following`)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from gapwatch.config import LogsConfig
from gapwatch.core.models import LogEvent, Notice
from gapwatch.logs.follow import LogFollower


@contextmanager
def following(paths: Sequence[Path], config: LogsConfig
              ) -> Iterator[tuple[LogFollower, list[LogEvent], list[Notice]]]:
    """`paths` followed with `config` (the follower, its events and its notices, filled by
    its threads as they come); stopped when the block ends."""
    events: list[LogEvent] = []
    notices: list[Notice] = []
    lock = threading.Lock()

    def on_event(e: LogEvent) -> None:
        with lock:
            events.append(e)

    follower = LogFollower([str(p) for p in paths], config, on_event, notices.append)
    follower.start()
    try:
        yield follower, events, notices
    finally:
        follower.stop()
