"""Scripted cuzk `/status` documents and raw answers for the tests (the shape of cuzk-status.md)."""

from __future__ import annotations

import json
from typing import Any

from gapwatch.sources.cuzk_status_server import http_response


def cuzk_doc(*, synth_done: int = 0, synthesizing: int = 0, pending: int = 0, gpu: int = 0,
             done: int = 0, active: int = 0, slots: int = 18,
             workers: tuple[str, ...] = ("idle", "idle"), gpu_of: tuple[int, ...] | None = None,
             job: str = "porep-1234-5678") -> dict[str, Any]:
    """A status document with the given partition counts, synthesis use and worker states."""
    states = (["done"] * done + ["gpu"] * gpu + ["synth_done"] * synth_done
              + ["synthesizing"] * synthesizing + ["pending"] * pending)
    parts = [{"index": i, "state": st, "synth_ms": None if st == "pending" else 1000 + i,
              "gpu_ms": 500 + i if st in ("gpu", "done") else None}
             for i, st in enumerate(states)]
    ords = gpu_of or tuple(0 for _ in workers)
    return {
        "uptime_secs": 100.0,
        "synthesis": {"max_concurrent": slots, "active": active},
        "pipelines": [{"job_id": job, "proof_kind": "porep-c2", "started_secs_ago": 5.0,
                       "total_partitions": len(parts), "partitions_done": done,
                       "partitions": parts}],
        "gpu_workers": [{"worker_id": i, "gpu_ordinal": ords[i], "state": st,
                         "current_job": job if st == "proving" else None,
                         "current_partition": i if st == "proving" else None,
                         "busy_secs": 0.5 if st == "proving" else None}
                        for i, st in enumerate(workers)],
        "counters": {"total_completed": 3, "total_failed": 0, "completed_by_kind": {},
                     "failed_by_kind": {}, "queue_depth": 1},
    }


#: One document per finer cause (a GPU with two workers, 18 synthesis slots).
WAITS_ON_SYNTHESIS = cuzk_doc(synth_done=0, synthesizing=18, pending=4, active=18,
                              workers=("idle", "proving"))
DISPATCH_STALL = cuzk_doc(synth_done=3, synthesizing=10, active=10, workers=("idle", "idle"))
INSIDE_WORKERS = cuzk_doc(synth_done=2, gpu=2, synthesizing=18, active=18,
                          workers=("proving", "proving"))


def ok_answer(doc: dict[str, Any]) -> bytes:
    return http_response(200, "OK", json.dumps(doc).encode())


def truncated_answer(doc: dict[str, Any]) -> bytes:
    """Content-Length says more than is sent before the connection closes."""
    body = json.dumps(doc).encode()
    full = http_response(200, "OK", body)
    return full[: len(full) - len(body) // 2]
