"""The simulator's `post` and `post-failed` scenarios: the chained pipeline, plus what a proving
box lives through besides partitions, on a fixed script (a `Cycle`) that repeats.

Every run of the simulated cuzk starts with no SRS in memory (engine.rs:1249: "loaded on
demand — no preload") and loads each at its kind's first use: `porep-32g` for its first PoRep
before any synthesis (`POREP_SRS_LOAD_S`, engine.rs:2187-2209), `winning-32g` inside the
synthesis step of its first WinningPoSt (`FIRST_POST_SRS_LOAD_S`, engine.rs:2717-2721, a first
load: no `SRS evicted` before it), each `loading SRS from disk` .. `SRS loaded successfully`
(srs_manager.rs:203, 224).

`post`'s script, every `CYCLE_S` simulated seconds:

- `ON_TIME_AT_S`: a WinningPoSt arrives while both GPU workers hold partitions (synthesis
  2.2 s, with its SRS's 2 s first load in it in a run's first, then it waits for the first
  worker to come free, 1.3 s on the GPU);
- `LATE_AT_S`: a WinningPoSt whose SRS (`winning-32g`) its own budget acquire evicts: cuzk
  evicts an SRS only from its budget's evictor, when an acquire is short, and only one idle at
  least `[memory] eviction_min_idle` (engine.rs:1257-1320). The simulated cuzk runs with
  `eviction_min_idle = "10s"` (`EVICTION_MIN_IDLE_S`, below the 20 s between its
  WinningPoSts), and its budget is full when this one arrives (`BUDGET_SHORT_S`: PoRep
  partitions dispatched ahead hold it, cuzk-upstream-paths.md 2.4; its /status says so), so
  the PoSt's working-set acquire (engine.rs:2649) runs the evictor and it evicts `winning-32g`,
  idle since the one before used it (its `ensure_loaded`, engine.rs:2717-2721): `SRS evicted
  circuit_id freed_gib budget_available_gib` (srs_manager.rs:282, whole GiB: the 184 MiB file
  is `freed_gib=0`), then `evicted for memory pressure entry=srs:winning-32g freed_gib`
  (engine.rs:1317). Idle less than that, it is not evicted. Its SRS is then loaded from disk
  for 31 s inside its synthesis step, after its synthesis and before SYNTH_END, as cuzk does
  (engine.rs:2717-2721), so it misses its 30 s epoch (said late while still running, then when
  it ends);
- `PANIC_AT_S`: the next partition to finish on GPU 0 panics in its prove start, supraseal-c2's
  `start_groth16_proof` turning a CUDA "out of memory" of its NTT into a panic (src/lib.rs:
  315-316) inside the `spawn_blocking` of `gpu_prove_start` (engine.rs:3134-3147): Rust's
  default hook on stderr (untimestamped, its thread tokio's `tokio-runtime-worker`), then in
  its GPU worker's span `GPU_TIMING prove_start returned` and `GPU prove start task panicked`
  (engine.rs:3148-3154, 3302), its job failed. Not `partition GPU proving task panicked`
  (engine.rs:679): `process_partition_result` writes it of a panic in the split prove's
  finalizer (its `spawn_blocking` of `gpu_prove_finish`, engine.rs:3185-3197, 3238), a
  panic of supraseal-c2's `finish_groth16_proof` (src/lib.rs:328-331), never of its start's
  (the simulator wrote it after a lib.rs:316 panic, in a thread named `'<unnamed>'`);
- `KILL_AT_S`: the daemon is killed without a line (systemd's SIGTERM), nothing runs and its
  `/status` refuses connections for `DOWN_S` (and NVML answers nothing for the first
  `FREE_POOL_BLIND_S` of it, while the driver frees its pinned memory), then it starts again
  (its start lines, a new TIMELINE epoch, its status server listening again after the engine's
  start as main.rs:118-133 orders it, `/status` uptime from 0), loads its PoRep SRS again and
  synthesises a first wave before its first GPU work. The killed process's SRS went with it
  (`srs_in_memory` emptied): the next WinningPoSt loads `winning-32g` from disk again inside
  its synthesis step, as the first run's first did.

`post-failed`'s, every `FAILED_CYCLE_S`: the on-time WinningPoSt at `ON_TIME_AT_S`, then at
`FAILED_AT_S` one whose GPU prove start panics, `PROVE_START_FAIL_S` after its GPU_START, as
`post`'s partition does (`prove_start_panics`): supraseal-c2 turns the CUDA error of its NTT
into a panic (supraseal-c2/src/lib.rs:315-316) inside the `spawn_blocking` of
`gpu_prove_start` (engine.rs:3134-3147), Rust's default hook writes it on stderr, then its GPU
worker writes `GPU_TIMING prove_start returned` (3148-3154) and `GPU prove start task
panicked` (ERROR, 3302), both in its span, which names it (3005-3012): no GPU_END, no
completion line; its worker is free again. Each panic's `JoinError` names its own tokio task
(`task_id`: they were all `task 41`). Not `GPU prove start
failed` (3282): at curio e0294b0f it cannot be written, `gpu_prove_start` (pipeline.rs:1386-
1405) failing only where bellperson's `prove_start` returns `MalformedSrs`
(extern/bellperson/src/groth16/prover/supraseal.rs:199-202), which the `SuprasealParameters`
cuzk passes never gives (supraseal_params.rs:70-72).

Every line is one of cuzk's own formats (tests/data/cuzk-upstream/make_data.py builds the same
scenarios from them, with the upstream file:line of each). Who calls it: `SimProver` (it builds
one for a `post` scenario and calls `schedule`, `load_porep_srs`, `dispatch`, `take_panic`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from gapwatch.sources.sim_lines import enqueued


class _Worker(Protocol):
    wid: int
    busy: bool
    job: str | None
    partition: int | None
    since_s: float


class _Gpu(Protocol):
    """What the script reads and changes of one simulated GPU (`gapwatch.sources.sim._Gpu`)."""

    index: int
    workers: list[Any]
    queue: list[Any]
    lock_free_at: float
    synth_active: int
    computes: list[Any]
    copies: list[Any]


class SimProver(Protocol):
    """The simulator as the script drives it (`gapwatch.sources.sim.SimProver`): typed here,
    not imported, since the simulator imports this module."""

    down: bool
    synth_active_counter: int
    _now: float
    _epoch: float
    _gpus: list[Any]
    _jobs: dict[str, Any]
    _events: list[tuple[float, int, Callable[[], None]]]

    def _at(self, t: float, fn: Callable[[], None]) -> None: ...
    def _raw(self, text: str, stream: str = ...) -> None: ...
    def process_gone(self) -> None: ...
    def nvml_blind_for(self, seconds: float) -> None: ...
    def status_server_starts(self) -> None: ...
    def _timeline(self, t: float, event: str, job: str, detail: str) -> None: ...
    def _trace(self, t: float, message: str, span: str = ..., target: str = ...,
               level: str = ...) -> None: ...
    def _dispatch(self, g: Any) -> None: ...
    def _fill_synthesis(self, g: Any) -> None: ...
    def _part(self, job: str, part: int) -> Any: ...
    def add_compute(self, g: Any, start: float, end: float) -> None: ...
    def startup_lines(self) -> None: ...

CYCLE_S = 150.0
ON_TIME_AT_S = 15.0
LATE_AT_S = 35.0
PANIC_AT_S = 80.0
KILL_AT_S = 100.0
DOWN_S = 10.0
#: NVML answers nothing this long after the kill, while the driver frees the killed run's
#: pinned host memory: 1.9 s for a 24 GiB pool on the H200 (docs/sampling.md, "Blind spots").
FREE_POOL_BLIND_S = 1.9
#: The simulated cuzk's `[memory] eviction_min_idle` (config.rs:70-74; its default is 5m): an
#: SRS idle at least this long is an eviction candidate when an acquire is short.
EVICTION_MIN_IDLE_S = 10.0
#: How long its budget stays full from the late WinningPoSt's arrival (its /status says it):
#: the next partition's GPU end releases 14 GiB within about a second.
BUDGET_SHORT_S = 1.0
#: The WinningPoSt SRS loaded on demand inside its synthesis step (the late one), and the
#: PoRep SRS each run loads for its first PoRep, before any synthesis.
POST_SRS_LOAD_S = 31.0
POREP_SRS_LOAD_S = 6.0
#: The WinningPoSt SRS's first load in a run: on demand, inside the synthesis step of the
#: run's first WinningPoSt (engine.rs:2717-2721), short enough that it stays on time.
FIRST_POST_SRS_LOAD_S = 2.0
WINNING_SRS = "winning-32g"
POREP_SRS = "porep-32g"
#: A prove start's panic (cuzk-upstream-paths.md 4.3: supraseal-c2 panics on every CUDA error,
#: in cuzk's `spawn_blocking` tasks) as Rust 1.86's default hook writes it (cuzk's
#: rust-toolchain.toml) on stderr: its location, the `spawn_blocking` thread tokio names
#: `tokio-runtime-worker` (cuzk-daemon's `#[tokio::main]`, main.rs:33, names none: it read
#: `'<unnamed>'`, a thread no tokio runtime starts), supraseal-c2's `start_groth16_proof`
#: `panic!("{}", String::from(err))` (src/lib.rs:316); its message, the CUDA error lotus#13634
#: quotes; the hook's `note: run with RUST_BACKTRACE`, which follows a process's first panic
#: only.
PANIC_LINES = (
    "thread 'tokio-runtime-worker' panicked at /root/.cargo/git/checkouts/curio/extern/"
    "supraseal-c2/src/lib.rs:316:9:",
    'cudaGetLastError()@/root/.cargo/registry/src/sppark-0.1.14/ntt/kernels/'
    'gs_mixed_radix_wide.cu:220 failed: "out of memory"',
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
)


#: `post-failed`: its cycle, its failing WinningPoSt's arrival, and how long after its GPU_START
#: its GPU prove start panics (its NTT's CUDA error: the simulated GPU does no work for it).
FAILED_CYCLE_S = 60.0
FAILED_AT_S = 35.0
PROVE_START_FAIL_S = 0.3
PROVE_START_PANIC_LINE, PROVE_START_PANIC_MESSAGE = PANIC_LINES[:2]
#: The tokio task id a run's first panic names, and how many more each later one's names: tokio
#: numbers every task a process spawns (`tokio::task::Id`, each `spawn_blocking` one too), so
#: each panic's `JoinError` names its own (`sim:post-failed` said `task 41` of every one); a
#: new process counts from its start again. Illustrative figures: the tasks spawned between.
FIRST_TASK_ID = 41
TASK_ID_STEP = 16


def prove_start_error(task_id: int = FIRST_TASK_ID) -> str:
    """The error of `GPU prove start task panicked` (curio e0294b0f, extern/cuzk/cuzk-core/src/
    engine.rs:3302, `error = %e`): tokio 1.49's (cuzk's Cargo.lock) `JoinError` of a panic
    with a message, `task {id} panicked with message {msg:?}` (tokio/src/runtime/task/
    error.rs:135-150; Rust's `{:?}` of a str escapes its backslashes and quotes)."""
    escaped = PROVE_START_PANIC_MESSAGE.replace("\\", "\\\\").replace('"', '\\"')
    return f'task {task_id} panicked with message "{escaped}"'


#: A run's first panic's error, and what gapwatch says of that failure: the line's message,
#: then its error (`gapwatch.cuzk.pipeline.error_words`).
PROVE_START_ERROR = prove_start_error()
PROVE_START_FAILED_WORDS = f"GPU prove start task panicked: {PROVE_START_ERROR}"


@dataclass(frozen=True, slots=True)
class Cycle:
    """What one cycle of a script does, each at its offset from the cycle's start (simulated
    seconds; None: not in this script)."""

    length_s: float
    on_time_at_s: float | None = None
    late_at_s: float | None = None
    failed_at_s: float | None = None
    panic_at_s: float | None = None
    kill_at_s: float | None = None


#: Each scenario's cycle.
CYCLES: dict[str, Cycle] = {
    "post": Cycle(CYCLE_S, on_time_at_s=ON_TIME_AT_S, late_at_s=LATE_AT_S,
                  panic_at_s=PANIC_AT_S, kill_at_s=KILL_AT_S),
    "post-failed": Cycle(FAILED_CYCLE_S, on_time_at_s=ON_TIME_AT_S, failed_at_s=FAILED_AT_S),
}


class Kept:
    """An event that survives a simulated kill (the script's own, the thread ticks)."""

    keep = True
    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[], None]) -> None:
        self.fn = fn

    def __call__(self) -> None:
        self.fn()


class PostScript:
    """A `post` scenario's script, run inside one `SimProver` (its model and lines)."""

    def __init__(self, sim: SimProver, cycle: Cycle = CYCLES["post"]) -> None:
        self.sim = sim
        self.cycle = cycle
        #: The WinningPoSt whose GPU prove start will panic, each one's GPU_START once there
        #: (simulated seconds), and whether this run of cuzk has panicked yet (Rust's hook
        #: writes its `note: run with RUST_BACKTRACE` after a process's first panic only).
        self.failing: set[str] = set()
        self.gpu_started_s: dict[str, float] = {}
        self.panicked_this_run = False
        #: The tokio task id the run's next panic names (`FIRST_TASK_ID`, `TASK_ID_STEP`).
        self.task_id = FIRST_TASK_ID
        self.post_queue: list[tuple[str, float]] = []  # (job, GPU seconds), GPU 0
        self.panic_armed = False
        self.winpost = 0
        #: Each PoSt's arrival (simulated seconds), for its completion line's total_ms.
        self.arrived: dict[str, float] = {}
        #: The circuits whose SRS this run of cuzk holds (srs_manager.rs `loaded`, 211): none
        #: at a start, cuzk loads each at its first use (engine.rs:1249, "no preload"); a
        #: process that dies loses them, so a new run loads each again.
        self.srs_in_memory: set[str] = set()
        #: Each SRS's last use (`last_used`, srs_manager.rs:211-215, refreshed by each
        #: `ensure_loaded`), the ones evicted since (their next load a reload), and until when
        #: the budget is full (`BUDGET_SHORT_S`; the simulator's /status reads it).
        self.srs_used_s: dict[str, float] = {}
        self.srs_evicted: set[str] = set()
        self.budget_short_until_s = float("-inf")

    def schedule(self, start: float = 0.0) -> None:
        """One cycle of the script from `start` (simulated seconds); the next one after it."""
        at, c = self.sim._at, self.cycle
        if c.on_time_at_s is not None:
            at(start + c.on_time_at_s, Kept(partial(self._post, 0.0, 2.2, 1.3)))
        if c.late_at_s is not None:
            at(start + c.late_at_s, Kept(partial(self._post, POST_SRS_LOAD_S, 2.1, 0.8)))
        if c.failed_at_s is not None:
            at(start + c.failed_at_s, Kept(partial(self._post, 0.0, 2.1, 0.8, fails=True)))
        if c.panic_at_s is not None:
            at(start + c.panic_at_s, Kept(self._arm_panic))
        if c.kill_at_s is not None:
            at(start + c.kill_at_s, Kept(self._kill))
        at(start + c.length_s, Kept(partial(self.schedule, start + c.length_s)))

    # -- PoSt ---------------------------------------------------------------------------------

    def _post(self, reload_s: float, synth_s: float, gpu_s: float, fails: bool = False) -> None:
        """A WinningPoSt arrives; `reload_s`: its SRS was evicted and is loaded again for
        that long (0: kept in memory, unless this run never loaded it); `fails`: its GPU
        prove start panics."""
        sim = self.sim
        self.winpost += 1
        job = f"winpost-1000-{0x1a2b3c00 + self.winpost:08x}"
        self.arrived[job] = sim._now
        if fails:
            self.failing.add(job)
        enqueued(sim, job, "winning-post", "Critical")
        if reload_s:
            self._acquire_short()
        sim._at(sim._now, Kept(partial(self._synth, job, reload_s, synth_s, gpu_s)))

    def _acquire_short(self) -> None:
        """Its working-set acquire (engine.rs:2649) finds the budget full: the evictor
        (engine.rs:1257-1320) frees no pinned buffer (every one is checked out) and evicts
        `winning-32g` where it has been idle at least `EVICTION_MIN_IDLE_S`."""
        sim = self.sim
        self.budget_short_until_s = sim._now + BUDGET_SHORT_S
        used = self.srs_used_s.get(WINNING_SRS)
        if (WINNING_SRS not in self.srs_in_memory or used is None
                or sim._now - used < EVICTION_MIN_IDLE_S):
            return
        self.srs_in_memory.discard(WINNING_SRS)
        self.srs_evicted.add(WINNING_SRS)
        del self.srs_used_s[WINNING_SRS]
        sim._trace(sim._now, f"SRS evicted circuit_id={WINNING_SRS} freed_gib=0 "
                   "budget_available_gib=0", target="cuzk_core::srs_manager")
        sim._trace(sim._now, f"evicted for memory pressure entry=srs:{WINNING_SRS} freed_gib=0",
                   target="cuzk_core::engine")

    def _synth(self, job: str, reload_s: float, synth_s: float, gpu_s: float) -> None:
        """Its synthesis step (engine.rs:2665-2745): SYNTH_START, the synthesis, then its SRS
        loaded from disk when it is not in memory (engine.rs:2717-2721: `ensure_loaded` after
        the synthesis; `reload_s` long after an eviction, else a first load's), then
        SYNTH_END."""
        sim = self.sim
        sim._timeline(sim._now, "SYNTH_START", job, "kind=winning-post")
        then: Callable[[], None] = partial(self._queued, job, synth_s, gpu_s)
        if WINNING_SRS not in self.srs_in_memory:
            load_s = reload_s if WINNING_SRS in self.srs_evicted else FIRST_POST_SRS_LOAD_S
            then = partial(self._load_srs, load_s, then)
        sim._at(sim._now + synth_s, Kept(then))

    def _load_srs(self, srs_s: float, then: Callable[[], None]) -> None:
        """Its own SRS loaded from disk for `srs_s` (srs_manager.rs:203, 224), then `then`."""
        sim = self.sim
        sim._trace(sim._now, f"loading SRS from disk circuit_id={WINNING_SRS} "
                   "path=/data/zk/params/v28-proof-of-spacetime-fallback.params "
                   "file_size_gib=1", target="cuzk_core::srs_manager")

        def loaded() -> None:
            self.srs_in_memory.add(WINNING_SRS)
            self.srs_evicted.discard(WINNING_SRS)
            sim._trace(sim._now, f"SRS loaded successfully circuit_id={WINNING_SRS} "
                       f"elapsed_ms={int(srs_s * 1000)} budget_used_gib=48 "
                       "budget_available_gib=464", target="cuzk_core::srs_manager")
            then()
        sim._at(sim._now + srs_s, Kept(loaded))

    def _queued(self, job: str, synth_s: float, gpu_s: float) -> None:
        sim = self.sim
        self.srs_used_s[WINNING_SRS] = sim._now  # its `ensure_loaded` (engine.rs:2717-2721)
        # synth_ms is the synthesis alone, without the SRS load (engine.rs:2745).
        sim._timeline(sim._now, "SYNTH_END", job, f"synth_ms={int(synth_s * 1000)}")
        sim._timeline(sim._now, "GPU_QUEUE", job, "monolithic")
        self.post_queue.append((job, gpu_s))
        sim._dispatch(sim._gpus[0])

    def dispatch(self, g: _Gpu) -> None:
        """Free workers of GPU 0 take PoSt first (cuzk's GPU queue key (0,0))."""
        if g.index != 0:
            return
        for w in g.workers:
            if not w.busy and self.post_queue:
                job, gpu_s = self.post_queue.pop(0)
                self._prove(g, w, job, gpu_s)

    def _prove(self, g: _Gpu, w: _Worker, job: str, gpu_s: float) -> None:
        sim = self.sim
        w.busy, w.job, w.partition, w.since_s = True, job, None, sim._now
        sim._timeline(sim._now, "GPU_PICKUP", job, f"worker={w.wid}")
        sim._timeline(sim._now, "GPU_START", job, f"worker={w.wid}")
        if job in self.failing:
            self.gpu_started_s[job] = sim._now
            sim._at(sim._now + PROVE_START_FAIL_S, partial(self._prove_start_failed, g, w, job))
            return
        lock_at = max(sim._now, g.lock_free_at)
        g.lock_free_at = lock_at + gpu_s
        sim.add_compute(g, lock_at, lock_at + gpu_s)
        start = sim._now

        def done() -> None:
            ms = int((sim._now - start) * 1000)
            sim._timeline(sim._now, "GPU_END", job, f"worker={w.wid},gpu_ms={ms}")
            arrived = self.arrived.pop(job, start)
            sim._trace(sim._now, "proof completed successfully (pipeline) proof_len=192 "
                                 f"total_ms={int((sim._now - arrived) * 1000)} queue_ms=0 "
                                 f"synth_ms=0 gpu_ms={ms}")
            w.busy, w.job = False, None
            sim._dispatch(g)

        sim._at(lock_at + gpu_s, done)

    def _prove_start_failed(self, g: _Gpu, w: _Worker, job: str) -> None:
        """The failing WinningPoSt's prove start panics (`prove_start_panics`); the job fails,
        its worker takes the next item (engine.rs:3300: `gpu_done_for_worker.notify_one()`)."""
        sim = self.sim
        self.failing.discard(job)
        started_s = self.gpu_started_s.pop(job, sim._now)
        self.arrived.pop(job, None)
        self.prove_start_panics(g, w, job, "winning-post", None, started_s)
        w.busy, w.job = False, None
        sim._dispatch(g)

    def prove_start_panics(self, g: _Gpu, w: _Worker, job: str, kind: str,
                           partition: int | None, started_s: float) -> None:
        """A GPU prove start's panic, in the order cuzk writes it (curio e0294b0f): the panic on
        stderr (`PANIC_LINES`: supraseal-c2/src/lib.rs:316; the hook's note after the run's
        first only), then, inside the GPU worker's span (engine.rs:3005-3012: `partition =
        ?partition_index`, `None` for a PoSt), `GPU_TIMING prove_start returned` (3148-3154,
        written whatever `spawn_blocking` returned) and `GPU prove start task panicked` (3302,
        `error = %e` of the `JoinError`, naming the run's next tokio task id). `started_s`:
        its GPU_START (simulated seconds)."""
        sim = self.sim
        sim._raw(PROVE_START_PANIC_LINE)
        sim._raw(PROVE_START_PANIC_MESSAGE)
        if not self.panicked_this_run:
            sim._raw(PANIC_LINES[2])
        self.panicked_this_run = True
        some = "None" if partition is None else f"Some({partition})"
        span = (f"gpu_worker{{worker_id={w.wid} gpu={g.index} job_id={job} "
                f"proof_kind={kind} batch_size=1 partition={some}}}: ")
        wall_ms = round((sim._now - started_s) * 1000)
        sim._trace(sim._now, f"GPU_TIMING prove_start returned worker_id={w.wid} "
                   f"partition={some} total_pre_prove_ms={wall_ms} "
                   f"spawn_blocking_wall_ms={wall_ms}", span=span)
        sim._trace(sim._now, "GPU prove start task panicked "
                   f"error={prove_start_error(self.task_id)}", span=span, level="ERROR")
        self.task_id += TASK_ID_STEP

    # -- a panic ------------------------------------------------------------------------------

    def _arm_panic(self) -> None:
        self.panic_armed = True

    def take_panic(self, g: _Gpu, w: _Worker, job: str, part: int) -> bool:
        """When armed, the partition finishing on GPU 0 panics in its prove start instead
        (`prove_start_panics`; True: handled): its job failed, its worker free again."""
        if not self.panic_armed or g.index != 0:
            return False
        self.panic_armed = False
        sim = self.sim
        self.prove_start_panics(g, w, job, "porep-c2", part % 10, w.since_s)
        rec = sim._part(job, part)
        rec.state, rec.gpu_end_s = "failed", sim._now
        sim._jobs[job].failed = True
        w.busy, w.job, w.partition = False, None, None
        sim._dispatch(g)
        return True

    # -- a restart ----------------------------------------------------------------------------

    def _kill(self) -> None:
        """Killed without a line: everything in flight is gone, its SRS (pinned host memory
        freed with the process) and its status server with it; the GPU stops."""
        sim = self.sim
        sim.down = True
        sim.process_gone()
        sim.nvml_blind_for(FREE_POOL_BLIND_S)
        self.srs_in_memory.clear()
        self.srs_evicted.clear()
        self.srs_used_s.clear()
        sim._events = [e for e in sim._events if getattr(e[2], "keep", False)]
        heapq.heapify(sim._events)
        now = sim._now
        for g in sim._gpus:
            g.queue.clear()
            g.synth_active = 0
            g.lock_free_at = now
            g.computes = [s if s.end <= now else type(s)(s.start, now, s.rate)
                          for s in g.computes if s.start < now]
            g.copies = [s if s.end <= now else type(s)(s.start, now, s.rate)
                        for s in g.copies if s.start < now]
            for w in g.workers:
                w.busy, w.job, w.partition = False, None, None
        self.post_queue.clear()
        self.arrived.clear()
        self.failing.clear()
        self.gpu_started_s.clear()
        self.panicked_this_run = False
        self.task_id = FIRST_TASK_ID  # a new process numbers its tasks from its start again
        sim._jobs.clear()
        sim.synth_active_counter = 0
        sim._at(now + DOWN_S, Kept(self._start_again))

    def _start_again(self) -> None:
        """The new run: its start lines (`cuzk-daemon starting` first, main.rs:63), a new
        TIMELINE epoch, its status server after the engine's start (main.rs:118-133), then its
        PoRep SRS loaded before any synthesis, as every run's first PoRep does."""
        sim = self.sim
        sim._epoch = sim._now  # the new run's TIMELINE epoch and /status uptime
        sim.startup_lines()
        sim.status_server_starts()
        self.load_porep_srs()

    def load_porep_srs(self) -> None:
        """The run's first PoRep loads `porep-32g` from disk before its partitions are
        dispatched (engine.rs:2187-2209, `ensure_loaded` in the parse task that
        `process_batch` awaits; srs_manager.rs:203, 224): nothing is synthesised until it is
        loaded (`down` holds the synthesis back meanwhile)."""
        sim = self.sim
        sim.down = True
        sim._trace(sim._now + 0.1, f"loading SRS from disk circuit_id={POREP_SRS} "
                   "path=/data/zk/params/v28-stacked-proof-of-replication.params "
                   "file_size_gib=44", target="cuzk_core::srs_manager")
        sim._at(sim._now + POREP_SRS_LOAD_S, Kept(self._srs_loaded))

    def _srs_loaded(self) -> None:
        sim = self.sim
        self.srs_in_memory.add(POREP_SRS)
        sim._trace(sim._now, f"SRS loaded successfully circuit_id={POREP_SRS} "
                   f"elapsed_ms={int(POREP_SRS_LOAD_S * 1000)} budget_used_gib=47 "
                   "budget_available_gib=465", target="cuzk_core::srs_manager")
        sim.down = False
        for g in sim._gpus:
            sim._fill_synthesis(g)
