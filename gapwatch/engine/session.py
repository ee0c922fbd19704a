"""Session: the hub every record of a run goes through, with or without the UI.

Who calls it: the sampler thread (`on_gpu_samples`, `on_record` for host samples and notices),
the log follower's threads (`on_log_event`), the replay driver and any other side source
(`on_record`). One path for every record, whatever its source or type:

    record -> store (bounded memory) -> sinks (recorder, /metrics) -> detector.feed(record)
    (a log event's text is cut for the store and the detector: `gapwatch.core.sizes`)
           -> gaps (into the store's GapLedger) and states -> sinks -> listeners (UI, summaries)

so live, simulated and replayed data are treated identically, and the gaps everyone shows come
from the one ledger. The composition root that builds a session and owns its threads is
`gapwatch.engine.runtime`.

A lock serialises the callers: the detector is pure and single-threaded by design. Sinks and
listeners are called under it and must not block (the recorder buffers; the UI only posts a
message).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from gapwatch import __version__
from gapwatch.core.ledger import Change
from gapwatch.core.models import (
    DERIVED_TYPES,
    Gap,
    GpuInfo,
    GpuSample,
    LogEvent,
    Notice,
    Record,
    SessionHeader,
    StateChange,
)
from gapwatch.core.sizes import bounded_event
from gapwatch.engine.store import SeriesStore


class Detector(Protocol):
    #: Inputs skipped or noticed, by reason (out_of_order, holes, clock_jumps, silent...).
    counters: dict[str, int]

    def feed(self, record: Record) -> list[Gap | StateChange]:
        """Take any record; return the gap versions and state changes it caused."""
        ...

    def finish(self) -> list[Gap | StateChange]:
        """End of data: settle open gaps (idle after the last busy sample is not a gap)."""
        ...

    def busy_fraction(self, gpu: int) -> float | None:
        """Busy share of the chaining window as of the GPU's latest sample."""
        ...


class Sink(Protocol):
    def on_header(self, header: SessionHeader) -> None: ...

    def on_record(self, record: Record) -> None: ...

    def close(self) -> None: ...


#: How often (in data time) the store's per-GPU busy fraction is refreshed from the detector.
BUSY_REFRESH_NS = 1_000_000_000

#: Listeners hear every state change and notice, and each gap once: when it first closes (its
#: kind and duration are final then). Open gaps and later versions are in the store's ledger.
Listener = Callable[[Gap | StateChange | Notice], None]


class Session:
    """Fans every record out to the store, the sinks, the detector and the listeners."""

    def __init__(
        self,
        header: SessionHeader,
        store: SeriesStore,
        detector: Detector | None = None,
        sinks: list[Sink] | None = None,
    ) -> None:
        self.header = header
        self.store = store
        self.detector = detector
        self.sinks: list[Sink] = list(sinks or [])
        self._listeners: list[Listener] = []
        self._lock = threading.RLock()
        self._closed = False
        self._finished = False
        #: Data time (ns) of each GPU's last busy-fraction refresh in the store.
        self._busy_at_ns: dict[int, int] = {}
        for sink in self.sinks:
            sink.on_header(header)

    def add_sink(self, sink: Sink) -> None:
        with self._lock:
            sink.on_header(self.header)
            self.sinks.append(sink)

    def subscribe(self, listener: Listener) -> None:
        """Call `listener` (from the feeding thread) for every state change and notice, and for
        each gap when it first closes."""
        with self._lock:
            self._listeners.append(listener)

    def on_record(self, record: Record) -> None:
        """The one entry for every record. Gaps and states found in recorded data are not
        taken as such: the detector recomputes them, so a replay shows what this version
        detects."""
        if record.type in DERIVED_TYPES:
            return
        with self._lock:
            if self._closed:
                return
            # Sinks (the recording) get a log line whole; memory (the store, the detector's
            # evidence) a copy with its text cut to what display and evidence use.
            kept = record
            if type(record) is LogEvent:
                kept = bounded_event(record)
                if kept is not record:
                    self.store.count("log_text_cut")
            self.store.append(kept)
            for sink in self.sinks:
                sink.on_record(record)
            if type(record) is Notice:
                self._tell(record)
            detector = self.detector
            if detector is None:
                return
            derived = detector.feed(kept)
            if derived:
                self._derived(derived)
            if type(record) is GpuSample:
                last = self._busy_at_ns.get(record.gpu)
                if last is None or record.t_mono_ns - last >= BUSY_REFRESH_NS:
                    self._busy_at_ns[record.gpu] = record.t_mono_ns
                    self.store.set_busy(record.gpu, detector.busy_fraction(record.gpu))

    def on_gpu_samples(self, samples: list[GpuSample]) -> None:
        """One sampler tick's GPU readings."""
        for s in samples:
            self.on_record(s)

    def on_log_event(self, event: LogEvent) -> None:
        self.on_record(event)

    def on_notice(self, notice: Notice) -> None:
        self.on_record(notice)

    def _derived(self, events: list[Gap | StateChange]) -> None:
        for ev in events:
            if isinstance(ev, Gap):
                change = self.store.upsert_gap(ev)
                for sink in self.sinks:
                    sink.on_record(ev)  # the recorder keeps every version, as published
                if change is Change.CLOSED:
                    self._tell(ev)
            else:
                self.store.set_state(ev)
                for sink in self.sinks:
                    sink.on_record(ev)
                self._tell(ev)

    def _tell(self, ev: Gap | StateChange | Notice) -> None:
        for listener in self._listeners:
            listener(ev)

    def finish(self) -> None:
        """End of data (a replay or a timed run is over): settle the detector now, so that what
        the dashboard shows is what `report` will count (a gap still open at the end is
        retracted: idle after the last busy period). Sinks stay open until `close()`. Safe to
        call twice."""
        with self._lock:
            if self._closed or self._finished:
                return
            self._finished = True
            if self.detector is not None:
                self._derived(self.detector.finish())

    def close(self) -> None:
        """Settle the detector, close every sink. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self.finish()
            self._closed = True
            for sink in self.sinks:
                sink.close()


def default_header(source: str, gpus: list[GpuInfo], period_ms: float,
                   config: dict[str, Any] | None = None) -> SessionHeader:
    """A header for a session starting now on this host."""
    return SessionHeader(
        gapwatch_version=__version__,
        host=socket.gethostname(),
        source=source,
        started_wall_s=time.time(),
        started_mono_ns=time.monotonic_ns(),
        period_ms=period_ms,
        gpus=gpus,
        config=config or {},
    )
