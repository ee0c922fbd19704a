"""cuzk's stdout and stderr given as two files (`cuzk > out.log 2> err.log`): the C++ timing
lines of the stderr carry no time, so read whole, after (or before) the stdout, their place
among its lines is not known. They are never tied to a partition they may not belong to, the
order the files are named in changes nothing, and it is said once a file, with what stands in
for their lock times where anything does (a recording's own lock regions, paired as written)
(`gapwatch.logs.files.read_order`, `LogParser.parse_line(apart=True)`). Their TIMELINE lines,
of every run of the daemon, are each placed by their own run's start line on the stdout, not
by the last one read (`gapwatch.cuzk.engine_runs`), or by none where which run is which is not
known, and that is said once.

The H200 load generator's runs (tests/data/h200-e2e) wrote the two files as cuzk does, and
`gapwatch record` followed both live: its recorded lock regions are paired as written (each
region's `total_start_fn_ms` is its naming line's `prove_start_ms`, both timed from the same
pickup), the truth the files read offline are held to.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from faults import until
from followed_logs import following
from parsed_logs import parse_log_files
from shared_files import read_only_once

from evaluation.simulate import simulate
from gapwatch.cli import main
from gapwatch.config import Config, LogsConfig
from gapwatch.core.models import LogEvent, Notice
from gapwatch.cuzk import engine_runs
from gapwatch.cuzk.partitions import derive_timeline
from gapwatch.cuzk.watch import CuzkWatch
from gapwatch.logs import tail
from gapwatch.logs.files import log_file_events, merge_by_time
from gapwatch.logs.follow import LogFollower
from gapwatch.logs.once import may_hold_log_lines
from gapwatch.logs.parse import TIMELINE_UNPLACED, UNPLACED, LogParser
from gapwatch.offline.replay_logs import open_replay_logs
from gapwatch.offline.report import build_report
from gapwatch.sinks.recorder import write_recording
from gapwatch.sources.files import header_of, read_any
from gapwatch.sources.sim_post import CYCLE_S

E2E = Path(__file__).parent / "data" / "h200-e2e"
PAGEABLE = E2E / "pageable"
#: A case whose recording polled cuzk's `/status`: its uptime anchors TIMELINE lines read
#: before the stdout's own anchor line.
WITH_STATUS = E2E / "host-stall-status"
#: cuzk's log of a restart (one file, `2>&1`): a run of 2 partitions, killed, and a run of 1.
RESTART = Path(__file__).parent / "data" / "cuzk-upstream" / "restart.log"
#: A start line written after the others (a run that wrote no TIMELINE line yet).
IDLE_RUN = ("2026-05-12T17:05:00.000000Z  INFO cuzk_core::engine: starting cuzk engine "
            "pipeline_enabled=true\n")


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


def _unplaced_words(err: str, out: str, cpp: int) -> str:
    """The head of what is said of the stderr `err` given beside the stdout `out`."""
    return (f"--log {err}: {cpp} untimestamped C++ timing line(s) (CUZK_TIMING, CUZK_NTT_H) "
            f"cannot be placed beside the lines of --log {out} (it shows no time of its own)")


def test_stderr_timing_lines_given_as_a_second_file_are_never_tied_to_the_wrong_partition_and_are_a_note(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Read after the whole stdout, the stderr's lock regions were paired with the naming
    lines of the log's end: partition 2 held the GPU 1629 ms for its 3056, the report's GPU
    occupied 52 % for 75 %. Now none of them is tied, each is counted, and the report's table
    keeps the regions `record` paired live, and says so (not that the lock times are tied to
    no partition, which every row's held and wait times belied)."""
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
        # The report means the same as without the files: a note on the input, never a
        # WARNING that the data has problems that change what it means.
        assert not [p for p in doc["problems"] if "untimestamped" in p]
        said = [n for n in doc["notes"] if "untimestamped" in n]
        assert said == [
            f"{_unplaced_words(err, out, cpp)}: they are paired with no partition; the "
            "partitions' GPU lock times are the recording's own 17 lock region(s), paired as "
            "they were written (`record --log`)"]
    # A replay says it at the end of its pass, once it has read the recording's regions.
    rec = str(PAGEABLE / "rec.jsonl.gz")
    replay = open_replay_logs(rec, [err, out], Config(), header_of(rec).started_wall_s)
    try:
        one_pass = replay.events()
        assert not [n for n in one_pass.notes_now() if "untimestamped" in n]
        for _ in merge_by_time(read_any(rec).records, one_pass, one_pass.after_end):
            pass
        assert said[0] in one_pass.notes()
    finally:
        replay.close()


def _without_log_events(case: Path, dst: Path) -> Path:
    """`case`'s recording as `record` without `--log` makes it: no log event, no log path."""
    with gzip.open(case / "rec.jsonl.gz", "rt") as f, gzip.open(dst, "wt") as out:
        for i, line in enumerate(f):
            r = json.loads(line)
            if i == 0:
                r["config"]["logs"]["paths"] = []
            elif r.get("type") == "log":
                continue
            out.write(json.dumps(r) + "\n")
    return dst


def test_stderr_given_apart_beside_a_recording_without_lock_regions_says_none_are_tied(
        tmp_path: Path) -> None:
    """The same files reported with a recording made without `--log`: nothing stands in for
    the stderr's lock regions, and that is what is said, by the report and by a replay as it
    starts (a recording that followed no log holds none to wait for)."""
    out, err = str(PAGEABLE / "stdout.log"), str(PAGEABLE / "stderr.log")
    rec = _without_log_events(PAGEABLE, tmp_path / "rec.jsonl.gz")
    words = (f"{_unplaced_words(err, out, _cpp_lines(PAGEABLE / 'stderr.log'))}: their GPU "
             "lock times are tied to no partition; give cuzk's stdout and stderr as one file "
             "(`> cuzk.log 2>&1`) or the journal")
    report = build_report(rec, Config(), [out, err])
    assert [w for w in report.warnings if "untimestamped" in w] == [words]
    assert report.partitions is not None
    assert all(p.mutex_held_ms is None for p in report.partitions.partitions)
    replay = open_replay_logs(str(rec), [err, out], Config(), header_of(rec).started_wall_s,
                              may_hold_logs=may_hold_log_lines(header_of(rec)))
    try:
        one_pass = replay.events()
        assert [n for n in one_pass.notes_now() if "untimestamped" in n] == [words]
        for _ in merge_by_time(read_any(rec).records, one_pass, one_pass.after_end):
            pass
        assert [n for n in one_pass.notes() if "untimestamped" in n] == [words]
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
    with _following([out, err]) as (follower, events, notices):
        assert not [e for e in events if e.kind == "cuzk_partition"]
        with open(err, "a") as f:  # a lock region written live, then its naming line
            f.write("CUZK_TIMING: pre_lock_cpu_ms=3 mutex_wait_ms=0\n"
                    "CUZK_TIMING: mutex_held_ms=1111 total_start_fn_ms=2222\n")
        with open(out, "a") as f:
            f.write("2026-11-30T10:04:20.000000Z  INFO cuzk_core::engine: GPU_TIMING "
                    "spawn_blocking prove_start worker_id=1 partition=Some(8) "
                    "spawn_to_enter_ms=0 prove_start_ms=2222\n")
        assert until(lambda: any(e.kind == "cuzk_partition" for e in events))
    [tied] = [e for e in events if e.kind == "cuzk_partition"]
    assert (tied.worker, tied.partition, tied.fields["mutex_held_ms"]) == (1, 8, 1111)
    assert follower.parser.counters[UNPLACED] == _cpp_lines(PAGEABLE / "stderr.log")
    said = [n for n in notices if "before following began" in n.message]
    assert [(n.level, n.message.split(":")[0]) for n in said] == [("warning", f"log {err}")]


def _split(log: Path, folder: Path) -> tuple[Path, Path]:
    """cuzk's one-file log as `cuzk > out.log 2> err.log` writes it: its tracing lines (each
    timestamped, stdout) in one file, the rest (TIMELINE and C++ lines, stderr) in another."""
    out, err = folder / "out.log", folder / "err.log"
    lines = log.read_text().splitlines(keepends=True)
    out.write_text("".join(line for line in lines if line[:4].isdigit()))
    err.write_text("".join(line for line in lines if not line[:4].isdigit()))
    return out, err


def _timeline(events: list[LogEvent]) -> list[tuple[str, object, float]]:
    return sorted((e.name, e.fields["offset_ms"], e.t_wall_s)
                  for e in events if e.kind == "timeline")


def test_stderr_given_apart_across_a_restart_places_each_runs_timeline_by_its_own_start_line(
        tmp_path: Path) -> None:
    """Read after the whole stdout, every TIMELINE line of the stderr was placed by the last
    `starting cuzk engine` line read: the first run's GPU work 54 s late, in the second run.
    Each run's lines are placed by its own start line now, as the one file places them,
    whichever file is named first."""
    out, err = _split(RESTART, tmp_path)
    one, _ = parse_log_files([str(RESTART)], Config())
    assert len(_timeline(one)) == 16
    for given in ([out, err], [err, out]):
        notes: list[str] = []
        counters: dict[str, int] = {}
        two = list(log_file_events(map(str, given), Config(), None, counters, notes=notes))
        assert _timeline(two) == _timeline(one)
        assert notes == [] and TIMELINE_UNPLACED not in counters


def test_parse_timeline_of_stderr_given_apart_across_a_restart_says_what_the_one_file_says(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`parse --timeline out.log err.log` said 2 partitions of one run over 3 s, and a restart
    cost of 40 s without its 10 s down; fed in the order read, a stderr placed run by run
    would go back in time at its first run. It says what the one file says: 3 partitions of
    two runs over 58 s, the restart cost 51 s, down 10.0 s."""
    out, err = _split(RESTART, tmp_path)
    assert main(["parse", "--timeline", str(RESTART)]) == 0
    one = capsys.readouterr().out
    assert "wall time (first GPU_START .. last GPU_END): 58.000 s" in one
    assert "the restart cost the GPU 51.0 s" in one and "down 10.0 s" in one
    for given in ([out, err], [err, out]):
        assert main(["parse", "--timeline", *map(str, given)]) == 0
        captured = capsys.readouterr()
        assert captured.out == one
        assert "TIMELINE line(s) placed" not in captured.err


def test_stderr_given_apart_with_more_start_lines_than_runs_places_none_and_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A third start line, of a run that wrote no TIMELINE line: 3 start lines for 2 runs,
    and nothing says which run each is of. No line is placed by a guess (by the last start
    line all were, 4 minutes after they were written); it is said once."""
    out, err = _split(RESTART, tmp_path)
    with open(out, "a") as f:
        f.write(IDLE_RUN)
    notes: list[str] = []
    counters: dict[str, int] = {}
    events = list(log_file_events([str(out), str(err)], Config(), None, counters, notes=notes))
    assert _timeline(events) == []
    assert counters[TIMELINE_UNPLACED] == 16
    assert notes == [
        f"--log {err}: 16 TIMELINE line(s) placed in wall time by no start line of --log "
        f"{out}: it shows 2 engine run(s) (its offsets begin again 1 time(s)), they show 3 "
        "`starting cuzk engine` line(s), and which run each start line is of is not known (a "
        "run that wrote no TIMELINE line, files cut or rotated at other times); give cuzk's "
        "stdout and stderr as one file (`> cuzk.log 2>&1`) or the journal"]
    assert main(["parse", "--timeline", str(out), str(err)]) == 0
    captured = capsys.readouterr()
    assert captured.err.count(f"gapwatch parse: {err}: 16 TIMELINE line(s) placed in wall "
                              f"time by no start line of {out}: it shows 2 engine run(s)") == 1
    # Timed by parse's reading, they make no restart cost of the parse's own time.
    assert "the restart cost the GPU" not in captured.out
    assert "wall time (first GPU_START .. last GPU_END): -" in captured.out


#: A start line 4 s before the second run's: a run that died at its start (a crash loop's).
DIED_AT_START = ("2026-05-12T17:00:50.000000Z  INFO cuzk_core::engine: starting cuzk engine "
                 "pipeline_enabled=true\n")


def test_a_run_that_died_at_its_start_leaves_the_other_runs_placed_where_only_one_way_fits(
        tmp_path: Path) -> None:
    """3 start lines for 2 runs of TIMELINE lines: the middle one's run died before writing
    any (a crash at start-up, then a restart 4 s later). The first run's 44 s of lines fit
    only after the first start line (after the second they would end 30 s past the third),
    the second run's only after the third: one way fits, and each run is placed by its own
    start line, as the one file places it. Every TIMELINE line of the file was placed by none
    (a report of such a log had no partition)."""
    one_file = tmp_path / "one.log"
    lines = RESTART.read_text().splitlines(keepends=True)
    second = next(i for i, x in enumerate(lines) if x.startswith("2026-05-12T17:00:54.030000Z"))
    one_file.write_text("".join([*lines[:second], DIED_AT_START, *lines[second:]]))
    out, err = _split(one_file, tmp_path)
    notes: list[str] = []
    counters: dict[str, int] = {}
    events = list(log_file_events([str(out), str(err)], Config(), None, counters, notes=notes))
    one, _ = parse_log_files([str(RESTART)], Config())
    assert _timeline(events) == _timeline(one) and len(_timeline(events)) == 16
    assert not counters.get(TIMELINE_UNPLACED) and not notes


def test_runs_take_the_start_lines_of_the_one_way_that_fits_and_none_where_two_do() -> None:
    # A crash loop before cuzk came up: an hour's run fits only the last of three start lines.
    assert engine_runs.only_fit((-60.0, -30.0, 0.0), (3600.0,)) == (0.0,)
    # A run of 5 hours, then two that died at their start: it fits the first start line, and
    # the last (nothing after it to end before): which one is not known.
    assert engine_runs.only_fit((0.0, 18_000.0, 18_030.0), (17_000.0,)) is None


def test_a_run_whose_lines_would_end_after_the_next_runs_start_line_places_none(
        tmp_path: Path) -> None:
    """As many runs as start lines, but the first run's lines (44 s long) would end after the
    second start line (30 s after the first): these are not each other's."""
    out, err = _split(RESTART, tmp_path)
    out.write_text(out.read_text().replace("17:00:54.030000Z", "17:00:30.000000Z"))
    notes: list[str] = []
    counters: dict[str, int] = {}
    events = list(log_file_events([str(out), str(err)], Config(), None, counters, notes=notes))
    assert _timeline(events) == [] and counters[TIMELINE_UNPLACED] == 16
    assert "but run 1's lines would end 14.0 s after run 2's start line" in notes[-1]


def test_the_runs_of_start_lines_no_longer_kept_are_placed_by_none_the_later_ones_by_theirs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The start lines kept are the latest (bounded for a log of any number of restarts):
    the runs before them are placed by none, and said; the later ones by their own."""
    monkeypatch.setattr(engine_runs, "MAX_START_LINES", 1)
    out, err = _split(RESTART, tmp_path)
    notes: list[str] = []
    counters: dict[str, int] = {}
    events = list(log_file_events([str(out), str(err)], Config(), None, counters, notes=notes))
    one, _ = parse_log_files([str(RESTART)], Config())
    assert _timeline(events) == _timeline(one[len(one) // 2:])  # the second run's 8
    assert counters[TIMELINE_UNPLACED] == 8
    assert "its first 1 engine run(s) started more than 1 `starting cuzk engine` lines" \
        in notes[-1]


_POST_FILES = ("rec.jsonl", "cuzk.log", "out.log", "err.log")


def _write_post_recording(folder: Path) -> None:
    """The simulator's `post` scenario over two restarts: its recording, cuzk's log as one
    file, and as `cuzk > out.log 2> err.log` writes it (`_POST_FILES`)."""
    sim = simulate("post", duration_s=2 * CYCLE_S + 10, status_period_s=1.0)
    rec, one, out, err = (folder / name for name in _POST_FILES)
    write_recording(rec, sim.header, sim.records)
    one.write_text("".join(f"{text}\n" for _stream, text in sim.log_lines))
    out.write_text("".join(f"{text}\n" for stream, text in sim.log_lines if stream != "stderr"))
    err.write_text("".join(f"{text}\n" for stream, text in sim.log_lines if stream == "stderr"))


@pytest.fixture(scope="module")
def post_recording(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str, str]:
    """`_write_post_recording`'s files, made once a run for the three tests that read them
    (the simulation and the writing were ~0.25 CPU-s each time): read only, a test that
    changes one works on a copy."""
    folder = read_only_once(tmp_path_factory, "two-stream-post", _write_post_recording,
                            _POST_FILES)
    rec, one, out, err = (str(folder / name) for name in _POST_FILES)
    return rec, one, out, err


def test_a_post_recording_with_its_stderr_given_apart_reports_its_proofs_and_restarts_as_one_log(
        post_recording: tuple[str, str, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """The `post` scenario's log as two files: its first runs' PoSt were said lost in restart
    (8 proofs, 6 late, for 4 and 2), a restart's cost read from the wrong runs (1.9 s for 18.1
    and 18.2), the payoff's partitions an hour 1,685 for 3,476. The report says the one file's proofs, restarts and partitions; only the lock
    times (its C++ lines are placed beside no partition) and the GPU of an error line (its
    partition's, named by the TIMELINE lines read after it) stay unsaid."""
    rec, one, out, err = post_recording
    assert main(["report", "--json", rec, "--log", one]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert main(["report", "--json", rec, "--log", out, "--log", err]) == 0
    apart = json.loads(capsys.readouterr().out)
    assert len(whole["prover_events"]["restart_cost"]) == 2
    # An error line's GPU is its partition's, which the TIMELINE lines read after it name.
    # A panic (untimestamped) is placed by the timed line before it: read apart, a TIMELINE
    # line, whose offset is whole milliseconds; in one file, a tracing line of the same instant
    # may come last, stamped to the microsecond. The same time, to the millisecond.
    errors = [[(e["t_wall_s"], e["job_id"], e["level"]) for e in doc["prover_events"].pop("error")]
              for doc in (whole, apart)]
    assert len(errors[0]) == 2 and [e[1:] for e in errors[0]] == [e[1:] for e in errors[1]]
    assert [e[0] for e in errors[1]] == pytest.approx([e[0] for e in errors[0]], abs=1e-3)
    assert apart["prover_events"] == whole["prover_events"]
    for key in ("count", "wall_start_s", "unpinned"):
        assert apart["partitions"][key] == whole["partitions"][key]
    assert apart["partitions"]["merged_efficiency"] == \
        pytest.approx(whole["partitions"]["merged_efficiency"])
    assert apart["payoff"]["partitions_per_hour"] == \
        pytest.approx(whole["payoff"]["partitions_per_hour"])
    assert not [p for p in apart["problems"] if "TIMELINE line(s) placed" in p]


def test_a_replay_and_a_report_say_once_that_the_stderrs_runs_could_not_be_placed(
        post_recording: tuple[str, str, str, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    rec, _one, shared_out, err = post_recording
    out = str(tmp_path / "out.log")  # a copy: the shared one is read only
    Path(out).write_bytes(Path(shared_out).read_bytes())
    with open(out, "a") as f:  # a start line after the last run's: 4 start lines, 3 runs
        f.write("2026-11-30T00:58:40.000000Z  INFO cuzk_core::engine: starting cuzk engine "
                "pipeline_enabled=true\n")
    assert main(["report", "--json", rec, "--log", out, "--log", err]) == 0
    said = [p for p in json.loads(capsys.readouterr().out)["problems"]
            if "TIMELINE line(s) placed" in p]
    assert len(said) == 1 and said[0].startswith(f"--log {err}: ")
    assert "it shows 3 engine run(s)" in said[0] and "they show 4 `starting cuzk" in said[0]
    replay = open_replay_logs(rec, [out, err], Config(), header_of(rec).started_wall_s)
    try:
        assert said[0] in replay.events().notes_now()
    finally:
        replay.close()


@contextmanager
def _following(paths: list[Path]
               ) -> Iterator[tuple[LogFollower, list[LogEvent], list[Notice]]]:
    """`record --from-start --log P...` of `paths`, their backlog read; stopped at the end."""
    backlog = sum(len(p.read_text().splitlines()) for p in paths)
    with following(paths, LogsConfig(poll_ms=5, from_start=True)) as read:
        assert until(lambda: read[0].status().lines == backlog)
        yield read


def _follow_backlog(paths: list[Path]) -> tuple[LogFollower, list[LogEvent], list[Notice]]:
    """`record --from-start --log P...` of `paths` until their backlog is read (stopped)."""
    with _following(paths) as read:
        return read


def test_a_combined_log_followed_from_its_start_beside_another_keeps_its_backlogs_lock_times(
        tmp_path: Path) -> None:
    """`record --from-start --log cuzk.log --log other.log`, cuzk.log its `2>&1`: every lock
    region of its backlog was dropped (each backlog beside a second file was read apart) and
    said to be lines that "cannot be placed beside the other logs' lines", though the lines
    naming their holders are in the same file, in the order written. Only a file with no time
    of its own beside one that shows its own is apart (`read_order`, as offline): the combined
    log's backlog pairs as it does followed alone, whatever is beside it, and only the stderr
    beside it is said."""
    combined = tmp_path / "cuzk.log"
    combined.write_bytes((Path(__file__).parent / "data" / "pageable.log").read_bytes())
    empty = tmp_path / "other.log"
    empty.write_bytes(b"")
    stderr = tmp_path / "stderr.log"  # another run's stderr: no time of its own
    stderr.write_bytes((PAGEABLE / "stderr.log").read_bytes())

    def regions(events: list[LogEvent]) -> list[tuple[int | None, int | None, object]]:
        return [(e.worker, e.partition, e.fields["mutex_held_ms"]) for e in events
                if e.kind == "cuzk_partition"]

    _, alone, _ = _follow_backlog([combined])
    assert len(regions(alone)) == 12
    for beside in ([combined, empty], [empty, combined], [combined, stderr],
                   [stderr, combined]):
        follower, events, notices = _follow_backlog(beside)
        assert regions(events) == regions(alone), beside
        said = [n.message.split(":")[0] for n in notices if "before following began" in n.message]
        assert said == ([f"log {stderr}"] if stderr in beside else []), beside
        unplaced = _cpp_lines(stderr) if stderr in beside else 0
        assert follower.parser.counters[UNPLACED] == unplaced


def test_a_backlogs_lock_region_pairs_only_with_a_name_of_the_same_backlog() -> None:
    """A backlog is in the order written only among its own lines: its lock region is never
    paired with a name read live, nor with another file's backlog (read one after the
    other), only with the name its own file holds after it."""
    group = ("CUZK_TIMING: pre_lock_cpu_ms=3 mutex_wait_ms=0",
             "CUZK_TIMING: mutex_held_ms=1111 total_start_fn_ms=2222")

    def name(partition: int) -> str:
        return ("2026-11-30T10:04:20.000000Z  INFO cuzk_core::engine: GPU_TIMING "
                f"spawn_blocking prove_start worker_id=1 partition=Some({partition}) "
                "spawn_to_enter_ms=0 prove_start_ms=2222")

    parser = LogParser(LogsConfig())
    for line in group:
        parser.parse_line(line, "a.log", 1, 1.0, backlog=True)
    assert not [e for e in parser.parse_line(name(7), "b.log", 1, 1.0, backlog=True)
                if e.kind == "cuzk_partition"]
    assert not [e for e in parser.parse_line(name(8), "b.log", 2, 1.0)
                if e.kind == "cuzk_partition"]
    [tied] = [e for e in parser.parse_line(name(3), "a.log", 2, 1.0, backlog=True)
              if e.kind == "cuzk_partition"]
    assert (tied.partition, tied.fields["mutex_held_ms"]) == (3, 1111)


def test_followed_from_their_start_across_a_restart_each_runs_timeline_is_placed_by_its_own_start(
        tmp_path: Path) -> None:
    """`record --from-start --log out.log --log err.log` across a restart of cuzk: the
    backlogs were read in the order given, so stdout first placed every TIMELINE line of the
    stderr by its last start line (the first run's GPU work in the second run: a restart's
    cost 40 s where the file says 51 s), stderr first by none. They are read as offline: the
    stderr last, each run's lines by its own start line, whichever is named first."""
    out, err = _split(RESTART, tmp_path)
    one, _ = parse_log_files([str(RESTART)], Config())
    for given in ([out, err], [err, out]):
        _follower, events, _notices = _follow_backlog(given)
        assert _timeline(events) == _timeline(one), given


def test_a_followed_stderr_whose_runs_outnumber_the_start_lines_read_is_never_timed_by_its_reading(
        tmp_path: Path) -> None:
    """More engine runs in the stderr than start lines read before it (a start line not in
    the stdout): each run's start line is not known, and every TIMELINE line of the backlog was
    timed at the moment it was read ("backlog"), months after it was written. It is placed by
    the latest start line read, as before the runs were placed."""
    out, err = _split(RESTART, tmp_path)
    lines = out.read_text().splitlines(keepends=True)
    second = [i for i, line in enumerate(lines) if "starting cuzk engine" in line][1]
    out.write_text("".join(lines[:second] + lines[second + 1:]))
    for given in ([out, err], [err, out]):
        _follower, events, _notices = _follow_backlog(given)
        timeline = [e for e in events if e.kind == "timeline"]
        assert len(timeline) == 16
        assert {e.time_source for e in timeline} == {"timeline"}, given  # by a start line


def test_a_stdout_backlog_longer_than_a_pass_is_read_whole_before_the_stderr_places_its_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`record --from-start --log out.log --log err.log` of a day's stdout: the tailer reads
    8 MiB of each file a pass, so the stderr's backlog came while the stdout's later start
    lines were not read yet, and every run of the stderr was placed by the start lines read
    so far: the second run's GPU work 54 s early, in the first run, nothing said. The stderr's
    backlog is read once the stdout's has been, as offline."""
    monkeypatch.setattr(tail, "_MAX_READ_PER_POLL", 256)  # a pass as short as a line or two
    out, err = _split(RESTART, tmp_path)
    one, _ = parse_log_files([str(RESTART)], Config())
    events: list[LogEvent] = []
    follower = LogFollower([str(out), str(err)], LogsConfig(from_start=True), events.append)
    while follower.tailer.poll_once():  # its passes on this thread, until one reads nothing
        pass
    assert _timeline(events) == _timeline(one)


def test_live_stdout_lines_between_the_stderrs_backlog_passes_leave_its_runs_placed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stderr backlog of more than a pass, read while cuzk writes its stdout: the first
    line of another file let the runs go, and the rest of the backlog was placed by the
    latest start line (the first run's later lines in the second run)."""
    monkeypatch.setattr(tail, "_MAX_READ_PER_POLL", 256)
    out, err = _split(RESTART, tmp_path)
    one, _ = parse_log_files([str(RESTART)], Config())
    events: list[LogEvent] = []
    follower = LogFollower([str(out), str(err)], LogsConfig(from_start=True), events.append)
    live = "2026-05-12T17:02:00.000000Z  INFO cuzk_core::engine: a line written live\n"
    backlog = len(err.read_text().splitlines())
    while follower.tailer.poll_once():
        err_read = {s.path: s.lines for s in follower.tailer.status()}[str(err)]
        if 0 < err_read < backlog:
            with open(out, "a") as f:  # cuzk writes on between the stderr's passes
                f.write(live)
    assert _timeline(events) == _timeline(one)


def test_a_stdout_whose_reads_fail_never_holds_the_stderrs_backlog_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stderr's backlog waits for the stdout's to be read; a stdout whose reads fail
    (EIO, a stale NFS handle) would never be, and the stderr was held for good."""
    out, err = _split(RESTART, tmp_path)
    real_read = os.read

    def failing(fd: int, n: int) -> bytes:
        if os.readlink(f"/proc/self/fd/{fd}") == str(out):
            raise OSError(errno.EIO, "Input/output error")
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", failing)
    events: list[LogEvent] = []
    follower = LogFollower([str(out), str(err)], LogsConfig(from_start=True), events.append)
    for _ in range(3):
        follower.tailer.poll_once()
    assert len([e for e in events if e.kind == "timeline"]) == 16


def _proofs(events: list[LogEvent]) -> list[tuple[str | None, str, bool]]:
    """The proof events a cuzk watcher fed `events` says: (job, verdict, ended)."""
    watch, said = CuzkWatch(), []
    for e in events:
        said += watch.feed(e)
    return [(e.job_id, e.proof.verdict, e.proof.done) for e in said + watch.finish()
            if e.proof is not None]


def test_followed_from_their_start_stdout_and_stderr_say_the_proofs_one_file_says(
        post_recording: tuple[str, str, str, str]) -> None:
    """`record --from-start --log out.log --log err.log`: the stdout's backlog reached the
    watchers before the stderr's TIMELINE lines of the same hours, so each WinningPoSt of the
    backlog was said LATE, "still running" 30 s after its `job enqueued` line, and "lost in a
    restart" at the next start line, before its own lines came. The backlogs' events are
    handed on by time once all are read, as the one file's: the same proofs."""
    _rec, one, out, err = post_recording
    whole, _ = parse_log_files([one], Config())
    events: list[LogEvent] = []
    follower = LogFollower([out, err], LogsConfig(from_start=True), events.append)
    while follower.tailer.poll_once():  # its passes on this thread, until one reads nothing
        pass
    assert _proofs(events) == _proofs(whole)
    assert ("winpost-1000-1a2b3c01", "ok", True) in _proofs(events)
