"""`gapwatch fleet` against a real Prometheus scraping three real gapwatch boxes on loopback.

Three `gapwatch record` processes (the simulator's chained, pageable and host-stall scenarios,
fast) serve /metrics; a Prometheus (Debian package `prometheus`) scrapes them every 250 ms; then
`gapwatch fleet --once --json` must list all three with the state and cause each scenario has,
and after one box is killed, must still list it, stale, saying why (Prometheus's targets API:
"scrape failed: connection refused"). Without a `prometheus` binary the test
is skipped and says so in the warnings summary.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.request
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from faults import Lines, free_port, metrics_port, scrape, wait_for

from gapwatch.cli import main
from gapwatch.fleet.client import PromClient
from gapwatch.fleet.queries import required_names
from gapwatch.fleet.rows import FleetOptions, FleetRow, refresh

PROMETHEUS = shutil.which("prometheus")
SKIP_REASON = ("SKIPPED LOUDLY: no `prometheus` binary; `gapwatch fleet` was NOT checked "
               "against a real Prometheus (install it: apt-get install -y prometheus)")
if PROMETHEUS is None:
    warnings.warn(SKIP_REASON, stacklevel=1)
pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason=SKIP_REASON)

#: Each scenario and what its box must show: state, and the cause of its verdict.
EXPECTED = {
    "chained": ("CHAINED", "none"),
    "pageable": ("BREAKDOWN", "pinned_pool"),  # its pool checkouts FAIL (pipeline.rs:302)
    "host-stall": ("GAPS", "waits_on_synthesis"),
}
#: 8x: the detector's 30 s window fills in ~4 s of wall time, before Prometheus's first scrape
#: (~5 s after it starts); faster only burnt CPU simulating minutes nobody looked at.
SPEED = "8"


class Box:
    def __init__(self, scenario: str, port: int) -> None:
        self.scenario = scenario
        self.instance = f"127.0.0.1:{port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gapwatch", "record", "--source", f"sim:{scenario}",
             "--speed", SPEED, "--quiet", "--prometheus", self.instance],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.err = Lines(self.proc.stderr)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


class Prometheus:
    """Prometheus scraping `targets` every 250 ms, each scrape given 250 ms: a box on a loaded
    CI machine may take over 100 ms to answer, and a scrape that times out makes it stale (up
    0), which is the point of the test only for the box it kills. Its first scrape comes ~5 s
    after it starts (it applies target updates every 5 s), so it starts first and the boxes
    start meanwhile:
    their ports are picked before they are bound (another process could take one in between:
    the box then fails to start, and the test says so)."""

    def __init__(self, targets: list[str], tmp_path: Path) -> None:
        assert PROMETHEUS is not None
        (tmp_path / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 250ms\n  scrape_timeout: 250ms\n"
            "scrape_configs:\n  - job_name: gapwatch\n    static_configs:\n"
            f"      - targets: [{', '.join(repr(t) for t in targets)}]\n")
        port = free_port()
        self.log = tmp_path / "prometheus.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
                 f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{port}"],
                stdout=out, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{port}"

    def ready(self) -> bool:
        assert self.proc.poll() is None, self.log.read_text()[-2000:]
        try:
            with urllib.request.urlopen(f"{self.base}/-/ready", timeout=1) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


@pytest.fixture
def farm(tmp_path: Path) -> Iterator[tuple[dict[str, Box], str]]:
    ports = {name: free_port() for name in EXPECTED}
    prom = Prometheus([f"127.0.0.1:{p}" for p in ports.values()], tmp_path)
    boxes: dict[str, Box] = {}
    try:
        boxes.update({name: Box(name, port) for name, port in ports.items()})
        for box in boxes.values():
            assert metrics_port(box.err) == int(box.instance.rpartition(":")[2]), box.err.text()
        wait_for("prometheus to be ready", prom.ready)
        yield boxes, prom.base
    finally:
        for box in boxes.values():
            box.stop()
        prom.stop()


def _by_instance(rows: list[FleetRow]) -> dict[str, FleetRow]:
    return {r.instance: r for r in rows}


def _fleet_once(base: str) -> dict[str, object]:
    """`gapwatch fleet --once --json` as scripts run it (a process of its own)."""
    done = subprocess.run([sys.executable, "-m", "gapwatch", "fleet", "--prometheus", base,
                           "--once", "--json"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    doc: dict[str, object] = json.loads(done.stdout)
    return doc


@pytest.mark.slow
def test_fleet_lists_three_boxes_with_their_states_and_causes_and_keeps_a_dead_one_stale(
        farm: tuple[dict[str, Box], str], capsys: pytest.CaptureFixture[str]) -> None:
    boxes, prometheus = farm
    client = PromClient(prometheus)
    opts = FleetOptions()

    def all_as_expected() -> bool:
        rows = _by_instance(refresh(client, opts).rows)
        return all((r := rows.get(b.instance)) is not None and not r.stale
                   and (r.state, r.cause) == EXPECTED[name] for name, b in boxes.items())

    wait_for("Prometheus to hold every box in its scenario's state", all_as_expected, 40)
    # Every series the fleet needs is on a real /metrics page (the optional ones may not be).
    page = {name.partition("{")[0] for name in scrape(int(boxes["pageable"].instance.rpartition(
        ":")[2]))}
    assert required_names() <= page, required_names() - page

    # The command as a script runs it. The simulated boxes run on: under a loaded CI box a
    # scenario's state can waver between two scrapes (host-stall read IDLE once, on 2 cores
    # with a day's report beside the suite), so the command is asked again until it shows
    # them; what is pinned is that it can, and what it prints then.
    shown: list[dict[str, object]] = []

    def once_as_expected() -> bool:
        shown[:] = [_fleet_once(prometheus)]
        got = {r["instance"]: r for r in shown[0]["rows"]}  # type: ignore[attr-defined]
        # The pageable box's idle seconds are Prometheus's `increase` over 5 minutes: they
        # show once two scrapes have seen its gap-seconds counter grow, which on a loaded box
        # can come a scrape after its state does.
        pageable = got.get(boxes["pageable"].instance)
        return len(got) == 3 and all(
            (got[b.instance]["state"], got[b.instance]["cause"], got[b.instance]["stale"])
            == (*EXPECTED[name], False) for name, b in boxes.items() if b.instance in got) \
            and pageable is not None and pageable["idle_s_5m"].get("pcie_starved", 0) > 0

    wait_for("`fleet --once --json` to show every box in its scenario's state",
             once_as_expected, 30)
    doc = shown[0]
    rows = {r["instance"]: r for r in doc["rows"]}  # type: ignore[attr-defined]
    for box in boxes.values():
        row = rows[box.instance]
        assert row["gpu"] == "0" and row["up"] == 1.0 and row["age_s"] < 60
    assert rows[boxes["pageable"].instance]["idle_s_5m"].get("pcie_starved", 0) > 0
    assert rows[boxes["host-stall"].instance]["setting"] == "[pipeline] max_parallel_synthesis"
    # Worst first: the breakdown leads.
    assert doc["rows"][0]["instance"] == boxes["pageable"].instance  # type: ignore[index]
    assert doc["errors"] == {}

    boxes["chained"].stop()
    dead = boxes["chained"].instance
    # Stale, and saying why: the scrape the kill cut short says "connection reset by peer",
    # the ones after it (every 250 ms) "connection refused" (a client of its own each look:
    # one client keeps a targets answer for TARGETS_FOR_S).
    wait_for("the killed box to turn stale, its scrape refused",
             lambda: (r := _by_instance(refresh(PromClient(prometheus), opts).rows).get(dead))
             is not None and r.stale is True and r.down_why == "scrape failed: connection refused", 20)
    assert main(["fleet", "--prometheus", prometheus, "--once", "--json"]) == 0  # in-process
    after = {r["instance"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert set(after) == set(rows)  # nobody dropped
    assert after[dead]["stale"] is True and after[dead]["up"] == 0.0
    assert after[dead]["state"] == "CHAINED"  # its last known state, kept
    # Why, in Prometheus's words (its targets API): the killed box's port is closed.
    assert after[dead]["down_why"] == "scrape failed: connection refused"
    assert after[dead]["down_scrape_url"] == f"http://{dead}/metrics"
    assert after[boxes["pageable"].instance]["stale"] is False
    assert after[boxes["pageable"].instance]["down_why"] is None
