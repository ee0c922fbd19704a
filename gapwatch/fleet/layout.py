"""How wide the fleet's columns are on a terminal, and the BOX cells that never read the same.

Who calls it: `gapwatch.ui.fleet` (at every refresh and resize: the screen's widths) and
`gapwatch.commands.fleet.table_lines` (`--once`: the box names). `rows.COLUMNS` holds each
column's width at 80 columns; BOX and HEADLINE grow with the terminal (`screen_widths`), the
others keep theirs. Fixed at 16 and 40 cells, `[pipeline] synthesis_concurrency` was cut at 200
columns with 100 of them free, and `prover-host-01.example.net:9400` and `-02` both read
`prover-h…et:9400`.

A box name cut to its column keeps both ends (`fmt.fit`'s `keep_both`: a host and a port);
where two names would read the same so, each of them keeps what sets it apart from the others
(`box_labels`: `prover-host-01…0`), and where even that is not enough, a number.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from gapwatch.core import fmt
from gapwatch.fleet.rows import COLUMNS

#: The columns that grow with the terminal, the one to know first first.
_GROWS = ("HEADLINE", "BOX")
#: Cells the screen takes beside the columns: the table's vertical scrollbar.
SCROLLBAR_CELLS = 2
#: Cells between two columns (the screen adds one to each column's width).
GAP_CELLS = 1


def screen_widths(terminal_cells: int, boxes: Iterable[str], headlines: Iterable[str]
                  ) -> tuple[int, ...]:
    """Each column's width (`rows.COLUMNS`' order) on a terminal `terminal_cells` wide: the
    columns up to HEADLINE fill it, HEADLINE growing first to its longest cell, then BOX to
    its longest name; neither below its width at 80 columns (the table scrolls sideways
    then). `boxes` and `headlines` as shown (made visible)."""
    base = dict(COLUMNS)
    want = {"BOX": max([base["BOX"], *(fmt.cells(b) for b in boxes)]),
            "HEADLINE": max([base["HEADLINE"], *(fmt.cells(h) for h in headlines)])}
    first = [h for h, _ in COLUMNS[:[h for h, _ in COLUMNS].index("HEADLINE") + 1]]
    fixed = sum(base[h] for h in first if h not in _GROWS)
    room = terminal_cells - SCROLLBAR_CELLS - GAP_CELLS * len(first) - fixed
    left = room - sum(base[h] for h in _GROWS)
    width = dict(base)
    for heading in _GROWS:
        more = max(0, min(want[heading] - base[heading], left))
        width[heading] += more
        left -= more
    return tuple(width[h] for h, _ in COLUMNS)


def box_labels(names: Sequence[str], width: int) -> dict[str, str]:
    """Each name (made visible) as its BOX cell `width` cells wide, no two alike: both ends
    kept (`fmt.fit`), or, among names that would read the same so, the name up to where they
    differ from one another and the end of the rest; a number where even that is alike."""
    labels = {n: fmt.fit(n, width, pad=False, keep_both=True) for n in dict.fromkeys(names)}
    for group in _alike(labels).values():
        if len(group) > 1:
            end = _differ_end(group)
            for n in group:
                labels[n] = _up_to(n, len(n) - end, width)
    for group in _alike(labels).values():
        if len(group) > 1:
            # Alike even so: numbered, in their order (width cells with the number).
            for i, n in enumerate(group, 1):
                mark = f"#{i}"
                labels[n] = fmt.fit(n, max(1, width - len(mark)), pad=False,
                                    keep_both=True) + mark
    return labels


def _alike(labels: dict[str, str]) -> dict[str, list[str]]:
    """The names by the label they have."""
    by: dict[str, list[str]] = {}
    for name, label in labels.items():
        by.setdefault(label, []).append(name)
    return by


def _differ_end(group: list[str]) -> int:
    """How many characters every name of `group` ends with alike, none of a name's whole."""
    shortest = min(len(n) for n in group)
    same = os.path.commonprefix([n[::-1] for n in group])
    return min(len(same), shortest - 1)


def _up_to(name: str, end: int, width: int) -> str:
    """`name` within `width` cells showing its characters up to `end` (where the names it is
    alike with differ last): its start and the end of the rest where they fit
    (`prover-host-01…0`), else the characters before `end` (`…host-01…`)."""
    head, tail = name[:end], name[end:]
    if fmt.cells(name) <= width:
        return name
    if fmt.cells(head) + 1 <= width:
        return head + fmt.fit(tail, width - fmt.cells(head), keep_end=True, pad=False)
    return fmt.fit(head, max(1, width - 1), keep_end=True, pad=False) + "…"
