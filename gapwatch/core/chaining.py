"""The chaining figure: the share of host-to-device copy time that ran while the SMs were busy.

A pipelined GPU workload keeps the GPU fed by overlapping one job's copies with another's
kernels. While that holds, nearly every H2D copy runs under busy SMs (an H200 chaining two
workers: 92 %); when copies come from pageable memory they crawl and the kernels wait for them
(the same box: 40 %). The figure says this before gaps pile up, as one number per GPU.

Two bases, said with the figure (`ChainingFigure.basis`):
- "copies": the copy trace's H2D copies (`CopyRecord`), each copy's time split over the GPU
  samples it overlaps, weighted by their SM activity (a 100 ms sample at 60 % SM activity
  counts 60 % of the copy time inside it as overlapped);
- "pcie": without a copy trace, the copy time is estimated from the samples whose PCIe RX
  shows data moving (above `DetectorConfig.quiet_below_link_frac` of the link), weighted the
  same: a sample between two others that moved data was copying throughout (a copy that
  outlasts a sample: pageable copies crawl for seconds) and counts whole; any other (a run's
  first or last, a lone one) counts its bytes at the link's speed, at most its period (no copy
  runs faster than the link). Every such sample counted whole said "4.8 s of copies" of the
  H200 chained run's 1.16 s (38 copies of ~30 ms, each in one or two 100 ms samples). The
  recording's peak sample rate is no copy rate there (20.9 GB/s, from copies of 55 GB/s that
  each filled a third of a sample: 3.1 s); the link's gives 1.04 s, and 29.8 s of the
  pageable run's 34.4 s (two workers' copies overlapping: 30.3 s of wall time).
Samples are placed `DetectorConfig.gpm_lag_ms` earlier where they come from GPM (its counters
trail the moment they are read), as the detector places gap edges. A sample without SM activity
(utilization.gpu only: it counts copies as busy) says nothing: no figure rather than a wrong one.

Sums are kept in `BUCKET_S` buckets of data time, so that the figure over the window (the
latest `window_s`) and the one over the window before it cost a few additions; bounded to two
windows live, every bucket offline (`window_s` None: the report's whole run and its worst
window).

The same readings, each over the same interval, give GPU-Util beside busy
(`gapwatch.core.util_figure`: what nvidia-smi shows over the stretch the busy share is of), kept
apart from the copy sums (`ChainingMeter.util_figure`).

Who calls it: the store (`gapwatch.engine.store`, fed every GPU sample and copy; the dashboard's
header and verdict, `/metrics` and summary.md read its figures from the snapshot) and the
offline detection loop (`gapwatch.offline.detect`, for the report). Prover-neutral.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from statistics import median
from typing import Final, Literal

from gapwatch.core.bounds import MAX_PERIOD_MS
from gapwatch.core.config import DetectorConfig
from gapwatch.core.models import CopyRecord, GpuInfo, GpuSample
from gapwatch.core.readings import SHORTEST_PERIOD_NS, busy_reading, interval_belied
from gapwatch.core.util_figure import UtilFigure, UtilSums

#: Bucket length of the sums (s of data time).
BUCKET_S: Final = 10.0
#: The live window the figure is taken over (s): two chaining windows of the detector's
#: default (30 s) hold enough copies to mean something and still follow a breakdown.
WINDOW_S: Final = 60.0
#: Samples kept per GPU to place copies against (s): a copy arrives after it ended (the copy
#: trace's flush, a second or two) and is placed then.
KEEP_SAMPLES_S: Final = 30.0
#: The most a GPU's first sample covers (no reading before it to bound it): the longest
#: sampling period.
FIRST_COVER_NS: Final = round(MAX_PERIOD_MS * 1_000_000)
#: Copies waiting for the samples that cover them, at most (per GPU).
MAX_PENDING: Final = 4096
#: Readings' intervals kept per GPU to learn the expected one (GPU-Util's hole rule).
_COVERS_KEPT: Final = 8
#: A drop from the window before to this one of at least this much is said as "a -> b".
DROP_SAID: Final = 0.15

#: Copy time below which the figure is no share (s): there were no copies to speak of, and a
#: share of them is noise (the H200 restart recording's 0.004 s of stray PCIe bytes, its GPU
#: idle through the restart, said "0 % of 0.0 s of copies"). Said in words in its place
#: (`ChainingFigure.has_copies`); `--json` and /metrics keep the numbers.
MIN_COPY_S: Final = 0.1
NO_COPIES: Final = "no copies to speak of"

Basis = Literal["copies", "pcie"]
BASIS_WORDS: Final[dict[str, str]] = {
    "copies": "from the copy trace", "pcie": "estimated from PCIe bytes and SM activity",
}


@dataclass(frozen=True, slots=True)
class ChainingFigure:
    """One GPU's chaining figure over a window: `share` (0..1) of `copy_s` seconds of H2D copy
    time ran while SMs were busy; `before` the same over the window before (None: not enough
    data then)."""

    gpu: int
    share: float
    copy_s: float
    basis: Basis
    window_s: float | None
    before: float | None = None

    def has_copies(self) -> bool:
        """Whether there were copies to speak of (`MIN_COPY_S`): only then is the share said."""
        return self.copy_s >= MIN_COPY_S

    def fell(self) -> bool:
        """Did it fall by `DROP_SAID` or more from the window before (to a share of copies to
        speak of: a fall to a share of nothing is none)?"""
        return (self.before is not None and self.has_copies()
                and self.before - self.share >= DROP_SAID)

    def words(self, compact: bool = False) -> str:
        """"chaining 93 % → 41 %" when it fell by `DROP_SAID` or more, else "chaining 92 %";
        `compact` ("chaining 93%→41%") for lines that wrap at spaces (the dashboard's);
        "chaining: no copies to speak of" below `MIN_COPY_S` of copy time."""
        if not self.has_copies():
            return f"chaining: {NO_COPIES}"
        pct = "%" if compact else " %"
        arrow = "→" if compact else " → "
        now = f"{self.share * 100:.0f}{pct}"
        if self.before is not None and self.fell():
            return f"chaining {self.before * 100:.0f}{pct}{arrow}{now}"
        return f"chaining {now}"

    def basis_words(self) -> str:
        return BASIS_WORDS[self.basis]


def chain_cell_share(f: ChainingFigure | None) -> str:
    """The figure in a dashboard cell's few columns (`0 chaining  87%`): "87%", "-" for no
    copies to speak of (`MIN_COPY_S`), "?" for no figure (no reading). The dashboard's header
    calls it."""
    if f is None:
        return "?"
    return f"{f.share * 100:.0f}%" if f.has_copies() else "-"


@dataclass(slots=True)
class _Bucket:
    copy_s: float = 0.0
    busy_s: float = 0.0
    pcie_s: float = 0.0
    pcie_busy_s: float = 0.0


@dataclass(slots=True)
class _Gpu:
    moving_bytes_per_s: float
    #: The link's speed each way (bytes/s): a sample's copy time is at least its bytes at it.
    link_bytes_per_s: float
    #: (start, end, SM busy share 0..1) of recent samples with SM activity, in time order.
    samples: deque[tuple[float, float, float]] = field(default_factory=deque)
    pending: deque[tuple[float, float]] = field(default_factory=deque)
    buckets: dict[int, _Bucket] = field(default_factory=dict)
    saw_copies: bool = False
    latest_s: float = 0.0
    #: The bucket samples fall in now (most samples land in the same one as the last).
    cur_k: int = -1
    cur: _Bucket | None = None
    #: The latest sample's end (None: none yet), and how many samples in a row up to it moved
    #: data, each starting where the one before ended (`_moved`).
    last_end: float | None = None
    moving_run: int = 0
    #: The latest sample that moved data: (its bucket, period s, the copy time counted, SM
    #: busy share), counted as a run's edge until the next sample says it sat inside one.
    last_moved: tuple[_Bucket, float, float, float] | None = None
    #: Seconds a byte takes on the link (1 / link_bytes_per_s), kept for the per-sample path.
    per_link_byte_s: float = 0.0
    #: GPU-Util beside busy (`gapwatch.core.util_figure`), live: by second of monotonic time
    #: over the detector's window. Apart from `buckets`: those hold copy time only where copies
    #: ran.
    util: dict[int, UtilSums] = field(default_factory=dict)
    #: The newest second in `util`.
    util_k: int = -1
    #: The latest readings' intervals (a ring of `_COVERS_KEPT`), how many were kept, and
    #: their median once five came: the expected one, by which a reading spans a hole.
    util_covers: list[float] = field(default_factory=lambda: [0.0] * _COVERS_KEPT)
    util_n: int = 0
    util_expected: float | None = None
    #: Offline: the whole run's GPU-Util sums, and (seconds read, GPU-Util busy seconds) of
    #: them before the first busy reading and after the latest one: the working span's are the
    #: difference.
    util_total: UtilSums = field(default_factory=UtilSums)
    util_first: tuple[float, float] | None = None
    util_last: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        self.per_link_byte_s = 1.0 / self.link_bytes_per_s if self.link_bytes_per_s > 0 else 0.0


class ChainingMeter:
    """Per GPU, the sums behind the chaining figure (module docstring). Not thread-safe: the
    store calls it under its lock."""

    def __init__(self, gpus: list[GpuInfo], config: DetectorConfig,
                 window_s: float | None = WINDOW_S) -> None:
        self._config = config
        self._lag_s = config.gpm_lag_ms / 1000.0
        #: GPU-Util's live window: the detector's (whole seconds), which the header's busy is of.
        self._util_window_s = config.window_seconds
        self._nodata = config.nodata_after_periods
        self._window_s = window_s
        self._gpus: dict[int, _Gpu] = {}
        for g in gpus:
            self._gpu(g.index, g.link_bytes_per_s)

    def _gpu(self, index: int, link: float | None = None) -> _Gpu:
        g = self._gpus.get(index)
        if g is None:
            speed = self._config.link_or_default(link)
            g = self._gpus[index] = _Gpu(self._config.quiet_below_link_frac * speed, speed)
        return g

    def add_sample(self, s: GpuSample) -> None:
        """One GPU sample: its SM busy share over its interval (kept a while for the copies
        still to come), and PCIe time while data moved. Per sample of every report: plain
        comparisons, one bucket lookup only when data moved."""
        d, pct = s.interval_ns, s.sm_active_pct
        if d is None or d <= 0 or pct is None:
            return
        g = self._gpus.get(s.gpu)
        if g is None:
            g = self._gpu(s.gpu)
        end = s.t_wall_s - self._lag_s if s.sm_source == "gpm" else s.t_wall_s
        start = end - d / 1e9
        last_end = g.last_end
        if last_end is not None and last_end < end:
            # It covers back to the GPU's reading before it and no further (2^63-1 ns was 49
            # billion s of copies); an interval no sampler writes (`interval_belied`, no
            # spacing known here: 1 ns) covers from it. Its first test inline: per sample.
            if start < last_end or (2 * d < SHORTEST_PERIOD_NS and interval_belied(d, 0)):
                start = last_end
        elif d > FIRST_COVER_NS:
            start = end - FIRST_COVER_NS / 1e9
        # Clamped to 0..1 (NaN stays NaN, as min/max would leave it).
        busy = 0.0 if pct < 0.0 else 1.0 if pct > 100.0 else pct / 100.0
        util = s.gpu_util_pct
        if util is not None and util >= 0.0 and pct >= 0.0:  # readings (not None, NaN or < 0)
            self._add_util(g, s, start, end, util)
        samples = g.samples
        samples.append((start, end, busy))
        horizon = end - KEEP_SAMPLES_S
        while samples[0][1] < horizon:  # never empties: the newest ends at `end`
            samples.popleft()
        if end > g.latest_s:
            g.latest_s = end
        rx = s.pcie_rx_bytes_per_s
        if rx is not None and rx > g.moving_bytes_per_s:
            self._moved(g, start, end, busy, rx)
        else:
            g.moving_run, g.last_moved = 0, None
        g.last_end = end
        if g.pending:
            self._place_pending(g, end)

    def _add_util(self, g: _Gpu, s: GpuSample, start: float, end: float,
                  util_pct: float) -> None:
        """GPU-Util beside busy (`gapwatch.core.util_figure`) over one reading's interval: into
        the whole run's sums, marking where the working span (first to last busy reading, as
        the report's busy share) begins and ends in them; live, into its second. A stale GPM
        reading (no new interval: the next one covers it) is left out, as the detector leaves
        it out."""
        # Busy or idle by the detector's own rule, a stale GPM reading none (`busy_reading`).
        busy = busy_reading(s, self._config, True)
        if busy is None:
            return
        cover = end - start
        # A reading after a hole (a spacing above `nodata_after_periods` x the expected one,
        # the median of the latest) covers one expected period, as the detector counts it
        # (`_hole`): GPU-Util is NVML's average over its own short period, never over a stall.
        n = g.util_n
        g.util_covers[n % _COVERS_KEPT] = cover
        g.util_n = n = n + 1
        if n >= 5 and (n <= _COVERS_KEPT or n % 16 == 0):  # one late tick teaches nothing
            g.util_expected = median(g.util_covers[:n])
        expected = g.util_expected
        if expected is not None and cover > self._nodata * expected:
            cover = expected
        util_s = cover if util_pct >= 100.0 else cover * util_pct / 100.0
        if self._window_s is not None:
            self._util_in_window(g, s.t_mono_ns // 1_000_000_000, cover, util_s)
            return
        sums = g.util_total
        if busy and g.util_first is None:
            g.util_first = (sums.read_s, sums.util_busy_s)
        sums.read_s += cover
        sums.util_busy_s += util_s
        if busy:
            g.util_last = (sums.read_s, sums.util_busy_s)

    def _util_in_window(self, g: _Gpu, k: int, cover_s: float, util_s: float) -> None:
        """A reading's GPU-Util into its second `k` of monotonic time (live: the window's
        seconds are the detector's, and a wall clock stepped back moves none), the seconds
        older than the window let go."""
        sums = g.util.get(k)
        if sums is None:
            sums = g.util[k] = UtilSums()
            if k > g.util_k:
                g.util_k = k
                oldest = k - self._util_window_s
                for old in [i for i in g.util if i <= oldest]:
                    del g.util[old]
        sums.read_s += cover_s
        sums.util_busy_s += util_s

    def util_figure(self, gpu: int) -> UtilFigure | None:
        """GPU-Util over the detector's chaining window ending at the GPU's latest reading
        (live), or over the run's working span (no window: the report); None below
        `util_figure.MIN_READ_S` of readings with both GPU-Util and SM activity."""
        g = self._gpus.get(gpu)
        if g is None:
            return None
        if self._window_s is None:
            first, last = g.util_first, g.util_last
            if first is None or last is None:
                return None  # never busy: no working span to hold it against
            return UtilFigure.of(gpu, last[0] - first[0], last[1] - first[1], None)
        lo = g.util_k - self._util_window_s
        read = util_busy = 0.0
        for k, sums in g.util.items():
            if k > lo:
                read += sums.read_s
                util_busy += sums.util_busy_s
        return UtilFigure.of(gpu, read, util_busy, float(self._util_window_s))

    def util_figures(self) -> dict[int, UtilFigure]:
        return {gpu: f for gpu in self._gpus if (f := self.util_figure(gpu)) is not None}

    def _moved(self, g: _Gpu, start: float, end: float, busy: float, rx: float) -> None:
        """A sample that moved data: its copy time estimated (module docstring) as a run's
        edge, its bytes at the link's speed, at most its period; and the sample before it
        counted whole where this one shows it sat inside a run (the one before it moved too,
        each starting within half a period of the last one's end)."""
        period = end - start
        b = g.cur
        if b is None or int(end // BUCKET_S) != g.cur_k:
            b = self._bucket(g, end)
        # Per moving sample: a comparison, not min(); a product, not a division.
        copy_s = rx * period * g.per_link_byte_s
        if copy_s > period:
            copy_s = period
        b.pcie_s += copy_s
        b.pcie_busy_s += copy_s * busy
        last = g.last_moved
        last_end = g.last_end
        if last is not None and last_end is not None \
                and -period <= 2.0 * (start - last_end) <= period:
            if g.moving_run >= 2:
                lb, l_period, l_copy_s, l_busy = last
                lb.pcie_s += l_period - l_copy_s
                lb.pcie_busy_s += (l_period - l_copy_s) * l_busy
            g.moving_run += 1
        else:
            g.moving_run = 1
        g.last_moved = (b, period, copy_s, busy)

    def _place_pending(self, g: _Gpu, end: float) -> None:
        """The copies that were waiting for their samples, now that samples reach `end`."""
        pending = g.pending
        while pending and pending[0][1] <= end:
            self._place(g, *pending.popleft())

    def add_copy(self, c: CopyRecord) -> None:
        if c.direction != "h2d" or c.gpu is None or c.end_wall_s <= c.start_wall_s:
            return
        g = self._gpu(c.gpu)
        g.saw_copies = True
        if g.samples and c.end_wall_s <= g.samples[-1][1]:
            self._place(g, c.start_wall_s, c.end_wall_s)
        elif len(g.pending) < MAX_PENDING:
            g.pending.append((c.start_wall_s, c.end_wall_s))

    def _place(self, g: _Gpu, start: float, end: float) -> None:
        """Split a copy over the samples it overlaps (newest first: copies are recent)."""
        for s0, s1, busy in reversed(g.samples):
            if s1 <= start:
                break
            overlap = min(end, s1) - max(start, s0)
            if overlap > 0:
                b = self._bucket(g, s1)
                b.copy_s += overlap
                b.busy_s += overlap * busy

    def _bucket(self, g: _Gpu, t_s: float) -> _Bucket:
        k = int(t_s // BUCKET_S)
        b = g.buckets.get(k)
        if b is None:
            b = g.buckets[k] = _Bucket()
            if self._window_s is not None:
                oldest = k - 2 * int(self._window_s / BUCKET_S) - 1
                for old in [i for i in g.buckets if i < oldest]:
                    del g.buckets[old]
        if k >= g.cur_k:
            # The newest bucket is the one samples use next (`add_sample`); an older one
            # (a late copy's) is not, and pruning only ever removes buckets older than it.
            g.cur_k, g.cur = k, b
        return b

    def _sum(self, g: _Gpu, lo: int | None, hi: int | None, basis: Basis) -> tuple[float, float]:
        total = busy = 0.0
        for k, b in g.buckets.items():
            if (lo is None or k >= lo) and (hi is None or k < hi):
                if basis == "copies":
                    total, busy = total + b.copy_s, busy + b.busy_s
                else:
                    total, busy = total + b.pcie_s, busy + b.pcie_busy_s
        return total, busy

    def figure(self, gpu: int) -> ChainingFigure | None:
        """The figure over the window ending at the GPU's latest sample (the whole run when
        the meter has no window); None before any copy time was seen."""
        g = self._gpus.get(gpu)
        if g is None:
            return None
        basis: Basis = "copies" if g.saw_copies else "pcie"
        if self._window_s is None:
            total, busy = self._sum(g, None, None, basis)
            return ChainingFigure(gpu, busy / total, total, basis, None) if total > 0 else None
        n = int(self._window_s / BUCKET_S)
        top = int(g.latest_s // BUCKET_S) + 1
        total, busy = self._sum(g, top - n, top, basis)
        if total <= 0:
            return None
        b_total, b_busy = self._sum(g, top - 2 * n, top - n, basis)
        before = b_busy / b_total if b_total > 0 else None
        return ChainingFigure(gpu, busy / total, total, basis, self._window_s, before)

    def figures(self) -> dict[int, ChainingFigure]:
        out = {}
        for gpu in self._gpus:
            f = self.figure(gpu)
            if f is not None:
                out[gpu] = f
        return out

    def worst_window(self, gpu: int, window_s: float = WINDOW_S,
                     min_copy_s: float = 1.0) -> tuple[float, float] | None:
        """(start wall s, share) of the window with the lowest figure among those with at least
        `min_copy_s` of copy time, over the buckets kept (the report: the whole run)."""
        g = self._gpus.get(gpu)
        if g is None or not g.buckets:
            return None
        basis: Basis = "copies" if g.saw_copies else "pcie"
        n = max(1, int(window_s / BUCKET_S))
        worst: tuple[float, float] | None = None
        keys = list(g.buckets)
        if keys != sorted(keys):  # a late copy made an older bucket: the plain sums, in order
            return self._worst_by_sums(g, n, basis, min_copy_s)
        # Buckets in time order: each window's sums over its own buckets only, added in the
        # same order as `_sum` adds them (so the figure is the same to the last bit), not
        # over every bucket of the run for every window (a day was 600 M additions a GPU).
        values = [(b.copy_s, b.busy_s) if basis == "copies" else (b.pcie_s, b.pcie_busy_s)
                  for b in g.buckets.values()]
        for k, j in _window_starts(keys, n):
            total = busy = 0.0
            i = j
            while i < len(keys) and keys[i] < k + n:
                total, busy = total + values[i][0], busy + values[i][1]
                i += 1
            if total >= min_copy_s and (worst is None or busy / total < worst[1]):
                worst = (k * BUCKET_S, busy / total)
        return worst

    def _worst_by_sums(self, g: _Gpu, n: int, basis: Basis,
                       min_copy_s: float) -> tuple[float, float] | None:
        """`worst_window` over the plain window sums (buckets not in time order)."""
        worst: tuple[float, float] | None = None
        keys = sorted(g.buckets)
        for k, _ in _window_starts(keys, n):
            total, busy = self._sum(g, k, k + n, basis)
            if total >= min_copy_s and (worst is None or busy / total < worst[1]):
                worst = (k * BUCKET_S, busy / total)
        return worst


def _window_starts(keys: list[int], n: int) -> Iterator[tuple[int, int]]:
    """The first buckets of the windows of `n` buckets `worst_window` looks at (from the first
    bucket to the last window's start) that hold a bucket of `keys` (sorted), each with the
    index in `keys` of the first bucket it holds. A window with
    none has no copy time, never the worst: the buckets are by wall time, and a clock stepped
    10 years ahead inside a recording made 31 million such windows (10 s of `report`; to the
    year 2262, minutes)."""
    last = max(keys[0], keys[-1] - n + 1)
    k, j = keys[0], 0
    while k <= last:
        while keys[j] < k:  # keys[-1] >= last >= k: j stays inside
            j += 1
        if keys[j] >= k + n:  # none in [k, k + n): on to the first window holding keys[j]
            k = keys[j] - n + 1
            continue
        yield k, j
        k += 1

