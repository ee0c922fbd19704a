"""How often `compare`'s test calls a change where there is none, and finds one where there is.

Usage:
    python bench/compare_calibration.py                # 300 pairs a row
    python bench/compare_calibration.py --pairs 1000

Each side is a series of window values that drift as a prover's windows do: each window keeps
`r` of the last one's deviation from the level, plus noise (an AR(1) series; r = 0: independent
windows). For each r it prints, over PAIRS pairs of 120 windows a side:
- same level: the share of pairs the test calls changed at p < 0.01 (what the test promises is
  1 %), with the variance as the U test takes it (windows independent) and as `compare` now
  widens it (`compare_stats.serial_inflation`);
- a real change (the level +0.08, 1.6 of the series' spread): the share `judge` finds "better".
Seeded: the same figures every run. Pure computation, no files.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gapwatch.offline.compare_stats import (  # noqa: E402
    ALPHA,
    judge,
    mann_whitney_p,
    serial_inflation,
)

WINDOWS = 120
LEVEL = 0.6
SPREAD = 0.05
SHIFT = 0.08


def drifting(rng: random.Random, n: int, r: float, level: float) -> list[float]:
    """`n` windows of an AR(1) series around `level` whose spread is `SPREAD` whatever `r`."""
    out, dev = [], rng.gauss(0.0, SPREAD)
    for _ in range(n):
        dev = r * dev + rng.gauss(0.0, SPREAD * (1.0 - r * r) ** 0.5)
        out.append(level + dev)
    return out


def row(r: float, pairs: int) -> tuple[float, float, float]:
    """(false share as independent, false share widened, share of real changes found)."""
    rng = random.Random(7)
    plain = widened = 0
    for _ in range(pairs):
        a, b = drifting(rng, WINDOWS, r, LEVEL), drifting(rng, WINDOWS, r, LEVEL)
        plain += mann_whitney_p(a, b) < ALPHA
        widened += mann_whitney_p(a, b, serial_inflation(a, b)) < ALPHA
    found = sum(judge(drifting(rng, WINDOWS, r, LEVEL), drifting(rng, WINDOWS, r, LEVEL + SHIFT),
                      "higher", share=True).verdict == "better" for _ in range(pairs))
    return plain / pairs, widened / pairs, found / pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=300)
    args = ap.parse_args()
    print(f"{args.pairs} pairs of {WINDOWS} windows a side; p < {ALPHA}")
    print(f"{'lag-1 r':>8} {'false, as independent':>22} {'false, widened':>15} "
          f"{'real change found':>18}")
    for r in (0.0, 0.3, 0.5, 0.8):
        plain, widened, found = row(r, args.pairs)
        print(f"{r:>8.1f} {plain:>21.1%} {widened:>15.1%} {found:>18.1%}")


if __name__ == "__main__":
    main()
