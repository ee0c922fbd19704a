"""Detector cost per sample, and `gapwatch report` on a 24 h, 8-GPU, 10 Hz simulated recording.

Usage:
    python bench/detector_bench.py                 # per-sample cost + 24 h report
    python bench/detector_bench.py --hours 1       # a shorter recording (quick check)
    python bench/detector_bench.py --skip-report   # per-sample cost only
    python bench/detector_bench.py --workers 1     # the report in one process (default: as
                                                   # `gapwatch report` picks, see below)

The recording is generated once with the simulator (`evaluation.simulate`, scenario `pageable`,
the worst case: every GPU in BREAKDOWN, a gap every ~2 s) in one-hour chunks shifted in time,
written with `gapwatch.sources.recording.write_recording`, and cached in /tmp (regenerating 24 h
takes a few minutes). Only `build_report` is timed for the report figure: reading, detecting,
summing.
By default it splits the GPUs across processes as `gapwatch report` does on a large recording
(`gapwatch.offline.report_parallel.plan_workers`: one per usable CPU, at most one per GPU); the
figure says how many it used. The report is the same either way (tests/test_report_parallel.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation.simulate import simulate  # noqa: E402
from gapwatch.config import Config  # noqa: E402
from gapwatch.core.config import DetectorConfig  # noqa: E402
from gapwatch.core.detector import GapDetector  # noqa: E402
from gapwatch.core.models import GpuSample  # noqa: E402
from gapwatch.offline.report import build_report  # noqa: E402
from gapwatch.offline.report_parallel import plan_workers  # noqa: E402
from gapwatch.sinks.recorder import write_recording  # noqa: E402


def per_sample_cost(scenario: str, seconds: float = 600.0, gpus: int = 8) -> float:
    res = simulate(scenario, seed=1, duration_s=seconds, gpus=gpus)  # type: ignore[arg-type]
    samples = [r for r in res.records if isinstance(r, GpuSample)]
    best = float("inf")
    for _ in range(3):
        det = GapDetector(DetectorConfig(), list(res.header.gpus), period_s=0.1)
        feed = det.feed_gpu
        t = time.perf_counter()
        for s in samples:
            feed(s)
        det.finish()
        best = min(best, (time.perf_counter() - t) / len(samples))
    return best * 1e6


def make_recording(path: Path, hours: int, gpus: int = 8) -> None:
    header = None
    records: list = []
    chunk_s = 3600.0
    for k in range(hours):
        res = simulate("pageable", seed=k + 1, duration_s=chunk_s, gpus=gpus)
        header = header or res.header
        shift_ns, shift_s = int(k * chunk_s * 1e9), k * chunk_s
        records.extend(
            msgspec.structs.replace(r, t_mono_ns=r.t_mono_ns + shift_ns,  # type: ignore[union-attr]
                                    t_wall_s=r.t_wall_s + shift_s)
            for r in res.records
        )
        print(f"  simulated hour {k + 1}/{hours}", file=sys.stderr)
    assert header is not None
    tmp = path.with_suffix(".part")
    n = write_recording(tmp, header, records)
    os.replace(tmp, path)
    print(f"  wrote {n} records to {path} ({path.stat().st_size / 1e9:.2f} GB)", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=int, default=24)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--skip-report", action="store_true")
    ap.add_argument("--workers", type=int, default=None,
                    help="processes for the report (default: as `gapwatch report` picks)")
    args = ap.parse_args()
    for scenario in ("chained", "pageable"):
        print(f"detector per sample ({scenario}, 8 GPUs, 600 s): "
              f"{per_sample_cost(scenario):.2f} µs")
    if args.skip_report:
        return 0
    path = Path(f"/tmp/gapwatch-bench-{args.hours}h-{args.gpus}gpu.jsonl")
    if not path.exists():
        print(f"generating {path} ...", file=sys.stderr)
        make_recording(path, args.hours, args.gpus)
    workers = args.workers if args.workers is not None else plan_workers(path, [])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    t = time.perf_counter()
    report = build_report(path, Config(), workers=workers)
    elapsed = time.perf_counter() - t
    n = sum(1 for _ in open(path, "rb")) - 1
    print(f"report on {args.hours} h x {args.gpus} GPUs x 10 Hz ({n} records): {elapsed:.1f} s "
          f"({elapsed / n * 1e6:.2f} µs/record), {workers} process(es), "
          f"{len(report.gaps)} gaps, {len(report.breakdowns)} breakdown periods "
          f"(load average before: {load:.2f}; other work on the machine slows it)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
