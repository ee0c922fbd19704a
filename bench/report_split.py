"""Where splitting a report across processes starts to pay: one process against two, by size.

Usage:
    python bench/report_split.py                          # 2, 5, 10, 20, 30 min x 8 GPUs
    python bench/report_split.py --minutes 1 3 5 --rounds 7

For each size, the simulator's `pageable` recording (the worst case, as bench/report_floor.py
writes it, cached in /tmp) is reported by `build_report(FILE, Config(), workers=N)` with one
process and with two, in turn, round after round, each run a fresh process timing only its
own call (start-up and imports left out). It prints the medians and the ratio two / one round
by round, beside the file's size: where the ratio falls below 1 on a 2-core box is where
`MIN_PARALLEL_BYTES` in `gapwatch.offline.report_parallel` belongs (docs/benchmarks.md, "Part
D": on the shared dev box it did not fall below 1 up to 46.8 MB, so the threshold stayed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))

# The same cached recordings as bench/report_floor.py (its generator, its file names).
from report_floor import _recording  # noqa: E402


def _measure(path: str, workers: int) -> float:
    from gapwatch.config import Config
    from gapwatch.offline.report import build_report

    t = time.perf_counter()
    build_report(path, Config(), workers=workers)
    return time.perf_counter() - t


def _run(path: Path, workers: int) -> float:
    done = subprocess.run([sys.executable, str(HERE), "--measure", str(path), str(workers)],
                          capture_output=True, text=True, check=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    return float(json.loads(done.stdout.splitlines()[-1]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, nargs="+", default=[2, 5, 10, 20, 30])
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(_measure(args.measure[0], int(args.measure[1]))))
        return 0
    print(f"load average before {os.getloadavg()[0]:.2f}; {args.rounds} rounds")
    for minutes in args.minutes:
        path = _recording(minutes, args.gpus)
        one: list[float] = []
        two: list[float] = []
        for _ in range(args.rounds):
            one.append(_run(path, 1))
            two.append(_run(path, 2))
        ratios = [b / a for a, b in zip(one, two, strict=True)]
        print(f"  {minutes:g} min x {args.gpus} GPUs, {path.stat().st_size / 1e6:.1f} MB: "
              f"one process {statistics.median(one):.3f} s, two {statistics.median(two):.3f} s,"
              f" two / one {statistics.median(ratios):.2f} "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
