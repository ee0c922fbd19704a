"""Reading recordings: the header, then validated records; bad lines counted, never fatal.

Who calls it: the replay driver (`replay:FILE`), `gapwatch report`/`export` (through
`gapwatch.offline`), the parallel report's workers, and the tests. The writer is
`gapwatch.sinks.recorder`; trace CSVs are read by `gapwatch.sources.trace_csv`; `read_any`
(`gapwatch.sources.files`) picks between the two by name.

Format (schema_version 1): line 1 is the `SessionHeader` (JSON object with `"type": "header"`);
every further line is one record, tagged by its `"type"` (`gpu`, `host`, `log`, `gap`, ...: the
Structs of `gapwatch.core.models`), decoded by the record codec (`gapwatch.core.codec`) in any
key order. `.gz` files are a series of gzip members, each write ending with Z_SYNC_FLUSH, so a
file cut by `kill -9` still reads up to its last flush (the reader stops cleanly at a truncated
end and counts it).

Reading never raises for a bad line: it is skipped, counted in `Recording.counters`, and the first
few problems are kept in `Recording.problems` for the user. Numbers are bounded while decoding
(`gapwatch.core.bounds`: GPU indices, 64-bit integers, Unix times up to 2262): a record outside
them is a bad record. Header values that cannot be used (a period of 0) are replaced and said.
Only a file that cannot be opened, or whose first line is not a header, is an error
(`RecordingError`).
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import stat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from statistics import median
from typing import IO, Any, Final, Protocol, cast

from msgspec import structs

from gapwatch.base.gzip_stream import GZIP_HEAD_BYTES, GZIP_WBITS, OUT_BYTES, inflated, is_gzip
from gapwatch.base.input_files import FIFO_FIRST_BYTES_S, NamedReads, NotWhole, open_whole
from gapwatch.base.writer_lock import locked_by_another
from gapwatch.config import Config
from gapwatch.core.bounds import (
    DEFAULT_PERIOD_MS,
    INT64_MAX,
    MAX_LINK_BYTES_PER_S,
    MIN_LINK_BYTES_PER_S,
    gpu_index,
    usable_period_ms,
    wall_s_ok,
)
from gapwatch.core.codec import (
    TYPE_LAST_GPU_SUFFIX,
    DecodeError,
    decode_json,
    decode_record,
    decode_repaired,
    decode_unchanged,
    header_from_fields,
)
from gapwatch.core.models import (
    SCHEMA_VERSION,
    GpuInfo,
    GpuSample,
    HostSample,
    ProverStatus,
    Record,
    SessionHeader,
    link_bytes_per_s,
)
from gapwatch.core.sizes import cut_text
from gapwatch.cuzk.post_deadlines import POST_KEYS, quoted, recorded_problem
from gapwatch.sources.gzip_lines import (
    MAX_LINE_BYTES,
    TOO_LONG,
    GzipLines,
    PlainLines,
)
from gapwatch.sources.isolated_times import without_isolated_times
from gapwatch.sources.time_window import (
    TimeWindow,
    pieces_before,
    seek_plain,
    wall_of_text,
    within,
)

MAX_PROBLEMS: Final = 20
#: Characters of one problem message kept.
PROBLEM_CHARS: Final = 500


class PassedOver:
    """A GPU sample line passed over undecoded (another worker's GPU) that was at or after the
    time its reader was asked to wake at (`read_recording`'s `wake_at`): only its wall time,
    read from the line's text. The parallel report feeds the `--log` events up to it there, as
    one process feeds them before any GPU sample at or after their time."""

    __slots__ = ("t_wall_s",)

    def __init__(self, t_wall_s: float) -> None:
        self.t_wall_s = t_wall_s


class WakeAt:
    """The wall time a split report's worker waits for, shared by its reader and its detection
    loop: the loop keeps `t_wall_s` at the time of its next `--log` event (infinity: none),
    and the reader hands out every line it passes over at or after it as a `PassedOver`."""

    __slots__ = ("t_wall_s",)

    def __init__(self, t_wall_s: float = float("inf")) -> None:
        self.t_wall_s = t_wall_s


#: The end of a recording read for its last time (`last_wall_s`): a few of its longest lines.
TAIL_BYTES: Final = 1 << 16
#: A gzip recording's end read for its last member (the recorder's members hold ~1 MiB of
#: JSON each, ~100-300 KiB compressed), the member starts tried there, and what they may give
#: in all (a tail of small bombs costs no more than one).
GZIP_TAIL_BYTES: Final = 1 << 20
GZIP_TAIL_TRIES: Final = 64
GZIP_TAIL_OUT_BYTES: Final = 8 << 20
_GZIP_MEMBER: Final = b"\x1f\x8b\x08"


def last_wall_s(path: str | Path) -> float | None:
    """The wall time of the last whole line of a recording file that names one (a progress
    line's end: `gapwatch.offline.progress`), read from its end: a plain file's last
    `TAIL_BYTES`, a gzip file's last member (the recorder writes members that inflate on their
    own: the last one that does, within `GZIP_TAIL_BYTES` of the end), never decoded as
    records; None for a stream, or an end that names no usable time. Never raises."""
    try:
        # Only a regular file is opened: opening a FIFO would wake a writer waiting for its
        # reader, for nothing.
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        gzipped = is_gzip(os.pread(fd, GZIP_HEAD_BYTES, 0))
        start = max(0, st.st_size - (GZIP_TAIL_BYTES if gzipped else TAIL_BYTES))
        tail = os.pread(fd, st.st_size - start, start)
    except OSError:
        return None
    finally:
        os.close(fd)
    if gzipped:
        return _last_member_wall_s(tail)
    return _last_wall_in(tail.splitlines(keepends=True)[1 if start else 0:])


def _last_member_wall_s(tail: bytes) -> float | None:
    """The last time in the last gzip member of `tail` that inflates (a member's start is
    looked for from the end; what only looks like one does not inflate, or names no time)."""
    at, left = len(tail), GZIP_TAIL_OUT_BYTES
    for _ in range(GZIP_TAIL_TRIES):
        at = tail.rfind(_GZIP_MEMBER, 0, at)
        if at < 0 or left <= 0:
            return None
        try:
            text = zlib.decompressobj(GZIP_WBITS).decompress(tail[at:], left)
        except zlib.error:
            continue
        left -= len(text)
        t = _last_wall_in(text.splitlines(keepends=True))
        if t is not None:
            return t
    return None


def _last_wall_in(lines: list[bytes]) -> float | None:
    """The usable wall time of the last of `lines` that names one."""
    for line in reversed(lines):
        t = wall_of_text(line)
        if t is not None and wall_s_ok(t):
            return t
    return None


class RecordingError(Exception):
    """The file cannot be used as a recording at all (the message is for the user)."""


@dataclass(frozen=True, slots=True)
class Reading:
    """How a recording's lines are read: one value its caller hands to every file it opens (a
    recording set's files are each read alike; `files.read_any`, `recording_set.read_set`).

    Attributes:
        skip_prefixes: lines starting with these are passed over undecoded (the parallel
            report's workers: the other workers' GPUs).
        skip_type_last: and lines of the shape written before the codec (see `_records`).
        keep_problem_lines: keep every problem with its line (`Recording.problem_lines`).
        wake_at: a wall time the caller moves on (`WakeAt`): lines passed over at or after
            it come out as `PassedOver` among the records (the parallel report with
            logs; typed as records for its one caller, `report_parallel`, which reads them).
        window: only the records inside it (`gapwatch.sources.time_window`): a plain file
            read from where the window starts, every line keeping its number. None: all.
    """

    skip_prefixes: tuple[bytes, ...] = ()
    skip_type_last: tuple[bytes, ...] = ()
    keep_problem_lines: bool = False
    wake_at: WakeAt | None = None
    window: TimeWindow | None = None


#: Every line, every record: what a plain `read_any(path)` asks for.
WHOLE: Final = Reading()


@dataclass(frozen=True, slots=True)
class StillWritten:
    """A recording read to its end while another process held its writer's lock: the line
    read to, why more may come, and the problem's words as kept among `Recording.problems`
    (a report says it once, as its warning, with these facts: `said_of_input`)."""

    line_no: int
    why: str
    said: str


@dataclass
class Recording:
    """A recording being read: the header, a lazy record iterator, and what went wrong."""

    path: Path
    header: SessionHeader
    records: Iterator[Record]
    counters: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    #: Line number of the record last yielded (the header is line 1).
    line_no: int = 1
    #: The number of the last line read, once the reader has ended (its last record may lie
    #: before it: a line it passed over, a bad one): how many lines the file had, read whole.
    lines_read: int = 1
    #: Every problem as (line, counter, message), when the reader was asked to keep them
    #: (`Reading(keep_problem_lines=True)`): the parallel report merges the readings of
    #: its workers by line, so that a bad line read by two of them is counted once.
    problem_lines: list[tuple[int, str, str]] | None = None
    #: Added to the line of every problem kept: a set's files each get a base of their own
    #: (`gapwatch.sources.recording_set`), so that the lines sort in reading order.
    problem_line_base: int = 0
    #: The files read, in order (one, or a set of segments: `gapwatch.sources.recording_set`).
    files: list[Path] = field(default_factory=list)
    #: Runs of gapwatch joined (segments of one run share a header; a restart is a new run).
    runs: int = 1
    #: The run (0: the first) of the record last given: the set reader moves it on where its
    #: stream reaches each later run's first record (`recording_set._records`), by position,
    #: not time (a run's clock may overlap the one before). What the report scopes "once a
    #: run" by (a GPU state is news once per GPU per run: `health.StatesSeen`).
    run: int = 0
    #: The file (of a set: its last) was still being written when read to its end; None: not.
    still_written: StillWritten | None = None

    def close(self) -> None:
        """Stop reading before the end: the file (a set's segment) its lazy records hold open
        is closed now, not when the generator is collected (records read whole, a list, hold
        none). The one way a reader that stops early lets go of it: the header alone, a scan
        of the file's start, a replay that found the file replaced."""
        close = getattr(self.records, "close", None)  # a generator holding the file open
        if close is not None:
            close()

    def problems_kept(self, beside_report: bool = False) -> list[str]:
        """The problems kept; `beside_report`: less the still-written line (`still_written`),
        which a report's warning says with the line read to and why more may come
        (`report._still_written`): beside it, the line was said twice."""
        still = self.still_written
        if not beside_report or still is None:
            return list(self.problems)
        return [p for p in self.problems if p != still.said]

    def problems_said(self, beside_report: bool = False) -> list[str]:
        """What reading found, as lines, in the words `replay` and `export` say it in (once
        read to its end): each problem kept (`problems_kept`: `beside_report` where a
        report's warnings are said too), then, where more were counted than kept, one line of
        the counts. `export` printed the counters as a Python dict (`(reader counters:
        {'not_read': 1})`) or, for Perfetto, nothing. `report` lists them its own way: its
        `Input:` line counts the detector's counters too (`report_text`)."""
        said = self.problems_kept(beside_report)
        # The reader keeps the first MAX_PROBLEMS messages only: past them the counts are
        # all there is (a folder of 100,000 non-recordings was said as the 20 shown).
        if sum(self.counters.values()) > len(self.problems):
            counts = ", ".join(f"{k} {v}" for k, v in sorted(self.counters.items()))
            # A count without messages of its own (a trace's stale GPM rows, merged into the
            # next row) was "(the first 0 said)".
            said.append(f"input problems in all: {counts}"
                        + (f" (the first {len(self.problems)} said)" if self.problems else ""))
        return said

    def problem(self, counter: str, message: str, line_no: int = 0) -> None:
        # A message may quote the bad input (a CSV cell): a screen of it is enough.
        message = cut_text(message, PROBLEM_CHARS)
        self.counters[counter] = self.counters.get(counter, 0) + 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(message)
        if self.problem_lines is not None:
            self.problem_lines.append((self.problem_line_base + line_no, counter, message))


#: Where a reader keeps its problems' lines: a list shared with the caller, and the base
#: added to each line (`read_recording(problem_lines=)`).
ProblemLines = tuple[list[tuple[int, str, str]], int]


class LineStream(Protocol):
    """What the readers need of an open recording: its lines (newlines kept; a line too long
    to be a record is `gzip_lines.TOO_LONG`), and closing (`gzip_lines.PlainLines` and
    `GzipLines`)."""

    def __iter__(self) -> Iterator[bytes]: ...

    def readline(self) -> bytes: ...

    def close(self) -> None: ...


def _open_bytes(path: Path) -> LineStream:
    """The recording file at `path`, open for its lines (`open_lines`). Raises
    RecordingError."""
    # The limit named here (read when a file is opened), as the problems name it: one value.
    return open_lines(path, MAX_LINE_BYTES, "a recording")


def open_lines(path: Path, limit_bytes: int, what: str,
               bare_cr_ends_lines: bool = False) -> LineStream:
    """The file at `path` (plain or gzip, told by its first bytes), open for its lines, none
    held longer than `limit_bytes` (`gzip_lines`: a longer one is `TOO_LONG`; with
    `bare_cr_ends_lines`, a CR alone ends a line as a LF does: a text file's), through
    `input_files.open_whole`: a regular file, or a FIFO whose writer speaks within
    `FIFO_FIRST_BYTES_S`. Anything else (`/dev/zero`, read for ever; a socket) is refused
    before a byte is read, said as not `what`. Every recording and trace CSV is opened here.
    Raises RecordingError."""
    try:
        raw = io.BufferedReader(NamedReads(open_whole(path, FIFO_FIRST_BYTES_S), path))
    except NotWhole as exc:
        if exc.silent:
            raise RecordingError(f"{path}: a FIFO that said nothing for "
                                 f"{FIFO_FIRST_BYTES_S:g} s; nothing to read") from None
        raise RecordingError(f"{path}: not {what}: {exc.kind}") from None
    except OSError as exc:
        raise RecordingError(f"{path}: cannot open: {exc.strerror or exc}") from None
    head = raw.peek(GZIP_HEAD_BYTES)[:GZIP_HEAD_BYTES] if hasattr(raw, "peek") else b""
    if is_gzip(head):
        return GzipLines(raw, limit_bytes, bare_cr_ends_lines)
    return PlainLines(raw, limit_bytes, bare_cr_ends_lines)


#: Compressed bytes read to learn a gzip recording's compression ratio (`json_bytes`).
RATIO_SAMPLE_BYTES: Final = 1 << 20


def json_bytes(path: str | Path, exact: bool = False) -> int:
    """About how many bytes of JSON the recording at `path` holds: its size, or for a gzip file
    its size times the compression ratio of its first MiB (the recorder compresses every member
    alike; a file that small is inflated whole, exactly). `exact`: a gzip file is inflated
    whole, a chunk at a time (to weigh copies of one segment against each other: an estimate
    from its first MiB could lose to a plain copy cut short). Raises OSError."""
    p = Path(path)
    st = p.stat()
    size = st.st_size
    if not stat.S_ISREG(st.st_mode):
        return 0  # a FIFO (`<(zcat ...)`): its head read here would be lost to the reader
    with open(p, "rb") as f:
        head = f.read(RATIO_SAMPLE_BYTES)
        if exact and is_gzip(head):
            f.seek(0)
            return _inflated_size(f)
    if not is_gzip(head):
        return size
    inflated, data = 0, head
    try:
        while data:  # member after member
            z = zlib.decompressobj(GZIP_WBITS)
            while data and not z.eof:
                # Counted `OUT_BYTES` at a time: 1 MiB of a highly compressed stretch (a 4 GiB
                # line of one byte) inflates to a GiB, which was held whole here.
                inflated += len(z.decompress(data, OUT_BYTES))
                data = z.unconsumed_tail
            data = z.unused_data if z.eof else b""
    except zlib.error:
        return size  # not gzip after all: the reader will say so
    return inflated if size <= len(head) else size * inflated // len(head)


def _inflated_size(raw: IO[bytes]) -> int:
    """The bytes the gzip file `raw` inflates to (`gzip_stream.inflated`, each piece counted
    and let go); one cut short or damaged counts what inflated before the fault."""
    n = 0
    try:
        for piece in inflated(raw):
            n += len(piece)
    except (EOFError, OSError, zlib.error):
        pass
    return n


#: Line number given to a problem found after the last line (a truncated file).
END_LINE: Final = 1 << 62


def _records(
    stream: LineStream, recording: Recording, first_line_no: int, skip: tuple[bytes, ...] = (),
    skip_type_last: tuple[bytes, ...] = (), wake_at: WakeAt | None = None,
) -> Iterator[Record]:
    """Validated records of a possibly truncated (gzip) stream; bad lines are counted, skipped.

    `skip`: lines starting with one of these prefixes (`gapwatch.core.codec.gpu_line_prefix`)
    are passed over undecoded (the parallel report's workers each read their own GPUs);
    `skip_type_last`: so are lines of recordings written before the codec that start with one
    of these (`gpu_line_prefix_type_last`) and end as a GPU sample did then. With `wake_at`
    (a time the caller moves on), a line passed over whose wall time is at or after it is
    handed out as a `PassedOver`.

    This is the hot loop of a long `gapwatch report` (~7 M lines for 24 h x 8 GPUs): one
    generator (no per-line inner generator), and the codec's decoder called directly. A bad
    line costs nothing once counted: no exception outlives its handler (the report runs with
    the cycle collector off, and a kept exception is a cycle through its traceback).
    """
    # Locals: a module global is a dict lookup on every line of a 7 M-line report.
    decode, prover_type, too_long = decode_record, ProverStatus, TOO_LONG
    gpu_type, top = GpuSample, MAX_LINK_BYTES_PER_S
    line_no = first_line_no
    #: The last snapshot of each prover: what a `ProverUnchanged` marker line stands for.
    provers: dict[str, ProverStatus] = {}
    try:
        for line in stream:
            line_no += 1
            if skip and (line.startswith(skip) or (
                    line.startswith(skip_type_last) and line.endswith(TYPE_LAST_GPU_SUFFIX))):
                if wake_at is not None:
                    wall = wall_of_text(line)
                    if wall is not None and wall >= wake_at.t_wall_s:
                        recording.line_no = line_no
                        # Among the records for its one reader, which tests for it first
                        # (`offline.detect.detect_records`: see `read_recording`).
                        yield cast(Record, PassedOver(wall))
                continue
            if line[-1:] != b"\n":
                _unended(line is too_long, line, recording, line_no)
                continue
            try:
                r = decode(line)
            except (DecodeError, RecursionError) as exc:
                # RecursionError: JSON nested deeper than msgspec goes (a 30 KB line of `[`).
                got = _undecoded(line, str(exc), provers)
                if isinstance(got, str):
                    if got:
                        recording.problem(
                            "bad_records", f"{recording.path}:{line_no}: bad record ({got})",
                            line_no,
                        )
                    continue
                r = got
            if type(r) is gpu_type:
                # Beyond any link only: a rate above the header's link but within some link's
                # reach is a reading (a GH200's counters take in NVLink-C2C; a header may state
                # its link wrongly), and whether the header's link is a lie is the header
                # check's to say (`_checked_against_data`), not each reading's.
                rx, tx = r.pcie_rx_bytes_per_s, r.pcie_tx_bytes_per_s
                if (rx is not None and rx > top) or (tx is not None and tx > top):
                    r = _implausible_rates(r, recording, line_no)
            elif type(r) is prover_type:
                provers[r.prover] = r
            recording.line_no = line_no
            yield r
    except (EOFError, zlib.error, OSError) as exc:
        if locked_by_another(recording.path):
            # A gzip recording being written ends in a member not yet ended: not damage.
            _still_written(recording, line_no, "its last gzip member is not ended yet")
        else:
            recording.problem(
                "truncated", f"{recording.path}: file ends early ({exc}); kept what read",
                END_LINE)
    else:
        # A plain recording being written reads to its last flush with nothing wrong in it:
        # said, so that a reader knows the end it sees is not the recording's end.
        if locked_by_another(recording.path):
            _still_written(recording, line_no, "more is written after")
    finally:
        recording.lines_read = line_no
        stream.close()


def _implausible_rates(r: GpuSample, recording: Recording, line_no: int) -> GpuSample:
    """`r` with each PCIe rate beyond any link (`MAX_LINK_BYTES_PER_S`) made no reading (None),
    counted (`implausible_rate`) and said: 10 TB/s against a 63 GB/s link made every gap
    `transfer_bound` ("15869 % of link") and the payoff's link floor of it. Its SM reading and
    its other direction stay. Called by `_records` for such samples only."""
    rx, tx = r.pcie_rx_bytes_per_s, r.pcie_tx_bytes_per_s
    top = MAX_LINK_BYTES_PER_S
    worst = max(x for x in (rx, tx) if x is not None)
    recording.problem(
        "implausible_rate",
        f"{recording.path}:{line_no}: GPU {r.gpu} PCIe reading of {worst:.3g} B/s is "
        f"implausible (beyond any link: more than {top:.3g} B/s); taken as no reading", line_no)
    return structs.replace(
        r, pcie_rx_bytes_per_s=None if rx is not None and rx > top else rx,
        pcie_tx_bytes_per_s=None if tx is not None and tx > top else tx)


def _still_written(recording: Recording, line_no: int, why: str) -> None:
    said = cut_text(f"{recording.path}: still being written by another process (its writer's "
                    f"lock is held); read up to line {line_no}, as it stood: {why}",
                    PROBLEM_CHARS)
    recording.problem("still_written", said, END_LINE)
    recording.still_written = StillWritten(line_no, why, said)


def _unended(too_long: bool, line: bytes, recording: Recording, line_no: int) -> None:
    """Count a line without its newline: one too long to be a record (`TOO_LONG`: never held
    whole), or the last line of a file cut by kill -9 (half written)."""
    if too_long:
        recording.problem("bad_records", f"{recording.path}:{line_no}: bad record (a line "
                          f"longer than {MAX_LINE_BYTES >> 20} MiB, more than any record "
                          "gapwatch writes; passed over unread)", line_no)
    elif line.strip():
        recording.problem(
            "partial_line", f"{recording.path}:{line_no}: incomplete last line", line_no
        )


def _undecoded(line: bytes, why: str, provers: dict[str, ProverStatus]) -> Record | str:
    """A line the codec refused (`why`): the record it still stands for (an unchanged prover
    snapshot, a log field beyond 64 bits), or why it is bad ("" for a blank line: skipped
    unsaid). Returns messages, never raised exceptions (see `_records`)."""
    if not line.strip():
        return ""
    if _is_unchanged_marker(line):
        return _unchanged(line, provers)
    repaired = decode_repaired(line)
    return why if repaired is None else repaired


#: The type name of the recorder's marker for an unchanged prover snapshot
#: (`ProverUnchanged`), as its line holds it near its start.
PROVER_SAME_TYPE: Final = b'"prover_same"'


def _is_unchanged_marker(line: bytes) -> bool:
    """A `ProverUnchanged` marker, as the recorder writes it or as another JSON writer would
    (a recording edited by hand and saved with spaces after the colons: known by the
    recorder's exact prefix, every such marker was a bad record, each snapshot it stood for
    lost). Asked of the lines the codec refused only."""
    return PROVER_SAME_TYPE in line[:256]


def _unchanged(line: bytes, provers: dict[str, ProverStatus]) -> ProverStatus | str:
    """The snapshot a `ProverUnchanged` line stands for: the last one of its prover, with the
    line's times; or why it cannot be (a bad line, or one with no snapshot before it)."""
    try:
        marker = decode_unchanged(line)
    except (DecodeError, RecursionError) as exc:
        return str(exc)
    previous = provers.get(marker.prover)
    if previous is None:
        return (f"an unchanged snapshot of prover {marker.prover!r} with none before it in "
                "this file")
    return marker.expand(previous)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


#: Every Unix time a recording's header carries: each is checked by `bounds.wall_s_ok` as the
#: header is read, one that is no usable time replaced by its fallback (`_HEADER_FALLBACKS`)
#: and said. A `snapshot_wall_s` of 1e300 was an `OverflowError` traceback in `report` (its
#: "taken at" line) and -1 was printed as taken at 23:59:59 before 1970.
HEADER_WALL_TIMES: Final = ("started_wall_s", "snapshot_wall_s")


def _sanitise_header(data: dict[str, object], p: Path) -> list[str]:
    """Replace header values gapwatch cannot use (in place) and say what was replaced: a
    period of 0 or -100 ms (replay divides by it, the detector learns holes from it), an
    absurd wall time (`HEADER_WALL_TIMES`), a GPU entry whose index is not a GPU. The records
    are still read."""
    problems: list[str] = []
    period = _number(data.get("period_ms"))
    if period is not None and usable_period_ms(period) is None:
        data["period_ms"] = DEFAULT_PERIOD_MS
        problems.append(
            f"{p}: header period_ms {period:g} is not a sampling period; using "
            f"{DEFAULT_PERIOD_MS:g} ms (the detector learns the spacing from the data)"
        )
    for key in HEADER_WALL_TIMES:
        t_wall_s = _number(data.get(key))
        if t_wall_s is not None and not wall_s_ok(t_wall_s):
            data[key] = _HEADER_FALLBACKS[key]
            problems.append(f"{p}: header {key} {t_wall_s:g} is not a usable time; ignored")
    mono = data.get("started_mono_ns")
    if isinstance(mono, int) and not isinstance(mono, bool) and not (0 <= mono <= INT64_MAX):
        data["started_mono_ns"] = 0
        problems.append(f"{p}: header started_mono_ns out of range; ignored")
    gpus = data.get("gpus")
    if isinstance(gpus, list):
        kept = []
        for g in gpus:
            index = _number(g.get("index")) if isinstance(g, dict) else None
            if index is not None and gpu_index(index) is None:
                problems.append(f"{p}: header GPU index {index:g} is not a GPU; entry ignored")
                continue
            kept.append(g)
        data["gpus"] = kept
    return problems


def _unusable_post_settings(data: dict[str, Any], p: Path) -> list[str]:
    """Drop (in place) and say each PoSt deadline of the header's `[cuzk]` that no deadline can
    be (`post_deadlines.recorded_problem`: negative, NaN, 1e300, a string), and a `cuzk` that
    is no table: the offline commands judge a PoSt by the recording's own deadlines
    (`post_deadlines.judged_by`), and one of these was never the recorder's (its config took
    none such); this run's config judges in its place, as for a recording that has none.
    Before `_non_finite`, which put the key's default in a NaN's place, taken then for the
    recording's own."""
    config = data.get("config")
    if not isinstance(config, dict) or "cuzk" not in config:
        return []
    cuzk = config["cuzk"]
    instead = "ignored: this run's config judges PoSt"
    if not isinstance(cuzk, dict):
        del config["cuzk"]
        return [f"{p}: header config.cuzk {quoted(cuzk)} is not a table; {instead}"]
    problems = []
    for key in POST_KEYS:
        if key in cuzk and (why := recorded_problem(key, cuzk[key])) is not None:
            problems.append(f"{p}: header config.cuzk.{key} {quoted(cuzk.pop(key))} cannot "
                            f"judge a PoSt ({why}); {instead}")
    return problems


def _header_fields(line: bytes) -> Any:
    """The header line as plain values. A number no double holds (`1e999` in the embedded
    config) makes the strict codec refuse the whole line; the standard library's JSON reads it
    (as infinity), so that the one value can be replaced instead of the file refused."""
    if line is TOO_LONG:
        raise DecodeError(f"the first line is longer than {MAX_LINE_BYTES >> 20} MiB")
    try:
        return decode_json(line)
    except RecursionError:
        raise DecodeError("the header line is nested too deep") from None
    except DecodeError:
        try:
            return json.loads(line)
        except (ValueError, RecursionError):
            raise DecodeError("the header line is not JSON") from None


def _non_finite(data: dict[str, Any], p: Path) -> list[str]:
    """Replace (in place) every number that is not finite: in the embedded config by the
    default of that key (gone when the key has none), elsewhere by nothing (the field's own
    fallback, `_HEADER_FALLBACKS`, then applies)."""
    problems: list[str] = []
    defaults = Config().model_dump(mode="json")

    def walk(node: Any, default: Any, where: str) -> Any:
        if isinstance(node, float) and not math.isfinite(node):
            instead = f"the default {default!r}" if default is not None else "nothing"
            problems.append(f"{p}: header {where} is {node} (not a number gapwatch can use); "
                            f"using {instead}")
            return default
        if isinstance(node, dict):
            sub = default if isinstance(default, dict) else {}
            out = {k: walk(v, sub.get(k), f"{where}.{k}") for k, v in node.items()}
            return {k: v for k, v in out.items() if v is not None or node[k] is None}
        if isinstance(node, list):
            return [walk(v, None, f"{where}[{i}]") for i, v in enumerate(node)]
        return node

    for key in list(data):
        data[key] = walk(data[key], defaults if key == "config" else None, key)
        if data[key] is None and key != "config":
            del data[key]
    return problems


#: What a header field that cannot be read is read as (the file's records are still used).
_HEADER_FALLBACKS: dict[str, Any] = {
    "gapwatch_version": "unknown", "host": "unknown", "source": "unknown",
    "started_wall_s": 0.0, "started_mono_ns": 0, "period_ms": DEFAULT_PERIOD_MS, "gpus": [],
    "config": {}, "set_id": None, "file_inode": None, "snapshot_wall_s": None,
}
_FIELD_AT = re.compile(r"at `\$\.(\w+)(?:\[(\d+)\])?")


def _header_with_fallbacks(data: dict[str, Any], p: Path) -> tuple[SessionHeader, list[str]]:
    """The header, a field that does not validate replaced by its fallback (a GPU entry that
    does not validate dropped), each said. Raises DecodeError when what is wrong has no
    fallback (the line is then not a gapwatch header)."""
    problems: list[str] = []
    for _ in range(len(_HEADER_FALLBACKS) + 64):
        try:
            return header_from_fields(data), problems
        except DecodeError as exc:
            m = _FIELD_AT.search(str(exc))
            key = m.group(1) if m else _missing_field(str(exc))
            if not key or key not in _HEADER_FALLBACKS:
                raise
            if m and key == "gpus" and m.group(2) is not None and isinstance(data["gpus"], list):
                del data["gpus"][int(m.group(2))]
                problems.append(f"{p}: header GPU entry {m.group(2)} cannot be read ({exc}); "
                                "entry ignored")
                continue
            if key in data and data[key] == _HEADER_FALLBACKS[key]:
                raise
            problems.append(f"{p}: header {key} cannot be read ({exc}); using "
                            f"{_HEADER_FALLBACKS[key]!r}")
            data[key] = _HEADER_FALLBACKS[key]
    raise DecodeError("the header cannot be read")


def _missing_field(message: str) -> str | None:
    """`Object missing required field `host`` -> `host`."""
    m = re.search(r"missing required field `(\w+)`", message)
    return m.group(1) if m else None


#: Lines read past the header to see what the data says of its period and links (the first
#: samples of a file come within its first lines), and GPU sample spacings enough to tell.
CHECK_LINES: Final = 4000
CHECK_SPACINGS: Final = 64
#: A stated period is a lie when the median spacing of the samples is beyond this many periods
#: (the detector expects at most 4: stale-GPM merging makes 2-3) or below half a period (the
#: sampler never samples faster; a late tick and the next on-time one average out).
PERIOD_LIE_ABOVE: Final = 4.0
PERIOD_LIE_BELOW: Final = 0.5
#: A stated link is a lie when two samples moved more than this many times its capacity (one
#: may be a glitch: a counter that went back, a hand-edited line); rates beyond any link
#: (`MAX_LINK_BYTES_PER_S`) are no evidence of it, but implausible readings (`_records`). The
#: one home of "more than its link": a reading above it is kept, wherever in the file it is.
LINK_LIE_ABOVE: Final = 2.0
#: A stated start is a lie when the first GPU samples (the median of the first
#: `START_SAMPLES`: one absurd time cannot move it) came this long before it: the header is
#: written before any sample. (Hours before them is true: every segment of a set repeats its
#: run's start.)
START_LIE_AFTER_S: Final = 60.0
START_SAMPLES: Final = 9


@dataclass
class _DataView:
    """What the first GPU samples of a file say: their spacings and each GPU's two highest
    rates (highest first)."""

    spacings_ns: list[int] = field(default_factory=list)
    top_rates: dict[int, tuple[float, float]] = field(default_factory=dict)
    #: The wall times of the first `START_SAMPLES` GPU samples.
    first_walls_s: list[float] = field(default_factory=list)

    def first_wall_s(self) -> float | None:
        """When the GPU samples start: the earliest of the first ones near their median (one
        absurd time cannot move it), None without any."""
        if not self.first_walls_s:
            return None
        walls = sorted(self.first_walls_s)
        mid = walls[len(walls) // 2]
        return min(w for w in walls if abs(w - mid) <= START_LIE_AFTER_S)

    def second_rate(self, gpu: int) -> float | None:
        """The rate at least two of the GPU's samples reached (None: fewer than two)."""
        top = self.top_rates.get(gpu)
        return top[1] if top is not None and top[1] >= 0 else None

    def period_ms(self) -> float | None:
        """The median spacing in ms (0.1 ms steps), None when too few samples tell."""
        if len(self.spacings_ns) < 8:
            return None
        return round(median(self.spacings_ns) / 1e6, 1)


def _data_view(p: Path) -> _DataView:
    """What the first `CHECK_LINES` records of `p` say, read once per version of the file: a
    report opens its recording several times (to size it, in each worker, to read it), and a
    line of many MB among the first records would be read and inflated again each time."""
    try:
        st = os.stat(p)
    except OSError:
        return _DataView()
    if not stat.S_ISREG(st.st_mode):
        # A FIFO (`export <(zcat gw.jsonl.gz)`) is read once: a second reader of it would take
        # lines from the reader proper while its writer writes, and waited for a writer that
        # had gone (10 s) once it had written all. Its header is taken as it says.
        return _DataView()
    return _data_view_of(p, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=8)
def _data_view_of(p: Path, _dev: int, _ino: int, _size: int, _mtime_ns: int) -> _DataView:
    """Read the first `CHECK_LINES` records of `p` (a second, short pass); the other arguments
    name the file's version for the cache (a file written on or replaced is read again)."""
    view = _DataView()
    last: dict[int, int] = {}
    try:
        stream = _open_bytes(p)
    except RecordingError:
        return view
    try:
        stream.readline()
        for i, line in enumerate(stream):
            if i >= CHECK_LINES or len(view.spacings_ns) >= CHECK_SPACINGS:
                break
            try:
                r = decode_record(line)
            except (DecodeError, RecursionError):
                continue
            if type(r) is not GpuSample:
                continue
            if len(view.first_walls_s) < START_SAMPLES:
                view.first_walls_s.append(r.t_wall_s)
            before = last.get(r.gpu)
            if before is not None and r.t_mono_ns > before:
                view.spacings_ns.append(r.t_mono_ns - before)
            last[r.gpu] = r.t_mono_ns
            rate = max(r.pcie_rx_bytes_per_s or 0.0, r.pcie_tx_bytes_per_s or 0.0)
            if rate > MAX_LINK_BYTES_PER_S:
                continue  # beyond any link: an implausible reading, not a lying header
            first, second = view.top_rates.get(r.gpu, (-1.0, -1.0))
            view.top_rates[r.gpu] = ((rate, first) if rate >= first
                                     else (first, max(rate, second)))
    except (EOFError, zlib.error, OSError):
        pass  # the reader proper says it
    finally:
        stream.close()
    return view


def _checked_against_data(header: SessionHeader, p: Path) -> tuple[SessionHeader, list[str]]:
    """The header with what its data belies replaced by the data's own value, and each lie said
    (`bad_header`): a period the samples' spacing does not bear out (1 ms stated, 100 ms apart:
    every sample a hole, 0 gaps), a link capacity that is not one (negative: every gap
    `transfer_bound`) or that the samples exceed, a start after the samples (a day late: the
    prover's log was "not this recording's log" and every prover cause lost)."""
    view = _data_view(p)
    problems: list[str] = []
    spacing = view.period_ms()
    if spacing is not None and usable_period_ms(spacing) is not None and not (
            PERIOD_LIE_BELOW <= spacing / header.period_ms <= PERIOD_LIE_ABOVE):
        problems.append(
            f"{p}: header period_ms {header.period_ms:g} is belied by the data: its GPU samples "
            f"are {spacing:g} ms apart (median of the first {len(view.spacings_ns)}); using "
            f"{spacing:g} ms"
        )
        header = structs.replace(header, period_ms=spacing)
    first_s = view.first_wall_s()
    if first_s is not None and header.started_wall_s > first_s + START_LIE_AFTER_S:
        problems.append(
            f"{p}: header started_wall_s {header.started_wall_s:.3f} is belied by the data: its "
            f"GPU samples start {header.started_wall_s - first_s:.0f} s before it, at "
            f"{first_s:.3f}; using that"
        )
        header = structs.replace(header, started_wall_s=first_s)
    gpus = [_checked_link(g, view.second_rate(g.index), p, problems) for g in header.gpus]
    if gpus != header.gpus:
        header = structs.replace(header, gpus=gpus)
    return header, problems


def _checked_link(g: GpuInfo, seen: float | None, p: Path, problems: list[str]) -> GpuInfo:
    """`g` with a link capacity that can be true: its stated one, else its generation and width's
    (when the data bears that out), else none (the detector's default link)."""

    def true(link: float | None) -> bool:
        return link is not None and (
            MIN_LINK_BYTES_PER_S <= link <= MAX_LINK_BYTES_PER_S
            and (seen is None or seen <= LINK_LIE_ABOVE * link))

    link = g.link_bytes_per_s
    if link is None or true(link):
        return g
    own = link_bytes_per_s(g.link_gen, g.link_width)
    instead = own if true(own) else None
    why = ("not a link's capacity" if not MIN_LINK_BYTES_PER_S <= link <= MAX_LINK_BYTES_PER_S
           else f"two samples moved {seen:.3g} B/s or more")
    using = (f"{instead:.3g} B/s (its generation and width)" if instead is not None
             else "the detector's default link")
    problems.append(f"{p}: header GPU {g.index} link_bytes_per_s {link:g} is belied ({why}); "
                    f"using {using}")
    return structs.replace(g, link_bytes_per_s=instead)


def open_recording(path: str | Path) -> tuple[SessionHeader, LineStream, list[str]]:
    """Open a JSON Lines recording: its validated header, the byte stream positioned at line 2
    (the caller closes it) and what was wrong with the header but could be replaced (for the
    user). Raises RecordingError when the header is unusable."""
    p = Path(path)
    stream = _open_bytes(p)
    try:
        first = stream.readline()
    except (EOFError, zlib.error, OSError) as exc:
        stream.close()
        raise RecordingError(f"{p}: not a readable recording ({exc})") from None
    try:
        data = _header_fields(first)
        if not isinstance(data, dict) or data.get("type") != "header":
            raise ValueError("first line is not a gapwatch header")
        version = data.get("schema_version")
        if isinstance(version, int) and version > SCHEMA_VERSION:
            stream.close()
            raise RecordingError(
                f"{p}: written by a newer gapwatch (schema {version} > {SCHEMA_VERSION}); upgrade"
            )
        problems = _unusable_post_settings(data, p)  # before `_non_finite` takes a NaN
        problems += _non_finite(data, p)
        problems += _sanitise_header(data, p)
        header, repaired = _header_with_fallbacks(data, p)
        problems += repaired
        header, lies = _checked_against_data(header, p)
        problems += lies
    except (DecodeError, ValueError, RecursionError) as exc:
        # RecursionError: a header nested deeper than the checks of its values go.
        stream.close()
        raise RecordingError(
            f"{p}: not a gapwatch recording ({str(exc).splitlines()[0]})"
        ) from None
    return header, stream, problems


def read_recording(path: str | Path, reading: Reading = WHOLE, *,
                   problem_lines: ProblemLines | None = None) -> Recording:
    """Open a JSON Lines recording, read as `reading` says. Raises RecordingError when its
    header is unusable.

    Args:
        problem_lines: keep problems in this list instead, each line plus this base (a set's
            file: `gapwatch.sources.recording_set`).
    """
    skip_prefixes, skip_type_last = reading.skip_prefixes, reading.skip_type_last
    wake_at, window = reading.wake_at, reading.window
    header, stream, problems = open_recording(path)
    first_line_no = 1
    if window is not None and window.since_s is not None:
        first_line_no = _start_at(stream, window.since_s)
    kept, base = problem_lines if problem_lines is not None else (
        [] if reading.keep_problem_lines else None, 0)
    rec = Recording(path=Path(path), header=header, records=iter(()), problem_lines=kept,
                    problem_line_base=base, files=[Path(path)])
    for message in problems:
        rec.problem("bad_header", message, 1)
    rec.records = without_isolated_times(
        _records(stream, rec, first_line_no, skip_prefixes, skip_type_last, wake_at), rec)
    if window is not None:
        rec.records = within(rec.records, window, (GpuSample, HostSample, PassedOver))
    return rec


def _start_at(stream: LineStream, since_s: float) -> int:
    """Start `stream` (just past its header) near where its lines reach `since_s`: a plain
    file seeked, a gzip file's pieces before passed over as they are inflated; the number of
    the line before the first one read then."""
    if isinstance(stream, PlainLines):
        return _seek_to(stream, since_s)
    if isinstance(stream, GzipLines):
        try:
            return stream.pass_pieces(pieces_before(since_s))
        except OSError:  # it could not go back to its start: read on from where it is
            return 1
    return 1


def _seek_to(stream: PlainLines, since_s: float) -> int:
    """Start `stream` (just past its header) where its lines reach `since_s`
    (`time_window.seek_plain`); the number of the line before the first one read then."""
    raw = stream.raw()
    if not raw.seekable():
        return 1  # a FIFO: read from where it is
    try:
        offset, lines = seek_plain(raw, 0, since_s)
    except OSError:  # read from the start then: the window's filter keeps what it must
        offset, lines = 0, 0
    # The header is line 1: read on from its end when the window starts near the beginning.
    if offset == 0 or lines < 1:
        stream.seek(_header_end(raw))
        return 1
    stream.seek(offset)
    return lines


def _header_end(raw: IO[bytes]) -> int:
    """The offset of line 2 (the header, line 1, was read whole: it is no longer than a
    line may be)."""
    raw.seek(0)
    raw.readline(MAX_LINE_BYTES + 1)
    return raw.tell()
