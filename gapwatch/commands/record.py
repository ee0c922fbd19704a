"""`gapwatch record`: headless sampling, detection and recording (never imports Textual).

`gapwatch record --out FILE [--duration S]` writes a JSON Lines recording (gzip when FILE ends in
`.gz`). Without `--out` it still runs (useful with `--prometheus` on a fleet box). An existing
FILE is never overwritten unless `--force` is given (`--rotate` keeps it and records to the next
free name); a FILE another process is writing is refused. SIGINT, SIGTERM and SIGHUP stop it
cleanly: the detector is settled, the file closed whole, the summary printed (exit 0). A full or
failing disk stops the recording, not the monitoring: it is said (stderr, `/metrics`), retried,
and resumed when space returns (docs/recording.md). A thread of gapwatch's that dies (the
sampler, a reader, the writer, a poller) is said at once and at the end, and the exit status is
1. Every line goes through
`gapwatch.engine.console`, so a closed stderr never stops it.
"""

from __future__ import annotations

import argparse
import time

from gapwatch.commands import (
    add_cuzk_status_argument,
    add_on_event_arguments,
    argtypes,
    on_event_argv,
    say_sim_status,
)
from gapwatch.commands.copytrace import add_copytrace_flag
from gapwatch.commands.recording_args import add_output_arguments, exists_policy
from gapwatch.config import Config
from gapwatch.core import fmt
from gapwatch.core.models import Gap, Notice, StateChange
from gapwatch.engine.console import say
from gapwatch.engine.events import event_hook_for
from gapwatch.engine.runtime import STARTUP_ERRORS, Runtime, build_runtime
from gapwatch.engine.sampler import LatenessStats
from gapwatch.engine.stop_signals import POLL_S, StopSignals
from gapwatch.engine.summary import gap_counts_text, links_down_text, procmem_counts_text


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=argtypes.path, default=None, metavar="FILE",
                   help="recording to write (.jsonl, or .jsonl.gz for gzip)")
    add_output_arguments(p, "--out")
    p.add_argument("--duration", type=argtypes.positive_seconds, default=None, metavar="S",
                   help="stop after S seconds (of source time); default: until interrupted")
    p.add_argument("--quiet", action="store_true", help="print no live gap lines")
    add_cuzk_status_argument(p)
    add_copytrace_flag(p)
    add_on_event_arguments(p)


def run(args: argparse.Namespace, config: Config) -> int:
    if not args.out and not config.prometheus.listen:
        say("gapwatch record: give --out FILE, --prometheus HOST:PORT, or both")
        return 2
    try:
        argv = on_event_argv(args)
    except ValueError as exc:
        say(f"gapwatch record: {exc}")
        return 2
    # Signals first: a SIGTERM while NVML starts must still end in a clean stop.
    with StopSignals() as stop:
        try:
            rt = build_runtime(config, args.source or "nvml", speed=args.speed,
                               record_path=args.out, record_exists=exists_policy(args),
                               duration_s=args.duration)
        except STARTUP_ERRORS as exc:
            say(f"gapwatch record: {exc}")
            return 2
        hook = event_hook_for(argv, rt, config, args.on_event_timeout)
        states: dict[int, str] = {}

        def listen(ev: Gap | StateChange | Notice) -> None:
            # On the sampler thread (each gap once, when it closes): `say` never raises and
            # never blocks on a dead stderr.
            if isinstance(ev, Gap):
                if not args.quiet:
                    say(f"gap {ev.gap_id} gpu{ev.gpu} {ev.duration_s:.3f}s {ev.kind}: {ev.hint}")
            elif isinstance(ev, StateChange):
                states[ev.gpu] = ev.state
                if not args.quiet:
                    say(state_line(ev))
            elif isinstance(ev, Notice) and ev.level != "info":
                say(f"{ev.level}: {ev.message}")

        rt.session.subscribe(listen)
        say(f"gapwatch record: {_started(rt)}")
        say_sim_status(rt, "record", polled=not args.cuzk_status)
        rt.start()
        # A replay has no source clock to stop it: --duration is wall seconds there.
        deadline = (time.monotonic() + args.duration
                    if args.duration is not None and rt.replay is not None else None)
        try:
            # Waited on `done`, not slept between looks at it: the command ends as its data
            # does (it slept on up to 0.2 s after it); a stop signal is seen within `POLL_S`.
            while not stop.requested() and not rt.done.wait(POLL_S):
                if deadline is not None and time.monotonic() >= deadline:
                    break
        finally:
            rt.stop()
            if hook is not None:
                hook.stop()
    status = rt.status()
    why = f" ({stop.received.name})" if stop.received is not None else ""
    gaps = gap_counts_text(rt.store.snapshot().gap_tally)
    recorded = f"{status.recording.summary()}; " if status.recording is not None else ""
    ct = f"; {rt.copytrace.status().summary()}" if rt.copytrace is not None else ""
    slow = "".join(f"; {t}" for t in (procmem_counts_text(status.source_counters),
                                      links_down_text(status.links), status.blind) if t)
    say(f"gapwatch record: stopped{why}; {recorded}gaps: {gaps}; "
        f"final states: {final_states_text(states)}{_lateness_summary(status.lateness)}{ct}"
        f"{slow}")
    for p in status.provers:
        errors = ", ".join(f"{k} {v}" for k, v in sorted(p.errors.items())) or "none"
        say(f"gapwatch record: prover status {p.url}: {p.ok} of {p.polls} polls answered "
            f"(every {p.period_s:g} s); failed: {errors}")
    if hook is not None:
        say(f"gapwatch record: {hook.counts.summary()}")
    dead = status.dead_threads_text()
    if dead:
        # Exit 1: what was recorded may have holes where a thread was down.
        say(f"gapwatch record: gapwatch's own threads died: {dead}")
        return 1
    return 0


def state_line(ev: StateChange) -> str:
    """`state GPU0 BREAKDOWN (busy 74%): 2 pcie_starved gaps in the last 30 s` (it printed
    `busy=0.04000653772581903`)."""
    return f"state GPU{ev.gpu} {ev.state} (busy {fmt.frac_pct(ev.busy_fraction)}): {ev.reason}"


def final_states_text(states: dict[int, str]) -> str:
    """`GPU0 BREAKDOWN, GPU1 CHAINED`, or `none` (it printed `{0: 'BREAKDOWN'}`)."""
    return ", ".join(f"GPU{gpu} {state}" for gpu, state in sorted(states.items())) or "none"


def _started(rt: Runtime) -> str:
    status = rt.status()
    parts = [f"source {status.source}"]
    if status.recording_path:
        parts.append(f"recording to {status.recording_path}")
    if status.prometheus_address:
        parts.append(f"metrics at http://{status.prometheus_address}/metrics")
    return "; ".join(parts)


def _lateness_summary(lat: LatenessStats | None) -> str:
    """The whole run's tick lateness (the footer shows the recent window), or nothing."""
    if lat is None or lat.run_max_ms is None:
        return ""
    return (f"; tick lateness over the whole run ({lat.ticks} ticks): p50 {lat.run_p50_ms:.2f} "
            f"ms, p99 {lat.run_p99_ms:.2f} ms (from buckets, within 4.4 %), max "
            f"{lat.run_max_ms:.2f} ms (exact), skipped {lat.skipped_ticks}")
