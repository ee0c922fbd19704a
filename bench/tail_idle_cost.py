"""CPU of following quiet logs: the tailer's thread over files nobody writes to, as a prover's
logs are between bursts (issue 28: the dashboard followed the stand-in prover's two logs).

    python3 bench/tail_idle_cost.py                      # files looked at when their folder changes
    python3 bench/tail_idle_cost.py --idle-poll-ms 50    # a look every 50 ms: the old polling

Prints the process's CPU over the span as a share of one core (nothing else runs in it).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gapwatch.logs.tail import Tailer  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--poll-ms", type=float, default=50.0)
    ap.add_argument("--idle-poll-ms", type=float, default=1000.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        paths = [str(Path(folder) / f"log{i}.log") for i in range(args.files)]
        for p in paths:
            Path(p).write_text("a line\n" * 10)
        tailer = Tailer(paths, lambda *_: None, poll_ms=args.poll_ms,
                        idle_poll_ms=args.idle_poll_ms)
        tailer.start()
        c0, w0 = time.process_time(), time.monotonic()
        time.sleep(args.seconds)
        c1, w1 = time.process_time(), time.monotonic()
        woken = tailer.woken
        tailer.stop()
    print(f"{args.files} quiet files, poll {args.poll_ms:g} ms, idle poll "
          f"{args.idle_poll_ms:g} ms, woken by inotify: {woken}: "
          f"{100 * (c1 - c0) / (w1 - w0):.3f} % of a core over {w1 - w0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
