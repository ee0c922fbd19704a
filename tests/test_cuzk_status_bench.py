"""The GPU proof of issue 14 without a GPU: the load generator's status tracker (cuzk's JSON,
the one lock its workers and snapshots share, timed) and the bench's scoring on synthetic data.
(The orchestration itself, bench/cuzk_status_h200.py, runs here with `--smoke`; it is not
tested: it is not something users run.)"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from evaluation import cuzk_status_h200 as cs
from evaluation import gpu_loadgen as lg
from gapwatch.cuzk.causes import snapshot_cause, synthesis_drift
from gapwatch.cuzk.pipeline import (
    POREP_PARTITION_FULL_BYTES,
    SNAP_PARTITION_FULL_BYTES,
    Capacity,
    PipelineFacts,
)
from gapwatch.cuzk.status import parse_status

ROOT = Path(__file__).parent.parent




def test_the_load_generators_tracker_serves_cuzks_json_through_its_stages() -> None:
    tr = lg.PipelineTracker(gpu=0, workers=2, synth_slots=1)
    tr.synth_start("porep-1000-0", 0)
    doc = tr.document()
    st = parse_status(json.dumps(doc).encode(), "lg", 0, 0.0, 0.0)
    assert st.partition_counts["synthesizing"] == 1 and st.partition_counts["pending"] == 9
    # Upstream's semantics: max_concurrent is the budget over 9 GiB, not the one thread.
    assert st.synthesis_max == lg.BUDGET_BYTES // SNAP_PARTITION_FULL_BYTES == 56
    assert st.memory_available_bytes == lg.BUDGET_BYTES - POREP_PARTITION_FULL_BYTES
    # One synthesis worker (its log says so), busy, nothing synthesised ahead, workers idle.
    assert snapshot_cause(st, 0, Capacity(1, "log")) == "waits_on_synthesis"
    tr.synth_end("porep-1000-0", 0)
    hot = tr.pickup(1, "porep-1000-0", 0)
    assert len(hot) == 4 and all(isinstance(x, int) for x in hot)
    st = parse_status(json.dumps(tr.document()).encode(), "lg", 0, 0.0, 0.0)
    assert [w.state for w in st.workers] == ["idle", "proving"]
    assert st.workers[1].partition == 0 and st.partition_counts["gpu"] == 1
    tr.finish(1, "porep-1000-0", 0)
    stats = tr.stats()
    # Hot path: synth start, synth end, three pickup sections, finish.
    assert stats["hot_path_lock_wait_us"]["n"] == 6 and stats["snapshots"] == 2
    assert stats["pickup_overhead_us"]["n"] == 1


def test_the_load_generator_keeps_cuzks_budget_figures_and_drifts_active_on_failure() -> None:
    assert (lg.PARTITION_BUDGET_BYTES, lg.SMALLEST_PARTITION_BYTES) == (
        POREP_PARTITION_FULL_BYTES, SNAP_PARTITION_FULL_BYTES)
    tr = lg.PipelineTracker(gpu=0, workers=2, synth_slots=2)
    tr.synth_start("porep-1000-0", 0)
    tr.synth_start("porep-1000-0", 1)
    tr.synth_failed("porep-1000-0", 1)
    st = parse_status(json.dumps(tr.document()).encode(), "lg", 0, 0.0, 0.0)
    assert (st.synthesis_active, st.partition_counts["synthesizing"]) == (2, 1)
    assert synthesis_drift(st) == 1 and st.partition_counts["failed"] == 1


def test_the_load_generators_startup_lines_say_its_synthesis_workers() -> None:
    import io

    from gapwatch.logs.parse import LogParser

    buf = io.StringIO()
    lg.CuzkLog(buf, buf, wall=lambda: 1_796_000_000.0, mono=lambda: 0.0).start_engine(0, 2, 3)
    facts = PipelineFacts()
    parser = LogParser()
    for line in buf.getvalue().splitlines():
        for ev in parser.parse_line(line, "stdout"):
            facts.feed(ev)
    assert facts.synth_workers == 3 and facts.budget_total_bytes == lg.BUDGET_BYTES
    assert facts.gpu_workers_per_device == 2


def test_a_snapshot_holding_the_tracker_lock_holds_up_the_workers_hot_path() -> None:
    tr = lg.PipelineTracker(gpu=0, workers=2, synth_slots=1)
    tr.synth_start("porep-1000-0", 0)
    tr.synth_end("porep-1000-0", 0)
    tr.lock.acquire()  # a snapshot being built (cuzk: the tracker's write lock)
    worker = threading.Thread(target=tr.pickup, args=(0, "porep-1000-0", 0))
    worker.start()
    worker.join(0.3)
    blocked = worker.is_alive()
    tr.lock.release()
    worker.join(5)
    assert blocked and not worker.is_alive()
    assert max(tr.hot_wait_us) > 0


def test_the_hot_path_line_names_its_gpu_in_the_workers_span() -> None:
    import io

    from gapwatch.logs.parse import LogParser

    buf = io.StringIO()
    log = lg.CuzkLog(buf, buf, wall=lambda: 1_796_000_000.0, mono=lambda: 0.0)
    log.start_engine(1, 2, 2)
    log.gpu_pickup("porep-1000-0", 1, 3, hot=(0, 0, 1, 1), gpu=1)
    parser = LogParser()
    events = [e for line in buf.getvalue().splitlines() for e in parser.parse_line(line)]
    (hot,) = [e for e in events if e.name == "GPU_TIMING hot_path pre-prove overhead"]
    assert (hot.gpu, hot.worker, hot.partition, hot.fields["mark_busy_ms"]) == (1, 1, 3, 1)


def _gap(cause: str | None, states: bool = True) -> dict[str, Any]:
    return {"gpu": 0, "start_s": 10.0, "end_s": 11.0, "duration_s": 1.0, "kind": "host_stall",
            "prover_cause": cause, "prover_states": [{"workers": "IP"}] if states else [],
            "hint": "h"}


def test_host_stall_scoring_counts_the_gaps_named_waits_on_synthesis() -> None:
    truth: dict[str, list[object]] = {"intervals": []}
    good = cs.score_status_case({"gaps": [_gap("waits_on_synthesis")] * 4}, truth)
    assert good["named_fraction"] == 1.0 and good["goal_met"]
    mixed = cs.score_status_case({"gaps": [_gap("waits_on_synthesis")] * 2
                                  + [_gap("inside_workers"), _gap(None, states=False)]}, truth)
    assert mixed["named_fraction"] == 0.5 and not mixed["goal_met"]
    assert mixed["causes"] == {"waits_on_synthesis": 2, "inside_workers": 1, "no snapshot": 1}
    assert not cs.score_status_case({"gaps": [_gap("waits_on_synthesis")] * 2}, truth)["goal_met"]


def _run(p99: float, snapshots: int, pps: float, build_mean: float | None) -> dict[str, Any]:
    return {"seconds": 20.0, "throughput_pps": pps, "partitions_completed": 22,
            "status": {"hot_path_lock_wait_us": {"p50": 0.3, "p99": p99, "max": p99 * 2},
                       "pickup_overhead_us": {"p50": 8.0, "p99": 20.0},
                       "snapshots": snapshots,
                       "snapshot_build_us": {"mean": build_mean, "p50": build_mean},
                       "requests": snapshots}}


def test_cost_summary_compares_each_polling_mode_with_polling_off() -> None:
    cost = cs.cost_summary({"off": _run(1.0, 0, 1.10, None), "1s": _run(1.5, 20, 1.10, 50.0),
                            "0.1s": _run(4.0, 200, 1.089, 50.0)})
    modes = cost["modes"]
    assert modes["off"]["snapshot_lock_share"] == 0.0 and "vs_off" not in modes["off"]
    assert modes["1s"]["snapshot_lock_share"] == pytest.approx(20 * 50 / 20e6)
    assert modes["0.1s"]["vs_off"]["hot_path_wait_p99_us_delta"] == 3.0
    assert modes["0.1s"]["vs_off"]["throughput_change_pct"] == pytest.approx(-1.0)
    md = cs.summary_markdown({"cost": cost})
    assert "| 0.1s | 1.089 |" in md and "wait p99 +3.00 µs" in md
