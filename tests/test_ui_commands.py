"""The dashboard commands' edges that need no terminal: headless replay, unusable sources."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import DATA

from gapwatch.cli import main
from gapwatch.engine.runtime import Runtime


def test_headless_replay_of_the_h200_trace_reports_the_starved_gaps(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["replay", str(DATA / "pageable.csv"), "--headless", "--speed", "0"]) == 0
    err = capsys.readouterr().err
    assert "pcie_starved" in err and "BREAKDOWN" in err


def test_a_missing_recording_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "/nonexistent/rec.jsonl", "--headless"]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


def test_demo_refuses_a_non_sim_source_and_speed_0_saying_which(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Under pytest there is no terminal, so the terminal check would refuse too: the messages
    # tell the refusals apart (and show that these checks come first).
    assert main(["demo", "--source", "nvml"]) == 2
    assert capsys.readouterr().err == ("gapwatch demo: --source must be sim or sim:SCENARIO "
                                       "(use `watch` or `replay` for other sources)\n")
    assert main(["demo", "--speed", "0"]) == 2
    assert capsys.readouterr().err == ("gapwatch demo: --speed 0 is for `record`; use e.g. "
                                       "--speed 4\n")


def test_headless_record_says_on_stderr_that_a_log_path_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    missing = tmp_path / "stdout.lgo"
    assert main(["record", "--source", "sim:chained", "--speed", "0", "--duration", "2",
                 "--quiet", "--out", str(tmp_path / "r.jsonl"), "--log", str(missing)]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "cannot open for reading" in line]
    assert lines == [f"warning: log {missing}: cannot open for reading: No such file or "
                     "directory; following it once it appears"]


def test_replay_with_a_missing_log_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["replay", str(DATA / "pageable.csv"), "--headless", "--speed", "0",
                 "--log", str(tmp_path / "nope.log")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "cannot read log" in err


def test_a_headless_replay_runs_as_fast_as_it_can_unless_a_speed_is_given(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """Nobody watches a headless replay: it waited out real time (2 min of silence for a 2 min
    recording). Without --speed it now replays at speed 0; --speed still paces it; the
    dashboard keeps the recorded pace."""
    import gapwatch.commands.replay as replay_cmd

    speeds: list[object] = []
    from gapwatch.engine.runtime import build_runtime as real_build

    def build(*args: Any, **kwargs: Any) -> Runtime:
        speeds.append(kwargs.get("speed"))
        return real_build(*args, **kwargs)

    monkeypatch.setattr(replay_cmd, "build_runtime", build)
    assert main(["replay", str(DATA / "pageable.csv"), "--headless"]) == 0
    assert "pcie_starved" in capsys.readouterr().err
    assert speeds == [0.0]
    assert replay_cmd.replay_speed(replay_cmd_args(headless=True, speed=2.0)) == 2.0
    assert replay_cmd.replay_speed(replay_cmd_args(headless=False, speed=None)) is None


def replay_cmd_args(headless: bool, speed: float | None) -> argparse.Namespace:
    return argparse.Namespace(headless=headless, speed=speed)


def test_records_live_lines_read_as_words_not_python_reprs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """They printed `busy=0.04000653772581903` and `final states: {0: 'BREAKDOWN'}`."""
    assert main(["record", "--source", "sim:pageable", "--speed", "0", "--duration", "40",
                 "--out", str(tmp_path / "r.jsonl")]) == 0
    err = capsys.readouterr().err
    states = [line for line in err.splitlines() if line.startswith("state GPU0 ")]
    assert "state GPU0 BREAKDOWN (busy " in "\n".join(states)
    assert all(re.fullmatch(r"state GPU0 \w+ \(busy (\d+%|n/a)\): .+", line) for line in states)
    assert "final states: GPU0 BREAKDOWN;" in err and "{0:" not in err and "busy=" not in err
