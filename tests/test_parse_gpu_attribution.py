"""Prover log lines tied to their GPU where the line or its span says which (issue 15, the part
that needs no GPU): the `gpu_worker{... gpu=G}` span, the worker map learnt from any line that
names both, the partition a worker picked up; and what stays unattributed on a multi-GPU box."""

from __future__ import annotations

from gapwatch.core.models import LogEvent
from gapwatch.cuzk.log_lines import PARTITION_KIND
from gapwatch.logs.parse import LogParser

T = "2026-05-12T14:14:02.010377Z"


def _span(worker: int, gpu: int, partition: int, job: str = "porep-1234-5678") -> str:
    return (f"gpu_worker{{worker_id={worker} gpu={gpu} job_id={job} proof_kind=porep-c2 "
            f"batch_size=1 partition=Some({partition})}}: ")


def hot_path(worker: int, gpu: int, partition: int, job: str = "porep-1234-5678") -> str:
    return (f"{T}  INFO {_span(worker, gpu, partition, job)}cuzk_core::engine: GPU_TIMING hot_path "
            f"pre-prove overhead worker_id={worker} partition=Some({partition}) status_ms=0 "
            "fail_check_ms=0 mark_busy_ms=0 total_overhead_ms=0")


def one(p: LogParser, line: str, stream: str = "stdout") -> LogEvent:
    events = [e for e in p.parse_line(line, stream, 1, 0.0) if e.kind != PARTITION_KIND]
    assert len(events) == 1, events
    return events[0]


def test_a_line_in_a_gpu_worker_span_is_tied_to_that_gpu_and_teaches_its_worker() -> None:
    p = LogParser()  # following from the end: no `pipeline GPU worker started` lines seen
    assert one(p, "TIMELINE,842010,GPU_PICKUP,porep-1234-5678,worker=3,partition=7").gpu is None
    assert one(p, hot_path(3, 1, 7)).gpu == 1
    # From then on, lines that name only the worker follow it to its GPU.
    assert one(p, "TIMELINE,842011,GPU_START,porep-1234-5678,worker=3,partition=7").gpu == 1
    assert one(p, f"{T}  INFO cuzk_core::engine: GPU_TIMING spawn_blocking prove_start "
                  "worker_id=3 partition=Some(7) spawn_to_enter_ms=0 prove_start_ms=2445").gpu == 1
    assert one(p, f"{T}  INFO cuzk_core::engine: FIN_TIMING finalizer partition worker_id=3 "
                  "partition=Some(7) finish_ms=910 drop_res_ms=0 lock_wait_ms=0 process_ms=38 "
                  "total_ms=948").gpu == 1
    assert p.worker_gpu == {3: 1}


def test_lines_naming_only_job_and_partition_follow_the_worker_that_picked_it_up() -> None:
    p = LogParser()
    one(p, f"{T}  INFO cuzk_core::engine: pipeline GPU worker started worker_id=2 gpu=1 sub_id=0")
    # Synthesis happens before any worker has the partition: shared by all GPUs, no GPU.
    synth = one(p, f"{T}  INFO cuzk_core::engine: partition synthesis complete, pushing to GPU "
                   "queue job_id=wdpost-1-2-[1 2 3] partition=0 synth_ms=2800")
    assert synth.gpu is None and synth.job_id == "wdpost-1-2-[1 2 3]"
    one(p, "TIMELINE,1,GPU_PICKUP,wdpost-1-2-[1 2 3],worker=2,partition=0")
    done = one(p, f"{T}  INFO cuzk_core::engine: partition GPU prove complete "
                  "job_id=wdpost-1-2-[1 2 3] partition=0 gpu_ms=3356 filled=1")
    assert (done.gpu, done.worker) == (1, None)
    trim = one(p, f"{T}  INFO cuzk_core::engine: FIN_TIMING malloc_trim (success path) "
                  "job_id=wdpost-1-2-[1 2 3] partition=0 malloc_trim_ms=37")
    assert trim.gpu == 1


def test_two_gpus_seen_in_spans_switch_lock_attribution_off() -> None:
    p = LogParser()
    one(p, hot_path(0, 0, 1))
    assert p.attributor.enabled
    one(p, hot_path(2, 1, 2))
    assert not p.attributor.enabled and p.counters["attribution_disabled_multi_gpu"] == 1


def test_a_daemon_that_starts_with_two_gpus_never_attributes_cpp_lines() -> None:
    p = LogParser()
    one(p, f"{T}  INFO cuzk_core::engine: initializing GPU workers num_gpus=2 "
           "gpu_workers_per_device=2 total_workers=4 gpus=[0, 1]")
    assert not p.attributor.enabled
    lines = ["CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=905",
             "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=690",
             "CUZK_TIMING: mutex_held_ms=1528 total_start_fn_ms=2434",
             f"{T}  INFO cuzk_core::engine: GPU_TIMING spawn_blocking prove_start worker_id=1 "
             "partition=Some(3) spawn_to_enter_ms=0 prove_start_ms=2445"]
    events = [e for line in lines for e in p.parse_line(line, "x", 1, 0.0)]
    assert not [e for e in events if e.kind == PARTITION_KIND]
    # The C++ lines carry no GPU (gpu_tid is always 0 in the daemon): unattributed.
    assert [e.gpu for e in events if e.kind == "cuzk_timing"] == [None, None, None]


def test_a_one_gpu_daemon_still_attributes_its_lock_regions() -> None:
    p = LogParser()
    one(p, f"{T}  INFO cuzk_core::engine: initializing GPU workers num_gpus=1 "
           "gpu_workers_per_device=2 total_workers=2 gpus=[0]")
    one(p, hot_path(1, 0, 3))
    for line in ("CUZK_TIMING: pre_lock_cpu_ms=1 mutex_wait_ms=905",
                 "CUZK_TIMING: mutex_held_ms=1528 total_start_fn_ms=2434"):
        p.parse_line(line, "x", 1, 0.0)
    events = p.parse_line(f"{T}  INFO cuzk_core::engine: GPU_TIMING spawn_blocking prove_start "
                          "worker_id=1 partition=Some(3) spawn_to_enter_ms=0 "
                          "prove_start_ms=2445", "x", 1, 0.0)
    (lock,) = [e for e in events if e.kind == PARTITION_KIND]
    assert (lock.worker, lock.partition, lock.gpu) == (1, 3, 0)
