"""Would detection over columns pay? The cost of making columns, beside the decode floor.

Usage:
    python bench/columns_cost.py                 # bench/report_floor.py's 30 min x 8 GPU recording
    python bench/columns_cost.py --minutes 5

Detection over columns (per GPU: the per-sample classification vectorised with numpy, the
run-level logic handed whole runs) needs the samples' fields as arrays. The reader decodes each
line into a typed record (the floor: msgspec cannot decode JSON objects into arrays), so the
columns would be built from the records. Printed, each the best of `--rounds`, in one process:
- floor: every line decoded into its record (as `bench/report_floor.py`'s floor);
- columns: the eight fields the detector reads per GPU sample (times, interval, SM, utilization,
  both PCIe directions, the SM source) copied from the decoded GPU samples into numpy arrays,
  grouped by GPU (None as NaN);
- touch: the same eight fields read from every GPU sample in a plain loop, nothing kept: what
  any per-sample Python path pays before it does anything;
- classify: on the columns, the busy test and the PCIe class of every sample (numpy).
numpy is not a dependency of gapwatch; without it only floor and touch are printed.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gapwatch.core.codec import decode_record  # noqa: E402
from gapwatch.core.models import GpuSample  # noqa: E402

_FIELDS = ("t_mono_ns", "t_wall_s", "interval_ns", "sm_active_pct", "gpu_util_pct",
           "pcie_rx_bytes_per_s", "pcie_tx_bytes_per_s", "sm_source")


def _best(fn: Any, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    path = Path(f"/tmp/gapwatch-floor-{args.minutes:g}m-{args.gpus}gpu.jsonl")
    if not path.exists():
        raise SystemExit(f"{path} is missing: `python bench/report_floor.py --minutes "
                         f"{args.minutes:g} --rounds 1` makes it")
    gc.disable()
    lines = path.read_bytes().splitlines(keepends=True)[1:]
    records = list(map(decode_record, lines))
    by_gpu: dict[int, list[GpuSample]] = {}
    for r in records:
        if type(r) is GpuSample:
            by_gpu.setdefault(r.gpu, []).append(r)
    n = sum(len(v) for v in by_gpu.values())

    def floor() -> None:
        for _ in map(decode_record, lines):
            pass

    def touch() -> None:
        for samples in by_gpu.values():
            for s in samples:
                _ = (s.t_mono_ns, s.t_wall_s, s.interval_ns, s.sm_active_pct, s.gpu_util_pct,
                     s.pcie_rx_bytes_per_s, s.pcie_tx_bytes_per_s, s.sm_source)

    print(f"{path.name}: {len(lines)} records, {n} GPU samples, best of {args.rounds}")
    print(f"  floor (decode every line)     {_best(floor, args.rounds):.3f} s")
    print(f"  touch (8 fields per sample)   {_best(touch, args.rounds):.3f} s")
    try:
        import numpy as np
    except ImportError:
        print("  (numpy not installed: columns and classify not measured)")
        return 0
    cols: dict[int, dict[str, Any]] = {}

    def columns() -> None:
        for g, samples in by_gpu.items():
            cols[g] = {
                "t": np.fromiter((s.t_mono_ns for s in samples), np.int64, len(samples)),
                **{f: np.array([getattr(s, f) for s in samples], dtype=float)
                   for f in _FIELDS[1:-1]},
                "src": [s.sm_source for s in samples],
            }

    def classify() -> None:
        for c in cols.values():
            level = c["sm_active_pct"]
            _busy = level >= 10.0
            rate = np.fmax(c["pcie_rx_bytes_per_s"], c["pcie_tx_bytes_per_s"])
            _cls = (rate >= 6.3e8).astype(np.int8) + (rate >= 3.15e10)

    print(f"  columns (numpy, by GPU)       {_best(columns, args.rounds):.3f} s")
    print(f"  classify (busy, PCIe class)   {_best(classify, args.rounds):.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
