"""Run the simulated prover to completion, as fast as possible, and keep everything it produced.

Who calls it: tests (detector scoring on many seeds), benchmarks (long recordings), and anyone
who wants a deterministic session without a GPU. It uses the same `Sampler` and `Session` as live
runs, on a `VirtualClock`, so what it yields is what `gapwatch demo` would have seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from gapwatch.base.clock import VirtualClock
from gapwatch.core.bounds import DEFAULT_PERIOD_MS
from gapwatch.core.models import Record, SessionHeader
from gapwatch.engine.sampler import Sampler
from gapwatch.engine.session import Detector, Session, default_header
from gapwatch.engine.store import SeriesStore
from gapwatch.sources.sim import (
    ScenarioName,
    SimCopyFeed,
    SimHostSource,
    SimProver,
    SimStatusFeed,
    TruthInterval,
)

#: A fixed start so that simulated sessions are identical run after run.
SIM_EPOCH_WALL_S = 1_796_000_000.0


class ListSink:
    """A session sink that keeps every record in memory."""

    def __init__(self) -> None:
        self.header: SessionHeader | None = None
        self.records: list[Record] = []

    def on_header(self, header: SessionHeader) -> None:
        self.header = header

    def on_record(self, record: Record) -> None:
        self.records.append(record)

    def close(self) -> None:
        pass


@dataclass
class SimResult:
    header: SessionHeader
    #: GPU and host samples (and, with a detector, its gaps and state changes), in order.
    records: list[Record]
    #: (stream, text) log lines in the order the prover wrote them.
    log_lines: list[tuple[str, str]]
    truth: list[TruthInterval]
    sim: SimProver = field(repr=False)


def simulate(
    scenario: ScenarioName | str = "pageable",
    seed: int = 1,
    duration_s: float = 60.0,
    period_ms: float = DEFAULT_PERIOD_MS,
    gpus: int = 1,
    detector: Detector | None = None,
    start_wall_s: float = SIM_EPOCH_WALL_S,
    status_period_s: float | None = None,
    copies_per_partition: int | None = None,
    max_batch_size: int | None = None,
    max_batch_wait_ms: int | None = None,
) -> SimResult:
    """Simulate `duration_s` of the prover and return the samples, log lines and ground truth.

    `status_period_s`: also take a snapshot of the prover's own `/status` this often (data
    time) into the session, as a poller would (`SimStatusFeed`). `copies_per_partition`: also
    record the prover's host-to-device copies as the copy trace would, each partition's a/b/c
    copy cut into this many (`SimCopyFeed`). `max_batch_size`, `max_batch_wait_ms`: cuzk's
    batch settings in `batch-wait` (`[sim.batch_wait]`; None: the scenario's own)."""
    lines: list[tuple[str, str]] = []
    sim = SimProver(scenario, seed=seed, gpus=gpus, on_line=lambda s, t: lines.append((s, t)),
                    max_batch_size=max_batch_size, max_batch_wait_ms=max_batch_wait_ms)
    clock = VirtualClock(start_mono_ns=10**12, start_wall_s=start_wall_s)
    infos = sim.open()
    header = default_header(f"sim:{scenario}", infos, period_ms, {"seed": seed})
    header = msgspec.structs.replace(header, host="(simulated)", started_wall_s=start_wall_s,
                                     started_mono_ns=clock.monotonic_ns())
    sink = ListSink()
    store = SeriesStore(infos, period_s=period_ms / 1000, history_s=10.0)
    session = Session(header, store, detector=detector, sinks=[sink])
    if status_period_s is not None:
        session.add_sink(SimStatusFeed(sim, status_period_s, session.on_record))
    if copies_per_partition is not None:
        session.add_sink(SimCopyFeed(sim, copies_per_partition, session.on_copies))
    sampler = Sampler(sim, SimHostSource(sim), session, clock, int(period_ms * 1e6),
                      duration_ns=int(duration_s * 1e9))
    sampler.run()
    session.close()
    return SimResult(header, sink.records, lines, sim.truth, sim)
