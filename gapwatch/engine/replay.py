"""ReplayDriver: feeds a recording (or a trace CSV) into a session, paced by its own timestamps.

Who calls it: `gapwatch.engine.runtime` for `--source replay:FILE` (`gapwatch replay`, `record
--source replay:...`). Records go through `Session.on_record`, the same path as live data; recorded
gaps and
states are skipped because the detector recomputes them. At the end the reader's counters and
problems (bad lines, truncation) become store counters and notices, so the user sees them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from gapwatch.core.models import LogEvent, Notice
from gapwatch.engine.background import Background
from gapwatch.engine.session import Session
from gapwatch.logs.files import merge_by_time
from gapwatch.sources.recording import Recording


class ReplayDriver(Background):
    """Feeds a recording into a session at `speed` x its recorded pace (0 = no waiting)."""

    thread_name = "gapwatch-replay"

    def __init__(self, recording: Recording, session: Session, speed: float,
                 log_events: Sequence[LogEvent] = ()) -> None:
        """
        Args:
            recording: what to replay.
            session: where every record goes.
            speed: x the recorded pace; 0 = as fast as possible.
            log_events: events parsed from prover log files (`replay --log`), sorted by time:
                merged into the records by their time, as `report --log` does.
        """
        super().__init__()
        self.recording = recording
        self.log_events = log_events
        self.session = session
        self.speed = speed
        self.records_fed = 0

    def _loop(self) -> None:
        first_t: float | None = None
        real0 = time.monotonic()
        for record in merge_by_time(self.recording.records, self.log_events):
            if self.stop_event.is_set():
                return
            t = getattr(record, "t_wall_s", None)
            if self.speed > 0 and isinstance(t, float):
                if first_t is None:
                    first_t = t
                delay = (t - first_t) / self.speed - (time.monotonic() - real0)
                if delay > 0 and self.stop_event.wait(delay):
                    return
            self.session.on_record(record)
            self.records_fed += 1
        for key, n in self.recording.counters.items():
            self.session.store.count(f"replay_{key}", n)
        for problem in self.recording.problems:
            self.session.on_notice(Notice(time.monotonic_ns(), time.time(), "warning", problem))
