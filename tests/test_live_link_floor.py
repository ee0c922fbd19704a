"""The live verdict's payoff is bounded by the link's floor, as the report's is (e16c55ba).

The verdict (`cuzk.why_now`: the dashboard's headline, `--on-event`'s words, the alert's `why`)
works its payoff out over the detector's 30 s window. Copies are work too: the window can never
be shorter than the time the GPU's link needs for the bytes it carried in it. On the H200
transfer-bound recording the window held up to 25 s of transfer-bound idle whose copies ran at
94 % of the link, and the live headline said up to ~6.1x where the link allows ~1.3x. The detector
now keeps each second's PCIe bytes beside its busy time (`WindowNow.pcie_rx_bytes`, `tx`), and
the verdict's payoff takes their floor, said with the link's words where it set the figure.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import msgspec.structs
import pytest
from sim_recordings import stores_when
from test_detect_unit import LINK, detector, sample

from gapwatch.config import Config
from gapwatch.core.models import Gap, GpuInfo, StateChange
from gapwatch.core.payoff import if_closed
from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.core.verdict import WindowNow
from gapwatch.cuzk.why_now import WhyNow, why_now
from gapwatch.engine.runtime import Runtime, build_runtime
from gapwatch.sinks.snapshot import SUMMARY_NAME, write_snapshot
from gapwatch.sinks.verdict_metrics import verdict_families
from gapwatch.ui.gap_detail import advice_section

E2E = Path(__file__).parent / "data" / "h200-e2e"


@dataclass(frozen=True)
class Live:
    """A verdict as the live path had it (after a gap closed, a state change, the end)."""

    why: WhyNow
    window: WindowNow


@cache
def _replayed(case: str) -> tuple[Live, ...]:
    """The recording replayed through the live path (`replay`'s runtime, at full speed): GPU0's
    verdict after every gap that closed and state change, and at the end."""
    taken = _replay(case)[0]
    return tuple(Live(why_now(s, 0), s.windows[0]) for s in taken if 0 in s.windows)


#: The budget line the same load generator's H100 run wrote first: given to the pageable
#: replay where a test needs its pinned pool's gaps advised with a setting and a payoff (its
#: pool failed with ~91 GiB of its 125.9 GiB free: without the budget, not RAM and no setting;
#: with it, a budget above the host's RAM, lowered: tests/test_pinned_pool_host.py).
BUDGET_LINE = ("2026-11-30T10:03:38.900000Z  INFO cuzk_core::engine: memory budget initialized "
               "total_budget_gib=512\n")


@pytest.fixture(scope="module")
def budget_log(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("budget") / "budget.log"
    path.write_text(BUDGET_LINE)
    return str(path)


@cache
def _replay(case: str, log: str | None = None) -> tuple[tuple[StoreSnapshot, ...], Runtime]:
    """The store after every gap that closed and state change, and at the end; the runtime.
    `log`: a log of the run to read beside the recording's own lines (`replay --log`)."""
    rt = build_runtime(Config(), f"replay:{E2E / case / 'rec.jsonl.gz'}", speed=0,
                       log_paths=[log] if log is not None else None)
    taken = stores_when(rt, lambda ev, _n: isinstance(ev, Gap | StateChange))
    taken.append(rt.store.snapshot())
    return tuple(taken), rt


def _recorded_bytes_s(case: str, start_wall_s: float, end_wall_s: float) -> float:
    """The seconds the link (the recording's own) needs for the larger direction's bytes the
    recording's samples read between two wall times: each sample's rate x its interval, read
    from the file, not from the detector."""
    rx = tx = 0.0
    link = None
    with gzip.open(E2E / case / "rec.jsonl.gz", "rt") as f:
        for line in f:
            r = json.loads(line)
            if r["type"] == "header":
                link = r["gpus"][0]["link_bytes_per_s"]
            elif (r["type"] == "gpu" and r["interval_ns"]
                  and start_wall_s <= r["t_wall_s"] <= end_wall_s):
                rx += (r["pcie_rx_bytes_per_s"] or 0.0) * r["interval_ns"] / 1e9
                tx += (r["pcie_tx_bytes_per_s"] or 0.0) * r["interval_ns"] / 1e9
    assert link
    return max(rx, tx) / float(link)


def test_a_transfer_bound_windows_live_payoff_is_within_its_links_limit() -> None:
    """Every verdict the replay had: its payoff never past what the bytes its window's samples
    read leave (the window less a second at its start, so the bytes counted are surely in
    it: a smaller floor, a looser bound), and said as the link's limit where that set it."""
    said = [x for x in _replayed("transfer-bound") if x.why.payoff_gain is not None]
    assert said
    for x in said:
        assert x.why.payoff_gain is not None and x.why.payoff_span_s is not None
        need_s = _recorded_bytes_s("transfer-bound", x.window.start_wall_s + 1.0,
                                   x.window.end_wall_s)
        assert x.why.payoff_gain <= x.why.payoff_span_s / need_s * 1.001, x.why.line()
    # The window that held the most transfer-bound idle (~25 s): the gaps' figure would be
    # ~6.1x; the link's, said as its limit, ~1.3x.
    most = max(said, key=lambda x: x.why.idle_s)
    assert most.why.idle_s > 20.0 and most.why.cause == "copies_not_overlapped"
    assert most.why.payoff_gain is not None and 1.1 < most.why.payoff_gain < 1.5
    assert "(the link's limit: its bytes need 2" in most.why.line(), most.why.line()
    assert most.why.payoff_link_limit_s is not None


def test_a_pageable_windows_live_payoff_is_unchanged_by_the_floor() -> None:
    """Pageable copies trickle: their bytes need ~1 s of a 30 s window, far under what closing
    the gaps leaves, so the figure is the gaps' own, not said as the link's limit."""
    said = [x for x in _replayed("pageable") if x.why.payoff_gain is not None]
    assert said
    for x in said:
        assert x.why.payoff_span_s is not None
        assert x.why.payoff_gain == if_closed(None, x.why.payoff_span_s,
                                              x.why.idle_s).throughput_gain
        assert x.why.payoff_link_limit_s is None and "link's limit" not in x.why.line()
        assert x.window.link_floor_s is not None and x.window.link_floor_s < 5.0


# -- the detector's window bytes -------------------------------------------------------------


def test_the_windows_bytes_are_each_directions_rate_over_the_seconds_it_holds() -> None:
    """Busy and idle samples alike, the second being counted too; older seconds slid out."""
    det = detector()
    t = 0.0
    for i in range(600):  # 60 s: busy 0.5 s, idle 0.5 s, 10 GB/s in, 1 GB/s out
        t = round(0.1 * (i + 1), 6)
        det.feed_gpu(sample(t, 90.0 if i % 10 < 5 else 0.0, rx=10e9, tx=1e9))
    window = det.window_now(0)
    assert window is not None and window.data_s == 30.0
    # The window's 30 one-second buckets, the last one partly counted: 29.x s of samples.
    assert window.pcie_rx_bytes == pytest.approx(10e9 * 30.0, rel=0.04)
    assert window.pcie_tx_bytes == pytest.approx(1e9 * 30.0, rel=0.04)
    assert window.link_bytes_per_s == LINK
    assert window.link_floor_s == pytest.approx(10e9 * 30.0 / LINK, rel=0.04)


def test_a_window_with_no_pcie_reading_has_no_floor_not_one_of_nothing() -> None:
    det = detector()
    for i in range(100):
        det.feed_gpu(sample(round(0.1 * (i + 1), 6), 90.0 if i % 10 < 5 else 0.0,
                            rx=None, tx=None))
    window = det.window_now(0)
    assert window is not None
    assert window.pcie_rx_bytes is None and window.pcie_tx_bytes is None
    assert window.link_floor_s is None


@pytest.mark.parametrize("unread_s", [30.0, 10.0])
def test_a_window_whose_pcie_readings_stopped_has_bytes_not_known_never_zero(
        unread_s: float) -> None:
    """PCIe read at 30 GB/s for 40 s, then `unread_s` of busy and idle seconds with no PCIe
    reading (a sampler that lost its counters). The window's seconds with no reading counted
    0 bytes: a window past the readings said the link needed 0 s (a floor of nothing), one a
    third past them a floor of the bytes of its first 20 s only. Missing is None: a second of
    the window with data and no reading makes its bytes not known, and the floor with them."""
    det = detector()
    n = 400
    for i in range(n + int(unread_s * 10)):
        det.feed_gpu(sample(round(0.1 * (i + 1), 6), 90.0 if i % 10 < 5 else 0.0,
                            rx=30e9 if i < n else None, tx=0.0 if i < n else None))
    window = det.window_now(0)
    assert window is not None and window.data_s == 30.0
    assert window.pcie_rx_bytes is None and window.pcie_tx_bytes is None
    assert window.link_floor_s is None


# -- the verdict's words and series ----------------------------------------------------------


def _snap_with(rx_bytes: float | None) -> StoreSnapshot:
    window = WindowNow(gpu=0, t_mono_ns=100, end_wall_s=100.0, window_s=30.0, data_s=30.0,
                       pcie_rx_bytes=rx_bytes, pcie_tx_bytes=None, link_bytes_per_s=63e9)
    gaps = tuple(Gap(i, 0, "transfer_bound", int(s * 1e9), s, int((s + 2.0) * 1e9), s + 2.0,
                     2.0, 60e9, None, 63e9) for i, s in enumerate((72.0, 76.0, 80.0, 84.0,
                                                                  88.0, 92.0, 96.0), 1))
    return StoreSnapshot(1, (GpuInfo(index=0),), {}, (), (), gaps,
                         {0: StateChange(0, 100, 100.0, "GAPS", 0.5)}, (),
                         windows={0: window})


def test_the_verdicts_line_and_series_say_the_links_limit_where_it_set_the_figure() -> None:
    """14 s of gaps in 30 s: 1.88x by the gaps; 63 GB/s x 24 s of bytes need 24 s: 1.25x."""
    why = why_now(_snap_with(63e9 * 24.0), 0)
    assert why.payoff_gain == pytest.approx(30.0 / 24.0)
    assert why.payoff_link_limit_s == pytest.approx(24.0)
    assert why.line().endswith("payoff ~1.25x over the last 30 s (7 gaps) "
                               "(the link's limit: its bytes need 24 s)")
    # Where the line says the span and count already, the limit is still said.
    assert why.payoff_words(30.0, 7) == "payoff ~1.25x (the link's limit: its bytes need 24 s)"
    series = {m.name: m for m in verdict_families(_snap_with(63e9 * 24.0))}
    limit = series["gapwatch_gpu_verdict_payoff_link_limit_seconds"]
    assert [s.value for s in limit.samples] == [pytest.approx(24.0)]


def test_a_verdict_the_link_did_not_limit_says_and_exports_no_limit() -> None:
    for rx in (63e9 * 2.0, None):
        why = why_now(_snap_with(rx), 0)
        assert why.payoff_gain == pytest.approx(30.0 / 16.0)
        assert why.payoff_link_limit_s is None and "link's limit" not in why.line()
        series = {m.name: m for m in verdict_families(_snap_with(rx))}
        assert series["gapwatch_gpu_verdict_payoff_link_limit_seconds"].samples == []


def test_the_alerts_why_says_the_links_limit_as_the_verdicts_line() -> None:
    """The alert's `why` (a Prometheus template over the verdict's series, pinned by promtool's
    unit tests) says the link's limit as `WhyNow.line` does for the same facts."""
    from gapwatch.cuzk.why_now import NO_CAUSE

    why = WhyNow(5, "GAPS", "copies_not_overlapped",
                 "copies at line rate, not overlapped with compute", NO_CAUSE, "", 1.29,
                 payoff_span_s=30.0, payoff_gaps=17, payoff_link_limit_s=23.2)
    rules = Path(__file__).resolve().parent.parent / "deploy" / "prometheus"
    assert f'why: "{why.line()}"' in (rules / "gapwatch.rules.test.yml").read_text()
    assert "gapwatch_gpu_verdict_payoff_link_limit_seconds" in (
        rules / "gapwatch.rules.yml").read_text()


# -- the payoffs over the samples in memory: the gap detail's, summary.md's --------------------


def _flooded(snap: StoreSnapshot, share: float) -> StoreSnapshot:
    """The store with GPU0's samples copying host-to-device at `share` of its link all along
    (a transfer-bound box whose gaps a setting closes: what the floor is for)."""
    link = snap.gpus[0].link_bytes_per_s
    assert link
    samples = tuple(msgspec.structs.replace(x, pcie_rx_bytes_per_s=share * link)
                    for x in snap.gpu_samples[0])
    return replace(snap, gpu_samples={0: samples})


def _advised_gap(snap: StoreSnapshot) -> Gap:
    """The pageable run's latest closed slow-copy gap (advised with a setting and its payoff:
    its last gap waited on the host, which no setting closes and no payoff is said for)."""
    return [g for g in snap.gaps if g.gpu == 0 and not g.is_open and g.kind == "pcie_starved"][-1]


def test_the_gap_details_payoff_takes_the_floor_of_the_samples_in_memory(budget_log: str) -> None:
    snap = _replay("pageable", budget_log)[0][-1]
    gap = _advised_gap(snap)
    plain = "\n".join(advice_section(gap, snap))
    assert "payoff if closed" in plain and "link's limit" not in plain
    # A link full all along: closing the gap gains nothing its bytes leave room for.
    full = "\n".join(advice_section(gap, _flooded(snap, 1.0)))
    assert "throughput ~1.00x" in full and "(the link's limit: its bytes need" in full, full


def test_summary_mds_payoff_takes_the_floor_of_the_samples_it_holds(tmp_path: Path,
                                                                     budget_log: str) -> None:
    snaps, rt = _replay("pageable", budget_log)
    snap = snaps[-1]
    t = snap.gpu_samples[0][-1].t_wall_s

    def advice(s: StoreSnapshot, into: Path) -> str:
        path = write_snapshot(into, s, rt.header, rt.config, t_wall_s=t)
        return (path / SUMMARY_NAME).read_text().split("## What to change", 1)[1]

    plain = advice(snap, tmp_path / "plain")
    assert "payoff if closed" in plain and "link's limit" not in plain
    full = advice(_flooded(snap, 1.0), tmp_path / "full")
    # (Markdown text: its `~` escaped.)
    assert "1.00x over" in full and "(the link's limit: its bytes need" in full, full
