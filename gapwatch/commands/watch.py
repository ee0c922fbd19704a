"""`gapwatch watch`: the live dashboard over real GPUs (NVML), the prover's logs (`--log`), and
optionally a recording of everything seen (`--record FILE`).

Who calls it: `gapwatch.cli`. It builds the runtime, then hands it to the dashboard; a source
that cannot start (no driver, no GPU) is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse

from gapwatch.commands import (
    add_cuzk_status_argument,
    add_on_event_arguments,
    argtypes,
    on_event_argv,
)
from gapwatch.commands.copytrace import add_copytrace_flag
from gapwatch.commands.recording_args import add_output_arguments, exists_policy
from gapwatch.config import Config
from gapwatch.engine.console import say
from gapwatch.engine.events import event_hook_for
from gapwatch.engine.runtime import STARTUP_ERRORS, build_runtime
from gapwatch.engine.terminal import detach_piped_stdin, require_terminal


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--record", type=argtypes.path, default=None, metavar="FILE",
                   help="also record to FILE (.jsonl, or .jsonl.gz), replayable with `replay`")
    add_output_arguments(p, "--record")
    add_cuzk_status_argument(p)
    add_copytrace_flag(p)
    add_on_event_arguments(p)


def run(args: argparse.Namespace, config: Config) -> int:
    try:
        argv = on_event_argv(args)
    except ValueError as exc:
        say(f"gapwatch watch: {exc}")
        return 2
    try:
        require_terminal("watch")
        log_fd = detach_piped_stdin(list(config.logs.paths))
        rt = build_runtime(config, args.source or "nvml", speed=args.speed,
                           record_path=args.record, record_exists=exists_policy(args),
                           stdin_fd=log_fd)
    except STARTUP_ERRORS as exc:
        say(f"gapwatch watch: {exc}")
        return 2
    hook = event_hook_for(argv, rt, config, args.on_event_timeout)
    from gapwatch.ui import start_and_show

    try:
        # A simulated prover's /status URL is in the footer (stderr is behind the dashboard).
        return start_and_show(rt, "watch")
    finally:
        if hook is not None:
            hook.stop()
            say(f"gapwatch watch: {hook.counts.summary()}")
