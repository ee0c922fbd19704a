"""Recordings made for A/B comparisons, and the comparison: `bench/report_same.py` (is the report
still the same?) makes its inputs and compares its documents with these; tests/test_report_same.py
holds them to what they promise.

- `shift_clock`: a recording's monotonic clock moved to one counted from the epoch (past 2**53 ns);
- `damage`: holes, clock steps, samples out of order, a GPU losing its SM reading, on purpose;
- `compare`: two folders of documents, byte for byte.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

#: A monotonic clock counted from the epoch, as some traces have it (~1.8e18 ns: above 2**53).
EPOCH_NS = 1_796_000_000_000_000_000


def shift_clock(src: Path, dst: Path, by_ns: int = EPOCH_NS) -> None:
    """A copy of a recording whose GPU and host samples' `t_mono_ns` are `by_ns` later: times
    past 2**53 ns, where dividing them by 1e9 in doubles and exactly differ."""

    lines = src.read_bytes().splitlines(keepends=True)
    with open(dst, "wb") as f:
        f.write(lines[0])
        for line in lines[1:]:
            d = json.loads(line)
            if isinstance(d.get("t_mono_ns"), int):
                d["t_mono_ns"] += by_ns
            f.write(json.dumps(d, separators=(",", ":")).encode() + b"\n")


def damage(src: Path, dst: Path, seed: int) -> None:
    """A copy of a recording with the faults real ones have, at random places: a few lines
    gone (holes, some longer than the chaining window), wall-clock steps, samples swapped out
    of order, GPU samples whose readings are zero with no PCIe (stale GPM), NaN-free but missing
    (null) SM readings, utilization-only stretches, and one GPU silent for a while."""

    rnd = random.Random(seed)
    lines = src.read_bytes().splitlines(keepends=True)
    head, body = lines[0], lines[1:]
    # In one of them GPU 1 never gives an SM reading: judged by utilization.gpu (low confidence).
    util_only = "host-stall" in src.name
    if util_only:
        header = json.loads(head)
        header["gpus"][1]["sm_source"] = "util"
        head = json.dumps(header, separators=(",", ":")).encode() + b"\n"
    docs = [json.loads(x) for x in body]
    out: list[dict[str, object]] = []
    step = 0.0
    silent_from = len(docs) // 2
    silent_to = silent_from + 900
    i = 0
    while i < len(docs):
        d = docs[i]
        i += 1
        if d.get("type") == "gpu" and d.get("gpu") == 1 and silent_from <= i < silent_to:
            continue
        r = rnd.random()
        if r < 0.002:
            i += rnd.choice((3, 10, 400))  # a hole (400 lines: longer than the window)
            continue
        if r < 0.003:
            step += rnd.choice((-5.0, 3.0, 0.4))  # the wall clock steps
        if "t_wall_s" in d and isinstance(d["t_wall_s"], float):
            d["t_wall_s"] = d["t_wall_s"] + step
        if d.get("type") == "gpu":
            if r < 0.006:
                d["sm_active_pct"] = 0.0
                d["pcie_rx_bytes_per_s"] = 0
                d["pcie_tx_bytes_per_s"] = 0
                d["sm_source"] = "gpm"
            elif r < 0.008:
                d["sm_active_pct"] = None
            elif r < 0.009:
                d["interval_ns"] = None
            elif r < 0.010:
                d["pcie_rx_bytes_per_s"] = None
        out.append(d)
        if d.get("type") == "gpu" and r > 0.998:
            late = dict(d)  # a sample out of order: earlier than the one before it
            late["t_mono_ns"] = int(d["t_mono_ns"]) - 150_000_000
            out.append(late)
        if util_only and d.get("type") == "gpu" and d.get("gpu") == 1:
            d["sm_active_pct"] = None
    with open(dst, "wb") as f:
        f.write(head)
        for d in out:
            f.write(json.dumps(d, separators=(",", ":")).encode() + b"\n")


def compare(a: Path, b: Path) -> int:
    """0 when every document of `a` is byte for byte the one of `b` (and both have the same)."""
    names = sorted({p.name for p in a.glob("*.json")} | {p.name for p in b.glob("*.json")})
    bad = 0
    for name in names:
        pa, pb = a / name, b / name
        if not (pa.exists() and pb.exists()):
            print(f"MISSING {name}: only in {'the first' if pa.exists() else 'the second'}")
            bad += 1
            continue
        la, lb = pa.read_bytes().splitlines(), pb.read_bytes().splitlines()
        if la == lb:
            continue
        bad += 1
        k = next((i for i, (x, y) in enumerate(zip(la, lb, strict=False)) if x != y),
                 min(len(la), len(lb)))
        print(f"DIFFERS {name} at line {k + 1}:")
        for x in la[max(0, k - 3):k + 3]:
            print(f"  a| {x.decode()[:200]}")
        for y in lb[max(0, k - 3):k + 3]:
            print(f"  b| {y.decode()[:200]}")
    print(f"{len(names) - bad} of {len(names)} documents identical")
    return 1 if bad else 0
