"""Parallel `gapwatch report`: the GPUs of one large recording split across processes.

Who calls it: `gapwatch.offline.report.build_report` only (`plan_workers` decides, `detect_parallel`
runs). A 24 h, 8-GPU, 10 Hz recording is ~7.8 M lines; reading and detecting them in one
process takes ~40 s on a 2-core test machine, past the 30 s goal, and the work splits cleanly
by GPU (figures in docs/detection.md, "Performance").

Why the result is the same as one process (`gapwatch.offline.report.detect`), value for value:
- `GapDetector` keeps one independent state machine per GPU. Each worker runs its own detector
  over its GPUs' samples, in file order, and over *every* host sample (the host evidence a gap
  gathers depends only on host samples and the gap's own times).
- Each worker reads the whole file but skips other workers' GPU lines with a bytes test before
  any JSON parsing: recordings are written by orjson from the dataclasses, so a GPU sample line
  starts with `{"gpu":N,` and ends with `,"type":"gpu"}`. A line of any other shape is parsed by
  every worker, and its sample (if it is one) fed by the GPU's worker.
- Every output is tagged with the number of the line that produced it (end-of-data ones by
  the line of their GPU's first sample, the one-process order); the parent merges states in
  that order. Gap ids count up across all GPUs in data order: workers report the line at which
  each of their ids was assigned (`GapDetector.on_gap_id`) and the parent renumbers them (and
  the id in an end-of-data state's "gap N retracted").
- A bad line is counted once: by its GPU's worker when it has the GPU-sample shape, otherwise
  by worker 0. Problem messages carry their line numbers and are merged in line order.

Not parallel: log events, and the copy trace's records (copies, /proc readings, link states),
which reach recently closed gaps the same way. The evidence buffer keeps recently closed gaps of
all GPUs in one bounded list, so which gap a late log line still reaches depends on the other
GPUs' gaps. A report with `--log` files runs in one process, and a worker that meets a log
record (or a line whose sample belongs to a GPU that another worker skipped) stops all workers:
the report then runs in one process (`detect_parallel` returns None). Trace CSVs, recordings
under `MIN_PARALLEL_BYTES` and single-GPU recordings take the one-process path too
(`plan_workers`), as does a machine with one usable CPU. A worker that fails for any reason also
sends the report to the one-process path, which then reports the problem as usual.
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import os
import re
import threading
import traceback
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from multiprocessing import get_context
from multiprocessing.connection import Connection
from operator import attrgetter
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gapwatch.core.config import Config
from gapwatch.core.detector import GapDetector
from gapwatch.core.models import (
    CopyRecord,
    Gap,
    GpuSample,
    HostSample,
    LinkState,
    LogEvent,
    ProcessMemory,
    StateChange,
)
from gapwatch.core.track import GpuTotals
from gapwatch.sources.recording import (
    GPU_LINE_PREFIX,
    GPU_LINE_SUFFIX,
    MAX_PROBLEMS,
    bad_record,
    open_recording,
    validate_line,
)

#: Smaller recordings are read in one process: starting workers costs ~0.1-0.5 s.
MIN_PARALLEL_BYTES = 50_000_000
#: Workers look for a stop request every this many lines (a power of two, minus one).
_STOP_CHECK_MASK = (1 << 16) - 1
_GPU_SUFFIX = GPU_LINE_SUFFIX
#: Records decoded before they are fed to the detector (see `_work`).
_BATCH = 256
#: Line number given to what the detector emits at the end of the data (after every line).
_END = 1 << 62

_GAP_FIELDS = tuple(f.name for f in fields(Gap))
_STATE_FIELDS = tuple(f.name for f in fields(StateChange))
_gap_row = attrgetter(*_GAP_FIELDS)
_state_row = attrgetter(*_STATE_FIELDS)
#: The end-of-data state names the gap it retracts; that id is renumbered too.
_RETRACTED = re.compile(r"gap (\d+) retracted")


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def plan_workers(path: str | Path, log_paths: list[str]) -> int:
    """How many processes `build_report` should use for `path`: 1 unless the file is a large
    recording with several GPUs, there are several CPUs and no `--log` files."""
    p = Path(path)
    if log_paths or p.suffix.lower() == ".csv":
        return 1
    try:
        if p.stat().st_size < MIN_PARALLEL_BYTES:
            return 1
        header, stream = open_recording(p)
        stream.close()
    except Exception:  # noqa: BLE001 - the one-process path reports the problem properly
        return 1
    return max(1, min(usable_cpus(), len(header.gpus)))


@dataclass
class _Part:
    """What one worker found (plain rows, not dataclasses: they pickle ~5x faster)."""

    #: Why the report must run in one process instead, or None.
    abort: str | None = None
    #: Line at which each of this worker's gap ids (1, 2, ...) was assigned.
    id_lines: list[int] = field(default_factory=list)
    #: (line, order within the line, Gap | StateChange) in emission order: in this process.
    outputs: list[tuple[int, int, Gap | StateChange]] = field(default_factory=list)
    #: The same as (line, order, is a gap, field values) to cross a process boundary.
    rows: list[tuple[int, int, bool, tuple[Any, ...]]] = field(default_factory=list)
    totals: list[GpuTotals] = field(default_factory=list)
    detector_counters: dict[str, int] = field(default_factory=dict)
    #: Reading counters with the line of their first occurrence, and (line, message) problems.
    counters: dict[str, tuple[int, int]] = field(default_factory=dict)
    problems: list[tuple[int, str]] = field(default_factory=list)


def _owners(gpus: list[int], n: int) -> dict[int, int]:
    """Header GPUs dealt round-robin to workers; a GPU not in the header goes to gpu % n."""
    return {g: k % n for k, g in enumerate(sorted(gpus))}


def _work(  # noqa: C901
    path: str, config: Config, me: int, n: int, stop: Any, as_rows: bool = False
) -> _Part:
    """Worker `me` of `n`: detect over its GPUs' samples (and every host sample). `as_rows`:
    keep what the detector emits as `_Part.rows` (to send to another process)."""
    header, stream = open_recording(path)
    owners = _owners([g.index for g in header.gpus], n)
    others = tuple(b'{"gpu":%d,' % g for g, w in owners.items() if w != me)
    every = tuple(b'{"gpu":%d,' % g for g in owners)
    mine = {g for g, w in owners.items() if w == me}
    unseen = set(mine)  # GPUs whose first sample is still to come
    part = _Part()
    det = GapDetector(
        config.detector, list(header.gpus), period_s=header.period_ms / 1000, live=False
    )
    line_no = 1
    #: Decoded records waiting to be fed, with their line numbers. Decoding a batch, then
    #: feeding it, keeps each stage's code and data warm in the CPU caches: interleaving
    #: pydantic and the detector line by line costs ~1 µs a sample more.
    batch: list[tuple[int, GpuSample | HostSample]] = []
    feeding = [0]  # the line of the sample being fed (a gap id assigned now belongs to it)
    det.on_gap_id = lambda _gid: part.id_lines.append(feeding[0])
    feed_gpu, feed_host = det.feed_gpu, det.feed_host
    outputs = part.outputs
    first_line: dict[int, int] = {}
    validate = validate_line

    def feed_batch() -> None:
        for fed_line, r in batch:
            if type(r) is GpuSample:
                feeding[0] = fed_line
                out = feed_gpu(r)
                if out:
                    keep(fed_line, enumerate(out))
            else:
                feed_host(r)  # type: ignore[arg-type]
        batch.clear()

    def keep(line: int, tagged: Iterable[tuple[int, Gap | StateChange]]) -> None:
        """Keep what the detector emitted at `line`, each with its order within the line."""
        if as_rows:  # now, while the objects are in the CPU caches (~5x cheaper than later)
            part.rows.extend(
                (line, k, type(o) is Gap, _gap_row(o) if type(o) is Gap else _state_row(o))
                for k, o in tagged
            )
        else:
            outputs.extend([(line, k, o) for k, o in tagged])

    def problem(counter: str, message: str) -> None:
        n_seen, first = part.counters.get(counter, (0, line_no))
        part.counters[counter] = (n_seen + 1, first)
        if len(part.problems) < MAX_PROBLEMS:
            part.problems.append((line_no, message))

    try:
        for line in stream:
            line_no += 1
            gpu_shaped = line.endswith(_GPU_SUFFIX)
            if gpu_shaped and line.startswith(others):
                continue  # another worker's GPU sample
            if not line_no & _STOP_CHECK_MASK and stop.is_set():
                part.abort = "stopped"
                return part
            if line[-1] != 10:  # no b"\n": the last line of a file cut by kill -9
                if me == 0 and line.strip():
                    problem("partial_line", f"{path}:{line_no}: incomplete last line")
                continue
            try:
                r = validate(line, gpu_shaped and line.startswith(GPU_LINE_PREFIX))
            except ValidationError as exc:
                # Counted once: by the GPU's worker for a GPU-sample shaped line, else by 0.
                if line.strip() and (me == 0 or (gpu_shaped and line.startswith(every))):
                    problem("bad_records", bad_record(path, line_no, exc))
                continue
            # `type(r) is X` (not a saved `type(r)`) so that the type checker narrows `r`.
            if type(r) is GpuSample:
                gpu = r.gpu
                if gpu not in mine:
                    if owners.get(gpu, gpu % n) == me:
                        mine.add(gpu)  # a GPU the header does not list
                        unseen.add(gpu)
                    elif gpu_shaped and line.startswith(every):
                        # Its first key names another GPU (duplicate keys): the worker of that
                        # GPU skipped it, and of this GPU never saw it.
                        part.abort = f"line {line_no}: GPU sample of another shape"
                        return part
                    else:
                        continue
                if unseen and gpu in unseen:
                    unseen.discard(gpu)
                    first_line[gpu] = line_no
                batch.append((line_no, r))
            elif type(r) is HostSample:
                batch.append((line_no, r))
            elif type(r) is LogEvent:
                part.abort = f"line {line_no}: log events are read in one process"
                return part
            elif type(r) in (CopyRecord, ProcessMemory, LinkState):
                # Like log events, copies reach recently closed gaps of any GPU.
                part.abort = f"line {line_no}: the copy trace is read in one process"
                return part
            else:
                continue
            if len(batch) >= _BATCH:
                feed_batch()
    except (EOFError, zlib.error, OSError) as exc:
        if me == 0:
            line_no = _END
            problem("truncated", f"{path}: file ends early ({exc}); kept what read")
    finally:
        stream.close()
    feed_batch()
    # End of data: the one-process detector lists its GPUs in first-seen order.
    keep(_END, ((first_line.get(o.gpu, 0), o) for o in det.finish()))
    part.totals = det.totals()
    part.detector_counters = dict(det.counters)
    return part


def _child(path: str, config: Config, me: int, n: int, stop: Any, conn: Connection) -> None:
    gc.disable()  # as `report.build_report` does (a spawned child does not inherit it)
    try:
        part = _work(path, config, me, n, stop, as_rows=True)
    except BaseException:  # noqa: BLE001 - reported to the parent, which falls back
        part = _Part(abort=f"worker {me} failed:\n{traceback.format_exc()}")
    if part.abort is not None:
        stop.set()
    conn.send(part)
    conn.close()


def detect_parallel(path: str | Path, config: Config, n: int) -> Any | None:
    """Run `n` workers (this process is worker 0) and merge them into a `report.Detected`.

    Returns None when the input must be read in one process (see the module docstring).
    Raises what `open_recording` raises for an unusable file.
    """
    return _run(str(path), config, n)


def _run(path: str, config: Config, n: int) -> Any | None:
    from gapwatch.offline.report import Detected

    header, stream = open_recording(path)
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
    try:
        parts = [_work(path, config, 0, n, stop)]
    except BaseException:
        stop.set()
        raise
    if parts[0].abort is not None:
        stop.set()
    for proc, recv in children:
        try:
            parts.append(recv.recv())
        except EOFError:  # the child died without a word (killed): read in one process
            parts.append(_Part(abort="worker died"))
        proc.join()
    if any(p.abort is not None for p in parts):
        return None
    return Detected(header=header, log_events=[], **_merge(parts))


def _merge(parts: list[_Part]) -> dict[str, Any]:
    n = len(parts)
    # Gap ids: one sequence over all workers, in the order of the lines that assigned them
    # (a line assigns at most one id). new_ids[w][local id] is the id in that sequence.
    assigned = sorted(line * n + w for w, p in enumerate(parts) for line in p.id_lines)
    new_ids: list[list[int]] = [[0] for _ in parts]
    for i, key in enumerate(assigned, 1):
        new_ids[key % n].append(i)
    # Gaps: each id is one worker's, whose outputs are in order, so the last version wins as
    # in one process; their order across workers does not matter (the report sorts them).
    gaps: dict[int, Gap] = {}
    tagged_states: list[tuple[int, int, int, StateChange]] = []
    for w, p in enumerate(parts):
        ids = new_ids[w]
        built = ((line, k, Gap(*row) if is_gap else StateChange(*row))
                 for line, k, is_gap, row in p.rows)
        for line, k, o in itertools.chain(p.outputs, built):
            if type(o) is Gap:
                gid = ids[o.gap_id]
                # Renumbered in place: this object was built by this module's own detector
                # (or from a worker's row just above) and nothing else has seen it yet; a new
                # one would cost ~3 µs a gap, ~1 s over 24 h x 8 GPUs.
                object.__setattr__(o, "gap_id", gid)
                gaps[gid] = o
            else:
                st: StateChange = o  # type: ignore[assignment]
                if line == _END and (m := _RETRACTED.search(st.reason)):
                    reason = _RETRACTED.sub(f"gap {ids[int(m.group(1))]} retracted", st.reason)
                    st = dataclasses.replace(st, reason=reason)
                tagged_states.append((line, k, w, st))
    # States in the one-process order: by line, then as emitted (line, order) is unique.
    tagged_states.sort(key=lambda x: (x[0], x[1], x[2]))
    states = [st for _line, _k, _w, st in tagged_states]
    totals = sorted((t for p in parts for t in p.totals), key=lambda t: t.gpu)
    # Reading counters in order of first occurrence, then the detector's (as one process).
    firsts: dict[str, int] = {}
    counts: dict[str, int] = {}
    for p in parts:
        for name, (count, first) in p.counters.items():
            counts[name] = counts.get(name, 0) + count
            firsts[name] = min(firsts.get(name, first), first)
    counters = {k: counts[k] for k in sorted(counts, key=lambda k: firsts[k])}
    det_counts: dict[str, int] = {}
    for p in parts:
        for name, v in p.detector_counters.items():
            det_counts[name] = det_counts.get(name, 0) + v
    for name, v in det_counts.items():
        if v:
            counters[f"detector_{name}"] = v
    problems = [msg for _line, msg in sorted(pr for p in parts for pr in p.problems)]
    return {"gaps": gaps, "states": states, "totals": totals, "counters": counters,
            "problems": problems[:MAX_PROBLEMS]}
