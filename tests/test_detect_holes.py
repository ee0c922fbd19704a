"""A hole in the data inside an idle stretch: the idle read on each side of it is a gap when the GPU
works again after it, the hole itself never is.

Why it matters: NVML answers nothing for 2-7 s while a prover with a large pinned pool exits
(docs/nvml-facts, measured on the H200), so every real restart of cuzk puts a hole between the
GPU's last work and the minute it idles while the new run loads its SRS. Before, the hole
retracted the gap it cut and the idle after it was "before the first busy period": the restart's
idle was in no gap at all."""

from __future__ import annotations

import json

import pytest
from msgspec.structs import replace
from test_detect_unit import LINK, T0_WALL, final_gaps, run, sample, stream

from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import HELD_MAX, GapDetector
from gapwatch.core.ledger import Change, GapLedger
from gapwatch.core.models import Gap, GpuInfo, GpuSample, LogEvent, StateChange


def detector(live: bool = True) -> GapDetector:
    return GapDetector(DetectorConfig(), [GpuInfo(index=0, link_bytes_per_s=LINK)], live=live)


def restart() -> list:  # type: ignore[type-arg]
    """Busy 1-11 s, killed: idle 11-13 s, NVML blind 5.4 s while the pool is freed, idle
    18.4-48.4 s while the new run loads its SRS, busy again."""
    samples = stream([(10, 95, 2e6), (2, 0, 1e6)])
    samples += stream([(30, 0, 1e6), (5, 95, 2e6)], start_s=18.4)
    return samples


def test_a_restarts_idle_on_both_sides_of_the_blind_spot_is_two_gaps_and_the_hole_neither() -> None:
    det = detector()
    before, after = sorted(final_gaps(run(det, restart())), key=lambda g: g.start_s)
    assert before.start_s == pytest.approx(T0_WALL + 11.0, abs=0.01)
    assert before.end_s == pytest.approx(T0_WALL + 13.0, abs=0.01)  # its last idle reading
    assert before.hole_after_s == pytest.approx(5.5, abs=0.01)  # to the first reading after
    assert "then no readings for 5.5 s (a hole in the data" in before.hint
    assert after.start_s == pytest.approx(T0_WALL + 18.5, abs=0.01)  # the first reading after
    assert after.end_s == pytest.approx(T0_WALL + 48.4, abs=0.01)
    assert after.hole_after_s is None and "no readings" not in after.hint
    assert det.counters["holes"] == 1 and det.counters["retracted"] == 0
    # The hole is counted as neither idle nor busy: only what was read.
    (totals,) = det.totals()
    assert totals.data_s == pytest.approx(10 + 2 + 30 + 5, abs=0.2)


def test_a_hole_after_which_the_gpu_read_idle_again_is_not_said_to_have_been_followed_by_work(
) -> None:
    """The H200 restart's first two gaps said "the GPU worked again after it" of their holes
    while the very next reading was idle (the next gap started there: SM activity stayed ~0
    until 13:25:00.1). The words say what the reading after the hole showed: idle again here,
    work where the GPU was busy at once (and `read_after_hole` says which)."""
    before, after = sorted(final_gaps(run(detector(), restart())), key=lambda g: g.start_s)
    assert before.read_after_hole == "idle" and after.read_after_hole is None
    assert "worked again" not in before.hint
    assert ("then no readings for 5.5 s (a hole in the data: the gap ends at its last idle "
            "reading; the first reading after it was idle again, the idle went on)") in before.hint
    # Busy at the first reading after the hole: the GPU did work again after it.
    samples = stream([(5, 95, 2e6)])
    samples += stream([(2, 0, 1e6)], start_s=6.0)
    samples += stream([(2, 95, 2e6)], start_s=9.0)  # no readings 8.0-9.1
    (cut,) = final_gaps(run(detector(), samples))
    assert cut.read_after_hole == "busy"
    assert ("the gap ends at its last idle reading; the GPU worked again at the first reading "
            "after it)") in cut.hint


def test_idle_cut_by_a_hole_and_never_followed_by_work_is_no_gap() -> None:
    """The end of the work: idle, a hole, idle to the end of the data. Nothing bounds it after."""
    samples = stream([(5, 95, 2e6), (2, 0, 1e6)])
    samples += stream([(10, 0, 1e6)], start_s=10.0)
    det = detector()
    events = run(det, samples)
    assert final_gaps(events) == []
    assert det.counters["retracted"] == 2  # the held one and the open one after the hole
    last = [e for _, e in events if isinstance(e, StateChange)][-1]
    assert last.state == "IDLE"


def test_idle_after_a_hole_that_cut_busy_work_is_a_gap_from_the_first_reading_after_it() -> None:
    samples = stream([(5, 95, 2e6)])
    samples += stream([(3, 0, 1e6), (2, 95, 2e6)], start_s=8.0)  # no readings 6.0-8.1
    (gap,) = final_gaps(run(detector(), samples))
    assert gap.start_s == pytest.approx(T0_WALL + 8.1, abs=0.01)
    assert gap.end_s == pytest.approx(T0_WALL + 11.0, abs=0.01)
    assert gap.hole_after_s is None


def test_live_the_cut_gap_is_retracted_at_the_hole_and_counted_once_when_work_resumes() -> None:
    """Live nobody knows at the hole whether work will come back: the gap leaves the views
    until it does, then is counted as any closing gap."""
    det, ledger = detector(live=True), GapLedger()
    changes: list[tuple[float, int, Change]] = []
    for s in restart():
        for out in det.feed_gpu(s):
            if isinstance(out, Gap):
                changes.append((s.t_mono_ns / 1e9, out.gap_id, ledger.add(out)))
    first_id = changes[0][1]
    mine = [(t, c) for t, gid, c in changes if gid == first_id]
    retracted_at = next(t for t, c in mine if c is Change.RETRACTED)
    closed_at = next(t for t, c in mine if c is Change.CLOSED)
    assert retracted_at == pytest.approx(18.5)  # the first sample after the hole
    assert closed_at == pytest.approx(48.5)  # the first busy sample after it
    assert [c for _, c in mine].count(Change.CLOSED) == 1
    assert sum(t.count for t in ledger.tally().values()) == 2


def test_live_and_offline_find_the_same_gaps_over_holes() -> None:
    def key(g: Gap) -> tuple[object, ...]:
        return (g.gap_id, g.start_s, g.end_s, g.kind, g.hole_after_s, g.hint)

    live = sorted(map(key, final_gaps(run(detector(live=True), restart()))))
    offline = sorted(map(key, final_gaps(run(detector(live=False), restart()))))
    assert live == offline and len(live) == 2


def test_the_cut_gaps_evidence_is_what_was_logged_until_readings_resumed() -> None:
    """The lines logged while NVML was blind (a restart's own lines are) reach the gap the
    hole cut, as they reached it while it was open; a line after the readings resumed does
    not (it is the next gap's)."""
    det = detector(live=False)
    out: list[Gap | StateChange] = []
    lines = {12.0: "before the hole", 15.0: "in the hole", 20.0: "after the hole"}
    for s in restart():
        for at, raw in list(lines.items()):
            if s.t_mono_ns / 1e9 >= at:
                out += det.feed_log(LogEvent(t_wall_s=T0_WALL + at, time_source="line",
                                             kind="tracing", name=raw, raw=raw))
                del lines[at]
        out += det.feed_gpu(s)
    out += det.finish()
    before, after = sorted(final_gaps([(0.0, e) for e in out]), key=lambda g: g.start_s)
    assert [e.name for e in before.log_events] == ["before the hole", "in the hole"]
    assert "after the hole" in [e.name for e in after.log_events]


def test_a_gpu_holds_at_most_a_bounded_number_of_cut_gaps() -> None:
    """Many holes in one idle stretch: the oldest pieces past the bound are retracted,
    counted; the rest are gaps when work resumes."""
    samples = stream([(5, 95, 2e6)])
    t = 6.0
    for _ in range(HELD_MAX + 1):
        samples += stream([(1, 0, 1e6)], start_s=t)  # a second idle, then 1 s without readings
        t += 2.0
    samples += stream([(1, 0, 1e6), (2, 95, 2e6)], start_s=t)
    det = detector()
    gaps = final_gaps(run(det, samples))
    assert len(gaps) == HELD_MAX + 1  # HELD_MAX held pieces and the last, after the last hole
    assert det.counters["retracted"] == 1
    assert det.counters["holes"] == HELD_MAX + 1


def test_a_real_restart_on_the_h200_has_its_idle_in_gaps_and_its_blind_spots_in_none() -> None:
    """The H200 recording of a stand-in prover's restart (tests/data/h200-restart, made by
    bench/restart_hole_h200.py): NVML blind 1.9 s while the killed run's pinned pool was freed
    and 0.4 s while the new run pinned its own. The 30.7 s from the old run's last work to the
    new run's first were in no gap before; now every second read of it is, in three gaps, and
    neither blind spot is inside one."""
    from pathlib import Path

    from gapwatch.config import Config
    from gapwatch.offline.report import build_report

    case = Path(__file__).parent / "data" / "h200-restart"
    truth = json.loads((case / "truth.json").read_text())
    idle_from, idle_to = truth["first"]["idle"], truth["second"]["busy"]
    report = build_report(case / "restart.jsonl.gz", Config(), workers=1)
    gaps = sorted((g for g in report.gaps if g.end_s is not None
                   and g.end_s > idle_from - 1.0 and g.start_s < idle_to + 1.0),
                  key=lambda g: g.start_s)
    spots = [(b.t_wall_s, b.t_wall_s + b.duration_s) for b in report.blind_spots
             if idle_from < b.t_wall_s < idle_to]  # (the others: each run's first pinning)
    assert len(gaps) == 3 and len(spots) == 2
    assert gaps[0].start_s == pytest.approx(idle_from, abs=0.2)
    assert gaps[-1].end_s == pytest.approx(idle_to, abs=0.2)
    in_gaps = sum(g.duration_s for g in gaps)
    blind = sum(b - a for a, b in spots)
    assert in_gaps + blind == pytest.approx(idle_to - idle_from, abs=0.5)
    for g in gaps:
        assert not any(g.start_s < a and b < (g.end_s or 0.0) for a, b in spots)
    assert [g.hole_after_s is not None for g in gaps] == [True, True, False]


def _states(events: list[tuple[float, Gap | StateChange]]) -> list[tuple[float, str]]:
    return [(round(t, 2), e.state) for t, e in events if isinstance(e, StateChange)]


def _without(samples: list[GpuSample], from_s: float, to_s: float) -> list[GpuSample]:
    """The samples with none taken in [from_s, to_s] (a hole: NVML blind, the sampler stalled)."""
    return [x for x in samples if not from_s - 1e-9 <= x.t_mono_ns / 1e9 <= to_s + 1e-9]


def test_one_starved_stall_cut_by_a_hole_is_one_gap_to_breakdown() -> None:
    """One pcie_starved stall with 0.5 s without readings in it: two gaps (the hole is in
    neither), but one stall for the chaining window: BREAKDOWN takes two starved gaps, and a
    blind moment must not page anyone."""
    samples = _without(stream([(2, 95, 2e6), (1.6, 0, 2.5e9), (2, 95, 2e6)]), 3.7, 4.0)
    events = run(detector(), samples)
    assert len(final_gaps(events)) == 2
    states = [s for _, s in _states(events)]
    assert "BREAKDOWN" not in states and "GAPS" in states
    gaps_said = [e.reason for _, e in events if isinstance(e, StateChange) and e.state == "GAPS"]
    assert all(r.startswith("1 pcie_starved gap in the last 30 s") for r in gaps_said), gaps_said


def test_two_starved_stalls_are_still_a_breakdown_when_a_hole_cuts_one() -> None:
    samples = _without(stream([(2, 95, 2e6), (1.6, 0, 2.5e9), (1, 95, 2e6), (0.8, 0, 2.5e9),
                               (2, 95, 2e6)]), 3.7, 4.0)
    assert "BREAKDOWN" in [s for _, s in _states(run(detector(), samples))]


def test_idle_after_a_hole_long_after_the_last_work_is_idle_at_once() -> None:
    """Busy until 6 s, idle, no data 31-40 s, idle on: the window after the hole holds no busy
    sample, so the GPU is IDLE from the first reading after it (it read CHAINED "busy" there,
    then GAPS, until the stretch after the hole was a whole window old)."""
    samples = stream([(5, 95, 2e6), (25, 0, 1e6)])
    samples += stream([(40, 0, 1e6)], start_s=40.0)
    after = [(t, s) for t, s in _states(run(detector(), samples)) if 40.0 < t < 1e9]
    assert after and after[0][1] == "IDLE" and all(s == "IDLE" for _, s in after)


def test_a_gpu_waiting_across_a_blind_spot_reads_gaps_not_chained() -> None:
    """The restart: idle, NVML blind, idle: a gap is pending over the hole, so the state
    after it is GAPS, never "CHAINED: busy, no gaps in the window"."""
    events = run(detector(), restart())
    # GAPS from the gap's opening through the hole, IDLE once the window holds no busy
    # sample (the second of the last leaves it at 41.0 s), GAPS when work comes back.
    assert _states(events) == [(1.1, "CHAINED"), (11.3, "GAPS"), (41.0, "IDLE"), (48.5, "GAPS")]


def test_a_clock_step_with_no_reading_missed_is_no_hole_in_the_gap_it_cuts() -> None:
    """The wall clock steps +3600 s inside an idle stretch while every reading comes: the
    stretch is cut (wall times on each side do not line up) but nothing was missed, so the
    gap before the step says no hole."""
    samples = stream([(2, 95, 2e6), (1.0, 0, 1e6)])
    stepped = stream([(1.0, 0, 1e6), (2, 95, 2e6)], start_s=4.0)
    samples += [replace(s, t_wall_s=s.t_wall_s + 3600.0) for s in stepped]
    det = detector()
    gaps = sorted(final_gaps(run(det, samples)), key=lambda g: g.start_mono_ns)
    assert det.counters["clock_jumps"] == 1 and len(gaps) == 2
    assert gaps[0].hole_after_s is None and "no readings" not in gaps[0].hint


def test_a_stall_cut_by_a_hole_stays_in_the_window_while_any_piece_of_it_is() -> None:
    """A starved stall 3-6 s with no readings 3.6-3.9 s, busy, a second starved stall at
    33.7: both stalls are in the window then (the stall's later piece is), so BREAKDOWN takes
    them at 33.9 as it does without the hole (the stall stopped counting when its first
    piece slid out, and no BREAKDOWN was raised)."""
    stalls = stream([(2, 95, 2e6), (3.0, 0, 2.5e9), (27.6, 95, 2e6), (0.8, 0, 2.5e9),
                     (3, 95, 2e6)])
    for cut in (stalls, _without(stalls, 3.6, 3.9)):
        entered = [t for t, s in _states(run(detector(), cut)) if s == "BREAKDOWN"]
        assert 33.9 in entered, entered


def test_a_stretch_counts_under_the_kind_of_all_its_pieces_not_its_first() -> None:
    """Quiet PCIe 1 s, then starved 6.5 s, with a hole in the starved part: the stretch is
    starved as a whole (its first piece alone is a host stall), so the idle rule raises
    BREAKDOWN as it does without the hole (it never did)."""
    samples = _without(stream([(2, 95, 2e6), (1.0, 0, 1e6), (6.5, 0, 2.5e9), (3, 95, 2e6)]),
                       4.6, 4.9)
    events = run(detector(), samples)
    assert [g.kind for g in sorted(final_gaps(events), key=lambda g: g.start_s)] == [
        "host_stall", "pcie_starved"]
    assert "BREAKDOWN" in [s for _, s in _states(events)]


def test_a_pageable_copy_of_a_stall_that_is_no_starved_stall_witnesses_nothing() -> None:
    """Stretch X: quiet PCIe, a hole, then starved with a pageable copy: a host stall as a
    whole. Stretch Y: starved, no copy. X's pageable copy is no witness for Y's
    BREAKDOWN (it was: one starved gap "with its copies from pageable memory")."""
    from test_breakdown_witness import _copy, _sample

    det = GapDetector(DetectorConfig(), [GpuInfo(index=0, link_bytes_per_s=LINK,
                                                 sm_source="sim")], period_s=0.1)
    states = []
    t = 0.1
    while t <= 12.0 + 1e-9:
        idle = 2.0 <= t < 4.0 or 7.0 <= t < 7.6
        rx = 1e6 if 2.0 <= t < 3.05 else (3e9 if idle else 2e6)
        s = _sample(t, 0.0 if idle else 95.0, rx)
        if not 3.0 - 1e-6 <= t <= 3.3 + 1e-6:  # no readings 3.0-3.3 s
            states += [e.state for e in det.feed(s) if isinstance(e, StateChange)]
        if abs(t - 3.9) < 1e-6:
            states += [e.state for e in det.feed(_copy(3.15, 3.85, "pageable"))
                       if isinstance(e, StateChange)]
        t = round(t + 0.1, 6)
    assert det.counters["holes"] == 1 and "BREAKDOWN" not in states


def test_the_idle_after_a_hole_too_short_for_a_gap_stays_in_its_stretchs_kind() -> None:
    """A starved stall 3-4 s; then quiet 0.4 s and starved 0.3 s, a 0.5 s hole, starved 0.2 s
    (too short for a gap of its own), busy: the second stall is starved as a whole, as it was
    while it went on, so BREAKDOWN stays (the short piece was left out of the stall once it
    closed: a host stall, and BREAKDOWN taken back at once)."""
    samples = stream([(2, 95, 2e6), (1.0, 0, 2.5e9), (2, 95, 2e6), (0.4, 0, 1e6), (0.3, 0, 2.5e9)])
    samples += stream([(0.2, 0, 2.5e9), (3, 95, 2e6)], start_s=7.2)
    states = _states(run(detector(), samples))
    after = [s for t, s in states if t >= 7.3]
    assert after and after[0] == "BREAKDOWN" and "GAPS" not in after[:2], states


def test_a_held_pieces_pageable_copies_witness_the_stall_still_going_on() -> None:
    """One starved stall 2.0-6.5 s whose pageable copy (2.0-2.6 s) the copy trace gave at
    2.7 s, then no readings 2.9-5.0 s: BREAKDOWN at 2.8 holds through the hole (the witness
    was only the open piece's: it fell to GAPS after the hole and rose again at the stall's
    end, two pages for one stall)."""
    from test_breakdown_witness import _copy, _sample

    det = GapDetector(DetectorConfig(), [GpuInfo(index=0, link_bytes_per_s=LINK,
                                                 sm_source="sim")], period_s=0.1)
    states: list[tuple[float, str]] = []
    t = 0.1
    while t <= 12.0 + 1e-9:
        idle = 2.0 <= t < 6.5
        s = _sample(t, 0.0 if idle else 95.0, 3e9 if idle else 2e6)
        if not 2.9 - 1e-6 <= t <= 5.0 + 1e-6:
            states += [(round(t, 1), e.state) for e in det.feed(s) if isinstance(e, StateChange)]
        if abs(t - 2.7) < 1e-6:
            det.feed(_copy(2.0, 2.6, "pageable"))
        t = round(t + 0.1, 6)
    assert [s for _, s in states].count("BREAKDOWN") == 1 and (2.8, "BREAKDOWN") in states, states


def test_a_gap_held_over_a_hole_takes_back_its_start_edges_idle_share_from_busy() -> None:
    """Busy at 95 % to 3.0 s, a 24 % sample (3.0-3.1 s), idle with no sample 3.75-4.05 s, a
    40 % sample at 4.7 s, busy: two gaps; the held one's start edge leaves 24/95 of its sample
    busy, taken back when it is published (after the hole the busy peak is not known, so the
    40 % sample closes the second piece at its start and counts busy whole)."""
    samples = [*stream([(2, 95, 2e6)]), sample(3.1, 24, rx=2e6),
               *stream([(1.5, 0, 2.5e9)], start_s=3.1), sample(4.7, 40, rx=2e6),
               *stream([(2, 95, 2e6)], start_s=4.7)]
    samples = [x for x in samples if not 3.75 <= x.t_mono_ns / 1e9 <= 4.05]
    det = detector(live=False)
    events = run(det, samples)
    assert det.counters["holes"] == 1 and len(final_gaps(events)) == 2
    (totals,) = det.totals()
    assert totals.busy_s == pytest.approx(4.0 + 0.1 * 24 / 95 + 0.1)
