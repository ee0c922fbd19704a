"""Perfetto export: the JSON obeys the Trace Event format and shows gaps, phases and warnings.

`validate_trace` is written from the Trace Event Format spec (Google, "JSON Object Format"):
every event has a phase and the fields that phase needs; `ts`/`dur` are microseconds; counters
carry numeric args; complete events on one thread nest; async begin/end pair up by (cat, id);
metadata names processes and threads.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from cuzk_fakes import WAITS_ON_SYNTHESIS

from gapwatch.cli import main
from gapwatch.core.models import (
    Gap,
    GpuInfo,
    GpuSample,
    HostSample,
    LogEvent,
    Notice,
    SessionHeader,
)
from gapwatch.cuzk.status import parse_status
from gapwatch.engine.session import default_header
from gapwatch.offline.perfetto import GPU_PID_BASE, PROVER_PID, TraceBuilder
from gapwatch.sinks.recorder import write_recording

DATA = Path(__file__).parent / "data"
PHASES = set("BEXiICbenMsftPOND(),Rc") | {"v", "V"}
METADATA = {"process_name", "process_labels", "process_sort_index", "thread_name",
            "thread_sort_index"}


def _num(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def validate_trace(trace: object) -> list[str]:
    """Every violation of the Trace Event format found in `trace` (empty = valid)."""
    errors: list[str] = []
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        return ["top level must be an object with a traceEvents array"]
    if trace.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        errors.append("displayTimeUnit must be 'ms' or 'ns'")
    slices: dict[tuple[int, int], list[tuple[float, float]]] = {}
    open_async: dict[tuple[str, str], int] = {}
    for i, ev in enumerate(trace["traceEvents"]):
        where = f"event {i} {ev!r:.120}"
        if not isinstance(ev, dict):
            errors.append(f"{where}: not an object")
            continue
        ph = ev.get("ph")
        if ph not in PHASES:
            errors.append(f"{where}: unknown ph")
            continue
        if not isinstance(ev.get("name"), str):
            errors.append(f"{where}: name must be a string")
        if not isinstance(ev.get("pid"), int) or not isinstance(ev.get("tid"), int):
            errors.append(f"{where}: pid and tid must be integers")
        if "args" in ev and not isinstance(ev["args"], dict):
            errors.append(f"{where}: args must be an object")
        if ph == "M":
            if ev.get("name") not in METADATA:
                errors.append(f"{where}: unknown metadata name")
            args = ev.get("args", {})
            if "name" in ev.get("name", "") and not isinstance(args.get("name"), str):
                errors.append(f"{where}: metadata name needs args.name")
            if "sort_index" in ev.get("name", "") and not isinstance(args.get("sort_index"), int):
                errors.append(f"{where}: sort index needs integer args.sort_index")
            continue
        if not _num(ev.get("ts")) or ev["ts"] < 0:
            errors.append(f"{where}: ts must be a number of microseconds >= 0")
            continue
        if ph == "X":
            if not _num(ev.get("dur")) or ev["dur"] < 0:
                errors.append(f"{where}: X needs dur >= 0")
            else:
                slices.setdefault((ev["pid"], ev["tid"]), []).append(
                    (ev["ts"], ev["ts"] + ev["dur"]))
        elif ph == "C":
            args = ev.get("args")
            if not isinstance(args, dict) or not args or not all(_num(v) for v in args.values()):
                errors.append(f"{where}: C needs args with numeric values")
        elif ph in ("i", "I"):
            if ev.get("s", "t") not in ("g", "p", "t"):
                errors.append(f"{where}: instant scope must be g, p or t")
        elif ph in ("b", "e", "n"):
            if "id" not in ev and "id2" not in ev or not isinstance(ev.get("cat"), str):
                errors.append(f"{where}: async events need cat and id")
                continue
            key = (ev["cat"], str(ev.get("id", ev.get("id2"))))
            if ph == "b":
                open_async[key] = open_async.get(key, 0) + 1
            elif ph == "e":
                if open_async.get(key, 0) <= 0:
                    errors.append(f"{where}: async end without begin")
                else:
                    open_async[key] -= 1
    for key, n in open_async.items():
        if n:
            errors.append(f"async {key}: {n} begin(s) without end")
    # Complete events on one thread must nest (a viewer cannot draw partial overlap).
    for thread, spans in slices.items():
        stack: list[float] = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1] <= start:
                stack.pop()
            if stack and end > stack[-1] + 1e-3:
                errors.append(f"thread {thread}: slice {start}..{end} overlaps its parent")
            stack.append(end)
    return errors


def _export(tmp_path: Path, *extra: str) -> dict[str, Any]:
    out = tmp_path / "trace.json"
    code = main(["export", str(DATA / "pageable.csv"), "--format", "perfetto", "--out", str(out),
                 *extra])
    assert code == 0
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def test_the_validator_rejects_what_the_format_forbids() -> None:
    bad = {"traceEvents": [
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": -5},
        {"ph": "C", "name": "c", "pid": 1, "tid": 0, "ts": 1, "args": {"value": "high"}},
        {"ph": "X", "name": "b", "pid": 1, "tid": 2, "ts": 0, "dur": 10},
        {"ph": "X", "name": "c", "pid": 1, "tid": 2, "ts": 5, "dur": 10},
        {"ph": "b", "name": "s", "pid": 1, "tid": 0, "ts": 0, "cat": "x", "id": "1"},
        {"ph": "Q", "name": "?", "pid": 1, "tid": 0, "ts": 0},
        {"ph": "i", "name": "w", "pid": "1", "tid": 0, "ts": 0},
    ]}
    errors = "\n".join(validate_trace(bad))
    for needle in ("dur >= 0", "numeric values", "overlaps its parent", "begin(s) without end",
                   "unknown ph", "pid and tid"):
        assert needle in errors


def test_pageable_trace_exports_a_valid_trace_with_gaps_phases_and_warnings(
        tmp_path: Path) -> None:
    trace = _export(tmp_path, "--log", str(DATA / "pageable.log"))
    assert validate_trace(trace) == []
    events = trace["traceEvents"]
    gpu0 = GPU_PID_BASE + 0
    gaps = [e for e in events if e["ph"] == "X" and e["pid"] == gpu0 and e.get("cat") == "gap"]
    assert [g["name"] for g in gaps] == ["pcie_starved"] * 5
    assert all("H2D" in g["args"]["hint"] for g in gaps)
    assert all(g["dur"] > 300_000 for g in gaps)  # >= min_gap_ms, in microseconds
    counters = {e["name"] for e in events if e["ph"] == "C" and e["pid"] == gpu0}
    assert counters >= {"SM active %", "PCIe RX bytes/s", "PCIe TX bytes/s"}
    assert any(e["ph"] == "C" and e["name"] == "host memory used %" for e in events)
    # The trace spans the recording's ~35 s, so ts really is in microseconds.
    assert 30e6 < max(e["ts"] for e in events if "ts" in e) < 40e6
    # Twelve partitions on the workers' threads, twelve synthesis async slices.
    parts = [e for e in events if e["ph"] == "X" and e["pid"] == PROVER_PID
             and e.get("cat") == "gpu"]
    assert sorted(e["args"]["partition"] for e in parts) == list(range(12))
    assert {e["tid"] for e in parts} == {1000, 1001}
    assert sum(1 for e in events if e["ph"] == "b" and e["cat"] == "synthesis") == 12
    assert any(e["ph"] == "X" and e.get("cat") == "gpu_lock" for e in events)
    warnings = [e for e in events if e["ph"] == "i"]
    assert warnings and all(e["name"] == "unpinned" for e in warnings)
    assert "is_pinned=false" in warnings[0]["args"]["line"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and "name" in e["args"]}
    assert {"GPU 0 (trace)", "gaps", "chaining state", "worker 0 (GPU 0)"} <= names
    states = {e["name"] for e in events if e.get("cat") == "state"}
    assert "BREAKDOWN" in states


def test_a_log_without_its_anchor_line_is_in_the_trace_where_the_report_placed_it(
        tmp_path: Path) -> None:
    """The report places TIMELINE lines by the recorded `/status` uptime when the log's own
    anchor line is not in it; the trace shows the events the report detected with (it parsed
    the log again without that epoch, and those lines were dropped)."""
    t_poll = 1_796_000_100.0
    status = parse_status(json.dumps({**WAITS_ON_SYNTHESIS, "uptime_secs": 100.0}).encode(),
                          "p", 1, t_poll, 2.0)
    rec = tmp_path / "r.jsonl"
    sample = GpuSample(0, 1_000_000_000, t_poll, 100_000_000, 50.0, 50.0, 1.0, 1.0)
    write_recording(rec, default_header("test", [GpuInfo(index=0)], 100.0), [sample, status])
    log = tmp_path / "stderr.log"
    log.write_text("TIMELINE,99000,SYNTH_START,porep-1-0,partition=4\n"
                   "TIMELINE,99800,SYNTH_END,porep-1-0,partition=4,synth_ms=800\n")
    out = tmp_path / "trace.json"
    assert main(["export", str(rec), "--out", str(out), "--log", str(log)]) == 0
    trace = json.loads(out.read_text())
    assert validate_trace(trace) == []
    events = trace["traceEvents"]
    (begin,) = [e for e in events if e["ph"] == "b" and e.get("cat") == "synthesis"]
    assert begin["args"]["partition"] == 4
    # TIMELINE's epoch is the poll time less the uptime (and half the poll's latency): the
    # synthesis began 99 s after it, 0.899 s before the sample's reading began (at its time
    # less its 100 ms interval).
    (sm,) = [e for e in events if e["ph"] == "C" and e["name"] == "SM active %"]
    assert sm["ts"] - begin["ts"] == pytest.approx(
        ((t_poll - 0.1) - (t_poll + 0.001 - 100.0 + 99.0)) * 1e6, abs=1.0)


def test_a_log_of_another_day_is_left_out_of_the_trace_as_the_report_leaves_it_out(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`report` says a `--log` of another day is "not this recording's log" and uses none of
    its events; the export drew them all, the trace's origin 207 days before the recording,
    and said nothing. One rule for both (`LogSpan.used`), and the same line said."""
    t0 = 1_796_000_000.0  # 2026-11-29; tests/data/cuzk-upstream/cuzk.log is of 2026-05-12
    rec = tmp_path / "r.jsonl"
    header = SessionHeader(gapwatch_version="t", host="box", source="test", started_wall_s=t0,
                           started_mono_ns=0, period_ms=100.0, gpus=[GpuInfo(index=0)])
    write_recording(rec, header,
                    [GpuSample(0, i * 100_000_000, t0 + i / 10, 100_000_000, 50.0, 50.0, 1.0,
                               1.0) for i in range(1, 50)])
    log = str(DATA / "cuzk-upstream" / "cuzk.log")
    out = tmp_path / "trace.json"
    assert main(["export", str(rec), "--out", str(out), "--log", log]) == 0
    trace = json.loads(out.read_text())
    assert trace["otherData"]["origin_unix_s"] >= t0 - 1
    assert not any(e.get("pid") == PROVER_PID and e["ph"] in "Xbi"
                   for e in trace["traceEvents"])
    assert main(["report", str(rec), "--log", log]) == 0
    report_said = [ln.strip().removeprefix("- ") for ln in capsys.readouterr().out.splitlines()
                   if "not this recording's log" in ln]
    assert len(report_said) == 1
    assert main(["export", str(rec), "--out", str(out), "--log", log]) == 0
    assert f"gapwatch export: warning: {report_said[0]}" in capsys.readouterr().err.splitlines()


def _gpu_minute(t0: float) -> list[GpuSample]:
    """Five seconds of one GPU's samples from `t0` (10 a second)."""
    return [GpuSample(0, i * 100_000_000, t0 + i / 10, 100_000_000, 50.0, 50.0, 1.0, 1.0)
            for i in range(1, 50)]


def _host(t_ns: int, t_s: float) -> HostSample:
    return HostSample(t_ns, t_s, 10_000_000_000, 50.0, None, None, None, None, None, None,
                      None, None)


def test_a_notice_two_hours_after_a_gpu_is_lost_is_drawn_while_host_samples_go_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A GPU lost while recording (XID 79) stops its samples; the recorder goes on with the
    host's, `/status` and the logs. The trace ended the recording at the last GPU sample, so a
    notice two hours on was left out as "timed far outside the recording ... as no record
    gapwatch writes while recording is" (false), while the report's own warning ends the data
    at the latest GPU or host sample. One end for both (`detect.samples_end_s`)."""
    t0 = 1_796_000_000.0
    rec = tmp_path / "r.jsonl"
    header = SessionHeader(gapwatch_version="t", host="box", source="test", started_wall_s=t0,
                           started_mono_ns=0, period_ms=100.0, gpus=[GpuInfo(index=0)])
    hosts = [_host(i * 10_000_000_000, t0 + i * 10) for i in range(1, 722)]  # 2 h on
    late_s = t0 + 7_205.0
    notice = Notice(int(7_205e9), late_s, "warning", "the prover stopped answering")
    write_recording(rec, header, [*_gpu_minute(t0), *hosts[:-1], notice, hosts[-1]])
    out = tmp_path / "trace.json"
    assert main(["export", str(rec), "--out", str(out)]) == 0
    trace = json.loads(out.read_text())
    err = capsys.readouterr().err
    origin = trace["otherData"]["origin_unix_s"]
    drawn = [e for e in trace["traceEvents"] if e["ph"] == "i"
             and e["args"].get("message") == "the prover stopped answering"]
    assert [origin + e["ts"] / 1e6 for e in drawn] == [pytest.approx(late_s, abs=0.01)]
    assert "far outside the recording" not in err
    assert "7205.1 s before the end of the data" in err  # the report's end: the same


def test_a_recorded_log_backlog_of_months_ago_does_not_move_the_traces_origin(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`record --from-start --log cuzk.log` records the log's backlog, months old; the report
    leaves its partitions and prover events out as "more than 5.0m outside the recording's
    span", but the trace drew its lines: the origin 207 days back, a "monolithic" slice left
    unterminated drawn over the 207 days. The trace keeps the recorded log lines by the
    report's span (`report.report_span`), the others counted and said."""
    t0 = 1_796_000_000.0
    old = t0 - 207 * 86_400
    rec = tmp_path / "r.jsonl"
    header = SessionHeader(gapwatch_version="t", host="box", source="test", started_wall_s=t0,
                           started_mono_ns=0, period_ms=100.0, gpus=[GpuInfo(index=0)])

    def timeline(t: float, name: str, job: str, partition: int | None) -> LogEvent:
        return LogEvent(t, "timeline", "timeline", name, f"TIMELINE,0,{name},{job}",
                        stream="cuzk.log", job_id=job, worker=0, partition=partition, gpu=0)

    backlog = [timeline(old, "GPU_START", "winpost-1", None),
               timeline(old + 1, "GPU_START", "porep-1", 0),
               timeline(old + 2, "GPU_END", "porep-1", 0)]
    now = [timeline(t0 + 1, "GPU_START", "porep-2", 3), timeline(t0 + 2, "GPU_END", "porep-2", 3)]
    write_recording(rec, header, [*backlog, *_gpu_minute(t0)[:5], *now, *_gpu_minute(t0)[5:]])
    out = tmp_path / "trace.json"
    assert main(["export", str(rec), "--out", str(out)]) == 0
    trace = json.loads(out.read_text())
    err = capsys.readouterr().err
    assert trace["otherData"]["origin_unix_s"] >= t0 - 1
    slices = [e["name"] for e in trace["traceEvents"] if e.get("pid") == PROVER_PID
              and e["ph"] == "X"]
    assert slices == ["partition 3"]
    assert ("3 log lines more than 5.0m outside the recording's span (its log's backlog, "
            "recorded from before it): left out of the trace") in err


def test_without_logs_there_are_no_prover_slices(tmp_path: Path) -> None:
    trace = _export(tmp_path)
    assert validate_trace(trace) == []
    assert not any(e.get("pid") == PROVER_PID and e["ph"] in "Xbi" for e in trace["traceEvents"])


def _header() -> SessionHeader:
    return SessionHeader(gapwatch_version="t", host="box", source="sim", started_wall_s=100.0,
                         started_mono_ns=0, period_ms=100.0, gpus=[GpuInfo(index=0, name="H200")])


def _s(t: float, sm: float | None) -> GpuSample:
    return GpuSample(gpu=0, t_mono_ns=int(t * 1e9), t_wall_s=t, interval_ns=100_000_000,
                     sm_active_pct=sm, gpu_util_pct=None, pcie_rx_bytes_per_s=1e9,
                     pcie_tx_bytes_per_s=None)


def _gap(gap_id: int, start: float, end: float | None, retracted: bool = False) -> Gap:
    return Gap(gap_id=gap_id, gpu=0, kind="host_stall", start_mono_ns=0, start_s=start,
               end_mono_ns=None, end_s=end, duration_s=(end or start) - start,
               pcie_rx_bytes_per_s=None, pcie_tx_bytes_per_s=None, link_bytes_per_s=None,
               hint="quiet", retracted=retracted)


def _log(t: float, name: str, **kw: Any) -> LogEvent:
    return LogEvent(t_wall_s=t, time_source="line", kind="timeline", name=name, raw=name,
                    job_id="j", **kw)


def test_missing_readings_are_no_data_slices_not_counter_values() -> None:
    b = TraceBuilder(_header())
    b.extend([_s(100.1, 50.0), _s(100.2, None), _s(100.3, None), _s(100.4, 60.0)])
    trace = b.trace()
    assert validate_trace(trace) == []
    sm = [e["args"]["value"] for e in trace["traceEvents"] if e.get("name") == "SM active %"]
    assert sm == [50.0, 60.0]
    assert not any(e.get("name") == "GPU util %" for e in trace["traceEvents"])  # all None
    (hole,) = [e for e in trace["traceEvents"] if e.get("name") == "no SM data"]
    assert hole["dur"] == pytest.approx(200_000, abs=1)  # 100.1 .. 100.3 (interval starts)


def test_open_gaps_run_to_the_end_and_retracted_gaps_are_left_out() -> None:
    b = TraceBuilder(_header())
    b.extend([_s(100.1, 50.0), _s(105.0, 0.0)])
    b.extend([_gap(1, 101.0, 102.0), _gap(2, 103.0, None), _gap(3, 104.0, 104.5, retracted=True)])
    events = b.trace()["traceEvents"]
    gaps = sorted((e for e in events if e.get("cat") == "gap"), key=lambda e: e["ts"])
    assert [g["args"]["gap_id"] for g in gaps] == [1, 2]
    assert gaps[1]["args"]["open"] is True
    assert gaps[1]["ts"] + gaps[1]["dur"] == pytest.approx(5.0e6)  # to the last sample (105.0)


def test_phases_pair_by_job_worker_and_partition_and_strays_are_counted() -> None:
    b = TraceBuilder(_header())
    b.extend([
        _log(100.0, "GPU_START", worker=0, partition=1),
        _log(100.5, "GPU_START", worker=1, partition=2),
        _log(101.0, "GPU_END", worker=0, partition=1),
        _log(101.2, "GPU_END", worker=0, partition=9),  # never started
        _log(101.5, "SYNTH_START", partition=3),  # never ends: drawn to the end, marked
    ])
    trace = b.trace()
    assert validate_trace(trace) == []
    assert b.unmatched == 1
    slices = {(e["tid"], e["name"]): e for e in trace["traceEvents"] if e.get("cat") == "gpu"}
    assert slices[(1000, "partition 1")]["dur"] == pytest.approx(1.0e6)
    assert slices[(1001, "partition 2")]["args"]["unterminated"] is True
    synth = [e for e in trace["traceEvents"] if e.get("cat") == "synthesis"]
    assert [e["ph"] for e in synth] == ["b", "e"]


def test_export_to_stdout_and_bad_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    buf = io.BytesIO()
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(buf))
    assert main(["export", str(DATA / "pageable.csv"), "--out", "-"]) == 0
    assert validate_trace(json.loads(buf.getvalue())) == []
    monkeypatch.undo()
    assert main(["export", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "x")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    assert main(["export", str(DATA / "pageable.csv"), "--out", str(tmp_path / "t.json"),
                 "--log", str(tmp_path / "missing.log")]) == 2
    assert "missing.log" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # no half-written output left behind


def _lock(t: float, held: int, start: float) -> LogEvent:
    """A recorded lock region (`cuzk_partition`), its busy span placed by `held` as it was."""
    return LogEvent(t_wall_s=t, time_source="line", kind="cuzk_partition", name="gpu_lock",
                    raw="", job_id="j", worker=0, partition=1,
                    fields={"mutex_held_ms": held, "gpu_busy_start_s": start,
                            "gpu_busy_end_s": t})


def test_a_lock_region_placed_by_a_duration_no_step_takes_draws_no_slice() -> None:
    """A recording's lock event placed by `mutex_held_ms=99999999999999999` drew a slice from
    1e14 s before the recording (`log_lines.busy_span`: the partition table's rule too)."""
    b = TraceBuilder(_header())
    b.extend([_s(100.1, 50.0), _lock(101.0, 400, 100.6),
              _lock(102.0, 99999999999999999, 102.0 - 1e14), _s(103.0, 60.0)])
    trace = b.trace()
    assert validate_trace(trace) == []
    locks = [e for e in trace["traceEvents"] if e.get("cat") == "gpu_lock"]
    assert [(e["ts"], e["dur"]) for e in locks] == [
        (pytest.approx(0.6e6), pytest.approx(0.4e6))]
