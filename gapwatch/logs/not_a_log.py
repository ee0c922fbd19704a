"""A log file that is no prover log: the one rule for saying so, in one line naming the file.

Who calls it: `gapwatch.offline.report.parse_logs_for` (a report's, a replay's and an export's
`--log` files: the line joins what the reading found to say of them, `LogSpan.not_logs`) and
`gapwatch.commands.parse` (on stderr). Each gives the lines read of every file
(`gapwatch.logs.files.LinesRead`).

A recording given where its log goes (`report REC --log REC`) was read as 3,365 lines no rule
understood, the report exit 0 with no word of it but `log_unparsed 3365` in its last line. Said
of a file:
- where none of its lines (blank ones aside) was understood by any rule, cuzk's or the
  user's: a real cuzk log holds many lines no rule reads (most of its tracing), so a share
  below some bar would say it of healthy logs; a file with one line understood is read as a
  log, silently, as before;
- where its first line is a gapwatch recording's header (`{"type":"header"`), however many
  lines were understood: a recording holds its log lines' text, which a rule may read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from gapwatch.logs.files import LinesRead, LogFile

#: A recording's first line, as gapwatch writes it (`{"type":"header",...}`), spaces allowed.
_RECORDING_HEAD = re.compile(rb'\s*\{\s*"type"\s*:\s*"header"')
#: What of a file's start is looked at for it.
_HEAD_BYTES = 64
#: What the report and replay tell of a recording given as a log: where it goes instead.
AS_RECORDING = "give it as the FILE argument"


def starts_like_recording(path: str) -> bool:
    """Whether `path` (a regular file, gzip or plain) starts with a recording's header line;
    False for stdin, a FIFO, or a file that cannot be read (its reading says why)."""
    if path == "-" or not os.path.isfile(path):
        return False
    try:
        head = LogFile(path, 1).head(_HEAD_BYTES)
    except OSError:
        return False
    return _RECORDING_HEAD.match(head) is not None


def not_a_log_note(read: LinesRead, recording: bool, as_recording: str = AS_RECORDING
                   ) -> str | None:
    """The line to say of a file (see the module docstring), or None: it reads as a log.
    `recording`: it starts like a recording (`starts_like_recording`); `as_recording`: where
    to give a recording instead."""
    hint = f"it looks like a gapwatch recording: {as_recording}"
    if read.lines and not read.understood:
        return (f"no line of {read.path} was understood as a prover log line "
                f"({_lines(read.lines)}): is it cuzk's log?" + (f" ({hint})" if recording else ""))
    if recording:
        return (f"{read.path} starts like a gapwatch recording, not a prover log (its first "
                f"line is a recording's header; {read.understood:,} of its {_lines(read.lines)} "
                f"understood): {as_recording}")
    return None


def not_a_log_notes(reads: Iterable[LinesRead], as_recording: str = AS_RECORDING
                    ) -> list[str]:
    """`not_a_log_note` of each file read, those that read as logs left out."""
    notes = []
    for read in reads:
        note = not_a_log_note(read, starts_like_recording(read.path), as_recording)
        if note is not None:
            notes.append(note)
    return notes


def _lines(n: int) -> str:
    return f"{n:,} line" + ("" if n == 1 else "s")
