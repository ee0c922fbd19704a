"""Whole prover log files, read offline as the live tailer reads them: parsed into events in
time order, and merged into a recording's records by time.

Who calls it: `gapwatch report --log`, `export --log` and `replay --log` (`gapwatch.offline.report`
and `gapwatch.offline.replay_logs` parse the files; the replay merges their events into its
records with `merge_by_time`, each line the recording holds too given once:
`gapwatch.logs.once`), so a recording replayed with its prover's log files shows the same
events, tied to the same gaps, as the report of it; and `gapwatch parse` (`LogFile`: the
lines and the look at a file's first bytes).

Bytes -> lines is the live tailer's rule, in one place (`gapwatch.logs.tail.LineSplitter`): NUL
bytes dropped and counted (copytruncate leaves NUL padding where a writer without `O_APPEND`
runs ahead: read as text they hid the log's first line, cuzk's TIMELINE anchor), lines split at
`\\n` only (a lone `\\r` is left to the parser, as live), a line longer than
`logs.max_line_bytes` cut there and counted. A file is read `READ_BYTES` at a time, and a hole
(a sparse file's unwritten stretch: the filesystem says where data starts again) is passed over
unread: a 1 GiB NUL hole cost 2.1 GB read as text.

A gzip file (logrotate compresses the rotated logs: `cuzk.log.2.gz`) is read inflated
(`gapwatch.base.gzip_stream`), told by its first bytes, not its name; it was read as text, a
screen of unparsed junk and no event. A gzip file cut short (a copy or a compression still
running) gives its lines up to the cut, counted `ends_early`. It is read whole, from its start,
in one process (`gzipped`: the split parse and a window's part seek by bytes).

Several files are read in the order of the times their first lines show (`read_order`), not
the order given: one parser reads them one after another, and its state (TIMELINE's anchor, the
partitions in flight, which GPU a worker drives) must come from the lines before. logrotate's
files given as the shell lists them, `cuzk.log cuzk.log.1 cuzk.log.2.gz`, are newest first: read
so, a third of a day's partitions were lost and others misplaced. A file that is not a regular
file (a FIFO, stdin) cannot be looked into first: it keeps its place in the order given.

A regular file whose first lines show no wall time of its own (cuzk's stderr given apart from
its stdout, `cuzk > out.log 2> err.log`: TIMELINE lines, timed only by the stdout's `starting
cuzk engine` line, and C++ lines with no time at all) is read after the others, in the order
given: its TIMELINE lines then find their anchor whichever file was named first (named first,
they had none, or the `/status` uptime's, a second off, and a start line after the run's first
TIMELINE lines said a restart that never happened), each engine run's by its own start line: the
parser keeps the start lines read before it, and the file's runs are counted first by a read of
their own (`runs_apart`, `gapwatch.cuzk.engine_runs`; placed by the last start line read, a
restart's two runs were one). Where its runs and those start lines do not agree, none of its
TIMELINE lines is placed by a start line, said once (`engine_runs.runs_note`). Its lines cannot
be placed among the other files' lines: they are all read after them, and nothing on them says
where they fall. So, beside a file that can hold the lines naming a GPU lock's holder (one that
shows a time, or is not a regular file), it is `apart`: its C++ lines are tied to no partition
(read after the whole stdout, they were paired with the partitions of the log's end: GPU
occupied 52 % for 75 %), counted, and said once a file
(`gapwatch.cuzk.log_lines.unplaced_note`: read with a recording that holds lock regions `record
--log` paired as the lines came, those stand in for them, and that is what is said). The same
rule decides which followed backlogs are read apart (`gapwatch.logs.follow`). cuzk's source
gives no sound way to place them: the C++ lines carry no time, job, worker or partition
(`fprintf(stderr, ...)`, supraseal-c2 groth16_cuda.cu); the stderr's TIMELINE lines around them
have millisecond offsets, and the GPU_START before a lock region need not be its holder's (two
workers a GPU both start, then wait on one mutex). Files that all show no time keep the order
given and none is apart: nothing names a holder there.
"""

from __future__ import annotations

import errno
import os
import stat
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Final

from gapwatch.base.gzip_stream import GZIP_HEAD_BYTES, inflated, is_gzip
from gapwatch.base.input_files import FIFO_FIRST_BYTES_S, NotWhole, named, open_whole
from gapwatch.config import Config
from gapwatch.core.models import LogEvent, Record
from gapwatch.cuzk.engine_runs import Placing, RunsApart, StartLines, placing, runs_note
from gapwatch.cuzk.log_lines import Unplaced
from gapwatch.logs.once import LinesOnce, ReadOnce, itself
from gapwatch.logs.parse import TIMELINE_UNPLACED, UNPLACED
from gapwatch.logs.tail import LineSplitter

if TYPE_CHECKING:
    from gapwatch.logs.parse import LogParser

#: Bytes read at a time.
READ_BYTES: Final = 1 << 20


class LogFile:
    """One log file (or a FIFO, or stdin's descriptor) read as the tailer reads it.

    `lines()` gives its lines; `nul_bytes` and `cut_lines` count what was dropped (holes passed
    over count as NUL bytes: that is what they read as)."""

    def __init__(self, path: str, max_line_bytes: int,
                 on_read: Callable[[str, int], object] | None = None) -> None:
        """`on_read(path, offset)`: told after each read how far into the file it is (a
        report's progress line)."""
        self.path = path
        self.splitter = LineSplitter(max_line_bytes)
        self.hole_bytes = 0
        self.on_read = on_read
        #: 1 once a gzip file was found cut short (its lines up to the cut were read).
        self.ends_early = 0

    @property
    def nul_bytes(self) -> int:
        return self.splitter.nul_bytes + self.hole_bytes

    @property
    def cut_lines(self) -> int:
        return self.splitter.cut_lines

    def chunks(self, fd: int, end: int | None = None) -> Iterator[bytes]:
        """The bytes of `fd` from its current position (to `end`, where given: a regular
        file's), `READ_BYTES` at a time, holes passed over where the filesystem tells (a
        regular file); a stream is read as it comes."""
        seekable = stat.S_ISREG(os.fstat(fd).st_mode)
        pos = os.lseek(fd, 0, os.SEEK_CUR) if seekable else 0
        while end is None or pos < end:
            if seekable:
                data_at = _next_data(fd, pos)
                if data_at is None:
                    return
                if data_at > pos:
                    self.hole_bytes += data_at - pos
                    pos = os.lseek(fd, data_at, os.SEEK_SET)
            data = os.read(fd, READ_BYTES if end is None else min(READ_BYTES, end - pos))
            if not data:
                return
            pos += len(data)
            if self.on_read is not None:
                self.on_read(self.path, pos)
            yield data

    def lines(self, fd: int | None = None, start: int = 0, end: int | None = None
              ) -> Generator[str, None, None]:
        """The file's lines (opened here, or read from `fd`, which the caller closes); opened
        here, those of bytes `start` to `end` (each a line's start: `line_start`). Raises
        OSError."""
        if fd is not None:
            yield from self._lines(fd)
            return
        own = open_log(self.path)
        try:
            if start:
                os.lseek(own, start, os.SEEK_SET)
            yield from self._lines(own, end)
        finally:
            os.close(own)

    def _lines(self, fd: int, end: int | None = None) -> Iterator[str]:
        data = self.inflated(fd) if end is None and _gzip_at(fd) else self.chunks(fd, end)
        try:
            for piece in data:
                yield from self.splitter.feed(piece)
        except OSError as exc:
            raise named(exc, self.path) from None  # a read's error names no file
        yield from self.splitter.flush()

    def inflated(self, fd: int) -> Iterator[bytes]:
        """The inflated bytes of the gzip file `fd` (at its start), a piece at a time; a cut or
        damaged one ends where it can no longer be read, `ends_early` set."""
        raw = os.fdopen(os.dup(fd), "rb")
        try:
            for data in inflated(raw):
                if self.on_read is not None:
                    self.on_read(self.path, raw.tell())
                yield data
        except (EOFError, zlib.error, OSError) as exc:
            if isinstance(exc, OSError) and exc.errno is not None:
                raise  # the file could not be read (EIO, ...), not bad gzip data
            self.ends_early = 1
        finally:
            raw.close()

    def head(self, n_bytes: int, scan_bytes: int = 64 * READ_BYTES) -> bytes:
        """The first `n_bytes` of the file that are not NUL (looked for in its first
        `scan_bytes` of data; holes cost nothing). Raises OSError."""
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            got, scanned = b"", 0
            reader = LogFile(self.path, 1)
            for data in reader.inflated(fd) if _gzip_at(fd) else reader.chunks(fd):
                got += data.replace(b"\0", b"")
                scanned += len(data)
                if len(got) >= n_bytes or scanned >= scan_bytes:
                    break
            return got[:n_bytes]
        finally:
            os.close(fd)


def gzipped(path: str) -> bool:
    """Whether `path` is a regular file that starts as gzip does (read inflated, whole and in
    one process: `LogFile`). Never raises, never blocks (a FIFO is not looked into)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        return _gzip_at(fd)
    finally:
        os.close(fd)


def _gzip_at(fd: int) -> bool:
    """Whether `fd`, a regular file at its start, holds gzip (`is_gzip` of its first bytes,
    read without moving it); a stream or a file read from elsewhere is taken as text."""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode) or os.lseek(fd, 0, os.SEEK_CUR) != 0:
            return False
        return is_gzip(os.pread(fd, GZIP_HEAD_BYTES, 0))
    except OSError:
        return False


def open_log(path: str) -> int:
    """`path` open for reading whole (`input_files.open_whole`): a regular file, or a FIFO
    whose writer speaks within `FIFO_FIRST_BYTES_S`. A FIFO nobody writes to blocked `open()`
    for ever (`report --log FIFO`, `parse FIFO`); a character device is no file to read whole
    (`/dev/zero` and `/dev/full` are endless NULs, read for ever; `/dev/kmsg` is a log to
    follow live, `record --log`). Raises OSError (its filename the path)."""
    try:
        return open_whole(path, FIFO_FIRST_BYTES_S)
    except NotWhole as exc:
        if exc.silent:
            raise OSError(errno.ETIMEDOUT, f"a FIFO that said nothing for "
                          f"{FIFO_FIRST_BYTES_S:g} s", path) from None
        live = " (follow a device live: record --log)" if stat.S_ISCHR(exc.mode) or \
            stat.S_ISBLK(exc.mode) else ""
        raise OSError(errno.EINVAL, f"{exc.kind}, not a file to read whole{live}",
                      path) from None


def _next_data(fd: int, pos: int) -> int | None:
    """Where data starts at or after `pos` (past a hole), or None when nothing follows."""
    try:
        return os.lseek(fd, pos, os.SEEK_DATA)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # only a hole (or nothing) from pos to the end
            return None
        return pos  # EINVAL: no SEEK_DATA on this filesystem; read on


@dataclass(frozen=True, slots=True)
class LinesRead:
    """What of one file's lines the parser read: its lines (blank ones aside) and how many of
    them a rule understood (`gapwatch.logs.not_a_log` says a file of none)."""

    path: str
    lines: int
    understood: int

    @classmethod
    def counted(cls, path: str, counters: Mapping[str, int],
                before: Mapping[str, int] | None = None) -> LinesRead:
        """The file's, from a parser's counters after it (less those `before` it: several
        files read by one parser)."""
        def grew(name: str) -> int:
            return counters.get(name, 0) - (before.get(name, 0) if before is not None else 0)

        lines = grew("lines") - grew("blank")
        return cls(path, lines, lines - grew("unparsed"))


#: The parser's counters `LinesRead` reads.
_LINE_COUNTERS: Final = ("lines", "blank", "unparsed")


def log_file_events(
    paths: Iterable[str], config: Config, timeline_epoch_s: float | None,
    counters: dict[str, int], on_read: Callable[[str, int], object] | None = None,
    notes: list[str] | None = None, unplaced: list[Unplaced] | None = None,
    read: list[LinesRead] | None = None,
) -> Iterator[LogEvent]:
    """The events of whole prover log files as parsed, file after file in `read_order` (not
    sorted: sorting is the caller's: `gapwatch.offline.report.spool_logs`, on disk);
    `counters` gets the parser's counters once the last file is read; `on_read`: see
    `LogFile`; `notes` gets a line for each file whose TIMELINE lines could not all be
    placed by their own run's start line (`engine_runs.runs_note`); `unplaced` gets each file
    whose C++ lines could not be placed beside the others' (said by the caller,
    `log_lines.unplaced_note`, once it knows whether a recording's own lock regions stand in
    for them); `read` gets what of each file's lines was understood (`LinesRead`). Raises
    OSError."""
    parser = offline_parser(config, timeline_epoch_s)
    nul_bytes = cut_lines = ends_early = 0
    order = read_order(list(paths), config)
    if order.apart:
        parser.keep_start_lines()
    for path in order.paths:
        log = LogFile(path, config.logs.max_line_bytes, on_read)
        apart = path in order.apart
        runs = runs_apart(parser, path, config) if apart else None
        before, timeline_before = parser.counters[UNPLACED], parser.counters[TIMELINE_UNPLACED]
        lines_before = {name: parser.counters[name] for name in _LINE_COUNTERS}
        yield from file_events(parser, log, apart=apart)
        parser.runs_apart = None
        if read is not None:
            read.append(LinesRead.counted(path, parser.counters, lines_before))
        lines = parser.counters[UNPLACED] - before
        if lines and unplaced is not None:
            unplaced.append(Unplaced(path, lines, tuple(order.placed)))
        timeline = parser.counters[TIMELINE_UNPLACED] - timeline_before
        if runs is not None and runs.why_not is not None and timeline and notes is not None:
            notes.append(runs_note(path, timeline, runs.why_not, order.placed))
        nul_bytes += log.nul_bytes
        cut_lines += log.cut_lines
        ends_early += log.ends_early
    counters.update(log_counters(parser.counters, nul_bytes, cut_lines, ends_early))


def runs_apart(parser: LogParser, path: str, config: Config) -> Placing:
    """Before `path`, a file read apart, is read by `parser` (after the other files, their
    start lines kept: `LogParser.keep_start_lines`): its TIMELINE lines' engine runs, counted by
    a read of their own (`engine_runs_of`), each given the start line it is of where that is
    known (`engine_runs.placing`), `parser.runs_apart` set to place them so (the caller sets it
    back to None after the file). Raises OSError."""
    seen = (engine_runs_of(path, config)
            if parser.start_lines is not None and parser.start_lines.read else RunsApart())
    return place_runs(parser, seen)


def engine_runs_of(path: str, config: Config) -> RunsApart:
    """The engine runs of `path`'s TIMELINE lines, by a read of their own (a parser of its own,
    its TIMELINE rule the same; no other line parsed: 0.60 of 1.31 s of a 100k-line stderr's
    read was the C++ lines). Touches no other parser: a follower reads it outside its lock.
    Raises OSError."""
    seen = RunsApart()
    counter = offline_parser(config, None)
    counter.runs_apart = seen
    read = LogFile(path, config.logs.max_line_bytes).lines()
    try:
        for line in read:
            if "TIMELINE," in line:
                counter.parse_line(line, stream=path, apart=True)
    finally:
        read.close()
    return seen


def place_runs(parser: LogParser, seen: RunsApart) -> Placing:
    """`seen`'s runs given the start lines `parser` kept (`engine_runs.placing`), and
    `parser.runs_apart` set to place them so."""
    placed = placing(seen, parser.start_lines or StartLines())
    parser.runs_apart = placed.runs
    return placed


#: Lines of a file's start looked at for the first wall time it shows (`read_order`).
FIRST_TIME_LINES: Final = 256


@dataclass(frozen=True, slots=True)
class ReadOrder:
    """How several files are read (`read_order`; see the module docstring)."""

    #: Every file, in the order read.
    paths: list[str]
    #: The files (read after the others) whose lines cannot be placed among the others' lines:
    #: they take no part in lock attribution (`LogParser.parse_line(apart=True)`).
    apart: frozenset[str]
    #: The other files, in the order read: those the apart ones cannot be placed beside.
    placed: list[str]


def read_order(paths: list[str], config: Config) -> ReadOrder:
    """`paths` in the order of the first wall time each file's lines show, equal times in the
    order given; a file that is not a regular file keeps its place among them; a regular file
    that shows none in its first `FIRST_TIME_LINES` lines (cuzk's stderr beside its stdout;
    the empty file logrotate leaves at the live name: one such file used to leave every file
    as given, a day's runs newest first) comes after them, in the order given, `apart` where
    any of them is left. Never raises: a file that cannot be read is the reader's to say (it
    keeps its place)."""
    if len(paths) < 2:
        return ReadOrder(list(paths), frozenset(), list(paths))
    looks = [_look(p, config) for p in paths]
    untimed = [p for p, (looked, first) in zip(paths, looks, strict=True)
               if looked and first is None]
    kept = [i for i, (looked, first) in enumerate(looks) if not looked or first is not None]
    # The timed files sorted into the places the timed ones hold; a file not looked into
    # keeps its own.
    timed = [(k, first, i) for k, i in enumerate(kept) if (first := looks[i][1]) is not None]
    order = list(kept)
    for (slot, _, _), (_, _, i) in zip(timed, sorted(timed, key=lambda t: (t[1], t[2])),
                                       strict=True):
        order[slot] = i
    placed = [paths[i] for i in order]
    # Without a file that can name a lock's holder, nothing of theirs could be tied wrongly.
    return ReadOrder(placed + untimed, frozenset(untimed if placed else ()), placed)


def _look(path: str, config: Config) -> tuple[bool, float | None]:
    """Whether a file was looked into (a regular file that could be read), and the first wall
    time its first `FIRST_TIME_LINES` lines show by themselves (None: none)."""
    if path == "-" or not os.path.isfile(path):
        return False, None
    try:
        times = own_wall_times(path, config, lines=FIRST_TIME_LINES, most=1)
    except OSError:
        return False, None
    return True, times[0] if times else None


def own_wall_times(path: str, config: Config, *, start: int = 0, lines: int,
                   most: int) -> list[float]:
    """The wall times the first `lines` lines of a file from byte `start` (a line's start)
    show by themselves, not placed by an anchor (a line's own, or a journald/`ts` prefix's),
    read by the offline parser's rules (user rules included) with a parser of its own, its
    state thrown away; read until `most` are found (a line's several events all given). The
    order of rotated files (`read_order`) and a window's search of a log
    (`gapwatch.offline.log_window`). Raises OSError."""
    parser = offline_parser(config, None)
    read = LogFile(path, config.logs.max_line_bytes).lines(start=start)
    times: list[float] = []
    try:
        for line in islice(read, lines):
            times += [e.t_wall_s for e in parser.parse_line(line, stream=path)
                      if e.time_source in ("line", "prefix") and e.t_wall_s > 0]
            if len(times) >= most:
                break
    finally:
        read.close()  # the file, at once
    return times


def offline_parser(config: Config, timeline_epoch_s: float | None) -> LogParser:
    """The parser whole files are read with (`log_file_events`); its readers drop every event
    timed 0 (`file_events`, `own_wall_times`: `LogParser.drops_untimed`)."""
    from gapwatch.logs.parse import LogParser

    parser = LogParser(config.logs, keep_unparsed=False, offline=True, drops_untimed=True)
    parser.anchor_from_status(timeline_epoch_s)
    return parser


def file_events(parser: LogParser, log: LogFile, start: int = 0, end: int | None = None,
                flush: bool = True, apart: bool = False) -> Iterator[LogEvent]:
    """The events of `log`'s lines from byte `start` to `end` (line starts), and at its end
    (`flush`) the panic still being read; `apart`: its lines cannot be placed among those of
    the files read with it (`read_order`). Raises OSError."""
    for line in log.lines(start=start, end=end):
        for e in parser.parse_line(line, stream=log.path, apart=apart):
            # Lines without any time of their own get wall time 0 from a file: they
            # cannot be placed.
            if e.t_wall_s > 0:
                yield e
    if flush:
        for e in parser.flush():  # a panic at the end of the file
            if e.t_wall_s > 0:
                yield e


def log_counters(parsed: dict[str, int], nul_bytes: int, cut_lines: int,
                 ends_early: int = 0) -> dict[str, int]:
    """The counters of whole files: the parser's, then the bytes and lines the reader
    dropped (as the tailer counts them), and the gzip files found cut short, when there were
    any."""
    out = dict(parsed)
    if nul_bytes:
        out["nul_bytes"] = nul_bytes
    if cut_lines:
        out["cut_lines"] = cut_lines
    if ends_early:
        out["ends_early"] = ends_early
    return out


def merge_by_time(records: Iterable[Record], events: Iterable[LogEvent],
                  after_end: Callable[[LogEvent, float | None], bool] | None = None,
                  ) -> Iterator[Record]:
    """`records` (a recording, in its own order) with `events` (sorted by time, read one at a
    time) slotted in by the rule of `gapwatch.offline.detect.detect_records` (which inlines it
    in its hot loop): each event goes just before the first GPU sample at or after its time;
    the rest come last, those `after_end` takes (given the latest GPU sample's time: the
    report's margin after the data's end). A log event of the recording that `events` hold
    too (made with `record --log` of the file given) is left out, their copy given in its
    place (`gapwatch.logs.once`; `events` read through one, or one made here)."""
    lines = events if isinstance(events, ReadOnce) else LinesOnce(events, itself)
    it = iter(lines)
    head = next(it, None)
    end_s: float | None = None
    log_event = LogEvent
    for record in records:
        if record.type == "gpu":
            t = record.t_wall_s
            end_s = t if end_s is None or t > end_s else end_s
            while head is not None and head.t_wall_s <= t:
                yield head
                head = next(it, None)
        elif type(record) is log_event and lines.recorded(record):
            continue
        yield record
    while head is not None:
        # A line the recording held too is inside it, wherever it falls.
        if after_end is None or lines.paired(head) or after_end(head, end_s):
            yield head
        head = next(it, None)
