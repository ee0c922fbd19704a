"""argparse `type=` functions for the numbers and paths on gapwatch's command line.

Who calls it: `gapwatch.cli` (common flags) and the subcommands' `add_arguments`. A number that
makes no sense (`nan`, `inf`, negative, zero where zero cannot work) is refused by argparse with
a message naming the flag, and exit status 2, before anything starts: `--duration nan` would
otherwise run forever and `--duration 0` write an empty recording.
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gapwatch.base.input_files import file_kind, path_problem
from gapwatch.core.bounds import MAX_SECONDS
from gapwatch.engine.console import say

if TYPE_CHECKING:  # read when a flag is: `gapwatch --help` stays light (no msgspec models)
    from gapwatch.sources.time_window import Moment, TimeWindow


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive_seconds(text: str) -> float:
    """A finite number of seconds > 0 and at most `MAX_SECONDS` (`--duration`, `--timeout`)."""
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text!r}")
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"must be at most 10 years ({MAX_SECONDS:.0f} s), got {text!r}")
    return value


def positive_ms(text: str) -> float:
    """A finite number of milliseconds > 0 (`--period-ms`)."""
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 ms, got {text!r}")
    return value


#: FILE of the commands that read a recording (`report`, `replay`, `export`), one text: each
#: said "one recording or a trace CSV" while a folder or glob of segments worked for all three.
RECORDING_HELP = ("a recording (.jsonl, .jsonl.gz), a folder or a quoted glob of its segments "
                  "(read as one session), or a trace CSV")


def speed(text: str) -> float:
    """A finite speed factor >= 0 (`--speed`: 1 = real time, 0 = as fast as possible)."""
    value = _finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"must be 0 (as fast as possible) or more, got {text!r}")
    return value


def segment_size(text: str) -> str:
    """A segment size (`--rotate-size 1GiB`), by the config's rule; kept as written."""
    from gapwatch.config import check_rotate_size

    try:
        return check_rotate_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def segment_age(text: str) -> str:
    """A segment age (`--rotate-age 1d`), by the config's rule; kept as written."""
    from gapwatch.config import check_rotate_age

    try:
        return check_rotate_age(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def count(text: str) -> int:
    """A whole number >= 1 (`--keep`)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def path(text: str) -> str:
    """A path the system can name (`--config`, `--out`, `FILE`, `--log`); kept as written.
    Refused here, in one line naming the flag, rather than as ENAMETOOLONG deep inside
    (`input_files.path_problem`: pathlib's `exists()` raises it instead of answering)."""
    problem = path_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


class NoReadableLog(Exception):
    """A `--log` glob whose every match cannot be read whole (`log_files`): said in one line by
    `gapwatch.cli` for every command that takes `--log` (exit 2)."""


def log_files(given: list[str] | None, flag: str = "--log", bare: Sequence[str] = ()
              ) -> list[str]:
    """The offline `--log` paths (`report`, `export`, `replay`, `compare`, `parse`), a quoted
    glob (`--log '/var/log/cuzk/cuzk.log*'`: the rotated files) expanded to the files it
    matches, by name (the reader orders them by their times: `logs.files.read_order`). A
    path that exists is taken as it is, glob characters and all; a glob that matches nothing
    too (the reader says it cannot be read). A file named twice (or by a path and a glob, a
    link to it, a hard link: one device and inode) is read once: its events counted twice were
    two prover runs.

    A file a glob matches that cannot be read whole (a dangling link, a link loop, a link to
    `/dev/zero`, a FIFO, a directory, one without read permission) is left out, said in one
    line on stderr with how many of the glob's files were (`_readable`): one such entry beside
    the rotated logs stopped the whole report (exit 2; a FIFO after waiting 10 s for a writer).
    A glob whose every match is such a file raises `NoReadableLog`, one line naming each and
    why (it was said as left out, then the glob itself as "cannot read ...: No such file or
    directory"). A path named as it is stays the reader's to refuse (exit 2): the user asked
    for that file. `flag`: how the command names its logs in what is said (`--before-log`);
    `bare`: logs given without a flag (`parse LOG...`, read before `given`), said as given
    (`parse 'logs/cuzk.log*'` was said as `--log logs/cuzk.log*`, a flag never typed)."""
    out: list[str] = []
    seen: set[object] = set()
    for text, named in [*((text, "") for text in bare), *((text, flag) for text in given or [])]:
        matches = glob_matches(text)
        matched = [] if matches is None else _readable(text, matches, named)
        for name in matched or [text]:
            same = _file_identity(name)
            if same not in seen:
                seen.add(same)
                out.append(name)
    return out



def glob_matches(text: str) -> list[str] | None:
    """The files a `--log` (or `[logs] paths`) glob matches, by name; None where `text` is
    taken as it is (a path that exists, glob characters and all, or no glob). The one
    expansion of `log_files` and of `export`'s check that its output is none of its logs."""
    if os.path.lexists(text) or not glob.has_magic(text):
        return None
    return sorted(glob.glob(text))

#: The files a glob left out that its line names; the rest are counted.
_LEFT_OUT_NAMED = 5


def _readable(pattern: str, matched: list[str], flag: str) -> list[str]:
    """Of the files `pattern` matched, those that can be read whole; the others said in one
    line (the reader would refuse them and stop: `input_files.open_whole`), or, where none can
    be, `NoReadableLog`; `pattern` named after its `flag` ("": none, as given)."""
    given = f"{flag} {pattern}" if flag else pattern
    kept, left_out = [], []
    for name in matched:
        why = _why_unreadable(name)
        if why is None:
            kept.append(name)
        else:
            left_out.append(f"{name} ({why})")
    if not left_out:
        return kept
    more = len(left_out) - _LEFT_OUT_NAMED
    named_ = "; ".join(left_out[:_LEFT_OUT_NAMED]) + (f"; and {more} more" if more > 0 else "")
    if not kept:
        raise NoReadableLog(f"{given}: the glob matches no file that can be read: {named_}")
    say(f"warning: {given}: {len(left_out)} of the {len(matched)} files it matches "
        f"cannot be read, left out: {named_}")
    return kept


def _why_unreadable(name: str) -> str | None:
    """Why a file cannot be read whole, in words, found without reading it or waiting (a
    FIFO's writer is not waited for: no rotated log is a FIFO); None: it can be."""
    try:
        mode = os.stat(name).st_mode
    except OSError as exc:
        link = "a link that leads nowhere: " if os.path.islink(name) else ""
        return f"{link}{exc.strerror or exc}"
    if not stat.S_ISREG(mode):
        return file_kind(mode)
    try:
        os.close(os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC))
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _file_identity(name: str) -> object:
    """What tells one file from another: its device and inode (a hard link, `ln cuzk.log
    again.log`, was read twice: only its path was compared), else (no such file, one that
    cannot be looked at: the reader says so) its path with its links resolved."""
    if name == "-":
        return name
    try:
        st = os.stat(name)
    except (OSError, ValueError):
        return os.path.realpath(name)
    return (st.st_dev, st.st_ino)


def source(text: str) -> str:
    """`--source`: its FILE (`replay:FILE`) by the path rule; the kinds are checked where the
    source is opened (`engine.runtime`)."""
    kind, _, rest = text.partition(":")
    problem = path_problem(rest) if kind == "replay" else None
    if problem is not None:
        raise argparse.ArgumentTypeError(f"replay:FILE: {problem}")
    return text


def moment(text: str) -> Moment:
    """A moment of a recording (`--since`, `--until`): a date and time, a time of day, or a
    duration after its start (`+2h`) or before its end (`-1h`) (`time_window.moment`)."""
    from gapwatch.sources import time_window

    try:
        return time_window.moment(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


#: The options that take a moment (`-1h` after them is theirs, not an option).
MOMENT_FLAGS = ("--since", "--until", "--at", "--before-since", "--before-until",
                "--after-since", "--after-until")
#: A moment counted back from the end (`-1h`), which argparse would take for an option.
_BACK = re.compile(r"-\d[\d.]*[a-zA-Z]*")


def duration(text: str) -> float:
    """A duration > 0 as the config writes them (`--span 1h`: `units.parse_duration`)."""
    from gapwatch.core.units import parse_duration

    try:
        value = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text!r}")
    return value


def joined_moments(argv: list[str]) -> list[str]:
    """`--since -1h` as `--since=-1h`: argparse takes a word that starts with `-` (and is not a
    plain negative number) for an option, and said `--since: expected one argument`."""
    out: list[str] = []
    for word in argv:
        if out and out[-1] in MOMENT_FLAGS and _BACK.fullmatch(word):
            out[-1] = f"{out[-1]}={word}"
        else:
            out.append(word)
    return out


def add_window(parser: argparse.ArgumentParser) -> None:
    """`--since` and `--until`: a part of the recording (report, export, replay)."""
    parser.add_argument(
        "--since", type=moment, metavar="TIME",
        help="only from TIME: 2026-11-30T14:05 or 14:05 (UTC, as gapwatch prints times), +2h "
             "(after the recording's start) or -1h (before its end)")
    parser.add_argument("--until", type=moment, metavar="TIME",
                        help="only before TIME (written as for --since)")


def window_of(args: argparse.Namespace, path: str) -> TimeWindow | None:
    """The window `--since`/`--until` name in the recording at `path` (None: neither given).
    Raises RecordingError (the recording's header), `time_window.WindowError` (a window that
    names nothing: the message says why)."""
    return window_in(args.since, args.until, path)


def window_in(since: Moment | None, until: Moment | None, path: str,
              flags: tuple[str, str] = ("--since", "--until")) -> TimeWindow | None:
    """The window `since`/`until` name in the recording at `path`, each moment resolved
    against that recording's own start and end (None: neither given); `flags`: the options
    they were written with (`compare --after-since`). Raises as `window_of`."""
    if since is None and until is None:
        return None
    from gapwatch.sources import time_window
    from gapwatch.sources.files import refuse_a_stream

    # The window is found from the recording's header and end before its records are read:
    # a FIFO gave its head to the first and `replay --since` said "not a recording".
    refuse_a_stream(Path(path), f"{flags[0]}/{flags[1]} read its start and end before its "
                                "records")
    return time_window.resolve(since, until, *recording_span(path), flags=flags)


def recording_span(path: str) -> tuple[float, float | None]:
    """What a moment of the recording at `path` is resolved against: its start (its header's)
    and the end of its data (None: not readable from its end). Raises RecordingError."""
    from gapwatch.sources.files import data_end, header_of

    return header_of(path).started_wall_s, data_end(path)
