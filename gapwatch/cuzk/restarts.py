"""cuzk restarts: when the daemon started again, how gapwatch knew, and what it cost the GPU.

Who calls it: `gapwatch.cuzk.watch.CuzkWatch` (every log event, `/status` snapshot and process
reading, live and offline). Pure: "now" is the data's own time.

Three signs, any one enough (cuzk-upstream-paths.md 4.4): the start lines `cuzk-daemon
starting` (cuzk-daemon/src/main.rs:63) and `starting cuzk engine` (engine.rs:1244, the TIMELINE
epoch); `/status` `uptime_secs` going back (status.rs: it counts from the tracker's creation);
a new pid of the same process name on a GPU (NVML's process list, as `ProcessMemory` readings).
Signs within `SAME_RESTART_S` of one another are one restart, but for the same sign again at
another time (a second start line is a second run: a crash loop can be faster). Only SIGINT is
handled (`received SIGINT, shutting down`, main.rs:237, 264); systemd's default SIGTERM kills
cuzk without a line, and the restart says which it was.

What a restart costs (code): the GPU idles from its last work of the old run (its last TIMELINE
`GPU_END`) to its first `GPU_START` of the new one (where cuzk writes neither, with
`CUZK_DISABLE_SPLIT_PROVE=1` or the pipeline off, a job's result line in its worker's span ends
its GPU work and its pickup, or `processing job (monolithic)`, begins it:
`RestartWatch._sync_gpu_done`, `_monolithic`). Of that stretch, the restart's is what it took:
from that last work to the new run ready, and from the new run's first job to its first GPU
work. Ready is the latest of its start lines and the lines it writes as it comes up, read before
its first job: `pipeline GPU worker started` / `monolithic GPU worker started` (engine.rs:2958,
3378), `cuzk engine started` (engine.rs:3511, the workers spawned) and `cuzk-daemon ready,
serving on ...` (main.rs:231, 258: gRPC served, Curio's requests taken from then). A job's
arrival is `job enqueued` (scheduler.rs:67-73, every request passes there, engine.rs:3519-3554),
read before any work of the run (an SRS load, the pool pinning, a TIMELINE line: a job had
arrived by then, its line not read). Between ready and that arrival cuzk had nothing to do: the
wait is no work (Curio sent nothing), said among the cost's parts and not counted as the
restart's (`ProverEvent.waited_s`, `cost_s`); where the arrival was not read, the cost says that
any such wait is in it. So is the old run's end: it was up until its last line (its SIGINT line,
a line of work), not down from its last GPU work; where nothing was in flight from that work on
(no synthesis, GPU queue item or GPU work begun and not ended, no request enqueued and not
begun, no line of work after it: `RestartWatch._idle_at_end`) it had no work until then, not the
restart's (an idle cuzk stopped after ten minutes was "down 600.0 s", the restart's cost, its
gap's cause). A step that failed ended there: cuzk writes its ERROR line (`partition synthesis
failed`, `GPU prove start failed`, ...: `_FAILED`) in place of its SYNTH_END or GPU_END, and a
picked-up partition of a failed job gets `skipping GPU prove for failed partitioned job` in
place of its GPU_START (a failed synthesis was counted in flight to the end of its run: an idle
hour after it was the restart's). A failure ends only its own step: a request enqueued and not
yet begun (held in the batch collector, waiting on the budget) stays (`_Waiting`; before, a
failure or a skip line read after it made a daemon stopped with a request queued "no work before
it stopped"). A failure is no GPU work: the stretch still starts at the last GPU_END, and runs
that only failed are a crash loop. The parts of the stretch are the old run up before it stopped
(with work in flight, or with none: not counted), the daemon down (its last line, never before
its last GPU_END, to the start line), a crash loop (the restarts in a row before this one, each
run gone before any GPU work: `Streak`), startup (start line to ready), the wait for its first
job, the SRS loaded again (`loading SRS from disk` .. `SRS loaded successfully`), the pinned
pool pinned again (its `allocated new buffer` lines before that first GPU_START) and the first
wave's synthesis (first SYNTH_START to first GPU_QUEUE: partitions started before any capacity
hint existed, unpinned, pipeline.rs:176-230). Said as one stretch, with its length, its cost and
parts, when the first GPU_START of the new run arrives.

A GPU gap that spans a restart is the restart's (`RestartWatch.during`, asked by
`gapwatch.cuzk.pipeline.PipelineFacts.log_view` for each gap): from the restart to its new run's
first GPU work the GPU waits on cuzk starting again, so the SRS reload, the pool pinned again
and the first wave in that stretch are the restart's cost, not causes of their own; but where
most of the gap is no work (the new run's wait for its first job, the old run idle before it
stopped), the gap's cause is `no_work`, naming
the restart and its cost beside it (`Spanned.cause`). The latest `MAX_KEPT` restarts are kept
for it, each with how the old run ended, its place among all restarts read and its streak, and,
once known, its cost: a gap counts every restart in it, kept or not (`Spanned.count`). Where
the new run's first GPU work is read in no log (a restart only `/status` or a new pid said), the
restart holds the GPU until the GPU's next busy reading: a gap whose idle stretch (from the
GPU's last busy reading: holes in the data cut one stretch into several gaps) holds the restart
is its (`during`'s `idle_since_s`). And a process of any name replaced on a GPU by a new pid of
its name (`gapwatch.core.gpu_pids.Replaced`: /proc saw the old one gone) is a restart for the
gaps whose idle stretch holds it (`PipelineFacts.log_view`), said in what /proc showed
(`REPLACED_LEAD`, `replaced_evidence`) and counted as no restart of cuzk: only cuzk's name
makes a new pid one (`feed_process`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from gapwatch.core import fmt
from gapwatch.core.bounds import MAX_PROVERS, keep_latest
from gapwatch.core.evidence_types import CauseSaidBy
from gapwatch.core.gpu_pids import Replaced
from gapwatch.core.models import (
    LogEvent,
    ProcessMemory,
    ProverEvent,
    ProverStatus,
    StretchPart,
)
from gapwatch.cuzk.log_lines import (
    ANCHOR_MESSAGE,
    DAEMON_STARTING_MESSAGE,
    GPU_FAILED_MESSAGES,
    GPU_WORKER_SPAN,
    INPUT_PARSE_FAILED_KINDS,
    JOB_ENQUEUED_MESSAGE,
    MONOLITHIC_COMPLETED_MESSAGE,
    MONOLITHIC_JOB_MESSAGES,
    MONOLITHIC_PROCESSING_MESSAGE,
    MONOLITHIC_SPAN,
    MONOLITHIC_WORKER_STARTED_MESSAGE,
    POOL_ALLOCATED_MESSAGE,
    PROCESSING_BATCH_MESSAGE,
    SKIPPED_GPU_PROVE_MESSAGE,
    SRS_LOADED_MESSAGE,
    SRS_LOADING_MESSAGE,
    SYNC_GPU_DONE_MESSAGES,
    SYNTH_FAILED_MESSAGES,
    WORKER_STARTED_MESSAGE,
)

SIGINT = "received SIGINT, shutting down"
#: `Engine::start` returned, its workers spawned (engine.rs:3511-3515).
ENGINE_STARTED = "cuzk engine started"
#: `cuzk-daemon ready, serving on <addr>` (main.rs:231, 258): gRPC served from now on.
DAEMON_READY = "cuzk-daemon ready"
#: The lines a new run writes as it comes up (with its start lines): the latest read before its
#: first job is when it was ready (`_ready_line`).
READY_LINES = (DAEMON_STARTING_MESSAGE, ANCHOR_MESSAGE, WORKER_STARTED_MESSAGE,
               MONOLITHIC_WORKER_STARTED_MESSAGE, ENGINE_STARTED, DAEMON_READY)
#: The restart cost's parts, by name.
DOWN = "down"
CRASH_LOOP = "crash loop"
STARTUP = "startup"
#: The new run ready, its first job not sent yet: in the stretch, not the restart's cost.
WAITED_FOR_JOB = "waited for its first job"
#: The old run up after its last GPU work, to its last line: with nothing in flight (no work,
#: not the restart's cost), or with work in flight (its work lost with it: the restart's).
IDLE_BEFORE = "no work before it stopped"
UP_BEFORE = "up before it stopped"
SRS_RELOADED = "SRS reloaded"
POOL_AGAIN = "pool pinned again"
FIRST_WAVE = "first wave synthesis"
#: The gap causes a restart's stretch gives (`Spanned.cause`: `gapwatch.cuzk.causes` names).
RESTART_CAUSE = "restart"
NO_WORK_CAUSE = "no_work"
#: Signs of a restart this close together are one restart (a daemon's start lines, its first
#: `/status` answer and its pid on the GPU come within seconds; a restart loop is ~10 s apart,
#: systemd's RestartSec in upstream's unit, cuzk-proving-daemon.md:122-140).
SAME_RESTART_S = 8.0
#: The same sign this close in time is one line read twice, not a second run.
SAME_LINE_S = 0.001
#: `/status` uptime going back by less than this is jitter of the poll, not a restart.
UPTIME_SLACK_S = 2.0
#: Process names followed on the GPUs (upstream installs `cuzk`; from target/ it is
#: `cuzk-daemon`), and how many pids are remembered per GPU.
PROCESS_NAMES = ("cuzk", "cuzk-daemon")
MAX_PIDS = 64
#: Signs of one restart remembered (a start has a few: two start lines, a /status, a pid a
#: GPU). A storm of new pids within its seconds were each kept and looked through for the
#: next: 40,000 took 24 s. Past it, a sign is one more of the same restart, not remembered.
MAX_SIGNS = 16
#: SRS loads of one run said as parts of its cost (cuzk loads a few, one a circuit); more
#: are counted and said as a number (20,000 made a cost of 20,000 parts, a message of half a
#: megabyte; a lone "SRS loaded" line looked through all of them).
MAX_SRS = 16
#: Restarts kept for the gaps that span them (`RestartWatch.during`): the latest; a crash
#: loop's oldest go (a gap is matched against them newest first).
MAX_KEPT = 64
#: What a restart starts again: said with each restart, and in the advice for the gaps that
#: span one (`gapwatch.cuzk.advice`).
STARTS_AGAIN = ("its pipeline state starts again: empty pinned pool, SRS loaded on demand, a "
                "first wave synthesised unpinned")
#: How the old run ended, as the restart says it: it wrote `SIGINT`'s line, or nothing.
AFTER_SIGINT = "after 'received SIGINT, shutting down'"
KILLED = ("with no shutdown line before it (killed or crashed: cuzk handles SIGINT alone, so "
          "systemd's default SIGTERM, an OOM kill or a crash ends it without a line, "
          "main.rs:233-266)")
#: Where no line of the old run was read (a restart seen by `/status` uptime or a new pid
#: alone), or none at INFO, the level of cuzk's shutdown line (main.rs:237: a log kept at
#: `warn` never has it), a missing shutdown line says nothing: how the run ended is not known.
NOT_READ = "(how the previous run ended is not known: none of its log lines were read)"
NO_INFO = ("(how the previous run ended is not known: its log kept no INFO lines, the level "
           "of cuzk's shutdown line, main.rs:237)")


#: A restart /proc alone showed (`gapwatch.core.gpu_pids.Replaced`: a process on the GPU gone,
#: a new pid of its name after it), as a gap's hint leads with it in place of the restart
#: cause's own words (`gapwatch.cuzk.prover.PROVER_CAUSE_WORDS`): the process may be of any
#: name (the H200 stand-in is `python3`), so it is not said to be cuzk's.
REPLACED_LEAD = ("the GPU's process restarted, not a stall: the GPU waited from the old "
                 "process's last work to the new one's first")


def replaced_evidence(replaced: Replaced) -> str:
    """A replaced process as the evidence of the gaps whose idle stretch holds it."""
    return (f"the GPU's processes (/proc and NVML's list): {replaced.words()}: the process "
            "restarted (counted as a restart of cuzk only under cuzk's name)")


def is_cuzk_process(name: str) -> bool:
    """Whether a process NVML lists on a GPU is cuzk by its name (`PROCESS_NAMES`): its new pid
    is a restart sign (`RestartWatch.feed_process`), and its readings are something that could
    count restarts (`gapwatch.cuzk.watch.CuzkWatch.unheard`)."""
    return name.rsplit("/", 1)[-1] in PROCESS_NAMES


@dataclass(frozen=True, slots=True)
class Ended:
    """How the run before a restart ended, in every form it is said: its token
    (`ProverEvent.cause`, `--on-event`'s GAPWATCH_CAUSE: `sigint`, `killed`, `unknown`), the
    token's words (GAPWATCH_CAUSE_WORDS, docs/fleet.md), the restart's words (its message)
    and a gap hint's few ("" where it is not known: no line is no news)."""

    cause: str
    cause_words: str
    words: str
    hint: str


_UNKNOWN_WORDS = "how the run before it ended is not known from the log read"
#: Every way a run is read to have ended (`how_it_ended`), the one home of their words: the
#: token and its words were once decided by an if-chain of their own beside this one's.
ENDINGS: dict[str, Ended] = {
    "sigint": Ended("sigint", "stopped after SIGINT ('received SIGINT, shutting down')",
                    AFTER_SIGINT, "after SIGINT"),
    "killed": Ended("killed", "killed or crashed: no shutdown line before it", KILLED,
                    "killed or crashed, no shutdown line"),
    "not_read": Ended("unknown", _UNKNOWN_WORDS, NOT_READ, ""),
    "no_info": Ended("unknown", _UNKNOWN_WORDS, NO_INFO, ""),
}
#: A restart's cause token -> its words (`--on-event`, `engine.events.event_of`).
RESTART_CAUSES: dict[str, str] = {e.cause: e.cause_words for e in ENDINGS.values()}


def how_it_ended(sigint: bool, last_line_s: float | None, info_seen: bool) -> Ended:
    """How the previous run ended: after SIGINT's line, killed (its INFO lines read, the
    shutdown line not among them), or not known (none of its lines read, or none at INFO,
    the level of cuzk's shutdown line: a missing shutdown line then says nothing)."""
    if sigint:
        return ENDINGS["sigint"]
    if last_line_s is None:
        return ENDINGS["not_read"]
    if not info_seen:
        return ENDINGS["no_info"]
    return ENDINGS["killed"]


#: A restart's first sign, when it is one of its start lines (the log said it).
START_LINE_SIGN = "its start line"
#: ... when it is a new cuzk pid on a GPU (NVML's processes said it).
NEW_PID_SIGN = "a new "
#: The shortest part of a restart's stretch said as such (its words give tenths of a second).
_SAID_S = 0.05
#: The TIMELINE lines that begin or end work in flight: (which count, +1 or -1) of syntheses,
#: items queued for the GPU and GPU work (`RestartWatch._idle_at_end`).
_FLIGHT: dict[str, tuple[int, int]] = {
    "SYNTH_START": (0, 1), "SYNTH_END": (0, -1), "GPU_QUEUE": (1, 1), "GPU_PICKUP": (1, -1),
    "GPU_START": (2, 1), "GPU_END": (2, -1)}
#: cuzk's ERROR lines written in place of a step's end line when it fails (its SYNTH_END or
#: GPU_END never comes): which count of `_FLIGHT` they end one of (`RestartWatch._failed`).
#: A failure is no GPU work done: it moves no "run before" mark and ends no crash loop.
_FAILED: dict[str, int] = {**dict.fromkeys(SYNTH_FAILED_MESSAGES, 0),
                           **dict.fromkeys(GPU_FAILED_MESSAGES, 2)}
#: A job's GPU work done, said inside its GPU worker's span: only the synchronous prove
#: (`CUZK_DISABLE_SPLIT_PROVE=1`, engine.rs:3078-3118) writes these lines there, and it writes
#: no GPU_START and no GPU_END (`RestartWatch._sync_gpu_done`).
_SYNC_GPU_DONE = frozenset(SYNC_GPU_DONE_MESSAGES)
#: A monolithic worker's lines of its job (`[pipeline] enabled = false`, engine.rs:3394-3475:
#: no TIMELINE line at all), in its span `monolithic_worker{worker_id gpu job_id proof_kind}`
#: (3394): `processing job (monolithic)` (3397) as it begins the one call that synthesises and
#: proves the job (3422-3440), `proof completed successfully (monolithic)` (3455-3462) or its
#: failure, `proof failed` / `proof task panicked` (3471, 3475, ERROR) when it ends
#: (`RestartWatch._monolithic`).
_MONOLITHIC_LINES = frozenset(MONOLITHIC_JOB_MESSAGES)
#: Workers whose latest pickup with no GPU_START yet is remembered (`RestartWatch._picked`).
MAX_PICKED = 1024
#: Requests enqueued and not yet begun that are remembered (`RestartWatch._waiting`).
MAX_WAITING = 1024
#: Proof kinds whose latest batch size dispatched is remembered (`_Waiting.batch_sent`).
MAX_BATCH_KINDS = 16
#: Jobs whose GPU_END was read that are remembered (`_Waiting.ended_jobs`): a `job enqueued`
#: read after its job's GPU work (stdout read behind stderr) adds no request waiting.
MAX_ENDED = 256
#: cuzk's `Priority` as its log writes it (types.rs:71-76): the scheduler serves higher first.
_PRIORITY_RANK = {"Low": 1, "Normal": 2, "High": 3, "Critical": 4}


def _count(n: int, one: str, many: str) -> str:
    """`2,000 restarts`, `1 restart`."""
    return f"{n:,} {one if n == 1 else many}"


def _overlap_s(a_s: float, b_s: float, lo_s: float, hi_s: float) -> float:
    """How long [a_s, b_s] and [lo_s, hi_s] share (0.0 when they do not meet)."""
    return max(0.0, min(b_s, hi_s) - max(a_s, lo_s))


@dataclass(frozen=True, slots=True)
class Streak:
    """Restarts in a row with no GPU work read between them, from the first: a crash loop, each
    run gone before it proved anything. Shared by its restarts (a few numbers each, however
    long the loop), so a gap can count every restart in it once the oldest are no longer kept
    (`RestartWatch.during`)."""

    #: The first's number among the restarts read (1: the first restart read) and its time.
    seq: int
    t_s: float
    #: The end of the stretch of the restart before it (`Restart.until_s`; None: none before
    #: it): whether that one, no longer kept, may be in a gap too.
    before_until_s: float | None
    #: The run before the first: its last GPU work and its last line (None: not read), and
    #: whether it had nothing in flight from that work on (`RestartWatch._idle_at_end`): then
    #: cuzk was up with no work until that line, not down (`Restart.idle_before`).
    up_from_s: float | None = None
    up_to_s: float | None = None
    idle: bool = False


@dataclass(slots=True)
class Restart:
    """One restart as the gaps that span it cite it (`RestartWatch.during`)."""

    t_s: float
    #: The restart event's words: how the old run ended, its last line, what saw the restart.
    words: str
    #: How the old run ended, in a hint's few words ("" where it is not known: `how_it_ended`).
    ended: str
    #: Its signs (shared with its run while that is followed: signs seen later join).
    signs: list[str]
    #: Its number among the restarts read (1: the first), and the restarts in a row it ends.
    seq: int
    streak: Streak
    #: Its new run ready (the latest of its start and coming-up lines read before its first
    #: job, `READY_LINES`) and its first job's arrival (`job enqueued`); None: not read.
    ready_s: float | None = None
    first_job_s: float | None = None
    #: The new run's first GPU work (None: not read, yet or at all), and the restart cost's
    #: event (its words; its length None when not known).
    first_gpu_s: float | None = None
    cost: ProverEvent | None = None

    @property
    def in_log(self) -> bool:
        """A start line said it (else only `/status` or a new pid on the GPU did)."""
        return any(s.startswith(START_LINE_SIGN) for s in self.signs)

    @property
    def said_by(self) -> CauseSaidBy:
        """What said it, as a gap's hint names its source: "log" (a start line), "processes"
        (only a new cuzk pid on a GPU: NVML's list) or "status" (`/status` uptime)."""
        if self.in_log:
            return "log"
        if all(s.startswith(NEW_PID_SIGN) for s in self.signs):
            return "processes"
        return "status"

    @property
    def in_a_row(self) -> int:
        """The restarts in a row it ends, itself included (1: no crash loop)."""
        return self.seq - self.streak.seq + 1

    def until_s(self) -> float:
        """The end of the stretch it holds the GPU for: its new run's first GPU work, else
        the restart itself (a gap then is its only when it spans the restart)."""
        first = self.first_gpu_s
        return self.t_s if first is None else max(self.t_s, first)

    def wait(self) -> tuple[float, float] | None:
        """(ready, first job) where its new run, ready, waited for its first job: no work, not
        the restart's. None where either was not read, or the job came as it was ready."""
        ready, job = self.ready_s, self.first_job_s
        if ready is None or job is None or job <= ready:
            return None
        first = self.first_gpu_s
        if first is not None and job > first:
            return None  # lines out of order: no wait is said of them
        return ready, job

    def idle_before(self) -> tuple[float, float] | None:
        """(last GPU work, last line) of the run before its crash loop or it, where that run
        had nothing in flight after that work and wrote lines later: up with no work (an
        operator stopping an idle cuzk), not the restart's. None otherwise."""
        streak = self.streak
        a, b = streak.up_from_s, streak.up_to_s
        if not streak.idle or a is None or b is None or b <= a or b > streak.t_s:
            return None
        return a, b

    def cost_words(self) -> str:
        """`the restart cost the GPU 12.1 s, its SRS reload 4.0 s of it` ("" where its cost
        is not known): its cost less its new run's wait for a first job (`ProverEvent.cost_s`);
        a crash loop's ("the restarts") where it ends one."""
        cost = self.cost
        own = cost.cost_s if cost is not None else None
        if cost is None or own is None:
            return ""
        srs_s = sum(p.end_s - p.start_s for p in cost.parts if p.name == SRS_RELOADED)
        srs = f", its SRS reload {srs_s:.1f} s of it" if srs_s else ""
        which = "the restarts" if self.in_a_row > 1 else "the restart"
        return f"{which} cost the GPU {own:.1f} s{srs}"

    def evidence(self) -> list[str]:
        """The facts a gap that spans it cites: the restart, then its cost (or why not)."""
        cost = self.cost
        if cost is not None:
            return [self.words, cost.message]
        return [self.words, "the new run's first GPU work not read (yet): the restart's cost is "
                            "read from the log, from the old run's last GPU work to it"]


@dataclass(frozen=True, slots=True)
class Spanned:
    """The restarts a gap over [start_s, end_s] spans (`RestartWatch.during`): those kept,
    newest first, and how many there were in all (`MAX_KEPT` keeps only the latest)."""

    kept: list[Restart]
    start_s: float
    end_s: float
    #: Every restart in the gap, kept or not; `exact` False: at least that many (older ones,
    #: no longer kept, may be in it too, how many is not known).
    count: int
    exact: bool

    @property
    def latest(self) -> Restart:
        return self.kept[0]

    @property
    def said_by(self) -> CauseSaidBy:
        """What said the latest restart (`Restart.said_by`)."""
        return self.latest.said_by

    def waited_s(self) -> float:
        """Of the gap, the time cuzk was up with no work around the latest restart: its new
        run, ready, waiting for its first job, and the run before it idle before it stopped."""
        return self._new_wait_s() + self._idle_before_s()

    def _within_s(self, span: tuple[float, float] | None) -> float:
        """How much of `span` (None: none) lies in the gap."""
        return 0.0 if span is None else _overlap_s(*span, self.start_s, self.end_s)

    def _new_wait_s(self) -> float:
        return self._within_s(self.latest.wait())

    def _idle_before_s(self) -> float:
        return self._within_s(self.latest.idle_before())

    def cause(self) -> str:
        """`no_work` where cuzk up with no work is most of the gap (`waited_s`: the new run
        ready and Curio sending nothing, the old run idle before it stopped), else `restart`:
        the rest of it the restart took."""
        waited = self.waited_s()
        return NO_WORK_CAUSE if waited > (self.end_s - self.start_s) - waited else RESTART_CAUSE

    def count_words(self) -> str:
        """`2,000 restarts of cuzk during the gap, the latest at 17:09:24.750 (the latest 64
        kept)` ("" for one)."""
        n, kept = self.count, len(self.kept)
        if n <= 1 and self.exact:
            return ""
        least = "" if self.exact else "at least "
        held = (f" (the latest {kept:,} kept)" if n > kept else
                " (older ones, not kept, may be in it too)" if not self.exact else "")
        return (f"{least}{_count(n, 'restart', 'restarts')} of cuzk during the gap, the latest "
                f"at {fmt.clock(self.latest.t_s, millis=True)}{held}")

    def wait_words(self) -> str:
        """The time cuzk was up with no work, as the gap's evidence says it ("" for none): the
        run before the restart idle before it stopped, the new run's wait for its first job."""
        latest = self.latest
        idle, wait = latest.idle_before(), latest.wait()
        idle_s, new_s = self._within_s(idle), self._within_s(wait)
        said = []
        if idle is not None and idle_s:
            said.append(
                f"cuzk, up with nothing in flight after its last GPU work at "
                f"{fmt.clock(idle[0], millis=True)}, wrote its last line at "
                f"{fmt.clock(idle[1], millis=True)} before it stopped: {idle_s:.1f} s of the "
                "gap no work, not the restart's")
        if wait is not None and new_s:
            said.append(
                f"cuzk, started again at {fmt.clock(latest.t_s, millis=True)}, was ready at "
                f"{fmt.clock(wait[0], millis=True)} and waited {new_s:.1f} s of the gap for "
                f"its first job ('job enqueued' at {fmt.clock(wait[1], millis=True)}, "
                "scheduler.rs:67): no work, Curio sent nothing")
        if not said:
            return ""
        rest = (self.end_s - self.start_s) - new_s - idle_s
        return "; ".join(said) + f"; the rest of the gap, {max(0.0, rest):.1f} s, the restart took"

    def evidence(self) -> list[str]:
        """The facts: the time cuzk was up with no work first where it is the cause
        (`wait_words`), the count where more than one restart, then the latest restart's words
        and cost."""
        head = [self.wait_words()] if self.cause() == NO_WORK_CAUSE else []
        return [x for x in (*head, self.count_words()) if x] + self.latest.evidence()

    def detail(self) -> str:
        """The one figure a hint adds to the cause's words: how the old run ended, how many
        restarts, what they cost (the SRS reload named as part of it) and the wait for work."""
        latest = self.latest
        many = self.count > 1 or not self.exact
        restarts = (f"{'at least ' if not self.exact else ''}"
                    f"{_count(self.count, 'restart', 'restarts')} during the gap" if many else "")
        cost = latest.cost_words()
        new_s, idle_s = self._new_wait_s(), self._idle_before_s()
        idle = (f"cuzk had no work for {idle_s:.1f} s before it stopped" if idle_s else "")
        if self.cause() == NO_WORK_CAUSE:
            new = (f"cuzk waited {new_s:.1f} s for its first job after it restarted, Curio "
                   "sending nothing" if new_s else "")
            return "; ".join(x for x in (idle, new, latest.ended, restarts, cost) if x)
        after = f"then cuzk waited {new_s:.1f} s for its first job, not counted" if new_s else ""
        before = f"{idle}, not counted" if idle else ""
        return "; ".join(x for x in (before, latest.ended, restarts, cost, after) if x)


@dataclass(slots=True)
class _Run:
    """The run that began at a restart, until its first GPU work."""

    t_s: float
    #: Its restart as the gaps cite it (`RestartWatch.kept`): its marks and cost are written
    #: there.
    kept: Restart
    #: The previous run's last GPU_END and last line (None: none read).
    last_gpu_end_s: float | None
    last_line_s: float | None
    sigint: bool
    #: An INFO line of the previous run was read (its shutdown line's level).
    info_seen: bool
    #: Its first line of work (an SRS load, the pool pinning, any TIMELINE line): a job had
    #: arrived by then, so a `job enqueued` after it is not its first job's (that one's line
    #: was not read: a log filtered above INFO for the scheduler, a simulator's).
    work_s: float | None = None
    srs: list[tuple[float, float | None]] = field(default_factory=list)
    #: SRS loads past `MAX_SRS`, counted only.
    srs_more: int = 0
    pool_first_s: float | None = None
    pool_last_s: float | None = None
    first_synth_s: float | None = None
    first_queue_s: float | None = None
    first_wave: int = 0
    first_synth_end_s: float | None = None

    @property
    def signs(self) -> list[str]:
        return self.kept.signs


#: Tracing lines of work begun (a job's arrival, an SRS load for one, the pool pinning for
#: one): after a run's last GPU work, it had work in flight (`RestartWatch._idle_at_end`).
_WORK_LINES = (SRS_LOADING_MESSAGE, POOL_ALLOCATED_MESSAGE)


def _ready_line(name: str) -> bool:
    """A line a new run writes as it comes up (`READY_LINES`; the ready line names its
    address after its words)."""
    return name.startswith(READY_LINES)


class _Waiting:
    """Requests whose `job enqueued` was read and no line of their work since, the latest
    `MAX_WAITING` (`RestartWatch._waiting`): a few dict operations a line.

    A request leaves by a line naming its job, or by cuzk's order (scheduler.rs:18-45: one
    queue, higher priority first, FIFO within a priority; each kind's batch collector keeps
    that order): when a request of its kind enqueued after it, of no higher priority, ends
    GPU work (`ended`), it had been dequeued before that one, so it began or failed, maybe on
    a line naming no job (`Phase 7: C1 parse/SRS load failed`, engine.rs:2217; SnapDeals
    2371). And a `job enqueued` read after its job's work but written before it (stdout and
    stderr read as two files) adds none; one written after its job's work began or ended is a
    retry under the same id (Curio's ids are per sector: `porep-%d-%d`, cuzk_funcs.go:67), a
    request again."""

    __slots__ = ("jobs", "ended_jobs", "_of_kind", "_batch_size", "_begun", "_seq")

    def __init__(self) -> None:
        #: Job id -> its proof kind, in the order read (a plain dict: `RestartWatch.feed_log`
        #: tests it on every line); kind -> its jobs -> (its enqueue's number, its priority's
        #: rank).
        self.jobs: dict[str, str] = {}
        self._of_kind: dict[str, dict[str, tuple[int, int]]] = {}
        #: Kind -> the size of its latest batch dispatched and not yet begun.
        self._batch_size: dict[str, int] = {}
        #: Requests that left by a line of their own and have not yet ended GPU work: job id
        #: -> (kind, enqueue number, rank, when that line was), the latest `MAX_WAITING`.
        self._begun: dict[str, tuple[str, int, int, float]] = {}
        #: The latest `MAX_ENDED` jobs read ending GPU work, and when (tested inline on each
        #: GPU_END).
        self.ended_jobs: dict[str, float] = {}
        self._seq = 0

    def clear(self) -> None:
        self.jobs.clear()
        self._of_kind.clear()
        self._batch_size.clear()
        self._begun.clear()
        self.ended_jobs.clear()

    def enqueued(self, job_id: str, kind: str, priority: str, t_s: float) -> None:
        done_s = self.ended_jobs.get(job_id)
        if done_s is not None:
            if t_s <= done_s:
                return  # written before its work, read after it: not waiting
            del self.ended_jobs[job_id]  # a retry under its id, after its first try
        begun = self._begun.get(job_id)
        if begun is not None:
            if t_s <= begun[3]:
                return
            del self._begun[job_id]
        self._leave(job_id)  # the same id again: the latest read
        if len(self.jobs) >= MAX_WAITING:
            self._leave(next(iter(self.jobs)))
        self._seq += 1
        self.jobs[job_id] = kind
        self._of_kind.setdefault(kind, {})[job_id] = (self._seq, _PRIORITY_RANK.get(priority, 0))

    def begun(self, job_id: str, t_s: float) -> None:
        """A line of `job_id`'s work read, at `t_s`: no longer waiting (its GPU_END then ends
        the wait of those of its kind before it: `ended`)."""
        kind = self.jobs.get(job_id)
        if kind is None:
            return
        seq, rank = self._leave(job_id)
        keep_latest(self._begun, job_id, (kind, seq, rank, t_s), MAX_WAITING)

    def ended(self, job_id: str, t_s: float) -> None:
        """`job_id` ended GPU work (its GPU_END): the requests of its kind enqueued before it,
        of a priority no lower, were dequeued before it (scheduler.rs: FIFO within a priority):
        not waiting."""
        keep_latest(self.ended_jobs, job_id, t_s, MAX_ENDED)
        first = self._begun.pop(job_id, None)
        if first is None:
            return
        kind, seq, rank, _ = first
        same = self._of_kind.get(kind)
        if not same:
            return
        before = []
        for other, (other_seq, other_rank) in same.items():  # in the order enqueued
            if other_seq > seq:
                break
            if other_rank >= rank:
                before.append(other)
        for other in before:
            self._leave(other)

    def failed_unnamed(self, kind: str) -> None:
        """A request of `kind` failed before any line naming it (`INPUT_PARSE_FAILED_KINDS`):
        of those of its kind still waiting, the one the scheduler serves first (the highest
        priority, then the oldest: `max` keeps the first of equals, in the order enqueued)."""
        same = self._of_kind.get(kind)
        if same:
            self._leave(max(same, key=lambda job: same[job][1]))

    def _leave(self, job_id: str) -> tuple[int, int]:
        """No longer waiting: its enqueue's number and its priority's rank ((0, 0): it was
        not waiting)."""
        kind = self.jobs.pop(job_id, None)
        if kind is None:
            return (0, 0)
        same = self._of_kind[kind]
        mark = same.pop(job_id)
        if not same:
            del self._of_kind[kind]
        return mark

    def batch_sent(self, kind: str, size: int) -> None:
        """`processing batch batch_size proof_kind` (engine.rs:2150): a batch of `kind` taken
        from the collector, its synthesis to begin once the budget allows."""
        keep_latest(self._batch_size, kind, size, MAX_BATCH_KINDS)

    def batch_begun(self, job_id: str, kind: str, t_s: float) -> None:
        """A whole-job SYNTH_START (engine.rs:2663-2665) names its batch's first request only
        (`max_batch_size` above 1): the others of that batch (its `batch_sent` size, where
        read; else none) are the oldest of its kind still waiting, taken with it."""
        self.begun(job_id, t_s)
        more = self._batch_size.pop(kind, 1) - 1
        same = self._of_kind.get(kind)
        while same and more > 0:
            self._leave(next(iter(same)))
            more -= 1


class RestartWatch:
    """Finds restarts; `feed_*` return the restart events and, later, their cost."""

    def __init__(self, *, arrival_timed: bool = True) -> None:
        """`arrival_timed`: False where a line's arrival time means nothing (`gapwatch parse`
        reads a file at once; `log_lines.says_when_written`)."""
        self.arrival_timed = arrival_timed
        self.restarts = 0
        self._seen_run = False
        self._last_gpu_end_s: float | None = None
        self._last_line_s: float | None = None
        self._sigint = False
        #: An INFO line read since the latest start: a missing shutdown line says something.
        self._info_seen = False
        self._run: _Run | None = None
        self._last_restart_s: float | None = None
        #: The signs taken as the latest start or restart, with their times.
        self._signs: dict[str, float] = {}
        self._uptime: dict[str, float] = {}
        #: GPU -> pid -> when it was last read.
        self._pids: dict[int, dict[int, float]] = {}
        #: The latest restarts, oldest first, for the gaps that span them (`during`).
        self.kept: deque[Restart] = deque(maxlen=MAX_KEPT)
        #: The restarts in a row since the last GPU work read (None: GPU work since the latest).
        self._streak: Streak | None = None
        #: The current run's work in flight by its TIMELINE lines (syntheses, items queued for
        #: the GPU, GPU work: each begun less ended or failed, never below 0, a log read from
        #: mid-run), and whether a line of work came after its latest GPU_END or failure that
        #: ended a step (`_idle_at_end`, `_failed`).
        self._flight = [0, 0, 0]
        self._work_after_gpu_end = True
        #: The requests whose `job enqueued` was read and no line of their work since, the
        #: latest `MAX_WAITING`: held in the batch collector or waiting on the budget, no
        #: SYNTH_START yet (`_Waiting`: one also leaves when a later one of its kind ends GPU
        #: work, or at its kind's parse failure). A failure ends the step it failed, not
        #: these: a daemon stopped with one queued was not idle (`_idle_at_end`).
        self._waiting = _Waiting()
        #: Its dicts, emptied and never replaced: tested inline on every TIMELINE line.
        self._waiting_jobs = self._waiting.jobs
        self._ended_jobs = self._waiting.ended_jobs
        #: Worker -> its latest GPU_PICKUP (when) not followed by its GPU_START, a failure or
        #: a skip: with `CUZK_DISABLE_SPLIT_PROVE=1` (no GPU_START) the job it proves in one
        #: call, GPU work in flight until its result line in the worker's span
        #: (`_sync_gpu_done`); with the split prove, popped by its GPU_START a few ms later;
        #: with the pipeline off, its monolithic worker's `processing job (monolithic)`, in
        #: flight until its completion or failure line (`_monolithic`).
        self._picked: dict[int, float] = {}

    # -- signs --------------------------------------------------------------------------------

    def feed_log(self, ev: LogEvent) -> list[ProverEvent]:
        # A line timed when it was read says nothing of when a restart's work was: cuzk's
        # stderr read apart, its TIMELINE lines placed by no start line (`gapwatch.cuzk.
        # engine_runs`), made `parse` say "the restart cost the GPU 17848554.6 s", and gaps of
        # a live `--from-start` were blamed on a restart months before (`says_when_written`,
        # inline: every log event passes here).
        source = ev.time_source
        if source == "backlog" or (source == "arrival" and not self.arrival_timed):
            return []
        kind = ev.kind
        if kind == "timeline":
            # Every log event goes through here (each worker of a split report feeds a day's
            # ~6 M): between a run's first GPU work and the next restart a TIMELINE line only
            # moves the marks below.
            out = self._cost_parts(ev) if self._run is not None else []
            name = ev.name
            step = _FLIGHT.get(name)
            if step is not None:
                n = self._flight[step[0]] + step[1]
                self._flight[step[0]] = n if n > 0 else 0
            self._work_after_gpu_end = name != "GPU_END"
            job = ev.job_id
            # One membership test a line (a request is queued ahead most of the time): None is
            # never a key; a whole-job SYNTH_START may begin a batch whose first request's
            # enqueue was not read.
            if job in self._waiting_jobs or (name == "SYNTH_START" and ev.partition is None
                                             and job is not None and self._waiting_jobs):
                self._waiting_began(ev, job)
            if name == "GPU_END":
                self._last_gpu_end_s = ev.t_wall_s
                self._streak = None  # a run that did GPU work ends a crash loop
                if job is not None and job not in self._ended_jobs:
                    self._waiting.ended(job, ev.t_wall_s)  # once a job, not once a partition
            elif name == "GPU_START":
                self._streak = None
                if ev.worker is not None:
                    self._picked.pop(ev.worker, None)  # the split prove's, in `_flight` now
            elif name == "GPU_PICKUP" and ev.worker is not None:
                keep_latest(self._picked, ev.worker, ev.t_wall_s, MAX_PICKED)
            # Work was done: a start line from now on starts another run. (The lines a start
            # writes before its engine's, config and budget, do not count.)
            self._seen_run = True
            self._last_line_s = ev.t_wall_s
            return out
        if kind != "tracing":
            return []
        out = []
        name = ev.name
        if name in (DAEMON_STARTING_MESSAGE, ANCHOR_MESSAGE):
            out += self._sign(ev.t_wall_s, f"{START_LINE_SIGN} '{name}'")
            self._seen_run = True
        elif name == SIGINT:
            self._sigint = True
        elif name == JOB_ENQUEUED_MESSAGE:
            if ev.job_id is not None:
                req_kind, priority = ev.fields.get("proof_kind"), ev.fields.get("priority")
                self._waiting.enqueued(ev.job_id, req_kind if isinstance(req_kind, str) else "",
                                       priority if isinstance(priority, str) else "",
                                       ev.t_wall_s)
            else:
                self._work_after_gpu_end = True  # a job came, which not said
        elif name == PROCESSING_BATCH_MESSAGE:
            batch_kind, size = ev.fields.get("proof_kind"), ev.fields.get("batch_size")
            if isinstance(batch_kind, str) and isinstance(size, int) and size > 1:
                self._waiting.batch_sent(batch_kind, min(size, MAX_WAITING))
        elif name.startswith(_WORK_LINES):
            self._work_after_gpu_end = True  # work for a job began
        elif name in _FAILED and ev.level == "ERROR":
            self._failed(_FAILED[name], self._unpicked(ev))
        elif name in INPUT_PARSE_FAILED_KINDS and ev.level == "ERROR":
            self._waiting.failed_unnamed(INPUT_PARSE_FAILED_KINDS[name])
        elif name == SKIPPED_GPU_PROVE_MESSAGE:
            # The partition picked up (a line of work) gets no GPU_START: its job had failed.
            # No pickup held: it ends nothing read, so it answers no line of work.
            if self._unpicked(ev):
                self._work_after_gpu_end = False
        elif name in _SYNC_GPU_DONE and ev.fields.get("spans") == GPU_WORKER_SPAN:
            out += self._sync_gpu_done(ev)
        elif name in _MONOLITHIC_LINES and ev.fields.get("spans") == MONOLITHIC_SPAN:
            out += self._monolithic(ev)
        if ev.job_id in self._waiting_jobs and name != JOB_ENQUEUED_MESSAGE:
            # A line of its work (its failure, its pickup).
            self._waiting.begun(ev.job_id, ev.t_wall_s)
        if not self._info_seen and ev.level == "INFO":
            self._info_seen = True
        if self._run is not None:
            out += self._cost_parts(ev)
        self._last_line_s = ev.t_wall_s
        return out

    def _waiting_began(self, ev: LogEvent, job: str) -> None:
        """A TIMELINE line naming `job` while requests wait: a whole-job SYNTH_START begins
        its batch (`_Waiting.batch_begun`), any other line its own request."""
        synth_kind = ev.fields.get("kind")
        if ev.name == "SYNTH_START" and ev.partition is None and isinstance(synth_kind, str):
            self._waiting.batch_begun(job, synth_kind, ev.t_wall_s)
        else:
            self._waiting.begun(job, ev.t_wall_s)

    def feed_status(self, st: ProverStatus) -> list[ProverEvent]:
        up = st.uptime_s
        if up is None:
            return []
        before = self._uptime.get(st.prover)
        keep_latest(self._uptime, st.prover, up, MAX_PROVERS)  # names from a recording: bounded
        if before is None or up >= before - UPTIME_SLACK_S:
            return []
        return self._sign(st.t_wall_s - up, f"{st.prover} /status uptime_secs went back from "
                                            f"{before:.0f} s to {up:.0f} s")

    def feed_process(self, r: ProcessMemory) -> list[ProverEvent]:
        """A reading of a process on a GPU. A new pid of cuzk's name where another was read
        before is a restart, unless one was already seen since that pid was last read (a new
        process shows on the GPU only at its first CUDA work, maybe minutes after its start
        lines)."""
        if not is_cuzk_process(r.name):
            return []
        pids = self._pids.setdefault(r.gpu, {})
        known = r.pid in pids
        last_seen = max(pids.values(), default=None)
        if len(pids) >= MAX_PIDS and not known:
            del pids[next(iter(pids))]
        pids[r.pid] = r.t_wall_s
        if known or last_seen is None:
            return []
        sign = f"{NEW_PID_SIGN}{r.name} pid {r.pid} on GPU {r.gpu}"
        restart = self._last_restart_s
        if restart is not None and restart >= last_seen - SAME_RESTART_S:
            self._note_run_sign(sign)
            return []
        return self._sign(r.t_wall_s, sign)

    # -- a restart ----------------------------------------------------------------------------

    def _sign(self, t_s: float, sign: str) -> list[ProverEvent]:
        last = self._last_restart_s
        # Signs close together are one restart, unless the same sign comes again later: a
        # daemon writes each start line once, so a second is another run (a crash loop faster
        # than `SAME_RESTART_S`: 360,000 runs of a storm were said as 449 restarts). The same
        # sign at the same time is the same line read twice (a recording's log events and the
        # `--log` file they were recorded from).
        before = self._signs.get(sign)
        again = before is not None and abs(t_s - before) > SAME_LINE_S
        if last is not None and abs(t_s - last) <= SAME_RESTART_S and not again:
            if before is None:
                self._remember(sign, t_s)
            return []
        self._last_restart_s = t_s
        self._signs = {sign: t_s}
        idle = self._idle_at_end()
        self._flight = [0, 0, 0]  # a new run: nothing of it in flight yet
        self._picked.clear()
        self._waiting.clear()  # a request of the old run is not the new run's
        self._work_after_gpu_end = True
        if not self._seen_run and sign.startswith(START_LINE_SIGN):
            return []  # the first start of the log: a start, not a restart
        self.restarts += 1
        streak = self._streak
        if streak is None:
            # The first restart since GPU work: the one before it (the latest kept: the deque
            # drops only the oldest) has its stretch settled, its run having worked or gone.
            before = self.kept[-1].until_s() if self.kept else None
            streak = self._streak = Streak(self.restarts, t_s, before, self._last_gpu_end_s,
                                           self._last_line_s, idle)
        sigint, info_seen = self._sigint, self._info_seen
        self._sigint = False
        self._info_seen = False
        ended = how_it_ended(sigint, self._last_line_s, info_seen)
        last_line = (f"; the previous run's last line at {fmt.clock(self._last_line_s)}"
                     if self._last_line_s is not None else "")
        message = fmt.visible(f"cuzk restarted {ended.words}{last_line}, seen by {sign}; "
                              f"{STARTS_AGAIN}")
        kept = Restart(t_s, message, ended.hint, [sign], self.restarts, streak)
        self.kept.append(kept)
        self._run = _Run(t_s, kept, self._last_gpu_end_s, self._last_line_s, sigint, info_seen)
        return [ProverEvent(t_wall_s=t_s, kind="restart", level="warning", message=message,
                            cause=ended.cause)]

    def _failed(self, step: int, unpicked: bool = False) -> None:
        """A failure line in place of the end line of a step of `_FLIGHT` (`_FAILED`): one of
        that step fewer in flight, and, where it ended one counted, the lines of work before it
        answered as a GPU_END answers them (a failed partition fails its whole job, whose other
        partitions cuzk skips, engine.rs:1635, 3037): with nothing else in flight the run is
        idle from then. One not counted (begun before the log was read) changes nothing: never
        below 0. The GPU step of a prove written without GPU_START (`CUZK_DISABLE_SPLIT_PROVE=1`)
        is counted by its pickup (`unpicked`: its worker's, in its span, ended by this line)."""
        if self._flight[step] > 0:
            self._flight[step] -= 1
            self._work_after_gpu_end = False
        elif unpicked:
            self._work_after_gpu_end = False

    def _unpicked(self, ev: LogEvent) -> bool:
        """A line in a GPU worker's span, or a monolithic worker's, that ends the job it
        picked up with no GPU_START (a failure, a skip, its result): whether one was held."""
        if ev.worker is None or ev.fields.get("spans") not in (GPU_WORKER_SPAN, MONOLITHIC_SPAN):
            return False
        return self._picked.pop(ev.worker, None) is not None

    def _monolithic(self, ev: LogEvent) -> list[ProverEvent]:
        """A monolithic worker's line of its job (`_MONOLITHIC_LINES`, in its span): with the
        pipeline off cuzk writes no TIMELINE line, so these are its only GPU work. Its
        `processing job (monolithic)` (engine.rs:3397) begins the one call that synthesises and
        proves the job (3422-3440): a line of work, the job in flight on its worker until its
        end (`_picked`, as a pickup with the synchronous prove), and, for the run a restart
        began, its first GPU work (the GPU's part of the call is not said apart, nor the SRS
        the call loads into an empty `GROTH_PARAM_MEMORY_CACHE`, prover.rs:120, 177-181). Its
        completion line (3455-3462) is its GPU work's end, read as the synchronous prove's
        result line is (`_sync_gpu_done`). Its failure (`proof failed` / `proof task panicked`,
        3471, 3475, ERROR) ends the job in flight and is no GPU work done (as `_failed`: the
        stretch still starts at the last completion, runs that only failed are a crash loop).
        Before, a run with the pipeline off had no GPU work for restarts: no restart's cost was
        said, an idle stop was not known idle, and every restart after such work was one more
        of a crash loop."""
        name = ev.name
        if name == MONOLITHIC_PROCESSING_MESSAGE:
            self._work_after_gpu_end = True
            if ev.worker is not None:
                keep_latest(self._picked, ev.worker, ev.t_wall_s, MAX_PICKED)
            run = self._run
            if run is not None and run.work_s is None:
                run.work_s = ev.t_wall_s  # its job had arrived: a later `job enqueued` is not it
            return []
        if name == MONOLITHIC_COMPLETED_MESSAGE:
            return self._sync_gpu_done(ev)
        if ev.level == "ERROR" and self._unpicked(ev):
            self._work_after_gpu_end = False
        return []

    def _sync_gpu_done(self, ev: LogEvent) -> list[ProverEvent]:
        """A job's GPU work done, said in its GPU worker's span (`_SYNC_GPU_DONE`): with
        `CUZK_DISABLE_SPLIT_PROVE=1` cuzk proves in one synchronous call and processes its
        result there (engine.rs:3078-3118), writing no GPU_START and no GPU_END, so this line is
        its GPU work's end, as a GPU_END is: the run's last GPU work (from which a restart's
        stretch runs, and after which the run may be idle), the end of any crash loop, and, for
        the run a restart began, its first GPU work, from its pickup (3023, the prove begun
        right after it) where read, which says the restart's cost. Before, a run proved so had
        no GPU work for restarts: every restart after it was one more of a crash loop, no
        restart's cost was said, and an idle cuzk stopped was "down" until its restart. A
        monolithic worker's completion line is read so too (`_monolithic`, its pickup its
        `processing job (monolithic)`)."""
        t = ev.t_wall_s
        worker = ev.worker
        picked = self._picked.pop(worker, None) if worker is not None else None
        self._last_gpu_end_s = t
        self._streak = None
        self._work_after_gpu_end = False
        run = self._run
        if run is None:
            return []
        return self._first_gpu_work(run, picked if picked is not None and run.t_s <= picked <= t
                                    else t)

    def _idle_at_end(self) -> bool:
        """Whether the current run had nothing in flight from its latest GPU work on: no
        synthesis, GPU queue item or GPU work begun and not ended (a failure line ends the step
        it failed: `_failed`), and no line of work after it or after the failure (a run killed
        mid-job is not idle; one stopped after an hour of no jobs was said "down" that hour,
        the restart's cost, and one whose last synthesis had failed an hour before was said up
        with work in flight that hour, the restart's too), no request enqueued and not begun
        (`_waiting`: a failure ends its own step, not a request queued behind it), and no
        pickup held, where the run's INFO lines were read (its result or skip line, which ends
        a pickup, is INFO: with `RUST_LOG=warn` or stdout not followed a pickup held says
        nothing, else it held "work in flight" to the end of the run)."""
        return (self._last_gpu_end_s is not None and not self._work_after_gpu_end
                and not self._waiting.jobs and not any(self._flight)
                and not (self._picked and self._info_seen))

    def during(self, start_s: float, end_s: float, slack_s: float = 0.0,
               idle_since_s: float | None = None) -> Spanned | None:
        """The restarts a gap over [start_s, end_s] spans (None: none): each kept whose stretch,
        from the restart to its new run's first GPU work (`Restart.until_s`), meets the gap
        (`slack_s` either side), newest first, and how many in all. Where that first GPU work
        was not read (no log, a restart only `/status` or a new pid said), the stretch runs
        to the GPU's next work: a gap whose idle stretch, from `idle_since_s` (the GPU's last
        busy reading before it; holes may cut the stretch into several gaps), holds the
        restart is its (the H200 restart's idle after the new run's pool pinned, a gap of its
        own after NVML's blind spot, was no restart's). Kept in the order seen, each stretch
        ending before the next restart: the first one wholly before the gap ends the search.
        Where the search ran past the oldest kept, older restarts may be in the gap too: those
        of its streak are counted by their numbers (a crash loop of 2,000 was said as the 64
        kept), and past what the streak tells the count is said as a least."""
        lo_s = start_s - slack_s
        idle_lo_s = lo_s if idle_since_s is None else min(lo_s, idle_since_s - slack_s)
        out: list[Restart] = []
        ran_past = True
        for r in reversed(self.kept):
            if r.t_s > end_s + slack_s:
                continue
            if r.until_s() < (lo_s if r.first_gpu_s is not None else idle_lo_s):
                ran_past = False
                break
            out.append(r)
        if not out:
            return None
        latest, oldest = out[0], out[-1]
        count, exact = len(out), True
        if ran_past and oldest.seq > 1:
            streak = oldest.streak
            if streak.seq == oldest.seq or streak.t_s >= lo_s:
                # Its streak's older ones (none, or all after the gap's start) are in it; the
                # restart before the streak is, if its stretch reaches into the gap.
                count = latest.seq - streak.seq + 1
                exact = streak.before_until_s is None or streak.before_until_s < lo_s
            else:
                exact = False  # its streak began before the gap: some of it may be in it
        return Spanned(out, start_s, end_s, count, exact)

    def _remember(self, sign: str, t_s: float) -> None:
        """A new sign of the latest restart (its caller knows it is new), remembered while
        fewer than `MAX_SIGNS` are (see there): memory and the time of each sign stay
        bounded."""
        if len(self._signs) < MAX_SIGNS:
            self._signs[sign] = t_s
            self._note_run_sign(sign)

    def _note_run_sign(self, sign: str) -> None:
        """`sign` among the latest run's signs (said in its cost), at most `MAX_SIGNS`."""
        run = self._run
        if run is not None and len(run.signs) < MAX_SIGNS and sign not in run.signs:
            run.signs.append(sign)

    # -- its cost -----------------------------------------------------------------------------

    def _cost_parts(self, ev: LogEvent) -> list[ProverEvent]:
        """The parts of the open run's cost this event marks (a run is open: `feed_log`), and
        its cost at the run's first GPU work."""
        run = self._run
        if run is None:
            return []
        t, name = ev.t_wall_s, ev.name
        if ev.kind == "tracing":
            self._tracing_part(run, t, name)
        elif ev.kind == "timeline":
            if run.work_s is None:
                run.work_s = t
            if name == "SYNTH_START":
                run.first_synth_s = run.first_synth_s or t
                if run.first_synth_end_s is None:
                    run.first_wave += 1
            elif name == "SYNTH_END" and run.first_synth_end_s is None:
                run.first_synth_end_s = t
            elif name == "GPU_QUEUE" and run.first_queue_s is None:
                run.first_queue_s = t
            elif name == "GPU_START":
                return self._first_gpu_work(run, t)
        return []

    def _first_gpu_work(self, run: _Run, t: float) -> list[ProverEvent]:
        """The run a restart began did its first GPU work at `t`: its cost, said now."""
        self._run = None
        run.kept.first_gpu_s = t
        run.kept.cost = self._cost(run, t)
        return [run.kept.cost]

    @staticmethod
    def _tracing_part(run: _Run, t: float, name: str) -> None:
        kept = run.kept
        waiting = kept.first_job_s is None and run.work_s is None
        if name == JOB_ENQUEUED_MESSAGE:
            if waiting:
                kept.first_job_s = t
        elif waiting and _ready_line(name):
            kept.ready_s = t  # the latest before its first job: ready from then
        elif name.startswith(SRS_LOADING_MESSAGE):
            if run.work_s is None:
                run.work_s = t
            if len(run.srs) < MAX_SRS:
                run.srs.append((t, None))
            else:
                run.srs_more += 1
        elif name.startswith(SRS_LOADED_MESSAGE):
            # The latest load still open (the list is at most `MAX_SRS` long).
            for i in range(len(run.srs) - 1, -1, -1):
                if run.srs[i][1] is None:
                    run.srs[i] = (run.srs[i][0], t)
                    break
        elif name.startswith(POOL_ALLOCATED_MESSAGE):
            if run.work_s is None:
                run.work_s = t
            run.pool_first_s = run.pool_first_s or t
            run.pool_last_s = t

    def _cost(self, run: _Run, first_gpu_s: float) -> ProverEvent:
        start = run.last_gpu_end_s if run.last_gpu_end_s is not None else run.t_s
        if start > run.t_s or first_gpu_s < run.t_s:
            return self._cost_unknown(run, first_gpu_s)
        kept = run.kept
        streak = kept.streak
        # A crash loop: the restarts in a row before this one, each run gone before any GPU
        # work. The daemon was down only until the first of them, not until this one.
        loop_s = (streak.t_s if kept.in_a_row > 1 and start <= streak.t_s < run.t_s
                  else None)
        down_to = run.t_s if loop_s is None else loop_s
        # The old run was up until its last line (its SIGINT line, a line of work), not down
        # from its last GPU work: that stretch is no work where nothing was in flight.
        up_to = _up_to(streak, start, down_to)
        idle = kept.idle_before()
        idle_s = up_to - start if idle is not None else 0.0
        # (A part that its words would say as 0.0 s is not said: a line of work in flight
        # written a few ms after the last GPU work.)
        parts = ([StretchPart(IDLE_BEFORE if idle is not None else UP_BEFORE, start, up_to)]
                 if up_to - start >= _SAID_S else [])
        if up_to < down_to:
            parts.append(StretchPart(DOWN, up_to, down_to))
        if loop_s is not None:
            parts.append(StretchPart(CRASH_LOOP, loop_s, run.t_s))
        ready = kept.ready_s
        if ready is not None and ready > run.t_s:
            parts.append(StretchPart(STARTUP, run.t_s, ready))
        wait = kept.wait()
        if wait is not None:
            parts.append(StretchPart(WAITED_FOR_JOB, *wait))
        parts += [StretchPart(SRS_RELOADED, a, b) for a, b in run.srs if b is not None]
        if run.pool_first_s is not None and run.pool_last_s is not None:
            parts.append(StretchPart(POOL_AGAIN, run.pool_first_s, run.pool_last_s))
        if run.first_synth_s is not None and run.first_queue_s is not None:
            parts.append(StretchPart(FIRST_WAVE, run.first_synth_s, run.first_queue_s))
        said = ", ".join(_part_words(p, kept) for p in parts) or "no parts read"
        if run.srs_more:
            said += f", and {run.srs_more} more SRS loads"
        wave = (f"; the first wave after it: {run.first_wave} synthesis(es) started before any "
                "capacity hint existed (unpinned by design, pipeline.rs:176-230)"
                if run.first_wave else "")
        length_s = first_gpu_s - start
        stretch = (f"{fmt.clock(start)} to {fmt.clock(first_gpu_s)} (its last work of the old "
                   "run to its first of the new)")
        which = "the restarts" if loop_s is not None else "the restart"
        # Without the first job's arrival, a wait for work cannot be told from the rest.
        unread = ("" if wait is not None or kept.first_job_s is not None else
                  "; its first job's arrival ('job enqueued', scheduler.rs:67) was not "
                  "read: any wait for work after it was ready is counted in it")
        if wait is None and not idle_s:
            lead = f"{which} cost the GPU {length_s:.1f} s, {stretch}"
            message = f"{lead}: {said}{wave}{unread}"
            waited_s = None
        else:
            waited_s = idle_s + (0.0 if wait is None else wait[1] - wait[0])
            lead = (f"{which} cost the GPU {length_s - waited_s:.1f} s of the {length_s:.1f} s "
                    f"from {stretch}: "
                    + _lead_parts(start, up_to, idle_s, wait, first_gpu_s))
            message = f"{lead}. Parts: {said}{wave}{unread}"
        return ProverEvent(t_wall_s=first_gpu_s, kind="restart_cost", level="warning",
                           message=fmt.visible(message), start_s=start, end_s=first_gpu_s,
                           parts=parts, waited_s=waited_s)

    @staticmethod
    def _cost_unknown(run: _Run, first_gpu_s: float) -> ProverEvent:
        """The data's time went back across the restart (a clock stepped back at boot, logs of
        two boxes or runs merged): the old run's last GPU work is after the restart, or the new
        run's first before it. Its length is not known, so none is given (it was said as
        "cost the GPU -3548.0 s", and took that much off the restart-cost counter)."""
        last = run.last_gpu_end_s
        message = fmt.visible(
            f"the restart's GPU cost is not known: the data's time went back across it (the old "
            f"run's last GPU work at {fmt.clock(last) if last is not None else '?'}, the "
            f"restart at {fmt.clock(run.t_s)}, the new run's first GPU work at "
            f"{fmt.clock(first_gpu_s)})")
        return ProverEvent(t_wall_s=first_gpu_s, kind="restart_cost", level="warning",
                           message=message)


def _up_to(streak: Streak, start_s: float, down_to_s: float) -> float:
    """When the run before the restart (or its crash loop) is known to have been up until:
    its last line, from its last GPU work `start_s` to its end `down_to_s` (the start line,
    or the loop's first); `start_s` where no later line of it was read (a line after the
    restart, of the new run, says nothing of it)."""
    up = streak.up_to_s
    if up is None or up > streak.t_s:
        return start_s
    return min(max(up, start_s), down_to_s)


def _lead_parts(start_s: float, up_to_s: float, idle_s: float,
                wait: tuple[float, float] | None, first_gpu_s: float) -> str:
    """A restart cost's lead where cuzk was up with no work in its stretch: the old run idle
    before it stopped (`idle_s`, from `start_s` to `up_to_s`) and the new run's wait for its
    first job (`wait`: ready, first job), each said, not the restart's."""
    said = []
    from_s, there = start_s, ""
    if idle_s:
        said.append(f"cuzk was up with nothing in flight for {idle_s:.1f} s after its last GPU "
                    f"work, to its last line at {fmt.clock(up_to_s)}, not the restart's")
        from_s, there = up_to_s, " from there"
    if wait is None:
        said.append(f"{first_gpu_s - from_s:.1f} s{there} to the new run's first GPU work")
    else:
        said.append(f"{wait[0] - from_s:.1f} s{there} to the new run ready at "
                    f"{fmt.clock(wait[0])}, {first_gpu_s - wait[1]:.1f} s from its first job "
                    f"('job enqueued' at {fmt.clock(wait[1])}) to its first GPU work; between, "
                    f"cuzk waited {wait[1] - wait[0]:.1f} s for work, not the restart's (Curio "
                    "sent nothing)")
    return "; ".join(said)


def _part_words(part: StretchPart, restart: Restart) -> str:
    """`down 10.0 s`; a crash loop with how many runs it was, the wait for the first job
    with whose it is."""
    words = f"{part.name} {part.end_s - part.start_s:.1f} s"
    if part.name == CRASH_LOOP:
        before = restart.in_a_row - 1
        return (f"{words} (cuzk started {restart.in_a_row:,} times in a row: "
                f"{_count(before, 'run', 'runs')} gone before any GPU work)")
    if part.name == WAITED_FOR_JOB:
        return f"{words} (no work: not counted as the restart's)"
    if part.name == IDLE_BEFORE:
        return f"{words} (nothing in flight: not counted as the restart's)"
    if part.name == UP_BEFORE:
        return f"{words} (work in flight)"
    return words
