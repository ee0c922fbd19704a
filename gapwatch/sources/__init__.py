"""Adapters to the outside world that produce records, and the protocols the sampler drives.

Live sources, read by the sampler on a deadline schedule (`GpuSource`, `HostSource`): `nvml`
(real GPUs; the only module that imports pynvml), `host` (host memory pressure, from /proc),
`sim` (the simulated prover). A side source on its own thread: `cuzk_status` (the prover's
`GET /status`, polled; `cuzk_status_server` serves the same endpoint for the simulator and the
load generator). Recorded sources: `recording` (gapwatch's JSON Lines), `trace_csv` (the shared
trace layout), `files.read_any` (picks one); the replay driver (`gapwatch.engine.replay`) feeds
their records to a session, paced by their own times.

Who uses them: the runtime (`gapwatch.engine.runtime`) builds the live ones; the replay driver
and `gapwatch.offline` read the recorded ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from gapwatch.base.watch import ThreadWatch
from gapwatch.core.models import (
    BlindSpot,
    GpuHealth,
    GpuInfo,
    GpuSample,
    HardwareEvent,
    HostSample,
    LinkState,
    Notice,
    ProcessMemory,
)


class SourceUnavailable(Exception):
    """The source cannot start (no driver, no GPU, unreadable file). The message is for the user;
    the CLI prints it on one line and exits with status 2."""


@dataclass(slots=True)
class Tick:
    """What one sampler tick read from a GPU source."""

    gpu: list[GpuSample] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    #: The slow readings of this tick, if it took them: host memory of the processes on each
    #: GPU (every `sampler.procmem_every_s`), and a PCIe link read under traffic whose
    #: generation or width changed (at most every `sampler.link_every_s`). The sampler hands
    #: each to `Session.on_record`, like every other record.
    #: A blind spot: this tick's NVML calls took far longer than a period (`BlindSpot`).
    #: GPU health (every `sampler.health_every_s`) and GPU errors (XID, ECC, PCIe replays).
    other: list[ProcessMemory | LinkState | BlindSpot | GpuHealth | HardwareEvent] = field(
        default_factory=list)


class GpuSource(Protocol):
    def open(self) -> list[GpuInfo]:
        """Start the source and describe its GPUs. Raises SourceUnavailable."""
        ...

    def read(self, t_mono_ns: int, t_wall_s: float, lateness_ns: int) -> Tick:
        """Take one reading of every GPU. Never raises for a per-GPU problem: it reports it as a
        Notice and that GPU's fields as None (or omits a lost GPU)."""
        ...

    def close(self) -> None: ...


class SideSource(Protocol):
    """A source with its own thread beside the sampler (the log follower, the copy trace),
    run under the runtime's `ThreadWatch` (`watch`, set before `start`)."""

    watch: ThreadWatch

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def status(self) -> object: ...


class HostSource(Protocol):
    def read(self, t_mono_ns: int, t_wall_s: float) -> HostSample: ...

    def close(self) -> None: ...
