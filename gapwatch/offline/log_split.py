"""A large `--log` file parsed in two processes, into the spool one process would have made.

Who calls it: `gapwatch.offline.report.parse_log_input` (the report's `--log` files, parsed once
before the detection starts, `spool_split` first) and `gapwatch.offline.log_window` (a window's part
of the file, cut in two by a `Plan` of its own: `spool_planned`). Parsing is serial by nature: each
line's events depend on the parser's state (TIMELINE's anchor, which GPU a worker drives, which GPU
picked a partition up, a panic being read), and the detection cannot start before the last line is
read (the events are fed sorted by time). A day of 8 GPUs (920 MB, ~8 M lines) took ~80-110 s in one
process, with the second core idle.

How it stays exact: this process parses the file's first part, to the start of a line `seam`; a
forked child parses the rest with a parser of its own, brought to the seam's state first by parsing
the file's start (`STARTUP_BYTES`: the daemon's start, where it says its anchor and its workers'
GPUs), as much from the daemon's last restart before the seam (`warm_parts`: a restart sets them
anew) and the `WARM_BYTES` before the seam (the partitions picked up lately, the workers' jobs),
their events thrown away. Where the two parsers' states are equal at the seam
(`LogParser.resume_state`: everything that shapes the events of the lines to come), the child's
events are those one parser would have made of the same lines, so they are taken: encoded into
sorted runs of the one spool (`EventSpool.adopt`, in a temporary file both share), ordered after
this process's events of equal time (`first_seq`), as one parse adds them; the parser's counters are
this process's plus what the child counted past the seam, in the order one parse meets them. Where
the states differ (a panic open at the seam, more partitions in flight than the warm-up sees, ...),
the child's work is thrown away and this process parses the rest itself: slower, never different.
Only one plain file is split (no holes: the reader passes them over, counted); anything else is
parsed in one process (`spool_split` returns None), as is a machine with one usable CPU or a process
with threads (fork is not safe then).
"""

from __future__ import annotations

import os
import signal
import stat
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing import get_context
from multiprocessing.connection import Connection
from typing import IO, Any, BinaryIO, Final

from gapwatch.base.quit_early import STOP_SIGNALS, stop_signals_deferred
from gapwatch.config import Config
from gapwatch.cuzk.log_lines import ANCHOR_MESSAGE
from gapwatch.logs.files import LogFile, file_events, gzipped, log_counters, offline_parser
from gapwatch.offline.gap_spool import EventSpool
from gapwatch.offline.log_span import LogSpan
from gapwatch.offline.progress import LogBytes, Progress
from gapwatch.offline.report_parallel import can_share_logs, usable_cpus
from gapwatch.sources.time_window import next_line_start

#: Smaller files are parsed in one process (starting the child and bringing its parser to the
#: seam cost more than the half they save: ~1 s of a 38 MB hour).
MIN_SPLIT_BYTES: Final = 64 << 20
#: The file's start the child parses first (the daemon's start: its anchor and workers).
STARTUP_BYTES: Final = 1 << 20
#: What the child parses before the seam: the partitions picked up lately (the parser keeps
#: the GPU of the latest 4096) and each worker's job; ~25 min of a busy 8-GPU log.
WARM_BYTES: Final = 16 << 20
#: cuzk logs a few of its start's lines before `starting cuzk engine` (its memory budget, its
#: pinned pool): a restart is read from this far before that line.
BACK_BYTES: Final = 64 << 10
#: Bytes read at a time while looking back for the daemon's last start.
SCAN_BYTES: Final = 4 << 20
#: The child's sequence numbers start here: its items come after this process's of equal time.
CHILD_FIRST_SEQ: Final = 1 << 48


@dataclass
class _Half:
    """What the child sends back: its parser's state at the seam and its counters then and at
    the end, its runs in the shared file, what it saw of each stream, what its reader dropped."""

    state: tuple[object, ...] | None
    counters_at_seam: dict[str, int]
    counters: dict[str, int]
    runs: list[tuple[int, int]]
    items: int
    files: dict[str, Any]
    nul_bytes: int
    cut_lines: int


#: A part of the file: its first and last byte (line starts; None: the file's end), and
#: whether the panic being read at its end is ended there (parts that are not contiguous).
Part = tuple[int, int | None, bool]


@dataclass(frozen=True)
class Plan:
    """How one file is parsed in two processes: this process parses `head` in order; the
    child parses `warm` (its events thrown away: only its parser's state counts), then the
    part from `seam` to `end` (None: the file's end), whose events it hands over."""

    head: Sequence[Part]
    seam: int
    end: int | None
    warm: Sequence[Part]


def _whole_plan(path: str, size: int) -> Plan | None:
    """The whole file cut at its middle (see the module docstring), or None: too small."""
    seam = line_start(path, (size + STARTUP_BYTES + WARM_BYTES) // 2)
    if seam >= size:
        return None
    return Plan([(0, seam, False)], seam, None,
                [(a, b, False) for a, b in warm_parts(path, seam)])


def warm_parts(path: str, seam: int) -> list[tuple[int, int]]:
    """What a parser must read to be in the state one parse is in at `seam` (a line start),
    in order: the file's first `STARTUP_BYTES` (the daemon's start: TIMELINE's anchor, its
    workers' GPUs), as much from `BACK_BYTES` before its last `starting cuzk engine` before
    the seam (a restart sets them anew; found by a byte search, not parsed) and the
    `WARM_BYTES` before the seam (the partitions and jobs in flight); overlapping parts
    joined. [] for a seam at the file's start."""
    starts = [0]
    restart = last_restart(path, seam)
    if restart is not None and restart > 0:
        starts.append(line_start(path, max(0, restart - BACK_BYTES)))
    wanted = [(s, line_start(path, min(s + STARTUP_BYTES, seam))) for s in starts]
    wanted.append((line_start(path, max(0, seam - WARM_BYTES)), seam))
    out: list[tuple[int, int]] = []
    for start, stop in sorted(wanted):  # a restart inside the warm-up is read with it
        if stop <= start:
            continue
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], stop))
        else:
            out.append((start, stop))
    return out


def last_restart(path: str, before: int) -> int | None:
    """The start of the line of the last `starting cuzk engine` before byte `before` (a byte
    search, `SCAN_BYTES` at a time from `before` back: C's speed over the whole file, and no
    mmap, which a log truncated meanwhile (copytruncate) would answer with SIGBUS), or
    None."""
    marker = ANCHOR_MESSAGE.encode()
    with open(path, "rb") as f:
        end = before
        while end > 0:
            start = max(0, end - SCAN_BYTES)
            f.seek(start)
            # Overlapping the next chunk by the marker's length less one: one that straddles
            # two chunks is found whole in this one.
            chunk = f.read(end - start + len(marker) - 1)[:before - start]
            at = chunk.rfind(marker)
            if at >= 0:
                return _line_start_back(f, start + at)
            end = start
    return None


def _line_start_back(f: BinaryIO, at: int) -> int:
    """The start of the line that holds byte `at`."""
    pos = at
    while pos > 0:
        start = max(0, pos - SCAN_BYTES)
        f.seek(start)
        nl = f.read(pos - start).rfind(b"\n")
        if nl >= 0:
            return start + nl + 1
        pos = start
    return 0


def line_start(path: str, at: int) -> int:
    """The offset of the first line that starts at or after `at` (the file's size if none)."""
    if at <= 0:
        return 0
    with open(path, "rb") as f:
        return next_line_start(f, at - 1)


def splittable(paths: list[str]) -> int:
    """The size of the one plain file without holes in `paths`, where two processes can
    parse it (several CPUs, a process without threads), else 0 (a gzip file is inflated from
    its start: it has no seam to cut at)."""
    if len(paths) != 1 or usable_cpus() < 2 or not can_share_logs() or gzipped(paths[0]):
        return 0
    try:
        # Non-blocking: a FIFO nobody writes to would block this look for ever (it is read
        # in one process, where `logs.files.open_log` waits for its writer within a bound).
        fd = os.open(paths[0], os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return 0
            if os.lseek(fd, 0, os.SEEK_HOLE) < st.st_size:
                return 0
            return st.st_size
        finally:
            os.close(fd)
    except (OSError, AttributeError):  # no SEEK_HOLE here: parsed in one process
        return 0


def spool_split(paths: list[str], config: Config, timeline_epoch_s: float | None,
                span: LogSpan, progress: Progress | None = None
                ) -> tuple[EventSpool, dict[str, int]] | None:
    """`gapwatch.offline.report.spool_logs` of `paths` in two processes, or None where they
    are parsed in one (see the module docstring). `span` sees every event, as there;
    `progress` is told how far this process's part is (the child's runs beside it)."""
    size = splittable(paths)
    plan = _whole_plan(paths[0], size) if size >= MIN_SPLIT_BYTES else None
    if plan is None:
        return None
    on_read = LogBytes(progress, [paths[0]], plan.seam).at if progress is not None else None
    return spool_planned(paths[0], plan, config, timeline_epoch_s, span, on_read)


def spool_planned(path: str, plan: Plan, config: Config, timeline_epoch_s: float | None,
                  span: LogSpan, on_read: Callable[[str, int], object] | None = None
                  ) -> tuple[EventSpool, dict[str, int]] | None:
    """The events of `path`'s parts by `plan`, in two processes, into one spool (as one
    process parses the same parts in order: see the module docstring); None where the child
    cannot be started. `on_read`: told as this process reads its parts (`LogFile`). The
    caller has checked the file and the machine (`splittable`)."""
    try:
        shared = tempfile.TemporaryFile(prefix="gapwatch-spool-")  # noqa: SIM115
    except OSError:
        return None
    ctx = get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(path, config, timeline_epoch_s, plan, shared, send),
                        daemon=True)
    spool = EventSpool()
    try:
        try:
            # Started inside the clean-up's reach, with the stop signals held back: a signal
            # between the fork and the `try` left a child parsing on after this process had
            # exited (as `report_parallel`'s workers were). The child unblocks them (`_child`).
            with stop_signals_deferred():
                child.start()
            send.close()
            counters = _parse_both(path, config, timeline_epoch_s, plan, spool, span, shared,
                                   recv, on_read)
        finally:
            send.close()
            recv.close()
            if child.pid is not None:  # started
                if child.is_alive():
                    child.kill()
                child.join()
    except BaseException:
        spool.close()
        shared.close()
        raise
    return spool, counters


def _parse_both(path: str, config: Config, timeline_epoch_s: float | None, plan: Plan,
                spool: EventSpool, span: LogSpan, shared: IO[bytes], recv: Connection,
                on_read: Callable[[str, int], object] | None = None) -> dict[str, int]:
    """This process's parts, then the child's taken or parsed again (see the module
    docstring); the counters."""
    parser = offline_parser(config, timeline_epoch_s)
    # The child parses its part as fast, at the same time: this part's share is the whole's.
    first = LogFile(path, config.logs.max_line_bytes, on_read)
    for start, end, flush in plan.head:
        for ev in file_events(parser, first, start, end, flush=flush):
            span.observe(ev)
            spool.add(ev)
    half = _receive(recv)
    if half is not None and half.state is not None and half.state == parser.resume_state():
        merged = _merged_counters(parser.counters, half)
        if merged is not None:
            spool.adopt(shared, half.runs, half.items)
            span.observed_after(half.files)
            return log_counters(merged, first.nul_bytes + half.nul_bytes,
                                first.cut_lines + half.cut_lines)
    shared.close()
    rest = LogFile(path, config.logs.max_line_bytes, on_read)
    for ev in file_events(parser, rest, plan.seam, plan.end):
        span.observe(ev)
        spool.add(ev)
    return log_counters(parser.counters, first.nul_bytes + rest.nul_bytes,
                        first.cut_lines + rest.cut_lines)


def _receive(recv: Connection) -> _Half | None:
    try:
        msg = recv.recv()
    except (EOFError, OSError):  # the child died: the rest is parsed here
        return None
    return msg if isinstance(msg, _Half) else None


def _merged_counters(mine: dict[str, int], half: _Half) -> dict[str, int] | None:
    """This process's counters and what the child counted past the seam, each name where one
    parse first counts it; None when that place is not known (a name the child counted
    before the seam, and this process did not)."""
    out = dict(mine)
    before = half.counters_at_seam
    for name, n in half.counters.items():
        more = n - before.get(name, 0)
        if not more:
            continue
        if name in out:
            out[name] += more
        elif name in before:
            return None
        else:
            out[name] = more
    return out


def _child(path: str, config: Config, timeline_epoch_s: float | None, plan: Plan,
           shared: IO[bytes], send: Connection) -> None:
    """The file from `plan.seam` to `plan.end`, into sorted runs appended to `shared` (see the
    module docstring)."""
    # Forked with the stop signals held back (`spool_planned`): they reach it again.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    try:
        half = _parse_rest(path, config, timeline_epoch_s, plan, shared)
    except BaseException:  # noqa: BLE001 - the parent parses the rest itself, and says what
        half = None  # is wrong (an unreadable file, a full disk) as one process would
    try:
        send.send(half)
    finally:
        send.close()


def _parse_rest(path: str, config: Config, timeline_epoch_s: float | None, plan: Plan,
                shared: IO[bytes]) -> _Half:
    parser = offline_parser(config, timeline_epoch_s)
    limit = config.logs.max_line_bytes
    for start, end, flush in plan.warm:
        if end is None or end > start:  # the events are thrown away: the state counts
            for _ in file_events(parser, LogFile(path, limit), start, end, flush=flush):
                pass
    state = parser.resume_state()
    at_seam = dict(parser.counters)
    spool = EventSpool(first_seq=CHILD_FIRST_SEQ, run_file=shared)
    span = LogSpan(0.0)
    log = LogFile(path, limit)
    for ev in file_events(parser, log, plan.seam, plan.end):
        span.observe(ev)
        spool.add(ev)
    runs = spool.spill()
    return _Half(state, at_seam, dict(parser.counters), runs, len(spool), dict(span.files),
                 log.nul_bytes, log.cut_lines)
