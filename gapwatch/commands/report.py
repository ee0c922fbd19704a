"""`gapwatch report FILE [--log PATH ...] [--json]`: gaps, breakdowns and payoff of a recording.

Who calls it: `gapwatch.cli`. The analysis lives in `gapwatch.offline.report`, and so do its two
formats: the JSON document (`to_json`, stable, for scripts; documented in docs/detection.md) and
the text for people (`gapwatch.offline.report_text.format_text`); this module parses the
arguments and prints one of them; while it works, a progress line on stderr where that is a
terminal (`gapwatch.offline.progress`). Exit codes: 0 done, 2 the file or a log cannot be read, or
its temporary files (the report's spools, `gapwatch.base.sorted_spool`) cannot be written.
"""

from __future__ import annotations

import argparse
import sys

from gapwatch.base.sorted_spool import SpoolError
from gapwatch.commands import argtypes, cannot_read
from gapwatch.config import Config
from gapwatch.engine.console import STDERR, say
from gapwatch.offline.progress import Progress
from gapwatch.offline.report import build_report, write_json
from gapwatch.offline.report_text import MAX_TABLE_ROWS, format_text
from gapwatch.sources.files import data_span, header_of
from gapwatch.sources.recording import RecordingError
from gapwatch.sources.time_window import WindowError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", type=argtypes.path, metavar="FILE",
        help=argtypes.RECORDING_HELP
    )
    parser.add_argument("--json", action="store_true", help="print the JSON document instead")
    argtypes.add_window(parser)
    parser.add_argument("--all", "--all-gaps", dest="all_rows", action="store_true",
                        help="every row of the gap and partition tables (default: the first "
                             f"{MAX_TABLE_ROWS} of each)")


#: A recording at least this long gets, on a terminal, a line saying that a part of it can be
#: read instead (a day of 8 GPUs with its log takes minutes; an hour of it, seconds).
TIP_SPAN_S = 3 * 3600.0


def run(args: argparse.Namespace, config: Config) -> int:
    # A day with its log takes minutes: where stderr is a terminal, a line says how far.
    progress = Progress(STDERR.show, "gapwatch report") if STDERR.is_terminal() else None
    try:
        window = argtypes.window_of(args, args.file)
        if progress is not None and window is None:
            _tip(args.file)
        report = build_report(args.file, config, argtypes.log_files(args.log), progress=progress,
                              window=window)
    except WindowError as exc:
        say(f"gapwatch report: {exc}")
        return 2
    except RecordingError as exc:
        say(f"gapwatch report: {exc}")
        return 2
    except SpoolError as exc:
        say(f"gapwatch report: no room for its temporary files: {exc.filename}: {exc.strerror}")
        return 2
    except OSError as exc:
        say(f"gapwatch report: {cannot_read(exc)}")
        return 2
    finally:
        STDERR.erase()  # before the report (or Ctrl-C's line): no progress left on screen
    if args.json:
        # Through the text layer, so that a redirected sys.stdout (tests, embedding) works too.
        write_json(report, sys.stdout.write)  # gap by gap: never the whole document at once
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_text(report, all_rows=args.all_rows, detector=config.detector))
    return 0


def _tip(path: str) -> None:
    """Before a long recording's report, on a terminal: that `--since`/`--until` reads a part
    (the operator asking about 14:05 need not wait for the day). Raises RecordingError."""
    span = data_span(path, header_of(path).started_wall_s)
    if span is not None and span[1] - span[0] >= TIP_SPAN_S:
        # On the console the progress line uses (it is a terminal: the caller asked).
        STDERR.say(f"gapwatch report: {(span[1] - span[0]) / 3600:.1f} h of data: this takes a "
                   "while; --since/--until read a part of it (--since 14:00 --until 15:00, "
                   "--since -1h)")
