"""The runtime: every source goes through the same session path; the demo's log goes through the
real tailer; replay of a recording finds what the live run found."""

from __future__ import annotations

from pathlib import Path

import pytest

from gapwatch.core.config import Config
from gapwatch.core.models import Gap
from gapwatch.engine.runtime import build_runtime, parse_source
from gapwatch.sources import SourceUnavailable


def test_unknown_or_incomplete_sources_are_refused() -> None:
    with pytest.raises(SourceUnavailable, match="unknown --source"):
        parse_source("gpu")
    with pytest.raises(SourceUnavailable, match="needs a file"):
        parse_source("replay")
    with pytest.raises(SourceUnavailable, match="unknown scenario"):
        build_runtime(Config(), "sim:melted")
    with pytest.raises(SourceUnavailable, match="no such file"):
        build_runtime(Config(), "replay:/nonexistent.jsonl")


def _closed_gaps(rt) -> list[Gap]:  # type: ignore[no-untyped-def]
    return [g for g in rt.store.snapshot().gaps if g.end_s is not None]


def test_sim_at_speed_0_records_and_replay_finds_the_same_gaps(tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl.gz"
    rt = build_runtime(Config(), "sim:pageable", speed=0, record_path=str(out), duration_s=45)
    rt.start()
    assert rt.wait(60)
    rt.stop()
    live = _closed_gaps(rt)
    assert len(live) >= 5 and {g.kind for g in live} == {"pcie_starved"}
    assert rt.store.snapshot().log_events  # the sim's lines were parsed

    again = build_runtime(Config(), f"replay:{out}", speed=0)
    again.start()
    assert again.wait(60)
    again.stop()
    replayed = _closed_gaps(again)
    assert [(g.start_s, g.end_s, g.kind) for g in replayed] == \
        [(g.start_s, g.end_s, g.kind) for g in live]


def test_demo_log_reaches_the_session_through_the_real_tailer() -> None:
    rt = build_runtime(Config(), "sim:chained", speed=20, duration_s=30)
    assert rt.sim_log_path is not None and rt.followers
    rt.start()
    try:
        assert rt.wait(30)
        # give the tailer a couple of polls to catch the last lines
        import time

        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not rt.store.snapshot().log_events:
            time.sleep(0.1)
    finally:
        rt.stop()
    events = rt.store.snapshot().log_events
    assert any(e.name == "GPU_START" for e in events)
    status = rt.status()
    assert str(rt.sim_log_path) in status.logs
    assert status.lateness is not None and status.lateness.ticks > 10
