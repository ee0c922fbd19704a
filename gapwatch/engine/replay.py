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

Controls (the dashboard's keys, from the UI thread; each only sets a field the loop reads):
`toggle_pause`, `set_speed` (the pace starts again from the current record), `seek_to(wall_s)`
and `seek_next_gap`. Forward, the records up to the target are fed at once (the detector sees
every one, as a report does); backward, the replay starts again from the file's first record
(`restart`: the runtime reopens the file and empties the store and the detector) and feeds at
once up to the target. Bounded in time for a long recording: going back, GPU and host samples
(and the copy trace's records) older than the store's history (`SeriesStore.history_s`, 10 min
by default) before the target are read but not fed, so the detector works on at most that much
data whatever the file's length (reading the file up to the target stays linear in it); the
prover's log lines, `/status` snapshots and notices are still fed (the pipeline's facts, such as
cuzk's synthesis worker count said once at start, live in them). The detector's gaps do not
depend on data more than a window before them: after the re-feed it finds the gaps the first
pass found (tests/test_replay_refeed.py); what counts "since the start" (gap tallies) counts
from where the data was fed again, `refed_from_wall_s`. A replay whose records also go to a
recording or /metrics cannot go back (they would see records twice): `can_go_back` says so.
Once the file has ended the driver is done: a seek then says that it cannot; except in the
dashboard (`interactive`), where the end settles the detector as any replay's end does
(`at_end`: REPLAY ENDED) and the driver waits for a seek back, which plays the file again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from gapwatch.base.background import Background
from gapwatch.core import fmt
from gapwatch.core.models import (
    CopyRecord,
    Gap,
    GpuSample,
    HostSample,
    LogEvent,
    Notice,
    ProverStatus,
    StateChange,
)
from gapwatch.engine.session import Session
from gapwatch.logs.files import merge_by_time
from gapwatch.logs.follow import read_by_at_end
from gapwatch.sources.cuzk_status import RecordedRefusals
from gapwatch.sources.recording import Recording, RecordingError

if TYPE_CHECKING:
    from gapwatch.offline.replay_logs import ReplayLogs

#: Largest step forward of data time the replay waits out (at speed 1).
MAX_PACED_STEP_S = 10.0
#: How often (records) the detector's counters are looked at for out-of-order samples.
CHECK_EVERY_RECORDS = 1000
#: Record types still fed while a seek back skips samples (they carry the pipeline's facts).
_KEPT_WHILE_SKIPPING = ("log", "prover", "prover_same", "notice")
#: Records `RecordedRefusals` reads (the `/status` snapshots) or may say again (notices).
_SAID_AGAIN = (ProverStatus, Notice)
#: Speeds `faster`/`slower` step through (x the recorded pace).
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 10.0, 30.0, 100.0)


class _Restart(Exception):
    """Internal: a seek backwards; the loop starts again from the first record of `recording`
    (the file opened again, the session emptied)."""

    def __init__(self, recording: Recording) -> None:
        super().__init__()
        self.recording = recording


class ReplayDriver(Background):
    """Feeds a recording into a session at `speed` x its recorded pace (0 = no waiting)."""

    thread_name = "gapwatch-replay"
    #: A generator that raised cannot be resumed: a replay that dies stays dead (said).
    restartable = False

    def __init__(self, recording: Recording, session: Session, speed: float,
                 logs: ReplayLogs | None = None,
                 restart: Callable[[], Recording] | None = None,
                 notes: Sequence[str] = ()) -> None:
        """
        Args:
            recording: what to replay.
            session: where every record goes.
            speed: x the recorded pace; 0 = as fast as possible.
            logs: the prover's log files (`replay --log`), parsed onto disk: each pass of the
                file merges a pass over their events into the records by time, as `report
                --log` does (`gapwatch.offline.replay_logs`).
            restart: reopens the file and empties the session for a seek backwards (None: the
                replay cannot go back); raises RecordingError (or OSError), the session
                untouched, when the file cannot be read again or is another recording now.
            notes: said as each play of the file starts (what its PoSt are judged by, where
                this run's config says other: `PostDeadlines.said`).
        """
        super().__init__()
        self.recording = recording
        self.logs = logs
        self.session = session
        self.speed = speed
        self.records_fed = 0
        #: Steps of data time not waited out (see `MAX_PACED_STEP_S`).
        self.time_jumps = 0
        self._said: dict[str, int] = {}
        self._notes_said: set[str] = set()
        self._restart = restart
        self._notes = list(notes)
        #: Controls (set from the UI thread, read by the loop).
        self.paused = False
        self._seek_wall_s: float | None = None
        self._until_gaps: int | None = None
        self._closed_gaps = 0
        self._changed = threading.Event()
        #: Wall time of the latest GPU or host sample fed, and of the first: the position.
        self.position_wall_s: float | None = None
        self.start_wall_s: float | None = None
        #: The latest host sample's monotonic time fed: where the recording went to on the
        #: live reader's clock (`read_by_at_end`).
        self.last_host_mono_ns: int | None = None
        #: Going back: samples before this wall time are read, not fed (see the docstring).
        self._skip_until_wall_s: float | None = None
        #: After a seek back, the wall time of the first sample fed again (None: from the start).
        self.refed_from_wall_s: float | None = None
        #: The dashboard's replay: the end of the file waits for a seek back (set before start).
        self.interactive = False
        #: (interactive) The file has ended and the detector is settled; a seek back plays again.
        self.at_end = False
        session.subscribe(self._heard)

    # -- controls (UI thread) ------------------------------------------------------------------

    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        self._changed.set()
        return self.paused

    def set_speed(self, speed: float) -> None:
        self.speed = speed
        self._changed.set()

    def step_speed(self, up: bool) -> float:
        """The next speed of `SPEEDS` up or down from the current one."""
        faster = [x for x in SPEEDS if x > self.speed]
        slower = [x for x in SPEEDS if x < self.speed]
        if up and faster:
            self.set_speed(faster[0])
        elif not up and slower:
            self.set_speed(slower[-1])
        return self.speed

    def stop(self, timeout_s: float = 2.0) -> None:
        self._changed.set()  # a paused wait is on this event: end it now
        super().stop(timeout_s)

    def can_go_back(self) -> bool:
        return self._restart is not None and not self.session.sinks and not self.finished.is_set()

    def seek_to(self, wall_s: float) -> str | None:
        """Go to data time `wall_s`; None, or why it cannot."""
        if self.finished.is_set():
            return "the replay has ended: run it again to go back"
        pos = self.position_wall_s
        if self.at_end and (pos is None or wall_s >= pos):
            return "the replay is at its end: ←, [ or Home go back"
        if pos is not None and wall_s < pos and not self.can_go_back():
            return ("cannot go back: its records also go to a recording or /metrics"
                    if self.session.sinks else "cannot go back in this replay")
        if self.start_wall_s is not None:
            wall_s = max(wall_s, self.start_wall_s)
        self._seek_wall_s = wall_s
        self._changed.set()
        return None

    def seek_by(self, seconds: float) -> str | None:
        """`seconds` on (or back) from where the replay is, or from a seek not yet reached
        (two presses of → go 20 s on)."""
        base = self._seek_wall_s if self._seek_wall_s is not None else self.position_wall_s
        if base is None or base == float("inf"):
            return None
        return self.seek_to(base + seconds)

    def seek_next_gap(self) -> str | None:
        """Feed at once until the next gap closes; None, or why it cannot."""
        if self.finished.is_set() or self.at_end:
            return "the replay has ended"
        self._until_gaps = self._closed_gaps
        self._changed.set()
        return None

    def position_words(self) -> str | None:
        """`replay 09:07:12 (+0:51) x4` (`paused` when paused), None before the first sample."""
        pos, start = self.position_wall_s, self.start_wall_s
        if pos is None or start is None:
            return None
        elapsed = int(max(0.0, pos - start))
        speed = "as fast as it reads" if self.speed <= 0 else f"x{self.speed:g}"
        ended = self.finished.is_set() or self.at_end
        state = "paused" if self.paused and not ended else ("ended" if ended else speed)
        return (f"replay {fmt.clock(pos)} (+{elapsed // 60}:{elapsed % 60:02d}) {state}")

    def _heard(self, event: Gap | StateChange | Notice) -> None:
        if isinstance(event, Gap):
            self._closed_gaps += 1

    # -- the loop ------------------------------------------------------------------------------

    def _fast(self, record_wall_s: float | None) -> bool:
        """Is this record fed at once (a seek forward in progress)? Ends the seek once
        reached."""
        if self._until_gaps is not None:
            if self._closed_gaps > self._until_gaps:
                self._until_gaps = None
                return False
            return True
        target = self._seek_wall_s
        if target is None:
            return False
        pos = self.position_wall_s
        if pos is not None and target < pos - 1e-3:
            self._go_back()  # raises _Restart, or says why not and drops the seek
            return False
        if record_wall_s is not None and record_wall_s >= target:
            self._seek_wall_s = None
            return False
        return True

    def _loop(self) -> None:
        while True:
            try:
                if not self._play():
                    return
                if not self.interactive:
                    break
                self._at_end()  # raises _Restart for a seek back; returns when stopped
                return
            except _Restart as restart:
                self.at_end = False
                self.recording = restart.recording
                self._notes_said.clear()  # the store's notices went with the restart
                self.position_wall_s = None
                self.last_host_mono_ns = None
                self.records_fed = 0
                self.refed_from_wall_s = None
                target = self._seek_wall_s
                history_s = self.session.store.history_s
                if target is not None and self.start_wall_s is not None \
                        and target - history_s > self.start_wall_s:
                    self._skip_until_wall_s = target - history_s
        self._finish_words()

    def _at_end(self) -> None:
        """(The dashboard) The file has ended: say what the reader and the detector found,
        settle the detector (as at any replay's end), then wait for a seek back."""
        self._finish_words()
        self.session.finish(self.read_by_at_end())
        self.at_end = True
        self._until_gaps = None
        while not self.stop_event.is_set():
            self._changed.wait(0.1)
            self._changed.clear()
            target, pos = self._seek_wall_s, self.position_wall_s
            if target is not None and pos is not None and target < pos - 1e-3:
                self._go_back()  # raises _Restart, or says why not and drops the seek
                continue
            self._seek_wall_s = None  # on from the end: nothing left to do

    def _go_back(self) -> None:
        """Open the file again for a seek back and raise `_Restart`. When it cannot be read
        again (removed, cut, or replaced by another recording since the replay opened it), say
        why, drop the seek and stay where the replay is: the reopen raised out of the loop,
        and the replay's thread died (exit 1, no seek any more) with the view of a file that
        was fine when read."""
        assert self._restart is not None
        try:
            recording = self._restart()
        except (RecordingError, OSError) as exc:
            self._seek_wall_s = None
            self._notice(f"replay: cannot go back: {exc}; the replay stays where it is")
            return
        raise _Restart(recording)

    def _wait_paused(self) -> bool:
        """While paused (and no seek asks to move): False when stopped meanwhile."""
        while self.paused and self._seek_wall_s is None and self._until_gaps is None:
            if self.stop_event.is_set():
                return False
            self._changed.wait(0.1)
            self._changed.clear()
        return not self.stop_event.is_set()

    def _play(self) -> bool:
        """Feed the records, paced; False when stopped. Raises _Restart for a seek back."""
        anchor_ns: int | None = None  # data time paced from ...
        real0 = time.monotonic()  # ... starting at this real time
        high_ns = 0  # the latest data time so far
        max_step_ns = int(MAX_PACED_STEP_S * 1e9)
        # A run of copies goes to the session together, as a datagram of the trace does live
        # (`Session.on_copies`: a closed gap they reach is re-published once).
        held: list[CopyRecord] = []
        for note in self._notes:  # said before the records, at each play (as the logs' are)
            self._say_once(note)
        logs = None
        if self.logs is not None:
            logs = self.logs.events()
            # A line the recording holds too is fed as the file has it; when the recording's
            # copy was read live, the watcher is told (the end's reader's clock runs from it).
            logs.tell_lines_read(self.session.on_line_read)
            # At each play: a seek back empties the store, its counters and notices with it.
            for key, n in self.logs.counters.items():
                if n:
                    self.session.store.count(f"log_{key}", n)
            for note in logs.notes_now():  # a log of another day, said as the replay starts
                self._say_once(note)
        ended = False
        end_s: float | None = None  # the latest GPU sample's wall time (the data's end)

        def after_end(ev: LogEvent, data_end_s: float | None) -> bool:
            # The `--log` lines left after the last sample: the data has ended (a windowed
            # replay's words from here on are judged against its end, as the report's).
            nonlocal ended
            if not ended:
                ended = True
                self.session.data_ended(data_end_s)
            assert logs is not None
            return logs.after_end(ev, data_end_s)

        merged = (merge_by_time(self.recording.records, logs, after_end) if logs is not None
                  else self.recording.records)
        # A recording made before the poller said a refusal after answered polls as the
        # prover gone: its notices said by that rule from the snapshots before them.
        refusals = RecordedRefusals()
        run = 0  # the run of the set that the records fed are of (`Recording.run`)
        for record in merged:
            if self.stop_event.is_set():
                return False
            if self.recording.run != run:
                # Where the reader reached a later run's first record, not by time: its clock
                # may overlap the run before's. The store says its GPU states afresh.
                run = self.recording.run
                self.session.store.begin_run(run)
            timed = record if isinstance(record, GpuSample | HostSample) else None
            if self._skip_until_wall_s is not None and self._skipped(record, timed):
                continue
            if type(record) is CopyRecord:
                held.append(record)
                self.records_fed += 1
                continue
            if held:
                self.session.on_copies(held)
                held = []
            sample = timed is not None
            if sample and self.paused:
                if not self._wait_paused():
                    return False
                anchor_ns = None  # the pace starts again from here
            if self._changed.is_set():  # a new speed, a seek, a resume: pace from here
                self._changed.clear()
                anchor_ns = None
            fast = self._fast(timed.t_wall_s if timed is not None else None)
            if fast:
                anchor_ns = None
            elif self.speed > 0 and timed is not None:
                t_ns = timed.t_mono_ns
                if anchor_ns is None:
                    anchor_ns = high_ns = t_ns
                    real0 = time.monotonic()
                elif t_ns > high_ns:
                    if t_ns - high_ns > max_step_ns:
                        self._time_jump(t_ns - high_ns)
                        anchor_ns, real0 = t_ns, time.monotonic()
                    high_ns = t_ns
                    delay = (t_ns - anchor_ns) / 1e9 / self.speed - (time.monotonic() - real0)
                    # A control given meanwhile is taken at the next record: a wait is one
                    # sample period at this speed (a step of data time is capped above).
                    if delay > 0 and self.stop_event.wait(delay):
                        return False
            if timed is None and type(record) in _SAID_AGAIN:
                record = refusals.said(record)
            self.session.on_record(record)
            if timed is not None:
                wall = timed.t_wall_s
                if type(timed) is GpuSample and (end_s is None or wall > end_s):
                    end_s = wall
                self.position_wall_s = wall
                if type(timed) is HostSample:
                    self.last_host_mono_ns = timed.t_mono_ns
                if self.start_wall_s is None:
                    self.start_wall_s = wall
            self.records_fed += 1
            if self.records_fed % CHECK_EVERY_RECORDS == 0:
                self._say_detector_findings()
        if held:
            self.session.on_copies(held)
        if not ended:
            self.session.data_ended(end_s)
        if logs is not None:
            for note in logs.notes():
                self._say_once(note)
        return True

    def _skipped(self, record: object, timed: GpuSample | HostSample | None) -> bool:
        """Before a seek back's re-feed point: samples (and every other record but the
        prover's log lines, snapshots and notices) are read, not fed."""
        if timed is None:
            return getattr(record, "type", "") not in _KEPT_WHILE_SKIPPING
        if self._skip_until_wall_s is not None and timed.t_wall_s < self._skip_until_wall_s:
            return True
        self._skip_until_wall_s = None
        self.refed_from_wall_s = timed.t_wall_s
        return False

    def read_by_at_end(self) -> int | None:
        """The live reader's clock where the replayed data got to (`gapwatch.logs.follow.
        read_by_at_end`): the session's end judges a PoSt in flight by it, as `report` does."""
        return read_by_at_end(self.recording.header, self.last_host_mono_ns)

    def _finish_words(self) -> None:
        self._say_detector_findings(final=True)
        if self.time_jumps > 1:
            self._notice(f"replay: {self.time_jumps} steps of data time over "
                         f"{MAX_PACED_STEP_S:g} s were not waited out")
        for key, n in self.recording.counters.items():
            self.session.store.count(f"replay_{key}", n)
        for said in self.recording.problems_said():  # as every command says them
            self._notice(said)

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
            ("interval_belied", "GPU samples whose interval_ns their spacing belies (shorter "
                                "than half the spacing they come at); the spacing used"),
        ):
            n = counters.get(key, 0)
            if n and (not self._said.get(key) or (final and n != self._said[key])):
                self._said[key] = n
                self._notice(f"replay: {n} {words}" + ("" if final else " so far"))

    def _say_once(self, message: str) -> None:
        """A notice said once a play of the file (the store forgets its notices at a seek
        back, and the play after it says them again)."""
        if message not in self._notes_said:
            self._notes_said.add(message)
            self._notice(message)

    def _notice(self, message: str) -> None:
        self.session.on_notice(Notice(time.monotonic_ns(), time.time(), "warning", message))
