"""`--on-event CMD`: run the user's command when something happens that a person must hear of,
with the facts in its environment. For boxes with no monitoring stack.

Who calls it: `gapwatch watch` and `gapwatch record` (`start_event_hook`), when `--on-event` is
given. The session's listener (`EventHook.listen`, on the feeding thread) only turns a state
change into an `Event` and offers it (never blocks); the command runs on the hook's own thread.

Events (`EventKind`): `breakdown_entered` and `breakdown_left` (a GPU's chaining state, from the
session's listener), `idle_high` (a GPU idle in gaps of any kind for more than `[alerts]
idle_share` of the last `idle_window_s`, from the gaps the listener hears close:
`core.idle_share`, the rule `GapwatchGpuIdleHigh`'s threshold), `post_late`, `post_failed`,
`restart`, `gpu_error` (the prover watcher's events: `event_of` maps a late proof, a failed
one, a restart, and an error or lost GPU job), and `gpu_hardware_error` (NVML's: an XID,
uncorrected ECC errors, a GPU lost; `hardware_event_of`); the hook is a session sink for the
records, `EventHook.on_record`. Other sources may offer
their own through `EventHook.offer` with the same `Event` (their detail in `detail`).

The command is split with `shlex` and executed directly, never through a shell: facts travel
in environment variables (`Event.env`: GAPWATCH_EVENT, GAPWATCH_GPU, GAPWATCH_STATE,
GAPWATCH_CAUSE, GAPWATCH_CAUSE_WORDS, GAPWATCH_SETTING, GAPWATCH_PAYOFF,
GAPWATCH_PAYOFF_SPAN_S, GAPWATCH_PAYOFF_GAPS, GAPWATCH_SNAPSHOT_DIR, GAPWATCH_DAEMON,
GAPWATCH_DAEMON_GPUS, GAPWATCH_LINE, GAPWATCH_DETAIL, GAPWATCH_TIME), never in its arguments,
so no fact from outside can become a command.

The contract (docs/fleet.md's table, every variable for every event): a variable is empty
where it does not apply to the event or its fact is not known; `none` says it is known that
there is none (CAUSE: no cause; SETTING: no setting closes it). So SETTING is never empty, and
CAUSE empty only where the event's cause is not known; CAUSE_WORDS says CAUSE in words (empty
with `none`). The verdict's facts (the stall, its setting, the payoff) are a BREAKDOWN's and
an `idle_high`'s only (`with_facts`): a prover error on a GPU in BREAKDOWN was handed the
breakdown's setting and payoff. Each event's own facts are set where it is made (`event_of`,
`hardware_event_of`).

Bounds, so the command can never stop or slow monitoring:
- rate limit: one run per event kind and GPU per `min_interval_s` (the others are counted);
- queue: at most `MAX_QUEUED` events wait; more are dropped and counted;
- timeout: a command still running after `timeout_s` is killed with its process group;
- a command that cannot start, exits non-zero or is killed is counted and said (a warning
  notice: stderr for `record`, a toast on the dashboard, the recording), and the next runs.
"""

from __future__ import annotations

import os
import queue
import shlex
import shutil
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from gapwatch.base.input_files import file_kind
from gapwatch.config import Config
from gapwatch.core import fmt
from gapwatch.core.health import GPU_ERROR_KINDS, event_words
from gapwatch.core.idle_share import IdleShareWatch
from gapwatch.core.models import (
    Gap,
    HardwareEvent,
    Notice,
    ProverEvent,
    Record,
    SessionHeader,
    StateChange,
)
from gapwatch.core.prover_watch import LateOnce, failed, went_late
from gapwatch.core.sizes import cut_text
from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.cuzk.post import POST_NAMES
from gapwatch.cuzk.post_advice import CAUSE_SETTINGS
from gapwatch.cuzk.restarts import RESTART_CAUSES
from gapwatch.cuzk.why_now import why_now
from gapwatch.engine.runtime import Runtime
from gapwatch.sinks.snapshot import SnapshotError, write_snapshot

EventKind = Literal["breakdown_entered", "breakdown_left", "idle_high", "post_late", "post_failed",
                    "restart", "gpu_error", "gpu_hardware_error"]
#: Events waiting for the command at most (a command slower than events arrive drops the rest).
MAX_QUEUED = 8


@dataclass(frozen=True, slots=True)
class Event:
    """What happened, and the facts the command gets. `gpu` None: the box's (a restart)."""

    kind: EventKind
    gpu: int | None
    state: str
    t_wall_s: float
    cause: str = ""
    cause_words: str = ""
    setting: str = ""
    payoff_gain: float | None = None
    #: What the payoff rests on (`WhyNow.payoff_span_s`, `payoff_gaps`).
    payoff_span_s: float | None = None
    payoff_gaps: int | None = None
    snapshot_dir: str = ""
    #: The prover daemon it is of, where the logs are of several (`ProverEvent.daemon`), and
    #: the GPUs its lines named.
    daemon: str = ""
    daemon_gpus: tuple[int, ...] = ()
    line: str = ""
    detail: str = ""

    def env(self) -> dict[str, str]:
        """The GAPWATCH_* variables (empty text where a fact is not known), each an
        `env_text`."""
        return {name: env_text(value) for name, value in self._facts().items()}

    def _facts(self) -> dict[str, str]:
        return {
            "GAPWATCH_EVENT": self.kind,
            "GAPWATCH_GPU": "" if self.gpu is None else str(self.gpu),
            "GAPWATCH_STATE": self.state,
            "GAPWATCH_CAUSE": self.cause,
            "GAPWATCH_CAUSE_WORDS": self.cause_words,
            "GAPWATCH_SETTING": self.setting,
            "GAPWATCH_PAYOFF": "" if self.payoff_gain is None else f"{self.payoff_gain:.2f}",
            "GAPWATCH_PAYOFF_SPAN_S": "" if self.payoff_span_s is None
            else f"{self.payoff_span_s:.0f}",
            "GAPWATCH_PAYOFF_GAPS": "" if self.payoff_gaps is None else str(self.payoff_gaps),
            "GAPWATCH_SNAPSHOT_DIR": self.snapshot_dir,
            "GAPWATCH_DAEMON": self.daemon,
            "GAPWATCH_DAEMON_GPUS": ",".join(map(str, self.daemon_gpus)),
            "GAPWATCH_LINE": self.line,
            "GAPWATCH_DETAIL": self.detail,
            "GAPWATCH_TIME": f"{self.t_wall_s:.3f}",
        }

    @property
    def rate_key(self) -> tuple[str, int | None]:
        """What the rate limit counts runs by: the kind and GPU; for a GPU's hardware error
        its kind too (an XID 79 and the GPU lost a second later are two things to hear of,
        and the second was rate-limited away behind the first)."""
        if self.kind == "gpu_hardware_error":
            return f"{self.kind}:{self.state}", self.gpu
        return self.kind, self.gpu


#: The most characters of one GAPWATCH_* variable: a log line's or panic's text fits (the parser
#: reads 16 KiB of a line); Linux refuses one environment string over 128 KiB (E2BIG), and
#: the command then did not run at all.
ENV_CHARS = 16384


def env_text(value: str) -> str:
    """A fact as an environment variable can hold it and a terminal can show it: a NUL (which
    no environment string can hold: Popen's ValueError, and the command did not run) and
    other controls written out as `fmt.visible` writes them, newlines kept (a panic's message
    is several lines), cut to `ENV_CHARS`. The facts come from outside (log lines, `/status`,
    a recording) and a hook script often echoes them to a terminal."""
    if value.isprintable():
        return cut_text(value, ENV_CHARS)
    return cut_text("\n".join(map(fmt.visible, value.split("\n"))), ENV_CHARS)


@dataclass(slots=True)
class HookCounts:
    """What the hook did with the events offered (the closing summary's figures)."""

    ran: int = 0
    ok: int = 0
    failed: int = 0
    timed_out: int = 0
    rate_limited: int = 0
    dropped: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    #: The last failure's words: in the closing summary too, since a failure at the very end
    #: (the events run after the session stopped) can no longer be said as a notice.
    last_failure: str | None = None

    def summary(self) -> str:
        last = f"; last failure: {self.last_failure}" if self.last_failure else ""
        times = "once" if self.ran == 1 else f"{self.ran} times"  # "ran 1 times" read wrong
        return (f"--on-event ran {times}: {self.ok} ok, {self.failed} failed, "
                f"{self.timed_out} killed after the timeout; {self.rate_limited} rate-limited, "
                f"{self.dropped} dropped (queue full){last}")


#: The events the GPU's verdict (`cuzk.why_now`) is the facts of: its chaining state's, and
#: its idle share's (said in the verdict's words).
_VERDICT_EVENTS = frozenset(("breakdown_entered", "breakdown_left", "idle_high"))


def with_facts(event: Event, snap: StoreSnapshot) -> Event:
    """A BREAKDOWN or `idle_high` event with the GPU's verdict now (`cuzk.why_now`: cause,
    setting, payoff). Every other event keeps its own facts (`event_of`,
    `hardware_event_of`): no setting of the prover's closes an XID, and a panic or a late PoSt
    on a GPU in BREAKDOWN is not the breakdown's stall (it was handed its setting and
    payoff)."""
    if event.gpu is None or event.kind not in _VERDICT_EVENTS:
        return event
    why = why_now(snap, event.gpu)
    # An event that brings its own facts (a late proof's setting) keeps them.
    return replace(event, cause=event.cause or why.cause,
                   cause_words=event.cause_words or why.cause_words,
                   setting=event.setting or why.setting, payoff_gain=why.payoff_gain,
                   payoff_span_s=why.payoff_span_s, payoff_gaps=why.payoff_gaps,
                   line=event.line or why.line())


def hardware_event_of(ev: HardwareEvent) -> Event | None:
    """NVML's GPU error as an `--on-event` event (`gpu_hardware_error`, its kind as the state:
    `xid`, `ecc_uncorrected`, `gpu_lost`), or None for what is a warning only (corrected ECC
    errors, PCIe replays: in the recording, the report and /metrics). The same kinds as the
    alert rule `GapwatchGpuHardwareError` (`health.GPU_ERROR_KINDS`): a box with no
    monitoring stack hears of what would page one that has it."""
    if ev.kind not in GPU_ERROR_KINDS:
        return None
    words = event_words(ev)
    return Event("gpu_hardware_error", ev.gpu, ev.kind, ev.t_wall_s, cause=ev.kind,
                 cause_words=words, setting="none", line=words, detail=words)


def _prover_event(kind: EventKind, ev: ProverEvent, state: str, cause: str,
                  cause_words: str, setting: str) -> Event:
    """An event of the prover's, with the facts every such event carries: its GPU, the
    daemon it is of (where there are several), its words as the line and the detail."""
    return Event(kind, ev.gpu, state, ev.t_wall_s, cause=cause, cause_words=cause_words,
                 setting=setting, line=ev.message, detail=ev.message, daemon=ev.daemon or "",
                 daemon_gpus=tuple(ev.daemon_gpus))


def event_of(ev: ProverEvent) -> Event | None:
    """The prover watcher's event as an `--on-event` event, or None when a person need not hear
    of it: a late proof (`post_late`), a failed one (`post_failed`: its block is lost as a late
    one's is; the failure line is a `gpu_error` of its own too), a restart (`restart`), a prover
    error or a GPU job never picked up (`gpu_error`). At-risk proofs, proofs not timed
    (`unknown`: not known to be late), restart costs, warnings (signs of failures to come:
    cuzk's pinned pool churning; the failures themselves are `gpu_error`s) and proofs on time
    stay in the recording, the report, /metrics and the dashboard's alert line."""
    proof = ev.proof
    if proof is not None and failed(ev):
        return _prover_event("post_failed", ev, "failed", proof.proof_kind,
                             proof.error or _post_name(proof.proof_kind), "none")
    # A PoSt lost in a restart will never complete: as late as a proof gets (the alert rule
    # GapwatchPoStLate counts it too), whatever its figures said so far; its state says "lost".
    lost = proof is not None and proof.given_up == "restart"
    if proof is not None and went_late(ev):
        # The setting alone (`post_advice.CAUSE_SETTINGS`, as /metrics' PoSt advice names
        # it); its words, with the proof's own figures, are in the line (`; setting: ...`).
        setting = CAUSE_SETTINGS.get(proof.cause or "", "none")
        return _prover_event("post_late", ev, "lost" if lost else proof.verdict,
                             proof.proof_kind, _post_name(proof.proof_kind), setting)
    if ev.kind == "restart":
        cause = ev.cause or ""
        return _prover_event("restart", ev, "restart", cause, RESTART_CAUSES.get(cause, ""),
                             "none")
    if ev.kind in ("error", "lost_job"):
        # The error in words: its message (cuzk's line and error, its panic).
        return _prover_event("gpu_error", ev, ev.kind, ev.kind, ev.message, "none")
    return None


def _post_name(kind: str) -> str:
    """`WinningPoSt` for `winning-post`: a proof kind in words."""
    return POST_NAMES.get(kind, kind)


class EventHook:
    """Runs `argv` for each event offered, on its own thread, within the bounds above.

    `enrich(event)` is called on the hook's thread before the command runs (the verdict's
    facts, a snapshot); `notify(level, message)` says a failure (never raises); `idle` says
    when a GPU idles in gaps for more than its share (`idle_high`; None: never)."""

    def __init__(self, argv: list[str], *, timeout_s: float = 10.0,
                 min_interval_s: float = 60.0,
                 enrich: Callable[[Event], Event] | None = None,
                 notify: Callable[[str, str], None] | None = None,
                 idle: IdleShareWatch | None = None) -> None:
        if not argv:
            raise ValueError("--on-event: give a command")
        self.argv = argv
        self.timeout_s = timeout_s
        self.min_interval_s = min_interval_s
        self.counts = HookCounts()
        self._enrich = enrich
        self._notify = notify or (lambda level, message: None)
        self._queue: queue.Queue[Event | None] = queue.Queue(MAX_QUEUED)
        self._last: dict[tuple[str, int | None], float] = {}
        self._states: dict[int, str] = {}
        self._idle = idle
        #: Which late word is a proof's first: one command a proof (`LateOnce`).
        self._late = LateOnce()
        self._thread = threading.Thread(target=self._run, name="on-event", daemon=True)
        self._lock = threading.Lock()
        self._abandon = threading.Event()
        #: Set by `stop`: the thread ends once the queue is empty (`_next`).
        self._ending = threading.Event()
        #: Set when the thread's loop is over (see `stop`).
        self._done = threading.Event()
        #: Held while a command starts and while `_give_up` kills: none starts unseen.
        self._start_lock = threading.Lock()
        #: The command running now (killed if `stop` gives up on it).
        self._proc: subprocess.Popen[bytes] | None = None

    # -- the feeding side (never blocks) ------------------------------------------------------

    def listen(self, ev: Gap | StateChange | Notice) -> None:
        """A session listener: BREAKDOWN entered and left become events, and a gap that
        closes may take its GPU over its idle share (`idle_high`)."""
        if isinstance(ev, Gap):
            self._idle_high(ev)
            return
        if not isinstance(ev, StateChange):
            return
        before = self._states.get(ev.gpu)
        self._states[ev.gpu] = ev.state
        if ev.state == "BREAKDOWN" and before != "BREAKDOWN":
            if self._idle is not None:  # its idle page ends, as the rule's `unless` ends it
                self._idle.held(ev.gpu)
            self.offer(Event("breakdown_entered", ev.gpu, ev.state, ev.t_wall_s,
                             detail=ev.reason))
        elif before == "BREAKDOWN" and ev.state != "BREAKDOWN":
            self.offer(Event("breakdown_left", ev.gpu, ev.state, ev.t_wall_s, detail=ev.reason))

    def _idle_high(self, gap: Gap) -> None:
        """A closed gap counted in its GPU's idle share; `idle_high` when it went over. Not in
        BREAKDOWN (said by `breakdown_entered`, with the same verdict): one page for one GPU
        idling, as the rule's `unless ... gapwatch_gpu_breakdown == 1` keeps it."""
        if self._idle is None:
            return
        state = self._states.get(gap.gpu, "")
        high = self._idle.closed(gap, held=state == "BREAKDOWN")
        if high is not None:
            # Its line is the verdict's (`with_facts`: cause, step, payoff), as a BREAKDOWN's;
            # what it rests on, the share, is its detail, as a BREAKDOWN's reason is.
            self.offer(Event("idle_high", gap.gpu, state, high.t_wall_s, detail=high.words()))

    # A session sink for the prover watcher's events (they reach sinks, not listeners).
    def on_header(self, header: SessionHeader) -> None:
        pass

    def on_record(self, record: Record) -> None:
        if type(record) is HardwareEvent:
            hardware = hardware_event_of(record)
            if hardware is not None:
                self.offer(hardware)
            return
        if type(record) is not ProverEvent:
            return
        event = event_of(record)
        # A proof is said late while it runs and again when it ends: one command a proof; a
        # later proof under its job id (Curio retries a PoSt lost in a restart under the same
        # id) is another, whose lateness runs the command again.
        first_late = self._late.first(record)
        if event is not None and (event.kind != "post_late" or first_late):
            self.offer(event)

    def close(self) -> None:
        pass  # `stop` ends the thread, after the session has stopped feeding

    def offer(self, event: Event) -> bool:
        """Queue `event` unless its kind and GPU ran less than `min_interval_s` ago or the queue
        is full (both counted). Thread-safe; returns whether it was queued."""
        now = time.monotonic()
        key = event.rate_key
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.min_interval_s:
                self.counts.rate_limited += 1
                return False
            try:
                self._queue.put_nowait(event)
            except queue.Full:
                self.counts.dropped += 1
                return False
            self._last[key] = now
        return True

    # -- the hook's thread --------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Run the events still waiting, then stop; what is not done within the timeout plus
        5 s is given up (the command running then is killed, the rest dropped, counted).

        However this wait ends (a second stop signal raising `StopRequested` in it, as in
        `watch` after the dashboard gave its handlers back), a command still running is killed
        with its group on the way out (`_give_up`): it runs in a session of its own, so no
        Ctrl-C reaches it, and once gapwatch had exited it ran on, an orphan. The wait is on
        `_done`, never `Thread.join`: a join interrupted by a signal marks the thread stopped
        while it still runs (Python 3.11's `_wait_for_tstate_lock`), and it was then left."""
        if self._thread.ident is None:  # never started: what was offered is dropped, counted
            while not self._queue.empty():
                self.counts.dropped += self._queue.get_nowait() is not None
            return
        try:
            self._ending.set()
            try:
                # Wakes a thread waiting on an empty queue; a full one's thread is running a
                # command, and ends when it finds the queue empty (`_next`). A sentinel that
                # had to wait for room gave up after 1 s and dropped every waiting event, and
                # the thread, never told, kept `stop` for the timeout plus 10 s.
                self._queue.put_nowait(None)
            except queue.Full:
                pass
            self._done.wait(self.timeout_s + 5.0)
        finally:
            if not self._done.is_set():
                self._give_up()

    def _give_up(self) -> None:
        """No command starts from now on; the one running is killed with what it started.
        Under `_start_lock`, so a command cannot be started between the two."""
        with self._start_lock:
            self._abandon.set()
            proc = self._proc
            if proc is not None:
                _kill_group(proc)
        self._done.wait(5.0)

    def _run(self) -> None:
        try:
            self._run_events()
        finally:
            self._done.set()

    def _next(self) -> Event | None:
        """The next event to run; None once `stop` asked and none is waiting (checked before
        blocking: `stop` puts its wake-up None only where the queue has room)."""
        if self._ending.is_set() and self._queue.empty():
            return None
        return self._queue.get()

    def _run_events(self) -> None:
        while True:
            event = self._next()
            if event is None:
                return
            if self._abandon.is_set():
                self.counts.dropped += 1
                continue
            try:
                if self._enrich is not None:
                    event = self._enrich(event)
            except Exception as exc:  # noqa: BLE001 - the command still runs, with fewer facts
                self._notify("warning", f"--on-event: facts for {event.kind} not read: {exc!r}")
            self._run_one(event)

    def _run_one(self, event: Event) -> None:
        env = {**os.environ, **event.env()}
        try:
            with self._start_lock:  # started and known to `_give_up` at once
                if self._abandon.is_set():
                    self.counts.dropped += 1
                    return
                self.counts.ran += 1
                self.counts.by_kind[event.kind] = self.counts.by_kind.get(event.kind, 0) + 1
                proc = subprocess.Popen(self.argv, env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True, close_fds=True)
                self._proc = proc
        except (OSError, ValueError) as exc:
            self.counts.failed += 1
            self._failure(f"--on-event {self.argv[0]!r} could not start for {event.kind}: "
                          f"{exc.strerror if isinstance(exc, OSError) else exc}")
            return
        try:
            code = proc.wait(self.timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            self._proc = None
            self.counts.timed_out += 1
            self._failure(f"--on-event {self.argv[0]!r} still running after "
                          f"{self.timeout_s:g} s for {event.kind}: killed")
            return
        self._proc = None
        if code != 0 and self._abandon.is_set():
            self.counts.timed_out += 1
            return
        if code != 0:
            self.counts.failed += 1
            self._failure(f"--on-event {self.argv[0]!r} exited {code} for {event.kind}")
            return
        self.counts.ok += 1

    def _failure(self, message: str) -> None:
        """A run that failed: said as a warning and kept for the closing summary."""
        self.counts.last_failure = message
        self._notify("warning", message)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the command and whatever it started (its own session: `start_new_session`)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL'ed
        pass


def parse_command(text: str) -> list[str]:
    """`--on-event CMD` split as a shell would split words (quotes kept), never run by one.

    Raises:
        ValueError: unbalanced quotes, or nothing to run.
    """
    argv = shlex.split(text)
    if not argv:
        raise ValueError("--on-event: give a command to run")
    return argv


def program_problem(program: str) -> str | None:
    """Why `program` (the command's first word) cannot be run now, or None when it can.

    Checked when gapwatch starts: found out at the first event instead, a mistyped hook was
    said only when a GPU entered BREAKDOWN, the moment the page was wanted, and a directory
    said only `Permission denied`. A name without a slash is looked up on PATH, as exec does."""
    if "/" not in program:
        if shutil.which(program) is None:
            return f"{program!r}: no such command on PATH (or not executable there)"
        return None
    try:
        mode = os.stat(program).st_mode
    except OSError as exc:
        return f"{program!r}: {exc.strerror or exc}"
    if not stat.S_ISREG(mode):
        return f"{program!r} is {file_kind(mode)}, not a command"
    if not os.access(program, os.X_OK):
        return (f"{program!r} is not executable (chmod +x it, or name its interpreter: "
                f"--on-event 'sh {program}')")
    return None


def checked_command(text: str) -> list[str]:
    """`--on-event CMD` split into words (`parse_command`), its program runnable now.

    Raises:
        ValueError: unbalanced quotes, nothing to run, or a program that cannot be run (the
            message says why: not found, a directory, not executable).
    """
    argv = parse_command(text)
    problem = program_problem(argv[0])
    if problem is not None:
        raise ValueError(f"--on-event: {problem}")
    return argv


def start_event_hook(argv: list[str], rt: Runtime, config: Config,
                     timeout_s: float = 10.0) -> EventHook:
    """Build the hook for `--on-event` (its words, `checked_command`'s) over the runtime's
    session, subscribe it and start its thread (call before `rt.start()`; `hook.stop()` after
    `rt.stop()`).

    Facts come from the store at the time the command runs; on `breakdown_entered` a snapshot
    folder is written first (without the screenshot), as the dashboard writes one, when
    `[snapshot] auto` is on, at most one per `[snapshot] auto_min_interval_s`.
    """
    last_snapshot: list[float] = []

    def notify(level: str, message: str) -> None:
        rt.session.on_notice(Notice(time.monotonic_ns(), time.time(),
                                    "error" if level == "error" else "warning", message))

    def enrich(event: Event) -> Event:
        snap = rt.store.snapshot()
        event = with_facts(event, snap)
        cfg = config.snapshot
        now = time.monotonic()
        if event.kind != "breakdown_entered" or not cfg.auto or (
                last_snapshot and now - last_snapshot[-1] < cfg.auto_min_interval_s):
            return event
        last_snapshot[:] = [now]
        try:
            path = write_snapshot(cfg.dir, snap, rt.header, config, t_wall_s=event.t_wall_s,
                                  reason=f"automatically: GPU{event.gpu} entered BREAKDOWN "
                                         "(--on-event)")
        except SnapshotError as exc:
            notify("warning", f"--on-event: snapshot not written: {exc}")
            return event
        # Absolute: the command runs in gapwatch's directory, but a hook that hands the path
        # on (a ticket, a copy to another box) had "gapwatch-snapshot-..." and no directory.
        return replace(event, snapshot_dir=os.path.abspath(path))

    idle = IdleShareWatch(config.alerts.idle_share, config.alerts.idle_window_s)
    hook = EventHook(argv, timeout_s=timeout_s, enrich=enrich, notify=notify, idle=idle)
    rt.session.subscribe(hook.listen)
    rt.session.add_sink(hook)
    hook.start()
    return hook


def event_hook_for(argv: list[str] | None, rt: Runtime, config: Config,
                   timeout_s: float) -> EventHook | None:
    """`--on-event` as `watch` and `record` take it (`commands.on_event_argv`): the hook
    started over the runtime, or None without the flag."""
    return None if argv is None else start_event_hook(argv, rt, config, timeout_s)
