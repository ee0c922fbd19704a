"""Shared test fixtures: keep every test hermetic (no user config, no real home)."""

from __future__ import annotations

import gc
import itertools
import os
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

if TYPE_CHECKING:
    from gapwatch.core.models import GpuInfo
    from gapwatch.sources.nvml import NvmlSource

# Cache compiled bytecode even where PYTHONDONTWRITEBYTECODE is set (as on the project's CI
# machines): otherwise each of the suite's worker processes rewrites every test module's asserts,
# and each of the ~200 `python -m gapwatch` processes the tests start compiles the package from
# source again (0.6 s of CPU each instead of 0.25). Set before any test module is imported; the
# environment carries it to the workers and subprocesses. The caches go to `__pycache__` folders,
# which git ignores.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


@pytest.fixture(scope="session")
def _config_homes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the tests' own config homes (`_no_user_config`), one per process."""
    return tmp_path_factory.mktemp("xdg")


_config_home_numbers = itertools.count()


@pytest.fixture(autouse=True)
def _no_user_config(_config_homes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A developer's ~/.config/gapwatch/config.toml must never change what a test sees: each
    # test has a config home of its own, with nothing in it. Numbered here, in a folder of
    # their own: `tmp_path_factory.mktemp` lists the whole base folder to number each new one,
    # and a worker's ~460 of them beside its tmp_paths made that ~1 ms a test, growing as it
    # went. Not created: a home that does not exist holds no config as surely as an empty one
    # (gapwatch only looks for `gapwatch/config.toml` there), and the suite's ~3,000 folders
    # cost ~0.25 CPU-s of `mkdir`.
    home = _config_homes / str(next(_config_home_numbers))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))


@pytest.fixture(autouse=True)
def _collector_left_as_found() -> Iterator[None]:
    """A test that leaves Python's cyclic garbage collector off fails (and it is turned back
    on): the offline commands turn it off while they read, and one that missed turning it back
    on (a `--log` that could not be read) left it off for every later test in the worker, whose
    heap then grew to a million objects and took seconds to exit."""
    was_on = gc.isenabled()
    yield
    if gc.isenabled() != was_on:
        (gc.enable if was_on else gc.disable)()
        pytest.fail(f"the cyclic garbage collector was left {'off' if was_on else 'on'}")



#: How long `no_stray_threads` waits for threads an earlier test left that are still ending (a
#: hostile server's last drip, a replay's `gapwatch-done` settling its detector: seen alive at
#: the next test's start), generous for a loaded box: seconds.
STRAY_THREADS_WAIT_S = 30.0


@pytest.fixture
def no_stray_threads() -> None:
    """The test starts with this process's main thread alone, as `gapwatch report` runs: the
    parallel report and the split log parse fork their workers only then
    (`report_parallel.can_share_logs`). With a thread an earlier test in the worker had left
    running (a fake server's, a source's), they spawned them (a fresh interpreter and its
    imports each, ~0.3 CPU-s) or read the `--log` files in one process, and a test comparing
    the split report with the one-process one compared that one with itself. Threads still
    ending are waited for; one that does not end fails the test, named."""
    left = stray_threads(STRAY_THREADS_WAIT_S)
    if left:
        pytest.fail(f"threads an earlier test left running: {left}")


def stray_threads(wait_s: float) -> list[str]:
    """The names of the threads besides the main one still running after waiting up to
    `wait_s` seconds in all for them to end."""
    deadline = time.monotonic() + wait_s
    for thread in threading.enumerate():
        if thread is not threading.main_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
    return [t.name for t in threading.enumerate() if t is not threading.main_thread()]


@pytest.fixture
def nvml_sources_closed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every `NvmlSource` the test opened is closed when it ends. One left open kept its XID
    thread waiting on the (fake) driver, 50 ms at a time, for the rest of the worker's run:
    a worker ended the suite with 37 of them (and see `no_stray_threads`)."""
    from gapwatch.sources.nvml import NvmlSource

    opened: list[NvmlSource] = []
    real_open = NvmlSource.open

    def open_tracked(self: NvmlSource) -> list[GpuInfo]:
        opened.append(self)
        return real_open(self)

    monkeypatch.setattr(NvmlSource, "open", open_tracked)
    yield
    for source in opened:
        source.close()  # a second close is a no-op: tests that close their source keep doing so


DATA = Path(__file__).parent / "data"
T = TypeVar("T")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "session_errors_expected: a part of the session raises on purpose")
    if config.getoption("numprocesses", None) and not hasattr(config, "workerinput"):
        # The controller of a run with workers: rewrite the asserts once, not once per worker.
        from rewrite_cache import warm

        warm(config, Path(__file__).parent)


#: What tests must never leave in the checkout: a dashboard run in a pty works there, and its
#: automatic snapshot (default folder ".") landed there when a demo reached BREAKDOWN before
#: its test stopped it.
_LEFT_IN_CHECKOUT = "gapwatch-snapshot-*"
_ROOT = Path(__file__).resolve().parent.parent


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_left_key] = set(_ROOT.glob(_LEFT_IN_CHECKOUT))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The run fails when a test left a snapshot folder in the checkout (said, not removed:
    it may be the developer's own)."""
    if hasattr(session.config, "workerinput"):
        return  # the controller looks, once
    before = session.config.stash.get(_left_key, set())
    left = sorted(set(_ROOT.glob(_LEFT_IN_CHECKOUT)) - before)
    if left:
        names = ", ".join(p.name for p in left)
        print(f"\nFAILED: tests left {names} in the checkout ({_ROOT})", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_left_key = pytest.StashKey[set[Path]]()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """At the end of a run pytest collects garbage five times over to catch exceptions raised in
    finalizers (its unraisable-exception check); each pass walked every object a worker still
    held (~500 k), ~0.4 s each, and five workers doing so at once were the run's last ~5 s.
    One collection here finds the garbage (its finalizers run, their exceptions are still
    caught); what is left is frozen out of the collector's reach, so pytest's passes that
    follow look only at what that collection's finalizers let go."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """No cyclic collection while the tests are collected: what collecting builds all lives
    on (below), and its ~30 collections on the way walked it for nothing (~0.1 s a worker)."""
    gc.disable()
    try:
        return (yield)
    finally:
        gc.enable()


def pytest_collection_finish(session: pytest.Session) -> None:
    """What the collection built (every worker collects all ~2,300 tests: ~150 k objects, the
    items, the test modules and what they import) lives until the run ends: it is put out of
    the cyclic garbage collector's reach, as the dashboard does (`gapwatch.ui.dashboard_app`).
    Each full pass during the tests walked it again, ~0.08 s each; over a worker's share of
    the suite (~460 tests, ~20 passes) its full passes took 1.9 s of CPU, 0.8 s with this.
    Only what is alive now is frozen (garbage is collected first), and frozen objects are
    still freed by reference counting: the tests' own objects are collected as before."""
    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `slow` spread over the first half of the run, in their order. Most of them
    wait (a Prometheus scraping, a dashboard in a pty, a disk filling), and the workers (five on
    a 2-core box) keep both cores busy only while about two of them have work to compute: the
    slow ones all at once left the cores idle, and one started last alone was the run's last
    ~8 s. The workers take tests one at a time in this order (`--maxschedchunk 1`, pyproject's
    addopts), so a test's place in the list is when it starts."""
    items[:] = spread_slow(items, lambda item: item.get_closest_marker("slow") is not None)


def spread_slow(items: list[T], is_slow: Callable[[T], bool]) -> list[T]:
    """`items` reordered: each slow one followed by an equal share of the others, the shares
    together half of the others, then the rest in their order. Every item once."""
    slow = [item for item in items if is_slow(item)]
    rest = [item for item in items if not is_slow(item)]
    every = len(rest) // (2 * len(slow)) if slow else 0
    order: list[T] = []
    for k, item in enumerate(slow):
        order.append(item)
        order += rest[k * every:(k + 1) * every]
    return order + rest[len(slow) * every:]


@pytest.fixture(autouse=True)
def _sessions_swallow_no_errors(request: pytest.FixtureRequest,
                                monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every `Session` made in a test is held to zero `record_errors` when the test ends.

    The Session swallows a detector's, sink's or listener's exception so that monitoring goes on
    (counted, said once); a test would pass over such a bug without a word. Sessions made in
    subprocesses are not seen here: those tests read the process's exit status and output.
    """
    from gapwatch.engine.session import Session

    made: list[Session] = []
    real_init = Session.__init__

    def tracking_init(self: Session, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(Session, "__init__", tracking_init)
    yield
    if request.node.get_closest_marker("session_errors_expected") is not None:
        return
    for session in made:
        errors = session.store.snapshot().counters.get("record_errors", 0)
        assert errors == 0, (f"a session swallowed {errors} error(s) from its detector, sinks or "
                             "listeners (record_errors); see its error notices")
