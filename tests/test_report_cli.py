"""`gapwatch report` on the H200 traces and on a recording: text, JSON schema, payoff, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from msgspec.structs import replace

from evaluation.simulate import simulate
from gapwatch.cli import main
from gapwatch.config import Config
from gapwatch.core.models import Gap, HostSample
from gapwatch.logs.parse import LogParser
from gapwatch.offline.report import build_report
from gapwatch.sinks.recorder import write_recording

DATA = Path(__file__).parent / "data"


def report_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["report", *args, "--json"]) == 0
    doc: dict[str, Any] = msgspec.json.decode(capsys.readouterr().out)
    return doc


def test_json_on_pageable_trace_has_the_documented_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = report_json(capsys, str(DATA / "pageable.csv"), "--log", str(DATA / "pageable.log"))
    # 2: `partitions.items[].unpinned` may be null, and PoSt and batch rows count unpinned
    # (docs/detection.md "Report JSON"): a meaning changed, so the version did.
    assert doc["schema_version"] == 2
    (gpu,) = doc["gpus"]
    assert gpu["index"] == 0 and gpu["link_bytes_per_s"] == pytest.approx(63.0e9, rel=1e-3)  # Gen5 x16, the default link
    assert 0.55 <= gpu["busy_fraction"] <= 0.70  # ground truth: 62 %
    assert len(doc["gaps"]) == 5
    for g in doc["gaps"]:
        for key in ("gpu", "start_s", "end_s", "duration_s", "kind", "pcie_rx_bytes_per_s",
                    "pcie_tx_bytes_per_s", "hint", "log_events"):
            assert key in g
        assert g["kind"] == "pcie_starved"
        assert g["end_s"] - g["start_s"] == pytest.approx(g["duration_s"], abs=1e-6)
        assert g["start_s"] > 1.7e9  # Unix seconds
    # The log says every partition was synthesised unpinned: the evidence and hints say so.
    assert any(e["warning"] == "unpinned" for g in doc["gaps"] for e in g["log_events"])
    assert sum("is_pinned=false" in g["hint"] for g in doc["gaps"]) >= 4
    assert doc["breakdowns"] and doc["breakdowns"][0]["gpu"] == 0
    starved = doc["payoff"]["overall"]["if_closed"]["pcie_starved"]
    assert starved["busy_fraction"] > 0.9 and 1.3 < starved["throughput_gain"] < 1.8
    assert doc["partitions"]["count"] == 12 and doc["partitions"]["unpinned"] == 12


def test_text_on_pageable_trace_tells_the_story(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(DATA / "pageable.csv"), "--log", str(DATA / "pageable.log")]) == 0
    text = capsys.readouterr().out
    assert "5 pcie_starved" in text
    assert "Chaining breakdowns: 1" in text
    assert "closing pcie_starved gaps: busy 62 % → 9" in text
    assert "partitions per hour" in text
    assert "Partitions (from the log): 12, 12 synthesised unpinned" in text


def test_pinned_trace_reports_no_gap_and_no_breakdown(capsys: pytest.CaptureFixture[str]) -> None:
    doc = report_json(capsys, str(DATA / "pinned.csv"))
    assert doc["gaps"] == [] and doc["breakdowns"] == []
    assert doc["gpus"][0]["busy_fraction"] > 0.95
    assert doc["payoff"]["overall"]["if_closed"]["all"]["throughput_gain"] == pytest.approx(1.0)


def test_recording_report_recomputes_gaps_and_ignores_stored_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    res = simulate("pageable", seed=3, duration_s=40.0)
    bogus = Gap(gap_id=999, gpu=0, kind="transfer_bound", start_mono_ns=0, start_s=1.0,
                end_mono_ns=1, end_s=2.0, duration_s=1.0, pcie_rx_bytes_per_s=None,
                pcie_tx_bytes_per_s=None, link_bytes_per_s=None)
    path = tmp_path / "rec.jsonl.gz"
    write_recording(path, res.header, [*res.records, bogus])
    doc = report_json(capsys, str(path))
    assert doc["gaps"], "the pageable scenario breaks down within 40 s"
    assert all(g["gap_id"] != 999 and g["kind"] == "pcie_starved" for g in doc["gaps"])


def test_unreadable_inputs_exit_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(tmp_path / "missing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["report", str(DATA / "pinned.csv"), "--log", str(tmp_path / "nope.log")]) == 2
    assert f"cannot read {tmp_path / 'nope.log'}: No such file" in capsys.readouterr().err


def test_a_recording_that_fails_while_read_is_not_blamed_on_a_log(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # /proc/self/mem opens, then every read fails (EIO): there was no log to blame.
    assert main(["report", "/proc/self/mem"]) == 2
    err = capsys.readouterr().err
    assert "cannot read" in err and "log" not in err


@pytest.mark.parametrize("command", [
    ["report", "/proc/self/mem"],
    ["report", str(DATA / "pinned.csv"), "--log", "/proc/self/mem"],
    ["compare", str(DATA / "pinned.csv"), "/proc/self/mem"],
    ["export", "/proc/self/mem", "--format", "csv", "--out", "OUT"],
    ["export", str(DATA / "pinned.csv"), "--log", "/proc/self/mem", "--out", "OUT"],
    ["replay", "--headless", "--speed", "0", str(DATA / "pinned.csv"), "--log",
     "/proc/self/mem"],
])
def test_a_file_whose_reads_fail_is_named_by_every_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    """A read's error names no file (an `open()`'s does): `report` said only "cannot read:
    Input/output error", `export` blamed its --out file, `replay --log` "cannot read log
    None". The file that failed is named."""
    out = tmp_path / "out.json"
    assert main([str(out) if a == "OUT" else a for a in command]) == 2
    err = capsys.readouterr().err
    assert "/proc/self/mem: Input/output error" in err, err
    assert str(out) not in err and "None" not in err and len(err.splitlines()) == 1


def test_the_report_says_what_the_prover_package_could_not_learn(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without the prover's log the report says so, in the text and in `prover_lacks`; given
    the log, that lack is gone (the trace has no /status, so that one stays)."""
    bare = report_json(capsys, str(DATA / "pageable.csv"))
    assert [why.split(" (")[0] for why in bare["prover_lacks"]] == [
        "no cuzk log line read", "no cuzk /status snapshot"]
    with_log = report_json(capsys, str(DATA / "pageable.csv"), "--log",
                           str(DATA / "pageable.log"))
    assert [why.split(" (")[0] for why in with_log["prover_lacks"]] == [
        "no cuzk /status snapshot"]
    assert main(["report", str(DATA / "pageable.csv")]) == 0
    text = capsys.readouterr().out
    assert "What gapwatch lacks (so some gaps have no prover cause" in text
    assert "  no cuzk log line read (follow its log: --log)" in text


def test_a_recorded_log_line_is_not_lacking_and_the_split_report_lacks_the_same(
        tmp_path: Path) -> None:
    """A recording holding one cuzk log line has no "no log" lack; a recording split across
    processes (samples alone) lacks what the one-process report lacks."""
    res = simulate("pageable", seed=3, duration_s=30.0, gpus=4)
    (line,) = LogParser().parse_line("2026-11-30T09:06:26.553439Z  INFO cuzk_core::engine: "
                                     "starting cuzk engine pipeline_enabled=true", "stdout")
    first = res.records[0]
    assert isinstance(first, HostSample)
    logged = tmp_path / "logged.jsonl"
    write_recording(logged, res.header,
                    [first, replace(line, t_wall_s=first.t_wall_s), *res.records[1:]])
    lacks = build_report(logged, Config()).prover_lacks
    assert lacks and not any(why.startswith("no cuzk log line") for why in lacks)

    samples = tmp_path / "samples.jsonl"
    write_recording(samples, res.header, res.records)
    one = build_report(samples, Config(), workers=1).prover_lacks
    assert any(why.startswith("no cuzk log line") for why in one)
    assert build_report(samples, Config(), workers=2).prover_lacks == one


def test_a_long_reports_gap_table_shows_the_longest_gaps_in_time_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its first 50 rows were a day's first minute: the 50 longest say where to look."""
    from gapwatch.offline.report_text import MAX_TABLE_ROWS

    res = simulate("pageable", seed=4, duration_s=240.0, gpus=2)
    path = tmp_path / "sim.jsonl"
    write_recording(path, res.header, res.records)
    report = build_report(path, Config(), workers=1)
    gaps = list(report.gaps)
    assert len(gaps) > 2 * MAX_TABLE_ROWS
    assert main(["report", str(path)]) == 0
    text = capsys.readouterr().out
    assert f"Gaps ≥ min gap: {len(gaps)} (the {MAX_TABLE_ROWS} longest, in time order;" in text
    table = text.split("Gaps ≥ min gap")[1].split("\n\n")[0].splitlines()[2:]
    shown = [float(row.split()[2]) for row in table]
    starts = [row.split()[1] for row in table]
    longest = sorted((g.duration_s for g in gaps), reverse=True)[:MAX_TABLE_ROWS]
    assert sorted(shown, reverse=True) == [round(d, 2) for d in longest]
    assert starts == sorted(starts)  # in time order (one day: the clock sorts)
    assert main(["report", str(path), "--all"]) == 0
    assert f"Gaps ≥ min gap: {len(gaps)}\n" in capsys.readouterr().out


def test_the_docs_json_example_holds_every_field_of_a_payoff(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`span_s` joined the report's payoffs (`payoff.*.if_closed.*`, `advice[].payoff`) and no
    example in docs/detection.md had it: each payoff in the example holds every field the
    report writes."""
    doc = report_json(capsys, str(DATA / "pageable.csv"), "--log", str(DATA / "pageable.log"))
    fields = set(doc["payoff"]["overall"]["if_closed"]["pcie_starved"])
    assert "span_s" in fields
    text = (Path(__file__).parent.parent / "docs" / "detection.md").read_text()
    example = text[text.index("### Report JSON"):]
    example = example[example.index("```jsonc"):example.index("```\n", 10)]
    overall = example[example.index('"if_closed": {"pcie_starved"'):example.index('"all": {')]
    advice = example[example.index('"payoff": {"idle_s"'):example.index('"no_setting"')]
    for said in (overall, advice):
        assert {f for f in fields if f'"{f}":' in said} == fields, said
