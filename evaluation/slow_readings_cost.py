"""What gapwatch's slow readings cost: one /proc/PID/status read, and the NVML calls behind them.

Who runs it: anyone, from the repository root; `bench/copytrace_h200.py` also calls
`measure_costs` while its load generator runs on the H200 (the figures land in its summary.json).

    PYTHONPATH=. python3 bench/slow_readings_cost.py            # /proc only (no GPU needed)
    PYTHONPATH=. python3 bench/slow_readings_cost.py --nvml     # and the NVML calls, GPU 0

Prints one JSON object: median and max microseconds of `ProcStatusReader.read` (this process's
own status file, or `--pid`), and with `--nvml` of nvmlDeviceGetComputeRunningProcesses and of
the current link generation + width. gapwatch makes these calls every 5 s, not every tick.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from statistics import median
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _timed(fn: Any, n: int) -> tuple[float, float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return median(times), max(times)


def proc_cost(pid: int, proc_root: str = "/", n: int = 2000) -> dict[str, Any]:
    """Median / max µs of one /proc/PID/status read and parse (gapwatch.sources.procmem)."""
    from gapwatch.sources.procmem import ProcStatusReader

    reader = ProcStatusReader(proc_root)
    med, worst = _timed(lambda: reader.read(pid), n)
    return {"n": n, "proc_status_us_median": med, "proc_status_us_max": worst,
            "proc_status_problem": reader.read(pid).problem}


def slow_reading_costs(nv: Any, gpu: int, pid: int, proc_root: str = "/", n: int = 200
                       ) -> dict[str, Any]:
    """Median and max µs of each slow reading's calls, timed here while the load generator
    runs: nvmlDeviceGetComputeRunningProcesses, the current link generation + width, and one
    /proc/PID/status read (gapwatch.sources.procmem)."""
    from gapwatch.sources.procmem import ProcStatusReader

    h = nv.nvmlDeviceGetHandleByIndex(gpu)
    reader = ProcStatusReader(proc_root)
    calls = {
        "processes": lambda: nv.nvmlDeviceGetComputeRunningProcesses(h),
        "link_gen_and_width": lambda: (nv.nvmlDeviceGetCurrPcieLinkGeneration(h),
                                       nv.nvmlDeviceGetCurrPcieLinkWidth(h)),
        "proc_status": lambda: reader.read(pid),
    }
    out: dict[str, Any] = {"n": n}
    for name, fn in calls.items():
        out[f"{name}_us_median"], out[f"{name}_us_max"] = _timed(fn, n)
    out["processes_listed"] = sorted(int(p.pid) for p in nv.nvmlDeviceGetComputeRunningProcesses(h))
    # False: NVML answers in another PID namespace than this one (a container): /proc misses it.
    out["pid_listed_by_nvml"] = pid in out["processes_listed"]
    out["proc_status_problem"] = reader.read(pid).problem
    return out


def measure_costs(gpu: int, pid: int) -> dict[str, Any]:
    """`slow_reading_costs` through the real NVML (the H200 image has nvidia-ml-py)."""
    import pynvml

    pynvml.nvmlInit()
    try:
        return slow_reading_costs(pynvml, gpu, pid)
    finally:
        pynvml.nvmlShutdown()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pid", type=int, default=os.getpid())
    ap.add_argument("--nvml", action="store_true", help="also time the NVML calls on --gpu")
    ap.add_argument("--gpu", type=int, default=0)
    a = ap.parse_args(argv)
    out: dict[str, Any] = {"proc": proc_cost(a.pid)}
    if a.nvml:
        out["nvml"] = measure_costs(a.gpu, a.pid)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
