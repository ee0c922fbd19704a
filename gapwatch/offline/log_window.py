"""A windowed report's prover log, read only around the window: a `--log` file's lines
(`spool_window`; the daemon's startup lines a recording holds are
`gapwatch.offline.startup_lines`').

Who calls it: `gapwatch.offline.report.parse_log_input` (`--since`/`--until`, before the whole
parse it would otherwise do). A
day's log (920 MB, ~8 M lines for 8 GPUs) takes about a minute to parse on two cores; the
events an hour's window uses are a twenty-fourth of it.

What is read of one plain file (anything else, several files or a FIFO, is parsed whole: the
same events, slower), with one parser, in order:
- the file's first `STARTUP_BYTES` (the daemon's start: TIMELINE's anchor, its workers' GPUs,
  its settings), and as much from the last start of the daemon before the window (its
  `starting cuzk engine` line, found by a byte search, not parsed; from `BACK_BYTES` before
  it: cuzk logs its memory budget and pinned pool first): a restart sets them anew;
- the `WARM_BYTES` before the window (~25 min of a busy 8-GPU log: the partitions picked up
  lately and each worker's job, as `gapwatch.offline.log_split`'s second process warms its
  parser) and the window, to `LATE_S` past its end and the report's margin.
The offsets are found by a binary search over the bytes, by the times the prover's own lines
show (parsed by a parser of their own: TIMELINE and C++ lines name no wall time). The events
are judged as a whole parse's are (`LogSpan`: those before the window dropped, the startup lines
kept). They are a whole parse's events of the lines read where the parser's state at the
window is set by those two parts, which is how a daemon's log is made; the lines not read are
counted in bytes (`log_window_skipped_bytes`), and a report without a window parses them all.
"""

from __future__ import annotations

import math
import os
import stat
from typing import Final

from gapwatch.config import Config
from gapwatch.logs.files import (
    LogFile,
    file_events,
    gzipped,
    log_counters,
    offline_parser,
    own_wall_times,
)
from gapwatch.offline import log_split
from gapwatch.offline.gap_spool import EventSpool
from gapwatch.offline.log_span import MARGIN_S, LogSpan
from gapwatch.offline.log_split import Plan, line_start, splittable, spool_planned
from gapwatch.offline.progress import LogBytes, Progress
from gapwatch.sources.time_window import (
    LATE_S,
    TimeWindow,
    median_time,
    search_bytes,
)

#: Smaller files are parsed whole (a few seconds at most).
MIN_WINDOW_BYTES: Final = 32 << 20
#: A window's part of the file this long or longer is parsed in two processes (`_in_two`).
SPLIT_BYTES: Final = 32 << 20
#: Lines read at a probe of the binary search for ones that show their wall time, and how
#: many such times it takes the median of (one line that lies cannot move the search).
PROBE_LINES: Final = 400
PROBE_TIMES: Final = 9
#: The search stops when the range is this small (a line start within it is close enough:
#: the margins above are minutes).
CLOSE_BYTES: Final = 1 << 20


def spool_window(paths: list[str], config: Config, timeline_epoch_s: float | None,
                 span: LogSpan, window: TimeWindow, progress: Progress | None = None
                 ) -> tuple[EventSpool, dict[str, int]] | None:
    """The events of the `--log` file around `window`, spooled (see the module docstring),
    and the parser's counters; None where it is parsed whole. `progress`: told how far, by the
    bytes of the parts read. Raises OSError."""
    size = _windowable(paths)
    if not size:
        return None
    path = paths[0]
    since = window.since_s - MARGIN_S - LATE_S if window.since_s is not None else None
    until = window.until_s + MARGIN_S + LATE_S if window.until_s is not None else None
    seam = _offset_of(path, config, since, size, after=False) if since is not None else 0
    end = _offset_of(path, config, until, size, after=True) if until is not None else size
    regions = _regions(path, seam, end)
    read = sum(stop - start for start, stop in regions)
    two = _in_two(path, regions, config, timeline_epoch_s, span, progress)
    spooled = two or _in_one(path, regions, config, timeline_epoch_s, span, progress)
    if size - read:
        spooled[1]["window_skipped_bytes"] = size - read
    return spooled


def _in_one(path: str, regions: list[tuple[int, int]], config: Config,
            timeline_epoch_s: float | None, span: LogSpan, progress: Progress | None
            ) -> tuple[EventSpool, dict[str, int]]:
    """The parts parsed in order in this process, each ending its own panic (one open at a
    part's end must not take the next part's lines)."""
    on_read = _PartsRead(progress, regions).at if progress is not None else None
    parser = offline_parser(config, timeline_epoch_s)
    spool = EventSpool()
    nul_bytes = cut_lines = 0
    try:
        for start, stop in regions:
            log = LogFile(path, config.logs.max_line_bytes, on_read)
            for ev in file_events(parser, log, start, stop):
                span.observe(ev)
                spool.add(ev)
            nul_bytes += log.nul_bytes
            cut_lines += log.cut_lines
    except BaseException:
        spool.close()
        raise
    return spool, log_counters(parser.counters, nul_bytes, cut_lines)


def _in_two(path: str, regions: list[tuple[int, int]], config: Config,
            timeline_epoch_s: float | None, span: LogSpan, progress: Progress | None
            ) -> tuple[EventSpool, dict[str, int]] | None:
    """The parts as `_in_one` parses them, the last one (the window, `SPLIT_BYTES` or more)
    cut in two and its second half parsed by a forked child (`log_split.spool_planned`: the
    same events, taken where the two parsers' states agree at the cut); None where it is not
    worth it or cannot be."""
    if not regions:
        return None
    first, last = regions[:-1], regions[-1]
    if last[1] - last[0] < SPLIT_BYTES or not splittable([path]):
        return None
    # This process parses the first half, the child its warm-up and the second: as even.
    mid = line_start(path, (last[0] + last[1] + log_split.WARM_BYTES) // 2)
    if not last[0] < mid < last[1]:
        return None
    # The child's warm-up is what this module reads before a window starting at the cut: the
    # daemon's start, its last restart before the cut (a restart inside the window's part
    # sets TIMELINE's anchor anew) and the `WARM_BYTES` before it.
    warm = _regions(path, mid, mid)
    plan = Plan(head=[(a, b, True) for a, b in first] + [(last[0], mid, False)], seam=mid,
                end=last[1], warm=[(a, b, i < len(warm) - 1) for i, (a, b) in enumerate(warm)])
    mine = [*first, (last[0], mid)]  # this process's parts, as the progress line counts them
    on_read = _PartsRead(progress, mine).at if progress is not None else None
    return spool_planned(path, plan, config, timeline_epoch_s, span, on_read)


class _PartsRead:
    """How far the parts are read, by their bytes together (`LogBytes`' step and words): the
    parts before the offset read, the one it is in as far as it."""

    def __init__(self, progress: Progress, regions: list[tuple[int, int]]) -> None:
        self._progress = progress
        self._regions = regions
        self._total = sum(stop - start for start, stop in regions)

    def at(self, _path: str, offset: int) -> None:
        done = sum(min(stop, max(offset, start)) - start for start, stop in self._regions)
        self._progress.step(LogBytes.STEP, done / self._total if self._total else None,
                            f"{done / 1e6:.0f} MB around the window")


def _windowable(paths: list[str]) -> int:
    """The size of the one plain file in `paths` worth reading in part, else 0 (a gzip file
    is read whole: it cannot be read from an offset)."""
    if len(paths) != 1 or gzipped(paths[0]):
        return 0
    try:
        st = os.stat(paths[0])
    except OSError:
        return 0  # the whole parse says what is wrong with it
    return st.st_size if stat.S_ISREG(st.st_mode) and st.st_size >= MIN_WINDOW_BYTES else 0


def _regions(path: str, seam: int, end: int) -> list[tuple[int, int]]:
    """The byte ranges to parse, in order: what a parser needs before `seam`
    (`log_split.warm_parts`: the daemon's start, its last restart, the warm-up), the last of
    them read on to `end`."""
    parts = log_split.warm_parts(path, seam)
    if not parts:
        return [(0, end)] if end > 0 else []
    *first, (start, _seam) = parts
    return [*first, (start, max(end, _seam))]


def _offset_of(path: str, config: Config, t_wall_s: float, size: int, after: bool) -> int:
    """The start of a line near where the file's lines reach `t_wall_s`: before them, or
    (`after`) past them, as far as the lines' own times tell. A probe that shows none moves
    either search outwards: it counts as later for the start (read from earlier) and as
    earlier for the end (read on). Counted later for the end as well, a log whose lines show
    no time (cuzk's stderr alone) was read to its first MB and the window's lines missed."""
    def time_at(at: int) -> float | None:
        t = _time_at(path, config, at)
        return -math.inf if t is None and after else t

    lo, hi = search_bytes(0, size, time_at, t_wall_s, CLOSE_BYTES)
    return line_start(path, hi if after else lo)


def _time_at(path: str, config: Config, at: int) -> float | None:
    """The median of the first `PROBE_TIMES` wall times the lines from byte `at` show of
    themselves (within `PROBE_LINES` lines), or None."""
    return median_time(own_wall_times(path, config, start=line_start(path, at),
                                      lines=PROBE_LINES, most=PROBE_TIMES))
