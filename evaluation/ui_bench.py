"""What the dashboard costs: process CPU and sampler tick lateness, alone or side by side with
nvitop, measured from /proc.

Two ways to run it:

1. Side by side (the figure docs/benchmarks.md quotes): every process below runs at the same
   time, each in its own process, and each one's CPU is read from /proc/PID/stat over the same
   span. One command, results under --out:

       python3 bench/ui_bench.py --side-by-side watch-ui,watch-pty,nvitop,record,dmon \
           --seconds 60 --load chained --out "$OUT"

   - watch-ui / demo-ui: `gapwatch watch` (NVML) / `demo` (simulated prover) with the dashboard
     under Textual's headless driver at 160x48 (App.run_test), --redraw-hz (default 4 Hz),
     10 Hz sampling; it also reports its sampler's tick lateness;
   - watch-pty / demo-pty: the real `python3 -m gapwatch watch` / `demo` command in a 160x48
     pseudo-terminal (the real Textual driver, its output drained), as a user runs it;
   - nvitop: nvitop's TUI in a 160x48 pseudo-terminal at its finest interval
     (`nvitop --monitor full --interval 0.25`; 0.25 s is the shortest it accepts);
   - record: headless `gapwatch record --source nvml` (10 Hz, no UI);
   - dmon: `nvidia-smi dmon -d 1`.
   `--load SCENARIO` first starts bench/gpu_loadgen.py (a stand-in prover keeping the GPU busy)
   and gives its two logs to the gapwatch processes (`--log`), as on a proving box. Processes
   whose program is missing (nvitop, nvidia-smi) are skipped and said so. Writes
   `ui-bench.json` and `ui-bench.md` to --out and prints the table.

2. In one process (older figures): `--modes demo,demo-ui,replay,replay-ui,watch,watch-ui`, CPU by
   `time.process_time()` of this process.

CPU: one core = 100 %. The first WARMUP_S seconds (imports, first layout) are not measured.
Baseline to beat: shared/reference/ui-bench/chart_cost.py (plotext charts: ~60 % CPU, p99 18-30 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import importlib.util
import json
import os
import platform
import pty
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gapwatch.config import build_config  # noqa: E402
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


async def _measure(mode: str, seconds: float, redraw_hz: float,
                   log_paths: list[str] | None = None) -> str:
    config = build_config({"ui": {"redraw_hz": redraw_hz}, "snapshot": {"auto": False},
                           "logs": {"paths": list(log_paths or [])}})
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


# -- side by side ------------------------------------------------------------------------------

COLS, ROWS = 160, 48
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of one process (/proc/PID/stat fields 14 and 15)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            stat = fh.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces: fields after it start past the last ')'.
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


@dataclass
class Proc:
    """One measured process."""

    name: str
    argv: list[str]
    in_pty: bool
    what: str
    popen: subprocess.Popen[bytes] | None = None
    master_fd: int | None = None
    drained_bytes: int = 0
    cpu0_s: float | None = None
    cpu1_s: float | None = None
    wall_s: float = 0.0
    skipped: str = ""
    output: list[str] = field(default_factory=list)

    @property
    def cpu_pct(self) -> float | None:
        if self.cpu0_s is None or self.cpu1_s is None or self.wall_s <= 0:
            return None
        return (self.cpu1_s - self.cpu0_s) / self.wall_s * 100


def _drain(proc: Proc) -> None:
    """Read the pseudo-terminal's output (a TUI blocks when nobody reads it); count, drop."""
    assert proc.master_fd is not None
    while True:
        try:
            data = os.read(proc.master_fd, 65536)
        except OSError:
            return
        if not data:
            return
        proc.drained_bytes += len(data)


def _start(proc: Proc, env: dict[str, str], workdir: Path) -> None:
    exe = shutil.which(proc.argv[0]) if not os.path.isabs(proc.argv[0]) else proc.argv[0]
    if exe is None and importlib.util.find_spec(proc.argv[0]) is not None:
        # Installed with `pip --target` (wheels carried to the GPU box): no script on PATH.
        proc.argv = [sys.executable, "-m", *proc.argv]
        exe = sys.executable
    if exe is None:
        proc.skipped = f"{proc.argv[0]} not found"
        return
    log = open(workdir / f"{proc.name}.out", "wb")  # noqa: SIM115 - closed with the process
    if proc.in_pty:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        proc.popen = subprocess.Popen(
            proc.argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=workdir,
            start_new_session=True,
        )  # fmt: skip
        os.close(slave)
        proc.master_fd = master
        threading.Thread(target=_drain, args=(proc,), daemon=True).start()
        log.close()
    else:
        proc.popen = subprocess.Popen(proc.argv, stdin=subprocess.DEVNULL, stdout=log,
                                      stderr=subprocess.STDOUT, env=env, cwd=workdir,
                                      start_new_session=True)


def _stop(proc: Proc) -> None:
    p = proc.popen
    if p is None:
        return
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(5)
    if proc.master_fd is not None:
        try:
            os.close(proc.master_fd)
        except OSError:
            pass


def _plan(names: list[str], seconds: float, workdir: Path, logs: list[str],
          gpu: int | None, redraw_hz: float) -> list[Proc]:
    py = sys.executable
    config = workdir / "gapwatch.toml"
    # --redraw-hz reaches every dashboard (it was written as 4.0 here whatever was asked).
    config.write_text(f'[snapshot]\nauto = false\n[ui]\nredraw_hz = {redraw_hz!r}\n',
                      encoding="utf-8")
    common = ["--config", str(config)] + [a for p in logs for a in ("--log", p)]
    if gpu is not None:
        common += ["--gpus", str(gpu)]
    child_s = str(seconds + WARMUP_S + 60)  # stopped by SIGTERM when the span is measured
    ui = ["--redraw-hz", str(redraw_hz)]
    here = str(ROOT / "bench" / "ui_bench.py")  # the entry point: a child run of this program
    table = {
        "watch-ui": ([py, here, "--child", "watch-ui", "--seconds", child_s, *ui,
                      *common], False,
                     "gapwatch watch, dashboard under Textual's headless driver, 160x48"),
        "demo-ui": ([py, here, "--child", "demo-ui", "--seconds", child_s, *ui,
                     *common], False,
                    "gapwatch demo, dashboard under Textual's headless driver, 160x48"),
        "watch-pty": ([py, "-m", "gapwatch", "watch", *common], True,
                      "gapwatch watch in a 160x48 pseudo-terminal (real driver)"),
        "demo-pty": ([py, "-m", "gapwatch", "demo", *common], True,
                     "gapwatch demo in a 160x48 pseudo-terminal (real driver)"),
        "nvitop": (["nvitop", "--monitor", "full", "--interval", "0.25"], True,
                   "nvitop TUI in a 160x48 pseudo-terminal, --interval 0.25 (its finest)"),
        "record": ([py, "-m", "gapwatch", "record", "--source", "nvml", "--quiet", "--out",
                    str(workdir / "record.jsonl.gz"), *common], False,
                   "gapwatch record, headless, 10 Hz"),
        "dmon": (["nvidia-smi", "dmon", "-d", "1"] + (["-i", str(gpu)] if gpu is not None else []),
                 False, "nvidia-smi dmon -d 1"),
    }
    procs = []
    for name in names:
        if name not in table:
            raise SystemExit(f"unknown process {name!r}; choose from {', '.join(table)}")
        argv, in_pty, what = table[name]
        procs.append(Proc(name, argv, in_pty, what))
    return procs


def _load(scenario: str, workdir: Path, seconds: float, gpu: int | None) -> tuple[
        subprocess.Popen[bytes], list[str]]:
    """Start bench/gpu_loadgen.py (the stand-in prover); its two logs for gapwatch's --log."""
    out, err = workdir / "loadgen-stdout.log", workdir / "loadgen-stderr.log"
    argv = [sys.executable, str(ROOT / "bench" / "gpu_loadgen.py"), "--scenario", scenario,
            "--duration", str(seconds + WARMUP_S + 30), "--stdout-log", str(out),
            "--stderr-log", str(err)]
    if gpu is not None:
        argv += ["--gpu", str(gpu)]
    console = open(workdir / "loadgen-console.txt", "wb")  # noqa: SIM115 - kept for the run
    popen = subprocess.Popen(argv, stdout=console, stderr=subprocess.STDOUT,
                             start_new_session=True, cwd=ROOT)
    return popen, [str(out), str(err)]


def side_by_side(names: list[str], seconds: float, out: Path, load: str | None,
                 load_setup_s: float, gpu: int | None, redraw_hz: float = 4.0) -> int:
    out.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="gapwatch-ui-bench-"))
    env = dict(os.environ, TERM="xterm-256color", COLUMNS=str(COLS), LINES=str(ROWS),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("NO_COLOR", None)
    loadgen: subprocess.Popen[bytes] | None = None
    logs: list[str] = []
    if load:
        loadgen, logs = _load(load, workdir, seconds, gpu)
        print(f"# load: gpu_loadgen.py --scenario {load}; {load_setup_s:g} s of setup", flush=True)
        time.sleep(load_setup_s)
    procs = _plan(names, seconds, workdir, logs, gpu, redraw_hz)
    print(f"# {len(procs)} processes side by side, {seconds:g} s measured after {WARMUP_S:g} s "
          f"of warm-up, {COLS}x{ROWS}, redraw {redraw_hz:g} Hz", flush=True)
    try:
        for proc in procs:
            _start(proc, env, workdir)
        time.sleep(WARMUP_S)
        wall0 = time.monotonic()
        for proc in procs:
            if proc.popen is not None:
                proc.cpu0_s = cpu_seconds(proc.popen.pid)
        time.sleep(seconds)
        wall = time.monotonic() - wall0
        for proc in procs:
            if proc.popen is not None:
                proc.cpu1_s = cpu_seconds(proc.popen.pid)
                proc.wall_s = wall
                if proc.popen.poll() is not None and not proc.skipped:
                    proc.skipped = f"exited early with {proc.popen.returncode}"
    finally:
        for proc in procs:
            _stop(proc)
        if loadgen is not None and loadgen.poll() is None:
            os.killpg(loadgen.pid, signal.SIGTERM)
            try:
                loadgen.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(loadgen.pid, signal.SIGKILL)
    for proc in procs:
        path = workdir / f"{proc.name}.out"
        if path.exists():
            proc.output = path.read_text(errors="replace").splitlines()[-5:]
    return _write_results(procs, seconds, out, load, workdir)


def _write_results(procs: list[Proc], seconds: float, out: Path, load: str | None,
                   workdir: Path) -> int:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.node()}, {os.cpu_count()} CPUs, python {sys.version.split()[0]}"
    rows: list[dict[str, Any]] = []
    for proc in procs:
        pct = proc.cpu_pct
        lateness = next((line for line in proc.output if "lateness" in line), "")
        rows.append({
            "process": proc.name, "what": proc.what, "cpu_pct": None if pct is None else
            round(pct, 2), "skipped": proc.skipped, "pty_bytes": proc.drained_bytes,
            "lateness": lateness.split("lateness", 1)[-1].strip() if lateness else "",
            "tail": proc.output,
        })  # fmt: skip
    doc = {"date": when, "machine": machine, "seconds": seconds, "load": load,
           "size": f"{COLS}x{ROWS}", "warmup_s": WARMUP_S, "processes": rows,
           "workdir": str(workdir)}
    (out / "ui-bench.json").write_text(json.dumps(doc, indent=2), encoding="utf-8")
    lines = [f"Side by side, {when}, {machine}; {seconds:g} s measured, {COLS}x{ROWS}"
             + (f", load: gpu_loadgen.py --scenario {load}" if load else ""), "",
             "| process | what | CPU (one core = 100 %) | notes |", "|---|---|---|---|"]
    for r in rows:
        cpu = "skipped" if r["skipped"] and r["cpu_pct"] is None else f"{r['cpu_pct']:.2f} %"
        note = r["skipped"] or (f"sampler lateness {r['lateness']}" if r["lateness"] else "")
        if r["pty_bytes"]:
            note = (note + "; " if note else "") + f"{r['pty_bytes'] / 1e6:.1f} MB of output"
        lines.append(f"| {r['process']} | {r['what']} | {cpu} | {note} |")
    table = "\n".join(lines) + "\n"
    (out / "ui-bench.md").write_text(table, encoding="utf-8")
    print(table)
    return 0 if all(r["cpu_pct"] is not None or r["skipped"] for r in rows) else 1


async def _child(mode: str, seconds: float, log_paths: list[str], gpu: int | None,
                 redraw_hz: float = 4.0) -> None:
    """A headless dashboard that runs until SIGTERM (or `seconds`) and then prints its sampler
    lateness (the parent reads its CPU from /proc)."""
    data: dict[str, Any] = {"snapshot": {"auto": False}, "logs": {"paths": log_paths},
                            "ui": {"redraw_hz": redraw_hz}}
    if gpu is not None:
        data["sampler"] = {"gpus": [gpu]}
    config = build_config(data)
    rt = build_runtime(config, "sim:pageable" if mode.startswith("demo") else "nvml", speed=1.0)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    since_ns = time.monotonic_ns() + int(WARMUP_S * 1e9)
    rt.start()
    try:
        from gapwatch.ui import dashboard_app

        app = dashboard_app(rt)  # as `gapwatch watch` builds it
        async with app.run_test(size=(COLS, ROWS)):
            try:
                await asyncio.wait_for(stop.wait(), seconds)
            except TimeoutError:
                pass
    finally:
        rt.stop()
    print(f"{mode} sampler lateness {_percentiles(_sampler_lateness(rt, since_ns))}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--modes", default="demo,demo-ui,replay,replay-ui")
    parser.add_argument("--side-by-side", default=None, metavar="PROCS",
                        help="comma-separated: watch-ui, watch-pty, demo-ui, demo-pty, nvitop, "
                             "record, dmon (each its own process, all at once)")
    parser.add_argument("--out", default="out/ui-bench", help="where --side-by-side writes")
    parser.add_argument("--load", default=None, metavar="SCENARIO",
                        help="start bench/gpu_loadgen.py --scenario SCENARIO first")
    parser.add_argument("--load-setup-s", type=float, default=15.0,
                        help="seconds the load generator gets before the measurement starts")
    parser.add_argument("--gpus", default=None, help="(side by side) the GPU index to watch")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--config", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--log", action="append", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--switchinterval", type=float, default=None,
                        help="sys.setswitchinterval in ms (default: Python's 5 ms)")
    parser.add_argument("--redraw-hz", type=float, default=4.0)
    args = parser.parse_args()
    if args.switchinterval is not None:
        sys.setswitchinterval(args.switchinterval / 1000)
    if args.child:
        asyncio.run(_child(args.child, args.seconds, args.log,
                           int(args.gpus) if args.gpus is not None else None, args.redraw_hz))
        return
    if args.side_by_side:
        gpu = int(args.gpus) if args.gpus is not None else None
        names = [n.strip() for n in args.side_by_side.split(",") if n.strip()]
        raise SystemExit(side_by_side(names, args.seconds, Path(args.out), args.load,
                                      args.load_setup_s, gpu, args.redraw_hz))
    print(f"# python {sys.version.split()[0]}, {os.cpu_count()} CPUs, switchinterval "
          f"{sys.getswitchinterval() * 1000:g} ms, redraw {args.redraw_hz:g} Hz, 160x48, "
          f"{args.seconds:g} s per mode")
    for mode in args.modes.split(","):
        print(asyncio.run(_measure(mode.strip(), args.seconds, args.redraw_hz)), flush=True)


if __name__ == "__main__":
    main()
