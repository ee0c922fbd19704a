"""What to change: each stall cuzk can have gets the cuzk setting that closes it (from upstream's
own documentation), its evidence and payoff, and says when it is a guess; a stall no setting
closes gets none. On the real H200 recordings: a setting for the pageable and the host-stall
cases, with their evidence, none for chained."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gapwatch.config import Config
from gapwatch.core.evidence_types import EventEvidence, HostEvidence, ProverState
from gapwatch.core.models import Gap
from gapwatch.core.payoff import IfClosed, if_closed
from gapwatch.core.units import GIB
from gapwatch.cuzk.advice import advice_json, advice_lines, advise, stall_of
from gapwatch.cuzk.first_wave import FirstWave
from gapwatch.cuzk.pipeline import PipelineView, PoolState
from gapwatch.cuzk.prover import view_of
from gapwatch.offline.report import build_report, to_json

E2E = Path(__file__).parent / "data" / "h200-e2e"


def _gap(gap_id: int = 1, kind: str = "host_stall", cause: str | None = None,
         states: list[ProverState] | None = None, evidence: list[str] | None = None,
         warnings: tuple[str, ...] = (), psi: float | None = None,
         duration_s: float = 1.0) -> Gap:
    return Gap(gap_id=gap_id, gpu=0, kind=kind, start_mono_ns=gap_id * 10**10,  # type: ignore[arg-type]
               start_s=1_796_000_000.0 + gap_id * 10, end_mono_ns=gap_id * 10**10 + 10**9,
               end_s=1_796_000_001.0 + gap_id * 10, duration_s=duration_s,
               pcie_rx_bytes_per_s=1e6, pcie_tx_bytes_per_s=1e6, link_bytes_per_s=63e9,
               host=HostEvidence(psi_mem_some_share_max=psi),
               log_events=[EventEvidence(0.0, "", partition=3, warning=w) for w in warnings],
               prover_cause=cause, prover_states=states or [],
               prover_evidence=evidence or [])


def _state(synthesizing: int, workers: int | None, total_gib: int | None = 750,
           cause: str = "waits_on_synthesis") -> ProverState:
    return ProverState(0.0, "cuzk", cause=cause, synthesizing=synthesizing,
                       synthesis_workers=workers,
                       memory_total_bytes=total_gib * GIB if total_gib else None)


def _settings(gaps: list[Gap], view: PipelineView | None = None) -> list[tuple[str, bool]]:
    return [(a.setting, a.guess) for a in advise(gaps, view or PipelineView()).advice]


def test_every_synthesis_worker_busy_under_the_cap_raises_max_parallel_synthesis() -> None:
    gaps = [_gap(i, cause="waits_on_synthesis", states=[_state(18, 18)],
                 evidence=["18 of 18 synthesis workers busy"]) for i in range(3)]
    (a,) = advise(gaps, PipelineView(synth_workers=18)).advice
    assert (a.setting, a.guess, a.gaps, a.idle_s) == ("[pipeline] max_parallel_synthesis",
                                                      False, 3, 3.0)
    assert "raise it above 18" in a.change and "config.rs" in a.source
    assert "18 of 18 synthesis workers busy" in a.evidence


def test_a_budget_that_allows_only_these_workers_raises_the_budget() -> None:
    # 10 workers on a 140 GiB budget: 140 / 14 = 10, below max_parallel_synthesis's 18.
    gaps = [_gap(cause="waits_on_synthesis", states=[_state(10, 10, total_gib=140)])]
    assert _settings(gaps) == [("[memory] total_budget", False)]


def test_without_the_worker_count_both_remedies_are_a_guess() -> None:
    gaps = [_gap(cause="waits_on_synthesis", states=[_state(1, None, None)])]
    report = advise(gaps, PipelineView())
    assert [(a.setting, a.guess) for a in report.advice] == [
        ("[pipeline] max_parallel_synthesis", True), ("[synthesis] threads", True)]
    assert "could not tell how many synthesis workers" in report.advice[0].guess_why


def _pipeline_of(*lines: str) -> PipelineView:
    """The pipeline view cuzk's start lines give, read as `gapwatch report --log` reads them."""
    from gapwatch.cuzk.pipeline import PipelineFacts
    from gapwatch.logs.parse import LogParser

    head = "2026-12-05T23:38:34.761321Z  INFO cuzk_core::engine: "
    parser, facts = LogParser(offline=True), PipelineFacts()
    for i, line in enumerate(lines):
        for e in parser.parse_line(head + line, "stdout.log", i, 0.0):
            facts.feed(e)
    return facts.view()


#: The H100 host-stall run's start lines (/tmp/realdata/h200-e2e-h100, stdout.log lines 1, 5).
H100_BUDGET_LINE = "memory budget initialized total_budget_gib=512"
H100_PIPELINE_LINE = ("starting pipeline: synthesis task + GPU workers (budget-gated) "
                      "configured_lookahead=1 max_partitions_in_budget=36 "
                      "effective_lookahead=32 synth_worker_count=2 num_gpus=2")


def test_a_worker_count_the_log_gave_is_named_where_no_snapshot_said_how_many_were_busy(
        ) -> None:
    """The H100 host-stall run (log only, no /status): its stdout.log line 5 says
    `synth_worker_count=2`, the budget line 512 GiB (36 partitions), and gapwatch parses both;
    its advice said "gapwatch could not tell how many synthesis workers cuzk runs (no
    'starting pipeline ... synth_worker_count' line in the log read ...)" and "raise it (0 =
    18) if every synthesis worker was busy": the branch for no snapshot read the log's count
    as unknown. The count is named, with the limit the log's budget shows (the cap, not the
    budget: 2 < 512 / 14); that both were busy is still not known: a guess that says so."""
    view = _pipeline_of(H100_BUDGET_LINE, H100_PIPELINE_LINE)
    assert (view.synth_workers, view.budget_total_bytes) == (2, 512 * GIB)
    report = advise([_gap(i, cause="waits_on_synthesis") for i in range(3)], view)
    first = report.advice[0]
    assert [(a.setting, a.guess) for a in report.advice] == [
        ("[pipeline] max_parallel_synthesis", True), ("[synthesis] threads", True)]
    assert first.change.startswith("raise it above 2 (0 = 18)"), first.change
    assert first.guess_why is not None
    assert "could not tell how many" not in first.guess_why
    assert "no 'starting pipeline" not in first.guess_why
    assert "synth_worker_count=2" in first.guess_why
    assert "no /status snapshot" in first.guess_why and "if both were," in first.guess_why
    assert "the budget (512.0 GiB) allows 36" in first.why
    # Where the log's budget is the limit (10 workers of a 140 GiB budget), the budget.
    tight = advise([_gap(cause="waits_on_synthesis")],
                   PipelineView(synth_workers=10, budget_total_bytes=140 * GIB))
    assert [(a.setting, a.guess) for a in tight.advice] == [
        ("[memory] total_budget", True), ("[synthesis] threads", True)]
    # The count known, the budget not: which of the two limits is not known either.
    loose = advise([_gap(cause="waits_on_synthesis")], PipelineView(synth_workers=4))
    assert [a.setting for a in loose.advice] == [
        "[pipeline] max_parallel_synthesis", "[memory] total_budget", "[synthesis] threads"]
    assert loose.advice[0].change.startswith("raise it above 4")


def test_free_synthesis_workers_never_get_more_workers() -> None:
    gaps = [_gap(cause="waits_on_synthesis", states=[_state(4, 18)])]
    settings = [s for s, _ in _settings(gaps, PipelineView(synth_workers=18))]
    assert "[pipeline] max_parallel_synthesis" not in settings
    assert settings == ["[synthesis] threads", "[gpus] gpu_threads"]


def test_host_memory_pressure_makes_more_synthesis_a_guess_and_names_gpu_threads() -> None:
    gaps = [_gap(cause="waits_on_synthesis", states=[_state(18, 18)], psi=0.4)]
    assert _settings(gaps) == [("[pipeline] max_parallel_synthesis", True),
                               ("[gpus] gpu_threads", True)]


def test_each_stall_gets_its_setting_or_says_why_none() -> None:
    budget = advise([_gap(cause="waits_on_budget")], PipelineView()).advice
    # Not eviction_min_idle: the PoRep PCE is touched every job and never idles.
    assert [a.setting for a in budget] == ["[memory] total_budget"]
    assert "eviction_min_idle frees nothing" in budget[0].evidence[-1]
    pacer = advise([_gap(cause="pacer_hold")], PipelineView(pacer_target=8)).advice
    assert [(a.setting, a.change) for a in pacer] == [
        ("[pipeline] max_gpu_queue_depth", "raise it above 8, or 0 to turn the pacer off")]
    reload = advise([_gap(cause="srs_loading")], PipelineView(srs_evictions=("porep-32g",)))
    assert [a.setting for a in reload.advice] == ["[memory] eviction_min_idle"]
    first_load = advise([_gap(cause="srs_loading")], PipelineView())
    assert not first_load.advice and "on demand" in first_load.no_setting[0].why
    post = advise([_gap(cause="monolithic")], PipelineView())
    assert not post.advice and "monolithic and unpinned by design" in post.no_setting[0].why
    off = advise([_gap(cause="monolithic")], PipelineView(pipeline_enabled=False))
    assert [(a.setting, a.change) for a in off.advice] == [("[pipeline] enabled", "true")]
    for cause in ("dispatch_stall", "no_work"):
        assert not advise([_gap(cause=cause)], PipelineView()).advice


def test_each_setting_says_which_way_it_moves_typed_as_its_words_say() -> None:
    """A headline has no room for a change's conditions ("raise it if total_budget is
    \"auto\" ..."): each advice carries its step, typed where its setting is written, and the
    step agrees with the words beside it: where they say two ways, the step claims neither
    (`change`)."""
    pool = PipelineView(pool=PoolState(checkout_failed=3))
    cases = [
        (_gap(kind="pcie_starved", warnings=("pinned_pool_fallback",)), pool),
        (_gap(cause="waits_on_budget"), PipelineView()),
        (_gap(cause="pacer_hold"), PipelineView(pacer_target=8)),
        (_gap(cause="srs_loading"), PipelineView(srs_evictions=("porep-32g",))),
        (_gap(cause="monolithic"), PipelineView(pipeline_enabled=False)),
        (_gap(cause="batch_wait"), PipelineView()),
        (_gap(cause="empty_pipeline"), PipelineView()),
        (_gap(cause="waits_on_synthesis"), PipelineView()),
        (_gap(kind="transfer_bound"), PipelineView(gpu_workers_per_device=1)),
        (_gap(kind="transfer_bound"), PipelineView()),
        (_gap(cause="inside_workers"), PipelineView(gpu_workers_per_device=1)),
    ]
    said = {}
    for gap, view in cases:
        for a in advise([gap], view).advice:
            assert a.step is not None, a.setting
            if a.step.value is not None:
                assert a.change.startswith(a.step.value), (a.setting, a.change)
            elif a.step.verb == "change":  # conditional: its words say more than one way
                ways = [w for w in ("raise", "lower", "leave") if w in a.change]
                assert len(ways) >= 2, (a.setting, a.change)
            else:
                assert a.step.verb in a.change, (a.setting, a.change)
                # Never the other way of the setting itself ("raise it ... or lower it").
                other = {"raise": "lower it", "lower": "raise it"}.get(a.step.verb)
                assert other is None or other not in a.change, (a.setting, a.change)
            said[(a.stall, a.setting)] = a.step.words(a.setting)
    # Its way rests on total_budget being "auto", which no log line says: said with it.
    assert said[("pinned_pool", "[memory] safety_margin")] == (
        "raise [memory] safety_margin (or lower total_budget if not auto)")
    assert said[("pinned_pool", "[pipeline] max_parallel_synthesis")] == (
        "lower [pipeline] max_parallel_synthesis")
    assert said[("batch_wait", "[scheduler] max_batch_size")] == (
        "set [scheduler] max_batch_size = 1")
    assert said[("batch_wait", "[scheduler] max_batch_wait_ms")] == (
        "lower [scheduler] max_batch_wait_ms")
    assert said[("monolithic", "[pipeline] enabled")] == "set [pipeline] enabled = true"
    # Conditional changes claim no direction: 0 threads is every CPU ("raise" from the
    # default gives fewer); the budget's default is "auto" (its margin is what changes).
    assert said[("waits_on_budget", "[memory] total_budget")] == "change [memory] total_budget"
    assert said[("waits_on_synthesis", "[synthesis] threads")] == "change [synthesis] threads"
    assert said[("copies_not_overlapped", "[gpus] gpu_workers_per_device")] == (
        "set [gpus] gpu_workers_per_device = 2")


def test_pageable_copies_by_a_failed_pool_name_the_budget_margin_as_a_guess() -> None:
    pool = PoolState(total_gib=0.0, buffers=0, free=0, checkout_failed=3)
    gaps = [_gap(kind="pcie_starved", warnings=("pinned_pool_fallback",))]
    assert stall_of(gaps[0], PipelineView(pool=pool)) == "pinned_pool"
    report = advise(gaps, PipelineView(pool=pool))
    # A pool holding 0 GiB pinned not one buffer: fewer partitions is no remedy (the pool is
    # not in the budget they free), so the synthesis cap is not advised.
    assert [(a.setting, a.guess) for a in report.advice] == [("[memory] safety_margin", True)]
    assert "not budget-checked" in report.advice[0].why
    assert "idle ones stay pinned outside any accounting" in report.advice[0].why
    # cuzk reads safety_margin only with total_budget = "auto" (config.rs:100-104): "raise it
    # (or lower total_budget)" sent an operator with an explicit budget to a no-op.
    margin = report.advice[0].change
    assert 'if total_budget is "auto"' in margin and "explicit total_budget, lower that" in margin
    # No memlock setting: nothing upstream ties cudaHostAlloc to it.
    assert not any("MEMLOCK" in a.setting.upper() for a in report.advice)


def test_first_syntheses_unpinned_by_design_get_no_setting() -> None:
    pool = PoolState(first_syntheses=1)
    gaps = [_gap(kind="pcie_starved", warnings=("unpinned",))]  # its unpinned line at t=0
    # A gap is a first wave's when its unpinned partition falls in a wave's window (any run's,
    # any circuit type's): a count of first syntheses somewhere in the log no longer says so.
    wave = FirstWave(None, "porep-32g", start_s=0.0, end_s=30.0, syntheses=1, hinted_s=30.0)
    report = advise(gaps, PipelineView(pool=pool, first_waves=(wave,)))
    assert not report.advice and report.no_setting[0].stall == "first_synthesis"
    assert "first wave of porep-32g" in report.no_setting[0].why
    over = FirstWave(None, "porep-32g", start_s=-100.0, end_s=-70.0, syntheses=1, hinted_s=-70.0)
    assert stall_of(gaps[0], PipelineView(pool=pool, first_waves=(over,))) == "pageable_copies"


def test_transfer_bound_copies_run_under_the_gpu_lock_so_no_worker_count_overlaps_them() -> None:
    """cuzk's one mutex per GPU covers the H2D of a/b/c and every kernel (groth16_cuda.cu:
    900-1070; cuzk-log-formats.md 3.2): a worker's copies never overlap another's kernels.
    Before, the advice said "with 2 workers one worker's copies ... overlap the other's kernels"
    and, with 2, that each copy "outlasts the other worker's kernels"."""
    gaps = [_gap(kind="transfer_bound")]
    two = advise(gaps, PipelineView(gpu_workers_per_device=2))
    (n,) = two.no_setting
    assert not two.advice and n.why.startswith("already 2 GPU workers per GPU")
    assert "no worker count overlaps these copies" in n.why
    assert "groth16_cuda.cu:900-1070" in n.why and "upstream names no setting" in n.why
    assert "outlasts" not in n.why
    # With one worker a second is still named, for the one idle it can close (the CPU work
    # between proves), never for the copies: a guess, since the samples do not tell them apart.
    (a,) = advise(gaps, PipelineView(gpu_workers_per_device=1)).advice
    assert (a.setting, a.change, a.guess) == ("[gpus] gpu_workers_per_device",
                                              "2 (the default)", True)
    assert "closes only the part of them that was the one worker's CPU work between proves" \
        in a.guess_why
    assert "It overlaps no copies and no kernels" in a.why and "10-200ms" in a.why
    for words in (a.why, a.guess_why):
        assert "overlap the other's kernels" not in words
    (unknown,) = advise(gaps, PipelineView()).advice
    assert (unknown.change, unknown.guess) == ("2, if it is 1", True)
    assert "did not say how many GPU workers" in unknown.guess_why


@pytest.mark.skipif(not E2E.is_dir(), reason="tests/data/h200-e2e not committed")
def test_a_transfer_bound_gaps_hint_asks_no_question_its_advice_answers_no_to() -> None:
    """The H200 transfer-bound run: every gap's hint asked "is the next partition's upload
    chained behind the other worker's kernels?" while the advice for the same gaps said cuzk
    holds one mutex per GPU from the H2D copies through the kernels (groth16_cuda.cu:900-1070),
    so one worker's copies never overlap another's kernels. Where the cuzk layer knows the
    prover is cuzk, its words stand in the hint in place of the question, and the advice says
    the same fact."""
    from gapwatch.cuzk.pipeline import COPIES_NEVER_OVERLAP

    report = build_report(E2E / "transfer-bound" / "rec.jsonl.gz", Config())
    gaps = [g for g in report.gaps if g.kind == "transfer_bound"]
    assert len(gaps) == 18
    for g in gaps:
        assert "?" not in g.hint and "chained behind" not in g.hint, g.hint
        assert "groth16_cuda.cu:900-1070" in g.hint and COPIES_NEVER_OVERLAP in g.hint
    (n,) = report.advice.no_setting
    assert n.stall == "copies_not_overlapped" and COPIES_NEVER_OVERLAP in n.why


def test_a_transfer_bound_gap_with_no_prover_is_asked_about_in_no_provers_words() -> None:
    """The core's hint is for any CUDA workload: with no prover, a transfer_bound gap still has
    its question, in words that name no prover's partitions or workers (it asked whether "the
    next partition's upload" was "chained behind the other worker's kernels")."""
    from gapwatch.core.evidence_types import NO_COPIES, NO_HOST
    from gapwatch.core.explain import Evidence, GapFacts, hint_of

    hint = hint_of(GapFacts("transfer_bound", 1.2, 59e9, 3e9, 63e9, "high"),
                   Evidence(NO_HOST, [], NO_COPIES))
    assert "copies at full speed but not overlapped with compute: " in hint and "?" in hint
    assert "partition" not in hint and "worker" not in hint


def test_transfer_bound_gaps_with_status_inside_workers_are_still_the_copies() -> None:
    """With /status polled, a transfer_bound gap's prover cause is `inside_workers` (its
    workers are proving: copying at line rate). That is the copies, as without /status: one
    GPU worker per GPU gets the same guess (polling /status lost it: "inside the GPU workers
    (CPU prep, the GPU mutex): no setting")."""
    gaps = [_gap(kind="transfer_bound", cause="inside_workers")]
    assert stall_of(gaps[0], PipelineView()) == "copies_not_overlapped"
    assert _settings(gaps, PipelineView(gpu_workers_per_device=1)) == [
        ("[gpus] gpu_workers_per_device", True)]
    two = advise(gaps, PipelineView(gpu_workers_per_device=2))
    assert "already 2 GPU workers" in two.no_setting[0].why
    # A host stall inside the workers is still that.
    assert stall_of(_gap(kind="host_stall", cause="inside_workers"),
                    PipelineView()) == "inside_workers"


def test_the_payoff_is_the_reports_for_those_gaps() -> None:
    assert if_closed(50.0, 100.0, 50.0) == IfClosed(idle_s=50.0, busy_fraction=1.0,
                                                    throughput_gain=2.0, span_s=100.0)
    gaps = [_gap(cause="waits_on_budget", duration_s=2.0)]
    (a,) = advise(gaps, PipelineView(), lambda gs: if_closed(8.0, 10.0, 2.0)).advice
    assert a.payoff == IfClosed(idle_s=2.0, busy_fraction=1.0, throughput_gain=1.25,
                                span_s=10.0)
    text = "\n".join(advice_lines(advise(gaps, PipelineView(),
                                         lambda gs: if_closed(8.0, 10.0, 2.0))))
    assert "payoff if closed: busy → 100 %, throughput ~1.25x over 10 s of GPU time (1 gap)" \
        in text
    doc = advice_json(advise(gaps, PipelineView()))
    assert doc["advice"][0]["setting"] == "[memory] total_budget" and doc["no_setting"] == []


@pytest.mark.skipif(not E2E.is_dir(), reason="tests/data/h200-e2e not committed")
@pytest.mark.parametrize("case", ["pageable", "host-stall", "host-stall-status"])
def test_the_h200_recordings_name_the_setting_with_its_evidence(case: str) -> None:
    doc = to_json(build_report(E2E / case / "rec.jsonl.gz", Config()))
    if case == "pageable":
        # Its pool failed with ~91 GiB of the host's 125.9 GiB available: not RAM, so no
        # [memory] safety_margin (it told the operator to free RAM that was free); its log
        # names no budget, and its pool held 0 GiB (no cap): no setting, and what else to
        # look at (tests/test_pinned_pool_host.py).
        assert not [a for a in doc["advice"] if a["stall"] == "pinned_pool"]
        (pool,) = [n for n in doc["no_setting"] if n["stall"] == "pinned_pool"]
        assert pool["why"].startswith("not RAM: MemAvailable was at least ")
        assert "max_parallel_synthesis is not advised" in pool["why"]
        return
    assert doc["advice"], case
    first = doc["advice"][0]
    want = {"host-stall": ("waits_on_synthesis", "[pipeline] max_parallel_synthesis"),
            "host-stall-status": ("waits_on_synthesis", "[pipeline] max_parallel_synthesis")}
    assert (first["stall"], first["setting"]) == want[case]
    assert first["evidence"] and first["payoff"]["throughput_gain"] > 1.5
    # The load generator's log never says its synthesis worker count: a guess, said so.
    assert first["guess"] and first["guess_why"]
    assert any("no partition was queued for the GPU" in e or "synth_done" in e
               for e in first["evidence"])


def test_a_load_that_logs_its_synthesis_workers_gets_advice_that_is_no_guess() -> None:
    """The H200 host-stall run of 2026-12-02 01:08 UTC (bench/cuzk_status_h200.py, the load
    generator serving /status with upstream's semantics, running and logging cuzk's own
    `synth_worker_count` = max(2, ...) = 2 in its `starting pipeline ...` line): the worker
    count comes from the log, so the advice is definite, and its evidence says why
    `max_concurrent` is not that count."""
    case = Path(__file__).parent / "data" / "h200-cuzk-status" / "host-stall-status"
    doc = to_json(build_report(case / "rec.jsonl.gz", Config()))
    assert [g["prover_cause"] for g in doc["gaps"]] == ["waits_on_synthesis"] * 8
    first = doc["advice"][0]
    assert (first["stall"], first["setting"]) == ("waits_on_synthesis",
                                                  "[pipeline] max_parallel_synthesis")
    assert first["guess"] is False and first["guess_why"] is None
    assert any(e.startswith("2 of 2 synthesis workers busy") and "synth_worker_count in the log"
               in e for e in first["evidence"])
    assert any("max_concurrent=56 is the memory budget" in e for e in first["evidence"])
    assert first["payoff"]["throughput_gain"] > 1.5


@pytest.mark.skipif(not E2E.is_dir(), reason="tests/data/h200-e2e not committed")
def test_the_chained_h200_recording_gets_no_setting() -> None:
    doc = to_json(build_report(E2E / "chained" / "rec.jsonl.gz", Config()))
    assert doc["advice"] == [] and doc["no_setting"] == []


def test_summary_md_and_the_help_screen_say_what_to_change(tmp_path: Path) -> None:
    from ui_fakes import WALL0_S, fill_breakdown, header, make_config

    from gapwatch.core.fmt import markdown
    from gapwatch.engine.store import SeriesStore
    from gapwatch.sinks.snapshot import write_snapshot
    from gapwatch.ui.widgets.help_screen import HelpScreen

    store = SeriesStore(list(header().gpus), period_s=0.1, history_s=600)
    fill_breakdown(store)
    # What cuzk's log says about its pinned pool (curio e0294b0f pipeline.rs:302).
    from gapwatch.logs.parse import LogParser

    (ev,) = LogParser().parse_line(
        f"2026-11-30T09:06:{30:02d}.000000Z  WARN cuzk_core::pipeline: pinned pool checkout "
        "FAILED \u2014 falling back to unpinned num_constraints=130278869 pool_free=0 "
        "pool_total_gib=11.6", "stdout")
    store.append_log(ev)
    snap = store.snapshot()
    path = write_snapshot(tmp_path, snap, header(), make_config(tmp_path),
                          t_wall_s=WALL0_S + 61)
    summary = (path / "summary.md").read_text()
    section = summary.split("## What to change", 1)[1]
    # As Markdown text (`fmt.markdown`: the brackets escaped).
    assert markdown('[memory] safety_margin: raise it if total_budget is "auto"') in section
    assert "a guess: upstream does not say why cudaHostAlloc fails" in section
    assert re.search(r"payoff if closed: throughput \\~\d\.\d\dx over \d+ s of GPU time "
                     r"\(\d+ gaps\)", section), section
    closed = [g for g in snap.gaps if g.end_s is not None]
    lines = advice_lines(advise(closed, view_of(snap.pipeline)))
    text = HelpScreen(advice=lines).text()
    assert "what to change (cuzk's settings, for the PoSt and gaps so far)" in text
    assert "[memory] safety_margin" in text


def test_negative_counts_in_cuzks_startup_lines_are_dropped_counted_and_never_advised_on(
        ) -> None:
    """`synth_worker_count=-5`, `gpu_workers_per_device=-2` (cuzk holds them in unsigned
    integers: no count) were taken as given: the capacity was "-5 workers" (advice: "raise it
    above -5"), the advice said "already -2 GPU workers per GPU", compare showed them as the
    settings. Each is dropped (None, never 0) and counted; the advice says which was not
    used; a good field on the same line is kept."""
    from gapwatch.cuzk.pipeline import Capacity, PipelineFacts
    from gapwatch.cuzk.settings import SettingsSeen
    from gapwatch.logs.parse import LogParser

    head = "2026-05-12T14:00:00.041000Z  INFO cuzk_core::engine: "
    text = "\n".join(head + x for x in (
        "memory budget initialized total_budget_gib=750",
        "initializing GPU workers num_gpus=1 gpu_workers_per_device=-2 total_workers=2 gpus=[0]",
        "starting pipeline: synthesis task + GPU workers (budget-gated) synth_worker_count=-5 "
        "max_partitions_in_budget=36 effective_lookahead=-1",
        "GPU queue target dispatch pacer enabled gpu_queue_target=-3",
        "SRS loaded successfully circuit_id=porep-32g elapsed_ms=-5000"))
    # The operator's `[cuzk] max_parallel_synthesis` given (cuzk's default): the formula's cap.
    parser, facts, seen = LogParser(offline=True), PipelineFacts(18), SettingsSeen()
    for i, line in enumerate(text.splitlines()):
        for e in parser.parse_line(line, "x", i, 0.0):
            facts.feed(e)
            seen.feed_log(e)
    assert (facts.synth_workers, facts.gpu_workers_per_device, facts.pacer_target) == (
        None, None, None)
    assert facts.budget_total_bytes == 750 * GIB
    # The capacity comes from cuzk's formula over the budget, never from "-5".
    assert facts.capacity(None) == Capacity(18, "budget")
    [load] = facts.srs_loads
    assert load.elapsed_ms is None and load.start_s == load.end_s  # never placed after its end
    assert len(facts.dropped) == 4
    view = facts.view()
    assert set(view.dropped) == {"gpu_workers_per_device=-2", "synth_worker_count=-5",
                                 "gpu_queue_target=-3", "elapsed_ms=-5000"}
    report = advise([_gap(kind="transfer_bound")], view)
    [a] = report.advice
    assert a.setting == "[gpus] gpu_workers_per_device" and a.guess
    assert a.guess_why is not None and "gpu_workers_per_device=-2 is no count" in a.guess_why
    assert not any("-2" in n.why for n in report.no_setting)
    synth = advise([_gap(cause="waits_on_synthesis")], PipelineView(dropped=view.dropped))
    assert synth.advice[0].guess_why is not None
    assert "synth_worker_count=-5 is no count" in synth.advice[0].guess_why
    settings = seen.result()
    assert "synth_worker_count" not in settings.values
    assert "[gpus] gpu_workers_per_device" not in settings.values
    assert "effective_lookahead" not in settings.values
    assert settings.values["max_partitions_in_budget"] == "36"
    assert settings.values["[memory] total_budget (GiB)"] == "750"
    # gpu_queue_target=-3 too: [pipeline] max_gpu_queue_depth is read from it (engine.rs:1456).
    assert settings.dropped_fields == 4 and "synth_worker_count=-5" in settings.dropped
    assert "[pipeline] max_gpu_queue_depth" not in settings.values
    from types import SimpleNamespace

    from gapwatch.cuzk.settings import ProverSettings
    from gapwatch.offline.compare_format import settings_lines

    lines = settings_lines(SimpleNamespace(  # type: ignore[arg-type]
        before=SimpleNamespace(settings=settings), after=SimpleNamespace(
            settings=ProverSettings()), setting_changes=[], settings_not_shown=[]))
    said = [x for x in lines if "no count" in x]
    assert said and said[0].startswith("  BEFORE: 4 startup field(s) no count, not used: ")
    assert "synth_worker_count=-5" in said[0]


def test_a_negative_pool_size_in_cuzks_lines_is_no_size() -> None:
    """`pinned pool: allocated new buffer ... total_gib=-20` was taken as given: the pool held
    less than nothing. A negative size is dropped and counted, as a negative count is."""
    from gapwatch.cuzk.pipeline import PipelineFacts
    from gapwatch.logs.parse import LogParser

    head = "2026-05-12T14:00:00.041000Z  INFO cuzk_core::pinned_pool: "
    parser, facts = LogParser(offline=True), PipelineFacts()
    for i, line in enumerate((head + "pinned pool: allocated new buffer size_gib=3.9 "
                              "total_buffers=1 total_gib=-20",)):
        for e in parser.parse_line(line, "x", i, 0.0):
            facts.feed(e)
    assert facts.pool.total_gib is None and facts.pool.buffers == 1
    assert facts.dropped == {"total_gib": -20.0}


def test_a_host_stall_of_no_known_cause_is_said_once_and_sends_no_one_to_a_log_they_follow() -> None:
    """The line read `the GPU waited on the host (no cause known): no setting: no cause known:
    poll cuzk's /status ... and follow its log`: the cause said twice, and "follow its log"
    where the log was followed and still named no cause."""
    (line,) = advice_lines(advise([_gap(i) for i in range(3)], PipelineView()), indent="")
    assert line == ("3 gap(s), 3.0 s idle: the GPU waited on the host (no cause known): "
                    "no setting: cuzk's log (--log) and /status (--cuzk-status) name most waits "
                    "where they are read; none named these")


def test_more_synthesis_workers_and_fewer_partitions_in_flight_are_said_to_conflict() -> None:
    """Every synthesis worker busy below the budget's limit wants max_parallel_synthesis
    raised; a pinned pool that could not pin wants it lowered. The stall that cost more idle
    is named first; stalls that pull one knob the same way are no conflict."""
    # A pool that pinned some buffers (one that pinned none is given no cap to lower).
    pool = PoolState(total_gib=23.3, buffers=6, free=0, checkout_failed=3)
    view = PipelineView(pool=pool, synth_workers=18)
    synthesis = [_gap(1, cause="waits_on_synthesis", states=[_state(18, 18)])]
    pinned = [_gap(i, kind="pcie_starved", warnings=("pinned_pool_fallback",)) for i in (2, 3)]
    report = advise([*synthesis, *pinned], view)
    assert {(a.stall, a.setting) for a in report.advice} >= {
        ("waits_on_synthesis", "[pipeline] max_parallel_synthesis"),
        ("pinned_pool", "[pipeline] max_parallel_synthesis")}
    (c,) = report.conflicts  # the pool's safety_margin lowers a budget nothing here raises
    assert c.knob == "[pipeline] max_parallel_synthesis" and c.first.stall == "pinned_pool"
    assert "'a/b/c copied from pageable memory: the pinned pool could not pin' cost the most " \
           "idle (2.0 s)" in " ".join(advice_lines(report))
    # Both raise the budget: one way, no conflict.
    same = advise([_gap(1, cause="waits_on_budget"),
                   _gap(2, cause="waits_on_synthesis", states=[_state(10, 10, total_gib=140)])],
                  PipelineView())
    assert [a.setting for a in same.advice] == ["[memory] total_budget"] * 2
    assert same.conflicts == [] and "conflict" not in "\n".join(advice_lines(same))


def test_a_first_srs_load_is_told_preloadsrs_loads_one_ahead() -> None:
    """The `[srs] preload` key is deprecated, but the gRPC PreloadSRS call loads an SRS through
    the memory budget (engine.rs:3623-3657): "no preload" was too strong."""
    why = advise([_gap(cause="srs_loading")], PipelineView()).no_setting[0].why
    assert "PreloadSRS" in why and "engine.rs:3623-3657" in why
    assert "no preload" not in why
