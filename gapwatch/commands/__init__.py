"""Subcommands: one module each, `add_arguments(parser)` and `run(args, config) -> exit code`.

Who calls them: `gapwatch.cli`, which builds the parser from every module's `add_arguments`
and runs the chosen one. Thin: they parse, build what the engine or offline tools need, and print.
Modules here must not import Textual, plotext or pynvml at import time: `gapwatch --help`
imports them all. The dashboard commands import `gapwatch.ui` inside `run`.
"""

from __future__ import annotations

import argparse
from typing import Any

from gapwatch.commands import argtypes
from gapwatch.engine.console import say


def add_cuzk_status_argument(p: argparse.ArgumentParser) -> None:
    """`--cuzk-status URL` (watch, record): the prover's own pipeline, polled beside the logs."""
    p.add_argument("--cuzk-status", action="append", default=[], metavar="URL",
                   help="poll the prover's GET /status (cuzk [daemon] status_listen), e.g. "
                        "http://127.0.0.1:9821/status; repeatable; period and timeout in "
                        "[cuzk] of the config")


def sim_status_hint(url: str, command: str, polled: bool) -> str:
    """Where the simulated prover serves its status, and what to do with it. It named
    `gapwatch record --source sim:chained --cuzk-status URL` whatever ran: a second simulator
    beside this one's /status, of another scenario, never what this run shows."""
    read = f"read by this {command}" if polled else "not read: --cuzk-status was given"
    return (f"gapwatch {command}: the simulated prover serves its status at {url} ({read}; "
            f"`curl {url}` shows it; a real cuzk's is read with `--cuzk-status "
            "http://HOST:PORT/status`, its [daemon] status_listen)")


def say_sim_status(rt: Any, command: str, polled: bool) -> None:
    """Tell the user where the simulated prover serves its status (`sim_status_hint`)."""
    server = getattr(rt, "sim_status_server", None)
    if server is not None:
        say(sim_status_hint(str(server.url), command, polled))


def add_on_event_arguments(p: argparse.ArgumentParser) -> None:
    """`--on-event CMD` and `--on-event-timeout S` (watch, record): gapwatch.engine.events."""
    p.add_argument("--on-event", default=None, metavar="CMD",
                   help="run CMD (split like a shell's words, never run by one) when a GPU "
                        "enters or leaves BREAKDOWN, a PoSt goes late, the prover restarts, "
                        "on a prover error or on a GPU error NVML reports (an XID, uncorrected "
                        "ECC errors, the GPU lost, a failed memory row remap); the facts are in "
                        "GAPWATCH_* environment "
                        "variables (docs/fleet.md)")
    p.add_argument("--on-event-timeout", type=argtypes.positive_seconds, default=10.0,
                   metavar="S",
                   help="kill CMD after S seconds (default 10)")


def on_event_argv(args: argparse.Namespace) -> list[str] | None:
    """`--on-event CMD` as the words to run (None without the flag). Checked before the
    runtime is built, so nothing (a recording, a listening socket) is made for a command that
    stops at once; the hook is then started with these words, not checked again.

    Raises:
        ValueError: words that cannot be split, or a program that cannot be run (the caller
            says it in one line, exit 2).
    """
    if not args.on_event:
        return None
    from gapwatch.engine.events import checked_command

    return checked_command(args.on_event)


def cannot_read(exc: OSError) -> str:
    """An input that failed while read (`report`, `compare`), in words: the file when the error
    names it, else only what failed. Not "cannot read log": a recording that fails mid-read
    (`/proc/self/mem`, a disk error) was blamed on the log."""
    what = exc.strerror or str(exc)
    return f"cannot read {exc.filename}: {what}" if exc.filename else f"cannot read: {what}"
