"""Session: the composition root of the core; one per run, with or without the UI.

Who calls it: the sampler thread (`on_tick`), the tailer thread (`on_log_event`), the replay
driver (all of them, from recorded data). Every record goes through the same path whatever its
source: store -> detector -> store (gaps, states) -> sinks (recorder, exporter) -> listeners
(the UI). So live, simulated and replayed data are treated identically.

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
from gapwatch.core.models import (
    Gap,
    GpuInfo,
    GpuSample,
    HostSample,
    LogEvent,
    Notice,
    Record,
    SessionHeader,
    StateChange,
)
from gapwatch.engine.store import SeriesStore


class Detector(Protocol):
    def feed_gpu(self, sample: GpuSample) -> list[Gap | StateChange]: ...

    def feed_host(self, sample: HostSample) -> None: ...

    def feed_log(self, event: LogEvent) -> None: ...

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

Listener = Callable[[Gap | StateChange | Notice], None]


class Session:
    """Fans every record out to the store, the detector, the sinks and the listeners."""

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
        """Call `listener` (from the feeding thread) for every gap, state change and notice."""
        with self._lock:
            self._listeners.append(listener)

    def _emit(self, record: Record) -> None:
        for sink in self.sinks:
            sink.on_record(record)

    def _derived(self, events: list[Gap | StateChange]) -> None:
        for ev in events:
            if isinstance(ev, Gap):
                self.store.upsert_gap(ev)
            else:
                self.store.set_state(ev)
            self._emit(ev)
            for listener in self._listeners:
                listener(ev)

    def on_gpu_samples(self, samples: list[GpuSample]) -> None:
        with self._lock:
            if self._closed:
                return
            self.store.append_gpu(samples)
            for s in samples:
                self._emit(s)
                if self.detector is not None:
                    self._derived(self.detector.feed_gpu(s))
                    last = self._busy_at_ns.get(s.gpu)
                    if last is None or s.t_mono_ns - last >= BUSY_REFRESH_NS:
                        self._busy_at_ns[s.gpu] = s.t_mono_ns
                        self.store.set_busy(s.gpu, self.detector.busy_fraction(s.gpu))

    def on_host_sample(self, sample: HostSample) -> None:
        with self._lock:
            if self._closed:
                return
            self.store.append_host(sample)
            self._emit(sample)
            if self.detector is not None:
                self.detector.feed_host(sample)

    def on_log_event(self, event: LogEvent) -> None:
        with self._lock:
            if self._closed:
                return
            self.store.append_log(event)
            self._emit(event)
            if self.detector is not None:
                self.detector.feed_log(event)

    def on_notice(self, notice: Notice) -> None:
        with self._lock:
            if self._closed:
                return
            self.store.add_notice(notice)
            self._emit(notice)
            for listener in self._listeners:
                listener(notice)

    def on_record(self, record: Record) -> None:
        """Route any record (replay uses this). Recorded gaps and states are not replayed as
        such: the detector recomputes them, so a replay shows what this version detects."""
        if isinstance(record, GpuSample):
            self.on_gpu_samples([record])
        elif isinstance(record, HostSample):
            self.on_host_sample(record)
        elif isinstance(record, LogEvent):
            self.on_log_event(record)
        elif isinstance(record, Notice):
            self.on_notice(record)

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
