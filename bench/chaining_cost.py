"""The chaining figure's cost per GPU sample: `ChainingMeter.add_sample` over a recording's
samples, repeated, fastest of a few rounds. Prints microseconds a sample.

    PYTHONPATH=. python3 bench/chaining_cost.py [--recording REC] [--repeat N] [--report]

Run it for two checkouts alternately (PYTHONPATH=<tree>) to compare; docs/benchmarks.md keeps
the figures with their machine and date.
"""

from __future__ import annotations

import argparse
import time

from gapwatch.core.chaining import ChainingMeter
from gapwatch.core.config import DetectorConfig
from gapwatch.core.models import GpuSample
from gapwatch.sources.files import read_any


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recording", default="tests/data/h200-e2e/pageable/rec.jsonl.gz")
    ap.add_argument("--repeat", type=int, default=200, help="times the samples are fed")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--report", action="store_true",
                    help="the report's meter (the whole run, no window), not the live one")
    a = ap.parse_args()
    rec = read_any(a.recording)
    samples = [r for r in rec.records if isinstance(r, GpuSample)] * a.repeat
    best = float("inf")
    for _ in range(a.rounds):
        meter = ChainingMeter(list(rec.header.gpus), DetectorConfig(),
                              **({"window_s": None} if a.report else {}))
        t0 = time.perf_counter()
        for s in samples:
            meter.add_sample(s)
        best = min(best, time.perf_counter() - t0)
    print(f"{best / len(samples) * 1e6:.3f} us a sample ({len(samples)} samples, fastest of "
          f"{a.rounds})")


if __name__ == "__main__":
    main()
