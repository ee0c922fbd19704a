"""Rust panic messages on cuzk's stderr: several untimestamped lines, read as one event.

Who calls it: `gapwatch.logs.parse.LogParser` (a line that starts a panic opens a block; the
lines no rule understands after it, on the same stream, are its message; the next line a rule
understands closes it, and so does the reader's clock where no line comes: `PanicBlock.ended`).
Pure.

Where they come from (cuzk-upstream-paths.md 4.3): supraseal-c2 turns any C++ CUDA error into a
Rust panic (`extern/supraseal-c2/src/lib.rs:155, 316, 331, 383`: `if err.code != 0 {
panic!("{}", String::from(err)); }`); cuzk has no panic hook, so Rust's default hook prints to
stderr (Rust >= 1.73: the location line, then the message; older: the message quoted inline):

    thread '<unnamed>' panicked at /root/.cargo/git/checkouts/.../supraseal-c2/src/lib.rs:316:9:
    cudaGetLastError()@/.../ntt/kernels/gs_mixed_radix_wide.cu:220 failed: "out of memory"
    note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

(format from filecoin-project/lotus#13634). With `RUST_BACKTRACE=1` (or `full`) the hook writes
no `note: run with` line but `stack backtrace:` and a frame or two per line, each resolved as it
is written (the first loads the binary's debug info: seconds for cuzk); the `1` (short) form
ends with `note: Some details are omitted, ...`, the full form with no line of its own (std's
`sys/backtrace.rs`, `_print_fmt`). The panic runs in `spawn_blocking`, so the daemon
lives on and logs `... task panicked error=...` (engine.rs:679, 998) as its own ERROR line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

from gapwatch.core.models import FieldValue, TimeSource
from gapwatch.cuzk.pipeline import PANIC_KIND

#: `thread 'NAME' panicked at LOCATION:` (Rust >= 1.73) or `... panicked at 'MSG', LOCATION`.
_START = re.compile(r"^thread '(?P<thread>[^']{0,200})' panicked at "
                    r"(?:'(?P<inline>.*)', (?P<old_loc>\S+)|(?P<loc>\S+?):?)\s*$")
#: sppark/supraseal-c2's CUDA error text, `CALL()@FILE:LINE failed: "ERROR"`, is found by
#: `cuda_error` from these three, each read once over the message (one searched pattern,
#: `\w+\(\)@\S+?:? failed: "`, began a match at every word character and read on to the next
#: space from each: 0.7 s of CPU, the GIL held, for an 8 KiB message of `aaa()@aaa()@...`).
_TOKEN = re.compile(r"\S+")
_FAILED = re.compile(r' failed: "([^"]{0,200})"')
#: A call begins only where a word does (`(?<!\w)`), its word read possessively: each word
#: character is read once, not once for each place a match could begin in it.
_CALL = re.compile(r"(?<!\w)(\w++)\(\)@")
_NOTE = "note: run with `RUST_BACKTRACE"
#: A block's bounds: a backtrace is ~50 lines; a block never grows past these.
MAX_LINES = 80
MAX_CHARS = 8192
KIND = PANIC_KIND
_BACKTRACE = "stack backtrace:"
_BACKTRACE_END = "note: Some details are omitted"
#: A block has ended once this long passed since its latest line with no backtrace pending
#: (`PanicBlock.ended`; a line of another stream then closes it, and so does the live reader's
#: clock with no line come): Rust's hook writes a panic's lines at once, and a panic that killed
#: the process is followed by no line at all (it was said only when the restarted daemon's
#: first line came, or never).
QUIET_S = 1.0
#: The same, a backtrace pending (its header came, its end did not): its frames are written as
#: their symbols are resolved, the first seconds after the header (a 1 s bound cut the panic
#: there and read its 12 frames and its note as 13 `unparsed` lines). The bound a block's own
#: stream's unknown lines always had to join it.
CONTINUE_S = QUIET_S * 60


@dataclass(slots=True)
class PanicBlock:
    """One panic being read: its first line and the lines after it."""

    stream: str
    raw: str
    thread: str
    location: str
    arrival_mono_ns: int | None
    arrival_wall_s: float
    #: A journald/`ts` prefix's time on its first line; the last timed line before it.
    prefix_s: float | None = None
    before_s: float | None = None
    #: Arrival of its latest line (a block is closed by a line coming `QUIET_S` after it).
    last_arrival_wall_s: float = 0.0
    lines: list[str] = field(default_factory=list)
    chars: int = 0
    #: The note line (or the limits) ended it: the next unknown line is not its own.
    closed: bool = False
    #: Its `stack backtrace:` line came and the backtrace's end did not: frames may still come.
    backtrace: bool = False
    #: What its first line's arrival says of it: "arrival" (followed live) or "backlog" (in
    #: its file when following began from its start): its time comes from its own lines, not
    #: from the line that closes it (a live line after a crash closed a backlog panic).
    arrival_source: TimeSource = "arrival"

    def add(self, text: str) -> None:
        if self.closed:
            return
        if len(self.lines) < MAX_LINES and self.chars < MAX_CHARS:
            self.lines.append(text[:MAX_CHARS - self.chars])
            self.chars += len(self.lines[-1])
        if text.startswith(_BACKTRACE):
            self.backtrace = True
        if (text.startswith((_NOTE, _BACKTRACE_END)) or len(self.lines) >= MAX_LINES
                or self.chars >= MAX_CHARS):
            self.closed = True
            self.backtrace = False

    def ended(self, now_s: float) -> bool:
        """Whether the block has ended by `now_s` (on its lines' arrival clock): the one rule
        of `LogParser` for a line of another stream closing it and for the live reader's clock
        closing it with no line come (`due`). Ended:
        its `note:` line (or a short backtrace's end, or the bounds) came, or no line of its
        own for `QUIET_S`, for `CONTINUE_S` while a backtrace is pending. Rust writes no
        `note:` line after a process's first panic (std's `panicking.rs`: `FIRST_PANIC`), so
        a second panic that kills it ends only by the clock."""
        if self.closed:
            return True
        quiet_s = CONTINUE_S if self.backtrace else QUIET_S
        return now_s - self.last_arrival_wall_s >= quiet_s

    def joins(self, now_s: float) -> bool:
        """Whether a line no rule understands, of its own stream, arriving at `now_s`, is its
        own: not after its end line (or the bounds), nor `CONTINUE_S` after its latest line.
        Followed live, the clock has closed it by then where `ended` says so."""
        return not self.closed and now_s - self.last_arrival_wall_s < CONTINUE_S

    def fields(self) -> dict[str, FieldValue]:
        message = "\n".join(line for line in self.lines if not line.startswith(_NOTE))
        out: dict[str, FieldValue] = {"thread": self.thread, "location": self.location,
                                      "message": message, "lines": 1 + len(self.lines)}
        cuda = cuda_error(message)
        if cuda is not None:
            out["cuda_call"], out["cuda_where"], out["cuda_error"] = cuda
        return out

    def name(self) -> str:
        return f"thread '{self.thread}' panicked at {self.location}"


class CudaError(NamedTuple):
    """sppark's `CALL()@FILE:LINE failed: "ERROR"` in a panic's message."""

    call: str
    where: str
    error: str


def cuda_error(message: str) -> CudaError | None:
    r"""The first CUDA error text in `message` (None: none), in time linear in its length.

    What `\w+\(\)@\S+?:? failed: "[^"]{0,200}"` finds first, read in one pass: the text before
    ` failed: "` is one run of non-space (a token), so only the token just before each
    ` failed: "` can hold the call, and its first `CALL()@` is the one (a later one in the same
    token ends at the same place, so it matches only if the first does). The place is the rest
    of the token, less one trailing `:` (`FILE:LINE:`), never empty.
    """
    if ' failed: "' not in message:
        return None
    for token in _TOKEN.finditer(message):
        end = token.end()
        failed = _FAILED.match(message, end)
        if failed is None:
            continue
        call = _CALL.search(message, token.start(), end)
        if call is None or call.end() == end:
            continue
        where = message[call.end():end]
        if len(where) > 1 and where.endswith(":"):
            where = where[:-1]
        return CudaError(call[1], where, failed[1])
    return None


def panic_start(text: str, stream: str, mono: int | None, wall: float) -> PanicBlock | None:
    """A block for a line that starts a panic message, else None (cheap for other lines)."""
    if not text.startswith("thread '"):
        return None
    m = _START.match(text)
    if m is None:
        return None
    location = m["loc"] or m["old_loc"] or "?"
    block = PanicBlock(stream, text, m["thread"], location, mono, wall)
    if m["inline"] is not None:
        block.add(m["inline"])
    return block
