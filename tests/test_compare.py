"""`gapwatch compare`: did a change pay off, figure by figure, with a verdict that can be trusted.

Pinned by real H200 recordings (tests/data/h200-e2e: the stand-in prover of
/work/shared/traces/h200-2026-11-30, a/b/c in pageable memory vs a pinned pool): the pageable run
as BEFORE and the pinned run as AFTER is better by the right magnitude; a run against itself, and
two halves of one steady run, show no measurable change. Load differences are said, not counted.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gapwatch.cli import main
from gapwatch.config import Config
from gapwatch.core.models import Gap
from gapwatch.core.payoff import IfClosed, gpu_time_words
from gapwatch.core.track import GpuTotals
from gapwatch.cuzk.advice import Advice, AdviceReport, advise
from gapwatch.cuzk.pipeline import PipelineView
from gapwatch.cuzk.settings import ProverSettings, SettingsSeen
from gapwatch.logs.parse import LogParser
from gapwatch.offline import compare_stats
from gapwatch.offline.compare import (
    Comparison,
    Figure,
    Side,
    compare,
    predicted_vs_achieved,
    read_side,
    to_json,
)
from gapwatch.offline.compare_format import change, format_markdown, format_text
from gapwatch.offline.compare_stats import judge, mann_whitney_p, serial_inflation, spread
from gapwatch.offline.compare_windows import (
    ALL,
    Grid,
    NoData,
    Silences,
    SlimGap,
    accumulate,
    all_silent,
    choose_window_s,
    series,
)
from gapwatch.sources.time_window import TimeWindow

DATA = Path(__file__).parent / "data" / "h200-e2e"
PAGEABLE = DATA / "pageable" / "rec.jsonl.gz"
PINNED = DATA / "chained" / "rec.jsonl.gz"


def _compare(before: Path | str, after: Path | str) -> Comparison:
    cfg = Config()
    return compare(read_side("BEFORE", before, cfg, []), read_side("AFTER", after, cfg, []))


def _figure(c: Comparison, name: str, gpu: int = 0) -> Figure:
    return next(f for f in c.figures if f.name == name and f.gpu == gpu)


def test_a_pinned_run_after_a_pageable_one_is_better_by_the_right_magnitude() -> None:
    c = _compare(PAGEABLE, PINNED)
    busy = _figure(c, "busy share")
    parts = _figure(c, "partitions/h")
    # report says: pageable busy 51 % of 29.8 s with 17 partitions, pinned 100 % of 35.6 s with 38.
    assert busy.test.verdict == "better"
    assert busy.before is not None and busy.after is not None
    assert 0.45 < busy.before < 0.6 and busy.after > 0.95
    assert parts.test.verdict == "better"
    assert parts.before and parts.after
    ratio = parts.after / parts.before
    assert 1.6 < ratio < 2.4
    # Spreads over the same fixed windows, enough of them to test.
    assert c.window_s == 3.0
    assert busy.before_windows.n >= 8 and busy.after_windows.n >= 8
    assert _figure(c, "idle s/h: pcie_starved").test.verdict == "better"


def test_a_recording_compared_with_itself_shows_no_measurable_change() -> None:
    c = _compare(PAGEABLE, PAGEABLE)
    assert c.figures
    assert {f.test.verdict for f in c.figures} == {"no measurable change"}
    assert not c.setting_changes


def test_no_measurable_change_in_throughput_claims_no_share_of_the_predicted_gain() -> None:
    """Two runs of one setting (here one recording twice; the H200 host-stall pair reads the
    same) judge every figure "no measurable change": the payoff line must not then say how much
    of the predicted gain was achieved (it read "1.00x by partitions/h (-0 % of the predicted
    gain)", and "0.89x ... (-32 % of the predicted gain)" for two pageable runs of different
    length): the ratio is shown with the verdict behind it."""
    c = _compare(PAGEABLE, PAGEABLE)
    ach = to_json(c)["payoff"]["achieved"]
    assert ach["throughput_ratio"] == pytest.approx(1.0)
    assert ach["verdict"] == "no measurable change"
    assert ach["share_of_predicted_gain"] is None
    line = next(x for x in format_text(c).splitlines() if x.startswith("  achieved:"))
    assert "no measurable change" in line and "predicted gain" not in line
    # A measured change keeps its share, with its verdict.
    better = to_json(_compare(PAGEABLE, PINNED))["payoff"]["achieved"]
    assert better["verdict"] == "better" and 0.5 < better["share_of_predicted_gain"] < 1.5


def _mid_s(src: Path) -> float:
    body = gzip.open(src, "rt").read().splitlines()[1:]
    times = [float(json.loads(x)["t_wall_s"]) for x in body if '"type":"gpu"' in x]
    return (min(times) + max(times)) / 2


def _halves(src: Path, tmp: Path) -> tuple[Path, Path]:
    """The recording cut at the middle of its GPU samples: the header line in both halves."""
    lines = gzip.open(src, "rt").read().splitlines()
    head, body = lines[0], lines[1:]
    mid = _mid_s(src)
    first, second = tmp / "first.jsonl", tmp / "second.jsonl"
    keep_first, keep_second = [head], [head]
    for x in body:
        t = json.loads(x).get("t_wall_s")
        (keep_first if t is None or t < mid else keep_second).append(x)
    first.write_text("\n".join(keep_first) + "\n")
    second.write_text("\n".join(keep_second) + "\n")
    return first, second


@pytest.mark.parametrize("run", ["chained", "transfer-bound"])
def test_two_halves_of_one_steady_run_show_no_measurable_change(run: str, tmp_path: Path) -> None:
    first, second = _halves(DATA / run / "rec.jsonl.gz", tmp_path)
    c = _compare(first, second)
    judged = {f.name: f.test.verdict for f in c.figures if f.gpu == 0}
    assert judged["busy share"] == "no measurable change"
    assert judged["partitions/h"] == "no measurable change"
    assert "better" not in judged.values() and "worse" not in judged.values()


def _side(label: str, gaps: list[SlimGap], span_s: float = 3600.0, t0_s: float = 0.0) -> Side:
    totals = [GpuTotals(gpu=0, link_bytes_per_s=6.3e10, data_s=span_s,
                        busy_s=span_s - sum(g.duration_s for g in gaps), active_s=span_s,
                        first_busy_s=t0_s, last_busy_s=t0_s + span_s, last_wall_s=t0_s + span_s,
                        confidence="high", final_state="CHAINED")]
    return Side(label=label, path=label, log_files=[], gpus=[], totals=totals, gaps=gaps,
                partition_ends=None, copies=[], settings=ProverSettings(),
                advice=AdviceReport(), payoff_all=IfClosed(0.0, None, None), busy_fraction=None,
                partitions_per_hour=None, statuses=10)


def _every(period_s: float, dur_s: float, kind: str, cause: str | None,
           span_s: float = 3600.0, offset_s: float = 0.0) -> list[SlimGap]:
    n = int(span_s // period_s)
    return [SlimGap(0, kind, cause, offset_s + i * period_s + 1.0, dur_s) for i in range(n)]


def test_a_side_whose_halves_differ_is_said_not_steady_and_a_steady_one_is_not() -> None:
    # BEFORE: an hour whose first half has no gap (a start-up, a light load) and whose second
    # half idles 20 %: its verdicts against AFTER mix both, and nothing said so.
    ramp = [g for g in _every(10.0, 2.0, "pcie_starved", "pinned_pool") if g.start_s > 1800.0]
    before = _side("BEFORE", ramp)
    after = _side("AFTER", _every(10.0, 1.0, "pcie_starved", "pinned_pool"))
    notes = compare(before, after, window_s=60.0).notes
    [said] = [n for n in notes if "not steady" in n]
    assert said.startswith("BEFORE is not steady: busy share 100 % in its first half, 80 % in "
                           "its second")
    assert not [n for n in notes if n.startswith("AFTER is not steady")]


def test_an_after_run_idle_for_want_of_work_is_said_as_different_load_not_judged() -> None:
    # BEFORE: pcie_starved gaps. AFTER: those gone, but the prover idles for want of work far
    # more: fewer starved gaps is real, the busy share and the idle total follow the load.
    before = _side("BEFORE", _every(20.0, 2.0, "pcie_starved", "pinned_pool"))
    after = _side("AFTER", _every(10.0, 4.0, "host_stall", "no_work"))
    c = compare(before, after)
    assert c.load_differs
    verdicts = {f.name: f.test.verdict for f in c.figures}
    assert verdicts["busy share"] == "different load"
    assert verdicts["idle s/h"] == "different load"
    assert verdicts["idle s/h, prover: no_work"] == "load"
    assert verdicts["idle s/h, prover: pinned_pool"] == "better"
    assert "DIFFERENT" in format_text(c)


def _batching(side: Side, max_batch_size: int) -> Side:
    """`side` with cuzk's log saying `[scheduler] max_batch_size` (its dispatcher line)."""
    values = {"[scheduler] max_batch_size": str(max_batch_size),
              "[scheduler] max_batch_wait_ms": "10000"}
    return replace(side, settings=ProverSettings(values=values, log_lines=100))


def _judged(before: Side, after: Side) -> tuple[Comparison, dict[str, str]]:
    c = compare(before, after, window_s=60.0)
    return c, {f.name: f.test.verdict for f in c.figures}


def test_batch_waits_removed_by_the_batch_setting_are_judged_and_a_drop_in_work_never_a_gain(
        ) -> None:
    """The advice for idle while cuzk's batch collector held a request (`batch_wait`) is
    `[scheduler] max_batch_size = 1`. Followed, the waits went and compare read "different
    load", as for any change of idle for want of work: `/status` alone calls both no work.
    BEFORE (max_batch_size=2), each 20 s: 8 s held for a batch to fill, 2 s with no work."""
    held = _every(20.0, 8.0, "host_stall", "batch_wait")
    idle = _every(20.0, 2.0, "host_stall", "no_work", offset_s=10.0)
    before = _batching(_side("BEFORE", held + idle), 2)

    # max_batch_size=1, Curio sending as before: the waits are gone, the GPU busier.
    c, verdicts = _judged(before, _batching(_side("AFTER", idle), 1))
    assert not c.load_differs
    assert verdicts["idle s/h, prover: batch_wait"] == "better"
    assert verdicts["busy share"] == "better" and verdicts["idle s/h"] == "better"
    assert verdicts["idle s/h, prover: no_work"] == "no measurable change"

    # Requests that came on a clock: the held time became time with no work at all. The
    # waits are gone, the GPU is no busier, and the load did not change.
    waited = _every(20.0, 8.0, "host_stall", "no_work")
    c, verdicts = _judged(before, _batching(_side("AFTER", waited + idle), 1))
    assert not c.load_differs
    assert verdicts["idle s/h, prover: batch_wait"] == "better"
    assert verdicts["busy share"] == "no measurable change"
    assert verdicts["idle s/h, prover: no_work"] == "load"
    assert any("waits for work, the load held" in n for n in c.notes)
    text = format_text(c)
    assert ("load: the same as far as /status tells (want of work, with the batch waits it "
            "took in, unchanged)") in text
    assert all(len(x) <= 100 for x in text.splitlines())

    # The same change with Curio sending less: more idle for want of work than the waits
    # were. Different load, never a gain.
    less = _every(20.0, 5.0, "host_stall", "no_work", offset_s=13.0)
    c, verdicts = _judged(before, _batching(_side("AFTER", waited + idle + less), 1))
    assert c.load_differs
    assert verdicts["busy share"] == "different load"
    assert "better" not in {verdicts[k] for k in ("busy share", "idle s/h", "gaps/h")}

    # The batch settings unchanged: fewer requests held for company is more work coming in
    # (a batch fills sooner), the load's doing, not a setting's.
    c, verdicts = _judged(before, _batching(_side("AFTER", idle), 2))
    assert c.load_differs
    assert verdicts["idle s/h, prover: batch_wait"] == "load"
    assert verdicts["busy share"] == "different load"


def test_a_batched_run_against_a_partitioned_one_claims_no_gain_from_counting_jobs(
        tmp_path: Path) -> None:
    """A PoRep batch (`[scheduler] max_batch_size = 2`, the simulator's `batched`) is one GPU
    job for both sectors' partitions, one row of the partition table. After the advice to set
    max_batch_size = 1, the batched run against a partitioned one read "partitions/h x2.52
    better" and "630 % of the predicted gain" (1.24x): jobs counted against partitions."""
    batched = _sim_recording(tmp_path, "batched", 60, 1)
    partitioned = _sim_recording(tmp_path, "chained", 60, 1)
    c = _compare(batched, partitioned)
    assert _figure(c, "partitions/h").test.verdict == "not comparable"
    assert any(n.startswith("BEFORE proved batches (max_batch_size 2 → 1)") for n in c.notes)
    achieved = to_json(c)["payoff"]["achieved"]
    assert achieved["basis"] == "busy share"
    busy = _figure(c, "busy share")
    assert busy.before and busy.after
    assert achieved["throughput_ratio"] == pytest.approx(busy.after / busy.before)
    # Batches of one size on both sides count jobs against jobs.
    assert _figure(_compare(batched, batched), "partitions/h").test.verdict != "not comparable"


def _counting(label: str, unit: str) -> Side:
    """A side whose partition table's rows (of `unit`) end every 2 s for an hour."""
    side = _side(label, [])
    side.partition_ends = [(0, float(t)) for t in range(1, 3600, 2)]
    side.rate_unit = unit
    return side


def test_the_rate_is_labelled_with_the_reports_unit_and_unlike_units_are_not_comparable() -> None:
    """A PoSt run's report counts "3534 GPU jobs per hour" (304 partitions and 5 PoSt jobs);
    compare called it "partitions/h 3192 -> 3534 x1.11 better" against a run of partitions."""
    c = compare(_counting("BEFORE", "partitions"), _counting("AFTER", "GPU jobs"), window_s=60.0)
    [row] = [x for x in format_text(c).splitlines() if x.strip().startswith("partitions/h")]
    assert row.strip().startswith("partitions/h → GPU jobs/h")
    assert row.rstrip().endswith("not comparable")
    assert _figure(c, "partitions/h").test.verdict == "not comparable"
    assert any(n.startswith("the rate counts partitions on BEFORE and GPU jobs on AFTER")
               for n in c.notes)
    assert c.rate_label == "partitions/h → GPU jobs/h"
    assert "| partitions/h → GPU jobs/h |" in format_markdown(c)
    sides = to_json(c)["sides"]
    assert (sides["BEFORE"]["rate_unit"], sides["AFTER"]["rate_unit"]) == (
        "partitions", "GPU jobs")
    assert "partitions_per_hour" in sides["AFTER"]
    assert to_json(c)["payoff"]["achieved"]["basis"] == "busy share"
    # One unit on both sides: a rate of that unit, judged.
    same = compare(_counting("BEFORE", "GPU jobs"), _counting("AFTER", "GPU jobs"),
                   window_s=60.0)
    assert same.rate_label == "GPU jobs/h"
    assert _figure(same, "partitions/h").test.verdict != "not comparable"
    assert any(x.strip().startswith("GPU jobs/h") for x in format_text(same).splitlines())
    # A side with no partition table has no rate: nothing to call unlike.
    bare = compare(_side("BEFORE", []), _counting("AFTER", "GPU jobs"), window_s=60.0)
    assert not any(n.startswith("the rate counts") for n in bare.notes)


def test_a_gain_above_the_upper_bound_says_why_it_can_be() -> None:
    """"closing every BEFORE gap: 1.58x (upper bound, work fixed)" then "achieved 1.63x (109 %
    of the predicted gain)" (the simulator's pageable run against its pinned one) read as a
    contradiction, nothing said: the bound closes only BEFORE's gaps."""
    before = _side("BEFORE", _every(10.0, 2.0, "pcie_starved", "pinned_pool"))
    before.payoff_all = IfClosed(720.0, 0.97, 1.2)
    c = compare(before, _side("AFTER", []), window_s=60.0)
    [line] = [x for x in format_text(c).replace("\n    ", " ").splitlines()
              if x.startswith("  achieved:")]
    assert "(125 % of the predicted gain); above the upper bound: more changed than BEFORE's " \
           "gaps (idle under the min gap, the GPU's time per partition)" in line
    # Within the bound, nothing more is said.
    before.payoff_all = IfClosed(720.0, 0.97, 1.3)
    text = format_text(compare(before, _side("AFTER", []), window_s=60.0))
    assert "(83 % of the predicted gain)" in text and "above the upper bound" not in text


def test_the_window_is_the_largest_that_gives_the_shorter_side_eight() -> None:
    assert choose_window_s(24 * 3600) == 60.0
    assert choose_window_s(29.8) == 3.0
    assert choose_window_s(4.0) == 1.0


def test_the_test_says_nothing_of_identical_values_and_something_of_separated_ones() -> None:
    assert mann_whitney_p([1.0] * 10, [1.0] * 10) == 1.0
    assert mann_whitney_p([0.5, 0.52, 0.55, 0.6, 0.58, 0.51, 0.53, 0.57],
                          [0.99, 1.0, 0.98, 1.0, 0.97, 1.0, 0.99, 1.0]) < 0.001
    # Significant yet tiny (0.2 pp over a day of windows): not a change anyone acts on.
    tiny = judge([0.900 + (i % 3) * 1e-4 for i in range(1440)],
                 [0.902 + (i % 3) * 1e-4 for i in range(1440)], "higher", share=True)
    assert tiny.verdict == "no measurable change"
    assert judge([1.0] * 3, [2.0] * 3, "higher", share=False).verdict == "too few windows"


def _ar1(rng: random.Random, n: int, r: float, mean: float, sd: float = 0.05) -> list[float]:
    """`n` windows of a figure that drifts slowly (each window's value is `r` of the last's
    deviation plus noise), around `mean`: what a prover's windows look like next to each other."""
    out, dev = [], rng.gauss(0, sd)
    for _ in range(n):
        dev = r * dev + rng.gauss(0, sd * (1 - r * r) ** 0.5)
        out.append(mean + dev)
    return out


def test_windows_that_follow_one_another_do_not_make_the_same_settings_a_change() -> None:
    # Two runs of the same settings whose windows drift together (lag-1 autocorrelation 0.8):
    # taken as independent, a third of 300 such pairs were "better" or "worse" at p < 0.01 (5 s
    # windows of two simulator runs of one scenario: "worse" at p = 3e-5, no change at 60 s).
    rng = random.Random(7)
    said = sum(judge(_ar1(rng, 120, 0.8, 0.6), _ar1(rng, 120, 0.8, 0.6), "higher",
                     share=True).verdict != "no measurable change" for _ in range(300))
    assert said <= 9, said  # 3 % (the test's own 1 %, and room): 98 before
    # A slower drift over fewer windows (r = 0.9, 60 a side: an hour in 60 s windows), where
    # the lag-1 estimate reads low: its known bias corrected, 20 of 300 were said changed.
    slow = sum(judge(_ar1(rng, 60, 0.9, 0.85, 0.03), _ar1(rng, 60, 0.9, 0.85, 0.03), "higher",
                     share=True).verdict in ("better", "worse") for _ in range(300))
    assert slow <= 9, slow
    # Independent windows are judged as before, and a real change is still found.
    assert serial_inflation([0.5, 0.7, 0.5, 0.7, 0.5], [0.6, 0.8, 0.6, 0.8]) == 1.0
    found = sum(judge(_ar1(rng, 120, 0.5, 0.6), _ar1(rng, 120, 0.5, 0.68), "higher",
                      share=True).verdict == "better" for _ in range(100))
    assert found >= 95, found


def test_stretches_no_gpu_was_read_in_are_their_intersection_and_a_time_is_placed_in_them(
        ) -> None:
    # Walked once each (they were every stretch against every other, and every partition end
    # against every stretch): the same answers as looking through them all.
    rng = random.Random(3)
    holes = []
    for gpu in range(3):
        t = 0.0
        for _ in range(200):
            t += rng.uniform(0.0, 20.0)
            length = rng.uniform(0.0, 15.0)
            holes.append(NoData(gpu, t, t + length))
            t += length
    rng.shuffle(holes)

    gpus_holes = [[h for h in holes if h.gpu == g] for g in range(3)]  # each GPU's, once

    def silent(g: int, t: float) -> bool:
        return any(h.start_s <= t < h.end_s for h in gpus_holes[g])

    common = all_silent(holes, [0, 1, 2])
    assert common == sorted(common) and all(a < b for a, b in common)
    silences = Silences(holes)
    for _ in range(2000):
        t = rng.uniform(0.0, 4000.0)
        assert any(a <= t < b for a, b in common) == all(silent(g, t) for g in range(3)), t
        assert silences.inside(1, t) == silent(1, t), t


def test_a_stretch_without_readings_to_the_end_of_the_data_is_no_traceback() -> None:
    # Every GPU silent from the middle on (NVML hung, the host and the log going on): its
    # stretch runs to infinity, and `inf // window` was a NaN in the windows' arithmetic.
    before = _side("BEFORE", _every(10.0, 2.0, "pcie_starved", "pinned_pool"))
    before.no_data = [NoData(0, 1800.0, float("inf"))]
    before.partition_ends = [(0, 60.0 * k + 30.0) for k in range(60)]
    after = _side("AFTER", _every(10.0, 2.0, "pcie_starved", "pinned_pool"))
    after.partition_ends = [(0, 60.0 * k + 30.0) for k in range(60)]
    c = compare(before, after, window_s=60.0)
    busy = next(f for f in c.figures if f.name == "busy share")
    assert (busy.before_windows.n, busy.after_windows.n) == (30, 60)
    # A stretch that starts after the working span's end takes nothing off its last window
    # (it took the stretch's own seconds off: the window [3000, 3060) kept 10 of its 30 s).
    totals = _side("X", [], span_s=3030.0).totals
    acc = accumulate(Grid(0.0, 60.0, 51), totals, [], None, [], (),
                     [NoData(0, 3040.0, float("inf"))])
    assert acc[0].covered_s[50] == pytest.approx(30.0)
    # Per window, the partitions of the windows read: 60 an hour on both sides.
    rate = next(f for f in c.figures if f.name == "partitions/h")
    assert rate.test.verdict == "no measurable change"
    assert rate.before_windows.median == rate.after_windows.median == pytest.approx(60.0)


def test_a_hole_in_one_gpus_readings_takes_its_partitions_off_that_gpu_not_off_all_gpus() -> None:
    # The log says they were proved: a sampler stall on GPU 0 made the all-GPUs rate drop to
    # half in the windows of the hole (1200 -> 600 an hour), which reads as "worse".
    totals = [GpuTotals(gpu=g, link_bytes_per_s=6.3e10, data_s=600.0, busy_s=600.0,
                        active_s=600.0, first_busy_s=0.0, last_busy_s=600.0, last_wall_s=600.0,
                        confidence="high", final_state="CHAINED") for g in (0, 1)]
    ends = [(g, 6.0 * k + 3.0) for k in range(100) for g in (0, 1)]
    grid = Grid(0.0, 60.0, 10)
    acc = accumulate(grid, totals, [], ends, [], (), [NoData(0, 120.0, 240.0)])
    rate = series(acc[ALL], 60.0, all_gpus=True)["partitions/h"]
    assert rate == [pytest.approx(1200.0)] * 10
    assert acc[0].partitions == [10, 10, 0, 0, 10, 10, 10, 10, 10, 10]
    # With every GPU silent, no GPU was read: those windows' partitions count nowhere.
    acc = accumulate(grid, totals, [], ends, [], (),
                     [NoData(0, 120.0, 240.0), NoData(1, 120.0, 240.0)])
    assert acc[ALL].partitions == [20, 20, 0, 0, 20, 20, 20, 20, 20, 20]


def test_different_gpu_counts_and_lengths_are_said() -> None:
    before = _side("BEFORE", [], span_s=600.0)
    after = _side("AFTER", [], span_s=3600.0)
    extra = GpuTotals(gpu=1, link_bytes_per_s=6.3e10, data_s=3600.0, busy_s=3600.0,
                      active_s=3600.0, first_busy_s=0.0, last_busy_s=3600.0,
                      last_wall_s=3600.0, confidence="high", final_state="CHAINED")
    after.totals.append(extra)
    c = compare(before, after)
    notes = " ".join(c.notes)
    assert "different GPUs: BEFORE 1 (0), AFTER 2 (0, 1)" in notes
    assert "different lengths" in notes
    # Each note wrapped within the text's 100 columns (the GPUs' one was 122 wide).
    text = format_text(c)
    assert max(len(line) for line in text.splitlines()) <= 100
    # The note says what is shown: the boxes, as 'all GPUs', their partitions/h not compared
    # (it promised an 'all GPUs' section that never came, GPU 0's rows alone beside it).
    assert ("'all GPUs' is each side's whole box (per GPU-hour; partitions/h per wall hour, not "
            "comparable)") in " ".join(text.split())
    assert {f.gpu for f in c.figures} == {ALL, 0}
    assert "\nall GPUs " in text


def test_the_command_prints_text_within_100_columns_json_and_markdown(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(PAGEABLE), str(PINNED)]) == 0
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "busy share" in text and "better" in text and "Payoff" in text
    assert main(["compare", str(PAGEABLE), str(PINNED), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == 1 and doc["window_s"] == 3.0
    busy = next(f for f in doc["figures"] if f["figure"] == "busy share")
    assert busy["verdict"] == "better" and busy["before_windows"]["n"] >= 8
    # The windows the head counts are the JSON's too (it gave whole windows only: 10 and 9).
    said = re.search(r"windows of \S+ s: BEFORE (\d+), AFTER (\d+)", text)
    assert said is not None
    assert [doc["sides"][k]["usable_windows"] for k in ("BEFORE", "AFTER")] == [
        int(said.group(1)), int(said.group(2))]
    assert doc["payoff"]["achieved"]["basis"] == "partitions/h"
    assert main(["compare", str(PAGEABLE), str(PINNED), "--markdown"]) == 0
    md = capsys.readouterr().out
    assert "| GPU 0 | busy share |" in md and "**better**" in md


def test_report_and_compare_read_one_runs_partitions_per_hour_alike(
        capsys: pytest.CaptureFixture[str]) -> None:
    """One rule, one home (`gapwatch.offline.throughput`): the report counted every partition
    of the log's table (those still on the GPU at the end too) over the table's wall span, and
    compare the finished ones over the GPUs' working span: one pageable run read 2,469/h in
    `report` and 2,444/h in `compare`, and `compare --json` carried both. Now the same run
    reads the same figure in `report`, `report --json`, `compare`, `compare --json` and the
    payoff's "achieved" line."""
    per_run: dict[Path, float] = {}
    for run in (PAGEABLE, PINNED):
        assert main(["report", str(run), "--json"]) == 0
        pph = json.loads(capsys.readouterr().out)["payoff"]["partitions_per_hour"]
        assert pph is not None and pph > 0
        assert main(["report", str(run)]) == 0
        said = re.search(r"throughput ~[\d.]+x over [^,]+ \(\d+ gaps?\), (\d+) → ",
                         capsys.readouterr().out)
        # The text says the rate in the payoff's lines: PINNED has no gap to close.
        assert (said is not None) == (run == PAGEABLE)
        assert said is None or int(said.group(1)) == round(pph)
        per_run[run] = pph
    assert main(["compare", str(PAGEABLE), str(PINNED), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [doc["sides"][k]["partitions_per_hour"] for k in ("BEFORE", "AFTER")] == \
        pytest.approx([per_run[PAGEABLE], per_run[PINNED]], rel=1e-9)
    rate = next(f for f in doc["figures"] if f["figure"] == "partitions/h")
    assert [rate["before"], rate["after"]] == pytest.approx(
        [per_run[PAGEABLE], per_run[PINNED]], rel=1e-9)
    achieved = doc["payoff"]["achieved"]
    assert achieved["basis"] == "partitions/h"
    assert achieved["throughput_ratio"] == pytest.approx(per_run[PINNED] / per_run[PAGEABLE])
    assert main(["compare", str(PAGEABLE), str(PINNED)]) == 0
    row = re.search(r"partitions/h +(\d+) \[[^]]*\] +(\d+) ", capsys.readouterr().out)
    assert row is not None
    assert [int(row.group(1)), int(row.group(2))] == [round(per_run[PAGEABLE]),
                                                      round(per_run[PINNED])]


def test_a_side_that_cannot_be_read_exits_2(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(tmp_path / "missing.jsonl"), str(PINNED)]) == 2
    assert "no such file" in capsys.readouterr().err


def test_markdown_escapes_pipes_in_paths(tmp_path: Path) -> None:
    c = _compare(PINNED, PINNED)
    c.before.path = "a|b.jsonl"
    assert "a\\|b.jsonl" in format_markdown(c)
    assert to_json(c)["sides"]["BEFORE"]["path"] == "a|b.jsonl"


def test_copies_moved_from_pageable_to_pinned_memory_show_in_the_h2d_figures() -> None:
    copies = Path(__file__).parent / "data" / "h200-copytrace"
    c = _compare(copies / "pageable" / "rec.jsonl.gz", copies / "chained" / "rec.jsonl.gz")
    share = _figure(c, "H2D bytes from pageable")
    rate = _figure(c, "H2D rate: all")
    assert (share.before, share.after) == (1.0, 0.0) and share.test.verdict == "better"
    assert rate.test.verdict == "better"
    assert rate.before and rate.after and rate.after / rate.before > 10  # 3.5 -> 55 GB/s
    assert _figure(c, "H2D rate: pinned").test.verdict == "one side only"


def test_post_latency_from_the_provers_watcher_is_compared_when_there_is_any() -> None:
    from gapwatch.offline.compare_windows import SlimPost

    before = _side("BEFORE", [])
    after = _side("AFTER", [])
    before.posts = [SlimPost(None, "winning-post", 60.0 * i + 30, 24.0 + (i % 3)) for i in
                    range(40)]
    after.posts = [SlimPost(None, "winning-post", 60.0 * i + 30, 6.0 + (i % 3)) for i in
                   range(40)]
    post = _figure(compare(before, after), "PoSt latency s: winning-post")
    assert post.before == pytest.approx(24.975) and post.after == pytest.approx(6.975)
    assert post.test.verdict == "better" and post.better == "lower"
    assert post.before_windows.n == 40


def _rows(c: Comparison) -> list[tuple[object, ...]]:
    return [(f.name, f.gpu, f.before, f.after, f.test.verdict) for f in c.figures]


def test_at_a_moment_compares_one_recording_as_its_two_halves_cut_there(
    tmp_path: Path
) -> None:
    """`compare REC --at TIME`: the change's moment in one continuous recording; each side is
    read as `report --since/--until` reads a window, and the figures are those of the
    recording cut in two at that moment."""
    src = DATA / "chained" / "rec.jsonl.gz"
    first, second = _halves(src, tmp_path)
    mid = _mid_s(src)
    cfg = Config()
    at = compare(read_side("BEFORE", src, cfg, [], window=TimeWindow(None, mid, "--at x")),
                 read_side("AFTER", src, cfg, [], window=TimeWindow(mid, None, "--at x")))
    assert _rows(at) == _rows(_compare(first, second))
    assert at.figures


def test_at_on_the_command_line_and_its_refusals(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    rec = str(DATA / "chained" / "rec.jsonl.gz")
    assert main(["compare", rec, "--at", "+15s", "--span", "10s", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    before, after = doc["sides"]["BEFORE"]["window"], doc["sides"]["AFTER"]["window"]
    assert before["until_s"] == after["since_s"]
    assert after["until_s"] - after["since_s"] == before["until_s"] - before["since_s"] == 10
    assert main(["compare", rec, "--at", "+15s"]) == 0
    # Each side's part in plain words ("only the window the start to ...", "... to the end").
    head = capsys.readouterr().out.split("Settings")[0]
    assert re.search(r"only its part up to 20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC \(--at \+15s\)",
                     head)
    assert re.search(r"only its part from 20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC on \(--at \+15s\)",
                     head)
    assert "the start to" not in head and "to the end" not in head
    for argv, words in (([rec], "AFTER is needed"),
                        ([rec, rec, "--span", "1h"], "--span needs --at"),
                        ([rec, "--at", "+2d"], "AFTER: the window")):
        assert main(["compare", *argv]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1



def _report_json(path: Path, *argv: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["report", str(path), *argv, "--json"]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def test_since_windows_each_side_from_its_own_start_as_report_reads_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`compare BEFORE AFTER --since +5s`: each side read from 5 s after its OWN start (the two
    recordings began 49 s apart), the window and the figures those of `report SIDE --since
    +5s`; so a side's start-up (its first wave) can be left out of two recordings, which
    `--at` (one moment for both) could not. Before: `unrecognized arguments: --since +5s`."""
    assert main(["compare", str(PAGEABLE), str(PINNED), "--since", "+5s", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    busy = next(f for f in doc["figures"] if f["figure"] == "busy share" and f["gpu"] == 0)
    for label, path, value in (("BEFORE", PAGEABLE, busy["before"]),
                               ("AFTER", PINNED, busy["after"])):
        report = _report_json(path, "--since", "+5s", capsys=capsys)
        window = doc["sides"][label]["window"]
        assert {k: window[k] for k in ("since_s", "until_s")} == report["window"]
        assert window["said"] == "--since +5s"
        assert value == pytest.approx(report["gpus"][0]["busy_fraction"])
    sides = doc["sides"]
    assert sides["BEFORE"]["window"]["since_s"] != sides["AFTER"]["window"]["since_s"]


def test_a_sides_own_since_and_until_take_the_place_of_the_shared_ones_and_the_head_says_each(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`--after-since +10s` is AFTER's alone (in place of `--since` for it); `--until -2s` is
    both sides', each before its own end; the head says each side's window with the options
    that made it, and a side read whole says so beside one that is not."""
    argv = ["compare", str(PAGEABLE), str(PINNED), "--since", "+5s", "--after-since", "+10s",
            "--until", "-2s"]
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    for label, path, since in (("BEFORE", PAGEABLE, "+5s"), ("AFTER", PINNED, "+10s")):
        report = _report_json(path, "--since", since, "--until", "-2s", capsys=capsys)
        window = doc["sides"][label]["window"]
        assert {k: window[k] for k in ("since_s", "until_s")} == report["window"]
    assert doc["sides"]["AFTER"]["window"]["said"] == "--after-since +10s --until -2s"
    assert main(argv) == 0
    head = capsys.readouterr().out.split("\n\n")[0]
    assert "(--since +5s --until -2s)" in head
    assert "(--after-since +10s --until -2s)" in head
    # `-1s` after a side's option is its moment, not an option (as `--since -1h` is).
    assert main(["compare", str(PAGEABLE), str(PINNED), "--before-until", "-1s"]) == 0
    before, after = capsys.readouterr().out.split("  AFTER ")[:2]
    assert "(--before-until -1s)" in before
    assert after.splitlines()[1].strip() == "all of its recording (no window)"


def test_a_sides_own_window_that_names_nothing_is_one_line_naming_the_side_and_exit_2(
        capsys: pytest.CaptureFixture[str]) -> None:
    """As `report --since/--until` refuses them, with the side's name; `--at` with a window of
    a side's own is refused too (one moment for both, or a window each: not both)."""
    two = [str(PAGEABLE), str(PINNED)]
    for argv, words in (([*two, "--since", "+1h"], "BEFORE: the window"),
                        ([*two, "--after-until", "-1h"], "AFTER: the window"),
                        ([*two, "--since", "+20s", "--until", "+10s"],
                         "BEFORE: the window ends before it starts"),
                        ([str(PAGEABLE), "--at", "+10s", "--after-since", "+15s"],
                         "--at cuts both sides at one moment; --after-since")):
        assert main(["compare", *argv]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err



def _sim_recording(tmp: Path, scenario: str, seconds: int, seed: int) -> Path:
    out = tmp / f"{scenario}-{seed}.jsonl"
    assert main(["record", "--source", f"sim:{scenario}", "--speed", "0", "--seed", str(seed),
                 "--duration", str(seconds), "--quiet", "--out", str(out)]) == 0
    return out


def _without_gpu_readings(src: Path, tmp: Path, from_s: float, to_s: float) -> Path:
    """The recording with its GPU samples from `from_s` to `to_s` after the first one left out
    (a sampler that stalled): its log lines, host samples and /status kept."""
    lines = src.read_text().splitlines()
    t0 = min(float(json.loads(x)["t_wall_s"]) for x in lines[1:] if '"type":"gpu"' in x)
    keep = [lines[0]]
    for x in lines[1:]:
        rec = json.loads(x)
        if rec.get("type") == "gpu" and from_s <= float(rec["t_wall_s"]) - t0 < to_s:
            continue
        keep.append(x)
    out = tmp / "hole.jsonl"
    out.write_text("\n".join(keep) + "\n")
    return out


def test_a_stretch_without_gpu_readings_is_neither_busy_windows_nor_a_higher_rate(
        tmp_path: Path) -> None:
    """Missing data is unknown, never busy: a sampler that stalled for 40 s of a 120 s
    simulated run (the prover's log going on) must not give 100 % busy windows over the hole,
    nor count the partitions that ended in it over the shorter span that has readings (that
    read as 1.5x the throughput of the very same run, "90 % of the predicted gain")."""
    run = _sim_recording(tmp_path, "pageable", 120, 1)
    hole = _without_gpu_readings(run, tmp_path, 40.0, 80.0)
    c = _compare(run, hole)
    busy, parts = _figure(c, "busy share"), _figure(c, "partitions/h")
    assert busy.after_windows.n < busy.before_windows.n  # the hole's windows give no value
    assert busy.after_windows.p90 is not None and busy.after_windows.p90 < 0.95
    assert parts.before and parts.after
    assert 0.8 < parts.after / parts.before < 1.25
    ach = to_json(c)["payoff"]["achieved"]
    assert ach["throughput_ratio"] is not None and ach["throughput_ratio"] < 1.25
    assert any("AFTER has no reading for" in n for n in c.notes)


def test_a_side_with_no_whole_window_is_too_short_not_one_side_only_nor_an_achieved_gain(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--at -0s`: AFTER is the recording's last reading (0.1 s, no window). Its figures exist
    but cannot be tested: "too few windows", not "one side only"; and the payoff does not claim
    a throughput ratio from it (it read "busy 60% -> 100%, 1.67x by busy share, 106 % of the
    predicted gain")."""
    run = _sim_recording(tmp_path, "pageable", 120, 2)
    assert main(["compare", str(run), "--at", "-0s", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    busy = next(f for f in doc["figures"] if f["figure"] == "busy share")
    assert busy["after_windows"]["n"] == 0 and busy["after"] is not None
    assert busy["verdict"] == "too few windows"
    ach = doc["payoff"]["achieved"]
    assert ach["throughput_ratio"] is None and ach["share_of_predicted_gain"] is None
    assert ach["not_measured"] == "too few windows of busy share"
    assert main(["compare", str(run), "--at", "-0s"]) == 0
    text = capsys.readouterr().out
    assert "throughput not measured: too few windows of busy share" in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_prover_causes_from_a_log_on_one_side_only_are_not_judged(tmp_path: Path) -> None:
    """The same pageable run with and without its log lines: with the log, the prover's cause
    is `pinned_pool`; from /status alone, `inside_workers`. Compared, that read "cause
    pinned_pool: gone, better" and "cause inside_workers: new, worse" for one setting."""
    run = _sim_recording(tmp_path, "pageable", 120, 3)
    no_log = tmp_path / "no-log.jsonl"
    no_log.write_text("".join(line for line in run.read_text().splitlines(keepends=True)
                              if '"type":"log"' not in line))
    c = _compare(run, no_log)
    causes = {f.name: f.test.verdict for f in c.figures
              if f.name.startswith("idle s/h, prover: ")}
    assert causes and set(causes.values()) == {"not comparable"}
    assert any("only BEFORE has the prover's log" in n for n in c.notes)
    assert max(len(line) for line in format_text(c).splitlines()) <= 100


def test_a_side_with_neither_log_nor_status_is_not_said_to_have_status(tmp_path: Path) -> None:
    """A side recorded without the prover's log and without `--cuzk-status` (a plain NVML
    recording) against one with the log: the note said "(the other has /status only)" while
    the head said "no /status on both sides"."""
    run = _sim_recording(tmp_path, "pageable", 30, 3)
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(line for line in run.read_text().splitlines(keepends=True)
                            if '"type":"log"' not in line and '"type":"prover"' not in line))
    notes = _compare(run, bare).notes
    [said] = [n for n in notes if "only BEFORE has the prover's log" in n]
    assert "/status only" not in said
    assert "AFTER has no /status either: no prover cause at all" in said
    [said] = [n for n in _compare(run, _sim_no_log(run, tmp_path)).notes
              if "only BEFORE has the prover's log" in n]
    assert "AFTER has /status only" in said


def _sim_no_log(run: Path, tmp: Path) -> Path:
    out = tmp / "no-log.jsonl"
    out.write_text("".join(line for line in run.read_text().splitlines(keepends=True)
                           if '"type":"log"' not in line))
    return out


def _stepped_back(src: Path, tmp: Path, step_s: float) -> Path:
    """The recording with the wall clock stepped back `step_s` half-way through its records
    (an NTP step: every record's `t_wall_s` after it moved, data time `t_mono_ns` going on)."""
    with gzip.open(src, "rt") as f:
        lines = f.read().splitlines()
    half = len(lines) // 2
    out_lines = lines[:half]
    for x in lines[half:]:
        rec = json.loads(x)
        if "t_wall_s" in rec:
            rec["t_wall_s"] -= step_s
        out_lines.append(json.dumps(rec))
    out = tmp / "stepped.jsonl"
    out.write_text("\n".join(out_lines) + "\n")
    return out


def test_a_side_whose_wall_clock_stepped_back_is_no_negative_span_and_keeps_its_gaps(
        tmp_path: Path) -> None:
    """An NTP step of an hour back inside BEFORE: its working span read -3570 s of work, -3571
    whole windows, 0.0 gaps an hour (its gaps lay before its first window) and partitions per
    hour of 6 in place of 2054. Its windows cannot be placed: its figures are whole-run, as
    the report gives them, the verdicts "too few windows", and the head says why."""
    src = Path("tests/data/h200-e2e/pageable/rec.jsonl.gz")
    after = Path("tests/data/h200-e2e/chained/rec.jsonl.gz")
    plain = _compare(src, after)
    stepped = _compare(_stepped_back(src, tmp_path, 3600.0), after)
    assert stepped.before.span_s == pytest.approx(plain.before.span_s, rel=0.05)
    for name in ("busy share", "gaps/h", "idle s/h"):
        assert _figure(stepped, name).before == pytest.approx(_figure(plain, name).before,
                                                              rel=0.05), name
    assert _figure(stepped, "partitions/h").before == pytest.approx(
        _figure(plain, "partitions/h").before, rel=0.1)
    assert {f.test.verdict for f in stepped.figures} == {"too few windows"}
    [said] = [n for n in stepped.notes if "stepped back" in n]
    assert said.startswith("BEFORE's wall clock stepped back 60.0m inside it")
    assert not [n for n in stepped.notes if "whole window(s)" in n and n.startswith("BEFORE")]
    text = format_text(stepped)
    assert "-" not in text.split("\n")[2].split("GPU(s),")[1].split("of work")[0]
    assert max(len(line) for line in text.splitlines()) <= 100


def test_a_side_whose_wall_clock_stepped_back_seconds_keeps_its_partitions(
        tmp_path: Path) -> None:
    """An NTP step of 5 s back, its later data overlapping its earlier in wall time: a
    NO_DATA state paired with the next state by wall time made a hole over real data, and the
    partitions that ended in it were left out (2054 partitions/h read 1087)."""
    src = Path("tests/data/h200-e2e/pageable/rec.jsonl.gz")
    after = Path("tests/data/h200-e2e/chained/rec.jsonl.gz")
    plain = _compare(src, after)
    stepped = _compare(_stepped_back(src, tmp_path, 5.0), after)
    for name in ("busy share", "gaps/h", "idle s/h", "partitions/h"):
        assert _figure(stepped, name).before == pytest.approx(_figure(plain, name).before,
                                                              rel=0.05), name
    [said] = [n for n in stepped.notes if "stepped back" in n]
    assert said.startswith("BEFORE's wall clock stepped back 4.90s")


def test_a_side_whose_clock_stepped_years_ahead_is_not_cut_into_millions_of_windows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A side whose wall time runs 10 years (a clock stepped ahead inside it, a hole to the
    detector) against a 2-minute one: cut into the 10 s windows the short side chose, it was
    31 million windows, gigabytes and minutes (`--window 0.00001` over two 2-minute runs:
    11.5 GB). A side is cut into at most `MAX_WINDOW_CELLS` windows x accumulators; past it,
    its figures are whole-run, its verdicts "too few windows", said in the head."""
    from gapwatch.offline import compare as compare_mod
    from gapwatch.offline import compare_windows

    biggest = 0
    empty = compare_windows.GpuWindows.empty

    def counted(n: int) -> compare_windows.GpuWindows:
        nonlocal biggest
        biggest = max(biggest, n)
        assert n <= compare_mod.MAX_WINDOW_CELLS, n  # before: 31 million, never returned
        return empty(n)

    monkeypatch.setattr(compare_windows.GpuWindows, "empty", staticmethod(counted))
    ten_years = 10 * 365 * 86400.0
    gaps = _every(10.0, 2.0, "pcie_starved", "pinned_pool", span_s=120.0)
    before = _side("BEFORE", gaps + [SlimGap(0, "pcie_starved", "pinned_pool",
                                             ten_years - 5.0, 2.0)], span_s=ten_years)
    before.no_data = [NoData(0, 120.0, ten_years - 10.0)]
    after = _side("AFTER", gaps, span_s=120.0)
    c = compare(before, after)
    assert c.window_s == 10.0 and 0 < biggest <= compare_mod.MAX_WINDOW_CELLS
    busy = _figure(c, "busy share")
    assert busy.test.verdict == "too few windows" and busy.after_windows.n == 12
    assert _figure(c, "gaps/h").before == pytest.approx(13 * 3600 / ten_years)
    [said] = [n for n in c.notes if n.startswith("BEFORE's 3650.0 days of wall time is "
                                                  "31,536,000 windows of 10 s")]
    # The window it offers fits: taken, the side is cut into windows.
    offered = float(said.split("--window ")[1].split(" ")[0])
    assert compare_mod.unwindowed(before, offered) is None
    # The same bound for a --window far too small for two short sides.
    c = compare(_side("BEFORE", gaps, span_s=120.0), after, window_s=0.00001)
    assert {f.test.verdict for f in c.figures} == {"too few windows"}
    assert sum("windows of 1e-05 s" in n for n in c.notes) == 2
    assert max(len(line) for line in format_text(c).splitlines()) <= 100


@pytest.mark.parametrize("window_s", [1e-310, 5e-324])
def test_a_window_too_small_for_a_float_count_is_whole_run_not_a_traceback(
        window_s: float) -> None:
    """`compare --window 1e-310`: the span over the window is infinite as a float, and `int`
    of it an OverflowError traceback (text and `--json`). Counted exactly, the sides are
    whole-run, said so with the count's order of magnitude; the JSON's count is null."""
    gaps = _every(10.0, 2.0, "pcie_starved", "pinned_pool", span_s=120.0)
    c = compare(_side("BEFORE", gaps, span_s=120.0), _side("AFTER", gaps, span_s=120.0),
                window_s)
    said = [n for n in c.notes if "more than a side is cut into" in n]
    assert len(said) == 2 and "~10^" in said[0]
    assert _figure(c, "busy share").test.verdict == "too few windows"
    assert "~10^" in format_text(c)
    doc = to_json(c)
    assert doc["sides"]["BEFORE"]["windows"] is None and doc["sides"]["AFTER"]["windows"] is None


def test_a_side_without_a_span_of_data_is_said_so_not_told_to_pass_a_smaller_window() -> None:
    """A side of one sample (or none) was "0 whole window(s) of 60 s: too short to tell a
    change (pass --window smaller)": no window of any size helps it."""
    gaps = _every(10.0, 2.0, "pcie_starved", "pinned_pool", span_s=600.0)
    c = compare(_side("BEFORE", gaps, span_s=600.0), _side("AFTER", [], span_s=0.0))
    said = [n for n in c.notes if n.startswith("AFTER")]
    assert said and all("--window smaller" not in n for n in said)
    assert any("no span of data" in n for n in said)


def test_partitions_per_hour_counts_finished_partitions_over_the_hours_a_gpu_was_read() -> None:
    """The one throughput rule (`offline.throughput`), directly: two GPUs each finishing one
    partition every 6 s for 10 minutes (1,200 an hour together), GPU 0 unread for 2 of them:
    its partitions there count for all GPUs, not for GPU 0; an end with no GPU said counts
    for all GPUs, one past the working span for none. Ends none of which is known (a log
    without its TIMELINE anchor) are no figure: it was 0.0, and `compare` called it a change."""
    from gapwatch.offline.throughput import partitions_per_hour

    totals = [GpuTotals(gpu=g, link_bytes_per_s=6.3e10, data_s=600.0, busy_s=600.0,
                        active_s=600.0, first_busy_s=0.0, last_busy_s=600.0, last_wall_s=600.0,
                        confidence="high", final_state="CHAINED") for g in (0, 1)]
    ends: list[tuple[int | None, float | None]] = [
        (g, 6.0 * k + 3.0) for k in range(100) for g in (0, 1)]
    hole = [NoData(0, 120.0, 240.0)]
    assert partitions_per_hour(ends, totals, hole) == pytest.approx(1200.0)
    assert partitions_per_hour(ends, totals, hole, gpu=0) == pytest.approx(600.0)
    assert partitions_per_hour([*ends, (None, 300.0), (0, 900.0)], totals, hole) == \
        pytest.approx(1206.0)
    assert partitions_per_hour([(0, None), (1, None)], totals, hole) is None
    assert partitions_per_hour(None, totals, hole) is None


def test_a_side_whose_log_gives_no_partition_end_has_no_throughput_to_call_a_change() -> None:
    """A log without its TIMELINE anchor has partitions but no GPU end: its partitions per
    hour read 0.0 (every window 0) and `compare` said "better" of the other side, one
    recording against itself."""
    before, after = _side("BEFORE", [], span_s=600.0), _side("AFTER", [], span_s=600.0)
    before.partition_ends = []
    after.partition_ends = [(0, 6.0 * k + 3.0) for k in range(100)]
    [rate] = [f for f in compare(before, after).figures if f.name == "partitions/h"]
    assert (rate.before, rate.after, rate.test.verdict) == (None, 600.0, "one side only")


#: cuzk's startup lines as tests/data/cuzk-upstream/cuzk.log has them (engine.rs:1198, 1839, 533).
_BUDGET = ("2026-05-12T14:00:00.041000Z  INFO cuzk_core::engine: memory budget initialized "
           "total_budget_gib={}")
_PIPELINE = ("2026-05-12T14:00:00.061000Z  INFO cuzk_core::engine: starting pipeline: synthesis "
             "task + GPU workers (budget-gated) configured_lookahead=1 max_partitions_in_budget=36 "
             "effective_lookahead=32 synth_worker_count={} num_gpus=2")
_VALIDATE = ("2026-05-12T14:00:00.010000Z  INFO cuzk_core::engine: CUZK_VALIDATE_PARTITIONS=1: "
             "validating per-partition verifier against known-good proof job_id=porep-1-2")


def _settings_of(*lines: str) -> ProverSettings:
    seen, parser = SettingsSeen(), LogParser()
    for text in lines:
        for ev in parser.parse_line(text, "stdout"):
            seen.feed_log(ev)
    return seen.result()


def _advice(stall: str, setting: str) -> Advice:
    return Advice(stall, setting, "change it", "why", "source", [], 1, 1.0, [1])


def test_an_advised_setting_is_said_changed_by_what_shows_it_and_unknown_where_nothing_does(
        ) -> None:
    # The advice names cuzk's TOML keys; cuzk logs the worker count, the budget in GiB and its
    # env knobs' lines. By name alone no advised setting but a few was ever marked changed:
    # the operator who lowered max_parallel_synthesis (synth_worker_count 20 -> 4) was told
    # nothing, and a setting no run shows read as "not changed" (false, not unknown).
    advice = AdviceReport(advice=[
        _advice("pinned_pool", "[pipeline] max_parallel_synthesis"),
        _advice("pinned_pool", "[memory] safety_margin"),
        _advice("dispatch_stall", "env CUZK_VALIDATE_PARTITIONS"),
        _advice("srs_loading", "[memory] eviction_min_idle")])
    before = _side("BEFORE", _every(20.0, 2.0, "pcie_starved", "pinned_pool"))
    before.settings = _settings_of(_BUDGET.format(512), _PIPELINE.format(20), _VALIDATE)
    before.advice = advice
    after = _side("AFTER", _every(20.0, 1.0, "pcie_starved", "pinned_pool"))
    after.settings = _settings_of(_BUDGET.format(512), _PIPELINE.format(4))
    c = compare(before, after)
    said = {a["setting"]: a for a in predicted_vs_achieved(c)["advice"]}
    cap = said["[pipeline] max_parallel_synthesis"]
    assert cap["changed"] is True
    assert cap["shown_by"] == [{"setting": "synth_worker_count", "before": "20", "after": "4"}]
    assert said["[memory] safety_margin"]["changed"] is False
    # Its line comes only when cuzk validates a PoRep: "not seen" is unset, or unused there.
    assert said["env CUZK_VALIDATE_PARTITIONS"]["changed"] is None
    assert said["[memory] eviction_min_idle"]["changed"] is None
    text = format_text(c)
    assert "    changed: synth_worker_count 20 → 4" in text
    assert "    unchanged: [memory] total_budget (GiB) 512 on both" in text
    assert ("    changed? not known: CUZK_VALIDATE_PARTITIONS on one side only: its line shows "
            "only when used") in text
    assert "    changed? not known: not shown by both runs ([memory] eviction_min_idle)" in text
    assert all(len(line) <= 100 for line in text.splitlines())
    assert to_json(c)["payoff"]["advice"][0]["shown_by"] == cap["shown_by"]

    # Only the budget changed (512 -> 100 GiB), and synth_worker_count with it (18 -> 7): the
    # cap was said changed though the operator never touched it.
    after.settings = _settings_of(_BUDGET.format(100), _PIPELINE.format(7))
    before.settings = _settings_of(_BUDGET.format(512), _PIPELINE.format(18))
    said = {a["setting"]: a for a in predicted_vs_achieved(compare(before, after))["advice"]}
    assert said["[pipeline] max_parallel_synthesis"]["changed"] is None
    assert said["[pipeline] max_parallel_synthesis"]["changed_not_known_why"] == (
        "synth_worker_count moves with [memory] total_budget (GiB) too, which changed "
        "(512 → 100)")
    assert said["[memory] safety_margin"]["changed"] is True  # the budget is what shows it



def test_a_setting_one_side_does_not_show_is_not_shown_never_changed_in_every_output() -> None:
    # The H200 host-stall pair: BEFORE's log lacks the 'starting pipeline' and 'memory
    # budget' lines. Its table marked "*synth_worker_count  -  2" and "what changed:
    # total_budget - → 512, ..." a few lines under "changed? not known: not shown by both
    # runs (synth_worker_count)": one output, both changed and not known.
    advice = AdviceReport(advice=[_advice("host_stall", "[pipeline] max_parallel_synthesis")])
    before = _side("BEFORE", _every(20.0, 2.0, "host_stall", "waits_on_synthesis"))
    before.settings = _settings_of(_VALIDATE)
    before.advice = advice
    after = _side("AFTER", _every(20.0, 1.0, "host_stall", "waits_on_synthesis"))
    after.settings = _settings_of(_BUDGET.format(512), _PIPELINE.format(2))
    c = compare(before, after)
    assert not c.setting_changes
    text = format_text(c)
    rows = [line for line in text.splitlines() if "synth_worker_count" in line
            and line.rstrip().endswith("2")]
    assert rows and not any(line.startswith(" *") for line in rows)
    assert not any(line.startswith(" *") for line in text.split("Settings")[1]
                   .split("\n\n")[0].splitlines())
    assert "what changed" not in text and "no setting the sides show changed" in text
    assert "changed? not known: not shown by both runs (synth_worker_count)" in text
    assert "changed? not known: not shown by both runs: [memory] total_budget (GiB), " \
           "effective_lookahead" in text
    md = format_markdown(c)
    assert "**changed**" not in md and "what changed" not in md
    doc = to_json(c)["settings"]
    assert doc["changed"] == []
    shown_once = {x["setting"]: (x["before"], x["after"]) for x in doc["not_shown"]}
    assert shown_once["synth_worker_count"] == (None, "2")
    assert shown_once["[memory] total_budget (GiB)"] == (None, "512")
    # The env knob BEFORE's line shows, its line not in AFTER's: not known, not a change.
    assert shown_once["CUZK_VALIDATE_PARTITIONS"][0] == "1"
    # Shown by both and different: changed, marked, and said.
    after.settings = _settings_of(_VALIDATE, _BUDGET.format(512), _PIPELINE.format(2))
    before.settings = _settings_of(_VALIDATE, _BUDGET.format(256), _PIPELINE.format(2))
    c = compare(before, after)
    assert [(x.setting, x.before, x.after) for x in c.setting_changes] == [
        ("[memory] total_budget (GiB)", "256", "512")]
    assert " *[memory] total_budget (GiB)" in format_text(c)
    assert "what changed: [memory] total_budget (GiB) 256 → 512" in format_text(c)
    assert "| \\[memory\\] total\\_budget (GiB) **changed** | 256 | 512 |" in format_markdown(c)
    assert to_json(c)["settings"]["not_shown"] == []


_DISPATCHER = ("2026-05-12T14:00:00.081000Z  INFO cuzk_core::engine: synthesis dispatcher started "
               "(budget-gated) max_batch_size={} max_batch_wait_ms={} slot_size=0 "
               "synthesis_concurrency=1")


def _batch_wait_advice(held: list[SlimGap]) -> AdviceReport:
    """The advice on the first three of `held`, each an 8 s batch wait (cuzk's collector
    holding a request): `[scheduler] max_batch_wait_ms` lowered."""
    return advise([Gap(gap_id=g, gpu=0, kind="host_stall", start_mono_ns=0, start_s=x.start_s,
                       end_mono_ns=1, end_s=x.start_s + 8.0, duration_s=8.0,
                       pcie_rx_bytes_per_s=1e6, pcie_tx_bytes_per_s=1e6,
                       link_bytes_per_s=63e9, prover_cause="batch_wait")
                   for g, x in enumerate(held[:3])], PipelineView())


def test_a_batch_wait_closed_by_lowering_max_batch_wait_ms_is_said_changed() -> None:
    """The advice for a batch wait: max_batch_size = 1, or a lower max_batch_wait_ms to keep
    batching. It named both in one advice of max_batch_size, so a run that lowered the wait
    read "unchanged: [scheduler] max_batch_size 2 on both"."""
    held = _every(20.0, 8.0, "host_stall", "batch_wait")
    before = _side("BEFORE", held)
    before.settings = _settings_of(_DISPATCHER.format(2, 10000))
    before.advice = _batch_wait_advice(held)
    after = _side("AFTER", _every(20.0, 1.0, "host_stall", "batch_wait"))
    after.settings = _settings_of(_DISPATCHER.format(2, 1000))
    said = {a["setting"]: a["changed"] for a in predicted_vs_achieved(compare(before, after))["advice"]}
    assert said == {"[scheduler] max_batch_size": False, "[scheduler] max_batch_wait_ms": True}


_START = ("2026-05-12T14:{}.000000Z  INFO cuzk_core::engine: starting cuzk engine "
          "pipeline_enabled=true")
_WORKERS = ("2026-05-12T14:{}.001000Z  INFO cuzk_core::engine: initializing GPU workers num_gpus=1 "
            "gpu_workers_per_device={} total_workers=2 gpus=[0]")
#: 2026-05-12T14:00:00Z, the wall time of the lines above at minute 00.
_T0 = 1_778_594_400.0


def test_a_restart_inside_a_side_is_said_with_the_settings_that_changed_at_it() -> None:
    # BEFORE's log holds cuzk's start before its first busy reading and a restart 30 minutes in,
    # where the operator's change was made: its settings column showed only the last (2, as
    # AFTER), "no setting differs", and nothing said that BEFORE is two runs.
    before = _side("BEFORE", _every(20.0, 2.0, "pcie_starved", "pinned_pool", offset_s=_T0 + 60),
                   t0_s=_T0 + 60)
    before.settings = _settings_of(_START.format("00:00"), _WORKERS.format("00:00", 1),
                                   _START.format("30:00"), _WORKERS.format("30:00", 2),
                                   # The same start read twice (a recording and its --log): one.
                                   _START.format("30:00"))
    # AFTER as `--at 14:30` reads it: the startup lines from before the window replayed, then
    # the new start; its first busy reading after both: no restart inside it.
    after = _side("AFTER", _every(20.0, 2.0, "pcie_starved", "pinned_pool", offset_s=_T0 + 1860),
                  t0_s=_T0 + 1860)
    after.settings = before.settings
    c = compare(before, after)
    [said] = [n for n in c.notes if "restart(s) of cuzk" in n]
    assert said.startswith("BEFORE holds 1 restart(s) of cuzk after its first busy reading")
    assert "changed at them: [gpus] gpu_workers_per_device 1 → 2" in said
    assert said.endswith("leave them out: --before-since 2026-05-12T14:30:01")
    assert not [n for n in c.notes if n.startswith("AFTER holds")]
    assert all(len(line) <= 100 for line in format_text(c).splitlines())


def test_an_at_windows_restart_note_counts_only_its_own_and_says_a_span_that_leaves_them_out(
        ) -> None:
    """`compare REC --at 14:30 --span 25m`: each side is a window of one recording whose log
    is read whole (its startup lines replayed for the settings). The note counted the starts
    after each side's window too (BEFORE 4 where `report --since 14:05 --until 14:30` says 1)
    and said `--at` the recording's last one, outside both windows: followed, it said itself
    again. Each side counts the starts its window holds (`since <= t < until`) after its first
    busy reading; the way out keeps the moment and takes a span that holds none of them."""
    starts = [_START.format(m) for m in ("00:00", "10:00", "40:00", "50:00", "57:00")]
    settings = _settings_of(*starts)
    before = _side("BEFORE", [], span_s=1440.0, t0_s=_T0 + 360)
    before.window = TimeWindow(_T0 + 300, _T0 + 1800, "--at 14:30 --span 25m")
    after = _side("AFTER", [], span_s=1380.0, t0_s=_T0 + 1860)
    after.window = TimeWindow(_T0 + 1800, _T0 + 3300, "--at 14:30 --span 25m")
    before.settings = after.settings = settings
    notes = [n for n in compare(before, after).notes if "restart(s) of cuzk" in n]
    assert [n.split(" restart(s)")[0] for n in notes] == ["BEFORE holds 1", "AFTER holds 2"]
    # BEFORE's since after 14:10, AFTER's until before 14:40: 599 s on each side.
    assert all(n.endswith("leave them out: --at 2026-05-12T14:30:00 --span 599s") for n in notes)
    # Followed, no side holds a restart.
    before.window = TimeWindow(_T0 + 1800 - 599, _T0 + 1800, "--at 14:30 --span 599s")
    after.window = TimeWindow(_T0 + 1800, _T0 + 1800 + 599, "--at 14:30 --span 599s")
    before.totals = [replace(t, first_busy_s=_T0 + 1800 - 590) for t in before.totals]
    after.totals = [replace(t, last_busy_s=_T0 + 1800 + 590) for t in after.totals]
    assert not [n for n in compare(before, after).notes if "restart(s) of cuzk" in n]


def test_a_restart_inside_a_sides_own_window_is_said_as_of_a_whole_recording_not_a_span(
        ) -> None:
    """A side read over its own `--since/--until` shares no moment with the other: a restart
    inside it points at its own since past the restart (as a whole recording's does), never
    `--at` (refused beside `--since`) nor `--at` the window's end with a `--span` (the `--at`
    cut's way out, which named a moment of no cut)."""
    settings = _settings_of(*[_START.format(m) for m in ("00:00", "10:00")])
    before = _side("BEFORE", [], span_s=1440.0, t0_s=_T0 + 360)
    before.window = TimeWindow(_T0 + 300, _T0 + 1800, "--since 14:05 --until 14:30")
    before.window_own = True
    after = _side("AFTER", [], span_s=1380.0, t0_s=_T0 + 1860)
    before.settings = settings
    [said] = [n for n in compare(before, after).notes if "restart(s) of cuzk" in n]
    assert said.startswith("BEFORE holds 1 restart(s)")
    assert said.endswith("leave them out: --before-since 2026-05-12T14:10:01")


def test_a_restart_in_two_recordings_points_at_that_sides_own_since_and_one_recording_at_at(
        ) -> None:
    """Two recordings, AFTER's cuzk restarted 10 minutes in: the note said `--at` the restart,
    which reads BEFORE only up to that moment (its restarts, if any, kept) and AFTER, another
    run, from that wall-clock moment of its own recording. What leaves AFTER's restart out is
    its own window from it on. One recording read whole on both sides is cut with `--at`."""
    before = _side("BEFORE", _every(20.0, 2.0, "pcie_starved", "pinned_pool", offset_s=_T0 + 1),
                   t0_s=_T0 + 1)
    after = _side("AFTER", _every(20.0, 2.0, "pcie_starved", "pinned_pool", offset_s=_T0 + 1),
                  t0_s=_T0 + 1)
    after.settings = _settings_of(_START.format("00:00"), _START.format("10:00"))
    [said] = [n for n in compare(before, after).notes if "restart(s) of cuzk" in n]
    assert said.startswith("AFTER holds 1 restart(s)")
    assert said.endswith("leave them out: --after-since 2026-05-12T14:10:01")
    assert "--at" not in said
    after.path = before.path
    before.settings = after.settings
    notes = [n for n in compare(before, after).notes if "restart(s) of cuzk" in n]
    assert all(n.endswith("compare across the last: --at 2026-05-12T14:10:00") for n in notes)


def test_a_crash_loop_inside_a_side_points_at_its_last_start_not_the_64th() -> None:
    # 200 starts 10 s apart after the first busy reading: the first 64 were kept, and the note
    # said "64 restart(s)" and `--at` the 64th (14:10:40) where the loop went on to 14:33:20.
    before = _side("BEFORE", _every(20.0, 2.0, "pcie_starved", "pinned_pool", offset_s=_T0 + 1),
                   t0_s=_T0 + 1)
    starts = [_START.format(f"{(10 + 10 * i) // 60:02d}:{(10 + 10 * i) % 60:02d}")
              for i in range(200)]
    before.settings = _settings_of(*starts)
    after = _side("AFTER", _every(20.0, 2.0, "pcie_starved", "pinned_pool", offset_s=_T0 + 1),
                  t0_s=_T0 + 1)
    c = compare(before, after)
    [said] = [n for n in c.notes if "restart(s) of cuzk" in n]
    assert said.startswith("BEFORE holds more than 64 restart(s)")
    assert said.endswith("--before-since 2026-05-12T14:33:21")


def test_sides_on_other_gpus_or_links_say_so_and_claim_no_share_of_the_predicted_gain(
        tmp_path: Path) -> None:
    """An H200 box's pageable run against an H100 box's pinned one, its link trained Gen4:
    the GPUs were compared by index only, so nothing was said, and the ratio read "1.82× by
    partitions/h (85 % of the predicted gain)", the hardware's difference taken for the
    setting's. The head says how the GPUs differ and on which machines; no share is claimed;
    every line within 100 columns."""
    with gzip.open(PINNED, "rt") as f:
        lines = f.read().splitlines()
    header = json.loads(lines[0])
    header["host"] = "other-box"
    for g in header["gpus"]:
        g.update(name="NVIDIA H100 80GB HBM3", link_gen=4, link_bytes_per_s=31.5e9)
    other = tmp_path / "h100.jsonl.gz"
    with gzip.open(other, "wt") as f:
        f.write("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    c = _compare(PAGEABLE, other)
    notes = " ".join(c.notes)
    assert ("different hardware: GPU 0 NVIDIA H200 → NVIDIA H100 80GB HBM3; GPU 0 PCIe Gen5 "
            "x16 → PCIe Gen4 x16") in notes
    assert "different machines: BEFORE on vm, AFTER on other-box" in notes
    ach = to_json(c)["payoff"]["achieved"]
    assert ach["verdict"] == "better" and ach["share_of_predicted_gain"] is None
    assert ach["hardware_differs"] is True
    text = format_text(c)
    flat = " ".join(text.split())
    assert "% of the predicted gain" not in flat
    assert "other GPUs or links, so not a measure of the change" in flat
    assert max(len(line) for line in text.splitlines()) <= 100
    # The same machine and GPUs: nothing said, the share claimed as before.
    same = _compare(PAGEABLE, PINNED)
    assert not [n for n in same.notes if n.startswith(("different hardware", "different mach"))]
    assert to_json(same)["payoff"]["achieved"]["share_of_predicted_gain"] is not None


def test_two_simulator_scenarios_are_the_same_hardware_and_the_gain_is_measured(
        tmp_path: Path) -> None:
    """A `sim:pageable` run against a `sim:chained` one (docs/compare.md's example): the two
    simulate one H200 on one link, the scenario being the prover's settings. The simulator put
    the scenario in the GPU's name, so compare said "different hardware: GPU 0 Simulated H200
    (pageable) → Simulated H200 (chained)" and claimed no share of the predicted gain: the
    very comparison the simulator is there to show read as not a measure of the change."""
    before = _sim_recording(tmp_path, "pageable", 60, 1)
    after = _sim_recording(tmp_path, "chained", 60, 1)
    c = _compare(before, after)
    assert not [n for n in c.notes if n.startswith("different hardware")]
    ach = to_json(c)["payoff"]["achieved"]
    assert ach["hardware_differs"] is False
    assert ach["verdict"] == "better" and ach["share_of_predicted_gain"] is not None


def _with_health(tmp_path: Path, name: str, masks: list[int], xid: bool) -> Path:
    """The chained H200 recording with one health reading a second of these clocks-event
    masks on GPU 0 (and an XID 79 at 5 s)."""
    with gzip.open(PINNED, "rt") as f:
        lines = f.read().splitlines()
    records = [json.loads(line) for line in lines[1:]]
    first = next(r for r in records if r.get("type") == "gpu")
    for s, mask in enumerate(masks):
        records.append({"type": "health", "gpu": 0, "t_mono_ns": first["t_mono_ns"] + s * 10**8,
                        "t_wall_s": first["t_wall_s"] + s / 10, "clocks_event_mask": mask})
    if xid:
        records.append({"type": "hw_event", "gpu": 0, "t_wall_s": first["t_wall_s"] + 5,
                        "t_mono_ns": first["t_mono_ns"] + 5 * 10**9, "kind": "xid", "code": 79})
    records.sort(key=lambda r: r.get("t_wall_s", r.get("start_s", 0.0)))
    out = tmp_path / f"{name}.jsonl.gz"
    with gzip.open(out, "wt") as f:
        f.write("\n".join([lines[0], *map(json.dumps, records)]) + "\n")
    return out


def test_a_side_whose_gpu_erred_or_was_held_down_by_heat_says_so(tmp_path: Path) -> None:
    """AFTER's GPU throttled by heat in 40 % of its health readings and had an XID: compare
    read its figures as the setting's alone. Its notes say the GPU's state; a GPU at its power
    cap (a loaded GPU's normal) is not said, nor heat in under 5 % of the readings; two
    reasons count a reading once (4 thermal and 4 HW slowdown of 100 are 8 %)."""
    hot = _with_health(tmp_path, "hot", [0x20 if s % 5 < 2 else 0x4 for s in range(20)], True)
    c = _compare(PAGEABLE, hot)
    [said] = [n for n in c.notes if n.startswith("AFTER had")]
    assert said.startswith("AFTER had GPU errors xid 1; clocks held down: GPU 0 thermal in 40 % "
                           "of its health readings: its figures show the GPU's state"), said
    assert not [n for n in c.notes if n.startswith("BEFORE had")]
    assert said in to_json(c)["notes"]
    two = _with_health(tmp_path, "two", [0x20] * 4 + [0x8] * 4 + [0x4] * 92, False)
    [said] = [n for n in _compare(PAGEABLE, two).notes if n.startswith("AFTER had")]
    assert "GPU 0 thermal, HW slowdown in 8 % of its health readings" in said, said
    warm = _with_health(tmp_path, "warm", [0x20] * 3 + [0x4] * 97, False)
    assert not [n for n in _compare(PAGEABLE, warm).notes if n.startswith("AFTER had")]


def test_idle_with_the_pipeline_empty_is_the_loads_never_judged_worse() -> None:
    """The batch hold removed (max_batch_size 2 -> 1): BEFORE's gaps were held for a batch, AFTER's
    are what was always inside them, Curio's turnaround and the new request's first synthesis
    with cuzk's pipeline empty (`empty_pipeline`), one a proof, more of them an hour as more
    proofs run. That read "new, worse", as if the change had made a loss: it is how the work
    comes, not a setting's, so it is not judged (and is not want of work: the load holds)."""
    before = _batching(_side("BEFORE", _every(20.0, 8.0, "host_stall", "batch_wait")), 2)
    after = _batching(_side("AFTER", _every(11.5, 2.3, "host_stall", "empty_pipeline")), 1)
    c, verdicts = _judged(before, after)
    assert verdicts["idle s/h, prover: empty_pipeline"] == "load"
    assert verdicts["idle s/h, prover: batch_wait"] == "better"
    assert not c.load_differs


def _box(label: str, gpus: dict[int, tuple[float, list[SlimGap]]]) -> Side:
    """A side of the GPUs given, each (seconds between its partitions, its gaps), an hour."""
    sides = [_side(label, gaps) for gaps in (g for _every_s, g in gpus.values())]
    totals = [replace(s.totals[0], gpu=gpu) for s, gpu in zip(sides, gpus, strict=True)]
    ends: list[tuple[int | None, float]] = [
        (gpu, i * every_s) for gpu, (every_s, _g) in gpus.items()
        for i in range(1, int(3600 // every_s))]
    busy = sum(t.busy_s for t in totals) / sum(t.active_s for t in totals)
    return replace(sides[0], totals=totals, partition_ends=ends, busy_fraction=busy,
                   gaps=[g for _e, gaps in gpus.values() for g in gaps],
                   partitions_per_hour=len(ends), payoff_all=IfClosed(300.0, 0.99, 1.23))


def test_two_gpus_against_one_achieve_by_each_boxs_totals_said_not_comparable() -> None:
    """BEFORE: GPU 0 starved (2,400 partitions/h), GPU 1 at full speed (4,000/h); AFTER: one
    GPU at 4,000/h. The achieved line mixed the box's busy share, GPU 0's partitions/h (×1.67)
    and a box-wide prediction ("277 % of the predicted gain") while the box's partitions/h fell
    6,400 → 4,000. Each box against the other, and not a measure of the change."""
    starved = [g._replace(gpu=0) for g in _every(20.0, 8.0, "pcie_starved", "pinned_pool")]
    before = _box("BEFORE", {0: (1.5, starved), 1: (0.9, [])})
    after = _box("AFTER", {0: (0.9, [])})
    c = compare(before, after, window_s=60.0)
    assert _figure(c, "partitions/h").test.verdict == "better"  # GPU 0 against GPU 0: true
    ach = predicted_vs_achieved(c)["achieved"]
    assert ach["basis"] == "partitions/h"
    assert before.partitions_per_hour and after.partitions_per_hour
    # The boxes' totals (about 6,400 and 4,000 an hour), not GPU 0's 2,400.
    assert ach["throughput_ratio"] == after.partitions_per_hour / before.partitions_per_hour
    assert ach["verdict"] == "not comparable" and ach["share_of_predicted_gain"] is None
    assert ach["gpu_counts"] == [2, 1]
    line = " ".join(format_text(c).split("  achieved:")[1].split("\n\n")[0].split())
    assert "0.62× by partitions/h of each box: not comparable: 2 GPU(s) before, 1 after" in line
    assert "predicted gain" not in line
    # The table says what the payoff says: the boxes' rows ("all GPUs", shown though the sides
    # share one GPU), their partitions/h the totals' 0.62x, not comparable (GPU 0's x1.67
    # "better" was the only rate row beside a payoff whose box fell).
    box = _figure(c, "partitions/h", gpu=ALL)
    assert (box.before, box.after) == (before.partitions_per_hour, after.partitions_per_hour)
    assert box.test.verdict == "not comparable"
    # With a GPU more on each side, "all GPUs" is the box: its partitions/h, 2 GPUs' output
    # against 3's, is not comparable either.
    three = _box("AFTER", {0: (0.9, []), 1: (0.9, []), 2: (0.9, [])})
    assert _figure(compare(before, three, window_s=60.0), "partitions/h",
                   gpu=ALL).test.verdict == "not comparable"
    # Like with like, one GPU each, the ratio is judged and its share claimed.
    one = _box("BEFORE", {0: (1.5, starved)})
    same = predicted_vs_achieved(compare(one, after, window_s=60.0))["achieved"]
    assert same["verdict"] == "better" and same["share_of_predicted_gain"] is not None


def test_windows_all_apart_are_never_no_measurable_change_and_gone_is_said_only_of_a_change(
        ) -> None:
    """gaps/h 1892 → 0: every BEFORE window above 1000 (a start-up ramp in its first three),
    every AFTER window 0. The test, widened for that ramp's drift (p 0.048), said "no
    measurable change" beside "gone": the sides looked alike, and did not. Windows all apart
    that the test cannot tell from drift are too few windows; a figure that falls to 0 is
    "gone" only beside a verdict that tells a change."""
    before = [1080.0, 1200.0, 1740.0, 2160.0, 2220.0, 2100.0, 2100.0, 2040.0, 2160.0, 2125.0]
    after = [0.0] * 10
    test = judge(before, after, "lower", False)
    assert test.p_value is not None and test.p_value > 0.01
    assert test.verdict == "too few windows"
    # Windows mixed, the test not telling them apart, or within the floor: no measurable
    # change (windows not mixed: not shown, below).
    assert judge([100.0, 104.0] * 5, [101.0, 103.0] * 5, "lower", False).verdict == (
        "no measurable change")
    assert judge([0.0, 120.0] * 5, [0.0] * 10, "lower", False).verdict == (
        "no measurable change")
    rows = {}
    for verdict in ("too few windows", "no measurable change", "better"):
        f = Figure(0, "gaps/h", "lower", False, 1892.0, 0.0, spread(before), spread(after),
                   compare_stats.Test(test.p_value, -1892.0, verdict))
        rows[verdict] = change(f)
    assert rows == {"too few windows": "to 0", "no measurable change": "to 0", "better": "gone"}


def test_one_tied_window_does_not_make_a_large_untold_change_no_measurable_change() -> None:
    """1698 gaps an hour against none, one BEFORE window at 0 (a first minute spent reloading):
    no longer every window apart, the test at p 0.014 read "no measurable change". A change
    above the floor that the test did not tell is not shown, never the sides alike."""
    before = [0.0, 1300.0, 1500.0, 1700.0, 1900.0, 2000.0, 2100.0, 2150.0, 2166.0, 2166.0]
    test = judge(before, [0.0] * 10, "lower", False)
    assert test.p_value is not None and 0.01 <= test.p_value < 0.05
    assert test.verdict == "not shown"


def test_a_gain_beside_advice_left_unchanged_names_what_changed_and_is_not_the_advices() -> None:
    """`sim:pageable` against `sim:chained`: the advice's `[memory] total_budget` read
    "unchanged ... on both", then "achieved ... (108 % of the predicted gain)", and no line
    said what had changed (synth_worker_count 20 → 4). The line under what AFTER achieved
    names what the sides show changed, and where every advised setting stayed, that the gain
    is not the advice's."""
    held = _every(20.0, 8.0, "host_stall", "batch_wait")
    before = _side("BEFORE", held)
    before.settings = _settings_of(_DISPATCHER.format(2, 10000), _WORKERS.format("00:00", 1))
    before.advice = _batch_wait_advice(held)
    after = _side("AFTER", _every(20.0, 1.0, "host_stall", "batch_wait"))
    after.settings = _settings_of(_DISPATCHER.format(2, 10000), _WORKERS.format("00:00", 2))
    c = compare(before, after)
    assert predicted_vs_achieved(c)["advice_changed"] is False
    payoff = " ".join(format_text(c).split("Payoff:")[1].split("Method:")[0].split())
    assert "unchanged: [scheduler] max_batch_size 2 on both" in payoff
    assert ("what changed: [gpus] gpu_workers_per_device 1 → 2; not the advised settings "
            "(unchanged), so not the advice's doing") in payoff
    # The advice followed: what changed is its setting, and nothing disowns the gain.
    after.settings = _settings_of(_DISPATCHER.format(2, 1000), _WORKERS.format("00:00", 1))
    c = compare(before, after)
    assert predicted_vs_achieved(c)["advice_changed"] is True
    payoff = " ".join(format_text(c).split("Payoff:")[1].split("Method:")[0].split())
    assert "what changed: [scheduler] max_batch_wait_ms 10000 → 1000" in payoff
    assert "not the advice's" not in payoff


def test_the_report_its_advice_and_compare_say_one_payoff_in_one_rules_words(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The report's Payoff section said "about 1.85× throughput" with neither span nor gaps,
    while its advice said "throughput ~1.85x over 30 s of GPU time (15 gaps)" for the same
    figure, and compare "1.85× throughput": every one is said by `core.payoff.gpu_time_words`
    (`gain_words`). The run's budget line (512 GiB, as the same load's H100 run logged it) is
    given, so its pinned pool has a setting: a budget above the host's 125.9 GiB of RAM
    (tests/test_pinned_pool_host.py)."""
    budget = tmp_path / "budget.log"
    budget.write_text("2026-11-30T10:03:38.900000Z  INFO cuzk_core::engine: memory budget "
                      "initialized total_budget_gib=512\n")
    assert main(["report", str(PAGEABLE), "--log", str(budget), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    starved = doc["payoff"]["overall"]["if_closed"]["pcie_starved"]
    every = doc["payoff"]["overall"]["if_closed"]["all"]
    (advice,) = doc["advice"]
    words = gpu_time_words(starved["throughput_gain"], starved["span_s"], advice["gaps"])
    assert words == "~1.85x over 30 s of GPU time (15 gaps)"
    all_words = gpu_time_words(every["throughput_gain"], every["span_s"], 16)
    assert main(["report", str(PAGEABLE), "--log", str(budget)]) == 0
    text = capsys.readouterr().out
    assert f"closing pcie_starved gaps: busy 51 % → 94 %, throughput {words}, " in text
    assert f"closing all gaps: busy 51 % → 100 %, throughput {all_words}, " in text
    assert f"payoff if closed: busy → 94 %, throughput {words}\n" in text
    assert "×" not in text
    assert main(["compare", str(PAGEABLE), str(PINNED), "--before-log", str(budget)]) == 0
    said = capsys.readouterr().out.replace("\n    ", " ")
    # Its gaps are said at the head of its line, not again after the figure.
    predicted = gpu_time_words(starved["throughput_gain"], starved["span_s"], None)
    assert ("[memory] total_budget: 15 pinned pool gap(s), busy → 94%, throughput "
            f"{predicted} changed?") in said
    assert (f"closing every BEFORE gap: busy → 100%, throughput {all_words} (upper bound, "
            "work fixed)") in said
