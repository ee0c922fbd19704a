"""A long offline command's progress: which step it is at, how far, how long it has taken and
about how long the step has left, as one line that the caller shows in place.

Who calls it: `gapwatch report`, `export` and `compare` (`gapwatch.commands.report`, `.export`
and `.compare` make one when their stderr is a terminal, one for each side of a comparison,
and show its lines through `gapwatch.engine.console.Console.show`; the export also follows its
own pass over the samples and the trace's writing); `build_report` (and `compare.read_side`)
hands it to the steps that take the time: the `--log` files' parse (`spool_logs`, the parent's
part of `gapwatch.offline.log_split`: how far into the file, by bytes) and the detection
(`gapwatch.offline.report.detect`, or this process's worker of a split report in
`gapwatch.offline.report_parallel`: how far into the recording, by the time of its data; the
split report then says its wait for the other workers and the numbering of their gaps). A
day of 8 GPUs with its log takes minutes on a 2-core box (docs/benchmarks.md, issue 29), and
a command silent for minutes reads as hung.

The steps call `step` as often as they like (each a few times a second at most: every
64 Ki records, every MiB of log); this module decides what is shown: nothing in the first
`after_s` (a quick report never flickers), then a line at most every `every_s`, and at once
when the step changes. It writes nothing itself and reads no terminal: the line goes to the
`show` it was given. Time left is the step's own (the pace since it was first told, applied to
what is left of it), said once it has moved `MIN_FRACTION` and run `MIN_STEP_S`: the steps run
at different speeds, so a whole-command estimate would be a guess.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Final, TypeVar

from gapwatch.core import fmt
from gapwatch.core.bounds import wall_s_ok

#: Records read between two looks at the detection's progress (a day of 8 GPUs: ~120 looks).
EVERY_RECORDS: Final = 1 << 16
#: A step must have moved this far before its time left is estimated.
MIN_FRACTION: Final = 0.02
#: ... and have run this long.
MIN_STEP_S: Final = 2.0


def minutes(seconds: float) -> str:
    """M:SS (H:MM:SS past an hour) of a non-negative duration."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    mins, secs = divmod(rest, 60)
    return f"{hours}:{mins:02d}:{secs:02d}" if hours else f"{mins}:{secs:02d}"


class Progress:
    """Progress lines for one command: `step(...)` from the work, `show` gets the line."""

    def __init__(self, show: Callable[[str], object], name: str, *,
                 clock: Callable[[], float] = time.monotonic,
                 after_s: float = 1.0, every_s: float = 0.5) -> None:
        self._show = show
        self._name = name
        self._clock = clock
        self._start = clock()
        self._quiet_until = self._start + after_s
        self._every = every_s
        self._next = self._quiet_until
        self._step: str | None = None
        self._step_start = self._start
        #: How far the step was when first told (its time left is scaled from there on).
        self._step_from = 0.0

    def step(self, step: str, fraction: float | None = None, detail: str = "") -> None:
        """The work is at `step`, `fraction` of it done (None: unknown), `detail` beside it."""
        now = self._clock()
        changed = step != self._step
        if changed:
            self._step, self._step_start = step, now
            self._step_from = _usable(fraction) or 0.0
        if now < self._quiet_until or (now < self._next and not changed):
            return
        self._next = now + self._every
        self._show(self.line(step, fraction, detail, now))

    def line(self, step: str, fraction: float | None, detail: str, now: float) -> str:
        """The line for `step` at `now`."""
        text = f"{self._name}: {step}"
        f = _usable(fraction)
        if f is not None:
            text += f" {f * 100:.0f} %"
        if detail:
            text += f" ({detail})"
        text += f" · {minutes(now - self._start)} so far"
        step_s = now - self._step_start
        done = f - self._step_from if f is not None else 0.0
        if f is not None and done >= MIN_FRACTION and step_s >= MIN_STEP_S:
            text += f", ~{minutes(math.ceil(step_s * (1.0 - f) / done))} left"
        return text


def tell(progress: Progress | None, step: str) -> None:
    """`progress.step(step)` where there is a progress line (a step of no known length)."""
    if progress is not None:
        progress.step(step)


def _usable(fraction: float | None) -> float | None:
    """`fraction` held to 0..1, or None (unknown, NaN, infinite)."""
    if fraction is None or not math.isfinite(fraction):
        return None
    return min(max(fraction, 0.0), 1.0)


class LogBytes:
    """How far the parse of `--log` files is, by bytes: `at(path, offset)` as a file is read
    (its offset in that file), shown against the bytes of all the files (regular files' sizes;
    a stream's is unknown: no fraction then). The files count in the order they are read,
    whatever order they were given in (`logs.files.read_order`)."""

    STEP: Final = "parsing the log"

    def __init__(self, progress: Progress, paths: list[str], end: int | None = None) -> None:
        """`end`: only the first file's first `end` bytes are parsed here (a split parse's
        part, `gapwatch.offline.log_split`)."""
        self._progress = progress
        self._sizes = {path: _size(path) for path in paths}
        sizes = list(self._sizes.values())
        self._total = end if end is not None else (
            None if None in sizes else sum(s for s in sizes if s is not None))
        #: The file being read and the bytes of the files read before it.
        self._reading: str | None = None
        self._before = 0

    def at(self, path: str, offset: int) -> None:
        if path != self._reading:
            if self._reading is not None:
                self._before += self._sizes.get(self._reading) or 0
            self._reading = path
        total = self._total
        done = self._before + offset
        self._progress.step(self.STEP, done / total if total else None,
                            f"{done / 1e6:.0f} MB")


class DataTime:
    """How far a pass over the recording is (the detection's, by default), by the time of the
    data read: `at(t_wall_s)` against the recording's first and last times
    (`gapwatch.sources.files.data_span`: None where the end is not known, e.g. a trace CSV:
    the time alone is said then)."""

    STEP: Final = "finding gaps"

    def __init__(self, progress: Progress, span: tuple[float, float] | None,
                 step: str = STEP) -> None:
        self._progress = progress
        self._span = span
        self._step = step

    def at(self, t_wall_s: float) -> None:
        span = self._span
        fraction = (t_wall_s - span[0]) / (span[1] - span[0]) if span is not None else None
        detail = f"data at {fmt.clock(t_wall_s)}" if wall_s_ok(t_wall_s) else ""
        self._progress.step(self._step, fraction, detail)

    def saw(self, record: object) -> None:
        """`at` the time of `record`, when it has one (a log event, a sample: not every
        record a reader gives is timed)."""
        t = getattr(record, "t_wall_s", None)
        if isinstance(t, float):
            self.at(t)


R = TypeVar("R")


def progress_of(records: Iterable[R], where: DataTime) -> Iterator[R]:
    """`records` as they are, `where` told the time of every `EVERY_RECORDS`th one that has
    one (the one-process detection; a split report's worker 0 looks where it already counts
    its lines: `gapwatch.offline.report_parallel`)."""
    left = EVERY_RECORDS
    for r in records:
        yield r
        left -= 1
        if not left:
            left = EVERY_RECORDS
            where.saw(r)


def _size(path: str) -> int | None:
    p = Path(path)
    try:
        return p.stat().st_size if p.is_file() else None
    except OSError:
        return None
