"""Line clean-up and time prefixes: ANSI colours, CR, and the timestamps that tools put in front.

Who calls it: `gapwatch.logs.parse.LogParser` (every line, first), `tracing` and `user_rules` (for
`iso_to_epoch`).

A prover line may reach gapwatch wrapped by a tool that adds a receive time:
- `journalctl -o short-iso-precise`: `2026-11-30T09:06:26.553439+0000 host cuzk[812]: LINE`
- `journalctl -o short-precise`:     `Nov 30 09:06:26.553439 host cuzk[812]: LINE`
- moreutils `ts` (default and `%.S`): `Nov 30 09:06:26 LINE` / `Nov 30 09:06:26.553439 LINE`
- `ts '%Y-%m-%d %H:%M:%.S'` or ISO:   `2026-11-30 09:06:26.553439 LINE`
- `ts '%.s'` (Unix seconds):         `1796029586.553439 LINE`
- a container's log file as its runtime keeps it: Kubernetes' CRI format
  (`/var/log/pods/.../0.log`: `2026-11-30T09:06:26.553439123Z stderr F LINE`; a `P` line is a
  part of a longer one, read as it is) and Docker's `json-file` driver
  (`{"log":"LINE\n","stream":"stderr","time":"2026-11-30T09:06:26.553439123Z"}`: the line
  decoded from its JSON, the time the runtime's).
`strip_prefix` peels one such prefix and returns its time. Prefixes without a zone are local time;
the month-day forms carry no year, so the year is taken from the arrival time (and a date that
would lie more than a day in the future is put in the previous year: a log read across New Year).
"""

from __future__ import annotations

import calendar
import json
import re
import time
from datetime import datetime, timedelta, timezone

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]")

_MONTHS = {m: i for i, m in enumerate(calendar.month_abbr) if m}

# ISO date-time (T or space), optional fraction, optional zone; then at least one space.
_ISO_PREFIX = re.compile(
    r"(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d(?::?\d\d)?)?) +"
)
_MONTH_PREFIX = re.compile(r"([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d)((?:\.\d+)?) +")
_EPOCH_PREFIX = re.compile(r"(1\d{9}(?:\.\d+)?) +")
# journald's "host ident[pid]: " after the time. The [pid] is required so that a `ts`-prefixed
# message that happens to read "word word: ..." keeps its words.
_JOURNAL_ORIGIN = re.compile(r"\S+ [^\s\[\]:]+\[\d+\]: ")
# CRI's "stream tag " after the time (F: a full line, P: a part of a longer one).
_CRI_ORIGIN = re.compile(r"(?:stdout|stderr) [FP] ")
# Docker's json-file record, its fields in the order the daemon writes them (`attrs` where the
# container's `--log-opt labels/env` asked for them).
_DOCKER_JSON = re.compile(r'\{"log":"((?:[^"\\]|\\.)*)","stream":"(?:stdout|stderr)",'
                          r'(?:"attrs":\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\},)?'
                          r'"time":"([^"]{19,40})"\}$')
#: A UTF-16 surrogate on its own, which a JSON escape can make and no UTF-8 text holds.
_SURROGATE = re.compile("[\ud800-\udfff]")

_SECOND_CACHE: dict[str, float] = {}
_CACHE_MAX = 4096


def strip_ansi(text: str) -> str:
    """Remove colour and other CSI escape sequences (cuzk writes them even to files)."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def _zone_offset_s(zone: str) -> float | None:
    """Seconds east of UTC for 'Z', '+HH:MM', '+HHMM', '+HH'; None for malformed zones."""
    if zone in ("Z", "z"):
        return 0.0
    sign = 1 if zone[0] == "+" else -1
    digits = zone[1:].replace(":", "")
    if not digits.isdigit() or len(digits) not in (2, 4):
        return None
    hours = int(digits[:2])
    minutes = int(digits[2:]) if len(digits) == 4 else 0
    if hours > 23 or minutes > 59:
        return None
    return sign * (hours * 3600 + minutes * 60)


def iso_to_epoch(text: str) -> float | None:
    """Unix seconds of an ISO-8601 / RFC3339 date-time, or None if it is not one.

    Accepts `YYYY-MM-DD[T ]HH:MM:SS[.fff...][Z|+HH:MM|+HHMM]`; no zone means local time. The
    whole-second part is cached (tracing lines repeat the same second many times), which keeps
    this off the top of the parser's profile.
    """
    if len(text) < 19:
        return None
    head = text[:19]
    rest = text[19:]
    frac = 0.0
    if rest and rest[0] in ".,":
        after = rest[1:].lstrip("0123456789")  # the fraction's ASCII digits, in one C call
        digits = rest[1:len(rest) - len(after)]
        if not digits:
            return None
        # Nanoseconds are the finest a prover writes and more than a float holds at today's
        # epoch; `int()` of more than 4,300 digits raises (a hostile fraction lost the line).
        digits = digits[:9]
        frac = int(digits) / 10 ** len(digits)
        rest = after
    key = head + rest
    base = _SECOND_CACHE.get(key)
    if base is None:
        base = _base_seconds(head, rest)
        if base is None:
            return None
        if len(_SECOND_CACHE) >= _CACHE_MAX:
            _SECOND_CACHE.clear()
        _SECOND_CACHE[key] = base
    return base + frac


def _base_seconds(head: str, zone: str) -> float | None:
    if head[4] != "-" or head[7] != "-" or head[10] not in "T t" or head[13] != ":":
        return None
    try:
        naive = datetime(
            int(head[0:4]), int(head[5:7]), int(head[8:10]),
            int(head[11:13]), int(head[14:16]), int(head[17:19]),
        )  # fmt: skip
    except ValueError:
        return None
    if not zone:
        return time.mktime(naive.timetuple())
    offset = _zone_offset_s(zone)
    if offset is None:
        return None
    return naive.replace(tzinfo=timezone(timedelta(seconds=offset))).timestamp()


def _month_day_to_epoch(mon: str, day: str, hh: str, mm: str, ss: str, frac: str,
                        arrival_wall_s: float) -> float | None:
    month = _MONTHS.get(mon)
    if month is None:
        return None
    year = time.localtime(arrival_wall_s).tm_year
    try:
        stamp = time.mktime(
            datetime(year, month, int(day), int(hh), int(mm), int(ss)).timetuple()
        )
    except (ValueError, OverflowError):
        return None
    if stamp > arrival_wall_s + 86400:  # Dec 31 read on Jan 1
        try:
            stamp = time.mktime(
                datetime(year - 1, month, int(day), int(hh), int(mm), int(ss)).timetuple()
            )
        except (ValueError, OverflowError):
            return None
    return stamp + (float(frac) if frac else 0.0)


def strip_prefix(text: str, arrival_wall_s: float) -> tuple[str, float] | None:
    """Peel a journald/`ts` time prefix: (rest of line, prefix time), or None if there is none.

    The caller has already checked that the line is not a tracing line (whose own RFC3339 time
    also starts the line).
    """
    c = text[:1]
    if c == "{":
        return _docker_json(text)
    if "0" <= c <= "9":
        m = _ISO_PREFIX.match(text)
        if m is not None:
            stamp = iso_to_epoch(m.group(1).replace(" ", "T", 1))
        else:
            m = _EPOCH_PREFIX.match(text)
            if m is None:
                return None
            stamp = float(m.group(1))
    elif "A" <= c <= "Z":
        m = _MONTH_PREFIX.match(text)
        if m is None:
            return None
        mon, day, hh, mm, ss, frac = m.groups()
        stamp = _month_day_to_epoch(mon, day, hh, mm, ss, frac, arrival_wall_s=arrival_wall_s)
    else:
        return None
    if stamp is None:
        return None
    rest = text[m.end():]
    origin = _JOURNAL_ORIGIN.match(rest) or _CRI_ORIGIN.match(rest)
    if origin is not None:
        rest = rest[origin.end():]
    return rest, stamp


def _docker_json(text: str) -> tuple[str, float] | None:
    """A Docker json-file record's line and time, or None for any other text (a JSON line of
    another shape is the prover's own, left to the rules)."""
    m = _DOCKER_JSON.match(text)
    if m is None:
        return None
    stamp = iso_to_epoch(m.group(2))
    if stamp is None:
        return None
    try:
        line = json.loads(f'"{m.group(1)}"')
    except ValueError:
        return None
    if "\\u" in m.group(1):
        # JSON may escape a lone surrogate (`\ud800`), which no text file holds: it made every
        # writer after the parser raise (UnicodeEncodeError). Replaced, as the tailer replaces
        # bytes that are not UTF-8.
        line = _SURROGATE.sub("\ufffd", line)
    # The colours cuzk writes are escaped in the JSON (`\u001b`): stripped once decoded.
    return strip_ansi(line.removesuffix("\n").removesuffix("\r")), stamp
