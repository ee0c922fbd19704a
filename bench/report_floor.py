"""`gapwatch report` against its floor: decoding the same recording into typed record structs.

Usage:
    python bench/report_floor.py                       # 30 min x 8 GPUs, plain and .gz, 5 rounds
    python bench/report_floor.py --minutes 360 --rounds 3
    python bench/report_floor.py --before /path/to/other/checkout   # its report beside this one

The recording is the simulator's `pageable` scenario (the worst case: a gap every ~2 s on every
GPU), written once per size with `write_recording` (plain and gzip) and cached in /tmp.

Every figure is one fresh process (`--measure KIND FILE`) timing its own work with
`time.perf_counter`, start-up and imports left out, and saying its peak memory (its own, and its
largest worker's). The kinds run in turn, round after round (floor, report, floor .gz, report
.gz, [before's report, before's .gz]), so a machine whose speed drifts slows them alike; the
figures are medians over the rounds and the ratios are taken round by round:
- floor: every line of the file decoded by the record codec into its Struct (the garbage
  collector off, as the report runs), nothing else;
- report: `build_report(FILE, Config())` as `gapwatch report` runs it (processes as it picks);
- before: the same `build_report` of the checkout given with `--before` (its own venv's python,
  `DIR/.venv/bin/python`, where it has one, else this one; for a checkout from before the record
  codec, a copy of the recording in the key order that checkout wrote).
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve()


def _open(path: str) -> Any:
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")  # noqa: SIM115


def measure(kind: str, path: str) -> dict[str, Any]:
    """One figure, in this process (the caller started it for just this)."""
    if kind == "floor":
        from gapwatch.core.codec import decode_record

        gc.disable()
        t = time.perf_counter()
        with _open(path) as f:
            f.readline()
            n = sum(1 for _ in map(decode_record, f))
        elapsed = time.perf_counter() - t
        extra: dict[str, Any] = {"records": n}
    else:
        from gapwatch.config import Config
        from gapwatch.offline.report import build_report

        t = time.perf_counter()
        report = build_report(path, Config())
        elapsed = time.perf_counter() - t
        extra = {"gaps": len(report.gaps)}
    # VmHWM is this process's own peak (ru_maxrss would carry the parent's over exec); the
    # workers a parallel report forks share pages with it, so the two are not to be added.
    own = _vm_hwm_mb()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"kind": kind, "s": elapsed, "peak_mb": own, "worker_peak_mb": kids, **extra}


def _vm_hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _recording(minutes: float, gpus: int) -> Path:
    path = Path(f"/tmp/gapwatch-floor-{minutes:g}m-{gpus}gpu.jsonl")
    if not (path.exists() and Path(f"{path}.gz").exists()):
        print(f"generating {path} (.gz too) ...", file=sys.stderr)
        # In a process of its own: the measuring processes must not start from its memory.
        subprocess.run([sys.executable, str(HERE), "--generate", str(minutes), str(gpus),
                        str(path)], check=True, cwd=ROOT)
    return path


def generate(minutes: float, gpus: int, path: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from evaluation.simulate import simulate
    from gapwatch.sinks.recorder import write_recording

    res = simulate("pageable", seed=1, duration_s=minutes * 60, gpus=gpus)
    for p in (path, Path(f"{path}.gz")):
        tmp = p.with_name("part-" + p.name)  # the same suffix: .gz is written gzipped
        write_recording(tmp, res.header, res.records)
        os.replace(tmp, p)


def _type_last(src: Path, dst: Path) -> None:
    """The recording with every line's keys in the order gapwatch wrote before issue 21 (the
    record's fields, then "type"), for a checkout whose reader expects it."""
    opener = gzip.open if dst.name.endswith(".gz") else open
    with _open(str(src)) as f, opener(dst, "wb") as out:  # type: ignore[operator]
        out.write(f.readline())
        for line in f:
            doc = json.loads(line)
            tp = doc.pop("type")
            doc["type"] = tp
            out.write(json.dumps(doc, separators=(",", ":")).encode() + b"\n")


def _run(python: str, pythonpath: Path | None, kind: str, path: Path) -> dict[str, Any]:
    """One figure in a fresh process: this checkout's or another's source (`pythonpath`), or
    with None the gapwatch installed for `python` (`-P`, from /tmp)."""
    # The parent only: a `--measure` child runs with another checkout first on its path.
    sys.path.insert(0, str(ROOT))
    from evaluation.checkout_env import env_with

    if pythonpath is None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        cmd, cwd = [python, "-P", str(HERE), "--measure", kind, str(path)], Path("/tmp")
    else:
        env = env_with(pythonpath)
        cmd, cwd = [python, str(HERE), "--measure", kind, str(path)], pythonpath
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=cwd)
    if done.returncode != 0:
        raise SystemExit(f"{kind} {path} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--before", type=Path, default=None, help="another checkout to compare")
    ap.add_argument("--measure", nargs=2, metavar=("KIND", "FILE"), help=argparse.SUPPRESS)
    ap.add_argument("--generate", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.generate:
        generate(float(args.generate[0]), int(args.generate[1]), Path(args.generate[2]))
        return 0
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return 0
    plain = _recording(args.minutes, args.gpus)
    gz = Path(f"{plain}.gz")
    runs: list[tuple[str, str, Path | None, Path]] = [
        ("floor", sys.executable, ROOT, plain), ("report", sys.executable, ROOT, plain),
        ("floor .gz", sys.executable, ROOT, gz), ("report .gz", sys.executable, ROOT, gz),
    ]
    if args.before is not None:
        old_plain, old_gz = plain, gz
        if not (args.before / "gapwatch" / "core" / "codec.py").exists():
            # A checkout from before the record codec reads the keys in its own order.
            old_plain = plain.with_name(plain.name.replace(".jsonl", ".type-last.jsonl"))
            old_gz = Path(f"{old_plain}.gz")
            for src, dst in ((plain, old_plain), (gz, old_gz)):
                if not dst.exists():
                    _type_last(src, dst)
        venv = args.before / ".venv" / "bin" / "python"
        python = str(venv) if venv.exists() else sys.executable
        runs += [("before report", python, args.before, old_plain),
                 ("before report .gz", python, args.before, old_gz)]
    got: dict[str, list[dict[str, Any]]] = {name: [] for name, *_ in runs}
    load = os.getloadavg()[0]
    for k in range(args.rounds):
        for name, python, where, path in runs:
            got[name].append(_run(python, where, "floor" if name.startswith("floor")
                                  else "report", path))
        print(f"  round {k + 1}/{args.rounds}", file=sys.stderr)
    lines = sum(1 for _ in _open(str(plain))) - 1
    print(f"{args.minutes:g} min x {args.gpus} GPUs ({lines} records, "
          f"{plain.stat().st_size / 1e6:.1f} MB plain, {gz.stat().st_size / 1e6:.1f} MB gzip), "
          f"{args.rounds} rounds, load average before {load:.2f}:")
    for name, results in got.items():
        s = statistics.median(r["s"] for r in results)
        peak = statistics.median(r["peak_mb"] for r in results)
        worker = statistics.median(r["worker_peak_mb"] for r in results)
        print(f"  {name:18s} median {s:7.3f} s (min {min(r['s'] for r in results):.3f}, "
              f"max {max(r['s'] for r in results):.3f}); peak RSS {peak:.0f} MB"
              + (f", largest worker {worker:.0f} MB" if worker > 1 else ""))

    def ratio(a: str, b: str) -> str:
        rs = [x["s"] / y["s"] for x, y in zip(got[a], got[b], strict=True)]
        return f"{statistics.median(rs):.2f} (min {min(rs):.2f}, max {max(rs):.2f})"

    print(f"  report / floor:         {ratio('report', 'floor')}")
    print(f"  report .gz / floor .gz: {ratio('report .gz', 'floor .gz')}")
    print(f"  report .gz / report:    {ratio('report .gz', 'report')}")
    print(f"  report .gz / floor:     {ratio('report .gz', 'floor')}")
    if args.before is not None:
        print(f"  before report / floor:  {ratio('before report', 'floor')}")
        print(f"  before .gz / floor:     {ratio('before report .gz', 'floor')}")
        print(f"  before .gz / before:    {ratio('before report .gz', 'before report')}")
        print(f"  report / before report: {ratio('report', 'before report')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
