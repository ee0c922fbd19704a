"""cuzk as the detector's prover (`gapwatch.core.prover.Prover`): its log and `/status` fed to
`PipelineFacts`, and per gap the cause its snapshots and log give, in the hint's words.

Who calls it: the composition roots (`gapwatch.engine.runtime`, `gapwatch.offline.detect`)
make one `CuzkProver` per session and hand it to the detector; the detector's evidence keeps one
`CuzkGap` per gap. The rules are `gapwatch.cuzk.causes` (per snapshot) and
`gapwatch.cuzk.pipeline.PipelineFacts.log_view` (the log); a gap's cause is the most frequent
cause among the snapshots taken during it, else the one just before it, refined by the log.
Pure: no I/O, no clocks; every history is bounded.
"""

from __future__ import annotations

from collections import deque

from msgspec.structs import replace

from gapwatch.core.evidence_types import CauseSaidBy, ProverGapFacts
from gapwatch.core.models import HostSample, LogEvent, ProcessMemory, ProverStatus
from gapwatch.core.prover import ProverGap, ProverView
from gapwatch.cuzk.causes import (
    cause_detail,
    concerns,
    decide_cause,
    gap_state,
    snapshot_cause,
    snapshot_evidence,
    with_log_cause,
)
from gapwatch.cuzk.first_wave import unpinned_by_design
from gapwatch.cuzk.pipeline import (
    COPIES_UNDER_LOCK_HINT,
    EMPTY_PIPELINE_CAUSE,
    NO_FACTS,
    Capacity,
    PipelineFacts,
    PipelineView,
)

#: Prover snapshots published per gap version (the latest ones).
MAX_PROVER_PUBLISHED = 12


#: What each finer cause (`gapwatch.cuzk.causes.PROVER_CAUSES`) means, in the hint's words.
PROVER_CAUSE_WORDS: dict[str, tuple[str, str]] = {
    # cause: (what it means, the fact in parentheses; the gap's own figure joins it)
    "waits_on_synthesis": ("the GPU waits on synthesis", "no partition synthesised ahead"),
    "dispatch_stall": ("a dispatch stall inside the prover",
                       "synthesised partitions waiting while a worker is idle"),
    "inside_workers": ("the wait is inside the workers (copies, the GPU mutex, CPU work): "
                       "every worker of this GPU is proving", ""),
    "waits_on_budget": ("the next synthesis waits on cuzk's memory budget",
                        "partitions pending, a synthesis worker free"),
    "pacer_hold": ("the dispatch pacer holds synthesis back",
                   "partitions pending, synthesis workers and budget free"),
    "restart": ("cuzk restarted: the GPU waited from its old run's last work to its new "
                "run's first", ""),
    "srs_loading": ("cuzk is loading the SRS (proving parameters)", ""),
    "monolithic": ("PoSt or other monolithic work, which /status does not list", ""),
    "pinned_pool": ("a/b/c copied from pageable memory",
                    "cuzk's pinned pool could not pin a buffer and fell back"),
    "batch_wait": ("cuzk held the work in its batch collector, waiting for a batch to fill",
                   "[scheduler] max_batch_size > 1; /status lists no held request"),
    EMPTY_PIPELINE_CAUSE: ("the pipeline was empty when the GPU went idle: it waited for the "
                           "next work and that work's first synthesis",
                           "nothing synthesising, synthesised or queued at the gap's start"),
    "no_work": ("the prover had no work", "nothing queued, synthesising or synthesised"),
}


def cause_words(cause: str | None) -> str:
    """A prover cause in the hint's words, without any gap's figures or who said it ("" for
    none): the same for every gap of that cause (summary.md's hints group by it,
    `gapwatch.core.hints.hint_cause`); a hint's `prover_phrase` leads with them."""
    entry = PROVER_CAUSE_WORDS.get(cause or "")
    return "" if entry is None else entry[0]


#: What said a gap's prover cause, as its hint names it (`prover_phrase`'s `said_by`).
_SAID_BY: dict[CauseSaidBy, str] = {"log": "prover log", "status": "prover status",
                                    "processes": "GPU processes"}


def prover_phrase(cause: str | None, during: bool = True, detail: str = "",
                  said_by: CauseSaidBy = "status", lead: str = "") -> str:
    """The hint's words for a gap's prover cause ("" for none), with its one figure
    (`detail`, "18 of 18 synthesis workers busy"); `during` False: the cause came from the
    snapshot just before the gap (the gap was shorter than the poll period); `said_by`: the
    prover's /status said it ("status"), its log ("log"), or NVML's processes on the GPU (a
    restart seen as a new cuzk pid, or a process replaced: "processes"); `lead`: the cause's
    words where this gap's differ from its own, said in place of its words and its fact (a
    restart /proc alone showed, of a process not known to be cuzk's:
    `gapwatch.cuzk.restarts.REPLACED_LEAD`; a dispatch stall with no worker's holds read, or
    none showing a worker free: `gapwatch.cuzk.pipeline.NO_HOLDS_LEAD`, `UNSHOWN_FREE_LEAD`)."""
    entry = PROVER_CAUSE_WORDS.get(cause or "")
    if entry is None:
        return ""
    own, fact = entry
    if lead:
        fact = ""
    lead = lead or own
    inside = "; ".join(x for x in (fact, detail) if x)
    when = "" if during else " (as of just before the gap)"
    said = _SAID_BY[said_by]
    return f"{said}{when}: {lead}" + (f" ({inside})" if inside else "")


class CuzkGap:
    """The snapshots and log facts gathered for one gap of one GPU (`ProverGap`)."""

    __slots__ = ("gpu", "from_s", "idle_since_s", "facts", "cause_counts", "inside_tail",
                 "before_cause", "provers")

    def __init__(self, gpu: int, start_s: float, facts: PipelineFacts,
                 idle_since_s: float | None = None) -> None:
        self.gpu = gpu
        self.from_s = start_s
        #: The GPU's last busy reading before the gap (`Prover.open_gap`): where its idle
        #: stretch began, holes or not (a restart in it holds the gap: `log_view`).
        self.idle_since_s = idle_since_s
        #: What the prover's log says (shared by every gap): capacity, SRS loads, PoSt, ...
        self.facts = facts
        #: Prover snapshots taken during the gap, by the cause each gives
        #: (`gapwatch.cuzk.causes`); the latest few with their times, so that those taken after
        #: the gap's end (they can reach an open gap before the samples that close it) are left
        #: out when it closes.
        self.cause_counts: dict[str, int] = {}
        #: Both made on the first snapshot (`add_status`): most gaps see none, and two deques
        #: per gap were a tenth of a report's per-gap cost. Empty tuples until then.
        self.inside_tail: deque[tuple[float, str | None]] | tuple[()] = ()
        #: (time, cause) of the latest snapshot before the gap's start (evidence window).
        self.before_cause: tuple[float, str | None] | None = None
        #: Each snapshot with the cause it gave and the synthesis capacity it was judged by.
        self.provers: deque[tuple[ProverStatus, str | None, Capacity | None]] | tuple[()] = ()

    def has_evidence(self) -> bool:
        """A snapshot, a cuzk line seen, or a restart seen by a GPU's processes (a new cuzk
        pid, a process replaced by a new pid of its name): without any there is nothing to
        say (the common offline case: skipping it keeps a long report's per-gap cost as it
        was)."""
        facts = self.facts
        return (bool(self.provers) or self.before_cause is not None or facts.seen
                or facts.restart_seen)

    def add_status(self, status: ProverStatus) -> None:
        t = status.t_wall_s
        facts = self.facts
        capacity = facts.capacity(status)
        cause = snapshot_cause(status, self.gpu, capacity, facts.pacer_on_for(status))
        if t >= self.from_s:
            if cause is not None:
                self.cause_counts[cause] = self.cause_counts.get(cause, 0) + 1
            tail = self.inside_tail
            if not isinstance(tail, deque):
                tail = self.inside_tail = deque(maxlen=8)
            tail.append((t, cause))
        elif self.before_cause is None or t >= self.before_cause[0]:
            self.before_cause = (t, cause)
        provers = self.provers
        if not isinstance(provers, deque):
            provers = self.provers = deque(maxlen=MAX_PROVER_PUBLISHED * 2)
        provers.append((status, cause, capacity))

    def view(self, end_s: float | None, start_s: float, kind: str, reach_s: float) -> ProverView:
        """Where the prover says a gap of `kind` over [start_s, end_s] waited: the snapshots'
        cause (`end_s` None: open, so far), else the log's (`PipelineFacts.log_view`)."""
        counts = self.cause_counts
        if end_s is not None and any(t > end_s for t, _ in self.inside_tail):
            counts = dict(counts)
            for t, c in self.inside_tail:
                if t > end_s and c is not None:
                    counts[c] -= 1
        before = self.before_cause[1] if self.before_cause is not None else None
        cause, during = decide_cause(counts, before)
        kept = [p for p in self.provers if end_s is None or p[0].t_wall_s <= end_s]
        states = [gap_state(st, self.gpu, c, cap) for st, c, cap in kept[-MAX_PROVER_PUBLISHED:]]
        evidence: list[str] = []
        detail = ""
        for st, c, cap in reversed(kept):
            if c == cause and cause is not None:
                evidence = snapshot_evidence(st, self.gpu, cause, cap)
                detail = cause_detail(st, self.gpu, cause, cap)
                break
        emptied = self.facts.srs_busy_words(start_s, end_s if end_s is not None else start_s)
        if emptied is not None and cause in (None, "no_work"):
            # /status alone: nothing in flight, and the SRS list went empty: its manager's
            # mutex is held, a load (the job is registered only once its SRS is in).
            cause, during, detail = "srs_loading", True, "allocations.srs went empty"
            evidence = [emptied]
        log = self.facts.log_view(self.gpu, start_s, end_s if end_s is not None else start_s,
                                  kind, is_open=end_s is None, idle_since_s=self.idle_since_s)
        decided = with_log_cause(cause, log.cause, during, log.spans_restart, log.worker_free)
        said_by: CauseSaidBy = "status"
        lead = ""
        if decided != cause:  # the log's facts decide it
            if cause is not None:
                evidence = [f"/status: {e}" for e in evidence]
            if cause == "inside_workers" and decided == "dispatch_stall":
                evidence.append(FINALIZER_PROVING_WORDS)
            cause, during, detail = decided, True, log.detail
            said_by, lead = log.said_by, log.lead
        # The snapshots' evidence decides no typed fact: only the log's, where its words are
        # the gap's (its cause the gap's), and the pool's below.
        facts = NO_FACTS
        if log.cause is not None and log.cause == cause:
            # An empty pipeline's snapshots saw the new work's synthesis (every worker busy on
            # it): the log's facts of the gap's start come first, where the advice cites a
            # gap's first lines.
            first = cause == EMPTY_PIPELINE_CAUSE
            facts = log.facts if first else _after(log.facts, len(evidence))
            evidence = log.evidence + evidence if first else evidence + log.evidence
            if detail and log.facts.queued_at_end and log.detail not in detail:
                # The snapshots' figure ("5 in synth_done") does not say the work stayed
                # queued to the recording's end: the log's, which does, joins it.
                detail = f"{detail}; {log.detail}"
            detail = detail or log.detail
            if said_by == "status" and facts.worker_free_unshown:
                # The snapshots' dispatch stall rests on a worker /status showed idle.
                facts = replace(facts, worker_free_unshown=False)
        if kind == "pcie_starved" and cause != "pinned_pool":
            pool = self.facts.pool_said()
            if pool.churn_line is not None:
                facts = replace(facts, pool_churn_line=len(evidence) + pool.churn_line)
            evidence = evidence + pool.lines
        waves = unpinned_by_design(
            self.facts.first_waves.waves_of(self.facts.restarts.of_gpu(self.gpu)), start_s,
            end_s if end_s is not None else reach_s, log.spans_restart, max(reach_s, start_s))
        if cause is not None:  # what said it, for the report's GPUs line
            facts = replace(facts, said_by=said_by)
        words = prover_phrase(cause, during, detail, said_by, lead)
        if kind == "transfer_bound" and (self.facts.seen or self.facts.status_seen):
            # Copies at line rate, SMs idle: cuzk's lock says why, in place of the core's
            # question (the advice says the same: `COPIES_UNDER_LOCK`). Only where cuzk was
            # read: a process replaced on the GPU (any name) is no sign the prover is cuzk.
            words = "; ".join(x for x in (words, COPIES_UNDER_LOCK_HINT) if x)
        return ProverView(cause, states, evidence, words,
                          self.facts.error_words(start_s, reach_s), facts, waves)


#: Why the log's free worker stands over snapshots that showed every worker proving.
FINALIZER_PROVING_WORDS = (
    "/status shows a worker proving until its partition's finalizer ends (status.rs "
    "partition_gpu_end, engine.rs:3185), after the worker looped back to the queue: the "
    "log's prove_start returned says it was free")


def _after(facts: ProverGapFacts, lines: int) -> ProverGapFacts:
    """`facts` of evidence placed after `lines` lines of other evidence: its line index moved
    on by them."""
    at = facts.pool_churn_line
    return facts if at is None else replace(facts, pool_churn_line=at + lines)


class CuzkProver:
    """cuzk behind the GPU work (`gapwatch.core.prover.Prover`): one per session."""

    def __init__(self, max_parallel_synthesis: int | None = None) -> None:
        #: What cuzk's log and `/status` say about its pipeline, fed every event and snapshot.
        self.pipeline = PipelineFacts(max_parallel_synthesis)

    def feed_log(self, event: LogEvent) -> None:
        self.pipeline.feed(event)

    def feed_status(self, status: ProverStatus) -> None:
        self.pipeline.feed_status(status)

    def feed_process(self, reading: ProcessMemory) -> None:
        self.pipeline.feed_process(reading)

    def feed_host(self, sample: HostSample) -> None:
        self.pipeline.feed_host(sample)

    def concerns(self, status: ProverStatus, gpu: int) -> bool:
        return concerns(status, gpu)

    def end(self, t_wall_s: float) -> None:
        self.pipeline.end(t_wall_s)

    def open_gap(self, gpu: int, start_s: float, idle_since_s: float | None = None
                 ) -> ProverGap:
        return CuzkGap(gpu, start_s, self.pipeline, idle_since_s)

    def facts(self) -> PipelineView:
        return self.pipeline.view()

    def lacks(self) -> list[str]:
        out = []
        if not self.pipeline.seen:
            out.append("no cuzk log line read (follow its log: --log): no synthesis workers, "
                       "pinned pool, SRS loads or PoSt from it")
        if not self.pipeline.status_seen:
            out.append("no cuzk /status snapshot (poll it: --cuzk-status URL): no partition "
                       "or worker states")
        return out


def view_of(facts: object) -> PipelineView:
    """The pipeline view a store or a report kept from its prover (`Prover.facts`): cuzk's,
    or an empty one when the prover was not cuzk."""
    return facts if isinstance(facts, PipelineView) else PipelineView()
