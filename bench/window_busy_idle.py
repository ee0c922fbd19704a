"""The chaining window's busy share beside its gaps' idle: how far past 100 % the two add up.

Usage:
    python3 bench/window_busy_idle.py                       # simulated pageable, 120 s
    python3 bench/window_busy_idle.py sim:host-stall 300    # another scenario, seconds
    python3 bench/window_busy_idle.py tests/data/h200-e2e/pageable/rec.jsonl.gz

Feeds the GPU samples to a `GapDetector` and, at every sample, reads the window as the
dashboard shows it (`window_now`: the busy share, what the header, `/metrics` and summary.md
say) beside the idle of the gaps in the last `window_s` (every kind, the open one so far, from
the gap versions the detector published), as shares of the window. Prints, per GPU and in all,
the highest sum, its median and at how many moments it passed 100 %. The busy share is counted
in whole seconds (29 to 30 s of data) where the gaps' idle is over exactly the last 30 s: what
is left past 100 % is the idle of the window's oldest second (docs/detection.md, "Edges").
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation.simulate import simulate  # noqa: E402 - the checkout's root, on the path above
from gapwatch.core.config import DetectorConfig  # noqa: E402
from gapwatch.core.detector import GapDetector  # noqa: E402
from gapwatch.core.models import Gap, GpuSample, Record, SessionHeader  # noqa: E402
from gapwatch.sources.files import read_any  # noqa: E402

_NS = 1_000_000_000


def _records(source: str, seconds: float) -> tuple[SessionHeader, list[Record]]:
    if source.startswith("sim:"):
        sim = simulate(source[4:], duration_s=seconds)
        return sim.header, sim.records
    rec = read_any(source)
    return rec.header, list(rec.records)


def _gaps_idle_ns(gaps: dict[int, Gap], gpu: int, lo_ns: int, t_ns: int) -> int:
    """Idle ns in [lo_ns, t_ns] of `gpu`'s gaps (an open one up to `t_ns`)."""
    total = 0
    for g in gaps.values():
        if g.gpu != gpu:
            continue
        end = t_ns if g.end_mono_ns is None or g.end_mono_ns > t_ns else g.end_mono_ns
        start = g.start_mono_ns if g.start_mono_ns > lo_ns else lo_ns
        if end > start:
            total += end - start
    return total


def sums(source: str, seconds: float) -> dict[int, list[float]]:
    """Busy share + gaps' idle share of the window at every sample, per GPU."""
    header, records = _records(source, seconds)
    config = DetectorConfig()
    det = GapDetector(config, list(header.gpus), period_s=header.period_ms / 1000)
    window_ns = int(config.window_s * _NS)
    gaps: dict[int, Gap] = {}
    out: dict[int, list[float]] = {}
    for r in records:
        if not isinstance(r, GpuSample):
            continue
        for ev in det.feed(r):
            if isinstance(ev, Gap):
                if ev.retracted:
                    gaps.pop(ev.gap_id, None)
                else:
                    gaps[ev.gap_id] = ev
        window = det.window_now(r.gpu)
        if window is None or window.busy_fraction is None:
            continue
        t = window.t_mono_ns
        idle = _gaps_idle_ns(gaps, r.gpu, t - window_ns, t) / window_ns
        out.setdefault(r.gpu, []).append(window.busy_fraction + idle)
    return out


def _line(name: str, xs: list[float]) -> str:
    xs = sorted(xs)
    over = sum(1 for x in xs if x > 1.0 + 1e-9)
    return (f"{name}: max {xs[-1] * 100:.1f} %, median {xs[len(xs) // 2] * 100:.1f} %, "
            f"past 100 % at {over} of {len(xs)} moments")


def main() -> int:
    source = sys.argv[1] if len(sys.argv) > 1 else "sim:pageable"
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 120.0
    per_gpu = sums(source, seconds)
    print(f"{source}: busy share + gaps' idle, of the window")
    for gpu, xs in sorted(per_gpu.items()):
        print("  " + _line(f"GPU {gpu}", xs))
    if len(per_gpu) > 1:
        print("  " + _line("all", [x for xs in per_gpu.values() for x in xs]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
