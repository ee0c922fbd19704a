"""Property tests: the detector on arbitrary sample streams, and on the simulator with truth."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation.scoring import score
from evaluation.simulate import SimResult, simulate
from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import GapDetector
from gapwatch.core.ledger import GapLedger
from gapwatch.core.models import GAP_KINDS, Gap, GapKind, GpuInfo, GpuSample, StateChange
from gapwatch.sources.sim import ScenarioName

T0 = 1_796_000_000.0
#: (time step ms, SM %, RX, TX, interval ms, gpu)
Step = tuple[int, float | None, float | None, float | None, int | None, int]
reading: st.SearchStrategy[float | None] = st.one_of(
    st.none(), st.just(math.nan), st.floats(-50, -0.001),
    st.floats(0, 8), st.floats(20, 100), st.just(0.0),
)  # fmt: skip
rate = st.one_of(st.none(), st.just(math.nan), st.just(-1.0), st.floats(0, 70e9))
# Time step: mostly one period with jitter; 3 % holes, 3 % backwards (or standing still).
time_step = st.integers(0, 99).flatmap(
    lambda r: st.integers(2000, 4000) if r < 3 else st.integers(-300, 0) if r < 6
    else st.integers(80, 120))
interval_ms = st.one_of(st.none(), st.integers(-5, 400))  # sometimes nonsense


def _run_of(level: st.SearchStrategy[float | None], gpu: int) -> st.SearchStrategy[list[Step]]:
    """1-15 samples of `gpu` at levels from `level`."""
    return st.lists(st.tuples(time_step, level, rate, rate, interval_ms, st.just(gpu)),
                    min_size=1, max_size=15)


def _runs(*levels: st.SearchStrategy[float | None]) -> st.SearchStrategy[list[Step]]:
    """Runs at each of `levels` in turn, on one GPU."""
    return st.integers(0, 1).flatmap(lambda gpu: st.tuples(
        *(_run_of(level, gpu) for level in levels)).map(lambda runs: sum(runs, [])))


busy: st.SearchStrategy[float | None] = st.floats(20, 100)
idle: st.SearchStrategy[float | None] = st.floats(0, 8)
# Busy-idle-busy runs make gaps of every length (idle runs of 1-15 samples, holes and junk
# inside some); runs of junk readings and lone runs break them.
stream = st.lists(
    st.one_of(_runs(busy, idle, busy), _runs(busy, idle, busy), _runs(reading), _runs(idle),
              _runs(busy)),
    max_size=20).map(lambda runs: [step for run in runs for step in run])


#: The detector's own settings: the properties hold for what it is configured with.
CONFIG = DetectorConfig()
MIN_GAP_S = CONFIG.min_gap_ms / 1000


@dataclass
class Run:
    det: GapDetector
    #: The gaps, as every output sees them (the one ledger rule).
    ledger: GapLedger
    #: (gpu, start, end) of every hole the stream left in a GPU's data.
    holes: list[tuple[int, float, float]]
    #: Samples that went back in time (or stood still): the detector must drop each.
    backwards: int


def run_stream(steps: list[Step]) -> Run:
    det = GapDetector(CONFIG, [GpuInfo(index=0), GpuInfo(index=1)], period_s=0.1)
    ledger = GapLedger()
    last: dict[int, int] = {}  # last accepted time per GPU (ms)
    run = Run(det, ledger, [], 0)
    for dt, sm, rx, tx, interval_ms, gpu in steps:
        prev = last.get(gpu, 1000)
        t = prev + dt
        if gpu in last and t <= prev:
            run.backwards += 1
        else:
            last[gpu] = t
            if dt >= 2000:
                run.holes.append((gpu, T0 + prev / 1000, T0 + t / 1000))
        s = GpuSample(gpu=gpu, t_mono_ns=t * 1_000_000, t_wall_s=T0 + t / 1000,
                      interval_ns=None if interval_ms is None else interval_ms * 1_000_000,
                      sm_active_pct=sm, gpu_util_pct=None, pcie_rx_bytes_per_s=rx,
                      pcie_tx_bytes_per_s=tx, sm_source="sim")
        _add_gaps(ledger, det.feed_gpu(s))
    _add_gaps(ledger, det.finish())
    return run


def _add_gaps(ledger: GapLedger, out: list[Gap | StateChange]) -> None:
    for e in out:
        if isinstance(e, Gap):
            ledger.add(e)


@pytest.mark.slow
# 80 streams a run (each of up to ~900 samples): drawing them is most of the cost (~50 ms a
# stream), and each run of the suite draws new ones, so the runs add up to far more.
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream)
def test_any_stream_gives_sane_gaps(steps: list[Step]) -> None:
    run = run_stream(steps)
    # Every gap published open was settled: closed or retracted, never left open.
    assert run.ledger.open_gaps() == []
    gaps = run.ledger.closed()
    for g in gaps:
        assert g.duration_s >= MIN_GAP_S - 1e-9
        assert g.end_s is not None and g.end_s >= g.start_s
        assert g.kind in GAP_KINDS
        # Never bridges a hole in the data.
        for gpu, a, b in run.holes:
            assert not (gpu == g.gpu and g.start_s < a and g.end_s > b)
    for gpu in (0, 1):
        mine = sorted((g for g in gaps if g.gpu == gpu), key=lambda g: g.start_s)
        for one, the_next in zip(mine, mine[1:], strict=False):
            assert one.end_s is not None and one.end_s <= the_next.start_s + 1e-9  # no overlap
    assert run.det.counters["out_of_order"] == run.backwards


KINDS: dict[ScenarioName, GapKind] = {
    "pageable": "pcie_starved", "host-stall": "host_stall", "transfer-bound": "transfer_bound",
}


def sim_gaps(scenario: ScenarioName, seed: int) -> tuple[list[Gap], list[StateChange], SimResult]:
    res = simulate(scenario, seed=seed, duration_s=60.0)
    det = GapDetector(CONFIG, list(res.header.gpus), period_s=0.1)
    ledger = GapLedger()
    states: list[StateChange] = []
    for r in res.records:
        if isinstance(r, GpuSample):
            out = det.feed_gpu(r)
            _add_gaps(ledger, out)
            states += [e for e in out if isinstance(e, StateChange)]
    out = det.finish()
    _add_gaps(ledger, out)
    states += [e for e in out if isinstance(e, StateChange)]
    return ledger.closed(), states, res


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(sorted(KINDS)), st.integers(0, 100_000))
def test_simulated_breakdowns_are_found_with_their_kind(scenario: ScenarioName, seed: int) -> None:
    gaps, states, res = sim_gaps(scenario, seed)
    s = score(gaps, res.truth, truth_kind=KINDS[scenario])
    assert s.n_truth > 0
    assert s.recall >= 0.9, s.summary()
    assert s.precision >= 0.9, s.summary()
    assert (s.kind_accuracy or 0) >= 0.85, s.summary()
    assert (s.median_edge_error_s or 0) <= 0.15, s.summary()
    if scenario == "pageable":
        assert any(st_.state == "BREAKDOWN" for st_ in states)


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 100_000))
def test_chained_scenario_has_no_gap_and_no_breakdown(seed: int) -> None:
    gaps, states, _ = sim_gaps("chained", seed)
    assert gaps == []
    assert not any(s.state == "BREAKDOWN" for s in states)


def test_kind_accuracy_over_many_seeds_meets_the_goal() -> None:
    for scenario, kind in KINDS.items():
        ok = n = 0
        for seed in range(10):
            gaps, _, res = sim_gaps(scenario, seed)
            s = score(gaps, res.truth, truth_kind=kind)
            ok += sum(1 for tg, g in s.matched if g.kind == tg.kind)
            n += len(s.matched)
        assert n > 50 and ok / n >= 0.95, (scenario, ok, n)
