"""A GPU's current verdict in facts (cuzk/why_now): the stall that idled it longest in the
chaining window, the setting that closes it, the payoff; the line alerts and events carry."""

from __future__ import annotations

from gapwatch.core.evidence_types import CopiesEvidence, EventEvidence
from gapwatch.core.models import Gap, GpuInfo, StateChange
from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.core.units import GIB
from gapwatch.core.verdict import WindowNow
from gapwatch.cuzk.knobs import RAISE, RAISE_MARGIN
from gapwatch.cuzk.pipeline import PipelineView, PoolState
from gapwatch.cuzk.why_now import NO_CAUSE, WhyNow, why_now

#: `[memory] safety_margin`'s step with its condition (`knobs.RAISE_MARGIN`).
MARGIN_WORDS = "raise [memory] safety_margin (or lower total_budget if not auto)"


def _gap(gap_id: int, start_s: float, dur_s: float, kind: str = "pcie_starved",
         end: bool = True, **kw: object) -> Gap:
    return Gap(gap_id, 0, kind, int(start_s * 1e9), start_s,  # type: ignore[arg-type]
               int((start_s + dur_s) * 1e9) if end else None, start_s + dur_s if end else None,
               dur_s, 1e9, None, 63e9, **kw)  # type: ignore[arg-type]


def _snap(*gaps: Gap, window: bool = True) -> StoreSnapshot:
    windows = {0: WindowNow(gpu=0, t_mono_ns=100, end_wall_s=100.0, window_s=30.0)} \
        if window else {}
    return StoreSnapshot(1, (GpuInfo(index=0),), {}, (), (), gaps,
                         {0: StateChange(0, 100, 100.0, "BREAKDOWN", 0.5)}, (), windows=windows)


def test_the_longest_stall_in_the_window_is_the_cause_with_its_setting_and_payoff() -> None:
    snap = _snap(_gap(1, 10.0, 20.0),  # ended before the window: not counted
                 _gap(2, 75.0, 6.0, copies=CopiesEvidence(memory_kind="pageable")),
                 _gap(3, 85.0, 4.0, copies=CopiesEvidence(memory_kind="pageable")),
                 _gap(4, 92.0, 1.0, kind="transfer_bound"),
                 _gap(5, 95.0, 3.0, end=False))  # open: counted so far (slow copies, 3 s)
    why = why_now(snap, 0)
    assert (why.state, why.cause, why.setting) == ("BREAKDOWN", "pageable_copies", NO_CAUSE)
    assert why.idle_s == 10.0
    assert why.payoff_gain == 30.0 / 20.0
    assert why.line() == ("GPU0 BREAKDOWN: a/b/c copied from pageable memory; payoff ~1.50x over "
                          "the last 30 s (2 gaps)")


def test_the_payoff_at_a_breakdowns_entry_says_the_span_and_the_gaps_it_rests_on() -> None:
    """At a BREAKDOWN entered 21 s into a session on 2 gaps, `--on-event`'s page said "payoff
    ~1.0x" (the 30 s window's, as if it held 30 s of data) while the same recording's report,
    over minutes of the breakdown, said 1.58x: the figure is over the seconds of data the
    window holds, and says them and the gaps it rests on, in every output that reads it."""
    from gapwatch.sinks.verdict_metrics import verdict_families

    window = WindowNow(gpu=0, t_mono_ns=100, end_wall_s=100.0, window_s=30.0, data_s=21.0)
    snap = StoreSnapshot(1, (GpuInfo(index=0),), {}, (), (),
                         (_gap(1, 90.0, 0.6, copies=CopiesEvidence(memory_kind="pageable")),
                          _gap(2, 95.0, 0.5, copies=CopiesEvidence(memory_kind="pageable"))),
                         {0: StateChange(0, 100, 100.0, "BREAKDOWN", 0.5)}, (),
                         windows={0: window})
    why = why_now(snap, 0)
    assert why.payoff_gain == 21.0 / (21.0 - 1.1)
    assert (why.payoff_span_s, why.payoff_gaps) == (21.0, 2)
    assert why.line().endswith("; payoff ~1.06x over the last 21 s (2 gaps)")
    families = {f.name: f for f in verdict_families(snap)}
    assert [s.value for s in families["gapwatch_gpu_verdict_payoff_gaps"].samples] == [2]
    assert [s.value for s in families["gapwatch_gpu_verdict_payoff_span_seconds"].samples] \
        == [21.0]


def test_a_cause_with_a_setting_names_it_in_the_line_with_its_step() -> None:
    why = WhyNow(0, "BREAKDOWN", "pinned_pool", "a/b/c copied from pageable memory: the pinned "
                 "pool could not pin", "[memory] safety_margin", "raise it", 1.8, 12.0, RAISE)
    assert why.line() == ("GPU0 BREAKDOWN: a/b/c copied from pageable memory: the pinned pool "
                          "could not pin; raise [memory] safety_margin; payoff ~1.80x")


def test_the_line_and_the_metric_say_the_step_the_headline_says_for_the_same_gap() -> None:
    """The headline said "raise [memory] safety_margin" while the alert's and the event's line
    (and /metrics, which the alert reads) said "change [memory] safety_margin" for the same
    gap: all three read the one `change_words` now."""
    from gapwatch.sinks.verdict_metrics import verdict_families

    for gap in (_gap(2, 75.0, 6.0, log_events=[EventEvidence(80.0, "pool",
                                                             warning="pinned_pool_fallback")]),
                _gap(2, 75.0, 6.0, kind="host_stall", prover_cause="batch_wait")):
        snap = _snap(gap)
        why = why_now(snap, 0)
        headline = why.change_words()
        assert not headline.startswith("change "), headline
        assert f"; {headline};" in why.line()
        info = next(iter(verdict_families(snap)))
        assert [s.labels["step"] for s in info.samples] == [headline]
    nothing = next(iter(verdict_families(_snap())))
    assert [s.labels["step"] for s in nothing.samples] == [NO_CAUSE]


def test_the_verdict_says_which_way_its_setting_moves_as_the_advice_does() -> None:
    """The headline read "change [memory] safety_margin (payoff ~1.7x)" while the advice row
    said "raise it": the verdict carries the advice's step (typed, not read from its words),
    and says the setting with it, or the value it is set to."""
    failed = [EventEvidence(80.0, "pool", warning="pinned_pool_fallback")]
    pool = why_now(_snap(_gap(2, 75.0, 6.0, log_events=failed)), 0)
    assert (pool.setting, pool.step) == ("[memory] safety_margin", RAISE_MARGIN)
    assert pool.change_words() == MARGIN_WORDS
    held = why_now(_snap(_gap(2, 75.0, 6.0, kind="host_stall", prover_cause="batch_wait")), 0)
    assert held.change_words() == "set [scheduler] max_batch_size = 1"
    # No step said (an advice made without one): `CHANGE`'s words, no direction claimed.
    bare = WhyNow(0, "BREAKDOWN", "pinned_pool", "x", "[memory] safety_margin", "raise it")
    assert bare.change_words() == "change [memory] safety_margin"
    assert WhyNow(0, "BREAKDOWN").change_words() == ""


def test_a_step_whose_way_the_log_cannot_tell_says_its_condition_in_every_output() -> None:
    """/metrics' `step` (so the alert's why and fleet's detail), the event's line and the
    headline said "raise [memory] safety_margin" where the advice says to raise it only if
    total_budget is "auto", and with an explicit total_budget to lower that instead: on such a
    box the margin changes nothing. cuzk logs the budget it uses, never whether it was "auto":
    the step says both ways, in the same words whatever the log's figures (a bounded label)."""
    from dataclasses import replace

    from gapwatch.sinks.verdict_metrics import verdict_families

    failed = [EventEvidence(80.0, "pool", warning="pinned_pool_fallback")]
    said: set[str] = set()
    for pipeline in (PipelineView(),
                     PipelineView(budget_total_bytes=512 * GIB,
                                  pool=PoolState(checkout_failed=3, total_gib=46.59)),
                     PipelineView(budget_total_bytes=200 * GIB)):
        snap = replace(_snap(_gap(2, 75.0, 6.0, log_events=failed)), pipeline=pipeline)
        why = why_now(snap, 0)
        assert why.setting == "[memory] safety_margin"
        (step,) = [s.labels["step"] for s in next(iter(verdict_families(snap))).samples]
        assert step == why.change_words()
        assert f"; {step};" in why.line()
        said.add(step)
    assert said == {MARGIN_WORDS}


def test_no_gap_in_the_window_or_no_window_yet_is_no_cause() -> None:
    assert why_now(_snap(), 0) == WhyNow(0, "BREAKDOWN")
    assert why_now(_snap(_gap(2, 75.0, 6.0), window=False), 0).cause == NO_CAUSE
    assert why_now(_snap(), 0).line() == "GPU0 BREAKDOWN"


def test_the_payoff_leaves_out_only_what_its_line_says_already() -> None:
    """review6 #1: the dashboard's verdict says its window ("14 gaps (slow copies) in the last
    30 s"), and the payoff said "over the last 30 s" again. Over the same span it is not said
    twice, a count that is the line's neither; a span the line does not say (21 s of data in
    a 30 s window) and a count of other gaps are kept. Elsewhere (the alert, the hook) whole."""
    why = WhyNow(0, "BREAKDOWN", "pinned_pool_exhausted", "slow copies",
                 "[memory] safety_margin", "raise", 1.62, 11.5, RAISE_MARGIN, 30.0, 15)
    assert why.payoff_words() == "payoff ~1.62x over the last 30 s (15 gaps)"
    assert why.payoff_words(30.0, 14) == "payoff ~1.62x (15 gaps)"
    assert why.payoff_words(30.0, 15) == "payoff ~1.62x"
    assert why.payoff_words(30.0, 14, gaps=False) == "payoff ~1.62x"
    early = WhyNow(0, "BREAKDOWN", "pinned_pool_exhausted", "slow copies",
                   "[memory] safety_margin", "raise", 1.04, 0.8, RAISE_MARGIN, 21.0, 2)
    assert early.payoff_words(30.0, 2) == "payoff ~1.04x over the last 21 s (2 gaps)"
