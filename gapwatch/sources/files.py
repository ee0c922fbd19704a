"""Which reader a recorded file needs: a gapwatch recording, a set of them (a folder or a glob
of segments, read as one session) or a trace CSV.

Who calls it: the runtime (`--source replay:FILE`), `gapwatch.offline` (report, export, the
parallel report's plan and workers: `header_of`, `json_bytes_of`; a report's progress:
`data_span`), tests.
"""

from __future__ import annotations

import stat
from pathlib import Path

from gapwatch.core.models import SessionHeader
from gapwatch.sources.recording import (
    WHOLE,
    Reading,
    Recording,
    RecordingError,
    json_bytes,
    last_wall_s,
    read_recording,
)
from gapwatch.sources.recording_set import is_set, read_set, set_files
from gapwatch.sources.time_window import TimeWindow, within
from gapwatch.sources.trace_csv import is_trace_csv, last_time_s, read_trace_csv


def read_any(path: str | Path, reading: Reading = WHOLE) -> Recording:
    """Open a recording (.jsonl / .jsonl.gz), a set of them (a folder, or a glob such as
    `'/data/gw.*.jsonl.gz'`: one session), or a trace CSV (.csv), chosen by name, read as
    `reading` says: a recording or each file of a set (the parallel report's workers pass
    other GPUs' lines over); a trace CSV takes only its `window`.

    Raises:
        RecordingError: no such file, or not a usable recording / trace CSV.
    """
    p = Path(path)
    if is_set(p):
        return read_set(p, reading)
    if not p.exists():
        raise RecordingError(f"{p}: no such file")
    if is_trace_csv(p):
        refuse_a_stream(p, "a trace CSV is read twice (its GPUs and span, then its rows)")
        rec = read_trace_csv(p)
        if reading.window is not None:
            rec.records = within(rec.records, reading.window)
        return rec
    return read_recording(p, reading)


def header_of(path: str | Path) -> SessionHeader:
    """The header `read_any` would give `path` (a set's: the first run's, with every GPU),
    its records not read. Raises RecordingError."""
    rec = read_any(path)
    rec.close()
    return rec.header


def json_bytes_of(path: str | Path) -> int:
    """About how many bytes of JSON `path` holds (`recording.json_bytes`; a set's files
    summed, a file under several names, hard or symbolic links, once: the reader reads it
    once; a copy of a segment, another file, is summed with it, though read once: this only
    sizes the work). Raises OSError."""
    p = Path(path)
    if not is_set(p):
        return json_bytes(p)
    seen: set[tuple[int, int]] = set()
    total = 0
    for f in set_files(p).files:
        st = f.stat()
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            total += json_bytes(f)
    return total


def data_span(path: str | Path, started_wall_s: float, window: TimeWindow | None = None
              ) -> tuple[float, float] | None:
    """The wall times a recording's data runs between, for a progress line: from
    `started_wall_s` (its header's) to the latest last time of its files (a set's too, plain
    or gzip: `last_wall_s`), or None where no end is known (a trace CSV, a stream, an end that
    names no time) or it is not after the start; within `window` where one is read. Never
    raises."""
    end = data_end(path)
    if end is None:
        return None
    start = started_wall_s
    if window is not None:
        start = max(start, window.since_s if window.since_s is not None else start)
        end = min(end, window.until_s if window.until_s is not None else end)
    return (start, end) if end > start else None


def data_end(path: str | Path) -> float | None:
    """The latest wall time the files of a recording (a set's too) end at, read from their
    ends (`last_wall_s`), or None where none is known. Never raises."""
    p = Path(path)
    if is_trace_csv(p):
        return last_time_s(p)  # its last row's time, from its end
    try:
        files = set_files(p).files if is_set(p) else [p]
    except OSError:
        return None
    ends = [t for t in map(last_wall_s, files) if t is not None]
    return max(ends) if ends else None


def refuse_a_stream(path: Path, why: str) -> None:
    """Refuse a FIFO for a reading that needs the recording more than once (`why` says
    which): a FIFO (`report <(zcat gw.jsonl.gz)`) gave its head to the first read and the
    second said "not a gapwatch recording" of a good one. Raises RecordingError."""
    try:
        fifo = stat.S_ISFIFO(path.stat().st_mode)
    except OSError:
        return  # a missing file or a glob: the reader says what it is
    if fifo:
        raise RecordingError(f"{path}: a FIFO; {why}: save it to a file first "
                             f"({_saving_example(path)})")


def _saving_example(path: Path) -> str:
    """How to save the FIFO at `path`, for the file it is: a trace CSV's name is read from
    (`cat t.csv > trace.csv`; a recording's `zcat gw.jsonl.gz` advice was given for a CSV),
    else a recording's, the usual stream (`<(zcat gw.jsonl.gz)` is `/dev/fd/63`: no name
    to go by)."""
    if is_trace_csv(path):
        return f"e.g. cat {path} > trace.csv"
    return "e.g. zcat gw.jsonl.gz > gw.jsonl"
