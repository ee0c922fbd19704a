"""A stand-in two-worker prover on one GPU, writing cuzk-style log lines and ground truth.

Who runs it: `bench/gpu_e2e.py` (beside `gapwatch record`), or a person on a GPU box:

    python3 bench/gpu_loadgen.py --scenario pageable --duration 35 \
        --stdout-log /tmp/lg.out --stderr-log /tmp/lg.err --truth /tmp/lg.truth.json

What it does (the shape of cuzk's pipeline, see docs/gpu-proof.md):
- synthesis threads fill a/b/c host buffers, either slots of a reused pinned pool (`pinned`) or
  fresh pageable memory each partition (written by the thread, so every page is really touched);
- two GPU worker threads each take a partition, copy it host-to-device on their own CUDA stream,
  then take a narrow compute lock (`threading.Lock`, cuzk's per-GPU mutex) and run a bf16 matmul
  loop sized to `--compute-s`; one worker's copy overlaps the other's compute;
- optional processes hammer host memory bandwidth (large memory copies in a loop), which is what
  slows pageable (driver-staged) copies to 1-4 GB/s;
- `--h2d-repeat` copies each a/b/c that many times (transfer-bound: pinned copies at line rate,
  far more bytes than compute can hide); `--synth-delay-s` slows synthesis (host-stall).

The pipeline's own view (`--status-listen HOST:PORT`): like cuzk, the load generator keeps a
status tracker (`PipelineTracker`: each partition pending -> synthesizing -> synth_done -> gpu ->
done, each worker idle or proving) with upstream's semantics (curio e0294b0f `status.rs`): a
memory budget (`BUDGET_BYTES`, 14 GiB per partition in flight), `synthesis.max_concurrent` the
budget over 9 GiB (NOT its synthesis threads: those its log's `starting pipeline ...
synth_worker_count` line says, as cuzk's does), `synthesis.active` +1 at a synthesis start and
-1 only when one succeeds (`synth_failed` leaves it, as cuzk's `partition_failed` does). The
tracker sits behind ONE lock that the synthesis
threads and the GPU workers take on their hot path (at pickup: status update, fail check, mark
busy, as cuzk's `GPU_TIMING hot_path` line times them; at completion) and that every `GET
/status` snapshot takes while it is built. It serves cuzk's JSON through
`gapwatch.sources.cuzk_status_server` (the repository root must be importable) and times, in
µs, every hot-path wait for that lock and every snapshot build: the truth file's `status` key.
That is what `bench/cuzk_status_h200.py` compares with and without gapwatch polling.

Log lines (reference: cuzk-log-formats.md 1.1, 1.2, 1.4, 2.1): tracing lines (RFC3339 µs UTC) go
to stdout or `--stdout-log`, TIMELINE and CUZK_TIMING/CUZK_NTT_H lines to stderr or
`--stderr-log`, each flushed as written so a tailer sees it live. Ground truth (`--truth`) is each
partition's GPU compute interval measured with a stream synchronisation around the kernels, under
the lock, in the layout of the shared `pageable.truth.json` plus run parameters and throughput.

The synthesis workers are cuzk's own formula (`Params.synth_workers`: `--synth-threads` is
its `max_parallel_synthesis`, at least 2 run), taken from gapwatch's core, as the status server
is: this checkout's gapwatch must be importable by the Python that runs this file.
The pure parts (parameters, line formats, truth document) import nothing heavy and are tested on
machines without a GPU (tests/test_e2e_loadgen.py); torch is imported only by `TorchBackend`,
`--fake` swaps it for sleeps of the same length so that the threads, queues, lock, log lines and
truth file run anywhere.
Exit codes: 0 done (also when stopped by SIGTERM/SIGINT), 1 a worker or synthesis thread failed,
2 bad usage or no usable GPU/torch, 3 the go file never appeared.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import random
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from statistics import median
from typing import IO, Any

MIB = 1 << 20
GIB = 1 << 30
#: The stand-in's memory budget (cuzk `[memory] total_budget`), what it reserves per partition
#: in flight (memory.rs POREP_PARTITION_FULL_BYTES) and the smallest partition status.rs divides
#: the budget by (SNAP_PARTITION_FULL_BYTES). Kept here (the pure parts need only the standard
#: library); tests/test_cuzk_status_bench.py holds them equal to gapwatch.cuzk.pipeline. cuzk's
#: synthesis worker count is gapwatch's own formula (`cuzk_synth_worker_count`).
BUDGET_BYTES = 512 * GIB
PARTITION_BUDGET_BYTES = 14 * GIB
SMALLEST_PARTITION_BYTES = 9 * GIB
#: cuzk PoRep: 10 partitions per proof; partitions beyond that start a new job id.
PARTITIONS_PER_JOB = 10
#: Holes between compute intervals at least this long count as gaps (as evaluation.scoring).
MIN_GAP_S = 0.3

# ------------------------------------------------------------------ parameters


@dataclass(frozen=True)
class Params:
    """Everything that shapes one run; written into the truth file."""

    scenario: str
    pinned: bool
    #: Size of each of a, b and c (MiB). Pinned sizes should be powers of two: torch's caching
    #: host allocator rounds pinned blocks up to one.
    abc_mib: int
    #: Copies of the whole a/b/c set per partition (transfer-bound: many).
    h2d_repeat: int
    compute_s: float
    #: cuzk's `[pipeline] max_parallel_synthesis`: the load generator runs as many synthesis
    #: threads as cuzk would run workers for it (`synth_workers`), never fewer than 2.
    synth_threads: int
    #: Extra seconds of "synthesis" per partition (host-stall: the queue runs dry).
    synth_delay_s: float
    hogs: int
    hog_mib: int
    #: Filled partitions waiting for a worker, at most (synthesis blocks beyond).
    queue_depth: int
    #: Pinned pool slots (each holds a, b and c); 0 = synth_threads + 2.
    pool_slots: int
    duration_s: float | None
    partitions: int | None
    gpu: int
    matmul_n: int
    torch_threads: int
    seed: int
    job_prefix: str = "porep-1000"

    @property
    def abc_bytes(self) -> int:
        return self.abc_mib * MIB

    @property
    def h2d_bytes_per_partition(self) -> int:
        return 3 * self.abc_bytes * self.h2d_repeat

    @property
    def slots(self) -> int:
        return self.pool_slots or self.synth_threads + 2

    @property
    def synth_workers(self) -> int:
        """The synthesis workers cuzk runs for this budget and `max_parallel_synthesis`
        (engine.rs, `synth_worker_count`: gapwatch's one copy of the formula), the threads
        this run starts and what its `starting pipeline` line says."""
        return cuzk_synth_worker_count(BUDGET_BYTES, self.synth_threads)


#: Scenario presets; every field can be overridden by its flag.
SCENARIOS: dict[str, dict[str, Any]] = {
    # Pinned pool, fast synthesis: one worker's 29 ms copy hides under the other's compute.
    "chained": dict(pinned=True, abc_mib=512, h2d_repeat=1, compute_s=0.9, synth_threads=3,
                    synth_delay_s=0.5, hogs=0, queue_depth=2),
    # The shared H200 trace's setup: 3 x 1.5 GiB fresh pageable memory per partition, 12
    # processes hammering host memory: copies at ~2 GB/s take longer than the other's compute.
    "pageable": dict(pinned=False, abc_mib=1536, h2d_repeat=1, compute_s=0.9, synth_threads=3,
                     synth_delay_s=0.0, hogs=12, queue_depth=2),
    # Slow synthesis: the queue runs dry, the GPU waits with PCIe quiet. Two workers (cuzk
    # never runs fewer) at 3.6 s each give what one at 1.8 s gave: half a partition a second
    # against the GPU's 1.1.
    "host-stall": dict(pinned=True, abc_mib=512, h2d_repeat=1, compute_s=0.9, synth_threads=2,
                       synth_delay_s=3.6, hogs=0, queue_depth=2),
    # 40 x 1.5 GiB (64 GB) of pinned copies per partition, 0.3 s compute: the link is the limit.
    "transfer-bound": dict(pinned=True, abc_mib=512, h2d_repeat=40, compute_s=0.3,
                           synth_threads=3, synth_delay_s=0.0, hogs=0, queue_depth=2),
}

_DEFAULTS: dict[str, Any] = dict(hog_mib=256, pool_slots=0, gpu=0, matmul_n=8192,
                                 torch_threads=4, seed=1)


def resolve_params(args: argparse.Namespace) -> Params:
    """The scenario preset, overridden by every flag the user gave. Raises ValueError."""
    if args.scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {args.scenario!r}; choose from {', '.join(SCENARIOS)}")
    values: dict[str, Any] = {**_DEFAULTS, **SCENARIOS[args.scenario]}
    for name in (*SCENARIOS[args.scenario], *_DEFAULTS):
        given = getattr(args, name, None)
        if given is not None:
            values[name] = given
    if getattr(args, "pageable", False):
        values["pinned"] = False
    if getattr(args, "pinned", False):
        values["pinned"] = True
    duration = args.duration
    if duration is None and args.partitions is None:
        duration = 30.0
    p = Params(scenario=args.scenario, duration_s=duration, partitions=args.partitions, **values)
    problems = [msg for bad, msg in (
        (p.abc_mib <= 0, "--abc-mib must be > 0"),
        (p.h2d_repeat < 1, "--h2d-repeat must be >= 1"),
        (p.compute_s <= 0, "--compute-s must be > 0"),
        (p.synth_threads < 1, "--synth-threads must be >= 1"),
        (p.synth_delay_s < 0, "--synth-delay-s must be >= 0"),
        (p.hogs < 0 or p.hog_mib <= 0, "--hogs must be >= 0 and --hog-mib > 0"),
        (p.queue_depth < 1, "--queue-depth must be >= 1"),
        (p.duration_s is not None and p.duration_s <= 0, "--duration must be > 0"),
        (p.partitions is not None and p.partitions < 1, "--partitions must be >= 1"),
    ) if bad]
    if problems:
        raise ValueError("; ".join(problems))
    return p


def job_of(seq: int, prefix: str = "porep-1000") -> tuple[str, int]:
    """Global partition number -> (job id, partition within the job), 10 partitions a job."""
    return f"{prefix}-{seq // PARTITIONS_PER_JOB}", seq % PARTITIONS_PER_JOB


# ------------------------------------------------------------------ log line formats


def rfc3339_us(t_wall_s: float) -> str:
    """`2026-11-30T09:06:26.553439Z`, as tracing-subscriber prints it."""
    return datetime.fromtimestamp(t_wall_s, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def tracing_line(t_wall_s: float, message: str, *, level: str = "INFO",
                 target: str = "cuzk_core::engine", span: str = "") -> str:
    """A tracing-subscriber Full-format line; `span` is `name{k=v ...}: ` or empty."""
    return f"{rfc3339_us(t_wall_s)} {level:>5} {span}{target}: {message}"


def timeline_line(offset_ms: int, event: str, job_id: str, detail: str) -> str:
    return f"TIMELINE,{offset_ms},{event},{job_id},{detail}"


def lock_acquired_line(pre_lock_cpu_ms: int, mutex_wait_ms: int) -> str:
    """Printed by cuzk right after the per-GPU mutex is taken (groth16_cuda.cu:905)."""
    return f"CUZK_TIMING: pre_lock_cpu_ms={pre_lock_cpu_ms} mutex_wait_ms={mutex_wait_ms}"


def lock_region_lines(h2d_ms: int, compute_ms: int, held_ms: int, total_ms: int) -> list[str]:
    """The in-lock lines printed before unlock. As in the shared trace's stand-in, the H2D time
    is reported as `ntt_kernels` (where pageable copies show up in real cuzk) and the GPU time as
    `gpu_total_ms`/`mutex_held_ms`."""
    msm = compute_ms // 2
    return [
        f"CUZK_NTT_H: d_b_alloc=0ms ntt_kernels={h2d_ms}ms coset_intt_sync=40ms msm_init=1ms "
        f"msm_invoke={msm}ms msm_dtor=1ms total={h2d_ms + 42 + msm}ms",
        f"CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms={h2d_ms + msm}",
        f"CUZK_TIMING: gpu_tid=0 tail_msm_ms=20 gpu_total_ms={compute_ms}",
        f"CUZK_TIMING: mutex_held_ms={held_ms} total_start_fn_ms={total_ms}",
    ]


class CuzkLog:
    """Writes cuzk-style lines to two streams, one line at a time, flushed, thread-safe.

    `out` gets tracing lines (cuzk's stdout), `err` TIMELINE and C++ lines (cuzk's stderr); they
    may be the same object (one file, like `2>&1`). TIMELINE offsets count from `start_engine()`,
    which also writes the `starting cuzk engine` anchor line.
    """

    def __init__(self, out: IO[str], err: IO[str], *, wall: Callable[[], float] = time.time,
                 mono: Callable[[], float] = time.monotonic) -> None:
        self.out, self.err = out, err
        self.wall, self.mono = wall, mono
        self._lock = threading.Lock()
        self._epoch_mono: float | None = None
        self.lines_written = 0

    def _write(self, stream: IO[str], line: str) -> None:
        with self._lock:
            stream.write(line + "\n")
            stream.flush()
            self.lines_written += 1

    def trace(self, message: str, *, level: str = "INFO", target: str = "cuzk_core::engine",
              span: str = "") -> float:
        """Write a tracing line stamped now; returns the stamp (Unix seconds)."""
        t = self.wall()
        self._write(self.out, tracing_line(t, message, level=level, target=target, span=span))
        return t

    def timeline(self, event: str, job_id: str, detail: str) -> None:
        if self._epoch_mono is None:
            raise RuntimeError("TIMELINE line before start_engine()")
        offset = int((self.mono() - self._epoch_mono) * 1000)
        self._write(self.err, timeline_line(offset, event, job_id, detail))

    def cpp(self, line: str) -> None:
        self._write(self.err, line)

    def start_engine(self, gpu: int, workers: int, synth_workers: int) -> float:
        """cuzk's startup lines in its order (engine.rs: the budget and the pinned pool in
        Engine::new; the TIMELINE epoch and its anchor line, the GPU workers, the synthesis
        workers, then the worker -> GPU map lines in start())."""
        self.trace(f"memory budget initialized total_budget_gib={BUDGET_BYTES // GIB}")
        self.trace("CUDA pinned memory pool initialized")
        self._epoch_mono = self.mono()
        t = self.trace("starting cuzk engine pipeline_enabled=true")
        self.trace(f"initializing GPU workers num_gpus=1 gpu_workers_per_device={workers} "
                   f"total_workers={workers} gpus=[{gpu}]")
        in_budget = BUDGET_BYTES // PARTITION_BUDGET_BYTES
        self.trace("starting pipeline: synthesis task + GPU workers (budget-gated) "
                   f"configured_lookahead=1 max_partitions_in_budget={in_budget} "
                   f"effective_lookahead={min(in_budget, 32)} "
                   f"synth_worker_count={synth_workers} num_gpus={workers}")
        for w in range(workers):
            self.trace(f"pipeline GPU worker started worker_id={w} gpu={gpu} sub_id={w}")
        return t

    # --- one partition's lines, in cuzk's order -------------------------------------------
    def synth_start(self, job_id: str, p: int, pinned: bool, abc_mib: int) -> None:
        self.timeline("SYNTH_START", job_id, f"partition={p}")
        if not pinned:
            self.trace("pinned pool checkout FAILED — falling back to unpinned "
                       f"num_constraints={abc_mib * MIB // 32} pool_free=0 pool_total_gib=0",
                       level="WARN", target="cuzk_core::pipeline",
                       span=f'synthesize_partition{{job_id="{job_id}" partition={p}}}: ')

    def synth_end(self, job_id: str, p: int, synth_ms: int, pinned: bool) -> None:
        self.trace(f"partition synthesis complete partition={p} synth_ms={synth_ms} "
                   f"is_pinned={'true' if pinned else 'false'}",
                   target="cuzk_core::pipeline",
                   span=f'synthesize_partition{{job_id="{job_id}" partition={p}}}: ')
        self.timeline("SYNTH_END", job_id, f"partition={p},synth_ms={synth_ms}")

    def gpu_queue(self, job_id: str, p: int) -> None:
        """GPU_QUEUE, written once the partition is in the GPU queue: cuzk writes it as it adds
        the partition to a queue that never blocks (engine.rs:1778-1779); written before this
        generator's blocking put, a partition still waiting to go in read as queued."""
        self.timeline("GPU_QUEUE", job_id, f"partition={p}")

    def gpu_pickup(self, job_id: str, worker: int, p: int,
                   hot: tuple[int, int, int, int] | None = None, gpu: int = 0) -> None:
        """GPU_PICKUP, then (with `hot` = status, fail check, mark busy and total ms) cuzk's
        `GPU_TIMING hot_path` line in the worker's span, then GPU_START."""
        self.timeline("GPU_PICKUP", job_id, f"worker={worker},partition={p}")
        if hot is not None:
            status_ms, fail_ms, busy_ms, total_ms = hot
            self.trace(f"GPU_TIMING hot_path pre-prove overhead worker_id={worker} "
                       f"partition=Some({p}) status_ms={status_ms} fail_check_ms={fail_ms} "
                       f"mark_busy_ms={busy_ms} total_overhead_ms={total_ms}",
                       span=f"gpu_worker{{worker_id={worker} gpu={gpu} job_id={job_id} "
                            f"proof_kind=porep-c2 batch_size=1 partition=Some({p})}}: ")
        self.timeline("GPU_START", job_id, f"worker={worker},partition={p}")

    def gpu_done(self, job_id: str, worker: int, p: int, prove_start_ms: int) -> None:
        """After unlock: the line that names the lock holder, then TIMELINE GPU_END."""
        self.trace(f"GPU_TIMING spawn_blocking prove_start worker_id={worker} "
                   f"partition=Some({p}) spawn_to_enter_ms=0 prove_start_ms={prove_start_ms}")
        self.timeline("GPU_END", job_id, f"worker={worker},partition={p},gpu_ms={prove_start_ms}")


# ------------------------------------------------------------------ the status tracker


def us_stats(values: list[float]) -> dict[str, float | int | None]:
    """n, mean, p50, p99, max of a list of microsecond figures (None where empty)."""
    if not values:
        return {"n": 0, "mean": None, "p50": None, "p99": None, "max": None}
    ordered = sorted(values)

    def q(f: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(f * len(ordered)))], 2)

    return {"n": len(ordered), "mean": round(sum(ordered) / len(ordered), 2), "p50": q(0.5),
            "p99": q(0.99), "max": round(ordered[-1], 2)}


class PipelineTracker:
    """The load generator's stand-in for cuzk's status tracker: the pipeline's state behind one
    lock, taken by the synthesis threads and the GPU workers on their hot path and by every
    status snapshot, each wait and each snapshot build timed in µs (`stats()`)."""

    #: Finished jobs stay in the snapshot this long (cuzk: 30 s).
    KEEP_S = 30.0

    def __init__(self, gpu: int, workers: int, synth_slots: int,
                 mono: Callable[[], float] = time.monotonic) -> None:
        self.lock = threading.Lock()
        self.gpu, self.slots, self.mono = gpu, synth_slots, mono
        self.t0 = mono()
        self._jobs: dict[str, dict[str, Any]] = {}
        self._workers: dict[int, dict[str, Any]] = {
            w: {"state": "idle", "job": None, "p": None, "since": 0.0} for w in range(workers)}
        self.synth_active = 0
        self.completed = 0
        self.failed = 0
        #: Waits (µs) of the hot path for the lock: GPU workers and synthesis threads.
        self.hot_wait_us: list[float] = []
        #: Per pickup, the whole pre-prove overhead (µs): three lock sections, as cuzk's.
        self.pickup_overhead_us: list[float] = []
        self.snapshot_wait_us: list[float] = []
        self.snapshot_build_us: list[float] = []

    def _locked(self, waits: list[float]) -> float:
        """Take the lock, note how long that took (µs); the caller releases it."""
        t = time.perf_counter()
        self.lock.acquire()
        waited = (time.perf_counter() - t) * 1e6
        waits.append(waited)
        return waited

    def _part(self, job: str, p: int) -> dict[str, Any]:
        entry = self._jobs.get(job)
        if entry is None:
            entry = self._jobs[job] = {"started": self.mono(), "finished": None, "parts": [
                {"state": "pending", "synth": None, "synth_end": None, "gpu": None,
                 "gpu_end": None} for _ in range(PARTITIONS_PER_JOB)]}
        part: dict[str, Any] = entry["parts"][p]
        return part

    def synth_start(self, job: str, p: int) -> None:
        self._locked(self.hot_wait_us)
        try:
            part = self._part(job, p)
            part["state"], part["synth"] = "synthesizing", self.mono()
            self.synth_active += 1
        finally:
            self.lock.release()

    def synth_end(self, job: str, p: int) -> None:
        self._locked(self.hot_wait_us)
        try:
            part = self._part(job, p)
            part["state"], part["synth_end"] = "synth_done", self.mono()
            self.synth_active -= 1
        finally:
            self.lock.release()

    def synth_failed(self, job: str, p: int) -> None:
        """status.rs `partition_failed`: the partition is failed and `active` keeps its +1."""
        self._locked(self.hot_wait_us)
        try:
            self._part(job, p)["state"] = "failed"
            self.failed += 1
        finally:
            self.lock.release()

    def pickup(self, worker: int, job: str, p: int) -> tuple[int, int, int, int]:
        """cuzk's pre-prove hot path: status update, fail check, mark busy, each under the
        tracker lock. Returns their ms and the total (as the `GPU_TIMING hot_path` line)."""
        t0 = time.perf_counter()
        marks = []
        for step in range(3):
            t = time.perf_counter()
            self._locked(self.hot_wait_us)
            try:
                if step == 0:
                    part = self._part(job, p)
                    part["state"], part["gpu"] = "gpu", self.mono()
                elif step == 1:
                    _ = self._jobs[job]["finished"]  # "has the job already failed?"
                else:
                    self._workers[worker] = {"state": "proving", "job": job, "p": p,
                                             "since": self.mono()}
            finally:
                self.lock.release()
            marks.append(int((time.perf_counter() - t) * 1000))
        total = time.perf_counter() - t0
        self.pickup_overhead_us.append(total * 1e6)
        return marks[0], marks[1], marks[2], int(total * 1000)

    def finish(self, worker: int, job: str, p: int) -> None:
        self._locked(self.hot_wait_us)
        try:
            part = self._part(job, p)
            part["state"], part["gpu_end"] = "done", self.mono()
            self._workers[worker] = {"state": "idle", "job": None, "p": None, "since": 0.0}
            entry = self._jobs[job]
            if all(x["state"] == "done" for x in entry["parts"]):
                entry["finished"] = self.mono()
                self.completed += 1
        finally:
            self.lock.release()

    def document(self) -> dict[str, Any]:
        """A `GET /status` snapshot in cuzk's JSON, built under the lock (timed)."""
        self._locked(self.snapshot_wait_us)
        t = time.perf_counter()
        try:
            now = self.mono()
            for job in [j for j, e in self._jobs.items()
                        if e["finished"] is not None and now - e["finished"] > self.KEEP_S]:
                del self._jobs[job]

            def ms(a: float | None, b: float | None) -> int | None:
                return None if a is None else int(((b if b is not None else now) - a) * 1000)

            in_flight = sum(1 for e in self._jobs.values() for x in e["parts"]
                            if x["state"] in ("synthesizing", "synth_done", "gpu"))
            used = min(BUDGET_BYTES, in_flight * PARTITION_BUDGET_BYTES)
            doc = {
                "uptime_secs": round(now - self.t0, 3),
                "memory": {"total_bytes": BUDGET_BYTES, "used_bytes": used,
                           "available_bytes": BUDGET_BYTES - used},
                # status.rs: the budget over the smallest partition, never the threads.
                "synthesis": {"max_concurrent": BUDGET_BYTES // SMALLEST_PARTITION_BYTES,
                              "active": self.synth_active},
                "pipelines": [{
                    "job_id": job, "proof_kind": "porep-c2",
                    "started_secs_ago": round(now - e["started"], 3),
                    "total_partitions": len(e["parts"]),
                    "partitions_done": sum(1 for x in e["parts"] if x["state"] == "done"),
                    "partitions": [{"index": i, "state": x["state"],
                                    "synth_ms": ms(x["synth"], x["synth_end"]),
                                    "gpu_ms": ms(x["gpu"], x["gpu_end"])}
                                   for i, x in enumerate(e["parts"])],
                } for job, e in self._jobs.items()],
                "gpu_workers": [{
                    "worker_id": w, "gpu_ordinal": self.gpu, "state": st["state"],
                    "current_job": st["job"], "current_partition": st["p"],
                    "busy_secs": (round(now - st["since"], 3) if st["state"] == "proving"
                                  else None),
                } for w, st in sorted(self._workers.items())],
                "allocations": {"srs": [], "pce": []},
                "counters": {"total_completed": self.completed, "total_failed": 0,
                             "completed_by_kind": {"porep-c2": self.completed},
                             "failed_by_kind": {}, "queue_depth": 0},
                "buffers": {"synth_in_flight": self.synth_active - self.failed,
                            "provers_in_flight": sum(1 for w in self._workers.values()
                                                     if w["state"] == "proving"),
                            "aux_in_flight": 0, "shells_in_flight": 0, "pending_handles": 0},
            }
        finally:
            self.snapshot_build_us.append((time.perf_counter() - t) * 1e6)
            self.lock.release()
        return doc

    def stats(self) -> dict[str, Any]:
        """The cost figures for the truth file (`status`)."""
        return {"hot_path_lock_wait_us": us_stats(self.hot_wait_us),
                "pickup_overhead_us": us_stats(self.pickup_overhead_us),
                "snapshots": len(self.snapshot_build_us),
                "snapshot_build_us": us_stats(self.snapshot_build_us),
                "snapshot_lock_wait_us": us_stats(self.snapshot_wait_us)}


def gapwatch_importable() -> None:
    """Put this checkout's gapwatch on the import path (run as `python3 bench/...`, from the
    Python that runs `gapwatch record` beside it: bench/gpu_e2e.py checks it can)."""
    root = str(Path(__file__).resolve().parent.parent)
    if root not in sys.path:
        sys.path.insert(0, root)


def cuzk_synth_worker_count(total_bytes: int, max_parallel_synthesis: int) -> int:
    """engine.rs: `max(2, min(total_bytes / 14 GiB, max_parallel_synthesis))`, from
    gapwatch's one home of cuzk's facts (`gapwatch.cuzk.pipeline.synth_worker_count`)."""
    gapwatch_importable()
    from gapwatch.cuzk.pipeline import synth_worker_count

    return synth_worker_count(total_bytes, max_parallel_synthesis)


def start_status_server(listen: str, tracker: PipelineTracker) -> Any:
    """Serve the tracker's snapshots at `GET /status`, as cuzk's own server does."""
    gapwatch_importable()
    from gapwatch.sources.cuzk_status_server import CuzkStatusServer

    host, _, port = listen.rpartition(":")
    return CuzkStatusServer(tracker.document, host=host or "127.0.0.1", port=int(port)).start()


# ------------------------------------------------------------------ ground truth


@dataclass
class Interval:
    """One partition's GPU compute interval (Unix seconds) and what led to it."""

    worker: int
    partition: int
    job_id: str
    job_partition: int
    gpu: int
    start: float
    end: float
    h2d_ms: float
    pinned: bool
    mutex_wait_ms: float
    synth_ms: float
    #: The partition's host-to-device copy (Unix seconds) and its size: the truth of what PCIe
    #: did before this compute, from which each hole's expected kind is judged.
    copy_start: float | None = None
    copy_end: float | None = None
    copy_bytes: int | None = None


def throughput_pps(intervals: list[Interval]) -> float | None:
    """Partitions per second, from compute end to compute end: (n - 1) / (last end - first end).

    A continuous measure (no rounding to whole partitions in a fixed window), so that a ~1 %
    slowdown is visible in a 20 s run. None with fewer than two partitions.
    """
    ends = sorted(i.end for i in intervals)
    if len(ends) < 2 or ends[-1] <= ends[0]:
        return None
    return (len(ends) - 1) / (ends[-1] - ends[0])


def busy_and_holes(intervals: list[Interval], min_gap_s: float = MIN_GAP_S
                   ) -> tuple[float | None, list[float]]:
    """Busy share of first start..last end, and the holes >= min_gap_s between merged intervals."""
    spans = sorted((i.start, i.end) for i in intervals)
    if not spans:
        return None, []
    busy, holes = 0.0, []
    cur_s, cur_e = spans[0]
    for s, e in spans[1:]:
        if s > cur_e:
            busy += cur_e - cur_s
            if s - cur_e >= min_gap_s:
                holes.append(s - cur_e)
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    busy += cur_e - cur_s
    span = cur_e - spans[0][0]
    return (busy / span if span > 0 else None), holes


def build_truth(params: Params, intervals: list[Interval], *, go_wall_s: float | None,
                end_wall_s: float | None, stopped_by: str, errors: list[str],
                extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The truth document: the shared `pageable.truth.json` layout plus run facts."""
    ivs = sorted(intervals, key=lambda i: i.start)
    busy, holes = busy_and_holes(ivs)
    h2d = [i.h2d_ms for i in ivs]
    h2d_med = median(h2d) if h2d else None
    doc: dict[str, Any] = {
        "mode": "pinned" if params.pinned else "pageable",
        "scenario": params.scenario,
        "hogs": params.hogs,
        "gpu": params.gpu,
        "params": asdict(params),
        "intervals": [asdict(i) for i in ivs],
        "partitions_completed": len(ivs),
        "throughput_pps": throughput_pps(ivs),
        "go_wall_s": go_wall_s,
        "end_wall_s": end_wall_s,
        "wall_s": (end_wall_s - go_wall_s) if go_wall_s and end_wall_s else None,
        "busy_fraction": busy,
        "truth_gaps": len(holes),
        "median_gap_s": median(holes) if holes else None,
        "compute_ms_median": median([(i.end - i.start) * 1000 for i in ivs]) if ivs else None,
        "h2d_ms_median": h2d_med,
        "h2d_bytes_per_partition": params.h2d_bytes_per_partition,
        "h2d_gb_per_s_median": (params.h2d_bytes_per_partition / (h2d_med / 1000) / 1e9
                                if h2d_med else None),
        "stopped_by": stopped_by,
        "errors": errors,
    }
    if extra:
        doc.update(extra)
    return doc


def summary_line(doc: dict[str, Any]) -> str:
    def f(v: Any, fmt: str, unit: str = "") -> str:
        return "n/a" if v is None else format(v, fmt) + unit

    return (f"gpu_loadgen: scenario={doc['scenario']} partitions={doc['partitions_completed']} "
            f"throughput={f(doc['throughput_pps'], '.3f')}/s busy={f(doc['busy_fraction'], '.0%')} "
            f"gaps>={MIN_GAP_S}s={doc['truth_gaps']} "
            f"median_gap={f(doc['median_gap_s'], '.2f', 's')} "
            f"compute={f(doc['compute_ms_median'], '.0f', 'ms')} "
            f"h2d={f(doc['h2d_ms_median'], '.0f', 'ms')} "
            f"({f(doc['h2d_gb_per_s_median'], '.1f', ' GB/s')}) "
            f"stopped_by={doc['stopped_by']} errors={len(doc['errors'])}")


def write_json_atomic(path: str | Path, doc: dict[str, Any]) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, path)


# ------------------------------------------------------------------ host memory hogs


def hog_main(stop: Any, mib: int, parent_pid: int) -> None:
    """One process copying `mib` MiB back and forth until told to stop (or orphaned)."""
    n = mib * MIB
    src = bytearray(b"\x5a") * n  # repetition of one byte is a memset: every page touched
    dst = bytearray(b"\x00") * n
    smv, dmv = memoryview(src), memoryview(dst)
    while not stop.is_set() and os.getppid() == parent_pid:
        for _ in range(8):
            dmv[:] = smv  # memcpy of n bytes: reads and writes host memory at full speed
            smv[:] = dmv


class Hogs:
    def __init__(self, count: int, mib: int) -> None:
        # spawn, not fork: the parent may already hold a CUDA context.
        self._ctx = mp.get_context("spawn")
        self._stop = self._ctx.Event()
        self._procs = [self._ctx.Process(target=hog_main, args=(self._stop, mib, os.getpid()),
                                         daemon=True, name=f"hog{i}") for i in range(count)]

    def start(self) -> None:
        for p in self._procs:
            p.start()

    def alive(self) -> int:
        return sum(1 for p in self._procs if p.is_alive())

    def stop(self) -> None:
        self._stop.set()
        deadline = time.monotonic() + 5
        for p in self._procs:
            p.join(max(0.1, deadline - time.monotonic()))
        for p in self._procs:
            if p.is_alive():
                p.terminate()
                p.join(2)
            if p.is_alive():
                p.kill()
                p.join(1)


# ------------------------------------------------------------------ the GPU run


class Run:
    """State shared by the threads of one GPU run."""

    def __init__(self, params: Params, log: CuzkLog, console: IO[str]) -> None:
        self.p = params
        self.log = log
        self.console = console
        self.stop = threading.Event()
        self.stopped_by = "duration" if params.duration_s is not None else "partitions"
        self.errors: list[str] = []
        self.intervals: list[Interval] = []
        self.lock = threading.Lock()  # the narrow compute mutex
        self._mu = threading.Lock()   # guards intervals, errors, seq
        self.ready: queue.Queue[tuple[Any, ...]] = queue.Queue(maxsize=params.queue_depth)
        self.free_slots: queue.Queue[int] = queue.Queue()
        self._put_lock = threading.Lock()  # synthesis threads putting into `ready`
        self._seq = 0
        self.tracker = PipelineTracker(params.gpu, 2, params.synth_workers)

    def say(self, msg: str) -> None:
        print(f"gpu_loadgen: {msg}", file=self.console, flush=True)

    def next_seq(self) -> int:
        with self._mu:
            s = self._seq
            self._seq += 1
            return s

    def fail(self, where: str) -> None:
        tb = traceback.format_exc()
        with self._mu:
            self.errors.append(f"{where}: {tb}")
        self.say(f"ERROR in {where}:\n{tb}")
        self.stopped_by = "error"
        self.stop.set()

    def queue_for_gpu(self, item: tuple[Any, ...], job: str, jp: int) -> bool:
        """Put a synthesised partition in the GPU queue, writing GPU_QUEUE as it goes in (as
        cuzk does, engine.rs:1778-1779, into a queue that never blocks): never while it waits
        for room (it read as queued, and at the run's end as never picked up), never after a
        worker could take it (GPU_PICKUP before GPU_QUEUE). Only synthesis threads put, one at
        a time under `_put_lock`, so room seen is room kept until the put. False: stopped."""
        while not self.stop.is_set():
            with self._put_lock:
                if not self.ready.full():
                    self.log.gpu_queue(job, jp)
                    self.ready.put_nowait(item)
                    return True
            self.stop.wait(0.005)
        return False

    def wait_get(self, q: queue.Queue[Any]) -> Any | None:
        while not self.stop.is_set():
            try:
                return q.get(timeout=0.1)
            except queue.Empty:
                continue
        return None

    def record(self, iv: Interval) -> None:
        with self._mu:
            self.intervals.append(iv)
            done = len(self.intervals)
        if self.p.partitions is not None and done >= self.p.partitions:
            self.stopped_by = "partitions"
            self.stop.set()


class BackendError(Exception):
    """The backend cannot run here (no torch, no CUDA, wrong --gpu): the message says why."""


class TorchBackend:
    """The real load: torch tensors on one CUDA device, pinned or pageable host buffers."""

    def __init__(self, p: Params) -> None:
        try:
            import torch
        except ImportError as exc:
            raise BackendError(f"torch is not importable ({exc}); this needs torch with CUDA "
                               "(or --fake for a no-GPU run of the plumbing)") from None
        if not torch.cuda.is_available():
            raise BackendError("torch.cuda.is_available() is False: no usable GPU (driver? "
                               "CUDA_VISIBLE_DEVICES?)")
        if p.gpu >= torch.cuda.device_count():
            raise BackendError(f"--gpu {p.gpu} but torch sees {torch.cuda.device_count()} GPU(s)")
        torch.set_num_threads(max(1, p.torch_threads))
        self.torch, self.p = torch, p
        self.device = torch.device("cuda", p.gpu)
        torch.cuda.set_device(self.device)
        self.name = torch.cuda.get_device_name(self.device)
        self.version = f"torch {torch.__version__}"

    def pinned_abc(self) -> list[Any]:
        t = self.torch
        return [t.empty(self.p.abc_bytes, dtype=t.uint8, pin_memory=True) for _ in range(3)]

    def pageable_abc(self) -> list[Any]:
        # Fresh pageable memory each partition: torch returns large CPU blocks to the OS, so
        # every partition page-faults its buffers in again, as cuzk's unpinned path does.
        t = self.torch
        return [t.empty(self.p.abc_bytes, dtype=t.uint8) for _ in range(3)]

    def fill(self, bufs: list[Any], value: int) -> None:
        for b in bufs:
            b.fill_(value)  # writes every byte: synthesis really touches its pages

    def calibrate(self) -> tuple[int, float]:
        """Matmul iterations that take about `compute_s` (after a short clock warm-up)."""
        t, dev, n = self.torch, self.device, self.p.matmul_n
        x = t.randn(n, n, device=dev, dtype=t.bfloat16)
        w = t.randn(n, n, device=dev, dtype=t.bfloat16)
        y = t.empty(n, n, device=dev, dtype=t.bfloat16)
        warm_until = time.perf_counter() + 0.5
        while time.perf_counter() < warm_until:  # let the clocks ramp up
            for _ in range(20):
                t.mm(x, w, out=y)
            t.cuda.synchronize(dev)
        k = 100
        t0 = time.perf_counter()
        for _ in range(k):
            t.mm(x, w, out=y)
        t.cuda.synchronize(dev)
        per = (time.perf_counter() - t0) / k
        return max(1, round(self.p.compute_s / per)), per

    def worker(self) -> TorchWorker:
        return TorchWorker(self)


class TorchWorker:
    """One GPU worker's own stream, device buffer and matmul operands."""

    def __init__(self, be: TorchBackend) -> None:
        t, dev, n = be.torch, be.device, be.p.matmul_n
        self.t, self.dev = t, dev
        self.stream = t.cuda.Stream(device=dev)
        self.dev_buf = t.empty(be.p.abc_bytes, dtype=t.uint8, device=dev)
        self.x = t.randn(n, n, device=dev, dtype=t.bfloat16)
        self.w = t.randn(n, n, device=dev, dtype=t.bfloat16)
        self.y = t.empty(n, n, device=dev, dtype=t.bfloat16)
        with t.cuda.stream(self.stream):
            t.mm(self.x, self.w, out=self.y)  # cuBLAS handle and workspace now, not in partition 1
        t.cuda.synchronize(dev)

    def bind(self) -> None:
        """Called on the worker's own thread: the current CUDA device is per thread."""
        self.t.cuda.set_device(self.dev)

    def copy(self, bufs: list[Any], repeat: int) -> None:
        with self.t.cuda.stream(self.stream):
            for _ in range(repeat):
                for b in bufs:
                    # Pinned: an async DMA at line rate. Pageable: the driver stages it through
                    # a bounce buffer, and the call returns only when the copy is done.
                    self.dev_buf.copy_(b, non_blocking=True)
        self.stream.synchronize()

    def compute(self, iters: int) -> tuple[float, float]:
        """When the kernels really ran: CUDA events around them time the span on the GPU, and
        the end is the wall time after a stream sync. A launch time would be wrong: on the H200
        a kernel launched while another thread's pageable copy was staging waited ~0.5 s to
        start (the SMs read 0 % meanwhile), and that wait is a gap, not compute."""
        t = self.t
        begin, done = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
        with t.cuda.stream(self.stream):
            begin.record(self.stream)
            for _ in range(iters):
                t.mm(self.x, self.w, out=self.y)
            done.record(self.stream)
        self.stream.synchronize()
        end = time.time()
        return end - begin.elapsed_time(done) / 1000.0, end


class FakeBackend:
    """No GPU: copies and kernels are sleeps of the time they would take. Exercises every thread,
    lock, queue, log line and the truth file on any machine (tests, `--fake`)."""

    PINNED_BYTES_PER_S = 50e9
    PAGEABLE_BYTES_PER_S = 3e9
    PER_ITER_S = 0.001

    def __init__(self, p: Params) -> None:
        self.p = p
        self.name = "fake (no GPU)"
        self.version = "fake"

    def pinned_abc(self) -> list[Any]:
        return [object(), object(), object()]

    def pageable_abc(self) -> list[Any]:
        return [object(), object(), object()]

    def fill(self, bufs: list[Any], value: int) -> None:
        pass

    def calibrate(self) -> tuple[int, float]:
        return max(1, round(self.p.compute_s / self.PER_ITER_S)), self.PER_ITER_S

    def worker(self) -> FakeWorker:
        return FakeWorker(self)


class FakeWorker:
    def __init__(self, be: FakeBackend) -> None:
        self.p = be.p
        self.rate = be.PINNED_BYTES_PER_S if be.p.pinned else be.PAGEABLE_BYTES_PER_S
        self.per = be.PER_ITER_S

    def bind(self) -> None:
        pass

    def copy(self, bufs: list[Any], repeat: int) -> None:
        time.sleep(len(bufs) * self.p.abc_bytes * repeat / self.rate)

    def compute(self, iters: int) -> tuple[float, float]:
        start = time.time()
        time.sleep(iters * self.per)
        return start, time.time()


def _synth_loop(run: Run, be: Any, slots: list[list[Any]], tid: int) -> None:
    p = run.p
    rng = random.Random(p.seed * 1000 + tid)
    value = 0
    started: tuple[str, int] | None = None
    try:
        while not run.stop.is_set():
            slot: int | None = None
            if p.pinned:
                slot = run.wait_get(run.free_slots)
                if slot is None:
                    return
            seq = run.next_seq()
            job, jp = job_of(seq, p.job_prefix)
            t0 = time.perf_counter()
            run.log.synth_start(job, jp, p.pinned, p.abc_mib)
            run.tracker.synth_start(job, jp)
            started = (job, jp)
            value = (value + 1) % 251
            bufs = slots[slot] if slot is not None else be.pageable_abc()
            be.fill(bufs, value)
            if p.synth_delay_s > 0 and run.stop.wait(p.synth_delay_s * rng.uniform(0.9, 1.1)):
                return
            synth_ms = int((time.perf_counter() - t0) * 1000)
            run.tracker.synth_end(job, jp)
            started = None
            run.log.synth_end(job, jp, synth_ms, p.pinned)
            if not run.queue_for_gpu((seq, job, jp, bufs, slot, synth_ms), job, jp):
                return
            del bufs
    except Exception:  # noqa: BLE001 - reported loudly, stops the run
        if started is not None:
            run.tracker.synth_failed(*started)  # as cuzk's tracker: failed, active kept
        run.fail(f"synthesis thread {tid}")


def _worker_loop(run: Run, gw: Any, wid: int, iters: int) -> None:
    p = run.p
    try:
        gw.bind()
        while not run.stop.is_set():
            item = run.wait_get(run.ready)
            if item is None:
                return
            seq, job, jp, bufs, slot, synth_ms = item
            hot = run.tracker.pickup(wid, job, jp)
            run.log.gpu_pickup(job, wid, jp, hot, p.gpu)
            t_pick = time.perf_counter()
            copy_start = time.time()
            gw.copy(bufs, p.h2d_repeat)
            copy_end = time.time()
            h2d_s = time.perf_counter() - t_pick
            copy_bytes = p.h2d_bytes_per_partition
            if slot is not None:
                run.free_slots.put(slot)  # cuzk checks the buffers back in after the copy
            del bufs, item
            t_ask = time.perf_counter()
            with run.lock:
                t_got = time.perf_counter()
                run.log.cpp(lock_acquired_line(int(h2d_s * 1000), int((t_got - t_ask) * 1000)))
                start, end = gw.compute(iters)
                held_ms = int((time.perf_counter() - t_got) * 1000)
                for line in lock_region_lines(int(h2d_s * 1000), int((end - start) * 1000),
                                              held_ms, int((time.perf_counter() - t_pick) * 1000)):
                    run.log.cpp(line)
            run.log.gpu_done(job, wid, jp, int((time.perf_counter() - t_pick) * 1000))
            run.tracker.finish(wid, job, jp)
            run.record(Interval(wid, seq, job, jp, p.gpu, start, end, round(h2d_s * 1000, 1),
                                p.pinned, round((t_got - t_ask) * 1000, 1), synth_ms,
                                copy_start, copy_end, copy_bytes))
    except Exception:  # noqa: BLE001
        run.fail(f"GPU worker {wid}")


def _wait_for_file(path: str, run: Run, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path):
        if run.stop.is_set() or time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _mem_available_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def run_load(p: Params, log: CuzkLog, console: IO[str], args: argparse.Namespace) -> int:
    """The whole run: setup, optional ready/go handshake, partitions, clean stop, truth."""
    run = Run(p, log, console)

    def on_signal(signum: int, frame: Any) -> None:
        run.stopped_by = "signal"
        run.stop.set()

    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGTERM, signal.SIGINT):
            signal.signal(s, on_signal)
    try:
        be: Any = FakeBackend(p) if args.fake else TorchBackend(p)
    except BackendError as exc:
        run.say(f"ERROR: {exc}")
        return 2
    if not p.pinned:
        peak = (p.synth_workers + p.queue_depth + 2) * 3 * p.abc_bytes
        avail = _mem_available_bytes()
        if avail is not None and peak + p.hogs * 2 * p.hog_mib * MIB > 0.85 * avail:
            run.say(f"WARNING: peak host memory ~{peak / 2**30:.0f} GiB (+ hogs) vs "
                    f"{avail / 2**30:.0f} GiB available: lower --abc-mib or --synth-threads")
    run.say(f"setup: {be.name}, scenario {p.scenario}, "
            f"{'pinned pool' if p.pinned else 'pageable'} a/b/c 3 x {p.abc_mib} MiB x "
            f"{p.h2d_repeat}, {p.synth_workers} synthesis threads, {p.hogs} hogs")
    slots: list[list[Any]] = []
    hogs = Hogs(p.hogs, p.hog_mib)
    threads: list[threading.Thread] = []
    server: Any = None
    go_wall: float | None = None
    end_wall: float | None = None
    iters: int | None = None
    try:
        if p.pinned:
            t0 = time.perf_counter()
            for i in range(p.slots):
                slots.append(be.pinned_abc())
                run.free_slots.put(i)
            run.say(f"pinned pool: {p.slots} slots x 3 x {p.abc_mib} MiB in "
                    f"{time.perf_counter() - t0:.1f} s")
        iters, per = be.calibrate()
        n_iters = iters
        # Workers allocate and warm up now: GPU work after "go" is partitions only, so that
        # nothing but the truth intervals keeps the GPU busy while gapwatch watches.
        workers = [be.worker() for _ in range(2)]
        run.say(f"matmul {p.matmul_n}^3 bf16: {per * 1000:.2f} ms each, {iters} per partition "
                f"(~{iters * per:.2f} s)")
        if p.hogs:
            hogs.start()
            time.sleep(1.0)  # let them allocate and reach full speed before the clock starts
            run.say(f"{hogs.alive()}/{p.hogs} host-memory hogs running ({p.hog_mib} MiB each)")
        if args.status_listen:
            server = start_status_server(args.status_listen, run.tracker)
            run.say(f"status: {server.url} (like cuzk's [daemon] status_listen)")
        if args.ready_file:
            Path(args.ready_file).write_text(f"{os.getpid()}\n")
        if args.go_file:
            run.say(f"waiting for {args.go_file}")
            if not _wait_for_file(args.go_file, run, args.go_timeout):
                if run.stop.is_set():
                    run.say("stopped before go")
                    return 0
                run.say(f"ERROR: {args.go_file} did not appear within {args.go_timeout:g} s")
                return 3
        go_wall = log.start_engine(p.gpu, 2, p.synth_workers)
        for i in range(2):
            threads.append(threading.Thread(target=_worker_loop, name=f"gpu-worker-{i}",
                                            args=(run, workers[i], i, n_iters), daemon=True))
        for i in range(p.synth_workers):
            threads.append(threading.Thread(target=_synth_loop, name=f"synth-{i}",
                                            args=(run, be, slots, i), daemon=True))
        for t in threads:
            t.start()
        deadline = time.monotonic() + (p.duration_s if p.duration_s is not None else 1e9)
        warned = False
        while not run.stop.is_set():
            if run.stop.wait(max(0.0, min(0.2, deadline - time.monotonic()))):
                break
            if time.monotonic() >= deadline:
                run.stop.set()
            elif p.hogs and hogs.alive() < p.hogs and not warned:
                warned = True
                run.say(f"WARNING: only {hogs.alive()}/{p.hogs} hogs alive")
        # Workers finish the partition in hand (at most one copy and one compute) and exit.
        for t in threads:
            t.join(timeout=60)
        stuck = [t.name for t in threads if t.is_alive()]
        if stuck:
            run.errors.append(f"threads did not stop within 60 s: {stuck}")
            run.say(f"ERROR: threads did not stop: {stuck}")
        end_wall = time.time()
    except Exception:  # noqa: BLE001
        run.fail("setup")
    finally:
        hogs.stop()
        run.stop.set()
        if server is not None:
            server.stop()
    extra = {"device_name": be.name, "backend": be.version, "matmul_iters": iters,
             "status": {**run.tracker.stats(), "listen": args.status_listen,
                        "requests": server.requests if server is not None else 0}}
    doc = build_truth(p, run.intervals, go_wall_s=go_wall, end_wall_s=end_wall,
                      stopped_by=run.stopped_by, errors=run.errors, extra=extra)
    if args.truth:
        write_json_atomic(args.truth, doc)
    run.say(summary_line(doc)[len("gpu_loadgen: "):])
    return 1 if run.errors else 0


# ------------------------------------------------------------------ command line


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default="chained", help=f"preset: {', '.join(SCENARIOS)}")
    ap.add_argument("--duration", type=float, default=None, metavar="S",
                    help="run partitions for S seconds after go (default 30 if no --partitions)")
    ap.add_argument("--partitions", type=int, default=None, help="stop after N partitions")
    g = ap.add_argument_group("workload (override the scenario preset)")
    g.add_argument("--pinned", action="store_true", default=None, help="a/b/c in a pinned pool")
    g.add_argument("--pageable", action="store_true", default=None,
                   help="a/b/c in fresh pageable memory each partition")
    g.add_argument("--abc-mib", type=int, default=None, help="size of each of a, b, c (MiB)")
    g.add_argument("--h2d-repeat", type=int, default=None,
                   help="copies of a/b/c per partition (transfer-bound)")
    g.add_argument("--compute-s", type=float, default=None, help="matmul seconds per partition")
    g.add_argument("--synth-threads", type=int, default=None, metavar="N",
                   help="cuzk's [pipeline] max_parallel_synthesis: runs (and logs as "
                        "synth_worker_count) what cuzk would, max(2, min(budget / 14 GiB, N))")
    g.add_argument("--synth-delay-s", type=float, default=None,
                   help="extra synthesis seconds per partition")
    g.add_argument("--hogs", type=int, default=None, help="host memory bandwidth hog processes")
    g.add_argument("--hog-mib", type=int, default=None, help="buffer size of each hog (MiB)")
    g.add_argument("--queue-depth", type=int, default=None)
    g.add_argument("--pool-slots", type=int, default=None, help="pinned slots (0: threads + 2)")
    g.add_argument("--gpu", type=int, default=None, help="CUDA/NVML index (PCI bus order)")
    g.add_argument("--matmul-n", type=int, default=None)
    g.add_argument("--torch-threads", type=int, default=None, help="torch CPU threads")
    g.add_argument("--seed", type=int, default=None)
    o = ap.add_argument_group("output and control")
    o.add_argument("--stdout-log", default=None, metavar="PATH",
                   help="tracing lines here instead of stdout")
    o.add_argument("--stderr-log", default=None, metavar="PATH",
                   help="TIMELINE/CUZK lines here instead of stderr (same path as "
                        "--stdout-log: one file, like 2>&1)")
    o.add_argument("--truth", default=None, metavar="PATH", help="write ground truth JSON")
    o.add_argument("--ready-file", default=None, metavar="PATH",
                   help="create PATH when setup (pool, calibration, hogs) is done")
    o.add_argument("--go-file", default=None, metavar="PATH",
                   help="start partitions only once PATH exists")
    o.add_argument("--go-timeout", type=float, default=300.0, metavar="S")
    o.add_argument("--status-listen", default=None, metavar="HOST:PORT",
                   help="serve the pipeline's state at GET /status as cuzk does (port 0: any)")
    o.add_argument("--fake", action="store_true",
                   help="no GPU, no torch: copies and kernels are sleeps (tests the plumbing)")
    o.add_argument("--dry-run", action="store_true",
                   help="no GPU: print the resolved parameters and one partition's log lines")
    return ap


def _dry_run(p: Params) -> int:
    print(json.dumps(asdict(p), indent=1))
    clock = iter(x * 0.05 for x in range(10_000))
    log = CuzkLog(sys.stdout, sys.stdout, wall=lambda: 1_796_000_000.0 + next(clock),
                  mono=lambda: 0.0)
    log.start_engine(p.gpu, 2, p.synth_workers)
    job, jp = job_of(0, p.job_prefix)
    log.synth_start(job, jp, p.pinned, p.abc_mib)
    log.synth_end(job, jp, 812, p.pinned)
    log.gpu_queue(job, jp)
    log.gpu_pickup(job, 0, jp)
    log.cpp(lock_acquired_line(30, 0))
    for line in lock_region_lines(30, 900, 901, 935):
        log.cpp(line)
    log.gpu_done(job, 0, jp, 935)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        p = resolve_params(args)
    except ValueError as exc:
        print(f"gpu_loadgen: {exc}", file=sys.stderr)
        return 2
    if args.dry_run:
        return _dry_run(p)
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")  # CUDA index == NVML index
    files: list[IO[str]] = []

    def open_log(path: str | None, fallback: IO[str]) -> IO[str]:
        if path is None:
            return fallback
        for f in files:
            if os.path.abspath(f.name) == os.path.abspath(path):
                return f
        f = open(path, "w", buffering=1, encoding="utf-8")  # noqa: SIM115 - closed below
        files.append(f)
        return f

    out = open_log(args.stdout_log, sys.stdout)
    err = open_log(args.stderr_log, sys.stderr)
    # Human messages go where no cuzk lines go, when there is such a place.
    console = sys.stdout if args.stdout_log else sys.stderr
    try:
        return run_load(p, CuzkLog(out, err), console, args)
    finally:
        for f in files:
            f.close()


if __name__ == "__main__":
    sys.exit(main())
