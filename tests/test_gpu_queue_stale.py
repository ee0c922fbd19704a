"""A partition left in `DaemonRun.queued` for good (its GPU_PICKUP line lost or unparsed, or its
run gone in a restart no start line told) made every later host_stall of its daemon's GPUs a
"dispatch stall" naming it, long ago, ahead of the rule that the GPU waited on synthesis
(final_read3 review, item 2).

cuzk's GPU queue is no FIFO: `PriorityWorkQueue` (engine.rs:28-79, curio 0ba6cbca) is a BTreeMap
keyed by (job_seq, partition_idx) and `try_pop` takes its least key; `job_seq` counts up from 0 at
each run's dispatch of a PoRep or SnapDeals job (engine.rs:1431, 2295, 2448). So a partition
still queued when its daemon pops one of a greater key was not in the queue then: its pickup was
not read. A greater key is a later partition of the same job, or, where both jobs'
`assigned pipeline sequence number` lines were read, a partition of a later job. A pickup of a
smaller key (a lower partition synthesised later) says nothing, nor one before the partition was
queued (cuzk writes GPU_QUEUE just before the push, engine.rs:1778-1779).
"""

from __future__ import annotations

from parsed_logs import events_of_lines

from gapwatch.core.models import ProcessMemory, ProverStatus
from gapwatch.cuzk.pipeline import PipelineFacts

#: The start line: 14:00:00 is TIMELINE offset 0.
START = "2026-05-12T14:00:00.000000Z  INFO cuzk_core::engine: starting cuzk engine"
T0 = 1_778_594_400.0  # 2026-05-12T14:00:00Z
JOB, LATER = "porep-1000-1", "porep-1000-2"


def tl(offset_ms: int, event: str, job: str, detail: str) -> str:
    return f"TIMELINE,{offset_ms},{event},{job},{detail}"


def seq(second: int, job: str, job_seq: int) -> str:
    """engine.rs:2296's line for `job` at 14:00:`second`."""
    return (f"2026-05-12T14:00:{second:02d}.000000Z  INFO cuzk_core::engine: assigned pipeline "
            f"sequence number job_id={job} job_seq={job_seq}")


def facts_of(lines: list[str]) -> PipelineFacts:
    facts = PipelineFacts()
    for ev in events_of_lines(lines):
        facts.feed(ev)
    return facts


def cause_of_gap(facts: PipelineFacts, from_s: float, to_s: float) -> str | None:
    return facts.log_view(0, T0 + from_s, T0 + to_s, "host_stall").cause


def test_a_partition_whose_pickup_was_not_read_is_stale_once_a_later_partition_of_its_job_is_picked() -> None:
    facts = facts_of([
        START,
        tl(1000, "GPU_QUEUE", JOB, "partition=3"),
        tl(1500, "GPU_QUEUE", JOB, "partition=4"),
        # partition 3's GPU_PICKUP lost: 4, a greater key, popped with 3 in the queue? No.
        tl(3000, "GPU_PICKUP", JOB, "worker=0,partition=4"),
    ])
    assert facts.queued_at(T0 + 5.0, 0) == 0
    assert cause_of_gap(facts, 10.0, 11.0) != "dispatch_stall"


def test_a_partition_picked_after_a_lower_one_queued_later_is_still_queued() -> None:
    """The queue's order, not its arrivals': 4 queued first, 3 (synthesised later) popped first."""
    facts = facts_of([
        START,
        tl(1000, "GPU_QUEUE", JOB, "partition=4"),
        tl(1500, "GPU_QUEUE", JOB, "partition=3"),
        tl(3000, "GPU_PICKUP", JOB, "worker=0,partition=3"),
    ])
    assert facts.queued_at(T0 + 5.0, 0) == 1
    view = facts.log_view(0, T0 + 10.0, T0 + 11.0, "host_stall")
    # worker 0 holds partition 3 through the gap: it waited for a worker, still queued.
    assert view.cause == "inside_workers"
    assert any("partition 4 of porep-1000-1" in e for e in view.evidence), view.evidence


def test_a_partition_is_stale_once_a_later_job_is_picked_where_both_sequence_numbers_were_read() -> None:
    lines = [
        START, seq(0, JOB, 0), seq(1, LATER, 1),
        tl(1000, "GPU_QUEUE", JOB, "partition=9"),
        tl(1500, "GPU_QUEUE", LATER, "partition=0"),
        tl(3000, "GPU_PICKUP", LATER, "worker=0,partition=0"),
    ]
    assert facts_of(lines).queued_at(T0 + 5.0, 0) == 0
    # Without the sequence lines (INFO filtered out) the jobs' order is not known: kept.
    unordered = [x for x in lines if "sequence number" not in x]
    assert facts_of(unordered).queued_at(T0 + 5.0, 0) == 1


def test_a_pickup_in_the_same_moment_as_a_partitions_queue_line_does_not_make_it_stale() -> None:
    """GPU_QUEUE is written before the push (engine.rs:1778-1779): a worker may pop a greater
    key in between, in the same millisecond."""
    facts = facts_of([
        START,
        tl(1000, "GPU_QUEUE", JOB, "partition=4"),
        tl(1000, "GPU_QUEUE", JOB, "partition=3"),
        tl(1000, "GPU_PICKUP", JOB, "worker=0,partition=4"),
    ])
    assert facts.queued_at(T0 + 5.0, 0) == 1


def _status(t_s: float, uptime_s: float) -> ProverStatus:
    return ProverStatus("127.0.0.1:9821", int(t_s * 1e9), t_s, 1.0, uptime_s, {}, [], 0, 0, 0, 0)


def test_a_restart_seen_only_by_status_uptime_empties_its_daemons_gpu_queue() -> None:
    """INFO filtered out (no start line): /status uptime going back is the only sign. The
    partition queued in the old run died with it; one queued after the restart stays."""
    facts = facts_of([START, tl(1000, "GPU_QUEUE", JOB, "partition=3")])
    facts.feed_status(_status(T0 + 50.0, 50.0))
    assert cause_of_gap(facts, 60.0, 61.0) == "dispatch_stall"  # nothing took it
    facts.feed_status(_status(T0 + 300.0, 3.0))  # restarted at T0 + 297
    assert facts.restarts.first.restarts == 1
    assert facts.queued_at(T0 + 299.0, 0) == 0
    assert cause_of_gap(facts, 350.0, 351.0) != "dispatch_stall"


def _cuzk_on_gpu(t_s: float, pid: int) -> ProcessMemory:
    """NVML's list: cuzk's process `pid` read on GPU 0 at `t_s`."""
    return ProcessMemory(int(t_s * 1e9), t_s, 0, pid, "cuzk-daemon", 1, 1)


def test_a_restart_seen_only_by_a_new_pid_keeps_the_new_runs_partitions_queued_before_its_first_reading() -> None:
    """INFO filtered out, no /status: a new cuzk pid is the only sign, first read at the new
    run's first CUDA work, minutes after its start (final_read4 review, defect 3). The old
    run's partition (queued while its pid was read) died with it; the new run's, queued after
    the old pid's last reading and before the new pid's first, is its own and still waits."""
    start, old, new = events_of_lines([START, tl(50_000, "GPU_QUEUE", JOB, "partition=3"),
                                       tl(300_000, "GPU_QUEUE", LATER, "partition=0")])
    assert (old.t_wall_s, new.t_wall_s) == (T0 + 50.0, T0 + 300.0)
    facts = PipelineFacts()
    facts.feed(start)
    facts.feed_process(_cuzk_on_gpu(T0 + 10.0, 4242))
    facts.feed(old)
    for t in (100.0, 200.0):  # the old run's pid, last read at +200 s
        facts.feed_process(_cuzk_on_gpu(T0 + t, 4242))
    facts.feed(new)
    facts.feed_process(_cuzk_on_gpu(T0 + 400.0, 5151))  # the new run's first CUDA work
    assert facts.restarts.first.restarts == 1
    assert facts.queued_at(T0 + 450.0, 0) == 1
    view = facts.log_view(0, T0 + 410.0, T0 + 411.0, "host_stall")
    assert view.cause == "dispatch_stall"
    assert any("partition 0 of porep-1000-2" in e for e in view.evidence), view.evidence
    assert not any("porep-1000-1" in e for e in view.evidence), view.evidence
