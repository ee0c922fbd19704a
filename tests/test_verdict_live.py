"""The verdict counts live (issue 20, item 1): what a state rests on now, not the count it was
entered on. At 200x50 the demo's verdict read "2 pcie_starved gaps in the last 30 s" while the
gap table listed 13 in those 30 s; summary.md and the report's breakdown lines repeated it."""

from __future__ import annotations

import re
from pathlib import Path

from ui_fakes import FakeRuntime, fill_breakdown, make_config, screen_text

from evaluation.simulate import simulate
from gapwatch.config import Config
from gapwatch.core import fmt
from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import GapDetector
from gapwatch.core.models import Gap, GpuSample, StateChange
from gapwatch.offline.report import build_report
from gapwatch.offline.report_text import format_text
from gapwatch.sinks.recorder import write_recording
from gapwatch.sinks.snapshot import render_summary
from gapwatch.ui.app import GapwatchApp
from gapwatch.ui.view import newest_time_ns

WINDOW_NS = 30_000_000_000


def _pageable_runtime(tmp_path: Path, seconds: float) -> FakeRuntime:
    """A runtime whose session (real detector) was fed `seconds` of the simulated pageable
    prover: chained first, then BREAKDOWN, gap after gap."""
    sim = simulate("pageable", duration_s=seconds)
    infos = list(sim.header.gpus)
    rt = FakeRuntime(make_config(tmp_path), gpus=infos,
                     detector=GapDetector(Config().detector, infos, period_s=0.1))
    for record in sim.records:
        if not isinstance(record, Gap | StateChange):
            rt.session.on_record(record)
    return rt


def _in_window(gaps: tuple[Gap, ...], t_end_ns: int, kind: str) -> int:
    """Gaps of `kind` that end in the last 30 s (or are open): what the window holds."""
    return sum(1 for g in gaps if g.kind == kind and (
        g.end_mono_ns is None or g.end_mono_ns >= t_end_ns - WINDOW_NS))


def test_the_window_keeps_counting_after_the_state_was_entered() -> None:
    """BREAKDOWN is entered on the second starved gap; a minute later the window holds many
    more, and `window_now` says how many, with their idle time and the window's span."""
    sim = simulate("pageable", duration_s=90.0)
    det = GapDetector(DetectorConfig(), list(sim.header.gpus), period_s=0.1)
    states: list[StateChange] = []
    for r in sim.records:
        if isinstance(r, GpuSample):
            states += [e for e in det.feed(r) if isinstance(e, StateChange)]
    entered = [s for s in states if s.state == "BREAKDOWN"]
    assert entered and entered[0].reason == "2 pcie_starved gaps in the last 30 s"
    now = det.window_now(0)
    assert now is not None
    assert now.gaps.get("pcie_starved", 0) >= 8  # far more than the two it was entered on
    assert 0 < now.starved_idle_s <= 30.0
    assert now.end_wall_s - now.start_wall_s == 30.0
    assert now.busy_fraction is not None and 0 < now.busy_fraction < 1


def test_the_window_says_how_much_data_it_holds_in_a_sessions_first_seconds() -> None:
    """A figure over the window (the verdict's payoff) is over the data it holds: 21 s into a
    session it holds 21 s, not the 30 s of its length (the payoff at a BREAKDOWN entered then
    was worked out over 30 s and understated); once full, the whole window."""
    sim = simulate("pageable", duration_s=60.0)
    det = GapDetector(DetectorConfig(), list(sim.header.gpus), period_s=0.1)
    samples = [r for r in sim.records if isinstance(r, GpuSample)]
    for r in samples[:101]:  # the first sample and 10 s after it (one every 0.1 s)
        det.feed(r)
    early = det.window_now(0)
    assert early is not None and early.data_s is not None
    assert abs(early.data_s - 10.0) < 0.2 and early.window_s == 30.0
    for r in samples[101:]:
        det.feed(r)
    full = det.window_now(0)
    assert full is not None and full.data_s == 30.0


async def test_at_200x50_the_verdicts_count_is_the_gap_tables_last_30_s(tmp_path: Path) -> None:
    rt = _pageable_runtime(tmp_path, 75.0)
    app = GapwatchApp(rt)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        text = " ".join(screen_text(app).split())
    snap = rt.store.snapshot()
    t_end = newest_time_ns(snap)
    assert t_end is not None and snap.state_name(0) == "BREAKDOWN"
    shown = re.search(r"GPU0 BREAKDOWN since \d\d:\d\d:\d\d: (\d+) gaps \(slow copies\) "
                      r"\([\d.]+ s idle\) in the last 30 s", text)
    assert shown is not None, text[:400]
    # The window ends at the GPU's last sample (placed GPM-lag earlier: none for the sim).
    window = snap.windows[0]
    expected = _in_window(snap.gaps, window.t_mono_ns, "pcie_starved")
    assert int(shown.group(1)) == expected >= 8


def test_summary_md_says_the_live_count_and_what_the_state_was_entered_on(
    tmp_path: Path,
) -> None:
    rt = _pageable_runtime(tmp_path, 75.0)
    snap = rt.store.snapshot()
    summary = render_summary(snap, rt.header, rt.config, [], t_wall_s=0.0, reason="by hand")
    row = next(line for line in summary.splitlines() if line.startswith("| GPU0 |"))
    # Each cell Markdown text (`fmt.markdown`: `pcie\_starved`).
    live = re.search(r"\| (\d+) pcie\\_starved gaps \([\d.]+ s idle\) in the last 30 s, "
                     r"\d\d:\d\d:\d\d-\d\d:\d\d:\d\d \| 2 pcie\\_starved gaps in the last 30 s \|",
                     row)
    assert live is not None, row
    assert int(live.group(1)) == _in_window(snap.gaps, snap.windows[0].t_mono_ns,
                                            "pcie_starved")


def test_summary_md_says_what_the_prover_package_could_not_learn(tmp_path: Path) -> None:
    """A session that follows no prover log and polls no /status: summary.md says what gapwatch
    lacks (the reason some gaps have no prover cause), in the prover package's words."""
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    snap = rt.store.snapshot()
    assert snap.prover_lacks  # the store's prover saw neither
    summary = render_summary(snap, rt.header, rt.config, [], t_wall_s=0.0, reason="by hand")
    section = summary.split("## What to change", 1)[1].split("\n## ", 1)[0]
    assert "What gapwatch lacks (so some gaps have no prover cause" in section
    for why in snap.prover_lacks:
        assert f"- {fmt.markdown(why)}" in section


def test_the_reports_breakdown_line_counts_the_gaps_of_the_period(tmp_path: Path) -> None:
    sim = simulate("pageable", duration_s=75.0)
    src = tmp_path / "run.jsonl"
    write_recording(src, sim.header, sim.records)
    report = build_report(src, Config(), workers=1)
    (b,) = report.breakdowns
    starved = [g for g in report.gaps if g.kind == "pcie_starved" and g.end_s is not None
               and b.start_s <= g.end_s <= b.end_s]
    assert b.starved_gaps == len(starved) >= 8
    assert abs(b.starved_idle_s - sum(g.duration_s for g in starved)) < 1e-9
    assert 2 <= b.max_in_window <= b.starved_gaps + 1
    assert b.reason == "2 pcie_starved gaps in the last 30 s"

    text = format_text(report).split("Chaining breakdowns: 1", 1)[1]
    line = next(x for x in text.splitlines() if x.startswith("  GPU 0: "))
    assert (f": {len(starved)} pcie_starved gaps ({b.starved_idle_s:.1f} s idle) in the period, "
            f"up to {b.max_in_window} in a 30 s window; entered on 2 pcie_starved gaps in the "
            "last 30 s") in line
