"""What to change: for each kind of stall the gaps show, the cuzk setting that closes it.

Who calls it: `gapwatch.offline.report` (the "What to change" section and `advice` in
`--json`), `gapwatch.sinks.snapshot` (summary.md), the dashboard's help screen (`?`) and gap
detail (Enter), and the verdict (`gapwatch.cuzk.why_now`), each over the gaps it has and what the
prover's log said (`gapwatch.cuzk.pipeline.PipelineView`). Pure. What it reads of each gap
beyond its cause and kind is typed (`facts_of`: `Gap.prover_facts`, set by cuzk's prover where
it decides each fact), never searched for in the gap's words (`prover_evidence` is cited, for
people, and nothing more): a gap without them has none, and its advice says only what its
cause and kind support. Every gap advised on is the detector's, live and offline (`report`,
`replay` and `compare` detect their gaps again from the samples; a recording's gap lines are
never advised on), made with its prover's facts: it lacks them only where no prover explained
it, and then it has no words either.

Live, the gap open now is advised on with the closed ones: an operator asks exactly while the GPU
idles, and a BREAKDOWN is often entered on the gap still open (one starved gap whose copies the
copy trace saw come from pageable memory is enough). It is taken as the detector last published
it (`Gap.duration_s` so far, its kind, cause and evidence of that moment), never stretched to a
later time here, and said as still open (`StallGaps.open`, `open_gap_words`). A retracted gap
(idle after the last busy period, not a gap) is never advised on, whoever passes it.

Every setting named here is one of cuzk's own, with the upstream file that documents it
(curio e0294b0f: `extern/cuzk/cuzk.example.toml`, `cuzk-core/src/config.rs`, `engine.rs`,
`memory.rs`, `pinned_pool.rs`; docs/advice.md says which fact comes from where). An advice names
its evidence (what this run showed), the expected payoff (the report's payoff for those gaps:
work taken as fixed), and says when it is a guess (what gapwatch could not tell). A stall no
setting closes is said as such (`no_setting`), never given a setting the evidence does not
support: the first synthesis of a circuit is unpinned by design, PoSt is monolithic by design, a
dispatch stall has no knob, the wait inside the GPU workers none but a second worker where the
log says one (`second_worker_closes`), pinned copies at line rate have nothing to turn: they run
under cuzk's per-GPU lock, which no worker count overlaps (`COPIES_UNDER_LOCK`).

Stalls (`stall_of`, one per gap): `process_replaced` for a restart /proc alone showed of a
process not under cuzk's name (`ProverGapFacts.replaced_process`: what /proc showed, no cuzk
restart advice); else the gap's prover cause where it has one (`restart`,
`waits_on_synthesis`, `waits_on_budget`, `pacer_hold`, `srs_loading`, `dispatch_stall`,
`monolithic`, `pinned_pool`, `inside_workers`, `batch_wait`, `empty_pipeline`, `no_work`); else
from its kind and evidence: `pinned_pool` (pcie_starved, the pool failed; by how much from the
log's figures, `gapwatch.cuzk.pin_need`; where its churn preceded the failures, or the log at
WARN hides churn, `gapwatch.cuzk.pool_churn`, also `[pipeline] max_gpu_queue_depth`, a guess to
measure), `first_synthesis` (pcie_starved, `is_pinned=false`, in the window of any
run's first wave of a circuit type: `gapwatch.cuzk.first_wave`), `pageable_copies`,
`slow_copies`, `copies_not_overlapped` (transfer_bound), `host_stall` (no cause known),
`unknown`."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gapwatch.core import fmt
from gapwatch.core.evidence_types import ProverGapFacts, ProverState, known
from gapwatch.core.models import Gap, ProverEvent
from gapwatch.core.payoff import IfClosed, gpu_time_words
from gapwatch.core.prover_watch import ProofTroubles, Trouble
from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.core.units import GIB
from gapwatch.core.values import SIZE_BOUNDS_WORDS
from gapwatch.cuzk.first_wave import gap_moment, wave_of, wave_words
from gapwatch.cuzk.knobs import (
    CHANGE,
    LOWER,
    RAISE,
    RAISE_MARGIN,
    UNSET,
    Pull,
    Setting,
    Step,
    lowers,
    raises,
    set_to,
)
from gapwatch.cuzk.pin_need import pin_need
from gapwatch.cuzk.pipeline import (
    BATCH_BYTES_BY_KIND,
    BATCH_KINDS,
    CAPACITY_NOT_READ,
    COPIES_UNDER_LOCK,
    DEFAULT_MAX_PARALLEL_SYNTHESIS,
    EMPTY_PIPELINE_CAUSE,
    GPU_LOCK_WORDS,
    NO_FACTS,
    POREP_BATCH_FULL_BYTES,
    POREP_PARTITION_FULL_BYTES,
    POST_KINDS,
    OverBudget,
    PipelineView,
)
from gapwatch.cuzk.pool_churn import (
    NO_CHURN_NO_QUEUE_DEPTH,
    QUEUE_DEPTH_GUESS,
    QUEUE_DEPTH_GUESS_WHY,
)
from gapwatch.cuzk.post_advice import ProofAdvice, proof_advice, proof_advice_lines
from gapwatch.cuzk.prover import view_of
from gapwatch.cuzk.restarts import AFTER_SIGINT, KILLED, RESTART_CAUSE, STARTS_AGAIN

#: Host pressure above which more syntheses may slow each one (config.rs warns of it).
PSI_PRESSURE_SHARE = 0.10

#: cuzk's knobs more than one stall's advice turns, each its own way (`Pull`).
TOTAL_BUDGET = "[memory] total_budget"
MAX_PARALLEL_SYNTHESIS = "[pipeline] max_parallel_synthesis"
GPU_WORKERS_PER_DEVICE = "[gpus] gpu_workers_per_device"
#: The budget raised, as every stall that wants more of it says it.
#: Which way is the operator's: the default total_budget is "auto" (its step `CHANGE`).
RAISE_BUDGET = "raise it (or, with \"auto\", lower safety_margin) if the host has the RAM"

#: What each stall is, in words (the headline of its advice or no-setting note).
STALL_WORDS: dict[str, str] = {
    "restart": "cuzk restarted: the GPU waited for its new run",
    "process_replaced": "the GPU's process was replaced (/proc): the GPU waited for the new "
                        "one",
    "waits_on_synthesis": "the GPU waits on synthesis",
    "waits_on_budget": "the next synthesis waits on cuzk's memory budget",
    "pacer_hold": "the dispatch pacer holds synthesis back",
    "srs_loading": "cuzk loads the SRS",
    # Not "while a GPU worker is idle": the log's queue wait alone, no worker's holds read,
    # makes one too (its evidence and no-setting note say whether a worker was shown free).
    "dispatch_stall": "synthesised partitions wait in the GPU queue, not taken by a GPU worker",
    "monolithic": "PoSt or other monolithic work (a batch, the pipeline off)",
    "pinned_pool": "a/b/c copied from pageable memory: the pinned pool could not pin",
    "first_synthesis": "a/b/c of a first wave (a circuit type's first proof in a run of cuzk) "
                       "are unpinned",
    "pageable_copies": "a/b/c copied from pageable memory",
    "slow_copies": "host-to-device copies trickled",
    "copies_not_overlapped": "copies at line rate, not overlapped with compute",
    "inside_workers": "the wait is inside the GPU workers (CPU work, the GPU mutex)",
    "batch_wait": "cuzk held requests in its batch collector, waiting for a batch to fill",
    "empty_pipeline": "the pipeline was empty when the GPU went idle: the GPU waited for the "
                      "next work and its first synthesis",
    "no_work": "the prover had no work",
    "host_stall": "the GPU waited on the host (no cause known)",
    "unknown": "PCIe not measured",
}


@dataclass(frozen=True, slots=True)
class Advice:
    """One setting to change, for the gaps of one stall."""

    stall: str
    #: cuzk's setting as its TOML spells it (`[pipeline] max_parallel_synthesis`), or a
    #: service setting.
    setting: str
    change: str
    #: Why the setting closes the stall, from upstream (with the file it comes from).
    why: str
    source: str
    evidence: list[str]
    gaps: int
    idle_s: float
    gap_ids: list[int]
    #: True when gapwatch could not tell whether this is the setting (`guess_why` says what).
    guess: bool = False
    guess_why: str = ""
    #: The payoff of closing these gaps (`gapwatch.core.payoff.if_closed`), when the caller
    #: knows the span.
    payoff: IfClosed | None = None
    #: Of `gaps`, those still open (live): `idle_s` holds their idle time so far.
    open_gaps: int = 0
    #: Which way it moves cuzk's knobs (`gapwatch.cuzk.knobs.Pull`).
    pulls: tuple[Pull, ...] = ()
    #: Which way `change` moves the setting itself, typed (`gapwatch.cuzk.knobs.Step`): what a
    #: headline with no room for `change`'s figures says ("lower [scheduler]
    #: max_batch_wait_ms"; with its condition where the way rests on a value the log does not
    #: say); None only for an advice made without one.
    step: Step | None = None


@dataclass(frozen=True, slots=True)
class NoSetting:
    """Gaps of a stall no cuzk setting closes, and why."""

    stall: str
    why: str
    gaps: int
    idle_s: float
    #: Of `gaps`, those still open (live): `idle_s` holds their idle time so far.
    open_gaps: int = 0


@dataclass(frozen=True, slots=True)
class Conflict:
    """Stalls of one report whose advice moves one of cuzk's knobs opposite ways (its inverse
    said as the knob: `Pull`). Both advices stay, each with its own gaps and idle; this says
    so, which cost the most idle, and to make that change first and measure again."""

    knob: str
    #: The advice, one per stall, that raises the knob; that lowers it.
    raising: tuple[Advice, ...]
    lowering: tuple[Advice, ...]

    @property
    def first(self) -> Advice:
        """The advice whose stall cost the most idle (the first of them where tied): its change
        comes first."""
        return max((*self.raising, *self.lowering), key=lambda a: a.idle_s)


@dataclass(frozen=True, slots=True)
class AdviceReport:
    advice: list[Advice] = field(default_factory=list)
    no_setting: list[NoSetting] = field(default_factory=list)
    #: What the prover's log says regardless of the gaps (deprecated keys it ignores, env knobs
    #: it runs with), from the caller's `notes`.
    notes: list[str] = field(default_factory=list)
    #: Where two stalls' advice pulls one knob opposite ways (`conflicts`).
    conflicts: list[Conflict] = field(default_factory=list)
    #: The PoSt that failed, were lost, late or at risk, one a cause: said first
    #: (`gapwatch.cuzk.post_advice`); set by the caller that has the prover's events.
    proofs: list[ProofAdvice] = field(default_factory=list)


#: (settings, guess, guess_why, evidence), or why none applies.
Found = tuple[list[Setting], bool, str, list[str]]

#: Each batch kind as the words name it.
_BATCH_NAMES = {"porep-c2": "PoRep", "snap-update": "SnapDeals"}


def _batch_budget(kind: str) -> str:
    """A batch kind's budget in words: `136 GiB`; a SnapDeals batch's one partition's 9 GiB
    said as such (it is the whole batch's)."""
    gib = f"{BATCH_BYTES_BY_KIND[kind] // GIB} GiB"
    return gib if kind == "porep-c2" else f"{gib} (one partition's, for the whole batch)"


def batch_setting(kinds: Iterable[str] = ()) -> Setting:
    """`[scheduler] max_batch_size = 1`, its words naming the budget of the batches `kinds`
    names (`BATCH_KINDS`; none: both), each its own (engine.rs:2644-2648: a PoRep batch
    acquires 136 GiB, a SnapDeals batch its kind's partition size, 9 GiB)."""
    which = [k for k in BATCH_KINDS if k in set(kinds)] or list(BATCH_KINDS)
    names = " or ".join(_BATCH_NAMES[k] for k in which)
    if len(which) == 1:
        budget = f"acquiring a {_batch_budget(which[0])} budget"
    else:
        budget = "acquiring a budget of " + ", ".join(
            f"{_batch_budget(k)} for a {_BATCH_NAMES[k]} batch" for k in which)
    # Upstream's SnapDeals batch arm synthesises `reqs[0]` alone (engine.rs:2706-2713): a
    # batch there buys no throughput at all, one more reason for 1.
    snap = "snap-update" in which
    only_first = ("; a SnapDeals batch's synthesis uses only its first request (reqs[0], "
                  "engine.rs:2706-2713)" if snap else "")
    return Setting(
        "[scheduler] max_batch_size", "1 (the default)",
        f"a batch of 2+ {names} requests is proved as one monolithic job: synthesised with no "
        f"pinned pool (a/b/c pageable, copied at 1-4 GB/s), {budget}, invisible to /status"
        f"{only_first}; with 1 every request takes the partitioned, pinned pipeline",
        "extern/cuzk/cuzk-core/src/engine.rs:2053, 2672-2680"
        + (", 2706-2713" if snap else "") + "; pipeline.rs:1632; "
        "extern/cuzk/cuzk.example.toml:97-100; the budget: engine.rs:2644-2648, "
        "memory.rs:41, 53", set_to("1"), lowers("[scheduler] max_batch_size"))


#: The monolithic job kinds the advice tells apart (`StallGaps.kinds`).
_KNOWN_KINDS = frozenset((*BATCH_KINDS, *POST_KINDS))


def facts_of(g: Gap) -> ProverGapFacts:
    """The facts of a gap the advice reads: those cuzk's prover decided, typed
    (`Gap.prover_facts`); none (`NO_FACTS`) for a gap without them, whatever its words say (a
    job id or an error quoted into them can say anything)."""
    facts = known(g.prover_facts)
    return facts if facts is not None else NO_FACTS


def _batched(facts: ProverGapFacts) -> bool:
    """Whether a gap waited on a batch job: a pipelined monolithic job (TIMELINE `SYNTH_START
    kind=porep-c2` or `snap-update`, no partition), not a proof proved in one call."""
    return not facts.one_call and facts.monolithic_kind in BATCH_KINDS


def _kinds_of(facts: ProverGapFacts) -> set[str]:
    """The monolithic job kind a gap waited on, of those the advice tells apart (`BATCH_KINDS`,
    `POST_KINDS`), pipelined or proved in one call; {} for any other or none."""
    kind = facts.monolithic_kind
    return {kind} if kind in _KNOWN_KINDS else set()


#: The stalls whose gaps may be a first wave's, though `stall_of` did not call them one (their
#: copies pageable, no `is_pinned=false` line on them): the paths' rule asks how many are
#: (`StallGaps.moments`).
WAVE_JUDGED = frozenset(("pageable_copies", "slow_copies"))


@dataclass(slots=True)
class StallGaps:
    """The gaps of one stall as the advice reads them, taken one at a time in start order
    (`add`): what the rules below and `gapwatch.cuzk.paths` ask of them, never the gaps
    themselves (a day's report has hundreds of thousands), but the latest one."""

    stall: str
    #: Each gap's idle seconds and id, in start order (summed in that order, as before), as
    #: machine numbers: 16 bytes a gap, not ~68 as Python objects in lists (a day of 8 GPUs
    #: has ~330,000 gaps; what a report holds grows with the recording only by these).
    durations: array[float] = field(default_factory=lambda: array("d"))
    ids: array[int] = field(default_factory=lambda: array("q"))
    #: Of a stall judged by first waves (`WAVE_JUDGED`), each gap's moment in first-wave terms
    #: (`gap_moment`), in the same order, 8 bytes more a gap: whether the gaps as a whole are a
    #: first wave's is asked of all of them (`gapwatch.cuzk.paths`), not of the latest alone.
    moments: array[float] = field(default_factory=lambda: array("d"))
    #: Their idle seconds by GPU: each GPU's span shrinks by its own gaps alone, never below
    #: its own link's floor (`gapwatch.offline.payoff.gap_payoff`).
    idle_by_gpu: dict[int, float] = field(default_factory=dict)
    #: The last gap taken (its evidence is cited).
    latest: Gap | None = None
    #: Of them, those still open (live only: their idle time is so far).
    open: int = 0
    #: Gaps with the prover's cause; that waited on a batch job (`_batched`); any with evidence.
    with_cause: int = 0
    batched: int = 0
    with_evidence: bool = False
    #: Any gap with an `unpinned` warning among its log events; the latest start of any.
    unpinned: bool = False
    max_start_s: float | None = None
    #: The highest PSI memory share read during any of them (None: never read).
    pressure: float | None = None
    #: Monolithic job kinds they waited on (`_kinds_of`).
    kinds: set[str] = field(default_factory=set)
    #: Any gap explained by a budget request over the whole budget
    #: (`ProverGapFacts.over_budget`).
    over_budget: bool = False
    #: Any gap whose new request cuzk's batch collector held for part of it (an empty
    #: pipeline's: `ProverGapFacts.batch_held`).
    batch_held: bool = False
    #: Gaps whose queued partitions no worker took before the data ended
    #: (`ProverGapFacts.queued_at_end`).
    queued_at_end: int = 0
    #: Of those, the ones with no worker's holds read showing a GPU worker free
    #: (`ProverGapFacts.worker_free_unshown`).
    queued_at_end_unshown: int = 0
    #: Of every gap, at the recording's end or not, those with no worker's holds read showing a
    #: GPU worker free (`ProverGapFacts.worker_free_unshown`): the dispatch stall's note says
    #: a worker showed idle only of the others (`_dispatch_stall_words`).
    worker_free_unshown: int = 0
    #: Of an empty pipeline's gaps, what started each one's new work, as its own daemon ran
    #: (`ProverGapFacts.new_work_pacer_target`, `new_work_at_once`): the gaps whose daemon's
    #: dispatch pacer paced it, by that pacer's `gpu_queue_target`; those whose free workers
    #: took it at once; those whose facts say neither (the view's pacer, the first
    #: daemon's, is said of them).
    paced: dict[int, int] = field(default_factory=dict)
    at_once: int = 0
    pacing_unsaid: int = 0
    #: Snapshots saying both synthesis counts while waiting on synthesis (`_synthesis`); of
    #: them, those with every worker busy, their most workers and largest memory budget.
    judged: int = 0
    full: int = 0
    full_workers: int | None = None
    full_budget: int | None = None

    def __len__(self) -> int:
        return len(self.durations)

    @property
    def idle_s(self) -> float:
        return sum(self.durations)

    def add(self, g: Gap) -> None:
        self.durations.append(g.duration_s)
        self.idle_by_gpu[g.gpu] = self.idle_by_gpu.get(g.gpu, 0.0) + g.duration_s
        self.ids.append(g.gap_id)
        if self.stall in WAVE_JUDGED:
            self.moments.append(gap_moment(g))
        self.latest = g
        self.open += g.is_open
        self.with_cause += g.prover_cause is not None
        facts = facts_of(g)
        self.batched += _batched(facts)
        self.with_evidence = self.with_evidence or bool(g.prover_evidence)
        self.unpinned = self.unpinned or "unpinned" in _warnings(g)
        if self.max_start_s is None or g.start_s > self.max_start_s:
            self.max_start_s = g.start_s
        share = known(g.host.psi_mem_some_share_max)
        if share is not None and (self.pressure is None or share > self.pressure):
            self.pressure = share
        self.kinds |= _kinds_of(facts)
        self.over_budget = self.over_budget or facts.over_budget
        self.batch_held = self.batch_held or facts.batch_held
        self.queued_at_end += facts.queued_at_end
        self.queued_at_end_unshown += facts.queued_at_end and facts.worker_free_unshown
        self.worker_free_unshown += facts.worker_free_unshown
        if self.stall == EMPTY_PIPELINE_CAUSE:
            target = facts.new_work_pacer_target
            if target is not None:
                self.paced[target] = self.paced.get(target, 0) + 1
            elif facts.new_work_at_once:
                self.at_once += 1
            else:
                self.pacing_unsaid += 1
        for st in g.prover_states:
            self._judge(st)

    def _judge(self, st: ProverState) -> None:
        workers, busy = known(st.synthesis_workers), st.synthesizing
        if st.cause != "waits_on_synthesis" or workers is None or busy is None:
            return
        self.judged += 1
        if busy >= workers:
            self.full += 1
            self.full_workers = workers if self.full_workers is None else max(
                self.full_workers, workers)
            total = known(st.memory_total_bytes)
            if total:
                self.full_budget = total if self.full_budget is None else max(
                    self.full_budget, total)


def by_stall(gaps: Iterable[Gap], pipeline: PipelineView) -> dict[str, StallGaps]:
    """The gaps (closed, in start order, read once) by the stall each shows, digested."""
    by: dict[str, StallGaps] = {}
    for g in gaps:
        stall = stall_of(g, pipeline)
        these = by.get(stall)
        if these is None:
            these = by[stall] = StallGaps(stall)
        these.add(g)
    return by


def _warnings(g: Gap) -> set[str]:
    return {e.warning for e in g.log_events if e.warning}


def stall_of(g: Gap, pipeline: PipelineView) -> str:
    """The stall a gap shows (see the module docstring)."""
    if g.prover_cause == RESTART_CAUSE and facts_of(g).replaced_process:
        # A restart /proc alone showed, of a process not under cuzk's name: cuzk's restart
        # procedure is not its advice (the hint says the same: `REPLACED_LEAD`).
        return "process_replaced"
    if g.prover_cause is not None and g.prover_cause in STALL_WORDS:
        # /status's "inside the workers" during a copy gap is the copy: the gap's kind says
        # which (a transfer_bound gap's workers are copying at line rate, not in CPU work).
        if not (g.prover_cause == "inside_workers"
                and g.kind in ("pcie_starved", "transfer_bound")):
            return g.prover_cause
    pool = pipeline.pool
    if g.kind == "pcie_starved":
        warned = _warnings(g)
        if (pool is not None and (pool.checkout_failed or pool.alloc_failed)) or warned & {
                "pinned_pool_fallback", "cuda_host_alloc_failed"}:
            return "pinned_pool"
        if "unpinned" in warned and wave_of(pipeline.first_waves, gap_moment(g)):
            return "first_synthesis"
        if g.copies.memory_kind == "pageable" or "unpinned" in warned:
            return "pageable_copies"
        return "slow_copies"
    if g.kind == "transfer_bound":
        return "copies_not_overlapped"
    if g.kind == "host_stall":
        return g.prover_cause or "host_stall"
    return "unknown"


def _dropped(pipeline: PipelineView, *keys: str) -> str:
    """"; its synth_worker_count=-5 is no count: not used" for the fields of `keys` the log
    gave that were no count (`PipelineView.dropped`), else ""."""
    bad = [d for d in pipeline.dropped if d.split("=", 1)[0] in keys]
    return f"; its {', '.join(bad)} is no count: not used" if bad else ""


#: The pinned pool's figures (`gapwatch.cuzk.pin_need`), each bounded where it is read
#: (`values.size_field`).
POOL_FIGURES = ("size_gib", "pool_total_gib", "num_constraints", "total_budget_gib")


def _dropped_sizes(pipeline: PipelineView) -> str | None:
    """That the pool's figures of the log include some no GPU box can have, dropped (the
    arithmetic goes without them, said as not in the log), or None."""
    bad = [d for d in pipeline.dropped if d.split("=", 1)[0] in POOL_FIGURES]
    if not bad:
        return None
    return (f"the log's {', '.join(bad)}: no size a GPU box can have ({SIZE_BOUNDS_WORDS}), "
            f"not used ({pipeline.figures_dropped} count or size figure(s) of the log dropped "
            "so)")


#: Lines of the latest gap's evidence an advice cites (`_evidence`).
CITED = 5


def _evidence(gaps: StallGaps, limit: int = CITED) -> list[str]:
    """The facts behind these gaps: the latest gap's (each gap's evidence says the same of
    its own moment), at most `limit`, and how many gaps had the same cause said."""
    latest = gaps.latest
    if latest is None:
        return []
    said = [e for e in latest.prover_evidence][:limit]
    causes = gaps.with_cause
    still = f", {open_gap_words(latest)}" if latest.is_open else ""
    head = [f"the latest of {len(gaps)} gap(s), at {fmt.clock(latest.start_s, millis=True)}"
            + still + (f"; {causes} of them with the prover's cause" if causes else "")]
    return head + said


def open_gap_words(g: Gap) -> str:
    """`still open: idle 4.20s so far, measured to 10:30:07.412`: an open gap as far as the
    detector has measured it (its latest published version), said as not over."""
    return (f"still open: idle {fmt.duration(g.duration_s)} so far, measured to "
            f"{fmt.clock(g.start_s + g.duration_s, millis=True)}")


#: `[gpus] gpu_threads` as cuzk.example.toml sets it for a many-core box.
GPU_THREADS_SUGGESTED = 32
GPU_THREADS = "[gpus] gpu_threads"
GPU_THREADS_WHY = ("b_g2_msm's CPU pool competes with synthesis for memory bandwidth and L3; 32 "
                   "threads cut its bucket RAM from ~1.1 GiB to ~192 MB (cuzk.example.toml)")
GPU_THREADS_SOURCE = ("extern/cuzk/cuzk.example.toml, cuzk-daemon/src/main.rs:85-91, "
                      "extern/supraseal-c2/cuda/groth16_cuda.cu:85-98")
#: The daemon's start lines that say its thread pools (main.rs:85-91, 111).
GPU_THREADS_LINE = "'set CUZK_GPU_THREADS for C++ groth16_pool gpu_threads' (main.rs:85-91)"
RAYON_LINE = "'rayon global thread pool configured rayon_threads' (main.rs:111)"
#: What an operator-set env does where the setting is 0 (cuzk-upstream-paths.md 3.1).
ENV_HONOURED = ("unless CUZK_GPU_THREADS is set in cuzk's environment, which cuzk honours when "
                "gpu_threads = 0 (groth16_cuda.cu:85-98): then that value is the pool's")


def _threads_setting(pipeline: PipelineView) -> Setting:
    """`[synthesis] threads`, saying the value the log's start gave, or "if unset"."""
    n = pipeline.rayon_threads
    step = RAISE
    if n is None:
        # 0 (the default) is every CPU: "raise" from it gives fewer. Which way is unknown.
        step = CHANGE
        change = ("leave it at 0 (all CPUs) if unset, or raise it if set lower: no "
                  f"{RAYON_LINE} line was read to say which")
    else:
        change = (f"the log says rayon_threads={n} ({RAYON_LINE}; 0 is logged as the CPU "
                  f"count): raise it above {n} if the host has more CPUs, else leave it")
    return Setting("[synthesis] threads", change,
                   "the rayon pool every synthesis runs on (cuzk-daemon main.rs; 0 = all CPUs)",
                   "extern/cuzk/cuzk.example.toml, cuzk-daemon/src/main.rs:95-115", step,
                   raises("[synthesis] threads"))


def _gpu_threads_setting(pipeline: PipelineView) -> tuple[Setting | None, list[str]]:
    """`[gpus] gpu_threads = 32`, saying the value the log's start gave (or "if unset"), and
    none where the log says it is 32 or fewer already (said in the evidence)."""
    n = pipeline.gpu_threads
    lowered: tuple[Pull, ...] = ()
    if n is None:
        change = (f"{GPU_THREADS_SUGGESTED} on a many-core box, if it is unset (0: all CPUs, "
                  f"{ENV_HONOURED}); no start of the daemon was read to say ({GPU_THREADS_LINE} "
                  f"is written only for a value > 0, before {RAYON_LINE})")
    elif n == 0:
        change = (f"{GPU_THREADS_SUGGESTED} rather than 0 on a many-core box: the log's start "
                  f"has {RAYON_LINE} and no {GPU_THREADS_LINE} before it, so it is 0 (all "
                  f"CPUs), {ENV_HONOURED}")
    elif n > GPU_THREADS_SUGGESTED:
        change = (f"{GPU_THREADS_SUGGESTED} rather than {n}: the log says gpu_threads={n} "
                  f"({GPU_THREADS_LINE})")
        lowered = lowers(GPU_THREADS)
    else:
        return None, [f"{GPU_THREADS} is not advised: the log says gpu_threads={n} "
                      f"({GPU_THREADS_LINE}), at most cuzk.example.toml's "
                      f"{GPU_THREADS_SUGGESTED} already"]
    # From 0 (all CPUs) no pull: "32 rather than 0" has no direction a rule could compare.
    return (Setting(GPU_THREADS, change, GPU_THREADS_WHY, GPU_THREADS_SOURCE,
                    set_to(str(GPU_THREADS_SUGGESTED)), lowered), [])


#: cuzk's formula for its synthesis workers, as every why of more of them says it.
WORKERS_FORMULA = "max(2, min(budget / 14 GiB, max_parallel_synthesis)) of them (engine.rs)"


def _all_of(workers: int) -> str:
    """`both` of 2 workers, `all 4` of more: how the advice says every one of them."""
    return "both" if workers == 2 else f"all {workers}"


def _more_workers(workers: int, budget: int | None, why_more: str,
                  when: str = "") -> tuple[list[Setting], bool, str]:
    """(settings, guess, guess_why) that give cuzk more than its `workers` synthesis workers:
    the knob that limits them, by `budget` (bytes; None: not known, both knobs and a guess).
    `why_more` says why more workers close the gaps; `when` is appended to each change (the
    condition of a guess). Called by `_synthesis` for the snapshots' count and the log's."""
    raise_budget = Setting(TOTAL_BUDGET, RAISE_BUDGET + when,
                           f"{why_more}: the budget allows budget / 14 GiB per PoRep partition "
                           "(memory.rs)",
                           "extern/cuzk/cuzk.example.toml, cuzk-core/src/memory.rs, engine.rs",
                           CHANGE, raises(TOTAL_BUDGET))
    if budget is None:
        limit = ""
    else:
        limit = (f"; the budget ({fmt.size(budget)}) allows "
                 f"{budget // POREP_PARTITION_FULL_BYTES}")
    raise_cap = Setting(MAX_PARALLEL_SYNTHESIS,
                        f"raise it above {workers} (0 = {DEFAULT_MAX_PARALLEL_SYNTHESIS})"
                        + when,
                        f"{why_more}{limit}: below the budget's limit, max_parallel_synthesis "
                        "is the limit",
                        "extern/cuzk/cuzk-core/src/config.rs, engine.rs", RAISE,
                        raises(MAX_PARALLEL_SYNTHESIS))
    if budget is None:
        return [raise_cap, raise_budget], True, (
            "cuzk's memory budget is not known here, so which of the two limits the workers "
            "is not either")
    if workers >= budget // POREP_PARTITION_FULL_BYTES:
        return [raise_budget], False, ""  # the budget is the limit
    return [raise_cap], False, ""


def _synthesis(gaps: StallGaps, pipeline: PipelineView) -> Found:
    """(settings, guess, guess_why, evidence) for synthesis waits."""
    pressure = gaps.pressure
    threads = _threads_setting(pipeline)
    gpu_threads, said = _gpu_threads_setting(pipeline)
    cpu = [threads] if gpu_threads is None else [threads, gpu_threads]
    if not gaps.judged and pipeline.synth_workers is not None:
        return _synthesis_unjudged(pipeline.synth_workers, pipeline.budget_total_bytes,
                                   threads)
    if not gaps.judged:
        # How many workers cuzk runs is unknown (no `starting pipeline` line, no budget in the
        # snapshots, or no snapshot at all): both remedies, said as a guess.
        return ([Setting("[pipeline] max_parallel_synthesis",
                         f"raise it (0 = {DEFAULT_MAX_PARALLEL_SYNTHESIS}) if every synthesis "
                         "worker was busy",
                         "cuzk runs max(2, min(budget / 14 GiB, max_parallel_synthesis)) "
                         "synthesis workers (engine.rs); more of them synthesise more "
                         "partitions ahead",
                         "extern/cuzk/cuzk-core/src/config.rs, engine.rs", RAISE,
                         raises(MAX_PARALLEL_SYNTHESIS)), threads], True,
                "gapwatch could not tell how many synthesis workers cuzk runs ("
                f"{CAPACITY_NOT_READ}"
                f"{_dropped(pipeline, 'synth_worker_count', 'total_budget_gib')}"
                "): if they were all busy, more workers close these gaps; if not, only faster "
                "synthesis does", [])
    if gaps.full * 2 < gaps.judged:
        # Workers free, nothing synthesised ahead: the partitions in flight are all being
        # synthesised; more workers would idle, faster synthesis closes the gaps.
        return (cpu, True,
                "synthesis workers were free during these gaps: each synthesis is too slow "
                "for the GPU, or the client sent too little work ahead (nothing pending); "
                "which CPU setting helps is not measured here", said)
    workers = gaps.full_workers
    assert workers is not None  # gaps.full > 0 here
    budget = gaps.full_budget if gaps.full_budget is not None else pipeline.budget_total_bytes
    pressed = pressure is not None and pressure >= PSI_PRESSURE_SHARE
    settings, guess, guess_why = _more_workers(
        workers, budget, f"all {workers} synthesis workers were busy with nothing synthesised "
        f"ahead; cuzk runs {WORKERS_FORMULA}")
    if pressure is not None and pressed:
        settings.extend(cpu[1:])
        return (settings, True,
                f"host memory was under pressure during these gaps (PSI some up to "
                f"{pressure * 100:.0f} %): config.rs warns that too many concurrent syntheses "
                "saturate memory bandwidth and slow each one", said)
    return settings, guess, guess_why, []


def _synthesis_unjudged(workers: int, budget: int | None, threads: Setting) -> Found:
    """Synthesis waits no /status snapshot judged (none read during the gaps, or none saying
    both synthesis counts), the log's `synth_worker_count` known: more than that count by the
    knob that limits it (`_more_workers`), if every worker was busy, and faster synthesis if
    not; a guess, as whether they were busy is not known."""
    all_of = _all_of(workers)
    settings, _, limit_unknown = _more_workers(
        workers, budget, f"the log says cuzk runs {workers} synthesis workers "
        f"(synth_worker_count={workers}, 'starting pipeline'), {WORKERS_FORMULA}",
        f", if {all_of} were busy")
    why = (f"no /status snapshot during these gaps said how many of cuzk's {workers} synthesis "
           f"workers (synth_worker_count={workers} in the log) were busy: if {all_of} were, "
           "more workers close these gaps; if not, only faster synthesis does")
    if limit_unknown:
        why += f"; {limit_unknown}"
    return settings + [threads], True, why, []


def advise(gaps: Iterable[Gap], pipeline: PipelineView,
           payoff: Callable[[Sequence[Gap]], IfClosed | None] | None = None,
           rules: Callable[[str, StallGaps], Found | str | None] | None = None,
           notes: Iterable[str] = ()) -> AdviceReport:
    """Advice for `gaps` (in start order: the closed ones and, live, the open ones as far as the
    detector has measured them; retracted ones are dropped here), held as a list: `payoff` is
    given each stall's gaps (see `advise_stalls`, which a caller that cannot hold its gaps
    calls with `by_stall`)."""
    groups: dict[str, list[Gap]] = {}
    for g in gaps:
        if g.retracted:
            continue  # idle after the last busy period: not a gap
        groups.setdefault(stall_of(g, pipeline), []).append(g)
    by = {stall: _digest(stall, these) for stall, these in groups.items()}
    pay = None if payoff is None else (lambda these: payoff(groups[these.stall]))
    return advise_stalls(by, pipeline, pay, rules, notes)


def with_proofs(gap_advice: AdviceReport, troubles: list[Trouble]) -> AdviceReport:
    """What to change, whole: the gaps' advice with the PoSt that failed, were lost, late or at
    risk said first (`proof_advice`, one line a cause). The one rule every "What to change"
    goes through: the report (over every proof of the run), the snapshot's summary.md and the
    dashboard's help screen (`session_advice`); the help said only the gaps' advice beside a
    failed WinningPoSt. Not the verdict (`gapwatch.cuzk.why_now`): that is one GPU's state
    and the stall that idled it, a label set Prometheus alerts read; a PoSt's troubles have
    their own alerts (`gapwatch_proofs_total`, `gapwatch_proofs_late_total`)."""
    return replace(gap_advice, proofs=proof_advice(troubles))


def session_advice(snap: StoreSnapshot, gaps: Iterable[Gap],
                   payoff: Callable[[Sequence[Gap]], IfClosed | None] | None = None,
                   events: Iterable[ProverEvent] | None = None) -> AdviceReport:
    """What to change over what a session holds (`with_proofs`): `gaps` (the caller's: the
    help's every one, the snapshot's those of the span it holds), the one open now included,
    and the troubles of `events` (`ProofTroubles`): the caller's, of the same span as `gaps`
    (the snapshot's; its summary.md said "4 WinningPoSt late" of the whole session beside the
    gaps of the 5 minutes it covers, its own recording's report 2); None: every prover event
    the session holds (the help's)."""
    return with_proofs(advise(gaps, view_of(snap.pipeline), payoff),
                       ProofTroubles(snap.prover_events if events is None else events)
                       .troubles())


def _digest(stall: str, gaps: Iterable[Gap]) -> StallGaps:
    these = StallGaps(stall)
    for g in gaps:
        these.add(g)
    return these


def advise_stalls(by: dict[str, StallGaps], pipeline: PipelineView,
                  payoff: Callable[[StallGaps], IfClosed | None] | None = None,
                  rules: Callable[[str, StallGaps], Found | str | None] | None = None,
                  notes: Iterable[str] = ()) -> AdviceReport:
    """Advice for the gaps of each stall (`by_stall`).
    `payoff`: the caller's payoff for a set of gaps (the report's, over its working span).
    `rules`: the caller's answer for a stall on the path its prover's log shows
    (`gapwatch.cuzk.paths.path_rule`), asked first; None there: the answer below stands.
    `notes`: said with the advice whatever the gaps."""
    out = AdviceReport(notes=list(notes))
    for stall, these in sorted(by.items(), key=lambda kv: -kv[1].idle_s):
        idle = these.idle_s
        pay = payoff(these) if payoff is not None else None
        found = rules(stall, these) if rules is not None else None
        by_path = found is not None
        if found is None:
            found = _settings_for(stall, these, pipeline)
        found = _with_second_worker(stall, found, pipeline, by_path)
        if isinstance(found, str):
            out.no_setting.append(NoSetting(stall, found, len(these), idle, these.open))
            continue
        settings, guess, guess_why, extra = found
        evidence = _evidence(these) + extra
        for s in settings:
            out.advice.append(Advice(stall, s.setting, s.change, s.why, s.source, evidence,
                                     len(these), idle, these.ids.tolist(), guess, guess_why,
                                     pay, these.open, s.pulls, s.step))
    out.conflicts.extend(conflicts(out.advice))
    return out


def conflicts(advice: Sequence[Advice]) -> list[Conflict]:
    """Where the stalls of one report pull one knob opposite ways (`Pull`: a knob's inverse,
    `[memory] safety_margin`, said as the budget it lowers): the one rule that tells, over a
    report's advice (`advise_stalls`), in the order the knobs first come (the advice's: most
    idle first). Each stall is one side's once, by its first advice pulling that way."""
    ways: dict[str, tuple[dict[str, Advice], dict[str, Advice]]] = {}
    for a in advice:
        for pull in a.pulls:
            up, down = ways.setdefault(pull.knob, ({}, {}))
            (up if pull.up else down).setdefault(a.stall, a)
    return [Conflict(knob, tuple(up.values()), tuple(down.values()))
            for knob, (up, down) in ways.items() if up and down]


def conflict_words(c: Conflict) -> str:
    """A conflict in words: each side with its gaps and idle, which cost the most idle, and to
    change that first and measure again before turning the knob back for the other."""
    sides = [_side_words(a, c.knob, True) for a in c.raising] + [
        _side_words(a, c.knob, False) for a in c.lowering]
    first = c.first
    tied = sum(a.idle_s == first.idle_s for a in (*c.raising, *c.lowering)) > 1
    words = STALL_WORDS.get(first.stall, first.stall)
    which = (f"They cost the same idle ({first.idle_s:.1f} s each): change one first (say "
             f"{first.setting} for '{words}')" if tied else
             f"'{words}' cost the most idle ({first.idle_s:.1f} s): change {first.setting} for "
             "it first")
    return (f"{c.knob} is pulled both ways: {'; '.join(sides)}. {which}, then measure again "
            "(gapwatch compare BEFORE AFTER: idle by cause, before and after) before turning "
            "the knob the other way")


def _side_words(a: Advice, knob: str, up: bool) -> str:
    way = "up" if up else "down"
    inverse = "" if a.setting == knob else f" (which moves {knob} {way})"
    count = _count_words(a.gaps, a.idle_s, a.open_gaps)
    return (f"'{STALL_WORDS.get(a.stall, a.stall)}' ({count}) wants it {way}: "
            f"{a.setting}: {a.change}{inverse}")


_Found = Found


PIPELINE_SETTING = Setting(
    "[pipeline] enabled", "true",
    "with the pipeline off every proof is monolithic through filecoin-proofs' heap-backed "
    "prover: no pinned a/b/c, no synthesis overlapping GPU proving",
    "extern/cuzk/cuzk-core/src/engine.rs:3422-3439, extern/cuzk/cuzk.example.toml",
    set_to("true"), raises("[pipeline] enabled"))
MAX_PENDING_SETTING = Setting(
    "Curio [Cuzk] MaxPending", "raise it (default 10), if Curio had proofs waiting",
    "Curio sends at most MaxPending requests to cuzk at once, one limit shared by PoRep, "
    "SnapDeals and PoSt tasks",
    "curio deps/config/types.go:135-138, harmony/taskhelp/max.go:74-76, "
    "documentation/en/experimental-features/cuzk-proving-daemon.md:148-163", RAISE,
    raises("Curio [Cuzk] MaxPending"))
#: Stalls that, with `[pipeline] enabled = false`, are the monolithic workers themselves: each
#: worker synthesises then proves on one blocking thread, nothing overlaps (engine.rs:3362-3440),
#: cuzk runs one worker per GPU whatever `gpu_workers_per_device` says (engine.rs:1333-1337), and
#: registers no job with /status (register_job is only on the pipeline's paths,
#: engine.rs:2247, 2401), so /status reads every gap "no work" and no other setting acts; the
#: log's monolithic worker lines tell a gap in a proof (`monolithic`) from one with none.
PIPELINE_OFF_STALLS = frozenset({
    "no_work", "host_stall", "inside_workers", "copies_not_overlapped", "pageable_copies",
    "slow_copies"})


#: What a second GPU worker per GPU overlaps, and what it does not: the CPU work outside the
#: lock, never copies or kernels (`GPU_LOCK_WORDS`).
SECOND_WORKER_WHY = (
    "with 2 GPU workers per GPU one does its CPU work while the other holds the GPU's lock: its "
    "pickup, the split-vector allocation (pre_lock_cpu_ms) and its prep thread (prep_msm, "
    "started before the lock and run outside it, while the worker waits for the lock: what the "
    "GPU otherwise idles for under the lock, barrier_wait_ms), and b_g2_msm and the epilogue "
    "where the worker runs them itself (CUZK_DISABLE_SPLIT_PROVE=1; else a finalizer task "
    "does): 'eliminates the 10-200ms GPU idle gaps between partition proves' "
    "(cuzk.example.toml; the default is 2, config.rs). "
    f"It overlaps no copies and no kernels: {GPU_LOCK_WORDS}")
SECOND_WORKER_SOURCE = ("extern/cuzk/cuzk.example.toml, cuzk-core/src/config.rs, "
                        "engine.rs:2916-2955; extern/supraseal-c2/cuda/groth16_cuda.cu:900-1070")
#: Stalls where the GPU waited between one worker's proves, on that worker's own CPU work:
#: `inside_workers` (every worker of the GPU holding a partition while it idles: CPU work before
#: the lock, cuzk's locks at pickup, or the wait for prep under the lock). With one worker per
#: GPU a second closes the part outside the lock (`SECOND_WORKER_WHY`). Not `dispatch_stall`: a
#: worker free while a partition waits for it (`gapwatch.cuzk.causes`) waits on the dispatch
#: itself (the StatusTracker's lock, `status_ms`), where a second worker would wait the same.
BETWEEN_PROVES_STALLS = frozenset({"inside_workers"})
ONE_WORKER_SAID = "the log's 'initializing GPU workers' says gpu_workers_per_device=1"


#: `CUZK_DISABLE_SPLIT_PROVE=1` (read from the log by `gapwatch.cuzk.paths`): the worker is held
#: through b_g2_msm and the epilogue. Here because a second worker is advised beside it
#: (`_with_second_worker`): with one worker the GPU idles through that CPU tail.
SPLIT_PROVE_SETTING = Setting(
    "env CUZK_DISABLE_SPLIT_PROVE", "unset it",
    "=1 proves synchronously: the worker is held through b_g2_msm and the epilogue, so the "
    "prove/finish overlap is gone and the GPU idles during the CPU tail",
    "extern/cuzk/cuzk-core/src/engine.rs:3075, 3139", UNSET)


def second_worker(change: str = "2 (the default)") -> Setting:
    """`[gpus] gpu_workers_per_device = 2`, saying what it closes (`SECOND_WORKER_WHY`)."""
    return Setting(GPU_WORKERS_PER_DEVICE, change, SECOND_WORKER_WHY, SECOND_WORKER_SOURCE,
                   set_to("2"), raises(GPU_WORKERS_PER_DEVICE))


def second_worker_closes(stall: str, pipeline: PipelineView) -> bool:
    """Whether a second GPU worker per GPU is advised for `stall`: the GPU waited between one
    worker's proves (`BETWEEN_PROVES_STALLS`), the log says one worker per GPU, and the
    pipeline is not off (cuzk then runs one whatever the setting, engine.rs:1333-1337, and
    `[pipeline] enabled = true` is the advice)."""
    return (stall in BETWEEN_PROVES_STALLS and pipeline.gpu_workers_per_device == 1
            and pipeline.pipeline_enabled is not False)


def _with_second_worker(stall: str, found: Found | str, pipeline: PipelineView,
                        by_path: bool = False) -> Found | str:
    """`found` (the path's answer, `by_path`, or the general one) with `[gpus]
    gpu_workers_per_device = 2` added where a second worker closes the stall
    (`second_worker_closes`): the one place it is added, whoever answered. Not beside a path's
    wait on cuzk's JobTracker mutex (its no-setting words, or `CUZK_VALIDATE_PARTITIONS`): every
    GPU worker takes that mutex at pickup (engine.rs:3031, 3047), so a second one waits on it
    the same, as for a dispatch stall; beside `CUZK_DISABLE_SPLIT_PROVE` it stays (with one
    worker the GPU idles through the synchronous prove's CPU tail, which a second overlaps)."""
    if not second_worker_closes(stall, pipeline):
        return found
    if by_path and (isinstance(found, str) or SPLIT_PROVE_SETTING not in found[0]):
        return found
    said = [f"{ONE_WORKER_SAID}: the GPU idles while its one worker does the CPU work between "
            "its proves"]
    if isinstance(found, str):
        return [second_worker()], False, "", [*said, f"what else the log shows: {found}"]
    settings, guess, guess_why, evidence = found
    return [*settings, second_worker()], guess, guess_why, [*evidence, *said]


def pipeline_off_evidence(by_workers: bool) -> str:
    """What says the pipeline is off: the run's start line, or, where it was not read (a log
    followed from its end), its monolithic workers' lines, which only that mode writes."""
    if by_workers:
        return ("the log's monolithic GPU workers ('processing job (monolithic)', "
                "engine.rs:3397) run only with the pipeline off (engine.rs:1333-1337, 3362); "
                "this run's 'starting cuzk engine' line was not read")
    return "the log's 'starting cuzk engine' says pipeline_enabled=false"


def _pipeline_off(stall: str, pipeline: PipelineView) -> Found:
    """`[pipeline] enabled = true`, for a stall the pipeline being off explains (see
    `PIPELINE_OFF_STALLS`); for `no_work`, where the log shows no proof in flight, Curio's
    limit as a guess."""
    evidence = [pipeline_off_evidence(pipeline.pipeline_off_by_workers)]
    if stall == "copies_not_overlapped" or stall in BETWEEN_PROVES_STALLS:
        evidence.append("with the pipeline off cuzk runs one GPU worker per GPU whatever "
                        "[gpus] gpu_workers_per_device says (engine.rs:1333-1337): setting "
                        "it to 2 changes nothing")
    if stall != "no_work":
        return [PIPELINE_SETTING], False, "", evidence
    # The log says the pipeline is off, so its monolithic workers' lines are read: a gap in a
    # proof they hold is `monolithic` (PipelineFacts.log_view); one left `no_work` had none.
    evidence.append("no monolithic worker held a proof during these gaps (its 'processing "
                    "job (monolithic)' .. end lines, engine.rs:3397-3475), and /status lists "
                    "none with the pipeline off")
    return ([MAX_PENDING_SETTING], True,
            "gapwatch sees cuzk with no proof to work on, not whether Curio had proofs "
            "waiting", evidence)


def _settings_for(stall: str, gaps: StallGaps, pipeline: PipelineView) -> _Found | str:
    """The settings for one stall, or why none applies (a string)."""
    if pipeline.pipeline_enabled is False and stall in PIPELINE_OFF_STALLS:
        return _pipeline_off(stall, pipeline)
    if second_worker_closes(stall, pipeline):
        return [], False, "", []  # the setting is `_with_second_worker`'s to add
    if stall == "dispatch_stall":
        return _queued_at_end_words(gaps) if gaps.queued_at_end else _dispatch_stall_words(
            len(gaps), gaps.worker_free_unshown)
    why = _NO_SETTING.get(stall)
    if why is not None:
        return why
    rule = _RULES.get(stall)
    if rule is None:
        return "PCIe was not measured: the cause cannot be told"
    return rule(gaps, pipeline)


def _for_waits_on_synthesis(gaps: StallGaps, pipeline: PipelineView) -> _Found | str:
    return _synthesis(gaps, pipeline)


def _for_waits_on_budget(gaps: StallGaps, pipeline: PipelineView) -> _Found | str:
    over = pipeline.over_budget
    if over is not None and gaps.over_budget:
        return _for_over_budget(over)
    return ([Setting(TOTAL_BUDGET, RAISE_BUDGET,
                     "the dispatcher acquires a partition's budget (PoRep 14 GiB, SnapDeals 9 "
                     "GiB) before a synthesis worker takes it (engine.rs, memory.rs): with less "
                     "free, synthesis waits however many workers are free",
                     "extern/cuzk/cuzk.example.toml, cuzk-core/src/memory.rs", CHANGE,
                     raises(TOTAL_BUDGET))], False, "",
            # Not eviction_min_idle: the PoRep PCE is touched by every PoRep job and never
            # idles, and nothing reads it (pipeline.rs:1223-1241 get no cache).
            ["a PCE in /status allocations.pce holds budget unused by this cuzk version "
             "(pipeline.rs:1223-1241) and, touched by every PoRep job, never idles: "
             "eviction_min_idle frees nothing"])


def _for_over_budget(over: OverBudget) -> _Found:
    """A request larger than the whole budget: only a larger budget, or a smaller request,
    lets it through."""
    need = (f"raise it above {over.amount_gib:g} GiB, the request's size" if over.amount_gib
            is not None else "raise it above the request's size")
    settings = [Setting(TOTAL_BUDGET, f"{need} (or, with \"auto\", lower safety_margin), "
                        "if the host has the RAM",
                        "acquire loops until used + amount fits the total, which never holds "
                        "for a request over the total (memory.rs:187-236), so it waits until "
                        f"cuzk restarts: {over.blocks()}",
                        "extern/cuzk/cuzk-core/src/memory.rs:187-236, engine.rs:1478, "
                        "1623-1628, 1927-1971, cuzk.example.toml", CHANGE,
                        raises(TOTAL_BUDGET))]
    if over.amount_gib is not None and over.amount_gib >= POREP_BATCH_FULL_BYTES // GIB:
        settings.append(batch_setting(["porep-c2"]))  # a 136 GiB request is a PoRep batch's
    return settings, False, "", []


def _for_pacer_hold(gaps: StallGaps, pipeline: PipelineView) -> _Found | str:
    target = pipeline.pacer_target
    return ([Setting("[pipeline] max_gpu_queue_depth",
                     f"raise it above {target}, or 0 to turn the pacer off" if target else
                     "raise it, or 0 to turn the pacer off",
                     "the PI pacer dispatches synthesis to keep this many synthesised "
                     "partitions waiting for the GPU; 0 = no throttle, the default (config.rs)",
                     "extern/cuzk/cuzk-core/src/config.rs, engine.rs", RAISE,
                     raises("[pipeline] max_gpu_queue_depth"))], False, "",
            [f"pacer: {_pacer_words(pipeline)}"] if pipeline.pacer else [])


def _for_srs_loading(gaps: StallGaps, pipeline: PipelineView) -> _Found | str:
    if pipeline.srs_evictions:
        return ([Setting("[memory] eviction_min_idle", "raise it (default 5m)",
                         "idle SRS/PCE entries become eviction candidates after this long; "
                         "'set higher for stable workloads' (cuzk.example.toml): an evicted "
                         "SRS is loaded again from disk (30-60 s, cuzk-memory-manager.md)",
                         "extern/cuzk/cuzk.example.toml, cuzk-core/src/srs_manager.rs", RAISE,
                         raises("[memory] eviction_min_idle"))], False,
                "", [f"SRS evicted before: {', '.join(pipeline.srs_evictions)}"])
    return ("the first proof of each circuit type loads its SRS on demand (srs_manager.rs; "
            "the [srs] preload key is deprecated and ignored, config.rs:402): nothing to change "
            "unless it repeats; to have it loaded before a proving window, call cuzk's gRPC "
            "PreloadSRS with its circuit id (porep-32g, wpost-32g, ...; upstream's test tool: "
            "cuzk-bench preload --circuit-id ID), which loads it through the memory budget "
            "(engine.rs:3623-3657); idle, it is evictable as any SRS (engine.rs:1279-1287)")


def _for_pinned_pool(gaps: StallGaps, pipeline: PipelineView) -> _Found | str:
    pool = pipeline.pool
    facts = []
    if pool is not None and not gaps.with_evidence:
        facts.append(f"{pool.checkout_failed} checkout(s) FAILED, {pool.alloc_failed} "
                     "cudaHostAlloc failure(s) in the log")
    churn, churn_why = _pool_churn(gaps, pipeline, facts)
    dropped = _dropped_sizes(pipeline)
    if dropped is not None:
        facts.append(dropped)
    # How much, from the log's own figures where it gives them (`gapwatch.cuzk.pin_need`).
    need = pin_need(pipeline)
    since = need.since_words()
    if since is not None:
        facts.append(since)
    # What the host's readings at the failures make of RAM (`gapwatch.cuzk.pin_host`).
    host = need.host_words()
    if host is not None:
        facts.append(host)
    settings: list[Setting] = []
    fitted = need.budget_change()
    if fitted is not None:
        settings.append(_fitted_budget(fitted))
    elif need.budget_above_ram:
        facts.append(need.budget_not_fitted())
    margin_change = need.margin_change()
    if need.budget_above_ram or need.ram_ruled_out:
        # Not read (the budget is not "auto"), or RAM outside the budget was not short.
        facts.append(need.margin_not_advised())
    elif margin_change is None:
        # The budget is at cuzk's floor already: a larger margin leaves it unable to prove.
        facts.append(need.margin_not_raised())
    else:
        settings.append(_margin(margin_change))
    cap_change = need.cap_change()
    if cap_change is None:
        # Not one buffer pinned, or cuzk at its least workers: a cap changes nothing.
        facts.append(need.not_capped())
    else:
        settings.append(Setting(
            MAX_PARALLEL_SYNTHESIS, cap_change,
            "each partition holds 3 pinned a/b/c buffers from synthesis until its GPU "
            "prove starts (pinned_pool.rs): fewer partitions in flight need fewer",
            "extern/cuzk/cuzk-core/src/pinned_pool.rs, config.rs", LOWER,
            lowers(MAX_PARALLEL_SYNTHESIS)))
    # The cause judged from the data: RAM ruled out leads, with what else fails a pin.
    not_ram = need.not_ram_words() if need.ram_ruled_out else None
    if not settings and not churn:
        if not_ram is not None:
            return f"{not_ram}. " + "; ".join(facts)
        return ("no setting helps the pinned pool by the log's figures: "
                + "; ".join(facts))
    ram = ("the host's readings say RAM was short when it failed" if need.ram_short else
           "RAM left outside cuzk's budget is the likeliest")
    guess_why = not_ram if not_ram is not None else (
        f"upstream does not say why cudaHostAlloc fails ({need.cuda_words()}); {ram}")
    return ([*settings, *churn], True, guess_why + churn_why, facts)


def _fitted_budget(change: str) -> Setting:
    """`[memory] total_budget` lowered below the host's RAM (`PinNeed.budget_change`), where
    the log's budget is above it: then it is not "auto" and the margin is not read."""
    return Setting(
        TOTAL_BUDGET, change,
        "cuzk reserves each partition's memory from its budget before synthesising it "
        "(engine.rs:1628, memory.rs): a budget above the host's RAM lets those reservations, "
        "the pinned a/b/c that stand in for their heap among them (pinned_pool.rs:127-129, "
        "194-198), count on memory the box does not have",
        "extern/cuzk/cuzk-core/src/memory.rs, engine.rs, pinned_pool.rs, config.rs:100-104, "
        "cuzk.example.toml", LOWER, lowers(TOTAL_BUDGET))


def _margin(change: str) -> Setting:
    """`[memory] safety_margin` with `change` (`PinNeed.margin_change`). It is read only with
    total_budget = "auto" (config.rs:100-104): with an explicit budget, raising it changes
    nothing, so the change says which to turn, and so does its step (`RAISE_MARGIN`: the log
    never says whether the budget was "auto"). Either reading lowers the budget: its pull is
    the budget's, down (`Pull`)."""
    return Setting(
        "[memory] safety_margin", change,
        "the pinned pool grows on demand with cudaHostAlloc and is not budget-checked: "
        "a buffer in use stands for a/b/c heap inside its partition's reservation, but "
        "idle ones stay pinned outside any accounting (pinned bytes are never in "
        "used_bytes) until the evictor frees them, and it frees and re-pins them on "
        "short acquires (pinned_pool.rs:127-129, 194-198; memory.rs:214-225); a failed "
        "checkout means pinning a new buffer failed (pipeline.rs falls back to pageable "
        "a/b/c, copied at 1-4 GB/s)",
        "extern/cuzk/cuzk-core/src/pinned_pool.rs, memory.rs, pipeline.rs, "
        "config.rs:100-104, cuzk.example.toml", RAISE_MARGIN, lowers(TOTAL_BUDGET))


def _pool_churn(gaps: StallGaps, pipeline: PipelineView, facts: list[str]
                ) -> tuple[list[Setting], str]:
    """`[pipeline] max_gpu_queue_depth`, said as a guess, where the pool churned before it
    failed (`gapwatch.cuzk.pool_churn`; the churn's words added to `facts` where the gaps'
    evidence does not carry them), or where churn could not be seen: the log kept at WARN
    (`PoolChurnView.unseen`), upstream's reference names the knob the plausible lever for
    cudaHostAlloc failures (cuzk-upstream-paths.md 2.3-2.4). ([], "") otherwise: INFO lines
    read and no churn before the failures (or a pool that pinned nothing, said in `facts`), or
    the pacer already on."""
    churn = pipeline.pool_churn
    if churn is None:
        return [], ""
    span = churn.before_failure()
    latest = gaps.latest
    # Said once: where the latest gap's cited evidence (`_evidence`) already carries it.
    line = facts_of(latest).pool_churn_line if latest is not None else None
    cited = line is not None and line < CITED
    if span is None:
        unseen = churn.unseen()
        if unseen is None:
            return [], ""  # the pool's lines were read: no churn came before the failures
        if not cited:
            facts.append(unseen.words)
        if unseen.hidden_why is None:
            facts.append(NO_CHURN_NO_QUEUE_DEPTH)
            return [], ""
        why = "; " + unseen.hidden_why
    else:
        if not cited:
            facts.append(span.failure_words())
        why = "; " + QUEUE_DEPTH_GUESS_WHY
    if pipeline.pacer_on:
        facts.append(f"the dispatch pacer is on (gpu_queue_target={pipeline.pacer_target}, "
                     "engine.rs:1456)" + (" and the pool still churned" if span is not None
                                          else "") + ": no setting is known to stop churn")
        return [], ""
    return [QUEUE_DEPTH_GUESS], why


def _for_first_synthesis(gaps: StallGaps, pipeline: PipelineView) -> _Found | str:
    latest = gaps.latest
    wave = wave_of(pipeline.first_waves, gap_moment(latest)) if latest is not None else None
    pool = pipeline.pool
    return wave_words(wave, pool.first_syntheses if pool is not None else 0)


def _for_copies_not_overlapped(gaps: StallGaps, pipeline: PipelineView) -> _Found | str:
    """Copies at line rate with the SMs idle: under cuzk's per-GPU lock, which no worker count
    overlaps (`COPIES_UNDER_LOCK`). With one worker a second is still named, a guess: it closes
    only the part of such a gap that was that worker's CPU work between proves."""
    per = pipeline.gpu_workers_per_device
    only_cpu = ("these gaps are copies at line rate with the SMs idle, and "
                f"{COPIES_UNDER_LOCK}: a second worker closes only the part of them that was "
                "the one worker's CPU work between proves, which the samples do not tell from "
                "the copies")
    if per == 1:
        return [second_worker()], True, only_cpu, [ONE_WORKER_SAID]
    if per is None:
        return ([second_worker("2, if it is 1")], True,
                "the log read did not say how many GPU workers cuzk runs per GPU (its "
                f"'initializing GPU workers' line{_dropped(pipeline, 'gpu_workers_per_device')})"
                f"; and at 1, {only_cpu}", [])
    return (f"already {per} GPU workers per GPU, and no worker count overlaps these copies: "
            f"{COPIES_UNDER_LOCK}")


def _for_monolithic(gaps: StallGaps, pipeline: PipelineView) -> _Found | str:
    if pipeline.pipeline_enabled is False:
        found = _pipeline_off("monolithic", pipeline)
        if gaps.kinds and gaps.kinds <= set(POST_KINDS):
            # Gaps in PoSt alone: with the pipeline on a PoSt is synthesised then proved too.
            return found[0], True, (
                "a PoSt is synthesised, then proved, with the pipeline on too (pipeline.rs:"
                "3015, 3210): turning it on closes these gaps only where other work waits for "
                "the GPU meanwhile"), found[3]
        return found
    batched = gaps.batched
    if batched:
        return ([batch_setting(gaps.kinds)], False, "",
                [f"{batched} of {len(gaps)} gap(s) during a batch job (TIMELINE "
                 "SYNTH_START kind=porep-c2 or snap-update, no partition)"])
    return ("PoSt proofs (WindowPoSt, WinningPoSt) are monolithic and unpinned by design "
            "(pipeline.rs:3015, 3210): they take the GPU in turn; a PoRep or SnapDeals "
            "batch would be [scheduler] max_batch_size > 1 (read with the prover's log)")


_BATCH_WAIT_WHY = (
    "with max_batch_size > 1 a PoRep or SnapDeals request is held in cuzk's batch collector "
    "until max_batch_size of its kind arrive or max_batch_wait_ms (default 10 000) passes; "
    "no job is registered meanwhile, so the GPU idles with /status empty")
_BATCH_WAIT_SOURCE = ("extern/cuzk/cuzk-core/src/engine.rs:1984-2011, 2053; "
                      "batch_collector.rs:119-157, 165-168; config.rs:202-212")
#: Either closes a batch wait, each its own advice: `gapwatch compare` reads each setting from
#: its own startup field, and one advice naming both read "unchanged: max_batch_size 2 on both"
#: of a run that lowered max_batch_wait_ms as it said.
BATCH_WAIT_MS_SETTING = Setting("[scheduler] max_batch_wait_ms",
                                "lower it (0 = flush at once), to keep batching",
                                _BATCH_WAIT_WHY, _BATCH_WAIT_SOURCE, LOWER,
                                lowers("[scheduler] max_batch_wait_ms"))
BATCH_WAIT_SETTINGS = [
    Setting("[scheduler] max_batch_size", "1 (the default): no request waits for company",
            _BATCH_WAIT_WHY, _BATCH_WAIT_SOURCE, set_to("1"),
            lowers("[scheduler] max_batch_size")),
    BATCH_WAIT_MS_SETTING,
]


def _for_batch_wait(gaps: StallGaps, pipeline: PipelineView) -> _Found | str:
    """Gaps the log shows cuzk's batch collector held a request through (its timeout flush,
    `PipelineFacts._batch_sent`): the wait is cuzk's own, not the client's."""
    return list(BATCH_WAIT_SETTINGS), False, "", [
        f"{len(gaps)} gap(s) while cuzk held a request until max_batch_wait_ms ran out "
        "('processing batch' in span synth_timeout_flush, engine.rs:2012)",
        # The payoff takes the work as fixed; a request held is sent sooner either way, but
        # the GPU is busier only if more work was waiting behind it.
        "the payoff holds where the next request was waiting on this one's result; requests "
        "that come on a clock lose the wait, not the idle (gapwatch compare tells which)"]


def _for_no_work(gaps: StallGaps, pipeline: PipelineView) -> _Found | str:
    return ("the prover had nothing to do: the client (Curio) sent no work; Curio's "
            "[Cuzk] MaxPending (default 10) caps what it sends")


def _for_empty_pipeline(gaps: StallGaps, pipeline: PipelineView) -> _Found | str:
    """Gaps the log shows began with nothing in cuzk's pipeline and ended on the first synthesis
    of work that came after (`PipelineFacts._empty_start_view`): not the synthesis workers'
    (with the pacer off they all started that work at once), but work not sent ahead. Curio's
    limit, as a guess: gapwatch cannot see whether Curio had more to send; and where cuzk's
    batch collector held the new request for part of a gap, `max_batch_wait_ms` beside it."""
    settings = [MAX_PENDING_SETTING]
    facts = []
    if gaps.batch_held:
        settings.append(BATCH_WAIT_MS_SETTING)
        facts.append("cuzk's batch collector held the new request for part of a gap "
                     "(max_batch_wait_ms ran out before its synthesis began)")
    facts += _new_work_facts(gaps, pipeline)
    facts.append("what closes them: the next request at cuzk while the GPU proves the last "
                 "partitions of the one before, so that its synthesis overlaps them")
    return (settings, True,
            "gapwatch sees cuzk's pipeline run empty between requests, not whether Curio had "
            "proofs waiting to send: if it had none, no setting closes these gaps", facts)


def _new_work_facts(gaps: StallGaps, pipeline: PipelineView) -> list[str]:
    """How an empty pipeline's new work was started, as each gap's own facts say it
    (`StallGaps.paced`, `at_once`: the pacer of the gap's own daemon, docs/post.md "Two
    daemons"); gaps whose facts say neither, as the view's pacer (the first daemon's).
    Gaps of both kinds (a PoRep daemon pacing, a PoSt-only one not): each said with its count."""
    paced = dict(gaps.paced)
    at_once = gaps.at_once
    if gaps.pacing_unsaid:
        if pipeline.pacer_on and pipeline.pacer_target is not None:
            paced[pipeline.pacer_target] = paced.get(pipeline.pacer_target, 0) \
                + gaps.pacing_unsaid
        else:
            at_once += gaps.pacing_unsaid
    n_paced = sum(paced.values())
    both = bool(n_paced and at_once)
    out = []
    if n_paced:
        targets = " or ".join(str(t) for t in sorted(paced))
        whose = f"{n_paced} of {n_paced + at_once} gap(s): " if both else ""
        out.append(
            f"{whose}nothing was synthesising at each gap's start and the gap ended with the "
            "new work's first synthesis; the dispatch pacer is on (their own daemon's, as each "
            f"gap's evidence says: [pipeline] max_gpu_queue_depth, gpu_queue_target={targets}): "
            "it paces the new work, one partition dispatched a tick, a drained pipeline "
            "re-entering its bootstrap (engine.rs:1480-1524, 262-266)")
    if at_once or not n_paced:
        whose = (f"{at_once} of {n_paced + at_once} gap(s), their daemon's dispatch pacer off: "
                 if both else "")
        out.append(
            f"{whose}more synthesis workers cannot close these gaps ([pipeline] "
            "max_parallel_synthesis is not the limit): nothing was synthesising at each gap's "
            "start, the free workers all took the new work's partitions at once "
            "(engine.rs:1475, 1678), and the gap ended with the first one's synthesis, "
            "whatever their number")
    return out


#: Of dispatch stalls whose queued partitions no worker took before the recording ended
#: (`{free}`: whether a GPU worker was shown free, `_worker_free_words`).
_QUEUED_AT_END = (
    "the partitions were synthesised (no synthesis shortfall) and {free}, but "
    "none was picked up before the recording ended (GPU_QUEUE with no GPU_PICKUP after): the "
    "prover took no more work at the recording's end (its load ended, a shutdown, a hung "
    "worker?), or the recording ended first; a run's end, not a stall a setting closes")


def _worker_free_words(at_end: int, unshown: int) -> str:
    """Whether a GPU worker was free during the `at_end` gaps of work queued to the recording's
    end: said only of those whose worker holds read showed one (`unshown` did not)."""
    if unshown == 0:
        return "a GPU worker was free"
    if unshown == at_end:
        return "queued, with no GPU worker's holds read showing one free"
    return (f"a GPU worker was free in {at_end - unshown} of them (in {unshown}, no GPU "
            "worker's holds read showing one free)")


def _queued_at_end_words(gaps: StallGaps) -> str:
    """Why no setting closes dispatch stalls some of which (`StallGaps.queued_at_end`) are
    the recording's end with work left queued: said of those, and the upstream reason of the
    others where there are any."""
    at_end = _QUEUED_AT_END.format(
        free=_worker_free_words(gaps.queued_at_end, gaps.queued_at_end_unshown))
    if gaps.queued_at_end == len(gaps):
        return f"no cuzk setting: {at_end}"
    others = _dispatch_stall_words(len(gaps) - gaps.queued_at_end,
                                   gaps.worker_free_unshown - gaps.queued_at_end_unshown)
    return (f"{others}; {gaps.queued_at_end} of these {len(gaps)} "
            f"gap(s) at the recording's end: {at_end}")


#: Why no setting closes a dispatch stall a worker showed idle through.
_IDLE_WORKER_WHY = (
    "before a worker shows busy only the StatusTracker's lock (status_ms, engine.rs:3018-3021) "
    "is on cuzk's path, and the log read did not show it long")


def _dispatch_stall_words(n: int, unshown: int) -> str:
    """Why no setting closes `n` dispatch stalls (not at the recording's end): that a worker
    showed idle is said only of those whose worker holds read or `/status` showed one
    (`unshown` did not: `ProverGapFacts.worker_free_unshown`); called by `_settings_for` and
    `_queued_at_end_words`."""
    if unshown == 0:
        return _NO_SETTING["dispatch_stall"]
    if unshown >= n:
        return ("no cuzk setting is shown to close it: synthesised partitions waited in the GPU "
                "queue, no GPU worker's holds read showing one free (a dispatch stall, or every "
                "GPU worker busy: the log read does not show which; cuzk's log from its start, "
                "its GPU_PICKUP lines naming workers, or /status would)")
    return (f"no cuzk setting: a worker showed idle while synthesised partitions waited in "
            f"{n - unshown} gap(s) (in {unshown} more, they waited in the GPU queue, no GPU "
            f"worker's holds read showing one free); {_IDLE_WORKER_WHY}")


_NO_PINNED_POOL_FAILURE = (
    "no pinned-pool failure in the log read, so nothing says which setting: with cuzk's log "
    "followed (its pinned pool lines) or the copy trace, gapwatch can tell")
#: Stalls no cuzk setting closes, and why.
_NO_SETTING: dict[str, str] = {
    "dispatch_stall": (
        f"no cuzk setting: a worker showed idle while synthesised partitions waited; "
        f"{_IDLE_WORKER_WHY}"),
    "inside_workers": (
        "inside the GPU workers (CPU prep, the GPU mutex, cuzk's JobTracker mutex after "
        "pickup): no setting is shown to close it; the GPU_TIMING hot_path line (fail_check_ms, "
        "mark_busy_ms) and the CUZK_TIMING lines (barrier_wait_ms, mutex_wait_ms) say where"),
    "pageable_copies": _NO_PINNED_POOL_FAILURE,
    "slow_copies": _NO_PINNED_POOL_FAILURE,
    # Not "follow its log": with the log and /status read, a gap can still be of no known
    # cause, and the inputs not read are said apart ("What gapwatch lacks").
    "host_stall": (
        "cuzk's log (--log) and /status (--cuzk-status) name most waits where they are "
        "read; none named these"),
    # The restart's words (gapwatch.cuzk.restarts), not the SRS load's "nothing to change
    # unless it repeats": after each restart it does repeat, and so does the rest.
    "restart": (
        f"at each restart of cuzk {STARTS_AGAIN}: the GPU idles from the old run's last work "
        "to the new run's first, the SRS reload part of that cost (each gap's evidence gives "
        "the cost and its parts), and it repeats at every restart. Restart cuzk only when "
        "needed, well before a proving window, and find why it stopped: each restart says "
        f"whether it came {AFTER_SIGINT} or {KILLED}, or that this is not known (no INFO "
        "line of the old run read), and a gap's hint names a prover error just before it"),
    # What /proc showed, nothing of cuzk: the process may be of any name (the H200 stand-in's
    # is python3), and cuzk's restart words (its SIGINT, its pipeline state) would be a claim.
    "process_replaced": (
        "/proc showed the GPU's process gone and a new pid of its name on the GPU "
        "(each gap's evidence names both pids and when), the GPU idle from the old process's "
        "last work to the new one's first; the process is not known to be cuzk's (its name is "
        "not cuzk's), so no cuzk advice: find why the process stopped (its own log, the "
        "service manager's, the kernel's OOM lines)"),
}
#: The stalls a setting can close: the rule that picks it.
_RULES: dict[str, Callable[[StallGaps, PipelineView], _Found | str]] = {
    "waits_on_synthesis": _for_waits_on_synthesis,
    "waits_on_budget": _for_waits_on_budget,
    "pacer_hold": _for_pacer_hold,
    "srs_loading": _for_srs_loading,
    "pinned_pool": _for_pinned_pool,
    "first_synthesis": _for_first_synthesis,
    "copies_not_overlapped": _for_copies_not_overlapped,
    "monolithic": _for_monolithic,
    "batch_wait": _for_batch_wait,
    "empty_pipeline": _for_empty_pipeline,
    "no_work": _for_no_work,
}


def _pacer_words(pipeline: PipelineView) -> str:
    p = pipeline.pacer or {}
    return " ".join(f"{k}={p[k]}" for k in ("waiting", "ema_waiting", "interval_ms", "in_flight")
                    if k in p)


def advice_lines(report: AdviceReport, indent: str = "  ") -> list[str]:
    """The advice as text lines: the report's "What to change" section, summary.md and the
    help screen say it in these words."""
    # A failed or late PoSt first: a block lost is the operator's first question.
    out = proof_advice_lines(report.proofs, indent)
    out += [f"{indent}note: {n}" for n in report.notes]
    # Before the settings: which to change first is said before any is acted on.
    out += [f"{indent}conflict: {conflict_words(c)}" for c in report.conflicts]
    if not report.advice and not report.no_setting:
        if report.proofs:  # never "nothing to change" beside them
            return [*out, f"{indent}no gap to advise on"]
        return [*out, f"{indent}nothing to change: no gap"]
    by_stall: dict[str, list[Advice]] = {}
    for a in report.advice:
        by_stall.setdefault(a.stall, []).append(a)
    for stall, items in by_stall.items():
        first = items[0]
        out.append(f"{indent}{_count_words(first.gaps, first.idle_s, first.open_gaps)}: "
                   f"{STALL_WORDS.get(stall, stall)}")
        for a in items:
            out.append(f"{indent}  - {a.setting}: {a.change} ({a.source})")
            out.append(f"{indent}    why: {a.why}")
        if first.guess:
            out.append(f"{indent}    a guess: {first.guess_why}")
        for e in first.evidence:
            out.append(f"{indent}    evidence: {e}")
        pay = first.payoff
        if pay is not None and pay.throughput_gain:
            busy = pay.busy_fraction
            to = f"busy → {busy * 100:.0f} %, " if busy is not None else ""
            # Said with the span it is over and the gaps it closes (`gain_words`), as the
            # headline, the alert and --on-event say theirs over the live window.
            gain = gpu_time_words(pay.throughput_gain, pay.span_s, first.gaps,
                                  pay.link_limit_s, pay.limited_by)
            out.append(f"{indent}    payoff if closed: {to}throughput {gain}")
    for n in report.no_setting:
        out.append(f"{indent}{_count_words(n.gaps, n.idle_s, n.open_gaps)}: "
                   f"{STALL_WORDS.get(n.stall, n.stall)}: no setting: {n.why}")
    return out


def _count_words(gaps: int, idle_s: float, open_gaps: int) -> str:
    """`3 gap(s), 4.2 s idle`, or with open ones `3 gap(s) (1 still open), 4.2 s idle so
    far`: an open gap's idle time is not final."""
    if not open_gaps:
        return f"{gaps} gap(s), {idle_s:.1f} s idle"
    return f"{gaps} gap(s) ({open_gaps} still open), {idle_s:.1f} s idle so far"


def advice_json(report: AdviceReport) -> dict[str, Any]:
    """The advice as the report's JSON gives it (docs/advice.md)."""
    return {
        "proof_advice": [a.json() for a in report.proofs],
        "advice": [{
            "stall": a.stall, "stall_words": STALL_WORDS.get(a.stall, a.stall),
            "setting": a.setting, "change": a.change, "why": a.why, "source": a.source,
            "evidence": a.evidence, "gaps": a.gaps, "idle_s": a.idle_s, "gap_ids": a.gap_ids,
            "guess": a.guess, "guess_why": a.guess_why or None,
            "payoff": None if a.payoff is None else a.payoff.json(),
        } for a in report.advice],
        "no_setting": [{"stall": n.stall, "stall_words": STALL_WORDS.get(n.stall, n.stall),
                        "why": n.why, "gaps": n.gaps, "idle_s": n.idle_s}
                       for n in report.no_setting],
        "advice_notes": list(report.notes),
        "advice_conflicts": [{
            "knob": c.knob,
            "raising": [_side_json(a) for a in c.raising],
            "lowering": [_side_json(a) for a in c.lowering],
            "first": _side_json(c.first), "words": conflict_words(c),
        } for c in report.conflicts],
    }


def _side_json(a: Advice) -> dict[str, Any]:
    return {"stall": a.stall, "setting": a.setting, "change": a.change, "gaps": a.gaps,
            "idle_s": a.idle_s}

