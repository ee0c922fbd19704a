"""`gapwatch compare BEFORE AFTER [--before-log P] [--after-log P] [--json | --markdown]`.

Who calls it: `gapwatch.cli`. Thin: the figures and verdicts are `gapwatch.offline.compare`'s,
the words `gapwatch.offline.compare_format`'s (docs/compare.md). Exit codes: 0 done, 2 a side or
a log cannot be read.
"""

from __future__ import annotations

import argparse
import sys

from gapwatch.base.sorted_spool import SpoolError
from gapwatch.commands import argtypes, cannot_read
from gapwatch.config import Config
from gapwatch.core.codec import encode_json
from gapwatch.engine.console import STDERR, say
from gapwatch.offline.compare import compare, read_side, to_json
from gapwatch.offline.compare_format import format_markdown, format_text
from gapwatch.offline.progress import Progress
from gapwatch.sources.recording import RecordingError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("before", type=argtypes.path, metavar="BEFORE",
                        help="the run before the change: a recording, a folder or a glob of "
                             "segments (as `report` takes them)")
    parser.add_argument("after", type=argtypes.path, metavar="AFTER",
                        help="the run after the change, the same way")
    parser.add_argument("--before-log", type=argtypes.path, action="append", default=[],
                        metavar="PATH", help="a prover log of BEFORE's run (repeatable)")
    parser.add_argument("--after-log", type=argtypes.path, action="append", default=[],
                        metavar="PATH",
                        help="a prover log of AFTER's run (repeatable)")
    parser.add_argument("--window", type=argtypes.positive_seconds, default=None,
                        metavar="SECONDS",
                        help="the window each figure's spread and test use (default: the "
                             "largest of 60, 30, 20, 10, 5, 3, 2, 1 s giving the shorter side 8)")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the JSON document instead")
    out.add_argument("--markdown", action="store_true",
                     help="print Markdown (a ticket, a chat) instead")


def run(args: argparse.Namespace, config: Config) -> int:
    # Two days with their logs take minutes: where stderr is a terminal, a line says how far.
    def progress(side: str) -> Progress | None:
        return Progress(STDERR.show, f"gapwatch compare ({side})") if STDERR.is_terminal() \
            else None

    try:
        before = read_side("BEFORE", args.before, config, list(args.before_log),
                           progress("BEFORE"))
        after = read_side("AFTER", args.after, config, list(args.after_log), progress("AFTER"))
    except RecordingError as exc:
        say(f"gapwatch compare: {exc}")
        return 2
    except SpoolError as exc:
        say(f"gapwatch compare: no room for its temporary files: {exc.filename}: {exc.strerror}")
        return 2
    except OSError as exc:
        say(f"gapwatch compare: {cannot_read(exc)}")
        return 2
    finally:
        STDERR.erase()  # before the comparison (or Ctrl-C's line): no progress left on screen
    c = compare(before, after, args.window)
    if args.json:
        sys.stdout.write(encode_json(to_json(c), indent=2).decode())
        sys.stdout.write("\n")
    elif args.markdown:
        sys.stdout.write(format_markdown(c))
    else:
        sys.stdout.write(format_text(c))
    return 0
