"""A time window of a recording (`report`/`export --since/--until`, `compare --at` and
`compare --since/--until`): what the user wrote, the wall times it names, and reading only the
records inside it.

Who calls it: `gapwatch.commands` (`report`/`export --since/--until` and each side of
`compare --since/--until`: `moment`, `resolve`; `compare --at`: `split_at`),
`gapwatch.offline` (the window handed to the reader and the `--log` span; `search_bytes` and
`median_time` for the log's own search), and `gapwatch.sources.recording` (`seek_plain`,
`pieces_before`, `within`) and `gapwatch.sources.recording_set` (`LATE_S`: segments outside
are not opened).

Why: a day of 8 GPUs with its log takes minutes to report, and an operator asked about 14:05 wants
that hour, not the day. A windowed report is the report of the recording as if it had been cut at
those times: the records with `since <= t_wall_s < until`. A plain file is not read before the
window: the reader seeks (a binary search over the file's bytes, by the wall times its lines
show as text), counting the newlines it skips so that every problem still names its true line;
a segment outside the window is not opened; the reading stops once the lines are `LATE_S` past
the window's end. A gzip file cannot be seeked: it is inflated from its start, but what lies
before the window is passed over a piece (~1 MB of lines) at a time as it is inflated, never split
into lines or decoded (`pieces_before`, for `gzip_lines.GzipLines.pass_pieces`), its newlines
counted.

The times are wall times (Unix seconds, as recorded). A moment is written as
- an ISO 8601 date and time (`2026-11-30T14:05`, `2026-11-30 14:05:30+02:00`; without a zone:
  UTC, as gapwatch prints times),
- a time of day (`14:05`, `14:05:30`, UTC): its first occurrence at or after the recording's
  start when that lies within the recording, else the occurrence nearest the recording
  (`_time_of_day`: `--since 14:00` of a recording begun at 14:00:05 is that day's 14:00),
- `+DURATION` after the recording's start, `-DURATION` before its data's end (`-1h`: the last
  hour; durations as `gapwatch.core.units.parse_duration` reads them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import IO, NamedTuple

from gapwatch.core import fmt
from gapwatch.core.models import GpuSample, HostSample, Record
from gapwatch.core.units import parse_duration

#: Records are written in the order they arrive, not strictly by their time (a log line or a
#: `/status` answer lands a little after the samples of its moment): the seek starts where the
#: lines are this far before the window, and the reading stops only once they are this far
#: past its end. Records between are decoded and dropped by their own time.
LATE_S = 60.0
#: Lines read at a probe of the binary search, and how many of their times it takes the median
#: of (one line that lies about its time cannot move the search).
PROBE_LINES = 64
PROBE_TIMES = 15
#: Bytes read at a time while counting the newlines the seek skips.
COUNT_BYTES = 1 << 20

_TIME_OF_DAY = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2})(\.\d+)?)?")
_WALL_KEY = b'"t_wall_s":'


class WindowError(ValueError):
    """A window that names nothing of the recording (the message says why, in one line)."""


class Moment(NamedTuple):
    """A moment as written: an absolute wall time, or one to resolve against the recording."""

    text: str
    #: "at" (absolute: `seconds` is the wall time), "day" (a time of day: seconds since
    #: midnight UTC), "start" (seconds after the start), "end" (seconds before the data's end).
    kind: str
    seconds: float


class TimeWindow(NamedTuple):
    """The wall times a windowed read keeps, `since_s <= t < until_s` (None: open on that
    side), and how the user wrote them (for the report's line)."""

    since_s: float | None
    until_s: float | None
    said: str

    def holds(self, t_wall_s: float) -> bool:
        return ((self.since_s is None or t_wall_s >= self.since_s)
                and (self.until_s is None or t_wall_s < self.until_s))

    def describe(self) -> str:
        """`window 2026-11-30 14:00:00 to 15:00:00 UTC (--since 14:00 --until 15:00)`."""
        since = _day(self.since_s) if self.since_s is not None else "the start"
        until = "the end" if self.until_s is None else (
            _day(self.until_s) if self.since_s is None or _date(self.since_s) != _date(
                self.until_s) else fmt.clock(self.until_s))
        return f"window {since} to {until} UTC ({fmt.visible(self.said)})"


def moment(text: str) -> Moment:
    """Read a moment as written on the command line. Raises ValueError naming what it could
    not read (argparse shows it with the flag)."""
    s = text.strip()
    if s[:1] in "+-" and len(s) > 1 and not s[1:2].isspace():
        seconds = parse_duration(s[1:])
        return Moment(text, "start" if s[0] == "+" else "end", seconds)
    m = _TIME_OF_DAY.fullmatch(s)
    if m is not None:
        h, mi, sec = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
        if h > 23 or mi > 59 or sec > 59:
            raise ValueError(f"{text!r} is not a time of day")
        return Moment(text, "day", h * 3600 + mi * 60 + sec + float(m.group(4) or 0))
    try:
        at = datetime.fromisoformat(s.replace("Z", "+00:00") if s.endswith("Z") else s)
    except ValueError:
        raise ValueError(
            f"{text!r} is not a time (write it like 2026-11-30T14:05, 14:05 (UTC), "
            "+2h (after the start) or -1h (before the end))") from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)  # gapwatch prints UTC: a time read off a report is UTC
    return Moment(text, "at", at.timestamp())


def resolve(since: Moment | None, until: Moment | None, start_s: float,
            end_s: float | None, flags: tuple[str, str] = ("--since", "--until")
            ) -> TimeWindow | None:
    """The wall times `since` and `until` name for a recording that starts at `start_s` (its
    header's) and whose data ends at `end_s` (None: unknown). None when neither is given.
    `flags`: the options they were written with, as the window's line says them (`compare`'s
    `--after-since`). Raises WindowError: a moment from the end of a recording whose end is
    unknown, a window that ends before it starts or holds none of the recording."""
    if since is None and until is None:
        return None
    since_s = None if since is None else _wall(since, start_s, end_s)
    until_s = None if until is None else _wall(until, start_s, end_s)
    if since_s is not None and until_s is not None and not until_s > since_s:
        raise WindowError(f"the window ends before it starts ({_day(until_s)} is not after "
                         f"{_day(since_s)} UTC)")
    said = " ".join(part for part in (
        f"{flags[0]} {since.text}" if since else "", f"{flags[1]} {until.text}" if until else "")
        if part)
    window = TimeWindow(since_s, until_s, said)
    if _holds_none(window, start_s, end_s):
        # The window's own dates said: a time of day's date is gapwatch's choice.
        raise WindowError(f"the {window.describe()} holds none of the recording, which runs "
                          f"{_span(start_s, end_s)}")
    return window


def split_at(at: Moment, span_s: float | None, start_s: float, end_s: float | None,
             after_start_s: float | None = None, after_end_s: float | None = None
             ) -> tuple[TimeWindow, TimeWindow]:
    """`compare --at`: the windows before and after the moment `at` (each `span_s` long, or
    to the recording's start and end), `at` resolved against the BEFORE recording (`start_s`,
    `end_s`) and, when it is another, against the AFTER one (`after_start_s`, `after_end_s`).
    Raises WindowError: a side that holds none of its recording."""
    said = f"--at {at.text}" + (f" --span {fmt.duration(span_s)}" if span_s else "")
    at_s = _wall(at, start_s, end_s)
    before = TimeWindow(at_s - span_s if span_s else None, at_s, said)
    _check_holds(before, start_s, end_s, "BEFORE")
    if after_start_s is not None:
        at_s = _wall(at, after_start_s, after_end_s)
        start_s, end_s = after_start_s, after_end_s
    after = TimeWindow(at_s, at_s + span_s if span_s else None, said)
    _check_holds(after, start_s, end_s, "AFTER")
    return before, after


def _check_holds(w: TimeWindow, start_s: float, end_s: float | None, side: str) -> None:
    if _holds_none(w, start_s, end_s):
        raise WindowError(f"{side}: the {w.describe()} holds none of its recording, which "
                          f"runs {_span(start_s, end_s)}")


def _holds_none(w: TimeWindow, start_s: float, end_s: float | None) -> bool:
    """Whether `w` misses the recording from `start_s` to `end_s` (None: not known) whole."""
    return (w.since_s is not None and end_s is not None and w.since_s > end_s) or (
        w.until_s is not None and w.until_s <= start_s)


def _span(start_s: float, end_s: float | None) -> str:
    return f"{_day(start_s)} to {_day(end_s) if end_s is not None else 'its end'} UTC"


def _wall(m: Moment, start_s: float, end_s: float | None) -> float:
    if m.kind == "at":
        return m.seconds
    if m.kind == "start":
        return start_s + m.seconds
    if m.kind == "end":
        if end_s is None:
            raise WindowError(f"{m.text!r} counts back from the recording's end, which cannot be "
                             "read from the file's end (a gzip trace CSV, a gzip file gapwatch did "
                             "not write): give a date and time instead")
        return end_s - m.seconds
    return _time_of_day(m, start_s, end_s)


def _time_of_day(m: Moment, start_s: float, end_s: float | None) -> float:
    """The wall time a time of day (`14:00`, UTC) names in a recording from `start_s` to
    `end_s`: its first occurrence at or after the start when that lies within the recording
    (at or before its end; or the end is not known): a recording begun at 23:50 and
    `--since 00:10` mean the next day's. Otherwise the occurrence nearest the recording: its
    latest before the start (a recording begun at 14:00:05 and `--since 14:00` mean that day's
    14:00, whose window then starts at the recording's start, as an earlier `--since` does),
    unless the first after the recording is nearer its end (`--until 16:21` of a recording
    that ends at 16:20:06 is that day's, not the day before's: that one named a window
    before the recording, and `--since 16:21` the whole recording)."""
    try:
        midnight = datetime.fromtimestamp(start_s, UTC).replace(hour=0, minute=0, second=0,
                                                                microsecond=0)
    except (OverflowError, OSError, ValueError):
        raise WindowError(f"{m.text!r}: the recording's start ({start_s!r}) is no date") from None
    after = midnight + timedelta(seconds=m.seconds)
    if after.timestamp() < start_s:
        after += timedelta(days=1)
    if end_s is None or after.timestamp() <= end_s:
        return after.timestamp()
    before = (after - timedelta(days=1)).timestamp()
    return before if start_s - before < after.timestamp() - end_s else after.timestamp()


def within(records: Iterator[Record], window: TimeWindow,
           samples: tuple[type, ...] = (GpuSample, HostSample)) -> Iterator[Record]:
    """The records inside `window`, by their own wall time; stops reading once a sample is
    `LATE_S` past its end (the rest of the file is not read: samples, not other records, since
    a log line with an absurd time must not end the window; samples with one were already
    let go, `gapwatch.sources.isolated_times`). A record without a wall time (a gap written by
    `record`: the report finds its own) is kept. `samples`: the types that are samples (the
    reader adds its `PassedOver`)."""
    since = window.since_s if window.since_s is not None else float("-inf")
    until = window.until_s if window.until_s is not None else float("inf")
    stop = until + LATE_S
    for r in records:
        t = getattr(r, "t_wall_s", None)
        if t is None:
            yield r
        elif since <= t < until:
            yield r
        elif t >= stop and type(r) in samples:
            return


def seek_plain(raw: IO[bytes], start: int, since_s: float) -> tuple[int, int]:
    """Where a plain recording's lines from `start` (just after its header) reach `LATE_S`
    before `since_s` (`offset_before`), and how many lines lie between `start` and it (counted,
    so that the lines after keep their numbers). Returns (start, 0) when the window starts near
    the beginning. The file's position afterwards is unspecified."""
    offset = offset_before(raw, start, since_s)
    return (start, 0) if offset == start else (offset, _newlines(raw, start, offset))


def pieces_before(since_s: float) -> Callable[[bytes, int], bool]:
    """The judge of a gzip recording's inflated pieces for a window from `since_s`
    (`gzip_lines.GzipLines.pass_pieces`): a piece's whole lines (`data[:end]`) may be passed
    over when their time (`lines_time`) is more than `LATE_S` before `since_s`: the seek's
    rule (`offset_before`), so one lying line cannot end the passing early or make it pass the
    window; lines that show no time are not passed over."""
    target_s = since_s - LATE_S

    def before(data: bytes, end: int) -> bool:
        t = lines_time(data, end)
        return t is not None and t < target_s

    return before


def lines_time(data: bytes, end: int) -> float | None:
    """The time the whole lines of `data[:end]` end at: the median of the times their last
    lines show (`PROBE_TIMES` within `PROBE_LINES`; one line that lies cannot move it), or
    None."""
    def last_first() -> Iterator[bytes]:
        at = end
        while at > 0:
            start = data.rfind(b"\n", 0, at - 1) + 1
            yield data[start:at]
            at = start

    return _probe(last_first())


def offset_before(raw: IO[bytes], start: int, since_s: float) -> int:
    """The offset of a line from which a plain recording's lines (from `start`) are within
    `LATE_S` before `since_s` or later (a binary search over the bytes: at each probe, the
    median time of the lines after it), or `start` when the window starts near it."""
    raw.seek(0, 2)
    lo, _hi = search_bytes(start, raw.tell(), lambda at: _time_after(raw, at),
                           since_s - LATE_S, COUNT_BYTES)
    # The start of the next whole line: the lines before it are before the target.
    return start if lo == start else next_line_start(raw, lo)


def search_bytes(lo: int, hi: int, time_at: Callable[[int], float | None], target_s: float,
                 close_bytes: int) -> tuple[int, int]:
    """A binary search over a file's bytes `lo`..`hi` for where its lines reach `target_s`,
    by `time_at(offset)` (the time the lines after an offset are at, None: they show none,
    taken as later); down to `close_bytes`: (the last offset found before it, the first at or
    after it). The recording's seek and a log's window (`gapwatch.offline.log_window`)."""
    while hi - lo > close_bytes:
        mid = (lo + hi) // 2
        t = time_at(mid)
        if t is None or t >= target_s:
            hi = mid
        else:
            lo = mid
    return lo, hi


def median_time(times: list[float]) -> float | None:
    """The median of a probe's times (one line that lies about its time cannot move it), or
    None for none."""
    return sorted(times)[len(times) // 2] if times else None


def next_line_start(raw: IO[bytes], at: int) -> int:
    """The offset of the first line that starts after byte `at` (the file's end if none), read
    `COUNT_BYTES` at a time: a line of any length is never held whole (also a log's cut:
    `gapwatch.offline.log_split.line_start`)."""
    raw.seek(at)
    pos = at
    while chunk := raw.read(COUNT_BYTES):
        nl = chunk.find(b"\n")
        if nl >= 0:
            return pos + nl + 1
        pos += len(chunk)
    return pos


def _time_after(raw: IO[bytes], at: int) -> float | None:
    """The wall time the whole lines after byte `at` are at: the median of the first
    `PROBE_TIMES` times they show (within `PROBE_LINES` lines), or None."""
    raw.seek(at)
    raw.readline(COUNT_BYTES)  # the rest of the line `at` is in (a longer one: cut, unread)
    return _probe(iter(lambda: raw.readline(COUNT_BYTES), b""))


def _probe(lines: Iterator[bytes]) -> float | None:
    """The median of the first `PROBE_TIMES` times the first `PROBE_LINES` of `lines` show,
    or None: the seek's and the gzip passing's one rule (one line that lies cannot move it)."""
    times: list[float] = []
    for line in islice(lines, PROBE_LINES):
        t = wall_of_text(line)
        if t is not None and t == t:  # a NaN orders nothing
            times.append(t)
            if len(times) == PROBE_TIMES:
                break
    return median_time(times)


def wall_of_text(line: bytes) -> float | None:
    """The wall time a whole line shows as `"t_wall_s":NUMBER`, or None."""
    at = line.find(_WALL_KEY)
    if at < 0 or line[-1:] != b"\n":
        return None
    at += len(_WALL_KEY)
    end = line.find(b",", at)
    try:
        return float(line[at:end if end >= 0 else -2])
    except ValueError:
        return None


def _newlines(raw: IO[bytes], start: int, end: int) -> int:
    raw.seek(start)
    count, left = 0, end - start
    while left > 0:
        data = raw.read(min(COUNT_BYTES, left))
        if not data:
            break
        count += data.count(b"\n")
        left -= len(data)
    return count


def _day(t: float) -> str:
    return _strftime(t, "%Y-%m-%d %H:%M:%S")


def _date(t: float) -> str:
    return _strftime(t, "%Y-%m-%d")


def _strftime(t: float, form: str) -> str:
    """`t` as a UTC date, or the number where it names none (a header's hostile start)."""
    try:
        return datetime.fromtimestamp(t, UTC).strftime(form)
    except (OverflowError, OSError, ValueError):
        return f"{t!r} s"
