"""Whole prover log files parsed into one time-sorted list, for tests that compare against it
(gapwatch itself spools them: `gapwatch.offline.report.spool_logs`)."""

from __future__ import annotations

from collections.abc import Iterable

from gapwatch.config import Config
from gapwatch.core.models import LogEvent
from gapwatch.logs.files import log_file_events


def parse_log_files(paths: Iterable[str], config: Config,
                    timeline_epoch_s: float | None = None
                    ) -> tuple[list[LogEvent], dict[str, int]]:
    """The events of `paths` sorted by time (equal times in the order parsed) and the parser's
    counters, as `log_file_events` gives them. Raises OSError."""
    counters: dict[str, int] = {}
    events = sorted(log_file_events(paths, config, timeline_epoch_s, counters),
                    key=lambda e: e.t_wall_s)
    return events, counters
