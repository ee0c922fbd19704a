"""Files that take seconds to make (a half-hour simulated recording, a compiled library), made
once per test run and shared by its worker processes; and a clean simulated recording's bytes,
made once per process (`sim_recording_bytes`).

A module-scoped fixture runs once per worker that draws one of its tests: with three workers,
up to three copies of the same slow file. Here the first worker to ask makes it, under a lock,
in the run's own temporary folder (shared by the workers of one run, never by two runs); the
others wait for it and read the same path. Tests must not change what they are given.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import tempfile
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


def write_sim_with_log(folder: Path, *, seed: int, duration_s: float, gpus: int
                       ) -> tuple[Path, Path]:
    """The simulator's pageable worst case (a gap every ~2 s on every GPU) written to
    `folder/sim.jsonl`, and the prover's log beside it (`cuzk.log`: TIMELINE lines, partitions,
    the engine's anchor line), as `gapwatch record` and cuzk would leave them."""
    from evaluation.simulate import simulate
    from gapwatch.sinks.recorder import write_recording

    res = simulate("pageable", seed=seed, duration_s=duration_s, gpus=gpus)
    path, log = folder / "sim.jsonl", folder / "cuzk.log"
    write_recording(path, res.header, res.records)
    log.write_text("".join(f"{text}\n" for _stream, text in res.log_lines))
    return path, log


def sim_with_log_once(factory: pytest.TempPathFactory, *, seed: int, duration_s: float,
                      gpus: int) -> tuple[Path, Path]:
    """`write_sim_with_log`'s recording and log, made once per test run for these arguments
    and shared by every test module and worker that asks for them (a 4-minute one is ~0.4 s
    of CPU; as a module fixture it was made again in each of the run's workers, and by each
    module that wants the same one). Read only: a test that changes one works on a copy."""
    folder = read_only_once(
        factory, f"sim-with-log-{seed}-{duration_s:g}s-{gpus}gpus",
        lambda folder: write_sim_with_log(folder, seed=seed, duration_s=duration_s, gpus=gpus),
        ("sim.jsonl", "cuzk.log"))
    return folder / "sim.jsonl", folder / "cuzk.log"


def read_only_once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], object],
                   files: tuple[str, ...]) -> Path:
    """`made_once`'s folder `name`, whose `files` (made by `make(folder)`) are read only and
    checked by their hash at each use: a test that changed one (root writes through 0444)
    would change every later test's input, in whichever worker and order."""
    def made(folder: Path) -> None:
        make(folder)
        for one in files:
            (folder / one).chmod(0o444)  # a test that writes to one fails there (but as root)
        (folder / "sha256").write_text(_digest(folder, files))

    folder = made_once(factory, name, made)
    assert _digest(folder, files) == (folder / "sha256").read_text(), (
        f"a test changed the shared {folder}: work on a copy")
    return folder


@functools.cache
def sim_recording_bytes(seed: int, duration_s: float, gpus: int = 1,
                        samples_only: bool = False) -> bytes:
    """The bytes `write_recording` writes of the simulator's pageable case (`samples_only`:
    its GPU and host samples alone), simulated once per process for these arguments: tests
    that each take the same clean recording and damage a copy of it (a line, the header)
    simulated it afresh for every case. The same bytes every call (the simulator is seeded,
    the writer adds nothing of its own); bytes, so no test can change what the next is given."""
    from evaluation.simulate import simulate
    from gapwatch.sinks.recorder import write_recording

    sim = simulate("pageable", seed=seed, duration_s=duration_s, gpus=gpus)
    records = [r for r in sim.records if not samples_only or r.type in ("gpu", "host")]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "sim.jsonl"
        write_recording(path, sim.header, records)
        return path.read_bytes()


def _digest(folder: Path, files: tuple[str, ...]) -> str:
    """The shared files' bytes, hashed."""
    h = hashlib.sha256()
    for one in files:
        h.update((folder / one).read_bytes())
    return h.hexdigest()
