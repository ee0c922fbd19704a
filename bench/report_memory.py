"""Offline reports against the length of the recording: peak memory and time of `report`,
`report --json` and the Perfetto export of 1 h, 3 h and 24 h x 8 GPUs with the prover's log.

Usage:
    python3 bench/report_memory.py                      # 1, 3 and 24 h x 8 GPUs
    python3 bench/report_memory.py --hours 1 3 --gpus 8 --kinds report json
    python3 bench/report_memory.py --before /tmp/base   # that checkout's figures beside these

The recordings are the simulator's `pageable` scenario (the worst case: a gap every ~2 s on every
GPU), simulated one hour at a time (seed = hour, its wall times an hour on, data time shifted
to follow: bench/compare_bench.py's way, so a day never has to be in memory) and written with
`write_recording`; each hour's prover log lines go to a `.log` beside it, given with `--log`
(TIMELINE lines, partitions, the anchor line of each hour's engine). Cached in /tmp
(`gapwatch-mem-Hh-Ggpu.jsonl` and `.log`), generated in a process of their own.

Every figure is one fresh `python -m gapwatch ...` under `/usr/bin/time -f '%M %e'`: peak RSS
(max resident set, KiB: of the largest one process, the command's own or a worker's; a report of
a large recording with logs is split across processes, whose peaks add up: docs/benchmarks.md
gives their sum, sampled) and wall seconds, start-up included. Output to /dev/null (report) or
a file in /tmp (export, removed after).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve()
sys.path.insert(0, str(ROOT))  # evaluation/, also when run from elsewhere

from evaluation.checkout_env import env_with  # noqa: E402

KINDS = {
    "report": ["report"],
    "json": ["report", "--json"],
    "perfetto": ["export", "--format", "perfetto"],
}


def _paths(hours: int, gpus: int) -> tuple[Path, Path]:
    base = Path(f"/tmp/gapwatch-mem-{hours}h-{gpus}gpu")
    return Path(f"{base}.jsonl"), Path(f"{base}.log")


def generate(hours: int, gpus: int) -> None:
    """Write the recording and its log, an hour at a time."""
    import msgspec

    from evaluation.simulate import SIM_EPOCH_WALL_S, simulate
    from gapwatch.core.models import Record
    from gapwatch.sinks.recorder import write_recording

    rec_path, log_path = _paths(hours, gpus)
    header = simulate("pageable", seed=1, duration_s=1.0, gpus=gpus).header
    part_log = log_path.with_suffix(".log.part")

    def records(log: Any) -> Iterator[Record]:
        for k in range(hours):
            res = simulate("pageable", seed=k + 1, duration_s=3600.0, gpus=gpus,
                           start_wall_s=SIM_EPOCH_WALL_S + k * 3600.0)
            log.write("".join(f"{text}\n" for _stream, text in res.log_lines))
            shift_ns = k * 3600 * 10**9
            for r in res.records:
                yield msgspec.structs.replace(r, t_mono_ns=r.t_mono_ns + shift_ns)  # type: ignore[type-var]
            print(f"  simulated hour {k + 1}/{hours}", file=sys.stderr)

    tmp = rec_path.with_name("part-" + rec_path.name)
    with open(part_log, "w") as log:
        write_recording(tmp, header, records(log))
    os.replace(tmp, rec_path)
    os.replace(part_log, log_path)


def _recording(hours: int, gpus: int) -> tuple[Path, Path]:
    rec_path, log_path = _paths(hours, gpus)
    if not (rec_path.exists() and log_path.exists()):
        print(f"generating {rec_path} and {log_path.name} ...", file=sys.stderr)
        subprocess.run([sys.executable, str(HERE), "--generate", str(hours), str(gpus)],
                       check=True, cwd=ROOT)
    return rec_path, log_path


def measure(kind: str, rec: Path, log: Path, checkout: Path) -> dict[str, Any]:
    """One command in a fresh process: its peak RSS (MiB) and wall seconds."""
    with tempfile.TemporaryDirectory(prefix="gapwatch-mem-") as tmp:
        cmd = [sys.executable, "-m", "gapwatch", *KINDS[kind], str(rec), "--log", str(log)]
        if kind == "perfetto":
            cmd += ["--out", f"{tmp}/trace.json"]
        timing = Path(tmp) / "time.txt"
        run = subprocess.run(["/usr/bin/time", "-o", str(timing), "-f", "%M %e", *cmd],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=env_with(checkout), cwd=tmp)
        rss_kib, wall_s = timing.read_text().split()[-2:]
        out_mb = (Path(tmp) / "trace.json").stat().st_size / 1e6 if kind == "perfetto" and \
            (Path(tmp) / "trace.json").exists() else None
    return {"kind": kind, "rc": run.returncode, "peak_rss_mib": int(rss_kib) / 1024,
            "wall_s": float(wall_s), "out_mb": out_mb,
            "stderr_tail": run.stderr[-300:] if run.returncode else ""}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=int, nargs="+", default=[1, 3, 24])
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--kinds", nargs="+", choices=list(KINDS), default=list(KINDS))
    ap.add_argument("--before", type=Path, default=None,
                    help="another checkout, measured the same way beside this one")
    ap.add_argument("--generate", type=int, nargs=2, metavar=("HOURS", "GPUS"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=None, help="also write the figures as JSON")
    args = ap.parse_args()
    if args.generate:
        generate(*args.generate)
        return 0
    checkouts = [("this", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    rows = []
    print(f"{'input':<22} {'MB':>7} {'checkout':<8} {'kind':<9} {'peak RSS MiB':>12} "
          f"{'wall s':>7} {'rc':>3}")
    for hours in args.hours:
        rec, log = _recording(hours, args.gpus)
        size_mb = (rec.stat().st_size + log.stat().st_size) / 1e6
        for kind in args.kinds:
            for name, checkout in checkouts:
                m = measure(kind, rec, log, checkout)
                rows.append({"hours": hours, "gpus": args.gpus, "input_mb": size_mb,
                             "checkout": name, **m})
                print(f"{f'{hours} h x {args.gpus} GPUs':<22} {size_mb:>7.0f} {name:<8} "
                      f"{kind:<9} {m['peak_rss_mib']:>12.0f} {m['wall_s']:>7.1f} {m['rc']:>3}"
                      + (f"  {m['stderr_tail']!r}" if m["rc"] else ""), flush=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
