"""Number, unit, time and text formatting shared by every text output: the dashboard widgets,
hints, the snapshot summary, the report, the closing lines, the Perfetto labels.

Pure functions with no Textual import, so the core and the sinks use them too. One home for each
way of writing a fact, so that the same number reads the same on every screen:
- rates: `rate` ("4.2 GB/s", "0.63 GB/s", "12 MB/s") where the unit goes with the number, `gbps`
  (the number alone, in GB/s) in a column whose heading names the unit;
- sizes: `size` ("7.5 GiB", "512.0 MiB");
- the link: `link_fraction` (a rate's share of a link: the one rule behind every "% of link"),
  `link_pct` ("7%") and `link_shape` ("Gen5 x16").
Every formatter turns None into "n/a": missing data is said, never printed as 0. `visible` is
the one rule for showing text from outside (log lines, hints that quote them, problems).
"""

from __future__ import annotations

import math
import re
import unicodedata
from datetime import UTC, datetime
from typing import Final

NA: Final = "n/a"

#: Colour and style sequences (CSI ... m). A prover can write them even to files (e.g. cuzk);
#: for display they are noise, not content, and the parser strips them too.
_SGR = re.compile(r"\x1b\[[0-9;:]*m")
#: What a terminal would act on instead of showing: C0 controls but tab (including ESC, CR, LF,
#: BEL, backspace), DEL, the C1 controls (0x9b is a one-byte CSI on some terminals), the line
#: and paragraph separators, and the bidirectional overrides, isolates and marks that reorder
#: what is shown.
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                     "\u202a-\u202e\u2066-\u2069]")
#: The part of `_UNSAFE` that JSON lets through raw inside a string: all but the C0 controls,
#: which JSON escapes itself. Never the newlines and spaces an indented document is laid out with.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                          "\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def visible(text: str) -> str:
    """`text` made safe to show on one line of a terminal or in a Markdown file.

    Colour sequences are dropped; every other control character is written out in Python's
    escape notation (ESC as `\\x1b`, CR as `\\x0d`, a right-to-left override as `\\u202e`), so
    that `\\x1b[?1049l` in a log line is read, not obeyed (it used to switch the terminal out of
    the dashboard's screen). Markup such as `[bold]` is left alone: the widgets put text in
    literally, never through a markup parser.
    """
    if text.isprintable():  # the common case, checked in C
        return text
    if "\x1b" in text:
        text = _SGR.sub("", text)
    return _UNSAFE.sub(_escape, text)


def json_visible(encoded: str) -> str:
    """JSON text made safe for a terminal, the same JSON: the characters `visible` writes out
    that JSON lets through raw (C1 controls, DEL, the bidi overrides and isolates, the line
    separators; JSON already escapes C0) become `\\uXXXX` escapes. Outside strings JSON is
    ASCII and has no DEL, so replacing them anywhere keeps the document, and what it decodes
    to, unchanged; an indented document's layout (newlines) is left alone."""
    if encoded.isascii() and "\x7f" not in encoded:  # the common case, checked in C
        return encoded
    return _JSON_UNSAFE.sub(_json_escape, encoded)


def _json_escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


#: What Markdown (GitHub's flavour included) acts on inside a line: escapes, code spans,
#: emphasis and strike-through, links and images, raw HTML and autolinks (`<details>`, `<a
#: href>`: GitHub keeps them), entity references (`&#8238;` is a right-to-left override once
#: rendered), table cells, headings, math. Each is written with a backslash before it, which
#: every CommonMark renderer shows as the character itself.
_MD_ACTIVE = re.compile(r"[\\`*_\[\]<>|&~#$]")


#: What GitHub acts on after rendering, whatever backslash precedes it (github/markup#1168):
#: `@name` is a mention (a notification to that user or team), `#123` a reference (a line in
#: that issue's timeline). An empty HTML comment after the sign renders as nothing and breaks
#: both; the text reads the same. Matched after escaping: `#` is `\#` by then.
_MD_REFERENCE = re.compile(r"(@|\\#)(?=\w)")


def markdown(text: str, width: int | None = None) -> str:
    """Outside text (a path, a setting's value, a job id) for a Markdown line or table cell:
    `visible` first (one line, no control characters: a newline is `\\x0a`), cut to `width`
    cells, then every Markdown-active character backslash-escaped, so that it neither breaks
    the table nor becomes HTML, a link or markup when the document is pasted into a ticket,
    and a mention or an issue reference broken by an empty comment (`@<!-- -->team`), so that
    pasting it notifies nobody. The one rule for Markdown outputs (`gapwatch compare
    --markdown`, the snapshot's summary.md)."""
    shown = visible(text)
    if width is not None:
        shown = fit(shown, width, pad=False)
    return _MD_REFERENCE.sub(r"\1<!-- -->", _MD_ACTIVE.sub(r"\\\g<0>", shown))


def _char_cells(c: str) -> int:
    """Terminal cells of one character: 0 for combining marks and format characters (a
    zero-width joiner), 2 for East Asian wide and full-width ones, else 1."""
    if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1


def cells(text: str) -> int:
    """The width of `text` on a terminal, in cells (`len` counts a wide character as one and a
    combining mark as one: a column of job ids holding them went out of line)."""
    if text.isascii():  # the common case, checked in C
        return len(text)
    return sum(_char_cells(c) for c in text)


def fit(text: str, width: int, right: bool = False, keep_end: bool = False,
        pad: bool = True, keep_both: bool = False) -> str:
    """`text` in a column `width` cells wide: cut with "…" where it is wider (its end kept
    when `keep_end`: a path; its start and its end when `keep_both`: a host and port, whose
    differences lie at either end), padded with spaces (on the left when `right`) unless not
    `pad`. Call it on text already through `visible`: the escapes it writes out take cells
    too. A tab (which `visible` keeps) is one space here: its width depends on the column it
    starts in, which a fitted cell cannot know (a GPU name of tabs moved the header's badge,
    and drawn raw on the dashboard it let the previous screen show through)."""
    if "\t" in text:
        text = text.replace("\t", " ")
    n = cells(text)
    if n > width:
        room = width - 1
        if keep_both:
            head, head_cells = _leading(text, (room + 1) // 2)
            tail, tail_cells = _leading(text[::-1], room - head_cells)
            text, n = head + "…" + tail[::-1], head_cells + tail_cells + 1
        elif keep_end:
            body, used = _leading(text[::-1], room)
            text, n = "…" + body[::-1], used + 1
        else:
            body, used = _leading(text, room)
            text, n = body + "…", used + 1
    if not pad or n >= width:
        return text
    return " " * (width - n) + text if right else text + " " * (width - n)


def _leading(text: str, room: int) -> tuple[str, int]:
    """The longest start of `text` within `room` cells, and the cells it takes."""
    kept, used = [], 0
    for c in text:
        w = _char_cells(c)
        if used + w > room:
            break
        kept.append(c)
        used += w
    return "".join(kept), used


def gbps(bytes_per_s: float | None) -> str:
    """Bytes/s as a number of GB/s, for a column whose heading names the unit: one decimal (two
    below 1 GB/s, where the pageable trickle lives)."""
    if bytes_per_s is None:
        return NA
    gb = bytes_per_s / 1e9
    return f"{gb:.2f}" if gb < 1 else f"{gb:.1f}"


def rate(bytes_per_s: float | None) -> str:
    """Bytes/s with its unit: `gbps` and " GB/s", or whole MB/s below 0.1 GB/s (an idle link's
    1-3 MB/s would read 0.00 GB/s)."""
    if bytes_per_s is None:
        return NA
    if bytes_per_s < 1e8:
        return f"{bytes_per_s / 1e6:.0f} MB/s"
    return f"{gbps(bytes_per_s)} GB/s"


def size(n: float | None) -> str:
    """Bytes in binary units (B, KiB, MiB, GiB, TiB), one decimal: the unit the prover's
    buffers and the host's memory are sized in."""
    if n is None:
        return NA
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def link_fraction(bytes_per_s: float | None, link_bytes_per_s: float | None) -> float | None:
    """A rate's share of a link's per-direction capacity (0..1, more on a counter's overshoot);
    None when either is unknown. The one rule behind every "% of link"."""
    if bytes_per_s is None or not link_bytes_per_s or link_bytes_per_s <= 0:
        return None
    return bytes_per_s / link_bytes_per_s


def link_pct(bytes_per_s: float | None, link_bytes_per_s: float | None) -> str:
    """`link_fraction` as "7%" (a column or a header cell)."""
    return frac_pct(link_fraction(bytes_per_s, link_bytes_per_s))


def link_shape(gen: int | None, width: int | None) -> str:
    """`Gen5 x16`: a PCIe link's generation and lane count, `?` for what is unknown."""
    return f"Gen{gen if gen is not None else '?'} x{width if width is not None else '?'}"


def pct(value: float | None, digits: int = 0) -> str:
    if value is None:
        return NA
    return f"{value:.{digits}f}%"


def frac_pct(fraction: float | None) -> str:
    """A 0..1 fraction as a percentage."""
    return NA if fraction is None else f"{fraction * 100:.0f}%"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return NA
    if seconds < 10:
        return f"{seconds:.2f}s"
    if seconds < 120:
        return f"{seconds:.1f}s"
    return f"{seconds / 60:.1f}m"


def far(seconds: float) -> str:
    """How far apart, in the unit a person would say it: days, hours, else `duration`'s (a
    log of another day; a clock stepped years ahead: "3650.0 days", not "5256000.0m")."""
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:.1f} hours"
    return duration(seconds)


#: The first Unix time `datetime` cannot give (the year 10000).
_LAST_DATETIME_S: Final = 253_402_300_800.0


def clock(t_wall_s: float, millis: bool = False) -> str:
    """UTC HH:MM:SS(.mmm) of a Unix time: a prover's tracing lines (e.g. cuzk's) print UTC
    (`...Z`), so the dashboard's times line up with the log the user has open next to it.

    Every gap's explanation writes a few (a day's report: ~1 M): the time of day is worked out
    from the seconds where `datetime` would say the same (a fraction that its rounding to
    microseconds cannot carry into the next second, a time in its range), else by it."""
    whole = math.floor(t_wall_s) if 0.0 <= t_wall_s < _LAST_DATETIME_S else None
    if whole is not None and t_wall_s - whole < 0.999:
        minutes, sec = divmod(whole % 86400, 60)
        base = f"{minutes // 60:02d}:{minutes % 60:02d}:{sec:02d}"
    else:
        base = datetime.fromtimestamp(t_wall_s, UTC).strftime("%H:%M:%S")
    if millis:
        return _with_millis(t_wall_s, base)
    return base


def _with_millis(t_wall_s: float, base: str) -> str:
    """`clock`'s HH:MM:SS.mmm: the time to the microsecond (the resolution of the log lines it
    sits beside, `...00.123456Z`, and of `datetime`), then cut to the millisecond as those
    lines' first digits read: cut from the float, 00.123 read .122 and 70.05 s read .049 (the
    binary fraction just below); rounded to the ms, 59.9995 s read 00:01:00.000 beside a
    `clock` of 00:00:59."""
    whole_us = round(t_wall_s * 1_000_000)
    whole_s, us = divmod(whole_us, 1_000_000)
    if whole_s >= _LAST_DATETIME_S:  # no later second to carry into: cut, as before
        return f"{base}.{int((t_wall_s % 1) * 1000):03d}"
    return f"{clock(float(whole_s))}.{us // 1000:03d}"


def utc_stamp(t_wall_s: float) -> str:
    """Compact UTC time for file names: 20261130T090626Z."""
    return datetime.fromtimestamp(t_wall_s, UTC).strftime("%Y%m%dT%H%M%SZ")


def window_label(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 120 else f"{seconds:g} s"


def and_list(words: list[str]) -> str:
    """`queue, synthesis and GPU wait`: a list said in words ("" for none)."""
    if len(words) < 2:
        return "".join(words)
    return f"{', '.join(words[:-1])} and {words[-1]}"
