"""A `--log` that does not belong to the recording: said in one line with how far apart, and its
events not used for causes, advice or partition figures (a log from two days before once switched
the advice to a pinned-pool setting, citing a line of the other day)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gapwatch.config import Config
from gapwatch.core.models import LogEvent
from gapwatch.offline.log_span import STRAY_MAX, LogSpan, _File
from gapwatch.offline.report import ReportData, build_report, to_json
from gapwatch.sources.time_window import TimeWindow

E2E = Path(__file__).parent / "data" / "h200-e2e"


def _shifted(src: Path, dst: Path, days: float) -> Path:
    """The log with every tracing timestamp moved by `days` (TIMELINE offsets follow their
    anchor line; CUZK lines have no time)."""
    def move(m: re.Match[str]) -> str:
        t = datetime.strptime(m.group(0), "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        return (t + timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    text = src.read_text()
    dst.write_text(re.sub(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z", move, text, flags=re.M))
    return dst


def test_a_log_from_two_days_before_is_said_and_not_used(tmp_path: Path) -> None:
    rec = E2E / "host-stall" / "rec.jsonl.gz"
    alone = build_report(rec, Config())
    logs = [str(_shifted(E2E / "pageable" / name, tmp_path / name, -2)) for name in
            ("stdout.log", "stderr.log")]
    with_log = build_report(rec, Config(), logs)
    # The advice is the recording's own, not the other day's pinned-pool failures.
    assert [a.setting for a in with_log.advice.advice] == [
        a.setting for a in alone.advice.advice]
    assert not any("safety_margin" in a.setting for a in with_log.advice.advice)
    said = [w for w in with_log.warnings if "not this recording's log" in w]
    assert len(said) == 2  # one line for each file
    assert all("2.0 days before the recording" in w for w in said)
    assert all("2026-11-28" in w for w in said)  # the other day's date, not only a clock time
    assert said[0] in to_json(with_log)["problems"]
    # Partition figures: the recording's own (from its recorded log lines), none of the other's.
    assert (with_log.partitions is None) == (alone.partitions is None)
    if alone.partitions is not None and with_log.partitions is not None:
        assert len(with_log.partitions.partitions) == len(alone.partitions.partitions)


def test_a_log_of_the_same_run_is_used_and_nothing_is_said_of_its_span(tmp_path: Path) -> None:
    rec = E2E / "pageable" / "rec.jsonl.gz"
    logs = [str(E2E / "pageable" / name) for name in ("stdout.log", "stderr.log")]
    r = build_report(rec, Config(), logs)
    # Of its span nothing; and no warning: the stderr's C++ lines cannot be placed beside the
    # stdout's, but the recording's own lock regions stand in for them, a note
    # (tests/test_two_stream_logs.py).
    assert not [w for w in r.warnings if w.startswith("--log")]
    assert [n.split(":")[0] for n in r.notes if "untimestamped" in n] == [f"--log {logs[1]}"]
    # The H200 run was recorded with `record --log` of these very files: each of their lines
    # is one the recording holds, counted once (gapwatch.logs.once), and that is said, as a
    # note (`report.said_of_input`): nothing of the data is wrong.
    assert [n.split(" events of ")[1].split(" were already")[0] for n in r.notes
            if " events of " in n] == logs
    assert not any(" events of " in w for w in r.warnings)
    # The log's lines are read: its pinned pool's failures are advised on (judged by the
    # host's readings then: not RAM, tests/test_pinned_pool_host.py).
    assert [n.why.split(":")[0] for n in r.advice.no_setting if n.stall == "pinned_pool"] == [
        "not RAM"]


def test_the_log_of_a_recording_whose_gpu_never_gave_a_reading_is_its_log(
    tmp_path: Path) -> None:
    """The H200 pageable run with every SM reading missing (GPM failing throughout), and its log
    with one line 5 s after the last sample: the log is this recording's. The end of the data
    was taken from the GPUs' last readings, 0.0 for a GPU that gave none, so the line was
    "after the recording" and the whole log said to be another's, none of its events used."""
    from msgspec.structs import replace

    from gapwatch.core.models import GpuSample
    from gapwatch.sinks.recorder import write_recording
    from gapwatch.sources.files import read_any

    rec = read_any(E2E / "pageable" / "rec.jsonl.gz")
    records = [replace(r, sm_active_pct=None, sm_source=None) if isinstance(r, GpuSample)
               else r for r in rec.records]
    unread = tmp_path / "unread.jsonl"
    write_recording(unread, rec.header, records)
    after_s = max(r.t_wall_s for r in records if isinstance(r, GpuSample)) + 5.0
    stamp = datetime.fromtimestamp(after_s, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    log = tmp_path / "stdout.log"
    log.write_text((E2E / "pageable" / "stdout.log").read_text()
                   + f"{stamp}  INFO cuzk_core::engine: GPU_TIMING spawn_blocking prove_start "
                     "worker_id=0 partition=Some(8) spawn_to_enter_ms=0 prove_start_ms=3000\n")
    r = build_report(unread, Config(), [str(log)], workers=1)
    assert not [w for w in r.warnings if "not this recording's log" in w or "span" in w]
    assert any(w.startswith("GPU 0: no SM activity reading at all") for w in r.warnings)


# --- a few lines from a clock years off: the file is judged by its other lines -------------

DATA = Path(__file__).parent / "data"


def _line(day_time: str, level: str, target: str, message: str) -> str:
    return f"{day_time}Z {level:>5} {target}: {message}"


def _report_with(tmp_path: Path, lines: list[str], window: TimeWindow | None = None
                 ) -> ReportData:
    log = tmp_path / "cuzk.log"
    log.write_text("\n".join(lines) + "\n")
    return build_report(DATA / "pageable.csv", Config(), [str(log)], window=window)


def _pageable_lines() -> list[str]:
    return (DATA / "pageable.log").read_text().splitlines()


def test_a_first_line_from_a_clock_years_ahead_leaves_the_log_this_recordings(
        tmp_path: Path) -> None:
    """One line of 2031 first (a clock set ahead until NTP), the rest the recording's: the
    files are read in the order written, and the first line was the file's first time. The
    report said "not this recording's log ... none of its events is used" (its span 2031 to
    2026) while using them all; a window said "no line within the window"."""
    clean = build_report(DATA / "pageable.csv", Config(), [str(DATA / "pageable.log")])
    ahead = [_line("2031-01-01T00:00:01.000000", "INFO", "cuzk_core::engine", "hello"),
             *_pageable_lines()]
    r = _report_with(tmp_path, ahead)
    assert not any("not this recording" in w for w in r.warnings)
    [stray] = [w for w in r.warnings if "timed more than a day" in w]
    assert "1 line(s)" in stray and "2031-01-01 00:00:01 UTC" in stray
    assert "judged by its other lines (2026-11-30 09:06:26 UTC to 2026-11-30" in stray
    assert r.partitions is not None and clean.partitions is not None
    assert len(r.partitions.partitions) == len(clean.partitions.partitions) > 0
    window = TimeWindow(datetime(2026, 11, 30, 9, 6, 30, tzinfo=UTC).timestamp(),
                        datetime(2026, 11, 30, 9, 6, 50, tzinfo=UTC).timestamp(), "test")
    windowed = _report_with(tmp_path, ahead, window)
    assert not any("no line within the window" in w for w in windowed.warnings)


def test_a_last_line_from_an_earlier_clock_keeps_the_runs_startup_lines(
        tmp_path: Path) -> None:
    """The daemon started an hour before the recording (its budget and pool in its startup
    lines), then the recording's lines, then one line of 2020 last: the file's last time was
    that line's, before the recording, so the file was another run's and its startup lines
    were dropped: the advice no longer knew the budget."""
    start = [_line("2026-11-30T08:00:01.000000", "INFO", "cuzk_daemon", "cuzk-daemon starting"),
             _line("2026-11-30T08:00:01.010000", "INFO", "cuzk_core::engine",
                   "memory budget initialized total_budget_gib=512"),
             _line("2026-11-30T08:00:01.030000", "INFO", "cuzk_core::engine",
                   "starting cuzk engine pipeline_enabled=true")]
    fail = [_line("2026-11-30T09:06:30.000000", "WARN", "cuzk_core::pinned_pool",
                  "cudaHostAlloc failed size_gib=3.882613 cuda_err=2"),
            _line("2026-11-30T09:06:30.002000", "WARN", "cuzk_core::pipeline",
                  "pinned pool checkout FAILED \u2014 falling back to unpinned "
                  "num_constraints=130278869 pool_free=0 pool_total_gib=7.76")]
    body = [line for line in _pageable_lines() if "starting cuzk engine" not in line]
    honest = json.dumps(to_json(_report_with(tmp_path, start + body + fail)))
    assert "total_budget_gib=512" in honest
    last = _line("2020-01-01T00:00:01.000000", "INFO", "cuzk_core::engine", "bye")
    r = _report_with(tmp_path, start + body + fail + [last])
    assert "total_budget_gib=512" in json.dumps(to_json(r))
    assert not any("not this recording" in w for w in r.warnings)
    assert any("1 line(s) timed more than a day" in w and "2020-01-01" in w for w in r.warnings)


def _file(*times: float) -> _File:
    f = _File()
    for t in times:
        f.see(t)
    return f

def _read_in_two_at_every_line(times: list[float]) -> list[_File]:
    """The file of `times` read in two processes cut at each line in turn (the first part
    observed, the second's file joined after it, as the split report joins them)."""
    out = []
    for cut in range(len(times) + 1):
        first, second = LogSpan(1.0), LogSpan(1.0)
        for t in times[:cut]:
            first.files.setdefault("a", _File()).see(t)
        second.files["a"] = _file(*times[cut:])
        first.observed_after(second.files)
        out.append(first.files["a"])
    return out



def test_strays_are_few_far_and_never_the_bulk() -> None:
    day = 86_400.0
    bulk = [1000.0 + i for i in range(100)]
    # Years off either end: strays, the span the bulk's.
    f = _file(10 * 365 * day, *bulk, -5 * 365 * day)
    assert (f.first_s, f.last_s) == (1000.0, 1099.0) and len(f.strays()) == 2
    assert (f.earliest_s, f.latest_s) == (-5 * 365 * day, 10 * 365 * day)
    # An hour before the rest (the daemon's start before its first work): no stray.
    f = _file(1000.0 - 3600, *bulk)
    assert f.first_s == 1000.0 - 3600 and f.strays() == []
    # Two lines: neither is the other's stray; three: the one far from two is (written
    # before them: a clock set ahead, then corrected).
    assert _file(10 * day, 0.0).strays() == []
    assert _file(10 * day, 0.0, 1.0).strays() == [10 * day]
    # More far lines than STRAY_MAX at one end are no strays: they are a part of the file.
    many = _file(*bulk, *[-10 * day - i for i in range(STRAY_MAX + 1)])
    assert many.strays() == [] and many.first_s == -10 * day - STRAY_MAX


def test_a_file_split_in_two_has_the_span_of_the_file_read_whole() -> None:
    """A large file is parsed in two processes (`log_split`), the second half's span merged
    into the first's: the same as one pass over all its lines, in any order."""
    day = 86_400.0
    # Out of time order (strays): 50 days ahead first, 50 days behind; in time order (a run
    # appended days later: no stray): 9 days on, last.
    times = [50 * day, *(1000.0 + i for i in range(40)), -50 * day, 2000.0, 9 * day]
    whole = _file(*times)
    assert whole.strays() == [-50 * day, 50 * day] and whole.last_s == 9 * day
    assert all(_facts(part) == _facts(whole) for part in _read_in_two_at_every_line(times))


def test_a_second_runs_lines_interleaved_with_a_later_ones_read_in_two_as_whole() -> None:
    """Found by a fuzz of whole against split reads: a run of 20 lines, one line 400 days
    before it, then lines of two runs 3 and 5 days later written interleaved. Read whole, the
    5-day lines are strays (out of order with the 3-day ones); a join that dropped the second
    part's earliest far-ahead line (`far_before_kept_s`) read none of them so and ended the
    span 2 days later, though `_File`'s `==` (which leaves out the marks) still held."""
    day = 86_400.0
    later = "553553533333533353335335533333"  # each line's run: 3 or 5 days on
    times = [3 * day, -400 * day, *(3 * day + i * 60.0 for i in range(1, 20)),
             *((3 + int(c)) * day + i * 60.0 for i, c in enumerate(later))]
    whole = _file(*times)
    assert whole.strays()[0] == -400 * day and len(whole.strays()) == 11
    assert all(_facts(part) == _facts(whole) for part in _read_in_two_at_every_line(times))


def _facts(f: _File) -> tuple[list[float], float | None, float | None]:
    """What a file's span says: its strays and its first and last times (`_File`'s `==`
    leaves out the marks that decide the strays)."""
    return f.strays(), f.first_s, f.last_s


# --- far lines in time order are a run of their own, not strays -------------------------------

def _shift_days(line: str, days: float) -> str:
    m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z", line)
    if m is None:
        return line
    t = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f") + timedelta(days=days)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f") + line[m.end(1):]


def test_a_new_run_appended_to_an_old_runs_log_keeps_its_startup_lines(
        tmp_path: Path) -> None:
    """One file across two runs: Monday's run (the bulk), then today's restart of an idle
    daemon, a few startup lines an hour before the recording and a pinned-pool failure in it.
    Today's lines lie days after Monday's, but in time order: they were called strays "of a
    clock set wrong", the file judged Monday's ("not this recording's log ... none of its
    events is used"), and the budget dropped from the report."""
    monday = [_shift_days(line, -3) for line in _pageable_lines()]
    today = [_line("2026-11-30T08:00:01.000000", "INFO", "cuzk_daemon", "cuzk-daemon starting"),
             _line("2026-11-30T08:00:01.010000", "INFO", "cuzk_core::engine",
                   "memory budget initialized total_budget_gib=512"),
             _line("2026-11-30T08:00:01.030000", "INFO", "cuzk_core::engine",
                   "starting cuzk engine pipeline_enabled=true"),
             _line("2026-11-30T09:06:30.000000", "WARN", "cuzk_core::pinned_pool",
                   "cudaHostAlloc failed size_gib=3.882613 cuda_err=2")]
    r = _report_with(tmp_path, monday + today)
    assert "total_budget_gib=512" in json.dumps(to_json(r))
    assert not any("not this recording" in w or "timed more than a day" in w
                   for w in r.warnings)
    # Monday's lines are said as lines before the recording, as any earlier run's are.
    assert any("line(s) before it (from 2026-11-27" in w for w in r.warnings)


def test_a_daemon_started_days_before_its_work_has_no_strays(tmp_path: Path) -> None:
    """Started on Friday, idle over the weekend (cuzk logs nothing without work), Monday's
    work recorded: its startup lines were called strays "timed more than a day from its
    other lines: a clock set wrong while written?"."""
    friday = [_line("2026-11-27T18:00:00.000000", "INFO", "cuzk_daemon", "cuzk-daemon starting"),
              _line("2026-11-27T18:00:00.010000", "INFO", "cuzk_core::engine",
                    "memory budget initialized total_budget_gib=512"),
              _line("2026-11-27T18:00:00.020000", "INFO", "cuzk_core::engine",
                    "CUDA pinned memory pool initialized")]
    r = _report_with(tmp_path, friday + _pageable_lines())
    assert not any("timed more than a day" in w or "not this recording" in w
                   for w in r.warnings)
    assert any("line(s) before it (from 2026-11-27 18:00:00 UTC" in w for w in r.warnings)


def test_far_lines_are_strays_only_where_written_out_of_time_order() -> None:
    day = 86_400.0
    bulk = [1000.0 + i for i in range(100)]
    # A jump forward is a later run (appended), or work days after the start: no strays.
    assert _file(*bulk, *(9 * day + i for i in range(5))).strays() == []
    assert _file(*(-3 * day + i for i in range(3)), *bulk).strays() == []
    # A jump forward then back (a clock set ahead, then corrected), a jump back (set behind
    # at the end): strays, wherever in the file they are written.
    ahead = [9 * day + i for i in range(5)]
    assert _file(*ahead, *bulk).strays() == ahead
    assert _file(*bulk[:50], *ahead, *bulk[50:]).strays() == ahead
    assert _file(*bulk, -3 * day).strays() == [-3 * day]
    # Years ahead first, then a run appended a week on: only the first is a stray.
    f = _file(10 * 365 * day, *bulk, 7 * day)
    assert f.strays() == [10 * 365 * day] and f.last_s == 7 * day


def _event(t_s: float, name: str) -> LogEvent:
    return LogEvent(t_s, "line", "tracing", name, name, stream="cuzk.log")


def test_far_lines_holding_a_daemons_start_are_never_strays() -> None:
    """Rotated pieces joined newest first (`cat cuzk.log cuzk.log.1`): today's run, its
    startup lines, written before Monday's lines. Out of time order, but holding a daemon's
    start they are a run of their own, whichever of cuzk's start lines they hold; the same
    lines without a start line are strays."""
    day = 86_400.0
    monday = [_event(1000.0 + i, "proof completed successfully (pipeline)") for i in range(50)]
    for start in ("cuzk-daemon starting", "configuration loaded", "starting cuzk engine"):
        today = [_event(3 * day, start), _event(3 * day + 0.5, "memory budget initialized")]
        events = today + monday
        for cut in range(len(events) + 1):  # read whole, or in two processes
            span, rest = LogSpan(1.0), LogSpan(1.0)
            for ev in events[:cut]:
                span.observe(ev)
            for ev in events[cut:]:
                rest.observe(ev)
            span.observed_after(rest.files)
            assert span.files["cuzk.log"].strays() == []
            assert span.files["cuzk.log"].last_s == 3 * day + 0.5
    span = LogSpan(1.0)
    for ev in [_event(3 * day, "hello"), _event(3 * day + 0.5, "memory budget initialized"),
               *monday]:
        span.observe(ev)
    assert span.files["cuzk.log"].strays() == [3 * day, 3 * day + 0.5]


def test_the_strays_of_both_ends_together_are_fewer_than_the_rest() -> None:
    """The bound "never as many as the rest" held for each end alone: 16 lines 20 days on
    written first, one line of day 10, then 16 lines of day 0 were 32 strays of 33 lines (the
    bulk one line), and three lines far apart two strays of three."""
    day = 86_400.0
    late = [20 * day + i for i in range(16)]
    early = [float(-i) for i in range(16)]
    f = _file(*late, 10 * day, *early)
    assert f.strays() == [] and (f.first_s, f.last_s) == (-15.0, 20 * day + 15)
    assert _file(20 * day, 10 * day, 0.0).strays() == []
    # Both ends' strays together fewer than the rest: all of them.
    bulk = [10 * day + i for i in range(11)]
    assert _file(*late[:3], *bulk, *early[:2]).strays() == sorted(early[:2] + late[:3])
    # Too many together: the most the two ends may give, here the latest 10 of 30 lines.
    f = _file(*late[:10], *bulk, *early[:9])
    assert f.strays() == late[:10] and (f.first_s, f.last_s) == (-8.0, 10 * day + 10)


# --- one jump back is read one way: the line behind, or the lines ahead ----------------------

def test_one_jump_back_makes_the_line_behind_a_stray_not_the_in_order_lines_before_it() -> None:
    """Friday's run, Monday's work in time order days later (no daemon start among it), then
    one line of 2020 last: its jump back marked both it `behind` and every latest line
    `ahead`, so Monday's lines became strays with it and the span ended on Friday. Only the
    2020 line is out of time order with its neighbours: it alone is the stray, read whole or
    in two processes."""
    day = 86_400.0
    friday = [1000.0 + i for i in range(100)]
    monday = [3 * day + i for i in range(5)]
    times = [*friday, *monday, -6 * 365 * day]
    whole = _file(*times)
    assert whole.strays() == [-6 * 365 * day]
    assert (whole.first_s, whole.last_s) == (1000.0, monday[-1])
    assert all(_facts(part) == _facts(whole) for part in _read_in_two_at_every_line(times))
    # Monday's lines written before Friday's (a clock set ahead, then corrected) are strays.
    assert _file(*monday, *friday).strays() == monday


def test_a_weekend_idle_run_with_one_line_of_2020_last_is_this_recordings_log(
        tmp_path: Path) -> None:
    """Friday's run (the log three days back), the recording's own pinned-pool failure on
    Monday, then one line of 2020 last: the report said "not this recording's log: its lines
    (... to 2026-11-27 ...) end 3.0 days before the recording; none of its events is used",
    Monday's two lines named strays with the 2020 one."""
    friday = [_shift_days(line, -3) for line in _pageable_lines()]
    monday = [_line("2026-11-30T09:06:30.000000", "WARN", "cuzk_core::pinned_pool",
                    "cudaHostAlloc failed size_gib=3.882613 cuda_err=2"),
              _line("2026-11-30T09:06:30.002000", "WARN", "cuzk_core::pipeline",
                    "pinned pool checkout FAILED \u2014 falling back to unpinned "
                    "num_constraints=130278869 pool_free=0 pool_total_gib=7.76")]
    last = _line("2020-01-01T00:00:01.000000", "INFO", "cuzk_core::engine", "bye")
    r = _report_with(tmp_path, friday + monday + [last])
    assert not any("not this recording" in w for w in r.warnings)
    [stray] = [w for w in r.warnings if "timed more than a day" in w]
    assert "1 line(s)" in stray and "(2020-01-01 00:00:01 UTC)" in stray
    assert "judged by its other lines (2026-11-27 09:06:26 UTC to 2026-11-30 09:06:30 UTC)" \
        in stray


def test_a_daemons_start_line_from_a_clock_years_ahead_is_counted_after_the_recording(
        tmp_path: Path) -> None:
    """An RTC a few years ahead, cuzk started before NTP: its own start line carries 2031 and
    is written first. Holding a daemon start it is a run of its own, not a stray (what
    docs/logs.md says of "an RTC before NTP"): counted as a line after the recording, the
    file still this recording's, none of its partitions lost."""
    clean = build_report(DATA / "pageable.csv", Config(), [str(DATA / "pageable.log")])
    ahead = [_line("2031-01-01T00:00:01.000000", "INFO", "cuzk_daemon", "cuzk-daemon starting"),
             *_pageable_lines()]
    r = _report_with(tmp_path, ahead)
    assert not any("timed more than a day" in w or "not this recording" in w
                   for w in r.warnings)
    assert any("1 after it (to 2031-01-01 00:00:01 UTC)" in w for w in r.warnings)
    assert r.partitions is not None and clean.partitions is not None
    assert len(r.partitions.partitions) == len(clean.partitions.partitions) > 0
