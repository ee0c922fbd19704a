"""How each gap kind looks on the dashboard: its letter, short name, colour and rank, in one table.

Who uses it: the gap strip (letters), the strip charts and the gap table (colours, through the
CSS that `kind_css` writes for the app), the detail chart (plotext colours and its legend), the
overview's title legend, the help screen, and `ui.reduce` (which kind a shared column shows).
Before this table the same facts lived in five places (the stylesheet, two in the detail chart,
the gap strip, the reducer) and could drift apart; now a new kind, or a colour change, is one row.
"""

from __future__ import annotations

from dataclasses import dataclass

from gapwatch.core.evidence_types import CopiesEvidence, known
from gapwatch.core.models import GAP_KINDS, GapKind


@dataclass(frozen=True, slots=True)
class KindLook:
    #: Drawn in the gap strip (NO_COLOR and mono still read it).
    letter: str
    #: The legend's word for it.
    short: str
    #: When several kinds share a column, the highest rank is drawn (the one the user must see).
    rank: int
    #: Textual theme colour (foreground in charts and the table, background in the gap strip).
    theme: str
    #: Foreground on the gap strip's `theme` background.
    on_theme: str
    #: plotext colour name (the detail chart).
    plot: str
    #: What an operator reads on screen (the gap table, the gap's detail); the kind's name
    #: stays in JSON, /metrics and reports.
    words: str = ""
    #: Whether the gap table writes it bold.
    bold: bool = False


KINDS: dict[str, KindLook] = {
    "pcie_starved": KindLook("S", "starved", 4, "$error", "$text", "red",
                             words="slow copies", bold=True),
    "transfer_bound": KindLook("T", "transfer", 2, "$warning", "$background", "yellow",
                               words="copies not overlapped"),
    "host_stall": KindLook("H", "host", 3, "$secondary", "$text", "magenta",
                           words="host stall"),
    "unknown": KindLook("?", "unknown", 1, "$text-muted", "$text-muted", "gray",
                        words="idle, no PCIe reading"),
}
assert tuple(KINDS) == GAP_KINDS, "every gap kind needs a look, in GAP_KINDS order"


def kind_words(kind: str, memory_kind: str | None = None) -> str:
    """A gap's kind as an operator reads it: "slow copies (pageable)" when the memory behind
    the copies is known, "copies not overlapped", "host stall"."""
    look = KINDS.get(kind)
    words = look.words if look is not None and look.words else kind
    if kind == "pcie_starved" and memory_kind in ("pageable", "pinned"):
        words += f" ({memory_kind})"
    return words


def gap_words(copies: CopiesEvidence, kind: str) -> str:
    """`kind_words` for a gap, with the memory kind its evidence found (`Gap.copies`)."""
    return kind_words(kind, known(copies.memory_kind))


def rank(kind: str) -> int:
    look = KINDS.get(kind)
    return look.rank if look is not None else 0


def legend(kinds: tuple[GapKind, ...] = GAP_KINDS, *, plot: bool = False) -> str:
    """`S starved T transfer H host ? unknown` (the overview title, the help screen); with
    `plot`, the detail chart's colour words: `red starved, yellow transfer, magenta host`."""
    if plot:
        return ", ".join(f"{KINDS[k].plot} {KINDS[k].short}" for k in kinds if k != "unknown")
    return " ".join(f"{KINDS[k].letter} {KINDS[k].short}" for k in kinds)


def kind_css() -> str:
    """The stylesheet rules of every kind, for the app's CSS (gapwatch.tcss holds the rest)."""
    rules = []
    for kind, look in KINDS.items():
        bold = " text-style: bold;" if look.bold else ""
        rules.append(f"StripChart > .strip-chart--gap-{kind} {{ color: {look.theme}; }}")
        if kind == "unknown":
            rules.append(f"GapStrip > .gap-strip--{kind} {{ color: {look.theme}; }}")
        else:
            rules.append(f"GapStrip > .gap-strip--{kind} {{ background: {look.theme}; "
                         f"color: {look.on_theme};{bold} }}")
        rules.append(f"GapTable > .gap-table--{kind} {{ color: {look.theme};{bold} }}")
    return "\n".join(rules) + "\n"
