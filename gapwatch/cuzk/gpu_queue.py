"""A job queued for cuzk's GPU and never picked up while later ones are: cuzk lost it.

Who calls it: `gapwatch.cuzk.watch.CuzkWatch` (every TIMELINE event, live and offline). Pure.

Why it can happen (curio e0294b0f, code, not yet observed; cuzk-upstream-paths.md 4.5):
`PriorityWorkQueue::push` does `map.insert((job_seq, partition_idx), item)` (engine.rs:53-58),
which replaces an entry with the same key. Every monolithic job (PoSt, batches) is pushed with
key (0, 0) (engine.rs:2851), and so is partition 0 of the first partitioned job after a start
(`job_seq` 0, engine.rs:1431, 2295). Two such items in the queue at once and the older one is
gone without a line; its caller (Curio) waits until its ProveTimeout (30 min by default).

The rule: (0, 0) is the smallest key, so a pop always returns it while it is in the queue. An
item queued with that key (TIMELINE `GPU_QUEUE ... monolithic`, or `partition=0` of the run's
job with `job_seq=0`) that is still waiting when an item queued after it is picked up
(`GPU_PICKUP`) was replaced: said once, naming it, with how long it had waited.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from gapwatch.core import fmt
from gapwatch.core.models import LogEvent, ProverEvent

SEQ_MESSAGE = "assigned pipeline sequence number"
#: Items followed at once (a partitioned job queues 10 partitions; jobs beyond are forgotten
#: oldest first, never said lost).
MAX_QUEUED = 4096


@dataclass(slots=True)
class _Queued:
    job: str
    partition: int | None
    t_s: float
    order: int


def _may_be_zero_key(partition: int | None) -> bool:
    """Whether an item queued with this partition can ever have the key (0, 0) (`_zero_key`
    says whether it has it, once the run's `job_seq` 0 job is known)."""
    return partition is None or partition == 0


class GpuQueueWatch:
    """Follows GPU_QUEUE and GPU_PICKUP; `feed` returns the items cuzk lost."""

    def __init__(self) -> None:
        self._queued: OrderedDict[tuple[str, int | None], _Queued] = OrderedDict()
        #: The queued items that may have the key (0, 0) (`_may_be_zero_key`), in the order
        #: `_queued` holds them: a pickup looks through these, not the whole queue. Items
        #: never picked up stay queued until `MAX_QUEUED` pushes them out (the test hour of 8
        #: GPUs leaves 181, a day thousands); at ~0.2 us an item (a microbenchmark of 2000)
        #: the whole-queue look cost seconds per hour of log by a day's end, 19,000 pickups
        #: an hour.
        self._maybe_zero: dict[tuple[str, int | None], _Queued] = {}
        #: The job with `job_seq` 0 in this run (its partition 0 shares the key (0, 0)).
        self._seq0_job: str | None = None
        self._order = 0
        self.lost = 0

    def restart(self) -> None:
        """A new run: its queue is empty and `job_seq` counts from 0 again."""
        self._queued.clear()
        self._maybe_zero.clear()
        self._seq0_job = None

    def feed(self, ev: LogEvent) -> list[ProverEvent]:
        if ev.kind == "tracing" and ev.name == SEQ_MESSAGE and ev.job_id is not None \
                and ev.fields.get("job_seq") == 0:
            self._seq0_job = ev.job_id
            return []
        if ev.kind != "timeline" or ev.job_id is None:
            return []
        key = (ev.job_id, ev.partition)
        if ev.name == "GPU_QUEUE":
            self._order += 1
            item = self._queued[key] = _Queued(ev.job_id, ev.partition, ev.t_wall_s,
                                               self._order)
            if _may_be_zero_key(ev.partition):
                # A key queued again keeps its place in both (dicts keep the first insertion).
                self._maybe_zero[key] = item
            while len(self._queued) > MAX_QUEUED:
                oldest, _ = self._queued.popitem(last=False)
                self._maybe_zero.pop(oldest, None)
            return []
        if ev.name != "GPU_PICKUP":
            return []
        picked = self._queued.pop(key, None)
        if picked is None:
            return []
        self._maybe_zero.pop(key, None)
        return self._passed_over(picked, ev)

    def _zero_key(self, q: _Queued) -> bool:
        return q.partition is None or (q.partition == 0 and q.job == self._seq0_job)

    def _passed_over(self, picked: _Queued, ev: LogEvent) -> list[ProverEvent]:
        lost = [q for q in self._maybe_zero.values()
                if q.order < picked.order and self._zero_key(q)]
        out: list[ProverEvent] = []
        for q in lost:
            del self._queued[(q.job, q.partition)]
            del self._maybe_zero[(q.job, q.partition)]
            self.lost += 1
            what = "monolithic job" if q.partition is None else "partition 0 of"
            message = fmt.visible(
                f"{what} {q.job} was queued for the GPU at {fmt.clock(q.t_s, millis=True)} and "
                f"never picked up, while {picked.job}"
                + (f" partition {picked.partition}" if picked.partition is not None else "")
                + f", queued after it, was ({ev.t_wall_s - q.t_s:.1f} s later): cuzk's GPU "
                "queue keys both (0,0) and the later push replaced it (engine.rs:53-58, 2851); "
                "its caller waits until Curio's ProveTimeout (30 min by default)")
            out.append(ProverEvent(t_wall_s=ev.t_wall_s, kind="lost_job", level="error",
                                   message=message, job_id=q.job, gpu=ev.gpu,
                                   start_s=q.t_s, end_s=ev.t_wall_s))
        return out
