"""Regression tests on the H200 copy-trace runs of bench/copytrace_h200.py (no GPU needed).

Each folder under tests/data/h200-copytrace/ (from the bench's h200-copytrace.tar.gz) holds the
`gapwatch record --copytrace` recording made beside the load generator, its truth (copy log) and
meta.json. Today's reader of the recording and today's report must still find every logged copy
with its memory kind, bytes, times and rate, and state the memory kind in the hint of every
pcie_starved gap, and find the load generator's /proc memory and its link at full width and
generation, wherever the captured run did. Until the folder is committed, the same check runs
over a synthetic case so that the test is known to work.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from copytrace_fakes import write_case

from evaluation import copytrace_h200 as bench

ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data" / "h200-copytrace"

CASES = sorted(p for p in DATA.glob("*") if (p / "rec.jsonl.gz").is_file()) if DATA.is_dir() else []


def check_case(case: Path) -> None:
    meta = json.loads((case / "meta.json").read_text())
    captured = meta.get("captured", {"copies": True, "hints": True})
    result = bench.case_check(case, expect_link=bench.parse_link(meta.get("expect_link", "")))
    assert result["copies"]["expected_kind"] == meta["expected_kind"]
    if captured.get("copies"):
        assert result["copies"]["passed"], result["copies"]["failures"]
    elif "copies_partitions_ok" in captured:
        # The captured run missed a partition (named in meta.json): never fewer than it found.
        assert result["copies"]["partitions_ok"] >= captured["copies_partitions_ok"]
    if captured.get("hints") and meta["expected_kind"] == "pageable":
        assert result["hints"]["passed"], result["hints"]
    if captured.get("procmem"):
        assert result["procmem"]["passed"], result["procmem"]
    if captured.get("link"):
        assert result["link"]["passed"], result["link"]
    assert result["counters"].get("bad_records", 0) == 0


@pytest.mark.skipif(not CASES, reason="tests/data/h200-copytrace/ is not committed yet: run "
                    "bench/copytrace_h200.py on the H200 and unpack h200-copytrace.tar.gz there")
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_h200_copies_are_still_found_with_their_memory_kind(case: Path) -> None:
    check_case(case)


def test_the_regression_check_itself_passes_on_a_synthetic_case(tmp_path: Path) -> None:
    check_case(write_case(tmp_path / "pageable"))


def test_the_regression_check_fails_on_a_case_without_copies(tmp_path: Path) -> None:
    with pytest.raises(AssertionError):
        check_case(write_case(tmp_path / "pageable", with_copies=False))


def test_the_regression_check_fails_when_captured_slow_readings_are_gone(tmp_path: Path) -> None:
    case = write_case(tmp_path / "pageable", slow=False)
    meta = json.loads((case / "meta.json").read_text())
    meta["captured"].update(procmem=True, link=True)
    (case / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(AssertionError, match=r"'names': \[\]"):  # no /proc reading
        check_case(case)


@pytest.mark.skipif(not (DATA / "pageable" / "rec.jsonl.gz").is_file(),
                    reason="tests/data/h200-copytrace/pageable is not committed")
def test_a_starved_gaps_hint_says_the_bytes_that_moved_during_it_as_pcie_carried_them() -> None:
    """The H200 pageable copy-trace run: its starved gaps' hints said 9.0-12.0 GiB copied (the
    copies of each gap's evidence window, the 2 s before it included) where PCIe carried
    1.8-5.2 GB in the gap. Each hint now leads with what its copies moved during the gap,
    within a quarter of what PCIe carried then (the counter also carries the link's own
    traffic), and says the window's bytes as the copies of the gap and the 2 s before it."""
    from gapwatch.config import Config
    from gapwatch.core import fmt
    from gapwatch.offline.report import build_report, to_json

    doc = to_json(build_report(DATA / "pageable" / "rec.jsonl.gz", Config()))
    starved = [g for g in doc["gaps"] if g["kind"] == "pcie_starved"]
    assert len(starved) == 8
    for g in starved:
        pg = g["copies"]["by_kind"]["pageable"]
        carried = g["pcie_rx_bytes_per_s"] * g["duration_s"]
        assert 0.75 * carried < pg["in_gap_bytes"] < 1.25 * carried, (g["start_s"], carried)
        assert g["hint"].startswith(f"{fmt.size(pg['in_gap_bytes'])} copied from pageable host "
                                    "memory during the gap at "), g["hint"]
        assert (f"({fmt.size(pg['bytes'])} in copies that ran in it and the 2 s before it, "
                "on streams 13, 17)") in g["hint"]
