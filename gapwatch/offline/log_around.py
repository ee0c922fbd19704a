"""The log events a recording holds around a window, on disk: the daemon's startup lines from
before it, the 5 minutes before it and the 5 minutes after it (`LogAround`), fed before and
after the window's records.

Who calls it: `gapwatch.offline.startup_lines.recorded_around` fills one (a window of a recording
holding its log, without `--log`); `gapwatch.offline.report.detect_either` (the windowed report
and `compare`'s sides), `gapwatch.offline.report_parallel` (each worker) and
`gapwatch.engine.runtime` (a windowed replay, each play of it) read it back. Apart from
`startup_lines` so that `report_parallel` can name it (`startup_lines` reads through
`log_split`, which imports `report_parallel`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from gapwatch.core.models import LogEvent
from gapwatch.offline.gap_spool import EventSpool


class LogAround:
    """The log events a recording holds around a window (`recorded_around`), after the daemon's
    startup lines it holds from before it (`recorded_startup`): fed before the window's records
    (`before`) and after them (`after`), as a window of a `--log` file is read around it.

    Why on disk: they were two lists, ~1 KB an event. A debug-level log (RUST_LOG=debug) logs
    thousands of lines a second, and a window's report of a recording holding 400,000 of them
    in the 5 minutes before it took 477 MB (the whole report, 53 MB); a windowed replay and
    `compare` the same. They wait in two `EventSpool`s now, as the `--log` files' events do,
    each given back in the order the recording holds them (keyed by their place in it: the
    runs never overlap, the merge holds a block of one), every `before`/`after` reading its
    spool from the start: each worker of a split report (forked: the runs are read at
    explicit offsets) and each play of a replay (a seek back) reads them again. `close` frees
    the disk."""

    def __init__(self, startup: Sequence[LogEvent] = ()) -> None:
        self._startup = list(startup)  # a start's few lines (`recorded_startup`): bounded
        self._lead = EventSpool()
        self._trail = EventSpool()
        #: The first lead event's time: the startup lines from it on are the lead's too.
        self._lead_from_s: float | None = None

    def add_before(self, event: LogEvent) -> None:
        """A log event recorded before the window (in the order the recording holds them)."""
        if self._lead_from_s is None:
            self._lead_from_s = event.t_wall_s
        self._lead.add(event, float(len(self._lead)))

    def add_after(self, event: LogEvent) -> None:
        """A log event recorded at or after the window's end (likewise)."""
        self._trail.add(event, float(len(self._trail)))

    def before(self) -> Iterator[LogEvent]:
        """The startup lines before the first event of the margin before the window (a line in
        both given once), then that margin's events."""
        first_s = self._lead_from_s
        if first_s is None:
            yield from self._startup
            return
        yield from (e for e in self._startup if e.t_wall_s < first_s)
        yield from self._lead

    def after(self) -> Iterator[LogEvent]:
        """The events of the margin after the window, as recorded."""
        yield from self._trail

    @property
    def spooled(self) -> bool:
        """Whether it holds events of the margins (more than the startup lines): what a
        spawned worker, which cannot be handed the spools, would miss."""
        return bool(len(self._lead) or len(self._trail))

    @property
    def runs(self) -> int:
        """Runs written to disk (0: all in memory)."""
        return self._lead.runs + self._trail.runs

    def __bool__(self) -> bool:
        return bool(self._startup) or self.spooled

    def __reduce__(self) -> tuple[type[LogAround], tuple[list[LogEvent]]]:
        """Its startup lines, for a spawned worker (`report_parallel`: a split report in a
        process with threads), which is never handed the spools (the split reads in one
        process then): they were a list, pickled with the worker's job."""
        if self.spooled:
            raise TypeError("the log around a window is on disk: not for another process")
        return LogAround, (self._startup,)

    def close(self) -> None:
        """Free the disk space (it reads as the startup lines alone after)."""
        self._lead.close()
        self._trail.close()
        self._lead_from_s = None
