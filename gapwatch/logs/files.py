"""Whole prover log files, read at once: parsed into events in time order, and merged into a
recording's records by time.

Who calls it: `gapwatch report --log` and `export --log` (`gapwatch.offline.report`), and
`gapwatch replay --log` (`gapwatch.engine.runtime`), so a recording replayed with its prover's
log files shows the same events, tied to the same gaps, as the report of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from gapwatch.config import Config
from gapwatch.core.models import LogEvent, Record


def parse_log_files(
    paths: Iterable[str], config: Config, timeline_epoch_s: float | None = None,
) -> tuple[list[LogEvent], dict[str, int]]:
    """Parse whole prover log files into events sorted by time, and the parser's counters.
    `timeline_epoch_s`: TIMELINE's offset 0 from the recording's `/status` snapshots, for logs
    whose anchor line is not in them (`gapwatch.cuzk.pipeline.timeline_epoch`).

    Raises:
        OSError: a file cannot be read (the caller says which and stops: a log given on the
            command line that cannot be read is a usage error, not something to skip).
    """
    from gapwatch.logs.parse import LogParser

    parser = LogParser(config.logs, keep_unparsed=False, offline=True)
    parser.anchor_from_status(timeline_epoch_s)
    events: list[LogEvent] = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                events.extend(parser.parse_line(line.rstrip("\r\n"), stream=path))
        events.extend(parser.flush())  # a panic at the end of the file
    # Lines without any time of their own get wall time 0 from a file: they cannot be placed.
    events = [e for e in events if e.t_wall_s > 0]
    events.sort(key=lambda e: e.t_wall_s)
    return events, dict(parser.counters)


def merge_by_time(records: Iterable[Record], events: Sequence[LogEvent]) -> Iterator[Record]:
    """`records` (a recording, in its own order) with `events` (sorted by time) slotted in by
    the rule of `gapwatch.offline.detect.detect_records` (which inlines it in its hot loop): each
    event goes just before the first GPU sample at or after its time; the rest come last."""
    i, n = 0, len(events)
    for record in records:
        if record.type == "gpu":
            t = record.t_wall_s
            while i < n and events[i].t_wall_s <= t:
                yield events[i]
                i += 1
        yield record
    while i < n:
        yield events[i]
        i += 1
