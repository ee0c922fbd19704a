"""A disk budget for weeks of recording: segments by size or age, the newest `keep` kept, each a
whole gzip file read on its own; a folder or a glob of them read as one session by `report`,
`replay` and `export`; what carries no information left out while every record stays
replayable (gapwatch.sinks.recorder, gapwatch.sinks.output_file, gapwatch.sources.recording_set).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import msgspec
import pytest
from faults import records_of

from evaluation.simulate import simulate
from gapwatch.cli import main
from gapwatch.core.models import Gap, GpuSample, ProverPartition, ProverStatus, ProverWorker
from gapwatch.sinks.recorder import Recorder, write_recording
from gapwatch.sinks.segments import check_segments, segments_of
from gapwatch.sources.files import read_any

SIM = ["--source", "sim:pageable", "--speed", "0", "--quiet"]


def _gaps(capsys: pytest.CaptureFixture[str], target: str) -> list[tuple[float, float, str]]:
    """The gaps `report` finds, as (start from the first, duration, kind): two runs of the
    seeded simulator give the same data at different times."""
    assert main(["report", "--json", target]) == 0
    gaps = msgspec.json.decode(capsys.readouterr().out)["gaps"]
    t0 = gaps[0]["start_s"] if gaps else 0.0
    return [(round(g["start_s"] - t0, 3), round(g["duration_s"], 3), g["kind"]) for g in gaps]


def test_a_recording_in_segments_rotates_by_size_and_keeps_the_newest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "gw.jsonl"  # plain: 1 MiB is a minute of data
    assert main(["record", *SIM, "--duration", "200", "--out", str(out),
                 "--rotate-size", "1MiB", "--keep", "2"]) == 0
    err = capsys.readouterr().err
    segments = segments_of(out)
    # ~1 MiB a simulated minute: 4 segments or 5 (the data's times, and so its bytes, differ
    # run to run a little, and the total sits near a segment's edge); the newest two kept.
    last = segments[-1][0]
    assert [n for n, _ in segments] == [last - 1, last] and last >= 4 and not out.exists()
    assert f"segment {last}; {last} written by this run, {last - 2} older removed to keep the " \
           "budget" in err
    for _, path in segments:
        assert path.read_bytes().startswith(b'{"type":"header"')  # each reads on its own
        records_of(path)
    assert segments[0][1].stat().st_size < (1 << 20) + (256 << 10)  # passed by one write


def test_segments_report_replay_and_export_as_one_session(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whole = tmp_path / "whole.jsonl"
    seg = tmp_path / "seg"
    seg.mkdir()
    assert main(["record", *SIM, "--duration", "120", "--out", str(whole)]) == 0
    assert main(["record", *SIM, "--duration", "120", "--out", str(seg / "gw.jsonl"),
                 "--rotate-size", "1MiB"]) == 0
    capsys.readouterr()
    assert len(segments_of(seg / "gw.jsonl")) >= 2
    one = _gaps(capsys, str(whole))
    assert one and _gaps(capsys, str(seg)) == one  # the folder ...
    assert _gaps(capsys, str(seg / "gw.*.jsonl")) == one  # ... or a glob: one session
    assert main(["replay", "--headless", "--speed", "0", str(seg)]) == 0
    assert f"pcie_starved={len(one)}" in capsys.readouterr().err
    csv = tmp_path / "seg.csv"
    assert main(["export", str(seg), "--format", "csv", "--out", str(csv)]) == 0
    assert _gaps(capsys, str(csv)) == one


def test_a_later_run_continues_the_numbering_and_the_budget_counts_earlier_runs(
        tmp_path: Path) -> None:
    out = tmp_path / "gw.jsonl"
    assert main(["record", *SIM, "--duration", "20", "--out", str(out),
                 "--rotate-size", "1MiB", "--keep", "2"]) == 0
    first = segments_of(out)
    assert [n for n, _ in first] == [1]
    plan = check_segments(out, 1 << 20, None, 2)
    assert plan.first == 2  # never overwritten: the next run starts after the last segment
    for _ in range(2):
        assert main(["record", *SIM, "--duration", "20", "--out", str(out),
                     "--rotate-size", "1MiB", "--keep", "2"]) == 0
    assert [n for n, _ in segments_of(out)] == [2, 3]


def test_runs_on_different_clocks_are_joined_on_the_first_runs_clock(tmp_path: Path) -> None:
    # Two runs whose monotonic clocks both start at the same value, two hours apart on the
    # wall: a reboot in between. Joined as they are, the second run's samples were "out of
    # time order" and dropped.
    a = simulate("pageable", seed=1, duration_s=60, start_wall_s=1_796_000_000.0)
    b = simulate("pageable", seed=2, duration_s=60, start_wall_s=1_796_007_200.0)
    write_recording(tmp_path / "gw.000001.jsonl.gz", a.header, a.records)
    write_recording(tmp_path / "gw.000002.jsonl.gz", b.header, b.records)
    rec = read_any(tmp_path)
    samples = [r for r in rec.records if isinstance(r, GpuSample)]
    assert rec.runs == 2 and len(rec.files) == 2
    times = [s.t_mono_ns for s in samples]
    assert times == sorted(times) and len(samples) == 1200
    # The second run sits where its wall clock says, two hours on.
    assert (times[600] - times[0]) / 1e9 == pytest.approx(7200.0, abs=0.2)
    report = read_any(tmp_path)
    assert report.header.started_wall_s == a.header.started_wall_s


def test_a_folder_with_a_file_that_is_not_a_recording_reads_the_rest_and_says_so(
        tmp_path: Path) -> None:
    sim = simulate("chained", seed=1, duration_s=5)
    write_recording(tmp_path / "gw.000001.jsonl.gz", sim.header, sim.records)
    (tmp_path / "notes.jsonl").write_text("not json\n")
    rec = read_any(tmp_path)
    assert list(rec.records) == list(sim.records)
    assert rec.counters["not_a_recording"] == 1 and "notes.jsonl" in rec.problems[0]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(Exception, match="no gapwatch recording in it"):
        read_any(empty)


def test_segments_rotate_by_age(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0]
    monkeypatch.setattr("gapwatch.sinks.recorder.time.monotonic_ns", lambda: now[0])
    sim = simulate("chained", seed=1, duration_s=30)
    rec = Recorder(check_segments(tmp_path / "gw.jsonl.gz", None, 3600.0, 0))
    rec.on_header(sim.header)
    for i, r in enumerate(sim.records):
        now[0] = i * 3 * 3600 * 10**9 // len(sim.records)  # three hours of records
        rec.on_record(r)
    rec.close()
    files = segments_of(tmp_path / "gw.jsonl.gz")
    assert len(files) == 3
    for _, path in files:
        with gzip.open(path) as fh:  # a whole gzip file, its own header first
            assert fh.readline().startswith(b'{"type":"header"')
    # Whole (no "ends early", no half line), and together every record.
    assert sum(len(records_of(p)) for _, p in files) == len(sim.records)


def _status(t: float, busy_s: float | None = None, state: str = "idle") -> ProverStatus:
    return ProverStatus(
        "127.0.0.1:9821", int(t * 1e9), 1_796_000_000.0 + t, 1.5, 100.0 + t,
        {"pending": 0, "synthesizing": 0, "synth_done": 0, "gpu": 0, "done": 10, "failed": 0},
        [ProverWorker(0, 0, state, None, None, busy_s)], 0, 18, 0, 1, 10, 0,
        [ProverPartition("porep-1", i, "done", 2000, 3000) for i in range(10)])


def test_an_unchanged_prover_snapshot_is_a_marker_and_reads_back_whole(tmp_path: Path) -> None:
    # An idle prover answers the same every second: kilobytes a second, told once.
    snaps = [_status(t) for t in range(60)] + [_status(60, 1.0, "proving")] + \
        [_status(t) for t in range(61, 70)]
    path = tmp_path / "r.jsonl"
    sim = simulate("chained", seed=1, duration_s=1)
    write_recording(path, sim.header, snaps)
    lines = path.read_bytes().splitlines()[1:]
    full = [ln for ln in lines if ln.startswith(b'{"type":"prover",')]
    assert len(full) == 3  # the first, the one that changed, the one after it
    assert sum(map(len, lines)) < len(full[0]) * 10
    assert list(read_any(path).records) == snaps  # every snapshot, with its own times


def test_a_marker_without_its_snapshot_is_a_bad_record(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    sim = simulate("chained", seed=1, duration_s=1)
    write_recording(path, sim.header, [_status(0), _status(1)])
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[2])  # the full snapshot cut out
    rec = read_any(path)
    assert list(rec.records) == [] and rec.counters["bad_records"] == 1
    assert "with none before it" in rec.problems[0]


def test_only_the_final_version_of_each_gap_is_recorded(tmp_path: Path) -> None:
    from gapwatch.config import Config
    from gapwatch.core.detector import GapDetector

    sim = simulate("pageable", seed=1, duration_s=60,
                   detector=GapDetector(Config().detector, [], period_s=0.1))
    versions = [r for r in sim.records if isinstance(r, Gap)]
    assert any(g.is_open for g in versions)
    path = tmp_path / "r.jsonl"
    write_recording(path, sim.header, sim.records)
    recorded = [r for r in read_any(path).records if isinstance(r, Gap)]
    assert recorded and not any(g.is_open for g in recorded)
    assert len({g.gap_id for g in recorded}) == len(recorded)  # one version each
    assert {g.gap_id for g in recorded} == {g.gap_id for g in versions if not g.is_open}


@pytest.mark.parametrize("flags,said", [
    (["--keep", "3"], "--keep goes with --rotate-size or --rotate-age"),
    (["--rotate-size", "1MiB", "--force"], "--force does not apply to a recording in segments"),
])
def test_budget_flags_that_cannot_work_together_are_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], said: str) -> None:
    assert main(["record", *SIM, "--duration", "1", "--out", str(tmp_path / "gw.jsonl.gz"),
                 *flags]) == 2
    assert said in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("flag,value", [("--rotate-size", "10KiB"), ("--rotate-size", "1GB!"),
                                        ("--rotate-age", "10s"), ("--keep", "0")])
def test_budget_flags_out_of_range_are_refused_by_argparse(
        tmp_path: Path, flag: str, value: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["record", *SIM, "--duration", "1", "--out", str(tmp_path / "g.jsonl"), flag,
              value])
    assert exc.value.code == 2


def test_a_marker_written_with_spaces_by_another_json_writer_still_reads_back(
        tmp_path: Path) -> None:
    """A recording edited by hand and saved by a JSON writer that puts a space after each
    colon: every unchanged-snapshot marker was a bad record (matched by the recorder's exact
    bytes), and each snapshot it stood for was lost."""
    import json

    path = tmp_path / "r.jsonl"
    sim = simulate("chained", seed=1, duration_s=1)
    snaps = [_status(0), _status(1), _status(2)]
    write_recording(path, sim.header, snaps)
    lines = path.read_bytes().splitlines()
    spaced = [json.dumps(json.loads(ln)).encode() for ln in lines]  # ", " and ": "
    assert spaced[2].startswith(b'{"type": "prover_same"')
    path.write_bytes(b"\n".join(spaced) + b"\n")
    rec = read_any(path)
    assert list(rec.records) == snaps and not rec.counters.get("bad_records")
