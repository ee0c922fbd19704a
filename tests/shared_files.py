"""Files that take seconds to make (a half-hour simulated recording, a compiled library), made
once per test run and shared by its worker processes.

A module-scoped fixture runs once per worker that draws one of its tests: with three workers,
up to three copies of the same slow file. Here the first worker to ask makes it, under a lock,
in the run's own temporary folder (shared by the workers of one run, never by two runs); the
others wait for it and read the same path. Tests must not change what they are given.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path

import pytest


def _run_folder(factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of this run: each xdist worker's base folder lies in it; in one
    process, the base folder itself (its parent holds the folders of earlier runs)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def made_once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], object]) -> Path:
    """The folder `name` of this run, filled by `make(folder)` the first time any worker asks."""
    root = _run_folder(factory) / "made-once"
    root.mkdir(exist_ok=True)
    folder = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        done = root / f"{name}.done"
        if not done.exists():
            folder.mkdir(exist_ok=True)
            make(folder)
            done.touch()
    return folder
