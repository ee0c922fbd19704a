"""What a blind spot knows of the process behind it, from /proc.

Seen on the H200 (`bench/blind_spot_h200.py`, 2026-12-01): besides the blocks while a pinned
pool is freed at exit, NVML blocked while pools were being pinned, nobody exiting (0.6-0.8 s for
24 GiB, 1.4-2.8 s for 48 GiB, in the last seconds of the pinning). The NVML source reads /proc
again for the processes still listed after a stall; one whose pinned memory (RssShmem) grew by
a GiB or more since its reading before the latest names it. And the last /proc reading before
an exit can come while the process is already exiting (no memory lines): the pool's size read
before is the one to say."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_pynvml import Clocked, FakeDevice, install
from proc_fakes import GIB, PROVER_STATUS, fake_proc

from gapwatch.base.clock import FakeClock
from gapwatch.config import Config, SamplerConfig
from gapwatch.core.blind import blind_words
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
#: /proc/PID/status of a process tearing down its address space: no memory lines.
EXITING_STATUS = "Name:\tcuzk-daemon\nState:\tX (dead)\nTgid:\t4242\nPid:\t4242\nThreads:\t1\n"


def _pinned_status(gib: float) -> str:
    """The prover's /proc status with `gib` GiB pinned (RssShmem), the rest as PROVER_STATUS."""
    return PROVER_STATUS.replace("RssShmem:\t12582912 kB",
                                 f"RssShmem:\t{int(gib * 1024 * 1024)} kB")


def _spots(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, exits: tuple[int, ...] = (),
           at_5_s: str | None = None, meanwhile: str | None = None,
           block_ms: int = 1_400, stall_at_s: int = 6,
           sources: list[NvmlSource] | None = None) -> list[BlindSpot]:
    """12 s of ticks at 100 ms; /proc is read every 5 s from 0 (pid 4242 with 12 GiB pinned, or
    `at_5_s` from 4 s on); at `stall_at_s` NVML blocks `block_ms` as `exits` leave and pid
    4242's status becomes `meanwhile`. The NVML source is put in `sources` when given."""
    fake = install(monkeypatch, [FakeDevice(activity=PROVING, processes=[4242])])
    clock = FakeClock(start_mono_ns=0)
    fake.clock = clock
    fake.stalls.append((stall_at_s * S, block_ms * MS, exits))
    root = fake_proc(tmp_path / "root", {4242: PROVER_STATUS})
    status = root / "proc" / "4242" / "status"
    if meanwhile is not None:
        fake.sleep = lambda _s: status.write_text(meanwhile)
    source = NvmlSource(SamplerConfig(procmem_every_s=5.0), now_ns=clock.monotonic_ns, proc_root=str(root))
    if sources is not None:
        sources.append(source)
    clocked = Clocked(fake, source)
    clocked.open()
    spots: list[BlindSpot] = []
    for i in range(120):
        if i == 40 and at_5_s is not None:
            status.write_text(at_5_s)
        t = clock.monotonic_ns()
        tick = clocked.read(t, 1_796_000_000.0 + t / 1e9, 0)
        spots += [r for r in tick.other if isinstance(r, BlindSpot)]
        clock.advance_ns(100 * MS)
    clocked.close()
    return spots


def test_a_block_while_a_process_pins_gibs_names_it_and_its_pool(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    (spot,) = _spots(monkeypatch, tmp_path, meanwhile=_pinned_status(36))
    assert spot.exited == []
    assert spot.pinning == [PinningProcess(pid=4242, name="cuzk-daemon", before_bytes=12 * GIB,
                                           after_bytes=36 * GIB, since_s=6.0)]
    assert blind_words(spot).endswith(
        " while pid 4242 (cuzk-daemon) pinned host memory (RssShmem 12.0 GiB 6 s before -> "
        "36.0 GiB after, /proc): pinning a large pool blocks every NVML call as freeing one "
        "does; no readings meanwhile")


def test_the_size_read_after_a_block_is_kept_as_read_when_the_block_ended(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """A later blind spot counts its lookback from when each size was read: the one read after
    a block was read as it ended, not when it began."""
    sources: list[NvmlSource] = []
    (spot,) = _spots(monkeypatch, tmp_path, meanwhile=_pinned_status(36), sources=sources)
    # The two sizes kept: the one read after the block, then the next /proc round's (at 10 s).
    (read_at_s, size), (next_at_s, _next) = sources[0]._seen[4242].sizes
    assert size == 36 * GIB and next_at_s == pytest.approx(1_796_000_010.0, abs=1e-3)
    assert spot.duration_s > 1.0
    assert read_at_s == pytest.approx(spot.t_wall_s + spot.duration_s, abs=1e-3)


def test_the_last_seconds_of_pinning_count_from_the_reading_before_the_latest(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """The H200's 48 GiB case: 58.2 -> 63.2 GiB in the 5 s before the latest reading, 2.8 s of
    block, then 64.0 GiB: 0.85 GiB after the latest reading alone would not name it."""
    (spot,) = _spots(monkeypatch, tmp_path, at_5_s=_pinned_status(17),
                     meanwhile=_pinned_status(17.85))
    (p,) = spot.pinning
    assert (p.before_bytes, p.since_s) == (12 * GIB, 6.0)


def test_a_process_whose_pinned_memory_barely_moved_is_not_blamed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    (spot,) = _spots(monkeypatch, tmp_path, meanwhile=_pinned_status(12.5))
    assert spot.pinning == [] and spot.exited == []
    assert blind_words(spot).endswith(
        ": no process was seen exiting or pinning memory; a process pinning or freeing a large "
        "pool blocks every NVML call; no readings meanwhile")


def test_an_exit_names_the_pool_read_before_the_process_began_to_exit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """Seen on the H200: the last /proc reading before a 48 GiB pool's 4.3 s free came while the
    process was already exiting, and the blind spot lost the pool's size."""
    (spot,) = _spots(monkeypatch, tmp_path, exits=(4242,), at_5_s=EXITING_STATUS,
                     block_ms=4_300)
    assert [(p.pid, p.pinned_bytes) for p in spot.exited] == [(4242, 12 * GIB)]
    assert "exited: the driver frees its pinned memory (12.0 GiB, /proc)" in blind_words(spot)


def test_an_exit_in_the_tick_of_a_proc_round_still_names_the_process_and_its_pool(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """Seen on the H200: a 48 GiB pool freed during the tick that also read /proc. That round
    listed the GPUs after the stall, without the process, and it was forgotten before the blind
    spot could name it ("while pid 503 exited", no name, no size)."""
    (spot,) = _spots(monkeypatch, tmp_path, exits=(4242,), stall_at_s=10, block_ms=5_000)
    assert spot.t_mono_ns == 10 * S
    assert [(p.pid, p.name, p.pinned_bytes) for p in spot.exited] == \
        [(4242, "cuzk-daemon", 12 * GIB)]


def test_the_recording_and_the_report_carry_the_pinning_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    fake = install(monkeypatch, [FakeDevice(activity=PROVING, processes=[4242])])
    clock = FakeClock(start_mono_ns=0)
    fake.clock = clock
    fake.stalls.append((6 * S, 1_400 * MS, ()))
    root = fake_proc(tmp_path / "root", {4242: PROVER_STATUS})
    fake.sleep = lambda _s: (root / "proc" / "4242" / "status").write_text(_pinned_status(36))
    source = NvmlSource(SamplerConfig(procmem_every_s=5.0), now_ns=clock.monotonic_ns, proc_root=str(root))
    clocked = Clocked(fake, source)
    gpus = clocked.open()
    session = Session(default_header("nvml", gpus, 100.0), SeriesStore(gpus, 0.1),
                      GapDetector(Config().detector, gpus, period_s=0.1),
                      sinks=[Recorder(tmp_path / "rec.jsonl")])
    Sampler(clocked, None, session, clock, 100 * MS, duration_ns=8 * S).run()
    session.close()
    clocked.close()
    (spot,) = [r for r in read_any(tmp_path / "rec.jsonl").records if isinstance(r, BlindSpot)]
    assert [p.pid for p in spot.pinning] == [4242]
    (doc,) = to_json(build_report(tmp_path / "rec.jsonl", Config(), workers=1))["blind_spots"]
    assert doc["pinning"] == [{"pid": 4242, "name": "cuzk-daemon", "before_bytes": 12 * GIB,
                               "after_bytes": 36 * GIB, "since_s": 6.0}]
    assert doc["words"] == blind_words(spot)


def test_a_recording_from_before_pinning_was_recorded_still_reads() -> None:
    from gapwatch.core.codec import decode_record

    old = (b'{"type":"blind","t_mono_ns":1,"t_wall_s":1796000000.0,"duration_s":1.9,'
           b'"source":"nvml","gpus":[0],"exited":[]}')
    spot = decode_record(old)
    assert isinstance(spot, BlindSpot) and spot.pinning == []


def test_a_process_gone_from_two_proc_rounds_is_forgotten(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """Weeks of prover restarts must not grow what the source remembers per PID (its only
    visible effect is memory, so this looks at the source's maps)."""
    device = FakeDevice(activity=PROVING, processes=[4242])
    fake = install(monkeypatch, [device])
    clock = FakeClock(start_mono_ns=0)
    fake.clock = clock
    root = fake_proc(tmp_path / "root", {4242: PROVER_STATUS})
    source = NvmlSource(SamplerConfig(procmem_every_s=5.0), now_ns=clock.monotonic_ns, proc_root=str(root))
    clocked = Clocked(fake, source)
    clocked.open()
    remembered = []
    for i in range(160):  # /proc rounds at 0, 5, 10, 15 s; the process leaves at 3 s
        if i == 30:
            device.processes = []
        t = clock.monotonic_ns()
        clocked.read(t, 1_796_000_000.0 + t / 1e9, 0)
        if i % 50 == 1:
            remembered.append(sorted(source._seen))
        clock.advance_ns(100 * MS)
    clocked.close()
    # Known after the 0 s round; still after the 5 s round (a stall in that tick could need
    # it); forgotten from the 10 s round on.
    assert remembered == [[4242], [4242], [], []]


def test_a_listing_that_fails_after_the_stall_blames_no_exit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """The process list read right after a stall is what says who left; when that call fails
    (NVML still unsettled), the GPU's processes are unknown, not gone."""
    device = FakeDevice(activity=PROVING, processes=[4242])
    fake = install(monkeypatch, [device])
    clock = FakeClock(start_mono_ns=0)
    fake.clock = clock
    fake.stalls.append((6 * S, 1_400 * MS, ()))
    fake.sleep = lambda _s: device.fail.update({"nvmlDeviceGetComputeRunningProcesses": 2})
    root = fake_proc(tmp_path / "root", {4242: PROVER_STATUS})
    source = NvmlSource(SamplerConfig(procmem_every_s=5.0), now_ns=clock.monotonic_ns, proc_root=str(root))
    clocked = Clocked(fake, source)
    clocked.open()
    spots: list[BlindSpot] = []
    for _ in range(70):
        t = clock.monotonic_ns()
        spots += [r for r in clocked.read(t, 1_796_000_000.0 + t / 1e9, 0).other
                  if isinstance(r, BlindSpot)]
        clock.advance_ns(100 * MS)
    clocked.close()
    (spot,) = spots
    assert spot.exited == [] and spot.pinning == []
