"""cuzk's failures as error events: its ERROR lines, its self-check failures, its panics.

Who calls it: `gapwatch.cuzk.watch.CuzkWatch` (every log event). Pure.

Which lines (cuzk-upstream-paths.md 4.2; every one is in tests/data/cuzk-upstream/cuzk.log): every
tracing line at level ERROR (`partition GPU proving failed` / `... task panicked`, engine.rs:656,
679; `GPU proving failed` 977, 998; `GPU prove start failed` 3282; `partition synthesis failed`
1784; `synthesis failed` 2855; `Phase 7: C1 parse/SRS load failed` 2217; `... self-check FAILED —
proof will NOT be returned to caller` 572, 771, 901, 2565; `prove failed`, cuzk-server
service.rs:164); the WARN `PoRep proof self-check FAILED — proof is invalid` (prover.rs:261); the
WARN `acquire request exceeds total budget — will block until possible` (memory.rs:188: never
granted, so its job waits until cuzk restarts); and a panic message (`gapwatch.cuzk.panics`), one
event however many lines it had. A failed partition fails its whole job (the rest are skipped,
engine.rs:1635, 3037), so the GPU idles after it: a gap that follows an error says so
(`gapwatch.cuzk.pipeline.PipelineFacts.error_words`). Which lines are failures, and their words, is
one rule in `gapwatch.cuzk.pipeline` (`is_failure`, `failure_words`), used by both.

One incident, one event (`Incidents`): a panic in a `spawn_blocking` task is two things in the
log, Rust's default hook's message on stderr (untimestamped, placed by its arrival or the line
before it) and cuzk's own ERROR line when it awaits the task's JoinError (`partition GPU proving
task panicked`, `GPU prove start task panicked`, ... `error=task panicked`, engine.rs:679, 998,
3302, 1810, 2870, 3475), written at once after it. They name no common thread (the ERROR line
has none), so they are paired by time: a panic and a `... task panicked` line within
`PANIC_PAIR_S` of each other, either first (two files read apart), are one error event with both
texts, the job and GPU of cuzk's line, at its time (its own stamp). Each waits for the other at
most `PANIC_PAIR_S` of data time (or to the end of the data), then is said alone: a panic that
killed the process has no such line. Followed live, also at most `PANIC_PAIR_S` after it arrived
by the reader's clock (`heard_by`: the time up to which every line written was read): that
process writes no line after the panic to move the data's time, and the panic was said only when the
restarted daemon's first line came, or never. Neither wait says cuzk's line
alone while the reader is still reading a panic (its backtrace's frames still coming) that may
be its other half: it said two errors for one incident. Counted twice, two panics read "4
error(s)" in the report and fired `increase()` alerts double.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from gapwatch.core.models import LogEvent, ProverEvent
from gapwatch.cuzk.pipeline import PANIC_KIND, failure_what, failure_words, is_failure

#: A panic message and a `... task panicked` line this close (s) are one incident: cuzk writes
#: its line as soon as the task's JoinError comes back (Rust's hook printed the panic just
#: before), and a panic read from the journal or a file is placed within a poll period.
PANIC_PAIR_S = 2.0
#: Halves waiting for their other half (several GPUs may panic at once); more: the oldest said.
MAX_WAITING = 16
#: cuzk's ERROR line for a task that panicked ends so (`... task panicked`, `error=task panicked`).
TASK_PANICKED = "task panicked"

#: sppark 0.1.14 (cuzk's Cargo.lock) is the version lotus#13634 ties to a GPU memory leak.
_OOM_NOTE = ("; cuzk pins sppark 0.1.14, which filecoin-project/lotus#13634 ties to a GPU memory "
             "leak (fixed in sppark v0.1.15): watch the process's GPU memory over days")


def error_event(ev: LogEvent) -> ProverEvent | None:
    if not is_failure(ev):
        return None
    words, what = failure_words(ev), failure_what(ev)
    if "out of memory" in words and ev.kind == "panic":
        words += _OOM_NOTE
        what += _OOM_NOTE
    return ProverEvent(t_wall_s=ev.t_wall_s, kind="error", level="error",
                       message=words, job_id=ev.job_id, gpu=ev.gpu, partition=ev.partition,
                       what=what)


def _half(ev: LogEvent) -> str | None:
    """Which half of a panic incident `ev` is: "panic" (Rust's message), "line" (cuzk's `...
    task panicked` ERROR line), or None."""
    if ev.kind == PANIC_KIND:
        return "panic"
    if ev.kind == "tracing" and ev.level == "ERROR" and ev.name.endswith(TASK_PANICKED):
        return "line"
    return None


def _one(panic: ProverEvent, line: ProverEvent) -> ProverEvent:
    """The incident as one event: cuzk's line (its job, GPU and time), then the panic's text."""
    return ProverEvent(t_wall_s=line.t_wall_s, kind="error", level="error",
                       message=f"{line.message}; its panic: {panic.message}",
                       job_id=line.job_id, gpu=line.gpu, partition=line.partition,
                       what=f"{line.what or line.message}; its panic: "
                            f"{panic.what or panic.message}")


#: A half waiting for its other half: which ("panic", "line"), its event, when its line arrived
#: on the live reader's clock (None: not read live).
_Waiting = tuple[str, ProverEvent, int | None]


def _may_pair(waiting: _Waiting, panic_read_s: float | None) -> bool:
    """Whether the panic the live reader is still reading (of time `panic_read_s`; None: none)
    may be `waiting`'s other half (as `Incidents.feed` would pair them): the one rule that
    keeps a half from being said alone, by either wait, while its other half is still read."""
    half, err, _ = waiting
    return (half == "line" and panic_read_s is not None
            and abs(err.t_wall_s - panic_read_s) <= PANIC_PAIR_S)


class Incidents:
    """The error events of one daemon's log, a panic and its `... task panicked` line said as
    one (see the module docstring). Who calls it: `gapwatch.cuzk.watch` (`feed` with each error
    event, `due` as data time moves, `finish` at the end)."""

    def __init__(self) -> None:
        #: Halves waiting for their other half: (which, its event, when its line arrived on the
        #: live reader's clock: `LogEvent.t_arrival_mono_ns`), oldest first.
        self._waiting: deque[_Waiting] = deque()
        #: The time of the panic the live reader said at its latest tick it was still reading
        #: (`heard_by`), for the data-time wait (`due`), whose lines bring no word of it; None:
        #: none, or that panic has come since (`feed`: the reader reads one at a time).
        self._reader_said_s: float | None = None

    def feed(self, ev: LogEvent, err: ProverEvent) -> list[ProverEvent]:
        """`err`, the error event of `ev`: the events said now (none while a half waits)."""
        half = _half(ev)
        if half is None:
            return [err]
        if half == "panic":
            # The panic the reader was reading at its last tick has been handed on (this one,
            # or one before it): no line waits for it any more.
            self._reader_said_s = None
        for i, (other, held, _) in enumerate(self._waiting):
            if other != half and abs(held.t_wall_s - err.t_wall_s) <= PANIC_PAIR_S:
                del self._waiting[i]
                return [_one(held, err) if half == "line" else _one(err, held)]
        self._waiting.append((half, err, ev.t_arrival_mono_ns))
        if len(self._waiting) > MAX_WAITING:
            return [self._waiting.popleft()[1]]
        return []

    def waits(self) -> bool:
        """Whether a half waits for its other (`heard_by` may say it), or the reader's word of
        a panic being read is kept (its next tick clears it): read without the feeder's lock
        (`Session.on_reader_clock`), each a whole read."""
        return bool(self._waiting) or self._reader_said_s is not None

    def due(self, now_s: float) -> list[ProverEvent]:
        """The halves whose other half did not come within `PANIC_PAIR_S` of data time `now_s`
        and may not be the panic the reader said it was still reading: said alone."""
        if not self._waiting:
            return []  # every later log line asks: the usual answer, with nothing built
        return self._alone(lambda w: now_s - w[1].t_wall_s > PANIC_PAIR_S,
                           self._reader_said_s)

    def heard_by(self, now_mono_ns: int, panic_read_s: float | None) -> list[ProverEvent]:
        """The live reader's clock reads `now_mono_ns` (the clock of the lines' arrival, not
        of their stamps: cuzk's clock and the reader's are never compared), a panic of time
        `panic_read_s` still being read (None: none): the halves that arrived more than
        `PANIC_PAIR_S` before it, their other half not come and not that panic, said alone.
        A half with no arrival (a recording's, a file's) waits for data time only."""
        self._reader_said_s = panic_read_s
        wait_ns = PANIC_PAIR_S * 1e9
        return self._alone(lambda w: w[2] is not None and now_mono_ns - w[2] > wait_ns,
                           panic_read_s)

    def _alone(self, overdue: Callable[[_Waiting], bool],
               panic_read_s: float | None) -> list[ProverEvent]:
        """Every waiting half `overdue` (by either wait's clock) that the panic of time
        `panic_read_s` still being read may not pair with, taken out and said alone, oldest
        first; the rest keep waiting. The one loop of both waits: `due` stopped at the first
        half still held, keeping the younger overdue ones behind it."""
        if not self._waiting:
            return []
        out: list[ProverEvent] = []
        kept: deque[_Waiting] = deque()
        for waiting in self._waiting:
            if overdue(waiting) and not _may_pair(waiting, panic_read_s):
                out.append(waiting[1])
            else:
                kept.append(waiting)
        if out:
            self._waiting = kept
        return out

    def finish(self) -> list[ProverEvent]:
        """End of data: every half still waiting, said alone."""
        out = [err for _, err, _ in self._waiting]
        self._waiting.clear()
        return out
