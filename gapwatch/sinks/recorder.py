"""Recorder: the session sink that writes every record to a JSON Lines file (gzip for `.gz`),
and keeps the file whole through a full or failing disk.

Who calls it: the runtime (`record --out`, `watch/demo --record`: a writer thread, `start()`),
snapshots and conversions (`write_recording`: synchronous), tests. The format and its reader are
in `gapwatch.sources.recording`; where the file may go, and its lock, in
`gapwatch.sinks.output_file`.

How the file stays readable whatever happens:
- Records are encoded as they arrive (`on_record`, under the session lock: no I/O there when a
  writer thread runs) and written at least every `flush_interval_s`, and as soon as
  `WAKE_BYTES` wait: a burst (a log flood) is written as it comes, not held for the interval.
- A `.gz` file is a series of gzip members: the header is a member of its own, then members of
  about `MEMBER_BYTES` of JSON each, every write ending with Z_SYNC_FLUSH. A `kill -9` loses at
  most the last interval, and what was written still reads (the reader reads every member).
- A write that fails (ENOSPC, EDQUOT, EIO, ...) is undone: the file is cut back to its size
  before the write, so it always ends after a whole line (and, for gzip, a complete flush of the
  deflate stream, whose state is restored from a copy taken before the write). The records stay
  in memory, up to `max_pending_bytes`; beyond that new records are dropped and counted. Writes
  are retried with a doubling delay (1 s .. `retry_max_s`). Once one succeeds, the recording
  resumes where it stopped, with a notice record saying how many records were dropped and when.
- Back-pressure is named for what it is: records also pile up on a healthy disk when they come
  faster than the writer writes them (a log flood); dropping them is then "the writer fell behind
  (N records/s in)", never "the disk refused them". When something must go, GPU and host samples
  go last: log lines are refused once `LOG_SHARE` of the memory bound is taken, other records
  (prover snapshots, copies, notices...) at `OTHERS_SHARE`, samples only at the bound itself.
  A writer with a backlog compresses faster (`HURRY_LEVEL`, a new gzip member) until it has
  caught up: 4.4x faster on a log flood of random bytes, for 12 % more bytes.
- `write_recording` (snapshots, conversions, benches) writes synchronously, batch by batch as
  records come, and keeps every record or raises (`strict`): a 15 min x 8 GPU session written at
  once used to keep 22,061 of 153,133 records, silently.
- A recording in segments (`SegmentPlan`, `gapwatch.sinks.segments`) starts a new segment
  between two batches of a write, and after a failed write too, then removes the oldest of its
  set beyond `keep` (only files it wrote: `segments.removable`): a backlog after an outage is
  written within the budget, and a budget that filled the disk frees it. A name someone else's
  file holds is skipped (said once). Prover snapshots wait as objects and are encoded when
  written, so that a `ProverUnchanged` marker always points at a snapshot in its own file.
- Before each write the file is checked to be still at its name: one deleted, moved or
  replaced by someone else is said, and the recording goes on into a new file (never into
  whatever was put in its place, a FIFO included: `output_file.create_beside`). The closing
  line (`RecordingStatus.summary`) counts records in files that exist, and says apart those in
  removed segments, in deleted files and in files moved away (which still hold them).
- Every header written carries the recording set's id (`set_id`): a set's, the one `--rotate`
  continues, or a new one; and the inode of the file it is written into (`file_inode`), so that
  a copy of the file is never taken for a segment gapwatch wrote. `write_recording` writes the
  header it is given.
- Each failure and the recovery are reported through `on_problem` (a Notice: the runtime passes
  it to the session, so the dashboard, `record`'s stderr and `/metrics` see it; it is called with
  no lock of ours held) and `status()`.
- `close()` writes what is pending and ends the last member with its trailer. If the disk is
  still full it ends the member with the few bytes of its trailer alone (they fit in the last
  block's slack on almost any file system): the file reads without "ends early", and what
  could not be written is counted in `status().records_dropped`. Should even those bytes not
  fit, the records stay and the status says that readers will find the file ending early.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from msgspec import structs

from gapwatch.base.watch import UNWATCHED, ThreadWatch
from gapwatch.config import RecordConfig
from gapwatch.core.codec import encode_line
from gapwatch.core.models import (
    Gap,
    GpuSample,
    HostSample,
    LogEvent,
    Notice,
    NoticeLevel,
    ProverStatus,
    ProverUnchanged,
    Record,
    SessionHeader,
)
from gapwatch.sinks.output_file import (
    ExistsPolicy,
    NameTaken,
    OutputFile,
    OutputPlan,
    OutputRefused,
    check_output,
    create_beside,
)
from gapwatch.sinks.segments import (
    LAST_SEGMENT,
    SegmentPlan,
    Verdict,
    prune_verdicts,
    remove,
    segment_name,
    set_id_for,
)
from gapwatch.sinks.set_mark import inherited_set_id, new_set_id, own_mark

#: Uncompressed JSON per gzip member: large enough that compression loses nothing measurable,
#: small enough that a file cut back to a member boundary loses little.
MEMBER_BYTES = 1 << 20
#: The most JSON written in one go: a nearly full disk takes what fits, batch by batch.
WRITE_BATCH_BYTES = 256 << 10
#: Waiting JSON that wakes the writer thread before its interval, and makes a recorder without
#: one write at once (or a quarter of its memory bound, if less): bursts are written as they
#: come, and a conversion or a snapshot, which encodes far faster than the bound a second,
#: keeps every record.
WAKE_BYTES = 4 * WRITE_BATCH_BYTES
#: Shares of the memory bound that log lines, and other records than GPU and host samples,
#: may fill: when the writer cannot keep up, log lines go first and samples (the measurements
#: every gap rests on) last.
LOG_SHARE = 0.5
OTHERS_SHARE = 0.75
#: Records that are samples, for the drop order above.
_SAMPLES = (GpuSample, HostSample)
#: The gzip level of a member started while a backlog of a quarter of the memory bound waits.
HURRY_LEVEL = 1
#: A writer that fell behind has caught up once nothing was dropped for this long (one warning
#: per episode of a flood, not one per second of it).
CAUGHT_UP_S = 10.0
#: The constructor's defaults are the `[record]` config's (one source: `RecordConfig`).
_DEFAULTS = RecordConfig()
_GZIP_WBITS = 31  # zlib's gzip container
_GZIP_LEVEL = 6

RecordingState = Literal["writing", "failing", "closed"]


@dataclass(frozen=True, slots=True)
class RecordingStatus:
    """The recording as the footer, `/metrics` and `record`'s summary show it."""

    path: str
    state: RecordingState
    #: The last write error (while failing, or what stopped the final write), else None.
    error: str | None
    #: Wall time of the first failed write of the current outage.
    failing_since_wall_s: float | None
    #: Failed write attempts since the start.
    write_errors: int
    #: Records this run wrote (into every file it wrote, kept or not since).
    records_written: int
    #: Records in memory waiting for the disk.
    records_pending: int
    #: Records that will never be in the file (memory bound reached while the disk failed, or
    #: still unwritable at close).
    records_dropped: int
    bytes_written: int
    #: Why records were dropped, in words (the disk refused them / the writer fell behind);
    #: None when none were.
    dropped_why: str | None = None
    #: With segments: the number of the one being written (`path`), how many this run
    #: started, how many older ones of the set were removed to keep `[record] keep`.
    segment: int | None = None
    segments_written: int = 1
    segments_removed: int = 0
    #: Records of this run in files that still exist (as last checked), and those files: how
    #: many, the first and the last (`path` is the one being written).
    records_kept: int | None = None
    files_kept: int = 1
    first_file: str | None = None
    #: Records of this run in segments removed to keep the budget.
    records_removed: int = 0
    #: Records of this run in files someone else deleted (gapwatch wrote on into new ones),
    #: and the names of those files (the first few).
    records_lost: int = 0
    files_lost: tuple[str, ...] = ()
    #: Records of this run in files someone else moved away (they still hold them: gapwatch
    #: wrote on into new ones), and those files (the first few: the name gapwatch wrote, and
    #: where it is now when that is known).
    records_moved: int = 0
    files_moved: tuple[str, ...] = ()

    def summary(self) -> str:
        """One phrase for a closing line: records kept (in files that exist), records lost (and
        why), the last error."""
        kept = self.records_written if self.records_kept is None else self.records_kept
        where = self.path
        if self.files_kept > 1 and self.first_file is not None:
            where = f"{self.first_file} .. {self.path} ({self.files_kept} files)"
        elif self.files_kept == 0:
            where = "no file (every file this run wrote is gone from its name)"
        text = f"{kept} records in {where}"
        if self.segment is not None:
            removed = ""
            if self.segments_removed:
                removed = f", {self.segments_removed} older removed to keep the budget"
                if self.records_removed:
                    removed += f" (with {self.records_removed} records of this run)"
            text += (f" (segment {self.segment}; {self.segments_written} written by this run"
                     f"{removed})")
        if self.records_lost:
            text += (f", {self.records_lost} records lost with {', '.join(self.files_lost)} "
                     "(deleted by something other than gapwatch while recording)")
        if self.records_moved:
            text += (f", {self.records_moved} records written to "
                     f"{', '.join(self.files_moved)}, moved away while recording (by something "
                     "other than gapwatch)")
        if self.records_dropped:
            text += f", {self.records_dropped} NOT recorded"
            if self.dropped_why:
                text += f" ({self.dropped_why})"
        if self.write_errors:
            text += f", {self.write_errors} failed writes"
        if self.error:
            text += f" (last error: {self.error})"
        return text


@dataclass(slots=True)
class _Drops:
    """Records dropped since the last notice about it (their count and data-time span)."""

    count: int
    first_mono_ns: int
    first_wall_s: float
    last_wall_s: float
    #: Of them, GPU and host samples.
    samples: int = 0
    #: Why, in words: the disk refused them, or the writer fell behind.
    why: str = ""


class _Snap:
    """A prover snapshot waiting to be written: encoded when written, in full or as a
    `ProverUnchanged` marker against the last snapshot written in the same file (a backlog may
    be written across a new segment: a marker must never point into another file)."""

    __slots__ = ("status", "size")

    def __init__(self, status: ProverStatus, size: int) -> None:
        self.status, self.size = status, size


#: What waits in memory: encoded lines, and prover snapshots (encoded when written).
_Item = bytes | _Snap


def _size(item: _Item) -> int:
    return len(item) if isinstance(item, bytes) else item.size


@dataclass(slots=True)
class _FileRecords:
    """A file this run wrote, and how many records it holds."""

    path: Path
    inode: tuple[int, int]
    records: int = 0
    #: Where the file is now, once it was moved away from `path` and found in its folder.
    now: Path | None = None

    def said(self) -> str:
        """A moved file for the closing line: the name written, and where it is now."""
        where = f"now {self.now.name}" if self.now is not None else "no longer in its folder"
        return f"{self.path.name} ({where})"


#: How many names of lost files the closing line gives.
_LOST_NAMES = 3


def _first_names(names: list[str]) -> tuple[str, ...]:
    """The first `_LOST_NAMES` of `names`, and how many more, for the closing line."""
    more = len(names) - _LOST_NAMES
    return tuple(names[:_LOST_NAMES]) + ((f"{more} more",) if more > 0 else ())


def _at_its_name(entry: _FileRecords) -> bool:
    """Whether the file this run wrote is still at the name it was written under."""
    try:
        st = os.lstat(entry.path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == entry.inode


def _at_names(kept: list[_FileRecords]) -> tuple[set[Path], list[_FileRecords]]:
    """The names of `kept` files still at them, and the files that are not, each file looked
    at once. Picking the others out by comparing each file with every one at its name cost
    steps growing as the square of the segments at close: 11 s for 20,000 (two weeks of
    `--rotate-age 1m` with nothing pruned)."""
    at = [_at_its_name(e) for e in kept]
    return ({e.path for e, here in zip(kept, at, strict=True) if here},
            [e for e, here in zip(kept, at, strict=True) if not here])


class _FolderInodes:
    """The names in a folder by inode number, each folder listed once however many files are
    looked for in it: listing it again for each file deleted or moved cost steps growing as
    the product of the two (an operator's `rm` of thousands of old segments while recording)."""

    def __init__(self) -> None:
        self._folders: dict[Path, dict[int, list[Path]]] = {}

    def named(self, folder: Path, inode: int) -> list[Path]:
        """The names in `folder` whose inode number is `inode` (none if it cannot be listed)."""
        names = self._folders.get(folder)
        if names is None:
            names = self._folders[folder] = {}
            try:
                with os.scandir(folder) as entries:
                    for e in entries:
                        names.setdefault(e.inode(), []).append(Path(e.path))
            except OSError:
                pass
        return names.get(inode, [])


def _found_in_folder(entry: _FileRecords, passed_over: set[Path],
                     folders: _FolderInodes) -> Path | None:
    """The name a file this run wrote has now in its folder (found by its inode: a file moved
    within the folder, `mv gw.jsonl a.jsonl`), None when it is not there.

    An inode number is reused once its file is deleted (ext4 gives it to the next file made
    in the folder): a segment deleted by hand was "moved away (now gw.000005.jsonl)", the
    run's own next segment, and its records counted twice. So a name in `passed_over` (this
    run's other files, at their names) is never it, and the file found must be a recording
    whose header names that inode (`file_inode`: the recorder wrote it into that file)."""
    for path in folders.named(entry.path.parent, entry.inode[1]):
        if path in passed_over:
            continue
        found = own_mark(path)
        if found is not None and (found[1].st_dev, found[1].st_ino) == entry.inode \
                and found[0].file_inode in (None, entry.inode[1]):
            return path
    return None


def _record_times(record: Record) -> tuple[int | None, float | None]:
    if isinstance(record, Gap):
        return record.start_mono_ns, record.start_s
    return getattr(record, "t_mono_ns", None), getattr(record, "t_wall_s", None)


class Recorder:
    """A session sink that writes every record to a JSON Lines file (gzip when `.gz`).

    Synchronous by default (writes happen in `on_record` once `flush_interval_s` has passed or
    `WAKE_BYTES` wait, and in `close()`); `start()` moves the writes to a thread of their
    own, so that a slow or failing disk never delays the caller (the sampler).
    """

    def __init__(
        self,
        target: str | Path | OutputPlan | SegmentPlan,
        flush_interval_s: float = _DEFAULTS.flush_interval_s,
        *,
        exists: ExistsPolicy = "refuse",
        max_pending_bytes: int = _DEFAULTS.max_pending_mib << 20,
        retry_max_s: float = _DEFAULTS.retry_max_s,
        on_problem: Callable[[Notice], None] | None = None,
        strict: bool = False,
        mark_set: bool = True,
    ) -> None:
        """
        Args:
            target: the file, or an `OutputPlan` from `check_output` (the runtime checks
                first), or a `SegmentPlan` from `check_segments`: a set of segments.
            exists: what to do when `target` is a path that exists (see `output_file`).
            on_problem: called (never under a lock of ours) with a Notice when writing fails,
                and when it resumes.
            strict: keep every record or raise (synchronous use: `write_recording`): a write
                that fails raises OSError from `on_record` or `close`, and nothing is dropped.
            mark_set: give a header without a set id one (a new set, or the one `--rotate`
                continues); False writes the header as given (`write_recording`: a conversion
                keeps its set).

        Raises:
            OutputRefused: the file cannot be created, exists, or is locked by another writer.
        """
        #: The set of segments this recording is, or None (one file).
        self.segments = target if isinstance(target, SegmentPlan) else None
        if isinstance(target, SegmentPlan):
            plan = OutputPlan(segment_name(target.base, target.first), False)
        else:
            plan = target if isinstance(target, OutputPlan) else check_output(target, exists)
        self.file = OutputFile(plan)
        self.path = plan.path
        self._mark_set = mark_set
        self._continues = plan.continues
        #: The files this run wrote that still exist (as last checked), oldest first.
        self._kept = [_FileRecords(self.path, self.file.inode)]
        self.records_removed = 0
        self.records_lost = 0
        self._files_lost: list[str] = []
        #: The files this run wrote that someone moved away (they hold their records still).
        self._moved: list[_FileRecords] = []
        #: The header is written first in every file, before its first record.
        self._needs_header = False
        #: Keys of the notices said once per run (a planted name, a file left in place).
        self._said: set[str] = set()
        #: Why the next segment could not be started (said once until it starts).
        self._rotation_error: str | None = None
        self._segment = self.segments.first if self.segments is not None else 0
        self._segment_started_ns = time.monotonic_ns()
        #: Segments this run started, and older ones of the set removed to keep `keep`.
        self.segments_written = 1
        self.segments_removed = 0
        #: The session's header, set by `on_header` (each file gets its own line of it).
        self._header: SessionHeader | None = None
        #: The last snapshot written in full per prover, in this file (see `ProverUnchanged`);
        #: the writer's, under _io.
        self._last_prover: dict[str, ProverStatus] = {}
        self._gzip = self.path.name.endswith(".gz")
        self._flush_interval_s = flush_interval_s
        self._max_pending_bytes = max_pending_bytes
        #: Pending bytes that wake the writer, or make a recorder without one write at once:
        #: well below the share log lines may take, so that none is dropped on a healthy disk.
        self._batch_bytes = min(WAKE_BYTES, int(max_pending_bytes * LOG_SHARE) // 2)
        self._retry_max_s = retry_max_s
        self._on_problem = on_problem
        self._strict = strict
        # _lock guards the pending buffer and the counters; _io the file and the compressor.
        # _io is taken first when both are needed; neither is held while on_problem runs.
        self._lock = threading.Lock()
        self._io = threading.Lock()
        self._pending: list[_Item] = []
        self._pending_bytes = 0
        self._pending_records = 0
        self._drops: _Drops | None = None
        #: Reports waiting for `_deliver` (queued under the locks, delivered outside them).
        self._outbox: list[tuple[NoticeLevel, str]] = []
        self._end = 0
        #: The gzip level of the member being written (`HURRY_LEVEL` while behind).
        self._z_level = _GZIP_LEVEL
        self._hurry = False
        self._z: Any = self._new_member()
        self._member_bytes = 0
        self._state: RecordingState = "writing"
        self._error: str | None = None
        self._failing_since_wall_s: float | None = None
        self._retry_s = 0.0
        self._next_write_ns = time.monotonic_ns() + int(flush_interval_s * 1e9)
        self._last_times: tuple[int, float] = (time.monotonic_ns(), time.time())
        self.write_errors = 0
        self.records_written = 0
        self.records_dropped = 0
        self.closed = False
        self._stop = threading.Event()
        #: Set to make the writer thread write now (a burst waits, or it is stopping).
        self._wake = threading.Event()
        #: Records offered per second, measured over whole seconds (for "N records/s in").
        self._rate_start_ns = time.monotonic_ns()
        self._rate_count = 0
        self.records_per_s = 0.0
        #: Why the latest records were dropped (`RecordingStatus.dropped_why`).
        self._dropped_why: str | None = None
        #: True from the first record dropped for a writer that fell behind until it caught up.
        self._behind = False
        self._last_drop_ns = 0
        self._thread: threading.Thread | None = None
        #: Hears the writer thread die, and restarts it (what is pending stays in this object).
        self.watch: ThreadWatch = UNWATCHED

    # -- the sink -------------------------------------------------------------------------------

    def on_header(self, header: SessionHeader) -> None:
        """The session's header, written first in every file, with the recording set's id (a
        set of segments: the set's; one file: the header's own, or a new one)."""
        if self.segments is not None:
            choice = set_id_for(self.segments, header.host)
            header = structs.replace(header, set_id=choice.set_id)
            self.segments = dataclasses.replace(self.segments, set_id=choice.set_id)
            if choice.said is not None:
                with self._lock:
                    self._outbox.append(("warning", choice.said))
        elif header.set_id is None and self._mark_set:
            header = structs.replace(header, set_id=self._continued(header.host) or new_set_id())
        self._header = header
        with self._io:
            self._needs_header = True
            try:
                self._ensure_header()
            except OSError as exc:
                self._failed(exc)
        if self.segments is not None:
            with self._io:
                self._prune()  # the budget holds from the start: earlier runs' segments count
        self._deliver()

    def _continued(self, host: str) -> str | None:
        """`--rotate`: the set id of the recording this one follows (same host and user)."""
        return inherited_set_id([self._continues], host) if self._continues else None

    def _ensure_header(self) -> None:
        """Under _io: the header, if this file has none yet (every file reads on its own).
        Raises OSError."""
        if self._needs_header:
            # The header is a gzip member of its own: the file can always be cut back to it.
            self._write(self._header_line(), records=0, finish=True)
            self._needs_header = False

    def _header_line(self) -> bytes:
        """The header for the file being written: a recording's own names the file's inode
        (`file_inode`), so that a copy of the file is known for one and never taken for a
        segment gapwatch wrote (`set_mark.is_copy`); `write_recording`'s is as given."""
        header = self._header
        if header is None:
            return b""  # no header given (yet): none written, as before it comes
        if self._mark_set:
            header = structs.replace(header, file_inode=self.file.inode[1])
        return encode_line(header)

    def on_record(self, record: Record) -> None:
        if isinstance(record, Gap) and record.is_open:
            # An open gap's versions (published as it grows) carry nothing its closing (or
            # retracted) version does not, and every reader computes gaps again anyway.
            return
        line = encode_line(record)
        item: _Item = _Snap(record, len(line)) if isinstance(record, ProverStatus) else line
        t_mono, t_wall = _record_times(record)
        sample = isinstance(record, _SAMPLES)
        now = time.monotonic_ns()
        with self._lock:
            if self.closed:
                return
            if t_mono is not None and t_wall is not None:
                self._last_times = (t_mono, t_wall)
            self._rate_count += 1
            if now - self._rate_start_ns >= 1_000_000_000:
                self.records_per_s = self._rate_count * 1e9 / (now - self._rate_start_ns)
                self._rate_start_ns, self._rate_count = now, 0
            limit = self._max_pending_bytes if sample else int(self._max_pending_bytes * (
                LOG_SHARE if isinstance(record, LogEvent) else OTHERS_SHARE))
            if not self._strict and self._pending_bytes + len(line) > limit:
                self._drop(t_mono, t_wall, sample)
                return
            self._pending.append(item)
            self._pending_bytes += len(line)
            self._pending_records += 1
            burst = self._pending_bytes >= self._batch_bytes
            if self._thread is not None:
                if burst and self._state == "writing":
                    self._wake.set()
                return
            due = burst or now >= self._next_write_ns
            retry_due = now >= self._next_write_ns
        # Synchronous: write here. While the disk fails, only when a retry is due.
        if due and (self._state == "writing" or retry_due):
            if not self.flush() and self._strict:
                raise OSError(f"{self.path}: {self._error}")

    def _line(self, item: _Item) -> bytes:
        """Under _io: the line of a waiting item. A snapshot that equals the last one of its
        prover written in this file but for its times is written as a `ProverUnchanged` marker
        (a few dozen bytes instead of kilobytes: an idle prover answers the same every
        second); the reader gives the snapshot back."""
        if isinstance(item, bytes):
            return item
        status = item.status
        marker = ProverUnchanged.of(status, self._last_prover.get(status.prover))
        if marker is not None:
            return encode_line(marker)
        self._last_prover[status.prover] = status
        return encode_line(status)

    def close(self) -> None:
        """Write what is pending and end the file whole (see the module docstring). Safe to
        call twice."""
        if self.closed:
            return
        self.stop_writer()
        with self._io:
            complete = self._write_pending(finish=True)
            if not complete and not self._end_whole():
                with self._lock:
                    self._error = (f"{self._error}; the last gzip member has no trailer (its "
                                   "records read, but readers say the file ends early)")
            with self._lock:
                if self._pending_records:
                    self._dropped_why = "the disk refused them"
                self.records_dropped += self._pending_records
                self._pending, self._pending_bytes, self._pending_records = [], 0, 0
                self.closed = True
                self._state = "closed"
            moved = self.file.whereabouts().data_kept  # the file still exists (somewhere)
            self.file.close()
            self._check_kept(moved)
            if self._end == 0 and self.file.remove_empty():
                # Not even the header could be written (a disk full from the start): an empty
                # file is no recording, and `report` would call it "not a gapwatch recording".
                with self._lock:
                    self._error = (f"{self._error}; nothing could be written, the empty file "
                                   "was removed")
                    self._kept = [e for e in self._kept if e.inode != self.file.inode]
        self._deliver()
        if self._strict and not complete:
            raise OSError(f"{self.path}: not every record was written ({self._error})")

    # -- the writer thread ----------------------------------------------------------------------

    def start(self) -> None:
        """Write from a thread of our own from now on (the runtime does this)."""
        if self._thread is None:
            self._thread = self.watch.start("gapwatch-recorder", self._run, restart=True,
                                            stop=self._stop)

    def stop_writer(self, timeout_s: float = 5.0) -> None:
        """Stop the writer thread (what is pending stays for `close()`). Call it before taking a
        lock that `on_problem` takes too (the runtime stops it before closing the session)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        """Write every `flush_interval_s`, when a burst waits (`WAKE_BYTES`), and, while the
        disk fails, at each retry (a burst does not make it retry sooner)."""
        while not self._stop.is_set():
            with self._lock:
                delay_ns = self._next_write_ns - time.monotonic_ns()
            if delay_ns > 0:
                self._wake.wait(delay_ns / 1e9)
            self._wake.clear()
            if self._stop.is_set():
                return
            with self._lock:
                waiting = self._state == "failing" and time.monotonic_ns() < self._next_write_ns
            if not waiting:
                self.flush()

    def flush(self) -> bool:
        """Write what is pending now; True when the file holds every record so far."""
        with self._io:
            ok = self._write_pending(finish=False)
        self._deliver()
        return ok

    # -- status ---------------------------------------------------------------------------------

    def status(self) -> RecordingStatus:
        with self._lock:
            return RecordingStatus(
                path=str(self.path), state=self._state, error=self._error,
                failing_since_wall_s=self._failing_since_wall_s, write_errors=self.write_errors,
                records_written=self.records_written, records_pending=self._pending_records,
                records_dropped=self.records_dropped, bytes_written=self._end,
                dropped_why=self._dropped_why,
                segment=self._segment if self.segments is not None else None,
                segments_written=self.segments_written, segments_removed=self.segments_removed,
                records_kept=sum(e.records for e in self._kept), files_kept=len(self._kept),
                first_file=str(self._kept[0].path) if self._kept else None,
                records_removed=self.records_removed, records_lost=self.records_lost,
                files_lost=_first_names(self._files_lost),
                records_moved=sum(e.records for e in self._moved),
                files_moved=_first_names([e.said() for e in self._moved]),
            )

    # -- writing (under _io) --------------------------------------------------------------------

    def _new_member(self) -> Any:
        self._z_level = HURRY_LEVEL if self._hurry else _GZIP_LEVEL
        return zlib.compressobj(self._z_level, zlib.DEFLATED, _GZIP_WBITS) if self._gzip \
            else None

    def _write_pending(self, finish: bool) -> bool:
        self._check_file()
        with self._lock:
            # A backlog makes the next members faster to compress (see the module docstring).
            self._hurry = self._pending_bytes >= self._max_pending_bytes // 4
            chunks = self._pending
            self._pending, self._pending_bytes, self._pending_records = [], 0, 0
            drops, self._drops = self._drops, None
        if drops is not None:
            # The drop note goes where the hole is: after what was waiting, before what follows.
            chunks.append(self._drop_note(drops))
        done = 0
        ok = True
        # In batches, so that a disk with a little room takes what fits and the rest waits;
        # a segment that is full is closed between two batches, so that a backlog (after an
        # outage) is written within the budget, never into one huge segment.
        for batch, records in _batches(chunks, WRITE_BATCH_BYTES):
            last = done + len(batch) == len(chunks)
            provers = dict(self._last_prover)
            try:
                self._rotate_if_due()
                self._ensure_header()
                self._write(b"".join(map(self._line, batch)), records=records,
                            finish=finish and last)
            except OSError as exc:
                self._last_prover = provers  # the batch is undone: so are its snapshots
                rest = chunks[done:]
                if drops is not None:
                    rest.pop()  # the note is made again, with the drops merged, next time
                with self._lock:
                    self._pending[:0] = rest
                    self._pending_bytes += sum(map(_size, rest))
                    self._pending_records += len(rest)
                    self._drops = _merge(drops, self._drops)
                self._failed(exc)
                ok = False
                break
            done += len(batch)
        if ok and not chunks:
            try:
                self._ensure_header()
                if finish and self._member_bytes:
                    self._write(b"", records=0, finish=True)  # the member's trailer alone
            except OSError as exc:
                self._failed(exc)
                ok = False
        if not finish:
            # After a failed write too: a new segment, and the oldest removed, make room.
            self._rotate_if_due()
        with self._lock:
            caught_up = (ok and self._behind and self._pending_bytes < self._batch_bytes
                         and time.monotonic_ns() - self._last_drop_ns > CAUGHT_UP_S * 1e9)
            if caught_up:
                self._behind = False
                self._outbox.append(("warning", f"recording caught up: the writer keeps pace "
                                     f"again ({self.path})"))
            recovered = ok and self._state == "failing"
            if recovered:
                since = self._failing_since_wall_s
                self._state, self._error, self._failing_since_wall_s = "writing", None, None
            self._next_write_ns = time.monotonic_ns() + int(
                (self._flush_interval_s if ok else self._retry_s) * 1e9)
            if recovered:
                outage = f" after {time.time() - since:.0f} s" if since is not None else ""
                lost = (f"; {drops.count} records were dropped while it failed (noted in the "
                        "file)" if drops is not None else "; nothing was lost")
                self._outbox.append(("warning", f"recording resumed{outage}{lost} ({self.path})"))
        return ok

    def _write(self, data: bytes, records: int, finish: bool) -> None:
        """Append `data`; on OSError the file is cut back and the deflate state kept as before."""
        if self._gzip:
            if self._member_bytes == 0 and self._z_level != (
                    HURRY_LEVEL if self._hurry else _GZIP_LEVEL):
                self._z = self._new_member()  # nothing in it yet: start it at the level needed
            z = self._z.copy()  # the stream's state before this write, kept if the write fails
            full = finish or self._member_bytes + len(data) >= MEMBER_BYTES
            out = z.compress(data) + z.flush(zlib.Z_FINISH if full else zlib.Z_SYNC_FLUSH)
        else:
            z, full, out = None, False, data
        start = self._end
        try:
            self.file.write_at(start, out)
        except OSError:
            self.file.truncate_to(start)
            raise
        self._end = start + len(out)
        with self._lock:
            self.records_written += records
            self._kept[-1].records += records
        if full:
            self._z = self._new_member()
            self._member_bytes = 0
        else:
            self._z = z
            self._member_bytes += len(data)

    # -- the file gone, segments (under _io) ----------------------------------------------------

    def _say_once(self, key: str, level: NoticeLevel, message: str) -> None:
        if key not in self._said:
            self._said.add(key)
            with self._lock:
                self._outbox.append((level, message))

    def _check_file(self) -> None:
        """Before each write: is the file still where it was created? One deleted, moved or
        replaced by someone else is said, and the recording goes on into a new file (the same
        name when it is free, else the next free one); what the gone file held is counted
        lost unless it still exists elsewhere (moved)."""
        if self.closed:
            return
        where = self.file.whereabouts()
        if where.here:
            return
        old, entry = self.path, self._kept[-1]
        nxt = self._reopen(old, where.data_kept)
        if nxt is None:
            return  # said; the writes go on into the file we hold, tried again next time
        what = ("moved away (its records are wherever it went)" if where.data_kept else
                f"deleted ({entry.records} records of this run lost with it)")
        if where.name_taken:
            what += " and another file put in its place (left as it is)"
        with self._lock:
            if where.data_kept:
                self._moved.append(entry)
            else:
                self.records_lost += entry.records
                self._files_lost.append(old.name)
            self._kept.pop()
            self._outbox.append(("error", f"recording: {old} was {what}, by something other "
                                 f"than gapwatch; recording again into {nxt[1].path}"))
        self._switch_to(nxt[0], nxt[1])

    def _reopen(self, gone: Path, moved: bool) -> tuple[int, OutputFile] | None:
        """A new file for a recording whose file went away (`moved`: it still exists under
        another name): the next segment, or the same name, else the next free `--rotate` name
        (whatever was put in its place, a FIFO too, is passed over: `create_beside`)."""
        if self.segments is not None:
            return self._open_segment(self._segment + 1)
        try:
            return 0, create_beside(gone)
        except OutputRefused as exc:
            how = ("moved away", "moved") if moved else ("deleted", "deleted")
            self._say_once(f"reopen:{exc}", "error", f"recording: {gone} was {how[0]} and no "
                           f"new file can be made ({exc}); writing on into the {how[1]} file")
            return None

    def _check_kept(self, current_exists: bool) -> None:
        """At the end: this run's files that are no longer at their names are counted apart,
        so that the closing line names only files that are: moved (found in their folder by
        their inode; the file being written, one that still exists, wherever it went) or
        lost (deleted). The moved files say where they are now."""
        here, gone = _at_names(self._kept)
        folders = _FolderInodes()
        for entry in gone:
            entry.now = _found_in_folder(entry, here, folders)
        leaving = {id(e) for e in gone}
        with self._lock:  # the kept list in one pass: a `remove` each was a search each
            self._kept[:] = [e for e in self._kept if id(e) not in leaving]
            for entry in gone:
                if entry.now is not None or (current_exists and entry.path == self.path
                                             and entry.inode == self.file.inode):
                    self._moved.append(entry)
                else:
                    self.records_lost += entry.records
                    self._files_lost.append(entry.path.name)
        for entry in self._moved:
            if entry.now is None:
                entry.now = _found_in_folder(entry, here, folders)

    def _rotate_if_due(self) -> None:
        """Start the next segment once this one holds `rotate_bytes` or is `rotate_age_s` old
        (a segment may pass the size by one batch, 256 KiB), then remove the oldest segments of
        the set beyond `keep`. A segment that holds nothing yet is never closed."""
        plan = self.segments
        if plan is None or self._end == 0:
            return
        age_s = (time.monotonic_ns() - self._segment_started_ns) / 1e9
        if not ((plan.rotate_bytes is not None and self._end >= plan.rotate_bytes)
                or (plan.rotate_age_s is not None and age_s >= plan.rotate_age_s)):
            return
        nxt = self._open_segment(self._segment + 1)
        if nxt is None:
            return  # said; records go on into this segment, tried again at the next write
        self._end_whole()  # this segment ends whole (its trailer; best effort on a full disk)
        self._switch_to(*nxt)
        self._prune()

    def _open_segment(self, first: int) -> tuple[int, OutputFile] | None:
        """The next segment from number `first` on: a name someone else's file (or link) has
        is skipped, said once and left as it is. None when no segment can be made (said
        once)."""
        plan = self.segments
        assert plan is not None
        for n in range(first, LAST_SEGMENT + 1):
            path = segment_name(plan.base, n)
            try:
                nxt = OutputFile(OutputPlan(path, False))
            except NameTaken:
                self._say_once(f"taken:{path}", "warning", f"recording: {path} exists and "
                               "gapwatch did not write it now; left as it is, the recording "
                               "goes on into the next free segment name")
                continue
            except OutputRefused as exc:
                if self._rotation_error is None:
                    self._rotation_error = str(exc)
                    with self._lock:
                        self._outbox.append(("error", f"recording: cannot start the next "
                                             f"segment ({exc}); writing on into {self.path}, "
                                             "trying again at each write"))
                return None
            if self._rotation_error is not None:
                self._rotation_error = None
                with self._lock:
                    self._outbox.append(("warning", f"recording: the next segment started "
                                         f"after all ({path})"))
            return n, nxt
        self._say_once("no-name", "error", f"recording: no free segment name after {self.path}"
                       "; writing on into it")
        return None

    def _switch_to(self, number: int, nxt: OutputFile) -> None:
        """Write from now on into `nxt` (segment `number`), its header first."""
        self.file.close()
        with self._lock:
            self.file, self.path = nxt, nxt.path
            if self.segments is not None:
                self._segment = number
                self.segments_written += 1
            self._segment_started_ns = time.monotonic_ns()
            self._kept.append(_FileRecords(nxt.path, nxt.inode))
        self._last_prover = {}  # every file reads on its own: full snapshots first
        self._end, self._z, self._member_bytes = 0, self._new_member(), 0
        self._needs_header = True

    def _prune(self) -> None:
        """Remove the oldest segments of the set (earlier runs' too) beyond `keep`: the budget.
        Only files gapwatch wrote for this set are removed (`segments.removable`); anything
        else named like a segment is said once and left."""
        plan = self.segments
        assert plan is not None
        if not plan.keep:
            return
        ours = []
        for verdict in prune_verdicts(plan.base, self._segment, plan.set_id):
            if verdict.why_not is None:
                ours.append(verdict)
            else:
                path = verdict.path
                self._say_once(f"left:{path}", "warning", f"recording: {path} is named like a "
                               f"segment of this recording but is {verdict.why_not}; left as "
                               "it is, never removed")
        excess = max(0, len(ours) - (plan.keep - 1))
        removed: list[Verdict] = []
        for verdict in ours:
            if len(removed) < excess and remove(verdict):
                removed.append(verdict)
            else:
                verdict.release()
        if removed:
            self._forget(removed, plan.keep)

    def _forget(self, removed: list[Verdict], keep: int) -> None:
        """Count removed segments, and this run's records in them."""
        gone = [e for e in map(self._written_as, removed) if e is not None]
        with self._lock:
            self.segments_removed += len(removed)
            for entry in gone:
                self.records_removed += entry.records
                self._kept.remove(entry)
            self._outbox.append(("info", f"recording: {', '.join(v.path.name for v in removed)}"
                                 f" removed, to keep the newest {keep} segments ({self.path})"))

    def _written_as(self, verdict: Verdict) -> _FileRecords | None:
        """The file of this run a removed segment was, if any: the one written under its name
        with its inode, else one of its inode no longer at its own name (moved to it). By the
        inode alone, a segment deleted by hand (whose inode number the next segment took) was
        counted "removed to keep the budget" with it, never lost."""
        same = [e for e in self._kept if e.inode == verdict.inode]
        return next((e for e in same if e.path == verdict.path), None) or next(
            (e for e in same if not _at_its_name(e)), None)

    def _end_whole(self) -> bool:
        """The final write failed: end the gzip member with its trailer (~10 bytes: an empty
        last block, CRC and length), which fits in the last block's slack on almost any file
        system. True when the file now ends whole (plain JSON Lines always ends on a line)."""
        if not self._gzip or self._member_bytes == 0:
            return True
        trailer = self._z.copy().flush(zlib.Z_FINISH)
        try:
            self.file.write_at(self._end, trailer)
        except OSError:
            # Not even that fits. The member's records stay (every one of them reads); the
            # reader will say the file "ends early". Losing them to avoid that would be worse.
            self.file.truncate_to(self._end)
            return False
        self._end += len(trailer)
        return True

    # -- failures (counters under _lock, reports outside it) ------------------------------------

    def _drop(self, t_mono: int | None, t_wall: float | None, sample: bool) -> None:
        """Under _lock: one record that does not fit in memory."""
        self.records_dropped += 1
        self._last_drop_ns = time.monotonic_ns()
        why = self._why()
        self._dropped_why = why
        if self._state == "writing" and not self._behind:
            self._behind = True
            self._outbox.append((
                "warning", f"recording: {why}; log lines are dropped first, GPU and host "
                f"samples last, every one counted (noted in the file) ({self.path})"))
        mono, wall = (t_mono, t_wall) if t_mono is not None and t_wall is not None \
            else self._last_times
        if self._drops is None:
            self._drops = _Drops(0, mono, wall, wall)
        self._drops.count += 1
        self._drops.samples += sample
        self._drops.last_wall_s = wall
        self._drops.why = why

    def _why(self) -> str:
        """Under _lock: why records are being dropped now."""
        waiting = f"{self._max_pending_bytes / 2**20:g} MiB were waiting"
        if self._state == "failing":
            return f"the disk refused them and {waiting}"
        rate = self.records_per_s
        if not rate:  # not a whole second yet: what came so far
            elapsed_ns = max(1_000_000, time.monotonic_ns() - self._rate_start_ns)
            rate = self._rate_count * 1e9 / elapsed_ns
        return f"the writer fell behind ({rate:.0f} records/s in) and {waiting}"

    def _drop_note(self, drops: _Drops) -> bytes:
        samples = f", {drops.samples} of them GPU or host samples" if drops.samples else \
            " (no GPU or host sample among them)"
        notice = Notice(drops.first_mono_ns, drops.first_wall_s, "error",
                        f"recording gap: {drops.count} records were not written "
                        f"({drops.last_wall_s - drops.first_wall_s:.1f} s of data{samples}): "
                        f"{drops.why}")
        return encode_line(notice)

    def _failed(self, exc: OSError) -> None:
        error = exc.strerror or str(exc)
        with self._lock:
            self.write_errors += 1
            first = self._state != "failing"
            if first or error != self._error:
                self._outbox.append((
                    "error", f"recording failed: {error}; sampling, detection and /metrics go "
                    f"on; retrying (every {self._retry_max_s:g} s at most), up to "
                    f"{self._max_pending_bytes / 2**20:g} MiB of records kept meanwhile "
                    f"({self.path})"))
            self._state, self._error = "failing", error
            if first:
                self._failing_since_wall_s = time.time()
                self._retry_s = 1.0
            else:
                self._retry_s = min(self._retry_max_s, self._retry_s * 2)

    def _deliver(self) -> None:
        """Hand queued reports to `on_problem`, holding no lock of ours: it enters the session,
        whose lock a thread inside `on_record` or `close` may hold."""
        with self._lock:
            reports, self._outbox = self._outbox, []
            t_mono, t_wall = self._last_times
        if self._on_problem is not None:
            for level, message in reports:
                self._on_problem(Notice(t_mono, t_wall, level, message))


def _batches(chunks: list[_Item], max_bytes: int) -> Iterator[tuple[list[_Item], int]]:
    """Consecutive runs of `chunks` of about `max_bytes` each (at least one chunk a run), with
    their length."""
    start, size = 0, 0
    for i, chunk in enumerate(chunks):
        if size and size + _size(chunk) > max_bytes:
            yield chunks[start:i], i - start
            start, size = i, 0
        size += _size(chunk)
    if start < len(chunks):
        yield chunks[start:], len(chunks) - start


def _merge(a: _Drops | None, b: _Drops | None) -> _Drops | None:
    if a is None or b is None:
        return a or b
    return _Drops(a.count + b.count, a.first_mono_ns, a.first_wall_s, b.last_wall_s,
                  a.samples + b.samples, b.why or a.why)


def write_recording(path: str | Path, header: SessionHeader, records: Iterable[Record]) -> int:
    """Write a whole recording at once (snapshots, CSV conversion, tests), replacing `path`:
    every record, or OSError (a full disk: the file then holds what was written, whole).
    Returns how many records are in the file."""
    rec = Recorder(path, exists="replace", strict=True, mark_set=False)
    try:
        rec.on_header(header)
        if rec.status().state == "failing":
            raise OSError(f"{rec.path}: {rec.status().error}")
        for r in records:
            rec.on_record(r)
    finally:
        rec.close()
    return rec.records_written
