"""The host's RAM when cuzk's pinned pool failed to pin: its readings nearest each failure line.

Who calls it: `gapwatch.cuzk.pipeline.PipelineFacts`, fed every host sample (the detector hands
each to its prover, `Prover.feed_host`), which asks `failure` at each pool failure line and keeps
the answer as `PoolState.host`; `gapwatch.cuzk.pin_need` reads it (was RAM short when pinning
failed, and is the budget above the host's RAM?). Pure, bounded: the last `KEPT` readings.

Why: upstream does not say why cudaHostAlloc fails (cuzk-upstream-paths.md 2.1, 2.3); its
failures fall back to pageable a/b/c with no word of the cause but the CUDA error. Want of RAM
is one cause the host's own readings can rule in or out: the sampler reads /proc/meminfo each
tick (`gapwatch.sources.host`), MemAvailable and the share in use, which give MemTotal
(`gapwatch.core.readings.mem_total_bytes`). A failure line is matched with the reading nearest
it in time within `NEAR_S`: a report feeds a line once the data's time passes it, so the reading
just before it; live, a line comes a little after the readings of its moment.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from gapwatch.core.models import HostSample
from gapwatch.core.readings import mem_total_bytes, reading

#: Readings kept to match failure lines with: 6.4 s at the default 100 ms, more than a line
#: read live lags its moment.
KEPT = 64
#: A failure line's reading is one this close to it in time, or none: the host sampler reads
#: every 100 ms by default, and a reading further off says little of the moment of the pin.
NEAR_S = 1.0


@dataclass(frozen=True, slots=True)
class HostAtFailures:
    """What the host's readings said at the pool's failure lines."""

    #: The least MemAvailable read near a failure line (bytes), and that reading's time; None:
    #: no failure line had a reading near it.
    least_available_bytes: float | None
    least_at_s: float | None
    #: The host's MemTotal (bytes), from the reading with the most available of all fed (the
    #: best-conditioned: `mem_total_bytes`); None: no reading gave it.
    mem_total_bytes: float | None
    #: Failure lines with a reading within `NEAR_S`, and without.
    read: int
    unread: int


class HostMemory:
    """The host's recent memory readings, and what they said at each pool failure line."""

    __slots__ = ("_recent", "_total", "_total_from", "at_failures")

    def __init__(self) -> None:
        #: (time, MemAvailable bytes) of the latest readings that had one.
        self._recent: deque[tuple[float, float]] = deque(maxlen=KEPT)
        #: MemTotal and the MemAvailable of the reading it came from (the most seen).
        self._total: float | None = None
        self._total_from = -1.0
        #: What the readings said at the failure lines so far; None: no line asked yet.
        self.at_failures: HostAtFailures | None = None

    def feed(self, sample: HostSample) -> None:
        """Take a host sample: its MemAvailable kept (a sample without one is passed over), its
        MemTotal where it is the best-conditioned yet."""
        available = reading(sample.mem_available_bytes)
        if available is None:
            return
        self._recent.append((sample.t_wall_s, available))
        if available > self._total_from:
            total = mem_total_bytes(sample.mem_used_pct, available)
            if total is not None:
                self._total, self._total_from = total, available

    @property
    def seen(self) -> bool:
        """Any host sample with MemAvailable was fed."""
        return self._total_from >= 0 or bool(self._recent)

    def failure(self, t_s: float) -> HostAtFailures:
        """A pool failure line at `t_s`: folded into `at_failures` with the reading nearest it
        (none further than `NEAR_S`), which it returns."""
        near = min(self._recent, key=lambda r: abs(r[0] - t_s), default=None)
        if near is not None and abs(near[0] - t_s) > NEAR_S:
            near = None
        was = self.at_failures or HostAtFailures(None, None, None, 0, 0)
        least, at = was.least_available_bytes, was.least_at_s
        if near is not None and (least is None or near[1] < least):
            at, least = near
        self.at_failures = HostAtFailures(least, at, self._total,
                                          was.read + (near is not None),
                                          was.unread + (near is None))
        return self.at_failures
