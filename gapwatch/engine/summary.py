"""The closing line's words for a session's gaps, shared by `record` and `replay --headless`.

Who calls it: `gapwatch.commands.record`, `gapwatch.commands.replay`. The counts come from the
store's gap ledger (`StoreSnapshot.gap_tally`), the same figures /metrics and `report` give.
"""

from __future__ import annotations

from gapwatch.core.ledger import Tally


def gap_counts_text(tally: dict[tuple[int, str], Tally]) -> str:
    """`pcie_starved=12, transfer_bound=1` (closed gaps by kind over every GPU), or `none`."""
    by_kind: dict[str, int] = {}
    for (_gpu, kind), t in tally.items():
        by_kind[kind] = by_kind.get(kind, 0) + t.count
    text = ", ".join(f"{k}={n}" for k, n in sorted(by_kind.items()) if n)
    return text or "none"
