"""The facts of a gap the advice reads are typed (`Gap.prover_facts`, `ProverGapFacts`), set by
cuzk's prover where it decides each one beside its words: the advice never reads them back out
of the evidence's prose, where a log line quoted into it (a job id, an error) could say anything.
A gap without them (made before they were typed) has none: its words are not read for them. The
JSON documents are unchanged."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import msgspec
import pytest
from parsed_logs import events_of_lines, fed
from test_paths_advice import (
    ENGINE,
    FOUR_WORKERS,
    LAST_OF_JOB_7,
    OVER_BUDGET,
    PIPELINE_OFF_LOG,
    _gap,
    _next_job,
    _wall,
    held_by_the_collector_1_s,
    line,
    read,
)

from gapwatch.config import Config
from gapwatch.core.codec import decode_record, encode_line, gap_json
from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import GapDetector
from gapwatch.core.evidence_types import ProverGapFacts
from gapwatch.core.models import Gap, GpuInfo, GpuSample, LogEvent, SessionHeader
from gapwatch.cuzk.advice import CITED, advise, facts_of
from gapwatch.cuzk.paths import PathsSeen, path_rule
from gapwatch.cuzk.pipeline import PipelineFacts, PipelineView
from gapwatch.cuzk.prover import CuzkProver, view_of
from gapwatch.offline.report import build_report, to_json
from gapwatch.offline.report_text import format_text
from gapwatch.sinks.recorder import write_recording


def _samples(from_s: float, to_s: float, idle: tuple[float, float]) -> list[GpuSample]:
    """GPU 0 busy every 0.1 s over [from_s, to_s) but idle over `idle`, its PCIe quiet then."""
    out = []
    for i in range(round((to_s - from_s) * 10)):
        t = from_s + i * 0.1
        busy = not idle[0] <= t < idle[1]
        out.append(GpuSample(0, int(t * 1e9), t, 100_000_000, 95.0 if busy else 0.0,
                             99.0 if busy else 0.0, 30e9 if busy else 1e6, 1e6))
    return out


def _detected(events: Iterable[LogEvent], from_s: float, to_s: float,
              idle: tuple[float, float]) -> tuple[list[Gap], CuzkProver]:
    """The closed gaps of GPU 0 (idle over `idle`), cuzk's log `events` fed to the detector as
    they come, as a session or a report feeds it; and its prover."""
    prover = CuzkProver()
    det = GapDetector(DetectorConfig(), [GpuInfo(index=0, link_bytes_per_s=63e9)], period_s=0.1,
                      live=False, prover=prover)
    fed = sorted(events, key=lambda e: e.t_wall_s)
    gaps: dict[int, Gap] = {}
    for sample in _samples(from_s, to_s, idle):
        while fed and fed[0].t_wall_s <= sample.t_wall_s:
            det.feed(fed.pop(0))
        gaps.update((g.gap_id, g) for g in det.feed(sample) if isinstance(g, Gap))
    gaps.update((g.gap_id, g) for g in det.finish() if isinstance(g, Gap))
    return [g for g in gaps.values() if g.end_s is not None and not g.retracted], prover


def _empty_pipeline_gap(job: str, *extra: str) -> tuple[Gap, CuzkProver]:
    """GPU 0's gap from 14:00:10 (job 7's last partition proved) to 14:00:12.4, the next
    request, `job`, enqueued at 10.3 and its first partition synthesised at 12.3: an empty
    pipeline's gap, through the detector."""
    t0 = _wall("14:00:00")
    events = events_of_lines([ENGINE, FOUR_WORKERS, *extra, *LAST_OF_JOB_7,
                              *_next_job(job, 10.3)])
    gaps, prover = _detected(events, t0 + 5.0, t0 + 15.0, (t0 + 10.0, t0 + 12.4))
    [gap] = gaps
    assert gap.prover_cause == "empty_pipeline"
    return gap, prover


def test_a_job_id_saying_in_the_batch_collector_names_no_batch_wait() -> None:
    """A request whose job id says "in the batch collector" (quoted into the gap's evidence,
    its 'job enqueued' line): the advice read those words as cuzk's batch collector holding
    the request, and named `[scheduler] max_batch_wait_ms` with max_batch_size 1 and nothing
    held. What the advice reads is the typed fact the prover decided: nothing was held."""
    gap, prover = _empty_pipeline_gap('"porep-1000-8 in the batch collector"')
    assert any("job_id=porep-1000-8 in the batch collector" in e for e in gap.prover_evidence)
    assert gap.prover_facts == ProverGapFacts(new_work_at_once=True, said_by="log")
    report = advise([gap], view_of(prover.facts()))
    assert [a.setting for a in report.advice] == ["Curio [Cuzk] MaxPending"]
    assert not any("batch collector held" in e for e in report.advice[0].evidence)


def test_a_request_the_batch_collector_held_is_a_typed_fact_of_its_gap() -> None:
    """The real hold (max_batch_wait_ms ran out on it, 'processing batch' in span
    synth_timeout_flush) is decided where its words are written, and advised on as before."""
    job = "porep-1000-8"
    t0 = _wall("14:00:00")
    held = held_by_the_collector_1_s(job)
    gaps, prover = _detected(events_of_lines([ENGINE, FOUR_WORKERS, *held]), t0 + 5.0,
                             t0 + 16.0, (t0 + 10.0, t0 + 13.4))
    [gap] = gaps
    assert gap.prover_facts == ProverGapFacts(batch_held=True, new_work_at_once=True,
                                             said_by="log")
    settings = [a.setting for a in advise([gap], view_of(prover.facts())).advice]
    assert settings == ["Curio [Cuzk] MaxPending", "[scheduler] max_batch_wait_ms"]


def test_the_pacer_that_paced_an_empty_pipelines_work_is_a_typed_fact_of_its_gap() -> None:
    pacer = line("GPU queue target dispatch pacer enabled", 0.2, gpu_queue_target=4)
    gap, prover = _empty_pipeline_gap("porep-1000-8", pacer)
    assert gap.prover_facts == ProverGapFacts(new_work_pacer_target=4, said_by="log")
    (a,) = advise([gap], view_of(prover.facts())).advice
    assert any("gpu_queue_target=4" in e and "paces the new work" in e for e in a.evidence)


def _pipeline_off_gaps(lines: list[str]) -> tuple[list[Gap], CuzkProver]:
    """post-pipeline-off.log's GPU 0, idle from 20:00:50.5 to 20:00:53: the WinningPoSt its
    monolithic worker proves in one call from 20:00:50."""
    t0 = _wall("20:00:50")
    return _detected(events_of_lines(lines), t0 - 5.0, t0 + 6.0, (t0 + 0.5, t0 + 3.0))


def test_a_job_id_saying_in_one_call_makes_no_post_a_batch() -> None:
    """The WinningPoSt's job id says "(porep-c2) in one call": the advice read those words as a
    PoRep proved in one call beside the PoSt, and turning the pipeline on was advised for sure,
    where for a PoSt alone it closes the gap only if other work waits (a guess). The kind is
    the prover's typed fact: a WinningPoSt."""
    hostile = [x.replace("winpost-1000-5e6f7a8b", "winpost (porep-c2) in one call")
               for x in PIPELINE_OFF_LOG]
    gaps, prover = _pipeline_off_gaps(hostile)
    [gap] = gaps
    assert gap.prover_cause == "monolithic"
    assert any("(porep-c2) in one call" in e for e in gap.prover_evidence)
    assert gap.prover_facts == ProverGapFacts(monolithic_kind="winning-post", one_call=True,
                                             said_by="log")
    facts, _ = read(hostile)
    for rules in (lambda s, g: path_rule(s, g, facts), None):
        (a,) = advise([gap], view_of(prover.facts()), rules=rules).advice
        assert (a.setting, a.guess) == ("[pipeline] enabled", True)


def test_a_gap_without_typed_facts_is_read_for_none_in_its_words() -> None:
    """A gap with no `prover_facts` (an older recording's gap line, though no output advises on
    one: gaps are detected again) has none: its words, which say a WinningPoSt proved in one
    call, are not read for them. It is advised as a monolithic gap of no known job, the
    pipeline off: `[pipeline] enabled` for sure, not the PoSt's guess its typed facts give."""
    [gap], prover = _pipeline_off_gaps(PIPELINE_OFF_LOG)
    old = msgspec.structs.replace(gap, prover_facts=msgspec.UNSET)
    read_back = decode_record(encode_line(old))  # the line a recorder wrote then
    assert isinstance(read_back, Gap) and read_back.prover_facts is msgspec.UNSET
    assert any("(winning-post) in one call" in e for e in read_back.prover_evidence)
    assert facts_of(read_back) == ProverGapFacts()
    pipeline = view_of(prover.facts())
    assert [(a.setting, a.guess) for a in advise([gap], pipeline).advice] == [
        ("[pipeline] enabled", True)]
    assert [(a.setting, a.guess) for a in advise([read_back], pipeline).advice] == [
        ("[pipeline] enabled", False)]


def _said(g: Gap, pipeline: PipelineView) -> tuple[list[tuple[object, ...]], list[str]]:
    """What the advice says of `g`, less the lines of its evidence it cites (each advice's
    settings, why, guess and its own evidence; each no-setting's why)."""
    report = advise([g], pipeline)
    cited = 1 + min(CITED, len(g.prover_evidence))
    return ([(a.setting, a.change, a.why, a.guess, a.guess_why, a.evidence[cited:])
             for a in report.advice], [n.why for n in report.no_setting])


#: A budget request over the whole budget, as cuzk's log says it (the pipeline's view of it).
_OVER_BUDGET_VIEW = fed(PipelineFacts(), [ENGINE, line(OVER_BUDGET, 1.0, amount_gib=136,
                                                       total_gib=120)]).view()


@pytest.mark.parametrize(("cause", "words", "facts", "pipeline"), [
    ("empty_pipeline",
     ["cuzk held it 1.0 s in the batch collector before sending it to synthesis",
      "one synthesis's latency, the dispatch pacer on ([pipeline] max_gpu_queue_depth, "
      "gpu_queue_target=4) pacing the new work's partitions: one dispatched a tick"],
     ProverGapFacts(batch_held=True, new_work_pacer_target=4), PipelineView(synth_workers=4)),
    ("waits_on_budget",
     ["a 136 GiB budget request exceeds cuzk's 120 GiB total budget at 14:00:01: it can never "
      "be granted, so it waits until cuzk restarts"],
     ProverGapFacts(over_budget=True), _OVER_BUDGET_VIEW),
    ("monolithic",
     ["porep-c2 job porep-1000-7 synthesising during the gap (TIMELINE SYNTH_START "
      "kind=porep-c2)"],
     ProverGapFacts(monolithic_kind="porep-c2"), PipelineView()),
    ("monolithic",
     ["cuzk's monolithic worker 0 of GPU 0 was proving winpost-1000-5e6f7a8b (winning-post) "
      "in one call during the gap"],
     ProverGapFacts(monolithic_kind="winning-post", one_call=True),
     PipelineView(pipeline_enabled=False)),
], ids=["batch-held-and-paced", "over-budget", "batch-job", "post-in-one-call"])
def test_the_words_that_say_a_fact_change_no_advice_without_the_fact(
        cause: str, words: list[str], facts: ProverGapFacts, pipeline: PipelineView) -> None:
    """Evidence saying a fact in the prover's own words (a request held in the batch collector,
    paced by a pacer, over the whole budget, a batch job, a PoSt proved in one call), the fact
    not typed: the advice is what it is with no such words. The typed fact changes it."""
    bare, said_so = _gap(cause=cause), _gap(cause=cause, evidence=words)
    assert _said(said_so, pipeline) == _said(bare, pipeline)
    typed = _gap(cause=cause, evidence=words, facts=facts)
    assert _said(typed, pipeline) != _said(bare, pipeline)


def test_the_facts_travel_with_the_gap_but_not_in_its_json_documents() -> None:
    """Recorded (and spooled) with the gap, read back whole; `report --json`, snapshots and
    the Perfetto export (`gap_json`) keep the keys they had: the words say the same."""
    [gap], _ = _pipeline_off_gaps(PIPELINE_OFF_LOG)
    assert decode_record(encode_line(gap)) == gap
    assert "prover_facts" not in gap_json(gap)
    assert b'"prover_facts":{"monolithic_kind":"winning-post","one_call":true,"said_by":"log"}' \
        in encode_line(gap)


def test_the_pipeline_off_is_one_rule_for_the_paths_and_the_pipelines_facts() -> None:
    """A log followed from the middle of a proof (no start line, the pipeline off): the first
    monolithic worker line read is the proof's end. The pipeline's facts read the pipeline off
    from it; the paths' read it only from a 'processing job (monolithic)' line, and said
    nothing until the next proof's."""
    tail = [x for x in PIPELINE_OFF_LOG if "20:00:50.000000Z" in x and "monolithic_worker" in x]
    assert len(tail) == 1 and "proof completed successfully (monolithic)" in tail[0]
    paths, view = read(tail)
    assert view.pipeline_enabled is False and view.pipeline_off_by_workers
    assert (paths.pipeline_enabled, paths.pipeline_off_by_workers) == (False, True)
    seen = PathsSeen()
    for ev in events_of_lines(tail):
        seen.feed_log(ev)
    assert seen.result() == paths


def test_the_first_daemons_pacer_target_has_one_home() -> None:
    facts = PipelineFacts()
    for ev in events_of_lines([ENGINE, line("GPU queue target dispatch pacer enabled", 0.2,
                                            gpu_queue_target=4)]):
        facts.feed(ev)
    assert facts.pacer_target == facts.daemon_runs[0].pacer_target == 4
    assert facts.view().pacer_target == 4 and facts.pacer_on


def _at(s: float) -> str:
    return f"2026-05-12T17:00:{s:09.6f}Z"


#: Two WindowPoSt partitions synthesising at once and one fails: `synthesis failed` names no
#: job, so it ends neither (`PipelineFacts.mono_failures_unplaced`).
UNPLACED_FAILURE = [
    f"{_at(0.0)}  INFO cuzk_daemon: cuzk-daemon starting",
    f"{_at(0.03)}  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true",
    "TIMELINE,9970,SYNTH_START,wdpost-1000-0,kind=window-post",
    "TIMELINE,10470,SYNTH_START,wdpost-1000-1,kind=window-post",
    f"{_at(20.0)} ERROR synth_single{{proof_kind=window-post}}: cuzk_core::engine: "
    "synthesis failed error=invalid vanilla proof for sector 7"]


def test_a_failure_line_tied_to_no_one_job_is_counted_where_the_report_counts_lines(
        tmp_path: Path) -> None:
    """It was counted and shown nowhere: the report's counters now say it, beside the lines
    its reading could place nowhere (`log_cpp_lines_unplaced`, `log_timeline_lines_unplaced`),
    in `--json` and on the text's Input line."""
    events = events_of_lines(UNPLACED_FAILURE)
    t0 = events[0].t_wall_s
    header = SessionHeader(gapwatch_version="t", host="box", source="sim", started_wall_s=t0,
                           started_mono_ns=int(t0 * 1e9), period_ms=100.0,
                           gpus=[GpuInfo(index=0, link_bytes_per_s=63e9)])
    records: list[GpuSample | LogEvent] = sorted(
        [*_samples(t0, t0 + 30.0, (t0 + 25.0, t0 + 28.0)), *events], key=lambda r: r.t_wall_s)
    rec = tmp_path / "rec.jsonl"
    write_recording(rec, header, records)
    report = build_report(rec, Config(), workers=1)
    assert to_json(report)["counters"]["log_failures_unplaced"] == 1
    assert "log_failures_unplaced 1" in format_text(report)
    clean = tmp_path / "clean.jsonl"
    write_recording(clean, header, [r for r in records if not isinstance(r, LogEvent)
                                    or r.level != "ERROR"])
    assert "log_failures_unplaced" not in to_json(build_report(clean, Config(),
                                                               workers=1))["counters"]
