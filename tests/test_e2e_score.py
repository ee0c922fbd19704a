"""bench/gpu_e2e_score.py, which re-scores the committed H200 cases in CI, without a GPU.

The scoring glue (report JSON -> evaluation.scoring), the recording facts (lateness, live states),
the `nvidia-smi dmon` parser and comparison, the overhead arithmetic, and a whole case folder in
the committed layout, built here from the simulated prover. (The GPU orchestration in
bench/gpu_e2e.py is not tested here: it is not something users run.)
"""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Any

import pytest

from evaluation import gpu_e2e_score as sc
from evaluation.simulate import simulate
from gapwatch.sinks.recorder import Recorder

ROOT = Path(__file__).parent.parent



T0 = 1_796_029_600.0


def truth(*spans: tuple[float, float], **extra: Any) -> dict[str, Any]:
    return {"intervals": [{"worker": i % 2, "partition": i, "start": T0 + a, "end": T0 + b,
                           "h2d_ms": 2000, "pinned": False} for i, (a, b) in enumerate(spans)],
            **extra}


def gap(a: float, b: float, kind: str = "pcie_starved") -> dict[str, Any]:
    return {"gpu": 0, "start_s": T0 + a, "end_s": T0 + b, "duration_s": b - a, "kind": kind}


# ------------------------------------------------------------------ scoring glue


def test_report_gaps_are_scored_against_the_truth_holes() -> None:
    t = truth((0, 1), (1.6, 2.5), (3.2, 4.1), (4.2, 9.0))  # holes: 0.6, 0.7 (and 0.1: no gap)
    report = {"gaps": [gap(1.05, 1.62), gap(2.5, 3.1, "host_stall"), gap(6, 7)],
              "breakdowns": [{"gpu": 0}]}
    s = sc.score_case(report, t, "pageable")
    assert (s["truth_gaps"], s["detected"], s["matched"]) == (2, 3, 2)
    assert s["recall"] == 1.0 and s["precision"] == pytest.approx(2 / 3)
    assert s["kind_accuracy"] == 0.5 and s["wrong_kind"][0]["detected"] == "host_stall"
    assert s["median_edge_error_ms"] == pytest.approx(35, abs=1e-3)  # of 50, 20, 0, 100 ms
    assert s["breakdown_in_report"] is True and s["goals"]["breakdown_when_pageable"] is True
    assert s["goals"]["precision"] is False and s["goals"]["median_edge_error"] is True
    assert len(s["false_positives"]) == 1 and s["kinds_detected"]["pcie_starved"] == 2


def test_scoring_reads_the_report_versions_whose_gaps_it_knows_and_says_it_cannot_read_others(
) -> None:
    """Report JSON 2 changed only `partitions`' pinning: scoring (gaps, breakdowns) reads 1 and
    2 alike; a version it does not know is refused in words, not scored as if it were one."""
    from gapwatch.offline.report import REPORT_SCHEMA_VERSION

    t = truth((0, 1), (1.6, 2.5))
    for version in (1, REPORT_SCHEMA_VERSION):
        report = {"schema_version": version, "gaps": [gap(1.05, 1.62)], "breakdowns": []}
        assert sc.score_case(report, t, "pageable")["matched"] == 1
    with pytest.raises(ValueError, match=f"schema_version {REPORT_SCHEMA_VERSION + 1}: scoring "
                                         "reads 1, 2 only"):
        sc.score_case({"schema_version": REPORT_SCHEMA_VERSION + 1, "gaps": []}, t, "pageable")


def test_chained_scores_a_breakdown_or_any_gap_as_a_failure() -> None:
    t = truth((0, 1), (1.0, 2.0))
    clean = sc.score_case({"gaps": [], "breakdowns": []}, t, "chained")
    assert clean["goals"] == {"recall": True, "precision": True, "kind_accuracy": None,
                              "median_edge_error": None, "no_breakdown_when_chained": True}
    bad = sc.score_case({"gaps": [gap(0.5, 0.9)], "breakdowns": [{"gpu": 0}]}, t, "chained")
    assert bad["precision"] == 0.0 and bad["goals"]["no_breakdown_when_chained"] is False


def test_proc_stat_cpu_survives_a_command_name_with_spaces() -> None:
    stat = "4242 (python3 -m x) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 3 0"
    assert sc.proc_cpu_seconds(stat, 100) == pytest.approx(3.0)


def test_overhead_summary_compares_the_means() -> None:
    runs = [{"gapwatch": on, "throughput_pps": pps} for on, pps in (
        (False, 1.00), (True, 0.99), (True, 0.995), (False, 1.01), (True, None))]
    o = sc.overhead_summary(runs)
    assert o["mean_without_pps"] == pytest.approx(1.005)
    assert o["mean_with_pps"] == pytest.approx(0.9925)
    assert o["slowdown_pct"] == pytest.approx((1 - 0.9925 / 1.005) * 100)
    assert o["goal_met"] is False and o["without_spread_pct"] == pytest.approx(0.01 / 1.005 * 100)
    assert sc.overhead_summary([])["slowdown_pct"] is None


# ------------------------------------------------------------------ nvidia-smi dmon


def dmon_text(start: float, sms: list[int], *, arrival: bool = True, gpm: bool = False) -> str:
    head = "#Date       Time        gpu     sm    mem    enc    dec    jpg    ofa  rxpci  txpci"
    units = "#YYYYMMDD   HH:MM:SS    Idx      %      %      %      %      %      %   MB/s   MB/s"
    if gpm:
        head += "  smutil  pcirx  pcitx"
        units += "       %   MB/s   MB/s"
    lines = [head, units]
    for i, sm in enumerate(sms):
        t = start + i
        row = (f" {time.strftime('%Y%m%d   %H:%M:%S', time.localtime(t))}      0  {sm:5d}"
               f"      0      0      0      0      0   2500     20")
        if gpm:
            row += f"  {max(0, sm - 20):6d}   2500     20"
        lines.append(row)
    if arrival:
        lines = [f"{start + max(0, i - 2) + 0.4:.3f}\t{ln}" for i, ln in enumerate(lines)]
    return "\n".join(lines) + "\n"


def test_dmon_rows_are_read_by_their_header_and_timed_by_arrival() -> None:
    table = sc.parse_dmon(dmon_text(T0, [95, 60, 95, 97, 5]))
    assert table.columns[:4] == ["date", "time", "gpu", "sm"] and len(table.rows) == 5
    assert table.timing == "arrival"
    assert table.rows[1].values["sm"] == 60 and table.rows[1].values["rxpci"] == 2500
    assert table.rows[1].t_stamp_s == pytest.approx(T0 + 1)
    assert sc.dmon_window(table.rows[1], table.timing) == pytest.approx((T0 + 0.4, T0 + 1.4))


def test_dmon_without_arrival_times_falls_back_to_its_own_stamps() -> None:
    table = sc.parse_dmon(dmon_text(T0, [90, 90, 90], arrival=False))
    assert table.timing == "stamp"
    assert sc.dmon_window(table.rows[0], "stamp") == pytest.approx((T0 - 1, T0 + 1))
    assert sc.parse_dmon("garbage\n\n#nothing\n1 2 3\n").rows == []


def test_a_sub_second_gap_averaged_into_a_busy_second_is_invisible_to_dmon() -> None:
    # Busy but for one 0.6 s hole at T0+2.2..2.8 and one 3 s hole at T0+5..8.
    t = truth((0, 2.2), (2.8, 5.0), (8.0, 10.0), go_wall_s=T0 - 0.5, end_wall_s=T0 + 11,
              busy_fraction=0.66)
    sms = [96, 96, 96, 62, 96, 40, 0, 0, 3, 70, 96, 96]  # row i arrives at T0+i+0.4 (i >= 2)
    table = sc.parse_dmon(dmon_text(T0 - 2, sms, gpm=True))
    d = sc.dmon_vs_truth(table, t, gpu=0)
    assert d["truth_gaps"] == 2 and d["gaps_visible_sm_lt10"] == 1
    assert d["fraction_visible_sm_lt10"] == 0.5
    assert d["gpm_columns"] == {"sm": "smutil", "rx": "pcirx", "tx": "pcitx"}
    assert d["fraction_visible_gpm_sm_lt10"] == 0.5
    assert d["rxpci_mb_s_mean_rows_overlapping_gaps"] == 2500


# ------------------------------------------------------------------ a case folder


def write_sim_case(folder: Path, scenario: str, seconds: float = 40.0) -> None:
    """A case in the committed layout, from the simulated prover (no log events recorded, so
    the scorer hands the log files to the report)."""
    folder.mkdir(parents=True)
    res = simulate(scenario, seed=3, duration_s=seconds)
    rec = Recorder(folder / "rec.jsonl.gz")
    rec.on_header(res.header)
    for r in res.records:
        rec.on_record(r)
    rec.close()
    with (folder / "stdout.log").open("w") as out, (folder / "stderr.log").open("w") as err:
        for stream, text in res.log_lines:
            (out if stream == "stdout" else err).write(text + "\n")
    ivs = [{"worker": t.worker, "partition": t.partition, "gpu": t.gpu, "start": t.start_s,
            "end": t.end_s, "h2d_ms": t.h2d_ms, "pinned": t.pinned} for t in res.truth]
    (folder / "truth.json").write_text(json.dumps({"scenario": scenario, "gpu": 0,
                                                   "intervals": ivs}))
    (folder / "meta.json").write_text(json.dumps({"scenario": scenario}))


def test_a_case_folder_is_rescored_from_its_files(tmp_path: Path) -> None:
    write_sim_case(tmp_path / "pageable", "pageable")
    with gzip.open(tmp_path / "pageable" / "rec.jsonl.gz") as fh:
        assert b'"type":"log"' not in fh.read()
    assert [p.name for p in sc.find_cases(tmp_path)] == ["pageable"]
    res = sc.score_dir(tmp_path / "pageable")
    s = res["score"]
    assert s["truth_gaps"] > 3 and s["recall"] >= 0.9 and s["kind_accuracy"] >= 0.9
    assert s["breakdown_in_report"] is True
    assert res["recording"]["gpu_samples"] > 300
    assert all(s["goals"].values()) and sc.main([str(tmp_path), "--check"]) == 0
    assert "pageable" in sc.format_row(res)


def test_check_exits_1_when_a_case_misses_a_goal_and_0_without_check(tmp_path: Path) -> None:
    write_sim_case(tmp_path / "pageable", "pageable")
    # Truth says the GPU was busy all along: every detected gap is a false one.
    truth_file = tmp_path / "pageable" / "truth.json"
    truth_doc = json.loads(truth_file.read_text())
    ivs = truth_doc["intervals"]
    truth_doc["intervals"] = [{**ivs[0], "start": min(i["start"] for i in ivs),
                               "end": max(i["end"] for i in ivs)}]
    truth_file.write_text(json.dumps(truth_doc))
    assert sc.score_dir(tmp_path / "pageable")["score"]["goals"]["precision"] is False
    assert sc.main([str(tmp_path), "--check"]) == 1
    assert sc.main([str(tmp_path)]) == 0


def test_the_score_command_refuses_a_folder_without_cases(tmp_path: Path) -> None:
    assert sc.main([str(tmp_path)]) == 2
