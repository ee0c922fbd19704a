"""ReplayDriver: feeds a recording (or a trace CSV) into a session, paced by its own timestamps.

Who calls it: `gapwatch.engine.runtime` for `--source replay:FILE` (`gapwatch replay`, `record
--source replay:...`). Records go through `Session.on_record`, the same path as live data;
recorded gaps and states are skipped because the detector recomputes them. At the end the
reader's counters and problems (bad lines, truncation) become store counters and notices, so the
user sees them.

Pacing follows the samples' data time (`t_mono_ns` of GPU and host samples; log lines carry the
prover's clock, which may be anywhere). A step forward of more than `MAX_PACED_STEP_S` (a clock
jump, a recording paused for an hour, two recordings stitched together) is not waited out: the
pace starts again from there, and the first such step is said in a notice. Samples behind the
latest data time (out of order) are fed at once.
Out-of-order samples and clock jumps that the detector drops or cuts at are said in a notice as
soon as they are seen and summed up at the end: a replay of a file not in time order must not
look like a quiet session.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from gapwatch.base.background import Background
from gapwatch.core.models import LogEvent, Notice
from gapwatch.engine.session import Session
from gapwatch.logs.files import merge_by_time
from gapwatch.sources.recording import Recording

#: Largest step forward of data time the replay waits out (at speed 1).
MAX_PACED_STEP_S = 10.0
#: How often (records) the detector's counters are looked at for out-of-order samples.
CHECK_EVERY_RECORDS = 1000


class ReplayDriver(Background):
    """Feeds a recording into a session at `speed` x its recorded pace (0 = no waiting)."""

    thread_name = "gapwatch-replay"
    #: A generator that raised cannot be resumed: a replay that dies stays dead (said).
    restartable = False

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
        #: Steps of data time not waited out (see `MAX_PACED_STEP_S`).
        self.time_jumps = 0
        self._said: dict[str, int] = {}

    def _loop(self) -> None:
        anchor_ns: int | None = None  # data time paced from ...
        real0 = time.monotonic()  # ... starting at this real time
        high_ns = 0  # the latest data time so far
        max_step_ns = int(MAX_PACED_STEP_S * 1e9)
        for record in merge_by_time(self.recording.records, self.log_events):
            if self.stop_event.is_set():
                return
            if self.speed > 0 and (record.type == "gpu" or record.type == "host"):
                t_ns: int = record.t_mono_ns
                if anchor_ns is None:
                    anchor_ns = high_ns = t_ns
                elif t_ns > high_ns:
                    if t_ns - high_ns > max_step_ns:
                        self._time_jump(t_ns - high_ns)
                        anchor_ns, real0 = t_ns, time.monotonic()
                    high_ns = t_ns
                    delay = (t_ns - anchor_ns) / 1e9 / self.speed - (time.monotonic() - real0)
                    if delay > 0 and self.stop_event.wait(delay):
                        return
            self.session.on_record(record)
            self.records_fed += 1
            if self.records_fed % CHECK_EVERY_RECORDS == 0:
                self._say_detector_findings()
        self._say_detector_findings(final=True)
        if self.time_jumps > 1:
            self._notice(f"replay: {self.time_jumps} steps of data time over "
                         f"{MAX_PACED_STEP_S:g} s were not waited out")
        for key, n in self.recording.counters.items():
            self.session.store.count(f"replay_{key}", n)
        for problem in self.recording.problems:
            self._notice(problem)

    def _time_jump(self, step_ns: int) -> None:
        self.time_jumps += 1
        if self.time_jumps == 1:
            self._notice(f"replay: data time steps {step_ns / 1e9:+.1f} s after record "
                         f"{self.records_fed} (a clock jump, a pause, or files joined); "
                         "not waited out")

    def _say_detector_findings(self, final: bool = False) -> None:
        """Samples the detector dropped as out of order, and clock jumps it cut the data at:
        said the first time they appear, and in total at the end."""
        detector = self.session.detector
        if detector is None:
            return
        counters = detector.counters
        for key, words in (
            ("out_of_order", "GPU samples out of time order dropped (the file is not in time "
                             "order: what is shown covers only the samples in order)"),
            ("clock_jumps", "clock jumps (wall time against data time); the data is cut there"),
        ):
            n = counters.get(key, 0)
            if n and (not self._said.get(key) or (final and n != self._said[key])):
                self._said[key] = n
                self._notice(f"replay: {n} {words}" + ("" if final else " so far"))

    def _notice(self, message: str) -> None:
        self.session.on_notice(Notice(time.monotonic_ns(), time.time(), "warning", message))
