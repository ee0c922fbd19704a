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
(`GPU_PICKUP`) was replaced: said once, naming it, with how long it had waited. Only an item of
the same stream (`LogEvent.stream`) is: each daemon writes its TIMELINE lines to its own stderr,
and two daemons' queues are two maps (a PoSt-only cuzk beside a PoRep one, their logs followed
from their end with no start line read to tell them apart, `gapwatch.cuzk.daemons`: the PoSt
daemon's WinningPoSt picked up said the PoRep daemon's queued one lost).

A line that names a partition gapwatch cannot read (`partition=99999999999999999999`, `=abc`)
never comes here: the parser gives no event of it (`log_lines.partition_of`), so it is no
monolithic item, which the next pickup said LOST.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from gapwatch.core import fmt
from gapwatch.core.models import LogEvent, ProverEvent
from gapwatch.cuzk.log_lines import PIPELINE_SEQ_MESSAGE

SEQ_MESSAGE = PIPELINE_SEQ_MESSAGE
#: Items followed at once (a partitioned job queues 10 partitions; jobs beyond are forgotten
#: oldest first, never said lost).
MAX_QUEUED = 4096


@dataclass(slots=True)
class _Queued:
    job: str
    partition: int | None
    t_s: float
    #: The stream its GPU_QUEUE line was read in (its daemon's stderr).
    stream: str
    #: When it was queued (its latest GPU_QUEUE), and when its key was first (its place in
    #: the queue's order: a key queued again keeps it), in pushes since the watch began.
    order: int
    first: int


class GpuQueueWatch:
    """Follows GPU_QUEUE and GPU_PICKUP; `feed` returns the items cuzk lost."""

    def __init__(self) -> None:
        self._queued: OrderedDict[tuple[str, int | None], _Queued] = OrderedDict()
        #: The queued monolithic items (key (0, 0) always), oldest push first: a pickup looks
        #: through these from the oldest while they were pushed before it, and at the `job_seq`
        #: 0 job's partition 0, never the whole queue. Items never picked up stay queued until
        #: `MAX_QUEUED` pushes them out (the test hour of 8 GPUs leaves 181, a day thousands,
        #: partitions 0 of other jobs among them): looked through at each of a day's ~450,000
        #: pickups, 4,095 such cost 0.7 ms a pickup (a hostile log of a million lines: minutes
        #: of the sampler's lock live, of a report offline).
        self._monolithic: OrderedDict[tuple[str, int | None], _Queued] = OrderedDict()
        #: The job with `job_seq` 0 in this run (its partition 0 shares the key (0, 0)).
        self._seq0_job: str | None = None
        self._order = 0
        self.lost = 0

    def restart(self) -> None:
        """A new run: its queue is empty and `job_seq` counts from 0 again."""
        self._queued.clear()
        self._monolithic.clear()
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
            self._queue(key, ev)
            return []
        if ev.name != "GPU_PICKUP":
            return []
        picked = self._queued.pop(key, None)
        if picked is None:
            return []
        self._monolithic.pop(key, None)
        return self._passed_over(picked, ev)

    def _queue(self, key: tuple[str, int | None], ev: LogEvent) -> None:
        """A GPU_QUEUE line: the item queued now, a key queued again keeping its place in the
        queue (its first push), a monolithic one moved to the latest push."""
        assert ev.job_id is not None
        self._order += 1
        before = self._queued.get(key)
        first = before.first if before is not None else self._order
        item = self._queued[key] = _Queued(ev.job_id, ev.partition, ev.t_wall_s, ev.stream,
                                           self._order, first)
        if ev.partition is None:
            self._monolithic[key] = item
            self._monolithic.move_to_end(key)
        while len(self._queued) > MAX_QUEUED:
            oldest, _ = self._queued.popitem(last=False)
            self._monolithic.pop(oldest, None)

    def _pushed_before(self, picked: _Queued) -> list[_Queued]:
        """The items with the key (0, 0) pushed before `picked`, in the queue's order: the
        monolithic ones (the oldest pushes first, up to `picked`'s) and the `job_seq` 0 job's
        partition 0 (known by the pickup's time: its line may come after its GPU_QUEUE)."""
        out = []
        for q in self._monolithic.values():
            if q.order >= picked.order:
                break
            if q.stream == picked.stream:
                out.append(q)
        seq0 = self._queued.get((self._seq0_job, 0)) if self._seq0_job is not None else None
        if seq0 is not None and seq0.order < picked.order and seq0.stream == picked.stream:
            out.append(seq0)
        return sorted(out, key=lambda q: q.first)

    def _passed_over(self, picked: _Queued, ev: LogEvent) -> list[ProverEvent]:
        lost = self._pushed_before(picked)
        out: list[ProverEvent] = []
        for q in lost:
            del self._queued[(q.job, q.partition)]
            self._monolithic.pop((q.job, q.partition), None)
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
