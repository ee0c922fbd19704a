"""What each NVML health call of `gapwatch.sources.nvml` costs, and what it answers, on this box.

Who runs it: the lead, on a GPU box (the H200), from the repository root (a few seconds):

    PYTHONPATH=. python3 bench/health_calls.py --calls 2000

For every GPU, each call the health round makes (docs/health.md's table, the row remapping
included) is timed `--calls` times back to back (`time.perf_counter_ns`), and its first answer
printed (or NVML's error: NotSupported is an answer too). Prints a Markdown table per GPU:
call, answer, p50 / p99 / max µs. Exit 0 when NVML answered at all, 2 when it did not start.
This module imports pynvml itself (a bench, not gapwatch: `sources/nvml.py` stays the only
module of the package that does).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any


def _calls(nv: Any, h: Any) -> list[tuple[str, Callable[[], Any]]]:
    """The health round's calls on handle `h`, as `sources.nvml` makes them."""
    reasons = (getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
               or nv.nvmlDeviceGetCurrentClocksThrottleReasons)
    return [
        ("memory info", lambda: nv.nvmlDeviceGetMemoryInfo(h).used),
        ("temperature", lambda: nv.nvmlDeviceGetTemperature(h, 0)),
        ("power", lambda: nv.nvmlDeviceGetPowerUsage(h)),
        ("enforced power limit", lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h)),
        ("SM clock", lambda: nv.nvmlDeviceGetClockInfo(h, 1)),
        ("memory clock", lambda: nv.nvmlDeviceGetClockInfo(h, 2)),
        ("clocks event reasons", lambda: reasons(h)),
        ("ECC corrected (volatile)", lambda: nv.nvmlDeviceGetTotalEccErrors(h, 0, 0)),
        ("ECC uncorrected (volatile)", lambda: nv.nvmlDeviceGetTotalEccErrors(h, 1, 0)),
        ("PCIe replay counter", lambda: nv.nvmlDeviceGetPcieReplayCounter(h)),
        ("remapped rows", lambda: nv.nvmlDeviceGetRemappedRows(h)),
        ("running processes", lambda: len(nv.nvmlDeviceGetComputeRunningProcesses(h))),
    ]


def _time(fn: Callable[[], Any], n: int) -> tuple[str, list[float]]:
    try:
        answer = repr(fn())
    except Exception as exc:  # noqa: BLE001 - NVML's answer, said as it is
        return f"error: {exc}", []
    took = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        fn()
        took.append((time.perf_counter_ns() - t0) / 1000)
    return answer, sorted(took)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args(argv)
    try:
        import pynvml as nv

        nv.nvmlInit()
    except Exception as exc:  # noqa: BLE001
        print(f"NVML did not start: {exc}")
        return 2
    try:
        print(f"driver {nv.nvmlSystemGetDriverVersion()}, {args.calls} calls each")
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            print(f"\n### GPU {i}: {nv.nvmlDeviceGetName(h)}\n")
            print("| call | answer | p50 µs | p99 µs | max µs |\n| --- | --- | --- | --- | --- |")
            for name, fn in _calls(nv, h):
                answer, took = _time(fn, args.calls)
                if took:
                    p99 = took[min(len(took) - 1, int(len(took) * 0.99))]
                    print(f"| {name} | {answer} | {took[len(took) // 2]:.1f} | {p99:.1f} "
                          f"| {took[-1]:.1f} |")
                else:
                    print(f"| {name} | {answer} | - | - | - |")
    finally:
        nv.nvmlShutdown()
    return 0
