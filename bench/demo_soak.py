"""Soak: `gapwatch demo` left running, its resident memory sampled (goal: growth <= 1 MB per
simulated hour once its 10-minute history has filled).

Usage: python bench/demo_soak.py [--minutes 30] [--speed 10] [--sample-s 10]
       [--settle-data-min 20] [--csv rss.csv] [--size 160x48]

Runs the real dashboard (`python -m gapwatch demo --speed X`) under a pseudo-terminal of the
given size (its output is read and thrown away), reads VmRSS from /proc every `--sample-s`
seconds, then quits it with `q`. Data time is real time x speed: 30 minutes at speed 10 are 5
hours of simulated prover. The growth figure is the least-squares slope of RSS against data
time over the samples after `--settle-data-min` minutes of data (the history, 10 minutes, has
filled by then, and the gap ledger, log pane and prover-status buffers are at their bounds).
Also said: whether the simulator's temporary log was removed at exit.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import signal
import struct
import subprocess
import sys
import termios
import threading
import time


def _rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _sim_logs(pid: int) -> set[str]:
    """The simulator log files the process has open (its own, not other runs')."""
    out = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if "gapwatch-sim-" in target:
                out.add(target.removesuffix(" (deleted)"))
    except OSError:
        pass
    return out


def _slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of y over x."""
    n = len(points)
    if n < 2:
        return None
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--minutes", type=float, default=30.0, help="real minutes to run")
    ap.add_argument("--speed", type=float, default=10.0)
    ap.add_argument("--sample-s", type=float, default=10.0)
    ap.add_argument("--settle-data-min", type=float, default=20.0)
    ap.add_argument("--csv", default=None, help="write every sample (real s, data h, RSS MB)")
    ap.add_argument("--size", default="160x48", help="terminal COLSxROWS")
    args = ap.parse_args()
    cols, rows = (int(v) for v in args.size.split("x"))

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = dict(os.environ, TERM="xterm-256color", COLUMNS=str(cols), LINES=str(rows))
    proc = subprocess.Popen(
        [sys.executable, "-m", "gapwatch", "demo", "--speed", str(args.speed)],
        stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True,
    )
    os.close(slave)
    stop = threading.Event()

    def drain() -> None:  # the dashboard must never block on a full terminal
        while not stop.is_set():
            try:
                if not os.read(master, 1 << 16):
                    return
            except OSError:
                return

    threading.Thread(target=drain, daemon=True).start()
    samples: list[tuple[float, float, float]] = []  # (real s, data h, RSS MB)
    sim_logs: set[str] = set()
    start = time.monotonic()
    try:
        while time.monotonic() - start < args.minutes * 60 and proc.poll() is None:
            sim_logs |= _sim_logs(proc.pid)
            rss = _rss_mb(proc.pid)
            real_s = time.monotonic() - start
            if rss is not None:
                samples.append((real_s, real_s * args.speed / 3600, rss))
            time.sleep(args.sample_s)
    finally:
        try:
            os.write(master, b"q")
            proc.wait(15)
        except (OSError, subprocess.TimeoutExpired):
            proc.send_signal(signal.SIGTERM)
            proc.wait(15)
        stop.set()
        os.close(master)
    left = [p for p in sim_logs if os.path.exists(p)]

    if args.csv:
        with open(args.csv, "w") as fh:
            fh.write("real_s,data_h,rss_mb\n")
            fh.writelines(f"{r:.1f},{d:.4f},{m:.1f}\n" for r, d, m in samples)
    if not samples:
        print("no samples (the demo did not start?)")
        return
    settle_h = args.settle_data_min / 60
    late = [(d, m) for _, d, m in samples if d >= settle_h]
    slope = _slope(late)
    at_settle = late[0][1] if late else None
    print(f"demo --speed {args.speed:g} for {samples[-1][0] / 60:.1f} min "
          f"({samples[-1][1]:.2f} h of data), {len(samples)} RSS samples; exit code "
          f"{proc.returncode}")
    print(f"RSS: start {samples[0][2]:.1f} MB, after {args.settle_data_min:g} min of data "
          f"{at_settle if at_settle is None else round(at_settle, 1)} MB, max "
          f"{max(m for _, _, m in samples):.1f} MB, end {samples[-1][2]:.1f} MB")
    if slope is not None:
        print(f"growth after the history filled: {slope:+.2f} MB per simulated hour "
              f"(goal <= 1.0)")
    print(f"simulator log files seen open: {len(sim_logs)}, left behind at exit: {len(left)}")


if __name__ == "__main__":
    main()
