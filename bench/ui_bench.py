"""What the dashboard costs: process CPU and sampler tick lateness with and without the UI.

usage: python bench/ui_bench.py [--seconds 20] [--modes demo,demo-ui,replay,replay-ui]
                                [--switchinterval MS] [--redraw-hz 4]

Modes (everything runs in this one process, as `gapwatch demo` / `watch` do):
- demo: `sim:pageable` at speed 1 (10 Hz sampler, simulated prover, its log through the real
  tailer), headless (no UI): the floor;
- demo-ui: the same with the dashboard running headless at 160x48 (App.run_test), 4 Hz redraw;
- watch / watch-ui: `gapwatch watch` itself: the NVML source at 10 Hz on real GPUs (only where a
  GPU is; run it on the GPU box beside a workload), headless or with the dashboard;
- replay / replay-ui: a watch-like run without a GPU: the H200 pageable trace replayed at speed
  1, plus a probe thread ticking on a 100 ms deadline (standing in for the NVML sampler, which a
  replay does not run) whose lateness is measured.

Lateness in the demo modes is the real sampler's (`GpuSample.lateness_ns` of the samples in the
store); CPU is `time.process_time()` over the measured span divided by wall time (100 % = one
core). The first 3 s (start-up, first layout) are not measured.
Baseline to beat: shared/reference/ui-bench/chart_cost.py (plotext charts: ~60 % CPU, p99 18-30 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gapwatch.core.config import build_config  # noqa: E402
from gapwatch.engine.runtime import Runtime, build_runtime  # noqa: E402

WARMUP_S = 3.0
TRACE_CANDIDATES = [
    Path("/work/shared/traces/h200-2026-11-30/pageable.csv"),
    ROOT / "tests" / "data" / "pageable.csv",
]


class Probe:
    """A 100 ms deadline loop that records how late each tick ran (a stand-in sampler)."""

    def __init__(self, period_s: float = 0.1) -> None:
        self.period_s = period_s
        self.lateness_ms: list[float] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        deadline = time.monotonic() + self.period_s
        while not self.stop.is_set():
            delay = deadline - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self.lateness_ms.append((time.monotonic() - deadline) * 1000)
            deadline += self.period_s


def _percentiles(values: list[float]) -> str:
    if not values:
        return "p50 n/a"
    v = sorted(values)
    p99 = v[min(len(v) - 1, int(len(v) * 0.99))]
    return f"p50 {statistics.median(v):5.2f}  p99 {p99:6.2f}  max {v[-1]:6.2f} ms (n={len(v)})"


def _sampler_lateness(rt: Runtime, since_mono_ns: int) -> list[float]:
    snap = rt.store.snapshot()
    return [s.lateness_ns / 1e6 for samples in snap.gpu_samples.values() for s in samples
            if s.lateness_ns is not None and s.t_mono_ns >= since_mono_ns]


async def _measure(mode: str, seconds: float, redraw_hz: float) -> str:
    config = build_config({"ui": {"redraw_hz": redraw_hz}, "snapshot": {"auto": False}})
    probe: Probe | None = None
    if mode.startswith("demo"):
        rt = build_runtime(config, "sim:pageable", speed=1.0)
    elif mode.startswith("watch"):
        rt = build_runtime(config, "nvml")
    else:
        trace = next(p for p in TRACE_CANDIDATES if p.exists())
        rt = build_runtime(config, f"replay:{trace}", speed=1.0)
        probe = Probe()
        probe.thread.start()
    rt.start()
    try:
        if mode.endswith("-ui"):
            from gapwatch.ui.app import GapwatchApp

            app = GapwatchApp(rt)
            async with app.run_test(size=(160, 48)):
                cpu, since_ns, lat_probe_from = await _span(seconds, probe)
        else:
            cpu, since_ns, lat_probe_from = await _span(seconds, probe)
    finally:
        if probe is not None:
            probe.stop.set()
        rt.stop()
    if probe is not None:
        lateness = probe.lateness_ms[lat_probe_from:]
        what = "probe"
    else:
        lateness = _sampler_lateness(rt, since_ns)
        what = "sampler"
    return f"{mode:10s} cpu {cpu * 100:5.1f} %   {what} lateness {_percentiles(lateness)}"


async def _span(seconds: float, probe: Probe | None) -> tuple[float, int, int]:
    await asyncio.sleep(WARMUP_S)
    since_ns = time.monotonic_ns()
    probe_from = len(probe.lateness_ms) if probe is not None else 0
    cpu0, wall0 = time.process_time(), time.monotonic()
    await asyncio.sleep(seconds)
    cpu = (time.process_time() - cpu0) / (time.monotonic() - wall0)
    return cpu, since_ns, probe_from


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--modes", default="demo,demo-ui,replay,replay-ui")
    parser.add_argument("--switchinterval", type=float, default=None,
                        help="sys.setswitchinterval in ms (default: Python's 5 ms)")
    parser.add_argument("--redraw-hz", type=float, default=4.0)
    args = parser.parse_args()
    if args.switchinterval is not None:
        sys.setswitchinterval(args.switchinterval / 1000)
    print(f"# python {sys.version.split()[0]}, {os.cpu_count()} CPUs, switchinterval "
          f"{sys.getswitchinterval() * 1000:g} ms, redraw {args.redraw_hz:g} Hz, 160x48, "
          f"{args.seconds:g} s per mode")
    for mode in args.modes.split(","):
        print(asyncio.run(_measure(mode.strip(), args.seconds, args.redraw_hz)), flush=True)


if __name__ == "__main__":
    main()
