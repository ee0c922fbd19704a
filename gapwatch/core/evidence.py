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
"listening" for `late_s` seconds of their own GPU's data time (at most `RECENT_GAPS` of them per
GPU); an event that lands in one marks it dirty and the detector re-publishes that gap (same
`gap_id`) with the richer evidence. Which closed gaps listen depends on their own GPU only, never
on another GPU's gaps or samples: one bound over all GPUs (32 in all) lost late lines on a busy
box (8 GPUs with a gap every 2 s each closed 40 in `late_s`), and it tied the GPUs together, so
the parallel report (`gapwatch.offline.report_parallel`) could not split them with logs.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from operator import attrgetter
from typing import Final

from msgspec import UNSET
from msgspec.structs import replace

from gapwatch.core import fmt
from gapwatch.core.evidence_types import (
    CopiesEvidence,
    CopyKindEvidence,
    EventEvidence,
    HostEvidence,
    ProcessEvidence,
)
from gapwatch.core.health import event_words
from gapwatch.core.models import (
    POOL_FALLBACK_WARNINGS,
    CopyRecord,
    Gap,
    HardwareEvent,
    HostSample,
    LinkState,
    LogEvent,
    ProcessMemory,
    ProverStatus,
)
from gapwatch.core.proc_rounds import ProcRounds
from gapwatch.core.prover import NoProver, Prover, ProverGap
from gapwatch.core.readings import reading
from gapwatch.core.sizes import TEXT_CHARS, cut_text

#: Most events kept per gap (warnings are kept in preference) and most published per version.
MAX_EVENTS_KEPT: Final = 64
MAX_EVENTS_PUBLISHED: Final = 12
#: Partitions the buffer remembers as synthesised unpinned and not yet taken by a GPU
#: (`EvidenceBuffer.unpinned_waiting`): far more than wait at once (cuzk: a few jobs of 10
#: partitions each), so only one never taken (a lost line, a killed job) is ever dropped.
MAX_UNPINNED_KEPT: Final = 4096
#: A gap's own GPU's uploads of unpinned partitions it keeps (`GapEvidence.uploads`), and the
#: recent ones the buffer keeps for gaps still to open: a hint names `MAX_PARTS_NAMED` (3).
MAX_UPLOADS_KEPT: Final = 8
RECENT_UPLOADS: Final = 256
#: Which log events a gap can still take (`GapEvidence.takes`): any; only warnings (it is
#: full, and holds an ordinary event a warning would displace); none (full of warnings).
TAKES_ANY: Final = 2
TAKES_WARNINGS: Final = 1
TAKES_NONE: Final = 0
#: A gap with no warning in its own window cites the latest one up to this long before it.
RECENT_WARNING_S: Final = 60.0
#: How far out of time order log events may arrive (seconds) and still be found for a gap.
ORDER_SLACK_S: Final = 5.0
#: A gap that starts this long after a GPU error (an XID, uncorrected ECC, PCIe replays), or
#: holds one, says so in its hint: the GPU or its driver may be why it went idle.
HW_ERROR_REACH_S: Final = 120.0
#: GPU errors kept per GPU for that (the latest matter).
HW_EVENTS_KEPT: Final = 16
#: Hardware events that are no moment a gap could follow from: corrected ECC errors (the
#: memory fixed them), and the row remap states (said when first read, which may be days
#: after they began).
_NOT_A_MOMENT: Final = frozenset({"ecc_corrected", "row_remap_pending", "row_remap_failure"})
#: Closed gaps per GPU still listening for late evidence (see the module docstring).
RECENT_GAPS: Final = 32
#: Raw lines are cut to this many characters in a gap's evidence.
RAW_CHARS: Final = 160
#: Most copies kept per gap (a prover makes tens per partition, e.g. cuzk; the window holds a
#: few partitions).
MAX_COPIES_KEPT: Final = 512
#: Recent copies kept per GPU (the "pinned copies ran at ..." comparison, a new gap's copies
#: from just before it). Per GPU, not over all GPUs: 8 GPUs with 30 copies a partition make
#: ~160 a second, and a window shared by all held ~25 s, not the `PINNED_RATE_HISTORY_S` the
#: rate is over; and a report split by GPU across processes needs each GPU's evidence to
#: depend on its own records only (`gapwatch.offline.report_parallel`).
RECENT_COPIES: Final = 4096
#: The copy trace counts as live for a GPU while its last copy is at most this old: a gap
#: without copies is then "no traced copy", not "no copy trace".
TRACE_LIVE_S: Final = 120.0
#: The comparison rate of pinned copies is taken over this much recent history.
PINNED_RATE_HISTORY_S: Final = 120.0
#: A memory kind that covers at least this share of the copy time in a gap's window names it.
DOMINANT_KIND_SHARE: Final = 0.8

_event_time = attrgetter("t_wall_s")
#: A kept copy: its number among its GPU's copies, the copy, the latest end of its GPU's
#: copies up to it.
_KeptCopy = tuple[int, CopyRecord, float]


def _slim(ev: LogEvent) -> LogEvent:
    """What evidence needs of an event: its time, ids, warning, name and the start of its line.
    Thousands are kept (the recent-events buffer, every open and recently closed gap's list),
    so memory is bounded in bytes by keeping less of each, not by keeping fewer."""
    if not ev.fields and len(ev.raw) <= RAW_CHARS and len(ev.name) <= TEXT_CHARS:
        return ev
    return replace(ev, raw=ev.raw[:RAW_CHARS], name=cut_text(ev.name, TEXT_CHARS), fields={})


#: A host sample as the evidence keeps it (`host_row`): its wall time, then as a reading or None
#: each field a gap keeps the maximum of, in this order wherever they are listed (`host_row`,
#: `GapEvidence.take_host`, `GapEvidence.host_maxima`): mem_used_pct, psi_mem_some_share,
#: psi_mem_some_avg10, major_faults_per_s, mem_bandwidth_bytes_per_s, swap_used_bytes (their
#: maxima), psi_cpu_some_share (its mean). Written out in each, not looped over by name: a
#: getattr per field per host sample was measurable in long reports.
HostRow = tuple[float, float | None, float | None, float | None, float | None, float | None,
                float | None, float | None]


def host_row(h: HostSample) -> HostRow:
    """What gap evidence keeps of a host sample: its time and its readings (`readings.reading`:
    None, NaN and negatives are not), judged once per sample, not once per gap that takes it."""
    return (h.t_wall_s, reading(h.mem_used_pct), reading(h.psi_mem_some_share),
            reading(h.psi_mem_some_avg10), reading(h.major_faults_per_s),
            reading(h.mem_bandwidth_bytes_per_s), reading(h.swap_used_bytes),
            reading(h.psi_cpu_some_share))


def _max_reading(current: float | None, values: tuple[float | None, ...]) -> float | None:
    """The largest of `current` and `values`, passing over None (no reading); None if all are."""
    best = current
    for v in values:
        if v is not None and (best is None or v > best):
            best = v
    return best


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
        "swap_used_bytes",
        "cpu_wait_sum",
        "cpu_wait_n",
        "host_next",
        "events",
        "plain",
        "takes",
        "copies",
        "dirty",
        "published",
        "prover",
        "uploads",
    )

    def __init__(self, gpu: int, start_s: float, prover: ProverGap) -> None:
        self.gpu = gpu
        #: What the prover gathers for this gap (`gapwatch.core.prover`): its snapshots, causes.
        self.prover = prover
        #: Host samples count from the gap's start, events from `before_s` earlier.
        self.from_s = start_s
        self.until_s: float | None = None  # None while the gap is open
        self.mem_used_pct: float | None = None
        self.psi_some_share: float | None = None
        self.psi_some_avg10: float | None = None
        self.major_faults_per_s: float | None = None
        self.mem_bandwidth_bytes_per_s: float | None = None
        self.swap_used_bytes: float | None = None
        #: CPU PSI's share per host sample, summed over those with a reading, and how many:
        #: its mean over the gap, not its largest (one tick's wait is the box's noise).
        self.cpu_wait_sum = 0.0
        self.cpu_wait_n = 0
        #: Sequence number of the first host sample not yet taken into the maxima above (see
        #: `EvidenceBuffer.host_evidence`).
        self.host_next = 0
        self.events: list[LogEvent] = []
        #: Ordinary events (no warning) among `events`, and which events it can still take
        #: (`TAKES_ANY`, `TAKES_WARNINGS`, `TAKES_NONE`): `add_event`'s rule summed up, so
        #: that the buffer need not offer a full gap what it would drop (a gap is full from
        #: its start in a busy log: ~200,000 of the offers an hour of 8 GPUs).
        self.plain = 0
        self.takes = TAKES_ANY
        self.copies: list[CopyRecord] = []
        self.dirty = False
        #: The last version of the gap published with this evidence (re-published on late events).
        self.published: Gap | None = None
        #: Its own GPU's uploads of partitions synthesised unpinned, in its window
        #: (`EvidenceBuffer.add_log`): kept apart from `events`, which a flood of warnings
        #: fills (a busy log's ~170 events a window; every new synthesis warns), so that the
        #: few lines saying which partition THIS GPU was uploading are never crowded out.
        self.uploads: list[LogEvent] = []

    def add_upload(self, ev: LogEvent) -> None:
        """`ev` took a partition synthesised unpinned to this gap's GPU (the first
        `MAX_UPLOADS_KEPT`)."""
        if len(self.uploads) < MAX_UPLOADS_KEPT and all(u is not ev for u in self.uploads):
            self.uploads.append(ev)
            self.dirty = True

    def take_host(self, rows: Iterable[HostRow]) -> None:
        """Take these host samples (`host_row`s; those from the gap's start on) into the
        maxima; a field that was not a reading is None there and passed over.

        Once per gap (and when a long gap's oldest samples leave the buffer), over every host
        sample of the gap: the fields in `HostRow`'s order."""
        taken = [r for r in rows if r[0] >= self.from_s]
        if not taken:
            return
        _, used, share, avg10, faults, bandwidth, swap, cpu = zip(*taken, strict=True)
        self.mem_used_pct = _max_reading(self.mem_used_pct, used)
        self.psi_some_share = _max_reading(self.psi_some_share, share)
        self.psi_some_avg10 = _max_reading(self.psi_some_avg10, avg10)
        self.major_faults_per_s = _max_reading(self.major_faults_per_s, faults)
        self.mem_bandwidth_bytes_per_s = _max_reading(self.mem_bandwidth_bytes_per_s, bandwidth)
        self.swap_used_bytes = _max_reading(self.swap_used_bytes, swap)
        for v in cpu:
            if v is not None:
                self.cpu_wait_sum += v
                self.cpu_wait_n += 1

    def add_event(self, ev: LogEvent) -> None:
        events = self.events
        if len(events) >= MAX_EVENTS_KEPT:
            # Full: a warning displaces the oldest ordinary event; an ordinary one is dropped.
            if ev.warning is None or not self.plain:
                return
            for i, old in enumerate(events):
                if old.warning is None:
                    del events[i]
                    break
            self.plain -= 1
        elif ev.warning is None:
            self.plain += 1
        events.append(ev)
        self.dirty = True
        if len(events) >= MAX_EVENTS_KEPT:
            self.takes = TAKES_WARNINGS if self.plain else TAKES_NONE

    def add_events(self, evs: list[LogEvent]) -> None:
        """`add_event` for each of `evs` in turn, in one pass (a new gap takes ~120 events
        from the buffer at once, one call each was ~1.7 M calls an hour of an 8-GPU report;
        tests/test_evidence_fast_paths.py checks the two agree). Once full, what is appended
        is warnings only, so the ordinary events they displace are those kept before, oldest
        first: the first `d` of them go, for the first `d` warnings still to come, where `d`
        is the fewer of the two (the rest of the warnings, and every ordinary event, are
        dropped, as `add_event` drops them)."""
        events = self.events
        room = MAX_EVENTS_KEPT - len(events)
        if room > 0:
            if not evs:
                return
            events += evs[:room]
            self.dirty = True
        plain = [i for i, old in enumerate(events) if old.warning is None]
        warned: list[LogEvent] = []
        for ev in islice(evs, max(room, 0), None) if plain else ():
            if ev.warning is not None:
                warned.append(ev)
                if len(warned) == len(plain):
                    break
        if warned:
            for i in reversed(plain[:len(warned)]):
                del events[i]
            events += warned
            self.dirty = True
        self.plain = len(plain) - len(warned)
        if len(events) >= MAX_EVENTS_KEPT:
            self.takes = TAKES_WARNINGS if self.plain else TAKES_NONE

    def add_copy(self, c: CopyRecord) -> None:
        if len(self.copies) < MAX_COPIES_KEPT:
            self.copies.append(c)
            self.dirty = True

    def add_prover(self, status: ProverStatus) -> None:
        """A status snapshot from the gap's evidence window: the prover's to judge."""
        self.prover.add_status(status)
        self.dirty = True

    def host_maxima(self) -> HostEvidence:
        """The maxima taken so far (`EvidenceBuffer.host_evidence` takes the new samples
        first)."""
        return HostEvidence(self.mem_used_pct, self.psi_some_share, self.psi_some_avg10,
                            self.major_faults_per_s, self.mem_bandwidth_bytes_per_s,
                            self.swap_used_bytes,
                            self.cpu_wait_sum / self.cpu_wait_n if self.cpu_wait_n else None)

    def event_list(self) -> list[EventEvidence]:
        """The events to publish: every warning first, then the latest others, and the gap's
        GPU's uploads of unpinned partitions (`uploads`, each marked), in time order."""
        evs = sorted(self.events, key=_event_time)
        warned = [e for e in evs if e.warning is not None]
        rest = [e for e in evs if e.warning is None]
        room = max(0, MAX_EVENTS_PUBLISHED - len(warned))
        keep = warned[:MAX_EVENTS_PUBLISHED] + (rest[-room:] if room else [])
        # By identity: an upload is the very event `add_event` was handed (a Struct's `==`
        # compares its fields one by one, raw text included).
        uploads = {id(u) for u in self.uploads}
        if uploads:
            kept = {id(e) for e in keep}
            keep += [u for u in self.uploads if id(u) not in kept]
        keep.sort(key=_event_time)
        return [EventEvidence(e.t_wall_s, e.name, e.worker, e.partition, e.warning,
                              e.raw[:RAW_CHARS], UNSET if e.job_id is None else e.job_id,
                              True if id(e) in uploads else UNSET)
                for e in keep]


class EvidenceBuffer:
    """Recent host samples and log events, and the accumulators of gaps that want them."""

    def __init__(
        self,
        before_s: float,
        late_s: float = 10.0,
        host_maxlen: int = 1024,
        log_maxlen: int = 2048,
        prover: Prover | None = None,
    ) -> None:
        self.before_s = before_s
        #: The prover behind the work (`gapwatch.core.prover`), fed every event before it is
        #: slimmed and every snapshot; none: `NoProver`.
        self.prover: Prover = prover if prover is not None else NoProver()
        self.late_s = late_s
        self._host: deque[HostRow] = deque(maxlen=host_maxlen)
        #: How many host samples were ever added: the next one's sequence number. Host samples
        #: reach a gap's maxima when a version of it is published (`host_evidence`), once each,
        #: not one call per open gap per sample.
        self._host_seq = 0
        self._log: deque[LogEvent] = deque(maxlen=log_maxlen)
        #: Events ever kept in `_log`, and the count at which the latest one older than the
        #: event before it was kept: while that one or its predecessor has left the buffer,
        #: the buffer is in time order and `_events_since` finds its window by bisection.
        self._logged = 0
        self._log_disorder_at = 0
        self._prover: deque[ProverStatus] = deque(maxlen=256)
        #: Accumulators of open gaps, and of closed ones still accepting late events, per GPU
        #: (oldest first), with the latest end among each GPU's (a bound: once an event is past
        #: it, none of that GPU's closed gaps can take it).
        self._open: list[GapEvidence] = []
        #: The same by GPU (`relevant`'s rule GPU by GPU: an event naming a GPU reaches only
        #: that GPU's open gaps).
        self._open_of: dict[int, list[GapEvidence]] = {}
        self._recent: dict[int, deque[GapEvidence]] = {}
        self._recent_until: dict[int, float] = {}
        #: The latest of those ends (an event past it reaches no closed gap of any GPU).
        self._recent_latest_s = float("-inf")
        #: The latest event carrying each warning: pageable buffers are a property of the run,
        #: so a gap with no warning in its own window still cites a recent one.
        self.last_warning: dict[str, LogEvent] = {}
        #: The latest `RECENT_COPIES` copies of each GPU, and the pinned host-to-device ones
        #: among them again, for `pinned_rate`: each with its number among its GPU's copies
        #: (`_copies_added`), so that what fell out of the window is passed over.
        self._copies_of: dict[int, deque[_KeptCopy]] = {}
        self._pinned_of: dict[int, deque[_KeptCopy]] = {}
        self._copies_added: dict[int, int] = {}
        self._copies_latest_end: dict[int, float] = {}
        #: End of the latest traced copy per GPU (the copy trace is live there).
        self.last_copy_s: dict[int, float] = {}
        #: Latest /proc reading of the processes on each GPU (one round per GPU).
        self.procmem = ProcRounds()
        #: The latest link reading per GPU that found it trained down (removed when it is not).
        self.links_down: dict[int, LinkState] = {}
        #: Recent GPU errors per GPU (NVML: XID, ECC, PCIe replays), oldest first.
        self._hw: dict[int, deque[HardwareEvent]] = {}
        #: Partitions (job, number) whose synthesis warned `is_pinned=false` and that no line
        #: has yet shown a GPU take, oldest first (at most `MAX_UNPINNED_KEPT`). The warning
        #: comes when the partition is synthesised, long before a GPU uploads it (cuzk: ~20 s,
        #: in a queue all GPUs share), so it names no GPU and falls in other gaps' windows
        #: than the upload's; the first line naming the partition with a GPU is that GPU
        #: taking it (`_upload`), the one a gap of that GPU names (`gapwatch.core.hints`).
        self.unpinned_waiting: dict[tuple[str | None, int], None] = {}
        #: The latest such uploads (for gaps that open after them, within their window).
        self._uploads: deque[LogEvent] = deque(maxlen=RECENT_UPLOADS)

    def _upload(self, ev: LogEvent) -> bool:
        """Note `ev`'s unpinned synthesis, or whether it is a GPU taking a partition that was
        synthesised unpinned (its first line naming a GPU since the warning)."""
        p = ev.partition
        if p is None:
            return False
        key = (ev.job_id, p)
        waiting = self.unpinned_waiting
        if ev.warning == "unpinned":
            waiting.pop(key, None)
            waiting[key] = None
            if len(waiting) > MAX_UNPINNED_KEPT:
                del waiting[next(iter(waiting))]
            return False
        if ev.gpu is None or key not in waiting:
            return False
        del waiting[key]
        return True

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

    def host_evidence(self, acc: GapEvidence) -> HostEvidence:
        """A gap's host evidence as of now: the maxima of the host samples from its start
        that arrived while it was open (`acc` must be open, or just closing)."""
        self._take_host(acc)
        return acc.host_maxima()

    def add_log(self, ev: LogEvent) -> bool:
        """Keep `ev`; return True when it reached a closed gap (which must be re-published)."""
        if ev.kind == "unparsed":
            return False
        self.prover.feed_log(ev)
        ev = _slim(ev)
        log = self._log
        t = ev.t_wall_s
        self._logged += 1
        if log and not t >= log[-1].t_wall_s:  # (a NaN time is out of order too)
            self._log_disorder_at = self._logged
        log.append(ev)
        if ev.warning is not None:
            self.last_warning[ev.warning] = ev
        gpu = ev.gpu
        before = self.before_s
        upload = self._upload(ev)
        if upload:
            self._uploads.append(ev)
            for acc in self._open_of.get(gpu, ()) if gpu is not None else ():
                if t >= acc.from_s - before:
                    acc.add_upload(ev)
        need = TAKES_WARNINGS if ev.warning is not None else TAKES_ANY
        # `relevant`'s rule, GPU by GPU: an event naming no GPU reaches every GPU's open gaps
        # (those that can still take it: `GapEvidence.takes`).
        for acc in self._open if gpu is None else self._open_of.get(gpu, ()):
            if acc.takes >= need and t >= acc.from_s - before:
                acc.add_event(ev)
        if t > self._recent_latest_s:
            return False  # the usual case: the event is newer than every closed gap's end
        return self._add_late(ev, upload)

    def _add_late(self, ev: LogEvent, upload: bool = False) -> bool:
        """`ev` to the closed gaps still listening whose window holds it (`upload`: as one of
        their GPU's uploads too); True if any."""
        t, gpu, before = ev.t_wall_s, ev.gpu, self.before_s
        late = False
        # `relevant`'s rule, GPU by GPU: an event naming no GPU reaches every GPU's closed gaps.
        for g in (self._recent if gpu is None else (gpu,) if gpu in self._recent else ()):
            if t > self._recent_until[g]:
                continue  # newer than every end of this GPU's closed gaps
            for acc in self._recent[g]:
                until = acc.until_s
                if until is not None and acc.from_s - before <= t <= until:
                    acc.add_event(ev)
                    if upload:
                        acc.add_upload(ev)
                    late = True
        return late

    def _closed(self) -> Iterator[GapEvidence]:
        """Every closed gap still listening, GPU after GPU."""
        for recent in self._recent.values():
            yield from recent

    def closed_listening(self) -> list[GapEvidence]:
        """Every closed gap still listening (`_closed`), as a list: the detector explains
        them again at the end of data (`GapDetector._tell_end`)."""
        return list(self._closed())

    def add_prover(self, status: ProverStatus) -> bool:
        """Keep a prover snapshot; True when it reached a closed gap (to be re-published)."""
        self._prover.append(status)
        prover = self.prover
        prover.feed_status(status)
        t = status.t_wall_s
        for acc in self._open:
            if t >= acc.from_s - self.before_s and prover.concerns(status, acc.gpu):
                acc.add_prover(status)
        late = False
        for acc in self._closed():
            until = acc.until_s
            if (until is not None and acc.from_s - self.before_s <= t <= until
                    and prover.concerns(status, acc.gpu)):
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
        self._keep_copy(gpu, c)
        if c.end_wall_s > self.last_copy_s.get(gpu, float("-inf")):
            self.last_copy_s[gpu] = c.end_wall_s
        for acc in self._open:
            if acc.gpu == gpu and c.end_wall_s >= acc.from_s - self.before_s:
                acc.add_copy(c)
        late = False
        for acc in self._recent.get(gpu, ()):
            until = acc.until_s
            if until is not None \
                    and c.end_wall_s >= acc.from_s - self.before_s and c.start_wall_s <= until:
                acc.add_copy(c)
                late = True
        return late

    def _keep_copy(self, gpu: int, c: CopyRecord) -> None:
        self._copies_added[gpu] = n = self._copies_added.get(gpu, 0) + 1
        # The latest end of this GPU's copies so far, beside each: a walk back from the newest
        # stops where no copy at or before it can end late enough (`_copies_ending`).
        latest = self._copies_latest_end[gpu] = max(
            self._copies_latest_end.get(gpu, float("-inf")), c.end_wall_s)
        mine = self._copies_of.get(gpu)
        if mine is None:
            mine = self._copies_of[gpu] = deque(maxlen=RECENT_COPIES)
        mine.append((n, c, latest))
        if c.direction == "h2d" and c.src_kind == "pinned" and c.end_wall_s > c.start_wall_s:
            pinned = self._pinned_of.get(gpu)
            if pinned is None:
                pinned = self._pinned_of[gpu] = deque(maxlen=RECENT_COPIES)
            pinned.append((n, c, latest))

    def _copies_ending(self, kept: dict[int, deque[_KeptCopy]], gpu: int, lo: float
                       ) -> list[CopyRecord]:
        """`gpu`'s copies in `kept`, among its latest `RECENT_COPIES`, that ended at `lo` or
        later, oldest first: walked back from the newest while some copy at or before may
        still have (a gap reads the few seconds before it, not the whole window)."""
        mine = kept.get(gpu)
        if not mine:
            return []
        oldest = self._copies_added[gpu] - RECENT_COPIES
        out = []
        for n, c, latest in reversed(mine):
            if latest < lo or n <= oldest:
                break
            if c.end_wall_s >= lo:
                out.append(c)
        out.reverse()
        return out

    def add_procmem(self, reading: ProcessMemory) -> None:
        """The latest round of /proc readings per GPU (a newer round replaces the older; at
        most `MAX_PROCS_PER_ROUND` processes, each once: every gap cites them)."""
        self.procmem.add(reading)

    def add_hw(self, ev: HardwareEvent) -> None:
        """A GPU error a gap could follow from: not corrected ECC errors, and not a row remap
        state, said when first read (at gapwatch's start for one days old: every gap of the
        first two minutes after each restart read "after a GPU error at <the start>")."""
        if ev.kind not in _NOT_A_MOMENT:
            self._hw.setdefault(ev.gpu, deque(maxlen=HW_EVENTS_KEPT)).append(ev)

    def hardware_words(self, gpu: int, start_s: float, end_s: float) -> str:
        """The hint's words for a gap over [start_s, end_s] of `gpu` that follows a GPU error
        (the latest within `HW_ERROR_REACH_S` before its start, or during it), else ""."""
        for ev in reversed(self._hw.get(gpu, ())):
            if ev.t_wall_s <= end_s and ev.t_wall_s >= start_s - HW_ERROR_REACH_S:
                return f"after a GPU error at {fmt.clock(ev.t_wall_s)}: {event_words(ev)}"
        return ""

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
        for c in self._copies_ending(self._pinned_of, gpu, lo):
            total_b += c.bytes
            total_s += c.end_wall_s - c.start_wall_s
        return total_b / total_s if total_s > 0 else None

    def copies_dict(self, acc: GapEvidence, gap_start_s: float, gap_end_s: float,
                    kind: str, events: list[EventEvidence]) -> CopiesEvidence:
        """The gap's `copies` evidence object (docs/detection.md): what the copy trace saw in
        `[start - before_s, end]`, or, without a live trace, what is inferred and why."""
        gpu = acc.gpu
        procs = [ProcessEvidence(p.pid, p.name, p.rss_shmem_bytes, p.rss_anon_bytes)
                 for p in self.procmem.of(gpu)]
        if not self.trace_live(gpu, gap_end_s) and not acc.copies:
            inferred, source = inferred_memory_kind(kind, events)
            return CopiesEvidence(traced=False, memory_kind=inferred, memory_kind_source=source,
                                  processes=procs)
        out = summarise_copies(acc.copies, gap_start_s - self.before_s, gap_end_s,
                               gap_start_s, gap_end_s)
        return replace(out, pinned_recent_bytes_per_s=self.pinned_rate(gpu, gap_end_s),
                       processes=procs)

    def open_gap(self, gpu: int, start_s: float, idle_since_s: float | None = None
                 ) -> GapEvidence:
        """A gap just opened: gather what the buffers already hold since its start;
        `idle_since_s`: the GPU's last busy reading before it (`Prover.open_gap`)."""
        prover = self.prover
        acc = GapEvidence(gpu, start_s, prover.open_gap(gpu, start_s, idle_since_s))
        # The host samples it takes start after the newest one from before its start.
        back = 0
        for h in reversed(self._host):
            if h[0] < start_s:
                break
            back += 1
        acc.host_next = self._host_seq - back
        lo = start_s - self.before_s
        self._take_events(acc, gpu, start_s, lo)
        # Newest first, back to the window's start: the uploads are kept in the order fed (the
        # data's time order), and a gap opens ~14,000 times in an hour of 8 GPUs: reading all
        # 256 at each was ~0.4 s of that hour's report (docs/benchmarks.md).
        for up in reversed(self._uploads):
            if up.t_wall_s < lo:
                break
            if up.gpu == gpu:
                acc.add_upload(up)
        for c in self._copies_ending(self._copies_of, gpu, lo):
            acc.add_copy(c)
        for status in self._snapshots_since(lo, gpu):
            acc.add_prover(status)
        self._open.append(acc)
        self._open_of.setdefault(gpu, []).append(acc)
        return acc

    def _take_events(self, acc: GapEvidence, gpu: int, start_s: float, lo: float) -> None:
        """The gap's log events from `lo` on; without a warning among them, the latest recent
        warning before `lo` too (what went wrong a little earlier is often why)."""
        picked = self._events_since(lo, gpu)
        acc.add_events(picked)
        for ev in picked:  # a plain loop: any() over a generator cost twice as much here
            if ev.warning is not None:
                return
        for ev in self.last_warning.values():
            if start_s - RECENT_WARNING_S <= ev.t_wall_s < lo and self.relevant(ev, gpu):
                acc.add_event(ev)

    def _snapshots_since(self, lo: float, gpu: int) -> list[ProverStatus]:
        """The prover's snapshots from `lo` on that concern `gpu`, oldest first."""
        snaps = []
        for status in reversed(self._prover):
            if status.t_wall_s < lo:
                break
            if self.prover.concerns(status, gpu):
                snaps.append(status)
        snaps.reverse()
        return snaps

    def _events_since(self, lo: float, gpu: int) -> list[LogEvent]:
        """The kept events of `gpu` from `lo` on, oldest first. Newest first, but log events
        arrive only roughly in time order (stdout and stderr are two files, a line without a
        time of its own is stamped when read): an older event just behind newer ones is passed
        over, not taken for the end of the window. While the buffer is in time order (a
        report's `--log` events come sorted), the same events are found from the first at or
        after `lo` on: the walk back would take every event from there and pass over the
        rest (all before `lo`).

        Once a gap per GPU every ~2 s in a busy log (~170 events since `lo`, of the 2,048
        kept): the window is walked from the newest end (`islice` from `at` skipped the ~1,900
        older ones one by one each time) and `relevant`'s rule is written inline."""
        log = self._log
        if self._log_disorder_at <= self._logged - len(log) + 1:
            newest_first = islice(reversed(log), len(log) - bisect_left(log, lo, key=_event_time))
            picked = [ev for ev in newest_first if ev.gpu is None or ev.gpu == gpu]
            picked.reverse()
            return picked
        picked = []
        for ev in reversed(log):
            if ev.t_wall_s < lo:
                if ev.t_wall_s < lo - ORDER_SLACK_S:
                    break
                continue
            if self.relevant(ev, gpu):
                picked.append(ev)
        picked.reverse()
        return picked

    def close_gap(self, acc: GapEvidence, end_s: float) -> None:
        acc.until_s = end_s
        acc.dirty = False
        self._discard_open(acc)
        recent = self._recent.get(acc.gpu)
        if recent is None:
            recent = self._recent[acc.gpu] = deque(maxlen=RECENT_GAPS)
        recent.append(acc)
        if end_s > self._recent_until.get(acc.gpu, float("-inf")):
            self._recent_until[acc.gpu] = end_s
        if end_s > self._recent_latest_s:
            self._recent_latest_s = end_s

    def drop_gap(self, acc: GapEvidence) -> None:
        """A retracted gap: stop feeding it."""
        self._discard_open(acc)

    def _discard_open(self, acc: GapEvidence) -> None:
        try:
            self._open.remove(acc)
            self._open_of[acc.gpu].remove(acc)
        except ValueError:
            pass

    def listening_gap_ids(self) -> set[int]:
        """Ids of the closed gaps late events can still reach (`_recent`): only these can be
        re-published."""
        return {acc.published.gap_id for acc in self._closed() if acc.published is not None}

    def take_dirty_closed(self) -> list[GapEvidence]:
        """Closed gaps that received late events since last asked (their flag is cleared)."""
        out = [acc for acc in self._closed() if acc.dirty]
        for acc in out:
            acc.dirty = False
        return out

    def prune(self, now_s: dict[int, float]) -> None:
        """Stop listening for late events on gaps closed more than `late_s` before their own
        GPU's latest sample (`now_s`, wall seconds by GPU)."""
        late_s = self.late_s
        for gpu, recent in self._recent.items():
            if recent:
                cut = now_s.get(gpu, 0.0) - late_s
                while recent and (recent[0].until_s or 0.0) < cut:
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


@dataclass(slots=True)
class _KindSum:
    """The running sums of one memory kind's copies (`summarise_copies`)."""

    count: int = 0
    bytes: int = 0
    h2d_bytes: int = 0
    d2h_bytes: int = 0
    copy_s: float = 0.0
    streams: set[int] = field(default_factory=set)
    #: Of them, the bytes moved and the copy time spent inside the gap (`_inside`).
    in_gap_bytes: float = 0.0
    in_gap_copy_s: float = 0.0


def _inside(c: CopyRecord, lo_s: float, hi_s: float) -> tuple[float, float]:
    """(bytes, seconds) of copy `c` inside `[lo_s, hi_s]`: its bytes by the share of its time
    inside (a copy's bytes move through its time, as far as anything tells), a copy of no
    duration whole where it lies inside. What a gap's hint says moved during it
    (`summarise_copies`)."""
    took = c.end_wall_s - c.start_wall_s
    if took <= 0:
        return (float(c.bytes), 0.0) if lo_s <= c.start_wall_s <= hi_s else (0.0, 0.0)
    inside = min(c.end_wall_s, hi_s) - max(c.start_wall_s, lo_s)
    if inside <= 0:
        return 0.0, 0.0
    return c.bytes * inside / took, inside


def summarise_copies(copies: list[CopyRecord], window_lo_s: float, window_hi_s: float,
                     gap_lo_s: float, gap_hi_s: float) -> CopiesEvidence:
    """Copies that overlap the window, by host memory kind ("pageable", "pinned", "other"):
    count, bytes (and per direction), their own rate (bytes / summed copy time), how long some
    copy of that kind ran in the window and in the gap; the memory kind that ran most of the
    copy time in the gap, or in the window where none ran in the gap (at least
    `DOMINANT_KIND_SHARE`, else "mixed"; None: no copy). Of each kind also
    what moved during the gap `[gap_lo_s, gap_hi_s]` (`_inside`): the window's figures count
    the copies before the gap too."""
    by: dict[str, _KindSum] = {}
    spans: dict[str, list[tuple[float, float]]] = {}
    streams: set[int] = set()
    pids: set[int] = set()
    for c in copies:
        if c.end_wall_s < window_lo_s or c.start_wall_s > window_hi_s:
            continue
        k: str = c.host_kind if c.host_kind in ("pageable", "pinned") else "other"
        e = by.get(k)
        if e is None:
            e = by[k] = _KindSum()
        e.count += 1
        e.bytes += c.bytes
        if c.direction == "h2d":
            e.h2d_bytes += c.bytes
        else:
            e.d2h_bytes += c.bytes
        e.copy_s += c.duration_s
        moved, took = _inside(c, gap_lo_s, gap_hi_s)
        e.in_gap_bytes += moved
        e.in_gap_copy_s += took
        e.streams.add(c.stream_id)
        spans.setdefault(k, []).append((c.start_wall_s, c.end_wall_s))
        streams.add(c.stream_id)
        pids.add(c.pid)
    kinds = {k: CopyKindEvidence(
        e.count, e.bytes, e.h2d_bytes, e.d2h_bytes, e.copy_s, sorted(e.streams),
        e.bytes / e.copy_s if e.copy_s > 0 else None,
        union_s(spans[k], window_lo_s, window_hi_s), union_s(spans[k], gap_lo_s, gap_hi_s),
        round(e.in_gap_bytes), e.in_gap_copy_s)
        for k, e in by.items()}
    # The gap's own copies name its memory where some ran in it (a copy is traced as it ends:
    # an open gap's running copy is not in yet, and the window's copies speak for it); a long
    # pageable copy before a gap a pinned one ran in made it "slow copies (pageable)", a
    # pageable witness and the pageable cause while its hint named the pinned copy.
    in_gap = sum(e.in_gap_s for e in kinds.values())
    time_of = {k: (e.in_gap_s if in_gap > 0 else e.busy_s) for k, e in kinds.items()}
    total = sum(time_of.values())
    dominant: str | None = None
    if kinds:
        best = max(time_of, key=time_of.__getitem__)
        share = time_of[best] / total if total > 0 else 1.0
        dominant = best if share >= DOMINANT_KIND_SHARE else "mixed"
    return CopiesEvidence(traced=True, memory_kind=dominant, memory_kind_source="copy trace",
                          window_start_s=window_lo_s, window_end_s=window_hi_s, by_kind=kinds,
                          streams=sorted(streams), pids=sorted(pids), gap_start_s=gap_lo_s)


def traced_pageable(copies: CopiesEvidence) -> bool:
    """Whether a gap's `copies` evidence says the copy trace saw its copies come from pageable
    memory (measured, not inferred): the BREAKDOWN witness that stands in for a second gap."""
    return copies.traced is True and copies.memory_kind == "pageable"


def inferred_memory_kind(kind: str, events: list[EventEvidence]) -> tuple[str | None, str]:
    """Without a copy trace: what the memory kind most likely was, and from what."""
    warnings = {e.warning for e in events}
    if "unpinned" in warnings:
        return "pageable", "log: is_pinned=false (no copy trace)"
    if warnings & POOL_FALLBACK_WARNINGS:
        return "pageable", "log: pinned pool fallback (no copy trace)"
    if kind == "pcie_starved":
        return "pageable", "inferred from rate: no copy trace"
    return None, "no copy trace"
