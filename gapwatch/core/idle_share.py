"""A GPU idling in gaps for more than a set share of the last minutes, of any kind: when to say it.

Who calls it: the `--on-event` hook (`gapwatch.engine.events.EventHook`, its `idle_high`
event), fed each gap once when it closes. The shipped Prometheus rule `GapwatchGpuIdleHigh`
says the same of `rate(gapwatch_gap_seconds_total[10m])` summed over kinds: both count a gap's
idle seconds when it closes, over the window that ends then (`[alerts] idle_share`,
`idle_window_s`). Pure: no clock but the gaps' own data time.

A BREAKDOWN is a page of its own (`breakdown_entered`, `GapwatchBreakdownSustained`): while a
GPU is in it the share is still kept and nothing is said, and what was said before it is over,
as the rule's `unless ... gapwatch_gpu_breakdown` ends its alert then; so a GPU that leaves
BREAKDOWN still idling is said again (the rule fires anew then). It stayed silent: what was
said before the BREAKDOWN held until the share fell under the threshold, which it never did.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from gapwatch.core.models import Gap

_NS = 1_000_000_000


@dataclass(frozen=True, slots=True)
class IdleHigh:
    """A GPU went over the share: `share` of the last `window_s` seconds of its data idle in
    gaps (over `threshold`), said at the closing of the gap that took it over, `t_wall_s`."""

    gpu: int
    share: float
    threshold: float
    window_s: float
    t_wall_s: float

    def words(self) -> str:
        """`GPU0 idle 43.2 % of the last 10 min in gaps (more than 25 %)`."""
        return (f"GPU{self.gpu} idle {self.share:.1%} of the last {self.window_s / 60:g} min "
                f"in gaps (more than {self.threshold:.0%})").replace("%", " %")


@dataclass(slots=True)
class _GpuShare:
    #: (end t_mono_ns, idle seconds) of the gaps that closed in the window, oldest first.
    closed: deque[tuple[int, float]] = field(default_factory=deque)
    idle_s: float = 0.0
    #: Said, and not yet back under the share nor in BREAKDOWN since: nothing more to say.
    said: bool = False


class IdleShareWatch:
    """Each GPU's share of its last `window_s` of data idle in closed gaps; `closed(gap)` says
    when it goes over `threshold` (once, until it falls back under it)."""

    def __init__(self, threshold: float, window_s: float) -> None:
        self.threshold = threshold
        self.window_s = window_s
        self._window_ns = int(window_s * _NS)
        self._gpus: dict[int, _GpuShare] = {}

    def held(self, gpu: int) -> None:
        """`gpu` is in BREAKDOWN: what was said of it is over (the rule's `unless` ends the
        alert), so a share still over the threshold once it is not held is said again."""
        g = self._gpus.get(gpu)
        if g is not None:
            g.said = False

    def closed(self, gap: Gap, *, held: bool = False) -> IdleHigh | None:
        """Count a gap that just closed (each once; a retracted or open one is not a gap
        closed); an `IdleHigh` when the share went over the threshold with it. `held` (the
        GPU in BREAKDOWN): counted, not said, and to say once it is not held. What was said
        before is over by `held()`, called as BREAKDOWN begins (`EventHook.listen`); nothing
        is said while held, so nothing is over again here."""
        if gap.retracted or gap.end_mono_ns is None or gap.end_s is None:
            return None
        g = self._gpus.setdefault(gap.gpu, _GpuShare())
        end = gap.end_mono_ns
        while g.closed and g.closed[0][0] <= end - self._window_ns:
            g.idle_s = max(0.0, g.idle_s - g.closed.popleft()[1])
        # The share only falls between two closings (gaps leave the window), so its lowest
        # since the last one is now, before this gap counts: under the threshold there, what
        # was said is over, and going over again is said again.
        if g.idle_s / self.window_s <= self.threshold:
            g.said = False
        g.closed.append((end, gap.duration_s))
        g.idle_s += gap.duration_s
        share = g.idle_s / self.window_s
        if share <= self.threshold or g.said or held:
            return None
        g.said = True
        return IdleHigh(gap.gpu, share, self.threshold, self.window_s, gap.end_s)
