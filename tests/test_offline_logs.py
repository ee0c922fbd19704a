"""Offline logs (`report/export/replay --log`, `parse`) are read as the live tailer reads them
(issue 29, item 6): NUL padding dropped and counted, lines split at `\\n` only, read in bounded
slices (a NUL hole passed over unread)."""

from __future__ import annotations

import contextlib
import functools
import gzip
import io
import json
import os
import signal
import tracemalloc
from pathlib import Path

import pytest
from msgspec.structs import replace
from parsed_logs import parse_log_files

from gapwatch.cli import main
from gapwatch.config import Config
from gapwatch.core.models import LogEvent
from gapwatch.logs.files import LogFile
from gapwatch.logs.parse import LogParser
from gapwatch.logs.tail import LineSplitter

HOSTILE = Path(__file__).parent / "data" / "hostile"
GIB = 1 << 30


def _live(path: Path) -> list[LogEvent]:
    """The events the live path (tailer's splitter, then the parser) makes of the file."""
    parser = LogParser(Config().logs, keep_unparsed=False)
    splitter = LineSplitter(Config().logs.max_line_bytes)
    events: list[LogEvent] = []
    for line in [*splitter.feed(path.read_bytes()), *splitter.flush()]:
        events.extend(parser.parse_line(line, stream=str(path)))
    return sorted((e for e in events if e.t_wall_s > 0), key=lambda e: e.t_wall_s)


def test_copytruncate_nul_padding_does_not_hide_the_first_line_offline(tmp_path: Path) -> None:
    """NULs before cuzk's first line (its TIMELINE anchor) hid it: TIMELINE lines went
    unplaced and partitions per hour changed, with nothing said."""
    padded = HOSTILE / "copytruncate-nul.log"
    clean = tmp_path / "clean.log"
    clean.write_bytes(padded.read_bytes().replace(b"\0", b""))
    events, counters = parse_log_files([str(padded)], Config())
    expected, _ = parse_log_files([str(clean)], Config())
    assert [(e.t_wall_s, e.name) for e in events] == [(e.t_wall_s, e.name) for e in expected]
    assert any(e.kind == "timeline" for e in events)  # placed by the anchor line
    assert counters["nul_bytes"] == 4096


@pytest.mark.parametrize("name", ["lone-cr.log", "copytruncate-nul.log"])
def test_offline_logs_read_as_the_live_tailer_reads_them(name: str) -> None:
    """A lone CR split a line offline (text mode's universal newlines) but not live."""
    path = HOSTILE / name
    events, _ = parse_log_files([str(path)], Config())
    assert [(e.t_wall_s, e.name, e.raw) for e in events] == \
        [(e.t_wall_s, e.name, e.raw) for e in _live(path)]


def test_a_lone_cr_splits_no_line_offline() -> None:
    log = LogFile(str(HOSTILE / "lone-cr.log"), Config().logs.max_line_bytes)
    lines = list(log.lines())
    assert len(lines) == 9 and all(line.endswith("\rprogress 50%\r") for line in lines[1:])


def test_a_gib_nul_hole_is_passed_over_in_bounded_memory(tmp_path: Path) -> None:
    """A copytruncate's 1 GiB NUL hole cost 2.1 GB read as text."""
    lines = (HOSTILE / "copytruncate-nul.log").read_bytes().replace(b"\0", b"")
    path = tmp_path / "holed.log"
    with open(path, "wb") as f:
        f.write(lines[:200])  # a line cut by the truncation ...
        f.truncate(GIB)  # ... a hole (sparse: no disk) up to the writer's old offset ...
        f.seek(GIB)
        f.write(lines)  # ... and the log written again there
    tracemalloc.start()
    try:
        events, counters = parse_log_files([str(path)], Config())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 << 20, peak
    assert counters["nul_bytes"] == GIB - 200
    assert any(e.kind == "timeline" for e in events)


def test_parse_reads_a_log_with_nul_padding_instead_of_refusing_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`parse` called such a log "a binary file, it has NUL bytes" while `record --log` read it."""
    assert main(["parse", str(HOSTILE / "copytruncate-nul.log")]) == 0
    out, err = capsys.readouterr()
    assert "starting cuzk engine" in out and "binary" not in err
    assert "4096 NUL bytes dropped" in err


def test_report_with_a_nul_padded_log_counts_the_nul_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    from evaluation.simulate import simulate
    from gapwatch.sinks.recorder import write_recording

    sim = simulate("pageable", seed=2, duration_s=30.0)
    rec = tmp_path / "r.jsonl"
    write_recording(rec, sim.header, [r for r in sim.records if r.type != "log"])
    log = tmp_path / "cuzk.log"
    log.write_bytes(b"\0" * 100 + "".join(f"{t}\n" for _, t in sim.log_lines).encode())
    assert main(["report", "--json", str(rec), "--log", str(log)]) == 0
    assert '"log_nul_bytes":100' in capsys.readouterr().out.replace(" ", "")


def test_a_fifo_log_is_read_as_a_stream(tmp_path: Path) -> None:
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    pid = os.fork()
    if pid == 0:  # the writer (gives up after 10 s if no reader ever comes)
        signal.alarm(10)
        with open(fifo, "wb") as w:
            w.write(b"\0\0a line\r\nanother")
        os._exit(0)
    try:
        assert list(LogFile(str(fifo), 1 << 20).lines()) == ["a line\r", "another"]
    finally:
        os.waitpid(pid, 0)


def test_a_fifo_log_nobody_writes_to_is_given_up_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """`report --log FIFO` and `parse FIFO` with no writer blocked `open()` for ever (the
    split's look at the file first, then the read). Nobody writes: the wait's length only
    sets the test's own."""
    from gapwatch.logs import files

    monkeypatch.setattr(files, "FIFO_FIRST_BYTES_S", 0.05)
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    recording = Path(__file__).parent / "data" / "pageable.csv"
    assert main(["report", str(recording), "--log", str(fifo)]) == 2
    assert f"cannot read {fifo}: a FIFO that said nothing for 0.05 s" in capsys.readouterr().err
    main(["parse", str(fifo)])
    assert "a FIFO that said nothing for 0.05 s" in capsys.readouterr().err


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/full"])
def test_an_endless_device_as_an_offline_log_is_refused_not_read_for_ever(
    device: str, capsys: pytest.CaptureFixture[str],
) -> None:
    """Endless NULs (dropped, counted) were read for ever by `report --log`, `parse`."""
    recording = Path(__file__).parent / "data" / "pageable.csv"
    assert main(["report", str(recording), "--log", device]) == 2
    assert "a character device, not a file to read whole" in capsys.readouterr().err
    main(["parse", device])
    assert "a character device, not a file to read whole" in capsys.readouterr().err


def _cuzk_log() -> bytes:
    """cuzk's own lines (tests/data/cuzk-upstream: its format strings at the pinned commit)."""
    return (Path(__file__).parent / "data" / "cuzk-upstream" / "cuzk.log").read_bytes()


def test_a_gzipped_log_is_read_inflated_as_the_plain_one(tmp_path: Path) -> None:
    """logrotate compresses the rotated logs (`cuzk.log.2.gz`): read as text, one was a screen
    of unparsed junk and no event, with nothing said."""
    plain = tmp_path / "cuzk.log"
    plain.write_bytes(_cuzk_log())
    rotated = tmp_path / "cuzk.log.2.gz"
    rotated.write_bytes(gzip.compress(_cuzk_log()[:5000]) + gzip.compress(_cuzk_log()[5000:]))
    events, counters = parse_log_files([str(rotated)], Config())
    expected, expected_counters = parse_log_files([str(plain)], Config())
    assert len(events) > 20 and counters == expected_counters
    assert [replace(e, stream="") for e in events] == [replace(e, stream="") for e in expected]


def test_a_gzipped_log_cut_short_gives_its_lines_to_the_cut_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = gzip.compress(_cuzk_log())
    cut = tmp_path / "cuzk.log.1.gz"
    cut.write_bytes(whole[:len(whole) * 2 // 3])  # a copy, or a compression, still running
    events, counters = parse_log_files([str(cut)], Config())
    assert counters["ends_early"] == 1 and len(events) > 20
    plain = tmp_path / "cuzk.log"
    plain.write_bytes(_cuzk_log())
    every, _ = parse_log_files([str(plain)], Config())
    assert len(events) < len(every)
    assert {e.raw for e in events} <= {e.raw for e in every}
    assert main(["parse", str(cut)]) == 0
    err = capsys.readouterr().err
    assert "binary" not in err and f"{cut}: its gzip data ends early" in err


@pytest.mark.usefixtures("no_stray_threads")  # forking beside a thread may hang the child
def test_a_gzipped_log_is_parsed_in_one_process_and_read_whole_for_a_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both cut a file by its bytes: a gzip file has no offset to start at. (Sizes and CPUs
    as a large file's on a box that splits: the plain file is cut, the gzip one is not.)"""
    from gapwatch.offline import log_split, log_window

    monkeypatch.setattr(log_split, "usable_cpus", lambda: 2)
    monkeypatch.setattr(log_split, "can_share_logs", lambda: True)
    monkeypatch.setattr(log_window, "MIN_WINDOW_BYTES", 1)
    plain = tmp_path / "cuzk.log"
    plain.write_bytes(_cuzk_log())
    rotated = tmp_path / "cuzk.log.1.gz"
    rotated.write_bytes(gzip.compress(_cuzk_log()))
    assert log_split.splittable([str(plain)]) > 0 and log_window._windowable([str(plain)]) > 0
    assert log_split.splittable([str(rotated)]) == 0
    assert log_window._windowable([str(rotated)]) == 0


def test_a_report_with_a_gzipped_log_cut_short_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evaluation.simulate import simulate
    from gapwatch.sinks.recorder import write_recording

    sim = simulate("pageable", seed=2, duration_s=30.0)
    rec = tmp_path / "r.jsonl"
    write_recording(rec, sim.header, [r for r in sim.records if r.type != "log"])
    whole = gzip.compress("".join(f"{t}\n" for _, t in sim.log_lines).encode())
    log = tmp_path / "cuzk.log.1.gz"
    log.write_bytes(whole[:len(whole) // 2])
    assert main(["report", str(rec), "--log", str(log)]) == 0
    out = capsys.readouterr().out
    assert "1 --log gzip file(s) end early" in out and "log_ends_early 1" in out
    assert "Partitions (from the log)" in out  # its lines up to the cut were read


def _rotated(folder: Path, factory: pytest.TempPathFactory
             ) -> tuple[Path, Path, list[Path]]:
    """A simulated prover's recording (4 GPUs, 90 s: each third of its log holds partitions
    in flight, and the parser's state crosses each cut) and its log whole (both made once per
    run, shared with tests/test_report_parallel.py: read only), and the log cut in three in
    `folder` as logrotate leaves it, listed as the shell lists `cuzk.log*`: newest first, the
    oldest gzipped. (The 4-minute one read the same, in ~2.5x the CPU.)"""
    from shared_files import sim_with_log_once

    rec, log = sim_with_log_once(factory, seed=5, duration_s=90.0, gpus=4)
    lines = log.read_bytes().splitlines(keepends=True)
    third = len(lines) // 3
    rotated = folder / "rotated"
    rotated.mkdir()
    newest, older, oldest = (rotated / "cuzk.log", rotated / "cuzk.log.1",
                             rotated / "cuzk.log.2.gz")
    oldest.write_bytes(gzip.compress(b"".join(lines[:third])))
    older.write_bytes(b"".join(lines[third:2 * third]))
    newest.write_bytes(b"".join(lines[2 * third:]))
    return rec, log, [newest, older, oldest]


def test_rotated_logs_given_newest_first_are_read_in_the_order_they_were_written(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """One parser reads the files one after another, its state (TIMELINE's anchor, the
    partitions in flight) from the lines before: read newest first, partitions were lost and
    others misplaced."""
    _rec, whole, rotated = _rotated(tmp_path, tmp_path_factory)
    events, counters = parse_log_files([str(p) for p in rotated], Config())
    expected, expected_counters = parse_log_files([str(whole)], Config())
    assert counters == expected_counters
    assert [replace(e, stream="") for e in events] == [replace(e, stream="") for e in expected]


def test_the_empty_live_file_logrotate_leaves_beside_rotated_ones_keeps_them_in_order(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """logrotate's `create` leaves an empty file at the live name: it shows no time, and one
    such file left every file in the order given (a day's runs newest first, a restart that
    "cost the GPU -7197.5 s")."""
    _rec, _whole, rotated = _rotated(tmp_path, tmp_path_factory)
    rotated[0].write_bytes(b"")  # the live file, just rotated
    events, counters = parse_log_files([str(p) for p in rotated], Config())
    oldest_first = [str(rotated[2]), str(rotated[1])]
    expected, expected_counters = parse_log_files(oldest_first, Config())
    assert counters == expected_counters
    assert [replace(e, stream="") for e in events] == [replace(e, stream="") for e in expected]


def test_a_docker_line_escaping_a_lone_surrogate_is_read_with_a_replacement_character(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON can escape half a UTF-16 pair (`\\ud800`), which no text file holds: every writer
    after the parser raised UnicodeEncodeError (`parse --json`, `report --log`, `export`)."""
    log = tmp_path / "docker.log"
    log.write_text('{"log":"2026-11-30T00:53:21Z  INFO cuzk_core::engine: hello x=\\ud800\\n",'
                   '"stream":"stderr","time":"2026-11-30T00:53:21Z"}\n')
    assert main(["parse", "--json", str(log)]) == 0
    (event,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert event["name"] == "hello" and event["fields"]["x"] == "\ufffd"


def test_a_text_log_whose_first_bytes_are_the_gzip_magic_is_read_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two bytes were taken for gzip: `\\x1f\\x8b junk` then a prover's log was read as
    nothing, "its gzip data ends early". gzip's header is its magic, deflate and flags."""
    from gapwatch.logs.files import gzipped

    plain = tmp_path / "plain.log"
    plain.write_bytes(_cuzk_log())
    magic = tmp_path / "magic.log"
    magic.write_bytes(b"\x1f\x8b junk\n" + _cuzk_log())
    real = tmp_path / "real.log.gz"
    real.write_bytes(gzip.compress(_cuzk_log()))
    assert not gzipped(str(magic)) and gzipped(str(real))
    events, counters = parse_log_files([str(magic)], Config())
    expected, _ = parse_log_files([str(plain)], Config())
    assert not counters.get("ends_early") and len(expected) > 20
    assert [e.raw for e in events] == [e.raw for e in expected]


def test_a_file_without_a_wall_time_of_its_own_is_read_after_those_with_one(
        tmp_path: Path) -> None:
    """cuzk's stderr (TIMELINE and C++ lines, placed by the stdout's anchor) shows no time:
    read after the stdout whichever was named first (named first, its TIMELINE lines had no
    anchor yet), apart from it; stderr files alone keep the order given, none apart."""
    from gapwatch.logs.files import read_order

    stdout = tmp_path / "stdout.log"
    stdout.write_text("2026-11-30T00:53:20.000000Z  INFO cuzk_core::engine: starting cuzk "
                      "engine pipeline_enabled=true\n")
    stderr, older = tmp_path / "stderr.log", tmp_path / "stderr.log.1"
    stderr.write_text("TIMELINE,50,SYNTH_START,porep-1000-0,partition=0\n")
    older.write_text("TIMELINE,40,SYNTH_START,porep-999-0,partition=0\n")
    for given in ([stderr, stdout], [stdout, stderr]):
        order = read_order([str(p) for p in given], Config())
        assert order.paths == [str(stdout), str(stderr)]
        assert order.apart == {str(stderr)} and order.placed == [str(stdout)]
    alone = read_order([str(stderr), str(older)], Config())
    assert alone.paths == [str(stderr), str(older)] and not alone.apart


def test_parse_reads_rotated_logs_in_the_order_they_were_written(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    _rec, whole, rotated = _rotated(tmp_path, tmp_path_factory)
    assert main(["parse", "--timeline", *map(str, rotated)]) == 0
    from_rotated = capsys.readouterr().out
    assert main(["parse", "--timeline", str(whole)]) == 0
    assert from_rotated == capsys.readouterr().out


def test_a_quoted_glob_after_log_gives_the_rotated_files_in_the_order_written(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    rec, whole, rotated = _rotated(tmp_path, tmp_path_factory)
    pattern = str(rotated[0].parent / "cuzk.log*")
    assert main(["report", str(rec), "--json", "--log", pattern]) == 0
    from_glob = json.loads(capsys.readouterr().out)
    assert main(["report", str(rec), "--json", "--log", str(whole)]) == 0
    from_whole = json.loads(capsys.readouterr().out)
    assert from_glob["log_files"] == sorted(map(str, rotated))
    for doc in (from_glob, from_whole):
        del doc["log_files"]
    assert from_glob == from_whole


def test_log_paths_a_glob_expands_a_path_stays(tmp_path: Path) -> None:
    from gapwatch.commands.argtypes import log_files

    (tmp_path / "a.log").write_text("x\n")
    (tmp_path / "a.log.1").write_text("x\n")
    odd = tmp_path / "odd[1].log"  # a real name with glob characters: taken as it is
    odd.write_text("x\n")
    assert log_files([str(tmp_path / "a.log*")]) == [str(tmp_path / "a.log"),
                                                     str(tmp_path / "a.log.1")]
    assert log_files([str(odd), "-"]) == [str(odd), "-"]
    assert log_files([str(tmp_path / "none*")]) == [str(tmp_path / "none*")]  # said when read
    # Named twice, or by a path and a glob: read once (its events were counted twice).
    a = str(tmp_path / "a.log")
    assert log_files([a, str(tmp_path / "." / "a.log"), str(tmp_path / "a.log*")]) == [
        a, str(tmp_path / "a.log.1")]


DATA = Path(__file__).parent / "data"


def _plant(kind: str, at: Path) -> None:
    """One entry a rotation glob matches that cannot be read whole."""
    if kind == "dangling link":
        at.symlink_to(at.parent / "nonexistent")
    elif kind == "link loop":
        at.symlink_to(at)
    elif kind == "link to /dev/zero":
        at.symlink_to("/dev/zero")
    elif kind == "FIFO":
        os.mkfifo(at)
    else:
        at.mkdir()


@functools.cache
def _report_alone(rec: str, log: str) -> str:
    """`report --json` of `rec` with the one `log`, made once per process for the five kinds
    below, which each compare their glob's report with it (the same files every time; the
    document names the log file, which each test puts where it reads it)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["report", rec, "--json", "--log", log]) == 0
    return out.getvalue()


@pytest.mark.parametrize("kind", ["dangling link", "link loop", "link to /dev/zero", "FIFO",
                                  "directory"])
def test_a_glob_leaves_out_a_file_it_matches_that_cannot_be_read_and_says_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """One entry beside the rotated logs that cannot be read stopped the whole report: exit 2,
    no report (a FIFO after 10 s waiting for a writer). It is left out, said in one line with
    how many of the glob's files were; the report is the one of the others."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "cuzk.log").write_text((DATA / "pageable.log").read_text())
    rec = str(DATA / "pageable.csv")
    alone = json.loads(_report_alone(rec, str(DATA / "pageable.log")))
    assert alone["log_files"] == [str(DATA / "pageable.log")]
    alone["log_files"] = [str(logs / "cuzk.log")]  # the same bytes, read here
    _plant(kind, logs / "cuzk.log.1")
    assert main(["report", rec, "--json", "--log", str(logs / "cuzk.log*")]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == alone
    [said] = [line for line in err.splitlines() if "cuzk.log.1" in line]
    assert said.startswith(f"warning: --log {logs / 'cuzk.log*'}: 1 of the 2 files it matches "
                           "cannot be read, left out: ")
    # Named as it is, the file is the user's to fix: still an error (a FIFO named is waited
    # for, 10 s, elsewhere in this file).
    if kind != "FIFO":
        assert main(["report", rec, "--log", str(logs / "cuzk.log.1")]) == 2


@pytest.mark.parametrize("command", [["report", "--log"], ["replay", "--headless", "--log"],
                                     ["compare", "--after-log"]])
def test_a_glob_that_matches_no_readable_file_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """Every file the glob matches cannot be read (a dangling link, a directory): it said "2
    of the 2 files it matches cannot be read, left out", then "cannot read .../cuzk.log*: No
    such file or directory" of the glob itself. One line says the glob matched no file that
    can be read, each named with why; exit 2."""
    logs = tmp_path / "logs"
    logs.mkdir()
    _plant("dangling link", logs / "cuzk.log.1")
    _plant("directory", logs / "cuzk.log.d")
    glob_ = str(logs / "cuzk.log*")
    rec = str(DATA / "pageable.csv")
    recordings = [rec, rec] if command[0] == "compare" else [rec]
    assert main([command[0], *recordings, *command[1:], glob_]) == 2
    [said] = capsys.readouterr().err.splitlines()
    assert said == (f"gapwatch {command[0]}: {command[-1]} {glob_}: the glob matches no file "
                    f"that can be read: {logs / 'cuzk.log.1'} (a link that leads nowhere: No "
                    f"such file or directory); {logs / 'cuzk.log.d'} (a directory)")


def test_parse_names_a_glob_given_as_a_log_argument_as_it_was_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`parse 'logs/cuzk.log*'` (the LOG argument, no flag) said "--log logs/cuzk.log*: the
    glob matches no file that can be read", and "warning: --log ...: 1 of the 2 files ...": a
    flag the user never typed. The glob is named as given; one after `--log` still names it."""
    logs = tmp_path / "logs"
    logs.mkdir()
    _plant("dangling link", logs / "cuzk.log.1")
    glob_ = str(logs / "cuzk.log*")
    assert main(["parse", glob_]) == 2
    [said] = capsys.readouterr().err.splitlines()
    assert said.startswith(f"gapwatch parse: {glob_}: the glob matches no file that can be "
                           "read: ")
    assert main(["parse", "--log", glob_]) == 2
    assert capsys.readouterr().err.startswith(f"gapwatch parse: --log {glob_}: the glob ")
    (logs / "cuzk.log").write_text((DATA / "pageable.log").read_text())
    assert main(["parse", glob_]) == 0
    [left_out] = [line for line in capsys.readouterr().err.splitlines() if "left out" in line]
    assert left_out.startswith(f"warning: {glob_}: 1 of the 2 files it matches cannot be read")


def test_a_shell_expanded_glob_after_log_is_refused_with_the_way_to_give_it(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    rec, _whole, rotated = _rotated(tmp_path, tmp_path_factory)
    with pytest.raises(SystemExit) as stop:
        main(["report", str(rec), "--log", *map(str, rotated)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--log takes one path: repeat it, or quote a glob" in err


def test_a_gzipped_log_given_to_follow_live_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rotated log no one writes: followed, it was read as junk; `record` refuses it before
    its recording is created."""
    rotated = tmp_path / "cuzk.log.1.gz"
    rotated.write_bytes(gzip.compress(_cuzk_log()))
    out = tmp_path / "gw.jsonl"
    assert main(["record", "--source", "sim", "--duration", "1", "--out", str(out),
                 "--log", str(rotated)]) == 2
    assert "a gzip file, a rotated log no one writes" in capsys.readouterr().err
    assert not out.exists()


def test_two_logs_one_repeating_the_others_lines_are_said_counted_twice_not_silently(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--log` a copy of the log taken earlier beside the log itself (the two overlap by a
    fifth): each repeated line was read twice, the report's failure counts went from 3264 to
    3902, nothing said. The same log cut into cuzk's stdout and stderr (overlapping in time,
    repeating nothing) says nothing."""
    from shared_files import write_sim_with_log

    rec, log = write_sim_with_log(tmp_path, seed=5, duration_s=60.0, gpus=1)
    lines = log.read_bytes().splitlines(keepends=True)
    cut = len(lines) * 6 // 10
    early, late = tmp_path / "early-copy.log", tmp_path / "cuzk.log"
    early.write_bytes(b"".join(lines[:cut]))
    late.write_bytes(b"".join(lines[len(lines) - cut:]))
    assert main(["report", "--json", str(rec), "--log", str(early), "--log", str(late)]) == 0
    problems = json.loads(capsys.readouterr().out)["problems"]
    [said] = [p for p in problems if "repeats lines of" in p]
    assert said.startswith(f"--log {late} repeats lines of --log {early} (")
    assert "counted twice" in said
    stderr, stdout = tmp_path / "stderr.log", tmp_path / "stdout.log"
    stderr.write_bytes(b"".join(x for x in lines if x.startswith(b"TIMELINE")))
    stdout.write_bytes(b"".join(x for x in lines if not x.startswith(b"TIMELINE")))
    assert main(["report", "--json", str(rec), "--log", str(stderr), "--log", str(stdout)]) == 0
    assert not [p for p in json.loads(capsys.readouterr().out)["problems"]
                if "repeats lines of" in p]


def test_two_different_lines_whose_32_bit_checksums_agree_are_not_a_repeat(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A line was known by a 32-bit crc of its time and text: two ordinary logs of a million
    lines each (cuzk's stdout and stderr), sharing none, matched by chance, and the report
    said one repeated the other, its events counted twice. One such pair, crc32 1359424544
    both (found by search), is two lines. Every line sampled here, so both are remembered."""
    from gapwatch.offline import log_span
    from gapwatch.offline.log_span import Repeats

    monkeypatch.setattr(log_span, "REPEAT_SAMPLE", 1)
    repeats = Repeats()
    for t_s, raw, stream in (
            (1700035769.85, "2023-11-14T22:13:17.397Z  INFO cuzk_core::engine: out job=715397 "
             "partition=7 worker=1", "stdout.log"),
            (1700000524.0, "2023-11-14T22:13:40.480Z  INFO cuzk_core::engine: err job=10480 "
             "partition=0 worker=0", "stderr.log")):
        repeats.see(LogEvent(t_wall_s=t_s, time_source="line", kind="tracing", name="x",
                             raw=raw, stream=stream))
    assert len(repeats.seen) == 2 and repeats.notes() == []


def test_a_copy_of_a_later_logs_lines_is_found_after_a_long_first_log_fills_the_sample(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`--log cuzk.log.1 --log cuzk.log --log noon-copy.log`: the files are seen one after
    the other, and the sample kept the first `REPEAT_KEYS` keys, then took no more: a day's
    log (8 million lines, 8 GPUs) filled it within its first ~2.3 h, so the copy of today's
    morning repeated lines never remembered, each read twice, nothing said. The sample is
    thinned instead (one key in twice as many kept, the same keys in every file): it covers
    every file, in the same room."""
    from gapwatch.offline import log_span
    from gapwatch.offline.log_span import Repeats

    monkeypatch.setattr(log_span, "REPEAT_KEYS", 1_000)
    repeats = Repeats()

    def line(i: int, stream: str) -> LogEvent:
        return LogEvent(t_wall_s=1_700_000_000 + i / 10, time_source="line", kind="tracing",
                        name="x", raw=f"INFO cuzk_core::engine: job={i}", stream=stream)

    for i in range(40_000):  # yesterday's log: 40 times what the sample holds
        repeats.see(line(i, "cuzk.log.1"))
    for i in range(40_000, 44_000):
        repeats.see(line(i, "cuzk.log"))
    for i in range(40_000, 42_000):  # a copy of today's first half
        repeats.see(line(i, "noon-copy.log"))
    assert len(repeats.seen) <= 1_000
    [said] = repeats.notes()
    assert said.startswith("--log noon-copy.log repeats lines of --log cuzk.log (")
    # About 2,000 lines repeated: the estimate within a factor of two.
    about = int(said.split("about ")[1].split(" ")[0])
    assert 1_000 <= about <= 4_000
