"""The report over a recording with GPU health and GPU errors: the highest readings and the
throttling per GPU, each XID/ECC/replay event with its time and words, the chaining figure
with its basis, in text and JSON; the same with the GPUs split across worker processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.simulate import simulate
from gapwatch.config import Config
from gapwatch.core.models import Gap, GpuHealth, HardwareEvent, Record, StateChange
from gapwatch.engine.store import SeriesStore
from gapwatch.offline.report import build_report, to_json
from gapwatch.offline.report_text import format_text
from gapwatch.sinks.recorder import write_recording
from gapwatch.sources.files import read_any

GIB = 1 << 30


def _recording(tmp_path: Path, more: tuple[tuple[str, int], ...] = ()) -> Path:
    """A recording with health readings, an XID on GPU 1 and `more` GPU errors on GPU 0
    (kind, count)."""
    run = simulate("pageable", duration_s=40.0, gpus=2)
    t0 = run.header.started_wall_s
    extra: list[Record] = []
    for s in range(40):
        for gpu in (0, 1):
            extra.append(GpuHealth(
                gpu=gpu, t_mono_ns=run.header.started_mono_ns + s * 10**9, t_wall_s=t0 + s,
                memory_used_bytes=(60 + s // 10) * GIB, memory_total_bytes=141 * GIB,
                temperature_c=None if gpu else 70.0 + s / 4, power_w=600.0 + s,
                power_limit_w=700.0, clocks_event_mask=0x4 if s >= 30 and gpu == 0 else 0x0))
    extra.append(HardwareEvent(gpu=1, t_mono_ns=run.header.started_mono_ns + 20 * 10**9,
                               t_wall_s=t0 + 20, kind="xid", code=79))
    for i, (kind, count) in enumerate(more):
        extra.append(HardwareEvent(gpu=0, t_mono_ns=run.header.started_mono_ns + (21 + i) * 10**9,
                                   t_wall_s=t0 + 21 + i, kind=kind,  # type: ignore[arg-type]
                                   count=count))
    kept = [r for r in [*run.records, *extra] if not isinstance(r, Gap | StateChange)]
    records = sorted(kept, key=lambda r: r.t_wall_s)
    path = tmp_path / "rec.jsonl.gz"
    write_recording(path, run.header, records)
    return path


def _store_counts(path: Path) -> dict[str, int]:
    """What the live store (replay's, `/metrics`') counts by kind over `path`'s GPU errors."""
    rec = read_any(path)
    store = SeriesStore(list(rec.header.gpus), period_s=0.1)
    for r in rec.records:
        if isinstance(r, HardwareEvent):
            store.add_hw_event(r)
    by_kind: dict[str, int] = {}
    for (_, kind), n in store.snapshot().hw_counts.items():
        by_kind[kind] = by_kind.get(kind, 0) + n
    return by_kind


@pytest.mark.parametrize("workers", [1, 2])
def test_the_report_says_health_errors_and_chaining_per_gpu(tmp_path: Path, workers: int) -> None:
    report = build_report(_recording(tmp_path), Config(), workers=workers)
    text = format_text(report)
    # The power cap slowed the clocks: said, but not "held down" (heat and HW slowdowns are).
    assert "GPU 0: up to 80°C, 639 of 700 W, 63.0 of 141 GiB; clocks slowed: power cap in " \
        "10 of 40 readings" in text
    assert "GPU 1: 639 of 700 W, 63.0 of 141 GiB" in text  # temperature never read: not said
    assert "GPU errors: 1" in text and "GPU 1: XID 79 (critical GPU error" in text
    assert "Chaining (share of host-to-device copy time that ran while SMs were busy)" in text
    assert "(estimated from PCIe bytes and SM activity)" in text
    doc = to_json(report)
    assert doc["gpu_errors"]["count"] == 1
    assert doc["gpu_errors"]["items"][0]["kind"] == "xid"
    assert doc["gpu_errors"]["items"][0]["code"] == 79
    assert doc["health"]["0"]["throttled_readings"] == {"power cap": 10}
    assert doc["health"]["1"]["max_temperature_c"] is None
    assert set(doc["chaining"]) == {"0", "1"}
    assert all(c["basis"] == "pcie" and 0 < c["share"] < 1 for c in doc["chaining"].values())


def test_a_recording_without_health_says_nothing_of_it(tmp_path: Path) -> None:
    run = simulate("chained", duration_s=10.0)
    path = tmp_path / "rec.jsonl.gz"
    write_recording(path, run.header, [r for r in run.records if r.type not in ("gap", "state")])
    report = build_report(path, Config(), workers=1)
    text = format_text(report)
    assert "GPU health" not in text
    assert to_json(report)["gpu_errors"] == {"count": 0, "errors_by_kind": {}, "items": []}


@pytest.mark.parametrize("workers", [1, 2])
def test_the_reports_gpu_error_count_is_the_errors_metrics_counts_not_the_events(
        tmp_path: Path, workers: int) -> None:
    """40 uncorrected ECC errors read in one health reading are one event and 40 errors: the
    report said `GPU errors: 1` (its JSON `count` 1) where /metrics'
    `gapwatch_gpu_hardware_events_total{kind="ecc_uncorrected"}` read 40."""
    path = _recording(tmp_path, (("ecc_uncorrected", 40), ("pcie_replay", 100)))
    report = build_report(path, Config(), workers=workers)
    text = format_text(report)
    assert "GPU errors: 141 (ecc_uncorrected 40, pcie_replay 100, xid 1) in 3 events" in text
    assert "GPU 0: 40 uncorrected ECC errors" in text
    doc = to_json(report)["gpu_errors"]
    assert doc["count"] == 3  # events, as listed in items
    assert doc["errors_by_kind"] == {"xid": 1, "ecc_uncorrected": 40, "pcie_replay": 100}
    # What the live store counts for /metrics over the same records.
    by_kind = _store_counts(path)
    assert by_kind == doc["errors_by_kind"]


def test_a_recordings_0_w_power_limit_is_no_limit_in_the_report_and_on_metrics() -> None:
    """A recording written before the NVML source refused a 0 W limit holds 0: the report said
    "450 of 0 W" and /metrics exported 0 where the header said none. Every reader takes the
    limit from `GpuHealth.limit_w`."""
    from gapwatch.core.health import HealthStats
    from gapwatch.sinks.prometheus import _health

    old = GpuHealth(gpu=0, t_mono_ns=0, t_wall_s=1.0, power_w=450.0, power_limit_w=0.0)
    stats = HealthStats(gpu=0)
    stats.add(old)
    assert stats.power_limit_w is None and " of 0" not in stats.words()
    served = {fam.name for fam in _health({0: old}) if fam.samples}
    assert "gapwatch_gpu_power_watts" in served
    assert "gapwatch_gpu_power_limit_watts" not in served


@pytest.mark.parametrize("workers", [1, 2])
def test_a_state_event_counts_one_whatever_its_recorded_count_and_once_a_run(
        tmp_path: Path, workers: int) -> None:
    """A row remap failure recorded with `count: 1000000` read `GPU errors: 1000000`, a
    pending one with `count: 0` counted 0 (its alert and header quiet), 50 copies of one in a
    session 50 alerts' worth. A state is true or not: once per GPU, in the report as in a
    session's store (`health.counted`)."""
    more: tuple[tuple[str, int], ...] = (("row_remap_failure", 1_000_000),
                                         ("row_remap_failure", 1), ("row_remap_pending", 0),
                                         ("gpu_lost", 3))
    report = build_report(_recording(tmp_path, more), Config(), workers=workers)
    doc = to_json(report)["gpu_errors"]
    assert doc["errors_by_kind"] == {"xid": 1, "row_remap_failure": 1, "row_remap_pending": 1,
                                     "gpu_lost": 1}
    assert doc["count"] == 4
    more = (*more, *(("row_remap_failure", 1),) * 48)
    rec = read_any(_recording(tmp_path, more))
    store = SeriesStore(list(rec.header.gpus), period_s=0.1)
    for r in rec.records:
        if isinstance(r, HardwareEvent):
            store.add_hw_event(r)
    snap = store.snapshot()
    assert snap.hw_counts[(0, "row_remap_pending")] == 1 and snap.lasting_states(0) == [
        "ROW REMAP FAILED", "row remap pending"]
    assert sum(1 for e in snap.hw_events if e.kind == "row_remap_failure") == 1


@pytest.mark.parametrize("workers", [1, 2])
def test_a_state_repeated_in_a_recording_is_one_in_the_report_as_in_replay_and_metrics(
        tmp_path: Path, workers: int) -> None:
    """A GPU lost 4 times and a row remap pending 3 times in one recording read `gpu_lost 4`,
    `row_remap_pending 3` in the report, where replay's store and /metrics count a state once
    a session (`health.counted`): one rule, the report's the store's."""
    more = (("gpu_lost", 1),) * 4 + (("row_remap_pending", 1),) * 3 + (("ecc_uncorrected", 2),)
    path = _recording(tmp_path, more)
    doc = to_json(build_report(path, Config(), workers=workers))["gpu_errors"]
    by_kind = _store_counts(path)
    assert doc["errors_by_kind"] == by_kind == {"xid": 1, "gpu_lost": 1, "row_remap_pending": 1,
                                                "ecc_uncorrected": 2}
    assert doc["count"] == len(doc["items"]) == 4  # the events that are news, as listed


def _shifted(r: Record, wall_s: float, mono_ns: int) -> Record:
    """`r` as a later run read it: its wall time `wall_s` on, its monotonic `mono_ns` on."""
    from msgspec import structs

    fields: dict[str, float | int] = {}
    if hasattr(r, "t_wall_s"):
        fields["t_wall_s"] = r.t_wall_s + wall_s
    if hasattr(r, "t_mono_ns"):
        fields["t_mono_ns"] = r.t_mono_ns + mono_ns
    return structs.replace(r, **fields)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_state_said_again_in_a_later_run_of_a_set_is_news_counted_and_listed(
        tmp_path: Path, workers: int) -> None:
    """A folder of a week's runs (one recording set), GPU 0 lost on Monday's run and again, after
    a reset, on Thursday's: counted once over the whole set, it read `gpu_lost 1` and listed
    Monday's loss alone, the recurring loss (the news that matters) unsaid. A state is news once
    per GPU per run: a repeat within a run is not (`test_a_state_repeated_in_a_recording_...`),
    a later run's is."""
    from msgspec import structs

    from gapwatch.sources.recording import read_recording

    monday = read_recording(_recording(tmp_path, (("gpu_lost", 1),) * 2))
    header, records = monday.header, list(monday.records)
    folder = tmp_path / "week"
    folder.mkdir()
    write_recording(folder / "gw.000001.jsonl.gz", header, records)
    days_s, boot_ns = 3 * 86400.0, 7 * 10**12  # Thursday, after a reboot: another clock
    thursday = structs.replace(header, started_wall_s=header.started_wall_s + days_s,
                               started_mono_ns=header.started_mono_ns + boot_ns)
    write_recording(folder / "gw.000002.jsonl.gz", thursday,
                    [_shifted(r, days_s, boot_ns) for r in records])
    assert read_any(folder).runs == 2
    doc = to_json(build_report(folder, Config(), workers=workers))["gpu_errors"]
    assert doc["errors_by_kind"] == {"xid": 2, "gpu_lost": 2}
    lost = [e["t_wall_s"] for e in doc["items"] if e["kind"] == "gpu_lost"]
    assert lost == [header.started_wall_s + 21, header.started_wall_s + 21 + days_s]
    assert doc["count"] == len(doc["items"]) == 4


def _two_runs(tmp_path: Path, shift_s: float, header_shift_s: float | None = None) -> Path:
    """A folder of two runs (one recording set), GPU 0 lost in each: the second's records
    `shift_s` after the first's, its header's start `header_shift_s` after (default:
    `shift_s`), on another monotonic clock (a reboot's)."""
    from msgspec import structs

    from gapwatch.sources.recording import read_recording

    first = read_recording(_recording(tmp_path, (("gpu_lost", 1),) * 2))
    header, records = first.header, list(first.records)
    folder = tmp_path / "runs"
    folder.mkdir()
    write_recording(folder / "gw.000001.jsonl.gz", header, records)
    boot_ns = 7 * 10**12
    later = structs.replace(
        header, started_wall_s=header.started_wall_s + (
            shift_s if header_shift_s is None else header_shift_s),
        started_mono_ns=header.started_mono_ns + boot_ns)
    write_recording(folder / "gw.000002.jsonl.gz", later,
                    [_shifted(r, shift_s, boot_ns) for r in records])
    return folder


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize(("shift_s", "header_shift_s"), [
    (10.0, None),  # the clock stepped back at the reboot: run 2 began before run 1's loss
    # Run 2's header says a start 50 s after its first samples (within what a header is
    # believed: `recording.START_LIE_AFTER_S`), after its loss at 21 s.
    (100.0, 150.0),
])
def test_a_state_in_a_later_run_is_news_however_the_runs_clocks_fall(
        tmp_path: Path, workers: int, shift_s: float, header_shift_s: float | None) -> None:
    """GPU 0 lost in each of two runs of a set: told apart by their headers' start times, a run
    whose clock overlapped the one before (stepped back at the reboot a lost GPU forces:
    run 2 began 10 s after run 1, before its loss at 21 s) or whose header said a start after
    its loss was not a new run where its records came, and its loss went unlisted
    (`gpu_lost 1`). A run begins where the set reader's stream reaches its first record."""
    folder = _two_runs(tmp_path, shift_s, header_shift_s)
    rec = read_any(folder)
    assert rec.runs == 2
    t0 = rec.header.started_wall_s
    doc = to_json(build_report(folder, Config(), workers=workers))["gpu_errors"]
    assert doc["errors_by_kind"] == {"xid": 2, "gpu_lost": 2}
    lost = sorted(e["t_wall_s"] for e in doc["items"] if e["kind"] == "gpu_lost")
    assert lost == [t0 + 21, t0 + 21 + shift_s]
    assert doc["count"] == len(doc["items"]) == 4


@pytest.mark.parametrize("shift_s", [3 * 86400.0, 10.0])
def test_replay_and_the_report_agree_on_a_state_in_each_run_of_a_set(
        tmp_path: Path, shift_s: float) -> None:
    """GPU 0 lost in each of two runs of a set: the report said `gpu_lost 2`, `replay` of the
    folder (its store: `/metrics`, the header, the footer) `gpu_lost 1`, its store taking a
    replayed set for one session. Both now count a state once per GPU per run, the runs told
    apart where the set reader's stream reaches each one's first record (a clock that stepped
    back at the reboot, `shift_s` 10, as well)."""
    from gapwatch.core.config import DetectorConfig
    from gapwatch.core.detector import GapDetector
    from gapwatch.engine.replay import ReplayDriver
    from gapwatch.engine.session import Session

    folder = _two_runs(tmp_path, shift_s)
    rec = read_any(folder)
    store = SeriesStore(list(rec.header.gpus), period_s=0.1)
    session = Session(rec.header, store, GapDetector(DetectorConfig(), list(rec.header.gpus)))
    ReplayDriver(rec, session, speed=0.0).run()
    replayed: dict[str, int] = {}
    for (_, kind), n in store.snapshot().hw_counts.items():
        replayed[kind] = replayed.get(kind, 0) + n
    report = to_json(build_report(folder, Config()))["gpu_errors"]["errors_by_kind"]
    assert replayed == report == {"xid": 2, "gpu_lost": 2}
