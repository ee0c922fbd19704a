"""One prover per live session, shared by the detector (which feeds it) and the store (which reads
its pipeline facts for the dashboard, `/metrics` and snapshots).

Who calls it: `gapwatch.engine.runtime` wraps the session's prover (e.g. cuzk's) in a
`SharedProver` and hands the same object to the detector and the store. The detector feeds it
under the session's lock on the sampler and tailer threads; the store reads `facts()` on the UI
and exporter threads. A feed mutates the prover's histories while `facts()` iterates them, so
both take this object's lock; what the detector asks about a gap (`open_gap`, the gap's `view`)
only reads, on the feeding thread, and needs none.
"""

from __future__ import annotations

import threading

from gapwatch.core.models import HostSample, LogEvent, ProcessMemory, ProverStatus
from gapwatch.core.prover import Prover, ProverGap


class SharedProver:
    """A `Prover` whose feeds and facts are serialised (`gapwatch.core.prover.Prover`)."""

    def __init__(self, prover: Prover) -> None:
        self._prover = prover
        self._lock = threading.Lock()

    def feed_log(self, event: LogEvent) -> None:
        with self._lock:
            self._prover.feed_log(event)

    def feed_status(self, status: ProverStatus) -> None:
        with self._lock:
            self._prover.feed_status(status)

    def feed_process(self, reading: ProcessMemory) -> None:
        with self._lock:
            self._prover.feed_process(reading)

    def feed_host(self, sample: HostSample) -> None:
        with self._lock:
            self._prover.feed_host(sample)

    def concerns(self, status: ProverStatus, gpu: int) -> bool:
        return self._prover.concerns(status, gpu)

    def end(self, t_wall_s: float) -> None:
        with self._lock:
            self._prover.end(t_wall_s)

    def open_gap(self, gpu: int, start_s: float, idle_since_s: float | None = None
                 ) -> ProverGap:
        return self._prover.open_gap(gpu, start_s, idle_since_s)

    def facts(self) -> object:
        with self._lock:
            return self._prover.facts()

    def lacks(self) -> list[str]:
        with self._lock:
            return self._prover.lacks()
