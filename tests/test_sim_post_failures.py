"""The simulator's `post-failed` and `post-pipeline-off` scenarios end to end: recorded by
`gapwatch record --source sim:...`, a failed WinningPoSt is said failed with cuzk's error (on
stderr, to `--on-event` as `post_failed`, in the report of the recording), and the monolithic
ones of a cuzk with its pipeline off are timed in one step (queue, prove) against their
deadline. Before, both were tested only on hand-written lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sim_recordings import record_sim, report_of

from gapwatch.sources.sim_monolithic import (
    ARRIVES_BEFORE_END_S,
    FAIL_AFTER_S,
    PROVE_ERROR,
    WINNING_PROVE_S,
)
from gapwatch.sources.sim_post import FAILED_AT_S, PROVE_START_ERROR


def _ended(report_json: str) -> list[dict[str, Any]]:
    """The proofs that ended, in order (a late one is also said while it still ran)."""
    proofs: list[dict[str, Any]] = [e["proof"] for e in
                                    json.loads(report_json)["prover_events"]["proof"]
                                    if e["proof"]["done"]]
    return proofs


def test_a_winningpost_whose_gpu_prove_start_fails_is_said_failed_with_cuzks_error(
        tmp_path: Path) -> None:
    """`post-failed`: its `GPU prove start failed` (engine.rs:3282) in its GPU worker's span
    fails it at once: FAILED on record's stderr, `--on-event` run as `post_failed`, and the
    report of the recording says it failed with cuzk's error, never late."""
    hook_out = tmp_path / "hook.jsonl"
    recording, err = record_sim(tmp_path, "post-failed", FAILED_AT_S + 5, hook_out=hook_out)
    assert f"{PROVE_START_ERROR} (after" in err and "FAILED" in err
    calls = [json.loads(x) for x in hook_out.read_text().splitlines()]
    [failed] = [c for c in calls if c["GAPWATCH_EVENT"] == "post_failed"]
    assert failed["GAPWATCH_STATE"] == "failed"
    assert PROVE_START_ERROR in failed["GAPWATCH_CAUSE_WORDS"]
    text = report_of(recording)
    assert "Prover events: 2 PoSt proof(s) (1 failed, 0 late, 0 at risk)" in text
    assert f"error: {PROVE_START_ERROR}" in text
    verdicts = [(p["verdict"], p["error"])
                for p in _ended(report_of(recording, "--json"))]
    assert verdicts == [("ok", None), ("failed", PROVE_START_ERROR)]


def test_with_the_pipeline_off_each_winningpost_is_timed_in_one_step_and_the_failed_one_failed(
        tmp_path: Path) -> None:
    """`post-pipeline-off`: one monolithic worker proves whole PoRep C2 proofs; a WinningPoSt
    waits for the one it holds (queue), then is proved in one call (prove): on time when it
    came near the PoRep's end, late behind a whole PoRep (`[pipeline] enabled = true` the
    setting), failed with cuzk's `proof failed` error (engine.rs:3471)."""
    recording, err = record_sim(tmp_path, "post-pipeline-off", 110)
    assert "LATE" in err and f"proof failed: {PROVE_ERROR}" in err
    text = report_of(recording)
    assert "Prover events: 3 PoSt proof(s) (1 failed, 1 late, 0 at risk)" in text
    on_time, late, failed = _ended(report_of(recording, "--json"))
    assert all(p["one_step"] and p["synth_s"] is None and p["gpu_s"] is None
               for p in (on_time, late, failed))
    assert on_time["verdict"] == "ok"
    assert on_time["queue_s"] == pytest.approx(ARRIVES_BEFORE_END_S, abs=0.01)
    assert on_time["prove_s"] == pytest.approx(WINNING_PROVE_S, abs=0.01)
    assert late["verdict"] == "late" and late["queue_s"] > late["deadline_s"]
    assert late["setting"] is not None and "[pipeline] enabled = true" in late["setting"]
    assert failed["verdict"] == "failed" and failed["error"] == f"proof failed: {PROVE_ERROR}"
    assert failed["prove_s"] == pytest.approx(FAIL_AFTER_S, abs=0.01)
