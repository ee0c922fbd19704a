"""A prover's restart on a real GPU, as `gapwatch record` sees it: busy, killed, NVML blind while
the driver frees the killed run's pinned pool, the new run pinning its own (NVML blind again) and
idling (its SRS load), then busy again.

Who runs it: a person on a GPU box, from the repository root (docs/gpu-proof.md):

    PYTHONPATH=. python3 bench/restart_hole_h200.py --out /tmp/restart --pool-gib 24

Each run is a child that pins `--pool-gib` GiB of host memory with torch (`pin_memory=True`),
idles `--load-s` seconds (the new run's SRS load: its GPU waits), keeps the GPU busy with matmuls
for `--busy-s` seconds, idles `--idle-s` seconds (the old run's last moments), then waits. The
first run is then killed (SIGKILL: no goodbye, as systemd's SIGTERM or an OOM kill ends cuzk) and
the second started at once; the second is let go after the same phases. Each child prints each
phase's wall time as it begins (the truth, `truth.json`). `gapwatch record --source nvml` runs
throughout; then `gapwatch report --json` of the recording.

Writes `--out/restart.jsonl.gz` (the recording: a regression case), `--out/truth.json`,
`--out/report.json`, and prints the gaps between the first run's work and the second's, the
blind spots, and the idle the truth says the restart cost against the idle in gaps. Exit 0
when it ran (the figures are the result), 2 when torch or CUDA is missing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation.nvml_recording import report_json, watch_gpu  # noqa: E402 - the path above

#: One run of the stand-in prover: pin GIB, idle LOAD_S (its SRS load), busy BUSY_S, idle
#: IDLE_S, then wait for a line on stdin (or a kill). Each phase's wall time on stdout.
CHILD = r"""
import json, sys, time, torch
gib, load_s, busy_s, idle_s = map(float, sys.argv[1:5])
def say(phase):
    print(json.dumps({"phase": phase, "t_wall_s": time.time()}), flush=True)
say("start")
dev = torch.zeros(1 << 20, device="cuda")
pool = torch.empty(int(gib * (1 << 30)), dtype=torch.uint8, pin_memory=True)
pool[:: 1 << 20] = 1
torch.cuda.synchronize()
say("pinned")
time.sleep(load_s)
a = torch.randn(8192, 8192, device="cuda")
say("busy")
end = time.time() + busy_s
while time.time() < end:
    for _ in range(4):
        a = (a @ a).clamp_(-1.0, 1.0)
    torch.cuda.synchronize()
say("idle")
time.sleep(idle_s)
say("waiting")
sys.stdin.readline()
"""


def start_run(args: argparse.Namespace) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(args.pool_gib), str(args.load_s), str(args.busy_s),
         str(args.idle_s)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def phases_until_waiting(child: subprocess.Popen[str]) -> dict[str, float]:
    """Each phase's wall time as the child says it, up to "waiting"."""
    assert child.stdout is not None
    seen: dict[str, float] = {}
    for line in child.stdout:
        try:
            said = json.loads(line)
        except ValueError:
            continue
        seen[said["phase"]] = said["t_wall_s"]
        if said["phase"] == "waiting":
            break
    return seen


def gaps_between(report: dict[str, Any], lo_s: float, hi_s: float) -> list[dict[str, Any]]:
    return [g for g in report.get("gaps", []) if g["end_s"] > lo_s and g["start_s"] < hi_s]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--pool-gib", type=float, default=24.0)
    ap.add_argument("--load-s", type=float, default=8.0, help="idle after pinning (SRS load)")
    ap.add_argument("--busy-s", type=float, default=6.0)
    ap.add_argument("--idle-s", type=float, default=2.0, help="idle before the kill")
    ap.add_argument("--gpu", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out)
    watch = watch_gpu("restart_hole_h200", ROOT, out, args.gpu, "restart")
    if watch is None:
        return 2
    rec, gw = watch.recording, watch.recorder
    first = start_run(args)
    truth: dict[str, Any] = {"first": phases_until_waiting(first)}
    truth["kill_t_wall_s"] = time.time()
    first.send_signal(signal.SIGKILL)
    first.wait()
    truth["first_gone_t_wall_s"] = time.time()
    second = start_run(args)
    truth["second"] = phases_until_waiting(second)
    assert second.stdin is not None
    second.stdin.write("\n")
    second.stdin.flush()
    second.wait()
    time.sleep(3.0)
    gw_err = gw.stop()
    report, report_rc = report_json(ROOT, rec, 180)
    lo, hi = truth["first"].get("idle", 0.0), truth["second"].get("busy", 0.0)
    truth["restart_idle_s"] = hi - lo
    gaps = gaps_between(report, lo - 1.0, hi + 1.0)
    in_gaps = sum(g["duration_s"] for g in gaps)
    print(f"restart: the GPU idle from the first run's last work to the second's first: "
          f"{hi - lo:.1f} s (children's clocks)")
    for g in gaps:
        print(f"  gap {g['gap_id']}: {g['start_s'] - lo:+.2f} s .. {g['end_s'] - lo:+.2f} s "
              f"({g['duration_s']:.2f} s), hole after: {g.get('hole_after_s')}; {g['hint'][:160]}")
    spots = [s for s in report.get("blind_spots", []) if lo - 1.0 <= s["start_s"] <= hi + 1.0]
    for s in spots:
        print(f"  blind spot {s['start_s'] - lo:+.2f} s, {s['duration_s']:.2f} s: {s['words']}")
    print(f"idle in gaps: {in_gaps:.1f} s of {hi - lo:.1f} s; record rc {gw.process.returncode}, "
          f"report rc {report_rc}")
    (out / "truth.json").write_text(json.dumps(truth, indent=2))
    (out / "report.json").write_text(json.dumps(report, indent=2))
    (out / "record.stderr").write_text(gw_err[-5000:])
    if rec.exists():
        shutil.copy(rec, out / "restart.jsonl.gz")
    return 0


if __name__ == "__main__":
    sys.exit(main())
