"""The prover's own pipeline on the dashboard: one line per prover (partitions by state, each
GPU's workers, synthesis slots, queue), the worker states on the gap rows, the poller's health in
the footer; nothing of it without `/status` data."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import msgspec
from cuzk_fakes import WAITS_ON_SYNTHESIS, cuzk_doc
from ui_fakes import WALL0_S, FakeRuntime, fill_breakdown, make_config, screen_text, t_ns

from gapwatch.cuzk.causes import gap_state
from gapwatch.cuzk.pipeline import PipelineView, PoolState
from gapwatch.cuzk.status import parse_status
from gapwatch.engine.status import RuntimeStatus
from gapwatch.sources.cuzk_status import PollerStatus
from gapwatch.ui.app import GapwatchApp
from gapwatch.ui.widgets.pipeline_line import PipelineLine, pipeline_text
from gapwatch.ui.widgets.status_footer import status_parts


def _status(seconds: float) -> object:
    return parse_status(json.dumps(WAITS_ON_SYNTHESIS).encode(), "127.0.0.1:9821",
                        t_ns(seconds), WALL0_S + seconds, 0.8)


class _PolledRuntime(FakeRuntime):
    def status(self) -> RuntimeStatus:
        base = super().status()
        poller = PollerStatus(url="http://127.0.0.1:9821/status", prover="127.0.0.1:9821",
                              period_s=1.0, state="timeout", polls=60, ok=57,
                              errors={"timeout": 3}, last_latency_ms=0.8)
        return dataclasses.replace(base, provers=[poller])


async def test_the_pipeline_line_and_the_worker_states_show_at_80x24(tmp_path: Path) -> None:
    rt = _PolledRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    st = _status(59.5)
    rt.store.append_prover(st)  # type: ignore[arg-type]
    newest = rt.store.snapshot().gaps[-1]
    rt.store.upsert_gap(msgspec.structs.replace(
        newest, prover_cause="waits_on_synthesis",
        prover_states=[gap_state(st, 0)]))  # type: ignore[arg-type]
    app = GapwatchApp(rt, wall_clock=lambda: WALL0_S + 100)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.redraw(force=True)
        await pilot.pause()
        text = screen_text(app)
    # 18 synthesizing, never of max_concurrent's 83; of how many workers is not known (no
    # `starting pipeline` line in this log, no `[cuzk] max_parallel_synthesis` given).
    # The workers by name and synthesis first: what the gap causes rest on survives the cut.
    assert "prover 127.0.0.1:9821 · GPU0 w0 idle, w1 proving · synthesis 18 (capacity" in text
    # The newest gap's row carries its GPU's workers: one idle, one proving.
    (row,) = [line for line in text.splitlines() if "0.40s" in line]
    assert row.split()[5:8] == ["1/2", "busy", "2.8"]  # after "slow copies"
    assert " workers " in text


def test_the_line_says_a_stale_snapshot_and_every_synthesis_worker_busy() -> None:
    st = _status(10.0)
    runs = pipeline_text(st, age_s=12.0, pipeline=PipelineView(synth_workers=18))  # type: ignore[arg-type]
    text = "".join(t for t, _ in runs)
    assert text == ("prover 127.0.0.1:9821 · GPU0 w0 idle, w1 proving · synthesis 18/18 · "
                    "partitions: 0 synthesised, 4 pending, 18 synthesizing, 0 on GPU, 0 done · "
                    "queue 1 · stale 12 s")
    # Every worker busy and nothing synthesised ahead: the GPU is about to wait on synthesis.
    assert ("18/18", "warn") in runs and (" · stale 12 s", "warn") in runs


def test_a_synthesis_capacity_not_read_is_said_so_never_a_guessed_default() -> None:
    """F11: the dashboard started after cuzk's `starting pipeline` line said `synthesis
    1/~18` of a prover running 3 workers: cuzk's formula over gapwatch's assumed cap. Without
    the log's count or the operator's `[cuzk] max_parallel_synthesis` the line gives the count
    alone and says the capacity was not read."""
    st = _status(10.0)  # 18 synthesizing, a 750 GiB budget in /status, no log
    runs = pipeline_text(st, None, PipelineView())  # type: ignore[arg-type]
    text = "".join(t for t, _ in runs)
    assert " · synthesis 18 (capacity not read) · partitions: " in text and "~" not in text
    assert all(key != "warn" for _, key in runs)  # "every worker busy" not judged
    # The operator's cap given: cuzk's formula, marked derived.
    given = pipeline_text(st, None, PipelineView(max_parallel_synthesis=18))  # type: ignore[arg-type]
    assert " · synthesis 18/~18 · " in "".join(t for t, _ in given)


def test_the_line_says_drift_budget_pool_pacer_srs_and_post_work() -> None:
    doc = cuzk_doc(synthesizing=3, pending=7, active=5, available_gib=2.0)
    st = parse_status(json.dumps(doc).encode(), "p", t_ns(1), WALL0_S + 1, 0.8)
    view = PipelineView(
        synth_workers=18, pool=PoolState(total_gib=11.6, buffers=3, free=0, checkout_failed=2),
        pacer_target=8, pacer={"waiting": 1}, srs_loading=("porep-32g",),
        monolithic_in_flight=("winning-post winpost-1-abc",))
    text = "".join(t for t, _ in pipeline_text(st, None, view))
    assert "synthesis 3/18 (active 5) · budget 2/14 GiB" in text
    assert "pinned pool 0 free, 2 FAILED · pacer waiting 1/8 · SRS loading porep-32g" in text
    assert text.endswith("· not in /status: winning-post winpost-1-abc")


def test_the_footer_says_how_polling_goes() -> None:
    parts = status_parts(_PolledRuntime(make_config()).status())
    assert "/status 127.0.0.1:9821 timeout (3 failed)" in parts


async def test_without_status_data_the_pipeline_line_takes_no_room(tmp_path: Path) -> None:
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    app = GapwatchApp(rt, wall_clock=lambda: WALL0_S + 100)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert not app.query_one(PipelineLine).display
        assert " workers " not in screen_text(app)


def test_the_simulated_provers_status_url_is_on_the_dashboard_second_in_the_footer() -> None:
    """The demo printed it on stderr, behind the dashboard, seen only after `q`."""
    from gapwatch.engine.status import RuntimeStatus

    url = "http://127.0.0.1:40123/status"
    parts = status_parts(RuntimeStatus("sim:pageable", 100.0, None, {0: "sim"},
                                       sim_status_url=url))
    assert parts[:2] == ["source sim:pageable", f"sim /status at {url}"]
