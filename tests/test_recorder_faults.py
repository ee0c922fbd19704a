"""The recorder on a disk that refuses writes (ENOSPC, EIO): every failed write is undone, the
records wait in memory (bounded), writing resumes when the disk takes data again, and the file
always reads whole. The disk here is a stand-in with a byte budget (a real full tmpfs is in
test_fault_disk_full.py)."""

from __future__ import annotations

import errno
import re
import threading
from pathlib import Path

import pytest
from faults import records_of

from evaluation.simulate import simulate
from gapwatch.core.models import GpuSample, HostSample, LogEvent, Notice, Record
from gapwatch.sinks import output_file, recorder
from gapwatch.sinks.recorder import Recorder, write_recording
from gapwatch.sources.files import read_any

SIM = simulate("pageable", seed=1, duration_s=20)


class Disk:
    """Takes `room` more bytes (None = unlimited), then fails like a full disk: part of the
    write lands, then ENOSPC (or `errno_`). The recorder cuts the part back off, which gives
    the room back, so `room` is unchanged by a failed write."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.room: int | None = None
        self.errno_ = errno.ENOSPC
        real = output_file.OutputFile.write_at

        def write_at(f: output_file.OutputFile, offset: int, data: bytes) -> None:
            if self.room is not None and len(data) > self.room:
                real(f, offset, data[: self.room])
                raise OSError(self.errno_, "No space left on device" if self.errno_ ==
                              errno.ENOSPC else "Input/output error")
            if self.room is not None:
                self.room -= len(data)
            real(f, offset, data)

        monkeypatch.setattr(output_file.OutputFile, "write_at", write_at)


def _feed(rec: Recorder, records: list[Record]) -> None:
    for r in records:
        rec.on_record(r)
        rec.flush()


@pytest.fixture()
def disk(monkeypatch: pytest.MonkeyPatch) -> Disk:
    return Disk(monkeypatch)


@pytest.mark.parametrize("name", ["r.jsonl", "r.jsonl.gz"])
def test_a_disk_that_fills_then_frees_loses_nothing(tmp_path: Path, disk: Disk,
                                                    name: str) -> None:
    notices: list[Notice] = []
    rec = Recorder(tmp_path / name, on_problem=notices.append)
    rec.on_header(SIM.header)
    third = len(SIM.records) // 3
    _feed(rec, SIM.records[:third])
    disk.room = 100
    _feed(rec, SIM.records[third:2 * third])
    assert rec.status().state == "failing" and rec.status().records_pending > 0
    disk.room = None
    _feed(rec, SIM.records[2 * third:])
    rec.close()
    status = rec.status()
    assert status.records_dropped == 0 and status.write_errors >= 1
    assert status.records_written == len(SIM.records)
    got = records_of(tmp_path / name)
    assert got == list(SIM.records)
    assert [n.level for n in notices] == ["error", "warning"]
    assert "No space left on device" in notices[0].message and "resumed" in notices[1].message


def test_records_beyond_the_memory_bound_are_dropped_counted_and_noted_in_the_file(
        tmp_path: Path, disk: Disk) -> None:
    path = tmp_path / "r.jsonl.gz"
    rec = Recorder(path, max_pending_bytes=20_000)
    rec.on_header(SIM.header)
    disk.room = 0
    _feed(rec, SIM.records[:300])
    assert rec.status().records_dropped > 0
    disk.room = None
    _feed(rec, SIM.records[300:])
    rec.close()
    dropped = rec.status().records_dropped
    got = records_of(path)
    notes = [r for r in got if isinstance(r, Notice) and "recording gap" in r.message]
    assert len(notes) == 1 and f"{dropped} records were not written" in notes[0].message
    assert len(got) == len(SIM.records) - dropped + 1  # + the note


@pytest.mark.parametrize("name", ["r.jsonl", "r.jsonl.gz"])
def test_a_disk_still_full_at_close_leaves_a_whole_file_and_counts_the_rest(
        tmp_path: Path, disk: Disk, name: str) -> None:
    rec = Recorder(tmp_path / name)
    rec.on_header(SIM.header)
    _feed(rec, SIM.records[:100])
    disk.room = 64  # room for the gzip trailer, not for the records
    for r in SIM.records[100:]:
        rec.on_record(r)
    rec.close()
    status = rec.status()
    assert status.records_written == 100
    assert status.records_dropped == len(SIM.records) - 100
    assert len(records_of(tmp_path / name)) == 100


def test_without_room_even_for_the_gzip_trailer_every_written_record_still_reads(
        tmp_path: Path, disk: Disk) -> None:
    path = tmp_path / "r.jsonl.gz"
    rec = Recorder(path)
    rec.on_header(SIM.header)
    _feed(rec, SIM.records[:100])
    disk.room = 0
    rec.close()
    assert "ends early" in (rec.status().error or "")
    got = read_any(path)
    assert len(list(got.records)) == 100 and got.counters == {"truncated": 1}


def test_a_nearly_full_disk_takes_what_fits(tmp_path: Path, disk: Disk,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recorder, "WRITE_BATCH_BYTES", 16 << 10)
    path = tmp_path / "r.jsonl"
    rec = Recorder(path)
    rec.on_header(SIM.header)
    for r in SIM.records:  # nothing written yet: ~130 kB waiting
        rec.on_record(r)
    disk.room = 60 << 10
    assert not rec.flush()
    assert 0 < rec.status().records_written < len(SIM.records)
    disk.room = None
    assert rec.flush()
    rec.close()
    assert records_of(path) == list(SIM.records)


def test_an_io_error_is_handled_like_a_full_disk(tmp_path: Path, disk: Disk) -> None:
    notices: list[Notice] = []
    rec = Recorder(tmp_path / "r.jsonl", on_problem=notices.append)
    rec.on_header(SIM.header)
    disk.errno_, disk.room = errno.EIO, 0
    _feed(rec, SIM.records[:50])
    disk.room = None
    _feed(rec, SIM.records[50:])
    rec.close()
    assert "Input/output error" in notices[0].message
    assert records_of(tmp_path / "r.jsonl") == list(SIM.records)


def test_problems_are_reported_with_no_recorder_lock_held(tmp_path: Path, disk: Disk) -> None:
    """The runtime hands the notice to the session, whose lock a sampler inside on_record
    holds: reporting under our own lock could deadlock."""
    seen: list[str] = []
    holder: list[Recorder] = []

    def on_problem(n: Notice) -> None:
        # Would block forever if a recorder lock were held here.
        done = threading.Event()
        def ask() -> None:
            holder[0].status()
            done.set()

        threading.Thread(target=ask, daemon=True).start()
        assert done.wait(5), "on_problem was called under the recorder's lock"
        seen.append(n.level)

    rec = Recorder(tmp_path / "r.jsonl", on_problem=on_problem)
    holder.append(rec)
    rec.on_header(SIM.header)
    disk.room = 0
    _feed(rec, SIM.records[:20])
    disk.room = None
    _feed(rec, SIM.records[20:40])
    rec.close()
    assert seen == ["error", "warning"]


def test_the_writer_thread_retries_on_its_own(tmp_path: Path, disk: Disk) -> None:
    rec = Recorder(tmp_path / "r.jsonl", flush_interval_s=0.05, retry_max_s=0.1)
    rec.on_header(SIM.header)
    rec.start()
    disk.room = 0
    for r in SIM.records:
        rec.on_record(r)
    # Waits until the writer has failed at least once, then frees the disk.
    for _ in range(200):
        if rec.status().write_errors:
            break
        threading.Event().wait(0.02)
    assert rec.status().write_errors
    disk.room = None
    for _ in range(500):
        if rec.status().state == "writing" and rec.status().records_pending == 0:
            break
        threading.Event().wait(0.02)
    rec.close()
    assert records_of(tmp_path / "r.jsonl") == list(SIM.records)


# -- back-pressure on a healthy disk, and write_recording --------------------------------------


def test_write_recording_of_a_15_minute_8_gpu_session_keeps_every_record(
        tmp_path: Path) -> None:
    # Written at once, it used to keep what fitted in 16 MiB between two flushes (22,061 of
    # 153,133 records of such a session), silently. Samples at 10 Hz of 8 GPUs and the host,
    # made here (the simulator would take longer than the writing).
    header = SIM.header
    records: list[Record] = []
    for k in range(9000):
        t_ns, t_s = 10**12 + k * 100_000_000, 1_796_000_000.0 + k / 10
        records += [GpuSample(g, t_ns, t_s, 100_000_000, 37.5 + k % 50, 60.0 + g,
                              2.1e9 + k * 1000.5, 5.5e7 + g, "gpm", "counters", False, 812_345)
                    for g in range(8)]
        records.append(HostSample(t_ns, t_s, 100_000_000, 41.25 + k % 7, 339_000_000_000 + k,
                                  0, 22.5, 1.5, 0.25, 0.125, 0.0625, 3.0, 1.75e11))
    path = tmp_path / "r.jsonl.gz"
    assert write_recording(path, header, records) == len(records) == 81_000
    assert records_of(path) == records


def test_write_recording_to_a_disk_that_fills_raises_and_leaves_what_it_wrote_whole(
        tmp_path: Path, disk: Disk) -> None:
    sim = simulate("pageable", seed=1, duration_s=120, gpus=4)
    path = tmp_path / "r.jsonl.gz"
    disk.room = 60_000
    with pytest.raises(OSError, match="No space left on device"):
        write_recording(path, sim.header, sim.records)
    kept = records_of(path)  # whole: the gzip trailer fitted
    assert 0 < len(kept) < len(sim.records) and kept == list(sim.records[:len(kept)])


def test_a_writer_that_falls_behind_says_so_and_drops_other_records_before_samples(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    notices: list[Notice] = []
    path = tmp_path / "r.jsonl"
    rec = Recorder(path, flush_interval_s=60, max_pending_bytes=512 << 10,
                   on_problem=notices.append)
    rec.on_header(SIM.header)
    # The writer's first write does not return until the flood is over: records come faster
    # than it writes them, on a disk that refuses nothing.
    go = threading.Event()
    real = output_file.OutputFile.write_at

    def slow_write_at(f: output_file.OutputFile, offset: int, data: bytes) -> None:
        assert go.wait(30)
        real(f, offset, data)

    monkeypatch.setattr(output_file.OutputFile, "write_at", slow_write_at)
    rec.start()
    flood = [LogEvent(1_796_000_000.0 + i / 1000, "arrival", "unparsed", "unparsed",
                      "\ufffd" * 300) for i in range(10)]
    samples = [r for r in SIM.records if isinstance(r, GpuSample)][:400]
    for s in samples:
        rec.on_record(s)
        for ev in flood:
            rec.on_record(ev)
    status = rec.status()
    assert status.records_dropped > 0 and status.state == "writing"
    go.set()
    rec.close()
    got = records_of(path)
    assert [r for r in got if isinstance(r, GpuSample)] == samples  # every sample kept
    # One note per hole (two when the writer took a first batch after the drops had begun).
    notes = [r.message for r in got if isinstance(r, Notice) and "recording gap" in r.message]
    assert notes and sum(int(n.split()[2]) for n in notes) == rec.status().records_dropped
    for note in notes:
        assert "no GPU or host sample among them" in note
        assert re.search(r"the writer fell behind \(\d+ records/s in\)", note)
        assert "disk" not in note
    assert "the writer fell behind" in notices[0].message and notices[0].level == "warning"
    assert "the writer fell behind" in (rec.status().dropped_why or "")
    assert "NOT recorded (the writer fell behind" in rec.status().summary()


def test_a_disk_full_from_the_start_is_said_and_leaves_no_empty_file(
        tmp_path: Path, disk: Disk, capsys: pytest.CaptureFixture[str]) -> None:
    from gapwatch.cli import main

    out = tmp_path / "r.jsonl.gz"
    disk.room = 0  # not even the header fits
    assert main(["record", "--source", "sim:chained", "--speed", "0", "--duration", "2",
                 "--quiet", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    # The failure happened before `record` listened: it used to go unsaid, leaving 0 bytes.
    assert "error: recording failed: No space left on device" in err
    assert "nothing could be written, the empty file was removed" in err
    assert not out.exists()


def test_in_virtual_time_the_feeder_writes_the_recording_and_drops_nothing(
        tmp_path: Path) -> None:
    # At --speed 0 the simulator outran the writer thread: a simulated day of 8 GPUs dropped
    # 108,008 log lines ("the writer fell behind"). Nothing waits on the wall clock there.
    from gapwatch.config import Config, with_overrides
    from gapwatch.engine.runtime import build_runtime

    config = with_overrides(Config(), {"record": {"max_pending_mib": 1}})
    rt = build_runtime(config, "sim:pageable", speed=0, duration_s=300,
                       record_path=str(tmp_path / "r.jsonl.gz"))
    rt.start()
    assert rt.wait(120)
    rt.stop()
    assert rt.recorder is not None and rt.recorder._thread is None
    status = rt.status().recording
    assert status is not None and status.records_dropped == 0 and status.records_written > 0
