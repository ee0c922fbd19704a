"""The simulated prover: deterministic, and each scenario tells the story it is named for."""

from __future__ import annotations

import pytest

from evaluation.simulate import simulate
from gapwatch.core.models import GpuSample, HostSample
from gapwatch.sources.sim import SCENARIO_PARAMS, SCENARIOS, truth_gaps


def _gpu(records: list) -> list[GpuSample]:  # type: ignore[type-arg]
    return [r for r in records if isinstance(r, GpuSample)]


def test_same_seed_same_session() -> None:
    a = simulate("pageable", seed=7, duration_s=20)
    b = simulate("pageable", seed=7, duration_s=20)
    assert a.records == b.records and a.log_lines == b.log_lines and a.truth == b.truth
    assert simulate("pageable", seed=8, duration_s=20).records != a.records


def test_chained_keeps_the_gpu_busy_with_no_gaps() -> None:
    r = simulate("chained", seed=1, duration_s=60)
    assert truth_gaps(r.truth, 0) == []
    busy = [s.sm_active_pct or 0.0 for s in _gpu(r.records)[40:]]
    assert sum(busy) / len(busy) > 85


def test_pageable_chains_first_then_breaks_with_pcie_trickling() -> None:
    r = simulate("pageable", seed=1, duration_s=60)
    gaps = truth_gaps(r.truth, 0)
    t0 = r.header.started_wall_s
    assert gaps and gaps[0][0] - t0 > 12  # chaining holds at first
    assert len([g for g in gaps if g[0] - t0 < 40]) >= 4  # then it breaks, within ~30 s
    # Inside gaps the link trickles at a few GB/s, far below the 63 GB/s it can carry.
    inside = [s for s in _gpu(r.records)
              if any(a + 0.15 < s.t_wall_s - 0.1 and s.t_wall_s < b for a, b in gaps)]
    rx = sorted(s.pcie_rx_bytes_per_s or 0 for s in inside)
    assert inside and 1e9 < rx[len(rx) // 2] < 12e9
    assert all(s.sm_active_pct is not None and s.sm_active_pct < 10 for s in inside)
    # and the unpinned warning is in the log
    assert any("is_pinned=false" in text for _, text in r.log_lines)


def test_host_stall_gaps_have_quiet_pcie() -> None:
    r = simulate("host-stall", seed=1, duration_s=60)
    gaps = truth_gaps(r.truth, 0)
    assert len(gaps) >= 5
    # The next partition's pinned copy (~80 ms at line rate) ends each gap: look before it.
    inside = [s for s in _gpu(r.records)
              if any(a + 0.15 < s.t_wall_s - 0.1 and s.t_wall_s < b - 0.3 for a, b in gaps)]
    assert inside and max(s.pcie_rx_bytes_per_s or 0 for s in inside) < 0.01 * 63e9


def test_transfer_bound_gaps_move_data_at_line_rate() -> None:
    r = simulate("transfer-bound", seed=1, duration_s=60)
    gaps = truth_gaps(r.truth, 0)
    assert len(gaps) >= 5
    inside = [s for s in _gpu(r.records)
              if any(a + 0.15 < s.t_wall_s - 0.1 and s.t_wall_s < b for a, b in gaps)]
    assert inside and min(s.pcie_rx_bytes_per_s or 0 for s in inside) > 0.3 * 63e9


#: One GPU's scenarios (`batch-wait`: its requests go through the daemon's one batch collector).
ONE_GPU = {s for s in SCENARIOS if SCENARIO_PARAMS[s].request_after_proof_s is not None}


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if s != "post-pipeline-off"])
def test_every_scenario_has_host_samples_and_timeline_lines(scenario: str) -> None:
    gpus = 1 if scenario in ONE_GPU else 2
    r = simulate(scenario, seed=2, duration_s=10, gpus=gpus)
    assert {s.gpu for s in _gpu(r.records)} == set(range(gpus))
    assert any(isinstance(x, HostSample) for x in r.records)
    assert any(t.startswith("TIMELINE,") for _, t in r.log_lines)
    # cuzk's startup lines in its order, targets and all: cuzk-daemon's main, Engine::new,
    # then start() (`_start_lines`).
    assert _said(r.log_lines[:8]) == _start_lines(gpus, pipeline=True)
    assert any("synth_worker_count=" in t for _, t in r.log_lines[8:10])


def _said(lines: list[tuple[str, str]]) -> list[str]:
    """The tracing lines' target and message (after the timestamp and level)."""
    return [t.split("  INFO ", 1)[1] for _, t in lines]


def _start_lines(gpus: int, pipeline: bool) -> list[str]:
    """The start lines cuzk writes before its pipeline's or its monolithic workers', in
    order (curio e0294b0f): cuzk-daemon main.rs:63, 64, 111 (`[gpus] gpu_threads` 0, so no
    CUZK_GPU_THREADS line at 85-91), engine.rs:1198, 1219 (Engine::new), 1244, 1328, 1339
    (start()). The simulator began at `memory budget initialized`, with no `cuzk-daemon
    starting` but at a restart and no `evictor callback wired`."""
    per_device = 2 if pipeline else 1
    return [
        "cuzk_daemon: cuzk-daemon starting",
        "cuzk_daemon: configuration loaded listen=unix:///run/curio/cuzk.sock",
        "cuzk_daemon: rayon global thread pool configured rayon_threads=96",
        "cuzk_core::engine: memory budget initialized total_budget_gib=512",
        "cuzk_core::engine: CUDA pinned memory pool initialized",
        f"cuzk_core::engine: starting cuzk engine pipeline_enabled={str(pipeline).lower()}",
        "cuzk_core::engine: evictor callback wired",
        f"cuzk_core::engine: initializing GPU workers num_gpus={gpus} "
        f"gpu_workers_per_device={per_device} total_workers={per_device * gpus} "
        f"gpus=[{', '.join(str(g) for g in range(gpus))}]"]


def test_with_the_pipeline_off_each_gpu_has_one_monolithic_worker_and_no_timeline() -> None:
    """engine.rs:1333-1337, 3378, 3510: one worker per GPU, started as a monolithic worker;
    the monolithic path writes no TIMELINE line, and `/status` lists its workers idle."""
    from gapwatch.cuzk.status import parse_status

    r = simulate("post-pipeline-off", seed=2, duration_s=10, gpus=2)
    assert {s.gpu for s in _gpu(r.records)} == {0, 1}
    assert any(isinstance(x, HostSample) for x in r.records)
    assert not any(t.startswith("TIMELINE,") for _, t in r.log_lines)
    assert _said(r.log_lines[:11]) == [
        *_start_lines(2, pipeline=False),
        "cuzk_core::engine: monolithic GPU worker started worker_id=0 gpu=0",
        "cuzk_core::engine: monolithic GPU worker started worker_id=1 gpu=1",
        "cuzk_core::engine: cuzk engine started num_workers=2 pipeline=false"]
    st = parse_status(r.sim.status_bytes(), "sim", 1, 0.0, 0.0)
    assert [w.state for w in st.workers] == ["idle", "idle"] and st.jobs == 0


def test_the_pipeline_off_is_the_whole_daemons_and_mixes_with_no_other_scenario() -> None:
    from gapwatch.sources.sim import parse_scenarios

    with pytest.raises(ValueError, match="turns cuzk's pipeline off, for the whole daemon"):
        parse_scenarios("post-pipeline-off,chained")


def test_unknown_scenario_is_refused() -> None:
    from gapwatch.sources.sim import SimProver

    with pytest.raises(ValueError, match="unknown scenario"):
        SimProver("melted")


def test_the_simulated_status_has_upstreams_semantics_drift_and_failed_jobs_included() -> None:
    """status.rs: `max_concurrent` is the budget over 9 GiB; `active` keeps the +1 of every
    failed synthesis; a failed job stays listed with its pending partitions, which never run."""
    from gapwatch.cuzk.causes import live_pending, synthesis_drift
    from gapwatch.cuzk.status import parse_status
    from gapwatch.sources.sim import SIM_BUDGET_BYTES, SimProver

    sim = SimProver("host-stall", seed=3, synth_fail_every=5)
    t0 = 1_796_000_000.0
    for k in range(400):  # 40 simulated seconds
        sim.read(k * 100_000_000, t0 + k * 0.1)
    st = parse_status(sim.status_bytes(), "sim", 1, t0, 0.0)
    assert st.synthesis_max == SIM_BUDGET_BYTES // (9 << 30) == 56
    assert st.memory_total_bytes == SIM_BUDGET_BYTES and st.srs_circuits == ["porep-32g"]
    assert sim.syntheses_failed >= 2
    assert synthesis_drift(st) == sim.syntheses_failed  # active ran ahead by every failure
    assert st.partition_counts["failed"] >= 1
    assert live_pending(st) < st.partition_counts["pending"]  # failed jobs' partitions


def test_the_synthesis_workers_are_cuzks_formula_and_one_pool_for_every_gpu() -> None:
    """engine.rs (curio e0294b0f): `synth_worker_count = max(2, min(total_bytes / 14 GiB,
    max_parallel_synthesis))`, one pool the GPUs share. Five `pageable` GPUs ramp to 20 threads
    each and keep 8 each busy: the simulated cuzk logs 36 (its 512 GiB budget over 14 GiB),
    not the 100 they ask for (it used to), and runs at most that many syntheses at once (it
    ran 39)."""
    r = simulate("pageable", seed=2, duration_s=30, gpus=5)
    (start,) = [t for _, t in r.log_lines if "starting pipeline: synthesis task" in t]
    assert "synth_worker_count=36 " in start
    running = most = 0
    for _, t in r.log_lines:
        if t.startswith("TIMELINE,"):
            stage = t.split(",")[2]
            running += {"SYNTH_START": 1, "SYNTH_END": -1}.get(stage, 0)
            most = max(most, running)
    assert most == 36
