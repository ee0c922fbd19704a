"""A GPU_PICKUP looks only through the jobs queued, not every queued partition
(`gapwatch.cuzk.pipeline.DaemonRun.parts_queued`): over random streams of GPU_QUEUE, GPU_PICKUP,
`job_seq` lines, restarts and a queue past `HISTORY`, the partitions it lets go are those the
whole-queue rule (every queued partition asked whether it comes before the one picked) lets go,
step by step."""

from __future__ import annotations

import random

import pytest

from gapwatch.cuzk import pipeline
from gapwatch.cuzk.pipeline import QUEUE_RACE_S, DaemonRun


class WholeQueue(DaemonRun):
    """The rule as first written: every queued partition asked on each pickup."""

    __slots__ = ()

    def picked(self, key: tuple[str, int], t_s: float) -> float | None:
        queued_s = self.queued.pop(key, None)
        stale = [k for k, q in self.queued.items()
                 if q < t_s - QUEUE_RACE_S and self._before_picked(k, key)]
        for k in stale:
            del self.queued[k]
        return queued_s

    def queue(self, key: tuple[str, int], t_s: float) -> None:
        self.queued[key] = t_s
        self.queued.move_to_end(key)
        if len(self.queued) > pipeline.HISTORY:
            self.queued.popitem(last=False)

    def forget_before(self, t_s: float) -> None:
        for key in [k for k, q in self.queued.items() if q <= t_s]:
            del self.queued[key]
        for job in [j for j, (_, read_s) in self.job_seqs.items() if read_s <= t_s]:
            del self.job_seqs[job]

    def _before_picked(self, key: tuple[str, int], picked: tuple[str, int]) -> bool:
        if key[0] == picked[0]:
            return key[1] < picked[1]
        mine, theirs = self.job_seqs.get(key[0]), self.job_seqs.get(picked[0])
        return mine is not None and theirs is not None and mine[0] < theirs[0]


def _play(run: DaemonRun, steps: list[tuple[str, str, int, float]]
          ) -> list[tuple[float | None, list[tuple[tuple[str, int], float]]]]:
    """Each step's queue after it, with what each pickup answered."""
    seen = []
    for what, job, n, t in steps:
        answer = None
        if what == "queue":
            run.queue((job, n), t)
        elif what == "pickup":
            answer = run.picked((job, n), t)
        elif what == "seq":
            run.sequenced(job, n, t)
        else:
            run.forget_before(t)
        seen.append((answer, sorted(run.queued.items())))
    return seen


def _steps(rng: random.Random, n: int) -> list[tuple[str, str, int, float]]:
    t, out = 0.0, []
    for _ in range(n):
        t += rng.choice((0.0, 0.01, 0.05, 0.2, 1.0))
        what = rng.choices(("queue", "pickup", "seq", "restart"), (10, 8, 2, 0.05))[0]
        out.append((what, f"job-{rng.randrange(12)}",
                    rng.randrange(10) if what != "seq" else rng.randrange(20), t))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_a_pickup_lets_go_of_the_partitions_the_whole_queue_rule_lets_go(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "HISTORY", 24)  # the queue's bound reached often
    steps = _steps(random.Random(seed), 3000)
    assert _play(DaemonRun(), steps) == _play(WholeQueue(), steps)


def test_a_pickup_of_a_later_job_lets_go_of_an_earlier_jobs_partition_left_queued() -> None:
    run = DaemonRun()
    run.sequenced("early", 0, 0.0)
    run.sequenced("late", 1, 0.0)
    run.queue(("early", 3), 1.0)
    run.queue(("late", 0), 1.5)
    run.queue(("late", 1), 1.6)
    assert run.picked(("late", 0), 3.0) == 1.5
    assert list(run.queued) == [("late", 1)]  # early's 3 was popped first: its pickup unread
    assert run.parts_queued == {"late": {1}}
