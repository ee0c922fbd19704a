"""Score detected gaps against ground truth: recall, precision, kind accuracy, edge error.

Who calls it: the detector tests (real H200 traces, simulator scenarios), the e2e GPU bench.
Pure functions over plain values; no I/O.

Ground truth is a list of GPU *busy* intervals (every partition's compute interval); the truth
gaps are the holes of at least `min_gap_s` between consecutive merged intervals of one GPU (idle
before the first interval or after the last is not a gap, as in the detector). A detected gap and
a truth gap match when they overlap; each is matched at most once, largest overlap first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from statistics import median
from typing import Any, Protocol

from gapwatch.core.models import GEN5_X16_BYTES_PER_S


class _GapLike(Protocol):
    # Read-only: gapwatch's gaps are frozen.
    @property
    def gpu(self) -> int: ...
    @property
    def start_s(self) -> float: ...
    @property
    def end_s(self) -> float | None: ...
    @property
    def kind(self) -> str: ...


@dataclass(frozen=True, slots=True)
class TruthGap:
    gpu: int
    start_s: float
    end_s: float
    #: The kind this gap should get, where the truth says (None: not scored for kind).
    kind: str | None = None


@dataclass(frozen=True, slots=True)
class Score:
    recall: float
    precision: float
    #: Share of matched pairs whose kind is right; None when the truth names no kind.
    kind_accuracy: float | None
    #: Median over matched pairs of |start error| and |end error| (both edges pooled), seconds.
    median_edge_error_s: float | None
    n_truth: int
    n_detected: int
    #: Required truth gaps that were found (recall = n_found / n_truth).
    n_found: int = 0
    #: Matched (truth gap, detection) pairs, borderline truth holes included.
    matched: list[tuple[TruthGap, Any]] = field(default_factory=list)
    missed: list[TruthGap] = field(default_factory=list)
    false_positives: list[Any] = field(default_factory=list)

    def summary(self) -> str:
        kind = "n/a" if self.kind_accuracy is None else f"{self.kind_accuracy:.0%}"
        err = self.median_edge_error_s
        edge = "n/a" if err is None else f"{err * 1000:.0f} ms"
        return (
            f"recall {self.recall:.0%} ({self.n_found}/{self.n_truth}), precision "
            f"{self.precision:.0%} ({len(self.matched)}/{self.n_detected}), kind {kind}, "
            f"median edge error {edge}"
        )


def _field(item: Any, *names: str) -> Any:
    for n in names:
        if isinstance(item, Mapping):
            if n in item:
                return item[n]
        elif hasattr(item, n):
            return getattr(item, n)
    return None


#: The kind a truth hole should get, from what the workload itself did during it.
KindOf = Callable[[int, float, float], "str | None"]


def kind_from_copies(
    intervals: Iterable[Any],
    link_bytes_per_s: float = GEN5_X16_BYTES_PER_S,
    starved_below_link_frac: float = 0.30,
    covered_frac: float = 0.5,
) -> KindOf:
    """Ground-truth kind of a hole from the workload's own copy log (no GPU counters involved).

    Each interval may carry `copy_start`, `copy_end`, `copy_bytes`: the host-to-device copy that
    fed it, timed by the workload. A hole mostly (>= `covered_frac`) covered by copies is
    `pcie_starved` when those copies ran below `starved_below_link_frac` of the link, else
    `transfer_bound`; a hole mostly without a copy running is `host_stall` (the GPU waited on the
    host). Intervals without copy times are ignored.
    """
    copies: dict[int, list[tuple[float, float, float]]] = {}
    for it in intervals:
        c0, c1, nbytes = (_field(it, "copy_start"), _field(it, "copy_end"),
                          _field(it, "copy_bytes"))
        if c0 is None or c1 is None or not nbytes or c1 <= c0:
            continue
        gpu = int(_field(it, "gpu") or 0)
        copies.setdefault(gpu, []).append((float(c0), float(c1), float(nbytes) / (c1 - c0)))

    def kind_of(gpu: int, start: float, end: float) -> str | None:
        span = end - start
        if span <= 0:
            return None
        # Time covered by at least one copy, and the rate weighted by that time.
        pieces = sorted((max(a, start), min(b, end), r) for a, b, r in copies.get(gpu, [])
                        if min(b, end) > max(a, start))
        covered = weighted = 0.0
        cur_end = start
        for a, b, r in pieces:
            lo = max(a, cur_end)
            if b > lo:
                covered += b - lo
                cur_end = b
            weighted += (b - a) * r
        if covered < covered_frac * span:
            return "host_stall"
        rate = weighted / covered
        return "pcie_starved" if rate < starved_below_link_frac * link_bytes_per_s \
            else "transfer_bound"

    return kind_of


def truth_gaps(
    intervals: Iterable[Any], min_gap_s: float = 0.3, kind: str | KindOf | None = None
) -> list[TruthGap]:
    """Holes of at least `min_gap_s` between merged busy intervals, per GPU.

    `intervals` items may be objects or dicts with `start_s`/`end_s` (or `start`/`end`) and an
    optional `gpu` (default 0): the simulator's `TruthInterval` and the trace `truth.json` alike.
    """
    by_gpu: dict[int, list[tuple[float, float]]] = {}
    for it in intervals:
        start = _field(it, "start_s", "start")
        end = _field(it, "end_s", "end")
        gpu = _field(it, "gpu")
        by_gpu.setdefault(int(gpu or 0), []).append((float(start), float(end)))
    out: list[TruthGap] = []
    for gpu, spans in sorted(by_gpu.items()):
        spans.sort()
        last_end: float | None = None
        for s, e in spans:
            if last_end is not None and s - last_end >= min_gap_s:
                k = kind(gpu, last_end, s) if callable(kind) else kind
                out.append(TruthGap(gpu, last_end, s, k))
            last_end = e if last_end is None else max(last_end, e)
    return out


def score(
    detected_gaps: Iterable[_GapLike],
    truth_intervals: Iterable[Any],
    min_gap_s: float = 0.3,
    truth_kind: str | KindOf | None = None,
    clip_to_truth: bool = True,
    tolerance_s: float = 0.05,
) -> Score:
    """Compare detected gaps with the holes between truth busy intervals.

    Args:
        detected_gaps: closed gaps (open or retracted versions are ignored), e.g. `Gap`s.
        truth_intervals: busy intervals (see `truth_gaps`).
        min_gap_s: shortest truth hole that counts as a gap.
        truth_kind: the kind every truth gap should get (e.g. "pcie_starved" for the pageable
            trace), or a function giving each hole's kind (`kind_from_copies`); None leaves
            kind accuracy unscored.
        tolerance_s: truth holes within this of `min_gap_s` are borderline: a detection that
            matches one is not a false positive, missing one is not a miss (edges are only
            known to a few tens of ms, so a 0.298 s hole may well be measured at 0.301 s).
        clip_to_truth: leave out detected gaps that end after the GPU's last truth interval
            ends: truth only lists finished intervals, so a gap closed by work still running
            when the truth was cut cannot be judged.
    """
    intervals = list(truth_intervals)
    candidates = truth_gaps(intervals, max(0.0, min_gap_s - tolerance_s), truth_kind)
    last_end: dict[int, float] = {}
    for it in intervals:
        gpu = int(_field(it, "gpu") or 0)
        end = float(_field(it, "end_s", "end"))
        last_end[gpu] = max(end, last_end.get(gpu, end))
    det = [
        g for g in detected_gaps
        if g.end_s is not None and not getattr(g, "retracted", False)
        and not (clip_to_truth and g.end_s > last_end.get(g.gpu, float("inf")))
    ]  # fmt: skip
    pairs: list[tuple[float, int, int]] = []
    for ti, tg in enumerate(candidates):
        for di, g in enumerate(det):
            if g.gpu != tg.gpu:
                continue
            assert g.end_s is not None
            overlap = min(tg.end_s, g.end_s) - max(tg.start_s, g.start_s)
            if overlap > 0:
                pairs.append((overlap, ti, di))
    pairs.sort(reverse=True)
    used_t: set[int] = set()
    used_d: set[int] = set()
    matched: list[tuple[TruthGap, Any]] = []
    for _, ti, di in pairs:
        if ti in used_t or di in used_d:
            continue
        used_t.add(ti)
        used_d.add(di)
        matched.append((candidates[ti], det[di]))
    matched.sort(key=lambda p: (p[0].gpu, p[0].start_s))
    required = [
        i for i, tg in enumerate(candidates) if tg.end_s - tg.start_s >= min_gap_s + tolerance_s
    ]
    n_found = sum(1 for i in required if i in used_t)
    edges: list[float] = []
    kinds_ok = kinds_n = 0
    for tg, g in matched:
        edges.append(abs(g.start_s - tg.start_s))
        edges.append(abs(g.end_s - tg.end_s))
        if tg.kind is not None:
            kinds_n += 1
            kinds_ok += g.kind == tg.kind
    return Score(
        recall=n_found / len(required) if required else 1.0,
        precision=len(matched) / len(det) if det else 1.0,
        kind_accuracy=kinds_ok / kinds_n if kinds_n else None,
        median_edge_error_s=median(edges) if edges else None,
        n_truth=len(required),
        n_detected=len(det),
        n_found=n_found,
        matched=matched,
        missed=[candidates[i] for i in required if i not in used_t],
        false_positives=[g for i, g in enumerate(det) if i not in used_d],
    )
