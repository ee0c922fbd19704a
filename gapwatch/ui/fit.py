"""Fitting words into a narrow pane without cutting a phrase in the middle.

Who calls it: the header (GPU cells, the verdict), the chart title, the host line, the footer
and the gap table (its GPU column).
Pure (no Textual), unit-tested. At 80 columns something has to give; these helpers decide what,
by the rule "whole phrases or nothing": a phrase that does not fit is left out (the less important
ones first), never shown as half a phrase ending in an ellipsis.
"""

from __future__ import annotations

from collections.abc import Sequence

from gapwatch.core import fmt


def fit_indices(phrases: Sequence[tuple[int, str]], width: int, sep: str = "  ") -> list[int]:
    """Indices of the phrases that fit on one line of `width` cells, in display order.

    Args:
        phrases: (priority, text) in display order; lower priority numbers are kept first.
        width: the line's width in cells.
        sep: what goes between two phrases.

    The first phrase by priority is always kept: it is the one thing the line must say.
    """
    order = sorted(range(len(phrases)), key=lambda i: (phrases[i][0], i))
    kept: list[int] = []
    used = 0
    for i in order:
        extra = fmt.cells(phrases[i][1]) + (len(sep) if kept else 0)
        if not kept or used + extra <= width:
            kept.append(i)
            used += extra
    return sorted(kept)


def fit_phrases(phrases: Sequence[tuple[int, str]], width: int, sep: str = "  ") -> list[str]:
    """The texts of `fit_indices` (a lone first phrase longer than the line is cut to it)."""
    texts = [phrases[i][1] for i in fit_indices(phrases, width, sep)]
    if len(texts) == 1 and len(texts[0]) > width:
        texts[0] = texts[0][:width]
    return texts


def pack_phrases(phrases: Sequence[str], width: int, sep: str = " · ") -> list[list[int]]:
    """Greedy line filling that breaks only between phrases: the indices of the phrases on each
    line. A phrase longer than the width gets a line of its own (the widget cuts it there).
    Used where every phrase matters: the host line."""
    lines: list[list[int]] = []
    used = 0
    for i, phrase in enumerate(phrases):
        if lines and used + len(sep) + len(phrase) <= width:
            lines[-1].append(i)
            used += len(sep) + len(phrase)
        else:
            lines.append([i])
            used = len(phrase)
    return lines


def index_digits(gpus: Sequence[int]) -> int:
    """Digits of the widest GPU index: every cell and column gives its index that many columns
    and a space, so GPU 12 never runs into its state (`12BREAKDOWN`), its memory (`12141G`) or
    a gap's duration (`GPU120.79s`), and GPU 100 is never written as GPU 0 (the cells cut it to
    two digits: two GPUs read the same)."""
    return len(str(max(gpus))) if gpus else 1
