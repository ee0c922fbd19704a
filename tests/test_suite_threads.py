"""The suite's threads (tests/conftest.py): a thread a test leaves running is found, and the
fake servers the tests start end theirs. A worker holding a thread besides its main one ran
the parallel report's workers spawned, or the `--log` files in one process, instead of forked
(`report_parallel.can_share_logs`), so the split tests compared a report with itself."""

from __future__ import annotations

import threading

from conftest import stray_threads
from test_fleet_hostile_http import _ask, hostile


def test_a_thread_still_running_is_named_and_one_that_ended_is_not() -> None:
    release = threading.Event()
    waiting = threading.Thread(target=release.wait, name="left-waiting", daemon=True)
    waiting.start()
    try:
        # (An earlier test's thread still ending may be named beside it: only this one is ours.)
        assert "left-waiting" in stray_threads(0.05)
    finally:
        release.set()
    assert "left-waiting" not in stray_threads(5.0) and not waiting.is_alive()


def test_a_hostile_server_ends_its_thread_when_its_test_is_done() -> None:
    """Its listener was closed while its thread waited in `accept`, which a close does not
    wake: the thread waited there for the rest of the worker's run."""
    before = set(threading.enumerate())
    with hostile(lambda conn: None) as url:
        _ask(url)
    started = set(threading.enumerate()) - before  # its server's, the connection's
    for thread in started:
        thread.join(5.0)  # the connection's ends with its answer, not with the `with`
    assert [t.name for t in started if t.is_alive()] == []
