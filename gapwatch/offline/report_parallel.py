"""Parallel `gapwatch report`: the GPUs of one large recording split across processes.

Who calls it: `gapwatch.offline.report.build_report` only (`plan_workers` decides, `detect_parallel`
runs). A 24 h, 8-GPU, 10 Hz recording is ~7.8 M lines; reading and detecting them in one
process takes ~45 s on a 2-core test machine, past the 30 s goal, and the work splits cleanly
by GPU (figures in docs/benchmarks.md).

This module splits the work; it does not re-implement reading or detection. Each worker reads
the file, or the set of segments (a folder or glob: `gapwatch.sources.recording_set`, each
file read alike, problems numbered in reading order), with the ordinary reader
(`gapwatch.sources.files.read_any`, told to pass
over the other workers' GPU-sample lines undecoded) and runs the ordinary detection loop
(`gapwatch.offline.detect.detect_records`) over what is left. Why the merged result equals the
one-process one, value for value:
- `GapDetector` keeps one independent state machine per GPU; each worker feeds its GPUs'
  samples in file order and *every* host sample (the host evidence a gap gathers depends only
  on host samples and the gap's own times).
- A worker passes over the lines of other workers' GPUs before any JSON parsing when they start
  as the codec writes them (`gapwatch.core.codec.gpu_line_prefix`), or as recordings written
  before it had them (`gpu_line_prefix_type_last`, with the line's end); that is only a shortcut.
  Every line that does not start so (a hand-made line, one written in another key order) is
  decoded by every worker, and each keeps only the samples of its own GPUs; a GPU missing from
  the header belongs to worker `gpu % n`.
- Gap ids count up across all GPUs in data order: workers report the line at which each of
  their ids was assigned (`GapDetector.on_gap_id`) and the parent gives each gap its id in
  that one sequence. A forked worker's gap spool writes its runs to a file the parent made
  for it (`_Job.gap_files`): the parent adopts them into its own spool, which gives each gap
  out with its new id as it is read (`GapSpool.number`; the order needs no change: no two
  workers share a GPU, and a worker's ids keep their order). A spawned worker sends its gaps
  over its pipe instead, renumbered by the parent into a new spool (in their encoded bytes:
  `gap_spool.renumbered`). Each worker counts its own GPUs' gaps by GPU and
  kind as one process counts them (`Detected.gap_tally`), so the tallies are put together as
  they are. States come out in one canonical order (data time, then GPU) in both paths.
- A problem line read by several workers (a bad non-GPU line) is counted once: problems carry
  their line numbers and the parent merges them by line.
- A GPU gone silent while the other inputs go on is judged by the host's samples, which every
  worker reads (`GapDetector._judge_silence`): its verdict depends on its own samples and the
  host's, not on the other GPUs' lines, so a worker places NO_DATA (and breakdown periods) as
  one process does however unevenly the GPUs' data broke apart. An input without host samples
  (or with none for a second while GPUs went on) times silence by the GPUs' own samples
  (`GapDetector.on_gpu_clock`): a worker gives up there, at once, and the report is read in
  one process; so does one whose GPUs' samples time the end of the data, outlasting the
  host's by more than a second (found only at its end: that costs the split's whole pass).

Log events (recorded, and the `--log` files') and the prover's `/status` snapshots are fed to
*every* worker, at the same places among its records as one process feeds them: the evidence
buffer keeps each GPU's recently closed gaps on their own (`gapwatch.core.evidence`), and
everything else an event touches (the prover's facts, the recent events and warnings) is the
same in every worker, so a worker's gaps get the evidence one process gives them.
- The `--log` files are parsed once, by the parent (a large file with a forked helper:
  `gapwatch.offline.log_split`), into their sorted spool before the workers start
  (`LogInput`); every worker reads that spool (forked: they share its files, read at their
  own offsets).
- One process feeds each `--log` event just before the first GPU sample (of any GPU) at or
  after its time. A worker reads the wall time of the other workers' sample lines it passes
  over (from the text, without decoding them: `recording.PassedOver`) while an event waits, so
  it feeds the event at the same place. A line whose time cannot be read so is a bad record
  for the worker that decodes it; a split report with logs that has any bad record runs in one
  process (the bad line is not a sample there, but was a time here).
- The events left after the last sample are judged against the end of *all* GPUs' data
  (`LogSpan.after_end`): the workers tell this process their end before it feeds them.
- What is made of the events beside the gaps (the partition timeline, the prover's watcher,
  the prover's facts and lacks, the notes on the `--log` files, the snapshots) is this
  process's alone: the other workers do not build it (with `--log` files this process takes
  one GPU fewer for it: `_owners`).
The copy trace's copies go to the worker of their GPU (those of no watched GPU to this
process): each GPU's copy evidence depends on its own copies only (`gapwatch.core.evidence`
keeps the recent copies by GPU), and the copy table's groups are each one GPU's. Each worker
sums its copies (`gapwatch.offline.copy_sums.CopySums`) and hands over its groups' rows and its
pageable (and, for `compare`, host-to-device) copies' runs, written to a file this process made
for it; this process takes them in (`CopySums.take`) and reads the pageable ones with its own
for each gap's pageable time. /proc readings and link states, per GPU in the detector, go to
every worker (the prover's watcher in this process reads every /proc reading: a new pid is a
restart). Until now any of these sent the report to one process, and every recording `record
--source nvml` writes has link states (and /proc readings once the prover runs).

The report runs in one process (`detect_parallel` returns None) when the workers cannot be
forked with `--log` files, or a window with the log its recording holds around it
(`log_around.LogAround`): their spools are not handed to a spawned process. Trace CSVs,
recordings under `MIN_PARALLEL_BYTES` of JSON (a set: its files summed)
and single-GPU recordings take the one-process path too (`plan_workers`), as does a machine
with one usable CPU. A gzip recording is large by the JSON it holds, not its size on disk:
each worker decompresses it whole, in parallel, as each reads a plain file whole (inflated in
large chunks, `gapwatch.sources.gzip_lines`: the report of a .gz takes about 1.1x the plain
file's, docs/benchmarks.md). A worker that
fails for any reason also sends the report to the one-process path, which then reports the
problem as usual.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import os
import signal
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from itertools import chain
from multiprocessing import get_context
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from multiprocessing.synchronize import Event as StopEvent
from operator import attrgetter
from pathlib import Path
from typing import IO, Any

from msgspec.structs import replace

from gapwatch.base.quit_early import STOP_SIGNALS, stop_signals_deferred
from gapwatch.base.writer_lock import locked_by_another
from gapwatch.config import Config
from gapwatch.core.blind import Bye
from gapwatch.core.chaining import ChainingFigure
from gapwatch.core.codec import gpu_line_prefix, gpu_line_prefix_type_last
from gapwatch.core.detector import COUNTER_NAMES
from gapwatch.core.health import HealthStats
from gapwatch.core.ledger import Tally
from gapwatch.core.models import (
    BlindSpot,
    CopyRecord,
    Gap,
    GpuSample,
    HardwareEvent,
    Record,
    SessionHeader,
    StateChange,
)
from gapwatch.core.track import GpuTotals
from gapwatch.core.util_figure import UtilFigure
from gapwatch.cuzk.pipeline import PipelineView
from gapwatch.cuzk.prover import CuzkProver
from gapwatch.cuzk.watch import watch_beside
from gapwatch.offline.copy_sums import CopyPart, CopySums
from gapwatch.offline.detect import (
    Detected,
    LogInput,
    RunListener,
    detect_records,
    sort_states,
)
from gapwatch.offline.gap_spool import GapSpool, encode_gap, gap_key, renumbered
from gapwatch.offline.log_around import LogAround
from gapwatch.offline.progress import DataTime, Progress, tell
from gapwatch.offline.prover_events import ProverEvents
from gapwatch.sources.files import data_span, header_of, json_bytes_of, read_any
from gapwatch.sources.recording import MAX_PROBLEMS, Reading, Recording, WakeAt
from gapwatch.sources.recording_set import is_set, set_files
from gapwatch.sources.time_window import TimeWindow
from gapwatch.sources.trace_csv import is_trace_csv

#: Smaller recordings are read in one process: starting workers costs ~0.1-0.5 s, and each
#: worker costs ~0.68 of one process in CPU (it reads every line and every host sample): on a
#: shared 2-core box two processes were 1.3-1.4x slower than one from 7.8 MB to 46.8 MB
#: (`python bench/report_split.py`, docs/benchmarks.md "Part D").
MIN_PARALLEL_BYTES = 50_000_000
#: A worker that meets more problem lines than this sends the report to one process (which
#: keeps only counts): merging them by line would cost memory for nothing.
MAX_PROBLEM_LINES = 100_000
#: Gaps a worker sends over its pipe at a time (a few MB pickled).
GAP_CHUNK = 2048
#: Workers look for a stop request (another worker gave up) every this many lines.
_STOP_CHECK_LINES = 1 << 16

_state_row = attrgetter(*StateChange.__struct_fields__)


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def plan_workers(path: str | Path, log_paths: list[str]) -> int:
    """How many processes `build_report` should use for `path`: 1 unless the file is a large
    recording with several GPUs and there are several CPUs (and, with `--log` files, workers
    can be forked: `can_share_logs`). Large means its JSON (`recording.json_bytes`: a gzip
    file counts for what it holds, not what it takes on disk)."""
    p = Path(path)
    if (log_paths and not can_share_logs()) or is_trace_csv(p):
        return 1
    try:
        if json_bytes_of(p) < MIN_PARALLEL_BYTES or _being_written(p):
            return 1
        header = header_of(p)
    except Exception:  # noqa: BLE001 - the one-process path reports the problem properly
        return 1
    return max(1, min(usable_cpus(), len(header.gpus)))


def _being_written(p: Path) -> bool:
    """Whether a `record` is still writing the file (or a file of the set): read in one
    process, to where it stands once, as the report then says (`still_written`); each worker
    would read it to wherever it stood when that worker got there."""
    files = set_files(p).files if is_set(p) else [p]
    return any(locked_by_another(f) for f in files)


def can_share_logs() -> bool:
    """Whether workers can read the parent's `--log` spool: forked (it holds open temporary
    files), which is safe only while this process has one thread."""
    return hasattr(os, "fork") and threading.active_count() == 1


class _OneProcess(Exception):
    """This input must be read in one process (the message says why)."""


@dataclass
class _Part:
    """What one worker found, in plain rows (they pickle faster than records)."""

    #: Why the report must run in one process instead, or None.
    abort: str | None = None
    gap_id_lines: list[int] = field(default_factory=list)
    #: The worker's closed gaps by (GPU, kind), as its detection counted them.
    gap_tally: dict[tuple[int, str], Tally] = field(default_factory=dict)
    #: Final versions of the worker's closed gaps, with its own ids, in start order: worker
    #: 0's (this process) as its spool; the others' runs in their `_Job.gap_files` file
    #: (`gap_runs`), or, spawned, following their part over the pipe encoded
    #: (`GapSpool.encoded`), `GAP_CHUNK` at a time.
    gaps: Iterable[Gap] = field(default_factory=list)
    #: A forked worker's gaps: where their runs are in its file. And how many gaps it sends.
    gap_runs: list[tuple[int, int]] | None = None
    gap_count: int = 0
    state_rows: list[tuple[Any, ...]] = field(default_factory=list)
    totals: list[GpuTotals] = field(default_factory=list)
    detector_counters: dict[str, int] = field(default_factory=dict)
    problem_lines: list[tuple[int, str, str]] = field(default_factory=list)
    #: Blind spots and BYEs (every worker reads them all; worker 0's are kept).
    blind_spots: list[BlindSpot] = field(default_factory=list)
    byes: list[Bye] = field(default_factory=list)
    #: Health and GPU errors (every worker reads them all; worker 0's are kept); the chaining
    #: figure of the worker's own GPUs.
    health: dict[int, HealthStats] = field(default_factory=dict)
    hw_events: list[HardwareEvent] = field(default_factory=list)
    hw_event_count: int = 0
    hw_errors: dict[str, int] = field(default_factory=dict)
    chaining: dict[int, ChainingFigure] = field(default_factory=dict)
    chaining_worst: dict[int, tuple[float, float]] = field(default_factory=dict)
    #: GPU-Util over the working span of the worker's own GPUs.
    util: dict[int, UtilFigure] = field(default_factory=dict)
    #: What the worker's prover could not learn (`Prover.lacks`).
    prover_lacks: list[str] = field(default_factory=list)
    #: The latest host sample's wall time (every worker reads them all; worker 0's is kept).
    last_host_wall_s: float | None = None
    #: The worker's copies, summed, their spooled runs in its `_Job.copy_files` file (the
    #: other workers'; this process's are in `side`).
    copies: CopyPart | None = None
    #: What this process (worker 0) made of the events beside the gaps (see the module
    #: docstring); the other workers leave it empty.
    side: Detected | None = None


def _owners(gpus: list[int], n: int, lighter_first: bool = False) -> dict[int, int]:
    """Header GPUs dealt round-robin to workers; `lighter_first`: worker 0 takes one fewer
    than an even share (when it keeps one), the lightest other worker one more. With `--log`
    files worker 0 (this process) also builds what is made of the log's events beside the
    gaps (the partition timeline, the watcher, the paths seen): an hour of 8 GPUs with its
    log took 4.6 CPU-s in worker 0 against 3.9 in worker 1 split 4 + 4, 4.1 against 4.2 split
    3 + 5 (the other workers wait for the slowest)."""
    order = sorted(gpus)
    share = [len(order) // n + (1 if w < len(order) % n else 0) for w in range(n)]
    if lighter_first and n > 1 and share[0] > 1:
        share[0] -= 1
        share[share.index(min(share[1:]), 1)] += 1
    owners: dict[int, int] = {}
    w = 0
    for g in order:
        while not share[w]:
            w = (w + 1) % n
        owners[g] = w
        share[w] -= 1
        w = (w + 1) % n
    return owners


def _gpu_clock(rec: Recording) -> None:
    """GPU samples time the GPUs' silence here (no host samples, or the end of the data past
    the host's): one process judges by every GPU's, a worker sees only its own. Given up at
    once, not after a whole pass (but at the end of the data, where it is found there)."""
    raise _OneProcess(f"line {rec.line_no}: GPU silence timed by GPU samples (no host "
                      "samples there)")


def _only_mine(
    rec: Recording, owners: dict[int, int], me: int, n: int, stop: StopEvent, can_hand_over: bool,
    where: DataTime | None = None,
) -> Iterator[Record]:
    """The worker's records: its GPUs' samples and copies and everything else, or
    `_OneProcess` (`can_hand_over`: copies can reach the parent); `where` (worker 0's, for a
    progress line) is told the data's time as the stop request is looked for."""
    problems = rec.problem_lines if rec.problem_lines is not None else []
    next_check = _STOP_CHECK_LINES
    for r in rec.records:
        if type(r) is GpuSample:
            # A line the shortcut did not pass over (see the module docstring).
            if owners.get(r.gpu, r.gpu % n) != me:
                continue
        elif type(r) is CopyRecord:
            # Its GPU's worker's (see the module docstring); of no watched GPU, this process's.
            if not can_hand_over:
                raise _OneProcess(f"line {rec.line_no}: spawned workers cannot hand copies over")
            gpu = r.gpu
            if (0 if gpu is None else owners.get(gpu, gpu % n)) != me:
                continue
        if rec.line_no >= next_check:
            next_check += _STOP_CHECK_LINES
            if stop.is_set() or len(problems) > MAX_PROBLEM_LINES:
                raise _OneProcess("stopped")
            if where is not None:
                where.saw(r)
        yield r


@dataclass
class _Job:
    """What every worker is given: the input, and for worker 0 (this process) what it feeds
    beside the detector."""

    path: str
    config: Config
    n: int
    stop: StopEvent
    logs: LogInput | None = None
    listener: RunListener | None = None
    #: A temporary file for each other worker's spooled copies (`CopySums.hand_over`); none
    #: when the workers are spawned (a file is not handed to them): a copy then sends the
    #: report to one process.
    copy_files: list[IO[bytes]] = field(default_factory=list)
    #: Likewise for each other worker's gaps (its `GapSpool`'s runs, adopted by this process:
    #: never sent over the pipe, never written twice); none when spawned (they are sent).
    gap_files: list[IO[bytes]] = field(default_factory=list)
    #: Whether the copies' sums keep each host-to-device copy (`compare`).
    keep_h2d: bool = False
    #: Worker 0's progress line (this process's; never handed to another worker).
    progress: Progress | None = None
    #: The part of the recording read (`--since`/`--until`), or None: all of it; and the
    #: log events recorded around it (the daemon's startup lines before it, the log 5 minutes
    #: each side of it: `log_around.LogAround`), fed to every worker before its records
    #: and after them, each reading the parent's spool (forked: never pickled).
    window: TimeWindow | None = None
    around: LogAround | None = None


def _work(job: _Job, me: int, end_of_data: Callable[[float | None], float | None] | None
          ) -> _Part:
    """Worker `me` of `n`: the detection loop over its GPUs' samples and every other record."""
    path, config, n, stop, logs = job.path, job.config, job.n, job.stop, job.logs
    owners = _owners([g.index for g in header_of(path).gpus], n, lighter_first=logs is not None)
    others = [g for g, w in owners.items() if w != me]
    wake = WakeAt() if logs is not None else None
    rec = read_any(path, Reading(skip_prefixes=tuple(map(gpu_line_prefix, others)),
                                 skip_type_last=tuple(map(gpu_line_prefix_type_last, others)),
                                 keep_problem_lines=True, wake_at=wake, window=job.window))
    mine = me == 0
    # The detector's prover and the watcher: one keeper of the workers' holds (`watch_beside`).
    prover = CuzkProver(config.cuzk.max_parallel_synthesis)
    watch = watch_beside(prover, config.cuzk, mine and config.logs.cuzk)
    # The other workers' copies' runs go to their file, for this process to take.
    run_file = job.copy_files[me - 1] if job.copy_files and not mine else None
    copies = CopySums(job.keep_h2d, run_file=run_file)
    # Likewise its gaps' runs (`GapSpool.adopt`).
    gap_file = job.gap_files[me - 1] if job.gap_files and not mine else None
    try:
        mine_only = _only_mine(rec, owners, me, n, stop, len(job.copy_files) == n - 1,
                               _where(job.progress, path, rec, job.window))
        found = detect_records(
            rec.header, chain(job.around.before(), mine_only, job.around.after())
            if job.around else mine_only,
            config.detector,
            logs.spool if logs is not None else (), line_of=lambda: rec.line_no,
            prover=prover, listener=job.listener if mine else None, watch=watch,
            span=copy.deepcopy(logs.span) if logs is not None else None, timeline=mine,
            wake_at=wake, end_of_data=end_of_data, copies=copies,
            gap_spool=GapSpool(run_file=gap_file) if gap_file is not None else None,
            on_gpu_clock=lambda: _gpu_clock(rec),
            since_s=job.window.since_s if job.window is not None else None,
            until_s=job.window.until_s if job.window is not None else None,
            windowed=job.window is not None, run_of=lambda: rec.run)
    except _OneProcess as exc:
        stop.set()
        return _Part(abort=str(exc))
    return _Part(
        gap_id_lines=found.gap_id_lines,
        gap_tally=found.gap_tally,
        gaps=found.gaps,
        state_rows=[_state_row(s) for s in found.states],
        totals=found.totals,
        detector_counters=found.detector_counters,
        problem_lines=rec.problem_lines or [],
        blind_spots=found.blind_spots,
        byes=found.byes,
        prover_lacks=found.prover_lacks,
        last_host_wall_s=found.last_host_wall_s,
        health=found.health,
        hw_events=found.hw_events,
        hw_event_count=found.hw_event_count,
        hw_errors=found.hw_errors,
        chaining=found.chaining,
        chaining_worst=found.chaining_worst,
        util=found.util,
        # A worker with copies has its file (spawned ones meet none: see `_only_mine`).
        copies=found.copies.hand_over() if not mine and found.copies else None,
        side=found if mine else None,  # never pickled: worker 0 is this process
    )


def _child(job: _Job, me: int, conn: Connection) -> None:
    # Started with the stop signals held back (`detect_parallel`: a fork, or an exec, keeps
    # the mask): they reach this worker again as they reach any.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    gc.disable()  # as `report.build_report` does (a spawned child does not inherit it)

    def tell_end(end_s: float | None) -> float | None:
        conn.send(("end", end_s))
        return end_s  # its events beside the gaps are not kept

    try:
        part = _work(job, me, tell_end if job.logs is not None else None)
    except BaseException:  # noqa: BLE001 - reported to the parent, which falls back
        part = _Part(abort=f"worker {me} failed:\n{traceback.format_exc()}")
        job.stop.set()
    gaps, part.gaps = part.gaps, []
    part.gap_count = len(gaps) if isinstance(gaps, GapSpool) else 0
    if job.gap_files and isinstance(gaps, GapSpool):
        # Its runs are in the file the parent shares (`_Job.gap_files`): where, and no more.
        part.gap_runs = gaps.spill()
        gaps = []
    conn.send(part)
    # Else the gaps in chunks, read from the worker's spool as they are held there (encoded: not
    # decoded here, nor pickled field by field): neither this process nor the parent ever
    # holds them all.
    chunk: list[bytes] = []
    for payload in gaps.encoded() if isinstance(gaps, GapSpool) else ():
        chunk.append(payload)
        if len(chunk) >= GAP_CHUNK:
            conn.send(chunk)
            chunk = []
    if chunk:
        conn.send(chunk)
    conn.send(None)
    conn.close()


def detect_parallel(path: str | Path, config: Config, n: int, logs: LogInput | None = None,
                    listener: RunListener | None = None, keep_h2d: bool = False,
                    progress: Progress | None = None, window: TimeWindow | None = None,
                    around: LogAround | None = None) -> Detected | None:
    """Run `n` workers (this process is worker 0) and merge them into one `Detected`.

    `logs`: the `--log` files, parsed (every worker reads them); `listener`: fed every log
    event and `/status` snapshot, in this process (`detect_records`); `keep_h2d`: the copy
    trace's sums keep each host-to-device copy (`CopySums`); `progress`: told how far this
    process's worker is (the others read as fast); `window`: every worker reads only the
    records inside it (`gapwatch.sources.time_window`), between the recorded log events
    `around` it (`LogAround.before` and `after`). Returns None when the input must
    be read in one process (see the module docstring). Raises what `header_of` raises for an
    unusable file.
    """
    path = str(path)
    header = header_of(path)
    # fork is cheapest (nothing to re-import) and safe while this process has one thread.
    fork = can_share_logs()
    if (logs is not None or around is not None and around.spooled) and not fork:
        return None  # spools on disk: read by forked workers only
    ctx = get_context("fork") if fork else get_context("spawn")  # literals: typed contexts
    job = _Job(path, config, n, ctx.Event(), logs,
               copy_files=[tempfile.TemporaryFile(prefix="gapwatch-copies-")  # noqa: SIM115
                           for _ in range(1, n)] if fork else [],
               gap_files=[tempfile.TemporaryFile(prefix="gapwatch-gaps-")  # noqa: SIM115
                          for _ in range(1, n)] if fork else [],
               keep_h2d=keep_h2d, window=window, around=around)
    children: list[tuple[BaseProcess, Connection]] = []
    drained = False
    try:
        # Started inside the `try`: a stop signal while the later ones start still kills
        # and joins the earlier ones (`finally`), none left behind reading on.
        for me in range(1, n):
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(job, me, send), daemon=True)
            # Started and registered in one step: a stop signal between the fork and the
            # append left a worker the `finally` did not know, reading on after this process
            # had exited (its SIGTERM handler, inherited, absorbs multiprocessing's own
            # terminate at exit). The child unblocks the signals first thing (`_child`).
            with stop_signals_deferred():
                proc.start()
                children.append((proc, recv))
            send.close()
        ends = _Ends([recv for _proc, recv in children])
        try:
            parts = [_work(replace_job(job, listener, progress), 0,
                           ends.all if logs is not None else None)]
        except BaseException:
            job.stop.set()
            raise
        tell(progress, "waiting for the other workers")
        parts += [ends.part(w) for w in range(len(children))]
        if any(p.abort is not None for p in parts) or (logs is not None and _bad_lines(parts)):
            return None
        new_ids = _gap_ids(parts)
        own, parts[0].gaps = parts[0].gaps, []
        if isinstance(own, GapSpool) and all(p.gap_runs is not None for p in parts[1:]):
            gaps = _adopted(own, parts, job, new_ids, header, logs is not None)
            for _proc, recv in children:
                recv.recv()  # the end of its gaps (None): they are in its file
        else:
            gaps = _numbered(own, new_ids, children, progress,
                             sum(p.gap_count for p in parts[1:]))
        drained = True
    except EOFError:  # a child died while sending its gaps
        return None
    finally:
        # Killed and joined with the stop signals held back (a SIGKILL'd worker is joined at
        # once): a later signal of a storm cannot cut this short and leave a worker reading on.
        with stop_signals_deferred() if not drained else nullcontext():
            for child, recv in children:
                recv.close()
                if not drained:
                    # Not read to its end (a worker gave up, this one failed, or a part could
                    # not be read): a worker may be blocked writing gaps nobody reads (forked,
                    # it holds the pipe's reading end too, so closing ours does not stop it).
                    # SIGKILL, not SIGTERM: a SIGTERM handler the parent had (record's, a
                    # caller's) is inherited through fork and would keep the worker alive, and
                    # join() would wait forever.
                    child.kill()
                child.join()
    # Each worker counted its own GPUs' gaps as one process counts them (`GapLedger.tally`,
    # by GPU and kind): no key is in two workers' tallies.
    found = _merge(header, parts, gaps, {k: t for p in parts for k, t in p.gap_tally.items()})
    for w, part in enumerate(parts[1:], 1):
        if part.copies is not None:
            found.copies.take(part.copies, job.copy_files[w - 1])
    return found


def _adopted(own: GapSpool, parts: list[_Part], job: _Job, new_ids: list[list[int]],
             header: SessionHeader, logs: bool) -> GapSpool:
    """This process's gap spool with the other workers' runs adopted, their ids given out in
    the one sequence as they are read (`GapSpool.number`): nothing written again."""
    for w, part in enumerate(parts[1:], 1):
        own.adopt(job.gap_files[w - 1], part.gap_runs or [], part.gap_count)
    owners = _owners([g.index for g in header.gpus], job.n, lighter_first=logs)
    n = job.n
    own.number(lambda gpu, local: new_ids[owners.get(gpu, gpu % n)][local])
    return own


def _numbered(own: Iterable[Gap], new_ids: list[list[int]],
              children: list[tuple[BaseProcess, Connection]], progress: Progress | None,
              sent: int) -> GapSpool:
    """Every worker's gaps in one new spool, renumbered as they come (this process's, then
    each spawned worker's over its pipe, to its end: `sent` of them, said on the progress
    line as they are numbered, a chunk at a time)."""
    gaps = GapSpool()
    _renumber(gaps, _encoded(own), new_ids[0])
    if isinstance(own, GapSpool):
        own.close()
    total = len(gaps) + sent
    for w, (_proc, recv) in enumerate(children, 1):
        while (chunk := recv.recv()) is not None:
            _renumber(gaps, chunk, new_ids[w])
            if progress is not None:
                progress.step("numbering the gaps", len(gaps) / total if total else None)
    return gaps


def replace_job(job: _Job, listener: RunListener | None, progress: Progress | None = None
                ) -> _Job:
    """Worker 0's job: the same, with the caller's listener and progress line."""
    return dataclasses.replace(job, listener=listener, progress=progress)


def _where(progress: Progress | None, path: str, rec: Recording, window: TimeWindow | None
           ) -> DataTime | None:
    """Worker 0's progress by the data's time (None: no progress line)."""
    if progress is None:
        return None
    return DataTime(progress, data_span(path, rec.header.started_wall_s, window))


class _Ends:
    """The workers' pipes, read in order: first each worker's end of data (with `--log`
    files: `detect_records`'s `end_of_data`), then its part. A worker that gave up sends its
    part at once; one that died sends nothing (EOF)."""

    def __init__(self, pipes: list[Connection]) -> None:
        self._pipes = pipes
        self._early: dict[int, _Part] = {}

    def all(self, end_s: float | None) -> float | None:
        """The end of all the data, given this process's: the latest of the workers'."""
        ends = [end_s]
        for w, pipe in enumerate(self._pipes):
            msg = self._recv(w, pipe)
            if isinstance(msg, tuple):
                ends.append(msg[1])
            else:
                self._early[w] = msg
        known = [e for e in ends if e is not None]
        return max(known) if known else None

    def part(self, w: int) -> _Part:
        """Worker `w + 1`'s part (its end of data, when still unread, passed over)."""
        early = self._early.pop(w, None)
        if early is not None:
            return early
        msg = self._recv(w, self._pipes[w])
        while isinstance(msg, tuple):
            msg = self._recv(w, self._pipes[w])
        return msg

    @staticmethod
    def _recv(w: int, pipe: Connection) -> _Part | tuple[str, float | None]:
        try:
            msg: _Part | tuple[str, float | None] = pipe.recv()
        except EOFError:  # the child died without a word (killed): read in one process
            return _Part(abort=f"worker {w + 1} died")
        return msg


def _bad_lines(parts: list[_Part]) -> bool:
    """Whether any worker met a bad record: the others may have read that line's time as a
    sample's (`recording.PassedOver`), so a report with logs is read in one process."""
    return any(counter == "bad_records" for p in parts for _line, counter, _m in p.problem_lines)


def _encoded(gaps: Iterable[Gap]) -> Iterator[bytes]:
    """Gaps encoded as a `GapSpool` holds them (a spool's as they are held)."""
    return gaps.encoded() if isinstance(gaps, GapSpool) else map(encode_gap, gaps)


def _renumber(spool: GapSpool, payloads: Iterable[bytes], ids: list[int]) -> None:
    """A worker's gaps (encoded), into `spool` with their ids in the one sequence (`ids`: see
    `_gap_ids`): read by their key and renumbered in their bytes, never decoded whole."""
    for payload in payloads:
        key = gap_key(payload)
        new_id = ids[key.gap_id]
        spool.add_encoded(replace(key, gap_id=new_id), renumbered(payload, new_id))


def _gap_ids(parts: list[_Part]) -> list[list[int]]:
    """Gap ids: one sequence over all workers, in the order of the lines that assigned them
    (a line assigns at most one id). [w][local id] is worker w's gap's id in that sequence."""
    n = len(parts)
    assigned = sorted(line * n + w for w, p in enumerate(parts) for line in p.gap_id_lines)
    new_ids: list[list[int]] = [[0] for _ in parts]
    for i, key in enumerate(assigned, 1):
        new_ids[key % n].append(i)
    return new_ids


def _merge(header: SessionHeader, parts: list[_Part], gaps: GapSpool,
           tally: dict[tuple[int, str], Tally]) -> Detected:
    states = [StateChange(*row) for p in parts for row in p.state_rows]
    sort_states(states)
    totals = sorted((t for p in parts for t in p.totals), key=lambda t: t.gpu)
    # Problems merged by line (a line read by several workers counts once), counters in order
    # of first occurrence, as the one-process reader gives them.
    seen = sorted({(line, counter, msg) for p in parts for line, counter, msg in p.problem_lines})
    counters: dict[str, int] = {}
    for _line, counter, _msg in seen:
        counters[counter] = counters.get(counter, 0) + 1
    # The detector's counters summed, in the order one detector lists them (a worker lists
    # only those it counted).
    det_counts = {name: sum(p.detector_counters.get(name, 0) for p in parts)
                  for name in COUNTER_NAMES}
    counters.update({f"detector_{k}": v for k, v in det_counts.items() if v})
    side = parts[0].side if parts else None
    return Detected(
        header=header, gaps=gaps, gap_tally=tally, states=states, totals=totals,
        detector_counters={k: v for k, v in det_counts.items() if v},
        timeline=side.timeline if side is not None else None,
        prover_status_count=side.prover_status_count if side is not None else 0,
        pipeline=side.pipeline if side is not None else PipelineView(),
        log_notes=side.log_notes if side is not None else [],
        log_recorded_notes=side.log_recorded_notes if side is not None else [],
        log_already_recorded=side.log_already_recorded if side is not None else 0,
        prover_events=side.prover_events if side is not None else ProverEvents(),
        said_left_out=side.said_left_out if side is not None else {},
        # This process's copies (and the copies of no watched GPU); the others' are taken in.
        copies=side.copies if side is not None else CopySums(),
        counters=counters,
        problems=[msg for _line, _counter, msg in seen][:MAX_PROBLEMS],
        blind_spots=parts[0].blind_spots if parts else [], byes=parts[0].byes if parts else [],
        health=parts[0].health if parts else {}, hw_events=parts[0].hw_events if parts else [],
        hw_event_count=parts[0].hw_event_count if parts else 0,
        hw_errors=parts[0].hw_errors if parts else {},
        chaining={g: f for p in parts for g, f in p.chaining.items()},
        chaining_worst={g: w for p in parts for g, w in p.chaining_worst.items()},
        util={g: f for p in parts for g, f in p.util.items()},
        # Every worker was fed every log event and snapshot: this process's prover knows all.
        prover_lacks=parts[0].prover_lacks if parts else [],
        last_host_wall_s=parts[0].last_host_wall_s if parts else None,
    )  # fmt: skip
