"""The footer's alert of a prover error, as the pane shows it at 80x24 and 120x40, with one
cuzk daemon and two (review6 #4): where it happened first, from the event's typed fields
(`gpu`, `job_id`, `partition`), then what happened, the daemon last. Built from fields, never by
reading cuzk's words back out of the message: a daemon named by a log path holding ` GPU 1`
lost that text from its path. The lines are upstream's formats (cuzk-daemon main.rs:63-64,
engine.rs:998 `GPU prove start task panicked`, in its `gpu_worker` span), as
tests/data/cuzk-upstream's logs write them.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from parsed_logs import watched_events
from ui_fakes import WALL0_S, FakeRuntime, fill_breakdown, fixed_wall, make_config, screen_text

from gapwatch.core.models import LogEvent, ProverEvent
from gapwatch.core.prover_watch import alert_line
from gapwatch.engine.runtime import _prover_alert
from gapwatch.logs.parse import LogParser
from gapwatch.ui.app import GapwatchApp

T = "2026-05-12T16:00:"
JOB = "porep-1000-88"
ERROR = "task 41 panicked with message cudaGetLastError() failed: out of memory"


def _start(at: str, gpu: int, listen: str) -> list[str]:
    """A daemon's first lines (main.rs:63-64, engine.rs:1339, 2958)."""
    return [
        f"{T}{at}.000000Z  INFO cuzk_daemon: cuzk-daemon starting",
        f"{T}{at}.001000Z  INFO cuzk_daemon: configuration loaded listen={listen}",
        f"{T}{at}.031000Z  INFO cuzk_core::engine: initializing GPU workers num_gpus=1 "
        f"gpu_workers_per_device=2 total_workers=2 gpus=[{gpu}]",
        f"{T}{at}.032000Z  INFO cuzk_core::engine: pipeline GPU worker started worker_id=0 "
        f"gpu={gpu} sub_id=0",
    ]


def _panicked(at: str, gpu: int) -> str:
    """cuzk's ERROR line for a GPU prove start whose task panicked (engine.rs:998)."""
    return (f"{T}{at}.000100Z ERROR gpu_worker{{worker_id=1 gpu={gpu} job_id={JOB} "
            "proof_kind=porep-c2 batch_size=1 partition=Some(1)}: cuzk_core::engine: GPU prove "
            f"start task panicked error={ERROR}")


def _error(files: dict[str, list[str]]) -> ProverEvent:
    """The one error event of `files` (each parsed as `--log` reads it), placed in the fake
    pane's data time so the footer says it."""
    parser = LogParser(offline=True)
    events: list[LogEvent] = []
    for path, lines in files.items():
        for i, line in enumerate(lines):
            events += parser.parse_line(line, path, i, 0.0)
    said = watched_events(sorted(events, key=lambda e: e.t_wall_s))
    [error] = [e for e in said if e.kind == "error"]
    if HOSTILE_PATH in files:
        error = _named_by_path(error)
    return msgspec.structs.replace(error, t_wall_s=WALL0_S + 50.0)


async def _footer(tmp_path: Path, error: ProverEvent, size: tuple[int, int]) -> str:
    """The footer's alert line as the pane shows it at `size`."""
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    rt.store.append(error)
    rt.prover_alert = _prover_alert(rt.store)
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        return screen_text(app).splitlines()[-2]


ONE = {"cuzk.log": [*_start("00", 0, "127.0.0.1:9820"), _panicked("05", 0)]}
TWO = {"porep.log": [*_start("00", 0, "127.0.0.1:9820"), _panicked("30", 0)],
       "post.log": _start("21", 1, "127.0.0.1:9830")}
#: A daemon named by its log file (`Daemons.label`: where its listen address is not known),
#: a path that holds ` GPU 0`.
HOSTILE_PATH = "/srv/cuzk GPU 0/porep.log"
HOSTILE = {HOSTILE_PATH: [*_start("00", 0, "127.0.0.1:9820"), _panicked("30", 0)],
           "post.log": _start("21", 1, "127.0.0.1:9830")}


def _named_by_path(error: ProverEvent) -> ProverEvent:
    """`error` as `Daemons.named` words it for a daemon known by its log file alone."""
    label = f"--log {HOSTILE_PATH}"
    return msgspec.structs.replace(error, daemon=label, message=f"daemon {label} (GPU 0): "
                                   + error.message.partition("): ")[2])
WHERE = f"GPU 0 {JOB} partition 1: GPU prove start task panicked: task 41"


@pytest.mark.parametrize("files", [ONE, TWO, HOSTILE], ids=["one", "two", "hostile-path"])
async def test_at_80x24_the_footers_alert_says_where_then_what_happened(
    tmp_path: Path, files: dict[str, list[str]],
) -> None:
    """review6 #4: with two daemons it read `GPU 0 porep-1000-88 partition 1: daemon 127…` at
    80 columns, the daemon's address cut and no word of the panic. The GPU, the job and its
    partition lead, then what happened; the daemon is what the 80-column cut takes."""
    footer = await _footer(tmp_path, _error(files), (80, 24))
    assert footer.startswith(f"prover error at 09:07:11: {WHERE[:40]}"), footer
    assert "daemon" not in footer


@pytest.mark.parametrize(("files", "daemon"), [
    (ONE, None), (TWO, "127.0.0.1:9820"), (HOSTILE, f"--log {HOSTILE_PATH}"),
], ids=["one", "two", "hostile-path"])
async def test_at_120x40_the_alert_says_each_fact_once_and_the_daemon_last(
    tmp_path: Path, files: dict[str, list[str]], daemon: str | None,
) -> None:
    """At 120x40 it read `GPU 0 ...: daemon 127.0.0.1:9820 (GPU 0): GPU prove start tas…`: the
    daemon's words before what happened. Now the words, and the daemon after them, whole (a
    path holding ` GPU 0` as it is: it was read as the event's GPU and cut out of the path)."""
    error = _error(files)
    assert error.daemon == daemon
    footer = await _footer(tmp_path, error, (120, 40))
    assert footer.startswith(f"prover error at 09:07:11: {WHERE}"), footer
    line = alert_line(error)
    assert line.count(JOB) == 1 and line.count("partition 1") == 1
    if daemon is None:
        assert line.endswith(ERROR) and "daemon" not in line
    else:
        assert line.endswith(f"{ERROR}; daemon {daemon}")
