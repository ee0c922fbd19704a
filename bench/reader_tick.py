"""The live log reader's clock tick, when nothing waits: what one pass costs beside the lines.

Who runs it: a person, from the repository root:

    PYTHONPATH=. python3 bench/reader_tick.py [--daemons 2] [--n 200000]

After every pass of the tailer (every `idle_poll_ms` idle, and on stdin after every 50 ms wait
and every 64 KiB read) the follower ticks the reader's clock (`LogFollower._tick`): the parser
asked what panic has ended, the session told the time (`Session.on_reader_clock`), its watcher
asked what waited past it, its PoSt clock moved on (`CuzkWatch.at`). With no panic being read,
no half of one waiting and no PoSt in flight, that tick has nothing to say. This times `_tick`
in that state, a pass a second later each, the session holding cuzk's watcher of `--daemons`
daemons, and prints microseconds a tick.
"""

from __future__ import annotations

import argparse
import tempfile
import timeit
from itertools import count
from pathlib import Path

from gapwatch.base.clock import FakeClock
from gapwatch.config import LogsConfig
from gapwatch.core.models import GpuInfo, SessionHeader
from gapwatch.cuzk.watch import CuzkWatch
from gapwatch.engine.session import Session
from gapwatch.engine.store import SeriesStore
from gapwatch.logs.follow import LogFollower

T0_S = 1_796_000_000.0


def _start_line(t: str, listen: str, gpu: int) -> list[str]:
    return [f"2026-05-12T16:00:{t}.000000Z  INFO cuzk_daemon: cuzk-daemon starting",
            f"2026-05-12T16:00:{t}.001000Z  INFO cuzk_daemon: configuration loaded "
            f"listen={listen}",
            f"2026-05-12T16:00:{t}.031000Z  INFO cuzk_core::engine: initializing GPU workers "
            f"num_gpus=1 gpu_workers_per_device=2 total_workers=2 gpus=[{gpu}]"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemons", type=int, default=2)
    ap.add_argument("--n", type=int, default=200_000)
    args = ap.parse_args()
    header = SessionHeader(gapwatch_version="bench", host="box", source="sim",
                           started_wall_s=T0_S, started_mono_ns=0, period_ms=100.0,
                           gpus=[GpuInfo(index=i, link_bytes_per_s=63e9)
                                 for i in range(args.daemons)])
    session = Session(header, SeriesStore(header.gpus, 0.1), watch=CuzkWatch())
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for d in range(args.daemons):
            path = Path(tmp) / f"d{d}.log"
            path.write_text("\n".join(_start_line(f"{10 + d:02d}", f"127.0.0.1:98{d}0", d))
                            + "\n")
            paths.append(str(path))
        clock = FakeClock(start_wall_s=T0_S)
        follower = LogFollower(paths, LogsConfig(from_start=True), session.on_log_event,
                               clock=clock, on_clock=session.on_reader_clock)
        follower.tailer.poll_once()
        follower.tailer.poll_once()
        read_to = follower.tailer.read_to()
        assert read_to is not None, "the backlogs were not read"
        assert follower.parser.panic_being_read_s() is None
        mono_ns, wall_s = read_to
        ticks = count(1)

        def tick() -> None:  # each a pass later (the idle pass: every second)
            i = next(ticks)
            follower._tick(mono_ns + i * 1_000_000_000, wall_s + i)

        s = timeit.timeit(tick, number=args.n)
        watch = session.watch
        walked = len(list(watch.daemons.each)) if isinstance(watch, CuzkWatch) else 0
        print(f"{walked} daemon(s) walked, nothing waiting: "
              f"{s / args.n * 1e6:.3f} us a tick ({args.n} ticks)")


if __name__ == "__main__":
    main()
