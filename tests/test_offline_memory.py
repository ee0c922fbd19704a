"""Offline outputs in bounded memory (issue 29, item 11): the detection loop lets closed gaps go
to a spool on disk once final, the `--log` events wait on disk, the Perfetto export streams its
events through sorted runs on disk, and `report --json` writes its gaps and partition rows one at
a time; all give the same bytes as holding everything at once."""

from __future__ import annotations

import gc
import heapq
import io
import random
import tempfile
import tracemalloc
from pathlib import Path

import msgspec
import pytest
from msgspec.structs import replace

from evaluation.simulate import SimResult, simulate
from gapwatch.base import sorted_spool
from gapwatch.base.sorted_spool import SortedSpool
from gapwatch.cli import main
from gapwatch.config import Config
from gapwatch.core.codec import encode_json
from gapwatch.core.config import DetectorConfig
from gapwatch.core.models import LogEvent
from gapwatch.core.sizes import RAW_CHARS, TEXT_CHARS, bounded_event
from gapwatch.offline import detect, gap_spool, log_split, startup_lines
from gapwatch.offline.detect import SETTLE_EVERY, Detected, detect_records
from gapwatch.offline.gap_spool import GapSpool
from gapwatch.offline.log_around import LogAround
from gapwatch.offline.perfetto import TraceBuilder
from gapwatch.offline.report import ReportData, build_report, to_json, write_json
from gapwatch.sinks.recorder import write_recording
from gapwatch.sources import gzip_lines
from gapwatch.sources.time_window import TimeWindow


def test_a_spool_gives_back_items_by_time_ties_in_the_order_added() -> None:
    rng = random.Random(7)
    items = [(float(rng.randrange(50)) / 4, b"%d" % i) for i in range(5000)]
    spool = SortedSpool(run_items=333)
    for t, payload in items:
        spool.add(t, payload)
    try:
        assert list(spool.sorted()) == sorted(items, key=lambda item: item[0])
    finally:
        spool.close()


def test_a_spool_holds_no_more_than_a_run_in_memory_and_leaves_no_files(tmp_path: Path) -> None:
    folder = str(tmp_path)
    spool = SortedSpool(run_items=100, folder=folder)
    for i in range(1050):
        spool.add(float(-i), b"x")
        assert len(spool._items) < 100
    assert len(list(spool.sorted())) == 1050
    spool.close()
    assert list(Path(folder).iterdir()) == []


def _trace_bytes(sim: SimResult, run_items: int, monkeypatch: pytest.MonkeyPatch) -> bytes:
    monkeypatch.setattr(sorted_spool, "RUN_ITEMS", run_items)
    builder = TraceBuilder(sim.header)
    builder.extend(sim.records)
    out = io.BytesIO()
    builder.write(out)
    return out.getvalue()


def test_the_perfetto_export_spilled_to_runs_writes_the_same_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One simulation for both traces (it was simulated again for each: the same records).
    sim = simulate("pageable", seed=4, duration_s=120.0, gpus=2, status_period_s=1.0)
    whole = _trace_bytes(sim, 10**9, monkeypatch)
    assert _trace_bytes(sim, 997, monkeypatch) == whole and len(whole) > 100_000


def test_export_of_a_recording_streams_to_the_same_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = Path(__file__).parent / "data" / "h200-e2e" / "pageable"
    logs = ["--log", str(data / "stdout.log"), "--log", str(data / "stderr.log")]
    args = ["export", str(data / "rec.jsonl.gz"), *logs, "--format", "perfetto", "--out"]
    assert main([*args, str(tmp_path / "whole.json")]) == 0
    monkeypatch.setattr(sorted_spool, "RUN_ITEMS", 211)
    assert main([*args, str(tmp_path / "runs.json")]) == 0
    assert (tmp_path / "runs.json").read_bytes() == (tmp_path / "whole.json").read_bytes()


@pytest.mark.parametrize("case", ["pageable", "chained", "host-stall-status"])
def test_report_json_written_gap_by_gap_is_the_whole_documents_bytes(case: str) -> None:
    """`report --json` encodes its gaps and partition rows one at a time (a day's document as
    dicts, bytes, formatted bytes and text took ~4 copies of it): the same bytes as the whole
    document."""
    data = Path(__file__).parent / "data" / "h200-e2e" / case
    report = build_report(data / "rec.jsonl.gz", Config(),
                          [str(data / "stdout.log"), str(data / "stderr.log")])
    parts: list[str] = []
    write_json(report, parts.append)
    assert "".join(parts) == encode_json(to_json(report), indent=2).decode()
    rows = len(report.partitions.partitions) if report.partitions is not None else None
    # Each list: what comes before it, an item a part, its end; then the rest.
    assert len(parts) == len(report.gaps) + 2 + (0 if rows is None else rows + 2) + 1


def _detect(duration_s: float) -> Detected:
    sim = simulate("pageable", seed=5, duration_s=duration_s, gpus=2)
    return detect_records(sim.header, sim.records, DetectorConfig())


def test_the_detection_loop_holds_as_many_gaps_for_a_long_recording_as_for_a_short_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Closed gaps go to the spool once final: the loop holds a settling batch and what the
    detector may still revise, however long the recording (a report of a day held them all)."""
    monkeypatch.setattr(gap_spool, "GAP_RUN_ITEMS", 50)
    # A settling batch of 64, not 256: the same bound four times smaller, reached by 2 and 8
    # minutes of two GPUs instead of 5 and 20 (simulating them was most of the test's time).
    settle_every = SETTLE_EVERY // 4
    monkeypatch.setattr(detect, "SETTLE_EVERY", settle_every)
    short, long = _detect(120.0), _detect(480.0)
    assert len(long.gaps) > 3 * len(short.gaps) > 3 * settle_every
    assert long.gaps.runs > short.gaps.runs > 0  # on disk beyond 50
    # A settling batch and the detector's listening window (32 gaps), not the run's gaps.
    assert short.most_gaps_held <= long.most_gaps_held <= settle_every + 64 < len(long.gaps) / 3


def _pageable_report(monkeypatch: pytest.MonkeyPatch, settle_every: int,
                     run_items: int) -> tuple[bytes, ReportData]:
    monkeypatch.setattr(detect, "SETTLE_EVERY", settle_every)
    monkeypatch.setattr(gap_spool, "GAP_RUN_ITEMS", run_items)
    monkeypatch.setattr(gap_spool, "EVENT_RUN_ITEMS", run_items)
    # The copy trace's copies come late (after their flush): they re-publish closed gaps.
    data = Path(__file__).parent / "data" / "h200-copytrace" / "pageable"
    logs = [str(p) for p in (data / "stdout.log", data / "stderr.log") if p.exists()]
    report = build_report(data / "rec.jsonl.gz", Config(), logs, workers=1)
    return encode_json(to_json(report), indent=2), report


def test_gaps_let_go_as_soon_as_final_keep_their_late_evidence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Settled after every closed gap (each final version found as early as it can be), with
    the gaps and the log events spilled to disk every 3: the same report as holding them all,
    the late copies' evidence included."""
    whole, _ = _pageable_report(monkeypatch, 10**9, 10**9)
    early, report = _pageable_report(monkeypatch, 1, 3)
    assert isinstance(report.gaps, GapSpool) and report.gaps.runs > 0
    assert early == whole
    assert all(g.copies.kinds() for g in report.gaps)  # the late copies reached every gap


def test_a_spool_that_cannot_be_written_names_its_folder() -> None:
    missing = str(Path(tempfile.gettempdir()) / "gapwatch-no-such-folder" / "x")
    spool = SortedSpool(run_items=2, folder=missing)
    spool.add(1.0, b"a")
    with pytest.raises(sorted_spool.SpoolError) as caught:
        spool.add(2.0, b"b")
    assert caught.value.filename.startswith(missing)
    assert "temporary files of the report; TMPDIR says where" in caught.value.filename


def test_a_report_with_no_room_for_its_spools_is_one_line_and_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """A full or missing temporary folder was "cannot read log: [Errno 28] ..." (no log given)."""
    run = simulate("pageable", seed=2, duration_s=60.0, gpus=1)
    path = tmp_path / "rec.jsonl"
    write_recording(path, run.header, run.records)
    monkeypatch.setattr(gap_spool, "GAP_RUN_ITEMS", 1)  # the first gaps go to disk
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"no room for its temporary files: {tmp_path / 'gone'} (temporary files" in err


@pytest.mark.parametrize(("ties", "block_items", "block_bytes"),
                         [(0, 7, 1 << 20), (2, 64, 300), (0, 1024, 1)])
def test_a_spool_merged_a_batch_at_a_time_gives_the_order_of_one_sort(
    ties: int, block_items: int, block_bytes: int, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Runs of several blocks (some a single payload larger than a block), equal times across
    runs, runs that overlap a little (a log almost in order) and wholly (shuffled items)."""
    monkeypatch.setattr(sorted_spool, "BLOCK_ITEMS", block_items)
    monkeypatch.setattr(sorted_spool, "BLOCK_BYTES", block_bytes)
    rng = random.Random(ties * 1000 + block_items)
    near = [(i / 10 + rng.random() * 3, (rng.randrange(3), rng.randrange(3))[:ties],
             b"n%d" % i + b"x" * rng.choice((0, 0, 400))) for i in range(3000)]
    shuffled = [(float(rng.randrange(40)), (rng.randrange(2), 0)[:ties], b"s%d" % i)
                for i in range(2000)]
    for items in (near, shuffled, near[:5]):
        spool = SortedSpool(run_items=251, ties=ties)
        for t, tie, payload in items:
            spool.add(t, payload, tie)
        try:
            want = [(t, p) for t, _tie, p in sorted(items, key=lambda x: (x[0], x[1]))]
            assert list(spool.sorted()) == want
            assert list(spool.sorted()) == want  # read again from the start
            assert [p for b in spool.batches() for _k, p in b] == [p for _t, p in want]
        finally:
            spool.close()


def _merge_peak_bytes(runs: int, shuffled: bool = False) -> int:
    """Peak traced memory while reading back a spool of `runs` runs added in time order (as a
    log's events and a report's gaps are), or in no order, each of 4 blocks of ~64 KB of
    payload."""
    spool = SortedSpool(run_items=256)
    times = [i / 10 for i in range(runs * 256)]
    if shuffled:
        random.Random(runs).shuffle(times)
    for t in times:
        spool.add(t, b"%012.1f" % t + b"x" * 1000)
    try:
        gc.collect()
        tracemalloc.start()
        try:
            got = [payload[:12] for batch in spool.batches() for _key, payload in batch]
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert got == [b"%012.1f" % t for t in sorted(times)]
        return peak
    finally:
        spool.close()


def test_reading_back_runs_added_in_time_order_holds_a_block_of_the_current_run_not_of_each(
) -> None:
    """A week of `--log` events is ~1,300 runs: the merge read a block of every run before its
    first item, ~1.3 MB each in every process reading the spool; a run now waits on disk until
    the merge reaches its first key."""
    few, many = _merge_peak_bytes(3), _merge_peak_bytes(60)
    assert many < 2 * few, (few, many)  # a block of each run: ~20x


def test_reading_back_runs_added_in_no_order_holds_a_block_of_at_most_max_depth_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Items in no order (a hostile log's times, the partition table's operations keyed by
    partition) make runs that all overlap: beyond `MAX_DEPTH` of them, the runs of a level
    are merged into one, so the merge holds a block of at most ~`MAX_DEPTH` runs, not of
    every run; the order is kept, equal keys included."""
    monkeypatch.setattr(sorted_spool, "MAX_DEPTH", 4)
    few, many = _merge_peak_bytes(4, shuffled=True), _merge_peak_bytes(60, shuffled=True)
    assert many < 2.5 * few, (few, many)  # a block of each run: ~15x


def test_a_spool_merging_its_runs_keeps_equal_keys_in_the_order_added(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sorted_spool, "MAX_DEPTH", 2)
    spool = SortedSpool(run_items=10, ties=1)
    rng = random.Random(7)
    added = [(float(rng.randrange(5)), rng.randrange(3), b"%d" % i) for i in range(500)]
    for t, tie, payload in added:
        spool.add(t, payload, (tie,))
    try:
        assert spool.runs < 10  # 50 runs written, merged level by level
        want = [p for _t, _tie, p in sorted(added, key=lambda a: (a[0], a[1]))]
        assert [p for _t, p in spool.sorted()] == want
        assert [p for _t, p in spool.sorted()] == want  # read again, from the start
    finally:
        spool.close()


def test_a_gap_spool_hands_its_gaps_over_encoded_as_it_holds_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a split report's worker sends (`GapSpool.encoded`), read back (`decode_gap`): the
    gaps in the spool's order, equal to those it gives."""
    monkeypatch.setattr(gap_spool, "GAP_RUN_ITEMS", 50)
    found = _detect(300.0)
    assert found.gaps.runs > 0
    assert [gap_spool.decode_gap(p) for p in found.gaps.encoded()] == list(found.gaps)


def test_an_event_spool_gives_each_event_with_the_detectors_bounded_copy() -> None:
    """Judged once as added (`EventSpool.bounded`): the event as added, and `bounded_event`
    of it, the same object where nothing is cut; hostile text of every kind cut, in runs on
    disk and in memory."""
    big = "x" * (RAW_CHARS + 1)
    hostile = [
        LogEvent(1.0, "line", "tracing", "ok", "line", fields={"k": "v"}),
        LogEvent(2.0, "line", "tracing", big[:TEXT_CHARS + 1], big),
        LogEvent(3.0, "line", "tracing", "n", "line", job_id=big),
        LogEvent(4.0, "line", "tracing", "n", "line", fields={big: 1, "k": big, "n": 2.5}),
        LogEvent(5.0, "line", "tracing", "n", "line", fields={f"f{i}": i for i in range(100)}),
        LogEvent(6.0, "line", "tracing", "n", big[:RAW_CHARS]),
        # At the limits, and just past them beside a long line (judged without `bounded_event`
        # where the encoded bytes less the line's are within `TEXT_CHARS`).
        LogEvent(7.0, "line", "tracing", "n", big[:RAW_CHARS], fields={"k": "é" * TEXT_CHARS}),
        LogEvent(8.0, "line", "tracing", "n", big[:RAW_CHARS], fields={"k": "y" * TEXT_CHARS}),
        LogEvent(9.0, "line", "tracing", "n", big[:RAW_CHARS],
                 fields={"k": "y" * (TEXT_CHARS + 1)}),
        LogEvent(10.0, "line", "tracing", "n", "l", fields={f"f{i}": i for i in range(64)}),
        LogEvent(11.0, "line", "tracing", "n", "l", fields={f"f{i}": i for i in range(65)}),
    ]
    for run_items in (2, 1000):
        spool = gap_spool.EventSpool(run_items=run_items)
        for ev in reversed(hostile):
            spool.add(ev)
        try:
            pairs = list(spool.bounded())
            assert [ev for ev, _kept in pairs] == hostile == list(spool)
            assert [kept for _ev, kept in pairs] == [bounded_event(ev) for ev in hostile]
            assert [kept is ev for ev, kept in pairs] == [True, False, False, False, False, True,
                                                           True, True, False, True, False]
        finally:
            spool.close()


def test_a_gap_renumbered_in_its_bytes_is_the_gap_renumbered_and_encoded_again() -> None:
    """`renumbered` against decode, replace, encode: ids of every msgpack integer size (and
    their edges), gaps with evidence and without; a payload laid out otherwise (a map with
    another first key) takes the long way to the same bytes. `gap_key` reads what orders it."""
    gaps = list(_detect(120.0).gaps)[:40]
    assert gaps
    sizes = (0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63 - 1, -1, -32, -33,
             -129, -(2**31) - 1)
    for g in gaps:
        for old in (g.gap_id, *sizes[::3]):
            payload = gap_spool.encode_gap(replace(g, gap_id=old))
            key = gap_spool.gap_key(payload)
            assert (key.gap_id, key.gpu, key.start_s) == (old, g.gpu, g.start_s)
            for new in sizes:
                want = gap_spool.encode_gap(replace(g, gap_id=new))
                assert gap_spool.renumbered(payload, new) == want
    fields = msgspec.to_builtins(replace(gaps[0], gap_id=3))
    other = msgspec.msgpack.encode({"gap_id": fields.pop("gap_id"), **fields})
    assert gap_spool.decode_gap(other).gap_id == 3
    assert gap_spool.renumbered(other, 9) == gap_spool.encode_gap(replace(gaps[0], gap_id=9))


def _chatty_window(tmp_path: Path, sim: SimResult, chatty: int) -> tuple[Path, TimeWindow]:
    """The simulated prover `sim` with its log recorded inside, and `chatty` more debug lines
    (RUST_LOG=debug) in the 30 s before a window from +40 s on."""
    since_s = sim.header.started_wall_s + 40.0
    chatter = [LogEvent(since_s - 30.0 + 29.0 * i / chatty, "line", "tracing",
                        f"chatty line {i}", f"DEBUG cuzk_core::engine: chatty line {i} "
                        f"some_field=value{i}", "cuzk.log", "DEBUG",
                        fields={"some_field": f"value{i}"})
               for i in range(chatty)]
    path = tmp_path / f"chatty-{chatty}.jsonl"
    write_recording(path, sim.header, heapq.merge(
        sim.records, chatter, key=lambda r: getattr(r, "t_wall_s", 0.0)))
    return path, TimeWindow(since_s, None, "+40s")


def _window_report(path: Path, window: TimeWindow) -> tuple[int, bytes]:
    """The peak memory a window's report of `path` traced, and its document."""
    gc.collect()
    tracemalloc.start()
    try:
        report = build_report(path, Config(), workers=1, window=window)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, _window_document(report)


def _window_document(report: ReportData) -> bytes:
    """A window's report as its document, the bytes `gapwatch report --json` writes."""
    return encode_json(to_json(report), indent=2)


def test_a_windows_report_holds_the_log_read_around_it_on_disk_not_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A window of a recording holding its log reads the log events 5 minutes each side of it
    (`startup_lines.recorded_around`); they were held in two lists, ~1 KB an event: a debug
    log's 400,000 lines before a window took its report from 53 MB to 477 MB. They wait on
    disk now, as `--log` events do (runs of 1,000 here): three times the lines before the
    window, the same memory held; the document is the same as with them all in memory."""
    monkeypatch.setattr(gap_spool, "EVENT_RUN_ITEMS", 1000)
    # The reading's own bounds, made small: the bytes looked at for log events where the
    # window starts (32 MB, read at once), the search back for the daemon's start (4 MB at
    # a time) and a plain file's chunk (1 MB): in files this small, each held the whole
    # file, its lines with it. The lines are more than the detector keeps of the recent
    # ones (2,048, cut).
    monkeypatch.setattr(startup_lines, "LOG_PROBE_BYTES", 1 << 16)
    monkeypatch.setattr(log_split, "SCAN_BYTES", 1 << 16)
    monkeypatch.setattr(gzip_lines, "PLAIN_CHUNK_BYTES", 1 << 16)
    sim = simulate("pageable", seed=5, duration_s=60.0, gpus=1)
    few, many = (_chatty_window(tmp_path, sim, n) for n in (5_000, 15_000))
    peak_few, doc_few = _window_report(*few)
    peak_many, _doc = _window_report(*many)
    # Held in lists: ~750 bytes more a line (7.5 MB); on disk, a run's worth (and a few
    # bytes a run on disk).
    assert peak_many - peak_few < 10_000 * 50, (peak_few, peak_many)
    monkeypatch.setattr(gap_spool, "EVENT_RUN_ITEMS", 10**9)  # all held in memory
    # Only its document is compared: read without tracing (which made it ~6x slower).
    path, window = few
    assert _window_document(build_report(path, Config(), workers=1, window=window)) == doc_few


def test_the_log_read_around_a_window_is_read_back_as_recorded_at_each_pass(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every worker of a split report and every play of a replay (a seek back) reads the log
    around the window again: on disk, each pass gives the events in the order the recording
    holds them (not sorted by time: as the lists gave them), the daemon's startup lines
    before the first event of the margin once."""
    monkeypatch.setattr(gap_spool, "EVENT_RUN_ITEMS", 3)

    def ev(t: float, name: str) -> LogEvent:
        return LogEvent(t, "line", "tracing", name, name)

    startup = [ev(1.0, "memory budget"), ev(2.0, "starting cuzk engine"), ev(9.0, "workers")]
    lead = [ev(t, f"lead {i}") for i, t in enumerate([5.0, 7.0, 6.0, 8.0, 9.0, 12.0, 11.0])]
    trail = [ev(t, f"trail {i}") for i, t in enumerate([40.0, 39.5, 41.0, 42.0])]
    around = LogAround(startup)
    for e in lead:
        around.add_before(e)
    for e in trail:
        around.add_after(e)
    try:
        assert around.runs > 2 and around.spooled
        for _pass in range(2):
            assert list(around.before()) == [*startup[:2], *lead]
            assert list(around.after()) == trail
    finally:
        around.close()
    assert LogAround(startup) and not LogAround(startup).spooled
    assert list(LogAround(startup).before()) == startup and not LogAround()
