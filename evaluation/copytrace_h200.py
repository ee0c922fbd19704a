"""GPU proof of the copy trace: the library injected into the load generator, gapwatch beside it.

Who runs it: the lead, on the H200 (torch, the CUDA 13 toolkit with CUPTI, gcc), from the
repository root, with gapwatch's missing dependencies carried as wheels (docs/copytrace.md):

    PYTHONPATH=. python3 bench/copytrace_h200.py --out "$OUT"

What it does, in one go (about 6 minutes):
1. `gapwatch copytrace build` against the toolkit's CUPTI (the layout check included);
2. for the load generator's `chained` (pinned pool) and `pageable` (fresh pageable memory and 12
   host-memory hogs) presets: starts `bench/gpu_loadgen.py` with CUDA_INJECTION64_PATH set, and
   `gapwatch record --source nvml --copytrace SOCK` beside it; then scores the recording's copies
   against the load generator's own copy log (`copy_start`, `copy_end`, `copy_bytes` per
   partition): every copy >= 64 MiB appears with the right memory kind and bytes, start and end
   within 5 ms, rate within 10 %; and `gapwatch report` must state the memory kind in the hint
   of every pcie_starved gap; the same recording's slow readings (no library needed for these):
   the load generator's /proc memory (`procmem`: RssShmem >= its pinned pool in `chained`, one
   a/b/c set in RssAnon and not in RssShmem in `pageable`) and the PCIe link read under traffic
   (`link`: at its maximum, Gen5 x16 unless `--expect-link` says otherwise); during `chained`,
   what those readings cost (NVML calls and the /proc read, timed in this process);
3. throughput of `chained` without and with the library (+ gapwatch listening), alternating,
   `--overhead-pairs` x 2 runs of `--overhead-seconds`.

What it writes to --out (3 files): summary.json (every figure, pass/fail per check),
h200-copytrace.tar.gz (`tar xzf ... -C tests/data`: per scenario the recording, the truth, the
logs and meta.json, which tests/test_copytrace_h200_regression.py replays), and
copytrace-details.tar.gz (consoles, gapwatch stderr, reports, overhead truths).
The scoring functions are pure and tested without a GPU (tests/test_copytrace_bench.py).
Exit codes: 0 ran (read summary.json's "passed"), 1 a step failed, 2 preflight failed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from statistics import mean, median, pstdev
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
MIB = 1 << 20
#: Copies at least this large are the load generator's a/b/c copies (the ones it logs).
MIN_COPY_BYTES = 64 * MIB
EDGE_TOL_S = 0.005
RATE_TOL = 0.10
SCENARIO_KIND = {"chained": "pinned", "pageable": "pageable"}
GIB = float(1 << 30)


# ------------------------------------------------------------------ scoring (pure)


def _attr(c: Any, name: str) -> Any:
    return c[name] if isinstance(c, dict) else getattr(c, name)


def host_kind(c: Any) -> str:
    return str(_attr(c, "src_kind") if _attr(c, "direction") == "h2d" else _attr(c, "dst_kind"))


def score_copies(truth: dict[str, Any], copies: list[Any], *, min_bytes: int = MIN_COPY_BYTES,
                 edge_tol_s: float = EDGE_TOL_S, rate_tol: float = RATE_TOL) -> dict[str, Any]:
    """Match each partition of the load generator's copy log to the traced copies.

    The log says when a worker *issued* its copies (`copy_start`) and when the call returned
    (`copy_end`). Host-to-device copies share the GPU's copy engine, so a copy issued while the
    other worker's copy runs waits for it (measured on the H200: a worker's first copy started
    exactly when the other's ended): its DMA starts at the later of the issue time and the end
    of the other streams' copies running then (`queued_until`), and the engine time that was
    the other streams' inside the logged span is not this worker's copy time.

    A partition's copies are the traced H2D copies >= `min_bytes` inside its logged window
    (widened by `edge_tol_s`), all on one stream (each worker copies on its own), each used at
    most once. The partition passes when there are as many as the log implies (copy_bytes /
    abc bytes), each of abc bytes and of the expected memory kind, the first start within
    `edge_tol_s` of `queued_until`, the last end within `edge_tol_s` of the logged return, and
    the traced rate within `rate_tol` of the logged one (both: bytes over their span less the
    other streams' copy time in it).
    """
    params = truth.get("params") or {}
    expected = "pinned" if params.get("pinned") else "pageable"
    abc = int(params.get("abc_mib", 0)) * MIB
    big = sorted((c for c in copies if _attr(c, "direction") == "h2d"
                  and int(_attr(c, "bytes")) >= min_bytes), key=lambda c: _attr(c, "start_wall_s"))
    used: set[int] = set()
    rows: list[dict[str, Any]] = []
    for iv in truth.get("intervals", []):
        c0, c1, nbytes = iv.get("copy_start"), iv.get("copy_end"), iv.get("copy_bytes")
        if c0 is None or c1 is None or not nbytes:
            continue
        want = nbytes // abc if abc else 0
        inside = [i for i, c in enumerate(big) if i not in used
                  and _attr(c, "start_wall_s") >= c0 - edge_tol_s
                  and _attr(c, "end_wall_s") <= c1 + edge_tol_s]
        by_stream: dict[int, list[int]] = {}
        for i in inside:
            by_stream.setdefault(int(_attr(big[i], "stream_id")), []).append(i)
        # The worker's stream: the one with the copies the log implies (then the most, then the
        # nearest the issue time); another stream's copies in the window are the other worker's.
        group: list[int] = max(
            by_stream.values(),
            key=lambda ids: (len(ids) == want, len(ids),
                             -abs(_attr(big[ids[0]], "start_wall_s") - c0)),
            default=[])
        used.update(group)
        cs = [big[i] for i in group]
        stream = int(_attr(cs[0], "stream_id")) if cs else None
        others = [c for c in big if int(_attr(c, "stream_id")) != stream]
        queued_until = max([c0] + [_attr(c, "end_wall_s") for c in others
                                   if _attr(c, "start_wall_s") <= c0 + edge_tol_s
                                   and _attr(c, "end_wall_s") > c0])
        row: dict[str, Any] = {"partition": iv.get("partition"), "worker": iv.get("worker"),
                               "expected_copies": want, "traced_copies": len(cs)}
        if cs:
            first, last = cs[0], max(cs, key=lambda c: _attr(c, "end_wall_s"))
            t_first, t_last = _attr(first, "start_wall_s"), _attr(last, "end_wall_s")
            traced_s = t_last - t_first - _busy(others, t_first, t_last)
            logged_s = c1 - c0 - _busy(others, c0, c1)
            logged_rate = nbytes / logged_s if logged_s > 0 else None
            traced_bytes = sum(int(_attr(c, "bytes")) for c in cs)
            traced_rate = traced_bytes / traced_s if traced_s > 0 else None
            row.update({
                "kinds": sorted({host_kind(c) for c in cs}),
                "kind_ok": all(host_kind(c) == expected for c in cs),
                "bytes_ok": traced_bytes == nbytes and all(int(_attr(c, "bytes")) == abc
                                                           for c in cs),
                "queued_s": queued_until - c0,
                "start_error_s": t_first - queued_until,
                "end_error_s": _attr(last, "end_wall_s") - c1,
                "logged_bytes_per_s": logged_rate, "traced_bytes_per_s": traced_rate,
                "rate_error": (traced_rate / logged_rate - 1) if traced_rate and logged_rate
                else None,
                "per_copy_bytes_per_s": [_attr(c, "bytes") / max(1e-9, _attr(c, "end_wall_s")
                                                                  - _attr(c, "start_wall_s"))
                                         for c in cs],
            })  # fmt: skip
            row["ok"] = bool(
                len(cs) == want and row["kind_ok"] and row["bytes_ok"]
                and abs(row["start_error_s"]) <= edge_tol_s
                and abs(row["end_error_s"]) <= edge_tol_s
                and row["rate_error"] is not None and abs(row["rate_error"]) <= rate_tol)
        else:
            row["ok"] = False
        rows.append(row)
    extra = [c for i, c in enumerate(big) if i not in used]
    starts = [abs(r["start_error_s"]) for r in rows if "start_error_s" in r]
    ends = [abs(r["end_error_s"]) for r in rows if "end_error_s" in r]
    rates = [abs(r["rate_error"]) for r in rows if r.get("rate_error") is not None]
    per_copy = sorted(x for r in rows for x in r.get("per_copy_bytes_per_s", []))
    ok = sum(1 for r in rows if r["ok"])
    queued = [r["queued_s"] for r in rows if r.get("queued_s", 0) > edge_tol_s]
    return {
        "expected_kind": expected, "partitions": len(rows), "partitions_ok": ok,
        "queued_behind_other_stream": len(queued),
        "queued_ms_max": max(queued) * 1e3 if queued else None,
        "passed": bool(rows) and ok == len(rows),
        "extra_big_copies": len(extra),
        "extra_kinds": sorted({host_kind(c) for c in extra}),
        "start_error_ms_max": max(starts) * 1e3 if starts else None,
        "end_error_ms_max": max(ends) * 1e3 if ends else None,
        "edge_error_ms_median": median(starts + ends) * 1e3 if starts else None,
        "rate_error_max": max(rates) if rates else None,
        "per_copy_gb_per_s": ([per_copy[0] / 1e9, median(per_copy) / 1e9, per_copy[-1] / 1e9]
                              if per_copy else None),
        "failures": [r for r in rows if not r["ok"]][:5],
    }


def _busy(copies: list[Any], t0: float, t1: float) -> float:
    """Seconds of [t0, t1] that `copies` (on other streams) held the copy engine."""
    return float(sum(max(0.0, min(t1, _attr(c, "end_wall_s")) - max(t0, _attr(c, "start_wall_s")))
                     for c in copies))


def delivery_lag(copies: list[Any], header: dict[str, Any]) -> dict[str, Any]:
    """How long after its end each copy reached gapwatch (live, not at the prover's exit)."""
    mono0, wall0 = header.get("started_mono_ns"), header.get("started_wall_s")
    lags = sorted((_attr(c, "t_arrival_mono_ns") - mono0) / 1e9 + wall0 - _attr(c, "end_wall_s")
                  for c in copies if _attr(c, "t_arrival_mono_ns") is not None
                  and mono0 is not None and wall0 is not None)
    if not lags:
        return {"n": 0, "p50_s": None, "max_s": None}
    return {"n": len(lags), "p50_s": median(lags), "max_s": lags[-1]}


def score_hints(report: dict[str, Any], expected_kind: str) -> dict[str, Any]:
    """Every pcie_starved gap of the report must state the memory kind the trace saw."""
    starved = [g for g in report.get("gaps", []) if g.get("kind") == "pcie_starved"]
    stated = [g for g in starved
              if (g.get("copies") or {}).get("traced")
              and (g.get("copies") or {}).get("memory_kind") == expected_kind
              and f"from {expected_kind} host memory" in g.get("hint", "")]
    table = report.get("copies") or {}
    return {
        "pcie_starved_gaps": len(starved), "stating_memory_kind": len(stated),
        "passed": len(stated) == len(starved),
        "example_hint": (stated or starved or [{}])[0].get("hint"),
        "pageable_share_of_gap_time": table.get("pageable_share_of_gap_time"),
        "copy_rows": table.get("rows"),
    }


def overhead_summary(off: list[float | None], on: list[float | None]) -> dict[str, Any]:
    """Slowdown of the mean throughput with the library, against the spread without it."""
    a = [x for x in off if x]
    b = [x for x in on if x]
    if not a or not b:
        return {"off_pps": off, "on_pps": on, "slowdown_pct": None, "passed": False}
    slowdown = (1 - mean(b) / mean(a)) * 100
    spread = (max(a) - min(a)) / mean(a) * 100 if len(a) > 1 else None
    return {"off_pps": off, "on_pps": on, "off_mean_pps": mean(a), "on_mean_pps": mean(b),
            "slowdown_pct": slowdown, "off_spread_pct": spread,
            "off_stdev_pct": pstdev(a) / mean(a) * 100 if len(a) > 1 else None,
            "passed": slowdown <= max(1.0, spread or 0.0)}


def _gib(values: list[int]) -> list[float] | None:
    return [min(values) / GIB, max(values) / GIB] if values else None


def score_procmem(truth: dict[str, Any], readings: list[Any], pid: int | None = None
                  ) -> dict[str, Any]:
    """The load generator's /proc readings (`procmem` records) against what it allocated.

    Pinned preset: every reading shows RssShmem >= its pinned pool (slots x 3 x abc, all
    allocated with cudaHostAlloc before "go"). Pageable preset: some reading holds at least one
    a/b/c set (3 x abc) in RssAnon, and no reading shows that much as RssShmem (pageable memory
    must not look pinned). `pid`: the load generator's (else the largest process listed).
    VmLck / VmPin are reported for what they show, not scored."""
    params = truth.get("params") or {}
    pinned = bool(params.get("pinned"))
    abc = int(params.get("abc_mib", 0)) * MIB
    slots = int(params.get("pool_slots") or 0) or int(params.get("synth_threads", 0)) + 2
    pool = slots * 3 * abc if pinned else 0
    if pid is None and readings:
        pid = int(_attr(max(readings, key=lambda r: (_attr(r, "rss_shmem_bytes") or 0)
                            + (_attr(r, "rss_anon_bytes") or 0)), "pid"))
    mine = [r for r in readings if int(_attr(r, "pid")) == pid]
    known = [r for r in mine if _attr(r, "rss_shmem_bytes") is not None
             and _attr(r, "rss_anon_bytes") is not None]
    shmem = [int(_attr(r, "rss_shmem_bytes")) for r in known]
    anon = [int(_attr(r, "rss_anon_bytes")) for r in known]
    locked = [int(v) for r in mine if (v := _attr(r, "vm_locked_bytes")) is not None]
    pinned_vm = [int(v) for r in mine if (v := _attr(r, "vm_pinned_bytes")) is not None]
    if pinned:
        passed = bool(known) and min(shmem) >= pool
    else:
        passed = bool(known) and max(anon) >= 3 * abc and max(shmem) < 3 * abc
    return {
        "expected": "pinned" if pinned else "pageable", "pid": pid,
        "names": sorted({str(_attr(r, "name")) for r in mine}),
        "readings": len(mine), "readings_with_fields": len(known),
        "pinned_pool_gib": pool / GIB, "abc_set_gib": 3 * abc / GIB,
        "rss_shmem_gib_min_max": _gib(shmem), "rss_anon_gib_min_max": _gib(anon),
        "vm_locked_gib_min_max": _gib(locked), "vm_pinned_gib_min_max": _gib(pinned_vm),
        "passed": passed,
    }


def score_links(links: list[Any], expect: tuple[int, int] | None = (5, 16)) -> dict[str, Any]:
    """The `link` records (the link read while data moved): at least one, none trained down,
    each at its maximum and, with `expect`, at that generation and width."""
    seen = [(_attr(k, "gen"), _attr(k, "width"), _attr(k, "max_gen"), _attr(k, "max_width"))
            for k in links]
    at_max = [g == mg and w == mw and g is not None and w is not None for g, w, mg, mw in seen]
    matches = [expect is None or (g, w) == expect for g, w, _, _ in seen]
    return {"records": len(seen), "seen": [f"Gen{g} x{w} (max Gen{mg} x{mw})"
                                           for g, w, mg, mw in seen],
            "expected": f"Gen{expect[0]} x{expect[1]}" if expect else "max",
            "passed": bool(seen) and all(at_max) and all(matches)}


def case_check(case: Path, pid: int | None = None,
               expect_link: tuple[int, int] | None = (5, 16)) -> dict[str, Any]:
    """Re-score a case folder (the regression tests and the bench share this): the recording's
    copies against the truth, today's report's hints, the /proc readings of the load generator
    (`pid`, else meta.json's `loadgen_pid`) and the link read under traffic."""
    sys.path.insert(0, str(ROOT))
    from gapwatch.config import Config
    from gapwatch.core.models import CopyRecord, LinkState, ProcessMemory
    from gapwatch.offline.report import build_report, to_json
    from gapwatch.sources.recording import read_recording

    truth = json.loads((case / "truth.json").read_text())
    if pid is None and (case / "meta.json").is_file():
        pid = json.loads((case / "meta.json").read_text()).get("loadgen_pid")
    rec = read_recording(case / "rec.jsonl.gz")
    records = list(rec.records)  # read once: the reader streams
    copies = [r for r in records if isinstance(r, CopyRecord)]
    gpu = truth.get("gpu")
    procmem = [r for r in records if isinstance(r, ProcessMemory)
               and (gpu is None or r.gpu == gpu)]
    links = [r for r in records if isinstance(r, LinkState) and (gpu is None or r.gpu == gpu)]
    copy_score = score_copies(truth, copies)
    report = to_json(build_report(case / "rec.jsonl.gz", Config(), workers=1))
    return {"copies": copy_score, "hints": score_hints(report, copy_score["expected_kind"]),
            "procmem": score_procmem(truth, procmem, pid),
            "link": score_links(links, expect_link),
            "delivery_lag": delivery_lag(copies, msgspec.to_builtins(rec.header)),
            "n_copies": len(copies), "counters": dict(rec.counters)}




# ------------------------------------------------------------------ the GPU run


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def env_for(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = env_with(ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    env.update(extra or {})
    return env


def tail(path: Path, n: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(none)"


if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evaluation.checkout_env import env_with  # noqa: E402 - the checkout's root, on the path above
from evaluation.gpu_e2e import Children  # noqa: E402 - the checkout's root, on the path above
from evaluation.slow_readings_cost import measure_costs  # noqa: E402 - the checkout's root, on the path above

PROCS = Children()


def one_run(a: argparse.Namespace, scenario: str, seconds: float, run: Path, lib: Path | None,
            listen: bool, costs: bool = False) -> dict[str, Any]:
    """One load generator run; with `lib`, injected; with `listen`, gapwatch records beside;
    with `costs`, the slow readings' calls are timed while it runs."""
    run.mkdir(parents=True, exist_ok=True)
    sock = Path(tempfile.gettempdir()) / f"gw-ct-{os.getpid()}-{run.name}.sock"
    f = {k: run / v for k, v in (("truth", "truth.json"), ("stdout", "stdout.log"),
                                 ("stderr", "stderr.log"), ("rec", "rec.jsonl.gz"))}
    for stale in (*f.values(), run / "ready", run / "go"):
        stale.unlink(missing_ok=True)
    extra = {"GAPWATCH_COPYTRACE_SOCKET": str(sock)}
    if lib is not None:
        extra["CUDA_INJECTION64_PATH"] = str(lib)
    lg_cmd = [a.python, str(BENCH / "gpu_loadgen.py"), "--scenario", scenario, "--duration",
              f"{seconds:g}", "--gpu", str(a.gpu), "--stdout-log", str(f["stdout"]),
              "--stderr-log", str(f["stderr"]), "--truth", str(f["truth"]),
              "--ready-file", str(run / "ready"), "--go-file", str(run / "go")]
    gw_cmd = [a.python, "-m", "gapwatch", "record", "--source", "nvml", "--gpus", str(a.gpu),
              "--copytrace", str(sock), "--out", str(f["rec"]), "--log", str(f["stdout"]),
              "--log", str(f["stderr"]), "--from-start", "--quiet"]
    out: dict[str, Any] = {"scenario": scenario, "seconds": seconds, "library": lib is not None,
                           "gapwatch": listen, "loadgen_cmd": " ".join(lg_cmd)}
    console = (run / "loadgen.console.txt").open("w")
    lg = PROCS.start(lg_cmd, stdout=console, stderr=subprocess.STDOUT, env=env_for(extra),
                     cwd=ROOT)
    out["loadgen_pid"] = lg.pid
    gw = None
    gw_err = None
    try:
        deadline = time.monotonic() + a.ready_timeout_s
        while not (run / "ready").exists():
            if lg.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"load generator not ready (rc {lg.poll()}):\n"
                                   f"{tail(run / 'loadgen.console.txt')}")
            time.sleep(0.1)
        if listen:
            out["gapwatch_cmd"] = " ".join(gw_cmd)
            gw_err = (run / "gapwatch.stderr.txt").open("w")
            gw = PROCS.start(gw_cmd, stdout=gw_err, stderr=subprocess.STDOUT, env=env_for(),
                             cwd=ROOT)
            grow_deadline = time.monotonic() + 20
            first = None
            while time.monotonic() < grow_deadline:
                if gw.poll() is not None:
                    raise RuntimeError(f"gapwatch record exited (rc {gw.returncode}):\n"
                                       f"{tail(run / 'gapwatch.stderr.txt')}")
                size = f["rec"].stat().st_size if f["rec"].exists() else 0
                if size and first is None:
                    first = size
                elif first is not None and size > first:
                    break
                time.sleep(0.1)
            time.sleep(a.warmup_s)
        (run / "go").write_text("go\n")
        if costs:
            time.sleep(2.0)  # into the run: copies and kernels going
            try:
                out["slow_reading_costs"] = measure_costs(a.gpu, lg.pid)
            except Exception as exc:  # noqa: BLE001 - a figure, not a step: say it, go on
                out["slow_reading_costs"] = {"error": repr(exc)}
        lg.wait(seconds + 90)
        out["loadgen_rc"] = lg.returncode
        if lg.returncode != 0:
            raise RuntimeError(f"load generator failed (rc {lg.returncode}):\n"
                               f"{tail(run / 'loadgen.console.txt')}")
        if gw is not None:
            time.sleep(a.tail_s)
            out["gapwatch_rc"] = PROCS.end(gw, wait_s=30)
    finally:
        for p in (gw, lg):
            if p is not None:
                PROCS.end(p, wait_s=10)
        console.close()
        if gw_err is not None:
            gw_err.close()
    truth = json.loads(f["truth"].read_text())
    out["throughput_pps"] = truth.get("throughput_pps")
    out["partitions"] = truth.get("partitions_completed")
    out["h2d_gb_per_s_median"] = truth.get("h2d_gb_per_s_median")
    out["library_lines"] = [ln for ln in (run / "loadgen.console.txt").read_text(
        errors="replace").splitlines() if "gapwatch-copytrace" in ln][:5]
    return out


def build_library(a: argparse.Namespace, work: Path) -> tuple[Path, dict[str, Any]]:
    cmd = [a.python, "-m", "gapwatch", "copytrace", "build", "--out", str(work / "lib")]
    if a.cuda_include:
        cmd += ["--cuda-include", a.cuda_include]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env_for(), cwd=ROOT)
    if r.returncode != 0:
        raise RuntimeError(f"gapwatch copytrace build failed:\n{r.stdout}\n{r.stderr}")
    return work / "lib" / "libgapwatch_copytrace.so", {"cmd": " ".join(cmd),
                                                       "output": r.stdout[-3000:]}


def machine() -> dict[str, Any]:
    m: dict[str, Any] = {"date_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                         "host": platform.node(), "kernel": platform.release(),
                         "cpus": os.cpu_count(), "python": platform.python_version(),
                         "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])}
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,pci.bus_id,"
                            "pcie.link.gen.max,pcie.link.width.max", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
        m["nvidia_smi"] = q.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        m["nvidia_smi"] = None
    return m


def parse_link(text: str) -> tuple[int, int] | None:
    """`5x16` -> (5, 16); "" -> None (the link's own maximum is the expectation)."""
    if not text:
        return None
    gen, _, width = text.lower().removeprefix("gen").partition("x")
    return int(gen), int(width)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default=None)
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--cuda-include", default=None)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--overhead-seconds", type=float, default=20.0)
    ap.add_argument("--overhead-pairs", type=int, default=3)
    ap.add_argument("--warmup-s", type=float, default=2.0)
    ap.add_argument("--tail-s", type=float, default=2.0)
    ap.add_argument("--ready-timeout-s", type=float, default=120.0)
    ap.add_argument("--expect-link", default="5x16",
                    help="GENxWIDTH the link must run at under traffic ('' = its maximum)")
    a = ap.parse_args(argv)
    expect_link = parse_link(a.expect_link)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(a.work or tempfile.mkdtemp(prefix="gw-copytrace-"))
    summary: dict[str, Any] = {"machine": machine(), "scenarios": {}, "overhead": {}}

    def write() -> None:
        (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")

    rc = 0
    try:
        try:
            lib, summary["build"] = build_library(a, work)
        except Exception as exc:  # noqa: BLE001 - preflight: say it, write it, stop
            summary["build"] = {"error": str(exc)}
            write()
            say(f"PREFLIGHT FAILED: {exc}")
            return 2
        say(f"built {lib}")
        cases = work / "cases"
        for scenario in ("chained", "pageable"):
            say(f"scenario {scenario}")
            try:
                run = work / "runs" / scenario
                res = one_run(a, scenario, a.seconds, run, lib, listen=True,
                              costs=scenario == "chained")
                case = cases / scenario
                case.mkdir(parents=True, exist_ok=True)
                for name in ("rec.jsonl.gz", "truth.json", "stdout.log", "stderr.log"):
                    (case / name).write_bytes((run / name).read_bytes())
                check = case_check(case, res["loadgen_pid"], expect_link)
                res.update(check)
                (case / "meta.json").write_text(json.dumps({
                    "scenario": scenario, "expected_kind": SCENARIO_KIND[scenario],
                    "machine": summary["machine"], "gapwatch_cmd": res.get("gapwatch_cmd"),
                    "loadgen_cmd": res["loadgen_cmd"], "loadgen_pid": res["loadgen_pid"],
                    "expect_link": a.expect_link,
                    "captured": {"copies": check["copies"]["passed"],
                                 "hints": check["hints"]["passed"],
                                 "procmem": check["procmem"]["passed"],
                                 "link": check["link"]["passed"]}}, indent=1) + "\n")
                summary["scenarios"][scenario] = res
                say(f"  copies: {check['copies']['partitions_ok']}/{check['copies']['partitions']}"
                    f" partitions ok, edges max {check['copies']['start_error_ms_max']} / "
                    f"{check['copies']['end_error_ms_max']} ms, rate error max "
                    f"{check['copies']['rate_error_max']}; hints: "
                    f"{check['hints']['stating_memory_kind']}/"
                    f"{check['hints']['pcie_starved_gaps']}; /proc: "
                    f"{check['procmem']['passed']} (RssShmem GiB "
                    f"{check['procmem']['rss_shmem_gib_min_max']}, RssAnon GiB "
                    f"{check['procmem']['rss_anon_gib_min_max']}); link: "
                    f"{check['link']['passed']} {check['link']['seen']}")
            except Exception:  # noqa: BLE001 - the other steps still run
                summary["scenarios"][scenario] = {"error": traceback.format_exc()}
                rc = 1
            write()
        off: list[float | None] = []
        on: list[float | None] = []
        for i in range(a.overhead_pairs):
            for with_lib in (False, True):
                tag = f"overhead-{i}-{'on' if with_lib else 'off'}"
                say(tag)
                try:
                    res = one_run(a, "chained", a.overhead_seconds, work / "runs" / tag,
                                  lib if with_lib else None, listen=with_lib)
                    (on if with_lib else off).append(res["throughput_pps"])
                except Exception:  # noqa: BLE001
                    summary["overhead"][tag] = {"error": traceback.format_exc()}
                    (on if with_lib else off).append(None)
                    rc = 1
                summary["overhead"]["result"] = overhead_summary(off, on)
                write()
        sc = summary["scenarios"]
        summary["passed"] = {
            "copies": all((sc.get(s) or {}).get("copies", {}).get("passed") for s in SCENARIO_KIND),
            "pageable_hints": bool((sc.get("pageable") or {}).get("hints", {}).get("passed")),
            "procmem": all((sc.get(s) or {}).get("procmem", {}).get("passed")
                           for s in SCENARIO_KIND),
            "link": all((sc.get(s) or {}).get("link", {}).get("passed") for s in SCENARIO_KIND),
            "overhead": bool(summary["overhead"].get("result", {}).get("passed")),
        }
        write()
        if cases.exists():
            with tarfile.open(out / "h200-copytrace.tar.gz", "w:gz") as tar:
                tar.add(cases, arcname="h200-copytrace")
        with tarfile.open(out / "copytrace-details.tar.gz", "w:gz") as tar:
            for p in sorted((work / "runs").glob("*/*")):
                if p.suffix in (".txt", ".json", ".log") and p.stat().st_size < 4_000_000:
                    tar.add(p, arcname=str(p.relative_to(work)))
        say(f"passed: {summary['passed']}; overhead {summary['overhead'].get('result')}")
    finally:
        PROCS.end_all()
    return rc


if __name__ == "__main__":
    sys.exit(main())
