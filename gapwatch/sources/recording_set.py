"""A set of recordings read as one session: the segments of a recording kept within a disk
budget (`[record] rotate_size` / `rotate_age`), named as a folder or a glob.

Who calls it: `gapwatch.sources.files.read_any` (so `report`, `replay`, `export` and `parse
--recording` take `DIR` or `'DIR/gw.*.jsonl.gz'` wherever they take a file).

How the files are put together:
- every file is a whole recording (the recorder starts each segment with the session's header),
  so each is opened on its own; a file that is not a recording is skipped and said; in a
  folder, entries not named `*.jsonl` or `*.jsonl.gz` are not read, and said in one line
  (gapwatch's own temporaries, `gapwatch.base.temporaries`, left out unsaid: an export into
  the folder it reads named its own, already gone);
- only files of one recording set are joined: the same `set_id` (written by the recorder in
  every segment's header; files made before set ids have none and join by the rest), host and
  GPUs. A folder or glob holding several recordings (another host's, two sessions recording
  side by side, a copy) is refused with one line that lists each, with what reads it alone
  (`_alone`: a glob that names no other file, its one file, or the folder or glob with
  `?set=ID`): never merged (another host's GPU 0 was merged into ours, and two concurrent
  sessions lost 44 % of their samples as "out of time order"). The advice used to be the same
  glob for two sets of one base name, which was refused again with the same line;
- `DIR?set=ID` (or `'GLOB?set=ID'`, or `FILE?set=ID`) reads only the files of recording set
  ID (as the refusal prints it), the others said in one line (`not_read`); a `?set=` with no
  id, or given twice, or after a path that names nothing, is refused in one line
  (`selector_problem`);
- each segment is read once: a hard or symbolic link to it, or a copy of it (the same header,
  naming the same `file_inode`, and the same first record), beside it or in another folder a
  glob names, is said in one line (`read_once`) and not read (`_read_once`); each was read as
  one more segment of the set, every record twice;
- files with the same header (host, source, start) are one run's segments, ordered by the
  times inside them (the median of their first samples), not by their names: a segment renamed
  out of order keeps its place (it lost 63 % of the data); runs follow one another by their
  start;
- a later run's monotonic clock is put on the first run's (the box rebooted, or it is another
  box's clock): each of its records' `t_mono_ns` moves by the difference between the two
  headers' wall and monotonic starts, when that is over a second. Without it a reboot's
  clock, back near zero, made every later sample "out of time order". The gap between runs is a
  hole in the data (NO_DATA), never idle time;
- the header is the first run's, with every GPU any run saw.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
import shlex
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import msgspec
from msgspec import structs

from gapwatch.base.input_files import file_kind
from gapwatch.base.temporaries import is_temporary
from gapwatch.core.fmt import visible
from gapwatch.core.models import GpuInfo, Record, SessionHeader
from gapwatch.core.sizes import cut_text
from gapwatch.sources.recording import (
    MAX_PROBLEMS,
    LineStream,
    Reading,
    Recording,
    RecordingError,
    json_bytes,
    last_wall_s,
    open_recording,
    read_recording,
)
from gapwatch.sources.time_window import LATE_S, TimeWindow
from gapwatch.sources.trace_csv import is_trace_csv

#: Names taken for recordings in a folder.
RECORDING_SUFFIXES = (".jsonl", ".jsonl.gz")
_SEGMENT_NUMBER = re.compile(r"\.(\d+)\.jsonl(?:\.gz)?$")
#: What follows a folder or a glob to read only one recording set of it: `DIR?set=ID`.
SET_SELECTOR = "?set="
#: Clocks of two runs that agree within this are one clock (the same boot).
SAME_CLOCK_NS = 1_000_000_000
#: A file's place in its run: the median time of its first `FIRST_TIMES` samples, looked for
#: in its first `FIRST_LINES` lines.
FIRST_TIMES = 9
FIRST_LINES = 2000


def split_selector(path: Path) -> tuple[Path, str | None]:
    """`DIR?set=ID` -> (DIR, ID): a folder, glob or file and the one recording set of it to
    read; (path, None) for a path without one (or one that names a file of its own)."""
    head, sep, wanted = str(path).rpartition(SET_SELECTOR)
    if not sep or not wanted or "/" in wanted or os.path.lexists(path):
        return path, None
    return Path(head or "."), wanted


def selector_problem(path: Path) -> str | None:
    """What is wrong with the `?set=` a path ends with, in words (None: nothing, or none).
    `DIR?set=` with no id, and `DIR?set=A?set=B`, were read as globs that named nothing:
    "no gapwatch recording in it", "no recording of set B in it", of a folder that held it."""
    text = str(path)
    if SET_SELECTOR not in text or os.path.lexists(path):
        return None
    head, _, wanted = text.rpartition(SET_SELECTOR)
    if not wanted:
        return ("?set= names no recording set: give the set id after it (DIR?set=ID, as a "
                "folder of several recordings lists them)")
    if "/" in wanted:
        # A set id is hex digits: `DIR?set=a/b` was read as a path under a folder `DIR?set=a`
        # and said "no gapwatch recording in it" of a folder that held one. Under a folder
        # that is there, it is a path (said as one when it names nothing).
        if os.path.isdir(os.path.dirname(text)):
            return None
        return ("?set= takes a set id, which has no '/' (DIR?set=ID, as a folder of several "
                "recordings lists them)")
    if SET_SELECTOR in head and not os.path.lexists(head):
        return "?set= is given twice: give one set id"
    if os.path.isfile(head) and is_trace_csv(Path(head)):
        # Was "no recording of set ID in it (...: not a gapwatch recording)".
        return "a trace CSV has no recording sets: give it without ?set="
    return _names_nothing(Path(head or "."))


def _names_nothing(base: Path) -> str | None:
    """"no such file or folder" for what a `?set=` follows when it is neither (nor a glob):
    `/data/typo?set=ID` was "no recording of set ID in it", of a folder that is not there
    (without `?set=`, and before `?set=` was taken after a file, "no such file")."""
    if os.path.lexists(base) or any(c in str(base) for c in "*?["):
        return None
    return "no such file or folder before ?set="


def is_set(path: Path) -> bool:
    """A folder, or a glob pattern that names no file of its own; or any of them, a file
    too, with `?set=ID` (`FILE?set=ID` was "no such file" of a file that exists)."""
    base, wanted = split_selector(path)
    if wanted is not None or selector_problem(path) is not None:
        return True
    return base.is_dir() or (not base.exists() and any(c in str(base) for c in "*?["))


def printed_set_id(set_id: str) -> str:
    """A set id as gapwatch prints it (and `?set=` takes it): cut and written out."""
    return visible(cut_text(set_id, 16))


class SetEntries(NamedTuple):
    """What a folder or a glob names, sorted by name."""

    #: Regular files to read (named `*.jsonl` / `*.jsonl.gz` in a folder).
    files: list[Path]
    #: In a folder, the names of the other entries (not read).
    others: list[str]
    #: Entries named like recordings that are not regular files, each with what it is
    #: ("self.jsonl (a directory)", "loop.jsonl (cannot look at it: Too many levels of
    #: symbolic links)"): not opened (a FIFO would wait for its writer), said.
    not_files: list[str]
    #: With `?set=ID`: the names of the recordings of other sets (not read).
    other_sets: list[str]


def set_files(path: Path) -> SetEntries:
    """The recordings a folder holds (files named `*.jsonl` or `*.jsonl.gz`), or a glob names
    (files only), by name; and, in a folder, the names of the other entries (not read). With
    `?set=ID`, only the recordings of that set (and files that are not recordings: the reader
    says them), every size, end and lock then the set's own."""
    path, wanted = split_selector(path)
    entries = _entries(path)
    if wanted is None:
        return entries
    files = [f for f in entries.files if _of_set(f, wanted)]
    return entries._replace(files=files, other_sets=[
        f.name for f in entries.files if f not in files])


def _of_set(file: Path, wanted: str) -> bool:
    """Whether `file` is a recording of set `wanted` (as printed), or no recording at all (so
    that the reader says it, as it does without `?set=`)."""
    try:
        header, stream, _ = open_recording(file)
    except RecordingError:
        return True
    stream.close()
    return header.set_id is not None and printed_set_id(header.set_id) == wanted


def _entries(path: Path) -> SetEntries:
    """`set_files` of a folder, a file (`FILE?set=ID`) or a glob, every set's."""
    if path.is_dir():
        # gapwatch's own temporaries (an export into this folder writing its output) are no
        # entry to say: never a recording, and gone by the time a line says them.
        entries = sorted(p for p in path.iterdir() if not is_temporary(p.name))
        found = [p for p in entries if p.name.endswith(RECORDING_SUFFIXES)]
        others = [p.name for p in entries if not p.name.endswith(RECORDING_SUFFIXES)]
    elif os.path.lexists(path):
        found, others = [path], []  # a file's name is itself, whatever characters it holds
    else:
        found, others = [Path(p) for p in sorted(glob.glob(str(path)))], []
    files: list[Path] = []
    not_files: list[str] = []
    for p in found:
        # Followed, as opening follows it: a link to a recording is read; a link to itself,
        # to a folder (a loop back up the tree), to a FIFO or to nothing is said, never
        # dropped without a word (they were) and never opened.
        try:
            mode = p.stat().st_mode
        except OSError as exc:
            not_files.append(f"{p.name} (cannot look at it: {exc.strerror or exc})")
            continue
        if stat.S_ISREG(mode):
            files.append(p)
        else:
            not_files.append(f"{p.name} ({file_kind(mode)})")
    return SetEntries(files, others, not_files, [])


def _entries_said(path: Path, names: list[str], what: str) -> str:
    """One line for any number of a folder's entries left unread (a folder of 100,000 is one
    line, counted): the first five named, cut and written out."""
    shown = ", ".join(visible(cut_text(n, 120)) for n in names[:5]) + (
        f" and {len(names) - 5} more" if len(names) > 5 else "")
    return f"{path}: {len(names)} entr{'ies' if len(names) > 1 else 'y'} {what}, not read: {shown}"


def _segment_number(path: Path) -> int:
    m = _SEGMENT_NUMBER.search(path.name)
    return int(m.group(1)) if m else 0


class _Times(msgspec.Struct):
    """The data time of a record line, when it is a GPU or host sample."""

    type: str = ""
    t_mono_ns: int | None = None


class _Start(NamedTuple):
    """Where a file starts: the median time of its first samples (its place in its run), and
    its first record line (with its header, what tells a copy of a segment from another
    segment)."""

    first_ns: int | None
    first_line: bytes


def _start_of(stream: LineStream) -> _Start:
    """The median of the first few GPU and host samples' times in a file: where it sits in
    its run (robust to one absurd time among them), None when its first lines hold none; and
    the file's first line after the header (b"" for none)."""
    times: list[int] = []
    first_line = b""
    for _ in range(FIRST_LINES):
        try:
            line = stream.readline()
        except (EOFError, OSError, zlib.error):
            break
        if not line:
            break
        first_line = first_line or line
        try:
            rec = msgspec.json.decode(line, type=_Times)
        except (msgspec.DecodeError, RecursionError, ValueError):
            continue
        if rec.type in ("gpu", "host") and rec.t_mono_ns is not None:
            times.append(rec.t_mono_ns)
            if len(times) == FIRST_TIMES:
                break
    return _Start(sorted(times)[len(times) // 2] if times else None, first_line)


class _File(NamedTuple):
    path: Path
    header: SessionHeader
    first_ns: int | None
    #: Which segment the file holds (`_segment_of`): two files that hold the same one are
    #: read once.
    segment: tuple[object, ...]
    #: Whether the recorder wrote this very file (its header names its inode): of two files
    #: that hold one segment, it is read (`_held_first`).
    own: bool


def _segment_of(path: Path, st: os.stat_result, header: SessionHeader,
                start: _Start) -> tuple[object, ...]:
    """What names the segment a file holds. A hard or symbolic link is the same file (its
    device and inode); a copy (`cp`, a restore beside the original, a file manager's "(copy)")
    is another file with the same header, naming the inode the recorder wrote it into
    (`file_inode`), and the same first record. Either was read twice as two segments of the
    set: every record twice, a quarter of the GPU samples dropped as "out of time order", the
    prover's failures counted twice. A file without `file_inode` (made before it, or by
    `write_recording`) or without a record is known by its inode alone."""
    if header.file_inode is None or not start.first_line:
        return ("file", st.st_dev, st.st_ino)
    return ("segment", header.set_id, header.started_wall_s, header.started_mono_ns,
            header.file_inode, start.first_line)


def _read_once(files: list[_File]) -> tuple[list[_File], list[str]]:
    """Each segment once (see `_segment_of`): the files to read, in the order given, and
    the names of the others, each with the name it is read under. Of the files of one
    segment, the recorder's own is read, else the one that holds the most JSON (a copy taken
    while the segment was written holds less; a gzip copy is weighed inflated: by its size on
    disk a complete `gzip -k` of a segment lost to a plain copy cut short): `_held_first`.
    """
    by_segment: dict[tuple[object, ...], list[_File]] = {}
    for f in files:
        by_segment.setdefault(f.segment, []).append(f)
    best = {seg: fs[0] if len(fs) == 1 else min(fs, key=_held_first)
            for seg, fs in by_segment.items()}
    kept = [f for f in files if best[f.segment] is f]
    again = [_same_as(f.path, best[f.segment].path) for f in files if best[f.segment] is not f]
    return kept, again


def _held_first(f: _File) -> tuple[bool, int, bool, bool, str]:
    """`_read_once`'s order among the files of one segment: the recorder's own file, then the
    one holding the most JSON (a gzip copy inflated whole, a chunk at a time: an estimate could
    pick a copy cut short), then a file over a symbolic link, then a name like a segment's, then
    by name. Worked out only where a segment has several files (rare)."""
    try:
        held = json_bytes(f.path, exact=True)
    except OSError:
        held = 0  # gone since it was opened: the reader says so if it is chosen
    return (not f.own, -held, f.path.is_symlink(), _SEGMENT_NUMBER.search(f.path.name) is None,
            f.path.name)


def _same_as(path: Path, read: Path) -> str:
    """A file not read, with the one read in its place: by name in one folder, else by
    path (a glob over several folders)."""
    if path.parent == read.parent:
        return f"{path.name} (= {read.name})"
    return f"{path} (= {read})"


def _set_key(header: SessionHeader) -> tuple[str, str, tuple[str, ...]]:
    """What makes files one recording: the set id (none before set ids), the host and the
    GPUs (their UUIDs, else their indices)."""
    gpus = tuple(g.uuid or str(g.index) for g in sorted(header.gpus, key=lambda g: g.index))
    return header.set_id or "", header.host, gpus


def _describe(path: Path, files: list[_File], sets: list[list[_File]]) -> str:
    """One recording of a refused folder or glob: what reads it alone (`_alone`; its files
    where nothing does), its set, host and GPUs."""
    names = sorted(f.path.name for f in files)
    shown = _alone(path, files, sets) or visible(
        ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "") +
        " (nothing reads it alone by name: it shares its set id with another recording)")
    h = files[0].header
    who = f"set {printed_set_id(h.set_id)}" if h.set_id else "no set id"
    return (f"{shown} ({len(files)} file{'s' if len(files) > 1 else ''}; {who}, host "
            f"{visible(cut_text(h.host, 40))}, GPUs "
            f"{','.join(str(g.index) for g in h.gpus) or 'none'})")


def _alone(path: Path, files: list[_File], sets: list[list[_File]]) -> str | None:
    """What to give (as typed in a shell) to read one recording of a folder or glob alone:
    a glob of its files that names no other file of the folder, its one file, or the folder
    or glob with `?set=ID`; None where none does (another recording has its set id)."""
    base = split_selector(path)[0]
    folder = base if base.is_dir() else base.parent
    names = {f.path.name for f in files}
    pattern = _glob_of(sorted(names))
    if pattern is not None and not any(
            fnmatch.fnmatchcase(n, pattern) for n in _names_in(folder) if n not in names):
        return shlex.quote(visible(_glob_in(folder, pattern)))
    if len(files) == 1:
        return shlex.quote(visible(str(files[0].path)))
    set_id = files[0].header.set_id
    if set_id is None or [fs[0].header.set_id for fs in sets].count(set_id) > 1:
        return None
    return shlex.quote(visible(f"{base}{SET_SELECTOR}{printed_set_id(set_id)}"))


def _glob_in(folder: Path, pattern: str) -> str:
    """The glob of `pattern`'s names in `folder`, the folder's name taken literally: a folder
    named `box[1]` or `w?` is a pattern of its own (`'/data/box[1]/gw.*.jsonl'` read
    /data/box1's files, `w?` every folder of two letters), so its characters are escaped
    (`'/data/box[[]1]/gw.*.jsonl'`)."""
    return os.path.join(glob.escape(str(folder)), pattern)


def _names_in(folder: Path) -> list[str]:
    """The names of a folder's entries (none when it cannot be listed)."""
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _glob_of(names: list[str]) -> str | None:
    """`gw.*.jsonl.gz` when every name is a segment of one base, else None."""
    bases = {_SEGMENT_NUMBER.sub(m.group(0).replace(m.group(1), "*"), n)
             for n in names for m in [_SEGMENT_NUMBER.search(n)] if m}
    return bases.pop() if len(bases) == 1 and len(names) > 1 and all(
        _SEGMENT_NUMBER.search(n) for n in names) else None


def read_set(path: Path, reading: Reading) -> Recording:
    """The recordings `path` names (see `set_files`) as one `Recording`: the files of one
    recording set, ordered by the times inside them, each read as `reading` says (the
    parallel report's workers read a set as they read a file).

    Raises:
        RecordingError: the folder or glob holds no usable recording, or more than one
            recording set (one line that lists each).
    """
    problem = selector_problem(path)
    if problem is not None:
        raise RecordingError(f"{path}: {problem}")
    sets: dict[tuple[str, str, tuple[str, ...]], list[_File]] = {}
    skipped: list[str] = []
    header_problems: list[str] = []
    files, others, not_files, other_sets = set_files(path)
    opened: list[_File] = []
    for file in files:
        try:
            header, stream, problems = open_recording(file)
        except RecordingError as exc:
            skipped.append(str(exc))
            continue
        try:
            start = _start_of(stream)
            st = file.stat()  # followed, as opening follows it: a link is its target
        except OSError as exc:
            skipped.append(f"{file}: cannot look at it ({exc.strerror or exc})")
            continue
        finally:
            stream.close()
        header_problems += [p for p in problems if p not in header_problems]
        opened.append(_File(file, header, start.first_ns, _segment_of(file, st, header, start),
                            header.file_inode == st.st_ino))
    opened, again = _read_once(opened)
    for f in opened:
        sets.setdefault(_set_key(f.header), []).append(f)
    if not sets:
        firsts = skipped[:1] or [f"{n}: not a file" for n in not_files[:1]]
        why = f" ({visible(firsts[0])})" if firsts else ""
        wanted = split_selector(path)[1]
        what = f"no recording of set {visible(wanted)}" if wanted else "no gapwatch recording"
        raise RecordingError(f"{path}: {what} in it{why}")
    if len(sets) > 1:
        listed = "; ".join(_describe(path, fs, list(sets.values())) for fs in sets.values())
        raise RecordingError(f"{path} holds {len(sets)} recordings, not one: {listed}; give "
                             "one of them as shown (each reads that one alone)")
    return _joined(path, next(iter(sets.values())), skipped, header_problems,
                   _Unread(others, not_files, other_sets, again), reading)


class _Unread(NamedTuple):
    """What a folder or glob names that is not read, said each in one line."""

    #: Entries of a folder not named *.jsonl / *.jsonl.gz.
    others: list[str]
    #: Entries named like recordings that are not files.
    not_files: list[str]
    #: Recordings of other sets than `?set=` names.
    other_sets: list[str]
    #: Files that hold a segment read under another name (`_read_once`).
    again: list[str]


def _joined(path: Path, files: list[_File], skipped: list[str], header_problems: list[str],
            unread: _Unread, reading: Reading) -> Recording:
    runs: dict[tuple[str, float, int], list[_File]] = {}
    for f in files:
        h = f.header
        runs.setdefault((h.source, h.started_wall_s, h.started_mono_ns), []).append(f)
    ordered = sorted(runs.values(), key=lambda fs: fs[0].header.started_wall_s)
    first = ordered[0][0].header
    gpus: dict[int, GpuInfo] = {}
    for fs in ordered:
        for g in fs[0].header.gpus:
            gpus.setdefault(g.index, g)
    header = structs.replace(first, gpus=[gpus[i] for i in sorted(gpus)])
    rec = Recording(path=path, header=header, records=iter(()),
                    problem_lines=[] if reading.keep_problem_lines else None)
    for message in header_problems:
        rec.problem("bad_header", message, 1)
    for message in skipped:
        rec.problem("not_a_recording", f"{message}; skipped", 1)
    if unread.others:
        rec.problem("not_read", _entries_said(path, unread.others,
                                              "not named *.jsonl or *.jsonl.gz"), 1)
    if unread.not_files:
        rec.problem("not_a_file", _entries_said(path, unread.not_files,
                                                "named like recordings but not files"), 1)
    if unread.other_sets:
        rec.problem("not_read", _entries_said(path, unread.other_sets,
                                              "of another recording set (?set= names one)"), 1)
    if unread.again:
        rec.problem("read_once", _entries_said(
            path, unread.again, "holding a segment read under another name (a hard or "
            "symbolic link, or a copy)"), 1)
    # Within a run, files in the order of the times inside them (a renamed segment keeps its
    # place), their numbers only where a file holds no sample.
    # Each file with its run's number: the stream says where a run begins by position.
    plan = [_Planned(f.path, _offset_ns(first, f.header), run) for run, fs in enumerate(ordered)
            for f in sorted(fs, key=lambda f: (f.first_ns if f.first_ns is not None else -1,
                                               _segment_number(f.path), f.path.name))]
    rec.files = [p.path for p in plan]
    rec.runs = len(ordered)
    # With a window each file is read within it (`read_recording`), and `_records` opens no
    # segment wholly outside it.
    rec.records = _records(rec, plan, reading)
    return rec


def _before(file: Path, window: TimeWindow) -> bool:
    """Whether every line of `file` is before `window` (its last time, read from its end:
    `last_wall_s`; unknown: read it)."""
    if window.since_s is None:
        return False
    last = last_wall_s(file)
    return last is not None and last < window.since_s - LATE_S


def _after(file: Path, window: TimeWindow) -> bool:
    """Whether `file` runs past the end of `window` (read to `LATE_S` past it: the files after
    it in the set's order hold nothing of it)."""
    if window.until_s is None:
        return False
    last = last_wall_s(file)
    return last is not None and last >= window.until_s + LATE_S


def _offset_ns(first: SessionHeader, later: SessionHeader) -> int:
    """What to add to `later`'s monotonic times to put them on `first`'s clock (0 on the same
    clock)."""
    wall_ns = round((later.started_wall_s - first.started_wall_s) * 1e9)
    mono_ns = later.started_mono_ns - first.started_mono_ns
    offset = wall_ns - mono_ns
    return offset if abs(offset) > SAME_CLOCK_NS else 0


class _Planned(NamedTuple):
    """A file of a set as `_records` reads it."""

    path: Path
    #: What to add to its monotonic times (`_offset_ns`).
    offset_ns: int
    #: Its run's number in the set (0: the first): `Recording.run` while its records are given.
    run: int


def _records(rec: Recording, plan: list[_Planned], reading: Reading) -> Iterator[Record]:
    lines_before = 0
    window = reading.window
    for index, (file, offset, run) in enumerate(plan, 1):
        if window is not None and _before(file, window):
            continue  # a segment wholly before the window: not opened
        # Kept problems go straight into the set's list, file k's lines based at k << 63
        # (the set's own problems are at line 1): they sort in reading order, a file's end
        # (`END_LINE`) included, and no two files' lines meet.
        kept = (rec.problem_lines, index << 63) if rec.problem_lines is not None else None
        part = read_recording(file, reading, problem_lines=kept)
        # Set before the run's first record is given: a consumer reads it with each record.
        rec.run = run
        try:
            for r in part.records:
                rec.line_no = lines_before + part.line_no
                if offset and hasattr(r, "t_mono_ns"):
                    r = structs.replace(r, t_mono_ns=max(0, r.t_mono_ns + offset))
                yield r
        finally:
            # The lines the file had, however many of them were this reader's records (a
            # worker of a split report passes other workers' samples over): every worker
            # numbers the next file's lines alike. A file left within the window's end is
            # still open here: its last record's line.
            lines_before += max(part.line_no, part.lines_read)
            for counter, n in part.counters.items():
                rec.counters[counter] = rec.counters.get(counter, 0) + n
            room = MAX_PROBLEMS - len(rec.problems)
            rec.problems += part.problems[:max(0, room)]
            if part.still_written is not None:
                rec.still_written = part.still_written
        if window is not None and _after(file, window):
            return  # the window ended in this segment: the later ones are not opened
