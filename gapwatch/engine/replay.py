"""ReplayDriver: feeds a recording (or a trace CSV) into a session, paced by its own timestamps.

Who calls it: `gapwatch.engine.runtime` for `--source replay:FILE` (`gapwatch replay`, `record
--source replay:...`). Records go through `Session.on_record`, the same path as live data; recorded
gaps and
states are skipped because the detector recomputes them. At the end the reader's counters and
problems (bad lines, truncation) become store counters and notices, so the user sees them.
"""

from __future__ import annotations

import time

from gapwatch.core.models import Notice
from gapwatch.engine.background import Background
from gapwatch.engine.session import Session
from gapwatch.sources.recording import Recording


class ReplayDriver(Background):
    """Feeds a recording into a session at `speed` x its recorded pace (0 = no waiting)."""

    thread_name = "gapwatch-replay"

    def __init__(self, recording: Recording, session: Session, speed: float) -> None:
        super().__init__()
        self.recording = recording
        self.session = session
        self.speed = speed
        self.records_fed = 0

    def _loop(self) -> None:
        first_t: float | None = None
        real0 = time.monotonic()
        for record in self.recording.records:
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
