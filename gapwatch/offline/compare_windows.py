"""One side of `gapwatch compare`, cut into fixed windows: each figure's value per window.

Who calls it: `gapwatch.offline.compare` (once per side, with the window both sides share). Pure
over what the detection found: the gaps, the GPUs' working spans, the partitions and the copies.

A window counts for a GPU only over the part of it inside that GPU's working span (first to last
busy reading, as the report's busy share) where the GPU was read: a stretch with no reading (the
detector's NO_DATA state: the sampler stalled, the recording has a hole) is unknown, never busy and
never idle, and the partitions that ended in it are not counted for that GPU (the report's working
span leaves it out too). A window less than half covered gives no value for that GPU (None), so the
idle before the work started is never taken for a gap, nor a hole for a busy window. Values per
window:
- busy share: 1 - (idle inside gaps) / (the window's part in the span). Only gaps >= min gap
  count, so it reads a little above the report's busy share (which counts every idle reading):
  the test compares like with like on both sides;
- idle seconds per hour, by gap kind and by the prover's cause (`/status`); gaps per hour (by
  start);
- partitions per hour (by the end of their GPU work; per GPU when the log says which);
- H2D rate by host memory kind (copy trace): bytes over copy time of the copies that ended in the
  window (None without such a copy);
- PoSt latency by proof kind, of the proofs that came; and each kind's PoSts that ended, and of
  them those that failed or were lost, those proved past their deadline (late) and those proved
  not timed (whether late not known): summed over the side, `compare` judges both shares whole.
All in one pass over the gaps, partitions and copies (each spread over the windows it touches).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, TypeVar

from gapwatch.core.track import GpuTotals

_N = TypeVar("_N", int, float)


class SlimGap(NamedTuple):
    """What the windows read of a closed gap."""

    gpu: int
    kind: str
    cause: str | None
    start_s: float
    duration_s: float


#: How a PoSt ended: with its proof, failed (the prover said so), or lost (said for the last
#: time without its end: a restart took it, or too many in flight). Only a proved one has a
#: latency; the other two are no proof at all (a WinningPoSt's block lost, as a late one's).
PostOutcome = Literal["proved", "failed", "lost"]


class SlimPost(NamedTuple):
    """What the windows read of a PoSt's last word (the prover's watcher, `ProverEvent`
    "proof"): its end (or its failure, or when it was given up) and, proved, its latency."""

    gpu: int | None
    kind: str
    end_s: float
    total_s: float | None
    outcome: PostOutcome = "proved"
    #: Proved past its deadline (the watcher's verdict "late"): a WinningPoSt's block lost.
    #: None: proved, but not timed (the watcher's verdict "unknown": its lines lost, or read
    #: from mid-proof), so whether it was late is not known.
    late: bool | None = False


class NoData(NamedTuple):
    """A stretch of one GPU with no reading (from its NO_DATA state to its next state)."""

    gpu: int
    start_s: float
    end_s: float


def _merged(stretches: Iterable[NoData]) -> dict[int, list[tuple[float, float]]]:
    """Each GPU's stretches, sorted, overlapping ones joined (a GPU's own never overlap; a
    hostile recording's states could make them)."""
    by_gpu: dict[int, list[tuple[float, float]]] = {}
    for s in sorted(stretches, key=lambda s: (s.gpu, s.start_s)):
        mine = by_gpu.setdefault(s.gpu, [])
        if mine and s.start_s <= mine[-1][1]:
            mine[-1] = (mine[-1][0], max(mine[-1][1], s.end_s))
        else:
            mine.append((s.start_s, s.end_s))
    return by_gpu


def seconds_within(stretches: Iterable[tuple[float, float]], a: float, b: float) -> float:
    """Seconds of [a, b] the stretches (start, end) cover, each counted where it overlaps
    (stretches of one GPU, or their intersection, never overlap one another)."""
    return sum(max(0.0, min(b, end) - max(a, start)) for start, end in stretches)


class Silences:
    """Each GPU's stretches with no reading, for asking whether a time falls in one: a
    bisection, not a look through every stretch (a partition end each: a day of a sampler that
    stalls often was hundreds of thousands of ends times thousands of stretches)."""

    def __init__(self, stretches: Iterable[NoData]) -> None:
        self._by_gpu = _merged(stretches)
        self._starts = {g: [a for a, _b in v] for g, v in self._by_gpu.items()}

    def inside(self, gpu: int, t: float) -> bool:
        starts = self._starts.get(gpu)
        if not starts:
            return False
        i = bisect_right(starts, t) - 1
        return i >= 0 and t < self._by_gpu[gpu][i][1]


def all_silent(stretches: Iterable[NoData], gpus: Sequence[int]) -> list[tuple[float, float]]:
    """The stretches in which none of `gpus` had a reading (their stretches' intersection), in
    time order: each GPU's sorted stretches walked once against the common ones so far."""
    if not gpus:
        return []
    by_gpu = _merged(stretches)
    common = by_gpu.get(gpus[0], [])
    for g in gpus[1:]:
        mine = by_gpu.get(g, [])
        out: list[tuple[float, float]] = []
        i = j = 0
        while i < len(common) and j < len(mine):
            lo, hi = max(common[i][0], mine[j][0]), min(common[i][1], mine[j][1])
            if lo < hi:
                out.append((lo, hi))
            # The one that ends first can meet nothing later.
            if common[i][1] < mine[j][1]:
                i += 1
            else:
                j += 1
        common = out
    return common


class SlimCopy(NamedTuple):
    """What the windows read of an H2D copy (its host memory kind)."""

    gpu: int
    kind: str
    end_s: float
    bytes: int
    duration_s: float

#: Windows offered, largest first: the largest that gives both sides `MIN_WINDOWS` whole windows.
WINDOW_CHOICES_S: tuple[float, ...] = (60.0, 30.0, 20.0, 10.0, 5.0, 3.0, 2.0, 1.0)
MIN_WINDOWS = 8
ALL = -1  # the key of "all GPUs" in per-GPU maps
PAGEABLE_SHARE = "H2D bytes from pageable"
POST_LATENCY = "PoSt latency s: "
#: The share of a kind's PoSts that ended without a proof (failed or lost), of all that ended.
POST_FAILED = "PoSt failed: "
#: The share of a kind's PoSts proved past their deadline (`SlimPost.late`), of all that ended
#: less those proved not timed (whether late not known: counted as neither).
POST_LATE = "PoSt late: "


def choose_window_s(span_s: float) -> float:
    """The window both sides use, from the shorter side's span."""
    for w in WINDOW_CHOICES_S:
        if span_s / w >= MIN_WINDOWS:
            return w
    return WINDOW_CHOICES_S[-1]


@dataclass
class Grid:
    """Whole windows of `window_s` from `start_s` (the side's earliest busy reading)."""

    start_s: float
    window_s: float
    n: int

    def index(self, t: float) -> int | None:
        i = int((t - self.start_s) // self.window_s)
        return i if 0 <= i < self.n else None

    def spread_over(self, a: float, b: float) -> Iterable[tuple[int, float]]:
        """(window, seconds of [a, b] inside it) for every window [a, b] touches. Either end
        may be past the grid's (a stretch with no reading that runs on to the end is one to
        infinity: `inf // window` is NaN, which was a traceback)."""
        a, b = max(a, self.start_s), min(b, self.start_s + self.n * self.window_s)
        if not b > a:
            return
        first = max(0, int((a - self.start_s) // self.window_s))
        last = min(self.n - 1, int((b - self.start_s) // self.window_s))
        for i in range(first, last + 1):
            lo = self.start_s + i * self.window_s
            inside = min(b, lo + self.window_s) - max(a, lo)
            if inside > 0:
                yield i, inside


@dataclass
class GpuWindows:
    """Per-window accumulators of one GPU (or of all: `ALL`)."""

    covered_s: list[float]
    gap_idle_s: list[float]
    gaps: list[int]
    idle_by_kind: dict[str, list[float]] = field(default_factory=dict)
    idle_by_cause: dict[str, list[float]] = field(default_factory=dict)
    partitions: list[int] | None = None
    h2d_bytes: dict[str, list[float]] = field(default_factory=dict)
    h2d_s: dict[str, list[float]] = field(default_factory=dict)
    #: PoSt latency by proof kind: the sum of the windows' proofs' seconds, and their count.
    post_s: dict[str, list[float]] = field(default_factory=dict)
    posts: dict[str, list[int]] = field(default_factory=dict)
    #: PoSts by proof kind that ended (proved, failed or lost), and of them those with no proof.
    posts_ended: dict[str, list[int]] = field(default_factory=dict)
    posts_failed: dict[str, list[int]] = field(default_factory=dict)
    #: Of them, those proved past their deadline, and those proved not timed (`SlimPost.late`
    #: None: neither late nor on time).
    posts_late: dict[str, list[int]] = field(default_factory=dict)
    posts_not_timed: dict[str, list[int]] = field(default_factory=dict)
    #: `ALL` only: each window's wall seconds in which some GPU was read (None: all of it).
    read_wall_s: list[float] | None = None

    @classmethod
    def empty(cls, n: int) -> GpuWindows:
        return cls([0.0] * n, [0.0] * n, [0] * n)


def _usable(covered: float, window_s: float) -> bool:
    return covered >= window_s / 2


def accumulate(grid: Grid, totals: list[GpuTotals], gaps: Iterable[SlimGap],
               partition_ends: Iterable[tuple[int | None, float]] | None,
               copies: Iterable[SlimCopy], posts: Sequence[SlimPost] = (),
               no_data: Sequence[NoData] = ()) -> dict[int, GpuWindows]:
    """Every GPU's window accumulators (and `ALL`'s, their sum); `no_data`: the stretches
    without readings, taken out of each GPU's coverage (see the module docstring)."""
    out: dict[int, GpuWindows] = {}
    spans: dict[int, tuple[float, float]] = {}
    for t in totals:
        acc = out[t.gpu] = GpuWindows.empty(grid.n)
        if t.first_busy_s is not None and t.last_busy_s is not None:
            spans[t.gpu] = (t.first_busy_s, t.last_busy_s)
            for i, s in grid.spread_over(t.first_busy_s, t.last_busy_s):
                acc.covered_s[i] += s
    for hole in no_data:
        acc_hole, span = out.get(hole.gpu), spans.get(hole.gpu)
        if acc_hole is None or span is None:
            continue
        # Only the hole's part inside the working span was covered: a hole running past the
        # span's end (the recording stopped while the sampler was stalled) took time off the
        # span's last window that the span never had.
        start, end = max(hole.start_s, span[0]), min(hole.end_s, span[1])
        for i, s in grid.spread_over(start, end) if start < end else ():
            acc_hole.covered_s[i] = max(0.0, acc_hole.covered_s[i] - s)
    _gaps(grid, out, gaps)
    unplaced = (_partitions(grid, out, partition_ends, no_data) if partition_ends is not None
                else None)
    _copies(grid, out, copies)
    unplaced_posts = _posts(grid, out, posts)
    total = out[ALL] = _sum(out, grid.n)
    if no_data:
        total.read_wall_s = [grid.window_s] * grid.n
        for a, b in all_silent(no_data, [t.gpu for t in totals]):
            for i, sec in grid.spread_over(a, b):
                total.read_wall_s[i] -= sec
    _add_posts(total, unplaced_posts)
    if unplaced is not None:
        base = total.partitions or [0] * grid.n
        total.partitions = [a + b for a, b in zip(base, unplaced, strict=True)]
    return out


def _gaps(grid: Grid, out: dict[int, GpuWindows], gaps: Iterable[SlimGap]) -> None:
    """Each gap's idle spread over the windows it touches (by kind and cause); counted in the
    window it started in."""
    for g in gaps:
        w = out.get(g.gpu)
        if w is None:
            continue
        start = grid.index(g.start_s)
        if start is not None:
            w.gaps[start] += 1
        kind = w.idle_by_kind.setdefault(g.kind, [0.0] * grid.n)
        cause = w.idle_by_cause.setdefault(g.cause, [0.0] * grid.n) if g.cause else None
        for i, s in grid.spread_over(g.start_s, g.start_s + g.duration_s):
            w.gap_idle_s[i] += s
            kind[i] += s
            if cause is not None:
                cause[i] += s


def _copies(grid: Grid, out: dict[int, GpuWindows], copies: Iterable[SlimCopy]) -> None:
    for c in copies:
        w = out.get(c.gpu)
        i = grid.index(c.end_s)
        if w is None or i is None:
            continue
        w.h2d_bytes.setdefault(c.kind, [0.0] * grid.n)[i] += c.bytes
        w.h2d_s.setdefault(c.kind, [0.0] * grid.n)[i] += c.duration_s


def _posts(grid: Grid, out: dict[int, GpuWindows],
           posts: Sequence[SlimPost]) -> GpuWindows:
    """PoSts by the window each ended in, on its GPU (the only GPU when it has none said);
    those of no known GPU on a multi-GPU side count for all GPUs only. Every one is counted
    as ended, one without a proof as failed too; only a proved one's latency is summed."""
    only = next(iter(out)) if len(out) == 1 else None
    unplaced = GpuWindows.empty(grid.n)
    for p in posts:
        i = grid.index(p.end_s)
        if i is None:
            continue
        w = out.get(only if p.gpu is None and only is not None else p.gpu if p.gpu is not None
                    else ALL, unplaced)
        w.posts_ended.setdefault(p.kind, [0] * grid.n)[i] += 1
        failed = w.posts_failed.setdefault(p.kind, [0] * grid.n)
        late = w.posts_late.setdefault(p.kind, [0] * grid.n)
        if p.outcome != "proved":
            failed[i] += 1
            continue
        if p.late is None:
            w.posts_not_timed.setdefault(p.kind, [0] * grid.n)[i] += 1
        else:
            late[i] += p.late
        if p.total_s is None:
            continue
        w.post_s.setdefault(p.kind, [0.0] * grid.n)[i] += p.total_s
        w.posts.setdefault(p.kind, [0] * grid.n)[i] += 1
    return unplaced


def _add_posts(total: GpuWindows, more: GpuWindows) -> None:
    _add_into(total.post_s, more.post_s)
    _add_into(total.posts, more.posts)
    _add_into(total.posts_ended, more.posts_ended)
    _add_into(total.posts_failed, more.posts_failed)
    _add_into(total.posts_late, more.posts_late)
    _add_into(total.posts_not_timed, more.posts_not_timed)


def _add_into(dst: dict[str, list[_N]], src: dict[str, list[_N]]) -> None:
    """`src`'s per-window values added into `dst`'s, key by key (a key new to `dst`: zeros)."""
    for k, vs in src.items():
        acc = dst.setdefault(k, [v * 0 for v in vs])
        for i, v in enumerate(vs):
            acc[i] += v


def _partitions(grid: Grid, out: dict[int, GpuWindows],
                ends: Iterable[tuple[int | None, float]],
                no_data: Sequence[NoData] = ()) -> list[int]:
    """Partitions by the window their GPU work ended in, per GPU; one with no GPU said goes to
    the only GPU when there is one, else it counts for all GPUs only (returned). One that ended
    while its GPU had no reading is not counted for that GPU (that time is out of its span, and
    a partition counted over a time left out would read as a higher rate) but for all GPUs,
    whose rate is per hour in which some GPU was read (`read_wall_s`); one that ended while no
    GPU was read counts nowhere. (Dropped from all GPUs too, one GPU's sampler stall took that
    GPU's partitions, which the log says were proved, off the total: a lower rate.)"""
    only = next(iter(out)) if len(out) == 1 else ALL
    silences = Silences(no_data) if no_data else None
    for acc in out.values():
        acc.partitions = [0] * grid.n
    unplaced = [0] * grid.n
    for gpu, end in ends:
        i = grid.index(end)
        if i is None:
            continue
        placed = only if gpu is None else gpu
        if silences is not None and placed != ALL and silences.inside(placed, end):
            placed = ALL  # not this GPU's, still all GPUs'
        if silences is not None and placed == ALL and all(silences.inside(g, end) for g in out):
            continue
        w = out.get(placed)
        if w is not None and w.partitions is not None:
            w.partitions[i] += 1
        else:
            unplaced[i] += 1
    return unplaced


def _sum(out: dict[int, GpuWindows], n: int) -> GpuWindows:
    total = GpuWindows.empty(n)
    parts: list[int] | None = None
    for w in out.values():
        for i in range(n):
            total.covered_s[i] += w.covered_s[i]
            total.gap_idle_s[i] += w.gap_idle_s[i]
            total.gaps[i] += w.gaps[i]
        for src, dst in ((w.idle_by_kind, total.idle_by_kind),
                         (w.idle_by_cause, total.idle_by_cause),
                         (w.h2d_bytes, total.h2d_bytes), (w.h2d_s, total.h2d_s)):
            for k, vs in src.items():
                acc = dst.setdefault(k, [0.0] * n)
                for i, v in enumerate(vs):
                    acc[i] += v
        _add_posts(total, w)
        if w.partitions is not None:
            parts = parts or [0] * n
            for i, v in enumerate(w.partitions):
                parts[i] += v
    total.partitions = parts
    return total


def series(w: GpuWindows, window_s: float, all_gpus: bool) -> dict[str, list[float]]:
    """Each figure's values over the usable windows (see the module docstring). For `ALL`, a
    window's coverage is summed over GPUs (GPU-seconds) and usable when at least half of one
    GPU's window is; partitions per hour are per wall hour of the window."""
    out: dict[str, list[float]] = {}
    usable = [i for i, c in enumerate(w.covered_s) if _usable(c, window_s)]
    if not usable:
        return out
    out["busy share"] = [1.0 - min(1.0, w.gap_idle_s[i] / w.covered_s[i]) for i in usable]
    out["gaps/h"] = [w.gaps[i] / w.covered_s[i] * 3600 for i in usable]
    out["idle s/h"] = [w.gap_idle_s[i] / w.covered_s[i] * 3600 for i in usable]
    for kind, vs in sorted(w.idle_by_kind.items()):
        out[f"idle s/h: {kind}"] = [vs[i] / w.covered_s[i] * 3600 for i in usable]
    for cause, vs in sorted(w.idle_by_cause.items()):
        out[f"idle s/h, prover: {cause}"] = [vs[i] / w.covered_s[i] * 3600 for i in usable]
    if w.partitions is not None:
        def hours(i: int) -> float:
            if not all_gpus:
                return w.covered_s[i] / 3600
            # Per wall hour read: a stretch no GPU was read in is not an hour of no partitions.
            return (window_s if w.read_wall_s is None else w.read_wall_s[i]) / 3600
        out["partitions/h"] = [w.partitions[i] / hours(i) for i in usable if hours(i) > 0]
    for kind, bs in sorted(w.h2d_bytes.items()):
        secs = w.h2d_s[kind]
        out[f"H2D rate: {kind}"] = [bs[i] / secs[i] for i in usable if secs[i] > 0]
    if w.h2d_bytes:
        # Across memory kinds: a change that moves copies from pageable to pinned memory shows
        # here (each kind's own rate exists on one side only).
        total_b = [sum(bs[i] for bs in w.h2d_bytes.values()) for i in range(len(w.gaps))]
        total_s = [sum(ss[i] for ss in w.h2d_s.values()) for i in range(len(w.gaps))]
        pageable = w.h2d_bytes.get("pageable", [0.0] * len(w.gaps))
        out["H2D rate: all"] = [total_b[i] / total_s[i] for i in usable if total_s[i] > 0]
        out[PAGEABLE_SHARE] = [pageable[i] / total_b[i] for i in usable if total_b[i] > 0]
    for kind, secs in sorted(w.post_s.items()):
        n = w.posts[kind]
        # Every window with a proof, usable or not: PoSt is rare, and its latency does not
        # depend on how much of the window the GPU worked.
        out[f"{POST_LATENCY}{kind}"] = [secs[i] / n[i] for i in range(len(n)) if n[i]]
    return out
