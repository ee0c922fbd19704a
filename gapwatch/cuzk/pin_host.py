"""The host's RAM when cuzk's pinned pool failed to pin: its readings nearest each failed pin.

Who calls it: `gapwatch.cuzk.pipeline.PipelineFacts`, fed every host sample (the detector hands
each to its prover, `Prover.feed_host`), which tells it each pool failure line (`alloc_failed`,
`checkout_failed`) and puts `at_failures` in its view as `PoolState.host`;
`gapwatch.cuzk.pin_need` reads it (was RAM short when pinning failed, and is the budget above
the host's RAM?). Pure, bounded: the last `KEPT` readings.

One failed pin, one failure: upstream writes a failed pin as `cudaHostAlloc failed size_gib
cuda_err` (pinned_pool.rs:64), `pinned pool: cudaHostAlloc failed` (:204), then `pinned pool
checkout FAILED` (pipeline.rs:306), in one thread: `PinnedAbcBuffers::checkout` stops at its
first failed allocation, so each checkout FAILED has exactly one failed cudaHostAlloc before it.
The pin is matched at its first line read, the checkout line where its alloc lines were not.

Why: upstream does not say why cudaHostAlloc fails (cuzk-upstream-paths.md 2.1, 2.3); its
failures fall back to pageable a/b/c with no word of the cause but the CUDA error. Want of RAM
is one cause the host's own readings can rule in or out: the sampler reads /proc/meminfo each
tick (`gapwatch.sources.host`), MemAvailable and the share in use, which give MemTotal
(`gapwatch.core.readings.mem_total_bytes`). A failed pin is matched with the reading nearest
it in time within `NEAR_S`: a report feeds a line once the data's time passes it, so the reading
just before it; live, a line comes a little after the readings of its moment. A pin with no
reading that near (one of a --log before the recording began, or after it ended) is counted as
such (`HostAtFailures.unread`): RAM is ruled out only where none is (`pin_need.ram_ruled_out`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace

from gapwatch.core.models import HostSample
from gapwatch.core.readings import mem_total_bytes, reading

#: Readings kept to match failure lines with: 6.4 s at the default 100 ms, more than a line
#: read live lags its moment.
KEPT = 64
#: A failed pin's reading is one this close to it in time, or none: the host sampler reads
#: every 100 ms by default, and a reading further off says little of the moment of the pin.
NEAR_S = 1.0
#: A `pinned pool checkout FAILED` line this close to an unpaired `cudaHostAlloc failed` line of
#: its stream is that line's pin: upstream writes the two one after the other in one thread
#: (pinned_pool.rs:64, 204, then pipeline.rs:306, microseconds apart); a second is room for the
#: clocks' rounding.
SAME_PIN_S = 1.0


@dataclass(frozen=True, slots=True)
class HostAtFailures:
    """What the host's readings said at the pool's failed pins."""

    #: The least MemAvailable read near a failed pin (bytes), and that reading's time; None:
    #: no failed pin had a reading near it.
    least_available_bytes: float | None
    least_at_s: float | None
    #: The host's MemTotal (bytes), from the reading with the most available of all fed (the
    #: best-conditioned: `mem_total_bytes`); None: no reading gave it.
    mem_total_bytes: float | None
    #: Failed pins with a reading within `NEAR_S`, and without (one each, however many of its
    #: lines were read: `HostMemory.alloc_failed`, `checkout_failed`).
    read: int
    unread: int


class HostMemory:
    """The host's recent memory readings, and what they said at each failed pin."""

    __slots__ = ("_allocs", "_failures", "_recent", "_total", "_total_from")

    def __init__(self) -> None:
        #: (time, MemAvailable bytes) of the latest readings that had one.
        self._recent: deque[tuple[float, float]] = deque(maxlen=KEPT)
        #: MemTotal and the MemAvailable of the reading it came from (the most seen).
        self._total: float | None = None
        self._total_from = -1.0
        #: What the readings said at the failed pins so far (MemTotal left out: `at_failures`
        #: gives the best-conditioned); None: no pin failed yet.
        self._failures: HostAtFailures | None = None
        #: (stream, time) of `cudaHostAlloc failed` lines whose pin's checkout line has not
        #: come yet: that line is the same pin, already matched.
        self._allocs: deque[tuple[str, float]] = deque(maxlen=KEPT)

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

    @property
    def at_failures(self) -> HostAtFailures | None:
        """What the readings said at the failed pins so far, with the host's MemTotal; None
        where no pin failed, or no host sample was ever fed (a log read alone: nothing to say
        of the host). A pin that failed before the first sample, or after the last, counts as
        one without a reading (`unread`)."""
        failures = self._failures
        if failures is None or not self.seen:
            return None
        return replace(failures, mem_total_bytes=self._total)

    def alloc_failed(self, t_s: float, stream: str) -> None:
        """A `cudaHostAlloc failed` line at `t_s` (pinned_pool.rs:64), a failed pin's first
        line: the pin matched here; its `pinned pool checkout FAILED` line, which follows in the
        same thread (pipeline.rs:306), is then the same pin (`checkout_failed`)."""
        self._allocs.append((stream, t_s))
        self._failure(t_s)

    def checkout_failed(self, t_s: float, stream: str) -> None:
        """A `pinned pool checkout FAILED` line at `t_s` (pipeline.rs:306), a failed pin's last
        line: the same pin as the earliest unpaired `cudaHostAlloc failed` line of its stream
        within `SAME_PIN_S` (matched there); else a pin whose alloc line was not read (its
        target filtered out), matched here."""
        allocs = self._allocs
        for i, (stream_of, at) in enumerate(allocs):
            if stream_of == stream and abs(t_s - at) <= SAME_PIN_S:
                del allocs[i]
                return
        self._failure(t_s)

    def _failure(self, t_s: float) -> None:
        """A failed pin at `t_s`: folded into the failures with the reading nearest it (none
        further than `NEAR_S`)."""
        near = _nearest(self._recent, t_s)
        was = self._failures or HostAtFailures(None, None, None, 0, 0)
        least, at = was.least_available_bytes, was.least_at_s
        if near is not None and (least is None or near[1] < least):
            at, least = near
        self._failures = HostAtFailures(least, at, None, was.read + (near is not None),
                                        was.unread + (near is None))


def _nearest(recent: deque[tuple[float, float]], t_s: float) -> tuple[float, float] | None:
    """The reading of `recent` (in time order) nearest `t_s`, none further than `NEAR_S`;
    of two as near, the earlier. Scanned from the newest back, stopping at the first reading
    more than `NEAR_S` before `t_s` (every older one is further): a failed pin is near the
    newest readings, so a few are looked at, not all `KEPT` (a min over all of them cost
    ~21 key calls a failure, 1.2 M an hour of the bench's log)."""
    best: tuple[float, float] | None = None
    best_d = NEAR_S
    for r in reversed(recent):
        d = r[0] - t_s
        if d < -NEAR_S:
            break
        if d < 0:
            d = -d
        if d <= best_d:
            best, best_d = r, d
    return best
