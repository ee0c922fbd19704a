"""A recording in segments (`[record] rotate_size` / `rotate_age`, `keep`): the segments' names,
the set they belong to, and which files gapwatch may remove to keep the budget.

Who calls it: `gapwatch.engine.runtime` calls `check_segments` before anything starts;
`gapwatch.sinks.recorder.Recorder` names its next segment with `next_segment` and asks
`removable` before it removes any file; tests and `bench/recording_budget.py` list a set with
`segments_of`.

The rule it owns: gapwatch deletes only files it wrote itself. A recording set has an id (a
random `set_id`, written in the header of every segment, with the inode of the segment's own
file: `file_inode`). A later run on the same name continues the set its earlier runs wrote, so
that the budget counts their segments: the set most of the name's segments belong to, counting
only this user's regular files of this host that are not copies (`set_mark.is_copy`); when no
set has more of them than every other, the run starts a new set (`set_id_for`). The newest
segment is no evidence: a copy of another recording planted at `gw.000050.jsonl` used to be
taken for the set, and the run removed it and left its own segments for ever.

A file named like a segment is removed only when all of these hold, checked on the open file
right before the removal: it is a regular file (not a link, a FIFO or a device), owned by the
user gapwatch runs as, nobody holds its lock (no gapwatch writes it), its first line is a
gapwatch header naming this set, and it is not a copy (its header names no other file's inode).
Anything else is said, once, and left: a text file, another user's file, a link (whatever it
points to), another set's segment, a copy, a locked segment, and a file with a second name
among the segments (a hard link, `ln gw.000006.jsonl gw.000009.jsonl`: `prune_verdicts`), which
counted twice against the budget, so that a newer segment was removed in its place. Before set
ids, any file named like a segment was removed.
"""

from __future__ import annotations

import fcntl
import os
import pwd
import stat
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from gapwatch.base.writer_lock import locked_by_another
from gapwatch.core.fmt import visible
from gapwatch.core.sizes import cut_text
from gapwatch.sinks.output_file import OutputRefused, check_target, split_suffix
from gapwatch.sinks.set_mark import is_copy, new_set_id, own_mark, read_mark

#: Digits of a segment's number: `gw.jsonl.gz` -> `gw.000001.jsonl.gz` (they sort by name,
#: and `--rotate`'s `gw.1.jsonl.gz` is never taken for one).
SEGMENT_DIGITS = 6
LAST_SEGMENT = 10 ** SEGMENT_DIGITS - 1
#: The suffix of segments whose base has no recording suffix (`--out gw`): `gw.000001.jsonl`,
#: so that a folder of them reads as a recording set.
DEFAULT_SUFFIX = ".jsonl"


def _stem_suffix(base: Path) -> tuple[str, str]:
    stem, suffix = split_suffix(base.name)
    return stem, suffix or DEFAULT_SUFFIX


def segment_name(base: Path, n: int) -> Path:
    """The `n`th segment of the set named by `base`: `gw.jsonl.gz` -> `gw.000001.jsonl.gz`,
    `gw` -> `gw.000001.jsonl`."""
    stem, suffix = _stem_suffix(base)
    return base.with_name(f"{stem}.{n:0{SEGMENT_DIGITS}d}{suffix}")


def segments_of(base: Path) -> list[tuple[int, Path]]:
    """The files named like a segment of `base` (links and files of others included: `lstat`
    names, nothing opened), by number."""
    stem, suffix = _stem_suffix(base)
    found: list[tuple[int, Path]] = []
    try:
        entries = list(os.scandir(base.parent))
    except OSError:
        return found
    head, width = len(stem) + 1, SEGMENT_DIGITS
    for entry in entries:
        name = entry.name
        middle = name[head:head + width]
        if (len(name) == head + width + len(suffix) and name.startswith(stem + ".")
                and name.endswith(suffix) and middle.isdigit() and middle.isascii()):
            found.append((int(middle), Path(entry.path)))
    return sorted(found)


def _owner(uid: int) -> str:
    try:
        return f"user {pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _last_written(existing: list[tuple[int, Path]]) -> int:
    """The number of the last of `existing` (by number) that a gapwatch recorder wrote where it
    is: a regular file of this user whose first line is a header, not a copy (`own_mark`,
    `is_copy`); 0 for none. Looked for from the last down: the first found ends it."""
    for n, path in reversed(existing):
        found = own_mark(path)
        if found is not None and not is_copy(*found):
            return n
    return 0


@dataclass
class Verdict:
    """Whether a file may be removed: `why_not` is None when it may (the file is then open as
    `fd`, locked by us, until `release`), else why it is left, in words."""

    path: Path
    why_not: str | None
    fd: int | None = None
    inode: tuple[int, int] | None = None

    def release(self) -> None:
        """Close the file (and drop our lock on it). Safe to call twice."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def one_file_names(entries: list[tuple[int, Path]]) -> dict[Path, Path]:
    """Each of `entries` (a set's names) that names the same file as another of them (a hard
    link: `ln gw.000006.jsonl gw.000009.jsonl`), with the first such other name; `lstat`
    only, links never followed. Such a file counted once per name: against `keep` (a newer
    segment was removed in its place, the older data kept under its second name) and as
    evidence of its set."""
    first: dict[tuple[int, int], Path] = {}
    twice: dict[Path, Path] = {}
    for _, path in entries:
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_nlink < 2:
            continue
        key = (st.st_dev, st.st_ino)
        if key in first:
            twice[path] = first[key]
            twice.setdefault(first[key], path)
        else:
            first[key] = path
    return twice


def prune_verdicts(base: Path, below: int, set_id: str) -> list[Verdict]:
    """`removable`'s verdict on every file named like a segment of `base` numbered below
    `below`, oldest first. A file with two names among them is neither name's to remove
    (`one_file_names`): gapwatch cannot tell which name it wrote, and removing one frees no
    space; it is left, and counts against no budget."""
    entries = segments_of(base)
    twice = one_file_names(entries)  # the segment being written among them
    return [Verdict(path, f"one file with {twice[path].name} (a hard link: gapwatch cannot "
                    "tell which name it wrote, and removing one frees no space)")
            if path in twice else removable(path, set_id) for n, path in entries if n < below]


def removable(path: Path, set_id: str) -> Verdict:
    """Check, on the open file, that `path` is a segment of set `set_id` that gapwatch wrote
    and nobody writes now (see the module docstring). A removable file stays open and locked
    (exclusively) until the verdict is released: a writer cannot start on it meanwhile."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return Verdict(path, f"cannot be read ({exc.strerror or exc})")
    if stat.S_ISLNK(st.st_mode):
        return Verdict(path, "a symbolic link")
    if not stat.S_ISREG(st.st_mode):
        return Verdict(path, "not a regular file")
    if st.st_uid != os.geteuid():
        return Verdict(path, f"owned by {_owner(st.st_uid)}")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return Verdict(path, f"cannot be opened ({exc.strerror or exc})")
    why = _why_not_ours(fd, st, set_id)
    if why is not None:
        os.close(fd)
        return Verdict(path, why)
    return Verdict(path, None, fd, (st.st_dev, st.st_ino))


def _why_not_ours(fd: int, st: os.stat_result, set_id: str) -> str | None:
    now = os.fstat(fd)
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        return "replaced while it was checked"
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return "being written by another process (it holds the recording's lock)"
    try:
        mark = read_mark(fd)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if mark is None:
        return "not a gapwatch recording (its first line is not a header)"
    if mark.set_id is None:
        return "a recording without a set id (written before set ids, or by hand)"
    if mark.set_id != set_id:
        return f"a segment of another recording set ({visible(cut_text(mark.set_id, 16))})"
    if is_copy(mark, now):
        return ("a copy of a segment (its header was written into another file), not a file "
                "gapwatch wrote here")
    return None


def remove(verdict: Verdict) -> bool:
    """Remove a removable file, if the name still names the file checked; True when done."""
    try:
        st = os.lstat(verdict.path)
        if verdict.fd is None or (st.st_dev, st.st_ino) != verdict.inode:
            return False
        os.unlink(verdict.path)
    except OSError:
        return False
    finally:
        verdict.release()
    return True


@dataclass(frozen=True)
class SegmentPlan:
    """A recording written as a set of segments (`[record] rotate_size` / `rotate_age`): named
    after `base`, the first this run writes numbered `first` (after the last segment a gapwatch
    wrote there, `_last_written`; names that are taken skipped: none is ever overwritten), a new one
    after `rotate_bytes` or `rotate_age_s`, the newest `keep` of the set kept (0 = all).
    `set_id`: the set's id, or "" for the one `set_id_for` finds when the header is known."""

    base: Path
    first: int
    rotate_bytes: int | None
    rotate_age_s: float | None
    keep: int
    set_id: str = ""


def check_segments(path: str | Path, rotate_bytes: int | None, rotate_age_s: float | None,
                   keep: int) -> SegmentPlan:
    """Check that a set of segments can be written after `path`'s name, changing nothing.

    Raises:
        OutputRefused: the directory is missing or not writable, or another process is
            writing any segment of the name (it holds the lock on it).
    """
    base = Path(path)
    if not base.name or base.is_dir():
        # A folder names no set (`--out / --rotate-size 1MiB` was a ValueError traceback from
        # naming its segments): refused as a folder is without rotation, naming a file in it.
        check_target(base)
        raise OutputRefused(f"{base}: give a file name for the segments")
    existing = segments_of(base)
    # After the last segment a gapwatch wrote here (a link, another user's file, a text file
    # or a copy planted at 999999 must not stop the recording), skipping names that are taken.
    first = _last_written(existing) + 1
    taken = {n for n, _ in existing}
    while first in taken:
        first += 1
    if first > LAST_SEGMENT:
        raise OutputRefused(f"{base}: a segment numbered {LAST_SEGMENT} exists already")
    for _, seg in existing:
        if locked_by_another(seg):
            raise OutputRefused(f"{seg} is being written by another process (it holds the "
                                "recording's lock); stop that one first, or record elsewhere")
    target = segment_name(base, first)
    if check_target(target):  # appeared between the listing and now
        raise OutputRefused(f"{target} exists; not overwritten")
    return SegmentPlan(base, first, rotate_bytes, rotate_age_s, keep)


@dataclass(frozen=True)
class SetChoice:
    """The set a run writes: `set_id`, and what to say about the choice (`said`: the name's
    segments belong to several sets), or None."""

    set_id: str
    said: str | None = None


def _sets_of(plan: SegmentPlan, host: str) -> Counter[str]:
    """How many of the name's earlier segments each set holds: only this user's regular files
    whose header was written on `host` and that are not copies, the evidence of which set
    earlier runs wrote (a planted copy, a link, another user's file are none)."""
    counts: Counter[str] = Counter()
    seen: set[tuple[int, int]] = set()
    for n, path in segments_of(plan.base):
        found = own_mark(path) if n < plan.first else None
        if found is None:
            continue
        mark, st = found
        if mark.set_id and mark.host == host and not is_copy(mark, st) \
                and (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))  # one file, one vote, however many its names
            counts[mark.set_id] += 1
    return counts


def set_id_for(plan: SegmentPlan, host: str) -> SetChoice:
    """The set this run writes: the plan's, else the one most of the name's earlier segments
    belong to (`_sets_of`: a later run continues the set, and the budget counts its
    segments), else a new one: none found, or no set with more than every other (then
    neither is continued, and neither is ever removed). Said when several sets are found."""
    if plan.set_id:
        return SetChoice(plan.set_id)
    ranked = _sets_of(plan, host).most_common()
    if not ranked:
        return SetChoice(new_set_id())
    if len(ranked) == 1:
        return SetChoice(ranked[0][0])
    listed = ", ".join(f"set {visible(cut_text(s, 16))}: {n}" for s, n in ranked)
    found = (f"recording: the files named like segments of {plan.base} belong to "
             f"{len(ranked)} recording sets ({listed})")
    if ranked[0][1] > ranked[1][1]:
        return SetChoice(ranked[0][0], f"{found}; this run continues set "
                         f"{visible(cut_text(ranked[0][0], 16))}, the one most of them belong "
                         "to; the others' files are left as they are, never removed")
    return SetChoice(new_set_id(), f"{found}, none more than the others; this run starts a "
                     "new set, and every one of those files is left as it is, never removed")
