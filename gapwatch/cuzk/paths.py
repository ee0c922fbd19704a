"""The paths a/b/c and GPU jobs really take in upstream cuzk, and what to change on each.

Who calls it: `gapwatch.offline.report` (feeds `PathsSeen` every log event while it detects, then
hands `path_rule` and `path_notes` to `gapwatch.cuzk.advice.advise`). Pure: fed one `LogEvent` at
a time, bounded (counters, maxima, a few times).

Read from curio e0294b0f (cuzk unchanged since 2026-05-05; /work/shared/reference/
cuzk-upstream-paths.md sections 2, 3, 4.5, 4.7). a/b/c are synthesised into pageable memory with
no pool-failure line on four paths, and each gets its own answer:
- a first wave: every partition synthesis that starts before the first of its circuit type
  finishes has no capacity hint (`no capacity hint cached`, pipeline.rs:270); the hints are
  process statics, one per circuit type (pipeline.rs:181-204), so each run of cuzk has a first
  wave of each type it proves, e.g. SnapDeals' hours after PoRep's (`gapwatch.cuzk.first_wave`):
  no setting;
- WinningPoSt and WindowPoSt: monolithic and unpinned by design (pipeline.rs:3015, 3210): no
  setting;
- a batch of 2+ PoRep or SnapDeals requests (`[scheduler] max_batch_size > 1`, engine.rs:2053,
  2672-2680; pipeline.rs:1632 passes no pool): `[scheduler] max_batch_size = 1`;
- `[pipeline] enabled = false` (engine.rs:3362-3440): `[pipeline] enabled = true`, for every
  stall the monolithic workers explain (`PIPELINE_OFF_STALLS`: with the pipeline off /status
  lists no job, so every gap reads as "no work", and one worker runs per GPU whatever
  `gpu_workers_per_device` says, engine.rs:1333-1337).
The locks on the GPU workers' hot path, in upstream's order (engine.rs:3017-3054): `status_ms`,
the StatusTracker's write lock `/status` also takes (status.rs:397), while /status still shows
the worker idle: a dispatch stall; then the worker shows `proving`, GPU_PICKUP is written, and it
takes cuzk's JobTracker mutex twice (`fail_check_ms`, `mark_busy_ms`, engine.rs:3031, 3047), held
by the finalizer during the PoRep self-check (engine.rs:521), by `CUZK_VALIDATE_PARTITIONS=1`
work (engine.rs:532, 861) and by gRPC GetStatus/GetMetrics (engine.rs:3595, 3615): the wait
inside the workers. `no_work`: the knob is Curio's `[Cuzk] MaxPending`, and, where the log
says `max_batch_size > 1`, `[scheduler] max_batch_size = 1` first: a lone PoRep/SnapDeals request
waits in the batch collector up to `max_batch_wait_ms` with no job in /status (engine.rs:1984-2011,
2053; batch_collector.rs:119-157).
"""

from __future__ import annotations

from dataclasses import dataclass

from gapwatch.core.models import LogEvent, ProverStatus
from gapwatch.cuzk.advice import (
    BATCH_WAIT_SETTINGS,
    MAX_PENDING_SETTING,
    PIPELINE_OFF_STALLS,
    PIPELINE_SETTING,
    SPLIT_PROVE_SETTING,
    Found,
    StallGaps,
    batch_setting,
    pipeline_off_evidence,
)
from gapwatch.cuzk.daemons import Daemons
from gapwatch.cuzk.first_wave import (
    FirstWave,
    WavesByDaemon,
    gap_moment,
    in_waves,
    wave_of,
    wave_words,
)
from gapwatch.cuzk.knobs import RAISE, UNSET, Setting, raises
from gapwatch.cuzk.log_lines import (
    ANCHOR_MESSAGE,
    CONFIGURATION_LOADED_MESSAGE,
    DAEMON_STARTING_MESSAGE,
    DISPATCHER_MESSAGE,
    MONOLITHIC_JOB_MESSAGES,
    PROCESSING_BATCH_MESSAGE,
    TIMEOUT_FLUSH_SPAN,
)
from gapwatch.cuzk.pipeline import BATCH_KINDS, POST_KINDS, PipelineMode, monolithic_worker_line
from gapwatch.cuzk.settings import (
    DEPRECATED,
    SPLIT_PROVE_TELL,
    VALIDATE_PARTITIONS,
    engine_info,
    info_from,
    split_prove_disabled,
)

HOT_PATH = "GPU_TIMING hot_path pre-prove overhead"
SELF_CHECK = "verifying PoRep proof (self-check)"
#: The target of the capacity-hint and `is_pinned` lines (pipeline.rs:232, 270, 2397, 2866).
PIPELINE_TARGET = "cuzk_core::pipeline"
HOT_PATH_FIELDS = ("status_ms", "fail_check_ms", "mark_busy_ms")



#: The lines that tell which daemon a file is of (`gapwatch.cuzk.daemons.Daemons`).
_DAEMON_LINES = frozenset((DAEMON_STARTING_MESSAGE, CONFIGURATION_LOADED_MESSAGE, ANCHOR_MESSAGE))
#: The lines that say a run's settings, read of the first daemon only.
_RUN_SETTINGS = frozenset((ANCHOR_MESSAGE, DISPATCHER_MESSAGE, *MONOLITHIC_JOB_MESSAGES,
                           PROCESSING_BATCH_MESSAGE))


@dataclass(frozen=True, slots=True)
class PathFacts:
    """What the log said about the paths (see the module docstring); `log_seen` False: no
    cuzk tracing line at all, so nothing here can be told."""

    log_seen: bool = False
    pipeline_enabled: bool | None = None
    #: Known off by the run's monolithic workers' lines alone, its start line not read.
    pipeline_off_by_workers: bool = False
    max_batch_size: int | None = None
    max_batch_wait_ms: int | None = None
    #: Requests dispatched only when max_batch_wait_ms ran out (`processing batch` in the span
    #: `synth_timeout_flush`, engine.rs:2012, 2150): each waited that long for its batch.
    timeout_flushes: int = 0
    batches: int = 0
    #: The kinds of those batches (`BATCH_KINDS`), in the order first seen: each kind's batch
    #: acquires its own budget (`gapwatch.cuzk.advice.batch_setting`).
    batch_kinds: tuple[str, ...] = ()
    post_jobs: int = 0
    #: `starting cuzk engine` lines read: a window's, those inside it (`starts_in_window`);
    #: the log read around a window holds starts the window's restarts do not count.
    starts: int = 0
    starts_in_window: bool = False
    #: `no capacity hint cached` lines, and every run's first wave of each circuit type,
    #: oldest first (bounded: `gapwatch.cuzk.first_wave.MAX_WAVES`).
    unhinted: int = 0
    first_waves: tuple[FirstWave, ...] = ()
    validate_lines: int = 0
    self_checks: int = 0
    hot_path_max_ms: tuple[tuple[str, int], ...] = ()
    split_prove_disabled: bool = False
    deprecated: tuple[str, ...] = ()
    #: INFO lines of cuzk's engine and of its pipeline were read. At `[logging] level = "warn"`
    #: or RUST_LOG=warn (cuzk-daemon main.rs:54-61) none are, WARN, ERROR and TIMELINE remain:
    #: then a missing INFO line (a knob's, a first wave's, `is_pinned`) says nothing.
    engine_info: bool = False
    pipeline_info: bool = False


class PathsSeen:
    """Fed every log event of a run (`feed_log`; its `/status` snapshots too, unread); `result()`
    gives its `PathFacts`."""

    def __init__(self, window: tuple[float | None, float | None] | None = None) -> None:
        """`window`: a report's window (since, until; None: open on that side), whose starts
        alone are counted; None: the whole log read."""
        self._window = window
        self.tracing = 0
        self.engine_info = 0
        self.pipeline_info = 0
        #: Whether the first daemon's run has its pipeline on: `PipelineFacts`'s rule
        #: (`gapwatch.cuzk.pipeline.PipelineMode`), not a second one here.
        self.mode = PipelineMode()
        #: Which daemon each file is of (`gapwatch.cuzk.daemons`): the settings read are the
        #: first daemon's, as `PipelineFacts` reads them.
        self._daemons = Daemons()
        self.max_batch_size: int | None = None
        self.max_batch_wait_ms: int | None = None
        self.timeout_flushes = 0
        self.batches = 0
        self.batch_kinds: dict[str, None] = {}
        self.post_jobs = 0
        self.starts = 0
        self.waves = WavesByDaemon()
        self.validate = 0
        self.self_checks = 0
        self.hot: dict[str, int] = {}
        self.split_lines = 0
        self.gpu_pickups = 0
        self.gpu_starts = 0
        self.deprecated: dict[str, None] = {}

    def feed_log(self, ev: LogEvent) -> None:
        if ev.kind == "timeline":
            self._timeline(ev)
        elif ev.kind == "tracing":
            self.tracing += 1
            self.engine_info += engine_info(ev)
            self.pipeline_info += info_from(ev, PIPELINE_TARGET)
            self.waves.feed(ev)
            self._tracing(ev)

    def _timeline(self, ev: LogEvent) -> None:
        if ev.name == "GPU_PICKUP":
            self.gpu_pickups += 1
        elif ev.name == "GPU_START":
            self.gpu_starts += 1
        elif ev.name == "SYNTH_START" and ev.partition is None:
            kind = ev.fields.get("kind")
            if kind in BATCH_KINDS and self.mode.enabled is not False:
                self.batches += 1
                self.batch_kinds[kind] = None
            elif kind in POST_KINDS:
                self.post_jobs += 1

    def _tracing(self, ev: LogEvent) -> None:
        name, f = ev.name, ev.fields
        if name in _DAEMON_LINES:
            self._daemons.of_log(ev)
        if name in _RUN_SETTINGS and self._daemons.several \
                and self._daemons.of_stream(ev.stream) != 0:
            return  # another daemon's (a PoSt-only cuzk): the first's settings are advised on
        if name == ANCHOR_MESSAGE:
            self.starts += self._in_window(ev.t_wall_s)
            self.mode.started(f)
        elif monolithic_worker_line(ev):
            self.mode.worker_line()
        elif name == DISPATCHER_MESSAGE:
            size = f.get("max_batch_size")
            self.max_batch_size = size if isinstance(size, int) else None
            wait = f.get("max_batch_wait_ms")
            self.max_batch_wait_ms = wait if isinstance(wait, int) and wait >= 0 else None
        elif name == PROCESSING_BATCH_MESSAGE and TIMEOUT_FLUSH_SPAN in str(f.get("spans", "")):
            self.timeout_flushes += 1
        elif name.startswith(VALIDATE_PARTITIONS):
            self.validate += 1
        elif name == SELF_CHECK:
            self.self_checks += 1
        elif name == HOT_PATH:
            for k in HOT_PATH_FIELDS:
                v = f.get(k)
                if isinstance(v, int) and v > self.hot.get(k, -1):
                    self.hot[k] = v
        elif name == SPLIT_PROVE_TELL:
            self.split_lines += 1
        elif DEPRECATED in name and len(self.deprecated) < 32:
            self.deprecated[name.split(DEPRECATED, 1)[0].strip()] = None

    def _in_window(self, t_s: float) -> bool:
        """Whether `t_s` is in the window, as the window's records are (`--until` not
        included: `TimeWindow.holds`, which this package does not import)."""
        if self._window is None:
            return True
        since_s, until_s = self._window
        return (since_s is None or t_s >= since_s) and (until_s is None or t_s < until_s)

    def feed_status(self, st: ProverStatus) -> None:
        """The paths are read from the log alone: `/status` names no setting they turn on."""

    def result(self) -> PathFacts:
        return PathFacts(
            log_seen=self.tracing > 0, pipeline_enabled=self.mode.enabled,
            pipeline_off_by_workers=self.mode.off_by_workers,
            max_batch_size=self.max_batch_size, max_batch_wait_ms=self.max_batch_wait_ms,
            timeout_flushes=self.timeout_flushes, batches=self.batches,
            batch_kinds=tuple(self.batch_kinds), post_jobs=self.post_jobs,
            starts=self.starts, starts_in_window=self._window is not None,
            unhinted=self.waves.unhinted,
            first_waves=self.waves.waves(), validate_lines=self.validate,
            self_checks=self.self_checks,
            hot_path_max_ms=tuple((k, self.hot[k]) for k in HOT_PATH_FIELDS if k in self.hot),
            split_prove_disabled=split_prove_disabled(self.gpu_pickups, self.gpu_starts,
                                                      self.split_lines, self.engine_info),
            deprecated=tuple(self.deprecated), engine_info=self.engine_info > 0,
            pipeline_info=self.pipeline_info > 0,
        )  # fmt: skip


VALIDATE_SETTING = Setting(
    "env CUZK_VALIDATE_PARTITIONS", "unset it (a debug knob)",
    "=1 runs 10 per-partition verifications after each PoRep self-check while the finalizer "
    "holds cuzk's JobTracker mutex, which every GPU worker takes twice at pickup "
    "(fail_check_ms, mark_busy_ms)",
    "extern/cuzk/cuzk-core/src/engine.rs:532, 861, 3031, 3047, 3220", UNSET)
STATUS_PERIOD_SETTING = Setting(
    "[cuzk] status_period_s (gapwatch's config)", "raise it (poll /status less often)",
    "GET /status takes the StatusTracker write lock that GPU workers take at pickup (status_ms)",
    "extern/cuzk/cuzk-core/src/status.rs:397, engine.rs:3018-3021", RAISE,
    raises("[cuzk] status_period_s (gapwatch's config)"))


def path_rule(stall: str, gaps: StallGaps, facts: PathFacts) -> Found | str | None:
    """The answer for `stall` on the path the log shows, or None: the general advice stands."""
    if facts.pipeline_enabled is False and stall in PIPELINE_OFF_STALLS:
        return None  # the general advice reads the pipeline off (advice._settings_for)
    if stall == "monolithic":
        return _monolithic(gaps, facts)
    if stall in ("pageable_copies", "slow_copies"):
        return _pageable(gaps, facts)
    if stall == "first_synthesis":
        return wave_words(_latest_wave(gaps, facts), facts.unhinted)
    if stall == "dispatch_stall":
        return _dispatch(facts)
    if stall == "inside_workers" and facts.split_prove_disabled:
        return [SPLIT_PROVE_SETTING], False, "", [_split_prove_evidence()]
    if stall == "inside_workers":
        return _job_tracker(facts)
    if stall == "no_work":
        return _no_work(facts)
    return None


def _no_work(facts: PathFacts) -> Found:
    """Idle with nothing in /status: Curio sent nothing, or, with batching on, cuzk holds the
    request in its batch collector (engine.rs:2053; batch_collector.rs:119-157 returns no batch
    until it is full) until max_batch_wait_ms passes (engine.rs:1984-2011), registering no job
    /status could show meanwhile."""
    size = facts.max_batch_size
    if size is None or size <= 1:
        unknown = ("" if size is not None or facts.engine_info else
                   "; the log has no INFO line of cuzk's engine (its level is above info), so "
                   "its max_batch_size, which holds requests out of /status, is not known")
        return ([MAX_PENDING_SETTING], True,
                "gapwatch sees cuzk idle, not whether Curio had proofs waiting" + unknown, [])
    wait = facts.max_batch_wait_ms
    said = f"max_batch_size={size}" + (f" max_batch_wait_ms={wait}" if wait is not None else "")
    evidence = [f"'synthesis dispatcher started' says {said} (engine.rs:1892): each PoRep or "
                "SnapDeals request waits for more of its kind before synthesis starts"]
    if facts.timeout_flushes:
        evidence.append(f"{facts.timeout_flushes} batch(es) dispatched only when the wait ran "
                        "out ('processing batch' in span synth_timeout_flush, engine.rs:2012)")
    return ([*BATCH_WAIT_SETTINGS, MAX_PENDING_SETTING], True,
            "/status lists no request the batch collector holds, so gapwatch cannot tell a "
            "request waiting there for its batch to fill from no request at all", evidence)


def _monolithic(gaps: StallGaps, facts: PathFacts) -> Found | str | None:
    if facts.pipeline_enabled is False:
        return None  # the general advice: [pipeline] enabled = true
    kinds = gaps.kinds
    batched = gaps.batched
    if batched or (facts.batches and not kinds & set(POST_KINDS)):
        # The batches these gaps name, else those the log shows: each kind's own budget.
        return [batch_setting((kinds & set(BATCH_KINDS)) or facts.batch_kinds)], not batched, (
            "" if batched else "these gaps name no batch job, but the log shows batches"), \
            _batch_evidence(facts, batched, len(gaps))
    return ("WinningPoSt and WindowPoSt are monolithic and unpinned by design in this cuzk "
            "(pipeline.rs:3015, 3210 pass no pinned pool): no setting changes that")


def _batch_evidence(facts: PathFacts, batched: int, gaps: int) -> list[str]:
    out = []
    if batched:
        out.append(f"{batched} of {gaps} gap(s) during a batch job (TIMELINE SYNTH_START "
                   "kind=porep-c2 or snap-update, no partition)")
    if facts.batches:
        out.append(f"{facts.batches} batch job(s) in the log")
    if facts.max_batch_size is not None:
        out.append(f"'synthesis dispatcher started' says max_batch_size={facts.max_batch_size} "
                   "(engine.rs:1892)")
    return out


def _pageable(gaps: StallGaps, facts: PathFacts) -> Found | str | None:
    if not facts.log_seen:
        return None
    if facts.pipeline_enabled is False:
        return [PIPELINE_SETTING], False, "", [
            pipeline_off_evidence(facts.pipeline_off_by_workers)]
    if facts.batches:
        return [batch_setting(facts.batch_kinds)], True, (
            "cuzk's log shows batches and no pool failure: batched a/b/c are pageable; "
            "gapwatch did not tie these gaps to one batch"), _batch_evidence(facts, 0, len(gaps))
    if not facts.pipeline_info:
        # No INFO line of the pipeline (level "warn"): no first wave, no `is_pinned` could
        # show, so their absence proves nothing; the general advice stands.
        return None
    # The gaps as a whole: most of them in first waves (of any run, any circuit type) are a
    # first wave's stall, cited by the latest such gap's wave; else the rest's words stand,
    # with how many were a wave's. (The latest gap alone gave a stall of hours after its
    # waves a wave's words when a new run's wave took its last gap, and the reverse.)
    n = len(gaps)
    inside, latest_inside = in_waves(facts.first_waves, gaps.moments)
    if inside * 2 > n:
        words = wave_words(wave_of(facts.first_waves, latest_inside), facts.unhinted)
        return words if inside == n else f"{inside} of {n} gap(s) in a first wave: {words}"
    some = (f" (but {inside} of {n} gap(s), in a first wave: unpinned by design, no setting)"
            if inside else "")
    if gaps.unpinned:
        return ("cuzk's log says these partitions were unpinned (is_pinned=false) with no pool "
                "failure, no batch, the pipeline on and outside every run's first wave of each "
                "circuit type: a path upstream's code does not take (pipeline.rs:273-308), so "
                f"no setting is known{some}")
    return ("cuzk's log shows no pool failure, no batch, the pipeline on and no first wave "
            "then: its partitions are pinned; the pageable copies left are the MSM scalars and "
            "bases cuzk keeps in heap memory (groth16_cuda.cu:1005-1031), which no setting "
            f"pins{some}")


def _latest_wave(gaps: StallGaps, facts: PathFacts) -> FirstWave | None:
    """The first wave (of any run, any circuit type) the latest of these first-wave gaps falls
    in: the one whose evidence is cited. `stall_of` has already put each gap in a wave where
    the pipeline view held the waves; this reads the same windows from the paths' facts."""
    latest = gaps.latest
    return wave_of(facts.first_waves, gap_moment(latest)) if latest is not None else None


#: A hot-path wait this long (ms) is a lock worth naming.
LOCK_WAIT_MS = 10


def _hot_said(facts: PathFacts) -> str:
    return ", ".join(f"{k} up to {v} ms" for k, v in facts.hot_path_max_ms)


def _dispatch(facts: PathFacts) -> Found | str | None:
    """A worker /status shows idle while synthesised partitions wait. On cuzk's hot path only
    the StatusTracker's write lock (status_ms) comes before the worker is shown `proving`
    (`partition_gpu_start`, engine.rs:3018-3021, then GPU_PICKUP): the JobTracker waits come
    after, and show as the wait inside the workers (`_job_tracker`)."""
    hot = dict(facts.hot_path_max_ms)
    status_ms = hot.get("status_ms", 0)
    if status_ms < LOCK_WAIT_MS:
        return None  # the general words stand
    return [STATUS_PERIOD_SETTING], True, (
        "status_ms, /status's lock, is the one hot-path wait before a worker shows busy; "
        "another /status poller may hold it too"), [f"GPU_TIMING hot_path: {_hot_said(facts)}"]


def _job_tracker(facts: PathFacts) -> Found | str | None:
    """The wait inside the workers, where the log shows cuzk's JobTracker mutex: a worker is
    `proving` in /status from `partition_gpu_start`, before GPU_PICKUP, and only then takes
    the JobTracker twice (fail_check_ms, mark_busy_ms, engine.rs:3031, 3047), which the
    finalizer holds through the PoRep self-check (engine.rs:521) and the per-partition
    validation of CUZK_VALIDATE_PARTITIONS=1 (engine.rs:532, 861), and gRPC
    GetStatus/GetMetrics take (engine.rs:3595, 3615)."""
    hot = dict(facts.hot_path_max_ms)
    said = _hot_said(facts)
    evidence = [f"GPU_TIMING hot_path: {said}"] if said else []
    if facts.validate_lines:
        return [VALIDATE_SETTING], False, "", [
            f"{facts.validate_lines} 'CUZK_VALIDATE_PARTITIONS=1: validating' line(s)", *evidence]
    tracker = max(hot.get("fail_check_ms", 0), hot.get("mark_busy_ms", 0))
    if tracker < LOCK_WAIT_MS:
        return None  # the general words stand: CPU prep, the GPU mutex
    checks = (f"; {facts.self_checks} self-check(s) in the log" if facts.self_checks else "")
    if not facts.engine_info:
        checks += ("; the log has no INFO line of cuzk's engine (its level is above info), so "
                   "CUZK_VALIDATE_PARTITIONS=1, which holds that mutex, would not show")
    return ("no setting: after pickup GPU workers wait on cuzk's JobTracker mutex (fail_check_ms, "
            "mark_busy_ms, engine.rs:3031, 3047), which the finalizer holds through the PoRep "
            "self-check (engine.rs:521) and gRPC GetStatus/GetMetrics take (poll those less); "
            f"/status takes only status_ms's lock ({said}){checks}")


def _split_prove_evidence() -> str:
    return ("GPU_PICKUP lines but not one GPU_START (engine.rs:3131) nor "
            f"'{SPLIT_PROVE_TELL}' line: CUZK_DISABLE_SPLIT_PROVE=1 looks set")


def path_notes(facts: PathFacts) -> list[str]:
    """What the log says the operator set to no effect, or set and should not have: said with
    the advice whatever the gaps."""
    out = [f"cuzk ignores '{key}' in its config (its WARN '{key} is deprecated', "
           "cuzk-core/src/config.rs): remove it, it changes nothing" for key in facts.deprecated]
    if facts.split_prove_disabled:
        out.append(f"{_split_prove_evidence()} (engine.rs:3075): the prove/finish overlap is off, "
                   "and gapwatch's lock attribution, which keys on that line, is off too")
    if facts.validate_lines:
        out.append("CUZK_VALIDATE_PARTITIONS=1 is set (its lines, engine.rs:533, 862): a debug "
                   "knob that holds the JobTracker mutex GPU workers wait on; unset it in "
                   "production")
    if facts.starts > 1:
        where = "in the window" if facts.starts_in_window else "in the log read"
        out.append(f"cuzk started {facts.starts} times {where}: each start begins "
                   "with an unpinned first wave and reloads its SRS")
    return out
