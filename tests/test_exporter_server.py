"""The /metrics server under abuse: idle sockets by the hundred take no thread and do not keep a
scrape out, the sampler keeps its schedule meanwhile, endless request heads and idle clients
are closed, and stopping frees the port at once."""

from __future__ import annotations

import contextlib
import resource
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from test_export_prometheus import _header

from gapwatch.base.watch import ThreadWatch
from gapwatch.config import Config
from gapwatch.engine.runtime import Runtime, build_runtime
from gapwatch.engine.session import Session
from gapwatch.engine.store import SeriesStore
from gapwatch.sinks.metrics_server import MAX_HEAD_BYTES, MetricsServer, ServerLimits
from gapwatch.sinks.prometheus import start_exporter

IDLE = 500
ROOT = Path(__file__).resolve().parent.parent


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as resp:
        assert resp.status == 200
        return str(resp.read().decode())


def _eventually(ok: Callable[[], bool], timeout_s: float = 20.0) -> bool:
    """Poll `ok` until it holds (True) or `timeout_s` passes (False): no guessed sleep."""
    deadline = time.monotonic() + timeout_s
    while not ok():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _samples(text: str) -> float:
    return sum(float(line.rpartition(" ")[2]) for line in text.splitlines()
               if line.startswith("gapwatch_gpu_samples_total"))


def _closed_by_server(s: socket.socket) -> bool:
    """The server closed the connection without answering (an orderly close, or a reset when
    it left bytes of ours unread)."""
    try:
        return s.recv(100) == b""
    except ConnectionResetError:
        return True


@pytest.fixture()
def runtime() -> Iterator[Runtime]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2 * IDLE + 200 <= hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (2 * IDLE + 200, hard))
    config = Config().model_copy(update={"prometheus": Config().prometheus.model_copy(
        update={"listen": "127.0.0.1:0"})})
    rt = build_runtime(config, "sim:chained", speed=1)
    rt.start()
    yield rt
    rt.stop()


def _open_idle(port: int, n: int) -> list[socket.socket]:
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        socks.append(s)
    return socks


def test_a_scrape_answers_while_hundreds_of_idle_sockets_are_held(runtime: Runtime) -> None:
    assert runtime.exporter is not None
    url = runtime.exporter.url
    port = int(runtime.exporter.address.rpartition(":")[2])
    before = _samples(_get(url))
    threads_before = threading.active_count()
    idle = _open_idle(port, IDLE)
    try:
        during = _samples(_get(url))  # answered although hundreds of sockets hold nothing
        # No thread per connection: at most the worker pool and the accept thread came.
        assert threading.active_count() - threads_before <= runtime.exporter.server.limits.workers + 1
        # The sampler kept producing while the sockets piled up.
        assert during >= before
        assert _eventually(lambda: _samples(_get(url)) > during)
    finally:
        for s in idle:  # all at once, as in the issue (one tick was 345 ms late then)
            s.close()
    after = _samples(_get(url))
    assert _eventually(lambda: _samples(_get(url)) > after)


@pytest.fixture()
def session() -> Session:
    header = _header()
    return Session(header, SeriesStore(header.gpus, 0.1))


def test_stop_frees_the_port_at_once(session: Session) -> None:
    handle = start_exporter("127.0.0.1:0", session)
    port = handle.server.server_address[1]
    _get(handle.url)
    handle.stop()
    assert handle.server._thread is not None and not handle.server._thread.is_alive()
    with socket.socket() as again:
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))  # free: no serve_forever poll to wait out
    handle.stop()  # twice is fine


def test_a_request_head_that_never_ends_is_closed(session: Session) -> None:
    handle = start_exporter("127.0.0.1:0", session)
    try:
        port = handle.server.server_address[1]
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * MAX_HEAD_BYTES)
            assert _closed_by_server(s)
        assert "gapwatch_" in _get(handle.url)
    finally:
        handle.stop()


def test_an_idle_client_is_closed_after_the_idle_timeout(session: Session) -> None:
    handle = start_exporter("127.0.0.1:0", session, limits=ServerLimits(idle_timeout_s=0.2))
    try:
        port = handle.server.server_address[1]
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            assert _closed_by_server(s)
        assert handle.server.timed_out == 1
    finally:
        handle.stop()


def test_beyond_the_connection_limit_the_oldest_idle_one_makes_room(session: Session) -> None:
    limits = ServerLimits(max_connections=4, idle_timeout_s=60)
    handle = start_exporter("127.0.0.1:0", session, limits=limits)
    try:
        port = handle.server.server_address[1]
        idle = _open_idle(port, 10)
        try:
            assert "gapwatch_" in _get(handle.url)
            assert _closed_by_server(idle[0])  # the oldest was closed to make room
        finally:
            for s in idle:
                s.close()
    finally:
        handle.stop()


def test_connections_evicted_and_read_in_one_select_batch_do_not_kill_the_server() -> None:
    """Issue 29, item 1: clients that connect faster than the server holds them and drip a byte
    each. A connection evicted to make room was read later in the same `select()` batch
    (KeyError), four deaths and `/metrics` was gone for the rest of the run."""
    deaths: list[str] = []
    watch = ThreadWatch(on_death=lambda name, exc, again: deaths.append(repr(exc)),
                        restart_delay_s=0.01)
    server = MetricsServer("127.0.0.1", 0, ServerLimits(max_connections=16, idle_timeout_s=60))
    server.watch = watch
    server.serve(CollectorRegistry())
    port = server.server_address[1]
    dripping: list[socket.socket] = []
    try:
        for _ in range(300):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            dripping.append(s)
            for d in dripping[-20:]:  # the newest ones send a byte of a head that never ends
                with contextlib.suppress(OSError):
                    d.send(b"G")
        assert _get(f"http://127.0.0.1:{port}/metrics") is not None
        assert deaths == []
        assert server.refused > 0  # the eviction did happen
    finally:
        for s in dripping:
            s.close()
        server.stop()


_FD_STARVED_SERVER = """
import resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (24, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
from prometheus_client import CollectorRegistry
from gapwatch.sinks.metrics_server import MetricsServer
server = MetricsServer("127.0.0.1", 0)
server.serve(CollectorRegistry())
print(server.server_address[1], flush=True)
sys.stdin.readline()  # the test has opened its idle connections
files = []
try:
    for _ in range(6):
        files.append(open("/dev/null"))
    print("opened", len(files), flush=True)
except OSError as exc:
    print("EMFILE after", len(files), exc.errno, flush=True)
sys.stdin.readline()
print("deaths", server.watch.deaths, flush=True)
"""


def test_at_ulimit_24_forty_idle_connections_leave_descriptors_for_the_rest_of_gapwatch() -> None:
    """Issue 29, item 1 (the EMFILE path): at `ulimit -n 24`, idle connections took every
    descriptor (256 may be held), so the recording and the status poller could open nothing.
    The server holds at most a quarter of the descriptors and a scrape still gets in."""
    proc = subprocess.Popen([sys.executable, "-c", _FD_STARVED_SERVER], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdin is not None and proc.stdout is not None
    idle: list[socket.socket] = []
    try:
        port = int(proc.stdout.readline())
        idle = _open_idle(port, 40)
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "opened 6"
        assert _get(f"http://127.0.0.1:{port}/metrics") is not None  # still answers
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "deaths 0"
    finally:
        for s in idle:
            s.close()
        proc.kill()
        proc.wait(10)
