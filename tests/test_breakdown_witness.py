"""A flag as fast as the facts allow (issue 20): BREAKDOWN waits for a second pcie_starved gap,
unless the copy trace says the first one's copies came from pageable memory; then that fact is
the second witness. Measured on the H200 regression ramp (bench/flag_latency.py), and never a
false flag on chained data."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation import flag_latency as bench
from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import GapDetector
from gapwatch.core.models import CopyRecord, GpuInfo, GpuSample, StateChange

ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data"

WALL0 = 1_796_000_000.0
S = 1_000_000_000


def _sample(t_s: float, sm: float, rx: float) -> GpuSample:
    return GpuSample(gpu=0, t_mono_ns=int(round(t_s * S)), t_wall_s=WALL0 + t_s,
                     interval_ns=100_000_000, sm_active_pct=sm, gpu_util_pct=None,
                     pcie_rx_bytes_per_s=rx, pcie_tx_bytes_per_s=2e6, sm_source="sim")


def _copy(start_s: float, end_s: float, kind: str) -> CopyRecord:
    return CopyRecord(WALL0 + start_s, WALL0 + end_s, 3 << 30, "h2d", kind,  # type: ignore[arg-type]
                      "device", 0, 0, 13, 1, 7, 4242)


def _states(copy_kind: str | None, witness: bool = True, until_s: float = 12.0
            ) -> list[StateChange]:
    """Busy 2 s, one starved gap 2-4 s (H2D at 3 GB/s), busy again; the copy trace's copy of
    that gap (2.0-3.5 s) arrives at 3.6 s, while the gap is still open."""
    det = GapDetector(DetectorConfig(breakdown_pageable_witness=witness),
                      [GpuInfo(index=0, link_bytes_per_s=63e9, sm_source="sim")], period_s=0.1)
    out: list[StateChange] = []
    t = 0.1
    while t <= until_s + 1e-9:
        starved = 2.0 <= t < 4.0
        out += [e for e in det.feed(_sample(t, 0.0 if starved else 95.0,
                                            3e9 if starved else 2e6))
                if isinstance(e, StateChange)]
        if copy_kind is not None and abs(t - 3.6) < 1e-6:
            out += [e for e in det.feed(_copy(2.0, 3.5, copy_kind)) if isinstance(e, StateChange)]
        t = round(t + 0.1, 6)
    return out


def test_one_starved_gap_with_pageable_copies_is_a_breakdown_as_soon_as_the_copies_arrive() -> None:
    states = _states("pageable")
    (bd,) = [s for s in states if s.state == "BREAKDOWN"]
    assert bd.t_wall_s == pytest.approx(WALL0 + 3.7, abs=0.11)  # the sample after the copy came
    assert bd.reason == ("1 pcie_starved gap in the last 30 s, its copies from pageable memory "
                         "(copy trace)")


def test_pinned_copies_no_copies_or_the_witness_off_wait_for_a_second_gap() -> None:
    for states in (_states("pinned"), _states(None), _states("pageable", witness=False)):
        assert not [s for s in states if s.state == "BREAKDOWN"]
        assert "GAPS" in [s.state for s in states]


def test_the_witness_lasts_while_its_gap_is_in_the_window() -> None:
    states = _states("pageable", until_s=40.0)
    names = [(s.state, round(s.t_wall_s - WALL0)) for s in states]
    assert ("BREAKDOWN", 4) in names
    # 30 s after the gap ended (4 s) it slides out: chaining holds again.
    assert names[-1][0] == "CHAINED" and names[-1][1] == pytest.approx(34, abs=1)


@pytest.mark.parametrize("case", ["h200-copytrace/pageable", "h200-e2e/pageable"])
def test_on_the_h200_ramp_the_witness_flags_breakdown_at_the_first_gap_where_copies_say_so(
    case: str,
) -> None:
    off = bench.flag_latency(DATA / case / "rec.jsonl.gz", witness=False)
    on = bench.flag_latency(DATA / case / "rec.jsonl.gz", witness=True)
    assert off.entries == on.entries == 1
    assert off.after_first_s is not None and off.after_first_s > 2.5  # waited for the second
    assert off.after_second_s is not None and 0 < off.after_second_s < 0.5
    assert on.after_first_s is not None
    if on.copies:  # the copy-trace run: 0.38 s after the first starved gap began
        assert on.after_first_s < 0.5
        assert "its copies from pageable memory (copy trace)" in on.reason
    else:  # no copy trace: the same as without the witness
        assert on.after_first_s == off.after_first_s


@pytest.mark.parametrize("case", ["h200-copytrace/chained", "h200-e2e/chained",
                                  "h200-e2e/host-stall", "h200-e2e/transfer-bound"])
def test_no_false_breakdown_on_chained_or_other_recordings_either_way(case: str) -> None:
    for witness in (False, True):
        assert bench.flag_latency(DATA / case / "rec.jsonl.gz", witness).entries == 0


def test_the_verdict_says_what_the_witness_is() -> None:
    from gapwatch.core.verdict import window_words

    det = GapDetector(DetectorConfig(), [GpuInfo(index=0, link_bytes_per_s=63e9,
                                                 sm_source="sim")], period_s=0.1)
    t = 0.1
    while t <= 6.0:
        starved = 2.0 <= t < 4.0
        det.feed(_sample(t, 0.0 if starved else 95.0, 3e9 if starved else 2e6))
        if abs(t - 3.6) < 1e-6:
            det.feed(_copy(2.0, 3.5, "pageable"))
        t = round(t + 0.1, 6)
    window = det.window_now(0)
    assert window is not None and window.pageable_gaps == 1
    words = window_words("BREAKDOWN", window, DetectorConfig(), span=False)
    assert words.startswith("1 pcie_starved gap (") and words.endswith(
        "in the last 30 s, its copies from pageable memory (copy trace)")
