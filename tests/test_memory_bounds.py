"""Memory is bounded in bytes, not lines: a 1 MiB log line reaches the recording whole but costs
memory only for what display and evidence use; the store's buffers are bounded by bytes and by
the history; the parser's maps by count. Each cut is counted."""

from __future__ import annotations

import platform
import subprocess
import sys

import msgspec
import pytest
from ui_fakes import WALL0_S, gap, header

from evaluation.simulate import ListSink
from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import GapDetector
from gapwatch.core.evidence import RAW_CHARS as EVIDENCE_RAW_CHARS
from gapwatch.core.evidence import EvidenceBuffer
from gapwatch.core.models import LogEvent, ProverStatus, ProverWorker
from gapwatch.core.sizes import MAX_FIELDS, RAW_CHARS, TEXT_CHARS, bounded_event, event_bytes
from gapwatch.engine.memory import return_large_allocations
from gapwatch.engine.session import Session
from gapwatch.engine.store import SeriesStore
from gapwatch.logs.parse import MAX_WORKERS, LogParser

MIB = 1 << 20


def event(raw: str, **kw: object) -> LogEvent:
    return LogEvent(t_wall_s=WALL0_S, time_source="line", kind="tracing", name="x", raw=raw,
                    **kw)  # type: ignore[arg-type]


def test_a_huge_line_reaches_the_recording_whole_and_memory_cut() -> None:
    sink = ListSink()
    store = SeriesStore(list(header().gpus), period_s=0.1)
    session = Session(header(), store, GapDetector(DetectorConfig(), []), sinks=[sink])
    session.on_record(event("x" * MIB, fields={"error": "y" * MIB}))
    (recorded,) = [r for r in sink.records if r.type == "log"]
    assert isinstance(recorded, LogEvent) and isinstance(recorded.fields["error"], str)
    assert len(recorded.raw) == MIB and len(recorded.fields["error"]) == MIB
    snap = store.snapshot()
    (kept,) = snap.log_events
    assert kept.raw.startswith("x" * RAW_CHARS) and kept.raw.endswith(f"[cut {MIB - RAW_CHARS} chars]")
    assert len(kept.fields["error"]) < TEXT_CHARS + 40  # type: ignore[arg-type]
    assert snap.counters["log_text_cut"] == 1


def test_an_ordinary_line_is_kept_as_it_is() -> None:
    ev = event("2026-11-30T09:06:38.134140Z  INFO x: GPU_TIMING worker_id=1", fields={"a": 1})
    assert bounded_event(ev) is ev


def test_too_many_fields_and_long_names_are_cut() -> None:
    ev = event("r", fields={f"k{i}": i for i in range(1000)}, job_id="j" * MIB)
    cut = bounded_event(ev)
    assert len(cut.fields) == MAX_FIELDS + 1 and cut.fields["_cut_fields"] == 1000 - MAX_FIELDS
    assert cut.job_id is not None and len(cut.job_id) < TEXT_CHARS + 40


def test_the_store_log_buffer_is_bounded_in_bytes_newest_kept() -> None:
    store = SeriesStore(list(header().gpus), period_s=0.1, max_log_bytes=4 * MIB)
    big = [event(f"{i} " + "x" * RAW_CHARS) for i in range(3000)]  # as cut on the way in
    for ev in big:
        store.append_log(ev)
    kept = store.snapshot().log_events
    assert sum(event_bytes(e) for e in kept) <= 4 * MIB
    assert 100 < len(kept) < 3000 and kept[-1] is big[-1]


def test_evidence_keeps_only_what_a_gap_cites() -> None:
    buf = EvidenceBuffer(before_s=2.0)
    buf.add_log(event("x" * 10_000, fields={f"k{i}": "v" * 500 for i in range(64)}))
    (kept,) = buf._log
    assert len(kept.raw) == EVIDENCE_RAW_CHARS and kept.fields == {}


def test_closed_gaps_older_than_the_history_are_forgotten_and_still_counted() -> None:
    store = SeriesStore(list(header().gpus), period_s=0.1, history_s=60.0)
    for i in range(300):  # a gap every 2 s for 600 s
        store.upsert_gap(gap(i + 1, 0, 2.0 * i, 2.0 * i + 1.0))
    snap = store.snapshot()
    assert 25 <= len(snap.gaps) <= 31  # the last minute's
    assert sum(t.count for t in snap.gap_tally.values()) == 300


def _status(t_s: float, partitions: int = 0) -> ProverStatus:
    from gapwatch.core.models import ProverPartition

    return ProverStatus(prover="p", t_mono_ns=int(t_s * 1e9), t_wall_s=WALL0_S + t_s,
                        latency_ms=1.0, uptime_s=t_s, partition_counts={},
                        workers=[ProverWorker(worker_id=0, gpu=0, state="idle")],
                        synthesis_active=None, synthesis_max=None, queue_depth=None, jobs=1,
                        partitions=[ProverPartition("j", i, "gpu") for i in range(partitions)])


def test_prover_snapshots_are_kept_for_the_history_and_bounded_in_bytes() -> None:
    store = SeriesStore(list(header().gpus), period_s=0.1, history_s=60.0)
    for i in range(600):  # one a second for ten minutes
        store.append_prover(_status(float(i)))
    kept = store.snapshot().prover_statuses
    assert len(kept) == 61 and kept[-1].t_mono_ns == int(599e9)
    huge = SeriesStore(list(header().gpus), period_s=0.1, max_prover_bytes=8 * MIB)
    answer = _status(0.0, partitions=5000)  # a prover answering with 5,000 partitions
    for i in range(200):
        huge.append_prover(msgspec.structs.replace(answer, t_mono_ns=i * 100_000_000))
    assert len(huge.snapshot().prover_statuses) < 10


def test_worker_ids_from_junk_lines_do_not_grow_the_parser_without_end() -> None:
    parser = LogParser()
    for w in range(5 * MAX_WORKERS):
        parser.parse_line("2026-11-30T09:06:26.553439Z  INFO cuzk_core::engine: pipeline GPU "
                          f"worker started worker_id={w} gpu=0", "s", 1, 1.0)
        parser.parse_line(f"TIMELINE,{w},GPU_START,job-{w},worker={w},partition=1", "s", 1, 1.0)
    assert len(parser.worker_gpu) == MAX_WORKERS
    assert len(parser._worker_job) == MAX_WORKERS


#: A child that frees 200 MiB of 1 MiB buffers, each followed by a small heap allocation that
#: keeps the heap from shrinking at its top, and prints how many MiB it still holds. The first
#: 1 MiB free is what makes glibc raise its mmap threshold (unless it is held).
_FREE_200_MIB = """
import os, sys
from gapwatch.engine.memory import return_large_allocations
if sys.argv[1] == "held":
    assert return_large_allocations()
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
first = bytearray(1 << 20)
del first
base = rss()
big, small = [], []
for _ in range(200):
    big.append(bytearray(1 << 20))
    small.append(bytearray(1000))
del big
print((rss() - base) >> 20)
"""


def test_large_freed_allocations_go_back_to_the_system_on_glibc() -> None:
    if not (platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"):
        assert return_large_allocations() is False  # nothing to hold elsewhere
        pytest.skip("glibc's mmap threshold: Linux with glibc only")

    def held_mib(mode: str) -> int:
        out = subprocess.run([sys.executable, "-c", _FREE_200_MIB, mode], capture_output=True,
                             text=True, timeout=60, check=True)
        return int(out.stdout)

    # glibc's own way keeps the freed buffers in the heap; held, they are unmapped on free.
    assert held_mib("default") > 150
    assert held_mib("held") < 20
