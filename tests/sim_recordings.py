"""The simulator recorded and reported as a user runs them, for end-to-end tests of its
scenarios: `gapwatch record --source sim:SCENARIO --speed 0` (its log parsed into the
recording), then `gapwatch report` of that file, both through `gapwatch.cli.main` in the test's
process: what these tests pin is what the commands write, not a process's start (a process of
its own cost ~0.3 CPU-s of interpreter and imports a call; the stop signals, exit codes and
start-up of real processes are pinned in test_stop_anytime.py and test_fault_signals.py).
Who calls it: tests/test_snapshot_replay.py, tests/test_advice_open_gap.py, tests/test_sim_post_failures.py, tests/test_sim_cuzk_lines.py,
tests/test_sim_batch_wait.py, tests/test_sim_post.py, tests/test_time_window.py,
tests/test_live_link_floor.py, tests/test_stop_anytime.py (the input of the processes it stops)."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from shared_files import read_only_once

from gapwatch.cli import main
from gapwatch.config import Config
from gapwatch.core.models import Record, StateChange
from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.engine.runtime import Runtime, build_runtime

#: Writes each `--on-event` call's GAPWATCH_* environment as one JSON line.
HOOK = """import json, os, sys
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({k: v for k, v in os.environ.items() if k.startswith("GAPWATCH_")})
            + "\\n")
"""


def record_sim(tmp_path: Path, scenario: str, duration_s: float, *flags: str,
               hook_out: Path | None = None) -> tuple[Path, str]:
    """`gapwatch record` of the simulator's `scenario` at speed 0 for `duration_s` of data
    time (`flags`: more of record's options, `--seed N`, `--config FILE`), run as the command
    line runs it, in this process: the recording, its stderr.
    `hook_out`: `--on-event` writes each call's environment there (`HOOK`)."""
    out = tmp_path / f"{scenario}.jsonl"
    argv = ["record", "--source", f"sim:{scenario}", "--speed", "0", "--duration",
            str(duration_s), "--out", str(out), "--quiet", *flags]
    if hook_out is not None:
        (tmp_path / "hook.py").write_text(HOOK)
        argv += ["--on-event", f"{sys.executable} {tmp_path / 'hook.py'} {hook_out}"]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(argv)
    assert status == 0, err.getvalue()
    return out, err.getvalue()


def recorded_once(factory: pytest.TempPathFactory, scenario: str, duration_s: float) -> Path:
    """`record_sim`'s recording of `scenario` for `duration_s` (no other flags), made once per
    test run and shared by every test and worker that asks for it (~0.3 CPU-s each for the
    two-minute PoSt one, which nine tests read). Read only, checked by its hash at each use:
    a test that changes one works on a copy."""
    name = f"recorded-{scenario}-{duration_s:g}s"
    folder = read_only_once(factory, name, lambda folder: record_sim(folder, scenario, duration_s),
                            (f"{scenario}.jsonl",))
    return folder / f"{scenario}.jsonl"


def report_of(recording: Path, *flags: str) -> str:
    """`gapwatch report` of `recording` (`flags`: `--json`): its stdout. Run as the command
    line runs it (`gapwatch.cli.main`), in this process: what is pinned is the report of the
    recording, and a process of its own cost ~0.4 CPU-s of interpreter and imports a call."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["report", str(recording), *flags])
    assert status == 0
    return out.getvalue()


def ran_to_end(config: Config, source: str, duration_s: float) -> Runtime:
    """A runtime over `source` run at full speed for `duration_s` of its data and stopped: its
    store holds the session as a dashboard or a snapshot would read it."""
    rt = build_runtime(config, source, speed=0, duration_s=duration_s)
    rt.start()
    try:
        assert rt.wait(120)
    finally:
        rt.stop()
    return rt


def stores_when(rt: Runtime, when: Callable[[Record, int], bool]) -> list[StoreSnapshot]:
    """`rt` (built, not started) run to its end and stopped: its store as it was after each
    event the session gave out for which `when(event, snapshots taken so far)` holds."""
    taken: list[StoreSnapshot] = []

    def listen(ev: Record) -> None:
        if when(ev, len(taken)):
            taken.append(rt.store.snapshot())

    rt.session.subscribe(listen)
    rt.start()
    try:
        assert rt.wait(120)
    finally:
        rt.stop()
    return taken


def at_first_breakdown(config: Config, duration_s: float = 30) -> tuple[Runtime, StoreSnapshot]:
    """`sim:pageable` run at full speed for `duration_s` under `config` (the demo's, with
    automatic snapshots off): the runtime, stopped, and the store as it was the moment GPU0
    first entered BREAKDOWN (what the dashboard's automatic snapshot is written from)."""
    rt = build_runtime(config, "sim:pageable", speed=0, duration_s=duration_s)
    taken = stores_when(rt, lambda ev, n: not n and isinstance(ev, StateChange)
                        and ev.state == "BREAKDOWN")
    assert taken, f"the demo enters BREAKDOWN within {duration_s:g} s"
    return rt, taken[0]
