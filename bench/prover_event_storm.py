"""Memory of `parse --timeline` over a storm of prover errors (goal: flat in the storm's size).

Usage:
    python bench/prover_event_storm.py                    # 100,000 panics
    python bench/prover_event_storm.py --panics 400000

Writes a cuzk log of N supraseal-c2 CUDA panics (each after a `memory budget initialized` line
that times it, one a second: what a prover failing every partition writes) to a temporary file,
then runs `python -m gapwatch parse --timeline LOG` under `/usr/bin/time` and prints its peak
resident set, its wall time and the summary line it said. Each panic is one error event; the
offline commands count every one and keep the first 10,000 of each kind
(`gapwatch.offline.prover_events.MAX_KEPT`).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START_S = 1_778_594_400.0  # 2026-05-12 14:00 UTC


def write_storm(path: Path, panics: int) -> None:
    with open(path, "w") as out:
        for i in range(panics):
            stamp = datetime.fromtimestamp(START_S + i, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            out.write(f"{stamp}  INFO cuzk_core::engine: memory budget initialized "
                      "total_budget_gib=750\n"
                      "thread '<unnamed>' panicked at /root/supraseal-c2/src/lib.rs:316:9:\n"
                      f'cudaGetLastError()@/x/gs.cu:220 failed: "out of memory {i}"\n'
                      "note: run with `RUST_BACKTRACE=1` environment variable to display a "
                      "backtrace\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--panics", type=int, default=100_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gapwatch-storm-log-") as tmp:
        log = Path(tmp) / "cuzk.log"
        write_storm(log, args.panics)
        done = subprocess.run(
            ["/usr/bin/time", "-f", "TIME %M %e", sys.executable, "-m", "gapwatch", "parse",
             "--timeline", str(log)], cwd=ROOT, capture_output=True, text=True, check=False)
    said = next((ln for ln in done.stdout.splitlines() if ln.startswith("Prover events")), "-")
    timed = re.search(r"TIME (\d+) ([\d.]+)", done.stderr)
    if timed is None:
        print(done.stderr[-2000:])
        raise SystemExit(1)
    print(f"{args.panics} panics: peak RSS {int(timed.group(1)) / 1024:.1f} MiB, "
          f"{float(timed.group(2)):.1f} s, exit {done.returncode}")
    print(f"  {said}")


if __name__ == "__main__":
    main()
