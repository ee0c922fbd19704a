"""The `--log` files of a replay (`gapwatch replay FILE --log LOG`): parsed once onto disk, read
back at each pass of the replay, the events `report --log` feeds and no others.

Who calls it: `gapwatch.engine.runtime` parses them as it builds the replay (`open_replay_logs`)
and closes them with it; `gapwatch.engine.replay.ReplayDriver` reads one `LogPass` each time it
plays the file from its start (the first time, and after each seek back).

Why on disk: a replay parsed the files into a list and held it to the end, ~1 KB an event: a day
of 8 GPUs' log (~6 M events) did not fit a proving box's spare memory, while `report --log` of the
same day runs in a few hundred MB. The files are now parsed as the report parses them
(`gapwatch.offline.report.parse_log_input`: TIMELINE placed by the recording's `/status` uptime
where the log lacks its anchor line, a large file in two processes, only a window's part of it)
into the sorted spool, and a pass reads it back one event at a time. What a pass gives is what the
report's detector is given: the events `LogSpan` keeps (a log of another day is not fed: its
causes and advice would be another run's; the daemon's startup lines before the recording are),
those after the last sample only within `log_span.MARGIN_S` of it, and for a window the daemon's
startup lines the recording holds from before it (`startup_lines.recorded_startup`), first among
equal times; a line the recording holds too (`record --log` of the same file) once, the file's
copy (`gapwatch.logs.once`: `recorded`). A window's replay without `--log` files reads the
recording's own log around the window instead (`gapwatch.engine.runtime._recorded_around`, the
report's `startup_lines.recorded_around`). The span's notes (`LogSpan.notes`) are the pass's
to say at its end; those known before it are said as it starts (`notes_now`), but for a file
whose C++ lines could not be placed (cuzk's stderr given apart from its stdout) in a recording
that may hold log events (`gapwatch.logs.once.may_hold_log_lines`): its own lock regions, paired
by `record --log` as the lines came, may stand in for that file's, and only the pass's end knows
(`LinesOnce.locks_kept`).
"""

from __future__ import annotations

import copy
import heapq
import os
import stat
from collections.abc import Iterator, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING

from gapwatch.config import Config
from gapwatch.core.models import LogEvent
from gapwatch.logs.once import LineRead, LinesOnce, itself
from gapwatch.offline.log_span import LogSpan
from gapwatch.sources.time_window import TimeWindow

if TYPE_CHECKING:
    from gapwatch.offline.detect import LogInput

__all__ = ["LogPass", "NotTheLog", "ReplayLogs", "open_replay_logs"]


class LogPass:
    """One pass over the replay's log events, in time order: iterate it for the events the
    replay slots in among the records, then `after_end` judges each left after the last sample,
    and `notes` says what the span left out. Its own copy of the span counts what it drops."""

    def __init__(self, parsed: LogInput, startup: Sequence[LogEvent],
                 may_hold_logs: bool = True) -> None:
        self._parsed = parsed
        self._span: LogSpan = copy.deepcopy(parsed.span)
        self._startup = startup
        #: The recording may hold log events (`may_hold_log_lines`), so lock regions.
        self._may_hold_logs = may_hold_logs
        self._end_s: float | None = None
        # A line the recording holds too (made with `record --log` of a file given) is given
        # once, as the file has it (`merge_by_time` asks `recorded` of each recorded event).
        self._once = LinesOnce((ev for ev, _bounded in self._span.kept(parsed.spool.bounded())),
                               itself, look=may_hold_logs,
                               since_s=self._span.start_s)

    def __iter__(self) -> Iterator[LogEvent]:
        once = self._once
        # The recording's startup lines are its own events too: those the files hold are
        # theirs.
        startup = [e for e in self._startup if not once.recorded(e)]
        if not startup:
            return iter(once)
        # Stable: a recorded startup line goes before a log event of the same time, as the
        # report's sort of the two leaves them.
        return heapq.merge(startup, once, key=attrgetter("t_wall_s"))

    def recorded(self, ev: LogEvent) -> bool:
        """Whether the recording's log event `ev` is a line the files hold too (left out:
        `LinesOnce.recorded`)."""
        return self._once.recorded(ev)

    def paired(self, ev: LogEvent) -> bool:
        """`LinesOnce.paired`."""
        return self._once.paired(ev)

    def tell_lines_read(self, to: LineRead) -> None:
        """`LinesOnce.tell_lines_read`."""
        self._once.tell_lines_read(to)

    def after_end(self, ev: LogEvent, end_s: float | None) -> bool:
        """Whether an event left after the last sample (at `end_s`) is fed, as the report
        feeds those within the span's margin of its end (the others counted for `notes`)."""
        self._end_s = end_s
        return self._span.after_end(ev, end_s)

    def notes_now(self) -> list[str]:
        """The notes known before any event is read: the files that end before the recording
        (or window) starts, those whose TIMELINE lines could not all be placed by their run's
        start line, and, where the recording cannot hold log events (so holds no lock region),
        those whose C++ lines could not be placed (`LogSpan.notes_before_reading`)."""
        return self._span.notes_before_reading(unplaced=not self._may_hold_logs)

    def notes(self) -> list[str]:
        """One line per `--log` file with lines outside the recording (or window), per file
        whose C++ lines could not be placed (with the recording's lock regions that stand in
        for them), and per file whose lines the recording held too, as the report says
        them."""
        return [*self._span.notes(self._end_s, self._once.locks_kept), *self._once.notes(),
                *self._span.stood_in_notes(self._once.locks_kept)]


class ReplayLogs:
    """The replay's `--log` files, parsed (see the module docstring); `close` removes the
    spool."""

    def __init__(self, parsed: LogInput, startup: Sequence[LogEvent] = (),
                 may_hold_logs: bool = True) -> None:
        self._parsed = parsed
        # In time order for the merge with the spool's (a recording holds them as written).
        self._startup = sorted(startup, key=attrgetter("t_wall_s"))
        self._may_hold_logs = may_hold_logs

    @property
    def counters(self) -> dict[str, int]:
        """The parser's counters (and the reader's: NUL bytes, cut lines)."""
        return self._parsed.counters

    def events(self) -> LogPass:
        """A new pass over the events, from the first (one a play of the file)."""
        return LogPass(self._parsed, self._startup, self._may_hold_logs)

    def close(self) -> None:
        self._parsed.close()


def open_replay_logs(path: str, paths: list[str], config: Config, started_wall_s: float,
                     window: TimeWindow | None = None,
                     startup: Sequence[LogEvent] = (), may_hold_logs: bool = True
                     ) -> ReplayLogs:
    """The `--log` `paths` of the recording at `path` (its header's `started_wall_s`) parsed
    for its replay (`window`: the part replayed; `startup`: the daemon's startup lines the
    recording holds from before it; `may_hold_logs`: `gapwatch.logs.once.may_hold_log_lines`
    of its header).
    TIMELINE lines without their anchor line are placed by
    the recording's `/status` uptime, read from its start, as the report places them; not for
    a FIFO, which the replay is reading already (its anchor lines only).

    Raises:
        OSError: a log cannot be read (`NotTheLog`: the recording, read for its uptime).
    """
    from gapwatch.offline.report import (  # local: the report's modules are large
        collector_off,
        parse_logs_for,
        recorded_timeline_epoch,
    )

    epoch = None
    if paths and not _is_fifo(path):
        try:
            epoch = recorded_timeline_epoch(path)
        except OSError as exc:
            raise NotTheLog(exc.errno, exc.strerror, exc.filename) from None
    with collector_off():  # millions of events parsed, none of them in a cycle
        parsed = parse_logs_for(started_wall_s, epoch, config, paths, window=window)
    return ReplayLogs(parsed, startup, may_hold_logs)


class NotTheLog(OSError):
    """The recording could not be read again for its `/status` uptime (not a `--log` file)."""


def _is_fifo(path: str) -> bool:
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False  # a folder's glob, a set: the reader says what it is
