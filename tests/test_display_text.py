"""Text from outside is shown with its control characters made visible, never obeyed: the log
pane, the gap table's hints, snapshot summary.md, report text and `parse` all go through
`fmt.visible`. Markup such as `[bold]` is shown literally, as before."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from msgspec.structs import replace
from ui_fakes import H200, WALL0_S, fill_breakdown, header, log_event, make_config

from gapwatch.cli import main
from gapwatch.core.fmt import markdown, visible
from gapwatch.engine.store import SeriesStore
from gapwatch.sinks.snapshot import write_snapshot
from gapwatch.ui.widgets.log_pane import event_line

ALT_SCREEN_OFF = "\x1b[?1049l"  # the escape that switched the terminal out of the dashboard


def no_controls(text: str) -> bool:
    return not any(ord(c) < 0x20 and c not in "\t\n" or 0x7F <= ord(c) < 0xA0 for c in text)


def test_terminal_escapes_are_written_out_and_colours_dropped() -> None:
    assert visible(f"a{ALT_SCREEN_OFF}b") == "a\\x1b[?1049lb"
    assert visible("\x1b[32m INFO\x1b[0m done") == " INFO done"
    assert visible("bell\x07 back\x08 cr\r lf\n del\x7f csi\x9b2J") == (
        "bell\\x07 back\\x08 cr\\x0d lf\\x0a del\\x7f csi\\x9b2J")


def test_bidirectional_overrides_are_written_out_and_ordinary_text_is_untouched() -> None:
    assert visible("file\u202egnp.exe") == "file\\u202egnp.exe"
    for text in ("[bold]not markup[/bold]", "µs — done", "tab\tseparated", ""):
        assert visible(text) == text


def test_the_log_pane_shows_an_escape_instead_of_sending_it() -> None:
    line = event_line(log_event(1.0, f"INFO x{ALT_SCREEN_OFF}y [bold]z[/bold]\r", None))
    assert line.plain.endswith("INFO x\\x1b[?1049ly [bold]z[/bold]")
    assert no_controls(line.plain)


def test_snapshot_summary_shows_escapes_in_quoted_log_lines(tmp_path: Path) -> None:
    store = SeriesStore(list(header().gpus), period_s=0.1, history_s=600)
    fill_breakdown(store)
    store.append_log(log_event(55.0, f"WARN checkout FAILED {ALT_SCREEN_OFF}\x1b]0;title\x07",
                               "pinned_pool_fallback"))
    path = write_snapshot(tmp_path, store.snapshot(), header(), make_config(tmp_path),
                          t_wall_s=WALL0_S + 61)
    summary = (path / "summary.md").read_text()
    assert no_controls(summary)
    # Shown, and as Markdown text: each `\\` and `[` escaped (`fmt.markdown`).
    assert "WARN checkout FAILED \\\\x1b\\[?1049l\\\\x1b\\]0;title\\\\x07" in summary


#: Outside text that Markdown (GitHub's) would act on: HTML, a details block, a javascript:
#: link, a team mention, an issue reference, a code span, a table cell, a line's own fence.
HOSTILE_MD = ("<img src=x onerror=alert(1)> <details open><summary>hi</summary> "
              "[click](javascript:alert(1)) @org/team #123 `code` | cell ```")


def test_snapshot_summary_quotes_outside_text_as_text_not_as_markdown(tmp_path: Path) -> None:
    """summary.md (made to be pasted into a ticket) passed the prover's error texts and a
    recording's GPU name through as live Markdown and HTML (only `|` escaped in tables), and a
    quoted log line sat in a fenced block its own ``` could close. Every outside text goes in
    through `fmt.markdown`, as `compare --markdown`'s does."""
    gpu = replace(H200, name=f"H100 {HOSTILE_MD}")
    store = SeriesStore([gpu], period_s=0.1, history_s=600)
    fill_breakdown(store)
    store.append_log(log_event(55.0, f"WARN checkout FAILED {HOSTILE_MD}", "pinned_pool_fallback"))
    hdr = replace(header([gpu]), host=f"box {HOSTILE_MD}")
    path = write_snapshot(tmp_path, store.snapshot(), hdr, make_config(tmp_path),
                          t_wall_s=WALL0_S + 61, status_lines=[f"log {HOSTILE_MD}"])
    summary = (path / "summary.md").read_text()
    said = summary.split("## Config")[0]  # the config's own JSON block aside
    # Each character Markdown acts on has its backslash; mentions and references are broken.
    for live in (r"(?<!\\)</?(img|details|summary)", r"(?<!\\)\]\(javascript",
                 r"(?<!\\)`(code|``)", r"(?<!\\)\| cell", r"@org", r"#123"):
        assert re.search(live, said) is None, live
    assert markdown(f"WARN checkout FAILED {HOSTILE_MD}") in summary
    # The title, the GPU's row, the log line and the status line.
    assert summary.count(markdown(HOSTILE_MD)) == 4


def test_report_text_shows_escapes_in_paths_and_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / f"trace{ALT_SCREEN_OFF}.csv"
    path.write_text("timestamp_s,gpu,sm_active_pct\n1.0,0,50\n2.0,0,50\nx,0,1\n")
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert no_controls(out)
    assert "trace\\x1b[?1049l.csv" in out and "bad row" in out


def test_parse_text_output_shows_escapes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "x.log"
    log.write_bytes(b"hello \x1b[?1049l \x1b]52;c;ZXZpbA==\x07 world\n")
    assert main(["parse", str(log)]) == 0
    out = capsys.readouterr().out
    assert no_controls(out) and "\\x1b]52;c;ZXZpbA==\\x07" in out


OSC_TITLE = "\x1b]0;pwned\x07"
OSC_CLIPBOARD = "\x1b]52;c;ZXZpbA==\x07"


def test_parse_timeline_of_a_log_holding_osc_sequences_prints_no_raw_escape(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = f"porep{OSC_TITLE}{OSC_CLIPBOARD}"
    lines = [
        "2026-11-30T09:06:38.134140Z  INFO cuzk_core::engine: starting cuzk engine",
        f"TIMELINE,10,SYNTH_START,{job},partition=0",
        f"TIMELINE,900,SYNTH_END,{job},partition=0,synth_ms=890",
        f"TIMELINE,900,GPU_QUEUE,{job},partition=0",
        f"TIMELINE,901,GPU_START,{job},partition=0,worker=0",
        f"TIMELINE,1800,GPU_END,{job},partition=0,worker=0",
    ]
    log = tmp_path / f"cuzk{OSC_TITLE}.log"  # the path is outside text too
    log.write_text("\n".join(lines) + "\n")
    assert main(["parse", "--timeline", str(log)]) == 0
    captured = capsys.readouterr()
    assert "\x1b" not in captured.out and "\x07" not in captured.out
    assert "porep\\x1b]0;pwned" in captured.out  # shown, written out
    assert "\x1b" not in captured.err and no_controls(captured.err)


def test_every_line_on_stderr_shows_outside_text_inert(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gapwatch.engine.console import Console

    # A copy-trace NOTE and a log path, as `record` prints them (through the one console).
    assert Console().say(f"warning: copy trace: pid 9: {OSC_CLIPBOARD}injected")
    missing = tmp_path / f"nowhere{OSC_TITLE}.log"
    assert main(["record", "--source", "sim:chained", "--speed", "0", "--duration", "1",
                 "--quiet", "--log", str(missing), "--out", str(tmp_path / "r.jsonl")]) == 0
    err = capsys.readouterr().err
    assert "\\x1b]52;c;ZXZpbA==\\x07injected" in err and "nowhere\\x1b]0;pwned\\x07.log" in err
    assert "\x1b" not in err and no_controls(err)
