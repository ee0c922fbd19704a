"""What the copy trace changes in gap evidence, hints, reports and replays (core/evidence,
core/hints, offline/report), on synthetic data (tests/copytrace_fakes.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from copytrace_fakes import WALL0, copies, header, records, write_case

from gapwatch.config import Config
from gapwatch.core.detector import GapDetector
from gapwatch.core.evidence import summarise_copies, union_s
from gapwatch.core.ledger import GapLedger
from gapwatch.core.models import CopyRecord, Gap
from gapwatch.engine.session import Session
from gapwatch.engine.store import SeriesStore
from gapwatch.offline.report import build_report, to_json


def live_gaps(with_copies: bool = True) -> list[Gap]:
    h = header()
    store = SeriesStore(list(h.gpus), period_s=0.1)
    session = Session(h, store, GapDetector(Config().detector, list(h.gpus), period_s=0.1))
    for r in records(with_copies):
        session.on_record(r)
    session.close()
    return list(store.snapshot().gaps)


def test_a_starved_gap_states_the_pageable_copies_that_ran_in_it_with_their_rate_and_stream() -> None:
    gaps = live_gaps()
    first = gaps[0]
    assert first.kind == "pcie_starved"
    c = first.copies
    assert c.traced is True and c.memory_kind == "pageable"
    pg = c.kinds()["pageable"]
    assert pg.count == 3 and pg.bytes == 3 << 30 and pg.streams == [13]
    assert pg.bytes_per_s is not None and 1.7e9 < pg.bytes_per_s < 1.9e9
    assert "3.0 GiB copied from pageable host memory at 1.8 GB/s on stream 13" in first.hint
    assert "inferred" not in first.hint


def test_the_late_copy_republishes_the_closed_gap_with_it() -> None:
    # The last pageable copy (ends at 3.85 s) arrives at 4.05 s, after the gap closed at ~4 s.
    gaps = live_gaps()
    assert gaps[0].copies.kinds()["pageable"].count == 3


def test_a_quiet_gap_after_quick_pinned_copies_names_them_and_compares_nothing_falsely() -> None:
    second = live_gaps()[1]
    assert second.copies.memory_kind == "pinned"
    assert "copied from pinned host memory" in second.hint


def test_without_a_copy_trace_the_hint_says_the_memory_kind_is_inferred() -> None:
    first = live_gaps(with_copies=False)[0]
    assert first.copies.traced is False
    assert first.copies.memory_kind == "pageable"
    assert first.copies.memory_kind_source == "inferred from rate: no copy trace"
    assert "memory kind inferred from rate: no copy trace" in first.hint


def test_union_counts_overlapping_copies_once_and_clips_to_the_window() -> None:
    assert union_s([(0, 2), (1, 3), (5, 6)], 0.5, 5.5) == 2.5 + 0.5


def test_mixed_copies_name_no_single_kind() -> None:
    cs = [c for c in copies() if c.src_kind == "pageable"][:1] + [
        CopyRecord(WALL0 + 2.1, WALL0 + 2.7, 1 << 30, "h2d", "pinned", "device", 0, 0, 14, 1, 9,
                   1)]
    s = summarise_copies(cs, WALL0, WALL0 + 4, WALL0 + 2, WALL0 + 4)
    assert s.memory_kind == "mixed"


def test_a_recording_with_copies_replays_into_the_same_gaps_and_reports_a_copy_table(
        tmp_path: Path) -> None:
    case = write_case(tmp_path / "case")
    report = to_json(build_report(case / "rec.jsonl.gz", Config(), workers=1))
    starved = [g for g in report["gaps"] if g["kind"] == "pcie_starved"]
    assert starved and starved[0]["copies"]["memory_kind"] == "pageable"
    assert starved[0]["hint"] == live_gaps()[0].hint  # offline and live say the same
    table = report["copies"]
    kinds = {(r["direction"], r["memory_kind"]): r for r in table["rows"]}
    assert kinds[("h2d", "pageable")]["count"] == 3
    assert kinds[("h2d", "pinned")]["rate_median_bytes_per_s"] > 50e9
    # 1.8 s of pageable copies in 4 s of gaps (the second gap had only quick pinned copies).
    assert 0.4 < table["pageable_share_of_gap_time"] < 0.5


def test_report_text_has_the_copy_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gapwatch.cli import main

    case = write_case(tmp_path / "case")
    assert main(["report", str(case / "rec.jsonl.gz")]) == 0
    text = capsys.readouterr().out
    assert "Copies (copy trace): 6, 6.0 GiB" in text
    assert "H2D  pageable" in text and "pageable copies ran during" in text


def test_every_output_agrees_the_ledger_keeps_one_version_per_gap() -> None:
    ledger = GapLedger()
    for g in live_gaps():
        ledger.add(g)
    assert len(ledger.closed()) == 2


def test_perfetto_has_one_copy_track_per_stream_with_a_slice_per_copy() -> None:
    from gapwatch.offline.perfetto import TraceBuilder

    tb = TraceBuilder(header())
    tb.extend(records())
    events = tb.trace()["traceEvents"]
    slices = [e for e in events if e.get("cat") == "copy"]
    assert len(slices) == 6
    assert slices[0]["name"] == "H2D pageable 1.0 GiB"
    tracks = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert {"copies, stream 13", "copies, stream 14"} <= tracks


def test_metrics_count_copies_and_bytes_by_gpu_direction_and_memory_kind() -> None:
    from gapwatch.sinks.metrics import MetricsSink

    sink = MetricsSink()
    for c in copies():
        sink.on_record(c)
    counts = sink.copy_counts()
    assert counts.copies[("0", "h2d", "pageable")] == 3
    assert counts.copy_bytes[("0", "h2d", "pinned")] == 3 << 30
