"""A swallowed stop signal is sent again until its handler has run somewhere it can raise.

`gapwatch.base.quit_early._send_again` runs on its own thread while the main thread, on a loaded
box, may take longer than a look's 10 ms to run the Python-level handler of the signal it sent.
These tests stand in for that main thread (a timer runs `_stop` late), so the race is the same
every run (`test_stop_anytime.py` runs the real one in a process).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from gapwatch.base import quit_early
from gapwatch.base.quit_early import StopRequested, _Pending


@pytest.fixture(autouse=True)
def _pending_left_as_found(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("signal", "swallowed", "since_mono", "in_hook", "resend", "handled"):
        monkeypatch.setattr(_Pending, name, getattr(_Pending, name, 0), raising=False)
    monkeypatch.setattr(_Pending, "signal", None)
    yield


def _handler_runs_late(delay_s: float, in_hook: bool) -> None:
    """The main thread runs the handler `delay_s` later, inside `_unraisable` or outside."""

    def run() -> None:
        _Pending.in_hook = in_hook
        try:
            quit_early._stop(signal.SIGTERM, None)
        except StopRequested:
            pass  # raised where it can be: the command stops
        finally:
            _Pending.in_hook = False

    threading.Timer(delay_s, run).start()


def test_a_signal_whose_handler_runs_late_inside_the_hook_is_sent_once_more(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """On a box at load 9 the handler of the signal sent again ran 50 ms later, inside the hook
    (it deferred it), after the sending thread had looked once at 10 ms and returned: nobody
    sent it again, and the command ran on."""
    kills: list[int] = []

    def kill(_pid: int, sig: int) -> None:
        kills.append(sig)
        # The first lands in the hook late; the second where it can raise.
        _handler_runs_late(0.05, in_hook=len(kills) == 1)

    monkeypatch.setattr(os, "kill", kill)
    sender = threading.Thread(target=quit_early._send_again, args=(signal.SIGTERM,))
    sender.start()
    sender.join(5)
    assert not sender.is_alive()
    assert kills == [signal.SIGTERM, signal.SIGTERM]


def test_a_signal_whose_handler_raised_is_not_sent_again(monkeypatch: pytest.MonkeyPatch) -> None:
    kills: list[int] = []

    def kill(_pid: int, sig: int) -> None:
        kills.append(sig)
        _handler_runs_late(0.03, in_hook=False)

    monkeypatch.setattr(os, "kill", kill)
    sender = threading.Thread(target=quit_early._send_again, args=(signal.SIGTERM,))
    sender.start()
    sender.join(5)
    assert not sender.is_alive() and kills == [signal.SIGTERM]
