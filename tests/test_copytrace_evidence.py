"""What the copy trace changes in gap evidence, hints, reports and replays (core/evidence,
core/hints, offline/report), on synthetic data (tests/copytrace_fakes.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from copytrace_fakes import WALL0, copies, copy, header, records, write_case

from gapwatch.config import Config
from gapwatch.core.detector import GapDetector
from gapwatch.core.evidence import summarise_copies, union_s
from gapwatch.core.ledger import GapLedger
from gapwatch.core.models import CopyRecord, Gap
from gapwatch.core.units import GIB
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
    assert ("3.0 GiB copied from pageable host memory during the gap at 1.8 GB/s on stream 13"
            in first.hint)
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


#: A gap at 10.0-10.5 s and its evidence window from 8.0 s (`evidence_before_s` 2 s).
GAP_LO, GAP_HI, WINDOW_LO = WALL0 + 10.0, WALL0 + 10.5, WALL0 + 8.0
PART = 3 * GIB // 2  # one 1.5 GiB buffer of a/b/c, as the load generator copies them


def _said(cs: list[CopyRecord], kind: str, rx: float) -> str:
    from gapwatch.core.evidence_types import NO_HOST
    from gapwatch.core.explain import Evidence, GapFacts, hint_of

    return hint_of(GapFacts(kind, GAP_HI - GAP_LO, rx, 0.0, 63e9, "high", since_s=WINDOW_LO),
                   Evidence(NO_HOST, [], summarise_copies(cs, WINDOW_LO, GAP_HI, GAP_LO,
                                                          GAP_HI)))


def test_a_gaps_copy_words_say_what_moved_during_it_and_the_copies_before_it_as_before_it(
        ) -> None:
    """The H100 copy-trace run's host_stall gap at 23:40:18.676 (0.50 s, PCIe 95 MB/s, its
    pageable copies' `in_gap_s` 0.0) said "7.5 GiB copied from pageable host memory at 3.5 GB/s
    on streams 13, 17; SMs idle 0.5 s with PCIe quiet (95 MB/s)": the copies of the 2 s before
    it, said as the gap's, beside "PCIe quiet". Its starved gaps said 10.5 GiB where 1.6-2.4 GB
    crossed PCIe in them. A hint says what moved during the gap (each copy's bytes by the share
    of it inside the gap), and what moved before it only as before it."""
    # Five pageable copies on two streams, all ended before the gap: none ran in it.
    ended = [copy(8.2 + 0.45 * (i // 2), 8.65 + 0.45 * (i // 2), "pageable",
                  stream=13 + 4 * (i % 2),
                  nbytes=PART, corr=i) for i in range(5)]
    assert max(c.end_wall_s for c in ended) < GAP_LO
    quiet = _said(ended, "host_stall", 95e6)
    assert quiet.startswith("no traced copy during the gap; 7.5 GiB copied from pageable host "
                            "memory in the 2 s before it, at 3.6 GB/s on streams 13, 17; "
                            "SMs idle 0.5 s with PCIe quiet (95 MB/s)"), quiet
    # Two copies over the gap's edges, half of each inside it: 1.5 GiB moved during it, of the
    # 7.5 GiB of the copies that ran in the window.
    into = ended[:3] + [copy(9.8, 10.2, "pageable", stream=13, nbytes=PART, corr=7),
                        copy(10.3, 10.7, "pageable", stream=17, nbytes=PART, corr=8)]
    pg = summarise_copies(into, WINDOW_LO, GAP_HI, GAP_LO, GAP_HI).kinds()["pageable"]
    assert pg.bytes == 5 * PART and pg.in_gap_bytes == PART
    assert pg.in_gap_copy_s == pytest.approx(0.4)
    starved = _said(into, "pcie_starved", 3.2e9)
    assert starved.startswith("1.5 GiB copied from pageable host memory during the gap at "
                              "4.0 GB/s (7.5 GiB in copies that ran in it and the 2 s before "
                              "it, on streams 13, 17); SMs idle 0.5 s while H2D ran at 3.2 "
                              "GB/s"), starved
    # Pinned copies that ended before a starved gap are not its slow copies.
    pinned = _said([copy(9.0, 9.03, "pinned", stream=14)], "pcie_starved", 3.2e9)
    assert pinned.startswith("no traced copy during the gap: another process's traffic?; 1.0 "
                             "GiB copied from pinned host memory in the 2 s before it, at 35.8 "
                             "GB/s on stream 14; SMs idle"), pinned
    assert "pinned, yet slow" not in pinned
    # All of the window's copies inside the gap: said once, as the gap's.
    inside = [copy(10.05, 10.45, "pageable", nbytes=PART)]
    assert _said(inside, "pcie_starved", 3.2e9).startswith(
        "1.5 GiB copied from pageable host memory during the gap at 4.0 GB/s on stream 13; ")


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


def test_a_copy_of_another_kind_inside_the_gap_is_the_gaps_though_the_window_was_mostly_pageable(
        ) -> None:
    """A long pageable copy ended before the gap, a pinned one ran inside it: the window's copy
    time was mostly pageable (its `memory_kind`), and the hint, reading that kind alone, said
    "no traced copy during the gap: another process's traffic?" of a gap with 6 GiB moving in
    it. The kind that ran in the gap is the gap's."""
    cs = [copy(8.2, 9.9, "pageable", nbytes=6 * GIB, corr=1),
          copy(10.1, 10.4, "pinned", stream=17, nbytes=6 * GIB, corr=2)]
    said = _said(cs, "pcie_starved", 20e9)
    assert "no traced copy during the gap" not in said, said
    assert said.startswith("6.0 GiB copied from pinned host memory during the gap"), said


def test_an_open_gap_whose_copy_still_runs_is_not_said_another_processs_traffic() -> None:
    """The demo's open starved gap (0.35 s so far, PCIe at 4.3 GB/s) said "no traced copy
    during the gap: another process's traffic?": its own copy was still running, and a copy is
    traced as it ends. Open, the hint says none has ended in it yet; closed, the question
    stays for a gap no copy ran in."""
    from gapwatch.core.hints import traced_copy_words

    ended = [copy(8.2, 9.9, "pageable", nbytes=6 * GIB, corr=1)]
    ev = summarise_copies(ended, WINDOW_LO, GAP_HI, GAP_LO, GAP_HI)
    live = traced_copy_words(ev, "pcie_starved", is_open=True)
    assert live.startswith("no traced copy during the gap yet (copies are traced as they end);")
    assert "another process" not in live
    assert traced_copy_words(ev, "pcie_starved").startswith(
        "no traced copy during the gap: another process's traffic?")


def test_the_gaps_memory_kind_is_that_of_the_copies_that_ran_in_it() -> None:
    """Its words, cause and BREAKDOWN witness read the gap's memory kind: a long pageable copy
    before the gap and a pinned one in it made it "pageable" (the window's copy time) while its
    hint named the pinned copy. The copies that ran in the gap name it; where none did (an open
    gap's copy is traced as it ends), the window's do."""
    cs = [copy(8.2, 9.9, "pageable", nbytes=6 * GIB, corr=1),
          copy(10.1, 10.4, "pinned", stream=17, nbytes=6 * GIB, corr=2)]
    assert summarise_copies(cs, WINDOW_LO, GAP_HI, GAP_LO, GAP_HI).memory_kind == "pinned"
    before_only = summarise_copies(cs[:1], WINDOW_LO, GAP_HI, GAP_LO, GAP_HI)
    assert before_only.memory_kind == "pageable"
