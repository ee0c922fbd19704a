"""The simulator's `batch-wait` scenario (`--source sim:batch-wait`): cuzk with
`[scheduler] max_batch_size = 2` and `max_batch_wait_ms = 5000`, fed one PoRep request at a
time, holds each in its batch collector until the wait runs out, then sends it alone
(`processing batch` in span `synth_timeout_flush`). Its log is cuzk's own lines; its `/status`
lists a held request nowhere; recorded and reported, its gaps are `batch_wait` with the batch
settings advised, and they are the gaps the simulator made, each around a request it held."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sim_recordings import record_sim, report_of

from evaluation.simulate import SIM_EPOCH_WALL_S, simulate
from gapwatch.sources.sim import SCENARIO_PARAMS, SimProver, parse_scenarios, truth_gaps
from gapwatch.sources.sim_batch_wait import FIRST_REQUEST_S, TURNAROUND_S, BatchHold

WAIT_S = SCENARIO_PARAMS["batch-wait"].max_batch_wait_ms / 1000
#: Four requests: three gaps between their proofs (the first request's hold comes before any
#: GPU work, so it opens no gap).
DURATION_S = 60.0
SEED = 3


def _messages(lines: list[tuple[str, str]]) -> list[str]:
    """The tracing lines' span, target and message (after the timestamp and level)."""
    return [text.split("  INFO ", 1)[1] for _, text in lines if "  INFO " in text]


def _holds(sim: SimProver) -> list[BatchHold]:
    """The requests the simulated cuzk's batch collector held (its truth)."""
    assert sim.batch_script is not None
    return sim.batch_script.holds


def _status(sim: SimProver) -> dict[str, Any]:
    """The simulated cuzk's `/status`, as a poller reads its JSON."""
    doc: dict[str, Any] = json.loads(sim.status_bytes())
    return doc


def test_each_request_is_held_until_max_batch_wait_ms_runs_out_then_sent_alone() -> None:
    """scheduler.rs:67-73, 85-89; engine.rs:1892, 2012, 2150, 2261, 2296: the dispatcher line
    says the batch settings; each request is enqueued and dequeued at once, and `processing
    batch batch_size=1` in span `synth_timeout_flush` comes max_batch_wait_ms later, before its
    partitions' TIMELINE lines."""
    r = simulate("batch-wait", seed=SEED, duration_s=25.0)
    said = _messages(r.log_lines)
    assert ("cuzk_core::engine: synthesis dispatcher started (budget-gated) max_batch_size=2 "
            "max_batch_wait_ms=5000 slot_size=0 synthesis_concurrency=1") in said
    job = "porep-1000-0"
    start = said.index(f"cuzk_core::scheduler: job enqueued job_id={job} proof_kind=porep-c2 "
                       "priority=Normal queue_position=0")
    flush = "synth_timeout_flush{batch_size=1}: cuzk_core::engine: "
    assert said[start + 1:start + 5] == [
        f"cuzk_core::scheduler: job dequeued for proving job_id={job} proof_kind=porep-c2",
        flush + "processing batch batch_size=1 proof_kind=porep-c2 slot_size=0",
        flush + f"dispatching per-partition synthesis (budget-gated) job_id={job} "
                "num_partitions=10 budget_available_gib=465",
        flush + f"assigned pipeline sequence number job_id={job} job_seq=0"]
    texts = [text for _, text in r.log_lines]
    sent = next(i for i, t in enumerate(texts) if "processing batch" in t)
    first_timeline = next(i for i, t in enumerate(texts) if t.startswith("TIMELINE,"))
    assert first_timeline > sent
    assert texts[first_timeline].startswith(f"TIMELINE,{int((FIRST_REQUEST_S + WAIT_S) * 1000)},"
                                            f"SYNTH_START,{job},partition=")
    [hold, *_] = _holds(r.sim)
    assert hold.flushed_wall_s - hold.enqueued_wall_s == pytest.approx(WAIT_S)
    assert any(m.startswith(f"cuzk_core::engine: Phase 7: all partitions complete, proof "
                            f"assembled job_id={job} proof_len=1920 total_ms=") for m in said)


def test_a_held_request_is_listed_nowhere_in_status_and_its_job_once_sent() -> None:
    """While the collector holds the second request, /status lists only the first job, done
    (kept 30 s), no partition to do, every worker idle, an empty scheduler queue
    (engine.rs:2247 registers a job only once sent; 3710 `queue_depth` is the scheduler's,
    which the collector emptied). Once sent, its job is there, ten partitions."""
    lines: list[str] = []
    sim = SimProver("batch-wait", seed=SEED, on_line=lambda _stream, text: lines.append(text))
    k = 0
    while not any("job enqueued job_id=porep-1000-1 " in t for t in lines):
        sim.read(k * 100_000_000, SIM_EPOCH_WALL_S + k * 0.1)
        k += 1
    sim.read(k * 100_000_000, SIM_EPOCH_WALL_S + k * 0.1)  # held since the reading before
    doc = _status(sim)
    assert [(p["job_id"], p["partitions_done"]) for p in doc["pipelines"]] == [
        ("porep-1000-0", 10)]
    assert [w["state"] for w in doc["gpu_workers"]] == ["idle", "idle"]
    assert doc["counters"]["queue_depth"] == 0 and doc["synthesis"]["active"] == 0
    for later in range(k + 1, k + 1 + int(WAIT_S * 10)):  # the wait runs out: sent
        sim.read(later * 100_000_000, SIM_EPOCH_WALL_S + later * 0.1)
    doc = _status(sim)
    assert [p["job_id"] for p in doc["pipelines"]] == ["porep-1000-0", "porep-1000-1"]
    assert doc["pipelines"][1]["total_partitions"] == 10


def test_batch_wait_is_one_gpus_story() -> None:
    """cuzk's batch collector is the daemon's, one for every GPU: the scenario's one request
    at a time is not each GPU's."""
    with pytest.raises(ValueError, match="cuzk's batch collector is the daemon's"):
        parse_scenarios("batch-wait", gpus=2)
    with pytest.raises(ValueError, match="cuzk's batch collector is the daemon's"):
        parse_scenarios("batch-wait,chained")


def test_recorded_and_reported_every_gap_is_a_batch_wait_the_simulator_made(
        tmp_path: Path) -> None:
    """`record --source sim:batch-wait`, then `report --json`: every gap's prover cause is
    `batch_wait`, held max_batch_wait_ms of it, the advice `[scheduler] max_batch_size` and
    `max_batch_wait_ms`. The truth (the same seed simulated here): the GPU idled exactly
    those times, each gap Curio's turnaround, a request held, then its first synthesis."""
    recording, _ = record_sim(tmp_path, "batch-wait", DURATION_S, "--seed", str(SEED))
    report = json.loads(report_of(tmp_path, recording, "--json"))
    gaps = report["gaps"]
    assert gaps and {g["prover_cause"] for g in gaps} == {"batch_wait"}
    assert all(f"held {WAIT_S:.1f} s" in g["hint"] for g in gaps)
    batch = [a for a in report["advice"] if a["stall"] == "batch_wait"]
    assert [a["setting"] for a in batch] == ["[scheduler] max_batch_size",
                                             "[scheduler] max_batch_wait_ms"]
    assert all(not a["guess"] and a["gaps"] == len(gaps) for a in batch)
    assert any(f"max_batch_wait_ms={int(WAIT_S * 1000)} ran out" in e
               for e in batch[1]["evidence"])

    truth = simulate("batch-wait", seed=SEED, duration_s=DURATION_S)
    t0 = truth.sim._t0_wall_s
    idle = truth_gaps(truth.truth, 0)
    holds = [(h.enqueued_wall_s - t0, h.flushed_wall_s - t0) for h in _holds(truth.sim)]
    # The recording's clock: the simulator starts at its first reading, a period before the
    # first GPU sample.
    recs = [json.loads(x) for x in recording.read_text().splitlines()]
    first = next(r for r in recs if r["type"] == "gpu")
    r0 = first["t_wall_s"] - first["interval_ns"] / 1e9
    found = [(g["start_s"] - r0, g["end_s"] - r0) for g in gaps]
    assert len(found) == len(idle) == len(holds) - 1 == 3
    period_s = 0.1
    for (start, end), (idle_from, idle_to), (held_from, held_to) in zip(
            found, [(a - t0, b - t0) for a, b in idle], holds[1:], strict=True):
        assert start == pytest.approx(idle_from, abs=period_s)
        assert end == pytest.approx(idle_to, abs=period_s)
        # Each gap: the turnaround, the hold, then the first partition's synthesis and copy.
        assert held_from - idle_from == pytest.approx(TURNAROUND_S, abs=0.01)
        assert held_to - held_from == pytest.approx(WAIT_S)
        assert idle_from < held_from < held_to < idle_to
