"""Time that misbehaves: clock jumps, records out of order, a GPU that goes silent. Each is said
(a warning in the report, a notice in replay, a NO_DATA state with its reason), periods stay
true (never negative, never spanning the jump) and the rest of the data is used."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from evaluation.simulate import SIM_EPOCH_WALL_S, simulate
from gapwatch.cli import main
from gapwatch.config import Config
from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import GapDetector
from gapwatch.core.models import GpuSample, HostSample, Record
from gapwatch.engine import replay as replay_mod
from gapwatch.engine.session import Session
from gapwatch.engine.store import SeriesStore
from gapwatch.offline.report import build_report, to_json
from gapwatch.sinks.recorder import write_recording
from gapwatch.sources.files import read_any

HOUR_S = 3600.0


@pytest.fixture(scope="module")
def sim() -> tuple[object, list[Record]]:
    res = simulate("pageable", seed=3, duration_s=120.0, gpus=2)
    return res.header, [r for r in res.records if r.type in ("gpu", "host")]


def _write(tmp_path: Path, name: str, sim: tuple[object, list[Record]],
           change: object) -> Path:
    header, records = sim
    path = tmp_path / name
    write_recording(path, header, change(records))  # type: ignore[arg-type, operator]
    return path


def _after(seconds: float, wall: float,
           mono_s: float) -> Callable[[list[Record]], list[Record]]:
    """Records after `seconds` into the run shifted by `wall` / `mono_s` seconds (the
    simulator's records are samples, all stamped with both clocks)."""
    def change(records: list[Record]) -> list[Record]:
        out: list[Record] = []
        for r in records:
            assert isinstance(r, GpuSample | HostSample)
            if r.t_wall_s - SIM_EPOCH_WALL_S > seconds:
                r = msgspec.structs.replace(r, t_wall_s=r.t_wall_s + wall,
                                            t_mono_ns=r.t_mono_ns + int(mono_s * 1e9))
            out.append(r)
        return out
    return change


def report_json(capsys: pytest.CaptureFixture[str], path: Path) -> dict:  # type: ignore[type-arg]
    assert main(["report", "--json", str(path)]) == 0
    return msgspec.json.decode(capsys.readouterr().out)  # type: ignore[no-any-return]


@pytest.mark.parametrize(("wall", "mono"), [(HOUR_S, HOUR_S), (HOUR_S, 0.0), (-HOUR_S, 0.0)],
                         ids=["both clocks +1 h", "wall +1 h", "wall -1 h"])
def test_a_clock_jump_cuts_the_data_and_no_period_spans_it_or_goes_negative(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sim: tuple[object, list[Record]],
    wall: float, mono: float,
) -> None:
    clean = report_json(capsys, _write(tmp_path, "clean.jsonl", sim, lambda r: r))
    doc = report_json(capsys, _write(tmp_path, "jump.jsonl", sim, _after(60.0, wall, mono)))
    durations = [b["duration_s"] for b in doc["breakdowns"]]
    assert durations and all(0 <= d <= 61 for d in durations)  # each side of the jump
    assert all(g["duration_s"] < 5 for g in doc["gaps"])  # no gap bridges the jump
    # The data on both sides is used: the same gaps, give or take the one cut at the jump.
    assert abs(len(doc["gaps"]) - len(clean["gaps"])) <= 2
    if mono == 0.0:
        assert doc["counters"]["detector_clock_jumps"] == 2  # one per GPU
        assert "the wall clock jumped against data time 2 time(s)" in doc["problems"][0]


def test_report_text_breakdowns_of_a_jumped_recording_are_true(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sim: tuple[object, list[Record]],
) -> None:
    path = _write(tmp_path, "jump.jsonl", sim, _after(60.0, -HOUR_S, 0.0))
    assert main(["report", str(path)]) == 0
    text = capsys.readouterr().out
    assert "WARNING: the data has problems" in text and "-3" not in text.split("Chaining")[1]


@pytest.mark.parametrize("order", ["second half first", "shuffled"])
def test_records_out_of_order_are_reported_loudly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sim: tuple[object, list[Record]],
    order: str,
) -> None:
    def reorder(records: list[Record]) -> list[Record]:
        if order == "shuffled":
            out = list(records)
            random.Random(1).shuffle(out)
            return out
        half = len(records) // 2
        return records[half:] + records[:half]

    path = _write(tmp_path, "ooo.jsonl", sim, reorder)
    doc = report_json(capsys, path)
    assert "were out of time order and were dropped" in doc["problems"][0]
    pct = 50 if order == "second half first" else 99
    assert f"GPU samples ({pct} %)" in doc["problems"][0]
    assert main(["report", str(path)]) == 0
    text = capsys.readouterr().out
    assert text.index("out of time order") < text.index("GPUs (busy")  # said first


def _silent_gpu1_after(seconds: float):  # type: ignore[no-untyped-def]
    def change(records: list[Record]) -> list[Record]:
        return [r for r in records if not (
            r.type == "gpu" and r.gpu == 1
            and r.t_wall_s - SIM_EPOCH_WALL_S > seconds)]
    return change


def test_a_gpu_whose_data_stops_early_is_no_data_and_the_report_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sim: tuple[object, list[Record]],
) -> None:
    path = _write(tmp_path, "silent.jsonl", sim, _silent_gpu1_after(87.0))
    doc = report_json(capsys, path)
    gpu0, gpu1 = doc["gpus"]
    assert gpu0["final_state"] != "NO_DATA" and gpu1["final_state"] == "NO_DATA"
    assert gpu0["last_data_s"] - gpu1["last_data_s"] == pytest.approx(33.0, abs=0.2)
    assert any(p.startswith("GPU 1: no data after") and "33.0 s before the end" in p
               for p in doc["problems"])
    # GPU 1's breakdown ends at its last sample, GPU 0's goes on to the end.
    ends = {b["gpu"]: b["end_s"] for b in doc["breakdowns"]}
    assert ends[1] == pytest.approx(gpu1["last_data_s"]) and ends[0] > ends[1] + 30


def test_a_gpu_the_header_names_without_a_single_sample_is_said_not_left_out_silently(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sim: tuple[object, list[Record]],
) -> None:
    """NVML lost GPU 1 at the start (or every sample of it was a bad record): the report
    listed GPU 0 alone, as if the box had one GPU, and said nothing of GPU 1."""
    def no_gpu1(records: list[Record]) -> list[Record]:
        return [r for r in records if not (isinstance(r, GpuSample) and r.gpu == 1)]
    path = _write(tmp_path, "no-gpu1.jsonl", sim, no_gpu1)
    doc = report_json(capsys, path)
    assert [g["index"] for g in doc["gpus"]] == [0]
    assert ("GPU 1: named in the recording's header, but no sample of it was read: neither "
            "busy nor idle, left out of every figure") in doc["problems"]
    assert main(["report", str(path)]) == 0
    text = capsys.readouterr().out
    assert "WARNING" in text and "GPU 1: named in the recording's header" in text
    clean = report_json(capsys, _write(tmp_path, "clean.jsonl", sim, lambda r: r))
    assert not [p for p in clean["problems"] if "named in the recording's header" in p]


def test_split_and_one_process_reports_agree_on_a_silent_gpu_and_a_jump(
    tmp_path: Path, sim: tuple[object, list[Record]],
) -> None:
    for name, change in (("silent.jsonl", _silent_gpu1_after(87.0)),
                         ("jump.jsonl", _after(60.0, HOUR_S, 0.0))):
        path = _write(tmp_path, name, sim, change)
        one = build_report(path, Config(), workers=1)
        two = build_report(path, Config(), workers=2)
        assert msgspec.json.encode(to_json(one)) == msgspec.json.encode(to_json(two))
        assert one.states == two.states


def test_split_and_one_process_reports_agree_when_one_gpu_outlasts_the_host_at_the_end(
    tmp_path: Path, sim: tuple[object, list[Record]],
) -> None:
    """The host's samples and GPU 1's stop at 100 s, GPU 0's go on 0.6 s (less than the time
    after which the GPUs' own samples become the clock): GPU 1 ended NO_DATA in one process
    (the end of the data was GPU 0's last sample) and BREAKDOWN in a split report, whose
    worker for GPU 1 never reads GPU 0's samples. As mid-run, the host is the clock."""
    def kept(r: GpuSample | HostSample, t_s: float) -> bool:
        return t_s <= 100.0 or (t_s <= 100.6 and isinstance(r, GpuSample) and r.gpu == 0)

    _assert_split_is_one_process(_write(tmp_path, "outlasts.jsonl", sim, _keeping(kept)))


def test_split_and_one_process_reports_agree_when_a_gpu_is_back_briefly_past_the_hosts_end(
    tmp_path: Path, sim: tuple[object, list[Record]],
) -> None:
    """The host and GPU 1 stop at 100 s; GPU 0 is silent from 98 s and back 101.5-101.7 s,
    more than a second past the host's last sample: the GPUs' samples time the end, which a
    split report's worker cannot (it reads only its own GPUs'), so it is read in one process
    (GPU 1 ended NO_DATA in one process, BREAKDOWN split: GPU 0's one GPU-clock check judged
    nobody, GPU 0 silent itself, and the split was kept)."""
    def kept(r: GpuSample | HostSample, t_s: float) -> bool:
        if isinstance(r, HostSample) or r.gpu == 1:
            return t_s <= 100.0
        return t_s <= 98.0 or 101.5 <= t_s <= 101.7

    _assert_split_is_one_process(_write(tmp_path, "back.jsonl", sim, _keeping(kept)))


def _keeping(kept: Callable[[GpuSample | HostSample, float], bool],
             ) -> Callable[[list[Record]], list[Record]]:
    """The simulator's samples that `kept(sample, seconds into the run)` keeps."""
    return _each(lambda r, t_s: r if kept(r, t_s) else None)


def _each(rule: Callable[[GpuSample | HostSample, float], Record | None],
          ) -> Callable[[list[Record]], list[Record]]:
    """The simulator's samples as `rule(sample, seconds into the run)` gives them: itself,
    another record in its place, or None to drop it."""
    def change(records: list[Record]) -> list[Record]:
        out: list[Record] = []
        for r in records:
            assert isinstance(r, GpuSample | HostSample)
            kept = rule(r, r.t_wall_s - SIM_EPOCH_WALL_S)
            if kept is not None:
                out.append(kept)
        return out
    return change


def _assert_split_is_one_process(path: Path) -> None:
    one = build_report(path, Config(), workers=1)
    two = build_report(path, Config(), workers=2)
    assert msgspec.json.encode(to_json(one)) == msgspec.json.encode(to_json(two))
    assert [t.final_state for t in one.totals] == [t.final_state for t in two.totals]


def test_a_gpu_that_never_gave_a_reading_is_said_so_not_silent_since_1970(
    tmp_path: Path, sim: tuple[object, list[Record]],
) -> None:
    def change(records: list[Record]) -> list[Record]:
        return [msgspec.structs.replace(r, sm_active_pct=None)
                if isinstance(r, GpuSample) and r.gpu == 1 else r for r in records]

    doc = to_json(build_report(_write(tmp_path, "unread.jsonl", sim, change), Config(),
                               workers=1))
    gpu1 = [line for line in doc["problems"] if line.startswith("GPU 1")]
    assert gpu1 == [f"GPU 1: no SM activity reading at all ({1200} samples, each without one); "
                    "NO_DATA throughout"]
    assert [g["last_data_s"] for g in doc["gpus"] if g["index"] == 1] == [None]


def test_the_end_of_the_data_counts_samples_without_a_reading(
    tmp_path: Path, sim: tuple[object, list[Record]],
) -> None:
    """GPU 1 stops at 87 s; GPU 0's last 10 s come without readings, the host's go on to
    120 s: GPU 1 stopped 33 s before the end of the data (it said 23.0 s, the end taken at
    GPU 0's last reading)."""
    def rule(r: GpuSample | HostSample, t_s: float) -> Record | None:
        if isinstance(r, GpuSample) and r.gpu == 1 and t_s > 87.0:
            return None
        if isinstance(r, GpuSample) and r.gpu == 0 and t_s > 110.0:
            return msgspec.structs.replace(r, sm_active_pct=None)
        return r

    change = _each(rule)

    doc = to_json(build_report(_write(tmp_path, "end.jsonl", sim, change), Config(),
                               workers=1))
    (line,) = [p for p in doc["problems"] if p.startswith("GPU 1: no data after")]
    assert "33.0 s before the end of the data, while the other inputs went on" in line


def test_a_gpu_that_missed_one_reading_and_then_stopped_is_said_to_have_stopped(
    tmp_path: Path, sim: tuple[object, list[Record]],
) -> None:
    """GPU 1 reads to 50 s, one sample at 50.1 s comes without a reading, then none: its
    samples stopped (a GPU falling off the bus fails a GPM call first); the line said "its
    samples going on without a reading", which only a GPU whose samples go on to the end is."""
    def kept(r: GpuSample | HostSample, t_s: float) -> bool:
        return isinstance(r, HostSample) or r.gpu == 0 or t_s <= 50.15

    def change(records: list[Record]) -> list[Record]:
        return [msgspec.structs.replace(r, sm_active_pct=None)
                if isinstance(r, GpuSample) and r.gpu == 1
                and r.t_wall_s - SIM_EPOCH_WALL_S > 50.05 else r
                for r in _keeping(kept)(records)]

    doc = to_json(build_report(_write(tmp_path, "stopped.jsonl", sim, change), Config(),
                               workers=1))
    (line,) = [p for p in doc["problems"] if p.startswith("GPU 1: no data after")]
    assert "its samples without a reading to " in line, line
    assert line.endswith(", then none while the other inputs went on; NO_DATA from then")


@pytest.mark.parametrize(("unread", "said"), [
    ((50.0, 53.0), "its samples without a reading to "),  # NO_DATA as misses, then none
    ((52.0, 120.0), "its samples going on without a reading;"),  # silent, then back unread
], ids=["misses-then-none", "silent-then-unread-to-the-end"])
def test_a_gpus_line_says_where_its_samples_went_whatever_it_was_no_data_on(
    tmp_path: Path, sim: tuple[object, list[Record]], unread: tuple[float, float], said: str,
) -> None:
    """GPU 1 reads to 50 s, then its samples come without a reading over `unread`: 3 s then
    none (the line said they went on: its NO_DATA was entered on misses going on), or from
    52 s to the end after 2 s of silence (the line said they stopped: it was entered on the
    silence). Where its latest sample lies says it, not the reason it went NO_DATA on."""
    def rule(r: GpuSample | HostSample, t_s: float) -> Record | None:
        if not (isinstance(r, GpuSample) and r.gpu == 1 and t_s > 50.05):
            return r
        if not unread[0] < t_s <= unread[1] + 0.05:
            return None
        return msgspec.structs.replace(r, sm_active_pct=None)

    path = _write(tmp_path, "unread.jsonl", sim, _each(rule))
    doc = to_json(build_report(path, Config(), workers=1))
    (line,) = [p for p in doc["problems"] if p.startswith("GPU 1: no data after")]
    assert said in line, line
    _assert_split_is_one_process(path)


def test_gpus_that_stopped_while_only_the_hosts_samples_went_on_are_said(
    tmp_path: Path, sim: tuple[object, list[Record]],
) -> None:
    """Both GPUs stop at 60 s, the host's samples go on to 120 s: each ends NO_DATA, and the
    report said nothing (the end of the data was taken from the GPUs' samples alone)."""
    def kept(r: GpuSample | HostSample, t_s: float) -> bool:
        return isinstance(r, HostSample) or t_s <= 60.0

    path = _write(tmp_path, "host.jsonl", sim, _keeping(kept))
    doc = to_json(build_report(path, Config(), workers=1))
    said = [p for p in doc["problems"] if " no data after " in p]
    assert [p[:6] for p in said] == ["GPU 0:", "GPU 1:"]
    assert all("s before the end of the data, while the other inputs went on" in p
               for p in said), said
    _assert_split_is_one_process(path)


def test_at_the_end_a_gpu_silent_after_the_last_gpu_clock_check_is_no_data() -> None:
    """Host samples to 10 s, then the GPUs' own are the clock (a check every 0.3 s from
    11.0 s); GPU 1 stops at 19.5 s, GPU 0 at 19.9: GPU 1 silent 0.4 s at the end, after the
    last check, so only finish() can say it (from the GPUs' latest samples, not the
    host's last one: the host was lost)."""
    det = GapDetector(DetectorConfig(), [], period_s=0.1)
    records: list[GpuSample | HostSample] = [
        *[_sample(0, i / 10) for i in range(1, 200)],
        *[_sample(1, i / 10) for i in range(1, 196)], *[_host(i / 10) for i in range(101)]]
    for r in sorted(records, key=lambda r: (r.t_mono_ns, isinstance(r, GpuSample))):
        det.feed(r)
    det.finish()
    assert {t.gpu: t.final_state for t in det.totals()}[1] == "NO_DATA"


def _sample(gpu: int, t_s: float, sm: float = 90.0) -> GpuSample:
    return GpuSample(gpu=gpu, t_mono_ns=int(t_s * 1e9), t_wall_s=1e9 + t_s, interval_ns=100_000_000,
                     sm_active_pct=sm, gpu_util_pct=None, pcie_rx_bytes_per_s=1e6,
                     pcie_tx_bytes_per_s=1e6, sm_source="sim", pcie_source="sim")


def _host(t_s: float) -> HostSample:
    return HostSample(t_mono_ns=int(t_s * 1e9), t_wall_s=1e9 + t_s, interval_ns=None,
                      mem_used_pct=None, mem_available_bytes=None, swap_used_bytes=None,
                      cpu_busy_pct=None, psi_mem_some_avg10=None, psi_mem_full_avg10=None,
                      psi_mem_some_share=None, psi_mem_full_share=None, major_faults_per_s=None)


def test_a_gpu_silent_while_the_host_sampler_goes_on_is_no_data_from_its_last_sample() -> None:
    det = GapDetector(DetectorConfig(), [], period_s=0.1)
    states = []
    for i in range(1, 100):
        t = i / 10
        if t <= 5.0:
            states += det.feed(_sample(0, t))
        states += det.feed(_host(t))
    no_data = [s for s in states if s.state == "NO_DATA"]  # type: ignore[union-attr]
    assert len(no_data) == 1
    assert no_data[0].t_mono_ns == int(5.0 * 1e9)  # type: ignore[union-attr]
    assert "no sample from this GPU" in no_data[0].reason  # type: ignore[union-attr]
    assert det.counters["silent"] == 1


def test_a_gpu_that_comes_back_after_a_silence_gets_a_state_again() -> None:
    det = GapDetector(DetectorConfig(), [], period_s=0.1)
    states = []
    for i in range(1, 200):
        t = i / 10
        states += det.feed(_sample(0, t))
        if not 5.0 < t < 8.0:
            states += det.feed(_sample(1, t))
    gpu1 = [s.state for s in states if s.gpu == 1]  # type: ignore[union-attr]
    assert gpu1 == ["CHAINED", "NO_DATA", "CHAINED"]


class _NoWait(threading.Event):
    """A stop event whose waits return at once and are written down."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout or 0.0)
        return False


def test_replay_does_not_wait_out_a_jump_and_says_so(
    tmp_path: Path, sim: tuple[object, list[Record]],
) -> None:
    rec = read_any(_write(tmp_path, "jump.jsonl", sim, _after(60.0, HOUR_S, HOUR_S)))
    store = SeriesStore(list(rec.header.gpus), period_s=0.1)
    session = Session(rec.header, store, GapDetector(DetectorConfig(), list(rec.header.gpus)))
    driver = replay_mod.ReplayDriver(rec, session, speed=1.0)
    driver.stop_event = _NoWait()
    driver.run()
    # Real time stands still here, so each wait asks for all the data time since the pace
    # started: at most the 60 s on either side of the jump, never the hour.
    waits = driver.stop_event.waits
    assert waits and 55 < max(waits) < 61
    notices = [n.message for n in store.snapshot().notices]
    assert any("data time steps +3600.1 s" in m and "not waited out" in m for m in notices)


def test_replay_says_when_samples_are_out_of_order(
    tmp_path: Path, sim: tuple[object, list[Record]],
) -> None:
    def reorder(records: list[Record]) -> list[Record]:
        half = len(records) // 2
        return records[half:] + records[:half]

    rec = read_any(_write(tmp_path, "ooo.jsonl", sim, reorder))
    store = SeriesStore(list(rec.header.gpus), period_s=0.1)
    session = Session(rec.header, store, GapDetector(DetectorConfig(), list(rec.header.gpus)))
    replay_mod.ReplayDriver(rec, session, speed=0.0).run()
    notices = [n.message for n in store.snapshot().notices]
    assert any("1200 GPU samples out of time order dropped" in m for m in notices)


def test_headless_replay_prints_the_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sim: tuple[object, list[Record]],
) -> None:
    path = _write(tmp_path, "silent.jsonl", sim, _silent_gpu1_after(87.0))
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:10] + [b"not json\n"] + lines[10:]))
    assert main(["replay", "--headless", "--speed", "0", str(path)]) == 0
    err = capsys.readouterr().err
    assert "warning: " in err and "bad record" in err and "NO_DATA x1" in err


def test_a_hole_in_all_the_data_is_no_gpus_silence_whichever_input_comes_first_after_it() -> None:
    # The recorder stalled 3 s (or lines were cut): every input stops together. The first line
    # after the hole may be the host's sample or a GPU's: neither shows that a GPU was silent
    # while the others went on, so no GPU is NO_DATA; each GPU sees its own hole.
    for host_first in (True, False):
        det = GapDetector(DetectorConfig(), [], period_s=0.1)
        states = []
        for i in range(1, 120):
            t = i / 10
            if 5.0 < t < 8.0:
                continue
            tick: list[GpuSample | HostSample] = [_sample(0, t), _sample(1, t), _host(t)]
            if host_first:
                tick = tick[2:] + tick[:2]
            for r in tick:
                states += det.feed(r)
        assert [s.state for s in states] == ["CHAINED", "CHAINED"], host_first  # type: ignore[union-attr]
        assert det.counters["silent"] == 0 and det.counters["holes"] == 2


@pytest.mark.parametrize("case", ["h200-e2e/chained", "h200-e2e/host-stall-status",
                                  "h200-e2e/transfer-bound", "h200-copytrace/chained"])
def test_a_sampler_stall_on_the_h200_is_a_hole_not_a_gpu_gone_silent(case: str) -> None:
    """Each of these real recordings has one stall of the sampler (397-539 ms between two host
    samples, the GPU's next reading covering the stall): the GPU was not lost while the host
    went on, so it is not NO_DATA "the other inputs go on"; its own spacing is a hole."""
    found = build_report(Path(__file__).parent / "data" / case / "rec.jsonl.gz", Config(),
                         workers=1)
    assert not [s for s in found.states if "the other inputs go on" in s.reason]
    assert "detector_silent" not in found.counters
    assert found.counters["detector_holes"] >= 1


def test_a_gpu_that_stops_while_the_hosts_readings_fail_too_is_still_no_data() -> None:
    # The host's samples are the clock for silence while they come; a second after the last
    # one, the GPUs' own samples take over, so a GPU lost then is still seen.
    det = GapDetector(DetectorConfig(), [], period_s=0.1)
    gpu_clock_at: list[float] = []
    states = []
    for i in range(1, 150):
        t = i / 10
        det.on_gpu_clock = lambda t=t: gpu_clock_at.append(t)
        states += det.feed(_sample(0, t))
        if t <= 8.0:
            states += det.feed(_sample(1, t))
        if t <= 5.0:
            states += det.feed(_host(t))
    no_data = [s for s in states if s.state == "NO_DATA"]  # type: ignore[union-attr]
    assert [(s.gpu, s.t_mono_ns) for s in no_data] == [(1, int(8.0 * 1e9))]  # type: ignore[union-attr]
    # The GPUs took the clock a second after the host's last sample (a split report gives up).
    assert gpu_clock_at and 6.0 <= gpu_clock_at[0] <= 6.1


def test_host_samples_a_period_of_two_seconds_apart_are_the_clock_all_along() -> None:
    # At a 2 s sampling period the host's samples are 2 s apart: the GPUs' samples must not
    # take the clock back between them (a split report would then read it in one process).
    det = GapDetector(DetectorConfig(), [], period_s=2.0)
    gpu_clock_at: list[float] = []
    for i in range(1, 60):
        t = 2.0 * i
        det.on_gpu_clock = lambda t=t: gpu_clock_at.append(t)
        det.feed(_sample(0, t))
        det.feed(_sample(1, t))
        det.feed(_host(t))
    assert gpu_clock_at == []
