"""gapwatch never writes through a link it did not make: a planted symbolic link where a recording
or an export goes is refused or replaced itself, its target never touched; temporaries are new
files of random names (gapwatch.sinks.output_file)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from faults import records_of

from evaluation.simulate import simulate
from gapwatch.cli import main
from gapwatch.sinks.output_file import OutputFile, OutputRefused, check_output
from gapwatch.sinks.recorder import write_recording

SIM = ["--source", "sim:chained", "--speed", "0", "--duration", "2", "--quiet"]
SECRET = b"the victim's own data\n"


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    victim.write_bytes(SECRET)
    return victim


def test_record_force_replaces_a_planted_link_itself_and_never_its_target(
        tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    planted = tmp_path / "planted.jsonl"
    planted.symlink_to(victim)
    assert main(["record", *SIM, "--out", str(planted), "--force"]) == 0
    assert victim.read_bytes() == SECRET  # used to be truncated and overwritten
    assert not planted.is_symlink() and records_of(planted)


def test_a_link_where_the_recording_goes_is_refused_without_force_naming_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    victim = _victim(tmp_path)
    planted = tmp_path / "planted.jsonl"
    planted.symlink_to(victim)
    assert main(["record", *SIM, "--out", str(planted)]) == 2
    err = capsys.readouterr().err
    assert "is a symbolic link" in err and str(victim) in err and "--force" in err
    assert victim.read_bytes() == SECRET and planted.is_symlink()


def test_rotate_passes_over_a_dangling_link(tmp_path: Path) -> None:
    out = tmp_path / "gw.jsonl"
    out.write_bytes(b"")
    (tmp_path / "gw.1.jsonl").symlink_to(tmp_path / "nowhere")
    plan = check_output(out, "rotate")
    assert plan.path == tmp_path / "gw.2.jsonl"
    assert not (tmp_path / "nowhere").exists()


def test_a_link_planted_after_the_checks_is_never_written_through(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    new = tmp_path / "new.jsonl"
    plan = check_output(new)  # nothing there yet
    new.symlink_to(victim)
    with pytest.raises(OutputRefused, match="appeared while gapwatch was starting"):
        OutputFile(plan)
    existing = tmp_path / "old.jsonl"
    existing.write_bytes(b"old\n")
    plan = check_output(existing, "replace")  # a regular file, to be truncated in place
    existing.unlink()
    existing.symlink_to(victim)
    with pytest.raises(OutputRefused, match="became a symbolic link"):
        OutputFile(plan)
    assert victim.read_bytes() == SECRET


def _recording(tmp_path: Path) -> Path:
    sim = simulate("chained", seed=1, duration_s=2)
    path = tmp_path / "r.jsonl"
    write_recording(path, sim.header, sim.records)
    return path


@pytest.mark.parametrize("fmt,name", [("csv", "out.csv"), ("perfetto", "out.trace.json")])
def test_export_never_writes_through_a_planted_part_file_or_a_link_at_its_output(
        tmp_path: Path, fmt: str, name: str) -> None:
    rec = _recording(tmp_path)
    victim = _victim(tmp_path)
    out = tmp_path / name
    (tmp_path / f"{name}.part").symlink_to(victim)  # the temporary's old, guessable name
    assert main(["export", str(rec), "--format", fmt, "--out", str(out)]) == 0
    assert victim.read_bytes() == SECRET and out.stat().st_size > 0
    out.unlink()
    out.symlink_to(victim)  # the output itself a link: the link is replaced
    assert main(["export", str(rec), "--format", fmt, "--out", str(out)]) == 0
    assert victim.read_bytes() == SECRET and not out.is_symlink()
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(["r.jsonl", "victim", name, f"{name}.part"])  # no temporary left
    assert oct(out.stat().st_mode & 0o777) == oct(0o644)


def test_a_failed_export_leaves_no_temporary(tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    assert main(["export", str(tmp_path / "missing.jsonl"), "--format", "csv",
                 "--out", str(out)]) == 2
    assert os.listdir(tmp_path) == []
