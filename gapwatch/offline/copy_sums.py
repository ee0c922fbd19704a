"""What a report says of the copy trace's copies, summed as they are read, never held.

Who calls it: `gapwatch.offline.detect.detect_records` hands every copy record to a `CopySums`
as it comes (`add`); `gapwatch.offline.report` reads the copy table from it (`table`) and each
gap's pageable copy time (`PageableSweep`, over `pageable_spans`), in one pass over the gaps;
`gapwatch.offline.compare` reads each side's host-to-device copies back (`h2d`) where it kept
them (`CopySums(keep_h2d=True)`); `gapwatch.offline.report_parallel` has each worker sum its
GPUs' copies and hand them over (`hand_over`: each group's finished row, the pageable copies'
runs in a file the parent gave it), and the parent takes them in (`take`).

A traced prover makes tens of copies a partition, so a day of 8 GPUs is millions of them:
held as records (~250 bytes each) they grew a report by gigabytes, and each gap's pageable
time looked through every pageable copy of its GPU (the gaps times the copies). Now the sums
are kept per group (GPU, direction, memory kind), each copy's rate goes to a sorted spool on
disk for the group's exact median, and the pageable copies go to another, in start order,
for a sweep that holds them merged into stretches, only while a gap to come can still reach
them. Figures equal what the list gave (sums in input order; the median of the sorted rates;
each gap's pageable time `union_s`'s, bit for bit).
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, Final, get_args

from gapwatch.base.sorted_spool import SortedSpool
from gapwatch.core.models import CopyRecord, MemoryKind

#: Items a spool holds in memory before it writes a run (~100 bytes each held).
RUN_ITEMS: Final = 50_000

#: Stretches the sweep holds before it looks through every GPU's for those no gap can reach.
PRUNE_AT: Final = 1024

_SPAN = struct.Struct("<qd")  # GPU, end (the start is the key)
_H2D = struct.Struct("<qBddq")  # GPU, memory kind (its index in `_KINDS`), end, duration, bytes
_KINDS: Final[tuple[str, ...]] = get_args(MemoryKind)

Group = tuple[int | None, str, str]


@dataclass(frozen=True, slots=True)
class CopyRow:
    """One group's figures, finished: a row of the copy table."""

    gpu: int | None
    direction: str
    memory_kind: str
    count: int
    bytes: int
    copy_s: float
    rate_min_bytes_per_s: float | None
    rate_median_bytes_per_s: float | None
    rate_max_bytes_per_s: float | None

    def json(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu, "direction": self.direction, "memory_kind": self.memory_kind,
            "count": self.count, "bytes": self.bytes, "copy_s": self.copy_s,
            "bytes_per_s": self.bytes_per_s,
            "rate_min_bytes_per_s": self.rate_min_bytes_per_s,
            "rate_median_bytes_per_s": self.rate_median_bytes_per_s,
            "rate_max_bytes_per_s": self.rate_max_bytes_per_s,
        }  # fmt: skip

    @property
    def bytes_per_s(self) -> float | None:
        """The group's rate over its copies' summed time."""
        return self.bytes / self.copy_s if self.copy_s > 0 else None

    def order(self) -> tuple[int, str, str]:
        return (-1 if self.gpu is None else self.gpu, self.direction, self.memory_kind)


@dataclass(frozen=True, slots=True)
class GapCopyShare:
    """How much of a GPU's gap time (or all GPUs', `gpu` None) pageable copies ran."""

    gpu: int | None
    gap_s: float
    pageable_copy_s: float

    @property
    def pageable_share_of_gap_time(self) -> float | None:
        return self.pageable_copy_s / self.gap_s if self.gap_s > 0 else None

    def json(self) -> dict[str, Any]:
        """The figures without the GPU (the table's overall ones are its own members)."""
        return {"gap_s": self.gap_s, "pageable_copy_s": self.pageable_copy_s,
                "pageable_share_of_gap_time": self.pageable_share_of_gap_time}


@dataclass(frozen=True, slots=True)
class CopyTable:
    """The report's copy table (its JSON's "copies", docs/copytrace.md): copies by GPU,
    direction and host memory kind, and how much of the gap time pageable copies ran."""

    count: int
    bytes: int
    rows: list[CopyRow]
    overall: GapCopyShare
    per_gpu: list[GapCopyShare]

    def json(self) -> dict[str, Any]:
        return {"count": self.count, "bytes": self.bytes, "rows": [r.json() for r in self.rows],
                **self.overall.json(),
                "per_gpu": [{"gpu": p.gpu, **p.json()} for p in self.per_gpu]}


@dataclass(frozen=True, slots=True)
class CopyPart:
    """What a worker's `CopySums` hands over (it pickles small): its counts, its groups'
    rows, and where its pageable copies' runs are in the file the parent gave it."""

    count: int
    bytes: int
    rows: list[CopyRow]
    pageable_runs: list[tuple[int, int]]
    pageable_items: int
    h2d_runs: list[tuple[int, int]] | None
    h2d_items: int


@dataclass(slots=True)
class _Sums:
    """One group's sums, in the order its copies came."""

    index: int
    count: int = 0
    bytes: int = 0
    copy_s: float = 0
    rates: int = 0
    rate_min: float | None = None
    rate_max: float | None = None


class CopySums:
    """The copies of one input, summed by group as they come; their rates and pageable spans
    spooled (module docstring). `keep_h2d`: also spool each host-to-device copy of a watched
    GPU for `h2d` (compare). `run_file`: a worker's, where its pageable (and host-to-device)
    copies' runs go for the parent to take (`hand_over`, `take`)."""

    def __init__(self, keep_h2d: bool = False, run_file: IO[bytes] | None = None) -> None:
        self.count = 0
        self.bytes = 0
        self._groups: dict[Group, _Sums] = {}
        #: Other workers' groups, finished (`take`).
        self._taken: list[CopyRow] = []
        self._rates = SortedSpool(run_items=RUN_ITEMS, ties=1)
        self._pageable = SortedSpool(run_items=RUN_ITEMS, run_file=run_file)
        self._h2d = SortedSpool(run_items=RUN_ITEMS, ties=1, run_file=run_file) \
            if keep_h2d else None

    def __bool__(self) -> bool:
        return self.count > 0

    def add(self, c: CopyRecord) -> None:
        self.count += 1
        self.bytes += c.bytes
        kind = c.host_kind
        key = (c.gpu, c.direction, kind)
        g = self._groups.get(key)
        if g is None:
            g = self._groups[key] = _Sums(len(self._groups))
        g.count += 1
        g.bytes += c.bytes
        g.copy_s += c.duration_s
        rate = c.bytes_per_s
        if rate is not None:
            g.rates += 1
            if g.rate_min is None or rate < g.rate_min:
                g.rate_min = rate
            if g.rate_max is None or rate > g.rate_max:
                g.rate_max = rate
            self._rates.add(rate, b"", (g.index,))
        if c.gpu is None:
            return
        if kind == "pageable":
            self._pageable.add(c.start_wall_s, _SPAN.pack(c.gpu, c.end_wall_s))
        if self._h2d is not None and c.direction == "h2d":
            # By end, then GPU, then as added: the same order whichever process read them.
            self._h2d.add(c.end_wall_s, _H2D.pack(c.gpu, _KINDS.index(kind), c.end_wall_s,
                                                  c.duration_s, c.bytes), (c.gpu,))

    def pageable_spans(self) -> Iterator[tuple[int, float, float]]:
        """The pageable copies of watched GPUs as (GPU, start, end), in start order."""
        unpack = _SPAN.unpack
        for batch in self._pageable.batches():
            for (start, *_), payload in batch:
                gpu, end = unpack(payload)
                yield gpu, start, end

    def h2d(self) -> Iterator[tuple[int, str, float, int, float]]:
        """The host-to-device copies of watched GPUs as (GPU, host memory kind, end, bytes,
        seconds), by end, then GPU (`keep_h2d`).

        Raises:
            ValueError: copies were added but not kept (`keep_h2d` was not asked).
        """
        if self._h2d is None:
            if self.count:
                raise ValueError("these copies' host-to-device list was not kept (keep_h2d)")
            return
        unpack = _H2D.unpack
        for batch in self._h2d.batches():
            for _key, payload in batch:
                gpu, kind, end, duration, size = unpack(payload)
                yield gpu, _KINDS[kind], end, size, duration

    def table(self, gaps: dict[int, tuple[float, float]]) -> CopyTable:
        """Copies by GPU, direction and host memory kind (count, bytes, rates), and how much of
        the gap time pageable copies ran (per GPU and overall; `gaps`: each GPU's gap seconds
        and pageable copy seconds within them): the "copies" object of the report."""
        rows = sorted(self._taken + self.rows(), key=CopyRow.order)
        per_gpu = [GapCopyShare(gpu, *gaps[gpu]) for gpu in sorted(gaps)]
        overall = GapCopyShare(None, sum((p.gap_s for p in per_gpu), 0.0),
                               sum((p.pageable_copy_s for p in per_gpu), 0.0))
        return CopyTable(self.count, self.bytes, rows, overall, per_gpu)

    def rows(self) -> list[CopyRow]:
        """This process's groups, finished (their medians read from the rates' spool)."""
        medians = self._medians()
        return [CopyRow(gpu, direction, kind, g.count, g.bytes, g.copy_s, g.rate_min,
                        medians.get(g.index), g.rate_max)
                for (gpu, direction, kind), g in self._groups.items()]

    def hand_over(self) -> CopyPart:
        """A worker's sums for the parent (`take`): its spooled copies' runs are written to
        its `run_file`."""
        h2d = self._h2d
        return CopyPart(self.count, self.bytes, self.rows(), self._pageable.spill(),
                        len(self._pageable), h2d.spill() if h2d is not None else None,
                        len(h2d) if h2d is not None else 0)

    def take(self, part: CopyPart, run_file: IO[bytes]) -> None:
        """Another worker's copies (its GPUs', so no group is in two workers), their runs in
        `run_file` (its `hand_over`).

        Raises:
            ValueError: this keeps the host-to-device copies and the part does not, or the
                other way round.
        """
        if (part.h2d_runs is None) != (self._h2d is None):
            raise ValueError("a part with and a part without the host-to-device copies")
        self.count += part.count
        self.bytes += part.bytes
        self._taken += part.rows
        self._pageable.adopt(run_file, part.pageable_runs, part.pageable_items)
        if self._h2d is not None and part.h2d_runs is not None:
            self._h2d.adopt(run_file, part.h2d_runs, part.h2d_items)

    def _medians(self) -> dict[int, float]:
        """Each group's median rate (`statistics.median` of its rates), by group index: one
        pass over the rates in ascending order, each group's middle one or two taken."""
        want: dict[int, tuple[int, int]] = {}
        for g in self._groups.values():
            if g.rates:
                want[g.index] = ((g.rates - 1) // 2, g.rates // 2)
        seen = dict.fromkeys(want, 0)
        low: dict[int, float] = {}
        out: dict[int, float] = {}
        for batch in self._rates.batches():
            for (rate, index, *_), _payload in batch:
                at = seen[index]
                seen[index] = at + 1
                lo, hi = want[index]
                if at == lo:
                    low[index] = rate
                if at == hi:
                    out[index] = rate if lo == hi else (low[index] + rate) / 2
        return out


class PageableSweep:
    """Each gap's pageable copy time (`union_s` of its GPU's pageable copies over the gap),
    asked in gap start order. The copies come in start order; each GPU's are held merged into
    the disjoint stretches during which some copy ran (what `union_s` would make of them), and
    only while a stretch may still overlap a gap to come (it ends after the latest gap start
    asked): a gap reads the few stretches it overlaps, whatever the number of copies (hours-long
    copies in a hostile file are one stretch). The figure is `union_s`'s, bit for bit: the same
    runs, summed in the same order."""

    def __init__(self, spans: Iterator[tuple[int, float, float]]) -> None:
        self._spans = spans
        self._next = next(spans, None)
        #: Per GPU: [start, end] stretches, disjoint and in order (so their ends are too).
        self._live: dict[int, deque[list[float]]] = {}
        self._floor = float("-inf")
        self._held = 0
        self._prune_at = PRUNE_AT

    def time_in(self, gpu: int, lo: float, hi: float) -> float:
        """Seconds within `[lo, hi]` during which some pageable copy of `gpu` ran.

        Raises:
            ValueError: `lo` before an earlier call's (gaps must come in start order).
        """
        if lo < self._floor:
            raise ValueError(f"gaps out of start order: {lo} after {self._floor}")
        self._floor = lo
        self._pull(hi)
        if self._held >= self._prune_at:
            self._prune(lo)
        mine = self._live.get(gpu)
        if not mine:
            return 0.0
        # A stretch that ended by this gap's start overlaps no later gap: let it go.
        while mine and mine[0][1] <= lo:
            mine.popleft()
            self._held -= 1
        total = 0.0
        for start, end in mine:
            if start >= hi:
                break
            a, b = max(start, lo), min(end, hi)
            if b > a:
                total += b - a
        return total

    def _pull(self, hi: float) -> None:
        """Every copy that starts before `hi`, into its GPU's stretches."""
        nxt = self._next
        while nxt is not None and nxt[1] < hi:
            gpu, start, end = nxt
            if end > start:  # one that did not run adds nothing (`union_s` skips it)
                mine = self._live.get(gpu)
                if mine is None:
                    mine = self._live[gpu] = deque()
                if mine and start <= mine[-1][1]:
                    if end > mine[-1][1]:
                        mine[-1][1] = end
                else:
                    mine.append([start, end])
                    self._held += 1
            nxt = next(self._spans, None)
        self._next = nxt

    def _prune(self, lo: float) -> None:
        """Other GPUs' stretches that ended by `lo` (a GPU without gaps for a while keeps
        gathering them), dropped; the next full prune when twice as many are held."""
        held = 0
        for mine in self._live.values():
            while mine and mine[0][1] <= lo:
                mine.popleft()
            held += len(mine)
        self._held = held
        self._prune_at = max(PRUNE_AT, 2 * held)
