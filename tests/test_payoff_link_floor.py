"""The payoff of closing gaps is bounded by the GPU's link (`core.payoff.if_closed`'s floor).

Copies are work too: whatever the gaps, a working span can never be shorter than the time the
GPU's link needs to carry the bytes it carried in that span (PCIe RX and TX each at the link's
speed). The H200 transfer-bound run copies 64.4 GB host-to-device per partition over a 63 GB/s
link, its gaps already at 94 % of the link; its report said "throughput ~4.48x ..., 2769 ->
12399 partitions per hour", 222 GB/s of copies (finding F1 of the r1 read).
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path

import pytest
from test_detect_unit import LINK, detector, run, sample

from gapwatch.config import Config
from gapwatch.core.ledger import Tally
from gapwatch.core.models import GpuSample
from gapwatch.core.payoff import IfClosed, gain_words, gpu_time_words, if_closed, link_floor_s
from gapwatch.core.track import GpuTotals
from gapwatch.cuzk.advice import StallGaps
from gapwatch.offline.payoff import gap_payoff, report_payoff
from gapwatch.offline.report import ReportData, build_report

E2E = Path(__file__).parent / "data" / "h200-e2e"


@cache
def _report(case: str) -> ReportData:
    return build_report(E2E / case / "rec.jsonl.gz", Config(), workers=1)


# -- the rule --------------------------------------------------------------------------------


def test_the_floor_is_the_larger_directions_bytes_over_the_link() -> None:
    assert link_floor_s(63e9, 6.3e9, 63e9) == pytest.approx(1.0)
    assert link_floor_s(1e9, 31.5e9, 63e9) == pytest.approx(0.5)
    assert link_floor_s(None, 31.5e9, 63e9) == pytest.approx(0.5)  # one direction read


@pytest.mark.parametrize(("rx", "tx", "link"), [
    (None, None, 63e9),  # no byte reading: no floor, never 0
    (1e9, None, 0.0), (1e9, None, math.nan), (math.nan, None, 63e9), (-1.0, None, 63e9),
])
def test_no_byte_reading_or_no_link_is_no_floor(rx: float | None, tx: float | None,
                                                 link: float) -> None:
    assert link_floor_s(rx, tx, link) is None


def test_closing_gaps_never_shrinks_the_span_below_the_links_floor() -> None:
    closed = if_closed(5.0, 30.0, 25.0, 10, floor_s=20.0)
    assert closed.throughput_gain == pytest.approx(30.0 / 20.0)
    assert closed.busy_fraction == pytest.approx(5.0 / 20.0)
    assert closed.link_limited and closed.link_floor_s == 20.0
    assert closed.json()["link_limited"] is True and closed.json()["link_floor_s"] == 20.0


def test_a_floor_below_the_shortened_span_changes_nothing_but_is_kept() -> None:
    closed = if_closed(5.0, 30.0, 10.0, 4, floor_s=2.0)
    assert closed == IfClosed(10.0, 0.25, 1.5, 30.0, 4, link_floor_s=2.0, link_limited=False)
    assert if_closed(5.0, 30.0, 10.0, 4).link_floor_s is None


def test_idle_filling_the_span_gives_the_links_figure_where_the_floor_is_known() -> None:
    """Without a floor closing all the span has no figure (nothing left); with one, the
    copies still need their time."""
    assert if_closed(None, 10.0, 10.0).throughput_gain is None
    assert if_closed(None, 10.0, 10.0, floor_s=4.0).throughput_gain == pytest.approx(2.5)


def test_a_floor_above_the_span_never_says_closing_gaps_slows_the_gpu() -> None:
    """Rates read above the link the detector assumes (a faster link than it knows) put the
    floor past the span: the gain stays 1, said as the link's limit."""
    closed = if_closed(5.0, 30.0, 10.0, floor_s=40.0)
    assert closed.throughput_gain == pytest.approx(1.0) and closed.link_limited


def test_a_gain_the_link_limits_says_so_with_the_time_its_bytes_need() -> None:
    assert gain_words(1.27, "34 s of GPU time", 18, link_floor_s=26.6) == (
        "~1.27x over 34 s of GPU time (18 gaps) (the link's limit: its bytes need 27 s)")
    assert gpu_time_words(1.27, 34.0, 18, link_floor_s=26.6) == (
        "~1.27x over 34 s of GPU time (18 gaps) (the link's limit: its bytes need 27 s)")
    assert gpu_time_words(1.27, 34.0, 18) == "~1.27x over 34 s of GPU time (18 gaps)"


# -- the detector's bytes --------------------------------------------------------------------


def _totals(samples: list[GpuSample]) -> GpuTotals:
    det = detector()
    run(det, samples)
    (t,) = det.totals()
    return t


def test_the_bytes_are_those_of_the_working_span_only() -> None:
    """Idle before the first busy reading and after the last one is outside the working span:
    its bytes are too (2 s busy at 10 GB/s, 1 s idle at 1 GB/s between, idle around)."""
    samples = [sample(0.1 * k, 0.0, rx=50e9, tx=5e9) for k in range(1, 11)]  # before: out
    samples += [sample(1.0 + 0.1 * k, 80.0, rx=10e9, tx=1e9) for k in range(1, 11)]
    samples += [sample(2.0 + 0.1 * k, 0.0, rx=1e9, tx=0.0) for k in range(1, 11)]
    samples += [sample(3.0 + 0.1 * k, 80.0, rx=10e9, tx=1e9) for k in range(1, 11)]
    samples += [sample(4.0 + 0.1 * k, 0.0, rx=50e9, tx=5e9) for k in range(1, 11)]  # after: out
    t = _totals(samples)
    assert t.active_s == pytest.approx(3.0)
    assert t.pcie_rx_bytes == pytest.approx(2 * 10e9 + 1e9)
    assert t.pcie_tx_bytes == pytest.approx(2 * 1e9)
    assert t.link_floor_s == pytest.approx(21e9 / LINK)


@pytest.mark.parametrize("bad", [None, math.nan, -5.0])
def test_a_rate_that_is_no_reading_adds_no_bytes(bad: float | None) -> None:
    samples = [sample(0.1 * k, 80.0, rx=10e9 if k % 2 else bad, tx=bad) for k in range(1, 21)]
    t = _totals(samples)
    assert t.pcie_rx_bytes == pytest.approx(10 * 0.1 * 10e9)
    assert t.pcie_tx_bytes is None


def test_no_pcie_reading_gives_no_floor_and_the_payoff_unchanged() -> None:
    """A GPU with no PCIe reading (utilization only, say) has no floor: None, never 0, and its
    payoff is work-fixed alone."""
    samples = [sample(0.1 * k, 80.0 if k < 10 or k > 30 else 0.0, rx=None, tx=None)
               for k in range(1, 41)]
    det = detector()
    events = run(det, samples)
    assert any(getattr(e, "gap_id", None) is not None for _, e in events)
    (t,) = det.totals()
    assert (t.pcie_rx_bytes, t.pcie_tx_bytes, t.link_floor_s) == (None, None, None)
    pay = report_payoff([t], {}, None).overall.all
    assert pay.link_floor_s is None and not pay.link_limited


def test_a_gpu_with_no_busy_reading_has_no_bytes() -> None:
    t = _totals([sample(0.1 * k, 0.0, rx=10e9) for k in range(1, 21)])
    assert t.active_s == 0.0 and t.pcie_rx_bytes is None and t.link_floor_s is None


def _gpu_totals(gpu: int, rx_bytes: float) -> GpuTotals:
    """A GPU busy 50 s of a 100 s working span whose link carried `rx_bytes` in it."""
    link = 63e9
    return GpuTotals(gpu=gpu, link_bytes_per_s=link, data_s=100.0, busy_s=50.0, active_s=100.0,
                     first_busy_s=0.0, last_busy_s=100.0, last_wall_s=100.0, confidence="high",
                     final_state="CHAINED", pcie_rx_bytes=rx_bytes, pcie_tx_bytes=0.0)


def test_over_several_gpus_each_gpus_span_keeps_its_own_links_floor() -> None:
    """GPU 0 transfer-bound (its bytes need 95 s of its 100 s span, 50 s of gaps), GPU 1
    host-stalled with no copies (50 s of gaps). Summed, GPU 1's spare span hid GPU 0's full
    link: closing every gap was said ~1.33x with no limit, closing the transfer-bound gaps
    ~1.33x; each GPU's span shrinks by its own gaps, never below its own floor: 200 / (95 + 50)
    and 200 / (95 + 100), the link's limit said."""
    totals = [_gpu_totals(0, 95 * 63e9), _gpu_totals(1, 0.0)]
    tally = {(0, "transfer_bound"): Tally(10, 50.0), (1, "host_stall"): Tally(10, 50.0)}
    overall = report_payoff(totals, tally, None).overall.if_closed_by_kind
    assert overall["all"].throughput_gain == pytest.approx(200 / 145)
    assert overall["transfer_bound"].throughput_gain == pytest.approx(200 / 195)
    assert overall["transfer_bound"].link_limited and overall["all"].link_limited
    # The host stalls close on GPU 1 alone, whose link carried nothing: no limit.
    assert overall["host_stall"].throughput_gain == pytest.approx(200 / 150)
    assert not overall["host_stall"].link_limited
    # An advice over GPU 0's transfer-bound gaps: the same rule.
    gaps = StallGaps("transfer_bound")
    gaps.idle_by_gpu[0] = 50.0
    gaps.durations.append(50.0)
    assert gap_payoff(totals, gaps).throughput_gain == pytest.approx(200 / 195)


def test_over_several_gpus_the_links_limit_names_the_gpu_whose_bytes_need_the_time() -> None:
    """The same two GPUs: the report said "(the link's limit: its bytes need 145 s)", 145 s
    being the shortest the two spans summed can be (GPU 0's 95 s of bytes and GPU 1's 50 s
    left), no GPU's bytes. The words name the GPU whose bytes set it and their own time; of
    several, the slowest."""
    from gapwatch.offline.report_text import _payoff_lines

    totals = [_gpu_totals(0, 95 * 63e9), _gpu_totals(1, 0.0)]
    tally = {(0, "transfer_bound"): Tally(10, 50.0), (1, "host_stall"): Tally(10, 50.0)}
    payoff = report_payoff(totals, tally, None)
    every = payoff.overall.all
    assert every.link_limit_s == pytest.approx(145.0)
    text = "\n".join(_payoff_lines(payoff))
    assert "(the link's limit: GPU 0's bytes need 95 s)" in text
    assert "its bytes need" not in text
    both = report_payoff([_gpu_totals(0, 95 * 63e9), _gpu_totals(1, 80 * 63e9)],
                         {(0, "transfer_bound"): Tally(10, 50.0),
                          (1, "transfer_bound"): Tally(10, 50.0)}, None)
    line = "\n".join(_payoff_lines(both))
    assert "(the links' limit: the slowest GPU's bytes, GPU 0's, need 95 s)" in line
    # One GPU's own payoff says its own bytes, as ever.
    (one, _) = payoff.per_gpu
    words = gpu_time_words(2.0, 100.0, 10, one.closing.all.link_limit_s,
                           one.closing.all.limited_by)
    assert words.endswith("(the link's limit: its bytes need 95 s)")


# -- the H200 recordings ---------------------------------------------------------------------


def test_a_transfer_bound_payoff_is_capped_at_the_links_limit() -> None:
    """F1: 12,399 partitions an hour at 64.4 GB each is 222 GB/s over a 63 GB/s link. At
    most the link's 63 GB/s of partitions is 1.27x the 2769/h the run did."""
    rep = _report("transfer-bound")
    truth = json.loads((E2E / "transfer-bound" / "truth.json").read_text())
    (t,) = rep.totals
    pph = rep.payoff.partitions_per_hour
    assert pph is not None
    link_pph = t.link_bytes_per_s / truth["intervals"][0]["copy_bytes"] * 3600
    for closed in rep.payoff.overall.if_closed_by_kind.values():
        assert closed.link_limited
        assert closed.throughput_gain is not None
        assert pph * closed.throughput_gain <= link_pph * 1.02
        assert 1.0 < closed.throughput_gain < 1.35
    # Each advice's payoff (`gap_payoff`, over the same totals) rests on the same floor.
    gaps = StallGaps("transfer")
    for g in rep.gaps:
        gaps.add(g)
    every = gap_payoff(rep.totals, gaps)
    assert every.link_limited and every.throughput_gain == pytest.approx(
        rep.payoff.overall.all.throughput_gain)


def test_the_transfer_bound_report_says_the_links_limit() -> None:
    from gapwatch.offline.report_text import format_text

    text = format_text(_report("transfer-bound"))
    line = next(x for x in text.splitlines() if x.startswith("  closing transfer_bound gaps"))
    assert "(the link's limit: its bytes need " in line
    assert "~4.48x" not in text


@pytest.mark.parametrize("case", ["pageable", "host-stall"])
def test_a_payoff_whose_floor_is_far_below_the_span_is_unchanged(case: str) -> None:
    """Pageable copies and host stalls move a few GB in a span of 30 s: the floor is known and
    far below the shortened span, and the figure is the work-fixed one it always was."""
    rep = _report(case)
    (t,) = rep.totals
    assert t.link_floor_s is not None and t.link_floor_s < 0.1 * t.active_s
    for closed in rep.payoff.overall.if_closed_by_kind.values():
        assert not closed.link_limited and closed.link_floor_s == t.link_floor_s
        assert closed.throughput_gain == pytest.approx(t.active_s / (t.active_s - closed.idle_s))


def test_compares_prediction_says_the_links_limit_of_a_transfer_bound_before(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`compare`'s prediction is the report's payoff of every BEFORE gap: bounded by the same
    floor, and said so, in its text and its JSON."""
    from gapwatch.cli import main

    before = str(E2E / "transfer-bound" / "rec.jsonl.gz")
    after = str(E2E / "chained" / "rec.jsonl.gz")
    assert main(["compare", before, after, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    every = doc["payoff"]["all_gaps"]
    assert every["link_limit_s"] == pytest.approx(_report("transfer-bound").totals[0].link_floor_s)
    assert every["link_limited_by"] == []  # one GPU: its bytes, no GPU to name
    assert every["throughput_gain"] < 1.35
    assert main(["compare", before, after]) == 0
    said = capsys.readouterr().out.replace("\n    ", " ")
    words = gpu_time_words(every["throughput_gain"], every["span_s"], every["gaps"],
                           every["link_limit_s"])
    assert f"closing every BEFORE gap: busy → 29%, throughput {words} (upper bound" in said
    assert "(the link's limit: its bytes need 26 s)" in said


def test_a_floor_past_its_gpus_span_is_that_span_and_limits_nothing_where_no_link_did() -> None:
    """Two GPUs, none link-limited, one with a floor read past its span (rates above the link
    assumed): summed uncapped, their floors passed the shortened span and a limit was said
    that no GPU had. Each floor is capped at its own span."""
    from gapwatch.core.payoff import GpuSpan, floor_over_gpus

    floor = floor_over_gpus([GpuSpan(0, 10.0, 0.0, 12.0), GpuSpan(1, 10.0, 8.0, 0.5)])
    assert floor is not None and floor.floor_s == pytest.approx(10.0 + 0.5)
    assert floor.limited_by == ()
    closed = if_closed(None, 20.0, 8.0, floor_s=floor)
    assert not closed.link_limited
    assert closed.throughput_gain == pytest.approx(20.0 / 12.0)


def test_a_reading_after_a_sampler_stall_counts_its_rate_over_the_usual_spacing_only() -> None:
    """The gap detail's and summary.md's floor over the samples in memory: NVML gives a reading
    after a 60 s stall an interval of the whole stall; its 60 GB/s counted over all of it said
    the link needed 57 s where ~6 GB crossed in a reading's time. Past the samples' usual
    spacing, the rest is a hole (as the detector reads it), not traffic."""
    from gapwatch.core.payoff import samples_link_floor_s

    quiet = [sample(0.1 * k, 90.0, rx=1e9, tx=0.0) for k in range(1, 51)]
    after = sample(65.0, 90.0, rx=60e9, tx=0.0, interval_s=60.0)
    floor = samples_link_floor_s([*quiet, after], LINK)
    assert floor is not None
    assert floor == pytest.approx((49 * 0.1 * 1e9 + 0.1 * 60e9) / LINK)
    assert floor < 1.0
