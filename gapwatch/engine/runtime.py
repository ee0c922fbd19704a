"""Runtime: build and run one session from a `--source` string, the same way for every command.

Who calls it: `gapwatch watch`, `demo`, `record`, `replay` (and the dashboard through them).
It wires a source (NVML, the simulated prover, or a recording) to the sampler or the replay
driver, follows the prover logs, listens for the copy trace (`--copytrace`), attaches the
recorder and the Prometheus exporter, and gives the UI one object to start, stop and ask for
status. It never imports Textual.

Sources:
- `nvml`: real GPUs, host pressure, `SystemClock`.
- `sim[:SCENARIO]`: the simulated prover. At speed > 0 its log is written to a file that the real
  tailer follows (the demo exercises the same path as a real prover's log); at speed 0 (as fast as
  possible) the lines go straight to the parser, since no tailer can keep up with virtual time.
- `replay:FILE`: a recording or a trace CSV, paced by its own timestamps (`--speed`).

Side sources, beside the sampler or replay driver, each with `start()`, `stop()`, `status()`:
the log followers (`--log`), and one cuzk status poller per `--cuzk-status` URL
(`gapwatch.sources.cuzk_status.StatusPoller`, on its own thread; its snapshots join the session
through `Session.on_record`). The simulated prover serves its own status endpoint at speed > 0
(`[sim] status_listen`) and is polled when no other URL is given; at speed 0 its snapshots are
handed over directly (`SimStatusFeed`), since no poller can keep pace with virtual time.
"""

from __future__ import annotations

import atexit
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gapwatch.core.config import Config, split_listen
from gapwatch.core.models import GpuInfo, LinkState, LogEvent, Notice, Record, SessionHeader
from gapwatch.engine.clock import Clock, ScaledClock, SystemClock, VirtualClock
from gapwatch.engine.replay import ReplayDriver
from gapwatch.engine.sampler import LatenessStats, Sampler
from gapwatch.engine.session import Session, default_header
from gapwatch.engine.store import SeriesStore
from gapwatch.sinks.output_file import ExistsPolicy, OutputPlan, OutputRefused, check_output
from gapwatch.sinks.recorder import Recorder, RecordingStatus
from gapwatch.sources import GpuSource, HostSource, SideSource, SourceUnavailable
from gapwatch.sources.copytrace import CopyTraceReader, CopyTraceStatus
from gapwatch.sources.cuzk_status import PollerStatus, StatusPoller
from gapwatch.sources.files import read_any
from gapwatch.sources.recording import Recording, RecordingError


@dataclass(frozen=True)
class RuntimeStatus:
    """What the dashboard footer (and `record`'s summary) shows about the machinery itself."""

    source: str
    period_ms: float
    lateness: LatenessStats | None
    gpu_sources: dict[int, str]
    logs: dict[str, str] = field(default_factory=dict)
    log_counters: dict[str, int] = field(default_factory=dict)
    recording_path: str | None = None
    #: The recording's health (writing / failing with its error / closed, records dropped);
    #: None without a recording. The footer shows `recording.error` while it is failing.
    recording: RecordingStatus | None = None
    prometheus_address: str | None = None
    done: bool = False
    #: The copy trace's reader (None when `--copytrace` is off).
    copytrace: CopyTraceStatus | None = None
    #: The latest PCIe link reading under traffic per GPU (a trained-down link changes what
    #: "% of link" means: the footer says so).
    links: dict[int, LinkState] = field(default_factory=dict)
    #: The GPU source's slow-reading counters (`NvmlSource.counters`: /proc readings and their
    #: problems, link reads); empty for other sources.
    source_counters: dict[str, int] = field(default_factory=dict)
    #: One per polled status URL (cuzk `/status`), in the order given.
    provers: list[PollerStatus] = field(default_factory=list)
    #: Where the simulated prover serves its own status, when it does.
    sim_status_url: str | None = None


def parse_source(source: str) -> tuple[str, str]:
    """Split `kind[:arg]`; raise SourceUnavailable for an unknown kind."""
    kind, _, arg = source.partition(":")
    if kind not in ("nvml", "sim", "replay"):
        raise SourceUnavailable(f"unknown --source {source!r}: use nvml, sim[:SCENARIO] or "
                                "replay:FILE")
    if kind == "replay" and not arg:
        raise SourceUnavailable("--source replay:FILE needs a file")
    return kind, arg


class _LineFile:
    """Appends the simulated prover's lines to a log file, as `cuzk > log 2>&1` would.

    The file is gapwatch's own temporary: it is rotated by rename at `max_bytes` (one old
    generation kept, so that a demo left running for weeks does not fill the disk; the tailer
    drains the renamed file, as after a logrotate) and removed on close, and at interpreter exit
    if close never came (an exception, Ctrl-C before the runtime stopped).
    """

    def __init__(self, path: Path, max_bytes: int = 16 << 20) -> None:
        self.path = path
        self.old_path = path.with_name(path.name + ".1")
        self.max_bytes = max_bytes
        self._f = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
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
                self._f.close()
                os.replace(self.path, self.old_path)
                self._f = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
                self._written = 0

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
        for p in (self.path, self.old_path):
            try:
                p.unlink()
            except FileNotFoundError:
                pass
            except OSError:
                pass  # someone else's now (a read-only /tmp?): nothing more to do


class _FlushingSource:
    """Wraps the sim so that its log lines reach the file once per tick (like a real prover
    writing as it goes), not whenever Python's buffer fills."""

    def __init__(self, inner: Any, lines: _LineFile) -> None:
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


class Runtime:
    """One running session: source driver, log follower, sinks, exporter."""

    def __init__(self, config: Config, source: str, header: SessionHeader, session: Session,
                 store: SeriesStore) -> None:
        self.config = config
        self.source = source
        self.header = header
        self.session = session
        self.store = store
        self.done = threading.Event()
        self.sampler: Sampler | None = None
        self.replay: ReplayDriver | None = None
        self.followers: list[Any] = []
        #: Listens for the copy-trace library's datagrams (`--copytrace`); a side source like
        #: the log followers: started, stopped and asked for status with them.
        self.copytrace: CopyTraceReader | None = None
        self.pollers: list[StatusPoller] = []
        #: The simulated prover's status server (`CuzkStatusServer`), when it serves one.
        self.sim_status_server: Any = None
        self.exporter: Any = None
        self.recorder: Recorder | None = None
        self.sim_log_path: Path | None = None
        #: Log files read whole rather than followed (`replay --log`), with their state.
        self.read_logs: dict[str, str] = {}
        self._closables: list[Any] = []
        self._stopped = False
        self._watch: threading.Thread | None = None

    def side_sources(self) -> list[SideSource]:
        """The sources with their own threads beside the sampler or replay driver."""
        out: list[SideSource] = list(self.followers)
        if self.copytrace is not None:
            out.append(self.copytrace)
        out.extend(self.pollers)
        return out

    def start(self) -> None:
        if self.recorder is not None:
            self.recorder.start()
        if self.sim_status_server is not None:
            self.sim_status_server.start()  # before its poller's first request
        for side in self.side_sources():
            side.start()
        if self.sampler is not None:
            self.sampler.start()
            driver_done = self.sampler.finished
        elif self.replay is not None:
            self.replay.start()
            driver_done = self.replay.finished
        else:  # pragma: no cover - build_runtime always sets one
            raise RuntimeError("runtime has no driver")
        self._watch = threading.Thread(target=self._wait_driver, args=(driver_done,),
                                       name="gapwatch-done", daemon=True)
        self._watch.start()

    def _wait_driver(self, driver_done: threading.Event) -> None:
        driver_done.wait()
        # The data has ended (a replay's file, a timed run): settle the detector before saying
        # so, so the dashboard's last picture is the one `report` gives.
        self.session.finish()
        self.done.set()

    def wait(self, timeout_s: float | None = None) -> bool:
        return self.done.wait(timeout_s)

    def stop(self) -> None:
        """Stop every thread, settle the detector, close the sinks. Safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        if self.sampler is not None:
            self.sampler.stop()
        if self.replay is not None:
            self.replay.stop()
        for side in self.side_sources():
            side.stop()
        if self.recorder is not None:
            # Before the session's lock is taken by close(): the writer thread may be handing a
            # notice to the session.
            self.recorder.stop_writer()
        self.session.close()
        if self.exporter is not None:
            self.exporter.stop()
        for c in self._closables:
            c.close()
        self.done.set()

    def status(self) -> RuntimeStatus:
        logs: dict[str, str] = dict(self.read_logs)
        counters: dict[str, int] = {}
        for follower in self.followers:
            st = follower.status()
            for f in st.files:
                logs[f.path] = f.state
            for key in ("lines", "parsed", "unparsed", "cut_lines"):
                counters[key] = counters.get(key, 0) + int(getattr(st, key, 0))
        return RuntimeStatus(
            source=self.source,
            period_ms=self.header.period_ms,
            lateness=self.sampler.lateness() if self.sampler is not None else None,
            gpu_sources={g.index: g.sm_source or "none" for g in self.header.gpus},
            logs=logs,
            log_counters=counters,
            recording_path=str(self.recorder.path) if self.recorder is not None else None,
            recording=self.recorder.status() if self.recorder is not None else None,
            prometheus_address=getattr(self.exporter, "address", None),
            done=self.done.is_set(),
            provers=[p.status() for p in self.pollers],
            sim_status_url=(self.sim_status_server.url
                            if self.sim_status_server is not None else None),
            copytrace=self.copytrace.status() if self.copytrace is not None else None,
            links=self.store.links(),
            # Only the NVML source takes slow readings; the sim and replay have no counters.
            source_counters=dict(getattr(self.sampler.gpu_source, "counters", {}))
            if self.sampler is not None else {},
        )


def _clock_for(speed: float) -> Clock:
    if speed == 0:
        return VirtualClock(start_mono_ns=time.monotonic_ns(), start_wall_s=time.time())
    if speed == 1:
        return SystemClock()
    return ScaledClock(speed)


def _follower(paths: list[str], config: Config, session: Session, from_start: bool,
              clock: Clock, stdin_fd: int = 0) -> Any:
    """The log follower, on the session's clock: a line without a time of its own is stamped
    when it arrives, and that stamp must be on the same time line as the samples (a demo at
    `--speed 2` runs its samples, and its log's own timestamps, twice as fast as the wall)."""
    from gapwatch.logs.follow import LogFollower

    return LogFollower(paths, config.logs.model_copy(update={"from_start": from_start}),
                       on_event=session.on_log_event, on_notice=session.on_notice,
                       clock=clock, stdin_fd=stdin_fd)


#: What `build_runtime` raises when a command cannot start; the CLI prints the message on one
#: line and exits 2.
STARTUP_ERRORS: tuple[type[Exception], ...] = (SourceUnavailable, OutputRefused)


def build_runtime(
    config: Config,
    source: str,
    *,
    speed: float | None = None,
    record_path: str | None = None,
    record_exists: ExistsPolicy = "refuse",
    log_paths: list[str] | None = None,
    duration_s: float | None = None,
    stdin_fd: int = 0,
) -> Runtime:
    """Build (but do not start) a runtime.

    The order keeps a failed start harmless: first the checks that change nothing (the source
    string, the recording's path, the Prometheus port: bound, not yet served), then the source
    is opened, and only then is the recording created (or, with `record_exists="replace"`,
    truncated). A failure at any step undoes the earlier ones, so that every file is left as it
    was. Raises one of STARTUP_ERRORS (SourceUnavailable, OutputRefused). `stdin_fd` is where
    `--log -` reads from (the dashboard moves a piped stdin there, see
    `gapwatch.engine.terminal`)."""
    parse_source(source)  # an unknown kind fails before anything is checked or bound
    if speed is not None and speed < 0:
        raise SourceUnavailable("--speed must be >= 0")
    plan = check_output(record_path, record_exists) if record_path else None
    exporter: Any = None
    if config.prometheus.listen:
        from gapwatch.sinks.prometheus import ExporterError, bind_exporter

        try:
            exporter = bind_exporter(config.prometheus.listen)
        except ExporterError as exc:
            raise SourceUnavailable(str(exc)) from None
    try:
        rt = _build(config, source, speed=speed, plan=plan, log_paths=log_paths,
                    duration_s=duration_s, stdin_fd=stdin_fd)
    except BaseException:
        if exporter is not None:
            exporter.stop()
        raise
    if exporter is not None:
        rt.exporter = exporter
        exporter.serve(rt.session, rt.status)
    return rt


def _recorder(plan: OutputPlan, config: Config, session: Session) -> Recorder:
    """The recording sink; its failures become notices (dashboard, stderr, /metrics) and a
    store counter."""

    def on_problem(notice: Notice) -> None:
        if notice.level == "error":
            session.store.count("recording_failures")
        session.on_notice(notice)

    return Recorder(plan, config.record.flush_interval_s, on_problem=on_problem,
                    retry_max_s=config.record.retry_max_s,
                    max_pending_bytes=config.record.max_pending_mib << 20)


def _build(
    config: Config,
    source: str,
    *,
    speed: float | None,
    plan: OutputPlan | None,
    log_paths: list[str] | None,
    duration_s: float | None,
    stdin_fd: int,
) -> Runtime:
    from gapwatch.core.detector import GapDetector  # local: keeps `gapwatch --help` light

    kind, arg = parse_source(source)
    speed = 1.0 if speed is None else speed
    period_ms = config.sampler.period_ms
    paths = list(config.logs.paths) if log_paths is None else list(log_paths)

    gpu_source: GpuSource | None = None
    host_source: HostSource | None = None
    recording: Recording | None = None
    sim_lines: _LineFile | None = None
    direct_lines: list[tuple[str, str]] | None = None
    clock: Clock = SystemClock()
    sim_log: Path | None = None

    status_urls = list(config.cuzk.status_url)
    if status_urls and (kind == "replay" or (kind == "sim" and speed == 0)):
        why = "a replay has its recorded snapshots" if kind == "replay" else \
            "--speed 0 runs in virtual time (the simulator's own snapshots are used)"
        raise SourceUnavailable(f"--cuzk-status polls a live prover in real time: {why}")
    sim_server: Any = None
    sim_feed: Any = None

    if kind == "nvml":
        from gapwatch.sources.host import HostSource as PsutilHostSource
        from gapwatch.sources.nvml import NvmlSource

        gpu_source = NvmlSource(config.sampler)
        gpus = gpu_source.open()
        if config.host.enabled:
            host_source = PsutilHostSource(config.host)
    elif kind == "sim":
        from gapwatch.sources.sim import SimHostSource, SimProver, parse_scenarios

        scenario = arg or config.sim.scenario
        try:
            # `sim:pageable,chained`: one scenario per GPU (their number is the GPU count).
            names = parse_scenarios(scenario, config.sim.gpus)
        except ValueError as exc:
            raise SourceUnavailable(str(exc)) from None
        clock = _clock_for(speed)
        if speed > 0:
            fd, name = tempfile.mkstemp(prefix=f"gapwatch-sim-{names[0]}-", suffix=".log")
            os.close(fd)
            sim_log = Path(name)
            sim_lines = _LineFile(sim_log)
            sim = SimProver(names, seed=config.sim.seed, on_line=sim_lines.write,
                            keep_truth=False)
            gpu_source = _FlushingSource(sim, sim_lines)
        else:
            direct_lines = []
            sink_lines = direct_lines
            sim = SimProver(names, seed=config.sim.seed,
                            on_line=lambda s, t: sink_lines.append((s, t)), keep_truth=False)
            gpu_source = sim
        host_source = SimHostSource(sim)
        gpus = gpu_source.open()
        source = f"sim:{scenario}"
        if speed > 0 and config.sim.status_listen.strip():
            from gapwatch.sources.cuzk_status_server import CuzkStatusServer

            host, port = split_listen(config.sim.status_listen, "status_listen")
            try:
                sim_server = CuzkStatusServer(sim.status_bytes, host=host, port=port)
            except OSError as exc:
                raise SourceUnavailable(f"[sim] status_listen {config.sim.status_listen!r}: "
                                        f"cannot listen: {exc.strerror or exc}") from None
        elif speed == 0:
            from gapwatch.sources.sim import SimStatusFeed

            sim_feed = (sim, config.cuzk.status_period_s)
    else:
        try:
            recording = read_any(arg)
        except RecordingError as exc:
            raise SourceUnavailable(str(exc)) from None
        gpus = list(recording.header.gpus)
        period_ms = recording.header.period_ms

    header = default_header(source, gpus, period_ms, config.model_dump(mode="json"))
    history_s = max([config.snapshot.history_s, *config.ui.windows_s, config.detector.window_s])
    store = SeriesStore(gpus, period_s=period_ms / 1000, history_s=history_s)
    detector = GapDetector(config.detector, gpus, period_s=period_ms / 1000)
    session = Session(header, store, detector=detector)
    rt = Runtime(config, source, header, session, store)

    try:
        if config.copytrace.enabled and kind != "replay":
            # A replay feeds the copies it recorded; live, copies come from the prover's library.
            reader = CopyTraceReader(config.copytrace.socket or None, gpus, session.on_record,
                                     session.on_notice, socket_mode=config.copytrace.socket_mode)
            reader.open()  # SourceUnavailable: the command says why and exits 2
            rt.copytrace = reader
        # Last of all, once every source is open: only now is the recording created (or, with
        # --force, truncated).
        if plan is not None:
            rt.recorder = _recorder(plan, config, session)
            session.add_sink(rt.recorder)
    except BaseException:
        for opened in (gpu_source, host_source):
            if opened is not None:
                opened.close()
        for started in (rt.copytrace, sim_server):
            if started is not None:
                started.stop()
        raise

    if gpu_source is not None:
        sim_duration = duration_s if duration_s is not None else (config.sim.duration_s or None)
        dur_ns = int(sim_duration * 1e9) if sim_duration else None
        rt.sampler = Sampler(gpu_source, host_source, session, clock, int(period_ms * 1e6),
                             duration_ns=dur_ns)
        rt._closables.append(gpu_source)
        if host_source is not None:
            rt._closables.append(host_source)
    else:
        assert recording is not None
        rt.replay = ReplayDriver(recording, session, speed,
                                 _replay_log_events(paths, config, session))
        rt.read_logs = {path: "read whole" for path in paths}

    if direct_lines is not None:
        session.add_sink(_DirectLogFeeder(direct_lines, session, config))
    if sim_feed is not None:
        session.add_sink(SimStatusFeed(sim_feed[0], sim_feed[1], session.on_record))
    if sim_server is not None:
        rt.sim_status_server = sim_server
        rt._closables.append(_Stopper(sim_server))  # also closed if start() never ran
    pollers: list[tuple[str, str | None]] = [(u, None) for u in status_urls]
    if not pollers and sim_server is not None:
        pollers = [(str(sim_server.url), "sim")]
    for poll_url, label in pollers:
        rt.pollers.append(StatusPoller(
            poll_url, config.cuzk.status_period_s, config.cuzk.status_timeout_s,
            on_status=session.on_record, on_notice=session.on_notice, clock=clock, prover=label,
        ))
    if paths and kind != "replay":
        rt.followers.append(_follower(paths, config, session, config.logs.from_start, clock,
                                      stdin_fd))
    if sim_log is not None:
        # The sim's log is new and empty: read it from its start, so that no line written
        # before the tailer's first look is lost.
        rt.sim_log_path = sim_log
        rt.followers.append(_follower([str(sim_log)], config, session, True, clock))
    return rt


def _replay_log_events(paths: list[str], config: Config, session: Session) -> list[LogEvent]:
    """`replay FILE --log LOG`: the log files read whole and parsed (as `report --log` does),
    to be merged into the replay by time. A log that cannot be read stops the replay at start."""
    if not paths:
        return []
    if "-" in paths:
        raise SourceUnavailable("replay --log takes files (a replay reads them whole), not '-'")
    from gapwatch.logs.files import parse_log_files

    try:
        events, counters = parse_log_files(paths, config)
    except OSError as exc:
        raise SourceUnavailable(f"cannot read log {exc.filename}: {exc.strerror}") from None
    for key, n in counters.items():
        if n:
            session.store.count(f"log_{key}", n)
    return events


class _Stopper:
    """`close()` for an object that has `stop()` (safe twice), for the runtime's closables."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def close(self) -> None:
        self.inner.stop()


class _DirectLogFeeder:
    """At speed 0 the simulated prover's lines are parsed as they are produced (a sink that
    runs after each record, on the sampler thread) instead of going through a file."""

    def __init__(self, lines: list[tuple[str, str]], session: Session, config: Config) -> None:
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
