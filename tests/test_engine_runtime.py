"""The runtime: every source goes through the same session path; the demo's log goes through the
real tailer; replay of a recording finds what the live run found."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gapwatch.config import Config
from gapwatch.core.models import Gap
from gapwatch.engine.runtime import build_runtime, parse_source
from gapwatch.sources import SourceUnavailable


def test_unknown_or_incomplete_sources_are_refused() -> None:
    with pytest.raises(SourceUnavailable, match="unknown --source"):
        parse_source("gpu")
    with pytest.raises(SourceUnavailable, match="needs a file"):
        parse_source("replay")
    with pytest.raises(SourceUnavailable, match="unknown scenario"):
        build_runtime(Config(), "sim:melted")
    with pytest.raises(SourceUnavailable, match="no such file"):
        build_runtime(Config(), "replay:/nonexistent.jsonl")


def _closed_gaps(rt) -> list[Gap]:  # type: ignore[no-untyped-def]
    return [g for g in rt.store.snapshot().gaps if g.end_s is not None]


def test_sim_at_speed_0_records_and_replay_finds_the_same_gaps(tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl.gz"
    rt = build_runtime(Config(), "sim:pageable", speed=0, record_path=str(out), duration_s=45)
    rt.start()
    assert rt.wait(60)
    rt.stop()
    live = _closed_gaps(rt)
    assert len(live) >= 5 and {g.kind for g in live} == {"pcie_starved"}
    assert rt.store.snapshot().log_events  # the sim's lines were parsed

    again = build_runtime(Config(), f"replay:{out}", speed=0)
    again.start()
    assert again.wait(60)
    again.stop()
    replayed = _closed_gaps(again)
    assert [(g.start_s, g.end_s, g.kind) for g in replayed] == \
        [(g.start_s, g.end_s, g.kind) for g in live]


def test_demo_log_reaches_the_session_through_the_real_tailer() -> None:
    # 10 s of the simulator at 20x: its log's lines from the first second, ~100 ticks (30 s
    # only made the test wait a second more for the same lines).
    rt = build_runtime(Config(), "sim:chained", speed=20, duration_s=10)
    assert rt.sim_log_path is not None and rt.followers
    rt.start()
    try:
        assert rt.wait(30)
        # give the tailer a couple of polls to catch the last lines
        import time

        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not rt.store.snapshot().log_events:
            time.sleep(0.1)
    finally:
        rt.stop()
    events = rt.store.snapshot().log_events
    assert any(e.name == "GPU_START" for e in events)
    status = rt.status()
    assert str(rt.sim_log_path) in status.logs
    assert status.lateness is not None and status.lateness.ticks > 10


def test_the_demo_log_file_is_removed_when_the_runtime_stops() -> None:
    rt = build_runtime(Config(), "sim:chained", speed=20, duration_s=2)
    path = rt.sim_log_path
    assert path is not None and path.exists()
    rt.start()
    try:
        assert rt.wait(30)
    finally:
        rt.stop()
    assert not path.exists()
    assert not path.parent.exists()  # its folder too, marker and all


def test_the_demo_log_file_is_removed_when_the_process_exits_without_stopping() -> None:
    import subprocess
    import sys

    code = ("from gapwatch.config import Config\n"
            "from gapwatch.engine.runtime import build_runtime\n"
            "rt = build_runtime(Config(), 'sim:chained', speed=20, duration_s=2)\n"
            "print(rt.sim_log_path, flush=True)\n"
            "raise KeyboardInterrupt\n")  # Ctrl-C before the runtime was stopped
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    path = Path(done.stdout.strip())
    assert path.name.startswith("gapwatch-sim-") and "KeyboardInterrupt" in done.stderr
    assert not path.exists() and not path.parent.exists()


def test_the_demo_log_of_a_process_killed_with_9_is_removed_by_the_next_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import signal
    import subprocess
    import sys
    import tempfile

    # In a temporary folder of this test's own: a simulator that another test starts in
    # another worker sweeps /tmp, and took the killed process's log before this test looked.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code = ("import os, signal\n"
            "from gapwatch.config import Config\n"
            "from gapwatch.engine.runtime import build_runtime\n"
            "rt = build_runtime(Config(), 'sim:chained', speed=20, duration_s=2)\n"
            "print(rt.sim_log_path, flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")  # no close, no exit hook
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == -signal.SIGKILL
    path = Path(done.stdout.strip())
    assert path.parent.parent == tmp_path and path.exists()  # what kill -9 leaves behind
    rt = build_runtime(Config(), "sim:chained", speed=20, duration_s=2)
    try:
        assert not path.exists()  # the next simulator takes it away
        assert not path.parent.exists()  # and its folder, marker and all
        assert rt.sim_log_path is not None and rt.sim_log_path.exists()  # not its own
    finally:
        rt.stop()


def _a_dead_pid() -> int:
    """A pid that no process holds now (the planted names below claim one)."""
    pid = 999999
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid += 1


def test_a_users_files_named_like_a_simulator_log_of_a_dead_pid_are_never_removed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`echo notes > /tmp/gapwatch-sim-999999-notes.log` (and `...-analysis.log.1`): any
    `record --source sim` deleted both, checking only the name, the owner and that the pid was
    dead. Gapwatch deletes only what it provably wrote: a folder it made, with its marker."""
    import subprocess
    import sys

    pid = _a_dead_pid()
    notes = tmp_path / f"gapwatch-sim-{pid}-notes.log"
    notes.write_text("notes\n")
    analysis = tmp_path / f"gapwatch-sim-{pid}-analysis.log.1"
    analysis.write_text("analysis\n")
    # A folder named as the simulator names its own, by the same user, without the marker.
    lookalike = tmp_path / f"gapwatch-sim-{pid}-abcd1234"
    lookalike.mkdir()
    (lookalike / "gapwatch-sim-chained.log").write_text("mine\n")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "gapwatch", "record", "--source", "sim:chained",
                           "--speed", "20", "--duration", "1", "--quiet", "--out",
                           str(tmp_path / "r.jsonl")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert notes.read_text() == "notes\n" and analysis.read_text() == "analysis\n"
    assert (lookalike / "gapwatch-sim-chained.log").read_text() == "mine\n"
    # Its own folder came and went.
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [notes.name, analysis.name, lookalike.name, "r.jsonl"])


def test_a_live_simulator_of_another_pid_namespace_keeps_its_log_folder(tmp_path: Path) -> None:
    """A gapwatch in a container sharing /tmp (`-v /tmp:/tmp`) names its folder by a pid of its
    own namespace, one that runs nowhere here: the next simulator on the host removed its live
    log (reproduced with `unshare --pid --fork --mount-proc`). Here that gapwatch is a process
    whose `os.getpid()` says a pid nobody holds."""
    import subprocess
    import sys

    from gapwatch.engine.sim_wiring import sweep_stale_sim_logs

    code = ("import os, sys\n"
            f"os.getpid = lambda: {_a_dead_pid()}\n"
            "from gapwatch.engine.sim_wiring import SimLogFolder\n"
            f"folder = SimLogFolder('chained', {str(tmp_path)!r})\n"
            "folder.log_path.write_text('TIMELINE,0,GPU_START,j\\n')\n"
            "print(folder.log_path, flush=True)\n"
            "sys.stdin.read()\n")  # lives until its stdin closes
    other = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None
        log = Path(other.stdout.readline().strip())
        assert sweep_stale_sim_logs(str(tmp_path)) == []
        assert log.read_text() == "TIMELINE,0,GPU_START,j\n"
    finally:
        other.kill()
        other.wait()
    # Killed with -9: the same folder is now the next simulator's to remove.
    assert sweep_stale_sim_logs(str(tmp_path)) == [log]
    assert not log.parent.exists()


def test_a_file_the_user_put_in_a_killed_simulators_folder_is_never_swept(
        tmp_path: Path) -> None:
    """The sweep removed every name like a simulator log in a proven folder: a user's
    `gapwatch-sim-my-notes.log` put beside a demo's log went with it. Only the log the marker
    names (and its `.1`) is gapwatch's."""
    import subprocess
    import sys

    from gapwatch.engine.sim_wiring import sweep_stale_sim_logs

    code = ("import os, signal\n"
            "from gapwatch.engine.sim_wiring import SimLogFolder\n"
            f"folder = SimLogFolder('chained', {str(tmp_path)!r})\n"
            "folder.log_path.write_text('TIMELINE,0,GPU_START,j\\n')\n"
            "print(folder.log_path, flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    log = Path(done.stdout.strip())
    notes = log.parent / "gapwatch-sim-my-notes.log"
    notes.write_text("mine\n")
    assert sweep_stale_sim_logs(str(tmp_path)) == [log]
    assert notes.read_text() == "mine\n"
    assert sorted(p.name for p in log.parent.iterdir()) == [notes.name]  # the folder stays


def test_the_demo_log_file_is_rotated_so_it_never_grows_without_end(tmp_path: Path) -> None:
    from gapwatch.engine.sim_wiring import LineFile as _LineFile

    lines = _LineFile(tmp_path / "sim.log", max_bytes=1000)
    for i in range(100):
        lines.write("stderr", f"TIMELINE,{i},GPU_START,j,worker=0,partition=1")
    lines.flush()
    sizes = [p.stat().st_size for p in (lines.path, lines.old_path)]
    assert all(s < 1100 for s in sizes) and sizes[1] > 0
    lines.close()
    assert not lines.path.exists() and not lines.old_path.exists()


def test_the_demo_log_never_appends_through_a_link_planted_while_it_rotates(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """After the rename the log's name is free for an instant, in a shared /tmp: a link planted
    there made a demo run by root append its lines to the file the link named."""
    from gapwatch.engine import sim_wiring

    victim = tmp_path / "victim"
    victim.write_text("not gapwatch's\n")
    lines = sim_wiring.LineFile(tmp_path / "sim.log", max_bytes=1000)
    real_replace = os.replace

    def replace_then_plant(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        real_replace(src, dst)
        os.symlink(victim, lines.path)  # another user, in the window

    monkeypatch.setattr(os, "replace", replace_then_plant)
    for i in range(100):
        lines.write("stderr", f"TIMELINE,{i},GPU_START,j,worker=0,partition=1")
    lines.close()
    assert victim.read_text() == "not gapwatch's\n"
    assert lines.path.is_symlink()  # left as it is: not gapwatch's to delete
    assert not lines.old_path.exists()  # gapwatch's own rotated file: removed
    assert "the simulated prover's log stops" in capsys.readouterr().err


def test_the_demo_log_never_rotates_onto_a_file_planted_at_its_old_name(tmp_path: Path) -> None:
    from gapwatch.engine import sim_wiring

    lines = sim_wiring.LineFile(tmp_path / "sim.log", max_bytes=1000)
    lines.old_path.write_text("planted\n")
    for i in range(100):
        lines.write("stderr", f"TIMELINE,{i},GPU_START,j,worker=0,partition=1")
    lines.close()
    assert lines.old_path.read_text() == "planted\n"
    assert not lines.path.exists()


def _recording_without_logs(tmp_path: Path) -> Path:
    """The H200 pageable run's recording with its log events taken out (as a `record` without
    `--log` would have written it); its prover logs are beside it."""
    from gapwatch.sinks.recorder import write_recording
    from gapwatch.sources.files import read_any

    rec = read_any(E2E / "rec.jsonl.gz")
    out = tmp_path / "nolog.jsonl.gz"
    write_recording(out, rec.header, [r for r in rec.records if r.type not in ("log", "gap",
                                                                                 "state")])
    return out


E2E = Path(__file__).parent / "data" / "h200-e2e" / "pageable"


def report_events(logs: list[str]) -> list[object]:
    from parsed_logs import parse_log_files

    return list(parse_log_files(logs, Config())[0])


def test_replay_with_log_files_finds_what_report_with_them_finds(tmp_path: Path) -> None:
    from gapwatch.offline.report import build_report

    rec = _recording_without_logs(tmp_path)
    logs = [str(E2E / "stdout.log"), str(E2E / "stderr.log")]
    rt = build_runtime(Config(), f"replay:{rec}", speed=0, log_paths=logs)
    rt.start()
    assert rt.wait(60)
    rt.stop()
    snap = rt.store.snapshot()
    report = build_report(rec, Config(), logs, workers=1)
    assert len(snap.log_events) == len(report_events(logs))  # every event of the files
    replayed = [(g.start_s, g.kind, g.hint) for g in snap.gaps if not g.is_open]
    assert replayed == [(g.start_s, g.kind, g.hint) for g in report.gaps]
    assert any("is_pinned=false" in g.hint for g in report.gaps)  # the logs' evidence is in
    assert rt.status().logs == {path: "read whole" for path in logs}


def test_replay_with_a_log_that_cannot_be_read_refuses_to_start(tmp_path: Path) -> None:
    rec = _recording_without_logs(tmp_path)
    with pytest.raises(SourceUnavailable, match="cannot read log .*nope.log"):
        build_runtime(Config(), f"replay:{rec}", speed=0, log_paths=[str(tmp_path / "nope.log")])
    with pytest.raises(SourceUnavailable, match="not '-'"):
        build_runtime(Config(), f"replay:{rec}", speed=0, log_paths=["-"])


def test_a_log_path_that_does_not_exist_is_a_warning_as_soon_as_following_starts(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "cuzk.lgo"
    rt = build_runtime(Config(), "sim:chained", speed=0, duration_s=1, log_paths=[str(missing)])
    rt.start()
    try:
        notices = [n for n in rt.store.snapshot().notices if n.level == "warning"]
        assert notices and notices[0].message == (
            f"log {missing}: cannot open for reading: No such file or directory; following it "
            "once it appears")
        assert rt.status().logs[str(missing)].startswith("missing")
    finally:
        rt.stop()


def test_the_end_of_a_replay_settles_the_detector_before_saying_done(tmp_path: Path) -> None:
    """The recording ends inside an idle stretch: once `done`, that open gap is retracted (what
    `report` counts), not shown as growing."""
    rec = _recording_without_logs(tmp_path)
    rt = build_runtime(Config(), f"replay:{rec}", speed=0)
    rt.start()
    assert rt.wait(60)
    try:
        snap = rt.store.snapshot()
        assert not any(g.is_open for g in snap.gaps)
        assert "retracted" in snap.states[0].reason
    finally:
        rt.stop()


def test_the_log_follower_stamps_arrivals_on_the_sessions_clock() -> None:
    """At `--speed 3` samples and the simulated log's own timestamps run three times faster
    than the wall: a line stamped on arrival must be on that same time line, or the gaps'
    evidence (events from 2 s before each gap) would miss it."""
    rt = build_runtime(Config(), "sim:pageable", speed=3.0)
    try:
        assert rt.sampler is not None and rt.followers
        assert all(f.clock is rt.sampler.clock for f in rt.followers)
    finally:
        rt.stop()



def test_a_runtime_that_fails_to_build_closes_what_it_had_opened(tmp_path: Path) -> None:
    """The copy-trace socket cannot be opened, after the simulated prover's temporary log file
    and its status server already were: both are undone, the port is free again and no
    recording was created."""
    import socket
    import tempfile

    from gapwatch.config import build_config
    from gapwatch.sources import SourceUnavailable

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    config = build_config({
        "sim": {"status_listen": f"127.0.0.1:{port}"},
        "copytrace": {"enabled": True, "socket": str(tmp_path / "no" / "such" / "dir.sock")},
    })
    # This process's simulator logs only: the other test workers' come and go meanwhile.
    mine = f"gapwatch-sim-{os.getpid()}-*"
    before = set(Path(tempfile.gettempdir()).glob(mine))
    with pytest.raises(SourceUnavailable, match="--copytrace"):
        build_runtime(config, "sim:pageable", speed=1.0, record_path=str(tmp_path / "r.jsonl"))
    assert set(Path(tempfile.gettempdir()).glob(mine)) == before
    assert not (tmp_path / "r.jsonl").exists()
    again = socket.socket()
    again.bind(("127.0.0.1", port))  # the status server's port was released
    again.close()
