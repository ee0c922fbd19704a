"""The tailer looks at its files when their folders change (inotify), not on a 50 ms timer: a
line written to a quiet log arrives at once, a quiet log costs one pass every `idle_poll_ms`,
and what cannot be heard (a FIFO, a folder that is not there) is polled as before.

Each test gives an idle poll of a minute: a line that arrives within the test's wait came by a
wake, never by the idle pass."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from faults import wait_for

from gapwatch.logs.tail import Tailer
from gapwatch.logs.wake import folders_to_watch

pytestmark = pytest.mark.skipif(not os.uname().sysname == "Linux", reason="inotify is Linux's")

MINUTE_MS = 60_000.0


class _Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, source: str, text: str, mono_ns: int, wall_s: float) -> None:
        with self._lock:
            self.lines.append(text)

    def has(self, text: str) -> bool:
        with self._lock:
            return text in self.lines


def _tailer(paths: list[str], lines: _Lines) -> Tailer:
    return Tailer(paths, lines, poll_ms=50, idle_poll_ms=MINUTE_MS)


def _append_and_see(followed: Path, written: Path, text: str) -> None:
    """Follow `followed`, append `text` to `written` once the tailer runs, and wait for it."""
    lines = _Lines()
    t = _tailer([str(followed)], lines)
    t.start()
    try:
        assert t.woken
        with open(written, "a") as fh:
            fh.write(text + "\n")
        wait_for(f"the line {text!r}", lambda: lines.has(text))
    finally:
        t.stop()


def test_a_line_written_to_a_quiet_log_is_read_when_written_not_at_the_idle_pass(
        tmp_path: Path) -> None:
    log = tmp_path / "cuzk.log"
    log.write_text("old\n")
    _append_and_see(log, log, "new line")


def test_a_rotation_and_a_copytruncate_are_heard_too(tmp_path: Path) -> None:
    log = tmp_path / "cuzk.log"
    log.write_text("")
    lines = _Lines()
    t = _tailer([str(log)], lines)
    t.start()
    try:
        log.rename(tmp_path / "cuzk.log.1")
        log.write_text("after rotation\n")
        wait_for("the line after rotation", lambda: lines.has("after rotation"))
        with open(log, "r+") as fh:
            fh.truncate(0)
        with open(log, "a") as fh:
            fh.write("after truncation, longer than what was there\n")
        after = "after truncation, longer than what was there"
        wait_for("the line after the truncation", lambda: lines.has(after))
    finally:
        t.stop()


def test_a_log_that_appears_later_is_heard_in_its_folder(tmp_path: Path) -> None:
    log = tmp_path / "later.log"
    _append_and_see(log, log, "first line of a new log")


def test_a_symlinked_log_is_heard_in_its_targets_folder(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "links").mkdir()
    target = tmp_path / "data" / "cuzk.log"
    target.write_text("")
    link = tmp_path / "links" / "cuzk.log"
    link.symlink_to(target)
    assert folders_to_watch([str(link)]) == [str(tmp_path / "links"), str(tmp_path / "data")]
    _append_and_see(link, target, "written through the target")


def test_stop_returns_without_waiting_out_the_idle_pass(tmp_path: Path) -> None:
    log = tmp_path / "cuzk.log"
    log.write_text("")
    t = _tailer([str(log)], _Lines())
    t.start()
    t.stop(timeout_s=20.0)  # a minute's idle wait would outlast this join
    assert not any(th.is_alive() for th in t._threads)


def test_a_fifo_or_a_missing_folder_is_polled_as_before(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert folders_to_watch([str(tmp_path / "a.log"), str(fifo)]) is None
    for paths in ([str(fifo)], [str(tmp_path / "no-such-folder" / "cuzk.log")]):
        t = Tailer(paths, _Lines(), poll_ms=50)
        t.start()
        try:
            assert not t.woken
        finally:
            t.stop()
