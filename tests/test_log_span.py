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
    # is one the recording holds, counted once (gapwatch.logs.once), and that is said.
    assert [w.split(" events of ")[1].split(" were already")[0] for w in r.warnings
            if " events of " in w] == logs
    assert r.advice.advice and r.advice.advice[0].setting == "[memory] safety_margin"
