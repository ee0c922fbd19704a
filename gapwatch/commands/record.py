"""`gapwatch record`: headless sampling, detection and recording (never imports Textual).

`gapwatch record --out FILE [--duration S]` writes a JSON Lines recording (gzip when FILE ends in
`.gz`). Without `--out` it still runs (useful with `--prometheus` on a fleet box). SIGINT and
SIGTERM stop it cleanly: the detector is settled and the file closed whole. At the end it prints
a one-paragraph summary to stderr (gaps by kind, states reached, lateness).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType

from gapwatch.commands import add_cuzk_status_argument, say_sim_status
from gapwatch.commands.copytrace import add_copytrace_flag
from gapwatch.core.config import Config
from gapwatch.core.models import Gap, Notice, StateChange
from gapwatch.engine.runtime import build_runtime
from gapwatch.engine.summary import gap_counts_text, links_down_text, procmem_counts_text
from gapwatch.sources import SourceUnavailable


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default=None, metavar="FILE",
                   help="recording to write (.jsonl, or .jsonl.gz for gzip)")
    p.add_argument("--duration", type=float, default=None, metavar="S",
                   help="stop after S seconds (of source time); default: until interrupted")
    p.add_argument("--quiet", action="store_true", help="print no live gap lines")
    add_cuzk_status_argument(p)
    add_copytrace_flag(p)


def run(args: argparse.Namespace, config: Config) -> int:
    if not args.out and not config.prometheus.listen:
        print("gapwatch record: give --out FILE, --prometheus HOST:PORT, or both", file=sys.stderr)
        return 2
    try:
        rt = build_runtime(config, args.source or "nvml", speed=args.speed, record_path=args.out,
                           duration_s=args.duration)
    except SourceUnavailable as exc:
        print(f"gapwatch: {exc}", file=sys.stderr)
        return 2

    states: dict[int, str] = {}

    def listen(ev: Gap | StateChange | Notice) -> None:
        # Called on the sampler thread (each gap once, when it closes): a line is cheap enough.
        if isinstance(ev, Gap):
            if not args.quiet:
                print(f"gap {ev.gap_id} gpu{ev.gpu} {ev.duration_s:.3f}s {ev.kind}: {ev.hint}",
                      file=sys.stderr)
        elif isinstance(ev, StateChange):
            states[ev.gpu] = ev.state
            if not args.quiet:
                print(f"state gpu{ev.gpu} {ev.state} busy={ev.busy_fraction}", file=sys.stderr)
        elif isinstance(ev, Notice) and ev.level != "info":
            print(f"{ev.level}: {ev.message}", file=sys.stderr)

    rt.session.subscribe(listen)
    say_sim_status(rt, "record")
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    rt.start()
    if args.duration is not None and rt.replay is not None:
        rt.done.wait(args.duration)
        stop.set()
    try:
        while not stop.is_set() and not rt.done.is_set():
            stop.wait(0.2)
    finally:
        rt.stop()
        for s, h in old.items():
            signal.signal(s, h)
    lat = rt.sampler.lateness() if rt.sampler is not None else None
    where = f" to {args.out}" if args.out else ""
    gaps = gap_counts_text(rt.store.snapshot().gap_tally)
    late = (
        f"; tick lateness p50 {lat.p50_ms:.2f} ms, p99 {lat.p99_ms:.2f} ms, "
        f"max {lat.max_ms:.2f} ms, skipped {lat.skipped_ticks}"
    ) if lat and lat.p50_ms is not None else ""
    ct = f"; {rt.copytrace.status().summary()}" if rt.copytrace is not None else ""
    status = rt.status()
    slow = "".join(f"; {t}" for t in (procmem_counts_text(status.source_counters),
                                      links_down_text(status.links)) if t)
    print(f"gapwatch record: stopped{where}; gaps: {gaps}; final states: "
          f"{states or 'none'}{late}{ct}{slow}", file=sys.stderr)
    for p in status.provers:
        errors = ", ".join(f"{k} {v}" for k, v in sorted(p.errors.items())) or "none"
        print(f"gapwatch record: prover status {p.url}: {p.ok} of {p.polls} polls answered "
              f"(every {p.period_s:g} s); failed: {errors}", file=sys.stderr)
    return 0
