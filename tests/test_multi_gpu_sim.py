"""Several GPUs on one box, simulated (issue 15's part that needs no multi-GPU machine): GPU 0's
pipeline breaks down (pageable a/b/c under host pressure) while GPU 1 chains (pinned pool). Gaps
and BREAKDOWN must be on GPU 0 only, the prover's worker lines tied to their GPU, and the
dashboard at 80x24 must show both GPUs' states."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_fakes import FakeRuntime, make_config, screen_text

from evaluation.simulate import SimResult, simulate
from gapwatch.cli import main
from gapwatch.config import MAX_SIM_GPUS, Config
from gapwatch.core.detector import GapDetector
from gapwatch.logs.parse import LogParser
from gapwatch.offline.report import build_report
from gapwatch.sinks.recorder import write_recording
from gapwatch.sources.sim import parse_scenarios
from gapwatch.ui.app import GapwatchApp


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SimResult]:
    res = simulate("pageable,chained", seed=2, duration_s=90.0)
    path = tmp_path_factory.mktemp("multi") / "mixed.jsonl"
    write_recording(path, res.header, res.records)
    return path, res


def test_one_scenario_per_gpu_is_parsed_and_checked() -> None:
    assert parse_scenarios("pageable,chained") == ["pageable", "chained"]
    assert parse_scenarios("host-stall", 3) == ["host-stall"] * 3
    with pytest.raises(ValueError, match="2 scenarios for 3 GPUs"):
        parse_scenarios("pageable,chained", 3)
    with pytest.raises(ValueError, match="unknown scenario 'melted'"):
        parse_scenarios("pageable,melted")


def test_more_scenarios_than_the_simulator_runs_are_refused_not_a_recording_it_cannot_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sim:` named 300 scenarios: 300 GPUs ran (past `sim.gpus`' 16) and the recording held
    GPUs 256 on, which no recording reader takes (`bad_header 44, bad_records 924`)."""
    assert len(parse_scenarios(",".join(["chained"] * MAX_SIM_GPUS))) == MAX_SIM_GPUS
    out = tmp_path / "r.jsonl"
    rc = main(["record", "--source", "sim:" + ",".join(["chained"] * 300), "--speed", "0",
               "--duration", "1", "--quiet", "--out", str(out)])
    assert rc == 2
    assert "300 scenarios: the simulator runs at most 16 GPUs" in capsys.readouterr().err
    assert not out.exists()


def test_gaps_and_breakdown_are_on_the_broken_gpu_only(mixed: tuple[Path, SimResult]) -> None:
    path, _ = mixed
    report = build_report(path, Config())
    assert {g.gpu for g in report.gaps} == {0}
    assert len(report.gaps) >= 10 and {g.kind for g in report.gaps} == {"pcie_starved"}
    assert {b.gpu for b in report.breakdowns} == {0}
    finals = {t.gpu: t.final_state for t in report.totals}
    assert finals[1] == "CHAINED"
    busy = {t.gpu: t.busy_s / t.active_s for t in report.totals}
    assert busy[1] > 0.97 > 0.8 > busy[0]


def test_worker_lines_are_tied_to_their_gpu(mixed: tuple[Path, SimResult]) -> None:
    _, res = mixed
    parser = LogParser()
    events = [e for stream, text in res.log_lines
              for e in parser.parse_line(text, stream)]
    assert parser.worker_gpu == {0: 0, 1: 0, 2: 1, 3: 1}
    picked = [e for e in events if e.name == "GPU_PICKUP"]
    assert picked and all(e.worker is not None and e.gpu == e.worker // 2 for e in picked)


async def test_the_dashboard_at_80x24_shows_both_gpus_states(
    mixed: tuple[Path, SimResult], tmp_path: Path
) -> None:
    _, res = mixed
    header = res.header
    rt = FakeRuntime(make_config(tmp_path), gpus=list(header.gpus),
                     detector=GapDetector(Config().detector, list(header.gpus), period_s=0.1))
    for record in res.records:
        rt.session.on_record(record)
    app = GapwatchApp(rt)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        lines = screen_text(app).splitlines()
    gpu0 = next(line for line in lines if "GPU0" in line and "BREAKDOWN" in line)
    gpu1 = next(line for line in lines if "GPU1" in line and "CHAINED" in line)
    assert gpu0 != gpu1
