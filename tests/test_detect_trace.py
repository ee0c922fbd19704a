"""The detector against ground truth on real H200 traces (tests/data, copied from the shared set).

`pageable`: a/b/c in pageable memory under host memory-bandwidth pressure; 5 truth gaps of at
least 300 ms, all with PCIe trickling. `pinned`: chained, no gap. The goals come from issue 4.
"""

from __future__ import annotations

import json
from pathlib import Path

from evaluation.scoring import score, truth_gaps
from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import GapDetector
from gapwatch.core.models import Gap, GpuSample, HostSample, StateChange
from gapwatch.sources.files import read_any

DATA = Path(__file__).parent / "data"


def detect(name: str) -> tuple[list[Gap], list[StateChange]]:
    rec = read_any(DATA / f"{name}.csv")
    det = GapDetector(DetectorConfig(), list(rec.header.gpus), period_s=rec.header.period_ms / 1000)
    out: list[Gap | StateChange] = []
    for r in rec.records:
        if isinstance(r, GpuSample):
            out += det.feed_gpu(r)
        elif isinstance(r, HostSample):
            det.feed_host(r)
    out += det.finish()
    latest: dict[int, Gap] = {}
    for e in out:
        if isinstance(e, Gap):
            latest[e.gap_id] = e
    gaps = [g for g in latest.values() if g.end_s is not None and not g.retracted]
    return gaps, [e for e in out if isinstance(e, StateChange)]


def test_pageable_trace_meets_the_detection_goals() -> None:
    truth = json.loads((DATA / "pageable.truth.json").read_text())["intervals"]
    assert len(truth_gaps(truth)) == 5
    gaps, states = detect("pageable")
    s = score(gaps, truth, min_gap_s=0.3, truth_kind="pcie_starved")
    assert s.recall >= 0.95, s.summary()
    assert s.precision >= 0.95, s.summary()
    assert s.kind_accuracy is not None and s.kind_accuracy >= 0.95, s.summary()
    assert s.median_edge_error_s is not None and s.median_edge_error_s <= 0.150, s.summary()
    assert any(st.state == "BREAKDOWN" for st in states)
    # PCIe trickling at 1-4 GB/s in every gap, stated in the hint.
    for g in gaps:
        assert g.pcie_rx_bytes_per_s is not None and 1e9 <= g.pcie_rx_bytes_per_s <= 5e9
        assert "while H2D ran at" in g.hint


def test_pinned_trace_has_no_gap_and_no_breakdown() -> None:
    gaps, states = detect("pinned")
    assert gaps == []
    assert not any(st.state == "BREAKDOWN" for st in states)


def test_score_matches_by_overlap_and_counts_misses_and_false_positives() -> None:
    truth = [{"start": 0.0, "end": 1.0}, {"start": 2.0, "end": 3.0}, {"start": 5.0, "end": 6.0}]

    class G:
        def __init__(self, a: float, b: float, kind: str = "host_stall") -> None:
            self.gpu, self.start_s, self.end_s, self.kind = 0, a, b, kind

    s = score([G(1.1, 1.9), G(5.2, 5.8)], truth, truth_kind="host_stall")
    assert (s.n_truth, s.n_detected, len(s.matched)) == (2, 2, 1)
    assert s.recall == 0.5 and s.precision == 0.5 and s.kind_accuracy == 1.0
    assert abs((s.median_edge_error_s or 0) - 0.1) < 1e-9
    assert s.missed[0].start_s == 3.0 and s.false_positives[0].start_s == 5.2
