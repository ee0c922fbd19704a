"""Log events held while the backlogs of several followed files are read, given back in the
order of their times, as a report reads the same files.

Who calls it: `gapwatch.logs.follow.LogFollower` (`--from-start` of more than one file).

Why: a backlog (`--from-start`: what a file held when following began) is read a file after
another, 8 MiB of each a pass (`gapwatch.logs.tail`), and cuzk's stderr read apart only once the
stdout's has been read whole. Handed on as read, the watchers saw the stdout's hours first and
the stderr's TIMELINE lines of the same hours after them: every WinningPoSt of the backlog was
said LATE, "still running", 30 s after its `job enqueued` line (its GPU_END not read yet), then
"lost in a restart" at the next start line, before its own lines came and ended it on time.
Events are held until every backlog has been read, then given back by time (equal times in the
order read); an event timed when it was read (`backlog`: a C++ line, a TIMELINE line no start
line places) keeps its place after the timed event before it in its file, as
`gapwatch.commands.parse` keeps it. Lines written meanwhile are held too (newer than any
backlog line, they come after it).

Memory: the events go to a `SortedSpool` (runs on disk past a bound), never all held: a day's
backlog is millions of events.
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from gapwatch.base.sorted_spool import SortedSpool
from gapwatch.core.models import LogEvent


class TimeOrder:
    """Log events added in any order, given back once by time (`drain`)."""

    def __init__(self) -> None:
        self._spool = SortedSpool()
        self._encode = msgspec.msgpack.Encoder().encode
        self._decode = msgspec.msgpack.Decoder(LogEvent).decode
        #: Each stream's latest time of its own: where an event timed when read is placed.
        self._latest_s: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._spool)

    def add(self, ev: LogEvent) -> None:
        """Hold `ev` for its place in time (see the module docstring)."""
        if ev.time_source == "backlog":
            key_s = self._latest_s.get(ev.stream, ev.t_wall_s)
        else:
            key_s = self._latest_s[ev.stream] = ev.t_wall_s
        self._spool.add(key_s, self._encode(ev))

    def drain(self) -> Iterator[LogEvent]:
        """Every event held, by time; the spool's files freed at the end (or when the caller
        stops early and the iterator is closed)."""
        try:
            for _key, payload in self._spool.sorted():
                yield self._decode(payload)
        finally:
            self._spool.close()
