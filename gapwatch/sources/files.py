"""Which reader a recorded file needs: a gapwatch recording, a set of them (a folder or a glob
of segments, read as one session) or a trace CSV.

Who calls it: the runtime (`--source replay:FILE`), `gapwatch.offline` (report, export), tests.
"""

from __future__ import annotations

from pathlib import Path

from gapwatch.sources.recording import Recording, RecordingError, read_recording
from gapwatch.sources.recording_set import is_set, read_set
from gapwatch.sources.trace_csv import read_trace_csv


def read_any(path: str | Path) -> Recording:
    """Open a recording (.jsonl / .jsonl.gz), a set of them (a folder, or a glob such as
    `'/data/gw.*.jsonl.gz'`: one session), or a trace CSV (.csv), chosen by name.

    Raises:
        RecordingError: no such file, or not a usable recording / trace CSV.
    """
    p = Path(path)
    if is_set(p):
        return read_set(p)
    if not p.exists():
        raise RecordingError(f"{p}: no such file")
    if p.suffix.lower() == ".csv":
        return read_trace_csv(p)
    return read_recording(p)
