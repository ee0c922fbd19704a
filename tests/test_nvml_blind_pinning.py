"""A blind spot while a process pins a large pool is named by that process.

Seen on the H200 (`bench/blind_spot_h200.py`, 2026-12-01): besides the blocks while a pinned
pool is freed at exit, NVML blocked 0.6 s while a 24 GiB pool was being pinned and 1.4 s for
48 GiB, with no process exiting. The NVML source reads /proc again for the processes still
listed after a stall; one whose pinned memory (RssShmem) grew by a GiB or more names it."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_pynvml import Clocked, FakeDevice, install
from proc_fakes import GIB, PROVER_STATUS, fake_proc

from gapwatch.base.clock import FakeClock
from gapwatch.core.blind import blind_words
from gapwatch.core.config import Config, SamplerConfig
from gapwatch.core.detector import GapDetector
from gapwatch.core.models import BlindSpot, PinningProcess
from gapwatch.engine.sampler import Sampler
from gapwatch.engine.session import Session, default_header
from gapwatch.engine.store import SeriesStore
from gapwatch.offline.report import build_report, to_json
from gapwatch.sinks.recorder import Recorder
from gapwatch.sources.files import read_any
from gapwatch.sources.nvml import NvmlSource

MS = 1_000_000
S = 1_000_000_000
PROVING = [(0, 96.0, 20e9, 1e9)]


def _pinned_status(gib: int) -> str:
    """The prover's /proc status with `gib` GiB pinned (RssShmem), the rest as PROVER_STATUS."""
    return PROVER_STATUS.replace("RssShmem:\t12582912 kB", f"RssShmem:\t{gib * 1024 * 1024} kB")


def _run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, pinned_after_gib: int) -> Path:
    """8 s at 100 ms; at 6 s NVML blocks 1.4 s with nobody exiting while pid 4242's pinned
    memory goes from 12 GiB (its /proc readings at 0 and 5 s) to `pinned_after_gib`."""
    fake = install(monkeypatch, [FakeDevice(activity=PROVING, processes=[4242])])
    clock = FakeClock(start_mono_ns=0)
    fake.clock = clock
    fake.stalls.append((6 * S, 1_400 * MS, ()))
    root = fake_proc(tmp_path / "root", {4242: PROVER_STATUS})

    def pool_grows_meanwhile(_seconds: float) -> None:
        (root / "proc" / "4242" / "status").write_text(_pinned_status(pinned_after_gib))

    fake.sleep = pool_grows_meanwhile
    source = NvmlSource(SamplerConfig(), now_ns=clock.monotonic_ns, proc_root=str(root))
    clocked = Clocked(fake, source)
    gpus = clocked.open()
    session = Session(default_header("nvml", gpus, 100.0), SeriesStore(gpus, 0.1),
                      GapDetector(Config().detector, gpus, period_s=0.1),
                      sinks=[Recorder(tmp_path / "rec.jsonl")])
    Sampler(clocked, None, session, clock, 100 * MS, duration_ns=8 * S).run()
    session.close()
    clocked.close()
    return tmp_path / "rec.jsonl"


def _spot(path: Path) -> BlindSpot:
    (spot,) = [r for r in read_any(path).records if isinstance(r, BlindSpot)]
    return spot


def test_a_block_while_a_process_pins_gibs_names_it_and_its_pool(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    path = _run(monkeypatch, tmp_path, pinned_after_gib=36)
    spot = _spot(path)
    assert spot.exited == []
    assert spot.pinning == [PinningProcess(pid=4242, name="cuzk-daemon", before_bytes=12 * GIB,
                                           after_bytes=36 * GIB)]
    words = blind_words(spot)
    assert " while pid 4242 (cuzk-daemon) pinned host memory (RssShmem 12.0 GiB -> 36.0 GiB, " \
           "/proc): pinning a large pool blocks every NVML call as freeing one does; no " \
           "readings meanwhile" in words, words
    # The report says the same, and its JSON carries the numbers.
    (doc,) = to_json(build_report(path, Config(), workers=1))["blind_spots"]
    assert doc["pinning"] == [{"pid": 4242, "name": "cuzk-daemon", "before_bytes": 12 * GIB,
                               "after_bytes": 36 * GIB}]
    assert doc["words"] == words


def test_a_process_whose_pinned_memory_barely_moved_is_not_blamed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    spot = _spot(_run(monkeypatch, tmp_path, pinned_after_gib=12))
    assert spot.pinning == [] and spot.exited == []
    assert blind_words(spot).endswith(
        ": no process was seen exiting or pinning memory; a process pinning or freeing a large "
        "pool blocks every NVML call; no readings meanwhile")


def test_a_recording_from_before_pinning_was_recorded_still_reads() -> None:
    from gapwatch.core.codec import decode_record

    old = (b'{"type":"blind","t_mono_ns":1,"t_wall_s":1796000000.0,"duration_s":1.9,'
           b'"source":"nvml","gpus":[0],"exited":[]}')
    spot = decode_record(old)
    assert isinstance(spot, BlindSpot) and spot.pinning == []


#: /proc/PID/status of a process tearing down its address space: no memory lines.
EXITING_STATUS = "Name:\tcuzk-daemon\nState:\tX (dead)\nTgid:\t4242\nPid:\t4242\nThreads:\t1\n"


def test_an_exit_names_the_pool_read_before_the_process_began_to_exit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """Seen on the H200: the last /proc reading before a 48 GiB pool's 4.3 s free came while the
    process was already exiting (a status without memory lines), and the blind spot lost the
    pool's size. The size read before is the one to say."""
    fake = install(monkeypatch, [FakeDevice(activity=PROVING, processes=[4242])])
    clock = FakeClock(start_mono_ns=0)
    fake.clock = clock
    fake.stalls.append((6 * S, 4_300 * MS, (4242,)))
    root = fake_proc(tmp_path / "root", {4242: PROVER_STATUS})
    source = NvmlSource(SamplerConfig(), now_ns=clock.monotonic_ns, proc_root=str(root))
    clocked = Clocked(fake, source)
    clocked.open()
    spots: list[BlindSpot] = []
    for i in range(70):
        if i == 40:  # after the 0 s reading (12 GiB), before the 5 s one
            (root / "proc" / "4242" / "status").write_text(EXITING_STATUS)
        t = clock.monotonic_ns()
        tick = clocked.read(t, 1_796_000_000.0 + t / 1e9, 0)
        spots += [r for r in tick.other if isinstance(r, BlindSpot)]
        clock.advance_ns(100 * MS)
    clocked.close()
    (spot,) = spots
    assert [(p.pid, p.pinned_bytes) for p in spot.exited] == [(4242, 12 * GIB)]
    assert "exited: the driver frees its pinned memory (12.0 GiB, /proc)" in blind_words(spot)
