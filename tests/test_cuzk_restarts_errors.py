"""Restarts (start lines, /status uptime, a new pid on the GPU) and what they cost; a gap that
spans a restart is the restart's; cuzk's failure lines and panics as error events; a gap after
an error says so; pipeline facts reset."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec
import pytest
from parsed_logs import events_of_lines, fed, watched_events

from gapwatch.commands.parse import format_timeline
from gapwatch.core.evidence_types import NO_COPIES, NO_HOST
from gapwatch.core.explain import Evidence, GapFacts, hint_of
from gapwatch.core.models import Gap, LogEvent, ProcessMemory, ProverEvent, ProverStatus
from gapwatch.core.prover import ProverView
from gapwatch.cuzk.advice import advice_lines, advise
from gapwatch.cuzk.errors import Incidents, error_event
from gapwatch.cuzk.partitions import derive_timeline
from gapwatch.cuzk.pipeline import PipelineFacts
from gapwatch.cuzk.prover import CuzkProver, view_of
from gapwatch.cuzk.restarts import RESTART_CAUSES, RestartWatch, how_it_ended
from gapwatch.logs.parse import LogParser

DATA = Path(__file__).parent / "data" / "cuzk-upstream"


def events_of(name: str, offline: bool = True, arrival: float = 5000.0) -> list[LogEvent]:
    parser = LogParser(offline=offline)
    out: list[LogEvent] = []
    for i, line in enumerate((DATA / name).read_text().splitlines()):
        out += parser.parse_line(line, name, i, arrival + i)
    return out + parser.flush()


watched = watched_events


def status(t: float, uptime: float) -> ProverStatus:
    return ProverStatus("127.0.0.1:9821", int(t * 1e9), t, 1.0, uptime, {}, [], 0, 0, 0, 0)


# -- restarts ------------------------------------------------------------------------------

def test_a_restart_in_the_log_is_one_event_and_its_cost_one_stretch_with_its_parts() -> None:
    events = watched(events_of("restart.log"))
    [restart] = [e for e in events if e.kind == "restart"]
    [cost] = [e for e in events if e.kind == "restart_cost"]
    assert "no shutdown line" in restart.message and "cuzk-daemon starting" in restart.message
    # From the old run's last GPU work (GPU_END at +44 s) to the new run's first (+95 s).
    assert cost.length_s == pytest.approx(51.0, abs=0.01)
    names = {p.name: round(p.end_s - p.start_s, 1) for p in cost.parts}
    assert names["down"] == pytest.approx(10.0)
    assert names["SRS reloaded"] == pytest.approx(12.0)
    assert names["first wave synthesis"] == pytest.approx(28.0, abs=0.1)
    assert "pool pinned again" in names
    assert "first wave after it: 3" in cost.message


def test_the_first_start_of_a_log_is_not_a_restart() -> None:
    assert not [e for e in watched(events_of("post-behind-partitions.log"))
                if e.kind == "restart"]


def test_uptime_going_back_is_a_restart_and_the_start_line_beside_it_the_same_one() -> None:
    w = RestartWatch()
    assert w.feed_status(status(1000.0, 800.0)) == []
    assert w.feed_status(status(1001.0, 801.0)) == []
    [ev] = w.feed_status(status(1030.0, 3.0))
    assert ev.kind == "restart" and ev.t_wall_s == pytest.approx(1027.0)
    assert "uptime_secs went back from 801 s to 3 s" in ev.message
    line = LogEvent(1027.01, "line", "tracing", "starting cuzk engine", "")
    assert w.feed_log(line) == []  # the same restart, seen twice
    assert w.restarts == 1


def test_a_crash_loop_faster_than_the_merge_window_is_each_restart_said() -> None:
    # Start lines within 8 s were one restart: a daemon that dies at start-up and is started
    # again every 3 s (RestartSec=3) was one restart a window, 360,000 runs of a storm 449.
    w = RestartWatch()
    for k in range(5):
        t = 1000.0 + 3.0 * k
        w.feed_log(LogEvent(t, "line", "tracing", "cuzk-daemon starting", ""))
        # Its engine's line, beside it, is the same start (one sign of each kind a run).
        w.feed_log(LogEvent(t + 0.5, "line", "tracing", "starting cuzk engine", ""))
    assert w.restarts == 4  # the first start of the log is not a restart
    # The same line read twice (a recording's log events and the --log file they came from)
    # is one start.
    again = RestartWatch()
    for _ in range(2):
        again.feed_log(LogEvent(1000.0, "line", "tracing", "cuzk-daemon starting", ""))
        again.feed_log(LogEvent(1000.5, "line", "tracing", "starting cuzk engine", ""))
    assert again.restarts == 0


def test_a_new_prover_pid_on_the_gpu_is_a_restart_unless_one_was_already_seen() -> None:
    w = RestartWatch()
    assert w.feed_process(ProcessMemory(1, 100.0, 0, 4242, "cuzk", 1, 1)) == []
    [ev] = w.feed_process(ProcessMemory(2, 200.0, 0, 5151, "cuzk", 1, 1))
    assert "new cuzk pid 5151 on GPU 0" in ev.message
    # A start line, then the new process on the GPU at its first CUDA work a minute later.
    w2 = RestartWatch()
    w2.feed_log(LogEvent(10.0, "timeline", "timeline", "GPU_END", "", job_id="porep-1-2"))
    w2.feed_process(ProcessMemory(1, 20.0, 0, 1, "cuzk", 1, 1))
    assert len(w2.feed_log(LogEvent(300.0, "line", "tracing", "cuzk-daemon starting", ""))) == 1
    assert w2.feed_process(ProcessMemory(2, 360.0, 0, 2, "cuzk", 1, 1)) == []
    assert w2.restarts == 1


def test_a_restart_after_sigint_says_so() -> None:
    w = RestartWatch()
    w.feed_log(LogEvent(1.0, "line", "tracing", "cuzk-daemon starting", ""))
    w.feed_log(LogEvent(5.0, "line", "tracing", "received SIGINT, shutting down", ""))
    [ev] = w.feed_log(LogEvent(20.0, "line", "tracing", "cuzk-daemon starting", ""))
    assert "after 'received SIGINT" in ev.message


@pytest.mark.parametrize(("lines", "cause", "hint"), [
    (["received SIGINT, shutting down"], "sigint", "after SIGINT"),
    (["partition synthesis complete"], "killed", "killed or crashed, no shutdown line"),
    (["pinned pool checkout FAILED"], "unknown", ""),  # its log at WARN: not known
    ([], "unknown", ""),  # none of its lines read: not known
])
def test_how_a_run_ended_is_one_reading_its_token_its_words_and_its_hints(
        lines: list[str], cause: str, hint: str) -> None:
    """`GAPWATCH_CAUSE` (the event's token) and the restart's words were two if-chains, each
    with its own words (`restart_cause` beside `how_it_ended`): one reading now gives the
    token, its words, the restart's message and the hint's few, so the page's CAUSE and its
    LINE cannot come to say two things."""
    w = RestartWatch()
    for i, text in enumerate(lines):
        level = "WARN" if "FAILED" in text else "INFO"
        w.feed_log(LogEvent(2.0 + i, "line", "tracing", text, "", level=level))
    w.feed_status(status(10.0, 500.0))
    [restart] = w.feed_status(status(30.0, 5.0))
    ended = how_it_ended("received SIGINT, shutting down" in lines,
                         2.0 if lines else None, "partition synthesis complete" in lines)
    assert restart.cause is not None
    assert (restart.cause, ended.cause, ended.hint) == (cause, cause, hint)
    assert restart.message.startswith(f"cuzk restarted {ended.words}")
    assert RESTART_CAUSES[restart.cause] == ended.cause_words
    assert w.kept[-1].ended == hint


def test_a_restart_is_called_killed_only_where_the_old_runs_info_lines_were_read() -> None:
    """cuzk writes its shutdown line at INFO (main.rs:237): its absence means killed only
    where INFO lines of the old run were read. A log kept at `warn` (TIMELINE lines and
    warnings only), or no log at all, says nothing of how the run ended."""
    def restart_after(lines: list[LogEvent]) -> str:
        w = RestartWatch()
        for line in lines:
            w.feed_log(line)
        w.feed_status(status(10.0, 500.0))
        [restart] = w.feed_status(status(30.0, 5.0))
        return restart.message

    timeline = LogEvent(2.0, "line", "timeline", "GPU_END", "")
    warning = LogEvent(3.0, "line", "tracing", "pinned pool checkout FAILED", "", level="WARN")
    info = LogEvent(4.0, "line", "tracing", "partition synthesis complete", "", level="INFO")
    assert "killed" in restart_after([timeline, warning, info])
    at_warn = restart_after([timeline, warning])
    assert "killed" not in at_warn and "kept no INFO lines" in at_warn
    no_log = restart_after([])
    assert "killed" not in no_log and "none of its log lines were read" in no_log


def test_the_partition_table_keeps_every_run_and_names_the_first_wave() -> None:
    run = derive_timeline(events_of("restart.log"))
    rows = [(p.run, p.job_id, p.partition) for p in run.partitions]
    assert (1, "porep-1000-77", 0) in rows and (1, "porep-1000-77", 1) in rows
    assert (2, "porep-1000-77", 0) in rows  # Curio's retry of the same job: a row of its own
    second = next(p for p in run.partitions if p.run == 2)
    assert second.first_wave and second.pinned_words == "no"
    table = format_timeline(run)
    assert table.splitlines()[0].startswith("run ") and "first wave" in table


def test_pipeline_facts_reset_what_was_in_flight_when_the_prover_starts_again() -> None:
    facts = PipelineFacts()
    events = events_of("lost-job.log")
    cut = next(i for i, e in enumerate(events) if e.name == "GPU_QUEUE"
               and e.job_id == "winpost-1000-11111111")
    for e in events[:cut + 1]:
        facts.feed(e)
    assert facts.view().monolithic_in_flight
    facts.feed(LogEvent(events[cut].t_wall_s + 5, "line", "tracing", "starting cuzk engine", ""))
    view = facts.view()
    assert view.monolithic_in_flight == () and view.queued == 0
    assert facts.runs == 2


def test_a_monolithic_job_whose_step_failed_is_no_later_gaps_cause() -> None:
    """post-failed.log: WinningPoSt 3c4d's `GPU prove start failed` (engine.rs:3282, in its GPU
    worker's span, naming it) at +12.5 s, and 4d5e's `synthesis failed` (2855, span
    `synth_single{proof_kind=winning-post}`, naming no job; the one monolithic synthesis in
    flight) at +21 s: neither gets a GPU_END. Both stayed listed in flight until cuzk restarted,
    and the GPU idle from +24 s to +40 s (waiting on a PoRep partition's synthesis) was said
    to wait on 3c4d "on the GPU", as was the gap from +8 s, in which 4d5e synthesised."""
    events = events_of("post-failed.log")  # one file: its lines in the order written
    facts = PipelineFacts()
    for ev in events:
        facts.feed(ev)
    assert facts.view().monolithic_in_flight == ()
    gaps, _ = _gaps_over(events, [(5.0, 8.0), (22.0, 24.0), (40.0, 55.0)])
    during, after = sorted(gaps, key=lambda g: g.start_s)
    assert during.prover_cause == "monolithic"
    assert "winpost-1000-4d5e6f70 synthesising during the gap" in during.prover_evidence[0]
    assert after.prover_cause == "waits_on_synthesis"
    assert not any("winpost" in e for e in after.prover_evidence)


def _mono_start(t_s: float, job: str, kind: str) -> str:
    """A monolithic job's SYNTH_START (engine.rs:2665) `t_s` seconds into `_monolithic_run`."""
    return f"TIMELINE,{round((t_s - 0.03) * 1000)},SYNTH_START,{job},kind={kind}"


def _mono_on_gpu(t_s: float, job: str, worker: int) -> list[str]:
    """Its synthesis done and the job on `worker` (engine.rs:2745, 2848, 3023, 3131), at `t_s`."""
    ms = round((t_s - 0.03) * 1000)
    return [f"TIMELINE,{ms},SYNTH_END,{job},synth_ms=2000",
            f"TIMELINE,{ms},GPU_QUEUE,{job},monolithic",
            f"TIMELINE,{ms},GPU_PICKUP,{job},worker={worker}",
            f"TIMELINE,{ms},GPU_START,{job},worker={worker}"]


def _monolithic_run(*lines: str, apart: bool = False) -> PipelineFacts:
    """PipelineFacts of a cuzk run started at 17:00:00 (its TIMELINE epoch at +0.03 s), then
    `lines`, read from one file (cuzk's stdout and stderr both to it: `2>&1`, the journal), or,
    `apart`, its TIMELINE lines from stderr and the rest from stdout (`events_of_lines`)."""
    run = [f"{_at(0.0)}  INFO cuzk_daemon: cuzk-daemon starting",
           f"{_at(0.03)}  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true",
           *lines]
    if apart:
        return fed(PipelineFacts(), run)
    facts, parser = PipelineFacts(), LogParser()
    for text in run:
        for ev in parser.parse_line(text, "cuzk.log"):
            facts.feed(ev)
    return facts


def test_a_failure_naming_no_job_ends_none_of_the_monolithic_jobs_it_could_be() -> None:
    """Two WindowPoSt partitions synthesise at once (`[pipeline] synthesis_concurrency` 2:
    each batch task in its own span `synth_single{proof_kind=window-post}`, engine.rs:2099,
    1941-1970) and one fails: `synthesis failed` names no job. Neither is guessed ended: both
    stay in flight, marked, the line counted, and a later gap waiting on them says the failure
    may have been its job's. So with two WinningPoSt on the GPU (the split prove's default) and
    its finalizer's `GPU proving failed` (engine.rs:3257, outside the worker's span)."""
    facts = _monolithic_run(
        _mono_start(10.0, "wdpost-1000-0", "window-post"),
        _mono_start(10.5, "wdpost-1000-1", "window-post"),
        f"{_at(20.0)} ERROR synth_single{{proof_kind=window-post}}: cuzk_core::engine: "
        "synthesis failed error=invalid vanilla proof for sector 7")
    assert facts.view().monolithic_in_flight == (
        "window-post wdpost-1000-0 (failed?)", "window-post wdpost-1000-1 (failed?)")
    assert facts.mono_failures_unplaced == 1
    start_s = events_of_lines([f"{_at(25.0)}  INFO x: y"])[0].t_wall_s
    view = facts.log_view(0, start_s, start_s + 5.0, "host_stall")
    assert view.cause == "monolithic"
    assert ("'synthesis failed' at 17:00:20.000 named no job while 2 monolithic jobs could have "
            "been the one that failed, this one among them") in view.evidence[1]
    on_gpu = _monolithic_run(
        _mono_start(10.0, "winpost-1000-a", "winning-post"), *_mono_on_gpu(12.0, "winpost-1000-a", 0),
        _mono_start(10.5, "winpost-1000-b", "winning-post"), *_mono_on_gpu(12.5, "winpost-1000-b", 1),
        f"{_at(14.0)} ERROR cuzk_core::engine: GPU proving failed error=b_g2_msm failed")
    assert on_gpu.view().monolithic_in_flight == (
        "winning-post winpost-1000-a (failed?)", "winning-post winpost-1000-b (failed?)")


def test_a_failure_ends_only_the_monolithic_job_it_names_or_can_only_be() -> None:
    """A SnapDeals batch (`synth_batch_full{batch_size=2 proof_kind=snap-update}`, engine.rs:
    2056) and a WindowPoSt synthesise; the WindowPoSt's `synthesis failed`, in span
    `synth_single{proof_kind=window-post}`, can be its only: it ends, the batch stays. Two
    WinningPoSt on the GPU; `GPU prove start failed` in worker 1's span names b (engine.rs:3282,
    3005-3012): b ends, a stays. One on the GPU beside the batch's synthesis, and the split
    prove finalizer's `GPU proving failed` (3257, no span): it ends, the batch stays. A
    synthesis begun after the line is not its, though read before it. Each stayed in flight,
    every later gap waiting on it."""
    by_kind = _monolithic_run(
        _mono_start(10.0, "snap-1000-7", "snap-update"),
        _mono_start(10.5, "wdpost-1000-0", "window-post"),
        f"{_at(20.0)} ERROR synth_single{{proof_kind=window-post}}: cuzk_core::engine: "
        "synthesis failed error=invalid vanilla proof for sector 7")
    assert by_kind.view().monolithic_in_flight == ("snap-update snap-1000-7",)
    by_job = _monolithic_run(
        _mono_start(10.0, "winpost-1000-a", "winning-post"), *_mono_on_gpu(12.0, "winpost-1000-a", 0),
        _mono_start(10.5, "winpost-1000-b", "winning-post"), *_mono_on_gpu(12.5, "winpost-1000-b", 1),
        f"{_at(13.0)} ERROR gpu_worker{{worker_id=1 gpu=0 job_id=winpost-1000-b "
        "proof_kind=winning-post batch_size=1 partition=None}: cuzk_core::engine: GPU prove "
        "start failed error=GPU prove start failed: Unsatisfiable")
    assert by_job.view().monolithic_in_flight == ("winning-post winpost-1000-a",)
    only_on_gpu = _monolithic_run(
        _mono_start(10.0, "snap-1000-7", "snap-update"),
        _mono_start(10.5, "winpost-1000-a", "winning-post"), *_mono_on_gpu(12.0, "winpost-1000-a", 0),
        f"{_at(14.0)} ERROR cuzk_core::engine: GPU proving failed error=b_g2_msm failed")
    assert only_on_gpu.view().monolithic_in_flight == ("snap-update snap-1000-7",)
    read_ahead = _monolithic_run(
        _mono_start(10.0, "wdpost-1000-0", "window-post"),
        _mono_start(20.5, "wdpost-1000-1", "window-post"),
        f"{_at(20.0)} ERROR synth_single{{proof_kind=window-post}}: cuzk_core::engine: "
        "synthesis failed error=invalid vanilla proof for sector 7")
    assert read_ahead.view().monolithic_in_flight == ("window-post wdpost-1000-1",)
    assert by_kind.mono_failures_unplaced == by_job.mono_failures_unplaced == 0



def test_a_failure_naming_no_job_read_apart_from_its_candidates_ends_none_and_is_counted(
        ) -> None:
    """The finalizer's `GPU proving failed` (engine.rs:3257, no span) with WinningPoSt a on
    the GPU, b picked up just before the failure: read from one file, both could be its job
    and none is ended. Followed live with cuzk's stdout ahead of its stderr, b's pickup
    (written before the failure) is read after it: a alone could be its, and it was ended as
    "the one", the answer resting on read order. PostTracker places such a line only on the
    stream of the run's start line (`gapwatch.cuzk.unnamed_failure`): so here, none ended, the
    line counted, a marked, as it would be read in any order."""
    fail = f"{_at(14.0)} ERROR cuzk_core::engine: GPU proving failed error=b_g2_msm failed"
    a = [_mono_start(10.0, "winpost-1000-a", "winning-post"), *_mono_on_gpu(12.0, "winpost-1000-a", 0)]
    b = [_mono_start(10.5, "winpost-1000-b", "winning-post"), *_mono_on_gpu(13.5, "winpost-1000-b", 1)]
    stdout_ahead = _monolithic_run(*a, fail, *b, apart=True)
    assert stdout_ahead.mono_failures_unplaced == 1
    assert stdout_ahead.view().monolithic_in_flight == (
        "winning-post winpost-1000-a (failed?)", "winning-post winpost-1000-b")
    start_s = events_of_lines([f"{_at(25.0)}  INFO x: y"])[0].t_wall_s
    view = stdout_ahead.log_view(0, start_s, start_s + 5.0, "host_stall")
    assert any("this monolithic job was the only one read that could have been the one that "
               "failed, but not read in the order cuzk wrote them" in e for e in view.evidence)
    in_order = _monolithic_run(*a, *b, fail, apart=True)
    assert in_order.mono_failures_unplaced == 1
    assert in_order.view().monolithic_in_flight == (
        "winning-post winpost-1000-a (failed?)", "winning-post winpost-1000-b (failed?)")


def _sync_picked_up(t_s: float, job: str, worker: int) -> list[str]:
    """Its synthesis done and the job on `worker` with `CUZK_DISABLE_SPLIT_PROVE=1`
    (engine.rs:2745, 2848, 3023): no GPU_START follows (3078-3118)."""
    return _mono_on_gpu(t_s, job, worker)[:3]


def _sync_worker_line(t_s: float, job: str, worker: int, batch: int, message: str) -> str:
    """A line of `job`'s GPU worker span (engine.rs:3005-3012), where the synchronous prove
    processes its result (`process_monolithic_result` at 3111, inside the span)."""
    kind = "snap-update" if job.startswith("snap") else "winning-post"
    return (f"{_at(t_s)}  INFO gpu_worker{{worker_id={worker} gpu=0 job_id={job} "
            f"proof_kind={kind} batch_size={batch} partition=None}}: cuzk_core::engine: "
            + message)


def _sync_completed(t_s: float, job: str, worker: int) -> str:
    """Its completion line (engine.rs:839-846) in its GPU worker's span."""
    return _sync_worker_line(t_s, job, worker, 1, "proof completed successfully (pipeline) "
                             "proof_len=192 total_ms=4100 queue_ms=0 synth_ms=2000 gpu_ms=1800")


def _gap_view(facts: PipelineFacts, start_s: float, end_s: float) -> tuple[str | None, list[str]]:
    """The log's cause and evidence for a gap of GPU 0 from `start_s` to `end_s` (s after
    17:00:00)."""
    t0 = events_of_lines([f"{_at(0.0)}  INFO x: y"])[0].t_wall_s
    view = facts.log_view(0, t0 + start_s, t0 + end_s, "host_stall")
    return view.cause, view.evidence


def test_a_monolithic_job_proved_with_split_prove_disabled_ends_at_its_completion_line() -> None:
    """`CUZK_DISABLE_SPLIT_PROVE=1` (engine.rs:3075): the GPU worker proves in one synchronous
    call and writes no GPU_START and no GPU_END (3078-3118). A WinningPoSt and a SnapDeals
    batch end at the lines `process_monolithic_result` writes inside their GPU worker's span,
    which names them (3005-3012, 3111): `proof completed successfully (pipeline)` (839-846),
    `batched proof completed — splitting results` (725-731). Both stayed in flight for good,
    and the GPU's idle a minute later (nothing queued) was said to wait on the WinningPoSt
    "on the GPU"."""
    facts = _monolithic_run(
        _mono_start(10.0, "winpost-1000-a", "winning-post"),
        *_sync_picked_up(12.0, "winpost-1000-a", 0),
        _sync_worker_line(12.001, "winpost-1000-a", 0, 1, "GPU_TIMING hot_path pre-prove "
                          "overhead worker_id=0 partition=None status_ms=0 fail_check_ms=0 "
                          "mark_busy_ms=0 total_overhead_ms=0"),
        f"{_at(13.8)}  INFO gpu_prove{{circuit_id=winning-32g partition=None}}: "
        "cuzk_core::pipeline: GPU prove complete proof_count=1 proof_bytes=192 gpu_ms=1800",
        _sync_completed(13.81, "winpost-1000-a", 0),
        _mono_start(20.0, "snap-1000-7", "snap-update"),
        *_sync_picked_up(30.0, "snap-1000-7", 1),
        _sync_worker_line(34.0, "snap-1000-7", 1, 2, "batched proof completed — splitting "
                          "results total_proof_bytes=6144 num_sectors=2 synth_ms=10000 "
                          "gpu_ms=4000"),
        _sync_worker_line(34.0, "snap-1000-8", 1, 2, "sector proof delivered from batch "
                          "sector_idx=1 job_id=snap-1000-8 proof_len=3072 total_ms=14100"))
    assert facts.view().monolithic_in_flight == ()
    cause, evidence = _gap_view(facts, 60.0, 65.0)
    assert cause != "monolithic" and not any("winpost" in e for e in evidence)
    during, _ = _gap_view(facts, 12.5, 13.0)  # its prove's b_g2_msm: the GPU idle, it on it
    assert during == "monolithic"


def test_with_no_completion_line_read_a_synchronous_job_ends_by_its_workers_next_pickup() -> None:
    """cuzk's stderr alone (its TIMELINE lines; the completion lines are on stdout): a job
    picked up with no GPU_START (`CUZK_DISABLE_SPLIT_PROVE=1`) was proved before its worker
    looped (engine.rs:3078-3118), so its worker's next GPU_PICKUP (3023), of a partition too,
    ends it, its end bounded, not read, and said so. Another stream's worker 0 (another
    daemon's stderr) is not this one's. A job with a GPU_START (the split prove) is in its
    finalizer still when its worker picks up the next: only its GPU_END ends it."""
    lines = [_mono_start(10.0, "winpost-1000-a", "winning-post"),
             *_sync_picked_up(12.0, "winpost-1000-a", 0),
             "TIMELINE,24970,GPU_PICKUP,porep-9-9,worker=0,partition=1",  # the other daemon's
             _mono_start(29.0, "winpost-1000-b", "winning-post"),
             *_sync_picked_up(30.0, "winpost-1000-b", 0),
             "TIMELINE,39970,GPU_PICKUP,porep-1000-5,worker=0,partition=0"]
    facts = PipelineFacts()
    for ev in events_of_lines([
            f"{_at(0.03)}  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true",
            *lines]):
        other = ev.job_id == "porep-9-9"
        facts.feed(msgspec.structs.replace(ev, stream="the-other-stderr") if other else ev)
    assert facts.view().monolithic_in_flight == ()
    cause, evidence = _gap_view(facts, 26.0, 28.0)  # a on the GPU until b's pickup at +30 s
    assert cause == "monolithic" and "winpost-1000-a on the GPU" in evidence[0]
    assert ("its end was not read: cuzk wrote no GPU_END for it (no GPU_START either: a "
            "synchronous prove, CUZK_DISABLE_SPLIT_PROVE=1, engine.rs:3078-3118) and its "
            "completion line was not read; its worker 0 picked up its next job at "
            "17:00:30.000: on the GPU at most until then") in evidence
    assert _gap_view(facts, 45.0, 50.0)[0] != "monolithic"
    split = _monolithic_run(_mono_start(10.0, "winpost-1000-c", "winning-post"),
                            *_mono_on_gpu(12.0, "winpost-1000-c", 1),
                            "TIMELINE,12970,GPU_PICKUP,porep-1000-5,worker=1,partition=1")
    assert split.view().monolithic_in_flight == ("winning-post winpost-1000-c",)


@pytest.mark.parametrize("failed", [False, True])
def test_a_completion_line_read_after_the_next_pickup_says_when_the_job_ended(failed: bool) -> None:
    """cuzk's stdout read after its stderr: the synchronous job was ended by its worker's next
    pickup at +40 s (its end bounded); its completion line at +33 s, read after, is its own
    end (so is its failure line in its span, engine.rs:977 via 3111): the GPU idle from +34 s
    to +39 s is not its."""
    lines = [_mono_start(20.0, "winpost-1000-b", "winning-post"),
             *_sync_picked_up(30.0, "winpost-1000-b", 0),
             "TIMELINE,39970,GPU_PICKUP,porep-1000-5,worker=0,partition=0"]
    bounded = _monolithic_run(*lines)
    assert _gap_view(bounded, 34.0, 39.0)[0] == "monolithic"
    own_end = (_sync_worker_line(33.0, "winpost-1000-b", 0, 1, "GPU proving failed error=GPU "
                                 "prove failed: out of memory").replace("  INFO ", " ERROR ")
               if failed else _sync_completed(33.0, "winpost-1000-b", 0))
    read_after = _monolithic_run(*lines, own_end)
    cause, evidence = _gap_view(read_after, 34.0, 39.0)
    assert cause != "monolithic" and not any("winpost" in e for e in evidence)
    assert _gap_view(read_after, 31.0, 32.0)[0] == "monolithic"


# -- a gap that spans a restart ---------------------------------------------------------------

def _gaps_over(records: Sequence[LogEvent | ProverStatus | ProcessMemory], busy_s: list[tuple[float, float]],
               blind_s: tuple[float, float] | None = None) -> tuple[list[Gap], CuzkProver]:
    """The closed gaps of a GPU busy over `busy_s` (seconds after the first record), with
    cuzk's log events and `/status` snapshots fed to the detector as they come, and its
    prover; `blind_s`: no GPU sample in that stretch (NVML blocked)."""
    from gapwatch.core.config import DetectorConfig
    from gapwatch.core.detector import GapDetector
    from gapwatch.core.models import GpuInfo, GpuSample

    prover = CuzkProver()
    det = GapDetector(DetectorConfig(), [GpuInfo(index=0, link_bytes_per_s=63e9)], period_s=0.1,
                      live=False, prover=prover)
    fed = sorted(records, key=lambda r: r.t_wall_s)
    t0 = fed[0].t_wall_s
    end_s = max(b for _, b in busy_s) + 2.0
    gaps: dict[int, Gap] = {}
    for i in range(int(end_s / 0.1)):
        t = t0 + i * 0.1
        while fed and fed[0].t_wall_s <= t:
            det.feed(fed.pop(0))
        if blind_s is not None and t0 + blind_s[0] < t < t0 + blind_s[1]:
            continue
        busy = any(t0 + a <= t < t0 + b for a, b in busy_s)
        sample = GpuSample(0, int(t * 1e9), t, 100_000_000, 95.0 if busy else 0.0,
                           99.0 if busy else 0.0, 30e9 if busy else 1e6, 1e6)
        gaps.update((g.gap_id, g) for g in det.feed(sample) if isinstance(g, Gap))
    gaps.update((g.gap_id, g) for g in det.finish() if isinstance(g, Gap))
    return [g for g in gaps.values() if g.end_s is not None and not g.retracted], prover


#: restart.log's GPU work (s after its first line): the old run's two partitions, then the new
#: run's first, 51 s after the old run's last work (killed, back 10 s later, its SRS reloaded
#: from disk for 12 s, its first wave synthesised unpinned).
RESTART_BUSY_S = [(40.0, 44.0), (95.0, 98.0)]


def test_a_gap_spanning_a_restart_of_cuzk_is_caused_by_the_restart_not_the_srs_reload() -> None:
    """The gap from the old run's last GPU work to the new run's first took the SRS reload
    inside it as its cause, and its advice was the SRS's "nothing to change unless it repeats",
    though it repeats after every restart. The restart is its cause: how the old run ended,
    the restart's cost (the same words as its prover event) with the SRS reload a part of it,
    and the restart's advice."""
    events = events_of_lines((DATA / "restart.log").read_text().splitlines())
    [gap], prover = _gaps_over(events, RESTART_BUSY_S)
    assert gap.duration_s == pytest.approx(51.0, abs=0.2)
    assert gap.prover_cause == "restart"
    assert "prover log: cuzk restarted" in gap.hint
    assert "killed or crashed, no shutdown line; the restart cost the GPU 51.0 s, its SRS reload 12.0 s " \
           "of it" in gap.hint
    assert "loading the SRS" not in gap.hint
    said = {e.kind: e.message for e in watched(events)}
    assert gap.prover_evidence == [said["restart"], said["restart_cost"]]
    assert "SRS reloaded 12.0 s" in said["restart_cost"]
    report = advise([gap], view_of(prover.facts()))
    assert report.advice == []
    [note] = report.no_setting
    assert note.stall == "restart" and note.gaps == 1
    assert "unless it repeats" not in note.why and "it repeats at every restart" in note.why
    assert "killed or crashed: cuzk handles SIGINT alone" in note.why


#: restart.log's new run's first wave (pipeline.rs:270, 2397-2402): its first synthesis finds
#: no capacity hint, is unpinned, and caches the hint; put after its SRS load.
FIRST_WAVE_LINES = [
    '2026-05-12T17:01:07.000000Z  INFO synthesize_partition{job_id="porep-1000-77" partition=0}:'
    " cuzk_core::pipeline: no capacity hint cached — first synthesis will grow organically "
    "circuit_id=porep-32g",
    "2026-05-12T17:01:33.800000Z  INFO cuzk_core::pipeline: cached synthesis capacity hint "
    "circuit_id=porep-32g num_constraints=3 num_aux=3 num_inputs=3",
    '2026-05-12T17:01:33.900000Z  INFO synthesize_partition{job_id="porep-1000-77" partition=0}:'
    " cuzk_core::pipeline: partition synthesis complete partition=0 synth_ms=26900 "
    "is_pinned=false",
]


def test_a_restart_gaps_hint_leads_with_the_restart_and_says_its_first_wave_is_by_design(
        ) -> None:
    """The restart gap read "pageable buffers seen (is_pinned=false); SMs idle ...; prover log:
    cuzk restarted ...": its new run's first wave, unpinned by design (no capacity hint yet,
    upstream's pinned pool is used only with one), led the hint of a gap the restart explains.
    The restart leads; the first wave is said as by design, after."""
    lines = (DATA / "restart.log").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "SRS loaded successfully" in line) + 1
    lines[at:at] = FIRST_WAVE_LINES[:1]
    at = next(i for i, line in enumerate(lines) if "pinned pool: allocated" in line)
    lines[at:at] = FIRST_WAVE_LINES[1:]
    [gap], _ = _gaps_over(events_of_lines(lines), RESTART_BUSY_S)
    assert gap.kind == "host_stall" and gap.prover_cause == "restart"
    assert gap.hint.startswith("prover log: cuzk restarted")
    assert gap.hint.endswith("; is_pinned=false: the new run's first syntheses, unpinned by "
                             "design (its first wave: no capacity hint yet)")
    assert "pageable" not in gap.hint


def test_a_restart_whose_exit_blinded_nvml_is_still_the_cause_of_the_idle_after_the_hole() -> None:
    """A real restart: NVML answers nothing for seconds while the driver frees the killed
    run's pinned pool. The hole used to retract the gap over the restart, and the idle after
    it waited for a busy period: the restart was the cause of no gap at all. Now the idle read
    after the hole is a gap, the restart's, with its cost; the idle before it is a gap of its
    own, ending at its last reading, the hole said in its hint."""
    events = events_of_lines((DATA / "restart.log").read_text().splitlines())
    gaps, _ = _gaps_over(events, RESTART_BUSY_S, blind_s=(46.0, 51.4))
    before, after = sorted(gaps, key=lambda g: g.start_s)
    assert before.duration_s == pytest.approx(2.0, abs=0.2)
    assert "then no readings for 5.4 s (a hole in the data" in before.hint
    assert after.prover_cause == "restart"
    assert after.duration_s == pytest.approx(95.0 - 51.5, abs=0.2)
    assert "the restart cost the GPU 51.0 s, its SRS reload 12.0 s of it" in after.hint


def test_a_gap_after_a_restarts_first_gpu_work_or_at_a_first_start_is_not_the_restarts() -> None:
    """Only the stretch from a restart to its new run's first GPU work is the restart's: the
    first start of a log is no restart (its SRS load is the gap's cause, a first load), and a
    gap after the new run's first GPU work is not the restart's."""
    lines = (DATA / "restart.log").read_text().splitlines()
    second = lines.index(next(x for x in lines[1:] if "cuzk-daemon starting" in x))
    first_start = events_of_lines(lines[second:])
    [gap], _ = _gaps_over(first_start, [(0.0, 0.3), (41.0, 44.0)])
    assert gap.prover_cause == "srs_loading"
    events = events_of_lines(lines)
    gaps, _ = _gaps_over(events, [*RESTART_BUSY_S, (98.5, 100.0)])
    assert [g.prover_cause for g in sorted(gaps, key=lambda g: g.start_s)] == ["restart", None]


def test_a_restart_seen_by_a_new_pid_on_the_gpu_alone_is_the_cause_of_the_gap_that_spans_it(
) -> None:
    """No log, no `/status`: NVML's processes on the GPU are what gapwatch has. The watcher said
    the new cuzk pid was a restart, but the prover's facts (which explain gaps) were fed no
    process readings, so the gap around that restart had no cause and no advice."""
    t0 = 1_796_000_000.0
    old = [ProcessMemory(int(t * 1e9), t0 + t, 0, 4242, "/usr/local/bin/cuzk", 1, 1)
           for t in (0.0, 1.0, 2.0, 3.0)]
    new = [ProcessMemory(int(t * 1e9), t0 + t, 0, 5151, "/usr/local/bin/cuzk", 1, 1)
           for t in (29.0, 31.0)]
    [gap], _ = _gaps_over(old + new, [(0.0, 5.0), (30.0, 32.0)])
    assert gap.prover_cause == "restart"
    # Said by what said it: neither the prover's log nor its /status.
    assert "GPU processes: cuzk restarted" in gap.hint
    assert "new /usr/local/bin/cuzk pid 5151 on GPU 0" in gap.prover_evidence[0]
    assert "killed" not in gap.hint  # no line of the log read is no news of how it ended
    # A process of another name is no restart of cuzk: it is counted by none
    # (`test_a_new_pid_of_cuzks_name_counts_restarts_and_one_of_another_name_is_only_said`),
    # and its gap says what /proc showed, not that cuzk restarted.
    other = [ProcessMemory(r.t_mono_ns, r.t_wall_s, 0, r.pid, "python3", 1, 1)
             for r in old + new]
    [gap], _ = _gaps_over(other, [(0.0, 5.0), (30.0, 32.0)])
    assert gap.prover_cause == "restart" and "cuzk" not in gap.hint
    assert gap.hint.startswith("GPU processes: the GPU's process restarted")


def _python3(t0: float, pid: int, at_s: Sequence[float], gone_from_s: float | None = None
             ) -> list[ProcessMemory]:
    """Readings of a `python3` process on GPU 0 (a stand-in prover), at `at_s` seconds after
    `t0`; from `gone_from_s` on, read with no /proc fields (NVML still lists it, /proc no
    longer has it: it exited, the driver still freeing its pool)."""
    return [ProcessMemory(int(t * 1e9), t0 + t, 0, pid, "python3",
                          *((None, None) if gone_from_s is not None and t >= gone_from_s
                            else (32 << 30, 400 << 20)))
            for t in at_s]


def test_a_process_replaced_on_the_gpu_is_the_restart_every_gap_of_its_idle_says() -> None:
    """No log, no `/status`, a process not named cuzk (the H200 stand-in, python3): /proc
    showed it gone and a new pid of its name on the GPU, and the idle between, cut by the
    holes NVML's blind spots left, was three gaps each asking "synthesis, a lock or the
    scheduler?". The gaps around it are the restart's, as a restart the log says is (cause
    `restart`, no setting: its advice's "no setting", never a payoff), in words that say what
    /proc showed and do not call the process cuzk's; the GPU's idle after the new pid, until
    its first work, is the restart's too (its first work was read in no log)."""
    t0 = 1_796_000_000.0
    old = _python3(t0, 558, [float(t) for t in range(0, 13)], gone_from_s=12.0)
    new = _python3(t0, 592, [float(t) for t in range(20, 40)])
    gaps, _ = _gaps_over(old + new, [(0.0, 10.0), (38.0, 40.0)], blind_s=(13.0, 15.0))
    gaps = sorted(gaps, key=lambda g: g.start_s)
    assert len(gaps) == 2  # the idle before the hole, and after it to the new run's work
    for g in gaps:
        assert g.prover_cause == "restart", g.hint
        assert g.hint.startswith("GPU processes: the GPU's process restarted"), g.hint
        assert ("pid 558 (python3), last read alive at 00:53:31.000 and gone from /proc at "
                "00:53:32.000; a new one, pid 592 (python3), first read at 00:53:40.000") in g.hint
        assert "cuzk" not in g.hint and "synthesis, a lock or the scheduler?" not in g.hint
    report = advise(gaps, view_of(None))
    assert report.advice == []
    [note] = report.no_setting
    assert note.gaps == 2
    said = "\n".join(advice_lines(report))
    for cuzk_only in CUZK_RESTART_ONLY:
        assert cuzk_only not in said, said
    # A second process of the name on the GPU beside the first, which still runs: no restart.
    both = _python3(t0, 558, [float(t) for t in range(0, 40)]) + new
    gaps, _ = _gaps_over(both, [(0.0, 10.0), (38.0, 40.0)])
    assert [g.prover_cause for g in gaps] == [None]


def test_a_restart_whose_first_gpu_work_was_not_read_holds_its_gpu_until_the_next_busy_reading(
        ) -> None:
    """A restart a new cuzk pid said, no log: its new run's first GPU work is read nowhere, so
    its stretch was the restart's moment alone, and the idle after the new run pinned its pool
    (NVML blind meanwhile: a gap of its own after the hole) was no restart's, though the GPU had
    not worked since. Every gap of the idle stretch that holds the restart is its."""
    t0 = 1_796_000_000.0
    old = [ProcessMemory(int(t * 1e9), t0 + t, 0, 4242, "cuzk", 1, 1) for t in range(0, 10)]
    new = [ProcessMemory(int(t * 1e9), t0 + t, 0, 5151, "cuzk", 1, 1) for t in range(20, 40)]
    gaps, _ = _gaps_over(old + new, [(0.0, 10.0), (38.0, 40.0)], blind_s=(25.0, 27.0))
    before, after = sorted(gaps, key=lambda g: g.start_s)
    assert after.start_s >= t0 + 26.9  # the idle after the hole, the new pid before it
    for g in (before, after):
        assert g.prover_cause == "restart"
        assert g.hint.startswith("GPU processes: cuzk restarted"), g.hint
    # A pid of cuzk's name is cuzk's restart: its advice gives cuzk's restart procedure.
    [note] = advise(gaps, view_of(None)).no_setting
    assert note.stall == "restart" and "Restart cuzk only when needed" in note.why


def test_a_real_restart_recorded_without_its_log_is_said_as_one_restart_in_report_and_replay(
        ) -> None:
    """tests/data/h200-restart (`report` with no log): the stand-in's restart read as three
    host_stall gaps, each "synthesis, a lock or the scheduler?", a payoff of ~3.32x for closing
    them, while the same report's Blind spots said pid 558 exited and pid 592 pinned its pool.
    Each gap of the restart's idle (truth.json: the first run's last work to the second's
    first) is now the restart's, in the report and in a replay alike, and no setting's payoff
    counts them."""
    import json

    from gapwatch.config import Config
    from gapwatch.engine.runtime import build_runtime
    from gapwatch.offline.report import build_report

    case = Path(__file__).parent / "data" / "h200-restart"
    truth = json.loads((case / "truth.json").read_text())
    idle_from, idle_to = truth["first"]["idle"], truth["second"]["busy"]
    report = build_report(case / "restart.jsonl.gz", Config(), workers=1)

    def restart_gaps(gaps: Sequence[Gap]) -> list[tuple[int, str | None, str]]:
        return sorted((g.gap_id, g.prover_cause, g.hint) for g in gaps
                      if g.end_s is not None and not g.retracted
                      and g.end_s > idle_from - 1.0 and g.start_s < idle_to + 1.0)

    said = restart_gaps(report.gaps)
    assert len(said) == 3
    for _, cause, hint in said:
        assert cause == "restart", hint
        assert "pid 558 (python3)" in hint and "pid 592 (python3)" in hint
        assert "synthesis, a lock or the scheduler?" not in hint
        assert "worked again" not in hint  # idle at every reading until the new run's work
    assert report.advice.advice == []
    assert [(n.stall, n.gaps) for n in report.advice.no_setting] == [("process_replaced", 3)]
    rt = build_runtime(Config(), f"replay:{case / 'restart.jsonl.gz'}", speed=0)
    rt.start()
    try:
        assert rt.wait(60)
        rt.session.close()  # end of data: settle the detector (what stop() does first)
        replayed = restart_gaps(rt.store.snapshot().gaps)
    finally:
        rt.stop()
    assert replayed == said


#: Words only a restart of cuzk's own may say: its restart procedure and its source.
CUZK_RESTART_ONLY = ("cuzk restarted", "restart of cuzk", "Restart cuzk", "SIGINT", "main.rs")


def test_a_process_proc_alone_saw_replaced_is_advised_as_what_proc_showed_not_as_cuzk_restarting(
        ) -> None:
    """tests/data/h200-restart (a python3 stand-in, no log): its hints said the GPU's process
    was replaced and its Prover events "restarts not known", but its advice said "cuzk
    restarted: the GPU waited for its new run ... Restart cuzk only when needed ... SIGINT",
    and its GPUs line said "where the prover said it waited (its /status or log): 3 restart",
    though /proc said it. The advice says what /proc showed, with no claim it was cuzk and no
    cuzk restart procedure, and the GPUs line names /proc as what said the cause."""
    from gapwatch.config import Config
    from gapwatch.offline.report import build_report
    from gapwatch.offline.report_text import format_text

    case = Path(__file__).parent / "data" / "h200-restart"
    report = build_report(case / "restart.jsonl.gz", Config(), workers=1)
    [note] = report.advice.no_setting
    assert note.gaps == 3 and report.advice.advice == []
    said = "\n".join(advice_lines(report.advice))
    for cuzk_only in CUZK_RESTART_ONLY:
        assert cuzk_only not in said, said
    assert "the GPU's process was replaced (/proc" in said, said
    assert "not known to be cuzk's" in said, said
    text = format_text(report)
    assert "3 restart (/proc)" in text, text
    assert "(its /status or log): 3 restart" not in text


def test_a_restart_seen_by_status_uptime_alone_is_the_cause_of_the_gap_that_spans_it() -> None:
    """No log: `/status` uptime going back is the restart (restarts.py); its cost, read from the
    log, is not known, nor how the old run ended, and the hint says the prover's status said
    it."""
    t0 = 1_796_000_000.0
    polls = [status(t0 + t, 500.0 + t) for t in (0.0, 1.0, 3.0)] + [
        status(t0 + t, t - 25.0) for t in (27.0, 29.0)]
    [gap], _ = _gaps_over(polls, [(0.0, 5.0), (30.0, 32.0)])
    assert gap.prover_cause == "restart"
    assert "prover status: cuzk restarted" in gap.hint
    assert "killed" not in gap.hint  # no line of the log read is no news of a shutdown line
    assert "uptime_secs went back" in gap.prover_evidence[0]
    assert "killed" not in gap.prover_evidence[0]
    assert "how the previous run ended is not known" in gap.prover_evidence[0]
    assert "the restart's cost is read from the log" in gap.prover_evidence[1]


def _at(t_s: float) -> str:
    """cuzk's tracing time `t_s` seconds after 2026-05-12T17:00:00Z."""
    return (datetime(2026, 5, 12, 17, tzinfo=UTC)
            + timedelta(seconds=t_s)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _after_a_restart(job_s: float, first_gpu_s: float, srs_s: float | None = None) -> list[str]:
    """cuzk's lines: its first run works on the GPU from +55 s to +60 s; it is killed and
    started again at +70 s, writes the lines it comes up with (workers, engine started, ready
    at +70.05 s), gets its first job at `job_s` (`job enqueued`, scheduler.rs:67), loads its SRS
    from then for `srs_s`, and its first GPU work starts at `first_gpu_s`."""
    epoch_s = 70.03  # the new run's TIMELINE offsets count from its `starting cuzk engine`
    lines = [f"{_at(0.0)}  INFO cuzk_daemon: cuzk-daemon starting",
             f"{_at(0.03)}  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true",
             "TIMELINE,54970,GPU_START,porep-1000-77,worker=0,partition=0",
             "TIMELINE,59970,GPU_END,porep-1000-77,worker=0,partition=0,gpu_ms=5000",
             f"{_at(70.0)}  INFO cuzk_daemon: cuzk-daemon starting",
             f"{_at(70.03)}  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true",
             f"{_at(70.032)}  INFO cuzk_core::engine: pipeline GPU worker started worker_id=0 "
             "gpu=0 sub_id=0",
             f"{_at(70.04)}  INFO cuzk_core::engine: cuzk engine started num_workers=1 "
             "pipeline=true",
             f"{_at(70.05)}  INFO cuzk_daemon: cuzk-daemon ready, serving on 127.0.0.1:9820",
             f"{_at(job_s)}  INFO cuzk_core::scheduler: job enqueued job_id=porep-1000-78 "
             "proof_kind=porep-c2 priority=Normal queue_position=0"]
    if srs_s is not None:
        lines += [f"{_at(job_s + 0.01)}  INFO cuzk_core::srs_manager: loading SRS from disk "
                  "circuit_id=porep-32g",
                  f"{_at(job_s + 0.01 + srs_s)}  INFO cuzk_core::srs_manager: SRS loaded "
                  "successfully circuit_id=porep-32g"]
    offset_ms = round((first_gpu_s - epoch_s) * 1000)
    return lines + [f"TIMELINE,{offset_ms - 1900},SYNTH_START,porep-1000-78,partition=0",
                    f"TIMELINE,{offset_ms - 70},GPU_QUEUE,porep-1000-78,partition=0",
                    f"TIMELINE,{offset_ms},GPU_START,porep-1000-78,worker=0,partition=0",
                    f"TIMELINE,{offset_ms + 3000},GPU_END,porep-1000-78,worker=0,partition=0,"
                    "gpu_ms=3000"]


def test_the_wait_for_the_first_job_after_a_restart_is_no_work_not_the_restarts_cost() -> None:
    """The old run's work ends at +60 s, cuzk is started again at +70 s and ready at once, and
    its first job comes only at +598 s (Curio sent nothing), its first GPU work at +600 s. The
    540 s gap was all the restart's ("the restart cost the GPU 540.0 s", "restart cuzk only when
    needed") though its parts added to 10 s. The restart took 10 s to ready and 2 s from its
    first job to its GPU work; the 528 s between are no work, said as such, and the gap's cause."""
    from gapwatch.sinks.prover_event_metrics import ProverEventCounts

    events = events_of_lines(_after_a_restart(598.0, 600.0))
    [gap], prover = _gaps_over(events, [(55.0, 60.0), (600.0, 603.0)])
    assert gap.duration_s == pytest.approx(540.0, abs=0.2)
    assert gap.prover_cause == "no_work"
    assert "prover log: the prover had no work" in gap.hint
    assert "cuzk waited 528.0 s for its first job after it restarted" in gap.hint
    assert "the restart cost the GPU 12.0 s" in gap.hint  # both named, each its own share
    assert "cost the GPU 540" not in gap.hint
    said = {e.kind: e for e in watched(events)}
    cost = said["restart_cost"]
    assert gap.prover_evidence[1:] == [said["restart"].message, cost.message]
    assert "waited 528.0 s of the gap for its first job ('job enqueued' at 17:09:58.000" \
        in gap.prover_evidence[0]
    # The stretch is the whole idle; its cost is what the restart took: ready at cuzk's
    # `cuzk-daemon ready` line (main.rs:231, 258), the wait a part of it, not counted.
    assert cost.length_s == pytest.approx(540.0, abs=0.01)
    assert cost.waited_s == pytest.approx(527.95, abs=0.01)
    assert cost.cost_s == pytest.approx(12.05, abs=0.01)
    parts = {p.name: p for p in cost.parts}
    assert parts["waited for its first job"].start_s == pytest.approx(
        events[0].t_wall_s + 70.05, abs=0.001)
    assert parts["down"].end_s - parts["down"].start_s == pytest.approx(10.0, abs=0.01)
    assert "waited for its first job 528.0 s (no work: not counted as the restart's)" \
        in cost.message
    assert cost.message.startswith("the restart cost the GPU 12.0 s of the 540.0 s")
    counts = ProverEventCounts()
    for e in said.values():
        counts.count(e)
    assert counts.restart_cost_s == pytest.approx(12.05, abs=0.01)
    report = advise([gap], view_of(prover.facts()))
    [note] = report.no_setting
    assert note.stall == "no_work" and "Curio" in note.why
    assert "Restart cuzk only when needed" not in note.why
    # The old run's /status before it died (synthesis in flight) does not outvote the log.
    from gapwatch.cuzk.causes import with_log_cause
    assert with_log_cause("waits_on_synthesis", "no_work") == "no_work"


def test_a_restart_that_is_most_of_its_gap_names_the_wait_for_its_first_job_beside_it() -> None:
    """The first job comes 3 s after cuzk is ready and its SRS loads for 25 s: the restart is
    the gap's cause, and its 3 s wait for work is said beside its cost, not counted in it."""
    events = events_of_lines(_after_a_restart(73.05, 100.0, srs_s=25.0))
    [gap], _ = _gaps_over(events, [(55.0, 60.0), (100.0, 103.0)])
    assert gap.prover_cause == "restart"
    assert "the restart cost the GPU 37.0 s, its SRS reload 25.0 s of it; then cuzk waited " \
           "3.0 s for its first job, not counted" in gap.hint
    [cost] = [e for e in watched(events) if e.kind == "restart_cost"]
    assert cost.length_s == pytest.approx(40.0, abs=0.01)
    assert cost.cost_s == pytest.approx(37.0, abs=0.01)


def test_a_restart_whose_first_jobs_arrival_was_not_read_says_any_wait_is_in_its_cost() -> None:
    """Without `job enqueued` a wait for work cannot be told from the rest: the cost is the
    whole stretch, and says so."""
    lines = [x for x in _after_a_restart(598.0, 600.0) if "job enqueued" not in x]
    [cost] = [e for e in watched(events_of_lines(lines)) if e.kind == "restart_cost"]
    assert "its first job's arrival ('job enqueued', scheduler.rs:67) was not read: any wait " \
           "for work after it was ready is counted in it" in cost.message
    assert cost.waited_s is None and cost.cost_s == pytest.approx(540.0, abs=0.01)


def test_a_job_enqueued_after_the_new_runs_first_work_is_not_its_first_jobs_arrival() -> None:
    """Work began (its SRS loading, then synthesis) with no `job enqueued` read for it: a later
    job's line is not the first job's arrival, and no wait is said of the time before it."""
    lines = [x for x in _after_a_restart(75.0, 600.0, srs_s=20.0) if "job enqueued" not in x]
    loaded = next(i for i, x in enumerate(lines) if "SRS loaded" in x)
    lines.insert(loaded + 1, f"{_at(300.0)}  INFO cuzk_core::scheduler: job enqueued "
                             "job_id=winpost-1000-1a2b3c4d proof_kind=winning-post "
                             "priority=Critical queue_position=0")
    [cost] = [e for e in watched(events_of_lines(lines)) if e.kind == "restart_cost"]
    assert "waited for its first job" not in cost.message
    assert "its first job's arrival ('job enqueued', scheduler.rs:67) was not read" \
        in cost.message
    assert cost.waited_s is None

def _stopped_after(stop_s: float, sigint: bool, in_flight: bool = False,
                   then: Sequence[str] = ()) -> list[str]:
    """cuzk's lines: its first run works on the GPU from +55 s to +60 s, then has no job (or,
    `in_flight`, partition 1's synthesis begun at +61 s; `then`: its lines after that), and is
    stopped at `stop_s` (its SIGINT line, or killed without one after a last INFO line there);
    started again 4 s later, ready at once, its first job comes at once and its first GPU work
    2 s after."""
    start_s = stop_s + 4.0
    epoch_s = start_s + 0.03
    lines = [f"{_at(0.0)}  INFO cuzk_daemon: cuzk-daemon starting",
             f"{_at(0.03)}  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true",
             "TIMELINE,54970,GPU_START,porep-1000-77,worker=0,partition=0",
             "TIMELINE,59970,GPU_END,porep-1000-77,worker=0,partition=0,gpu_ms=5000"]
    if in_flight:
        lines.append("TIMELINE,60970,SYNTH_START,porep-1000-77,partition=1")
    lines += then
    lines.append(f"{_at(stop_s)}  INFO cuzk_daemon: received SIGINT, shutting down" if sigint
                 else f"{_at(stop_s)}  INFO cuzk_core::engine: evictor callback wired")
    offset_ms = round((start_s + 2.0 - epoch_s) * 1000)
    return lines + [
        f"{_at(start_s)}  INFO cuzk_daemon: cuzk-daemon starting",
        f"{_at(start_s + 0.03)}  INFO cuzk_core::engine: starting cuzk engine "
        "pipeline_enabled=true",
        f"{_at(start_s + 0.05)}  INFO cuzk_daemon: cuzk-daemon ready, serving on 127.0.0.1:9820",
        f"{_at(start_s + 0.05)}  INFO cuzk_core::scheduler: job enqueued job_id=porep-1000-78 "
        "proof_kind=porep-c2 priority=Normal queue_position=0",
        f"TIMELINE,{offset_ms - 1900},SYNTH_START,porep-1000-78,partition=0",
        f"TIMELINE,{offset_ms - 70},GPU_QUEUE,porep-1000-78,partition=0",
        f"TIMELINE,{offset_ms},GPU_START,porep-1000-78,worker=0,partition=0",
        f"TIMELINE,{offset_ms + 3000},GPU_END,porep-1000-78,worker=0,partition=0,gpu_ms=3000"]


def test_cuzk_stopped_after_ten_idle_minutes_was_up_with_no_work_not_down() -> None:
    """Its last GPU work at +60 s, no job after it, its SIGINT line at +660 s (an operator
    restarting an idle cuzk): the restart "cost the GPU 606.0 s", "down 600.0 s", and the
    gap was the restart's, though cuzk wrote its shutdown line at the end of those 600 s.
    It was up with nothing in flight: no work, not the restart's; down is the 4 s after."""
    events = events_of_lines(_stopped_after(660.0, sigint=True))
    [cost] = [e for e in watched(events) if e.kind == "restart_cost"]
    parts = {p.name: round(p.end_s - p.start_s, 2) for p in cost.parts}
    assert parts["no work before it stopped"] == 600.0 and parts["down"] == 4.0
    assert cost.length_s == pytest.approx(606.0, abs=0.01)
    assert cost.waited_s == pytest.approx(600.0, abs=0.01)
    assert cost.cost_s == pytest.approx(6.0, abs=0.01)
    assert cost.message.startswith(
        "the restart cost the GPU 6.0 s of the 606.0 s from 17:01:00 to 17:11:06 (its last "
        "work of the old run to its first of the new): cuzk was up with nothing in flight for "
        "600.0 s after its last GPU work, to its last line at 17:11:00, not the restart's; "
        "6.0 s from there to the new run's first GPU work. Parts: no work before it stopped "
        "600.0 s (nothing in flight: not counted as the restart's), down 4.0 s")
    [gap], _ = _gaps_over(events, [(55.0, 60.0), (666.0, 669.0)])
    assert gap.prover_cause == "no_work"
    assert "cuzk had no work for 600.0 s before it stopped" in gap.hint
    assert "cost the GPU 606" not in gap.hint and "the restart cost the GPU 6.0 s" in gap.hint
    assert gap.prover_evidence[0].startswith(
        "cuzk, up with nothing in flight after its last GPU work at 17:01:00.000, wrote its "
        "last line at 17:11:00.000 before it stopped: 600.0 s of the gap no work, not the "
        "restart's")


def test_cuzk_killed_with_work_in_flight_was_up_until_its_last_line_and_that_is_the_restarts(
        ) -> None:
    """A partition's synthesis began after its last GPU work, and its last line is 30 s
    later: it was up until then (not down), its work in flight lost with it: the restart's."""
    events = events_of_lines(_stopped_after(90.0, sigint=False, in_flight=True))
    [cost] = [e for e in watched(events) if e.kind == "restart_cost"]
    parts = {p.name: round(p.end_s - p.start_s, 2) for p in cost.parts}
    assert parts["up before it stopped"] == 30.0 and parts["down"] == 4.0
    assert "no work before it stopped" not in parts
    assert cost.cost_s == pytest.approx(36.0, abs=0.01)



def _sync_partition_done(t_s: float, job: str) -> str:
    """Partition 0's result line in its GPU worker's span (engine.rs:474-479 via 3105): the
    synchronous prove's (`CUZK_DISABLE_SPLIT_PROVE=1`), which writes no GPU_START or GPU_END."""
    return (f"{_at(t_s)}  INFO gpu_worker{{worker_id=0 gpu=0 job_id={job} proof_kind=porep-c2 "
            "batch_size=1 partition=Some(0)}: cuzk_core::engine: partition GPU prove complete "
            f"job_id={job} partition=0 gpu_ms=5000 filled=0")


def test_with_split_prove_disabled_a_restart_has_its_cost_and_an_idle_stop_is_no_work() -> None:
    """`_stopped_after`'s cuzk with `CUZK_DISABLE_SPLIT_PROVE=1`: each partition picked up
    (GPU_PICKUP, engine.rs:3023) and proved in one synchronous call, its result line in its
    GPU worker's span (3105, 474-479), no GPU_START and no GPU_END (3078-3118). Nothing of it
    was GPU work to restarts: no restart's cost was ever said (it waits for the new run's
    first GPU_START), the idle stop was not known idle, and a second restart after GPU work
    was one more of a crash loop."""
    epoch_s = 664.03
    new_ms = round((666.0 - epoch_s) * 1000)
    lines = [f"{_at(0.0)}  INFO cuzk_daemon: cuzk-daemon starting",
             f"{_at(0.03)}  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true",
             "TIMELINE,54970,GPU_PICKUP,porep-1000-77,worker=0,partition=0",
             _sync_partition_done(60.0, "porep-1000-77"),
             f"{_at(660.0)}  INFO cuzk_daemon: received SIGINT, shutting down",
             f"{_at(664.0)}  INFO cuzk_daemon: cuzk-daemon starting",
             f"{_at(664.03)}  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true",
             f"{_at(664.05)}  INFO cuzk_daemon: cuzk-daemon ready, serving on 127.0.0.1:9820",
             f"{_at(664.05)}  INFO cuzk_core::scheduler: job enqueued job_id=porep-1000-78 "
             "proof_kind=porep-c2 priority=Normal queue_position=0",
             f"TIMELINE,{new_ms - 1900},SYNTH_START,porep-1000-78,partition=0",
             f"TIMELINE,{new_ms - 70},GPU_QUEUE,porep-1000-78,partition=0",
             f"TIMELINE,{new_ms},GPU_PICKUP,porep-1000-78,worker=0,partition=0",
             _sync_partition_done(669.0, "porep-1000-78"),
             f"{_at(700.0)}  INFO cuzk_daemon: cuzk-daemon starting"]
    events = events_of_lines(lines)
    [cost] = [e for e in watched(events) if e.kind == "restart_cost"]
    parts = {p.name: round(p.end_s - p.start_s, 2) for p in cost.parts}
    assert parts["no work before it stopped"] == 600.0 and parts["down"] == 4.0
    assert cost.length_s == pytest.approx(606.0, abs=0.01)  # to the new run's pickup at +666
    assert cost.cost_s == pytest.approx(6.0, abs=0.01)
    watch = RestartWatch()
    for ev in events:
        watch.feed_log(ev)
    assert [r.in_a_row for r in watch.kept] == [1, 1]


def _mono_worker_line(t_s: float, job: str, message: str, level: str = " INFO") -> str:
    """A line of `job`'s monolithic worker span (`[pipeline] enabled = false`, engine.rs:3394),
    as post-pipeline-off.log has them."""
    return (f"{_at(t_s)} {level} monolithic_worker{{worker_id=0 gpu=0 job_id={job} "
            f"proof_kind=porep-c2}}: cuzk_core::engine: {message}")


def _pipeline_off_job(start_s: float, end_s: float | None, job: str) -> list[str]:
    """`job` arrives at `start_s` (scheduler.rs:67-73), its monolithic worker takes it
    (engine.rs:3397) and, `end_s` given, proves it in one call (3455-3462)."""
    lines = [f"{_at(start_s)}  INFO cuzk_core::scheduler: job enqueued job_id={job} "
             "proof_kind=porep-c2 priority=Normal queue_position=0",
             _mono_worker_line(start_s + 0.0001, job, "processing job (monolithic)")]
    if end_s is not None:
        ms = round((end_s - start_s) * 1000)
        lines.append(_mono_worker_line(
            end_s, job, f"proof completed successfully (monolithic) proof_len=1920 "
            f"total_ms={ms} queue_ms=0 deser_ms=0 prove_ms={ms - 2}"))
    return lines


def _pipeline_off_start(t_s: float) -> list[str]:
    """cuzk started at `t_s` with `[pipeline] enabled = false` (main.rs:63, engine.rs:1244,
    1339, 3378, 3511, main.rs:231), as post-pipeline-off.log starts."""
    return [f"{_at(t_s)}  INFO cuzk_daemon: cuzk-daemon starting",
            f"{_at(t_s + 0.03)}  INFO cuzk_core::engine: starting cuzk engine "
            "pipeline_enabled=false",
            f"{_at(t_s + 0.031)}  INFO cuzk_core::engine: initializing GPU workers num_gpus=1 "
            "gpu_workers_per_device=1 total_workers=1 gpus=[0]",
            f"{_at(t_s + 0.032)}  INFO cuzk_core::engine: monolithic GPU worker started "
            "worker_id=0 gpu=0",
            f"{_at(t_s + 0.033)}  INFO cuzk_core::engine: cuzk engine started num_workers=1 "
            "pipeline=false",
            f"{_at(t_s + 0.05)}  INFO cuzk_daemon: cuzk-daemon ready, serving on "
            "127.0.0.1:9820"]


def _pipeline_off_stopped_after(stop_s: float, sigint: bool, then: Sequence[str] = ()
                                ) -> list[str]:
    """`_stopped_after`'s story with the pipeline off (no TIMELINE line at all): a PoRep
    proved in one call from +20 s to +60 s; `then` its lines after it; stopped at `stop_s`
    (its SIGINT line, else killed with its last line the one before); started again 4 s later,
    ready 0.05 s after, its first job at +2 s, proved 3 s."""
    lines = [*_pipeline_off_start(0.0), *_pipeline_off_job(20.0, 60.0, "porep-1000-77"),
             *then]
    if sigint:
        lines.append(f"{_at(stop_s)}  INFO cuzk_daemon: received SIGINT, shutting down")
    start_s = stop_s + 4.0
    return lines + [*_pipeline_off_start(start_s),
                    *_pipeline_off_job(start_s + 2.0, start_s + 5.0, "porep-1000-78")]


def test_with_the_pipeline_off_a_restart_has_its_cost_and_restarts_after_work_are_no_loop(
        ) -> None:
    """cuzk with `[pipeline] enabled = false` writes no TIMELINE line: its monolithic worker
    proves each job in one call, `processing job (monolithic)` .. `proof completed
    successfully (monolithic)` in its span (engine.rs:3394-3462). Nothing of it was GPU work to
    restarts: no restart's cost was ever said (it waited for the new run's first GPU_START),
    and a restart after the new run's work was one more of a crash loop. The cost runs from
    the old run's last completion (+60 s) to the new run's first `processing job` (+666 s)."""
    lines = _pipeline_off_stopped_after(660.0, sigint=True)
    events = events_of_lines([*lines, *_pipeline_off_start(700.0)])
    [cost] = [e for e in watched(events) if e.kind == "restart_cost"]
    assert cost.start_s == pytest.approx(events_of_lines(lines)[0].t_wall_s + 60.0, abs=0.001)
    assert cost.length_s == pytest.approx(606.0, abs=0.01)
    watch = RestartWatch()
    for ev in events:
        watch.feed_log(ev)
    assert [r.in_a_row for r in watch.kept] == [1, 1]


def test_with_the_pipeline_off_an_idle_stop_is_no_work_and_the_restart_costs_what_it_took(
        ) -> None:
    """Its last proof done at +60 s, no job after it, its SIGINT line at +660 s: cuzk was up
    with nothing in flight for 600 s, not the restart's; down 4 s, ready 0.05 s later, its first
    job 1.95 s after that (no work either), taken at once: the restart cost the GPU 4.05 s."""
    lines = _pipeline_off_stopped_after(660.0, sigint=True)
    parts, cost_s = _parts_of_stop(lines)
    assert parts["no work before it stopped"] == 600.0 and parts["down"] == 4.0
    assert parts["startup"] == 0.05 and parts["waited for its first job"] == 1.95
    assert "up before it stopped" not in parts
    assert cost_s == pytest.approx(4.05, abs=0.01)
    # The gap over it is no work (it was the restart's), its idle 600 s said.
    [gap], _ = _gaps_over(events_of_lines(lines), [(40.0, 60.0), (666.5, 669.0)])
    assert gap.prover_cause == "no_work"
    assert "cuzk had no work for 600.0 s before it stopped" in gap.hint


def test_with_the_pipeline_off_a_run_killed_mid_proof_had_work_in_flight() -> None:
    """A second PoRep taken at +61 s (`processing job (monolithic)`), its proving begun
    (prover.rs:177-181's line at +61.2 s), cuzk killed with no line after: the 1.2 s to that
    line were up with the proof in flight (lost with it: the restart's), not no work."""
    parts, cost_s = _parts_of_stop(_pipeline_off_stopped_after(90.0, sigint=False, then=[
        *_pipeline_off_job(61.0, None, "porep-1000-79"),
        f"{_at(61.2)}  INFO prove_porep_c2{{job_id=\"porep-1000-79\"}}: cuzk_core::prover: "
        "calling seal_commit_phase2 (includes SRS load + synthesis + GPU + verify) "
        "sector_id=79 miner_id=1000"]))
    assert parts["up before it stopped"] == 1.2 and parts["down"] == 32.8
    assert "no work before it stopped" not in parts
    assert cost_s == pytest.approx(34.05, abs=0.01)  # its 1.95 s wait for a job not counted


def test_with_the_pipeline_off_a_failed_proof_ends_its_work_but_is_no_gpu_work_done() -> None:
    """The proof taken at +61 s fails at +62.5 s (`proof failed`, engine.rs:3471, ERROR, in
    its span) and cuzk is killed: nothing was in flight after it (no work, not the restart's),
    and the failure is no GPU work: the stretch still starts at the last completion (+60 s)."""
    lines = _pipeline_off_stopped_after(90.0, sigint=False, then=[
        *_pipeline_off_job(61.0, None, "porep-1000-79"),
        _mono_worker_line(62.5, "porep-1000-79", "proof failed error=seal_commit_phase2 failed",
                          level="ERROR")])
    [cost] = [e for e in watched(events_of_lines(lines)) if e.kind == "restart_cost"]
    parts = {p.name: round(p.end_s - p.start_s, 2) for p in cost.parts}
    assert parts["no work before it stopped"] == 2.5 and "up before it stopped" not in parts
    assert cost.start_s == pytest.approx(events_of_lines(lines)[0].t_wall_s + 60.0, abs=0.001)


def _synthesis_failed(t_s: float, partition: int) -> str:
    """cuzk's ERROR line in place of a partition's SYNTH_END (engine.rs:1784)."""
    return (f"{_at(t_s)} ERROR cuzk_core::engine: partition synthesis failed error=synthesis "
            f"error: constraint 12 unsatisfied job_id=porep-1000-77 partition={partition}")


def _gpu_worker_line(t_s: float, level: str, message: str) -> str:
    """A line of partition 2's GPU worker span (engine.rs:3005-3012)."""
    return (f"{_at(t_s)} {level} gpu_worker{{worker_id=0 gpu=0 job_id=porep-1000-77 "
            f"proof_kind=porep-c2 batch_size=1 partition=Some(2)}}: cuzk_core::engine: {message}")


def _parts_of_stop(lines: list[str]) -> tuple[dict[str, float], float | None]:
    """The restart cost's parts by name (their lengths) and its cost, of `lines`."""
    [cost] = [e for e in watched(events_of_lines(lines)) if e.kind == "restart_cost"]
    return {p.name: round(p.end_s - p.start_s, 2) for p in cost.parts}, cost.cost_s


@pytest.mark.parametrize("synthesis", [
    ["TIMELINE,60970,SYNTH_START,porep-1000-77,partition=1", _synthesis_failed(62.0, 1)],
    ["TIMELINE,60970,SYNTH_START,winpost-1000-1a2b3c4d,kind=winning-post",
     f"{_at(62.0)} ERROR synth_single{{proof_kind=winning-post}}: cuzk_core::engine: synthesis "
     "failed error=invalid vanilla proof for sector 7"]], ids=["partition", "monolithic"])
def test_a_run_whose_synthesis_failed_then_idled_until_killed_was_up_with_no_work(
        synthesis: list[str]) -> None:
    """A synthesis began at +61 s after the last GPU work and failed at +62 s (cuzk writes
    `partition synthesis failed`, engine.rs:1784, or a monolithic job's `synthesis failed`,
    2855, which names no job, never its SYNTH_END); nothing came after, and cuzk was killed at
    +700 s. The failed synthesis stayed counted in flight: the 640 s were "up before it stopped
    (work in flight)", the restart's cost. Nothing was in flight: no work, not the restart's."""
    parts, cost_s = _parts_of_stop(_stopped_after(700.0, sigint=False, then=synthesis))
    assert parts["no work before it stopped"] == 640.0 and parts["down"] == 4.0
    assert "up before it stopped" not in parts
    assert cost_s == pytest.approx(6.0, abs=0.01)


def test_a_failed_synthesis_ends_only_itself_the_other_in_flight_stays_until_it_ends() -> None:
    """Partitions 1 and 2 synthesise; 1 fails at +62 s. Killed at +90 s with 2 still
    synthesising, the run had work in flight: the restart's. Where 2 ended, was queued and
    picked up, and its GPU prove skipped (its job had failed: `skipping GPU prove for failed
    partitioned job`, engine.rs:3034, no GPU_START after), nothing was in flight: no work."""
    both = ["TIMELINE,61470,SYNTH_START,porep-1000-77,partition=2", _synthesis_failed(62.0, 1)]
    parts, cost_s = _parts_of_stop(_stopped_after(90.0, sigint=False, in_flight=True,
                                                  then=both))
    assert parts["up before it stopped"] == 30.0 and "no work before it stopped" not in parts
    assert cost_s == pytest.approx(36.0, abs=0.01)
    skipped = [*both,
               "TIMELINE,79970,SYNTH_END,porep-1000-77,partition=2,synth_ms=18500",
               "TIMELINE,79971,GPU_QUEUE,porep-1000-77,partition=2",
               "TIMELINE,79972,GPU_PICKUP,porep-1000-77,worker=0,partition=2",
               _gpu_worker_line(80.003, " INFO", "skipping GPU prove for failed partitioned job "
                                "job_id=porep-1000-77 partition=Some(2)")]
    parts, cost_s = _parts_of_stop(_stopped_after(90.0, sigint=False, in_flight=True,
                                                  then=skipped))
    assert parts["no work before it stopped"] == 30.0 and "up before it stopped" not in parts
    assert cost_s == pytest.approx(6.0, abs=0.01)


def _enqueued(t_s: float, job: str) -> str:
    """`job`'s request taken (scheduler.rs:67-73)."""
    return (f"{_at(t_s)}  INFO cuzk_core::scheduler: job enqueued job_id={job} "
            "proof_kind=porep-c2 priority=Normal queue_position=0")


_SKIP_UNPICKED = _gpu_worker_line(62.0, " INFO", "skipping GPU prove for failed partitioned job "
                                  "job_id=porep-1000-77 partition=Some(2)")


@pytest.mark.parametrize(("in_flight", "then"), [
    (True, [_enqueued(61.5, "porep-1000-79"), _synthesis_failed(62.0, 1)]),
    (False, [_enqueued(61.5, "porep-1000-79"), _SKIP_UNPICKED]),
    (False, [f"{_at(61.5)}  INFO cuzk_core::srs_manager: loading SRS from disk "
             "circuit_id=porep-32g", _SKIP_UNPICKED])],
    ids=["request-then-failure", "request-then-skip", "srs-load-then-skip-of-no-pickup"])
def test_a_failure_or_skip_ends_its_own_step_not_work_that_came_after_the_last_gpu_work(
        in_flight: bool, then: list[str]) -> None:
    """A request enqueued at +61.5 s (held in the batch collector or waiting on the budget: no
    SYNTH_START yet), then partition 1's synthesis fails, or a skip line whose pickup was not
    read; cuzk killed at +700 s. It had a request queued (or an SRS loading): up with work, the
    restart's. The failure or skip made it "no work before it stopped": it forgot the request."""
    parts, _ = _parts_of_stop(_stopped_after(700.0, sigint=False, in_flight=in_flight,
                                             then=then))
    assert parts["up before it stopped"] == 640.0 and "no work before it stopped" not in parts


@pytest.mark.parametrize("begun", [
    ["TIMELINE,61970,SYNTH_START,porep-1000-79,partition=0",
     f"{_at(62.5)} ERROR cuzk_core::engine: partition synthesis failed error=x "
     "job_id=porep-1000-79 partition=0"],
    [_enqueued(61.6, "porep-1000-80"),
     f"{_at(61.7)}  INFO synth_batch_full{{proof_kind=porep-c2}}: cuzk_core::engine: "
     "processing batch batch_size=2 proof_kind=porep-c2 slot_size=0",
     "TIMELINE,61970,SYNTH_START,porep-1000-79,kind=porep-c2",
     f"{_at(62.5)} ERROR synth_batch_full{{proof_kind=porep-c2}}: cuzk_core::engine: synthesis "
     "failed error=x"]], ids=["alone", "a-batch-named-by-its-first"])
def test_a_request_whose_synthesis_began_is_no_longer_waiting_and_its_failure_ends_it(
        begun: list[str]) -> None:
    """The request enqueued at +61.5 s began (its SYNTH_START; a batch's names its first
    request only, engine.rs:2663-2665, and takes the others its `processing batch` line
    counts, 2150) and failed: the
    run killed at +700 s had nothing in flight from then, no work."""
    parts, _ = _parts_of_stop(_stopped_after(700.0, sigint=False,
                                             then=[_enqueued(61.5, "porep-1000-79"), *begun]))
    assert parts["no work before it stopped"] == 640.0 and "up before it stopped" not in parts


_C1_FAILED = (f"{_at(61.2)} ERROR cuzk_core::engine: Phase 7: C1 parse/SRS load failed "
              "error=invalid C1 output")


def _whole_proof(job: str) -> list[str]:
    """`job`'s one partition, synthesised from +65 s and proved on the GPU to +75 s."""
    return [f"TIMELINE,64970,SYNTH_START,{job},partition=0",
            f"TIMELINE,66970,SYNTH_END,{job},partition=0,synth_ms=2000",
            f"TIMELINE,66970,GPU_QUEUE,{job},partition=0",
            f"TIMELINE,66980,GPU_PICKUP,{job},worker=0,partition=0",
            f"TIMELINE,66980,GPU_START,{job},worker=0,partition=0",
            f"TIMELINE,74970,GPU_END,{job},worker=0,partition=0,gpu_ms=7990"]


@pytest.mark.parametrize(("then", "idle_s"), [
    ([_enqueued(61.0, "porep-1000-79"), _C1_FAILED], 640.0),
    ([_enqueued(61.0, "porep-1000-79"), _enqueued(64.0, "porep-1000-80"),
      *_whole_proof("porep-1000-80")], 625.0)],
    ids=["its-parse-failure-naming-no-job", "a-later-request-of-its-kind-proved"])
def test_a_request_dequeued_with_no_line_naming_it_is_no_longer_waiting(
        then: list[str], idle_s: float) -> None:
    """The request enqueued at +61 s fails its C1 parse (engine.rs:2217, naming no job, only
    its kind), or is followed by a request of its kind enqueued after it and proved whole
    (scheduler.rs: FIFO within a priority, so the first was dequeued before it); then nothing
    to +700 s. It stayed "waiting" to the end of the run: the idle stop was "up before it
    stopped", the restart's cost. It is no work."""
    parts, _ = _parts_of_stop(_stopped_after(700.0, sigint=True, then=then))
    assert parts["no work before it stopped"] == idle_s and "up before it stopped" not in parts


def test_a_parse_failure_naming_no_job_ends_the_request_the_scheduler_served_first() -> None:
    """A Normal request at +61 s, a High one at +61.1 s, then a C1 parse failure naming no job:
    cuzk serves High first, so the failure is the High one's; the Normal one then proved whole
    (+65 s to +75 s), nothing waited when cuzk was stopped at +700 s: no work."""
    high = _enqueued(61.1, "porep-1000-80").replace("priority=Normal", "priority=High")
    parts, _ = _parts_of_stop(_stopped_after(700.0, sigint=True, then=[
        _enqueued(61.0, "porep-1000-79"), high, _C1_FAILED, *_whole_proof("porep-1000-79")]))
    assert parts["no work before it stopped"] == 625.0 and "up before it stopped" not in parts


def test_a_later_request_of_higher_priority_proved_leaves_an_earlier_one_waiting() -> None:
    """A Normal request enqueued at +61 s, a High one at +64 s proved whole: the scheduler
    serves High first, so the Normal one may still be queued when cuzk is stopped at +700 s:
    up with work, the restart's."""
    high = _enqueued(64.0, "porep-1000-80").replace("priority=Normal", "priority=High")
    parts, _ = _parts_of_stop(_stopped_after(700.0, sigint=True, then=[
        _enqueued(61.0, "porep-1000-79"), high, *_whole_proof("porep-1000-80")]))
    assert parts["up before it stopped"] == 625.0 and "no work before it stopped" not in parts


@pytest.mark.parametrize("job", ["porep-1000-81", "12345"])
def test_a_job_enqueued_line_read_after_its_gpu_work_adds_no_request_waiting(job: str) -> None:
    """stdout and stderr read as two files: the `job enqueued` line of a job (a numeric id
    too, which its TIMELINE lines write as text) comes after its GPU_END. It added a request
    that no later line named: an idle stop of 625 s was "up before it stopped"."""
    parts, _ = _parts_of_stop(_stopped_after(700.0, sigint=True, then=[
        *_whole_proof(job), _enqueued(61.0, job)]))
    assert parts["no work before it stopped"] == 625.0 and "up before it stopped" not in parts


def test_a_request_enqueued_after_the_one_proved_began_stays_waiting() -> None:
    """FIFO within a priority says only the requests enqueued *before* a proved one were
    dequeued: porep-1000-81, enqueued at +65.5 s after porep-1000-80's synthesis began, still
    waits when 80's GPU work ends at +75 s; stopped at +700 s, cuzk was up with it."""
    proof = _whole_proof("porep-1000-80")
    parts, _ = _parts_of_stop(_stopped_after(700.0, sigint=True, then=[
        _enqueued(64.0, "porep-1000-80"), proof[0], _enqueued(65.5, "porep-1000-81"),
        *proof[1:]]))
    assert parts["up before it stopped"] == 625.0 and "no work before it stopped" not in parts


def test_a_retry_enqueued_under_its_first_tries_id_after_its_work_is_a_request_waiting() -> None:
    """Curio's ids are per sector (`porep-%d-%d`, cuzk_funcs.go:67): a proof retried after its
    first try is enqueued again under the same id. Written after that try's GPU_END (+75 s),
    at +80 s, it is a request again, waiting when cuzk stops at +700 s: up, not no work (a
    line read after its job's work was taken for one written before it, whatever its time)."""
    job = "porep-1000-81"
    parts, _ = _parts_of_stop(_stopped_after(700.0, sigint=True, then=[
        _enqueued(64.0, job), *_whole_proof(job), _enqueued(80.0, job)]))
    assert "no work before it stopped" not in parts and parts["up before it stopped"] > 600.0


def test_with_the_pipeline_off_a_failed_proof_leaves_a_request_queued_behind_it() -> None:
    """With the pipeline off, the proof taken at +61 s fails at +62.5 s while another request,
    enqueued at +61.5 s, waits for the one worker; stopped at +700 s, cuzk had that request:
    up with work, not "no work before it stopped"."""
    lines = _pipeline_off_stopped_after(700.0, sigint=True, then=[
        *_pipeline_off_job(61.0, None, "porep-1000-79"), _enqueued(61.5, "porep-1000-80"),
        _mono_worker_line(62.5, "porep-1000-79", "proof failed error=seal_commit_phase2 failed",
                          level="ERROR")])
    [cost] = [e for e in watched(events_of_lines(lines)) if e.kind == "restart_cost"]
    parts = {p.name: round(p.end_s - p.start_s, 2) for p in cost.parts}
    assert "no work before it stopped" not in parts and parts["up before it stopped"] > 600.0


def test_a_pickup_says_no_work_in_flight_where_no_info_line_of_the_run_was_read() -> None:
    """cuzk's stderr and WARN lines only (`RUST_LOG=warn`): worker 1 picked up partition 2 at
    +59.5 s and its skip line (INFO) was not read; worker 0's GPU work ended at +60 s, a WARN
    at +660 s, a new pid at +700 s. The pickup stayed held to the end of the run: "work in
    flight" for an hour of nothing. With no INFO line read, a pickup held says nothing."""
    t0_s = datetime(2026, 5, 12, 17, tzinfo=UTC).timestamp()
    lines = [("cuzk.err", 55.0, "TIMELINE,55000,GPU_START,porep-1000-77,worker=0,partition=0"),
             ("cuzk.err", 59.5, "TIMELINE,59500,GPU_PICKUP,porep-1000-77,worker=1,partition=2"),
             ("cuzk.err", 60.0,
              "TIMELINE,60000,GPU_END,porep-1000-77,worker=0,partition=0,gpu_ms=5000"),
             ("cuzk.out", 660.0, f"{_at(660.0)}  WARN cuzk_core::memory: pinned pool: odd")]
    parser = LogParser(offline=False)
    watch = RestartWatch()
    watch.feed_process(ProcessMemory(1, t0_s + 1.0, 0, 4242, "cuzk-daemon", 1, 1))
    for stream, t_s, line in lines:
        for ev in parser.parse_line(line, stream, int(t_s * 1e9), t0_s + t_s):
            watch.feed_log(ev)
    watch.feed_process(ProcessMemory(2, t0_s + 700.0, 0, 5151, "cuzk-daemon", 1, 1))
    assert watch.kept[0].idle_before() == (t0_s + 60.0, t0_s + 660.0)


def test_a_failed_gpu_step_ends_its_gpu_work_but_is_no_gpu_work_done() -> None:
    """Partition 2's GPU work began at +61 s and `gpu_prove_start` failed (`GPU prove start
    failed`, engine.rs:3282: no GPU_END). Killed at +90 s, the run had nothing in flight: no
    work. The failure is no GPU work done: the restart's stretch still starts at the last
    GPU_END (+60 s), not at the failure."""
    lines = _stopped_after(90.0, sigint=False, then=[
        "TIMELINE,60970,GPU_START,porep-1000-77,worker=0,partition=2",
        _gpu_worker_line(61.5, "ERROR", "GPU prove start failed error=GPU prove start failed: "
                         "Unsatisfiable")])
    [cost] = [e for e in watched(events_of_lines(lines)) if e.kind == "restart_cost"]
    parts = {p.name: round(p.end_s - p.start_s, 2) for p in cost.parts}
    assert parts["no work before it stopped"] == 30.0 and "up before it stopped" not in parts
    assert cost.start_s == pytest.approx(events_of_lines(lines)[3].t_wall_s, abs=0.001)
    assert cost.cost_s == pytest.approx(6.0, abs=0.01)


def test_a_failure_of_a_step_begun_before_the_log_was_read_ends_nothing_read() -> None:
    """A failure line whose SYNTH_START was not read (a log read from mid-run) takes nothing
    off the count: partition 2's synthesis, begun after it and not ended when cuzk was killed
    (after partition 3's GPU work, +62 s to +63 s), is work in flight (a count gone below 0 made
    it "no work")."""
    parts, _ = _parts_of_stop(_stopped_after(90.0, sigint=False, then=[
        _synthesis_failed(61.0, 1), "TIMELINE,61470,SYNTH_START,porep-1000-77,partition=2",
        "TIMELINE,61970,GPU_START,porep-1000-77,worker=0,partition=3",
        "TIMELINE,62970,GPU_END,porep-1000-77,worker=0,partition=3,gpu_ms=1000"]))
    assert parts["up before it stopped"] == 27.0 and "no work before it stopped" not in parts


def test_runs_that_only_fail_their_synthesis_are_still_a_crash_loop() -> None:
    """After its GPU work cuzk dies, and its next two runs each fail their one synthesis
    and die: a failure is no GPU work done, so the restart after them ends a crash loop of
    three, and its stretch starts at the first run's last GPU_END."""
    lines = [f"{_at(0.0)}  INFO cuzk_daemon: cuzk-daemon starting",
             f"{_at(0.03)}  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true",
             "TIMELINE,54970,GPU_START,porep-1000-77,worker=0,partition=0",
             "TIMELINE,59970,GPU_END,porep-1000-77,worker=0,partition=0,gpu_ms=5000"]
    for start_s in (70.0, 80.0):
        lines += [f"{_at(start_s)}  INFO cuzk_daemon: cuzk-daemon starting",
                  f"{_at(start_s + 0.03)}  INFO cuzk_core::engine: starting cuzk engine "
                  "pipeline_enabled=true",
                  "TIMELINE,970,SYNTH_START,porep-1000-78,partition=0",
                  f"{_at(start_s + 2.0)} ERROR cuzk_core::engine: partition synthesis failed "
                  "error=synthesis error: constraint 12 unsatisfied job_id=porep-1000-78 "
                  "partition=0"]
    lines += _stopped_after(86.0, sigint=False)[-8:]  # started again at +90 s, works at +92 s
    events = events_of_lines(lines)
    [cost] = [e for e in watched(events) if e.kind == "restart_cost"]
    assert "cuzk started 3 times in a row: 2 runs gone before any GPU work" in cost.message
    assert cost.start_s == pytest.approx(events[3].t_wall_s, abs=0.001)


def test_a_crash_loop_inside_a_gap_counts_every_restart() -> None:
    """cuzk started 2,000 times, 0.25 s apart, inside one gap: its evidence said "64
    restarts of cuzk during the gap" (`MAX_KEPT` keeps the latest) as a fact, and its cost
    "down 499.8 s" though cuzk was started 2,000 times. Every restart is counted, kept or not,
    and the cost names the crash loop; what is kept stays bounded."""
    from gapwatch.cuzk.restarts import MAX_KEPT

    lines = [f"{_at(0.0)}  INFO cuzk_daemon: cuzk-daemon starting",
             f"{_at(0.03)}  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true",
             "TIMELINE,54970,GPU_START,porep-1000-77,worker=0,partition=0",
             "TIMELINE,59970,GPU_END,porep-1000-77,worker=0,partition=0,gpu_ms=5000"]
    lines += [f"{_at(65.0 + 0.25 * k)}  INFO cuzk_daemon: cuzk-daemon starting"
              for k in range(2000)]
    last_s = 65.0 + 0.25 * 1999
    lines += [f"{_at(last_s + 0.03)}  INFO cuzk_core::engine: starting cuzk engine "
              "pipeline_enabled=true",
              "TIMELINE,5000,GPU_START,porep-1000-78,worker=0,partition=0",
              "TIMELINE,8000,GPU_END,porep-1000-78,worker=0,partition=0,gpu_ms=3000"]
    events = events_of_lines(lines)
    first_gpu_s = last_s + 5.03
    [gap], prover = _gaps_over(events, [(55.0, 60.0), (first_gpu_s, first_gpu_s + 3.0)])
    assert gap.prover_cause == "restart"
    assert gap.prover_evidence[0] == ("2,000 restarts of cuzk during the gap, the latest at "
                                      "17:09:24.750 (the latest 64 kept)")
    assert "killed or crashed, no shutdown line; 2,000 restarts during the gap; the restarts cost the GPU " \
           "509.8 s" in gap.hint
    cost = gap.prover_evidence[-1]
    assert "down 5.0 s, crash loop 499.8 s (cuzk started 2,000 times in a row: 1,999 runs " \
           "gone before any GPU work)" in cost
    watch = prover.pipeline.restarts.first
    assert watch.restarts == 2000 and len(watch.kept) == MAX_KEPT


def test_restarts_no_longer_kept_are_counted_where_their_number_in_the_gap_is_known() -> None:
    """101 restarts a second apart (t 1000..1100), the latest 64 kept: a gap that begins
    after the oldest kept counts those in it; one that begins before the whole run of them
    counts all 101; one that begins inside the run, before the oldest kept, cannot tell how
    many of the ones not kept are in it, and says at least."""
    w = RestartWatch()
    w.feed_log(LogEvent(990.0, "timeline", "timeline", "GPU_END", "", job_id="porep-1-2"))
    for k in range(101):
        w.feed_log(LogEvent(1000.0 + k, "line", "tracing", "cuzk-daemon starting", ""))
    assert w.restarts == 101

    def counted(start_s: float) -> tuple[int, bool, str]:
        spanned = w.during(start_s, 1200.0)
        assert spanned is not None
        return spanned.count, spanned.exact, spanned.count_words()

    assert counted(1050.0)[:2] == (51, True)
    assert counted(995.0)[:2] == (101, True)
    n, exact, words = counted(1020.0)
    assert (n, exact) == (64, False)
    assert words.startswith("at least 64 restarts of cuzk during the gap")


# -- errors and panics ------------------------------------------------------------------------

def test_a_panic_is_one_event_with_its_whole_message_timed_by_the_line_before_it() -> None:
    events = events_of("panic.log")
    [panic] = [e for e in events if e.kind == "panic"]
    assert panic.time_source == "around"
    before = [e for e in events if e.time_source in ("line", "timeline")
              and e.t_wall_s <= panic.t_wall_s]
    assert before and panic.t_wall_s == before[-1].t_wall_s
    assert panic.fields["cuda_error"] == "out of memory"
    assert panic.fields["cuda_call"] == "cudaGetLastError"
    assert str(panic.fields["location"]).endswith("supraseal-c2/src/lib.rs:316:9")
    assert panic.fields["lines"] == 3
    assert not [e for e in events if e.kind == "unparsed"]


def test_panic_logs_panic_is_a_prove_starts_in_tokios_thread_as_cuzk_writes_it() -> None:
    """panic.log (make_data.py, curio e0294b0f): supraseal-c2's src/lib.rs:316 is
    `start_groth16_proof`'s panic, run in the `spawn_blocking` of `gpu_prove_start`
    (engine.rs:3134-3147) on a thread tokio names `tokio-runtime-worker`; cuzk then writes
    `GPU_TIMING prove_start returned` and `GPU prove start task panicked` (3148-3154, 3302) in
    the partition's GPU worker span. It read `thread '<unnamed>'` and `partition GPU proving
    task panicked` (679), which cuzk writes only of the split prove finalizer's panic."""
    lines = (DATA / "panic.log").read_text().splitlines()
    [at] = [i for i, line in enumerate(lines) if " panicked at " in line]
    assert lines[at].startswith("thread 'tokio-runtime-worker' panicked at ")
    assert lines[at].endswith("/supraseal-c2/src/lib.rs:316:9:")
    span = ("gpu_worker{worker_id=1 gpu=0 job_id=porep-1000-88 proof_kind=porep-c2 "
            "batch_size=1 partition=Some(1)}: cuzk_core::engine: ")
    assert f" INFO {span}GPU_TIMING prove_start returned " in lines[at + 3]
    assert f"ERROR {span}GPU prove start task panicked error=task 41 panicked with " \
        "message " in lines[at + 4]
    assert not [line for line in lines if "partition GPU proving task panicked" in line]


def test_followed_live_a_panic_is_timed_by_its_arrival() -> None:
    events = events_of("panic.log", offline=False, arrival=7000.0)
    [panic] = [e for e in events if e.kind == "panic"]
    lines = (DATA / "panic.log").read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("thread '"))
    assert panic.time_source == "arrival" and panic.t_wall_s == 7000.0 + first


def test_a_panic_at_the_end_of_a_file_is_not_lost() -> None:
    parser = LogParser(offline=True)
    parser.parse_line("2026-05-12T14:00:00.000000Z  INFO cuzk_daemon: cuzk-daemon starting")
    parser.parse_line("thread 'main' panicked at 'CUDA error: out of memory', src/lib.rs:155:9")
    [panic] = parser.flush()
    assert panic.kind == "panic" and "out of memory" in str(panic.fields["message"])


def test_cuzk_failure_lines_and_panics_are_error_events() -> None:
    [error] = [e for e in watched(events_of("panic.log")) if e.kind == "error"]
    assert error.level == "error"
    assert "out of memory" in error.message and "lotus#13634" in error.message
    assert error.message.startswith("GPU prove start task panicked job porep-1000-88")
    # Every ERROR site of upstream's catalogue is one, and two WARNs: the self-check FAILED
    # and the budget request that can never be granted (memory.rs:188).
    catalogue = events_of("cuzk.log")
    said = [e for e in watched(catalogue) if e.kind == "error"]
    assert len(said) == sum(1 for e in catalogue if e.level == "ERROR") + 2
    assert sum("can never be granted" in e.message for e in said) == 1


def test_a_panic_and_cuzks_task_panicked_line_for_it_are_one_error_event_with_both_texts(
) -> None:
    """supraseal-c2's CUDA error panics in a spawn_blocking task: Rust's hook prints the panic
    on stderr, then cuzk logs the task's JoinError (`GPU prove start task panicked`,
    engine.rs:3302, in the partition's GPU worker span). One incident: it was two error events
    ("4 error(s)" for 2 panics in the report, `increase()` alerts fired double). Now one,
    cuzk's line (its job, GPU, time) and the panic's text in it."""
    events = events_of("panic.log")
    line = next(e for e in events if e.name == "GPU prove start task panicked")
    [error] = [e for e in watched(events) if e.kind == "error"]
    assert error.job_id == "porep-1000-88" and error.t_wall_s == line.t_wall_s
    assert error.message.startswith(
        "GPU prove start task panicked job porep-1000-88 partition 1 GPU 0: task 41 panicked "
        'with message "cudaGetLastError()@')
    assert ("; its panic: panic in /root/.cargo/git/checkouts/curio/extern/supraseal-c2/src/"
            "lib.rs:316:9: cudaGetLastError()") in error.message
    assert "lotus#13634" in error.message


def test_the_footers_alert_for_a_panic_leads_with_its_gpu_job_and_partition_at_80_columns(
) -> None:
    """explore9 #6: at 80x24 the footer's alert read `prover error at 21:18:49 (+3 more): GPU
    prove start task panicked job porep-100…`: the job, the partition and the GPU cut, and once
    the toasts are gone it is the only place the pane says them. They lead now; the words are
    what is cut."""
    from gapwatch.engine.runtime import _alert_words

    [error] = [e for e in watched(events_of("panic.log")) if e.kind == "error"]
    line = _alert_words((error, 3))
    assert line is not None
    shown = line[:79]  # the footer's line at 80 columns, before its `…`
    assert shown.startswith("prover error at ")
    assert "(+3 more): GPU 0 porep-1000-88 partition 1: GPU prove" in shown
    # Each fact once: the words no longer repeat them.
    assert line.count("porep-1000-88") == 1 and line.count("GPU 0") == 1
    assert 'GPU prove start task panicked: task 41 panicked with message "cudaGetLastError()' \
        in line


def test_a_task_panicked_line_read_before_its_panic_is_still_one_incident() -> None:
    """stdout and stderr followed as two files: cuzk's line may come first. Paired by time,
    either first; a panic with no such line within PANIC_PAIR_S is said alone."""
    from gapwatch.cuzk.errors import PANIC_PAIR_S
    from gapwatch.cuzk.watch import CuzkWatch

    events = events_of("panic.log")
    panic = next(e for e in events if e.kind == "panic")
    line = next(e for e in events if e.name == "GPU prove start task panicked")
    w = CuzkWatch()
    out = w.feed(line) + w.feed(panic) + w.finish()
    [error] = [e for e in out if e.kind == "error"]
    assert "its panic: panic in" in error.message and error.job_id == "porep-1000-88"
    alone = CuzkWatch()
    late = msgspec.structs.replace(panic, t_wall_s=line.t_wall_s + PANIC_PAIR_S + 1.0)
    out = alone.feed(line) + alone.feed(late) + alone.finish()
    assert [e.message.split(":")[0] for e in out if e.kind == "error"] == [
        "GPU prove start task panicked job porep-1000-88 partition 1 GPU 0",
        "panic in /root/.cargo/git/checkouts/curio/extern/supraseal-c2/src/lib.rs"]


def test_a_late_post_said_while_running_and_at_its_end_is_one_proof_in_the_event_counter(
) -> None:
    """`gapwatch_prover_events_total{kind="proof",level="error"}` read 2 for one late
    WinningPoSt (its "still running" word past the deadline, then its end): counted once, when
    it went late. Another proof under the same id after its last word is another proof."""
    from gapwatch.core.models import ProofTiming, ProverEvent
    from gapwatch.sinks.prover_event_metrics import ProverEventCounts

    def word(done: bool, job: str = "winpost-1000-1a2b3c02") -> ProverEvent:
        return ProverEvent(100.0, "proof", "error", "late", job_id=job,
                           proof=ProofTiming("winning-post", total_s=35.0, deadline_s=30.0,
                                             verdict="late", done=done))

    counts = ProverEventCounts()
    for e in (word(False), word(True)):
        counts.count(e)
    assert counts.events[("proof", "error")] == 1
    assert counts.late["winning-post"] == 1
    counts.count(word(True))  # a retry under the same id, late again: a proof of its own
    assert counts.events[("proof", "error")] == 2


def test_a_gap_after_an_error_says_so_in_its_hint() -> None:
    facts = PipelineFacts()
    for e in events_of("panic.log"):
        facts.feed(e)
    panic_t = facts.errors[0][0]
    words = facts.error_words(panic_t + 1.0, panic_t + 5.0)
    assert words.startswith("after a prover error at") and "task panicked" in words
    assert facts.error_words(panic_t + 500.0, panic_t + 505.0) == ""
    hint = hint_of(GapFacts("host_stall", 4.0, 1e6, 1e6, 63e9, "high"),
                   Evidence(NO_HOST, [], NO_COPIES, prover=ProverView(None, [], [], "", words)))
    assert hint.endswith(words)


def test_a_gap_right_after_a_panic_carries_it_in_its_hint_through_the_detector() -> None:
    from gapwatch.core.config import DetectorConfig
    from gapwatch.core.detector import GapDetector
    from gapwatch.core.models import Gap, GpuInfo, GpuSample

    det = GapDetector(DetectorConfig(), [GpuInfo(index=0, link_bytes_per_s=63e9)], period_s=0.1,
                      live=False, prover=CuzkProver())
    panic = next(e for e in events_of("panic.log") if e.kind == "panic")
    t0 = panic.t_wall_s - 5.0
    gaps: list[Gap] = []
    for i in range(100):
        t = t0 + i * 0.1
        if i == 51:
            det.feed(panic)
        busy = not 52 <= i < 80
        sample = GpuSample(0, int(t * 1e9), t, 100_000_000, 95.0 if busy else 0.0,
                           99.0 if busy else 0.0, 30e9 if busy else 1e6, 1e6)
        gaps += [g for g in det.feed(sample) if isinstance(g, Gap)]
    gaps += [g for g in det.finish() if isinstance(g, Gap)]
    closed = [g for g in gaps if g.end_s is not None]
    assert closed and "after a prover error at" in closed[-1].hint
    assert "out of memory" in closed[-1].hint


def test_a_restart_across_a_clock_stepped_back_has_no_negative_cost() -> None:
    """The new run's lines an hour before the old run's last GPU work (a clock stepped back at
    boot): its cost was "-3548.0 s" and took that off /metrics' restart-cost counter. Its
    length is not known now, and said so; the restart itself still is."""
    from gapwatch.sinks.prover_event_metrics import ProverEventCounts

    text = """2026-05-12T17:00:00.000000Z  INFO cuzk_daemon: cuzk-daemon starting
2026-05-12T17:00:00.030000Z  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true
TIMELINE,39970,GPU_START,porep-1000-77,worker=0,partition=0
TIMELINE,42970,GPU_END,porep-1000-77,worker=0,partition=0,gpu_ms=3000
2026-05-12T16:00:54.000000Z  INFO cuzk_daemon: cuzk-daemon starting
2026-05-12T16:00:54.030000Z  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true
TIMELINE,12970,SYNTH_START,porep-1000-78,partition=0
TIMELINE,40969,GPU_QUEUE,porep-1000-78,partition=0
TIMELINE,40970,GPU_START,porep-1000-78,worker=0,partition=0
"""
    parser = LogParser(offline=True)
    events = watched([e for i, line in enumerate(text.splitlines())
                      for e in parser.parse_line(line, "x", i, 0.0)])
    [restart] = [e for e in events if e.kind == "restart"]
    [cost] = [e for e in events if e.kind == "restart_cost"]
    assert cost.length_s is None and cost.parts == []
    assert "not known: the data's time went back" in cost.message
    counts = ProverEventCounts()
    for e in events:
        counts.count(e)
    assert counts.restart_cost_s == 0.0


def test_a_storm_of_requests_and_batches_never_begun_stays_bounded() -> None:
    """Requests enqueued and not begun are remembered to say a stopped run had work
    (`_Waiting`): 20,000 distinct ids, each of its own kind, and as many batch lines, keep the
    latest `MAX_WAITING` requests and `MAX_BATCH_KINDS` batch sizes; a request forgotten so
    is never said begun or waiting."""
    from gapwatch.cuzk.restarts import MAX_BATCH_KINDS, MAX_ENDED, MAX_WAITING

    w = RestartWatch()
    for i in range(20_000):
        w.feed_log(LogEvent(1000.0 + i, "line", "tracing", "job enqueued", "", job_id=f"j-{i}",
                            fields={"proof_kind": f"kind-{i}"}))
        w.feed_log(LogEvent(1000.0 + i, "line", "tracing", "processing batch", "",
                            fields={"proof_kind": f"kind-{i}", "batch_size": 3}))
    waiting = w._waiting
    assert len(waiting.jobs) == MAX_WAITING and "j-19999" in waiting.jobs
    assert sum(len(j) for j in waiting._of_kind.values()) == MAX_WAITING
    assert len(waiting._batch_size) == MAX_BATCH_KINDS
    for i in range(20_000):  # each begun (its SYNTH_START), then ended (its GPU_END)
        w.feed_log(LogEvent(30_000.0 + i, "timeline", "timeline", "SYNTH_START", "",
                            job_id=f"j-{i}", partition=0))
        w.feed_log(LogEvent(30_000.0 + i, "timeline", "timeline", "GPU_END", "",
                            job_id=f"k-{i}", partition=0))
    assert len(waiting._begun) == MAX_WAITING and len(waiting.ended_jobs) == MAX_ENDED


def test_a_storm_of_new_prover_pids_and_srs_lines_in_one_restart_stays_small_and_linear() -> None:
    """Every sign of one restart was kept in a list looked through for each new one, and each
    SRS load of the new run was kept and said in its cost: a recording of 20,000 new cuzk pids
    within the restart's seconds took 4.6 s (quadratic: 40,000 took 24 s), and 20,000 SRS loads
    made a restart cost of 20,000 parts and a message of half a megabyte. A run keeps
    `MAX_SIGNS` signs and `MAX_SRS` SRS loads; the cost says how many more there were."""
    from gapwatch.cuzk.restarts import MAX_SIGNS, MAX_SRS

    w = RestartWatch()
    n = 20_000
    for i in range(n):  # each 0.1 ms after the one before: all within the restart's seconds
        w.feed_process(ProcessMemory(i, 1000.0 + i * 1e-4, 0, 1000 + i, "cuzk", 1, 1))
    assert w.restarts == 1
    run = w._run
    assert run is not None and len(run.signs) <= MAX_SIGNS and len(w._signs) <= MAX_SIGNS
    for i in range(n):
        t = 1003.0 + i * 1e-4
        w.feed_log(LogEvent(t, "line", "tracing", f"loading SRS from disk {i}", ""))
        w.feed_log(LogEvent(t, "line", "tracing", "SRS loaded successfully", ""))
        w.feed_log(LogEvent(t, "line", "tracing", "SRS loaded successfully", ""))
    assert len(run.srs) <= MAX_SRS  # each new SRS load looks through a bounded list
    [cost] = w.feed_log(LogEvent(1010.0, "timeline", "timeline", "GPU_START", "",
                                 job_id="porep-1-2"))
    assert len(cost.parts) <= MAX_SRS + 4
    assert f"and {n - MAX_SRS} more SRS loads" in cost.message and len(cost.message) < 2000


@pytest.mark.parametrize("level", ["WARN", "INFO"])
def test_a_parse_failure_line_ends_a_waiting_request_only_at_error_level(level: str) -> None:
    """cuzk writes its C1 parse failure at ERROR (engine.rs:2217). The same words at another
    level are no such failure: the request enqueued at +61 s still waited when cuzk was stopped
    at +700 s, so its run was up with work, the restart's (read at any level, it was no work)."""
    not_an_error = _C1_FAILED.replace(" ERROR ", f"  {level} ")
    assert not_an_error != _C1_FAILED
    parts, _ = _parts_of_stop(_stopped_after(700.0, sigint=True, then=[
        _enqueued(61.0, "porep-1000-79"), not_an_error]))
    assert parts["up before it stopped"] == 640.0 and "no work before it stopped" not in parts


def _half_of(kind: str, t_s: float, arrived_ns: int | None = None) -> tuple[LogEvent, ProverEvent]:
    """A panic half as `Incidents.feed` takes it: Rust's panic message ("panic"), or cuzk's
    `... task panicked` ERROR line ("line"), with its error event."""
    ev = (LogEvent(t_wall_s=t_s, time_source="arrival", kind="panic",
                   name="thread 'tokio-runtime-worker' panicked", level="ERROR",
                   raw="thread 'tokio-runtime-worker' panicked at src/engine.rs:1:1:",
                   t_arrival_mono_ns=arrived_ns)
          if kind == "panic" else
          LogEvent(t_wall_s=t_s, time_source="prefix", kind="tracing", level="ERROR",
                   name="partition GPU proving task panicked",
                   raw="ERROR cuzk_core::engine: partition GPU proving task panicked",
                   t_arrival_mono_ns=arrived_ns))
    err = error_event(ev)
    assert err is not None
    return ev, err


def test_the_data_time_wait_says_every_overdue_half_not_only_those_before_one_still_held() -> None:
    """Two of cuzk's `task panicked` lines wait, the reader still reading a panic of the
    first's time (its other half). Data time goes past both waits: the second, which that
    panic cannot pair with, is said alone; `due` stopped at the first (held) and kept the
    second too, as the reader's clock (`heard_by`) did not."""
    t0 = 1_800_000_000.0
    inc = Incidents()
    assert inc.heard_by(0, t0) == []  # the reader's tick: a panic of t0 still being read
    for t_s in (t0, t0 + 3.0):
        assert inc.feed(*_half_of("line", t_s)) == []
    [said] = inc.due(t0 + 5.5)
    assert said.t_wall_s == t0 + 3.0 and "its panic" not in said.message
    [one] = inc.feed(*_half_of("panic", t0 + 0.1))  # the panic, read whole: one incident
    assert one.t_wall_s == t0 and "its panic" in one.message


def test_a_panic_handed_on_since_the_readers_tick_holds_no_line_back() -> None:
    """The reader's tick said a panic of t0 was still being read; it was handed on and paired
    with one of cuzk's lines. A second line of that time, no other panic coming, is said alone
    once data time is past its wait: the word of the panic being read did not outlive it
    until the reader's next tick."""
    t0 = 1_800_000_000.0
    inc = Incidents()
    assert inc.heard_by(0, t0) == []
    for t_s in (t0, t0 + 0.5):
        assert inc.feed(*_half_of("line", t_s)) == []
    [one] = inc.feed(*_half_of("panic", t0 + 0.1))
    assert one.t_wall_s == t0
    [alone] = inc.due(t0 + 3.0)
    assert alone.t_wall_s == t0 + 0.5 and "its panic" not in alone.message
