"""The simulator's `post` scenario (`--source sim:post`): a WinningPoSt arriving while both
workers hold partitions, one that misses its deadline, a panic, a restart; every output says
them (the watcher's events offline, `record`'s stderr and recording, the report)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sim_recordings import record_sim

from evaluation.simulate import SIM_EPOCH_WALL_S, simulate
from gapwatch.cli import main
from gapwatch.core.config import DetectorConfig
from gapwatch.core.models import ProverEvent, ProverStatus
from gapwatch.cuzk.status import StatusError
from gapwatch.cuzk.watch import CuzkWatch
from gapwatch.logs.parse import LogParser
from gapwatch.offline.detect import Detected, detect_records
from gapwatch.sources.cuzk_status import fetch_status
from gapwatch.sources.cuzk_status_server import CuzkStatusServer
from gapwatch.sources.sim import SimProver
from gapwatch.sources.sim_post import (
    CYCLE_S,
    DOWN_S,
    FIRST_POST_SRS_LOAD_S,
    FIRST_TASK_ID,
    FREE_POOL_BLIND_S,
    KILL_AT_S,
    ON_TIME_AT_S,
    PANIC_AT_S,
    PANIC_LINES,
    prove_start_error,
)


@pytest.fixture(scope="module")
def detected() -> Detected:
    sim = simulate("post", duration_s=CYCLE_S + 10, status_period_s=1.0)
    parser = LogParser(offline=True)
    logs = [e for stream, text in sim.log_lines for e in parser.parse_line(text, stream)]
    logs = sorted(logs + parser.flush(), key=lambda e: e.t_wall_s)
    found = detect_records(sim.header, sim.records, DetectorConfig(), logs, watch=CuzkWatch())
    assert any(isinstance(r, ProverStatus) for r in sim.records)
    return found


@pytest.fixture(scope="module")
def events(detected: Detected) -> list[ProverEvent]:
    return list(detected.prover_events)


def test_the_kill_blinds_nvml_and_the_restarts_idle_after_the_hole_is_its_gap(
    detected: Detected,
) -> None:
    """Killing cuzk frees its pinned memory, and NVML answers nothing meanwhile (1.9 s for
    24 GiB, measured on the H200): a hole in the GPU's readings right at the kill. The idle
    after it, until the new run's first GPU work, is a gap, the restart's (the idle after a
    hole used to wait for a busy period: the restart's idle was in no gap)."""
    assert detected.detector_counters.get("holes", 0) >= 1
    after_kill = [g for g in detected.gaps
                  if KILL_AT_S <= g.start_s - SIM_EPOCH_WALL_S < KILL_AT_S + DOWN_S]
    [gap] = after_kill
    assert gap.start_s - SIM_EPOCH_WALL_S == pytest.approx(KILL_AT_S + FREE_POOL_BLIND_S,
                                                           abs=0.15)
    assert gap.prover_cause == "restart"
    assert "the restart cost the GPU" in gap.hint


def test_a_winningpost_arriving_while_both_workers_hold_partitions(
        events: list[ProverEvent]) -> None:
    """The run's first WinningPoSt: its synthesis step holds its SRS's first load (2 s), and
    it stays on time, waiting behind both workers' partitions."""
    first = next(e for e in events if e.kind == "proof")
    p = first.proof
    assert p is not None and p.done and p.verdict == "ok"
    assert p.synth_s == pytest.approx(2.2 + FIRST_POST_SRS_LOAD_S, abs=0.01)
    assert p.gpu_wait_s is not None
    assert len(p.waited_behind) == 2 and all("porep-" in w for w in p.waited_behind)


def test_a_winningpost_loading_its_evicted_srs_misses_its_epoch(events: list[ProverEvent]) -> None:
    """Its SRS is loaded inside its synthesis step, after SYNTH_START (engine.rs:2717-2721):
    its synthesis phase is the long one, and the setting is eviction_min_idle."""
    late = [e for e in events if e.kind == "proof" and e.proof is not None
            and e.proof.verdict == "late"]
    assert [e.proof.done for e in late if e.proof is not None] == [False, True]
    assert late[0].job_id == late[1].job_id and late[1].level == "error"
    done = late[1].proof
    assert done is not None and done.synth_s is not None and done.synth_s > 30
    assert done.queue_s is not None and done.queue_s < 1
    assert done.setting is not None and "eviction_min_idle" in done.setting
    assert "winning-32g, 31.0 s" in done.setting


def test_a_panic_and_cuzks_own_line_for_it_are_one_error_with_both_texts(
        events: list[ProverEvent]) -> None:
    [error] = [e for e in events if e.kind == "error"]
    assert error.message.startswith("GPU prove start task panicked job porep-1000-7 partition 7 "
                                    "GPU 0: task 41 panicked with message ")
    assert 'its panic: panic in ' in error.message
    assert 'failed: "out of memory"' in error.message


def test_the_partitions_panic_is_its_prove_starts_as_cuzk_writes_it() -> None:
    """supraseal-c2's src/lib.rs:316 is `start_groth16_proof`'s panic, in the `spawn_blocking`
    of `gpu_prove_start` (curio e0294b0f, engine.rs:3134-3147), on a thread tokio names
    `tokio-runtime-worker`: cuzk then writes `GPU_TIMING prove_start returned` and `GPU prove
    start task panicked` (3148-3154, 3302) in the partition's GPU worker span. The simulator
    wrote it in a thread `'<unnamed>'` and followed it with `partition GPU proving task
    panicked` (679), which cuzk writes only of a panic in the split prove's finalizer
    (`gpu_prove_finish`, 3185-3197, 3238: supraseal-c2's lib.rs:331)."""
    lines = simulate("post", duration_s=PANIC_AT_S + 10).log_lines
    texts = [text for _stream, text in lines]
    [at] = [i for i, text in enumerate(texts) if " panicked at " in text]
    assert lines[at] == ("stderr", PANIC_LINES[0]) and "'tokio-runtime-worker'" in texts[at]
    assert texts[at + 1:at + 3] == list(PANIC_LINES[1:])
    span = ("gpu_worker{worker_id=1 gpu=0 job_id=porep-1000-7 proof_kind=porep-c2 batch_size=1 "
            "partition=Some(7)}: cuzk_core::engine: ")
    assert f"  INFO {span}GPU_TIMING prove_start returned worker_id=1 partition=Some(7) " \
        in texts[at + 3]
    assert texts[at + 4].endswith(f" ERROR {span}GPU prove start task panicked "
                                  f"error={prove_start_error(FIRST_TASK_ID)}")
    assert not [t for t in texts if "partition GPU proving task panicked" in t]


def test_a_restart_seen_by_its_lines_and_its_status_is_one_with_its_cost(
        events: list[ProverEvent]) -> None:
    [restart] = [e for e in events if e.kind == "restart"]
    assert "cuzk-daemon starting" in restart.message and "no shutdown line" in restart.message
    [cost] = [e for e in events if e.kind == "restart_cost"]
    names = [p.name for p in cost.parts]
    assert names[0] == "down" and "SRS reloaded" in names and "first wave synthesis" in names
    assert cost.length_s is not None and cost.length_s > DOWN_S
    assert not [e for e in events if e.kind == "lost_job"]


def test_after_a_restart_the_next_winningpost_loads_its_srs_from_disk_again() -> None:
    """A killed cuzk's SRS went with its process (pinned host memory): the new run's first
    WinningPoSt loads `winning-32g` inside its synthesis step, a first load (no `SRS evicted`
    before it), and the reload of the next cycle's late one follows it. The new run's first
    WinningPoSt used to find its SRS in memory, as if nothing had restarted."""
    sim = simulate("post", duration_s=2 * CYCLE_S, status_period_s=1.0)
    texts = [text for _stream, text in sim.log_lines]
    # Every run's first line (main.rs:63): the second run's is the restart.
    restarted = [i for i, t in enumerate(texts) if "cuzk-daemon starting" in t][1]
    after = texts[restarted:]
    first_post = next(t for t in after if "SYNTH_START" in t and "winpost-" in t)
    job = first_post.split(",")[3]
    its_end = next(i for i, t in enumerate(after) if f"SYNTH_END,{job}," in t)
    srs_lines = [t.split(": ", 1)[1].split(" circuit_id=")[0] for t in after[:its_end]
                 if "circuit_id=winning-32g" in t]
    assert srs_lines == ["loading SRS from disk", "SRS loaded successfully"]
    assert f"elapsed_ms={int(FIRST_POST_SRS_LOAD_S * 1000)}" in \
        next(t for t in after if "SRS loaded successfully circuit_id=winning-32g" in t)
    # The next cycle's late WinningPoSt reloads what this run loaded, after its eviction.
    later = [t.split(": ", 1)[1].split(" circuit_id=")[0] for t in after[its_end:]
             if "circuit_id=winning-32g" in t]
    assert later == ["SRS evicted", "loading SRS from disk", "SRS loaded successfully"]


def test_the_simulators_srs_eviction_follows_upstreams_rule() -> None:
    """cuzk evicts an SRS only from its budget's evictor: an acquire short and the SRS idle at
    least eviction_min_idle (engine.rs:1257-1320), and writes `SRS evicted circuit_id freed_gib
    budget_available_gib` in whole GiB (srs_manager.rs:282), then `evicted for memory pressure`
    (engine.rs:1317). The simulator wrote `freed_gib=0.4 budget_available_gib=463` (the budget
    not short) 16 s after the SRS's last use, against a default eviction_min_idle of 5m. Now its
    budget is full then (its /status too) and the idle is past its own eviction_min_idle."""
    from gapwatch.sources.sim_post import EVICTION_MIN_IDLE_S, LATE_AT_S

    sim = simulate("post", duration_s=CYCLE_S + LATE_AT_S + 5, status_period_s=0.5)
    texts = [text for _stream, text in sim.log_lines]
    evicted = [i for i, t in enumerate(texts) if " SRS evicted " in t]
    assert len(evicted) == 2  # each cycle's late WinningPoSt
    for i in evicted:
        assert texts[i].endswith("circuit_id=winning-32g freed_gib=0 budget_available_gib=0")
        assert texts[i + 1].endswith(
            "evicted for memory pressure entry=srs:winning-32g freed_gib=0")
    # Its last use: the SYNTH_END of the WinningPoSt before it (its `ensure_loaded` just
    # before, engine.rs:2717-2721), placed in wall time by gapwatch's reading.
    parser = LogParser(offline=True)
    logs = [e for stream, text in sim.log_lines for e in parser.parse_line(text, stream)]
    logs = sorted(logs + parser.flush(), key=lambda e: e.t_wall_s)
    ends = [e.t_wall_s for e in logs if e.name == "SYNTH_END" and (e.job_id or "").startswith(
        "winpost-")]
    for ev in (e for e in logs if e.name == "SRS evicted"):
        last = max(t for t in ends if t < ev.t_wall_s)
        assert ev.t_wall_s - last >= EVICTION_MIN_IDLE_S
        full = [r for r in sim.records if isinstance(r, ProverStatus)
                and ev.t_wall_s <= r.t_wall_s < ev.t_wall_s + 0.5]
        assert full and all(r.memory_available_bytes == 0 for r in full)


def test_the_new_runs_first_winningpost_is_timed_with_its_srs_load_in_its_synthesis() -> None:
    """Read by gapwatch: the load is inside its synthesis phase (engine.rs:2717-2721), and
    the proof stays on time."""
    sim = simulate("post", duration_s=CYCLE_S + ON_TIME_AT_S + 10, status_period_s=1.0)
    parser = LogParser(offline=True)
    logs = [e for stream, text in sim.log_lines for e in parser.parse_line(text, stream)]
    logs = sorted(logs + parser.flush(), key=lambda e: e.t_wall_s)
    found = detect_records(sim.header, sim.records, DetectorConfig(), logs, watch=CuzkWatch())
    proofs = [e.proof for e in found.prover_events if e.kind == "proof" and e.proof is not None
              and e.proof.done]
    after_restart = proofs[-1]
    assert after_restart.verdict == "ok" and after_restart.synth_s is not None
    assert after_restart.synth_s == pytest.approx(2.2 + FIRST_POST_SRS_LOAD_S, abs=0.01)


def test_a_killed_cuzk_gives_no_status_until_its_new_run_listens() -> None:
    """A dead process answers no poll: no snapshot from the kill to the new run's start, whose
    first counts its uptime from 0. The killed daemon used to answer `/status` while down."""
    sim = simulate("post", duration_s=KILL_AT_S + DOWN_S + 5, status_period_s=1.0)
    polled = [(r.t_wall_s - SIM_EPOCH_WALL_S, r.uptime_s) for r in sim.records
              if isinstance(r, ProverStatus)]
    assert not [t for t, _ in polled if KILL_AT_S < t < KILL_AT_S + DOWN_S]
    after = [(t, up) for t, up in polled if t >= KILL_AT_S + DOWN_S]
    assert after and after[0][1] is not None and after[0][1] < 1.0


def _run_to(sim: SimProver, t_s: float, start_s: float = 0.0) -> None:
    """Read the simulator every 100 ms from `start_s` to `t_s` (simulated seconds)."""
    for k in range(int(start_s * 10), int(t_s * 10) + 1):
        sim.read(k * 100_000_000, SIM_EPOCH_WALL_S + k * 0.1)


def test_the_killed_cuzks_status_port_refuses_connections_until_it_starts_again() -> None:
    """Over TCP, as the poller meets it: refused while down (nothing listens on the port), then
    the new run's server on the same address (main.rs:118-133: after the engine's start)."""
    sim = SimProver("post")
    with CuzkStatusServer(sim.status_bytes) as server:
        sim.status_listener = server
        _run_to(sim, KILL_AT_S + 1)
        with pytest.raises(StatusError) as refused:
            fetch_status(server.url, 2.0)
        assert refused.value.reason == "refused"
        _run_to(sim, KILL_AT_S + DOWN_S + 0.5, start_s=KILL_AT_S + 1.1)
        uptime = json.loads(fetch_status(server.url, 2.0))["uptime_secs"]
        assert uptime < 1.0


def test_record_says_them_on_stderr_and_the_report_from_the_recording(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, err = record_sim(tmp_path, "post", CYCLE_S + 10)
    assert "error: prover proof at" in err and "LATE" in err
    assert "error: prover error at" in err and "out of memory" in err
    assert "warning: prover restart at" in err and "warning: prover restart cost at" in err
    assert '"type":"prover_event"' in out.read_text()
    # The report of that file.
    assert main(["report", str(out)]) == 0
    assert "Prover events: 2 PoSt proof(s) (1 late, 0 at risk), 1 restart(s), 1 error(s)" \
        in capsys.readouterr().out


def test_a_wall_clock_stepped_back_an_hour_leaves_no_post_out_that_the_table_keeps(
        tmp_path: Path) -> None:
    """An NTP step of an hour back half-way through a recording of the PoSt scenario (its log
    recorded in it): every record after it an hour earlier in wall time. The partition table
    placed nothing by wall time across the step (`report.report_span`) and kept every row; the
    PoSt list judged the words by the recording's start less 5 minutes and left out the
    second cycle's 2 PoSt and its error, saying they were "left out of the prover events and
    the partition table alike". One span for both (`log_span.report_span`)."""
    from gapwatch.config import Config
    from gapwatch.offline.report import build_report

    plain, _ = record_sim(tmp_path, "post", 2 * CYCLE_S - 60)
    lines = plain.read_text().splitlines()
    half = len(lines) // 2
    moved = [json.loads(x) for x in lines[half:]]
    for r in moved:
        if "t_wall_s" in r:
            r["t_wall_s"] -= 3600.0
    stepped = tmp_path / "stepped.jsonl"
    stepped.write_text("\n".join([*lines[:half], *map(json.dumps, moved)]) + "\n")
    before, after = (build_report(p, Config(), [], workers=1) for p in (plain, stepped))
    assert after.partitions is not None and before.partitions is not None
    assert len(after.partitions.partitions) == len(before.partitions.partitions)
    assert after.prover_events.proofs().rows == before.prover_events.proofs().rows == 4
    assert after.prover_events.counts["error"] == before.prover_events.counts["error"] == 2
    assert not [w for w in after.warnings if "outside the recording's span" in w]
