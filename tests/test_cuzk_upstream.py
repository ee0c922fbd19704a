"""Tests from upstream, not from us: tests/data/cuzk-upstream/ holds a line for every logging
site of cuzk (curio e0294b0f: every tracing macro of cuzk-core, -daemon, -server and -pce, every
TIMELINE event, every CUZK_ fprintf of supraseal-c2) and `/status` bodies as status.rs's serde
structs serialise them, built by its make_data.py from curio's source (README.md there names
each line's file:line). Every line parses with its whole name, every body decodes, each scenario
gives its cause."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import GapDetector
from gapwatch.core.models import Gap, GpuInfo, GpuSample, ProverStatus
from gapwatch.cuzk.pipeline import PipelineFacts, timeline_epoch
from gapwatch.cuzk.prover import CuzkProver
from gapwatch.cuzk.status import decode_status, parse_status
from gapwatch.logs.parse import LogParser

DATA = Path(__file__).parent / "data" / "cuzk-upstream"
EXPECTED: dict[str, Any] = json.loads((DATA / "expected.json").read_text())
LINES: list[dict[str, Any]] = EXPECTED["lines"]
BODIES = ("busy", "synthesis-starved", "idle", "post-in-flight")
T_POLL = 1_796_000_100.0


def test_the_data_names_its_upstream_commit_and_covers_every_kind_of_line() -> None:
    assert EXPECTED["commit"] == "e0294b0f948132d41e8f42f59fa949495d5fd3af"
    assert "e0294b0f948132d41e8f42f59fa949495d5fd3af" in (DATA / "README.md").read_text()
    kinds = {e["kind"] for e in LINES}
    assert kinds == {"tracing", "timeline", "cuzk_timing", "cuzk_ntt_h"}
    sources = {e["source"].rsplit(":", 1)[0] for e in LINES}
    for f in ("engine.rs", "memory.rs", "pinned_pool.rs", "srs_manager.rs", "pipeline.rs",
              "scheduler.rs", "main.rs", "groth16_cuda.cu", "groth16_ntt_h.cu"):
        assert any(s.endswith(f) for s in sources), f
    assert len(LINES) > 250


@pytest.mark.parametrize("entry", LINES, ids=[e["source"] for e in LINES])
def test_every_upstream_line_parses_with_its_whole_name(entry: dict[str, Any]) -> None:
    (ev, *_rest) = LogParser().parse_line(entry["line"], "daemon")
    assert ev.kind == entry["kind"]
    assert ev.name and ev.name == entry["name"]
    if entry["kind"] == "tracing":
        assert set(ev.fields) - {"target", "spans"} == set(entry["fields"])


def _body(name: str) -> bytes:
    return (DATA / f"status-{name}.json").read_bytes()


@pytest.mark.parametrize("name", BODIES)
def test_every_upstream_body_decodes_whole(name: str) -> None:
    counters: dict[str, int] = {}
    doc = decode_status(_body(name), counters)
    assert counters == {}  # nothing dropped: every field of status.rs fits its struct
    assert doc.memory is not None and doc.synthesis is not None and doc.allocations is not None
    st = parse_status(_body(name), "cuzk", 1, T_POLL, 2.0)
    assert st.synthesis_max == 83 and st.memory_total_bytes == 750 << 30
    assert st.srs_circuits == ["porep-32g"] and st.uptime_s is not None


def _gap_with(status: ProverStatus, log_lines: tuple[str, ...] = ()) -> Gap:
    """A host_stall gap of GPU 0 from T_POLL - 1 to T_POLL + 1.5 with `status` polled at
    T_POLL inside it, and `log_lines` (TIMELINE placed by the status's uptime) fed first.
    The operator's `[cuzk] max_parallel_synthesis` is given (cuzk's default, 18): with the
    answers' 750 GiB budget, cuzk's formula says its 18 synthesis workers."""
    det = GapDetector(DetectorConfig(), [GpuInfo(index=0, link_bytes_per_s=63e9,
                                                 sm_source="sim", pcie_source="sim")],
                      period_s=0.1, prover=CuzkProver(18))
    parser = LogParser()
    parser.anchor_from_status(timeline_epoch(status))
    for line in log_lines:
        for ev in parser.parse_line(line, "stderr"):
            det.feed(ev)
    out: list[Gap] = []
    t0 = T_POLL - 5.0
    for k in range(100):
        t = t0 + k * 0.1
        idle = T_POLL - 1.0 <= t < T_POLL + 1.5
        if abs(t - T_POLL) < 0.05:
            out += [r for r in det.feed(status) if isinstance(r, Gap)]
        s = GpuSample(0, int((t - t0) * 1e9) + 10**9, t, 100_000_000, 0.5 if idle else 95.0,
                      1.0 if idle else 95.0, 2e6, 1e6, "sim", "sim")
        out += [r for r in det.feed(s) if isinstance(r, Gap)]
    closed = [g for g in out if g.end_s is not None and not g.retracted]
    assert closed, "no gap"
    return closed[-1]


def test_each_upstream_scenario_gives_its_cause() -> None:
    def st(name: str) -> ProverStatus:
        return parse_status(_body(name), "cuzk", 1, T_POLL, 2.0)

    assert _gap_with(st("busy")).prover_cause == "inside_workers"
    starved = _gap_with(st("synthesis-starved"))
    assert starved.prover_cause == "waits_on_synthesis"
    assert any("18 of 18 synthesis workers busy (every synthesis worker busy" in e
               for e in starved.prover_evidence)
    assert any("max_concurrent=83" in e for e in starved.prover_evidence)
    assert _gap_with(st("idle")).prover_cause == "no_work"
    post_lines = tuple((DATA / "post-in-flight.log").read_text().splitlines())
    post = _gap_with(st("post-in-flight"), post_lines)
    assert post.prover_cause == "monolithic"
    assert any("winning-post job winpost-1000-1a2b3c4d" in e for e in post.prover_evidence)
    # Without the log, the same snapshot says no work: what /status alone can see.
    assert _gap_with(st("post-in-flight")).prover_cause == "no_work"


def test_the_upstream_log_tells_the_pipeline_facts() -> None:
    facts = PipelineFacts()
    parser = LogParser()
    for line in (DATA / "cuzk.log").read_text().splitlines():
        for ev in parser.parse_line(line, "daemon"):
            facts.feed(ev)
    view = facts.view()
    # Every fact-bearing line was read: workers, budget, pool, pacer, SRS, budget waits.
    assert view.synth_workers is not None and view.budget_total_bytes is not None
    assert view.gpu_workers_per_device is not None and view.pacer_target is not None
    assert view.pool is not None and view.pool.checkout_failed == 1 and view.pool.alloc_failed
    assert view.pacer is not None and isinstance(view.pacer["ema_waiting"], float)
    assert view.budget_waits >= 1 and view.srs_evictions


def test_every_message_the_pipeline_reads_passes_its_first_look() -> None:
    """`PipelineFacts._tracing` gives up on a message that is not in `_TRACING_MESSAGES` nor
    starts as a pinned-pool line: a message it compares against further down must be in
    one of the two, or its branch would never run."""
    import ast
    import inspect
    import textwrap

    from gapwatch.cuzk import pipeline

    tree = ast.parse(textwrap.dedent(inspect.getsource(PipelineFacts._tracing)))
    compared = {node.id for cmp in ast.walk(tree) if isinstance(cmp, ast.Compare)
                for side in (cmp.left, *cmp.comparators) for node in ast.walk(side)
                if isinstance(node, ast.Name) and node.id.isupper() and node.id[0] != "_"}
    assert compared, "no message constant found in PipelineFacts._tracing"
    for name in compared:
        message = getattr(pipeline, name)
        assert message in pipeline._TRACING_MESSAGES or message.startswith(
            pipeline._POOL_PREFIXES), name


def test_a_failed_checkout_and_the_cudahostalloc_failure_behind_it_are_one_failure() -> None:
    """pinned_pool.rs writes `cudaHostAlloc failed` (twice) and pipeline.rs then `pinned pool
    checkout FAILED` for one buffer it could not pin: the gap's hint counts that as one
    failure, as the advice's evidence does (it said "84 failure(s) so far" where the log held
    42, beside evidence saying 42 checkouts FAILED)."""
    lines = {n: (DATA / "cuzk.log").read_text().splitlines()[n - 1] for n in (134, 138, 146)}
    facts, parser = PipelineFacts(), LogParser()
    for second in ("00", "01", "02"):
        for line in lines.values():
            for ev in parser.parse_line(line.replace("14:00:00.", f"14:00:{second}."),
                                        "daemon"):
                facts.feed(ev)
    pool = facts.view().pool
    assert pool is not None and pool.checkout_failed == pool.alloc_failed == 3
    t = facts.pool.last_failure_s
    assert t is not None
    view = facts.log_view(0, t - 0.5, t + 0.5, "pcie_starved")
    assert view.cause == "pinned_pool"
    assert view.detail == "3 failure(s) so far"
    assert any("3 checkout(s) FAILED" in e for e in view.evidence)
