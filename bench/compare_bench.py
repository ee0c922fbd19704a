"""`gapwatch compare` of two 24 h, 8-GPU, 10 Hz recordings (goal: at most 60 s on a 2-core box).

Usage:
    python bench/compare_bench.py                 # 24 h x 8 GPUs (generated once, cached in /tmp)
    python bench/compare_bench.py --hours 1       # a quick check
    python bench/compare_bench.py --reference     # also `report` of each side, same conditions

BEFORE is the simulator's `pageable` scenario (every GPU in BREAKDOWN, a gap every ~2 s), AFTER
its `chained` scenario, each generated hour by hour (seeds 1..N, shifted in time) and streamed to
disk with `gapwatch.sinks.recorder.write_recording`. Timed: `gapwatch compare BEFORE AFTER` as
the command runs it (both sides read and detected, one after the other, as `report` does; the
windows, tests and text), in a child process so that its peak RSS is its own. Prints the wall
time, the peak RSS and the load average before.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation.checkout_env import env_with  # noqa: E402
from evaluation.simulate import simulate  # noqa: E402
from gapwatch.core.models import Record  # noqa: E402
from gapwatch.sinks.recorder import write_recording  # noqa: E402


def _hours(scenario: str, hours: int, gpus: int) -> Iterator[Record]:
    for k in range(hours):
        res = simulate(scenario, seed=k + 1, duration_s=3600.0, gpus=gpus)
        shift_ns, shift_s = int(k * 3600e9), k * 3600.0
        for r in res.records:
            yield msgspec.structs.replace(r, t_mono_ns=r.t_mono_ns + shift_ns,  # type: ignore[type-var]
                                          t_wall_s=r.t_wall_s + shift_s)
        print(f"  {scenario}: simulated hour {k + 1}/{hours}", file=sys.stderr)


def make_recording(path: Path, scenario: str, hours: int, gpus: int) -> None:
    header = simulate(scenario, seed=1, duration_s=1.0, gpus=gpus).header
    tmp = path.with_suffix(".part")
    n = write_recording(tmp, header, _hours(scenario, hours, gpus))
    os.replace(tmp, path)
    print(f"  wrote {n} records to {path} ({path.stat().st_size / 1e9:.2f} GB)", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=int, default=24)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--reference", action="store_true",
                    help="also time `gapwatch report` of each side")
    args = ap.parse_args()
    paths = []
    for scenario in ("pageable", "chained"):
        path = Path(f"/tmp/gapwatch-compare-{scenario}-{args.hours}h-{args.gpus}gpu.jsonl")
        if not path.exists():
            print(f"generating {path} ...", file=sys.stderr)
            make_recording(path, scenario, args.hours, args.gpus)
        paths.append(str(path))
    load = os.getloadavg()[0]
    cmd = [sys.executable, "-m", "gapwatch", "compare", *paths]
    t = time.perf_counter()
    out = subprocess.run(cmd, env=env_with(ROOT), capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - t
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if out.returncode != 0:
        print(out.stderr, file=sys.stderr)
        return 1
    busy = next((line for line in out.stdout.splitlines() if "busy share" in line), "")
    print(f"compare of two {args.hours} h x {args.gpus} GPUs x 10 Hz recordings: {elapsed:.1f} s "
          f"wall, peak RSS {rss_mb:.0f} MB (largest child), load average before {load:.2f}, "
          f"{os.cpu_count()} CPUs")
    print(f"  first figure: {busy.strip()}")
    if args.reference:
        reports = 0.0
        for path in paths:
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "gapwatch", "report", path], env=env_with(ROOT),
                           capture_output=True, check=True)
            took = time.perf_counter() - t
            reports += took
            print(f"  report {Path(path).name}: {took:.1f} s")
        print(f"  compare / (report BEFORE + report AFTER): {elapsed / reports:.2f} "
              f"(load average now {os.getloadavg()[0]:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
