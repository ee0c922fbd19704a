"""Helpers for the fault tests: real gapwatch processes, a small tmpfs, a pseudo-terminal, /metrics.

Used by tests/test_fault_*.py. Every wait is bounded and polls for a condition (no sleeps that
guess how long something takes).
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import pty
import re
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gapwatch.core.models import Record

ROOT = Path(__file__).parent.parent
_CSI = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]")
#: How long any single wait in these tests may take before it fails.
WAIT_S = 40.0


def gapwatch_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "gapwatch", *args]


def until(cond: Callable[[], object], timeout_s: float = 10.0, poll_s: float = 0.01) -> bool:
    """Whether `cond` came true within `timeout_s` (polled every `poll_s`)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(poll_s)
    return bool(cond())


def wait_for(what: str, ok: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
    """Wait for `ok`, or fail the test naming `what`."""
    if not until(ok, timeout_s, poll_s=0.05):
        pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}")


def quick_config(folder: Path) -> Path:
    """A config whose recorder writes every 0.2 s and retries a failing disk after 1 s (the
    defaults, 1 s and up to 30 s, only make these tests wait longer for the same events), and
    whose snapshots go into `folder`: the dashboard in a pty runs in the checkout, and a demo
    that reached BREAKDOWN before its test stopped it left its automatic snapshot there."""
    cfg = folder / "quick.toml"
    cfg.write_text("[record]\nflush_interval_s = 0.2\nretry_max_s = 1.0\n"
                   f"[snapshot]\ndir = {str(folder / 'snapshots')!r}\n")
    return cfg


def free_port() -> int:
    """A port free now, for a process that cannot say which port it bound (the dashboard in a
    pty): another process may take it before it is bound again, so bind port 0 and ask where
    the code allows (`record` says its address: `metrics_port`)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def metrics_port(err: Lines) -> int:
    """The port `record --prometheus 127.0.0.1:0` bound, from its start line on stderr
    (`gapwatch record: source ...; metrics at http://127.0.0.1:PORT/metrics`)."""
    found: list[int] = []

    def said() -> bool:
        for line in err.lines:
            m = re.search(r"metrics at http://127\.0\.0\.1:(\d+)/metrics", line)
            if m:
                found.append(int(m.group(1)))
                return True
        return False

    wait_for("record to say where /metrics is", said)
    return found[0]


def scrape(port: int) -> dict[str, float]:
    """`/metrics` as {sample name with labels: value} (labels as in the text format)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def metric(port: int, name: str) -> float | None:
    """One sample of `/metrics`, None when absent or when the server does not answer (yet)."""
    try:
        return scrape(port).get(name)
    except OSError:
        return None


def samples_total(port: int) -> float:
    return sum(v for k, v in scrape(port).items() if k.startswith("gapwatch_gpu_samples_total"))


class Lines:
    """Collects a process's stderr lines on a thread, so that the pipe never fills."""

    def __init__(self, stream: object) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.lines.append(line.rstrip("\n"))

    def has(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def text(self) -> str:
        self._thread.join(5)
        return "\n".join(self.lines)


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str = "2m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` (root only); skips LOUDLY where mounting fails."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        why = done.stderr.strip() or "not root"
        reason = (f"SKIPPED LOUDLY: cannot mount a {size} tmpfs ({why}); the disk-full "
                  "behaviour was NOT tested here (run the suite as root)")
        warnings.warn(reason, stacklevel=2)
        pytest.skip(reason)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(fs: Path, leave_bytes: int) -> Path:
    """Fill the file system at `fs` with a filler file until about `leave_bytes` are free."""
    filler = fs / "filler"
    st = os.statvfs(fs)
    free = st.f_bavail * st.f_frsize
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - leave_bytes))
    return filler


class PtyApp:
    """A gapwatch dashboard on a pseudo-terminal (80x24): what it writes is collected."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        full_env = dict(os.environ, TERM="xterm-256color", **(env or {}))
        self.proc = subprocess.Popen(gapwatch_argv(*args), stdin=slave, stdout=slave,
                                     stderr=slave, env=full_env, cwd=ROOT, start_new_session=True)
        os.close(slave)
        self.output = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self._lock:
                self.output.extend(data)

    def seen(self, text: bytes) -> bool:
        with self._lock:
            return text in self.output

    def text_seen(self, text: str) -> bool:
        """`text` was written, once escape sequences are taken out (a toast's words are
        interleaved with colour codes)."""
        with self._lock:
            plain = _CSI.sub(b"", bytes(self.output))
        return text.encode() in plain

    def drawn(self) -> bool:
        """The dashboard has drawn a screenful in the alternate screen (the terminal is in raw
        mode by then: keys reach the app)."""
        with self._lock:
            start = self.output.find(b"\x1b[?1049h")
            return start >= 0 and len(self.output) - start > 4000

    def send(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    def hang_up(self) -> None:
        """What closing a tmux pane does: the terminal goes away, then SIGHUP."""
        os.close(self.master)
        self.master = -1
        self.proc.send_signal(signal.SIGHUP)

    def wait(self) -> int:
        try:
            rc = self.proc.wait(WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail("the dashboard did not exit")
        self._reader.join(5)
        return rc

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.master >= 0:
            os.close(self.master)
            self.master = -1


def terminal_restored(output: bytes) -> bool:
    """The last alternate-screen switch is "leave", and mouse tracking was turned off after the
    last time it was turned on."""
    enter, leave = output.rfind(b"\x1b[?1049h"), output.rfind(b"\x1b[?1049l")
    mouse_on, mouse_off = output.rfind(b"\x1b[?1000h"), output.rfind(b"\x1b[?1000l")
    return enter >= 0 and leave > enter and mouse_off > mouse_on


def records_written(path: Path, at_least: int) -> bool:
    """The recording at `path` holds `at_least` records besides its header, as far as it is
    written yet (a gzip member still open reads cut short: what is there counts). Its size
    does not say: a gzipped header alone is ~1,000 bytes, and a test that waited for 1,000
    bytes then stopped the dashboard before its first sample, and found no record (flaky
    under load)."""
    from gapwatch.sources.files import read_any
    from gapwatch.sources.recording import RecordingError

    if not path.exists():
        return False
    try:
        return sum(1 for _ in read_any(path).records) >= at_least
    except (OSError, EOFError, ValueError, RecordingError):  # empty, or its header half written
        return False


def records_of(path: Path) -> list[Record]:
    """Every record of a recording, failing the test if the reader finds it cut short (what
    `gapwatch report` would print as "file ends early") or with a half-written line."""
    from gapwatch.sources.files import read_any

    rec = read_any(path)
    records = list(rec.records)
    assert "truncated" not in rec.counters, rec.problems
    assert "partial_line" not in rec.counters, rec.problems
    return records


def signal_storm(proc: subprocess.Popen[str]) -> str:
    """SIGINT and SIGTERM in turn, a few milliseconds apart, from now until the process has
    ended (the late ones land while it stops and while Python shuts down); its stderr."""
    signals = itertools.cycle([signal.SIGINT, signal.SIGTERM])
    deadline = time.monotonic() + 120  # a bound on a hang, not a pass mark
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            os.kill(proc.pid, next(signals))  # unreaped, it is still there: no ProcessLookupError
            time.sleep(0.002)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    return err


def process_running(pid: int) -> bool:
    """Whether `pid` is a process that has not ended (a zombie has). Its state is read after
    the last `)` of /proc/PID/stat: a command name may hold spaces and parentheses."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def interrupted_right_after_each_start(monkeypatch: pytest.MonkeyPatch,
                                       run: Callable[[], object]) -> list[int]:
    """Run `run` with every process it starts (forked, or spawned where this process has
    threads, as a pytest-xdist worker has) sending SIGINT to this thread as `start` returns,
    before the caller can register it; `run` must end in KeyboardInterrupt. The started pids.
    (Sent to this thread, as the kernel sends a one-thread process's signal to its thread.)"""
    import multiprocessing.process

    real_start = multiprocessing.process.BaseProcess.start
    started: list[int] = []

    def start_then_stop(self: multiprocessing.process.BaseProcess) -> None:
        real_start(self)
        assert self.pid is not None
        started.append(self.pid)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", start_then_stop)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            run()
    finally:
        signal.signal(signal.SIGINT, previous)
    return started
