"""An existing recording is never lost: refused unless `--force` (or `--rotate` to a new name),
one writer per file (a lock), and every startup check done before any file is touched."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest
from faults import gapwatch_argv, records_of, small_tmpfs, wait_for

from evaluation.simulate import simulate
from gapwatch.cli import main
from gapwatch.sinks.output_file import OutputRefused, check_output, rotated_name
from gapwatch.sinks.recorder import Recorder, write_recording

SIM = ["--source", "sim:chained", "--speed", "0", "--duration", "3", "--quiet"]


def _existing(tmp_path: Path, name: str = "keep.jsonl.gz") -> tuple[Path, bytes]:
    path = tmp_path / name
    sim = simulate("chained", seed=1, duration_s=2)
    write_recording(path, sim.header, sim.records)
    return path, path.read_bytes()


def test_an_existing_recording_is_refused_and_left_untouched(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, before = _existing(tmp_path)
    assert main(["record", *SIM, "--out", str(path)]) == 2
    err = capsys.readouterr().err
    assert "exists" in err and "--force" in err and "--rotate" in err
    assert path.read_bytes() == before


def test_force_replaces_an_existing_recording(tmp_path: Path) -> None:
    path, before = _existing(tmp_path)
    assert main(["record", *SIM, "--out", str(path), "--force"]) == 0
    assert path.read_bytes() != before
    assert records_of(path)


def test_rotate_keeps_the_existing_recording_and_writes_the_next_free_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, before = _existing(tmp_path, "gw.jsonl.gz")
    (tmp_path / "gw.1.jsonl.gz").write_bytes(b"taken")
    assert main(["record", *SIM, "--out", str(path), "--rotate"]) == 0
    assert path.read_bytes() == before
    assert (tmp_path / "gw.1.jsonl.gz").read_bytes() == b"taken"
    assert records_of(tmp_path / "gw.2.jsonl.gz")
    assert "gw.2.jsonl.gz" in capsys.readouterr().err


def test_rotated_names_keep_the_recording_suffixes() -> None:
    assert rotated_name(Path("/d/gw.jsonl.gz"), 3) == Path("/d/gw.3.jsonl.gz")
    assert rotated_name(Path("gw.jsonl"), 1) == Path("gw.1.jsonl")
    assert rotated_name(Path("trace"), 1) == Path("trace.1")


def test_force_and_rotate_cannot_be_given_together(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["record", *SIM, "--out", "x.jsonl", "--force", "--rotate"])
    assert exc.value.code == 2


def _records_so_far(path: Path) -> int:
    """How many records a recording being written holds so far (its cut tail not counted; 0
    before its header is whole: a gzip file is created before its first flush)."""
    from gapwatch.sources.files import read_any
    from gapwatch.sources.recording import RecordingError

    if not path.exists():
        return 0
    try:
        return sum(1 for _ in read_any(path).records)
    except RecordingError:
        return 0


def test_a_second_writer_is_refused_even_with_force(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "live.jsonl.gz"
    first = subprocess.Popen(gapwatch_argv("record", "--source", "sim:chained", "--speed", "10",
                                           "--out", str(out), "--quiet"),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # More than its start-up's few records: the refusals below take milliseconds here, and
        # a writer stopped at once had written only 2 (its first flush, before any sample).
        wait_for("the first writer's records", lambda: _records_so_far(out) > 10)
        # The second writers run here, in this test's process (the first is another one):
        # the refusal is `record`'s, not a process's (three more took ~1 CPU-s to start).
        for extra in ([], ["--force"], ["--rotate"]):
            assert main(["record", *SIM, "--out", str(out), *extra]) == 2, extra
            err = capsys.readouterr().err
            assert "being written by another process" in err, (extra, err)
            assert "Traceback" not in err
        first.send_signal(signal.SIGTERM)
        assert first.wait(30) == 0
    finally:
        if first.poll() is None:
            first.kill()
    assert len(records_of(out)) > 10  # the first writer's file, whole
    assert not (tmp_path / "live.1.jsonl.gz").exists()


def test_the_lock_holds_between_two_recorders_in_one_process(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    first = Recorder(path)
    try:
        with pytest.raises(OutputRefused, match="another process"):
            Recorder(path, exists="replace")
    finally:
        first.close()
    Recorder(path, exists="replace").close()  # free again once the first is closed


@pytest.mark.parametrize("where, expected", [
    ("missing/dir/x.jsonl", "does not exist"),
    (".", "is a directory"),
    ("/dev/null", "not a regular file"),
])
def test_unusable_outputs_are_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str, expected: str) -> None:
    target = where if where.startswith("/") else str(tmp_path / where)
    assert main(["record", *SIM, "--out", target]) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1


def test_a_read_only_file_system_is_refused_before_anything_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with small_tmpfs(tmp_path / "ro") as fs:
        subprocess.run(["mount", "-o", "remount,ro", str(fs)], check=True)
        assert main(["record", *SIM, "--out", str(fs / "r.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "read-only" in err and "Traceback" not in err


def test_an_unwritable_directory_is_refused(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # root writes anywhere; check the refusal as another user would see it
        pytest.skip("running as root: permissions do not apply (the read-only test covers it)")
    d = tmp_path / "locked"
    d.mkdir(mode=0o555)
    with pytest.raises(OutputRefused, match="not writable"):
        check_output(d / "r.jsonl")


def test_a_taken_prometheus_port_fails_before_the_recording_is_touched(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, before = _existing(tmp_path)
    fresh = tmp_path / "fresh.jsonl"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for out, extra in ((path, ["--force"]), (fresh, [])):
            assert main(["record", *SIM, "--out", str(out), *extra,
                         "--prometheus", f"127.0.0.1:{port}"]) == 2
    assert "cannot listen" in capsys.readouterr().err
    assert path.read_bytes() == before  # --force did not truncate it
    assert not fresh.exists()


def test_the_simulators_status_hint_names_no_other_scenario_and_says_it_is_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The hint named `gapwatch record --source sim:chained --cuzk-status URL` whatever ran: a
    second simulator of another scenario beside this one's /status. It now says that this
    run reads it, how to look at it, and how a real cuzk's is read."""
    assert main(["record", "--source", "sim:pageable", "--duration", "1", "--quiet",
                 "--out", str(tmp_path / "gw.jsonl")]) == 0
    hint = next(line for line in capsys.readouterr().err.splitlines()
                if "serves its status" in line)
    assert "sim:chained" not in hint
    assert "(read by this record;" in hint and "`curl http://127.0.0.1:" in hint
    assert "--cuzk-status" in hint and "status_listen" in hint
