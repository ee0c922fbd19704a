"""`gapwatch parse`: events as text or JSON Lines, counts on stderr, the derived timeline."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from gapwatch.cli import main
from gapwatch.core.models import LogEvent, ProverStatus

DATA = Path(__file__).parent / "data"


def test_json_lines_one_event_per_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "--json", str(DATA / "pinned.log")]) == 0
    out, err = capsys.readouterr()
    rows = [msgspec.json.decode(line) for line in out.splitlines()]
    assert len(rows) == 172
    assert rows[0]["kind"] == "tracing" and rows[0]["name"] == "starting cuzk engine"
    assert {r["time_source"] for r in rows if r["kind"] == "timeline"} == {"timeline"}
    assert "160 lines, 172 events" in err and "0 unparsed" in err


def test_text_output_and_unparsed_filter_for_checking_rules(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "mixed.log"
    log.write_bytes(b"TIMELINE,1,GPU_START,j,worker=0,partition=2\nwhat is this\n\n")
    assert main(["parse", str(log)]) == 0
    out, err = capsys.readouterr()
    assert "timeline" in out and "GPU_START" in out and "partition=2" in out
    assert "1 unparsed, 1 blank" in err
    assert main(["parse", "--unparsed", str(log)]) == 0
    out, _ = capsys.readouterr()
    assert out.count("\n") == 1 and "what is this" in out


def test_user_rule_from_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[[logs.rules]]\nname = "mine"\nregex = \'^step (?P<phase>\\w+) w(?P<worker>\\d+)\'\n')
    log = tmp_path / "p.log"
    log.write_text("step msm w3\n")
    assert main(["parse", "--config", str(cfg), "--json", str(log)]) == 0
    (row,) = [msgspec.json.decode(x) for x in capsys.readouterr().out.splitlines()]
    assert (row["kind"], row["name"], row["worker"]) == ("user:mine", "msm", 3)


def test_timeline_table_reports_the_run_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "--timeline", str(DATA / "pageable.log")]) == 0
    out = capsys.readouterr().out
    assert "GPU efficiency (merged intervals): 100.0 %" in out
    assert "kernel utilisation:                53.8 %" in out


def test_the_timeline_keeps_only_what_it_reads_however_long_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`parse --timeline` over a million-line log held every event (981 MB): it keeps the
    timeline's events only, without their raw lines, and prints the same table."""
    from gapwatch.logs.parse.partitions import RunTimeline, derive_timeline

    kept: list[list[LogEvent]] = []

    def spy(events: list[LogEvent], statuses: list[ProverStatus]) -> RunTimeline:
        kept.append(list(events))
        return derive_timeline(events, statuses)

    monkeypatch.setattr("gapwatch.commands.parse.derive_timeline", spy)
    assert main(["parse", "--timeline", str(DATA / "pageable.log")]) == 0
    table = capsys.readouterr().out
    noisy = tmp_path / "noisy.log"
    noise = "".join(f"2026-11-30T09:06:27.{i:06d}Z  INFO cuzk_core::srs: loading chunk={i} "
                    f"bytes={i * 4096} path=/data/srs/{i}.bin\n" for i in range(20_000))
    noisy.write_text((DATA / "pageable.log").read_text() + noise)
    assert main(["parse", "--timeline", str(noisy)]) == 0
    assert capsys.readouterr().out == table
    assert len(kept[1]) == len(kept[0]) < 300
    assert all(e.raw == "" for e in kept[1])


def test_stderr_file_listed_first_still_gets_the_anchor(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    err, out = tmp_path / "err.log", tmp_path / "out.log"
    err.write_text("TIMELINE,1500,GPU_START,j,worker=0\n")
    out.write_text("2026-11-30T09:06:26.500000Z  INFO cuzk_core::engine: starting cuzk engine\n")
    assert main(["parse", "--json", str(err), str(out)]) == 0
    first = msgspec.json.decode(capsys.readouterr().out.splitlines()[0])
    assert first["time_source"] == "timeline"
    assert first["t_wall_s"] == pytest.approx(1796029588.0)


def test_missing_file_is_an_error_but_the_others_are_parsed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "/nonexistent/x.log", str(DATA / "pinned.log")]) == 2  # bad usage
    _, err = capsys.readouterr()
    assert "/nonexistent/x.log: cannot read" in err and "160 lines" in err


def test_no_file_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse"]) == 2
