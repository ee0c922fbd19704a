"""Rotation storm: how many log lines the tailer loses or duplicates while the log is rotated
again and again, per rotation style and interval (goal: 0 lost where a line sat in its file for
at least one whole poll; 0 duplicated always).

Usage: python bench/rotation_storm.py [--styles rename,delete,copytruncate]
       [--intervals-ms 0,10,25,50,100,250,500] [--seconds 3] [--line-every-ms 2] [--poll-ms 50]

A writer thread appends numbered lines (O_APPEND, as `>> log` would) every `--line-every-ms`; a
rotator thread rotates the log every interval (0 = back to back):
- rename: `mv log log.N`, the writer reopens `log` (logrotate's default with a postrotate HUP);
- delete: `rm log`, the writer re-creates it;
- copytruncate: `cp log log.N; truncate -s0 log`, the writer keeps its descriptor.
Writer and rotator share a lock, so every line lands whole in exactly one file (what a real
writer that rotates between lines does). The tailer (`gapwatch.logs.tail.Tailer`, polled by this
script every `--poll-ms` so that poll times are known) collects what it reads.

A lost line is counted as "lost with a poll" when some poll started after the line was written
and ended before the line's file was rotated away (or truncated): that poll could have read it,
so losing it is a tailer bug (goal 0). The other lost lines sat in a file for less than a poll:
a rename/delete rotation of a file the tailer never saw, or a line written less than a poll
before a copytruncate (it is only in the copy; no tailer that follows the name can read it).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from gapwatch.logs.tail import Tailer

LINE = re.compile(r"^L(\d{7}) [.]+$")
PAD = "." * 80


@dataclass
class Run:
    style: str
    interval_ms: float
    written: int = 0
    rotations: int = 0
    lost: int = 0
    lost_with_poll: int = 0
    duplicated: int = 0
    fragments: int = 0
    seen_rotations: int = 0
    seen_truncations: int = 0


def run(style: str, interval_ms: float, seconds: float, line_every_ms: float,
        poll_ms: float) -> Run:
    result = Run(style, interval_ms)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cuzk.log"
        path.write_bytes(b"")
        got: list[str] = []
        tailer = Tailer([str(path)], lambda _s, text, _m, _w: got.append(text),
                        poll_ms=poll_ms, from_start=True)
        lock = threading.Lock()
        stop_writing = threading.Event()
        stop_polling = threading.Event()
        #: line number -> (write time, generation); generation -> time it was rotated away
        writes: dict[int, tuple[float, int]] = {}
        gen_end: dict[int, float] = {}
        polls: list[tuple[float, float]] = []
        state = {"gen": 0, "fd": os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)}

        def writer() -> None:
            n = 0
            while not stop_writing.is_set():
                with lock:
                    os.write(state["fd"], f"L{n:07d} {PAD}\n".encode())
                    writes[n] = (time.monotonic(), state["gen"])
                n += 1
                time.sleep(line_every_ms / 1000)

        def rotator() -> None:
            k = 0
            while not stop_writing.is_set():
                time.sleep(interval_ms / 1000)  # 0: yield only
                with lock:
                    k += 1
                    # The file's content is out of the tailer's reach from here on: during a
                    # rename rotation the name is missing until the writer re-creates it.
                    gen_end[state["gen"]] = time.monotonic()
                    if style == "rename":
                        os.rename(path, f"{path}.{k}")
                        os.close(state["fd"])
                        state["fd"] = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
                    elif style == "delete":
                        os.unlink(path)
                        os.close(state["fd"])
                        state["fd"] = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
                    else:
                        shutil.copyfile(path, f"{path}.{k % 3}")
                        os.truncate(path, 0)
                    state["gen"] += 1
                    result.rotations += 1

        def poller() -> None:
            while not stop_polling.is_set():
                start = time.monotonic()
                tailer.poll_once()
                polls.append((start, time.monotonic()))
                stop_polling.wait(poll_ms / 1000)

        threads = [threading.Thread(target=f, daemon=True) for f in (writer, rotator, poller)]
        for t in threads:
            t.start()
        time.sleep(seconds)
        stop_writing.set()
        threads[0].join()
        threads[1].join()
        time.sleep(4 * poll_ms / 1000)  # let the tailer drain the last file
        stop_polling.set()
        threads[2].join()
        os.close(state["fd"])
        status = tailer.status()[0]
        result.seen_rotations = status.rotations
        result.seen_truncations = status.truncations

    result.written = len(writes)
    counts: Counter[int] = Counter()
    for text in got:
        m = LINE.match(text)
        if m is None:
            result.fragments += 1
        else:
            counts[int(m.group(1))] += 1
    result.duplicated = sum(c - 1 for c in counts.values() if c > 1)
    for n, (t_write, gen) in writes.items():
        if counts.get(n):
            continue
        result.lost += 1
        end = gen_end.get(gen, float("inf"))
        # A poll that started after the write and ended before the file was rotated away.
        if any(t_write < s and e < end for s, e in polls):
            result.lost_with_poll += 1
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--styles", default="rename,delete,copytruncate")
    ap.add_argument("--intervals-ms", default="0,10,25,50,100,250,500")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--line-every-ms", type=float, default=2.0)
    ap.add_argument("--poll-ms", type=float, default=50.0)
    args = ap.parse_args()
    print(f"poll {args.poll_ms:g} ms, a line every {args.line_every_ms:g} ms, "
          f"{args.seconds:g} s per run")
    print("| style | interval | lines | rotations (seen) | lost | lost with a poll | "
          "duplicated | fragments |")
    print("|---|---|---|---|---|---|---|---|")
    total_with_poll = total_dup = 0
    for style in args.styles.split(","):
        for interval in (float(x) for x in args.intervals_ms.split(",")):
            r = run(style, interval, args.seconds, args.line_every_ms, args.poll_ms)
            seen = r.seen_truncations if style == "copytruncate" else r.seen_rotations
            print(f"| {style} | {interval:g} ms | {r.written} | {r.rotations} ({seen}) | "
                  f"{r.lost} ({100 * r.lost / max(1, r.written):.1f} %) | {r.lost_with_poll} | "
                  f"{r.duplicated} | {r.fragments} |", flush=True)
            total_with_poll += r.lost_with_poll
            total_dup += r.duplicated
    print(f"\nlost with a poll: {total_with_poll} (goal 0); duplicated: {total_dup} (goal 0)")


if __name__ == "__main__":
    main()
