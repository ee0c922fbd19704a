"""Runtime: build and run one session from a `--source` string, the same way for every command.

Who calls it: `gapwatch watch`, `demo`, `record`, `replay` (and the dashboard through them).
It wires a source (NVML, the simulated prover, or a recording) to the sampler or the replay
driver, follows the prover logs, listens for the copy trace (`--copytrace`), attaches the
recorder and the Prometheus exporter, and gives the UI one object to start, stop and ask for
status. It never imports Textual.

Sources:
- `nvml`: real GPUs, host pressure, `SystemClock`.
- `sim[:SCENARIO[,SCENARIO...]]`: the simulated prover, wired like a live one
  (`gapwatch.engine.sim_wiring`: its log through a file and the real tailer, its `/status`
  served and polled; at speed 0 both handed over inline).
- `replay:FILE`: a recording or a trace CSV, paced by its own timestamps (`--speed`).

The runtime owns what it opened: `build_runtime` registers every source, server, file and the
exporter on one `ExitStack`, which a failed build unwinds and `Runtime.stop()` closes.

Every thread it starts (sampler or replay driver, log tailers, status pollers, the copy-trace
reader, the recorder's writer, the `/metrics` server) runs under the runtime's `ThreadWatch`: one
that dies is an error notice (stderr for `record`, a toast, the recording), the store counter
`thread_deaths`, `RuntimeStatus.threads` (the footer's alert, the `/metrics` gauges) and a
non-zero exit of `record`; it is restarted where its owner says that is safe.

Side sources, beside the sampler or replay driver, each with `start()`, `stop()`, `status()`:
the log followers (`--log`), and one cuzk status poller per `--cuzk-status` URL
(`gapwatch.sources.cuzk_status.StatusPoller`, on its own thread; its snapshots join the session
through `Session.on_record`). The simulated prover serves its own status endpoint at speed > 0
(`[sim] status_listen`) and is polled when no other URL is given; at speed 0 its snapshots are
handed over directly (`SimStatusFeed`), since no poller can keep pace with virtual time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from gapwatch.base.clock import Clock, SystemClock
from gapwatch.base.watch import ThreadWatch, thread_label
from gapwatch.config import Config, judged_config
from gapwatch.core import fmt
from gapwatch.core.blind import Bye, blind_summary, blind_words
from gapwatch.core.bounds import MAX_PROVERS
from gapwatch.core.health import event_words
from gapwatch.core.models import (
    BlindSpot,
    GpuInfo,
    LogEvent,
    Notice,
    ProverEvent,
    ProverStatus,
    SessionHeader,
)
from gapwatch.core.prover_watch import alert_line
from gapwatch.cuzk.pipeline import timeline_epoch
from gapwatch.cuzk.post_deadlines import PostDeadlines
from gapwatch.cuzk.prover import CuzkProver
from gapwatch.engine.replay import ReplayDriver
from gapwatch.engine.sampler import Sampler
from gapwatch.engine.session import Session, default_header
from gapwatch.engine.shared_prover import SharedProver
from gapwatch.engine.sim_wiring import SimWiring, open_sim, sim_copy_feed, speed_zero_sinks
from gapwatch.engine.status import RuntimeStatus
from gapwatch.engine.store import SeriesStore
from gapwatch.sinks.output_file import (
    ExistsPolicy,
    OutputPlan,
    OutputRefused,
    check_output,
)
from gapwatch.sinks.recorder import Recorder
from gapwatch.sinks.segments import SegmentPlan, check_segments
from gapwatch.sources import GpuSource, HostSource, SideSource, SourceUnavailable
from gapwatch.sources.copytrace import CopyTraceReader
from gapwatch.sources.cuzk_status import StatusPoller
from gapwatch.sources.files import read_any
from gapwatch.sources.recording import Reading, Recording, RecordingError
from gapwatch.sources.time_window import TimeWindow

if TYPE_CHECKING:  # imported where they are used: a replay or report does not load them
    from gapwatch.logs.follow import LogFollower
    from gapwatch.offline.log_around import LogAround
    from gapwatch.offline.replay_logs import ReplayLogs
    from gapwatch.sinks.prometheus import ExporterHandle
    from gapwatch.sources.cuzk_status_server import CuzkStatusServer


class _Watched(Protocol):
    """A part that runs a thread of its own under the runtime's `ThreadWatch`."""

    watch: ThreadWatch


def parse_source(source: str) -> tuple[str, str]:
    """Split `kind[:arg]`; raise SourceUnavailable for an unknown kind."""
    kind, _, arg = source.partition(":")
    if kind not in ("nvml", "sim", "replay"):
        raise SourceUnavailable(f"unknown --source {source!r}: use nvml, sim[:SCENARIO] or "
                                "replay:FILE")
    if kind == "replay" and not arg:
        raise SourceUnavailable("--source replay:FILE needs a file")
    return kind, arg


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
        #: The sampler's GPU source when it has a thread of its own (NVML's XID wait).
        self.source_threads: _Watched | None = None
        self.replay: ReplayDriver | None = None
        self.followers: list[LogFollower] = []
        #: Listens for the copy-trace library's datagrams (`--copytrace`); a side source like
        #: the log followers: started, stopped and asked for status with them.
        self.copytrace: CopyTraceReader | None = None
        self.pollers: list[StatusPoller] = []
        #: The simulated prover's status server (`CuzkStatusServer`), when it serves one.
        self.sim_status_server: CuzkStatusServer | None = None
        self.exporter: ExporterHandle | None = None
        self.recorder: Recorder | None = None
        #: Write the recording from the feeding thread (virtual time: see `_build`).
        self.record_inline = False
        self.sim_log_path: Path | None = None
        #: Log files read whole rather than followed (`replay --log`), with their state.
        self.read_logs: dict[str, str] = {}
        #: A replay's: the deadlines its PoSt are judged by, and where each came from (the
        #: recording's own, unless this run's config names the key: `config.judged_config`,
        #: already in `config`); None for a live source.
        self.post_deadlines: PostDeadlines | None = None
        #: Everything `build_runtime` opened (sources, servers, the exporter, temporary files),
        #: closed in reverse order by `stop()`: the runtime owns what it opened.
        self.resources = ExitStack()
        #: Every thread of the runtime runs under it (see the module docstring).
        self.threads = ThreadWatch(on_death=self._thread_died)
        self._stopped = False
        self._watch: threading.Thread | None = None

    def side_sources(self) -> list[SideSource]:
        """The sources with their own threads beside the sampler or replay driver."""
        out: list[SideSource] = list(self.followers)
        if self.copytrace is not None:
            out.append(self.copytrace)
        out.extend(self.pollers)
        return out

    def _thread_died(self, name: str, exc: BaseException, restarting: bool) -> None:
        """A thread of ours raised: say it (and count it) through the session, so that `record`
        prints it, the dashboard shows it and the recording keeps it."""
        self.store.count("thread_deaths")
        what = ("restarted in a moment" if restarting else
                "not restarted (it died too often, or cannot be resumed)")
        self.session.on_notice(Notice(
            time.monotonic_ns(), time.time(), "error",
            f"the {thread_label(name)} thread died ({exc!r}); {what}"))

    def _watched(self) -> list[_Watched]:
        """Everything that starts a thread of its own."""
        out: list[_Watched | None] = [*self.side_sources(), self.sampler,
                                      self.source_threads, self.replay, self.recorder]
        if self.exporter is not None:
            out.append(self.exporter.server)
        return [x for x in out if x is not None]

    def start(self) -> None:
        for part in self._watched():
            part.watch = self.threads
        if self.recorder is not None and not self.record_inline:
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
        # so, so the dashboard's last picture is the one `report` gives (a replay's PoSt in
        # flight judged at its recording's end as `report` judges it; live, the reader's
        # passes moved it there already).
        self.session.finish(self.replay.read_by_at_end() if self.replay is not None else None)
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
        self.resources.close()
        self.done.set()

    def _blind_status(self) -> dict[str, str | None]:
        return _blind_words(*self.store.blind())

    def status(self) -> RuntimeStatus:
        logs: dict[str, str] = dict(self.read_logs)
        counters: dict[str, int] = {}
        for follower in self.followers:
            st = follower.status()
            for f in st.files:
                logs[f.path] = f.state
            for key in ("lines", "parsed", "unparsed", "cut_lines", "nul_bytes"):
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
            # A dashboard's replay at the end of its file waits for a seek back: ended all the same.
            done=self.done.is_set() or (self.replay is not None and self.replay.at_end),
            provers=[p.status() for p in self.pollers],
            sim_status_url=(self.sim_status_server.url
                            if self.sim_status_server is not None else None),
            **self._blind_status(),
            **_prover_alert_fields(self.store),
            gpu_error_alert=gpu_error_alert(self.store),
            running_proofs=list(self.store.running_proofs()),
            copytrace=self.copytrace.status() if self.copytrace is not None else None,
            threads=self.threads.health(),
            links=self.store.links(),
            # Only the NVML source takes slow readings; the sim and replay have no counters.
            source_counters=dict(getattr(self.sampler.gpu_source, "counters", {}))
            if self.sampler is not None else {},
            replay=self.replay.position_words() if self.replay is not None else None,
        )


#: Data seconds after a prover warning or error during which the footer alerts about it.
PROVER_ALERT_S = 300.0


def _prover_alert_fields(store: SeriesStore) -> dict[str, str | None]:
    """`RuntimeStatus.prover_alert` and the job it is of (`prover_alert_job_id`), from one
    look at the store."""
    found = store.prover_alert(PROVER_ALERT_S)
    return {"prover_alert": _alert_words(found),
            "prover_alert_job_id": found[0].job_id if found is not None else None}


def _prover_alert(store: SeriesStore) -> str | None:
    """The footer's prover alert: the worst recent event's line, and how many others (their
    words are in the toasts, `record`'s stderr and the report)."""
    return _alert_words(store.prover_alert(PROVER_ALERT_S))


def _alert_words(found: tuple[ProverEvent, int] | None) -> str | None:
    """`_prover_alert`'s line of the worst recent event and how many others."""
    if found is None:
        return None
    ev, others = found
    line = alert_line(ev)
    if not others:
        return line
    # Before the event's words (`prover proof LATE at 09:49:00 (+2 more): ...`): the footer's
    # one line is cut at the pane's edge, and the count must survive an 80-column cut.
    head, sep, words = line.partition(": ")
    return f"{head} (+{others} more){sep}{words}"


def gpu_error_alert(store: SeriesStore) -> str | None:
    """The footer's GPU error alert: the latest recent XID, uncorrected ECC errors or GPU
    lost, within `PROVER_ALERT_S` of data time (`GPU ERROR at 09:49:00 (+1 more): GPU 0: XID
    79 ...`). A toast alone was gone after 8 s: an XID at night was never seen on the pane."""
    found = store.gpu_error_alert(PROVER_ALERT_S)
    if found is None:
        return None
    ev, others = found
    more = f" (+{others} more)" if others else ""
    return f"GPU ERROR at {fmt.clock(ev.t_wall_s)}{more}: {event_words(ev)}"


#: Data seconds after a blind spot ended during which the footer alerts about it.
BLIND_ALERT_S = 60.0


def _blind_words(spots: tuple[BlindSpot, ...], total: tuple[int, float], byes: list[Bye],
                 newest_wall_s: float | None) -> dict[str, str | None]:
    """RuntimeStatus's `blind` (every blind spot summed up) and `blind_recent` (the latest, for
    `BLIND_ALERT_S` of data after it ended)."""
    summary = blind_summary(spots, byes, total) or None
    recent = None
    if spots and newest_wall_s is not None:
        last = spots[-1]
        if newest_wall_s - (last.t_wall_s + last.duration_s) <= BLIND_ALERT_S:
            recent = blind_words(last, byes)
    return {"blind": summary, "blind_recent": recent}


def _follower(paths: list[str], config: Config, session: Session, from_start: bool,
              clock: Clock, on_clock: Callable[[int, float | None], None],
              stdin_fd: int = 0) -> LogFollower:
    """The log follower, on the session's clock: a line without a time of its own is stamped
    when it arrives, and that stamp must be on the same time line as the samples (a demo at
    `--speed 2` runs its samples, and its log's own timestamps, twice as fast as the wall).
    Its clock ticks the session's watcher (`on_clock`, a reader of the runtime's `AllReadBy`
    over `Session.on_reader_clock`): a panic that killed the process waits for no line to be
    said, nor a PoSt whose lines stopped to be said late."""
    from gapwatch.logs.follow import LogFollower

    return LogFollower(paths, config.logs.model_copy(update={"from_start": from_start}),
                       on_event=session.on_log_event, on_notice=session.on_notice,
                       clock=clock, stdin_fd=stdin_fd, on_clock=on_clock)


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
    window: TimeWindow | None = None,
) -> Runtime:
    """Build (but do not start) a runtime: the composition root of a session.

    The order keeps a failed start harmless: first the checks that change nothing (the source
    string, the recording's path, the Prometheus port: bound, not yet served), then the sources
    are opened, and only then is the recording created (or, with `record_exists="replace"`,
    truncated). Everything opened is registered on one `ExitStack`: a failure at any step
    closes what came before it, in reverse order, so every file and port is left as it was;
    on success the runtime takes the stack over and closes it in `stop()`. Raises one of
    STARTUP_ERRORS (SourceUnavailable, OutputRefused). `stdin_fd` is where `--log -` reads
    from (the dashboard moves a piped stdin there, see `gapwatch.engine.terminal`). `window`:
    a replay's part of its recording (`replay --since/--until`: `gapwatch.sources.time_window`;
    its `--log` events those near it, and the daemon's startup lines)."""
    kind, arg = parse_source(source)  # an unknown kind fails before anything is bound
    if speed is not None and speed < 0:
        raise SourceUnavailable("--speed must be >= 0")
    speed = 1.0 if speed is None else speed
    status_urls = list(config.cuzk.status_url)
    if status_urls and (kind == "replay" or (kind == "sim" and speed == 0)):
        why = "a replay has its recorded snapshots" if kind == "replay" else \
            "--speed 0 runs in virtual time (the simulator's own snapshots are used)"
        raise SourceUnavailable(f"--cuzk-status polls a live prover in real time: {why}")
    if len(set(status_urls)) > MAX_PROVERS:
        # The store, /metrics and the restart watch follow that many provers by name (a
        # recording may name any number): more URLs would push each other out at every poll.
        raise SourceUnavailable(f"--cuzk-status: {len(set(status_urls))} provers; one gapwatch "
                                f"follows at most {MAX_PROVERS} (run one per group of boxes)")
    plan = _recording_plan(config, record_path, record_exists) if record_path else None
    with ExitStack() as opened:
        exporter: ExporterHandle | None = None
        if config.prometheus.listen:
            from gapwatch.logs.parse import named_kinds
            from gapwatch.sinks.prometheus import ExporterError, bind_exporter

            try:
                exporter = bind_exporter(config.prometheus.listen)
            except ExporterError as exc:
                raise SourceUnavailable(str(exc)) from None
            opened.callback(exporter.stop)
        rt = _build(config, kind, arg, speed, plan, log_paths, duration_s, stdin_fd,
                    status_urls, opened, window)
        if exporter is not None:
            rt.exporter = exporter
            exporter.server.watch = rt.threads  # it starts its thread now
            exporter.serve(rt.session, rt.status, named_kinds(config.logs))
        rt.resources = opened.pop_all()
    return rt


def _recording_plan(config: Config, path: str, exists: ExistsPolicy
                    ) -> OutputPlan | SegmentPlan:
    """Where the recording goes: one file (`check_output`), or a set of segments within a disk
    budget (`[record] rotate_size` / `rotate_age`, `keep`: `check_segments`). Changes nothing.
    Raises OutputRefused."""
    rec = config.record
    if not rec.segmented:
        if rec.keep:
            raise OutputRefused("--keep goes with --rotate-size or --rotate-age (or their "
                                "[record] keys): without them the recording is one file")
        return check_output(path, exists)
    if exists != "refuse":
        raise OutputRefused(f"--{'force' if exists == 'replace' else 'rotate'} does not apply "
                            "to a recording in segments: a segment is never overwritten, each "
                            "run starts after the last one")
    return check_segments(path, rec.rotate_size_bytes, rec.rotate_age_s, rec.keep)


def _recorder(plan: OutputPlan | SegmentPlan, config: Config, session: Session) -> Recorder:
    """The recording sink; its failures become notices (dashboard, stderr, /metrics) and a
    store counter."""

    def on_problem(notice: Notice) -> None:
        if notice.level == "error":
            session.store.count("recording_failures")
        session.on_notice(notice)

    return Recorder(plan, config.record.flush_interval_s, on_problem=on_problem,
                    retry_max_s=config.record.retry_max_s,
                    max_pending_bytes=config.record.max_pending_mib << 20)


@dataclass(slots=True)
class _OpenSource:
    """The source `_open_source` opened: live (a GPU source, maybe a host source, on a clock)
    or recorded (a recording, replayed at its own period)."""

    label: str
    gpus: list[GpuInfo]
    period_ms: float
    clock: Clock
    gpu_source: GpuSource | None = None
    host_source: HostSource | None = None
    recording: Recording | None = None
    sim: SimWiring | None = None
    #: The GPU source itself when it runs a thread of its own (NVML's XID wait).
    threaded: _Watched | None = None


def _build(
    config: Config, kind: str, arg: str, speed: float, plan: OutputPlan | SegmentPlan | None,
    log_paths: list[str] | None, duration_s: float | None, stdin_fd: int,
    status_urls: list[str], opened: ExitStack, window: TimeWindow | None = None,
) -> Runtime:
    """Open the source, build the session, its sinks and side sources; register on `opened`
    everything that must be closed. The order matters: the recording is created only once
    every source is open (a source that fails leaves the file as it was)."""
    paths = list(config.logs.paths) if log_paths is None else list(log_paths)
    if kind != "replay":
        _refuse_gzip_logs(paths)  # before the recording is created
    src = _open_source(config, kind, arg, speed, opened, window)
    rt = _new_runtime(config, src, window)
    if src.sim is not None and config.sim.copy_trace == "on":
        # The simulated prover's copies, as its copy trace would deliver them.
        rt.session.add_sink(sim_copy_feed(src.sim, config, rt.session))
    if config.copytrace.enabled and kind != "replay":
        # A replay feeds the copies it recorded; live, copies come from the prover's library.
        _open_copytrace(rt, src.gpus, opened)
    if plan is not None:
        rt.recorder = _recorder(plan, config, rt.session)
        opened.callback(rt.recorder.close)  # a failed build: closed whole (safe twice)
        rt.session.add_sink(rt.recorder)
        # In virtual time (`--speed 0`) nothing waits on the wall clock: the feeder writes the
        # recording itself and waits for the disk, instead of outrunning a writer thread and
        # dropping log lines (a simulated day of 8 GPUs at full speed dropped 108,008).
        rt.record_inline = speed == 0
    _add_driver(rt, src, speed, duration_s, paths, opened, window)
    _add_pollers(rt, src, status_urls)
    _add_followers(rt, src, paths if kind != "replay" else [], stdin_fd)
    return rt


def _open_source(config: Config, kind: str, arg: str, speed: float,
                 opened: ExitStack, window: TimeWindow | None = None) -> _OpenSource:
    """Open what `--source` names: NVML (and the host's /proc), the simulated prover, or a
    recording (read whole, or its `window`: its header gives the GPUs and the period)."""
    if kind == "nvml":
        from gapwatch.sources.host import HostSource as ProcHostSource
        from gapwatch.sources.nvml import NvmlSource

        nvml = NvmlSource(config.sampler)
        gpus = nvml.open()
        opened.callback(nvml.close)
        src = _OpenSource(kind, gpus, config.sampler.period_ms, SystemClock(), gpu_source=nvml,
                          threaded=nvml)
        if config.host.enabled:
            src.host_source = ProcHostSource(config.host)
            opened.callback(src.host_source.close)
        return src
    if kind == "sim":
        sim = open_sim(config, arg, speed, opened)
        return _OpenSource(sim.label, sim.gpus, config.sampler.period_ms, sim.clock,
                           gpu_source=sim.gpu_source, host_source=sim.host_source, sim=sim)
    try:
        recording = read_any(arg, Reading(window=window))
    except RecordingError as exc:
        raise SourceUnavailable(str(exc)) from None
    return _OpenSource(f"replay:{arg}", list(recording.header.gpus),
                       recording.header.period_ms, SystemClock(), recording=recording)


def _new_runtime(config: Config, src: _OpenSource, window: TimeWindow | None = None
                 ) -> Runtime:
    """The session for `src`: its header, the bounded store (long enough for the longest chart
    window, snapshot history and detector window) and the detector (a replay's `window` cut
    before the recording's end ends no recording: `GapDetector.ends_recording`)."""
    from gapwatch.core.detector import GapDetector  # local: keeps `gapwatch --help` light
    from gapwatch.cuzk.watch import watch_beside

    judged = None
    if src.recording is not None:
        # A replay judges the recording's PoSt by the deadlines it was made with (the report's
        # rule), and its own header keeps what judged them.
        judged, config = judged_config(src.recording.header, config)
    header = default_header(src.label, src.gpus, src.period_ms, config.model_dump(mode="json"))
    history_s = max([config.snapshot.history_s, *config.ui.windows_s, config.detector.window_s])
    period_s = src.period_ms / 1000
    # The composition root picks the prover: cuzk, whose facts stay empty (and whose gaps say
    # so) where neither its log nor its /status reaches gapwatch. One per session: the detector
    # feeds it, the store reads its pipeline facts.
    cuzk = CuzkProver(config.cuzk.max_parallel_synthesis)
    prover = SharedProver(cuzk)
    store = SeriesStore(src.gpus, period_s=period_s, history_s=history_s, prover=prover,
                        detector_config=config.detector)
    detector = GapDetector(config.detector, src.gpus, period_s=period_s, prover=prover)
    detector.ends_recording = window is None or window.until_s is None
    # Only when cuzk's rules are on: its watcher reads cuzk's lines (PoSt, restarts, errors),
    # its PoSt the workers' holds the prover keeps (fed the same records by the detector).
    watch = watch_beside(cuzk, config.cuzk, config.logs.cuzk)
    session = Session(header, store, detector=detector, watch=watch)
    rt = Runtime(config, src.label, header, session, store)
    rt.post_deadlines = judged
    return rt


def _open_copytrace(rt: Runtime, gpus: list[GpuInfo], opened: ExitStack) -> None:
    """Listen for the copy-trace library's datagrams (`--copytrace`)."""
    ct = rt.config.copytrace
    session = rt.session
    reader = CopyTraceReader(ct.socket or None, gpus, session.on_record, session.on_notice,
                             socket_mode=ct.socket_mode, on_copies=session.on_copies)
    reader.open()  # SourceUnavailable: the command says why and exits 2
    opened.callback(reader.stop)
    rt.copytrace = reader


def _add_driver(rt: Runtime, src: _OpenSource, speed: float, duration_s: float | None,
                paths: list[str], opened: ExitStack, window: TimeWindow | None = None) -> None:
    """What moves the session on: the sampler over a live source (for `duration_s`, or the
    sim's `[sim] duration_s`), or the replay driver over a recording (with `--log` files read
    whole and merged by time: their spool registered on `opened`)."""
    config = rt.config
    if src.gpu_source is not None:
        sim_duration = duration_s if duration_s is not None else (config.sim.duration_s or None)
        dur_ns = int(sim_duration * 1e9) if sim_duration else None
        rt.sampler = Sampler(src.gpu_source, src.host_source, rt.session, src.clock,
                             int(src.period_ms * 1e6), duration_ns=dur_ns)
        rt.source_threads = src.threaded
        return
    assert src.recording is not None
    path = src.label.removeprefix("replay:")
    around = _recorded_around(path, paths, config, window)
    if around is not None:  # at once, as the logs below
        opened.callback(around.close)
    _feed_around(src.recording, around)
    logs = _replay_logs(path, src.recording.header, paths, config, window)
    if logs is not None:  # at once: a failure from here on closes it too
        opened.callback(_close_once_unread, rt, logs)
    if window is not None:
        rt.session.tell_within(_window_span(src.recording.header, window))
    judged = rt.post_deadlines.said() if rt.post_deadlines is not None else None
    rt.replay = ReplayDriver(src.recording, rt.session, speed, logs,
                             restart=_replay_restart(rt, path, window,
                                                     src.recording.header, around),
                             notes=[judged] if judged else [])
    rt.read_logs = {path: "read whole" for path in paths}


def _window_span(header: SessionHeader, window: TimeWindow
                 ) -> Callable[[float | None], tuple[float | None, float | None]]:
    """The span whose watcher's words a windowed replay tells (`Session.tell_within`): the
    window's report's (`log_span.report_span`: from the window's start to the data's end,
    the window's end until it is known), so that the 5 minutes of log read after the window
    (`_recorded_around`, or the `--log` lines near it) say nothing the report leaves out: an
    error, a restart and its cost 15 to 52 s past a window's end were said by its replay. The
    report's rule for a wall clock stepped back inside the run (the window's bounds alone)
    is not followed: the replay does not look for steps."""
    from gapwatch.offline.log_span import report_span  # local: keeps the live commands light

    def span_of(end_s: float | None) -> tuple[float | None, float | None]:
        return report_span(header.started_wall_s, window.since_s, window.until_s, True, end_s,
                           False)

    return span_of


def _recorded_around(path: str, paths: list[str], config: Config, window: TimeWindow | None
                     ) -> LogAround | None:
    """A window's replay of a recording holding its log, without `--log`: the log events it
    holds before the window (the daemon's startup lines, then the `log_span.MARGIN_S` before
    it) and after it (the margin after), fed before and after the window's records, as the
    window's report feeds them (`gapwatch.offline.report.detect_either`): the PoSt in flight
    at the window's start, the restarts before it, the proof that ends after it. Without
    them a replay of a window was told less than the report of it: a WinningPoSt begun before
    the window and late inside it was never said late. On disk (`log_around.LogAround`: the
    caller closes it), read again at each play. None for a whole replay, one with `--log`
    files (their own lines are read around the window: `replay_logs`) or cuzk's lines off.
    Raises SourceUnavailable (the recording cannot be read again, no room for the spool)."""
    if window is None or paths or not config.logs.cuzk:
        return None
    from gapwatch.base.sorted_spool import SpoolError  # local: keeps the live commands light
    from gapwatch.offline.startup_lines import window_lead_in

    try:
        return window_lead_in(path, window, cuzk=True, own_log=True)
    except RecordingError as exc:
        raise SourceUnavailable(str(exc)) from None
    except SpoolError as exc:  # as `_replay_logs` says it
        raise SourceUnavailable(f"no room for its temporary files: {exc.filename}: "
                                f"{exc.strerror}") from None


def _feed_around(recording: Recording, around: LogAround | None) -> None:
    """The recording's records with the log read around its window (`_recorded_around`)
    before and after them, as the report chains them (`gapwatch.offline.report.detect`),
    read from its spool again at each call."""
    if around:
        recording.records = chain(around.before(), recording.records, around.after())


def _replay_restart(rt: Runtime, path: str, window: TimeWindow | None = None,
                    first: SessionHeader | None = None,
                    around: LogAround | None = None) -> Callable[[], Recording]:
    """For a replay seeking back: the file opened again, the session emptied with a new
    detector (as `_new_runtime` builds it). A file that is no longer the recording of the
    header `first` (replaced or rewritten by another run since: its host or start differ) is a
    RecordingError, the session untouched: its records fed after the first file's would be
    two runs in one view."""
    from gapwatch.core.detector import GapDetector  # local: keeps `gapwatch --help` light
    from gapwatch.cuzk.watch import watch_beside

    def restart() -> Recording:
        recording = read_any(path, Reading(window=window))
        if first is not None and _run_of(recording.header) != _run_of(first):
            recording.close()
            raise RecordingError(f"{path} is no longer the recording this replay opened "
                                 f"(replaced or rewritten since: it starts at "
                                 f"{fmt.clock(recording.header.started_wall_s)} on "
                                 f"{recording.header.host[:80]!r})")
        config = rt.config
        cuzk = CuzkProver(config.cuzk.max_parallel_synthesis)
        prover = SharedProver(cuzk)
        detector = GapDetector(config.detector, list(rt.header.gpus),
                               period_s=rt.header.period_ms / 1000, prover=prover)
        watch = watch_beside(cuzk, config.cuzk, config.logs.cuzk)
        rt.session.restart(detector, prover, watch)
        _feed_around(recording, around)  # each play of the window is told what the first was
        return recording

    return restart


def _run_of(header: SessionHeader) -> tuple[object, ...]:
    """What tells one recording from another in a header: its recording set (a set read again
    may begin with another of its runs, its oldest segments removed to keep a budget), else
    its host and start (wall and monotonic)."""
    if header.set_id is not None:
        return (header.set_id,)
    return header.host, header.started_wall_s, header.started_mono_ns


def _add_pollers(rt: Runtime, src: _OpenSource, status_urls: list[str]) -> None:
    """One status poller per `--cuzk-status` URL; the simulator's own endpoint when none is
    given (at speed 0 its snapshots go straight to the session, through its sinks)."""
    config, session, sim = rt.config, rt.session, src.sim
    pollers: list[tuple[str, str | None]] = [(u, None) for u in status_urls]
    if sim is not None:
        for sink in speed_zero_sinks(sim, config, session):
            session.add_sink(sink)
        rt.sim_status_server = sim.status_server
        if not pollers and sim.status_server is not None:
            pollers = [(str(sim.status_server.url), "sim")]
    on_status: Callable[[ProverStatus], None] = session.on_record
    if len(pollers) == 1:
        # One prover: its uptime places the TIMELINE lines of the followed logs when their
        # anchor line (`starting cuzk engine`) was not read. With several, which log is
        # whose is not known.
        def on_status(status: ProverStatus) -> None:
            session.on_record(status)
            epoch = timeline_epoch(status)
            for follower in rt.followers:
                follower.anchor_timeline(epoch)

    for poll_url, poll_label in pollers:
        rt.pollers.append(StatusPoller(
            poll_url, config.cuzk.status_period_s, config.cuzk.status_timeout_s,
            on_status=on_status, on_notice=session.on_notice, clock=src.clock,
            prover=poll_label,
        ))


def _refuse_gzip_logs(paths: list[str]) -> None:
    """A gzip file given to follow live: a rotated log, never written again, which the follower
    would read as junk (`report`/`replay --log` read it whole). Raises SourceUnavailable."""
    from gapwatch.logs.files import gzipped  # local: the follower's own import is too

    for path in paths:
        if gzipped(path):
            raise SourceUnavailable(f"--log {path}: a gzip file, a rotated log no one writes: "
                                    "read it whole with report or replay --log, and follow the "
                                    "live one")


def _add_followers(rt: Runtime, src: _OpenSource, paths: list[str], stdin_fd: int) -> None:
    """Follow the `--log` files (live sources only), and the simulator's own log."""
    from gapwatch.logs.follow import AllReadBy

    config, session = rt.config, rt.session
    # One clock for the session, every follower's lines read by its time (one follower's
    # pass says nothing of another's files).
    clocks = AllReadBy(session.on_reader_clock)
    if paths:
        rt.followers.append(_follower(paths, config, session, config.logs.from_start,
                                      src.clock, clocks.reader(), stdin_fd))
    if src.sim is not None and src.sim.log_path is not None:
        # The sim's log is new and empty: read it from its start, so that no line written
        # before the tailer's first look is lost.
        rt.sim_log_path = src.sim.log_path
        rt.followers.append(_follower([str(src.sim.log_path)], config, session, True,
                                      src.clock, clocks.reader()))


def _close_once_unread(rt: Runtime, logs: ReplayLogs) -> None:
    """The replay's log spool closed as the runtime closes, unless the replay's thread is still
    reading it (its stop waits 2 s, and one record may take longer): closed under it, a pass
    read nothing more, or another file's bytes at a reused descriptor. Then it is never closed
    here: its files are unlinked already, and the process's exit frees them (a few
    descriptors)."""
    if rt.replay is None or not rt.replay.running():
        logs.close()


def _replay_logs(path: str, header: SessionHeader, paths: list[str], config: Config,
                 window: TimeWindow | None) -> ReplayLogs | None:
    """`replay FILE --log LOG`: the log files read whole and parsed onto disk as `report --log`
    parses them (`gapwatch.offline.replay_logs`; FILE's `header`; the caller closes them);
    with a `window`, after the daemon's startup lines the recording holds
    from before it. A log that cannot be read stops the replay at start. None without `--log`
    files."""
    if not paths:
        return None
    if "-" in paths:
        raise SourceUnavailable("replay --log takes files (a replay reads them whole), not '-'")
    # Local: keeps the live commands light.
    from gapwatch.base.sorted_spool import SpoolError
    from gapwatch.logs.once import may_hold_log_lines
    from gapwatch.offline.replay_logs import NotTheLog, open_replay_logs

    startup: list[LogEvent] = []
    if window is not None and window.since_s is not None and config.logs.cuzk:
        # The daemon's startup lines the recording holds from before the window (`record
        # --log`): its settings, as a windowed report feeds them first.
        from gapwatch.offline.startup_lines import recorded_startup  # local, as above

        try:
            startup = recorded_startup(path, window.since_s)
        except RecordingError as exc:
            raise SourceUnavailable(str(exc)) from None
    try:
        logs = open_replay_logs(path, paths, config, header.started_wall_s, window, startup,
                                may_hold_log_lines(header))
    except SpoolError as exc:  # before OSError: it is one, but of the temporary folder
        raise SourceUnavailable(f"no room for its temporary files: {exc.filename}: "
                                f"{exc.strerror}") from None
    except NotTheLog as exc:  # before OSError too: the recording, read again for its uptime
        raise SourceUnavailable(f"cannot read {exc.filename}: {exc.strerror}") from None
    except OSError as exc:
        raise SourceUnavailable(f"cannot read log {exc.filename}: {exc.strerror}") from None
    except RecordingError as exc:
        raise SourceUnavailable(str(exc)) from None
    return logs
