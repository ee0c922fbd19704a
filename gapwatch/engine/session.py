"""Session: the hub every record of a run goes through, with or without the UI.

Who calls it: the sampler thread (`on_gpu_samples`, `on_record` for host samples and notices),
the log follower's threads (`on_log_event`), the replay driver and any other side source
(`on_record`). One path for every record, whatever its source or type:

    record -> store (bounded memory) -> sinks (recorder, /metrics) -> detector.feed(record)
    (a log event's text is cut for the store and the detector: `gapwatch.core.sizes`)
           -> gaps (into the store's GapLedger) and states -> sinks -> listeners (UI, summaries)

so live, simulated and replayed data are treated identically, and the gaps everyone shows come
from the one ledger. The composition root that builds a session and owns its threads is
`gapwatch.engine.runtime`.

A lock serialises the callers: the detector is pure and single-threaded by design. Sinks and
listeners are called under it and must not block (the recorder buffers; the UI only posts a
message).

No record's content can raise out of `on_record` into the thread that feeds it (the sampler, a
reader, a poller): a sink, the detector or a listener that raises on a record is counted
(`record_errors`), said once per part and kind of error, and the record goes on to the other
parts. (One copy of 2**63 bytes used to make the recorder raise on the gap it fell in, which
killed the sampler thread in silence.) Notices are rate-limited by kind
(`gapwatch.core.ratelimit`): a flood is said a few times per `NOTICE_INTERVAL_S`, the rest
counted (`notices_held`) and summed up once the interval is over.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from gapwatch import __version__
from gapwatch.core.ledger import Change
from gapwatch.core.models import (
    DERIVED_TYPES,
    CopyRecord,
    Gap,
    GpuInfo,
    GpuSample,
    LogEvent,
    Notice,
    NoticeLevel,
    ProverEvent,
    Record,
    SessionHeader,
    StateChange,
)
from gapwatch.core.prover_watch import ProverWatch, RunningProof, SaidWithin, notice_of
from gapwatch.core.ratelimit import RateLimit, message_kind
from gapwatch.core.sizes import bounded_event
from gapwatch.core.verdict import WindowNow
from gapwatch.engine.store import SeriesStore


class Detector(Protocol):
    #: Inputs skipped or noticed, by reason (out_of_order, holes, clock_jumps, silent...).
    counters: dict[str, int]

    def feed(self, record: Record) -> list[Gap | StateChange]:
        """Take any record; return the gap versions and state changes it caused."""
        ...

    def feed_copies(self, copies: list[CopyRecord]) -> list[Gap | StateChange]:
        """Copies that came together, as `feed` one by one, but a closed gap they reach is
        re-published once."""
        ...

    def finish(self) -> list[Gap | StateChange]:
        """End of data: settle open gaps (idle after the last busy sample is not a gap)."""
        ...

    def window_now(self, gpu: int) -> WindowNow | None:
        """The chaining window as of the GPU's latest sample (`core.verdict.WindowNow`)."""
        ...


class Sink(Protocol):
    def on_header(self, header: SessionHeader) -> None: ...

    def on_record(self, record: Record) -> None: ...

    def close(self) -> None: ...


#: How often (in data time) the store's per-GPU chaining window (live gap counts, busy share) is
#: refreshed from the detector; also at once when a gap opens, closes or is retracted and when
#: the state changes, so the verdict's count is never behind the gap table.
WINDOW_REFRESH_NS = 1_000_000_000
#: Data seconds between the proofs in flight the watcher puts in the store (`_publish_running`).
RUNNING_EVERY_S = 1.0
#: Records the watcher takes between two of those puts made at its events (beside the one a
#: second of data): more events meanwhile wait for the next.
RUNNING_BURST_RECORDS = 256
#: Notices said before the first listener that are kept for the listeners to come.
EARLY_NOTICES = 100
#: Notices of one kind said per interval (of the notices' own times); the rest are counted.
NOTICE_INTERVAL_S = 10.0
NOTICE_BURST = 5

#: Ledger changes that change a GPU's window (a gap counted in it, or not any more).
_WINDOW_CHANGES = frozenset({Change.OPENED, Change.CLOSED, Change.RETRACTED})

#: Listeners hear every state change and notice, and each gap once: when it first closes (its
#: kind and duration are final then). Open gaps and later versions are in the store's ledger.
Listener = Callable[[Gap | StateChange | Notice], None]


class Session:
    """Fans every record out to the store, the sinks, the detector and the listeners."""

    def __init__(
        self,
        header: SessionHeader,
        store: SeriesStore,
        detector: Detector | None = None,
        sinks: list[Sink] | None = None,
        watch: ProverWatch | None = None,
    ) -> None:
        self.header = header
        self.store = store
        self.detector = detector
        #: The prover's watcher (`gapwatch.core.prover_watch`): fed every record but GPU
        #: samples, as the offline loop feeds it; its events go where gaps go.
        self.watch = watch
        #: The reader's latest tick put off while nothing waited (`on_reader_clock`), for the
        #: watcher to take before its next record; None: none.
        self._tick_kept: int | None = None
        self.sinks: list[Sink] = list(sinks or [])
        self._listeners: list[Listener] = []
        self._lock = threading.RLock()
        self._closed = False
        self._finished = False
        #: Data time of the last proofs in flight put in the store (`_publish_running`).
        self._running_at_s = float("-inf")
        #: Records the watcher took since the last put made at its events, and whether an
        #: event of its came since the last put.
        self._running_records = RUNNING_BURST_RECORDS
        self._running_stale = False
        #: Data time (ns) of each GPU's last window refresh in the store.
        self._window_at_ns: dict[int, int] = {}
        self._notices = RateLimit(int(NOTICE_INTERVAL_S * 1e9), NOTICE_BURST)
        #: (part, error type) pairs already said: each is said once, then only counted.
        self._errors_said: set[tuple[str, str]] = set()
        self._saying_error = False
        self._errors_to_say: list[Notice] = []
        #: Notices said before anyone listened (told to each listener as it subscribes).
        self._early: list[Notice] = []
        #: The latest GPU sample's times: held notices are summed up at them.
        self._last_times: tuple[int, float] = (header.started_mono_ns, header.started_wall_s)
        #: A windowed replay's span (`tell_within`): the span's bounds as of the data's end
        #: (None: not ended yet), and which of the watcher's words it tells.
        self._span_of: Callable[[float | None], tuple[float | None, float | None]] | None = None
        self._told: SaidWithin | None = None
        for sink in self.sinks:
            sink.on_header(header)

    def restart(self, detector: Detector | None, prover: Any = None,
                watch: ProverWatch | None = None) -> None:
        """Start over with an empty store, `detector`, the prover it feeds (`prover`, what the
        store reads its pipeline from) and a new `watch` (a replay seeking back feeds its file
        again from the start). Only without sinks: they would see records twice. Listeners
        stay."""
        with self._lock:
            if self.sinks:
                raise RuntimeError("a session with sinks cannot start over")
            self.store.reset(prover)
            self.detector = detector
            self.watch = watch
            self._tick_kept = None
            self._window_at_ns = {}
            self._notices = RateLimit(int(NOTICE_INTERVAL_S * 1e9), NOTICE_BURST)
            self._finished = False
            self._last_times = (self.header.started_mono_ns, self.header.started_wall_s)
            self._running_at_s = float("-inf")
            self._running_records = RUNNING_BURST_RECORDS
            self._running_stale = False
            if self._span_of is not None:
                self._told = SaidWithin(*self._span_of(None))

    def tell_within(self, span_of: Callable[[float | None], tuple[float | None, float | None]]
                    ) -> None:
        """Tell only the watcher's words a window's report lists (a windowed replay: its log
        is read 5 minutes each side of the window, for the gaps' evidence and the PoSt in
        flight, and what the watcher says of those lines is not the window's): `span_of`
        gives the span's bounds, given the data's end once it has ended (None before:
        `gapwatch.offline.log_span.report_span`); `SaidWithin` judges each word. The words
        left out go nowhere (store, sinks, notices), counted `prover_said_outside_window`."""
        with self._lock:
            self._span_of = span_of
            self._told = SaidWithin(*span_of(None))

    def data_ended(self, end_s: float | None) -> None:
        """The data has ended at `end_s` (its latest GPU sample's wall time): the words said
        from here on (of the log lines fed after it) are judged against it, as the report
        judges them."""
        with self._lock:
            if self._told is not None and self._span_of is not None:
                self._told.from_s, self._told.until_s = self._span_of(end_s)

    def add_sink(self, sink: Sink) -> None:
        with self._lock:
            sink.on_header(self.header)
            self.sinks.append(sink)

    def subscribe(self, listener: Listener) -> None:
        """Call `listener` (from the feeding thread) for every state change and notice, and for
        each gap when it first closes. The notices said before (at most `EARLY_NOTICES`: a
        disk full before the first record, a log that cannot be opened) are told to it first:
        `record` subscribes once the runtime is built, and must still say them."""
        with self._lock:
            for notice in self._early:
                try:
                    listener(notice)
                except Exception as exc:  # noqa: BLE001 - as in _tell
                    self._failed("a listener", notice, exc)
            self._listeners.append(listener)

    def on_record(self, record: Record) -> None:
        """The one entry for every record. Gaps and states found in recorded data are not
        taken as such: the detector recomputes them, so a replay shows what this version
        detects."""
        if record.type in DERIVED_TYPES:
            return
        with self._lock:
            if self._closed:
                return
            if type(record) is Notice:
                if not self._notices.offer(message_kind(record.level, record.message),
                                           record.t_mono_ns, record.message):
                    self.store.count("notices_held")
                    return
            elif type(record) is GpuSample:
                self._last_times = (record.t_mono_ns, record.t_wall_s)
                self._say_held()
            # Sinks (the recording) get a log line whole; memory (the store, the detector's
            # evidence) a copy with its text cut to what display and evidence use.
            kept = record
            if type(record) is LogEvent:
                kept = bounded_event(record)
                if kept is not record:
                    self.store.count("log_text_cut")
            self.store.append(kept)
            self._to_sinks(record)
            if type(record) is Notice:
                self._tell(record)
            elif self.watch is not None and type(record) is not GpuSample:
                self._watch(kept)
            detector = self.detector
            if detector is None or not self._detect(detector.feed, kept, record):
                return
            if type(record) is GpuSample:
                last = self._window_at_ns.get(record.gpu)
                if last is None or record.t_mono_ns - last >= WINDOW_REFRESH_NS:
                    self._refresh_window(record.gpu, record.t_mono_ns)

    def on_copies(self, copies: list[CopyRecord]) -> None:
        """A copy-trace datagram's copies: each to the store, the sinks and the watcher as
        `on_record` takes it, then to the detector together (`GapDetector.feed_copies`), so a
        closed gap they reach is re-published once, not once a copy (a partition's tens of
        copies arrive together, after the samples that closed its gap)."""
        with self._lock:
            if self._closed or not copies:
                return
            for c in copies:
                self.store.append(c)
                self._to_sinks(c)
                if self.watch is not None:
                    self._watch(c)
            detector = self.detector
            if detector is not None:
                self._detect(detector.feed_copies, copies, copies[-1])

    def _detect(self, feed: Callable[[Any], list[Gap | StateChange]], what: Any,
                record: Record) -> bool:
        """Feed `what` to the detector (`feed`) and take what it derived; a detector that
        raises is said and counted (`record`: what it choked on) and the feeder goes on.
        False when it raised."""
        try:
            derived = feed(what)
        except Exception as exc:  # noqa: BLE001 - said and counted; the feeder goes on
            self._failed("the detector", record, exc)
            return False
        if derived:
            self._derived(derived)
        return True

    def on_gpu_samples(self, samples: list[GpuSample]) -> None:
        """One sampler tick's GPU readings."""
        for s in samples:
            self.on_record(s)

    def on_log_event(self, event: LogEvent) -> None:
        self.on_record(event)

    def on_notice(self, notice: Notice) -> None:
        self.on_record(notice)

    def on_reader_clock(self, t_mono_ns: int, panic_read_s: float | None) -> None:
        """The live log reader's clock reads `t_mono_ns`, every line written before it read
        (`gapwatch.logs.follow`, after each pass), a panic of time `panic_read_s` still being
        read (None: none): the watcher's words that waited for a line that may never come
        (`ProverWatch.at`: a panic that killed the process has no cuzk line after it; a PoSt
        whose lines stopped mid-proof, past its deadline) go where its other words go.
        Nothing is recorded of the tick itself: a replay says the panics at its data's next
        record, or its end, and a PoSt late by the clock alone not at all (its data's time
        never passed the deadline) until its end (`finish`'s `read_by_mono_ns`: the recording's last
        host sample less one idle pass).

        It comes after every pass of the reader (on stdin, every 50 ms wait and every 64 KiB
        read): where no panic is being read and nothing waits (`ProverWatch.waits`, asked
        without the lock) the lock is not taken, and the tick is kept (`_tick_kept`) for the
        watcher to take before its next record, where it could say nothing: its clock moves as
        it would have (a later tick takes the place of one kept: each moves it to its own
        time)."""
        watch = self.watch
        if watch is None:
            return
        if panic_read_s is None and not watch.waits():
            self._tick_kept = t_mono_ns  # one reference written: read whole under the lock
            return
        with self._lock:
            if self._closed or self.watch is None:
                return
            self._tick_kept = None
            try:
                events = self.watch.at(t_mono_ns, panic_read_s)
            except Exception as exc:  # noqa: BLE001 - said and counted; the reader goes on
                self._failed("the prover watch", Notice(*self._last_times, "info",
                                                        "the log reader's clock"), exc)
                return
            for ev in events:
                self._prover_event(ev)

    def on_line_read(self, stream: str, t_wall_s: float, read_mono_ns: int) -> None:
        """(A replay with `--log`) A log line fed from a `--log` file, without the time the live
        reader read it, was read at `read_mono_ns`: the recording's copy of it, left out, says
        so (`gapwatch.logs.once.LinesOnce.tell_lines_read`). Told to the watcher
        (`ProverWatch.line_read`), whose end (`finish`'s `read_by_mono_ns`) moves its data's
        time on from there, as from the recording's own copy."""
        with self._lock:
            if self._closed or self.watch is None:
                return
            try:
                self.watch.line_read(stream, t_wall_s, read_mono_ns)
            except Exception as exc:  # noqa: BLE001 - said and counted; the feeder goes on
                self._failed("the prover watch", Notice(*self._last_times, "info",
                                                        "a log line's reading"), exc)

    def _derived(self, events: list[Gap | StateChange]) -> None:
        for ev in events:
            if isinstance(ev, Gap):
                change = self.store.upsert_gap(ev)
                if change in _WINDOW_CHANGES:
                    self._refresh_window(ev.gpu)
                self._to_sinks(ev)  # the recorder keeps every version, as published
                if change is Change.CLOSED:
                    self._tell(ev)
            else:
                self.store.set_state(ev)
                self._refresh_window(ev.gpu)
                self._to_sinks(ev)
                self._tell(ev)

    def _watch(self, record: Record) -> None:
        """Under the lock: the prover's watcher takes a record (a failure costs it that record,
        as a sink's does)."""
        assert self.watch is not None
        try:
            kept, self._tick_kept = self._tick_kept, None
            # The reader's tick put off while nothing waited: its clock first, as it came.
            events = self.watch.at(kept, None) if kept is not None else []
            events += self.watch.feed(record)
        except Exception as exc:  # noqa: BLE001 - said and counted; the feeder goes on
            self._failed("the prover watch", record, exc)
            return
        for ev in events:
            self._prover_event(ev)
        t: float | None = getattr(record, "t_wall_s", None)
        due = t is not None and not abs(t - self._running_at_s) < RUNNING_EVERY_S
        if due and t is not None:
            self._running_at_s = t
        self._running_records += 1
        self._running_stale = self._running_stale or bool(events)
        # At an event at once (a proof that ended leaves the footer then), but not at each
        # event of a storm: a put costs every proof in flight's words (256: 3 ms), and 100,000
        # PoSt ids each giving up the oldest of 256 held the feeder 4 ms a line (400 s). In a
        # storm, once every `RUNNING_BURST_RECORDS` records, and a second of data at most.
        if due:
            self._publish_running()
        elif self._running_stale and self._running_records >= RUNNING_BURST_RECORDS:
            self._running_records = 0
            self._publish_running()

    def _publish_running(self) -> None:
        """Under the lock: the proofs the watcher sees in flight, into the store, where the
        dashboard's footer reads them (asked of the watcher from the UI thread, every status
        waited for this lock behind the feeder's record in hand). Their figures move only as
        the watcher is fed (its "now" is its records' time): at its events, else at most once
        a second of data. None when it fails to say (counted)."""
        assert self.watch is not None
        self._running_stale = False
        try:
            running: tuple[RunningProof, ...] = tuple(self.watch.running())
        except Exception:  # noqa: BLE001 - a footer phrase is not worth a feeder's life
            self.store.count("running_proofs_failed")
            running = ()
        self.store.set_running_proofs(running)

    def _prover_event(self, ev: ProverEvent) -> None:
        """A prover event goes where a gap goes (the store, the sinks: the recording and
        /metrics) and, when it is a warning or an error, is said as a notice to the listeners
        (the dashboard's alert line, `record`'s stderr). The notice is not recorded: the event
        is, and replay derives it again. A windowed replay tells only the window's
        (`tell_within`)."""
        if self._told is not None and not self._told.keeps(ev):
            self.store.count("prover_said_outside_window")
            return
        self.store.append(ev)
        self._to_sinks(ev)
        notice = notice_of(ev, self._last_times[0])
        if notice is None:
            return
        if not self._notices.offer(message_kind(notice.level, notice.message),
                                   notice.t_mono_ns, notice.message):
            self.store.count("notices_held")
            return
        self.store.add_notice(notice)
        self._tell(notice)

    def _refresh_window(self, gpu: int, t_mono_ns: int | None = None) -> None:
        """Put the detector's window of `gpu` in the store (what the verdict says now)."""
        if self.detector is None:
            return
        window = self.detector.window_now(gpu)
        if window is not None:
            self.store.set_window(window)
            self._window_at_ns[gpu] = t_mono_ns if t_mono_ns is not None else window.t_mono_ns

    def _to_sinks(self, record: Record) -> None:
        for sink in self.sinks:
            try:
                sink.on_record(record)
            except Exception as exc:  # noqa: BLE001 - one sink's failure costs that sink only
                self._failed(type(sink).__name__, record, exc)

    def _tell(self, ev: Gap | StateChange | Notice) -> None:
        if type(ev) is Notice and len(self._early) < EARLY_NOTICES and not self._listeners:
            self._early.append(ev)
        for listener in self._listeners:
            try:
                listener(ev)
            except Exception as exc:  # noqa: BLE001 - a listener's bug must not stop the feeder
                self._failed("a listener", ev, exc)

    def _failed(self, part: str, record: Record, exc: Exception) -> None:
        """Under the lock: `part` raised on `record`. Counted; said once per part and kind of
        error (as an error notice, which goes through the sinks too: a part that also fails on
        that notice is only counted)."""
        self.store.count("record_errors")
        key = (part, type(exc).__name__)
        if key in self._errors_said:
            return
        self._errors_said.add(key)
        t_mono, t_wall = _times(record)
        self._errors_to_say.append(Notice(
            t_mono, t_wall, "error",
            f"{part} failed on a {record.type} record ({exc!r}); that record is missing from "
            "it, the rest goes on; further failures of this kind are only counted "
            "(record_errors)"))
        if self._saying_error:
            return  # said after the one being said (a part may fail on that notice too)
        self._saying_error = True
        try:
            while self._errors_to_say:
                self.on_record(self._errors_to_say.pop(0))
        finally:
            self._saying_error = False

    def _say_held(self, flush: bool = False) -> None:
        """Under the lock: sum up the notices held back over intervals that have ended (all of
        them, with `flush`), at the latest GPU sample's time."""
        t_mono, t_wall = self._last_times
        for held in self._notices.due(t_mono, flush):
            level: NoticeLevel = ("error" if held.level == "error" else
                                  "info" if held.level == "info" else "warning")
            notice = Notice(t_mono, t_wall, level, held.text("notices"))
            self.store.append(notice)
            self._to_sinks(notice)
            self._tell(notice)

    def finish(self, read_by_mono_ns: int | None = None) -> None:
        """End of data (a replay or a timed run is over): settle the detector now, so that what
        the dashboard shows is what `report` will count (a gap still open at the end is
        retracted: idle after the last busy period). `read_by_mono_ns`: a replay's reader's
        clock at its recording's end (`ProverWatch.finish`; None live, where the reader's
        passes told it). Sinks stay open until `close()`. Safe to call twice."""
        with self._lock:
            if self._closed or self._finished:
                return
            self._finished = True
            if self.watch is not None:
                try:
                    for ev in self.watch.finish(read_by_mono_ns):
                        self._prover_event(ev)
                    self._publish_running()  # none are: finish said each
                except Exception as exc:  # noqa: BLE001 - said; the rest still settles
                    self._failed("the prover watch", Notice(*self._last_times, "info",
                                                            "end of data"), exc)
            self._say_held(flush=True)
            if self.detector is not None:
                try:
                    self._derived(self.detector.finish())
                except Exception as exc:  # noqa: BLE001 - said; the sinks still close
                    self._failed("the detector", Notice(*self._last_times, "info", "end of data"),
                                 exc)

    def close(self) -> None:
        """Settle the detector, close every sink. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self.finish()
            self._closed = True
            for sink in self.sinks:
                sink.close()


def default_header(source: str, gpus: list[GpuInfo], period_ms: float,
                   config: dict[str, Any] | None = None) -> SessionHeader:
    """A header for a session starting now on this host."""
    return SessionHeader(
        gapwatch_version=__version__,
        host=socket.gethostname(),
        source=source,
        started_wall_s=time.time(),
        started_mono_ns=time.monotonic_ns(),
        period_ms=period_ms,
        gpus=gpus,
        config=config or {},
    )


def _times(record: Record) -> tuple[int, float]:
    """A record's data time, for a notice about it (a gap's is its start)."""
    if type(record) is Gap:
        return record.start_mono_ns, record.start_s
    mono = getattr(record, "t_mono_ns", None)
    wall = getattr(record, "t_wall_s", None)
    return (mono if isinstance(mono, int) else time.monotonic_ns(),
            wall if isinstance(wall, float) else time.time())
