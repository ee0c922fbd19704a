"""Hostile recordings (issue 29, items 4 and 5): every reader (report in one process and split,
export csv and perfetto, replay) takes a bad line as a counted bad record, never a traceback;
a bad line costs nothing once counted; a line longer than any record is passed over without
being held, plain or gzip."""

from __future__ import annotations

import functools
import gc
import gzip
import os
import threading
import time
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import msgspec
import pytest

from evaluation.simulate import SimResult, simulate
from gapwatch.base.gzip_stream import OUT_BYTES
from gapwatch.cli import main
from gapwatch.config import Config
from gapwatch.offline import report
from gapwatch.offline.detect import Detected
from gapwatch.offline.report import build_report
from gapwatch.offline.report_parallel import detect_parallel
from gapwatch.sinks.recorder import write_recording
from gapwatch.sources import recording
from gapwatch.sources.files import read_any
from gapwatch.sources.gzip_lines import MAX_LINE_BYTES
from gapwatch.sources.recording import json_bytes

HOSTILE = Path(__file__).parent / "data" / "hostile"
MIB = 1 << 20

COMMANDS = [
    ["report", "--json"], ["export", "--format", "csv"], ["export", "--format", "perfetto"],
    ["replay", "--headless", "--speed", "0"],
]


@functools.cache
def _minute() -> SimResult:
    """A simulated minute of two GPUs, simulated once per test process (~16 tests start from
    it, and only read it)."""
    return simulate("pageable", seed=2, duration_s=60.0, gpus=2)


def _recording(tmp_path: Path, extra: list[bytes], name: str = "r.jsonl", at: int = 100,
               compress: bool = False, samples_only: bool = False) -> Path:
    """A simulated minute (two GPUs) with `extra` lines put in after line `at`; `samples_only`:
    GPU and host samples alone (what the report splits across processes)."""
    sim = _minute()
    plain = tmp_path / "clean.jsonl"
    records = [r for r in sim.records if not samples_only or r.type in ("gpu", "host")]
    write_recording(plain, sim.header, records)
    lines = plain.read_bytes().splitlines(keepends=True)
    path = tmp_path / name
    with (gzip.open(path, "wb", compresslevel=1) if compress else open(path, "wb")) as out:
        out.writelines(lines[:at])
        out.writelines(extra)
        out.writelines(lines[at:])
    return path


@pytest.mark.parametrize("hostile", ["nested-type-last.jsonl", "nested-fields.jsonl"])
@pytest.mark.parametrize("command", COMMANDS)
def test_deeply_nested_json_is_a_counted_bad_record_in_every_reader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], hostile: str, command: list[str],
) -> None:
    """A 30 KB line of brackets made msgspec raise RecursionError: report, export and replay
    died with a traceback."""
    path = _recording(tmp_path, [(HOSTILE / hostile).read_bytes()])
    extra = ["--out", str(tmp_path / "out.x")] if command[0] == "export" else []
    assert main([command[0], str(path), *command[1:], *extra]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    if command[0] == "report":
        doc = msgspec.json.decode(out)
        assert doc["counters"]["bad_records"] == 1 and doc["gaps"]
        assert any(":101: bad record (" in p for p in doc["problems"])


def test_deeply_nested_json_is_a_bad_record_in_the_split_report_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [(HOSTILE / n).read_bytes() for n in ("nested-type-last.jsonl", "nested-fields.jsonl")]
    path = _recording(tmp_path, lines, samples_only=True)
    splits: list[bool] = []

    def seen(*args: Any, **kwargs: Any) -> Detected | None:
        found = detect_parallel(*args, **kwargs)
        splits.append(found is not None)
        return found

    monkeypatch.setattr(report, "detect_parallel", seen)  # as build_report calls it
    one = build_report(path, Config(), workers=1)
    split = build_report(path, Config(), workers=2)
    assert splits == [True]  # split, not fallen back to one
    assert one.counters["bad_records"] == split.counters["bad_records"] == 2
    assert one.gaps == split.gaps and one.gaps


def test_a_deeply_nested_header_is_not_a_recording_said_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["report", str(HOSTILE / "nested-header.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "not a gapwatch recording (the header line is nested too deep)" in err
    assert "Traceback" not in err


#: One bad line of each kind the reader meets: not JSON, a wrong type, a value out of bounds,
#: a log event whose repair fails, an unchanged-prover marker with nothing before it, nesting.
BAD_LINES = [
    b"not json at all\n",
    b'{"type":"gpu","gpu":"0"}\n',
    b'{"type":"log","t_wall_s":1.0,"fields":{"a":99999999999999999999},"raw":5}\n',
    b'{"type":"prover_same","prover":"nobody","t_mono_ns":1,"t_wall_s":1.0}\n',
    b'{"type":"prover_same",' + b"[" * 2000 + b"\n",
    b'{"fields":{"a":' + b"[" * 2000 + b"]" * 2000 + b'},"type":"log"}\n',
    b'{"type":"log","fields":{"a":' + b"[" * 2000 + b"]" * 2000 + b"}}\n",
]


def test_bad_lines_cost_nothing_once_counted_with_the_cycle_collector_off(
    tmp_path: Path,
) -> None:
    """The report runs with the cyclic GC off; each bad line used to leave two exceptions in a
    cycle through their tracebacks (1 M bad lines: 2.4 GB; a 21 KB gzip of 10 M: MemoryError)."""
    n = 300
    path = _recording(tmp_path, BAD_LINES * n)
    was_on = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        rec = read_any(path)
        list(rec.records)
        left_in_cycles = gc.collect()
    finally:
        if was_on:
            gc.enable()
    assert rec.counters["bad_records"] == len(BAD_LINES) * n
    assert left_in_cycles < 50  # what one read leaves, not what each bad line does


def _gzip_with_a_huge_line(path: Path, head: bytes, line_bytes: int, tail: bytes) -> None:
    """A gzip file with `line_bytes` of one line between `head` and `tail`, written without
    holding the line (it compresses ~200:1 at the fastest level: the reader takes any level
    alike, and level 9 took twice the CPU for 128 MiB of it)."""
    z = zlib.compressobj(1, zlib.DEFLATED, 31)
    block = b"x" * MIB
    with open(path, "wb") as out:
        out.write(z.compress(head))
        for _ in range(line_bytes // MIB):
            out.write(z.compress(block))
        out.write(z.compress(b"\n" + tail))
        out.write(z.flush())


@pytest.mark.parametrize("compressed", [False, True])
def test_a_line_longer_than_any_record_is_a_bad_record_read_without_holding_it(
    tmp_path: Path, compressed: bool,
) -> None:
    """A 4.2 MB gzip holding one 4 GiB line was a MemoryError in all five readers; here twice
    the limit (the reader's memory must stay near the limit, not the line: a reader holding the
    line whole would pass the bound below)."""
    clean = _recording(tmp_path, [])
    lines = clean.read_bytes().splitlines(keepends=True)
    head, tail = b"".join(lines[:100]), b"".join(lines[100:])
    huge = 2 * MAX_LINE_BYTES if compressed else MAX_LINE_BYTES + 8 * MIB
    path = tmp_path / ("huge.jsonl.gz" if compressed else "huge.jsonl")
    if compressed:
        _gzip_with_a_huge_line(path, head, huge, tail)
    else:
        with open(path, "wb") as out:
            out.write(head)
            for _ in range(huge // MIB):
                out.write(b"x" * MIB)
            out.write(b"\n" + tail)
    tracemalloc.start()
    try:
        rec = read_any(path)
        n = sum(1 for _ in rec.records)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == len(lines) - 1  # every record but the header, none lost around the long line
    assert rec.counters == {"bad_records": 1}
    assert "a line longer than 64 MiB" in rec.problems[0]
    # The limit, and a few chunks in flight (an inflated piece of 8 MiB, zlib's output blocks).
    assert peak < MAX_LINE_BYTES + 40 * MIB, peak


@pytest.fixture
def small_line_limit(monkeypatch: pytest.MonkeyPatch) -> int:
    """The readers' line limit at 8 MiB instead of 64, so that a line just past it is cheap
    to inflate (each reader below would otherwise inflate 65 MiB, 1-2 s of CPU apiece); the
    limit's own bound on memory is tested above at its real size. Not less: a line is held to
    the limit once it outgrows the piece inflated at a time (`gzip_stream.OUT_BYTES`)."""
    monkeypatch.setattr(recording, "MAX_LINE_BYTES", OUT_BYTES)
    return OUT_BYTES


@pytest.mark.parametrize("command", [*COMMANDS, ["report"]])
def test_a_gzip_of_one_huge_line_is_a_bad_record_in_every_reader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str],
    small_line_limit: int,
) -> None:
    clean = _recording(tmp_path, [])
    lines = clean.read_bytes().splitlines(keepends=True)
    path = tmp_path / "huge.jsonl.gz"
    # Just past the limit: every reader must skip it (a few MiB over costs what 64 over does).
    _gzip_with_a_huge_line(path, b"".join(lines[:100]), small_line_limit + MIB,
                           b"".join(lines[100:]))
    extra = ["--out", str(tmp_path / "out.x")] if command[0] == "export" else []
    assert main([command[0], str(path), *command[1:], *extra]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    if command == ["report", "--json"]:
        doc = msgspec.json.decode(out)
        assert doc["counters"]["bad_records"] == 1
        assert "a line longer than 8 MiB" in str(doc), doc  # passed over, not decoded


def test_a_huge_first_line_is_not_a_recording_said_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], small_line_limit: int,
) -> None:
    path = tmp_path / "huge-first.jsonl.gz"
    _gzip_with_a_huge_line(path, b"", small_line_limit + MIB, b"")
    assert main(["report", str(path)]) == 2
    assert "the first line is longer than 8 MiB" in capsys.readouterr().err


def test_sizing_a_gzip_of_one_huge_line_holds_no_more_than_a_chunk(tmp_path: Path) -> None:
    """`report` sizes a gzip recording by inflating its first MiB (to pick its processes): a MiB
    of one repeated byte inflates to a GiB, and was held whole (the 4 GiB line: ~500 MB peak).
    A sixteenth of that here: all of it inflates, held whole it would be 64 MiB."""
    path = tmp_path / "huge.jsonl.gz"
    _gzip_with_a_huge_line(path, b"", 1 << 26, b"")
    tracemalloc.start()
    try:
        size = json_bytes(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert size > 1 << 26
    assert peak < 24 * MIB, peak


def test_a_recorded_copy_that_ends_before_it_starts_or_lasts_days_is_a_bad_record(
    tmp_path: Path,
) -> None:
    """Live, the copy trace refuses such copies (`bounds.copy_times_problem`); a recording took
    them: one copy eleven days long made every gap of its GPU 100 % pageable and its hint say
    "18.4 GiB copied from pageable host memory at 0 MB/s"."""
    sim = simulate("pageable", seed=3, duration_s=40.0, gpus=2, copies_per_partition=5)
    copy = msgspec.to_builtins(next(r for r in sim.records if r.type == "copy"))
    bad = [{**copy, "end_wall_s": copy["start_wall_s"] - 5.0},
           {**copy, "start_wall_s": copy["start_wall_s"] - 1e6}]
    path = _recording(tmp_path, [msgspec.json.encode(c) + b"\n" for c in bad], at=300)
    clean = build_report(_recording(tmp_path, [], name="clean.jsonl"), Config(), workers=1)
    one = build_report(path, Config(), workers=1)
    split = build_report(path, Config(), workers=2)
    assert one.counters["bad_records"] == split.counters["bad_records"] == 2
    assert [p.split(": bad record ")[1] for p in one.problems] == [
        "(not a copy: it ends before it starts)", "(not a copy: it lasts over 3600 s)"]
    assert one.gaps == split.gaps == clean.gaps


def test_readings_no_hardware_gives_are_bad_records_not_309_digit_figures(tmp_path: Path) -> None:
    """A host sample saying 1.7e308 % of memory used was printed in 309 digits in a gap's hint;
    a GPU sample moving 1e300 B/s made its GPU's header link "belied" and summed to infinity."""
    sim = _minute()
    gpu = msgspec.to_builtins(next(r for r in sim.records if r.type == "gpu"))
    host = msgspec.to_builtins(next(r for r in sim.records if r.type == "host"))
    absurd = [{**gpu, "pcie_rx_bytes_per_s": 1e300}, {**host, "mem_used_pct": 1.7e308},
              {**host, "psi_mem_some_share": 3.0}, {**host, "major_faults_per_s": -1.0},
              {**gpu, "sm_active_pct": 1e300}]
    path = _recording(tmp_path, [msgspec.json.encode(d) + b"\n" for d in absurd], at=300)
    found = build_report(path, Config(), workers=1)
    assert found.counters["bad_records"] == 5
    assert [p.rsplit("at `$.", 1)[1] for p in found.problems] == [
        "pcie_rx_bytes_per_s`)", "mem_used_pct`)", "psi_mem_some_share`)",
        "major_faults_per_s`)", "sm_active_pct`)"]
    assert not any("belied" in w for w in found.warnings)


def test_a_gpus_health_and_link_no_gpu_reads_are_bad_records(tmp_path: Path) -> None:
    """A link "trained down to Gen99 x-3 = 1e300 GB/s, max Gen4611686018427387904 x0" went into
    every gap's hint of its GPU, and a 1e300 degC GPU into the health table; a process holding
    -5 GiB, a blind spot of 1e300 s."""
    health = {"type": "health", "gpu": 0, "t_mono_ns": 1_010_000_000_000,
              "t_wall_s": 1_796_000_010.0, "temperature_c": 1e300, "power_w": 450.0}
    link = {"type": "link", "gpu": 1, "t_mono_ns": 1_010_000_000_000,
            "t_wall_s": 1_796_000_010.0, "gen": 99, "width": -3, "max_gen": 2**62,
            "max_width": 0, "bytes_per_s": 1e300, "max_bytes_per_s": 63e9}
    procmem = {"type": "procmem", "t_mono_ns": 1_010_000_000_000, "t_wall_s": 1_796_000_010.0,
               "gpu": 0, "pid": 4242, "name": "cuzk", "rss_shmem_bytes": -5 << 30,
               "rss_anon_bytes": 1 << 30}
    blind = {"type": "blind", "t_mono_ns": 1_010_000_000_000, "t_wall_s": 1_796_000_010.0,
             "duration_s": 1e300}
    path = _recording(tmp_path, [msgspec.json.encode(d) + b"\n"
                                 for d in (health, link, procmem, blind)], at=300)
    found = build_report(path, Config(), workers=1)
    assert found.counters["bad_records"] == 4
    assert not any("Gen99" in (g.hint or "") for g in found.gaps)
    assert not found.health  # the only health reading was the absurd one


def test_a_prover_snapshot_no_prover_serves_is_a_bad_record(tmp_path: Path) -> None:
    """cuzk's `/status` is read live by Rust's own types (unsigned counts, durations); a
    recording's snapshot was not: -5 syntheses running, -3 GiB of budget and a busy time of
    -1e300 s went to the advice's evidence."""
    sim = simulate("pageable", seed=2, duration_s=60.0, gpus=2, status_period_s=5.0)
    status = msgspec.to_builtins(next(r for r in sim.records if r.type == "prover"))
    bad = [{**status, "synthesis_active": -5}, {**status, "memory_used_bytes": -3 << 30},
           {**status, "latency_ms": -1.0},
           {**status, "workers": [{"worker_id": 0, "gpu": 0, "state": "busy", "busy_s": -1e300}]}]
    path = _recording(tmp_path, [msgspec.json.encode(d) + b"\n" for d in bad], at=300)
    found = build_report(path, Config(), workers=1)
    assert found.counters["bad_records"] == 4


def test_a_trace_csv_of_readings_no_hardware_gives_has_bad_rows(tmp_path: Path) -> None:
    """The same bounds for a trace CSV as for a recording: a 1e300 B/s row was summed by the
    detector, a 1e308 % host row printed in the hints."""
    rows = "".join(
        f"{1_796_000_000 + i / 10:.1f},0,{0 if 20 < i < 40 else 90},0,"
        f"{1e300 if i == 30 else 4e9},1e6,{1e308 if i == 50 else 40},{0.5 if i != 60 else -2}\n"
        for i in range(100))
    path = tmp_path / "trace.csv"
    path.write_text("timestamp_s,gpu,sm_active_pct,gpu_util_pct,pcie_rx_bytes_per_s,"
                    "pcie_tx_bytes_per_s,host_mem_used_pct,host_psi_mem_some_avg10\n" + rows)
    found = build_report(path, Config())
    assert found.counters["bad_records"] == 3
    assert [p.split("bad row (")[1].split(":")[0] for p in found.problems] == [
        "pcie_rx_bytes_per_s", "host_mem_used_pct", "host_psi_mem_some_avg10"]
    assert found.gaps and all(g.pcie_rx_bytes_per_s is not None
                              and g.pcie_rx_bytes_per_s < 1e13 for g in found.gaps)


# Recordings given as what no recording is (docs/bad-input.md, Recordings and trace CSVs).


@pytest.mark.parametrize("command", COMMANDS)
def test_a_recording_that_is_dev_zero_is_refused_in_one_line_not_read_for_ever(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str],
) -> None:
    """`/dev/zero` was read for ever (one endless line of NULs, passed over unheld)."""
    extra = ["--out", str(tmp_path / "out.x")] if command[0] == "export" else []
    assert main([command[0], "/dev/zero", *command[1:], *extra]) == 2
    err = capsys.readouterr().err
    assert err == f"gapwatch {command[0]}: /dev/zero: not a recording: a character device\n"


def test_a_recording_fifo_nobody_writes_to_is_given_up_not_a_hang(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`open()` of a FIFO without a writer blocked every reader for ever. (Nobody writes:
    the wait's length only sets the test's own.)"""
    monkeypatch.setattr(recording, "FIFO_FIRST_BYTES_S", 0.05)
    fifo = tmp_path / "r.jsonl"
    os.mkfifo(fifo)
    started_s = time.monotonic()
    assert main(["export", str(fifo), "--format", "csv", "--out", str(tmp_path / "o.csv")]) == 2
    assert time.monotonic() - started_s < 10
    assert "a FIFO that said nothing for 0.05 s" in capsys.readouterr().err


def test_a_silent_fifos_wait_ends_at_its_bound_not_at_the_next_quarter_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The wait for a FIFO's writer is sliced at 250 ms (a stop signal's handler runs between
    slices), each slice cut to what is left of the bound: it polled a whole slice whatever
    was left, so a bound of 50 ms waited 250 (a config's, a recording's or a log's bound
    below a slice, and every bound's last slice, overran)."""
    import select

    from gapwatch.base import input_files

    asked_ms: list[int] = []
    real_poll = select.poll

    class Poller:
        def __init__(self) -> None:
            self._poller = real_poll()

        def register(self, fd: int, events: int) -> None:
            self._poller.register(fd, events)

        def poll(self, timeout_ms: int) -> list[tuple[int, int]]:
            asked_ms.append(timeout_ms)
            return self._poller.poll(timeout_ms)

    monkeypatch.setattr(select, "poll", Poller)
    fifo = tmp_path / "silent.fifo"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert not input_files.fifo_heard(fd, 0.05)
    finally:
        os.close(fd)
    assert asked_ms and max(asked_ms) <= 50, asked_ms


def test_a_fifo_waited_on_without_a_bound_is_heard_not_an_overflow(tmp_path: Path) -> None:
    """An infinite bound (no caller passes one today) waits in whole slices: cutting each to
    what is left of infinity raised OverflowError."""
    import math

    from gapwatch.base import input_files

    fifo = tmp_path / "heard.fifo"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(writer, b"line\n")
        assert input_files.fifo_heard(fd, math.inf)
    finally:
        os.close(writer)
        os.close(fd)


def test_a_recording_fifo_with_a_writer_is_opened_once_and_exported_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`export <(zcat gw.jsonl.gz)`: the FIFO is read once. The header's check against the data
    opened it a second time: a second reader that could take lines from the export's while the
    writer wrote, and that waited 10 s for a writer who had gone once all was written."""
    path = _recording(tmp_path, [])
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    opened: list[Path] = []
    real_open = recording._open_bytes

    def counted(p: Path) -> recording.LineStream:
        opened.append(p)
        return real_open(p)

    monkeypatch.setattr(recording, "_open_bytes", counted)
    monkeypatch.setattr(recording, "FIFO_FIRST_BYTES_S", 1.0)  # a failure here fails fast
    writer = threading.Thread(target=lambda: fifo.write_bytes(path.read_bytes()))
    writer.start()
    try:
        assert main(["export", str(fifo), "--format", "csv", "--out", str(tmp_path / "f.csv")]) \
            == 0
    finally:
        writer.join(10)
    assert opened == [fifo]
    assert main(["export", str(path), "--format", "csv", "--out", str(tmp_path / "p.csv")]) == 0
    assert (tmp_path / "f.csv").read_bytes() == (tmp_path / "p.csv").read_bytes()


@pytest.mark.parametrize("command", [["report"], ["compare", "OTHER"]])
def test_report_of_a_fifo_says_to_save_it_first_instead_of_not_a_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str],
) -> None:
    """`report <(zcat gw.jsonl.gz)`: the sizing and the header checks read the FIFO's head
    away, and the report said "not a gapwatch recording (the header line is not JSON)"."""
    path = _recording(tmp_path, [])
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    args = [str(path) if a == "OTHER" else a for a in command]
    # Never opened for reading, so a writer would block: none is started.
    assert main([command[0], str(fifo), *args[1:]]) == 2
    assert "a FIFO; a report reads its recording more than once: save it to a file first" in \
        capsys.readouterr().err


@pytest.mark.parametrize("command", [["replay", "--headless"], ["report"],
                                     ["export", "--format", "csv", "--out", "OUT"]])
def test_a_window_of_a_fifo_says_to_save_it_first_instead_of_not_a_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str],
) -> None:
    """`replay --since` of `<(zcat gw.jsonl.gz)`: the window is found from the header and the
    end before the records are read; the FIFO's head went to the first and the replay said
    "not a gapwatch recording (the header line is not JSON)" of a good one."""
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    args = [str(tmp_path / "out.csv") if a == "OUT" else a for a in command]
    # Never opened for reading, so a writer would block: none is started.
    assert main([args[0], str(fifo), *args[1:], "--since", "+1s"]) == 2
    assert "a FIFO; --since/--until read its start and end before its records: save it to " \
        "a file first" in capsys.readouterr().err


def test_sizing_a_fifo_reads_nothing_from_it(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    assert json_bytes(fifo) == 0  # it used to open it, blocking without a writer
