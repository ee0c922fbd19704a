"""A stand-in Prometheus for the fleet tests: answers `/api/v1/query` and `/query_range` from a
table (PromQL text -> what to send), and `/api/v1/targets` (GET, as Prometheus takes it) from its
list of targets, on loopback, on its own thread.

What it sends can be anything a real or broken server might: a success with series, an HTTP
error with Prometheus's error JSON, a body that is not JSON, a huge body, or no answer for a
while. Series are built as Prometheus builds them (`vector`), so the fleet's decoding is the one
a real answer meets (the real-server test is tests/test_fleet_prometheus_server.py).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from gapwatch.fleet.queries import QUERIES, render
from gapwatch.fleet.rows import FleetOptions


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    delay_s: float = 0.0


def vector(*series: tuple[dict[str, str], float | str]) -> Reply:
    """A successful instant answer holding `series` (labels, value)."""
    result = [{"metric": labels, "value": [time.time(), str(value)]} for labels, value in series]
    return Reply(body=json.dumps({"status": "success",
                                  "data": {"resultType": "vector", "result": result}}).encode())


def matrix(*series: tuple[dict[str, str], list[tuple[float, float]]]) -> Reply:
    result = [{"metric": labels, "values": [[t, str(v)] for t, v in points]}
              for labels, points in series]
    return Reply(body=json.dumps({"status": "success",
                                  "data": {"resultType": "matrix", "result": result}}).encode())


EMPTY = vector()


def target(instance: str, health: str = "up", last_error: str = "",
           last_scrape: str = "2026-12-04T18:27:44.617259848Z", job: str = "gapwatch"
           ) -> dict[str, Any]:
    """One of the targets API's `activeTargets`, as Prometheus 2.42 writes it."""
    url = f"http://{instance}/metrics"
    return {"discoveredLabels": {"__address__": instance, "job": job},
            "labels": {"instance": instance, "job": job}, "scrapePool": job, "scrapeUrl": url,
            "globalUrl": url, "lastError": last_error, "lastScrape": last_scrape,
            "lastScrapeDuration": 0.0004, "health": health, "scrapeInterval": "15s",
            "scrapeTimeout": "10s"}


def refused(instance: str) -> str:
    """Prometheus's `lastError` for a box whose port is closed."""
    return (f'Get "http://{instance}/metrics": dial tcp {instance}: connect: '
            "connection refused")


def promql(field: str, opts: FleetOptions | None = None) -> str:
    """The PromQL the fleet sends for `field` (with default options)."""
    o = opts or FleetOptions()
    return next(render(q, o.selector, o.lookback) for q in QUERIES if q.field == field)


class FakeProm:
    def __init__(self) -> None:
        self.replies: dict[str, Reply] = {}
        #: Prefix -> reply, for range queries (their text holds the instance).
        self.range_replies: dict[str, Reply] = {}
        self.default = EMPTY
        self.asked: list[str] = []
        #: The targets API's `activeTargets` (`box` adds each box's), unless `targets_reply`
        #: says what to send instead.
        self.targets: list[dict[str, Any]] = []
        self.targets_reply: Reply | None = None
        #: Query -> (the answer `box` wrote for it, that answer's series), while `replies`
        #: still holds that answer (a test may replace or clear it).
        self.box_results: dict[str, tuple[Reply, list[Any]]] = {}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            # Headers and body are two writes: without this, each answer waits out the
            # client's delayed ACK (40 ms), and a refresh of 13 queries half a second.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                query = form.get("query", [""])[0]
                fake.asked.append(query)
                if self.path.endswith("/query_range"):
                    reply = next((r for p, r in fake.range_replies.items()
                                  if query.startswith(p)), EMPTY)
                elif self.path.endswith("/targets"):  # as Prometheus: GET only
                    reply = Reply(405, b"Method Not Allowed")
                else:
                    reply = fake.replies.get(query, fake.default)
                self.answer(reply)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                fake.asked.append(f"GET {self.path}")
                if self.path.endswith("/api/v1/targets?state=active"):
                    self.answer(fake.targets_reply or Reply(body=json.dumps(
                        {"status": "success", "data": {"activeTargets": fake.targets,
                                                       "droppedTargets": []}}).encode()))
                else:
                    self.answer(Reply(404, b"404 page not found\n"))

            def answer(self, reply: Reply) -> None:
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except OSError:
                    pass  # the client gave up (a timeout test)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # A short poll: `shutdown` waits for it (the default half second was most of each test).
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.02,),
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def fake_prometheus() -> Iterator[FakeProm]:
    fake = FakeProm()
    try:
        yield fake
    finally:
        fake.close()


def box(fake: FakeProm, instance: str, gpus: int, state: str = "CHAINED", up: float = 1.0,
        age_s: float = 2.0) -> None:
    """Answers describing one healthy-scraped box of `gpus` GPUs (added to what is there)."""
    series: dict[str, list[tuple[dict[str, str], float | str]]] = {}

    def add(field: str, *more: tuple[dict[str, str], float | str]) -> None:
        series.setdefault(field, []).extend(more)

    for g in range(gpus):
        labels = {"job": "gapwatch", "instance": instance, "gpu": str(g)}
        add("state", ({**labels, "state": state}, 1))
        if up == 1.0:  # a box not scraped: its series stale, none exported now
            add("exported", ({"instance": instance, "gpu": str(g)}, 5))  # a series a state
        add("busy_ratio", (labels, 0.5))
        add("verdict", ({**labels, "state": state, "cause": "pageable_copies",
                         "cause_words": "a/b/c copied from pageable memory",
                         "setting": "[memory] safety_margin"}, 1))
    add("up", ({"job": "gapwatch", "instance": instance}, up))
    add("age_s", ({"instance": instance}, age_s))
    for field, more in series.items():
        _added(fake, promql(field), more)
    # Its target, as Prometheus's targets API says: a box it cannot scrape refuses connections.
    fake.targets.append(target(instance) if up == 1.0 else
                        target(instance, "down", refused(instance)))


def _added(fake: FakeProm, query: str, series: list[tuple[dict[str, str], float | str]]
           ) -> None:
    """`series` added after those `fake` answers `query` with. The answer `box` wrote last is
    not decoded again (`FakeProm.box_results`): 75 boxes of 4 GPUs decoded and encoded every
    growing answer again for each GPU, ~0.7 CPU-s of the fleet screen tests' setup."""
    reply = fake.replies.get(query, EMPTY)
    held = fake.box_results.get(query)
    old = held[1] if held is not None and held[0] is reply else \
        json.loads(reply.body)["data"]["result"]
    new = json.loads(vector(*series).body)
    new["data"]["result"] = old + new["data"]["result"]
    merged = Reply(body=json.dumps(new).encode())
    fake.replies[query] = merged
    fake.box_results[query] = (merged, new["data"]["result"])
