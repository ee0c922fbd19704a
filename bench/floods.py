"""Floods on a healthy disk: `gapwatch record` beside a log of random bytes and a copy-trace
socket sent thousands of 60 KB NOTEs (issue 19, item 2). Goal: every GPU and host sample
recorded, no hole in them; what must go named truly and said once; the NOTEs said once.

Usage: python bench/floods.py [--duration 20] [--notes 3332] [--which urandom,notes]

- `urandom`: `record --source sim:chained --log /dev/urandom --duration D --out R.jsonl.gz`.
- `notes`: `record --source sim:chained --copytrace SOCK --duration D --out R.jsonl.gz`, while
  this script sends `--notes` NOTE datagrams of 60 KB to SOCK as fast as the socket takes them.

For each it prints: GPU samples recorded of those taken (the sampler's ticks), the longest
spacing between two recorded GPU samples, records NOT recorded and why (the closing line),
warning and error lines on stderr, and the file's size. Everything runs on the simulated
prover: no GPU is needed. Files go to a temporary folder, removed afterwards.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from gapwatch.copytrace import wire  # noqa: E402
from gapwatch.core.models import GpuSample  # noqa: E402
from gapwatch.sources.files import read_any  # noqa: E402


def _record(args: list[str], duration_s: float, out: str,
            during: threading.Thread | None = None) -> tuple[str, float]:
    cmd = [sys.executable, "-m", "gapwatch", "record", "--source", "sim:chained", "--quiet",
           "--duration", str(duration_s), "--out", out, *args]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    if during is not None:
        during.start()
    _, err = proc.communicate(timeout=duration_s + 120)
    return err, time.monotonic() - t0


def _report(name: str, err: str, out: str, wall_s: float) -> None:
    rec = read_any(out)
    ts = [r.t_mono_ns for r in rec.records if isinstance(r, GpuSample)]
    spacing = max((b - a for a, b in zip(ts, ts[1:], strict=False)), default=0) / 1e6
    ticks = re.search(r"over the whole run \((\d+) ticks\)", err)
    closing = next((ln for ln in err.splitlines() if "stopped" in ln), "")
    lost = re.search(r"(\d+) NOT recorded \(([^)]*\)[^)]*)\)", closing)
    said = [ln for ln in err.splitlines() if ln.startswith(("warning:", "error:"))]
    print(f"== {name} ({wall_s:.0f} s)")
    print(f"GPU samples recorded: {len(ts)} of {ticks.group(1) if ticks else '?'} ticks "
          f"(the first tick gives none); longest spacing {spacing:.0f} ms")
    print(f"NOT recorded: {lost.group(1) + ' (' + lost.group(2) + ')' if lost else 0}")
    print(f"warning/error lines on stderr: {len(said)}")
    for ln in said[:6]:
        print(f"  {ln[:160]}")
    print(f"file: {os.path.getsize(out) / 1e6:.1f} MB; reader counters {rec.counters}")


def _send_notes(path: str, n: int) -> threading.Thread:
    note = ("x" * 60_000).encode()

    def run() -> None:
        deadline = time.monotonic() + 30
        while not os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.05)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sent = seq = 0
        while sent < n and time.monotonic() < deadline:
            d = wire.encode_datagram(wire.TYPE_NOTE, pid=4242, seq=seq, records=[note])
            seq += 1
            try:
                s.sendto(d, path)
                sent += 1
            except (BlockingIOError, ConnectionRefusedError, FileNotFoundError):
                time.sleep(0.001)
        print(f"(sent {sent} NOTE datagrams of {len(note)} bytes)")

    return threading.Thread(target=run, daemon=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--notes", type=int, default=3332)
    ap.add_argument("--which", default="urandom,notes")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if "urandom" in args.which:
            out = os.path.join(tmp, "urandom.jsonl.gz")
            err, wall = _record(["--log", "/dev/urandom"], args.duration, out)
            _report("--log /dev/urandom", err, out, wall)
        if "notes" in args.which:
            out = os.path.join(tmp, "notes.jsonl.gz")
            sock = os.path.join(tmp, "ct.sock")
            err, wall = _record(["--copytrace", sock], args.duration, out,
                                _send_notes(sock, args.notes))
            _report(f"{args.notes} NOTEs of 60 KB", err, out, wall)


if __name__ == "__main__":
    main()
