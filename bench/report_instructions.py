"""What each phase of a split `report --log` costs, in machine instructions (callgrind), this
checkout against another: figures that do not move with a shared VM's speed.

Usage:
    python3 bench/report_instructions.py --before CHECKOUT        # parse, worker 0, worker 1
    python3 bench/report_instructions.py --phases parse w1        # this checkout only

Wall and CPU seconds on the 2-core development VM drift by ±20 % from one minute to the next
(the fixed loop of docs/benchmarks.md took 0.6-1.6 s within a day), more than most changes to
the report's hot paths: this counts instructions instead, under `valgrind --tool=callgrind`
(~50x slower, so the input is a 10-minute slice: the first sixth of the lines of
bench/report_memory.py's hour of 8 GPUs and of its log, made here when missing). Each phase is
one fresh process: `parse` the `--log` parsed into its sorted spool (`logs_parsed`); `w0`
and `w1` that, then worker 0 or 1 of a two-way split (`report_parallel._work`); a worker's own
figure is its run's less its checkout's `parse`. Both checkouts' bytecode is compiled first
(`evaluation.checkout_env.env_with`): with PYTHONDONTWRITEBYTECODE set (it is, on the
development VM), a checkout without `__pycache__` compiles every module in every run, ~700 M
instructions that are not the report's. Instruction counts are not seconds (an instruction
that waits for memory costs more), but they are the same in every run, so a change shows as
what it is.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from evaluation.checkout_env import env_with  # noqa: E402

HOUR_REC = Path("/tmp/gapwatch-mem-1h-8gpu.jsonl")
HOUR_LOG = Path("/tmp/gapwatch-mem-1h-8gpu.log")
SLICE_REC = Path("/tmp/gapwatch-instr-10m-8gpu.jsonl")
SLICE_LOG = Path("/tmp/gapwatch-instr-10m-8gpu.log")

#: The phase, run in a fresh process with the checkout first on the path.
PHASE = """
import gc, multiprocessing, sys
from gapwatch.config import Config
from gapwatch.offline.report import logs_parsed
from gapwatch.offline import report_parallel
rec, log, phase = sys.argv[1:4]
gc.disable()  # as build_report runs
config = Config()
with logs_parsed(rec, config, [log]) as parsed:
    if phase != "parse":
        job = report_parallel._Job(rec, config, 2, multiprocessing.Event(), parsed)
        report_parallel._work(job, int(phase[1]), lambda end_s: end_s)
"""


def _slice() -> None:
    """The first sixth of the hour's recording and of its log (their first ~10 minutes)."""
    if SLICE_REC.exists() and SLICE_LOG.exists():
        return
    if not (HOUR_REC.exists() and HOUR_LOG.exists()):
        subprocess.run([sys.executable, str(ROOT / "bench" / "report_memory.py"), "--generate",
                        "1", "8"], check=True)
    for src, dst in ((HOUR_REC, SLICE_REC), (HOUR_LOG, SLICE_LOG)):
        with src.open("rb") as f:
            lines = f.readlines()
        dst.write_bytes(b"".join(lines[:len(lines) // 6]))


def instructions(checkout: Path, phase: str) -> int:
    """Instructions one run of `phase` executes with `checkout`'s gapwatch."""
    env = {**env_with(checkout), "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
             "-c", PHASE, str(SLICE_REC), str(SLICE_LOG), phase],
            env=env, capture_output=True, text=True, check=True, cwd=tmp)  # not this checkout
    found = re.search(r"Collected : (\d+)", run.stderr)
    if found is None:
        raise SystemExit(f"no instruction count from callgrind:\n{run.stderr[-2000:]}")
    return int(found.group(1))


def figures(checkout: Path, phases: list[str]) -> dict[str, float]:
    """Millions of instructions by phase; a worker's without the parse before it."""
    got = {p: instructions(checkout, p) / 1e6 for p in dict.fromkeys(["parse", *phases])}
    return {p: got[p] - (got["parse"] if p != "parse" else 0.0) for p in phases}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, help="another checkout, counted alike")
    ap.add_argument("--phases", nargs="+", default=["parse", "w0", "w1"],
                    choices=["parse", "w0", "w1"])
    args = ap.parse_args()
    _slice()
    trees = {"this": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    counted = {name: figures(tree, args.phases) for name, tree in trees.items()}
    print(f"{'phase':<8}" + "".join(f"{name:>14}" for name in counted)
          + ("      change" if args.before else ""))
    for p in args.phases:
        row = [counted[name][p] for name in counted]
        change = f"{100 * (row[0] / row[1] - 1):+10.1f} %" if args.before else ""
        print(f"{p:<8}" + "".join(f"{m:>12.1f} M" for m in row) + change)


if __name__ == "__main__":
    main()
