"""Command line: one program, subcommands, common flags; no logic of its own.

Each subcommand lives in `gapwatch.commands.<name>` and is imported only when chosen, so that
headless commands (`record`, `report`, `export`, `parse`) never import Textual.

Exit codes: 0 success (a stop signal included: `gapwatch.base.quit_early`), 1 a failure while
running, 2 bad usage, bad config, a source that cannot start (no NVIDIA driver, unreadable
recording), too few open files, or an output that cannot be written (standard output full or
failing included: one line).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from gapwatch import __version__
from gapwatch.base.clock import MAX_SCALED_SPEED
from gapwatch.base.open_files import out_of_files, too_few_for_logs, too_few_open_files
from gapwatch.base.quit_early import import_held
from gapwatch.commands import argtypes
from gapwatch.config import Config, ConfigError, load_config, with_overrides
from gapwatch.core.bounds import DEFAULT_PERIOD_MS
from gapwatch.engine.console import OutputFailed, reader_gone, say, stdout_failed
from gapwatch.engine.memory import return_large_allocations

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

COMMANDS = {
    "demo": "the live dashboard over the simulated prover (scenario 'pageable' by default)",
    "watch": "the live dashboard over real GPUs (NVML) and the prover's logs",
    "record": "headless: sample and detect, write a JSON Lines recording",
    "replay": "the dashboard (or --headless) over a recording or a trace CSV",
    "report": "headless: gaps, breakdowns and payoff of a recording, as text or JSON",
    "compare": "headless: did a change pay off? two recordings, figure by figure, with verdicts",
    "export": "headless: convert a recording to Perfetto trace JSON or CSV",
    "parse": "headless: print the events gapwatch reads from prover logs (check your rules)",
    "copytrace": "build and install the copy-trace library for the prover (pinned vs pageable)",
    "fleet": "every box's GPUs in one table, worst first, from Prometheus (--once --json)",
}


#: The common flags each subcommand takes: only those it uses, so that none is accepted and
#: silently ignored (`report --speed 2` is an error, not a no-op).
SOURCE_FLAGS = ("source", "gpus", "period-ms", "log", "from-start", "speed", "seed", "prometheus")
COMMON_FLAGS: dict[str, tuple[str, ...]] = {
    "demo": ("source", "period-ms", "log", "from-start", "speed", "seed", "prometheus"),
    "watch": SOURCE_FLAGS,
    "record": SOURCE_FLAGS,
    "replay": ("log", "speed", "prometheus"),
    "report": ("log",),
    "compare": (),
    "export": ("log",),
    "parse": ("log",),
    "copytrace": (),
    "fleet": (),
}


#: The help of the shared flags whose meaning differs by command, each in one place: the
#: live commands follow a log as it grows, the offline ones read it whole (`report --log`
#: said "prover log to follow ... '-' = stdin", and `-` is no file there); `demo` refuses
#: `--speed 0`, which its help offered.
LOG_HELP_FOLLOWED = "prover log to follow (repeatable; '-' = stdin)"
LOG_HELP_READ = ("prover log, read whole (repeatable; rotated files as a quoted glob: "
                 "--log 'cuzk.log*')")
LOG_HELP: dict[str, str] = {
    "demo": LOG_HELP_FOLLOWED, "watch": LOG_HELP_FOLLOWED, "record": LOG_HELP_FOLLOWED,
    "replay": LOG_HELP_READ, "report": LOG_HELP_READ, "export": LOG_HELP_READ,
    "parse": "prover log to read whole (repeatable; '-' = stdin)",
}
#: What `--speed` takes, each command's in one place: its help, and the fastest speed the
#: refusal of a simulator speed past `MAX_SCALED_SPEED` advises (`check_flags_fit_source`).
#: `demo` takes no `--speed 0` (over before its first redraw: `commands.demo`); its refusal
#: of `--speed 1001` advised `--speed 0` all the same.
SPEED_HELP_SOURCE = ("sim/replay speed: 1 = real time, 0 = as fast as possible (sim: at most "
                     f"{MAX_SCALED_SPEED:g})")
SPEED_FASTEST_SOURCE = "--speed 0 runs it as fast as it can"
SPEED_HELP: dict[str, str] = {
    "demo": "simulator speed: 1 = real time (default), 4 = four times as fast (at most "
            f"{MAX_SCALED_SPEED:g})",
    "watch": SPEED_HELP_SOURCE, "record": SPEED_HELP_SOURCE,
    "replay": "1 = the recorded pace (default), 0 = as fast as possible (default with "
              "--headless)",
}
SPEED_FASTEST: dict[str, str] = {
    "demo": f"--speed {MAX_SCALED_SPEED:g} is its fastest",
    "watch": SPEED_FASTEST_SOURCE, "record": SPEED_FASTEST_SOURCE,
}


def _common(p: argparse.ArgumentParser, flags: tuple[str, ...], command: str) -> None:
    """The shared flags `command` takes (`COMMON_FLAGS`), their help its own where it differs
    (`LOG_HELP`, `SPEED_HELP`: each command with the flag has an entry)."""
    g = p.add_argument_group("common options")
    g.add_argument("--config", type=argtypes.path, default=None, metavar="FILE",
                   help="TOML config file")
    if "source" in flags:
        g.add_argument(
            "--source",
            type=argtypes.source,
            default=None,
            help="nvml | sim | sim:SCENARIO | replay:FILE (default: nvml; demo: sim:pageable)",
        )
    if "gpus" in flags:
        g.add_argument("--gpus", default=None,
                       help="GPU indices to watch, e.g. 0,1 (default: all; --source nvml only)")
    if "period-ms" in flags:
        g.add_argument("--period-ms", type=argtypes.positive_ms, default=None,
                       help=f"sampling period (default {DEFAULT_PERIOD_MS:g})")
    if "log" in flags:
        g.add_argument(
            "--log",
            type=argtypes.path,
            action="append",
            default=[],
            metavar="PATH",
            help=LOG_HELP[command],
        )
    if "from-start" in flags:
        g.add_argument("--from-start", action="store_true", help="read logs from their start")
    if "speed" in flags:
        g.add_argument(
            "--speed",
            type=argtypes.speed,
            default=None,
            help=SPEED_HELP[command],
        )
    if "seed" in flags:
        g.add_argument("--seed", type=int, default=None, help="simulator seed")
    if "prometheus" in flags:
        g.add_argument("--prometheus", default=None, metavar="HOST:PORT", help="serve /metrics")


class _Parser(argparse.ArgumentParser):
    """argparse's parser, but its output (`--help`, `--version`) is written as any output:
    argparse drops an OSError there (`gapwatch --help > /dev/full` exited 0, nothing said), so
    it is flushed here and raised as `OutputFailed` (one line, exit 2; a closed pipe quietly:
    `gapwatch.cli.output_failure`). Its error messages go to stderr as before."""

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if not message or file is None or file is not sys.stdout:
            super()._print_message(message, file)
            return
        try:
            file.write(message)
            getattr(file, "flush", lambda: None)()
        except OSError as exc:
            raise OutputFailed(exc) from None

    def error(self, message: str) -> NoReturn:
        """argparse's usage error, its message said as every stderr line is (`say`: one line,
        controls written out). argparse quotes some words as given (`unrecognized arguments:
        ...`, `ambiguous option: ...`): an OSC 52 in one reached the terminal, and a newline
        started a line of its own."""
        self.print_usage(sys.stderr)
        say(f"{self.prog}: error: {message}")
        sys.exit(2)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line. With `only` (a command's name, or "" for none), only that
    command's module is imported for its own flags; every other command is listed with its help
    and common flags (enough for `gapwatch --help`, `--version` and a mistyped command).
    A command module imports what its `run` needs (`record` the sampling engine, ~45 ms of
    imports), and a `gapwatch report` started from a script should not pay for all of them."""
    parser = _Parser(
        prog="gapwatch",
        description="See, live, why a pipelined GPU workload stops keeping its GPU busy.",
        epilog="No GPU at hand? `gapwatch demo` shows the dashboard over a simulated prover.",
    )
    parser.add_argument("--version", action="version",
                        version=f"gapwatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    for name, help_text in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        _common(p, COMMON_FLAGS[name], name)
        if only is not None and name != only:
            continue
        module = import_held(f"gapwatch.commands.{name}")
        add_args = getattr(module, "add_arguments", None)
        if add_args is not None:
            add_args(p)
    return parser


def chosen_command(arglist: list[str]) -> str:
    """The command `arglist` names, or "" when its first word is none (the top level takes no
    option but --help and --version, which need no command's flags)."""
    first = arglist[0] if arglist else ""
    return first if first in COMMANDS else ""


def parse_command_line(parser: argparse.ArgumentParser, arglist: list[str]) -> argparse.Namespace:
    """`parser.parse_args`, but a flag the subcommand does not know is refused by that
    subcommand: its own usage, and the nearest flag it has (`report --jsn`: did you mean
    --json?), where argparse gave the top-level usage and no suggestion. Exits 2 (argparse)."""
    args, extras = parser.parse_known_args(arglist)
    if extras:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        command: argparse.ArgumentParser = sub.choices[args.command]
        known = [o for action in command._actions for o in action.option_strings]
        hints = []
        for extra in extras:
            near = _nearest_flag(extra.split("=", 1)[0], known) if extra.startswith("-") \
                else None
            if near is not None:
                hints.append(f"{extra}: did you mean {near}?")
        if "--log" in arglist and "--log" in known and any(
                not e.startswith("-") and os.path.exists(e) for e in extras):
            # `--log /var/log/cuzk/cuzk.log*`: the shell gives --log one file and the command
            # the rest.
            hints.append("--log takes one path: repeat it, or quote a glob for the rotated "
                         "files (--log '/var/log/cuzk/cuzk.log*')")
        command.error(f"unrecognized arguments: {' '.join(extras)}"
                      + (f" ({'; '.join(hints)})" if hints else ""))
    return args


def _nearest_flag(flag: str, known: list[str]) -> str | None:
    """The known flag a mistyped one most likely meant, or None: close both ways round
    (SequenceMatcher's ratio is not symmetric: `--period-ms` is "close" to `--prometheus`
    one way only)."""
    def both(a: str, b: str) -> float:
        return min(difflib.SequenceMatcher(None, a, b).ratio(),
                   difflib.SequenceMatcher(None, b, a).ratio())

    best = max(known, key=lambda k: both(flag, k), default=None)
    return best if best is not None and both(flag, best) >= 0.75 else None


def short_usage() -> str:
    """What `gapwatch` alone prints: the commands, and where to start without a GPU."""
    width = max(len(n) for n in COMMANDS)
    lines = ["usage: gapwatch COMMAND [options]    (gapwatch COMMAND --help for its options)", ""]
    lines += [f"  {name:<{width}}  {text}" for name, text in COMMANDS.items()]
    lines += ["", "Start here, no GPU needed:  gapwatch demo",
              "On a GPU box:               gapwatch watch --log /path/to/prover.log"]
    return "\n".join(lines)


def _flag(args: argparse.Namespace, name: str) -> Any:
    """A common flag's value, None when this subcommand does not take the flag."""
    return getattr(args, name, None)


def check_flags_fit_source(args: argparse.Namespace) -> str | None:
    """A message when a flag was given that the chosen source cannot honour, else None.

    `--gpus` selects real GPUs (NVML); `--speed` paces a simulation (at most
    `MAX_SCALED_SPEED`) or a replay; `--seed` seeds the simulator. Given to a source that would
    ignore them, they are an error, never a no-op.
    """
    if args.command not in ("watch", "record", "demo"):
        return None
    kind = (_flag(args, "source") or ("sim" if args.command == "demo" else "nvml")
            ).partition(":")[0]
    speed = _flag(args, "speed")
    if speed is not None and kind == "sim" and speed > MAX_SCALED_SPEED:
        # The simulator's clock is real time times the speed (a replay paces with the
        # recording's own times, any speed).
        return (f"--speed {speed:g}: the simulator runs at most {MAX_SCALED_SPEED:g} times real "
                f"time (its times must fit a recording); {SPEED_FASTEST[args.command]}")
    if _flag(args, "gpus") and kind != "nvml":
        hint = ("set `[sim] gpus = N` in the config for more simulated GPUs" if kind == "sim"
                else "a replay plays every GPU of the recording")
        return f"--gpus selects real GPUs (--source nvml), not --source {kind}: {hint}"
    if _flag(args, "speed") is not None and kind == "nvml":
        return "--speed paces --source sim or replay:FILE; real GPUs run in real time"
    if _flag(args, "seed") is not None and kind != "sim":
        return f"--seed seeds the simulator (--source sim), not --source {kind}"
    return None


def resolve_config(args: argparse.Namespace) -> Config:
    """Load the config file, then apply the flags that override it."""
    config = load_config(args.config)
    over: dict[str, dict[str, object]] = {}
    if _flag(args, "period_ms") is not None:
        over.setdefault("sampler", {})["period_ms"] = args.period_ms
    if _flag(args, "gpus"):
        try:
            over.setdefault("sampler", {})["gpus"] = [int(x) for x in args.gpus.split(",") if x]
        except ValueError:
            raise ConfigError(f"--gpus: expected indices like 0,1 (got {args.gpus!r})") from None
    if _flag(args, "log"):
        over.setdefault("logs", {})["paths"] = list(config.logs.paths) + list(args.log)
    if _flag(args, "from_start"):
        over.setdefault("logs", {})["from_start"] = True
    if _flag(args, "seed") is not None:
        over.setdefault("sim", {})["seed"] = args.seed
    if _flag(args, "prometheus"):
        over.setdefault("prometheus", {})["listen"] = args.prometheus
    cuzk_status = getattr(args, "cuzk_status", None)
    if cuzk_status:
        over.setdefault("cuzk", {})["status_url"] = list(config.cuzk.status_url) + cuzk_status
    record = {k: getattr(args, flag) for k, flag in (
        ("rotate_size", "rotate_size"), ("rotate_age", "rotate_age"), ("keep", "keep"))
        if getattr(args, flag, None) is not None}  # the commands that record
    if record:
        over["record"] = record
    copytrace = getattr(args, "copytrace", None)  # watch and record only
    if copytrace is not None:
        over["copytrace"] = {"enabled": True}
        if copytrace:
            over["copytrace"]["socket"] = copytrace
    return with_overrides(config, over) if over else config


def main(argv: Sequence[str] | None = None) -> int:
    # No subcommand module imports Textual, plotext or pynvml at module level; only the chosen
    # one is imported at all (`build_parser`).
    arglist = sys.argv[1:] if argv is None else list(argv)
    if not arglist:
        # argparse alone would only say "the following arguments are required: COMMAND".
        say(*short_usage().split("\n"))
        return 2
    command = chosen_command(arglist)
    try:
        return _main(arglist, command)
    except (OSError, OutputFailed) as exc:
        status = output_failure(command, exc)
        if status is None:
            raise
        return status


def output_failure(command: str, exc: OSError | OutputFailed) -> int | None:
    """The one rule for a command's output that cannot be written (standard output, every
    command, `--help` included): None when `exc` is not such a failure. A reader gone
    (`gapwatch report x | head`, `export --out - | head -c 100`: EPIPE) has what it wanted:
    exit 0, nothing said; anything else (a full disk, EIO) is one line and exit 2.
    Standard output is pointed at /dev/null either way (`stdout_failed`)."""
    why = (out_of_files(exc) if isinstance(exc, OSError) else None) or stdout_failed(exc)
    if why is None:
        return None
    if reader_gone(exc):
        return 0
    say(f"gapwatch {command}: {why}" if command else f"gapwatch: {why}")
    return 2


def _main(arglist: list[str], command: str) -> int:
    parser = build_parser(command)
    args = parse_command_line(parser, argtypes.joined_moments(arglist))
    problem = check_flags_fit_source(args)
    if problem is not None:
        say(f"gapwatch {args.command}: {problem}")
        return 2
    few = too_few_open_files(args.command)
    if few is not None:
        say(f"gapwatch {args.command}: {few}")
        return 2
    return_large_allocations()  # huge log lines must not grow the heap for good
    try:
        config = resolve_config(args)
        few = too_few_for_logs(args.command, len(config.logs.paths))
        if few is not None:
            say(f"gapwatch {args.command}: {few}")
            return 2
        module = importlib.import_module(f"gapwatch.commands.{args.command}")
        return int(module.run(args, config))
    except ConfigError as exc:
        say(*f"gapwatch: {exc}".split("\n"))  # one line per key that does not validate
        return 2
    except argtypes.NoReadableLog as exc:  # every offline command's log glob
        say(f"gapwatch {args.command}: {exc}")
        return 2
    except KeyboardInterrupt:  # a caller of main() that kept Python's SIGINT handler
        return 130
