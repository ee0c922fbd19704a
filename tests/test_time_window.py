"""`report --since/--until`: a part of a long recording, reported as if the recording had been
cut there (`gapwatch.sources.time_window`, `gapwatch.offline.log_window`), without reading the
rest: a plain file seeked, segments outside not opened, the log read around the window."""

from __future__ import annotations

import gzip
import io
import json
import math
import re
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from shared_files import made_once, sim_with_log_once
from sim_recordings import record_sim, recorded_once, report_of
from split_parse import two_processes

from gapwatch.base import gzip_stream
from gapwatch.cli import main
from gapwatch.commands.argtypes import joined_moments
from gapwatch.config import Config
from gapwatch.core import fmt
from gapwatch.logs import parse
from gapwatch.offline import (
    gap_spool,
    log_span,
    log_split,
    log_window,
    report,
    report_parallel,
    startup_lines,
)
from gapwatch.offline.report import ReportData, build_report, to_json
from gapwatch.sinks.recorder import write_recording
from gapwatch.sources import gzip_lines, recording, recording_set, time_window
from gapwatch.sources.files import data_end, header_of
from gapwatch.sources.time_window import TimeWindow, WindowError, moment, resolve, seek_plain

#: The split reports and parses below fork their workers as `gapwatch report` does, which they
#: do only with this process's main thread alone (tests/conftest.py, `no_stray_threads`).
pytestmark = pytest.mark.usefixtures("no_stray_threads")

START = 1_796_000_000.0  # 2026-11-30 00:53:20 UTC


@pytest.fixture(scope="module")
def sim_with_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """4 simulated GPUs for 4 min (a gap every ~2 s on each), and the prover's log."""
    return sim_with_log_once(tmp_path_factory, seed=11, duration_s=240.0, gpus=4)


@pytest.fixture
def small_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """The seek's steps and margins scaled to a 4-minute recording (a day's are MBs and
    minutes), so that the tests' files are seeked, not read whole."""
    monkeypatch.setattr(time_window, "COUNT_BYTES", 4096)
    monkeypatch.setattr(time_window, "LATE_S", 5.0)
    monkeypatch.setattr(recording_set, "LATE_S", 5.0)
    monkeypatch.setattr(log_span, "MARGIN_S", 10.0)
    monkeypatch.setattr(log_window, "MARGIN_S", 10.0)
    monkeypatch.setattr(log_window, "LATE_S", 5.0)


def _log_read_in_parts(monkeypatch: pytest.MonkeyPatch, warm_bytes: int) -> None:
    """`log_window`'s sizes scaled to the tests' 1.4 MB log, so that it is read in parts: its
    start, the `warm_bytes` before the window and the window (the parser keeping as many
    partitions as a warm-up that long sees, as `log_split`'s own tests scale them)."""
    monkeypatch.setattr(log_window, "MIN_WINDOW_BYTES", 1)
    monkeypatch.setattr(log_split, "STARTUP_BYTES", 16 << 10)
    monkeypatch.setattr(log_split, "WARM_BYTES", warm_bytes)
    monkeypatch.setattr(log_window, "CLOSE_BYTES", 8 << 10)
    monkeypatch.setattr(parse, "_PART_GPU_KEPT", 100)


def _gzip(data: bytes) -> bytes:
    """`data` as a gzip file, at the fastest level: the readers take any level alike, and the
    default level took ~0.1 CPU-s for each of the tests' recordings."""
    return gzip.compress(data, compresslevel=1)


def _doc(r: ReportData) -> dict[str, Any]:
    """The report's document without what names the input (the file, the window)."""
    doc: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(to_json(r)))
    del doc["file"], doc["window"]
    return doc


def _cut(src: Path, dest: Path, since_s: float, until_s: float) -> Path:
    """`src` as a recording that ran from `since_s` to `until_s`: its header (started then) and
    the records of those times."""
    header, *body = src.read_bytes().splitlines(keepends=True)
    head = msgspec.json.decode(header)
    head["started_wall_s"] = since_s
    kept = [line for line in body
            if since_s <= msgspec.json.decode(line)["t_wall_s"] < until_s]
    dest.write_bytes(msgspec.json.encode(head) + b"\n" + b"".join(kept))
    return dest


def _window_and_cut(path: Path, folder: Path, since: str, until: str
                    ) -> tuple[TimeWindow, Path]:
    """The window `since`..`until` names in `path`, and `path` cut there (`_cut`)."""
    w = _window(path, since, until)
    assert w.since_s is not None and w.until_s is not None
    return w, _cut(path, folder / "cut.jsonl", w.since_s, w.until_s)


def _window(path: Path, since: str, until: str) -> TimeWindow:
    h = header_of(path)
    w = resolve(moment(since), moment(until), h.started_wall_s, None)
    assert w is not None
    return w


def test_a_window_is_the_report_of_the_recording_cut_there(
    sim_with_log: tuple[Path, Path], tmp_path: Path, small_steps: None,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """A window's report is the cut recording's, but for the margin a whole report keeps
    of its log each side of its span (its PoSt, restarts and partitions: none here, as a
    window keeps none)."""
    monkeypatch.setattr(log_span, "MARGIN_S", 0.0)
    path, log = sim_with_log
    w, cut = _window_and_cut(path, tmp_path, "+60s", "+180s")
    assert w.since_s is not None and w.until_s is not None
    windowed = build_report(path, Config(), [str(log)], workers=1, window=w)
    whole_cut = build_report(cut, Config(), [str(log)], workers=1)
    # The cut recording's report says the log runs before it; a window leaves it out on
    # purpose, and says nothing of it.
    mine, theirs = _doc(windowed), _doc(whole_cut)
    assert mine.pop("problems") == []
    problems = theirs.pop("problems")
    assert [p.split(" line(s) before it")[0].rsplit(" ", 1)[1].isdigit()
            for p in problems if "left out of the prover events" not in p] == [True]
    assert mine == theirs
    assert len(windowed.gaps) > 100
    assert all(w.since_s <= g.start_s < w.until_s for g in windowed.gaps)
    assert to_json(windowed)["window"] == {"since_s": w.since_s, "until_s": w.until_s}


def _damaged(path: Path, folder: Path) -> tuple[Path, list[bytes], int]:
    """`path` with a bad line three quarters in: the file, its lines, the bad line's index."""
    lines = path.read_bytes().splitlines(keepends=True)
    at = len(lines) * 3 // 4
    lines.insert(at, b'{"type":"host","t_wall_s":"soon"}\n')
    damaged = folder / "damaged.jsonl"
    damaged.write_bytes(b"".join(lines))
    return damaged, lines, at


def test_the_seek_skips_the_lines_before_and_keeps_every_line_number(
    sim_with_log: tuple[Path, Path], tmp_path: Path, small_steps: None
) -> None:
    """A bad line after the window's start is named by its line in the file, though the
    reader started far into it."""
    damaged, lines, at = _damaged(sim_with_log[0], tmp_path)
    w = _window(damaged, "+150s", "+230s")
    with damaged.open("rb") as f:
        offset, skipped = seek_plain(f, 0, w.since_s or 0.0)
    assert offset > len(b"".join(lines)) // 3  # sought, not read from the start
    assert skipped == b"".join(lines)[:offset].count(b"\n")
    r = build_report(damaged, Config(), workers=1, window=w)
    assert r.counters["bad_records"] == 1
    assert r.problems[0].startswith(f"{damaged}:{at + 1}: bad record")


def test_a_line_that_lies_about_its_time_does_not_move_the_seek(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time_window, "COUNT_BYTES", 4096)
    lines = [b'{"type":"header"}\n']
    lines += [b'{"type":"gpu","t_wall_s":%d,"x":"%s"}\n' % (i, b"y" * 40) for i in range(20000)]
    for k in range(1, 20):  # planted through the file: each claims the far future
        lines[k * 1000] = b'{"type":"log","t_wall_s":9999999999.0}\n'
    f = io.BytesIO(b"".join(lines))
    offset, _ = seek_plain(f, 0, 15000.0 + time_window.LATE_S)
    first = f.getvalue()[offset:].split(b"\n", 1)[0]
    t = time_window.wall_of_text(first + b"\n")
    assert t is not None and 15000 - 1000 < t <= 15000


def test_a_split_window_reads_as_one_process(
    sim_with_log: tuple[Path, Path], small_steps: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, log = sim_with_log
    monkeypatch.setattr(report_parallel, "MIN_PARALLEL_BYTES", 1)
    monkeypatch.setattr(report_parallel, "can_share_logs", lambda: True)
    w = _window(path, "+100s", "+200s")
    # The one-process report, read once for both counts of workers (it was read again by
    # each parametrized case) under the CPU count the first case read it under.
    monkeypatch.setattr(report_parallel, "usable_cpus", lambda: 2)
    one = build_report(path, Config(), [str(log)], workers=1, window=w)
    for workers in (2, 3):
        monkeypatch.setattr(report_parallel, "usable_cpus", lambda n=workers: n)
        many = build_report(path, Config(), [str(log)], workers=workers, window=w)
        assert msgspec.json.encode(to_json(many)) == msgspec.json.encode(to_json(one)), workers
    assert len(one.gaps) > 50


def test_a_gzip_recording_and_a_folder_of_segments_give_the_plain_file_s_window(
    sim_with_log: tuple[Path, Path], tmp_path: Path, small_steps: None,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _log = sim_with_log
    gz = tmp_path / "sim.jsonl.gz"
    gz.write_bytes(_gzip(path.read_bytes()))
    folder = tmp_path / "set"
    folder.mkdir()
    header, *body = path.read_bytes().splitlines(keepends=True)
    head = msgspec.json.encode({**msgspec.json.decode(header), "set_id": "s1"}) + b"\n"
    size = len(body) // 6 + 1
    for k in range(6):
        (folder / f"gw.{k + 1:06d}.jsonl").write_bytes(head + b"".join(body[k * size:(k + 1) * size]))
    opened: list[str] = []
    read = recording.read_recording

    def counted(file: Path, *args: Any, **kw: Any) -> Any:
        opened.append(file.name)
        return read(file, *args, **kw)

    monkeypatch.setattr(recording_set, "read_recording", counted)
    w = _window(path, "+100s", "+140s")
    plain = _doc(build_report(path, Config(), workers=1, window=w))
    assert _doc(build_report(gz, Config(), workers=1, window=w)) == plain
    assert _doc(build_report(folder, Config(), workers=1, window=w)) == plain
    # 40 s of 4 minutes in six segments: those wholly before or after it are not opened (the
    # recording's log read around the window opens the window's own again).
    assert 1 <= len(set(opened)) <= 3 and "gw.000001.jsonl" not in opened
    assert "gw.000006.jsonl" not in opened


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """gzip inflated in pieces of a few KB of lines (a day's are ~1 MB), so that the tests'
    files are passed over piece by piece; what each `pass_pieces` returned, listed."""
    monkeypatch.setattr(gzip_stream, "CHUNK_BYTES", 512)
    passed: list[int] = []
    real = gzip_lines.GzipLines.pass_pieces

    def counted(self: gzip_lines.GzipLines, before: gzip_lines.PieceJudge) -> int:
        passed.append(real(self, before))
        return passed[-1]

    monkeypatch.setattr(gzip_lines.GzipLines, "pass_pieces", counted)
    return passed


def test_a_gzip_window_passes_over_the_pieces_before_it_and_keeps_every_line_number(
    sim_with_log: tuple[Path, Path], tmp_path: Path, small_steps: None, small_pieces: list[int]
) -> None:
    """The gzip reader inflates what lies before the window without splitting it into lines:
    the same report as the plain file's window, a bad line named by its line in the file."""
    plain, lines, at = _damaged(sim_with_log[0], tmp_path)
    gz = tmp_path / "damaged.jsonl.gz"
    gz.write_bytes(_gzip(plain.read_bytes()))
    w = _window(plain, "+150s", "+230s")
    from_gz = build_report(gz, Config(), workers=1, window=w)
    # Passed over, twice: the recording's log read around the window (from the margin before
    # it, `startup_lines.recorded_around`) and the window.
    assert len(small_pieces) == 2 and min(small_pieces) > len(lines) // 3
    assert max(small_pieces) < at  # not past the bad line, which lies inside the window
    from_plain = build_report(plain, Config(), workers=1, window=w)
    assert from_gz.problems == [p.replace(str(plain), str(gz)) for p in from_plain.problems]
    assert from_gz.problems[0].startswith(f"{gz}:{at + 1}: bad record")
    assert _doc(from_gz) | {"problems": []} == _doc(from_plain) | {"problems": []}


def test_lines_that_lie_about_their_time_do_not_make_a_gzip_window_pass_over_its_start(
    sim_with_log: tuple[Path, Path], tmp_path: Path, small_steps: None, small_pieces: list[int]
) -> None:
    """One line in ten claims the distant past, at the end of some pieces too: a piece is
    judged by the median of its last lines, which they cannot move."""
    path, _log = sim_with_log
    header, *body = path.read_bytes().splitlines(keepends=True)
    for k in range(5, len(body), 10):
        wall = time_window.wall_of_text(body[k])
        body[k] = body[k].replace(b'"t_wall_s":%r' % wall, b'"t_wall_s":1.0')
    gz = tmp_path / "lies.jsonl.gz"
    gz.write_bytes(_gzip(header + b"".join(body)))
    since_s = START + 150.0
    rec = recording.read_recording(
        gz, recording.Reading(window=TimeWindow(since_s, None, "--since +150s")))
    first = next(rec.records)
    assert small_pieces[0] > len(body) // 3  # passed over
    assert since_s <= getattr(first, "t_wall_s", 0.0) < since_s + 1.0
    truths = [time_window.wall_of_text(line) for line in body]
    assert rec.line_no == 1 + next(i + 1 for i, t in enumerate(truths)
                                   if t is not None and t >= since_s)


def test_a_piece_is_judged_by_the_median_of_its_last_lines_not_by_its_last_line() -> None:
    """A piece whose lines are in the window, its last line claiming the distant past, is not
    passed over; nor one whose last lines show no time at all."""
    before = time_window.pieces_before(15000.0 + time_window.LATE_S)
    lines = [b'{"type":"gpu","t_wall_s":%d.0}\n' % t for t in range(14990, 15030)]
    liar = b'{"type":"log","t_wall_s":1.0}\n'
    for piece in (b"".join(lines[:-1]) + liar, b"".join(lines), b"".join(lines[-10:]) + liar * 5):
        assert not before(piece, len(piece))
    early = b"".join(b'{"type":"gpu","t_wall_s":%d.0}\n' % t for t in range(100, 140))
    assert before(early, len(early))
    assert before(early + b'{"type":"gpu","t_wa', len(early))  # a line begun: not judged
    assert not before(b'{"type":"note"}\n' * 80, 16 * 80)


def test_a_gzip_file_cut_before_the_window_says_it_ends_early(
    sim_with_log: tuple[Path, Path], tmp_path: Path, small_steps: None, small_pieces: list[int]
) -> None:
    path, _log = sim_with_log
    whole = _gzip(path.read_bytes())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole[:len(whole) // 2])  # a kill -9 halfway
    r = build_report(cut, Config(), workers=1, window=_window(path, "+200s", "+230s"))
    assert r.counters["truncated"] == 1 and not r.gaps
    assert small_pieces and "file ends early" in r.problems[-1]


def test_the_log_read_around_the_window_gives_the_whole_parse_s_report(
    sim_with_log: tuple[Path, Path], small_steps: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, log = sim_with_log
    w = _window(path, "+150s", "+200s")
    whole = build_report(path, Config(), [str(log)], workers=1, window=w)
    assert "log_window_skipped_bytes" not in whole.counters
    _log_read_in_parts(monkeypatch, 256 << 10)
    part = build_report(path, Config(), [str(log)], workers=1, window=w)
    skipped = part.counters.pop("log_window_skipped_bytes")
    assert skipped > log.stat().st_size // 4
    for r in (part, whole):  # the parser's own counts cover the lines it read
        for name in [k for k in r.counters if k.startswith("log_")]:
            del r.counters[name]
    assert _doc(part) == _doc(whole)
    assert sum(len(g.log_events) for g in part.gaps) > 100


def test_a_log_whose_lines_show_no_time_is_read_through_the_window_not_cut_before_it(
    sim_with_log: tuple[Path, Path], tmp_path: Path, small_steps: None,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """cuzk's stderr alone (TIMELINE and CUZK_ lines: no wall time of their own) after its
    start: the search for the window's end took a probe without a time as later, the end
    fell to the file's first MB and the window had no partition ("no line within the
    window"). Read on instead, it gives the whole parse's report."""
    path, log = sim_with_log
    lines = log.read_text().splitlines(keepends=True)
    started = next(i for i, line in enumerate(lines) if "starting cuzk engine" in line)
    stderr = tmp_path / "stderr.log"
    stderr.write_text("".join(lines[:started + 1] + [
        line for line in lines[started + 1:] if not line[:1].isdigit()]))
    w = _window(path, "+150s", "+200s")
    whole = build_report(path, Config(), [str(stderr)], workers=1, window=w)
    _log_read_in_parts(monkeypatch, 64 << 10)
    part = build_report(path, Config(), [str(stderr)], workers=1, window=w)
    assert part.partitions is not None and len(part.partitions.partitions) > 20
    for r in (part, whole):  # the parser's own counts cover the lines it read
        for name in [k for k in r.counters if k.startswith("log_")]:
            del r.counters[name]
    assert _doc(part) == _doc(whole)


@pytest.fixture(scope="module")
def pageable_recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`gapwatch record` of the simulated pageable prover for a minute: its log lines and
    `/status` snapshots inside the recording (`record --log`), every partition unpinned.
    Made once a run, not in each worker that draws one of its three tests: read only."""
    return recorded_once(tmp_path_factory, "pageable", 60.0)


@pytest.fixture
def post_recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`gapwatch record` of the simulated PoSt prover for 130 s (cuzk killed at 100 s and
    back), made once a run for the nine tests that read it (`recorded_once`): read only."""
    return recorded_once(tmp_path_factory, "post", 130.0)


def _table(report_text: str) -> tuple[int, list[str]]:
    """The partition table of a text report: the count its head line says, and its rows."""
    head, *rest = report_text.split("\nPartitions (", 1)[1].split("\n\n", 1)[0].splitlines()
    return int(head.split(": ", 1)[1].split(",", 1)[0]), rest[1:]


def _gpu_moments(item: dict[str, Any]) -> list[float]:
    """A JSON row's GPU work as the table places it (`PartitionTiming.gpu_moments`)."""
    return [t for t in (item["gpu_start_s"], item["gpu_end_s"], item["states_seen"].get("gpu"))
            if t is not None]


def test_a_windows_partitions_synthesised_before_it_say_their_pinning_is_not_known(
    pageable_recorded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every partition of the recording was synthesised unpinned ("no" in the whole report).
    A window's partition whose synthesis ended before the log read around it (the margin
    scaled to 1 s here) said "yes" (no `is_pinned=false` line read): its pinning, "-"."""
    monkeypatch.setattr(log_span, "MARGIN_S", 1.0)
    _count, whole = _table(report_of(pageable_recorded, "--all"))
    # "no (first wave)", "no (pool failed)"
    assert {row.split()[-1] for row in whole} <= {"no", "wave)", "failed)"}
    text = report_of(pageable_recorded, "--since", "+25s", "--until", "+45s")
    count, rows = _table(text)
    pinned = [row.split()[-1] for row in rows]
    assert "yes" not in pinned and "-" in pinned
    assert count == len(rows) > 5  # the head line counts the rows shown
    # and says how many it does not know: "0 synthesised unpinned" alone read as all pinned
    assert f", {pinned.count('-')} pinning not known (no is_pinned line read)" in text
    items = json.loads(report_of(pageable_recorded, "--json", "--since", "+25s", "--until",
                                 "+45s"))["partitions"]["items"]
    assert False not in {p["unpinned"] for p in items} and None in {p["unpinned"] for p in items}


def test_a_windows_partition_table_holds_the_partitions_on_a_gpu_in_it(
    pageable_recorded: Path, sim_with_log: tuple[Path, Path]
) -> None:
    """The table of a window held the partitions of the prover's `/status` polls in it, done
    long before (20 of 41 rows), and with `--log` those of the 5 minutes read each side of it
    (for the gaps' evidence): now the partitions whose GPU work (GPU start to end, lock
    region, a poll that saw it on a GPU) overlaps the window, and the head line counts them."""
    start = header_of(pageable_recorded).started_wall_s
    doc = json.loads(report_of(pageable_recorded, "--json", "--since", "+25s", "--until",
                               "+45s"))
    items = doc["partitions"]["items"]
    assert doc["partitions"]["count"] == len(items) > 5
    for p in items:
        moments = _gpu_moments(p)
        assert moments and min(moments) <= start + 45 and max(moments) >= start + 25, p
    path, log = sim_with_log
    start = header_of(path).started_wall_s
    doc = json.loads(report_of(path, "--json", "--log", str(log), "--since", "+100s",
                               "--until", "+130s"))
    items = doc["partitions"]["items"]
    assert doc["partitions"]["count"] == len(items) > 10
    last = max(s["t_wall_s"] for s in _samples(path) if s["t_wall_s"] < start + 130)
    for p in items:
        moments = _gpu_moments(p)
        assert moments and min(moments) <= last and max(moments) >= start + 100, p


def _samples(path: Path) -> Iterator[dict[str, Any]]:
    """The recording's GPU samples, decoded."""
    for line in path.read_bytes().splitlines()[1:]:
        r = msgspec.json.decode(line)
        if r.get("type") == "gpu":
            yield r


def test_a_late_post_begun_before_the_window_says_the_phases_it_did_not_read(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The simulated PoSt prover's second WinningPoSt is late (35.0 s: 33.1 s of synthesis,
    its SRS loaded from disk). A window from after its synthesis began (and after the log
    read around it: the margin scaled to 1 s here) showed `queue - synth - GPU wait 0.2` and
    only `waited for a GPU worker behind: ...` under it, as if 0.2 s of GPU wait were why;
    its row now says what it did not read, and where. "What to change" said `no setting
    claimed: its longest phase was gpu` (`"cause": "gpu"`): the longest of the phases read,
    1.7 s beside 33.1 s not read. Now it names no phase: its cause is not known from the log
    read, and --since earlier reads it."""
    monkeypatch.setattr(log_span, "MARGIN_S", 1.0)
    path = recorded_once(tmp_path_factory, "post", 100.0)  # test_cuzk_events_outputs' too
    whole = report_of(path)
    row = next(line for line in whole.splitlines() if "winpost-1000-1a2b3c02" in line)
    assert row.split()[3:6] == ["35.0", "0.0", "33.1"]  # total, queue, synthesis
    assert "not read" not in whole  # every phase read: nothing said
    text = report_of(path, "--since", "+60s", "--until", "+95s")
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "winpost-1000-1a2b3c02" in line)
    assert lines[at].split()[3:6] == ["35.0", "-", "-"]
    assert lines[at + 1].startswith("      not read: its queue and synthesis (33.1 s of its "
                                    "35.0 s): it began before the window, at ")
    assert lines[at + 1].endswith("(by its total); --since earlier reads them")
    advice = text.split("\nWhat to change", 1)[1]
    assert ("  PoSt: 1 WinningPoSt late, the longest 35.0 s of its 30 s deadline: its cause not "
            "known from the log read: its queue and synthesis not read (33.1 s of its 35.0 s, "
            "longer than any phase read), so no phase, nor a setting, is named; a log read from "
            "before it began (--since earlier, for a window) says them") in advice
    assert "longest phase was" not in advice
    [said] = json.loads(report_of(path, "--since", "+60s", "--until", "+95s",
                                  "--json"))["proof_advice"]
    assert (said["verdict"], said["cause"], said["setting"]) == ("late", "phases_not_read", None)


def test_a_window_that_ends_in_an_idle_stretch_says_so_under_its_gpu(
    post_recorded: Path
) -> None:
    """cuzk goes down 100 s into the simulated PoSt prover's run (a restart: the GPU idles
    ~16 s). A window ending 12 s into it said "busy 100 %, no gaps" and nothing more: the idle
    stretch its end cuts is no gap of it (no busy reading bounds it there, as at a
    recording's end), and the busy share is of the working span; the GPU's line now says the
    gap its end cut, its kind and start. The whole report has no such line."""
    path = post_recorded
    text = report_of(path, "--since", "+60s", "--until", "+112s")
    gpu = text.split("GPUs (busy", 1)[1].split("\n\n", 1)[0].splitlines()
    assert "no gaps" in gpu[1]
    assert re.fullmatch(r" {9}the \w+ gap from \d\d:\d\d:\d\d\.\d{3} still open at the "
                        r"window's end, idle [\d.]+s so far: cut there, no gap of it \(as at a "
                        r"recording's end\); --until later reads it", gpu[2]), gpu[2]
    assert "still open at the window's end" not in report_of(path)


def _gpu_line_under(report_text: str) -> str:
    """The line under GPU 0's in a text report (the cut end's, where one is said)."""
    return report_text.split("GPUs (busy", 1)[1].split("\n\n", 1)[0].splitlines()[2].strip()


def _replay_said(path: Path, *window: str) -> list[str]:
    """What `replay --headless` over `window` closes with of each GPU (`GPU0: ...`)."""
    rc, _, err = _run("replay", str(path), "--headless", *window)
    assert rc == 0, err
    return [line.removeprefix("gapwatch replay: GPU0: ") for line in err.splitlines()
            if line.startswith("gapwatch replay: GPU0: ")]


def test_a_replay_of_a_window_that_ends_in_an_idle_stretch_says_it_as_its_report_does(
    post_recorded: Path
) -> None:
    """`replay --headless --until` before the recording's end said nothing of the idle
    stretch the window's end cuts (12 s into cuzk's restart), where `report` says it under
    the GPU: the replay read every cut end as the recording's own."""
    window = ("--since", "+60s", "--until", "+112s")
    said = _gpu_line_under(report_of(post_recorded, *window))
    assert said.endswith("--until later reads it")
    assert _replay_said(post_recorded, *window) == [said]
    assert _replay_said(post_recorded) == []


def test_a_snapshots_replay_cut_earlier_by_until_says_the_windows_words_not_the_snapshots(
    post_recorded: Path, tmp_path: Path
) -> None:
    """A snapshot's recording replayed with a `--until` before its data ends said of the gap
    open at the window's end that it was "still open when it was taken": the window, not the
    snapshot, cut it there, and `report` of the same window says so."""
    read = recording.read_recording(post_recorded)
    snapshot = tmp_path / "snapshot.jsonl.gz"
    write_recording(snapshot, msgspec.structs.replace(
        read.header, snapshot_wall_s=data_end(post_recorded)), list(read.records))
    assert "a snapshot's recording" in report_of(snapshot)
    window = ("--since", "+60s", "--until", "+112s")
    said = _gpu_line_under(report_of(snapshot, *window))
    assert said.endswith("--until later reads it")
    assert _replay_said(snapshot, *window) == [said]


def test_a_window_begun_mid_run_marks_no_first_wave_it_cannot_tell(
    pageable_recorded: Path
) -> None:
    """A first wave is the partitions synthesised before their circuit type's first synthesis
    of the run ended. A window gets the daemon's start line (its settings) but not the log
    between it and the window: its first synthesis started before any of its own ended was
    marked "no (first wave)" half a minute into the run. Now none is marked in a window that
    did not read its run from the start; the whole report still marks the run's first."""
    whole = json.loads(report_of(pageable_recorded, "--json"))["partitions"]["items"]
    assert any(p["first_wave"] for p in whole)
    start = header_of(pageable_recorded).started_wall_s
    synth = sorted((r["t_wall_s"], r["name"]) for r in _records(pageable_recorded)
                   if r.get("type") == "log" and r.get("name") in ("SYNTH_START", "SYNTH_END")
                   and r["t_wall_s"] > start + 10)
    # Just before a synthesis start that no synthesis end comes before in the window.
    t = next(t for (t0, _), (t, name) in zip(synth, synth[1:], strict=False)
             if name == "SYNTH_START" and t - t0 > 0.002)
    since = datetime.fromtimestamp(t - 0.001, UTC).isoformat()
    text = report_of(pageable_recorded, "--since", since, "--until", "+59s")
    assert "(first wave)" not in text
    assert len(_table(text)[1]) > 5


def _records(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_bytes().splitlines()[1:]:
        yield msgspec.json.decode(line)


def test_a_windows_prover_events_are_those_said_in_it_with_its_log_read_around_it(
    post_recorded: Path, tmp_path: Path
) -> None:
    """A `--log` is read 5 minutes each side of a window (the gaps' evidence, the PoSt in
    flight at its start): its PoSt, restarts and errors of those minutes were listed as the
    window's. Now the window lists what was said in it, as a window of the recording with its
    log inside does, and the PoSt begun before it has its phases (the lines before it are
    context)."""
    path = post_recorded
    log = tmp_path / "cuzk.log"
    log.write_text("".join(f"{r['raw']}\n" for r in _records(path)
                           if r.get("type") == "log" and r.get("raw")))
    whole = json.loads(report_of(path, "--json", "--log", str(log)))["prover_events"]
    assert {e["job_id"] for e in whole["proof"]} == {"winpost-1000-1a2b3c01",
                                                     "winpost-1000-1a2b3c02"}
    assert whole["restart"]
    window = ("--since", "+60s", "--until", "+95s")
    doc = json.loads(report_of(path, "--json", "--log", str(log), *window))["prover_events"]
    recorded = json.loads(report_of(path, "--json", *window))["prover_events"]
    assert {e["job_id"] for e in doc["proof"]} == {"winpost-1000-1a2b3c02"}  # late, then done
    start = header_of(path).started_wall_s
    assert doc["restart"] == [] and len(doc["error"]) == len(recorded["error"]) > 0
    assert all(start + 60 <= e["t_wall_s"] < start + 95 for e in doc["error"])
    late = doc["proof"][-1]["proof"]
    assert (round(late["synth_s"], 1), late["setting"] is not None) == (33.1, True)


def test_moments_as_an_operator_writes_them() -> None:
    assert moment("2026-11-30T01:00:00Z").seconds == START + 400
    assert moment("2026-11-30 01:00").seconds == START + 400  # no zone: UTC
    assert moment("2026-11-30T03:00+02:00").seconds == START + 400
    # Started at 00:53:20: a time of day is the first at or after it.
    assert resolve(moment("00:10"), None, START, None) == TimeWindow(
        START - 2600 + 86400, None, "--since 00:10")  # the next day's
    assert resolve(None, moment("23:50:30"), START, None) == TimeWindow(
        None, START + 82630, "--until 23:50:30")  # the same day's
    back = resolve(moment("-1h"), None, START, START + 86400)
    assert back == TimeWindow(START + 82800, None, "--since -1h")
    assert resolve(moment("+2h"), None, START, None) == TimeWindow(START + 7200, None,
                                                                   "--since +2h")
    assert resolve(None, None, START, None) is None
    for bad in ("yesterday", "25:00", "+soon", "2026-13-01"):
        with pytest.raises(ValueError):
            moment(bad)


def test_a_time_of_day_just_before_the_recordings_start_is_that_days_not_the_next() -> None:
    """A recording from 00:53:20 to 00:54:50: `--since 00:53 --until 00:54` is the obvious
    window, not the next day's 00:53 (refused: "ends before it starts"); `--since 00:53`
    alone starts at the recording's start. A time of day after the recording's end is that
    day's too (`--until 00:56` keeps it whole, `--since 00:56` holds none of it and says the
    date it took); one within the recording is unchanged."""
    end = START + 90
    assert resolve(moment("00:53"), moment("00:54"), START, end) == TimeWindow(
        START - 20, START + 40, "--since 00:53 --until 00:54")
    assert resolve(moment("00:53:00"), None, START, end) == TimeWindow(
        START - 20, None, "--since 00:53:00")
    assert resolve(None, moment("00:56"), START, end) == TimeWindow(
        None, START + 160, "--until 00:56")
    assert resolve(moment("00:54:00"), None, START, end) == TimeWindow(
        START + 40, None, "--since 00:54:00")
    with pytest.raises(WindowError, match=r"window 2026-11-30 00:56:00 to the end UTC "
                                          r"\(--since 00:56\) holds none of the recording"):
        resolve(moment("00:56"), None, START, end)
    with pytest.raises(WindowError, match=r"window the start to 2026-11-30 00:52:00 UTC"):
        resolve(None, moment("00:52"), START, end)
    # A recording of two days: the first occurrence within it, as before.
    assert resolve(moment("00:10"), None, START, START + 2 * 86400) == TimeWindow(
        START - 2600 + 86400, None, "--since 00:10")


def test_compare_at_takes_a_time_of_day_as_report_since_does() -> None:
    """`compare --at` resolves its moment by the one rule (`time_window._time_of_day`): 00:54
    of a recording from 00:53:20 to 00:54:50 is that day's, and 00:53 is before it."""
    end = START + 90
    before, after = time_window.split_at(moment("00:54"), None, START, end)
    assert before.until_s == after.since_s == START + 40
    with pytest.raises(WindowError, match=r"BEFORE: the window the start to 2026-11-30 "
                                          r"00:53:00 UTC \(--at 00:53\) holds none"):
        time_window.split_at(moment("00:53"), None, START, end)


def test_since_a_time_of_day_before_the_first_second_on_the_command_line(
    sim_with_log: tuple[Path, Path], tmp_path: Path
) -> None:
    """report, export and replay take `--since HH:MM:SS` a few seconds before the recording's
    first second as that day's: the window starts at the recording's start."""
    from datetime import UTC, datetime

    path, _log = sim_with_log
    start = header_of(path).started_wall_s

    def clock(t: float) -> str:
        return datetime.fromtimestamp(t, UTC).strftime("%H:%M:%S")

    since, until = clock(start - 5), clock(start + 60)
    rc, out, err = _run("report", str(path), "--since", since, "--until", until)
    assert rc == 0, err
    day = datetime.fromtimestamp(start, UTC).strftime("%Y-%m-%d")
    assert f"only the window {day} {since} to {until} UTC" in out
    rc, _, err = _run("export", str(path), "--format", "csv", "--out", str(tmp_path / "w.csv"),
                      "--since", since, "--until", until)
    assert rc == 0, err
    rc, _, err = _run("replay", str(path), "--headless", "--since", since, "--until", until)
    assert rc == 0, err


def test_windows_that_name_nothing_are_refused_in_one_line() -> None:
    with pytest.raises(WindowError, match="ends before it starts"):
        resolve(moment("+2h"), moment("+1h"), START, START + 86400)
    with pytest.raises(WindowError, match="holds none of the recording"):
        resolve(moment("+2d"), None, START, START + 86400)
    with pytest.raises(WindowError, match="recording's end, which cannot be read"):
        resolve(moment("-1h"), None, START, None)
    # A header's start that names no date: said, not a traceback.
    with pytest.raises(WindowError, match="is no date"):
        resolve(moment("14:00"), None, 1e300, None)
    assert "1e+300 s" in TimeWindow(1e300, None, "--since +1s").describe()


def test_a_moment_back_from_the_end_is_not_taken_for_an_option() -> None:
    assert joined_moments(["report", "f", "--since", "-1h", "--until", "-10m", "--json"]) == [
        "report", "f", "--since=-1h", "--until=-10m", "--json"]
    assert joined_moments(["report", "--log", "-", "f"]) == ["report", "--log", "-", "f"]


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def test_report_since_until_on_the_command_line(sim_with_log: tuple[Path, Path]) -> None:
    path, _log = sim_with_log
    rc, out, _ = _run("report", str(path), "--since", "-90s", "--until", "-30s")
    assert rc == 0
    assert "only the window 2026-" in out and "(--since -90s --until -30s)" in out
    rc, out, err = _run("report", str(path), "--since", "+1h")
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "holds none of the recording" in err
    with pytest.raises(SystemExit) as refused:  # argparse's own refusal, naming the flag
        _run("report", str(path), "--since", "noon")
    assert refused.value.code == 2


def test_export_of_a_window_holds_only_its_samples_and_log_lines(
    sim_with_log: tuple[Path, Path], tmp_path: Path
) -> None:
    """A day's Perfetto trace is too large for the UI; an hour of it is not."""
    import csv
    import json

    path, log = sim_with_log
    start = header_of(path).started_wall_s
    csv_out, trace_out = tmp_path / "w.csv", tmp_path / "w.trace.json"
    assert _run("export", str(path), "--format", "csv", "--out", str(csv_out),
                "--since", "+100s", "--until", "+130s")[0] == 0
    whole_out = tmp_path / "whole.csv"
    assert _run("export", str(path), "--format", "csv", "--out", str(whole_out))[0] == 0

    def rows(p: Path) -> list[dict[str, str]]:
        with p.open() as f:
            return list(csv.DictReader(f))

    inside = [r for r in rows(whole_out) if start + 100 <= float(r["timestamp_s"]) < start + 130]
    assert rows(csv_out) == inside and len(inside) > 1000
    assert _run("export", str(path), "--log", str(log), "--out", str(trace_out),
                "--since", "+100s", "--until", "+130s")[0] == 0
    events = json.loads(trace_out.read_text())["traceEvents"]
    origin = json.loads(trace_out.read_text())["otherData"]["origin_unix_s"]
    # The log's warnings, synthesis and GPU phases are drawn (the log was read around the
    # window), none from outside it.
    assert {"warning", "synthesis", "gpu"} <= {e.get("cat") for e in events}
    times = [origin + e["ts"] / 1e6 for e in events if "ts" in e and e.get("ph") != "M"]
    assert start + 100 - 1 <= min(times) and max(times) < start + 130 + 1
    rc, _, err = _run("export", str(path), "--out", str(tmp_path / "x.json"), "--since", "+1h")
    assert rc == 2 and "holds none" in err and not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("scan", [7, 16, 1 << 20])
def test_the_daemons_last_start_is_found_across_the_chunks_it_is_read_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scan: int
) -> None:
    monkeypatch.setattr(log_split, "SCAN_BYTES", scan)
    start = "2026-11-30T00:00:00Z  INFO cuzk_core::engine: starting cuzk engine x=1\n"
    lines = ["a line\n"] * 5 + [start] + ["other\n"] * 3 + [start] + ["after\n"] * 4
    log = tmp_path / "cuzk.log"
    log.write_text("".join(lines))
    second = len("".join(lines[:9]))
    first = len("".join(lines[:5]))
    size = log.stat().st_size
    assert log_split.last_restart(str(log), size) == second
    assert log_split.last_restart(str(log), second + 30) == first  # not whole before it
    assert log_split.last_restart(str(log), first + 10) is None
    assert log_split.last_restart(str(log), 0) is None


@pytest.fixture(scope="module")
def sim_log_inside(sim_with_log: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
                   ) -> Path:
    """The simulated recording with its log's events inside, as `record --log` writes them."""
    from parsed_logs import parse_log_files

    from gapwatch.logs.files import merge_by_time
    from gapwatch.sinks.recorder import write_recording
    from gapwatch.sources.files import read_any

    path, log = sim_with_log

    def make(folder: Path) -> None:
        events, _ = parse_log_files([str(log)], Config())
        rec = read_any(path)
        write_recording(folder / "logged.jsonl", rec.header, merge_by_time(rec.records, events))

    # Made once per run, not in each worker that draws a test of this module: read only.
    return made_once(tmp_path_factory, "window-log-inside", make) / "logged.jsonl"


#: The settings lines cuzk logs before its engine's start line (cuzk-daemon main.rs:111, then
#: `Engine::start`: engine.rs:1198, 1219, 1244), as the simulator writes them.
STARTUP_BEFORE_ENGINE = ["rayon global thread pool configured", "memory budget initialized",
                         "CUDA pinned memory pool initialized", "starting cuzk engine"]


def test_a_window_of_a_recording_with_its_log_inside_keeps_the_daemons_startup_lines(
    sim_log_inside: Path, small_steps: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settings cuzk logs once as it starts are before any window after it: read back
    from the recording (a byte search for its start), fed first, as a `--log` file's are."""
    from gapwatch.offline.compare import read_side

    monkeypatch.setattr(startup_lines, "PAST_BYTES", 16 << 10)
    w = _window(sim_log_inside, "+120s", "+200s")
    assert w.since_s is not None
    startup = startup_lines.recorded_startup(sim_log_inside, w.since_s)
    # cuzk says its threads, memory budget and pinned pool just before its start line: kept.
    assert [e.name for e in startup][:4] == STARTUP_BEFORE_ENGINE
    assert all(log_span.is_startup(e) and e.t_wall_s < w.since_s for e in startup)
    whole = read_side("W", sim_log_inside, Config(), [])
    part = read_side("P", sim_log_inside, Config(), [], window=w)
    assert part.settings.values == whole.settings.values
    assert part.settings.values.get("[pipeline] enabled") == "true"


@pytest.fixture(scope="module")
def short_sim_with_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """4 simulated GPUs for 90 s and the prover's log (test_report_parallel's and
    test_offline_logs' too: made once a run)."""
    return sim_with_log_once(tmp_path_factory, seed=5, duration_s=90.0, gpus=4)


def test_lines_that_only_mention_the_daemons_start_cost_one_line_each_not_a_mb(
    short_sim_with_log: tuple[Path, Path], tmp_path: Path, small_steps: None,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """The byte search back for the daemon's start finds its words in any line (`not starting
    cuzk engine yet`): each such line had a MB of lines decoded around it (3,000 of them:
    50 s). Only the real start's lines are read around. (90 s of log, not the 4 minutes:
    ~500 such lines before the window, where one more read around fails.)"""
    from parsed_logs import parse_log_files

    from gapwatch.logs.files import merge_by_time
    from gapwatch.sinks.recorder import write_recording
    from gapwatch.sources.files import read_any

    path, log = short_sim_with_log
    lines = log.read_text().splitlines(keepends=True)
    started = next(i for i, line in enumerate(lines) if "starting cuzk engine" in line)
    noisy = tmp_path / "noisy.log"
    with noisy.open("w") as out:
        for i, line in enumerate(lines):
            out.write(line)
            if i > started and line[:1].isdigit() and i % 10 == 0:
                out.write(line.split(" ", 1)[0]
                          + "  WARN cuzk_core::engine: not starting cuzk engine yet\n")
    events, _ = parse_log_files([str(noisy)], Config())
    rec = read_any(path)
    logged = tmp_path / "logged.jsonl"
    write_recording(logged, rec.header, merge_by_time(rec.records, events))
    monkeypatch.setattr(startup_lines, "PAST_BYTES", 16 << 10)
    read_around: list[int] = []
    lines_around = startup_lines._lines_around

    def counted(file: Path, at: int) -> Iterator[bytes]:
        read_around.append(at)
        return lines_around(file, at)

    monkeypatch.setattr(startup_lines, "_lines_around", counted)
    w = _window(logged, "+70s", "+85s")
    assert w.since_s is not None
    startup = startup_lines.recorded_startup(logged, w.since_s)
    assert sum("not starting" in e.name and e.t_wall_s < w.since_s for e in events) > 50
    assert [e.name for e in startup][:4] == STARTUP_BEFORE_ENGINE
    assert len(read_around) == 1


def test_a_gzip_recording_with_its_log_inside_gives_the_plain_files_startup_lines(
    sim_log_inside: Path, tmp_path: Path, small_steps: None, small_pieces: list[int],
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gzip file cannot be read backwards: it is inflated from its start to the window, its
    pieces searched for the daemon's start (the lines around it cut across pieces here)."""
    monkeypatch.setattr(startup_lines, "PAST_BYTES", 16 << 10)
    gz = tmp_path / "logged.jsonl.gz"
    gz.write_bytes(_gzip(sim_log_inside.read_bytes()))
    w = _window(sim_log_inside, "+120s", "+200s")
    assert w.since_s is not None
    plain = startup_lines.recorded_startup(sim_log_inside, w.since_s)
    assert len(plain) >= 5 and startup_lines.recorded_startup(gz, w.since_s) == plain
    from_gz = build_report(gz, Config(), workers=1, window=w)
    from_plain = build_report(sim_log_inside, Config(), workers=1, window=w)
    assert _doc(from_gz) == _doc(from_plain)


def test_a_gzip_recording_without_log_events_is_not_inflated_to_the_window(
    sim_with_log: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _log = sim_with_log
    gz = tmp_path / "sim.jsonl.gz"
    gz.write_bytes(_gzip(path.read_bytes()))
    monkeypatch.setattr(startup_lines, "LOG_PROBE_BYTES", 64 << 10)
    monkeypatch.setattr(gzip_stream, "CHUNK_BYTES", 512)
    pieces: list[int] = []
    real = gzip_stream.inflated

    def counted(raw: Any) -> Any:
        for piece in real(raw):
            pieces.append(len(piece))
            yield piece

    monkeypatch.setattr(startup_lines, "inflated", counted)
    assert startup_lines.recorded_startup(gz, START + 200) == []
    assert sum(pieces) < (64 << 10) + max(pieces) < path.stat().st_size // 4


def test_a_line_longer_than_any_record_in_a_gzip_recording_is_no_start_and_no_stop(
    sim_log_inside: Path, tmp_path: Path, small_steps: None, small_pieces: list[int],
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """A planted line longer than any record, naming the daemon's start and an early time,
    before the real start: passed over, not held whole, not taken for a start."""
    monkeypatch.setattr(startup_lines, "MAX_LINE_BYTES", 4096)
    header, *body = sim_log_inside.read_bytes().splitlines(keepends=True)
    planted = (b'{"type":"log","t_wall_s":1.0,"name":"starting cuzk engine","raw":"'
               + b"x" * 20_000 + b'"}\n')
    gz = tmp_path / "planted.jsonl.gz"
    gz.write_bytes(_gzip(header + planted + b"".join(body)))
    w = _window(sim_log_inside, "+120s", "+200s")
    assert w.since_s is not None
    found = startup_lines.recorded_startup(gz, w.since_s)
    assert found == startup_lines.recorded_startup(sim_log_inside, w.since_s)
    assert found and found[0].t_wall_s >= START


def test_the_last_start_before_the_window_is_the_one_kept_not_a_later_one() -> None:
    def start(t: float) -> bytes:
        return (b'{"type":"log","t_wall_s":%r,"time_source":"log","kind":"tracing",'
                b'"name":"starting cuzk engine","raw":"x"}\n' % t)

    region = b'{"type":"gpu","t_wall_s":1.0}\n' + start(5.0) + start(7.0) + start(12.0)
    at = startup_lines._last_start_before(region, since_s=10.0)
    assert at is not None and region[at:].startswith(start(7.0))
    assert startup_lines._last_start_before(region, since_s=5.0) is None


def test_a_split_window_of_a_recording_with_its_log_inside_reads_as_one_process(
    sim_log_inside: Path, small_steps: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log read around the window (`startup_lines.recorded_around`) on disk in runs of
    64 events, read by both workers, each at its own offsets: the one-process report."""
    monkeypatch.setattr(startup_lines, "PAST_BYTES", 16 << 10)
    monkeypatch.setattr(report_parallel, "MIN_PARALLEL_BYTES", 1)
    monkeypatch.setattr(report_parallel, "usable_cpus", lambda: 2)
    monkeypatch.setattr(gap_spool, "EVENT_RUN_ITEMS", 64)
    split: list[bool] = []

    def detect_parallel(*args: Any, **kwargs: Any) -> Any:
        around = kwargs["around"]
        assert around is not None and around.runs > 2
        found = report_parallel.detect_parallel(*args, **kwargs)
        split.append(found is not None)
        return found

    monkeypatch.setattr(report, "detect_parallel", detect_parallel)
    w = _window(sim_log_inside, "+120s", "+200s")
    one = build_report(sim_log_inside, Config(), workers=1, window=w)
    two = build_report(sim_log_inside, Config(), workers=2, window=w)
    assert split == [True]
    assert msgspec.json.encode(to_json(two)) == msgspec.json.encode(to_json(one))
    assert sum(len(g.log_events) for g in one.gaps) > 100


def test_a_restart_before_the_window_is_read_from_the_lines_cuzk_logs_before_its_start(
    sim_with_log: tuple[Path, Path], tmp_path: Path, small_steps: None,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon restarted halfway with another memory budget (logged just before its
    `starting cuzk engine`): a window after it reads that budget, as the whole parse does."""
    from gapwatch.offline.compare import read_side

    path, log = sim_with_log
    lines = log.read_text().splitlines(keepends=True)
    stamped = [i for i, x in enumerate(lines) if x[:4] == "2026"]
    k = stamped[len(stamped) // 2]
    stamp = lines[k][:27]
    # The daemon's start lines, to its engine's start (budget, pinned pool, engine start).
    n = next(i for i, x in enumerate(lines) if "starting cuzk engine" in x) + 1
    restart = [stamp + x[27:].replace("total_budget_gib=512", "total_budget_gib=256")
               for x in lines[:n]]
    assert any("total_budget_gib=256" in x for x in restart)
    assert "starting cuzk engine" in restart[-1]
    restarted = tmp_path / "cuzk.log"
    restarted.write_text("".join(lines[:k] + restart + lines[k:]))
    w = _window(path, "+200s", "+230s")
    whole = read_side("W", path, Config(), [str(restarted)], window=w)
    _log_read_in_parts(monkeypatch, 64 << 10)
    monkeypatch.setattr(log_split, "BACK_BYTES", 4 << 10)
    part = read_side("P", path, Config(), [str(restarted)], window=w)
    assert whole.settings.values["[memory] total_budget (GiB)"] == "256"
    assert part.settings.values == whole.settings.values


def test_the_log_read_around_the_window_says_how_far_it_is(
    sim_with_log: tuple[Path, Path], small_steps: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import itertools
    import re

    from gapwatch.offline.progress import Progress

    path, log = sim_with_log
    _log_read_in_parts(monkeypatch, 64 << 10)
    ticks = itertools.count(0, 0.6)
    lines: list[str] = []
    progress = Progress(lines.append, "gapwatch report", clock=lambda: float(next(ticks)))
    build_report(path, Config(), [str(log)], workers=1, window=_window(path, "+150s", "+200s"),
                 progress=progress)
    parsing = [x for x in lines if "parsing the log" in x]
    assert parsing and all("MB around the window" in x for x in parsing)
    shares = [int(m.group(1)) for x in parsing if (m := re.search(r"(\d+) %", x))]
    assert shares == sorted(shares) and 0 < shares[-1] <= 100


def test_a_recording_without_its_log_inside_is_not_searched_back_through(
    sim_with_log: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _log = sim_with_log

    def searched(*_: object) -> None:
        raise AssertionError("searched back through a recording that holds no log line")

    monkeypatch.setattr(startup_lines, "last_restart", searched)
    assert startup_lines.recorded_startup(path, START + 200) == []


def test_the_windows_log_part_parsed_in_two_processes_gives_the_one_process_report(
    sim_with_log: tuple[Path, Path], small_steps: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, log = sim_with_log
    _log_read_in_parts(monkeypatch, 256 << 10)
    adopted = two_processes(monkeypatch)
    w = _window(path, "+100s", "+220s")
    monkeypatch.setattr(log_window, "SPLIT_BYTES", 1 << 62)
    one = build_report(path, Config(), [str(log)], workers=1, window=w)
    assert adopted == []
    monkeypatch.setattr(log_window, "SPLIT_BYTES", 1)
    two = build_report(path, Config(), [str(log)], workers=1, window=w)
    assert adopted == [1]  # the child's half was taken
    assert msgspec.json.encode(to_json(two)) == msgspec.json.encode(to_json(one))
    assert two.counters["log_window_skipped_bytes"] > 0


def test_a_restart_inside_the_warm_up_is_read_with_it_not_instead_of_its_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log_split, "STARTUP_BYTES", 100)
    monkeypatch.setattr(log_split, "WARM_BYTES", 1000)
    monkeypatch.setattr(log_split, "BACK_BYTES", 50)
    line = "x" * 19 + "\n"
    text = line * 200 + "starting cuzk engine\n" + line * 100
    log = tmp_path / "cuzk.log"
    log.write_text(text)
    restart = text.index("starting cuzk engine")  # 4000
    seam = restart + 21 + 20 * 20  # a line start 421 bytes after it: inside the warm-up
    # The warm-up from the line at or after seam - 1000 (3440), the restart's step back
    # (3960) inside it: one part from 3440, not one from 3960 that drops 3440-3960.
    assert log_window._regions(str(log), seam, len(text)) == [(0, 100), (3440, len(text))]


def test_a_long_recordings_report_on_a_terminal_says_a_part_can_be_read(
    sim_with_log: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    from gapwatch.commands import report as report_command
    from gapwatch.engine.console import Console

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    path, _log = sim_with_log
    monkeypatch.setenv("TERM", "xterm-256color")  # a CI's TERM may say dumb
    monkeypatch.setattr(report_command, "TIP_SPAN_S", 200.0)  # the 4-minute recording is long
    said = []
    for stream, argv in ((Terminal(), []), (io.StringIO(), []), (Terminal(), ["--since=-1m"])):
        monkeypatch.setattr(report_command, "STDERR", Console(stream))
        assert main(["report", str(path), *argv]) == 0
        capsys.readouterr()
        said.append("--since/--until read a part" in stream.getvalue())
    assert said == [True, False, False]  # a terminal; never a file; not when a part is read


def test_a_replay_of_a_window_replays_the_recording_cut_there(
    sim_with_log: tuple[Path, Path], tmp_path: Path, small_steps: None
) -> None:
    path, _log = sim_with_log
    _w, cut = _window_and_cut(path, tmp_path, "+100s", "+200s")
    rc, _, windowed = _run("replay", str(path), "--headless", "--since", "+100s", "--until",
                           "+200s")
    assert rc == 0
    rc, _, whole_cut = _run("replay", str(cut), "--headless")
    assert rc == 0
    # The same but for the gaps the window's end cut, said of the window (the cut file's data
    # ends there: nothing of them).
    lines = windowed.splitlines(keepends=True)
    cut_there = [line for line in lines if "still open at the window's end" in line]
    assert "".join(line for line in lines if line not in cut_there) == whole_cut
    assert "gaps: pcie_starved=" in windowed
    rc, _, err = _run("replay", str(path), "--headless", "--since", "+1h")
    assert rc == 2 and "holds none of the recording" in err


def _late_post_window(post_recorded: Path, tmp_path: Path
                      ) -> tuple[Path, Path, dict[str, Any], tuple[str, ...]]:
    """The simulated PoSt prover recorded with its log (`record --log`), that log as a file,
    its late WinningPoSt (from the whole report), and a window from 5 s after that PoSt
    began to 31 s after (late inside it; a GPU panic, a restart and its cost follow within
    a minute of the window's end)."""
    path = post_recorded
    log = tmp_path / "cuzk.log"
    log.write_text("".join(f"{r['raw']}\n" for r in _records(path)
                           if r.get("type") == "log" and r.get("raw")))
    whole = json.loads(report_of(path, "--json"))["prover_events"]["proof"]
    late = [e for e in whole if e["proof"]["verdict"] == "late" and e["proof"]["done"]][0]
    began_s = late["t_wall_s"] - late["proof"]["total_s"]
    start = header_of(path).started_wall_s
    window = ("--since", f"+{began_s + 5 - start:.1f}s", "--until", f"+{began_s + 31 - start:.1f}s")
    return path, log, late, window


def test_a_replay_of_a_window_of_a_recording_holding_its_log_is_told_what_its_report_is(
    post_recorded: Path, tmp_path: Path
) -> None:
    """A WinningPoSt begun before a window and late inside it: the window's report (which
    reads the recording's own log 5 minutes around the window, `recorded_around`) lists it
    late, and so does a replay of the window with the same log as `--log`; the replay of the
    window without `--log` fed only the window's records and said nothing of it (nor the
    daemon's settings before the window). It is told the same lines as with `--log` now,
    to the figure and the second: the file's lines are the recording's, at the same times, and
    a proof still running is said late at the first data time past its deadline, whichever
    copies moved "now" before it (`PostTracker.due_s`). Checked every 0.5 s from the latest
    check, it was said `still running: 30.6 s` without the log (the recording's lines in the
    order they arrived) and `30.5 s` with it (the file's, in time order): 0.06 s apart, on
    either side of a second's turn for about one recording in 16 (a recording starts at the
    wall clock's time), at 00:54:26 against 00:54:25, where this test, which compared the
    lines but for their figures, failed."""
    path, log, late, window = _late_post_window(post_recorded, tmp_path)
    reported = json.loads(report_of(path, "--json", *window))["prover_events"]["proof"]
    assert {(e["job_id"], e["proof"]["verdict"]) for e in reported} == {(late["job_id"], "late")}
    rc, _, recorded = _run("replay", str(path), "--headless", *window)
    assert rc == 0
    rc, _, given = _run("replay", str(path), "--headless", "--log", str(log), *window)
    assert rc == 0
    said = [line for line in recorded.splitlines() if "prover proof" in line]
    assert said and all(f"WinningPoSt {late['job_id']}" in line and "LATE" in line
                        for line in said)
    # The same PoSt as with the log given, word for word, and as many lines but the one
    # saying the file repeats the recording.
    def told(text: str) -> list[str]:
        return [line for line in text.splitlines()
                if "prover proof" in line or "prover restart" in line]

    assert told(recorded) == told(given) and len(told(recorded)) == 2
    assert len(recorded.splitlines()) == len(given.splitlines()) - 1


def test_a_replay_of_a_window_tells_what_its_report_lists_not_what_followed_it(
    post_recorded: Path, tmp_path: Path
) -> None:
    """The log read 5 minutes after a window (the recording's own, or a `--log` file's near
    it) is for the PoSt in flight at its end: the window's report lists the words said in
    the window (and a proof that began in it and ended after). Its replay, with or without
    `--log`, said all the watcher said of those lines too: a GPU panic, a restart and its
    cost, 15 to 52 s after the window's end. It tells what the report lists (the log given
    either way: a file's lines and the recording's are timed apart)."""
    path, log, _late, window = _late_post_window(post_recorded, tmp_path)
    for given in ((), ("--log", str(log))):
        doc = json.loads(report_of(path, "--json", *given, *window))["prover_events"]
        reported = sorted((e["t_wall_s"], kind.replace("_", " ")) for kind, events in doc.items()
                          if isinstance(events, list) for e in events)
        assert [kind for _t, kind in reported] == ["proof", "proof"]  # late, then done (late)
        rc, _, err = _run("replay", str(path), "--headless", *given, *window)
        assert rc == 0
        said = re.findall(r"prover ([a-z ]+?) at (\d\d:\d\d:\d\d):", err)
        assert said == [(kind, fmt.clock(t)) for t, kind in reported], given


def test_a_windowed_replay_feeds_the_log_near_the_window_and_the_daemons_start() -> None:
    from gapwatch.core.models import GpuSample, LogEvent
    from gapwatch.logs.files import merge_by_time
    from gapwatch.offline.detect import LogInput
    from gapwatch.offline.gap_spool import EventSpool
    from gapwatch.offline.replay_logs import ReplayLogs

    def ev(t: float, name: str) -> LogEvent:
        return LogEvent(t_wall_s=t, time_source="line", kind="tracing", name=name, raw=name)

    events = [ev(START, "starting cuzk engine"), ev(START + 10, "GPU_TIMING x"),
              ev(START + 900, "GPU_TIMING y"), ev(START + 1500, "GPU_TIMING z"),
              ev(START + 3000, "GPU_TIMING w")]
    spool, span = EventSpool(), log_span.LogSpan(START + 1000, windowed=True)
    for e in events:
        spool.add(e)
        span.observe(e)
    logs = ReplayLogs(LogInput(spool, span, {}))
    # The window's samples: from its start to its end, 1000 s on.
    samples = [GpuSample(0, int(t * 1e9), t, None, 50.0, None, None, None)
               for t in (START + 1000, START + 2000)]
    try:
        for _pass in range(2):  # a seek back plays the file, and the log, again
            one_pass = logs.events()
            fed = [r.name for r in merge_by_time(samples, one_pass, one_pass.after_end)
                   if isinstance(r, LogEvent)]
            # The start's settings line, and those within the margin of the window (5 minutes).
            assert fed == ["starting cuzk engine", "GPU_TIMING y", "GPU_TIMING z"]
    finally:
        logs.close()


def _begun_after_its_log(path: Path, folder: Path, after_s: float, keep_log: bool) -> Path:
    """`path` as if `record` began `after_s` into it: its header started then and its samples
    from then; its log records all kept (`record --log --from-start`) or none (`keep_log`
    False: the log given as `--log`)."""
    header, *body = path.read_bytes().splitlines(keepends=True)
    head = msgspec.json.decode(header)
    head["started_wall_s"] += after_s
    def kept(r: dict[str, Any]) -> bool:
        if r.get("type") == "log":
            return keep_log
        return bool(r.get("t_wall_s", math.inf) >= head["started_wall_s"])

    kept_lines = [line for line in body if kept(msgspec.json.decode(line))]
    out = folder / f"begun-{keep_log}.jsonl"
    out.write_bytes(msgspec.json.encode(head) + b"\n" + b"".join(kept_lines))
    return out


def _post_and_table(doc: dict[str, Any]) -> tuple[set[str], int]:
    proofs = {e["job_id"] for e in doc["prover_events"]["proof"]}
    return proofs, len(doc["partitions"]["items"])


def test_a_whole_report_keeps_the_log_from_a_minute_before_record_in_its_post_list_and_table(
    post_recorded: Path, tmp_path: Path
) -> None:
    """A recording whose log begins before its samples (`record --log --from-start`, or a
    `--log` from a minute before `record`): its PoSt list held the first WinningPoSt and its
    partition table not its partitions (203 of 304 partitions, 3 PoSt jobs of 5), or (with
    `--log`) both lost them, nothing said. A whole report keeps what the log gives within
    5 minutes of the recording's span in both, either way the log is given."""
    path = post_recorded
    log = tmp_path / "cuzk.log"
    log.write_text("".join(f"{r['raw']}\n" for r in _records(path)
                           if r.get("type") == "log" and r.get("raw")))
    whole = _post_and_table(json.loads(report_of(path, "--json")))
    assert "winpost-1000-1a2b3c01" in whole[0]
    held = _begun_after_its_log(path, tmp_path, 40.0, keep_log=True)
    given = _begun_after_its_log(path, tmp_path, 40.0, keep_log=False)
    assert _post_and_table(json.loads(report_of(held, "--json"))) == whole
    assert _post_and_table(json.loads(report_of(given, "--json", "--log", str(log)))) == whole


def test_a_restarts_cost_is_listed_only_where_its_restart_is(
    post_recorded: Path, tmp_path: Path
) -> None:
    """A window (or a whole report's span) begun between a restart and its new run's first
    work: the count said no restart, the Restarts list opened with the cost of the one left
    out (`the restart cost the GPU 17.8 s, 16:22:32 to 16:22:50`). The cost goes where its
    restart goes."""
    path = post_recorded
    log = tmp_path / "cuzk.log"
    log.write_text("".join(f"{r['raw']}\n" for r in _records(path)
                           if r.get("type") == "log" and r.get("raw")))
    whole = json.loads(report_of(path, "--json", "--log", str(log)))["prover_events"]
    start = header_of(path).started_wall_s
    (restart,), (cost,) = whole["restart"], whole["restart_cost"]
    assert restart["t_wall_s"] < cost["t_wall_s"]
    between = f"+{(restart['t_wall_s'] + cost['t_wall_s']) / 2 - start:.1f}s"
    doc = json.loads(report_of(path, "--json", "--log", str(log), "--since", between))
    assert (doc["prover_events"]["restart"], doc["prover_events"]["restart_cost"]) == ([], [])


def test_a_whole_report_says_what_it_leaves_out_of_a_log_recorded_from_long_before(
    post_recorded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log a recording holds from more than the margin before its samples (`record
    --from-start` of a long log; the margin scaled to 10 s here): its PoSt list and its table
    both leave those lines' proofs and partitions out, and one line counts them."""
    monkeypatch.setattr(log_span, "MARGIN_S", 10.0)
    path = post_recorded
    held = _begun_after_its_log(path, tmp_path, 40.0, keep_log=True)
    doc = json.loads(report_of(held, "--json"))
    proofs, _rows = _post_and_table(doc)
    assert "winpost-1000-1a2b3c01" not in proofs
    assert "winpost-1000-1a2b3c01" not in {p["job_id"] for p in doc["partitions"]["items"]}
    (note,) = [w for w in doc["problems"] if "outside the recording's span: left out" in w]
    assert "1 PoSt proof(s)" in note and "partition(s)" in note


def test_a_window_to_the_recordings_end_says_no_later_until_reads_its_idle_end(
    tmp_path: Path
) -> None:
    """A recording ending in cuzk's restart (the GPU idle its last seconds): a window to its
    end said "--until later reads it", where nothing comes later; a window ending before the
    data does still says it."""
    path, _err = record_sim(tmp_path, "post", 115.0)
    assert "still open at the window's end" not in report_of(path, "--since", "+60s")
    assert "--until later reads it" in report_of(path, "--since", "+60s", "--until", "+113s")


def test_a_windows_idle_end_shorter_than_the_min_gap_is_not_said(post_recorded: Path) -> None:
    """The stretch a window's end cuts is said where the detector had a gap open there
    (`GpuTotals.open_at_end`, `[detector] min_gap_ms` on): one of about a sample (0.3 s of a
    fast sampler) is no idle stretch. A window ending 12 s into cuzk's restart says it; held to
    a min gap of 20 s, the same window does not."""
    from gapwatch.config import build_config
    from gapwatch.offline.report_text import format_text
    path = post_recorded
    window = _window(path, "+60s", "+112s")
    r = build_report(path, Config(), [], workers=1, window=window)
    assert r.data_after
    (t,) = r.totals
    assert t.open_at_end is not None and t.open_at_end.idle_s >= 10
    assert "still open at the window's end" in format_text(r)
    held = build_config({"detector": {"min_gap_ms": 20_000}})
    r = build_report(path, held, [], workers=1, window=window)
    assert r.data_after and r.totals[0].open_at_end is None
    assert "still open at the window's end" not in format_text(r)


def test_a_time_of_day_on_a_trace_csv_is_resolved_by_its_end_as_a_recordings_is(
    tmp_path: Path
) -> None:
    """A trace CSV begun at 16:18:36 and `--since 16:18`: its end was not read, so the time of
    day was the next day's and the report an empty window, exit 0. Its last row's time is
    read from its end: 16:18 is that day's (the window from the CSV's start), and a time of
    day after its end is refused (exit 2) as for a recording."""
    start = datetime(2026, 12, 5, 16, 18, 36, tzinfo=UTC).timestamp()
    rows = ["timestamp_s,gpu,sm_active_pct,gpu_util_pct"]
    rows += [f"{start + i * 0.1!r},0,{0.0 if i % 50 < 5 else 95.0},100.0" for i in range(900)]
    trace = tmp_path / "p.csv"
    trace.write_text("\n".join(rows) + "\n")
    rc, out, _ = _run("report", str(trace), "--json", "--since", "16:18")
    assert rc == 0
    doc = json.loads(out)
    assert doc["window"]["since_s"] == start - 36
    assert doc["gaps"]
    rc, _, err = _run("report", str(trace), "--since", "16:21")
    assert rc == 2 and "holds none of the recording" in err


def test_a_window_of_a_recording_holding_its_log_says_the_post_that_went_late_in_it(
    post_recorded: Path, tmp_path: Path
) -> None:
    """A WinningPoSt begun before a window and past its 30 s deadline inside it: the window
    of the recording holding its log listed no PoSt ("nothing to change"), its begin not
    read, while the same window with the same log as `--log` (read 5 minutes around it)
    listed it late. The recording's own log is read around the window as a `--log` is: both
    list it, alike."""
    path, log, late, window = _late_post_window(post_recorded, tmp_path)
    recorded = json.loads(report_of(path, "--json", *window))["prover_events"]["proof"]
    given = json.loads(report_of(path, "--json", "--log", str(log), *window))
    assert [(e["job_id"], e["proof"]["verdict"]) for e in recorded][-1:] == [
        (late["job_id"], "late")]
    assert ([(e["job_id"], e["proof"]["verdict"], e["proof"]["done"]) for e in recorded]
            == [(e["job_id"], e["proof"]["verdict"], e["proof"]["done"])
                for e in given["prover_events"]["proof"]])


def test_a_whole_reports_left_out_line_counts_each_post_proof_once() -> None:
    """A late PoSt is said twice, "still running" and then done: a whole report's "left out"
    line counted 6 proofs of 4 jobs left out ("12 prover event(s) (2 error, 6 proof, ...)").
    It counts proofs as the PoSt list does, one per proof, beside the other words."""
    from gapwatch.core.models import ProofTiming, ProverEvent
    from gapwatch.offline.detect import _Side
    from gapwatch.offline.log_span import LogSpan
    from gapwatch.offline.report import left_out_note

    def proof(t: float, job: str, done: bool) -> ProverEvent:
        return ProverEvent(t_wall_s=t, kind="proof", level="warning", message="", job_id=job,
                           proof=ProofTiming("winning-post", total_s=40.0, deadline_s=30.0,
                                             verdict="late", done=done))

    side = _Side(None, None)
    side.keep_within(LogSpan(start_s=10_000.0), windowed=False, since_s=None)
    side.say([proof(100.0, "late", done=False), proof(110.0, "late", done=True),
              proof(120.0, "on-time", done=True),
              ProverEvent(t_wall_s=130.0, kind="error", level="error", message="boom"),
              proof(20_000.0, "kept", done=True)])
    assert side.left_out == {"proof": 2, "error": 1}
    assert left_out_note(side.left_out, 3)[0].startswith(
        "2 PoSt proof(s), 1 error(s) and 3 partition(s) of the log")
