"""bench/report_same.py's parts (evaluation/documents.py), the A/B proof that a change leaves the
report as it was: its comparison says which document differs, and its damaged inputs hold the faults they are there for."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.documents import compare, damage
from evaluation.simulate import simulate
from gapwatch.config import Config
from gapwatch.offline.report import build_report
from gapwatch.sinks.recorder import write_recording


def _dump(where: Path, docs: dict[str, bytes]) -> Path:
    where.mkdir()
    for name, body in docs.items():
        (where / name).write_bytes(body)
    return where


def test_identical_dumps_compare_equal_and_a_changed_or_missing_document_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = b'{\n "gaps": [\n  1\n ]\n}'
    a = _dump(tmp_path / "a", {"x.w1.json": doc, "y.w1.json": doc})
    b = _dump(tmp_path / "b", {"x.w1.json": doc, "y.w1.json": doc})
    assert compare(a, b) == 0
    assert "2 of 2 documents identical" in capsys.readouterr().out
    (b / "y.w1.json").write_bytes(doc.replace(b"1", b"2"))
    (b / "z.w2.json").write_bytes(doc)
    assert compare(a, b) == 1
    out = capsys.readouterr().out
    assert "DIFFERS y.w1.json at line 3" in out and "MISSING z.w2.json" in out
    assert "1 of 3 documents identical" in out


def test_a_damaged_recording_holds_every_fault_it_is_made_for(tmp_path: Path) -> None:
    res = simulate("host-stall", seed=3, duration_s=120, gpus=2)
    src = tmp_path / "host-stall-2gpu.jsonl"
    write_recording(src, res.header, res.records)
    damaged = tmp_path / "damaged.jsonl"
    damage(src, damaged, seed=7)
    report = build_report(damaged, Config(), workers=1)
    counted = {k for k, v in report.counters.items() if v}
    assert {"detector_holes", "detector_clock_jumps", "detector_out_of_order",
            "detector_stale_gpm", "detector_no_data", "detector_silent"} <= counted
    assert [t.confidence for t in report.totals] == ["high", "low"]  # GPU 1: utilization only
