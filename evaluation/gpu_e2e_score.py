"""Score gapwatch against the GPU load generator's ground truth, with or without a GPU.

Who calls it: `bench/gpu_e2e.py` on the GPU box (after each scenario), the regression tests
(tests/test_e2e_h200_*.py, on the committed cases in tests/data/h200-e2e/), and a person:

    python3 bench/gpu_e2e_score.py tests/data/h200-e2e            # every case below the folder
    python3 bench/gpu_e2e_score.py tests/data/h200-e2e/pageable --json --check

A *case* is one folder (layout written by gpu_e2e.py, documented in docs/gpu-proof.md):

    meta.json      scenario, expected kind, machine, commands, figures measured at capture time
    truth.json     gpu_loadgen.py ground truth (every partition's GPU compute interval)
    rec.jsonl.gz   the `gapwatch record --source nvml` recording made beside the load
    stdout.log     the load generator's tracing lines (cuzk's stdout)
    stderr.log     its TIMELINE / CUZK_TIMING lines (cuzk's stderr)
    dmon.txt       optional: `nvidia-smi dmon` output, each line prefixed by its arrival time

Scoring reruns today's detector over the recording (`gapwatch.offline.report.build_report`) and
compares its gaps with the truth gaps (holes >= 0.3 s between merged compute intervals) through
`evaluation.scoring.score`. Everything here is pure Python over files: no GPU, no NVML, no torch.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from statistics import mean, median
from typing import Any

#: The kind every truth gap of a scenario should get (None: the scenario should have no gap).
EXPECTED_KIND: dict[str, str | None] = {
    "chained": None,
    "pageable": "pcie_starved",
    "host-stall": "host_stall",
    "transfer-bound": "transfer_bound",
}
#: Issue 6's goals.
GOALS = {"recall": 0.95, "precision": 0.95, "kind_accuracy": 0.95, "median_edge_error_ms": 150.0}
MIN_GAP_S = 0.3
IDLE_PCT = 10.0
CASE_FILES = {"recording": "rec.jsonl.gz", "stdout": "stdout.log", "stderr": "stderr.log",
              "truth": "truth.json", "meta": "meta.json", "dmon": "dmon.txt"}


# ------------------------------------------------------------------ small helpers


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..1), None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def proc_cpu_seconds(stat_text: str, clk_tck: int) -> float:
    """utime + stime of a process from the text of /proc/<pid>/stat (comm may hold spaces)."""
    fields = stat_text[stat_text.rindex(")") + 2:].split()
    # After "pid (comm) ": state is field 3 of the full line, so utime (14) and stime (15)
    # are at 11 and 12 here.
    return (int(fields[11]) + int(fields[12])) / clk_tck


@dataclass(frozen=True)
class DetectedGap:
    """A gap from the report JSON, in the shape `evaluation.scoring.score` reads."""

    gpu: int
    start_s: float
    end_s: float | None
    kind: str
    duration_s: float


#: The report JSON versions scoring reads (`gapwatch.offline.report.REPORT_SCHEMA_VERSION`): it
#: reads `gaps`, `breakdowns` and `gpus[].busy_fraction`, which 2 left as 1 had them (2 changed
#: `partitions`' pinning only: docs/detection.md "Report JSON").
REPORT_VERSIONS_READ = (1, 2)


def detected_gaps(report: dict[str, Any]) -> list[DetectedGap]:
    """The report's gaps; a report of a version scoring does not know is refused, saying so
    (a document without the key: a test's hand-made report)."""
    version = report.get("schema_version")
    if version is not None and version not in REPORT_VERSIONS_READ:
        raise ValueError(f"report JSON schema_version {version}: scoring reads "
                         f"{', '.join(map(str, REPORT_VERSIONS_READ))} only")
    return [DetectedGap(int(g["gpu"]), float(g["start_s"]),
                        None if g.get("end_s") is None else float(g["end_s"]),
                        str(g["kind"]), float(g.get("duration_s") or 0.0))
            for g in report.get("gaps", [])]


# ------------------------------------------------------------------ scoring one case


def score_case(report: dict[str, Any], truth: dict[str, Any], scenario: str,
               min_gap_s: float = MIN_GAP_S) -> dict[str, Any]:
    """Detection figures of one scenario: the report's gaps against the truth's holes."""
    from evaluation.scoring import kind_from_copies, score, truth_gaps

    intervals = truth.get("intervals", [])
    # Each hole's expected kind from the workload's own copy log where the truth has it (a
    # pageable run can end on a real host stall when synthesis stops); else the scenario's.
    expected: Any = EXPECTED_KIND.get(scenario)
    if scenario != "chained" and any(i.get("copy_start") is not None for i in intervals):
        expected = kind_from_copies(intervals)
    gaps = detected_gaps(report)
    s = score(gaps, intervals, min_gap_s=min_gap_s, truth_kind=expected)
    tg = truth_gaps(intervals, min_gap_s, expected)
    edge_ms = None if s.median_edge_error_s is None else s.median_edge_error_s * 1000
    breakdown = bool(report.get("breakdowns"))
    out: dict[str, Any] = {
        "scenario": scenario,
        "expected_kind": EXPECTED_KIND.get(scenario),
        "kind_truth": "copy log" if callable(expected) else "scenario",
        "truth_partitions": len(intervals),
        "truth_gaps": s.n_truth,
        "truth_gap_median_s": median([g.end_s - g.start_s for g in tg]) if tg else None,
        "detected": s.n_detected,
        "matched": len(s.matched),
        "found": getattr(s, "n_found", len(s.matched)),
        "recall": s.recall,
        "precision": s.precision,
        "kind_accuracy": s.kind_accuracy,
        "median_edge_error_ms": edge_ms,
        "kinds_detected": _count(g.kind for g in gaps),
        "breakdown_in_report": breakdown,
        "missed": [{"start_s": g.start_s, "duration_s": round(g.end_s - g.start_s, 3)}
                   for g in s.missed],
        "false_positives": [{"start_s": g.start_s, "duration_s": round(g.duration_s, 3),
                             "kind": g.kind} for g in s.false_positives],
        "wrong_kind": [{"start_s": t.start_s, "truth": t.kind, "detected": g.kind}
                       for t, g in s.matched if t.kind is not None and g.kind != t.kind],
        "summary": s.summary(),
    }
    out["goals"] = goals_met(out)
    return out


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for k in items:
        out[k] = out.get(k, 0) + 1
    return out


def goals_met(sc: dict[str, Any]) -> dict[str, bool | None]:
    """Each goal of issue 6 for one scored scenario (None: not applicable)."""
    chained = sc["expected_kind"] is None
    res: dict[str, bool | None] = {
        "recall": sc["recall"] >= GOALS["recall"],
        "precision": sc["precision"] >= GOALS["precision"],
        "kind_accuracy": None if sc["kind_accuracy"] is None
        else sc["kind_accuracy"] >= GOALS["kind_accuracy"],
        "median_edge_error": None if sc["median_edge_error_ms"] is None
        else sc["median_edge_error_ms"] <= GOALS["median_edge_error_ms"],
    }
    if chained:
        res["no_breakdown_when_chained"] = not sc["breakdown_in_report"]
    elif sc["scenario"] == "pageable":
        res["breakdown_when_pageable"] = sc["breakdown_in_report"]
    return res


# ------------------------------------------------------------------ the recording itself


def recording_facts(path: str | Path) -> dict[str, Any]:
    """What the live session recorded: tick lateness, live chaining states, sources, counts."""
    from gapwatch.core.models import GpuSample, LogEvent, Notice, StateChange
    from gapwatch.sources.files import read_any

    rec = read_any(path)
    late_ms: list[float] = []
    states: list[dict[str, Any]] = []
    notices: list[str] = []
    sources: set[str] = set()
    n_gpu = n_log = 0
    first = last = None
    for r in rec.records:
        if isinstance(r, GpuSample):
            n_gpu += 1
            if r.lateness_ns is not None:
                late_ms.append(r.lateness_ns / 1e6)
            sources.add(f"sm={r.sm_source} pcie={r.pcie_source}")
            first = r.t_wall_s if first is None else first
            last = r.t_wall_s
        elif isinstance(r, LogEvent):
            n_log += 1
        elif isinstance(r, Notice):
            if r.level != "info" and len(notices) < 10:
                notices.append(f"{r.level}: {r.message}")
        elif isinstance(r, StateChange):
            states.append({"gpu": r.gpu, "t_wall_s": r.t_wall_s, "state": r.state,
                           "reason": r.reason})
    return {
        "gpus": [g.index for g in rec.header.gpus],
        "period_ms": rec.header.period_ms,
        "gpu_samples": n_gpu,
        "log_events": n_log,
        "span_s": (last - first) if first is not None and last is not None else None,
        "signal_sources": sorted(sources),
        "lateness_ms": {"p50": percentile(late_ms, 0.5), "p99": percentile(late_ms, 0.99),
                        "max": max(late_ms) if late_ms else None, "n": len(late_ms)},
        "states_live": states,
        "breakdown_live": any(s["state"] == "BREAKDOWN" for s in states),
        "notices": notices,
        "counters": dict(rec.counters),
        "problems": list(rec.problems),
    }


def build_report_json(rec_path: Path, log_paths: list[Path]) -> dict[str, Any]:
    """`gapwatch report REC [--log ...] --json`, in process."""
    from gapwatch.config import Config
    from gapwatch.offline.report import build_report, to_json

    return to_json(build_report(rec_path, Config(), [str(p) for p in log_paths]))


def report_log_paths(case: Path, facts: dict[str, Any]) -> list[Path]:
    """The logs to hand to `report --log`: none when the recording already holds the log events
    (a live `record --log` session records them; the files given again would add nothing but
    their parse: each of their lines counts once, `gapwatch.logs.once`), else the case's log
    files."""
    if facts.get("log_events"):
        return []
    return [case / CASE_FILES[k] for k in ("stdout", "stderr") if (case / CASE_FILES[k]).exists()]


# ------------------------------------------------------------------ nvidia-smi dmon


@dataclass
class DmonRow:
    t_arrival_s: float | None
    t_stamp_s: float | None  # from dmon's own Date/Time columns (1 s resolution, local time)
    values: dict[str, float | None]


@dataclass
class DmonTable:
    columns: list[str]
    rows: list[DmonRow]
    #: "arrival": rows placed by the time they reached us (sub-second); "stamp": by dmon's
    #: own whole-second stamp (±1 s); None when neither works.
    timing: str | None = None


def parse_dmon(text: str) -> DmonTable:
    """`nvidia-smi dmon` output, lines optionally prefixed by `<unix seconds>\\t` (arrival)."""
    columns: list[str] = []
    rows: list[DmonRow] = []
    for raw in text.splitlines():
        arrival: float | None = None
        line = raw
        if "\t" in raw:
            head, _, rest = raw.partition("\t")
            try:
                arrival = float(head)
                line = rest
            except ValueError:
                line = raw
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            names = s.lstrip("#").split()
            if "gpu" in [n.lower() for n in names] and not columns:
                columns = [n.lower() for n in names]
            continue
        tokens = s.split()
        if not columns or len(tokens) != len(columns):
            continue
        values: dict[str, float | None] = {}
        stamp: float | None = None
        for name, tok in zip(columns, tokens, strict=True):
            if name in ("date", "time"):
                continue
            try:
                values[name] = float(tok)
            except ValueError:
                values[name] = None
        if "date" in columns and "time" in columns:
            try:
                d = tokens[columns.index("date")]
                t = tokens[columns.index("time")]
                stamp = time.mktime(datetime.strptime(d + t, "%Y%m%d%H:%M:%S").timetuple())
            except ValueError:
                stamp = None
        rows.append(DmonRow(arrival, stamp, values))
    table = DmonTable(columns, rows)
    table.timing = _dmon_timing(rows)
    return table


def _dmon_timing(rows: list[DmonRow]) -> str | None:
    arr = [r.t_arrival_s for r in rows if r.t_arrival_s is not None]
    if len(arr) >= 3 and len(arr) == len(rows):
        diffs = [b - a for a, b in zip(arr, arr[1:], strict=False)]
        # Line-buffered output arrives once a second; block-buffered output arrives in bursts.
        if 0.5 <= median(diffs) <= 1.5 and sum(d > 0.3 for d in diffs) >= 0.9 * len(diffs):
            return "arrival"
    if rows and all(r.t_stamp_s is not None for r in rows):
        return "stamp"
    return None


def dmon_window(row: DmonRow, timing: str | None) -> tuple[float, float] | None:
    """The time a dmon row may describe. dmon prints a row after averaging about a second, so a
    row that arrived at t covers ~[t-1, t]; a whole-second stamp T covers at most [T-1, T+1)."""
    if timing == "arrival" and row.t_arrival_s is not None:
        return row.t_arrival_s - 1.0, row.t_arrival_s
    if timing == "stamp" and row.t_stamp_s is not None:
        return row.t_stamp_s - 1.0, row.t_stamp_s + 1.0
    return None


def gpm_columns(columns: list[str]) -> dict[str, str]:
    """Which extra columns `--gpm-metrics 2,20,21` added (names vary by driver: match loosely)."""
    standard = {"date", "time", "gpu", "sm", "mem", "enc", "dec", "jpg", "ofa", "rxpci", "txpci"}
    out: dict[str, str] = {}
    for c in columns:
        if c in standard:
            continue
        if "sm" in c and "sm" not in out:
            out["sm"] = c
        elif "rx" in c and "rx" not in out:
            out["rx"] = c
        elif "tx" in c and "tx" not in out:
            out["tx"] = c
    return out


def dmon_vs_truth(table: DmonTable, truth: dict[str, Any], gpu: int,
                  min_gap_s: float = MIN_GAP_S) -> dict[str, Any]:
    """What dmon shows during the truth gaps. A gap counts as visible when at least one dmon row
    whose window overlaps it reads sm < 10 % (generous to dmon: any overlap will do)."""
    from evaluation.scoring import truth_gaps

    tg = [g for g in truth_gaps(truth.get("intervals", []), min_gap_s) if g.gpu == gpu]
    rows = [(w, r) for r in table.rows
            if (w := dmon_window(r, table.timing)) is not None
            and (r.values.get("gpu") is None or int(r.values["gpu"] or 0) == gpu)]
    gpm = gpm_columns(table.columns)
    go, end = truth.get("go_wall_s"), truth.get("end_wall_s")
    in_run = [r for w, r in rows if go is not None and end is not None
              and w[0] >= go and w[1] <= end]

    def col_mean(rs: list[DmonRow], col: str | None) -> float | None:
        vals = [v for r in rs if col and (v := r.values.get(col)) is not None]
        return mean(vals) if vals else None

    visible = visible_gpm = 0
    gap_rows: list[DmonRow] = []
    for g in tg:
        over = [r for w, r in rows if w[0] < g.end_s and w[1] > g.start_s]
        gap_rows.extend(over)
        if any((r.values.get("sm") is not None and (r.values["sm"] or 0) < IDLE_PCT)
               for r in over):
            visible += 1
        if gpm.get("sm") and any((r.values.get(gpm["sm"]) is not None
                                  and (r.values[gpm["sm"]] or 0) < IDLE_PCT) for r in over):
            visible_gpm += 1
    n = len(tg)
    return {
        "columns": table.columns,
        "timing": table.timing,
        "rows": len(table.rows),
        "rows_in_run": len(in_run),
        "truth_gaps": n,
        "gaps_visible_sm_lt10": visible,
        "fraction_visible_sm_lt10": visible / n if n else None,
        "gpm_columns": gpm,
        "fraction_visible_gpm_sm_lt10": (visible_gpm / n if n and gpm.get("sm") else None),
        "sm_mean_in_run": col_mean(in_run, "sm"),
        "sm_mean_rows_overlapping_gaps": col_mean(gap_rows, "sm"),
        "rxpci_mb_s_mean_rows_overlapping_gaps": col_mean(gap_rows, "rxpci"),
        "gpm_sm_mean_in_run": col_mean(in_run, gpm.get("sm")),
        "truth_busy_fraction": truth.get("busy_fraction"),
    }


# ------------------------------------------------------------------ overhead runs


def overhead_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean throughput with and without gapwatch, and the slowdown (positive = slower with it)."""
    on = [r["throughput_pps"] for r in runs if r.get("gapwatch") and r.get("throughput_pps")]
    off = [r["throughput_pps"] for r in runs if not r.get("gapwatch") and r.get("throughput_pps")]
    m_on = mean(on) if on else None
    m_off = mean(off) if off else None
    slowdown = (1 - m_on / m_off) * 100 if m_on is not None and m_off else None
    spread = None
    if len(off) >= 2 and m_off:
        spread = (max(off) - min(off)) / m_off * 100
    return {"runs": runs, "with_gapwatch_pps": on, "without_gapwatch_pps": off,
            "mean_with_pps": m_on, "mean_without_pps": m_off, "slowdown_pct": slowdown,
            "without_spread_pct": spread, "goal_slowdown_pct": 1.0,
            "goal_met": None if slowdown is None else slowdown <= 1.0}


# ------------------------------------------------------------------ a whole case folder


def score_dir(case: str | Path) -> dict[str, Any]:
    """Rerun report + scoring over one case folder (see the module docstring)."""
    case = Path(case)
    meta = json.loads((case / CASE_FILES["meta"]).read_text())
    truth = json.loads((case / CASE_FILES["truth"]).read_text())
    scenario = meta.get("scenario") or truth.get("scenario")
    rec = case / CASE_FILES["recording"]
    facts = recording_facts(rec)
    report = build_report_json(rec, report_log_paths(case, facts))
    out = {"case": case.name, "scenario": scenario,
           "score": score_case(report, truth, scenario),
           "recording": facts,
           "report_busy_fraction": [g.get("busy_fraction") for g in report.get("gpus", [])],
           "truth_busy_fraction": truth.get("busy_fraction")}
    dmon = case / CASE_FILES["dmon"]
    if dmon.exists():
        out["dmon"] = dmon_vs_truth(parse_dmon(dmon.read_text(errors="replace")), truth,
                                    int(truth.get("gpu", 0)))
    return out


def find_cases(root: str | Path) -> list[Path]:
    root = Path(root)
    if (root / CASE_FILES["truth"]).exists():
        return [root]
    return sorted(p.parent for p in root.glob(f"*/{CASE_FILES['truth']}"))


def format_row(res: dict[str, Any]) -> str:
    s = res["score"]

    def pct(v: float | None) -> str:
        return "  n/a" if v is None else f"{v * 100:4.0f}%"

    edge = "n/a" if s["median_edge_error_ms"] is None else f"{s['median_edge_error_ms']:.0f} ms"
    lat = res["recording"]["lateness_ms"]
    missed = [k for k, ok in s["goals"].items() if ok is False]
    return (f"{res['scenario']:<15} truth gaps {s['truth_gaps']:>3}  detected {s['detected']:>3}  "
            f"recall {pct(s['recall'])}  precision {pct(s['precision'])}  kind "
            f"{pct(s['kind_accuracy'])}  edge {edge:>7}  BREAKDOWN "
            f"{'yes' if s['breakdown_in_report'] else 'no ':<3}  lateness p99 "
            f"{lat['p99'] if lat['p99'] is None else round(lat['p99'], 1)} ms"
            + (f"  GOALS MISSED: {', '.join(missed)}" if missed else ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", help="a case folder, or a folder of case folders")
    ap.add_argument("--json", action="store_true", help="print the full JSON")
    ap.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = ap.parse_args(argv)
    cases = find_cases(args.path)
    if not cases:
        print(f"gpu_e2e_score: no case folder (with {CASE_FILES['truth']}) under {args.path}",
              file=sys.stderr)
        return 2
    results = [score_dir(c) for c in cases]
    if args.json:
        print(json.dumps(results, indent=1, default=str))
    else:
        for r in results:
            print(format_row(r))
    missed = any(ok is False for r in results for ok in r["score"]["goals"].values())
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
