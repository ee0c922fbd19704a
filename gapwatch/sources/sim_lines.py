"""The scheduler's lines every simulated script writes for a request (scheduler.rs:67-73,
85-89), one writer for `gapwatch.sources.sim` and its scripts."""

from __future__ import annotations

from typing import Protocol

SCHEDULER_TARGET = "cuzk_core::scheduler"


class _Tracer(Protocol):
    _now: float

    def _trace(self, t: float, message: str, span: str = ..., target: str = ...,
               level: str = ...) -> None: ...


def enqueued(sim: _Tracer, job: str, kind: str, priority: str = "Normal",
             position: int = 0) -> None:
    """scheduler.rs:67-73: every request's arrival, `position` the requests queued before it."""
    sim._trace(sim._now, f"job enqueued job_id={job} proof_kind={kind} priority={priority} "
                         f"queue_position={position}", target=SCHEDULER_TARGET)


def dequeued(sim: _Tracer, job: str, kind: str) -> None:
    """scheduler.rs:85-89: the request taken for proving."""
    sim._trace(sim._now, f"job dequeued for proving job_id={job} proof_kind={kind}",
               target=SCHEDULER_TARGET)
