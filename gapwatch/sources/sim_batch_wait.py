"""The simulator's `batch-wait` scenario: cuzk with `[scheduler] max_batch_size = 2` and a
`max_batch_wait_ms` of a few seconds, fed PoRep requests one at a time by Curio, so no batch
ever fills: cuzk's batch collector holds each request until the wait runs out, then sends it
alone (a partial batch), and the GPU idles meanwhile. Both settings are the scenario's
`Scenario.max_batch_size` and `max_batch_wait_ms` (`[sim.batch_wait]` sets them, so that the
advice for these gaps can be followed here and `gapwatch compare` shown its gain).

What cuzk does then (curio e0294b0f, `extern/cuzk/cuzk-core/src/`):
- a request arrives: `job enqueued` (scheduler.rs:67-73); the synthesis dispatcher, blocked on
  the scheduler with no batch pending (engine.rs:2029-2041), takes it at once (`job dequeued
  for proving`, scheduler.rs:85-89) and, PoRep being batchable and max_batch_size > 1
  (engine.rs:2053; batch_collector.rs:82-87), adds it to the collector, which starts a batch
  and returns none (batch_collector.rs:143-156);
- no second request comes: the dispatcher sleeps until the batch's wait runs out
  (engine.rs:1979-1985, 2009-2011), `check_timeout` hands the batch over
  (batch_collector.rs:165-173), and it is sent in span `synth_timeout_flush{batch_size=1}`
  (engine.rs:2012): `processing batch batch_size=1 proof_kind=porep-c2 slot_size=0`
  (engine.rs:2150-2155);
- a batch of one PoRep takes the per-partition path (engine.rs:2179-2181): its job registered
  in /status with 10 pending partitions (2247), `dispatching per-partition synthesis
  (budget-gated)` (2261-2266) and `assigned pipeline sequence number` (2296-2300) in the same
  span, then its partitions synthesised and proved as every partitioned job's (TIMELINE
  SYNTH_START .. GPU_END, the simulator's own model);
- its last partition proved: `Phase 7: all partitions complete, proof assembled` (engine.rs:
  506-513, from the finalizer's task, no span), `total_ms` from the request's submission, the
  hold in it.
With `max_batch_wait_ms = 0` the collector still takes the request and returns none (a
batch of one is not full, batch_collector.rs:143-156); the dispatcher's timer is set to the
time left, zero (engine.rs:1979-1985; `saturating_sub`, batch_collector.rs:185-190), and fires
at tokio's next timer tick (under a millisecond; the simulator: at once), `check_timeout`
hands it over (elapsed >= 0 ms, batch_collector.rs:165-173, its own test `test_timeout_check`):
the same lines in span `synth_timeout_flush{batch_size=1}`, held no time. With
`max_batch_size = 1` (cuzk's default; 0 acts the same) no request goes to the collector
(engine.rs:2053 asks `max_batch_size > 1`): the dispatcher sends it at once in span
`synth_single{proof_kind=porep-c2}` (engine.rs:2093-2101), the collector empty so no
`synth_preempt_flush` before it (2075-2076), and the same lines follow; no hold.
While held the request is listed nowhere in /status: no job (registered only at 2247), the
scheduler's queue empty (`queue_depth` is the scheduler's length, engine.rs:3710, and the
collector took the request out of it), every worker idle.

Curio sends the next request `TURNAROUND_S` after a proof came back: requests come slower than
a batch fills, and every gap between two proofs is the turnaround, the hold, and the first
partition's synthesis. The simulator keeps each hold (`holds`: the truth gapwatch's
`batch_wait` gaps are scored against). cuzk's collector is the daemon's, one for every GPU:
the scenario is one GPU's (`parse_scenarios` refuses it with more, or mixed).
Who calls it: `SimProver` (it builds one for a scenario with `request_after_proof_s` set, calls
`start`, and `proof_done` when a job's last partition is proved).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from gapwatch.sources.sim_lines import dequeued, enqueued

#: Curio's turnaround: from a proof's return to its next request (the scenario's
#: `request_after_proof_s`).
TURNAROUND_S = 0.3
#: The collector's first request comes this long after the engine's start.
FIRST_REQUEST_S = 0.2
#: A PoRep C2 proof's length (10 partitions of 192 bytes), as `proof_len` says it.
POREP_PROOF_LEN = 1920
#: The spans `processing batch` is written in (engine.rs:2012, 2099), as tracing prints a
#: span (`name{fields}: `): the collector's timer ran out on a batch of one, or no batching.
TIMEOUT_FLUSH_SPAN = "synth_timeout_flush{batch_size=1}: "
SINGLE_SPAN = "synth_single{proof_kind=porep-c2}: "
#: The budget free when a request is dispatched, as its dispatch line says it (GiB): the
#: simulated budget less its PoRep SRS (`sim.SIM_BUDGET_BYTES`, `SIM_SRS_BYTES`).
BUDGET_AVAILABLE_GIB = 465


@dataclass(frozen=True, slots=True)
class BatchHold:
    """Truth: one request cuzk's batch collector held, from its arrival (`job enqueued`) to
    the timeout flush that sent it alone (Unix seconds; the same with `max_batch_wait_ms = 0`:
    held no time). A request sent at once (`max_batch_size = 1`) is held by none."""

    gpu: int
    job: str
    enqueued_wall_s: float
    flushed_wall_s: float


class SimProver(Protocol):
    """The simulator as the script drives it (`gapwatch.sources.sim.SimProver`): typed here,
    not imported, since the simulator imports this module."""

    _now: float
    _gpus: list[Any]
    _job: int
    _t0_wall_s: float
    _keep_truth: bool

    def _at(self, t: float, fn: Callable[[], None]) -> None: ...
    def _trace(self, t: float, message: str, span: str = ..., target: str = ...,
               level: str = ...) -> None: ...
    def _part(self, job: str, part: int) -> Any: ...
    def _fill_synthesis(self, g: Any) -> None: ...


class BatchWaitScript:
    """Curio's requests one at a time and cuzk's batch collector holding each, inside one
    `SimProver` of one GPU."""

    def __init__(self, sim: SimProver) -> None:
        self.sim = sim
        self.gpu = sim._gpus[0]
        #: Requests sent so far; request k is job `porep-{base}-{k}`, partitions 10k..10k+9.
        self.requests = 0
        #: job -> when it was submitted (simulated seconds), until its proof is assembled.
        self.submitted: dict[str, float] = {}
        #: The holds, for scoring (empty when the simulator keeps no truth: a demo runs for
        #: weeks and scores nothing).
        self.holds: list[BatchHold] = []

    def start(self) -> None:
        """Nothing is synthesised before a request is sent: the GPU's partitions are gated."""
        self.gpu.parts_released = 0
        self.sim._at(self.sim._now + FIRST_REQUEST_S, self._request)

    def _request(self) -> None:
        """A request arrives and the dispatcher puts it in the collector at once."""
        sim, g = self.sim, self.gpu
        job = f"porep-{sim._job + g.index}-{self.requests}"
        first_part = self.requests * 10
        self.requests += 1
        self.submitted[job] = sim._now
        enqueued(sim, job, "porep-c2")
        dequeued(sim, job, "porep-c2")
        if g.scenario.max_batch_size <= 1:  # not batched (engine.rs:2053): sent at once
            self._send(job, first_part, SINGLE_SPAN, None)
            return
        wait_s = g.scenario.max_batch_wait_ms / 1000
        sim._at(sim._now + wait_s,
                partial(self._send, job, first_part, TIMEOUT_FLUSH_SPAN, sim._now))

    def _send(self, job: str, first_part: int, span: str, held_since_s: float | None) -> None:
        """The request sent alone, down the per-partition path: at once (`held_since_s`
        None, span `synth_single`), or held by the collector since `held_since_s` until its
        wait ran out (span `synth_timeout_flush`), kept as a hold."""
        sim, g = self.sim, self.gpu
        sim._trace(sim._now, "processing batch batch_size=1 proof_kind=porep-c2 slot_size=0",
                   span=span)
        sim._part(job, first_part)  # registered in /status, its partitions pending (2247)
        sim._trace(sim._now, f"dispatching per-partition synthesis (budget-gated) job_id={job} "
                             f"num_partitions=10 budget_available_gib={BUDGET_AVAILABLE_GIB}",
                   span=span)
        sim._trace(sim._now, f"assigned pipeline sequence number job_id={job} "
                             f"job_seq={self.requests - 1}", span=span)
        if sim._keep_truth and held_since_s is not None:
            self.holds.append(BatchHold(g.index, job, sim._t0_wall_s + held_since_s,
                                        sim._t0_wall_s + sim._now))
        g.parts_released = first_part + 10
        sim._fill_synthesis(g)

    def proof_done(self, job: str, entry: Any) -> None:
        """The job's last partition is proved: its proof assembled (engine.rs:506-513), and
        Curio sends the next request after its turnaround."""
        sim = self.sim
        submitted = self.submitted.pop(job, entry.started_s)

        def total_ms(phase: str) -> int:
            spans = [(getattr(p, f"{phase}_start_s"), getattr(p, f"{phase}_end_s"))
                     for p in entry.parts]
            return int(sum(b - a for a, b in spans if a is not None and b is not None) * 1000)

        sim._trace(sim._now, f"Phase 7: all partitions complete, proof assembled job_id={job} "
                             f"proof_len={POREP_PROOF_LEN} "
                             f"total_ms={int((sim._now - submitted) * 1000)} "
                             f"synth_ms={total_ms('synth')} gpu_ms={total_ms('gpu')}")
        sim._at(sim._now + self.gpu.scenario.request_after_proof_s, self._request)
