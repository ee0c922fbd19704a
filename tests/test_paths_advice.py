"""Advice on every path upstream cuzk really takes (curio e0294b0f; cuzk-upstream-paths.md):
each built from cuzk's own lines (tests/data/cuzk-upstream/cuzk.log, one line per logging site,
named by its upstream file:line in expected.json), each giving its setting with evidence and
source, or "no setting" with why in one sentence."""

from __future__ import annotations

import json
import re
from pathlib import Path

from parsed_logs import events_of_lines

from gapwatch.core.evidence_types import EventEvidence
from gapwatch.core.models import Gap
from gapwatch.cuzk.advice import advice_json, advice_lines, advise, stall_of
from gapwatch.cuzk.errors import error_event
from gapwatch.cuzk.paths import PathFacts, PathsSeen, path_notes, path_rule
from gapwatch.cuzk.pipeline import PipelineFacts, PipelineView
from gapwatch.cuzk.settings import SettingsSeen, advised_change, changes
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
         warned_s: float | None = None) -> Gap:
    """A gap; its `warnings` are log events at `warned_s` (default: its start)."""
    at_s = start_s if warned_s is None else warned_s
    return Gap(gap_id=1, gpu=0, kind=kind, start_mono_ns=10**10, start_s=start_s,  # type: ignore[arg-type]
               end_mono_ns=2 * 10**10, end_s=start_s + 1.0, duration_s=1.0,
               pcie_rx_bytes_per_s=2e9, pcie_tx_bytes_per_s=1e6, link_bytes_per_s=63e9,
               log_events=[EventEvidence(at_s, "", warning=w) for w in warnings],
               prover_cause=cause,
               prover_evidence=evidence or [])


ENGINE = line("starting cuzk engine", 0.0, pipeline_enabled="true")


def test_a_batch_of_porep_requests_is_told_max_batch_size_1() -> None:
    # engine.rs:1892 (the dispatcher's settings), engine.rs:2665 (a monolithic SYNTH_START).
    facts = facts_of([ENGINE, line("synthesis dispatcher started (budget-gated)", 0.1,
                                      max_batch_size=2),
                         timeline(5000, "SYNTH_START", "porep-1000-7", "kind=porep-c2")])
    assert facts.batches == 1 and facts.max_batch_size == 2
    gap = _gap(cause="monolithic", evidence=[
        "porep-c2 job porep-1000-7 synthesising during the gap (TIMELINE SYNTH_START "
        "kind=porep-c2): monolithic work /status never lists"])
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
                                             "GPU during the gap (TIMELINE ...)"])
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


def test_disable_split_prove_is_detected_and_said_with_the_lock_attribution_off() -> None:
    starts = [timeline(1000 + i, "GPU_START", "porep-1000-7", f"worker=0,partition={i}")
              for i in range(4)]
    facts = facts_of([ENGINE, *starts])
    assert facts.split_prove_disabled
    notes = path_notes(facts)
    assert any("CUZK_DISABLE_SPLIT_PROVE=1" in n and "lock attribution" in n for n in notes)
    (a,) = advise([_gap(cause="inside_workers")], PipelineView(),
                  rules=lambda s, g: path_rule(s, g, facts)).advice
    assert a.setting == "env CUZK_DISABLE_SPLIT_PROVE"
    # With the split-prove line there (engine.rs:3139), nothing is said.
    with_split = facts_of([ENGINE, *starts, line("GPU_TIMING spawn_blocking prove_start",
                                                    4.0)])
    assert not with_split.split_prove_disabled


def test_a_log_at_warn_level_infers_no_disable_split_prove_and_no_unseen_info_line() -> None:
    # `[logging] level = "warn"` or RUST_LOG=warn (cuzk-daemon main.rs:54-61): WARN and ERROR
    # lines and TIMELINE (stderr, engine.rs:352) remain, and no INFO line at all, the
    # split-prove line (engine.rs:3139) and CUZK_VALIDATE_PARTITIONS's (engine.rs:533) among them.
    warns = [line(n, 0.5) for n in LINES if " is deprecated" in n]
    warns += [line("assembler not found, discarding partition result", 2.0),
              line("partition GPU proving failed", 3.0)]
    starts = [timeline(1000 + i, "GPU_START", "porep-1000-7", f"worker=0,partition={i}")
              for i in range(4)]
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
    batch, pending = advise([_gap(cause="no_work")], PipelineView(),
                            rules=lambda s, g: path_rule(s, g, facts)).advice
    assert batch.setting == "[scheduler] max_batch_size" and batch.change.startswith("1")
    assert "max_batch_wait_ms" in batch.change and "engine.rs:1984-2011, 2053" in batch.source
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
    assert changed["srs.preload (deprecated, ignored)"] == ("set", None)
    assert "[gpus] gpu_workers_per_device" not in changed


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
        no_work = advise([_gap(cause="no_work")], off, rules=rules).advice
        assert [x.setting for x in no_work] == ["[pipeline] enabled", "Curio [Cuzk] MaxPending"]
        assert no_work[0].guess and "lists no job in /status" in no_work[0].guess_why


OVER_BUDGET = "acquire request exceeds total budget — will block until possible"


def _pipeline_facts(lines: list[str]) -> PipelineFacts:
    facts = PipelineFacts()
    for ev in events_of_lines(lines):
        facts.feed(ev)
    return facts


def test_a_request_over_the_whole_budget_explains_the_idle_until_cuzk_restarts() -> None:
    # memory.rs:187-236: a request over the total WARNs once, then loops until used + amount
    # fits the total, which never holds. gapwatch compared the message without its "— will
    # block until possible", so the line was never read.
    t0 = 1_778_594_400.0
    facts = _pipeline_facts([ENGINE, line(OVER_BUDGET, 1.0, amount_gib=136, total_gib=120)])
    view = facts.log_view(0, t0 + 40.0, t0 + 41.0, "host_stall")
    assert view.cause == "waits_on_budget"
    (said,) = view.evidence
    assert "a 136 GiB budget request exceeds cuzk's 120 GiB total budget" in said
    assert "waits until cuzk restarts" in said
    gap = _gap(cause="waits_on_budget", evidence=view.evidence, start_s=t0 + 40.0)
    report = advise([gap], facts.view())
    assert [(a.setting, a.change.split(" (")[0]) for a in report.advice] == [
        ("[memory] total_budget", "raise it above 136 GiB, the request's size"),
        ("[scheduler] max_batch_size", "1")]  # 136 GiB is a PoRep batch's (memory.rs:41)
    # The request died with the process: after a restart the idle has other causes.
    restarted = _pipeline_facts([ENGINE, line(OVER_BUDGET, 1.0, amount_gib=136, total_gib=120),
                                 line("starting cuzk engine", 50.0, pipeline_enabled="true")])
    assert restarted.log_view(0, t0 + 60.0, t0 + 61.0, "host_stall").cause is None


def test_a_request_over_the_whole_budget_is_a_prover_error_event() -> None:
    (ev,) = LogParser().parse_line(line(OVER_BUDGET, 1.0, amount_gib=30, total_gib=20), "stdout")
    said = error_event(ev)
    assert said is not None and said.level == "error"
    assert "a 30 GiB budget request exceeds cuzk's 20 GiB total budget" in said.message
