"""evaluation/pane_gpu.py (bench/pane_gpu.py): the dashboard's screens captured as text. The GPU
box runs it beside a real load; here the simulated prover checks the plumbing."""

from __future__ import annotations

import json
from pathlib import Path

from evaluation import pane_gpu


def test_the_smoke_run_captures_a_screen_every_period_and_after_each_key(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert pane_gpu.main(["--out", str(out), "--smoke", "--seconds", "1", "--every-s", "0.5",
                          "--look-s", "0.05"]) == 0
    text = (out / "pane.txt").read_text()
    labels = [ln for ln in text.splitlines() if ln.startswith("==== ")]
    assert len(labels) == 2 + len(pane_gpu.KEYS) + 1
    assert labels[-1].endswith("80x24")
    # The screen is the dashboard's own: its GPU row and its gap table.
    assert "GPU0" in text and "time     GPU" in text
    facts = json.loads((out / "pane.json").read_text())
    assert facts["screens"] == len(labels)
    assert facts["lateness_ms"]["samples"] > 0
    # Each screen's stretch has its own lateness, and together they hold every sample taken
    # before the last screen.
    stretches = facts["lateness_ms_by_screen"]
    assert [s["until"] for s in stretches] == [ln.removeprefix("==== ") for ln in labels]
    assert 0 < sum(s["samples"] for s in stretches) <= facts["lateness_ms"]["samples"]
    # `s` wrote a snapshot folder, named in the facts.
    assert any(name.startswith("gapwatch-snapshot-") for name in facts["snapshots"])
    # The latest ticks say when they came, the worst first, so a lost tick can be placed.
    worst = facts["latest_ticks"]
    assert worst and worst[0]["ms"] == max(w["ms"] for w in worst)
    assert abs(worst[0]["ms"] - facts["lateness_ms"]["max"]) < 0.001
    assert all(w["at_s"] >= 0 for w in worst)
