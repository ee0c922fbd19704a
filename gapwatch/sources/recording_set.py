"""A set of recordings read as one session: the segments of a recording kept within a disk
budget (`[record] rotate_size` / `rotate_age`), named as a folder or a glob.

Who calls it: `gapwatch.sources.files.read_any` (so `report`, `replay`, `export` and `parse
--recording` take `DIR` or `'DIR/gw.*.jsonl.gz'` wherever they take a file).

How the files are put together:
- every file is a whole recording (the recorder starts each segment with the session's header),
  so each is opened on its own; a file that is not a recording is skipped and said;
- files with the same header (host, source, start) are one run's segments, in the order of
  their numbers (`gw.000007.jsonl.gz`); runs follow one another by their start;
- a later run's monotonic clock is put on the first run's (the box rebooted, or it is another
  box's clock): each of its records' `t_mono_ns` moves by the difference between the two
  headers' wall and monotonic starts, when that is over a second. Without it a reboot's
  clock, back near zero, made every later sample "out of time order". The gap between runs is a
  hole in the data (NO_DATA), never idle time;
- the header is the first run's, with every GPU any run saw.
"""

from __future__ import annotations

import glob
import re
from collections.abc import Iterator
from pathlib import Path

from msgspec import structs

from gapwatch.core.models import GpuInfo, Record, SessionHeader
from gapwatch.sources.recording import (
    MAX_PROBLEMS,
    Recording,
    RecordingError,
    open_recording,
    read_recording,
)

#: Names taken for recordings in a folder.
RECORDING_SUFFIXES = (".jsonl", ".jsonl.gz")
_SEGMENT_NUMBER = re.compile(r"\.(\d+)\.jsonl(?:\.gz)?$")
#: Clocks of two runs that agree within this are one clock (the same boot).
SAME_CLOCK_NS = 1_000_000_000


def is_set(path: Path) -> bool:
    """A folder, or a glob pattern that names no file of its own."""
    return path.is_dir() or (not path.exists() and any(c in str(path) for c in "*?["))


def set_files(path: Path) -> list[Path]:
    """The recordings a folder holds, or a glob names (files only, by name)."""
    if path.is_dir():
        found = [p for p in path.iterdir() if p.name.endswith(RECORDING_SUFFIXES)]
    else:
        found = [Path(p) for p in glob.glob(str(path))]
    return sorted(p for p in found if p.is_file())


def _segment_number(path: Path) -> int:
    m = _SEGMENT_NUMBER.search(path.name)
    return int(m.group(1)) if m else 0


def read_set(path: Path) -> Recording:
    """The recordings `path` names (see `set_files`) as one `Recording`.

    Raises:
        RecordingError: the folder or glob holds no usable recording.
    """
    runs: dict[tuple[str, str, float, int], list[tuple[int, str, Path, SessionHeader]]] = {}
    skipped: list[str] = []
    header_problems: list[str] = []
    for file in set_files(path):
        try:
            header, stream, problems = open_recording(file)
        except RecordingError as exc:
            skipped.append(str(exc))
            continue
        stream.close()
        header_problems += [p for p in problems if p not in header_problems]
        key = (header.host, header.source, header.started_wall_s, header.started_mono_ns)
        runs.setdefault(key, []).append((_segment_number(file), file.name, file, header))
    if not runs:
        why = f" ({skipped[0]})" if skipped else ""
        raise RecordingError(f"{path}: no gapwatch recording in it{why}")
    ordered = sorted(runs.values(), key=lambda files: files[0][3].started_wall_s)
    first = ordered[0][0][3]
    gpus: dict[int, GpuInfo] = {}
    for files in ordered:
        for g in files[0][3].gpus:
            gpus.setdefault(g.index, g)
    header = structs.replace(first, gpus=[gpus[i] for i in sorted(gpus)])
    rec = Recording(path=path, header=header, records=iter(()))
    for message in header_problems:
        rec.problem("bad_header", message, 1)
    for message in skipped:
        rec.problem("not_a_recording", f"{message}; skipped", 1)
    plan = [(f[2], _offset_ns(first, f[3])) for files in ordered for f in sorted(files)]
    rec.files = [p for p, _ in plan]
    rec.runs = len(ordered)
    rec.records = _records(rec, plan)
    return rec


def _offset_ns(first: SessionHeader, later: SessionHeader) -> int:
    """What to add to `later`'s monotonic times to put them on `first`'s clock (0 on the same
    clock)."""
    wall_ns = round((later.started_wall_s - first.started_wall_s) * 1e9)
    mono_ns = later.started_mono_ns - first.started_mono_ns
    offset = wall_ns - mono_ns
    return offset if abs(offset) > SAME_CLOCK_NS else 0


def _records(rec: Recording, plan: list[tuple[Path, int]]) -> Iterator[Record]:
    lines_before = 0
    for file, offset in plan:
        part = read_recording(file)
        try:
            for r in part.records:
                rec.line_no = lines_before + part.line_no
                if offset and hasattr(r, "t_mono_ns"):
                    r = structs.replace(r, t_mono_ns=max(0, r.t_mono_ns + offset))
                yield r
        finally:
            lines_before += part.line_no
            for counter, n in part.counters.items():
                rec.counters[counter] = rec.counters.get(counter, 0) + n
            room = MAX_PROBLEMS - len(rec.problems)
            rec.problems += part.problems[:max(0, room)]
