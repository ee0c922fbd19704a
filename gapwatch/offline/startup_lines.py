"""The daemon's startup lines a recording holds (`record --log`), read back for a window that
starts after them, and the log lines it holds in the 5 minutes each side of the window
(`recorded_around`), read as a `--log` file's are around it.

Who calls it: `gapwatch.offline.report.detect_either` (a window's report, `compare`'s sides)
and the windowed replay (`gapwatch.engine.runtime`): a window's report feeds them first, as it
keeps a `--log` file's startup lines (`gapwatch.offline.log_span.LogSpan`); the log around the
window waits on disk until fed (`gapwatch.offline.log_around.LogAround`).

Why: cuzk says its settings once, as it starts (its memory budget and pinned pool, its GPU
workers, the synthesis dispatcher's batch size, ...), and a window hours later holds none of
them; the advice reads them. Where they are looked for, file by file back through a set from
the last one, until one holds a start before the window:
- a plain file: a byte search back from the window's start for the last `starting cuzk engine`
  (`log_split.last_restart`, at C's speed), then the lines from `log_split.BACK_BYTES` before
  it (cuzk logs its memory budget and pinned pool first) to `log_split.STARTUP_BYTES` after;
- a gzip file cannot be read backwards: it is inflated from its start up to the window (the
  window's own reading does the same, `gzip_lines.GzipLines.pass_pieces`), each piece searched
  for the marker as bytes, never split into lines, and the same bytes around the last start
  before the window kept; what follows a start is a few MB at most, so a day costs its inflating.
Only a recording that holds log events is searched (a plain file `LOG_PROBE_BYTES` each side of
the window's start, a gzip file its first `LOG_PROBE_BYTES`: cuzk logs as it works, and
`record --log` records it all along); one without is not searched back through (1.3 s for a day
of 8 GPUs). The lines kept are the log events from `LEAD_S` before the start's own line on,
before the window, that `log_span.is_startup` names.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, Final

import msgspec

from gapwatch.base.gzip_stream import GZIP_HEAD_BYTES, inflated, is_gzip
from gapwatch.core.codec import decode_record, gpu_line_prefix, gpu_line_prefix_type_last
from gapwatch.core.models import LogEvent
from gapwatch.cuzk.log_lines import ANCHOR_MESSAGE
from gapwatch.logs.once import may_hold_log_lines
from gapwatch.offline import log_span, log_split
from gapwatch.offline.log_around import LogAround
from gapwatch.offline.log_span import is_startup
from gapwatch.offline.log_split import last_restart
from gapwatch.sources.files import header_of, read_any
from gapwatch.sources.gzip_lines import MAX_LINE_BYTES
from gapwatch.sources.recording import Reading
from gapwatch.sources.time_window import TimeWindow, lines_time, offset_before, wall_of_text

#: A recorded start's lines are those from `LEAD_S` before its `starting cuzk engine` on (cuzk
#: logs its memory budget and pinned pool first: `log_split.BACK_BYTES`).
LEAD_S: Final = 60.0
#: The bytes looked at for log events recorded inside (about 4 minutes of 8 GPUs), and how the
#: codec starts a log event's line.
LOG_PROBE_BYTES: Final = 16 << 20
_LOG_LINE: Final = b'{"type":"log"'
#: A plain file's search back starts this far past the line the window's lines start at (the
#: seek finds that line within a MB: the lines around it are judged by their times).
PAST_BYTES: Final = 2 << 20
_MARKER: Final = ANCHOR_MESSAGE.encode()


def recorded_startup(path: str | Path, since_s: float) -> list[LogEvent]:
    """The daemon's startup lines the recording at `path` holds from its last start before
    `since_s`, as they were recorded; [] where there are none (see the module docstring).
    Raises RecordingError (the recording)."""
    rec = read_any(path)
    rec.close()
    probed = False
    for file in reversed(rec.files):
        with open(file, "rb") as f:
            gzipped = is_gzip(f.read(GZIP_HEAD_BYTES))
            if not gzipped:
                before = min(os.fstat(f.fileno()).st_size,
                             offset_before(f, 0, since_s) + PAST_BYTES)
                if not probed and not _holds_log_lines(f, before):
                    return []  # no `record --log` recording: nothing to look back for
                probed = True
        if gzipped:
            block = _gzip_block(file, since_s)
            if block is None:
                return []  # no log event in its start: no `record --log` recording
            events = _startup_of(block.split(b"\n"), since_s)
            if events:
                return events
            continue
        while (at := last_restart(str(file), before)) is not None:
            if _starts_before(file, at, since_s):
                events = _startup_of(_lines_around(file, at), since_s)
                if events:
                    return events
            before = at  # a start at or after the window, or no start: the one before it
    return []


def window_lead_in(path: str | Path, window: TimeWindow | None, cuzk: bool, own_log: bool
                   ) -> LogAround:
    """What a window of the recording `path` is fed around its records (the report's, compare's
    sides' and a windowed replay's one rule): with cuzk's rules on (`cuzk`), the daemon's
    startup lines it holds from before the window (`recorded_startup`) and, where no `--log`
    is given (`own_log`), its own log around the window (`recorded_around`); empty for a whole
    recording. The caller closes it. Raises RecordingError, SpoolError."""
    if window is None or not cuzk:
        return LogAround([])
    startup = [] if window.since_s is None else recorded_startup(path, window.since_s)
    return recorded_around(path, window, startup) if own_log else LogAround(startup)


def recorded_around(path: str | Path, window: TimeWindow,
                    startup: Sequence[LogEvent] = ()) -> LogAround:
    """The log events a recording holds in the `log_span.MARGIN_S` before `window` and after
    it (each side open where the window is), after the daemon's `startup` lines
    (`recorded_startup`): what a window of a recording holding its log reads around it, as a
    `--log` file's lines are read 5 minutes each side of it (`log_window`): the gaps'
    evidence, the PoSt in flight at its start (its begin) and at its end (its completion;
    `detect._Side` keeps a proof said after the window only where it began in it). Without
    them a WinningPoSt begun before a window and 30.6 s into its 30 s deadline inside it was
    not said late in the window, though the same window with the same log as `--log` said it.
    One more read of the recording, from the margin before the window to the margin after it,
    its GPU samples passed over undecoded, its log events spooled on disk as they are read
    (`LogAround`); none for a recording that cannot hold log events (`may_hold_log_lines`).
    The caller closes it. Raises RecordingError, SpoolError (no room for the spool)."""
    around = LogAround(startup)
    header = header_of(path)
    if not may_hold_log_lines(header):
        return around
    margin_s = log_span.MARGIN_S
    wider = TimeWindow(None if window.since_s is None else window.since_s - margin_s,
                       None if window.until_s is None else window.until_s + margin_s, "")
    gpus = [g.index for g in header.gpus]
    rec = read_any(path, Reading(skip_prefixes=tuple(map(gpu_line_prefix, gpus)),
                                 skip_type_last=tuple(map(gpu_line_prefix_type_last, gpus)),
                                 window=wider))
    try:
        for r in rec.records:
            if type(r) is not LogEvent:
                continue
            if window.since_s is not None and r.t_wall_s < window.since_s:
                around.add_before(r)
            elif window.until_s is not None and r.t_wall_s >= window.until_s:
                around.add_after(r)
    except BaseException:
        around.close()
        raise
    finally:
        rec.close()
    return around


def _starts_before(file: Path, at: int, since_s: float) -> bool:
    """Whether the line at byte `at` of a plain recording is a recorded start of the daemon
    before `since_s`. The byte search finds the marker in any line (`not starting cuzk engine
    yet`): each such line cost a MB of lines decoded around it (3,000 of them: 50 s), this
    one line now."""
    with open(file, "rb") as f:
        f.seek(at)
        line = f.readline(MAX_LINE_BYTES)
    try:
        r = decode_record(line)
    except (msgspec.DecodeError, RecursionError):
        return False
    return type(r) is LogEvent and r.name == ANCHOR_MESSAGE and r.t_wall_s < since_s


def _holds_log_lines(f: BinaryIO, around: int) -> bool:
    """Whether a plain recording holds log events where the window starts (`LOG_PROBE_BYTES`
    each side of it)."""
    f.seek(max(0, around - LOG_PROBE_BYTES))
    return _LOG_LINE in f.read(2 * LOG_PROBE_BYTES)


def _lines_around(file: Path, at: int) -> Iterator[bytes]:
    """A plain file's lines from `log_split.BACK_BYTES` before byte `at` (the line of the
    daemon's start) to `log_split.STARTUP_BYTES` after it."""
    back = log_split.BACK_BYTES
    with open(file, "rb") as f:
        f.seek(max(0, at - back))
        if at > back:
            f.readline(MAX_LINE_BYTES)  # the rest of a line cut by the step back
        read = 0
        while read < back + log_split.STARTUP_BYTES:
            line = f.readline(MAX_LINE_BYTES)
            if not line:
                break
            read += len(line)
            yield line


def _gzip_block(file: Path, since_s: float) -> bytes | None:
    """The whole lines of a gzip recording from `log_split.BACK_BYTES` before its last line of
    the daemon's start before `since_s` to `log_split.STARTUP_BYTES` after ("" without one),
    inflated from the file's start up to the window's; None where its first `LOG_PROBE_BYTES`
    hold no log event. Damage ends the search with what was found before it (the window's
    reader says what is wrong with the file)."""
    back, after = log_split.BACK_BYTES, log_split.STARTUP_BYTES
    block: list[bytes] = []
    cut = True  # the block's first line is cut (it is whole only at the file's start)
    need = 0  # bytes still to take after a start found
    prev = b""  # the last `back` bytes of whole lines before the region read
    carry: list[bytes] = []  # a line begun at the end of the last piece, in pieces
    carry_bytes = 0
    probed, reached = 0, False
    try:
        with open(file, "rb") as f:
            for piece in inflated(f):
                end = piece.rfind(b"\n") + 1
                if end == 0:  # inside a long line: held to its end, within a line's bound
                    if carry_bytes + len(piece) <= MAX_LINE_BYTES:
                        carry.append(piece)
                        carry_bytes += len(piece)
                    else:  # longer than any record: not one; the region starts cut
                        carry, carry_bytes = [], 0
                    continue
                region = b"".join((*carry, piece[:end])) if carry else piece[:end]
                carry = [piece[end:]]
                carry_bytes = len(carry[0])
                if probed >= 0:
                    if _LOG_LINE in region:
                        probed = -1  # seen: not looked for again
                    else:
                        probed += len(region)
                        if probed >= LOG_PROBE_BYTES:
                            return None
                if need > 0:
                    block.append(region[:need])
                    need -= min(need, len(region))
                at = None if reached else _last_start_before(region, since_s)
                if at is not None:
                    joined = prev + region
                    at += len(prev)
                    cut = at > back or bool(prev)
                    block = [joined[max(0, at - back):at + after]]
                    need = max(0, at + after - len(joined))
                # The window's start is reached where the lines show it (a region of lines
                # without a time, the header's, says nothing).
                t = lines_time(region, len(region))
                reached = reached or (t is not None and t >= since_s)
                if reached and need <= 0:
                    break
                prev = region[-back:]
    except (EOFError, zlib.error, OSError):
        pass
    return _whole_lines(b"".join(block), cut)


def _last_start_before(region: bytes, since_s: float) -> int | None:
    """The offset of the line of the last daemon start in `region` (whole lines) whose time is
    before `since_s`, or None."""
    at = region.rfind(_MARKER)
    while at >= 0:
        start = region.rfind(b"\n", 0, at) + 1
        t = wall_of_text(region[start:region.find(b"\n", at) + 1])
        if t is not None and t < since_s:
            return start
        at = region.rfind(_MARKER, 0, start)
    return None


def _whole_lines(data: bytes, cut: bool) -> bytes:
    """`data`'s whole lines: from its first line (or the second where the first is `cut`) to
    its last newline."""
    first = data.find(b"\n") + 1 if cut else 0
    return data[first:data.rfind(b"\n") + 1]


def _startup_of(lines: Iterable[bytes], since_s: float) -> list[LogEvent]:
    """The startup log events among `lines` (recorded lines), before `since_s`, from `LEAD_S`
    before the daemon's start on; [] without a start among them."""
    out: list[LogEvent] = []
    anchor: LogEvent | None = None
    for line in lines:
        if not line.strip():
            continue
        try:
            r = decode_record(line)
        except (msgspec.DecodeError, RecursionError):
            continue  # a bad line: the window's reader counts those it reads
        if type(r) is LogEvent and r.t_wall_s < since_s and is_startup(r):
            out.append(r)
            if anchor is None and r.name == ANCHOR_MESSAGE:
                anchor = r
    if anchor is None:
        return []
    return [e for e in out if e.t_wall_s >= anchor.t_wall_s - LEAD_S]
