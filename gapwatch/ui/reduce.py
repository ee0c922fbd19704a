"""Reduce a time series to one value per display column: the busy share of the column's time, the
(min, max) of a rate, and the detector's gaps as one kind per column.

Who calls it: the strip charts of the always-on view and the plotext detail chart, on every redraw.
Pure functions, no Textual, so they are unit-tested directly.

Why a busy share: a column of a 10-minute chart holds 8 s of samples. Drawn by its maximum, a
column with a 0.5 s gap in it looks as full as a busy one, and the chart hides exactly what it is
there to show. Each sample covers the interval it was averaged over; the column's height is the
part of its covered time that was busy by the detector's own rule (`core.readings.busy_reading`),
so a column that was idle for half its time is drawn half high, whatever the window.

Why min AND max: a chart is a few hundred columns wide, a 10-minute window at 10 Hz is 6000
samples; a mean per column would erase a 300 ms idle dip inside busy work. Keeping both extremes
means a short gap still reaches the bottom of its column.

Why None: a column in which no sample had a value is missing data and must be drawn blank, never as
zero and never bridged from its neighbours.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gapwatch.core.models import Gap, GapKind, GpuSample
from gapwatch.ui.kinds import rank


@dataclass(frozen=True, slots=True)
class Column:
    """The extremes of the values that fell into one display column (None = no data there)."""

    lo: float | None
    hi: float | None

    @property
    def missing(self) -> bool:
        return self.lo is None


MISSING = Column(None, None)


def reduce_minmax(
    points: Sequence[tuple[int, float | None]],
    t_start_ns: int,
    t_end_ns: int,
    columns: int,
) -> list[Column]:
    """Bucket `(t_ns, value)` points into `columns` equal time slices of [t_start_ns, t_end_ns).

    A point belongs to the column containing its time; points outside the window are ignored;
    None values are skipped, so a column whose points are all None stays missing.

    Args:
        points: samples in any order (the store keeps them in time order).
        t_start_ns: left edge of the window (inclusive).
        t_end_ns: right edge (the newest sample's time belongs to the last column).
        columns: number of display columns; 0 gives an empty list.

    Returns:
        `columns` Column values, oldest on the left.
    """
    if columns <= 0:
        return []
    span = t_end_ns - t_start_ns
    if span <= 0:
        return [MISSING] * columns
    lo: list[float | None] = [None] * columns
    hi: list[float | None] = [None] * columns
    for t_ns, value in points:
        if value is None or t_ns < t_start_ns or t_ns > t_end_ns:
            continue
        col = min(columns - 1, (t_ns - t_start_ns) * columns // span)
        cur_lo = lo[col]
        if cur_lo is None:
            lo[col] = hi[col] = value
        else:
            if value < cur_lo:
                lo[col] = value
            cur_hi = hi[col]
            if cur_hi is not None and value > cur_hi:
                hi[col] = value
    return [Column(a, b) for a, b in zip(lo, hi, strict=True)]


def busy_shares(
    samples: Sequence[GpuSample],
    t_start_ns: int,
    t_end_ns: int,
    columns: int,
    *,
    busy_of: Callable[[GpuSample], bool | None],
    lag_ns: int,
    default_interval_ns: int,
    max_interval_ns: int,
) -> list[float | None]:
    """The busy share (0..1) of each of `columns` equal slices of [t_start_ns, t_end_ns).

    A sample read at t covers [t - lag - interval, t - lag] (GPM readings trail the activity by
    `lag_ns`, as the detector places them). Its covered time is split over the columns it
    overlaps; the share is busy time over covered time. A column no reading covers is None
    (missing data, drawn blank), never 0.

    Args:
        samples: one GPU's samples in time order (samples outside the window are skipped).
        busy_of: True (busy), False (idle) or None (no reading) for a sample.
        lag_ns: how long before its time a reading's activity ended.
        default_interval_ns: the interval of a sample that does not say (the sampling period).
        max_interval_ns: the longest interval one sample may cover: a reading after a hole in
            the data does not paint the hole (the detector's no-data rule).
    """
    if columns <= 0:
        return []
    span = t_end_ns - t_start_ns
    if span <= 0:
        return [None] * columns
    cover = [0] * columns
    busy = [0] * columns
    for s in samples:
        end = s.t_mono_ns - lag_ns
        if end <= t_start_ns:
            continue
        is_busy = busy_of(s)
        if is_busy is None:
            continue
        d = s.interval_ns if s.interval_ns is not None and s.interval_ns > 0 else (
            default_interval_ns)
        if d > max_interval_ns:
            d = max_interval_ns
        start = end - d
        if start < t_start_ns:
            start = t_start_ns
        if end > t_end_ns:
            end = t_end_ns
        if end <= start:
            continue
        first = (start - t_start_ns) * columns // span
        last = min(columns - 1, (end - 1 - t_start_ns) * columns // span)
        for col in range(first, last + 1):
            c0 = t_start_ns + col * span // columns
            c1 = t_start_ns + (col + 1) * span // columns
            part = min(end, c1) - max(start, c0)
            if part > 0:
                cover[col] += part
                if is_busy:
                    busy[col] += part
    return [b / c if c > 0 else None for b, c in zip(busy, cover, strict=True)]


def gap_columns(
    gaps: Sequence[Gap],
    gpu: int,
    t_start_ns: int,
    t_end_ns: int,
    columns: int,
) -> list[GapKind | None]:
    """Mark each column that any gap of `gpu` overlaps, however short, with the gap's kind.

    An open gap (no end yet) runs to `t_end_ns`. `gaps` is the store's ledger view (retracted
    gaps are not in it). Drawn from the detector's list, not inferred from the reduced pixels,
    so what the chart marks is exactly what the detector decided.
    """
    marks: list[GapKind | None] = [None] * max(columns, 0)
    span = t_end_ns - t_start_ns
    if columns <= 0 or span <= 0:
        return marks
    for gap in gaps:
        if gap.gpu != gpu:
            continue
        g_start = gap.start_mono_ns
        g_end = gap.end_mono_ns if gap.end_mono_ns is not None else t_end_ns
        if g_end < t_start_ns or g_start > t_end_ns:
            continue
        first = max(0, (g_start - t_start_ns) * columns // span)
        last = min(columns - 1, (min(g_end, t_end_ns) - t_start_ns) * columns // span)
        for col in range(int(first), int(last) + 1):
            cur = marks[col]
            if cur is None or rank(gap.kind) > rank(cur):
                marks[col] = gap.kind
    return marks
