"""Recordings: round trip, gzip, kill -9 survival, bad lines counted, trace CSVs with stale GPM."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest

from evaluation.simulate import simulate
from gapwatch.core.models import GpuSample, LogEvent
from gapwatch.sinks.recorder import Recorder, write_recording
from gapwatch.sources.files import read_any
from gapwatch.sources.recording import RecordingError

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("name", ["rec.jsonl", "rec.jsonl.gz"])
def test_round_trip_keeps_every_record(tmp_path: Path, name: str) -> None:
    sim = simulate("pageable", seed=3, duration_s=5)
    events = [LogEvent(t_wall_s=1.5, time_source="line", kind="tracing", name="x [bold]",
                       raw="r", fields={"a": 1, "b": "two", "c": None, "d": 2.5, "e": True})]
    records = [*sim.records, *events]
    path = tmp_path / name
    assert write_recording(path, sim.header, records) == len(records)
    back = read_any(path)
    assert back.header == sim.header
    assert list(back.records) == records
    assert back.counters == {}


@pytest.mark.parametrize("name", ["rec.jsonl", "rec.jsonl.gz"])
def test_writing_faster_than_the_memory_bound_a_second_keeps_every_record(
    tmp_path: Path, name: str
) -> None:
    # A conversion or a snapshot hands over records as fast as they encode: 30 s of 8 GPUs
    # (2.5 MB) through a recorder that may hold 64 KiB used to keep the first 64 KiB only.
    sim = simulate("pageable", seed=3, duration_s=30, gpus=8)
    rec = Recorder(tmp_path / name, exists="replace", max_pending_bytes=64 << 10)
    rec.on_header(sim.header)
    for r in sim.records:
        rec.on_record(r)
    rec.close()
    assert rec.records_written == len(sim.records) and rec.records_dropped == 0
    assert list(read_any(tmp_path / name).records) == sim.records


def test_gzip_file_is_really_gzip(tmp_path: Path) -> None:
    sim = simulate("chained", seed=1, duration_s=1)
    write_recording(tmp_path / "r.jsonl.gz", sim.header, sim.records)
    with gzip.open(tmp_path / "r.jsonl.gz", "rt") as f:
        assert '"type":"header"' in f.readline()


def test_bad_lines_are_counted_and_skipped(tmp_path: Path) -> None:
    sim = simulate("chained", seed=1, duration_s=1)
    path = tmp_path / "r.jsonl"
    write_recording(path, sim.header, sim.records)
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(3, b'{"type":"gpu","gpu":"zero"}\n')
    lines.insert(5, b"not json at all\n")
    lines.insert(7, b'{"type":"martian"}\n')
    path.write_bytes(b"".join(lines))
    back = read_any(path)
    assert len(list(back.records)) == len(sim.records)
    assert back.counters["bad_records"] == 3
    assert any(":4:" in p for p in back.problems)


def test_truncated_gzip_reads_up_to_the_cut(tmp_path: Path) -> None:
    sim = simulate("chained", seed=1, duration_s=20)
    path = tmp_path / "r.jsonl.gz"
    write_recording(path, sim.header, sim.records)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])
    back = read_any(path)
    got = list(back.records)
    assert 0 < len(got) < len(sim.records)
    assert got == sim.records[: len(got)]
    assert back.counters.get("truncated", 0) + back.counters.get("partial_line", 0) >= 1


def test_not_a_recording_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_text('{"hello": 1}\n')
    with pytest.raises(RecordingError, match="not a gapwatch recording"):
        read_any(tmp_path / "x.jsonl")
    with pytest.raises(RecordingError, match="no such file"):
        read_any(tmp_path / "missing.jsonl")


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    sim = simulate("chained", seed=1, duration_s=1)
    header = msgspec.structs.replace(sim.header, schema_version=99)
    write_recording(tmp_path / "r.jsonl", header, [])
    with pytest.raises(RecordingError, match="newer gapwatch"):
        read_any(tmp_path / "r.jsonl")


def test_trace_csv_merges_stale_gpm_rows_instead_of_reporting_idle() -> None:
    """The shared traces were sampled at 50 ms, under GPM's 100 ms refresh: every other row is
    all-zero. Those rows must vanish into the next row's interval, never become 0 % samples."""
    rec = read_any(DATA / "pageable.csv")
    gpu = [r for r in rec.records if isinstance(r, GpuSample)]
    assert rec.counters["stale_gpm_rows"] > 300
    assert not any(s.sm_active_pct == 0 and s.pcie_rx_bytes_per_s == 0 for s in gpu)
    intervals_ms = sorted(s.interval_ns / 1e6 for s in gpu if s.interval_ns)
    assert 90 < intervals_ms[len(intervals_ms) // 2] < 110  # merged to GPM's real pace


def test_trace_csv_believes_zeros_after_a_second_as_the_sampler_does(tmp_path: Path) -> None:
    """Stale rows merge for at most a second (the sampler's bound); zeros beyond are idle data."""
    rows = ["timestamp_s,gpu,sm_active_pct,pcie_rx_bytes_per_s,pcie_tx_bytes_per_s"]
    rows += [f"{1_796_000_000 + k * 0.05:.2f},0,0.0,0.0,0.0" for k in range(50)]  # 2.45 s of zeros
    (tmp_path / "t.csv").write_text("\n".join(rows) + "\n")
    rec = read_any(tmp_path / "t.csv")
    gpu = [r for r in rec.records if isinstance(r, GpuSample)]
    assert [s.interval_ns for s in gpu] == [1_000_000_000, 1_000_000_000]
    assert all(s.sm_active_pct == 0.0 and s.pcie_rx_bytes_per_s == 0.0 for s in gpu)
    assert rec.counters["stale_gpm_rows"] == 48


def test_csv_with_a_subset_of_columns_and_bad_rows(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("timestamp_s,gpu,sm_active_pct,extra\n1.0,0,50,x\n1.1,0,,x\nzzz,0,1,x\n"
                 "1.05,0,3,x\n1.2,1,90,x\n")
    rec = read_any(f)
    records = list(rec.records)
    got = [r for r in records if isinstance(r, GpuSample)]
    assert len(got) == len(records)  # no host columns: GPU samples only
    assert [g.index for g in rec.header.gpus] == [0, 1]
    assert [(s.gpu, s.sm_active_pct) for s in got] == [(0, 50.0), (0, None), (1, 90.0)]
    assert all(s.pcie_rx_bytes_per_s is None for s in got)  # absent column: None, never 0
    assert rec.counters["bad_records"] == 1 and rec.counters["out_of_order"] == 1
    assert rec.counters["unknown_columns"] == 1


@pytest.mark.slow
def test_recorder_flushes_so_kill_minus_9_loses_at_most_a_second(tmp_path: Path) -> None:
    """A real `gapwatch record` process, killed with SIGKILL: the file still reads."""
    out = tmp_path / "live.jsonl.gz"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gapwatch", "record", "--source", "sim:chained", "--speed", "20",
         "--out", str(out), "--quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not out.exists() or out.stat().st_size < 2000):
            time.sleep(0.05)
        # One more flush after that (at most a second later): the file grew while running.
        first = out.stat().st_size if out.exists() else 0
        while time.monotonic() < deadline and out.stat().st_size <= first:
            time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    rec = read_any(out)
    got = list(rec.records)
    assert len(got) > 20
    # Which record comes first is the sources' race (under load the prover's first /status can
    # beat the first GPU sample); what the kill must not cost is the samples already flushed,
    # and nothing but the line it cut may be unreadable.
    assert sum(r.type == "gpu" for r in got) > 10
    assert rec.counters.get("bad_records", 0) == 0
    assert rec.counters.get("partial_line", 0) <= 1


def test_sigterm_closes_the_recording_cleanly(tmp_path: Path) -> None:
    out = tmp_path / "live.jsonl.gz"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gapwatch", "record", "--source", "sim:pageable", "--speed", "10",
         "--out", str(out), "--quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not out.exists() or out.stat().st_size < 2000):
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "stopped (SIGTERM)" in err and str(out) in err
    rec = read_any(out)
    list(rec.records)
    assert rec.counters == {}  # a clean close: no truncation, no partial line


def test_recorder_ignores_records_after_close(tmp_path: Path) -> None:
    sim = simulate("chained", seed=1, duration_s=1)
    r = Recorder(tmp_path / "r.jsonl")
    r.on_header(sim.header)
    r.close()
    r.on_record(sim.records[0])  # no exception, nothing written
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 1
