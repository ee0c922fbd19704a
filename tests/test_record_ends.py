"""`gapwatch record` ends when its data does: a replay's end (or a simulator's `--duration`)
ends the command at once, not at the next of its looks for a stop signal
(`gapwatch.commands.record.run`)."""

from __future__ import annotations

import contextlib
import io
import threading
import time
from pathlib import Path

import pytest

from gapwatch.cli import main
from gapwatch.commands import record as record_command
from gapwatch.engine import runtime as runtime_module
from gapwatch.engine.runtime import Runtime

DATA = Path(__file__).parent / "data"


class _Looked(threading.Event):
    """The runtime's `done`, which opens `looked` when the main thread waits on it."""

    def __init__(self, looked: threading.Event) -> None:
        super().__init__()
        self.looked = looked

    def wait(self, timeout: float | None = None) -> bool:
        if threading.current_thread() is threading.main_thread():
            self.looked.set()
        return super().wait(timeout)


def test_a_record_of_a_replay_does_not_sleep_once_its_data_has_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its main loop slept on in 0.2 s looks for a stop signal (`StopSignals.wait`) after the
    runtime said its data was done: up to 0.2 s of nothing at the end of every record, the
    suite's in-process records among them. The data ends only once the main thread waits
    (sleeps, or waits on `done`); a sleep of the main thread after `done` fails. The sleeps
    are made short (1 ms), so a wait of 0.2 s is many of them: one begun after `done` is
    seen wherever in the wait the data ended."""
    made: list[Runtime] = []
    looked = threading.Event()
    real_build, real_wait_driver = runtime_module.build_runtime, Runtime._wait_driver

    def build(*args: object, **kwargs: object) -> Runtime:
        rt = real_build(*args, **kwargs)  # type: ignore[arg-type]
        rt.done = _Looked(looked)
        made.append(rt)
        return rt

    def wait_driver(rt: Runtime, driver_done: threading.Event) -> None:
        assert looked.wait(30), "the main thread never waited"
        real_wait_driver(rt, driver_done)

    slept_after_done: list[float] = []
    real_sleep = time.sleep

    def sleep(seconds: float) -> None:
        if threading.current_thread() is threading.main_thread():
            looked.set()
            if made and made[0].done.is_set():
                slept_after_done.append(seconds)
            seconds = min(seconds, 0.001)
        real_sleep(seconds)

    monkeypatch.setattr(record_command, "build_runtime", build)
    monkeypatch.setattr(runtime_module.Runtime, "_wait_driver", wait_driver)
    monkeypatch.setattr(time, "sleep", sleep)
    recording = DATA / "h200-e2e" / "pageable" / "rec.jsonl.gz"
    with contextlib.redirect_stderr(io.StringIO()) as err:
        status = main(["record", "--source", f"replay:{recording}", "--speed", "0",
                       "--quiet", "--out", str(tmp_path / "again.jsonl")])
    assert status == 0, err.getvalue()
    assert made and made[0].done.is_set() and looked.is_set()
    assert slept_after_done == []
    assert "gapwatch record: stopped;" in err.getvalue()
