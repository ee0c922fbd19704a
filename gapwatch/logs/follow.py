"""Glue between the tailer and the parser: followed lines in, `LogEvent`s and `Notice`s out.

Who calls it: `gapwatch.engine.runtime`, which passes `session.on_log_event` as
`on_event` and a notice sink as `on_notice`; `status()` feeds the dashboard footer.

One `LogParser` serves every followed source (cuzk's stdout and stderr often go to two files, and
lock attribution needs both), so calls from the file thread and the stdin thread are serialised
by a lock. Events are handed on as soon as their line is parsed: nothing waits for attribution.

Lines written while followed arrive within a poll of their writing, whichever file holds them:
their arrival places the C++ lines of cuzk's stderr among the lines of its stdout that name the
lock holder, and lock attribution pairs them (within 1 s of arrival, `LockAttributor`). A file's
backlog (`--from-start`: what it held when following began) arrives at once, a file after
another, in reads of up to 8 MiB: it is in the order written only among its own lines, so lock
attribution pairs a backlog's lines only with lines of the same backlog (`LockAttributor`'s
places). A file that holds cuzk's stdout and stderr both (`2>&1`) pairs its backlog as written,
whatever else is followed. A file that shows no time of its own beside one that does (cuzk's
stderr followed beside its stdout: `gapwatch.logs.files.read_order` decides, as it does for
files read whole) holds lock regions whose names are in another file: its backlog's lines cannot
be placed among that file's (read so, stderr's lock regions were paired with the last names of
stdout's backlog), so they are read `apart` (`LogParser.parse_line`): tied to no partition,
counted (`cpp_lines_unplaced`), said once a source (`log_lines.backlog_note`). Every backlog was
read apart beside any second file once: a `2>&1` log followed beside an empty one lost all its
backlog's lock regions (105 -> 0), said as lines that "cannot be placed". The backlogs are read
in `read_order` too (the apart ones last), and an apart backlog's TIMELINE lines are placed by
their own engine run's start line, as offline (`gapwatch.logs.files.runs_apart`): read in the
order given, stdout first placed all of them by its last start line (a restart's cost 40 s
where the file says 51), stderr first by none. An apart backlog is read only once the others'
have been read whole (the tailer's `backlogs_after`: read 8 MiB of each a pass, a day's stdout
was still being read when the stderr's came, its later start lines not read yet), and its runs
stay placed through all its passes, whatever the other files write live meanwhile. With more
than one file followed from its start, the events are handed on once every backlog has been
read, by time (`gapwatch.logs.time_order`): as read, a file's hours came before another's of
the same hours, and the watchers said each WinningPoSt of the stdout's backlog LATE before the
stderr's lines that ended it came.

A panic's block (`gapwatch.cuzk.panics`) is closed by the line after it, and, read live, by the
clock where none comes: after each pass (the tailer's idle pass comes every `idle_poll_ms` when
nothing is written), the parser is asked what has ended by the time up to which all written was
read (`Tailer.read_to`: not now, as a log 8 MiB ahead is read in pieces that take seconds to
parse), and `on_clock` is told that time and that of a panic still being read, for what waits
beside the log (a panic's other half; the watcher's data "now", by which a PoSt in flight goes
late). A second panic kills the process with no `note:` line and no cuzk line after it: it was
said only when the restarted daemon's first line came (after systemd's RestartSec, 10 s in
upstream's unit, `gapwatch.cuzk.restarts`), or never; a PoSt whose lines stop mid-proof (cuzk
hung or dead) was said late only at the next line or `/status` reading, or never. Several
followers of one session (the simulator's own log beside `--log FILE`) tell it one clock, the
earliest of theirs (`AllReadBy`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from gapwatch.base.clock import Clock, SystemClock
from gapwatch.base.watch import ThreadWatch
from gapwatch.config import Config, LogsConfig
from gapwatch.core.models import LogEvent, Notice, NoticeLevel, SessionHeader
from gapwatch.cuzk.engine_runs import RunsApart
from gapwatch.cuzk.log_lines import backlog_note
from gapwatch.logs.files import engine_runs_of, place_runs, read_order
from gapwatch.logs.parse import UNPLACED, LogParser
from gapwatch.logs.tail import SourceStatus, Tailer
from gapwatch.logs.time_order import TimeOrder


@dataclass(frozen=True, slots=True)
class LogFollowerStatus:
    #: One per followed path ("-" = stdin): state ("following", "waiting for file",
    #: "following (rotated)", "deleted, waiting for file", "closed (end of input)"...) and counters.
    files: list[SourceStatus] = field(default_factory=list)
    lines: int = 0
    parsed: int = 0
    unparsed: int = 0
    cut_lines: int = 0
    #: NUL bytes dropped from the followed files (said once a file by the tailer).
    nul_bytes: int = 0
    #: Attributed GPU-lock regions (derived `cuzk_partition` events).
    attributed: int = 0


class AllReadBy:
    """The one clock several followers tell (the `--log` files' and the simulator's own log's,
    each a `LogFollower` of its own thread): the earliest of each one's latest time up to which
    all written was read (`on_clock`), once each has told one, to `tell`, with the earliest
    time of a panic any of them is still reading. One follower's pass says nothing of another's
    files: the simulator's log, read every 50 ms, told the session its time while a `--log`
    file was still behind, and a PoSt whose GPU_END was written on time in it could be said
    late first. Its readers' `on_clock` (`reader`) may be called from their threads at once."""

    def __init__(self, tell: Callable[[int, float | None], None]) -> None:
        self._tell = tell
        self._lock = threading.Lock()
        #: Each reader's latest time and the panic it was reading then (None: none told yet).
        self._latest: list[tuple[int, float | None] | None] = []

    def reader(self) -> Callable[[int, float | None], None]:
        """The `on_clock` of one more follower."""
        with self._lock:
            i = len(self._latest)
            self._latest.append(None)

        def told(t_mono_ns: int, panic_read_s: float | None) -> None:
            with self._lock:
                before = self._latest[i]
                if before is not None and before[0] > t_mono_ns:
                    t_mono_ns = before[0]
                self._latest[i] = (t_mono_ns, panic_read_s)
                told_all = [t for t in self._latest if t is not None]
                if len(told_all) < len(self._latest):
                    return
                earliest = min(t for t, _ in told_all)
                reading = [r for _, r in told_all if r is not None]
            self._tell(earliest, min(reading) if reading else None)

        return told


def read_by_at_end(header: SessionHeader, last_mono_ns: int | None) -> int | None:
    """The live reader's clock at the end of a recording (`report`, `replay`): a time on
    gapwatch's monotonic clock by which every line written was read, as its passes told it live
    (`on_clock`), from `last_mono_ns`, the recording's last host sample's time (one every
    period: the recording went on to there). A line written is read by the tailer's next pass,
    at most one idle pass (`logs.idle_poll_ms`, or `poll_ms` if longer: `Tailer.idle_poll_s`)
    after it, so it is that pass before the last sample: a PoSt's GPU_END written just before
    the recording ended and not read by then is never taken for a proof still running past it.
    The idle pass is the recorded session's (its header's config), not this command's. None:
    no host sample."""
    if last_mono_ns is None:
        return None
    logs = header.config.get("logs")
    told = logs if isinstance(logs, dict) else {}
    default = LogsConfig()
    pass_ms = max(_positive_ms(told.get("idle_poll_ms"), default.idle_poll_ms),
                  _positive_ms(told.get("poll_ms"), default.poll_ms))
    return last_mono_ns - int(pass_ms * 1e6)


def _positive_ms(value: object, default: float) -> float:
    """A recorded period in ms, or `default` where the header holds none that is one."""
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 1e9:
        return float(value)
    return default


class LogFollower:
    """Follow `paths` like `tail -F`, parse each line, call `on_event` for each event."""

    def __init__(self, paths: list[str], logs_config: LogsConfig,
                 on_event: Callable[[LogEvent], None],
                 on_notice: Callable[[Notice], None] | None = None,
                 clock: Clock | None = None, *, stdin_fd: int = 0,
                 on_clock: Callable[[int, float | None], None] | None = None) -> None:
        """`on_clock`: told the clock's monotonic time (the lines' arrival clock,
        `LogEvent.t_arrival_mono_ns`) after each pass read live (`_tick`), once
        the events the clock closed were handed on, and the time of the panic still being
        read (`LogParser.panic_being_read_s`; None: none): what waits on data time beside the
        log (a panic's other half, `gapwatch.cuzk.errors.Incidents`; a PoSt's deadline,
        `gapwatch.cuzk.watch`) is closed by it too, as no line may come to move that data
        time (`Session.on_reader_clock`; several followers' through `AllReadBy`)."""
        self.clock: Clock = clock or SystemClock()
        self.parser = LogParser(logs_config)
        self._on_event = on_event
        self._on_notice = on_notice
        self._on_clock = on_clock
        self._lock = threading.Lock()
        self._paths = list(dict.fromkeys(paths))
        self._logs_config = logs_config
        #: The sources whose backlog is read apart (see above), and the order the backlogs are
        #: read in: `read_order`'s, as offline (the files as following found them).
        order = (read_order(self._paths, Config(logs=logs_config))
                 if logs_config.from_start and len(self._paths) > 1 else None)
        self._apart: frozenset[str] = order.apart if order is not None else frozenset()
        if self._apart:
            self.parser.keep_start_lines()  # for the apart backlogs' runs (`_place_runs`)
        #: Each apart source whose backlog's runs were looked at -> how its TIMELINE lines are
        #: placed (`RunsApart`; None: by the latest start line read). Kept for its whole
        #: backlog: the other files' live lines come between its passes' (it was let go at the
        #: first, the rest of a stderr of over 8 MiB placed by the latest start line).
        self._runs_placed: dict[str, RunsApart | None] = {}
        #: The sources whose unplaced backlog was said (at most one a followed path).
        self._said_unplaced: set[str] = set()
        #: The events held while the backlogs of several files are read, given on by time once
        #: all have been (`gapwatch.logs.time_order`); None: handed on as parsed. Taken and
        #: handed on under `_emit` (lines read meanwhile wait for it, never come before it).
        self._in_order: TimeOrder | None = TimeOrder() if order is not None else None
        self._emit = threading.Lock()
        self.tailer = Tailer(
            order.paths if order is not None else list(paths), self._on_line,
            on_backlog=self._on_backlog_line,
            from_start=logs_config.from_start,
            poll_ms=logs_config.poll_ms, idle_poll_ms=logs_config.idle_poll_ms,
            max_line_bytes=logs_config.max_line_bytes,
            on_notice=self._notice, clock=self.clock, stdin_fd=stdin_fd,
            backlogs_after=self._apart, on_pass=self._after_pass,
        )

    def start(self) -> None:
        self.tailer.start()

    @property
    def watch(self) -> ThreadWatch:
        """The watch the tailer's threads run under (the runtime sets its own)."""
        return self.tailer.watch

    @watch.setter
    def watch(self, watch: ThreadWatch) -> None:
        self.tailer.watch = watch

    def stop(self) -> None:
        self.tailer.stop()
        with self._lock:
            events = self.parser.flush()  # a panic still being read: said, not lost
        with self._emit:
            self._hand_on(events)
            self._release()  # stopped while backlogs were read: what was read, in order

    def _after_pass(self) -> None:
        """A pass over the files (or a wait on stdin) ended: once every backlog has been read,
        the events held are handed on by time (`_in_order`); read live, the clock closes what
        waits for a line that may not come (`_tick`)."""
        if self._in_order is not None and self.tailer.backlogs_read():
            with self._emit:
                self._release()
        read_to = self.tailer.read_to()
        if read_to is not None:
            # The time up to which all that was written has been read, not now: a backlog, or
            # a log that got 8 MiB ahead, is read in pieces, each taking seconds to parse, and
            # the end of a piece is no silence (a panic's other half may be in the next).
            self._tick(*read_to)

    def _tick(self, now_mono_ns: int, now_wall_s: float) -> None:
        """The clock reads `now_mono_ns` / `now_wall_s`: the panic being read, once it has
        ended by it (`LogParser.due`: a panic that killed the process is followed by no line;
        it was said when the restarted daemon's first line came, or never), handed on; then
        `on_clock`, told it and the time of a panic still being read (its backtrace's frames
        still coming): its event is not handed on yet, and what waits for it must wait (cuzk's
        `task panicked` line, said alone once its wait ran out while the panic that is its
        other half was still being read, made one incident two errors). It comes after every
        pass (on stdin, every 50 ms wait and every 64 KiB read): with no panic being read the
        parser's lock is not taken, and the consumer returns at once where nothing waits."""
        events: list[LogEvent] = []
        reading_s: float | None = None
        if self.parser.reading_panic:
            with self._lock:
                events = self.parser.due(now_wall_s)
                reading_s = self.parser.panic_being_read_s()
        if events:
            with self._emit:
                self._give(events)
        if self._on_clock is not None:
            try:
                self._on_clock(now_mono_ns, reading_s)
            except Exception as exc:  # noqa: BLE001 - a failing consumer must not kill tailing
                self._notice("error", f"log clock consumer failed: {exc!r}")

    def _release(self) -> None:
        """Hand on the events held, by time, and hold no more (the caller holds `_emit`)."""
        held, self._in_order = self._in_order, None
        if held is not None:
            self._hand_on(held.drain())

    def _hand_on(self, events: Iterable[LogEvent]) -> None:
        """Each event to the consumer: one that fails costs that event, never the tailing."""
        for event in events:
            try:
                self._on_event(event)
            except Exception as exc:  # noqa: BLE001 - a failing consumer must not kill tailing
                self._notice("error", f"log event consumer failed: {exc!r}")

    def status(self) -> LogFollowerStatus:
        files = self.tailer.status()
        with self._lock:
            c = self.parser.counters
            return LogFollowerStatus(
                files=[SourceStatus(**{k: getattr(s, k) for k in SourceStatus.__slots__})
                       for s in files],
                lines=c["lines"], parsed=c["parsed"], unparsed=c["unparsed"],
                cut_lines=sum(s.cut_lines for s in files),
                nul_bytes=sum(s.nul_bytes for s in files),
                attributed=self.parser.attributor.attributed,
            )

    def anchor_timeline(self, epoch_wall_s: float | None) -> None:
        """TIMELINE's epoch from the prover's `/status` (`LogParser.anchor_from_status`)."""
        with self._lock:
            self.parser.anchor_from_status(epoch_wall_s)

    def _on_backlog_line(self, source: str, text: str, mono_ns: int, wall_s: float) -> None:
        """A line its file held when following began from its start (`--from-start`)."""
        self._on_line(source, text, mono_ns, wall_s, backlog=True)

    def _runs_of(self, source: str) -> RunsApart | None:
        """The first backlog line of an apart `source`: its TIMELINE lines' engine runs, read
        outside the lock (a large stderr is read whole: the dashboard's status waits on the
        lock), placed under it (`_on_line`); None where it cannot be read (its lines placed by
        the latest start line, as before)."""
        try:
            return engine_runs_of(source, Config(logs=self._logs_config))
        except OSError:
            return None

    def _on_line(self, source: str, text: str, mono_ns: int, wall_s: float,
                 backlog: bool = False) -> None:
        apart = backlog and source in self._apart
        runs = (self._runs_of(source) if apart and source not in self._runs_placed else None)
        with self._lock:
            if apart:
                # Each run placed by its own start line among those the other backlogs gave
                # (read whole first: `read_order`, the tailer's `backlogs_after`); its live
                # lines by the latest, as they come (the parser places only apart lines so).
                if source not in self._runs_placed:
                    self._runs_placed[source] = self._placed(runs)
                self.parser.runs_apart = self._runs_placed[source]
            before = self.parser.counters[UNPLACED] if apart else 0
            events = self.parser.parse_line(text, source, mono_ns, wall_s, backlog, apart)
            say = (apart and self.parser.counters[UNPLACED] > before
                   and source not in self._said_unplaced)
            if say:
                self._said_unplaced.add(source)
        if say:
            self._notice("warning", backlog_note(source))
        with self._emit:
            self._give(events)

    def _give(self, events: list[LogEvent]) -> None:
        """`events` handed on, or held while the backlogs are read (`_in_order`); the caller
        holds `_emit`."""
        held = self._in_order
        if held is None:
            self._hand_on(events)
            return
        for event in events:
            held.add(event)

    def _placed(self, runs: RunsApart | None) -> RunsApart | None:
        """How an apart backlog's TIMELINE lines are placed, its engine runs `runs` (None: not
        read): each run by its own start line where they agree (`place_runs`); where none is
        known its own (more runs than start lines, or fewer), by the latest start line read, as
        before the runs were placed, never left at the moment it was read."""
        if runs is None:
            return None
        placed = place_runs(self.parser, runs).runs
        return None if placed is not None and not placed.anchors_s else placed

    def _notice(self, level: NoticeLevel, message: str) -> None:
        if self._on_notice is None:
            return
        self._on_notice(Notice(t_mono_ns=self.clock.monotonic_ns(), t_wall_s=self.clock.wall_s(),
                               level=level, message=message))

