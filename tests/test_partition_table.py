"""The partition table of a long log: bounded memory, one row per partition however its events
were written out, lock regions on the job each worker held then, none from the C++ lines of
several GPUs."""

from __future__ import annotations

import re
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from parsed_logs import events_of_lines

from gapwatch.base import sorted_spool
from gapwatch.core.config import DetectorConfig
from gapwatch.core.models import (
    GpuInfo,
    LogEvent,
    ProverPartition,
    ProverStatus,
    ProverWorker,
    SessionHeader,
)
from gapwatch.cuzk import partition_table
from gapwatch.cuzk.log_lines import PARTITION_KIND
from gapwatch.cuzk.partitions import (
    RunTimeline,
    TimelineBuilder,
    derive_timeline,
    timeline_event,
)
from gapwatch.logs.parse import LogParser
from gapwatch.offline.detect import detect_records
from gapwatch.offline.report import _partition_json
from gapwatch.offline.report_text import _partition_lines

DATA = Path(__file__).parent / "data"


def parse_text(text: str) -> list[LogEvent]:
    parser = LogParser()
    events: list[LogEvent] = []
    for i, line in enumerate(text.splitlines()):
        events += parser.parse_line(line, "stdout", i, 0.0)
    return events


def _edge(name: str, t: float, job: str, part: int, worker: int, **fields: int) -> LogEvent:
    return LogEvent(t_wall_s=t, time_source="prefix", kind="timeline", name=name, raw="",
                    job_id=job, worker=worker, partition=part, gpu=0, fields=dict(fields))


def partition_events(n: int, every_s: float = 0.5) -> list[LogEvent]:
    """`n` partitions, one started every `every_s`, each synthesised, on a GPU for 3 s, and
    said unpinned."""
    out: list[LogEvent] = []
    for i in range(n):
        t, job, part, worker = i * every_s, f"porep-{i // 10}", i % 10, i % 2
        out += [_edge("SYNTH_END", t, job, part, worker, synth_ms=2000),
                LogEvent(t_wall_s=t, time_source="prefix", kind="tracing", name="unpinned",
                         raw="", job_id=job, partition=part, warning="unpinned"),
                _edge("GPU_START", t, job, part, worker),
                _edge("GPU_END", t + 3.0, job, part, worker, gpu_ms=3000)]
    return out


def _builder_peak_bytes(n: int) -> tuple[int, RunTimeline]:
    events = partition_events(n)
    tracemalloc.start()
    try:
        builder = TimelineBuilder()
        for e in events:
            builder.add(e)
        run = builder.finish()
        _size, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, run


@pytest.fixture
def scaled_down(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real sizes, scaled down: spools write a run every 250 items in blocks of 10 and
    merge their runs beyond 4 that overlap; keys are written out after 15 s of the log."""
    monkeypatch.setattr(partition_table, "RUN_ITEMS", 250)
    monkeypatch.setattr(sorted_spool, "BLOCK_ITEMS", 10)
    monkeypatch.setattr(sorted_spool, "MAX_DEPTH", 4)
    monkeypatch.setattr(partition_table, "IDLE_S", 15.0)


@pytest.mark.usefixtures("scaled_down")
def test_a_long_logs_table_holds_the_partitions_in_flight_not_the_runs() -> None:
    # 5,000 partitions more must not hold their rows: rows held to the end cost ~280 bytes
    # each at the peak here (1.66 MB against 255 KB), the table in flight ~30. The bound is
    # on the bytes per partition more, not a ratio: a table of the process's own that grows
    # now and then (its resize ~150 KB, paid by whichever measurement comes to it: 134-315 KB
    # for the 6,000 by the tests run before) put a ratio of 2 at the mercy of the test order.
    small, small_run = _builder_peak_bytes(1_000)
    large, large_run = _builder_peak_bytes(6_000)
    assert len(small_run.partitions) == 1_000 and len(large_run.partitions) == 6_000
    assert (large - small) / 5_000 < 100, (small, large)
    rows = list(large_run.partitions)
    assert [r.gpu_start_s for r in rows] == sorted(r.gpu_start_s or 0.0 for r in rows)
    assert all(r.unpinned and r.synth_ms == 2000 and r.timeline_gpu_ms == 3000 for r in rows)
    assert large_run.unpinned == 6_000 and large_run.merged_efficiency == pytest.approx(1.0)


def test_a_partition_touched_again_after_it_was_written_out_is_still_one_row(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Partition 0 starts, then an hour of others goes by (it is written out, idle), then its
    # GPU_END and a late warning: the same row as when it is held throughout.
    late = [_edge("GPU_START", 0.0, "job-a", 0, 0)]
    late += [_edge("GPU_START", 1.0 + i, "job-b", i, 1) for i in range(3600)]
    late += [_edge("GPU_END", 3700.0, "job-a", 0, 0, gpu_ms=3_700_000),
             LogEvent(t_wall_s=3701.0, time_source="prefix", kind="tracing", name="unpinned",
                      raw="", job_id="job-a", partition=0, warning="unpinned")]
    monkeypatch.setattr(partition_table, "MAX_HELD_KEYS", 10)
    written = derive_timeline(late)
    monkeypatch.setattr(partition_table, "MAX_HELD_KEYS", 1_000_000)
    monkeypatch.setattr(partition_table, "IDLE_S", 1e9)
    held = derive_timeline(late)
    assert list(written.partitions) == list(held.partitions)
    first = written.partitions[0]
    assert (first.job_id, first.gpu_start_s, first.gpu_end_s, first.unpinned) == (
        "job-a", 0.0, 3700.0, True)
    assert len(written.partitions) == 3601


def _two_jobs(text: str) -> str:
    """pageable.log with partitions 6 and up of a second job: the workers change jobs."""
    def second(m: re.Match[str]) -> str:
        return m.group(0).replace("porep-1234-5678", "porep-1234-9999")
    return re.sub(r"^.*porep-1234-5678.*partition=([6-9]|1[01])\b.*$", second, text,
                  flags=re.MULTILINE)


def test_lock_regions_redone_from_the_cpp_lines_go_to_the_job_each_worker_held_then() -> None:
    events = parse_text(_two_jobs((DATA / "pageable.log").read_text()))
    assert {e.job_id for e in events if e.kind == PARTITION_KIND} == {
        "porep-1234-5678", "porep-1234-9999"}
    with_derived = derive_timeline(events)
    redone = derive_timeline([e for e in events if e.kind != PARTITION_KIND])
    # Once, every lock region went to the job its worker held last in the whole log.
    assert list(redone.partitions) == list(with_derived.partitions)
    assert len(redone.partitions) == 12
    assert all(p.mutex_held_ms is not None for p in redone.partitions)


@pytest.mark.parametrize("said", [("num_gpus=1", "num_gpus=2"),
                                  ("worker_id=1 gpu=0", "worker_id=1 gpu=1")])
def test_lock_regions_are_not_redone_from_the_cpp_lines_of_several_gpus(
        said: tuple[str, str]) -> None:
    # The daemon says two GPUs, or worker 1 runs on a second one: the GPUs' in-lock C++ lines
    # interleave with nothing to tell them apart, so neither the parser nor the table pairs
    # them with prove_start lines.
    events = parse_text((DATA / "pageable.log").read_text().replace(*said))
    assert not any(e.kind == PARTITION_KIND for e in events)
    run = derive_timeline(events)
    assert len(run.partitions) == 12
    assert all(p.mutex_held_ms is None and p.busy_start_s is None for p in run.partitions)
    assert run.occupied_fraction is None and run.kernel_utilisation is None


def _statuses(n: int) -> Iterator[ProverStatus]:
    """`n` snapshots a second apart, each with 20 partitions in flight (a new job every 10 s),
    made one at a time as a recording's reader gives them."""
    for i in range(n):
        job = f"porep-{i // 10}"
        yield ProverStatus(
            prover="p", t_mono_ns=i * 1_000_000_000, t_wall_s=1e9 + i, latency_ms=1.0,
            uptime_s=float(i), partition_counts={}, synthesis_active=None,
            synthesis_max=None, queue_depth=None, jobs=2,
            workers=[ProverWorker(worker_id=0, gpu=0, state="proving", job_id=job,
                                  partition=i % 10)],
            partitions=[ProverPartition(job, k, "gpu" if k == i % 10 else "synthesizing",
                                        synth_ms=100 * k, gpu_ms=10 * k) for k in range(20)])


def _detect_peak_bytes(n: int) -> tuple[int, RunTimeline]:
    header = SessionHeader(gapwatch_version="test", host="box", source="sim",
                           started_wall_s=1e9, started_mono_ns=0, period_ms=100.0,
                           gpus=[GpuInfo(index=0, link_bytes_per_s=63e9)])
    tracemalloc.start()
    try:
        found = detect_records(header, _statuses(n), DetectorConfig())
        assert found.timeline is not None
        run = found.timeline.finish()
        _size, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found.prover_status_count == n
    return peak, run


@pytest.mark.usefixtures("scaled_down")
def test_a_reports_status_snapshots_go_to_the_table_as_they_come_and_are_not_kept() -> None:
    # A day of `--cuzk-status` at its 1 s default is 86,400 snapshots: held for the partition
    # table (and compare's settings) until the end, ~26 KB each, a report of it took GBs.
    small, small_run = _detect_peak_bytes(200)
    large, large_run = _detect_peak_bytes(1_600)
    assert len(large_run.partitions) == 160 * 10  # each job's partitions that reached a GPU
    assert {p.source for p in large_run.partitions} == {"status"}
    assert large < 2 * small, (small, large)


def _poll(t: float, state: str, synth_ms: int | None = None, gpu_ms: int | None = None,
          worker: int | None = None) -> ProverStatus:
    workers = [ProverWorker(worker_id=worker, gpu=1, state="proving", job_id="j", partition=0)
               ] if worker is not None else []
    return ProverStatus(prover="p", t_mono_ns=int(t * 1e9), t_wall_s=t, latency_ms=1.0,
                        uptime_s=t, partition_counts={}, workers=workers, synthesis_active=None,
                        synthesis_max=None, queue_depth=None, jobs=1,
                        partitions=[ProverPartition("j", 0, state, synth_ms, gpu_ms)])


def test_a_status_poll_that_repeats_the_last_one_changes_nothing_and_one_that_differs_counts(
) -> None:
    polls = [_poll(10.0, "synthesizing", 100), _poll(11.0, "synthesizing", 100),
             _poll(12.0, "synthesizing", 200), _poll(13.0, "gpu", 200, 500, worker=3),
             _poll(14.0, "gpu", 200, 500, worker=3), _poll(15.0, "gpu", 200, 500),
             _poll(16.0, "done", 200, 900), _poll(17.0, "done", 200, 900)]
    (row,) = derive_timeline([], polls).partitions
    assert row.states_seen == {"synthesizing": 10.0, "gpu": 13.0, "done": 16.0}
    assert (row.synth_ms, row.gpu_start_s, row.timeline_gpu_ms) == (200, 12.5, 900)
    assert row.gpu_end_s == pytest.approx(13.4)
    assert (row.worker, row.gpu, row.source) == (3, 1, "status")


@pytest.mark.usefixtures("scaled_down")
def test_a_log_naming_one_partition_forever_takes_no_more_memory_than_naming_it_a_little(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A key never idle (a hostile log repeating one partition's lines) is written out every
    # 64 operations, and folded as its fragments are read back, never all held at once (a
    # spool holds 64 KB of them before it writes a run).
    monkeypatch.setattr(partition_table, "MAX_KEY_OPS", 64)
    monkeypatch.setattr(sorted_spool, "RUN_BYTES", 64 << 10)

    def peak(n: int) -> tuple[int, RunTimeline]:
        tracemalloc.start()
        try:
            builder = TimelineBuilder()
            for i in range(n):
                builder.add(_edge("GPU_START" if i % 2 else "GPU_END", float(i), "job", 0, i % 7,
                                  gpu_ms=i))
            run = builder.finish()
            return tracemalloc.get_traced_memory()[1], run
        finally:
            tracemalloc.stop()

    (small, _), (large, run) = peak(2_000), peak(16_000)
    assert large < 2 * small, (small, large)
    (row,) = run.partitions
    assert (row.gpu_start_s, row.gpu_end_s, row.timeline_gpu_ms, row.worker) == (
        15_999.0, 15_998.0, 15_998, 15_999 % 7)


def test_a_snapdeals_first_wave_after_a_poreps_is_marked_in_the_table() -> None:
    # The capacity hints are one per circuit type (pipeline.rs:181-204): a SnapDeals job's first
    # partitions, hours after the PoRep ones in the same run, are unhinted and unpinned too.
    # Before, the mark ended at the run's first SYNTH_END of any type, so they were not marked.
    # Each job's kind is its dispatch line's (engine.rs:2261-2265, 2415-2419), else /status's.
    dispatch = ("2026-05-12T{}.000000Z  INFO cuzk_core::engine: dispatching per-partition {}"
                "synthesis (budget-gated) job_id={} num_partitions=2 budget_available_gib=300")

    def job(job_id: str, start_ms: int) -> list[str]:
        return [f"TIMELINE,{start_ms + i},SYNTH_START,{job_id},partition={i}" for i in (0, 1)] + [
            f"TIMELINE,{start_ms + 30_000 + i},SYNTH_END,{job_id},partition={i},synth_ms=29000"
            for i in (0, 1)] + [
            f"TIMELINE,{start_ms + 31_000 + 4_000 * i},{edge},{job_id},worker=0,partition={i}"
            for i in (0, 1) for edge in ("GPU_START", "GPU_END")]

    lines = ["2026-05-12T14:00:00.000000Z  INFO cuzk_core::engine: starting cuzk engine "
             "pipeline_enabled=true",
             dispatch.format("14:00:00", "", "porep-1"), *job("porep-1", 1_000),
             dispatch.format("14:01:00", "", "porep-2"), *job("porep-2", 60_100),
             dispatch.format("17:00:00", "SnapDeals ", "snap-1"), *job("snap-1", 10_800_100),
             dispatch.format("17:01:00", "SnapDeals ", "snap-2"), *job("snap-2", 10_860_100)]
    run = derive_timeline(events_of_lines(lines))
    marked = {(p.job_id, p.partition): p.first_wave for p in run.partitions}
    assert marked == {("porep-1", 0): True, ("porep-1", 1): True,
                      ("porep-2", 0): False, ("porep-2", 1): False,
                      ("snap-1", 0): True, ("snap-1", 1): True,
                      ("snap-2", 0): False, ("snap-2", 1): False}
    # A log at `warn` has no dispatch line: the job kinds of /status, polled as each job
    # starts, say the same.
    kinds = {"porep-1": "porep-c2", "porep-2": "porep-c2", "snap-1": "snap-update",
             "snap-2": "snap-update"}
    builder = TimelineBuilder()
    for ev in events_of_lines([text for text in lines if "dispatching" not in text]):
        if ev.name == "SYNTH_START" and ev.partition == 0 and ev.job_id in kinds:
            builder.add_status(ProverStatus("127.0.0.1:9821", 0, ev.t_wall_s, 1.0, 5.0, {}, [],
                                            0, 0, 0, 0, job_kinds={ev.job_id: kinds[ev.job_id]}))
        slim = timeline_event(ev)
        if slim is not None:
            builder.add(slim)
    assert {(p.job_id, p.partition): p.first_wave for p in builder.finish().partitions} == marked


def test_a_partition_whose_pool_checkout_failed_is_no_first_wave_but_pool_failed() -> None:
    """cuzk checks a pinned buffer out only with a capacity hint (pipeline.rs:273-275,
    301-308): a partition its `pinned pool checkout FAILED` line names had one, so it is no
    first wave, whatever its synthesis's start says. The H200 pageable run's partitions 0-2
    of porep-1000-0 began before any synthesis ended, their own lines said the checkout
    failed, and the table read `no (first wave)` (no setting) beside a gap blamed on the
    pool and advised on with safety_margin. A partition no such line names, begun as early,
    stays one."""
    failed = ("2026-11-30T10:03:39.{:06d}Z  WARN synthesize_partition{{job_id=\"porep-1000-0\" "
              "partition={}}}: cuzk_core::pipeline: pinned pool checkout FAILED — falling back "
              "to unpinned num_constraints=50331648 pool_free=0 pool_total_gib=0")
    lines = ["2026-11-30T10:03:39.000000Z  INFO cuzk_core::engine: starting cuzk engine "
             "pipeline_enabled=true",
             failed.format(21759, 0), failed.format(22105, 1),
             *[f"TIMELINE,{1 + i},SYNTH_START,porep-1000-0,partition={i}" for i in range(3)],
             *[f"TIMELINE,{2250 + i},SYNTH_END,porep-1000-0,partition={i},synth_ms=2247"
               for i in range(3)],
             *[f"TIMELINE,{3000 + 4000 * i},{edge},porep-1000-0,worker=0,partition={i}"
               for i in range(3) for edge in ("GPU_START", "GPU_END")]]
    run = derive_timeline(events_of_lines(lines))
    said = {p.partition: (p.first_wave, p.pool_failed, p.pinned_words) for p in run.partitions}
    assert said == {0: (False, True, "no"), 1: (False, True, "no"), 2: (True, False, "no")}
    table = "\n".join(_partition_lines(run))
    assert re.search(r"porep-1000-0 +0 .* no \(pool failed\)$", table, re.M), table
    assert re.search(r"porep-1000-0 +2 .* no \(first wave\)$", table, re.M), table
    assert [_partition_json(p)["pool_failed"] for p in run.partitions] == [True, True, False]
