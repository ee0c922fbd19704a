"""What each always-on chart shows, one cell per display column: the busy share of the GPU's time
with the detector's gaps marked, and the PCIe rates as a share of the link.

Who calls it: `widgets.overview.Overview` builds its `StripChart`s with these functions, and the
detail chart reuses `busy_cells`, the header `last_column_rates`. Pure (a View in, cells out),
so the pictures' rules are unit-tested without Textual.

- Busy: `ui.reduce.busy_shares` with the detector's own rule for "busy" and its placement of GPM
  readings (`core.readings`), and `ui.reduce.gap_columns` for the marks: every column that any
  gap of the detector's list touches is drawn as a gap column, however short the gap.
- RX/TX: the highest rate in the column, as a share of the GPU's link capacity. A fixed scale:
  a pageable copy trickling at 4 GB/s (7 % of a Gen5 x16 link) reads as the near-empty link it
  is, where a scale fitted to the window's peak drew it near full.

Columns sit on a fixed time grid (`View.grid`), and a column whose time is older than the newest
reading by more than a reading's longest interval can no longer change: a `SeriesCache` keeps
those values between redraws, so a redraw reduces only the last few columns' samples instead of
the whole window's (10 minutes at 10 Hz is 6000 samples). The gap marks are recomputed every
time (an open gap grows, a new one starts in the past), which is cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from gapwatch.core.models import GpuSample
from gapwatch.core.readings import activity_lag_ns, busy_reading, reading, reports_sm
from gapwatch.ui.blocks import Cell
from gapwatch.ui.reduce import busy_shares, gap_columns, reduce_minmax
from gapwatch.ui.view import View


def _uses_sm(view: View, samples: Sequence[GpuSample]) -> bool:
    info = view.gpu_info(view.gpu)
    if reports_sm(info.sm_source):
        return True
    return any(s.sm_active_pct is not None for s in samples)


def _lag_ns(view: View, samples: Sequence[GpuSample]) -> int:
    source = view.gpu_info(view.gpu).sm_source or (samples[-1].sm_source if samples else None)
    return activity_lag_ns(source, view.detector)


@dataclass
class SeriesCache:
    """Per-column values of one chart that can no longer change, from the last redraw."""

    key: tuple[object, ...] | None = None
    end_ns: int = 0
    values: list[float | None] = field(default_factory=list)
    #: Columns that end at or before this time were final when `values` were computed.
    final_before_ns: int = 0

    def values_for(
        self,
        key: tuple[object, ...],
        t_start_ns: int,
        t_end_ns: int,
        columns: int,
        compute: Callable[[int, int, int], list[float | None]],
        final_before_ns: int,
    ) -> list[float | None]:
        """The values of `columns` grid columns; `compute(t_a, t_end, n)` gives the last `n`."""
        col_ns = (t_end_ns - t_start_ns) // columns if columns > 0 else 0
        values: list[float | None] | None = None
        if (key == self.key and col_ns > 0 and len(self.values) == columns
                and t_end_ns >= self.end_ns and (t_end_ns - self.end_ns) % col_ns == 0):
            shift = (t_end_ns - self.end_ns) // col_ns
            if shift < columns:
                first = max(0, min(columns - shift, (self.final_before_ns - t_start_ns) // col_ns))
                values = self.values[shift:shift + first]
                values += compute(t_start_ns + first * col_ns, t_end_ns, columns - first)
        if values is None:
            values = compute(t_start_ns, t_end_ns, columns)
        self.key, self.end_ns, self.values = key, t_end_ns, values
        self.final_before_ns = final_before_ns
        return values


def busy_cells(view: View, columns: int, t_start_ns: int, t_end_ns: int,
               cache: SeriesCache | None = None) -> list[Cell]:
    """Busy share of each column of the selected GPU, with the kind of any gap it holds."""
    samples = view.samples_since(view.gpu, t_start_ns)
    uses_sm = _uses_sm(view, samples)
    config = view.detector
    lag = _lag_ns(view, samples)
    max_interval = int(view.period_ns * config.nodata_after_periods)

    def compute(t_a: int, t_b: int, n: int) -> list[float | None]:
        return busy_shares(
            view.samples_since(view.gpu, t_a), t_a, t_b, n,
            busy_of=lambda s: busy_reading(s, config, uses_sm),
            lag_ns=lag, default_interval_ns=view.period_ns, max_interval_ns=max_interval,
        )  # fmt: skip

    shares = _cached(cache, ("busy", view.gpu, uses_sm, lag, max_interval), samples, lag,
                     max_interval, t_start_ns, t_end_ns, columns, compute)
    marks = gap_columns(view.snap.gaps, view.gpu, t_start_ns, t_end_ns, columns)
    return list(zip(shares, marks, strict=True))


def _cached(
    cache: SeriesCache | None, key: tuple[object, ...], samples: Sequence[GpuSample], lag: int,
    max_interval: int, t_start_ns: int, t_end_ns: int, columns: int,
    compute: Callable[[int, int, int], list[float | None]],
) -> list[float | None]:
    if cache is None:
        return compute(t_start_ns, t_end_ns, columns)
    newest = samples[-1].t_mono_ns if samples else t_start_ns
    # A later reading can still reach back one longest interval (a stale GPM reading's interval
    # is carried by the next one) from where the newest one was placed.
    final_before = newest - lag - max_interval
    return cache.values_for(key, t_start_ns, t_end_ns, columns, compute, final_before)


def _rate_cells(view: View, columns: int, t_start_ns: int, t_end_ns: int, rx: bool,
                cache: SeriesCache | None) -> list[Cell]:
    samples = view.samples_since(view.gpu, t_start_ns)
    lag = _lag_ns(view, samples)
    link = view.link_bytes_per_s(view.gpu)

    def compute(t_a: int, t_b: int, n: int) -> list[float | None]:
        points = [
            (s.t_mono_ns - lag, reading(s.pcie_rx_bytes_per_s if rx else s.pcie_tx_bytes_per_s))
            for s in view.samples_since(view.gpu, t_a)
        ]
        return [None if c.hi is None else c.hi / link for c in reduce_minmax(points, t_a, t_b, n)]

    values = _cached(cache, ("rx" if rx else "tx", view.gpu, lag, link), samples, lag,
                     view.period_ns, t_start_ns, t_end_ns, columns, compute)
    return [(v, None) for v in values]


def last_column_rates(view: View, gpu: int, columns: int) -> tuple[float | None, float | None]:
    """RX and TX (bytes/s) of `gpu` as the charts' last column shows them (its highest reading)
    on a grid of `columns`: the header's figures, so that they agree with the chart beside
    them (the latest reading alone read 0.00 GB/s between the copy bursts the chart showed)."""
    t_start, t_end = view.grid(columns)
    col_ns = (t_end - t_start) // max(1, columns)
    mine = replace(view, gpu=gpu)
    link = mine.link_bytes_per_s(gpu)
    start = _newest_drawn_column(mine, t_end - col_ns, col_ns)
    rx = rx_cells(mine, 1, start, start + col_ns)[0][0]
    tx = tx_cells(mine, 1, start, start + col_ns)[0][0]
    return (None if rx is None else rx * link), (None if tx is None else tx * link)


def _newest_drawn_column(view: View, last_start_ns: int, col_ns: int) -> int:
    """Where the column starts that holds the GPU's newest reading as the charts draw it:
    the last column (from `last_start_ns`), or the one before it for the first `lag` of a
    column, when a GPM reading drawn `lag` before it was read still falls there (the last
    column was empty and the header read "RX n/a" in 3 of 9 captures of a steady H100 load).
    A reading older than that is not stepped back to: readings that stopped read n/a."""
    samples = view.samples(view.gpu)
    if not samples:
        return last_start_ns
    drawn_ns = samples[-1].t_mono_ns - _lag_ns(view, samples)
    if last_start_ns - col_ns <= drawn_ns < last_start_ns:
        return last_start_ns - col_ns
    return last_start_ns


def rx_cells(view: View, columns: int, t_start_ns: int, t_end_ns: int,
             cache: SeriesCache | None = None) -> list[Cell]:
    """Highest host-to-device rate of each column, as a share of the link."""
    return _rate_cells(view, columns, t_start_ns, t_end_ns, True, cache)


def tx_cells(view: View, columns: int, t_start_ns: int, t_end_ns: int,
             cache: SeriesCache | None = None) -> list[Cell]:
    """Highest device-to-host rate of each column, as a share of the link."""
    return _rate_cells(view, columns, t_start_ns, t_end_ns, False, cache)
