"""The NVML source's slow readings against a fake pynvml and a fake /proc tree: the host memory of
the processes on each GPU (ProcessMemory) and the PCIe link as trained under traffic (LinkState),
through the sampler and the session to the detector, a recording and its replay."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any, TypeVar

import pytest
from fake_pynvml import (
    MIB,
    NVML_ERROR_NO_PERMISSION,
    NVML_ERROR_NOT_SUPPORTED,
    Clocked,
    FakeDevice,
    FakeNvml,
    install,
)
from proc_fakes import PROVER_STATUS, deny, fake_proc

from gapwatch.base.clock import FakeClock
from gapwatch.config import Config, SamplerConfig
from gapwatch.core.detector import GapDetector
from gapwatch.core.evidence_types import ProcessEvidence
from gapwatch.core.models import LinkState, ProcessMemory
from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.engine.sampler import Sampler
from gapwatch.engine.session import Session, default_header
from gapwatch.engine.store import SeriesStore
from gapwatch.offline.report import build_report
from gapwatch.sinks.recorder import Recorder
from gapwatch.sources import Tick
from gapwatch.sources.nvml import NvmlSource

R = TypeVar("R")

MS = 1_000_000
S = 1_000_000_000
GIB = 1 << 30
IDLE = (0, 0.0, 1.5 * MIB, 1.5 * MIB)
#: 3.2 GB/s host-to-device with the SMs idle: a pageable copy.
MOVING = (0, 0.0, 3.2e9, 0.1e9)

#: Each source a test opens is closed at its end (its XID thread stops): tests/conftest.py.
pytestmark = pytest.mark.usefixtures("nvml_sources_closed")


def make(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *devices: FakeDevice,
         statuses: dict[int, str] | None = None, **config: Any) -> tuple[FakeNvml, NvmlSource]:
    fake = install(monkeypatch, list(devices) or [FakeDevice()])
    root = fake_proc(tmp_path, statuses or {})
    # These tests pin the rounds' rhythm at 5 s (the default is 1 s: the processes panel).
    config.setdefault("procmem_every_s", 5.0)
    source = NvmlSource(SamplerConfig(**config), now_ns=lambda: 0, proc_root=str(root))
    source.open()
    return fake, source


def others(ticks: list[Tick], kind: type[R]) -> list[R]:
    return [r for t in ticks for r in t.other if isinstance(r, kind)]


def notices(ticks: list[Tick]) -> list[str]:
    return [n.message for t in ticks for n in t.notices]


# ---------------------------------------------------------------- processes and /proc


def test_the_processes_on_each_gpu_are_read_from_proc_every_few_seconds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    devs = [FakeDevice(processes=[4242]), FakeDevice(uuid="GPU-1", processes=[4242, 77])]
    small = PROVER_STATUS.replace("cuzk-daemon", "helper").replace("12582912 kB", "1024 kB")
    fake, source = make(monkeypatch, tmp_path, *devs, statuses={4242: PROVER_STATUS, 77: small})
    ticks = fake.run(source, 100 * MS, 121)  # 12 s at 100 ms
    readings = others(ticks, ProcessMemory)
    # Rounds at 0, 5 and 10 s: one NVML call per GPU per round, not one per tick.
    assert sorted({r.t_mono_ns for r in readings}) == [0, 5 * S, 10 * S]
    assert [d.calls["nvmlDeviceGetComputeRunningProcesses"] for d in devs] == [3, 3]
    first = [r for r in readings if r.t_mono_ns == 0]
    assert [(r.gpu, r.pid, r.name) for r in first] == [
        (0, 4242, "cuzk-daemon"), (1, 77, "helper"), (1, 4242, "cuzk-daemon")]
    prover = first[0]
    assert (prover.rss_shmem_bytes, prover.rss_anon_bytes) == (12 * GIB, 180 * GIB)
    assert (prover.vm_locked_bytes, prover.vm_pinned_bytes) == (0, 0)
    # A process on two GPUs is read once per round.
    assert source.counters["procmem_read"] == 2 * 3
    assert notices(ticks) == []


def test_procmem_every_s_sets_the_cadence_and_zero_turns_it_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    dev = FakeDevice(processes=[4242])
    fake, source = make(monkeypatch, tmp_path, dev, statuses={4242: PROVER_STATUS},
                        procmem_every_s=2.0)
    assert len({r.t_mono_ns for r in others(fake.run(source, 100 * MS, 41), ProcessMemory)}) == 3
    dev2 = FakeDevice(processes=[4242])
    fake2 = install(monkeypatch, [dev2])
    off = NvmlSource(SamplerConfig(procmem_every_s=0), now_ns=lambda: 0, proc_root=str(tmp_path))
    off.open()
    assert others(fake2.run(off, 100 * MS, 60), ProcessMemory) == []
    assert dev2.calls["nvmlDeviceGetComputeRunningProcesses"] == 0


def test_procmem_every_s_below_a_second_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1 second"):
        SamplerConfig(procmem_every_s=0.1)


def test_a_pid_that_vanished_gives_none_fields_counted_and_said_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake, source = make(monkeypatch, tmp_path, FakeDevice(processes=[31, 4242]),
                        statuses={4242: PROVER_STATUS})
    ticks = fake.run(source, 100 * MS, 101)
    gone = [r for r in others(ticks, ProcessMemory) if r.pid == 31]
    assert len(gone) == 3
    assert all(r.rss_shmem_bytes is None and r.rss_anon_bytes is None and r.name == ""
               for r in gone)
    assert source.counters["procmem_vanished"] == 3
    said = [m for m in notices(ticks) if "process 31" in m]
    assert len(said) == 1 and "another PID namespace" in said[0]
    # The other process is read as usual.
    assert all(r.rss_shmem_bytes == 12 * GIB for r in others(ticks, ProcessMemory)
               if r.pid == 4242)


def test_a_proc_without_rss_shmem_gives_none_and_says_why_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    old = "Name:\tcuzk\nVmRSS:\t1000 kB\n"
    fake, source = make(monkeypatch, tmp_path, FakeDevice(processes=[5]), statuses={5: old})
    ticks = fake.run(source, 100 * MS, 101)
    readings = others(ticks, ProcessMemory)
    assert [(r.name, r.rss_shmem_bytes, r.rss_anon_bytes) for r in readings] == [
        ("cuzk", None, None)] * 3
    assert source.counters["procmem_no_rss_fields"] == 3
    assert sum("no RssShmem/RssAnon" in m for m in notices(ticks)) == 1


def test_another_users_prover_behind_hidepid_is_a_warning_with_the_fix_once(monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path: Path) -> None:
    fake, source = make(monkeypatch, tmp_path, FakeDevice(processes=[4242]),
                        statuses={4242: PROVER_STATUS})
    deny(monkeypatch, 4242, errno.EACCES)
    ticks = fake.run(source, 100 * MS, 101)
    assert [r.rss_shmem_bytes for r in others(ticks, ProcessMemory)] == [None] * 3
    warned = [n for t in ticks for n in t.notices if n.level == "warning"]
    assert len(warned) == 1 and "run gapwatch as that user or as root" in warned[0].message
    assert source.counters["procmem_denied"] == 3


@pytest.mark.parametrize("code", [NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_NO_PERMISSION])
def test_nvml_that_cannot_list_processes_is_said_once_and_not_asked_again(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, code: int) -> None:
    dev = FakeDevice(processes=[4242], fail={"nvmlDeviceGetComputeRunningProcesses": code})
    fake, source = make(monkeypatch, tmp_path, dev, statuses={4242: PROVER_STATUS})
    ticks = fake.run(source, 100 * MS, 121)
    assert others(ticks, ProcessMemory) == []
    assert dev.calls["nvmlDeviceGetComputeRunningProcesses"] == 1
    said = [m for m in notices(ticks) if "running processes" in m]
    assert len(said) == 1 and "not available" in said[0]
    # Sampling itself goes on.
    assert sum(len(t.gpu) for t in ticks) > 100


def test_the_proc_round_comes_after_the_samples_and_never_shifts_their_times(monkeypatch: pytest.MonkeyPatch,
                                                                            tmp_path: Path) -> None:
    fake, source = make(monkeypatch, tmp_path, FakeDevice(processes=[4242]),
                        statuses={4242: PROVER_STATUS})
    ticks = fake.run(source, 100 * MS, 3)
    assert [s.t_mono_ns for t in ticks for s in t.gpu] == [0, 100 * MS, 200 * MS]


# ---------------------------------------------------------------- the link under traffic


def test_an_idle_link_is_never_read_even_though_it_down_trains(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    dev = FakeDevice(activity=[IDLE])  # the fake's idle link reads Gen1, as real ones do
    fake, source = make(monkeypatch, tmp_path, dev)
    ticks = fake.run(source, 100 * MS, 100)
    assert others(ticks, LinkState) == []
    assert dev.calls["nvmlDeviceGetCurrPcieLinkGeneration"] == 0
    assert notices(ticks) == []


def test_a_link_at_its_maximum_under_traffic_is_one_record_and_no_warning(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    dev = FakeDevice(activity=[IDLE, (2 * S, 0.0, 3.2e9, 0.1e9)])
    fake, source = make(monkeypatch, tmp_path, dev)
    ticks = fake.run(source, 100 * MS, 150)  # 15 s: 13 of them moving data
    [link] = others(ticks, LinkState)
    assert (link.gen, link.width, link.max_gen, link.max_width) == (5, 16, 5, 16)
    assert not link.trained_down
    assert link.bytes_per_s == pytest.approx(63.0e9, rel=0.01) == link.max_bytes_per_s
    assert 2 * S < link.t_mono_ns <= 2 * S + 200 * MS  # the first moving reading
    # Read again at most every link_every_s (5 s): at ~2.1, 7.1 and 12.1 s.
    assert dev.calls["nvmlDeviceGetCurrPcieLinkGeneration"] == 3
    assert source.counters["link_reads"] == 3
    assert notices(ticks) == []


def test_a_link_trained_down_is_a_record_and_one_warning_not_one_per_tick(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    dev = FakeDevice(activity=[MOVING], trained=(3, 8))
    fake, source = make(monkeypatch, tmp_path, dev)
    ticks = fake.run(source, 100 * MS, 200)
    [link] = others(ticks, LinkState)
    assert (link.gen, link.width) == (3, 8) and link.trained_down
    assert link.bytes_per_s == pytest.approx(7.88e9, rel=0.01)
    [warning] = [n for t in ticks for n in t.notices if n.level == "warning"]
    assert warning.gpu == 0
    assert warning.message.startswith(
        "GPU 0: PCIe link at Gen3 x8 (7.9 GB/s) while moving data (3.2 GB/s); its maximum is "
        "Gen5 x16 (63.0 GB/s): check the slot, riser and BIOS")


def test_a_link_that_recovers_is_a_new_record_and_an_info(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    dev = FakeDevice(activity=[MOVING], trained=(4, 16))
    fake, source = make(monkeypatch, tmp_path, dev)
    ticks = fake.run(source, 100 * MS, 40)
    dev.trained = None
    ticks += fake.run(source, 100 * MS, 60, start_ns=4 * S)
    links = others(ticks, LinkState)
    assert [(r.gen, r.trained_down) for r in links] == [(4, True), (5, False)]
    assert any("link back at Gen5 x16" in m for m in notices(ticks))


def test_link_every_s_zero_never_reads_the_link(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    dev = FakeDevice(activity=[MOVING], trained=(3, 8))
    fake, source = make(monkeypatch, tmp_path, dev, link_every_s=0)
    assert others(fake.run(source, 100 * MS, 100), LinkState) == []
    assert dev.calls["nvmlDeviceGetCurrPcieLinkGeneration"] == 0


def test_a_driver_without_the_current_link_is_said_once_and_not_asked_again(monkeypatch: pytest.MonkeyPatch,
                                                                            tmp_path: Path) -> None:
    dev = FakeDevice(activity=[MOVING],
                     fail={"nvmlDeviceGetCurrPcieLinkWidth": NVML_ERROR_NOT_SUPPORTED})
    fake, source = make(monkeypatch, tmp_path, dev)
    ticks = fake.run(source, 100 * MS, 200)
    assert others(ticks, LinkState) == []
    assert dev.calls["nvmlDeviceGetCurrPcieLinkWidth"] == 1
    assert sum("current PCIe width not available" in m for m in notices(ticks)) == 1


# ---------------------------------------------------------------- through the session


def live_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, dev: FakeDevice,
             statuses: dict[int, str]) -> tuple[StoreSnapshot, Path]:
    """8 s sampled at 100 ms through Sampler -> Session -> detector, recorded to a file."""
    fake = install(monkeypatch, [dev])
    root = fake_proc(tmp_path / "root", statuses)
    source = NvmlSource(SamplerConfig(), proc_root=str(root))
    clocked = Clocked(fake, source)
    gpus = clocked.open()
    config = Config()
    header = default_header("nvml", gpus, 100.0)
    store = SeriesStore(gpus, 0.1)
    rec = Recorder(tmp_path / "rec.jsonl")
    session = Session(header, store, GapDetector(config.detector, gpus, period_s=0.1),
                      sinks=[rec])
    clock = FakeClock(start_mono_ns=0)
    Sampler(clocked, None, session, clock, 100 * MS, duration_ns=8 * S).run()
    session.close()
    clocked.close()
    return store.snapshot(), tmp_path / "rec.jsonl"


#: Busy, then 2 s with the SMs idle while H2D trickles at 3.2 GB/s (a pageable copy), busy again.
STARVED = [(0, 96.0, 20e9, 1e9), (3 * S, 0.0, 3.2e9, 0.1e9), (5 * S, 96.0, 20e9, 1e9)]


def test_a_starved_gap_hints_at_the_provers_pinned_and_heap_memory_live_and_replayed(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    snap, rec = live_run(monkeypatch, tmp_path, FakeDevice(activity=STARVED, processes=[4242]),
                         {4242: PROVER_STATUS})
    [gap] = [g for g in snap.gaps if g.kind == "pcie_starved"]
    words = ("cuzk-daemon pinned 12.0 GiB / heap 180.0 GiB (/proc, a hint: cudaHostRegister'ed "
             "memory counts as heap)")
    assert words in gap.hint
    assert gap.copies.processes == [ProcessEvidence(4242, "cuzk-daemon", 12 * GIB, 180 * GIB)]
    assert snap.procmem[0][0].rss_shmem_bytes == 12 * GIB
    # Recorded, replayed by report: the same words.
    [replayed] = [g for g in build_report(rec, Config(), workers=1).gaps
                  if g.kind == "pcie_starved"]
    assert words in replayed.hint


def test_a_trained_down_link_reaches_the_gap_hint_and_the_notices(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    dev = FakeDevice(activity=STARVED, trained=(3, 8))
    snap, rec = live_run(monkeypatch, tmp_path, dev, {})
    [gap] = [g for g in snap.gaps if g.kind == "pcie_starved"]
    assert "% of max link; the link trained down to Gen3 x8 = 7.9 GB/s" in gap.hint
    assert gap.link_current_bytes_per_s == pytest.approx(7.88e9, rel=0.01)
    assert snap.links[0].trained_down
    assert sum("PCIe link at Gen3 x8" in n.message for n in snap.notices) == 1
    [replayed] = [g for g in build_report(rec, Config(), workers=1).gaps
                  if g.kind == "pcie_starved"]
    assert "trained down to Gen3 x8" in replayed.hint


def test_the_proc_root_is_the_one_given_never_the_real_proc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # This test's own PID is in the real /proc, not in the (empty) fake tree.
    fake, source = make(monkeypatch, tmp_path, FakeDevice(processes=[os.getpid()]))
    [reading] = others(fake.run(source, 100 * MS, 1), ProcessMemory)
    assert reading.rss_anon_bytes is None and source.counters["procmem_vanished"] == 1


# ---------------------------------------------------------------- words shown


def test_the_record_summary_counts_proc_readings_and_their_problems() -> None:
    from gapwatch.engine.summary import procmem_counts_text

    assert procmem_counts_text({"link_reads": 3}) == ""
    assert procmem_counts_text({"procmem_read": 12, "procmem_denied": 12,
                                "procmem_no_rss_fields": 0}) == "/proc 12 readings (12 denied)"


def test_the_footer_says_a_trained_down_link_makes_percent_of_link_of_max() -> None:
    from gapwatch.engine.status import RuntimeStatus
    from gapwatch.ui.widgets.status_footer import status_parts

    down = LinkState(0, 1, 1.0, 3, 8, 5, 16, 7.88e9, 63.0e9)
    up = LinkState(1, 1, 1.0, 5, 16, 5, 16, 63.0e9, 63.0e9)
    parts = status_parts(RuntimeStatus("nvml", 100.0, None, {0: "gpm", 1: "gpm"},
                                       links={0: down, 1: up}))
    assert ('GPU0 PCIe Gen3 x8 (7.9 GB/s) of max Gen5 x16 (63.0 GB/s): "% of link" is of max'
            in parts)
    assert not any("GPU1 PCIe" in p for p in parts)
