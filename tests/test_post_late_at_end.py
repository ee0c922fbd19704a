"""The end of a recording judges a PoSt still in flight as the live session did: by the live
reader's clock (`gapwatch.logs.follow.read_by_at_end`: the recording's last host sample, less
one idle pass of the tailer), not by its last line's time. A WinningPoSt whose lines stopped
mid-proof, said LATE live, was `ok (running)` at its last line in `report` and `replay`; it is
late in both now, at the recording's end, and so it stays when they are given the log the
recording followed (`--log cuzk.log`: each line fed once, as the file has it). Never late where
live could not have said it: a recording that ends right after its last line, one that ends
before the reader's next pass could read an end written on time, or a `--log` file read whole
whose end line the recording never saw.

Each recording is made in-process through the real follower, session and recorder on a fake
clock (the tailer's passes called by hand, a host sample at each), then read back by the real
`report` and `replay --headless`: no sleeps, no timing thresholds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from live_log_lines import stamp, winningpost_begun

from gapwatch.base.clock import FakeClock
from gapwatch.cli import main
from gapwatch.config import Config, LogsConfig
from gapwatch.core.models import GpuInfo, GpuSample, HostSample, ProverEvent, SessionHeader
from gapwatch.cuzk.post import Deadlines
from gapwatch.cuzk.watch import CuzkWatch
from gapwatch.engine.session import Session
from gapwatch.engine.store import SeriesStore
from gapwatch.logs.follow import LogFollower
from gapwatch.offline.report import build_report
from gapwatch.sinks.recorder import Recorder
from gapwatch.sources.files import read_any

T0_S = 1_796_000_000.0
#: The default WinningPoSt deadline (`[cuzk] winning_post_deadline_s`): the report's config.
DEADLINE_S = 30.0
JOB = "winpost-1000-0a1b2c3d"
#: When it arrived (its `job enqueued`), s after T0: its deadline runs from there.
BEGIN_S = 1.0
#: The recorded session's idle pass (`logs.idle_poll_ms`, its header's config).
IDLE_PASS_S = 1.0
HEADER = SessionHeader(gapwatch_version="t", host="box", source="sim", started_wall_s=T0_S,
                       started_mono_ns=1_000_000_000, period_ms=100.0,
                       gpus=[GpuInfo(index=0, link_bytes_per_s=63e9)],
                       config={"logs": {"idle_poll_ms": IDLE_PASS_S * 1000, "poll_ms": 50.0}})




def _gpu_end(t_s: float) -> str:
    return f"TIMELINE,{round(t_s * 1000)},GPU_END,{JOB},worker=0,gpu_ms={round(t_s * 1000) - 1500}"


def _write(path: Path, lines: list[str]) -> None:
    with open(path, "a") as f:
        f.write("".join(line + "\n" for line in lines))


def _host_sample(clock: FakeClock) -> HostSample:
    """A host sample at the clock's time (the sampler writes one a period)."""
    return HostSample(t_mono_ns=clock.monotonic_ns(), t_wall_s=clock.wall_s(),
                      interval_ns=100_000_000, mem_used_pct=40.0, mem_available_bytes=None,
                      swap_used_bytes=None, cpu_busy_pct=None, psi_mem_some_avg10=None,
                      psi_mem_full_avg10=None, psi_mem_some_share=None,
                      psi_mem_full_share=None, major_faults_per_s=None)


def _gpu_sample(clock: FakeClock) -> GpuSample:
    """GPU 0's sample at the clock's time."""
    return GpuSample(gpu=0, t_mono_ns=clock.monotonic_ns(), t_wall_s=clock.wall_s(),
                     interval_ns=100_000_000, sm_active_pct=90.0, gpu_util_pct=90.0,
                     pcie_rx_bytes_per_s=None, pcie_tx_bytes_per_s=None)


class _Recorded:
    """`record --log FILE` on a fake clock: the real follower, session and recorder; a host
    sample at each pass of the tailer (called by hand), as the sampler writes one a period."""

    def __init__(self, tmp_path: Path, beside: Path | None = None,
                 gpu_samples: bool = False) -> None:
        """`beside`: another daemon's log followed too (the same follower). `gpu_samples`: GPU
        0's sample too at each pass, before the host's."""
        self.gpu_samples = gpu_samples
        self.log = tmp_path / "cuzk.log"
        self.log.write_text("")
        logs = [self.log, *([beside] if beside is not None else [])]
        self.path = tmp_path / "rec.jsonl"
        self.clock = FakeClock(start_mono_ns=HEADER.started_mono_ns, start_wall_s=T0_S)
        self.session = Session(HEADER, SeriesStore(HEADER.gpus, 0.1),
                               sinks=[Recorder(self.path, exists="replace", mark_set=False)],
                               watch=CuzkWatch(Deadlines(winning_post_s=DEADLINE_S)))
        self.follower = LogFollower([str(x) for x in logs], LogsConfig(), self.session.on_log_event,
                                    None, self.clock, on_clock=self.session.on_reader_clock)
        self.follower.tailer.poll_once()  # opens the log at its end

    def at(self, dt_s: float) -> None:
        """The clock moved on to T0 + `dt_s`: a host sample, then a pass of the tailer."""
        self.clock.advance_ns(round((T0_S + dt_s - self.clock.wall_s()) * 1e9))
        if self.gpu_samples:
            self.session.on_record(_gpu_sample(self.clock))
        self.session.on_record(_host_sample(self.clock))
        self.follower.tailer.poll_once()

    def close(self) -> Path:
        self.session.close()
        return self.path


def _last_word(events: list[ProverEvent]) -> ProverEvent:
    """The report's last word on the PoSt (its row)."""
    words = [e for e in events if e.kind == "proof" and e.job_id == JOB]
    assert words, "the report says nothing of the PoSt"
    return words[-1]


def _said_late_live(path: Path) -> bool:
    """Whether the live session said the PoSt late (the recording holds what it said)."""
    return any(isinstance(r, ProverEvent) and r.job_id == JOB and r.proof is not None
               and r.proof.verdict == "late" for r in read_any(path).records)


def _reported(path: Path, logs: list[str] | None = None) -> ProverEvent:
    return _last_word(list(build_report(path, Config(), logs, workers=1).prover_events))


def _replayed(path: Path, capsys: pytest.CaptureFixture[str],
              logs: list[str] | None = None) -> list[str]:
    """What `replay --headless` (given `logs`) says of the PoSt (its stderr lines naming it)."""
    capsys.readouterr()
    main(["replay", str(path), "--headless", "--speed", "0",
          *(x for log in logs or [] for x in ("--log", log))])
    return [x for x in capsys.readouterr().err.splitlines() if JOB in x]


def _stopped_mid_proof(tmp_path: Path, end_s: float, gpu_samples: bool = False) -> Path:
    """A WinningPoSt whose lines stop on its GPU (cuzk hung, or dead), recorded to T0 +
    `end_s`, a pass and a host sample (and GPU 0's, `gpu_samples`) every second."""
    rec = _Recorded(tmp_path, gpu_samples=gpu_samples)
    _write(rec.log, winningpost_begun(T0_S, JOB))
    rec.at(1.5)  # read as written; then nothing more is written
    t = 2.0
    while t <= end_s:
        rec.at(t)
        t += 1.0
    return rec.close()


def test_the_report_of_a_winningpost_said_late_live_says_it_late_at_the_recordings_end(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Live said LATE at the first pass past the deadline (the recording holds that event);
    the report and the replay judged on the data's time alone and said `ok (running)`, 0.5 s
    at its last line, though the recording went on 59 s. Now both judge it where the reader
    had got to at the end (the last host sample, 60 s, less one idle pass): late, running
    58 s of its 30."""
    path = _stopped_mid_proof(tmp_path, end_s=60.0)
    assert _said_late_live(path)
    word = _reported(path)
    assert word.proof is not None
    assert (word.proof.verdict, word.proof.done) == ("late", False), word.message
    assert word.proof.total_s == pytest.approx(60.0 - IDLE_PASS_S - BEGIN_S, abs=1e-3)
    [replayed] = _replayed(path, capsys)
    assert "still running: 58.0 s of its 30 s deadline" in replayed and "LATE" in replayed


@pytest.mark.parametrize("gpu_samples", [False, True],
                         ids=["file_copy_fed_after_the_recorded", "file_copy_fed_first"])
def test_a_winningpost_said_late_live_is_late_too_given_the_log_the_recording_followed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], gpu_samples: bool) -> None:
    """`report REC --log cuzk.log`, `replay --log` and `export --log`, given the very file
    `record --log` followed: each line is fed once, the file's copy in place of the
    recording's, and the file's copy has no arrival (read whole, later), so the end had no
    reader's clock to move the PoSt's "now" by: `ok (running)`, 0.5 s at its last line, where
    the recording alone said it late (a lost block gone from the report because its log was
    given). The recorded copy left out still says when its line was read live: late, 58 s of
    its 30, with the log or without. Without GPU samples the file's lines are fed at the end,
    after the recording claimed them; with a GPU sample at each pass, at the first sample past
    their time, before their recorded copies come."""
    path = _stopped_mid_proof(tmp_path, end_s=60.0, gpu_samples=gpu_samples)
    log = str(tmp_path / "cuzk.log")
    assert _said_late_live(path)
    report = build_report(path, Config(), [log], workers=1)
    assert report.counters["log_already_recorded"] == len(winningpost_begun(T0_S, JOB))
    alone, again = _reported(path), _last_word(list(report.prover_events))
    for word in (alone, again):
        assert word.proof is not None
        assert (word.proof.verdict, word.proof.done) == ("late", False), word.message
        assert word.proof.total_s == pytest.approx(60.0 - IDLE_PASS_S - BEGIN_S, abs=1e-3)
    for logs in ([], [log]):
        [replayed] = _replayed(path, capsys, logs)
        assert "still running: 58.0 s of its 30 s deadline" in replayed and "LATE" in replayed
        # `export`'s trace draws the report's words.
        trace = tmp_path / f"trace{len(logs)}.json"
        main(["export", str(path), "--out", str(trace), *(x for y in logs for x in ("--log", y))])
        assert [e["args"]["message"] for e in json.loads(trace.read_text())["traceEvents"]
                if e.get("name") == f"error: proof {JOB}"] == [replayed.split(": ", 2)[2]]


def test_a_recording_that_ends_right_after_the_last_line_says_the_proof_running_on_time(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Ended half a second after the PoSt's last line (a run stopped there): nothing says it
    went late, live or after; the report says it running, on time."""
    path = _stopped_mid_proof(tmp_path, end_s=2.0)
    assert not _said_late_live(path)
    word = _reported(path)
    assert word.proof is not None and word.proof.verdict == "ok" and not word.proof.done
    assert all("LATE" not in x for x in _replayed(path, capsys))


def test_an_end_written_on_time_that_no_pass_read_before_the_recording_ended_is_no_late_proof(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The GPU_END was written just before the deadline; the recording ended (its last host
    sample) just past it, before the tailer's next pass read it. Live said nothing late: no
    pass came past the deadline. The end's clock is one idle pass before the last sample (by
    then every line written was read), so neither does the report: still running, on time."""
    rec = _Recorded(tmp_path)
    _write(rec.log, winningpost_begun(T0_S, JOB))
    rec.at(1.5)
    for t in range(2, 31):
        rec.at(float(t))  # the last pass at 30.0, before the deadline (31.0)
    _write(rec.log, [_gpu_end(BEGIN_S + DEADLINE_S - 0.2)])  # written on time, not read
    rec.clock.advance_ns(round((T0_S + BEGIN_S + DEADLINE_S + 0.5 - rec.clock.wall_s()) * 1e9))
    rec.session.on_record(_host_sample(rec.clock))
    path = rec.close()  # ended before the next pass
    assert not _said_late_live(path)
    word = _reported(path)
    assert word.proof is not None and word.proof.verdict != "late", word.message
    assert all("LATE" not in x for x in _replayed(path, capsys))


def test_a_log_file_read_whole_with_the_end_line_the_recording_never_saw_says_it_on_time(
        tmp_path: Path) -> None:
    """`report --log FILE`: the recording ended 20 s in, its PoSt in flight; the file, read
    whole later, holds its GPU_END written at 25 s, before its deadline. The file's end line
    counts: the PoSt ended, not late, whatever the recording's end would have said of it running."""
    path = _stopped_mid_proof(tmp_path, end_s=20.0)
    log = tmp_path / "cuzk.log"
    _write(log, [_gpu_end(25.0), f"{stamp(T0_S + 25.0)}  INFO cuzk_core::engine: proof "
                 "completed successfully (pipeline) total_ms=24000"])
    word = _reported(path, [str(log)])
    assert word.proof is not None
    assert word.proof.done and word.proof.verdict != "late", word.message
    assert word.proof.total_s == pytest.approx(24.0)


def test_a_postonly_daemons_proof_stopped_mid_proof_is_late_at_the_end_while_another_logs_on(
        tmp_path: Path) -> None:
    """The repro's case: a PoSt-only cuzk of its own listen address hangs mid-proof while the
    PoRep daemon's log flows on, a line a second (each daemon's "now" is its own lines'). Live
    said it LATE; the report said `ok (running)` at its last line. Now late, at the end."""
    porep = tmp_path / "porep.log"
    porep.write_text("")
    rec = _Recorded(tmp_path, beside=porep)
    _write(porep, [f"{stamp(T0_S)}  INFO cuzk_daemon: cuzk-daemon starting",
                   f"{stamp(T0_S)}  INFO cuzk_daemon: configuration loaded "
                   "listen=unix:///run/curio/cuzk.sock"])
    begun = winningpost_begun(T0_S, JOB)
    _write(rec.log, [*begun[:1], f"{stamp(T0_S)}  INFO cuzk_daemon: configuration loaded "
                     "listen=127.0.0.1:9820", *begun[1:]])
    rec.at(1.5)
    for t in range(2, 61):
        _write(porep, [f"{stamp(T0_S + t)}  INFO cuzk_core::scheduler: job enqueued "
                       f"job_id=porep-1000-{t} proof_kind=porep-c2 priority=Normal "
                       "queue_position=1"])
        rec.at(float(t))
    path = rec.close()
    assert _said_late_live(path)
    word = _reported(path)
    assert word.proof is not None and word.daemon == "127.0.0.1:9820"
    assert (word.proof.verdict, word.proof.done) == ("late", False), word.message
    assert word.proof.total_s == pytest.approx(60.0 - IDLE_PASS_S - BEGIN_S, abs=1e-3)
