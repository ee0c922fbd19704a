"""The simulator's `batch-wait` scenario (`--source sim:batch-wait`): cuzk with
`[scheduler] max_batch_size = 2` and `max_batch_wait_ms = 5000`, fed one PoRep request at a
time, holds each in its batch collector until the wait runs out, then sends it alone
(`processing batch` in span `synth_timeout_flush`). Its log is cuzk's own lines; its `/status`
lists a held request nowhere; recorded and reported, its gaps are `batch_wait` with the batch
settings advised, and they are the gaps the simulator made, each around a request it held.
The two settings are `[sim.batch_wait]`'s: with the advice followed (`max_batch_wait_ms = 0`,
or `max_batch_size = 1`) cuzk holds nothing, and `gapwatch compare` of the two recordings names
the setting changed and judges the waits' end the setting's gain, as large as the holds the
simulator recorded."""

from __future__ import annotations

import functools
import json
import re
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from shared_files import made_once
from sim_recordings import record_sim, report_of

from evaluation.simulate import SIM_EPOCH_WALL_S, SimResult, simulate
from gapwatch.cli import main
from gapwatch.commands import compare as compare_command
from gapwatch.config import Config, ConfigError, load_config
from gapwatch.engine.sim_wiring import open_sim
from gapwatch.offline.compare import Side, read_side
from gapwatch.offline.progress import Progress
from gapwatch.sources.sim import (
    SCENARIO_PARAMS,
    SimProver,
    TruthInterval,
    parse_scenarios,
    truth_gaps,
    with_batch_settings,
)
from gapwatch.sources.sim_batch_wait import FIRST_REQUEST_S, TURNAROUND_S, BatchHold
from gapwatch.sources.time_window import TimeWindow

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
    report = json.loads(report_of(recording, "--json"))
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


def _sent(said: list[str], job: str) -> list[str]:
    """The lines from `job`'s `job enqueued` to its `assigned pipeline sequence number`."""
    start = next(i for i, m in enumerate(said) if f"job enqueued job_id={job} " in m)
    end = next(i for i, m in enumerate(said) if f"sequence number job_id={job} " in m)
    return said[start:end + 1]


def _at_once(lines: list[tuple[str, str]], job: str) -> bool:
    """Whether `job`'s lines from its enqueue to its sequence number share one timestamp."""
    texts = [text for stream, text in lines if stream == "stdout"]
    start = next(i for i, t in enumerate(texts) if f"job enqueued job_id={job} " in t)
    end = next(i for i, t in enumerate(texts) if f"sequence number job_id={job} " in t)
    return len({t.split(" ", 1)[0] for t in texts[start:end + 1]}) == 1


def test_max_batch_wait_ms_0_still_goes_through_the_collector_and_sends_at_once() -> None:
    """batch_collector.rs:143-156 (a batch of one is not full: held), 185-190 (time left:
    zero), 165-173 (elapsed >= 0 ms: flushed), engine.rs:1979-2012: with `max_batch_wait_ms = 0`
    the dispatcher's timer fires at once and the request is sent in span
    `synth_timeout_flush{batch_size=1}`, as before, at the moment it came: held no time."""
    r = simulate("batch-wait", seed=SEED, duration_s=40.0, max_batch_wait_ms=0)
    said = _messages(r.log_lines)
    assert ("cuzk_core::engine: synthesis dispatcher started (budget-gated) max_batch_size=2 "
            "max_batch_wait_ms=0 slot_size=0 synthesis_concurrency=1") in said
    flush = "synth_timeout_flush{batch_size=1}: cuzk_core::engine: "
    assert _sent(said, "porep-1000-1")[2:] == [
        flush + "processing batch batch_size=1 proof_kind=porep-c2 slot_size=0",
        flush + "dispatching per-partition synthesis (budget-gated) job_id=porep-1000-1 "
                "num_partitions=10 budget_available_gib=465",
        flush + "assigned pipeline sequence number job_id=porep-1000-1 job_seq=1"]
    assert _at_once(r.log_lines, "porep-1000-1")
    holds = _holds(r.sim)
    assert len(holds) >= 3 and all(h.flushed_wall_s == h.enqueued_wall_s for h in holds)


def test_max_batch_size_1_sends_each_request_at_once_in_span_synth_single() -> None:
    """engine.rs:2053: with `max_batch_size = 1` no request goes to the collector; the
    dispatcher sends it at once in span `synth_single{proof_kind=porep-c2}` (2093-2101), no
    `synth_preempt_flush` before it (the collector is empty, 2075) and no
    `synth_timeout_flush` at all; the dispatcher line still says the wait it never uses."""
    r = simulate("batch-wait", seed=SEED, duration_s=40.0, max_batch_size=1)
    said = _messages(r.log_lines)
    assert ("cuzk_core::engine: synthesis dispatcher started (budget-gated) max_batch_size=1 "
            "max_batch_wait_ms=5000 slot_size=0 synthesis_concurrency=1") in said
    single = "synth_single{proof_kind=porep-c2}: cuzk_core::engine: "
    assert _sent(said, "porep-1000-1") == [
        "cuzk_core::scheduler: job enqueued job_id=porep-1000-1 proof_kind=porep-c2 "
        "priority=Normal queue_position=0",
        "cuzk_core::scheduler: job dequeued for proving job_id=porep-1000-1 proof_kind=porep-c2",
        single + "processing batch batch_size=1 proof_kind=porep-c2 slot_size=0",
        single + "dispatching per-partition synthesis (budget-gated) job_id=porep-1000-1 "
                 "num_partitions=10 budget_available_gib=465",
        single + "assigned pipeline sequence number job_id=porep-1000-1 job_seq=1"]
    assert _at_once(r.log_lines, "porep-1000-1")
    assert not any("synth_timeout_flush" in m or "synth_preempt_flush" in m for m in said)
    assert _holds(r.sim) == []


def test_the_batch_settings_are_sim_batch_waits_within_cuzks_bounds(tmp_path: Path) -> None:
    """`[sim.batch_wait]` under cuzk's names; cuzk's u32 max_batch_size (0 acts as 1: refused,
    1 says it), a wait of at least 0; only the scenario of one request at a time takes them
    (`batched`'s full batches are its own)."""
    f = tmp_path / "c.toml"
    f.write_text("[sim.batch_wait]\nmax_batch_size = 1\nmax_batch_wait_ms = 0\n")
    got = load_config(f).sim.batch_wait
    assert (got.max_batch_size, got.max_batch_wait_ms) == (1, 0)
    for bad in ("max_batch_size = 0", "max_batch_size = 4294967296", "max_batch_wait_ms = -1",
                "max_batch_wait_ms = 86400001"):
        f.write_text(f"[sim.batch_wait]\n{bad}\n")
        with pytest.raises(ConfigError, match=f"sim.batch_wait.{bad.split()[0]}"):
            load_config(f)
    assert with_batch_settings(SCENARIO_PARAMS["batched"], 1, 0) == SCENARIO_PARAMS["batched"]


@pytest.mark.parametrize("speed", [0.0, 1.0])
def test_the_simulator_the_runtime_opens_says_sim_batch_waits_settings(speed: float) -> None:
    """`--source sim:batch-wait` at speed 0 (lines parsed as made) and above (lines written to
    the log the tailer follows) runs cuzk with `[sim.batch_wait]`'s settings: its dispatcher
    line says them."""
    config = Config.model_validate({"sim": {"status_listen": "",
                                            "batch_wait": {"max_batch_wait_ms": 0}}})
    with ExitStack() as resources:
        wiring = open_sim(config, "batch-wait", speed, resources)
        wiring.gpu_source.read(0, SIM_EPOCH_WALL_S, 0)  # the simulated cuzk starts
        written = wiring.direct_lines if wiring.log_path is None else \
            [("stdout", line) for line in wiring.log_path.read_text().splitlines()]
        assert written is not None
        assert any("synthesis dispatcher started (budget-gated) max_batch_size=2 "
                   "max_batch_wait_ms=0 " in text for _, text in written)


def test_with_no_hold_every_gap_is_an_empty_pipeline_not_a_synthesis_worker_shortage(
        tmp_path: Path) -> None:
    """`max_batch_wait_ms = 0`: what is left between two proofs is Curio's turnaround (the next
    request comes `TURNAROUND_S` after the last proof) and that request's first partition's
    synthesis, all 4 synthesis workers starting its partitions at once. /status, polled during
    that synthesis, sees every worker busy, and each gap read `waits_on_synthesis` with
    "raise max_parallel_synthesis" advised: more workers cannot shorten it. Recorded and
    reported, every gap began with the pipeline empty, says when its request came, and the
    advice is the work not sent ahead (Curio's MaxPending, a guess), never more workers."""
    config = tmp_path / "nowait.toml"
    config.write_text("[sim.batch_wait]\nmax_batch_wait_ms = 0\n")
    recording, _ = record_sim(tmp_path, "batch-wait", 120.0, "--seed", str(SEED),
                              "--config", str(config))
    report = json.loads(report_of(recording, "--json"))
    gaps = report["gaps"]
    assert len(gaps) >= 8 and {g["prover_cause"] for g in gaps} == {"empty_pipeline"}
    assert all(f"work came {TURNAROUND_S:.1f} s in" in g["hint"] for g in gaps)
    assert all(any("'job enqueued job_id=porep-1000-" in e for e in g["prover_evidence"])
               for g in gaps)
    assert not any(a["setting"] == "[pipeline] max_parallel_synthesis"
                   for a in report["advice"])
    (advice,) = report["advice"]
    assert (advice["stall"], advice["setting"], advice["guess"]) == (
        "empty_pipeline", "Curio [Cuzk] MaxPending", True)
    assert any("more synthesis workers cannot close these gaps" in e
               for e in advice["evidence"])


def _partitions_per_h(truth: list[TruthInterval]) -> float:
    """The simulator's own throughput: partitions computed per hour of its GPU's working span
    (first compute start to last compute end), as compare's partitions/h counts them."""
    return len(truth) / (max(t.end_s for t in truth) - min(t.start_s for t in truth)) * 3600


#: Ten simulated minutes a side: 60 s windows, each over three proofs or more. (Five minutes
#: gives 30 s windows that beat against the ~16.4 s proof cycle: BEFORE's batch waits read
#: gone but "no measurable change" there, docs/compare.md.)
LOOP_S = 600.0


@pytest.fixture(scope="module")
def as_it_is(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scenario recorded with its own settings (BEFORE of both advices): once a run, not
    in each worker that draws one of the two advices (~1.5 CPU-s a recording). Read only."""
    return made_once(tmp_path_factory, "batch-wait-before",
                     lambda folder: record_sim(folder, "batch-wait", LOOP_S, "--seed",
                                               str(SEED))) / "batch-wait.jsonl"


#: Each side `compare` read in this process, by its label and path: BEFORE (made once a run,
#: read only) is the same side in both advices, and each AFTER the same in its text and JSON.
_SIDES_READ: dict[tuple[str, str], Side] = {}


@pytest.fixture
def sides_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """`compare` reads each recording once here (`_SIDES_READ`), not again for its JSON and
    for the other advice's BEFORE: reading a side (detection over ten simulated minutes, ~0.6
    CPU-s) was most of the loop's cost, and the sides are a pure function of the file and the
    default config. The command's own path (its arguments, the comparison, the text or JSON
    written) still runs in full for each call."""
    def read_once(label: str, path: str | Path, config: Config, logs: list[str],
                  progress: Progress | None = None, window: TimeWindow | None = None,
                  window_own: bool = False) -> Side:
        assert not logs and window is None  # the whole recording, as the key assumes
        key = (label, str(path))
        if key not in _SIDES_READ:
            _SIDES_READ[key] = read_side(label, path, config, logs, progress, window,
                                         window_own)
        return _SIDES_READ[key]

    monkeypatch.setattr(compare_command, "read_side", read_once)


def _compare(before: Path, after: Path, capsys: pytest.CaptureFixture[str],
             *flags: str) -> str:
    """`gapwatch compare BEFORE AFTER` (`flags`: `--json`) run as the command line runs it, in
    this process: its stdout. (The process around it adds nothing the loop below pins; each
    one started costs ~0.4 CPU-s of interpreter and imports.)"""
    assert main(["compare", str(before), str(after), *flags]) == 0
    return capsys.readouterr().out


@functools.cache
def _simulated_as_it_is() -> SimResult:
    """The scenario's truth for LOOP_S at SEED with its own settings (BEFORE of both advices),
    simulated once a process."""
    return simulate("batch-wait", seed=SEED, duration_s=LOOP_S)


@pytest.mark.parametrize(("setting", "advised"), [("max_batch_wait_ms", 0),
                                                  ("max_batch_size", 1)])
@pytest.mark.usefixtures("sides_read_once")
def test_the_advice_followed_on_the_simulator_is_judged_the_settings_gain(
        tmp_path: Path, as_it_is: Path, capsys: pytest.CaptureFixture[str], setting: str,
        advised: int) -> None:
    """The loop an operator closes: `record` the scenario as it is, follow the report's
    advice in `[sim.batch_wait]`, `record` again, `gapwatch compare` the two (text and JSON).
    The setting changed is named (5000 -> 0, or 2 -> 1) and said changed under its advice; the
    batch waits are gone; the change is judged a gain, not a different load, and its size is
    the simulator's truth: each gap lost the hold and only the hold, and the throughput rose
    as much as the simulated GPU's."""
    config = tmp_path / "advised.toml"
    config.write_text(f"[sim.batch_wait]\n{setting} = {advised}\n")
    before = as_it_is
    after, _ = record_sim(tmp_path, "batch-wait", LOOP_S, "--seed", str(SEED),
                          "--config", str(config))
    was = {"max_batch_wait_ms": "5000", "max_batch_size": "2"}[setting]
    name = f"[scheduler] {setting}"

    text = _compare(before, after, capsys)
    rows = {line[:30].strip(): line for line in text.splitlines()}
    assert re.search(rf"^ \*\[scheduler\] {setting} +{was} +{advised}$", text, re.M)
    assert f"    changed: {name} {was} → {advised}" in text
    assert rows["cause batch_wait"].split()[-2:] == ["gone", "better"]
    # What is left of each gap is the turnaround and the new request's first synthesis, the
    # pipeline empty at its start: not the synthesis workers' (they all start it at once).
    assert "cause empty_pipeline" in rows and "cause waits_on_synthesis" not in rows
    assert rows["busy share"].endswith("better") and rows["partitions/h"].endswith("better")
    assert "load: the same as far as /status tells" in text
    assert "different load" not in text and "of the predicted gain)" in text

    doc = json.loads(_compare(before, after, capsys, "--json"))
    assert doc["settings"]["changed"] == [{"setting": name, "before": was,
                                           "after": str(advised)}]
    assert [(a["setting"], a["changed"]) for a in doc["payoff"]["advice"]] == [
        ("[scheduler] max_batch_size", setting == "max_batch_size"),
        ("[scheduler] max_batch_wait_ms", setting == "max_batch_wait_ms")]
    figures = {f["figure"]: f for f in doc["figures"]}
    waits = figures["idle s/h, prover: batch_wait"]
    assert waits["after"] == 0 and waits["verdict"] == "better"
    assert doc["load"] == {"known": True, "differs": False}
    achieved = doc["payoff"]["achieved"]
    assert achieved["verdict"] == "better" and achieved["share_of_predicted_gain"] > 0

    # The truth: the same runs simulated here. BEFORE held every request 5 s, AFTER none.
    truth_before = _simulated_as_it_is()
    truth_after = simulate(
        "batch-wait", seed=SEED, duration_s=LOOP_S,
        max_batch_size=advised if setting == "max_batch_size" else None,
        max_batch_wait_ms=advised if setting == "max_batch_wait_ms" else None)
    assert {round(h.flushed_wall_s - h.enqueued_wall_s, 6) for h in _holds(truth_before.sim)} \
        == {WAIT_S}
    assert all(h.flushed_wall_s == h.enqueued_wall_s for h in _holds(truth_after.sim))
    # Every BEFORE gap a batch wait, and each AFTER gap is its gap less the hold alone: the
    # idle per gap fell by max_batch_wait_ms.
    idle, gaps = figures["idle s/h"], figures["gaps/h"]
    assert waits["before"] == pytest.approx(idle["before"])
    per_gap_s = [idle[side] / gaps[side] for side in ("before", "after")]
    assert per_gap_s[0] - per_gap_s[1] == pytest.approx(WAIT_S, abs=0.2)
    # The throughput gained is the simulated GPU's.
    truth_ratio = _partitions_per_h(truth_after.truth) / _partitions_per_h(truth_before.truth)
    assert achieved["throughput_ratio"] == pytest.approx(truth_ratio, rel=0.03)
