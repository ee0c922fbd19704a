"""Per-GPU state of the gap detector, and the small helpers its hot path uses.

Who uses it: `gapwatch.core.detector.GapDetector` only (and `gapwatch.offline.report`, which reads
`GpuTotals`). Split out of detector.py so that the state machine reads on its own; everything
here is plain data: the track is slotted because the per-sample path reads and writes it ~7 M
times in a 24 h report.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from gapwatch.core.evidence import GapEvidence

#: Phases of a track: before its first busy sample, in a busy run, in an idle stretch.
PRE, BUSY, IDLE = 0, 1, 2
#: Sampling interval assumed before two samples tell the real one.
DEFAULT_PERIOD_NS = 100_000_000


class Track:
    """Everything the detector knows about one GPU (slotted: the hot path reads/writes these)."""

    __slots__ = (
        "gpu", "link", "has_sm", "last_t", "expected_ns", "spacings", "n_seen",
        "phase", "peak", "lb_t", "lb_c0", "lb_level", "lb_off",
        "g_start_ns", "g_start_s", "g_last_t", "g_last_off", "g_low",
        "rx_sum", "rx_w", "tx_sum", "tx_w", "g_cover", "quiet_thr", "starved_thr",
        "k_quiet", "k_starved", "k_fast",
        "gap_id", "kind", "acc", "last_emit_t",
        "b_ids", "b_busy", "b_cover", "closed", "n_starved", "state",
        "cover_total", "busy_total", "cover_first_busy", "cover_last_busy",
        "first_busy_s", "last_busy_s", "last_wall", "recheck_ns", "lag_ns",
    )  # fmt: skip

    def __init__(self, gpu: int, link: float, has_sm: bool, n_buckets: int) -> None:
        self.gpu = gpu
        self.link = link
        self.has_sm = has_sm
        #: How far this GPU's SM/PCIe readings trail the moment they are read (GPM), set once
        #: per GPU so that every sample of a track is shifted alike (ordering is preserved).
        self.lag_ns: int | None = None
        self.last_t: int | None = None
        self.expected_ns = DEFAULT_PERIOD_NS
        self.spacings: deque[int] = deque(maxlen=15)
        self.n_seen = 0
        self.phase = PRE
        self.peak = 0.0
        self.lb_t = 0
        self.lb_c0 = 0
        self.lb_level = 0.0
        self.lb_off = 0.0
        self.g_start_ns = 0
        self.g_start_s = 0.0
        self.g_last_t = 0
        self.g_last_off = 0.0
        self.g_low = False
        self.rx_sum = 0.0
        self.rx_w = 0
        self.tx_sum = 0.0
        self.tx_w = 0
        self.g_cover = 0
        # Per-sample PCIe classes inside the idle stretch (ns in each), and their thresholds.
        self.quiet_thr = 0.0
        self.starved_thr = 0.0
        self.k_quiet = 0
        self.k_starved = 0
        self.k_fast = 0
        self.gap_id: int | None = None
        self.kind = "unknown"
        self.acc: GapEvidence | None = None
        self.last_emit_t = 0
        self.b_ids = [-1] * n_buckets
        self.b_busy = [0] * n_buckets
        self.b_cover = [0] * n_buckets
        #: Closed gaps still inside the window: (end_ns, start_ns, kind).
        self.closed: deque[tuple[int, int, str]] = deque()
        self.n_starved = 0
        self.state: str | None = None
        #: Data time at which the window alone (gaps sliding out, a long gap) may change the
        #: state; until then only a new event (a gap opening/closing, a phase change) can.
        self.recheck_ns = 0
        # Whole-run totals for the report (ns of data, ns busy; data time at the first busy
        # sample's start and at the last busy sample's end, to measure the active span).
        self.cover_total = 0
        self.busy_total = 0
        self.cover_first_busy: int | None = None
        self.cover_last_busy = 0
        self.first_busy_s: float | None = None
        self.last_busy_s: float | None = None
        self.last_wall = 0.0


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
    last_wall_s: float
    #: "low" when idleness was judged from utilization.gpu (no SM activity reading).
    confidence: str
    final_state: str | None


def median_int(values: deque[int]) -> int:
    """`int(statistics.median(values))` without its generality (called every 16 samples)."""
    sv = sorted(values)
    m = len(sv)
    h = m // 2
    return sv[h] if m % 2 else int((sv[h - 1] + sv[h]) / 2)


def valid(v: float | None) -> float | None:
    # NaN fails v == v; negative rates and percentages are not readings.
    if v is None or v != v or v < 0:
        return None
    return v
