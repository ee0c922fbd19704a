"""The fleet's column widths on a terminal and its BOX cells (`gapwatch.fleet.layout`): BOX and
HEADLINE grow with the terminal, and two boxes never read the same however narrow BOX is."""

from __future__ import annotations

import pytest

from gapwatch.core import fmt
from gapwatch.fleet.layout import box_labels, screen_widths
from gapwatch.fleet.rows import COLUMNS, MAX_SECONDS, short_s

HEADINGS = [h for h, _ in COLUMNS]
#: Long realistic box names: a farm's hosts differ in the middle, or by the port alone.
NAMES = ["prover-host-01.example.net:9400", "prover-host-02.example.net:9400",
         "prover-host-12.example.net:9400", "gpu-prover-0001.ams.example.net:9400",
         "gpu-prover-0001.ams.example.net:9401", "p.example.net:9400",
         "prover-host-01.example.net:94001"]
HEADLINE = "PoSt 2 late, 1 failed 3m ago: [pipeline] synthesis_concurrency"


def _width(widths: tuple[int, ...], heading: str) -> int:
    return widths[HEADINGS.index(heading)]


def test_at_80_columns_the_columns_keep_their_widths_and_fill_the_terminal() -> None:
    widths = screen_widths(80, NAMES, [HEADLINE])
    assert widths == tuple(w for _, w in COLUMNS)


def test_box_and_headline_grow_with_the_terminal_to_their_longest_cells() -> None:
    """BOX 16 and HEADLINE 40 at 200 columns: 100 of them free, both cut."""
    wide = screen_widths(200, NAMES, [HEADLINE])
    assert _width(wide, "BOX") == max(len(n) for n in NAMES)
    assert _width(wide, "HEADLINE") == len(HEADLINE)
    # Between: HEADLINE (the one thing to know) grows first, BOX with what is left; the
    # columns up to HEADLINE, with a gap each and the scrollbar, fill the terminal.
    mid = screen_widths(110, NAMES, [HEADLINE])
    assert _width(mid, "HEADLINE") == len(HEADLINE)
    upto = HEADINGS.index("HEADLINE") + 1
    assert sum(mid[:upto]) + upto + 2 == 110
    # Never narrower than at 80 columns: the table scrolls sideways instead.
    assert screen_widths(40, NAMES, [HEADLINE]) == tuple(w for _, w in COLUMNS)


@pytest.mark.parametrize("width", [6, 8, 10, 12, 16, 20, 24, 31, 40])
def test_two_boxes_never_read_the_same_at_any_width(width: int) -> None:
    """`prover-host-01.example.net:9400` and `-02` both read `prover-h…et:9400` in 16 cells."""
    labels = box_labels(NAMES, width)
    assert len(set(labels.values())) == len(NAMES), labels
    assert all(fmt.cells(label) <= width for label in labels.values())


def test_a_cut_name_keeps_what_sets_it_apart_and_a_name_that_fits_is_whole() -> None:
    labels = box_labels(NAMES[:2], 16)
    assert labels == {NAMES[0]: "prover-host-01…0", NAMES[1]: "prover-host-02…0"}
    assert box_labels(["a:9400", "b:9400"], 16) == {"a:9400": "a:9400", "b:9400": "b:9400"}
    # Alone, both ends as before (a host and its port).
    assert box_labels([NAMES[3]], 16) == {NAMES[3]: "gpu-prov…et:9400"}


def test_once_prints_two_boxes_alike_up_to_its_widest_cell_apart() -> None:
    """`--once` cuts a cell at 64 cells: two names alike at both ends read the same."""
    from fleet_fakes import box, fake_prometheus

    from gapwatch.commands.fleet import table_lines
    from gapwatch.fleet.client import PromClient
    from gapwatch.fleet.rows import FleetOptions, refresh

    long_a = "prover-" + "a" * 70 + ".example.net:9400"
    long_b = long_a.replace(":9400", ":9401")
    with fake_prometheus() as fake:
        box(fake, long_a, 1)
        box(fake, long_b, 1)
        lines = table_lines(refresh(PromClient(fake.url), FleetOptions()))
    firsts = [line.split(" ", 1)[0] for line in lines[1:]]
    assert len(set(firsts)) == 2, firsts


def test_a_time_on_the_edge_of_its_unit_is_said_in_the_next_in_at_most_4_characters() -> None:
    """The unit was chosen before rounding: 599.6 s read `600s` and 999.6 days `1000d`."""
    assert short_s(599.6) == "10m"
    assert short_s(999.6 * 86400) == "3y"
    assert short_s(71.6 * 3600) == "3d"
    assert short_s(599.4) == "599s"
    edges = [size * below - 0.4 * size for size, below in
             ((1.0, 600.0), (60.0, 600.0), (3600.0, 72.0), (86400.0, 1000.0))]
    assert all(len(short_s(t)) <= 4 for t in edges + [MAX_SECONDS])
