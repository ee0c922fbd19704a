"""Hints: the plain words that say why a GPU idled, from what the detector saw during the gap.

Who calls it: `gapwatch.core.detector` (every published gap version carries its hint); the words
for host pressure are used by the snapshot summary too. Pure functions over plain values.

A hint leads with the memory behind the copies when something names it (the copy trace saw the
memory kind, or the prover's log warned: `is_pinned=false`, a pinned-pool fallback): that is the
one fact a user needs, and the first thing lost when a pane or a table column is narrow. Then
what the GPU did and what PCIe did, then the likeliest cause, then host pressure; phrases are
joined by `HINT_SEP`. RX is what the GPU receives (host-to-device, "H2D"), TX what it sends (D2H).

`hint_cause` gives the cause a gap's log names, without that gap's figures (durations, rates,
partition numbers): the snapshot summary groups its gaps by kind and it, so 15 near-identical
hints become one line with a count.

Copies, /proc and the link: a statement only where something measured it (the copy trace saw the
copy's memory kind), a question or a hint everywhere else, and the hint says which ("memory kind
inferred from rate: no copy trace"; /proc readings are "a hint", since memory registered with
cudaHostRegister is invisible there).
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


#: What each finer cause (`gapwatch.core.prover.PROVER_CAUSES`) means, in the hint's words.
PROVER_CAUSE_WORDS: dict[str, tuple[str, str]] = {
    # cause: (what it means, the fact in parentheses; the gap's own figure joins it)
    "waits_on_synthesis": ("the GPU waits on synthesis", "no partition synthesised ahead"),
    "dispatch_stall": ("a dispatch stall inside the prover",
                       "synthesised partitions waiting while a worker is idle"),
    "inside_workers": ("the wait is inside the workers (copies, the GPU mutex, CPU work): "
                       "every worker of this GPU is proving", ""),
    "waits_on_budget": ("the next synthesis waits on cuzk's memory budget",
                        "partitions pending, a synthesis worker free"),
    "pacer_hold": ("the dispatch pacer holds synthesis back",
                   "partitions pending, synthesis workers and budget free"),
    "srs_loading": ("cuzk is loading the SRS (proving parameters)", ""),
    "monolithic": ("PoSt or other monolithic work, which /status does not list", ""),
    "pinned_pool": ("a/b/c copied from pageable memory",
                    "cuzk's pinned pool could not pin a buffer and fell back"),
    "no_work": ("the prover had no work", "nothing queued, synthesising or synthesised"),
}


def prover_phrase(cause: str | None, during: bool = True, detail: str = "",
                  from_log: bool = False) -> str:
    """The hint's words for a gap's prover cause ("" for none), with its one figure
    (`detail`, "18 of 18 synthesis workers busy"); `during` False: the cause came from the
    snapshot just before the gap (the gap was shorter than the poll period); `from_log`: the
    prover's log said it, not its /status."""
    entry = PROVER_CAUSE_WORDS.get(cause or "")
    if entry is None:
        return ""
    lead, fact = entry
    inside = "; ".join(x for x in (fact, detail) if x)
    when = "" if during else " (as of just before the gap)"
    said = "prover log" if from_log else "prover status"
    return f"{said}{when}: {lead}" + (f" ({inside})" if inside else "")


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
    copies: dict[str, Any] | None = None,
    link_down: dict[str, Any] | None = None,
    prover_cause: str | None = None,
    prover_during: bool = True,
    prover_detail: str = "",
    prover_from_log: bool = False,
) -> str:
    """One line in plain words: what the GPU did, what PCIe did, and the likeliest cause.

    RX is what the GPU receives (host-to-device, "H2D"), TX what it sends (D2H); the hint names
    the dominant direction, the one the kind was decided on. With a live copy trace (`copies`
    traced) the memory kind is stated; without, it is inferred and the hint says so.
    `link_down`: the link was seen trained below its maximum while data moved. When the
    prover's own status said where it waited (`prover_cause`), its words are said instead of a
    guess.
    """
    traced = bool(copies and copies.get("traced"))
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
        if kind == "host_stall":
            parts.append(f"{idle} with PCIe quiet ({_gb(rate)}): the GPU waited on the host")
        else:
            parts.append(f"{idle} while {direction} ran at {_gb(rate)} "
                         f"{link_words(rate, link_bytes_per_s, link_down)}")
    unpinned = _partitions(events, "unpinned")
    fallback = any(e.get("warning") == "pinned_pool_fallback" for e in events)
    alloc_failed = any(e.get("warning") == "cuda_host_alloc_failed" for e in events)
    # The memory-kind evidence, said first (see the module docstring).
    memory: list[str] = []
    if traced and copies is not None and kind != "unknown":
        # Measured: the copy trace saw each copy's memory kind. The log's warnings stay as
        # facts (which partitions), no longer as the question they were without the trace.
        memory.append(traced_copy_words(copies, kind))
        if unpinned and kind == "pcie_starved":
            memory.append(f"{_plural(unpinned)} synthesised with is_pinned=false")
    if kind == "pcie_starved" and not traced:
        if unpinned:
            memory.append(
                f"{_plural(unpinned)} synthesised with is_pinned=false: a/b/c in pageable memory?"
            )
        elif fallback or alloc_failed:
            # pinned_pool.rs: the pool grows on demand, outside the memory budget, so a
            # checkout fails only when pinning a new buffer (cudaHostAlloc) fails.
            memory.append(
                "pinned pool checkout failed (cudaHostAlloc could not pin a new buffer), fell "
                "back to pageable memory"
            )
        else:
            parts.append("a slow copy: pageable memory or host memory-bandwidth contention? "
                         "(memory kind inferred from rate: no copy trace)")
    elif kind == "transfer_bound" and not traced:
        parts.append("copies at full speed but not overlapped with compute: is the next "
                     "partition's upload chained behind the other worker's kernels?")
    elif kind == "host_stall":
        synth = [e for e in events if "SYNTH" in str(e.get("name", "")).upper()
                 or "synthesis" in str(e.get("raw", ""))]
        if prover_cause is not None:
            pass  # the prover's own words follow: no guess
        elif synth:
            parts.append("synthesis did not keep up with the GPU?")
        else:
            parts.append("synthesis, a lock or the scheduler?")
        if unpinned or fallback:
            memory.append("pageable buffers seen (is_pinned=false)")
    said = prover_phrase(prover_cause, prover_during, prover_detail, prover_from_log)
    if said:
        parts.append(said)
    if not traced and copies and kind in ("pcie_starved", "transfer_bound"):
        procs = process_memory_words(copies.get("processes") or [])
        if procs:
            parts.append(procs)
    pressure = host_pressure(host)
    if pressure:
        parts.append(f"host: {pressure}")
    return HINT_SEP.join(memory + parts)


def hint_cause(kind: str, events: list[dict[str, Any]]) -> str:
    """The cause of a gap as its log names it, without that gap's figures: the same words for
    every gap of a kind that idled for the same reason (what the snapshot summary groups by)."""
    unpinned = _partitions(events, "unpinned")
    failed = any(e.get("warning") in ("pinned_pool_fallback", "cuda_host_alloc_failed")
                 for e in events)
    if kind == "unknown":
        return "PCIe not measured, cause unknown"
    if kind == "pcie_starved":
        if unpinned:
            return "partitions synthesised with is_pinned=false: a/b/c in pageable memory?"
        if failed:
            return ("pinned pool checkout failed (cudaHostAlloc could not pin a new buffer), "
                    "fell back to pageable memory")
        return "a slow copy: pageable memory or host memory-bandwidth contention?"
    if kind == "transfer_bound":
        return "copies at full speed but not overlapped with compute"
    synth = any("SYNTH" in str(e.get("name", "")).upper() or "synthesis" in str(e.get("raw", ""))
                for e in events)
    cause = "synthesis did not keep up with the GPU?" if synth else (
        "synthesis, a lock or the scheduler?")
    return cause + ("; pageable buffers seen (is_pinned=false)" if unpinned or failed else "")


# -- the copy trace, /proc and the link (issue 13) -------------------------------------------

GIB = float(1 << 30)


def size_text(n: float) -> str:
    """Bytes as GiB (or MiB below 1 GiB), the unit the prover's buffers are sized in."""
    return f"{n / GIB:.1f} GiB" if n >= GIB else f"{n / (1 << 20):.0f} MiB"


def rate_text(v: float | None) -> str:
    if v is None:
        return "n/a"
    return f"{v / 1e9:.1f} GB/s" if v >= 1e8 else f"{v / 1e6:.0f} MB/s"


def _streams(ids: list[int]) -> str:
    if not ids:
        return "no stream"
    shown = ", ".join(str(i) for i in ids[:3]) + (" ..." if len(ids) > 3 else "")
    return f"stream{'s' if len(ids) > 1 else ''} {shown}"


def traced_copy_words(copies: dict[str, Any], kind: str) -> str:
    """What the copy trace saw around the gap, as a statement (`copies["traced"]` is True)."""
    by: dict[str, dict[str, Any]] = copies.get("by_kind") or {}
    mk = copies.get("memory_kind")
    pinned_recent = copies.get("pinned_recent_bytes_per_s")
    pg, pn = by.get("pageable"), by.get("pinned")
    if mk is None:
        if kind in ("pcie_starved", "transfer_bound"):
            return "no traced copy in or just before the gap: another process's traffic?"
        return "no traced copy in or just before the gap"
    if mk == "pageable" and pg is not None:
        words = (f"{size_text(pg['bytes'])} copied from pageable host memory at "
                 f"{rate_text(pg['bytes_per_s'])} on {_streams(pg['streams'])}")
        if pinned_recent is not None:
            words += f"; pinned copies ran at {rate_text(pinned_recent)}"
        return words
    if mk == "pinned" and pn is not None:
        base = (f"{size_text(pn['bytes'])} copied from pinned memory at "
                f"{rate_text(pn['bytes_per_s'])} on {_streams(pn['streams'])}")
        if kind == "pcie_starved":
            return base + ": pinned, yet slow: link trained down or contended?"
        if kind == "transfer_bound":
            return base + ": at full speed, but not overlapped with compute"
        return base
    parts = []
    for name, e in (("pageable", pg), ("pinned", pn), ("other", by.get("other"))):
        if e is not None:
            parts.append(f"{size_text(e['bytes'])} from {name} memory at "
                         f"{rate_text(e['bytes_per_s'])}")
    return "copies " + " and ".join(parts)


def process_memory_words(processes: list[dict[str, Any]]) -> str:
    """The largest process on the GPU, pinned vs heap, from /proc (a hint), or ""."""
    known = [p for p in processes
             if p.get("pinned_bytes") is not None or p.get("heap_bytes") is not None]
    if not known:
        return ""
    p = max(known, key=lambda q: (q.get("pinned_bytes") or 0) + (q.get("heap_bytes") or 0))
    pinned, heap = p.get("pinned_bytes"), p.get("heap_bytes")
    name = p.get("name") or f"pid {p.get('pid')}"
    return (f"{name} pinned {size_text(pinned or 0)} / heap {size_text(heap or 0)} "
            "(/proc, a hint: cudaHostRegister'ed memory counts as heap)")


def link_text(gen: int | None, width: int | None, bytes_per_s: float | None) -> str:
    """`Gen3 x8 (7.9 GB/s)`: a link as trained, or its maximum."""
    shape = f"Gen{gen if gen is not None else '?'} x{width if width is not None else '?'}"
    return f"{shape} ({rate_text(bytes_per_s)})" if bytes_per_s is not None else shape


def link_trained_down_words(gen: int | None, width: int | None, bytes_per_s: float | None,
                            max_gen: int | None, max_width: int | None,
                            max_bytes_per_s: float | None, moving_bytes_per_s: float) -> str:
    """The warning for a link seen below its maximum generation or width while data moved."""
    return (f"PCIe link at {link_text(gen, width, bytes_per_s)} while moving data "
            f"({rate_text(moving_bytes_per_s)}); its maximum is "
            f"{link_text(max_gen, max_width, max_bytes_per_s)}: check the slot, riser and BIOS "
            "PCIe settings. Gap hints now give \"% of max link\" and the trained capacity")


def link_words(rate: float, max_link_bytes_per_s: float, link_down: dict[str, Any] | None
               ) -> str:
    """`(N % of link)`, saying which capacity: the maximum, and the trained one when the link
    was seen trained down while data moved."""
    pct = rate / max_link_bytes_per_s * 100 if max_link_bytes_per_s > 0 else 0.0
    if not link_down:
        return f"({pct:.0f} % of link)"
    cur = link_down.get("bytes_per_s")
    cur_pct = f"{rate / cur * 100:.0f} % of it, " if cur else ""
    return (f"({pct:.0f} % of max link; the link trained down to Gen{link_down.get('gen')} "
            f"x{link_down.get('width')} = {rate_text(cur)}: {cur_pct}"
            f"max Gen{link_down.get('max_gen')} x{link_down.get('max_width')})")
