"""Hints: the plain words that say why a GPU idled, from what the detector saw during the gap.

Who calls it: `gapwatch.core.detector` (every published gap version carries its hint); the words
for host pressure are used by the snapshot summary too. Pure functions over plain values.

A hint names what the GPU did, what PCIe did, and the likeliest cause, in that order, so that the
most specific evidence (a prover warning such as `is_pinned=false`) comes right after the facts.
RX is what the GPU receives (host-to-device, "H2D"), TX what it sends (D2H).
"""

from __future__ import annotations

from typing import Any

# Host pressure thresholds above which the hint mentions the host (chosen to flag real pressure,
# not background noise: PSI "some" of a few % is common on a busy box).
PSI_SHARE_PRESSURE = 0.10
PSI_AVG10_PRESSURE = 10.0
MEM_USED_PRESSURE_PCT = 90.0
MAJOR_FAULTS_PRESSURE_PER_S = 100.0



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
    unpinned = _partitions(events, "unpinned")
    fallback = any(e.get("warning") == "pinned_pool_fallback" for e in events)
    alloc_failed = any(e.get("warning") == "cuda_host_alloc_failed" for e in events)
    if kind == "pcie_starved":
        if unpinned:
            parts.append(
                f"{_plural(unpinned)} synthesised with is_pinned=false: a/b/c in pageable memory?"
            )
        elif fallback or alloc_failed:
            parts.append(
                "pinned pool checkout failed, fell back to pageable memory: pool too small?"
            )
        else:
            parts.append("a slow copy: pageable memory or host memory-bandwidth contention?")
    elif kind == "transfer_bound":
        parts.append("copies at full speed but not overlapped with compute: is the next "
                     "partition's upload chained behind the other worker's kernels?")
    elif kind == "host_stall":
        synth = [e for e in events if "SYNTH" in str(e.get("name", "")).upper()
                 or "synthesis" in str(e.get("raw", ""))]
        if synth:
            parts.append("synthesis did not keep up with the GPU?")
        else:
            parts.append("synthesis, a lock or the scheduler?")
        if unpinned or fallback:
            parts.append("(pageable buffers seen: is_pinned=false)")
    pressure = host_pressure(host)
    if pressure:
        parts.append(f"host: {pressure}")
    return "; ".join(parts)
