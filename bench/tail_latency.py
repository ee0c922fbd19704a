"""Write-to-event latency of the log follower: a line is appended to a file, how long until its
LogEvent reaches the consumer? (goal: <= 200 ms; expected about poll_ms/2 on average).

Usage: python bench/tail_latency.py [--lines 400] [--interval-ms 7] [--poll-ms 50]
       [--rotate-every 0]
A writer thread appends cuzk-style lines carrying their write time (time.monotonic_ns) as a field;
the follower (real threads, SystemClock) parses them; latency = delivery time - write time.
`--rotate-every N` renames the file every N lines (logrotate) to measure across rotations.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

from gapwatch.config import LogsConfig
from gapwatch.core.models import LogEvent
from gapwatch.logs.follow import LogFollower


def run(lines: int, interval_ms: float, poll_ms: float, rotate_every: int) -> list[float]:
    latencies_ms: list[float] = []
    done = threading.Event()

    def on_event(e: LogEvent) -> None:
        sent = e.fields.get("sent_ns")
        if isinstance(sent, int):
            latencies_ms.append((time.monotonic_ns() - sent) / 1e6)
            if len(latencies_ms) >= lines:
                done.set()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cuzk.log"
        path.write_text("")
        follower = LogFollower([str(path)], LogsConfig(poll_ms=poll_ms), on_event)
        follower.start()
        time.sleep(2 * poll_ms / 1000)
        fh = open(path, "a")  # noqa: SIM115 - reopened on rotation
        try:
            for i in range(lines):
                if rotate_every and i and i % rotate_every == 0:
                    fh.close()
                    os.rename(path, f"{path}.{i}")
                    fh = open(path, "a")  # noqa: SIM115
                fh.write(f"2026-11-30T09:06:38.134140Z  INFO cuzk_core::engine: GPU_TIMING "
                         f"spawn_blocking prove_start worker_id=0 partition=Some({i}) "
                         f"sent_ns={time.monotonic_ns()}\n")
                fh.flush()
                time.sleep(interval_ms / 1000)
            done.wait(5.0)
        finally:
            fh.close()
            follower.stop()
        status = follower.status()
    print(f"delivered {len(latencies_ms)}/{lines} lines, rotations seen "
          f"{status.files[0].rotations}, unparsed {status.unparsed}")
    return latencies_ms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lines", type=int, default=400)
    ap.add_argument("--interval-ms", type=float, default=7.0)
    ap.add_argument("--poll-ms", type=float, default=50.0)
    ap.add_argument("--rotate-every", type=int, default=0)
    args = ap.parse_args()
    lat = sorted(run(args.lines, args.interval_ms, args.poll_ms, args.rotate_every))
    if not lat:
        print("no events delivered")
        return
    p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))]
    print(f"poll {args.poll_ms:g} ms: write-to-event latency p50 {statistics.median(lat):.1f} ms, "
          f"p99 {p99:.1f} ms, max {lat[-1]:.1f} ms")


if __name__ == "__main__":
    main()
