"""Stop signals (SIGINT, SIGTERM, SIGHUP) end every command cleanly: the recording is closed whole
(gzip trailer written: the reader finds no "ends early"), the summary is printed, and the
dashboard leaves the terminal as it found it (alternate screen left, mouse tracking off).
`q` and Ctrl-C quit the dashboard."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from faults import (
    PtyApp,
    gapwatch_argv,
    quick_config,
    records_of,
    records_written,
    signal_storm,
    terminal_restored,
    wait_for,
)

from gapwatch.engine.stop_signals import StopSignals

STOP = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


def _recording(tmp_path: Path, out: Path) -> subprocess.Popen[str]:
    """`record` of the simulated prover to `out`, its stderr piped."""
    return subprocess.Popen(gapwatch_argv("record", "--config", str(quick_config(tmp_path)),
                                          "--source", "sim:pageable", "--speed", "10",
                                          "--out", str(out), "--quiet"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("sig", STOP, ids=lambda s: s.name)
def test_record_stops_cleanly_on_each_stop_signal(tmp_path: Path, sig: signal.Signals) -> None:
    out = tmp_path / "r.jsonl.gz"
    proc = _recording(tmp_path, out)
    try:
        wait_for("the first records on disk", lambda: out.exists() and out.stat().st_size > 2000)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert f"stopped ({sig.name})" in err and "records in" in err  # the summary
    records = records_of(out)
    assert len(records) > 20


@pytest.mark.parametrize("sig", STOP, ids=lambda s: s.name)
def test_dashboard_restores_the_terminal_and_closes_its_recording_on_each_stop_signal(
        tmp_path: Path, sig: signal.Signals) -> None:
    out = tmp_path / "d.jsonl.gz"
    app = PtyApp("demo", "--config", str(quick_config(tmp_path)), "--speed", "4", "--record",
                 str(out))
    try:
        wait_for("the dashboard to draw", app.drawn)
        wait_for("records on disk", lambda: records_written(out, 11))
        app.signal(sig)
        rc = app.wait()
    finally:
        app.close()
    assert rc == 0
    assert terminal_restored(bytes(app.output)), bytes(app.output[-400:])
    assert f"stopped ({sig.name})".encode() in app.output
    assert len(records_of(out)) > 10


@pytest.mark.parametrize("key", [b"q", b"\x03"], ids=["q", "ctrl-c"])
def test_q_and_ctrl_c_both_quit_the_dashboard(tmp_path: Path, key: bytes) -> None:
    out = tmp_path / "d.jsonl"
    app = PtyApp("demo", "--config", str(quick_config(tmp_path)), "--speed", "4", "--record",
                 str(out))
    try:
        # Keys reach the app once the terminal is in raw mode: after the first full draw.
        wait_for("the dashboard to draw", app.drawn)
        wait_for("records on disk", lambda: records_written(out, 11))
        app.send(key)
        rc = app.wait()
    finally:
        app.close()
    assert rc == 0
    assert terminal_restored(bytes(app.output))
    assert b"to quit the app" not in app.output  # Textual's "Press ctrl+q to quit the app"
    assert len(records_of(out)) > 10


def test_a_closed_terminal_then_sighup_still_closes_the_recording(tmp_path: Path) -> None:
    """Closing a tmux pane: the terminal is gone before SIGHUP arrives; every write to it fails."""
    out = tmp_path / "d.jsonl.gz"
    app = PtyApp("demo", "--config", str(quick_config(tmp_path)), "--speed", "4", "--record",
                 str(out))
    try:
        wait_for("records on disk", lambda: records_written(out, 11))
        app.hang_up()
        rc = app.wait()
    finally:
        app.close()
    assert rc == 0
    assert len(records_of(out)) > 10


def test_a_storm_of_stop_signals_stops_record_once_with_its_summary(tmp_path: Path) -> None:
    """SIGINT and SIGTERM in turn every few milliseconds ended `record` by signal (130): the
    last ones land after the command gives its handlers back, and in Python's shutdown. Now
    one clean stop: exit 0, the recording whole, the summary said. Signals are sent until the
    process has ended."""
    out = tmp_path / "r.jsonl.gz"
    proc = _recording(tmp_path, out)
    try:
        wait_for("the first records on disk", lambda: out.exists() and out.stat().st_size > 2000)
    except BaseException:
        proc.kill()
        proc.wait(10)
        raise
    err = signal_storm(proc)
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    assert "stopped (SIGINT)" in err and "records in" in err  # the summary, of the first
    records_of(out)


def test_the_stop_signal_handler_takes_no_lock_and_calls_nothing() -> None:
    """It runs in the main thread between two bytecodes, maybe where that thread holds a lock:
    it set a threading.Event, whose lock is a plain one, so a signal landing inside the main
    loop's `Event.wait` deadlocked `record` for good (the storm test hung 1 time in 16 on a
    loaded box), and handlers nested in handlers ended in RecursionError (8 runs of 120 exited
    1). Every call the handler makes is traced: there is none but itself."""
    stop = StopSignals()
    calls: list[str] = []

    def trace(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            calls.append(frame.f_code.co_qualname)
        elif event == "c_call":
            calls.append(getattr(arg, "__qualname__", repr(arg)))

    sys.setprofile(trace)
    try:
        stop._handle(signal.SIGINT, None)
        stop._handle(signal.SIGTERM, None)
    finally:
        sys.setprofile(None)
    assert calls == ["StopSignals._handle", "StopSignals._handle", "setprofile"], calls
    assert stop.requested() and stop.received is signal.SIGINT
    assert stop.wait(0.0)  # and a waiter sees it, with no lock between them
