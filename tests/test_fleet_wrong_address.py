"""`gapwatch fleet` pointed at the wrong address says so once: an error every query shares (no
Prometheus listening) is one line with how many queries it hit and the address, not one line a
query; and an address that answers like a `/metrics` exporter (gapwatch's own `--prometheus
PORT`, the likeliest mistake) is named as one, with where to point instead. `--once` on stderr
and the screen's footer say the same lines (`Refresh.error_lines`)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from fleet_fakes import Reply, box, fake_prometheus
from textual.widgets import Static

from gapwatch.cli import main
from gapwatch.core.models import GpuInfo, SessionHeader
from gapwatch.engine.session import Session
from gapwatch.engine.store import SeriesStore
from gapwatch.fleet import rows
from gapwatch.fleet.client import PromClient, PromError
from gapwatch.fleet.queries import QUERIES
from gapwatch.fleet.rows import FleetOptions, refresh
from gapwatch.sinks.prometheus import start_exporter
from gapwatch.ui.fleet import FleetApp

EXPORTER_WORDS = "answers like a /metrics exporter, not Prometheus"
POINT_AT = "point --prometheus at the Prometheus server that scrapes it"


def _closed_port_url() -> str:
    """The URL of a loopback port nothing listens on (bound, then closed: refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@contextmanager
def _gapwatch_metrics() -> Iterator[str]:
    """A real gapwatch `/metrics` server (what `record --prometheus PORT` serves): its URL."""
    header = SessionHeader(gapwatch_version="test", host="box", source="sim",
                           started_wall_s=1000.0, started_mono_ns=0, period_ms=100.0,
                           gpus=[GpuInfo(index=0, name="H200", link_bytes_per_s=63.0e9)])
    handle = start_exporter("127.0.0.1:0", Session(header, SeriesStore(header.gpus, 0.1)))
    try:
        yield f"http://{handle.address}"
    finally:
        handle.stop()


def test_an_unreachable_prometheus_is_said_once_with_the_query_count_and_the_address(
        capsys: pytest.CaptureFixture[str]) -> None:
    url = _closed_port_url()
    assert main(["fleet", "--prometheus", url, "--once"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [f"gapwatch fleet: every query ({len(QUERIES)}) to {url}: cannot reach "
                   "Prometheus: [Errno 111] Connection refused"]


def test_once_json_keeps_every_querys_error_for_scripts(
        capsys: pytest.CaptureFixture[str]) -> None:
    url = _closed_port_url()
    assert main(["fleet", "--prometheus", url, "--once", "--json"]) == 1
    out = capsys.readouterr()
    assert len(json.loads(out.out)["errors"]) == len(QUERIES)
    assert len(out.err.splitlines()) == 1


def test_a_gapwatch_metrics_port_given_as_prometheus_is_named_an_exporter_once(
        capsys: pytest.CaptureFixture[str]) -> None:
    with _gapwatch_metrics() as url:
        assert main(["fleet", "--prometheus", url, "--once"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [f"gapwatch fleet: every query ({len(QUERIES)}): {url} {EXPORTER_WORDS} "
                   f"(HTTP 501 on /api/v1/query): {POINT_AT}"]


def test_a_metrics_page_where_the_targets_api_should_be_is_named_an_exporter() -> None:
    # gapwatch's /metrics server answers any GET path with its page, the targets API's too.
    with _gapwatch_metrics() as url:
        with pytest.raises(PromError, match=f"{EXPORTER_WORDS} \\(its answer is /metrics "
                                            f"text\\): {POINT_AT}"):
            PromClient(url).targets(("instance",))


def test_a_query_api_that_is_not_there_is_named_an_exporter_or_a_missing_path_prefix() -> None:
    with fake_prometheus() as fake:
        fake.default = Reply(404, b"404 page not found\n")
        with pytest.raises(PromError) as raised:
            PromClient(fake.url).instant("up")
    assert str(raised.value) == (f"{fake.url} {EXPORTER_WORDS} (HTTP 404 on /api/v1/query): "
                                 f"{POINT_AT} (with its path prefix, if it is served under one)")
    with fake_prometheus() as fake:  # Prometheus's own error statuses are Prometheus's
        fake.default = Reply(503, b"")
        with pytest.raises(PromError) as raised:
            PromClient(fake.url).instant("up")
    assert str(raised.value) == "HTTP 503"


def test_errors_of_their_own_keep_their_query_names_and_shared_ones_are_counted() -> None:
    errors = {"state": "HTTP 503: too many queries", "up": "no answer within 5 s",
              "age_s": "skipped: the refresh's 5 s were spent",
              "exported": "skipped: the refresh's 5 s were spent",
              "busy_ratio": "skipped: the refresh's 5 s were spent"}
    assert rows.said_errors(errors, "http://prom:9090") == [
        "query state: HTTP 503: too many queries",
        "query up: no answer within 5 s",
        "3 queries (age_s, exported, busy_ratio) to http://prom:9090: skipped: the refresh's "
        "5 s were spent"]


def test_a_refresh_where_some_queries_fail_alike_names_a_few_and_counts_them() -> None:
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1)
        fake.default = Reply(503, b"")  # every query the box does not answer
        result = refresh(PromClient(fake.url), FleetOptions())
    failed = [q.field for q in QUERIES if q.field not in (
        "state", "up", "age_s", "exported", "busy_ratio", "verdict")]
    failed += ["down_why"] if "down_why" in result.errors else []
    assert result.error_lines(fake.url) == [
        f"{len(failed)} queries ({', '.join(failed[:4])}, ...) to {fake.url}: HTTP 503"]


def _footer(app: FleetApp) -> str:
    return str(app.query_one("#fleet-footer", Static).content)


async def test_the_fleet_screen_footer_says_an_unreachable_prometheus_once() -> None:
    url = _closed_port_url()
    app = FleetApp(PromClient(url), FleetOptions(), refresh_s=3600)
    async with app.run_test(size=(200, 24)) as pilot:
        for _ in range(100):
            if "every query" in _footer(app) or "Connection refused" in _footer(app):
                break
            await pilot.pause(0.05)
        footer = _footer(app)
    assert footer.endswith(f"NOT read, showing the last table: every query ({len(QUERIES)}) "
                           f"to {url}: cannot reach Prometheus: [Errno 111] Connection refused")
    assert footer.count("Connection refused") == 1


async def test_the_fleet_screen_footer_names_a_gapwatch_metrics_port_an_exporter() -> None:
    with _gapwatch_metrics() as url:
        app = FleetApp(PromClient(url), FleetOptions(), refresh_s=3600)
        async with app.run_test(size=(200, 24)) as pilot:
            for _ in range(100):
                if "query" in _footer(app):
                    break
                await pilot.pause(0.05)
            footer = _footer(app)
    assert footer.count(EXPORTER_WORDS) == 1 and POINT_AT in footer


class _OnlyMetrics(BaseHTTPRequestHandler):
    """Any other exporter (prometheus_client's own `start_http_server`): its page on any GET,
    no POST (501)."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = b"# HELP up_total x\n# TYPE up_total counter\nup_total 1\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_any_exporter_that_takes_no_post_is_named_one() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OnlyMetrics)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        with pytest.raises(PromError, match=f"{EXPORTER_WORDS} \\(HTTP 501"):
            PromClient(url).instant("up")
    finally:
        server.shutdown()
        server.server_close()
