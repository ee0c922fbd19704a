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

from evaluation.simulate import simulate
from gapwatch.sources.sim_monolithic import (
    ARRIVES_BEFORE_END_S,
    FAIL_AFTER_S,
    PROVE_ERROR,
    WINNING_PROVE_S,
)
from gapwatch.sources.sim_post import (
    FAILED_AT_S,
    FIRST_TASK_ID,
    PROVE_START_ERROR,
    PROVE_START_FAILED_WORDS,
    PROVE_START_PANIC_LINE,
    PROVE_START_PANIC_MESSAGE,
    TASK_ID_STEP,
    prove_start_error,
)


def _ended(report_json: str) -> list[dict[str, Any]]:
    """The proofs that ended, in order (a late one is also said while it still ran)."""
    proofs: list[dict[str, Any]] = [e["proof"] for e in
                                    json.loads(report_json)["prover_events"]["proof"]
                                    if e["proof"]["done"]]
    return proofs


def test_a_winningpost_whose_gpu_prove_start_panics_is_said_failed_with_cuzks_error(
        tmp_path: Path) -> None:
    """`post-failed`: its prove start panics (a CUDA error, supraseal-c2/src/lib.rs:316) and
    its GPU worker writes `GPU prove start task panicked` (engine.rs:3302) in its span, which
    fails it at once: FAILED on record's stderr, `--on-event` run as `post_failed`, and the
    report of the recording says it failed with cuzk's error, never late, nor a phase after
    its failure "not read". It wrote `GPU prove start failed: Unsatisfiable`, a line curio
    e0294b0f cannot write (`gpu_prove_start` fails only with `MalformedSrs`, which cuzk's
    SupraSeal SRS never gives)."""
    hook_out = tmp_path / "hook.jsonl"
    recording, err = record_sim(tmp_path, "post-failed", FAILED_AT_S + 5, hook_out=hook_out)
    assert f"{PROVE_START_FAILED_WORDS} (after" in err and "FAILED" in err
    assert "Unsatisfiable" not in err
    calls = [json.loads(x) for x in hook_out.read_text().splitlines()]
    [failed] = [c for c in calls if c["GAPWATCH_EVENT"] == "post_failed"]
    assert failed["GAPWATCH_STATE"] == "failed"
    assert PROVE_START_ERROR in failed["GAPWATCH_CAUSE_WORDS"]
    text = report_of(recording)
    assert "Prover events: 2 PoSt proof(s) (1 failed, 0 late, 0 at risk)" in text
    assert f"error: {PROVE_START_FAILED_WORDS}" in text
    # It failed on the GPU: its finalize never ran, so it is not said "not read" (it was:
    # "not read: its finalize (0.0 s of its 2.9 s)").
    assert "not read" not in text
    verdicts = [(p["verdict"], p["error"])
                for p in _ended(report_of(recording, "--json"))]
    assert verdicts == [("ok", None), ("failed", PROVE_START_FAILED_WORDS)]


def test_the_failed_winningposts_lines_are_cuzks_in_the_order_cuzk_writes_them() -> None:
    """The simulated cuzk's lines of each failed WinningPoSt after its GPU_START: the panic on
    stderr (the hook's note after the run's first panic only), then in its GPU worker's span
    `GPU_TIMING prove_start returned` (engine.rs:3148) and `GPU prove start task panicked`
    (3302), as curio e0294b0f writes them; no `GPU prove start failed` (3282, unreachable
    there)."""
    lines = simulate("post-failed", seed=1, duration_s=60 + FAILED_AT_S + 5).log_lines
    texts = [text for _stream, text in lines]
    assert not any("GPU prove start failed" in t for t in texts)
    starts = [i for i, (stream, text) in enumerate(lines) if text == PROVE_START_PANIC_LINE]
    assert len(starts) == 2 and all(lines[i][0] == "stderr" for i in starts)
    first, second = ([text for _stream, text in lines[i:i + 5]] for i in starts)
    job = "winpost-1000-1a2b3c02"
    [pickup] = [t for t in texts if t.startswith("TIMELINE,") and f"GPU_START,{job}," in t]
    worker = pickup.rsplit("worker=", 1)[1]
    span = (f"gpu_worker{{worker_id={worker} gpu=0 job_id={job} proof_kind=winning-post "
            "batch_size=1 partition=None}: cuzk_core::engine: ")
    assert first[1] == PROVE_START_PANIC_MESSAGE and first[2].startswith("note: run with `")
    assert first[3].endswith(f"  INFO {span}GPU_TIMING prove_start returned worker_id={worker} "
                             "partition=None total_pre_prove_ms=300 "
                             "spawn_blocking_wall_ms=300")
    assert first[4].endswith(f" ERROR {span}GPU prove start task panicked "
                             f"error={PROVE_START_ERROR}")
    assert second[1] == PROVE_START_PANIC_MESSAGE and "GPU_TIMING" in second[2]
    # Each panic's JoinError names its own tokio task: every one said `task 41`.
    assert second[3].endswith(f"error={prove_start_error(FIRST_TASK_ID + TASK_ID_STEP)}")
    timeline = [t for t in texts if t.startswith("TIMELINE,") and job in t]
    assert [t.split(",")[2] for t in timeline] == [
        "SYNTH_START", "SYNTH_END", "GPU_QUEUE", "GPU_PICKUP", "GPU_START"]


def _what_to_change(text: str) -> list[str]:
    return text.split("\nWhat to change (cuzk's own settings; docs/advice.md)\n")[1] \
        .split("\n\n")[0].splitlines()


def test_failed_winningposts_lead_what_to_change_with_their_error_never_nothing_to_change(
        tmp_path: Path) -> None:
    """`post-failed` over three cycles: 3 WinningPoSt failed with `GPU prove start task
    panicked`. The section said only "nothing to change: no gap" beside them. Now its first
    line says how many of which kind failed, cuzk's error and what upstream says of that line
    (no cuzk setting: a CUDA error supraseal-c2 turned into a panic; a CUDA out of memory may
    be sppark's leak), in text and in `--json` (`proof_advice`)."""
    recording, _err = record_sim(tmp_path, "post-failed", 2 * 60 + FAILED_AT_S + 5)
    lines = _what_to_change(report_of(recording))
    assert lines[0].startswith("  PoSt: 3 WinningPoSt failed (no proof came of it")
    # Three panics, three tokio tasks: one failure said of each (their errors differ only in
    # the task's number), in the text and in the JSON alike.
    assert (f"cuzk said '{PROVE_START_FAILED_WORDS}' (the first of 3; the others differ only "
            "in their numbers) (engine.rs:3302): no cuzk setting: a panic in cuzk's task: "
            "supraseal-c2 turns every CUDA error into one") in lines[0]
    assert "lotus#13634" in lines[0]
    assert "nothing to change" not in "\n".join(lines)
    [advice] = json.loads(report_of(recording, "--json"))["proof_advice"]
    assert (advice["proof_kind"], advice["verdict"], advice["count"], advice["error"],
            advice["cause"], advice["setting"], advice["numbers_differ"]) == (
        "winning-post", "failed", 3, PROVE_START_FAILED_WORDS, "GPU prove start task panicked",
        None, True)


def test_late_winningposts_lead_what_to_change_with_the_setting_and_the_logs_figures(
        tmp_path: Path) -> None:
    """`post`: its late WinningPoSt (its SRS evicted, reloaded 31 s inside its synthesis) were
    advised on in the PoSt table only; "What to change" spoke of the restarts' gaps alone. Now
    its first line: how many late, the longest against the deadline, and the eviction setting
    with the log's figures; one proof said late while running and at its end counts once."""
    from gapwatch.sources.sim_post import CYCLE_S, LATE_AT_S

    recording, _err = record_sim(tmp_path, "post", CYCLE_S + LATE_AT_S + 40)
    lines = _what_to_change(report_of(recording))
    assert lines[0].startswith("  PoSt: 2 WinningPoSt late, the longest 35.0 s of its 30 s "
                               "deadline: setting (the latest's words): [memory] "
                               "eviction_min_idle: raise it above the time between "
                               "WinningPoSts (~20 s here")
    assert "after 16 s idle" in lines[0] and "budget_available_gib=0 after it" in lines[0]
    [advice] = json.loads(report_of(recording, "--json"))["proof_advice"]
    assert (advice["verdict"], advice["count"], advice["setting"]) == (
        "late", 2, "[memory] eviction_min_idle")


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
