"""cuzk's watcher: every record in, the prover events out (PoSt latency, restarts and their
cost, errors, lost GPU jobs, the pinned pool churning: a warning before it fails). Implements
`gapwatch.core.prover_watch.ProverWatch`.

Who calls it: the live session (`gapwatch.engine.runtime` builds it) and the offline detection
loop (`gapwatch.offline.detect`), so that live, replayed and reported sessions say the same.
Pure: "now" is the data's own time (the latest record's wall time), so a PoSt still running
past its deadline is said late as soon as the data passes it, live or offline. Followed live,
the log reader's clock moves it too (`at`): the data's latest time, read at some moment on the
reader's monotonic clock, is at least that time plus what that clock counted since (the line
was written before it was read). A PoSt whose lines stop mid-proof (cuzk hung, or dead with
its `/status`) was said late only at the next line or reading, or never.

A restart resets what the other parts follow (the PoSt jobs in flight are said lost, the GPU
queue is empty again, the pinned pool is empty again), as it resets cuzk's own state.

Several daemons' logs (a PoRep cuzk and a PoSt-only cuzk on its own GPU, `--log porep.log
--log post.log`): each daemon has parts of its own (`_DaemonWatch`), its files told by
`gapwatch.cuzk.daemons`, and that is said once, when the second shows its start line; a start
line in one daemon's file is never a restart of another.

What each GPU worker holds (`gapwatch.cuzk.gpu_workers`), which a PoSt's "waited behind" reads,
is kept once a process: where the composition root feeds a `PipelineFacts` the same records (the
live session, its replay, the report and each of its workers), the watcher is built on its
keeper (`holds`); `gapwatch parse` feeds none, and each PoSt keeps its own.
"""

from __future__ import annotations

from itertools import count
from typing import TYPE_CHECKING

from gapwatch.core.gpu_pids import GpuPids
from gapwatch.core.models import (
    PROVER_EVENT_KINDS,
    LogEvent,
    ProcessMemory,
    ProverEvent,
    ProverEventKind,
    ProverStatus,
    Record,
)
from gapwatch.core.prover_watch import RunningProof, Unheard
from gapwatch.cuzk.config import CuzkConfig
from gapwatch.cuzk.daemons import PerDaemon
from gapwatch.cuzk.errors import Incidents, error_event
from gapwatch.cuzk.gpu_queue import GpuQueueWatch
from gapwatch.cuzk.gpu_workers import WorkerHolds
from gapwatch.cuzk.log_lines import says_when_written
from gapwatch.cuzk.pipeline import PANIC_KIND
from gapwatch.cuzk.pool_churn import PoolChurn, churn_event
from gapwatch.cuzk.post import Deadlines, PostTracker
from gapwatch.cuzk.restarts import RestartWatch, is_cuzk_process

if TYPE_CHECKING:
    from gapwatch.cuzk.prover import CuzkProver

#: Deadlines are checked at most this often in data time (a PoSt deadline is 30 s or more),
#: and at the first time past one (`PostTracker.due_s`).
CHECK_EVERY_S = 0.5
#: The log events the parts read: TIMELINE, tracing lines and panics.
_WATCHED = frozenset(("timeline", "tracing", PANIC_KIND))
#: Why a count is not known (`CuzkWatch.unheard`): every kind but restarts comes of log lines
#: alone; a restart also of `/status` uptime going back or a new pid of cuzk's name on a GPU
#: (`gapwatch.cuzk.restarts`).
NO_LOG = "no cuzk log line read"
NO_RESTART_SIGN = "no cuzk log line, /status uptime or process named cuzk on a GPU read"


def deadlines_of(config: CuzkConfig) -> Deadlines:
    return Deadlines(config.winning_post_deadline_s, config.window_post_deadline_s,
                     config.post_at_risk_share)


def watch_beside(prover: CuzkProver, config: CuzkConfig, on: bool) -> CuzkWatch | None:
    """The watcher of cuzk's lines (PoSt, restarts, errors) beside the detector's `prover`,
    its PoSt reading the workers' holds that prover keeps (one keeper a process, fed the same
    records by the detector); None where cuzk's rules are off (`on`). Every session, replay
    and report makes its pair here."""
    return CuzkWatch(deadlines_of(config), holds=prover.pipeline.holds) if on else None


class CuzkWatch:
    def __init__(self, deadlines: Deadlines | None = None, *, arrival_timed: bool = True,
                 holds: WorkerHolds | None = None) -> None:
        """`arrival_timed`: False where a line's arrival time means nothing (`gapwatch parse`
        reads a file at once): a PoSt's TIMELINE lines without their anchor are then timed by
        their offsets (`PostTracker`). `holds`: the keeper of what the GPU workers hold that
        the gaps' `PipelineFacts` of this process keeps, fed the same records (its
        `holds`): each daemon's PoSt reads it (`PostTracker`), one copy a process; None
        where no `PipelineFacts` is fed beside this watcher: each PoSt keeps its own."""
        numbers = count()  # `PerDaemon` makes them in order, daemon 0 first: each its index
        self.daemons = PerDaemon(lambda: _DaemonWatch(
            deadlines, arrival_timed=arrival_timed, holds=holds, daemon=next(numbers)))
        #: What was read that can count events (`unheard`): a log line (every kind), a
        #: restart sign of another source (`/status` uptime, a process of cuzk's name).
        self._log_read = False
        self._restart_signs_read = False
        #: Every pid on the GPUs, whatever its name: what /proc showed where no restart could
        #: be counted (a stand-in, a renamed binary).
        self.pids = GpuPids()

    # The first daemon's parts (the only one's, where the logs are of one daemon).
    @property
    def post(self) -> PostTracker:
        return self.daemons.first.post

    @property
    def restarts(self) -> RestartWatch:
        return self.daemons.first.restarts

    def feed(self, record: Record) -> list[ProverEvent]:
        kind = type(record)
        if kind is LogEvent:
            assert isinstance(record, LogEvent)
            return self._log(record)
        if kind is ProverStatus:
            assert isinstance(record, ProverStatus)
            self._restart_signs_read |= record.uptime_s is not None
            d = self.daemons.router.of_status(record)
        elif kind is ProcessMemory:
            assert isinstance(record, ProcessMemory)
            self.pids.feed(record)
            self._restart_signs_read |= is_cuzk_process(record.name)
            d = self.daemons.router.of_process(record)
        else:
            return []
        # A reading no daemon is known to be of (several, its address or GPU named by none)
        # is no restart sign; it still moves every daemon's "now" (the live clock).
        router = self.daemons.router
        out = router.named(d, self.daemons.get(d).feed(record)) if d is not None else []
        assert isinstance(record, (ProverStatus, ProcessMemory))
        for i, each in enumerate(self.daemons.each):
            if i != d:
                out += router.named(i, each.now(record))
        return out

    def _log(self, ev: LogEvent) -> list[ProverEvent]:
        """`ev` to its daemon's watcher, its events naming the daemon where there are several
        (`Daemons.named`); the daemons said once the second shows."""
        self._log_read = True
        out, new = self.daemons.feed_log(ev, _DaemonWatch.feed_log)
        router = self.daemons.router
        out = router.named(router.of_stream(ev.stream), out)
        if new:
            out.insert(0, router.note())
        return out

    def at(self, t_mono_ns: int, panic_read_s: float | None) -> list[ProverEvent]:
        """The live reader's clock (`ProverWatch.at`): each daemon's panic halves whose other
        half did not come within `PANIC_PAIR_S` of their arrival and is not the panic still
        being read, said alone (`Incidents.heard_by`; the reader does not say whose daemon
        that panic is: each waits for it); then its data's "now" moved on by that clock
        (`_DaemonWatch.at`: a PoSt in flight past its deadline said late); each naming its
        daemon where there are several (`Daemons.named`), as the same words said at a line
        do."""
        router, each = self.daemons.router, self.daemons.each
        out = [e for i, d in enumerate(each)
               for e in router.named(i, d.incidents.heard_by(t_mono_ns, panic_read_s))]
        return out + [e for i, d in enumerate(each) for e in router.named(i, d.at(t_mono_ns))]

    def line_read(self, stream: str, t_wall_s: float, read_mono_ns: int) -> None:
        """A log line fed before (of `stream`, at `t_wall_s`) without the time the live reader
        read it was read at `read_mono_ns` (`ProverWatch.line_read`): told to its daemon's
        watcher (`_DaemonWatch.line_read`)."""
        each = self.daemons.each
        d = self.daemons.router.of_stream(stream)
        if d < len(each):
            each[d].line_read(t_wall_s, read_mono_ns)

    def waits(self) -> bool:
        """Whether a daemon's panic half waits for its other, or a PoSt of it is in flight or
        waits for its completion line (`ProverWatch.waits`)."""
        return any(d.incidents.waits() or d.post.waits() for d in self.daemons.each)

    def finish(self, read_by_mono_ns: int | None = None) -> list[ProverEvent]:
        """End of data. `read_by_mono_ns`: the live reader's clock at the end of a recording
        (`gapwatch.logs.follow.read_by_at_end`: every line written by then was read), which
        moves each daemon's "now" as a pass of that reader moved it live (`_DaemonWatch.at`)
        before what is still open is said: the report of a PoSt whose lines stopped mid-proof,
        said LATE live, says it late too, at the recording's end, never `ok (running)` at its
        last line. None: no such clock (live, where the reader's passes moved it already;
        `gapwatch parse`, whose lines' arrivals mean nothing)."""
        # A file that ended on its start line (its daemon died on it): its restart is said
        # before the rest of the end, as one file says it at the line.
        first = self.daemons.first
        router = self.daemons.router
        out = router.named(0, [e for held in router.let_go() for e in first.feed_log(held)])
        if read_by_mono_ns is not None:
            out += [e for i, each in enumerate(self.daemons.each)
                    for e in router.named(i, each.at(read_by_mono_ns))]
        return out + [e for i, each in enumerate(self.daemons.each)
                      for e in router.named(i, each.finish())]

    def running(self) -> list[RunningProof]:
        """The PoSt in flight at the data's latest time (`PostTracker.running`), of every
        daemon."""
        return [r for each in self.daemons.each for r in each.running()]

    def unheard(self) -> Unheard:
        """The counts the records fed could not give (`ProverWatch.unheard`): with no log line
        read, every kind but restarts (PoSt, errors, lost GPU jobs, a restart's cost, ...);
        restarts too where no `/status` uptime or process of cuzk's name was read either,
        then with what /proc showed of the GPUs' pids (`GpuPids.words`). A report of a
        restart recorded without its log said "0 restart(s)" in its JSON."""
        if self._log_read:
            return Unheard()
        why: dict[ProverEventKind, str] = {k: NO_LOG for k in PROVER_EVENT_KINDS
                                           if k != "restart"}
        if self._restart_signs_read:
            return Unheard(why)
        why["restart"] = NO_RESTART_SIGN
        shown = self.pids.words()
        return Unheard(why, (shown,) if shown is not None else ())


class _DaemonWatch:
    """One daemon's parts: its PoSt, GPU queue, restarts and pinned pool."""

    def __init__(self, deadlines: Deadlines | None = None, *, arrival_timed: bool = True,
                 holds: WorkerHolds | None = None, daemon: int = 0) -> None:
        self.post = PostTracker(deadlines, arrival_timed=arrival_timed, holds=holds,
                                daemon=daemon)
        self.queue = GpuQueueWatch()
        self.restarts = RestartWatch(arrival_timed=arrival_timed)
        #: The pinned pool's churn (`gapwatch.cuzk.pool_churn`): a warning when it begins.
        self.churn = PoolChurn()
        #: Error events, a panic and cuzk's line for it one (`gapwatch.cuzk.errors`).
        self.incidents = Incidents()
        self._now_s: float | None = None
        #: When the record that moved `_now_s` last was read, on the live reader's monotonic
        #: clock (a line's arrival, a reading's `t_mono_ns`; None: none read live, or moved by
        #: a record without one): `at` moves `_now_s` on by that clock from it.
        self._now_read_mono_ns: int | None = None
        self._checked_s = float("-inf")

    def feed_log(self, ev: LogEvent) -> list[ProverEvent]:
        t = ev.t_wall_s
        later = (self._now_s is None or t > self._now_s) and says_when_written(
            ev, self.post.arrival_timed)
        # A panic half whose other half did not come in time is said before this line's own.
        out = self.incidents.due(t) if later else []
        # Only these kinds say anything here (the C++ lines, half of a busy log, do not).
        if ev.kind in _WATCHED:
            out += self._log(ev)
        # The data's time moved on (every log event passes here; `now`'s rule, its arrival
        # kept for the reader's clock).
        if later:
            self._now_read_mono_ns = ev.t_arrival_mono_ns
            out += self._moved_to(t, incidents=False)
        return out

    def feed(self, record: Record) -> list[ProverEvent]:
        kind = type(record)
        if kind is LogEvent:
            assert isinstance(record, LogEvent)
            return self.feed_log(record)
        if kind is ProverStatus:
            assert isinstance(record, ProverStatus)
            out = self._restarted(self.restarts.feed_status(record))
        elif kind is ProcessMemory:
            assert isinstance(record, ProcessMemory)
            out = self._restarted(self.restarts.feed_process(record))
        else:
            return []
        assert isinstance(record, (ProverStatus, ProcessMemory))
        return out + self.now(record)

    def now(self, record: LogEvent | ProverStatus | ProcessMemory) -> list[ProverEvent]:
        """The data's time moved on to `record`'s: the deadlines checked (at most every
        `CHECK_EVERY_S`)."""
        t = record.t_wall_s
        if not says_when_written(record, self.post.arrival_timed):
            return []  # read, not written, then: no "now" (it made May's PoSt 206 days late)
        if self._now_s is None or t > self._now_s:
            self._now_read_mono_ns = (record.t_arrival_mono_ns if isinstance(record, LogEvent)
                                      else record.t_mono_ns)
            return self._moved_to(t)
        return []

    def at(self, t_mono_ns: int) -> list[ProverEvent]:
        """Followed live, every line written before the reader's monotonic clock read
        `t_mono_ns` has been read (`LogFollower`'s `on_clock`): the data's "now" is at least
        its latest time plus what that clock counted since that time was read (a line is
        written before it is read; a reading's time is the reader's own), and moves there
        (`_moved_to`: a PoSt in flight past its deadline is said late, once, as a later line
        would say it). Only a time read on that clock moves it: nothing is compared between
        cuzk's clock and gapwatch's, and a line read late (a slow reader, a backlog) only
        makes it later. A replay or a report is not told the clock: their end moves it once
        (`CuzkWatch.finish`'s `read_by_mono_ns`)."""
        read_ns, now_s = self._now_read_mono_ns, self._now_s
        if read_ns is None or now_s is None or t_mono_ns <= read_ns:
            return []
        self.post.heard_at(t_mono_ns / 1e9)
        self._now_read_mono_ns = t_mono_ns
        # Every pass, not every `CHECK_EVERY_S`: a pass is one call (a record may be one of
        # thousands a second), and the late PoSt is said at the first past its deadline.
        return self._moved_to(now_s + (t_mono_ns - read_ns) / 1e9, every=True)

    def line_read(self, t_s: float, read_mono_ns: int) -> None:
        """A line of this daemon fed before (at `t_s`) without its arrival was read live at
        `read_mono_ns` (a `--log` file's copy fed in place of the recording's, which says when
        it was read: `gapwatch.logs.once.LinesOnce.tell_lines_read`): where that line moved the
        data's "now" (its time is "now", and no reading of it is known), that reading is the
        one `at` moves "now" on from, as it was of the recorded copy; and it is an arrival to
        the PoSt's engine clocks (`PostTracker.line_read`). So the end of a recording reported
        with the log it followed says a PoSt whose lines stopped mid-proof late, as the
        recording alone says it. A line fed since that moved "now" later has its own (or
        none): nothing changes then."""
        if t_s == self._now_s and self._now_read_mono_ns is None:
            self._now_read_mono_ns = read_mono_ns
        self.post.line_read(read_mono_ns / 1e9)

    def _moved_to(self, t: float, incidents: bool = True,
                  every: bool = False) -> list[ProverEvent]:
        """The data's time moved on to `t` (later than it was): the panic halves whose wait
        is over said (`incidents`; a log line says them before its own events), and the
        deadlines checked: at the first time past one (`PostTracker.due_s`: a proof still
        running is said late there, whichever records moved "now" before it), else at most
        every `CHECK_EVERY_S`, unless `every`. Checked only every `CHECK_EVERY_S` from the
        latest check, a WinningPoSt was said late up to 0.5 s past its deadline, at a moment
        set by the lines before it: the replay of a recording holding its log (its lines in
        the order they arrived) said it 0.1 s after the same replay given that log as
        `--log` (its lines in time order), `still running: 30.6 s` at 00:54:26 against
        `30.5 s` at 00:54:25."""
        self._now_s = t
        out = self.incidents.due(t) if incidents else []
        if every or t - self._checked_s >= CHECK_EVERY_S or t > self.post.due_s:
            self._checked_s = t
            out += self.post.check(t)
        return out

    def finish(self) -> list[ProverEvent]:
        return self.incidents.finish() + self.post.finish(self._now_s)

    def running(self) -> list[RunningProof]:
        return self.post.running(self._now_s) if self._now_s is not None else []

    def _log(self, ev: LogEvent) -> list[ProverEvent]:
        restarts = self.restarts.feed_log(ev)
        out = self._restarted(restarts) if restarts else []
        # A failure line is an error event, and, naming a PoSt, that PoSt's last word: the
        # error first, so that the proof's word ("FAILED", its job) is the latest of the two
        # and leads the dashboard's alert line (the latest of equal level does).
        if ev.level is not None or ev.kind == PANIC_KIND:
            err = error_event(ev)
            if err is not None:
                out += self.incidents.feed(ev, err)
        out += self.post.feed(ev)
        lost = self.queue.feed(ev)
        if lost:
            for e in lost:
                if e.job_id is not None:
                    self.post.forget(e.job_id)
            out += lost
        if ev.kind == "tracing":  # the pool's lines are; the rest need no call
            churned = self.churn.feed(ev)
            if churned is not None:
                out.append(churn_event(churned))
        return out

    def _restarted(self, events: list[ProverEvent]) -> list[ProverEvent]:
        if not any(e.kind == "restart" for e in events):
            return events
        self.queue.restart()
        self.churn.restart()
        at = max(e.t_wall_s for e in events if e.kind == "restart")
        return events + self.post.restart(at)
