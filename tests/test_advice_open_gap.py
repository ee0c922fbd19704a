"""Live advice at the moment of BREAKDOWN advises the gap still open. The demo (`sim:pageable`
with its simulated copy trace) enters BREAKDOWN on its first starved gap, while that gap is still
open (one starved gap whose copies were pageable is enough): the snapshot written then said
"nothing to change: no gap", the verdict that `--on-event`, /metrics and the dashboard's flag
carry said no cause, the help screen and the gap's own detail gave nothing, because each
advised on closed gaps only. Each now advises on the open gap as the detector has it so far
(its idle time up to the latest sample, its kind and cause), said as still open; a retracted
gap is never advised on."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import msgspec.structs
import pytest
from sim_recordings import at_first_breakdown

from gapwatch.commands.demo import demo_config
from gapwatch.config import Config, build_config
from gapwatch.core import fmt
from gapwatch.core.models import Gap, StateChange
from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.cuzk.advice import advice_lines, advise
from gapwatch.cuzk.prover import view_of
from gapwatch.cuzk.why_now import why_now
from gapwatch.engine.runtime import Runtime
from gapwatch.sinks.snapshot import SUMMARY_NAME, write_snapshot

SETTING = "[memory] safety_margin"


@dataclass(frozen=True)
class AtBreakdown:
    """What the store held when GPU0 entered BREAKDOWN (as the dashboard's automatic snapshot
    and `--on-event` see it: told under the session's lock, right after the state was set)."""

    rt: Runtime
    config: Config
    snap: StoreSnapshot
    state: StateChange


@pytest.fixture(scope="module")
def at_breakdown() -> AtBreakdown:
    config = demo_config(build_config({"snapshot": {"auto": False}}))
    rt, snap = at_first_breakdown(config)
    return AtBreakdown(rt, config, snap, snap.states[0])


def _open_gap(snap: StoreSnapshot) -> Gap:
    (gap,) = [g for g in snap.gaps if g.is_open]
    return gap


def test_the_demo_enters_breakdown_on_a_gap_still_open(at_breakdown: AtBreakdown) -> None:
    """The set-up the others rest on: no gap had closed yet, the one open raised the flag."""
    snap = at_breakdown.snap
    assert at_breakdown.state.reason.startswith("1 pcie_starved gap in the last 30 s")
    assert [g.is_open for g in snap.gaps] == [True]
    gap = _open_gap(snap)
    # Measured up to the GPU's latest sample (the sim has no GPM lag to place it earlier).
    assert gap.start_s + gap.duration_s == pytest.approx(snap.gpu_samples[0][-1].t_wall_s)


def test_the_snapshot_taken_at_breakdown_advises_the_gap_still_open(
        at_breakdown: AtBreakdown, tmp_path: Path) -> None:
    snap = at_breakdown.snap
    gap = _open_gap(snap)
    path = write_snapshot(tmp_path, snap, at_breakdown.rt.header, at_breakdown.config,
                          t_wall_s=at_breakdown.state.t_wall_s,
                          reason="automatically: GPU0 entered BREAKDOWN")
    summary = (path / SUMMARY_NAME).read_text()
    section = summary.split("## What to change", 1)[1].split("\n## ", 1)[0]
    assert "nothing to change: no gap" not in section
    so_far = (f"still open: idle {fmt.duration(gap.duration_s)} so far, measured to "
              f"{fmt.clock(gap.start_s + gap.duration_s, millis=True)}")
    # Named first as open, then advised on with its setting and evidence (as Markdown text).
    assert "- " + fmt.markdown(f"gap {gap.gap_id} on GPU0 (pcie_starved), from "
                               f"{fmt.clock(gap.start_s, millis=True)}, {so_far}") in section
    assert (f"1 gap(s) (1 still open), {gap.duration_s:.1f} s idle so far: a/b/c copied from "
            "pageable memory: the pinned pool could not pin") in section
    assert f"- {fmt.markdown(SETTING)}: raise it" in section
    assert f"evidence: the latest of 1 gap(s), at {fmt.clock(gap.start_s, millis=True)}, " \
           f"{so_far}" in section
    assert "checkout(s) FAILED" in section


def test_the_verdict_at_breakdown_names_the_setting_for_the_gap_still_open(
        at_breakdown: AtBreakdown) -> None:
    """What `--on-event`'s breakdown_entered, /metrics' verdict and the dashboard's flag say."""
    gap = _open_gap(at_breakdown.snap)
    why = why_now(at_breakdown.snap, 0)
    assert (why.cause, why.setting) == ("pinned_pool", SETTING)
    assert why.idle_s == gap.duration_s
    assert f"raise {SETTING}" in why.line()


def test_the_help_screen_and_the_gaps_detail_advise_the_gap_still_open(
        at_breakdown: AtBreakdown) -> None:
    from gapwatch.ui.app import help_advice
    from gapwatch.ui.gap_detail import advice_section

    snap = at_breakdown.snap
    gap = _open_gap(snap)
    for lines in (help_advice(snap), advice_section(gap, snap)):
        text = "\n".join(lines)
        assert f"{SETTING}: raise it" in text
        assert "(1 still open)" in text and "still open: idle" in text


def test_a_retracted_gap_is_never_advised_on(at_breakdown: AtBreakdown) -> None:
    """The open gap, had the data ended there: idle after the last busy period, not a gap."""
    gap = msgspec.structs.replace(_open_gap(at_breakdown.snap), retracted=True)
    report = advise([gap], view_of(at_breakdown.snap.pipeline))
    assert not report.advice and not report.no_setting
    assert advice_lines(report) == ["  nothing to change: no gap"]


def test_a_snapshots_what_to_change_says_a_failed_winningpost_first_never_nothing_to_change(
        at_breakdown: AtBreakdown, tmp_path: Path) -> None:
    """summary.md's "What to change" over a store that holds a failed WinningPoSt and no gap:
    it said "nothing to change: no gap" beside it. Now the PoSt line first, cuzk's error in it."""
    import dataclasses

    from gapwatch.core.models import ProofTiming, ProverEvent

    failed = ProverEvent(at_breakdown.state.t_wall_s, "proof", "error", "failed",
                         job_id="winpost-1000-3c4d5e6f",
                         proof=ProofTiming("winning-post", total_s=2.5, deadline_s=30.0,
                                           verdict="failed",
                                           error="synthesis failed: invalid vanilla proof",
                                           cause="synthesis failed"))
    snap = dataclasses.replace(at_breakdown.snap, gaps=(), prover_events=(failed,))
    path = write_snapshot(tmp_path, snap, at_breakdown.rt.header, at_breakdown.config,
                          t_wall_s=at_breakdown.state.t_wall_s)
    section = (path / SUMMARY_NAME).read_text().split("## What to change", 1)[1] \
        .split("\n## ", 1)[0]
    assert "nothing to change" not in section
    assert ("PoSt: 1 WinningPoSt failed (no proof came of it: a WinningPoSt's block lost as a "
            "late one's): cuzk said 'synthesis failed: invalid vanilla proof' (engine.rs:2855): "
            "no cuzk setting: ") in section
