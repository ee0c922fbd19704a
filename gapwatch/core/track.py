"""Per-GPU state of the gap detector: one `Track` per GPU, and the whole-run `GpuTotals`.

Who uses it: `gapwatch.core.detector.GapDetector` (which owns the tracks and the rules) and
`gapwatch.offline.report` (which reads `GpuTotals`). Plain data, no rules: the track is slotted
because the detector's per-sample steps read and write it ~7 M times in a 24 h, 8-GPU report.

Times are detector data time in ns (a sample's `t_mono_ns`, shifted by the GPM lag); "wall
offset" fields hold `wall seconds - data time in seconds` at a sample, so that an edge placed
inside a sample can be given a wall time too.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Final, NamedTuple

from gapwatch.core.bounds import DEFAULT_PERIOD_NS
from gapwatch.core.evidence import GapEvidence
from gapwatch.core.models import Gap, GapKind
from gapwatch.core.payoff import link_floor_s

#: `Track.cur_k` before the first sample: no second a sample can fall in.
NO_BUCKET: Final = -(1 << 62)
#: Recent sample spacings a track keeps for its median.
SPACINGS_KEPT: Final = 15

#: Phases of a track: before its first busy sample (of this data segment), in a busy run, in
#: an idle stretch (a gap candidate; a gap once it lasts `min_gap_ms`).
PRE: Final = 0
BUSY: Final = 1
IDLE: Final = 2


class Track:
    """Everything the detector knows about one GPU."""

    __slots__ = (
        "gpu", "link", "has_sm", "lag_ns", "last_t", "expected_ns", "spacings", "n_seen",
        "phase", "busy_peak", "last_busy_t", "last_busy_from", "last_busy_level",
        "last_busy_wall_offset",
        "idle_start_ns", "idle_start_s", "idle_last_t", "idle_last_wall_offset",
        "idle_low_confidence", "idle_edge_busy_ns", "rx_sum", "rx_weight_ns", "tx_sum",
        "util_sum", "util_weight_ns",
        "tx_weight_ns", "quiet_below", "starved_below", "quiet_ns", "starved_ns", "fast_ns",
        "gap_id", "kind", "evidence", "last_publish_t",
        "bucket_ids", "bucket_busy_ns", "bucket_cover_ns", "cur_k", "cur_busy_ns", "cur_cover_ns",
        "bucket_rx_sum", "bucket_tx_sum", "cur_rx_from", "cur_tx_from",
        "bucket_rx_read", "bucket_tx_read", "cur_rx_read", "cur_tx_read",
        "before_work_rx_sum", "before_work_tx_sum",
        "window_gaps", "window_starved", "stretch_after_hole",
        "pageable_ends",
        "state", "recheck_ns",
        "data_ns", "busy_ns", "data_ns_at_first_busy", "data_ns_at_last_busy",
        "span_rx_sum", "span_tx_sum", "since_busy_rx_sum", "since_busy_tx_sum",
        "first_busy_s", "last_busy_s", "last_wall", "wall_offset_s", "samples", "held",
        "last_miss_t", "last_miss_wall", "miss_from", "miss_from_wall", "first_opens_interval",
        "open_at_end",
    )  # fmt: skip

    def __init__(self, gpu: int, link: float, has_sm: bool, n_buckets: int) -> None:
        self.gpu = gpu
        #: Per-direction PCIe capacity (bytes/s) that rates are judged against.
        self.link = link
        #: True once this GPU gave an SM activity reading: from then on utilization.gpu is
        #: never used alone to call it idle.
        self.has_sm = has_sm
        #: Whether this GPU's first sample only opens the first interval of its readings (a
        #: GPM source, as its header says: NVML's first GPM sample has no reading by design):
        #: a first sample without a reading is then no miss (`GapDetector._no_reading`).
        self.first_opens_interval = False
        #: How far this GPU's SM/PCIe readings trail the moment they are read (GPM), set once
        #: per GPU so that every sample of a track is shifted alike (ordering is preserved).
        self.lag_ns = 0
        self.last_t: int | None = None
        # Sample spacing: the expected one (robust median of recent spacings), for hole tests.
        self.expected_ns = DEFAULT_PERIOD_NS
        #: The last `SPACINGS_KEPT` spacings, as a ring (spacing k at k % SPACINGS_KEPT).
        self.spacings: list[int] = []
        self.n_seen = 0
        self.phase = PRE
        # The busy run before the current idle stretch: its highest level, and its last sample
        # (end time, start of its covered interval, level, wall offset): the gap's start edge
        # is placed inside that sample.
        self.busy_peak = 0.0
        self.last_busy_t = 0
        self.last_busy_from = 0
        self.last_busy_level = 0.0
        self.last_busy_wall_offset = 0.0
        # The idle stretch (gap candidate): its start edge, its last idle sample, whether only
        # utilization.gpu judged it.
        self.idle_start_ns = 0
        self.idle_start_s = 0.0
        self.idle_last_t = 0
        self.idle_last_wall_offset = 0.0
        self.idle_low_confidence = False
        #: The share of the last busy sample after the stretch's start edge (counted busy
        #: whole; taken back from the run's busy total when the stretch ends, from the
        #: window's busy count at once: `GapDetector._window_edge_idle`); 0 for a stretch
        #: begun after a hole (`GapDetector._resume_idle`).
        self.idle_edge_busy_ns = 0
        # PCIe during the idle stretch: time-weighted rate sums, and ns of idle samples in each
        # PCIe class (below quiet_below: quiet; below starved_below: starved; above: fast).
        self.rx_sum = 0.0
        self.rx_weight_ns = 0
        self.tx_sum = 0.0
        self.tx_weight_ns = 0
        #: GPU-Util (nvidia-smi's figure) during the idle stretch, time-weighted, over its
        #: samples judged by SM activity: what nvidia-smi showed while the SMs sat idle.
        self.util_sum = 0.0
        self.util_weight_ns = 0
        self.quiet_below = 0.0
        self.starved_below = 0.0
        self.quiet_ns = 0
        self.starved_ns = 0
        self.fast_ns = 0
        # The gap once the stretch is long enough: id, kind, evidence, last publication.
        self.gap_id: int | None = None
        self.kind: GapKind = "unknown"
        self.evidence: GapEvidence | None = None
        self.last_publish_t = 0
        # The chaining window: one-second buckets of (busy ns, covered ns), closed idle
        # stretches still inside it (`WindowGap`), how many of those are pcie_starved.
        self.bucket_ids = [-1] * n_buckets
        self.bucket_busy_ns = [0] * n_buckets
        self.bucket_cover_ns = [0] * n_buckets
        #: The second being counted now (`t // 1 s`), kept out of the lists above until the
        #: next one starts (`GapDetector._next_bucket`): list writes once a second, not three
        #: per sample.
        self.cur_k = NO_BUCKET
        self.cur_busy_ns = 0
        self.cur_cover_ns = 0
        #: Each second's PCIe bytes per direction in the window, as time-weighted rate sums
        #: (bytes/s x covered ns), for the link's floor under the verdict's payoff
        #: (`WindowNow.link_floor_s`). Not summed per sample: a second's is what the run's
        #: running sums (`byte_sums`, None taken as 0 here: whether the second had a reading
        #: is `bucket_*_read`'s) grew by in it, taken when the next one starts; `cur_*_from`
        #: are those sums as the second being counted began.
        self.bucket_rx_sum = [0.0] * n_buckets
        self.bucket_tx_sum = [0.0] * n_buckets
        self.cur_rx_from = 0.0
        self.cur_tx_from = 0.0
        #: Whether each second had a reading of each direction (the second being counted
        #: now: `cur_*_read`): a second with data and none has bytes not known, never 0, and
        #: so has the window that holds it (`GapDetector._window_bytes`).
        self.bucket_rx_read = [False] * n_buckets
        self.bucket_tx_read = [False] * n_buckets
        self.cur_rx_read = False
        self.cur_tx_read = False
        self.window_gaps: deque[WindowGap] = deque()
        self.window_starved = 0
        #: The idle stretch going on now began after a hole (its busy may be long gone).
        self.stretch_after_hole = False
        #: End times (data ns, sorted) of the closed pcie_starved gaps in the window whose
        #: copies the copy trace saw come from pageable memory (the BREAKDOWN witness).
        self.pageable_ends: list[int] = []
        self.state: str | None = None
        #: The gap still open when the data ended, which `finish` retracted (None: none).
        self.open_at_end: OpenAtEnd | None = None
        #: Data time at which the window alone (gaps sliding out, a long gap) may change the
        #: state; until then only a new event (a gap opening/closing, a phase change) can.
        self.recheck_ns = 0
        # Whole-run totals for the report: ns of data, ns busy; data ns counted at the first
        # busy sample's start and at the last busy sample's end (the working span).
        self.data_ns = 0
        self.busy_ns = 0
        self.data_ns_at_first_busy: int | None = None
        self.data_ns_at_last_busy = 0
        # PCIe over the working span, for the link's floor under the payoff: time-weighted
        # rate sums (bytes/s x covered ns) of each direction, None while no reading came. The
        # span's, up to the last busy sample's end; and the idle samples' since it, which are
        # in the span only once the GPU is busy again (added to it then: `_busy_starts`), so
        # that a busy sample adds its own bytes and no more.
        self.span_rx_sum: float | None = None
        self.span_tx_sum: float | None = None
        self.since_busy_rx_sum: float | None = None
        self.since_busy_tx_sum: float | None = None
        # And the idle samples' before the run's first busy one, in no working span but in
        # the window's seconds (a transfer-bound run copies before it computes).
        self.before_work_rx_sum: float | None = None
        self.before_work_tx_sum: float | None = None
        self.first_busy_s: float | None = None
        self.last_busy_s: float | None = None
        self.last_wall = 0.0
        #: Wall time minus data time (s) at the last sample: a step in it is a clock jump.
        self.wall_offset_s: float | None = None
        #: Samples taken in time order (the report says what share was out of order).
        self.samples = 0
        #: The latest sample with no reading (`GapDetector._no_reading`; `last_t` stays at the
        #: latest reading), and where its run of such samples is judged from: the reading
        #: just before it, or its first sample where a hole or the track's start came before
        #: (data time; wall time beside it, for the NO_DATA said from there).
        self.last_miss_t: int | None = None
        self.last_miss_wall = 0.0
        self.miss_from = 0
        self.miss_from_wall = 0.0
        #: Gaps cut by a hole in the data, oldest first, waiting for this GPU's next busy
        #: sample (`GapDetector._hold`): published closed then, retracted if it never comes.
        self.held: list[HeldGap] = []

    def byte_sums(self) -> tuple[float | None, float | None]:
        """The run's PCIe bytes so far per direction, as time-weighted rate sums (bytes/s x
        ns): the working span's, the idle samples' since its last busy one and those before
        its first (each sample's once); None: no reading yet in that direction. Called by
        `GapDetector.window_now` (about once a second), never per sample: the once-a-second
        roll of the window's seconds (`GapDetector._next_bucket`) sums the same inline."""
        rx = (None if self.span_rx_sum is None and self.since_busy_rx_sum is None
              and self.before_work_rx_sum is None else (self.span_rx_sum or 0.0)
              + (self.since_busy_rx_sum or 0.0) + (self.before_work_rx_sum or 0.0))
        tx = (None if self.span_tx_sum is None and self.since_busy_tx_sum is None
              and self.before_work_tx_sum is None else (self.span_tx_sum or 0.0)
              + (self.since_busy_tx_sum or 0.0) + (self.before_work_tx_sum or 0.0))
        return rx, tx


class IdlePiece(NamedTuple):
    """A gap as a piece of its idle stretch, for the chaining window (`GapDetector._window_add`):
    holes can cut one stretch into several gaps, which the window counts as one."""

    start_ns: int
    end_ns: int
    #: Its idle ns by PCIe class (the stretch's kind sums its pieces').
    quiet_ns: int
    starved_ns: int
    fast_ns: int
    #: The copy trace saw its copies come from pageable memory (a BREAKDOWN witness).
    pageable: bool


class WindowGap(NamedTuple):
    """A closed idle stretch in the chaining window: one gap, or the gaps holes cut it into."""

    end_ns: int
    start_ns: int
    #: The kind of its pieces' PCIe classes together.
    kind: GapKind
    #: (start, end) of each piece where holes cut it (their idle, never the holes'); None:
    #: one gap, [start_ns, end_ns].
    spans: tuple[tuple[int, int], ...] | None


@dataclass(slots=True)
class HeldGap:
    """A gap that a hole in the data cut while it was open, waiting for the GPU to work again.

    Idle is a gap when busy periods bound it on both sides; a hole bounds nothing (the GPU may
    have worked in it or not). So the part read before the hole is a gap once the GPU is busy
    again after it, ending at its last idle reading: `gap` is that version, built at the hole
    from what was read up to it. The hole itself is never counted as idle."""

    #: The gap as it stood at the hole: closed at its last idle reading, not yet published.
    gap: Gap
    #: Its evidence, closed at the hole's start (late events in its window still reach it).
    evidence: GapEvidence | None
    #: Busy ns to take back from the run's busy total when it is published: the part of the
    #: busy sample before it that its start edge says was idle (as `_close` does).
    partial_busy_ns: int
    #: Data time (ns) of the GPU's first reading after the hole (the first with a level);
    #: None until then.
    resumed_ns: int | None = None
    #: Readings were missed after it (False: only the wall clock stepped, every reading was
    #: there): its `hole_after_s` is then None, there being no hole.
    missed: bool = True
    #: Its idle ns by PCIe class (quiet, starved, fast): the stretch's kind sums its pieces'.
    classes_ns: tuple[int, int, int] = (0, 0, 0)


@dataclass(frozen=True, slots=True)
class OpenAtEnd:
    """The gap still open when the data ended, as the detector had it then: retracted (idle
    after the last busy period is no gap), but the GPU's where the end cut the data while it
    went on (a window's end, a snapshot's: `gapwatch.offline.cut_end`)."""

    kind: GapKind
    start_s: float
    #: Its idle time up to the GPU's last idle reading.
    idle_s: float


@dataclass(frozen=True, slots=True)
class GpuTotals:
    """Whole-run figures of one GPU (for `gapwatch report`)."""

    gpu: int
    link_bytes_per_s: float
    #: Seconds with readings, and busy among them.
    data_s: float
    busy_s: float
    #: Seconds with readings from the first busy sample to the last one (the working span).
    active_s: float
    first_busy_s: float | None
    last_busy_s: float | None
    #: Wall time of the last reading (0.0 where none came: `last_t_ns` is then None).
    last_wall_s: float
    #: "low" when idleness was judged from utilization.gpu (no SM activity reading).
    confidence: str
    final_state: str | None
    #: Data time (ns, as the detector placed it) of the last reading: durations from the
    #: states' `t_mono_ns` to here are immune to wall-clock jumps. None: no reading came.
    last_t_ns: int | None = None
    #: Samples taken in time order (out-of-order ones are in the detector's counters).
    samples: int = 0
    #: Wall time of the latest sample, with a reading or without (None: no sample): where
    #: the GPU's data ended, which samples without a reading may outlast.
    last_sample_wall_s: float | None = None
    #: How long this GPU may go without a sample before it is silent (`nodata_after_periods`
    #: of the spacing it learnt), in seconds.
    silent_after_s: float = 0.0
    #: The gap still open when the data ended (retracted by the detector), None: none was.
    open_at_end: OpenAtEnd | None = None
    #: Bytes PCIe carried each way over the working span (host-to-device: RX; each sample's
    #: rate x the time it covers, where the rate is a reading); None: no reading in the span.
    pcie_rx_bytes: float | None = None
    pcie_tx_bytes: float | None = None

    @property
    def link_floor_s(self) -> float | None:
        """The shortest the working span could be, the time the link needs for its bytes
        (`core.payoff.link_floor_s`): the payoff's floor. None: no PCIe reading in it."""
        return link_floor_s(self.pcie_rx_bytes, self.pcie_tx_bytes, self.link_bytes_per_s)


def median_int(values: list[int]) -> int:
    """`int(statistics.median(values))` without its generality (called every 16 samples)."""
    sv = sorted(values)
    m = len(sv)
    h = m // 2
    return sv[h] if m % 2 else int((sv[h - 1] + sv[h]) / 2)
