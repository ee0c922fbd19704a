"""Hostile trace CSVs (docs/bad-input.md, Recordings and trace CSVs): the reader reads a line at
a time, each line one CSV record, none held longer than `trace_csv.MAX_ROW_BYTES`. A stray quote
made the csv module read on across lines: the rest of a small file swallowed into one bad row,
or in a larger one `_csv.Error: field larger than field limit` and a traceback from `report`,
`replay`, `export` and `compare`; a 50 MB line of commas cost replay and export 1 GB."""

from __future__ import annotations

import gc
import gzip
import os
import tracemalloc
from pathlib import Path

import pytest
from shared_files import sim_recording_bytes

from gapwatch.cli import main
from gapwatch.sources.files import read_any
from gapwatch.sources.trace_csv import MAX_ROW_BYTES

MIB = 1 << 20

#: Each command that reads a trace CSV; OUT and OTHER stand for paths made by the test.
COMMANDS = [
    ["report", "--json"], ["export", "--format", "csv", "--out", "OUT"],
    ["replay", "--headless", "--speed", "0"], ["compare", "OTHER"],
]


def _exported(tmp_path: Path) -> Path:
    """A simulated minute of two GPUs, exported as a trace CSV (~1,900 lines, ~200 KB: more
    after any line than the csv module's 128 KiB field limit)."""
    recorded = tmp_path / "r.jsonl"
    recorded.write_bytes(sim_recording_bytes(seed=3, duration_s=60.0, gpus=2))
    out = tmp_path / "clean.csv"
    assert main(["export", str(recorded), "--format", "csv", "--out", str(out)]) == 0
    return out


def _with_line(clean: Path, name: str, line_no: int, change: bytes | None = None,
               insert: bytes | None = None) -> Path:
    """`clean` with its line `line_no` (1: the header) changed (`change` put before its
    text) or a line `insert`ed before it."""
    lines = clean.read_bytes().splitlines(keepends=True)
    i = line_no - 1
    if change is not None:
        lines[i] = change + lines[i]
    if insert is not None:
        lines.insert(i, insert)
    path = clean.parent / name
    path.write_bytes(b"".join(lines))
    return path


def _records_and_counters(path: Path) -> tuple[int, dict[str, int], list[str]]:
    rec = read_any(path)
    count = sum(1 for _ in rec.records)
    return count, rec.counters, rec.problems


def _run(command: list[str], path: Path, tmp_path: Path, other: Path) -> int:
    """One command over `path`; `compare` puts it before `other`."""
    args = [str(tmp_path / "out.csv") if a == "OUT" else str(other) if a == "OTHER" else a
            for a in command]
    return main([args[0], str(path), *args[1:]])


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _exported(tmp_path_factory.mktemp("trace"))


def test_a_stray_quote_in_a_trace_csv_is_one_bad_row_not_the_rest_of_the_file(
        clean: Path) -> None:
    """The tester's `sed '50s/^/"/'`: the quote made line 50 run on into every line after it
    (one field of the rest of the file, over the field limit here: a traceback). It is one bad
    row, said with its line; line 51 on is read as usual."""
    count, _counters, _ = _records_and_counters(clean)
    stray = _with_line(clean, "stray.csv", 50, change=b'"')
    got, counters, problems = _records_and_counters(stray)
    assert counters.get("bad_records") == 1
    assert got == count - 1
    assert problems == [f"{stray}:50: bad row (a quote left open: a row never spans lines); "
                        "skipped"]


def test_a_stray_quote_in_a_small_trace_csv_swallows_nothing_after_it(clean: Path) -> None:
    """In a file whose rest fits under the field limit the quote raised nothing: the rows after
    it vanished into one bad row, unsaid. Cut to 200 lines, the quote on line 50 costs one."""
    lines = clean.read_bytes().splitlines(keepends=True)
    small = clean.parent / "small.csv"
    small.write_bytes(b"".join(lines[:200]))
    count, _counters, _ = _records_and_counters(small)
    stray = _with_line(small, "small-stray.csv", 50, change=b'"')
    got, counters, _ = _records_and_counters(stray)
    assert counters.get("bad_records") == 1
    assert got == count - 1


def test_a_trace_csv_field_over_the_limit_is_a_bad_row_not_a_traceback(clean: Path) -> None:
    """A 200 KB cell (over the csv module's 128 KiB field limit) was `_csv.Error` out of every
    command; it is one bad row, the rest read."""
    count, _counters, _ = _records_and_counters(clean)
    wide = _with_line(clean, "wide.csv", 60, insert=b"1796000000.0,0," + b"7" * 200_000 + b"\n")
    got, counters, problems = _records_and_counters(wide)
    assert counters.get("bad_records") == 1 and got == count
    assert "field larger than field limit" in problems[0] and ":60: bad row" in problems[0]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("attack", ["stray-quote", "wide-field"])
def test_every_command_reads_a_trace_csv_with_a_stray_quote_or_a_wide_field(
    clean: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str],
    attack: str,
) -> None:
    """`report`, `export`, `replay` and `compare` each read such a file to its end (they died
    with a traceback) and say the bad row."""
    path = (_with_line(clean, "stray.csv", 50, change=b'"') if attack == "stray-quote" else
            _with_line(clean, "wide.csv", 60, insert=b"1796000000.0,0," + b"7" * 200_000 + b"\n"))
    capsys.readouterr()
    assert _run(command, path, tmp_path, clean) == 0
    said = "".join(capsys.readouterr())
    assert "bad row" in said or "bad_records" in said


def test_a_trace_csv_line_of_50_mb_is_read_in_bounded_memory(clean: Path) -> None:
    """A 50 MB line of commas (the file read whole, then a row of 50 M cells: 1 GB of RSS for
    replay and export, 8.2 GB for report at 400 MB) is a bad row passed over as it is read: the
    reading holds at most `MAX_ROW_BYTES` of it and a chunk, whatever its length."""
    count, _counters, _ = _records_and_counters(clean)
    long = _with_line(clean, "long.csv", 100, insert=b"," * (50 * 1000 * 1000) + b"\n")
    gc.collect()
    tracemalloc.start()
    try:
        got, counters, problems = _records_and_counters(long)
        peak_bytes = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak_bytes < 4 * MAX_ROW_BYTES + 4 * MIB, peak_bytes
    assert counters.get("bad_records") == 1 and got == count
    assert f"a line longer than {MAX_ROW_BYTES >> 20} MiB" in problems[0]
    assert ":100: bad row" in problems[0]


def test_a_gzip_trace_csv_reads_as_the_plain_one(clean: Path) -> None:
    """The lines come through the recordings' reader, which tells gzip by its first bytes: a
    gzip-compressed `.csv` (it was "not a trace CSV") gives the same records."""
    packed = clean.parent / "packed.csv"
    packed.write_bytes(gzip.compress(clean.read_bytes()))
    plain = read_any(clean)
    gz = read_any(packed)
    assert list(gz.records) == list(plain.records)
    assert gz.header.gpus == plain.header.gpus and gz.counters == plain.counters


def test_a_trace_csv_fifo_is_one_line_not_a_hang(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A trace CSV is read twice (its GPUs and span, then its rows): a FIFO (`open()` of one
    nobody writes to blocked for ever) is said in one line, exit 2, never opened."""
    fifo = tmp_path / "t.csv"
    os.mkfifo(fifo)
    assert main(["export", str(fifo), "--format", "csv", "--out", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert "a FIFO" in err and "save it to a file first" in err and len(err.splitlines()) == 1


def test_a_trace_csv_that_is_dev_zero_is_one_line_not_read_for_ever(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A `.csv` that is a device (`/dev/zero` behind a link: read whole, it was an endless
    read into memory) is refused before a byte is read, as a recording is."""
    zero = tmp_path / "z.csv"
    zero.symlink_to("/dev/zero")
    assert main(["report", str(zero)]) == 2
    err = capsys.readouterr().err
    assert "not a trace CSV: a character device" in err and len(err.splitlines()) == 1


def _line_ends(clean: Path, name: str, ends: tuple[bytes, ...], gz: bool = False) -> Path:
    """`clean` with its lines ended by `ends` in turn (line 1 by `ends[0]`, ...)."""
    lines = clean.read_bytes().splitlines()
    data = b"".join(line + ends[i % len(ends)] for i, line in enumerate(lines))
    path = clean.parent / name
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@pytest.mark.parametrize(("name", "ends", "gz"), [
    ("mac.csv", (b"\r",), False),  # a classic Mac's, "CSV (Macintosh)"
    ("mac-gzip.csv", (b"\r",), True),  # a `.csv` gzip-compressed
    ("mixed.csv", (b"\r\n", b"\n", b"\r"), False),  # files of both kinds joined by `cat`
    ("dos.csv", (b"\r\n",), False),
])
def test_a_trace_csv_whose_lines_end_in_a_bare_cr_gives_every_row(
        clean: Path, name: str, ends: tuple[bytes, ...], gz: bool) -> None:
    """Split on LF alone, a file of bare-CR line ends was one line: no GPU, no row, nothing
    said (and over 1 MiB "not a trace CSV"); a mixed one lost every row ended by a CR, said
    as "new-line character seen in unquoted field"."""
    plain = read_any(clean)
    other = read_any(_line_ends(clean, name, ends, gz))
    assert list(other.records) == list(plain.records)
    assert other.header.gpus == plain.header.gpus
    assert other.counters == plain.counters == {} and other.problems == []


def test_a_cr_inside_quotes_ends_its_line_as_a_lf_there_does(clean: Path) -> None:
    """A row never spans lines (a stray quote must not swallow the rows after it): a CR in a
    quoted cell ends the line, the row is a bad row said with its line, the others read."""
    path = _with_line(clean, "quoted-cr.csv", 6, change=b'1,"a\rb",')
    count, counters, problems = _records_and_counters(path)
    assert count == sum(1 for _ in read_any(clean).records) - 1
    assert counters == {"bad_records": 2}
    assert "quoted-cr.csv:6: bad row (a quote left open" in problems[0]


def test_a_crlf_split_across_two_chunks_is_one_line_end() -> None:
    """The file is read a MiB at a time: a CR that ends one chunk is a line end with the
    next chunk's LF, not two (a blank line, every line number after it one off)."""
    from gapwatch.sources.gzip_lines import bare_cr_as_lf

    chunks = [b"a,b\r", b"\nc,d\r", b"e,f\r", b"", b"\r\n", b"g\r"]
    assert b"".join(bare_cr_as_lf(chunks)) == b"a,b\r\nc,d\ne,f\r\r\ng\n"


@pytest.mark.parametrize("gz", [False, True])
def test_a_trace_csv_of_cr_cr_lf_line_ends_numbers_its_bad_rows_as_grep_does(
        clean: Path, gz: bool) -> None:
    """Lines ended `\r\r\n` (a CRLF file written again in a text mode that makes each LF a
    CRLF: Python's csv module on Windows without newline=''): the first CR was taken for a
    line end of its own, a blank line after every row, so a bad row on line 5 was said at
    ":9:" (as `grep -n`, `sed -n 5p` and gapwatch before bare CRs ended lines have it: 5)."""
    lines = _with_line(clean, "bad.csv", 5, change=b"zzz,").read_bytes().splitlines()
    data = b"".join(line + b"\r\r\n" for line in lines)
    path = clean.parent / "crcrlf.csv"
    path.write_bytes(gzip.compress(data) if gz else data)
    count, counters, problems = _records_and_counters(path)
    assert count == sum(1 for _ in read_any(clean).records) - 1
    assert counters == {"bad_records": 1}
    assert "crcrlf.csv:5: bad row" in problems[0], problems
    from gapwatch.sources.gzip_lines import bare_cr_as_lf

    # Across chunks: CRs that end one chunk go with the LF that starts the next.
    chunks = [b"a,b\r", b"\r", b"\nc,d\r\r", b"e\r"]
    assert b"".join(bare_cr_as_lf(chunks)) == b"a,b\r\r\nc,d\n\ne\n"


@pytest.mark.parametrize("command", [["report"], ["export", "--format", "csv", "--out", "OUT"],
                                     ["compare", "OTHER"]])
def test_a_trace_csv_fifo_is_given_advice_for_a_csv_not_a_recording(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    """The advice said `zcat gw.jsonl.gz > gw.jsonl` of a `.csv` FIFO: a recording's, not the
    file given."""
    fifo = tmp_path / "t.csv"
    os.mkfifo(fifo)
    assert _run(command, fifo, tmp_path, fifo) == 2
    err = capsys.readouterr().err
    assert f"save it to a file first (e.g. cat {fifo} > trace.csv)" in err, err
    assert "jsonl" not in err and len(err.splitlines()) == 1
