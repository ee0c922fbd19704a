"""A report of a recording with a copy trace: the copies summed as they come, not held (issue 29:
memory bounded by the window, not the recording), each gap's pageable copy time found by a
sweep, a partition's copies re-publishing its gap once, compare's sides on disk."""

from __future__ import annotations

import random
import tracemalloc
from pathlib import Path
from statistics import median
from typing import Any

import pytest
from msgspec.structs import replace

from evaluation.simulate import simulate
from gapwatch.base import sorted_spool
from gapwatch.base.tuple_spool import TupleSpool
from gapwatch.config import Config
from gapwatch.core.codec import encode_json
from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import GapDetector
from gapwatch.core.evidence import RECENT_COPIES, EvidenceBuffer, union_s
from gapwatch.core.models import CopyRecord, Gap, GpuSample, Record
from gapwatch.offline import copy_sums, gap_spool
from gapwatch.offline.compare_windows import SlimGap
from gapwatch.offline.copy_sums import CopySums, PageableSweep
from gapwatch.offline.report import build_report
from gapwatch.sinks.recorder import write_recording


def _copy(rng: random.Random, gpu: int | None, t: float) -> CopyRecord:
    d = rng.choice([0.0, rng.uniform(0.001, 0.5)])
    return CopyRecord(
        start_wall_s=t, end_wall_s=t + d, bytes=rng.randrange(1, 1 << 30),
        direction=rng.choice(["h2d", "h2d", "d2h"]),
        src_kind=rng.choice(["pageable", "pinned", "managed"]),
        dst_kind=rng.choice(["device", "pageable", "pinned"]),
        gpu=gpu, cuda_device=0, stream_id=rng.randrange(8), context_id=1,
        correlation_id=rng.randrange(10**6), pid=7)


def _copy_table_of_a_list(copies: list[CopyRecord]) -> list[dict[str, Any]]:
    """The rows as the report made them from all copies held in a list (before this change)."""
    groups: dict[tuple[int | None, str, str], list[CopyRecord]] = {}
    for c in copies:
        groups.setdefault((c.gpu, c.direction, c.host_kind), []).append(c)
    rows = []
    for (gpu, direction, kind), cs in sorted(groups.items(), key=lambda kv: (
            -1 if kv[0][0] is None else kv[0][0], kv[0][1], kv[0][2])):
        rates = sorted(r for r in (c.bytes_per_s for c in cs) if r is not None)
        copy_s = 0.0
        for c in cs:
            copy_s += c.duration_s
        total = sum(c.bytes for c in cs)
        rows.append({"gpu": gpu, "direction": direction, "memory_kind": kind, "count": len(cs),
                     "bytes": total, "copy_s": copy_s,
                     "bytes_per_s": total / copy_s if copy_s > 0 else None,
                     "rate_min_bytes_per_s": rates[0] if rates else None,
                     "rate_median_bytes_per_s": median(rates) if rates else None,
                     "rate_max_bytes_per_s": rates[-1] if rates else None})
    return rows


def test_the_copy_table_summed_as_copies_come_equals_the_one_of_the_whole_list(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copy_sums, "RUN_ITEMS", 100)  # the rates spill to several runs
    rng = random.Random(5)
    copies = [_copy(rng, rng.choice([None, 0, 1, 3]), rng.uniform(0, 100)) for _ in range(3000)]
    sums = CopySums()
    for c in copies:
        sums.add(c)
    table = sums.table({0: (1.0, 0.5)}).json()  # as the report's JSON gives it
    assert table["rows"] == _copy_table_of_a_list(copies)
    assert (table["count"], table["bytes"]) == (3000, sum(c.bytes for c in copies))
    assert table["per_gpu"] == [{"gpu": 0, "gap_s": 1.0, "pageable_copy_s": 0.5,
                                 "pageable_share_of_gap_time": 0.5}]


def test_a_copy_table_without_gaps_gives_its_seconds_as_numbers_of_seconds() -> None:
    """No gap on any GPU: the overall gap time is 0.0 seconds in the JSON (as with gaps),
    not the integer 0 an empty sum gives, and its pageable share is not known."""
    doc = CopySums().table({}).json()
    assert encode_json(doc) == encode_json({
        "count": 0, "bytes": 0, "rows": [], "gap_s": 0.0, "pageable_copy_s": 0.0,
        "pageable_share_of_gap_time": None, "per_gpu": []})


@pytest.mark.parametrize("grid", [None, 0.5])
def test_each_gaps_pageable_time_from_the_sweep_is_the_union_over_all_its_gpus_copies(
        grid: float | None) -> None:
    """Bit for bit `union_s` over every copy of the gap's GPU; `grid`: times on a coarse
    grid, so that copies and gaps touch, repeat, last nothing or end before they start."""
    rng = random.Random(11)

    def t(x: float) -> float:
        return x if grid is None else round(x / grid) * grid

    spans = sorted(((rng.randrange(3), t(a), t(a + rng.uniform(-0.5, 3))) for a in
                    (rng.uniform(0, 500) for _ in range(4000))), key=lambda s: s[1])
    gaps = sorted(((rng.randrange(3), t(lo), t(lo + rng.uniform(0, 5))) for lo in
                   (rng.uniform(0, 520) for _ in range(600))), key=lambda g: g[1])
    sweep = PageableSweep(iter(spans))
    # Every copy of each GPU, listed once (not again for each of the 600 gaps).
    everything = {gpu: [(a, b) for g, a, b in spans if g == gpu] for gpu in range(3)}
    for gpu, lo, hi in gaps:
        assert sweep.time_in(gpu, lo, hi) == union_s(everything[gpu], lo, hi)


def test_the_sweep_lets_go_of_a_gapless_gpus_copies_once_no_gap_can_reach_them() -> None:
    # GPU 1 copies all along and never has a gap; GPU 0's gaps move the sweep on.
    spans = ((1, t * 0.01, t * 0.01 + 0.005) for t in range(200_000))
    sweep = PageableSweep(spans)
    for k in range(1, 200):
        sweep.time_in(0, k * 10.0, k * 10.0 + 1.0)
        assert sweep._held <= 2 * copy_sums.PRUNE_AT + 110  # a gap's reach, and its slack


def test_copies_as_long_as_the_recording_are_held_as_one_stretch() -> None:
    """A hostile trace of copies that each last an hour: a gap reads one stretch, not every
    copy (it looked through all of them at each gap)."""
    spans = ((0, k * 0.001, k * 0.001 + 3600.0) for k in range(100_000))
    sweep = PageableSweep(spans)
    assert sweep.time_in(0, 50.0, 51.0) == 1.0
    assert sweep._held == 1


def test_gaps_out_of_start_order_are_refused_not_answered_wrongly() -> None:
    sweep = PageableSweep(iter([(0, 1.0, 2.0)]))
    sweep.time_in(0, 5.0, 6.0)
    with pytest.raises(ValueError, match="start order"):
        sweep.time_in(0, 1.0, 2.0)


def _peak_bytes(path: Path) -> int:
    tracemalloc.start()
    try:
        build_report(path, Config(), [], workers=1)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_a_report_with_four_times_the_copies_holds_no_more_of_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The copies go to the sums and to spools on disk, not to a list: a report of 4x the
    length grows no more with a copy trace than without (a list of the copies grew ~260 bytes
    a copy)."""
    monkeypatch.setattr(copy_sums, "RUN_ITEMS", 2000)
    monkeypatch.setattr(gap_spool, "GAP_RUN_ITEMS", 50)  # the gaps, on disk as ever
    monkeypatch.setattr(sorted_spool, "BLOCK_ITEMS", 128)
    peaks: dict[bool, list[int]] = {False: [], True: []}
    for seconds in (15.0, 60.0):  # the shorter already spills its copies' rates to runs
        res = simulate("pageable", seed=3, duration_s=seconds, gpus=1, copies_per_partition=300)
        copies = sum(isinstance(r, CopyRecord) for r in res.records)
        for traced in (False, True):  # the same run, with and without its copies
            path = tmp_path / f"{seconds}-{traced}.jsonl"
            write_recording(path, res.header, (r for r in res.records
                                               if traced or not isinstance(r, CopyRecord)))
        del res
        for traced in (False, True):
            peaks[traced].append(_peak_bytes(tmp_path / f"{seconds}-{traced}.jsonl"))
    growth = {traced: p[1] - p[0] for traced, p in peaks.items()}
    assert copies > 10_000  # ~2.5 MB of records, had they been held
    # Before: +2.8 MB with the copies against +1.2 MB without; now +1.3 MB against +1.2 MB.
    assert growth[True] < growth[False] + 0.75e6, growth


def test_a_partitions_copies_arriving_together_republish_its_closed_gap_once() -> None:
    res = simulate("pageable", seed=2, duration_s=120.0, gpus=1, copies_per_partition=30)
    det = GapDetector(DetectorConfig(), list(res.header.gpus), period_s=0.1, live=False)
    versions: list[Gap] = []
    held: list[CopyRecord] = []
    for r in res.records:
        if isinstance(r, CopyRecord):
            held.append(r)
            continue
        if held:
            out = det.feed_copies(held)
            gaps = [g for g in out if isinstance(g, Gap)]
            assert len({g.gap_id for g in gaps}) == len(gaps)  # one version a gap
            versions += gaps
            held = []
        det.feed(r)
    assert any(v.copies.traced for v in versions)


def test_a_tuple_spool_gives_back_what_was_added_in_order_from_disk_every_pass(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from gapwatch.base import tuple_spool

    monkeypatch.setattr(tuple_spool, "RUN_ITEMS", 50)
    gaps = [SlimGap(k % 3, "pcie_starved", None if k % 2 else "no_work", k * 0.1, 0.25 + k)
            for k in range(500)]
    spool = TupleSpool[SlimGap](SlimGap, gaps)
    assert spool._spool.runs >= 9
    assert list(spool) == gaps and list(spool) == gaps and spool == gaps and len(spool) == 500
    ends = TupleSpool[tuple[int | None, float]](tuple[int | None, float], [(None, 1.5), (2, 3.0)])
    assert list(ends) == [(None, 1.5), (2, 3.0)]


def test_the_simulated_copy_trace_cuts_each_partitions_copy_into_copies_of_its_memory() -> None:
    pageable = simulate("pageable", seed=1, duration_s=30.0, gpus=2, copies_per_partition=3)
    chained = simulate("chained", seed=1, duration_s=30.0, gpus=2, copies_per_partition=3)
    kinds = {(c.direction, c.src_kind, c.dst_kind) for c in _copies(pageable.records)}
    assert kinds == {("h2d", "pageable", "device")}
    # cuzk's first wave is unpinned (its capacity hint is not cached yet); then the pool.
    assert {c.src_kind for c in _copies(chained.records)[-30:]} == {"pinned"}
    copies = _copies(pageable.records)
    assert len(copies) % 3 == 0 and {c.gpu for c in copies} == {0, 1}
    # The three of a partition follow one another on their worker's stream.
    for a, b, c in zip(copies[::3], copies[1::3], copies[2::3], strict=True):
        assert a.end_wall_s == b.start_wall_s and b.end_wall_s == c.start_wall_s
        assert a.stream_id == b.stream_id == c.stream_id and a.bytes == b.bytes == c.bytes
    # Each delivered after it ended, with the first GPU sample after, as a flush delivers it.
    latest = float("-inf")
    for r in pageable.records:
        if isinstance(r, GpuSample):
            latest = max(latest, r.t_wall_s)
        elif isinstance(r, CopyRecord):
            assert r.end_wall_s <= latest


def _copies(records: list[Record]) -> list[CopyRecord]:
    return [r for r in records if isinstance(r, CopyRecord)]


def test_a_gpus_recent_pinned_copies_are_its_own_window_not_crowded_out_by_another_gpus() -> None:
    """8 GPUs with tens of copies a partition make ~160 a second: a window of 4,096 shared by
    all held ~25 s of them, not the 120 s the pinned rate is over; and a report split by GPU
    needs each GPU's evidence to depend on its own copies."""
    ev = EvidenceBuffer(before_s=2.0)
    rng = random.Random(1)

    def pinned(gpu: int, t: float, size: int) -> CopyRecord:
        return replace(_copy(rng, gpu, t), start_wall_s=t, end_wall_s=t + 0.1, bytes=size,
                       direction="h2d", src_kind="pinned")

    ev.add_copy(pinned(0, 100.0, 5_000_000_000))  # GPU 0: 50 GB/s, once
    for k in range(RECENT_COPIES + 10):  # GPU 1: many since, at 1 GB/s
        ev.add_copy(pinned(1, 100.0 + k * 0.01, 100_000_000))
    assert ev.pinned_rate(0, 150.0) == pytest.approx(50e9)
    assert ev.pinned_rate(1, 150.0) == pytest.approx(1e9)


def test_a_live_session_republishes_a_closed_gap_once_per_datagram_of_copies() -> None:
    """A partition's copies come in one datagram, after the samples that closed its gap: the
    session hands them to the detector together (they re-published the gap once a copy)."""
    from evaluation.simulate import ListSink
    from gapwatch.engine.session import Session
    from gapwatch.engine.store import SeriesStore

    res = simulate("pageable", seed=2, duration_s=120.0, gpus=1, copies_per_partition=30)
    gpus = list(res.header.gpus)
    sink = ListSink()
    session = Session(res.header, SeriesStore(gpus, period_s=0.1, history_s=10.0),
                      detector=GapDetector(DetectorConfig(), gpus, period_s=0.1),
                      sinks=[sink])
    held: list[CopyRecord] = []
    versions_per_batch = []
    for r in res.records:
        if isinstance(r, CopyRecord):
            held.append(r)
            continue
        if held:
            before = len(sink.records)
            session.on_copies(held)
            gaps = [g for g in sink.records[before:] if isinstance(g, Gap)]
            versions_per_batch.append(len(gaps))
            assert len({g.gap_id for g in gaps}) == len(gaps)
            held = []
        session.on_record(r)
    session.close()
    assert max(versions_per_batch) >= 1  # copies did reach closed gaps
    copies = [r for r in sink.records if isinstance(r, CopyRecord)]
    assert len(copies) == sum(isinstance(r, CopyRecord) for r in res.records)


def test_a_replay_of_a_traced_recording_gives_the_gaps_the_report_gives(tmp_path: Path) -> None:
    """Replay feeds a run of copies together as the report does (and as a live datagram is),
    so the evidence of each gap is the report's; one by one, the pinned rate of a gap
    re-published mid-run differed."""
    from gapwatch.config import build_config
    from gapwatch.engine.runtime import build_runtime

    res = simulate("host-stall", seed=5, duration_s=150.0, gpus=2, copies_per_partition=5)
    path = tmp_path / "traced.jsonl"
    write_recording(path, res.header, res.records)
    rt = build_runtime(build_config({}), f"replay:{path}", speed=0)
    rt.start()
    try:
        assert rt.wait(60)
    finally:
        rt.stop()
    replayed = {g.gap_id: g for g in rt.store.snapshot().gaps if not g.is_open}
    reported = {g.gap_id: g for g in build_report(path, Config(), [], workers=1).gaps}
    assert len(reported) > 50 and replayed.keys() == reported.keys()
    assert any(g.copies.pinned_recent_bytes_per_s for g in reported.values())
    for gap_id, g in reported.items():
        assert (replayed[gap_id].hint, replayed[gap_id].copies) == (g.hint, g.copies), gap_id
