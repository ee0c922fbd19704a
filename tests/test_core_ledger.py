"""The gap ledger: latest version per id, retracted gaps gone, closed gaps counted once."""

from __future__ import annotations

from msgspec.structs import replace

from gapwatch.core.ledger import Change, GapLedger
from gapwatch.core.models import Gap


def gap(gap_id: int, start: float, end: float | None, *, gpu: int = 0,
        kind: str = "pcie_starved", hint: str = "") -> Gap:
    return Gap(gap_id=gap_id, gpu=gpu, kind=kind,  # type: ignore[arg-type]
               start_mono_ns=int(start * 1e9), start_s=start,
               end_mono_ns=None if end is None else int(end * 1e9), end_s=end,
               duration_s=(end if end is not None else start + 0.5) - start,
               pcie_rx_bytes_per_s=2e9, pcie_tx_bytes_per_s=None, link_bytes_per_s=63e9,
               hint=hint)


def test_a_gap_opens_grows_closes_and_is_counted_once_even_when_revised() -> None:
    ledger = GapLedger()
    assert ledger.add(gap(1, 10.0, None)) is Change.OPENED
    assert ledger.add(replace(gap(1, 10.0, None), duration_s=0.8)) is Change.UPDATED
    assert [g.is_open for g in ledger.gaps()] == [True]
    assert ledger.add(gap(1, 10.0, 11.5)) is Change.CLOSED
    assert ledger.add(gap(1, 10.0, 11.5, hint="richer evidence")) is Change.REVISED
    assert [g.hint for g in ledger.closed()] == ["richer evidence"]
    assert ledger.open_gaps() == []
    tally = ledger.tally()[(0, "pcie_starved")]
    assert (tally.count, tally.seconds) == (1, 1.5)
    assert ledger.counts_by_kind() == {"pcie_starved": 1}


def test_a_retracted_gap_is_neither_shown_nor_counted() -> None:
    ledger = GapLedger()
    ledger.add(gap(1, 10.0, None))
    assert ledger.add(replace(gap(1, 10.0, 10.9), retracted=True)) is Change.RETRACTED
    assert ledger.gaps() == [] and ledger.tally() == {}
    # A retraction of a gap the ledger never saw open changes nothing.
    assert ledger.add(replace(gap(2, 20.0, 20.9), retracted=True)) is Change.IGNORED
    assert ledger.gaps() == []


def test_a_gap_retracted_at_a_hole_comes_back_closed_and_is_counted_once() -> None:
    """A hole cut it (retracted live: not known to be a gap yet); the GPU worked again after
    the hole: its closed version is a gap, counted then, once."""
    ledger = GapLedger()
    ledger.add(gap(1, 10.0, None))
    assert ledger.add(replace(gap(1, 10.0, 10.9), retracted=True)) is Change.RETRACTED
    assert ledger.add(gap(1, 10.0, 10.9)) is Change.CLOSED
    assert ledger.add(gap(1, 10.0, 10.9, hint="late evidence")) is Change.REVISED
    assert [g.gap_id for g in ledger.closed()] == [1]
    assert ledger.tally()[(0, "pcie_starved")].count == 1


def test_an_out_of_date_open_version_never_reopens_a_closed_gap() -> None:
    ledger = GapLedger()
    ledger.add(gap(1, 10.0, 11.0))
    assert ledger.add(gap(1, 10.0, None)) is Change.IGNORED
    assert [g.end_s for g in ledger.gaps()] == [11.0]


def test_views_are_in_start_order_across_gpus_and_tallies_by_gpu_and_kind() -> None:
    ledger = GapLedger()
    ledger.add(gap(2, 5.0, 6.0, gpu=1, kind="host_stall"))
    ledger.add(gap(1, 5.0, 5.5, gpu=0))
    ledger.add(gap(3, 7.0, None, gpu=0))
    assert [(g.gpu, g.gap_id) for g in ledger.gaps()] == [(0, 1), (1, 2), (0, 3)]
    assert [g.gap_id for g in ledger.closed()] == [1, 2]
    assert set(ledger.tally()) == {(0, "pcie_starved"), (1, "host_stall")}


def test_a_bounded_ledger_forgets_old_gaps_but_never_their_counts() -> None:
    ledger = GapLedger(max_closed=3)
    for i in range(1, 11):
        ledger.add(gap(i, float(i), i + 0.5))
    assert [g.gap_id for g in ledger.closed()] == [8, 9, 10]
    assert ledger.tally()[(0, "pcie_starved")].count == 10
    # A late version of a forgotten gap is not counted again, nor brought back.
    assert ledger.add(gap(2, 2.0, 2.5, hint="late")) is Change.IGNORED
    assert ledger.tally()[(0, "pcie_starved")].count == 10
    assert [g.gap_id for g in ledger.closed()] == [8, 9, 10]
