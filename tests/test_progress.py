"""A long report says how far it is: a progress line on a terminal's stderr, rewritten in place,
quiet for a quick report, gone before the report is printed, and never a change to the report
(`gapwatch.offline.progress`, `Console.show`)."""

from __future__ import annotations

import functools
import gzip
import io
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import msgspec
import pytest
from shared_files import sim_with_log_once

from evaluation.simulate import simulate
from gapwatch.cli import main
from gapwatch.commands import report as report_command
from gapwatch.config import Config
from gapwatch.engine.console import Console
from gapwatch.offline import progress as progress_mod
from gapwatch.offline import report_parallel
from gapwatch.offline.progress import DataTime, LogBytes, Progress, minutes, progress_of
from gapwatch.offline.report import build_report, to_json
from gapwatch.sinks.recorder import write_recording
from gapwatch.sources.files import data_span
from gapwatch.sources.recording import last_wall_s


class Ticks:
    """A clock that moves `step_s` at every look."""

    def __init__(self, step_s: float) -> None:
        self.t = 1000.0
        self.step_s = step_s

    def __call__(self) -> float:
        self.t += self.step_s
        return self.t


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def _progress(step_s: float, **kw: float) -> tuple[Progress, list[str]]:
    lines: list[str] = []
    return Progress(lines.append, "gapwatch report", clock=Ticks(step_s), **kw), lines


def test_nothing_is_shown_in_the_first_second_then_at_most_twice_a_second() -> None:
    p, lines = _progress(0.1)  # a look every 0.1 s
    for _ in range(9):
        p.step("finding gaps", 0.5)
    assert lines == []  # 0.9 s: a quick report never shows a line
    for _ in range(21):
        p.step("finding gaps", 0.5)
    assert len(lines) == 5  # at 1.0, 1.5, 2.0, 2.5, 3.0 s


def test_a_new_step_is_shown_at_once() -> None:
    p, lines = _progress(0.1, after_s=0.0)
    p.step("parsing the log", 1.0)
    p.step("finding gaps", 0.0)
    p.step("finding gaps", 0.01)  # 0.1 s later: throttled
    p.step("summing up")
    assert [line.split(":")[1].split(" ·")[0].strip() for line in lines] == [
        "parsing the log 100 %", "finding gaps 0 %", "summing up"]


def test_the_line_says_the_step_how_far_how_long_and_the_time_left() -> None:
    p, lines = _progress(30.0)
    p.step("finding gaps", 0.1, "data at 11:00:00")  # first told 10 % in, 30 s from the start
    p.step("finding gaps", 0.25, "data at 14:32:05")  # 15 % more in 30 s: 75 % is 2:30
    p.step("finding gaps", 0.5, "data at 18:00:00")  # 40 % in 60 s: 50 % is 1:15
    assert lines == [
        "gapwatch report: finding gaps 10 % (data at 11:00:00) · 0:30 so far",
        "gapwatch report: finding gaps 25 % (data at 14:32:05) · 1:00 so far, "
        "~2:30 left",
        "gapwatch report: finding gaps 50 % (data at 18:00:00) · 1:30 so far, "
        "~1:15 left",
    ]


def test_no_time_left_is_guessed_early_or_without_a_fraction() -> None:
    p, lines = _progress(1.0, after_s=0.0)
    p.step("finding gaps", 0.5)  # the step has run 0 s
    p.step("finding gaps", 0.01)  # below MIN_FRACTION
    p.step("summing up", None)
    p.step("finding gaps", float("nan"))
    p.step("finding gaps", float("inf"))
    assert all("left" not in line for line in lines)
    assert "%" not in lines[2] + lines[3] + lines[4]


def test_fractions_outside_0_to_1_are_held_to_them() -> None:
    p, lines = _progress(1.0, after_s=0.0)
    p.step("finding gaps", -3.0)
    p.step("finding gaps", 7.0)
    assert " 0 %" in lines[0] and " 100 %" in lines[1]


def test_minutes_reads_as_a_clock() -> None:
    assert [minutes(s) for s in (0, 5.9, 65, 3599, 3723)] == [
        "0:00", "0:05", "1:05", "59:59", "1:02:03"]


def _log_bytes_said(tmp_path: Path, sizes: dict[str, int], reads: list[tuple[str, int]]
                    ) -> list[str]:
    """What `LogBytes` says of files of `sizes` (given in that order) read as `reads`
    (file, offset) go."""
    for name, size in sizes.items():
        (tmp_path / name).write_bytes(b"x" * size)
    p, lines = _progress(1.0, after_s=0.0)
    where = LogBytes(p, [str(tmp_path / name) for name in sizes])
    for name, offset in reads:
        where.at(str(tmp_path / name), offset)
    return [line.split(" ·")[0].removeprefix("gapwatch report: parsing the log ")
            for line in lines]


def test_log_bytes_counts_every_file_before_the_one_being_read(tmp_path: Path) -> None:
    said = _log_bytes_said(tmp_path, {"a.log": 300, "b.log": 100}, [("a.log", 300), ("b.log", 50)])
    assert said == ["75 % (0 MB)", "88 % (0 MB)"]


def test_log_bytes_count_up_in_the_order_the_files_are_read(tmp_path: Path) -> None:
    """Rotated files are read oldest first (`read_order`), whatever order they were given:
    the files read before the one being read count, not those listed before it."""
    said = _log_bytes_said(tmp_path, {"cuzk.log": 100, "cuzk.log.1": 300},
                           [("cuzk.log.1", 150), ("cuzk.log.1", 300), ("cuzk.log", 50)])
    assert said == ["38 % (0 MB)", "75 % (0 MB)", "88 % (0 MB)"]


def test_log_bytes_of_a_stream_say_no_fraction(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    p, lines = _progress(1.0, after_s=0.0)
    LogBytes(p, [str(fifo)]).at(str(fifo), 5_000_000)
    assert lines[0].startswith("gapwatch report: parsing the log (5 MB) ·")


def test_data_time_is_the_fraction_of_the_recording_s_span() -> None:
    p, lines = _progress(1.0, after_s=0.0)
    DataTime(p, (1_796_000_000.0, 1_796_003_600.0)).at(1_796_000_900.0)
    DataTime(p, None).at(1_796_000_900.0)
    assert lines[0].startswith("gapwatch report: finding gaps 25 % (data at 01:08:20) ·")
    assert lines[1].startswith("gapwatch report: finding gaps (data at 01:08:20) ·")


def test_progress_of_passes_every_record_and_looks_every_so_often(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress_mod, "EVERY_RECORDS", 10)
    seen: list[float] = []

    class Where(DataTime):
        def at(self, t_wall_s: float) -> None:
            seen.append(t_wall_s)

    records: list[object] = [float(i) for i in range(35)]
    records[19] = "no time"

    class R:
        def __init__(self, t: object) -> None:
            self.t_wall_s = t

    items = [R(t) for t in records]
    assert list(progress_of(items, Where(_progress(1.0)[0], None))) == items
    assert seen == [9.0, 29.0]  # the 20th has no usable time: no look then


def test_a_shown_line_is_rewritten_in_place_and_cleared_before_any_other_line(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")  # a CI's TERM may say dumb
    out = Terminal()
    console = Console(out)
    assert console.is_terminal()
    console.show("gapwatch report: finding gaps 10 %")
    console.show("gapwatch report: finding gaps 20 %\x1b]0;title\x07")
    console.say("gapwatch report: stopped")
    console.erase()  # nothing left to clear
    assert out.getvalue() == (
        "\rgapwatch report: finding gaps 10 %\x1b[K"
        "\rgapwatch report: finding gaps 20 %\\x1b]0;title\\x07\x1b[K"
        "\r\x1b[Kgapwatch report: stopped\n")


def test_a_shown_line_is_cut_to_the_terminal_s_width_in_cells_and_erased() -> None:
    """A StringIO has no size: 80 columns, one left for the cursor (a wrapped line would not be
    written over)."""
    for text, kept in (("x" * 500, "x" * 78), ("作" * 100, "作" * 39)):  # wide: 2 cells each
        out = Terminal()
        console = Console(out)
        console.show(text)
        console.erase()
        assert out.getvalue() == "\r" + kept + "…" + "\x1b[K" + "\r\x1b[K"


def test_a_file_or_a_dumb_terminal_gets_no_transient_line(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not Console(io.StringIO()).is_terminal()
    monkeypatch.setenv("TERM", "dumb")
    assert not Console(Terminal()).is_terminal()
    monkeypatch.setenv("TERM", "xterm-256color")
    assert Console(Terminal()).is_terminal()


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(lines))
    return path


HEADER = '{"type":"header"}\n'


def test_the_last_time_is_read_from_the_last_whole_line(tmp_path: Path) -> None:
    ok = _write(tmp_path / "a.jsonl", [
        HEADER, '{"type":"gpu","t_wall_s":1796000000.5,"gpu":0}\n',
        '{"type":"host","t_mono_ns":1,"t_wall_s":1796000100.0,"x":1}\n',
        '{"type":"gpu","t_wall_s":17960'])  # cut by kill -9
    assert last_wall_s(ok) == 1796000100.0


@pytest.mark.parametrize("tail", [
    '{"type":"gpu","t_wall_s":NaN}\n', '{"type":"gpu","t_wall_s":1e300}\n',
    '{"type":"gpu","t_wall_s":-5}\n', '{"type":"gpu","t_wall_s":"soon"}\n', "not json\n",
    "x" * 70_000 + "\n"])
def test_a_tail_without_a_usable_time_gives_none(tmp_path: Path, tail: str) -> None:
    assert last_wall_s(_write(tmp_path / "a.jsonl", [HEADER, tail])) is None


def test_a_gzip_recording_s_last_time_is_read_from_its_last_member(tmp_path: Path) -> None:
    """The recorder writes gzip members that inflate on their own: the last one is found from
    the end (a day's .gz, the README's way to record, had no percentage before)."""
    res = simulate("pageable", seed=4, duration_s=30.0, gpus=2)
    plain, gz = tmp_path / "r.jsonl", tmp_path / "r.jsonl.gz"
    write_recording(plain, res.header, res.records)
    write_recording(gz, res.header, res.records)
    assert gz.read_bytes().count(b"\x1f\x8b\x08") > 1  # several members
    assert last_wall_s(gz) == last_wall_s(plain) is not None
    cut = tmp_path / "cut.jsonl.gz"  # killed mid-write: the last member ends early
    cut.write_bytes(gz.read_bytes()[:-40])
    t = last_wall_s(cut)
    assert t is not None and t <= last_wall_s(plain)  # type: ignore[operator]


#: Hostile ends of a gzip recording, made when the test runs (a gzip header holds the time it
#: was made: the test ids must not).
HOSTILE_GZIP_ENDS: dict[str, Callable[[], bytes]] = {
    "member starts that never inflate": lambda: b"\x1f\x8b\x08" * 50_000,
    "a megabyte of noise": lambda: (b"\x1f\x8b" + bytes(range(256)) * 4000
                                    + b"\x1f\x8b\x08\x00" + b"\xff" * 100),
    "times no one can use": lambda: gzip.compress(b'{"t_wall_s":1e300}\n{"t_wall_s":NaN}\n'),
    "a bomb of 64 MiB of one byte": lambda: gzip.compress(b"\x00" * (64 << 20)),
    "sixty small bombs": lambda: gzip.compress(b"\x00" * (4 << 20)) * 60,
}


@pytest.mark.parametrize("end", list(HOSTILE_GZIP_ENDS))
def test_a_hostile_gzip_end_gives_no_time(
    tmp_path: Path, end: str
) -> None:
    path = tmp_path / "h.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"type":"header"}\n') + HOSTILE_GZIP_ENDS[end]())
    assert last_wall_s(path) is None


def test_a_stream_has_no_last_time(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    assert last_wall_s(fifo) is None  # never opened for a read that would wait
    assert last_wall_s(tmp_path / "missing.jsonl") is None


def test_a_set_s_span_ends_at_its_latest_segment(tmp_path: Path) -> None:
    folder = tmp_path / "set"
    folder.mkdir()
    _write(folder / "gw.000001.jsonl", [HEADER, '{"t_wall_s":1796000050.0}\n'])
    _write(folder / "gw.000002.jsonl", [HEADER, '{"t_wall_s":1796000090.0}\n'])
    assert data_span(folder, 1796000000.0) == (1796000000.0, 1796000090.0)
    assert data_span(folder, 1796000100.0) is None  # an end before the start says nothing


@pytest.fixture(scope="module")
def sim_with_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A minute of 3 simulated GPUs and the prover's log, made once a run (as a module
    fixture, again in each worker that drew one of these tests): read only."""
    return sim_with_log_once(tmp_path_factory, seed=5, duration_s=60.0, gpus=3)


@pytest.mark.usefixtures("no_stray_threads")  # forking beside a thread may hang the child
@pytest.mark.parametrize("workers", [1, 2])
def test_a_report_with_progress_says_each_step_and_reports_the_same_bytes(
    sim_with_log: tuple[Path, Path], workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress_mod, "EVERY_RECORDS", 256)
    monkeypatch.setattr(report_parallel, "_STOP_CHECK_LINES", 256)
    # Forked workers share the spool (the test starts with no thread left running: conftest).
    monkeypatch.setattr(report_parallel, "can_share_logs", lambda: True)
    path, log = sim_with_log
    p, lines = _progress(1.0, after_s=0.0, every_s=0.0)
    shown = build_report(path, Config(), [str(log)], workers=workers, progress=p)
    quiet = build_report(path, Config(), [str(log)], workers=workers)
    assert msgspec.json.encode(to_json(shown)) == msgspec.json.encode(to_json(quiet))
    steps = [line.removeprefix("gapwatch report: ").split(" ·")[0] for line in lines]
    assert steps[0].startswith("parsing the log 100 %")  # one read: the file is small
    detecting = [s for s in steps if s.startswith("finding gaps")]
    percents = [int(s.split()[2]) for s in detecting]
    assert len(percents) > 5 and percents == sorted(percents) and percents[-1] >= 95
    if workers > 1:  # then the workers' gaps are put together (forked: adopted, no pass)
        assert steps[steps.index(detecting[-1]) + 1:-1] == ["waiting for the other workers"]
    assert steps[-1] == "summing up"


def _on_a_terminal_then_in_a_file(
    command: ModuleType, run: Callable[[], object], monkeypatch: pytest.MonkeyPatch
) -> tuple[tuple[object, str], tuple[object, str]]:
    """`run()` with the command's stderr a terminal, then a file (its progress lines shown at
    once, the detection looked at every 256 records): what each run gave, and its stderr."""
    monkeypatch.setattr(progress_mod, "EVERY_RECORDS", 256)
    monkeypatch.setenv("TERM", "xterm-256color")  # a CI's TERM may say dumb
    monkeypatch.setattr(command, "Progress", functools.partial(Progress, after_s=0.0,
                                                                every_s=0.0))
    runs = []
    for stream in (Terminal(), io.StringIO()):
        monkeypatch.setattr(command, "STDERR", Console(stream))
        runs.append((run(), stream.getvalue()))
    return runs[0], runs[1]


def _stdout_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Callable[[], str]:
    def run() -> str:
        capsys.readouterr()
        assert main(argv) == 0
        return capsys.readouterr().out
    return run


def test_report_on_a_terminal_shows_progress_and_clears_it_before_the_report(
    sim_with_log: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    path, log = sim_with_log
    (shown, tty), (plain, file) = _on_a_terminal_then_in_a_file(
        report_command, _stdout_of(["report", str(path), "--log", str(log)], capsys),
        monkeypatch)
    assert shown == plain and str(shown).startswith("gapwatch report: ")
    assert "\rgapwatch report: parsing the log" in tty
    assert "\rgapwatch report: finding gaps" in tty
    assert tty.endswith("\r\x1b[K")  # nothing left on the line the report follows
    assert file == ""  # a file never gets a progress line


def test_export_on_a_terminal_follows_its_own_passes_and_writes_the_same_trace(
    sim_with_log: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gapwatch.commands import export as export_command

    path, log = sim_with_log
    out = tmp_path / "trace.json"

    def export() -> bytes:
        assert main(["export", str(path), "--log", str(log), "--out", str(out)]) == 0
        return out.read_bytes()

    (shown, tty), (plain, file) = _on_a_terminal_then_in_a_file(export_command, export,
                                                                 monkeypatch)
    assert shown == plain
    steps = [part.split(" ·")[0] for part in tty.split("\rgapwatch export: ")[1:]]
    assert "reading the samples for the trace" in " ".join(steps)
    assert steps[-1] == "writing the trace"
    assert tty.endswith("\r\x1b[K") and file == ""


def test_compare_on_a_terminal_says_which_side_it_reads_and_compares_the_same(
    sim_with_log: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    from gapwatch.commands import compare as compare_command

    path, log = sim_with_log
    argv = ["compare", str(path), str(path), "--before-log", str(log), "--after-log", str(log)]
    (shown, tty), (plain, file) = _on_a_terminal_then_in_a_file(
        compare_command, _stdout_of(argv, capsys), monkeypatch)
    assert shown == plain
    assert "\rgapwatch compare (BEFORE): parsing the log" in tty
    assert "\rgapwatch compare (AFTER): finding gaps" in tty
    assert tty.endswith("\r\x1b[K") and file == ""


def test_a_tail_of_small_bombs_inflates_no_more_than_one_budget_in_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import zlib

    from gapwatch.sources import recording

    inflated: list[int] = []
    real = zlib.decompressobj

    class Counted:
        def __init__(self, wbits: int) -> None:
            self._z = real(wbits)

        def decompress(self, data: bytes, max_length: int = 0) -> bytes:
            out = self._z.decompress(data, max_length)
            inflated.append(len(out))
            return out

    monkeypatch.setattr(zlib, "decompressobj", Counted)
    path = tmp_path / "bombs.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"type":"header"}\n')
                     + gzip.compress(b"\x00" * (4 << 20)) * 60)
    assert last_wall_s(path) is None
    # Without the budget each of the 60 would inflate its 4 MiB: 240 MiB for one progress line.
    assert sum(inflated) <= recording.GZIP_TAIL_OUT_BYTES and len(inflated) < 60
