"""LogFollower: the real threads, from file lines to LogEvents and Notices."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from faults import until
from followed_logs import following

from gapwatch.config import LogsConfig
from gapwatch.core.models import LogEvent, Notice
from gapwatch.logs.follow import LogFollower


def test_follower_delivers_events_from_two_files_and_reports_state(tmp_path: Path) -> None:
    stdout_log, stderr_log = tmp_path / "out.log", tmp_path / "err.log"
    stdout_log.write_text("2026-11-30T09:06:26.553439Z  INFO cuzk_core::engine: old line\n")
    with following([stdout_log, stderr_log], LogsConfig(poll_ms=5)) as (follower, events,
                                                                          notices):
        with open(stderr_log, "a") as err, open(stdout_log, "a") as out:
            for line in ("CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=5",
                         "CUZK_TIMING: mutex_held_ms=8 total_start_fn_ms=9"):
                err.write(line + "\n")
            err.flush()
            out.write("2026-11-30T09:06:38.134140Z  INFO cuzk_core::engine: GPU_TIMING "
                      "spawn_blocking prove_start worker_id=1 partition=Some(4)\n")
            out.flush()
        assert until(lambda: any(e.kind == "cuzk_partition" for e in events))
        status = follower.status()
    kinds = [e.kind for e in events]
    assert "tracing" in kinds and kinds.count("cuzk_timing") == 2
    assert all(e.t_arrival_mono_ns is not None for e in events)
    assert not any(e.name == "old line" for e in events)  # started at the end
    assert [f.state for f in status.files] == ["following", "following"]
    assert status.lines == 3 and status.unparsed == 0 and status.attributed == 1
    assert any("has appeared; following it from its start" in n.message
                   for n in notices)  # err.log appeared


def test_a_failing_consumer_is_reported_and_tailing_goes_on(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("")
    notices: list[Notice] = []
    seen: list[str] = []

    def on_event(e: LogEvent) -> None:
        seen.append(e.raw)
        raise RuntimeError("consumer bug")

    follower = LogFollower([str(log)], LogsConfig(poll_ms=5), on_event, notices.append)
    follower.start()
    try:
        with open(log, "a") as fh:
            fh.write("one\ntwo\n")
        assert until(lambda: len(seen) == 2)
    finally:
        follower.stop()
    assert sum("consumer bug" in n.message for n in notices) == 2


_ONE_LINE = b"TIMELINE,5,GPU_START,j,worker=0,partition=2\n"


def _stdin_events(read_fd: int, write_fd: int | None = None) -> list[LogEvent]:
    """What a follower of stdin (`--log -`) gives of `read_fd` to its end (`write_fd`: a pipe's
    end, written `_ONE_LINE` and closed first); `read_fd` is closed."""
    events: list[LogEvent] = []
    follower = LogFollower(["-"], LogsConfig(poll_ms=5), events.append, stdin_fd=read_fd)
    follower.start()
    try:
        if write_fd is not None:
            os.write(write_fd, _ONE_LINE)
            os.close(write_fd)
        assert until(lambda: follower.status().files[0].state == "closed (end of input)")
    finally:
        follower.stop()
        os.close(read_fd)
    return events


def test_stdin_follower_stops_at_end_of_input() -> None:
    events = _stdin_events(*os.pipe())
    assert [(e.kind, e.partition, e.stream) for e in events] == [("timeline", 2, "-")]


def test_a_fifo_log_with_a_writer_is_followed_and_stop_returns(tmp_path: Path) -> None:
    fifo, other = tmp_path / "fifo.log", tmp_path / "other.log"
    os.mkfifo(fifo)
    other.write_text("")
    events: list[LogEvent] = []
    follower = LogFollower([str(fifo), str(other)], LogsConfig(poll_ms=5, from_start=True),
                           events.append)
    follower.start()
    writer = os.open(fifo, os.O_WRONLY)  # returns: the follower holds the reader end
    try:
        os.write(writer, b"TIMELINE,5,GPU_START,j,worker=0,partition=2\n")
        with open(other, "a") as fh:
            fh.write("TIMELINE,6,GPU_END,j,worker=0,partition=2\n")
        assert until(lambda: len(events) == 2)
    finally:
        os.close(writer)
        follower.stop()
    assert not any(t.is_alive() for t in follower.tailer._threads)
    assert sorted(e.name for e in events) == ["GPU_END", "GPU_START"]


def test_record_says_on_stderr_that_a_log_is_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    from gapwatch.cli import main

    logdir = tmp_path / "logs"
    logdir.mkdir()
    assert main(["record", "--source", "sim:chained", "--speed", "0", "--duration", "2",
                 "--quiet", "--out", str(tmp_path / "r.jsonl"), "--log", str(logdir)]) == 0
    err = capsys.readouterr().err
    assert f"log {logdir}: is a directory, not a log file" in err


def _from_start_then(log: Path, backlog_read: Callable[[LogEvent], bool], line: str,
                     line_read: Callable[[LogEvent], bool]) -> list[LogEvent]:
    """The events of following `log` from its start (`--from-start`): once one says its
    backlog was read (`backlog_read`), `line` is written to it, and followed until an event
    says it was read (`line_read`)."""
    events: list[LogEvent] = []
    lock = threading.Lock()

    def on_event(e: LogEvent) -> None:
        with lock:
            events.append(e)

    follower = LogFollower([str(log)], LogsConfig(poll_ms=5, from_start=True), on_event)
    follower.start()
    try:
        assert until(lambda: any(backlog_read(e) for e in events))
        with open(log, "a") as out:
            out.write(line + "\n")
        assert until(lambda: any(line_read(e) for e in events))
    finally:
        follower.stop()
    return events


def test_from_start_a_logs_backlog_is_timed_as_read_not_written_and_its_post_by_its_offsets(
        tmp_path: Path) -> None:
    """`--from-start` over a log whose `starting cuzk engine` line rotated away: its lines were
    read at once, and their arrival was taken for when they were written. A WinningPoSt of
    May, its `job enqueued` line timed by itself, its TIMELINE lines by that arrival, was LATE
    by a queue of months, an alert and `--on-event` for every PoSt of the backlog. The lines
    the file held are "backlog": the proof is timed by its offsets (late, as it was: 32 s in
    flight by its own lines); a line written after is "arrival" again."""
    from gapwatch.cuzk.watch import CuzkWatch

    data = Path(__file__).parent / "data" / "cuzk-upstream" / "post-late.log"
    log = tmp_path / "cuzk.log"
    log.write_text("".join(x + "\n" for x in data.read_text().splitlines()
                           if "starting cuzk engine" not in x))
    events = _from_start_then(
        log, lambda e: e.name == "GPU_END",
        "TIMELINE,60000,SYNTH_START,porep-1000-7,partition=0", lambda e: e.job_id == "porep-1000-7")
    timeline = [e for e in events if e.kind == "timeline"]
    assert {e.time_source for e in timeline[:-1]} == {"backlog"}
    assert timeline[-1].time_source == "arrival"  # written after following began
    watch = CuzkWatch()
    said = [p for e in events for p in watch.feed(e)] + watch.finish()
    done = [e.proof for e in said if e.proof is not None and e.proof.done]
    assert len(done) == 1 and done[0] is not None
    assert done[0].verdict == "late" and done[0].queue_s is None
    assert done[0].total_at_least_s == pytest.approx(32.0, abs=0.01)  # never months
    assert all((e.proof.queue_s or 0.0) < 60 for e in said if e.proof is not None)


def test_a_panic_at_the_end_of_the_backlog_is_placed_by_its_lines_not_the_live_line_after(
        tmp_path: Path) -> None:
    """A crash is a log's last word: its panic's lines end the backlog, and the line that
    closes the block comes live (the restarted daemon's). The panic took that line's
    `arrival` and was said at the reading's time, months after it; it is placed as the
    backlog's lines are, at the timed line before it (`around`)."""
    data = Path(__file__).parent / "data" / "cuzk-upstream" / "panic.log"
    lines = data.read_text().splitlines()
    cut = next(i for i, x in enumerate(lines) if x.startswith("note: run with"))
    log = tmp_path / "cuzk.log"
    log.write_text("".join(x + "\n" for x in lines[:cut + 1]))
    events = _from_start_then(
        log, lambda e: e.name == "GPU_START" and e.partition == 1,
        "2026-12-04T10:00:00.000000Z  INFO cuzk_daemon: cuzk-daemon starting",
        lambda e: e.kind == "panic")
    [panic] = [e for e in events if e.kind == "panic"]
    assert panic.time_source == "around"
    assert panic.t_wall_s < 1_778_700_000  # 2026-05-12, where its lines were, not December


def test_stdin_redirected_from_a_file_is_backlog_and_a_pipe_is_not(tmp_path: Path) -> None:
    """`--log - < cuzk.log`: every line was written before it was read, at once (its PoSt was
    LATE by a queue of months, as `--from-start` was); a pipe may be a live writer."""
    log = tmp_path / "cuzk.log"
    log.write_bytes(_ONE_LINE)
    assert [e.time_source for e in _stdin_events(os.open(log, os.O_RDONLY))] == ["backlog"]
    assert [e.time_source for e in _stdin_events(*os.pipe())] == ["arrival"]
