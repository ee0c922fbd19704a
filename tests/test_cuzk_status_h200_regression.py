"""Regression on the real H200 run of bench/cuzk_status_h200.py (no GPU needed).

tests/data/h200-e2e/host-stall-status/ holds `gapwatch record --source nvml
--cuzk-status ...` beside the load generator's host-stall preset, which served a cuzk-like
`/status` from its own pipeline, with the load generator's logs and ground truth. Today's report
over the recording must name each gap "waits on synthesis" from the prover's own states
(captured run: 17/17). Detection against the truth is scored with the other H200 cases by
tests/test_e2e_h200_regression.py (the case sits in the same folder).
"""

from __future__ import annotations

import json
from pathlib import Path

from gapwatch.config import Config
from gapwatch.offline.report import build_report, to_json

CASE = Path(__file__).parent / "data" / "h200-e2e" / "host-stall-status"


def test_the_real_host_stall_gaps_are_named_waits_on_synthesis() -> None:
    meta = json.loads((CASE / "meta.json").read_text())
    doc = to_json(build_report(CASE / "rec.jsonl.gz", Config()))
    gaps = doc["gaps"]
    assert len(gaps) >= meta["captured"]["gaps"] >= 10
    assert {g["kind"] for g in gaps} == {"host_stall"}
    assert [g["prover_cause"] for g in gaps] == ["waits_on_synthesis"] * len(gaps)
    assert all("synthesis" in g["hint"] for g in gaps)
