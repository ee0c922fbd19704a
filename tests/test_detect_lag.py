"""GPM lag correction and the live busy fraction.

GPM readings describe activity that ended before they were read; the detector places GPM samples
`gpm_lag_ms` earlier. Other sources (the simulator) have no such lag and are left alone. The
store's busy fraction follows the data every second instead of freezing at the last state change.
"""

from __future__ import annotations

from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import GapDetector
from gapwatch.core.models import Gap, GpuInfo, GpuSample
from gapwatch.engine.session import Session, default_header
from gapwatch.engine.store import SeriesStore

P = 100_000_000  # 100 ms


def _stream(source: str) -> list[GpuSample]:
    """2 s busy, 1 s idle with PCIe trickling, 2 s busy: one gap from t=2.0 s to t=3.0 s."""
    out = []
    for k in range(1, 51):
        t = k * P
        busy = not (20 < k <= 30)
        out.append(GpuSample(0, t, 1000.0 + t / 1e9, P, 95.0 if busy else 0.0, None,
                             2.5e9, 1e8, sm_source=source, pcie_source=source))  # type: ignore[arg-type]
    return out


def _gaps(source: str, lag_ms: float) -> list[Gap]:
    det = GapDetector(DetectorConfig(gpm_lag_ms=lag_ms),
                      [GpuInfo(index=0, link_bytes_per_s=63e9, sm_source=source)])  # type: ignore[arg-type]
    out = [e for s in _stream(source) for e in det.feed_gpu(s)]
    return [g for g in out if isinstance(g, Gap) and g.end_s is not None]


def test_gpm_gap_edges_move_earlier_by_the_lag() -> None:
    plain = _gaps("gpm", 0)
    shifted = _gaps("gpm", 100)
    assert len(plain) == len(shifted) == 1
    assert abs((plain[0].start_s - shifted[0].start_s) - 0.1) < 1e-6
    assert abs((plain[0].end_s - shifted[0].end_s) - 0.1) < 1e-6  # type: ignore[operator]
    assert abs(plain[0].duration_s - shifted[0].duration_s) < 1e-6


def test_sources_without_lag_are_not_shifted() -> None:
    assert [(g.start_s, g.end_s) for g in _gaps("sim", 0)] == \
        [(g.start_s, g.end_s) for g in _gaps("sim", 100)]


def test_store_busy_fraction_follows_the_data_between_state_changes() -> None:
    info = GpuInfo(index=0, link_bytes_per_s=63e9, sm_source="sim")
    store = SeriesStore([info], 0.1)
    det = GapDetector(DetectorConfig(), [info], period_s=0.1)
    session = Session(default_header("test", [info], 100.0), store, detector=det)
    seen = []
    for s in _stream("sim"):
        session.on_gpu_samples([s])
        seen.append(store.snapshot().busy_share(0))
    # Idle from 2 s to 3 s: the busy share falls during the idle second, then rises again,
    # while the state changes at most a couple of times.
    values = [v for v in seen if v is not None]
    assert min(values) < 0.75 and values[-1] > min(values)
    assert len(set(values)) >= 4
