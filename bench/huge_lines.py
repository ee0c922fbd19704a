"""Memory of `gapwatch record --log -` fed huge log lines (goal: bounded in bytes, not lines).

Usage: python bench/huge_lines.py [--lines 2500] [--line-bytes 1048576] [--out FILE]

Starts `gapwatch record --source sim:chained --log - --out OUT` (the simulated prover, so that
no GPU is needed), writes `--lines` lines of `--line-bytes` bytes each to its standard input,
waits for it to take them in, and prints its resident memory before the lines, at its peak
(VmHWM) and after, then stops it with SIGINT. The recording gets every line whole (up to
`logs.max_line_bytes`); memory keeps a cut copy (`gapwatch.core.sizes`). The default `--out`
is a gzip recording in a temporary folder, removed afterwards (the lines compress to almost
nothing, which keeps the disk out of the figure).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time


def _status_mb(pid: int, key: str) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lines", type=int, default=2500)
    ap.add_argument("--line-bytes", type=int, default=1 << 20)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(args, args.out or os.path.join(tmp, "huge.jsonl.gz"))


def run(args: argparse.Namespace, out: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "gapwatch", "record", "--source", "sim:chained", "--quiet",
         "--duration", "3600", "--log", "-", "--out", out],
        stdin=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None
    time.sleep(3.0)
    before = _status_mb(proc.pid, "VmRSS")
    line = b"2026-11-30T09:06:38.134140Z  INFO cuzk_core::engine: huge " + b"x" * (
        args.line_bytes - 60) + b"\n"
    start = time.monotonic()
    for _ in range(args.lines):
        proc.stdin.write(line)
    proc.stdin.flush()
    fed_s = time.monotonic() - start
    time.sleep(3.0)
    peak = _status_mb(proc.pid, "VmHWM")
    after = _status_mb(proc.pid, "VmRSS")
    proc.send_signal(signal.SIGINT)
    proc.stdin.close()
    proc.wait(30)
    print(f"{args.lines} lines of {args.line_bytes} bytes in {fed_s:.1f} s: RSS before "
          f"{before:.0f} MB, peak {peak:.0f} MB, after {after:.0f} MB")


if __name__ == "__main__":
    main()
