"""The prover's log read twice: a recording made with `record --log cuzk.log`, and the same file
given again as `--log` to `report`, `export`, `replay` (or to `parse --timeline --recording`).
Every line was two: the pinned pool's failures said twice over, cuzk "started 2 times" beside
"0 restart(s)", each partition a row of a second run, a kernel utilisation past 100 %. Each line
now counts once, the file's copy, and the overlap is said (gapwatch.logs.once)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
from shared_files import made_once

from gapwatch.cli import main
from gapwatch.config import Config
from gapwatch.core.models import LogEvent, TimeSource
from gapwatch.sources.files import read_any


def _recorded(folder: Path, scenario: str) -> tuple[Path, Path, Path]:
    """A recording made by `gapwatch record` of the simulated prover, with the prover's log
    events in it as `record --log` keeps them; the log those lines came from (`cuzk.log`,
    cuzk's stdout and stderr in one file, as written); and the same recording without its log
    events (as `record` without `--log` writes it)."""
    rec, log, bare = folder / "rec.jsonl", folder / "cuzk.log", folder / "bare.jsonl"
    assert main(["record", "--source", scenario, "--speed", "0", "--duration", "60",
                 "--quiet", "--out", str(rec)]) == 0
    with rec.open() as lines, log.open("w") as text, bare.open("w") as rest:
        for line in lines:
            if '"type":"log"' not in line:
                rest.write(line)
                continue
            raw = json.loads(line)["raw"]
            if raw:  # a GPU-lock region's event has no line of its own
                text.write(raw + "\n")
    return rec, log, bare


def _recorded_once(factory: pytest.TempPathFactory, name: str,
                   scenario: str) -> tuple[Path, Path, Path]:
    """`_recorded`, made once per run and shared by the workers that draw this module's
    tests (its tests spread over all of them, and each recorded it again): read only."""
    folder = made_once(factory, name, lambda folder: _recorded(folder, scenario))
    return folder / "rec.jsonl", folder / "cuzk.log", folder / "bare.jsonl"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """`_recorded` of two GPUs."""
    return _recorded_once(tmp_path_factory, "log-read-twice", "sim:pageable,pageable")


@pytest.fixture(scope="module")
def recorded_one_gpu(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """`_recorded` of one GPU (the run figures of `parse --timeline` are one GPU's)."""
    return _recorded_once(tmp_path_factory, "log-read-twice-1", "sim:pageable")


def _report(capsys: pytest.CaptureFixture[str], *args: str | Path) -> dict[str, Any]:
    assert main(["report", "--json", *map(str, args)]) == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def _told(report: dict[str, Any]) -> dict[str, Any]:
    """What a report says of the prover and the GPUs, the parts a line read twice changed."""
    return {k: report[k] for k in ("advice", "advice_notes", "partitions", "prover_events",
                                   "payoff")} | {
        "gaps": [(g["gpu"], g["kind"], g["start_s"], g["end_s"]) for g in report["gaps"]]}


def test_a_recording_made_with_its_log_reported_with_that_log_again_counts_each_line_once(
    recorded: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The operator recorded with `--log cuzk.log`, then gave `report` the log out of habit:
    the report said each pinned-pool failure twice, cuzk started twice, each partition a row
    of a second run, silently. It now reads as the recording alone (and as a recording made
    without `--log` given its log), and says the overlap once."""
    rec, log, bare = recorded
    alone = _report(capsys, rec)
    twice = _report(capsys, rec, "--log", log)
    assert _told(twice) == _told(alone)
    assert not any("started 2 times" in n for n in twice["advice_notes"])
    assert {p["run"] for p in twice["partitions"]["items"]} == {1}
    # A note, not a problem of the data: each line is counted once, as it should be.
    [said] = twice["notes"]
    assert not any("already in the recording" in p for p in twice["problems"])
    n = twice["counters"]["log_already_recorded"]
    assert said.startswith(f"{n:,} events of {log} were already in the recording") and n > 1000
    assert "each line counted once" in said
    # The file's copy is the one kept: the report is that of a recording made without --log.
    assert _told(_report(capsys, bare, "--log", log)) == _told(twice)
    # A window: the daemon's startup lines the recording holds from before it, fed first, are
    # the file's too (a window's report with --log reads the file's lines near it as well).
    since = ["--since", "+30s"]
    windowed = _report(capsys, rec, "--log", log, *since)
    assert _told(windowed) == _told(_report(capsys, bare, "--log", log, *since))
    assert windowed["counters"]["log_already_recorded"] > 500


def test_lines_the_recording_held_too_are_a_note_of_the_text_report_not_a_warning(
    recorded: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The overlap said under `WARNING: the data has problems that change what this report
    means`, of a report the same as the recording's alone: a note is said as one."""
    rec, log, _bare = recorded
    assert main(["report", str(rec), "--log", str(log)]) == 0
    head = capsys.readouterr().out.split("\n\nGPUs")[0]
    assert "WARNING" not in head
    assert "\n\nNotes on the input\n  - " in head
    assert head.endswith(f"events of {log} were already in the recording (made with `record "
                         "--log` of the same log): each line counted once, as the file has it")


@pytest.mark.usefixtures("no_stray_threads")  # else it may read in one process (conftest)
def test_a_split_report_leaves_out_the_same_recorded_lines_as_one_process(
    recorded: tuple[Path, Path, Path]
) -> None:
    """Every worker of a split report reads every log event (recorded and the file's): each
    decides alike, and the result is the one-process one."""
    from gapwatch.offline.report import build_report, to_json

    rec, log, _bare = recorded
    one = to_json(build_report(rec, Config(), [str(log)], workers=1))
    two = to_json(build_report(rec, Config(), [str(log)], workers=2))
    assert two == one
    assert one["counters"]["log_already_recorded"] > 1000


def test_parse_timeline_with_the_recording_made_from_the_log_counts_each_partition_once(
    recorded_one_gpu: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """`parse --timeline cuzk.log --recording REC`: every partition was a row again in a second
    run, and the kernel utilisation past 100 %. The table is the log's alone (the recording
    adds no line the log holds), and stderr says the overlap."""
    rec, log, _bare = recorded_one_gpu
    assert main(["parse", "--timeline", str(log)]) == 0
    log_alone = capsys.readouterr().out
    assert main(["parse", "--timeline", str(log), "--recording", str(rec)]) == 0
    out, err = capsys.readouterr()
    assert out == log_alone
    [util] = [line for line in out.splitlines() if line.startswith("kernel utilisation")]
    assert float(util.split()[-2]) <= 100.0, util
    assert f"events of {log} were already in the recording" in err
    # The recording alone gives the same table too.
    assert main(["parse", "--timeline", "--recording", str(rec)]) == 0
    assert capsys.readouterr().out == log_alone


def test_replay_with_the_log_the_recording_was_made_from_feeds_each_line_once(
    recorded: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A replay merges the file's events into the recording's records: each line the recording
    holds is given once (the file's copy), the others as they were; the overlap said."""
    from gapwatch.engine.runtime import build_runtime
    from gapwatch.logs.files import merge_by_time

    rec, log, _bare = recorded
    in_recording = sum(1 for r in read_any(rec).records if isinstance(r, LogEvent))
    rt = build_runtime(Config(), f"replay:{rec}", speed=0, log_paths=[str(log)])
    try:
        assert rt.replay is not None and rt.replay.logs is not None
        one_pass = rt.replay.logs.events()
        fed = sum(1 for r in merge_by_time(rt.replay.recording.records, one_pass,
                                           one_pass.after_end) if isinstance(r, LogEvent))
        [said] = one_pass.notes()
    finally:
        rt.stop()
    # The file holds only lines the recording has: one event each, as many as it held.
    assert fed == in_recording
    assert said.startswith("1,") and "already in the recording" in said
    # A window's replay feeds the daemon's startup lines the recording holds from before it,
    # and the file's: one start, once.
    from gapwatch.sources.files import header_of
    from gapwatch.sources.time_window import moment, resolve

    window = resolve(moment("+30s"), None, header_of(rec).started_wall_s, None)
    rt = build_runtime(Config(), f"replay:{rec}", speed=0, log_paths=[str(log)], window=window)
    try:
        assert rt.replay is not None and rt.replay.logs is not None
        one_pass = rt.replay.logs.events()
        starts = [r for r in merge_by_time(rt.replay.recording.records, one_pass,
                                           one_pass.after_end)
                  if isinstance(r, LogEvent) and r.name == "starting cuzk engine"]
    finally:
        rt.stop()
    assert len(starts) == 1 and starts[0].stream == str(log)
    assert main(["replay", str(rec), "--headless", "--speed", "0", "--log", str(log)]) == 0
    assert "already in the recording" in capsys.readouterr().err


def test_export_with_the_log_the_recording_was_made_from_draws_each_line_once(
    recorded: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """The Perfetto trace drew the recording's log events and the file's: each partition's
    phases twice. It is now the trace of the recording alone."""
    rec, log, _bare = recorded
    traces: list[list[dict[str, Any]]] = []
    for extra in ([], ["--log", str(log)]):
        out = tmp_path / f"trace{len(traces)}.json"
        assert main(["export", str(rec), "--format", "perfetto", "--out", str(out), *extra]) == 0
        traces.append(json.loads(out.read_text())["traceEvents"])
    assert len(traces[1]) == len(traces[0])


def _ev(t: float, raw: str, *, source: TimeSource = "line", kind: str = "tracing",
        name: str = "x", stream: str = "cuzk.log") -> LogEvent:
    return LogEvent(t_wall_s=t, time_source=source, kind=kind, name=name, raw=raw, stream=stream)


def test_the_same_line_is_its_text_and_event_and_its_time_never_its_stream() -> None:
    from gapwatch.logs.once import LinesOnce, itself

    line = "2026-05-12T14:00:01.000000Z  WARN cuzk_core::pipeline: pinned pool checkout FAILED"
    timeline = "TIMELINE,55880,GPU_END,winpost-1000-9f8e7d6c,worker=0"
    panic = "thread 'main' panicked at engine.rs:12: boom"
    file = [_ev(1000.0, line), _ev(1000.0, line),  # cuzk wrote it twice: two lines
            _ev(1001.0, panic, source="around", kind="panic"),
            _ev(1002.0, timeline, source="timeline", kind="timeline", name="GPU_END"),
            _ev(1003.0, "2026-05-12T14:00:04.000000Z  INFO a line on stderr")]
    once = LinesOnce(file, itself)
    given = iter(once)
    assert next(given) is file[0]  # the merge takes the first file line before any recorded
    # The recorder named the path it followed; the report another (a copy, a hard link).
    rec = "/var/log/cuzk/cuzk.log"
    assert once.recorded(_ev(1000.0, line, stream=rec))
    assert once.recorded(_ev(1000.0, line, stream=rec))
    assert not once.recorded(_ev(1000.0, line, stream=rec))  # a third: the file has two
    # A panic the recording timed by its arrival, the file by the line before it.
    assert once.recorded(_ev(1004.5, panic, source="arrival", kind="panic", stream=rec))
    # The recording's TIMELINE placed by /status, 0.4 s from the file's start line anchor.
    assert once.recorded(_ev(1002.4, timeline, source="timeline", kind="timeline",
                             name="GPU_END", stream=rec))
    # Timed by its own text, the same line at another time is another line.
    assert not once.recorded(_ev(1003.5, "2026-05-12T14:00:04.000000Z  INFO a line on stderr"))
    # Another line at the same time (cuzk's stdout beside its stderr) is not the same.
    assert not once.recorded(_ev(1003.0, "2026-05-12T14:00:04.000000Z  INFO a line on stdout"))
    # Far apart, a text without a time of its own is another line (a crash loop's panics).
    assert not once.recorded(_ev(1100.0, panic, source="arrival", kind="panic"))
    assert list(given) == file[1:]  # every file line given, once, in order
    assert once.found == {"cuzk.log": 4} and once.count == 4
    assert once.paired(file[3]) and not once.paired(file[4])
    [note] = once.notes()
    assert note.startswith("4 events of cuzk.log were already in the recording")


def test_a_recorded_lines_reading_is_told_once_the_callers_file_copy_is_fed() -> None:
    """The file's copy is fed in the recorded copy's place, and only the recorded copy says
    when the live reader read the line (`t_arrival_mono_ns`): that reading is told (the end's
    reader's clock runs from it), never before the caller fed the file's copy. The merge holds
    the last line given until the recording's data reaches its time, and a line read ahead is
    not given yet: told when the caller takes one of a later time. A recorded copy with no
    reading tells nothing."""
    from gapwatch.logs.once import LinesOnce, itself

    file = [_ev(1000.0 + i, f"line {i}") for i in range(4)] + [_ev(1003.0, "line 3 again")]
    once = LinesOnce(file, itself)
    told: list[tuple[str, float, int]] = []
    once.tell_lines_read(lambda stream, t, read_ns: told.append((stream, t, read_ns)))
    given = iter(once)
    assert [next(given), next(given)] == file[:2]  # line 0 fed, line 1 held by the caller
    rec = "/var/log/cuzk/cuzk.log"
    assert once.recorded(msgspec.structs.replace(file[0], stream=rec, t_arrival_mono_ns=5))
    assert told == [("cuzk.log", 1000.0, 5)]  # fed already: told at once
    assert once.recorded(msgspec.structs.replace(file[1], t_arrival_mono_ns=6))  # held
    assert once.recorded(msgspec.structs.replace(file[3], t_arrival_mono_ns=8))  # read ahead
    assert once.recorded(file[2])  # no reading recorded
    assert told == [("cuzk.log", 1000.0, 5)]
    assert next(given) is file[2]
    assert told[1:] == [("cuzk.log", 1001.0, 6)]  # line 1 fed: the caller took the next
    assert next(given) is file[3]
    assert told[2:] == []
    assert next(given) is file[4]  # of line 3's time: line 3 may be the one held, unfed
    assert told[2:] == []
    assert next(given, None) is None
    assert told[2:] == [("cuzk.log", 1003.0, 8)]  # line 3 fed: the caller took them all


def test_what_is_held_to_match_the_recording_stays_bounded() -> None:
    """A day's log is never held: the lines of the last `HOLD_S` given to the caller are (their
    keys), with those read ahead (`SAME_LINE_S`), and a recorded line with a time past the
    file's end reads ahead at most `MAX_AHEAD` of it."""
    from gapwatch.logs.once import HOLD_S, MAX_AHEAD, SAME_LINE_S, LinesOnce, itself

    n = 100_000
    file = (_ev(1000.0 + i * 0.01, f"line {i}") for i in range(n))  # 1,000 s: HOLD_S thrice
    once = LinesOnce(file, itself)
    given = iter(once)
    most = 0
    for i in range(n):
        next(given)
        if i % 997 == 0:
            assert not once.recorded(_ev(1000.0 + i * 0.01, f"not in the file {i}"))
        most = max(most, len(once._held), len(once._ahead))
    assert most <= (HOLD_S + SAME_LINE_S + 2.0) * 100 + 1
    far = LinesOnce((_ev(1000.0 + i * 0.01, f"line {i}") for i in range(n)), itself)
    assert not far.recorded(_ev(1e9, "a year's lines later"))
    assert len(far._ahead) == MAX_AHEAD
    assert sum(1 for _ in far) == n  # nothing read ahead is lost


def test_until_the_recording_gives_a_log_event_the_files_lines_are_held_but_not_indexed(
) -> None:
    """Most recordings hold no log event: then no file line is looked for, and the lines of
    the last `HOLD_S` are held (their keys, as always) but not indexed (its cost, ~1.4 us a
    line); the first recorded log event indexes them, and finds its copy among them."""
    from gapwatch.logs.once import HOLD_S, LinesOnce, itself

    file = [_ev(1000.0 + i * 0.01, f"line {i}") for i in range(60_000)]  # 600 s
    once = LinesOnce(iter(file), itself)
    most = 0
    for _ in once:
        most = max(most, len(once._held))
    assert not once._free  # no index made: nothing asked
    assert most <= (HOLD_S + 2.0) * 100 + 1
    assert once.recorded(_ev(1000.0 + 59_990 * 0.01, "line 59990"))  # indexed now, and found
    assert once.count == 1 and once._free


def test_a_log_given_twice_by_a_hard_link_is_read_once(
    recorded: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """`--log cuzk.log --log again.log` where `again.log` is a hard link (one inode): its path
    was compared, so it was read twice, every line said twice. One file is read once."""
    from gapwatch.commands.argtypes import log_files

    _rec, log, _bare = recorded
    again = tmp_path / "again.log"
    os.link(log, again)
    link = tmp_path / "link.log"
    link.symlink_to(log)
    assert log_files([str(log), str(again), str(link)]) == [str(log)]
    copy = tmp_path / "copy.log"
    copy.write_bytes(log.read_bytes())  # a copy is another file (said as repeating lines)
    assert log_files([str(log), str(copy)]) == [str(log), str(copy)]


def test_a_line_followed_by_minutes_of_silence_is_still_found_in_the_recording() -> None:
    """An error, then nothing for 400 s (cuzk stuck or dead): reading ahead for the error's
    recorded copy read the next line, and the error, more than `HOLD_S` behind it, was let go
    before its copy came: counted twice. Lines are let go by what was given to the caller."""
    from gapwatch.logs.once import LinesOnce, itself

    file = [_ev(1000.0, "partition GPU proving task panicked"), _ev(1400.0, "later")]
    once = LinesOnce(iter(file), itself)
    given = iter(once)
    assert next(given).raw == "partition GPU proving task panicked"
    assert once.recorded(_ev(1000.0, "partition GPU proving task panicked"))
    assert [e.raw for e in given] == ["later"]


def test_a_panic_placed_minutes_before_its_recorded_arrival_is_the_same_line() -> None:
    """Followed live, a panic is timed by its arrival; read from the file, by the line before
    it ("around"), minutes earlier after a quiet spell. 60 s either way counted it twice; the
    file's copy may come up to `HOLD_S` before the recorded one, never long after."""
    from gapwatch.logs.once import LinesOnce, itself

    panic = "thread 'gpu-worker-0' panicked at supraseal-c2/src/lib.rs:88:9"
    file = [_ev(1000.0, panic, source="around", kind="panic"), _ev(1500.0, "later")]
    once = LinesOnce(iter(file), itself)
    given = iter(once)
    next(given)
    assert once.recorded(_ev(1200.0, panic, source="arrival", kind="panic"))
    late = LinesOnce(iter([_ev(1200.0, panic, source="around", kind="panic")]), itself)
    assert not late.recorded(_ev(1000.0, panic, source="arrival", kind="panic"))


def test_reading_ahead_for_a_recorded_line_holds_a_bounded_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reading ahead was bounded by a count of lines (32,768 of a MiB each: 32 GiB; a report
    worker took 906 MB for 2,000 lines of 400 KB): it is bounded by their text too."""
    from gapwatch.logs import once as once_module
    from gapwatch.logs.once import LinesOnce, itself

    monkeypatch.setattr(once_module, "MAX_AHEAD_CHARS", 1 << 20)
    long_text = "x" * (64 << 10)
    file = [_ev(1000.0 + i * 0.1, f"line {i} {long_text}") for i in range(40)]
    once = LinesOnce(iter(file), itself)
    assert not once.recorded(_ev(1000.0, "not in the file"))
    assert once._ahead_chars <= (1 << 20) + (64 << 10) + 16
    assert len(once._ahead) < 40
    assert sum(1 for _ in once) == 40  # nothing read ahead is lost


def test_a_recording_of_the_gpus_that_followed_no_log_is_never_looked_through() -> None:
    """`record` writes the logs it followed in its header's config (`--log` among them): a
    recording of the GPUs (`nvml`) that followed none holds no log line, so a `--log` file's
    lines are given as they come, nothing held or looked for. Any other source may hold some
    (the simulator follows a log of its own), and so may a header without that config."""
    from gapwatch.core.models import SessionHeader
    from gapwatch.logs.once import LinesOnce, itself, may_hold_log_lines

    def header(source: str, config: dict[str, Any]) -> SessionHeader:
        return SessionHeader(gapwatch_version="t", host="box", source=source,
                             started_wall_s=0.0, started_mono_ns=0, period_ms=100.0, gpus=[],
                             config=config)

    assert not may_hold_log_lines(header("nvml", {"logs": {"paths": []}}))
    assert may_hold_log_lines(header("nvml", {"logs": {"paths": ["/var/log/cuzk.log"]}}))
    assert may_hold_log_lines(header("nvml", {}))
    assert may_hold_log_lines(header("sim:pageable", {"logs": {"paths": []}}))
    line = _ev(1000.0, "a line")
    once = LinesOnce(iter([line]), itself, look=False)
    assert list(once) == [line]
    assert not once.recorded(line) and not once.paired(line) and not once._held


def test_a_backlog_read_from_before_the_recording_is_held_through_its_first_minutes() -> None:
    """`record --from-start` records cuzk's old lines (its start, 15 minutes back) at the
    recording's start, after its first samples; the file gives them first, then its lines of
    the recording's time. Let go `HOLD_S` behind those, the start line's copy came too late:
    "cuzk started 2 times", every partition of the last minutes twice. Lines from before the
    recording are held as if of its start."""
    from gapwatch.logs.once import LinesOnce, itself

    start = _ev(1100.0, "starting cuzk engine pipeline_enabled=true")
    file = [start, *(_ev(2000.0 + i, f"line {i}") for i in range(400))]
    once = LinesOnce(iter(file), itself, since_s=2000.0)
    given = iter(once)
    for _ in range(12):  # the start line and the recording's first 10 s of lines
        next(given)
    assert once.recorded(start)
    assert once.recorded(_ev(2005.0, "line 5"))
    assert sum(1 for _ in given) == 389


def test_compare_says_a_sides_log_already_in_its_recording_as_a_note(
    recorded_one_gpu: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """`compare REC REC --before-log cuzk.log` with a recording made with its log: the report
    says the overlap as a note, and compare read only its warnings and problems, so the side
    said nothing of it (it said it as a data problem before the report moved it to notes).
    A note of each side, in the text and --json, never among its problems."""
    rec, log, _bare = recorded_one_gpu
    assert main(["compare", str(rec), str(rec), "--before-log", str(log)]) == 0
    text = capsys.readouterr().out
    notes = [line for line in text.splitlines() if " note: " in line]
    assert len(notes) == 1 and notes[0].startswith("  BEFORE note: ")
    assert "already in the recording" in " ".join(text.split())
    assert main(["compare", "--json", str(rec), str(rec), "--before-log", str(log)]) == 0
    sides = json.loads(capsys.readouterr().out)["sides"]
    [note] = sides["BEFORE"]["notes"]
    assert f"events of {log} were already in the recording" in note
    assert sides["AFTER"]["notes"] == []  # no log given it
    assert not any("already in the recording" in p
                   for side in sides.values() for p in side["problems"])
