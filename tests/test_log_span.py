"""A `--log` that does not belong to the recording: said in one line with how far apart, and its
events not used for causes, advice or partition figures (a log from two days before once switched
the advice to a pinned-pool setting, citing a line of the other day)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gapwatch.config import Config
from gapwatch.offline.report import build_report, to_json

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
    # Of its span nothing; only that the stderr's C++ lines cannot be placed beside the
    # stdout's (tests/test_two_stream_logs.py).
    assert [w.split(":")[0] for w in r.warnings if w.startswith("--log")] == [f"--log {logs[1]}"]
    assert not any("span" in w or "not this recording" in w for w in r.warnings)
    # The H200 run was recorded with `record --log` of these very files: each of their lines
    # is one the recording holds, counted once (gapwatch.logs.once), and that is said, as a
    # note (`report.said_of_input`): nothing of the data is wrong.
    assert [n.split(" events of ")[1].split(" were already")[0] for n in r.notes] == logs
    assert not any(" events of " in w for w in r.warnings)
    assert r.advice.advice and r.advice.advice[0].setting == "[memory] safety_margin"


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
