"""An isolated absurd time in a recording is a bad record, not a cliff.

Who calls it: `gapwatch.sources.recording.read_recording` (so every reader: `report` in one
process and split, `export`, replay, segments of a set), over the validated records.

Why: the detector drops samples older than the latest it has seen (they are out of order). One
GPU sample an hour ahead, or with `t_mono_ns` 2^63-1 (in bounds, so the codec takes it), made
every later sample of its GPU "out of order": 89 % of the data after it was dropped. Here a
sample whose data time (`t_mono_ns`, what the detector orders by) steps more than
`ABSURD_STEP_NS` ahead of the previous sample of its GPU (or of the host sampler) is held, with
the records after it, until the next sample of that GPU comes: if that one goes on from before
the step, the step was one bad record (dropped, counted `bad_records`, said with its line); if
it goes on from the step (a box suspended for an hour, files joined), the step was real and
everything is handed on as read. Order is kept; at most `MAX_HELD` records are held (a GPU that
never speaks again releases them as they were). Honest input passes through untouched.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Final, Protocol

from gapwatch.core.models import GpuSample, HostSample, Record

#: A step of data time beyond this makes a sample suspect (a wall time alone out of step is a
#: clock jump, which the detector cuts at: a hole, not a cliff).
#: The replay's pacing treats steps over 10 s as jumps too (`engine.replay.MAX_PACED_STEP_S`).
ABSURD_STEP_NS: Final = 10 * 10**9
#: Records held at most while the next sample of a suspect's GPU is awaited.
MAX_HELD: Final = 20_000
#: The host sampler's key among the GPUs' indices.
_HOST: Final = -1


class _Reading(Protocol):
    """What the filter needs of the recording being read (`recording.Recording`)."""

    line_no: int

    def problem(self, counter: str, message: str, line_no: int = 0) -> None: ...

    @property
    def path(self) -> object: ...


def _key(r: Record) -> int | None:
    if type(r) is GpuSample:
        return r.gpu
    if type(r) is HostSample:
        return _HOST
    return None


def without_isolated_times(records: Iterator[Record], rec: _Reading) -> Iterator[Record]:
    """`records` without the samples whose time is absurd and isolated (see the module).
    Keeps `rec.line_no` at the line of the record handed out."""
    return _Filter(rec).run(records)


class _Filter:
    """The last kept time of each GPU (and the host), and the records held meanwhile."""

    def __init__(self, rec: _Reading) -> None:
        self.rec = rec
        self.last_mono: dict[int, int] = {}
        #: Read (with their lines), held, and not yet handed out.
        self.todo: deque[tuple[Record, int]] = deque()

    def run(self, records: Iterator[Record]) -> Iterator[Record]:
        """The hot loop (every record of a report): a type test and a step test per sample."""
        gpu_type, host_type, step = GpuSample, HostSample, ABSURD_STEP_NS
        last_mono = self.last_mono
        key: int
        for r in records:
            if type(r) is gpu_type:
                key = r.gpu
            elif type(r) is host_type:
                key = _HOST
            else:
                yield r
                continue
            mono_ns = r.t_mono_ns
            if mono_ns - last_mono.get(key, mono_ns) > step:
                self.todo.append((r, self.rec.line_no))
                yield from self._held(records)
                continue
            last_mono[key] = mono_ns
            yield r

    def _pull(self, records: Iterator[Record]) -> tuple[Record, int] | None:
        if self.todo:
            return self.todo.popleft()
        r = next(records, None)
        return None if r is None else (r, self.rec.line_no)

    def _held(self, records: Iterator[Record]) -> Iterator[Record]:
        """From a suspect sample on, until nothing is held: each suspect waits for the next
        sample of its GPU, which says whether it was one bad record or a real step."""
        rec = self.rec
        while self.todo:
            item = self._pull(records)
            assert item is not None
            r, line = item
            key = _key(r)
            if key is not None:
                assert isinstance(r, GpuSample | HostSample)
                mono = self.last_mono.get(key)
                if mono is not None and r.t_mono_ns - mono > ABSURD_STEP_NS:
                    held, after = _hold(lambda: self._pull(records), key)
                    self.todo.extendleft(reversed(held))
                    if after is not None and after.t_mono_ns - mono <= ABSURD_STEP_NS:
                        rec.problem("bad_records", _isolated(rec, line, r, mono), line)
                        continue
                self.last_mono[key] = r.t_mono_ns
            rec.line_no = line
            yield r


def _isolated(rec: _Reading, line: int, r: GpuSample | HostSample, mono_ns: int) -> str:
    return (f"{rec.path}:{line}: bad record (an absurd time: t_mono_ns {r.t_mono_ns}, "
            f"{(r.t_mono_ns - mono_ns) / 1e9:+.4g} s from the sample of its GPU before it, and "
            "the next goes on from before it)")


def _hold(pull: Callable[[], tuple[Record, int] | None], key: int
          ) -> tuple[list[tuple[Record, int]], GpuSample | HostSample | None]:
    """Records read up to and including the next sample of `key` (that sample too, or None when
    it did not come within `MAX_HELD` records or before the end)."""
    held: list[tuple[Record, int]] = []
    while len(held) < MAX_HELD and (item := pull()) is not None:
        held.append(item)
        if _key(item[0]) == key:
            nxt = item[0]
            assert isinstance(nxt, GpuSample | HostSample)
            return held, nxt
    return held, None
