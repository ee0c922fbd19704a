"""Evidence for gaps: host pressure and prover events gathered around each gap.

Who calls it: `gapwatch.core.detector.GapDetector` only. It owns two bounded buffers (recent host
samples, recent log events) and one `GapEvidence` accumulator per open or recently closed gap;
the detector asks for an accumulator when a gap opens and reads it whenever it publishes a
version of the gap. The words a gap's hint is made of are `gapwatch.core.hints`'. Pure: no I/O,
no clocks; every buffer has a `maxlen`.

Times here are wall seconds (`t_wall_s`): prover log lines only carry wall time, and host and
GPU samples carry both, so wall time is the one axis all three share.

Late evidence: log lines can reach gapwatch after the GPU samples that close a gap (the tailer
polls; a replay of separate files can interleave coarsely). Closed gaps therefore stay
"listening" for `late_s` seconds of data time; an event that lands in one marks it dirty and
the detector re-publishes that gap (same `gap_id`) with the richer evidence.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from gapwatch.core.models import Gap, HostSample, LogEvent
from gapwatch.core.readings import reading

#: Most events kept per gap (warnings are kept in preference) and most published per version.
MAX_EVENTS_KEPT = 64
MAX_EVENTS_PUBLISHED = 12
#: A gap with no warning in its own window cites the latest one up to this long before it.
RECENT_WARNING_S = 60.0
#: Raw lines are cut to this many characters in a gap's evidence.
RAW_CHARS = 160

def _max(a: float | None, b: float | int | None) -> float | None:
    b2 = reading(None if b is None else float(b))
    if b2 is None:
        return a
    return b2 if a is None or b2 > a else a


class GapEvidence:
    """Host maxima and prover events gathered for one gap while it is open (and a bit after)."""

    __slots__ = (
        "gpu",
        "from_s",
        "until_s",
        "mem_used_pct",
        "psi_some_share",
        "psi_some_avg10",
        "major_faults_per_s",
        "mem_bandwidth_bytes_per_s",
        "events",
        "dirty",
        "published",
    )

    def __init__(self, gpu: int, start_s: float) -> None:
        self.gpu = gpu
        #: Host samples count from the gap's start, events from `before_s` earlier.
        self.from_s = start_s
        self.until_s: float | None = None  # None while the gap is open
        self.mem_used_pct: float | None = None
        self.psi_some_share: float | None = None
        self.psi_some_avg10: float | None = None
        self.major_faults_per_s: float | None = None
        self.mem_bandwidth_bytes_per_s: float | None = None
        self.events: list[LogEvent] = []
        self.dirty = False
        #: The last version of the gap published with this evidence (re-published on late events).
        self.published: Gap | None = None

    def add_host(self, h: HostSample) -> None:
        self.mem_used_pct = _max(self.mem_used_pct, h.mem_used_pct)
        self.psi_some_share = _max(self.psi_some_share, h.psi_mem_some_share)
        self.psi_some_avg10 = _max(self.psi_some_avg10, h.psi_mem_some_avg10)
        self.major_faults_per_s = _max(self.major_faults_per_s, h.major_faults_per_s)
        self.mem_bandwidth_bytes_per_s = _max(
            self.mem_bandwidth_bytes_per_s, h.mem_bandwidth_bytes_per_s
        )

    def add_event(self, ev: LogEvent) -> None:
        events = self.events
        if len(events) >= MAX_EVENTS_KEPT:
            # Full: a warning displaces the oldest ordinary event; an ordinary one is dropped.
            if ev.warning is None:
                return
            for i, old in enumerate(events):
                if old.warning is None:
                    del events[i]
                    break
            else:
                return
        events.append(ev)
        self.dirty = True

    def host_dict(self) -> dict[str, float | None]:
        return {
            "mem_used_pct_max": self.mem_used_pct,
            "psi_mem_some_share_max": self.psi_some_share,
            "psi_mem_some_avg10_max": self.psi_some_avg10,
            "major_faults_per_s_max": self.major_faults_per_s,
            "mem_bandwidth_bytes_per_s_max": self.mem_bandwidth_bytes_per_s,
        }

    def event_dicts(self) -> list[dict[str, Any]]:
        """The events to publish: every warning first, then the latest others, in time order."""
        evs = sorted(self.events, key=lambda e: e.t_wall_s)
        warned = [e for e in evs if e.warning is not None]
        rest = [e for e in evs if e.warning is None]
        room = max(0, MAX_EVENTS_PUBLISHED - len(warned))
        keep = warned[:MAX_EVENTS_PUBLISHED] + (rest[-room:] if room else [])
        keep.sort(key=lambda e: e.t_wall_s)
        return [
            {
                "t_s": e.t_wall_s,
                "name": e.name,
                "worker": e.worker,
                "partition": e.partition,
                "warning": e.warning,
                "raw": e.raw[:RAW_CHARS],
            }
            for e in keep
        ]


class EvidenceBuffer:
    """Recent host samples and log events, and the accumulators of gaps that want them."""

    def __init__(
        self,
        before_s: float,
        late_s: float = 10.0,
        host_maxlen: int = 1024,
        log_maxlen: int = 2048,
    ) -> None:
        self.before_s = before_s
        self.late_s = late_s
        self._host: deque[HostSample] = deque(maxlen=host_maxlen)
        self._log: deque[LogEvent] = deque(maxlen=log_maxlen)
        #: Accumulators of open gaps, and of closed ones still accepting late events.
        self._open: list[GapEvidence] = []
        self._recent: deque[GapEvidence] = deque(maxlen=32)
        #: The latest event carrying each warning: pageable buffers are a property of the run,
        #: so a gap with no warning in its own window still cites a recent one.
        self.last_warning: dict[str, LogEvent] = {}

    @staticmethod
    def relevant(ev: LogEvent, gpu: int) -> bool:
        """Does `ev` say something about `gpu`? Events naming no GPU (synthesis is shared by all
        GPUs, and a worker's GPU may not be known yet) are relevant to every GPU. Which GPU a
        worker drives is the log parser's to know (`gapwatch.logs.parse`): it stamps `gpu`."""
        return ev.gpu is None or ev.gpu == gpu

    def add_host(self, h: HostSample) -> None:
        self._host.append(h)
        t = h.t_wall_s
        for acc in self._open:
            if t >= acc.from_s:
                acc.add_host(h)

    def add_log(self, ev: LogEvent) -> bool:
        """Keep `ev`; return True when it reached a closed gap (which must be re-published)."""
        if ev.kind == "unparsed":
            return False
        self._log.append(ev)
        if ev.warning is not None:
            self.last_warning[ev.warning] = ev
        t = ev.t_wall_s
        for acc in self._open:
            if t >= acc.from_s - self.before_s and self.relevant(ev, acc.gpu):
                acc.add_event(ev)
        late = False
        for acc in self._recent:
            until = acc.until_s
            if (
                until is not None
                and acc.from_s - self.before_s <= t <= until
                and self.relevant(ev, acc.gpu)
            ):
                acc.add_event(ev)
                late = True
        return late

    def open_gap(self, gpu: int, start_s: float) -> GapEvidence:
        """A gap just opened: gather what the buffers already hold since its start."""
        acc = GapEvidence(gpu, start_s)
        for h in reversed(self._host):
            if h.t_wall_s < start_s:
                break
            acc.add_host(h)
        lo = start_s - self.before_s
        picked = []
        for ev in reversed(self._log):
            if ev.t_wall_s < lo:
                break
            if self.relevant(ev, gpu):
                picked.append(ev)
        for ev in reversed(picked):
            acc.add_event(ev)
        if not any(ev.warning is not None for ev in picked):
            for ev in self.last_warning.values():
                if start_s - RECENT_WARNING_S <= ev.t_wall_s < lo and self.relevant(ev, gpu):
                    acc.add_event(ev)
        self._open.append(acc)
        return acc

    def close_gap(self, acc: GapEvidence, end_s: float) -> None:
        acc.until_s = end_s
        acc.dirty = False
        self._discard_open(acc)
        self._recent.append(acc)

    def drop_gap(self, acc: GapEvidence) -> None:
        """A retracted gap: stop feeding it."""
        self._discard_open(acc)

    def _discard_open(self, acc: GapEvidence) -> None:
        try:
            self._open.remove(acc)
        except ValueError:
            pass

    def take_dirty_closed(self) -> list[GapEvidence]:
        """Closed gaps that received late events since last asked (their flag is cleared)."""
        out = [acc for acc in self._recent if acc.dirty]
        for acc in out:
            acc.dirty = False
        return out

    def prune(self, now_s: float) -> None:
        """Stop listening for late events on gaps closed more than `late_s` ago."""
        recent = self._recent
        while recent and (recent[0].until_s or 0.0) < now_s - self.late_s:
            recent.popleft()
