"""`replay FILE --log LOG`: the log parsed onto disk and read back at each pass of the replay, in
bounded memory, the events `report --log` feeds and no others (gapwatch.offline.replay_logs)."""

from __future__ import annotations

import gc
import os
import threading
import tracemalloc
from pathlib import Path

import pytest
from faults import until
from parsed_logs import parse_log_files
from session_fakes import KeptRecords
from shared_files import write_sim_with_log

from gapwatch.cli import main
from gapwatch.config import Config, build_config
from gapwatch.core.models import GpuSample, LogEvent, Notice
from gapwatch.engine.runtime import build_runtime
from gapwatch.logs.files import merge_by_time
from gapwatch.offline import gap_spool
from gapwatch.offline.replay_logs import LogPass
from gapwatch.offline.report import build_report


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_sim_with_log(tmp_path_factory.mktemp("replay-logs"), seed=3, duration_s=60,
                              gpus=2)


def _log_repeated(sim: tuple[Path, Path], folder: Path, times: int) -> Path:
    """The sim's log with each line written `times` times: `times` x the events at the same
    times, all inside the recording."""
    lines = sim[1].read_text().splitlines(keepends=True)
    out = folder / f"cuzk-x{times}.log"
    out.write_text("".join(line * times for line in lines))
    return out


def _held_and_peak(rec: Path, log: Path) -> tuple[int, int]:
    """Bytes a replay with `log` still holds once built, and its peak while its records are
    merged with one pass over the log's events, as the driver merges them (not fed to a
    session, whose store keeps a bounded history of its own)."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        rt = build_runtime(Config(), f"replay:{rec}", speed=0, log_paths=[str(log)])
        held = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.reset_peak()
        assert rt.replay is not None and rt.replay.logs is not None
        one_pass = rt.replay.logs.events()
        fed = sum(1 for r in merge_by_time(rt.replay.recording.records, one_pass,
                                           one_pass.after_end) if isinstance(r, LogEvent))
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    rt.stop()
    assert fed > 1000
    return held, peak


def test_a_replay_holds_no_more_of_a_long_log_than_of_a_short_one(
    sim: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A replay held its `--log` events in a list to the end (a day of 8 GPUs: ~6 GB); they now
    wait on disk, a run's block read at a time."""
    monkeypatch.setattr(gap_spool, "EVENT_RUN_ITEMS", 250)
    short, long = _log_repeated(sim, tmp_path, 1), _log_repeated(sim, tmp_path, 4)
    held_short, peak_short = _held_and_peak(sim[0], short)
    held_long, peak_long = _held_and_peak(sim[0], long)
    # Four times the events (~1 KB each: ~5 MB more if held) cost no more than noise: the runs
    # on disk cost their file objects (~1 KB each), a pass a block of a run or two.
    assert held_long - held_short < 1_000_000, (held_short, held_long)
    assert peak_long - peak_short < 2_000_000, (peak_short, peak_long)


def _another_days_log(log: Path, folder: Path) -> Path:
    """The tracing lines of `log` (each timed by itself) two days earlier."""
    other_day = folder / "yesterday.log"
    other_day.write_text("".join(line.replace("2026-11-30T", "2026-11-28T", 1)
                                 for line in log.read_text().splitlines(keepends=True)
                                 if line[:4].isdigit()))
    return other_day


def test_each_play_of_a_dashboard_replay_feeds_the_log_again_and_says_its_notes_again(
    sim: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A seek back plays the file again from its start: the log's events are read again from
    the spool's start (the same events as the log parsed whole), and the notes the store
    forgot with the seek are said again (they were said once for the replay's life)."""
    monkeypatch.setattr(gap_spool, "EVENT_RUN_ITEMS", 100)
    rec, log = sim
    other = _another_days_log(log, tmp_path)
    rt = build_runtime(build_config({"snapshot": {"dir": str(tmp_path)}}), f"replay:{rec}",
                       speed=0, log_paths=[str(log), str(other)])
    replay = rt.replay
    assert replay is not None and replay.logs is not None
    replay.interactive = True  # the dashboard's: it waits at the end for a seek back
    plays: list[int] = []
    events = replay.logs.events

    def counted() -> LogPass:
        plays.append(1)
        return events()

    monkeypatch.setattr(replay.logs, "events", counted)
    whole = parse_log_files([str(log)], Config())[0]
    rt.start()
    try:
        for play in (1, 2):
            assert until(lambda: len(plays) == play and replay.at_end)  # noqa: B023
            snap = rt.store.snapshot()
            assert [(e.t_wall_s, e.raw) for e in snap.log_events] == \
                [(e.t_wall_s, e.raw) for e in whole]
            assert [n for n in snap.notices if "not this recording's log" in n.message]
            start = replay.start_wall_s
            assert start is not None
            if play == 1:
                assert replay.seek_to(start) is None
    finally:
        rt.stop()


def test_a_replay_of_a_fifo_with_a_log_reads_the_fifo_once(
    sim: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """`replay <(zcat gw.jsonl.gz) --log LOG`: the log's parse read the recording again for
    its `/status` uptime, and the FIFO's second reader waited 10 s for nothing ("a FIFO that
    said nothing"); a FIFO is read once, by the replay, its log's TIMELINE placed by the log's
    own anchor line."""
    rec, log = sim
    fifo = tmp_path / "rec.fifo"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as f:
            f.write(rec.read_bytes())

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    assert main(["replay", str(fifo), "--headless", "--speed", "0", "--log", str(log)]) == 0
    writer.join(5)
    out = capsys.readouterr()
    assert "gaps: pcie_starved=" in out.out + out.err and "FIFO" not in out.err


def test_a_replay_with_another_days_log_feeds_none_of_it_and_says_so_as_the_report_does(
    sim: tuple[Path, Path], tmp_path: Path,
) -> None:
    """A log of another day gave the replay that day's causes and advice (the report had
    dropped it since `log_span`); the replay now says the report's words and feeds none of
    it."""
    rec, log = sim
    other_day = _another_days_log(log, tmp_path)
    rt = build_runtime(Config(), f"replay:{rec}", speed=0, log_paths=[str(other_day)])
    rt.start()
    assert rt.wait(60)
    rt.stop()
    snap = rt.store.snapshot()
    assert not [e for e in snap.log_events if isinstance(e, LogEvent)]
    said = [n.message for n in snap.notices]
    report = build_report(rec, Config(), [str(other_day)], workers=1)
    notes = [w for w in report.warnings if w.startswith("--log ")]
    assert notes and all(note in said for note in notes)
    assert "not this recording's log" in notes[0]


def test_a_log_of_another_day_is_said_as_the_replay_starts_not_at_its_end(
    sim: tuple[Path, Path], tmp_path: Path,
) -> None:
    """Said when the pass ended, the note came an hour late for an hour played at the
    recorded pace (or never, after a seek back first): a file that ends before the recording
    is known before any event is read."""
    rec, log = sim
    rt = build_runtime(Config(), f"replay:{rec}", speed=0,
                       log_paths=[str(log), str(_another_days_log(log, tmp_path))])
    kept = KeptRecords()
    rt.session.add_sink(kept)
    rt.start()
    assert rt.wait(60)
    rt.stop()
    notes = [i for i, r in enumerate(kept.records)
             if isinstance(r, Notice) and "not this recording's log" in r.message]
    first_sample = next(i for i, r in enumerate(kept.records) if isinstance(r, GpuSample))
    assert len(notes) == 1 and notes[0] < first_sample


def test_a_replay_with_no_room_for_its_logs_spool_says_so_not_that_the_log_is_unreadable(
    sim: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A full or missing temporary folder is said as the report says it, one line, exit 2 (it
    would read "cannot read log /tmp/...", blaming a log that reads fine)."""
    import tempfile

    monkeypatch.setattr(gap_spool, "EVENT_RUN_ITEMS", 1)  # the first events go to disk
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    rec, log = sim
    assert main(["replay", str(rec), "--headless", "--speed", "0", "--log", str(log)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"no room for its temporary files: {tmp_path / 'gone'} (temporary files" in err
    assert "cannot read log" not in err


def test_the_logs_spool_is_not_closed_under_a_replay_thread_still_reading_it(
    sim: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The runtime closed the spool after the replay's stop had waited its 2 s, whether its
    thread had ended or not: a record that took longer left it reading a closed file (or, the
    descriptor reused, another file's bytes). It is closed once nothing reads it."""
    rec, log = sim
    rt = build_runtime(Config(), f"replay:{rec}", speed=0, log_paths=[str(log)])
    replay = rt.replay
    assert replay is not None and replay.logs is not None
    release = threading.Event()
    reading = threading.Thread(target=release.wait, daemon=True)  # a record taking long
    monkeypatch.setattr(replay, "_thread", reading)
    monkeypatch.setattr(replay, "stop", lambda timeout_s=2.0: None)  # its wait, over
    reading.start()
    try:
        rt.stop()
        assert sum(1 for _ in replay.logs.events()) > 1000  # still open: still readable
    finally:
        release.set()
        reading.join(5)
    replay.logs.close()
