"""Tables of outside text: `compare --markdown` pasted into a ticket, the text tables of
`compare`, `report` and `parse --timeline` with hostile widths. Each cell of outside text goes
through one rule: `fmt.markdown` for Markdown, `fmt.fit` (terminal cells) for text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gapwatch.cli import main
from gapwatch.config import Config
from gapwatch.core import fmt
from gapwatch.cuzk.settings import ProverSettings
from gapwatch.offline.compare import Comparison, compare, read_side
from gapwatch.offline.compare_format import format_markdown, format_text

PINNED = Path(__file__).parent / "data" / "h200-e2e" / "chained" / "rec.jsonl.gz"

#: What a prover's log line (or a hand-edited recording) can put in a setting's value.
HOSTILE = ('x|y\n# H1 `code` <details open><summary>s</summary>hid</details> '
           '<a href="https://evil.example">a</a> [l](javascript:alert(1)) &#8238;rlo \\| '
           "**b** <script>alert(1)</script>")
#: East-Asian wide characters, combining marks and a zero-width joiner.
WIDE = "作業-漢字-e\u0301\u0301-\U0001f468\u200d\U0001f469"


def _hostile_comparison(value: str) -> Comparison:
    cfg = Config()
    c = compare(read_side("BEFORE", PINNED, cfg, []), read_side("AFTER", PINNED, cfg, []))
    c.before.path = "evil|<b>bold</b>\n# x.jsonl"
    c.after.settings = ProverSettings(
        {**c.after.settings.values, "[daemon] status_listen": value,
         "[pipeline] enabled": value}, dict(c.after.settings.seen_in),
        deprecated=(value,), env={"CUZK_VALIDATE_PARTITIONS": value})
    return c


def test_markdown_compare_of_hostile_settings_keeps_its_tables_and_renders_no_html() -> None:
    """Only `|` was escaped: `<details>`, `<a href>`, `<script>`, an entity (`&#8238;`, a
    right-to-left override once rendered), a link and a code span went into the ticket as
    Markdown, and `\\|` ended the cell."""
    markdown_it = pytest.importorskip("markdown_it")
    md = format_markdown(_hostile_comparison(HOSTILE))
    html = markdown_it.MarkdownIt("gfm-like").render(md)  # tables and raw HTML, as GitHub
    # A bare URL is linked by GFM's autolinks, showing where it goes: the one link allowed.
    html = re.sub(r'<a href="([^"]*)">\1</a>', r"\1", html)
    html = html.replace("<p><em>per-window", "<p>per-window")  # the method, in italics
    assert not re.search(r"<(details|summary|a|script|code|em|strong|h1)\b", html.replace(
        "<strong>changed</strong>", "").replace("<strong>no measurable change</strong>", ""))
    assert "href=\"" not in html and "\u202e" not in html and "&#8238;" not in html
    rows = re.findall(r"<tr>(.*?)</tr>", html, re.S)
    assert rows and all(len(re.findall(r"<t[dh]\b", r)) in (3, 6) for r in rows)
    # The text itself is all there to read, as the terminal shows it.
    assert "&lt;details open&gt;" in html and "[l](javascript:" in html
    assert "x|y\\x0a# H1 `code`" in html


def test_markdown_compare_pasted_into_github_mentions_no_one_and_references_no_issue() -> None:
    """GitHub turns `@name` into a notification and `#123` into a line in issue 123 after it
    renders, whatever backslash precedes them (github/markup#1168): a setting's value of
    `@org/everyone see #1` pasted a ping to a whole team into the ticket."""
    markdown_it = pytest.importorskip("markdown_it")
    value = "@org/everyone see #1, owner@example.com, org/repo#42"
    md = format_markdown(_hostile_comparison(value))
    assert not re.search(r"@\w|#\d", md)  # none left whole
    html = markdown_it.MarkdownIt("gfm-like").render(md)
    # A comment renders as nothing; a bare domain may be linked where it stands (GFM's
    # autolinks, as the hostile test above allows: it shows where it goes).
    shown = re.sub(r"<!-- -->|</?a\b[^>]*>", "", html)
    assert "@org/everyone see #1, owner@example.com, org/repo#42" in shown


def test_text_compare_with_a_16_kib_value_and_wide_characters_stays_within_100_columns() -> None:
    """A setting's value was printed whole (`{v:>18}`: a 16 KiB line) and counted in
    characters, not terminal cells."""
    for value in ("v" * 16384, WIDE * 4, "\u200d" * 16384):
        text = format_text(_hostile_comparison(value))
        assert max(fmt.cells(line) for line in text.splitlines()) <= 100
        rows = [line for line in text.splitlines() if "status_listen" in line]
        assert len(rows) == 1 and fmt.cells(rows[0]) == 78  # the columns stay in line


def test_report_and_parse_timeline_align_wide_job_ids_and_cut_a_16_kib_source(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The partition table padded job ids by characters: one with wide characters or
    combining marks pushed every column after it out of line; the head printed a 16 KiB
    source whole."""
    log = tmp_path / "wide.log"
    jobs = [WIDE, "plain-job"]
    log.write_text("\n".join([
        "2026-11-30T09:06:38.134140Z  INFO cuzk_core::engine: starting cuzk engine",
        *(f"TIMELINE,{10 + 2000 * p},SYNTH_START,{jobs[p]},partition={p}" for p in range(2)),
        *(f"TIMELINE,{900 + 2000 * p},GPU_START,{jobs[p]},partition={p},worker=0"
          for p in range(2)),
        *(f"TIMELINE,{1800 + 2000 * p},GPU_END,{jobs[p]},partition={p},worker=0"
          for p in range(2)),
    ]) + "\n", encoding="utf-8")
    assert main(["parse", "--timeline", str(log)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines()
            if WIDE[:2] in line or "plain-job" in line]
    assert len(rows) == 2
    assert fmt.cells(rows[0][:rows[0].index(" 0 ")]) == fmt.cells(
        rows[1][:rows[1].index(" 1 ")])

    rec = tmp_path / "r.jsonl"
    assert main(["record", "--source", "sim:pageable", "--speed", "0", "--duration", "5",
                 "--quiet", "--out", str(rec)]) == 0
    lines = rec.read_text().splitlines()
    lines[0] = lines[0].replace('"source":"sim:pageable"', '"source":"' + "S" * 16384 + '"')
    rec.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["report", str(rec)]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "SSSS…" in head and fmt.cells(head) < 200
