"""Evidence for gaps: host pressure and prover events around each gap, and the one-line hint.

Who calls it: `gapwatch.core.detector.GapDetector` only. It owns two bounded buffers (recent host
samples, recent log events) and one `GapEvidence` accumulator per open or recently closed gap;
the detector asks for an accumulator when a gap opens and reads it whenever it publishes a
version of the gap. Pure: no I/O, no clocks; every buffer has a `maxlen`.

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

from gapwatch.core.models import Gap, HostSample, LogEvent, ProverStatus
from gapwatch.core.prover import concerns, decide_cause, gap_state, snapshot_cause

#: Most events kept per gap (warnings are kept in preference) and most published per version.
MAX_EVENTS_KEPT = 64
MAX_EVENTS_PUBLISHED = 12
#: A gap with no warning in its own window cites the latest one up to this long before it.
RECENT_WARNING_S = 60.0
#: Raw lines are cut to this many characters in a gap's evidence.
RAW_CHARS = 160
#: Prover snapshots published per gap version (the latest ones).
MAX_PROVER_PUBLISHED = 12

# Host pressure thresholds above which the hint mentions the host (chosen to flag real pressure,
# not background noise: PSI "some" of a few % is common on a busy box).
PSI_SHARE_PRESSURE = 0.10
PSI_AVG10_PRESSURE = 10.0
MEM_USED_PRESSURE_PCT = 90.0
MAJOR_FAULTS_PRESSURE_PER_S = 100.0


def _num(v: float | int | None) -> float | None:
    """A usable number or None (NaN and negatives are not readings)."""
    if v is None:
        return None
    f = float(v)
    if f != f or f < 0:
        return None
    return f


def _max(a: float | None, b: float | int | None) -> float | None:
    b2 = _num(b)
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
        "cause_counts",
        "inside_tail",
        "before_cause",
        "provers",
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
        #: Prover snapshots taken during the gap, by the cause each gives (`core.prover`); the
        #: latest few with their times, so that those taken after the gap's end (they can reach
        #: an open gap before the samples that close it) are left out when it closes.
        self.cause_counts: dict[str, int] = {}
        self.inside_tail: deque[tuple[float, str | None]] = deque(maxlen=8)
        #: (time, cause) of the latest snapshot before the gap's start (evidence window).
        self.before_cause: tuple[float, str | None] | None = None
        self.provers: deque[ProverStatus] = deque(maxlen=MAX_PROVER_PUBLISHED * 2)

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

    def add_prover(self, status: ProverStatus) -> None:
        t = status.t_wall_s
        cause = snapshot_cause(status, self.gpu)
        if t >= self.from_s:
            if cause is not None:
                self.cause_counts[cause] = self.cause_counts.get(cause, 0) + 1
            self.inside_tail.append((t, cause))
        elif self.before_cause is None or t >= self.before_cause[0]:
            self.before_cause = (t, cause)
        self.provers.append(status)
        self.dirty = True

    def prover_view(self, end_s: float | None) -> tuple[str | None, bool, list[dict[str, Any]]]:
        """(cause, seen during the gap, compact snapshots) as of a gap ending at `end_s`."""
        counts = self.cause_counts
        if end_s is not None and any(t > end_s for t, _ in self.inside_tail):
            counts = dict(counts)
            for t, cause in self.inside_tail:
                if t > end_s and cause is not None:
                    counts[cause] -= 1
        before = self.before_cause[1] if self.before_cause is not None else None
        cause, during = decide_cause(counts, before)
        kept = [s for s in self.provers if end_s is None or s.t_wall_s <= end_s]
        states = [gap_state(s, self.gpu) for s in kept[-MAX_PROVER_PUBLISHED:]]
        return cause, during, states

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
        self._prover: deque[ProverStatus] = deque(maxlen=256)
        #: Accumulators of open gaps, and of closed ones still accepting late events.
        self._open: list[GapEvidence] = []
        self._recent: deque[GapEvidence] = deque(maxlen=32)
        #: The latest event carrying each warning: pageable buffers are a property of the run,
        #: so a gap with no warning in its own window still cites a recent one.
        self.last_warning: dict[str, LogEvent] = {}
        #: worker id -> GPU index, learnt from events that carry both (cuzk's "worker started").
        self.worker_gpu: dict[int, int] = {}

    def relevant(self, ev: LogEvent, gpu: int) -> bool:
        """Does `ev` say something about `gpu`? Events naming no GPU (synthesis is shared by all
        GPUs) are relevant to every GPU; a worker's events go to its GPU once that is known."""
        if ev.gpu is not None:
            return ev.gpu == gpu
        if ev.worker is not None:
            mapped = self.worker_gpu.get(ev.worker)
            return mapped is None or mapped == gpu
        return True

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
        if ev.gpu is not None and ev.worker is not None:
            self.worker_gpu[ev.worker] = ev.gpu
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

    def add_prover(self, status: ProverStatus) -> bool:
        """Keep a prover snapshot; True when it reached a closed gap (to be re-published)."""
        self._prover.append(status)
        t = status.t_wall_s
        for acc in self._open:
            if t >= acc.from_s - self.before_s and concerns(status, acc.gpu):
                acc.add_prover(status)
        late = False
        for acc in self._recent:
            until = acc.until_s
            if (until is not None and acc.from_s - self.before_s <= t <= until
                    and concerns(status, acc.gpu)):
                acc.add_prover(status)
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
        snaps = []
        for status in reversed(self._prover):
            if status.t_wall_s < lo:
                break
            if concerns(status, gpu):
                snaps.append(status)
        for status in reversed(snaps):
            acc.add_prover(status)
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


def _gb(v: float) -> str:
    return f"{v / 1e9:.1f} GB/s" if v >= 1e8 else f"{v / 1e6:.0f} MB/s"


def _partitions(events: list[dict[str, Any]], warning: str) -> list[int]:
    seen: list[int] = []
    for e in events:
        p = e.get("partition")
        if e.get("warning") == warning and isinstance(p, int) and p not in seen:
            seen.append(p)
    return seen


def _plural(ps: list[int]) -> str:
    if len(ps) == 1:
        return f"partition {ps[0]} was"
    more = " ..." if len(ps) > 3 else ""
    return "partitions " + ", ".join(str(p) for p in ps[:3]) + more + " were"


def host_pressure(host: dict[str, float | None]) -> str:
    """Plain words for the host pressure seen during a gap, or "" when there was none."""
    bits = []
    share = host.get("psi_mem_some_share_max")
    avg10 = host.get("psi_mem_some_avg10_max")
    if share is not None and share >= PSI_SHARE_PRESSURE:
        bits.append(f"tasks stalled on memory {share * 100:.0f} % of the time (PSI)")
    elif avg10 is not None and avg10 >= PSI_AVG10_PRESSURE:
        bits.append(f"memory PSI some avg10 {avg10:.0f} %")
    used = host.get("mem_used_pct_max")
    if used is not None and used >= MEM_USED_PRESSURE_PCT:
        bits.append(f"host memory {used:.0f} % used")
    faults = host.get("major_faults_per_s_max")
    if faults is not None and faults >= MAJOR_FAULTS_PRESSURE_PER_S:
        bits.append(f"{faults:.0f} major faults/s (swapping?)")
    bw = host.get("mem_bandwidth_bytes_per_s_max")
    if bits and bw is not None:
        bits.append(f"host memory bandwidth {_gb(bw)}")
    return ", ".join(bits)


#: What each finer cause (`gapwatch.core.prover.PROVER_CAUSES`) means, in the hint's words.
PROVER_CAUSE_WORDS: dict[str, str] = {
    "waits_on_synthesis": "the GPU waits on synthesis (no partition synthesised ahead, every "
                          "synthesis slot busy)",
    "dispatch_stall": "a dispatch stall inside the prover (synthesised partitions waiting while "
                      "a worker is idle)",
    "inside_workers": "the wait is inside the workers (copies, the GPU mutex, CPU work): every "
                      "worker of this GPU is proving",
    "no_work": "the prover had no work (nothing queued, synthesising or synthesised)",
}


def prover_phrase(cause: str | None, during: bool = True) -> str:
    """The hint's words for a gap's prover cause ("" for none)."""
    words = PROVER_CAUSE_WORDS.get(cause or "")
    if words is None:
        return ""
    when = "" if during else " (as of just before the gap)"
    return f"prover status{when}: {words}"


def make_hint(
    kind: str,
    duration_s: float,
    rx_bytes_per_s: float | None,
    tx_bytes_per_s: float | None,
    link_bytes_per_s: float,
    confidence: str,
    host: dict[str, float | None],
    events: list[dict[str, Any]],
    is_open: bool = False,
    prover_cause: str | None = None,
    prover_during: bool = True,
) -> str:
    """One line in plain words: what the GPU did, what PCIe did, and the likeliest cause.

    RX is what the GPU receives (host-to-device, "H2D"), TX what it sends (D2H); the hint names
    the dominant direction, the one the kind was decided on. When the prover's own status said
    where it waited (`prover_cause`), that is said instead of a guess.
    """
    idle = f"SMs idle {duration_s:.1f} s{' so far' if is_open else ''}"
    if confidence == "low":
        idle = f"GPU idle {duration_s:.1f} s{' so far' if is_open else ''} (utilization.gpu only)"
    parts: list[str] = []
    rx = rx_bytes_per_s or 0.0
    tx = tx_bytes_per_s or 0.0
    if kind == "unknown":
        parts.append(f"{idle}; PCIe not measured, cause unknown")
    else:
        direction, rate = ("H2D", rx) if rx >= tx else ("D2H", tx)
        pct = rate / link_bytes_per_s * 100 if link_bytes_per_s > 0 else 0.0
        if kind == "host_stall":
            parts.append(f"{idle} with PCIe quiet ({_gb(rate)}): the GPU waited on the host")
        else:
            parts.append(f"{idle} while {direction} ran at {_gb(rate)} ({pct:.0f} % of link)")
    unpinned = _partitions(events, "unpinned")
    fallback = any(e.get("warning") == "pinned_pool_fallback" for e in events)
    alloc_failed = any(e.get("warning") == "cuda_host_alloc_failed" for e in events)
    if kind == "pcie_starved":
        if unpinned:
            parts.append(
                f"{_plural(unpinned)} synthesised with is_pinned=false: a/b/c in pageable memory?"
            )
        elif fallback or alloc_failed:
            parts.append(
                "pinned pool checkout failed, fell back to pageable memory: pool too small?"
            )
        else:
            parts.append("a slow copy: pageable memory or host memory-bandwidth contention?")
    elif kind == "transfer_bound":
        parts.append("copies at full speed but not overlapped with compute: is the next "
                     "partition's upload chained behind the other worker's kernels?")
    elif kind == "host_stall":
        synth = [e for e in events if "SYNTH" in str(e.get("name", "")).upper()
                 or "synthesis" in str(e.get("raw", ""))]
        if prover_cause is not None:
            pass  # the prover's own words follow: no guess
        elif synth:
            parts.append("synthesis did not keep up with the GPU?")
        else:
            parts.append("synthesis, a lock or the scheduler?")
        if unpinned or fallback:
            parts.append("(pageable buffers seen: is_pinned=false)")
    said = prover_phrase(prover_cause, prover_during)
    if said:
        parts.append(said)
    pressure = host_pressure(host)
    if pressure:
        parts.append(f"host: {pressure}")
    return "; ".join(parts)
