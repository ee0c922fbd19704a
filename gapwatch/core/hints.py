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

from typing import Any, Final

from gapwatch.core import fmt

# Host pressure thresholds above which the hint mentions the host (chosen to flag real pressure,
# not background noise: PSI "some" of a few % is common on a busy box).
PSI_SHARE_PRESSURE: Final = 0.10
PSI_AVG10_PRESSURE: Final = 10.0
MEM_USED_PRESSURE_PCT: Final = 90.0
MAJOR_FAULTS_PRESSURE_PER_S: Final = 100.0
#: Between two phrases of a hint (the dashboard cuts a hint only here when a pane is short).
HINT_SEP: Final = "; "



def _partitions(events: list[dict[str, Any]], warning: str,
                since_s: float | None = None, earlier: bool = False) -> list[int]:
    """Partitions named by the events carrying `warning`, first seen first. With `since_s`, only
    those of the gap's own evidence window (`earlier` False) or only those before it (True)."""
    seen: list[int] = []
    for e in events:
        p = e.get("partition")
        if e.get("warning") != warning or not isinstance(p, int) or p in seen:
            continue
        if since_s is not None and _before(e, since_s) != earlier:
            continue
        seen.append(p)
    return seen


def _before(event: dict[str, Any], since_s: float) -> bool:
    t = event.get("t_s")
    return isinstance(t, float | int) and t < since_s


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
        bits.append(f"host memory bandwidth {fmt.rate(bw)}")
    return ", ".join(bits)


#: What each finer cause (`gapwatch.cuzk.causes.PROVER_CAUSES`) means, in the hint's words.
#: A pinned-pool fallback, in one phrasing. pinned_pool.rs: the pool grows on demand, outside
#: the memory budget, so a checkout fails only when pinning a new buffer (cudaHostAlloc) fails.
POOL_FALLBACK_WORDS = ("pinned pool checkout failed (cudaHostAlloc could not pin a new buffer), "
                       "fell back to pageable memory")
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
    *,
    quiet_below_bytes_per_s: float | None = None,
    since_s: float | None = None,
    after_error: str = "",
) -> str:
    """One line in plain words: what the GPU did, what PCIe did, and the likeliest cause.

    RX is what the GPU receives (host-to-device, "H2D"), TX what it sends (D2H); the hint names
    the dominant direction, the one the kind was decided on. With a live copy trace (`copies`
    traced) the memory kind is stated; without, it is inferred and the hint says so.
    `link_down`: the link was seen trained below its maximum while data moved. When the
    prover's own status said where it waited (`prover_cause`), its words are said instead of a
    guess. `quiet_below_bytes_per_s`: the detector's "quiet" rate (a host stall's PCIe is quiet
    most of the time, its average may be higher). `since_s`: the start of the gap's own
    evidence window; a warning from before it (a recent one, cited because the window has none)
    is said as seen earlier, not as this gap's partition. `after_error`: the prover failed just
    before or during the gap (`PipelineFacts.error_words`), said after the cause.

    In named steps: the memory behind the copies (said first), what the GPU and PCIe did, the
    likeliest cause, the prover's own words, /proc, host pressure.
    """
    traced = bool(copies and copies.get("traced"))
    memory = _memory_phrases(kind, events, copies if traced else None, since_s)
    parts = [_activity_phrase(kind, duration_s, is_open, confidence, rx_bytes_per_s,
                              tx_bytes_per_s, link_bytes_per_s, link_down,
                              quiet_below_bytes_per_s)]
    parts += _cause_phrases(kind, events, traced, bool(memory), prover_cause)
    said = prover_phrase(prover_cause, prover_during, prover_detail, prover_from_log)
    if said:
        parts.append(said)
    if after_error:
        parts.append(after_error)
    if not traced and copies and kind in ("pcie_starved", "transfer_bound"):
        procs = process_memory_words(copies.get("processes") or [])
        if procs:
            parts.append(procs)
    pressure = host_pressure(host)
    if pressure:
        parts.append(f"host: {pressure}")
    return HINT_SEP.join(memory + parts)


def _activity_phrase(
    kind: str, duration_s: float, is_open: bool, confidence: str, rx: float | None,
    tx: float | None, link_bytes_per_s: float, link_down: dict[str, Any] | None,
    quiet_below: float | None,
) -> str:
    """What the GPU did and what PCIe did meanwhile (the dominant direction)."""
    so_far = " so far" if is_open else ""
    idle = f"SMs idle {duration_s:.1f} s{so_far}"
    if confidence == "low":
        idle = f"GPU idle {duration_s:.1f} s{so_far} (utilization.gpu only)"
    if kind == "unknown":
        return f"{idle}; PCIe not measured, cause unknown"
    direction, rate = ("H2D", rx or 0.0) if (rx or 0.0) >= (tx or 0.0) else ("D2H", tx or 0.0)
    if kind == "host_stall":
        # The kind says PCIe was quiet for most of the gap; a burst can lift the average above
        # the quiet rate, and "quiet (2.6 GB/s)" would contradict itself.
        if quiet_below is not None and rate >= quiet_below:
            quiet = f"PCIe quiet most of the time ({fmt.rate(rate)} on average)"
        else:
            quiet = f"PCIe quiet ({fmt.rate(rate)})"
        return f"{idle} with {quiet}: the GPU waited on the host"
    return (f"{idle} while {direction} ran at {fmt.rate(rate)} "
            f"{link_words(rate, link_bytes_per_s, link_down)}")


def _memory_phrases(kind: str, events: list[dict[str, Any]], traced: dict[str, Any] | None,
                    since_s: float | None) -> list[str]:
    """The memory behind the copies, when something names it: the copy trace (measured), the
    prover's warnings (`is_pinned=false`, a pinned-pool fallback)."""
    if kind == "unknown":
        return []
    unpinned = _partitions(events, "unpinned", since_s)
    earlier = _partitions(events, "unpinned", since_s, earlier=True) if since_s is not None \
        else []
    fallback = any(e.get("warning") in ("pinned_pool_fallback", "cuda_host_alloc_failed")
                   for e in events)
    if traced is not None:
        # Measured: the copy trace saw each copy's memory kind. The log's warnings stay as
        # facts (which partitions), no longer as the question they were without the trace.
        out = [traced_copy_words(traced, kind)]
        if unpinned and kind == "pcie_starved":
            out.append(f"{_plural(unpinned)} synthesised with is_pinned=false")
        return out
    if kind == "pcie_starved":
        if unpinned:
            return [f"{_plural(unpinned)} synthesised with is_pinned=false: a/b/c in pageable "
                    "memory?"]
        if earlier:
            return [f"is_pinned=false seen earlier in the run (last: partition {earlier[-1]}): "
                    "a/b/c in pageable memory?"]
        if fallback:
            return [POOL_FALLBACK_WORDS]
    if kind == "host_stall" and (unpinned or earlier or fallback):
        return ["pageable buffers seen (is_pinned=false)"]
    return []


def _cause_phrases(kind: str, events: list[dict[str, Any]], traced: bool, memory_said: bool,
                   prover_cause: str | None) -> list[str]:
    """The likeliest cause, as a question where nothing measured it."""
    if kind == "pcie_starved" and not traced and not memory_said:
        return ["a slow copy: pageable memory or host memory-bandwidth contention? "
                "(memory kind inferred from rate: no copy trace)"]
    if kind == "transfer_bound" and not traced:
        return ["copies at full speed but not overlapped with compute: is the next "
                "partition's upload chained behind the other worker's kernels?"]
    if kind == "host_stall" and prover_cause is None:  # else the prover's own words follow
        if any(_synthesis(e) for e in events):
            return ["synthesis did not keep up with the GPU?"]
        return ["synthesis, a lock or the scheduler?"]
    return []


def _synthesis(event: dict[str, Any]) -> bool:
    return "SYNTH" in str(event.get("name", "")).upper() or "synthesis" in str(event.get("raw", ""))


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
            return POOL_FALLBACK_WORDS
        return "a slow copy: pageable memory or host memory-bandwidth contention?"
    if kind == "transfer_bound":
        return "copies at full speed but not overlapped with compute"
    synth = any(_synthesis(e) for e in events)
    cause = "synthesis did not keep up with the GPU?" if synth else (
        "synthesis, a lock or the scheduler?")
    return cause + ("; pageable buffers seen (is_pinned=false)" if unpinned or failed else "")


# -- the copy trace, /proc and the link (issue 13) -------------------------------------------

def _streams(ids: list[int]) -> str:
    if not ids:
        return "no stream"
    shown = ", ".join(str(i) for i in ids[:3]) + (" ..." if len(ids) > 3 else "")
    return f"stream{'s' if len(ids) > 1 else ''} {shown}"


def copied_words(n_bytes: float, memory: str, bytes_per_s: float | None) -> str:
    """`7.5 GiB copied from pageable host memory at 3.8 GB/s`: the one phrasing of what the copy
    trace saw move (`memory`: pageable, pinned, or other)."""
    return f"{fmt.size(n_bytes)} copied from {memory} host memory at {fmt.rate(bytes_per_s)}"


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
        words = (f"{copied_words(pg['bytes'], 'pageable', pg['bytes_per_s'])} "
                 f"on {_streams(pg['streams'])}")
        if pinned_recent is not None:
            words += f"; pinned copies ran at {fmt.rate(pinned_recent)}"
        return words
    if mk == "pinned" and pn is not None:
        base = (f"{copied_words(pn['bytes'], 'pinned', pn['bytes_per_s'])} "
                f"on {_streams(pn['streams'])}")
        if kind == "pcie_starved":
            return base + ": pinned, yet slow: link trained down or contended?"
        if kind == "transfer_bound":
            return base + ": at full speed, but not overlapped with compute"
        return base
    # Mixed: each kind in the same words ("copied" said once), joined.
    present = [(name, e) for name, e in (("pageable", pg), ("pinned", pn),
                                         ("other", by.get("other"))) if e is not None]
    if not present:
        return "no traced copy in or just before the gap"
    (name, first), rest = present[0], present[1:]
    words = copied_words(first["bytes"], name, first["bytes_per_s"])
    for name, e in rest:
        words += f" and {fmt.size(e['bytes'])} from {name} host memory at " \
                 f"{fmt.rate(e['bytes_per_s'])}"
    return words


def process_memory_words(processes: list[dict[str, Any]]) -> str:
    """The largest process on the GPU, pinned vs heap, from /proc (a hint), or ""."""
    known = [p for p in processes
             if p.get("pinned_bytes") is not None or p.get("heap_bytes") is not None]
    if not known:
        return ""
    p = max(known, key=lambda q: (q.get("pinned_bytes") or 0) + (q.get("heap_bytes") or 0))
    pinned, heap = p.get("pinned_bytes"), p.get("heap_bytes")
    name = p.get("name") or f"pid {p.get('pid')}"
    return (f"{name} pinned {fmt.size(pinned or 0)} / heap {fmt.size(heap or 0)} "
            "(/proc, a hint: cudaHostRegister'ed memory counts as heap)")


def link_text(gen: int | None, width: int | None, bytes_per_s: float | None) -> str:
    """`Gen3 x8 (7.9 GB/s)`: a link as trained, or its maximum."""
    shape = fmt.link_shape(gen, width)
    return f"{shape} ({fmt.rate(bytes_per_s)})" if bytes_per_s is not None else shape


def link_trained_down_words(gen: int | None, width: int | None, bytes_per_s: float | None,
                            max_gen: int | None, max_width: int | None,
                            max_bytes_per_s: float | None, moving_bytes_per_s: float) -> str:
    """The warning for a link seen below its maximum generation or width while data moved."""
    return (f"PCIe link at {link_text(gen, width, bytes_per_s)} while moving data "
            f"({fmt.rate(moving_bytes_per_s)}); its maximum is "
            f"{link_text(max_gen, max_width, max_bytes_per_s)}: check the slot, riser and BIOS "
            "PCIe settings. Gap hints now give \"% of max link\" and the trained capacity")


def _share(rate: float, link: float | None) -> str:
    f = fmt.link_fraction(rate, link)
    return f"{f * 100:.0f} %" if f is not None else "n/a %"


def link_words(rate: float, max_link_bytes_per_s: float, link_down: dict[str, Any] | None
               ) -> str:
    """`(N % of link)`, saying which capacity: the maximum, and the trained one when the link
    was seen trained down while data moved."""
    if not link_down:
        return f"({_share(rate, max_link_bytes_per_s)} of link)"
    cur = link_down.get("bytes_per_s")
    cur_pct = f"{_share(rate, cur)} of it, " if cur else ""
    trained = fmt.link_shape(link_down.get("gen"), link_down.get("width"))
    top = fmt.link_shape(link_down.get("max_gen"), link_down.get("max_width"))
    return (f"({_share(rate, max_link_bytes_per_s)} of max link; the link trained down to "
            f"{trained} = {fmt.rate(cur)}: {cur_pct}max {top})")
