"""The parallel report (GPUs split across processes) says exactly what the one-process one says.

`build_report(..., workers=N)` forces N processes whatever the file size; `workers=1` is the
one-process path. Equality is checked on the JSON document (gaps with ids, hints, evidence;
breakdowns; payoff; counters; problems) and on the state changes in order.
"""

from __future__ import annotations

import fcntl
import gzip
import pickle
from pathlib import Path
from typing import Any

import msgspec
import pytest
from msgspec.structs import replace
from shared_files import made_once, sim_with_log_once

from evaluation.simulate import simulate
from gapwatch.config import Config
from gapwatch.core.codec import gpu_line_prefix, gpu_line_prefix_type_last
from gapwatch.core.models import (
    CopyRecord,
    GpuSample,
    HostSample,
    LinkState,
    LogEvent,
    ProcessMemory,
    StateChange,
    link_bytes_per_s,
)
from gapwatch.offline import report, report_parallel, startup_lines
from gapwatch.offline.compare import read_side
from gapwatch.offline.detect import Detected
from gapwatch.offline.log_around import LogAround
from gapwatch.offline.report import ReportData, build_report, to_json
from gapwatch.offline.report_parallel import MIN_PARALLEL_BYTES, detect_parallel, plan_workers
from gapwatch.sinks.recorder import write_recording
from gapwatch.sources.files import header_of
from gapwatch.sources.recording import Reading, json_bytes, read_recording
from gapwatch.sources.time_window import TimeWindow
from gapwatch.sources.trace_csv import read_trace_csv

#: The split reports and parses below fork their workers as `gapwatch report` does, which they
#: do only with this process's main thread alone (tests/conftest.py, `no_stray_threads`).
pytestmark = pytest.mark.usefixtures("no_stray_threads")

DATA = Path(__file__).parent / "data"


def _same(path: Path, workers: int | tuple[int, ...], logs: list[str] | None = None
          ) -> ReportData:
    """The one-process report of `path`, checked equal to the report split across each
    number of `workers` (read once for all of them: it is the same one-process read)."""
    one = build_report(path, Config(), logs, workers=1)
    encoded = msgspec.json.encode(to_json(one))
    for n in (workers,) if isinstance(workers, int) else workers:
        many = build_report(path, Config(), logs, workers=n)
        assert msgspec.json.encode(to_json(many)) == encoded, n
        assert many.states == one.states, n
    return one


@pytest.fixture(scope="module")
def sim_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 simulated GPUs in the pageable worst case (a gap every ~2 s on every GPU), 92.5 s:
    three GPUs end inside a gap, whose end-of-data state names the retracted gap's id."""
    def make(folder: Path) -> None:
        res = simulate("pageable", seed=3, duration_s=92.5, gpus=4)
        write_recording(folder / "sim.jsonl", res.header, res.records)

    # Made once per run, not in each worker that draws a test of this module: read only.
    return made_once(tmp_path_factory, "report-parallel-sim", make) / "sim.jsonl"


def test_sim_recording_reports_the_same_gaps_ids_and_states(sim_recording: Path) -> None:
    report = _same(sim_recording, (2, 3))
    assert len(report.gaps) > 100
    assert {g.gpu for g in report.gaps} == {0, 1, 2, 3}
    # Ids count up over all GPUs in data order (the parallel path renumbers its workers').
    ids = [g.gap_id for g in sorted(report.gaps, key=lambda g: g.gap_id)]
    assert len(set(ids)) == len(ids) and ids[0] == 1
    assert sum("retracted" in st.reason for st in report.states) == 3


def test_trace_on_two_gpus_reports_the_same(tmp_path: Path) -> None:
    """The shared pageable H200 trace (stale GPM rows, 50 ms) as GPU 0, and again as GPU 1."""
    rec = read_trace_csv(DATA / "pageable.csv")
    records = list(rec.records)
    twice = records + [msgspec.structs.replace(r, gpu=1) for r in records if isinstance(r, GpuSample)]
    twice.sort(key=lambda r: r.t_mono_ns if isinstance(r, GpuSample | HostSample) else 0)
    gpus = [rec.header.gpus[0], msgspec.structs.replace(rec.header.gpus[0], index=1)]
    path = tmp_path / "trace.jsonl"
    write_recording(path, msgspec.structs.replace(rec.header, gpus=gpus), twice)
    report = _same(path, 2)
    assert [g.gpu for g in report.gaps].count(0) == [g.gpu for g in report.gaps].count(1) > 0


def test_each_gpus_unread_first_sample_is_no_miss_split_or_not(tmp_path: Path) -> None:
    """As NVML's GPM records it, every GPU's first sample has no reading; GPU 1 misses one
    later too. That one miss is the count, in one process and split (a GPU's first sample
    is its worker's: each GPU belongs to one worker)."""
    res = simulate("chained", seed=3, duration_s=20, gpus=2)
    seen = {0: 0, 1: 0}
    records = []
    for r in res.records:
        if isinstance(r, GpuSample):
            seen[r.gpu] += 1
            if seen[r.gpu] == 1 or (r.gpu, seen[r.gpu]) == (1, 10):
                r = replace(r, sm_active_pct=None, sm_source=None)
        records.append(r)
    path = tmp_path / "first-unread.jsonl"
    gpm = replace(res.header, gpus=[replace(g, sm_source="gpm") for g in res.header.gpus])
    write_recording(path, gpm, records)
    report = _same(path, 2)
    assert report.counters["detector_no_data"] == 1


def test_bad_lines_are_counted_once_and_listed_in_line_order(
    sim_recording: Path, tmp_path: Path
) -> None:
    lines = sim_recording.read_bytes().splitlines(keepends=True)
    gpu1 = next(i for i, ln in enumerate(lines) if ln.startswith(gpu_line_prefix(1)))
    host = next(i for i, ln in enumerate(lines) if ln.startswith(b'{"type":"host",'))
    lines[gpu1] = lines[gpu1].replace(b'"sm_active_pct":', b'"sm_active_pct":"x",' b'"_":', 1)
    lines[host] = lines[host].replace(b'"t_wall_s":', b'"t_wall_s":null,"_":', 1)
    lines[50] = b"not json\n"
    lines[60] = b"\n"
    lines.append(b'{"gpu":0,"t_mono_ns":')  # cut by kill -9
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(lines))
    report = _same(path, 2)
    assert report.counters["bad_records"] == 3
    assert report.counters["partial_line"] == 1
    assert len(report.problems) == 4


def test_lines_in_any_key_order_report_the_same_in_parallel(
    sim_recording: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shortcut that passes over other workers' lines looks at how the codec writes a GPU
    sample; lines written with their keys in another order (the type last, as gapwatch once
    wrote them) are read by every worker, and each keeps only its own GPUs' samples."""
    lines = sim_recording.read_bytes().splitlines(keepends=True)
    for i in range(1, len(lines), 2):
        doc = msgspec.json.decode(lines[i])
        lines[i] = msgspec.json.encode(dict(reversed(doc.items()))) + b"\n"
    assert sum(ln.endswith(b'"type":"gpu"}\n') for ln in lines) > 1000
    path = tmp_path / "reordered.jsonl"
    path.write_bytes(b"".join(lines))
    splits = _spy_on_splits(monkeypatch)
    report = to_json(_same(path, 2))
    assert splits == [True]  # it did run in two processes
    original = to_json(build_report(sim_recording, Config(), workers=1))
    assert report.pop("file") != original.pop("file")
    assert report == original


def test_a_recording_written_before_the_codec_is_split_by_its_own_line_shape(
    sim_recording: Path, tmp_path: Path
) -> None:
    """Before the codec, lines had the type last: a GPU sample began `{"gpu":N,` as a state did,
    and ended `,"type":"gpu"}`. Other workers' samples of that shape are passed over undecoded;
    a state of such a GPU is read (every worker needs the records that are not samples)."""
    lines = sim_recording.read_bytes().splitlines(keepends=True)
    for i in range(1, len(lines)):
        doc = msgspec.json.decode(lines[i])
        doc["type"] = doc.pop("type")
        lines[i] = msgspec.json.encode(doc) + b"\n"
    state = msgspec.json.encode({"gpu": 1, "t_mono_ns": 1, "t_wall_s": 1.0, "state": "GAPS",
                                 "busy_fraction": None, "reason": "", "type": "state"}) + b"\n"
    path = tmp_path / "type-last.jsonl"
    path.write_bytes(b"".join([*lines[:5], state, *lines[5:]]))
    rec = read_recording(path, Reading(skip_prefixes=(gpu_line_prefix(1),),
                                       skip_type_last=(gpu_line_prefix_type_last(1),)))
    got = list(rec.records)
    assert not [r for r in got if isinstance(r, GpuSample) and r.gpu == 1]
    assert [r for r in got if isinstance(r, GpuSample) and r.gpu == 0]
    assert [r for r in got if isinstance(r, StateChange) and r.gpu == 1]
    assert rec.counters == {}
    _same(path, 2)


def test_the_codec_writes_gpu_sample_lines_as_the_shortcut_expects(sim_recording: Path) -> None:
    samples = [ln for ln in sim_recording.read_bytes().splitlines() if b'"type":"gpu"' in ln]
    assert samples and all(ln.startswith(gpu_line_prefix(msgspec.json.decode(ln)["gpu"]))
                           for ln in samples)


def test_log_records_are_fed_to_every_worker(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # Each GPU's closed gaps listen for late evidence on their own (`EvidenceBuffer`), so a
    # split run gives every gap the events one process gives it.
    res = simulate("pageable", seed=3, duration_s=20.0, gpus=2)
    t_wall_s = res.records[40].t_wall_s  # type: ignore[union-attr]
    event = LogEvent(t_wall_s=t_wall_s, time_source="line", kind="timeline", name="GPU_START",
                     raw="GPU_START", partition=3, warning="unpinned")
    path = tmp_path / "with_log.jsonl"
    write_recording(path, res.header, [*res.records[:41], event, *res.records[41:]])
    splits = _spy_on_splits(monkeypatch)
    report = _same(path, 2)
    assert splits == [True]
    assert any(e.warning == "unpinned" for g in report.gaps for e in g.log_events)


def test_prover_status_records_are_fed_to_every_worker(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    res = simulate("host-stall", seed=3, duration_s=20.0, gpus=2, status_period_s=1.0)
    path = tmp_path / "with_status.jsonl"
    write_recording(path, res.header, res.records)
    splits = _spy_on_splits(monkeypatch)
    report = _same(path, 2)
    assert splits == [True]
    assert any(g.prover_cause for g in report.gaps)
    assert report.partitions is not None


def test_log_files_of_a_small_recording_are_read_in_one_process_unless_told(
    tmp_path: Path
) -> None:
    rec = read_trace_csv(DATA / "pageable.csv")
    path = tmp_path / "trace.jsonl"
    write_recording(path, rec.header, rec.records)
    logs = [str(DATA / "pageable.log")]
    assert plan_workers(path, logs) == 1
    report = _same(path, 2, logs)
    assert any(g.log_events for g in report.gaps)


@pytest.fixture(scope="module")
def sim_with_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """4 simulated GPUs (pageable: a gap every ~2 s on each) for 90 s, and the prover's
    log beside them (cuzk's TIMELINE lines, partitions, the engine's anchor line)."""
    return sim_with_log_once(tmp_path_factory, seed=5, duration_s=90.0, gpus=4)


def test_a_split_report_with_log_files_is_the_same_bytes(
    sim_with_log: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, log = sim_with_log
    monkeypatch.setattr(report_parallel, "MIN_PARALLEL_BYTES", 1)
    # Forked workers share the spool; a thread left running would otherwise keep the report
    # in one process (`can_share_logs`; the module's tests start with none: conftest).
    monkeypatch.setattr(report_parallel, "can_share_logs", lambda: True)
    # The one-process report, read once for both counts of workers (it was read again by
    # each parametrized case) under the CPU count the first case read it under.
    monkeypatch.setattr(report_parallel, "usable_cpus", lambda: 2)
    one = build_report(path, Config(), [str(log)], workers=1)
    splits = _spy_on_splits(monkeypatch)
    for workers in (2, 3):
        monkeypatch.setattr(report_parallel, "usable_cpus", lambda n=workers: n)
        # Logs no longer keep it in one process.
        assert plan_workers(path, [str(log)]) == workers
        many = build_report(path, Config(), [str(log)])  # as `report` picks
        assert splits.pop() is True  # it did split (a split run that gave up reads in one)
        assert msgspec.json.encode(to_json(many)) == msgspec.json.encode(to_json(one)), workers
    assert sum(len(g.log_events) for g in one.gaps) > 1000
    assert one.partitions is not None and one.partitions.partitions


def test_a_split_report_with_logs_and_a_bad_sample_line_is_read_in_one_process(
    sim_with_log: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bad line of a GPU sample is no sample in one process, but the other workers read its
    time as a sample's while they pass over it: the split run gives up."""
    path, log = sim_with_log
    lines = path.read_bytes().splitlines(keepends=True)
    gpu1 = [i for i, ln in enumerate(lines) if ln.startswith(gpu_line_prefix(1))][500]
    lines[gpu1] = lines[gpu1].replace(b'"sm_active_pct":', b'"sm_active_pct":"x","_":', 1)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(lines))
    monkeypatch.setattr(report_parallel, "can_share_logs", lambda: True)  # as above
    splits = _spy_on_splits(monkeypatch)
    assert _same(bad, 2, [str(log)]).counters["bad_records"] == 1
    assert splits == [False]  # the split run gave up: read in one process


def test_a_gzip_recording_is_split_by_the_json_it_holds_not_its_size_on_disk(
    sim_recording: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gz = tmp_path / "sim.jsonl.gz"
    gz.write_bytes(gzip.compress(sim_recording.read_bytes()))
    assert gz.stat().st_size * 5 < sim_recording.stat().st_size
    assert abs(json_bytes(gz) - sim_recording.stat().st_size) < 0.01 * json_bytes(gz)
    monkeypatch.setattr(report_parallel, "usable_cpus", lambda: 2)
    monkeypatch.setattr(report_parallel, "MIN_PARALLEL_BYTES", sim_recording.stat().st_size // 2)
    assert plan_workers(gz, []) == plan_workers(sim_recording, []) == 2
    _same(gz, 2)


def test_a_recording_still_being_written_is_read_in_one_process(
    sim_recording: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each worker would read a file that `record` is still writing to wherever it stood when
    that worker got there: one process reads it once, to where it stands."""
    monkeypatch.setattr(report_parallel, "usable_cpus", lambda: 2)
    monkeypatch.setattr(report_parallel, "MIN_PARALLEL_BYTES", 0)
    folder = tmp_path / "set"
    folder.mkdir()
    live = folder / "gw.000001.jsonl"
    live.write_bytes(sim_recording.read_bytes())
    assert plan_workers(live, []) == plan_workers(folder, []) == 2
    with open(live, "rb") as writer:
        fcntl.flock(writer, fcntl.LOCK_EX)  # as the recorder holds its file while it writes
        assert plan_workers(live, []) == plan_workers(folder, []) == 1


def test_only_large_multi_gpu_recordings_are_split(sim_recording: Path) -> None:
    assert sim_recording.stat().st_size < MIN_PARALLEL_BYTES
    assert plan_workers(sim_recording, []) == 1
    assert plan_workers(DATA / "pageable.csv", []) == 1


def _one_gives_up_while_the_other_floods(sim_recording: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Worker 0 gives up (here: told to; in a file, e.g. more bad lines of its own GPUs than
    `MAX_PROBLEM_LINES`) while worker 1 has far more gaps than a pipe holds."""
    gap = build_report(sim_recording, Config(), workers=1).gaps[0]
    real_work = report_parallel._work

    def work(job: report_parallel._Job, me: int, end_of_data: object) -> report_parallel._Part:
        if me == 0:
            return report_parallel._Part(abort="stopped")
        part = real_work(job, me, None)
        part.gaps = [gap] * 20_000  # a few MB pickled: the pipe holds 64 KiB
        return part

    monkeypatch.setattr(report_parallel, "_work", work)  # the forked worker runs it too


def test_a_worker_still_sending_its_gaps_is_stopped_when_another_gives_up(
    sim_recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report goes to one process at once instead of waiting forever on a worker blocked
    writing its gaps."""
    _one_gives_up_while_the_other_floods(sim_recording, monkeypatch)
    assert detect_parallel(sim_recording, Config(), 2) is None


def test_a_worker_that_inherited_a_sigterm_handler_is_stopped_all_the_same(
    sim_recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same, from a process that catches SIGTERM (as `record` does, or any caller): the
    forked worker inherits the handler, so only SIGKILL stops it (with SIGTERM this hung)."""
    import signal

    _one_gives_up_while_the_other_floods(sim_recording, monkeypatch)
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        assert detect_parallel(sim_recording, Config(), 2) is None
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_gpus_are_dealt_round_robin_and_worker_0_takes_one_fewer_with_logs() -> None:
    from gapwatch.offline.report_parallel import _owners

    for n_gpus in range(1, 11):
        for n in range(1, 5):
            gpus = list(range(0, 2 * n_gpus, 2))
            assert _owners(gpus, n) == {g: k % n for k, g in enumerate(gpus)}
            lighter = _owners(gpus, n, lighter_first=True)
            counts = [list(lighter.values()).count(w) for w in range(n)]
            even = [list(_owners(gpus, n).values()).count(w) for w in range(n)]
            if n > 1 and even[0] > 1:
                assert counts[0] == even[0] - 1 and sum(counts) == n_gpus
                assert max(counts) - min(counts[1:]) <= 1
            else:
                assert counts == even
    assert _owners(list(range(8)), 2, lighter_first=True) == {
        0: 0, 1: 1, 2: 0, 3: 1, 4: 0, 5: 1, 6: 1, 7: 1}


def test_a_compare_side_with_log_files_is_split_and_reads_as_in_one_process(
    sim_with_log: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`compare` detects each side as `report` does: split across processes with `--log`
    files too (it read a side with logs in one process), the prover's settings read from every
    log event in this process, as one process reads them."""
    path, log = sim_with_log
    monkeypatch.setattr(report_parallel, "MIN_PARALLEL_BYTES", 1)
    monkeypatch.setattr(report_parallel, "can_share_logs", lambda: True)
    splits = _spy_on_splits(monkeypatch)
    monkeypatch.setattr(report_parallel, "usable_cpus", lambda: 2)
    split = read_side("AFTER", path, Config(), [str(log)])
    assert splits == [True]
    monkeypatch.setattr(report_parallel, "usable_cpus", lambda: 1)
    one = read_side("AFTER", path, Config(), [str(log)])
    assert splits == [True]  # one process: no split tried
    assert split == one
    assert split.settings.values and split.partitions_per_hour


def _traced_recording(path: Path) -> Path:
    """4 simulated GPUs with the copy trace (5 copies a partition), a copy of no watched GPU,
    /proc readings of the prover on each GPU (its pid changes once) and link states (GPU 1's
    trained down from 5 s on), as `record --source nvml --copytrace` writes them."""
    res = simulate("pageable", seed=3, duration_s=60.0, gpus=4, copies_per_partition=5)
    out: list[Any] = []
    for r in res.records:
        out.append(r)
        if isinstance(r, GpuSample) and r.t_mono_ns % 10**9 < 10**8:  # about a second apart
            t = (r.t_mono_ns - res.header.started_mono_ns) // 10**9
            out.append(ProcessMemory(r.t_mono_ns, r.t_wall_s, r.gpu, 4242 if t < 30 else 4343,
                                     "cuzk", 8 << 30, 2 << 30))
            if t == 5 and r.gpu in (1, 2):
                gen = 3 if r.gpu == 1 else 5
                out.append(LinkState(r.gpu, r.t_mono_ns, r.t_wall_s, gen, 16, 5, 16,
                                     link_bytes_per_s(gen, 16), link_bytes_per_s(5, 16)))
        elif isinstance(r, CopyRecord) and r.correlation_id == 7:
            out.append(replace(r, gpu=None, correlation_id=-7))
    write_recording(path, res.header, out)
    return path


def test_a_traced_recording_is_split_by_gpu_and_reports_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copies go to their GPU's worker (of no GPU: to this process), /proc readings and link
    states to every worker: the split report is the one-process report (they sent the report
    to one process before)."""
    path = _traced_recording(tmp_path / "traced.jsonl")
    monkeypatch.setattr(report_parallel, "can_share_logs", lambda: True)  # forked workers
    splits = _spy_on_splits(monkeypatch)
    one = _same(path, 2)
    assert splits == [True]
    rows = one.copies.rows if one.copies is not None else []
    assert {r.gpu for r in rows} == {None, 0, 1, 2, 3}
    assert all(r.memory_kind == "pageable" for r in rows)
    assert all(g.copies.traced for g in one.gaps)
    down = {g.gpu for g in one.gaps if g.link_current_bytes_per_s is not None}
    assert down == {1}


def test_a_compare_side_with_copies_is_split_and_reads_as_in_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _traced_recording(tmp_path / "traced.jsonl")
    monkeypatch.setattr(report_parallel, "MIN_PARALLEL_BYTES", 1)
    monkeypatch.setattr(report_parallel, "can_share_logs", lambda: True)  # forked workers
    splits = _spy_on_splits(monkeypatch)
    monkeypatch.setattr(report_parallel, "usable_cpus", lambda: 2)
    split = read_side("AFTER", path, Config(), [])
    monkeypatch.setattr(report_parallel, "usable_cpus", lambda: 1)
    one = read_side("AFTER", path, Config(), [])
    assert splits == [True]
    assert len(list(one.copies)) > 500
    assert split == one


def test_spawned_workers_that_meet_a_copy_send_the_report_to_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spawned worker cannot be handed a file for its copies: the report is read in one
    process, the same."""
    path = _traced_recording(tmp_path / "traced.jsonl")
    monkeypatch.setattr(report_parallel, "can_share_logs", lambda: False)  # spawned workers
    splits = _spy_on_splits(monkeypatch)
    _same(path, 2)
    assert splits == [False]


def _spy_on_splits(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each split run tried went through (True) or fell back to one process."""
    splits: list[bool] = []
    real = detect_parallel

    def spy(*args: Any, **kwargs: Any) -> Detected | None:
        found = real(*args, **kwargs)
        splits.append(found is not None)
        return found

    monkeypatch.setattr(report, "detect_parallel", spy)
    return splits


def _segments(src: Path, folder: Path, parts: int, damaged: tuple[int, ...] = ()) -> Path:
    """`src` cut into `parts` segments of one recording set in `folder` (the recorder's way:
    each starts with the session's header, with a set id); each segment in `damaged` gets a bad
    line near its start, the first of them also a cut last line (kill -9 mid-write)."""
    header, *body = src.read_bytes().splitlines(keepends=True)
    head = msgspec.json.encode({**msgspec.json.decode(header), "set_id": "s1"}) + b"\n"
    folder.mkdir()
    size = len(body) // parts + 1
    for k in range(parts):
        lines = body[k * size:(k + 1) * size]
        if k in damaged:
            lines = lines[:5] + [b'{"type":"gpu","gpu":0,"t_wall_s":"soon"}\n'] + lines[5:]
        if damaged and k == damaged[0]:
            lines.append(b'{"type":"host","t_mono')
        (folder / f"gw.{k + 1:06d}.jsonl").write_bytes(head + b"".join(lines))
    return folder


def test_a_folder_of_segments_is_split_across_processes_and_reports_the_same(
    sim_recording: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recording kept in segments (`record --rotate-size`, a week of them) is split by GPU
    as one file is: the same document, the bad lines of its files counted once each and in
    the order one process reads them."""
    folder = _segments(sim_recording, tmp_path / "set", 3, damaged=(0, 2))
    monkeypatch.setattr(report_parallel, "MIN_PARALLEL_BYTES", 1)
    for workers in (2, 3):
        monkeypatch.setattr(report_parallel, "usable_cpus", lambda n=workers: n)
        assert plan_workers(folder, []) == workers
    splits = _spy_on_splits(monkeypatch)
    one = _same(folder, (2, 3))  # problems included, in order
    assert splits == [True, True]  # it did split, in two and in three processes
    assert one.counters["bad_records"] == 2 and one.counters["partial_line"] == 1
    # In reading order: the first segment's cut end (its line 1546) before the third's bad
    # line (its line 7), in the split report too (`_same`).
    assert [Path(p.split(":")[0]).name for p in one.problems] == [
        "gw.000001.jsonl", "gw.000001.jsonl", "gw.000003.jsonl"]
    assert "incomplete last line" in one.problems[1]
    assert len(one.gaps) > 100


@pytest.fixture(scope="module")
def four_minutes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 simulated GPUs for 4 minutes (tests/test_time_window.py's): cut into segments, the
    90 s recordings above happen to give the same ids however a worker counts lines."""
    path, _log = sim_with_log_once(tmp_path_factory, seed=11, duration_s=240.0, gpus=4)
    return path


@pytest.mark.parametrize("parts", [5, 7, 11])
def test_segments_cut_anywhere_number_their_gaps_as_one_process_whole_and_windowed(
    four_minutes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: int
) -> None:
    """A segment whose last line is one worker's sample: every worker counts the file's lines
    alike, so the gap ids, given in the order of the lines that assigned them, are one
    process's (a worker counted a file to its own last record, and ids after it came out
    swapped), for the whole set and for a window that starts in a later segment."""
    path = four_minutes
    folder = _segments(path, tmp_path / "set", parts)
    monkeypatch.setattr(report_parallel, "MIN_PARALLEL_BYTES", 1)
    monkeypatch.setattr(report_parallel, "usable_cpus", lambda: 2)
    start = header_of(path).started_wall_s
    for window in (None, TimeWindow(start + 100.0, start + 200.0, "--since +100s --until +200s")):
        one = build_report(folder, Config(), workers=1, window=window)
        two = build_report(folder, Config(), workers=2, window=window)
        assert msgspec.json.encode(to_json(two)) == msgspec.json.encode(to_json(one))
        assert len(one.gaps) > 50


def test_a_folder_of_segments_with_log_files_is_split_and_reports_the_same(
    sim_with_log: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, log = sim_with_log
    folder = _segments(path, tmp_path / "set", 3)
    monkeypatch.setattr(report_parallel, "MIN_PARALLEL_BYTES", 1)
    monkeypatch.setattr(report_parallel, "usable_cpus", lambda: 2)
    monkeypatch.setattr(report_parallel, "can_share_logs", lambda: True)
    splits = _spy_on_splits(monkeypatch)
    one = _same(folder, 2, [str(log)])
    assert splits == [True]  # it did split
    assert sum(len(g.log_events) for g in one.gaps) > 1000


def test_a_recording_whose_gpus_broke_apart_unevenly_is_split_and_reports_the_same(
    sim_recording: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Holes that cut some GPUs' samples and not others' (lines lost mid-tick, a GPU silent
    for a while, a stall of everything that ends mid-tick): each GPU is judged silent
    against the host's samples, which every worker reads, so the workers place NO_DATA and the
    breakdown periods where one process does."""
    header, *body = sim_recording.read_bytes().splitlines(keepends=True)
    out = [header]
    for i, line in enumerate(body):
        if 300 <= i % 1500 < 300 + i % 7:  # 0-6 lines cut: a few GPUs' samples of a tick
            continue
        if 4000 <= i < 4300 and line.startswith(gpu_line_prefix(1)):  # GPU 1 silent ~7 s
            continue
        if 6000 <= i < 6400:  # every input stalled a few seconds (the host's clock lost too)
            continue
        out.append(line)
    path = tmp_path / "uneven.jsonl"
    path.write_bytes(b"".join(out))
    splits = _spy_on_splits(monkeypatch)
    report = _same(path, 3)
    assert splits == [True]
    silent = [s for s in report.states if "the other inputs go on" in s.reason]
    assert [s.gpu for s in silent] == [1]


def test_a_recording_without_host_samples_is_read_in_one_process(
    sim_recording: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the host's samples the GPUs' own samples time their silence, and a worker sees
    only its GPUs': such a recording is read in one process (the same document), the split
    given up within its first lines, not after a whole pass."""
    header, *body = sim_recording.read_bytes().splitlines(keepends=True)
    path = tmp_path / "hostless.jsonl"
    kept = [x for x in body if not x.startswith(b'{"type":"host"')]
    path.write_bytes(header + b"".join(kept))
    given_up_at: list[int] = []
    real = report_parallel._gpu_clock

    def spy(rec: Any) -> None:
        given_up_at.append(rec.line_no)
        real(rec)

    monkeypatch.setattr(report_parallel, "_gpu_clock", spy)
    splits = _spy_on_splits(monkeypatch)
    _same(path, 2)
    assert splits == [False]
    assert given_up_at and max(given_up_at) < 100 < len(kept)


def test_forked_workers_gaps_are_adopted_from_their_file_not_sent_or_written_again(
    sim_recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other workers' gap runs are adopted where they wrote them and numbered as they are
    read (a day's ~330,000 gaps took ~10 s to send, renumber and write again)."""
    monkeypatch.setattr(report_parallel, "can_share_logs", lambda: True)
    renumbered: list[int] = []
    monkeypatch.setattr(report_parallel, "_renumber",
                        lambda *args: renumbered.append(1))  # must not be called
    report = _same(sim_recording, 2)
    assert renumbered == []
    ids = sorted(g.gap_id for g in report.gaps)
    assert ids == list(range(1, len(ids) + 1))


def test_spawned_workers_send_their_gaps_and_report_the_same(
    sim_recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spawned, a worker cannot be handed a file: its gaps come over its pipe, renumbered
    into a new spool, the same report."""
    from gapwatch.offline.progress import Progress

    monkeypatch.setattr(report_parallel, "can_share_logs", lambda: False)
    splits = _spy_on_splits(monkeypatch)
    lines: list[str] = []
    ticks = iter(range(10**6))
    progress = Progress(lines.append, "gapwatch report", clock=lambda: float(next(ticks)),
                        after_s=0.0, every_s=0.0)
    one = build_report(sim_recording, Config(), workers=1)
    many = build_report(sim_recording, Config(), workers=2, progress=progress)
    assert msgspec.json.encode(to_json(many)) == msgspec.json.encode(to_json(one))
    assert splits == [True]
    assert any(line.startswith("gapwatch report: numbering the gaps 100 %") for line in lines), lines


def test_a_numbered_spool_gives_its_gaps_and_their_bytes_with_the_new_ids(tmp_path: Path) -> None:
    from gapwatch.offline.gap_spool import GapSpool, decode_gap

    gaps = build_report(_write_small(tmp_path), Config(), workers=1).gaps
    spool = GapSpool(run_items=3)  # several runs on disk
    spool.extend(gaps)
    spool.number(lambda gpu, local: 1000 * (gpu + 1) + local)
    want = [replace(g, gap_id=1000 * (g.gpu + 1) + g.gap_id) for g in gaps]
    assert list(spool) == want and spool[1] == want[1]
    assert [decode_gap(p) for p in spool.encoded()] == want


def _write_small(tmp_path: Path) -> Path:
    res = simulate("pageable", seed=2, duration_s=20.0, gpus=2)
    path = tmp_path / "small.jsonl"
    write_recording(path, res.header, res.records)
    return path


def test_a_stop_signal_between_a_workers_fork_and_its_registration_leaves_no_worker_running(
    sim_recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop signal landing right after a worker was forked, before the report knew it: the
    clean-up killed and joined the workers it knew, none, and the worker read on after the
    report had stopped (the signal storm test caught it twice in full runs). Start and
    registration are one step now: the signal is taken after it, and the worker is stopped."""
    from faults import interrupted_right_after_each_start, process_running

    started = interrupted_right_after_each_start(
        monkeypatch, lambda: detect_parallel(sim_recording, Config(), 2))
    assert started and not [pid for pid in started if process_running(pid)]


def test_spawned_workers_are_sent_a_windows_startup_lines_and_leave_its_log_on_disk_to_one_process(
    sim_recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spawned, a worker cannot be handed the spool of the log read around a window
    (`log_around.LogAround`): such a window reads in one process, the same report. The
    daemon's startup lines alone (recorded before the window, its margins holding no log
    event) go with the worker's job, as the list they were: the job holding them could not
    be pickled once they lived beside the spools."""
    monkeypatch.setattr(report_parallel, "can_share_logs", lambda: False)
    splits = _spy_on_splits(monkeypatch)
    start = header_of(sim_recording).started_wall_s
    w = TimeWindow(start + 30.0, start + 60.0, "")
    startup = [LogEvent(start - 5.0, "line", "tracing", "starting cuzk engine",
                        "INFO cuzk_core::engine: starting cuzk engine")]
    monkeypatch.setattr(startup_lines, "recorded_startup", lambda _path, _since_s: startup)

    def around(_path: Path, _window: TimeWindow, lines: list[LogEvent],
               margin: bool) -> LogAround:
        read = LogAround(lines)
        if margin:
            read.add_before(LogEvent(start + 29.0, "line", "tracing", "a line", "a line"))
        return read

    for margin, split in ((True, False), (False, True)):
        monkeypatch.setattr(startup_lines, "recorded_around",
                            lambda p, win, lines, m=margin: around(p, win, lines, m))
        one = build_report(sim_recording, Config(), workers=1, window=w)
        two = build_report(sim_recording, Config(), workers=2, window=w)
        assert msgspec.json.encode(to_json(two)) == msgspec.json.encode(to_json(one))
        assert splits[-1] is split
    assert pickle.loads(pickle.dumps(LogAround(startup))).spooled is False
