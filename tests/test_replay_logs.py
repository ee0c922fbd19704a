"""`replay FILE --log LOG`: the log parsed onto disk and read back at each pass of the replay, in
bounded memory, the events `report --log` feeds and no others (gapwatch.offline.replay_logs)."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import pytest
from shared_files import write_sim_with_log

from gapwatch.config import Config
from gapwatch.core.models import LogEvent
from gapwatch.engine.runtime import build_runtime
from gapwatch.logs.files import parse_log_files
from gapwatch.offline import gap_spool
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


def _held_after_build(rec: Path, log: Path) -> int:
    """Bytes still allocated once a replay with `log` is built (before it plays)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        rt = build_runtime(Config(), f"replay:{rec}", speed=0, log_paths=[str(log)])
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    rt.stop()
    return held


def test_a_replay_holds_no_more_of_a_long_log_than_of_a_short_one(
    sim: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A replay held its `--log` events in a list to the end (a day of 8 GPUs: ~6 GB); they now
    wait on disk, a run's block read at a time."""
    monkeypatch.setattr(gap_spool, "EVENT_RUN_ITEMS", 500)
    short, long = _log_repeated(sim, tmp_path, 2), _log_repeated(sim, tmp_path, 8)
    n_short = len(parse_log_files([str(short)], Config())[0])
    assert n_short > 2000  # several runs of the spool, even for the short one
    held_short, held_long = _held_after_build(sim[0], short), _held_after_build(sim[0], long)
    # Four times the events (~1 KB each: ~6 MB more if held) cost no more than noise.
    assert held_long - held_short < 1_000_000, (held_short, held_long)


def test_a_replay_feeds_every_event_of_its_log_at_each_pass(
    sim: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each play of the file (the first, and one after a seek back) reads the spool again from
    its start: the same events as the log parsed whole, in its order."""
    monkeypatch.setattr(gap_spool, "EVENT_RUN_ITEMS", 100)
    rec, log = sim
    rt = build_runtime(Config(), f"replay:{rec}", speed=0, log_paths=[str(log)])
    try:
        assert rt.replay is not None and rt.replay.logs is not None
        whole = parse_log_files([str(log)], Config())[0]
        for _play in range(2):
            one_pass = list(rt.replay.logs.events())
            assert [(e.t_wall_s, e.raw) for e in one_pass] == \
                [(e.t_wall_s, e.raw) for e in whole]
    finally:
        rt.stop()


def test_a_replay_with_another_days_log_feeds_none_of_it_and_says_so_as_the_report_does(
    sim: tuple[Path, Path], tmp_path: Path,
) -> None:
    """A log of another day gave the replay that day's causes and advice (the report had
    dropped it since `log_span`); the replay now says the report's words and feeds none of
    it."""
    rec, log = sim
    other_day = tmp_path / "yesterday.log"
    lines = [line.replace("2026-11-30T", "2026-11-28T", 1)
             for line in log.read_text().splitlines(keepends=True)
             if line[:4].isdigit()]  # the tracing lines, each timed by itself
    other_day.write_text("".join(lines))
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


def test_a_replay_with_no_room_for_its_logs_spool_says_so_not_that_the_log_is_unreadable(
    sim: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A full or missing temporary folder is said as the report says it, one line, exit 2 (it
    would read "cannot read log /tmp/...", blaming a log that reads fine)."""
    import tempfile

    from gapwatch.cli import main

    monkeypatch.setattr(gap_spool, "EVENT_RUN_ITEMS", 1)  # the first events go to disk
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    rec, log = sim
    assert main(["replay", str(rec), "--headless", "--speed", "0", "--log", str(log)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"no room for its temporary files: {tmp_path / 'gone'} (temporary files" in err
    assert "cannot read log" not in err
