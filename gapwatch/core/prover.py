"""Where the prover itself says a GPU's idle gap waited: the finer cause, from its `/status`.

Who calls it: `gapwatch.core.evidence` (each gap's `prover_cause` and `prover_states`), the
dashboard (the pipeline line, the worker states on gap rows), `gapwatch.sinks.prometheus`
(workers by state) and `gapwatch.offline.report` (gaps by cause). Pure: no I/O, no clocks.

The rules (cuzk-status.md, "what it lets a monitor say"), for one GPU, per snapshot, first match:

- `inside_workers`: every worker of this GPU is `proving`: the wait is inside the workers
  (copies, the GPU mutex, CPU work), not in the pipeline that feeds them;
- `dispatch_stall`: partitions wait in `synth_done` while a worker of this GPU is `idle`;
- `waits_on_synthesis`: no partition in `synth_done` and every synthesis slot busy;
- `no_work`: nothing pending, synthesising or synthesised, no worker proving.

A gap's cause is the most frequent cause among the snapshots taken during it (ties in the order
above); a gap with no snapshot of its own (shorter than the poll period) takes the cause of the
latest snapshot before it, within the evidence window, and says so. Synthesis and the GPU queue
are shared by all GPUs of a prover; workers are per GPU (`gpu_ordinal`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gapwatch.core.models import ProverStatus, ProverWorker

#: The finer causes, in tie-break order (see the module docstring).
PROVER_CAUSES: tuple[str, ...] = ("inside_workers", "dispatch_stall", "waits_on_synthesis",
                                  "no_work")
#: One letter per worker state on the dashboard's gap rows and pipeline line.
WORKER_LETTER = {"proving": "P", "idle": "I"}


def workers_on(status: ProverStatus, gpu: int) -> list[ProverWorker]:
    """The prover's workers on `gpu`; all of them when none says its GPU (a one-GPU prover)."""
    if not any(w.gpu is not None for w in status.workers):
        return list(status.workers)
    return [w for w in status.workers if w.gpu == gpu]


def concerns(status: ProverStatus, gpu: int) -> bool:
    """Does this snapshot say anything about `gpu`? Yes when a worker runs on it, or when the
    snapshot names no worker's GPU at all."""
    return bool(workers_on(status, gpu)) or not status.workers


def snapshot_cause(status: ProverStatus, gpu: int) -> str | None:
    """The cause one snapshot gives for an idle `gpu`, or None when no rule applies."""
    mine = workers_on(status, gpu)
    counts = status.partition_counts
    synth_done = counts.get("synth_done")
    if mine and all(w.state == "proving" for w in mine):
        return "inside_workers"
    if synth_done and any(w.state == "idle" for w in mine):
        return "dispatch_stall"
    active, slots = status.synthesis_active, status.synthesis_max
    if synth_done == 0 and active is not None and slots and active >= slots:
        return "waits_on_synthesis"
    if (synth_done == 0 and not counts.get("pending") and not counts.get("synthesizing")
            and not active and not any(w.state == "proving" for w in mine)):
        return "no_work"
    return None


def decide_cause(during: Mapping[str, int], before: str | None) -> tuple[str | None, bool]:
    """The gap's cause from the causes counted during it and the one just before it.

    Returns (cause, seen during the gap). The most frequent cause during the gap wins, ties in
    `PROVER_CAUSES` order; with none during it, the cause just before (or None).
    """
    best: str | None = None
    for cause in PROVER_CAUSES:
        n = during.get(cause, 0)
        if n and (best is None or n > during.get(best, 0)):
            best = cause
    if best is not None:
        return best, True
    return before, False


def worker_letters(workers: Iterable[ProverWorker]) -> str:
    """`PI`: one letter per worker in id order (P proving, I idle, ? other)."""
    return "".join(WORKER_LETTER.get(w.state, "?")
                   for w in sorted(workers, key=lambda w: w.worker_id))


def gap_state(status: ProverStatus, gpu: int) -> dict[str, Any]:
    """A snapshot as a gap's evidence for `gpu`: compact, JSON-ready."""
    counts = status.partition_counts
    mine = workers_on(status, gpu)
    return {
        "t_s": status.t_wall_s,
        "prover": status.prover,
        "cause": snapshot_cause(status, gpu),
        "workers": worker_letters(mine),
        "pending": counts.get("pending"),
        "synthesizing": counts.get("synthesizing"),
        "synth_done": counts.get("synth_done"),
        "gpu": counts.get("gpu"),
        "synthesis_active": status.synthesis_active,
        "synthesis_max": status.synthesis_max,
        "queue_depth": status.queue_depth,
    }
