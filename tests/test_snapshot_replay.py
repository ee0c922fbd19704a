"""A snapshot's recording replays and reports as the BREAKDOWN it was taken on.

docs/dashboard.md says of a snapshot's `recording.jsonl.gz`: "`gapwatch replay
recording.jsonl.gz` shows it again". The snapshot the demo takes the moment GPU0 enters
BREAKDOWN (`sim:pageable` with its simulated copy trace: one starved gap, still open, whose
copies were pageable) replayed as `states entered: CHAINED x1, GAPS x1, IDLE x2` and reported
`Chaining breakdowns: 0`: its file held no copy of the copy trace, so the pageable evidence the
BREAKDOWN was entered on could not come back. The file an operator attaches to a ticket showed
a healthy GPU. Taken here as the dashboard takes it (the store read under the session's lock,
right after the state was set), written by `write_snapshot`, then replayed and reported
through the command line, as a user runs them."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import msgspec.structs
import pytest
from sim_recordings import at_first_breakdown, report_of

from gapwatch.cli import main
from gapwatch.commands.demo import demo_config
from gapwatch.config import build_config
from gapwatch.core import fmt
from gapwatch.core.models import CopyRecord, Gap
from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.sinks.recorder import write_recording
from gapwatch.sinks.snapshot import RECORDING_NAME, write_snapshot
from gapwatch.sources.recording import read_recording


@dataclass(frozen=True)
class Taken:
    """The snapshot folder written when GPU0 entered BREAKDOWN, and the store it was of."""

    folder: Path
    snap: StoreSnapshot

    @property
    def recording(self) -> Path:
        return self.folder / RECORDING_NAME

    def open_gap(self) -> Gap:
        (gap,) = [g for g in self.snap.gaps if g.is_open]
        return gap


@pytest.fixture(scope="module")
def taken(tmp_path_factory: pytest.TempPathFactory) -> Taken:
    config = demo_config(build_config({"snapshot": {"auto": False}}))
    rt, snap = at_first_breakdown(config)
    folder = write_snapshot(tmp_path_factory.mktemp("snap"), snap, rt.header, config,
                            t_wall_s=snap.states[0].t_wall_s,
                            reason="automatically: GPU0 entered BREAKDOWN")
    return Taken(folder, snap)


def _order(c: CopyRecord) -> tuple[float, int]:
    return c.end_wall_s, c.correlation_id


def _replayed_err(recording: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """`gapwatch replay FILE --headless`: what it said (standard error)."""
    capsys.readouterr()
    assert main(["replay", str(recording), "--headless"]) == 0
    return capsys.readouterr().err


def _replayed(recording: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """`gapwatch replay FILE --headless`: its closing line."""
    closing = re.search(r"^gapwatch replay: gaps: .*$", _replayed_err(recording, capsys), re.M)
    assert closing is not None
    return closing.group(0)


def test_the_snapshot_is_taken_on_breakdown_with_its_gap_still_open(taken: Taken) -> None:
    """The set-up the others rest on: the state was entered on the one starved gap, open, whose
    copies were pageable (copy trace)."""
    assert taken.snap.states[0].state == "BREAKDOWN"
    assert taken.snap.states[0].reason.startswith("1 pcie_starved gap in the last 30 s")
    assert "its copies from pageable memory (copy trace)" in taken.snap.states[0].reason
    assert taken.open_gap().kind == "pcie_starved"


def test_the_snapshots_recording_holds_the_copies_of_its_span_as_record_writes_them(
        taken: Taken) -> None:
    """A `copy` record each, as `record --copytrace` writes them: the file held none."""
    read = read_recording(taken.recording)
    copies = [r for r in read.records if isinstance(r, CopyRecord)]
    # The session is shorter than `snapshot.history_s`: every copy the store held.
    assert taken.snap.copies
    assert sorted(copies, key=_order) == sorted(taken.snap.copies, key=_order)
    # Among them the pageable ones of the open gap's evidence window (its memory kind's).
    evidence = taken.open_gap().copies
    assert evidence is not None and evidence.memory_kind == "pageable"
    since_s = evidence.window_start_s
    assert isinstance(since_s, float)
    assert any(c.host_kind == "pageable" and c.end_wall_s >= since_s for c in copies)


def test_the_snapshots_replay_enters_the_breakdown_it_was_taken_on(
        taken: Taken, capsys: pytest.CaptureFixture[str]) -> None:
    """It said `states entered: CHAINED x1, GAPS x1, IDLE x2`."""
    closing = _replayed(taken.recording, capsys)
    assert "BREAKDOWN x1" in closing, closing


def test_the_snapshots_report_has_the_breakdown_on_its_pageable_copies(taken: Taken) -> None:
    """It said `Chaining breakdowns: 0`, and its chaining figure came from PCIe and SM
    activity."""
    report = report_of(taken.recording)
    assert "Chaining breakdowns: 1" in report, report
    period = report.split("Chaining breakdowns: 1", 1)[1].split("\n\n", 1)[0]
    assert ("entered on 1 pcie_starved gap in the last 30 s, its copies from pageable memory "
            "(copy trace)") in period
    assert re.search(r"GPU 0: \d+ % of [\d.]+ s of copies \(from the copy trace\)", report)


def _cut_words(gap: Gap) -> str:
    """What replay and report say of the gap still open when the snapshot was taken."""
    return (f"the pcie_starved gap from {fmt.clock(gap.start_s, millis=True)} still open at "
            f"the snapshot's end, idle {fmt.duration(gap.duration_s)} so far: cut there")


def test_the_snapshots_report_says_the_gap_still_open_when_it_was_taken_cut_by_its_end(
        taken: Taken) -> None:
    """It said `no gaps` and nothing more: the detector retracts a gap open at the end of the
    data (idle after the last busy period is no gap), and a snapshot's end is no end of the
    session's data. Said under the GPU as a window's end that cuts an idle stretch is, with
    the gap's kind, start and idle time so far as the live detector had them."""
    report = report_of(taken.recording)
    assert (f"a snapshot's recording, taken at {fmt.clock(taken.snap.states[0].t_wall_s, millis=True)} "
            "while the session went on: its end cuts the data there") in report
    gpu = report.split("GPUs (busy", 1)[1].split("\n\n", 1)[0].splitlines()
    assert "no gaps" in gpu[1]
    assert gpu[2].startswith(f"         {_cut_words(taken.open_gap())}")


def test_the_snapshots_headless_replay_says_the_gap_still_open_cut_by_its_end(
        taken: Taken, capsys: pytest.CaptureFixture[str]) -> None:
    err = _replayed_err(taken.recording, capsys)
    said = [line for line in err.splitlines() if line.startswith("gapwatch replay: GPU0: ")]
    assert len(said) == 1, err
    assert _cut_words(taken.open_gap()) in said[0]


def test_a_recording_that_ends_on_an_open_gap_says_nothing_of_it(
        taken: Taken, tmp_path: Path) -> None:
    """The rule the snapshot's end is told apart from: the same records, written as a
    recording of its own (no snapshot time in its header: the data ended there), report the
    gap retracted, nothing said (as `record` stopped mid-gap reports it)."""
    read = read_recording(taken.recording)
    assert read.header.snapshot_wall_s == taken.snap.states[0].t_wall_s
    plain = tmp_path / "plain.jsonl.gz"
    write_recording(plain, msgspec.structs.replace(read.header, snapshot_wall_s=None),
                    list(read.records))
    report = report_of(plain)
    assert "Chaining breakdowns: 1" in report
    assert "a snapshot's recording" not in report
    assert "still open at the snapshot's end" not in report


def _breakdown_lines(report: str) -> list[str]:
    return report.split("Chaining breakdowns: 1\n", 1)[1].split("\n\n", 1)[0].splitlines()


def test_a_breakdown_entered_as_the_snapshot_was_taken_is_said_at_its_end_not_as_a_0_s_period(
        taken: Taken) -> None:
    """verify9: the demo's snapshot reported `GPU 0: 22:28:24.327 - 22:28:24.327 (0.0 s): no
    gaps (0.0 s idle) in the period, up to 0 in a 30 s window; entered on 1 pcie_starved gap`:
    the snapshot is taken the moment GPU0 enters BREAKDOWN, and its end cuts the gap it was
    entered on (retracted, the end-of-data IDLE at the same moment). Said as what it is: entered
    at the snapshot's end, on that gap still open then, as the GPU's line says the cut."""
    entered = taken.snap.states[0]
    (line,) = _breakdown_lines(report_of(taken.recording))
    gap = taken.open_gap()
    assert line == (
        f"  GPU 0: at the snapshot's end, {fmt.clock(entered.t_wall_s, millis=True)} (no period "
        f"of it read): entered on {entered.reason}; the pcie_starved gap from "
        f"{fmt.clock(gap.start_s, millis=True)} still open then, cut there (said under the GPU)")
    assert "(0.0 s)" not in line and "no gaps" not in line
    (said,) = json.loads(report_of(taken.recording, "--json"))["breakdowns"]
    assert said["entered_at_end"] is True and said["duration_s"] == 0.0


def test_a_breakdown_entered_at_a_recordings_last_reading_is_said_at_its_end(
        taken: Taken, tmp_path: Path) -> None:
    """The same records as a recording of its own (its end no cut): entered at the recording's
    end, no period of it read; the gap open there said nowhere, as under the GPU."""
    read = read_recording(taken.recording)
    plain = tmp_path / "plain.jsonl.gz"
    write_recording(plain, msgspec.structs.replace(read.header, snapshot_wall_s=None),
                    list(read.records))
    (line,) = _breakdown_lines(report_of(plain))
    entered = taken.snap.states[0]
    assert line == (f"  GPU 0: at the recording's end, "
                    f"{fmt.clock(entered.t_wall_s, millis=True)} (no period of it read): "
                    f"entered on {entered.reason}")
