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
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from faults import free_port

from gapwatch.config import Config
from gapwatch.core.detector import GapDetector
from gapwatch.core.models import Gap, Notice, StateChange
from gapwatch.engine.session import Session
from gapwatch.engine.store import SeriesStore
from gapwatch.offline.report import build_report
from gapwatch.sinks.prometheus import start_exporter
from gapwatch.sources.files import read_any

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


class Ports:
    """The two exporters Prometheus scrapes: one in-process, one `gapwatch record` process.
    Picked before they are bound (Prometheus's static targets are written before the exporters
    start; file-based discovery would cost each test its 5 s refresh)."""

    def __init__(self) -> None:
        self.in_process = free_port()
        self.cli = free_port()


@pytest.fixture(scope="module")
def ports() -> Ports:
    return Ports()


@pytest.fixture(scope="module")
def prom(ports: Ports, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromServer]:
    """One Prometheus for the module (its first scrape costs ~5 s), scraping both targets."""
    assert PROMETHEUS is not None
    tmp = tmp_path_factory.mktemp("prometheus")
    (tmp / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 100ms\n  scrape_timeout: 100ms\n"
        "scrape_configs:\n  - job_name: gapwatch\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{ports.in_process}', '127.0.0.1:{ports.cli}']\n"
    )
    port = free_port()
    log = tmp / "prometheus.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={tmp / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=out, stderr=subprocess.STDOUT,
        )
    server = PromServer(f"http://127.0.0.1:{port}", proc, log)
    try:
        _wait_ready(server)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.mark.slow
def test_prometheus_scrapes_the_breakdown_and_the_gap_counters(prom: PromServer,
                                                               ports: Ports) -> None:
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
    handle = start_exporter(f"127.0.0.1:{ports.in_process}", session)
    inst = f'instance="{handle.address}"'
    try:
        records = iter(recording.records)
        for record in records:
            session.on_record(record)
            if states and states[-1] == "BREAKDOWN":
                break
        assert states and states[-1] == "BREAKDOWN", f"the trace never broke down: {states}"

        # Held in BREAKDOWN: Prometheus must see it through the gauge and the state set.
        prom.wait_for(f'gapwatch_gpu_breakdown{{{inst},gpu="0"}} == 1', lambda r: len(r) == 1)
        got = prom.query(f'gapwatch_gpu_chain_state{{{inst},gpu="0",state="BREAKDOWN"}}')
        assert _value(got) == 1.0

        for record in records:
            session.on_record(record)
        session.close()
        closed = [g for g in store.snapshot().gaps
                  if g.kind == "pcie_starved" and not g.is_open and not g.retracted]
        assert len(closed) >= 2  # the pageable trace's failure: several starved gaps

        expr = f'gapwatch_gaps_total{{{inst},gpu="0",kind="pcie_starved"}}'
        prom.wait_for(expr, lambda r: len(r) == 1 and _value(r) == len(closed))
        seconds = prom.query(f'gapwatch_gap_seconds_total{{{inst},gpu="0",kind="pcie_starved"}}')
        assert _value(seconds) == pytest.approx(sum(g.duration_s for g in closed), rel=1e-6)
        # The breakdown was real in the scraped history, and has ended by the end of the trace.
        assert _value(prom.query(f"max_over_time(gapwatch_gpu_breakdown{{{inst}}}[5m])")) == 1.0
        prom.wait_for(f'gapwatch_gpu_breakdown{{{inst},gpu="0"}} == 0', lambda r: len(r) == 1)
        assert _value(prom.query(f'up{{job="gapwatch",{inst}}}')) == 1.0
    finally:
        handle.stop()


def _with_busy_tail(trace: Path, out: Path, seconds: float) -> Path:
    """`trace` with `seconds` of a busy GPU after its last row: its last gap closes, then the
    replay goes on long enough for many scrapes to see it (it ended ~0.6 s after the last gap
    closed, and a scrape missed under load was a test failure, not gapwatch's)."""
    lines = trace.read_text().splitlines()
    last = float(lines[-1].split(",", 1)[0])
    tail = [f"{last + 0.05 * i:.3f},0,95.0,100,20000000000,1000000,0.7,0.0"
            for i in range(1, int(seconds / 0.05) + 1)]
    out.write_text("\n".join([*lines, *tail]) + "\n")
    return out


@pytest.mark.slow
def test_prometheus_scrapes_gapwatch_record_replaying_the_trace(prom: PromServer,
                                                                ports: Ports,
                                                                tmp_path: Path) -> None:
    """The command line as users run it: `gapwatch record --source replay:FILE --speed 6
    --prometheus HOST:PORT`, scraped while it replays, then queried over its history. At 6x the
    35 s trace takes ~6 s and its breakdown lasts ~2 s; 15 s of a busy GPU after it leave
    ~2.5 s (25 scrapes at 100 ms each) after its last gap closes."""
    trace = _with_busy_tail(TRACE, tmp_path / "pageable-busy-tail.csv", 15.0)
    expected = build_report(trace, Config()).gaps
    starved = sum(1 for g in expected if g.kind == "pcie_starved")
    inst = f'instance="127.0.0.1:{ports.cli}"'
    # Wait until Prometheus is scraping that target (down for now), so nothing is missed.
    prom.wait_for(f"up{{{inst}}}", lambda r: len(r) == 1)
    done = subprocess.run(
        [sys.executable, "-m", "gapwatch", "record", "--source", f"replay:{trace}", "--speed", "6",
         "--quiet", "--prometheus", f"127.0.0.1:{ports.cli}"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "pcie_starved" in done.stderr  # its own summary agrees
    breakdown = prom.query(f"max_over_time(gapwatch_gpu_breakdown{{{inst}}}[5m])")
    assert _value(breakdown) == 1.0
    gaps = prom.query(f'max_over_time(gapwatch_gaps_total{{{inst},kind="pcie_starved"}}[5m])')
    assert _value(gaps) == starved
    sources = prom.query(f"gapwatch_gpu_info{{{inst}}}[5m]")
    assert sources and sources[0]["metric"]["sm_source"] == "trace"  # type: ignore[index]


def test_every_dashboard_query_parses_in_prometheus(prom: PromServer) -> None:
    """Grafana would show an error on a panel whose PromQL Prometheus rejects."""
    dashboard = Path(__file__).resolve().parent.parent / "deploy" / "grafana"
    dash = json.loads((dashboard / "gapwatch-dashboard.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert exprs
    for expr in exprs:
        prom.query(expr.replace("$instance", ".*"))  # raises on HTTP 400 (bad PromQL)
