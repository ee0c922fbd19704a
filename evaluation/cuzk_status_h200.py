"""GPU proof of issue 14: gapwatch reads the prover's own `/status` beside NVML, and what that
polling costs the prover.

Who runs it: the lead, on the H200 box, from the repository root, in one go (under 6 minutes):

    PYTHONPATH=. python3 bench/cuzk_status_h200.py --out "$OUT"

1. Host stall, scored: `bench/gpu_loadgen.py --scenario host-stall --status-listen
   127.0.0.1:PORT` (its pipeline served as cuzk's `GET /status`), beside it
   `gapwatch record --source nvml --cuzk-status http://127.0.0.1:PORT/status --log STDOUT --log
   STDERR`; then `gapwatch report --json`. Scored: the gaps found against the load's truth
   (`gpu_e2e_score.score_case`), and how many of them the prover's own status names "the GPU
   waits on synthesis" (`prover_cause == waits_on_synthesis`); goal: at least 90 % of at
   least 3 gaps.
2. The poller's cost on the prover: the chained preset (the busiest hot path) three times,
   gapwatch recording in each, polling off, every 1 s and every 0.1 s. The load generator takes
   one tracker lock on its GPU workers' hot path (pickup: status, fail check, mark busy; at
   completion) and in every snapshot, as cuzk does, and times each hot-path wait and each
   snapshot build in µs (truth `status`). Reported: those waits, the pickup overhead, the
   snapshot build, and throughput, per polling mode, against "off".

What it writes to `--out` (few files: the device returns at most 8):
    summary.json               every figure, the machine, the commands
    summary.md                 the same as tables, for docs/benchmarks.md
    cuzk-status-case.tar.gz    the host-stall case (recording with its prover records, logs,
                               truth, meta): `tar xzf ... -C tests/data` for a regression test
    cuzk-status-details.tar.gz reports, consoles, gapwatch stderr of every run
`--smoke` runs the plumbing without a GPU (fake load, simulated gapwatch source): the scores
mean nothing there. Exit codes: 0 every step ran (read the goals), 1 a step failed, 2 preflight.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import tarfile
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evaluation import gpu_e2e as e2e  # noqa: E402 - the checkout's root, on the path above
from evaluation import gpu_e2e_score as sc  # noqa: E402 - the checkout's root, on the path above

#: Polling modes of the cost runs: label -> period (None: gapwatch records without polling).
COST_MODES: dict[str, float | None] = {"off": None, "1s": 1.0, "0.1s": 0.1}
#: Issue 14's goal for the host-stall gaps.
GOAL_NAMED_FRACTION = 0.9
GOAL_MIN_GAPS = 3
WAITS = "waits_on_synthesis"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class StatusLoadRun(e2e.LoadRun):
    """One load generator run serving its `/status`, gapwatch polling it every `period_s`
    (None: not polling)."""

    def __init__(self, args: argparse.Namespace, scenario: str, seconds: float, case: Path,
                 runs: Path, period_s: float | None) -> None:
        super().__init__(args, scenario, seconds, case, runs, gapwatch=True, dmon=None)
        self.port = free_port()
        self.period_s = period_s
        self.url = f"http://127.0.0.1:{self.port}/status"
        self.config = runs / "gapwatch.toml"
        # Timeout below the fastest period, so that a slow answer never piles up polls.
        timeout = 0.5 if period_s is None else min(0.5, period_s * 0.8)
        self.config.write_text(f"[cuzk]\nstatus_period_s = {period_s or 1.0}\n"
                               f"status_timeout_s = {timeout}\n")

    def loadgen_cmd(self) -> list[str]:
        return [*super().loadgen_cmd(), "--status-listen", f"127.0.0.1:{self.port}"]

    def gapwatch_cmd(self) -> list[str]:
        cmd = [*super().gapwatch_cmd(), "--config", str(self.config)]
        if self.period_s is not None:
            cmd += ["--cuzk-status", self.url]
        return cmd


# ------------------------------------------------------------------ scoring (pure)


def score_status_case(report: dict[str, Any], truth: dict[str, Any]) -> dict[str, Any]:
    """The host-stall case: detection against truth, and the gaps the prover's status names."""
    gaps = report.get("gaps", [])
    causes: dict[str, int] = {}
    for g in gaps:
        key = g.get("prover_cause") or ("no snapshot" if not g.get("prover_states") else "none")
        causes[key] = causes.get(key, 0) + 1
    named = causes.get(WAITS, 0)
    fraction = named / len(gaps) if gaps else None
    return {
        "detection": sc.score_case(report, truth, "host-stall"),
        "gaps": len(gaps),
        "named_waits_on_synthesis": named,
        "named_fraction": fraction,
        "causes": causes,
        "hints": sorted({g.get("hint", "") for g in gaps})[:3],
        "goal": {"named_fraction": GOAL_NAMED_FRACTION, "min_gaps": GOAL_MIN_GAPS},
        "goal_met": fraction is not None and len(gaps) >= GOAL_MIN_GAPS
        and fraction >= GOAL_NAMED_FRACTION,
    }


def cost_summary(runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per polling mode: the prover's hot-path lock waits, pickup overhead, snapshot builds,
    throughput, and the change against polling off."""
    out: dict[str, Any] = {"modes": {}}
    base = runs.get("off")
    for mode, r in runs.items():
        st = r.get("status") or {}
        row = {
            "poll_period_s": COST_MODES.get(mode),
            "throughput_pps": r.get("throughput_pps"),
            "partitions": r.get("partitions_completed"),
            "hot_path_lock_wait_us": st.get("hot_path_lock_wait_us"),
            "pickup_overhead_us": st.get("pickup_overhead_us"),
            "snapshots": st.get("snapshots"),
            "snapshot_build_us": st.get("snapshot_build_us"),
            "snapshot_lock_wait_us": st.get("snapshot_lock_wait_us"),
            "status_requests": st.get("requests"),
            "snapshot_lock_share": lock_share(st, r.get("seconds")),
            "gapwatch_cpu_pct": (r.get("gapwatch_cpu") or {}).get("steady_pct_of_core_per_gpu"),
        }
        if base is not None and mode != "off":
            row["vs_off"] = _versus(row, out["modes"].get("off") or _row_of(base))
        out["modes"][mode] = row
    return out


def lock_share(status: dict[str, Any], seconds: float | None) -> float | None:
    """Share of the run's time the tracker lock was held building snapshots: the chance that a
    hot-path acquisition meets one (the expected wait is that share x half a build)."""
    build = status.get("snapshot_build_us") or {}
    if not seconds or build.get("mean") is None:
        return 0.0 if status.get("snapshots") == 0 else None
    return float(status["snapshots"] * build["mean"] / (seconds * 1e6))


def _vs(v: dict[str, Any] | None) -> str:
    if not v:
        return "-"

    def signed(x: float | None, unit: str) -> str:
        return "n/a" if x is None else f"{x:+.2f}{unit}"

    return (f"wait p99 {signed(v.get('hot_path_wait_p99_us_delta'), ' µs')}, max "
            f"{signed(v.get('hot_path_wait_max_us_delta'), ' µs')}; throughput "
            f"{signed(v.get('throughput_change_pct'), ' %')}")


def _row_of(r: dict[str, Any]) -> dict[str, Any]:
    st = r.get("status") or {}
    return {"throughput_pps": r.get("throughput_pps"),
            "hot_path_lock_wait_us": st.get("hot_path_lock_wait_us"),
            "pickup_overhead_us": st.get("pickup_overhead_us")}


def _versus(row: dict[str, Any], off: dict[str, Any]) -> dict[str, float | None]:
    def delta(key: str, q: str) -> float | None:
        a, b = (row.get(key) or {}).get(q), (off.get(key) or {}).get(q)
        return None if a is None or b is None else round(a - b, 2)

    t, t0 = row.get("throughput_pps"), off.get("throughput_pps")
    return {"hot_path_wait_p99_us_delta": delta("hot_path_lock_wait_us", "p99"),
            "hot_path_wait_max_us_delta": delta("hot_path_lock_wait_us", "max"),
            "pickup_overhead_p99_us_delta": delta("pickup_overhead_us", "p99"),
            "throughput_change_pct": (None if not t or not t0 else round((t / t0 - 1) * 100, 2))}


def summary_markdown(s: dict[str, Any]) -> str:
    m = s.get("machine") or {}

    def num(v: Any, f: str = ".1f") -> str:
        return "n/a" if v is None else format(v, f)

    lines = [f"# gapwatch reads cuzk's /status on a real GPU ({m.get('date_utc', '?')})", "",
             f"- machine: {m.get('nvidia_smi', '?')}; {m.get('cpus')} CPUs; torch "
             f"{m.get('torch')}; gapwatch {m.get('gapwatch_version')} (commit "
             f"{m.get('git_commit')})", f"- command: `{m.get('command')}`", ""]
    hs = s.get("host_stall")
    if hs and "score" in hs:
        c = hs["score"]
        d = c["detection"]
        lines += ["## Host stall: the gaps the prover's status names", "",
                  "| truth gaps | detected | recall | precision | kind acc. | gaps named "
                  "'waits on synthesis' | causes | goal |", "|---|---|---|---|---|---|---|---|",
                  f"| {d['truth_gaps']} | {d['detected']} | {num(d['recall'], '.0%')} | "
                  f"{num(d['precision'], '.0%')} | {num(d['kind_accuracy'], '.0%')} | "
                  f"{c['named_waits_on_synthesis']}/{c['gaps']} "
                  f"({num(c['named_fraction'], '.0%')}) | {c['causes']} | "
                  f"{'met' if c['goal_met'] else 'MISSED'} |", ""]
    elif hs:
        lines += [f"## Host stall: FAILED: {hs.get('error', '?')[:200]}", ""]
    cost = s.get("cost")
    if cost:
        lines += ["## The poller's cost on the prover (chained, one run per mode)", "",
                  "| polling | partitions/s | hot-path lock wait µs p50 / p99 / max | pickup "
                  "overhead µs p50 / p99 | snapshots | snapshot build µs p50 / p99 / max | lock "
                  "held by snapshots | gapwatch CPU % | vs off |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for mode, r in cost["modes"].items():
            w, o, b = (r.get("hot_path_lock_wait_us") or {}, r.get("pickup_overhead_us") or {},
                       r.get("snapshot_build_us") or {})
            lines.append(
                f"| {mode} | {num(r['throughput_pps'], '.3f')} | {num(w.get('p50'))} / "
                f"{num(w.get('p99'))} / {num(w.get('max'))} | {num(o.get('p50'))} / "
                f"{num(o.get('p99'))} | {r.get('snapshots')} | {num(b.get('p50'))} / "
                f"{num(b.get('p99'))} / {num(b.get('max'))} | "
                f"{num(r.get('snapshot_lock_share'), '.4%')} | "
                f"{num(r.get('gapwatch_cpu_pct'), '.2f')} | {_vs(r.get('vs_off'))} |")
    for key in ("failures", "skipped"):
        if s.get(key):
            lines += ["", f"## {key.capitalize()}", ""] + [f"- {x}" for x in s[key]]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ steps


def host_stall_step(a: argparse.Namespace, work: Path, machine: dict[str, Any]) -> dict[str, Any]:
    case, runs = work / "cases" / "host-stall-status", work / "runs" / "host-stall-status"
    lr = StatusLoadRun(a, "host-stall", a.seconds, case, runs, period_s=a.poll_period_s)
    res = lr.run()
    facts = sc.recording_facts(case / sc.CASE_FILES["recording"])
    report, cmd = e2e.report_json(a, case, runs, facts)
    res["score"] = score_status_case(report, lr.truth)
    res["status"] = lr.truth.get("status")
    res["recording"] = {k: v for k, v in facts.items() if k != "states_live"}
    res["report_cmd"] = " ".join(cmd)
    meta = {"scenario": "host-stall", "expected_kind": "host_stall",
            "expected_prover_cause": WAITS, "seconds": a.seconds, "gpu": a.gpu,
            "machine": machine, "loadgen_cmd": " ".join(lr.loadgen_cmd()),
            "gapwatch_cmd": " ".join(lr.gapwatch_cmd()), "report_cmd": res["report_cmd"],
            "captured": {k: res["score"][k] for k in ("gaps", "named_waits_on_synthesis",
                                                      "named_fraction", "causes")}}
    (case / sc.CASE_FILES["meta"]).write_text(json.dumps(meta, indent=1) + "\n")
    return res


def cost_step(a: argparse.Namespace, mode: str, work: Path) -> dict[str, Any]:
    runs = work / "runs" / f"cost-{mode}"
    lr = StatusLoadRun(a, "chained", a.cost_seconds, runs / "case", runs, COST_MODES[mode])
    res = lr.run()
    res["status"] = lr.truth.get("status")
    res["lateness_ms"] = sc.recording_facts(lr.f["recording"])["lateness_ms"]
    return res


def estimate_s(a: argparse.Namespace, kind: str) -> float:
    seconds = a.seconds if kind == "host-stall" else a.cost_seconds
    extra = e2e.REPORT_S if kind == "host-stall" else 0.0
    return float(e2e.SETUP_S + e2e.GAPWATCH_START_S + a.warmup_s + seconds + e2e.DRAIN_S
                 + a.tail_s + extra)


def write_outputs(a: argparse.Namespace, summary: dict[str, Any]) -> None:
    e2e.write_outputs(a, Path(a.out), summary, summary_markdown)


def write_bundles(a: argparse.Namespace, work: Path) -> None:
    out = Path(a.out)
    if (work / "cases").exists():
        with tarfile.open(out / "cuzk-status-case.tar.gz", "w:gz") as tar:
            tar.add(work / "cases", arcname="h200-cuzk-status")
    with tarfile.open(out / "cuzk-status-details.tar.gz", "w:gz") as tar:
        if (work / "runs").exists():
            tar.add(work / "runs", arcname="runs")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for the summary and bundles")
    ap.add_argument("--work", default=None, help="working folder (default: a new temp folder)")
    ap.add_argument("--seconds", type=float, default=35.0, help="host-stall load seconds")
    ap.add_argument("--cost-seconds", type=float, default=20.0, help="load seconds per cost run")
    ap.add_argument("--cost-modes", default=",".join(COST_MODES))
    ap.add_argument("--poll-period-s", type=float, default=1.0,
                    help="gapwatch's poll period in the host-stall run")
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--period-ms", type=float, default=None, help="gapwatch sampling period")
    ap.add_argument("--warmup-s", type=float, default=2.0)
    ap.add_argument("--tail-s", type=float, default=1.5)
    ap.add_argument("--ready-timeout-s", type=float, default=180.0)
    ap.add_argument("--deadline-s", type=float, default=340.0,
                    help="skip steps that would end later than this (whole run)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--loadgen-arg", action="append", default=[])
    ap.add_argument("--gapwatch-source", default="nvml", help=argparse.SUPPRESS)
    ap.add_argument("--smoke", action="store_true",
                    help="no GPU: fake load generator, simulated gapwatch source (plumbing only)")
    return ap


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    if a.smoke:
        # The simulated host stall's gaps meet the fake load's real /status: plumbing only.
        a.gapwatch_source = "sim:host-stall"
        a.loadgen_arg = ["--fake", "--compute-s=0.2", "--synth-delay-s=0.4", *a.loadgen_arg]
    modes = [m for m in a.cost_modes.split(",") if m]
    if any(m not in COST_MODES for m in modes):
        print(f"cuzk_status_h200: cost modes are {list(COST_MODES)}", file=sys.stderr)
        return 2
    t_start = time.monotonic()
    work = Path(a.work or tempfile.mkdtemp(prefix="gapwatch-cuzk-status-"))
    work.mkdir(parents=True, exist_ok=True)
    plan = [("host-stall", "host-stall")] + [("cost", m) for m in modes]
    total = 30 + sum(estimate_s(a, kind) for kind, _ in plan)
    e2e.say(f"plan: host-stall {a.seconds:g} s + {len(modes)} cost runs x {a.cost_seconds:g} s; "
            f"estimated {total:.0f} s; deadline {a.deadline_s:g} s; work {work}")
    summary: dict[str, Any] = {"plan_estimate_s": total, "failures": [], "skipped": []}
    try:
        try:
            summary["machine"] = e2e.preflight(a)
        except Exception as exc:  # noqa: BLE001 - said, written, exit 2
            e2e.say(f"PREFLIGHT FAILED: {exc}")
            summary["failures"].append(f"preflight: {exc}")
            write_outputs(a, summary)
            return 2
        cost_runs: dict[str, dict[str, Any]] = {}
        for kind, name in plan:
            elapsed = time.monotonic() - t_start
            if elapsed + estimate_s(a, kind) > a.deadline_s:
                e2e.say(f"SKIPPED {kind} {name}: it would end past the deadline")
                summary["skipped"].append(f"{kind} {name}")
                continue
            e2e.say(f"{kind} {name}: start")
            try:
                if kind == "host-stall":
                    res = host_stall_step(a, work, summary["machine"])
                    summary["host_stall"] = res
                    c = res["score"]
                    e2e.say(f"  {c['named_waits_on_synthesis']}/{c['gaps']} gaps named "
                            f"'waits on synthesis'; causes {c['causes']}; "
                            f"{c['detection']['summary']}")
                else:
                    cost_runs[name] = cost_step(a, name, work)
                    summary["cost"] = cost_summary(cost_runs)
                    e2e.say(f"  {name}: {summary['cost']['modes'][name]}")
            except Exception as exc:  # noqa: BLE001 - keep going, report loudly
                e2e.say(f"STEP FAILED: {kind} {name}: {exc}\n{traceback.format_exc()}")
                summary["failures"].append(f"{kind} {name}: {exc}")
                if kind == "host-stall":
                    summary["host_stall"] = {"error": str(exc)}
            write_outputs(a, summary)
        summary["elapsed_s"] = time.monotonic() - t_start
        write_outputs(a, summary)
        write_bundles(a, work)
        print(summary_markdown(summary), flush=True)
        return 1 if summary["failures"] else 0
    finally:
        e2e.CHILDREN.end_all()


if __name__ == "__main__":
    sys.exit(main())
