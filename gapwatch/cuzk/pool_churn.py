"""cuzk's pinned pool churning: the evictor frees its idle pinned buffers and cuzk pins new ones,
again and again, each re-pin one more `cudaHostAlloc` that can fail. The precursor of the
pinned pool's failures, said before the first one and with them.

Who calls it: `gapwatch.cuzk.pipeline.PipelineFacts` (a pcie_starved gap's pool evidence, and the
advice through `PipelineView.pool_churn`) and `gapwatch.cuzk.watch.CuzkWatch` (the live warning:
a `ProverEvent` of kind "warning", which reaches the dashboard's alert line, `record`'s stderr,
the recording, the report and `/metrics` as every prover event does), each with its own
`PoolChurn` fed every log event: one rule, said in both. Pure: no I/O, no clocks ("now" is the
data's time); bounded whatever the log holds (counters, the latest `CHURN_MIN_CYCLES` cycles, the
latest `MAX_SPANS` spans): a log of a million churn lines costs what one of ten does.

Upstream's mechanism (curio e0294b0f, cuzk unchanged since 2026-05-05; cuzk-upstream-paths.md
2.4): the memory budget's evictor first shrinks the pinned pool (engine.rs:1257-1265), freeing
idle buffers with `cudaFreeHost`, one line each (`pinned pool: freed buffer (evictor) freed_gib
total_freed_gib`, pinned_pool.rs:227-250, the line at :240). Pinned bytes are never in the
budget's `used_bytes` (pinned_pool.rs:127-129, 194-198), so freeing them does not let the short
acquire through: its loop calls the evictor again until the free list is empty, and only then
waits (memory.rs:214-225). The next partitions' checkouts find no free buffer and pin new ones
(`pinned pool: allocated new buffer size_gib total_buffers total_gib`, pinned_pool.rs:198-220,
the line at :212), each a `cudaHostAlloc` that can fail (`cudaHostAlloc failed size_gib
cuda_err`, pinned_pool.rs:61, and `pinned pool: cudaHostAlloc failed`, :202; then `pinned pool
checkout FAILED — falling back to unpinned`, pipeline.rs:302: that partition's a/b/c are
pageable, copied at 1-4 GB/s instead of ~50). Any short acquire runs the evictor: the partition
dispatcher's when the budget is full (engine.rs:1628: it acquires a partition's budget before a
synthesis worker is free, engine.rs:1474-1475, 1647), a WindowPoSt's 14 GiB (engine.rs:2649), an
SRS load's. With the dispatch pacer off (`[pipeline] max_gpu_queue_depth = 0`, the default,
config.rs:340-341) and synthesis ahead of the GPU the budget stays full, and this comes about
once per partition (read from the code, not run).

The rule: a re-pin cycle is an `allocated new buffer` line after `freed buffer (evictor)` lines,
within `REPIN_WITHIN_S` of the last of them (one cycle however many buffers were freed and
pinned again). The pool churns when `CHURN_MIN_CYCLES` cycles come within `CHURN_WINDOW_S` of
data time; a churn span lasts while they keep coming that fast, and is said once, when it
begins. A failure line (a `cudaHostAlloc failed` or a failed checkout) during a span, or within
`CHURN_WINDOW_S` of its last cycle, is a failure the churn preceded. A start of cuzk (`starting
cuzk engine`, `CUDA pinned memory pool initialized`, or a restart its watcher saw) begins an
empty pool: the cycles of the old run do not count in the new one's.

What each level shows (the daemon's level is `RUST_LOG`, else `[logging] level`, default "info",
cuzk-daemon main.rs:54-61): at INFO, every pool line (`allocated new buffer`, `checkout (reuse)`,
`checkin`, `freed buffer (evictor)`, all INFO of target `cuzk_core::pinned_pool`), so churn is
seen; at WARN, only the failures (the three WARN lines above): churn cannot be seen, and a pool
that failed is said with its churn "not known", never "none" (`info_kept`: INFO lines of
`cuzk_core::pinned_pool` were read; `info_read` False: no INFO line of any target was), and the
advice names the churn knob as a guess; at INFO with no line of the pool's, the pool pinned no
buffer, so none churned (`NOTHING_PINNED`), unless a failed checkout says the pool held buffers
(`pool_total_gib` above 0, `PoolChurnView.failure_held_gib`): pinned in lines not read, so churn
is not known (`pinned_unseen`; the knob's guess says why): the three cases decided in one place,
`PoolChurnView.unseen`, read by the gaps' evidence and the advice alike; DEBUG
adds memory.rs's `evictor freed memory, retrying acquire freed_gib needed_gib` (:219) and
`waiting for budget (acquire blocked)` (:230): which acquire ran the evictor. The rule needs no
DEBUG line.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace

from gapwatch.core import fmt
from gapwatch.core.models import LogEvent, ProverEvent
from gapwatch.core.values import size_field
from gapwatch.cuzk.knobs import Setting, lowers, set_to
from gapwatch.cuzk.log_lines import ANCHOR_MESSAGE, POOL_ALLOCATED_MESSAGE
from gapwatch.cuzk.settings import info_from

#: The pool's lines (pinned_pool.rs; the failed checkout is pipeline.rs's) and the target of its
#: INFO lines, as tracing prints it (cuzk-daemon main.rs:58-61 `.with_target(true)`).
POOL_TARGET = "cuzk_core::pinned_pool"
#: engine.rs:1219, INFO of `cuzk_core::engine`: a new, empty pool (`Engine::new`).
POOL_INITIALIZED = "CUDA pinned memory pool initialized"
#: pinned_pool.rs:240, INFO: a free buffer unpinned by the evictor (`cudaFreeHost`).
POOL_FREED = "pinned pool: freed buffer (evictor)"
#: pipeline.rs:302, WARN of `cuzk_core::pipeline`: a/b/c fall back to pageable memory.
POOL_CHECKOUT_FAILED = "pinned pool checkout FAILED"
#: pinned_pool.rs:61 (`cudaHostAlloc failed ... cuda_err`) and :202 (`pinned pool: cudaHostAlloc
#: failed`), both WARN: one failure written twice.
HOST_ALLOC_FAILED = "cudaHostAlloc failed"
#: The first characters of every message `PoolChurn.feed` reads (the two `cudaHostAlloc
#: failed` lines begin with "c" and "p"): any other tracing line is passed over at one look.
_FIRST_CHARS = frozenset(m[:1] for m in (POOL_INITIALIZED, POOL_ALLOCATED_MESSAGE, POOL_FREED,
                                         POOL_CHECKOUT_FAILED, HOST_ALLOC_FAILED,
                                         ANCHOR_MESSAGE))

#: A re-pin this long after the evictor's last free is still the same cycle: the partition whose
#: short acquire ran the evictor pins its buffers when its synthesis starts, once the acquire is
#: granted, a partition's GPU time or a synthesis (~30-60 s) later, longer behind a deep queue.
#: Later than this the pool merely grows again after a lull, which is not churn.
REPIN_WITHIN_S = 300.0
#: Churn: at least `CHURN_MIN_CYCLES` cycles within `CHURN_WINDOW_S` (0.3 a minute). One-off
#: evictions come one or two apart: an SRS load (one per circuit type a run, or after an SRS
#: eviction), the first PoRep's PCE extraction, a WindowPoSt's 14 GiB acquire (a few each
#: 30-minute proving deadline). A budget-full dispatcher evicts about once a partition: with
#: synth_worker_count syntheses of ~30-60 s in flight, one finishes every few to tens of seconds,
#: so real churn passes 3 cycles within a minute or two, before (we hope) the first failure.
#: A deadline proving 3+ WindowPoSt partitions on a full budget churns too: each of its re-pins
#: can fail as well.
CHURN_WINDOW_S = 600.0
CHURN_MIN_CYCLES = 3
#: Churn spans kept (the latest): for a gap's evidence and the advice, the span before a failure.
MAX_SPANS = 64

#: What is said of churn where the pool failed and no INFO line was read at all (the log kept at
#: WARN, `PoolChurnView.unseen`): churn may have come unseen, neither claimed nor denied.
NOT_KNOWN = (f"whether the pool churned before its failures is not known: no INFO line of "
             f"{POOL_TARGET} was read, nor of any other target (the log kept above INFO by "
             "RUST_LOG or [logging] level), and its 'freed buffer (evictor)' and 'allocated new "
             "buffer' lines are INFO (pinned_pool.rs:240, 212)")
#: What is said where INFO lines were read and none of the pool's: a pool that pinned nothing in
#: the lines read has nothing for the evictor to free, so no churn preceded its failures.
NOTHING_PINNED = (
    f"no churn before its failures: INFO lines were read and none of {POOL_TARGET}'s, so the "
    "pool pinned no buffer in them ('allocated new buffer' is INFO, pinned_pool.rs:212) and the "
    "evictor had none to free (unless RUST_LOG keeps that one target above INFO)")


def pinned_unseen(held_gib: float) -> str:
    """What is said of churn where INFO lines were read, none of the pool's, and a failed
    checkout says the pool held buffers: they were pinned in lines not read (RUST_LOG keeping
    that target above INFO, or before the log read began), so churn may have come unseen."""
    return (f"whether the pool churned before its failures is not known: a failed checkout says "
            f"it held {held_gib:.7g} GiB (pool_total_gib, 'pinned pool checkout FAILED', "
            f"pipeline.rs:302), so it pinned buffers, yet no INFO line of {POOL_TARGET} was "
            "read (RUST_LOG may keep that target above INFO, or they came before the log read "
            "began), and its 'freed buffer (evictor)' and 'allocated new buffer' lines are INFO "
            "(pinned_pool.rs:240, 212)")


#: The candidate knob for churn, as `gapwatch.cuzk.advice` names it: gapwatch's reading of the
#: code, never upstream's claim, so always said as a guess. From 0 (no pacer) to 8 is fewer
#: partitions let ahead of the GPU: down (`gapwatch.cuzk.knobs.Pull`).
QUEUE_DEPTH_GUESS = Setting(
    "[pipeline] max_gpu_queue_depth",
    "8 (its 'recommended starting point', config.rs:340-341), if it is 0 (the default: no "
    "pacer); a guess to measure, not upstream's claim",
    "with no pacer the dispatcher acquires each partition's budget before a synthesis worker is "
    "free (engine.rs:1474-1475, 1628, 1647), so with synthesis ahead of the GPU the budget stays "
    "full, every short acquire runs the evictor, which unpins every idle pinned buffer "
    "(engine.rs:1257-1265; memory.rs:214-225), and the next partitions pin new ones, each a "
    "cudaHostAlloc that can fail; the pacer starts syntheses only to keep this many partitions "
    "waiting for the GPU, which 'also ensures enough free budget' (config.rs:328-345)",
    "extern/cuzk/cuzk-core/src/config.rs:328-345, engine.rs:1257-1265, 1455-1457, 1628; "
    "memory.rs:214-225; pinned_pool.rs:212, 240", set_to("8"),
    lowers("[pipeline] max_gpu_queue_depth"))
#: Why it is a guess, in the advice's `guess_why`.
QUEUE_DEPTH_GUESS_WHY = (
    "that [pipeline] max_gpu_queue_depth stops the churn before the failures is gapwatch's "
    "reading of engine.rs:1257-1265 and memory.rs:214-225, not upstream's claim: measure it "
    "(the churn warnings and the failures should stop)")

#: The churn knob as the plausible lever, where churn could not be seen
#: (`ChurnUnseen.hidden_why`).
QUEUE_DEPTH_LEVER = (
    "[pipeline] max_gpu_queue_depth is the plausible lever for cudaHostAlloc failures "
    "through that churn, gapwatch's reading of engine.rs:1257-1265 and memory.rs:214-225, not "
    "upstream's claim: run cuzk at INFO (RUST_LOG=info) to see the churn, and measure it")
#: Why it is a guess where churn could not be seen (`PoolChurnView.unseen`): the log kept
#: at WARN shows the failures alone.
QUEUE_DEPTH_HIDDEN_WHY = (
    "whether the pool churned is not visible at this log level (no INFO line was read, and its "
    "'freed buffer (evictor)' and 'allocated new buffer' lines are INFO, pinned_pool.rs:240, "
    "212); " + QUEUE_DEPTH_LEVER)
#: Why the churn knob is a guess where a failed checkout says the pool held buffers and none of
#: its INFO lines was read (`pinned_unseen`).
_PINNED_UNSEEN_WHY = (
    "whether the pool churned is not visible in the lines read (a failed checkout says the "
    f"pool held buffers, and no INFO line of {POOL_TARGET} was read: its 'freed buffer "
    "(evictor)' and 'allocated new buffer' lines, pinned_pool.rs:240, 212); "
    + QUEUE_DEPTH_LEVER)
#: Where the pool pinned nothing in the lines read (`NOTHING_PINNED`): the churn knob is not
#: advised.
NO_CHURN_NO_QUEUE_DEPTH = (
    "[pipeline] max_gpu_queue_depth, the guess for churn, is not advised: the pool pinned no "
    "buffer in the lines read, so there was no churn for it to stop")


@dataclass(frozen=True, slots=True)
class ChurnSpan:
    """One stretch of churn in one run of cuzk."""

    #: The first of the cycles that made it churn, and when it was said (the cycle that made
    #: `CHURN_MIN_CYCLES` within `CHURN_WINDOW_S`); its latest cycle.
    first_cycle_s: float
    said_s: float
    last_s: float
    cycles: int
    #: Buffers the evictor freed in its cycles, and their GiB (of the lines that gave a size).
    buffers_freed: int
    gib_freed: float
    #: The first failure line during it, or within `CHURN_WINDOW_S` of its last cycle (None:
    #: none followed it).
    first_failure_s: float | None = None
    #: A pin had failed in the same run before the churn was said.
    failed_before: bool = False

    def words(self) -> str:
        """`cuzk's pinned pool churned: the evictor freed idle pinned buffers and cuzk pinned
        new ones 5 times in 2.0m (14:00:10.000 to 14:02:10.000; 15 buffer(s), 58.2 GiB freed
        ...)`."""
        took = self.last_s - self.first_cycle_s
        per_min = f", {self.cycles / (took / 60):.1f} a minute" if took >= 60 else ""
        return ("cuzk's pinned pool churned: the evictor freed idle pinned buffers and cuzk "
                f"pinned new ones {self.cycles} times in {fmt.duration(took)} ("
                f"{fmt.clock(self.first_cycle_s, millis=True)} to "
                f"{fmt.clock(self.last_s, millis=True)}{per_min}; {self.buffers_freed} buffer(s), "
                f"{self.gib_freed:.1f} GiB freed; 'freed buffer (evictor)' then 'allocated new "
                "buffer', pinned_pool.rs:240, 212): each re-pin is one more cudaHostAlloc that "
                "can fail")

    def failure_words(self) -> str:
        """The span's words where a failure followed it (the gap's evidence, the advice)."""
        assert self.first_failure_s is not None
        return (f"{self.words()}; then pinning failed, the first at "
                f"{fmt.clock(self.first_failure_s, millis=True)}: the churn preceded the "
                "failures (short budget acquires run the evictor, engine.rs:1257-1265, "
                "memory.rs:214-225)")


@dataclass(frozen=True, slots=True)
class ChurnUnseen:
    """Churn not seen where the pool failed (none of the pool's INFO lines read), one case of
    three (`PoolChurnView.unseen`): what is said of it, and why the churn knob is a guess where
    churn could have come unseen."""

    #: `NOT_KNOWN` (no INFO line read at all: the log at WARN), `pinned_unseen` (INFO lines
    #: read, a failed checkout says the pool held buffers), `NOTHING_PINNED` (INFO lines
    #: read, the pool pinned nothing in them: it did not churn).
    words: str
    #: Why `[pipeline] max_gpu_queue_depth` is a guess; None where churn could not have come
    #: unseen (nothing pinned): the knob is then not advised (`NO_CHURN_NO_QUEUE_DEPTH`).
    hidden_why: str | None


@dataclass(frozen=True, slots=True)
class PoolChurnView:
    """What the log said of churn as of now (`PipelineView.pool_churn`): immutable."""

    #: INFO lines of `cuzk_core::pinned_pool` were read: only then is no churn said as none.
    info_kept: bool = False
    #: Re-pin cycles read, in every run.
    cycles: int = 0
    #: The latest churn spans, oldest first.
    spans: tuple[ChurnSpan, ...] = ()
    #: An INFO line of any target was read: the log is at INFO or below, so where no line of
    #: the pool's was, the pool pinned nothing in the lines read (rather than the log hiding
    #: its churn: `unseen`).
    info_read: bool = False
    #: The latest failed checkout's `pool_total_gib` where above 0: the pool held buffers, so
    #: it pinned some, whatever its INFO lines read say (None: no such line).
    failure_held_gib: float | None = None

    def unseen(self) -> ChurnUnseen | None:
        """The one rule of churn not seen (None: the pool's INFO lines were read, so churn
        is seen or known to be none). Churn could have come unseen where no INFO line of any
        target was read (the log kept at WARN) or a failed checkout says the pool held
        buffers (pinned in lines not read): its 'freed buffer (evictor)' and 'allocated new
        buffer' lines, INFO, were not read. Read by the gaps' pool evidence
        (`pipeline.PipelineFacts`) and the advice (`advice._pool_churn`)."""
        if self.info_kept:
            return None
        if not self.info_read:
            return ChurnUnseen(NOT_KNOWN, QUEUE_DEPTH_HIDDEN_WHY)
        if self.failure_held_gib is not None:
            return ChurnUnseen(pinned_unseen(self.failure_held_gib), _PINNED_UNSEEN_WHY)
        return ChurnUnseen(NOTHING_PINNED, None)
    def before_failure(self) -> ChurnSpan | None:
        """The latest span a failure followed, or None."""
        for span in reversed(self.spans):
            if span.first_failure_s is not None:
                return span
        return None


class PoolChurn:
    """Follows the pool's lines; `feed` returns a churn span the moment it begins."""

    def __init__(self) -> None:
        #: An INFO line of the pool was read: churn could be seen (`PoolChurnView.info_kept`).
        self.info_kept = False
        #: An INFO line of any target was read (`PoolChurnView.info_read`).
        self.info_read = False
        self.cycles = 0
        self.spans: deque[ChurnSpan] = deque(maxlen=MAX_SPANS)
        #: `spans[-1]` is this run's and may take more cycles.
        self._open = False
        #: Freed by the evictor since the last pin: buffers, GiB, the last one's time.
        self._freed = 0
        self._freed_gib = 0.0
        self._freed_last_s: float | None = None
        #: This run's latest cycles: (time, buffers freed, GiB freed).
        self._recent: deque[tuple[float, int, float]] = deque(maxlen=CHURN_MIN_CYCLES)
        #: This run's first failure line (None: none yet).
        self._failed_s: float | None = None
        #: The latest failed checkout's `pool_total_gib` above 0 (`PoolChurnView`).
        self.failure_held_gib: float | None = None

    def restart(self) -> None:
        """A new run of cuzk: an empty pool, no cycle of the old run counts."""
        self._open = False
        self._freed, self._freed_gib, self._freed_last_s = 0, 0.0, None
        self._recent.clear()
        self._failed_s = None

    def feed(self, ev: LogEvent) -> ChurnSpan | None:
        """Take one log event; the span when churn begins with it, else None."""
        if ev.kind != "tracing":
            return None
        name, t = ev.name, ev.t_wall_s
        if not self.info_kept:
            self.info_kept = info_from(ev, POOL_TARGET)
        if not self.info_read:
            self.info_read = ev.level == "INFO"
        if name[:1] not in _FIRST_CHARS:
            return None  # every tracing line comes here: most are of no rule below
        if name == POOL_FREED:
            self._freed += 1
            gib = size_field(ev.fields.get("freed_gib"))
            self._freed_gib += gib or 0.0
            self._freed_last_s = t
        elif name == POOL_ALLOCATED_MESSAGE:
            return self._pinned(t)
        elif name.startswith(POOL_CHECKOUT_FAILED) or HOST_ALLOC_FAILED in name:
            held = size_field(ev.fields.get("pool_total_gib"))
            if held is not None and held > 0:
                self.failure_held_gib = held
            self._failed(t)
        elif name in (ANCHOR_MESSAGE, POOL_INITIALIZED):
            self.restart()
        return None

    def _pinned(self, t: float) -> ChurnSpan | None:
        last = self._freed_last_s
        if last is None:
            return None  # the pool grows (first wave, more workers): no buffer was freed
        freed, gib = self._freed, self._freed_gib
        self._freed, self._freed_gib, self._freed_last_s = 0, 0.0, None
        if abs(t - last) > REPIN_WITHIN_S:
            return None  # pinned again long after: the pool grew back after a lull
        self.cycles += 1
        recent = self._recent
        recent.append((t, freed, gib))
        if len(recent) < CHURN_MIN_CYCLES or t - recent[0][0] > CHURN_WINDOW_S:
            return None  # a one-off eviction, not (yet) churn
        if self._open and self.spans and t - self.spans[-1].last_s <= CHURN_WINDOW_S:
            span = self.spans[-1]
            self.spans[-1] = replace(span, last_s=max(t, span.last_s), cycles=span.cycles + 1,
                                     buffers_freed=span.buffers_freed + freed,
                                     gib_freed=span.gib_freed + gib)
            return None
        span = ChurnSpan(recent[0][0], t, t, len(recent), sum(c[1] for c in recent),
                         sum(c[2] for c in recent), failed_before=self._failed_s is not None)
        self.spans.append(span)
        self._open = True
        return span

    def _failed(self, t: float) -> None:
        if self._failed_s is None:
            self._failed_s = t
        if not (self._open and self.spans):
            return
        span = self.spans[-1]
        if span.first_failure_s is None and span.first_cycle_s <= t <= \
                span.last_s + CHURN_WINDOW_S:
            self.spans[-1] = replace(span, first_failure_s=t)

    def view(self) -> PoolChurnView:
        return PoolChurnView(self.info_kept, self.cycles, tuple(self.spans), self.info_read,
                             self.failure_held_gib)


def churn_event(span: ChurnSpan) -> ProverEvent:
    """The warning said when churn begins: before any failure where the log shows it first."""
    failed = ("a pin already failed in this run" if span.failed_before
              else "no pin has failed yet in this run")
    message = fmt.visible(
        f"{span.words()}, and a failed one sends that partition's a/b/c to pageable memory "
        f"(1-4 GB/s instead of ~50, pipeline.rs:302); {failed}. Short budget acquires run the "
        "evictor (engine.rs:1257-1265, memory.rs:214-225); a guess to measure, not upstream's "
        "claim: [pipeline] max_gpu_queue_depth = 8, if it is 0 (config.rs:340-341)")
    return ProverEvent(t_wall_s=span.said_s, kind="warning", level="warning", message=message)
