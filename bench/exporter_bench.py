"""What /metrics costs under load, and whether it disturbs the sampler.

usage: python bench/exporter_bench.py [--server gapwatch|prometheus-client] [--gets 2000]
                                      [--concurrency 50] [--idle 1000] [--seconds 15]

One process, as `gapwatch record --prometheus` runs: the simulated prover (`sim:chained`) at
speed 1 (the real 100 ms deadline sampler) feeding a session whose metrics are served on
loopback, by gapwatch's own server (default) or, for comparison, by prometheus_client's
`start_http_server` (what gapwatch used before issue 11), over the same collector.

1. Scrape latency: `--gets` GETs of /metrics, `--concurrency` at a time, each on a new
   connection (urllib): p50 / p99 / max of the request time, and any that failed.
2. Sampler lateness: the sampler's tick lateness (`GpuSample.lateness_ns`) over `--seconds`
   with no client (baseline), then over `--seconds` while `--idle` connections are opened and
   held idle, then at the moment they are all closed at once (the worst tick in the 2 s after);
   also the process's thread count while they are held.

Prints one line per figure; nothing is asserted (tests never time things).
"""

from __future__ import annotations

import argparse
import resource
import socket
import statistics
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gapwatch.config import Config  # noqa: E402
from gapwatch.core.models import GpuSample, Record, SessionHeader  # noqa: E402
from gapwatch.engine.runtime import Runtime, build_runtime  # noqa: E402

WARMUP_S = 2.0


class LatenessProbe:
    """A session sink keeping (time, lateness) of every tick."""

    def __init__(self) -> None:
        self.ticks: list[tuple[float, int]] = []
        self._last: int | None = None

    def on_header(self, header: SessionHeader) -> None:
        pass

    def on_record(self, record: Record) -> None:
        if isinstance(record, GpuSample) and record.lateness_ns is not None \
                and record.t_mono_ns != self._last:
            self._last = record.t_mono_ns
            self.ticks.append((time.monotonic(), record.lateness_ns))

    def close(self) -> None:
        pass

    def between(self, t0: float, t1: float) -> list[float]:
        return [ns / 1e6 for t, ns in self.ticks if t0 <= t < t1]


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def _fig(values: list[float]) -> str:
    if not values:
        return "no data"
    return (f"p50 {_pct(values, 0.5):.2f} ms, p99 {_pct(values, 0.99):.2f} ms, "
            f"max {max(values):.2f} ms ({len(values)})")


def _runtime(server: str) -> tuple[Runtime, str, Any]:
    if server == "gapwatch":
        config = Config().model_copy(update={"prometheus": Config().prometheus.model_copy(
            update={"listen": "127.0.0.1:0"})})
        rt = build_runtime(config, "sim:chained", speed=1)
        return rt, rt.exporter.url, None
    from prometheus_client import CollectorRegistry, start_http_server

    from gapwatch.sinks.metrics import MetricsSink
    from gapwatch.sinks.prometheus import GapwatchCollector

    rt = build_runtime(Config(), "sim:chained", speed=1)
    sink = MetricsSink()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(GapwatchCollector(rt.session, sink, rt.status))
    rt.session.add_sink(sink)
    httpd, _thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    return rt, f"http://127.0.0.1:{httpd.server_address[1]}/metrics", httpd


def _get(url: str) -> float:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as resp:
        resp.read()
    return (time.perf_counter() - t0) * 1000


def scrape_latency(url: str, gets: int, concurrency: int) -> None:
    failed = 0
    times: list[float] = []

    def one(_: int) -> float | None:
        try:
            return _get(url)
        except OSError:
            return None

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        for ms in pool.map(one, range(gets)):
            if ms is None:
                failed += 1
            else:
                times.append(ms)
    wall = time.perf_counter() - t0
    print(f"scrapes: {gets} GETs, {concurrency} at a time: {_fig(times)}; failed {failed}; "
          f"{gets / wall:.0f} per s; median {statistics.median(times):.2f} ms")


def idle_sockets(url: str, probe: LatenessProbe, idle: int, seconds: float) -> None:
    host, port = url.split("//")[1].split("/")[0].split(":")
    t0 = time.monotonic()
    time.sleep(seconds)
    base = probe.between(t0, time.monotonic())
    print(f"sampler lateness, no client ({seconds:g} s): {_fig(base)}")
    threads_before = threading.active_count()
    t1 = time.monotonic()
    socks: list[socket.socket] = []
    refused = 0
    for _ in range(idle):
        try:
            socks.append(socket.create_connection((host, int(port)), timeout=10))
        except OSError:
            refused += 1
    opened = time.monotonic()
    held_answer = _get(url)
    time.sleep(max(0.0, seconds - (time.monotonic() - t1)))
    during = probe.between(t1, time.monotonic())
    threads = threading.active_count()
    print(f"sampler lateness, {len(socks)} idle sockets opened in {opened - t1:.2f} s and held "
          f"({seconds:g} s): {_fig(during)}; threads {threads_before} -> {threads}; "
          f"a scrape meanwhile took {held_answer:.1f} ms; {refused} connects failed")
    t2 = time.monotonic()
    for s in socks:
        s.close()
    time.sleep(2.0)
    after = probe.between(t2, time.monotonic())
    print(f"sampler lateness, in the 2 s after closing them all at once: {_fig(after)}; "
          f"threads {threading.active_count()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", choices=("gapwatch", "prometheus-client"), default="gapwatch")
    ap.add_argument("--gets", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--idle", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=15.0)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, 2 * a.idle + 512))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    rt, url, httpd = _runtime(a.server)
    probe = LatenessProbe()
    rt.session.add_sink(probe)
    rt.start()
    try:
        time.sleep(WARMUP_S)
        print(f"server: {a.server} at {url}; python {sys.version.split()[0]}")
        scrape_latency(url, a.gets, a.concurrency)
        idle_sockets(url, probe, a.idle, a.seconds)
        t0 = time.perf_counter()
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        else:
            rt.exporter.stop()
        print(f"stopping the server took {(time.perf_counter() - t0) * 1000:.1f} ms")
    finally:
        rt.exporter = None
        rt.stop()


if __name__ == "__main__":
    main()
