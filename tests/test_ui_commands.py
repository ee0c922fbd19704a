"""The dashboard commands' edges that need no terminal: headless replay, unusable sources."""

from __future__ import annotations

import pytest
from conftest import DATA

from gapwatch.cli import main


def test_headless_replay_of_the_h200_trace_reports_the_starved_gaps(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["replay", str(DATA / "pageable.csv"), "--headless", "--speed", "0"]) == 0
    err = capsys.readouterr().err
    assert "pcie_starved" in err and "BREAKDOWN" in err


def test_a_missing_recording_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "/nonexistent/rec.jsonl", "--headless"]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


def test_demo_refuses_a_non_sim_source_and_speed_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--source", "nvml"]) == 2
    assert main(["demo", "--speed", "0"]) == 2
