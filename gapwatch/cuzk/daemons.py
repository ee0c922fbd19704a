"""Which cuzk daemon each record is of, where one gapwatch reads the logs of several daemons
on one box (a PoRep cuzk and a PoSt-only cuzk on its own GPU, as gapwatch's own PoSt advice
suggests: `gapwatch.cuzk.post`), and the line that says so.

Who calls it: `gapwatch.cuzk.watch.CuzkWatch` (PoSt, restarts, the GPU queue, the pinned pool:
one watcher a daemon) and `gapwatch.cuzk.pipeline.PipelineFacts` (`RestartsByDaemon`: the
restarts a gap spans), each with a `Daemons` of its own fed the same records in the same
order, so both decide alike.

What cuzk gives (cuzk-daemon main.rs, engine.rs at curio e0294b0f): a daemon writes its start
lines `cuzk-daemon starting` (main.rs:63) and `starting cuzk engine` (engine.rs:1244) once a
process, to its own stdout; its tracing lines carry no pid or daemon name (`tracing_subscriber::
fmt()` with targets only, main.rs:57-60). Its `configuration loaded listen=ADDR` (main.rs:64)
names its gRPC address, which no two daemons of one box share (each binds it); its `status HTTP
server listening addr=ADDR` (main.rs:133) names the `/status` address `--cuzk-status` polls; its
`initializing GPU workers gpus=[..]` (engine.rs:1339) and worker lines name its GPUs.

The rule: the first file (`LogEvent.stream`; "" is a file not known, never another daemon's) to
show a start line is the first daemon's, and so is every file that shows none (cuzk's stderr
given apart from its stdout, a rotated piece that continues a run). A second file is another
daemon's only where its `configuration loaded listen=` (the line after its `cuzk-daemon
starting`, which is held until that line is read: `_decide`) names an address no daemon known
has, every known daemon's read: two daemons of a box cannot bind one address (a file that ends
on the held line lets it go at the data's end, the first daemon's: `let_go`, a daemon that died
on its first line being a restart). Read as one daemon, the second daemon's start was said as a
restart of the first ("killed or crashed"), the first's PoSt in flight said lost in it, its GPU
queue and pool reset, its TIMELINE lines placed by the other's start line. A file that shows a
known daemon's address is that daemon's, and one that shows none (a log that begins at
`starting cuzk engine`: `RUST_LOG=cuzk_core=info`, the H200 captures in tests/data) the
first's: its start line is a restart, as in one file (a file alone was once taken for a daemon,
and one daemon's restart into a new file was no restart).

A `/status` snapshot is the daemon's whose `status HTTP server listening` has its port, a
process on a GPU the daemon's whose lines named that GPU (`of_status`, `of_process`).

Not told apart (said in docs/post.md): two daemons' lines in one stream (`journalctl -u a -u b`,
one file for both), and files whose `configuration loaded` lines were not read (followed from
their end, or a log without cuzk-daemon's own lines): one daemon, as before. Bounded: at most
`MAX_DAEMONS` daemons and `MAX_STREAMS` files remembered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Generic, TypeVar

import msgspec

from gapwatch.core import fmt
from gapwatch.core.bounds import keep_latest
from gapwatch.core.models import LogEvent, ProcessMemory, ProverEvent, ProverStatus
from gapwatch.cuzk.log_lines import (
    ANCHOR_MESSAGE,
    CONFIGURATION_LOADED_MESSAGE,
    DAEMON_STARTING_MESSAGE,
    STATUS_LISTENING_MESSAGE,
)
from gapwatch.cuzk.restarts import RestartWatch, Spanned

#: The daemons told apart (a file past them is the last one's: bounded for any input).
MAX_DAEMONS: Final = 16
#: Files remembered with the daemon they are of.
MAX_STREAMS: Final = 1024
#: GPUs remembered a daemon.
MAX_GPUS: Final = 64

_T = TypeVar("_T")
#: The lines that may tell a file another daemon's, or say its addresses (`Daemons._tracing`).
_ROUTING_LINES = frozenset((DAEMON_STARTING_MESSAGE, CONFIGURATION_LOADED_MESSAGE,
                            STATUS_LISTENING_MESSAGE))


@dataclass(slots=True)
class Daemon:
    """One daemon as its lines show it."""

    #: The file its first start line was read in, and when.
    stream: str
    started_s: float
    #: Its gRPC address (`configuration loaded listen=`) and `/status` address, once read.
    listen: str | None = None
    status_addr: str | None = None
    gpus: set[int] = field(default_factory=set)


class Daemons:
    """Files -> the daemon each is of (0: the first); see the module docstring."""

    def __init__(self) -> None:
        self.daemons: list[Daemon] = []
        #: Files that showed a start line -> their daemon (`_own_stream`), and a count of its
        #: changes: what was asked of `of_stream` before holds while it is the same.
        self._own: dict[str, int] = {}
        self.version = 0
        #: The newest daemon, until its file shows a line past its listen address, then said
        #: (`note`).
        self._unsaid: int | None = None
        #: A file's `cuzk-daemon starting`, read while a daemon was known and the file was
        #: none's yet: held until the file's next line tells whose (`_decide`): its listen
        #: address another daemon's, or not. Fed to a restart watch at once, a second
        #: daemon's start was a restart of the first; routed to a new daemon at once, one
        #: daemon's restart into a new file was no restart (its start line lost to a watch
        #: dropped a line later).
        self._held: dict[str, LogEvent] = {}
        #: The line the latest `of_log` held (its consumers feed it nothing now), and the held
        #: lines it let go, to be fed before it, to its daemon
        #: (`CuzkWatch._log`, `RestartsByDaemon.feed_log`).
        self.holding = False
        self.released: list[LogEvent] = []
        #: The `/status` addresses polled (`ProverStatus.prover`), the first `MAX_DAEMONS`.
        self._polled: set[str] = set()

    @property
    def several(self) -> bool:
        return len(self.daemons) > 1

    def resume_state(self) -> tuple[object, ...]:
        """A copy of what it holds, comparable with `==` (`LogParser.resume_state`)."""
        return ([(d.stream, d.started_s, d.listen, d.status_addr, sorted(d.gpus))
                 for d in self.daemons], list(self._own.items()), list(self._held.items()),
                self._unsaid)

    def of_log(self, ev: LogEvent) -> tuple[int, bool]:
        """The daemon `ev` is of, and whether its line showed a new one (the second daemon's
        first start line: `note` says it). Every log event passes here (the watcher's ~3 µs
        an event was 5 with this in plain steps): a line that is no tracing line only looks
        its file up, and learns its GPU."""
        if len(self.daemons) < 2 and not self._held and not self.released:
            # One daemon, nothing held: a line that names no daemon is its (a TIMELINE or C++
            # line learns no GPU here: its tracing lines name them). Every log event of a
            # report passes here, once in each consumer with a router of its own.
            if ev.kind != "tracing":
                return 0, False
            name = ev.name
            if name not in _ROUTING_LINES and not name.startswith(ANCHOR_MESSAGE):
                gpu = ev.gpu
                if gpu is not None and self.daemons and gpu not in self.daemons[0].gpus:
                    self._gpu(0, gpu)
                return 0, False
        self.holding = False
        if self.released:
            self.released = []
        if self._held and ev.stream in self._held:
            self._decide(ev)
        if ev.kind == "tracing":
            return self._tracing(ev)
        d = self.of_stream(ev.stream)
        gpu = ev.gpu
        if gpu is not None and d < len(self.daemons) and gpu not in self.daemons[d].gpus:
            self._gpu(d, gpu)
        if self._unsaid is not None and self._unsaid == d:
            self._unsaid = None
            return d, True
        return d, False

    def _tracing(self, ev: LogEvent) -> tuple[int, bool]:
        stream, name = ev.stream, ev.name
        if name == DAEMON_STARTING_MESSAGE:
            if self.daemons and stream and stream not in self._own:
                keep_latest(self._held, stream, ev, MAX_STREAMS)  # whose: its next line
                self.holding = True
                return 0, False
            return self._start(stream, ev.t_wall_s), False
        if name.startswith(ANCHOR_MESSAGE):
            d = self._start(stream, ev.t_wall_s)
        else:
            d = self.of_stream(stream)
            if name in (CONFIGURATION_LOADED_MESSAGE, STATUS_LISTENING_MESSAGE) and self.daemons:
                self._learn(d, ev)
            gpu = ev.gpu
            if gpu is not None and d < len(self.daemons) and gpu not in self.daemons[d].gpus:
                self._gpu(d, gpu)
        if self._unsaid is not None and self._unsaid == d and name != CONFIGURATION_LOADED_MESSAGE:
            self._unsaid = None
            return d, True
        return d, False

    def let_go(self) -> list[LogEvent]:
        """The start lines still held, in time order, now that no next line will come (the
        data's end): each the first daemon's, as a file that shows no listen address of its own
        is (a daemon that died on its first line is a restart of the first, not nothing)."""
        held = sorted(self._held.values(), key=lambda ev: ev.t_wall_s)
        for ev in held:
            self._own_stream(ev.stream, 0)
        self._held.clear()
        return held

    def _own_stream(self, stream: str, d: int) -> None:
        """`stream` is daemon `d`'s (the latest `MAX_STREAMS` files remembered)."""
        keep_latest(self._own, stream, d, MAX_STREAMS)
        self.version += 1

    def _gpu(self, d: int, gpu: int) -> None:
        """Daemon `d`'s lines named `gpu` (at most `MAX_GPUS` remembered)."""
        if d < len(self.daemons):
            gpus = self.daemons[d].gpus
            if gpu not in gpus and len(gpus) < MAX_GPUS:
                gpus.add(gpu)

    def of_stream(self, stream: str) -> int:
        """The daemon the lines of `stream` are of now."""
        return self._own.get(stream, 0)

    def of_status(self, st: ProverStatus) -> int | None:
        """The daemon a `/status` snapshot is of: the one whose `status HTTP server listening
        addr=` has the polled port (no two daemons of a box bind one), else, where one daemon
        is known and one address polled, or no daemon said another port, the first (None:
        another daemon's, not known among several; a PoSt daemon's uptime going back was the
        PoRep daemon's restart)."""
        port = _port(st.prover)
        said = [i for i, d in enumerate(self.daemons) if d.status_addr is not None]
        match = next((i for i in said if _port(self.daemons[i].status_addr) == port), None)
        if match is not None:
            return match
        if len(self._polled) < MAX_DAEMONS:
            self._polled.add(st.prover)
        if not self.several and len(self._polled) == 1:
            # One daemon, one address polled: its own, whatever port it says it listens on
            # (a container's port mapped to another on the host).
            return 0
        if self.several or said:
            return None
        return 0

    def of_process(self, r: ProcessMemory) -> int | None:
        """The daemon a process on a GPU is of: the one whose lines named that GPU, else, where
        no daemon named another GPU, the first (None: not known among several, or a GPU the
        only daemon's lines never named while they named others)."""
        named = [i for i, d in enumerate(self.daemons) if d.gpus]
        match = next((i for i in named if r.gpu in self.daemons[i].gpus), None)
        if match is not None:
            return match
        if self.several or named:
            return None
        return 0

    def of_gpu(self, gpu: int) -> list[int]:
        """The daemons whose lines named `gpu`; every daemon where none did."""
        named = [i for i, d in enumerate(self.daemons) if gpu in d.gpus]
        return named or list(range(max(1, len(self.daemons))))

    def _start(self, stream: str, t_s: float) -> int:
        """The daemon of a file's start line: its file's, else the first's (the first file to
        show one), else a new one."""
        d = self._own.get(stream)
        if d is not None:
            return d
        if not self.daemons or not stream:
            # The first start line read; or a line whose file is not known (an event made
            # without one, `LogEvent.stream` ""): no file tells it from the first daemon's.
            if self.daemons:
                return 0
            self.daemons.append(Daemon(stream, t_s))
            self._own_stream(stream, 0)
            return 0
        # A file's start line, no listen address of its own read to tell it another daemon's
        # (`_decide`): the same daemon's (a log cut into one file a run; a log without
        # cuzk-daemon's own lines, `RUST_LOG=cuzk_core=info`), restarted, as one file reads.
        self._own_stream(stream, 0)
        return 0

    def _decide(self, ev: LogEvent) -> None:
        """Whose file holds the `cuzk-daemon starting` held for `ev.stream`, told at its next
        line: a new daemon's where that line is `configuration loaded` with a listen address
        no daemon known has, every known daemon's address read (two daemons of a box cannot
        bind one); that daemon's where one has it; else the first's. The held line is let
        go (`released`), to be fed first."""
        held = self._held.pop(ev.stream)
        d = 0
        listen = _text(ev.fields.get("listen")) if (
            ev.kind == "tracing" and ev.name == CONFIGURATION_LOADED_MESSAGE) else None
        if listen is not None:
            same = next((i for i, o in enumerate(self.daemons) if o.listen == listen), None)
            if same is not None:
                d = same
            elif all(o.listen is not None for o in self.daemons):
                d = self._new_daemon(ev.stream, held.t_wall_s)
        self._own_stream(ev.stream, d)
        self.released = [held]

    def _new_daemon(self, stream: str, t_s: float) -> int:
        """Another daemon, its file `stream` (the last one's past `MAX_DAEMONS`)."""
        if len(self.daemons) >= MAX_DAEMONS:
            return MAX_DAEMONS - 1
        self.daemons.append(Daemon(stream, t_s))
        d = self._unsaid = len(self.daemons) - 1
        return d

    def _learn(self, d: int, ev: LogEvent) -> None:
        """Daemon `d`'s addresses from its own lines (the first listen address it shows)."""
        if ev.name == CONFIGURATION_LOADED_MESSAGE:
            listen = _text(ev.fields.get("listen"))
            if listen is not None and d < len(self.daemons) and self.daemons[d].listen is None:
                self.daemons[d].listen = listen
        elif ev.name == STATUS_LISTENING_MESSAGE and d < len(self.daemons):
            self.daemons[d].status_addr = _text(ev.fields.get("addr"))

    def label(self, d: int) -> str:
        """Daemon `d` as a person finds it on the box: its listen address (no two daemons of a
        box share one), else its log file (`--log FILE`)."""
        daemon = self.daemons[d]
        return daemon.listen or f"--log {daemon.stream or '-'}"

    def named(self, d: int | None, events: list[ProverEvent]) -> list[ProverEvent]:
        """`events` of daemon `d`, each naming it where the logs are of several (`ProverEvent.
        daemon`, and its words: `daemon 127.0.0.1:9820 (GPU 0): cuzk restarted ...`): a
        restart, a panic or a late PoSt said without it left the operator to guess which
        daemon. With one daemon (or `d` not known) they are as they came."""
        if not events or d is None or not self.several or d >= len(self.daemons):
            return events
        label = self.label(d)
        gpus = sorted(self.daemons[d].gpus)
        on = f" (GPU {','.join(map(str, gpus))})" if gpus else ""
        return [e if e.daemon is not None else msgspec.structs.replace(
            e, daemon=label, daemon_gpus=gpus,
            message=fmt.visible(f"daemon {label}{on}: ") + e.message) for e in events]

    def note(self) -> ProverEvent:
        """The one line that says the logs are of several daemons (at the newest one's start
        line), and what gapwatch does of it."""
        newest = self.daemons[-1]
        which = "; ".join(_daemon_words(d) for d in self.daemons)
        message = fmt.visible(
            f"these logs are of {len(self.daemons)} cuzk daemons, not one: {which}. A file "
            "whose 'configuration loaded' names a listen address of its own is its own "
            "daemon's (its start line is no restart of another); the files that show none are "
            "the first daemon's. Each daemon's PoSt, restarts, GPU queue and pinned pool are "
            "followed apart (a PoSt-only cuzk: docs/post.md, 'Two daemons')")
        # Kind "setup", not "warning": the setup gapwatch's own advice recommends (a PoSt-only
        # cuzk beside the PoRep one) is no sign of failures to come, and the alert on "warning"
        # (GapwatchProverWarning) says cuzk's pinned pool is churning. Level "warning": said
        # where a person reads (stderr, the dashboard's alert line), as before.
        return ProverEvent(t_wall_s=newest.started_s, kind="setup", level="warning",
                           message=message)


def _daemon_words(d: Daemon) -> str:
    listen = f", listening on {d.listen}" if d.listen else ""
    gpus = f", GPU {','.join(str(g) for g in sorted(d.gpus))}" if d.gpus else ""
    return f"--log {d.stream or '-'} (started {fmt.clock(d.started_s)}{listen}{gpus})"


def _port(addr: str | None) -> str | None:
    """The port of `host:port` (`[::]:9821` too); None without one."""
    if addr is None or ":" not in addr:
        return None
    return addr.rsplit(":", 1)[1] or None


def _text(value: object) -> str | None:
    return value.strip('"') if isinstance(value, str) and value else None


class PerDaemon(Generic[_T]):
    """One `_T` a daemon, made by `make` as each is first read (the first at once)."""

    def __init__(self, make: Callable[[], _T]) -> None:
        self.make = make
        self.router = Daemons()
        self.each: list[_T] = [make()]

    def get(self, d: int) -> _T:
        while len(self.each) <= d:
            self.each.append(self.make())
        return self.each[d]

    def of_log(self, ev: LogEvent) -> tuple[_T, bool]:
        """The `_T` of `ev`'s daemon, and whether its line showed a new daemon (`Daemons.
        of_log`)."""
        d, new = self.router.of_log(ev)
        each = self.each
        return (each[d] if d < len(each) else self.get(d)), new

    def feed_log(self, ev: LogEvent, feed: Callable[[_T, LogEvent], list[ProverEvent]]
                 ) -> tuple[list[ProverEvent], bool]:
        """`feed` `ev` to its daemon's `_T`, after the start lines its line let go (`Daemons.
        released`); nothing while its line is held (`Daemons.holding`). And whether it showed
        a new daemon (`Daemons.note`)."""
        router = self.router
        d, new = router.of_log(ev)
        if router.holding:
            return [], False
        each = self.each
        target = each[d] if d < len(each) else self.get(d)
        if router.released:
            return [e for held in (*router.released, ev) for e in feed(target, held)], new
        return feed(target, ev), new

    @property
    def first(self) -> _T:
        return self.each[0]


class RestartsByDaemon:
    """The restarts of each daemon (`RestartWatch`), for the gaps that span one
    (`gapwatch.cuzk.pipeline.PipelineFacts`): a gap of a GPU is asked of the daemons whose
    lines named that GPU (every daemon where none did)."""

    def __init__(self) -> None:
        self._by = PerDaemon(RestartWatch)
        #: The daemon of the latest `/status` snapshot or GPU process fed (None: not known
        #: among several): whose restart that reading said.
        self.fed_daemon: int | None = None

    @property
    def router(self) -> Daemons:
        """Which daemon each record is of."""
        return self._by.router

    @property
    def first(self) -> RestartWatch:
        """The first daemon's (the only one's, where the logs are of one daemon)."""
        return self._by.first

    def of_another(self, stream: str) -> bool:
        """Whether the lines of `stream` are of a daemon other than the first."""
        router = self._by.router
        return router.several and router.of_stream(stream) != 0

    def daemon_of(self, stream: str) -> int:
        """The daemon the lines of `stream` are of (0: the first; `Daemons.of_stream`)."""
        return self._by.router.of_stream(stream)

    def of_gpu(self, gpu: int) -> list[int]:
        """The daemons whose lines named `gpu`, every daemon where none did (`Daemons.of_gpu`):
        whose state a gap of `gpu` is asked of."""
        return self._by.router.of_gpu(gpu)

    def feed_log(self, ev: LogEvent) -> list[ProverEvent]:
        return self._by.feed_log(ev, RestartWatch.feed_log)[0]

    def feed_status(self, st: ProverStatus) -> list[ProverEvent]:
        d = self.fed_daemon = self._by.router.of_status(st)
        return self._by.get(d).feed_status(st) if d is not None else []

    def feed_process(self, r: ProcessMemory) -> list[ProverEvent]:
        d = self.fed_daemon = self._by.router.of_process(r)
        return self._by.get(d).feed_process(r) if d is not None else []

    def during(self, start_s: float, end_s: float, slack_s: float = 0.0,
               gpu: int | None = None, idle_since_s: float | None = None) -> Spanned | None:
        """`RestartWatch.during` of the daemon of `gpu` (the latest restart of those of it
        where its lines do not tell)."""
        found = [s for d in (self._by.router.of_gpu(gpu) if gpu is not None
                             else range(len(self._by.each)))
                 if d < len(self._by.each)
                 and (s := self._by.each[d].during(start_s, end_s, slack_s, idle_since_s))
                 is not None]
        return max(found, key=lambda s: s.latest.t_s, default=None)
