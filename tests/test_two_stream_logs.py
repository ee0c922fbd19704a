"""cuzk's stdout and stderr given as two files (`cuzk > out.log 2> err.log`): the C++ timing
lines of the stderr carry no time, so read whole, after (or before) the stdout, their place
among its lines is not known. They are never tied to a partition they may not belong to, the
order the files are named in changes nothing, and it is said once a file
(`gapwatch.logs.files.read_order`, `LogParser.parse_line(apart=True)`).

The H200 load generator's runs (tests/data/h200-e2e) wrote the two files as cuzk does, and
`gapwatch record` followed both live: its recorded lock regions are paired as written (each
region's `total_start_fn_ms` is its naming line's `prove_start_ms`, both timed from the same
pickup), the truth the files read offline are held to.
"""

from __future__ import annotations

import gzip
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from faults import until
from parsed_logs import parse_log_files

from gapwatch.cli import main
from gapwatch.config import Config, LogsConfig
from gapwatch.core.models import LogEvent, Notice
from gapwatch.cuzk.partitions import derive_timeline
from gapwatch.logs.follow import LogFollower
from gapwatch.logs.parse import UNPLACED
from gapwatch.offline.replay_logs import open_replay_logs
from gapwatch.sources.files import header_of

E2E = Path(__file__).parent / "data" / "h200-e2e"
PAGEABLE = E2E / "pageable"
#: A case whose recording polled cuzk's `/status`: its uptime anchors TIMELINE lines read
#: before the stdout's own anchor line.
WITH_STATUS = E2E / "host-stall-status"


def _cpp_lines(path: Path) -> int:
    return sum(line.startswith("CUZK_") for line in path.read_text().splitlines())


def _own(fields: dict[str, Any]) -> bool:
    """Whether a lock region was paired with its own naming line: the C++ side's time from
    entry to unlock is the naming line's `prove_start_ms` (written a few ms later)."""
    late_ms: int = fields["prove_start_ms"] - fields["total_start_fn_ms"]
    return 0 <= late_ms <= 50


def _recorded_locks(case: Path) -> dict[tuple[str, int], int]:
    """(job, partition) -> mutex_held_ms of the lock regions `record` paired live."""
    out = {}
    with gzip.open(case / "rec.jsonl.gz", "rt") as f:
        for line in f:
            r = json.loads(line)
            if r.get("kind") == "cuzk_partition":
                assert _own(r["fields"]), r
                out[(r["job_id"], r["partition"])] = r["fields"]["mutex_held_ms"]
    return out


def _report(case: Path, capsys: pytest.CaptureFixture[str], *logs: str) -> dict[str, Any]:
    args = [arg for name in logs for arg in ("--log", str(case / name))]
    assert main(["report", "--json", str(case / "rec.jsonl.gz"), *args]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def _held(doc: dict[str, Any]) -> dict[tuple[str, int], int]:
    return {(p["job_id"], p["partition"]): p["mutex_held_ms"]
            for p in doc["partitions"]["items"] if p["mutex_held_ms"] is not None}


def test_stderr_timing_lines_given_as_a_second_file_are_never_tied_to_the_wrong_partition(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Read after the whole stdout, the stderr's lock regions were paired with the naming
    lines of the log's end: partition 2 held the GPU 1629 ms for its 3056, the report's GPU
    occupied 52 % for 75 %. Now none of them is tied, each is counted, and the report's table
    keeps the regions `record` paired live."""
    out, err = str(PAGEABLE / "stdout.log"), str(PAGEABLE / "stderr.log")
    cpp = _cpp_lines(PAGEABLE / "stderr.log")
    for given in ([out, err], [err, out]):
        events, counters = parse_log_files(given, Config())
        assert not [e for e in events if e.kind == "cuzk_partition"]
        assert counters[UNPLACED] == cpp
    live = _recorded_locks(PAGEABLE)
    assert len(live) == 17
    alone = _report(PAGEABLE, capsys)
    for names in (("stdout.log", "stderr.log"), ("stderr.log", "stdout.log")):
        doc = _report(PAGEABLE, capsys, *names)
        assert _held(doc) == live == _held(alone)
        assert doc["partitions"]["occupied_fraction"] == alone["partitions"]["occupied_fraction"]
        said = [p for p in doc["problems"] if "untimestamped" in p]
        assert said == [
            f"--log {err}: {cpp} untimestamped C++ timing line(s) (CUZK_TIMING, CUZK_NTT_H) "
            f"cannot be placed beside the lines of --log {out} (it shows no time of its own): "
            "their GPU lock times are tied to no partition; give cuzk's stdout and stderr as "
            "one file (`> cuzk.log 2>&1`) or the journal"]
    # A replay says it as it starts.
    rec = str(PAGEABLE / "rec.jsonl.gz")
    replay = open_replay_logs(rec, [err, out], Config(), header_of(rec).started_wall_s)
    try:
        assert said[0] in replay.events().notes_now()
    finally:
        replay.close()


def test_the_stderr_file_given_first_says_no_restart(capsys: pytest.CaptureFixture[str]) -> None:
    """Named first, the stderr was read before the stdout's `starting cuzk engine` line: its
    TIMELINE lines were placed by the `/status` uptime (whole seconds), the run's first ones
    before that line, and the line after them read as a restart (`cuzk restarted with no
    shutdown line before it`, `the restart cost the GPU 2.9 s`). Read after the stdout
    whichever is named first, the report is the same either way."""
    first = _report(WITH_STATUS, capsys, "stderr.log", "stdout.log")
    events = first["prover_events"]
    assert events["restart"] == [] and events["restart_cost"] == []
    second = _report(WITH_STATUS, capsys, "stdout.log", "stderr.log")
    for doc in (first, second):
        del doc["log_files"]
    assert first == second


def test_parse_timeline_of_stderr_given_first_says_no_restart_and_ties_no_lock_time(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`parse --timeline err.log out.log` fed its watcher in the order read: the stderr's
    TIMELINE work, then the stdout's start line, said as a restart; its table paired the lock
    regions (its own attribution, redone from the C++ lines) in that order too."""
    err, out = str(PAGEABLE / "stderr.log"), str(PAGEABLE / "stdout.log")
    assert main(["parse", "--timeline", err, out]) == 0
    first = capsys.readouterr()
    assert "restart" not in first.out
    rows = [line.split() for line in first.out.splitlines()
            if line.startswith("porep-")]
    assert len(rows) == 17 and all(row[5] == "-" for row in rows)  # held_ms
    assert f"gapwatch parse: {err}: {_cpp_lines(PAGEABLE / 'stderr.log')} untimestamped " \
        in first.err
    assert main(["parse", "--timeline", out, err]) == 0
    assert capsys.readouterr().out == first.out


def test_recorded_lines_marked_unplaced_are_not_paired_again_by_the_table() -> None:
    """A recording keeps what the parser marked: the partition table, which redoes the
    attribution from the C++ lines where the parser made none, does not pair them either."""
    events, _ = parse_log_files([str(PAGEABLE / "stdout.log")], Config())
    names = [e for e in events if e.name.startswith("GPU_TIMING spawn_blocking prove_start")]
    group = [LogEvent(t_wall_s=names[0].t_wall_s - 0.1, time_source="arrival",
                      kind="cuzk_timing", name=name, raw="", fields={**fields, "unplaced": True})
             for name, fields in (("pre_lock_cpu_ms", {"pre_lock_cpu_ms": 1, "mutex_wait_ms": 0}),
                                  ("mutex_held_ms", {"mutex_held_ms": 900,
                                                     "total_start_fn_ms": 950}))]
    run = derive_timeline([*group, names[0]])
    assert all(p.mutex_held_ms is None for p in run.partitions)
    placed = [LogEvent(t_wall_s=e.t_wall_s, time_source=e.time_source, kind=e.kind, name=e.name,
                       raw="", fields={k: v for k, v in e.fields.items() if k != "unplaced"})
              for e in group]
    assert [p.mutex_held_ms for p in derive_timeline([*placed, names[0]]).partitions
            if p.mutex_held_ms is not None] == [900]


def test_a_stderr_backlog_followed_beside_stdout_is_never_tied_to_the_wrong_partition(
        tmp_path: Path) -> None:
    """`record --from-start --log out.log --log err.log`: each file's backlog is read at
    once, a file after the other, so its lines arrived in no order of their writing, and the
    stderr's lock regions were paired with the last names of the stdout's backlog (8 regions,
    each another partition's). The backlog ties none, says so once, and the lines written
    after are paired as they arrive."""
    out, err = tmp_path / "stdout.log", tmp_path / "stderr.log"
    out.write_bytes((PAGEABLE / "stdout.log").read_bytes())
    err.write_bytes((PAGEABLE / "stderr.log").read_bytes())
    backlog = sum(len(p.read_text().splitlines()) for p in (out, err))
    events: list[LogEvent] = []
    notices: list[Notice] = []
    lock = threading.Lock()

    def on_event(e: LogEvent) -> None:
        with lock:
            events.append(e)

    follower = LogFollower([str(out), str(err)], LogsConfig(poll_ms=5, from_start=True),
                           on_event, notices.append)
    follower.start()
    try:
        assert until(lambda: follower.status().lines == backlog)
        assert not [e for e in events if e.kind == "cuzk_partition"]
        with open(err, "a") as f:  # a lock region written live, then its naming line
            f.write("CUZK_TIMING: pre_lock_cpu_ms=3 mutex_wait_ms=0\n"
                    "CUZK_TIMING: mutex_held_ms=1111 total_start_fn_ms=2222\n")
        with open(out, "a") as f:
            f.write("2026-11-30T10:04:20.000000Z  INFO cuzk_core::engine: GPU_TIMING "
                    "spawn_blocking prove_start worker_id=1 partition=Some(8) "
                    "spawn_to_enter_ms=0 prove_start_ms=2222\n")
        assert until(lambda: any(e.kind == "cuzk_partition" for e in events))
    finally:
        follower.stop()
    [tied] = [e for e in events if e.kind == "cuzk_partition"]
    assert (tied.worker, tied.partition, tied.fields["mutex_held_ms"]) == (1, 8, 1111)
    assert follower.parser.counters[UNPLACED] == _cpp_lines(PAGEABLE / "stderr.log")
    said = [n for n in notices if "before following began" in n.message]
    assert [(n.level, n.message.split(":")[0]) for n in said] == [("warning", f"log {err}")]
