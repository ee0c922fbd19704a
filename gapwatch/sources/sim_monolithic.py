"""The simulator's `post-pipeline-off` scenario: cuzk with `[pipeline] enabled = false`, whose
GPUs each have one monolithic worker proving whole proofs, PoSt among them, with its lines.

What cuzk does then (curio e0294b0f, `extern/cuzk/cuzk-core/src/engine.rs`): one worker per GPU
(1333-1337, worker ids 0.. in GPU order, 1349-1357), each looping on the scheduler (3379-3390):
it takes the highest-priority request (a WinningPoSt, `Critical`, before a PoRep,
scheduler.rs:34-45, 85) only once the proof it holds has ended, and proves it whole,
synthesis and GPU, in one call (3422-3440): the GPU idles while it synthesises. No TIMELINE line
is written; a proof is `processing job (monolithic)` (3397) .. `proof completed successfully
(monolithic)` (3455-3462) or `proof failed` (3471, ERROR) inside the worker's span
`monolithic_worker{worker_id gpu job_id proof_kind}` (3394). `/status` lists no job and every
worker idle: the monolithic path updates the job tracker, not the status tracker
(3400-3405; status.rs:446-453).

The script, on GPU 0's PoRep proofs (each `POREP_SYNTH_S` + `POREP_GPU_S`), in turn:
- the first: a WinningPoSt arrives `ARRIVES_BEFORE_END_S` before it ends, waits for it, and is
  on time;
- the second: one arrives `ARRIVES_AFTER_START_S` after it began, waits for the whole PoRep,
  and misses its 30 s epoch (said late while still queued, then when it ends);
- the third: one arrives as the first did, and its proving fails `FAIL_AFTER_S` in (`proof
  failed`, the error filecoin-proofs' call returns, prover.rs:552);
- the fourth: none.
Who calls it: `SimProver` (it builds one for a scenario whose pipeline is off and calls
`start`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from gapwatch.sources.sim_lines import dequeued, enqueued

#: A PoRep C2 proved in one call: its 10 partitions synthesised (CPU, the GPU idle), then
#: their a/b/c copied and proved on the GPU. Shorter than a real one (minutes) to keep the
#: scenario's cycle short; long enough to make a WinningPoSt behind it late.
POREP_SYNTH_S = 22.0
POREP_GPU_S = 10.0
#: A WinningPoSt proved in one call (synthesis 2.2 s, GPU 1.2 s).
WINNING_PROVE_S = 3.4
#: When each WinningPoSt arrives against the PoRep it waits behind, and when the failing one
#: fails.
ARRIVES_BEFORE_END_S = 4.0
ARRIVES_AFTER_START_S = 0.5
FAIL_AFTER_S = 1.5
#: Its error, as `error = %e` writes the anyhow error (its outermost context, prover.rs:552).
PROVE_ERROR = "generate_winning_post_with_vanilla failed"
#: What each of GPU 0's PoRep proofs brings, in turn (`on_time`, `late`, `failed`, None).
STORY: tuple[str | None, ...] = ("on_time", "late", "failed", None)


class SimProver(Protocol):
    """The simulator as the script drives it (`gapwatch.sources.sim.SimProver`): typed here,
    not imported, since the simulator imports this module."""

    _now: float
    _gpus: list[Any]

    def _at(self, t: float, fn: Callable[[], None]) -> None: ...
    def _trace(self, t: float, message: str, span: str = ..., target: str = ...,
               level: str = ...) -> None: ...
    def add_compute(self, g: Any, start: float, end: float) -> None: ...
    def add_copy(self, g: Any, start: float, end: float, rate: float) -> None: ...
    def h2d_rate(self, g: Any, t: float, pinned: bool | None = ...) -> float: ...


class MonolithicScript:
    """One monolithic worker per GPU and the WinningPoSt story, inside one `SimProver`."""

    def __init__(self, sim: SimProver) -> None:
        self.sim = sim
        #: The scheduler's queue of PoSt (job, arrival): taken before any PoRep.
        self.post_queue: list[tuple[str, float]] = []
        #: GPU index -> the worker is proving.
        self.busy: dict[int, bool] = {}
        #: GPU index -> PoRep proofs begun on it (GPU 0's bring the story's WinningPoSt).
        self.porep_proofs: dict[int, int] = {}
        #: WinningPoSt arrived.
        self.winpost = 0
        #: The WinningPoSt whose proving will fail.
        self.failing: set[str] = set()

    def start(self) -> None:
        """Every worker takes its first request once the engine has started."""
        for g in self.sim._gpus:
            self.sim._at(self.sim._now + 0.05, partial(self._next, g))

    # -- the worker loop ----------------------------------------------------------------------

    def _next(self, g: Any) -> None:
        """A free worker takes the next request (scheduler.rs:85): a queued PoSt first, else a
        PoRep, whose request arrives as the worker comes free (enqueued and dequeued at once:
        the scenario keeps every worker busy, as Curio's queued PoRep work does)."""
        if self.post_queue:
            job, arrived = self.post_queue.pop(0)
            self._prove_post(g, job, arrived)
        else:
            self._prove_porep(g)

    def _begin(self, g: Any, job: str, kind: str) -> str:
        """The lines of a request taken: dequeued, then `processing job` in the worker's span
        (returned, for the job's later lines)."""
        sim = self.sim
        self.busy[g.index] = True
        dequeued(sim, job, kind)
        span = (f"monolithic_worker{{worker_id={g.index} gpu={g.index} job_id={job} "
                f"proof_kind={kind}}}: ")
        sim._trace(sim._now, "processing job (monolithic)", span=span)
        return span

    def _prove_porep(self, g: Any) -> None:
        sim = self.sim
        n = self.porep_proofs[g.index] = self.porep_proofs.get(g.index, 0) + 1
        job = f"porep-{1000 + g.index}-{n}"
        enqueued(sim, job, "porep-c2", "Normal", len(self.post_queue))
        span = self._begin(g, job, "porep-c2")
        start = sim._now
        copy_at = start + POREP_SYNTH_S
        rate = sim.h2d_rate(g, copy_at, False)  # the monolithic path pins nothing
        kernels_at = copy_at + g.scenario.abc_bytes / rate
        sim.add_copy(g, copy_at, kernels_at, rate)
        sim.add_compute(g, kernels_at, kernels_at + POREP_GPU_S)
        end = kernels_at + POREP_GPU_S
        sim._at(end, partial(self._completed, g, span, start, start, 1920))
        if g.index == 0:
            self._story(n, start, end)

    def _story(self, n: int, start: float, end: float) -> None:
        """The WinningPoSt GPU 0's `n`th PoRep proof brings (`STORY`)."""
        turn = STORY[(n - 1) % len(STORY)]
        if turn == "late":
            self.sim._at(start + ARRIVES_AFTER_START_S, self._post_arrives)
        elif turn is not None:
            self.sim._at(end - ARRIVES_BEFORE_END_S,
                         partial(self._post_arrives, fails=turn == "failed"))

    def _post_arrives(self, fails: bool = False) -> None:
        sim = self.sim
        self.winpost += 1
        job = f"winpost-1000-{0x5e6f7a00 + self.winpost:08x}"
        if fails:
            self.failing.add(job)
        enqueued(sim, job, "winning-post", "Critical", len(self.post_queue))
        self.post_queue.append((job, sim._now))
        for g in sim._gpus:
            if not self.busy.get(g.index):  # an idle worker takes it at once
                self._next(g)
                return

    def _prove_post(self, g: Any, job: str, arrived: float) -> None:
        sim = self.sim
        span = self._begin(g, job, "winning-post")
        start = sim._now
        if job in self.failing:
            self.failing.discard(job)
            sim._at(start + FAIL_AFTER_S, partial(self._failed, g, span))
            return
        synth_s = WINNING_PROVE_S - 1.2
        sim.add_compute(g, start + synth_s, start + WINNING_PROVE_S)
        sim._at(start + WINNING_PROVE_S, partial(self._completed, g, span, arrived, start, 192))

    def _completed(self, g: Any, span: str, arrived: float, start: float,
                   proof_len: int) -> None:
        """engine.rs:3455-3462: `total_ms` from submission, `queue_ms` the part of it before
        the prover's own total, `prove_ms` the proving."""
        sim = self.sim
        now = sim._now
        sim._trace(now, f"proof completed successfully (monolithic) proof_len={proof_len} "
                        f"total_ms={int((now - arrived) * 1000)} "
                        f"queue_ms={int((start - arrived) * 1000)} deser_ms=0 "
                        f"prove_ms={int((now - start) * 1000)}", span=span)
        self._free(g)

    def _failed(self, g: Any, span: str) -> None:
        """engine.rs:3471: `proof failed`, `error = %e`; the worker takes the next request."""
        self.sim._trace(self.sim._now, f"proof failed error={PROVE_ERROR}", span=span,
                        level="ERROR")
        self._free(g)

    def _free(self, g: Any) -> None:
        self.busy[g.index] = False
        self._next(g)

