"""Recordings whose records are well-formed JSON but hostile in meaning, read by the offline
commands (`report`, `export`, `replay`, `compare`): times decades off the recording, intervals
of centuries, counts that sum beyond 64 bits, process names of a megabyte, snapshots of
thousands of workers. Each is a bad record (skipped, counted, said) or left out and said; the
rest of the recording is used as ever."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from shared_files import sim_recording_bytes

from gapwatch.cli import main
from gapwatch.sources.files import read_any


def _recording(tmp_path: Path, extra: list[dict[str, Any]], *, edit_gpu: dict[str, Any] | None
               = None, name: str = "r.jsonl") -> Path:
    """A simulated minute (one GPU) with `extra` records put among its lines, each timed by
    the sample it follows (`t_mono_ns`/`t_wall_s` given in a record are kept); `edit_gpu`:
    fields set on its 100th GPU sample."""
    lines = sim_recording_bytes(seed=2, duration_s=60.0).splitlines(keepends=True)
    samples = [i for i, ln in enumerate(lines) if ln.startswith(b'{"type":"gpu"')]
    at = samples[100]
    sample = json.loads(lines[at])
    if edit_gpu is not None:
        sample.update(edit_gpu)
        lines[at] = json.dumps(sample).encode() + b"\n"
    timed = [{"t_mono_ns": sample["t_mono_ns"], "t_wall_s": sample["t_wall_s"], **r}
             if "start_wall_s" not in r else r for r in extra]
    lines[at + 1:at + 1] = [json.dumps(r).encode() + b"\n" for r in timed]
    path = tmp_path / name
    path.write_bytes(b"".join(lines))
    return path


def _trace(tmp_path: Path, rec: Path, capsys: pytest.CaptureFixture[str]) -> tuple[
        dict[str, Any], str]:
    out = tmp_path / "trace.json"
    assert main(["export", str(rec), "--out", str(out)]) == 0
    trace: dict[str, Any] = json.loads(out.read_text())
    return trace, capsys.readouterr().err


def _latest_ts_s(trace: dict[str, Any]) -> float:
    """The latest time in the trace (s after its origin), ends of slices included."""
    return float(max((e["ts"] + e.get("dur", 0)) / 1e6 for e in trace["traceEvents"] if "ts" in e))


# -- the Perfetto trace's origin and end -----------------------------------------------------


def test_a_notice_at_minus_1e300_is_a_bad_record_not_the_origin_of_every_event(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A notice's time was any float: one at -1e300 became the trace's origin and every event
    of the minute sat at 1e306 us (Perfetto takes no such time); one at 1e300 drew the open
    states to it. Its times are a record's (1970..2262, 64-bit monotonic)."""
    rec = _recording(tmp_path, [
        {"type": "notice", "t_wall_s": -1e300, "level": "error", "message": "far back"},
        {"type": "notice", "t_wall_s": 1e300, "level": "error", "message": "far ahead"},
        {"type": "notice", "t_mono_ns": -5, "level": "warning", "message": "mono back"}])
    reading = read_any(rec)
    notices = [r for r in reading.records if r.type == "notice"]
    assert not [n for n in notices if n.message in ("far back", "far ahead", "mono back")]
    assert reading.counters["bad_records"] == 3
    trace, _err = _trace(tmp_path, rec, capsys)
    assert _latest_ts_s(trace) < 120


def test_a_sample_whose_interval_spans_centuries_does_not_move_the_traces_origin(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A GPU sample's counters are drawn from the start of its interval: one `interval_ns` of
    2^63-1 put that start 292 years back, the trace's origin with it (every event at ~9.2e15
    us). An interval reaches no further back than the GPU's previous sample (the first one's,
    one period), as `/metrics` counts sampled time."""
    rec = _recording(tmp_path, [], edit_gpu={"interval_ns": 2**63 - 1})
    trace, _err = _trace(tmp_path, rec, capsys)
    assert _latest_ts_s(trace) < 120
    first = _recording(tmp_path, [], name="neg.jsonl", edit_gpu={"interval_ns": -(2**63)})
    trace, _err = _trace(tmp_path, first, capsys)
    assert _latest_ts_s(trace) < 120


def test_a_copy_or_health_reading_decades_off_the_recording_is_left_out_of_the_trace_and_said(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A copy or a health reading at 1970 (in the records' bounds) became the trace's origin:
    the minute recorded sat 56 years after it; one in 2261 drew the open states to 2261. The
    recorder stamps each such record near its arrival (a copy at most `MAX_COPY_S +
    MAX_COPY_LATE_S` before it): one further from the recording's span is left out of the
    trace, counted and said."""
    copy = {"type": "copy", "bytes": 1 << 20, "direction": "h2d", "src_kind": "pageable",
            "dst_kind": "device", "gpu": 0, "cuda_device": 0, "stream_id": 1, "context_id": 1,
            "correlation_id": 1, "pid": 7}
    rec = _recording(tmp_path, [
        {**copy, "start_wall_s": 1.0, "end_wall_s": 1.5},
        {**copy, "start_wall_s": 9.2e9, "end_wall_s": 9.2e9 + 1},
        {"type": "health", "gpu": 0, "t_wall_s": 1.0, "temperature_c": 50.0},
        {"type": "notice", "t_wall_s": 9.2e9, "level": "warning", "message": "far ahead"}])
    trace, err = _trace(tmp_path, rec, capsys)
    assert trace["otherData"]["origin_unix_s"] > 1.7e9
    assert _latest_ts_s(trace) < 120
    assert "4 records timed far outside the recording (copy 2, health 1, notice 1): more than 4200 s from its span" in err


def test_a_negative_gpu_reading_is_not_drawn_as_a_counter_value(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Negative GPU rates and activity are in a sample's bounds (the detector reads them as no
    reading, `readings.reading`); the trace drew `-1e300` B/s as a counter value, its track
    scaled to it. Not drawn, as no reading."""
    rec = _recording(tmp_path, [], edit_gpu={"pcie_rx_bytes_per_s": -1e300,
                                             "sm_active_pct": -1e300})
    trace, _err = _trace(tmp_path, rec, capsys)
    values = [e["args"]["value"] for e in trace["traceEvents"] if e["ph"] == "C"]
    assert values and min(values) >= 0


# -- GPU errors ------------------------------------------------------------------------------


def test_gpu_error_counts_that_would_sum_beyond_64_bits_are_bad_records(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two recorded ECC events of 2^63-1 errors each (a count's old bound) summed beyond 64
    bits: `report --json` wrote `"ecc_uncorrected": 18446744073709551614` (JSON readers hold no
    such integer; `compare` said it too). One event stands for at most `MAX_ERRORS_PER_EVENT`
    (2^32: no GPU counts four billion errors between two readings a second apart), so a sum
    needs 2^31 events to leave 64 bits."""
    rec = _recording(tmp_path, [
        {"type": "hw_event", "gpu": 0, "kind": "ecc_uncorrected", "count": 2**63 - 1},
        {"type": "hw_event", "gpu": 0, "kind": "ecc_uncorrected", "count": 2**63 - 1},
        {"type": "hw_event", "gpu": 0, "kind": "pcie_replay", "count": 2**32 + 1},
        {"type": "hw_event", "gpu": 0, "kind": "ecc_corrected", "count": 2**32}])
    reading = read_any(rec)
    counts = [r.count for r in reading.records if r.type == "hw_event"]
    assert counts == [2**32] and reading.counters["bad_records"] == 3
    assert main(["report", str(rec), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["gpu_errors"]["errors_by_kind"] == {"ecc_corrected": 2**32}


# -- blind spots -----------------------------------------------------------------------------


def test_a_blind_spots_process_with_negative_bytes_or_a_1e308_s_wait_is_a_bad_record(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A blind spot's processes carried any integer and float: `report` and `replay` said
    "pid 5 (cuzk) pinned host memory (RssShmem -8388608.0 TiB 1000...(309 digits) s before ->
    8388608.0 TiB after, /proc)". Their bytes are /proc readings' and their wait a duration:
    out of those bounds the record is a bad one, counted and said; the others are used."""
    rec = _recording(tmp_path, [
        {"type": "blind", "duration_s": 2.0, "gpus": [0],
         "pinning": [{"pid": 5, "name": "cuzk", "before_bytes": -(2**63),
                      "after_bytes": 2**63 - 1, "since_s": 1e308}]},
        {"type": "blind", "duration_s": 2.0, "gpus": [0],
         "exited": [{"pid": 6, "name": "cuzk", "pinned_bytes": -(2**63)}]},
        {"type": "blind", "duration_s": 3.0, "gpus": [0],
         "pinning": [{"pid": 7, "name": "cuzk", "before_bytes": 1 << 30,
                      "after_bytes": 5 << 30, "since_s": 1.5}]}])
    reading = read_any(rec)
    spots = [r for r in reading.records if r.type == "blind"]
    assert [s.duration_s for s in spots] == [3.0] and reading.counters["bad_records"] == 2
    assert main(["report", str(rec)]) == 0
    out = capsys.readouterr().out
    assert "RssShmem 1.0 GiB 2 s before -> 5.0 GiB after" in out
    assert "TiB" not in out and "0" * 40 not in out


# -- prover snapshots ------------------------------------------------------------------------


def _snapshot(**fields: Any) -> dict[str, Any]:
    return {"type": "prover", "prover": "127.0.0.1:9821", "latency_ms": 1.0, "uptime_s": 5.0,
            "partition_counts": {}, "workers": [], "synthesis_active": None,
            "synthesis_max": None, "queue_depth": None, "jobs": None, **fields}


def test_a_snapshot_holding_more_than_a_poll_reads_is_a_bad_record_not_memory(
        tmp_path: Path) -> None:
    """A poll reads at most 256 jobs, 1,024 partitions, 256 workers and SRS entries, and 512
    characters of each text (`cuzk.status`); a recorded snapshot had no bound: 60 snapshots of
    20,000 workers and partitions each (250 MB) took `report` and `replay` to 860 MB, growing
    with every one more. A snapshot beyond what a poll reads is a bad record; one at the
    bounds is read."""
    worker = {"worker_id": 0, "gpu": 0, "state": "proving", "job_id": "j", "partition": 0}
    part = {"job_id": "j", "index": 0, "state": "gpu"}
    rec = _recording(tmp_path, [
        _snapshot(workers=[worker] * 257),
        _snapshot(partitions=[part] * 1025),
        _snapshot(job_kinds={f"j{i}": "porep-c2" for i in range(257)}),
        _snapshot(srs_circuits=["porep-32g"] * 257),
        _snapshot(partition_counts={f"s{i}": 1 for i in range(17)}),
        _snapshot(workers=[{**worker, "job_id": "j" * 2000}]),
        _snapshot(workers=[worker] * 256, partitions=[part] * 1024, srs_circuits=["c"] * 256,
                  job_kinds={f"j{i}": "porep-c2" for i in range(256)}, uptime_s=6.0)])
    reading = read_any(rec)
    snapshots = [r for r in reading.records if r.type == "prover" and r.uptime_s == 6.0]
    assert len(snapshots) == 1 and reading.counters["bad_records"] == 6


# -- /proc readings --------------------------------------------------------------------------


def test_a_process_name_of_a_megabyte_is_a_bad_record_not_in_every_gaps_hint(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A process's name is its comm (15 bytes, the kernel's `TASK_COMM_LEN`); a recorded one
    had no bound: four processes of 1 MiB names made every gap's row of `report` a megabyte
    wide, its `--json` 89 MB and the Perfetto trace 90 MB, each gap naming them whole. A name
    over `MAX_PROCESS_NAME` characters is a bad record (so is a blind spot's process of one);
    the source keeps no more of one."""
    from gapwatch.sources.procmem import parse_status

    rec = _recording(tmp_path, [
        {"type": "procmem", "gpu": 0, "pid": 5, "name": "N" * (1 << 20),
         "rss_shmem_bytes": 1, "rss_anon_bytes": 1},
        {"type": "blind", "duration_s": 2.0, "gpus": [0],
         "exited": [{"pid": 6, "name": "N" * (1 << 20)}]},
        {"type": "procmem", "gpu": 0, "pid": 7, "name": "cuzk", "rss_shmem_bytes": 1,
         "rss_anon_bytes": 1}])
    reading = read_any(rec)
    assert [r.name for r in reading.records if r.type == "procmem"] == ["cuzk"]
    assert reading.counters["bad_records"] == 2
    assert main(["report", str(rec)]) == 0
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) < 10_000
    assert len(parse_status(b"Name:\t" + b"x" * 5000 + b"\n").name) <= 256
