"""No thread dies in silence: a record no part can take is counted and said while sampling goes
on; a thread that raises is said (a notice, the footer, /metrics, record's exit status) and
restarted where that is safe (gapwatch.base.watch, gapwatch.engine.session)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from gapwatch.base.clock import FakeClock, VirtualClock
from gapwatch.base.watch import ThreadWatch
from gapwatch.config import Config
from gapwatch.core.detector import GapDetector
from gapwatch.core.models import (
    CopyRecord,
    Gap,
    GpuInfo,
    GpuSample,
    Notice,
    Record,
    StateChange,
)
from gapwatch.core.verdict import WindowNow
from gapwatch.engine.sampler import Sampler
from gapwatch.engine.session import Session, default_header
from gapwatch.engine.store import SeriesStore
from gapwatch.sinks.recorder import Recorder
from gapwatch.sources import Tick
from gapwatch.sources.recording import read_recording

PERIOD_NS = 100_000_000
GPUS = [GpuInfo(index=0, link_bytes_per_s=63e9)]


class GapsWithHugeCopies:
    """Busy 1 s, idle 1 s, ...; during each idle second a copy of 2**63 bytes arrives (as one
    did from the copy-trace socket, before copies were bounded where they are decoded)."""

    def __init__(self) -> None:
        self.reads = 0

    def open(self) -> list[GpuInfo]:
        return GPUS

    def read(self, t_mono_ns: int, t_wall_s: float, lateness_ns: int) -> Tick:
        self.reads += 1
        idle = (self.reads // 10) % 2 == 1
        sample = GpuSample(0, t_mono_ns, t_wall_s, PERIOD_NS, 2.0 if idle else 90.0,
                           2.0 if idle else 90.0, 1e9, 0.0, "sim", "sim")
        other: list[Record] = []
        if idle and self.reads % 10 == 5:
            other.append(CopyRecord(t_wall_s - 0.2, t_wall_s - 0.1, 2**63, "h2d", "pageable",
                                    "device", 0, 0, 13, 1, self.reads, 4242))
        return Tick(gpu=[sample], other=other)  # type: ignore[arg-type]

    def close(self) -> None:
        pass


class Int64Sink:
    """A sink that, like the recorder's codec before issue 21 (orjson), cannot write an
    integer beyond 64 bits: it raises on a gap whose copies sum beyond them."""

    def __init__(self) -> None:
        self.gaps = 0

    def on_header(self, header: object) -> None:
        pass

    def on_record(self, record: Record) -> None:
        if isinstance(record, Gap):
            if sum(e.bytes for e in record.copies.kinds().values()) >= 2**63:
                raise TypeError("Integer exceeds 64-bit range")
            self.gaps += 1

    def close(self) -> None:
        pass


@pytest.mark.session_errors_expected
def test_copies_of_2_63_bytes_in_gaps_leave_sampling_running_to_the_end(
        tmp_path: Path) -> None:
    clock = VirtualClock(start_mono_ns=10**12, start_wall_s=1_796_000_000.0)
    header = default_header("sim", GPUS, 100.0)
    store = SeriesStore(GPUS, 0.1, history_s=60)
    recorder = Recorder(tmp_path / "r.jsonl", exists="replace")
    fussy = Int64Sink()
    session = Session(header, store, GapDetector(Config().detector, GPUS, 0.1),
                      [fussy, recorder])
    source = GapsWithHugeCopies()
    sampler = Sampler(source, None, session, clock, PERIOD_NS, duration_ns=20 * 10**9)
    sampler.watch = ThreadWatch()
    sampler.start()
    assert sampler.finished.wait(30)
    session.close()
    assert not sampler.died and source.reads == 201  # every tick of --duration was taken
    counters = store.snapshot().counters
    assert counters["record_errors"] >= 10  # every version of every gap holding such a copy
    rec = read_recording(tmp_path / "r.jsonl")
    records = list(rec.records)
    assert sum(r.type == "gpu" for r in records) == 201  # the other sink missed nothing
    said = [r for r in records if isinstance(r, Notice) and r.level == "error"]
    # Said once per part and kind of error, then only counted.
    assert len(said) == 1 and said[0].message.startswith(
        "Int64Sink failed on a gap record (TypeError('Integer exceeds 64-bit range'))")
    assert sum(t.count for t in store.snapshot().gap_tally.values()) >= 5  # detection went on
    # The copies themselves were written, and the reader refuses them (over 1 TiB).
    assert rec.counters["bad_records"] == 10


class BrokenDetector:
    """A detector whose `feed` raises (a bug, not bad input); the rest is a real one's. A
    wrapper, not a patched method, so the real detector is what the session runs."""

    def __init__(self) -> None:
        self._real = GapDetector(Config().detector, GPUS, 0.1)
        self.counters = self._real.counters

    def feed(self, record: Record) -> list[Gap | StateChange]:
        raise ValueError("detector bug")

    def feed_copies(self, copies: list[CopyRecord]) -> list[Gap | StateChange]:
        raise ValueError("detector bug")

    def finish(self) -> list[Gap | StateChange]:
        return self._real.finish()

    def window_now(self, gpu: int) -> WindowNow | None:
        return self._real.window_now(gpu)


@pytest.mark.session_errors_expected
def test_a_listener_or_the_detector_that_raises_costs_its_own_part_only() -> None:
    header = default_header("test", GPUS, 100.0)
    store = SeriesStore(GPUS, 0.1)
    session = Session(header, store, BrokenDetector())
    heard: list[object] = []
    session.subscribe(lambda ev: (_ for _ in ()).throw(RuntimeError("listener bug")))
    session.subscribe(heard.append)
    for k in range(5):
        session.on_record(GpuSample(0, k * PERIOD_NS, 1_796_000_000.0 + k / 10, PERIOD_NS,
                                    50.0, 50.0, 1.0, 1.0))
    assert len(store.snapshot().gpu_samples[0]) == 5
    notices = [e for e in heard if isinstance(e, Notice)]
    assert [n.message.split(" (")[0] for n in notices] == [
        "the detector failed on a gpu record", "a listener failed on a notice record"]
    # The detector failed on the 5 samples and on both notices, the listener on both notices.
    assert store.snapshot().counters["record_errors"] == 5 + 2 + 2


class DiesTwice(Sampler):
    """A sampler whose loop raises on its 3rd and 6th ticks (a bug, not bad input)."""

    def _tick(self, now_ns: int, lateness_ns: int) -> None:
        super()._tick(now_ns, lateness_ns)
        if self.ticks in (3, 6):
            raise RuntimeError(f"bug at tick {self.ticks}")


def _sampler(cls: type[Sampler], duration_s: float) -> tuple[Sampler, list[tuple[str, bool]]]:
    clock = FakeClock(start_mono_ns=0)
    header = default_header("test", GPUS, 100.0)
    session = Session(header, SeriesStore(GPUS, 0.1))

    class Src:
        def read(self, t: int, wall: float, late: int) -> Tick:
            return Tick(gpu=[GpuSample(0, t, wall, PERIOD_NS, 50.0, 50.0, 1.0, 1.0)])

    s = cls(Src(), None, session, clock, PERIOD_NS,  # type: ignore[arg-type]
            duration_ns=int(duration_s * 1e9))
    deaths: list[tuple[str, bool]] = []
    s.watch = ThreadWatch(lambda name, exc, again: deaths.append((str(exc), again)),
                          restart_delay_s=0.0)
    return s, deaths


def test_a_sampler_that_dies_is_said_and_restarted_on_its_schedule() -> None:
    sampler, deaths = _sampler(DiesTwice, 1.0)
    sampler.start()
    assert sampler.finished.wait(10)
    assert deaths == [("bug at tick 3", True), ("bug at tick 6", True)]
    # The restarted loop kept the run's schedule: every tick of the second, none twice.
    assert sampler.ticks == 11 and not sampler.died
    (health,) = sampler.watch.health()
    assert (health.name, health.deaths, health.alive) == ("gapwatch-sampler", 2, True)


class AlwaysDies(Sampler):
    def _tick(self, now_ns: int, lateness_ns: int) -> None:
        super()._tick(now_ns, lateness_ns)
        raise RuntimeError("always")


def test_a_thread_that_keeps_dying_stays_dead_and_says_so() -> None:
    sampler, deaths = _sampler(AlwaysDies, 100.0)
    sampler.start()
    assert sampler.finished.wait(10)
    assert [again for _, again in deaths] == [True, True, True, False]
    assert sampler.died and not sampler.watch.health()[0].alive


def test_a_watch_without_a_handler_prints_the_death_on_stderr(
        capsys: pytest.CaptureFixture[str]) -> None:
    watch = ThreadWatch(restart_delay_s=0.0)

    def boom() -> None:
        raise KeyError("lost")

    assert watch.run("gapwatch-x", boom, restart=False) is False
    err = capsys.readouterr().err
    assert "thread gapwatch-x died" in err and "KeyError: 'lost'" in err


def test_a_thread_that_dies_in_a_runtime_is_a_notice_an_alert_a_metric_and_exit_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from gapwatch.cli import main
    from gapwatch.engine import sampler as sampler_mod
    from gapwatch.ui.widgets.status_footer import status_alerts

    real_tick = sampler_mod.Sampler._tick
    seen: dict[str, object] = {}

    def tick(self: Sampler, now_ns: int, lateness_ns: int) -> None:
        real_tick(self, now_ns, lateness_ns)
        if self.ticks == 50:
            raise RuntimeError("planted bug")
        if self.ticks == 100 and "alerts" not in seen:
            rt_status = seen["status_fn"]()  # type: ignore[operator]
            seen["alerts"] = status_alerts(rt_status)
            seen["threads"] = rt_status.threads

    monkeypatch.setattr(sampler_mod.Sampler, "_tick", tick)
    import gapwatch.engine.runtime as runtime_mod

    real_start = runtime_mod.Runtime.start

    def start(self: runtime_mod.Runtime) -> None:
        self.threads.restart_delay_s = 0.0
        seen["status_fn"] = self.status
        real_start(self)

    monkeypatch.setattr(runtime_mod.Runtime, "start", start)
    out = tmp_path / "r.jsonl"
    code = main(["record", "--source", "sim:chained", "--speed", "0", "--duration", "20",
                 "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1
    assert "error: the sampler thread died (RuntimeError('planted bug')); restarted" in err
    assert "gapwatch's own threads died: sampler died 1x (RuntimeError('planted bug')), " \
           "restarted" in err
    assert any(a.startswith("THREAD DIED: sampler") for a in seen["alerts"])  # type: ignore[attr-defined]
    records = list(read_recording(out).records)
    assert sum(r.type == "gpu" for r in records) == 200  # as without the bug: on schedule
    assert any(isinstance(r, Notice) and "sampler thread died" in r.message for r in records)


def test_the_metrics_say_which_thread_died() -> None:
    from gapwatch.base.watch import ThreadHealth
    from gapwatch.sinks.prometheus import _threads

    families = list(_threads([ThreadHealth("gapwatch-sampler", "dead", 4, "RuntimeError()"),
                              ThreadHealth("gapwatch-tail", "running", 0, None)]))
    up = {s.labels["thread"]: s.value for s in families[0].samples}
    deaths = {s.labels["thread"]: s.value for s in families[1].samples
              if s.name.endswith("_total")}
    assert up == {"sampler": 0.0, "tail": 1.0} and deaths == {"sampler": 4, "tail": 0}


def test_every_thread_of_a_runtime_runs_under_its_watch(tmp_path: Path) -> None:
    from gapwatch.engine.runtime import build_runtime

    log = tmp_path / "p.log"
    log.write_text("")
    config = Config().model_copy(update={"prometheus": Config().prometheus.model_copy(
        update={"listen": "127.0.0.1:0"})})
    rt = build_runtime(config, "sim:chained", speed=50, duration_s=2,
                       record_path=str(tmp_path / "r.jsonl"), log_paths=[str(log)])
    rt.start()
    try:
        names = {t.name for t in rt.status().threads}
        running = {t.name for t in threading.enumerate()}
    finally:
        rt.stop()
    assert {"gapwatch-sampler", "gapwatch-tail", "gapwatch-tail-2", "gapwatch-recorder",
            "gapwatch-metrics-accept", "gapwatch-cuzk-status"} <= names
    assert names <= running | {t.name for t in rt.status().threads if t.state == "ended"}
