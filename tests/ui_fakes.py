"""Fixed, deterministic dashboard data for the UI tests: a fake runtime over a hand-filled store.

No wall clock and no threads: every time is derived from T0, so the pictures (SVG snapshot tests)
are identical on every run. Used by tests/test_ui_*.py.
"""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len
from textual._compositor import ChopsUpdate, LayoutUpdate
from textual.strip import Strip

from evaluation.pane_text import screen_text as screen_text  # one rule, re-exported
from gapwatch.config import Config, build_config
from gapwatch.core.models import (
    CopyRecord,
    Gap,
    GpuHealth,
    GpuInfo,
    GpuSample,
    HostSample,
    LogEvent,
    ProcessMemory,
    SessionHeader,
    StateChange,
)
from gapwatch.core.verdict import WindowNow
from gapwatch.engine.runtime import gpu_error_alert
from gapwatch.engine.sampler import LatenessStats
from gapwatch.engine.session import Session
from gapwatch.engine.status import RuntimeStatus
from gapwatch.engine.store import SeriesStore
from gapwatch.sinks.recorder import RecordingStatus

T0_NS = 5_000_000_000_000
WALL0_S = 1_796_029_581.0  # 2026-11-30 09:06:21 UTC
PERIOD_NS = 100_000_000
LINK = 63.0e9

H200 = GpuInfo(index=0, name="NVIDIA H200", link_gen=5, link_width=16, link_bytes_per_s=LINK,
               sm_source="gpm", pcie_source="gpm")
H200_B = GpuInfo(index=1, name="NVIDIA H200", link_gen=5, link_width=16, link_bytes_per_s=LINK,
                 sm_source="gpm", pcie_source="gpm")

HINT = ("pageable host-to-device copies at 2.8 GB/s (4% of link): pin a/b/c buffers "
        "(cudaHostAlloc pool) or free host memory bandwidth")


def fixed_wall() -> float:
    """A fixed wall clock for the app (`wall_clock=`): snapshot names are the same every run."""
    return WALL0_S + 100.0


def h200(index: int) -> GpuInfo:
    return GpuInfo(index=index, name="NVIDIA H200", link_gen=5, link_width=16,
                   link_bytes_per_s=LINK, sm_source="gpm", pcie_source="gpm")


def make_config(tmp: Path | None = None, **ui: object) -> Config:
    data: dict[str, dict[str, object]] = {"ui": dict(ui)}
    if tmp is not None:
        data["snapshot"] = {"dir": str(tmp)}
    return build_config(data)


def header(gpus: list[GpuInfo] | None = None) -> SessionHeader:
    return SessionHeader(gapwatch_version="0.1.0", host="prover-1", source="sim:pageable",
                         started_wall_s=WALL0_S, started_mono_ns=T0_NS, period_ms=100.0,
                         gpus=gpus or [H200])


def t_ns(seconds: float) -> int:
    return T0_NS + int(round(seconds * 1e9))


def gpu_sample(gpu: int, seconds: float, sm: float | None, rx: float | None,
               tx: float | None = 0.5e9) -> GpuSample:
    return GpuSample(gpu=gpu, t_mono_ns=t_ns(seconds), t_wall_s=WALL0_S + seconds,
                     interval_ns=PERIOD_NS, sm_active_pct=sm, gpu_util_pct=sm,
                     pcie_rx_bytes_per_s=rx, pcie_tx_bytes_per_s=tx, sm_source="gpm",
                     pcie_source="gpm", lateness_ns=200_000)


def host_sample(seconds: float, psi: float = 2.0) -> HostSample:
    return HostSample(t_mono_ns=t_ns(seconds), t_wall_s=WALL0_S + seconds, interval_ns=PERIOD_NS,
                      mem_used_pct=71.0, mem_available_bytes=140 * 2**30, swap_used_bytes=0,
                      cpu_busy_pct=63.0, psi_mem_some_avg10=psi, psi_mem_full_avg10=0.4,
                      psi_mem_some_share=0.1, psi_mem_full_share=0.0, major_faults_per_s=12.0)


def gap(gap_id: int, gpu: int, start: float, end: float | None, kind: str = "pcie_starved",
        rx: float = 2.8e9, hint: str = HINT) -> Gap:
    return Gap(gap_id=gap_id, gpu=gpu, kind=kind,  # type: ignore[arg-type]
               start_mono_ns=t_ns(start), start_s=WALL0_S + start,
               end_mono_ns=None if end is None else t_ns(end),
               end_s=None if end is None else WALL0_S + end,
               duration_s=(end if end is not None else 60.0) - start,
               pcie_rx_bytes_per_s=rx, pcie_tx_bytes_per_s=0.1e9, link_bytes_per_s=LINK,
               hint=hint)


def log_event(seconds: float, raw: str, warning: str | None = None) -> LogEvent:
    return LogEvent(t_wall_s=WALL0_S + seconds, time_source="line", kind="tracing",
                    name=raw.split()[0], raw=raw, warning=warning)


#: How far before its read time a GPM reading's activity lies (DetectorConfig.gpm_lag_ms).
LAG_S = 0.1

#: GPU 0 chains for 30 s, then idles in starved gaps; 2 s of missing data at 20-22 s.
STARVED_GAPS = [(33.0, 34.2), (38.0, 39.1), (44.5, 45.3), (50.0, 51.5), (55.0, 55.4)]


def fill_breakdown(store: SeriesStore, gpus: tuple[int, ...] = (0,)) -> None:
    """60 s of one chaining-then-breaking GPU (or several), host samples, log lines, gaps, state."""
    for i in range(601):
        s = i / 10
        for gpu in gpus:
            in_gap = any(a <= s < b for a, b in STARVED_GAPS)
            if 20.0 <= s < 22.0:
                sample = gpu_sample(gpu, s, None, None, None)  # the source returned nothing
            elif in_gap:
                sample = gpu_sample(gpu, s, 0.0, 2.8e9, 0.05e9)
            else:
                busy = 97.0 if gpu == 0 else 88.0
                sample = gpu_sample(gpu, s, busy, 41e9 if i % 7 < 3 else 6e9, 1.2e9)
            store.append_gpu([sample])
        store.append_host(host_sample(s, psi=2.0 if s < 30 else 23.5))
    lines = [
        (1.0, "INFO cuzk_core::engine: starting cuzk engine pipeline_enabled=true", None),
        (30.5, "WARN cuzk_core::pool: pinned pool exhausted, falling back to pageable "
               "is_pinned=false", "unpinned"),
        (40.0, "INFO GPU_TIMING prove_start worker=1 [bold]not markup[/bold] [link=x]y[/link]",
         None),
        (52.0, "WARN cuzk_core::pool: cudaHostAlloc failed size=1610612736", "cuda_host_alloc_failed"),
    ]
    for s, raw, warning in lines:
        store.append_log(log_event(s, raw, warning))
    gid = 1
    for gpu in gpus:
        for a, b in STARVED_GAPS:
            # The detector places GPM readings `gpm_lag_ms` (100 ms) before they were read, and
            # its gap edges with them.
            store.upsert_gap(gap(gid, gpu, a - LAG_S, b - LAG_S))
            gid += 1
        store.set_state(StateChange(gpu=gpu, t_mono_ns=t_ns(45.3), t_wall_s=WALL0_S + 45.3,
                                    state="BREAKDOWN", busy_fraction=0.81,
                                    reason="3 pcie_starved gaps in 30 s"))
        # The window as of the last sample: all five starved gaps are in it now (the state was
        # entered on three), 5.0 s idle in them.
        store.set_window(WindowNow(gpu=gpu, t_mono_ns=t_ns(60.0 - LAG_S),
                                   end_wall_s=WALL0_S + 60.0 - LAG_S, window_s=30.0,
                                   gaps={"pcie_starved": len(STARVED_GAPS)},
                                   starved_idle_s=sum(b - a for a, b in STARVED_GAPS),
                                   busy_fraction=0.81))


GIB = 1 << 30
#: NVML's clocks event reasons: the power cap and the software thermal slowdown.
POWER_CAP, THERMAL = 0x4, 0x20


def add_health(store: SeriesStore, gpus: tuple[int, ...] = (0,), seconds: float = 60.0,
               throttled: dict[int, int] | None = None) -> None:
    """One health reading per GPU at `seconds` (an H200 at work; GPU g a little warmer than
    GPU g-1), the clocks event mask of `throttled` where given (idle otherwise)."""
    for gpu in gpus:
        store.append(GpuHealth(
            gpu=gpu, t_mono_ns=t_ns(seconds), t_wall_s=WALL0_S + seconds,
            memory_used_bytes=(61 + gpu) * GIB, memory_total_bytes=141 * GIB,
            temperature_c=52.0 + 3 * gpu, power_w=455.0 + 20 * gpu, power_limit_w=700.0,
            sm_clock_mhz=1980, memory_clock_mhz=3201,
            clocks_event_mask=(throttled or {}).get(gpu, 0), ecc_corrected_total=0,
            ecc_uncorrected_total=0))


def add_processes(store: SeriesStore, gpu: int = 0, seconds: float = 60.0,
                  copies: bool = True) -> None:
    """Two processes on `gpu` (a prover with a 48 GiB pinned pool, a helper) and, with the copy
    trace, the prover's H2D copies of the last seconds: 40 pinned, then 6 pageable."""
    for pid, name, gpu_mem, shmem, anon in ((4242, "cuzk-daemon", 71 * GIB, 48 * GIB, 9 * GIB),
                                           (777, "python3", 2 * GIB, 0, GIB // 2)):
        store.append(ProcessMemory(t_mono_ns=t_ns(seconds), t_wall_s=WALL0_S + seconds, gpu=gpu,
                                   pid=pid, name=name, rss_shmem_bytes=shmem,
                                   rss_anon_bytes=anon, gpu_memory_bytes=gpu_mem))
    if not copies:
        return
    for i in range(46):
        start = WALL0_S + 50.0 + i * 0.2
        kind = "pinned" if i < 40 else "pageable"
        store.append(CopyRecord(start, start + 0.02, 1 << 30, "h2d", kind, "device", gpu,  # type: ignore[arg-type]
                                0, 13, 1, i, 4242))


def fill_chain_fall(store: SeriesStore) -> None:
    """120 s of GPU 0: a minute chaining (H2D at 8 GB/s under SMs 93 % busy), a minute broken
    down (H2D at 3 GB/s, SMs 41 % busy), state BREAKDOWN: the chaining figure falls 93 -> 41."""
    for i in range(1201):
        s = i / 10
        busy = 93.0 if s < 60 else 41.0
        store.append_gpu([gpu_sample(0, s, busy, 8e9 if s < 60 else 3e9, 0.3e9)])
        store.append_host(host_sample(s))
    store.upsert_gap(gap(1, 0, 110.0, 111.4))
    store.set_state(StateChange(gpu=0, t_mono_ns=t_ns(100.0), t_wall_s=WALL0_S + 100.0,
                                state="BREAKDOWN", busy_fraction=0.41,
                                reason="2 pcie_starved gaps in 30 s"))


def breakdown_with_hint(tmp: Path, hint: str, *, gpus: tuple[int, ...] = (0,),
                        kind: str = "pcie_starved", rx: float = 2.8e9) -> FakeRuntime:
    """`fill_breakdown` of `gpus`, GPU0's latest gap (id 99, 57.0-58.2 s) carrying `hint`: the
    set-up of the tests that read a long hint at 80x24 (the main view's cut, the detail view's
    whole text)."""
    rt = FakeRuntime(make_config(tmp), gpus=[h200(g) for g in gpus])
    fill_breakdown(rt.store, gpus=gpus)
    rt.store.upsert_gap(gap(99, 0, 57.0 - LAG_S, 58.2 - LAG_S, kind=kind, rx=rx, hint=hint))
    return rt


class FakeRuntime:
    """The attributes the dashboard uses, over a real Session and SeriesStore (no threads)."""

    def __init__(self, config: Config, gpus: list[GpuInfo] | None = None,
                 detector: object | None = None) -> None:
        self.config = config
        self.header = header(gpus)
        self.store = SeriesStore(list(self.header.gpus), period_s=0.1, history_s=600)
        self.session = Session(self.header, self.store, detector=detector)  # type: ignore[arg-type]
        self.status_calls = 0
        #: What status() says: the source ended (a finished replay), and the followed logs.
        self.done = False
        self.logs = {"/tmp/gapwatch-sim-pageable.log": "following"}
        self.recording: RecordingStatus | None = None
        #: Where a replay is, as the replay driver says it (None: a live source).
        self.replay_words: str | None = None
        self.prover_alert: str | None = None
        self.prover_alert_job_id: str | None = None

    def status(self) -> RuntimeStatus:
        self.status_calls += 1
        return RuntimeStatus(
            source="sim:pageable", period_ms=100.0,
            lateness=LatenessStats(600, 0, 0, 0.21, 0.93, 1.7),
            gpu_sources={g.index: "gpm" for g in self.header.gpus},
            logs=dict(self.logs),
            log_counters={"lines": 40, "parsed": 38, "unparsed": 2},
            done=self.done,
            recording=self.recording,
            replay=self.replay_words,
            prover_alert=self.prover_alert,
            prover_alert_job_id=self.prover_alert_job_id,
            gpu_error_alert=gpu_error_alert(self.store),
            running_proofs=list(self.store.running_proofs()),
        )


async def screens_after_keys(app: object, keys: list[str],
                             size: tuple[int, int] = (80, 24)) -> list[str]:
    """The app's screen at `size` as it opens and after each of `keys` in turn."""
    out: list[str] = []
    async with app.run_test(size=size) as pilot:  # type: ignore[attr-defined]
        await pilot.pause()
        out.append(screen_text(app))
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
            out.append(screen_text(app))
    return out


class Terminal:
    """The cells a terminal shows: every update the app sends it (`App._display`, which a test
    app sends nowhere) written over the last, as a terminal keeps what it was last told.
    `screen_text` is what a full repaint would draw now; where the two differ, the pane shows
    what is no longer there (a ghost) until something repaints those cells."""

    def __init__(self, app: object) -> None:
        width, height = app.size  # type: ignore[attr-defined]
        self._rows = [[" "] * width for _ in range(height)]
        send = app._display  # type: ignore[attr-defined]

        def display(screen: object, update: object) -> None:
            if isinstance(update, LayoutUpdate):
                for y, line in enumerate(update.strips, update.region.y):
                    x = update.region.x
                    for strip in line:
                        self._write(x, y, strip)
                        x += strip.cell_length
            elif isinstance(update, ChopsUpdate):
                # As `ChopsUpdate.render_segments` writes them: each changed span's chops.
                for y, x1, x2 in update.spans:
                    for end, (x, chop) in zip(update.chop_ends[y], update.chops[y].items(),
                                              strict=True):
                        if chop is None or x > x2 or end <= x1:
                            continue
                        if not (x2 > x >= x1 and end <= x2):
                            chop = chop.crop(0, min(end, x2) - x)
                        self._write(x, y, chop)
            send(screen, update)

        app._display = display  # type: ignore[attr-defined]

    def _write(self, x: int, y: int, strip: Strip) -> None:
        row = self._rows[y]
        for segment in strip:
            for ch in segment.text:
                if 0 <= x < len(row):
                    row[x] = ch
                x += cell_len(ch)

    def text(self) -> str:
        return "\n".join("".join(row).rstrip() for row in self._rows)
