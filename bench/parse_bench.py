"""Parse rate of `LogParser` on real cuzk logs (goal: >= 100k lines/s on one core).

Usage: python bench/parse_bench.py [--repeat N] [--mix real|tracing|cpp]
Prints lines/s per mix. The real mix is tests/data/{pinned,pageable}.log (tracing, TIMELINE and
CUZK lines in cuzk's proportions), replayed N times through one parser.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from gapwatch.logs.parse import LogParser

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"

TRACING = [
    '2026-05-12T14:14:02.010377Z  INFO gpu_worker{worker_id=1 gpu=0 job_id=porep-1234-5678 '
    'proof_kind=porep-c2 batch_size=1 partition=Some(3)}: cuzk_core::engine: GPU_TIMING hot_path '
    'pre-prove overhead worker_id=1 partition=Some(3) status_ms=0 fail_check_ms=0 mark_busy_ms=0 '
    'total_overhead_ms=0',
    '2026-05-12T14:14:41.002515Z  INFO cuzk_core::engine: pacer: status total=45 in_flight=12 '
    'waiting=8 ema_waiting="7.9" gpu_proc_ms="3356" gpu_eff_ms="1678" ema_synth_ms="2400" '
    'interval_ms=1650 integral="0.12" bootstrap=false rebootstraps=0',
]


def lines_for(mix: str) -> list[str]:
    real = [line for name in ("pinned.log", "pageable.log")
            for line in (DATA / name).read_text().splitlines()]
    if mix == "real":
        return real
    if mix == "tracing":
        return TRACING * 50
    return [line for line in real if line.startswith(("TIMELINE", "CUZK"))]


def bench(mix: str, repeat: int) -> float:
    lines = lines_for(mix)
    parser = LogParser()
    n = 0
    t0 = time.perf_counter()
    for r in range(repeat):
        for i, line in enumerate(lines):
            parser.parse_line(line, "bench", r * 1_000_000 + i, 0.0)
        n += len(lines)
    dt = time.perf_counter() - t0
    assert parser.counters["internal_errors"] == 0
    return n / dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=300)
    ap.add_argument("--mix", choices=["real", "tracing", "cpp", "all"], default="all")
    args = ap.parse_args()
    mixes = ["real", "tracing", "cpp"] if args.mix == "all" else [args.mix]
    for mix in mixes:
        rate = bench(mix, args.repeat)
        print(f"parse rate ({mix:<7}): {rate / 1000:8.1f} k lines/s")


if __name__ == "__main__":
    main()
