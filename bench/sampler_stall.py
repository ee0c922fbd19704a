"""The sampler's tick lateness while everything from outside is as hostile as gapwatch allows
(issue 29, item 7). Goal: no skipped tick (p99 and max lateness under one period, 100 ms).

Usage: python bench/sampler_stall.py [--duration 20] [--which status,lines,both]
       [--line-bytes 1048576] [--lines-per-s 4] [--status-bytes N] [--source sim:chained]

`gapwatch record --source SOURCE --quiet --log - --cuzk-status URL --duration D
--out R.jsonl.gz` (by default the simulated prover, no GPU needed; `--source nvml` on a GPU box
times the real NVML calls' ticks) against:
- `status`: a `/status` server (in this process) answering every poll with the largest answer
  gapwatch accepts (`--status-bytes`, default just under `MAX_BODY_BYTES`), all of it
  partitions: the most work per byte;
- `lines`: `--lines-per-s` hostile log lines a second on its standard input, each
  `--line-bytes` long (the longest a line is read whole, `logs.max_line_bytes`), cycling
  through shapes that cost the parser most: a tracing line of thousands of `key=value` fields,
  a TIMELINE line of thousands of fields, a line of ANSI colour codes, a line that looks like
  a date and then never matches;
- `both`: the two at once;
- `none`: neither (the same machine's lateness with nothing hostile, to compare).

For each it prints `record`'s own closing figures (tick lateness p50/p99/max over the whole
run, skipped ticks), the prover status polls answered, and the recording's growth per second.
Files go to a temporary folder, removed afterwards. Timing figures depend on the machine's
load: say in docs/benchmarks.md whether the box was shared.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from gapwatch.sources.cuzk_status import MAX_BODY_BYTES  # noqa: E402

_PERIOD_MS = 100.0


def status_body(size: int) -> bytes:
    """A `/status` answer of about `size` bytes (never more), all partitions."""
    parts = [{"index": i, "state": "gpu", "synth_ms": 123, "gpu_ms": 456} for i in range(16)]
    pipe = {"job_id": "j", "proof_kind": "porep", "started_secs_ago": 1.0,
            "total_partitions": 16, "partitions_done": 3, "partitions": parts}
    one = len(json.dumps(dict(pipe, job_id="job-000000"))) + 2
    n = max(1, (size - 200) // one)
    doc = {"uptime_secs": 12.5, "pipelines": [dict(pipe, job_id=f"job-{i:06d}") for i in range(n)],
           "gpu_workers": [], "counters": {"queue_depth": 1}}
    body = json.dumps(doc).encode()
    assert len(body) <= size, (len(body), size)
    return body


def serve_status(body: bytes) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the library's name
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/status"


def hostile_lines(size: int) -> list[bytes]:
    """One line of each costly shape, `size` bytes each with its newline."""
    def fit(head: bytes, unit: bytes) -> bytes:
        return (head + unit * ((size - len(head)) // len(unit) + 1))[: size - 1] + b"\n"
    return [
        fit(b"2026-11-30T09:06:38.134140Z  INFO cuzk_core::engine: GPU_TIMING", b" k=v"),
        fit(b"TIMELINE,12345,GPU_START,job=x", b",worker=1"),
        fit(b"", b"\x1b[31mred\x1b[0m "),
        fit(b"2026-11-30T09:06:38.134140Z", b" 0000-00-00"),
    ]


def feed_lines(proc: subprocess.Popen[bytes], lines: list[bytes], per_s: float,
               stop: threading.Event) -> None:
    assert proc.stdin is not None
    i = 0
    while not stop.wait(1.0 / per_s):
        try:
            proc.stdin.write(lines[i % len(lines)])
            proc.stdin.flush()
        except OSError:
            return
        i += 1


def run(name: str, args: argparse.Namespace, url: str | None, tmp: str) -> None:
    out = os.path.join(tmp, f"{name}.jsonl")
    cmd = [sys.executable, "-m", "gapwatch", "record", "--source", args.source, "--quiet",
           "--duration", str(args.duration), "--log", "-", "--out", out]
    if url is not None:
        cmd += ["--cuzk-status", url]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    stop = threading.Event()
    feeder = None
    if name in ("lines", "both"):
        feeder = threading.Thread(target=feed_lines, daemon=True,
                                  args=(proc, hostile_lines(args.line_bytes), args.lines_per_s,
                                        stop))
        feeder.start()
    t0 = time.monotonic()
    try:
        if feeder is None:
            _, err_b = proc.communicate(timeout=args.duration + 300)
        else:  # stdin is the feeder's: read stderr to its end, then reap
            err_b = _wait_stderr(proc, args.duration + 300)
    finally:
        stop.set()
    wall_s = time.monotonic() - t0
    err = err_b.decode(errors="replace")
    late = re.search(r"tick lateness over the whole run \((\d+) ticks\): p50 ([\d.]+) ms, "
                     r"p99 ([\d.]+) ms .*?max ([\d.]+) ms \(exact\), skipped (\d+)", err)
    polls = re.search(r"prover status \S+: (\d+) of (\d+) polls answered", err)
    size = os.path.getsize(out) if os.path.exists(out) else 0
    print(f"== {name}: {wall_s:.0f} s, exit {proc.returncode}")
    if late:
        ticks, p50, p99, mx, skipped = late.groups()
        print(f"tick lateness over {ticks} ticks: p50 {p50} ms, p99 {p99} ms, max {mx} ms; "
              f"skipped ticks {skipped} (goal: 0; a period is {_PERIOD_MS:.0f} ms)")
    else:
        print("no lateness line; stderr tail:\n" + "\n".join(err.splitlines()[-8:]))
    if polls:
        print(f"status polls answered: {polls.group(1)} of {polls.group(2)}")
    print(f"recording: {size / 1e6:.2f} MB, {size / 1e6 / args.duration:.3f} MB/s (uncompressed)")
    for line in err.splitlines():
        if line.startswith(("warning:", "error:")) and "status" in line:
            print("  " + line[:200])


def _wait_stderr(proc: subprocess.Popen[bytes], timeout_s: float) -> bytes:
    assert proc.stderr is not None
    err = proc.stderr.read()
    proc.wait(timeout_s)
    if proc.stdin is not None:
        try:
            proc.stdin.close()
        except OSError:
            pass
    return err


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--which", default="status,lines,both")
    ap.add_argument("--line-bytes", type=int, default=1 << 20)
    ap.add_argument("--lines-per-s", type=float, default=4.0)
    ap.add_argument("--status-bytes", type=int, default=MAX_BODY_BYTES - 1)
    ap.add_argument("--source", default="sim:chained",
                    help="what `record` samples: sim:chained (no GPU) or nvml (a GPU box)")
    args = ap.parse_args()
    body = status_body(args.status_bytes)
    server, url = serve_status(body)
    print(f"source {args.source}; /status answer: {len(body)} bytes; log lines: "
          f"{args.line_bytes} bytes, {args.lines_per_s}/s; {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name in args.which.split(","):
                run(name, args, url if name in ("status", "both") else None, tmp)
    finally:
        server.shutdown()


if __name__ == "__main__":
    main()
