"""Issue 29, item 12: every command stops cleanly on SIGINT, SIGTERM and SIGHUP at any moment
(its imports included): exit 0, no traceback, no file left behind (an export's hidden
`.NAME.XXXXXXXX.part` either). Every output gapwatch cannot write is one line and exit 2,
`ulimit -n 10` at start-up is one line, and `parse --json` shows C1 and bidi controls escaped.

`record` and the dashboard at work are pinned in test_fault_signals.py; here, the moments and
commands it does not reach."""

from __future__ import annotations

import errno
import fcntl
import importlib
import json
import os
import signal
import subprocess
import sys
from functools import partial
from pathlib import Path
from types import ModuleType

import pytest
from faults import gapwatch_argv, process_running, signal_storm, wait_for
from shared_files import made_once
from sim_recordings import record_sim

from gapwatch.cli import main
from gapwatch.copytrace import build as ctbuild

STOP = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
HOSTILE = Path(__file__).parent / "data" / "hostile"
ROOT = Path(__file__).resolve().parent.parent


def _taken(pid: int) -> int:
    """The signals process `pid` has handlers for (SigCgt of /proc/PID/status), 0 if gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("SigCgt:"):
                    return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


def _handles_all_stop_signals(pid: int) -> bool:
    mask = _taken(pid)
    return all(mask & (1 << (s.value - 1)) for s in STOP)


def _has_open(pid: int, path: Path) -> bool:
    """Whether process `pid` holds `path` open (one of its /proc/PID/fd links)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                return True
        except OSError:
            continue
    return False


def _stop(proc: subprocess.Popen[str], sig: signal.Signals) -> tuple[int, str]:
    try:
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    return proc.returncode, err


def _recording(folder: Path, seconds: int, gpus: int = 1) -> Path:
    """`gapwatch record` of the chained simulator for `seconds` on `gpus` GPUs, in `folder`.
    It is only the input of the processes stopped below, so the command runs in this process
    (`sim_recordings.record_sim`), not as a process of its own (~0.3 CPU-s of interpreter and
    imports more, once a run for each recording)."""
    cfg = folder / "sim.toml"
    cfg.write_text(f"[sim]\ngpus = {gpus}\n")
    out, _err = record_sim(folder, "chained", seconds, "--config", str(cfg))
    return out


@pytest.fixture(scope="module")
def small_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return made_once(tmp_path_factory, "stop-small",
                     lambda d: _recording(d, 30)) / "chained.jsonl"


@pytest.fixture(scope="module")
def long_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A quarter of an hour of two simulated GPUs (~31 MB): exporting or reporting it takes
    seconds, in one process (it is under `MIN_PARALLEL_BYTES`; the storm of forked workers
    lowers that). Making it is ~4 s, hence once per run, and one recording for both uses: a
    half hour of one GPU for the rest cost as much again."""
    return made_once(tmp_path_factory, "stop-long",
                     lambda d: _recording(d, 900, gpus=2)) / "chained.jsonl"


def _commands(rec: Path, out: Path) -> dict[str, list[str]]:
    return {
        "report": ["report", str(rec)],
        "export": ["export", str(rec), "--out", str(out / "x.trace.json")],
        "replay": ["replay", "--headless", str(rec)],
        "record": ["record", "--source", "sim:chained", "--quiet", "--out",
                   str(out / "r.jsonl")],
        "watch": ["watch"],
        "demo": ["demo"],
        "parse": ["parse", str(HOSTILE / "c1-bidi.log")],
        "copytrace": ["copytrace", "build", "--out", str(out / "lib")],
    }


#: Every command, each stop signal at least twice: before the command line is parsed every
#: command goes through the same handler (`base/quit_early`), so a signal per command covers it
#: (all 24 pairs cost the suite 15 s of processes for nothing more).
_COMMAND_SIGNALS = [(command, STOP[i % len(STOP)]) for i, command in enumerate(
    ["report", "export", "replay", "record", "watch", "demo", "parse", "copytrace"])]


@pytest.mark.parametrize(("command", "sig"), _COMMAND_SIGNALS,
                         ids=[f"{c}-{s.name}" for c, s in _COMMAND_SIGNALS])
def test_a_stop_signal_during_the_imports_exits_0_without_a_traceback(
        tmp_path: Path, small_recording: Path, command: str, sig: signal.Signals) -> None:
    """Ctrl-C in the first ~0.3 s printed a KeyboardInterrupt traceback and exited 130; SIGTERM
    and SIGHUP killed the process (143, 129). The signal is sent as soon as the process takes
    the stop signals, before the command line is even parsed."""
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen(gapwatch_argv(*_commands(small_recording, out)[command]),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    wait_for("the stop signals taken", lambda: _handles_all_stop_signals(proc.pid), 30)
    rc, err = _stop(proc, sig)
    assert rc == 0, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("sig", STOP, ids=lambda s: s.name)
def test_an_export_stopped_while_writing_leaves_no_hidden_part_file(
        tmp_path: Path, long_recording: Path, sig: signal.Signals) -> None:
    """An interrupted export left its `.NAME.XXXXXXXX.part` (9.8-18 MB) and exited 130."""
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen(gapwatch_argv("export", str(long_recording), "--out",
                                          str(out / "t.json")),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for("the export's temporary", lambda: any(out.iterdir()), 60)
    rc, err = _stop(proc, sig)
    assert rc == 0, err
    assert "Traceback" not in err, err
    assert list(out.iterdir()) == []
    assert f"stopped ({sig.name})" in err


@pytest.mark.parametrize("sig", STOP, ids=lambda s: s.name)
def test_a_report_stopped_while_reading_exits_0_without_a_traceback(
        long_recording: Path, tmp_path: Path, sig: signal.Signals) -> None:
    """A report stopped while it reads exits 0, says it stopped, and prints no report. On a
    loaded box the poll that sees the recording open can come so late that the report has
    read it all by the signal (it failed so once in a full suite run beside three others: exit 0,
    nothing said, the report printed): such a try is not the case this test is about, and is
    made again (three tries), each still held to exit 0 without a traceback."""
    for attempt in range(3):
        out = tmp_path / f"report-{attempt}.txt"
        with out.open("w") as stdout:
            proc = subprocess.Popen(gapwatch_argv("report", str(long_recording)),
                                    stdout=stdout, stderr=subprocess.PIPE, text=True)
            wait_for("the stop signals taken", partial(_handles_all_stop_signals, proc.pid), 30)
            wait_for("the recording opened", partial(_has_open, proc.pid, long_recording), 30)
            rc, err = _stop(proc, sig)  # reading (the whole report takes seconds)
        assert rc == 0, err
        assert "Traceback" not in err, err
        printed = out.read_text()
        if f"stopped ({sig.name})" in err:
            assert printed == ""  # stopped while reading: no report, not half of one
            return
        assert printed, err  # neither stopped nor done: the signal was lost
    pytest.fail(f"the report read the recording whole before {sig.name} three times")


@pytest.mark.skipif(ctbuild.find_compiler() is None, reason="no C compiler")
@pytest.mark.parametrize("where", ["read-only folder", "a file", "/proc"])
def test_copytrace_build_to_an_unwritable_place_is_one_line_and_exit_2(
        tmp_path: Path, where: str) -> None:
    """A read-only folder, a file or /proc printed a traceback and exited 1."""
    if where == "read-only folder":
        if os.geteuid() == 0:
            pytest.skip("root writes into a read-only folder")
        target = tmp_path / "ro"
        target.mkdir()
        target.chmod(0o555)
    elif where == "a file":
        target = tmp_path / "plain"
        target.write_text("not a folder")
    else:
        target = Path("/proc/gapwatch-copytrace")
    done = subprocess.run(gapwatch_argv("copytrace", "build", "--out", str(target)),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert str(target) in lines[0]


@pytest.mark.parametrize("command", [
    ["report", "RECORDING"], ["export", "RECORDING", "--out", "OUT/x.trace.json"],
    ["parse", str(HOSTILE / "c1-bidi.log")], ["record", "--source", "sim:chained",
                                              "--duration", "1", "--out", "OUT/r.jsonl"],
])
def test_ten_open_files_at_start_up_is_one_line_or_enough_never_a_traceback(
        tmp_path: Path, small_recording: Path, command: list[str]) -> None:
    argv = [a.replace("RECORDING", str(small_recording)).replace("OUT", str(tmp_path))
            for a in command]
    code = ("import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (10, "
            "resource.getrlimit(resource.RLIMIT_NOFILE)[1])); sys.argv = ['gapwatch', *sys.argv[1:]]; "
            "runpy.run_module('gapwatch', run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert "Traceback" not in done.stderr, done.stderr
    if command[0] == "record":  # a live command: refused before it starts
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "ulimit -n 10" in done.stderr
        assert not (tmp_path / "r.jsonl").exists()
    else:  # an offline one needs few files, and runs
        assert done.returncode == 0, done.stderr


def test_more_logs_to_follow_than_open_files_allow_is_refused_at_start_not_out_of_files_later(
        tmp_path: Path) -> None:
    """Each followed log is held open: 3,000 `[logs] paths` took every descriptor at `ulimit
    -n 1024`, and `record` stopped a second in with "out of open files ... raise the limit
    (ulimit -n 1024)", the limit it had. Here 40 logs at `ulimit -n 64`."""
    logs = [tmp_path / f"cuzk-{i}.log" for i in range(40)]
    for log in logs:
        log.write_text("hello\n")
    (tmp_path / "c.toml").write_text(
        "[logs]\npaths = [" + ", ".join(f'"{log}"' for log in logs) + "]\n")
    code = ("import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (64, "
            "resource.getrlimit(resource.RLIMIT_NOFILE)[1])); sys.argv = ['gapwatch', *sys.argv[1:]]; "
            "runpy.run_module('gapwatch', run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", code, "record", "--config",
                           str(tmp_path / "c.toml"), "--source", "sim:chained", "--duration",
                           "3", "--out", str(tmp_path / "r.jsonl")],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert ("40 log files to follow need about 100 open files, and only 64 are allowed "
            "(ulimit -n 64): raise it (ulimit -n 1024)") in done.stderr
    assert not (tmp_path / "r.jsonl").exists()


def test_out_of_files_suggests_a_limit_above_the_one_met(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    from gapwatch.base import open_files

    monkeypatch.setattr(open_files, "open_files_limit", lambda: 1024)
    said = open_files.out_of_files(OSError(errno.EMFILE, "Too many open files"))
    assert said == ("out of open files (ulimit -n 1024): raise the limit (ulimit -n 2048) and "
                    "run it again")


def test_parse_json_writes_c1_and_bidi_controls_escaped(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`parse --json` passed U+009B (a C1 CSI: a terminal obeys it) and U+202E (a bidi override:
    the line reads backwards) to the terminal raw. What it writes is the point, not its process:
    the command runs in the test's (`gapwatch.cli.main`)."""
    assert main(["parse", "--json", str(HOSTILE / "c1-bidi.log")]) == 0
    stdout = capsys.readouterr().out
    assert "\u009b" not in stdout and "\u202e" not in stdout
    assert "\x1b" not in stdout
    assert "\\u009b" in stdout and "\\u202e" in stdout
    # Still JSON, holding the same text: only how it is written changed.
    raws = [json.loads(line)["raw"] for line in stdout.splitlines() if line.strip()]
    assert any("\u009b" in r for r in raws) and any("\u202e" in r for r in raws)


_SWALLOWED = """
import os, signal, time, weakref
from gapwatch.base.quit_early import quit_on_stop_signals
quit_on_stop_signals()
class Held: pass
held = Held()
def callback(ref):  # as importlib's module-lock callback: Python only prints what it raises
    signal.raise_signal(signal.SIGTERM)
    time.sleep(0.01)
ref = weakref.ref(held, callback)
del held
time.sleep(3)
print("ran on", flush=True)
"""


def _stops_quietly(script: str) -> None:
    """`script` run: stopped with exit 0 before it ran on, nothing printed of the signal."""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "ran on" not in done.stdout
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_stop_signal_raised_where_python_cannot_raise_still_stops_quietly() -> None:
    """A stop signal inside the import machinery's weakref callback printed "Exception ignored
    in ... Traceback" and `record` ran on, deaf to further signals."""
    _stops_quietly(_SWALLOWED)


#: As `_SWALLOWED`, but the signal sent again lands while the hook that sends it still runs (a
#: thread's start outlasting the moment on a loaded box): Python printed "Exception ignored in
#: sys.unraisablehook" and the command ran on (2 runs in 160, four at once, on a busy 2-core
#: box). Here it lands there every time.
_IN_THE_HOOK = _SWALLOWED.replace("quit_on_stop_signals()\n", """quit_on_stop_signals()
import threading
_start = threading.Thread.start
def start(self):
    os.kill(os.getpid(), signal.SIGTERM)  # its handler runs in the hook, at the next line
    _start(self)
    time.sleep(0.05)
threading.Thread.start = start
""")


def test_a_stop_signal_sent_again_that_lands_in_the_hook_still_stops_quietly() -> None:
    assert "threading.Thread.start = start" in _IN_THE_HOOK  # the patch took
    _stops_quietly(_IN_THE_HOOK)


_WRAPPED = """
import signal, sys
import gapwatch.__main__ as entry
import gapwatch.cli

def command():  # a command that makes a class (a lazy import's dataclass) as the signal comes
    class Named:
        def __set_name__(self, owner, name):
            signal.raise_signal(signal.SIGHUP)
    class Owner:
        field = Named()
    print("ran on", flush=True)
    return 1

gapwatch.cli.main = command
sys.exit(entry.run())
"""


def test_a_stop_signal_inside_a_classs_set_name_stops_quietly() -> None:
    """An export stopped while it imported the report (under load) printed a RuntimeError
    traceback and exited 1: Python 3.11 wraps what `__set_name__` raises, here the stop."""
    done = subprocess.run([sys.executable, "-c", _WRAPPED], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "ran on" not in done.stdout
    assert "Traceback" not in done.stderr and "stopped (SIGHUP)" in done.stderr, done.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("command", [
    ["report", "RECORDING"], ["report", "--json", "RECORDING"],
    ["parse", "--json", str(HOSTILE / "c1-bidi.log")], ["export", "RECORDING", "--out", "-"],
])
def test_a_full_standard_output_is_one_line_and_exit_2(small_recording: Path,
                                                      command: list[str]) -> None:
    """`report > /dev/full` printed a traceback (exit 1); `parse` blamed its input ("LOG: cannot
    read: No space left on device"); `export --out -` exited 1."""
    argv = [a.replace("RECORDING", str(small_recording)) for a in command]
    with open("/dev/full", "w") as full:
        done = subprocess.run(gapwatch_argv(*argv), stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120, cwd=ROOT)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "No space left on device" in lines[0] and "cannot read" not in lines[0]


def test_a_report_piped_into_head_stops_quietly(small_recording: Path) -> None:
    proc = subprocess.Popen(gapwatch_argv("report", str(small_recording)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 0 and "Traceback" not in err, err


def _children(pid: int) -> set[int]:
    """Process `pid`'s children (every thread's /proc children list)."""
    found: set[int] = set()
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                found.update(int(c) for c in fh.read().split())
    except OSError:
        pass
    return found




@pytest.mark.parametrize("command", ["report", "export"])
def test_a_storm_of_stop_signals_while_stopping_and_exiting_still_exits_0(
        tmp_path: Path, long_recording: Path, command: str) -> None:
    """A second Ctrl-C 10-50 ms after the first killed `report` and `export` (-2, the shell's
    130) after they said `gapwatch: stopped (SIGINT)`, every time: Python's shutdown gives
    every signal with a Python handler its default action back. Now each further stop signal
    is absorbed until the process has exited: signals are sent until it has."""
    out = tmp_path / "out"
    out.mkdir()
    argv = {"report": ["report", str(long_recording)],
            "export": ["export", str(long_recording), "--out", str(out / "t.json")]}[command]
    proc = subprocess.Popen(gapwatch_argv(*argv), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    wait_for("the stop signals taken", lambda: _handles_all_stop_signals(proc.pid), 30)
    wait_for("the recording opened", lambda: _has_open(proc.pid, long_recording), 30)
    err = signal_storm(proc)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "stopped (SIG" in err, err
    assert list(out.iterdir()) == []  # no hidden .part either


_FORKED_REPORT = """
import sys
import gapwatch.__main__ as entry
from gapwatch.offline import report_parallel

report_parallel.MIN_PARALLEL_BYTES = 1  # a small recording of two GPUs, read by two processes
sys.argv = ["gapwatch", "report", sys.argv[1]]
sys.exit(entry.run())
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: no report workers")
def test_a_storm_of_stop_signals_stops_a_report_and_its_forked_workers(
        long_recording: Path) -> None:
    """The report's forked workers stop with it: none is left running after the storm."""
    proc = subprocess.Popen([sys.executable, "-c", _FORKED_REPORT, str(long_recording)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    workers: set[int] = set()

    def forked() -> bool:
        workers.update(_children(proc.pid))
        return bool(workers)

    wait_for("a forked report worker", forked, 60)
    err = signal_storm(proc)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "stopped (SIG" in err, err
    assert not [w for w in workers if process_running(w)]  # none left behind, reading on


#: What the pipe into `head -c 100` below holds: one page (`F_SETPIPE_SZ`), not Linux's 64 KiB.
#: The output must be more than the pipe holds, or the process could write it whole before the
#: reader left, and exit without meeting the closed pipe: a page lets the small recording's
#: outputs be that (its CSV ~60 KB, report ~25 KB), where 64 KiB needed the long recording's
#: (its report ~1 CPU-s of reading before the first byte).
PIPE_BYTES = 4096


@pytest.mark.parametrize("command", [
    ["export", "SMALL", "--format", "perfetto", "--out", "-"],
    ["export", "SMALL", "--format", "csv", "--out", "-"],
    ["report", "--json", "SMALL"],
    ["parse", "--json", "LOG"],
], ids=["export-perfetto", "export-csv", "report-json", "parse-json"])
def test_an_output_piped_into_head_c_100_stops_quietly_as_report_does(
        tmp_path: Path, small_recording: Path, command: list[str]) -> None:
    """`export --out - | head -c 100` exited 2 with "gapwatch export: stdout: Broken pipe"
    where `report | head` stops quietly: one rule for every command now
    (`cli.output_failure`). Each output is far more than the pipe holds (`PIPE_BYTES`)."""
    log = tmp_path / "big.log"
    log.write_bytes((HOSTILE / "c1-bidi.log").read_bytes() * 100)  # ~23 KB, its JSON more
    given = {"LOG": log, "SMALL": small_recording}
    argv = [str(given.get(a, a)) for a in command]
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    assert fcntl.fcntl(write_end, fcntl.F_GETPIPE_SZ) == PIPE_BYTES
    try:
        proc = subprocess.Popen(gapwatch_argv(*argv), stdout=write_end,
                                stderr=subprocess.PIPE, cwd=ROOT)
    finally:
        os.close(write_end)  # the process's copy is the pipe's only writer
    assert proc.stderr is not None
    with open(read_end, "rb") as stdout:
        assert len(stdout.read(100)) == 100
    # Closed (as `head -c 100` does): what the process writes next meets a closed pipe.
    err = proc.stderr.read().decode()
    assert proc.wait(120) == 0, err
    assert "Broken pipe" not in err and "Traceback" not in err and "Exception" not in err, err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("command", [["--help"], ["report", "--help"], ["--version"]],
                         ids=["help", "report-help", "version"])
def test_help_to_a_full_standard_output_is_one_line_and_exit_2(command: list[str]) -> None:
    """`gapwatch --help > /dev/full` exited 0, nothing said: argparse drops the OSError."""
    with open("/dev/full", "w") as full:
        done = subprocess.run(gapwatch_argv(*command), stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=60, cwd=ROOT)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "No space left on device" in lines[0], lines


def test_help_piped_into_head_stops_quietly() -> None:
    proc = subprocess.Popen(gapwatch_argv("report", "--help"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before a byte was read: the help meets a closed pipe
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 0 and err == "", err


def test_an_export_temporary_whose_last_flush_fails_is_still_removed(tmp_path: Path) -> None:
    """A stop (or a failure) while the disk is full: closing the `.part` flushes its buffered
    bytes, which fails, and that skipped its removal."""
    from gapwatch.sinks.output_file import Replacement

    tmp = Replacement(tmp_path / "t.trace.json")
    tmp.file.write(b"x" * 100)  # buffered, not yet written
    os.close(tmp.file.fileno())  # the flush on close fails, as on a full disk
    tmp.discard()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["replay", "report", "record"])
def test_a_commands_modules_are_imported_with_stop_signals_held_back(
        monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    """A stop raised while a module built its msgspec decoders crashed the process (SIGSEGV:
    10 runs in 200 of `replay` stopped during its imports on a loaded box, the first test
    above failing on and off in the suite): the command's modules, and the command line's, are
    imported with the stop signals held back (`quit_early.import_held`), which stop the process
    the moment the import is over."""
    from gapwatch.cli import build_parser

    held: dict[str, bool] = {}
    real = importlib.import_module

    def spy(name: str, package: str | None = None) -> ModuleType:
        held[name] = signal.SIGHUP in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", spy)  # the module quit_early calls
    build_parser(command)
    assert held == {f"gapwatch.commands.{command}": True}
    assert signal.SIGHUP not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # given back


def test_the_command_line_itself_is_imported_with_stop_signals_held_back(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`gapwatch.__main__.run` imports `gapwatch.cli` (the config models, pydantic, msgspec)
    with the stop signals held back too: the first ~0.2 s of every command."""
    import gapwatch.__main__ as entry

    held: dict[str, bool] = {}
    real = importlib.import_module

    def spy(name: str, package: str | None = None) -> ModuleType:
        held[name] = signal.SIGHUP in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        return real(name, package)

    handlers = {s: signal.getsignal(s) for s in STOP}
    monkeypatch.setattr(importlib, "import_module", spy)
    monkeypatch.setattr(sys, "argv", ["gapwatch", "--version"])
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)
    try:
        with pytest.raises(SystemExit):  # --version exits through argparse
            entry.run()
    finally:
        for s, h in handlers.items():  # `run` took them, then ignored them on its way out
            signal.signal(s, h)
    assert held["gapwatch.cli"] is True
    assert "gapwatch" in capsys.readouterr().out
