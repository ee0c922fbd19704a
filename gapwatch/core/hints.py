"""Hints: the plain words that say why a GPU idled, from what the detector saw during the gap.

Who calls it: `gapwatch.core.detector` (every published gap version carries its hint); the words
for host pressure are used by the snapshot summary too. Pure functions over plain values.

A hint leads with the memory behind the copies when the prover's log names it (a warning such
as `is_pinned=false`, or a pinned-pool fallback): that is the one fact a user needs and the first
thing cut when a pane or a table column is narrow. Then what the GPU did and what PCIe did, then
the likeliest cause, then host pressure; the phrases are joined by `HINT_SEP`.
RX is what the GPU receives (host-to-device, "H2D"), TX what it sends (D2H).

`hint_cause` gives the cause without the figures of one gap (no durations, rates or partition
numbers): the snapshot summary groups its gaps by it, so 15 near-identical hints become one line
with a count.
"""

from __future__ import annotations

from typing import Any

# Host pressure thresholds above which the hint mentions the host (chosen to flag real pressure,
# not background noise: PSI "some" of a few % is common on a busy box).
PSI_SHARE_PRESSURE = 0.10
PSI_AVG10_PRESSURE = 10.0
MEM_USED_PRESSURE_PCT = 90.0
MAJOR_FAULTS_PRESSURE_PER_S = 100.0
#: Between two phrases of a hint (the dashboard cuts a hint only here when a pane is short).
HINT_SEP = "; "



def _gb(v: float) -> str:
    return f"{v / 1e9:.1f} GB/s" if v >= 1e8 else f"{v / 1e6:.0f} MB/s"


def _partitions(events: list[dict[str, Any]], warning: str) -> list[int]:
    seen: list[int] = []
    for e in events:
        p = e.get("partition")
        if e.get("warning") == warning and isinstance(p, int) and p not in seen:
            seen.append(p)
    return seen


def _plural(ps: list[int]) -> str:
    if len(ps) == 1:
        return f"partition {ps[0]} was"
    more = " ..." if len(ps) > 3 else ""
    return "partitions " + ", ".join(str(p) for p in ps[:3]) + more + " were"


def host_pressure(host: dict[str, float | None]) -> str:
    """Plain words for the host pressure seen during a gap, or "" when there was none."""
    bits = []
    share = host.get("psi_mem_some_share_max")
    avg10 = host.get("psi_mem_some_avg10_max")
    if share is not None and share >= PSI_SHARE_PRESSURE:
        bits.append(f"tasks stalled on memory {share * 100:.0f} % of the time (PSI)")
    elif avg10 is not None and avg10 >= PSI_AVG10_PRESSURE:
        bits.append(f"memory PSI some avg10 {avg10:.0f} %")
    used = host.get("mem_used_pct_max")
    if used is not None and used >= MEM_USED_PRESSURE_PCT:
        bits.append(f"host memory {used:.0f} % used")
    faults = host.get("major_faults_per_s_max")
    if faults is not None and faults >= MAJOR_FAULTS_PRESSURE_PER_S:
        bits.append(f"{faults:.0f} major faults/s (swapping?)")
    bw = host.get("mem_bandwidth_bytes_per_s_max")
    if bits and bw is not None:
        bits.append(f"host memory bandwidth {_gb(bw)}")
    return ", ".join(bits)


def make_hint(
    kind: str,
    duration_s: float,
    rx_bytes_per_s: float | None,
    tx_bytes_per_s: float | None,
    link_bytes_per_s: float,
    confidence: str,
    host: dict[str, float | None],
    events: list[dict[str, Any]],
    is_open: bool = False,
) -> str:
    """One line in plain words: what the GPU did, what PCIe did, and the likeliest cause.

    RX is what the GPU receives (host-to-device, "H2D"), TX what it sends (D2H); the hint names
    the dominant direction, the one the kind was decided on.
    """
    idle = f"SMs idle {duration_s:.1f} s{' so far' if is_open else ''}"
    if confidence == "low":
        idle = f"GPU idle {duration_s:.1f} s{' so far' if is_open else ''} (utilization.gpu only)"
    parts: list[str] = []
    rx = rx_bytes_per_s or 0.0
    tx = tx_bytes_per_s or 0.0
    if kind == "unknown":
        parts.append(f"{idle}; PCIe not measured, cause unknown")
    else:
        direction, rate = ("H2D", rx) if rx >= tx else ("D2H", tx)
        pct = rate / link_bytes_per_s * 100 if link_bytes_per_s > 0 else 0.0
        if kind == "host_stall":
            parts.append(f"{idle} with PCIe quiet ({_gb(rate)}): the GPU waited on the host")
        else:
            parts.append(f"{idle} while {direction} ran at {_gb(rate)} ({pct:.0f} % of link)")
    memory = _memory_evidence(kind, events)
    if memory:
        parts.insert(0, memory)
    cause = _cause(kind, events)
    if cause:
        parts.append(cause)
    pressure = host_pressure(host)
    if pressure:
        parts.append(f"host: {pressure}")
    return HINT_SEP.join(parts)


def _warnings(events: list[dict[str, Any]]) -> tuple[list[int], bool]:
    """Partitions synthesised into pageable memory, and whether the pinned pool failed."""
    unpinned = _partitions(events, "unpinned")
    failed = any(e.get("warning") in ("pinned_pool_fallback", "cuda_host_alloc_failed")
                 for e in events)
    return unpinned, failed


def _memory_evidence(kind: str, events: list[dict[str, Any]]) -> str:
    """What the prover's log says about the memory behind the copies ("" when nothing)."""
    unpinned, failed = _warnings(events)
    if kind == "pcie_starved":
        if unpinned:
            return (f"{_plural(unpinned)} synthesised with is_pinned=false: a/b/c in pageable "
                    "memory?")
        if failed:
            return "pinned pool checkout failed, fell back to pageable memory: pool too small?"
    elif kind == "host_stall" and (unpinned or failed):
        return "pageable buffers seen (is_pinned=false)"
    return ""


def _cause(kind: str, events: list[dict[str, Any]]) -> str:
    """The likeliest cause when the memory evidence does not already say it ("" when it does)."""
    if kind == "pcie_starved":
        if _memory_evidence(kind, events):
            return ""
        return "a slow copy: pageable memory or host memory-bandwidth contention?"
    if kind == "transfer_bound":
        return ("copies at full speed but not overlapped with compute: is the next partition's "
                "upload chained behind the other worker's kernels?")
    if kind == "host_stall":
        synth = [e for e in events if "SYNTH" in str(e.get("name", "")).upper()
                 or "synthesis" in str(e.get("raw", ""))]
        return ("synthesis did not keep up with the GPU?" if synth
                else "synthesis, a lock or the scheduler?")
    return ""


def hint_cause(kind: str, events: list[dict[str, Any]]) -> str:
    """The cause of a gap in words, without one gap's figures: the same for every gap that idled
    for the same reason (what the snapshot summary groups by)."""
    unpinned, failed = _warnings(events)
    if kind == "unknown":
        return "PCIe not measured, cause unknown"
    if kind == "pcie_starved" and unpinned:
        return "partitions synthesised with is_pinned=false: a/b/c in pageable memory?"
    memory = _memory_evidence(kind, events)
    cause = _cause(kind, events)
    return HINT_SEP.join(p for p in (memory, cause) if p)
