"""Property tests: the detector on arbitrary sample streams, and on the simulator with truth."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation.scoring import score
from evaluation.simulate import simulate
from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import GapDetector
from gapwatch.core.models import Gap, GpuInfo, GpuSample, StateChange

T0 = 1_796_000_000.0
reading = st.one_of(
    st.none(), st.just(math.nan), st.floats(-50, -0.001),
    st.floats(0, 8), st.floats(20, 100), st.just(0.0),
)  # fmt: skip
rate = st.one_of(st.none(), st.just(math.nan), st.just(-1.0), st.floats(0, 70e9))
step = st.tuples(
    # time step: mostly one period with jitter, sometimes a hole, sometimes backwards
    st.one_of(st.integers(80, 120), st.integers(80, 120), st.integers(2000, 4000),
              st.integers(-300, 0)),
    reading, rate, rate,
    st.one_of(st.none(), st.integers(-5, 400)),  # interval_ms, sometimes nonsense
    st.integers(0, 1),  # gpu
)  # fmt: skip


def run_stream(steps: list[tuple[int, float | None, float | None, float | None, int | None, int]]
               ) -> tuple[GapDetector, list[Gap | StateChange], list[tuple[int, float, float]]]:
    det = GapDetector(DetectorConfig(), [GpuInfo(index=0), GpuInfo(index=1)], period_s=0.1)
    out: list[Gap | StateChange] = []
    last: dict[int, int] = {}  # last accepted time per GPU (ms)
    holes: list[tuple[int, float, float]] = []
    det.dropped_expected = 0  # type: ignore[attr-defined]
    for dt, sm, rx, tx, interval_ms, gpu in steps:
        prev = last.get(gpu, 1000)
        t = prev + dt
        if gpu in last and t <= prev:
            det.dropped_expected += 1  # type: ignore[attr-defined]
        else:
            last[gpu] = t
            if dt >= 2000:
                holes.append((gpu, T0 + prev / 1000, T0 + t / 1000))
        s = GpuSample(gpu=gpu, t_mono_ns=t * 1_000_000, t_wall_s=T0 + t / 1000,
                      interval_ns=None if interval_ms is None else interval_ms * 1_000_000,
                      sm_active_pct=sm, gpu_util_pct=None, pcie_rx_bytes_per_s=rx,
                      pcie_tx_bytes_per_s=tx, sm_source="sim")
        out += det.feed_gpu(s)
    out += det.finish()
    return det, out, holes


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, max_size=300))
def test_any_stream_gives_sane_gaps(steps: list) -> None:  # type: ignore[type-arg]
    det, out, holes = run_stream(steps)
    latest: dict[int, Gap] = {}
    for e in out:
        if isinstance(e, Gap):
            latest[e.gap_id] = e
    # Every gap published open was settled: closed or retracted, never left open.
    assert all(g.end_s is not None for g in latest.values())
    gaps = sorted((g for g in latest.values() if not g.retracted), key=lambda g: g.start_s)
    for g in gaps:
        assert g.duration_s >= 0.3 - 1e-9
        assert g.end_s is not None and g.end_s >= g.start_s
        assert g.kind in ("pcie_starved", "transfer_bound", "host_stall", "unknown")
        # Never bridges a hole in the data.
        for gpu, a, b in holes:
            assert not (gpu == g.gpu and g.start_s < a and g.end_s > b)
    for gpu in (0, 1):
        mine = [g for g in gaps if g.gpu == gpu]
        for a, b in zip(mine, mine[1:], strict=False):
            assert a.end_s is not None and a.end_s <= b.start_s + 1e-9  # no overlap
    assert det.counters["out_of_order"] == det.dropped_expected  # type: ignore[attr-defined]


KINDS = {"pageable": "pcie_starved", "host-stall": "host_stall", "transfer-bound": "transfer_bound"}


def sim_gaps(scenario: str, seed: int) -> tuple[list[Gap], list[StateChange], object]:
    res = simulate(scenario, seed=seed, duration_s=60.0)  # type: ignore[arg-type]
    det = GapDetector(DetectorConfig(), list(res.header.gpus), period_s=0.1)
    out: list[Gap | StateChange] = []
    for r in res.records:
        if isinstance(r, GpuSample):
            out += det.feed_gpu(r)
    out += det.finish()
    latest = {e.gap_id: e for e in out if isinstance(e, Gap)}
    gaps = [g for g in latest.values() if g.end_s is not None and not g.retracted]
    return gaps, [e for e in out if isinstance(e, StateChange)], res


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(sorted(KINDS)), st.integers(0, 100_000))
def test_simulated_breakdowns_are_found_with_their_kind(scenario: str, seed: int) -> None:
    gaps, states, res = sim_gaps(scenario, seed)
    s = score(gaps, res.truth, truth_kind=KINDS[scenario])  # type: ignore[attr-defined]
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
            s = score(gaps, res.truth, truth_kind=kind)  # type: ignore[attr-defined]
            ok += sum(1 for tg, g in s.matched if g.kind == tg.kind)
            n += len(s.matched)
        assert n > 50 and ok / n >= 0.95, (scenario, ok, n)
