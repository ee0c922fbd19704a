"""The payoff of closing idle time: one rule for every figure gapwatch gives as "if these gaps
were closed".

Work is taken as fixed: closing `closed_s` of idle time shrinks the working span by that much,
so the busy fraction becomes busy / (span - closed) and throughput scales by
span / (span - closed). An upper bound (`PAYOFF_METHOD` says so in words).

Copies are work too: the span never shrinks below the time the GPU's link needs to carry the
bytes it carried in it (`link_floor_s`: PCIe RX and TX each at the link's speed). The H200
transfer-bound run's gaps copied at 94 % of the link, and closing them was said "~4.48x",
222 GB/s of copies over a 63 GB/s link; bounded by its floor it is ~1.2x, said as the link's
limit (`IfClosed.link_limited`, `gain_words`).

Who calls it: the report's payoff per kind and per GPU (`gapwatch.offline.payoff`), each
advice's payoff (`gapwatch.cuzk.advice`, the caller gives the span), the dashboard's gap detail
and the snapshot (throughput only: they do not sum busy time), the verdict (`cuzk.why_now`).

A figure is said with what it rests on (`gain_words`; a recording's by `gpu_time_words`): the
span it is over and the gaps it closes. One worked out over the live window at the moment a
GPU enters BREAKDOWN rests on the 2 gaps that tipped it, and read bare ("payoff ~1.0x") it said
there was nothing to gain while the same recording's report, over minutes of the breakdown,
said 1.58x: every output that says a payoff (the dashboard's headline, `--on-event`,
summary.md, the report's Payoff section and advice, `compare`'s prediction, the alert's `why`)
says it by `gain_words`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, NamedTuple

from gapwatch.core.readings import interval_belied

if TYPE_CHECKING:
    from gapwatch.core.models import GpuSample

PAYOFF_METHOD = (
    "Work is taken as fixed: closing the gaps of a kind removes their idle time from the working "
    "span (first to last busy reading), so busy fraction becomes busy / (span - gap time) and "
    "throughput scales by span / (span - gap time). Copies are work too: the span never "
    "shrinks below the time the GPU's link needs for the bytes it carried in it (the larger "
    "of PCIe RX and TX over the link's speed, each GPU's own link; no PCIe reading, no such "
    "floor), and a figure that floor limits says so. Upper bound: assumes compute itself "
    "does not slow down and that nothing else (synthesis, a second bottleneck) becomes the "
    "limit; idle stretches shorter than min_gap_ms stay."
)


@dataclass(frozen=True, slots=True)
class IfClosed:
    """What closing `idle_s` of idle time would give."""

    idle_s: float
    #: The busy share of the shortened span; None when the busy time is not known or the
    #: span would be gone.
    busy_fraction: float | None
    #: span / (span - idle); None when the span is empty or the idle time fills it.
    throughput_gain: float | None
    #: The working span the figure is over (seconds; of several GPUs, their sum).
    span_s: float = 0.0
    #: How many gaps `idle_s` is (None: not counted). Said with the figure
    #: (`gpu_time_words`), not in `json()`: an advice's JSON has its own `gaps`.
    gaps: int | None = None
    #: The shortest the span can be, the time its link needs for the bytes it carried
    #: (`link_floor_s`; of several GPUs, their sum); None: no PCIe reading in the span, or
    #: the caller gives none.
    link_floor_s: float | None = None
    #: The floor, not the gaps, set the figure: closing them would leave less than the link
    #: needs. Said with the figure (`gain_words`'s `link_floor_s`).
    link_limited: bool = False
    #: Of several GPUs, those whose own link set the floor (`LinkFloor.limited_by`: each GPU
    #: and the seconds its bytes need, slowest first): the words name them, as
    #: `link_floor_s` is then the shortest their spans summed can be, no GPU's bytes. Empty:
    #: one GPU's figure (its bytes), or no link limited.
    limited_by: tuple[tuple[int, float], ...] = ()

    @property
    def link_limit_s(self) -> float | None:
        """The floor where it set the figure (what `gain_words` says), else None."""
        return self.link_floor_s if self.link_limited else None

    def json(self) -> dict[str, float | bool | None]:
        """As the report's and the advice's JSON give it (docs/detection.md, docs/advice.md)."""
        return {"idle_s": self.idle_s, "busy_fraction": self.busy_fraction,
                "throughput_gain": self.throughput_gain, "span_s": self.span_s,
                "link_floor_s": self.link_floor_s, "link_limited": self.link_limited}


def limited_by_json(limited_by: tuple[tuple[int, float], ...]) -> list[dict[str, float]]:
    """`IfClosed.limited_by` as `compare`'s JSON gives it beside `link_limit_s`: `[{"gpu": 0,
    "link_floor_s": 95.0}]`, slowest first (docs/compare.md)."""
    return [{"gpu": gpu, "link_floor_s": need_s} for gpu, need_s in limited_by]


def link_floor_s(rx_bytes: float | None, tx_bytes: float | None,
                 link_bytes_per_s: float) -> float | None:
    """The shortest a span can be that carried `rx_bytes` host-to-device and `tx_bytes`
    device-to-host over a link of `link_bytes_per_s` each way (PCIe is full duplex: the larger
    direction sets it). None where neither direction has a reading (never 0: a span with no
    PCIe reading has no floor, not one of nothing) or the link is not a positive number.

    Who calls it: `GpuTotals.link_floor_s` (the detector's bytes over a GPU's working span)."""
    if not (link_bytes_per_s > 0 and math.isfinite(link_bytes_per_s)):
        return None
    read = [b for b in (rx_bytes, tx_bytes) if b is not None and math.isfinite(b) and b >= 0]
    return max(read) / link_bytes_per_s if read else None


#: A spacing between samples past this many of their median is a hole, not traffic measured:
#: the detector's default `nodata_after_periods` (its own spacing rule; `core.config`).
HOLE_SPACINGS: Final = 3.0


def samples_link_floor_s(samples: Iterable[GpuSample],
                         link_bytes_per_s: float | None) -> float | None:
    """The link's floor (`link_floor_s`) under the span of one GPU's samples, first to last in
    time order: each later sample's PCIe bytes, its rate x the time it covers (its reading's
    interval, never more than the time since the sample before it; a spacing past
    `HOLE_SPACINGS` of the samples' median is a hole, as the detector's default reads it, and
    its reading covers one median spacing: a reading after a 60 s sampler stall counted over
    all of it said the link needed 57 s; the first one's lies before the span). None: no rate
    reading among them, or no link (None: not known).

    Who calls it: the payoffs worked out over the samples in memory, not the detector's
    (summary.md's, `gapwatch.sinks.snapshot`; the gap detail's, `gapwatch.ui.gap_detail`)."""
    rx: float | None = None
    tx: float | None = None
    kept = list(samples)
    spacings = sorted(b.t_mono_ns - a.t_mono_ns for a, b in zip(kept, kept[1:], strict=False)
                      if b.t_mono_ns > a.t_mono_ns)
    typical = spacings[len(spacings) // 2] if spacings else 0
    prev: int | None = None
    for s in kept:
        if prev is not None and s.t_mono_ns > prev:
            cover = s.t_mono_ns - prev
            if cover > HOLE_SPACINGS * typical:
                cover = typical
            if s.interval_ns is not None and 0 < s.interval_ns < cover \
                    and not interval_belied(s.interval_ns, typical, cover):
                cover = s.interval_ns
            r, x = s.pcie_rx_bytes_per_s, s.pcie_tx_bytes_per_s
            if r is not None and r >= 0:  # None, NaN or negative: no reading
                rx = (rx or 0.0) + r * cover / 1e9
            if x is not None and x >= 0:
                tx = (tx or 0.0) + x * cover / 1e9
        prev = s.t_mono_ns
    return None if link_bytes_per_s is None else link_floor_s(rx, tx, link_bytes_per_s)


def if_closed(busy_s: float | None, active_s: float, closed_s: float,
              gaps: int | None = None, floor_s: float | LinkFloor | None = None) -> IfClosed:
    """The payoff of closing `closed_s` of idle time (`gaps` gaps, None: not counted) in a
    working span of `active_s`, which never shrinks below `floor_s` (`link_floor_s`: the time
    the link needs for the span's bytes; several GPUs' `floor_over_gpus`, which says which
    GPUs' links set it; None: not known, no floor). `busy_s` None: the busy time is not known
    (only the gain is). A span or idle time that is not a finite number gives no figure (NaN
    compares false with everything, and was said `~nanx`)."""
    limited_by: tuple[tuple[int, float], ...] = ()
    given: float | None
    if isinstance(floor_s, LinkFloor):
        given, limited_by = floor_s.floor_s, floor_s.limited_by
    else:
        given = floor_s
    floor = given if given is not None and given >= 0 and math.isfinite(given) else None
    span = active_s if math.isfinite(active_s) and active_s > 0 else 0.0
    if not (math.isfinite(active_s) and math.isfinite(closed_s)) or active_s <= 0:
        return IfClosed(closed_s, None, None, span, gaps, floor)
    left = active_s - closed_s
    limited = False
    if floor is not None and floor > left:
        # Never below what the span's copies need; never above the span either: a floor past
        # it (rates read above the link assumed) says the link was full, not that closing
        # gaps would slow the GPU.
        left, limited = min(floor, active_s), True
    if left <= 0:
        return IfClosed(closed_s, None, None, span, gaps, floor)
    return IfClosed(closed_s, None if busy_s is None else min(1.0, busy_s / left),
                    active_s / left, active_s, gaps, floor, limited,
                    limited_by if limited else ())


class GpuSpan(NamedTuple):
    """One GPU's part of a payoff over several: its working span, the idle seconds closed in
    it, and its link's floor (`link_floor_s`; None: none)."""

    gpu: int
    span_s: float
    closed_s: float
    floor_s: float | None


@dataclass(frozen=True, slots=True)
class LinkFloor:
    """The floor under several GPUs' spans summed (`floor_over_gpus`), and the GPUs whose own
    link set it, each with the seconds its bytes need, slowest first (empty: none did, or one
    GPU: its floor is its bytes' own time)."""

    floor_s: float
    limited_by: tuple[tuple[int, float], ...] = ()


def floor_over_gpus(parts: Iterable[GpuSpan]) -> LinkFloor | None:
    """The floor under several GPUs' working spans summed, once idle time is closed on each:
    each GPU's span less its own closed time and never below its own link's floor
    (`link_floor_s`; None: none). Summed floors let one GPU's spare span hide another's full
    link (two GPUs: ~1.33x said where ~1.03x is the bound). Where no link limits its GPU, the
    sum of the floors (below the shortened span: `if_closed` says no limit); where one does,
    the shortest the summed span can be (each GPU's span less its gaps or its floor, the
    larger): `if_closed` then computes on it, and the words name the GPUs whose link did
    (`LinkFloor.limited_by`: "its bytes need 145 s" was said of that summed span). One GPU:
    its own floor. None where no GPU has a floor."""
    floors = 0.0
    shortest = 0.0
    any_floor = False
    limited: list[tuple[int, float]] = []
    n = 0
    for gpu, span_s, closed_s, floor_s in parts:
        n += 1
        left = max(0.0, span_s - closed_s)
        if floor_s is not None and math.isfinite(floor_s) and floor_s >= 0:
            any_floor = True
            # A floor past its span (rates read above the link assumed) is the span: summed
            # as it was, it said a link limited where none did.
            floor_s = min(floor_s, max(0.0, span_s))
            floors += floor_s
            if floor_s > left:
                limited.append((gpu, floor_s))
                left = floor_s
        shortest += left
    if not any_floor:
        return None
    if not limited:
        return LinkFloor(floors)
    slowest = tuple(sorted(limited, key=lambda g: -g[1])) if n > 1 else ()
    return LinkFloor(shortest, slowest)


#: The longest span a payoff is said over: ten years of GPU time (a month's recording of
#: 64 GPUs is 0.2 of it). Past it, or not a finite number, the figure is said without a span:
#: 1e300 s was said as a 300-digit number of hours.
MAX_SPAN_S = 10 * 365.25 * 86400.0


def span_words(seconds: float, *, whole_seconds: bool = False) -> str | None:
    """`21 s`, `3.0 min`, `5.2 h`: a span a payoff is over, as a person says it; under a
    second with a decimal (`0.4 s`; `0 s` read as no span at all); None for no span to say
    (negative, not finite, past `MAX_SPAN_S`). `whole_seconds`: seconds however long (the
    live window's, which the alert's `why`, a Prometheus template, says in seconds too)."""
    if not 0 <= seconds <= MAX_SPAN_S:  # NaN fails this too
        return None
    if seconds < 1:
        return "under 0.1 s" if seconds < 0.05 else f"{seconds:.1f} s"
    if whole_seconds or seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def gain_words(gain: float, over: str | None, gaps: int | None = None,
               link_floor_s: float | None = None,
               limited_by: tuple[tuple[int, float], ...] = ()) -> str:
    """`~1.58x over the last 30 s (20 gaps)`: a throughput gain as every output says it, with
    the span it is over (`over`: "the last 21 s", "3.0 min of GPU time"; None: not said) and
    the gaps it would close (None: not said). Two decimals: `1.0x` of a 3 % gain read
    "nothing to gain". A gain that is not a finite number is said `not known`.
    `link_floor_s`: the floor that set the figure (`IfClosed.link_limit_s`; None: none did),
    said after it (`link_words`)."""
    if not math.isfinite(gain):
        return "not known"
    span = "" if over is None else f" over {over}"
    count = "" if gaps is None else f" ({gaps} gap{'' if gaps == 1 else 's'})"
    limit = "" if link_floor_s is None else link_words(link_floor_s, limited_by)
    return f"~{gain:.2f}x{span}{count}{limit}"


def link_words(link_floor_s: float, limited_by: tuple[tuple[int, float], ...] = ()) -> str:
    """` (the link's limit: its bytes need 27 s)`: the floor that set a figure, said after
    it; of several GPUs (`limited_by`, `IfClosed.limited_by`) the GPU whose bytes set it and
    their own time, not the summed span (`(the link's limit: GPU 0's bytes need 95 s)`; of
    more than one, the slowest: `(the links' limit: the slowest GPU's bytes, GPU 0's, need
    95 s)`); "" where the time is none to say."""
    if not limited_by:
        need = span_words(link_floor_s)
        return "" if need is None else f" (the link's limit: its bytes need {need})"
    gpu, need_s = limited_by[0]
    need = span_words(need_s)
    if need is None:
        return ""
    if len(limited_by) == 1:
        return f" (the link's limit: GPU {gpu}'s bytes need {need})"
    return f" (the links' limit: the slowest GPU's bytes, GPU {gpu}'s, need {need})"


def gpu_time_words(gain: float, span_s: float, gaps: int | None,
                   link_floor_s: float | None = None,
                   limited_by: tuple[tuple[int, float], ...] = ()) -> str:
    """`~1.58x over 3.3 min of GPU time (103 gaps)`: a recording's payoff, over its GPUs'
    working spans summed, as the report's Payoff section, its advice, summary.md and `compare`
    say it (`gain_words`, with the link's floor where it set the figure; the live verdict says
    `over the last 30 s`, `WhyNow.payoff_words`). The report's Payoff section said `about
    1.58× throughput` with neither span nor gaps beside its advice's words for the same
    figure."""
    span = span_words(span_s)
    return gain_words(gain, None if span is None else f"{span} of GPU time", gaps, link_floor_s,
                      limited_by)
