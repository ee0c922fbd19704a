"""End-to-end proof on a real GPU: gapwatch beside the load generator, scored against truth.

Who runs it: a person on a GPU box, from the repository root (docs/gpu-proof.md):

    PYTHONPATH=. python3 bench/gpu_e2e.py --out /tmp/e2e

For each scenario (chained, pageable with host-memory pressure, host-stall, transfer-bound) it
starts `bench/gpu_loadgen.py`, waits until its setup is done, starts `gapwatch record --source
nvml --log STDOUT --log STDERR --from-start --quiet` and `nvidia-smi dmon` beside it, lets the
partitions run `--seconds`, stops gapwatch with SIGTERM, runs `gapwatch report --json` and scores
it against the load generator's ground truth (`bench/gpu_e2e_score.py`). Then it runs the chained
scenario `--overhead-runs` times each with and without gapwatch, alternately, for the slowdown.

What it writes to `--out` (few files on purpose: a device may return only a handful):
    summary.json          every figure (per scenario, sampler overhead, dmon, slowdown, machine)
    summary.md            the same as tables, for docs/benchmarks.md
    h200-e2e.tar.gz       the regression cases: `tar xzf h200-e2e.tar.gz -C tests/data`
    e2e-details.tar.gz    reports, consoles, gapwatch stderr, overhead recordings
Working files live in `--work` (default: a new temp folder). summary.json is rewritten after each
step, so a run cut short still leaves what it measured. Steps that would overrun `--deadline-s`
are skipped, loudly. Exit codes: 0 every step ran (goals may still be missed: read the table),
1 a step failed, 2 a preflight check failed (nothing was measured).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evaluation import gpu_e2e_score as sc  # noqa: E402 - the checkout's root, on the path above
from evaluation.checkout_env import env_with  # noqa: E402 - the checkout's root, on the path above

SCENARIOS = ("chained", "pageable", "host-stall", "transfer-bound")


def gpu_args(a: argparse.Namespace) -> list[str]:
    """`--gpus I` for real GPUs; nothing for `--smoke`'s simulated source, which refuses it."""
    return ["--gpus", str(a.gpu)] if a.gapwatch_source == "nvml" else []
#: Seconds a load generator needs before "ready" (torch import, CUDA, pinned pool, calibration).
SETUP_S = 10.0
#: Time for one worker to finish its last partition after the deadline, plus process exit.
DRAIN_S = 3.0
REPORT_S = 3.0
#: gapwatch's start-up until its recording grows (imports, NVML init, first flush).
GAPWATCH_START_S = 2.0


class StepError(Exception):
    """A step of the run failed; the message says what and shows the tail of its output."""


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def tail(path: Path, n: int = 25) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no {path.name})"
    return "\n".join("    " + ln for ln in lines[-n:])


# ------------------------------------------------------------------ child processes


class Children:
    """Every process this script started, so that each is ended (by its own pid) on any exit."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[Any]] = []

    def start(self, cmd: list[str], **kw: Any) -> subprocess.Popen[Any]:
        p = subprocess.Popen(cmd, **kw)
        self.procs.append(p)
        return p

    def end(self, p: subprocess.Popen[Any], sig: int = signal.SIGTERM, wait_s: float = 20.0
            ) -> int | None:
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(wait_s)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        return p.returncode

    def end_all(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                self.end(p, wait_s=5)


CHILDREN = Children()


def child_env() -> dict[str, str]:
    env = env_with(ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # CUDA index == NVML index
    return env


def cpu_seconds(pid: int) -> float | None:
    try:
        return sc.proc_cpu_seconds(Path(f"/proc/{pid}/stat").read_text(),
                                   os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def run_quiet(cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=child_env(),
                          cwd=ROOT)


# ------------------------------------------------------------------ nvidia-smi dmon


class Dmon:
    """`nvidia-smi dmon` at its finest interval (1 s), each line stamped with its arrival time."""

    def __init__(self, gpu: int, gpm: bool) -> None:
        self.gpu, self.gpm = gpu, gpm
        self.proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None

    def command(self, count: int | None = None) -> list[str]:
        cmd = ["nvidia-smi", "dmon", "-i", str(self.gpu), "-d", "1", "-s", "ut", "-o", "DT"]
        if self.gpm:
            cmd += ["--gpm-metrics", "2,20,21"]
        if count is not None:
            cmd += ["-c", str(count)]
        return cmd

    def start(self, path: Path) -> None:
        cmd = self.command()
        if shutil.which("stdbuf"):
            cmd = ["stdbuf", "-oL", *cmd]  # one line per second, not a 4 KiB burst
        self.proc = CHILDREN.start(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, bufsize=1)
        out = path.open("w")

        def pump(src: IO[str]) -> None:
            with out:
                for line in src:
                    out.write(f"{time.time():.3f}\t{line.rstrip()}\n")
                    out.flush()

        assert self.proc.stdout is not None
        self._thread = threading.Thread(target=pump, args=(self.proc.stdout,), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self.proc is not None:
            CHILDREN.end(self.proc, signal.SIGINT, wait_s=5)
        if self._thread is not None:
            self._thread.join(5)


def probe_dmon(gpu: int, try_gpm: bool = True) -> tuple[Dmon | None, dict[str, Any]]:
    """Try dmon with GPM metrics, then without; None when nvidia-smi dmon does not work."""
    info: dict[str, Any] = {}
    if not shutil.which("nvidia-smi"):
        info["error"] = "nvidia-smi not on PATH: no dmon comparison"
        return None, info
    for gpm in ((True, False) if try_gpm else (False,)):
        d = Dmon(gpu, gpm)
        try:
            r = subprocess.run(d.command(count=2), capture_output=True, text=True, timeout=20)
        except subprocess.TimeoutExpired:
            info[f"gpm={gpm}"] = "timed out"
            continue
        table = sc.parse_dmon(r.stdout)
        info[f"gpm={gpm}"] = {"rc": r.returncode, "columns": table.columns,
                              "rows": len(table.rows), "output": (r.stdout + r.stderr)[-600:]}
        if r.returncode == 0 and table.rows:
            info["gpm_metrics"] = gpm
            return d, info
    info["error"] = "nvidia-smi dmon gave no rows (see the probes): no dmon comparison"
    return None, info


# ------------------------------------------------------------------ one load generator run


class LoadRun:
    """One load generator run with (optionally) gapwatch and dmon beside it."""

    def __init__(self, args: argparse.Namespace, scenario: str, seconds: float, case: Path,
                 runs: Path, gapwatch: bool, dmon: Dmon | None) -> None:
        self.a, self.scenario, self.seconds = args, scenario, seconds
        self.case, self.runs, self.gapwatch, self.dmon = case, runs, gapwatch, dmon
        case.mkdir(parents=True, exist_ok=True)
        runs.mkdir(parents=True, exist_ok=True)
        self.f = {k: case / v for k, v in sc.CASE_FILES.items()}
        # A reused --work folder must not hand this run an old ready file, truth or recording.
        for stale in (*self.f.values(), runs / "ready", runs / "go"):
            stale.unlink(missing_ok=True)
        self.result: dict[str, Any] = {"scenario": scenario, "seconds": seconds,
                                       "gapwatch": gapwatch}

    def loadgen_cmd(self) -> list[str]:
        return [self.a.python, str(BENCH / "gpu_loadgen.py"), "--scenario", self.scenario,
                "--duration", f"{self.seconds:g}", "--gpu", str(self.a.gpu),
                "--stdout-log", str(self.f["stdout"]), "--stderr-log", str(self.f["stderr"]),
                "--truth", str(self.f["truth"]), "--ready-file", str(self.runs / "ready"),
                "--go-file", str(self.runs / "go"), *self.a.loadgen_arg]

    def gapwatch_cmd(self) -> list[str]:
        cmd = [self.a.python, "-m", "gapwatch", "record", "--source", self.a.gapwatch_source,
               *gpu_args(self.a), "--out", str(self.f["recording"]),
               "--log", str(self.f["stdout"]), "--log", str(self.f["stderr"]),
               "--from-start", "--quiet"]
        if self.a.period_ms:
            cmd += ["--period-ms", f"{self.a.period_ms:g}"]
        return cmd

    def run(self) -> dict[str, Any]:
        console = (self.runs / "loadgen.console.txt").open("w")
        lg = CHILDREN.start(self.loadgen_cmd(), stdout=console, stderr=subprocess.STDOUT,
                            env=child_env(), cwd=ROOT)
        gw: subprocess.Popen[Any] | None = None
        gw_err = None
        try:
            self._wait_ready(lg)
            if self.gapwatch:
                gw_err = (self.runs / "gapwatch.stderr.txt").open("w")
                t_spawn = time.monotonic()
                gw = CHILDREN.start(self.gapwatch_cmd(), stdout=gw_err, stderr=subprocess.STDOUT,
                                    env=child_env(), cwd=ROOT)
                if self.dmon is not None:
                    self.dmon.start(self.f["dmon"])
                self._wait_sampling(gw)
                time.sleep(self.a.warmup_s)  # gapwatch sampling before the first partition
                if gw.poll() is not None:
                    raise StepError(f"gapwatch record exited early (rc {gw.returncode}):\n"
                                    f"{tail(self.runs / 'gapwatch.stderr.txt')}")
                cpu0, t0 = cpu_seconds(gw.pid), time.monotonic()
            (self.runs / "go").write_text("go\n")
            try:
                lg.wait(self.seconds + 60)
            except subprocess.TimeoutExpired:
                CHILDREN.end(lg)
                raise StepError(f"load generator still running {self.seconds + 60:.0f} s after "
                                f"go; stopped it:\n{tail(self.runs / 'loadgen.console.txt')}"
                                ) from None
            self.result["loadgen_rc"] = lg.returncode
            if lg.returncode != 0 or not self.f["truth"].exists():
                raise StepError(f"load generator failed (rc {lg.returncode}):\n"
                                f"{tail(self.runs / 'loadgen.console.txt')}")
            if gw is not None:
                time.sleep(self.a.tail_s)  # let the trailing idle be seen (not a gap)
                cpu1, t1 = cpu_seconds(gw.pid), time.monotonic()
                rc = CHILDREN.end(gw, signal.SIGTERM, wait_s=30)
                self.result["gapwatch_rc"] = rc
                if rc != 0:
                    raise StepError(f"gapwatch record ended with rc {rc}:\n"
                                    f"{tail(self.runs / 'gapwatch.stderr.txt')}")
                self.result["gapwatch_cpu"] = {
                    "steady_cpu_s": None if cpu0 is None or cpu1 is None else cpu1 - cpu0,
                    "steady_wall_s": t1 - t0,
                    "steady_pct_of_core_per_gpu": (None if cpu0 is None or cpu1 is None
                                                   else 100 * (cpu1 - cpu0) / (t1 - t0)),
                    "lifetime_cpu_s": cpu1, "lifetime_wall_s": t1 - t_spawn,
                    "gpus_watched": 1,
                }
        finally:
            if self.dmon is not None and self.gapwatch:
                self.dmon.stop()
            for p in (gw, lg):
                if p is not None and p.poll() is None:
                    CHILDREN.end(p)
            console.close()
            if gw_err is not None:
                gw_err.close()
        truth = json.loads(self.f["truth"].read_text())
        for k in ("partitions_completed", "throughput_pps", "busy_fraction", "truth_gaps",
                  "median_gap_s", "compute_ms_median", "h2d_ms_median", "h2d_gb_per_s_median",
                  "stopped_by", "device_name", "matmul_iters"):
            self.result[k] = truth.get(k)
        self.truth = truth
        return self.result

    def _wait_sampling(self, gw: subprocess.Popen[Any], timeout_s: float = 20.0) -> None:
        """Until the recording grows past its header: records are flushed about once a second,
        so growth means the sampler is running (Python start-up and NVML init take a while)."""
        rec = self.f["recording"]
        deadline = time.monotonic() + timeout_s
        first: int | None = None
        while time.monotonic() < deadline:
            if gw.poll() is not None:
                raise StepError(f"gapwatch record exited at start (rc {gw.returncode}):\n"
                                f"{tail(self.runs / 'gapwatch.stderr.txt')}")
            size = rec.stat().st_size if rec.exists() else 0
            if size and first is None:
                first = size
            elif first is not None and size > first:
                return
            time.sleep(0.1)
        say(f"NOTE: {rec.name} did not grow within {timeout_s:g} s of starting gapwatch; going on")

    def _wait_ready(self, lg: subprocess.Popen[Any]) -> None:
        deadline = time.monotonic() + self.a.ready_timeout_s
        while not (self.runs / "ready").exists():
            if lg.poll() is not None:
                raise StepError(f"load generator exited during setup (rc {lg.returncode}):\n"
                                f"{tail(self.runs / 'loadgen.console.txt')}")
            if time.monotonic() > deadline:
                raise StepError(f"load generator not ready after {self.a.ready_timeout_s:g} s:\n"
                                f"{tail(self.runs / 'loadgen.console.txt')}")
            time.sleep(0.1)


def report_json(a: argparse.Namespace, case: Path, runs: Path, facts: dict[str, Any]
                ) -> tuple[dict[str, Any], list[str]]:
    """`python3 -m gapwatch report REC [--log ...] --json`, as a user would run it."""
    logs = [str(p) for p in sc.report_log_paths(case, facts)]
    cmd = [a.python, "-m", "gapwatch", "report", str(case / sc.CASE_FILES["recording"])]
    for p in logs:
        cmd += ["--log", p]
    cmd.append("--json")
    r = run_quiet(cmd, timeout=120)
    (runs / "report.json").write_text(r.stdout)
    if r.returncode != 0:
        raise StepError(f"gapwatch report failed (rc {r.returncode}): {r.stderr[-2000:]}")
    try:
        return json.loads(r.stdout), cmd
    except json.JSONDecodeError as exc:
        raise StepError(f"gapwatch report --json printed no JSON ({exc}): {r.stdout[:500]}"
                        ) from None


# ------------------------------------------------------------------ steps


def scenario_step(a: argparse.Namespace, name: str, work: Path, dmon: Dmon | None,
                  machine: dict[str, Any]) -> dict[str, Any]:
    case, runs = work / "cases" / name, work / "runs" / name
    lr = LoadRun(a, name, a.seconds, case, runs, gapwatch=True, dmon=dmon)
    res = lr.run()
    facts = sc.recording_facts(case / sc.CASE_FILES["recording"])
    report, cmd = report_json(a, case, runs, facts)
    res["score"] = sc.score_case(report, lr.truth, name)
    res["recording"] = {k: v for k, v in facts.items() if k != "states_live"}
    res["breakdown_live"] = facts["breakdown_live"]
    probe_sources = machine.get("gapwatch_signal_sources") or []
    if any("sm=gpm" in x for x in probe_sources) and not any(
            "sm=gpm" in x for x in facts["signal_sources"]):
        say(f"WARNING: gapwatch read GPM in the preflight probe but {facts['signal_sources']} "
            f"during {name} (dmon's GPM metrics interfering?); try --dmon-no-gpm or --no-dmon")
        res["warning"] = "gapwatch lost GPM during the scenario"
    for n in facts["notices"]:
        say(f"  gapwatch notice: {n}")
    res["report_cmd"] = " ".join(cmd)
    res["recording_bytes"] = (case / sc.CASE_FILES["recording"]).stat().st_size
    if res["recording_bytes"] > 1_000_000:
        say(f"NOTE: {name} recording is {res['recording_bytes'] / 1e6:.1f} MB (> 1 MB for "
            f"tests/data); consider a shorter --seconds")
    if dmon is not None and (case / sc.CASE_FILES["dmon"]).exists():
        table = sc.parse_dmon((case / sc.CASE_FILES["dmon"]).read_text(errors="replace"))
        res["dmon"] = sc.dmon_vs_truth(table, lr.truth, a.gpu)
    meta = {"scenario": name, "expected_kind": sc.EXPECTED_KIND[name], "seconds": a.seconds,
            "gpu": a.gpu, "machine": machine, "loadgen_cmd": " ".join(lr.loadgen_cmd()),
            "gapwatch_cmd": " ".join(lr.gapwatch_cmd()), "report_cmd": res["report_cmd"],
            "captured": {k: res["score"][k] for k in (
                "truth_gaps", "detected", "recall", "precision", "kind_accuracy",
                "median_edge_error_ms", "breakdown_in_report")},
            "breakdown_live": res["breakdown_live"],
            "gapwatch_cpu": res.get("gapwatch_cpu"), "lateness_ms": facts["lateness_ms"]}
    (case / sc.CASE_FILES["meta"]).write_text(json.dumps(meta, indent=1) + "\n")
    return res


def overhead_step(a: argparse.Namespace, i: int, on: bool, work: Path) -> dict[str, Any]:
    tag = f"overhead-{i}-{'on' if on else 'off'}"
    lr = LoadRun(a, "chained", a.overhead_seconds, work / "runs" / tag / "case",
                 work / "runs" / tag, gapwatch=on, dmon=None)
    res = lr.run()
    if on:
        res["lateness_ms"] = sc.recording_facts(lr.f["recording"])["lateness_ms"]
    return res


def estimate_s(a: argparse.Namespace, kind: str) -> float:
    # argparse's Namespace is untyped: its fields are read as floats here.
    warmup, tail = float(a.warmup_s), float(a.tail_s)
    if kind == "scenario":
        return SETUP_S + GAPWATCH_START_S + warmup + float(a.seconds) + DRAIN_S + tail + REPORT_S
    if kind == "on":
        return SETUP_S + GAPWATCH_START_S + warmup + float(a.overhead_seconds) + DRAIN_S + tail
    return SETUP_S + float(a.overhead_seconds) + DRAIN_S


# ------------------------------------------------------------------ preflight and machine


def preflight(a: argparse.Namespace) -> dict[str, Any]:
    """Check every tool the run needs; raise StepError naming what is missing."""
    m: dict[str, Any] = {"date_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                         "host": platform.node(), "kernel": platform.release(),
                         "cpus": os.cpu_count(), "python": platform.python_version(),
                         "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                m["mem_total_gib"] = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    r = run_quiet([a.python, "-c", "import gapwatch, msgspec, pydantic, pynvml; "
                   "print(gapwatch.__version__)"], 60)
    if r.returncode != 0:
        raise StepError("gapwatch or one of its dependencies is not importable by "
                        f"{a.python} (PYTHONPATH={ROOT}):\n{r.stderr[-1500:]}\nInstall the "
                        "missing packages (pip install -e ., or carry wheels of pydantic, "
                        "pydantic-core, annotated-types, typing-inspection, msgspec) and run "
                        "again.")
    m["gapwatch_version"] = r.stdout.strip()
    if not a.smoke:
        r = run_quiet([a.python, "-c", "import torch,sys; ok=torch.cuda.is_available(); "
                       f"print(torch.__version__, torch.cuda.get_device_name({a.gpu}) if ok "
                       "else 'NO-CUDA'); sys.exit(0 if ok else 1)"], 120)
        if r.returncode != 0:
            raise StepError(f"torch with CUDA is not usable by {a.python}:\n"
                            f"{(r.stdout + r.stderr)[-1500:]}")
        m["torch"] = r.stdout.strip()
    if shutil.which("nvidia-smi"):
        q = subprocess.run(["nvidia-smi", "-i", str(a.gpu), "--query-gpu=name,driver_version,"
                            "pci.bus_id,pcie.link.gen.max,pcie.link.width.max",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        m["nvidia_smi"] = q.stdout.strip() or q.stderr.strip()
    with tempfile.TemporaryDirectory() as tmp:
        rec = Path(tmp) / "probe.jsonl"
        r = run_quiet([a.python, "-m", "gapwatch", "record", "--source", a.gapwatch_source,
                       *gpu_args(a), "--duration", "1.5", "--out", str(rec), "--quiet"],
                      60)
        if r.returncode != 0 or not rec.exists():
            raise StepError(f"`gapwatch record --source {a.gapwatch_source}` does not run here (rc "
                            f"{r.returncode}):\n{r.stderr[-1500:]}")
        facts = sc.recording_facts(rec)
        if not facts["gpu_samples"]:
            raise StepError(f"gapwatch recorded no GPU sample in 1.5 s: {facts}")
        m["gapwatch_signal_sources"] = facts["signal_sources"]
    # A copied working tree can carry a stale .git (the files are newer than its HEAD): the
    # person running it may name the commit the files are at.
    m["git_commit"] = os.environ.get("GAPWATCH_GIT_COMMIT") or None
    if m["git_commit"] is None:
        try:
            g = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                               capture_output=True, text=True, timeout=10)
            m["git_commit"] = g.stdout.strip() or None
        except (OSError, subprocess.TimeoutExpired):
            m["git_commit"] = None
    return m


# ------------------------------------------------------------------ output


def write_outputs(a: argparse.Namespace, work: Path, summary: dict[str, Any],
                  markdown: Callable[[dict[str, Any]], str] | None = None) -> None:
    """summary.json (atomically) and summary.md (`markdown`, default this run's tables)."""
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=1, default=str) + "\n")
    os.replace(tmp, out / "summary.json")
    (out / "summary.md").write_text((markdown or summary_markdown)(summary))


def write_bundles(a: argparse.Namespace, work: Path, summary: dict[str, Any]) -> None:
    out = Path(a.out)
    cases = work / "cases"
    if cases.exists():
        manifest = {"machine": summary.get("machine"), "scenarios": {
            k: v.get("score", {}).get("summary") for k, v in summary["scenarios"].items()}}
        (cases / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, default=str) + "\n")
        with tarfile.open(out / "h200-e2e.tar.gz", "w:gz") as tar:
            tar.add(cases, arcname="h200-e2e")
    with tarfile.open(out / "e2e-details.tar.gz", "w:gz") as tar:
        if (work / "runs").exists():
            tar.add(work / "runs", arcname="runs")
        tar.add(out / "summary.json", arcname="summary.json")


def summary_markdown(s: dict[str, Any]) -> str:
    m = s.get("machine") or {}
    lines = [f"# gapwatch on a real GPU ({m.get('date_utc', '?')})", "",
             f"- machine: {m.get('nvidia_smi', '?')}; {m.get('cpus')} CPUs, "
             f"{m.get('mem_total_gib')} GiB; kernel {m.get('kernel')}; torch {m.get('torch')}",
             f"- gapwatch {m.get('gapwatch_version')} (commit {m.get('git_commit')}); signals "
             f"{m.get('gapwatch_signal_sources')}",
             f"- command: `{m.get('command')}`", "",
             "| scenario | truth gaps | detected | recall | precision | kind acc. | median edge "
             "error | BREAKDOWN (report / live) | lateness p50/p99/max ms | CPU % of a core per "
             "GPU |", "|---|---|---|---|---|---|---|---|---|---|"]

    def pct(v: Any) -> str:
        return "n/a" if v is None else f"{v * 100:.0f} %"

    def num(v: Any, f: str = ".0f", unit: str = "") -> str:
        return "n/a" if v is None else format(v, f) + unit

    for name, r in s.get("scenarios", {}).items():
        if "score" not in r:
            lines.append(f"| {name} | FAILED: {r.get('error', '?')[:80]} |||||||||")
            continue
        c, lat = r["score"], r["recording"]["lateness_ms"]
        cpu = (r.get("gapwatch_cpu") or {}).get("steady_pct_of_core_per_gpu")
        lines.append(
            f"| {name} | {c['truth_gaps']} | {c['detected']} | {pct(c['recall'])} | "
            f"{pct(c['precision'])} | {pct(c['kind_accuracy'])} | "
            f"{num(c['median_edge_error_ms'], '.0f', ' ms')} | "
            f"{'yes' if c['breakdown_in_report'] else 'no'} / "
            f"{'yes' if r['breakdown_live'] else 'no'} | {num(lat['p50'], '.2f')} / "
            f"{num(lat['p99'], '.2f')} / {num(lat['max'], '.1f')} | {num(cpu, '.2f')} |")
    lines += ["", "## nvidia-smi dmon during the same truth gaps", "",
              "| scenario | truth gaps | visible in dmon (sm < 10 %) | visible in dmon GPM SM | "
              "dmon sm mean in gap rows | dmon rxpci MB/s in gap rows | dmon sm mean / truth "
              "busy | gapwatch recall |", "|---|---|---|---|---|---|---|---|"]
    for name, r in s.get("scenarios", {}).items():
        d = r.get("dmon")
        if not d:
            continue
        lines.append(
            f"| {name} | {d['truth_gaps']} | {pct(d['fraction_visible_sm_lt10'])} | "
            f"{pct(d['fraction_visible_gpm_sm_lt10'])} | "
            f"{num(d['sm_mean_rows_overlapping_gaps'])} | "
            f"{num(d['rxpci_mb_s_mean_rows_overlapping_gaps'])} | "
            f"{num(d['sm_mean_in_run'])} % / {pct(d['truth_busy_fraction'])} | "
            f"{pct(r['score']['recall'])} |")
    o = s.get("overhead")
    if o:
        lines += ["", "## Effect on the workload (chained, alternating runs)", "",
                  f"- without gapwatch: {[round(x, 4) for x in o['without_gapwatch_pps']]} "
                  f"partitions/s (mean {num(o['mean_without_pps'], '.4f')}, spread "
                  f"{num(o['without_spread_pct'], '.2f')} %)",
                  f"- with gapwatch: {[round(x, 4) for x in o['with_gapwatch_pps']]} "
                  f"partitions/s (mean {num(o['mean_with_pps'], '.4f')})",
                  f"- slowdown: {num(o['slowdown_pct'], '.2f')} % (goal <= 1 %)"]
    if s.get("failures"):
        lines += ["", "## Failures", ""] + [f"- {f}" for f in s["failures"]]
    if s.get("skipped"):
        lines += ["", "## Skipped (deadline)", ""] + [f"- {x}" for x in s["skipped"]]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ main


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for summary and bundles")
    ap.add_argument("--work", default=None, help="working folder (default: a new temp folder)")
    ap.add_argument("--seconds", type=float, default=35.0, help="load per scenario (>= 30)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--overhead-runs", type=int, default=3, help="runs each with and without")
    ap.add_argument("--overhead-seconds", type=float, default=20.0)
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--period-ms", type=float, default=None, help="gapwatch sampling period")
    ap.add_argument("--warmup-s", type=float, default=2.0,
                    help="gapwatch runs this long before the first partition")
    ap.add_argument("--tail-s", type=float, default=1.5,
                    help="gapwatch runs this long after the load ends")
    ap.add_argument("--ready-timeout-s", type=float, default=180.0)
    ap.add_argument("--deadline-s", type=float, default=570.0,
                    help="skip steps that would end later than this (whole run)")
    ap.add_argument("--no-dmon", action="store_true")
    ap.add_argument("--dmon-no-gpm", action="store_true",
                    help="run dmon without --gpm-metrics (if it disturbs gapwatch's GPM reads)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--loadgen-arg", action="append", default=[],
                    help="extra flag for every load generator run (repeatable), e.g. --hogs=8")
    ap.add_argument("--gapwatch-source", default="nvml", help=argparse.SUPPRESS)
    ap.add_argument("--smoke", action="store_true",
                    help="no GPU: fake load generator, simulated gapwatch source, no dmon; "
                         "checks the plumbing only (the scores mean nothing)")
    return ap


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # unwinds into main's finally, which ends every child process


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    if a.smoke:
        a.gapwatch_source, a.no_dmon = "sim:chained", True
        a.loadgen_arg = ["--fake", "--compute-s=0.2", *a.loadgen_arg]
    names = [n for n in a.scenarios.split(",") if n]
    bad = [n for n in names if n not in SCENARIOS]
    if bad:
        print(f"gpu_e2e: unknown scenario(s) {bad}; choose from {SCENARIOS}", file=sys.stderr)
        return 2
    t_start = time.monotonic()
    work = Path(a.work or tempfile.mkdtemp(prefix="gapwatch-e2e-"))
    work.mkdir(parents=True, exist_ok=True)
    plan = [("scenario", n) for n in names]
    for i in range(a.overhead_runs):
        # Alternate, and flip the order every pair so that a slow drift cancels out.
        pair = [False, True] if i % 2 == 0 else [True, False]
        plan += [("on" if on else "off", str(i)) for on in pair]
    total = 30 + sum(estimate_s(a, k) for k, _ in plan)
    say(f"plan: {len(names)} scenarios x {a.seconds:g} s, {a.overhead_runs} x 2 overhead runs x "
        f"{a.overhead_seconds:g} s; estimated total {total:.0f} s ({total / 60:.1f} min); "
        f"deadline {a.deadline_s:g} s; work {work}")
    signal.signal(signal.SIGTERM, _interrupt)
    summary: dict[str, Any] = {"plan_estimate_s": total, "work": str(work), "scenarios": {},
                               "failures": [], "skipped": []}
    try:
        try:
            summary["machine"] = preflight(a)
        except (StepError, subprocess.TimeoutExpired) as exc:
            say(f"PREFLIGHT FAILED: {exc}")
            summary["failures"].append(f"preflight: {exc}")
            write_outputs(a, work, summary)
            return 2
        say(f"machine: {summary['machine']}")
        dmon, summary["dmon_probe"] = (None, {"disabled": True}) if a.no_dmon else \
            probe_dmon(a.gpu, not a.dmon_no_gpm)
        say(f"dmon: {'off' if dmon is None else 'GPM metrics' if dmon.gpm else 'no GPM'} "
            f"({summary['dmon_probe'].get('error', 'ok')})")
        overhead_runs: list[dict[str, Any]] = []
        for kind, name in plan:
            label = f"scenario {name}" if kind == "scenario" else f"overhead run {name} ({kind})"
            elapsed = time.monotonic() - t_start
            if elapsed + estimate_s(a, kind) > a.deadline_s:
                say(f"SKIPPED {label}: {elapsed:.0f} s elapsed, it would end past the "
                    f"{a.deadline_s:g} s deadline")
                summary["skipped"].append(label)
                continue
            say(f"{label}: start")
            try:
                if kind == "scenario":
                    res = scenario_step(a, name, work, dmon, summary["machine"])
                    summary["scenarios"][name] = res
                    say(sc.format_row({"scenario": name, "score": res["score"],
                                       "recording": res["recording"]}))
                    if res.get("dmon"):
                        d = res["dmon"]
                        say(f"  dmon: {d['gaps_visible_sm_lt10']}/{d['truth_gaps']} truth gaps "
                            f"visible as sm<10%, sm mean in gap rows "
                            f"{d['sm_mean_rows_overlapping_gaps']}, timing {d['timing']}")
                else:
                    res = overhead_step(a, int(name), kind == "on", work)
                    overhead_runs.append(res)
                    summary["overhead"] = sc.overhead_summary(overhead_runs)
                    say(f"  {res['throughput_pps']} partitions/s "
                        f"({res['partitions_completed']} partitions)")
            except StepError as exc:
                say(f"STEP FAILED: {label}: {exc}")
                summary["failures"].append(f"{label}: {exc}")
                if kind == "scenario":
                    summary["scenarios"][name] = {"error": str(exc)}
            except Exception as exc:  # noqa: BLE001 - keep going, report loudly
                tb = traceback.format_exc()
                say(f"STEP FAILED: {label}: unexpected error:\n{tb}")
                summary["failures"].append(f"{label}: {exc!r}")
            write_outputs(a, work, summary)
        summary["elapsed_s"] = time.monotonic() - t_start
        write_outputs(a, work, summary)
        write_bundles(a, work, summary)
        print(summary_markdown(summary), flush=True)
        say(f"done in {summary['elapsed_s']:.0f} s; outputs in {a.out}")
        return 1 if summary["failures"] else 0
    except KeyboardInterrupt:
        say("interrupted: stopping every child process")
        summary["failures"].append("interrupted")
        write_outputs(a, work, summary)
        return 1
    finally:
        CHILDREN.end_all()


if __name__ == "__main__":
    sys.exit(main())
