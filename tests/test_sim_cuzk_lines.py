"""The simulated cuzk speaks cuzk's own lines (curio e0294b0f): a full batch of the `batched`
scenario with its requests' scheduler lines and in span `synth_batch_full`; every run of
`post` loading its SRS at each kind's first use; and every run, first or restarted, starting
with cuzk-daemon's and the engine's start lines in their order, its status server's line after
them where it serves `/status`. Recorded and reported, what gapwatch concludes stays the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sim_recordings import record_sim, report_of

from evaluation.simulate import SIM_EPOCH_WALL_S, simulate
from gapwatch.sources.cuzk_status_server import CuzkStatusServer
from gapwatch.sources.sim import SimProver
from gapwatch.sources.sim_post import (
    DOWN_S,
    FIRST_POST_SRS_LOAD_S,
    KILL_AT_S,
    ON_TIME_AT_S,
    POREP_SRS_LOAD_S,
)


def _said(texts: list[str]) -> list[str]:
    """The tracing lines' span, target and message (after the timestamp and level); TIMELINE
    lines as they are."""
    return [t.split("  INFO ", 1)[1] if "  INFO " in t else t for t in texts]


def _texts(lines: list[tuple[str, str]]) -> list[str]:
    return [text for _stream, text in lines]


def test_a_full_batch_is_its_requests_enqueued_and_dequeued_then_sent_in_synth_batch_full(
) -> None:
    """scheduler.rs:67-73, 85-89: each request enqueued and taken by the dispatcher; the
    second fills the batch (batch_collector.rs:122-129), sent in span `synth_batch_full
    {batch_size proof_kind}` (engine.rs:2055-2058) with `processing batch` (2150-2155); the
    batch's job is its first request's (2664), its `synthesis complete` after its SYNTH_END
    in the same span (2745-2752). The simulator wrote `processing batch` in no span and no
    scheduler line."""
    said = _said(_texts(simulate("batched", seed=1, duration_s=8).log_lines))
    start = said.index("cuzk_core::scheduler: job enqueued job_id=porep-1000-0 "
                       "proof_kind=porep-c2 priority=Normal queue_position=0")
    span = "synth_batch_full{batch_size=2 proof_kind=porep-c2}: cuzk_core::engine: "
    assert said[start:start + 5] == [
        "cuzk_core::scheduler: job enqueued job_id=porep-1000-0 proof_kind=porep-c2 "
        "priority=Normal queue_position=0",
        "cuzk_core::scheduler: job dequeued for proving job_id=porep-1000-0 proof_kind=porep-c2",
        "cuzk_core::scheduler: job enqueued job_id=porep-1000-1 proof_kind=porep-c2 "
        "priority=Normal queue_position=0",
        "cuzk_core::scheduler: job dequeued for proving job_id=porep-1000-1 proof_kind=porep-c2",
        span + "processing batch batch_size=2 proof_kind=porep-c2 slot_size=0"]
    assert said[start + 5].startswith("TIMELINE,")
    assert said[start + 5].endswith(",SYNTH_START,porep-1000-0,kind=porep-c2")
    end = next(i for i, m in enumerate(said) if ",SYNTH_END,porep-1000-0," in m)
    assert said[end + 1].startswith(span + "synthesis complete, sending to GPU synth_ms=")
    assert said[end + 1].endswith(" circuit_id=porep-32g batch_size=2 sectors=2")
    assert not [m for m in said if m.startswith("cuzk_core::engine: processing batch")]


def test_the_batched_dispatcher_says_the_four_batches_it_synthesises_at_once() -> None:
    """Four batches synthesised at once are `synthesis_concurrency = 4` (engine.rs:1907-1972:
    at 1 the dispatcher awaits each batch's synthesis before it takes the next request)."""
    said = _said(_texts(simulate("batched", seed=1, duration_s=1).log_lines))
    assert ("cuzk_core::engine: synthesis dispatcher started (budget-gated) max_batch_size=2 "
            "max_batch_wait_ms=10000 slot_size=0 synthesis_concurrency=4") in said


def test_recorded_and_reported_full_batches_are_no_batch_wait_and_still_told_max_batch_size_1(
        tmp_path: Path) -> None:
    """End to end: the requests' `job enqueued` lines and the batches' span leave gapwatch's
    conclusion as it was: no request held for company (a full batch is sent at once), the
    gaps the batches' (`monolithic`), the advice `[scheduler] max_batch_size` = 1 from the
    batches the log shows."""
    recording, _ = record_sim(tmp_path, "batched", 30, "--seed", "1")
    report = json.loads(report_of(recording, "--json"))
    gaps = report["gaps"]
    assert gaps and "batch_wait" not in {g["prover_cause"] for g in gaps}
    first = report["advice"][0]
    assert first["setting"] == "[scheduler] max_batch_size" and first["change"].startswith("1")
    assert any("batch job(s) in the log" in e for e in first["evidence"])


def test_the_first_run_of_post_loads_each_srs_at_its_kinds_first_use() -> None:
    """engine.rs:1249 (no preload), 2187-2209 (a PoRep's SRS loaded before its partitions are
    dispatched), 2717-2721 (a WinningPoSt's inside its synthesis step); srs_manager.rs:203,
    224. The first run wrote no SRS load, as if both were in memory from its first second."""
    texts = _texts(simulate("post", seed=1, duration_s=ON_TIME_AT_S + 8).log_lines)
    said = _said(texts)
    porep = [i for i, m in enumerate(said) if "circuit_id=porep-32g" in m
             and m.startswith("cuzk_core::srs_manager: ")]
    first_synth = next(i for i, m in enumerate(said) if ",SYNTH_START,porep-" in m)
    assert [said[i].split(": ", 1)[1].split(" circuit_id=")[0] for i in porep] == [
        "loading SRS from disk", "SRS loaded successfully"]
    assert porep[1] < first_synth
    assert f"elapsed_ms={int(POREP_SRS_LOAD_S * 1000)}" in said[porep[1]]
    post_start = next(i for i, m in enumerate(said) if ",SYNTH_START,winpost-" in m)
    job = said[post_start].split(",")[3]
    post_end = next(i for i, m in enumerate(said) if f",SYNTH_END,{job}," in m)
    winning = [m.split(": ", 1)[1].split(" circuit_id=")[0]
               for m in said[post_start:post_end] if "circuit_id=winning-32g" in m]
    assert winning == ["loading SRS from disk", "SRS loaded successfully"]
    assert not [m for m in said[:post_start] if "circuit_id=winning-32g" in m]
    assert f"elapsed_ms={int(FIRST_POST_SRS_LOAD_S * 1000)}" in next(
        m for m in said if "SRS loaded successfully circuit_id=winning-32g" in m)


def test_recorded_and_reported_the_first_winningpost_is_timed_with_its_srs_load(
        tmp_path: Path) -> None:
    """End to end: the report of a `post` recording times the run's first WinningPoSt with its
    SRS's first load inside its synthesis phase, and it stays on time."""
    recording, _ = record_sim(tmp_path, "post", ON_TIME_AT_S + 10)
    proofs = [e["proof"] for e in json.loads(report_of(recording, "--json"))
              ["prover_events"]["proof"] if e["proof"]["done"]]
    [first] = proofs
    assert first["verdict"] == "ok"
    assert first["synth_s"] == pytest.approx(2.2 + FIRST_POST_SRS_LOAD_S, abs=0.01)


def _run_to(sim: SimProver, t_s: float) -> None:
    """Read the simulator every 100 ms from its start to `t_s` (simulated seconds)."""
    for k in range(int(t_s * 10) + 1):
        sim.read(k * 100_000_000, SIM_EPOCH_WALL_S + k * 0.1)


def test_every_run_of_post_starts_alike_its_status_servers_line_after_its_engines() -> None:
    """cuzk-daemon main.rs:63-64, 111, then the engine (engine.rs:1198-1344 and on), then,
    with `[daemon] status_listen` set, `status HTTP server listening addr=` (main.rs:127-133)
    once the engine has started: the restart's start lines are the first run's. The first run
    began at `memory budget initialized` and neither run said its status server; the restart
    said `cuzk-daemon starting` and no `configuration loaded`."""
    lines: list[str] = []
    sim = SimProver("post", on_line=lambda _stream, text: lines.append(text))
    with CuzkStatusServer(sim.status_bytes) as server:
        sim.status_listener = server
        sim.status_listen = f"127.0.0.1:{server.port}"
        _run_to(sim, KILL_AT_S + DOWN_S + 1)
    said = _said(lines)
    starts = [i for i, m in enumerate(said) if m == "cuzk_daemon: cuzk-daemon starting"]
    assert len(starts) == 2
    runs = [said[i:i + 14] for i in starts]
    listening = f"cuzk_daemon: status HTTP server listening addr=127.0.0.1:{server.port}"
    for run in runs:
        assert run[1] == "cuzk_daemon: configuration loaded listen=unix:///run/curio/cuzk.sock"
        assert run[6] == "cuzk_core::engine: evictor callback wired"
        assert run[11].startswith("cuzk_core::engine: synthesis dispatcher started")
        assert run[12] == listening
    assert runs[0][:13] == runs[1][:13]
    assert said.count(listening) == 2
