"""Command line: one program, subcommands, common flags; no logic of its own.

Each subcommand lives in `gapwatch.commands.<name>` and is imported only when chosen, so that
headless commands (`record`, `report`, `export`, `parse`) never import Textual.

Exit codes: 0 success, 1 a failure while running, 2 bad usage, bad config, or a source that
cannot start (no NVIDIA driver, unreadable recording).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from gapwatch import __version__
from gapwatch.core.config import Config, ConfigError, load_config, with_overrides

COMMANDS = {
    "demo": "the live dashboard over the simulated prover (scenario 'pageable' by default)",
    "watch": "the live dashboard over real GPUs (NVML) and the prover's logs",
    "record": "headless: sample and detect, write a JSON Lines recording",
    "replay": "the dashboard (or --headless) over a recording or a trace CSV",
    "report": "headless: gaps, breakdowns and payoff of a recording, as text or JSON",
    "export": "headless: convert a recording to Perfetto trace JSON or CSV",
    "parse": "headless: print the events gapwatch reads from prover logs (check your rules)",
    "copytrace": "build and install the copy-trace library for the prover (pinned vs pageable)",
}


def _common(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("common options")
    g.add_argument(
        "--source",
        default=None,
        help="nvml | sim | sim:SCENARIO | replay:FILE (default: nvml; demo: sim:pageable)",
    )
    g.add_argument("--gpus", default=None, help="GPU indices to watch, e.g. 0,1 (default: all)")
    g.add_argument("--period-ms", type=float, default=None, help="sampling period (default 100)")
    g.add_argument(
        "--log",
        action="append",
        default=[],
        metavar="PATH",
        help="prover log to follow (repeatable; '-' = stdin)",
    )
    g.add_argument("--from-start", action="store_true", help="read logs from their start")
    g.add_argument("--config", default=None, metavar="FILE", help="TOML config file")
    g.add_argument(
        "--speed",
        type=float,
        default=None,
        help="sim/replay speed: 1 = real time, 0 = as fast as possible",
    )
    g.add_argument("--seed", type=int, default=None, help="simulator seed")
    g.add_argument("--prometheus", default=None, metavar="HOST:PORT", help="serve /metrics")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gapwatch",
        description="See, live, why a pipelined GPU workload stops keeping its GPU busy.",
    )
    parser.add_argument("--version", action="version", version=f"gapwatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    for name, help_text in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        _common(p)
        module = importlib.import_module(f"gapwatch.commands.{name}")
        add_args = getattr(module, "add_arguments", None)
        if add_args is not None:
            add_args(p)
    return parser


def resolve_config(args: argparse.Namespace) -> Config:
    """Load the config file, then apply the flags that override it."""
    config = load_config(args.config)
    over: dict[str, dict[str, object]] = {}
    if args.period_ms is not None:
        over.setdefault("sampler", {})["period_ms"] = args.period_ms
    if args.gpus:
        try:
            over.setdefault("sampler", {})["gpus"] = [int(x) for x in args.gpus.split(",") if x]
        except ValueError:
            raise ConfigError(f"--gpus: expected indices like 0,1 (got {args.gpus!r})") from None
    if args.log:
        over.setdefault("logs", {})["paths"] = list(config.logs.paths) + list(args.log)
    if args.from_start:
        over.setdefault("logs", {})["from_start"] = True
    if args.seed is not None:
        over.setdefault("sim", {})["seed"] = args.seed
    if args.prometheus:
        over.setdefault("prometheus", {})["listen"] = args.prometheus
    cuzk_status = getattr(args, "cuzk_status", None)
    if cuzk_status:
        over.setdefault("cuzk", {})["status_url"] = list(config.cuzk.status_url) + cuzk_status
    copytrace = getattr(args, "copytrace", None)  # watch and record only
    if copytrace is not None:
        over["copytrace"] = {"enabled": True}
        if copytrace:
            over["copytrace"]["socket"] = copytrace
    return with_overrides(config, over) if over else config


def main(argv: Sequence[str] | None = None) -> int:
    # The subcommand modules are thin; importing them all to build --help is cheap because none
    # of them imports Textual, plotext or pynvml at module level.
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = resolve_config(args)
    except ConfigError as exc:
        print(f"gapwatch: {exc}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"gapwatch.commands.{args.command}")
    try:
        return int(module.run(args, config))
    except KeyboardInterrupt:
        return 130
