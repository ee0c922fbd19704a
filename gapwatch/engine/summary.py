"""Short words for a session's state, shared by `record`'s and `replay --headless`'s closing line
and the dashboard footer (and with it the snapshot's summary.md).

Who calls it: `gapwatch.commands.record`, `gapwatch.commands.replay`, the footer's
`status_parts`. Gap counts come from the store's gap ledger (`StoreSnapshot.gap_tally`), the
same figures /metrics and `report` give; the /proc counts from the NVML source's counters; the
trained-down links from the latest `LinkState` per GPU.
"""

from __future__ import annotations

from gapwatch.core.hints import link_text
from gapwatch.core.ledger import Tally, counts_by_kind
from gapwatch.core.models import LinkState


def gap_counts_text(tally: dict[tuple[int, str], Tally]) -> str:
    """`pcie_starved=12, transfer_bound=1` (closed gaps by kind over every GPU), or `none`."""
    text = ", ".join(f"{k}={n}" for k, n in counts_by_kind(tally).items())
    return text or "none"


_PROC_PROBLEMS = ("vanished", "denied", "no_rss_fields", "unreadable")


def procmem_counts_text(counters: dict[str, int]) -> str:
    """`/proc 36 readings (3 vanished, 36 denied)` from `NvmlSource.counters`, or "" when no
    /proc reading was taken."""
    n = counters.get("procmem_read", 0)
    if not n:
        return ""
    problems = [f"{counters[f'procmem_{p}']} {p.replace('_', ' ')}" for p in _PROC_PROBLEMS
                if counters.get(f"procmem_{p}")]
    return f"/proc {n} readings" + (f" ({', '.join(problems)})" if problems else "")


def links_down_text(links: dict[int, LinkState]) -> str:
    """`GPU0 PCIe Gen3 x8 (7.9 GB/s) of max Gen5 x16 (63.0 GB/s): "% of link" is of max` for
    each GPU whose link was last seen trained down under traffic, or ""."""
    return ", ".join(
        f"GPU{g} PCIe {link_text(k.gen, k.width, k.bytes_per_s)} of max "
        f"{link_text(k.max_gen, k.max_width, k.max_bytes_per_s)}: \"% of link\" is of max"
        for g, k in sorted(links.items()) if k.trained_down)
