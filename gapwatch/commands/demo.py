"""`gapwatch demo`: the live dashboard over the simulated two-worker prover, no GPU needed.

The default scenario, `pageable`, chains nicely at first and breaks down within about 30 s: after
the unpinned first wave the pinned pool's checkouts fail (cuzk's `checkout FAILED` lines), a/b/c
go to pageable memory and host-to-device copies trickle at a few GB/s; the help screen's "What to
change" names `[memory] safety_margin` with its payoff.
The simulated prover writes its log to a temporary file that the real tailer follows, so the log
pane shows what it would show for cuzk, and its copies reach the session as the copy trace
would deliver them (`[sim] copy_trace`, on here unless the config says "off"): the gaps name
the memory each copy came from, and the H2D line shows each kind's rate. `--source
sim:SCENARIO` picks another scenario (chained, host-stall, transfer-bound, batched,
batch-wait); `--speed` runs faster than real time.
"""

from __future__ import annotations

import argparse

from gapwatch.commands import argtypes
from gapwatch.commands.recording_args import add_output_arguments, exists_policy
from gapwatch.config import Config
from gapwatch.engine.console import say
from gapwatch.engine.runtime import STARTUP_ERRORS, build_runtime
from gapwatch.engine.terminal import detach_piped_stdin, require_terminal


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--record", type=argtypes.path, default=None, metavar="FILE",
                   help="also record the demo to FILE, replayable with `gapwatch replay`")
    add_output_arguments(p, "--record")


def demo_config(config: Config) -> Config:
    """The demo's settings: the simulated copy trace on unless the config says "off"."""
    if config.sim.copy_trace != "auto":
        return config
    return config.model_copy(update={"sim": config.sim.model_copy(update={"copy_trace": "on"})})


def run(args: argparse.Namespace, config: Config) -> int:
    source = args.source or f"sim:{config.sim.scenario}"
    if not source.startswith("sim"):
        say("gapwatch demo: --source must be sim or sim:SCENARIO (use `watch` or `replay` "
            "for other sources)")
        return 2
    speed = 1.0 if args.speed is None else args.speed
    if speed == 0:
        # As fast as possible would be over before the first redraw.
        say("gapwatch demo: --speed 0 is for `record`; use e.g. --speed 4")
        return 2
    config = demo_config(config)
    try:
        require_terminal("demo")
        log_fd = detach_piped_stdin(list(config.logs.paths))
        rt = build_runtime(config, source, speed=speed, record_path=args.record,
                           record_exists=exists_policy(args), stdin_fd=log_fd)
    except STARTUP_ERRORS as exc:
        say(f"gapwatch demo: {exc}")
        return 2
    from gapwatch.ui import start_and_show

    # The simulated prover's /status URL is in the footer and the help screen: said on stderr
    # it was hidden behind the dashboard until it closed.
    return start_and_show(rt, "demo")
