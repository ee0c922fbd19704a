"""The GPU queue watch looks only through the items that have the key (0, 0), pushed before
the one picked up (`gapwatch.cuzk.gpu_queue.GpuQueueWatch._pushed_before`): the same lost
jobs, in the same order, as a look through the whole queue, over random streams with
restarts, re-queued keys and a queue past `MAX_QUEUED`; and a pickup never looks through the
partitions 0 of other jobs that stay queued, never picked up."""

from __future__ import annotations

import random

import pytest

from gapwatch.core.models import LogEvent, ProverEvent
from gapwatch.cuzk import gpu_queue
from gapwatch.cuzk.gpu_queue import SEQ_MESSAGE, GpuQueueWatch


class WholeQueue(GpuQueueWatch):
    """The rule as first written: every queued item looked at on each pickup."""

    def _pushed_before(self, picked: gpu_queue._Queued) -> list[gpu_queue._Queued]:
        return [q for q in self._queued.values()
                if q.order < picked.order and (q.partition is None or (
                    q.partition == 0 and q.job == self._seq0_job))]


def _stream(rng: random.Random, n: int) -> list[LogEvent]:
    out = []
    for i in range(n):
        job = f"job-{rng.randrange(40)}"
        t = 1000.0 + i * 0.01
        roll = rng.random()
        if roll < 0.02:
            out.append(LogEvent(t, "line", "tracing", SEQ_MESSAGE, "", job_id=job,
                                fields={"job_seq": rng.choice((0, 0, 1))}))
            continue
        partition = rng.choice((None, 0, 0, 1, 2, 3))
        name = "GPU_QUEUE" if roll < 0.6 else "GPU_PICKUP"
        out.append(LogEvent(t, "timeline", "timeline", name, "", job_id=job,
                            partition=partition))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_the_lost_jobs_are_those_a_look_through_the_whole_queue_finds(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_queue, "MAX_QUEUED", 25)  # the oldest pushed out often
    rng = random.Random(seed)
    fast, whole = GpuQueueWatch(), WholeQueue()
    said_fast: list[ProverEvent] = []
    said_whole: list[ProverEvent] = []
    for i, ev in enumerate(_stream(rng, 4000)):
        if i % 997 == 996:
            fast.restart()
            whole.restart()
        said_fast += fast.feed(ev)
        said_whole += whole.feed(ev)
        assert list(fast._monolithic) == sorted((k for k in fast._queued if k[1] is None),
                                                key=lambda k: fast._queued[k].order)
    assert said_fast == said_whole
    assert len(said_fast) > 20 and fast.lost == whole.lost


def test_partitions_0_never_picked_up_are_not_looked_through_at_each_pickup(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Partitions 0 of jobs other than the run's `job_seq` 0 one never have the key (0, 0),
    and a day's log leaves thousands of them queued, never picked up: each of its ~450,000
    pickups looked through all of them (4,095: 0.7 ms a pickup, minutes of a report, and of
    the session's lock live). A pickup now looks at the items pushed before it that have the
    key: a few."""
    looked = 0

    class Counted(gpu_queue._Queued):
        __slots__ = ()

        def __getattribute__(self, name: str) -> object:
            nonlocal looked
            if name == "order":
                looked += 1
            return super().__getattribute__(name)

    monkeypatch.setattr(gpu_queue, "_Queued", Counted)
    watch = GpuQueueWatch()
    t = 1000.0
    for i in range(4000):  # partitions 0 whose pickups were never read
        t += 0.01
        watch.feed(LogEvent(t, "timeline", "timeline", "GPU_QUEUE", "", job_id=f"porep-{i}",
                            partition=0))
    looked = 0
    for i in range(100):
        t += 0.01
        for name in ("GPU_QUEUE", "GPU_PICKUP"):
            watch.feed(LogEvent(t, "timeline", "timeline", name, "", job_id=f"snap-{i}",
                                partition=1))
    assert looked < 100 * 10
    assert watch.lost == 0
