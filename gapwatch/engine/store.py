"""SeriesStore: a session's bounded, thread-safe memory, read by the UI, exporter and snapshots.

Who writes: `gapwatch.engine.session.Session` (from the sampler and tailer threads). Who reads: the
dashboard on its redraw timer, the Prometheus collector on scrape, `snapshot` on demand. Readers
call `snapshot()` and get immutable tuples, so they never hold the lock while they render.

Every buffer is bounded: samples by the history to keep and the sampling period, log events by
count and bytes, gaps by count and age (closed ones older than the history are forgotten; their
tallies are kept): memory use is fixed however long gapwatch runs. `version` increases on every
change, so a reader can skip work when nothing changed; `words_version` only when what the
dashboard says in words does (a gap opens, closes, is retracted or changes kind, a chaining state
is set: it is repainted at once, the numbers once a second), and the dashboard is told so
(`listen_words`) instead of asking ten times a second.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

from gapwatch.core.blind import Bye, byes_in
from gapwatch.core.bounds import MAX_PROVERS, keep_latest
from gapwatch.core.chaining import ChainingMeter
from gapwatch.core.config import DetectorConfig
from gapwatch.core.health import GPU_ERROR_KINDS, StatesSeen
from gapwatch.core.ledger import Change, GapLedger
from gapwatch.core.models import (
    BlindSpot,
    CopyRecord,
    Gap,
    GpuHealth,
    GpuInfo,
    GpuSample,
    HardwareEvent,
    HostSample,
    LinkState,
    LogEvent,
    Notice,
    ProcessMemory,
    ProverEvent,
    ProverStatus,
    Record,
    StateChange,
)
from gapwatch.core.proc_rounds import ProcRounds
from gapwatch.core.prover import Prover
from gapwatch.core.prover_watch import RunningProof
from gapwatch.core.sizes import event_bytes, status_bytes
from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.core.verdict import WindowNow
from gapwatch.cuzk.prover import CuzkProver

_T = TypeVar("_T")


class _Budget(Generic[_T]):
    """Items oldest first: at most `max_items` and about `max_bytes` (sizes as the caller
    estimates them), the oldest dropped first; the newest is always kept."""

    __slots__ = ("items", "_sizes", "_bytes", "_max_items", "_max_bytes")

    def __init__(self, max_items: int, max_bytes: int) -> None:
        self.items: deque[_T] = deque()
        self._sizes: deque[int] = deque()
        self._bytes = 0
        self._max_items = max_items
        self._max_bytes = max_bytes

    def append(self, item: _T, size: int, too_old: Callable[[_T], bool] | None = None) -> None:
        items, sizes = self.items, self._sizes
        items.append(item)
        sizes.append(size)
        self._bytes += size
        while len(items) > 1 and (
            len(items) > self._max_items or self._bytes > self._max_bytes
            or (too_old is not None and too_old(items[0]))
        ):
            items.popleft()
            self._bytes -= sizes.popleft()


class SeriesStore:
    """Ring buffers of everything a session saw, bounded by `history_s`."""

    def __init__(
        self,
        gpus: list[GpuInfo],
        period_s: float,
        history_s: float = 600.0,
        max_log_events: int = 5000,
        max_gaps: int = 2000,
        max_notices: int = 500,
        max_prover_statuses: int = 6000,
        max_copies: int = 4096,
        max_log_bytes: int = 16 << 20,
        max_prover_bytes: int = 32 << 20,
        max_parallel_synthesis: int | None = None,
        detector_config: DetectorConfig | None = None,
        prover: Prover | None = None,
    ) -> None:
        self._init_args = (list(gpus), period_s, history_s, max_log_events, max_gaps,
                           max_notices, max_prover_statuses, max_copies, max_log_bytes,
                           max_prover_bytes, max_parallel_synthesis, detector_config)
        # A little headroom over history/period: a late sampler emits a few extra samples.
        maxlen = max(16, int(history_s / period_s * 1.1) + 8)
        self._history_s = history_s
        self._lock = threading.Lock()
        self._gpus = tuple(gpus)
        self._gpu: dict[int, deque[GpuSample]] = {g.index: deque(maxlen=maxlen) for g in gpus}
        self._maxlen = maxlen
        self._host: deque[HostSample] = deque(maxlen=maxlen)
        # Log events: at most `max_log_events` and about `max_log_bytes` (`event_bytes`), the
        # oldest dropped first; their text was cut on the way in (`gapwatch.core.sizes`).
        self._log: _Budget[LogEvent] = _Budget(max_log_events, max_log_bytes)
        self._ledger = GapLedger(max_closed=max_gaps)
        self._states: dict[int, StateChange] = {}
        self._notices: deque[Notice] = deque(maxlen=max_notices)
        #: The prover's events (PoSt proofs, restarts, errors, lost jobs): the latest ones.
        self._prover_events: deque[ProverEvent] = deque(maxlen=max_notices)
        self._running: tuple[RunningProof, ...] = ()
        self._counters: dict[str, int] = {}
        self._windows: dict[int, WindowNow] = {}
        #: Blind spots (NVML blocked): the latest ones, and (count, seconds) of all of them.
        self._blind: deque[BlindSpot] = deque(maxlen=64)
        self._blind_total: tuple[int, float] = (0, 0.0)
        self._copies: deque[CopyRecord] = deque(maxlen=max_copies)
        self._procmem = ProcRounds()
        self._links: dict[int, LinkState] = {}
        # At most 10 polls a second (the period's floor) over the history, and only the history
        # (a 1 s poll would otherwise keep 100 minutes), and about `max_prover_bytes`.
        self._prover: _Budget[ProverStatus] = _Budget(
            max(64, min(max_prover_statuses, int(history_s * 10) + 8)), max_prover_bytes)
        self._provers: dict[str, ProverStatus] = {}
        # What the prover says about its pipeline (the pipeline line, /metrics, snapshots): the
        # session's one prover, fed by its detector (`engine.shared_prover`); a store without one
        # (a session without a detector) keeps and feeds its own, cuzk's.
        self._feeds_prover = prover is None
        self._pipeline: Prover = (prover if prover is not None
                                  else CuzkProver(max_parallel_synthesis))
        #: The latest health per GPU; GPU errors: the latest ones and a count by (GPU, kind).
        self._health: dict[int, GpuHealth] = {}
        self._hw_events: deque[HardwareEvent] = deque(maxlen=256)
        #: The latest GPU errors alone (`health.GPU_ERROR_KINDS`): in `_hw_events` the
        #: corrected ECC warnings of a failing memory (one a GPU a reading) pushed an XID or a
        #: lost GPU out within ~40 s, and the footer's 5-minute alert with it.
        self._gpu_errors: deque[HardwareEvent] = deque(maxlen=64)
        self._hw_counts: dict[tuple[int, str], int] = {}
        #: The states (`health.GPU_STATE_KINDS`) seen per GPU: each is news once per run
        #: (`_run`: of a replayed set, `begin_run`; live, one).
        self._states_seen = StatesSeen()
        self._run = 0
        #: The chaining figure's sums (`gapwatch.core.chaining`), fed every sample and copy.
        self._chaining = ChainingMeter(list(gpus), detector_config or DetectorConfig())
        self._version = 0
        self._words_version = 0
        #: Called (from the writing thread) when `words_version` increases (`listen_words`).
        self._words_listeners: list[Callable[[], None]] = []

    @property
    def version(self) -> int:
        return self._version

    @property
    def words_version(self) -> int:
        """Increases when a gap opens, closes, is retracted, revised or changes kind, or a GPU's
        state is set (not when an open gap only grows: its duration is a number)."""
        return self._words_version

    def listen_words(self, listener: Callable[[], None]) -> None:
        """Call `listener()` from the writing thread, outside the lock, each time
        `words_version` increases (the dashboard posts itself a message: it must not block)."""
        with self._lock:
            self._words_listeners.append(listener)

    def _said(self) -> None:
        for listener in self._words_listeners:
            listener()

    @property
    def history_s(self) -> float:
        """Seconds of data kept (samples, closed gaps): what a replay seeking back feeds again."""
        return self._history_s

    def reset(self, prover: Prover | None = None) -> None:
        """Empty, as new (a replay that seeks back feeds the file again from its start). The
        buffers are swapped in under the lock, which stays the same object (readers hold it);
        the version keeps growing, so a reader never takes the emptied store for one it drew."""
        fresh = SeriesStore(*self._init_args, prover=prover).__dict__
        del fresh["_lock"]
        del fresh["_words_listeners"]  # whoever listened still does
        with self._lock:
            version, words = self._version, self._words_version
            self.__dict__.update(fresh)
            self._version = version + 1
            self._words_version = words + 1
        self._said()

    def append(self, record: Record) -> None:
        """Keep a record of any type where its kind is kept (gaps and states have their own
        entries: `upsert_gap`, `set_state`)."""
        if type(record) is GpuSample:
            self.append_gpu([record])
        elif type(record) is HostSample:
            self.append_host(record)
        elif type(record) is LogEvent:
            self.append_log(record)
        elif type(record) is Notice:
            self.add_notice(record)
        elif type(record) is CopyRecord:
            self.append_copy(record)
        elif type(record) is ProcessMemory:
            self.set_procmem(record)
        elif type(record) is LinkState:
            self.set_link(record)
        elif type(record) is ProverStatus:
            self.append_prover(record)
        elif type(record) is BlindSpot:
            self.add_blind_spot(record)
        elif type(record) is GpuHealth:
            self.set_health(record)
        elif type(record) is HardwareEvent:
            self.add_hw_event(record)
        elif type(record) is ProverEvent:
            with self._lock:
                self._prover_events.append(record)
                self._version += 1

    def set_health(self, health: GpuHealth) -> None:
        with self._lock:
            self._health[health.gpu] = health
            self._version += 1

    def begin_run(self, run: int) -> None:
        """The records fed from here on are of run `run` (0: the first) of a replayed set
        (`Recording.run`; called by `engine.replay.ReplayDriver` where it changes): a GPU state
        is news once per GPU per run, as the report counts it (`health.StatesSeen`)."""
        with self._lock:
            self._run = run

    def add_hw_event(self, event: HardwareEvent) -> None:
        """A GPU error: the latest kept, every one counted by (GPU, kind) (/metrics)."""
        with self._lock:
            n = self._states_seen.counted(event, self._run)
            if n is None:
                return
            self._hw_events.append(event)
            if event.kind in GPU_ERROR_KINDS:
                self._gpu_errors.append(event)
            key = (event.gpu, event.kind)
            self._hw_counts[key] = self._hw_counts.get(key, 0) + n
            self._version += 1

    def gpu_error_alert(self, within_s: float) -> tuple[HardwareEvent, int] | None:
        """The latest recent GPU error (an XID, uncorrected ECC errors, a GPU lost:
        `health.GPU_ERROR_KINDS`) and how many others are as recent: within `within_s` of data
        time before the newest GPU reading, as `prover_alert`. Warnings (corrected ECC, PCIe
        replays) are not alerts: the report and /metrics count them."""
        with self._lock:
            newest = max((d[-1].t_wall_s for d in self._gpu.values() if d), default=None)
            # Within `within_s` either way: an error timed long after the newest reading (a
            # recording's) held the line for good, the data never reaching it.
            recent = [ev for ev in self._gpu_errors
                      if newest is None or abs(newest - ev.t_wall_s) <= within_s]
            if not recent:
                return None
            return max(recent, key=lambda ev: ev.t_wall_s), len(recent) - 1

    def prover_alert(self, within_s: float) -> tuple[ProverEvent, int] | None:
        """The worst recent prover warning or error (a late PoSt, a restart, an error, a lost
        job) and how many other warnings and errors are as recent: within `within_s` of data
        time before the newest GPU reading (the footer asks every second: cheap).

        Worst is an error before a warning, then the latest: a restart's warning a minute
        after a late WinningPoSt must not push the late proof off the pane's one alert line
        while it is still recent (the operator looking up then would see only the warning)."""
        with self._lock:
            newest = max((d[-1].t_wall_s for d in self._gpu.values() if d), default=None)
            worst: ProverEvent | None = None
            recent = 0
            for ev in reversed(self._prover_events):
                if ev.level == "info":
                    continue
                if newest is not None and newest - ev.t_wall_s > within_s:
                    # Not `break`: the deque is in the order the watcher made its events,
                    # from inputs read at their own pace, not ordered by time (500 at most).
                    continue
                recent += 1
                if worst is None or (ev.level == "error" and worst.level != "error"):
                    worst = ev
            return (worst, recent - 1) if worst is not None else None

    def set_running_proofs(self, running: tuple[RunningProof, ...]) -> None:
        """The proofs the prover's watcher sees in flight (`Session._publish_running`)."""
        with self._lock:
            self._running = running

    def running_proofs(self) -> tuple[RunningProof, ...]:
        """The proofs in flight, the most of their deadline used first (the footer asks)."""
        with self._lock:
            return self._running

    def blind(self) -> tuple[tuple[BlindSpot, ...], tuple[int, float], list[Bye], float | None]:
        """What the footer says of blind spots, cheaply (it asks every second): the latest
        ones, (count, seconds) of all, the copy trace's BYEs among the notices kept, and the
        newest GPU reading's wall time (None before any)."""
        with self._lock:
            newest = max((d[-1].t_wall_s for d in self._gpu.values() if d), default=None)
            return tuple(self._blind), self._blind_total, byes_in(self._notices), newest

    def add_blind_spot(self, spot: BlindSpot) -> None:
        """A stretch the source could not read (NVML blocked): the latest kept, all counted."""
        with self._lock:
            self._blind.append(spot)
            n, seconds = self._blind_total
            self._blind_total = (n + 1, seconds + spot.duration_s)
            self._version += 1

    def append_gpu(self, samples: list[GpuSample]) -> None:
        with self._lock:
            for s in samples:
                buf = self._gpu.get(s.gpu)
                if buf is None:
                    buf = self._gpu[s.gpu] = deque(maxlen=self._maxlen)
                buf.append(s)
                self._chaining.add_sample(s)
            self._version += 1

    def append_host(self, sample: HostSample) -> None:
        with self._lock:
            self._host.append(sample)
            self._version += 1

    def append_log(self, event: LogEvent) -> None:
        size = event_bytes(event)
        with self._lock:
            self._log.append(event, size)
            if self._feeds_prover:
                self._pipeline.feed_log(event)
            self._version += 1

    def append_prover(self, status: ProverStatus) -> None:
        size = status_bytes(status)
        since_ns = status.t_mono_ns - int(self._history_s * 1e9)
        with self._lock:
            self._prover.append(status, size, lambda old: old.t_mono_ns < since_ns)
            # The latest per prover, for the MAX_PROVERS heard most recently: a recording may
            # name any number of provers (live, each is a `--cuzk-status` URL).
            if keep_latest(self._provers, status.prover, status, MAX_PROVERS):
                forgotten = self._counters.get("provers_forgotten", 0)
                self._counters["provers_forgotten"] = forgotten + 1
            if self._feeds_prover:
                self._pipeline.feed_status(status)
            self._version += 1

    def upsert_gap(self, gap: Gap) -> Change:
        """Take a published gap version into the session's ledger; say what it changed. Closed
        gaps that ended more than the history before this one are forgotten (nothing shows
        them; each carries its evidence, ~6 KB, and a demo closes ~2,700 an hour)."""
        with self._lock:
            self._version += 1
            was = self._ledger.open_gap(gap.gap_id)
            change = self._ledger.add(gap)
            if change is Change.CLOSED and gap.end_s is not None:
                self._ledger.forget_closed_before(gap.end_s - self._history_s)
            said = change is not Change.IGNORED and not (
                change is Change.UPDATED and was is not None and was.kind == gap.kind)
            if said:
                self._words_version += 1
        if said:
            self._said()
        return change

    def set_state(self, state: StateChange) -> None:
        with self._lock:
            self._states[state.gpu] = state
            self._version += 1
            self._words_version += 1
        self._said()

    def set_window(self, window: WindowNow) -> None:
        """The GPU's chaining window as of its latest sample (what the verdict says now)."""
        with self._lock:
            self._windows[window.gpu] = window
            self._version += 1

    def add_notice(self, notice: Notice) -> None:
        with self._lock:
            self._notices.append(notice)
            self._version += 1

    def append_copy(self, copy: CopyRecord) -> None:
        with self._lock:
            self._copies.append(copy)
            self._chaining.add_copy(copy)
            self._version += 1

    def set_procmem(self, reading: ProcessMemory) -> None:
        """Keep the latest reading per (GPU, pid); a GPU's readings of one round share a time,
        so processes not listed in the newest round are dropped; a process beyond the round's
        bound is counted (`procmem_cut`)."""
        with self._lock:
            # One rule with the gaps' evidence (`ProcRounds`): constant time a reading, at most
            # MAX_PROCS_PER_ROUND a round (a recording may hold any number).
            if self._procmem.add(reading):
                self._version += 1
            else:
                self._counters["procmem_cut"] = self._counters.get("procmem_cut", 0) + 1

    def set_link(self, link: LinkState) -> None:
        with self._lock:
            self._links[link.gpu] = link
            self._version += 1

    def links(self) -> dict[int, LinkState]:
        """The latest link reading per GPU (cheap: the footer asks every second)."""
        with self._lock:
            return dict(self._links)

    def count(self, name: str, n: int = 1) -> None:
        """Bump a named counter (unparsed lines, bad records, snapshots...)."""
        with self._lock:
            self._counters[name] = self._counters.get(name, 0) + n
            self._version += 1

    def snapshot(self) -> StoreSnapshot:
        with self._lock:
            return StoreSnapshot(
                version=self._version,
                gpus=self._gpus,
                gpu_samples={i: tuple(d) for i, d in self._gpu.items()},
                host_samples=tuple(self._host),
                log_events=tuple(self._log.items),
                gaps=tuple(self._ledger.gaps()),
                states=dict(self._states),
                notices=tuple(self._notices),
                counters=dict(self._counters),
                windows=dict(self._windows),
                blind_spots=tuple(self._blind),
                blind_total=self._blind_total,
                prover_statuses=tuple(self._prover.items),
                provers=dict(self._provers),
                gap_tally=self._ledger.tally(),
                cause_tally=self._ledger.cause_tally(),
                copies=tuple(self._copies),
                procmem=self._procmem.all(),
                links=dict(self._links),
                pipeline=self._pipeline.facts(),
                prover_lacks=tuple(self._pipeline.lacks()),
                health=dict(self._health),
                hw_events=tuple(self._hw_events),
                gpu_errors=tuple(self._gpu_errors),
                hw_counts=dict(self._hw_counts),
                chaining=self._chaining.figures(),
                util=self._chaining.util_figures(),
                prover_events=tuple(self._prover_events),
            )
