"""bench/gpu_loadgen.py without a GPU: presets, line formats gapwatch must parse, truth, a fake run.

The load generator's torch part only runs on a GPU box; everything it writes (cuzk-style lines,
the truth document) and its threads/queues/lock run here through `--fake` (sleeps instead of
copies and kernels).
"""

from __future__ import annotations

import argparse
import io
import json
import re
from pathlib import Path

import pytest

from evaluation import gpu_loadgen as lg
from evaluation.scoring import truth_gaps
from gapwatch.cuzk.log_lines import PARTITION_KIND
from gapwatch.logs.parse import LogParser

ROOT = Path(__file__).parent.parent

T0 = 1_796_029_597.0


def parse(argv: list[str]) -> argparse.Namespace:
    args: argparse.Namespace = lg.build_parser().parse_args(argv)
    return args


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def wall(self) -> float:
        return T0 + self.t

    def mono(self) -> float:
        return self.t


def one_partition_lines(pinned: bool) -> list[str]:
    """Every line kind the load generator writes, for one partition, in writing order."""
    buf = io.StringIO()
    clock = FakeClock()
    log = lg.CuzkLog(buf, buf, wall=clock.wall, mono=clock.mono)
    log.start_engine(0, 2, 2)
    clock.t = 0.5
    job, p = lg.job_of(13)
    log.synth_start(job, p, pinned, 1536)
    clock.t = 2.0
    log.synth_end(job, p, 1500, pinned)
    log.gpu_pickup(job, 1, p)
    clock.t = 2.1
    log.cpp(lg.lock_acquired_line(100, 0))
    clock.t = 3.0
    for line in lg.lock_region_lines(100, 900, 900, 1000):
        log.cpp(line)
    log.gpu_done(job, 1, p, 1000)
    return buf.getvalue().splitlines()


# ------------------------------------------------------------------ parameters


def test_presets_differ_in_the_way_each_scenario_needs() -> None:
    chained = lg.resolve_params(parse(["--scenario", "chained"]))
    pageable = lg.resolve_params(parse(["--scenario", "pageable"]))
    stall = lg.resolve_params(parse(["--scenario", "host-stall"]))
    xfer = lg.resolve_params(parse(["--scenario", "transfer-bound"]))
    assert chained.pinned and not pageable.pinned and pageable.hogs > 0 and chained.hogs == 0
    # Two synthesis workers (cuzk never runs fewer), each slower than two partitions' compute.
    assert stall.synth_workers == 2 and stall.synth_delay_s > 2 * chained.compute_s
    # transfer-bound: tens of GB per partition against a short compute
    assert xfer.h2d_bytes_per_partition > 30e9 and xfer.compute_s < chained.compute_s
    assert chained.duration_s == 30.0  # the default when neither duration nor partitions given


def test_flags_override_the_preset_and_bad_values_are_refused() -> None:
    p = lg.resolve_params(parse(["--scenario", "pageable", "--hogs", "4", "--abc-mib", "64",
                                 "--pinned", "--partitions", "12"]))
    assert (p.hogs, p.abc_mib, p.pinned, p.partitions, p.duration_s) == (4, 64, True, 12, None)
    with pytest.raises(ValueError, match="unknown scenario"):
        lg.resolve_params(parse(["--scenario", "bogus"]))
    with pytest.raises(ValueError, match="--compute-s"):
        lg.resolve_params(parse(["--compute-s", "0"]))


def test_partitions_are_numbered_ten_to_a_job() -> None:
    assert lg.job_of(0) == ("porep-1000-0", 0)
    assert lg.job_of(13) == ("porep-1000-1", 3)


# ------------------------------------------------------------------ line formats


def test_tracing_line_matches_the_reference_layout() -> None:
    line = lg.tracing_line(T0 + 0.553439, "starting cuzk engine pipeline_enabled=true")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z  INFO cuzk_core::engine: "
                        r"starting cuzk engine pipeline_enabled=true", line), line
    assert lg.tracing_line(T0, "x", level="WARN").split(" ")[1:3] == ["", "WARN"]


@pytest.mark.parametrize("pinned", [True, False])
def test_gapwatch_parses_every_line_the_load_generator_writes(pinned: bool) -> None:
    lines = one_partition_lines(pinned)
    parser = LogParser()
    events = [e for line in lines for e in parser.parse_line(line, "combined", 0, T0 + 99)]
    assert parser.counters["unparsed"] == 0, [e.raw for e in events if e.kind == "unparsed"]
    kinds = {e.kind for e in events}
    assert {"tracing", "timeline", "cuzk_timing", "cuzk_ntt_h", PARTITION_KIND} <= kinds
    # TIMELINE offsets are anchored on `starting cuzk engine`: GPU_START at +2.0 s.
    start = next(e for e in events if e.name == "GPU_START")
    assert start.time_source == "timeline" and start.t_wall_s == pytest.approx(T0 + 2.0)
    assert (start.worker, start.partition, start.job_id, start.gpu) == (1, 3, "porep-1000-1", 0)
    assert parser.worker_gpu == {0: 0, 1: 0}
    # The in-lock C++ lines are attributed to the worker named by the prove_start line, and the
    # busy interval is the 900 ms before it.
    lock = next(e for e in events if e.kind == PARTITION_KIND)
    assert (lock.worker, lock.partition) == (1, 3)
    assert lock.fields["gpu_busy_start_s"] == pytest.approx(T0 + 2.1)
    synth = next(e for e in events if e.name.startswith("partition synthesis complete"))
    assert synth.fields["is_pinned"] is pinned and synth.fields["synth_ms"] == 1500
    assert synth.partition == 3 and synth.job_id == "porep-1000-1"
    warnings = {e.warning for e in events if e.warning}
    assert warnings == (set() if pinned else {"unpinned", "pinned_pool_fallback"})


def test_timeline_before_engine_start_is_a_programming_error() -> None:
    log = lg.CuzkLog(io.StringIO(), io.StringIO())
    with pytest.raises(RuntimeError):
        log.timeline("SYNTH_START", "j", "partition=0")


# ------------------------------------------------------------------ truth


def iv(start: float, end: float, worker: int = 0, seq: int = 0) -> lg.Interval:
    job, p = lg.job_of(seq)
    return lg.Interval(worker, seq, job, p, 0, T0 + start, T0 + end, 2000.0, False, 0.0, 900.0)


def test_truth_document_has_the_shared_layout_and_the_run_facts() -> None:
    p = lg.resolve_params(parse(["--scenario", "pageable"]))
    ivs = [iv(0, 1, 0, 0), iv(1.0, 2.0, 1, 1), iv(2.6, 3.5, 0, 2), iv(3.6, 4.5, 1, 3)]
    doc = lg.build_truth(p, ivs, go_wall_s=T0 - 1, end_wall_s=T0 + 5, stopped_by="duration",
                         errors=[])
    first = doc["intervals"][0]
    assert {"worker", "partition", "start", "end", "h2d_ms", "pinned"} <= first.keys()
    assert doc["mode"] == "pageable" and doc["hogs"] == 12 and doc["partitions_completed"] == 4
    # One hole of 0.6 s (>= 0.3) and one of 0.1 s (not a gap), as evaluation.scoring sees them.
    assert doc["truth_gaps"] == 1 == len(truth_gaps(doc["intervals"]))
    assert doc["busy_fraction"] == pytest.approx(3.8 / 4.5)
    assert doc["throughput_pps"] == pytest.approx(3 / 3.5)
    assert doc["h2d_gb_per_s_median"] == pytest.approx(3 * 1536 * 2**20 / 2.0 / 1e9)
    json.dumps(doc)  # serialisable as is
    assert "partitions=4" in lg.summary_line(doc)


def test_throughput_needs_two_partitions() -> None:
    assert lg.throughput_pps([]) is None
    assert lg.throughput_pps([iv(0, 1)]) is None


# ------------------------------------------------------------------ a whole fake run


def test_fake_run_writes_live_logs_and_truth_that_agree(tmp_path: Path) -> None:
    log_path, truth = tmp_path / "combined.log", tmp_path / "truth.json"
    rc = lg.main(["--scenario", "pageable", "--fake", "--hogs", "0", "--abc-mib", "64",
                  "--compute-s", "0.05", "--synth-threads", "2", "--partitions", "6",
                  "--stdout-log", str(log_path), "--stderr-log", str(log_path),
                  "--truth", str(truth)])
    assert rc == 0
    doc = json.loads(truth.read_text())
    assert doc["stopped_by"] == "partitions" and doc["errors"] == []
    assert doc["partitions_completed"] >= 6
    parser = LogParser()
    events = [e for line in log_path.read_text().splitlines()
              for e in parser.parse_line(line, "combined", 0, T0)]
    assert parser.counters["unparsed"] == 0
    locks = [e for e in events if e.kind == PARTITION_KIND]
    # Every partition in the truth was named by its prove_start line, by worker and partition.
    named = {(e.worker, e.partition) for e in locks}
    assert {(i["worker"], i["job_partition"]) for i in doc["intervals"]} <= named
    # Compute intervals never overlap: the compute lock is held around them.
    spans = sorted((i["start"], i["end"]) for i in doc["intervals"])
    assert all(b[0] >= a[1] for a, b in zip(spans, spans[1:], strict=False))


def test_the_synthesis_workers_are_cuzks_formula_never_one(tmp_path: Path) -> None:
    """engine.rs (curio e0294b0f): `synth_worker_count = max(2, min(total_bytes / 14 GiB,
    max_parallel_synthesis))`. `--synth-threads` is that max_parallel_synthesis: asked for 1, the
    load generator logs 2 and runs 2 (two syntheses under way before the first ends), as cuzk
    would; the host-stall preset used to log `synth_worker_count=1`."""
    from gapwatch.cuzk.pipeline import synth_worker_count

    for scenario in lg.SCENARIOS:
        for given in ([], ["--synth-threads", "1"], ["--synth-threads", "40"]):
            p = lg.resolve_params(parse(["--scenario", scenario, *given]))
            assert p.synth_workers == synth_worker_count(lg.BUDGET_BYTES, p.synth_threads) >= 2
    log_path = tmp_path / "combined.log"
    rc = lg.main(["--scenario", "host-stall", "--fake", "--synth-threads", "1",
                  "--synth-delay-s", "0.3", "--abc-mib", "8", "--compute-s", "0.02",
                  "--partitions", "2", "--stdout-log", str(log_path),
                  "--stderr-log", str(log_path)])
    assert rc == 0
    lines = log_path.read_text().splitlines()
    (start,) = [line for line in lines if "starting pipeline: synthesis task" in line]
    assert "synth_worker_count=2 " in start
    stages = [line.split(",")[2] for line in lines if line.startswith("TIMELINE,")
              and line.split(",")[2] in ("SYNTH_START", "SYNTH_END")]
    assert stages[:2] == ["SYNTH_START", "SYNTH_START"]


def test_go_file_that_never_appears_fails_with_its_own_exit_code(tmp_path: Path) -> None:
    rc = lg.main(["--fake", "--partitions", "1", "--stdout-log", str(tmp_path / "o"),
                  "--go-file", str(tmp_path / "never"), "--go-timeout", "0.2",
                  "--ready-file", str(tmp_path / "ready")])
    assert rc == 3
    assert (tmp_path / "ready").exists()


def test_without_torch_the_real_backend_explains_itself(tmp_path: Path) -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        rc = lg.main(["--partitions", "1", "--stdout-log", str(tmp_path / "o")])
        assert rc == 2
    else:
        pytest.skip("torch is installed here")


def test_a_partition_is_logged_queued_for_the_gpu_only_once_it_is_in_the_queue(
        tmp_path: Path) -> None:
    """cuzk writes GPU_QUEUE as it adds a synthesised partition to its GPU queue (engine.rs
    1778-1779), which never blocks; the load generator wrote it before a blocking put into its
    small queue, so a partition whose synthesis thread was still waiting to put it read as
    queued, and at the run's end as never picked up (an H200 run's last partition). Queued but
    not picked up at the end: at most what the queue holds."""
    log_path, truth = tmp_path / "combined.log", tmp_path / "truth.json"
    rc = lg.main(["--scenario", "pageable", "--fake", "--hogs", "0", "--abc-mib", "64",
                  "--compute-s", "0.4", "--synth-threads", "3", "--queue-depth", "1",
                  "--duration", "2", "--stdout-log", str(log_path), "--stderr-log",
                  str(log_path), "--truth", str(truth)])
    assert rc == 0
    text = log_path.read_text()
    queued = {line.rsplit(",", 1)[1] + line.split(",")[3] for line in text.splitlines()
              if ",GPU_QUEUE," in line}
    picked = {line.rsplit(",", 1)[1].replace("worker=0,", "").replace("worker=1,", "")
              + line.split(",")[3] for line in text.splitlines() if ",GPU_PICKUP," in line}
    assert queued and picked
    assert len(queued - picked) <= 1, sorted(queued - picked)
    # Each partition queued before it is picked up, as in cuzk's log.
    order = [("Q" if ",GPU_QUEUE," in line else "P", line.split(",")[3] + line.rsplit("=", 1)[1])
             for line in text.splitlines() if ",GPU_QUEUE," in line or ",GPU_PICKUP," in line]
    first: dict[str, str] = {}
    for what, key in order:
        first.setdefault(key, what)
    assert set(first.values()) == {"Q"}
