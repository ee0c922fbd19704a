"""A pinned-pool failure line of a size no GPU box can have (`size_gib=5e-324`, `1e-300` with
`pool_total_gib=1e300`, `1e308`: figures the parser takes, finite and not negative) is no size:
dropped where it is read (`values.size_field`), counted and said beside the advice, which goes
on without it. It made the advice's steps infinite: an OverflowError in `report`, the dashboard's
`?` and `s`, `--on-event`'s facts, and a silently empty /metrics. And a failure in building the
GPUs' verdict never takes /metrics down: it costs the verdict's families of that scrape,
counted and said (docs/bad-input.md)."""

from __future__ import annotations

import math
import urllib.request

import pytest
from parsed_logs import offline_events, offline_facts
from parsed_logs import starved_gap as gap_at
from prometheus_client.parser import text_string_to_metric_families
from test_pool_thread_advice import START, line

from gapwatch.core.models import GpuInfo, GpuSample, SessionHeader
from gapwatch.cuzk.advice import AdviceReport, advise
from gapwatch.cuzk.pin_need import PinNeed
from gapwatch.engine.session import Session
from gapwatch.engine.store import SeriesStore
from gapwatch.sinks import verdict_metrics
from gapwatch.sinks.prometheus import start_exporter


def failure_of(size_gib: str, pool_total_gib: str) -> list[str]:
    """One failed pin of `size_gib`, the pool holding `pool_total_gib`, as upstream writes it
    (pinned_pool.rs:61, 202; pipeline.rs:302), without the checkout's num_constraints."""
    return [
        line(38.57, "WARN", "cuzk_core::pinned_pool",
             f"cudaHostAlloc failed size_gib={size_gib} cuda_err=2"),
        line(38.571, "WARN", "cuzk_core::pinned_pool",
             f"pinned pool: cudaHostAlloc failed size_gib={size_gib}"),
        line(38.572, "WARN", "cuzk_core::pipeline",
             "pinned pool checkout FAILED — falling back to unpinned pool_free=0 "
             f"pool_total_gib={pool_total_gib}"),
    ]


def advise_pool(lines: list[str]) -> AdviceReport:
    facts = offline_facts(lines)
    start_s = max(e.t_wall_s for e in offline_events(lines)) + 1.0
    return advise([gap_at(facts, start_s, 60.0)], facts.view())


@pytest.mark.parametrize(("size_gib", "pool_total_gib", "dropped"), [
    ("5e-324", "7.765226", "size_gib=5e-324"),
    ("1e-300", "1e300", "size_gib=1e-300, pool_total_gib=1e+300"),
    ("1e308", "7.765226", "size_gib=1e+308"),
])
def test_a_failure_of_a_size_no_box_can_have_is_dropped_said_and_the_advice_goes_on_without_it(
        size_gib: str, pool_total_gib: str, dropped: str) -> None:
    report = advise_pool([*START, *failure_of(size_gib, pool_total_gib)])
    [first, *_] = report.advice
    said = [a.change for a in report.advice] + first.evidence
    # Said beside the advice, with what it was and how many figures were dropped.
    assert (f"the log's {dropped}: no size a GPU box can have (0, or a byte to 1 PiB), not "
            "used (") in "\n".join(first.evidence)
    # The steps go without it: the figure is not in the log read, never an infinite step.
    margin = {a.setting: a.change for a in report.advice}["[memory] safety_margin"]
    assert "the step needs, not in the log read: size_gib" in margin
    assert not any("inf GiB" in text or "= inf" in text for text in said)
    # A dropped pool_total_gib is not known: never the INFO lines' older 0 GiB in its place.
    assert not any("the pool held 0 GiB when pinning failed" in text for text in said)


def test_the_pinned_pool_arithmetic_never_raises_whatever_figures_it_is_given() -> None:
    """Figures that got past their bounds (a PinNeed made by hand) give no step, not a raise."""
    need = PinNeed(5e-324, "size_gib=5e-324", 1e300, "a line", "pool_total_gib", 20, 512.0)
    assert need.steps_left() is None
    assert need.margin_change() is not None
    cap = need.cap_change()
    assert cap is not None and cap.startswith("lower it; ")
    huge = PinNeed(1e-300, "size_gib=1e-300", math.inf, "a line", "pool_total_gib", 20, 1e300)
    assert huge.steps_left() is None and huge.cap_change() is not None


def _header() -> SessionHeader:
    return SessionHeader(
        gapwatch_version="test", host="box", source="sim", started_wall_s=1000.0,
        started_mono_ns=0, period_ms=100.0,
        gpus=[GpuInfo(index=0, name="H200", link_bytes_per_s=63.0e9)])


def _scrape(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=5) as resp:
        text = resp.read().decode()
    return {s.name: s.value for family in text_string_to_metric_families(text)
            for s in family.samples}


def test_a_verdict_that_raises_costs_its_families_only_counted_and_said_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The collector calls the advice (`why_now`) at every scrape: its failure emptied the
    whole reply, silently. Now the rest of the scrape is served."""
    def raising(*_: object) -> object:
        raise OverflowError("cannot convert float infinity to integer")

    monkeypatch.setattr(verdict_metrics, "why_now", raising)
    header = _header()
    session = Session(header, SeriesStore(header.gpus, 0.1))
    handle = start_exporter("127.0.0.1:0", session)
    try:
        session.on_record(GpuSample(gpu=0, t_mono_ns=10**8, t_wall_s=1000.1,
                                    interval_ns=10**8, sm_active_pct=80.0, gpu_util_pct=90.0,
                                    pcie_rx_bytes_per_s=None, pcie_tx_bytes_per_s=None,
                                    sm_source="gpm", pcie_source="gpm"))
        _scrape(handle.url)
        metrics = _scrape(handle.url)
        with urllib.request.urlopen(handle.url, timeout=5) as resp:
            text = resp.read().decode()
    finally:
        handle.stop()
    # Which family failed: the GPUs' verdict, not the PoSt advice.
    assert 'gapwatch_exporter_verdict_errors_total{family="verdict"} 3.0' in text
    assert 'gapwatch_exporter_verdict_errors_total{family="proof_advice"} 0.0' in text
    assert not any(name.startswith("gapwatch_gpu_verdict") for name in metrics)
    assert metrics["gapwatch_gpu_sm_active_ratio"] == 0.8  # the rest is served
    errors = [n.message for n in session.store.snapshot().notices if n.level == "error"]
    assert len(errors) == 1 and errors[0].startswith(
        "/metrics: the GPUs' verdict could not be built (OverflowError: cannot convert")
