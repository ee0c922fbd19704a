"""Advice on every path upstream cuzk really takes (curio e0294b0f; cuzk-upstream-paths.md):
each built from cuzk's own lines (tests/data/cuzk-upstream/cuzk.log, one line per logging site,
named by its upstream file:line in expected.json), each giving its setting with evidence and
source, or "no setting" with why in one sentence."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from cuzk_fakes import cuzk_doc
from msgspec import UNSET, UnsetType
from msgspec.structs import replace
from parsed_logs import events_of_lines, fed

from gapwatch.core.evidence_types import CopiesEvidence, EventEvidence, ProverGapFacts
from gapwatch.core.models import Gap, LogEvent, ProverStatus
from gapwatch.core.prover import ProverView
from gapwatch.core.units import GIB
from gapwatch.cuzk.advice import advice_json, advice_lines, advise, stall_of
from gapwatch.cuzk.causes import with_log_cause
from gapwatch.cuzk.errors import error_event
from gapwatch.cuzk.gpu_workers import HISTORY, MAX_WORKERS, WorkerHolds
from gapwatch.cuzk.paths import PathFacts, PathsSeen, path_notes, path_rule
from gapwatch.cuzk.pipeline import PipelineFacts, PipelineView
from gapwatch.cuzk.prover import CuzkGap, CuzkProver
from gapwatch.cuzk.settings import ProverSettings, SettingsSeen, advised_change, changes
from gapwatch.cuzk.status import parse_status
from gapwatch.logs.parse import LogParser

UPSTREAM = Path(__file__).parent / "data" / "cuzk-upstream"
LINES = {e["name"]: e for e in json.loads((UPSTREAM / "expected.json").read_text())["lines"]}
T0 = "2026-05-12T14:00:"


def line(name: str, second: float = 0.0, **fields: object) -> str:
    """Upstream's line for the message `name` (its source in expected.json), at `second`
    past 14:00, with `fields` set to these values."""
    text = LINES[name]["line"]
    assert isinstance(text, str)
    text = re.sub(r"^\S+Z", f"{T0}{second:09.6f}Z", text)
    for k, v in fields.items():
        text, n = re.subn(rf"\b{k}=\S+", f"{k}={v}", text)
        assert n == 1, (name, k)
    return text


def timeline(offset_ms: int, event: str, job: str, detail: str) -> str:
    """A TIMELINE line as engine.rs:352 prints it (`TIMELINE,{ms},{event},{job},{detail}`)."""
    return f"TIMELINE,{offset_ms},{event},{job},{detail}"


def at(clock: str, text: str) -> str:
    """`text` (one of upstream's lines) logged at `clock` (HH:MM:SS) of 2026-05-12."""
    return re.sub(r"^\S+Z", f"2026-05-12T{clock}.000000Z", text)


def read(lines: list[str]) -> tuple[PathFacts, PipelineView]:
    """The paths' facts and the pipeline's view of the same log, as the report feeds both."""
    seen, pipeline = PathsSeen(), PipelineFacts()
    for ev in events_of_lines(lines):
        seen.feed_log(ev)
        pipeline.feed(ev)
    return seen.result(), pipeline.view()


def facts_of(lines: list[str]) -> PathFacts:
    return read(lines)[0]


def _gap(kind: str = "host_stall", cause: str | None = None, evidence: list[str] | None = None,
         start_s: float = 1_778_594_410.0, warnings: tuple[str, ...] = (),
         warned_s: float | None = None,
         facts: ProverGapFacts | UnsetType = UNSET) -> Gap:
    """A gap; its `warnings` are log events at `warned_s` (default: its start); `facts` what
    its prover decided of it, typed (the advice reads those, never `evidence`'s words; UNSET:
    none, as of a gap no prover explained)."""
    at_s = start_s if warned_s is None else warned_s
    return Gap(gap_id=1, gpu=0, kind=kind, start_mono_ns=10**10, start_s=start_s,  # type: ignore[arg-type]
               end_mono_ns=2 * 10**10, end_s=start_s + 1.0, duration_s=1.0,
               pcie_rx_bytes_per_s=2e9, pcie_tx_bytes_per_s=1e6, link_bytes_per_s=63e9,
               log_events=[EventEvidence(at_s, "", warning=w) for w in warnings],
               prover_cause=cause,
               prover_evidence=evidence or [], prover_facts=facts)


ENGINE = line("starting cuzk engine", 0.0, pipeline_enabled="true")


def test_a_batch_of_porep_requests_is_told_max_batch_size_1() -> None:
    # engine.rs:1892 (the dispatcher's settings), engine.rs:2665 (a monolithic SYNTH_START).
    facts = facts_of([ENGINE, line("synthesis dispatcher started (budget-gated)", 0.1,
                                      max_batch_size=2),
                         timeline(5000, "SYNTH_START", "porep-1000-7", "kind=porep-c2")])
    assert facts.batches == 1 and facts.max_batch_size == 2
    gap = _gap(cause="monolithic", evidence=[
        "porep-c2 job porep-1000-7 synthesising during the gap (TIMELINE SYNTH_START "
        "kind=porep-c2): monolithic work /status never lists"],
        facts=ProverGapFacts(monolithic_kind="porep-c2"))
    report = advise([gap], PipelineView(), rules=lambda s, g: path_rule(s, g, facts))
    (a,) = report.advice
    assert (a.setting, a.change, a.guess) == ("[scheduler] max_batch_size", "1 (the default)",
                                              False)
    assert "engine.rs:2053, 2672-2680" in a.source
    assert any("max_batch_size=2" in e for e in a.evidence)
    # Pageable copies with no pool failure while batches run: the same setting, as a guess.
    pageable = _gap(kind="pcie_starved", warnings=("unpinned",))
    (b,) = advise([pageable], PipelineView(),
                  rules=lambda s, g: path_rule(s, g, facts)).advice
    assert b.setting == "[scheduler] max_batch_size" and b.guess


def test_post_is_monolithic_by_design_and_gets_no_setting() -> None:
    facts = facts_of([ENGINE, timeline(5000, "SYNTH_START", "winpost-1000-1a2b3c4d",
                                          "kind=winning-post")])
    gap = _gap(cause="monolithic", evidence=["winning-post job winpost-1000-1a2b3c4d on the "
                                             "GPU during the gap (TIMELINE ...)"],
               facts=ProverGapFacts(monolithic_kind="winning-post"))
    report = advise([gap], PipelineView(), rules=lambda s, g: path_rule(s, g, facts))
    assert not report.advice
    assert "unpinned by design" in report.no_setting[0].why
    assert "pipeline.rs:3015, 3210" in report.no_setting[0].why


def test_the_pipeline_off_is_told_pipeline_enabled_true() -> None:
    facts = facts_of([line("starting cuzk engine", 0.0, pipeline_enabled="false")])
    gap = _gap(kind="pcie_starved", warnings=("unpinned",))
    (a,) = advise([gap], PipelineView(pipeline_enabled=False),
                  rules=lambda s, g: path_rule(s, g, facts)).advice
    assert (a.setting, a.change) == ("[pipeline] enabled", "true")
    assert "engine.rs:3422-3439" in a.source


NO_HINT = "no capacity hint cached — first synthesis will grow organically"
DOES_NOT_TAKE = "a path upstream's code does not take"


def first_wave(clocks: tuple[str, str, str, str], circuit: str = "porep-32g",
               done: str = "partition synthesis complete") -> list[str]:
    """One circuit type's first wave (pipeline.rs:270, 232; 2397 or 2866): two unhinted
    syntheses begin, the hint is cached, both complete unpinned, at these four clocks."""
    first, second, cached, last = clocks
    return [at(first, line(NO_HINT, circuit_id=circuit)),
            at(second, line(NO_HINT, circuit_id=circuit)),
            at(cached, line("cached synthesis capacity hint", circuit_id=circuit)),
            at(cached, line(done, is_pinned="false")),
            at(last, line(done, is_pinned="false"))]


def _wall(clock: str) -> float:
    """2026-05-12 `clock` UTC as Unix seconds (T0, 14:00:00, is 1_778_594_400)."""
    h, m, s = (int(x) for x in clock.split(":"))
    return 1_778_594_400.0 + (h - 14) * 3600 + m * 60 + s


def test_the_first_wave_says_how_long_it_lasted_and_that_it_repeats() -> None:
    # pipeline.rs:270 (no hint) ... pipeline.rs:355 (the hint cached, the wave over).
    # The pipeline view is read from the same lines (it was a hand-made PoolState with a count
    # of first syntheses: the stall now asks whether the gap falls in a wave's window).
    facts, view = read([ENGINE, line(NO_HINT, 1.0), line(NO_HINT, 1.5),
                        line("cached synthesis capacity hint", 31.0)])
    assert facts.unhinted == 2
    gap = _gap(kind="pcie_starved", warnings=("unpinned",), start_s=1_778_594_420.0)
    report = advise([gap], view, rules=lambda s, g: path_rule(s, g, facts))
    (n,) = report.no_setting
    assert not report.advice and n.stall == "first_synthesis"
    assert "first wave" in n.why and "30.0s" in n.why and "repeats after every restart" in n.why


def test_each_run_of_cuzk_has_its_own_first_wave_and_a_gap_in_the_second_is_called_one() -> None:
    # The hints are process statics (pipeline.rs:181-193): a restart loses them, so the second
    # run's syntheses are unhinted and unpinned again until its own hint is cached.
    lines = [at("14:00:00", ENGINE), *first_wave(("14:00:01", "14:00:02", "14:00:31", "14:00:33")),
             at("15:00:00", ENGINE), *first_wave(("15:00:01", "15:00:02", "15:00:30", "15:00:34"))]
    facts, view = read(lines)
    assert len(facts.first_waves) == 2 and facts.unhinted == 4
    gap = _gap(kind="pcie_starved", warnings=("unpinned",), start_s=_wall("15:00:20"))
    for pipeline in (PipelineView(), view):  # the paths alone, then with the pipeline's view
        (n,) = advise([gap], pipeline, rules=lambda s, g: path_rule(s, g, facts)).no_setting
        assert DOES_NOT_TAKE not in n.why
        assert "first wave of porep-32g of the run started at 15:00:00" in n.why
        assert "29.0s from 15:00:01" in n.why
    # Its partitions are copied after the hint is cached: a gap whose unpinned partition
    # completed in the wave (15:00:34) is the wave's too.
    late = _gap(kind="pcie_starved", warnings=("unpinned",), start_s=_wall("15:00:40"),
                warned_s=_wall("15:00:34"))
    assert stall_of(late, view) == "first_synthesis"
    # Unpinned long after both waves, with no pool failure: not a first wave.
    after = _gap(kind="pcie_starved", warnings=("unpinned",), start_s=_wall("15:30:00"))
    assert stall_of(after, view) == "pageable_copies"
    (n,) = advise([after], view, rules=lambda s, g: path_rule(s, g, facts)).no_setting
    assert DOES_NOT_TAKE in n.why


def test_a_later_circuit_types_first_wave_is_called_one_hours_after_the_first() -> None:
    # One hint per circuit type (pipeline.rs:197-204): the first SnapDeals proof hours after
    # the PoRep ones has its own unhinted, unpinned wave in the same run.
    lines = [at("14:00:00", ENGINE), *first_wave(("14:00:01", "14:00:02", "14:00:31", "14:00:33")),
             *first_wave(("17:00:01", "17:00:05", "17:00:40", "17:00:44"), circuit="snap-32g",
                         done="SnapDeals partition synthesis complete")]
    facts, view = read(lines)
    assert [w.circuit for w in facts.first_waves] == ["porep-32g", "snap-32g"]
    gap = _gap(kind="pcie_starved", warnings=("unpinned",), start_s=_wall("17:00:50"),
               warned_s=_wall("17:00:44"))
    for pipeline in (PipelineView(), view):
        report = advise([gap], pipeline, rules=lambda s, g: path_rule(s, g, facts))
        (n,) = report.no_setting
        assert not report.advice and DOES_NOT_TAKE not in n.why
        assert "first wave of snap-32g" in n.why and "39.0s from 17:00:01" in n.why


def test_the_job_tracker_wait_under_validate_partitions_is_told_to_unset_it() -> None:
    # engine.rs:3017-3054: the worker shows `proving` (partition_gpu_start) and GPU_PICKUP is
    # written before it takes the JobTracker, so this wait is inside the workers for /status.
    facts = facts_of([ENGINE,
                         line("CUZK_VALIDATE_PARTITIONS=1: validating per-partition verifier "
                              "against known-good proof", 2.0),
                         line("GPU_TIMING hot_path pre-prove overhead", 3.0, status_ms=0,
                              fail_check_ms=2400, mark_busy_ms=3, total_overhead_ms=2403)])
    report = advise([_gap(cause="inside_workers")], PipelineView(),
                    rules=lambda s, g: path_rule(s, g, facts))
    (a,) = report.advice
    assert a.setting == "env CUZK_VALIDATE_PARTITIONS" and "unset" in a.change
    assert "fail_check_ms up to 2400 ms" in " ".join(a.evidence)
    assert any("CUZK_VALIDATE_PARTITIONS=1 is set" in n for n in path_notes(facts))


def test_the_job_tracker_wait_is_inside_the_workers_and_no_dispatch_stall() -> None:
    facts = facts_of([ENGINE,
                         line("verifying PoRep proof (self-check)", 2.0),
                         line("GPU_TIMING hot_path pre-prove overhead", 3.0, status_ms=0,
                              fail_check_ms=1800, mark_busy_ms=0, total_overhead_ms=1800)])
    rules = lambda s, g: path_rule(s, g, facts)  # noqa: E731
    (n,) = advise([_gap(cause="inside_workers")], PipelineView(), rules=rules).no_setting
    assert "after pickup" in n.why and "JobTracker mutex" in n.why
    assert "self-check (engine.rs:521)" in n.why
    assert "only status_ms's lock" in n.why and "1 self-check(s)" in n.why
    # A worker /status shows idle is not on the JobTracker: the general words, not its.
    (d,) = advise([_gap(cause="dispatch_stall")], PipelineView(), rules=rules).no_setting
    assert "JobTracker" not in d.why and "status_ms" in d.why
    # With status_ms long, it is /status's lock, the one before a worker shows busy: poll less.
    facts2 = facts_of([ENGINE, line("GPU_TIMING hot_path pre-prove overhead", 3.0,
                                       status_ms=900, fail_check_ms=1, mark_busy_ms=0,
                                       total_overhead_ms=901)])
    (a,) = advise([_gap(cause="dispatch_stall")], PipelineView(),
                  rules=lambda s, g: path_rule(s, g, facts2)).advice
    assert a.setting.startswith("[cuzk] status_period_s") and a.guess


JOB = "porep-1000-7"


def _three_queued(*after: str) -> list[str]:
    """One GPU, two workers (`initializing GPU workers`, engine.rs:1339): partitions 0-2 of
    JOB synthesised and queued for the GPU (engine.rs:1752, 1778) by 14:00:05.2; worker 0
    picks up partition 0 at 14:00:06, worker 1 partition 1 at 14:00:06.1 (engine.rs:3023,
    3131); then `after`; worker 0 picks up partition 2 at 14:00:12."""
    lines = [ENGINE, line("initializing GPU workers", 0.05, num_gpus=1,
                          gpu_workers_per_device=2)]
    for p in range(3):
        lines += [timeline(5000 + p * 100, "SYNTH_END", JOB, f"partition={p},synth_ms=2000"),
                  timeline(5000 + p * 100, "GPU_QUEUE", JOB, f"partition={p}")]
    return [*lines,
            timeline(6000, "GPU_PICKUP", JOB, "worker=0,partition=0"),
            timeline(6001, "GPU_START", JOB, "worker=0,partition=0"),
            timeline(6100, "GPU_PICKUP", JOB, "worker=1,partition=1"),
            timeline(6101, "GPU_START", JOB, "worker=1,partition=1"),
            *after,
            timeline(12000, "GPU_PICKUP", JOB, "worker=0,partition=2"),
            timeline(12001, "GPU_START", JOB, "worker=0,partition=2")]


def test_a_partition_queued_while_both_gpu_workers_hold_one_waits_inside_the_workers() -> None:
    """A worker holds its partition from GPU_PICKUP until gpu_prove_start returns
    (engine.rs:3023, 3139-3148), then loops back to the queue: with both workers of the GPU
    holding one (one under the per-GPU lock, one waiting on it), a third partition queued
    waits for a worker. The GPU idling 14:00:10-11 then is inside the workers, not a dispatch
    stall, whose advice ("a worker showed idle while synthesised partitions waited") was false."""
    lines = _three_queued()
    view = fed(PipelineFacts(), lines).log_view(0, _wall("14:00:10"), _wall("14:00:11"),
                                                "host_stall")
    assert view.cause == "inside_workers"
    said = " ".join(view.evidence)
    assert ("both GPU workers of GPU 0 held partitions for 1.0 s of the 1.0 s gap (worker 0: "
            f"partition 0 of {JOB} since 14:00:06.000, worker 1: partition 1 of {JOB} since "
            "14:00:06.100; workers: gpu_workers_per_device=2") in said
    assert "picked up (GPU_PICKUP) only at 14:00:12.000" in said
    assert "waited for a worker, not for dispatch" in said
    facts, pipeline = read(lines)
    report = advise([_gap(cause=view.cause, evidence=view.evidence)], pipeline,
                    rules=lambda s, g: path_rule(s, g, facts))
    (n,) = report.no_setting
    assert n.stall == "inside_workers" and "inside the GPU workers" in n.why
    assert "showed idle" not in " ".join(advice_lines(report))


def test_a_partition_queued_while_a_gpu_worker_is_free_is_still_a_dispatch_stall() -> None:
    """Worker 0's prove_start returned at 14:00:08 (its `spawn_blocking prove_start` line,
    engine.rs:3139; or, its stdout not read, partition 0's GPU_END, written after it): it was
    free from then, yet partition 2 waited in the queue until 14:00:12."""
    for freed in (line("GPU_TIMING spawn_blocking prove_start", 8.0, worker_id=0,
                       partition="Some(0)"),
                  timeline(8000, "GPU_END", JOB, "worker=0,partition=0,gpu_ms=2000")):
        view = fed(PipelineFacts(), _three_queued(freed)).log_view(
            0, _wall("14:00:10"), _wall("14:00:11"), "host_stall")
        assert view.cause == "dispatch_stall", freed
        said = " ".join(view.evidence)
        assert "a GPU worker of GPU 0 was free for 1.0 s of the 1.0 s gap" in said
        assert f"worker 0: free since 14:00:08.000 (partition 0 of {JOB}: " in said
        assert f"worker 1: partition 1 of {JOB} since 14:00:06.100" in said
    # A line of worker 0's earlier partition read late (its stdout read behind its stderr)
    # frees nothing: partition 1's prove_start is worker 1's, not worker 0's.
    late = line("GPU_TIMING spawn_blocking prove_start", 8.0, worker_id=0, partition="Some(1)")
    view = fed(PipelineFacts(), _three_queued(late)).log_view(
        0, _wall("14:00:10"), _wall("14:00:11"), "host_stall")
    assert view.cause == "inside_workers"


def test_a_restart_frees_the_workers_its_old_run_held() -> None:
    """cuzk keeps nothing across a restart (its start line): what its workers held then died
    with the old run; a hold bounded by none of its lines is not kept for good."""
    facts = fed(PipelineFacts(), _three_queued())
    assert {(h.worker, h.partition) for h in facts.holds.open.values()} == {(0, 2), (1, 1)}
    facts.feed(events_of_lines([at("14:00:20", ENGINE)])[0])
    assert not facts.holds.open
    assert [(h.worker, h.partition, h.ended_by) for h in facts.holds.done][-2:] == [
        (1, 1, "cuzk restarted"), (0, 2, "cuzk restarted")]


def test_a_restart_status_uptime_shows_frees_the_workers_its_old_run_held() -> None:
    """A log with no start line of the new run (kept at `warn`, or read from mid-run): the
    restart shows only in `/status` uptime going back (status.rs counts it from the tracker's
    creation). What the old run's workers held died with it: a partition queued after it
    waited with every worker free, not inside workers that no longer hold anything."""
    facts = fed(PipelineFacts(), _three_queued())
    t0 = 1_778_594_400.0
    facts.feed_status(_snapshot(t0 + 13.0, 500.0))
    assert len(facts.holds.open) == 2
    facts.feed_status(_snapshot(t0 + 20.0, 2.0))  # cuzk started again at t0 + 18
    assert not facts.holds.open
    assert {(h.worker, h.partition, h.until_s) for h in facts.holds.done
            if h.ended_by == "cuzk restarted"} == {(0, 2, t0 + 18.0), (1, 1, t0 + 18.0)}


def _in_worker_span(second: float, worker: int, partition: int, text: str) -> str:
    """`text` (a message and its fields) written at 14:00:`second` inside GPU worker
    `worker`'s span, as engine.rs instruments its loop (3005-3012, 3356)."""
    return (f"{T0}{second:09.6f}Z  INFO gpu_worker{{worker_id={worker} gpu=0 job_id={JOB} "
            f"proof_kind=porep-c2 batch_size=1 partition=Some({partition})}}: "
            f"cuzk_core::engine: {text}")


def test_a_synchronous_prove_frees_its_worker_at_its_result_line_in_the_workers_span() -> None:
    """`CUZK_DISABLE_SPLIT_PROVE=1` (engine.rs:3078-3118) writes no GPU_START, no GPU_END and
    no prove_start line: the worker holds its partition until its result is processed inside
    its span (`partition GPU prove complete`, engine.rs:474 via 3105). The split prove's
    finalizer writes that line in no span, after the worker looped back: it frees nothing."""
    done = f"partition GPU prove complete job_id={JOB} partition=0 gpu_ms=1900 filled=0"
    sync = [x for x in _three_queued(_in_worker_span(8.0, 0, 0, done))
            if ",GPU_START," not in x]
    view = fed(PipelineFacts(), sync).log_view(0, _wall("14:00:10"), _wall("14:00:11"),
                                               "host_stall")
    assert view.cause == "dispatch_stall"
    assert "worker 0: free since 14:00:08.000 (partition 0 of porep-1000-7: 'partition GPU " \
        "prove complete' in its worker's span)" in " ".join(view.evidence)
    finalizer = line("partition GPU prove complete", 8.0, job_id=JOB, partition=0)
    view = fed(PipelineFacts(), _three_queued(finalizer)).log_view(
        0, _wall("14:00:10"), _wall("14:00:11"), "host_stall")
    assert view.cause == "inside_workers"


def test_a_free_worker_the_log_shows_outranks_status_showing_every_worker_proving() -> None:
    """Both workers' prove_start returned at 14:00:08 (engine.rs:3139-3148): free, they looped
    back to the queue, yet partition 2 waited there until 14:00:12. A `/status` polled at
    14:00:10, during the finalizers, shows both `proving`: status.rs keeps a worker proving
    until its finalizer's `partition_gpu_end`. It read `inside_workers`, the log's free
    workers dropped; the log's dispatch stall resting on a worker it shows free stands."""
    returned = [line("GPU_TIMING spawn_blocking prove_start", 8.0, worker_id=w,
                     partition=f"Some({w})") for w in (0, 1)]
    facts = fed(PipelineFacts(), _three_queued(*returned))
    t0 = 1_778_594_400.0
    gap = CuzkGap(0, t0 + 9, facts)
    gap.add_status(parse_status(json.dumps(cuzk_doc(synth_done=1, gpu=2, job=JOB,
                                                    workers=("proving", "proving"))).encode(),
                                "p", int((t0 + 10) * 1e9), t0 + 10, 1.0))
    view = gap.view(t0 + 11, t0 + 9, "host_stall", t0 + 11)
    assert view.cause == "dispatch_stall"
    said = " ".join(view.evidence)
    assert "/status: every worker of GPU 0 proving (PP)" in said
    assert "until its partition's finalizer ends" in said
    assert "worker 0: free since 14:00:08.000" in said
    # A dispatch stall of the log that knows of no free worker (no worker count, no pickup)
    # does not stand over the snapshots' every worker proving.
    assert with_log_cause("inside_workers", "dispatch_stall") == "inside_workers"
    assert with_log_cause("inside_workers", "dispatch_stall",
                          log_worker_free=True) == "dispatch_stall"


def test_each_gpus_workers_are_its_own() -> None:
    """Two GPUs, two workers each (`pipeline GPU worker started worker_id gpu`, engine.rs:2958:
    the parser's worker map). GPU 1's workers both hold a partition while partition 4 waits for
    them; GPU 0's worker 1 is free from 14:00:08 while partition 5 waits: over the same second
    GPU 1 waited inside its workers and GPU 0 on dispatch."""
    lines = [ENGINE, line("initializing GPU workers", 0.05, num_gpus=2,
                          gpu_workers_per_device=2, total_workers=4, gpus="[0,1]")]
    lines += [line("pipeline GPU worker started", 0.06 + w / 100, worker_id=w, gpu=w // 2,
                   sub_id=w % 2) for w in range(4)]
    for p in range(6):
        lines.append(timeline(5000 + p * 100, "GPU_QUEUE", JOB, f"partition={p}"))
    for w in range(4):
        lines.append(timeline(6000 + w * 100, "GPU_PICKUP", JOB, f"worker={w},partition={w}"))
    lines += [line("GPU_TIMING spawn_blocking prove_start", 8.0, worker_id=1,
                   partition="Some(1)"),
              line("GPU_TIMING spawn_blocking prove_start", 11.9, worker_id=2,
                   partition="Some(2)"),
              timeline(12000, "GPU_PICKUP", JOB, "worker=2,partition=4"),
              line("GPU_TIMING spawn_blocking prove_start", 11.95, worker_id=0,
                   partition="Some(0)"),
              timeline(12001, "GPU_PICKUP", JOB, "worker=0,partition=5")]
    facts = fed(PipelineFacts(), lines)
    gap = (_wall("14:00:10"), _wall("14:00:11"), "host_stall")
    busy, free = facts.log_view(1, *gap), facts.log_view(0, *gap)
    assert busy.cause == "inside_workers" and free.cause == "dispatch_stall"
    assert "both GPU workers of GPU 1 held partitions" in busy.evidence[0]
    assert "worker 2: partition 2" in busy.evidence[0] and "worker 0:" not in busy.evidence[0]
    assert "worker 1: free since 14:00:08.000" in " ".join(free.evidence)


def test_the_workers_holds_are_bounded_the_oldest_forgotten() -> None:
    """A long log: the holds kept are the latest `HISTORY` to end, the workers the latest
    `MAX_WORKERS` to pick up, whatever ids and how many pickups its lines give."""
    def picked_up(workers: int) -> WorkerHolds:
        return fed(PipelineFacts(), [ENGINE] + [
            timeline(1000 + i, "GPU_PICKUP", f"porep-1000-{i}",
                     f"worker={i % workers},partition=0") for i in range(3000)]).holds
    # Four workers: each pickup ends its worker's previous hold; the latest HISTORY stay.
    four = picked_up(4)
    assert [h.job for h in four.done] == [
        f"porep-1000-{i}" for i in range(3000 - 4 - HISTORY, 3000 - 4)]
    # 999 worker ids: the latest MAX_WORKERS to pick up stay, each with its latest hold.
    many = picked_up(999)
    assert sorted(h.job for h in many.open.values()) == sorted(
        f"porep-1000-{i}" for i in range(3000 - MAX_WORKERS, 3000))


def test_a_pinned_pool_failure_outranks_a_status_dispatch_stall() -> None:
    """The log says `pinned_pool` only of a pcie_starved gap: the GPU copying a/b/c under the
    per-GPU lock its workers share (cuzk-log-formats.md §3.2), so a worker /status shows idle
    could only have waited on that lock, and the pool's advice is what closes the gap. It read
    `dispatch_stall` ("no cuzk setting"). The log's `inside_workers` (every worker held a
    partition, `gapwatch.cuzk.gpu_workers`) stands over the snapshots' `dispatch_stall` too:
    status.rs marks a worker idle after its previous partition's finalizer even when it holds
    its next. Elsewhere the snapshots' cause stands, as before."""
    assert with_log_cause("dispatch_stall", "pinned_pool") == "pinned_pool"
    assert with_log_cause("inside_workers", "pinned_pool") == "pinned_pool"
    assert with_log_cause("dispatch_stall", "inside_workers") == "inside_workers"
    assert with_log_cause("dispatch_stall", "waits_on_synthesis") == "dispatch_stall"
    assert with_log_cause("waits_on_synthesis", "pinned_pool") == "waits_on_synthesis"


def _picked_up(worker: int, partitions: range) -> list[str]:
    """A GPU worker's pickups (engine.rs:3023) and, in its span, its hot-path line (3057)."""
    return [x for i in partitions
            for x in (timeline(1000 + i, "GPU_PICKUP", "porep-1000-7", f"worker={worker},partition={i}"),
                      line("GPU_TIMING hot_path pre-prove overhead", 3.0 + i, worker_id=worker,
                           partition=f"Some({i})"))]


def test_disable_split_prove_is_detected_and_said_with_the_lock_attribution_off() -> None:
    """With `CUZK_DISABLE_SPLIT_PROVE=1` a GPU worker picks a job up and proves it in one
    synchronous call (engine.rs:3078-3118), returning before the split prove's GPU_START (3131)
    and its `spawn_blocking prove_start` line (3139): GPU_PICKUP lines and no GPU_START. The
    tell was GPU_START lines without that line, which the knob never writes: it was never
    said of a log it was set in."""
    sync = _picked_up(0, range(4))
    facts = facts_of([ENGINE, *sync])
    assert facts.split_prove_disabled
    notes = path_notes(facts)
    assert any("CUZK_DISABLE_SPLIT_PROVE=1" in n and "lock attribution" in n
               and "not one GPU_START" in n for n in notes)
    (a,) = advise([_gap(cause="inside_workers")], PipelineView(),
                  rules=lambda s, g: path_rule(s, g, facts)).advice
    assert a.setting == "env CUZK_DISABLE_SPLIT_PROVE"
    parser, seen = LogParser(), SettingsSeen()  # the settings `compare` reads: the same tell
    for text in [ENGINE, *sync]:
        for ev in parser.parse_line(text, "stderr" if text.startswith("TIMELINE") else "stdout"):
            seen.feed_log(ev)
    assert seen.result().env == {"CUZK_DISABLE_SPLIT_PROVE": (
        "1 (inferred: 4 GPU_PICKUP, no GPU_START, no 'GPU_TIMING spawn_blocking prove_start' "
        "line)")}
    # The split prove: each pickup's GPU_START and split-prove line (engine.rs:3131, 3139);
    # GPU_START alone (every prove start failed before its line) is no tell either.
    starts = [timeline(1000 + i, "GPU_START", "porep-1000-7", f"worker=0,partition={i}")
              for i in range(4)]
    for split in ([*sync, *starts, line("GPU_TIMING spawn_blocking prove_start", 4.0)],
                  [*sync, *starts]):
        assert not facts_of([ENGINE, *split]).split_prove_disabled


def test_a_log_at_warn_level_infers_no_disable_split_prove_and_no_unseen_info_line() -> None:
    # `[logging] level = "warn"` or RUST_LOG=warn (cuzk-daemon main.rs:54-61): WARN and ERROR
    # lines and TIMELINE (stderr, engine.rs:352) remain, and no INFO line at all, the
    # split-prove line (engine.rs:3139) and CUZK_VALIDATE_PARTITIONS's (engine.rs:533) among them.
    warns = [line(n, 0.5) for n in LINES if " is deprecated" in n]
    warns += [line("assembler not found, discarding partition result", 2.0),
              line("partition GPU proving failed", 3.0)]
    starts = [timeline(1000 + i, "GPU_PICKUP", "porep-1000-7", f"worker=0,partition={i}")
              for i in range(4)]  # no GPU_START: the knob's own tell, at warn level
    facts = facts_of([*warns, *starts])
    assert facts.log_seen and not facts.split_prove_disabled
    assert not any("SPLIT_PROVE" in n for n in path_notes(facts))
    report = advise([_gap(cause="inside_workers")], PipelineView(),
                    rules=lambda s, g: path_rule(s, g, facts))
    assert not any("SPLIT_PROVE" in a.setting for a in report.advice)
    # Pageable copies: no `is_pinned` nor capacity-hint line could show, so gapwatch does not
    # say the partitions were pinned and the first wave over.
    slow = advise([_gap(kind="pcie_starved")], PipelineView(),
                  rules=lambda s, g: path_rule(s, g, facts))
    assert not any("partitions are pinned" in n.why for n in slow.no_setting)
    # The settings read from it: no env knob inferred, and CUZK_VALIDATE_PARTITIONS is not
    # "not seen" there (its INFO line could not show), so its change is not known.
    parser, warn_side, info_side = LogParser(), SettingsSeen(), SettingsSeen()
    for side, lines in ((warn_side, [*warns, *starts]),
                        (info_side, [ENGINE, *starts, line("GPU_TIMING spawn_blocking "
                                                           "prove_start", 4.0)])):
        for text in lines:
            for ev in parser.parse_line(text, "stderr" if text.startswith("TIMELINE")
                                        else "stdout"):
                side.feed_log(ev)
    warn, info = warn_side.result(), info_side.result()
    assert warn.env == {} and warn.log_lines > 0
    validate = advised_change("env CUZK_VALIDATE_PARTITIONS", warn, info)
    assert validate.changed is None and validate.shown_by[0].before is None


def test_deprecation_warnings_say_the_operators_setting_is_ignored() -> None:
    names = [n for n in LINES if " is deprecated" in n]
    assert len(names) == 4  # config.rs:118, 121, 240, 402
    facts = facts_of([line(n, 0.5) for n in names])
    notes = path_notes(facts)
    assert any("cuzk ignores 'srs.preload'" in n for n in notes)
    assert any("cuzk ignores 'synthesis.partition_workers'" in n for n in notes)
    text = "\n".join(advice_lines(advise([], PipelineView(), notes=notes)))
    assert "note: cuzk ignores 'memory.pinned_budget'" in text
    assert advice_json(advise([], PipelineView(), notes=notes))["advice_notes"] == notes


#: /status with nothing in flight (the last job done and gone), and with the next request's
#: first partition synthesising.
NOTHING_IN_FLIGHT = {**cuzk_doc(done=10), "pipelines": []}
ONE_SYNTHESISING = cuzk_doc(synthesizing=1, pending=9)
#: The request that ends the gap: synthesised from 14:00:18 to 14:00:20.5, then queued.
NEXT_REQUEST = [timeline(18000, "SYNTH_START", "porep-1000-8", "partition=0"),
                timeline(20500, "SYNTH_END", "porep-1000-8", "partition=0,synth_ms=2500"),
                timeline(20500, "GPU_QUEUE", "porep-1000-8", "partition=0")]


def _gap_seen(lines: list[str]) -> ProverView:
    """A one-GPU cuzk idle from 14:00:10 to 14:00:21: /status, polled each second, lists
    nothing in flight until 14:00:18, then the next request's partition synthesising; `lines`
    are cuzk's log of that time (after its start line)."""
    events = events_of_lines([ENGINE, *lines])
    t0 = events[0].t_wall_s
    prover = CuzkProver()
    for ev in events:
        prover.feed_log(ev)
    gap = prover.open_gap(0, t0 + 10.0)
    for second in range(10, 21):
        t = t0 + second + 0.2
        doc = NOTHING_IN_FLIGHT if second < 18 else ONE_SYNTHESISING
        st = parse_status(json.dumps(doc).encode(), "p", int(t * 1e9), t, 1.0)
        prover.feed_status(st)
        gap.add_status(st)
    return gap.view(t0 + 21.0, t0 + 10.0, "host_stall", t0 + 21.0)


def test_a_gap_status_saw_empty_is_no_work_though_the_next_synthesis_ends_in_it() -> None:
    """/status saw nothing pending or synthesising for most of the gap: the synthesis that
    ended in it began on work that came mid-gap. With cuzk's log followed, the gap read
    "the GPU waits on synthesis" (raise max_parallel_synthesis) and compare judged a change of
    load as a gain or a loss: idle for want of work never read as `no_work` with a log."""
    batching_off = line("synthesis dispatcher started (budget-gated)", 0.1, max_batch_size=1)
    view = _gap_seen([batching_off, *NEXT_REQUEST])
    assert view.cause == "no_work"
    assert view.words.startswith("prover status: the prover had no work")


#: cuzk's four synthesis workers (engine.rs:1437, logged at 1843).
FOUR_WORKERS = line("starting pipeline: synthesis task + GPU workers (budget-gated)", 0.06,
                    max_partitions_in_budget=36, effective_lookahead=32, synth_worker_count=4,
                    num_gpus=1)
#: The job before the gap: its last partition synthesised, queued, picked up and proved until
#: 14:00:10, where the gap starts.
LAST_OF_JOB_7 = [timeline(6000, "SYNTH_START", "porep-1000-7", "partition=9"),
                 timeline(8000, "SYNTH_END", "porep-1000-7", "partition=9,synth_ms=2000"),
                 timeline(8000, "GPU_QUEUE", "porep-1000-7", "partition=9"),
                 timeline(8001, "GPU_PICKUP", "porep-1000-7", "worker=0,partition=9"),
                 timeline(8002, "GPU_START", "porep-1000-7", "worker=0,partition=9"),
                 timeline(10000, "GPU_END", "porep-1000-7", "worker=0,partition=9,gpu_ms=1998")]
def _next_job(job: str, at_s: float) -> list[str]:
    """A request enqueued `at_s` past 14:00: all four workers start its first four partitions
    at once, and the first of them is synthesised and queued 2 s later."""
    ms = round(at_s * 1000)
    return [line("job enqueued", at_s, job_id=job, proof_kind="porep-c2"),
            *(timeline(ms, "SYNTH_START", job, f"partition={p}") for p in range(4)),
            timeline(ms + 2000, "SYNTH_END", job, "partition=0,synth_ms=2000"),
            timeline(ms + 2000, "GPU_QUEUE", job, "partition=0")]


def held_by_the_collector_1_s(job: str) -> list[str]:
    """After job 7's last partition, `job` enqueued at 14:00:10.3 and held 1.0 s by cuzk's
    batch collector (`max_batch_wait_ms=1000`, flushed by its timeout with one request:
    `synth_timeout_flush{batch_size=1}`), its partition 0 synthesised 2.0 s, then queued."""
    return [line("synthesis dispatcher started (budget-gated)", 0.1, max_batch_size=2,
                 max_batch_wait_ms=1000),
            *LAST_OF_JOB_7,
            line("job enqueued", 10.3, job_id=job, proof_kind="porep-c2"),
            line("processing batch", 11.3, batch_size=1).replace(
                " INFO cuzk_core", " INFO synth_timeout_flush{batch_size=1}: cuzk_core"),
            timeline(11300, "SYNTH_START", job, "partition=0"),
            timeline(13300, "SYNTH_END", job, "partition=0,synth_ms=2000"),
            timeline(13300, "GPU_QUEUE", job, "partition=0")]


#: The next request, sent 0.3 s after the gap's start.
NEXT_JOB_8 = _next_job("porep-1000-8", 10.3)
#: /status while the new request's partitions synthesise: every worker busy on them.
ALL_FOUR_BUSY = cuzk_doc(synthesizing=4, pending=6, job="porep-1000-8")


def _gap_synthesising(events: list[LogEvent], until_s: float = 12.4) -> ProverView:
    """A one-GPU cuzk idle from 14:00:10 to 14:00:12.4: /status, polled each second, lists
    nothing in flight at 10.2, then every synthesis worker busy (11.2, 12.2); `events` are
    cuzk's log of that time. `until_s` before 12.4: the gap as it stands then, still open."""
    t0 = _wall("14:00:00")
    prover = CuzkProver()
    for ev in events:
        prover.feed_log(ev)
    gap = prover.open_gap(0, t0 + 10.0)
    for t, doc in ((t0 + 10.2, NOTHING_IN_FLIGHT), (t0 + 11.2, ALL_FOUR_BUSY),
                   (t0 + 12.2, ALL_FOUR_BUSY)):
        if t > t0 + until_s:
            break
        st = parse_status(json.dumps(doc).encode(), "p", int(t * 1e9), t, 1.0)
        prover.feed_status(st)
        gap.add_status(st)
    end_s = t0 + 12.4 if until_s >= 12.4 else None
    return gap.view(end_s, t0 + 10.0, "host_stall", t0 + until_s)


def _advised(view: ProverView) -> list[str]:
    """The settings the advice names for one gap of `view`'s cause, states and evidence."""
    g = replace(_gap(cause=view.cause, evidence=view.evidence, facts=view.facts),
                prover_states=view.states)
    return [a.setting for a in advise([g], PipelineView(synth_workers=4)).advice]


def test_a_gap_that_began_with_the_pipeline_empty_is_not_advised_more_synthesis_workers(
) -> None:
    """Nothing in flight when the GPU went idle: the next request came 0.3 s later, and its
    first partition's synthesis ended the gap. /status, polled during that synthesis, saw all 4
    workers busy, and the gap read `waits_on_synthesis`: raise max_parallel_synthesis. But the
    4 workers had all started the new job at once; more of them could not end the gap sooner
    (engine.rs:1475, 1678). What the gap's start found decides: `empty_pipeline`, the work not
    sent ahead."""
    view = _gap_synthesising(events_of_lines([ENGINE, FOUR_WORKERS, *LAST_OF_JOB_7,
                                              *NEXT_JOB_8]))
    assert view.cause == "empty_pipeline"
    assert view.words.startswith("prover log: the pipeline was empty when the GPU went idle")
    assert "work came 0.3 s in, its first synthesis took 2.0 s" in view.words
    said = " | ".join(view.evidence)
    assert "nothing in cuzk's pipeline at the gap's start" in view.evidence[0]
    assert "('job enqueued job_id=porep-1000-8' at 14:00:10.300)" in said
    assert "at 14:00:12.300, 2.0 s after its synthesis began: one synthesis's latency" in said
    settings = _advised(view)
    assert "[pipeline] max_parallel_synthesis" not in settings
    assert settings == ["Curio [Cuzk] MaxPending"]


def test_a_gap_still_open_on_the_new_requests_synthesis_is_an_empty_pipeline() -> None:
    """Live, at 14:00:11.5: the request came at 10.3 and its four partitions synthesise, none
    done yet; /status saw nothing at 10.2, every worker busy at 11.2 (the tie goes to waiting
    on synthesis). The open gap, advised on as an operator asks while the GPU idles, read
    "raise max_parallel_synthesis" until it closed."""
    open_now = _gap_synthesising(events_of_lines([ENGINE, FOUR_WORKERS, *LAST_OF_JOB_7,
                                                  *NEXT_JOB_8[:5]]), until_s=11.5)
    assert open_now.cause == "empty_pipeline"
    assert "work came 0.3 s in, its first synthesis running" in open_now.words
    assert "[pipeline] max_parallel_synthesis" not in _advised(open_now)
    # Before the request came, an open gap of an empty pipeline is no work, as /status says.
    waiting = _gap_synthesising(events_of_lines([ENGINE, FOUR_WORKERS, *LAST_OF_JOB_7]),
                                until_s=10.25)
    assert waiting.cause == "no_work"


def test_a_gap_in_the_middle_of_a_job_still_waits_on_synthesis() -> None:
    """The same gap, but one of job 7's partitions was synthesising when the GPU went idle
    (SYNTH_START at 14:00:09, before the gap) and its end ended the gap: the workers were
    behind the GPU, more of them would have had it ready sooner."""
    behind = [timeline(9000, "SYNTH_START", "porep-1000-7", f"partition={p}") for p in range(4)]
    ends = [timeline(12300, "SYNTH_END", "porep-1000-7", "partition=0,synth_ms=3300"),
            timeline(12300, "GPU_QUEUE", "porep-1000-7", "partition=0")]
    view = _gap_synthesising(events_of_lines([ENGINE, FOUR_WORKERS, *LAST_OF_JOB_7, *behind,
                                              *ends]))
    assert view.cause == "waits_on_synthesis"
    assert _advised(view)[0] == "[pipeline] max_parallel_synthesis"


def test_a_gap_that_began_empty_and_mostly_waited_for_the_next_request_is_no_work() -> None:
    """The pipeline empty at 14:00:10, the next request only at 14:00:20.3, its first partition
    synthesised by 22.3: most of the gap the prover had nothing (Curio sent nothing), and the
    log says so, whatever snapshots taken during the synthesis saw. It read "the GPU waited on
    synthesis", and a change of load read as a gain or a loss in compare."""
    t0 = _wall("14:00:00")
    facts = fed(PipelineFacts(), [ENGINE, FOUR_WORKERS, *LAST_OF_JOB_7,
                                  *_next_job("porep-1000-8", 20.3)])
    view = facts.log_view(0, t0 + 10.0, t0 + 22.4, "host_stall")
    assert view.cause == "no_work"
    assert "the next request came 10.3 s into the gap" in view.evidence[1]
    assert with_log_cause("waits_on_synthesis", view.cause) == "no_work"


def test_a_synthesis_the_old_run_never_ended_is_not_in_flight_after_cuzk_starts_again() -> None:
    """Job 6's partition was synthesising when cuzk went down (no SYNTH_END: the process died);
    cuzk started again at 14:00:05 and kept nothing of it. The gap at 14:00:10 began with the
    new run's pipeline empty."""
    died = [timeline(3000, "SYNTH_START", "porep-1000-6", "partition=0")]
    again = line("starting cuzk engine", 5.0, pipeline_enabled="true")
    # The new run's TIMELINE counts from its own start line (engine.rs:349-353).
    new_run = [re.sub(r"^TIMELINE,(\d+)", lambda m: f"TIMELINE,{int(m[1]) - 5000}", x)
               for x in [*LAST_OF_JOB_7, *NEXT_JOB_8]]
    view = _gap_synthesising(events_of_lines([ENGINE, FOUR_WORKERS, *died, again, *new_run]))
    assert view.cause == "empty_pipeline"


def _mid_run(lines: list[str]) -> list[LogEvent]:
    """cuzk's `lines` as a log followed from mid-run reads them: no start line, its TIMELINE
    placed by /status's uptime (`LogParser.anchor_from_status`)."""
    parser = LogParser()
    parser.anchor_from_status(_wall("14:00:00"))
    return [ev for text in lines for ev in parser.parse_line(
        text, "stderr" if text.startswith("TIMELINE") else "stdout")]


def test_a_log_read_from_mid_run_does_not_take_syntheses_begun_before_it_for_none() -> None:
    """Read from 14:00:06 on, no start line: syntheses begun before are in flight unseen. One
    whose SYNTH_END (its start not read) ends the gap was in flight at its start, though a
    synthesis begun after the log (job 7's partition 9) had ended before it; and read from
    14:00:08, before any synthesis begun after the log has ended, what is in flight is not
    known. Neither gap is called an empty pipeline: both still wait on synthesis, as before."""
    unseen_ends_the_gap = [
        *LAST_OF_JOB_7,
        timeline(12300, "SYNTH_END", "porep-1000-7", "partition=8,synth_ms=9000"),
        timeline(12300, "GPU_QUEUE", "porep-1000-7", "partition=8")]
    view = _gap_synthesising(_mid_run(unseen_ends_the_gap))
    assert view.cause == "waits_on_synthesis"
    # The new request's synthesis ends the gap, but one begun before the log may still run.
    not_known_yet = [*LAST_OF_JOB_7[2:], *NEXT_JOB_8]
    assert _gap_synthesising(_mid_run(not_known_yet)).cause == "waits_on_synthesis"
    # Once a synthesis begun after the log has ended, the set is whole: the next empty start
    # is told.
    t0 = _wall("14:00:00")
    facts = PipelineFacts()
    for ev in _mid_run([*LAST_OF_JOB_7, *_next_job("porep-1000-9", 20.3)]):
        facts.feed(ev)
    assert facts.log_view(0, t0 + 20.0, t0 + 22.4, "host_stall").cause == "empty_pipeline"


def test_a_gap_cuzks_batch_collector_held_a_request_through_is_a_batch_wait() -> None:
    """max_batch_size=2: a lone request is held until max_batch_wait_ms runs out, then sent
    ('processing batch' in span synth_timeout_flush, engine.rs:2012); /status lists nothing
    meanwhile, which read as no work at all (Curio's MaxPending, a guess). The log says cuzk
    held the work: its own setting, not a guess."""
    held = [line("synthesis dispatcher started (budget-gated)", 0.1, max_batch_size=2,
                 max_batch_wait_ms=10000),
            line("processing batch", 18.0, batch_size=1).replace(
                " INFO cuzk_core", " INFO synth_timeout_flush{batch_size=1}: cuzk_core"),
            *NEXT_REQUEST]
    view = _gap_seen(held)
    assert view.cause == "batch_wait"
    assert "held a request for 8.0 s of the gap" in view.evidence[-1]
    assert "max_batch_wait_ms=10000 ran out" in view.evidence[-1]
    size, wait = advise([_gap(cause="batch_wait")], PipelineView()).advice
    assert (size.setting, wait.setting) == ("[scheduler] max_batch_size",
                                            "[scheduler] max_batch_wait_ms")
    assert not size.guess and not wait.guess
    # Work taken as fixed: true only where more work waited behind the held request.
    assert any("requests that come on a clock lose the wait, not the idle" in e
               for e in size.evidence)


def test_a_batch_sent_late_for_want_of_a_synthesis_slot_was_held_only_its_wait() -> None:
    """The request came at 14:00:00 and max_batch_wait_ms=10000 ran out at 14:00:10; its
    `processing batch` is written once a synthesis slot is free (engine.rs:1941, 2154), here
    at 14:00:20. The gap from 14:00:10 waited on synthesis, not on the batch: the hold was
    taken as the 10 s before the line, and the gap said `batch_wait`, max_batch_size = 1
    for sure."""
    late = [line("synthesis dispatcher started (budget-gated)", 0.1, max_batch_size=2,
                 max_batch_wait_ms=10000),
            line("job enqueued", 0.2, proof_kind="porep-c2"),
            line("processing batch", 20.0, batch_size=1).replace(
                " INFO cuzk_core", " INFO synth_timeout_flush{batch_size=1}: cuzk_core"),
            *NEXT_REQUEST]
    assert _gap_seen(late).cause != "batch_wait"


def test_no_work_names_curios_max_pending() -> None:
    facts = facts_of([ENGINE])
    (a,) = advise([_gap(cause="no_work")], PipelineView(),
                  rules=lambda s, g: path_rule(s, g, facts)).advice
    assert a.setting == "Curio [Cuzk] MaxPending" and a.guess
    assert "default 10" in a.change


def test_no_work_with_batching_on_names_max_batch_size_before_curios_max_pending() -> None:
    # max_batch_size > 1: a lone PoRep request waits in the batch collector (no job in /status,
    # so the gap reads no_work) until max_batch_wait_ms passes (engine.rs:1984-2011, 2053).
    # Before, the only advice was Curio's MaxPending: raising it sends more work to a cuzk that
    # holds what it has.
    flush = line("processing batch", 0.2, batch_size=1).replace(
        " INFO cuzk_core", " INFO synth_timeout_flush{batch_size=1}: cuzk_core")
    facts = facts_of([ENGINE, line("synthesis dispatcher started (budget-gated)", 0.1,
                                   max_batch_size=2, max_batch_wait_ms=10000), flush])
    assert facts.timeout_flushes == 1
    batch, wait, pending = advise([_gap(cause="no_work")], PipelineView(),
                                  rules=lambda s, g: path_rule(s, g, facts)).advice
    assert batch.setting == "[scheduler] max_batch_size" and batch.change.startswith("1")
    assert wait.setting == "[scheduler] max_batch_wait_ms" and "0 = flush at once" in wait.change
    assert "engine.rs:1984-2011, 2053" in batch.source
    assert pending.setting == "Curio [Cuzk] MaxPending" and batch.guess
    assert any("max_batch_size=2 max_batch_wait_ms=10000" in e for e in batch.evidence)
    assert any("1 batch(es) dispatched only when the wait ran out" in e for e in batch.evidence)
    # Batching off (the default): Curio's limit alone, as before.
    off = facts_of([ENGINE, line("synthesis dispatcher started (budget-gated)", 0.1,
                                 max_batch_size=1)])
    (only,) = advise([_gap(cause="no_work")], PipelineView(),
                     rules=lambda s, g: path_rule(s, g, off)).advice
    assert only.setting == "Curio [Cuzk] MaxPending"


def test_settings_read_from_startup_lines_and_their_changes() -> None:
    def settings(size: int, deprecated: bool) -> SettingsSeen:
        seen, parser = SettingsSeen(), LogParser()
        lines = [ENGINE, line("synthesis dispatcher started (budget-gated)", 0.1,
                              max_batch_size=size),
                 line("initializing GPU workers", 0.2, gpu_workers_per_device=2)]
        if deprecated:
            lines.append(line("srs.preload is deprecated — SRS is loaded on demand", 0.3))
        for text in lines:
            for ev in parser.parse_line(text, "stdout"):
                seen.feed_log(ev)
        return seen

    before, after = settings(2, True).result(), settings(1, False).result()
    assert before.values["[scheduler] max_batch_size"] == "2"
    assert before.deprecated == ("srs.preload",)
    changed = {c.setting: (c.before, c.after) for c in changes(before, after)}
    assert changed["[scheduler] max_batch_size"] == ("2", "1")
    # AFTER read cuzk's start and no warning of the key: not set (a side that read no start
    # does not show it, and is no change: `SettingChange.changed`).
    assert changed["srs.preload (deprecated, ignored)"] == ("set", "not set")
    assert "[gpus] gpu_workers_per_device" not in changed
    assert "srs.preload (deprecated, ignored)" not in {
        c.setting for c in changes(before, ProverSettings(values=dict(after.values)))}


def test_synthesis_threads_and_the_pacer_target_are_read_from_their_startup_lines() -> None:
    # Both are settings the advice names ([synthesis] threads, [pipeline] max_gpu_queue_depth);
    # unread, compare could never show the operator's change of them (main.rs:111,
    # engine.rs:1456).
    seen, parser = SettingsSeen(), LogParser()
    for text in (line("rayon global thread pool configured", 0.1, rayon_threads=48),
                 line("GPU queue target dispatch pacer enabled", 0.2, gpu_queue_target=8)):
        for ev in parser.parse_line(text, "stdout"):
            seen.feed_log(ev)
    values = seen.result().values
    assert values["[synthesis] threads (rayon_threads)"] == "48"
    assert values["[pipeline] max_gpu_queue_depth"] == "8"


def test_the_pipeline_off_explains_every_stall_of_the_monolithic_workers() -> None:
    # engine.rs:1333-1337: one worker per GPU with the pipeline off, whatever
    # gpu_workers_per_device says; engine.rs:2247, 2401: only the pipeline registers jobs with
    # /status, so every gap of a monolithic cuzk reads as "no work".
    facts = facts_of([line("starting cuzk engine", 0.0, pipeline_enabled="false")])
    off = PipelineView(pipeline_enabled=False, gpu_workers_per_device=1)
    # The report asks the paths first; the dashboard, snapshot and help screen do not: the
    # same answer either way.
    for rules in (lambda s, g: path_rule(s, g, facts), None):
        (a,) = advise([_gap(kind="transfer_bound")], off, rules=rules).advice
        assert (a.setting, a.change, a.guess) == ("[pipeline] enabled", "true", False)
        assert any("changes nothing" in e for e in a.evidence)
        report = advise([_gap(kind="host_stall")], off, rules=rules)
        assert [(b.setting, b.guess) for b in report.advice] == [("[pipeline] enabled", False)]
        assert not report.no_setting
        # A gap in a proof a monolithic worker held is `monolithic` (the log says so): one
        # left `no_work` had none in flight, so only work from Curio fills it.
        (no_work,) = advise([_gap(cause="no_work")], off, rules=rules).advice
        assert (no_work.setting, no_work.guess) == ("Curio [Cuzk] MaxPending", True)
        assert any("no monolithic worker held a proof" in e for e in no_work.evidence)


OVER_BUDGET = "acquire request exceeds total budget — will block until possible"


def test_a_request_over_the_whole_budget_explains_the_idle_until_cuzk_restarts() -> None:
    # memory.rs:187-236: a request over the total WARNs once, then loops until used + amount
    # fits the total, which never holds. gapwatch compared the message without its "— will
    # block until possible", so the line was never read.
    t0 = 1_778_594_400.0
    facts = fed(PipelineFacts(), [ENGINE, line(OVER_BUDGET, 1.0, amount_gib=136, total_gib=120)])
    view = facts.log_view(0, t0 + 40.0, t0 + 41.0, "host_stall")
    assert view.cause == "waits_on_budget"
    (said,) = view.evidence
    assert "a 136 GiB budget request exceeds cuzk's 120 GiB total budget" in said
    assert "waits until cuzk restarts" in said
    gap = _gap(cause="waits_on_budget", evidence=view.evidence, start_s=t0 + 40.0,
               facts=view.facts)
    report = advise([gap], facts.view())
    assert [(a.setting, a.change.split(" (")[0]) for a in report.advice] == [
        ("[memory] total_budget", "raise it above 136 GiB, the request's size"),
        ("[scheduler] max_batch_size", "1")]  # 136 GiB is a PoRep batch's (memory.rs:41)
    # The request died with the process: after a restart the idle has other causes.
    restarted = fed(PipelineFacts(), [ENGINE, line(OVER_BUDGET, 1.0, amount_gib=136, total_gib=120),
                                 line("starting cuzk engine", 50.0, pipeline_enabled="true")])
    assert restarted.log_view(0, t0 + 60.0, t0 + 61.0, "host_stall").cause is None


def test_a_request_over_the_whole_budget_is_a_prover_error_event() -> None:
    (ev,) = LogParser().parse_line(line(OVER_BUDGET, 1.0, amount_gib=30, total_gib=20), "stdout")
    said = error_event(ev)
    assert said is not None and said.level == "error"
    assert "a 30 GiB budget request exceeds cuzk's 20 GiB total budget" in said.message


def _snapshot(t_s: float, uptime_s: float, total_gib: int = 120) -> ProverStatus:
    """A `/status` answer at `t_s`: cuzk up `uptime_s`, its budget `total_gib`."""
    return ProverStatus("127.0.0.1:9821", int(t_s * 1e9), t_s, 1.0, uptime_s, {}, [], 0, 0, 0,
                        0, memory_total_bytes=total_gib * GIB)


def test_a_request_over_the_budget_is_let_go_when_status_shows_its_process_gone() -> None:
    # A log kept at `warn` (RUST_LOG=warn, main.rs:54-61) has no start line: before, once read,
    # the request explained every later host_stall gap for ever. Its process ending shows in
    # /status: uptime going back (status.rs counts it from the tracker's creation), or a budget
    # total other than the one that refused it (memory.rs: `MemoryBudget::new` sets the total,
    # nothing changes it: another total is another process).
    t0 = 1_778_594_400.0
    over = line(OVER_BUDGET, 1.0, amount_gib=136, total_gib=120)
    facts = fed(PipelineFacts(), [over])
    facts.feed_status(_snapshot(t0 + 5.0, 500.0))
    assert facts.log_view(0, t0 + 40.0, t0 + 41.0, "host_stall").cause == "waits_on_budget"
    facts.feed_status(_snapshot(t0 + 60.0, 4.0))  # cuzk started again at t0 + 56
    assert facts.log_view(0, t0 + 90.0, t0 + 91.0, "host_stall").cause is None
    # The operator raised the budget and cuzk came back between two polls of another poller:
    # the first snapshot read already says another total.
    raised = fed(PipelineFacts(), [over])
    raised.feed_status(_snapshot(t0 + 60.0, 4.0, total_gib=200))
    assert raised.log_view(0, t0 + 90.0, t0 + 91.0, "host_stall").cause is None
    # A snapshot of the same total and a growing uptime: still the process that refused it.
    same = fed(PipelineFacts(), [over])
    same.feed_status(_snapshot(t0 + 60.0, 600.0))
    assert same.log_view(0, t0 + 90.0, t0 + 91.0, "host_stall").cause == "waits_on_budget"


def test_a_request_over_the_budget_is_let_go_at_a_budget_line_of_another_total() -> None:
    # With DEBUG lines on (RUST_LOG=cuzk_core::memory=debug), every grant and wait says the
    # total: one granted of another total is another process, the request gone with the old.
    t0 = 1_778_594_400.0
    facts = fed(PipelineFacts(), [
        line(OVER_BUDGET, 1.0, amount_gib=136, total_gib=120),
        "2026-05-12T14:00:30.000000Z DEBUG cuzk_core::memory: budget acquired amount_gib=136 "
        "used_gib=136 total_gib=200"])
    assert facts.log_view(0, t0 + 40.0, t0 + 41.0, "host_stall").cause is None


def test_a_request_over_the_budget_that_nothing_could_show_gone_says_so() -> None:
    # Nothing read could show a restart (no INFO line, no /status uptime): the request may be
    # gone, and its words say so rather than claim the idle hours later.
    t0 = 1_778_594_400.0
    view = fed(PipelineFacts(), [line(OVER_BUDGET, 1.0, amount_gib=136, total_gib=120)]).log_view(
        0, t0 + 7200.0, t0 + 7201.0, "host_stall")
    assert view.cause == "waits_on_budget"
    assert any("nothing read could show a restart of cuzk" in e for e in view.evidence)
    # With INFO lines in the log, a restart's start line would have shown: not said.
    seen = fed(PipelineFacts(), [ENGINE, line(OVER_BUDGET, 1.0, amount_gib=136, total_gib=120)])
    assert not any("could show a restart" in e
                   for e in seen.log_view(0, t0 + 40.0, t0 + 41.0, "host_stall").evidence)


def test_with_debug_lines_on_the_requests_own_waits_keep_its_words() -> None:
    # memory.rs:230-236: the acquire over the total logs `waiting for budget` (DEBUG) at every
    # wake-up, its needed_gib over total_gib. Before, the latest wait being one of those, the
    # gap read as an ordinary budget wait: "raise total_budget", not "above 136 GiB".
    t0 = 1_778_594_400.0
    wait = ("2026-05-12T14:00:{:09.6f}Z DEBUG cuzk_core::memory: waiting for budget (acquire "
            "blocked) needed_gib=136 available_gib=90 total_gib=120")
    facts = fed(PipelineFacts(), [ENGINE, line(OVER_BUDGET, 1.0, amount_gib=136, total_gib=120),
                             wait.format(1.0), wait.format(39.5)])
    view = facts.log_view(0, t0 + 40.0, t0 + 41.0, "host_stall")
    assert view.cause == "waits_on_budget"
    assert "can never be granted" in view.evidence[0]
    gap = _gap(cause="waits_on_budget", evidence=view.evidence, start_s=t0 + 40.0,
               facts=view.facts)
    (a, _batch) = advise([gap], facts.view()).advice
    assert a.change.startswith("raise it above 136 GiB, the request's size")
    # Its WARN before the log began: a wait over the whole total is such a request all the same.
    late = fed(PipelineFacts(), [ENGINE, wait.format(39.5)])
    assert "can never be granted" in late.log_view(0, t0 + 40.0, t0 + 41.0, "host_stall").evidence[0]
    # An ordinary wait (needed within the total) keeps its own words.
    ordinary = fed(PipelineFacts(), [ENGINE, wait.format(39.5).replace("needed_gib=136",
                                                                 "needed_gib=14")])
    (said,) = ordinary.log_view(0, t0 + 40.0, t0 + 41.0, "host_stall").evidence
    assert "can never be granted" not in said and "needed_gib=14" in said


def test_a_partitions_request_over_the_budget_blocks_every_partition_whatever_the_concurrency(
        ) -> None:
    # engine.rs:1478, 1623-1628: one dispatcher acquires each partition's budget (PoRep
    # 14 GiB, SnapDeals 9 GiB) before a synthesis worker takes it, whatever synthesis_concurrency
    # (which spawns batch tasks, engine.rs:1927-1971): a partition's request over the total holds
    # every partition of every job. Before, the words tied the block to synthesis_concurrency = 1.
    t0 = 1_778_594_400.0
    small = fed(PipelineFacts(), [ENGINE, line(OVER_BUDGET, 1.0, amount_gib=14, total_gib=12)])
    small_view = small.log_view(0, t0 + 40.0, t0 + 41.0, "host_stall")
    (said,) = small_view.evidence
    assert "single partition dispatcher waits on it" in said
    assert "every partition of every job behind it, whatever [pipeline] synthesis_concurrency" \
        in said
    (a,) = advise([_gap(cause="waits_on_budget", evidence=[said], start_s=t0 + 40.0,
                        facts=small_view.facts)],
                  small.view()).advice
    assert "whatever [pipeline] synthesis_concurrency" in a.why and "1623-1628" in a.source
    # A job's own request (in its batch task's span; INFO spans): that job, and at
    # synthesis_concurrency 1 every later one, its task awaited inline.
    batch = line(OVER_BUDGET, 1.0, amount_gib=136, total_gib=120).replace(
        " WARN cuzk_core", " WARN synth_batch_full{batch_size=2 proof_kind=porep-c2}: cuzk_core")
    (job,) = fed(PipelineFacts(), [ENGINE, batch]).log_view(
        0, t0 + 40.0, t0 + 41.0, "host_stall").evidence
    assert "span synth_batch_full proof_kind=porep-c2" in job and "dispatcher" not in job
    assert "with [pipeline] synthesis_concurrency = 1 (the default) every later job too" in job


def _pageable_gap(clock: str) -> Gap:
    """A starved gap at `clock` whose copies the copy trace saw come from pageable memory, no
    log line on it: its stall is `pageable_copies` whether or not a first wave holds it."""
    return replace(_gap(kind="pcie_starved", start_s=_wall(clock)),
                   copies=CopiesEvidence(memory_kind="pageable"))


def test_pageable_copies_are_a_first_waves_by_their_gaps_as_a_whole_not_the_latest() -> None:
    # Judged by the latest gap alone, three gaps long after run 1's wave read as a first wave
    # (no setting, "repeats after every restart") because the fourth fell in run 2's; and three
    # in run 1's wave read as pinned partitions because the fourth came later.
    lines = [at("14:00:00", ENGINE), *first_wave(("14:00:01", "14:00:02", "14:00:31", "14:00:33")),
             at("15:00:00", ENGINE), *first_wave(("15:00:01", "15:00:02", "15:00:30", "15:00:34"))]
    facts, view = read(lines)
    rules = lambda s, g: path_rule(s, g, facts)  # noqa: E731
    mostly_after = [_pageable_gap(c) for c in ("14:20:00", "14:30:00", "14:40:00", "15:00:20")]
    (n,) = advise(mostly_after, view, rules=rules).no_setting
    assert n.stall == "pageable_copies" and n.gaps == 4
    assert "first wave of" not in n.why and "MSM scalars" in n.why
    assert "(but 1 of 4 gap(s), in a first wave: unpinned by design, no setting)" in n.why
    mostly_in = [_pageable_gap(c) for c in ("14:00:05", "14:00:10", "14:00:20", "14:40:00")]
    (m,) = advise(mostly_in, view, rules=rules).no_setting
    assert m.why.startswith("3 of 4 gap(s) in a first wave: first wave of porep-32g of the run "
                            "started at 14:00:00")
    # All in waves: the wave's words alone, as before.
    (w,) = advise(mostly_in[:3], view, rules=rules).no_setting
    assert w.why.startswith("first wave of porep-32g")


def test_a_snapdeals_batch_is_told_its_own_budget_not_a_porep_batchs() -> None:
    # engine.rs:2644-2648: a PoRep batch of 2+ acquires POREP_BATCH_FULL_BYTES (136 GiB,
    # memory.rs:41), any other batch its kind's proof_kind_full_bytes: a SnapDeals batch one
    # partition's SNAP_PARTITION_FULL_BYTES (9 GiB, memory.rs:53) for the whole batch. Before,
    # every batch's words said 136 GiB.
    dispatcher = line("synthesis dispatcher started (budget-gated)", 0.1, max_batch_size=2)
    facts = facts_of([ENGINE, dispatcher,
                      timeline(5000, "SYNTH_START", "snap-1000-7", "kind=snap-update")])
    gap = _gap(cause="monolithic", evidence=[
        "snap-update job snap-1000-7 synthesising during the gap (TIMELINE SYNTH_START "
        "kind=snap-update): monolithic work /status never lists"],
        facts=ProverGapFacts(monolithic_kind="snap-update"))
    for rules in (lambda s, g: path_rule(s, g, facts), None):  # the report's, the dashboard's
        (a,) = advise([gap], PipelineView(), rules=rules).advice
        assert a.setting == "[scheduler] max_batch_size"
        assert "a batch of 2+ SnapDeals requests" in a.why
        assert "acquiring a 9 GiB (one partition's, for the whole batch) budget" in a.why
        assert "136" not in a.why and "memory.rs:41, 53" in a.source
    # Pageable copies while the log shows only SnapDeals batches: the same words, a guess.
    (b,) = advise([_gap(kind="pcie_starved", warnings=("unpinned",))], PipelineView(),
                  rules=lambda s, g: path_rule(s, g, facts)).advice
    assert b.guess and "9 GiB" in b.why and "136" not in b.why
    assert facts.batch_kinds == ("snap-update",)
    # A PoRep batch's: 136 GiB; both kinds in the log: each its own.
    porep = _gap(cause="monolithic", evidence=["porep-c2 job porep-1000-7 on the GPU"],
                 facts=ProverGapFacts(monolithic_kind="porep-c2"))
    (c,) = advise([porep], PipelineView()).advice
    assert "2+ PoRep requests" in c.why and "acquiring a 136 GiB budget" in c.why
    both = facts_of([ENGINE, dispatcher,
                     timeline(5000, "SYNTH_START", "porep-1000-7", "kind=porep-c2"),
                     timeline(6000, "SYNTH_START", "snap-1000-7", "kind=snap-update")])
    (d,) = advise([_gap(kind="pcie_starved", warnings=("unpinned",))], PipelineView(),
                  rules=lambda s, g: path_rule(s, g, both)).advice
    assert ("a budget of 136 GiB for a PoRep batch, 9 GiB (one partition's, for the whole "
            "batch) for a SnapDeals batch") in d.why


def test_every_setting_compare_shows_names_its_section() -> None:
    # `gapwatch compare` showed `synthesis_concurrency` alone: an operator looks for it under
    # [pipeline] (config.rs:285-286, cuzk.example.toml:151).
    seen = SettingsSeen()
    for ev in events_of_lines([line("synthesis dispatcher started (budget-gated)", 0.1,
                                    synthesis_concurrency=2)]):
        seen.feed_log(ev)
    values = seen.result().values
    assert values["[pipeline] synthesis_concurrency"] == "2"
    assert "synthesis_concurrency" not in values


PIPELINE_OFF_LOG = (UPSTREAM / "post-pipeline-off.log").read_text().splitlines()


def _pipeline_off_gap(lines: list[str], start_s: float, end_s: float) -> ProverView:
    """A gap of GPU 0 over [start_s, end_s] (wall seconds) with /status, polled each second,
    listing nothing in flight (as with the pipeline off it never does), `lines` the log."""
    prover = CuzkProver()
    for ev in events_of_lines(lines):
        prover.feed_log(ev)
    gap = prover.open_gap(0, start_s)
    t = start_s + 0.2
    while t < end_s:
        st = parse_status(json.dumps(NOTHING_IN_FLIGHT).encode(), "p", int(t * 1e9), t, 1.0)
        prover.feed_status(st)
        gap.add_status(st)
        t += 1.0
    return gap.view(end_s, start_s, "host_stall", end_s)


def test_a_gap_in_a_proof_cuzks_monolithic_worker_holds_is_that_proof_not_no_work() -> None:
    """post-pipeline-off.log: worker 0 proves porep-1000-7 in one call from 20:00:10 to
    20:00:50 (engine.rs:3397-3462), its GPU idle through the synthesis; /status lists no job
    with the pipeline off. The gap read "the prover had no work" and its advice said gapwatch
    could not tell a proof in flight from none, while the log said which proof it was."""
    t0 = _wall("20:00:12")
    view = _pipeline_off_gap(PIPELINE_OFF_LOG, t0, t0 + 22.0)
    assert view.cause == "monolithic"
    assert "worker 0 of GPU 0 was proving porep-1000-7 (porep-c2) in one call" in \
        view.evidence[-1]
    assert "no work" not in view.words
    facts, pipeline = read(PIPELINE_OFF_LOG)
    gap = _gap(cause="monolithic", evidence=view.evidence, start_s=t0, facts=view.facts)
    for rules in (lambda s, g: path_rule(s, g, facts), None):
        (a,) = advise([gap], pipeline, rules=rules).advice
        assert (a.setting, a.change, a.guess) == ("[pipeline] enabled", "true", False)
        assert "'starting cuzk engine' says pipeline_enabled=false" in a.evidence[-1]


def test_a_log_followed_from_its_end_knows_the_pipeline_off_by_its_monolithic_workers() -> None:
    """gapwatch started beside a cuzk up for days reads no start line; the monolithic
    workers' lines, which only the pipeline off writes (engine.rs:1333-1337, 3362), say it.
    Without that, a PoRep proved in one call read as PoSt, "monolithic by design": no
    setting."""
    tail = PIPELINE_OFF_LOG[5:]
    assert not any("starting cuzk engine" in x for x in tail)
    t0 = _wall("20:00:12")
    view = _pipeline_off_gap(tail, t0, t0 + 22.0)
    assert view.cause == "monolithic"
    facts, pipeline = read(tail)
    assert facts.pipeline_enabled is False and pipeline.pipeline_enabled is False
    gap = _gap(cause="monolithic", evidence=view.evidence, start_s=t0, facts=view.facts)
    for rules in (lambda s, g: path_rule(s, g, facts), None):
        (a,) = advise([gap], pipeline, rules=rules).advice
        assert (a.setting, a.change, a.guess) == ("[pipeline] enabled", "true", False)
        assert "'starting cuzk engine' line was not read" in a.evidence[-1]
        assert "pipeline_enabled=false" not in a.evidence[-1]


def test_a_stray_monolithic_line_in_a_run_whose_start_line_says_the_pipeline_on_is_no_cause(
) -> None:
    """A 'processing job (monolithic)' line that never ends, in a run whose start line said the
    pipeline on (cuzk writes none then): every later gap of that GPU would have been that
    proof's."""
    stray = [x for x in PIPELINE_OFF_LOG[:10]
             if "monolithic GPU worker started" not in x and "cuzk engine started" not in x
             and "completed successfully" not in x]
    stray = [x.replace("pipeline_enabled=false", "pipeline_enabled=true") for x in stray]
    t0 = _wall("20:00:12")
    view = _pipeline_off_gap(stray, t0, t0 + 22.0)
    assert view.cause == "no_work"
    assert read(stray)[1].pipeline_enabled is True


def test_a_monolithic_proof_on_another_gpu_does_not_explain_this_gpus_gap() -> None:
    """With the pipeline off each GPU has its one worker (engine.rs:1333-1337): GPU 1's proof
    in one call kept GPU 1 busy, not GPU 0."""
    other = [x.replace("gpu=0 job_id", "gpu=1 job_id") for x in PIPELINE_OFF_LOG]
    t0 = _wall("20:00:08")  # from before GPU 1's worker took its proof, at 20:00:10
    assert _pipeline_off_gap(other, t0, t0 + 22.0).cause == "no_work"
    assert _pipeline_off_gap(PIPELINE_OFF_LOG, t0, t0 + 22.0).cause == "monolithic"


def test_a_gap_in_a_post_proved_in_one_call_is_no_sure_case_for_the_pipeline() -> None:
    """post-pipeline-off.log: worker 0 proves winpost-1000-5e6f7a8b in one call at 20:00:50.
    With the pipeline on a PoSt is synthesised, then proved, too (pipeline.rs:3015, 3210):
    turning it on closes such a gap only where other work waits for the GPU meanwhile, so it
    is a guess there (it was advised for sure, with the payoff of closing the gap)."""
    t0 = _wall("20:00:50")
    view = _pipeline_off_gap(PIPELINE_OFF_LOG, t0, t0 + 3.0)
    assert view.cause == "monolithic" and "(winning-post) in one call" in view.evidence[-1]
    facts, pipeline = read(PIPELINE_OFF_LOG)
    gap = _gap(cause="monolithic", evidence=view.evidence, start_s=t0, facts=view.facts)
    for rules in (lambda s, g: path_rule(s, g, facts), None):
        (a,) = advise([gap], pipeline, rules=rules).advice
        assert (a.setting, a.guess) == ("[pipeline] enabled", True)
        assert "only where other work waits for the GPU" in a.guess_why


def _empty_gap_view(lines: list[str]) -> tuple[str | None, list[str], ProverGapFacts]:
    """GPU 0's gap from 14:00:10 (job 7's last partition proved) to 14:00:13.4, as the log
    alone tells it: its cause, evidence and typed facts."""
    facts = PipelineFacts()
    for ev in events_of_lines([ENGINE, FOUR_WORKERS, *lines]):
        facts.feed(ev)
    t0 = _wall("14:00:00")
    view = facts.log_view(0, t0 + 10.0, t0 + 13.4, "host_stall")
    return view.cause, view.evidence, view.facts


def test_a_short_batch_hold_is_said_apart_from_the_synthesis_and_names_max_batch_wait_ms(
) -> None:
    """The request came at 14:00:10.3 and cuzk's batch collector held it 1.0 s
    (max_batch_wait_ms=1000, max_batch_size=2) before its synthesis began at 11.3; the first
    partition was synthesised 2.0 s later. The hold is under half the gap, so the gap is an
    empty pipeline, but the hold was not one synthesis's latency (it read 3.0 s, 'no batch
    held') and the advice named Curio's MaxPending alone, never the wait cuzk added."""
    job = "porep-1000-8"
    held = held_by_the_collector_1_s(job)
    cause, evidence, gap_facts = _empty_gap_view(held)
    assert cause == "empty_pipeline"
    said = " | ".join(evidence)
    assert "cuzk held it 1.0 s in the batch collector" in said
    assert "2.0 s after its synthesis began: one synthesis's latency" in said
    settings = [a.setting for a in advise([_gap(cause=cause, evidence=evidence, facts=gap_facts)],
                                          PipelineView(synth_workers=4)).advice]
    assert settings == ["Curio [Cuzk] MaxPending", "[scheduler] max_batch_wait_ms"]


def test_with_the_pacer_on_an_empty_pipeline_does_not_claim_its_work_was_taken_at_once() -> None:
    """`[pipeline] max_gpu_queue_depth` > 0: cuzk's pacer dispatches one partition a tick and a
    drained pipeline re-enters its bootstrap (engine.rs:1480-1524, 262-266), so the free workers
    do not all take the new work's partitions at once, as the evidence and advice said."""
    pacer = line("GPU queue target dispatch pacer enabled", 0.2, gpu_queue_target=4)
    cause, evidence, gap_facts = _empty_gap_view([pacer, *LAST_OF_JOB_7, *NEXT_JOB_8])
    said = " | ".join(evidence)
    assert cause == "empty_pipeline"
    assert "at once" not in said
    assert "the dispatch pacer on ([pipeline] max_gpu_queue_depth, gpu_queue_target=4)" in said
    (a,) = advise([_gap(cause=cause, evidence=evidence, facts=gap_facts)],
                  PipelineView(synth_workers=4, pacer_target=4)).advice
    assert not any("at once" in e for e in a.evidence)
    assert any("the dispatch pacer is on" in e and "paces the new work" in e
               for e in a.evidence)


def test_an_empty_pipelines_no_work_leaves_a_snapshot_cause_it_does_not_explain() -> None:
    """The log says the wait for the next request was most of the gap (`no_work`, from an empty
    pipeline); /status saw a budget wait, the pacer holding or an SRS load: each its own cause,
    with its own advice, which the log's `no_work` overrode. Over the snapshots' synthesis (the
    new work's, every worker busy on it) it still stands, and a restart's always does."""
    for seen in ("waits_on_budget", "pacer_hold", "srs_loading"):
        assert with_log_cause(seen, "no_work") == seen
        assert with_log_cause(seen, "no_work", spans_restart=True) == "no_work"
    assert with_log_cause("waits_on_synthesis", "no_work") == "no_work"


ONE_WORKER = line("initializing GPU workers", 0.05, num_gpus=1, gpu_workers_per_device=1)


def test_the_gpu_waiting_between_one_workers_proves_is_told_a_second_worker() -> None:
    """cuzk.example.toml: `gpu_workers_per_device = 2` "eliminates the 10-200ms GPU idle gaps
    between partition proves" (config.rs: the default is 2): a second worker does its CPU work
    outside the per-GPU lock while the other holds it. With 1 in the log, the wait inside the
    workers said "no setting"."""
    facts, view = read([ENGINE, ONE_WORKER])
    assert view.gpu_workers_per_device == 1
    for rules in (lambda s, g: path_rule(s, g, facts), None):  # the report's, the dashboard's
        report = advise([_gap(cause="inside_workers")], view, rules=rules)
        assert not report.no_setting
        (a,) = report.advice
        assert (a.setting, a.change, a.guess) == ("[gpus] gpu_workers_per_device",
                                                  "2 (the default)", False)
        assert "'eliminates the 10-200ms GPU idle gaps between partition proves'" in a.why
        assert "It overlaps no copies and no kernels" in a.why
        # The prep thread starts before the lock and runs outside it while its worker waits
        # for the lock (cuzk-log-formats.md 3.2): a second worker's prep overlaps the other's
        # turn, and the GPU's wait for it under the lock (barrier_wait) shrinks; it does not stay.
        assert "prep_msm, started before the lock and run outside it" in a.why
        assert "stays" not in a.why
        assert "cuzk.example.toml" in a.source and "config.rs" in a.source
        assert any("says gpu_workers_per_device=1" in e for e in a.evidence)
        # A worker free while a partition waited: the dispatch, not the worker's own work; a
        # second worker would wait on it the same.
        (d,) = advise([_gap(cause="dispatch_stall")], view, rules=rules).no_setting
        assert d.why.startswith("no cuzk setting")
    # Two workers already (the default): no setting, as before.
    facts2, view2 = read([ENGINE, line("initializing GPU workers", 0.05, num_gpus=1,
                                       gpu_workers_per_device=2)])
    (n,) = advise([_gap(cause="inside_workers")], view2,
                  rules=lambda s, g: path_rule(s, g, facts2)).no_setting
    assert "no setting is shown to close it" in n.why


def test_a_wait_on_the_jobtracker_mutex_gets_no_second_worker_but_a_synchronous_prove_does(
) -> None:
    """Every GPU worker takes cuzk's JobTracker mutex twice at pickup (engine.rs:3031, 3047):
    where the log shows the wait there (CUZK_VALIDATE_PARTITIONS=1, or long fail_check_ms), a
    second worker per GPU would wait on it the same, as for a dispatch stall. With
    CUZK_DISABLE_SPLIT_PROVE=1 one worker holds the GPU idle through b_g2_msm and the epilogue,
    which a second overlaps: it stays beside the knob."""
    view = read([ENGINE, ONE_WORKER])[1]
    validate = facts_of([ENGINE, ONE_WORKER,
                         line("CUZK_VALIDATE_PARTITIONS=1: validating per-partition verifier "
                              "against known-good proof", 2.0)])
    report = advise([_gap(cause="inside_workers")], view,
                    rules=lambda s, g: path_rule(s, g, validate))
    assert [a.setting for a in report.advice] == ["env CUZK_VALIDATE_PARTITIONS"]
    tracker = facts_of([ENGINE, ONE_WORKER,
                        line("GPU_TIMING hot_path pre-prove overhead", 3.0, status_ms=0,
                             fail_check_ms=1800, mark_busy_ms=0, total_overhead_ms=1800)])
    report = advise([_gap(cause="inside_workers")], view,
                    rules=lambda s, g: path_rule(s, g, tracker))
    assert report.advice == []
    (said,) = report.no_setting
    assert "after pickup GPU workers wait on cuzk's JobTracker mutex" in said.why
    sync = dataclasses.replace(facts_of([ENGINE, ONE_WORKER]), split_prove_disabled=True)
    report = advise([_gap(cause="inside_workers")], view,
                    rules=lambda s, g: path_rule(s, g, sync))
    assert [a.setting for a in report.advice] == ["env CUZK_DISABLE_SPLIT_PROVE",
                                                  "[gpus] gpu_workers_per_device"]


def test_with_the_pipeline_off_no_second_gpu_worker_is_advised() -> None:
    """With the pipeline off cuzk runs one GPU worker per GPU whatever the setting
    (engine.rs:1333-1337): `[pipeline] enabled = true` is the advice, never 2 workers."""
    off = [line("starting cuzk engine", 0.0, pipeline_enabled="false"), ONE_WORKER]
    facts, view = read(off)
    assert view.pipeline_enabled is False and view.gpu_workers_per_device == 1
    for rules in (lambda s, g: path_rule(s, g, facts), None):
        (a,) = advise([_gap(cause="inside_workers")], view, rules=rules).advice
        assert (a.setting, a.change) == ("[pipeline] enabled", "true")
        assert any("setting it to 2 changes nothing" in e for e in a.evidence)
        report = advise([_gap(cause="inside_workers")], view, rules=rules)
        assert "[gpus] gpu_workers_per_device" not in [x.setting for x in report.advice]


def test_two_stalls_pulling_the_budget_opposite_ways_are_said_with_which_to_change_first() -> None:
    """A budget wait wants the budget raised (or, with "auto", safety_margin lowered); a pinned
    pool failure wants safety_margin raised: the budget lowered. Both rows stay, each with its
    idle; the advice says they pull one knob apart, which stall cost more idle, to change that
    first and measure again. Before, the two sat side by side unremarked."""
    facts, view = read([ENGINE])
    t0 = 1_778_594_400.0
    budget = [_gap(cause="waits_on_budget", start_s=t0 + 10 * i) for i in range(3)]
    pool = [_gap(kind="pcie_starved", cause="pinned_pool", start_s=t0 + 100.0)]
    report = advise([*budget, *pool], view, rules=lambda s, g: path_rule(s, g, facts))
    rows = [(a.stall, a.setting, a.idle_s) for a in report.advice]
    assert ("waits_on_budget", "[memory] total_budget", 3.0) in rows
    assert ("pinned_pool", "[memory] safety_margin", 1.0) in rows
    (c,) = report.conflicts
    assert c.knob == "[memory] total_budget"
    assert ([a.stall for a in c.raising], [a.stall for a in c.lowering]) == (
        ["waits_on_budget"], ["pinned_pool"])
    assert c.first.stall == "waits_on_budget"
    said = "\n".join(advice_lines(report))
    assert "conflict: [memory] total_budget is pulled both ways" in said
    assert "(3 gap(s), 3.0 s idle) wants it up: [memory] total_budget: raise it" in said
    assert "(1 gap(s), 1.0 s idle) wants it down: [memory] safety_margin: raise it" in said
    assert "(which moves [memory] total_budget down)" in said
    assert ("cost the most idle (3.0 s): change [memory] total_budget for it first, then "
            "measure again (gapwatch compare BEFORE AFTER") in said
    (j,) = advice_json(report)["advice_conflicts"]
    assert (j["knob"], j["first"]["stall"]) == ("[memory] total_budget", "waits_on_budget")
    assert [x["stall"] for x in j["lowering"]] == ["pinned_pool"]


def test_a_windows_note_counts_the_starts_inside_the_window() -> None:
    """A 30 s window between two restarts said "cuzk started 3 times in the log read" beside
    "0 restart(s)": the note counted the starts of the log read around the window. A window's
    note counts the starts inside it; a whole report's, the log read's."""
    starts = [at(clock, ENGINE) for clock in ("14:00:00", "14:10:00", "14:20:00")]

    def notes(window: tuple[float | None, float | None] | None) -> list[str]:
        seen = PathsSeen(window)
        for ev in events_of_lines(starts):
            seen.feed_log(ev)
        return [n for n in path_notes(seen.result()) if n.startswith("cuzk started")]

    assert notes(None) == [
        "cuzk started 3 times in the log read: each start begins with an unpinned first wave "
        "and reloads its SRS"]
    assert notes((_wall("14:12:00"), _wall("14:12:30"))) == []
    assert notes((_wall("14:05:00"), None)) == [
        "cuzk started 2 times in the window: each start begins with an unpinned first wave "
        "and reloads its SRS"]
    # `--until` is not in the window (as its records are not): the start at 14:20 is after it.
    assert notes((_wall("14:00:00"), _wall("14:20:00"))) == [
        "cuzk started 2 times in the window: each start begins with an unpinned first wave "
        "and reloads its SRS"]
