"""Blind spots: when gapwatch could not read the GPUs, said plainly and tied to what it knows.

On an H200 every NVML call blocks while the driver frees a process's pinned host memory: 1.9 s
for a 24 GiB pool, 5.4 s for 72 GiB (/work/shared/reference/nvml-facts.md), so each prover
restart on a box with a large pinned pool leaves a hole in the readings. Unnamed, it reads as a
blank in the charts and "max 7088 ms, skipped 70" in the sampler's figures, and the user wonders
whether gapwatch hung. The NVML source records a `BlindSpot` (how long, when, the processes
that exited meanwhile); this module words it, once, for every output that says it: the
dashboard's footer and help, `record`'s closing line, the report, and the notice that goes into
the recording ("NVML blocked 5.4 s at 18:32:07 while pid 4242 (cuzk) exited: the driver frees
its pinned memory (72.0 GiB, /proc)").

What names the cause, best first: a process NVML listed before the stall and not after it (the
NVML source reads the process list again right after a stall); the copy trace's BYE, which the
library sends as the prover exits (a notice whose words are written and read here,
`bye_message` / `bye_of`); a process whose pinned memory grew across the stall (pinning a pool
blocks NVML too: on the H200, 0.6 s while 24 GiB was pinned, 1.4 s for 48 GiB). None of these:
the words say no exit or pinning was seen, and what usually causes it.

Pure: no clocks, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gapwatch.core import fmt
from gapwatch.core.models import BlindSpot, ExitedProcess, Notice

#: A BYE this long before a stall began, or during it, names its cause.
BYE_BEFORE_S = 10.0
_BYE = re.compile(r"^copy trace: pid (\d+) \(([^)]*)\) exited$")


def bye_message(pid: int, comm: str) -> str:
    """The notice the copy-trace reader gives when a prover says BYE (it is exiting)."""
    return f"copy trace: pid {pid} ({comm or '?'}) exited"


def bye_of(notice: Notice) -> tuple[int, str] | None:
    """(pid, name) of a BYE notice (`bye_message`), else None."""
    m = _BYE.match(notice.message)
    if m is None:
        return None
    return int(m.group(1)), "" if m.group(2) == "?" else m.group(2)


@dataclass(frozen=True, slots=True)
class Bye:
    """A prover's BYE, as heard: when, and who."""

    t_wall_s: float
    pid: int
    name: str


def byes_in(notices: Iterable[Notice]) -> list[Bye]:
    out = []
    for n in notices:
        said = bye_of(n)
        if said is not None:
            out.append(Bye(n.t_wall_s, said[0], said[1]))
    return out


def _process(pid: int, name: str) -> str:
    return f"pid {pid} ({name})" if name else f"pid {pid}"


def _cause(spot: BlindSpot, byes: Sequence[Bye]) -> str:
    exited: list[ExitedProcess] = list(spot.exited)
    if exited:
        who = ", ".join(_process(p.pid, p.name) for p in exited)
        pinned = [p.pinned_bytes for p in exited if p.pinned_bytes]
        held = f" ({fmt.size(sum(pinned))}, /proc)" if pinned else ""
        return f" while {who} exited: the driver frees its pinned memory{held}"
    lo, hi = spot.t_wall_s - BYE_BEFORE_S, spot.t_wall_s + spot.duration_s
    heard = [b for b in byes if lo <= b.t_wall_s <= hi]
    if heard:
        who = ", ".join(_process(b.pid, b.name) for b in heard)
        return (f" while {who} exited (the copy trace's BYE): the driver frees its pinned "
                "memory")
    if spot.pinning:
        who = ", ".join(
            f"{_process(p.pid, p.name)} pinned host memory (RssShmem {fmt.size(p.before_bytes)}"
            f" {p.since_s:.0f} s before -> {fmt.size(p.after_bytes)} after, /proc)"
            for p in spot.pinning)
        return f" while {who}: pinning a large pool blocks every NVML call as freeing one does"
    return (": no process was seen exiting or pinning memory; a process pinning or freeing a "
            "large pool blocks every NVML call")


def blind_words(spot: BlindSpot, byes: Sequence[Bye] = ()) -> str:
    """One blind spot in words: what did not answer, how long, when, and why as far as known."""
    what = "NVML" if spot.source == "nvml" else spot.source
    return (f"{what} blocked {spot.duration_s:.1f} s at {fmt.clock(spot.t_wall_s)}"
            f"{_cause(spot, byes)}; no readings meanwhile")


def blind_summary(spots: Sequence[BlindSpot], byes: Sequence[Bye] = (),
                  total: tuple[int, float] | None = None) -> str:
    """`NVML blocked 2 times, 7.3 s in all; the longest: ...`, or "" when there was none.
    `total` (count, seconds): when `spots` are only the latest ones kept."""
    if not spots and not (total and total[0]):
        return ""
    n, seconds = total if total is not None else (len(spots), sum(s.duration_s for s in spots))
    if not spots:
        return f"NVML blocked {n} time{'s' if n != 1 else ''}, {seconds:.1f} s in all"
    longest = max(spots, key=lambda s: s.duration_s)
    if n == 1:
        return blind_words(longest, byes)
    return (f"NVML blocked {n} times, {seconds:.1f} s in all; the longest: "
            f"{blind_words(longest, byes)}")
