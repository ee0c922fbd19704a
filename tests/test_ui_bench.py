"""evaluation/ui_bench.py's (bench/ui_bench.py) side-by-side plumbing (the GPU box runs it for the figures; here only the
parts that need no GPU): CPU read from /proc, processes in a pseudo-terminal, the table."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from evaluation import ui_bench


def test_cpu_seconds_are_read_from_proc_for_a_live_process_and_none_for_a_gone_one() -> None:
    mine = ui_bench.cpu_seconds(os.getpid())
    assert mine is not None and mine > 0
    assert ui_bench.cpu_seconds(2**22 + 12345) is None


@pytest.mark.slow
def test_side_by_side_measures_a_dashboard_in_a_pty_and_skips_missing_programs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ui_bench, "WARMUP_S", 2.0)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # its work folder, not left in /tmp
    # An empty PATH: nvidia-smi is missing here even on a GPU box (gapwatch runs from
    # sys.executable, an absolute path).
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    rc = ui_bench.side_by_side(["demo-pty", "dmon"], 2.0, tmp_path, None, 0.0, None)
    doc = json.loads((tmp_path / "ui-bench.json").read_text())
    rows = {r["process"]: r for r in doc["processes"]}
    assert rc == 0
    assert rows["demo-pty"]["cpu_pct"] is not None and rows["demo-pty"]["pty_bytes"] > 0
    assert rows["demo-pty"]["skipped"] == ""
    assert (rows["dmon"]["skipped"], rows["dmon"]["cpu_pct"]) == ("nvidia-smi not found", None)
    table = (tmp_path / "ui-bench.md").read_text()
    assert "| demo-pty |" in table and "| dmon | nvidia-smi dmon -d 1 | skipped |" in table
