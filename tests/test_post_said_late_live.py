"""A PoSt whose lines stop mid-proof is said LATE at its deadline, live: cuzk hung (alive, no
more lines) or dead writes no line to move the data's time, so the log reader's clock moves it
(`CuzkWatch.at`: the data's latest time plus what the reader's monotonic clock counted since it
was read). Said once, on stderr's words, to `--on-event` and on /metrics; never for a PoSt
whose end was written before its deadline and not read yet. Driven by a fake clock and the
tailer's passes called by hand, through the real follower and session: no sleeps, no timing
thresholds (stdin's reader is a thread: its test waits for what it says, `until`)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

from faults import until
from live_log_lines import RECORDER, stamp, winningpost_begun
from session_fakes import KeptRecords

from gapwatch.base.clock import FakeClock
from gapwatch.config import Config, LogsConfig
from gapwatch.core.models import GpuInfo, LogEvent, ProverEvent, SessionHeader
from gapwatch.cuzk.post import Deadlines
from gapwatch.cuzk.watch import CuzkWatch
from gapwatch.engine.events import EventHook
from gapwatch.engine.runtime import _add_followers
from gapwatch.engine.session import Session
from gapwatch.engine.store import SeriesStore
from gapwatch.logs.follow import LogFollower
from gapwatch.logs.parse import LogParser
from gapwatch.sinks.metrics import MetricsSink
from gapwatch.sinks.prover_event_metrics import families

T0_S = 1_796_000_000.0
DEADLINE_S = 30.0
JOB = "winpost-1000-0a1b2c3d"
#: When it arrived (its `job enqueued`), s after T0: its deadline runs from there.
BEGIN_S = 1.0
HEADER = SessionHeader(gapwatch_version="t", host="box", source="sim", started_wall_s=T0_S,
                       started_mono_ns=0, period_ms=100.0,
                       gpus=[GpuInfo(index=0, link_bytes_per_s=63e9)])




def _write(path: Path, lines: list[str]) -> None:
    with open(path, "a") as f:
        f.write("".join(line + "\n" for line in lines))


def _proofs(kept: KeptRecords) -> list[ProverEvent]:
    return [r for r in kept.records if isinstance(r, ProverEvent) and r.kind == "proof"]


def _late(kept: KeptRecords) -> list[ProverEvent]:
    return [p for p in _proofs(kept) if p.proof is not None and p.proof.verdict == "late"]


def _counted_late(metrics: MetricsSink) -> float:
    return sum(s.value for f in families(metrics.copy_counts().prover) for s in f.samples
               if s.name == "gapwatch_proofs_late_total")


class _Live:
    """A cuzk log followed by the session's real follower on a fake clock (`record --log`)."""

    def __init__(self, log: Path | list[Path], clock: FakeClock,
                 sinks: tuple[object, ...] = ()) -> None:
        self.clock = clock
        self.kept = KeptRecords()
        self.session = Session(HEADER, SeriesStore(HEADER.gpus, 0.1),
                               sinks=[self.kept, *sinks],  # type: ignore[list-item]
                               watch=CuzkWatch(Deadlines(winning_post_s=DEADLINE_S)))
        logs = log if isinstance(log, list) else [log]
        self.follower = LogFollower([str(x) for x in logs], LogsConfig(), self.on_line, None,
                                    clock, on_clock=self.session.on_reader_clock)
        self.on_parsed: Callable[[LogEvent], None] = lambda ev: None
        self.follower.tailer.poll_once()  # opens the log at its end

    def on_line(self, ev: LogEvent) -> None:
        self.session.on_log_event(ev)
        self.on_parsed(ev)

    def to(self, dt_s: float) -> None:
        """The clock moves on to T0 + `dt_s`."""
        self.clock.advance_ns(round((T0_S + dt_s - self.clock.wall_s()) * 1e9))

    def at(self, dt_s: float) -> None:
        """The clock moved on to T0 + `dt_s`, then a pass of the tailer (its thread's loop
        body, called by hand)."""
        self.to(dt_s)
        self.follower.tailer.poll_once()


def test_a_winningpost_whose_lines_stop_mid_proof_is_said_late_at_its_deadline_once(
        tmp_path: Path) -> None:
    """cuzk hung on the GPU (or dead) with no `/status` polled: its WinningPoSt was said late
    only when a later line came, or never (the recording's end said it 'still running 0.5 s',
    on time). Now the reader's idle passes move the data's time: late at the first pass past
    its deadline, with the hook run and /metrics counting it, and never again."""
    log = tmp_path / "cuzk.log"
    log.write_text("")
    (tmp_path / "rec.py").write_text(RECORDER)
    hooked = tmp_path / "hook.jsonl"
    hook = EventHook([sys.executable, str(tmp_path / "rec.py"), str(hooked)], min_interval_s=0)
    metrics = MetricsSink()
    live = _Live(log, FakeClock(start_wall_s=T0_S), (metrics, hook))
    hook.start()
    try:
        _write(log, winningpost_begun(T0_S, JOB))
        live.at(1.5)  # read as written; then nothing more is written
        for dt_s in (5.0, 15.0, BEGIN_S + DEADLINE_S - 0.1):
            live.at(dt_s)
            assert not _late(live.kept), dt_s  # in flight, not past its deadline yet
            # The dashboard's running proof counts up by the same "now" (it stood at 0.5 s).
            [running] = live.session.watch.running()  # type: ignore[union-attr]
            assert running.timing.total_s is not None
            assert abs(running.timing.total_s - (dt_s - BEGIN_S)) < 1e-3
        live.at(BEGIN_S + DEADLINE_S + 0.1)
        [late] = _late(live.kept)
        assert late.job_id == JOB and late.level == "error" and "still running" in late.message
        assert abs(late.t_wall_s - (T0_S + BEGIN_S + DEADLINE_S + 0.1)) < 1e-3
        for dt_s in (40.0, 60.0):
            live.at(dt_s)
        assert len(_late(live.kept)) == 1 and _counted_late(metrics) == 1
        # It ends at last (cuzk was alive): said late again as it ends, as a PoSt said late
        # by a later line is, but not late twice: the hook and /metrics count it once.
        _write(log, [f"TIMELINE,69000,GPU_END,{JOB},worker=0,gpu_ms=67500",
                     f"{stamp(T0_S + 69.0)}  INFO cuzk_core::engine: proof completed "
                     "successfully (pipeline) total_ms=68000"])
        live.at(70.0)
        assert [p.proof.verdict for p in _proofs(live.kept) if p.proof] == ["late", "late"]
        assert _counted_late(metrics) == 1
    finally:
        hook.stop()
    runs = [json.loads(x) for x in hooked.read_text().splitlines()]
    assert [r["GAPWATCH_EVENT"] for r in runs] == ["post_late"]
    assert JOB in runs[0]["GAPWATCH_LINE"]


def test_an_end_written_before_the_deadline_while_a_pass_was_parsed_is_no_late_proof(
        tmp_path: Path) -> None:
    """A pass reads, then parses (seconds, for 8 MiB): a GPU_END written before the deadline
    while the pass parsed is read only by the next pass. The clock's time is when the pass
    began (every line written before it was read), not when it ended: the proof is said on
    time, never late first."""
    log = tmp_path / "cuzk.log"
    log.write_text("")
    live = _Live(log, FakeClock(start_wall_s=T0_S))
    end_s = BEGIN_S + DEADLINE_S - 1.0  # written a second before the deadline

    def slow(ev: LogEvent) -> None:  # parsing from its GPU_START on runs past the deadline
        if ev.name == "GPU_START":
            live.to(end_s)
            _write(log, [f"TIMELINE,{round(end_s * 1000)},GPU_END,{JOB},worker=0,gpu_ms=1000"])
            live.to(BEGIN_S + DEADLINE_S + 5.0)

    live.on_parsed = slow
    _write(log, winningpost_begun(T0_S, JOB))
    live.at(1.5)
    assert not _late(live.kept)  # the pass that ended past the deadline said nothing
    live.at(BEGIN_S + DEADLINE_S + 6.0)  # reads the GPU_END
    live.session.finish()  # its completion line was not written: said at the end
    [done] = _proofs(live.kept)
    assert done.proof is not None and done.proof.verdict != "late", done.message


def test_a_reader_behind_its_writer_moves_no_clock_until_it_has_caught_up(
        tmp_path: Path) -> None:
    """A pass reads at most 8 MiB of a file: one that stopped there has lines written before
    it still to read (the PoSt's GPU_END among them, written on time), so it tells no time.
    The pass after, which reads to the end, does."""
    log = tmp_path / "cuzk.log"
    log.write_text("")
    live = _Live(log, FakeClock(start_wall_s=T0_S))
    _write(log, winningpost_begun(T0_S, JOB))
    live.at(1.5)
    # A burst of lines of the same time as its latest (no later time read), then its end.
    filler = (f"{stamp(T0_S + 1.5)}  INFO cuzk_core::engine: x " + "y" * 8000 + "\n").encode()
    with open(log, "ab") as f:
        f.write(filler * ((8 << 20) // len(filler) + 1))
    _write(log, [f"TIMELINE,10000,GPU_END,{JOB},worker=0,gpu_ms=8500"])
    live.at(BEGIN_S + DEADLINE_S + 10.0)  # 8 MiB of it read, long after it was written
    assert not _late(live.kept)
    read_to = live.follower.tailer.read_to()  # still the pass before: it read all there was
    assert read_to is not None and read_to[1] == T0_S + 1.5
    live.at(BEGIN_S + DEADLINE_S + 11.0)  # the rest, its GPU_END among it
    read_to = live.follower.tailer.read_to()
    assert read_to is not None and read_to[1] == T0_S + BEGIN_S + DEADLINE_S + 11.0
    live.session.finish()  # its completion line was not written: said at the end
    [done] = _proofs(live.kept)
    assert done.proof is not None and done.proof.verdict == "ok", done.message


def test_piped_to_stdin_a_winningpost_whose_lines_stop_is_said_late_by_the_readers_waits(
) -> None:
    """`journalctl -f -u cuzk | gapwatch record --log -`: each wait on stdin that read all the
    pipe held is the clock there (it has no pass over files to tick it)."""
    read_fd, write_fd = os.pipe()
    clock = FakeClock(start_wall_s=T0_S)
    kept = KeptRecords()
    session = Session(HEADER, SeriesStore(HEADER.gpus, 0.1), sinks=[kept],
                      watch=CuzkWatch(Deadlines(winning_post_s=DEADLINE_S)))
    follower = LogFollower(["-"], LogsConfig(poll_ms=5), session.on_log_event, clock=clock,
                           stdin_fd=read_fd, on_clock=session.on_reader_clock)
    follower.start()
    try:
        clock.advance_ns(int(1.5e9))
        os.write(write_fd, "".join(line + "\n" for line in winningpost_begun(T0_S, JOB)).encode())
        assert until(lambda: follower.status().lines == len(winningpost_begun(T0_S, JOB)))
        clock.advance_ns(int(DEADLINE_S * 1e9))  # T0 + 31.5: past its deadline
        assert until(lambda: len(_late(kept)) == 1)
    finally:
        os.close(write_fd)
        follower.stop()
        os.close(read_fd)
    assert len(_late(kept)) == 1 and _late(kept)[0].job_id == JOB


def test_a_backlog_read_in_pieces_is_no_silence_its_post_ends_by_its_own_line(
        tmp_path: Path) -> None:
    """`--from-start` reads 8 MiB of a file a pass: a PoSt begun in one read whose GPU_END is
    in the next is not said late by the clock, however long parsing that read took (its lines
    were written long before they were read): said by its own lines, on time."""
    log = tmp_path / "cuzk.log"
    filler = (f"{stamp(T0_S + 1.5)}  INFO cuzk_core::engine: x " + "y" * 8000 + "\n").encode()
    log.write_bytes("".join(line + "\n" for line in winningpost_begun(T0_S, JOB)).encode()
                   + filler * ((8 << 20) // len(filler) + 1)
                   + f"TIMELINE,10000,GPU_END,{JOB},worker=0,gpu_ms=8500\n".encode())
    clock = FakeClock(start_wall_s=T0_S)
    kept = KeptRecords()
    session = Session(HEADER, SeriesStore(HEADER.gpus, 0.1), sinks=[kept],
                      watch=CuzkWatch(Deadlines(winning_post_s=DEADLINE_S)))

    def slow_consumer(ev: LogEvent) -> None:  # parsing a read of 8 MiB takes seconds
        session.on_log_event(ev)
        clock.advance_ns(int(10 * DEADLINE_S * 1e9 / 1024))

    follower = LogFollower([str(log)], LogsConfig(from_start=True), slow_consumer, clock=clock,
                           on_clock=session.on_reader_clock)
    follower.tailer.poll_once()
    assert follower.tailer.reading_backlog()
    assert not _late(kept)
    follower.tailer.poll_once()
    session.finish()  # its completion line was not written: said at the end
    [done] = _proofs(kept)
    assert done.proof is not None and done.proof.verdict == "ok", done.message


def test_with_two_daemons_the_late_proof_said_by_the_clock_names_its_daemon(
        tmp_path: Path) -> None:
    """A PoRep cuzk and a PoSt-only one beside it: the late WinningPoSt the clock says names
    its daemon, as the same words said at a line do (`Daemons.named`), not the other's, nor
    none."""
    porep, post = tmp_path / "porep.log", tmp_path / "post.log"
    porep.write_text("")
    post.write_text("")
    live = _Live([porep, post], FakeClock(start_wall_s=T0_S))
    _write(porep, [f"{stamp(T0_S)}  INFO cuzk_daemon: cuzk-daemon starting",
                   f"{stamp(T0_S)}  INFO cuzk_daemon: configuration loaded "
                   "listen=127.0.0.1:9820"])
    begun = winningpost_begun(T0_S, JOB)
    _write(post, [*begun[:1], f"{stamp(T0_S)}  INFO cuzk_daemon: configuration loaded "
                  "listen=127.0.0.1:9830", *begun[1:]])
    live.at(1.5)
    live.at(BEGIN_S + DEADLINE_S + 1.0)
    [late] = _late(live.kept)
    assert late.daemon == "127.0.0.1:9830" and "daemon 127.0.0.1:9830" in late.message


def test_the_simulators_own_log_tells_no_time_while_a_log_file_is_behind(
        tmp_path: Path) -> None:
    """`record --source sim --log FILE` follows two logs, each with a follower of its own
    (the runtime's `_add_followers`): the simulator's log, read to its end at each pass, told
    the session its time while FILE's reader was still behind its writer (8 MiB a pass), and
    the WinningPoSt whose GPU_END was written on time in FILE, unread, was said late first.
    The session is told the earliest of both readers' times."""
    post, sim_log = tmp_path / "post.log", tmp_path / "sim.log"
    post.write_text("")
    sim_log.write_text("")
    clock = FakeClock(start_wall_s=T0_S)
    kept = KeptRecords()
    session = Session(HEADER, SeriesStore(HEADER.gpus, 0.1), sinks=[kept],
                      watch=CuzkWatch(Deadlines(winning_post_s=DEADLINE_S)))
    rt = SimpleNamespace(config=Config(), session=session, followers=[], sim_log_path=None)
    src = SimpleNamespace(clock=clock, sim=SimpleNamespace(log_path=sim_log))
    _add_followers(rt, src, [str(post)], 0)  # type: ignore[arg-type]
    mine, sims = rt.followers

    def at(dt_s: float) -> None:  # both tailers' passes, the simulator's last
        clock.advance_ns(round((T0_S + dt_s - clock.wall_s()) * 1e9))
        mine.tailer.poll_once()
        sims.tailer.poll_once()

    at(0.0)  # opens both (the simulator's from its start)
    _write(post, winningpost_begun(T0_S, JOB))
    at(1.5)
    filler = (f"{stamp(T0_S + 1.5)}  INFO cuzk_core::engine: x " + "y" * 8000 + "\n").encode()
    with open(post, "ab") as f:
        f.write(filler * ((8 << 20) // len(filler) + 1))
    _write(post, [f"TIMELINE,10000,GPU_END,{JOB},worker=0,gpu_ms=8500"])
    at(BEGIN_S + DEADLINE_S + 10.0)  # FILE's reader: 8 MiB of it; the simulator's: all
    assert not _late(kept)
    at(BEGIN_S + DEADLINE_S + 11.0)  # the rest of FILE, its GPU_END among it
    session.finish()
    [done] = _proofs(kept)
    assert done.proof is not None and done.proof.verdict == "ok", done.message


def test_a_tick_put_off_while_nothing_waited_moves_the_clock_as_one_taken_at_once() -> None:
    """The session takes no lock for the reader's tick where nothing waits (no panic being
    read, no half of one, no PoSt in flight: `ProverWatch.waits`), and keeps it for the
    watcher's next record. The PoSt clock moves as if each tick had been taken: cuzk's clock
    stepped back 7 s (NTP) before a WinningPoSt, it is said late at the same time as by a
    watcher told every tick (without the kept tick, at another: the PoSt's first line was
    compared with the data's time of the line before it, not with the time the ticks had
    moved it to)."""
    def live(every_tick: bool) -> list[tuple[str | None, float]]:
        session = Session(HEADER, SeriesStore(HEADER.gpus, 0.1), watch=CuzkWatch())
        kept = KeptRecords()
        session.add_sink(kept)
        watch = session.watch
        assert isinstance(watch, CuzkWatch)
        parser = LogParser()
        said: list[ProverEvent] = []

        def line(text: str, at_s: float) -> None:
            for ev in parser.parse_line(text, "cuzk.log", round(at_s * 1e9), T0_S + at_s):
                if every_tick:
                    said.extend(watch.feed(ev))
                else:
                    session.on_log_event(ev)

        def tick(at_s: float) -> None:
            if every_tick:
                said.extend(watch.at(round(at_s * 1e9), None))
            else:
                session.on_reader_clock(round(at_s * 1e9), None)

        begun = winningpost_begun(T0_S, JOB)
        for text in begun[:2]:  # cuzk's start lines, read as written
            line(text, 0.0)
        for at_s in range(1, 11):  # idle: nothing in flight
            tick(float(at_s))
        # cuzk's clock 7 s back: its PoSt's lines, read at once.
        stepped = winningpost_begun(T0_S + 3.0, JOB)
        for text in stepped[2:]:
            line(text, 10.5)
        for at_s in range(11, 60):
            tick(float(at_s))
        out = said if every_tick else [r for r in kept.records if isinstance(r, ProverEvent)]
        return [(p.proof.verdict, p.t_wall_s) for p in out if p.proof is not None]

    assert live(every_tick=False) == live(every_tick=True)
    assert [v for v, _ in live(every_tick=True)] == ["late"]


def test_several_followers_tell_the_session_the_earliest_time_all_have_read_to() -> None:
    """`AllReadBy`: with the simulator's log and a `--log` file followed apart, the session is
    told nothing until each follower has told a time, then the earliest of their latest times
    (one follower's pass says nothing of another's file), never a time going back for one
    follower, and the earliest panic any of them is still reading."""
    from gapwatch.logs.follow import AllReadBy

    told: list[tuple[int, float | None]] = []
    clock = AllReadBy(lambda t, panic: told.append((t, panic)))
    sim, log = clock.reader(), clock.reader()

    def last() -> tuple[int, float | None]:
        return told[-1]

    sim(5_000, None)
    assert told == []  # the --log file's reader has not told yet
    log(2_000, None)
    assert last() == (2_000, None)
    sim(9_000, None)
    assert last() == (2_000, None)  # the file is still behind
    log(7_000, 40.0)
    assert last() == (7_000, 40.0)
    log(6_000, None)  # a time back from one reader is its latest still
    assert last() == (7_000, None)
