"""What each always-on chart shows, one cell per display column: the busy share of the GPU's time
with the detector's gaps marked, and the PCIe rates as a share of the link.

Who calls it: `widgets.overview.Overview` builds its `StripChart`s with these functions, and the
detail chart reuses `busy_cells`. Pure (a View in, cells out), so the pictures' rules are
unit-tested without Textual.

- Busy: `ui.reduce.busy_shares` with the detector's own rule for "busy" and its placement of GPM
  readings (`core.readings`), and `ui.reduce.gap_columns` for the marks: every column that any
  gap of the detector's list touches is drawn as a gap column, however short the gap.
- RX/TX: the highest rate in the column, as a share of the GPU's link capacity. A fixed scale:
  a pageable copy trickling at 4 GB/s (7 % of a Gen5 x16 link) reads as the near-empty link it
  is, where a scale fitted to the window's peak drew it near full.
"""

from __future__ import annotations

from collections.abc import Sequence

from gapwatch.core.models import GpuSample
from gapwatch.core.readings import activity_lag_ns, busy_reading, reading
from gapwatch.ui.blocks import Cell
from gapwatch.ui.reduce import busy_shares, gap_columns, reduce_minmax
from gapwatch.ui.view import View

#: Signal sources that report SM activity: a sample of such a GPU without it is missing data.
_SM_SOURCES = ("gpm", "sim", "trace")


def _uses_sm(view: View, samples: Sequence[GpuSample]) -> bool:
    info = view.gpu_info(view.gpu)
    if info.sm_source in _SM_SOURCES:
        return True
    return any(s.sm_active_pct is not None for s in samples)


def _lag_ns(view: View, samples: Sequence[GpuSample]) -> int:
    source = view.gpu_info(view.gpu).sm_source or (samples[-1].sm_source if samples else None)
    return activity_lag_ns(source, view.detector)


def busy_cells(view: View, columns: int, t_start_ns: int, t_end_ns: int) -> list[Cell]:
    """Busy share of each column of the selected GPU, with the kind of any gap it holds."""
    samples = view.samples_since(view.gpu, t_start_ns)
    uses_sm = _uses_sm(view, samples)
    config = view.detector
    shares = busy_shares(
        samples, t_start_ns, t_end_ns, columns,
        busy_of=lambda s: busy_reading(s, config, uses_sm),
        lag_ns=_lag_ns(view, samples),
        default_interval_ns=view.period_ns,
        max_interval_ns=int(view.period_ns * config.nodata_after_periods),
    )  # fmt: skip
    marks = gap_columns(view.snap.gaps, view.gpu, t_start_ns, t_end_ns, columns)
    return list(zip(shares, marks, strict=True))


def _rate_cells(view: View, columns: int, t_start_ns: int, t_end_ns: int, rx: bool) -> list[Cell]:
    samples = view.samples_since(view.gpu, t_start_ns)
    lag = _lag_ns(view, samples)
    link = view.link_bytes_per_s(view.gpu)
    points = [
        (s.t_mono_ns - lag, reading(s.pcie_rx_bytes_per_s if rx else s.pcie_tx_bytes_per_s))
        for s in samples
    ]
    cols = reduce_minmax(points, t_start_ns, t_end_ns, columns)
    return [(None if c.hi is None else c.hi / link, None) for c in cols]


def rx_cells(view: View, columns: int, t_start_ns: int, t_end_ns: int) -> list[Cell]:
    """Highest host-to-device rate of each column, as a share of the link."""
    return _rate_cells(view, columns, t_start_ns, t_end_ns, rx=True)


def tx_cells(view: View, columns: int, t_start_ns: int, t_end_ns: int) -> list[Cell]:
    """Highest device-to-host rate of each column, as a share of the link."""
    return _rate_cells(view, columns, t_start_ns, t_end_ns, rx=False)
