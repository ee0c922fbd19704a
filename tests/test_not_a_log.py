"""A `--log` file that is no prover log is said once, naming it: a recording given as the log
(`report REC --log REC`) was read as 3,365 lines no rule understood, exit 0, its only sign
`log_unparsed 3365` in the report's last line; `parse` printed 3,365 `unparsed` lines and no
hint. Said where none of a file's lines was understood, or where it starts like a gapwatch
recording; a log with some lines understood stays silent (`gapwatch.logs.not_a_log`)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import DATA
from split_parse import two_processes

from gapwatch.cli import main
from gapwatch.config import Config
from gapwatch.offline import log_split
from gapwatch.offline.report import parse_logs_for

TRACE = DATA / "pageable.csv"
LOG = DATA / "pageable.log"
#: A gapwatch recording (gzip), the wrong file to give as a log.
RECORDING = DATA / "h200-sampler.jsonl.gz"


def _lines_of(path: Path) -> int:
    return sum(1 for line in gzip.open(path, "rt") if line.strip())


def _report(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["report", str(TRACE), *argv]) == 0
    return capsys.readouterr().out


def test_a_recording_given_as_the_log_is_a_warning_of_the_report_naming_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    text = _report(capsys, "--log", str(RECORDING))
    said = (f"no line of {RECORDING} was understood as a prover log line "
            f"({_lines_of(RECORDING):,} lines): is it cuzk's log? (it looks like a gapwatch "
            "recording: give it as the FILE argument)")
    head = text.split("\n\nGPUs")[0]
    assert "WARNING: the data has problems" in head and f"  - {said}" in head
    doc = json.loads(_report(capsys, "--log", str(RECORDING), "--json"))
    assert said in doc["problems"]


def test_a_log_of_another_program_is_said_without_the_recording_hint(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "nginx.log"
    other.write_text('127.0.0.1 - - [05/Dec/2026:16:20:00 +0000] "GET / HTTP/1.1" 200 612\n' * 3
                     + "\n")
    text = _report(capsys, "--log", str(other))
    assert (f"no line of {other} was understood as a prover log line (3 lines): is it "
            "cuzk's log?\n") in text


def test_a_log_with_some_lines_understood_stays_silent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mixed = tmp_path / "cuzk.log"
    mixed.write_text("a line of some other program\n" * 50 + LOG.read_text())
    text = _report(capsys, "--log", str(mixed), "--log", str(LOG))
    assert "understood as a prover log line" not in text
    assert "gapwatch recording" not in text


def test_of_several_logs_only_the_one_that_is_no_log_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = _report(capsys, "--log", str(LOG), "--log", str(RECORDING))
    assert f"no line of {RECORDING} was understood" in text
    assert f"no line of {LOG}" not in text


def test_a_recording_some_of_whose_lines_a_rule_reads_is_still_named_a_recording(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A recording holds its log lines' text: a rule may read a line of it.
    rec = tmp_path / "rec.jsonl"
    rec.write_text(gzip.open(RECORDING, "rt").read() + LOG.read_text().splitlines()[0] + "\n")
    text = _report(capsys, "--log", str(rec))
    assert (f"{rec} starts like a gapwatch recording, not a prover log (its first line is a "
            f"recording's header; 1 of its {_lines_of(RECORDING) + 1:,} lines understood): "
            "give it as the FILE argument") in text


def test_parse_says_on_stderr_that_a_recording_is_no_log(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", str(RECORDING)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (f"gapwatch parse: no line of {RECORDING} was understood as a prover log "
                      f"line ({_lines_of(RECORDING):,} lines): is it cuzk's log? (it looks "
                      "like a gapwatch recording: read it with `gapwatch report FILE`, "
                      "`replay FILE` or `export FILE`)")
    assert main(["parse", str(LOG)]) == 0
    assert "understood" not in capsys.readouterr().err


@pytest.mark.usefixtures("no_stray_threads")
def test_a_file_parsed_in_two_processes_is_judged_by_all_its_lines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_split, "MIN_SPLIT_BYTES", 1)
    monkeypatch.setattr(log_split, "STARTUP_BYTES", 4 << 10)
    monkeypatch.setattr(log_split, "WARM_BYTES", 4 << 10)
    halves = two_processes(monkeypatch)
    junk = tmp_path / "junk.log"
    junk.write_text("".join(f"line {i} of another program's output\n" for i in range(20_000)))
    parsed = parse_logs_for(1.0, None, Config(), [str(junk)])
    try:
        assert halves == [1]  # the child's half was taken
        assert parsed.span.not_logs == [f"no line of {junk} was understood as a prover log "
                                        "line (20,000 lines): is it cuzk's log?"]
    finally:
        parsed.close()


def test_a_headless_replay_says_it_once_among_its_warnings(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(TRACE), "--headless", "--log", str(RECORDING)]) == 0
    err = capsys.readouterr().err
    assert err.count(f"warning: no line of {RECORDING} was understood as a prover log "
                     "line") == 1
