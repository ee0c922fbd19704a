"""The GPU queue watch looks only through the items that may have the key (0, 0)
(`gapwatch.cuzk.gpu_queue.GpuQueueWatch._maybe_zero`): the same lost jobs, in the same order,
as a look through the whole queue, over random streams with restarts, re-queued keys and a
queue past `MAX_QUEUED`."""

from __future__ import annotations

import random

import pytest

from gapwatch.core.models import LogEvent, ProverEvent
from gapwatch.cuzk import gpu_queue
from gapwatch.cuzk.gpu_queue import SEQ_MESSAGE, GpuQueueWatch


class WholeQueue(GpuQueueWatch):
    """The rule as first written: every queued item looked at on each pickup."""

    def _passed_over(self, picked: gpu_queue._Queued, ev: LogEvent) -> list[ProverEvent]:
        self._maybe_zero = {k: q for k, q in self._queued.items()
                            if q.order < picked.order and self._zero_key(q)}
        return super()._passed_over(picked, ev)


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
        assert list(fast._maybe_zero) == [k for k in fast._queued if k[1] in (None, 0)]
    assert said_fast == said_whole
    assert len(said_fast) > 20 and fast.lost == whole.lost
