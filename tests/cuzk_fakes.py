"""Scripted cuzk `/status` documents and raw answers for the tests (the shape of cuzk-status.md)."""

from __future__ import annotations

import json
from typing import Any

from gapwatch.sources.cuzk_status_server import http_response

GIB = 1 << 30


def cuzk_doc(*, synth_done: int = 0, synthesizing: int = 0, pending: int = 0, gpu: int = 0,
             done: int = 0, active: int | None = None, total_gib: int = 750,
             available_gib: float | None = None,
             workers: tuple[str, ...] = ("idle", "idle"), gpu_of: tuple[int, ...] | None = None,
             job: str = "porep-1234-5678") -> dict[str, Any]:
    """A status document with the given partition counts, synthesis use and worker states, as
    status.rs serialises it: `max_concurrent` is the budget over 9 GiB (83 on 750 GiB), never
    the worker count (18 there); `active` defaults to the partitions synthesizing (it drifts
    above them after failed syntheses); the budget is 14 GiB per partition in flight."""
    in_flight = synthesizing + synth_done + gpu
    total = total_gib * GIB
    free = int(available_gib * GIB) if available_gib is not None else \
        max(0, total - in_flight * 14 * GIB - 47 * GIB)
    states = (["done"] * done + ["gpu"] * gpu + ["synth_done"] * synth_done
              + ["synthesizing"] * synthesizing + ["pending"] * pending)
    parts = [{"index": i, "state": st, "synth_ms": None if st == "pending" else 1000 + i,
              "gpu_ms": 500 + i if st in ("gpu", "done") else None}
             for i, st in enumerate(states)]
    ords = gpu_of or tuple(0 for _ in workers)
    return {
        "uptime_secs": 100.0,
        "memory": {"total_bytes": total, "used_bytes": total - free, "available_bytes": free},
        "synthesis": {"max_concurrent": total // (9 * GIB),
                      "active": synthesizing if active is None else active},
        "pipelines": [{"job_id": job, "proof_kind": "porep-c2", "started_secs_ago": 5.0,
                       "total_partitions": len(parts), "partitions_done": done,
                       "partitions": parts}],
        "gpu_workers": [{"worker_id": i, "gpu_ordinal": ords[i], "state": st,
                         "current_job": job if st == "proving" else None,
                         "current_partition": i if st == "proving" else None,
                         "busy_secs": 0.5 if st == "proving" else None}
                        for i, st in enumerate(workers)],
        "allocations": {"srs": [{"circuit_id": "porep-32g", "bytes": 47 * GIB,
                                 "last_used_secs_ago": 0.0, "evictable": False}], "pce": []},
        "counters": {"total_completed": 3, "total_failed": 0, "completed_by_kind": {},
                     "failed_by_kind": {}, "queue_depth": 1},
        "buffers": {"synth_in_flight": synthesizing, "provers_in_flight": gpu,
                    "aux_in_flight": 0, "shells_in_flight": 0, "pending_handles": 0},
    }


#: One document per finer cause (a GPU with two workers; a 750 GiB budget: 18 synthesis
#: workers, `max_concurrent` 83).
WAITS_ON_SYNTHESIS = cuzk_doc(synth_done=0, synthesizing=18, pending=4,
                              workers=("idle", "proving"))
DISPATCH_STALL = cuzk_doc(synth_done=3, synthesizing=10, workers=("idle", "idle"))
INSIDE_WORKERS = cuzk_doc(synth_done=2, gpu=2, synthesizing=18, workers=("proving", "proving"))
WAITS_ON_BUDGET = cuzk_doc(synthesizing=2, pending=8, available_gib=3.5,
                           workers=("idle", "idle"))


def ok_answer(doc: dict[str, Any]) -> bytes:
    return http_response(200, "OK", json.dumps(doc).encode())


def truncated_answer(doc: dict[str, Any]) -> bytes:
    """Content-Length says more than is sent before the connection closes."""
    body = json.dumps(doc).encode()
    full = http_response(200, "OK", body)
    return full[: len(full) - len(body) // 2]
