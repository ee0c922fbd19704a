"""Stops during a command's imports: how many runs end other than with exit 0.

Usage: python bench/stop_during_imports.py [--runs 200] [--busy 3] [RECORDING]

Starts `gapwatch replay --headless RECORDING` (default: the H200 restart recording in
tests/data) `--runs` times, waits until the process has taken the stop signals
(`gapwatch.base.quit_early`, read from /proc/PID/status SigCgt), sends SIGHUP 0-300 ms later (its
imports run then) and counts the exit statuses, with `--busy` busy loops beside it (a loaded box
is where a stop lands mid-import). With `PYTHONFAULTHANDLER=1` set, a crash prints where it
was. Before `quit_early.import_held` 10 of 200 runs died of SIGSEGV (a stop raised while
msgspec built a decoder); the figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(__file__), "..")
DEFAULT_RECORDING = os.path.join(ROOT, "tests", "data", "h200-restart", "restart.jsonl.gz")


def _takes_stop_signals(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            caught = next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt"))
    except (OSError, StopIteration):
        return False
    return all(caught >> (s - 1) & 1 for s in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM))


def _busy() -> None:
    while True:
        pass


def one_run(recording: str) -> tuple[int, str]:
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONFAULTHANDLER="1")
    proc = subprocess.Popen([sys.executable, "-m", "gapwatch", "replay", "--headless", recording],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 30
    while not _takes_stop_signals(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.001)
    time.sleep(random.uniform(0.0, 0.3))
    proc.send_signal(signal.SIGHUP)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        return -999, "did not stop within 30 s"
    return proc.returncode, err


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("recording", nargs="?", default=DEFAULT_RECORDING)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--busy", type=int, default=3, help="busy loops beside it")
    args = ap.parse_args()
    loops = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(args.busy)]
    for p in loops:
        p.start()
    statuses: collections.Counter[int] = collections.Counter()
    first_bad: list[str] = []
    try:
        for _ in range(args.runs):
            rc, err = one_run(args.recording)
            statuses[rc] += 1
            if rc != 0 and len(first_bad) < 2:
                first_bad.append(f"exit {rc}: {err[-1500:]}")
    finally:
        for p in loops:
            p.terminate()
    print(f"{args.runs} runs, {args.busy} busy loops beside, {os.cpu_count()} CPUs: "
          f"exit statuses {dict(statuses)}")
    for said in first_bad:
        print(said)


if __name__ == "__main__":
    main()
