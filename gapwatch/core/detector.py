"""GapDetector: finds GPU idle gaps as they happen, names their cause, tracks the chaining state.

Who calls it: `gapwatch.engine.session.Session` (live, simulated and replayed data alike) and
`gapwatch.offline.report` (which drives the same class over a recording). Pure: no I/O, no clocks,
no threads; one instance per session, fed from one thread (the Session's lock).

Per GPU, a small state machine over "data segments" (stretches without a hole):

    PRE --busy--> BUSY --idle--> IDLE --busy--> BUSY      (IDLE -> BUSY closes a gap if long enough)
     ^                                |
     +------------- hole -------------+  (a hole is never bridged: an open gap it cuts is held,
                                          ending at its last idle reading, and is a gap only if
                                          the GPU works again after the hole; idle after a hole
                                          in a run that has worked is a gap candidate at once;
                                          at the end of the data an open or held gap is idle
                                          after the last busy period: retracted; a sample
                                          without a reading is passed over, a run of them
                                          longer than a hole is one)

Edges are placed inside samples: a sample at t with interval d covers [t-d, t]. The last busy
sample before a gap is taken to be busy at its start for the share `level / peak` of its interval
(peak = highest level of that busy run), the first busy sample after a gap busy at its end for
the same share. With 100 ms GPM samples this puts edges within tens of ms, not a whole period.

The per-sample path is the hot loop of `gapwatch report` over 24 h x 8 GPUs x 10 Hz (~7 M
samples): plain attribute access on a slotted track, no allocation unless something happens,
the 30 s window kept as one-second buckets (no per-sample tuple), and the chaining state
re-evaluated cheaply (a busy sample with no gap in the window cannot change a CHAINED GPU).
See docs/detection.md for the definitions, defaults and the state rules.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Callable, Iterable
from typing import Final

from msgspec import UnsetType
from msgspec.structs import replace

from gapwatch.core.bounds import DEFAULT_PERIOD_NS
from gapwatch.core.config import DetectorConfig
from gapwatch.core.evidence import (
    EvidenceBuffer,
    GapEvidence,
    summarise_copies,
    traced_pageable,
)
from gapwatch.core.evidence_types import NO_COPIES, NO_HOST, EventEvidence, LinkDown
from gapwatch.core.explain import Evidence, GapFacts, explain
from gapwatch.core.models import (
    ChainState,
    Confidence,
    CopyRecord,
    Gap,
    GapKind,
    GpuInfo,
    GpuSample,
    HardwareEvent,
    HostSample,
    LinkState,
    LogEvent,
    ProcessMemory,
    ProverStatus,
    Record,
    StateChange,
)
from gapwatch.core.prover import NO_VIEW, Prover
from gapwatch.core.readings import (
    GPM_LIKE_SOURCES,
    activity_lag_ns,
    interval_belied,
    is_stale_gpm,
    reading,
    reports_sm,
)
from gapwatch.core.track import BUSY as _BUSY
from gapwatch.core.track import IDLE as _IDLE
from gapwatch.core.track import (
    NO_BUCKET,
    SPACINGS_KEPT,
    GpuTotals,
    HeldGap,
    IdlePiece,
    OpenAtEnd,
    Track,
    WindowGap,
    median_int,
)
from gapwatch.core.track import PRE as _PRE
from gapwatch.core.verdict import WindowNow, breakdown_entry_words, gaps_reason

_NS: Final = 1_000_000_000
_NEVER: Final = 1 << 62
#: `_level`'s answers for a sample that has no level: a stale GPM reading, or no reading.
_STALE_LEVEL: Final = -1.0
_NO_LEVEL: Final = -2.0
#: The reason of the NO_DATA that misses longer than a hole give (`GapDetector._no_reading`).
NO_READING_SINCE: Final = "no SM activity reading since; the GPU's samples go on without one"
#: The reasons of the NO_DATA of a GPU gone silent while the other inputs go on
#: (`GapDetector._judge_silence`): after its last reading, or after samples without one.
SILENT: Final = "no sample from this GPU since; the other inputs go on"
NO_READING_THEN_SILENT: Final = ("no SM activity reading since, then no sample from this GPU; "
                                 "the other inputs go on")
#: An open gap is re-published at most this often (data time), or when its kind changes.
UPDATE_EVERY_NS: Final = 500_000_000
#: A step of more than this between wall time and data time from one sample to the next is a
#: clock jump (an NTP step, a recording stitched together): treated as a hole. Far above the
#: jitter of reading the two clocks one after the other (microseconds; ms under load).
CLOCK_JUMP_S: Final = 1.0
#: How often (data time) the GPUs are checked for having gone silent while data goes on.
SILENCE_CHECK_NS: Final = 250_000_000
#: Gaps a GPU holds at most while it waits to work again after holes (`GapDetector._hold`):
#: each hole in one idle stretch cuts one. Past it the oldest is retracted (counted).
HELD_MAX: Final = 8
#: The detector's counters (`GapDetector.counters`), in the order a report lists them.
COUNTER_NAMES: Final = ("out_of_order", "stale_gpm", "no_data", "holes", "retracted",
                        "clock_jumps", "silent", "interval_belied")
#: With no host sample for this long (data time; at least 4 sampling periods), the GPUs' own
#: samples look for silent GPUs again (the host's readings failing tick after tick must not
#: hide a GPU that stops).
HOST_CLOCK_LOST_NS: Final = 1_000_000_000
#: GPU-Util is NVML's average over the driver's own last period (200 ms on the H200,
#: docs/sampling.md), reported up to a period late: an idle stretch's readings that end within
#: two periods of its start still hold the busy work before it (the H200 host-stall run's
#: gaps, by tenth of a second in: 70 %, 26 %, then 0 from 0.4 s; one gap read "25 %" of no
#: copy at all), and a gap's GPU-Util leaves them out (`Gap.gpu_util_pct`).
UTIL_AVERAGED_NS: Final = 400_000_000


class GapDetector:
    """Streaming gap detector implementing `gapwatch.engine.session.Detector`.

    Args:
        config: thresholds (see `DetectorConfig`).
        gpus: what is known of each GPU; the link capacity judges PCIe rates.
        period_s: the sampling period, a floor for the expected sample spacing (holes are
            spacings above `nodata_after_periods` x expected). None: learnt from the data.
        live: publish open gaps (and their updates and retractions). Off for offline reports,
            which only keep final versions: building ~2 open versions per gap with evidence and
            hint is most of the cost of a long report. States are identical either way.
        prover: the prover behind the work (`gapwatch.core.prover`: e.g. cuzk's), fed every
            log event and status snapshot and asked about each gap; None: no prover known.
    """

    def __init__(
        self, config: DetectorConfig, gpus: list[GpuInfo], period_s: float | None = None,
        live: bool = True, prover: Prover | None = None,
    ) -> None:
        self.config = config
        self._live = live
        self._infos = {g.index: g for g in gpus}
        self._tracks: dict[int, Track] = {}
        self._thr_sm = config.idle_sm_pct
        self._thr_util = config.idle_util_pct
        self._min_gap_ns = int(config.min_gap_ms * 1e6)
        self._window_ns = int(config.window_s * _NS)
        self._n_buckets = config.window_seconds
        self._nodata = config.nodata_after_periods
        self._period_floor_ns = int(period_s * _NS) if period_s else 0
        self._host_lost_ns = max(HOST_CLOCK_LOST_NS, 4 * self._period_floor_ns)
        self._ev = EvidenceBuffer(config.evidence_before_s, prover=prover)
        self._next_id = 1
        self._pending: list[Gap | StateChange] = []
        #: Wall time of each GPU's latest sample (in order): closed gaps listen for late
        #: evidence by their own GPU's time (`EvidenceBuffer.prune`).
        self._now_s: dict[int, float] = {}
        #: A sample or the end came since the last prune (`_prune`).
        self._prune_due = True
        #: Called with each gap id as it is assigned (ids count up in data order). The parallel
        #: report (`gapwatch.offline.report_parallel`) uses it to renumber its workers' gaps.
        self.on_gap_id: Callable[[int], None] | None = None
        #: Latest data time of the host's samples and the GPU clock's checks (ns, as recorded;
        #: `finish`).
        self._data_ns: int | None = None
        #: The clock that looks for silent GPUs (`_judge_silence`): the host's samples, which
        #: every GPU's data is judged against alike, while they come; before the first, in an
        #: input without them, or `HOST_CLOCK_LOST_NS` after the last, the GPUs' own samples.
        #: When each next looks (data time):
        self._host_check_ns = 0
        self._gpu_check_ns = 0
        #: The latest host sample's data time (ns), None before the first.
        self._host_last_ns: int | None = None
        #: Wall time of the latest host sample (None: none): the end of the data a report
        #: says a GPU stopped before, where the host's samples outlast every GPU's.
        self.last_host_wall_s: float | None = None
        #: Whether the end of the data fed is the recording's end (`_tell_end`): False for a
        #: window cut before it (`--until`), whose gaps cannot know what came after it.
        self.ends_recording = True
        #: Called at each silence check the GPUs' samples run that could judge a GPU (not the
        #: first sample's, not one after a hole in all the data): the parallel report (whose
        #: workers see only their GPUs' samples) reads such an input in one process, and gives
        #: up the split at once (the callback may raise).
        self.on_gpu_clock: Callable[[], None] | None = None
        #: Inputs skipped or noticed, by reason (out_of_order, stale_gpm, no_data, holes,
        #: clock_jumps, silent: a GPU with no samples while the other inputs went on).
        self.counters: dict[str, int] = dict.fromkeys(COUNTER_NAMES, 0)

    # -- inputs -------------------------------------------------------------------------------

    def feed(self, record: Record) -> list[Gap | StateChange]:
        """Take any record (the one entry live sessions and offline reports use); return the
        gap versions and state changes it caused. Records the detector has no use for (notices,
        recorded gaps and states) change nothing."""
        match record:
            case GpuSample():
                return self.feed_gpu(record)
            case HostSample():
                return self.feed_host(record)
            case LogEvent():
                return self.feed_log(record)
            case ProverStatus():
                return self.feed_prover(record)
            case CopyRecord():
                return self.feed_copy(record)
            case ProcessMemory():
                self._ev.add_procmem(record)
                self._ev.prover.feed_process(record)
            case LinkState():
                self._ev.add_link(record)
            case HardwareEvent():
                self._ev.add_hw(record)
        return []

    @property
    def prover(self) -> Prover:
        """The prover behind the work (`NoProver` when none was given)."""
        return self._ev.prover

    def feed_copy(self, copy: CopyRecord) -> list[Gap | StateChange]:
        """A copy from the copy trace: evidence for the gaps it overlaps. Copies arrive after
        they end (a flush period or more), so one may land in a gap already closed: that gap
        is re-published at once with it (and any late log events). A copy that reaches an open
        gap may make it a BREAKDOWN witness: the state is looked at again on the next sample."""
        return self.feed_copies((copy,))

    def feed_copies(self, copies: Iterable[CopyRecord]) -> list[Gap | StateChange]:
        """Copies that came together (a flush of the trace, a run of them in a recording), as
        `feed_copy` one by one, but a closed gap they reach is re-published once, after the
        last: a partition's tens of copies would re-publish its gap as many times."""
        late = False
        for copy in copies:
            if copy.gpu is not None:
                tr = self._tracks.get(copy.gpu)
                if tr is not None and tr.gap_id is not None:
                    tr.recheck_ns = 0
            late = self._ev.add_copy(copy) or late
        return self._late(late)

    def _late(self, reached_closed: bool) -> list[Gap | StateChange]:
        """What is pending, plus the closed gaps that late evidence just reached, re-published
        now (evidence that arrives on its own thread need not wait for the next sample)."""
        out = self._pending
        self._pending = []
        if reached_closed:
            for acc in self._ev.take_dirty_closed():
                self._republish(acc)
            out.extend(self._pending)
            self._pending = []
        return out

    def feed_host(self, sample: HostSample) -> list[Gap | StateChange]:
        """A host sample: evidence for gaps, and data time moving on (a GPU that stopped
        reporting while the host sampler goes on is NO_DATA)."""
        self._prune_due = True
        self._ev.add_host(sample)
        self._ev.prover.feed_host(sample)
        out: list[Gap | StateChange] = []
        # The host's own previous sample: a host sample after a hole in the host's readings
        # (the recorder stalled, lines were cut) shows no GPU silent (`_judge_silence`).
        now = sample.t_mono_ns
        since, self._host_last_ns = self._host_last_ns, now
        self.last_host_wall_s = sample.t_wall_s
        if self._data_ns is None or now > self._data_ns:
            self._data_ns = now
        # The host's samples are the clock while they come.
        self._gpu_check_ns = now + self._host_lost_ns
        if now >= self._host_check_ns:
            self._host_check_ns = now + SILENCE_CHECK_NS
            self._judge_silence(now, None, since, out)
        return out

    def feed_log(self, event: LogEvent) -> list[Gap | StateChange]:
        """A prover log event: evidence for the gaps around it. One that lands in a gap
        already closed (a line read late, a second log file behind the first) re-publishes
        that gap at once, as a late copy or snapshot does."""
        out = self._late(self._ev.add_log(event))
        self._prune()
        return out

    def feed_prover(self, status: ProverStatus) -> list[Gap | StateChange]:
        """A snapshot of the prover's own pipeline (e.g. cuzk's `/status`): evidence for the gaps
        around it. Polled on another thread, a snapshot can land in a gap already closed: that
        gap is re-published at once with it, as a late copy is."""
        out = self._late(self._ev.add_prover(status))
        self._prune()
        return out

    def _prune(self) -> None:
        """`EvidenceBuffer.prune` when it can have something to do: only a sample (which moves
        its GPU's time on, and may close gaps) or the end changes what it would let go, and
        events come in runs between samples (~9 in a row in a busy log)."""
        if self._prune_due:
            self._ev.prune(self._now_s)
            self._prune_due = False

    def feed_gpu(self, s: GpuSample) -> list[Gap | StateChange]:
        """One GPU sample, in named steps: place it in time, read its level (`_level`), find
        the interval it covers (`_covered_from`: a hole or clock jump ends the data segment),
        count it in the window, then the busy step (`_busy_sample`) or the idle step
        (`_idle_sample`), then the chaining state (`_update_state`).

        This is the hot path (~7 M calls in a 24 h report, most of a report's time): the steps
        are plain method calls with what they need passed in, and the state is re-evaluated
        only when something happened or the window says so. A busy sample of a CHAINED GPU
        with no gap in the window stops after the busy step."""
        self._prune_due = True
        tr = self._tracks.get(s.gpu)
        if tr is None:
            tr = self._new_track(s.gpu, s.sm_source)
        # A GPM reading describes activity that ended about `gpm_lag_ms` before it was read:
        # place it there, so that gap edges (and the log lines tied to them) are on the GPU's
        # real timeline. The recorded sample keeps the time it was taken.
        lag = tr.lag_ns
        t = s.t_mono_ns - lag
        last = tr.last_t
        if last is not None and t <= last:
            self.counters["out_of_order"] += 1
            return []
        miss = tr.last_miss_t  # a sample without a reading leaves `last_t` where it was
        if miss is not None and t <= miss:
            self.counters["out_of_order"] += 1
            return []
        out = self._take_pending()
        if s.t_mono_ns >= self._gpu_check_ns:
            self._gpu_clock(s.t_mono_ns, tr, out)
        n_out = len(out)
        wall = s.t_wall_s - lag / _NS
        self._now_s[s.gpu] = wall
        tr.samples += 1

        level, low = self._level(tr, s)
        if level < 0:
            return self._without_level(tr, t, wall, level, out)
        offset = wall - t / _NS
        covered_from = self._covered_from(tr, s, t, last, miss, offset, out)
        cover = t - covered_from

        # Counted in the window: its covered ns in its one-second bucket (a busy sample adds
        # its busy ns there too) and in the run's total.
        tr.last_t = t
        k = t // _NS
        if k != tr.cur_k:
            self._next_bucket(tr, k)
        tr.cur_cover_ns += cover
        tr.data_ns += cover
        tr.last_wall = wall

        phase = tr.phase
        idle = level < (self._thr_util if low else self._thr_sm)
        if idle:
            if self._idle_sample(tr, s, t, cover, low, offset, phase, out):
                return out
        elif self._busy_sample(tr, s, t, covered_from, cover, level, low, offset, wall, out):
            return out
        # Re-evaluate the state only when something happened or the window says so: in a
        # BREAKDOWN most samples are neither, and this keeps the per-sample cost flat.
        if len(out) != n_out or tr.phase != phase or t >= tr.recheck_ns or phase == _PRE:
            self._update_state(tr, t, wall, idle, out)
        return out

    # -- the steps of one GPU sample ----------------------------------------------------------

    def _take_pending(self) -> list[Gap | StateChange]:
        """The output list of this sample, starting with what was held back for it (gaps
        re-published by a late log event or copy)."""
        out = self._pending
        if out:
            self._pending = []
            return out
        return []

    def _level(self, tr: Track, s: GpuSample) -> tuple[float, bool]:
        """The sample's level and whether it is of low confidence: SM activity, or
        utilization.gpu on a GPU that never gave SM activity. `_STALE_LEVEL` for a stale GPM
        reading (counted), `_NO_LEVEL` when there is no reading at all. None, NaN (`>= 0`
        fails) and negatives are no readings (`readings.reading`, inline on this path)."""
        level = s.sm_active_pct
        if level is not None and level >= 0:
            tr.has_sm = True
            if level == 0.0 and s.sm_source in GPM_LIKE_SOURCES and \
                    is_stale_gpm(level, s.pcie_rx_bytes_per_s, s.pcie_tx_bytes_per_s,
                                 s.interval_ns):
                # No new data in this reading: skipping it must not open a gap (and does not
                # move the track's clock).
                self.counters["stale_gpm"] += 1
                return _STALE_LEVEL, False
            return level, False
        util = None if tr.has_sm else reading(s.gpu_util_pct)
        return (_NO_LEVEL, True) if util is None else (util, True)

    def _covered_from(self, tr: Track, s: GpuSample, t: int, last: int | None,
                      miss: int | None, offset: float, out: list[Gap | StateChange]) -> int:
        """The start of the interval the sample covers: `[t - interval, t]`, from the last
        reading on. A spacing far above the expected one, or a clock jump, is a hole
        (`_hole`); the recent spacings between samples teach the expected one, from the
        latest sample without a reading where one came since `last` (`miss`): the spacing
        across it taught twice the period where GPM failed every other tick, and a hole of
        three periods was then bridged; spacings between readings alone learnt nothing there,
        and a real change of period made every reading a hole."""
        prev_offset = tr.wall_offset_s
        tr.wall_offset_s = offset
        jump = 0.0
        if prev_offset is not None and not -CLOCK_JUMP_S <= offset - prev_offset <= CLOCK_JUMP_S:
            jump = self._clock_jump(offset - prev_offset)
        if last is None:
            return self._hole(tr, s, t, None, -1, jump, out)
        spacing = t - last  # > 0: out-of-order samples were dropped before
        step = spacing if miss is None or miss < last else t - miss
        n_seen = tr.n_seen
        if n_seen < SPACINGS_KEPT:
            tr.spacings.append(step)
        else:  # the ring is full: this one takes the oldest one's place
            tr.spacings[n_seen % SPACINGS_KEPT] = step
        n_seen = tr.n_seen = n_seen + 1
        if n_seen >= 5 and (n_seen <= 8 or n_seen % 16 == 0):
            # A robust median of recent spacings, so that one late tick does not teach it.
            tr.expected_ns = self._expected(median_int(tr.spacings))
        if jump or spacing > self._nodata * tr.expected_ns:
            return self._hole(tr, s, t, last, spacing, jump, out)
        d = s.interval_ns
        # `readings.interval_belied` (against the learnt spacing and the step: a stretch of lost
        # lines, or a tick after a late one, keeps its honest interval), its first test inline
        # on this per-sample path.
        if d is not None and 2 * d < step and interval_belied(d, tr.expected_ns, step):
            self.counters["interval_belied"] += 1
            d = None
        start = t - (d if d is not None and d > 0 else spacing)
        return last if start < last else start

    def _busy_sample(
        self, tr: Track, s: GpuSample, t: int, covered_from: int, cover: int, level: float,
        low: bool, offset: float, wall: float, out: list[Gap | StateChange],
    ) -> bool:
        """A busy sample: counted busy; it closes an idle stretch (a gap if long enough) or
        starts the run's first busy period; it becomes the run's last busy sample, its PCIe
        bytes the working span's (the link's floor under the payoff, `GpuTotals.link_floor_s`).
        True when nothing in the window can change the state (a CHAINED GPU with no gap in
        it)."""
        tr.cur_busy_ns += cover
        tr.busy_ns += cover
        tr.data_ns_at_last_busy = tr.data_ns
        phase = tr.phase
        if phase == _BUSY:
            if level > tr.busy_peak:
                tr.busy_peak = level
        else:
            self._busy_starts(tr, t, covered_from, cover, level, low, offset, phase, out)
        # Its bytes are the working span's (the idle samples' before it joined it in
        # `_busy_starts`). A rate that is None, NaN or negative is no reading (inline).
        rx = s.pcie_rx_bytes_per_s
        if rx is not None and rx >= 0:
            tr.span_rx_sum = (tr.span_rx_sum or 0.0) + rx * cover
            tr.cur_rx_read = True
        tx = s.pcie_tx_bytes_per_s
        if tx is not None and tx >= 0:
            tr.span_tx_sum = (tr.span_tx_sum or 0.0) + tx * cover
            tr.cur_tx_read = True
        tr.last_busy_t = t
        tr.last_busy_from = covered_from
        tr.last_busy_level = level
        tr.last_busy_wall_offset = offset
        tr.last_busy_s = wall
        return not tr.window_gaps and tr.state == "CHAINED"

    def _idle_sample(
        self, tr: Track, s: GpuSample, t: int, cover: int, low: bool, offset: float,
        phase: int, out: list[Gap | StateChange],
    ) -> bool:
        """An idle sample: it starts an idle stretch after a busy run, or adds to one (its
        PCIe class and rates); a stretch `min_gap_ms` long is a gap. True when the state
        cannot change (idle before the first busy period, on a GPU already IDLE)."""
        if phase == _PRE:
            if tr.data_ns_at_first_busy is None:
                # Idle before the run's first busy period: not a gap candidate. Its bytes are
                # in no working span, but in the window's seconds (the verdict's floor).
                self._bytes_before_work(tr, s, cover)
                return tr.state == "IDLE"
            # Idle after a hole (or a GPU's silence) in a run that has worked: busy came
            # before it, so it is a gap candidate from the first reading after the hole. Not
            # from the start of that reading's interval: how much of it the detector takes
            # as read depends on the spacing it expects (a recording's header period, a CSV's
            # estimate), and a gap's edges must not.
            self._resume_idle(tr, t, offset, low)
        elif phase == _BUSY:
            self._start_idle(tr, low)
        # Classified by its dominant PCIe direction, so that one fast 80 ms copy inside a
        # 1.5 s quiet wait is not averaged into a "trickle". A rate that is None, NaN or
        # negative is no reading (`readings.reading`, inline). Its bytes are the working
        # span's once the GPU is busy again (`_busy_starts`): idle after the last busy
        # sample is not in it.
        rate = -1.0
        rx = s.pcie_rx_bytes_per_s
        if rx is not None and rx >= 0:
            moved = rx * cover
            tr.rx_sum += moved
            tr.rx_weight_ns += cover
            tr.since_busy_rx_sum = (tr.since_busy_rx_sum or 0.0) + moved
            tr.cur_rx_read = True
            rate = rx
        tx = s.pcie_tx_bytes_per_s
        if tx is not None and tx >= 0:
            moved = tx * cover
            tr.tx_sum += moved
            tr.tx_weight_ns += cover
            tr.since_busy_tx_sum = (tr.since_busy_tx_sum or 0.0) + moved
            tr.cur_tx_read = True
            if tx > rate:
                rate = tx
        # GPU-Util beside idle SMs (a GPU judged by it alone says nothing here), from the
        # readings whose NVML average no longer holds the busy work before the stretch (one
        # begun after a hole has none before it).
        if not low and (t - tr.idle_start_ns >= UTIL_AVERAGED_NS or tr.stretch_after_hole):
            util = s.gpu_util_pct
            if util is not None and util >= 0:
                tr.util_sum += util * cover
                tr.util_weight_ns += cover
        if rate >= 0:
            if rate < tr.quiet_below:
                tr.quiet_ns += cover
            elif rate < tr.starved_below:
                tr.starved_ns += cover
            else:
                tr.fast_ns += cover
        if low:
            tr.idle_low_confidence = True
        tr.idle_last_t = t
        tr.idle_last_wall_offset = offset
        if t - tr.idle_start_ns >= self._min_gap_ns:
            self._gap_long_enough(tr, t, out)
        if tr.held:
            tr.recheck_ns = 0  # the stretch's kind sums its pieces: this sample may change it
        return False

    # -- the rare steps of one GPU sample -----------------------------------------------------

    def _without_level(self, tr: Track, t: int, wall: float, level: float,
                       out: list[Gap | StateChange]) -> list[Gap | StateChange]:
        """A sample with no level: a stale GPM reading is passed over (the next one carries
        its interval); so is one with no reading at all, counted and judged (`_no_reading`)."""
        if level == _NO_LEVEL:
            self._no_reading(tr, t, wall, out)
        return out

    def _no_reading(self, tr: Track, t: int, wall: float, out: list[Gap | StateChange]) -> None:
        """A sample with no usable reading (a GPU with SM activity missed one, or nothing at
        all), counted and passed over, as a stale GPM reading is: the track's clock stays at
        its last reading, and the next reading covers its own interval (NVML's next GPM
        reading, after a failed call, measures the interval since the last good one:
        `NvmlSource._read_gpm` keeps its start sample; a tick it does not cover is neither
        idle nor busy). NVML's GPM calls fail now and then, and each lone miss was a NO_DATA
        that ended a BREAKDOWN, entered again at the next reading (a page each), and cut a
        gap in two.

        Misses for longer than a hole (`nodata_after_periods` of the expected spacing, from
        the last reading while the samples kept coming) are no data from that reading on: the
        data segment ends (an open gap is held, never bridged: `_hold`), and the next
        reading's spacing is a hole (`_hole`). A miss after a hole in all of this GPU's
        samples, or a track's first samples, start a run of their own: the hole before it is
        judged by the next reading as if the miss were not there.

        A GPM GPU's first sample without a reading is not counted: no reading was due yet
        (NVML's first GPM sample only opens the first interval: `NvmlSource._read_gpm`; the
        header's `sm_source` says GPM, the unread sample itself names no source), and a count
        of 1 on every healthy recording read as a fault. Every later one is a miss, and so is
        the first of any other source's (a reading was due there)."""
        if tr.samples > 1 or not tr.first_opens_interval:
            self.counters["no_data"] += 1
        last = tr.last_t
        new_run = not _latest_is_miss(tr)  # a reading (or nothing) came before this sample
        prev = last if new_run else tr.last_miss_t  # this GPU's previous sample, read or not
        tr.last_miss_t, tr.last_miss_wall = t, wall
        allowed = self._nodata * tr.expected_ns
        if prev is None or t - prev > allowed:
            tr.miss_from, tr.miss_from_wall = t, wall
            if last is not None and t - last > self._window_ns and tr.state != "NO_DATA":
                # The data before and after have nothing to do with each other, as `_hole`
                # says of a reading after such a hole: the state does not carry across it.
                self._end_segment(tr, out)
                self._set_state(tr, "NO_DATA", last, tr.last_wall, out,
                                f"no data for {(t - last) / _NS:.1f} s")
            return
        if new_run:  # the reading just before starts the run
            tr.miss_from, tr.miss_from_wall = prev, tr.last_wall
        if tr.state != "NO_DATA" and t - tr.miss_from > allowed:
            self._end_segment(tr, out)
            self._set_state(tr, "NO_DATA", tr.miss_from, tr.miss_from_wall, out, NO_READING_SINCE)

    def _clock_jump(self, step_s: float) -> float:
        """Wall time stepped `step_s` against data time since this GPU's last sample (more than
        `CLOCK_JUMP_S`): counted; the caller treats it as a hole."""
        self.counters["clock_jumps"] += 1
        return step_s

    def _gpu_clock(self, now_ns: int, feeding: Track, out: list[Gap | StateChange]) -> None:
        """No host sample (yet, or for `HOST_CLOCK_LOST_NS`): a GPU's sample is the clock that
        looks for silent GPUs, every `SILENCE_CHECK_NS` of data time."""
        self._gpu_check_ns = now_ns + SILENCE_CHECK_NS
        if self._data_ns is None or now_ns > self._data_ns:
            self._data_ns = now_ns
        judged = self._judge_silence(now_ns, feeding, None, out)
        if judged and self.on_gpu_clock is not None and (
                feeding.last_t is not None or len(self._tracks) > 1):
            self.on_gpu_clock()

    def _judge_silence(self, now_ns: int, feeding: Track | None, host_since_ns: int | None,
                       out: list[Gap | StateChange]) -> bool:
        """Data time moved on to `now_ns` (a sample of the host, or of a GPU while there are
        none of the host): every GPU with no sample (read or not) for more than
        `nodata_after_periods` of its spacing is NO_DATA from its last reading on (its first
        sample where it gave none), said with a reason (its open gap, idle before the silence,
        is held: `_hold`).

        Only an input that was not silent itself shows that the others went on without a GPU:
        after a hole in all the data (the recorder stalled, lines were cut) each GPU sees its
        own hole. So a host sample whose own previous one (`host_since_ns`) is further back
        than a GPU's allowed silence judges no GPU; `feeding`, the GPU whose sample this is,
        is not judged, and when it was silent too nobody is.

        Judged by the host's samples, a GPU's verdict depends on its own samples and the
        host's alone, whichever other GPUs' lines are in the input or in what order: the
        parallel report's workers (each with some GPUs' samples and every host sample) judge
        as one process does. False when `feeding` was silent too (nobody judged)."""
        fed = None if feeding is None else _last_sample_t(feeding)
        if fed is not None and feeding is not None and (
            now_ns - (fed + feeding.lag_ns) > self._nodata * feeding.expected_ns
        ):
            return False  # this GPU was silent too: a hole in all the data, each sees its own
        host_gap_ns = -1 if host_since_ns is None else now_ns - host_since_ns
        for tr in self._tracks.values():
            # Silence is judged from the GPU's latest sample, read or not (a run of samples
            # without a reading is `_no_reading`'s to judge), and said from its last reading.
            seen = _last_sample_t(tr)
            if tr is feeding or seen is None or tr.state == "NO_DATA":
                continue
            allowed_ns = self._nodata * tr.expected_ns
            if now_ns - (seen + tr.lag_ns) > allowed_ns and not host_gap_ns > allowed_ns:
                self.counters["silent"] += 1
                self._end_segment(tr, out)
                last = tr.last_t
                if last is None:  # samples came, never a reading
                    self._set_state(tr, "NO_DATA", tr.miss_from, tr.miss_from_wall, out,
                                    NO_READING_THEN_SILENT)
                else:
                    self._set_state(tr, "NO_DATA", last, tr.last_wall, out,
                                    SILENT if seen == last else NO_READING_THEN_SILENT)
        return True

    def _hole(
        self, tr: Track, s: GpuSample, t: int, last: int | None, spacing: int, jump_s: float,
        out: list[Gap | StateChange],
    ) -> int:
        """The first sample of a track (`last` None, `spacing` -1), or one after a hole (a
        spacing above `nodata_after_periods` x the expected one) or a clock jump: the data
        segment ends there. Returns the start of the interval the sample covers (its own
        interval, at most the expected spacing)."""
        expected = tr.expected_ns
        d = s.interval_ns
        if interval_belied(d, expected, spacing if spacing > 0 else None):
            self.counters["interval_belied"] += 1
            d = None
        if d is None or d <= 0:
            d = spacing if spacing > 0 else expected
        if spacing > 0:
            self.counters["holes"] += 1
        # A clock jump with no reading missed cuts the stretch all the same (wall times on
        # each side of it do not line up) but leaves no hole to speak of.
        self._end_segment(tr, out, missed=not jump_s or spacing > self._nodata * expected)
        if last is not None and (jump_s or spacing > self._window_ns):
            # The data before and after have nothing to do with each other (the clock
            # jumped, or the hole outlasts the chaining window): the state held until the
            # last sample, then there was no data. A report's periods end there.
            why = (f"clock jumped {jump_s:+.1f} s" if jump_s
                   else f"no data for {spacing / _NS:.1f} s")
            self._set_state(tr, "NO_DATA", last, tr.last_wall, out, why)
        return t - (d if d < expected else expected)

    def _busy_starts(
        self, tr: Track, t: int, covered_from: int, cover: int, level: float, low: bool,
        offset: float, phase: int, out: list[Gap | StateChange],
    ) -> None:
        """A busy sample after idle (it closes the stretch: a gap if long enough) or the first
        busy sample of the data segment (the run's working span starts). The gaps that holes
        cut before it are gaps now (`_publish_held`), published first (they are older)."""
        pieces = self._publish_held(tr, t, out) if tr.held else []
        self._span_bytes_since_busy(tr)
        if phase == _IDLE:
            closed = self._close(tr, t, cover, level, offset, low, out)
            if closed is not None:
                pieces.append(closed)
            elif pieces:
                # The idle since the last hole, too short to be a gap of its own, is still
                # part of the stretch the held gaps were: it counted in its kind and idle
                # while the stretch went on (`_current_kind`), and so it does in the window.
                pieces.append(IdlePiece(tr.idle_start_ns, tr.idle_last_t, tr.quiet_ns,
                                        tr.starved_ns, tr.fast_ns, False))
        elif tr.data_ns_at_first_busy is None:
            tr.data_ns_at_first_busy = tr.data_ns - cover
            tr.first_busy_s = covered_from / _NS + offset
        if pieces:
            self._window_add(tr, pieces)
        tr.phase = _BUSY
        tr.busy_peak = level
        tr.stretch_after_hole = False  # busy ends the idle stretch, whatever holes cut it

    @staticmethod
    def _bytes_before_work(tr: Track, s: GpuSample, cover: int) -> None:
        """An idle sample before the run's first busy one: its PCIe bytes count in the window's
        seconds (`Track.byte_sums`), not in the working span. A rate that is None, NaN or
        negative is no reading."""
        rx = s.pcie_rx_bytes_per_s
        if rx is not None and rx >= 0:
            tr.before_work_rx_sum = (tr.before_work_rx_sum or 0.0) + rx * cover
            tr.cur_rx_read = True
        tx = s.pcie_tx_bytes_per_s
        if tx is not None and tx >= 0:
            tr.before_work_tx_sum = (tr.before_work_tx_sum or 0.0) + tx * cover
            tr.cur_tx_read = True

    @staticmethod
    def _span_bytes_since_busy(tr: Track) -> None:
        """Busy again: the idle samples' PCIe bytes since the last busy sample (over holes too)
        are the working span's now, as their time is (`data_ns_at_last_busy`)."""
        rx, tx = tr.since_busy_rx_sum, tr.since_busy_tx_sum
        if rx is not None:
            tr.span_rx_sum = (tr.span_rx_sum or 0.0) + rx
            tr.since_busy_rx_sum = None
        if tx is not None:
            tr.span_tx_sum = (tr.span_tx_sum or 0.0) + tx
            tr.since_busy_tx_sum = None

    def _start_idle(self, tr: Track, low: bool) -> None:
        """Busy -> idle: the stretch starts inside the last busy sample, at the share of it that
        its level says was busy."""
        f = tr.last_busy_level / tr.busy_peak if tr.busy_peak > 0 else 1.0
        span = tr.last_busy_t - tr.last_busy_from
        start = tr.last_busy_from + int(span * (f if f < 1.0 else 1.0))
        self._begin_stretch(tr, start, tr.last_busy_wall_offset, low)
        tr.idle_edge_busy_ns = tr.last_busy_t - start
        self._window_edge_idle(tr, tr.last_busy_t, tr.idle_edge_busy_ns)

    def _resume_idle(self, tr: Track, start: int, offset: float, low: bool) -> None:
        """The first idle sample after a hole in a run that has worked: the stretch starts at
        it (`start`, its data time), which the gaps held over the hole note as the hole's
        end."""
        for held in tr.held:
            if held.resumed_ns is None:
                held.resumed_ns = start
        tr.stretch_after_hole = True  # the same stretch as the held gaps', if any
        self._begin_stretch(tr, start, offset, low)

    def _begin_stretch(self, tr: Track, start: int, offset: float, low: bool) -> None:
        """An idle stretch starts at data time `start` (wall offset `offset`): its sums empty."""
        tr.phase = _IDLE
        tr.idle_start_ns = start
        tr.idle_start_s = start / _NS + offset
        tr.idle_low_confidence = low
        tr.rx_sum = tr.tx_sum = tr.util_sum = 0.0
        tr.rx_weight_ns = tr.tx_weight_ns = tr.util_weight_ns = tr.idle_edge_busy_ns = 0
        tr.quiet_ns = tr.starved_ns = tr.fast_ns = 0

    def finish(self) -> list[Gap | StateChange]:
        """End of data: a GPU whose data stopped while the others went on is NO_DATA; the
        prover is told the data ended, and a closed gap that can now say what was never seen
        again is published again (`_tell_end`); an open
        gap is idle after the last busy period, so it is retracted, and so are the gaps held over
        holes that no busy sample followed (live, each was retracted at its hole already)."""
        self._prune_due = True
        out: list[Gap | StateChange] = self._pending
        self._pending = []
        end = self._end_of_data()
        if end is not None:
            self._judge_silence(end, None, None, out)
        self._tell_end(out)
        for tr in self._tracks.values():
            if tr.phase == _IDLE and tr.gap_id is not None:
                tr.open_at_end = OpenAtEnd(tr.kind, tr.idle_start_s,
                                           (tr.idle_last_t - tr.idle_start_ns) / _NS)
                self._retract_open(tr, out)
                t = tr.last_t or 0
                self._set_state(
                    tr, "IDLE", t, t / _NS + tr.idle_last_wall_offset, out,
                    "end of data: idle after the last busy period (its open gap retracted)",
                )
                tr.phase = _PRE
                tr.busy_peak = 0.0
            # Cut by a hole and never followed by busy: idle after the last busy period too
            # (live, each was retracted at its hole already).
            self.counters["retracted"] += len(tr.held)
            tr.held.clear()
        return out

    def _tell_end(self, out: list[Gap | StateChange]) -> None:
        """Tell the prover when the data ended (the host's last sample, read by every report
        worker alike, else the latest GPU sample), then explain again each closed gap still
        open to late evidence: one whose partitions stayed queued for the GPU to the end says
        so now (`ProverGapFacts.queued_at_end`), and is published again. Only those: the
        others keep the words they had when they closed, as every earlier gap does. Not for
        a window cut before the recording's end (`ends_recording`)."""
        if not self.ends_recording:
            return
        end_s = self.last_host_wall_s
        if end_s is None:
            walls = [w for tr in self._tracks.values()
                     if (w := _last_sample_wall(tr)) is not None]
            end_s = max(walls, default=None)
        if end_s is None:
            return
        self._ev.prover.end(end_s)
        for acc in self._ev.closed_listening():
            old = acc.published
            if old is None or not acc.prover.has_evidence() or _queued_at_end(old):
                continue
            new = self._rebuilt(acc, old)
            if _queued_at_end(new):
                acc.published = new
                out.append(new)

    def _end_of_data(self) -> int | None:
        """The data time the GPUs' silence is judged at, at the end: the host's last sample
        while the host's samples were the clock to the end, as they were mid-run (a GPU's
        samples past it, within `_host_lost_ns`, judge no other GPU: a split report's worker,
        which reads every host sample but only its own GPUs', judges alike); else the latest
        sample of any input (GPU samples only move the data time at silence checks)."""
        seen = [_last_sample_t(tr) for tr in self._tracks.values()]
        ends = [t + tr.lag_ns for t, tr in zip(seen, self._tracks.values(), strict=True)
                if t is not None]
        host = self._host_last_ns
        if host is not None and (not ends or max(ends) - host < self._host_lost_ns):
            return host
        if host is not None and self.on_gpu_clock is not None:
            # The GPUs' samples time the end (the host's stopped well before): a split
            # report's worker sees only its own GPUs' (mid-run this is `_gpu_clock`'s call).
            self.on_gpu_clock()
        if self._data_ns is not None:
            ends.append(self._data_ns)
        return max(ends) if ends else None

    def revisable_gap_ids(self) -> set[int]:
        """Ids of the closed gaps that may still be published again: late evidence can reach
        them (`EvidenceBuffer.listening_gap_ids`), or a version of them waits to be returned.
        The last version of every other closed gap is final (an offline report lets it go)."""
        ids = self._ev.listening_gap_ids()
        ids.update(x.gap_id for x in self._pending if isinstance(x, Gap))
        return ids

    def totals(self) -> list[GpuTotals]:
        """Whole-run figures per GPU, in GPU order."""
        out = []
        for gpu in sorted(self._tracks):
            tr = self._tracks[gpu]
            first = tr.data_ns_at_first_busy
            active = (tr.data_ns_at_last_busy - first) if first is not None else 0
            out.append(GpuTotals(
                gpu=gpu, link_bytes_per_s=tr.link, data_s=tr.data_ns / _NS,
                busy_s=tr.busy_ns / _NS, active_s=active / _NS,
                first_busy_s=tr.first_busy_s, last_busy_s=tr.last_busy_s,
                last_wall_s=tr.last_wall, confidence="high" if tr.has_sm else "low",
                final_state=tr.state, last_t_ns=tr.last_t, samples=tr.samples,
                last_sample_wall_s=_last_sample_wall(tr),
                silent_after_s=self._nodata * tr.expected_ns / _NS,
                open_at_end=tr.open_at_end,
                # Bytes/s x ns summed: / 1e9 is bytes. None where no reading fell in the span.
                pcie_rx_bytes=None if tr.span_rx_sum is None else tr.span_rx_sum / _NS,
                pcie_tx_bytes=None if tr.span_tx_sum is None else tr.span_tx_sum / _NS,
            ))  # fmt: skip
        return out

    # -- gaps ---------------------------------------------------------------------------------

    def _gap_long_enough(self, tr: Track, t: int, out: list[Gap | StateChange]) -> None:
        """An idle sample of a stretch already `min_gap_ms` long: open the gap, or re-publish
        it when its kind changed or `UPDATE_EVERY_NS` passed (live only)."""
        kind = self._kind(tr)
        if tr.gap_id is None:
            self._open_gap(tr)
        elif kind == tr.kind and t - tr.last_publish_t < UPDATE_EVERY_NS:
            return
        tr.kind = kind
        tr.last_publish_t = t
        tr.recheck_ns = 0  # the state may change on this very sample (BREAKDOWN on opening)
        if self._live:
            out.append(self._gap(tr, None, None, t))

    def _close(
        self, tr: Track, t: int, cover: int, level: float, offset: float, low: bool,
        out: list[Gap | StateChange],
    ) -> IdlePiece | None:
        """Idle -> busy: place the end edge inside this sample; publish if long enough (the
        gap, as a piece of its idle stretch for the chaining window; None: not a gap)."""
        ref = tr.busy_peak if tr.busy_peak > level else level
        end = t - int(cover * (level / ref if ref > 0 else 1.0))
        if end < tr.idle_last_t:
            end = tr.idle_last_t
        # The busy samples around the idle stretch were counted busy whole; the edges say
        # which part of them was idle: the start edge's share of the last busy sample, and
        # this sample's share before the end edge. Not the stretch less what its idle samples
        # covered: time no sample covered (a passed-over miss, a stale GPM reading, a late
        # tick) is neither idle nor busy, and taking it off the busy total made it negative.
        end_idle_ns = end - (t - cover) if end > t - cover else 0
        partial = tr.idle_edge_busy_ns + end_idle_ns
        if partial > 0:
            tr.busy_ns -= partial
        # The window took the start edge's share back when the edge was placed (`_start_idle`).
        self._window_edge_idle(tr, t, end_idle_ns)
        if end - tr.idle_start_ns < self._min_gap_ns:
            return None
        if low:
            tr.idle_low_confidence = True
        tr.kind = self._kind(tr)
        if tr.gap_id is None:
            self._open_gap(tr)
        end_s = end / _NS + offset
        gap = self._gap(tr, end, end_s, end)
        out.append(gap)
        if tr.evidence is not None:
            tr.evidence.published = gap
            self._ev.close_gap(tr.evidence, end_s)
        tr.gap_id = None
        tr.evidence = None
        return IdlePiece(tr.idle_start_ns, end, tr.quiet_ns, tr.starved_ns, tr.fast_ns,
                         traced_pageable(gap.copies))

    def _open_gap(self, tr: Track) -> None:
        """The idle stretch just became a gap: give it the next id and start its evidence."""
        gid = tr.gap_id = self._next_id
        self._next_id += 1
        # Its idle stretch began at the last busy reading, before this gap where holes cut
        # it: a prover's restart anywhere in it is this gap's too (`Prover.open_gap`).
        tr.evidence = self._ev.open_gap(tr.gpu, tr.idle_start_s, tr.last_busy_s)
        if self.on_gap_id is not None:
            self.on_gap_id(gid)

    def _end_segment(self, tr: Track, out: list[Gap | StateChange], missed: bool = True) -> None:
        """A hole in the data (or a GPU gone silent, samples without a reading for longer than
        a hole, a clock jump: `missed` False where no reading was missed) ends the data
        segment: an open gap is held until the GPU works again (`_hold`)."""
        if tr.phase == _IDLE and tr.gap_id is not None:
            self._hold(tr, out, missed)
        tr.phase = _PRE
        tr.busy_peak = 0.0

    def _retract_open(self, tr: Track, out: list[Gap | StateChange]) -> None:
        """The end of data: the open gap was idle after the last busy period, not a gap."""
        if self._live:
            last = tr.idle_last_t
            gap = self._gap(tr, last, last / _NS + tr.idle_last_wall_offset, last)
            out.append(_retract(gap))
        self.counters["retracted"] += 1
        if tr.evidence is not None:
            self._ev.drop_gap(tr.evidence)
        tr.gap_id = None
        tr.evidence = None

    def _hold(self, tr: Track, out: list[Gap | StateChange], missed: bool = True) -> None:
        """A hole cut the open gap: it ends at its last idle reading, and it is a gap only if
        the GPU works again after the hole (busy bounds it on both sides then, whatever the
        hole held). Held until then (`Track.held`): built now from what was read up to the
        hole, its evidence closed there. Live it is retracted meanwhile (consumers keep the
        latest version: the closed one, if it comes, counts as any closing gap)."""
        last = tr.idle_last_t
        end_s = last / _NS + tr.idle_last_wall_offset
        gap = self._gap(tr, last, end_s, last)
        if self._live:
            out.append(_retract(gap))
        acc = tr.evidence
        if acc is not None:
            self._ev.close_gap(acc, end_s)
        held = tr.held
        if len(held) >= HELD_MAX:
            held.pop(0)
            self.counters["retracted"] += 1
        held.append(HeldGap(gap, acc, tr.idle_edge_busy_ns, missed=missed,
                            classes_ns=(tr.quiet_ns, tr.starved_ns, tr.fast_ns)))
        tr.gap_id = None
        tr.evidence = None

    def _publish_held(self, tr: Track, t: int, out: list[Gap | StateChange]) -> list[IdlePiece]:
        """The GPU works again after holes (at data time `t`): the gaps they cut are gaps
        (oldest first), each with the hole after it (`hole_after_s`, from its last idle
        reading to the first reading after the hole) and the evidence that reached it since;
        counted as `_close` counts a gap (its start edge's idle part taken back from the busy
        total). Returned as pieces of their idle stretch, for the chaining window."""
        pieces = []
        for held in tr.held:
            old = held.gap
            end = old.end_mono_ns if old.end_mono_ns is not None else old.start_mono_ns
            resumed = held.resumed_ns if held.resumed_ns is not None else t
            if held.missed:
                # `resumed_ns` is set only by an idle reading after the hole (`_resume_idle`):
                # without one, the first reading after it is this busy one.
                old = replace(old, hole_after_s=max(0, resumed - end) / _NS,
                              read_after_hole="idle" if held.resumed_ns is not None else "busy")
            acc = held.evidence
            gap = self._rebuilt(acc, old) if acc is not None else old
            if acc is not None:
                acc.published = gap
            out.append(gap)
            tr.busy_ns -= held.partial_busy_ns
            pieces.append(IdlePiece(old.start_mono_ns, end, *held.classes_ns,
                                    traced_pageable(gap.copies)))
        tr.held.clear()
        tr.recheck_ns = 0
        return pieces

    def _window_add(self, tr: Track, pieces: list[IdlePiece]) -> None:
        """A closed idle stretch into the chaining window: one gap there, whatever holes cut it
        into (so that one starved stall cut by a hole is not the two starved gaps BREAKDOWN
        takes), of the kind its pieces' PCIe classes give together (as one
        hole-free gap's do), ending with its last piece, its idle the pieces' (never the
        holes'), and a BREAKDOWN witness if it is starved and any piece's copies were pageable.
        Stretches end in time order, so the window stays in end order."""
        first, last = pieces[0], pieces[-1]
        if len(pieces) == 1:
            kind, spans = self._kind_of(first.quiet_ns, first.starved_ns, first.fast_ns), None
        else:
            kind = self._kind_of(sum(p.quiet_ns for p in pieces),
                                 sum(p.starved_ns for p in pieces),
                                 sum(p.fast_ns for p in pieces))
            spans = tuple((p.start_ns, p.end_ns) for p in pieces)
        tr.window_gaps.append(WindowGap(last.end_ns, first.start_ns, kind, spans))
        if kind == "pcie_starved":
            tr.window_starved += 1
            if any(p.pageable for p in pieces):
                insort(tr.pageable_ends, last.end_ns)

    def _current_kind(self, tr: Track) -> GapKind | None:
        """The kind of the idle stretch going on now, as the chaining window will count it
        (`_window_add`): the open gap's; with gaps held over holes, that of its pieces (the
        held ones and the idle since the last hole) together. None: no gap going on."""
        if not tr.held:
            return tr.kind if tr.gap_id is not None else None
        q = sum(h.classes_ns[0] for h in tr.held)
        st = sum(h.classes_ns[1] for h in tr.held)
        f = sum(h.classes_ns[2] for h in tr.held)
        if tr.phase == _IDLE:
            q, st, f = q + tr.quiet_ns, st + tr.starved_ns, f + tr.fast_ns
        return self._kind_of(q, st, f)

    @classmethod
    def _kind(cls, tr: Track) -> GapKind:
        """The open idle stretch's kind (`_kind_of` its PCIe classes)."""
        return cls._kind_of(tr.quiet_ns, tr.starved_ns, tr.fast_ns)

    @staticmethod
    def _kind_of(q: int, st: int, f: int) -> GapKind:
        """The PCIe class that covers most of the idle time, of its quiet, starved and fast ns
        (ties: starved, then transfer)."""
        if q == st == f == 0:
            return "unknown"
        if st >= f and st >= q:
            return "pcie_starved"
        if f >= q:
            return "transfer_bound"
        return "host_stall"

    def _gap(self, tr: Track, end_ns: int | None, end_s: float | None, now_ns: int) -> Gap:
        assert tr.gap_id is not None
        rx = tr.rx_sum / tr.rx_weight_ns if tr.rx_weight_ns else None
        tx = tr.tx_sum / tr.tx_weight_ns if tr.tx_weight_ns else None
        duration_s = ((end_ns if end_ns is not None else now_ns) - tr.idle_start_ns) / _NS
        confidence: Confidence = "low" if tr.idle_low_confidence else "high"
        acc = tr.evidence
        host = self._ev.host_evidence(acc) if acc is not None else NO_HOST
        # No events (every gap of a recording without logs): skip event_list's sorting.
        events = acc.event_list() if acc is not None and acc.events else []
        g_end_s = end_s if end_s is not None else tr.idle_start_s + duration_s
        # A prover that gathered nothing for the gap has nothing to say (the common offline
        # case: skipping it keeps a long report's per-gap cost as it was).
        view = acc.prover.view(end_s, tr.idle_start_s, tr.kind, g_end_s) if acc is not None \
            and acc.prover.has_evidence() else NO_VIEW
        copies = (self._ev.copies_dict(acc, tr.idle_start_s, g_end_s, tr.kind, events)
                  if acc is not None else NO_COPIES)
        link_down = self._link_down(tr.gpu)
        said = explain(
            GapFacts(tr.kind, duration_s, rx, tx, tr.link, confidence, end_ns is None,
                     tr.quiet_below, tr.idle_start_s - self.config.evidence_before_s),
            Evidence(host, events, copies, link_down, view,
                     self._ev.hardware_words(tr.gpu, tr.idle_start_s, g_end_s)))
        return Gap(
            gap_id=tr.gap_id, gpu=tr.gpu, kind=tr.kind,
            start_mono_ns=tr.idle_start_ns, start_s=tr.idle_start_s, end_mono_ns=end_ns,
            end_s=end_s,
            duration_s=duration_s, pcie_rx_bytes_per_s=rx, pcie_tx_bytes_per_s=tx,
            link_bytes_per_s=tr.link, confidence=confidence,
            hint=said.hint, host=host, log_events=events, copies=copies,
            link_current_bytes_per_s=link_down.bytes_per_s if link_down is not None else None,
            prover_cause=said.prover_cause, prover_states=said.prover_states,
            prover_evidence=said.prover_evidence, prover_facts=said.prover_facts,
            gpu_util_pct=(min(100.0, tr.util_sum / tr.util_weight_ns)
                          if tr.util_weight_ns and confidence == "high" else None),
        )  # fmt: skip

    def _link_down(self, gpu: int) -> LinkDown | None:
        """The GPU's link as last seen trained down under traffic, for the hint; or None."""
        link = self._ev.links_down.get(gpu)
        if link is None:
            return None
        return LinkDown(link.gen, link.width, link.max_gen, link.max_width, link.bytes_per_s)

    def _republish(self, acc: GapEvidence) -> None:
        """A late log event or copy reached a closed gap: publish it again with the richer
        evidence."""
        old = acc.published
        if old is None:
            return
        new = self._rebuilt(acc, old)
        acc.published = new
        self._pending.append(new)
        if old.kind == "pcie_starved" and old.end_mono_ns is not None \
                and traced_pageable(new.copies) and not traced_pageable(old.copies):
            # Its copies came late: it is a BREAKDOWN witness from now on, while in the window.
            tr = self._tracks.get(old.gpu)
            if tr is not None:
                insort(tr.pageable_ends, old.end_mono_ns)
                tr.recheck_ns = 0

    def _rebuilt(self, acc: GapEvidence, old: Gap) -> Gap:
        """The closed gap `old` explained again with the evidence `acc` holds now."""
        events = acc.event_list()
        end_s = old.end_s if old.end_s is not None else old.start_s + old.duration_s
        copies = self._ev.copies_dict(acc, old.start_s, end_s, old.kind, events)
        link_down = self._link_down(old.gpu)
        view = acc.prover.view(old.end_s, old.start_s, old.kind, end_s)
        link = self.config.link_or_default(old.link_bytes_per_s)
        said = explain(
            GapFacts(old.kind, old.duration_s, old.pcie_rx_bytes_per_s, old.pcie_tx_bytes_per_s,
                     link, old.confidence, False, self.config.quiet_below_link_frac * link,
                     old.start_s - self.config.evidence_before_s, old.hole_after_s,
                     old.read_after_hole),
            Evidence(old.host, events, copies, link_down, view,
                     self._ev.hardware_words(old.gpu, old.start_s, end_s)))
        return replace(_replace_evidence(old, said.hint, events), copies=copies,
                       prover_cause=said.prover_cause, prover_states=said.prover_states,
                       prover_evidence=said.prover_evidence, prover_facts=said.prover_facts)

    # -- chaining state -----------------------------------------------------------------------

    def _update_state(
        self, tr: Track, t: int, wall: float, idle: bool, out: list[Gap | StateChange]
    ) -> None:
        """The chaining state as of sample time `t`, in named steps: slide the window, then
        the BREAKDOWN rules, then the calmer states. Each step also moves `tr.recheck_ns`, the
        data time at which the window alone may change the state."""
        lo = self._slide_window(tr, t)
        broken = self._breakdown(tr, t, lo)
        if broken is not None:
            if tr.state != "BREAKDOWN":  # the words only when they are said (a state change)
                n, starved_s, witness = broken
                self._set_state(tr, "BREAKDOWN", t, wall, out,
                                breakdown_entry_words(n, starved_s, self.config, witness))
            return
        state, why = self._calm_state(tr, t, idle)
        self._set_state(tr, state, t, wall, out, why)

    def _slide_window(self, tr: Track, t: int) -> int:
        """Drop the gaps that ended before the window (which starts at the returned time) and
        set the next recheck: the oldest gap starts sliding out, or an idle stretch grows as
        long as the window."""
        lo = t - self._window_ns
        window = tr.window_gaps
        # Entries by index, not by name: this runs on most samples of a GPU with gaps.
        while window and window[0][0] < lo:
            if window.popleft()[2] == "pcie_starved":
                tr.window_starved -= 1
        recheck = window[0][0] + self._window_ns + 1 if window else _NEVER
        if tr.phase == _IDLE and tr.idle_start_ns + self._window_ns < recheck:
            recheck = tr.idle_start_ns + self._window_ns
        if tr.phase == _IDLE and tr.stretch_after_hole:
            # After a hole the stretch may have no busy time in the window long before it is
            # a window old: when the last busy sample's second leaves the window (`_calm_state`).
            gone = (tr.last_busy_t // _NS + self._n_buckets) * _NS
            if t < gone < recheck:
                recheck = gone
        tr.recheck_ns = recheck
        return lo

    def _breakdown(self, tr: Track, t: int, lo: int) -> tuple[int, float | None, bool] | None:
        """Why the GPU is in BREAKDOWN at `t` (window from `lo`), or None: enough pcie_starved
        gaps in the window (the open one counts), or enough of the window idle in them. The
        why is `verdict.breakdown_entry_words`' arguments (the starved gaps, their idle seconds
        for the idle rule, the pageable witness): the state is evaluated on most samples of a
        BREAKDOWN, its words are needed only when it is entered."""
        # `_current_kind`, its common case inline (most samples of a BREAKDOWN come here).
        open_starved = (self._current_kind(tr) if tr.held else tr.kind if tr.gap_id is not None
                        else None) == "pcie_starved"
        n = tr.window_starved + (1 if open_starved else 0)
        if not n:
            return None
        cfg = self.config
        if n >= cfg.breakdown_min_starved_gaps:
            return n, None, False
        if cfg.breakdown_pageable_witness and self._pageable_witnesses(tr, t, lo):
            return n, None, True
        starved_s = self._starved_idle_s(tr, t, lo, open_starved)
        return (n, starved_s, False) if starved_s is not None else None

    def _starved_idle_s(self, tr: Track, t: int, lo: int, open_starved: bool) -> float | None:
        """The idle-fraction rule: the seconds of the window idle in pcie_starved gaps (the
        open one counts) when they reach `breakdown_idle_frac` of it, else None. Sets when the
        answer can next change (`recheck_ns`): the oldest gap sliding out of the window, or
        the open gap reaching the threshold if it lasts."""
        cfg = self.config
        window = tr.window_gaps
        if window and window[0][1] + self._window_ns < tr.recheck_ns:
            tr.recheck_ns = window[0][1] + self._window_ns
        starved_ns = self._starved_ns(tr, t, lo, open_starved)
        threshold_ns = cfg.breakdown_idle_frac * self._window_ns
        if open_starved and t + threshold_ns - starved_ns < tr.recheck_ns:
            # The open gap meets the idle rule at this data time, if it lasts.
            tr.recheck_ns = int(t + threshold_ns - starved_ns)
        return starved_ns / _NS if starved_ns >= threshold_ns else None

    def _starved_ns(self, tr: Track, t: int, lo: int, now_starved: bool) -> int:
        """Idle ns since `lo` in pcie_starved gaps: the window's (each piece of a stretch that
        holes cut, never the holes) and, where `now_starved`, the stretch going on now (its
        pieces held over holes and the idle since the last one)."""
        total = 0
        for g_end, g_start, kind, spans in tr.window_gaps:
            if kind != "pcie_starved" or g_end < lo:
                continue
            if spans is None:
                total += g_end - (g_start if g_start > lo else lo)
                continue
            for start, end in spans:
                if end > lo:
                    total += end - (start if start > lo else lo)
        if now_starved:
            for held in tr.held:
                h_start, h_end = held.gap.start_mono_ns, held.gap.end_mono_ns
                if h_end is not None and h_end > lo:
                    total += h_end - (h_start if h_start > lo else lo)
            if tr.phase == _IDLE:
                total += t - (tr.idle_start_ns if tr.idle_start_ns > lo else lo)
        return total

    def _pageable_witnesses(self, tr: Track, t: int, lo: int) -> int:
        """The pcie_starved gaps in the window whose copies the copy trace saw come from
        pageable memory: closed ones (kept as their ends) and the open one (its copies so far,
        in `[start - evidence_before_s, now]`)."""
        ends = tr.pageable_ends
        while ends and ends[0] < lo:
            ends.pop(0)
        n = len(ends)
        if self._current_kind(tr) != "pcie_starved":
            return n
        acc = tr.evidence
        if tr.gap_id is not None and acc is not None and acc.copies:
            lo_s = tr.idle_start_s - self.config.evidence_before_s
            now_s = t / _NS + tr.idle_last_wall_offset
            if summarise_copies(acc.copies, lo_s, now_s, tr.idle_start_s,
                                now_s).memory_kind == "pageable":
                return n + 1
        # The stretch going on now is one gap: a piece held over a hole witnesses it too.
        for held in tr.held:
            h_acc, g = held.evidence, held.gap
            if h_acc is not None and h_acc.copies and g.end_s is not None and summarise_copies(
                    h_acc.copies, g.start_s - self.config.evidence_before_s, g.end_s,
                    g.start_s, g.end_s).memory_kind == "pageable":
                return n + 1
        return n

    def _calm_state(self, tr: Track, t: int, idle: bool) -> tuple[ChainState, str]:
        """The state of a GPU not in BREAKDOWN, and why: IDLE, GAPS or CHAINED."""
        cfg = self.config
        if idle and tr.phase == _PRE:
            # Idle with no busy period since the data (re)started: not gaps, just idle.
            return "IDLE", "idle, no busy period since the data started"
        if (
            # A gap candidate younger than the window has busy time in it by construction,
            # unless it began after a hole (its busy period may be long gone).
            idle
            and (t - tr.idle_start_ns >= self._window_ns or tr.stretch_after_hole)
            and self._window_busy(tr, t)[0] == 0
        ):
            return "IDLE", f"no busy sample in the last {cfg.window_s:g} s"
        kinds = self._window_kinds(tr)
        if kinds:
            return "GAPS", gaps_reason(kinds, cfg)
        return "CHAINED", "busy, no gaps in the window"

    def _window_kinds(self, tr: Track) -> dict[str, int]:
        """The gaps in the window by kind, each idle stretch once (`_window_add`), the one
        going on now included (open, or held over a hole: a gap the GPU waits in)."""
        kinds: dict[str, int] = {}
        lo = (tr.last_t or 0) - self._window_ns
        for end, _, kind, _ in tr.window_gaps:
            if end >= lo:  # (one slid out is pruned at the next state evaluation)
                kinds[kind] = kinds.get(kind, 0) + 1
        now = self._current_kind(tr)
        if now is not None:
            kinds[now] = kinds.get(now, 0) + 1
        return kinds

    def window_now(self, gpu: int) -> WindowNow | None:
        """The chaining window of `gpu` as of its latest sample: gaps in it by kind, the starved
        ones' idle time, its span, the busy share (None before any sample). What the verdict
        says; the session refreshes it in the store about once a second and on every gap close
        and state change (a state's reason is only what it was entered on)."""
        tr = self._tracks.get(gpu)
        if tr is None or tr.last_t is None:
            return None
        t = tr.last_t
        lo = t - self._window_ns
        kinds = self._window_kinds(tr)
        starved_ns = self._starved_ns(tr, t, lo, self._current_kind(tr) == "pcie_starved")
        open_kind = tr.kind if tr.gap_id is not None else None
        busy, cover = self._window_busy(tr, t)
        rx, tx = self._window_bytes(tr, t)
        return WindowNow(
            gpu=gpu, t_mono_ns=t, end_wall_s=tr.last_wall, window_s=self.config.window_s,
            gaps=kinds, starved_idle_s=starved_ns / _NS, open_kind=open_kind,
            busy_fraction=busy / cover if cover > 0 else None,
            # Bytes/s x ns summed: / 1e9 is bytes (the link's floor under the verdict's payoff).
            pcie_rx_bytes=None if rx is None else rx / _NS,
            pcie_tx_bytes=None if tx is None else tx / _NS, link_bytes_per_s=tr.link,
            # The window as far as the session has data (its first seconds hold less).
            data_s=min(self.config.window_s, tr.data_ns / _NS),
            pageable_gaps=self._pageable_witnesses(tr, t, lo) if kinds.get("pcie_starved")
            else 0,
        )

    def busy_fraction(self, gpu: int) -> float | None:
        """Busy share of the chaining window for `gpu` as of its latest sample (None before any
        reading). Cheap (one pass over ~30 one-second buckets): the session asks for it about
        once a second per GPU for the dashboard header and the exporter, which would otherwise
        only see the value frozen at the last state change."""
        tr = self._tracks.get(gpu)
        if tr is None or tr.last_t is None:
            return None
        busy, cover = self._window_busy(tr, tr.last_t)
        return busy / cover if cover > 0 else None

    def _next_bucket(self, tr: Track, k: int) -> None:
        """A sample in a new second `k`: the second counted so far goes into the window's
        lists, and `k`'s slot starts empty (its counts grow in `tr.cur_*` meanwhile)."""
        nb = self._n_buckets
        # The run's byte sums now (`Track.byte_sums`, inline and None as 0: this runs once a
        # second per GPU): what they grew by since the second began is its bytes (the sample
        # that starts `k` has not added its own yet).
        rx = ((tr.span_rx_sum or 0.0) + (tr.since_busy_rx_sum or 0.0)
              + (tr.before_work_rx_sum or 0.0))
        tx = ((tr.span_tx_sum or 0.0) + (tr.since_busy_tx_sum or 0.0)
              + (tr.before_work_tx_sum or 0.0))
        if tr.cur_k != NO_BUCKET:
            i = tr.cur_k % nb
            tr.bucket_busy_ns[i] = tr.cur_busy_ns
            tr.bucket_cover_ns[i] = tr.cur_cover_ns
            tr.bucket_rx_sum[i] = rx - tr.cur_rx_from
            tr.bucket_tx_sum[i] = tx - tr.cur_tx_from
            tr.bucket_rx_read[i] = tr.cur_rx_read
            tr.bucket_tx_read[i] = tr.cur_tx_read
        j = k % nb
        tr.bucket_ids[j] = k
        tr.bucket_busy_ns[j] = 0
        tr.bucket_cover_ns[j] = 0
        tr.bucket_rx_sum[j] = tr.bucket_tx_sum[j] = 0.0
        tr.bucket_rx_read[j] = tr.bucket_tx_read[j] = False
        tr.cur_k = k
        tr.cur_busy_ns = tr.cur_cover_ns = 0
        tr.cur_rx_from = rx
        tr.cur_tx_from = tx
        tr.cur_rx_read = tr.cur_tx_read = False

    def _window_bytes(self, tr: Track, t: int) -> tuple[float | None, float | None]:
        """PCIe bytes per direction in the window's seconds as of `t`, as time-weighted rate
        sums (bytes/s x ns): the lists' seconds (`_window_busy`'s), and what the run's sums
        grew by in the one being counted. None: a second of the window with data had no
        reading in that direction (`Track.bucket_rx_read`), so its bytes, and the window's,
        are not known: counted 0, a window past a sampler's last PCIe reading said its link
        needed nothing. Called by `window_now` (about once a second), never per sample."""
        k = t // _NS
        nb = self._n_buckets
        ids = tr.bucket_ids
        rx_now, tx_now = tr.byte_sums()
        rx = tx = 0.0
        rx_known = tx_known = True
        if k - tr.cur_k < nb:
            rx, tx = (rx_now or 0.0) - tr.cur_rx_from, (tx_now or 0.0) - tr.cur_tx_from
            if tr.cur_cover_ns:
                rx_known, tx_known = tr.cur_rx_read, tr.cur_tx_read
        cover = tr.bucket_cover_ns
        for i in range(nb):
            if k - ids[i] < nb:  # (the second being counted holds 0 there)
                rx += tr.bucket_rx_sum[i]
                tx += tr.bucket_tx_sum[i]
                if cover[i]:
                    rx_known = rx_known and tr.bucket_rx_read[i]
                    tx_known = tx_known and tr.bucket_tx_read[i]
        return (rx if rx_known and rx_now is not None else None,
                tx if tx_known and tx_now is not None else None)

    def _window_edge_idle(self, tr: Track, sample_end_ns: int, idle_ns: int) -> None:
        """A gap edge placed inside a busy sample (the one ending at `sample_end_ns`) says that
        `idle_ns` of it was idle: the window's busy count takes it back from the second that
        counted the sample busy whole (nothing once that second has left the window). The
        figures are those the run's total takes back when the stretch ends as a gap (`_close`,
        `_publish_held`; a stretch retracted keeps its start edge busy there), taken here as
        soon as each edge is placed, so that an open gap's start edge is not busy in the
        window while its idle counts there. Without it the window's busy share and its gaps'
        idle added up to as much as 105 % of the window (bench/window_busy_idle.py)."""
        if idle_ns <= 0:
            return
        k = sample_end_ns // _NS
        if k == tr.cur_k:
            tr.cur_busy_ns -= idle_ns
            return
        i = k % self._n_buckets
        if tr.bucket_ids[i] == k:
            tr.bucket_busy_ns[i] -= idle_ns

    def _window_busy(self, tr: Track, t: int) -> tuple[int, int]:
        """Busy and covered ns in the window's seconds as of `t`: the lists' seconds, and the
        one being counted (its slot in the lists holds zeros until the next second)."""
        k = t // _NS
        nb = self._n_buckets
        busy = cover = 0
        ids = tr.bucket_ids
        for i in range(nb):
            if k - ids[i] < nb:
                busy += tr.bucket_busy_ns[i]
                cover += tr.bucket_cover_ns[i]
        if k - tr.cur_k < nb:
            busy += tr.cur_busy_ns
            cover += tr.cur_cover_ns
        return busy, cover

    def _set_state(
        self, tr: Track, state: ChainState, t: int, wall: float, out: list[Gap | StateChange],
        reason: str,
    ) -> None:
        if tr.state == state:
            return
        tr.state = state
        busy, cover = self._window_busy(tr, t)
        out.append(StateChange(
            gpu=tr.gpu, t_mono_ns=t, t_wall_s=wall, state=state,
            busy_fraction=busy / cover if cover else None, reason=reason,
        ))  # fmt: skip

    def _expected(self, median_spacing_ns: int) -> int:
        """Expected spacing: the recent median, at least the sampling period; with a known
        period, at most 4 periods (stale-GPM merging makes 2-3), so holes cannot teach it."""
        floor = self._period_floor_ns
        if not floor:
            return median_spacing_ns
        return min(max(median_spacing_ns, floor), 4 * floor)

    def _new_track(self, gpu: int, sm_source: str | None) -> Track:
        """The track of a GPU's first sample; its GPM lag is set by that sample's source, once,
        so that every sample of a track is shifted alike (ordering is preserved)."""
        info = self._infos.get(gpu)
        link = self.config.link_or_default(info.link_bytes_per_s if info is not None else None)
        has_sm = info is not None and reports_sm(info.sm_source)
        tr = Track(gpu, link, has_sm, self._n_buckets)
        tr.first_opens_interval = info is not None and info.sm_source in GPM_LIKE_SOURCES
        tr.quiet_below = self.config.quiet_below_link_frac * tr.link
        tr.starved_below = self.config.starved_below_link_frac * tr.link
        tr.expected_ns = max(DEFAULT_PERIOD_NS if not self._period_floor_ns else 0,
                             self._period_floor_ns)
        tr.lag_ns = activity_lag_ns(sm_source, self.config)
        self._tracks[gpu] = tr
        return tr


def _latest_is_miss(tr: Track) -> bool:
    """Whether the track's latest sample came without a reading (after its last reading)."""
    miss, last = tr.last_miss_t, tr.last_t
    return miss is not None and (last is None or miss > last)


def _last_sample_t(tr: Track) -> int | None:
    """Data time of the track's latest sample, with a reading or not (`Track.last_t` is the
    latest reading's): whether the GPU's sampler went silent is judged from it."""
    return tr.last_miss_t if _latest_is_miss(tr) else tr.last_t


def _last_sample_wall(tr: Track) -> float | None:
    """Wall time of the track's latest sample, with a reading or not (None: no sample)."""
    if _latest_is_miss(tr):
        return tr.last_miss_wall
    return None if tr.last_t is None else tr.last_wall


def _queued_at_end(gap: Gap) -> bool:
    """The gap's prover says its queued partitions were never picked up before the data
    ended (`ProverGapFacts.queued_at_end`)."""
    facts = gap.prover_facts
    return not isinstance(facts, UnsetType) and facts.queued_at_end


def _retract(gap: Gap) -> Gap:
    return _replace_evidence(gap, gap.hint, gap.log_events, retracted=True)


def _replace_evidence(
    gap: Gap, hint: str, events: list[EventEvidence], retracted: bool = False
) -> Gap:
    return replace(gap, hint=hint, log_events=events, retracted=retracted or gap.retracted)
