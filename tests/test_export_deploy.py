"""deploy/: the alert rules and the Grafana dashboard only use metrics the exporter serves.

A renamed metric would otherwise leave a rule that never fires and a panel that stays empty.
The exporter is scraped after a session has seen every kind of record, so every family exists.
"""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from gapwatch.base.watch import ThreadHealth
from gapwatch.core.models import (
    Gap,
    GpuHealth,
    GpuInfo,
    GpuSample,
    HostSample,
    ProofTiming,
    ProverEvent,
    SessionHeader,
    StateChange,
)
from gapwatch.core.verdict import WindowNow
from gapwatch.engine.session import Session
from gapwatch.engine.store import SeriesStore
from gapwatch.sinks.prometheus import start_exporter
from gapwatch.sinks.recorder import RecordingStatus

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
DASHBOARD = DEPLOY / "grafana" / "gapwatch-dashboard.json"
NAME = re.compile(r"\bgapwatch_[a-z0-9_]+")


def _served_names() -> set[str]:
    header = SessionHeader(gapwatch_version="t", host="box", source="sim", started_wall_s=0.0,
                           started_mono_ns=0, period_ms=100.0,
                           gpus=[GpuInfo(index=0, link_bytes_per_s=63e9)])
    store = SeriesStore(header.gpus, 0.1)
    session = Session(header, store)

    class Status:  # what the runtime reports, with a recording (its families only exist then)
        logs = {"/var/log/cuzk.log": "following"}
        log_counters = {"lines": 1}
        recording = RecordingStatus(
            path="gw.jsonl.gz", state="failing", error="No space left on device",
            failing_since_wall_s=0.0, write_errors=1, records_written=1, records_pending=1,
            records_dropped=0, bytes_written=1)
        threads = [ThreadHealth("gapwatch-sampler", "running", 0, None)]

    handle = start_exporter(":0", session, status_fn=Status)
    try:
        session.on_gpu_samples([GpuSample(0, 1, 1.0, 100, 50.0, 60.0, 1e9, 1e8, lateness_ns=1)])
        # Two seconds of readings with GPU-Util beside SM activity: its window figure exists
        # only from a second of them on.
        session.on_gpu_samples([GpuSample(0, i * 10**8, 1.0 + i / 10, 10**8, 50.0, 60.0, 1e9, 1e8)
                                for i in range(1, 21)])
        # A health reading held down by its power cap (every health family exists then).
        session.on_record(GpuHealth(0, 1, 1.0, memory_used_bytes=1 << 30,
                                    memory_total_bytes=141 << 30, temperature_c=50.0,
                                    power_w=400.0, power_limit_w=700.0, sm_clock_mhz=1980,
                                    memory_clock_mhz=2619, clocks_event_mask=0x004,
                                    ecc_corrected_total=0, ecc_uncorrected_total=0))
        session.on_record(HostSample(1, 1.0, 100, 40.0, 1 << 30, 0, 10.0, 5.0, 1.0, 0.1,
                                          0.01, 2.0, 1e10, psi_cpu_some_share=0.3,
                                          psi_cpu_some_avg10=25.0))
        store.set_state(StateChange(0, 1, 1.0, "BREAKDOWN", 0.5))
        store.upsert_gap(Gap(1, 0, "pcie_starved", 0, 0.0, None, None, 0.5, 1e9, None, 63e9))
        # A closed gap inside the chaining window: the verdict's payoff exists only then.
        store.upsert_gap(Gap(2, 0, "pcie_starved", 0, 0.2, 1, 0.9, 0.7, 1e9, None, 63e9))
        # Its PCIe bytes need 29 s of the 30 s window: the link, not the gaps, sets the payoff
        # (the link-limit gauge exists only then).
        store.set_window(WindowNow(gpu=0, t_mono_ns=1, end_wall_s=1.0, window_s=30.0,
                                   pcie_rx_bytes=29 * 63e9, link_bytes_per_s=63e9))
        # A completed WinningPoSt: the last-latency gauge exists only after the first. Prover
        # events are derived (the session takes none from outside): handed to its sinks as
        # the prover's watcher hands them.
        post = ProverEvent(1.0, "proof", "info", "WinningPoSt on time", job_id="winpost-1",
                           proof=ProofTiming("winning-post", total_s=3.9, deadline_s=30.0))
        for sink in session.sinks:
            sink.on_record(post)
        # A late one behind an evicted SRS, held by the store: the PoSt advice's family
        # (`gapwatch_proof_advice_info`, the fleet's HEADLINE) exists only once one went wrong.
        store.append(ProverEvent(2.0, "proof", "error", "WinningPoSt late", job_id="winpost-2",
                                 proof=ProofTiming("winning-post", total_s=35.0,
                                                   deadline_s=30.0, verdict="late",
                                                   setting="[memory] eviction_min_idle: raise it",
                                                   cause="srs_evicted")))
        with urllib.request.urlopen(handle.url, timeout=5) as resp:
            text = resp.read().decode()
    finally:
        handle.stop()
    return {s.name for fam in text_string_to_metric_families(text) for s in fam.samples}


def _dashboard_exprs() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]


def test_rules_and_dashboard_use_only_served_metric_names() -> None:
    served = _served_names()
    used = set(NAME.findall((DEPLOY / "prometheus" / "gapwatch.rules.yml").read_text()))
    for expr in _dashboard_exprs():
        used |= set(NAME.findall(expr))
    assert used, "no gapwatch metric referenced at all"
    assert used - served == set()


def test_dashboard_is_importable_json_with_unique_panel_ids() -> None:
    dash = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    assert dash["uid"] and dash["title"]
    names = {v["name"] for v in dash["templating"]["list"]}
    assert {"datasource", "instance"} <= names
    assert all("$instance" in e for e in _dashboard_exprs())



def test_every_metric_the_fleet_view_queries_is_served() -> None:
    """`gapwatch fleet` reads only what a gapwatch exports: a renamed metric would leave a
    column at "-" on every box for ever."""
    from gapwatch.fleet.queries import metric_names

    served = _served_names()
    assert metric_names() <= served, sorted(metric_names() - served)


def test_the_hardware_error_alerts_fire_on_the_kinds_gapwatch_calls_gpu_errors() -> None:
    """The rules' kinds are written out in YAML; `core.health.GPU_ERROR_KINDS` is the rule the
    footer, `--on-event` and the fleet's HLTH column read. A kind added to one and not the
    other would page on what the pane never raises, or the reverse. A GPU lost and a failed
    row remap are states (`GapwatchGpuLost`, `GapwatchGpuRowRemapFailed`: read by their count,
    not its increase), the others events (`GapwatchGpuHardwareError`)."""
    from gapwatch.core.health import GPU_ERROR_KINDS, GPU_STATE_KINDS

    rules = (DEPLOY / "prometheus" / "gapwatch.rules.yml").read_text()
    events = re.search(r"alert: GapwatchGpuHardwareError\n\s+expr: .*kind=~\"([^\"]+)\"", rules)
    assert events is not None and "increase(" in events.group(0)
    states = {m.group(1) for m in re.finditer(
        r"alert: GapwatchGpu(?:Lost|RowRemapFailed|RowRemapPending)\n\s+expr: max by \([^)]*\) \("
        r"gapwatch_gpu_hardware_events_total\{kind=\"([^\"]+)\"\}\) > 0", rules)}
    assert states == set(GPU_STATE_KINDS)
    assert set(events.group(1).split("|")) | (states & GPU_ERROR_KINDS) == set(GPU_ERROR_KINDS)
    assert not set(events.group(1).split("|")) & GPU_STATE_KINDS


def test_the_dashboards_gpu_errors_panel_shows_every_kind_and_reads_the_states_by_count() -> None:
    """The panel writes the kinds out in PromQL: a kind gapwatch adds (a row remap) would
    never show there, and a state read by `increase()` would miss one true since the start."""
    from gapwatch.core.health import GPU_STATE_KINDS
    from gapwatch.core.models import HARDWARE_EVENT_KINDS

    dash = json.loads(DASHBOARD.read_text())
    [expr] = [t["expr"] for p in dash["panels"] if p["title"] == "GPU errors (24h) and states"
              for t in p["targets"]]
    events, states = (set(m.split("|")) for m in re.findall(r'kind=~"([^"]+)"', expr))
    assert "increase(" in expr.split(" or ")[0] and "increase(" not in expr.split(" or ")[1]
    assert states == set(GPU_STATE_KINDS)
    assert events | states == set(HARDWARE_EVENT_KINDS) and not events & states


def test_the_throttle_alert_and_the_fleets_t_read_the_reasons_gapwatch_calls_held_down() -> None:
    """The fleet's `T` read every slowing reason, the power cap too: a loaded H200 sits at its
    cap in most readings (40 of 53 under the chained load), so `T` was on every busy box while
    `GapwatchGpuThrottled` (heat and hardware slowdowns) stayed quiet. One set for both,
    `core.health.HELD_DOWN_REASONS`, which `compare` reads too."""
    from gapwatch.core.health import HELD_DOWN_REASONS
    from gapwatch.fleet.queries import QUERIES

    rules = (DEPLOY / "prometheus" / "gapwatch.rules.yml").read_text()
    alert = re.search(r"alert: GapwatchGpuThrottled\n\s+expr: .*reason=~\"([^\"]+)\"", rules)
    assert alert is not None and set(alert.group(1).split("|")) == HELD_DOWN_REASONS
    [fleet] = [q.promql for q in QUERIES if q.field == "throttled"]
    found = re.search(r'reason=~\\?"([^"\\]+)', fleet)
    assert found is not None and set(found.group(1).split("|")) == HELD_DOWN_REASONS
    # The Grafana panel too: it read every reason but three, the power cap a steady line.
    dash = json.loads(DASHBOARD.read_text())
    [panel] = [t["expr"] for p in dash["panels"] if p["title"] == "Clocks held down"
               for t in p["targets"]]
    found = re.search(r'reason=~"([^"]+)"', panel)
    assert found is not None and set(found.group(1).split("|")) == HELD_DOWN_REASONS
