"""The prover's status through the whole session: `--cuzk-status` and `[cuzk]`, the simulator
serving and polling its own endpoint, recordings and replay, the report, the partition table
from status where logs are missing, and `/metrics`."""

from __future__ import annotations

import dataclasses
import json
import urllib.request
from pathlib import Path

import pytest
from cuzk_fakes import WAITS_ON_SYNTHESIS
from faults import wait_for
from prometheus_client.parser import text_string_to_metric_families

from evaluation.simulate import simulate
from gapwatch.cli import main
from gapwatch.config import Config, ConfigError, build_config, load_config
from gapwatch.core.detector import GapDetector
from gapwatch.core.models import Gap, ProverStatus
from gapwatch.cuzk.partitions import derive_timeline
from gapwatch.cuzk.prover import CuzkProver, view_of
from gapwatch.cuzk.status import parse_status
from gapwatch.engine.runtime import build_runtime
from gapwatch.engine.session import Session
from gapwatch.logs.parse import LogParser
from gapwatch.offline.report import build_report, to_json
from gapwatch.sinks.prometheus import start_exporter
from gapwatch.sinks.recorder import write_recording
from gapwatch.sources import SourceUnavailable
from gapwatch.sources.cuzk_status import PollerStatus
from gapwatch.sources.recording import read_recording


def test_status_urls_take_one_canonical_form_and_bad_ones_name_the_key() -> None:
    cfg = build_config({"cuzk": {"status_url": "127.0.0.1:9821"}})
    assert cfg.cuzk.status_url == ["http://127.0.0.1:9821/status"]
    cfg = build_config({"cuzk": {"status_url": ["http://h:1/status", "h:1", "http://h:2/x"]}})
    assert cfg.cuzk.status_url == ["http://h:1/status", "http://h:2/x"]
    for bad in ("https://h:1/status", "http://h/status", "h:port"):
        with pytest.raises(ConfigError, match="cuzk.status_url"):
            build_config({"cuzk": {"status_url": bad}})
    with pytest.raises(ConfigError, match="cuzk.status_period_s"):
        build_config({"cuzk": {"status_period_s": 0.01}})  # the floor: 0.1 s


def test_a_bad_cuzk_status_flag_stops_record_with_a_message(capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    assert main(["record", "--source", "sim:chained", "--speed", "0", "--duration", "1",
                 "--out", "/dev/null", "--cuzk-status", "ftp://x:1/status"]) == 2
    assert "only http://" in capsys.readouterr().err


def test_polling_a_replay_or_virtual_time_is_refused() -> None:
    cfg = build_config({"cuzk": {"status_url": "127.0.0.1:9821"}})
    with pytest.raises(SourceUnavailable, match="recorded snapshots"):
        build_runtime(cfg, "replay:tests/data/pageable.csv")
    with pytest.raises(SourceUnavailable, match="virtual time"):
        build_runtime(cfg, "sim:host-stall", speed=0)


def _gaps(rt_or_session: object) -> list[Gap]:
    store = rt_or_session.store  # type: ignore[attr-defined]
    return [g for g in store.snapshot().gaps if not g.is_open]


#: The synthesis wait named from a polled snapshot, with the worker count the log gave.
SAID_FROM_THE_LOG = ("2 of 2 synthesis workers busy (every synthesis worker busy; workers: "
                     "synth_worker_count in the log)")


def test_the_simulator_serves_its_status_and_the_runtime_polls_it_over_http() -> None:
    """Real time at 10x, until what is checked has happened (four gaps closed, three answers,
    a gap named from a snapshot with the log's worker count), not for a fixed 30 s: on a loaded
    box it takes longer instead of failing. What this test owns is the HTTP path (served,
    polled, tailed, named); the detector's resolution is tested in virtual time. So it samples
    every 400 ms of simulated time (40 ms real, not 10 ms: a busy box left 10 ms ticks late and
    skipped, and the holes cost gaps or changed their kind), and the poll's deadline is the
    longest the config allows (a loaded box answered a poll in more than the default 0.5 s: a
    `timeout`, the poller doing its job, not the server failing)."""
    cfg = build_config({"cuzk": {"status_timeout_s": 10, "status_period_s": 0.2},
                        "sampler": {"period_ms": 400}})
    rt = build_runtime(cfg, "sim:host-stall", speed=10)
    assert rt.sim_status_server is not None and rt.pollers[0].prover == "sim"

    def done() -> bool:
        gaps = _gaps(rt)
        return (len(gaps) >= 4 and rt.status().provers[0].ok >= 3
                and any(SAID_FROM_THE_LOG in g.prover_evidence for g in gaps))

    rt.start()
    try:
        wait_for("four gaps closed, three polls answered, the synthesis wait named", done, 120)
    finally:
        rt.stop()
    (poller,) = rt.status().provers
    assert poller.url == rt.sim_status_server.url and poller.ok >= 3 and poller.errors == {}
    snap = rt.store.snapshot()
    # Upstream's semantics: max_concurrent is the 512 GiB budget over 9 GiB; the two synthesis
    # workers are what the log's `starting pipeline` line says.
    assert snap.provers["sim"].synthesis_max == 56 and view_of(snap.pipeline).synth_workers == 2
    gaps = _gaps(rt)
    assert {g.kind for g in gaps} == {"host_stall"}
    named = [g for g in gaps if g.prover_cause == "waits_on_synthesis"]
    # At 10x a snapshot is up to a poll (2 s of simulated time) old, and the simulator serves
    # /status as of its last sample: on a loaded box one showed the workers still proving as a
    # gap began ("inside_workers", 1 failure in a loaded CI run). Which cause each gap gets is
    # pinned in virtual time (test_snapshots_are_recorded_and_a_replay_names_the_same_causes,
    # test_cuzk_upstream); here, no cause the host-stall simulator cannot show, and the wait named.
    assert {g.prover_cause for g in gaps} <= {"waits_on_synthesis", "inside_workers", None}
    assert named
    # The worker count comes from the followed log: a snapshot judged before the tailer read
    # the startup line (a loaded machine) says it is unknown, never another number.
    assert all(SAID_FROM_THE_LOG in g.prover_evidence
               or any("synthesis workers cuzk runs is unknown" in e for e in g.prover_evidence)
               for g in named)


def test_the_pageable_breakdown_is_the_pinned_pool_failing_while_both_workers_prove() -> None:
    """The simulated pageable cuzk takes upstream's path: after the first wave its checkouts
    FAIL (pipeline.rs:302), so the log names the cause; /status shows both workers proving."""
    cfg = build_config({"cuzk": {"status_period_s": 0.5}})
    rt = build_runtime(cfg, "sim:pageable", speed=0, duration_s=40)
    rt.start()
    try:
        assert rt.wait(60)
    finally:
        rt.stop()
    starved = [g for g in _gaps(rt) if g.kind == "pcie_starved"]
    assert len(starved) >= 5 and {g.prover_cause for g in starved} == {"pinned_pool"}
    assert all(g.prover_states[-1].workers == "PP" for g in starved)


def test_snapshots_are_recorded_and_a_replay_names_the_same_causes(tmp_path: Path) -> None:
    out = tmp_path / "hs.jsonl.gz"
    rt = build_runtime(Config(), "sim:host-stall", speed=0, duration_s=30, record_path=str(out))
    rt.start()
    assert rt.wait(60)
    rt.stop()
    live = [(g.gap_id, g.prover_cause, g.hint) for g in _gaps(rt)]
    statuses = [r for r in read_recording(out).records if isinstance(r, ProverStatus)]
    assert len(statuses) == 30 and statuses[0] == rt.store.snapshot().prover_statuses[0]
    again = build_runtime(Config(), f"replay:{out}", speed=0)
    again.start()
    assert again.wait(60)
    again.stop()
    assert [(g.gap_id, g.prover_cause, g.hint) for g in _gaps(again)] == live
    report = to_json(build_report(out, Config()))
    assert [g["prover_cause"] for g in report["gaps"]] == [c for _, c, _ in live]
    assert report["gpus"][0]["gaps_by_prover_cause"]["waits_on_synthesis"]["count"] == len(live)


def test_the_partition_table_comes_from_status_where_the_logs_are_missing(tmp_path: Path
                                                                          ) -> None:
    res = simulate("pageable", duration_s=30, status_period_s=0.5)
    statuses = [r for r in res.records if isinstance(r, ProverStatus)]
    parser = LogParser()
    events = [e for stream, text in res.log_lines for e in parser.parse_line(text, stream)]
    from_logs = {(p.job_id, p.partition): p for p in derive_timeline(events).partitions}
    from_status = derive_timeline([], statuses)
    assert len(from_status.partitions) >= 0.9 * len(from_logs)
    done = [p for p in from_status.partitions if "done" in p.states_seen]
    assert len(done) >= len(from_status.partitions) - 2  # the last ones may still be on a GPU
    for p in done:
        assert p.source == "status"
        logged = from_logs[(p.job_id, p.partition)]
        # The same partition, the same figures: gpu_ms and synth_ms from the prover's own
        # counters, its worker from the worker that named it.
        assert (p.timeline_gpu_ms, p.synth_ms, p.worker) == \
            (logged.timeline_gpu_ms, logged.synth_ms, logged.worker)
    # A recording without logs: `parse --timeline --recording` and `report` use the status.
    rec = tmp_path / "r.jsonl"
    write_recording(rec, res.header, res.records)
    report = to_json(build_report(rec, Config()))
    assert report["partitions"]["count"] == len(from_status.partitions)
    assert {i["source"] for i in report["partitions"]["items"]} == {"status"}
    assert main(["parse", "--timeline", "--recording", str(rec)]) == 0


def test_logs_keep_their_figures_and_status_fills_what_they_lack() -> None:
    res = simulate("pageable", duration_s=20, status_period_s=0.5)
    statuses = [r for r in res.records if isinstance(r, ProverStatus)]
    parser = LogParser()
    events = [e for stream, text in res.log_lines for e in parser.parse_line(text, stream)]
    # Logs without their SYNTH_END lines: synth_ms only the status knows.
    events = [e for e in events if e.name != "SYNTH_END"]
    merged = derive_timeline(events, statuses)
    assert {p.source for p in merged.partitions} == {"log+status"}
    assert all(p.synth_ms is not None and p.mutex_held_ms is not None
               for p in merged.partitions if p.gpu_end_s is not None)


def _scrape(url: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def test_metrics_say_partitions_workers_synthesis_and_how_polling_goes() -> None:
    res = simulate("chained", duration_s=2)
    store_gpus = list(res.header.gpus)
    from gapwatch.engine.store import SeriesStore

    # The operator's `[cuzk] max_parallel_synthesis` given: cuzk's formula gives the workers.
    session = Session(res.header, SeriesStore(store_gpus, 0.1, max_parallel_synthesis=18),
                      detector=GapDetector(Config().detector, store_gpus))
    st = parse_status(json.dumps(WAITS_ON_SYNTHESIS).encode(), "127.0.0.1:9821", 1, 2.0, 0.8)
    session.on_record(st)
    parser = LogParser()
    for line in (  # curio e0294b0f pinned_pool.rs:212, pipeline.rs:302 (format strings)
            "2026-05-12T14:13:32.351090Z  INFO synthesize_partition{job_id=\"porep-1\" "
            "partition=3}: cuzk_core::pinned_pool: pinned pool: allocated new buffer "
            "size_gib=3.882612854242325 total_buffers=3 total_gib=11.647838562726974",
            "2026-05-12T14:13:33.351090Z  WARN synthesize_partition{job_id=\"porep-1\" "
            "partition=4}: cuzk_core::pipeline: pinned pool checkout FAILED \u2014 falling back "
            "to unpinned num_constraints=130278869 pool_free=0 "
            "pool_total_gib=11.647838562726974"):
        for ev in parser.parse_line(line, "stdout"):
            session.on_record(ev)
    poller = PollerStatus(url="http://127.0.0.1:9821/status", prover="127.0.0.1:9821",
                          period_s=1.0, state="ok", polls=10, ok=9, errors={"timeout": 1},
                          last_latency_ms=0.8)
    status = type("S", (), {"logs": {}, "log_counters": {}, "provers": [poller]})()
    handle = start_exporter("127.0.0.1:0", session, lambda: status)
    try:
        m = _scrape(handle.url)
        p = (("prover", "127.0.0.1:9821"),)
        assert m["gapwatch_cuzk_partitions"][p + (("state", "synthesizing"),)] == 18
        assert m["gapwatch_cuzk_partitions"][p + (("state", "synth_done"),)] == 0
        workers = m["gapwatch_cuzk_workers"]
        assert workers[(("gpu", "0"), ("prover", "127.0.0.1:9821"), ("state", "idle"))] == 1
        assert workers[(("gpu", "0"), ("prover", "127.0.0.1:9821"), ("state", "proving"))] == 1
        assert m["gapwatch_cuzk_synthesis_active"][p] == 18
        # max_concurrent is the 750 GiB budget over 9 GiB; the workers cuzk's formula gives.
        assert m["gapwatch_cuzk_synthesis_max_concurrent"][p] == 83
        assert m["gapwatch_cuzk_synthesis_workers"][p] == 18
        assert m["gapwatch_cuzk_memory_budget_bytes"][p] == 750 * 2**30
        # What the log said about the pinned pool.
        assert m["gapwatch_cuzk_pinned_pool_buffers"][()] == 3
        assert m["gapwatch_cuzk_pinned_pool_free_buffers"][()] == 0
        assert m["gapwatch_cuzk_pinned_pool_failures_total"][(("what", "checkout"),)] == 1
        causes = m["gapwatch_gaps_by_prover_cause_total"]
        assert causes[(("cause", "waits_on_synthesis"), ("gpu", "0"))] == 0  # from the start
        assert m["gapwatch_cuzk_queue_depth"][p] == 1
        assert m["gapwatch_cuzk_status_up"][p] == 1
        errors = m["gapwatch_cuzk_status_errors_total"]
        assert errors[p + (("reason", "timeout"),)] == 1
        assert errors[p + (("reason", "refused"),)] == 0  # every reason from the first scrape
        # The last poll failed: the pipeline gauges go absent (stale), up says 0.
        status.provers = [dataclasses.replace(poller, state="refused")]
        m = _scrape(handle.url)
        assert m["gapwatch_cuzk_status_up"][p] == 0
        assert "gapwatch_cuzk_partitions" not in m
    finally:
        handle.stop()


def test_a_late_snapshot_reaching_a_closed_gap_republishes_it_with_the_cause() -> None:
    res = simulate("host-stall", duration_s=20, detector=None)
    config = Config()
    det = GapDetector(config.detector, list(res.header.gpus), period_s=0.1, prover=CuzkProver())
    gaps: dict[int, Gap] = {}
    for r in res.records:
        for out in det.feed(r):
            if isinstance(out, Gap):
                gaps[out.gap_id] = out
    closed = [g for g in gaps.values() if g.end_s is not None and not g.retracted]
    assert closed and all(g.prover_cause is None for g in closed)
    last = closed[-1]
    assert last.end_s is not None
    # A snapshot taken during the last gap, fed after the samples that closed it.
    st = parse_status(json.dumps(WAITS_ON_SYNTHESIS).encode(), "p", last.start_mono_ns,
                      (last.start_s + last.end_s) / 2, 1.0)
    (again,) = [g for g in det.feed(st) if isinstance(g, Gap)]  # at once, as a late copy is
    assert again.gap_id == last.gap_id
    assert again.prover_cause == "waits_on_synthesis" and again.end_s == last.end_s
    assert "prover status: the GPU waits on synthesis" in again.hint


def test_a_dashboard_snapshot_keeps_the_prover_snapshots_replayable(tmp_path: Path) -> None:
    from gapwatch.sinks.snapshot import write_snapshot
    from gapwatch.sources.files import read_any

    rt = build_runtime(Config(), "sim:host-stall", speed=0, duration_s=20)
    rt.start()
    assert rt.wait(60)
    rt.stop()
    snap = rt.store.snapshot()
    path = write_snapshot(tmp_path, snap, rt.header, Config(), t_wall_s=snap.provers["sim"].t_wall_s)
    kept = [r for r in read_any(path / "recording.jsonl.gz").records
            if isinstance(r, ProverStatus)]
    assert kept == list(snap.prover_statuses) and len(kept) == 20


def test_record_against_a_server_answering_like_real_cuzk_names_the_synthesis_wait(
        tmp_path: Path) -> None:
    """`record --cuzk-status URL` against a server answering as cuzk does (18 workers
    synthesising, `max_concurrent` 83 from a 750 GiB budget, nothing in synth_done, the GPU
    idle): the host_stall gaps carry the synthesis wait in their own fields. The simulator
    makes the gaps; its log is not read as cuzk's (`[logs] cuzk = false`), so the worker count
    comes from cuzk's formula over the answer's budget and the operator's `[cuzk]
    max_parallel_synthesis`, as with a log gapwatch cannot see."""
    from gapwatch.sources.cuzk_status_server import CuzkStatusServer

    cfg = tmp_path / "gw.toml"
    cfg.write_text("[logs]\ncuzk = false\n[cuzk]\nstatus_period_s = 0.1\n"
                   "max_parallel_synthesis = 18\n")
    out = tmp_path / "rec.jsonl.gz"
    with CuzkStatusServer(lambda: WAITS_ON_SYNTHESIS) as server:
        # 40 s of the simulator (4 s of wall time at --speed 10: the /status server is polled
        # in wall time): ~8 gaps; at 20 s, ~4, and a loaded box's late ticks left 2 once.
        assert main(["record", "--config", str(cfg), "--source", "sim:host-stall",
                     "--speed", "10", "--duration", "40", "--quiet", "--out", str(out),
                     "--cuzk-status", server.url]) == 0
    gaps = [g for g in to_json(build_report(out, load_config(cfg)))["gaps"]
            if g["kind"] == "host_stall"]
    assert len(gaps) >= 3
    assert {g["prover_cause"] for g in gaps} == {"waits_on_synthesis"}
    for g in gaps:
        said = " ".join(g["prover_evidence"])
        assert "18 of 18 synthesis workers busy (every synthesis worker busy" in said
        assert "max_concurrent=83 is the memory budget over the smallest partition" in said
        assert g["prover_states"][-1]["synthesis_workers"] == 18
