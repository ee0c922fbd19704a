"""A real Prometheus server scrapes gapwatch replaying the real H200 pageable trace.

Proof that the exporter works with the actual tool, not an imitation: Prometheus (Debian package
`prometheus`) runs on loopback with a temporary config that scrapes the exporter every 100 ms;
the test then asks Prometheus' HTTP API for the breakdown and the gap counters.

The session is built in-process (read_any + Session + GapDetector, exactly what `gapwatch replay
--prometheus` wires), and fed up to the moment the detector declares BREAKDOWN, held there until
Prometheus has scraped it, then fed to the end: deterministic, no timing guesses. When no
Prometheus binary is found the test is skipped and says so in the warnings summary.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gapwatch.config import Config
from gapwatch.detector import GapDetector
from gapwatch.export.prometheus import start_exporter
from gapwatch.models import Gap, Notice, StateChange
from gapwatch.record import read_any
from gapwatch.session import Session
from gapwatch.store import SeriesStore

TRACE = Path(__file__).parent / "data" / "pageable.csv"
PROMETHEUS = shutil.which("prometheus")
SKIP_REASON = ("SKIPPED LOUDLY: no `prometheus` binary; the exporter was NOT checked against a "
               "real Prometheus (install it: apt-get install -y prometheus)")
if PROMETHEUS is None:
    warnings.warn(SKIP_REASON, stacklevel=1)
pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason=SKIP_REASON)

#: Prometheus applies service-discovery updates every 5 s, so the first scrape comes ~5 s after
#: start; every wait below is bounded well above that.
WAIT_S = 30.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PromServer:
    def __init__(self, base: str, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.base, self.proc, self.log = base, proc, log

    def query(self, expr: str) -> list[dict[str, object]]:
        url = f"{self.base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=5) as resp:
            body = json.load(resp)
        assert body["status"] == "success", body
        result: list[dict[str, object]] = body["data"]["result"]
        return result

    def wait_for(self, expr: str, ok: Callable[[list[dict[str, object]]], bool]) -> list[
            dict[str, object]]:
        deadline = time.monotonic() + WAIT_S
        result: list[dict[str, object]] = []
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"prometheus exited: {self.log.read_text()[-2000:]}")
            result = self.query(expr)
            if ok(result):
                return result
            time.sleep(0.1)
        pytest.fail(f"Prometheus never satisfied {expr!r} within {WAIT_S}s; last: {result}")


def _value(result: list[dict[str, object]]) -> float:
    assert len(result) == 1, result
    value = result[0]["value"]
    assert isinstance(value, list)
    return float(value[1])


@pytest.fixture()
def prometheus(tmp_path: Path) -> Iterator[Callable[[str], PromServer]]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(target: str) -> PromServer:
        assert PROMETHEUS is not None
        (tmp_path / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 100ms\n  scrape_timeout: 100ms\n"
            "scrape_configs:\n  - job_name: gapwatch\n    static_configs:\n"
            f"      - targets: ['{target}']\n"
        )
        port = _free_port()
        log = tmp_path / "prometheus.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
                 f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{port}"],
                stdout=out, stderr=subprocess.STDOUT,
            )
        procs.append(proc)
        server = PromServer(f"http://127.0.0.1:{port}", proc, log)
        _wait_ready(server)
        return server

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def _wait_ready(server: PromServer) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            pytest.fail(f"prometheus exited: {server.log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{server.base}/-/ready", timeout=1) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.05)
    pytest.fail(f"prometheus not ready within {WAIT_S}s")


def test_prometheus_scrapes_the_breakdown_and_the_gap_counters(
        prometheus: Callable[[str], PromServer]) -> None:
    recording = read_any(TRACE)
    header = recording.header
    config = Config()
    store = SeriesStore(header.gpus, header.period_ms / 1000.0)
    session = Session(header, store, GapDetector(config.detector, header.gpus))
    states: list[str] = []

    def on_event(ev: Gap | StateChange | Notice) -> None:
        if isinstance(ev, StateChange):
            states.append(ev.state)

    session.subscribe(on_event)
    handle = start_exporter("127.0.0.1:0", session)
    try:
        prom = prometheus(handle.address)
        records = iter(recording.records)
        for record in records:
            session.on_record(record)
            if states and states[-1] == "BREAKDOWN":
                break
        assert states and states[-1] == "BREAKDOWN", f"the trace never broke down: {states}"

        # Held in BREAKDOWN: Prometheus must see it through the gauge and the state set.
        prom.wait_for('gapwatch_gpu_breakdown{job="gapwatch",gpu="0"} == 1', lambda r: len(r) == 1)
        got = prom.query('gapwatch_gpu_chain_state{gpu="0",state="BREAKDOWN"}')
        assert _value(got) == 1.0

        for record in records:
            session.on_record(record)
        session.close()
        closed = [g for g in store.snapshot().gaps
                  if g.kind == "pcie_starved" and not g.is_open and not g.retracted]
        assert len(closed) >= 2  # the pageable trace's failure: several starved gaps

        expr = 'gapwatch_gaps_total{job="gapwatch",gpu="0",kind="pcie_starved"}'
        prom.wait_for(expr, lambda r: len(r) == 1 and _value(r) == len(closed))
        seconds = prom.query('gapwatch_gap_seconds_total{gpu="0",kind="pcie_starved"}')
        assert _value(seconds) == pytest.approx(sum(g.duration_s for g in closed), rel=1e-6)
        # The breakdown was real in the scraped history, and has ended by the end of the trace.
        assert _value(prom.query("max_over_time(gapwatch_gpu_breakdown[5m])")) == 1.0
        prom.wait_for('gapwatch_gpu_breakdown{gpu="0"} == 0', lambda r: len(r) == 1)
        assert _value(prom.query('up{job="gapwatch"}')) == 1.0
    finally:
        handle.stop()
