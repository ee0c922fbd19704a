"""The chaining figure (the share of H2D copy time that ran while SMs were busy): high on the H200
recording where two workers chained with pinned buffers, low on the pageable one, from the copy
trace when there is one and from PCIe and SM activity otherwise (said which); the same in the
simulator; over the live window with the window before it; in the store's snapshot and /metrics."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from evaluation.simulate import simulate
from gapwatch.core.chaining import ChainingFigure, ChainingMeter
from gapwatch.core.config import DetectorConfig
from gapwatch.core.models import (
    CopyRecord,
    GpuHealth,
    GpuInfo,
    GpuSample,
    HardwareEvent,
    Record,
    SessionHeader,
)
from gapwatch.engine.session import Session
from gapwatch.engine.store import SeriesStore
from gapwatch.sinks.prometheus import start_exporter
from gapwatch.sources.files import read_any

DATA = Path(__file__).parent / "data" / "h200-copytrace"
H200 = GpuInfo(index=0, name="NVIDIA H200", link_gen=5, link_width=16, link_bytes_per_s=63e9)


def _figure(records: list[Record], gpus: list[GpuInfo], *, copies: bool = True,
            window_s: float | None = None) -> ChainingFigure | None:
    meter = ChainingMeter(gpus, DetectorConfig(), window_s=window_s)
    for r in records:
        if type(r) is GpuSample:
            meter.add_sample(r)
        elif type(r) is CopyRecord and copies:
            meter.add_copy(r)
    return meter.figure(0)


def _recorded(name: str) -> tuple[list[Record], list[GpuInfo]]:
    rec = read_any(DATA / name / "rec.jsonl.gz")
    return list(rec.records), list(rec.header.gpus)


def test_the_h200_chained_recording_chains_high_from_its_copy_trace() -> None:
    f = _figure(*_recorded("chained"))
    assert f is not None and f.basis == "copies"
    assert f.share > 0.85
    assert f.words() == f"chaining {f.share * 100:.0f} %"


def test_the_h200_pageable_recording_chains_low_from_its_copy_trace() -> None:
    f = _figure(*_recorded("pageable"))
    assert f is not None and f.basis == "copies"
    assert f.share < 0.5
    assert f.copy_s > 10  # pageable copies crawl: 16 s of H2D copy time in 30 s


def test_without_the_copy_trace_pcie_and_sm_activity_tell_the_two_apart_and_say_so() -> None:
    chained = _figure(*_recorded("chained"), copies=False)
    pageable = _figure(*_recorded("pageable"), copies=False)
    assert chained is not None and pageable is not None
    assert chained.basis == pageable.basis == "pcie"
    assert chained.basis_words() == "estimated from PCIe bytes and SM activity"
    assert chained.share > 0.7 > 0.5 > pageable.share


E2E = Path(__file__).parent / "data" / "h200-e2e"


def _truth_copy_s(name: str) -> float:
    """The load generator's own copy time: its intervals' H2D milliseconds summed."""
    truth = json.loads((E2E / name / "truth.json").read_text())
    return float(sum(i["h2d_ms"] for i in truth["intervals"])) / 1000.0


@pytest.mark.parametrize("name", ["chained", "pageable"])
def test_copy_seconds_from_pcie_are_estimated_from_the_bytes_not_counted_as_whole_samples(
        name: str) -> None:
    """F12: `report` of the H200 chained run (no copy trace) said "75 % of 4.8 s of copies
    (from PCIe and SM activity)" where its 38 copies of ~30 ms took 1.16 s: every 100 ms
    sample holding any H2D traffic counted whole. The seconds are labelled copies, so they are
    an estimate of copy time: within 30 % of the truth on the chained run (short pinned
    copies) and on the pageable one (copies that crawl through many samples), the share still
    far apart."""
    rec = read_any(E2E / name / "rec.jsonl.gz")
    f = _figure(list(rec.records), list(rec.header.gpus))
    truth = _truth_copy_s(name)
    assert f is not None and f.basis == "pcie"
    assert abs(f.copy_s / truth - 1) < 0.3, (f.copy_s, truth)
    assert (f.share > 0.7) if name == "chained" else (f.share < 0.5)


def test_a_gpu_without_sm_activity_gets_no_figure_rather_than_a_wrong_one() -> None:
    meter = ChainingMeter([H200], DetectorConfig())
    for i in range(100):
        meter.add_sample(GpuSample(0, i * 10**8, 1000.0 + i / 10, 10**8, None, 100.0, 5e9, 0.0,
                                   sm_source="util", pcie_source="counters"))
    assert meter.figure(0) is None


def _sample(t_s: float, sm: float, rx: float) -> GpuSample:
    return GpuSample(0, int(t_s * 1e9), 1000.0 + t_s, 10**8, sm, 90.0, rx, 1e8, sm_source="sim",
                     pcie_source="sim")


def test_a_fall_from_the_window_before_is_said_as_before_and_now() -> None:
    meter = ChainingMeter([H200], DetectorConfig(), window_s=60.0)
    for i in range(1200):  # 60 s chaining (copies under busy SMs), then 60 s not
        t = i / 10
        meter.add_sample(_sample(t, 93.0 if t < 60 else 41.0, 8e9))
    f = meter.figure(0)
    assert f is not None and f.before is not None
    assert f.words() == "chaining 93 % → 41 %"


def test_copies_arriving_before_the_samples_that_cover_them_are_placed_when_those_come() -> None:
    meter = ChainingMeter([H200], DetectorConfig(), window_s=60.0)
    meter.add_sample(_sample(0.0, 100.0, 0.0))
    # A 50 ms copy in the next sample's interval, heard before that sample.
    meter.add_copy(CopyRecord(1000.03, 1000.08, 1 << 28, "h2d", "pinned", "device", 0, 0, 7, 1,
                              1, 4242))
    assert meter.figure(0) is None
    meter.add_sample(_sample(0.1, 50.0, 5e9))
    f = meter.figure(0)
    assert f is not None and f.basis == "copies"
    assert f.copy_s == pytest.approx(0.05) and f.share == pytest.approx(0.5)


def test_the_simulator_chains_high_and_falls_in_its_pageable_breakdown() -> None:
    """The simulator has no copy trace: the copy time estimated from PCIe bytes and SM
    activity still puts the breakdown far below chaining."""
    shares = {}
    for scenario in ("chained", "pageable"):
        run = simulate(scenario, duration_s=39.0)
        meter = ChainingMeter(list(run.header.gpus), DetectorConfig(), window_s=20.0)
        for r in run.records:
            if type(r) is GpuSample:
                meter.add_sample(r)
        f = meter.figure(0)
        assert f is not None and f.basis == "pcie", scenario
        shares[scenario] = f.share
        if scenario == "pageable":  # chained for its first ~20 s, then broken down
            assert f.before is not None and f.before - f.share > 0.15
            assert f.words().startswith("chaining ") and " → " in f.words()
    assert shares["chained"] > 0.9
    assert shares["pageable"] < 0.65


def test_the_store_feeds_the_figure_and_metrics_serve_it_with_health_and_errors() -> None:
    header = SessionHeader(gapwatch_version="t", host="box", source="test", started_wall_s=0.0,
                           started_mono_ns=0, period_ms=100.0, gpus=[H200])
    store = SeriesStore(header.gpus, 0.1)
    session = Session(header, store)
    handle = start_exporter("127.0.0.1:0", session)
    try:
        for i in range(100):
            session.on_record(_sample(i / 10, 80.0, 8e9))
        session.on_record(GpuHealth(gpu=0, t_mono_ns=1, t_wall_s=1000.0,
                                    memory_used_bytes=60 << 30, memory_total_bytes=141 << 30,
                                    temperature_c=None, power_w=650.0, power_limit_w=700.0,
                                    sm_clock_mhz=1980, clocks_event_mask=0x4 | 0x1))
        session.on_record(HardwareEvent(gpu=0, t_mono_ns=2, t_wall_s=1000.5, kind="xid",
                                        code=79))
        snap = store.snapshot()
        assert snap.chaining[0].share == pytest.approx(0.8)
        assert snap.health[0].power_w == 650.0
        with urllib.request.urlopen(handle.url, timeout=5) as resp:
            text = resp.read().decode()
    finally:
        handle.stop()
    got = {(s.name, tuple(sorted(s.labels.items()))): s.value
           for fam in text_string_to_metric_families(text) for s in fam.samples}
    assert got[("gapwatch_chaining_ratio", (("gpu", "0"),))] == pytest.approx(0.8)
    assert got[("gapwatch_chaining_basis_info", (("basis", "pcie"), ("gpu", "0")))] == 1.0
    # nvidia-smi's GPU-Util (90 in every sample) over the window the busy share is of.
    assert got[("gapwatch_gpu_util_window_ratio", (("gpu", "0"),))] == pytest.approx(0.9)
    assert got[("gapwatch_gpu_power_watts", (("gpu", "0"),))] == 650.0
    assert got[("gapwatch_gpu_power_limit_watts", (("gpu", "0"),))] == 700.0
    assert got[("gapwatch_gpu_sm_clock_hertz", (("gpu", "0"),))] == 1.98e9
    assert got[("gapwatch_gpu_clocks_event_reason", (("gpu", "0"), ("reason", "sw_power_cap")))] \
        == 1.0
    assert got[("gapwatch_gpu_clocks_event_reason", (("gpu", "0"), ("reason", "hw_slowdown")))] \
        == 0.0
    # A reading NVML could not give is absent, never 0.
    assert not any(name == "gapwatch_gpu_temperature_celsius" for name, _ in got)
    assert got[("gapwatch_gpu_hardware_events_total", (("gpu", "0"), ("kind", "xid")))] == 1.0
    assert got[("gapwatch_gpu_hardware_events_total",
                (("gpu", "0"), ("kind", "ecc_uncorrected")))] == 0.0


def test_the_worst_minute_is_the_same_as_summing_every_window_and_linear_in_the_run() -> None:
    """The whole-run meter of a report keeps a bucket per 10 s: the worst minute of a day was
    every window summed over every bucket (600 M additions a GPU). Each window now sums its own
    buckets, in the same order, so the figure is the same to the last bit."""
    res = simulate("pageable", seed=5, duration_s=900, gpus=1)
    meter = ChainingMeter(res.header.gpus, DetectorConfig(), window_s=None)
    for r in res.records:
        if isinstance(r, GpuSample):
            meter.add_sample(r)
    g = meter._gpus[0]
    assert len(g.buckets) > 60
    slow = meter._worst_by_sums(g, 6, "pcie", 1.0)
    assert slow is not None and meter.worst_window(0) == slow


def test_a_wall_clock_stepped_years_ahead_costs_the_worst_minute_no_window_per_ten_seconds(
        ) -> None:
    """Buckets are by wall time: a recording whose clock stepped 10 years ahead inside it had
    its worst minute looked for in every 10 s window between (31 million, 10 s of `report`
    and of each side of `compare`; to the year 2262, minutes). A window that holds no bucket
    has no copy time, never the worst: only windows that hold one are summed."""
    from gapwatch.core.chaining import _window_starts

    meter = ChainingMeter([H200], DetectorConfig(), window_s=None)
    ahead = 10 * 365 * 86400.0
    for i in range(1200):  # 2 minutes chaining at 93 %, then 2 minutes at 41 %, 10 years on
        t = i / 10
        meter.add_sample(_sample(t, 93.0, 8e9))
        meter.add_sample(_sample(t + ahead, 41.0, 8e9))
    worst = meter.worst_window(0)
    g = meter._gpus[0]
    # Only windows that hold a bucket are looked at: at most a window's buckets each (31 M).
    assert len(list(_window_starts(sorted(g.buckets), 6))) <= 6 * len(g.buckets)
    assert worst is not None and worst[1] == pytest.approx(0.41, abs=0.02)
    # A window over the later minutes alone (one starting before them holds them as much:
    # equal shares, the first that rounding leaves lowest).
    assert worst[0] > 1000.0 + ahead - 60.0
    assert meter._worst_by_sums(g, 6, "pcie", 1.0) == worst


def test_a_figure_of_almost_no_copy_time_says_no_copies_to_speak_of_not_a_share() -> None:
    """The H200 restart recording (a GPU idle through a restart) has 0.004 s of copy time
    estimated from stray PCIe bytes: its report said "0 % of 0.0 s of copies", a share of
    noise. Below `MIN_COPY_S` every place that words the figure says there were no copies to
    speak of; from it on, the share; `--json` and /metrics keep the numbers."""
    from gapwatch.config import Config
    from gapwatch.core.chaining import MIN_COPY_S, chain_cell_share
    from gapwatch.core.health import health_cell
    from gapwatch.offline.report import build_report, to_json
    from gapwatch.offline.report_text import format_text

    none = ChainingFigure(0, 0.0, 0.004, "pcie", 60.0, before=0.9)
    assert none.words() == "chaining: no copies to speak of"
    assert not none.fell()  # a "fall" to a share of nothing is no fall
    assert chain_cell_share(none) == "-" and chain_cell_share(None) == "?"
    assert health_cell(0, None, none).endswith("c  -")  # no copies: not "?" (no reading)
    some = ChainingFigure(0, 0.0, MIN_COPY_S, "pcie", 60.0)
    assert some.words() == "chaining 0 %" and chain_cell_share(some) == "0%"
    assert health_cell(0, None, some).endswith("c  0")

    report = build_report(Path(__file__).parent / "data" / "h200-restart" / "restart.jsonl.gz",
                          Config(), workers=1)
    text = format_text(report)
    assert "  GPU 0: no copies to speak of (under 0.1 s of copy time" in text, text
    assert "of 0.0 s of copies" not in text
    figure = to_json(report)["chaining"]["0"]
    assert figure["share"] == 0.0 and 0.0 < figure["copy_s"] < MIN_COPY_S
