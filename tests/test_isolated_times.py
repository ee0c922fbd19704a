"""An isolated absurd time is a bad record, not a cliff (issue 29, item 8): one GPU sample an
hour ahead, or at `t_mono_ns` 2^63-1, made every later sample of its GPU "out of order" (89 %
of the data after it dropped). A real step of both clocks (a suspended box) is kept."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from shared_files import sim_recording_bytes

from gapwatch.cli import main
from gapwatch.config import Config
from gapwatch.offline.report import build_report
from gapwatch.offline.report_parallel import detect_parallel
from gapwatch.sources import isolated_times
from gapwatch.sources.files import read_any

HOUR_NS = 3600 * 10**9


def _lines(samples_only: bool = False) -> list[bytes]:
    return sim_recording_bytes(seed=2, duration_s=120.0, gpus=2,
                               samples_only=samples_only).splitlines(keepends=True)


def _with(tmp_path: Path, name: str, change: Callable[[dict[str, Any]], None] | None,
          nth: int = 100, samples_only: bool = False, every_after: bool = False) -> Path:
    """The simulated recording with the `nth` sample of GPU 0 changed by `change` (and every
    one of GPU 0's after it too when `every_after`)."""
    lines = _lines(samples_only)
    gpu0 = [i for i, line in enumerate(lines) if line.startswith(b'{"type":"gpu","gpu":0,')]
    for i in (gpu0[nth:] if every_after else gpu0[nth:nth + 1]):
        if change is not None:
            doc = msgspec.json.decode(lines[i])
            change(doc)
            lines[i] = msgspec.json.encode(doc) + b"\n"
    path = tmp_path / name
    path.write_bytes(b"".join(lines))
    return path


def _mono_max(d: dict[str, Any]) -> None:
    d["t_mono_ns"] = 2**63 - 1


def _hour_ahead(d: dict[str, Any]) -> None:
    d["t_mono_ns"] += HOUR_NS
    d["t_wall_s"] += 3600.0


@pytest.mark.parametrize("change", [_mono_max, _hour_ahead])
def test_one_sample_with_an_absurd_time_is_a_bad_record_not_a_cliff(
    tmp_path: Path, change: Callable[[dict[str, Any]], None],
) -> None:
    clean = build_report(_with(tmp_path, "clean.jsonl", None), Config(), workers=1)
    path = _with(tmp_path, "absurd.jsonl", change)
    got = build_report(path, Config(), workers=1)
    assert got.counters == {**clean.counters, "bad_records": 1}
    assert [t.samples for t in got.totals] == [t.samples - (t.gpu == 0) for t in clean.totals]
    assert len(got.gaps) == len(clean.gaps) and not got.warnings
    assert "bad record (an absurd time: t_mono_ns" in got.problems[0]


def test_the_split_report_drops_the_same_absurd_time(tmp_path: Path) -> None:
    path = _with(tmp_path, "absurd.jsonl", _mono_max, samples_only=True)
    assert detect_parallel(path, Config(), 2) is not None  # split, not fallen back to one
    one, split = (build_report(path, Config(), workers=n) for n in (1, 2))
    assert one.gaps == split.gaps and one.counters == split.counters
    assert one.counters["bad_records"] == 1


@pytest.mark.parametrize("command", [["replay", "--headless", "--speed", "0"],
                                     ["export", "--format", "csv"]])
def test_replay_and_export_drop_the_absurd_time_too(
    tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str],
) -> None:
    path = _with(tmp_path, "absurd.jsonl", _mono_max)
    extra = ["--out", str(tmp_path / "out.csv")] if command[0] == "export" else []
    assert main([command[0], str(path), *command[1:], *extra]) == 0
    if command[0] == "export":
        assert "9223372036854775807" not in (tmp_path / "out.csv").read_text()
    else:
        assert "out of time order" not in capsys.readouterr().err


def test_a_real_step_of_both_clocks_is_kept(tmp_path: Path) -> None:
    """A box suspended for an hour: every sample after the step goes on from it."""
    path = _with(tmp_path, "paused.jsonl", _hour_ahead, every_after=True)
    rec = read_any(path)
    n = sum(1 for r in rec.records if r.type == "gpu")
    assert n == 2400 and "bad_records" not in rec.counters


def test_a_gpu_silent_after_an_absurd_time_holds_no_more_than_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The next sample never comes: what was held is handed on as read, the step kept."""
    monkeypatch.setattr(isolated_times, "MAX_HELD", 50)
    lines = _lines()
    gpu0 = [i for i, line in enumerate(lines) if line.startswith(b'{"type":"gpu","gpu":0,')]
    cut = gpu0[100]
    doc = msgspec.json.decode(lines[cut])
    _mono_max(doc)
    kept = [*lines[:cut], msgspec.json.encode(doc) + b"\n",
            *(line for line in lines[cut + 1:] if not line.startswith(b'{"type":"gpu","gpu":0,'))]
    path = tmp_path / "silent.jsonl"
    path.write_bytes(b"".join(kept))
    rec = read_any(path)
    assert sum(1 for _ in rec.records) == len(kept) - 1
    assert "bad_records" not in rec.counters
