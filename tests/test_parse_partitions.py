"""Lock attribution and the derived per-partition timeline, on the real H200 logs."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pytest
from msgspec.structs import replace

from gapwatch.commands.parse import format_timeline
from gapwatch.core.models import FieldValue, LogEvent
from gapwatch.cuzk.log_lines import ANCHOR_MESSAGE, PARTITION_KIND
from gapwatch.cuzk.partition_table import Intervals
from gapwatch.cuzk.partitions import TimelineBuilder, derive_timeline
from gapwatch.logs.parse import LogParser
from gapwatch.offline.report import _partition_json
from gapwatch.offline.report_text import _partition_lines

DATA = Path(__file__).parent / "data"


def parse_file(name: str) -> list[LogEvent]:
    parser = LogParser()
    events: list[LogEvent] = []
    for i, line in enumerate((DATA / name).read_text().splitlines()):
        events += parser.parse_line(line, name, i, 0.0)
    return events


def test_every_partition_is_attributed_to_the_worker_that_held_the_lock() -> None:
    events = parse_file("pageable.log")
    locks = [e for e in events if e.kind == PARTITION_KIND]
    truth = json.loads((DATA / "pageable.truth.json").read_text())["intervals"]
    assert len(locks) == len(truth) == 12
    by_part = {(t["worker"], t["partition"]): t for t in truth}
    for lock in locks:
        t = by_part[(lock.worker, lock.partition)]
        # The measured compute interval lies inside the attributed lock region, within 10 ms.
        assert lock.fields["gpu_busy_start_s"] == pytest.approx(t["start"], abs=0.010)
        assert lock.fields["gpu_busy_end_s"] == pytest.approx(t["end"], abs=0.010)
        # ntt_kernels absorbs the pageable H2D, as the ground truth measured it.
        assert lock.fields["ntt_kernels_ms"] == t["h2d_ms"]
        assert lock.job_id == "porep-1234-5678" and lock.gpu == 0


def test_pageable_run_reproduces_timeline_efficiency_versus_kernel_utilisation() -> None:
    run = derive_timeline(parse_file("pageable.log"))
    assert len(run.partitions) == 12
    # TIMELINE intervals overlap (two workers) so they claim a fully busy GPU ...
    assert run.merged_efficiency == pytest.approx(1.0, abs=0.001)
    # ... while the kernels ran about half of the wall time.
    assert run.kernel_utilisation == pytest.approx(0.538, abs=0.005)
    assert run.occupied_fraction == pytest.approx(0.537, abs=0.005)
    assert all(p.unpinned for p in run.partitions)
    truth = sorted(json.loads((DATA / "pageable.truth.json").read_text())["intervals"],
                   key=lambda t: t["start"])
    truth_gaps = [b["start"] - a["end"] for a, b in zip(truth, truth[1:], strict=False)]
    assert run.long_idle_gaps == sum(g >= 0.1 for g in truth_gaps) == 8
    assert run.longest_idle_gap_s == pytest.approx(max(truth_gaps), abs=0.010)
    first = run.partitions[0]
    assert (first.partition, first.worker, first.timeline_gpu_ms, first.mutex_held_ms,
            first.mutex_wait_ms, first.h2d_in_ntt_ms) == (0, 0, 4707, 935, 379, 3391)


def test_pinned_run_keeps_the_gpu_occupied() -> None:
    run = derive_timeline(parse_file("pinned.log"))
    assert run.occupied_fraction is not None and run.occupied_fraction > 0.98
    assert not any(p.unpinned for p in run.partitions)
    assert run.longest_idle_gap_s is None or run.longest_idle_gap_s < 0.05


def test_attribution_is_redone_when_the_derived_events_are_missing() -> None:
    events = parse_file("pageable.log")
    with_derived = derive_timeline(events)
    without = derive_timeline([e for e in events if e.kind != PARTITION_KIND])
    assert without.partitions == with_derived.partitions


def test_prove_start_read_before_the_cpp_lines_of_another_file_still_pairs() -> None:
    p = LogParser()
    out = p.parse_line("2026-11-30T09:06:38.134140Z  INFO cuzk_core::engine: GPU_TIMING "
                       "spawn_blocking prove_start worker_id=1 partition=Some(4) prove_start_ms=9",
                       "stdout", 1_000, 0.0)
    assert [e.kind for e in out] == ["tracing"]
    for line in ("CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=5",
                 "CUZK_TIMING: gpu_tid=0 tail_msm_ms=2 gpu_total_ms=8",
                 "CUZK_TIMING: mutex_held_ms=8 total_start_fn_ms=9"):
        out = p.parse_line(line, "stderr", 2_000, 0.0)
    assert [e.kind for e in out] == ["cuzk_timing", PARTITION_KIND]
    assert (out[1].worker, out[1].partition, out[1].fields["mutex_wait_ms"]) == (1, 4, 5)


def test_a_stale_prove_start_is_not_paired_with_a_much_later_lock_region() -> None:
    p = LogParser()
    p.parse_line("2026-11-30T09:06:38.134140Z  INFO cuzk_core::engine: GPU_TIMING spawn_blocking "
                 "prove_start worker_id=1 partition=Some(4)", "stdout", 0, 0.0)
    p.parse_line("CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=5", "stderr", 5_000_000_000, 0.0)
    out = p.parse_line("CUZK_TIMING: mutex_held_ms=8", "stderr", 5_000_000_000, 0.0)
    assert [e.kind for e in out] == ["cuzk_timing"]


def test_lock_region_without_mutex_held_is_dropped_and_counted() -> None:
    p = LogParser()
    p.parse_line("CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=5", "e", 1, 0.0)
    p.parse_line("CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=6", "e", 2, 0.0)
    assert p.attributor.dropped_groups == 1


def test_attribution_stops_once_two_gpus_are_known() -> None:
    p = LogParser()
    for w, g in ((0, 0), (1, 1)):
        p.parse_line(f"2026-11-30T09:06:26.5Z  INFO cuzk_core::engine: pipeline GPU worker started "
                     f"worker_id={w} gpu={g} sub_id=0", "o", 1, 0.0)
    p.parse_line("CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=5", "e", 1, 0.0)
    p.parse_line("CUZK_TIMING: mutex_held_ms=8", "e", 1, 0.0)
    out = p.parse_line("2026-11-30T09:06:38.1Z  INFO cuzk_core::engine: GPU_TIMING spawn_blocking "
                       "prove_start worker_id=1 partition=Some(4)", "o", 1, 0.0)
    assert [e.kind for e in out] == ["tracing"]
    assert p.counters["attribution_disabled_multi_gpu"] == 1


def test_intervals_merge_in_any_order_and_drop_the_empty_ones() -> None:
    spans = Intervals()
    for start, end in [(3, 4), (0, 1), (0.5, 2), (2, 2.5), (5, 5)]:
        spans.add(start, end)
    assert list(spans.merged()) == [(0, 2.5), (3, 4)]
    assert (spans.count, spans.first_s, spans.last_s) == (5, 0, 5)


def test_no_events_give_an_empty_timeline() -> None:
    run = derive_timeline([])
    assert run.partitions == [] and run.merged_efficiency is None and run.wall_s is None


def _ev(t: float, kind: str, name: str, job: str | None = "job", partition: int | None = None,
        worker: int | None = None, warning: str | None = None,
        fields: dict[str, FieldValue] | None = None) -> LogEvent:
    return LogEvent(t_wall_s=t, time_source="line", kind=kind, name=name, raw="", job_id=job,
                    partition=partition, worker=worker, fields=fields or {}, warning=warning)


def test_a_partitions_synthesis_time_and_unpinned_warning_reach_its_row_before_or_after_it_is_made(
) -> None:
    """A partition's SYNTH_END and `unpinned` warning reach its row whether they come before
    its GPU_START or after; a monolithic job's reach its row too. The same table either way,
    each run its own rows. A partition no line said pinned or unpinned of reads `-`."""
    def gpu(t: float, p: int | None, w: int, job: str = "job") -> list[LogEvent]:
        return [_ev(t, "timeline", "GPU_START", job, p, w),
                _ev(t + 1, "timeline", "GPU_END", job, p, w, fields={"gpu_ms": 1000})]

    events = [
        _ev(0, "timeline", "SYNTH_END", partition=0, fields={"synth_ms": 500}),
        _ev(0.5, "tracing", "pinned", partition=0, warning="unpinned"),
        *gpu(1, 0, 0),
        *gpu(1, 1, 1),
        _ev(3, "timeline", "SYNTH_END", partition=1, fields={"synth_ms": 700}),  # after its row
        _ev(3.5, "tracing", "pinned", partition=1, warning="unpinned"),
        _ev(4, "timeline", "SYNTH_START", "post", fields={"kind": "WinningPoSt"}),
        _ev(5, "timeline", "SYNTH_END", "post", fields={"synth_ms": 900}),
        *gpu(6, None, 0, "post"),
        _ev(7.5, "tracing", "pinned", partition=2, warning="unpinned"),  # never on a GPU
        _ev(8, "timeline", "SYNTH_END", partition=2, fields={"synth_ms": 300}),
        _ev(9, "tracing", ANCHOR_MESSAGE),  # a restart: the same job's partition 0 is a new row
        _ev(10, "timeline", "SYNTH_END", partition=0, fields={"synth_ms": 600}),
        *gpu(11, 0, 0),
    ]
    rows = {(p.run, p.job_id, p.partition): (p.synth_ms, p.unpinned, p.pinned_words)
            for p in derive_timeline(events).partitions}
    assert rows == {
        (1, "job", 0): (500, True, "no"),
        (1, "job", 1): (700, True, "no"),
        (1, "post", None): (900, False, "no"),
        (2, "job", 0): (600, False, "-"),
    }


def test_a_partition_whose_synthesis_end_was_not_read_says_its_pinning_is_not_known() -> None:
    """cuzk says whether a partition's a/b/c were pinned as its synthesis ends
    (`partition synthesis complete ... is_pinned=`, beside TIMELINE's SYNTH_END). A row whose
    synthesis end the log did not hold (a window's partition synthesised before the window)
    said "pinned: yes" for want of an `is_pinned=false` line; it is not known ("-", None).
    Nor is the end read alone (TIMELINE's SYNTH_END: a log kept at WARN holds it, not the
    INFO `is_pinned` line) a word of pinning: "yes" is the completion line's `is_pinned=true`;
    its `is_pinned=false` (the warning) is "no"; a monolithic job is never pinned."""
    def gpu(t: float, p: int | None, job: str = "job") -> list[LogEvent]:
        return [_ev(t, "timeline", "GPU_START", job, p, 0),
                _ev(t + 1, "timeline", "GPU_END", job, p, 0, fields={"gpu_ms": 1000})]

    events = [
        *gpu(1, 0),  # synthesised before the log's first line
        _ev(2, "timeline", "SYNTH_END", partition=1, fields={"synth_ms": 500}),
        *gpu(3, 1),
        _ev(4, "tracing", "partition synthesis complete", partition=2,
            fields={"is_pinned": True}),
        *gpu(5, 2),
        _ev(6, "tracing", "partition synthesis complete", partition=3, warning="unpinned"),
        *gpu(7, 3),
        *gpu(9, None, "post"),
    ]
    run = derive_timeline(events)
    assert {(p.job_id, p.partition): p.pinned_words for p in run.partitions} == {
        ("job", 0): "-", ("job", 1): "-", ("job", 2): "yes", ("job", 3): "no",
        ("post", None): "no"}
    assert [p.synthesised_unpinned for p in run.partitions] == [None, None, False, True, True]


def test_a_run_begun_before_the_log_read_marks_no_first_wave() -> None:
    """Told that its events begin at 10 s (a window's), the timeline does not mark a first
    wave in a run whose start line (kept as a startup line) is from before: the syntheses
    that ended between were not read. A run started in what was read is marked as before."""
    def run(anchor_s: float) -> bool:
        builder = TimelineBuilder(read_from_s=10.0)
        for e in (_ev(anchor_s, "tracing", ANCHOR_MESSAGE),
                  _ev(anchor_s + 11, "timeline", "SYNTH_START", partition=0),
                  _ev(anchor_s + 12, "timeline", "GPU_START", partition=0, worker=0)):
            builder.add(e)
        return builder.finish().partitions[0].first_wave

    assert run(anchor_s=0.0) is False
    assert run(anchor_s=10.0) is True


def test_a_span_keeps_the_partitions_whose_gpu_work_overlaps_it() -> None:
    """`finish(span)`: the rows whose GPU work overlaps the report's span. A partition the
    log places before it, or after, is left out; one that only `/status` knew is placed by the
    first poll that saw it on a GPU, or done at a poll after the first (a hole in the polls:
    it ended since the poll before); done at the first poll read, it places nothing (a
    window's first poll lists its jobs' partitions done long before the window)."""
    from gapwatch.core.models import ProverPartition, ProverStatus

    def poll(t: float, *parts: tuple[int, str]) -> ProverStatus:
        return ProverStatus(prover="sim", t_mono_ns=int(t * 1e9), t_wall_s=t, latency_ms=1.0,
                            uptime_s=None, partition_counts={}, workers=[],
                            synthesis_active=None, synthesis_max=None, queue_depth=None,
                            jobs=1, partitions=[ProverPartition("st", i, state)
                                                for i, state in parts])

    builder = TimelineBuilder()
    for e in (_ev(1, "timeline", "GPU_START", partition=0, worker=0),  # before the span
              _ev(2, "timeline", "GPU_END", partition=0, worker=0, fields={"gpu_ms": 1000}),
              _ev(9, "timeline", "GPU_START", partition=1, worker=0),  # across its start
              _ev(11, "timeline", "GPU_END", partition=1, worker=0, fields={"gpu_ms": 2000}),
              _ev(21, "timeline", "GPU_START", partition=2, worker=0)):  # after it
        builder.add(e)
    builder.add_status(poll(10, (0, "done"), (1, "gpu")))  # the first poll: st 0 done
    builder.add_status(poll(15, (0, "done"), (1, "gpu"), (2, "done")))  # st 2: done since
    run = builder.finish((10.0, 20.0))
    assert [(p.job_id, p.partition) for p in run.partitions] == [
        ("job", 1), ("st", 1), ("st", 2)]
    assert len(run.partitions) == 3


def test_a_partition_only_status_saw_on_a_gpu_keeps_what_the_log_said_of_its_synthesis(
) -> None:
    """A recording that ended after a partition reached the GPU but before its GPU_START
    line: `/status` makes its row, and the log's `is_pinned=true` of it (read) said "pinning
    not known" ("-"). The row `/status` made carries what the log said: its pinning (an
    `unpinned` warning too) and its synthesis time."""
    from gapwatch.core.models import ProverPartition, ProverStatus

    builder = TimelineBuilder()
    for e in (_ev(1, "timeline", "SYNTH_START", partition=0),
              _ev(2, "timeline", "SYNTH_START", partition=1),
              _ev(3, "tracing", "partition synthesis complete", partition=0,
                  fields={"is_pinned": True}),
              _ev(3, "timeline", "SYNTH_END", partition=0, fields={"synth_ms": 2000}),
              _ev(4, "tracing", "partition synthesis complete", partition=1,
                  warning="unpinned")):
        builder.add(e)
    builder.add_status(ProverStatus(
        prover="sim", t_mono_ns=5_000_000_000, t_wall_s=5.0, latency_ms=1.0, uptime_s=None,
        partition_counts={}, workers=[], synthesis_active=None, synthesis_max=None,
        queue_depth=None, jobs=1,
        partitions=[ProverPartition("job", 0, "gpu"), ProverPartition("job", 1, "gpu")]))
    run = builder.finish()
    assert [(p.partition, p.pinned_words, p.synth_ms) for p in run.partitions] == [
        (0, "yes", 2000), (1, "no", None)]
    assert run.pinning_unknown == 0


def test_a_negative_duration_in_cuzks_timing_lines_is_no_duration() -> None:
    """`mutex_held_ms=-935` (a garbled or hostile line) was taken as given: the partition
    table's sums and shares went negative. A duration below 0 is None, as a count is."""
    text = (DATA / "pageable.log").read_text().replace("mutex_held_ms=935", "mutex_held_ms=-935")
    parser = LogParser()
    events: list[LogEvent] = []
    for i, line in enumerate(text.splitlines()):
        events += parser.parse_line(line, "pageable.log", i, 0.0)
    first = derive_timeline(events).partitions[0]
    assert first.partition == 0 and first.mutex_held_ms is None


def test_a_duration_no_step_takes_is_no_duration_counted_said_and_never_summed() -> None:
    """`mutex_held_ms=99999999999999999` (3 million years, an int, so taken): the table's wall
    time was 1e14 s, GPU efficiency 0 %, GPU occupied 100 %. A figure over a day times no
    step of one partition (`log_lines.MAX_STEP_MS`): read as none, counted, said."""
    text = (DATA / "pageable.log").read_text()
    clean = derive_timeline(_parsed(text.splitlines()))
    bad_text = (text.replace("mutex_held_ms=942", "mutex_held_ms=99999999999999999", 1)
                .replace("partition=0,synth_ms=2891", "partition=0,synth_ms=86400001", 1)
                .replace("gpu_ms=", "gpu_ms=99999999999", 1))
    events = _parsed(bad_text.splitlines())
    run = derive_timeline(events)
    # The run's figures are the log's own, as without the lines' absurd fields.
    assert run.wall_s == clean.wall_s
    assert run.merged_efficiency == clean.merged_efficiency
    assert run.occupied_fraction is not None and clean.occupied_fraction is not None
    assert run.occupied_fraction <= clean.occupied_fraction
    assert run.bad_durations == 3
    note = run.bad_durations_note()
    assert note is not None and note.startswith("3 duration(s) in cuzk's timing lines that no "
                                                "step takes (negative, over a day, or longer than "
                                                "cuzk's run had run")
    assert note in format_timeline(run)
    # A recording's lock event placed by the absurd figure (an older gapwatch's parse) places
    # no busy span either.
    placed = [replace(ev, fields={**ev.fields, "gpu_busy_start_s": ev.t_wall_s - 1e14})
              if ev.kind == PARTITION_KIND and ev.fields.get("mutex_held_ms") ==
              99999999999999999 else ev for ev in events]
    assert derive_timeline(placed).wall_s == clean.wall_s


def test_a_duration_longer_than_its_run_had_run_is_no_duration() -> None:
    """Under a day, yet longer than the engine had run when the step ended (`starting cuzk
    engine` opens the log 8 s before the first SYNTH_END): 22 hours of mutex held made the
    wall time 22 hours. Without the start read, only the day bounds it."""
    text = (DATA / "pageable.log").read_text()
    clean = derive_timeline(_parsed(text.splitlines()))
    bad_text = (text.replace("mutex_held_ms=942", "mutex_held_ms=80000000", 1)
                .replace("partition=0,synth_ms=2891", "partition=0,synth_ms=3600000", 1))
    run = derive_timeline(_parsed(bad_text.splitlines()))
    assert run.wall_s == clean.wall_s and run.bad_durations == 2
    headless = [line for line in bad_text.splitlines() if "starting cuzk engine" not in line]
    assert derive_timeline(_parsed(headless)).bad_durations == 0


def test_negative_durations_are_counted_and_said_under_the_table() -> None:
    """A negative `*_ms` left its cell "-" with nothing said; each is now counted, and the
    report's table and `parse --timeline` say how many were read as none."""
    text = (DATA / "pageable.log").read_text()
    bad = (text.replace("mutex_held_ms=935", "mutex_held_ms=-935", 1)
           .replace("partition=0,synth_ms=", "partition=0,synth_ms=-", 1))
    parser = LogParser()
    events: list[LogEvent] = []
    for i, line in enumerate(bad.splitlines()):
        events += parser.parse_line(line, "pageable.log", i, 0.0)
    run = derive_timeline(events)
    assert run.bad_durations == 2
    note = run.bad_durations_note()
    assert note is not None and note.startswith("2 duration(s) in cuzk's timing lines that no "
                                                "step takes (negative, over a day, or longer than "
                                                "cuzk's run had run")
    assert note in format_timeline(run)
    assert any(note in line for line in _partition_lines(run))
    clean = LogParser()
    good = [ev for i, line in enumerate(text.splitlines())
            for ev in clean.parse_line(line, "pageable.log", i, 0.0)]
    assert derive_timeline(good).bad_durations == 0
    assert derive_timeline(good).bad_durations_note() is None


#: A log kept at WARN (`RUST_LOG=warn`): the INFO `is_pinned` lines are gone, the pinned pool's
#: fallback warnings (with the partition's span) are kept; one pool warning names no partition.
_WARN_LINES = (
    '2026-12-05T16:20:50.179056Z  WARN synthesize_partition{job_id="porep-1000-0" partition=3}: '
    "cuzk_core::pipeline: pinned pool checkout FAILED — falling back to unpinned "
    "num_constraints=130278869 pool_free=0 pool_total_gib=0",
    '2026-12-05T16:20:51.179056Z  WARN synthesize_partition{job_id="porep-1000-0" partition=4}: '
    "cuzk_core::pinned_pool: cudaHostAlloc failed size_gib=3.882613 cuda_err=2",
    "2026-12-05T16:20:52.179056Z  WARN cuzk_core::pinned_pool: cudaHostAlloc failed "
    "size_gib=3.882613 cuda_err=2",
)


def _parsed(lines: Iterable[str]) -> list[LogEvent]:
    parser = LogParser()
    return [e for i, line in enumerate(lines) for e in parser.parse_line(line, "cuzk", i, 0.0)]


def _on_gpu(job: str, partitions: Iterable[int]) -> list[LogEvent]:
    """Each partition's GPU_START and GPU_END (no SYNTH_START: no first wave is inferred)."""
    return [e for i, p in enumerate(partitions)
            for e in (_ev(100 + 2 * i, "timeline", "GPU_START", job, p, 0),
                      _ev(101 + 2 * i, "timeline", "GPU_END", job, p, 0,
                          fields={"gpu_ms": 1000}))]


def test_a_partition_a_pool_fallback_warning_names_reads_no_and_one_nothing_said_of_reads_dash(
) -> None:
    """In a log kept at WARN the table read `yes` for every partition with no word of pinning
    said, and `yes` for the very partition whose `checkout FAILED — falling back to unpinned`
    line named it: the fallback warnings say unpinned (in the cell, the count, the JSON and
    `parse --timeline` alike), a partition nothing was said of is `-`, and a pool warning that
    names no partition marks none."""
    run = derive_timeline([*_parsed(_WARN_LINES), *_on_gpu("porep-1000-0", (3, 4, 5))])
    assert [(p.partition, p.pinned_words) for p in run.partitions] == \
        [(3, "no"), (4, "no"), (5, "-")]
    assert run.unpinned == 2
    assert [_partition_json(p)["unpinned"] for p in run.partitions] == [True, True, None]
    assert "2 synthesised unpinned, 1 pinning not known (no is_pinned line read)" in \
        _partition_lines(run)[0]
    cells = [line.split()[8] for line in format_timeline(run).splitlines()[1:4]]
    assert cells == ["no", "no", "-"]


def test_a_partition_reads_yes_only_where_the_log_said_is_pinned_true() -> None:
    """`yes` is the log's word (`is_pinned=true`), never the want of one; `is_pinned=false`
    and a fallback warning are `no`, whichever comes first."""
    job = "porep-1000-1"
    lines = [
        f'2026-12-05T16:20:50.1Z  INFO synthesize_partition{{job_id="{job}" partition=0}}: '
        "cuzk_core::pipeline: partition synthesis complete partition=0 synth_ms=1849 "
        "is_pinned=true",
        f'2026-12-05T16:20:50.2Z  INFO synthesize_partition{{job_id="{job}" partition=1}}: '
        "cuzk_core::pipeline: partition synthesis complete partition=1 synth_ms=1849 "
        "is_pinned=false",
    ]
    run = derive_timeline([*_parsed(lines), *_on_gpu(job, (0, 1, 2))])
    assert [(p.partition, p.pinned_said, p.pinned_words) for p in run.partitions] == \
        [(0, True, "yes"), (1, False, "no"), (2, None, "-")]
    assert run.unpinned == 1
