"""Words for a gap's hint from the copy trace, the /proc memory reading and the PCIe link state.

Who calls it: `gapwatch.core.evidence.make_hint` (the one-line hint of every gap), which the
detector calls whenever it publishes a gap. Pure functions over the evidence objects that
`gapwatch.core.evidence` builds (the gap's `copies` object, a trained-down link); no state.

The rule these words keep: a statement only where something measured it (the copy trace saw the
copy's memory kind), a question or a hint everywhere else, and the hint says which ("memory kind
inferred from rate: no copy trace"; /proc readings are "a hint", since memory registered with
cudaHostRegister is invisible there).
"""

from __future__ import annotations

from typing import Any

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
