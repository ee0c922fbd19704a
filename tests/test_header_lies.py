"""Header values are checked against the data (issue 29, item 9): a period the samples' spacing
belies, a link capacity that is none or that the samples exceed, is said as `bad_header` and the
data's own value used, so the report is the one an honest header gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from shared_files import sim_recording_bytes

from evaluation.simulate import simulate
from gapwatch.cli import main
from gapwatch.sources.files import read_any


def _recording(tmp_path: Path, name: str, header: dict[str, Any] | None = None,
               link: float | None = None) -> Path:
    path = tmp_path / name
    lines = sim_recording_bytes(seed=3, duration_s=60.0, gpus=2).splitlines(keepends=True)
    doc = msgspec.json.decode(lines[0])
    doc.update(header or {})
    if link is not None:
        for g in doc["gpus"]:
            g["link_bytes_per_s"] = link
    lines[0] = msgspec.json.encode(doc) + b"\n"
    path.write_bytes(b"".join(lines))
    return path


def _report(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["report", "--json", str(path)]) == 0
    doc: dict[str, Any] = msgspec.json.decode(capsys.readouterr().out)
    return doc


def _same_gaps(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return bool(a["gaps"]) and a["gaps"] == b["gaps"]


def test_a_header_period_the_samples_belie_is_said_and_the_datas_own_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """`period_ms` 1.0 over samples 100 ms apart made every sample a hole: 0 gaps, unsaid."""
    lying = _recording(tmp_path, "lie.jsonl", {"period_ms": 1.0})
    rec = read_any(lying)
    assert rec.header.period_ms == 100.0 and rec.counters == {"bad_header": 1}
    assert "header period_ms 1 is belied by the data: its GPU samples are 100 ms apart" \
        in rec.problems[0]
    doc, clean = _report(lying, capsys), _report(_recording(tmp_path, "ok.jsonl"), capsys)
    assert _same_gaps(doc, clean) and doc["period_ms"] == 100.0
    assert doc["counters"]["bad_header"] == 1


def test_a_header_period_too_long_for_the_samples_is_a_lie_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    lying = _recording(tmp_path, "lie.jsonl", {"period_ms": 1000.0})
    doc, clean = _report(lying, capsys), _report(_recording(tmp_path, "ok.jsonl"), capsys)
    assert _same_gaps(doc, clean) and doc["counters"]["bad_header"] == 1


@pytest.mark.parametrize("command", [["replay", "--headless", "--speed", "0"],
                                     ["replay", "--headless", "--speed", "1000"],
                                     ["report"]])
def test_a_period_of_5e_324_crashes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str],
) -> None:
    """5e-324 ms passed as a period (> 0) and was 0 s once divided: replay's ZeroDivisionError."""
    path = _recording(tmp_path, "tiny.jsonl", {"period_ms": 5e-324})
    assert read_any(path).header.period_ms == 100.0
    assert main([command[0], str(path), *command[1:]]) == 0
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("link", [-63e9, 0.5, 1e15])
def test_a_link_speed_that_is_no_link_is_said_and_the_gaps_are_an_honest_headers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], link: float,
) -> None:
    """A negative link speed turned every gap transfer_bound."""
    lying = _recording(tmp_path, "lie.jsonl", link=link)
    rec = read_any(lying)
    assert [g.link_bytes_per_s for g in rec.header.gpus] == [63015384615.38462] * 2
    assert rec.counters == {"bad_header": 2}
    assert f"header GPU 0 link_bytes_per_s {link:g} is belied (not a link's capacity); using " \
           "6.3e+10 B/s (its generation and width)" in rec.problems[0]
    doc, clean = _report(lying, capsys), _report(_recording(tmp_path, "ok.jsonl"), capsys)
    assert _same_gaps(doc, clean)


def test_a_link_speed_the_samples_exceed_is_a_lie(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    lying = _recording(tmp_path, "lie.jsonl", link=1e9)  # samples move ~17 GB/s
    rec = read_any(lying)
    assert "is belied (two samples moved 1." in rec.problems[0]
    doc, clean = _report(lying, capsys), _report(_recording(tmp_path, "ok.jsonl"), capsys)
    assert _same_gaps(doc, clean)


def test_a_lying_link_without_generation_and_width_falls_back_to_the_default_link(
    tmp_path: Path,
) -> None:
    path = _recording(tmp_path, "lie.jsonl", link=-1.0)
    doc = msgspec.json.decode(path.read_bytes().splitlines()[0])
    for g in doc["gpus"]:
        g["link_gen"] = g["link_width"] = None
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(msgspec.json.encode(doc) + b"\n" + b"".join(lines[1:]))
    rec = read_any(path)
    assert [g.link_bytes_per_s for g in rec.header.gpus] == [None, None]
    assert "using the detector's default link" in rec.problems[0]


def test_an_honest_header_is_left_as_it_is(tmp_path: Path) -> None:
    rec = read_any(_recording(tmp_path, "ok.jsonl"))
    assert rec.counters == {} and rec.header.period_ms == 100.0


def test_one_glitch_sample_does_not_belie_a_true_link(tmp_path: Path) -> None:
    """One sample moving 5 TB/s among the first (a counter that went back, a hand-edited line)
    declared the header's true 63 GB/s link a lie and put the detector's default in its place;
    a lie shows in more than one sample."""
    path = _recording(tmp_path, "glitch.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    k = next(i for i, line in enumerate(lines) if line.startswith(b'{"type":"gpu","gpu":0'))
    doc = msgspec.json.decode(lines[k])
    lines[k] = msgspec.json.encode({**doc, "pcie_rx_bytes_per_s": 5e12}) + b"\n"
    path.write_bytes(b"".join(lines))
    rec = read_any(path)
    assert not any("belied" in p for p in rec.problems)
    assert rec.header.gpus[0].link_bytes_per_s == pytest.approx(63.0e9, rel=0.01)


@pytest.mark.parametrize("later_s", [86400.0, 9.2e9 - 1_796_000_000.0])
def test_a_header_start_after_its_samples_is_said_and_the_prover_log_still_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], later_s: float,
) -> None:
    """A start a day late (or in 2261) over untouched samples: the prover's log was "not this
    recording's log ... ends 24.0 hours before", none of its events used, every prover cause
    and setting lost, and nothing said of the header."""
    sim = simulate("pageable", seed=3, duration_s=60.0, gpus=2)
    log = tmp_path / "cuzk.log"
    log.write_text("".join(f"{text}\n" for _stream, text in sim.log_lines))
    clean = _recording(tmp_path, "ok.jsonl")
    lying = _recording(tmp_path, "lie.jsonl",
                       {"started_wall_s": sim.header.started_wall_s + later_s})
    rec = read_any(lying)
    assert rec.header.started_wall_s == pytest.approx(read_any(clean).header.started_wall_s,
                                                      abs=1.0)
    assert "header started_wall_s" in rec.problems[0] and rec.counters == {"bad_header": 1}
    docs = []
    for path in (lying, clean):
        assert main(["report", "--json", str(path), "--log", str(log)]) == 0
        docs.append(msgspec.json.decode(capsys.readouterr().out))
    doc, honest = docs
    assert not any("not this recording's log" in p for p in doc["problems"])
    assert _same_gaps(doc, honest) and doc["advice"] == honest["advice"]
    assert any(g["prover_cause"] for g in doc["gaps"])
