"""What each GPU worker holds is kept once a process (`gapwatch.cuzk.gpu_workers.WorkerHolds`):
the PoSt's "waited behind" (`gapwatch.cuzk.post.PostTracker`) reads the keeper the gaps' rule
(`gapwatch.cuzk.pipeline.PipelineFacts`) feeds, where both are fed the same records (the live
session, the report). Each fed its own copy of the same lines, the watcher cost ~6 % more an
event (docs/benchmarks.md); what the PoSt says is the same either way."""

from __future__ import annotations

from pathlib import Path

import pytest
from sim_recordings import record_sim, report_of

from evaluation.simulate import simulate
from gapwatch.core.models import LogEvent, ProverEvent
from gapwatch.cuzk import gpu_workers
from gapwatch.cuzk.gpu_workers import WorkerHolds
from gapwatch.cuzk.pipeline import PipelineFacts
from gapwatch.cuzk.watch import CuzkWatch
from gapwatch.logs.parse import LogParser

DATA = Path(__file__).parent / "data" / "cuzk-upstream"
#: The scenario logs with PoSt in them: behind partitions, late, failed, in flight, the
#: pipeline off (the monolithic workers' jobs), a restart (what the workers held dies with it).
LOGS = ("cuzk.log", "post-behind-partitions.log", "post-late.log", "post-failed.log",
        "post-failed-pipeline-off.log", "post-in-flight.log", "post-pipeline-off.log",
        "restart.log", "lost-job.log", "panic.log")
#: Those with a PoSt that waited behind a worker's work (a monolithic worker's job among them).
BEHIND = ("post-behind-partitions.log", "post-pipeline-off.log", "lost-job.log", "sim:post")


def _events_of(name: str) -> list[LogEvent]:
    parser = LogParser(offline=True)
    out: list[LogEvent] = []
    for i, line in enumerate((DATA / name).read_text().splitlines()):
        out += parser.parse_line(line, name, i, 1000.0 + i)
    return out + parser.flush()


def _sim_events() -> list[LogEvent]:
    """The simulator's `post` scenario, 10 minutes: PoSt behind partitions, panics, restarts."""
    sim = simulate("post", duration_s=600, period_ms=100.0)
    parser = LogParser(offline=True)
    return [e for stream, text in sim.log_lines for e in parser.parse_line(text, stream)] + \
        parser.flush()


def _own(events: list[LogEvent]) -> list[ProverEvent]:
    """The watcher alone (`gapwatch parse`): each PoSt keeps its own holds."""
    watch = CuzkWatch()
    return [e for ev in events for e in watch.feed(ev)] + watch.finish()


def _beside_the_gaps(events: list[LogEvent], watcher_first: bool) -> list[ProverEvent]:
    """The watcher on the keeper of a `PipelineFacts` fed the same events: after the watcher,
    as the live session and a recording's own lines feed them (`Session.on_record`), or before
    it, as a report's `--log` lines do (`gapwatch.offline.detect._feed_extra`)."""
    facts = PipelineFacts()
    watch = CuzkWatch(holds=facts.holds)
    said: list[ProverEvent] = []
    for ev in events:
        if not watcher_first:
            facts.feed(ev)
        said += watch.feed(ev)
        if watcher_first:
            facts.feed(ev)
    return said + watch.finish()


@pytest.mark.parametrize("watcher_first", [True, False], ids=["session", "report-log"])
@pytest.mark.parametrize("name", [*LOGS, "sim:post"])
def test_a_post_reading_the_gaps_keeper_says_what_it_said_with_its_own(
        name: str, watcher_first: bool) -> None:
    events = _sim_events() if name == "sim:post" else _events_of(name)
    own = _own(events)
    if name in BEHIND:  # a PoSt said to wait behind a worker's work
        assert [e for e in own if e.proof is not None and e.proof.waited_behind]
    assert own and _beside_the_gaps(events, watcher_first) == own


T = "2026-05-12T16:00:"


def _start(at: str, listen: str, gpu: int) -> list[str]:
    """A daemon's start lines (as tests/test_two_daemons.py writes them): its own listen
    address, two workers on `gpu`."""
    return [
        f"{T}{at}.000000Z  INFO cuzk_daemon: cuzk-daemon starting",
        f"{T}{at}.001000Z  INFO cuzk_daemon: configuration loaded listen={listen}",
        f"{T}{at}.030000Z  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true",
        f"{T}{at}.031000Z  INFO cuzk_core::engine: initializing GPU workers num_gpus=1 "
        f"gpu_workers_per_device=2 total_workers=2 gpus=[{gpu}]",
    ]


def test_a_post_waits_behind_what_the_gaps_keeper_says_of_its_own_daemon_only() -> None:
    """Two daemons (a PoRep cuzk, a PoSt-only cuzk on its own GPU, `report --log porep.log
    --log post.log`): the one keeper holds both daemons' workers; the PoSt daemon's
    WinningPoSt, queued while the PoRep daemon's two workers held partitions, waited behind
    none of them (its watcher reads its own daemon's, `CuzkWatch`'s index of it)."""
    job = "winpost-1001-aa"
    porep = [*_start("00", "127.0.0.1:9820", 0),
             "TIMELINE,10000,GPU_PICKUP,porep-1000-77,worker=0,partition=0",
             "TIMELINE,10000,GPU_PICKUP,porep-1000-77,worker=1,partition=1"]
    post = [*_start("21", "127.0.0.1:9830", 1),
            f"{T}30.000000Z  INFO cuzk_core::scheduler: job enqueued job_id={job} "
            "proof_kind=winning-post priority=Critical queue_position=0",
            f"TIMELINE,9100,SYNTH_START,{job},kind=winning-post",
            f"TIMELINE,11200,SYNTH_END,{job},synth_ms=2100",
            f"TIMELINE,11200,GPU_QUEUE,{job},monolithic",
            f"TIMELINE,11210,GPU_PICKUP,{job},worker=0",
            f"TIMELINE,11210,GPU_START,{job},worker=0",
            f"TIMELINE,12010,GPU_END,{job},worker=0,gpu_ms=800"]
    parser = LogParser(offline=True)
    events = [e for path, lines in (("porep.log", porep), ("post.log", post))
              for i, line in enumerate(lines) for e in parser.parse_line(line, path, i, 0.0)]
    events.sort(key=lambda e: e.t_wall_s)
    facts = PipelineFacts()
    watch = CuzkWatch(holds=facts.holds)
    said: list[ProverEvent] = []
    for line in events:
        said += watch.feed(line)
        facts.feed(line)
    said += watch.finish()
    assert facts.restarts.router.several
    assert sorted(h.worker for h in facts.holds.held(0)) == [0, 1]  # the PoRep daemon's
    [ev] = [e for e in said if e.proof is not None and e.job_id == job]
    assert ev.proof is not None and ev.proof.done and ev.proof.waited_behind == []
    assert _own(events) == said


def test_a_recording_and_its_report_feed_one_keeper_of_the_workers_holds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`gapwatch record` (the live session) and `gapwatch report` of it: every event naming a
    worker fed one `WorkerHolds`, the gaps', which the PoSt reads; the PoSt fed a second copy
    of its own the same lines."""
    fed: set[int] = set()
    feed = WorkerHolds.feed

    def counted(self: WorkerHolds, ev: LogEvent, daemon: int) -> None:
        fed.add(id(self))
        feed(self, ev, daemon)

    monkeypatch.setattr(gpu_workers.WorkerHolds, "feed", counted)
    recording, _ = record_sim(tmp_path, "post", 120)
    assert len(fed) == 1
    fed.clear()
    assert "WinningPoSt" in report_of(recording)
    assert len(fed) == 1


def test_a_restart_shown_by_the_offsets_alone_ends_what_the_old_run_held_for_the_post() -> None:
    """cuzk's stderr alone (its start lines are on stdout): a restart shows only by the
    TIMELINE offsets beginning again, which the PoSt's watcher reads and `PipelineFacts` does
    not. Worker 0's partition died with the old run: the new run's WinningPoSt waited behind
    nothing, on the gaps' keeper as on its own (the watcher tells the keeper of that restart)."""
    job = "winpost-1000-4d5e6f70"
    text = ("TIMELINE,600000,GPU_PICKUP,porep-1000-5,worker=0,partition=3\n"
            "TIMELINE,600010,GPU_START,porep-1000-5,worker=0,partition=3\n"
            f"TIMELINE,2000,SYNTH_START,{job},kind=winning-post\n"
            f"TIMELINE,2500,SYNTH_END,{job},synth_ms=500\n"
            f"TIMELINE,2500,GPU_QUEUE,{job},monolithic\n"
            f"TIMELINE,2600,GPU_PICKUP,{job},worker=1\n"
            f"TIMELINE,2610,GPU_START,{job},worker=1\n"
            f"TIMELINE,3610,GPU_END,{job},worker=1,gpu_ms=1000\n")
    parser = LogParser(offline=True)
    events = [e for i, line in enumerate(text.splitlines())
              for e in parser.parse_line(line, "stderr.log", i, 1000.0 + i)] + parser.flush()
    own = _own(events)
    [ev] = [e for e in own if e.proof is not None and e.job_id == job]
    assert ev.proof is not None and ev.proof.done and ev.proof.waited_behind == []
    for watcher_first in (True, False):
        assert _beside_the_gaps(events, watcher_first) == own
