"""PoSt latency in cuzk: each WinningPoSt and WindowPoSt, phase by phase, against its deadline.

Who calls it: `gapwatch.cuzk.watch.CuzkWatch` (fed every log event, live and offline). Pure: no
clocks; "now" is the data's own time (`check`), which, followed live, the log reader's clock
moves too where no line comes (`CuzkWatch.at`, `heard_at`).

What cuzk writes for one PoSt (curio e0294b0f; ../shared/reference/cuzk-upstream-paths.md 4.5):
`job enqueued job_id proof_kind priority` (scheduler.rs:67, the arrival; priority only orders
this queue, scheduler.rs:34-45), then TIMELINE `SYNTH_START kind=winning-post|window-post`
(engine.rs:2665, after the single synthesis dispatcher and the budget: its working set's, and
its SRS's *budget* when that SRS is not in memory, 2649-2661), `SYNTH_END synth_ms` (2745: the
synthesis, then, when its SRS was not in memory, the SRS *load* itself, `ensure_loaded` at
2717-2721, `loading SRS from disk circuit_id=winning-32g|wpost-32g` .. `SRS loaded successfully
elapsed_ms`, srs_manager.rs:203, 224; `synth_ms` counts the synthesis alone), `GPU_QUEUE
monolithic` (2848, key (0,0): first in the GPU queue), `GPU_PICKUP worker=W` (3023: a worker
came free), `GPU_START` (3131), `GPU_END worker=W,gpu_ms` (3196).
Job ids are Curio's request ids: `winpost-<miner>-<hex8>`, `wdpost-<miner>-<partition>-<...>`
(lib/ffi/cuzk_funcs.go:179, 220). `/status` never lists PoSt (only partitioned jobs).

Phases: queue (arrival to SYNTH_START; None without the enqueue line, and the total then starts
at SYNTH_START and says so), synthesis (SYNTH_START to SYNTH_END: with its own SRS load from
disk, when its SRS was not in memory), GPU wait (GPU_QUEUE to GPU_PICKUP, with what held every
worker then), GPU (GPU_START to GPU_END), total. The deadline per kind is `[cuzk]
winning_post_deadline_s` / `window_post_deadline_s` (docs/post.md gives their sources); a proof
past `post_at_risk_share` of it is at risk, past it late, and a proof still running past its
deadline is said late at once (`check`), not only when it ends. A proof whose begin was not read
(a stray `GPU_END`: no total) is "unknown", a warning, never "ok". A late or at-risk proof names
the setting for its longest phase, where what was read ranks it (`_with_setting`,
`ProofTiming.longest_phase`: 33 s of synthesis before a report's window outrank the 1.7 s of
GPU read in it, so no phase is named then); an SRS load is its own only when it is of
its own circuit and begins inside its synthesis phase (`_SrsLoad`).

With `[pipeline] enabled = false` (the run's `starting cuzk engine pipeline_enabled=false`,
engine.rs:1244; where no start line of the run was read, any monolithic worker's line) cuzk
writes no TIMELINE line: each GPU's one worker (engine.rs:1333-1337) takes a request from the
scheduler (`job enqueued`, then `job dequeued for proving`, scheduler.rs:67, 85) and proves it
whole in one call (engine.rs:3422-3440), inside its span `monolithic_worker{worker_id gpu job_id
proof_kind}` (3394): `processing job (monolithic)` (3397) when it takes it, `proof completed
successfully (monolithic) total_ms queue_ms deser_ms prove_ms` (3455-3462) when done. Such a
PoSt is proved in one step (`ProofTiming.one_step`): queue (arrival to `processing job`: its
wait for a worker, with what each worker held when it arrived) and prove (to the completion
line: synthesis and GPU together, not split in any line, so `synth_s`, `gpu_wait_s` and `gpu_s`
stay None); the completion line's `total_ms` and `queue_ms` place its arrival and its prove
start when their lines were not read. It is judged against its deadline as any other. The
run's start line wins for that run: with the pipeline on, cuzk starts no monolithic worker
(engine.rs:1394, 3362-3378), so a monolithic worker's line there is not that run's (one stray
such line made the run's late WinningPoSt "one-step", every phase unsaid and no setting):
passed over, counted (`not_this_run`). A restart, or TIMELINE offsets beginning again, starts a
run whose start line is not read yet.

A PoSt is followed by its job id, and only an id gapwatch holds whole can tell two apart: a
line is read to its first `PARSE_CHARS` (gapwatch.logs.parse), and what the watcher is given of
it keeps `TEXT_CHARS` of its id (`sizes.bounded_event`). 40 late WinningPoSt whose ids ran to
400 KB each were one id there, their lines taken for one another's (a report said them as one
PoSt, "0.9 s ok (running)"). An id longer than `MAX_JOB_ID_CHARS` (Curio's are tens of
characters, lib/ffi/cuzk_funcs.go:179, 220) is no PoSt gapwatch can follow: its lines are passed
over, those of a PoSt counted (`ids_too_long`) and said once, a warning.

A PoSt whose failure line names it is said failed at once (verdict "failed", its line's words
in `ProofTiming.error`, an error: no proof came of it, a WinningPoSt's block is lost as a late
one's is), its last word, never said late after (`_fail`): the monolithic worker's `proof
failed` / `proof task panicked` (engine.rs:3471, 3475, its span naming the job), and a pipelined
one's `GPU prove start failed` / `... task panicked` (3282, 3302) or `GPU proving failed` /
`... task panicked` (977, 998) inside its GPU worker's span `gpu_worker{job_id proof_kind
partition=None}` (3005-3012; `GPU_WORKER_FAILED_MESSAGES`). A failure line that names no job
fails the one PoSt that alone can be its job, never a guess among several
(`_unnamed_failure`): `synthesis failed` / `synthesis task panicked` (2855, 2870, span
`synth_single{proof_kind}`: a kind, no job; written after its job's SYNTH_START, in place of
its SYNTH_END) is the PoSt of that kind in synthesis, and `GPU proving failed` / `... task
panicked` from the split prove's finalizer (the default, 977, 998 via 3257: no span; after its
job's GPU_START, in place of its GPU_END) the job on the GPU, each only where it is the only
one, and only in a file read in the order written from the run's start line (`2>&1`, the
journal), where every line written before the failure was read before it: cuzk's stdout and
stderr read as two files, a log begun mid-run, two of a kind in synthesis
(`synthesis_concurrency` above 1) or two jobs past their GPU_START leave more than one it can
be, and the PoSt stays in flight, said late past its deadline. With the pipeline off the
monolithic worker's failure lines always name their job (its span, 3394, holds 3397-3475).
Either way the line is an error event of its own (`gapwatch.cuzk.errors`).
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from dataclasses import dataclass, field

import msgspec

from gapwatch.core import fmt
from gapwatch.core.bounds import keep_latest
from gapwatch.core.models import (
    MAX_ERROR_CHARS,
    PHASE_WORDS,
    UNREAD_LEAST_S,
    LogEvent,
    NoticeLevel,
    ProofGivenUp,
    ProofPhase,
    ProofTiming,
    ProofVerdict,
    ProverEvent,
)
from gapwatch.core.prover_watch import RunningProof, total_words
from gapwatch.core.sizes import TEXT_CHARS, cut_text
from gapwatch.core.values import int_field
from gapwatch.cuzk.engine_runs import OFFSETS_BACK_S, offsets_began_again
from gapwatch.cuzk.gpu_workers import Hold, WorkerHolds
from gapwatch.cuzk.log_lines import (
    ANCHOR_MESSAGE,
    FINALIZER_FAILED_MESSAGES,
    GPU_WORKER_FAILED_MESSAGES,
    GPU_WORKER_SPAN,
    JOB_ENQUEUED_MESSAGE,
    MONOLITHIC_COMPLETED_MESSAGE,
    MONOLITHIC_FAILED_MESSAGES,
    MONOLITHIC_JOB_MESSAGES,
    MONOLITHIC_SPAN,
    MONOLITHIC_WORKER_STARTED_MESSAGE,
    PIPELINE_COMPLETED_MESSAGE,
    SINGLE_SYNTH_FAILED_MESSAGES,
    SRS_EVICTED_MESSAGE,
    SRS_LOADED_MESSAGE,
    SRS_LOADING_MESSAGE,
    SYNTH_SINGLE_SPAN,
    UNNAMED_FAILED_MESSAGES,
    says_when_written,
)
from gapwatch.cuzk.pipeline import POST_KINDS, error_words
from gapwatch.cuzk.unnamed_failure import RunStream

#: Each PoSt proof kind (`pipeline.POST_KINDS`, TIMELINE's `kind=`) -> the name people use.
POST_NAMES: dict[str, str] = dict(zip(POST_KINDS, ("WinningPoSt", "WindowPoSt"), strict=True))
#: A late or at-risk proof's cause where no phase ranks first (`ProofTiming.longest_phase`):
#: the phases its lines were not read for took longer than any read (a window, or a log
#: begun mid-proof), so no phase, nor its setting, is named.
PHASES_NOT_READ = "phases_not_read"
#: Curio's request id prefixes (lib/ffi/cuzk_funcs.go:179, 220), for a job whose SYNTH_START
#: was not read.
_ID_PREFIXES: tuple[tuple[str, str], ...] = (("winpost-", "winning-post"),
                                             ("wdpost-", "window-post"))
#: The circuits cuzk loads an SRS for, as srs_manager.rs:46-57 prints them: `_srs_in_run` keeps
#: no other (a hostile log naming millions would grow it).
SRS_CIRCUITS = frozenset(("porep-32g", "porep-64g", "wpost-32g", "winning-32g", "snap-32g",
                          "snap-64g"))
#: Each PoSt kind's own SRS circuit: the `circuit_id=` of its load (engine.rs:2640-2641 picks
#: the circuit, srs_manager.rs:46-57 Display names it).
POST_CIRCUITS: dict[str, str] = {"winning-post": "winning-32g", "window-post": "wpost-32g"}
#: The same, circuit -> kind.
POST_CIRCUIT_KINDS: dict[str, str] = {c: k for k, c in POST_CIRCUITS.items()}
#: SRS loads remembered (the latest): cuzk loads one at a time (its manager's mutex is held
#: through a load, engine.rs:2719), a few a run, so these reach back well past any PoSt in flight.
MAX_SRS_LOADS = 64
#: Slack between a TIMELINE line placed in wall time (ms offsets from an anchor) and a tracing
#: line's own µs stamp, as `_follows` allows.
CLOCK_SLACK_S = 0.05
#: engine.rs:839, in the finalizer right after a monolithic job's GPU_END (3196): no job id,
#: but `total_ms` from its submission, which places its arrival when `job enqueued` was not read
#: (in its GPU worker's span, naming it, where no GPU_END is written: `_named_completion`).
COMPLETED = PIPELINE_COMPLETED_MESSAGE
#: The longest job id a PoSt is followed by (see the module docstring): the watcher is given
#: this much of an id (`sizes.bounded_event`), so a longer one cannot be told from another that
#: starts the same.
MAX_JOB_ID_CHARS = TEXT_CHARS
#: The longest a PoSt waits for cuzk's job tracker lock (a tokio Mutex, engine.rs:3220): a
#: finalizer holds it through its result's processing, a PoRep's self-check among it
#: (engine.rs:3220-3253, prover.rs:217-256), and `CUZK_VALIDATE_PARTITIONS=1`, malloc_trim and
#: gRPC GetStatus/GetMetrics take it too. A PoSt waits for it twice: its finalizer, between
#: its GPU_END and its completion line (engine.rs:3220, 839), and its submission, between
#: `submitted_at` (service.rs:51, which `total_ms` counts from, engine.rs:838) and its `job
#: enqueued` line (engine.rs:3527-3533, then scheduler.rs:65-67 under the queue's own mutex,
#: held only to push and pop). One bound for both: the same lock, the same holders.
TRACKER_LOCK_WAIT_S = 10.0
#: A PoSt's GPU_END and a completion line this close together are the same job's (stdout and
#: stderr may be two files read apart; the finalizer may wait for cuzk's job tracker lock in
#: between, `TRACKER_LOCK_WAIT_S`); a PoSt waits this long for it (data time) before it is said
#: without.
PAIR_S = TRACKER_LOCK_WAIT_S
#: Slack for the clocks' steps between a PoSt's `job enqueued` line and its completion line
#: (both tracing lines, stamped by the system clock; `total_ms` is cuzk's monotonic `Instant`,
#: truncated to the ms): how far past its bounds the submission a completion line places may
#: be and still be its own (`_fit`).
ARRIVAL_FIT_S = 1.0
#: How many PoSt jobs are followed at once, and how many enqueue lines are remembered (a job
#: that never reaches synthesis must not hold memory for ever).
MAX_IN_FLIGHT = 256
#: Ids of proofs given up for room remembered (their later lines passed over).
MAX_GIVEN_UP_IDS = 4 * MAX_IN_FLIGHT
MAX_ENQUEUED = 1024
#: Ended PoSt waiting for their completion line (a few at most; more is a log without them).
MAX_AWAITING = 64
#: Jobs not split into partitions followed on the GPU (`PostTracker._track_gpu`); and how many
#: workers a PoSt names as what it waited behind (the rest counted; the workers followed are
#: `gpu_workers.MAX_WORKERS`'). A box has a few per GPU; junk `worker=` ids that never end
#: were each held, and a PoSt queued listed every one (100,000: a 4 MB message and list,
#: copied into each PoSt in flight).
MAX_HELD = 1024
MAX_BEHIND = 16
#: PoSt `GPU_END` lines remembered (job id, TIMELINE offset), the latest: the same line read
#: again is not a second proof (see `PostTracker._ended_line_again`).
MAX_ENDED = 1024
#: A proof gapwatch could not time is a warning: never "info" beside the ones on time.
_LEVEL: dict[ProofVerdict, NoticeLevel] = {"ok": "info", "at_risk": "warning", "late": "error",
                                           "unknown": "warning", "failed": "error"}
#: Failed pipelined PoSt whose TIMELINE lines were not read when their failure was (`_Apart`),
#: the latest: as many as the ids of proofs given up.
MAX_FAILED_APART = MAX_GIVEN_UP_IDS
#: Streams whose engine clock is kept (`PostTracker._clocks`): the files given.
MAX_CLOCKS = 64
#: The failure lines that name no job which can still be a PoSt's (`_unnamed_failure`).
_UNNAMED_FAILED = frozenset(UNNAMED_FAILED_MESSAGES)


@dataclass(frozen=True, slots=True)
class Deadlines:
    """Seconds each PoSt kind may take, and the share of it past which it is at risk."""

    winning_post_s: float = 30.0
    window_post_s: float = 1800.0
    at_risk_share: float = 0.5

    def of(self, kind: str) -> float | None:
        if kind == "winning-post":
            return self.winning_post_s
        if kind == "window-post":
            return self.window_post_s
        return None


@dataclass(frozen=True, slots=True)
class _SrsLoad:
    """One SRS load read from cuzk's log: its circuit, when `loading SRS from disk` was written
    (wall time), and how long it took (`SRS loaded successfully elapsed_ms`; None until read).

    A PoSt loads its own SRS inside its synthesis step, after SYNTH_START and before SYNTH_END
    (engine.rs:2717-2721): a load that begins there, of its own circuit, is its own. A load
    while it waits in the queue is another job's (a PoRep's, engine.rs:2187-2210, another
    PoSt's), work the single synthesis dispatcher waits for at synthesis_concurrency 1."""

    circuit: str
    began_s: float
    elapsed_ms: int | None = None
    #: No load of its circuit was read before it since cuzk started: the SRS was never in
    #: memory, not evicted (it is loaded on demand, srs_manager.rs; no config key preloads it,
    #: and a gRPC PreloadSRS load is read as a load: its `loading SRS from disk` line).
    first_in_run: bool = False

    def ended_s(self) -> float:
        """When it ended, as far as known (its begin while its end line is not read)."""
        return self.began_s + (self.elapsed_ms or 0) / 1000.0

    def took_words(self) -> str:
        """`, 31.0 s` when its end line said how long it took, else nothing."""
        return "" if self.elapsed_ms is None else f", {self.elapsed_ms / 1000.0:.1f} s"


@dataclass(frozen=True, slots=True)
class _SrsEviction:
    """One `SRS evicted circuit_id freed_gib budget_available_gib` line (srs_manager.rs:282,
    written only from the evictor, engine.rs:1279-1320: a budget acquire was short and the SRS
    had been idle at least `[memory] eviction_min_idle`): when (wall time), its SRS's last use
    read before it (its load's end, or a PoSt of its circuit whose SYNTH_END came after
    `ensure_loaded` refreshed it, engine.rs:2717-2721; None: not read), so how long it had been
    idle then by the log (`idle_s`), and the budget available after it (integer GiB, as cuzk
    writes it; None: not said)."""

    circuit: str
    t_s: float
    last_used_s: float | None
    budget_available_gib: int | None

    @property
    def idle_s(self) -> float | None:
        return None if self.last_used_s is None else self.t_s - self.last_used_s


@dataclass(slots=True)
class _Apart:
    """A pipelined PoSt said failed before its TIMELINE lines were read: cuzk writes those
    (SYNTH_START .. GPU_START, engine.rs:2665-3131) before its failure line (3282), on stderr,
    its failure on stdout, and a file of each is read after the other (docs/logs.md). Its lines
    read after are its own, passed over (taken as a new proof, it was in flight for good and
    said late, after its failure): those timed up to its failure (`failed_s`, the failure
    line's wall time), and on the engine clock (no time to compare) those that go on from its
    latest line read (`last_step`) in the order cuzk writes an attempt's lines on its one
    stream (`_STEP_ORDER`). A line that does not is a retry's (Curio's id is the same for the
    same randomness, lib/ffi/cuzk_funcs.go:220): a SYNTH_START after the attempt's later lines,
    and any GPU_END, which a failed attempt never writes (its failure comes before it,
    engine.rs:3282, or instead of it, 977 after 3190's `?`). With its own SYNTH_START not read
    (a log followed from mid-run) the retry's was taken for it, and every line after it: the
    retry, late, was never said done. The lines passed over on the engine clock are held
    (`held`: their steps go up, so at most one of each): at a GPU_END that goes on from them
    they were the retry's (had the failed attempt's been among them, the retry's SYNTH_START
    would have come between), read as its own then (`PostTracker._retry_held`); else, with
    none of the failed attempt's lines read, only the retry's GPU_END was its own, a bound of
    nothing."""

    failed_s: float
    #: Its latest line read, as its place in `_STEP_ORDER` (-1: none read).
    last_step: int = -1
    held: list[LogEvent] = field(default_factory=list)


#: The TIMELINE lines of one PoSt attempt in the order cuzk writes them (engine.rs:2665, 2745,
#: 2848, 3023, 3131, 3196), each once, on one stream (stderr): a line that does not go on from
#: an attempt's latest is another attempt's (`_Apart`).
_STEP_ORDER: dict[str, int] = {name: i for i, name in enumerate(
    ("SYNTH_START", "SYNTH_END", "GPU_QUEUE", "GPU_PICKUP", "GPU_START", "GPU_END"))}


def post_kind(kind: str | None, job_id: str | None) -> str | None:
    """The PoSt kind of a job (TIMELINE `kind=`, else its Curio id), or None for other work."""
    if kind in POST_KINDS:
        return kind
    for prefix, k in _ID_PREFIXES:
        if job_id is not None and job_id.startswith(prefix):
            return k
    return None


@dataclass(slots=True)
class _EngineClock:
    """One cuzk engine run's clock, its TIMELINE offsets (s since it started): what "now" is
    for the proofs timed by them (`_Post.clock`)."""

    #: Its latest offset read.
    latest_s: float | None = None
    #: Its lead over gapwatch's monotonic clock, the least it can be: the largest (offset -
    #: arrival) of its lines read with an arrival. A line is written before it is read, so at
    #: any later arrival `m` the engine's offset is at least `m` + this. Good only on the
    #: monotonic clock it was read on (`PostTracker._mono_run`: a reboot starts it again).
    lead_s: float | None = None
    lead_mono_run: int = 0

    def read(self, offset_s: float, mono_s: float | None, mono_run: int) -> None:
        if self.latest_s is None or offset_s > self.latest_s:
            self.latest_s = offset_s
        if mono_s is None:
            return
        if self.lead_mono_run != mono_run:
            self.lead_s, self.lead_mono_run = None, mono_run
        if self.lead_s is None or offset_s - mono_s > self.lead_s:
            self.lead_s = offset_s - mono_s

    def now(self, mono_now_s: float | None, mono_run: int) -> float | None:
        """Its "now": its latest offset, or, later than that, what the latest arrival says it
        is at least. By its offsets alone a WinningPoSt begun in a `--from-start` backlog and
        stuck live in GPU wait read "running more than 2.0 s of 30 s" for minutes and was never
        said late: no offset of it moved while it waited. Arrivals exist only where lines are
        followed (not in `parse`, a file read at once)."""
        now = self.latest_s
        if (self.lead_s is not None and mono_now_s is not None
                and self.lead_mono_run == mono_run):
            least = mono_now_s + self.lead_s
            now = least if now is None else max(now, least)
        return now


@dataclass(slots=True)
class _Post:
    job: str
    kind: str
    arrived_s: float | None = None
    synth_start_s: float | None = None
    synth_end_s: float | None = None
    gpu_queue_s: float | None = None
    pickup_s: float | None = None
    gpu_start_s: float | None = None
    end_s: float | None = None
    #: Its completion line (engine.rs:839): the result processed, the proof on its way back.
    done_s: float | None = None
    gpu: int | None = None
    worker: int | None = None
    waited_behind: list[str] = field(default_factory=list)
    waited_behind_more: int = 0
    said_late: bool = False
    #: Timed on cuzk's engine clock (TIMELINE offsets, seconds): its TIMELINE lines came
    #: without their anchor where their arrival means nothing (`PostTracker.arrival_timed`
    #: False: a file read at once). Its phase times above are then offsets, never mixed with
    #: a line's own wall time (a `job enqueued` of May against a SYNTH_START read today was a
    #: queue of 206 days), and `wall_s` places it: the latest wall time known at its last line.
    #: The engine run's clock it is timed on then (None: timed by its lines' wall times).
    clock: _EngineClock | None = None
    wall_s: float | None = None
    #: How long it had been in flight on the wall clock when its offsets took over (from its
    #: `job enqueued` to the latest line of its own time on the stream of the TIMELINE line
    #: that took it over, written before that line): the least its total can be there.
    wall_least_s: float | None = None
    #: Proved in one step by a monolithic worker (the pipeline off): its phases are its queue
    #: (to `prove_start_s`, its `processing job (monolithic)`) and its prove (to `done_s`).
    one_step: bool = False
    prove_start_s: float | None = None
    #: What each worker held when it arrived (`_behind`): what it waited behind, proved in one
    #: step (a pipelined proof's is taken at its GPU_QUEUE instead).
    arrival_behind: tuple[list[str], int] | None = None
    #: When the line that said it failed was written (on its clock: on the engine clock, its
    #: latest offset, the least it ran), and that line's words (`PostTracker._fail`).
    failed_s: float | None = None
    error: str | None = None
    #: Its failure line said its synthesis failed (`_unnamed_failure`): that phase counts to it.
    failed_in_synthesis: bool = False
    #: The stream its TIMELINE lines were read on (one attempt writes them on one, stderr).
    stream: str | None = None
    #: Its failure line's message (`GPU prove start failed`): the cause it is grouped by.
    failed_by: str | None = None
    #: The time from the previous PoSt of its kind's begin to its own (wall clock; None: none
    #: read before it in this tracker, or on the engine clock): how often its SRS is used.
    since_previous_s: float | None = None

    @property
    def engine_clock(self) -> bool:
        """Timed on an engine run's clock (its TIMELINE offsets)."""
        return self.clock is not None

    def begin_s(self) -> float | None:
        return self.arrived_s if self.arrived_s is not None else self.synth_start_s

    def since_s(self) -> float | None:
        """Its begin, else its first line read (a log followed from mid-proof): what its time
        in flight is counted from, by `check` and `finish` alike."""
        begin = self.begin_s()
        return begin if begin is not None else self.earliest_s()

    def earliest_s(self) -> float | None:
        """Its first line's time, whichever was read (None: none timed)."""
        return min((t for t in (self.arrived_s, self.synth_start_s, self.synth_end_s,
                                self.gpu_queue_s, self.pickup_s, self.gpu_start_s, self.end_s,
                                self.prove_start_s, self.done_s) if t is not None),
                   default=None)

    def latest_s(self) -> float:
        """Its latest line's time (a proof lost in a restart is timed no earlier: timed at its
        synthesis start, its total was shorter than its phases)."""
        return max((t for t in (self.arrived_s, self.synth_start_s, self.synth_end_s,
                                self.gpu_queue_s, self.pickup_s, self.gpu_start_s,
                                self.prove_start_s) if t is not None), default=float("-inf"))


def _last_step(job: _Post) -> int:
    """The place in `_STEP_ORDER` of the latest of its TIMELINE lines read (-1: none)."""
    read = (job.synth_start_s, job.synth_end_s, job.gpu_queue_s, job.pickup_s,
            job.gpu_start_s, job.end_s)
    return max((i for i, t in enumerate(read) if t is not None), default=-1)


def _span(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else max(0.0, b - a)


def _follows(gpu_end_s: float, done_s: float) -> bool:
    """A completion line at `done_s` can be the one of a GPU_END at `gpu_end_s`: the finalizer
    writes it after (TIMELINE's ms offsets and tracing's µs stamps: 50 ms of slack), within
    `PAIR_S` (another monolithic job's line, a batch's, is not taken for it)."""
    return -0.05 <= done_s - gpu_end_s <= PAIR_S


def _fit(job: _Post, done_s: float, total_ms: int | None) -> tuple[int, float] | None:
    """How well a completion line at `done_s` saying `total_ms` fits `job`, whose GPU work
    ended, the lower the better (None: it cannot be its line). `total_ms` counts from the
    request's submission (service.rs:51, engine.rs:838), which its `job enqueued` line follows
    by its wait for the job tracker lock (`TRACKER_LOCK_WAIT_S`), so with its arrival read the
    line places its submission from that wait before that arrival to the arrival itself (each
    `ARRIVAL_FIT_S` more for the clocks): there, the nearer, the likelier its own; outside, it
    is another job's, never its own, however few lines are left to choose from. Either not
    known: after those that fit. Two PoSt ending within `PAIR_S` were paired by their order
    alone: a WinningPoSt of 20.0 s said "10.6 s ... ok", the WindowPoSt's line taken for its
    own; and a line placing a PoSt's submission 25 s before its arrival (another PoSt's, whose
    arrival was not read) was still taken for its own, ahead of the PoSt it fit."""
    if job.end_s is None or not _follows(job.end_s, done_s):
        return None
    if total_ms is None or total_ms < 0 or job.arrived_s is None or job.engine_clock:
        return (1, 0.0)
    early_s = job.arrived_s - (done_s - total_ms / 1000.0)
    if not -ARRIVAL_FIT_S <= early_s <= TRACKER_LOCK_WAIT_S + ARRIVAL_FIT_S:
        return None
    return (0, abs(early_s))


def _total(span_s: float | None, phases: tuple[float | None, ...]) -> float | None:
    """A proof's total: from its begin to its last line, never shorter than one of its phases.
    Lines whose times go back (a TIMELINE line out of order or replayed, a tracing time that
    lies, a clock step) put a phase past the span: a total of 3.9 s with a synthesis of 39.2 s
    was "ok" against a 30 s deadline (a synthesis of 206 days, total 0.0 s, "ok")."""
    if span_s is None:
        return None
    return max([span_s, *(p for p in phases if p is not None)])


def _least_total(first_s: float | None, last_s: float | None,
                 phases: tuple[float | None, ...]) -> float | None:
    """The least a proof's total can be when its begin was not read: its first line read to
    its last, or its longest phase (None: nothing timed). A WinningPoSt whose log was followed
    from mid-proof, 44 s on the GPU against a 30 s deadline, was "unknown", counted among
    the proofs not late. A bound of 0 s (one line read: a stray `GPU_END`) bounds nothing and
    is None: it was said `more than 0.0 s` on the dashboard and `>0.0` in the report, a figure
    of 0 where none is known; so is one under `UNREAD_LEAST_S`, said `0.0` as well (lines a
    few ms apart: the oldest of more PoSt than are followed, given up `more than 0.0 s so
    far`)."""
    least = max((p for p in (_span(first_s, last_s), *phases) if p is not None), default=None)
    return least if least is not None and least >= UNREAD_LEAST_S else None


def _phase(a: float | None, b: float | None, now_s: float | None) -> float | None:
    """A phase from `a` to `b`; one begun and not ended counts up to `now_s` (when given)."""
    return _span(a, b if b is not None else now_s)


class PostTracker:
    """Follows every PoSt job through cuzk's lines; `feed` returns the proofs completed."""

    def __init__(self, deadlines: Deadlines | None = None, *, arrival_timed: bool = True,
                 holds: WorkerHolds | None = None, daemon: int = 0) -> None:
        """`holds`: the keeper of what the GPU workers hold that the gaps' rule keeps in this
        process (`PipelineFacts.holds`, fed the same lines), this tracker's daemon `daemon`
        there (its index in `gapwatch.cuzk.daemons`); None where no `PipelineFacts` is fed
        beside it (`gapwatch parse`): the tracker keeps and feeds its own."""
        self.deadlines = deadlines or Deadlines()
        #: Whether a line's arrival time is when it was written (followed live, within a poll
        #: period), or means nothing (`gapwatch parse` reads a file at once: docs/logs.md).
        #: Without it a PoSt whose TIMELINE lines lack their anchor is timed by their offsets.
        self.arrival_timed = arrival_timed
        #: The engine run's clock, "now" for a proof timed by its offsets (a new one when its
        #: offsets begin again: a proof keeps its run's), one a stream (`LogEvent.stream`):
        #: cuzk writes one run's TIMELINE lines to one stream, its stderr, and another
        #: stream's offsets are another daemon's clock (two daemons' logs followed from their
        #: end, their start lines not read: on one clock the PoSt daemon's offsets were "the
        #: offsets began again", the PoRep daemon's PoSt in flight said lost in a restart);
        #: the latest arrival of a line read (gapwatch's monotonic clock, s), which moves the
        #: clocks on (`_EngineClock.now`); and the latest time of a line that says when it
        #: was written: "now" on the wall.
        self._clocks: dict[str, _EngineClock] = {}
        self._mono_now_s: float | None = None
        #: Counts the times that monotonic clock went back (a recording across a reboot holds
        #: the arrivals of two boots): a lead read on another is not used.
        self._mono_run = 0
        self._wall_now_s: float | None = None
        #: The latest time of a line that says when it was written, per stream (`MAX_CLOCKS`
        #: streams, the one held longest forgotten for a new one): what bounds a TIMELINE line of
        #: that stream from below (`_timeline`). A file's lines are in the order they were written;
        #: two files are read one after the other (cuzk's stderr after its whole stdout,
        #: docs/logs.md), so another stream's time says nothing of when a line was written: the end
        #: of an hour of stdout was taken for it, and a WinningPoSt of 3.0 s was LATE, "more than
        #: 3600.0 s".
        self._stream_wall_s: OrderedDict[str, float] = OrderedDict()
        self._jobs: OrderedDict[str, _Post] = OrderedDict()
        self._enqueued: OrderedDict[str, float] = OrderedDict()
        #: SRS loads read, the latest `MAX_SRS_LOADS`: matched to a PoSt by time when its words
        #: are said (`_own_load`, `_queue_load`), not when read: cuzk writes tracing lines to
        #: stdout and TIMELINE to stderr, two files that may be read apart (docs/logs.md).
        self._srs_loads: deque[_SrsLoad] = deque(maxlen=MAX_SRS_LOADS)
        #: Circuits whose SRS was loaded in this run of cuzk (at most `SRS_CIRCUITS`), and
        #: whether the run's start line was read (else no load is known to be its first).
        self._srs_in_run: set[str] = set()
        self._start_read = False
        #: Each PoSt circuit's last use read (wall time: its load's end, a PoSt's SYNTH_END),
        #: the evictions read (`_SrsEviction`, the latest `MAX_SRS_LOADS`), and each PoSt
        #: kind's latest begin (`_Post.since_previous_s`).
        self._srs_used: dict[str, float] = {}
        self._evictions: deque[_SrsEviction] = deque(maxlen=MAX_SRS_LOADS)
        self._last_begin: dict[str, float] = {}
        #: Whether this run of cuzk proves on monolithic workers (`[pipeline] enabled =
        #: false`), as its start line or a monolithic worker's line said (None: not said);
        #: and whether the run's start line said it (then no other line decides).
        self._pipeline_off: bool | None = None
        self._pipeline_said_at_start = False
        #: Monolithic workers' lines read in a run whose start line said the pipeline is on:
        #: not that run's (see the module docstring), passed over.
        self.not_this_run = 0
        #: Lines of a PoSt whose job id is longer than `MAX_JOB_ID_CHARS`: passed over (said
        #: once, at the first).
        self.ids_too_long = 0
        #: What each worker holds now, the one rule of the gaps' free worker too
        #: (`gapwatch.cuzk.gpu_workers`: GPU_PICKUP until prove_start returned, where the
        #: worker loops back to the queue a PoSt waits in; a monolithic worker's job from its
        #: `processing job` line). One keeper a process: the gaps' (`PipelineFacts.holds`,
        #: which feeds it every line naming a worker and its daemons' restarts), where one is
        #: given, read here as daemon `_daemon`'s and told only what `PipelineFacts` does not
        #: read (the monolithic workers' jobs of this run, a restart seen by the offsets
        #: alone); else this tracker's own, fed here, as daemon 0's. Two copies fed the same
        #: lines cost the watcher ~6 % an event (docs/benchmarks.md).
        self._feeds_holds = holds is None
        self.holds = WorkerHolds() if holds is None else holds
        self._daemon = 0 if holds is None else daemon
        self.completed = 0
        #: PoSt ended (GPU_END) without a known arrival, waiting for their completion line; and
        #: completion lines not paired yet (time, total_ms).
        self._awaiting: list[_Post] = []
        self._completions: deque[tuple[float, int | None]] = deque(maxlen=16)
        #: The earliest data time at which `check` may say what it has not said: a proof in
        #: flight on the wall clock past its deadline, an ended one whose wait for its
        #: completion line (`PAIR_S`) is over. A bound from below (a proof that ended since
        #: leaves it early: one check for nothing), exact after each `check` and lowered as a
        #: line places a proof's begin (`_lower_due`). The watcher checks at the first data
        #: time past it (`gapwatch.cuzk.watch._DaemonWatch._moved_to`), so a proof is said late
        #: at the first time past its deadline, whatever moved "now" before it.
        self.due_s = math.inf
        #: PoSt given up because more than MAX_IN_FLIGHT were in flight (said as they go).
        self.given_up = 0
        #: What `_start` said while making room, and a retry's lines read again
        #: (`_retry_held`), returned by the `feed` that called it, before its own.
        self._said: list[ProverEvent] = []
        #: Job ids given up for room (the latest `MAX_GIVEN_UP_IDS`): their later lines are
        #: passed over.
        self._given_up_ids: OrderedDict[str, None] = OrderedDict()
        #: The `GPU_END` lines that ended a PoSt (`_end_key`), the latest `MAX_ENDED`; and how
        #: many such lines were read again (passed over).
        self._ended: OrderedDict[tuple[str, str, float], None] = OrderedDict()
        self.read_again = 0
        #: How many times TIMELINE offsets began again without a start line read (a restart
        #: seen only by its offsets: a log of stderr alone, its start lines on stdout).
        self.offsets_began_again = 0
        #: PoSt said failed (their failure line read: `_fail`), and the failed pipelined ones
        #: whose TIMELINE lines are still to be read (`_Apart`), the latest `MAX_FAILED_APART`.
        self.failed = 0
        self._apart: OrderedDict[str, _Apart] = OrderedDict()
        #: The stream of this run's start line while every PoSt of the run has been followed
        #: since (None: not so, or the start line not read): only then can a failure line that
        #: names no job be known to be a PoSt's (`_unnamed_failure`). And the jobs not split
        #: into partitions (a PoSt; a batch, `max_batch_size` above 1) between their GPU_START
        #: and GPU_END (job id -> stream), the latest `MAX_HELD`: those a finalizer's failure
        #: line can be of. A tracker is one daemon's (`gapwatch.cuzk.watch.CuzkWatch` feeds
        #: each daemon's lines to its own): both are that daemon's, another daemon's job on its
        #: own GPU no candidate (`gapwatch.cuzk.unnamed_failure`).
        self._whole_run = RunStream()
        self._on_gpu: OrderedDict[str, str] = OrderedDict()

    # -- feeding ------------------------------------------------------------------------------

    def feed(self, ev: LogEvent) -> list[ProverEvent]:
        if says_when_written(ev, self.arrival_timed):
            t = ev.t_wall_s
            if self._wall_now_s is None or t > self._wall_now_s:
                self._wall_now_s = t
            seen = self._stream_wall_s.get(ev.stream)
            if seen is None:  # a stream not held: the one insertion that may forget another
                keep_latest(self._stream_wall_s, ev.stream, t, MAX_CLOCKS)
            elif t > seen:  # every timed event: a plain assignment, no pop and re-insert
                self._stream_wall_s[ev.stream] = t
        # An arrival says when the engine was at least at a line's offset only where lines are
        # followed: `gapwatch parse` reads a file at once (its arrivals are a reading's).
        mono_s = (ev.t_arrival_mono_ns / 1e9
                  if self.arrival_timed and ev.t_arrival_mono_ns is not None else None)
        if mono_s is not None:
            self._read_at(mono_s)
        if ev.kind == "timeline":
            self._engine_clock_of(ev, mono_s)
        out = self._feed(ev)
        if ev.job_id is not None:
            self._lower_due(ev.job_id)
        if self._said:  # PoSt given up to make room for this one: said before it
            out, self._said = self._said + out, []
        return out

    def _lower_due(self, job_id: str) -> None:
        """A line of `job_id` was fed: when it is a proof in flight on the wall clock, its
        deadline (from its begin, which the line may have placed) lowers `due_s`. A proof
        timed by its engine's offsets has its "now" on that clock, not the data's: its
        deadline is found by the checks every `CHECK_EVERY_S` alone."""
        job = self._jobs.get(job_id)
        if job is None or job.said_late or job.engine_clock:
            return
        deadline, since = self.deadlines.of(job.kind), job.since_s()
        if deadline is not None and since is not None and since + deadline < self.due_s:
            self.due_s = since + deadline

    def _read_at(self, mono_s: float) -> None:
        """A line arrived at `mono_s` (gapwatch's monotonic clock, s): the latest arrival, on
        the clock of this boot."""
        if self._mono_now_s is not None and mono_s < self._mono_now_s - OFFSETS_BACK_S:
            self._mono_run += 1  # another boot's clock (stdout's and stderr's lines
            self._mono_now_s = None  # come a little out of arrival order: not this)
        if self._mono_now_s is None or mono_s > self._mono_now_s:
            self._mono_now_s = mono_s

    def line_read(self, mono_s: float) -> None:
        """A line fed before without its arrival was read live at `mono_s` (a `--log` file's
        copy of a recorded line: `gapwatch.cuzk.watch._DaemonWatch.line_read`): an arrival, as
        `feed` takes one. Not a lead for its engine clock: a `--log` file's TIMELINE line is
        placed by its anchor, never timed by its offsets (one without is dropped:
        `gapwatch.logs.files`)."""
        if self.arrival_timed:
            self._read_at(mono_s)

    def heard_at(self, mono_s: float) -> None:
        """Followed live, every line written before the reader's monotonic clock read `mono_s`
        has been read (`CuzkWatch.at`): a time later than any arrival, by which a proof timed
        on its engine's offsets is at least as far on (`_EngineClock.now`) as by an arrival
        then. Not where arrivals mean nothing (`arrival_timed` False)."""
        if self.arrival_timed and self._mono_now_s is not None and mono_s > self._mono_now_s:
            self._mono_now_s = mono_s

    def _feed(self, ev: LogEvent) -> list[ProverEvent]:
        # Most events name no worker: that test first, as `PipelineFacts.feed` makes it.
        if ev.worker is not None and self._feeds_holds:
            self.holds.feed(ev, 0)
        if ev.job_id is not None and len(ev.job_id) > MAX_JOB_ID_CHARS:
            return self._id_too_long(ev, ev.job_id)
        if ev.kind == "timeline":
            return self._timeline(ev)
        if ev.kind == "tracing" and ev.fields.get("spans") == MONOLITHIC_SPAN:
            if self._stray_monolithic():
                return []
            return self._monolithic(ev)
        if (ev.kind == "tracing" and ev.level == "ERROR" and ev.name in GPU_WORKER_FAILED_MESSAGES
                and ev.fields.get("spans") == GPU_WORKER_SPAN):
            return self._gpu_worker_failed(ev)
        if (ev.kind == "tracing" and ev.level == "ERROR" and ev.job_id is None
                and ev.name in _UNNAMED_FAILED):
            return self._unnamed_failure(ev)
        if ev.kind == "tracing" and ev.name == JOB_ENQUEUED_MESSAGE and ev.job_id is not None:
            kind = post_kind(_str(ev.fields.get("proof_kind")), ev.job_id)
            if kind is not None:  # followed from its arrival: late even before synthesis
                job = self._start(ev.job_id, kind, ev.t_wall_s)
                if not job.engine_clock:
                    job.arrived_s = ev.t_wall_s
                    self._began(job)
                if self._pipeline_off is not False:  # a monolithic worker may take it
                    job.arrival_behind = _behind(self.holds, self._daemon, job.job)
                    _behind_at_arrival(job)
                return []
            self._enqueued[ev.job_id] = ev.t_wall_s
            self._enqueued.move_to_end(ev.job_id)
            while len(self._enqueued) > MAX_ENQUEUED:
                self._enqueued.popitem(last=False)
        elif ev.kind == "tracing" and ev.name == COMPLETED:
            named = self._named_completion(ev)
            if named is not None:
                return named
            return self._completion(ev.t_wall_s, int_field(ev.fields.get("total_ms")))
        elif ev.kind == "tracing" and ev.name.startswith(SRS_LOADING_MESSAGE):
            circuit = _str(ev.fields.get("circuit_id")) or "?"
            first = self._first_load(circuit)
            self._srs_loads.append(_SrsLoad(circuit, ev.t_wall_s, first_in_run=first))
        elif ev.kind == "tracing" and ev.name == SRS_EVICTED_MESSAGE:
            # It was in memory in this run: its next load is a reload, not a cold one.
            circuit = _str(ev.fields.get("circuit_id")) or "?"
            self._first_load(circuit)
            if circuit in POST_CIRCUIT_KINDS:
                self._evicted(circuit, ev)
        elif ev.kind == "tracing" and ev.name == ANCHOR_MESSAGE:
            # cuzk's start line: only after it is a load known to be the run's first.
            self._start_read = True  # this run's loads are all read from here on
            self._whole_run.started(ev.stream)
            enabled = ev.fields.get("pipeline_enabled")
            self._pipeline_off = (not enabled) if isinstance(enabled, bool) else None
            self._pipeline_said_at_start = isinstance(enabled, bool)
        elif ev.kind == "tracing" and ev.name == MONOLITHIC_WORKER_STARTED_MESSAGE:
            if not self._stray_monolithic():
                self._pipeline_off = True
        elif ev.kind == "tracing" and ev.name.startswith(SRS_LOADED_MESSAGE):
            self._srs_loaded(_str(ev.fields.get("circuit_id")) or "?", ev.t_wall_s,
                             int_field(ev.fields.get("elapsed_ms")))
        return []

    def _id_too_long(self, ev: LogEvent, job_id: str) -> list[ProverEvent]:
        """A line naming a job by an id longer than `MAX_JOB_ID_CHARS`: passed over (no such
        job is followed); a PoSt's is counted, and the first said (see the module
        docstring)."""
        kind = post_kind(_str(ev.fields.get("kind")) or _str(ev.fields.get("proof_kind")),
                         job_id)
        if kind is None:
            return []
        self.ids_too_long += 1
        if self.ids_too_long > 1:
            return []
        # Said as a proof not timed (verdict "unknown": `GapwatchPoStNotTimed`, "lines lost or
        # cut"), once: a "warning" event is cuzk's pool churning to every reader of that kind.
        timing = ProofTiming(proof_kind=kind, verdict="unknown",
                             deadline_s=self.deadlines.of(kind))
        return [ProverEvent(
            t_wall_s=ev.t_wall_s, kind="proof", level=_LEVEL["unknown"],
            message=fmt.visible(
                f"{POST_NAMES.get(kind, kind)} job ids longer than {MAX_JOB_ID_CHARS} "
                f"characters ({job_id[:48]}...): gapwatch keeps no more of an id, so "
                "two such jobs cannot be told apart; their lines are passed over, none of "
                "them timed or judged against its deadline (Curio's ids are tens of "
                "characters)"), job_id=f"{job_id[:48]}...", proof=timing)]

    def _stray_monolithic(self) -> bool:
        """Whether a monolithic worker's line read now is not this run's: its start line said
        the pipeline is on (see the module docstring). Counted in `not_this_run`; the caller
        passes the line over."""
        if self._pipeline_said_at_start and self._pipeline_off is False:
            self.not_this_run += 1
            return True
        return False

    def _monolithic(self, ev: LogEvent) -> list[ProverEvent]:
        """A line in a monolithic worker's span (the pipeline off): what the worker holds now,
        and, of a PoSt, when the worker took it (`processing job (monolithic)`) or its end: its
        completion line, or its failure (`proof failed` / `proof task panicked`, which the span
        names: said failed at once, `_fail`). Either frees the worker."""
        self._pipeline_off = True
        name, job_id, w = ev.name, ev.job_id, ev.worker
        if job_id is None:
            return []
        proof_kind = _str(ev.fields.get("proof_kind"))
        if name not in MONOLITHIC_JOB_MESSAGES:
            return []
        self.holds.monolithic(ev, self._daemon)
        kind = post_kind(proof_kind, job_id)
        if kind is None:
            return []
        if name in MONOLITHIC_FAILED_MESSAGES:
            return self._fail(ev, job_id, kind, one_step=True)
        done = name == MONOLITHIC_COMPLETED_MESSAGE
        key = _end_key(ev, job_id)
        if done and self._ended_line_again(key):
            return []
        job = self._job_of(job_id, kind, ev.t_wall_s)
        if job is None:
            return []
        job.one_step = True
        _behind_at_arrival(job)
        if not done:
            job.prove_start_s = ev.t_wall_s
            job.worker = w
            job.gpu = ev.gpu if ev.gpu is not None else job.gpu
            return []
        done_s = self._one_step_done(job, ev.t_wall_s, int_field(ev.fields.get("total_ms")),
                                     int_field(ev.fields.get("queue_ms")))
        self._jobs.pop(job.job, None)
        keep_latest(self._ended, key, None, MAX_ENDED)
        self.completed += 1
        return [self._event(job, done_s, done=True)]

    def _ended_line_again(self, key: tuple[str, str, float]) -> bool:
        """Whether the line that ended a PoSt (`_end_key`: a `GPU_END`, a completion or failure
        line) is read again (a recording's log events and the `--log` file they came from, a
        log given twice, a file read again from its start): the same line, not a second proof.
        Taken as one, a `GPU_END` was a second row "not timed" (`GapwatchPoStNotTimed` fired),
        and with its completion line read twice as well a second LATE proof, 35.9 s of a
        finalize phase, with a setting for it. Passed over with its job's lines read again
        before it (a whole log twice)."""
        if key not in self._ended:
            return False
        self.read_again += 1
        self._jobs.pop(key[0], None)
        return True

    def _job_of(self, job_id: str, kind: str, t_s: float) -> _Post | None:
        """The PoSt `job_id` in flight, begun now if its earlier lines were not read; None for
        the rest of one given up for room (its last word was said)."""
        job = self._jobs.get(job_id)
        if job is None and job_id not in self._given_up_ids:
            job = self._start(job_id, kind, t_s)
        return job

    def _gpu_worker_failed(self, ev: LogEvent) -> list[ProverEvent]:
        """A pipelined job's GPU step failed, in its GPU worker's span, which names the job
        (`GPU_WORKER_FAILED_MESSAGES`): a PoSt (no partition) is said failed at once (`_fail`)
        and its worker is free again (engine.rs:3281, 3284-3286). A partition's failure fails its
        whole job (a PoRep's, a SnapDeals'): no PoSt."""
        job_id = ev.job_id
        if job_id is None or ev.partition is not None:
            return []
        self._on_gpu.pop(job_id, None)  # off the GPU, whatever its kind (no GPU_END comes)
        kind = post_kind(_str(ev.fields.get("proof_kind")), job_id)
        if kind is None:
            return []
        return self._fail(ev, job_id, kind, one_step=False)

    def _unnamed_failure(self, ev: LogEvent) -> list[ProverEvent]:
        """An ERROR line naming no job: a PoSt's failure only where exactly one PoSt can be
        its job, never a guess among several (see the module docstring). cuzk writes one
        run's TIMELINE lines and tracing lines to one file only where both go there (`2>&1`,
        the journal): read there, in the order written, every line written before this one
        was read before it, and with the run followed from its start line nothing of it was
        missed. So only on the stream of the run's start line (`_whole_run`, the rule of
        `gapwatch.cuzk.unnamed_failure`, which `PipelineFacts` follows too):
        - `synthesis failed` / `... task panicked` in `synth_single{proof_kind}` (engine.rs:
          2855, 2870, 2099): the PoSt of that kind whose SYNTH_START (2665) was read and its
          SYNTH_END (2745) not, when it is the only one;
        - `GPU proving failed` / `... task panicked` in no span, the split prove's finalizer
          (977, 998 via 3257): the job whose GPU_START (3131) was read and its GPU_END (3196)
          not, of any kind (`_on_gpu`), when it is the only one and a PoSt."""
        if not self._whole_run.reads_whole(ev.stream):
            return []
        spans = ev.fields.get("spans")
        if ev.name in SINGLE_SYNTH_FAILED_MESSAGES and spans == SYNTH_SINGLE_SPAN:
            kind = post_kind(_str(ev.fields.get("proof_kind")), None)
            in_synthesis = [job for job in self._jobs.values()
                            if job.kind == kind and not job.one_step
                            and job.synth_start_s is not None and job.synth_end_s is None]
            if len(in_synthesis) != 1 or not self._whole_run.in_order(ev.stream,
                                                                       in_synthesis[0].stream):
                return []
            job = in_synthesis[0]
            job.failed_in_synthesis = True
            return self._fail(ev, job.job, job.kind, one_step=False)
        if ev.name in FINALIZER_FAILED_MESSAGES and spans is None:
            if len(self._on_gpu) != 1:
                return []
            [(job_id, on)] = self._on_gpu.items()
            if not self._whole_run.in_order(ev.stream, on):
                return []
            del self._on_gpu[job_id]  # its job's: its GPU_END will not come
            on_gpu = self._jobs.get(job_id)
            if (on_gpu is None or on_gpu.one_step or on_gpu.gpu_start_s is None
                    or on_gpu.end_s is not None):
                return []  # a batch's, no PoSt
            return self._fail(ev, job_id, on_gpu.kind, one_step=False)
        return []

    def _fail(self, ev: LogEvent, job_id: str, kind: str, one_step: bool
              ) -> list[ProverEvent]:
        """The line `ev` says the PoSt `job_id` failed: it is said so now, with the line's
        words, its last word (it is not followed further, so never said late after). One whose
        lines were not read before (a log followed from mid-proof) is said failed too, its
        time not known. The same line read again is passed over (`_ended_line_again`)."""
        key = _end_key(ev, job_id)
        if self._ended_line_again(key):
            return []
        job = self._job_of(job_id, kind, ev.t_wall_s)
        if job is None:
            return []
        if one_step:
            job.one_step = True
            _behind_at_arrival(job)
        job.gpu = ev.gpu if ev.gpu is not None else job.gpu
        # Its failure on its clock: the line's wall time (never before its own lines), or, on
        # the engine clock, the least it ran (its latest offset: a wall time is not comparable).
        t = job.latest_s() if job.engine_clock else max(ev.t_wall_s, job.latest_s())
        job.failed_s = t
        job.error = cut_text(error_words(ev), MAX_ERROR_CHARS)
        job.failed_by = ev.name
        self._jobs.pop(job_id, None)
        keep_latest(self._ended, key, None, MAX_ENDED)
        if not job.one_step and job.synth_start_s is None:
            keep_latest(self._apart, job_id, _Apart(ev.t_wall_s, _last_step(job)),
                        MAX_FAILED_APART)
        self.failed += 1
        return [self._event(job, t, done=True, said_s=ev.t_wall_s)]

    def _passed_apart(self, ev: LogEvent, job_id: str, engine_s: float | None) -> bool:
        """Whether a TIMELINE line is a failed proof's own, read after its failure (`_Apart`):
        passed over. A line that is not (a retry's) ends the wait for them."""
        apart = self._apart.get(job_id)
        if apart is None:
            return False
        step = _STEP_ORDER.get(ev.name)
        if engine_s is None:  # on the wall clock: its own were written before its failure
            own = ev.t_wall_s <= apart.failed_s + CLOCK_SLACK_S
        else:  # on the engine clock: its own go on from its latest, and are never a GPU_END
            own = step is None or apart.last_step < step < _STEP_ORDER["GPU_END"]
        if not own:
            del self._apart[job_id]
            if ev.name == "GPU_END":
                self._said += self._retry_held(apart.held, ev)
            return False
        if step is not None:
            apart.last_step = step
            if engine_s is not None:
                apart.held.append(ev)
        return True

    def _retry_held(self, held: list[LogEvent], gpu_end: LogEvent) -> list[ProverEvent]:
        """A retry's GPU_END came on from the lines held as its failed attempt's (`_Apart`):
        they were the retry's, read again as such before it (those of its run: offsets not
        after the GPU_END's; a run begun again since is another)."""
        end_ms = _offset_ms(gpu_end)
        out: list[ProverEvent] = []
        for ev in held:
            offset = _offset_ms(ev)
            if end_ms is not None and offset is not None and offset <= end_ms:
                out += self._timeline(ev)
        return out

    @staticmethod
    def _one_step_done(job: _Post, t: float, total_ms: int | None, queue_ms: int | None
                       ) -> float:
        """Its completion line at `t`: done then (returned); cuzk's `total_ms` (from
        submission) places its arrival and `total_ms - queue_ms` (the prover's own total) its
        prove start, each only when its line was not read (as `_arrived` places a pipelined
        one's arrival); a negative or inconsistent figure places nothing."""
        done_s = job.done_s = t if job.prove_start_s is None else max(t, job.prove_start_s)
        if total_ms is None or total_ms < 0:
            return done_s
        if job.arrived_s is None and not job.engine_clock:
            arrived = t - total_ms / 1000.0
            job.arrived_s = arrived if job.prove_start_s is None else min(arrived,
                                                                          job.prove_start_s)
        if job.prove_start_s is None and queue_ms is not None and 0 <= queue_ms <= total_ms:
            start = t - (total_ms - queue_ms) / 1000.0
            job.prove_start_s = start if job.arrived_s is None else max(start, job.arrived_s)
        return done_s

    def _first_load(self, circuit: str) -> bool:
        """Whether a load of `circuit` now is its first since cuzk started, as far as read: only
        when the run's start line was read (a log followed from its end, anchored by /status,
        may have missed the loads before), and only for a circuit cuzk has; it is then kept."""
        if circuit not in SRS_CIRCUITS:
            return False
        first = self._start_read and circuit not in self._srs_in_run
        self._srs_in_run.add(circuit)
        return first

    def _evicted(self, circuit: str, ev: LogEvent) -> None:
        """A PoSt circuit's SRS evicted (`_SrsEviction`): its idle time by its last use read."""
        last = self._srs_used.pop(circuit, None)
        budget = int_field(ev.fields.get("budget_available_gib"))
        # A last use read after the eviction's own time (clocks apart) says no idle time.
        self._evictions.append(_SrsEviction(
            circuit, ev.t_wall_s, last if last is not None and ev.t_wall_s >= last else None,
            budget))

    def _eviction_before(self, load: _SrsLoad) -> _SrsEviction | None:
        """The latest eviction of `load`'s circuit read before it began."""
        return next((e for e in reversed(self._evictions) if e.circuit == load.circuit
                     and e.t_s <= load.began_s + CLOCK_SLACK_S), None)

    def _began(self, job: _Post) -> None:
        """Its begin is read (wall clock): the time since the previous PoSt of its kind."""
        begin = job.begin_s()
        if begin is None or job.engine_clock or job.since_previous_s is not None:
            return
        last = self._last_begin.get(job.kind)
        if last is not None and begin > last:
            job.since_previous_s = begin - last
        self._last_begin[job.kind] = begin

    def _srs_loaded(self, circuit: str, t: float, elapsed_ms: int | None) -> None:
        """An SRS load ended: its elapsed time goes to the latest open load of its circuit
        (loads run one at a time, under the manager's mutex), or, its begin not read, a load
        placed by it. A negative `elapsed_ms` is no duration: not said."""
        if circuit in POST_CIRCUIT_KINDS:
            self._srs_used[circuit] = t  # srs_manager.rs:211-215: last_used at its load
        took = elapsed_ms if elapsed_ms is not None and elapsed_ms >= 0 else None
        for i in range(len(self._srs_loads) - 1, -1, -1):
            load = self._srs_loads[i]
            if load.circuit == circuit and load.elapsed_ms is None:
                self._srs_loads[i] = _SrsLoad(circuit, load.began_s, took, load.first_in_run)
                return
        if took is not None:
            self._srs_loads.append(_SrsLoad(circuit, t - took / 1000.0, took,
                                            self._first_load(circuit)))

    def _own_load(self, job: _Post, now_s: float) -> _SrsLoad | None:
        """The job's own SRS load: of its circuit, begun inside its synthesis phase (from
        SYNTH_START to SYNTH_END, or to `now_s` while it runs), where cuzk loads it
        (engine.rs:2717-2721). None on the engine clock: its offsets and a tracing line's wall
        time cannot be compared."""
        circuit = POST_CIRCUITS.get(job.kind)
        if job.engine_clock or job.synth_start_s is None or circuit is None:
            return None
        lo = job.synth_start_s - CLOCK_SLACK_S
        hi = (job.synth_end_s if job.synth_end_s is not None else now_s) + CLOCK_SLACK_S
        return next((load for load in reversed(self._srs_loads)
                     if load.circuit == circuit and lo <= load.began_s <= hi), None)

    def _queue_load(self, job: _Post, now_s: float) -> _SrsLoad | None:
        """Another job's SRS load that ran while this one waited in the queue (from its arrival
        to SYNTH_START, or to `now_s`): never its own, which comes after SYNTH_START. None
        without its arrival or on the engine clock (see `_own_load`)."""
        if job.engine_clock or job.arrived_s is None:
            return None
        lo = job.arrived_s - CLOCK_SLACK_S
        hi = (job.synth_start_s if job.synth_start_s is not None else now_s) + CLOCK_SLACK_S
        return next((load for load in reversed(self._srs_loads)
                     if load.began_s <= hi and load.ended_s() >= lo), None)

    def forget(self, job_id: str) -> None:
        """A job said lost otherwise (`gpu_queue`): not followed any more."""
        self._jobs.pop(job_id, None)

    def restart(self, at_s: float) -> list[ProverEvent]:
        """The prover started again at `at_s`: its jobs in flight are gone (said as lost, once,
        their phases up to then)."""
        out = [self._lost_in_restart(job, at_s) for job in self._jobs.values()]
        self._jobs.clear()
        self._srs_in_run.clear()  # a new process holds no SRS: its first loads are cold
        self._srs_used.clear()  # nor any last use of one
        self._given_up_ids.clear()
        # `_ended` is kept: a log read twice reads its first run's start again, which is a
        # restart here, and its PoSt's GPU_END after it is still that line (bounded by
        # MAX_ENDED; a new run's job at the same offset under the same id is not a case).
        self._clocks.clear()
        if self._feeds_holds:  # the gaps' keeper: `PipelineFacts` ends them at this restart
            self.holds.restarted(0, at_s)  # (the same `RestartWatch` rule, the same lines)
        self._on_gpu.clear()
        self._whole_run.lost()  # until its start line is read
        # A new run: its own start line (read after this, where it is read) says again how
        # it proves; until then a monolithic worker's line may.
        self._pipeline_said_at_start = False
        return out

    def _timeline(self, ev: LogEvent) -> list[ProverEvent]:
        job_id, name = ev.job_id, ev.name
        if job_id is None:
            return []
        engine_s = self._engine_time(ev)
        if self._apart and ev.partition is None and self._passed_apart(ev, job_id, engine_s):
            return []
        self._track_gpu(ev, name, job_id)
        on_engine = self._jobs.get(job_id)
        if engine_s is None and on_engine is not None and on_engine.engine_clock:
            # A proof timed by its offsets stays on that clock: its lines read after the
            # backlog (followed live) carry their offsets too.
            engine_s = self._offset_time(ev)
        if name == "GPU_END" and self._ended_line_again(_end_key(ev, job_id)):
            return []
        job = self._jobs.get(job_id)
        if job is None:
            if ev.partition is not None:
                return []
            if job_id in self._given_up_ids and name != "SYNTH_START":
                # The rest of a proof given up for room: its last word was said. Taken as a
                # new proof, it was a second row (one PoSt counted twice, "? of its deadline")
                # and pushed the next-oldest out in its turn.
                return []
            kind = post_kind(_str(ev.fields.get("kind")), job_id)
            if kind is None:
                return []
            job = self._start(job_id, kind, ev.t_wall_s)
        if engine_s is not None and not job.engine_clock:
            job.clock = self._clock(ev.stream)
            # Written after its stream's lines read before it: in flight at least from its
            # `job enqueued` to the latest of those that says when it was written.
            written_after_s = self._stream_wall_s.get(ev.stream)
            if job.arrived_s is not None and written_after_s is not None:
                job.wall_least_s = max(0.0, written_after_s - job.arrived_s) or None
            job.arrived_s = None  # its `job enqueued` time is on the wall clock, not this one
        # Placed as an untimed line of a file is ("around", docs/logs.md): at the latest line
        # that says when it was written, else where it was read.
        job.wall_s = (self._wall_now_s if engine_s is not None and self._wall_now_s is not None
                      else ev.t_wall_s)
        job.stream = ev.stream
        if not job.engine_clock:
            return self._step(job, ev, name, ev.t_wall_s)
        if engine_s is None:
            return []  # an anchored line, or an offset past 64 bits: not on its clock
        return self._step(job, ev, name, engine_s)

    def _engine_clock_of(self, ev: LogEvent, mono_s: float | None) -> None:
        """What a TIMELINE line says of the engine clock: an offset well behind its latest is a
        new engine run's, on a clock of its own (`OFFSETS_BACK_S`); with its arrival, the least
        lead it gives. On one clock, the old run's offsets were "now" for the new run's proofs:
        across a restart whose start line was not read (cuzk's stderr alone: its start lines
        are on stdout) a WinningPoSt of 3.8 s was said LATE, "more than 930.0 s", while it ran
        (an error, `--on-event` run). The old run's proofs in flight are gone with it, said as
        lost in a restart once, as `restart` says them (kept, they counted up by arrival for
        good: "running 3620 s of 30 s, LATE" on the footer an hour after the run had died)."""
        offset = _offset_ms(ev)
        if offset is None:
            return
        offset_s = offset / 1000.0
        # Behind the latest offset read, not behind "now" as the arrivals extrapolate it: lines
        # read in batches (a log on NFS seen every 30 s) arrive well after they were written,
        # and the first of each batch read as a new run, its proofs said lost.
        clock = self._clock(ev.stream)
        if offsets_began_again(clock.latest_s, offset_s):
            self.offsets_began_again += 1
            self._lose_run(clock, ev.t_wall_s)
            clock = self._clocks[ev.stream] = _EngineClock()
            # A restart no start line said: `PipelineFacts` does not see it, so the keeper is
            # told here, whoever's it is (its old run's holds died with it).
            self.holds.restarted(self._daemon, ev.t_wall_s)
            self._on_gpu.clear()
            self._whole_run.lost()  # a new run, its start line not read
            self._pipeline_said_at_start = False  # a new run, its start line not read
        clock.read(offset_s, mono_s, self._mono_run)

    def _clock(self, stream: str) -> _EngineClock:
        """The engine clock of the TIMELINE lines of `stream` (made at its first line)."""
        clock = self._clocks.get(stream)
        if clock is None:
            clock = _EngineClock()
            keep_latest(self._clocks, stream, clock, MAX_CLOCKS)
        return clock

    def _lose_run(self, clock: _EngineClock, at_s: float) -> None:
        """The proofs timed on `clock`, an engine run that is over, said lost in its restart
        (before the line that showed it: `_said`) and forgotten."""
        gone = [job for job in self._jobs.values() if job.clock is clock]
        for job in gone:
            self._said.append(self._lost_in_restart(job, at_s))
            del self._jobs[job.job]

    def _lost_in_restart(self, job: _Post, at_s: float) -> ProverEvent:
        """`job`'s last word: lost in a restart at `at_s` (data time), its phases up to then."""
        return self._gone(job, "restart", max(self._on_clock(job, at_s), job.latest_s()),
                          said_s=at_s)

    def _engine_time(self, ev: LogEvent) -> float | None:
        """A TIMELINE line's time on the engine clock (its offset, s) when its arrival means
        nothing and no anchor placed it (`arrival_timed`), else None (its wall time holds)."""
        if says_when_written(ev, self.arrival_timed):
            return None
        return self._offset_time(ev)

    @staticmethod
    def _offset_time(ev: LogEvent) -> float | None:
        """A TIMELINE line's offset in seconds (None: none that fits)."""
        offset = _offset_ms(ev)
        return None if offset is None else offset / 1000.0

    def _on_clock(self, job: _Post, wall_s: float) -> float:
        """`wall_s` ("now", from the data's wall time) on `job`'s clock: its engine run's "now"
        for a proof timed by its offsets."""
        if job.clock is not None:
            engine_now = job.clock.now(self._mono_now_s, self._mono_run)
            if engine_now is not None:
                return engine_now
        return wall_s

    def _start(self, job_id: str, kind: str, now_s: float) -> _Post:
        job = self._jobs.get(job_id)
        if job is not None:
            return job
        job = self._jobs[job_id] = _Post(job_id, kind, arrived_s=self._enqueued.pop(job_id, None),
                                         one_step=self._pipeline_off is True)
        while len(self._jobs) > MAX_IN_FLIGHT:
            # Memory stays bounded, but the oldest is said once (its phases so far), never
            # dropped unseen: 100,000 PoSt ids that never end were 256 rows, the rest lost.
            _, old = self._jobs.popitem(last=False)
            self.given_up += 1
            self._said.append(self._gone(old, "too_many", self._on_clock(old, now_s)))
            self._whole_run.lost()  # a PoSt of the run no longer followed
            self._given_up_ids[old.job] = None
            if len(self._given_up_ids) > MAX_GIVEN_UP_IDS:
                self._given_up_ids.popitem(last=False)
        self._given_up_ids.pop(job_id, None)  # started again: a new proof (a SYNTH_START)
        return job

    def _track_gpu(self, ev: LogEvent, name: str, job_id: str) -> None:
        """A job not split into partitions on the GPU from its GPU_START to its GPU_END
        (`_on_gpu`); more than `MAX_HELD` at once (junk ids that never end) and a finalizer's
        failure line can be of one no longer held: none is then known to be alone there."""
        if ev.partition is not None:
            return
        if name == "GPU_START":
            if keep_latest(self._on_gpu, job_id, ev.stream, MAX_HELD):
                self._whole_run.lost()
        elif name == "GPU_END":
            self._on_gpu.pop(job_id, None)

    def _step(self, job: _Post, ev: LogEvent, name: str, t: float) -> list[ProverEvent]:
        if name == "SYNTH_START":
            job.synth_start_s = t
            self._began(job)
        elif name == "SYNTH_END":
            job.synth_end_s = t
            circuit = POST_CIRCUITS.get(job.kind)
            if circuit is not None and not job.engine_clock:
                # `ensure_loaded` just before it (engine.rs:2717-2721) refreshed its last use.
                self._srs_used[circuit] = t
        elif name == "GPU_QUEUE":
            job.gpu_queue_s = t
            job.waited_behind, job.waited_behind_more = _behind(self.holds, self._daemon,
                                                                job.job)
        elif name == "GPU_PICKUP":
            job.pickup_s, job.worker, job.gpu = t, ev.worker, ev.gpu
        elif name == "GPU_START":
            job.gpu_start_s = t
            job.gpu = ev.gpu if ev.gpu is not None else job.gpu
        elif name == "GPU_END":
            job.end_s = t
            self._jobs.pop(job.job, None)
            keep_latest(self._ended, _end_key(ev, job.job), None, MAX_ENDED)
            self.completed += 1
            return self._pair(job)
        return []

    def _pair(self, job: _Post) -> list[ProverEvent]:
        """A PoSt's GPU work ended: its completion line (read already, or soon) says when its
        result was processed (the finalize phase), and its arrival when that was not read."""
        end = job.end_s if job.end_s is not None else 0.0
        if job.engine_clock:
            # Its completion line is timed on the wall clock, its GPU_END by an offset: no
            # pairing across clocks; said now, its finalize not known.
            return [self._event(job, end, done=True)]
        fits = [(fit, i) for i, (t, total_ms) in enumerate(self._completions)
                 if (fit := _fit(job, t, total_ms)) is not None]
        if fits:  # the one whose total places its arrival best, else the oldest
            best = min(fits)[1]
            t, total_ms = self._completions[best]
            del self._completions[best]
            return [self._arrived(job, t, total_ms)]
        self._awaiting.append(job)
        if end + PAIR_S < self.due_s:  # said without its completion line past that
            self.due_s = end + PAIR_S
        if len(self._awaiting) > MAX_AWAITING:  # never paired: said without, oldest first
            first = self._awaiting.pop(0)
            return [self._event(first, first.end_s if first.end_s is not None else 0.0, True)]
        return []

    def _named_completion(self, ev: LogEvent) -> list[ProverEvent] | None:
        """A completion line inside the GPU worker's span, which names its job (`gpu_worker{
        job_id ...}`, engine.rs:3005-3012): cuzk proved it in one synchronous call there
        (`CUZK_DISABLE_SPLIT_PROVE=1`, engine.rs:3078-3118; or a build without
        cuda-supraseal, 3349), which writes no GPU_START or GPU_END. Such a PoSt ends here,
        its GPU phase not known (no line splits it from its wait and result). A PoSt whose
        GPU_END was read (awaiting its completion) is paired with its own line, not by time.
        None: the line names no PoSt followed (the split prove's finalizer writes it outside
        any span, engine.rs:3185-3257: paired by time, `_completion`)."""
        job_id = ev.job_id
        if job_id is None:
            return None
        total_ms = int_field(ev.fields.get("total_ms"))
        for waiting in self._awaiting:
            if waiting.job == job_id:
                self._awaiting.remove(waiting)
                return [self._arrived(waiting, ev.t_wall_s, total_ms)]
        key = _end_key(ev, job_id)
        if self._ended_line_again(key):
            return []
        job = self._jobs.get(job_id)
        if job is None or job.end_s is not None:
            return None
        del self._jobs[job_id]
        keep_latest(self._ended, key, None, MAX_ENDED)
        self.completed += 1
        if job.engine_clock:
            # Timed by its offsets (no start line read): the line's wall time is on another
            # clock, so it ends at the least it ran, its latest offset, its arrival not placed
            # (as `_fail` does): paired across the clocks it was said LATE by months.
            job.done_s = job.latest_s()
            return [self._event(job, job.done_s, done=True, said_s=ev.t_wall_s)]
        return [self._arrived(job, ev.t_wall_s, total_ms)]

    def _completion(self, t: float, total_ms: int | None) -> list[ProverEvent]:
        fits = [(fit, i) for i, job in enumerate(self._awaiting)
                if (fit := _fit(job, t, total_ms)) is not None]
        if fits:  # its own where its total places a job's arrival, else the oldest ended
            job = self._awaiting.pop(min(fits)[1])
            return [self._arrived(job, t, total_ms)]
        self._completions.append((t, total_ms))
        return []

    def _arrived(self, job: _Post, t: float, total_ms: int | None) -> ProverEvent:
        """Its completion line at `t`: done then; its arrival, when not read, from cuzk's
        `total_ms` (submission to completion), never after its synthesis started."""
        job.done_s = max(t, job.end_s) if job.end_s is not None else t
        # A negative total_ms is no duration (it placed the arrival after synthesis start,
        # clamped there: a queue of 0.0 s where none was read); it places nothing.
        if total_ms is not None and total_ms >= 0 and job.arrived_s is None:
            arrived = t - total_ms / 1000.0
            first = job.synth_start_s if job.synth_start_s is not None else arrived
            job.arrived_s = min(arrived, first)
        return self._event(job, job.done_s, done=True)

    def waits(self) -> bool:
        """Whether `check` may say anything as time moves on: a proof in flight, or one ended
        whose completion line did not come yet (`CuzkWatch.waits`)."""
        return bool(self._jobs) or bool(self._awaiting)

    def check(self, now_s: float) -> list[ProverEvent]:
        """Proofs still running past their deadline at data time `now_s`: said late once; and
        ended ones whose completion line did not come: said without it."""
        out = self._unpaired(now_s)
        # What is still to say, and when it is due (`due_s`): those still waiting for their
        # completion line, and those in flight on the wall clock not yet past their deadline.
        due = min((j.end_s + PAIR_S for j in self._awaiting if j.end_s is not None),
                  default=math.inf)
        for job in self._jobs.values():
            deadline = self.deadlines.of(job.kind)
            # Its begin, else its first line read: in flight longer than its deadline since
            # then is late whenever it began (a log followed from mid-proof).
            begin = job.since_s()
            if job.said_late or deadline is None or begin is None:
                continue
            now = self._on_clock(job, now_s)
            if now - begin <= deadline:
                if not job.engine_clock and begin + deadline < due:
                    due = begin + deadline
                continue
            job.said_late = True
            out.append(self._event(job, now, done=False, said_s=now_s))
        self.due_s = due
        return out

    def running(self, now_s: float) -> list[RunningProof]:
        """The PoSt in flight at data time `now_s` (those whose GPU work ended and whose
        completion line has not come are in their finalize), the most of their deadline used
        first: what the dashboard says of them while they run."""
        out = [RunningProof(job.job, POST_NAMES.get(job.kind, job.kind),
                            self.timing(job, self._on_clock(job, now_s), done=False),
                            _phase_of(job))
               for job in (*self._jobs.values(), *self._awaiting) if job.since_s() is not None]
        out.sort(key=lambda r: -(r.used_share or 0.0))
        return out

    def _unpaired(self, now_s: float | None) -> list[ProverEvent]:
        gone = [j for j in self._awaiting if now_s is None or j.end_s is None
                or now_s - j.end_s > PAIR_S]
        for job in gone:
            self._awaiting.remove(job)
        return [self._event(j, j.end_s if j.end_s is not None else 0.0, done=True) for j in gone]

    def finish(self, now_s: float | None) -> list[ProverEvent]:
        """End of data: ended proofs are said, those still running as such (late, at risk, on
        time, or not known: one followed from mid-proof was dropped here, while `check` said
        it late past its deadline)."""
        out = self._unpaired(None)
        if now_s is None:
            return out
        out += [self._event(job, self._on_clock(job, now_s), done=False, said_s=now_s)
                for job in self._jobs.values()
                if not job.said_late and job.since_s() is not None]
        self._jobs.clear()
        return out

    # -- words --------------------------------------------------------------------------------

    def timing(self, job: _Post, now_s: float, done: bool) -> ProofTiming:
        deadline = self.deadlines.of(job.kind)
        failed = job.failed_s is not None
        last = job.failed_s if failed else job.done_s if job.done_s is not None else job.end_s
        # A proof still running: its current phase counts up to now (as cuzk's own do). One
        # failed: the phase its failure line is written in counts up to it, the prove (one
        # step, engine.rs:3471) or the GPU (engine.rs:3282, after GPU_START, 3131); a phase
        # before it whose end was not read (its lines read apart, or missed) is not known,
        # never counted to the failure ("queue 2.5 s" of a PoSt that failed on the GPU).
        now = None if done else now_s
        last_phase_to = job.failed_s if failed else now
        prove: float | None = None
        if job.one_step:
            # Queue, then synthesis and GPU in one call: no line splits them (None, never 0).
            phases: tuple[float | None, ...] = (
                _phase(job.arrived_s, job.prove_start_s, now), None, None, None, None)
            prove = _phase(job.prove_start_s, job.done_s, last_phase_to)
        else:
            synth_to = job.failed_s if job.failed_in_synthesis else now
            phases = (_phase(job.arrived_s, job.synth_start_s, now),
                      _phase(job.synth_start_s, job.synth_end_s, synth_to),
                      _phase(job.gpu_queue_s, job.pickup_s, now),
                      _phase(job.gpu_start_s, job.end_s, last_phase_to),
                      _span(job.end_s, job.done_s))
        end = last if done else now_s
        every = (*phases, prove)
        # Timed by its offsets, its queue is not known (its `job enqueued` line's time is on
        # another clock), so neither is its total: only the least it can be.
        total = None if job.engine_clock else _total(_span(job.begin_s(), end), every)
        at_least = _least_total(job.earliest_s(), end, every) if total is None else None
        if job.wall_least_s is not None:  # what the wall clock saw before the offsets took over
            at_least = max(at_least or 0.0, job.wall_least_s)
        # Judged by its total, else by the least it can be (its begin not read: a log followed
        # from mid-proof; 20 s read of a 30 s WinningPoSt is at risk): within the deadline,
        # only a total is "ok"; without either, not known, never "ok" (it was counted among
        # the proofs on time).
        figure = total if total is not None else at_least
        verdict: ProofVerdict = "unknown"
        if deadline is not None and figure is not None:
            if figure > deadline:
                verdict = "late"
            elif figure > self.deadlines.at_risk_share * deadline:
                verdict = "at_risk"
            elif total is not None:
                verdict = "ok"
        if failed:  # no proof came of it, whatever its time
            verdict = "failed"
        queue, synth, gpu_wait, gpu, finalize = phases
        timing = ProofTiming(
            proof_kind=job.kind, queue_s=queue, synth_s=synth, gpu_wait_s=gpu_wait, gpu_s=gpu,
            total_s=total, total_at_least_s=at_least, deadline_s=deadline, verdict=verdict,
            done=done,
            waited_behind=list(job.waited_behind), waited_behind_more=job.waited_behind_more,
            finalize_s=finalize, one_step=job.one_step, prove_s=prove, error=job.error,
            cause=job.failed_by if failed else None)
        own = self._own_load(job, now_s)
        evicted = self._eviction_before(own) if own is not None else None
        return _with_setting(timing, own, self._queue_load(job, now_s), evicted,
                             job.since_previous_s)

    def _event(self, job: _Post, t: float, done: bool, said_s: float | None = None
               ) -> ProverEvent:
        """Its words at `t` (on its clock), placed in wall time (`_placed`; `said_s`: the
        data's wall time they are said at, when not at a line of its own)."""
        timing = self.timing(job, t, done)
        return ProverEvent(t_wall_s=_placed(job, t, said_s), kind="proof",
                           level=_LEVEL[timing.verdict],
                           message=proof_words(job.job, timing, job.arrived_s is None,
                                               job.engine_clock),
                           job_id=job.job, gpu=job.gpu, proof=timing)

    def _gone(self, job: _Post, why: ProofGivenUp, t: float, said_s: float | None = None
              ) -> ProverEvent:
        """Its last word, without its end: lost in a restart (an error: it will not complete),
        or given up to keep memory bounded (a warning at least: its end is not known)."""
        timing = msgspec.structs.replace(self.timing(job, t, done=False), given_up=why)
        name = POST_NAMES.get(job.kind, job.kind)
        if why == "restart":
            level: NoticeLevel = "error"
            words = ("was in flight when the prover restarted: it will not complete (Curio "
                     "waits for it until its ProveTimeout)")
        else:
            level = "error" if timing.verdict == "late" else "warning"
            words = (f"{total_words(timing)} so far, given up: more than {MAX_IN_FLIGHT} PoSt "
                     "jobs in flight at once (its end will not be said)")
        return ProverEvent(t_wall_s=_placed(job, t, said_s), kind="proof", level=level,
                           job_id=job.job,
                           gpu=job.gpu, proof=timing,
                           message=fmt.visible(f"{name} {job.job} {words}"))


def _placed(job: _Post, t: float, said_s: float | None = None) -> float:
    """Where a proof's event sits in wall time: at `t`, or, timed by the engine's offsets (`t`
    is an offset there), at the latest wall time known at its last line (`_Post.wall_s`), or
    at `said_s` when later: said late while running, at the end of data or lost in a restart,
    it is said then (a backlog's WinningPoSt said late live an hour after the backlog's last
    timed line was placed at that line, outside the footer's 5 minutes and an hour early in
    `record`'s stderr and the report's table)."""
    if job.engine_clock and job.wall_s is not None:
        return job.wall_s if said_s is None else max(job.wall_s, said_s)
    return t


def _phase_of(job: _Post) -> str | None:
    """The phase a proof in flight is in, by its latest line read, in its words."""
    phase = _phase_key(job)
    return None if phase is None else PHASE_WORDS[phase]


def _phase_key(job: _Post) -> ProofPhase | None:
    if job.one_step:
        if job.prove_start_s is not None:
            return "prove"
        return "queue" if job.arrived_s is not None else None
    if job.end_s is not None:
        return "finalize"
    if job.gpu_start_s is not None:
        return "gpu"
    if job.gpu_queue_s is not None or job.pickup_s is not None or job.synth_end_s is not None:
        return "gpu_wait"
    if job.synth_start_s is not None:
        return "synthesis"
    if job.arrived_s is not None:
        return "queue"
    return None


def _behind(holds: WorkerHolds, daemon: int, job_id: str) -> tuple[list[str], int]:
    """What a PoSt queued for the GPU waited behind: each of its daemon's workers' work in hand
    (by worker, `WorkerHolds.held`: none its own), at most `MAX_BEHIND` of them, and how many
    more."""
    others = [h for h in holds.held(daemon) if h.job != job_id]
    return ([f"worker {h.worker}: {_held_words(h)}" for h in others[:MAX_BEHIND]],
            max(0, len(others) - MAX_BEHIND))


def _held_words(hold: Hold) -> str:
    """`porep-1000-12 partition 3`; a monolithic worker's `porep-1000-7 (porep-c2)`."""
    if hold.partition is not None:
        return f"{hold.job} partition {hold.partition}"
    return f"{hold.job} ({hold.kind})" if hold.kind is not None else hold.job


def _behind_at_arrival(job: _Post) -> None:
    """A proof proved in one step waited for a worker from its arrival: what each worker held
    then is what it waited behind (said while it still queues, too)."""
    if job.one_step and job.arrival_behind is not None and not job.waited_behind:
        job.waited_behind, job.waited_behind_more = job.arrival_behind


def _offset_ms(ev: LogEvent) -> int | None:
    """A TIMELINE line's offset (ms since the engine started), None when it has none that fits."""
    return int_field(ev.fields.get("offset_ms"))


def _end_key(ev: LogEvent, job_id: str) -> tuple[str, str, float]:
    """What makes a `GPU_END` line this line: its job and its TIMELINE offset (ms since the
    engine started: the same whichever anchor placed it in wall time, so a recording's copy
    placed by `/status` and the file's placed by its start line agree), else its time."""
    offset = _offset_ms(ev)
    if offset is not None:
        return (job_id, "offset_ms", float(offset))
    return (job_id, "t_wall_s", ev.t_wall_s)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _with_setting(t: ProofTiming, own_load: _SrsLoad | None, queue_load: _SrsLoad | None,
                  evicted: _SrsEviction | None = None, since_previous_s: float | None = None
                  ) -> ProofTiming:
    """The setting that would have freed the proof, for the phase that took longest where what
    was read ranks it (`ProofTiming.longest_phase`; else none, cause `PHASES_NOT_READ`), when one
    exists (sources in cuzk-upstream-paths.md 4.5), and its cause (`ProofTiming.cause`).
    `own_load`: its own SRS load, inside its synthesis phase; `queue_load`: another job's,
    while it queued (`_SrsLoad`); `evicted`: its SRS's eviction before its own load, as the log
    said it; `since_previous_s`: the time since the previous PoSt of its kind began."""
    if t.verdict in ("ok", "unknown", "failed"):
        # Unknown: not known to have waited too long. Failed: its failure is what is said (its
        # error); no setting of a phase would have made a proof of it.
        return t
    phase = t.longest_phase()
    if phase is None:
        # No phase ranks first: none was read, or those not read took longer than any read
        # (a window or a log begun mid-proof): no phase is named, nor its setting.
        return msgspec.structs.replace(t, cause=PHASES_NOT_READ if t.unread()[0] else None)
    setting: str | None = None
    cause: str | None = None
    if phase == "queue" and t.one_step:
        setting, cause = _pipeline_off_words(), "pipeline_off"
    elif phase == "synthesis" and own_load is not None and own_load.first_in_run:
        setting, cause = _first_load_words(own_load), "srs_first_load"
    elif phase == "synthesis" and own_load is not None:
        setting = _eviction_words(own_load, evicted, since_previous_s, t.proof_kind)
        cause = "srs_evicted"
    elif phase == "queue":
        setting, cause = _concurrency_words(queue_load), "synthesis_queue"
    elif phase == "finalize":
        setting = ("none: its result waited for cuzk's job tracker lock, which a finalizer holds "
                   "through a PoRep proof's self-check (engine.rs:3220-3253, prover.rs:217-256); "
                   "CUZK_VALIDATE_PARTITIONS=1 and gRPC GetStatus/GetMetrics polling hold it too")
        cause = "tracker_lock"
    elif phase == "gpu_wait":
        setting = ("none in cuzk: PoSt already goes first in the GPU queue (key (0,0), "
                   "engine.rs:2849-2851) and a partition on a worker runs to its end; "
                   + POST_ONLY_DAEMON)
        cause = "gpu_workers_busy"
    if setting is None:  # synthesis without an SRS load, GPU, prove: none claimed (docs/post.md)
        return msgspec.structs.replace(t, cause=phase)
    return msgspec.structs.replace(t, setting=setting, cause=cause)


#: The way round a PoSt's wait for a GPU worker that no setting of one cuzk gives, and how to
#: watch it: a second daemon has its own log, start line and `/status` (cuzk-daemon main.rs:
#: 63-64, 133; config.rs:34, 39, 142), which one gapwatch given both logs tells apart
#: (`gapwatch.cuzk.daemons`).
POST_ONLY_DAEMON = (
    "a PoSt-only cuzk on its own GPU ([gpus] devices, its own [daemon] listen and "
    "status_listen) removes the wait; watch it with one gapwatch per daemon (`gapwatch watch "
    "--gpus N --log its.log --cuzk-status http://its-status-addr/status`), or give both "
    "daemons' logs to one (`--log porep.log --log post.log` from their start: a file whose "
    "'configuration loaded' shows a listen address of its own is its own daemon's, docs/post.md "
    "'Two daemons')")


def _pipeline_off_words() -> str:
    """A PoSt proved in one step that waited in cuzk's queue: with the pipeline off a worker
    proves one whole proof at a time and nothing takes its place until that proof ends."""
    return ("[pipeline] enabled = true: with the pipeline off each GPU has one worker "
            "(engine.rs:1333-1337), which proves one whole proof in one call "
            "(engine.rs:3422-3440), so a PoSt waits in cuzk's queue until the proof on a worker "
            "ends (a PoRep C2 takes minutes); its priority puts it first in that queue "
            "(scheduler.rs:34-45), never ahead of a proof already running. With the pipeline on "
            "PoRep and SnapDeals are proved partition by partition and a PoSt goes first in the "
            "GPU queue (key (0,0), engine.rs:2849-2851): a worker takes it when its partition "
            "ends, not its whole proof; " + POST_ONLY_DAEMON)


def _first_load_words(load: _SrsLoad) -> str:
    """A synthesis phase made long by the first load of the PoSt's SRS since cuzk started: it
    was never in memory, so no eviction setting keeps it there."""
    return ("none: its synthesis phase includes the first load of its SRS since cuzk started "
            f"({load.circuit}{load.took_words()}), loaded on demand (srs_manager.rs; no config "
            "key preloads it) inside the synthesis step (engine.rs:2717-2721); it repeats after "
            "every restart of cuzk, so restart it well before a proving window, or load it "
            f"ahead with cuzk's gRPC PreloadSRS (circuit_id {load.circuit}), which loads it "
            "through the memory budget (engine.rs:3623-3657; idle, it is evictable as any SRS, "
            "engine.rs:1279-1287)")


def _eviction_words(load: _SrsLoad, evicted: _SrsEviction | None,
                    since_previous_s: float | None, kind: str) -> str:
    """A synthesis phase made long by the PoSt's own SRS load: its SRS had been evicted. cuzk
    evicts an SRS only from its budget's evictor (engine.rs:1257-1320): when an acquire is
    short, and only an SRS idle at least `eviction_min_idle`, oldest first (1279-1287, 1299).
    The log's own figures say how long this one had been idle and the budget then (the
    `SRS evicted` line, srs_manager.rs:282): an eviction after 16 s idle says the box's
    eviction_min_idle is at most 16 s, whatever the default (5m, config.rs:92-94), so the
    default is never said as if it were in effect. Raised above the time between PoSts of its
    kind, their SRS stays in memory from one to the next."""
    name = POST_NAMES.get(kind, kind)
    between = (f"~{since_previous_s:.0f} s here, from the one before it to it"
               if since_previous_s is not None else "not read here: the one before it was not")
    words = (f"[memory] eviction_min_idle: raise it above the time between {name}s ({between}): "
             f"its synthesis phase includes loading its SRS ({load.circuit}"
             f"{load.took_words()}) from disk, which cuzk does inside the synthesis step "
             "(engine.rs:2717-2721) when the SRS is not in memory; ")
    if evicted is None:
        return words + (
            "its eviction was not read (no `SRS evicted` line before it): cuzk evicts an SRS "
            "only when a budget acquire is short and only one idle at least eviction_min_idle, "
            "oldest first (engine.rs:1279-1287, 1299; default 5m, config.rs:92-94)")
    budget = ("" if evicted.budget_available_gib is None
              else f", budget_available_gib={evicted.budget_available_gib} after it")
    if evicted.idle_s is None:
        return words + (
            f"cuzk evicted it at {fmt.clock(evicted.t_s, millis=True)}{budget} (its last use "
            "before that was not read, so neither is how long it idled): cuzk evicts an SRS only "
            "when a budget acquire is short and only one idle at least eviction_min_idle, oldest "
            "first (engine.rs:1279-1287, 1299; default 5m, config.rs:92-94)")
    assert evicted.last_used_s is not None
    return words + (
        f"cuzk evicted it at {fmt.clock(evicted.t_s, millis=True)} after {evicted.idle_s:.0f} s "
        f"idle (last used {fmt.clock(evicted.last_used_s, millis=True)}){budget}: cuzk evicts "
        "an SRS only when a budget acquire is short and only one idle at least "
        "eviction_min_idle (engine.rs:1279-1287, srs_manager.rs:282), so eviction_min_idle is "
        f"at most {evicted.idle_s:.0f} s on this box (the default is 5m, config.rs:92-94)")


def _concurrency_words(busy: _SrsLoad | None) -> str:
    """A proof that waited in cuzk's queue: the single synthesis dispatcher was busy with
    another job (`busy`: another job's SRS load meanwhile, which it waits for too)."""
    during = ""
    if busy is not None:
        during = (f"; while it queued, cuzk loaded another job's SRS from disk ({busy.circuit}"
                  f"{busy.took_words()}), which the dispatcher waits for (it is not this "
                  "proof's own: that comes after SYNTH_START, engine.rs:2717-2721)")
    return ("[pipeline] synthesis_concurrency: raise it above 1 (the default, config.rs:355-357, "
            "cuzk.example.toml:151): at 1 cuzk's single synthesis dispatcher awaits each batch "
            "inline (engine.rs:1927-1938), so a PoSt's synthesis cannot start while another "
            f"job's runs{during}. Above 1 it can, at the cost of more synthesis memory, and two "
            "monolithic jobs in the GPU queue at once get likelier: both are keyed (0,0) and one "
            "replaces the other, lost silently (engine.rs:53-58, 2851; gapwatch says such a "
            "lost job). On Curio's side [Cuzk] MaxPending bounds the PoRep/Snap work it queued "
            "behind")


def _s(v: float | None) -> str:
    return "?" if v is None else f"{v:.1f} s"


def _begin_words(t: ProofTiming) -> str:
    """The lines that say when a proof began: its arrival, and for a pipelined one its
    synthesis start (a proof proved in one step has none)."""
    return "its arrival" if t.one_step else "its arrival and synthesis start"


def proof_words(job_id: str, t: ProofTiming, no_arrival: bool, by_offsets: bool = False
                ) -> str:
    """`WinningPoSt winpost-1000-1a2b3c4d: 3.9 s of 30 s (queue ?, synthesis 2.2 s, GPU wait
    0.4 s behind worker 0: porep-... partition 3, GPU 1.3 s); late: ...` (`by_offsets`: timed
    by its TIMELINE offsets, read without their anchor); failed, its error first: `WinningPoSt
    winpost-1000-1a2b3c4d: GPU prove start failed: <error> (after 3.1 s of its 30 s deadline;
    queue ...); FAILED`."""
    name = POST_NAMES.get(t.proof_kind, t.proof_kind)
    state = "" if t.done else " still running"
    limit = f" of its {t.deadline_s:g} s deadline" if t.deadline_s is not None else ""
    since = ""
    if by_offsets:
        since = (" (by its TIMELINE lines' offsets, read without their anchor: its queue and "
                 "finalize not known)")
    elif t.total_s is not None and no_arrival:
        since = " (from synthesis start: its 'job enqueued' line was not read)"
    elif t.total_s is None and t.verdict in ("late", "at_risk"):
        since = f" ({_begin_words(t)} not read: counted from its first line read)"
    behind = f" behind {t.behind_words()}" if t.waited_behind and t.worker_wait_s else ""
    total = total_words(t)
    if t.one_step:
        phases = (f"queue {_s(t.queue_s)}{behind}, prove {_s(t.prove_s)}: synthesis and GPU in "
                  "one call, cuzk's pipeline off")
    else:
        phases = (f"queue {_s(t.queue_s)}, synthesis {_s(t.synth_s)}, GPU wait "
                  f"{_s(t.gpu_wait_s)}{behind}, GPU {_s(t.gpu_s)}"
                  + (f", finalize {_s(t.finalize_s)}" if t.finalize_s is not None else ""))
    if t.verdict == "failed":
        # Its error first: the footer's one line is cut at the pane's edge, and why it failed
        # is what the operator needs (its time is in the report).
        after = f"after {total}{limit}"
        if t.total_s is None and t.total_at_least_s is None:  # its failure line alone read
            after = f"its time not known, {_begin_words(t)} not read"
        elif by_offsets:
            after += ", by its TIMELINE lines' offsets, read without their anchor"
        elif t.total_s is None:
            after += f", {_begin_words(t)} not read"
        elif no_arrival:
            after += ", from synthesis start: its 'job enqueued' line was not read"
        return fmt.visible(f"{name} {job_id}: {t.error or 'failed'} ({after}; {phases}); FAILED")
    words = f"{name} {job_id}{state}: {total}{limit}{since} ({phases})"
    if t.verdict == "late":
        words += "; LATE"
    elif t.verdict == "at_risk":
        words += "; at risk"
    elif t.verdict == "unknown" and by_offsets:
        words += ("; on time or late is not known: its queue is not (give the log with its "
                  "`starting cuzk engine` line)")
    elif t.verdict == "unknown" and t.one_step:
        words += "; on time or late is not known: its arrival ('job enqueued') was not read"
    elif t.verdict == "unknown":
        words += ("; on time or late is not known: neither its arrival ('job enqueued') nor its "
                  "synthesis start was read")
    if t.setting:
        words += f"; setting: {t.setting}"
    return fmt.visible(words)
