"""`gapwatch compare BEFORE [AFTER] [--at TIME [--span DURATION]] [--since TIME] [--until TIME]
[--before-since TIME] [--before-until TIME] [--after-since TIME] [--after-until TIME]
[--before-log P] [--after-log P] [--json | --markdown]`.

Who calls it: `gapwatch.cli`. Thin: the figures and verdicts are `gapwatch.offline.compare`'s,
the words `gapwatch.offline.compare_format`'s (docs/compare.md); the windows are
`gapwatch.sources.time_window`'s: `--at` cuts the sides at one moment (`split_at`), `--since`/
`--until` window each side on its own by `report --since/--until`'s rule (`resolve`, through
`argtypes.window_in`: a relative `+30s` from each side's own start). Exit codes: 0 done, 2 a side
or a log cannot be read, or a window that names nothing of its side.
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
from gapwatch.sources.time_window import TimeWindow, WindowError, split_at


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("before", type=argtypes.path, metavar="BEFORE",
                        help="the run before the change: a recording, a folder or a glob of "
                             "segments (as `report` takes them)")
    parser.add_argument("after", type=argtypes.path, metavar="AFTER", nargs="?",
                        help="the run after the change, the same way (with --at: by default "
                             "BEFORE itself, one recording across the change)")
    parser.add_argument("--before-log", type=argtypes.path, action="append", default=[],
                        metavar="PATH", help="a prover log of BEFORE's run (repeatable)")
    parser.add_argument("--after-log", type=argtypes.path, action="append", default=[],
                        metavar="PATH",
                        help="a prover log of AFTER's run (repeatable)")
    parser.add_argument("--window", type=argtypes.positive_seconds, default=None,
                        metavar="SECONDS",
                        help="the window each figure's spread and test use (default: the "
                             "largest of 60, 30, 20, 10, 5, 3, 2, 1 s giving the shorter side 8)")
    parser.add_argument("--at", type=argtypes.moment, metavar="TIME",
                        help="the change's moment: BEFORE is read up to it, AFTER from it "
                             "(written as report's --since: 14:05, 2026-11-30T14:05, +2h, -1h)")
    parser.add_argument("--span", type=argtypes.duration, metavar="DURATION",
                        help="with --at: only this long on each side of it (e.g. 1h)")
    parser.add_argument("--since", type=argtypes.moment, metavar="TIME",
                        help="each side only from TIME (not with --at), as report's --since, "
                             "resolved against that side's own recording: +30s is 30 s after "
                             "each side's start (leaves each start-up's first wave out), -1h "
                             "the last hour of each")
    parser.add_argument("--until", type=argtypes.moment, metavar="TIME",
                        help="each side only before TIME (as --since, each side's own)")
    for side in ("before", "after"):
        for bound in ("since", "until"):
            parser.add_argument(f"--{side}-{bound}", type=argtypes.moment, metavar="TIME",
                                help=f"{side.upper()} only {_BOUND_WORDS[bound]} TIME, in place "
                                     f"of --{bound} for it")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the JSON document instead")
    out.add_argument("--markdown", action="store_true",
                     help="print Markdown (a ticket, a chat) instead")


_BOUND_WORDS = {"since": "from", "until": "before"}


def run(args: argparse.Namespace, config: Config) -> int:
    # Two days with their logs take minutes: where stderr is a terminal, a line says how far.
    def progress(side: str) -> Progress | None:
        return Progress(STDERR.show, f"gapwatch compare ({side})") if STDERR.is_terminal() \
            else None

    problem = _usage_problem(args)
    if problem is not None:
        say(f"gapwatch compare: {problem}")
        return 2
    after_path = args.after if args.after is not None else args.before
    # One recording across the change: its logs are both sides' unless AFTER's are given.
    before_logs = argtypes.log_files(args.before_log, "--before-log")
    after_logs = argtypes.log_files(args.after_log, "--after-log") or (
        before_logs if args.after is None else [])
    try:
        before_window, after_window = _windows(args, after_path)
        own = args.at is None  # a window of its own, not a side of the `--at` cut
        before = read_side("BEFORE", args.before, config, before_logs,
                           progress("BEFORE"), before_window, window_own=own)
        after = read_side("AFTER", after_path, config, after_logs, progress("AFTER"),
                          after_window, window_own=own)
    except WindowError as exc:
        say(f"gapwatch compare: {exc}")
        return 2
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


def _usage_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the sides asked for (one line), or None."""
    if args.after is None and args.at is None:
        return ("AFTER is needed (or --at TIME: one recording, before and after the change's "
                "moment)")
    if args.span is not None and args.at is None:
        return "--span needs --at (the moment the spans are taken on each side of)"
    if args.at is not None and (given := _own_window_flags(args)):
        return (f"--at cuts both sides at one moment; {given[0]} gives a side a window of its "
                "own: give one or the other (one recording, each side its own window: REC REC "
                "--before-until TIME --after-since TIME)")
    return None


def _own_window_flags(args: argparse.Namespace) -> list[str]:
    """The `--since`/`--until` options given, shared or a side's, as written."""
    names = ["since", "until"] + [f"{side}_{bound}" for side in ("before", "after")
                                  for bound in ("since", "until")]
    return ["--" + n.replace("_", "-") for n in names if getattr(args, n) is not None]


def _windows(args: argparse.Namespace, after_path: str
             ) -> tuple[TimeWindow | None, TimeWindow | None]:
    """The parts of BEFORE and AFTER read (`--at`, `--span`, or each side's own `--since`/
    `--until`; None: the whole of that side). Raises RecordingError, WindowError."""
    if args.at is None:
        return (_own_window(args, "before", args.before),
                _own_window(args, "after", after_path))
    start_s, end_s = argtypes.recording_span(args.before)
    after_start_s, after_end_s = (argtypes.recording_span(after_path)
                                  if after_path != args.before else (None, None))
    return split_at(args.at, args.span, start_s, end_s, after_start_s, after_end_s)


def _own_window(args: argparse.Namespace, side: str, path: str) -> TimeWindow | None:
    """A side's window of its own: its `--before-since` (`--after-since`) or else the shared
    `--since`, the same for the end, resolved against that side's recording by `report
    --since/--until`'s rule (`argtypes.window_in`). Raises RecordingError, WindowError (the
    message led by the side's name)."""
    own_since, own_until = getattr(args, f"{side}_since"), getattr(args, f"{side}_until")
    since = own_since if own_since is not None else args.since
    until = own_until if own_until is not None else args.until
    flags = (f"--{side}-since" if own_since is not None else "--since",
             f"--{side}-until" if own_until is not None else "--until")
    try:
        return argtypes.window_in(since, until, path, flags)
    except WindowError as exc:
        raise WindowError(f"{side.upper()}: {exc}") from None
