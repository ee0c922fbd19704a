"""Number, time and text formatting shared by the dashboard widgets, the snapshot summary and the
report.

Pure functions with no Textual import, so `gapwatch.sinks.snapshot` (core) can use them too. Every
formatter turns None into "n/a": missing data is said, never printed as 0. `visible` is the one
rule for showing text from outside (log lines, hints that quote them, problems).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

NA = "n/a"

#: Colour and style sequences (CSI ... m). cuzk writes them even to files; for display they are
#: noise, not content, and the parser strips them too.
_SGR = re.compile(r"\x1b\[[0-9;:]*m")
#: What a terminal would act on instead of showing: C0 controls but tab (including ESC, CR, LF,
#: BEL, backspace), DEL, the C1 controls (0x9b is a one-byte CSI on some terminals), the line
#: and paragraph separators, and the bidirectional overrides that reorder what is shown.
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


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


def gbps(bytes_per_s: float | None) -> str:
    """Bytes/s as GB/s with one decimal (two below 1 GB/s, where the pageable trickle lives)."""
    if bytes_per_s is None:
        return NA
    gb = bytes_per_s / 1e9
    return f"{gb:.2f}" if gb < 1 else f"{gb:.1f}"


def pct(value: float | None, digits: int = 0) -> str:
    if value is None:
        return NA
    return f"{value:.{digits}f}%"


def frac_pct(fraction: float | None) -> str:
    """A 0..1 fraction as a percentage."""
    return NA if fraction is None else f"{fraction * 100:.0f}%"


def link_pct(bytes_per_s: float | None, link_bytes_per_s: float | None) -> str:
    if bytes_per_s is None or not link_bytes_per_s:
        return NA
    return f"{bytes_per_s / link_bytes_per_s * 100:.0f}%"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return NA
    if seconds < 10:
        return f"{seconds:.2f}s"
    if seconds < 120:
        return f"{seconds:.1f}s"
    return f"{seconds / 60:.1f}m"


def clock(t_wall_s: float, millis: bool = False) -> str:
    """UTC HH:MM:SS(.mmm) of a Unix time: cuzk's tracing lines print UTC (`...Z`), so the
    dashboard's times line up with the log the user has open next to it."""
    base = datetime.fromtimestamp(t_wall_s, UTC).strftime("%H:%M:%S")
    if millis:
        return f"{base}.{int((t_wall_s % 1) * 1000):03d}"
    return base


def utc_stamp(t_wall_s: float) -> str:
    """Compact UTC time for file names: 20261130T090626Z."""
    return datetime.fromtimestamp(t_wall_s, UTC).strftime("%Y%m%dT%H%M%SZ")


def bytes_iec(n: float | None) -> str:
    if n is None:
        return NA
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def window_label(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 120 else f"{seconds:g} s"
