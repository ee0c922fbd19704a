"""Partitions synthesised and queued for the GPU while it idled are no synthesis shortfall (r1
F6): the prover's facts at the gap's time say what the gap waited on, by the rule of a partition
that waited through a gap in the GPU queue (a dispatch stall where a GPU worker was free to take
it, inside the workers where they all held one), whether its GPU_PICKUP came after the gap or
never. A gap whose queued work no worker took before the recording ended says so, and when it
ended, in its hint, the advice and the replay the dashboard shows alike.

The committed H200 pageable run: its last gap (10:04:13.956, 0.96 s) had four partitions queued
for the GPU at its start (porep-1000-1 partitions 8, 9 and porep-1000-2 partitions 0, 1; its
partition 4, queued at 10:04:01.600 and never proved, is no longer taken as queued once its
partition 5 was picked up at 10:04:07.406: cuzk's queue pops the least (job_seq, partition) first,
so in cuzk it was not in the queue then, its pickup line lost; the load generator's own queue
is first come, first served, and let it wait); worker 1's prove_start returned
at 10:04:14.199 and no worker picked anything up again (the load generator stopped: truth.json
says stopped_by "duration"); the log's last line is at 10:04:15.730, the recording's last sample
at 10:04:18.245. Its hint said "synthesis did not keep up with the GPU?", its advice "the GPU
waited on the host (no cause known)", the dashboard of the H100 run of the same scenario "a
dispatch stall inside the prover (... 5 in synth_done)".
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import msgspec.structs
from cuzk_fakes import cuzk_doc
from parsed_logs import events_of_lines
from sim_recordings import report_of
from test_gap_prover_facts import _detected
from test_paths_advice import _wall

from gapwatch.config import build_config
from gapwatch.core.evidence_types import ProverGapFacts
from gapwatch.core.models import Gap, LogEvent
from gapwatch.cuzk.advice import advice_lines, advise
from gapwatch.cuzk.pipeline import PipelineFacts
from gapwatch.cuzk.prover import CuzkGap, view_of
from gapwatch.cuzk.status import parse_status
from gapwatch.engine.runtime import build_runtime
from gapwatch.sources.files import read_any

DATA = Path(__file__).parent / "data" / "h200-e2e" / "pageable"
REC = DATA / "rec.jsonl.gz"
LOGS = ("--log", str(DATA / "stdout.log"), "--log", str(DATA / "stderr.log"))
#: The last gap, as the report detects it again from the samples.
START_S, END_S = 1796033053.9564822, 1796033054.9157364
#: The recording's last sample.
RECORDING_END_S = 1796033058.245781
#: What the gap's prover phrase says, its cause's words and their fact first.
DISPATCH = ("a dispatch stall inside the prover (synthesised partitions waiting while a worker "
            "is idle; 4 partition(s) queued, none picked up")
AT_END = " by the recording's end at 10:04:18.245)"


@cache
def _log_events() -> tuple[LogEvent, ...]:
    """The recording's own log lines (made with `record --log`), in its order."""
    return tuple(r for r in read_any(REC).records if isinstance(r, LogEvent))


def test_partitions_queued_through_a_host_stall_with_a_worker_free_are_a_dispatch_stall() -> None:
    """As the gap closes (the lines up to its end read, as live): the four partitions queued
    at its start, none picked up by its end, a worker free for most of it."""
    facts = PipelineFacts()
    for ev in _log_events():
        if ev.t_wall_s <= END_S:
            facts.feed(ev)
    view = facts.log_view(0, START_S, END_S, "host_stall")
    assert view.cause == "dispatch_stall"
    assert view.detail == "4 partition(s) queued, none picked up"
    assert view.worker_free
    assert view.evidence[0].startswith(
        "partition 8 of porep-1000-1 was queued for the GPU (GPU_QUEUE) at 10:04:08.969, before "
        "the gap, and not picked up (no GPU_PICKUP of it read) by its end, 3 more queued with "
        "it"), view.evidence
    assert view.evidence[1].startswith("a GPU worker of GPU 0 was free for 0.7 s of the 1.0 s "
                                       "gap"), view.evidence
    assert not any("recording" in e for e in view.evidence)
    # The whole log read and the data ended: none of them was ever picked up.
    for ev in _log_events():
        if ev.t_wall_s > END_S:
            facts.feed(ev)
    facts.end(RECORDING_END_S)
    ended = facts.log_view(0, START_S, END_S, "host_stall")
    assert (ended.cause, ended.detail) == (
        "dispatch_stall", "4 partition(s) queued, none picked up by the recording's end at "
        "10:04:18.245")
    assert ended.evidence[-1].startswith(
        "none of these 4 partition(s) was picked up before the recording ended at 10:04:18.245 "
        "(the log's last line at 10:04:15.730): the prover took no more work"), ended.evidence
    assert ended.facts.queued_at_end


def test_the_last_gap_with_work_queued_says_so_and_that_the_recording_ends_there() -> None:
    """The report's hint, its JSON, its advice and the replay the dashboard shows give that gap
    one cause in one set of words: the partitions were synthesised and queued (no synthesis
    shortfall), a worker free, none taken before the recording ended."""
    text = report_of(REC, *LOGS)
    [line] = [row for row in text.splitlines() if "10:04:13.956" in row and "host_stall" in row]
    assert f"prover log: {DISPATCH}{AT_END}" in line, line
    assert "synthesis did not keep up" not in text
    doc = json.loads(report_of(REC, *LOGS, "--json"))
    [gap] = [g for g in doc["gaps"] if g["kind"] == "host_stall"]
    assert gap["prover_cause"] == "dispatch_stall"
    assert any("picked up before the recording ended at 10:04:18.245" in e
               for e in gap["prover_evidence"]), gap["prover_evidence"]
    [note] = [n for n in doc["no_setting"] if n["stall"] == "dispatch_stall"]
    assert "at the recording's end" in note["why"] and "no cause known" not in text
    # The dashboard's path: a replay of the recording (its own log lines) to its end.
    rt = build_runtime(build_config({}), f"replay:{REC}", speed=0)
    rt.start()
    try:
        assert rt.wait(120)
    finally:
        rt.stop()
    snap = rt.store.snapshot()
    [shown] = [g for g in snap.gaps if isinstance(g, Gap) and g.kind == "host_stall"
               and not g.retracted]
    assert shown.prover_cause == "dispatch_stall"
    assert f"prover log: {DISPATCH}{AT_END}" in shown.hint, shown.hint
    report = advise([g for g in snap.gaps if not g.is_open], view_of(snap.pipeline))
    [said] = [n for n in report.no_setting if n.stall == "dispatch_stall"]
    assert said.why == note["why"]


def test_status_snapshots_of_the_same_gap_say_the_same_cause_and_the_recordings_end() -> None:
    """The live dashboard of the H100 run polled /status: "a dispatch stall inside the prover
    (synthesised partitions waiting while a worker is idle; 5 in synth_done)". With its log
    read to the recording's end, the gap keeps that cause and figure and says the end too."""
    facts = PipelineFacts()
    for ev in _log_events():
        facts.feed(ev)
    doc = cuzk_doc(synth_done=5, pending=9, workers=("idle", "idle"), job="porep-1000-2")
    acc = CuzkGap(0, START_S, facts)
    for t in (START_S + 0.3, START_S + 0.8):
        status = parse_status(json.dumps(doc).encode(), "127.0.0.1:9821", int(t * 1e9), t, 1.0)
        facts.feed_status(status)
        acc.add_status(status)
    live = acc.view(END_S, START_S, "host_stall", END_S)
    assert live.cause == "dispatch_stall"
    assert live.words == ("prover status: a dispatch stall inside the prover (synthesised "
                          "partitions waiting while a worker is idle; 5 in synth_done)")
    facts.end(RECORDING_END_S)
    ended = acc.view(END_S, START_S, "host_stall", END_S)
    assert ended.words == (
        "prover status: a dispatch stall inside the prover (synthesised partitions waiting "
        "while a worker is idle; 5 in synth_done; 4 partition(s) queued, none picked up by the "
        "recording's end at 10:04:18.245)")
    assert isinstance(ended.facts, ProverGapFacts) and ended.facts.queued_at_end


def test_a_window_that_ends_before_the_recording_says_nothing_of_its_end() -> None:
    """A report or replay of a window (`--until`) read the data to the window's end, not the
    recording's: what came after it is not known, so the gap says only what the lines read
    show (its partitions not picked up by its end), never that the recording ended there."""
    text = report_of(REC, *LOGS, "--until", "10:04:16")
    [line] = [row for row in text.splitlines() if "10:04:13.956" in row and "host_stall" in row]
    assert f"prover log: {DISPATCH})" in line, line
    assert "recording's end" not in text and "recording ended" not in text
    from gapwatch.sources.files import header_of
    from gapwatch.sources.time_window import moment, resolve

    window = resolve(None, moment("10:04:16"), header_of(REC).started_wall_s, None)
    rt = build_runtime(build_config({}), f"replay:{REC}", speed=0, window=window)
    rt.start()
    try:
        assert rt.wait(120)
    finally:
        rt.stop()
    [shown] = [g for g in rt.store.snapshot().gaps if g.kind == "host_stall" and not g.retracted]
    assert shown.hint.startswith(f"prover log: {DISPATCH});"), shown.hint


def test_work_queued_with_no_worker_holds_read_is_never_said_to_have_had_a_worker_free() -> None:
    """No GPU_PICKUP of any worker and no `initializing GPU workers` line read: the queue wait
    alone makes the gap a dispatch stall, but nothing showed a worker free. The hint said
    "synthesised partitions waiting while a worker is idle", the advice "a GPU worker was free"
    (final_read3 review, item 5): now they say the work was queued and not taken, no worker's
    holds read."""
    t0 = _wall("14:00:00")
    events = events_of_lines([
        "2026-05-12T14:00:00.000000Z  INFO cuzk_core::engine: starting cuzk engine",
        "TIMELINE,1000,GPU_QUEUE,porep-1000-1,partition=3"])
    gaps, prover = _detected(events, t0, t0 + 8.0, (t0 + 5.0, t0 + 6.0))
    [gap] = gaps
    assert gap.prover_cause == "dispatch_stall"
    assert isinstance(gap.prover_facts, ProverGapFacts) and gap.prover_facts.queued_at_end
    assert "worker is idle" not in gap.hint and "worker free" not in gap.hint, gap.hint
    assert "no GPU worker's holds read" in gap.hint, gap.hint
    [note] = advise([gap], view_of(prover.facts())).no_setting
    assert "worker was free" not in note.why, note.why
    assert "no GPU worker's holds read" in note.why, note.why
    text = "\n".join(advice_lines(advise([gap], view_of(prover.facts()))))
    assert "worker is idle" not in text and "worker was free" not in text, text


_START = "2026-05-12T14:00:00.000000Z  INFO cuzk_core::engine: starting cuzk engine"
_INIT = ("2026-05-12T14:00:00.001000Z  INFO cuzk_core::engine: initializing GPU workers "
         "num_gpus=1 gpu_workers_per_device=2 total_workers=2 gpus=[0]")
_QUEUED = "TIMELINE,1000,GPU_QUEUE,porep-1000-1,partition=3"
#: Words that say a GPU worker was free or idle.
_FREE_WORDS = ("worker is idle", "worker showed idle", "worker was free", "free to take it",
               "was free for")


def _said_free(text: str) -> list[str]:
    return [w for w in _FREE_WORDS if w in text]


def _stall_of(lines: list[str], to_s: float) -> tuple[Gap, str]:
    """The one gap (5-6 s) of a log whose partition 3 was queued at 1 s, and its advice."""
    t0 = _wall("14:00:00")
    gaps, prover = _detected(events_of_lines(lines), t0, t0 + to_s, (t0 + 5.0, t0 + 6.0))
    [gap] = gaps
    assert gap.prover_cause == "dispatch_stall"
    assert isinstance(gap.prover_facts, ProverGapFacts) and gap.prover_facts.worker_free_unshown
    return gap, "\n".join(advice_lines(advise([gap], view_of(prover.facts()))))


def test_a_dispatch_stall_picked_up_after_the_gap_with_no_holds_read_is_never_advised_idle() -> None:
    """Picked up after the gap, no worker's holds read (final_read4 review, item 1): the hint
    said whether a worker was free is not shown, the advice "a worker showed idle". Now the
    advice, like the hint, says no worker's holds read showed one free."""
    for pickup in ("TIMELINE,7000,GPU_PICKUP,porep-1000-1,worker=0,partition=3",
                   "TIMELINE,7000,GPU_PICKUP,porep-1000-1,partition=3"):
        gap, advice = _stall_of([_START, _QUEUED, pickup], 12.0)
        assert not gap.prover_facts.queued_at_end  # type: ignore[union-attr]
        assert not _said_free(gap.hint), gap.hint
        assert not _said_free(advice), advice
        assert "no GPU worker's holds read showing one free" in advice, advice


def test_a_dispatch_stall_with_holds_read_but_none_showing_a_worker_free_never_says_one() -> None:
    """The `initializing GPU workers` line read, no worker seen holding work or freed
    (final_read4 review, item 2): the hint said "while a worker is idle", the evidence "free to
    take it", the advice "no GPU worker's holds read showing one free". One rule now: none of
    them says a worker was free, picked up after the gap or never."""
    picked = "TIMELINE,7000,GPU_PICKUP,porep-1000-1,worker=0,partition=3"
    for lines, to_s in (([_START, _INIT, _QUEUED], 8.0), ([_START, _INIT, _QUEUED, picked], 12.0)):
        gap, advice = _stall_of(lines, to_s)
        assert not _said_free(gap.hint), gap.hint
        assert "no GPU worker's holds read showing one free" in gap.hint, gap.hint
        evidence = " ".join(gap.prover_evidence or [])
        assert not _said_free(evidence), evidence
        assert "fewer than 2 GPU worker(s) of GPU 0 seen holding work" in evidence, evidence
        assert not _said_free(advice), advice
        assert "no GPU worker's holds read showing one free" in advice, advice


def test_a_dispatch_stall_note_says_a_worker_showed_idle_only_of_the_gaps_that_showed_one() -> None:
    """Of a stall's gaps, some showed a worker free and some did not (`worker_free_unshown`
    counted over every gap, not only those at the recording's end): the note says a worker
    showed idle only of the first, and with the others at the recording's end, says neither."""
    t0 = _wall("14:00:00")
    picked = "TIMELINE,7000,GPU_PICKUP,porep-1000-1,partition=3"
    unshown, _ = _stall_of([_START, _QUEUED, picked], 12.0)
    at_end, _ = _stall_of([_START, _QUEUED], 8.0)
    facts = unshown.prover_facts
    assert isinstance(facts, ProverGapFacts)
    shown = msgspec.structs.replace(unshown, gap_id=2, start_s=unshown.start_s + 1.0,
                                    prover_facts=msgspec.structs.replace(
                                        facts, worker_free_unshown=False))
    _, prover = _detected(events_of_lines([_START, _QUEUED, picked]), t0, t0 + 12.0,
                          (t0 + 5.0, t0 + 6.0))
    [mixed] = advise([unshown, shown], view_of(prover.facts())).no_setting
    assert ("a worker showed idle while synthesised partitions waited in 1 gap(s) (in 1 more, "
            "they waited in the GPU queue, no GPU worker's holds read showing one free)"
            ) in mixed.why, mixed.why
    last = msgspec.structs.replace(at_end, gap_id=3, start_s=unshown.start_s + 2.0)
    [ended] = advise([unshown, last], view_of(prover.facts())).no_setting
    assert not _said_free(ended.why), ended.why
    assert "1 of these 2 gap(s) at the recording's end" in ended.why, ended.why
