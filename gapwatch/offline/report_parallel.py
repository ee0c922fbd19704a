"""Parallel `gapwatch report`: the GPUs of one large recording split across processes.

Who calls it: `gapwatch.offline.report.build_report` only (`plan_workers` decides, `detect_parallel`
runs). A 24 h, 8-GPU, 10 Hz recording is ~7.8 M lines; reading and detecting them in one
process takes ~45 s on a 2-core test machine, past the 30 s goal, and the work splits cleanly
by GPU (figures in docs/benchmarks.md).

This module splits the work; it does not re-implement reading or detection. Each worker reads
the file with the ordinary reader (`gapwatch.sources.recording.read_recording`, told to pass
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
  their ids was assigned (`GapDetector.on_gap_id`) and the parent renumbers. States come out in
  one canonical order (data time, then GPU) in both paths.
- A problem line read by several workers (a bad non-GPU line) is counted once: problems carry
  their line numbers and the parent merges them by line.

Not parallel: log events, prover status snapshots, and the copy trace's records (copies, /proc
readings, link states), which reach closed gaps the same way. The evidence buffer keeps recently
closed gaps of all GPUs in one bounded list, so which gap a late log line (or snapshot, or copy)
still reaches depends on the other GPUs' gaps. A report with `--log` files runs in one process,
and a worker that meets such a record stops all workers: the report then runs in one process
(`detect_parallel` returns None). Trace CSVs, recordings under `MIN_PARALLEL_BYTES` of JSON
and single-GPU recordings take the one-process path too (`plan_workers`), as does a machine
with one usable CPU. A gzip recording is large by the JSON it holds, not its size on disk:
each worker decompresses it whole, in parallel, as each reads a plain file whole (inflated in
large chunks, `gapwatch.sources.gzip_lines`: the report of a .gz takes about 1.1x the plain
file's, docs/benchmarks.md). A worker that
fails for any reason also sends the report to the one-process path, which then reports the
problem as usual.
"""

from __future__ import annotations

import gc
import os
import threading
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing import get_context
from multiprocessing.connection import Connection
from operator import attrgetter
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from gapwatch.config import Config
from gapwatch.core.blind import Bye
from gapwatch.core.chaining import ChainingFigure
from gapwatch.core.codec import gpu_line_prefix, gpu_line_prefix_type_last
from gapwatch.core.health import HealthStats
from gapwatch.core.ledger import GapLedger, Tally
from gapwatch.core.models import (
    BlindSpot,
    CopyRecord,
    Gap,
    GpuSample,
    HardwareEvent,
    LinkState,
    LogEvent,
    ProcessMemory,
    ProverStatus,
    Record,
    StateChange,
)
from gapwatch.core.track import GpuTotals
from gapwatch.offline.detect import Detected, detect_records, sort_states
from gapwatch.offline.gap_spool import GapSpool
from gapwatch.sources.recording import (
    MAX_PROBLEMS,
    Recording,
    json_bytes,
    open_recording,
    read_recording,
)

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

_gap_row = attrgetter(*Gap.__struct_fields__)
_state_row = attrgetter(*StateChange.__struct_fields__)


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def plan_workers(path: str | Path, log_paths: list[str]) -> int:
    """How many processes `build_report` should use for `path`: 1 unless the file is a large
    recording with several GPUs, there are several CPUs and no `--log` files. Large means
    its JSON (`recording.json_bytes`: a gzip file counts for what it holds, not what it
    takes on disk)."""
    p = Path(path)
    if log_paths or p.suffix.lower() == ".csv":
        return 1
    try:
        if json_bytes(p) < MIN_PARALLEL_BYTES:
            return 1
        header, stream, _ = open_recording(p)
        stream.close()
    except Exception:  # noqa: BLE001 - the one-process path reports the problem properly
        return 1
    return max(1, min(usable_cpus(), len(header.gpus)))


class _OneProcess(Exception):
    """This input must be read in one process (the message says why)."""


@dataclass
class _Part:
    """What one worker found, in plain rows (they pickle faster than records)."""

    #: Why the report must run in one process instead, or None.
    abort: str | None = None
    gap_id_lines: list[int] = field(default_factory=list)
    #: Final versions of the worker's closed gaps, with its own ids, in start order: worker
    #: 0's (this process) as its spool; the others' follow their part over the pipe as rows,
    #: `GAP_CHUNK` at a time.
    gaps: Iterable[Gap] = field(default_factory=list)
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
    chaining: dict[int, ChainingFigure] = field(default_factory=dict)
    chaining_worst: dict[int, tuple[float, float]] = field(default_factory=dict)
    #: What the worker's prover could not learn (`Prover.lacks`).
    prover_lacks: list[str] = field(default_factory=list)


def _owners(gpus: list[int], n: int) -> dict[int, int]:
    """Header GPUs dealt round-robin to workers."""
    return {g: k % n for k, g in enumerate(sorted(gpus))}


def _only_mine(
    rec: Recording, owners: dict[int, int], me: int, n: int, stop: Any
) -> Iterator[Record]:
    """The worker's records: its GPUs' samples and everything else, or `_OneProcess`."""
    problems = rec.problem_lines if rec.problem_lines is not None else []
    next_check = _STOP_CHECK_LINES
    for r in rec.records:
        if type(r) is GpuSample:
            # A line the shortcut did not pass over (see the module docstring).
            if owners.get(r.gpu, r.gpu % n) != me:
                continue
        elif isinstance(r, LogEvent | ProverStatus):
            # Late evidence can reach the gaps of any GPU (see the module docstring).
            raise _OneProcess(f"line {rec.line_no}: {r.type} records are read in one process")
        elif isinstance(r, CopyRecord | ProcessMemory | LinkState):
            # Like log events, copies reach recently closed gaps of any GPU.
            raise _OneProcess(f"line {rec.line_no}: the copy trace is read in one process")
        if rec.line_no >= next_check:
            next_check += _STOP_CHECK_LINES
            if stop.is_set() or len(problems) > MAX_PROBLEM_LINES:
                raise _OneProcess("stopped")
        yield r


def _work(path: str, config: Config, me: int, n: int, stop: Any) -> _Part:
    """Worker `me` of `n`: the detection loop over its GPUs' samples and every other record."""
    header, stream, _ = open_recording(path)
    stream.close()
    owners = _owners([g.index for g in header.gpus], n)
    others = [g for g, w in owners.items() if w != me]
    rec = read_recording(path, skip_prefixes=tuple(map(gpu_line_prefix, others)),
                         skip_type_last=tuple(map(gpu_line_prefix_type_last, others)),
                         keep_problem_lines=True)
    try:
        found = detect_records(rec.header, _only_mine(rec, owners, me, n, stop),
                               config.detector, line_of=lambda: rec.line_no,
                               max_parallel_synthesis=config.cuzk.max_parallel_synthesis)
    except _OneProcess as exc:
        stop.set()
        return _Part(abort=str(exc))
    return _Part(
        gap_id_lines=found.gap_id_lines,
        gaps=found.gaps,
        state_rows=[_state_row(s) for s in found.states],
        totals=found.totals,
        detector_counters=found.detector_counters,
        problem_lines=rec.problem_lines or [],
        blind_spots=found.blind_spots,
        byes=found.byes,
        prover_lacks=found.prover_lacks,
        health=found.health,
        hw_events=found.hw_events,
        hw_event_count=found.hw_event_count,
        chaining=found.chaining,
        chaining_worst=found.chaining_worst,
    )


def _child(path: str, config: Config, me: int, n: int, stop: Any, conn: Connection) -> None:
    gc.disable()  # as `report.build_report` does (a spawned child does not inherit it)
    try:
        part = _work(path, config, me, n, stop)
    except BaseException:  # noqa: BLE001 - reported to the parent, which falls back
        part = _Part(abort=f"worker {me} failed:\n{traceback.format_exc()}")
        stop.set()
    gaps, part.gaps = part.gaps, []
    conn.send(part)
    # The gaps in chunks, read from the worker's spool: neither this process nor the parent
    # ever holds them all (pickled, or as rows beside the records).
    rows = []
    for g in gaps:
        rows.append(_gap_row(g))
        if len(rows) >= GAP_CHUNK:
            conn.send(rows)
            rows = []
    if rows:
        conn.send(rows)
    conn.send(None)
    conn.close()


def detect_parallel(path: str | Path, config: Config, n: int) -> Detected | None:
    """Run `n` workers (this process is worker 0) and merge them into one `Detected`.

    Returns None when the input must be read in one process (see the module docstring).
    Raises what `open_recording` raises for an unusable file.
    """
    path = str(path)
    header, stream, _ = open_recording(path)
    stream.close()
    # fork is cheapest (nothing to re-import) and safe while this process has one thread.
    fork = threading.active_count() == 1 and hasattr(os, "fork")
    ctx = get_context("fork") if fork else get_context("spawn")  # literals: typed contexts
    stop = ctx.Event()
    children = []
    for me in range(1, n):
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(path, config, me, n, stop, send), daemon=True)
        proc.start()
        send.close()
        children.append((proc, recv))
    drained = False
    try:
        try:
            parts = [_work(path, config, 0, n, stop)]
        except BaseException:
            stop.set()
            raise
        for _proc, recv in children:
            try:
                parts.append(recv.recv())
            except EOFError:  # the child died without a word (killed): read in one process
                parts.append(_Part(abort="worker died"))
        if any(p.abort is not None for p in parts):
            return None
        new_ids = _gap_ids(parts)
        gaps = _Renumbered()
        ids = new_ids[0]
        own, parts[0].gaps = parts[0].gaps, []
        for g in own:  # renumbered copies share every field with the originals
            gaps.add(replace(g, gap_id=ids[g.gap_id]))
        if isinstance(own, GapSpool):
            own.close()
        del own
        for w, (_proc, recv) in enumerate(children, 1):
            ids = new_ids[w]
            while (rows := recv.recv()) is not None:
                for row in rows:
                    gaps.add(Gap(ids[row[0]], *row[1:]))
        drained = True
    except EOFError:  # a child died while sending its gaps
        return None
    finally:
        for proc, recv in children:
            recv.close()
            if not drained:
                # Not read to its end (a worker gave up, this one failed, or a part could not
                # be read): a worker may be blocked writing gaps nobody reads (forked, it holds
                # the pipe's reading end too, so closing ours does not stop it). SIGKILL, not
                # SIGTERM: a SIGTERM handler the parent had (record's, a caller's) is inherited
                # through fork and would keep the worker alive, and join() would wait forever.
                proc.kill()
            proc.join()
    return _merge(header, parts, gaps.spool, gaps.tally())


class _Renumbered:
    """The workers' gaps with their ids in one sequence: spooled, and counted by a ledger that
    lets each go at once (they are all final)."""

    def __init__(self) -> None:
        self.spool = GapSpool()
        self._ledger = GapLedger()
        self._held = 0

    def add(self, gap: Gap) -> None:
        self._ledger.add(gap)
        self.spool.add(gap)
        self._held += 1
        if self._held >= GAP_CHUNK:
            self._ledger.take_final(set())
            self._held = 0

    def tally(self) -> dict[tuple[int, str], Tally]:
        return self._ledger.tally()


def _gap_ids(parts: list[_Part]) -> list[list[int]]:
    """Gap ids: one sequence over all workers, in the order of the lines that assigned them
    (a line assigns at most one id). [w][local id] is worker w's gap's id in that sequence."""
    n = len(parts)
    assigned = sorted(line * n + w for w, p in enumerate(parts) for line in p.gap_id_lines)
    new_ids: list[list[int]] = [[0] for _ in parts]
    for i, key in enumerate(assigned, 1):
        new_ids[key % n].append(i)
    return new_ids


def _merge(header: Any, parts: list[_Part], gaps: GapSpool,
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
    det_counts: dict[str, int] = {}
    for p in parts:
        for name, v in p.detector_counters.items():
            det_counts[name] = det_counts.get(name, 0) + v
    counters.update({f"detector_{k}": v for k, v in det_counts.items() if v})
    return Detected(
        header=header, gaps=gaps, gap_tally=tally, states=states, totals=totals,
        detector_counters={k: v for k, v in det_counts.items() if v}, timeline=None,
        counters=counters,
        problems=[msg for _line, _counter, msg in seen][:MAX_PROBLEMS],
        blind_spots=parts[0].blind_spots if parts else [], byes=parts[0].byes if parts else [],
        health=parts[0].health if parts else {}, hw_events=parts[0].hw_events if parts else [],
        hw_event_count=parts[0].hw_event_count if parts else 0,
        chaining={g: f for p in parts for g, f in p.chaining.items()},
        chaining_worst={g: w for p in parts for g, w in p.chaining_worst.items()},
        prover_lacks=_lacked_by_all(parts),
    )  # fmt: skip


def _lacked_by_all(parts: list[_Part]) -> list[str]:
    """What no worker's prover learnt: a fact one worker read (its GPUs' log lines) is not
    lacking in the report."""
    if not parts:
        return []
    return [why for why in parts[0].prover_lacks if all(why in p.prover_lacks for p in parts)]
