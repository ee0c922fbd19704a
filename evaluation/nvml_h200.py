"""Prove the NVML source on a real GPU: sampler timing and cost, PCIe/SM numbers vs ground truth.

Runs gapwatch's deadline sampler (`gapwatch.engine.sampler.Sampler`) over `NvmlSource` (and the host
source) for `--duration` seconds, while a torch workload runs in phases, by default in a separate
process as a real prover would (`--inline` runs it in this process to stress the GIL):
idle, timed pinned H2D copies, timed pageable H2D copies, a bf16 matmul loop, idle.

It prints and writes to `--out` (JSON): tick lateness p50/p99/max, sampler CPU as % of one core
(per GPU), per-phase means of PCIe RX/TX, SM activity and utilization.gpu from the samples that
fall wholly inside each phase, the ratio of sampled PCIe RX to the timed copy rate, the signal
sources used, and fake-idle counts (SM < 10 % during the matmul; all-zero samples). The samples
are written as a gapwatch recording (`--record`, JSON Lines) for tests/data.

Needs: python3, torch with CUDA, nvidia-ml-py, pydantic, msgspec; run from the repository root:
    PYTHONPATH=. python bench/nvml_h200.py --out /tmp/h200.json --record /tmp/h200.jsonl
    PYTHONPATH=. python bench/nvml_h200.py --period-ms 50 --out /tmp/h200-50ms.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any

import msgspec

IDLE_SM_PCT = 10.0


# ------------------------------------------------------------------ pure helpers (tested locally)


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..1) of `values`, None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def inside(sample: dict[str, Any], start_s: float, end_s: float, margin_s: float) -> bool:
    """Whether a sample's whole averaging interval lies within [start+margin, end-margin]."""
    end = sample["t_wall_s"]
    begin = end - (sample.get("interval_ns") or 0) / 1e9
    return bool(begin >= start_s + margin_s and end <= end_s - margin_s)


def phase_summary(
    samples: list[dict[str, Any]], phase: dict[str, Any], margin_s: float = 0.25
) -> dict[str, Any]:
    """Means of the sampled fields over one workload phase, and the ratio to the timed copy rate."""
    chosen = [
        s for s in samples
        if s.get("interval_ns") and inside(s, phase["start_wall_s"], phase["end_wall_s"], margin_s)
    ]

    def field_mean(name: str) -> float | None:
        return mean([s[name] for s in chosen if s.get(name) is not None])

    out: dict[str, Any] = {
        "phase": phase["name"],
        "duration_s": round(phase["end_wall_s"] - phase["start_wall_s"], 3),
        "samples": len(chosen),
        "sm_active_pct_mean": field_mean("sm_active_pct"),
        "gpu_util_pct_mean": field_mean("gpu_util_pct"),
        "pcie_rx_bytes_per_s_mean": field_mean("pcie_rx_bytes_per_s"),
        "pcie_tx_bytes_per_s_mean": field_mean("pcie_tx_bytes_per_s"),
        "idle_samples": sum(
            1 for s in chosen
            if s.get("sm_active_pct") is not None and s["sm_active_pct"] < IDLE_SM_PCT
        ),
    }
    for key in ("timed_bytes_per_s", "wall_bytes_per_s", "bytes", "copies"):
        if key in phase:
            out[key] = phase[key]
    rx = out["pcie_rx_bytes_per_s_mean"]
    for key in ("timed_bytes_per_s", "wall_bytes_per_s"):
        if rx is not None and phase.get(key):
            out[f"rx_over_{key.removesuffix('_bytes_per_s')}"] = rx / phase[key]
    return out


def report(
    samples: list[dict[str, Any]],
    phases: list[dict[str, Any]],
    lateness_ms: list[float],
    ticks: int,
    cpu: dict[str, Any],
    n_gpus: int,
) -> dict[str, Any]:
    """Everything the benchmark claims, from plain dicts (samples as in a recording)."""
    summaries = [phase_summary(samples, p) for p in phases]
    matmul = [s for s in summaries if s["phase"] == "matmul"]
    copies = [s for s in summaries if s["phase"] in ("pinned_h2d", "pageable_h2d")]
    real = [s for s in samples if s.get("interval_ns")]
    elapsed_s = cpu.get("elapsed_s") or 0.0
    per_gpu = max(1, n_gpus)

    def pct_of_core(cpu_s: float | None) -> float | None:
        return None if cpu_s is None or elapsed_s <= 0 else 100.0 * cpu_s / elapsed_s / per_gpu

    return {
        "ticks": ticks,
        "gpu_samples": len(samples),
        "samples_per_tick_per_gpu": len(samples) / ticks / per_gpu if ticks else None,
        "lateness_ms": {
            "p50": percentile(lateness_ms, 0.50),
            "p99": percentile(lateness_ms, 0.99),
            "max": max(lateness_ms) if lateness_ms else None,
        },
        "sampler_cpu_pct_of_core_per_gpu": {
            "gpu_source_read": pct_of_core(cpu.get("gpu_read_cpu_s")),
            "whole_sampler_thread": pct_of_core(cpu.get("thread_cpu_s")),
        },
        "host_source_cpu_pct_of_core": (
            None if cpu.get("host_read_cpu_s") is None or elapsed_s <= 0
            else 100.0 * cpu["host_read_cpu_s"] / elapsed_s
        ),
        "gpu_read_wall_ms": cpu.get("gpu_read_wall_ms"),
        "signal_sources": sorted({f"sm={s.get('sm_source')} pcie={s.get('pcie_source')}"
                                  for s in samples}),
        "lower_bound_samples": sum(1 for s in samples if s.get("pcie_lower_bound")),
        "all_zero_samples": sum(
            1 for s in real
            if s.get("sm_active_pct") == 0 and s.get("pcie_rx_bytes_per_s") == 0
            and s.get("pcie_tx_bytes_per_s") == 0
        ),
        "interval_ms": {
            "p50": percentile([s["interval_ns"] / 1e6 for s in real], 0.5),
            "max": max((s["interval_ns"] / 1e6 for s in real), default=None),
        },
        "fake_idle_in_matmul": sum(s["idle_samples"] for s in matmul) if matmul else None,
        "sm_pct_copy_phases": {s["phase"]: s["sm_active_pct_mean"] for s in copies},
        "sm_pct_matmul": matmul[0]["sm_active_pct_mean"] if matmul else None,
        "phases": summaries,
    }


# ------------------------------------------------------------------ the torch workload


def run_workload(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The phases, each with wall-clock boundaries; copy phases with their timed rates."""
    import torch

    dev = torch.device("cuda", args.gpu)
    torch.cuda.set_device(dev)
    torch.zeros(1, device=dev)  # create the context before the first phase starts
    n = int(args.chunk_gib * (1 << 30))
    dst = torch.empty(n, dtype=torch.uint8, device=dev)
    pinned = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    pinned.fill_(1)
    pageable = torch.ones(n, dtype=torch.uint8)  # written, so every page is resident
    a = torch.randn(args.matmul_n, args.matmul_n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(args.matmul_n, args.matmul_n, device=dev, dtype=torch.bfloat16)
    torch.cuda.synchronize()
    phases: list[dict[str, Any]] = []

    def idle(name: str, seconds: float) -> None:
        start = time.time()
        time.sleep(seconds)
        phases.append({"name": name, "start_wall_s": start, "end_wall_s": time.time()})

    def copies(name: str, src: Any, seconds: float) -> None:
        stream = torch.cuda.current_stream()
        event_ms = 0.0
        count = 0
        start = time.time()
        while time.time() - start < seconds:
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record(stream)
            dst.copy_(src, non_blocking=True)
            e1.record(stream)
            e1.synchronize()
            event_ms += e0.elapsed_time(e1)
            count += 1
        end = time.time()
        moved = count * n
        phases.append({
            "name": name, "start_wall_s": start, "end_wall_s": end, "copies": count,
            "bytes": moved, "timed_bytes_per_s": moved / (event_ms / 1e3),
            "wall_bytes_per_s": moved / (end - start),
        })

    def matmul(seconds: float) -> None:
        start = time.time()
        iters = 0
        while time.time() - start < seconds:
            for _ in range(20):  # then sync: a full launch queue would block holding the GIL
                torch.matmul(a, b)
            torch.cuda.synchronize()
            iters += 20
        phases.append({"name": "matmul", "start_wall_s": start, "end_wall_s": time.time(),
                       "iterations": iters})

    idle("idle_start", args.idle_s)
    copies("pinned_h2d", pinned, args.copy_s)
    copies("pageable_h2d", pageable, args.copy_s)
    matmul(args.matmul_s)
    idle("idle_end", args.idle_s)
    return phases


def worker_main(args: argparse.Namespace) -> int:
    phases: list[dict[str, Any]] = []
    error = None
    try:
        phases = run_workload(args)
    except Exception:
        error = traceback.format_exc()
    with open(args.phases_out, "w") as f:
        json.dump({"phases": phases, "error": error}, f)
    return 0 if error is None else 1


# ------------------------------------------------------------------ the sampler side


class MeasuredSource:
    """Wraps a source to measure, on the sampler thread, the CPU and wall time of its reads."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.read_cpu_ns = 0
        self.thread_cpu_ns = 0
        self.read_wall_ns: list[int] = []
        #: (wall time, CPU ns) of every read, to see what each workload phase costs.
        self.read_cpu: list[tuple[float, int]] = []

    def open(self) -> Any:
        return self.inner.open()

    def read(self, *args: Any) -> Any:
        c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
        try:
            return self.inner.read(*args)
        finally:
            c1 = time.thread_time_ns()
            self.read_wall_ns.append(time.perf_counter_ns() - w0)
            self.read_cpu_ns += c1 - c0
            self.read_cpu.append((time.time(), c1 - c0))
            self.thread_cpu_ns = c1  # cumulative for the sampler thread, whatever ran in it

    def close(self) -> None:
        self.inner.close()


class ListSink:
    def __init__(self) -> None:
        self.gpu: list[dict[str, Any]] = []

    def on_header(self, header: Any) -> None:
        pass

    def on_record(self, record: Any) -> None:
        if getattr(record, "type", None) == "gpu":
            self.gpu.append(msgspec.structs.asdict(record))

    def close(self) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        return worker_main(args)
    result: dict[str, Any] = {"args": vars(args), "errors": []}
    try:
        run_bench(args, result)
    except Exception:
        result["errors"].append(traceback.format_exc())
    finally:
        text = json.dumps(result, indent=2, default=str)
        with open(args.out, "w") as f:
            f.write(text + "\n")
        print(json.dumps(result.get("report", {}), indent=2, default=str))
        for err in result["errors"]:
            print("ERROR:", err, file=sys.stderr)
        print(f"wrote {args.out}", file=sys.stderr)
    return 1 if result["errors"] else 0


def run_bench(args: argparse.Namespace, result: dict[str, Any]) -> None:
    from gapwatch.base.clock import SystemClock
    from gapwatch.config import SamplerConfig
    from gapwatch.core.models import SessionHeader
    from gapwatch.engine.sampler import Sampler
    from gapwatch.engine.session import Session
    from gapwatch.engine.store import SeriesStore
    from gapwatch.sources.host import ProcHostSource
    from gapwatch.sources.nvml import NvmlSource

    sampler_config = SamplerConfig(period_ms=args.period_ms, gpus=[args.gpu])
    gpu_source = MeasuredSource(NvmlSource(sampler_config))
    infos = gpu_source.open()
    result["gpus"] = [msgspec.to_builtins(i) for i in infos]
    host_source = None if args.no_host else MeasuredSource(ProcHostSource())
    header = SessionHeader(
        gapwatch_version="bench", host=os.uname().nodename, source="nvml",
        started_wall_s=time.time(), started_mono_ns=time.monotonic_ns(),
        period_ms=args.period_ms, gpus=infos, config={"bench": "nvml_h200"},
    )
    collected = ListSink()
    sinks: list[Any] = [collected]
    if args.record:
        from gapwatch.sinks.recorder import Recorder

        sinks.append(Recorder(args.record))
    store = SeriesStore(infos, args.period_ms / 1e3, history_s=args.duration + 600)
    session = Session(header, store, detector=None, sinks=sinks)
    sampler = Sampler(gpu_source, host_source, session, SystemClock(),
                      int(args.period_ms * 1e6), keep_lateness=1_000_000)
    t0 = time.monotonic()
    sampler.start()
    phases: list[dict[str, Any]] = []
    try:
        try:
            phases = workload(args, result)
        except Exception:  # keep sampling and report what there is
            result["errors"].append(f"workload: {traceback.format_exc()}")
        while time.monotonic() - t0 < args.duration:
            time.sleep(0.05)
    finally:
        sampler.stop()
        elapsed = time.monotonic() - t0
        session.close()
        gpu_source.close()
    result["phases"] = phases
    lat = [x / 1e6 for x in getattr(sampler, "_lateness_ns", [])]
    read_ms = [w / 1e6 for w in gpu_source.read_wall_ns]
    cpu = {
        "elapsed_s": elapsed,
        "gpu_read_cpu_s": gpu_source.read_cpu_ns / 1e9,
        "host_read_cpu_s": host_source.read_cpu_ns / 1e9 if host_source else None,
        "thread_cpu_s": max(gpu_source.thread_cpu_ns,
                            host_source.thread_cpu_ns if host_source else 0) / 1e9,
        "gpu_read_wall_ms": {"p50": percentile(read_ms, 0.5), "p99": percentile(read_ms, 0.99),
                             "max": max(read_ms, default=None)},
    }
    cpu_us = [c / 1e3 for _, c in gpu_source.read_cpu]
    cpu["gpu_read_cpu_us"] = {"mean": mean(cpu_us), "p50": percentile(cpu_us, 0.5),
                              "p99": percentile(cpu_us, 0.99), "max": max(cpu_us, default=None)}
    cpu["gpu_read_cpu_us_mean_by_phase"] = {
        p["name"]: mean([c / 1e3 for t, c in gpu_source.read_cpu
                         if p["start_wall_s"] <= t <= p["end_wall_s"]])
        for p in phases
    }
    if host_source is not None:
        host_us = [c / 1e3 for _, c in host_source.read_cpu]
        cpu["host_read_cpu_us"] = {"mean": mean(host_us), "p99": percentile(host_us, 0.99)}
    result["cpu"] = cpu
    result["sampler"] = dataclasses.asdict(sampler.lateness())
    result["report"] = report(collected.gpu, phases, lat, sampler.ticks, cpu, len(infos))


def workload(args: argparse.Namespace, result: dict[str, Any]) -> list[dict[str, Any]]:
    if args.inline:
        return run_workload(args)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "phases.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--phases-out", out,
               *worker_flags(args)]
        proc = subprocess.run(cmd, timeout=args.duration + 300, capture_output=True, text=True)
        if proc.returncode != 0 or not os.path.exists(out):
            result["errors"].append(f"workload exited {proc.returncode}: {proc.stderr[-3000:]}")
        if not os.path.exists(out):
            return []
        with open(out) as f:
            data = json.load(f)
        if data.get("error"):
            result["errors"].append(f"workload: {data['error']}")
        return list(data.get("phases", []))


def worker_flags(args: argparse.Namespace) -> list[str]:
    return ["--gpu", str(args.gpu), "--chunk-gib", str(args.chunk_gib),
            "--copy-s", str(args.copy_s),
            "--matmul-s", str(args.matmul_s), "--matmul-n", str(args.matmul_n),
            "--idle-s", str(args.idle_s)]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=float, default=60.0, help="sampler seconds (default 60)")
    p.add_argument("--period-ms", type=float, default=100.0, help="sampler period (default 100)")
    p.add_argument("--gpu", type=int, default=0, help="GPU index (default 0)")
    p.add_argument("--out", default="nvml_h200.json", help="result JSON path")
    p.add_argument("--record", default="", help="also write the session as a recording (jsonl)")
    p.add_argument("--chunk-gib", type=float, default=1.0, help="size of one H2D copy (GiB)")
    p.add_argument("--copy-s", type=float, default=8.0, help="seconds per copy phase")
    p.add_argument("--matmul-s", type=float, default=10.0, help="seconds of bf16 matmul")
    p.add_argument("--matmul-n", type=int, default=8192, help="matrix size")
    p.add_argument("--idle-s", type=float, default=5.0, help="idle seconds before and after")
    p.add_argument("--inline", action="store_true",
                   help="run the workload in this process (GIL contention) instead of a child")
    p.add_argument("--no-host", action="store_true", help="do not sample the host source")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--phases-out", default="", help=argparse.SUPPRESS)
    return p.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
