"""What every widget is given on a redraw: one store snapshot plus the view's own choices.

Who builds it: `GapwatchApp` on its redraw timer (attributes down). Widgets read it and never
touch the store, the session or a clock: this keeps them deterministic (snapshot tests) and makes
"pause" a matter of not handing them a new View.

The right edge of the charts is the newest reading in the snapshot (`t_end_ns`), not the wall
clock: a replay at any speed and a test with fixed data draw the same picture, and a source that
stops is seen as blank columns for the GPUs that stopped while the others go on.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

from gapwatch.core.bounds import DEFAULT_PERIOD_NS
from gapwatch.core.config import DetectorConfig
from gapwatch.core.models import (
    STATE_SEVERITY,
    ChainState,
    GpuInfo,
    GpuSample,
    HostSample,
    StateChange,
)
from gapwatch.core.store_snapshot import StoreSnapshot

_T_MONO = attrgetter("t_mono_ns")


@dataclass(frozen=True, slots=True)
class View:
    snap: StoreSnapshot
    #: Index of the GPU the charts show (`g` cycles).
    gpu: int
    window_s: float
    t_end_ns: int
    #: The detector's thresholds: what counts as busy, the link capacity to assume when the
    #: header does not know it.
    detector: DetectorConfig
    #: The sampling period (a sample that does not say its interval covers this long).
    period_ns: int = DEFAULT_PERIOD_NS
    paused: bool = False
    #: What happened since the view was paused (e.g. "GPU0 entered BREAKDOWN"), shown in the banner.
    note: str = ""
    #: The source has ended (end of a replay or of a timed run): nothing more will come.
    ended: bool = False
    #: What ended, in words ("replay of rec.jsonl.gz", "sim:pageable"), for the banner.
    source: str = ""

    @property
    def t_start_ns(self) -> int:
        return self.t_end_ns - int(self.window_s * 1e9)

    def grid(self, columns: int) -> tuple[int, int]:
        """The chart window `[start, end)` snapped to a grid of `columns` fixed-width columns.

        The right edge is the newest time rounded up to the next column boundary, so columns
        keep their time slices from one redraw to the next: a redraw that adds a sample to the
        last column leaves every other column's pixels as they were, and a chart whose pixels
        did not change is not repainted at all (the compositor is the costly part).
        """
        window_ns = int(self.window_s * 1e9)
        col_ns = max(1, -(-window_ns // max(1, columns)))
        end = -(-self.t_end_ns // col_ns) * col_ns
        return end - col_ns * max(1, columns), end

    def gpu_info(self, gpu: int) -> GpuInfo:
        for info in self.snap.gpus:
            if info.index == gpu:
                return info
        return GpuInfo(index=gpu)

    def link_bytes_per_s(self, gpu: int) -> float:
        return self.detector.link_or_default(self.gpu_info(gpu).link_bytes_per_s)

    def samples(self, gpu: int) -> tuple[GpuSample, ...]:
        return self.snap.gpu_samples.get(gpu, ())

    def samples_since(self, gpu: int, t_start_ns: int) -> Sequence[GpuSample]:
        """The GPU's samples from `t_start_ns` on. The store keeps 10 min of history, in time
        order as the sources deliver it: a bisection finds the window instead of a scan of the
        whole history on every redraw (the charts ignore anything outside their window)."""
        samples = self.samples(gpu)
        return samples[bisect_left(samples, t_start_ns, key=_T_MONO):]

    def latest(self, gpu: int) -> GpuSample | None:
        samples = self.samples(gpu)
        return samples[-1] if samples else None

    def state(self, gpu: int) -> StateChange | None:
        return self.snap.states.get(gpu)

    def state_name(self, gpu: int) -> ChainState:
        """The GPU's chaining state in one word (NO_DATA before the detector said anything)."""
        return self.snap.state_name(gpu)

    def severity(self, gpu: int) -> int:
        return STATE_SEVERITY[self.state_name(gpu)]

    def latest_host(self) -> HostSample | None:
        return self.snap.host_samples[-1] if self.snap.host_samples else None

    def gpu_indices(self) -> list[int]:
        indices = {info.index for info in self.snap.gpus} | set(self.snap.gpu_samples)
        return sorted(indices)


def newest_time_ns(snap: StoreSnapshot) -> int | None:
    """The newest reading's monotonic time across GPUs and host, or None for an empty store."""
    newest: int | None = None
    for samples in snap.gpu_samples.values():
        if samples and (newest is None or samples[-1].t_mono_ns > newest):
            newest = samples[-1].t_mono_ns
    if snap.host_samples:
        t = snap.host_samples[-1].t_mono_ns
        newest = t if newest is None or t > newest else newest
    return newest
