"""A panic followed by silence is said at once, live: the process it killed writes no line after
it (Rust writes its `note:` line after a process's first panic only, and cuzk is gone), so the
reader's clock, not a later line, closes its block (`LogParser.due`) and its wait for cuzk's
`task panicked` line (`CuzkWatch.at`). Driven by a fake clock and the tailer's passes called
by hand: no sleeps, no timing thresholds."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from faults import until
from live_log_lines import RECORDER, stamp, started
from parsed_logs import offline_events, watched_events
from session_fakes import KeptRecords

from gapwatch.base.clock import FakeClock
from gapwatch.config import LogsConfig
from gapwatch.core.models import GpuInfo, LogEvent, ProverEvent, SessionHeader
from gapwatch.cuzk.errors import PANIC_PAIR_S
from gapwatch.cuzk.panics import CONTINUE_S, QUIET_S
from gapwatch.cuzk.watch import CuzkWatch
from gapwatch.engine.events import EventHook
from gapwatch.engine.session import Session
from gapwatch.engine.store import SeriesStore
from gapwatch.logs.follow import LogFollower
from gapwatch.logs.parse import LogParser
from gapwatch.logs.tail import Tailer
from gapwatch.sinks.metrics import MetricsSink
from gapwatch.sinks.prover_event_metrics import families

T0_S = 1_796_000_000.0
HEADER = SessionHeader(gapwatch_version="t", host="box", source="sim", started_wall_s=T0_S,
                       started_mono_ns=0, period_ms=100.0,
                       gpus=[GpuInfo(index=0, link_bytes_per_s=63e9)])
#: supraseal-c2's CUDA error panic as Rust's default hook writes it (src/lib.rs:316): a
#: process's first panic ends with the `note:` line, a later one without it.
PANIC = ["thread 'tokio-runtime-worker' panicked at "
         "/root/.cargo/git/checkouts/curio/extern/supraseal-c2/src/lib.rs:316:9:",
         'cudaGetLastError()@/root/.cargo/registry/src/sppark-0.1.14/ntt/kernels/'
         'gs_mixed_radix_wide.cu:220 failed: "out of memory"']
NOTE = "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"




def _second_panic(parser: LogParser, t_s: float) -> list[LogEvent]:
    """A run's start lines, then the process's second panic (no `note:` line), read live: its
    lines arrive at `t_s`."""
    out: list[LogEvent] = []
    for line in started(t_s - 5.0):
        out += parser.parse_line(line, "cuzk.log", 1, t_s - 5.0)
    for line in PANIC:
        out += parser.parse_line(line, "cuzk.log", 2, t_s)
    return out


def test_a_panic_no_line_follows_is_said_by_the_readers_clock_as_a_later_line_says_it() -> None:
    """It was said only when the restarted daemon's first line came (after systemd's
    RestartSec), or never. Said once `QUIET_S` passed with no line, the same event a later line
    closing it gives."""
    parser = LogParser()
    assert [e.kind for e in _second_panic(parser, T0_S)] == ["tracing", "tracing"]
    assert parser.due(T0_S + QUIET_S / 2) == []  # a backtrace's lines may still come
    [panic] = parser.due(T0_S + QUIET_S)
    assert parser.due(T0_S + 10 * QUIET_S) == [] and parser.flush() == []  # said once

    by_line = LogParser()
    _second_panic(by_line, T0_S)
    [same] = [e for e in by_line.parse_line(started(T0_S + 20.0)[0], "cuzk.log", 3,
                                            T0_S + 20.0) if e.kind == "panic"]
    assert panic == same
    assert panic.time_source == "arrival" and panic.t_wall_s == T0_S
    assert panic.fields["cuda_error"] == "out of memory" and panic.fields["lines"] == 2


def test_a_note_line_ends_the_block_at_the_readers_next_look_unless_the_next_line_places_it(
) -> None:
    """The `note:` line is a panic's last: followed live, said at the next look, not at the
    next line. A panic placed by the line after it (a backlog's, nothing timed before it)
    waits `QUIET_S` for that line, as before."""
    parser = LogParser()
    _second_panic(parser, T0_S)
    parser.parse_line(NOTE, "cuzk.log", 3, T0_S)
    [panic] = parser.due(T0_S)
    assert panic.kind == "panic" and "note:" not in str(panic.fields["message"])

    backlog = LogParser()
    for line in [*PANIC, NOTE]:
        backlog.parse_line(line, "cuzk.log", 1, T0_S, backlog=True)
    assert backlog.due(T0_S) == []
    [alone] = backlog.due(T0_S + QUIET_S)
    assert alone.time_source == "backlog"


def test_a_backlog_panic_still_being_read_is_at_the_time_its_event_will_have() -> None:
    """A followed backlog's panic after a timed line is placed by that line ("around"), not by
    when it was read. While it is still being read, the time told to what waits for it
    (`panic_being_read_s`: cuzk's line pairs within `PANIC_PAIR_S` of it) was its reading's,
    minutes after its own: cuzk's line, written at the panic, was compared against the wrong
    time and said alone."""
    parser = LogParser()
    for line in started(T0_S):
        parser.parse_line(line, "cuzk.log", 1, T0_S + 600.0, backlog=True)
    for line in PANIC:
        parser.parse_line(line, "cuzk.log", 2, T0_S + 600.0, backlog=True)
    assert parser.panic_being_read_s() == T0_S
    [panic] = parser.flush()
    assert (panic.time_source, panic.t_wall_s) == ("around", T0_S)


def _lines_at(path: Path, lines: list[str]) -> None:
    with open(path, "a") as f:
        f.write("".join(line + "\n" for line in lines))


def _counted_errors(metrics: MetricsSink) -> float:
    return sum(s.value for f in families(metrics.copy_counts().prover) for s in f.samples
               if s.name == "gapwatch_prover_events_total" and s.labels.get("kind") == "error")


def test_followed_live_a_panic_then_silence_is_said_runs_the_hook_and_is_counted_in_time(
        tmp_path: Path) -> None:
    """explore9 #1: a cuzk log followed by `record --log`, a first panic (its `note:` line
    and cuzk's `GPU prove start task panicked` line), then the process's second (no `note:`,
    no cuzk line: the process is gone) and nothing more. `--on-event` ran for it only after
    systemd's RestartSec, with the restart's first line, never without one, nor did /metrics
    count it. Now said by the reader's clock: the panic once `QUIET_S` passed with no line, the error once its wait for
    cuzk's line (`PANIC_PAIR_S`) is over, with no later line; in the words the report gives."""
    log = tmp_path / "cuzk.log"
    log.write_text("")
    clock = FakeClock(start_wall_s=T0_S)
    metrics, kept = MetricsSink(), KeptRecords()
    hooked = tmp_path / "hook.jsonl"
    (tmp_path / "rec.py").write_text(RECORDER)
    hook = EventHook([sys.executable, str(tmp_path / "rec.py"), str(hooked)], min_interval_s=0)
    session = Session(HEADER, SeriesStore(HEADER.gpus, 0.1), sinks=[kept, metrics, hook],
                      watch=CuzkWatch())
    follower = LogFollower([str(log)], LogsConfig(), session.on_log_event, session.on_notice,
                           clock, on_clock=session.on_reader_clock)
    passes = follower.tailer.poll_once  # the tailer thread's loop body, called by hand

    def at(dt_s: float) -> None:  # the clock moved on to T0 + dt_s, then a pass
        clock.advance_ns(round((T0_S + dt_s - clock.wall_s()) * 1e9))
        passes()

    def errors() -> list[ProverEvent]:
        return [r for r in kept.records if isinstance(r, ProverEvent) and r.kind == "error"]

    hook.start()
    try:
        passes()  # opens the log at its end
        written: list[str] = []
        for part in (started(T0_S), [*PANIC, NOTE], [
                f"{stamp(T0_S)} ERROR gpu_worker{{worker_id=0 gpu=0 job_id=porep-1000-90 "
                "proof_kind=porep-c2 batch_size=1 partition=Some(0)}: cuzk_core::engine: "
                'GPU prove start task panicked error=task 41 panicked with message "x"']):
            _lines_at(log, part)
            written += part
        at(0.0)
        assert len(errors()) == 1  # the first: its note, then cuzk's line, one incident
        _lines_at(log, PANIC)  # the second, at T0 + 4 s; then the process is gone
        written += PANIC
        at(4.0)
        assert [r.kind for r in kept.records if isinstance(r, LogEvent)][-1] == "tracing"
        at(4.0 + QUIET_S)
        assert [r.kind for r in kept.records if isinstance(r, LogEvent)][-1] == "panic"
        assert len(errors()) == 1  # cuzk's line for it may still come
        at(4.0 + PANIC_PAIR_S + QUIET_S)
        assert len(errors()) == 2 and _counted_errors(metrics) == 2
    finally:
        hook.stop()
    said = errors()[1]
    assert said.message.startswith("panic in /root/.cargo/git/checkouts/curio/extern/"
                                   "supraseal-c2/src/lib.rs:316:9: cudaGetLastError()")
    assert said.t_wall_s == T0_S + 4.0
    runs = [json.loads(x) for x in hooked.read_text().splitlines()]
    assert [r["GAPWATCH_EVENT"] for r in runs] == ["gpu_error", "gpu_error"]
    assert runs[1]["GAPWATCH_LINE"] == said.message
    # The report of the same lines says it in the same words (its time: the line before it).
    report = [e for e in watched_events(offline_events(written)) if e.kind == "error"]
    assert [e.message for e in report] == [e.message for e in errors()]


def test_piped_to_stdin_a_panic_then_silence_is_said_by_the_readers_clock() -> None:
    """`journalctl -f -u cuzk | gapwatch record --log -`: the stdin reader's waits are the
    clock there (it has no pass over files to tick it)."""
    read_fd, write_fd = os.pipe()
    clock = FakeClock(start_wall_s=T0_S)
    events: list[LogEvent] = []
    follower = LogFollower(["-"], LogsConfig(poll_ms=5), events.append, clock=clock,
                           stdin_fd=read_fd)
    follower.start()
    try:
        os.write(write_fd, "".join(line + "\n" for line in PANIC).encode())
        assert until(lambda: follower.status().lines == len(PANIC))
        assert not events  # its block is open: a line of it may still come
        clock.advance_ns(int(QUIET_S * 1e9))
        assert until(lambda: [e.kind for e in events] == ["panic"])
    finally:
        os.close(write_fd)
        follower.stop()
        os.close(read_fd)
    assert events[0].t_wall_s == T0_S and events[0].fields["cuda_error"] == "out of memory"


def _eight_mib_ending_in_a_panic() -> bytes:
    """A run's start lines, filler, then a panic and its `note:` line: 8 MiB, one read's worth
    (`Tailer`), the panic at its very end."""
    panic = "".join(line + "\n" for line in [*PANIC, NOTE]).encode()
    filler = b"x" * 8191 + b"\n"
    head = b"".join(x.encode() + b"\n" for x in started(T0_S))
    room = (8 << 20) - len(head) - len(panic)
    pad = b"y" * (room % len(filler) - 1) + b"\n" if room % len(filler) else b""
    return head + filler * (room // len(filler)) + pad + panic


def _slow_consumer(session: Session, clock: FakeClock) -> Callable[[LogEvent], None]:
    """The session's log consumer, each event moving `clock` on: parsing a read of 8 MiB
    takes seconds (1024 events take 10 `PANIC_PAIR_S`)."""
    def consume(e: LogEvent) -> None:
        session.on_log_event(e)
        clock.advance_ns(int(10 * PANIC_PAIR_S * 1e9 / 1024))
    return consume


def test_a_backlog_read_in_pieces_is_no_silence_its_panic_is_closed_by_its_own_line(
        tmp_path: Path) -> None:
    """`--from-start` reads 8 MiB of a file a pass: a panic at the end of one read is not
    closed by the clock, however long parsing that read took (its lines' arrival is the
    read's), before the next read brings the line after it (cuzk's `task panicked`): one
    incident, not a lone panic and a lone line."""
    log = tmp_path / "cuzk.log"
    error = (f"{stamp(T0_S)} ERROR gpu_worker{{worker_id=0 gpu=0 job_id=porep-1000-90 "
             "proof_kind=porep-c2 batch_size=1 partition=Some(0)}: cuzk_core::engine: "
             'GPU prove start task panicked error=task 41 panicked with message "x"\n')
    log.write_bytes(_eight_mib_ending_in_a_panic() + error.encode())
    clock = FakeClock(start_wall_s=T0_S)
    session = Session(HEADER, SeriesStore(HEADER.gpus, 0.1), watch=CuzkWatch())
    kept = KeptRecords()
    session.add_sink(kept)

    follower = LogFollower([str(log)], LogsConfig(from_start=True),
                           _slow_consumer(session, clock), clock=clock,
                           on_clock=session.on_reader_clock)
    follower.tailer.poll_once()
    assert follower.tailer.reading_backlog()
    assert not [r for r in kept.records if isinstance(r, LogEvent) and r.kind == "panic"]
    follower.tailer.poll_once()
    session.finish()
    _said_as_one_error(kept.records)


def _said_as_one_error(records: list[object]) -> None:
    """cuzk's `task panicked` line and its panic said as one error, its panic's words in it."""
    errors = [r for r in records if isinstance(r, ProverEvent) and r.kind == "error"]
    assert [e.message.split(":")[0] for e in errors] == [
        "GPU prove start task panicked job porep-1000-90 partition 0 GPU 0"]
    assert "its panic: panic in" in errors[0].message


def _frames(count: int) -> list[str]:
    """A short backtrace's frames as Rust's hook writes them (one line each here)."""
    return [f"  {i}: cuzk_core::engine::frame_{i}" for i in range(count)]


#: The last line of a short (`RUST_BACKTRACE=1`) backtrace (std's `sys/backtrace.rs`).
BACKTRACE_END = ("note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose "
                 "backtrace.")


def test_a_backtrace_whose_frames_come_late_is_read_whole_not_cut_by_the_readers_clock(
        tmp_path: Path) -> None:
    """review5 panic-slow-backtrace: `RUST_BACKTRACE=1`, the frames written 1.5 s after
    `stack backtrace:` (the first frame's symbols load the binary's debug info). The clock
    closed the block after `QUIET_S` with no line: a panic of 3 lines and 13 `unparsed` ones.
    A pending backtrace waits `CONTINUE_S` (the bound its own lines always had to join it);
    its end line ends it, said at the reader's next look."""
    log = tmp_path / "cuzk.log"
    log.write_text("")
    clock = FakeClock(start_wall_s=T0_S)
    events: list[LogEvent] = []
    follower = LogFollower([str(log)], LogsConfig(), events.append, clock=clock,
                           on_clock=lambda _t, _panic_s: None)

    def at(dt_s: float) -> None:
        clock.advance_ns(round((T0_S + dt_s - clock.wall_s()) * 1e9))
        follower.tailer.poll_once()

    follower.tailer.poll_once()
    _lines_at(log, started(T0_S))
    at(0.0)
    _lines_at(log, [*PANIC, "stack backtrace:"])
    for dt_s in (0.1, 0.6, 1.2, 1.5):  # idle passes while the symbols load
        at(dt_s)
    assert [e.kind for e in events] == ["tracing", "tracing"]  # the block still open
    _lines_at(log, [*_frames(12), BACKTRACE_END])
    at(1.6)
    assert [e.kind for e in events] == ["tracing", "tracing", "panic"]
    assert events[-1].fields["lines"] == 2 + 1 + 12 + 1
    at(5.0)
    assert follower.parser.flush() == [] and len(events) == 3


def test_a_full_backtrace_has_no_end_line_its_block_ends_by_the_continuation_bound() -> None:
    """`RUST_BACKTRACE=full` writes no line after its frames: the block ends `CONTINUE_S`
    after its latest line, by the clock or by another stream's line alike (one rule,
    `PanicBlock.ended`); before that a line of its own stream joins it."""
    parser = LogParser()
    _second_panic(parser, T0_S)
    parser.parse_line("stack backtrace:", "cuzk.log", 3, T0_S)
    assert parser.due(T0_S + CONTINUE_S / 2) == []
    assert parser.parse_line(started(T0_S + 10.0)[0], "other.log", 4, T0_S + 10.0)[0].kind \
        == "tracing"  # another stream's line, a backtrace pending: not its end
    assert parser.parse_line(_frames(1)[0], "cuzk.log", 5, T0_S + 20.0) == []
    assert parser.due(T0_S + 20.0 + CONTINUE_S / 2) == []
    [panic] = parser.due(T0_S + 20.0 + CONTINUE_S)
    assert panic.fields["lines"] == 2 + 1 + 1


def _task_panicked(t_s: float) -> str:
    """cuzk's line for the panic (engine.rs:3302), in its GPU worker's span."""
    return (f"{stamp(t_s)} ERROR gpu_worker{{worker_id=0 gpu=0 job_id=porep-1000-90 "
            "proof_kind=porep-c2 batch_size=1 partition=Some(0)}: cuzk_core::engine: "
            'GPU prove start task panicked error=task 41 panicked with message "x"')


def test_a_log_followed_live_that_got_8_mib_ahead_is_no_silence_one_incident_is_one_error(
        tmp_path: Path) -> None:
    """review5 panic-lag: followed live (not `--from-start`), the log got more than 8 MiB
    ahead of the reader (a burst, or gapwatch stalled); the panic and its `note:` line end one
    read, cuzk's `task panicked` line starts the next. Parsing the first read took seconds:
    the clock after that pass said the panic alone, the next pass cuzk's line alone (two
    errors). The lines not read yet are no silence: the reader's clock is when its latest
    pass whose reads were not cut began (`Tailer.read_to`)."""
    log = tmp_path / "cuzk.log"
    log.write_text("")
    clock = FakeClock(start_wall_s=T0_S)
    session = Session(HEADER, SeriesStore(HEADER.gpus, 0.1), watch=CuzkWatch())
    kept = KeptRecords()
    session.add_sink(kept)

    follower = LogFollower([str(log)], LogsConfig(), _slow_consumer(session, clock), clock=clock,
                           on_clock=session.on_reader_clock)
    follower.tailer.poll_once()  # opened at its (empty) end: followed live
    opened_at = follower.tailer.read_to()
    with open(log, "ab") as f:  # written while the reader was busy
        f.write(_eight_mib_ending_in_a_panic() + (_task_panicked(T0_S) + "\n").encode())
    follower.tailer.poll_once()  # 8 MiB: the panic and its note, not cuzk's line
    assert clock.wall_s() - T0_S > PANIC_PAIR_S and follower.tailer.read_to() == opened_at
    follower.tailer.poll_once()
    session.finish()
    _said_as_one_error(kept.records)


def test_cuzks_line_waits_while_its_panics_backtrace_is_still_being_read(
        tmp_path: Path) -> None:
    """review5 panic-backtrace-pair: `RUST_BACKTRACE=1`, the panic on stderr, cuzk's line on
    stdout at once, the frames every 0.5 s for 4 s (symbols resolved as written). cuzk's line
    was said alone `PANIC_PAIR_S` after it arrived, the panic's block still open, then the
    panic alone: two errors (the report: one); and so by data time, as cuzk's other lines go on
    on stdout. Neither wait says a half alone while the panic the reader is still reading may
    be its other half (`Incidents`): one error, said once the backtrace ended."""
    out, err = tmp_path / "stdout.log", tmp_path / "stderr.log"
    out.write_text("")
    err.write_text("")
    clock = FakeClock(start_wall_s=T0_S)
    session = Session(HEADER, SeriesStore(HEADER.gpus, 0.1), watch=CuzkWatch())
    kept = KeptRecords()
    session.add_sink(kept)
    follower = LogFollower([str(out), str(err)], LogsConfig(), session.on_log_event,
                           session.on_notice, clock, on_clock=session.on_reader_clock)

    def at(dt_s: float) -> None:
        clock.advance_ns(round((T0_S + dt_s - clock.wall_s()) * 1e9))
        follower.tailer.poll_once()

    def errors() -> list[ProverEvent]:
        return [r for r in kept.records if isinstance(r, ProverEvent) and r.kind == "error"]

    follower.tailer.poll_once()
    _lines_at(out, started(T0_S - 10))
    at(0.0)
    _lines_at(err, [*PANIC, "stack backtrace:"])
    _lines_at(out, [_task_panicked(T0_S)])
    at(0.05)
    frames = _frames(8)
    for i, frame in enumerate(frames):  # a frame every 0.5 s while symbols resolve
        _lines_at(err, [frame])
        _lines_at(out, [f"{stamp(T0_S + 0.5 * (i + 1))}  INFO cuzk_core::engine: "
                        "synthesis done"])  # the daemon's other work goes on
        at(0.5 * (i + 1))
    assert clock.wall_s() - T0_S > PANIC_PAIR_S and errors() == []  # the panic still read
    _lines_at(err, [BACKTRACE_END])
    at(4.5)
    at(4.5 + 2 * PANIC_PAIR_S)
    [error] = errors()
    assert error.message.startswith("GPU prove start task panicked job porep-1000-90")
    assert "its panic: panic in" in error.message


def test_stdin_read_in_full_chunks_is_no_silence_until_a_read_takes_all_it_held() -> None:
    """`journalctl -f | gapwatch record --log -` that got ahead: a read that filled its chunk
    may have left lines in the pipe, so the reader's clock (`Tailer.read_to`) stays where it
    was until a read takes all the pipe held."""
    read_fd, write_fd = os.pipe()
    clock = FakeClock(start_wall_s=T0_S)
    tailer = Tailer(["-"], lambda *_: None, clock=clock, stdin_fd=read_fd)
    try:
        assert tailer.read_stdin_once(0.0)  # nothing yet: read to now
        first = tailer.read_to()
        assert first == (clock.monotonic_ns(), T0_S)
        os.write(write_fd, b"x" * ((1 << 16) - 1) + b"\n")  # a full chunk (and a full pipe)
        clock.advance_ns(int(PANIC_PAIR_S * 1e9))
        assert tailer.read_stdin_once(0.0) and tailer.read_to() == first
        clock.advance_ns(int(PANIC_PAIR_S * 1e9))
        assert tailer.read_stdin_once(0.0)  # nothing more: all it held was read
        assert tailer.read_to() == (clock.monotonic_ns(), clock.wall_s())
    finally:
        os.close(write_fd)
        os.close(read_fd)
