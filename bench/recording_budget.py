"""A disk budget for unattended recording (issue 19): bytes per GPU-hour, and a day of 8 simulated
GPUs recorded within a budget, then reported as one session.

Usage: python bench/recording_budget.py [--hours 24] [--gpus 8] [--rotate-size 64MiB]
                                        [--keep 4] [--sample-s 600] [--dir DIR]

1. Bytes per GPU-hour: `gapwatch record --source sim:pageable --speed 0 --duration SAMPLE_S`
   to a plain and a gzip file; prints MB per GPU-hour of each and the share of each record type
   (each type's lines compressed on their own).
2. The day: `gapwatch record --source sim:pageable --speed 0 --duration HOURS*3600 --out
   DIR/gw.jsonl.gz --rotate-size SIZE --keep N` with `[sim] gpus = GPUS` (the simulated
   prover at full speed: a day of data in minutes), then `gapwatch report --json DIR`. Prints
   the segments left, their total against the budget (N x SIZE, which a segment may pass by one
   write), the closing line, and what the report read: one session, its span, its GPUs and gaps.

Runs on the simulator: no GPU needed. DIR defaults to a temporary folder, removed afterwards.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

GAPWATCH = [sys.executable, "-m", "gapwatch"]


def _gz(data: bytes) -> int:
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    return len(z.compress(data) + z.flush())


def bytes_per_gpu_hour(tmp: Path, sample_s: float) -> None:
    plain, packed = tmp / "sample.jsonl", tmp / "sample.jsonl.gz"
    for out in (plain, packed):
        subprocess.run([*GAPWATCH, "record", "--source", "sim:pageable", "--speed", "0",
                        "--duration", str(sample_s), "--out", str(out), "--quiet"],
                       check=True, capture_output=True)
    hours = sample_s / 3600
    print(f"== bytes per GPU-hour (sim:pageable, {sample_s:g} s, one GPU)")
    print(f"plain {plain.stat().st_size / hours / 1e6:.1f} MB, gzip "
          f"{packed.stat().st_size / hours / 1e6:.2f} MB")
    by: dict[str, list[bytes]] = collections.defaultdict(list)
    for line in plain.read_bytes().splitlines(keepends=True):
        by[json.loads(line)["type"]].append(line)
    sizes = {t: (sum(map(len, ls)), _gz(b"".join(ls))) for t, ls in by.items()}
    total_gz = sum(g for _, g in sizes.values())
    for t, (p, g) in sorted(sizes.items(), key=lambda kv: -kv[1][1]):
        print(f"  {t:12} {len(by[t]):7} lines  plain {p / hours / 1e6:6.2f} MB/GPUh  gzip "
              f"{g / hours / 1e6:5.2f} MB/GPUh ({100 * g / total_gz:.0f} %)")


def day(folder: Path, hours: float, gpus: int, size: str, keep: int) -> None:
    from gapwatch.core.units import parse_size
    from gapwatch.sinks.segments import segments_of

    config = folder / "sim.toml"
    config.write_text(f"[sim]\ngpus = {gpus}\n")
    out = folder / "gw.jsonl.gz"
    t0 = time.monotonic()
    done = subprocess.run([*GAPWATCH, "record", "--config", str(config), "--source",
                           "sim:pageable", "--speed", "0", "--duration", str(hours * 3600),
                           "--out", str(out), "--rotate-size", size, "--keep", str(keep),
                           "--quiet"], capture_output=True, text=True)
    record_s = time.monotonic() - t0
    closing = next((ln for ln in done.stderr.splitlines() if "stopped" in ln), done.stderr)
    segs = segments_of(out)
    total = sum(p.stat().st_size for _, p in segs)
    budget = keep * parse_size(size)
    print(f"== {hours:g} h of {gpus} simulated GPUs, --rotate-size {size} --keep {keep} "
          f"(recorded in {record_s:.0f} s, exit {done.returncode})")
    print(f"  {closing[:300]}")
    print(f"  segments left: {[n for n, _ in segs]}; total {total / 2**20:.1f} MiB of a budget "
          f"of {budget / 2**20:.0f} MiB ({'within' if total <= budget else 'OVER'}; largest "
          f"{max(p.stat().st_size for _, p in segs) / 2**20:.2f} MiB)")
    t0 = time.monotonic()
    rep = subprocess.run([*GAPWATCH, "report", "--json", str(folder)], capture_output=True,
                         text=True)
    report_s = time.monotonic() - t0
    if rep.returncode != 0:
        print(f"  report failed ({rep.returncode}): {rep.stderr[-500:]}")
        return
    doc = json.loads(rep.stdout)
    spans = [g.get("span_s") or g.get("active_s") for g in doc["gpus"]]
    print(f"  report --json {folder.name}/ ({report_s:.0f} s): {len(doc['gpus'])} GPUs, "
          f"{len(doc['gaps'])} gaps, span per GPU {min(spans):.0f}-{max(spans):.0f} s, "
          f"counters {doc['counters']}, problems {doc.get('problems', [])[:3]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--rotate-size", default="64MiB")
    ap.add_argument("--keep", type=int, default=4)
    ap.add_argument("--sample-s", type=float, default=600.0)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bytes_per_gpu_hour(Path(tmp), args.sample_s)
        folder = Path(args.dir) if args.dir else Path(tmp) / "day"
        folder.mkdir(parents=True, exist_ok=True)
        day(folder, args.hours, args.gpus, args.rotate_size, args.keep)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
