"""The dashboard on a real GPU beside a stand-in prover, its screens captured as text.

Who runs it: the lead, on a GPU box (the H200), from the repository root:

    PYTHONPATH=. python3 bench/pane_gpu.py --out "$OUT" --seconds 40

It starts `bench/gpu_loadgen.py --scenario SCENARIO` (a stand-in prover that writes cuzk's log
lines and serves its `/status`), then the dashboard as `gapwatch watch --log ... --cuzk-status
URL` builds it (`gapwatch.ui.dashboard_app` over an NVML runtime), under Textual's headless
driver at `--size`. Every `--every-s` seconds it captures the screen as text; after the load it
presses the keys an operator presses (`t` processes, `d` the gap's detail, `?` the advice, `s`
a snapshot), capturing after each, and then shrinks the pane to 80x24 once more. What only a GPU
shows: NVML's real counters and health, the processes panel with real pids, the flag raised
by a real pageable upload, the sampler beside a Textual redraw.

Writes `--out/pane.txt` (every screen, each under a line naming when and after what) and
`--out/pane.json` (when BREAKDOWN was first on screen, the sampler's lateness p50/p99/max ms
over the samples the dashboard's store still holds at the end, its last minutes, and between
each screen and the next, the snapshot folders written). `--smoke`:
the simulated prover (`sim:pageable`) instead of NVML and the load generator, for the
plumbing's test on a box without a GPU.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evaluation.checkout_env import env_with  # noqa: E402 - the checkout's root, on the path above
from evaluation.pane_text import screen_text  # noqa: E402 - the checkout's root, on the path above

#: The keys pressed after the load, in order, each screen captured after it.
KEYS = ("t", "t", "d", "escape", "question_mark", "escape", "s")


@dataclass
class Captured:
    """What the run saw: each screen with its label, and the facts `pane.json` holds."""

    screens: list[tuple[str, str]] = field(default_factory=list)
    #: When each screen was taken (time.monotonic_ns, the samples' clock).
    taken_ns: list[int] = field(default_factory=list)
    breakdown_at_s: float | None = None
    #: (the sample's t_mono_ns, its lateness in ms), in time order.
    lateness: list[tuple[int, float]] = field(default_factory=list)

    def take(self, at_s: float, what: str, app: object) -> None:
        """The screen `at_s` seconds into the run, labelled `what` (a size, or a key)."""
        text = screen_text(app)
        self.screens.append((f"{at_s:.1f}s {what}", text))
        self.taken_ns.append(time.monotonic_ns())
        if self.breakdown_at_s is None and "BREAKDOWN" in text:
            self.breakdown_at_s = round(at_s, 1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_load(a: argparse.Namespace, work: Path) -> tuple[subprocess.Popen[bytes], list[str],
                                                             str]:
    """The stand-in prover, set up and told to go; its two logs and its `/status` URL."""
    out, err, ready, go = (work / n for n in ("stdout.log", "stderr.log", "ready", "go"))
    port = free_port()
    argv = [sys.executable, str(ROOT / "bench" / "gpu_loadgen.py"), "--scenario", a.scenario,
            "--duration", f"{a.seconds:g}", "--gpu", str(a.gpu), "--stdout-log", str(out),
            "--stderr-log", str(err), "--ready-file", str(ready), "--go-file", str(go),
            "--status-listen", f"127.0.0.1:{port}"]
    console = (work / "loadgen.console.txt").open("wb")
    env = env_with(ROOT)
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # CUDA index == NVML index
    proc = subprocess.Popen(argv, stdout=console, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                            start_new_session=True)
    deadline = time.monotonic() + 180
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"load generator not ready (rc {proc.poll()}): "
                             f"{(work / 'loadgen.console.txt').read_text()[-2000:]}")
        time.sleep(0.1)
    go.write_text("go\n")
    return proc, [str(out), str(err)], f"http://127.0.0.1:{port}/status"


async def watch(a: argparse.Namespace, work: Path, logs: list[str], status_url: str | None
                ) -> Captured:
    """The dashboard under the headless driver: screens every `every_s`, then after each key."""
    from gapwatch.config import build_config
    from gapwatch.engine.runtime import build_runtime
    from gapwatch.ui import dashboard_app

    data: dict[str, Any] = {"logs": {"paths": logs}, "snapshot": {"dir": str(work / "snaps")}}
    if status_url is not None:
        data["cuzk"] = {"status_url": [status_url]}
    if not a.smoke:
        data["sampler"] = {"gpus": [a.gpu]}
    rt = build_runtime(build_config(data), "sim:pageable" if a.smoke else "nvml", speed=1.0)
    seen = Captured()
    width, height = (int(v) for v in a.size.split("x"))
    t0 = time.monotonic()
    rt.start()
    try:
        app = dashboard_app(rt)
        async with app.run_test(size=(width, height)) as pilot:
            # One screen each `every_s` from the dashboard's start, however late it came up:
            # counted from before it, on a loaded box its start outlasted the first period and
            # a screen was never taken (or, caught up, two were taken at once).
            up = time.monotonic() - t0
            for i in range(max(1, math.ceil(a.seconds / a.every_s - 1e-9))):
                due = up + min((i + 1) * a.every_s, a.seconds)
                await asyncio.sleep(max(0.0, due - (time.monotonic() - t0)))
                await pilot.pause()
                seen.take(time.monotonic() - t0, f"{width}x{height}", app)
            for key in KEYS:
                await pilot.press(key)
                await asyncio.sleep(a.look_s)  # the redraws while a person looks
                if key == "s":  # until the snapshot's folder is written (a thread's work)
                    await _until(lambda: bool(app.snapshots), 10.0)
                await pilot.pause()
                seen.take(time.monotonic() - t0, f"after {key}", app)
            await pilot.resize_terminal(80, 24)
            await asyncio.sleep(a.look_s)
            await pilot.pause()
            seen.take(time.monotonic() - t0, "80x24", app)
    finally:
        rt.stop()
    seen.lateness = sorted((s.t_mono_ns, s.lateness_ns / 1e6) for samples in
                           rt.store.snapshot().gpu_samples.values() for s in samples
                           if s.lateness_ns is not None)
    return seen


async def _until(done: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


def _pct(values: list[float], q: float) -> float | None:
    return values[min(len(values) - 1, int(q * len(values)))] if values else None


def lateness_of(late_ms: list[float]) -> dict[str, float | int | None]:
    """p50, p99 and the largest of these lateness figures, and how many."""
    late = sorted(late_ms)
    return {"p50": _pct(late, 0.5), "p99": _pct(late, 0.99), "max": late[-1] if late else None,
            "samples": len(late)}


def latest_ticks(lateness: list[tuple[int, float]], n: int = 5) -> list[dict[str, float]]:
    """The `n` latest ticks, each with its time after the first sample (s): when the sampler
    lost its ticks (a lease showed a 243 ms tick within the first screen, the dashboard
    starting, and nothing said when)."""
    if not lateness:
        return []
    t0 = lateness[0][0]
    worst = sorted(lateness, key=lambda tl: tl[1], reverse=True)[:n]
    return [{"at_s": round((t - t0) / 1e9, 3), "ms": round(ms, 3)} for t, ms in worst]


def by_screen(seen: Captured) -> list[dict[str, Any]]:
    """The sampler's lateness between one screen and the next, labelled by the later screen:
    which view (the detail chart, the help, a snapshot's SVG) costs the sampler its ticks."""
    out = []
    start = 0
    for (label, _), end in zip(seen.screens, seen.taken_ns, strict=True):
        out.append({"until": label, **lateness_of([ms for t, ms in seen.lateness
                                                   if start <= t < end])})
        start = end
    return out


def write(out: Path, seen: Captured, work: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "pane.txt").open("w") as f:
        for label, text in seen.screens:
            f.write(f"==== {label}\n{text}\n")
    snaps = sorted(p.name for p in (work / "snaps").glob("*")) if (work / "snaps").exists() else []
    facts = {"breakdown_at_s": seen.breakdown_at_s, "screens": len(seen.screens),
             "lateness_ms": lateness_of([ms for _, ms in seen.lateness]),
             "latest_ticks": latest_ticks(seen.lateness),
             "lateness_ms_by_screen": by_screen(seen), "snapshots": snaps}
    (out / "pane.json").write_text(json.dumps(facts, indent=1) + "\n")
    print(json.dumps(facts))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, default=40.0, help="load seconds, screens taken")
    ap.add_argument("--every-s", type=float, default=10.0, help="a screen every this often")
    ap.add_argument("--look-s", type=float, default=1.0, help="seconds between keys")
    ap.add_argument("--scenario", default="pageable")
    ap.add_argument("--size", default="120x36")
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--smoke", action="store_true", help="sim:pageable, no GPU, no load")
    a = ap.parse_args(argv)
    if not a.every_s > 0 or not a.seconds > 0:
        ap.error("--every-s and --seconds must be above 0")
    with tempfile.TemporaryDirectory(prefix="gapwatch-pane-") as tmp:
        work = Path(tmp)
        load = None
        logs: list[str] = []
        url = None
        if not a.smoke:
            load, logs, url = start_load(a, work)
        try:
            seen = asyncio.run(watch(a, work, logs, url))
        finally:
            if load is not None and load.poll() is None:
                load.terminate()
                try:
                    load.wait(20)
                except subprocess.TimeoutExpired:  # the screens are written all the same
                    load.kill()
                    load.wait(5)
        write(Path(a.out), seen, work)
    return 0
