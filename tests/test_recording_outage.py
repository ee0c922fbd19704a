"""A recording in segments outlives any outage: rotation and pruning happen between batches, so
a backlog written when the disk takes data again stays within the budget, and they go on after
failed writes, so a budget that fills the disk frees it again; the notices never contradict
each other (gapwatch.sinks.recorder). Issue 29, item 3.

The disk is a stand-in: a folder with a capacity in bytes, shared by every file in it, that a
removed file gives back (a real full tmpfs is in test_fault_disk_full.py)."""

from __future__ import annotations

import errno
import functools
import os
from pathlib import Path

import pytest
from faults import records_of

from evaluation.simulate import SimResult, simulate
from gapwatch.core.models import (
    Notice,
    ProverPartition,
    ProverStatus,
    ProverWorker,
    Record,
)
from gapwatch.sinks import output_file
from gapwatch.sinks.recorder import WRITE_BATCH_BYTES, Recorder
from gapwatch.sinks.segments import check_segments, segments_of
from gapwatch.sources.files import read_any


@functools.cache
def _sim() -> SimResult:
    """300 s of the simulated prover: about 2 MB of plain JSON (made when a test first asks:
    at import it cost every worker's collection)."""
    return simulate("pageable", seed=1, duration_s=300)

SEGMENT = 256 << 10


class Folder:
    """A disk of `capacity` bytes holding one folder: a write that would pass it lands in part,
    then fails with ENOSPC (the recorder cuts the part back off)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, folder: Path, capacity: int) -> None:
        self.folder, self.capacity = folder, capacity
        real = output_file.OutputFile.write_at

        def write_at(f: output_file.OutputFile, offset: int, data: bytes) -> None:
            room = self.capacity - self.used()
            if len(data) > room:
                real(f, offset, data[: max(0, room)])
                raise OSError(errno.ENOSPC, "No space left on device")
            real(f, offset, data)

        monkeypatch.setattr(output_file.OutputFile, "write_at", write_at)

    def used(self) -> int:
        return sum(e.stat().st_size for e in os.scandir(self.folder) if e.is_file())


def _feed(rec: Recorder, records: list[Record]) -> None:
    """The records, a flush every 50 (the writer thread flushes every second)."""
    for i, r in enumerate(records):
        rec.on_record(r)
        if i % 50 == 49:
            rec.flush()


def _sizes(base: Path) -> list[int]:
    return [p.stat().st_size for _, p in segments_of(base)]


def test_a_backlog_after_a_full_disk_is_written_in_segments_of_the_budgets_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # When space returned the whole backlog went into one segment (3.9 MB against a 1 MiB
    # limit).
    hog = tmp_path / "someone-elses-big-file"
    hog.write_bytes(b"x" * (4 << 20))
    Folder(monkeypatch, tmp_path, 4 << 20)
    notices: list[Notice] = []
    base = tmp_path / "gw.jsonl"
    rec = Recorder(check_segments(base, SEGMENT, None, 0), on_problem=notices.append)
    rec.on_header(_sim().header)
    _feed(rec, _sim().records)  # the disk is full: all of it waits
    assert rec.status().state == "failing" and rec.status().records_pending == len(_sim().records)
    hog.unlink()
    assert rec.flush()
    sizes = _sizes(base)
    assert len(sizes) > 5 and max(sizes) < SEGMENT + WRITE_BATCH_BYTES + 4096, sizes
    rec.close()
    assert [r for _, p in segments_of(base) for r in records_of(p)] == list(_sim().records)
    said = [n for n in notices if n.level != "info"]
    assert [n.level for n in said] == ["error", "warning"]
    assert "No space left" in said[0].message and "nothing was lost" in said[1].message


def test_rotation_and_pruning_go_on_after_failed_writes_so_the_budget_frees_the_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The backlog filled the disk again in the middle of one segment, far past its size, and
    # rotation and pruning (which would have freed the disk) ran only after a write that
    # succeeded: never again. 7,938 records were lost that the budget would have held.
    hog = tmp_path / "someone-elses-big-file"
    hog.write_bytes(b"x" * ((1 << 20) - 1024))
    Folder(monkeypatch, tmp_path, 1 << 20)
    notices: list[Notice] = []
    base = tmp_path / "gw.jsonl"
    rec = Recorder(check_segments(base, SEGMENT // 2, None, 3), on_problem=notices.append)
    rec.on_header(_sim().header)
    half = len(_sim().records) // 2
    _feed(rec, _sim().records[:half])  # a backlog of about 1 MB: more than the disk holds
    hog.unlink()
    _feed(rec, _sim().records[half:])
    rec.close()
    status = rec.status()
    assert status.records_dropped == 0 and status.records_written == len(_sim().records)
    assert len(segments_of(base)) == 3 and status.segments_removed > 3
    assert max(_sizes(base)) < SEGMENT // 2 + WRITE_BATCH_BYTES + 4096
    kept = [r for _, p in segments_of(base) for r in records_of(p)]
    assert kept == list(_sim().records[len(_sim().records) - len(kept):])
    assert status.records_kept == len(kept)
    # Said once, recovered once: the notices never contradict each other.
    assert [n.level for n in notices if n.level != "info"] == ["error", "warning"]


def _idle(t: float) -> ProverStatus:
    """An idle prover's answer at `t`: the same every second but for its times."""
    return ProverStatus(
        "127.0.0.1:9821", int(t * 1e9), 1_796_000_000.0 + t, 1.5, 100.0 + t,
        {"pending": 0, "synthesizing": 0, "synth_done": 0, "gpu": 0, "done": 10, "failed": 0},
        [ProverWorker(0, 0, "idle", None, None, None)], 0, 18, 0, 1, 10, 0,
        [ProverPartition("porep-1", i, "done", 2000, 3000) for i in range(10)])


def test_a_backlog_written_across_segments_keeps_every_prover_snapshot(tmp_path: Path) -> None:
    # An unchanged snapshot is written as a marker against the last one written in the same
    # file: a backlog that goes into a new segment must not carry markers whose snapshot is in
    # the segment before (each segment reads on its own).
    records: list[Record] = []
    for i, r in enumerate(_sim().records[:3000]):
        records.append(r)
        if i % 10 == 0:
            records.append(_idle(i / 10))
    snaps = [r for r in records if isinstance(r, ProverStatus)]
    base = tmp_path / "gw.jsonl"
    rec = Recorder(check_segments(base, 64 << 10, None, 0))
    rec.on_header(_sim().header)
    for r in records:  # one flush at the end: a backlog written across many segments
        rec.on_record(r)
    rec.close()
    segs = segments_of(base)
    assert len(segs) > 3
    assert sum(p.read_text().count('"prover_same"') for _, p in segs) > len(snaps) // 2
    got: list[ProverStatus] = []
    for _, path in segs:
        part = read_any(path)
        got += [r for r in part.records if isinstance(r, ProverStatus)]
        assert part.counters.get("bad_records", 0) == 0, part.problems
    assert got == snaps
