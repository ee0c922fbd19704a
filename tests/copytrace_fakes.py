"""Synthetic copy-trace data for the tests: a recording where pageable copies starve the GPU, and
the load generator's copy log (truth) that goes with it. Shared by tests/test_copytrace_*.py.

Timeline (wall seconds from WALL0, samples every 100 ms, SM source "sim": no GPM lag):
busy 0-2 s, idle 2-4 s while three 1 GiB pageable copies run (2.05-3.85 s, ~1.8 GB/s), busy
4-6 s, idle 6-8 s during three pinned 1 GiB copies (6.05-6.11 s) then nothing, busy 8-10 s.
Copies enter the recording 200 ms after they end, as they arrive live (a flush period late).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gapwatch.core.models import (
    CopyRecord,
    Gap,
    GpuInfo,
    GpuSample,
    LinkState,
    ProcessMemory,
    Record,
    SessionHeader,
)
from gapwatch.sinks.recorder import write_recording

WALL0 = 1_796_029_581.0
MONO0 = 5_000_000_000_000
from gapwatch.core.units import GIB as GIB  # noqa: E402 - the one definition

UUID = "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf"


def header() -> SessionHeader:
    return SessionHeader(gapwatch_version="0.1.0", host="h200", source="nvml",
                         started_wall_s=WALL0, started_mono_ns=MONO0, period_ms=100.0,
                         gpus=[GpuInfo(index=0, name="NVIDIA H200", uuid=UUID, link_gen=5,
                                       link_width=16, link_bytes_per_s=63e9, sm_source="sim",
                                       pcie_source="sim")])


def sample(t: float, sm: float, rx: float) -> GpuSample:
    return GpuSample(gpu=0, t_mono_ns=MONO0 + int(round(t * 1e9)), t_wall_s=WALL0 + t,
                     interval_ns=100_000_000, sm_active_pct=sm, gpu_util_pct=sm,
                     pcie_rx_bytes_per_s=rx, pcie_tx_bytes_per_s=0.0, sm_source="sim",
                     pcie_source="sim")


def copy(start: float, end: float, kind: str, *, stream: int = 13, nbytes: int = GIB,
         corr: int = 0) -> CopyRecord:
    return CopyRecord(start_wall_s=WALL0 + start, end_wall_s=WALL0 + end, bytes=nbytes,
                      direction="h2d", src_kind=kind, dst_kind="device",  # type: ignore[arg-type]
                      gpu=0, cuda_device=0, stream_id=stream, context_id=1, correlation_id=corr,
                      pid=4242)


PAGEABLE = [(2.05, 2.65), (2.65, 3.25), (3.25, 3.85)]
PINNED = [(6.05, 6.07), (6.07, 6.09), (6.09, 6.11)]


def copies(kind_first: str = "pageable") -> list[CopyRecord]:
    out = [copy(a, b, kind_first, corr=i) for i, (a, b) in enumerate(PAGEABLE)]
    out += [copy(a, b, "pinned", stream=14, corr=10 + i) for i, (a, b) in enumerate(PINNED)]
    return out


def records(with_copies: bool = True) -> list[Record]:
    """Samples and (arriving late) copies, in the order a live session records them."""
    pending = sorted(copies() if with_copies else [], key=lambda c: c.end_wall_s)
    out: list[Record] = []
    for k in range(1, 101):
        t = k / 10
        idle = 2.0 < t <= 4.0 or 6.0 < t <= 8.0
        rx = 0.0
        if 2.0 < t <= 4.0:
            rx = 1.8e9
        elif 6.0 < t <= 6.2:
            rx = 20e9
        out.append(sample(t, 3.0 if idle else 92.0, rx))
        while pending and pending[0].end_wall_s + 0.2 <= WALL0 + t:
            out.append(pending.pop(0))
    return out


def truth(kind: str = "pageable") -> dict[str, Any]:
    """The load generator's truth for these copies: one partition per group of three."""
    ivs = []
    for p, group in enumerate((PAGEABLE, PINNED)):
        ivs.append({"worker": p % 2, "partition": p, "copy_start": WALL0 + group[0][0] - 0.001,
                    "copy_end": WALL0 + group[-1][1] + 0.001, "copy_bytes": 3 * GIB})
    return {"params": {"pinned": kind == "pinned", "abc_mib": 1024}, "intervals": ivs[:1]}


PID = 4242


def slow_readings(anon: int = 7 * GIB, shmem: int = 64 << 20,
                  link: tuple[int, int] = (5, 16)) -> list[Record]:
    """What the NVML source's slow readings add to such a run: the load generator's /proc memory
    at 0.5 s and 5.5 s (pageable a/b/c in RssAnon), and its link read under traffic at 2.1 s."""
    out: list[Record] = [
        ProcessMemory(MONO0 + int(t * 1e9), WALL0 + t, 0, PID, "python3", shmem, anon, 0, 0)
        for t in (0.5, 5.5)]
    out.append(LinkState(0, MONO0 + 2_100_000_000, WALL0 + 2.1, link[0], link[1], 5, 16,
                         63.0e9 * link[0] / 5 * link[1] / 16, 63.0e9))
    return out


def _wall_s(record: Record) -> float:
    assert not isinstance(record, Gap)  # every other record is stamped with a wall time
    return record.t_wall_s


def write_case(folder: Path, with_copies: bool = True, slow: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    recs = records(with_copies)
    if slow:
        recs = sorted(recs + slow_readings(), key=_wall_s)
    write_recording(folder / "rec.jsonl.gz", header(), recs)
    (folder / "truth.json").write_text(json.dumps(truth()))
    (folder / "meta.json").write_text(json.dumps({
        "scenario": "pageable", "expected_kind": "pageable", "loadgen_pid": PID,
        "expect_link": "5x16",
        "captured": {"copies": True, "hints": True, "procmem": slow, "link": slow}}))
    return folder
