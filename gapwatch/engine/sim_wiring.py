"""The simulated prover wired as if it were a live one: its log through a file and the real
tailer, its `/status` served over HTTP and polled, on a clock of the chosen speed.

Who calls it: `gapwatch.engine.runtime` for `--source sim[:SCENARIO[,SCENARIO...]]` (`demo`,
`record --source sim`, tests). Everything it opens is registered on the caller's `ExitStack`,
so a runtime that fails to build, or stops, closes it (and removes the temporary log).

- At speed > 0 the prover's lines are appended to a temporary log file (`LineFile`), flushed
  once per tick as a real prover writes as it goes (`FlushingSource`), and followed by the real
  tailer from its start: the demo exercises the same path as cuzk's log. Its pipeline is served
  as cuzk's `GET /status` (`[sim] status_listen`) and polled like a real prover's.
- At speed 0 (as fast as possible, virtual time) no tailer or poller can keep up: the lines are
  parsed as they are produced (`DirectLogFeeder`, a session sink) and the status snapshots are
  handed over directly (`SimStatusFeed`).
"""

from __future__ import annotations

import atexit
import fcntl
import os
import re
import stat
import tempfile
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gapwatch.base.clock import Clock, ScaledClock, SystemClock, VirtualClock
from gapwatch.config import Config, split_listen
from gapwatch.core.models import GpuInfo, Record, SessionHeader
from gapwatch.engine.console import say
from gapwatch.sources import GpuSource, HostSource, SourceUnavailable


def clock_for(speed: float) -> Clock:
    """The clock of a simulated or replayed session at `speed` (0: as fast as possible)."""
    if speed == 0:
        return VirtualClock(start_mono_ns=time.monotonic_ns(), start_wall_s=time.time())
    if speed == 1:
        return SystemClock()
    return ScaledClock(speed)


@dataclass
class SimWiring:
    """What the runtime needs of the simulated prover."""

    label: str
    gpus: list[GpuInfo]
    gpu_source: GpuSource
    host_source: HostSource
    clock: Clock
    #: The simulator itself (its status snapshots, for the speed-0 feed).
    sim: Any
    #: The temporary log the real tailer follows (speed > 0).
    log_path: Path | None = None
    #: The lines waiting to be parsed inline (speed 0).
    direct_lines: list[tuple[str, str]] | None = None
    #: Its `/status` server (speed > 0 with `[sim] status_listen`), not yet started.
    status_server: Any = None
    #: Extra sinks for the session (speed 0: the inline log parser, the status feed).
    sinks: list[Any] = field(default_factory=list)


def open_sim(config: Config, arg: str, speed: float, resources: ExitStack) -> SimWiring:
    """Build the simulated prover for `--source sim:ARG`; register what it opens on
    `resources`. Raises SourceUnavailable for an unknown scenario or a status port in use."""
    from gapwatch.sources.sim import SimHostSource, SimProver, parse_scenarios

    scenario = arg or config.sim.scenario
    try:
        # `sim:pageable,chained`: one scenario per GPU (their number is the GPU count).
        names = parse_scenarios(scenario, config.sim.gpus)
    except ValueError as exc:
        raise SourceUnavailable(str(exc)) from None
    clock = clock_for(speed)
    log_path: Path | None = None
    direct: list[tuple[str, str]] | None = None
    if speed > 0:
        sweep_stale_sim_logs()
        try:
            folder = SimLogFolder(names[0])
        except OSError as exc:
            raise SourceUnavailable(f"the simulated prover's log: cannot make its folder in "
                                    f"{tempfile.gettempdir()}: {exc.strerror or exc}") from None
        resources.callback(folder.remove)  # after the log's close (an ExitStack runs LIFO)
        log_path = folder.log_path
        lines = LineFile(log_path)
        resources.callback(lines.close)
        sim = SimProver(names, seed=config.sim.seed, on_line=lines.write, keep_truth=False,
                        **batch_settings(config))
        gpu_source: GpuSource = FlushingSource(sim, lines)
    else:
        direct = []
        sink = direct
        sim = SimProver(names, seed=config.sim.seed, on_line=lambda s, t: sink.append((s, t)),
                        keep_truth=False, **batch_settings(config))
        gpu_source = sim
    host_source = SimHostSource(sim)
    gpus = gpu_source.open()
    resources.callback(gpu_source.close)
    resources.callback(host_source.close)
    wiring = SimWiring(f"sim:{scenario}", gpus, gpu_source, host_source, clock, sim,
                       log_path=log_path, direct_lines=direct)
    if speed > 0 and config.sim.status_listen.strip():
        from gapwatch.sources.cuzk_status_server import CuzkStatusServer

        host, port = split_listen(config.sim.status_listen, "status_listen")
        try:
            wiring.status_server = CuzkStatusServer(sim.status_bytes, host=host, port=port)
        except OSError as exc:
            raise SourceUnavailable(f"[sim] status_listen {config.sim.status_listen!r}: "
                                    f"cannot listen: {exc.strerror or exc}") from None
        resources.callback(wiring.status_server.stop)
        # A killed simulated cuzk stops listening, and its restart listens again.
        sim.status_listener = wiring.status_server
        sim.status_listen = f"{host}:{wiring.status_server.port}"
    return wiring


def batch_settings(config: Config) -> dict[str, int]:
    """`[sim.batch_wait]`: cuzk's batch settings for the scenario whose requests come one at a
    time (`SimProver`'s `max_batch_size`, `max_batch_wait_ms`)."""
    return {"max_batch_size": config.sim.batch_wait.max_batch_size,
            "max_batch_wait_ms": config.sim.batch_wait.max_batch_wait_ms}


def speed_zero_sinks(wiring: SimWiring, config: Config, session: Any) -> list[Any]:
    """At speed 0: the sinks that parse the prover's lines and hand its status over inline."""
    if wiring.direct_lines is None:
        return []
    from gapwatch.sources.sim import SimStatusFeed

    return [DirectLogFeeder(wiring.direct_lines, session, config),
            SimStatusFeed(wiring.sim, config.cuzk.status_period_s, session.on_record)]


def sim_copy_feed(wiring: SimWiring, config: Config, session: Any) -> Any:
    """The sink that hands the session the simulated prover's copies (`[sim] copy_trace`)."""
    from gapwatch.sources.sim import SimCopyFeed

    return SimCopyFeed(wiring.sim, config.sim.copies_per_partition, session.on_copies)


#: The simulator's temporary log lives in a folder of its own, made for it (`SimLogFolder`):
#: `gapwatch-sim-PID-XXXXXXXX/` (mkdtemp: a new name, mode 0700), holding `.gapwatch-sim` (the
#: marker that proves gapwatch made the folder) and `gapwatch-sim-SCENARIO.log` (and `.log.1`).
SIM_LOG_PREFIX = "gapwatch-sim-"
_SIM_FOLDER = re.compile(rf"{SIM_LOG_PREFIX}(\d+)-([a-z0-9_]{{8}})")
#: The log name a marker may name (a scenario's: `gapwatch-sim-SCENARIO.log`).
_SIM_LOG_NAME = re.compile(rf"{SIM_LOG_PREFIX}[a-z0-9_-]+\.log")
_MARKER = ".gapwatch-sim"


_MARKER_LOG = re.compile(rb"^log (.*)$", re.MULTILINE)


def _marker_text(pid: int, token: str, log_name: str) -> bytes:
    """The marker's words: the folder's pid and token, and the one log name it writes (with
    `.1`, its rotation): all that a sweep may remove besides the marker."""
    return (f"gapwatch simulator log folder\npid {pid}\ntoken {token}\nlog {log_name}\n"
            "removed by gapwatch when this process is gone\n").encode()


def _proven_log_name(proof: bytes, pid: int, token: str) -> str | None:
    """The log name a marker's words name, if they are the words a simulator of `pid` and
    `token` wrote; else None (not gapwatch's folder, or one of an older gapwatch)."""
    m = _MARKER_LOG.search(proof)
    if m is None:
        return None
    name = m.group(1).decode("ascii", "replace")
    if not _SIM_LOG_NAME.fullmatch(name):
        return None
    return name if proof == _marker_text(pid, token, name) else None


class SimLogFolder:
    """The simulated prover's log folder: made new in the temporary folder (mkdtemp: a name
    nobody held, mode 0700, so nothing can be planted in it), with a marker file naming this
    process, the folder's random token and the log's name, held locked while this process
    lives. A later simulator removes a folder that a process killed with -9 left
    (`sweep_stale_sim_logs`) only on that proof, and only once nothing holds the marker
    locked: a file of the user's whose name looks like a simulator log
    (`gapwatch-sim-999999-notes.log`), in the folder or beside it, or a folder without the
    marker, is never gapwatch's to remove."""

    def __init__(self, scenario: str, base: str | None = None) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=f"{SIM_LOG_PREFIX}{os.getpid()}-", dir=base))
        token = self.path.name.rsplit("-", 1)[1]
        fd = os.open(self.path / _MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o600)
        self.log_path = self.path / f"{SIM_LOG_PREFIX}{scenario}.log"
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # held while this process lives: `_in_use`
            os.write(fd, _marker_text(os.getpid(), token, self.log_path.name))
        except BaseException:
            os.close(fd)
            raise
        #: The marker, open and locked until `remove` (the kernel lets go at any death).
        self._marker_fd: int | None = fd
        # Registered before the log's own hook: atexit runs this after the log is removed.
        atexit.register(self.remove)

    def remove(self) -> None:
        """The marker and the folder, once the log's files are gone (`LineFile` removes
        them first); anything else in it leaves it as it is."""
        try:
            if os.listdir(self.path) == [_MARKER]:
                os.unlink(self.path / _MARKER)
                os.rmdir(self.path)
        except OSError:
            pass  # gone already, or a read-only /tmp: nothing more to do
        if self._marker_fd is not None:
            os.close(self._marker_fd)
            self._marker_fd = None
        atexit.unregister(self.remove)


def sweep_stale_sim_logs(folder: str | None = None) -> list[Path]:
    """Remove the simulator logs of gapwatch processes that are gone (killed with -9, so that
    neither `close()` nor the exit hook ran: they used to stay in /tmp for good): only in this
    user's folders that prove gapwatch made them (`SimLogFolder`'s marker, naming the folder's
    pid and token), only if that pid no longer runs and nothing holds the marker locked (a
    live gapwatch of another PID namespace: `_in_use`), only the log the marker names (and its
    `.1`), the marker and the folder: a file the user put in it stays, and the folder with it.
    Names alone prove nothing: a user's `gapwatch-sim-999999-notes.log` was removed.
    Returns what was removed."""
    removed: list[Path] = []
    base = Path(folder or tempfile.gettempdir())
    try:
        names = [e for e in os.scandir(base) if e.name.startswith(SIM_LOG_PREFIX)]
    except OSError:
        return removed
    for entry in names:
        m = _SIM_FOLDER.fullmatch(entry.name)
        if m is None or int(m.group(1)) == os.getpid():
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or \
                    _pid_runs(int(m.group(1))):
                continue
            removed += _remove_proven(Path(entry.path), st, int(m.group(1)), m.group(2))
        except OSError:
            continue
    return removed


def _remove_proven(path: Path, st: os.stat_result, pid: int, token: str) -> list[Path]:
    """The simulator's files in `path` (seen as `st`), if its marker proves it is a simulator
    log folder of `pid`: read and removed through the folder opened once, never through a
    link."""
    removed: list[Path] = []
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        here = os.fstat(fd)
        if (here.st_dev, here.st_ino) != (st.st_dev, st.st_ino):
            return removed  # swapped since it was looked at
        marker = os.open(_MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         dir_fd=fd)  # a FIFO there must not hang the demo
        try:
            proof = os.read(marker, 4096) if stat.S_ISREG(os.fstat(marker).st_mode) else b""
            log_name = _proven_log_name(proof, pid, token)
            if log_name is None or _in_use(marker):
                return removed
            for name in (log_name, f"{log_name}.1"):  # only the names it wrote
                if _regular_file_in(fd, name):
                    os.unlink(name, dir_fd=fd)
                    removed.append(path / name)
            os.unlink(_MARKER, dir_fd=fd)
        finally:
            os.close(marker)  # the lock `_in_use` took, held while removing, goes with it
    finally:
        os.close(fd)
    try:
        os.rmdir(path)  # not when something else is in it
    except OSError:
        pass
    return removed


def _regular_file_in(dir_fd: int, name: str) -> bool:
    """Whether `name` in that folder is a regular file (never through a link)."""
    try:
        return stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def _in_use(marker_fd: int) -> bool:
    """Whether the simulator that made the marker still runs: it holds the marker locked
    (`flock`) while it lives, and the kernel lets go when it dies, kill -9 included. The pid
    alone cannot tell: a gapwatch in a container sharing /tmp (`-v /tmp:/tmp`) names its folder
    by a pid of its own namespace, one that runs nowhere here, and its live log was removed.
    Otherwise this takes the lock, so two sweeps never remove one folder together."""
    try:
        fcntl.flock(marker_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    return False


def _pid_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # a process we may not signal is a process
    return True


class LineFile:
    """Appends the simulated prover's lines to a log file, as `cuzk > log 2>&1` would.

    The file is gapwatch's own temporary: it is rotated by rename at `max_bytes` (one old
    generation kept, so that a demo left running for weeks does not fill the disk; the tailer
    drains the renamed file, as after a logrotate) and removed on close, and at interpreter exit
    if close never came (an exception, Ctrl-C before the runtime stopped).

    It lives in a shared folder (/tmp), where another user may plant a name. After a rotation
    the name is free for an instant: the new file is created exclusively, never through a link
    planted there (a demo run by root appended to whatever file the link named); anything
    planted stops the demo's log, said once. Only the files it made are removed (by inode: in a
    sticky /tmp nobody else can rename them away).
    """

    def __init__(self, path: Path, max_bytes: int = 16 << 20) -> None:
        self.path = path
        self.old_path = path.with_name(path.name + ".1")
        self.max_bytes = max_bytes
        self._f = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        #: (device, inode) of the file at `path` and of the one rotated to `old_path`.
        self._made: dict[Path, tuple[int, int]] = {path: _file_id(self._f.fileno())}
        self._written = 0
        self._lock = threading.Lock()
        atexit.register(self._remove)

    def write(self, stream: str, text: str) -> None:
        with self._lock:
            if self._f.closed:
                return
            self._f.write(text + "\n")
            self._written += len(text) + 1
            if self._written >= self.max_bytes:
                self._rotate()

    def _rotate(self) -> None:
        self._f.close()  # lines are dropped from now on, unless a new file is made below
        self._written = 0
        if not self._ours_or_free(self.old_path):
            say(f"gapwatch: the simulated prover's log stops: {self.old_path} is not its own; "
                "it is left as it is")
            return
        os.replace(self.path, self.old_path)
        self._made[self.old_path] = self._made.pop(self.path)
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_APPEND | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            say(f"gapwatch: the simulated prover's log stops: {self.path} was taken after its "
                f"rotation ({exc.strerror or exc}); it is left as it is")
            return
        self._f = os.fdopen(fd, "a", encoding="utf-8")
        self._made[self.path] = _file_id(fd)

    def _ours_or_free(self, p: Path) -> bool:
        """Nothing at `p`, or the file this made there (by inode, never through a link)."""
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self._made.get(p)

    def flush(self) -> None:
        with self._lock:
            if not self._f.closed:
                self._f.flush()

    def close(self) -> None:
        with self._lock:
            self._f.close()
        self._remove()
        atexit.unregister(self._remove)

    def _remove(self) -> None:
        for p in list(self._made):
            try:
                if self._ours_or_free(p):
                    p.unlink()
            except FileNotFoundError:
                pass
            except OSError:
                pass  # a read-only /tmp?: nothing more to do
            self._made.pop(p, None)


def _file_id(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


class FlushingSource:
    """Wraps the sim so that its log lines reach the file once per tick (like a real prover
    writing as it goes), not whenever Python's buffer fills."""

    def __init__(self, inner: Any, lines: LineFile) -> None:
        self.inner = inner
        self.lines = lines

    def open(self) -> list[GpuInfo]:
        result: list[GpuInfo] = self.inner.open()
        return result

    def read(self, t_mono_ns: int, t_wall_s: float, lateness_ns: int) -> Any:
        tick = self.inner.read(t_mono_ns, t_wall_s, lateness_ns)
        self.lines.flush()
        return tick

    def close(self) -> None:
        self.inner.close()
        self.lines.close()


class DirectLogFeeder:
    """At speed 0 the simulated prover's lines are parsed as they are produced (a sink that
    runs after each record, on the sampler thread) instead of going through a file."""

    def __init__(self, lines: list[tuple[str, str]], session: Any, config: Config) -> None:
        from gapwatch.logs.parse import LogParser

        self.lines = lines
        self.session = session
        self.parser = LogParser(config.logs)
        self._busy = False

    def on_header(self, header: SessionHeader) -> None:
        pass

    def on_record(self, record: Record) -> None:
        if self._busy or not self.lines or record.type != "gpu":
            return
        self._busy = True  # on_log_event re-enters the sinks
        try:
            pending = list(self.lines)
            self.lines.clear()
            t = getattr(record, "t_wall_s", 0.0)
            for stream, text in pending:
                for ev in self.parser.parse_line(text, stream, None, t):
                    self.session.on_log_event(ev)
        finally:
            self._busy = False

    def close(self) -> None:
        pass
