"""NVML's blind spot on a real GPU: a process with a large pinned pool exits beside `record`.

Who runs it: a person on a GPU box, from the repository root (docs/gpu-proof.md):

    PYTHONPATH=. python3 bench/blind_spot_h200.py --out /tmp/blind --sizes-gib 24,48

On an H200 every NVML call blocks while the driver frees a process's pinned host memory (1.9 s
for 24 GiB, 5.4 s for 72 GiB, measured earlier), so the sampler reads nothing for that long.
gapwatch records such a stretch as a `blind` record and names the process that exited. This
script checks that on the hardware: it starts `gapwatch record --source nvml`, then for each size
starts a child that pins that much host memory with torch (`pin_memory=True`), holds a small
device tensor so NVML lists it as a compute process, waits, and exits; it times the child's exit
from the parent's side. Then it stops gapwatch (SIGTERM), runs `gapwatch report --json`, and
prints, per child: the pinned size, its pid, how long its exit took, and the blind spot gapwatch
found around it (its duration and whether it names the pid), plus `record`'s closing lines.

Writes `--out/summary.json` (every figure) and `--out/blind.jsonl.gz` (the recording, a
regression case). Exit 0 when every child's exit was matched by a blind spot naming its pid, 1
otherwise (the summary says which), 2 when torch or CUDA is missing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation.nvml_recording import report_json, watch_gpu  # noqa: E402 - the path above

#: The child: pin SIZE GiB, make a CUDA context with a small device tensor (so NVML lists it),
#: say "ready", wait for a line on stdin, then exit (the driver frees the pool at exit).
CHILD = r"""
import sys, time, torch
gib = float(sys.argv[1])
t0 = time.monotonic()
dev = torch.zeros(1 << 20, device="cuda")
pool = torch.empty(int(gib * (1 << 30)), dtype=torch.uint8, pin_memory=True)
pool[:: 1 << 20] = 1  # touch it
torch.cuda.synchronize()
print(f"ready {time.monotonic() - t0:.2f}", flush=True)
sys.stdin.readline()
"""


def run_child(gib: float, hold_s: float) -> dict[str, Any]:
    """Start one pinned-pool child, hold it, let it exit; time each phase from outside."""
    t_start = time.monotonic()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(gib)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdin is not None
    line = child.stdout.readline().strip()
    if not line.startswith("ready"):
        err = child.stderr.read() if child.stderr else ""
        child.kill()
        return {"gib": gib, "pid": child.pid, "error": f"child did not start: {line} {err[-400:]}"}
    alloc_s = float(line.split()[1])
    time.sleep(hold_s)
    t_exit = time.monotonic()
    t_exit_wall = time.time()
    child.stdin.write("\n")
    child.stdin.flush()
    child.wait()
    exit_s = time.monotonic() - t_exit
    return {"gib": gib, "pid": child.pid, "alloc_s": round(alloc_s, 2),
            "exit_requested_wall_s": t_exit_wall, "exit_s": round(exit_s, 3),
            "total_s": round(time.monotonic() - t_start, 2)}


def match(child: dict[str, Any], spots: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The blind spot that began within 10 s after the child was asked to exit."""
    t = child.get("exit_requested_wall_s")
    if t is None:
        return None
    near = [s for s in spots if -1.0 <= s["start_s"] - t <= 10.0]
    return max(near, key=lambda s: s["duration_s"]) if near else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes-gib", default="24,48", help="pinned pool sizes, one child each")
    ap.add_argument("--hold-s", type=float, default=3.0, help="how long each child holds its pool")
    ap.add_argument("--gap-s", type=float, default=4.0, help="quiet time after each exit")
    ap.add_argument("--gpu", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out)
    watch = watch_gpu("blind_spot_h200", ROOT, out, args.gpu, "blind")
    if watch is None:
        return 2
    import torch

    rec, gw = watch.recording, watch.recorder
    children: list[dict[str, Any]] = []
    for gib in (float(s) for s in args.sizes_gib.split(",") if s.strip()):
        print(f"child: pinning {gib:g} GiB", flush=True)
        children.append(run_child(gib, args.hold_s))
        print(f"  {children[-1]}", flush=True)
        time.sleep(args.gap_s)
    gw_err = gw.stop()
    report, report_rc = report_json(ROOT, rec, 120)
    spots = report.get("blind_spots", [])
    ok = True
    for child in children:
        spot = match(child, spots)
        child["blind_spot"] = spot
        names_pid = spot is not None and any(e.get("pid") == child["pid"]
                                             for e in spot.get("exited", []))
        child["names_pid"] = names_pid
        ok = ok and names_pid
        dur = f"{spot['duration_s']:.2f} s" if spot else "none"
        print(f"{child['gib']:g} GiB pid {child['pid']}: exit took {child.get('exit_s')} s; "
              f"blind spot {dur}; names the pid: {names_pid}"
              + (f"\n  words: {spot.get('words')}" if spot else ""), flush=True)
    closing = [ln for ln in gw_err.splitlines() if "blind" in ln.lower() or "NVML" in ln]
    print("record's closing lines about it:", *closing, sep="\n  ")
    summary = {"children": children, "blind_spots": spots, "record_rc": gw.process.returncode,
               "report_rc": report_rc, "record_stderr_tail": gw_err[-3000:],
               "record_closing": closing, "ok": ok,
               "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "gpu": torch.cuda.get_device_name(0)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    if rec.exists():
        shutil.copy(rec, out / "blind.jsonl.gz")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
