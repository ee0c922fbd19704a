"""PoSt latency and deadlines, lost GPU jobs, from cuzk's own lines (tests/data/cuzk-upstream,
the scenario logs `make_data.py --scenarios` builds from upstream's formats)."""

from __future__ import annotations

from pathlib import Path

import pytest
from parsed_logs import fed

from gapwatch.commands.parse import format_timeline
from gapwatch.config import Config, load_config
from gapwatch.core.models import LogEvent, ProofTiming, ProverEvent
from gapwatch.core.prover_watch import notice_of
from gapwatch.core.sizes import TEXT_CHARS, bounded_event
from gapwatch.cuzk.config import CuzkConfig
from gapwatch.cuzk.partitions import derive_timeline
from gapwatch.cuzk.post import Deadlines, PostTracker
from gapwatch.cuzk.watch import CuzkWatch, deadlines_of
from gapwatch.logs.parse import LogParser
from gapwatch.offline.prover_events import proof_lines

DATA = Path(__file__).parent / "data" / "cuzk-upstream"


def events_of(name: str, offline: bool = True) -> list[LogEvent]:
    parser = LogParser(offline=offline)
    out: list[LogEvent] = []
    for i, line in enumerate((DATA / name).read_text().splitlines()):
        out += parser.parse_line(line, name, i, 1000.0 + i)
    return out + parser.flush()


def watched(name: str, deadlines: Deadlines | None = None) -> list[ProverEvent]:
    watch = CuzkWatch(deadlines)
    out: list[ProverEvent] = []
    for e in events_of(name):
        out += watch.feed(e)
    return out + watch.finish()


def test_a_winningpost_behind_two_partitions_has_its_phases_and_what_held_the_workers() -> None:
    [ev] = watched("post-behind-partitions.log")
    p = ev.proof
    assert p is not None and ev.kind == "proof" and ev.job_id == "winpost-1000-0a1b2c3d"
    assert p.proof_kind == "winning-post" and p.done
    assert p.queue_s == pytest.approx(0.0, abs=0.01)
    assert p.synth_s == pytest.approx(2.2, abs=0.01)
    assert p.gpu_wait_s == pytest.approx(0.37, abs=0.01)
    assert p.gpu_s == pytest.approx(1.3, abs=0.01)
    assert p.total_s == pytest.approx(3.87, abs=0.01)
    assert p.waited_behind == ["worker 0: porep-1000-12 partition 3",
                               "worker 1: porep-1000-12 partition 4"]
    assert p.deadline_s == 30.0 and p.verdict == "ok" and ev.level == "info"
    assert notice_of(ev, 0) is None  # an on-time proof is no notice
    assert "behind worker 0: porep-1000-12 partition 3" in ev.message


def _parse_timeline_of(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """`gapwatch parse --timeline` of the test log `name` (a copy: its path is not the data's),
    its stdout."""
    from gapwatch.cli import main

    log = tmp_path / "cuzk.log"
    log.write_text((DATA / name).read_text())
    assert main(["parse", "--timeline", str(log)]) == 0
    return capsys.readouterr().out


def watched_text(text: str) -> list[ProverEvent]:
    parser, watch = LogParser(offline=True), CuzkWatch()
    out: list[ProverEvent] = []
    for i, line in enumerate(text.splitlines()):
        for e in parser.parse_line(line, "x", i, 0.0):
            out += watch.feed(e)
    return out + watch.finish()


def test_without_its_enqueue_line_a_post_is_placed_by_cuzks_total_ms() -> None:
    """`proof completed successfully (pipeline)` (engine.rs:839) has no job id but follows the
    PoSt's GPU_END in the same finalizer: its total_ms (from submission) places the arrival."""
    text = (DATA / "post-behind-partitions.log").read_text()
    lines = [x for x in text.splitlines() if "job enqueued" not in x]
    [ev] = watched_text("\n".join(lines))
    assert ev.proof is not None and ev.proof.total_s == pytest.approx(3.87, abs=0.01)
    assert ev.proof.queue_s == pytest.approx(0.0, abs=0.01)
    assert "was not read" not in ev.message
    # The completion line read before the GPU_END (stdout and stderr read apart) pairs too.
    end = next(i for i, x in enumerate(lines) if "GPU_END,winpost" in x)
    done = next(i for i, x in enumerate(lines) if "proof completed" in x)
    lines.insert(end, lines.pop(done))
    [again] = watched_text("\n".join(lines))
    assert again.proof == ev.proof


#: A WinningPoSt (arrived 15:00:10.0) and a WindowPoSt (15:00:10.5) end on the GPU half a second
#: apart; the WindowPoSt's finalizer writes its completion line first (the WinningPoSt's waits
#: 10 s for cuzk's job tracker lock): each line's total_ms places its own job's arrival.
TWO_POST = """\
2026-05-12T15:00:00.000000Z  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true
2026-05-12T15:00:10.000000Z  INFO cuzk_core::scheduler: job enqueued job_id=winpost-1000-0a1b2c3d proof_kind=winning-post priority=Critical queue_position=0
2026-05-12T15:00:10.500000Z  INFO cuzk_core::scheduler: job enqueued job_id=wdpost-1000-0-[1 2 3 4 5 6 7 8] proof_kind=window-post priority=High queue_position=1
TIMELINE,10000,SYNTH_START,winpost-1000-0a1b2c3d,kind=winning-post
TIMELINE,10500,SYNTH_START,wdpost-1000-0-[1 2 3 4 5 6 7 8],kind=window-post
TIMELINE,15000,SYNTH_END,winpost-1000-0a1b2c3d,synth_ms=5000
TIMELINE,15000,GPU_QUEUE,winpost-1000-0a1b2c3d,monolithic
TIMELINE,15000,GPU_PICKUP,winpost-1000-0a1b2c3d,worker=0
TIMELINE,15000,GPU_START,winpost-1000-0a1b2c3d,worker=0
TIMELINE,15500,SYNTH_END,wdpost-1000-0-[1 2 3 4 5 6 7 8],synth_ms=5000
TIMELINE,15500,GPU_QUEUE,wdpost-1000-0-[1 2 3 4 5 6 7 8],monolithic
TIMELINE,15500,GPU_PICKUP,wdpost-1000-0-[1 2 3 4 5 6 7 8],worker=1
TIMELINE,15500,GPU_START,wdpost-1000-0-[1 2 3 4 5 6 7 8],worker=1
TIMELINE,20000,GPU_END,winpost-1000-0a1b2c3d,worker=0,gpu_ms=5000
TIMELINE,20500,GPU_END,wdpost-1000-0-[1 2 3 4 5 6 7 8],worker=1,gpu_ms=5000
2026-05-12T15:00:20.600000Z  INFO cuzk_core::engine: proof completed successfully (pipeline) proof_len=192 total_ms=10100 queue_ms=0 synth_ms=5000 gpu_ms=5000
2026-05-12T15:00:30.000000Z  INFO cuzk_core::engine: proof completed successfully (pipeline) proof_len=192 total_ms=20000 queue_ms=0 synth_ms=5000 gpu_ms=5000
"""


def test_two_posts_ending_together_each_take_the_completion_line_whose_total_is_theirs() -> None:
    """Paired by their order alone, the WinningPoSt took the WindowPoSt's line: "10.6 s of 30
    s ... ok", finalize 0.6 s, for its 20.0 s (10 s of it waiting for its result); read either
    way round (the completion lines before the GPU_END lines: stdout and stderr read apart)."""
    lines = TWO_POST.splitlines()
    ends = [i for i, x in enumerate(lines) if "GPU_END" in x]
    before = lines[:ends[0]] + lines[-2:] + lines[ends[0]:-2]
    for order in (lines, before):
        said = {ev.job_id: ev.proof for ev in watched_text("\n".join(order))}
        win, window = said["winpost-1000-0a1b2c3d"], said["wdpost-1000-0-[1 2 3 4 5 6 7 8]"]
        assert win is not None and window is not None
        assert win.total_s == pytest.approx(20.0) and win.finalize_s == pytest.approx(10.0)
        assert win.verdict == "at_risk"
        assert window.total_s == pytest.approx(10.1) and window.finalize_s == pytest.approx(0.1)


def test_without_either_line_a_post_is_timed_from_its_synthesis_and_says_so() -> None:
    text = (DATA / "post-behind-partitions.log").read_text()
    lines = [x for x in text.splitlines() if "job enqueued" not in x
             and "proof completed" not in x]
    [ev] = watched_text("\n".join(lines))
    assert ev.proof is not None and ev.proof.queue_s is None and ev.proof.done
    assert ev.proof.total_s == pytest.approx(3.87, abs=0.01)
    assert "its 'job enqueued' line was not read" in ev.message


def test_the_same_proof_against_a_tighter_deadline_is_late_and_says_so() -> None:
    [ev] = watched("post-behind-partitions.log", Deadlines(winning_post_s=3.0))
    assert ev.proof is not None and ev.proof.verdict == "late" and ev.level == "error"
    notice = notice_of(ev, 7)
    assert notice is not None and notice.level == "error"
    assert "winpost-1000-0a1b2c3d" in notice.message and "LATE" in notice.message
    # Synthesis was its longest phase: cuzk has no setting for it, and none is claimed.
    assert ev.proof.setting is None


def test_a_proof_past_the_at_risk_share_is_a_warning() -> None:
    [ev] = watched("post-behind-partitions.log", Deadlines(winning_post_s=6.0))
    assert ev.proof is not None and ev.proof.verdict == "at_risk" and ev.level == "warning"


def test_a_winningpost_stuck_behind_a_porep_srs_load_is_said_late_while_still_running() -> None:
    """post-late.log: a PoRep's SRS loads while the WinningPoSt waits in cuzk's queue. Not its
    own SRS (a PoSt loads that after its SYNTH_START, engine.rs:2717-2721): the queue's
    setting, synthesis_concurrency, never eviction_min_idle."""
    events = watched("post-late.log")
    running = [e for e in events if e.proof is not None and not e.proof.done]
    done = [e for e in events if e.proof is not None and e.proof.done]
    assert len(running) == 1 and len(done) == 1
    total = done[0].proof.total_s if done[0].proof is not None else None
    assert total is not None
    arrived = done[0].t_wall_s - total
    # Said as soon as the data passed the 30 s deadline, not only when the proof ended.
    assert 30.0 < running[0].t_wall_s - arrived < total
    assert running[0].level == "error" and "still running" in running[0].message
    p = done[0].proof
    assert p is not None and p.verdict == "late" and p.queue_s == pytest.approx(33.0, abs=0.01)
    assert p.setting is not None and "eviction_min_idle" not in p.setting
    assert p.setting.startswith("[pipeline] synthesis_concurrency") and "porep-32g" in p.setting


def _srs_lines(loading_at: str, loaded_at: str, circuit: str, elapsed_ms: int) -> str:
    """cuzk's two lines of one SRS load (srs_manager.rs:203, 224), at `HH:MM:SS.ffffff`."""
    return (f"2026-05-12T{loading_at}Z  INFO cuzk_core::srs_manager: loading SRS from disk "
            f"circuit_id={circuit} path=/data/zk/params/{circuit}.params file_size_gib=1\n"
            f"2026-05-12T{loaded_at}Z  INFO cuzk_core::srs_manager: SRS loaded successfully "
            f"circuit_id={circuit} elapsed_ms={elapsed_ms} budget_used_gib=48 "
            "budget_available_gib=702\n")


def _winningpost(job: str, synth_start_ms: int, synth_end_ms: int, srs: str) -> str:
    """A WinningPoSt enqueued at 16:00:10 and proved 0.8 s, its synthesis step from
    `synth_start_ms` to `synth_end_ms` (TIMELINE offsets), with `srs` (SRS lines) between."""
    gpu_end = synth_end_ms + 810
    return (_START + "2026-05-12T16:00:10.000000Z  INFO cuzk_core::scheduler: job enqueued "
            f"job_id={job} proof_kind=winning-post priority=Critical queue_position=0\n"
            f"TIMELINE,{synth_start_ms},SYNTH_START,{job},kind=winning-post\n" + srs
            + f"TIMELINE,{synth_end_ms},SYNTH_END,{job},synth_ms=1200\n"
            f"TIMELINE,{synth_end_ms},GPU_QUEUE,{job},monolithic\n"
            f"TIMELINE,{synth_end_ms + 10},GPU_PICKUP,{job},worker=0\n"
            f"TIMELINE,{synth_end_ms + 10},GPU_START,{job},worker=0\n"
            f"TIMELINE,{gpu_end},GPU_END,{job},worker=0,gpu_ms=800\n")


def _done(text: str) -> ProofTiming:
    [p] = [e.proof for e in watched_text(text) if e.proof is not None and e.proof.done]
    assert p is not None
    return p


def test_a_winningpost_loading_its_own_evicted_srs_in_its_synthesis_step_is_told_eviction_min_idle(
) -> None:
    """cuzk loads a PoSt's SRS inside its synthesis step, after SYNTH_START and before SYNTH_END
    (engine.rs:2665, 2717-2721, 2745): a WinningPoSt whose SRS was evicted shows a synthesis
    phase of 33 s, 32 s of it the load. It was said with no setting at all (gapwatch tied a load
    only to a PoSt that had not reached SYNTH_START)."""
    job = "winpost-1000-5e1f0001"
    evicted = ("2026-05-12T16:00:05.000000Z  INFO cuzk_core::srs_manager: SRS evicted "
               "circuit_id=winning-32g freed_gib=0.4 budget_available_gib=3\n")  # :282
    srs = evicted + _srs_lines("16:00:11.200000", "16:00:43.200000", "winning-32g", 32000)
    p = _done(_winningpost(job, 9980, 43180, srs))  # SYNTH_START 16:00:10.01, END 16:00:43.21
    assert p.verdict == "late" and p.queue_s == pytest.approx(0.01, abs=0.01)
    assert p.synth_s == pytest.approx(33.2, abs=0.01)
    assert p.setting is not None and p.setting.startswith("[memory] eviction_min_idle: raise it")
    assert "synthesis phase includes loading its SRS (winning-32g, 32.0 s) from disk" in p.setting
    assert "synthesis_concurrency" not in p.setting
    # Another circuit's load in the same stretch is not its own: no setting claimed.
    other = srs.replace("winning-32g", "wpost-32g")
    assert _done(_winningpost(job, 9980, 43180, other)).setting is None
    # The first load since cuzk started (no eviction read, no load before it) is a cold SRS:
    # raising eviction_min_idle would not have kept in memory what was never there.
    cold = _done(_winningpost(job, 9980, 43180, srs.replace(evicted, "")))
    assert cold.setting is not None and "eviction_min_idle" not in cold.setting
    assert cold.setting.startswith("none: its synthesis phase includes the first load of its SRS")


def test_an_evicted_srs_is_advised_on_by_the_logs_own_idle_time_and_budget_not_a_default(
) -> None:
    """The SRS was loaded at 16:00:01 (its last use), evicted at 16:00:05 with
    `budget_available_gib=0` (srs_manager.rs:282: written only from the evictor, engine.rs:
    1279-1287, when an acquire is short and the SRS idle at least eviction_min_idle), and the
    WinningPoSt before this one began at 16:00:02. The advice said "raise it (default 5m)",
    "cuzk evicts an SRS idle this long": a default the log contradicts (4 s idle). It now says
    the log's figures: 4 s idle, so eviction_min_idle is at most 4 s on this box, the budget
    then, and to raise it above the time between WinningPoSts (8 s here)."""
    job = "winpost-1000-5e1f0001"
    before = ("2026-05-12T16:00:01.000000Z  INFO cuzk_core::srs_manager: SRS loaded successfully "
              "circuit_id=winning-32g elapsed_ms=900 budget_used_gib=48 budget_available_gib=3\n"
              "2026-05-12T16:00:02.000000Z  INFO cuzk_core::scheduler: job enqueued "
              "job_id=winpost-1000-5e1f0000 proof_kind=winning-post priority=Critical "
              "queue_position=0\n"
              "2026-05-12T16:00:05.000000Z  INFO cuzk_core::srs_manager: SRS evicted "
              "circuit_id=winning-32g freed_gib=0 budget_available_gib=0\n")
    text = _winningpost(job, 9980, 43180, _srs_lines("16:00:11.200000", "16:00:43.200000",
                                                     "winning-32g", 32000))
    p = _done(text.replace(_START, _START + before))
    assert p.verdict == "late" and p.cause == "srs_evicted" and p.setting is not None
    assert p.setting.startswith("[memory] eviction_min_idle: raise it above the time between "
                                "WinningPoSts (~8 s here, from the one before it to it)")
    assert ("cuzk evicted it at 16:00:05.000 after 4 s idle (last used 16:00:01.000), "
            "budget_available_gib=0 after it") in p.setting
    assert "so eviction_min_idle is at most 4 s on this box (the default is 5m" in p.setting
    assert "raise it (default 5m)" not in p.setting


def test_a_winningposts_first_srs_load_is_told_preloadsrs_can_load_it_ahead() -> None:
    """No config key preloads an SRS, but cuzk's gRPC PreloadSRS loads one through the memory
    budget (engine.rs:3623-3657), by the circuit id its load line names: a way to have a
    PoSt's SRS in memory before its window, besides restarting cuzk well before it."""
    job = "winpost-1000-5e1f0001"
    srs = _srs_lines("16:00:11.200000", "16:00:43.200000", "winning-32g", 32000)
    cold = _done(_winningpost(job, 9980, 43180, srs))
    assert cold.setting is not None and "first load of its SRS" in cold.setting
    assert "gRPC PreloadSRS (circuit_id winning-32g)" in cold.setting
    assert "nothing is preloaded" not in cold.setting


def test_a_porep_srs_load_while_a_winningpost_queues_is_never_eviction_min_idle_advice() -> None:
    """A PoRep's SRS (porep-32g) loads while a WinningPoSt waits in cuzk's queue; late by its
    queue phase. Raising eviction_min_idle for the PoSt would not have helped it (its own SRS
    was in memory): the single dispatcher was busy, `[pipeline] synthesis_concurrency` with its
    section, its direction and its cost (the (0,0) GPU-queue key collision)."""
    job = "winpost-1000-5e1f0002"
    srs = _srs_lines("16:00:10.500000", "16:00:41.500000", "porep-32g", 31000)
    text = _winningpost(job, 41970, 43970, "")  # SYNTH_START 16:00:42.0: queued 32 s
    enqueue_end = text.index("TIMELINE,41970")
    p = _done(text[:enqueue_end] + srs + text[enqueue_end:])
    assert p.verdict == "late" and p.queue_s == pytest.approx(32.0, abs=0.01)
    assert p.setting is not None and "eviction_min_idle" not in p.setting
    assert p.setting.startswith("[pipeline] synthesis_concurrency: raise it above 1 (the default")
    assert "another job's SRS from disk (porep-32g, 31.0 s)" in p.setting
    assert "engine.rs:1927-1938" in p.setting and "(0,0)" in p.setting


def test_deadlines_come_from_the_config_with_upstream_defaults(tmp_path: Path) -> None:
    d = deadlines_of(CuzkConfig())
    assert (d.winning_post_s, d.window_post_s, d.at_risk_share) == (30.0, 1800.0, 0.5)
    path = tmp_path / "c.toml"
    path.write_text("[cuzk]\nwinning_post_deadline_s = 12\npost_at_risk_share = 0.25\n")
    d = deadlines_of(load_config(path).cuzk)
    assert (d.winning_post_s, d.at_risk_share) == (12.0, 0.25)


def test_the_partition_table_shows_a_post_row_honestly() -> None:
    run = derive_timeline(events_of("post-behind-partitions.log"))
    [post] = [p for p in run.partitions if p.monolithic]
    assert post.job_id == "winpost-1000-0a1b2c3d" and post.kind == "winning-post"
    assert post.pinned_words == "no"  # cuzk never pins PoSt (pipeline.rs:3015)
    row = next(r for r in format_timeline(run).splitlines() if "winpost" in r)
    assert "winpost-1000-0a1b2c3d" in row and "winning-post" in row
    assert " yes " not in row and "…" not in row


def test_a_long_windowpost_id_is_never_cut_in_the_table() -> None:
    job = "wdpost-1000-3-[1 2 3 4 5 6 7 8]"  # Curio's %d of a byte slice (cuzk_funcs.go:179)
    text = (DATA / "post-behind-partitions.log").read_text().replace(
        "winpost-1000-0a1b2c3d", job.replace(" ", "_")).replace("winning-post", "window-post")
    parser = LogParser(offline=True)
    events = [e for i, line in enumerate(text.splitlines())
              for e in parser.parse_line(line, "x", i, 0.0)]
    table = format_timeline(derive_timeline(events))
    assert job.replace(" ", "_") in table


def test_a_job_queued_for_the_gpu_and_never_picked_up_while_a_later_one_is_is_named() -> None:
    events = watched("lost-job.log")
    [lost] = [e for e in events if e.kind == "lost_job"]
    assert lost.job_id == "winpost-1000-11111111" and lost.level == "error"
    assert "never picked up" in lost.message and "winpost-1000-22222222" in lost.message
    assert "engine.rs:53-58" in lost.message
    assert lost.length_s == pytest.approx(2.0, abs=0.01)
    # The lost job is not also listed as a proof still running at the end.
    assert not [e for e in events if e.kind == "proof" and e.job_id == lost.job_id]


def test_partitions_picked_in_priority_order_are_never_called_lost() -> None:
    for name in ("post-behind-partitions.log", "restart.log", "panic.log", "post-late.log"):
        assert not [e for e in watched(name) if e.kind == "lost_job"], name


def test_the_example_config_holds_the_post_deadlines() -> None:
    text = (Path(__file__).parent.parent / "config.example.toml").read_text()
    for key in ("winning_post_deadline_s", "window_post_deadline_s", "post_at_risk_share"):
        assert key in text
    assert Config().cuzk.winning_post_deadline_s == 30.0


def test_partition_0_of_the_runs_first_job_shares_the_key_a_post_replaces() -> None:
    """The first partitioned job after a start has job_seq 0 (engine.rs:1431, 2295), so its
    partition 0 is keyed (0,0) like every monolithic job (engine.rs:2851)."""
    seq = ("2026-05-12T15:00:01.000000Z  INFO cuzk_core::engine: assigned pipeline sequence "
           "number job_id=porep-1000-1 job_seq=0")
    text = "\n".join([seq,
                      "TIMELINE,2000,GPU_QUEUE,porep-1000-1,partition=0",
                      "TIMELINE,2100,GPU_QUEUE,porep-1000-1,partition=1",
                      "TIMELINE,2500,GPU_QUEUE,winpost-1000-aa,monolithic",
                      "TIMELINE,2600,GPU_PICKUP,winpost-1000-aa,worker=0",
                      "TIMELINE,2700,GPU_PICKUP,porep-1000-1,worker=1,partition=1"])
    lost = [e for e in watched_text(text) if e.kind == "lost_job"]
    assert [e.job_id for e in lost] == ["porep-1000-1"]
    assert lost[0].message.startswith("partition 0 of porep-1000-1 was queued")
    # Partition 1 (key (0,1)) waited behind the PoSt legitimately: never called lost.


def test_a_hostile_job_id_is_shown_never_obeyed() -> None:
    job = "winpost-1\x1b]52;c;ZWNobyBoaQ==\x07-\x1b[2J"
    text = (DATA / "post-behind-partitions.log").read_text().replace(
        "winpost-1000-0a1b2c3d", job)
    [ev] = watched_text(text)
    assert "\x1b" not in ev.message and "\x07" not in ev.message


def test_lines_in_any_order_never_crash_the_watcher() -> None:
    import random

    names = ("post-behind-partitions.log", "post-late.log", "restart.log", "panic.log",
             "lost-job.log", "cuzk.log")
    events = [e for name in names for e in events_of(name)]
    rng = random.Random(7)
    for _ in range(5):
        rng.shuffle(events)
        watch = CuzkWatch()
        for e in events:
            watch.feed(e)
        watch.finish()
        assert len(watch.post._jobs) <= 256


def test_a_result_held_behind_the_job_tracker_lock_is_its_finalize_phase() -> None:
    """GPU_END (engine.rs:3196) to `proof completed successfully (pipeline)` (839) is the
    finalizer's: it waits for the job tracker lock a PoRep self-check may hold."""
    text = (DATA / "post-behind-partitions.log").read_text()
    [ev] = watched_text(text)
    assert ev.proof is not None and ev.proof.finalize_s == pytest.approx(0.001, abs=0.0005)
    # Held 3 s, its total_ms (from the submission, taken under that lock, engine.rs:838) too.
    held = text.replace("2026-05-12T15:00:14.671000Z  INFO cuzk_core::engine: proof completed",
                        "2026-05-12T15:00:17.671000Z  INFO cuzk_core::engine: proof completed"
                        ).replace("total_ms=3870", "total_ms=6870")
    parser, watch = LogParser(offline=True), CuzkWatch(Deadlines(winning_post_s=5.0))
    events = [e for i, line in enumerate(held.splitlines())
              for e in parser.parse_line(line, "x", i, 0.0)]
    [late] = [p for e in sorted(events, key=lambda e: e.t_wall_s) for p in watch.feed(e)]
    p = late.proof
    assert p is not None and p.finalize_s == pytest.approx(3.0, abs=0.01)
    assert p.total_s == pytest.approx(6.87, abs=0.01) and p.verdict == "late"
    assert p.setting is not None and "job tracker lock" in p.setting
    assert "finalize 3.0 s" in late.message


# -- hostile or unlucky logs (adversarial pass) ---------------------------------------------

_START = ("2026-05-12T16:00:00.000000Z  INFO cuzk_daemon: cuzk-daemon starting\n"
          "2026-05-12T16:00:00.030000Z  INFO cuzk_core::engine: starting cuzk engine "
          "pipeline_enabled=true\n")


def test_thousands_of_post_ids_that_never_end_are_each_said_once_in_bounded_memory() -> None:
    """More PoSt in flight than are followed (256): the oldest is said once as given up (its
    phases so far), never dropped unseen; 1,000 ids were 256 proofs in the report."""
    from gapwatch.cuzk.post import MAX_IN_FLIGHT

    lines = [f"TIMELINE,{100 + i},SYNTH_START,winpost-1000-{i:08x},kind=winning-post"
             for i in range(1000)]
    parser, watch = LogParser(offline=True), CuzkWatch()
    events: list[ProverEvent] = []
    for i, line in enumerate((_START + "\n".join(lines)).splitlines()):
        for e in parser.parse_line(line, "x", i, 0.0):
            events += watch.feed(e)
            assert len(watch.post._jobs) <= MAX_IN_FLIGHT
    events += watch.finish()
    proofs = [e for e in events if e.kind == "proof"]
    assert {e.job_id for e in proofs} == {f"winpost-1000-{i:08x}" for i in range(1000)}
    gone = [e for e in proofs if e.proof is not None and e.proof.given_up == "too_many"]
    assert len(gone) == 1000 - MAX_IN_FLIGHT == watch.post.given_up
    assert all(e.level == "warning" and "given up" in e.message for e in gone)
    from gapwatch.offline.prover_events import summary_line
    assert summary_line(events).startswith(
        f"Prover events: 1000 PoSt proof(s) (0 late, 0 at risk, {len(gone)} said without")


def test_the_rest_of_a_post_given_up_for_room_is_passed_over_not_a_second_proof() -> None:
    """257 PoSt in flight, then the first one's later lines: they started a fresh proof (two
    rows for one PoSt, "? of its deadline", 258 proofs said for 257) that pushed the next
    oldest out in its turn."""
    first = "winpost-1000-00000000"
    lines = [f"TIMELINE,{100 + i},SYNTH_START,winpost-1000-{i:08x},kind=winning-post"
             for i in range(257)]
    lines += [f"TIMELINE,400,SYNTH_END,{first},synth_ms=300",
              f"TIMELINE,401,GPU_START,{first},worker=0",
              f"TIMELINE,402,GPU_END,{first},worker=0,gpu_ms=1"]
    parser, watch = LogParser(offline=True), CuzkWatch()
    events: list[ProverEvent] = []
    for i, line in enumerate((_START + "\n".join(lines)).splitlines()):
        for e in parser.parse_line(line, "x", i, 0.0):
            events += watch.feed(e)
    events += watch.finish()
    firsts = [e for e in events if e.kind == "proof" and e.job_id == first]
    assert len(firsts) == 1 and firsts[0].proof is not None
    assert firsts[0].proof.given_up == "too_many"
    assert watch.post.given_up == 1  # the next oldest was not pushed out by a ghost
    from gapwatch.offline.prover_events import summary_line
    assert summary_line(events).startswith("Prover events: 257 PoSt proof(s) (0 late, 0 at "
                                           "risk, 1 said without their end)")


def test_a_post_lost_in_a_restart_then_retried_under_its_id_is_two_rows_in_the_report() -> None:
    """Curio retries a PoSt under the same request id after a restart: the lost one (an
    error) and the retry are two proofs. The report kept one row per job id: the lost proof
    vanished from the text (0 errors, 1 proof on time)."""
    from gapwatch.offline.prover_events import prover_event_lines

    job = "winpost-1000-dddd"
    text = _START + f"""2026-05-12T16:00:10.000000Z  INFO cuzk_core::scheduler: job enqueued job_id={job} proof_kind=winning-post priority=Critical queue_position=0
TIMELINE,10100,SYNTH_START,{job},kind=winning-post
TIMELINE,11000,SYNTH_END,{job},synth_ms=900
TIMELINE,11000,GPU_QUEUE,{job},monolithic
2026-05-12T16:00:20.000000Z  INFO cuzk_daemon: cuzk-daemon starting
2026-05-12T16:00:20.030000Z  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true
2026-05-12T16:00:21.000000Z  INFO cuzk_core::scheduler: job enqueued job_id={job} proof_kind=winning-post priority=Critical queue_position=0
TIMELINE,1100,SYNTH_START,{job},kind=winning-post
TIMELINE,2000,SYNTH_END,{job},synth_ms=900
TIMELINE,2000,GPU_QUEUE,{job},monolithic
TIMELINE,2010,GPU_PICKUP,{job},worker=1
TIMELINE,2010,GPU_START,{job},worker=1
TIMELINE,3000,GPU_END,{job},worker=1,gpu_ms=990
2026-05-12T16:00:23.040000Z  INFO cuzk_core::engine: proof completed successfully (pipeline) proof_len=192 total_ms=2040 queue_ms=100 synth_ms=900 gpu_ms=990
"""
    events = watched_text(text)
    lost, done = [e for e in events if e.kind == "proof"]
    assert lost.proof is not None and lost.proof.given_up == "restart" and lost.level == "error"
    assert done.proof is not None and done.proof.done and done.proof.verdict == "ok"
    # Timed at the restart, its phases up to then: never a total shorter than its phases
    # (timed at its synthesis start it was "total 0.1 s, synthesis 0.9 s").
    p = lost.proof
    assert lost.t_wall_s == pytest.approx(1778601620.0)
    assert p.total_s == pytest.approx(10.0, abs=0.01)
    total = p.total_s
    assert total is not None
    assert all(x is None or x <= total for x in (p.queue_s, p.synth_s, p.gpu_wait_s))
    lines = prover_event_lines(events)
    assert "2 PoSt proof(s) (0 late, 0 at risk, 1 said without their end)" in lines[0]
    assert sum(job in line for line in lines if "winning-post" in line) == 2
    assert any("lost in restart" in line for line in lines)


def test_a_proof_said_late_while_running_then_done_is_still_one_row() -> None:
    from gapwatch.offline.prover_events import _proofs

    events = watched("post-late.log")
    assert len([e for e in events if e.kind == "proof"]) == 2
    [row] = _proofs(events)
    assert row.proof is not None and row.proof.done


def test_a_negative_total_ms_places_no_arrival() -> None:
    """`total_ms=-5000` on the completion line placed the arrival after synthesis start,
    clamped there: a queue of 0.0 s where none was read. Missing is None, never 0."""
    text = (DATA / "post-behind-partitions.log").read_text()
    lines = [x for x in text.splitlines() if "job enqueued" not in x]
    lines = [x.replace("total_ms=3870", "total_ms=-5000") for x in lines]
    [ev] = watched_text("\n".join(lines))
    assert ev.proof is not None and ev.proof.queue_s is None
    assert "its 'job enqueued' line was not read" in ev.message


def test_a_post_lost_in_a_restart_runs_the_on_event_command_as_lost() -> None:
    """The alert rule GapwatchPoStLate fires on it (kind proof, level error); the hook said
    nothing when its figures were still within the deadline."""
    from gapwatch.engine.events import event_of

    text = (DATA / "post-behind-partitions.log").read_text()
    cut = text.index("TIMELINE", text.index("GPU_QUEUE,winpost"))
    events = watched_text(text[:cut] + _START.replace("16:00:00", "15:00:20"))
    [lost] = [e for e in events if e.kind == "proof"]
    assert lost.proof is not None and lost.proof.verdict == "ok"
    event = event_of(lost)
    assert event is not None and event.kind == "post_late" and event.state == "lost"


def test_a_log_of_thousands_of_workers_picking_up_work_makes_no_post_list_them_all() -> None:
    """GPU_PICKUP lines of 20,000 worker ids that never end (junk `worker=` fields): the
    watcher held each, and a PoSt queued then listed every one it waited behind (a 20,000-item
    list and an 800 KB message; for 100,000, 4 MB, copied into each PoSt in flight). The
    watcher keeps the latest `MAX_WORKERS` workers (`gpu_workers.WorkerHolds`, the gaps' own); a PoSt names `MAX_BEHIND` of them and how
    many more."""
    from gapwatch.cuzk.gpu_workers import MAX_WORKERS
    from gapwatch.cuzk.post import MAX_BEHIND, PostTracker

    n, job = 20_000, "winpost-1000-dddd"
    text = _START + "\n".join(
        [f"TIMELINE,{1000 + i // 100},GPU_PICKUP,porep-1-{i},worker={i},partition=0"
         for i in range(n)]
        + [f"TIMELINE,5000,SYNTH_START,{job},kind=winning-post",
           f"TIMELINE,5100,SYNTH_END,{job},synth_ms=100",
           f"TIMELINE,5100,GPU_QUEUE,{job},monolithic",
           f"TIMELINE,5200,GPU_PICKUP,{job},worker=0",
           f"TIMELINE,5200,GPU_START,{job},worker=0",
           f"TIMELINE,5300,GPU_END,{job},worker=0,gpu_ms=100"]) + "\n"
    [ev] = [e for e in watched_text(text) if e.kind == "proof"]
    assert ev.proof is not None
    behind = ev.proof.waited_behind
    assert len(behind) == MAX_BEHIND  # workers only: how many more is a number of its own
    assert ev.proof.waited_behind_more == MAX_WORKERS - MAX_BEHIND
    assert behind[0] == f"worker {n - MAX_WORKERS}: porep-1-{n - MAX_WORKERS} partition 0"
    assert ev.proof.behind_words().endswith(f"and {MAX_WORKERS - MAX_BEHIND} more")
    assert len(ev.message) < 2000
    parser, tracker = LogParser(offline=True), PostTracker()
    for i, line in enumerate(text.splitlines()):
        for e in parser.parse_line(line, "x", i, 0.0):
            tracker.feed(e)
    assert len(tracker.holds.open) <= MAX_WORKERS


def test_a_post_whose_synthesis_end_line_comes_out_of_order_is_never_ok_with_phases_past_its_total(
) -> None:
    """A SYNTH_END out of order (a replayed or lying TIMELINE line): its synthesis read 39.2 s
    while the total, arrival to completion, read 3.9 s, and the proof was "ok" against its
    30 s deadline, after it was said late while running (a hostile log's synthesis of 206
    days had a total of 0.0 s, "ok"). A
    total is never shorter than one of its phases: late, as its own figures say."""
    text = (DATA / "post-behind-partitions.log").read_text()
    assert "TIMELINE,12970,SYNTH_END" in text
    events = watched_text(text.replace("TIMELINE,12970,SYNTH_END", "TIMELINE,50000,SYNTH_END"))
    # Said late while running (the line at 50 s is past its deadline), then done: no longer
    # "late" then "ok" for one proof.
    [ev] = [e for e in events if e.proof is not None and e.proof.done]
    p = ev.proof
    assert p is not None and p.synth_s == pytest.approx(39.23, abs=0.01)
    assert p.total_s is not None and p.synth_s is not None and p.total_s >= p.synth_s
    assert p.verdict == "late" and ev.level == "error"
    [ok] = watched_text(text)  # the log as cuzk wrote it: unchanged
    assert ok.proof is not None and ok.proof.total_s == pytest.approx(3.87, abs=0.01)
    assert ok.proof.verdict == "ok"


def test_a_post_that_could_not_be_timed_is_unknown_never_ok() -> None:
    """A stray or duplicated `GPU_END` of a `winpost-...` id with no begin (neither its
    `job enqueued` nor its SYNTH_START read, no completion line to place it): every figure
    None, and it was "ok", counted among the "0 late". A late WinningPoSt loses a block:
    gapwatch says it does not know, a warning, with no setting claimed for it."""
    job = "winpost-1000-0a1b2c3d"
    [ev] = [e for e in watched_text(
        _START + f"TIMELINE,14640,GPU_END,{job},worker=0,gpu_ms=1300\n") if e.kind == "proof"]
    p = ev.proof
    assert p is not None and p.done and p.total_s is None and p.deadline_s == 30.0
    assert p.verdict == "unknown" and ev.level == "warning" and p.setting is None
    notice = notice_of(ev, 0)
    assert notice is not None and notice.level == "warning"
    assert "not known" in notice.message and "from synthesis start" not in notice.message
    # Its GPU phases read, its begin not: no setting claimed for a wait it may not have had.
    text = (DATA / "post-behind-partitions.log").read_text()
    lines = [x for x in text.splitlines() if "job enqueued" not in x and "proof completed"
             not in x and not x.startswith(("TIMELINE,10770,SYNTH_START", "TIMELINE,12970,SYNTH"))]
    [ev] = watched_text("\n".join(lines))
    assert ev.proof is not None and ev.proof.gpu_wait_s == pytest.approx(0.37, abs=0.01)
    assert ev.proof.verdict == "unknown" and ev.proof.setting is None


def test_a_stray_gpu_end_bounds_nothing_and_is_never_said_more_than_0_s() -> None:
    """One line read of a PoSt (a stray `GPU_END`: its first line read is its last) gave the
    least its total can be as 0.0 s: the dashboard's alert and toast said `more than 0.0 s of
    its 30 s deadline`, the report `>0.0`, a figure of 0 where nothing is known. No bound."""
    job = "winpost-1000-0a1b2c3d"
    [ev] = [e for e in watched_text(
        _START + f"TIMELINE,14640,GPU_END,{job},worker=0,gpu_ms=1300\n") if e.kind == "proof"]
    assert ev.proof is not None and ev.proof.verdict == "unknown"
    assert ev.proof.total_s is None and ev.proof.total_at_least_s is None
    assert "0.0 s" not in ev.message and f"{job}: ? of its 30 s deadline" in ev.message
    [row] = [x for x in proof_lines([ev]) if job in x]
    assert ">0.0" not in row


def _timeline(t_s: float, name: str, job: str, **kw: int) -> LogEvent:
    return LogEvent(t_wall_s=t_s, time_source="line", kind="timeline", name=name, raw=name,
                    job_id=job, **kw)  # type: ignore[arg-type]


def _fed(tracker: PostTracker, *events: LogEvent) -> list[ProverEvent]:
    """What `tracker` said of `events`, fed in order."""
    out: list[ProverEvent] = []
    for ev in events:
        out += tracker.feed(ev)
    return out


def test_a_post_whose_start_was_not_read_is_late_when_what_was_read_of_it_passes_the_deadline(
) -> None:
    """A WinningPoSt followed from mid-proof (its `job enqueued` and SYNTH_START before the
    log's part read): 44 s on the GPU against its 30 s deadline, and it was "unknown",
    counted among the proofs not late, no hook run. Late by what was read of it alone; still
    in flight, it is said late once that much has passed since its first line read."""
    job = "winpost-1000-1a2b3c4d"
    tracker = PostTracker()
    out = _fed(tracker, _timeline(100.0, "GPU_QUEUE", job),
               _timeline(101.0, "GPU_PICKUP", job, worker=0, gpu=0),
               _timeline(101.0, "GPU_START", job, worker=0, gpu=0))
    assert tracker.check(129.0) == []  # 29 s since its first line: not known late yet
    [running] = tracker.check(131.0)
    assert running.proof is not None and running.proof.verdict == "late"
    assert not running.proof.done and running.proof.total_at_least_s == pytest.approx(31.0)
    out += tracker.feed(_timeline(145.0, "GPU_END", job, worker=0, gpu=0))
    out += tracker.finish(160.0)
    [done] = [e for e in out if e.proof is not None and e.proof.done]
    assert done.proof is not None and done.proof.verdict == "late" and done.level == "error"
    assert done.proof.total_s is None and done.proof.total_at_least_s == pytest.approx(45.0)
    assert "more than 45.0 s of its 30 s deadline" in done.message
    assert "counted from its first line read" in done.message
    [row] = [x for x in proof_lines([done]) if job in x]
    assert " >45.0 " in row and row.endswith(" late")


def test_a_post_given_up_for_room_says_the_least_its_total_can_be_not_a_question_mark(
) -> None:
    """More PoSt in flight than are followed: the oldest, followed from mid-proof (its begin
    not read), was said "? so far, given up" although 100 s had passed since its first line
    against a 30 s deadline; it now says the least its total can be, and is late."""
    from gapwatch.cuzk.post import MAX_IN_FLIGHT

    tracker = PostTracker()
    out: list[ProverEvent] = []
    for i in range(MAX_IN_FLIGHT + 1):
        out += tracker.feed(_timeline(100.0 + i * 100.0 / MAX_IN_FLIGHT, "GPU_QUEUE",
                                      f"winpost-{i}-0a1b2c3d"))
    [gone] = [e for e in out if e.proof is not None and e.proof.given_up == "too_many"]
    assert gone.job_id == "winpost-0-0a1b2c3d" and gone.level == "error"
    assert "more than 100.0 s so far, given up" in gone.message


def test_a_post_given_up_for_room_whose_lines_span_a_few_ms_says_no_bound_not_more_than_0_s(
) -> None:
    """A bound under a tenth of a second is said `0.0`: it bounds nothing, as a bound of 0 s
    (one line read) does. The oldest of more PoSt than are followed, its lines 2 ms apart,
    was said `more than 0.0 s so far, given up` (the report's table: `>0.0`)."""
    from gapwatch.cuzk.post import MAX_IN_FLIGHT

    tracker = PostTracker()
    out: list[ProverEvent] = []
    out += tracker.feed(_timeline(100.0, "GPU_QUEUE", "winpost-0-0a1b2c3d"))
    out += tracker.feed(_timeline(100.002, "GPU_PICKUP", "winpost-0-0a1b2c3d", worker=0, gpu=0))
    for i in range(1, MAX_IN_FLIGHT + 1):
        out += tracker.feed(_timeline(100.002, "GPU_QUEUE", f"winpost-{i}-0a1b2c3d"))
    [gone] = [e for e in out if e.proof is not None and e.proof.given_up == "too_many"]
    assert gone.job_id == "winpost-0-0a1b2c3d" and gone.proof is not None
    assert gone.proof.total_s is None and gone.proof.total_at_least_s is None
    assert "0.0 s" not in gone.message and "? so far, given up" in gone.message
    [row] = [x for x in proof_lines([gone]) if "winpost-0-" in x]
    assert ">0.0" not in row
    # A tenth of a second read is a bound, said as before.
    tracker = PostTracker()
    out = _fed(tracker, _timeline(100.0, "GPU_QUEUE", "winpost-0-0a1b2c3d"),
               _timeline(100.1, "GPU_PICKUP", "winpost-0-0a1b2c3d", worker=0, gpu=0))
    for i in range(1, MAX_IN_FLIGHT + 1):
        out += tracker.feed(_timeline(100.1, "GPU_QUEUE", f"winpost-{i}-0a1b2c3d"))
    [gone] = [e for e in out if e.proof is not None and e.proof.given_up == "too_many"]
    assert "more than 0.1 s so far, given up" in gone.message


def test_a_post_followed_from_mid_proof_is_said_at_the_end_of_data_and_at_risk_when_its_least_is(
) -> None:
    """Read from its GPU_START on: still running at the end of data, it vanished (no row, no
    count) while `check` would have said it late; and 20 s read of a 30 s WinningPoSt (past the
    at-risk line, 15 s) was "not known"."""
    job = "winpost-1000-1a2b3c4d"
    tracker = PostTracker()
    tracker.feed(_timeline(100.0, "GPU_START", job, worker=0, gpu=0))
    assert tracker.check(110.0) == []
    [running] = tracker.finish(110.0)
    assert running.proof is not None and not running.proof.done
    assert running.proof.verdict == "unknown" and running.proof.total_at_least_s == 10.0
    tracker = PostTracker()
    out = _fed(tracker, _timeline(100.0, "GPU_QUEUE", job),
               _timeline(100.0, "GPU_START", job, worker=0, gpu=0),
               _timeline(120.0, "GPU_END", job, worker=0, gpu=0))
    out += tracker.finish(200.0)
    [done] = [e for e in out if e.proof is not None and e.proof.done]
    assert done.proof is not None and done.proof.verdict == "at_risk" and done.level == "warning"
    assert "more than 20.0 s of its 30 s deadline" in done.message
    assert "not known" not in done.message


def test_a_post_gpu_end_read_twice_is_one_proof_never_a_second_late_or_untimed_one() -> None:
    """The same lines read twice (a recording's log events and the `--log` file they came
    from, a log given twice, a file read again from its start): a PoSt's `GPU_END` read again
    was a second proof. Alone it was a row "not timed" (`GapwatchPoStNotTimed` fired); with
    its completion line read twice as well, a second LATE proof of 35.9 s made of a finalize
    phase, with a setting claimed for it. One line read twice is one line."""
    text = (DATA / "post-late.log").read_text()
    lines = text.splitlines()
    end = next(x for x in lines if x.startswith("TIMELINE") and "GPU_END" in x)
    each_twice = "\n".join(x for line in lines for x in (line, line))
    for case in (text + end + "\n", each_twice, text + text):
        said = [e.proof for e in watched_text(case) if e.proof is not None]
        assert all(p.verdict == "late" for p in said)  # late while running, then done
        [p] = [p for p in said if p.done]
        assert p.total_s == pytest.approx(35.91, abs=0.01)
        assert p.queue_s == pytest.approx(33.0, abs=0.01)
    # A log of two runs read twice: its first run's start line, read again, is a restart
    # there, which must not make its PoSt's GPU_END a new line (it was a second LATE proof).
    two_runs = text + ("2026-05-12T16:05:00.000000Z  INFO cuzk_core::engine: starting cuzk "
                       "engine pipeline_enabled=true\n")
    done = [e for e in watched_text(two_runs + two_runs) if e.proof is not None and e.proof.done]
    assert len(done) == 1 and done[0].proof is not None
    assert done[0].proof.total_s == pytest.approx(35.91, abs=0.01)
    # The recording's copy placed by `/status` and the file's by its start line: wall times a
    # little apart, the same TIMELINE offset: still the same line.
    tracker = PostTracker()
    job = "winpost-1000-9f8e7d6c"
    first = _timeline(100.0, "GPU_END", job, worker=0)
    first.fields["offset_ms"] = 55880
    again = _timeline(100.4, "GPU_END", job, worker=0)
    again.fields["offset_ms"] = 55880
    events = _fed(tracker, _timeline(90.0, "SYNTH_START", job), first, again)
    assert tracker.read_again == 1
    assert len([e for e in events + tracker.finish(200.0) if e.kind == "proof"]) == 1
    # A stray GPU_END of another proof is still one not timed, never passed over.
    [stray] = watched_text(_START + f"TIMELINE,14640,GPU_END,{job},worker=0,gpu_ms=1300\n")
    assert stray.proof is not None and stray.proof.verdict == "unknown"


def _parsed_at_once(text: str) -> list[ProverEvent]:
    """What `gapwatch parse --timeline` says of a log: a file read at once, every line's arrival
    the same instant, which says nothing of when it was written."""
    parser, watch = LogParser(offline=True), CuzkWatch(arrival_timed=False)
    out: list[ProverEvent] = []
    for i, line in enumerate(text.splitlines()):
        for e in parser.parse_line(line, "cuzk.log", i, 1_800_000_000.0):
            out += watch.feed(e)
    return out + watch.finish()


def test_a_post_read_without_its_timeline_anchor_is_timed_by_the_offsets_never_by_read_times(
) -> None:
    """`parse --timeline` of a log whose `starting cuzk engine` line is not in it (rotated
    away, or a piece of the log): its TIMELINE lines were timed when they were read, all at
    one instant. A WinningPoSt of only TIMELINE lines was "ok, total 0.0 s" (every phase 0);
    with its `job enqueued` line (its own time, in May) the queue ran to the read time, 206
    days, LATE with a setting claimed. Its TIMELINE lines are one clock (their offsets): the
    phases between them come from there, and what joins them to a line of its own time (the
    queue, the finalize, so the total) is not known: the least its total can be, never "ok"."""
    only_timeline = (DATA / "post-in-flight.log").read_text()
    [ev] = [e for e in _parsed_at_once(only_timeline) if e.proof is not None]
    p = ev.proof
    assert p is not None and p.done
    assert p.synth_s == pytest.approx(2.1, abs=0.01) and p.gpu_s == pytest.approx(0.8, abs=0.01)
    assert p.queue_s is None and p.finalize_s is None and p.total_s is None
    assert p.total_at_least_s == pytest.approx(2.9, abs=0.01)
    assert p.verdict == "unknown" and ev.level == "warning"
    assert "its queue is not" in ev.message and "TIMELINE lines' offsets" in ev.message
    assert ev.t_wall_s == 1_800_000_000.0  # no line says when: where it was read, not 1970

    # Its `job enqueued` read, with its own time: 32 s in flight by the lines of their own
    # time before its TIMELINE lines came (said late then, rightly: it took 35.9 s); done,
    # it is more than that, late, its queue not known; never 206 days.
    lines = (DATA / "post-late.log").read_text().splitlines()
    unanchored = "\n".join(x for x in lines if "starting cuzk engine" not in x)
    said = [e for e in _parsed_at_once(unanchored) if e.proof is not None]
    assert [e.proof.done for e in said if e.proof is not None] == [False, True]
    for e in said:
        assert e.proof is not None and e.proof.verdict == "late"
        figure = e.proof.total_s if e.proof.total_s is not None else e.proof.total_at_least_s
        assert figure == pytest.approx(32.0, abs=0.01)
        assert e.t_wall_s < 1_800_000_000.0  # at the lines of their own time, in May
    done = said[-1].proof
    assert done is not None and done.queue_s is None and done.total_s is None
    assert done.synth_s == pytest.approx(2.1, abs=0.01) and done.gpu_s == pytest.approx(0.8, abs=0.01)

    # Past its deadline by the offsets alone it is late, whatever was not known.
    slow = only_timeline.replace("TIMELINE,4000900,GPU_END", "TIMELINE,4040900,GPU_END")
    [late] = [e for e in _parsed_at_once(slow) if e.proof is not None and e.proof.done]
    assert late.proof is not None and late.proof.verdict == "late"
    assert late.proof.total_at_least_s == pytest.approx(42.9, abs=0.01)

    # With its anchor the same log is timed as ever: 35.9 s, late, its queue of 33 s.
    [anchored] = [e.proof for e in _parsed_at_once("\n".join(lines))
                  if e.proof is not None and e.proof.done]
    assert anchored is not None and anchored.total_s == pytest.approx(35.91, abs=0.01)
    assert anchored.queue_s == pytest.approx(33.0, abs=0.01) and anchored.verdict == "late"


def test_gapwatch_parse_times_a_post_without_its_anchor_by_its_offsets(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command itself: a WinningPoSt of TIMELINE lines without their anchor is not timed
    (">2.9"), never "ok" at 0.0 s."""
    out = _parse_timeline_of("post-in-flight.log", tmp_path, capsys)
    [row] = [x for x in out.splitlines() if "winpost-1000-1a2b3c4d" in x and "winning-post" in x
             and x.split()[-1] in ("ok", "unknown", "late", "at_risk")]
    assert row.split()[-1] == "unknown" and ">2.9" in row


def test_a_post_in_flight_is_listed_with_its_phase_and_how_much_of_its_deadline_it_used(
) -> None:
    """While a WinningPoSt runs, the operator sees it count up against its 30 s (the dashboard
    said nothing of it until it was late or done). Its phase is the latest read; past half its
    deadline it is at risk; its GPU work ended, it is in its finalize until its completion
    line; done, it is no longer listed. The most of its deadline used comes first."""
    from gapwatch.core.prover_watch import running_words

    tracker = PostTracker()
    win, wd = "winpost-1000-1a2b3c02", "wdpost-1000-3-[1 2 3]"
    _fed(tracker, LogEvent(t_wall_s=100.0, time_source="line", kind="tracing",
                           name="job enqueued", raw="", job_id=win,
                           fields={"proof_kind": "winning-post"}),
         _timeline(103.0, "SYNTH_START", win), _timeline(104.0, "SYNTH_START", wd))
    tracker._jobs[wd].kind = "window-post"  # (as its SYNTH_START's kind= says)
    [first, second] = tracker.running(112.0)
    assert first.job_id == win and first.name == "WinningPoSt" and first.phase == "synthesis"
    assert first.timing.total_s == pytest.approx(12.0) and first.timing.verdict == "ok"
    assert first.timing.queue_s == pytest.approx(3.0)
    assert running_words(first) == ("WinningPoSt winpost-1000-1a2b3c02 running 12.0 s of 30 s "
                                    "(synthesis)")
    assert second.job_id == wd and second.used_share == pytest.approx(8.0 / 1800)

    _fed(tracker, _timeline(113.0, "SYNTH_END", win), _timeline(113.0, "GPU_QUEUE", win))
    [first, _] = tracker.running(117.0)
    assert first.phase == "GPU wait" and first.timing.verdict == "at_risk"
    assert running_words(first).endswith("(GPU wait), AT RISK")

    _fed(tracker, _timeline(118.0, "GPU_PICKUP", win, worker=0),
         _timeline(118.0, "GPU_START", win, worker=0), _timeline(119.0, "GPU_END", win, worker=0))
    [first, _] = tracker.running(120.0)
    assert first.job_id == win and first.phase == "finalize"
    _fed(tracker, LogEvent(t_wall_s=120.5, time_source="line", kind="tracing",
                           name="proof completed successfully (pipeline)", raw="",
                           fields={"total_ms": 20500}))
    assert [r.job_id for r in tracker.running(121.0)] == [wd]


def _followed(backlog: list[str], live: list[tuple[float, str]]
              ) -> tuple[CuzkWatch, list[ProverEvent]]:
    """What `record --from-start` says: `backlog` (the lines the file held, read at once at
    monotonic 1000 s), then `live` (each line at 1000 s + its delay, wall and monotonic alike)."""
    parser, watch = LogParser(), CuzkWatch()
    out: list[ProverEvent] = []
    wall0, mono0_ns = 1_800_000_000.0, 1_000_000_000_000
    for line in backlog:
        for e in parser.parse_line(line, "cuzk.log", mono0_ns, wall0, backlog=True):
            out += watch.feed(e)
    for delay_s, line in live:
        for e in parser.parse_line(line, "cuzk.log", mono0_ns + int(delay_s * 1e9),
                                   wall0 + delay_s):
            out += watch.feed(e)
    return watch, out


def _tracing(wall_s: float, message: str) -> str:
    from datetime import UTC, datetime
    stamp = datetime.fromtimestamp(wall_s, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{stamp}  INFO cuzk_core::engine: {message}"


def test_a_post_still_running_is_said_late_at_the_first_data_time_past_its_deadline() -> None:
    """The deadlines were checked at most every 0.5 s of data time (`CHECK_EVERY_S`), counted
    from whichever line last moved "now": a WinningPoSt enqueued at 0 s was said late at 30.1 s
    after lines at 29.4 and 29.8 s, but at 30.4 s after the line at 29.8 s alone. So the
    windowed replay of a recording holding its log said it `still running: 30.6 s` (at
    00:54:26), and the same replay given that log as `--log` said `30.5 s` (at 00:54:25): the
    recording holds its lines in the order they arrived, a file's are fed in time order, and
    the checks fell at other moments. Now it is said at the first data time past its deadline,
    whatever lines came before."""
    wall0 = 1_800_000_000.0
    enqueued = _tracing(wall0, "job enqueued job_id=winpost-1000-aa proof_kind=winning-post "
                               "priority=Critical queue_position=0")

    def other_work(s: float) -> str:
        return _tracing(wall0 + s, "partition GPU prove complete job_id=porep-1-2 partition=3 "
                                   "gpu_ms=3356")

    for before in ([29.8], [29.4, 29.8], [29.6]):
        parser, watch = LogParser(), CuzkWatch()
        said: list[ProverEvent] = []
        lines = [enqueued, *map(other_work, before), other_work(30.1), other_work(30.4)]
        for i, line in enumerate(lines):
            for e in parser.parse_line(line, "cuzk.log", i, wall0):
                said += watch.feed(e)
        [late] = [e for e in said if e.proof is not None]
        assert late.t_wall_s == pytest.approx(wall0 + 30.1, abs=1e-3), before
        assert "still running: 30.1 s of its 30 s deadline" in late.message, before


def test_a_post_begun_in_the_backlog_and_stuck_live_counts_up_and_is_said_late_then() -> None:
    """A WinningPoSt whose first lines were in the file when `--from-start` began (its anchor
    rotated away: timed by its offsets) and that then waits for a GPU while gapwatch reads on:
    no offset of it moves, and it read "running more than 2.0 s of 30 s (GPU wait)" on the
    footer for minutes, never said late. A line is written before it is read, so the engine's
    offset at any later arrival is at least its offset plus the time since: it counts up."""
    backlog = [_tracing(1_800_000_000.0 - 3600, "an hour before gapwatch began"),
               "TIMELINE,500000,SYNTH_START,winpost-1000-aa,kind=winning-post",
               "TIMELINE,502000,SYNTH_END,winpost-1000-aa,synth_ms=2000",
               "TIMELINE,502000,GPU_QUEUE,winpost-1000-aa,monolithic"]
    # Other work's lines (with their own time) come live for two minutes.
    live = [(float(s), _tracing(1_800_000_000.0 + s, "partition GPU prove complete "
                                "job_id=porep-1-2 partition=3 gpu_ms=3356"))
            for s in range(0, 121, 10)]
    watch, said = _followed(backlog, live[:3])  # 20 s on
    [running] = watch.running()
    assert running.timing.total_at_least_s == pytest.approx(22.0, abs=0.01)
    assert running.timing.verdict == "at_risk" and not said
    watch, said = _followed(backlog, live)
    [running] = watch.running()
    assert running.timing.total_at_least_s == pytest.approx(122.0, abs=0.01)
    [late] = [e for e in said if e.proof is not None]
    assert late.proof is not None and late.proof.verdict == "late" and late.level == "error"
    assert not late.proof.done and late.proof.gpu_wait_s is not None
    assert late.proof.gpu_wait_s > 28.0  # counting up in its phase, not frozen at 0
    # Said when the data passed its deadline, not at the backlog's last timed line an hour
    # before (outside the footer's 5 minutes, an hour early on stderr and in the report).
    assert late.t_wall_s == pytest.approx(1_800_000_000.0 + 30.0)


def test_offsets_that_begin_again_are_a_new_engines_clock_not_now_for_its_proofs() -> None:
    """cuzk's stderr alone (its start lines are on stdout) across a restart: the old run's
    offsets (930 s) were "now" for the new run's WinningPoSt, which was said LATE, "more than
    930.0 s", while it ran 3.8 s (an error, `--on-event` run). Offsets far behind are a new
    engine's clock; the proof is timed on its own run's."""
    backlog = ["TIMELINE,900000,SYNTH_START,porep-1-1,partition=0",
               "TIMELINE,930000,SYNTH_END,porep-1-1,partition=0,synth_ms=30000",
               "TIMELINE,1000,SYNTH_START,winpost-1000-bb,kind=winning-post",
               "TIMELINE,3000,SYNTH_END,winpost-1000-bb,synth_ms=2000",
               "TIMELINE,3000,GPU_QUEUE,winpost-1000-bb,monolithic"]
    live = [(1.0, "TIMELINE,4000,GPU_PICKUP,winpost-1000-bb,worker=0"),
            (1.0, "TIMELINE,4000,GPU_START,winpost-1000-bb,worker=0")]
    watch, said = _followed(backlog, live)
    [running] = watch.running()
    assert running.timing.verdict != "late" and running.timing.total_at_least_s is not None
    assert running.timing.total_at_least_s < 5.0
    assert not [e for e in said if e.level == "error"]
    assert watch.post.offsets_began_again == 1
    watch, said = _followed(backlog, [*live, (2.0, "TIMELINE,4800,GPU_END,winpost-1000-bb,"
                                                   "worker=0,gpu_ms=800")])
    said += watch.finish()
    [done] = [e.proof for e in said if e.proof is not None]
    assert done is not None and done.done and done.verdict == "unknown"
    assert done.total_at_least_s == pytest.approx(3.8, abs=0.01)


def test_a_post_of_a_run_whose_offsets_began_again_is_said_lost_once_not_running_for_good(
) -> None:
    """Offsets going back are a new engine run: the old run's WinningPoSt in flight stayed in
    flight, counting up by arrival, and the footer said "running 3620 s of 30 s, LATE" an hour
    after its run had died. It is said lost in the restart once and no longer runs."""
    backlog = ["TIMELINE,900000,SYNTH_START,winpost-1000-aa,kind=winning-post",
               "TIMELINE,901000,SYNTH_END,winpost-1000-aa,synth_ms=1000"]
    live = [(5.0, "TIMELINE,1000,SYNTH_START,porep-2-1,partition=0")]
    live += [(5.0 + 60 * m, f"TIMELINE,{1000 + 60_000 * m},SYNTH_END,porep-2-1,partition=0")
             for m in range(1, 61)]
    watch, said = _followed(backlog, live)
    assert watch.running() == []
    lost = [e for e in said if e.proof is not None and e.job_id == "winpost-1000-aa"]
    assert len(lost) == 1 and lost[0].proof is not None
    assert lost[0].proof.given_up == "restart"
    assert watch.post.offsets_began_again == 1


def test_lines_read_in_batches_long_after_they_were_written_are_no_new_engine_run() -> None:
    """A log seen in batches (on NFS, every 30 s): each batch's first line arrived 30 s after
    it was written, behind the "now" the arrivals extrapolate, and read as a new engine run,
    its PoSt in flight said lost. Offsets going back are judged against the offsets read."""
    backlog = ["TIMELINE,100000,SYNTH_START,winpost-1000-cc,kind=winning-post"]
    live = [(30.0, "TIMELINE,101000,SYNTH_END,winpost-1000-cc,synth_ms=1000"),
            (30.0, "TIMELINE,102000,GPU_QUEUE,winpost-1000-cc,monolithic"),
            (60.0, "TIMELINE,103000,GPU_PICKUP,winpost-1000-cc,worker=0")]
    watch, said = _followed(backlog, live)
    assert watch.post.offsets_began_again == 0
    assert not [e for e in said if e.proof is not None and e.proof.given_up == "restart"]
    assert [r.job_id for r in watch.running()] == ["winpost-1000-cc"]


def test_a_load_is_the_runs_first_only_when_the_runs_start_was_read() -> None:
    """A log followed from its end (live, anchored by /status) has not read the loads before
    it: its first load read may be a reload, so it is never said cold (which would hide
    eviction_min_idle and tell the operator to restart cuzk)."""
    load = ("2026-05-12T16:00:11.200000Z  INFO cuzk_core::srs_manager: loading SRS from disk "
            "circuit_id=winning-32g path=/data/zk/params/w.params file_size_gib=1")
    start = ("2026-05-12T16:00:00.000000Z  INFO cuzk_core::engine: starting cuzk engine "
             "pipeline_enabled=true")
    assert not fed(PostTracker(), [load])._srs_loads[-1].first_in_run
    assert fed(PostTracker(), [start, load])._srs_loads[-1].first_in_run


def test_srs_lines_naming_thousands_of_circuits_keep_only_cuzks_own() -> None:
    # A hostile log naming 10,000 circuits grew the set of the run's loaded circuits by each.
    lines = [f"2026-05-12T16:00:11.200000Z  INFO cuzk_core::srs_manager: SRS evicted "
             f"circuit_id=x{i}-32g freed_gib=1 budget_available_gib=3" for i in range(10_000)]
    assert len(fed(PostTracker(), lines)._srs_in_run) == 0


# -- `[pipeline] enabled = false`: cuzk's monolithic workers (engine.rs:3362-3505) ----------------

#: post-pipeline-off.log (`make_data.py --scenarios`, `post_pipeline_off`): one GPU, one
#: monolithic worker; a PoRep C2 proved whole from 10 s to 50 s, a WinningPoSt arriving at 20 s
#: (dequeued at 50 s, proved in 3.4 s), then a WindowPoSt on the idle worker (95 s).
PIPELINE_OFF = "post-pipeline-off.log"
WIN_OFF = "winpost-1000-5e6f7a8b"
WD_OFF = "wdpost-1000-0-[12 34 56 78 90 12 34 56]"


def _done_of(events: list[ProverEvent], job: str) -> ProofTiming:
    [p] = [e.proof for e in events if e.job_id == job and e.proof is not None and e.proof.done]
    return p


def test_a_winning_post_proved_with_the_pipeline_off_is_timed_and_judged_late() -> None:
    """With the pipeline off cuzk writes no TIMELINE line: its worker's `processing job
    (monolithic)` (engine.rs:3397) and `proof completed successfully (monolithic)` (3455-3462),
    inside its span `monolithic_worker{worker_id gpu job_id proof_kind}` (3394), say when a
    proof was taken and done. gapwatch read neither: the WinningPoSt that waited 30 s behind a
    whole PoRep C2 stayed "running" for good, said late with a synthesis_concurrency setting
    that does nothing there, and never timed."""
    events = [e for e in watched(PIPELINE_OFF) if e.job_id == WIN_OFF]
    running = [e for e in events if e.proof is not None and not e.proof.done]
    [done] = [e for e in events if e.proof is not None and e.proof.done]
    p = done.proof
    assert p is not None and p.one_step and p.proof_kind == "winning-post"
    assert p.total_s == pytest.approx(33.4, abs=0.01)
    assert p.queue_s == pytest.approx(30.0, abs=0.01)
    assert p.prove_s == pytest.approx(3.4, abs=0.01)
    # Synthesis and GPU are one call there: not known, never 0.
    assert p.synth_s is None and p.gpu_wait_s is None and p.gpu_s is None
    assert p.finalize_s is None
    assert p.verdict == "late" and done.level == "error" and done.gpu == 0
    assert p.waited_behind == ["worker 0: porep-1000-7 (porep-c2)"]
    assert p.setting is not None and p.setting.startswith("[pipeline] enabled = true")
    assert ("(queue 30.0 s behind worker 0: porep-1000-7 (porep-c2), prove 3.4 s: synthesis "
            "and GPU in one call, cuzk's pipeline off); LATE") in done.message
    notice = notice_of(done, 0)
    assert notice is not None and notice.level == "error" and WIN_OFF in notice.message
    # Said late while it still ran, once the data passed its 30 s, then when it ended.
    [late] = running
    assert late.level == "error" and "still running" in late.message


def test_a_window_post_proved_with_the_pipeline_off_on_an_idle_worker_is_on_time() -> None:
    p = _done_of(watched(PIPELINE_OFF), WD_OFF)
    assert p.one_step and p.proof_kind == "window-post" and p.verdict == "ok"
    assert p.total_s == pytest.approx(95.0, abs=0.01)
    assert p.queue_s == pytest.approx(0.0, abs=0.01)
    assert p.prove_s == pytest.approx(95.0, abs=0.01)
    assert p.waited_behind == []  # the worker was free when it arrived


def test_a_post_done_with_the_pipeline_off_is_never_said_late_or_running_after_it_ended(
) -> None:
    """Nothing ended a PoSt proved monolithically: the WindowPoSt done in 95 s was said LATE,
    "still running", once its 30 min had passed in the data, and listed running for good."""
    text = (DATA / PIPELINE_OFF).read_text()
    later = ("2026-05-12T21:00:00.000000Z  INFO cuzk_core::scheduler: job enqueued "
             "job_id=porep-1000-8 proof_kind=porep-c2 priority=Normal queue_position=0")
    parser, watch = LogParser(offline=True), CuzkWatch()
    said: list[ProverEvent] = []
    for i, line in enumerate([*text.splitlines(), later]):
        for e in parser.parse_line(line, "x", i, 0.0):
            said += watch.feed(e)
    assert watch.running() == []
    said += watch.finish()
    wd = [e for e in said if e.job_id == WD_OFF]
    assert len(wd) == 1 and wd[0].proof is not None and wd[0].proof.verdict == "ok"
    assert [e.proof.done for e in said if e.proof is not None].count(False) == 1  # WIN_OFF's


def test_a_one_step_post_whose_arrival_and_start_were_not_read_is_placed_by_cuzks_figures(
) -> None:
    """Its `job enqueued` and `processing job` lines not read (a log followed from mid-proof):
    its completion line's `total_ms` (from submission) places its arrival and `queue_ms` (the
    rest of it before the prover's own total) its prove start."""
    lines = [x for x in (DATA / PIPELINE_OFF).read_text().splitlines()
             if not (WIN_OFF in x and ("job enqueued" in x or "processing job" in x))]
    p = _done_of(watched_text("\n".join(lines)), WIN_OFF)
    assert p.one_step and p.verdict == "late"
    assert p.total_s == pytest.approx(33.4, abs=0.01)
    assert p.queue_s == pytest.approx(30.0, abs=0.01)
    assert p.prove_s == pytest.approx(3.4, abs=0.01)


def test_a_post_waiting_for_a_monolithic_worker_is_listed_in_its_queue_then_its_prove() -> None:
    """The dashboard's footer: a run whose start line says `pipeline_enabled=false` proves a
    PoSt in one step from its arrival; it is in its queue until a worker takes it."""
    from gapwatch.core.prover_watch import running_words

    lines = (DATA / PIPELINE_OFF).read_text().splitlines()
    enqueued = next(i for i, x in enumerate(lines) if WIN_OFF in x and "job enqueued" in x)
    taken = next(i for i, x in enumerate(lines) if WIN_OFF in x and "processing job" in x)
    parser, watch = LogParser(offline=True), CuzkWatch()

    def read(upto: int, start: int = 0) -> None:
        for i in range(start, upto + 1):
            for e in parser.parse_line(lines[i], "x", i, 0.0):
                watch.feed(e)

    read(enqueued)
    [r] = watch.running()
    assert r.job_id == WIN_OFF and r.phase == "queue" and r.timing.one_step
    assert running_words(r) == "WinningPoSt winpost-1000-5e6f7a8b running 0.0 s of 30 s (queue)"
    assert r.timing.waited_behind == ["worker 0: porep-1000-7 (porep-c2)"]
    read(taken, enqueued + 1)
    [r] = watch.running()
    assert r.phase == "prove" and r.timing.queue_s == pytest.approx(30.0, abs=0.01)
    assert r.timing.waited_behind == ["worker 0: porep-1000-7 (porep-c2)"]


def test_a_one_step_posts_lines_read_twice_are_one_proof() -> None:
    text = (DATA / PIPELINE_OFF).read_text()
    each_twice = "\n".join(x for line in text.splitlines() for x in (line, line))
    for case in (each_twice, text + text):
        said = watched_text(case)
        assert _done_of(said, WIN_OFF).total_s == pytest.approx(33.4, abs=0.01)
        assert _done_of(said, WD_OFF).verdict == "ok"


def test_gapwatch_parse_times_a_post_proved_with_the_pipeline_off(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _parse_timeline_of(PIPELINE_OFF, tmp_path, capsys)
    assert "prove: synthesis and GPU in one call" in out
    [row] = [x for x in out.splitlines() if WIN_OFF in x and "winning-post" in x]
    # total, queue, synth, GPU wait, GPU, prove, finalize, deadline, verdict
    assert row.split()[3:] == ["33.4", "30.0", "-", "-", "-", "3.4", "-", "30.0", "late"]
    assert "waited for a GPU worker behind: worker 0: porep-1000-7 (porep-c2)" in out


# -- A PoSt that fails: its failure line names it (docs/post.md, "A PoSt that fails") -------------

#: post-failed.log (`make_data.py --scenarios`, `post_failed`): a WinningPoSt whose `GPU prove
#: start failed` (engine.rs:3282) is written inside its GPU worker's span, which names it; one
#: whose `synthesis failed` (2855) is inside `synth_single{proof_kind}`, which names no job
#: (the one WinningPoSt in synthesis then).
FAILED = "post-failed.log"
WIN_FAILED = "winpost-1000-3c4d5e6f"
WIN_SYNTH_FAILED = "winpost-1000-4d5e6f70"
#: post-failed-pipeline-off.log: a WinningPoSt the monolithic worker fails (`proof failed`,
#: engine.rs:3471, in its span), then one on time.
FAILED_OFF = "post-failed-pipeline-off.log"
WIN_FAILED_OFF = "winpost-1000-6f708192"
WIN_AFTER_OFF = "winpost-1000-708192a3"
#: When its `GPU prove start task panicked` line was written (post-failed.log: 21:00:12.5002),
#: and what gapwatch says of it: the line's message, then cuzk's error (tokio's `JoinError` of
#: supraseal-c2's CUDA error panic, engine.rs:3302).
FAILED_AT_S = 1778619612.5002
WIN_FAILED_ERROR = ('GPU prove start task panicked: task 41 panicked with message '
                    '"cudaGetLastError()@/root/.cargo/registry/src/sppark-0.1.14/ntt/kernels/'
                    'gs_mixed_radix_wide.cu:220 failed: \\"out of memory\\""')


def _proof_events(events: list[ProverEvent], job: str) -> list[ProverEvent]:
    return [e for e in events if e.kind == "proof" and e.job_id == job]


def test_a_winning_post_that_fails_is_said_failed_at_once_with_its_error_not_late_later(
) -> None:
    """`GPU prove start task panicked` inside `gpu_worker{job_id=winpost-...}` (engine.rs:
    3302, after supraseal-c2's CUDA error panic on stderr): the WinningPoSt lost its block then. It was an error event only, and the PoSt stayed in flight until its 30 s
    passed, then was said LATE (a slow proof, not a failed one), with a setting for its
    phases. It is said failed at the failure line's time, with cuzk's error, its last word:
    the log goes on 40 s past its deadline and nothing more is said of it."""
    from gapwatch.core.prover_watch import alert_line

    events = watched(FAILED)
    [failed] = _proof_events(events, WIN_FAILED)
    p = failed.proof
    assert p is not None and p.verdict == "failed" and p.done and p.given_up is None
    assert failed.t_wall_s == pytest.approx(FAILED_AT_S)
    assert failed.level == "error" and failed.gpu == 0
    assert p.error == WIN_FAILED_ERROR
    assert p.setting is None  # no phase's setting makes a proof of a failed one
    # Its phases up to the failure: the GPU one it failed in counted to the failure line.
    assert p.total_s == pytest.approx(2.5, abs=0.01)
    assert p.synth_s == pytest.approx(2.1, abs=0.01)
    assert p.gpu_s == pytest.approx(0.3, abs=0.01)
    assert failed.message.startswith(
        f"WinningPoSt {WIN_FAILED}: {WIN_FAILED_ERROR} (after 2.5 s of its "
        "30 s deadline; queue 0.0 s, synthesis 2.1 s")
    assert failed.message.endswith("; FAILED")
    # The footer's alert leads with its verdict, then why (test_ui_glance: at 80 columns).
    assert alert_line(failed).startswith(
        f"prover proof FAILED at 21:00:12: WinningPoSt {WIN_FAILED}: GPU prove start task "
        "panicked: task 41 panicked")
    # Its failure line is an error event of its own, said just before it.
    i = events.index(failed)
    assert events[i - 1].kind == "error"
    assert "GPU prove start task panicked" in events[i - 1].message


def test_a_synthesis_failure_naming_no_job_fails_the_one_post_in_synthesis() -> None:
    """`synthesis failed` inside `synth_single{proof_kind=winning-post}` (engine.rs:2855, 2099)
    names a kind, no job; cuzk writes it after its job's SYNTH_START (2665), in place of its
    SYNTH_END (2745). In one file read from the run's start line (every line written before it
    read before it), one WinningPoSt was in synthesis then: it is that one's. It stayed in
    flight and was said LATE 30 s on, counted late everywhere, as if it had been slow."""
    events = watched(FAILED)
    [failed] = _proof_events(events, WIN_SYNTH_FAILED)
    p = failed.proof
    assert p is not None and p.verdict == "failed" and p.done and failed.level == "error"
    # Its error as curio e0294b0f makes it (pipeline.rs:2923-2925, bincode 1.3.3's words).
    assert p.error == ("synthesis failed: failed to deserialize WinningPoSt vanilla proof: "
                       "io error: unexpected end of file")
    # Its synthesis, the phase it failed in, counted to the failure line (21:00:21).
    assert p.synth_s == pytest.approx(1.0, abs=0.01) and p.total_s == pytest.approx(1.0, abs=0.01)
    assert p.gpu_wait_s is None and p.gpu_s is None
    assert failed.message.startswith(f"WinningPoSt {WIN_SYNTH_FAILED}: synthesis failed: failed "
                                     "to deserialize WinningPoSt vanilla proof: io error: "
                                     "unexpected end of file (after 1.0 s of its 30 s")
    # Its line is an error event of its own, as before.
    assert any(e.kind == "error" and "synthesis failed" in e.message for e in events)


def _cut_at_gpu_start(text: str, *after: str) -> str:
    """post-behind-partitions.log up to its WinningPoSt's GPU_START (engine.rs:3131), then
    `after`, then a line a minute on."""
    lines = text.splitlines()
    at = next(i for i, x in enumerate(lines) if "GPU_START,winpost" in x)
    return "\n".join([*lines[:at + 1], *after,
                      "2026-05-12T15:01:00.000000Z  INFO cuzk_core::engine: pinned pool checkout"])


#: The split prove's finalizer failing (engine.rs:977 via 3257: `gpu_prove_finish` failed, so
#: no GPU_END, 3196), in no span: no job named.
_FINALIZER_FAILED = ("2026-05-12T15:00:13.400000Z ERROR cuzk_core::engine: GPU proving failed "
                     "error=GPU proving failed: Unsatisfiable")


def test_a_finalizer_failure_naming_no_job_fails_the_one_post_on_the_gpu() -> None:
    """`GPU proving failed` from the split prove's finalizer (the default) names no job: it is
    the job whose GPU_START was read and its GPU_END not. The WinningPoSt was the one such job
    (PoRep partitions fail with lines of their own, `partition GPU proving failed`, 656): it
    is that one's, failed at once. It was said LATE a minute on."""
    text = (DATA / "post-behind-partitions.log").read_text()
    said = watched_text(_cut_at_gpu_start(text, _FINALIZER_FAILED))
    [failed] = _proof_events(said, "winpost-1000-0a1b2c3d")
    p = failed.proof
    assert p is not None and p.verdict == "failed" and p.error == "GPU proving failed: Unsatisfiable"
    assert p.gpu_s == pytest.approx(0.03, abs=0.005)  # its GPU step, to the failure line
    assert [e.kind for e in said].count("error") == 1


def test_a_failure_line_naming_no_job_fails_no_proof_where_more_than_one_can_be_its() -> None:
    """Never a guess: where the lines read do not leave exactly one PoSt it can be, a failure
    line naming no job fails none (an error event; the PoSt said late past its deadline, as
    before): two WinningPoSt in synthesis (`synthesis_concurrency` above 1); two jobs on the
    GPU past their GPU_START; cuzk's stdout and stderr read as two files (the failure, stdout,
    read before the TIMELINE lines, stderr, that tell which was in synthesis); the run's start
    line not read (a job whose SYNTH_START came before the part read may be its)."""
    def verdicts(said: list[ProverEvent], job: str) -> list[str]:
        return [e.proof.verdict for e in _proof_events(said, job) if e.proof is not None]

    lines = (DATA / FAILED).read_text().splitlines()
    fail_at = next(i for i, x in enumerate(lines) if "synthesis failed" in x)
    other = "winpost-1000-5e6f7081"
    two_in_synthesis = [*lines[:fail_at], f"TIMELINE,20470,SYNTH_START,{other},kind=winning-post",
                        *lines[fail_at:]]
    said = watched_text("\n".join(two_in_synthesis))
    assert verdicts(said, WIN_SYNTH_FAILED) == ["late"] and verdicts(said, other) == ["late"]

    out = [x for x in lines if not x.startswith("TIMELINE")]
    err = [x for x in lines if x.startswith("TIMELINE")]
    assert "failed" not in verdicts(_parsed_apart(out, err), WIN_SYNTH_FAILED)
    no_start = [x for x in lines if "starting cuzk engine" not in x]
    assert "failed" not in verdicts(_parsed_at_once("\n".join(no_start)), WIN_SYNTH_FAILED)

    text = (DATA / "post-behind-partitions.log").read_text()
    second = "winpost-1000-1b2c3d4e"
    two_on_gpu = _cut_at_gpu_start(text, f"TIMELINE,13350,SYNTH_START,{second},kind=winning-post",
                                   f"TIMELINE,13360,SYNTH_END,{second},synth_ms=10",
                                   f"TIMELINE,13360,GPU_QUEUE,{second},monolithic",
                                   f"TIMELINE,13370,GPU_PICKUP,{second},worker=1",
                                   f"TIMELINE,13370,GPU_START,{second},worker=1",
                                   _FINALIZER_FAILED)
    said = watched_text(two_on_gpu)
    assert verdicts(said, "winpost-1000-0a1b2c3d") == ["late"] and verdicts(said, second) == ["late"]


def test_a_winning_post_the_monolithic_worker_fails_is_said_failed_at_once() -> None:
    """`[pipeline] enabled = false`: `proof failed` in the worker's span
    `monolithic_worker{job_id}` (engine.rs:3471, 3394). It freed the worker and left the PoSt
    in flight, said late 30 s on."""
    events = watched(FAILED_OFF)
    [failed] = _proof_events(events, WIN_FAILED_OFF)
    p = failed.proof
    assert p is not None and p.verdict == "failed" and p.one_step and p.done
    assert p.error == "proof failed: generate_winning_post_with_vanilla failed"
    assert p.queue_s == pytest.approx(0.0, abs=0.01)
    assert p.prove_s == pytest.approx(1.5, abs=0.01)
    assert p.total_s == pytest.approx(1.5, abs=0.01)
    assert "prove 1.5 s: synthesis and GPU in one call" in failed.message
    # The worker was free again: the next WinningPoSt waited behind nothing, and was on time.
    after = _done_of(events, WIN_AFTER_OFF)
    assert after.verdict == "ok" and after.waited_behind == []


def test_a_failed_posts_timeline_lines_read_after_its_failure_are_not_a_proof_said_late(
) -> None:
    """cuzk's stdout and stderr as two files, read one after the other (docs/logs.md): the
    failure (stdout) is read before the PoSt's TIMELINE lines (stderr). Taken as a new proof,
    they were in flight for good and said late after the failure. A retry under the same id
    (Curio's id is the same for the same randomness) after the failure is a proof of its own,
    timed as any."""
    lines = (DATA / FAILED).read_text().splitlines()
    retry_at = 60.0  # s after 21:00:00: its lines, pipelined, on time
    epoch = 30  # ms: `starting cuzk engine` at 21:00:00.030
    ms = round(retry_at * 1000) - epoch
    retry_out = [
        "2026-05-12T21:01:00.000000Z  INFO cuzk_core::scheduler: job enqueued "
        f"job_id={WIN_FAILED} proof_kind=winning-post priority=Critical queue_position=0",
        "2026-05-12T21:01:03.001000Z  INFO cuzk_core::engine: proof completed successfully "
        "(pipeline) proof_len=192 total_ms=3001 queue_ms=0 synth_ms=2000 gpu_ms=800"]
    retry_err = [f"TIMELINE,{ms},SYNTH_START,{WIN_FAILED},kind=winning-post",
                 f"TIMELINE,{ms + 2000},SYNTH_END,{WIN_FAILED},synth_ms=2000",
                 f"TIMELINE,{ms + 2000},GPU_QUEUE,{WIN_FAILED},monolithic",
                 f"TIMELINE,{ms + 2200},GPU_PICKUP,{WIN_FAILED},worker=0",
                 f"TIMELINE,{ms + 2200},GPU_START,{WIN_FAILED},worker=0",
                 f"TIMELINE,{ms + 3000},GPU_END,{WIN_FAILED},worker=0,gpu_ms=800"]
    out = [x for x in lines if not x.startswith("TIMELINE")] + retry_out
    err = [x for x in lines if x.startswith("TIMELINE")] + retry_err
    said = watched_text("\n".join(out + err))
    proofs = _proof_events(said, WIN_FAILED)
    assert [(e.proof.verdict, e.proof.done) for e in proofs if e.proof is not None] == [
        ("failed", True), ("ok", True)]
    failed, retry = (e.proof for e in proofs)
    assert failed is not None and failed.total_s == pytest.approx(2.5, abs=0.01)
    # Its phases were not read before it failed: not known, never its queue up to the failure.
    assert failed.queue_s is None and failed.synth_s is None and failed.gpu_s is None
    assert retry is not None and retry.total_s == pytest.approx(3.0, abs=0.01)
    assert retry.synth_s == pytest.approx(2.0, abs=0.01)


def test_a_failure_line_read_twice_is_one_failed_proof() -> None:
    """A log given twice (a recording's log events and the `--log` file they came from)."""
    text = (DATA / FAILED_OFF).read_text()
    each_twice = "\n".join(x for line in text.splitlines() for x in (line, line))
    for case in (each_twice, text + text):
        said = _proof_events(watched_text(case), WIN_FAILED_OFF)
        assert [e.proof.verdict for e in said if e.proof is not None] == ["failed"]


def test_gapwatch_parse_says_a_failed_post_with_its_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _parse_timeline_of(FAILED, tmp_path, capsys)
    assert "PoSt proof(s) (2 failed, 0 late, 0 at risk)" in out
    [row] = [x for x in out.splitlines() if WIN_FAILED in x and "winning-post" in x
             and x.startswith("    ")]
    # total, queue, synth, GPU wait, GPU, finalize, deadline, verdict
    assert row.split()[3:] == ["2.5", "0.0", "2.1", "0.1", "0.3", "-", "30.0", "failed"]
    assert f"      error: {WIN_FAILED_ERROR}" in out


def test_a_failed_posts_error_and_the_failures_remembered_stay_bounded() -> None:
    """A 12 KiB `error=` (a hostile or runaway line) is cut in the proof's words and error,
    not copied whole into every output; 5,000 failed pipelined ids whose TIMELINE lines were
    never read keep at most `MAX_FAILED_APART` waiting for them."""
    from gapwatch.core.models import MAX_ERROR_CHARS
    from gapwatch.cuzk.post import MAX_FAILED_APART

    span = ("gpu_worker{{worker_id=0 gpu=0 job_id={job} proof_kind=winning-post batch_size=1 "
            "partition=None}}")
    line = ("2026-05-12T21:00:{s:02d}.000000Z ERROR " + span
            + ": cuzk_core::engine: GPU prove start failed error={error}")
    [ev] = _proof_events(watched_text(line.format(s=1, job="winpost-1000-aaaa",
                                                  error="x" * 12_000)), "winpost-1000-aaaa")
    assert ev.proof is not None and ev.proof.verdict == "failed"
    assert ev.proof.error is not None and len(ev.proof.error) < MAX_ERROR_CHARS + 40
    assert len(ev.message) < 2 * MAX_ERROR_CHARS

    parser, tracker = LogParser(offline=True), PostTracker()
    for i in range(5_000):
        text = line.format(s=i % 60, job=f"winpost-1000-{i:08x}", error="boom")
        for e in parser.parse_line(text, "x", i, 0.0):
            tracker.feed(e)
    assert tracker.failed == 5_000 and len(tracker._apart) == MAX_FAILED_APART


def test_a_post_proved_with_split_prove_disabled_ends_at_its_completion_line_not_late() -> None:
    """`CUZK_DISABLE_SPLIT_PROVE=1` proves in one synchronous call (engine.rs:3078-3118): no
    GPU_START, no GPU_END; the completion line (`proof completed successfully (pipeline)`,
    engine.rs:839-846, from `process_monolithic_result` at 3111) is written inside the GPU
    worker's span, which names the job (engine.rs:3005-3012). A WinningPoSt proved in 3 s was
    never seen to end: said LATE, "still running", once the log went on past its 30 s."""
    job = "winpost-1000-8a9b0c1d"
    done_line = ("2026-05-12T16:00:13.000000Z  INFO gpu_worker{worker_id=0 gpu=0 job_id=" + job
                 + " proof_kind=winning-post batch_size=1 partition=None}: cuzk_core::engine: "
                 "proof completed successfully (pipeline) proof_len=192 total_ms=3000 "
                 "queue_ms=0 synth_ms=1200 gpu_ms=1800")
    text = (_START + "2026-05-12T16:00:10.000000Z  INFO cuzk_core::scheduler: job enqueued "
            f"job_id={job} proof_kind=winning-post priority=Critical queue_position=0\n"
            f"TIMELINE,9970,SYNTH_START,{job},kind=winning-post\n"
            f"TIMELINE,11170,SYNTH_END,{job},synth_ms=1200\n"
            f"TIMELINE,11170,GPU_QUEUE,{job},monolithic\n"
            f"TIMELINE,11180,GPU_PICKUP,{job},worker=0\n" + done_line + "\n" + done_line + "\n"
            "2026-05-12T16:01:30.000000Z  INFO cuzk_core::engine: pipeline GPU worker started "
            "worker_id=0 gpu=0 sub_id=0\n")
    proofs = [e.proof for e in watched_text(text) if e.proof is not None and e.job_id == job]
    [p] = proofs  # its one word, the completion line read twice counted once
    assert p.done and p.verdict == "ok"
    assert p.total_s == pytest.approx(3.0, abs=0.01)
    assert p.synth_s == pytest.approx(1.2, abs=0.01)
    assert p.gpu_s is None  # no GPU_START or GPU_END: not known, never 0



def test_with_split_prove_disabled_a_post_does_not_wait_behind_a_partition_done_before() -> None:
    """`CUZK_DISABLE_SPLIT_PROVE=1`: worker 0 proves partition 3 in one synchronous call, its
    result line in its GPU worker's span (engine.rs:474-479 via 3105), no GPU_END (3078-3118).
    What the worker held was let go only at a GPU_END: a WinningPoSt queued 5 s after that
    partition was done was said to wait "behind worker 0: porep-1000-5 partition 3"."""
    job = "winpost-1000-7c8d9e0f"
    text = (_START
            + "TIMELINE,9970,GPU_PICKUP,porep-1000-5,worker=0,partition=3\n"
            "2026-05-12T16:00:12.000000Z  INFO gpu_worker{worker_id=0 gpu=0 job_id=porep-1000-5 "
            "proof_kind=porep-c2 batch_size=1 partition=Some(3)}: cuzk_core::engine: partition "
            "GPU prove complete job_id=porep-1000-5 partition=3 gpu_ms=2000 filled=0\n"
            "2026-05-12T16:00:15.000000Z  INFO cuzk_core::scheduler: job enqueued "
            f"job_id={job} proof_kind=winning-post priority=Critical queue_position=0\n"
            f"TIMELINE,14970,SYNTH_START,{job},kind=winning-post\n"
            f"TIMELINE,16970,SYNTH_END,{job},synth_ms=2000\n"
            f"TIMELINE,16970,GPU_QUEUE,{job},monolithic\n"
            f"TIMELINE,17270,GPU_PICKUP,{job},worker=0\n"
            "2026-05-12T16:00:19.000000Z  INFO gpu_worker{worker_id=0 gpu=0 job_id=" + job
            + " proof_kind=winning-post batch_size=1 partition=None}: cuzk_core::engine: "
            "proof completed successfully (pipeline) proof_len=192 total_ms=4000 "
            "queue_ms=0 synth_ms=2000 gpu_ms=1700\n")
    [ev] = [e for e in watched_text(text) if e.proof is not None and e.job_id == job]
    assert ev.proof is not None and ev.proof.done
    assert ev.proof.gpu_wait_s == pytest.approx(0.3, abs=0.01)
    assert ev.proof.waited_behind == [] and "behind" not in ev.message


#: One monolithic worker's line that is not cuzk's in a pipelined run (engine.rs:3394 is in the
#: branch of `[pipeline] enabled = false`, 3362-3378): a stray line, another run's.
STRAY_MONOLITHIC = ("2026-05-12T16:00:10.000000Z  INFO monolithic_worker{worker_id=9 gpu=0 "
                    "job_id=junk proof_kind=porep-c2}: cuzk_core::engine: processing job "
                    "(monolithic)")


def _proofs_of(lines: list[str]) -> tuple[list[tuple[str | None, ProofTiming]], PostTracker]:
    """Each proof said of `lines` (its job, its timing), and the tracker that said them."""
    parser, watch = LogParser(offline=True), CuzkWatch()
    out: list[ProverEvent] = []
    for i, line in enumerate(lines):
        for e in parser.parse_line(line, "x", i, 0.0):
            out += watch.feed(e)
    out += watch.finish()
    return [(e.job_id, e.proof) for e in out if e.proof is not None], watch.post


def test_a_stray_monolithic_line_does_not_make_a_pipelined_runs_post_one_step() -> None:
    """One `monolithic_worker{...}: processing job (monolithic)` line in post-late.log, whose
    run's start line said `pipeline_enabled=true`: the late WinningPoSt was "one-step" (every
    phase "-", no setting: queue 32 s "behind worker 9: junk"). The run's start line wins for
    that run: the stray line is passed over, counted, and the PoSt is timed as without it."""
    lines = (DATA / "post-late.log").read_text().splitlines()
    clean, _ = _proofs_of(lines)
    enqueued = next(i for i, x in enumerate(lines) if "job enqueued" in x)
    started = ("2026-05-12T16:00:10.000000Z  INFO cuzk_core::engine: monolithic GPU worker "
               "started worker_id=9 gpu=0")
    for stray in ([STRAY_MONOLITHIC], [started, STRAY_MONOLITHIC]):
        proofs, tracker = _proofs_of([*lines[:enqueued], *stray, *lines[enqueued:]])
        assert proofs == clean
        assert tracker.not_this_run == len(stray)
    done = clean[-1][1]
    assert not done.one_step and done.verdict == "late" and done.synth_s is not None
    assert done.setting is not None and done.setting.startswith(
        "[pipeline] synthesis_concurrency")


def test_without_the_runs_start_line_a_monolithic_line_still_says_the_pipeline_is_off() -> None:
    """A log followed from after cuzk's start line: the monolithic worker's lines are all
    that say the pipeline is off, and they still do."""
    lines = [x for x in (DATA / PIPELINE_OFF).read_text().splitlines()
             if "starting cuzk engine" not in x and "cuzk-daemon starting" not in x]
    proofs, _ = _proofs_of(lines)
    win = [p for job, p in proofs if p.done and job == WIN_OFF]
    assert [p.one_step for p in win] == [True]
    assert win[0].queue_s == pytest.approx(30.0, abs=0.01)


def _late_posts_with_ids(ids: list[str]) -> list[str]:
    """A pipelined WinningPoSt a minute for each id, each 50 s from arrival to done (late):
    its enqueue line, its TIMELINE lines, its completion line (`total_ms=50000`)."""
    lines = ["2026-05-12T16:00:00.030000Z  INFO cuzk_core::engine: starting cuzk engine "
             "pipeline_enabled=true"]
    for i, job in enumerate(ids):
        m = 1 + i  # minute of its arrival
        off = m * 60_000 + 47_000  # its synthesis starts 47 s after it arrived
        lines += [
            f"2026-05-12T{16 + m // 60:02d}:{m % 60:02d}:00.000000Z  INFO cuzk_core::scheduler: "
            f"job enqueued job_id={job} proof_kind=winning-post priority=Critical "
            "queue_position=0",
            f"TIMELINE,{off},SYNTH_START,{job},kind=winning-post",
            f"TIMELINE,{off + 2000},SYNTH_END,{job},synth_ms=2000",
            f"TIMELINE,{off + 2000},GPU_QUEUE,{job},monolithic",
            f"TIMELINE,{off + 2010},GPU_PICKUP,{job},worker=1",
            f"TIMELINE,{off + 2010},GPU_START,{job},worker=1",
            f"TIMELINE,{off + 2900},GPU_END,{job},worker=1,gpu_ms=890",
            f"2026-05-12T{16 + m // 60:02d}:{m % 60:02d}:50.000000Z  INFO cuzk_core::engine: "
            "proof completed successfully (pipeline) proof_len=192 total_ms=50000 "
            "queue_ms=47000 synth_ms=2000 gpu_ms=890"]
    return lines


def _said_of(lines: list[str], bounded: bool) -> tuple[list[ProverEvent], PostTracker]:
    """What the watcher says of `lines`, given each event whole (as the tests' parser gives
    it) or as the session and the report give it (`bounded_event`: its text cut)."""
    parser, watch = LogParser(offline=True), CuzkWatch()
    out: list[ProverEvent] = []
    for i, line in enumerate(lines):
        for e in parser.parse_line(line, "x", i, 0.0):
            out += watch.feed(bounded_event(e) if bounded else e)
    return out + watch.finish(), watch.post


def test_posts_whose_ids_run_past_the_parse_bound_are_refused_and_said_never_merged() -> None:
    """40 late WinningPoSt whose ids ran past the 16 KiB a line is parsed to (`PARSE_CHARS`):
    every id was cut to the same text, and the 40 were said as one PoSt, "ok (running)".
    An id gapwatch cannot hold whole is no PoSt it can follow: none is timed or judged, their
    lines are counted, and that is said once."""
    from gapwatch.logs.parse import PARSE_CHARS

    ids = [f"winpost-1000-{'a' * (PARSE_CHARS + 4096)}{i:04d}" for i in range(40)]
    lines = _late_posts_with_ids(ids)
    for bounded in (False, True):
        said, tracker = _said_of(lines, bounded)
        [refused] = said  # a proof not timed (`GapwatchPoStNotTimed`), never a "warning"
        assert refused.kind == "proof" and refused.level == "warning"
        assert refused.proof is not None and refused.proof.verdict == "unknown"
        assert refused.proof.total_s is None and refused.proof.queue_s is None
        assert f"WinningPoSt job ids longer than {TEXT_CHARS} characters" in refused.message
        assert tracker.ids_too_long == 40 * 7  # the enqueue and TIMELINE lines of each


def test_post_ids_that_differ_only_past_what_gapwatch_keeps_are_never_one_proof() -> None:
    """Ids within the parse bound but longer than the watcher is given of them
    (`sizes.bounded_event` keeps `TEXT_CHARS`): cut there, ten late PoSt were one. Refused as
    above; an id of the longest length kept is still followed, each proof its own."""
    long_ids = [f"winpost-1000-{'b' * TEXT_CHARS}{i}" for i in range(10)]
    said, tracker = _said_of(_late_posts_with_ids(long_ids), bounded=True)
    assert [(e.kind, e.proof and e.proof.verdict) for e in said] == [("proof", "unknown")]
    assert tracker.ids_too_long == 70
    kept = [f"winpost-1000-{i}-".ljust(TEXT_CHARS, "c") for i in range(10)]
    said, tracker = _said_of(_late_posts_with_ids(kept), bounded=True)
    done = [e for e in said if e.proof is not None and e.proof.done]
    assert sorted(e.job_id or "" for e in done) == kept and tracker.ids_too_long == 0
    assert all(e.proof is not None and e.proof.verdict == "late" for e in done)


def test_a_post_on_the_engine_clock_ended_by_its_named_completion_line_is_not_late() -> None:
    """No start line read (a log followed from mid-run, cuzk's stderr alone): the PoSt is
    timed by its TIMELINE offsets, cuzk's own clock. Its completion line in the GPU worker's
    span (`CUZK_DISABLE_SPLIT_PROVE=1`) is on the wall clock: paired across the two clocks,
    a 1.2 s WinningPoSt was said LATE, ">1778616003.5 s". It ends at the least it ran."""
    job = "winpost-1000-9b0c1d2e"
    text = (f"TIMELINE,9970,SYNTH_START,{job},kind=winning-post\n"
            f"TIMELINE,11170,SYNTH_END,{job},synth_ms=1200\n"
            f"TIMELINE,11170,GPU_QUEUE,{job},monolithic\n"
            f"TIMELINE,11180,GPU_PICKUP,{job},worker=0\n"
            "2026-05-12T16:00:13.000000Z  INFO gpu_worker{worker_id=0 gpu=0 job_id=" + job
            + " proof_kind=winning-post batch_size=1 partition=None}: cuzk_core::engine: "
            "proof completed successfully (pipeline) proof_len=192 total_ms=3000 queue_ms=0 "
            "synth_ms=1200 gpu_ms=1800\n")
    parser, watch = LogParser(offline=True), CuzkWatch(arrival_timed=False)  # as `parse`
    events: list[ProverEvent] = []
    for line in text.splitlines():
        for e in parser.parse_line(line, "x", 0, 0.0):
            events += watch.feed(e)
    [p] = [e.proof for e in events + watch.finish() if e.proof is not None and e.job_id == job]
    assert p.done and p.verdict != "late"
    assert p.total_s is None and p.total_at_least_s == pytest.approx(1.21, abs=0.01)


#: A WindowPoSt submitted at 15:00:05 (its `job enqueued` line not read) and a WinningPoSt
#: enqueued at 15:00:30 end on the GPU half a second apart. The WindowPoSt's completion line
#: comes first (total_ms from 15:00:05); the WinningPoSt's finalizer waits 9 s for cuzk's job
#: tracker lock, its line at 15:00:49 (total_ms from 15:00:30).
_WIN = "winpost-1000-0a1b2c3d"
_WD = "wdpost-1000-0-[1 2 3 4 5 6 7 8]"
FAR_BEFORE = f"""\
2026-05-12T15:00:00.000000Z  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true
2026-05-12T15:00:30.000000Z  INFO cuzk_core::scheduler: job enqueued job_id={_WIN} proof_kind=winning-post priority=Critical queue_position=0
TIMELINE,10000,SYNTH_START,{_WD},kind=window-post
TIMELINE,30000,SYNTH_START,{_WIN},kind=winning-post
TIMELINE,35000,SYNTH_END,{_WIN},synth_ms=5000
TIMELINE,35000,GPU_QUEUE,{_WIN},monolithic
TIMELINE,35000,GPU_PICKUP,{_WIN},worker=0
TIMELINE,35000,GPU_START,{_WIN},worker=0
TIMELINE,35500,SYNTH_END,{_WD},synth_ms=25500
TIMELINE,35500,GPU_QUEUE,{_WD},monolithic
TIMELINE,35500,GPU_PICKUP,{_WD},worker=1
TIMELINE,35500,GPU_START,{_WD},worker=1
TIMELINE,40000,GPU_END,{_WIN},worker=0,gpu_ms=5000
TIMELINE,40500,GPU_END,{_WD},worker=1,gpu_ms=5000
2026-05-12T15:00:40.600000Z  INFO cuzk_core::engine: proof completed successfully (pipeline) proof_len=192 total_ms=35600 queue_ms=5100 synth_ms=25500 gpu_ms=5000
2026-05-12T15:00:49.000000Z  INFO cuzk_core::engine: proof completed successfully (pipeline) proof_len=192 total_ms=19000 queue_ms=9000 synth_ms=5000 gpu_ms=5000
"""


def test_a_completion_line_placing_a_post_far_before_its_arrival_goes_to_the_post_it_fits(
) -> None:
    """The WindowPoSt's line places its submission 25 s before the WinningPoSt's `job
    enqueued` line: more than cuzk's job tracker lock is waited for between a submission and
    that line (`TRACKER_LOCK_WAIT_S`), so it is not the WinningPoSt's. Ranked first because the
    WinningPoSt's arrival was read, it was taken for its own: "10.6 s of 30 s ... ok" for its
    19.0 s, and the WindowPoSt 39.0 s from a queue placed by the other's line. Each gets its
    own, read in cuzk's order or with the whole stdout before the stderr."""
    lines = FAR_BEFORE.splitlines()
    by_stream = ([x for x in lines if not x.startswith("TIMELINE")]
                 + [x for x in lines if x.startswith("TIMELINE")])
    for order in (lines, by_stream):
        said = {ev.job_id: ev.proof for ev in watched_text("\n".join(order))}
        win, window = said[_WIN], said[_WD]
        assert win is not None and window is not None
        assert win.total_s == pytest.approx(19.0) and win.finalize_s == pytest.approx(9.0)
        assert win.verdict == "at_risk"
        assert window.total_s == pytest.approx(35.6) and window.queue_s == pytest.approx(5.0)
        assert window.finalize_s == pytest.approx(0.1)


def test_a_line_placing_a_lone_post_far_before_its_arrival_is_never_its_own() -> None:
    """Only the WinningPoSt ended: a completion line 0.5 s after its GPU_END whose total_ms
    places its submission 10 minutes before the WinningPoSt's `job enqueued` line (a job
    submitted long before) was taken for its own, the only one left to choose: "10.5 s ...
    ok" for 18.0 s. It waits for its own; one placing its submission 8 s before its arrival (a
    submission that waited that long for the tracker lock) is still its own."""
    def win_with(*completions: str) -> ProofTiming:
        lines = [x for x in FAR_BEFORE.splitlines() if _WD not in x and "total_ms" not in x]
        [ev] = [e for e in watched_text("\n".join([*lines, *completions]))
                if e.job_id == _WIN and e.proof is not None]
        assert ev.proof is not None
        return ev.proof

    line = ("2026-05-12T15:00:{at}  INFO cuzk_core::engine: proof completed successfully "
            "(pipeline) proof_len=192 total_ms={total_ms} queue_ms=0 synth_ms=5000 gpu_ms=5000")
    other = line.format(at="40.500000Z", total_ms=610_500)
    own = line.format(at="48.000000Z", total_ms=18_000)
    p = win_with(other, own)
    assert p.total_s == pytest.approx(18.0) and p.finalize_s == pytest.approx(8.0)
    assert p.verdict == "at_risk"
    waited = win_with(line.format(at="48.000000Z", total_ms=26_000))
    assert waited.total_s == pytest.approx(18.0) and waited.finalize_s == pytest.approx(8.0)


#: A WinningPoSt's failed attempt, its log read from mid-synthesis (its SYNTH_START and the
#: run's start line before the part read: timed by the offsets), then Curio's retry under the
#: same id (lib/ffi/cuzk_funcs.go:220), whose synthesis reloads its SRS: 32 s, late.
_RETRIED = WIN_FAILED
_FAILED_ATTEMPT = [
    f"TIMELINE,12070,SYNTH_END,{_RETRIED},synth_ms=2100",
    f"TIMELINE,12070,GPU_QUEUE,{_RETRIED},monolithic",
    f"TIMELINE,12170,GPU_PICKUP,{_RETRIED},worker=0",
    f"TIMELINE,12170,GPU_START,{_RETRIED},worker=0",
    "2026-05-12T21:00:12.500000Z ERROR gpu_worker{worker_id=0 gpu=0 job_id=" + _RETRIED
    + " proof_kind=winning-post batch_size=1 partition=None}: cuzk_core::engine: GPU prove "
    "start failed error=GPU prove start failed: Unsatisfiable"]
_RETRY_ENQUEUED = ("2026-05-12T21:01:00.000000Z  INFO cuzk_core::scheduler: job enqueued "
                   f"job_id={_RETRIED} proof_kind=winning-post priority=Critical "
                   "queue_position=0")
_RETRY = [f"TIMELINE,59970,SYNTH_START,{_RETRIED},kind=winning-post",
          f"TIMELINE,90970,SYNTH_END,{_RETRIED},synth_ms=31000",
          f"TIMELINE,90970,GPU_QUEUE,{_RETRIED},monolithic",
          f"TIMELINE,91170,GPU_PICKUP,{_RETRIED},worker=0",
          f"TIMELINE,91170,GPU_START,{_RETRIED},worker=0",
          f"TIMELINE,91970,GPU_END,{_RETRIED},worker=0,gpu_ms=800"]
_RETRY_DONE = ("2026-05-12T21:01:32.001000Z  INFO cuzk_core::engine: proof completed "
               "successfully (pipeline) proof_len=192 total_ms=32001 queue_ms=0 "
               "synth_ms=31000 gpu_ms=800")


def test_a_retry_of_a_post_whose_failed_attempts_start_was_not_read_is_timed_by_its_lines(
) -> None:
    """`parse` of a log begun mid-run (no start line: the offsets time it) holding a failed
    WinningPoSt from its SYNTH_END on, then Curio's retry under the same id: the retry's
    SYNTH_START was taken for the failed attempt's (its own was not read) and every line after
    it passed over as the failed attempt's, so the retry, late, was never said done: nothing
    at all of it without its stdout lines, "still running" with them. cuzk writes an attempt's
    lines in one order on one stream, so a SYNTH_START after the failed attempt's later lines
    is a new attempt's, and a failed attempt writes no GPU_END. Its begin (queue) on the
    offsets is not known: it is said by the least its total can be, late past its deadline, a
    `>` bound in the report, as any PoSt whose begin was not read; in one file, or its stdout
    and stderr read apart."""
    tracing = [x for x in _FAILED_ATTEMPT if not x.startswith("TIMELINE")]
    timeline = [x for x in _FAILED_ATTEMPT if x.startswith("TIMELINE")]
    one_file = [*_FAILED_ATTEMPT, _RETRY_ENQUEUED, *_RETRY, _RETRY_DONE]
    apart = [*tracing, _RETRY_ENQUEUED, _RETRY_DONE, *timeline, *_RETRY]
    without_its_stdout = [*_FAILED_ATTEMPT, *_RETRY]  # nothing at all was said of the retry
    for lines in (one_file, apart, without_its_stdout):
        said = _proof_events(_parsed_at_once("\n".join(lines)), _RETRIED)
        # Its stdout read first, the retry was in its queue 32 s by its lines' own time, and
        # said late then; still running: once done, said done.
        done = [e for e in said if e.proof is not None and e.proof.done]
        assert [e.proof.verdict for e in done if e.proof is not None] == ["failed", "late"]
        retry = done[-1]
        p = retry.proof
        assert p is not None and p.total_s is None and p.queue_s is None
        assert p.total_at_least_s == pytest.approx(32.0, abs=0.01)
        assert p.synth_s == pytest.approx(31.0) and p.gpu_s == pytest.approx(0.8)
        assert retry.level == "error" and "more than 32.0 s of its 30 s deadline" in retry.message
        [row] = [x for x in proof_lines([retry]) if _RETRIED in x]
        assert " >32.0 " in row and row.endswith(" late")


def test_a_retry_read_with_none_of_its_failed_attempts_lines_is_timed_by_its_own() -> None:
    """The log's part read begins after the failed attempt's TIMELINE lines (its failure the
    first line of it read): the retry's lines, SYNTH_START to GPU_START, were taken for the
    failed attempt's and passed over, and so was its GPU_END: nothing of the retry, late, was
    said (or "still running" from its `job enqueued` line). A failed attempt writes no
    GPU_END, and lines that go on to one without a second SYNTH_START are one attempt's: the
    retry's own, timed by them; alone or with its stdout lines read first."""
    failure = [x for x in _FAILED_ATTEMPT if not x.startswith("TIMELINE")]
    for lines in ([*failure, *_RETRY], [*failure, _RETRY_ENQUEUED, _RETRY_DONE, *_RETRY]):
        said = _proof_events(_parsed_at_once("\n".join(lines)), _RETRIED)
        done = [e for e in said if e.proof is not None and e.proof.done]
        assert [e.proof.verdict for e in done if e.proof is not None] == ["failed", "late"]
        p = done[-1].proof
        assert p is not None and p.total_at_least_s == pytest.approx(32.0, abs=0.01)
        assert p.synth_s == pytest.approx(31.0) and p.gpu_s == pytest.approx(0.8)


def _parsed_apart(stdout: list[str], stderr: list[str]) -> list[ProverEvent]:
    """What `gapwatch parse --timeline cuzk.out cuzk.err` feeds the watcher: cuzk's stdout and
    stderr as two files, the stderr (no time of its own) read after the whole stdout
    (`logs.files.read_order`), each line on its own file's stream."""
    parser, watch = LogParser(offline=True), CuzkWatch(arrival_timed=False)
    out: list[ProverEvent] = []
    for stream, lines, apart in (("cuzk.out", stdout, False), ("cuzk.err", stderr, True)):
        for i, line in enumerate(lines):
            for e in parser.parse_line(line, stream, i, 1_800_000_000.0, apart=apart):
                out += watch.feed(e)
    return out + watch.finish()


#: A WinningPoSt of 3.0 s (its stdout: `job enqueued`, its completion line; its stderr: its
#: TIMELINE lines, engine.rs:2665-3196), then an hour of cuzk's stdout.
_QUICK = "winpost-1000-77777777"
_QUICK_OUT = [
    "2026-05-12T21:01:00.000000Z  INFO cuzk_core::scheduler: job enqueued "
    f"job_id={_QUICK} proof_kind=winning-post priority=Critical queue_position=0",
    "2026-05-12T21:01:03.001000Z  INFO cuzk_core::engine: proof completed successfully "
    "(pipeline) proof_len=192 total_ms=3001 queue_ms=0 synth_ms=2000 gpu_ms=800",
    "2026-05-12T22:01:00.000000Z  INFO cuzk_core::engine: pinned pool checkout"]
_QUICK_ERR = [f"TIMELINE,59970,SYNTH_START,{_QUICK},kind=winning-post",
              f"TIMELINE,61970,SYNTH_END,{_QUICK},synth_ms=2000",
              f"TIMELINE,61970,GPU_QUEUE,{_QUICK},monolithic",
              f"TIMELINE,62170,GPU_PICKUP,{_QUICK},worker=0",
              f"TIMELINE,62170,GPU_START,{_QUICK},worker=0",
              f"TIMELINE,62970,GPU_END,{_QUICK},worker=0,gpu_ms=800"]


def test_a_post_whose_stderr_is_read_after_an_hour_of_stdout_is_not_timed_never_late() -> None:
    """cuzk's stdout and stderr given as two files, its start line not among them: a PoSt's
    TIMELINE lines (stderr, timed by their offsets) are read after the whole stdout, whose end
    says nothing of when they were written. The least its total could be was counted from its
    `job enqueued` to the stdout's end: a WinningPoSt of 3.0 s was "more than 3600.0 s of its
    30 s deadline", LATE (an error, `--on-event` run). Its offsets say 3.0 s; what joins them
    to its arrival is not known: not timed."""
    [done] = [e for e in _proof_events(_parsed_apart(_QUICK_OUT, _QUICK_ERR), _QUICK)
              if e.proof is not None and e.proof.done]
    p = done.proof
    assert p is not None and p.verdict == "unknown" and done.level == "warning"
    assert p.total_s is None and p.total_at_least_s == pytest.approx(3.0, abs=0.01)
    assert p.synth_s == pytest.approx(2.0, abs=0.01) and p.gpu_s == pytest.approx(0.8, abs=0.01)
    assert "on time or late is not known" in done.message
    # In one file (stdout and stderr as cuzk wrote them, `2>&1`), a line is written after the
    # lines before it: its TIMELINE lines read after an hour of its stdout were written an
    # hour after its arrival, and that is the least it took.
    [one_file] = [e.proof for e in _proof_events(_parsed_at_once("\n".join(_QUICK_OUT
                                                                           + _QUICK_ERR)),
                                                 _QUICK) if e.proof is not None and e.proof.done]
    assert one_file is not None and one_file.verdict == "late"
    assert one_file.total_at_least_s == pytest.approx(3600.0, abs=0.01)


def test_gapwatch_parse_of_cuzks_stdout_and_stderr_says_a_quick_post_not_timed_never_late(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command itself, given the two files: `>3.0`, not timed; it said `>3600.0 ... late`."""
    from gapwatch.cli import main

    out, err = tmp_path / "cuzk.out", tmp_path / "cuzk.err"
    out.write_text("\n".join(_QUICK_OUT) + "\n")
    err.write_text("\n".join(_QUICK_ERR) + "\n")
    assert main(["parse", "--timeline", str(out), str(err)]) == 0
    said = capsys.readouterr().out
    assert "(0 late, 0 at risk, 1 not timed" in said
    [row] = [x for x in said.splitlines() if _QUICK in x and "winning-post" in x
             and x.startswith("    ")]
    assert ">3.0" in row and row.endswith(" unknown")


def _post_and_held_at_its_queue(text: str, job: str) -> tuple[ProverEvent, list[int] | None]:
    """`job`'s last word from the watcher, and the workers the gaps' rule (`PipelineFacts`,
    fed the same lines) held when its GPU_QUEUE was read."""
    from gapwatch.cuzk.pipeline import PipelineFacts

    parser, watch, facts = LogParser(offline=True), CuzkWatch(), PipelineFacts()
    said: list[ProverEvent] = []
    held_at_queue: list[int] | None = None
    for i, line in enumerate(text.splitlines()):
        for e in parser.parse_line(line, "x", i, 0.0):
            facts.feed(e)
            said += watch.feed(e)
            if e.name == "GPU_QUEUE" and e.job_id == job:
                held_at_queue = [h.worker for h in facts.holds.held(0)]
    [ev] = [e for e in said + watch.finish() if e.proof is not None and e.job_id == job]
    return ev, held_at_queue


def test_a_post_waits_behind_the_workers_the_gaps_call_held_never_one_they_call_free() -> None:
    """Worker 0's `prove_start returned` (engine.rs:3148): it loops back to the GPU queue and
    pops the next item (3023); partition 3's finalizer runs on apart to its GPU_END (3196). A
    WinningPoSt queued between the two was said to wait "behind worker 0: porep-1000-5
    partition 3" (the watcher held a worker to its GPU_END) while the gaps' rule, fed the same
    lines, called worker 0 free. One rule now (`gpu_workers.WorkerHolds`): it waited behind
    worker 1, which held partition 4 until the PoSt's pickup, and only it."""
    job = "winpost-1000-5e6f7a8b"
    span = ("INFO gpu_worker{{worker_id={w} gpu=0 job_id=porep-1000-5 proof_kind=porep-c2 "
            "batch_size=1 partition=Some({p})}}: cuzk_core::engine: GPU_TIMING prove_start "
            "returned worker_id={w} partition=Some({p}) total_pre_prove_ms=2000 "
            "spawn_blocking_wall_ms=2000")
    text = (_START
            + "TIMELINE,9970,GPU_PICKUP,porep-1000-5,worker=0,partition=3\n"
            "TIMELINE,9970,GPU_PICKUP,porep-1000-5,worker=1,partition=4\n"
            "TIMELINE,9980,GPU_START,porep-1000-5,worker=0,partition=3\n"
            f"2026-05-12T16:00:12.000000Z  {span.format(w=0, p=3)}\n"
            f"TIMELINE,11970,SYNTH_START,{job},kind=winning-post\n"
            f"TIMELINE,12470,SYNTH_END,{job},synth_ms=500\n"
            f"TIMELINE,12470,GPU_QUEUE,{job},monolithic\n"
            "TIMELINE,12970,GPU_END,porep-1000-5,worker=0,partition=3,gpu_ms=3000\n"
            "TIMELINE,12980,GPU_START,porep-1000-5,worker=1,partition=4\n"
            f"2026-05-12T16:00:15.000000Z  {span.format(w=1, p=4)}\n"
            f"TIMELINE,14970,GPU_PICKUP,{job},worker=1\n"
            f"TIMELINE,14980,GPU_START,{job},worker=1\n"
            f"TIMELINE,15970,GPU_END,{job},worker=1,gpu_ms=1000\n")
    ev, held_at_queue = _post_and_held_at_its_queue(text, job)
    assert held_at_queue == [1]
    assert ev.proof is not None
    assert ev.proof.waited_behind == ["worker 1: porep-1000-5 partition 4"]


def test_a_partition_failed_in_its_workers_span_frees_the_worker_for_the_gaps_and_the_post(
) -> None:
    """`CUZK_DISABLE_SPLIT_PROVE=1`: partition 3's synchronous prove failed, its result line
    `partition GPU proving failed` written in its GPU worker's span (engine.rs:656 via 3105), no
    GPU_END. The watcher let worker 0 go there; the gaps' rule held it to its next pickup, one
    worker busy for it while the PoSt queued after said none."""
    job = "winpost-1000-9a8b7c6d"
    text = (_START
            + "TIMELINE,9970,GPU_PICKUP,porep-1000-5,worker=0,partition=3\n"
            "2026-05-12T16:00:12.000000Z ERROR gpu_worker{worker_id=0 gpu=0 job_id=porep-1000-5 "
            "proof_kind=porep-c2 batch_size=1 partition=Some(3)}: cuzk_core::engine: partition "
            "GPU proving failed job_id=porep-1000-5 partition=3 error=boom\n"
            f"TIMELINE,11970,SYNTH_START,{job},kind=winning-post\n"
            f"TIMELINE,12470,SYNTH_END,{job},synth_ms=500\n"
            f"TIMELINE,12470,GPU_QUEUE,{job},monolithic\n"
            f"TIMELINE,12970,GPU_PICKUP,{job},worker=0\n"
            f"TIMELINE,12980,GPU_START,{job},worker=0\n"
            f"TIMELINE,13970,GPU_END,{job},worker=0,gpu_ms=1000\n")
    ev, held_at_queue = _post_and_held_at_its_queue(text, job)
    assert held_at_queue == []
    assert ev.proof is not None and ev.proof.waited_behind == []
