"""Rewrite the test modules' asserts once, before the suite's worker processes start.

Who calls it: `tests/conftest.py`'s `pytest_configure`, in the controlling process of a run with
workers (`-n N`, the default). pytest rewrites each test module's `assert`s when it imports it
and caches the result beside the source (`__pycache__/*-pytest-*.pyc`); in a fresh clone the
cache is empty, and the N workers, started together, each rewrote all ~130 modules (4.5 s of
CPU each: the suite's costliest start-up on a 2-core CI box). Here the controller fills the
cache first, in two processes, through pytest's own functions; the workers then find every
module cached. Only what pytest would write is written (the same function, the same config).

This leans on pytest internals (`_pytest.assertion.rewrite`): if they move, nothing is warmed
and the suite runs as before, only slower to start.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

#: The pytest config the forked rewriting processes use (set before they fork).
_config: Any = None


def _rewrite_one(path: str) -> None:
    from _pytest.assertion.rewrite import (
        PYC_TAIL,
        _read_pyc,
        _rewrite_test,
        _write_pyc,
        assertstate_key,
        get_cache_dir,
        try_makedirs,
    )

    fn = Path(path)
    cache_dir = get_cache_dir(fn)
    pyc = cache_dir / (fn.name[:-3] + PYC_TAIL)
    state = _config.stash[assertstate_key]
    if not try_makedirs(cache_dir) or _read_pyc(fn, pyc, state.trace) is not None:
        return  # cached already (or nowhere to write: the workers will rewrite it themselves)
    source_stat, co = _rewrite_test(fn, _config)
    _write_pyc(state, co, source_stat, pyc)


def warm(config: Any, tests: Path) -> None:
    """Fill the assert-rewrite cache of `tests`' test modules and conftest, two at a time."""
    global _config
    try:
        import _pytest.assertion.rewrite  # noqa: F401 - the internals _rewrite_one uses
    except ImportError:
        return
    paths = sorted(str(p) for p in [*tests.glob("test_*.py"), tests / "conftest.py"])
    _config = config
    try:
        with multiprocessing.get_context("fork").Pool(2) as pool:
            pool.map(_rewrite_one, paths, chunksize=4)
    except (AttributeError, ImportError, KeyError, OSError):
        return  # pytest's internals moved: each worker rewrites what it imports, as before
    finally:
        _config = None
