"""`--on-event CMD`: a command run with the facts in GAPWATCH_* variables when a GPU enters or
leaves BREAKDOWN, never through a shell; one that fails or hangs is killed, counted and said,
and monitoring goes on."""

from __future__ import annotations

import contextlib
import io
import json
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import pytest
from faults import PtyApp, process_running, wait_for

from gapwatch.base.quit_early import StopRequested
from gapwatch.cli import main
from gapwatch.core.models import (
    ChainState,
    HardwareEvent,
    Notice,
    ProofTiming,
    ProverEvent,
    StateChange,
)
from gapwatch.engine.events import (
    MAX_QUEUED,
    Event,
    EventHook,
    checked_command,
    parse_command,
    program_problem,
)

RECORDER = """import json, os, sys
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"argv": sys.argv[2:], "pid": os.getpid(),
                        **{k: v for k, v in os.environ.items() if k.startswith("GAPWATCH_")}})
            + "\\n")
sys.exit(int(os.environ.get("EXIT_WITH", "0")))
"""


def _recorder(tmp_path: Path) -> tuple[list[str], Path]:
    script = tmp_path / "rec.py"
    script.write_text(RECORDER)
    out = tmp_path / "events.jsonl"
    return [sys.executable, str(script), str(out)], out


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _change(gpu: int, state: ChainState) -> StateChange:
    return StateChange(t_mono_ns=1, t_wall_s=100.0, gpu=gpu, state=state, busy_fraction=0.5,
                       reason="2 pcie_starved gaps in the last 30 s")


def _record(*argv: str) -> str:
    """`gapwatch record ARGV` run as the command line runs it, in this process (the command it
    runs is a process of its own all the same): its stderr. What these tests pin is what
    record ran and said, not a gapwatch process's start (~0.3 CPU-s of imports each)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(["record", *argv])
    assert status == 0, err.getvalue()
    return err.getvalue()


def test_record_runs_the_command_on_breakdown_with_the_facts_in_its_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command also exits 3: record says so, and monitoring goes on to the end. The
    snapshot folder is configured relative: the command gets it absolute (it got
    `gapwatch-snapshot-...`, of no use to a hook that hands it on)."""
    argv, out = _recorder(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.toml").write_text('[snapshot]\ndir = "snaps"\n')
    monkeypatch.setenv("EXIT_WITH", "3")  # the command's environment is record's
    err = _record("--config", str(tmp_path / "c.toml"),
                  "--source", "sim:pageable", "--speed", "0", "--duration", "90", "--quiet",
                  "--out", str(tmp_path / "r.jsonl"),
                  "--on-event", " ".join(argv) + " 'two words' ';' touch "
                  + str(tmp_path / "pwned"))
    assert "exited 3 for breakdown_entered" in err
    assert "--on-event ran once: 0 ok, 1 failed" in err  # "ran 1 times" read wrong
    assert "gaps: pcie_starved=" in err  # monitoring went on to the end
    (event,) = _lines(out)
    assert event["GAPWATCH_EVENT"] == "breakdown_entered"
    assert (event["GAPWATCH_GPU"], event["GAPWATCH_STATE"]) == ("0", "BREAKDOWN")
    # The simulated cuzk's pool checkouts FAIL after its first wave (pipeline.rs:302).
    assert event["GAPWATCH_CAUSE"] == "pinned_pool"
    assert event["GAPWATCH_CAUSE_WORDS"] == ("a/b/c copied from pageable memory: the pinned "
                                             "pool could not pin")
    assert str(event["GAPWATCH_SETTING"]).startswith("[memory] safety_margin")
    assert float(str(event["GAPWATCH_PAYOFF"])) >= 1.0
    assert str(event["GAPWATCH_LINE"]).startswith("GPU0 BREAKDOWN: a/b/c copied")
    # The payoff with what it rests on, in the line and in variables of their own: at entry
    # the window holds a few gaps, and "payoff ~1.0x" alone read "nothing to gain".
    gaps = int(str(event["GAPWATCH_PAYOFF_GAPS"]))
    assert 2 <= gaps and 0 < float(str(event["GAPWATCH_PAYOFF_SPAN_S"])) <= 30
    assert str(event["GAPWATCH_LINE"]).endswith(
        f"; payoff ~{event['GAPWATCH_PAYOFF']}x over the last {event['GAPWATCH_PAYOFF_SPAN_S']} "
        f"s ({gaps} gaps)")
    assert (Path(str(event["GAPWATCH_SNAPSHOT_DIR"])) / "summary.md").exists()
    assert Path(str(event["GAPWATCH_SNAPSHOT_DIR"])).parent == tmp_path / "snaps"
    _holds_the_contract(event)
    # Words, not a shell: the quotes grouped, the ';' and 'touch' were arguments.
    assert event["argv"] == ["two words", ";", "touch", str(tmp_path / "pwned")]
    assert not (tmp_path / "pwned").exists()


def test_a_gpu_hardware_error_runs_the_command_and_a_gpu_warning_does_not(
        tmp_path: Path) -> None:
    # An XID, uncorrected ECC errors and a GPU lost page through GapwatchGpuHardwareError, but
    # ran no --on-event command: a box with no monitoring stack never heard of them. The XID 79
    # and the loss of the same GPU a second later are two things to hear of, not one
    # rate-limited away behind the other.
    argv, out = _recorder(tmp_path)
    hook = EventHook(argv)
    hook.start()
    for ev in (HardwareEvent(0, 1, 100.0, "ecc_corrected", count=4),
               HardwareEvent(0, 1, 100.0, "pcie_replay", count=40),
               HardwareEvent(1, 1, 101.0, "xid", code=79),
               HardwareEvent(1, 2, 102.0, "gpu_lost", code=15),
               HardwareEvent(0, 3, 103.0, "ecc_uncorrected", count=2),
               HardwareEvent(2, 4, 104.0, "row_remap_pending"),
               HardwareEvent(3, 4, 104.0, "row_remap_failure")):
        hook.on_record(ev)
    hook.stop()
    events = _lines(out)
    assert [(e["GAPWATCH_EVENT"], e["GAPWATCH_GPU"], e["GAPWATCH_STATE"]) for e in events] == [
        ("gpu_hardware_error", "1", "xid"), ("gpu_hardware_error", "1", "gpu_lost"),
        ("gpu_hardware_error", "0", "ecc_uncorrected"),
        ("gpu_hardware_error", "3", "row_remap_failure")]
    assert events[0]["GAPWATCH_LINE"] == ("GPU 1: XID 79 (critical GPU error reported by the "
                                          "driver)")
    assert events[0]["GAPWATCH_SETTING"] == "none"
    assert str(events[1]["GAPWATCH_DETAIL"]).startswith("GPU 1: lost (NVML: GPU is lost")
    assert hook.counts.rate_limited == 0


def test_breakdown_entered_and_left_are_events_other_states_are_not(tmp_path: Path) -> None:
    argv, out = _recorder(tmp_path)
    hook = EventHook(argv, min_interval_s=0)
    hook.start()
    states: tuple[ChainState, ...] = ("CHAINED", "GAPS", "BREAKDOWN", "BREAKDOWN", "GAPS",
                                      "CHAINED")
    for state in states:
        hook.listen(_change(0, state))
    hook.listen(Notice(1, 1.0, "warning", "not an event"))
    hook.stop()
    assert [e["GAPWATCH_EVENT"] for e in _lines(out)] == ["breakdown_entered",
                                                          "breakdown_left"]
    assert _lines(out)[1]["GAPWATCH_STATE"] == "GAPS"
    assert hook.counts.ok == 2


def test_a_failing_command_is_counted_and_said_and_the_next_still_runs(tmp_path: Path) -> None:
    said: list[str] = []
    hook = EventHook([sys.executable, "-c", "import sys; sys.exit(3)"], min_interval_s=0,
                     notify=lambda level, msg: said.append(f"{level}: {msg}"))
    hook.start()
    assert hook.offer(Event("breakdown_entered", 0, "BREAKDOWN", 1.0))
    assert hook.offer(Event("restart", None, "", 2.0, detail="cuzk restarted"))
    hook.stop()
    assert hook.counts.failed == 2 and hook.counts.ran == 2
    assert said[0].endswith("exited 3 for breakdown_entered") and "warning" in said[0]


def test_a_fact_with_a_nul_an_osc_52_or_a_megabyte_still_runs_the_command_with_it_inert(
        tmp_path: Path) -> None:
    """A NUL from a log or `/status` (no environment string can hold one: Popen's ValueError)
    or a 1 MB panic message (over Linux's 128 KiB for one environment string: E2BIG) kept the
    command from running at all; an OSC 52 went raw to whatever terminal the script echoes to."""
    cmd, out = _recorder(tmp_path)
    hook = EventHook(cmd, min_interval_s=0)
    hook.start()
    hook.offer(Event("restart", None, "", 1.0, line="job \x00 \x1b]52;c;aGk=\x07 done",
                     detail="panicked at src/lib.rs\n" + "x" * 1_000_000))
    hook.stop()
    assert hook.counts.ok == 1 and hook.counts.failed == 0
    (seen,) = _lines(out)
    assert seen["GAPWATCH_LINE"] == "job \\x00 \\x1b]52;c;aGk=\\x07 done"
    detail = str(seen["GAPWATCH_DETAIL"])
    assert detail.startswith("panicked at src/lib.rs\nxxx") and len(detail) < 20_000


def test_a_command_that_cannot_start_is_counted_and_said(tmp_path: Path) -> None:
    said: list[str] = []
    hook = EventHook([str(tmp_path / "no-such-program")], notify=lambda lv, m: said.append(m))
    hook.start()
    hook.offer(Event("gpu_error", 1, "", 1.0, detail="Xid 79"))
    hook.stop()
    assert hook.counts.failed == 1 and "could not start" in said[0]


def test_a_hanging_command_is_killed_with_what_it_started_after_the_timeout(
        tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = (f"import os, subprocess, time\nchild = subprocess.Popen(['sleep', '60'])\n"
              f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
              "time.sleep(60)\n")
    said: list[str] = []
    hook = EventHook([sys.executable, "-c", script], timeout_s=1.0,
                     notify=lambda lv, m: said.append(m))
    hook.start()
    started = time.monotonic()
    hook.offer(Event("post_late", None, "", 1.0, detail="PoSt 42 s late"))
    wait_for("the hook to give up on the command", lambda: hook.counts.timed_out == 1, 20)
    assert time.monotonic() - started < 10
    hook.stop()
    assert "killed" in said[0]
    for pid in map(int, pids.read_text().split()):
        wait_for(f"process {pid} to be gone", lambda: not process_running(pid), 5)  # noqa: B023


def test_a_stop_signal_while_stop_waits_for_a_command_kills_it_instead_of_orphaning_it(
        tmp_path: Path) -> None:
    """`watch` waits for the hook after the dashboard gave its signal handlers back: a second
    Ctrl-C there raised `StopRequested` out of `stop()`'s wait, gapwatch exited and the command
    (in a session of its own, out of reach of the terminal's Ctrl-C) ran on, an orphan."""
    pids = tmp_path / "pids"
    script = (f"import os, subprocess, time\nchild = subprocess.Popen(['sleep', '60'])\n"
              f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
              "time.sleep(60)\n")
    hook = EventHook([sys.executable, "-c", script], timeout_s=60.0)
    hook.start()
    hook.offer(Event("post_late", None, "", 1.0, detail="PoSt 42 s late"))
    wait_for("the command to start", lambda: pids.exists() and " " in pids.read_text(), 20)

    def stop(signum: int, frame: object) -> None:
        raise StopRequested(signal.SIGINT)

    old = signal.signal(signal.SIGUSR1, stop)
    main_thread = threading.get_ident()

    def second_ctrl_c() -> None:
        wait_for("stop() to wait", lambda: _waiting_in_stop(main_thread), 20)
        signal.pthread_kill(main_thread, signal.SIGUSR1)

    sender = threading.Thread(target=second_ctrl_c, daemon=True)
    sender.start()
    try:
        with pytest.raises(StopRequested):
            hook.stop()
    finally:
        signal.signal(signal.SIGUSR1, old)
    for pid in map(int, pids.read_text().split()):
        wait_for(f"process {pid} to be gone", lambda: not process_running(pid), 10)  # noqa: B023


def _waiting_in_stop(thread_id: int) -> bool:
    """Whether that thread is blocked in a wait (a lock's acquire) called from
    `EventHook.stop`."""
    return _blocked(thread_id, lambda frame: frame.f_code.co_name == "stop" and isinstance(
        frame.f_locals.get("self"), EventHook))


def _blocked(thread_id: int, within: Callable[[FrameType], bool]) -> bool:
    """Whether that thread is blocked in a wait (a lock's acquire) with a frame on its stack
    that `within` picks."""
    frame = sys._current_frames().get(thread_id)
    if frame is None or frame.f_code.co_name not in ("wait", "_wait_for_tstate_lock"):
        return False
    while frame is not None:
        if within(frame):
            return True
        frame = frame.f_back
    return False


def test_events_waiting_in_a_full_queue_at_stop_still_run_and_stop_returns_with_them(
        tmp_path: Path) -> None:
    """`stop` put its end-of-queue marker with a 1 s wait for room: with the queue full (a
    slow command, events waiting behind it) it gave up, dropped every waiting event, and the
    thread, never told to end, kept `stop` waiting the timeout plus 10 s."""
    gate, ran = tmp_path / "gate", tmp_path / "ran"
    script = (f"import os, time\nwhile not os.path.exists({str(gate)!r}): time.sleep(0.01)\n"
              f"open({str(ran)!r}, 'a').write('x')\n")
    hook = EventHook([sys.executable, "-c", script], timeout_s=30.0, min_interval_s=0)
    hook.start()
    offered = 0
    while hook.offer(Event("gpu_error", offered, "", 1.0)):
        offered += 1
        if offered == 1:
            wait_for("the first command to run", lambda: hook.counts.ran == 1, 20)
    assert offered == 1 + MAX_QUEUED  # one running, the queue full behind it
    stopping = threading.Thread(target=hook.stop, daemon=True)
    stopping.start()
    wait_for("stop() to wait for the queue to run", lambda: _waiting_on(stopping, hook), 20)
    gate.touch()
    stopping.join(60)
    assert not stopping.is_alive()
    assert (hook.counts.ran, ran.read_text()) == (offered, "x" * offered)
    assert hook.counts.dropped == 1  # the offer the full queue refused, no more


def _waiting_on(thread: threading.Thread, hook: EventHook) -> bool:
    """Whether `thread` is blocked in `hook`'s wait for its thread to end (`stop`)."""
    return _blocked(thread.ident or 0, lambda frame: frame.f_code.co_name == "wait"
                    and frame.f_locals.get("self") is hook._done)


def test_events_of_one_kind_and_gpu_are_rate_limited_and_the_queue_is_bounded(
        tmp_path: Path) -> None:
    hook = EventHook([sys.executable, "-c", "pass"], min_interval_s=60)  # not started
    assert hook.offer(Event("breakdown_entered", 0, "BREAKDOWN", 1.0))
    assert not hook.offer(Event("breakdown_entered", 0, "BREAKDOWN", 2.0))
    assert hook.offer(Event("breakdown_entered", 1, "BREAKDOWN", 2.0))
    assert hook.counts.rate_limited == 1
    flood = EventHook([sys.executable, "-c", "pass"], min_interval_s=0)
    for i in range(20):
        flood.offer(Event("gpu_error", i, "", 1.0))
    assert flood.counts.dropped == 20 - 8
    flood.stop()  # never started: the events it held are dropped, and counted so
    assert flood.counts.dropped == 20


def test_the_command_is_split_into_words_and_bad_quoting_refused() -> None:
    assert parse_command("notify-send 'GPU down' --urgency=critical") == [
        "notify-send", "GPU down", "--urgency=critical"]
    with pytest.raises(ValueError):
        parse_command("echo 'unbalanced")
    with pytest.raises(ValueError):
        parse_command("   ")


def test_record_refuses_an_on_event_command_it_cannot_split(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["record", "--source", "sim:chained", "--speed", "0", "--duration", "1",
               "--out", str(tmp_path / "r.jsonl"), "--on-event", "echo 'x"])
    assert rc == 2 and "quotation" in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists() or (tmp_path / "r.jsonl").stat().st_size < 4096


def test_watch_runs_the_command_beside_the_dashboard(tmp_path: Path) -> None:
    argv, out = _recorder(tmp_path)
    (tmp_path / "c.toml").write_text(f'[snapshot]\ndir = "{tmp_path / "snaps"}"\n')
    app = PtyApp("watch", "--config", str(tmp_path / "c.toml"), "--source", "sim:pageable",
                 "--speed", "20", "--on-event", " ".join(argv))
    try:
        wait_for("the dashboard to draw", app.drawn)
        wait_for("the command to run on BREAKDOWN", lambda: bool(_lines(out)), 30)
        app.send(b"q")
        rc = app.wait()
    finally:
        app.close()
    assert rc == 0
    event = _lines(out)[0]
    assert (event["GAPWATCH_EVENT"], event["GAPWATCH_CAUSE"]) == ("breakdown_entered",
                                                                 "pinned_pool")
    # At 20x the GPU may leave BREAKDOWN and enter it again before `q`: every run went well.
    assert app.text_seen("gapwatch watch: --on-event ran"), bytes(app.output[-600:])
    assert app.text_seen(" ok, 0 failed, 0 killed after the timeout")


def _post(t: float, job: str, verdict: str, done: bool, given_up: str | None = None
          ) -> ProverEvent:
    return ProverEvent(t_wall_s=t, kind="proof", level="error", job_id=job,
                       message=f"WinningPoSt {job}",
                       proof=ProofTiming("winning-post", total_s=t, deadline_s=30.0,
                                         verdict=verdict, done=done,  # type: ignore[arg-type]
                                         given_up=given_up))  # type: ignore[arg-type]


def test_a_post_retried_under_its_id_after_a_restart_runs_the_command_again_when_late() -> None:
    # Curio retries a PoSt lost in a restart under the same job id: the retry going late was
    # never said, its id already "offered" by the lost one.
    hook = EventHook(["true"], min_interval_s=0)
    offered: list[Event] = []

    def offer(event: Event) -> bool:
        offered.append(event)
        return True
    hook.offer = offer  # type: ignore[method-assign]
    for record in (_post(35.0, "wp-1", "late", done=False),        # late while it runs
                   _post(40.0, "wp-1", "late", False, "restart"),  # then lost: the same proof
                   _post(90.0, "wp-1", "late", done=False),        # the retry, late
                   _post(95.0, "wp-1", "late", done=True),         # and done: the same retry
                   _post(99.0, "wp-2", "late", done=True)):        # another, late when done
        hook.on_record(record)
    assert [(e.state, e.t_wall_s) for e in offered] == [("late", 35.0), ("late", 90.0),
                                                       ("late", 99.0)]


def test_record_runs_the_command_on_a_late_post_a_restart_and_a_prover_error(
        tmp_path: Path) -> None:
    """sim:post's script (docs/post.md): a WinningPoSt loading its evicted SRS in its synthesis
    step goes late, the prover panics on a CUDA error, then is killed and restarts; each is one
    event."""
    argv, out = _recorder(tmp_path)
    _record("--source", "sim:post", "--speed", "0", "--duration", "160", "--quiet",
            "--out", str(tmp_path / "r.jsonl"), "--on-event", " ".join(argv))
    lines = _lines(out)
    events = {str(e["GAPWATCH_EVENT"]): e for e in lines}
    assert {"post_late", "restart", "gpu_error"} <= set(events), events.keys()
    # Said late while it ran and again when it ended: one command for the one proof.
    assert sum(e["GAPWATCH_EVENT"] == "post_late" for e in lines) == 1
    late = events["post_late"]
    assert late["GAPWATCH_STATE"] == "late" and late["GAPWATCH_CAUSE"] == "winning-post"
    assert late["GAPWATCH_CAUSE_WORDS"] == "WinningPoSt"
    # Its synthesis loaded its evicted SRS: the setting alone (it held a paragraph); its words,
    # with the proof's figures, in the line.
    assert late["GAPWATCH_SETTING"] == "[memory] eviction_min_idle"
    assert "; setting: [memory] eviction_min_idle: " in str(late["GAPWATCH_LINE"])
    restart = events["restart"]
    assert "restart" in str(restart["GAPWATCH_DETAIL"]).lower()
    # Killed (sim:post's script): how the run before ended, as a token and in words; no
    # setting closes a restart ("none", as the docs say: it was empty).
    assert (restart["GAPWATCH_CAUSE"], restart["GAPWATCH_SETTING"]) == ("killed", "none")
    assert restart["GAPWATCH_CAUSE_WORDS"] == "killed or crashed: no shutdown line before it"
    error = events["gpu_error"]
    assert error["GAPWATCH_CAUSE"] in ("error", "lost_job")
    # The error in words (it was empty beside CAUSE=error).
    assert error["GAPWATCH_CAUSE_WORDS"] == error["GAPWATCH_LINE"] != ""
    assert error["GAPWATCH_SETTING"] == "none"
    for e in lines:
        _holds_the_contract(e)


def _documented_variables() -> list[str]:
    """The GAPWATCH_* variables docs/fleet.md's table lists."""
    doc = (Path(__file__).parents[1] / "docs" / "fleet.md").read_text()
    table = doc.split("## `--on-event CMD`", 1)[1].split("\n\n| variable |", 1)[1]
    rows = table.split("\n\n", 1)[0].splitlines()
    return [name for row in rows for name in re.findall(r"`(GAPWATCH_\w+)`", row.split("|")[1])]


def _holds_the_contract(e: dict[str, object]) -> None:
    """docs/fleet.md's contract: every documented variable set for every event, none other;
    `none` where it is known there is none, empty where not applicable or not known: SETTING
    never empty, CAUSE_WORDS empty only beside CAUSE `none` (or a cause not known), the
    payoff's three together, a snapshot folder absolute."""
    names = {k for k in e if k.startswith("GAPWATCH_")}
    assert names == set(_documented_variables()), names ^ set(_documented_variables())
    assert e["GAPWATCH_SETTING"] != "", e
    assert (e["GAPWATCH_CAUSE_WORDS"] == "") == (e["GAPWATCH_CAUSE"] in ("none", "")), e
    payoff = [e["GAPWATCH_PAYOFF"], e["GAPWATCH_PAYOFF_SPAN_S"], e["GAPWATCH_PAYOFF_GAPS"]]
    assert all(payoff) or not any(payoff), e
    assert e["GAPWATCH_SNAPSHOT_DIR"] == "" or Path(str(e["GAPWATCH_SNAPSHOT_DIR"])).is_absolute()


def test_a_prover_event_on_a_gpu_in_breakdown_keeps_its_own_facts_not_the_verdicts() -> None:
    """A panic on a GPU in BREAKDOWN was handed the breakdown's setting and payoff (the verdict
    was read for every event with a GPU): the verdict is a BREAKDOWN event's facts only."""
    from gapwatch.core.models import Gap, GpuInfo
    from gapwatch.core.store_snapshot import StoreSnapshot
    from gapwatch.core.verdict import WindowNow
    from gapwatch.engine.events import event_of, with_facts

    gap = Gap(2, 0, "host_stall", 75_000_000_000, 75.0, 81_000_000_000, 81.0, 6.0, 1e9, None,
              63e9, prover_cause="batch_wait")
    snap = StoreSnapshot(1, (GpuInfo(index=0),), {}, (), (), (gap,),
                         {0: StateChange(0, 100, 100.0, "BREAKDOWN", 0.5)}, (),
                         windows={0: WindowNow(gpu=0, t_mono_ns=100, end_wall_s=100.0,
                                               window_s=30.0)})
    panic = ProverEvent(100.0, "error", "error", "GPU prove start task panicked: task 41 "
                        "panicked with message out of memory", gpu=0)
    event = event_of(panic)
    assert event is not None
    env = with_facts(event, snap).env()
    assert (env["GAPWATCH_SETTING"], env["GAPWATCH_PAYOFF"]) == ("none", "")
    entered = with_facts(Event("breakdown_entered", 0, "BREAKDOWN", 100.0), snap).env()
    assert entered["GAPWATCH_SETTING"] != "none" and entered["GAPWATCH_PAYOFF"] != ""


def test_an_event_of_one_of_several_daemons_names_it() -> None:
    """Two daemons' logs: a restart named neither (GAPWATCH_GPU empty, its line "cuzk
    restarted ..."); the daemon it is of is in GAPWATCH_DAEMON (its listen address) and
    GAPWATCH_DAEMON_GPUS, as its line says it (`cuzk.daemons.Daemons.named`)."""
    from gapwatch.engine.events import event_of

    restart = ProverEvent(100.0, "restart", "warning", "daemon 127.0.0.1:9830 (GPU 1): cuzk "
                          "restarted with no shutdown line before it", daemon="127.0.0.1:9830",
                          daemon_gpus=[1], cause="killed")
    event = event_of(restart)
    assert event is not None
    env = event.env()
    assert (env["GAPWATCH_DAEMON"], env["GAPWATCH_DAEMON_GPUS"], env["GAPWATCH_GPU"]) == (
        "127.0.0.1:9830", "1", "")
    assert env["GAPWATCH_LINE"].startswith("daemon 127.0.0.1:9830 (GPU 1): ")
    _holds_the_contract(dict(env))


@pytest.mark.parametrize("command", ["record", "watch"])
@pytest.mark.parametrize(("program", "said"), [
    ("{tmp}/no-such-hook", "No such file or directory"),
    ("{tmp}", "is a directory, not a command"),
    ("/dev/null", "is a character device, not a command"),
    ("{tmp}/hook.sh", "is not executable (chmod +x it, or name its interpreter"),
    ("gapwatch-no-such-hook-anywhere", "no such command on PATH"),
])
def test_a_hook_that_cannot_be_run_is_refused_at_start_before_anything_is_made(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, program: str,
        said: str) -> None:
    """Found out at the first event, a mistyped hook was said only when a GPU entered
    BREAKDOWN (the page it was for lost), and a directory only as `Permission denied`."""
    (tmp_path / "hook.sh").write_text("#!/bin/sh\necho hi\n")  # no execute bit
    out = tmp_path / "r.jsonl"
    args = (["--speed", "0", "--duration", "1", "--out", str(out)] if command == "record"
            else ["--record", str(out)])
    rc = main([command, "--source", "sim:chained", *args,
               "--on-event", program.format(tmp=tmp_path) + " --flag"])
    err = capsys.readouterr().err
    assert rc == 2 and said in err and f"gapwatch {command}: --on-event:" in err, err
    assert not out.exists()


def test_a_hook_found_on_path_or_given_with_its_interpreter_is_taken(tmp_path: Path) -> None:
    script = tmp_path / "hook.sh"
    script.write_text("#!/bin/sh\n")
    assert program_problem("sh") is None and program_problem(sys.executable) is None
    assert checked_command(f"sh {script}") == ["sh", str(script)]
