"""What the report says of its input, sorted into warnings and notes in one home
(`gapwatch.offline.report.said_of_input`): a recording still being written was said only in the
report's last lines (`Input: still_written 1`), while `replay` said it as a warning; the report
now says it under WARNING too (it reads the recording only up to where it stood). A note that
changes nothing (a `--log`'s lines the recording held too: tests/test_log_read_twice.py) is said
as a note, not under WARNING."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

import pytest

from evaluation.simulate import simulate
from gapwatch.cli import main
from gapwatch.sinks.recorder import write_recording

STILL = "is still being written by another process: this report reads it only up to line {n}, " \
        "where it stood when read (more is written after); its last part is not in it: report " \
        "it again for more"


@pytest.fixture
def being_written(tmp_path: Path) -> Path:
    """A plain recording whose writer's lock another process holds (as `record` holds it)."""
    sim = simulate("chained", seed=1, duration_s=5)
    path = tmp_path / "gw.jsonl"
    write_recording(path, sim.header, sim.records)
    return path


def test_a_recording_still_being_written_is_a_warning_of_the_report_said_once(
        being_written: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The reader's own problem line (the line it read to) was said beside the warning, in
    the text's problems and in --json's: twice. Once now, the warning with the line."""
    with being_written.open("rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the writer's lock, as the recorder holds it
        assert main(["report", str(being_written)]) == 0
        text = capsys.readouterr().out
        assert main(["report", str(being_written), "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
    head = text.split("\n\nGPUs")[0]
    n = sum(1 for _ in being_written.open("rb"))
    assert "WARNING: the data has problems that change what this report means" in head
    assert f"  - {being_written} {STILL.format(n=n)}" in head
    assert text.count("still being written") == 1
    assert [p for p in doc["problems"] if "still being written" in p] == [
        f"{being_written} {STILL.format(n=n)}"]
    assert doc["counters"]["still_written"] == 1 and doc["notes"] == []
    assert main(["report", str(being_written), "--json"]) == 0  # its writer gone: not said
    assert not any("still being written" in p
                   for p in json.loads(capsys.readouterr().out)["problems"])



def test_a_recording_still_being_written_is_said_once_by_its_perfetto_export(
        being_written: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`export --format perfetto` says the report's warnings, then what the reader found: the
    reader's still-written line came beside the warning that quotes it, twice."""
    with being_written.open("rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the writer's lock, as the recorder holds it
        assert main(["export", str(being_written), "--out", str(tmp_path / "t.json")]) == 0
    err = capsys.readouterr().err
    n = sum(1 for _ in being_written.open("rb"))
    said = [line for line in err.splitlines() if "still being written" in line]
    assert said == [f"gapwatch export: warning: {being_written} {STILL.format(n=n)}"], err
