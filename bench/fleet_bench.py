"""How much `gapwatch fleet` adds to Prometheus's own query time, and what it costs in CPU.

Starts a stand-in exporter serving N GPUs' gapwatch series (50 boxes x 4 GPUs = 200 by default,
each box's `instance` label in the exposition, scraped with `honor_labels`), a real Prometheus
scraping it every second, waits for data, then runs `refresh` (the fleet's whole round of
queries) R times and prints: the refresh's wall time, the time spent waiting on Prometheus's
answers, the difference (fleet's own work), and fleet's CPU per refresh as a share of one core
at the screen's default 5 s refresh.

    python3 bench/fleet_bench.py [--gpus 200] [--refreshes 20]
Needs /usr/bin/prometheus. Prints figures; no thresholds (docs/benchmarks.md records them).
"""

from __future__ import annotations

import argparse
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gapwatch.fleet.client import PromClient  # noqa: E402
from gapwatch.fleet.rows import FleetOptions, refresh  # noqa: E402

STATES = ("CHAINED", "GAPS", "BREAKDOWN", "IDLE", "NO_DATA")
KINDS = ("pcie_starved", "transfer_bound", "host_stall", "unknown")


def exposition(gpus: int, per_box: int, t: float) -> bytes:
    rng = random.Random(int(t))
    out = []
    for i in range(gpus):
        inst, gpu = f'box{i // per_box:03d}:9400', str(i % per_box)
        lab = f'instance="{inst}",gpu="{gpu}"'
        state = STATES[(i + int(t) // 30) % 3]
        for s in STATES:
            out.append(f'gapwatch_gpu_chain_state{{{lab},state="{s}"}} {int(s == state)}')
        out.append(f"gapwatch_gpu_busy_ratio{{{lab}}} {rng.random():.3f}")
        out.append(f'gapwatch_gpu_verdict_info{{{lab},state="{state}",cause="pageable_copies",'
                   f'cause_words="a/b/c copied from pageable memory",setting="none"}} 1')
        out.append(f"gapwatch_gpu_verdict_payoff_ratio{{{lab}}} 1.5")
        for k in KINDS:
            out.append(f'gapwatch_gap_seconds_total{{{lab},kind="{k}"}} {t * 0.01 * (i % 7):.2f}')
    return ("\n".join(out) + "\n").encode()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, default=200)
    ap.add_argument("--per-box", type=int, default=4)
    ap.add_argument("--refreshes", type=int, default=20)
    ap.add_argument("--warmup-s", type=float, default=20.0)
    args = ap.parse_args()
    prom_bin = shutil.which("prometheus")
    if prom_bin is None:
        print("no prometheus binary: nothing measured")
        return 2

    class Handler(BaseHTTPRequestHandler):
        disable_nagle_algorithm = True

        def do_GET(self) -> None:  # noqa: N802
            body = exposition(args.gpus, args.per_box, time.time())
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a: object) -> None:
            pass

    exporter = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=exporter.serve_forever, daemon=True).start()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tmp = Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    (tmp / "p.yml").write_text(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: gapwatch\n"
        "    honor_labels: true\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{exporter.server_address[1]}']\n")
    prom = subprocess.Popen([prom_bin, f"--config.file={tmp / 'p.yml'}",
                             f"--storage.tsdb.path={tmp / 'db'}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                urllib.request.urlopen(f"{base}/-/ready", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        time.sleep(args.warmup_s)
        # `up` is per target; the stand-in's boxes share one, so the freshness query is
        # answered for one series: the rest of the work is the 200 rows.
        client = PromClient(base)
        opts = FleetOptions(selector='job="gapwatch"', budget_s=10.0)
        walls, waits, cpus = [], [], []
        rows = 0
        for _ in range(args.refreshes):
            c0 = time.process_time()
            r = refresh(client, opts)
            cpus.append(time.process_time() - c0)
            walls.append(r.took_s)
            waits.append(r.prometheus_s)
            rows = len(r.rows)
            assert not r.errors or set(r.errors) <= {"age_s"}, r.errors
        own = [w - p for w, p in zip(walls, waits, strict=True)]
        version = subprocess.run([prom_bin, "--version"], capture_output=True,
                                 text=True).stdout.split()[2]
        print(f"fleet refresh over {rows} rows ({args.gpus} GPUs), {args.refreshes} refreshes, "
              f"Prometheus {version}")
        print(f"  refresh wall: median {statistics.median(walls) * 1000:.1f} ms, "
              f"max {max(walls) * 1000:.1f} ms")
        print(f"  waiting on Prometheus: median {statistics.median(waits) * 1000:.1f} ms")
        print(f"  fleet's own part (wall - waiting): median {statistics.median(own) * 1000:.1f} "
              f"ms, max {max(own) * 1000:.1f} ms")
        cpu = statistics.median(cpus)
        print(f"  fleet CPU per refresh: median {cpu * 1000:.1f} ms = {cpu / 5.0 * 100:.2f} % "
              "of a core at one refresh per 5 s")
    finally:
        prom.terminate()
        prom.wait(10)
        exporter.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
