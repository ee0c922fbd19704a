"""What cuzk's watcher (PoSt latency, restarts, errors, lost GPU jobs) costs per log event,
beside what parsing the same lines costs: the watcher runs on every event of a live session
and of `report --log`.

Usage:
    python3 bench/post_watch.py [--hours H] [--repeat N]

Input: the simulator's `post` scenario (the chained pipeline, a PoSt every 75 s, a panic and
a restart every 150 s: far more events of interest than a real prover has) for H simulated
hours; its log lines parsed once, then the parser and the watcher timed apart over them, best
of N. Prints events, µs per event for each, and the watcher's share of the parse time.

Then the watcher as a session and a report run it, beside the gaps' `PipelineFacts` fed the
same events (the two share one keeper of the GPU workers' holds, `CuzkWatch(holds=...)`;
a checkout before that keeps a second copy in the watcher): the two fed together, the facts
alone, and the watcher's part, their difference. The watcher alone above is `gapwatch parse`'s
(no `PipelineFacts` beside it: it keeps its own).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation.simulate import simulate  # noqa: E402
from gapwatch.core.models import LogEvent  # noqa: E402
from gapwatch.cuzk.pipeline import PipelineFacts  # noqa: E402
from gapwatch.cuzk.watch import CuzkWatch  # noqa: E402
from gapwatch.logs.parse import LogParser  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sim = simulate("post", duration_s=args.hours * 3600, period_ms=100.0)
    lines = sim.log_lines
    parse_s = watch_s = float("inf")
    events = []
    said = 0
    for _ in range(args.repeat):
        parser = LogParser(offline=True)
        t0 = time.perf_counter()
        events = [e for stream, text in lines for e in parser.parse_line(text, stream)]
        events += parser.flush()
        parse_s = min(parse_s, time.perf_counter() - t0)
        watch = CuzkWatch()
        t0 = time.perf_counter()
        said = sum(len(watch.feed(e)) for e in events) + len(watch.finish())
        watch_s = min(watch_s, time.perf_counter() - t0)
    n = len(events)
    print(f"post_watch: {args.hours:g} simulated h, {len(lines)} lines, {n} events, "
          f"{said} prover events said")
    print(f"  parse: {parse_s * 1e6 / n:.2f} µs/event ({parse_s:.3f} s)")
    print(f"  watch: {watch_s * 1e6 / n:.2f} µs/event ({watch_s:.3f} s), "
          f"{100 * watch_s / parse_s:.1f} % of the parse time")
    facts_s, pair_s = _beside_the_gaps(events, args.repeat)
    print(f"  beside the gaps' facts: both {pair_s * 1e6 / n:.2f} µs/event, facts alone "
          f"{facts_s * 1e6 / n:.2f}, the watcher's part {(pair_s - facts_s) * 1e6 / n:.2f}")
    return 0


def _watch_beside(facts: PipelineFacts) -> CuzkWatch:
    """The watcher as the composition roots build it beside `facts`: on its keeper of the
    workers' holds (a checkout before that has no such argument: its watcher keeps its own)."""
    try:
        return CuzkWatch(holds=facts.holds)
    except TypeError:
        return CuzkWatch()


def _beside_the_gaps(events: list[LogEvent], repeat: int) -> tuple[float, float]:
    """Best of `repeat`: the gaps' facts fed `events` alone, and with the watcher beside them
    (each event to the watcher, then the facts, as `Session.on_record` feeds them)."""
    facts_s = pair_s = float("inf")
    for _ in range(repeat):
        facts = PipelineFacts()
        t0 = time.perf_counter()
        for e in events:
            facts.feed(e)
        facts_s = min(facts_s, time.perf_counter() - t0)
        facts = PipelineFacts()
        watch = _watch_beside(facts)
        t0 = time.perf_counter()
        for e in events:
            watch.feed(e)
            facts.feed(e)
        watch.finish()
        pair_s = min(pair_s, time.perf_counter() - t0)
    return facts_s, pair_s


if __name__ == "__main__":
    raise SystemExit(main())
