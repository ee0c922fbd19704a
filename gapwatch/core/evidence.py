"""Evidence for gaps: host pressure and prover events gathered around each gap.

Who calls it: `gapwatch.core.detector.GapDetector` only. It owns two bounded buffers (recent host
samples, recent log events) and one `GapEvidence` accumulator per open or recently closed gap;
the detector asks for an accumulator when a gap opens and reads it whenever it publishes a
version of the gap. The words a gap's hint is made of are `gapwatch.core.hints`'. Pure: no I/O,
no clocks; every buffer has a `maxlen`, and every event kept is cut to what evidence uses
(`_slim`), so the buffers are bounded in bytes too.

Times here are wall seconds (`t_wall_s`): prover log lines only carry wall time, and host and
GPU samples carry both, so wall time is the one axis all three share.

Late evidence: log lines can reach gapwatch after the GPU samples that close a gap (the tailer
polls; a replay of separate files can interleave coarsely). Closed gaps therefore stay
"listening" for `late_s` seconds of data time; an event that lands in one marks it dirty and
the detector re-publishes that gap (same `gap_id`) with the richer evidence.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice
from typing import Any, Final

from msgspec.structs import replace

from gapwatch.core.models import (
    CopyRecord,
    Gap,
    HostSample,
    LinkState,
    LogEvent,
    ProcessMemory,
    ProverStatus,
)
from gapwatch.core.readings import reading
from gapwatch.core.sizes import TEXT_CHARS, cut_text
from gapwatch.cuzk.causes import (
    cause_detail,
    concerns,
    decide_cause,
    gap_state,
    snapshot_cause,
    snapshot_evidence,
    with_log_cause,
)
from gapwatch.cuzk.pipeline import Capacity, PipelineFacts

#: Most events kept per gap (warnings are kept in preference) and most published per version.
MAX_EVENTS_KEPT: Final = 64
MAX_EVENTS_PUBLISHED: Final = 12
#: A gap with no warning in its own window cites the latest one up to this long before it.
RECENT_WARNING_S: Final = 60.0
#: How far out of time order log events may arrive (seconds) and still be found for a gap.
ORDER_SLACK_S: Final = 5.0
#: Raw lines are cut to this many characters in a gap's evidence.
RAW_CHARS: Final = 160
#: Most copies kept per gap (cuzk makes tens per partition; the window holds a few partitions).
MAX_COPIES_KEPT: Final = 512
#: Recent copies kept for all GPUs (the "pinned copies ran at ..." comparison, late gaps).
RECENT_COPIES: Final = 4096
#: The copy trace counts as live for a GPU while its last copy is at most this old: a gap
#: without copies is then "no traced copy", not "no copy trace".
TRACE_LIVE_S: Final = 120.0
#: The comparison rate of pinned copies is taken over this much recent history.
PINNED_RATE_HISTORY_S: Final = 120.0
#: A memory kind that covers at least this share of the copy time in a gap's window names it.
DOMINANT_KIND_SHARE: Final = 0.8
#: Prover snapshots published per gap version (the latest ones).
MAX_PROVER_PUBLISHED: Final = 12

def _slim(ev: LogEvent) -> LogEvent:
    """What evidence needs of an event: its time, ids, warning, name and the start of its line.
    Thousands are kept (the recent-events buffer, every open and recently closed gap's list),
    so memory is bounded in bytes by keeping less of each, not by keeping fewer."""
    if not ev.fields and len(ev.raw) <= RAW_CHARS and len(ev.name) <= TEXT_CHARS:
        return ev
    return replace(ev, raw=ev.raw[:RAW_CHARS], name=cut_text(ev.name, TEXT_CHARS), fields={})


@dataclass(frozen=True, slots=True)
class ProverView:
    """A gap's prover cause and what decided it (`GapEvidence.prover_view`)."""

    cause: str | None
    #: False: the cause came from the snapshot just before the gap (none during it).
    during: bool
    states: list[dict[str, Any]]
    evidence: list[str]
    detail: str
    #: The cause came from the prover's log alone (no snapshot gave one).
    from_log: bool = False


#: A host sample as the evidence keeps it (`host_row`): its wall time, then as a reading or None
#: each field a gap keeps the maximum of, in this order wherever they are listed (`host_row`,
#: `GapEvidence.take_host`, `GapEvidence.host_maxima`): mem_used_pct, psi_mem_some_share,
#: psi_mem_some_avg10, major_faults_per_s, mem_bandwidth_bytes_per_s. Written out in each, not
#: looped over by name: a getattr per field per host sample was measurable in long reports.
HostRow = tuple[float, float | None, float | None, float | None, float | None, float | None]


def host_row(h: HostSample) -> HostRow:
    """What gap evidence keeps of a host sample: its time and its readings (`readings.reading`:
    None, NaN and negatives are not), judged once per sample, not once per gap that takes it."""
    return (h.t_wall_s, reading(h.mem_used_pct), reading(h.psi_mem_some_share),
            reading(h.psi_mem_some_avg10), reading(h.major_faults_per_s),
            reading(h.mem_bandwidth_bytes_per_s))


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
        "host_next",
        "events",
        "copies",
        "dirty",
        "published",
        "cause_counts",
        "inside_tail",
        "before_cause",
        "provers",
        "facts",
    )

    def __init__(self, gpu: int, start_s: float, facts: PipelineFacts | None = None) -> None:
        self.gpu = gpu
        #: What the prover's log says (shared by every gap): capacity, SRS loads, PoSt, ...
        self.facts = facts if facts is not None else PipelineFacts()
        #: Host samples count from the gap's start, events from `before_s` earlier.
        self.from_s = start_s
        self.until_s: float | None = None  # None while the gap is open
        self.mem_used_pct: float | None = None
        self.psi_some_share: float | None = None
        self.psi_some_avg10: float | None = None
        self.major_faults_per_s: float | None = None
        self.mem_bandwidth_bytes_per_s: float | None = None
        #: Sequence number of the first host sample not yet taken into the maxima above (see
        #: `EvidenceBuffer.host_dict`).
        self.host_next = 0
        self.events: list[LogEvent] = []
        self.copies: list[CopyRecord] = []
        self.dirty = False
        #: The last version of the gap published with this evidence (re-published on late events).
        self.published: Gap | None = None
        #: Prover snapshots taken during the gap, by the cause each gives
        #: (`gapwatch.cuzk.causes`); the latest few with their times, so that those taken after
        #: the gap's end (they can reach an open gap before the samples that close it) are left
        #: out when it closes.
        self.cause_counts: dict[str, int] = {}
        #: Both made on the first snapshot (`add_prover`): most gaps see none, and two deques
        #: per gap were a tenth of a report's per-gap cost. Empty tuples until then.
        self.inside_tail: deque[tuple[float, str | None]] | tuple[()] = ()
        #: (time, cause) of the latest snapshot before the gap's start (evidence window).
        self.before_cause: tuple[float, str | None] | None = None
        #: Each snapshot with the cause it gave and the synthesis capacity it was judged by.
        self.provers: deque[tuple[ProverStatus, str | None, Capacity | None]] | tuple[()] = ()

    def take_host(self, rows: Iterable[HostRow]) -> None:
        """Take these host samples (`host_row`s; those from the gap's start on) into the
        maxima; a field that was not a reading is None there and passed over.

        Once per gap (and when a long gap's oldest samples leave the buffer), over every host
        sample of the gap: the fields in `HostRow`'s order."""
        start = self.from_s
        m0, m1, m2 = self.mem_used_pct, self.psi_some_share, self.psi_some_avg10
        m3, m4 = self.major_faults_per_s, self.mem_bandwidth_bytes_per_s
        for t, a, b, c, d, e in rows:
            if t < start:
                continue
            if a is not None and (m0 is None or a > m0):
                m0 = a
            if b is not None and (m1 is None or b > m1):
                m1 = b
            if c is not None and (m2 is None or c > m2):
                m2 = c
            if d is not None and (m3 is None or d > m3):
                m3 = d
            if e is not None and (m4 is None or e > m4):
                m4 = e
        self.mem_used_pct, self.psi_some_share, self.psi_some_avg10 = m0, m1, m2
        self.major_faults_per_s, self.mem_bandwidth_bytes_per_s = m3, m4

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

    def add_copy(self, c: CopyRecord) -> None:
        if len(self.copies) < MAX_COPIES_KEPT:
            self.copies.append(c)
            self.dirty = True

    def add_prover(self, status: ProverStatus) -> None:
        t = status.t_wall_s
        facts = self.facts
        capacity = facts.capacity(status)
        cause = snapshot_cause(status, self.gpu, capacity, facts.pacer_on)
        if t >= self.from_s:
            if cause is not None:
                self.cause_counts[cause] = self.cause_counts.get(cause, 0) + 1
            tail = self.inside_tail
            if not isinstance(tail, deque):
                tail = self.inside_tail = deque(maxlen=8)
            tail.append((t, cause))
        elif self.before_cause is None or t >= self.before_cause[0]:
            self.before_cause = (t, cause)
        provers = self.provers
        if not isinstance(provers, deque):
            provers = self.provers = deque(maxlen=MAX_PROVER_PUBLISHED * 2)
        provers.append((status, cause, capacity))
        self.dirty = True

    def prover_view(self, end_s: float | None, start_s: float, kind: str) -> ProverView:
        """Where the prover says a gap of `kind` over [start_s, end_s] waited: the snapshots'
        cause (`end_s` None: open, so far), else the log's (`PipelineFacts.log_view`)."""
        counts = self.cause_counts
        if end_s is not None and any(t > end_s for t, _ in self.inside_tail):
            counts = dict(counts)
            for t, c in self.inside_tail:
                if t > end_s and c is not None:
                    counts[c] -= 1
        before = self.before_cause[1] if self.before_cause is not None else None
        cause, during = decide_cause(counts, before)
        kept = [p for p in self.provers if end_s is None or p[0].t_wall_s <= end_s]
        states = [gap_state(st, self.gpu, c, cap) for st, c, cap in kept[-MAX_PROVER_PUBLISHED:]]
        evidence: list[str] = []
        detail = ""
        for st, c, cap in reversed(kept):
            if c == cause and cause is not None:
                evidence = snapshot_evidence(st, self.gpu, cause, cap)
                detail = cause_detail(st, self.gpu, cause, cap)
                break
        emptied = self.facts.srs_busy_words(start_s, end_s if end_s is not None else start_s)
        if emptied is not None and cause in (None, "no_work"):
            # /status alone: nothing in flight, and the SRS list went empty: its manager's
            # mutex is held, a load (the job is registered only once its SRS is in).
            cause, during, detail = "srs_loading", True, "allocations.srs went empty"
            evidence = [emptied]
        log = self.facts.log_view(self.gpu, start_s, end_s if end_s is not None else start_s,
                                  kind)
        decided = with_log_cause(cause, log.cause)
        from_log = decided != cause
        if from_log:
            if cause is not None:
                evidence = [f"/status: {e}" for e in evidence]
            cause, during, detail = decided, True, log.detail
        if log.cause is not None and log.cause == cause:
            evidence = evidence + log.evidence
            detail = detail or log.detail
        if kind == "pcie_starved" and cause != "pinned_pool":
            evidence = evidence + self.facts.pool_evidence()
        return ProverView(cause, during, states, evidence, detail, from_log)

    def host_maxima(self) -> dict[str, float | None]:
        """The maxima taken so far (`EvidenceBuffer.host_dict` takes the new samples first)."""
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
        facts: PipelineFacts | None = None,
    ) -> None:
        self.before_s = before_s
        #: What cuzk's log says about its pipeline, fed every event before it is slimmed.
        self.facts = facts if facts is not None else PipelineFacts()
        self.late_s = late_s
        self._host: deque[HostRow] = deque(maxlen=host_maxlen)
        #: How many host samples were ever added: the next one's sequence number. Host samples
        #: reach a gap's maxima when a version of it is published (`host_dict`), once each,
        #: not one call per open gap per sample.
        self._host_seq = 0
        self._log: deque[LogEvent] = deque(maxlen=log_maxlen)
        self._prover: deque[ProverStatus] = deque(maxlen=256)
        #: Accumulators of open gaps, and of closed ones still accepting late events.
        self._open: list[GapEvidence] = []
        self._recent: deque[GapEvidence] = deque(maxlen=32)
        #: The latest event carrying each warning: pageable buffers are a property of the run,
        #: so a gap with no warning in its own window still cites a recent one.
        self.last_warning: dict[str, LogEvent] = {}
        self._copies: deque[CopyRecord] = deque(maxlen=RECENT_COPIES)
        #: End of the latest traced copy per GPU (the copy trace is live there).
        self.last_copy_s: dict[int, float] = {}
        #: Latest /proc reading of the processes on each GPU (one round per GPU).
        self.procmem: dict[int, list[ProcessMemory]] = {}
        #: The latest link reading per GPU that found it trained down (removed when it is not).
        self.links_down: dict[int, LinkState] = {}

    @staticmethod
    def relevant(ev: LogEvent, gpu: int) -> bool:
        """Does `ev` say something about `gpu`? Events naming no GPU (synthesis is shared by all
        GPUs, and a worker's GPU may not be known yet) are relevant to every GPU. Which GPU a
        worker drives is the log parser's to know (`gapwatch.logs.parse`): it stamps `gpu`."""
        return ev.gpu is None or ev.gpu == gpu

    def add_host(self, h: HostSample) -> None:
        host = self._host
        if len(host) == host.maxlen and self._open:
            # The oldest sample is about to go: gaps open that long take what they still lack.
            oldest = self._host_seq - len(host)
            for acc in self._open:
                if acc.host_next <= oldest:
                    self._take_host(acc)
        host.append(host_row(h))
        self._host_seq += 1

    def _take_host(self, acc: GapEvidence) -> None:
        n = self._host_seq - max(acc.host_next, self._host_seq - len(self._host))
        if n > 0:
            acc.take_host(islice(reversed(self._host), n))
        acc.host_next = self._host_seq

    def host_dict(self, acc: GapEvidence) -> dict[str, float | None]:
        """A gap's host evidence as of now: the maxima of the host samples from its start
        that arrived while it was open (`acc` must be open, or just closing)."""
        self._take_host(acc)
        return acc.host_maxima()

    def add_log(self, ev: LogEvent) -> bool:
        """Keep `ev`; return True when it reached a closed gap (which must be re-published)."""
        if ev.kind == "unparsed":
            return False
        self.facts.feed(ev)
        ev = _slim(ev)
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
        self.facts.feed_status(status)
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

    def add_copy(self, c: CopyRecord) -> bool:
        """Keep `c`; return True when it reached a closed gap (which must be re-published).

        Copies arrive a flush period (~100 ms) or more after they end, often after the GPU
        samples that closed the gap they explain: closed gaps take them for `late_s`, as they
        take late log lines. Copies of no watched GPU (`gpu` None) explain no gap."""
        gpu = c.gpu
        if gpu is None:
            return False
        self._copies.append(c)
        if c.end_wall_s > self.last_copy_s.get(gpu, float("-inf")):
            self.last_copy_s[gpu] = c.end_wall_s
        for acc in self._open:
            if acc.gpu == gpu and c.end_wall_s >= acc.from_s - self.before_s:
                acc.add_copy(c)
        late = False
        for acc in self._recent:
            until = acc.until_s
            if acc.gpu == gpu and until is not None \
                    and c.end_wall_s >= acc.from_s - self.before_s and c.start_wall_s <= until:
                acc.add_copy(c)
                late = True
        return late

    def add_procmem(self, reading: ProcessMemory) -> None:
        """The latest round of /proc readings per GPU (a newer round replaces the older)."""
        cur = self.procmem.get(reading.gpu)
        if cur and cur[0].t_mono_ns != reading.t_mono_ns:
            cur = None
        if not cur:
            cur = self.procmem[reading.gpu] = []
        cur.append(reading)

    def add_link(self, link: LinkState) -> None:
        if link.trained_down:
            self.links_down[link.gpu] = link
        else:
            self.links_down.pop(link.gpu, None)

    def trace_live(self, gpu: int, at_s: float) -> bool:
        """Has the copy trace delivered a copy for `gpu` recently enough to speak of it?"""
        last = self.last_copy_s.get(gpu)
        return last is not None and at_s - last <= TRACE_LIVE_S

    def pinned_rate(self, gpu: int, at_s: float) -> float | None:
        """Bytes-weighted rate of the recent pinned host-to-device copies of `gpu`."""
        total_b, total_s = 0, 0.0
        lo = at_s - PINNED_RATE_HISTORY_S
        for c in self._copies:
            if c.gpu == gpu and c.direction == "h2d" and c.src_kind == "pinned" \
                    and c.end_wall_s >= lo and c.end_wall_s > c.start_wall_s:
                total_b += c.bytes
                total_s += c.end_wall_s - c.start_wall_s
        return total_b / total_s if total_s > 0 else None

    def copies_dict(self, acc: GapEvidence, gap_start_s: float, gap_end_s: float,
                    kind: str, events: list[dict[str, Any]]) -> dict[str, Any]:
        """The gap's `copies` evidence object (docs/detection.md): what the copy trace saw in
        `[start - before_s, end]`, or, without a live trace, what is inferred and why."""
        gpu = acc.gpu
        procs = [{"pid": p.pid, "name": p.name, "pinned_bytes": p.rss_shmem_bytes,
                  "heap_bytes": p.rss_anon_bytes} for p in self.procmem.get(gpu, [])]
        if not self.trace_live(gpu, gap_end_s) and not acc.copies:
            inferred, source = inferred_memory_kind(kind, events)
            return {"traced": False, "memory_kind": inferred, "memory_kind_source": source,
                    "processes": procs}
        out = summarise_copies(acc.copies, gap_start_s - self.before_s, gap_end_s,
                               gap_start_s, gap_end_s)
        out["pinned_recent_bytes_per_s"] = self.pinned_rate(gpu, gap_end_s)
        out["processes"] = procs
        return out

    def open_gap(self, gpu: int, start_s: float) -> GapEvidence:
        """A gap just opened: gather what the buffers already hold since its start."""
        acc = GapEvidence(gpu, start_s, self.facts)
        # The host samples it takes start after the newest one from before its start.
        back = 0
        for h in reversed(self._host):
            if h[0] < start_s:
                break
            back += 1
        acc.host_next = self._host_seq - back
        lo = start_s - self.before_s
        picked = []
        # Newest first, but log events arrive only roughly in time order (stdout and stderr are
        # two files, a line without a time of its own is stamped when read): an older event
        # just behind newer ones is passed over, not taken for the end of the window.
        for ev in reversed(self._log):
            if ev.t_wall_s < lo:
                if ev.t_wall_s < lo - ORDER_SLACK_S:
                    break
                continue
            if self.relevant(ev, gpu):
                picked.append(ev)
        for ev in reversed(picked):
            acc.add_event(ev)
        for c in self._copies:
            if c.gpu == gpu and c.end_wall_s >= lo:
                acc.add_copy(c)
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


def union_s(intervals: list[tuple[float, float]], lo: float, hi: float) -> float:
    """Length of the union of `intervals` clipped to `[lo, hi]` (overlapping copies on two
    streams are counted once: this is time during which some copy ran)."""
    clipped = sorted((max(a, lo), min(b, hi)) for a, b in intervals if b > lo and a < hi)
    total, cur_a, cur_b = 0.0, None, None
    for a, b in clipped:
        if b <= a:
            continue
        if cur_b is None or a > cur_b:
            if cur_b is not None and cur_a is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        elif b > cur_b:
            cur_b = b
    if cur_a is not None and cur_b is not None:
        total += cur_b - cur_a
    return total


def summarise_copies(copies: list[CopyRecord], window_lo_s: float, window_hi_s: float,
                     gap_lo_s: float, gap_hi_s: float) -> dict[str, Any]:
    """Copies that overlap the window, by host memory kind ("pageable", "pinned", "other"):
    count, bytes (and per direction), their own rate (bytes / summed copy time), how long some
    copy of that kind ran in the window and in the gap; the memory kind that ran most of the
    copy time (at least `DOMINANT_KIND_SHARE`, else "mixed"; None: no copy)."""
    by: dict[str, dict[str, Any]] = {}
    spans: dict[str, list[tuple[float, float]]] = {}
    streams: set[int] = set()
    pids: set[int] = set()
    for c in copies:
        if c.end_wall_s < window_lo_s or c.start_wall_s > window_hi_s:
            continue
        k: str = c.host_kind if c.host_kind in ("pageable", "pinned") else "other"
        e = by.get(k)
        if e is None:
            e = by[k] = {"count": 0, "bytes": 0, "h2d_bytes": 0, "d2h_bytes": 0, "copy_s": 0.0,
                         "streams": set()}
        e["count"] += 1
        e["bytes"] += c.bytes
        e["h2d_bytes" if c.direction == "h2d" else "d2h_bytes"] += c.bytes
        e["copy_s"] += c.duration_s
        e["streams"].add(c.stream_id)
        spans.setdefault(k, []).append((c.start_wall_s, c.end_wall_s))
        streams.add(c.stream_id)
        pids.add(c.pid)
    for k, e in by.items():
        e["bytes_per_s"] = e["bytes"] / e["copy_s"] if e["copy_s"] > 0 else None
        e["busy_s"] = union_s(spans[k], window_lo_s, window_hi_s)
        e["in_gap_s"] = union_s(spans[k], gap_lo_s, gap_hi_s)
        e["streams"] = sorted(e["streams"])
    total = sum(e["busy_s"] for e in by.values())
    dominant: str | None = None
    if by:
        best = max(by, key=lambda k: by[k]["busy_s"])
        share = by[best]["busy_s"] / total if total > 0 else 1.0
        dominant = best if share >= DOMINANT_KIND_SHARE else "mixed"
    return {"traced": True, "memory_kind": dominant, "memory_kind_source": "copy trace",
            "window_start_s": window_lo_s, "window_end_s": window_hi_s,
            "by_kind": by, "streams": sorted(streams), "pids": sorted(pids)}


def traced_pageable(copies: dict[str, Any] | None) -> bool:
    """Whether a gap's `copies` object says the copy trace saw its copies come from pageable
    memory (measured, not inferred): the BREAKDOWN witness that stands in for a second gap."""
    return bool(copies and copies.get("traced") and copies.get("memory_kind") == "pageable")


def inferred_memory_kind(kind: str, events: list[dict[str, Any]]) -> tuple[str | None, str]:
    """Without a copy trace: what the memory kind most likely was, and from what."""
    warnings = {e.get("warning") for e in events}
    if "unpinned" in warnings:
        return "pageable", "log: is_pinned=false (no copy trace)"
    if warnings & {"pinned_pool_fallback", "cuda_host_alloc_failed"}:
        return "pageable", "log: pinned pool fallback (no copy trace)"
    if kind == "pcie_starved":
        return "pageable", "inferred from rate: no copy trace"
    return None, "no copy trace"
