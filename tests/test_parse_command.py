"""`gapwatch parse`: events as text or JSON Lines, counts on stderr, the derived timeline."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import msgspec
import pytest

from gapwatch.cli import main

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


def test_a_rule_that_backtracks_is_named_in_the_summary_and_the_other_lines_are_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[[logs.rules]]\nname = "runaway"\nregex = \'^(a|aa)+$\'\n')
    log = tmp_path / "p.log"
    log.write_text("a" * 3000 + "!\n" + "aaaa\n")  # a hostile line, then one it decides
    assert main(["parse", "--config", str(cfg), "--json", str(log)]) == 0
    out, err = capsys.readouterr()
    kinds = [msgspec.json.decode(x)["kind"] for x in out.splitlines()]
    assert kinds == ["unparsed", "user:runaway"]  # the hostile line kept, as text
    assert "1 unparsed" in err
    assert "1 time(s) a rule could not decide a line in 50 ms (it backtracks" in err


def test_a_config_of_a_thousand_rules_that_backtrack_gives_a_line_up_once_said_as_searches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each rule had 50 ms of its own: 1,300 rules that backtrack (what a 64 KiB config holds)
    took 70 s of one line, and the summary said "1300 line(s)" of a one-line log."""
    cfg = tmp_path / "c.toml"
    cfg.write_text("".join(f'[[logs.rules]]\nname = "r{i}"\nregex = \'^(a|aa)+$\'\n'
                           for i in range(1000)))
    log = tmp_path / "p.log"
    log.write_text("a" * 3000 + "!\n")
    assert main(["parse", "--config", str(cfg), "--json", str(log)]) == 0
    err = capsys.readouterr().err
    assert "1 line(s) left unread by the later rules, the 200 ms all the rules have" in err
    assert "1000 time(s)" not in err and " line(s) a rule could not decide" not in err


def test_timeline_table_reports_the_run_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "--timeline", str(DATA / "pageable.log")]) == 0
    out = capsys.readouterr().out
    assert "GPU efficiency (merged intervals): 100.0 %" in out
    assert "kernel utilisation:                53.8 %" in out


def test_the_timeline_holds_its_partitions_not_the_lines_of_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`parse --timeline` over a million-line log held every event (981 MB). Six times the
    lines (every one of them a line the timeline reads) must not take more memory."""
    peaks = []
    for copies in (1, 4, 24):  # the first warms up (imports, compiled rules)
        log = tmp_path / f"x{copies}.log"
        log.write_text((DATA / "pageable.log").read_text() * copies)
        tracemalloc.start()
        assert main(["parse", "--timeline", str(log)]) == 0
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        capsys.readouterr()
    assert peaks[2] - peaks[1] < 300_000, peaks


def test_stderr_file_listed_first_still_gets_the_anchor(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    err, out = tmp_path / "err.log", tmp_path / "out.log"
    err.write_text("TIMELINE,1500,GPU_START,j,worker=0\n")
    out.write_text("2026-11-30T09:06:26.500000Z  INFO cuzk_core::engine: starting cuzk engine\n")
    assert main(["parse", "--json", str(err), str(out)]) == 0
    # Read after the file that shows a time (`logs.files.read_order`): its anchor is known.
    start, timeline = map(msgspec.json.decode, capsys.readouterr().out.splitlines())
    assert start["name"] == "starting cuzk engine"
    assert timeline["time_source"] == "timeline"
    assert timeline["t_wall_s"] == pytest.approx(1796029588.0)


def test_missing_file_is_an_error_but_the_others_are_parsed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "/nonexistent/x.log", str(DATA / "pinned.log")]) == 2  # bad usage
    _, err = capsys.readouterr()
    assert "/nonexistent/x.log: cannot read" in err and "160 lines" in err


@pytest.mark.parametrize("flag", ["--json", "--unparsed"])
def test_an_events_flag_with_timeline_is_refused_not_ignored(
        flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`parse --timeline --json LOG` printed the text table, `--json` dropped without a word (a
    script then read text where it asked for JSON); `--unparsed` the same. Both choose how the
    events are printed, and `--timeline` prints no events."""
    assert main(["parse", "--timeline", flag, str(DATA / "pageable.log")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{flag} prints the events" in captured.err and "report --json" in captured.err
    assert len(captured.err.strip().splitlines()) == 1


def test_no_file_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse"]) == 2


def test_parse_timeline_of_timeline_lines_without_their_anchor_gives_no_wall_time_of_its_own_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """cuzk's stderr alone (TIMELINE lines, no `starting cuzk engine` line): the lines were
    timed when parse read them, and the table said "wall time ... 0.494 s" and "GPU efficiency
    100.0 %" of a ten-minute run: the parse's own time."""
    lines = [f"TIMELINE,{t0},GPU_START,porep-1-0,worker={p},partition={p}\n"
             f"TIMELINE,{t0 + 1500},GPU_END,porep-1-0,worker={p},partition={p},gpu_ms=1500\n"
             for p, t0 in enumerate((1000, 301_000, 601_000))]
    log = tmp_path / "stderr.log"
    log.write_text("".join(lines))
    assert main(["parse", "--timeline", str(log)]) == 0
    out = capsys.readouterr().out
    assert "wall time (first GPU_START .. last GPU_END): -" in out
    assert "GPU efficiency (merged intervals): -" in out
    assert "6 TIMELINE line(s) without their anchor" in out
    assert out.count("porep-1-0") == 3 and "1500" in out  # the rows and their durations kept
    anchored = tmp_path / "cuzk.log"
    anchored.write_text("2026-11-30T00:53:20.000000Z  INFO cuzk_core::engine: starting cuzk "
                        "engine pipeline_enabled=true\n" + "".join(lines))
    assert main(["parse", "--timeline", str(anchored)]) == 0
    out = capsys.readouterr().out
    assert "wall time (first GPU_START .. last GPU_END): 601.500 s" in out
    assert "without their anchor" not in out
