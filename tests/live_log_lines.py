"""cuzk's log lines as the live-reader tests write them into a followed file: a timestamp in
cuzk's tracing form, a run's start lines, a WinningPoSt begun (enqueued and on its GPU), its
GPU_END, and the `--on-event` recorder's command. One home for the tests of what the reader's
clock says (a panic followed by silence, a PoSt whose lines stop, a recording's end).
Who calls it: tests/test_panic_said_live.py, tests/test_post_said_late_live.py,
tests/test_post_late_at_end.py."""

from __future__ import annotations

from datetime import UTC, datetime

#: The hook's command: each run's GAPWATCH_* variables, a JSON line.
RECORDER = """import json, os, sys
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({k: v for k, v in os.environ.items() if k.startswith("GAPWATCH_")}) + "\\n")
"""


def stamp(t_s: float) -> str:
    """`t_s` as cuzk's tracing lines start: `2026-11-30T12:00:00.000000Z`."""
    return datetime.fromtimestamp(t_s, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def started(t_s: float) -> list[str]:
    """A run's start lines at `t_s` (main.rs:63-64, engine.rs's first line)."""
    return [f"{stamp(t_s)}  INFO cuzk_daemon: cuzk-daemon starting",
            f"{stamp(t_s)}  INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true"]


def winningpost_begun(t_s: float, job: str) -> list[str]:
    """A run's start lines at `t_s`, then WinningPoSt `job` enqueued and on its GPU 1 s later:
    the lines cuzk writes before its GPU_END (scheduler.rs:67, engine.rs:2665-3131)."""
    return [*started(t_s),
            f"{stamp(t_s + 1.0)}  INFO cuzk_core::scheduler: job enqueued job_id={job} "
            "proof_kind=winning-post priority=Critical queue_position=0",
            f"TIMELINE,1000,SYNTH_START,{job},kind=winning-post",
            f"TIMELINE,1500,SYNTH_END,{job},synth_ms=500",
            f"TIMELINE,1500,GPU_QUEUE,{job},monolithic",
            f"TIMELINE,1500,GPU_PICKUP,{job},worker=0",
            f"TIMELINE,1500,GPU_START,{job},worker=0"]
