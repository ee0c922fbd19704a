"""CSV export: the shared-trace layout, read back by `read_any`, giving the report the same gaps."""

from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path

import pytest

from evaluation.simulate import simulate
from gapwatch.cli import main
from gapwatch.config import Config, build_config
from gapwatch.core.models import GpuInfo, GpuSample, HostSample, Record, SessionHeader
from gapwatch.offline.csv_export import CsvExporter
from gapwatch.offline.report import build_report
from gapwatch.sinks.recorder import write_recording
from gapwatch.sources.files import read_any
from gapwatch.sources.trace_csv import COLUMN_NAMES, CsvRow

DATA = Path(__file__).parent / "data"


def _gpu(t: float, gpu: int = 0, sm: float | None = 55.5, util: float | None = None) -> GpuSample:
    return GpuSample(gpu=gpu, t_mono_ns=int(t * 1e9), t_wall_s=t, interval_ns=100_000_000,
                     sm_active_pct=sm, gpu_util_pct=util, pcie_rx_bytes_per_s=2.5e9,
                     pcie_tx_bytes_per_s=0.1 + 0.2)


def _host(t: float, mem: float | None, psi: float | None = None) -> HostSample:
    return HostSample(t_mono_ns=int(t * 1e9), t_wall_s=t, interval_ns=None, mem_used_pct=mem,
                      mem_available_bytes=None, swap_used_bytes=None, cpu_busy_pct=None,
                      psi_mem_some_avg10=psi, psi_mem_full_avg10=None, psi_mem_some_share=None,
                      psi_mem_full_share=None, major_faults_per_s=None)


def test_a_read_row_has_a_field_for_every_declared_column_and_no_other() -> None:
    # A column declared without its field (or a field left behind) would make every row a bad
    # one: the row is built from the cells by column name.
    assert tuple(f.name for f in dataclasses.fields(CsvRow)) == COLUMN_NAMES


def _rows(text: str) -> list[dict[str, str]]:
    """The GPU rows (host samples have rows of their own, with an empty `gpu`)."""
    return [row for row in csv.DictReader(io.StringIO(text)) if row["gpu"]]


def test_rows_use_the_shared_layout_and_missing_readings_are_empty_cells() -> None:
    out = io.StringIO()
    ex = CsvExporter(out, tolerance_s=0.1)
    for r in (_gpu(10.0, sm=None), _host(10.0, 40.0), _gpu(10.1)):
        ex.add(r)
    ex.close()
    assert out.getvalue().splitlines()[0] == ",".join(COLUMN_NAMES)
    first, second = _rows(out.getvalue())
    assert first["sm_active_pct"] == "" and first["gpu_util_pct"] == ""
    assert first["host_mem_used_pct"] == "40.0" and first["host_psi_mem_some_avg10"] == ""
    assert second["pcie_tx_bytes_per_s"] == repr(0.1 + 0.2)  # exact, not rounded


def test_host_columns_come_from_the_nearest_host_sample_even_when_it_arrives_later() -> None:
    out = io.StringIO()
    ex = CsvExporter(out, tolerance_s=0.1)
    # Tick 1: GPU samples first, host after; tick 2: host first. Tick 3: no host at all.
    for r in (_gpu(1.0, 0), _gpu(1.0, 1), _host(1.0, 10.0), _host(1.1, 11.0), _gpu(1.1, 0),
              _gpu(1.5, 0)):
        ex.add(r)
    ex.close()
    mem = [(row["gpu"], row["host_mem_used_pct"]) for row in _rows(out.getvalue())]
    assert mem == [("0", "10.0"), ("1", "10.0"), ("0", "11.0"), ("0", "")]


def test_a_recording_with_holes_reads_back_with_the_same_values(tmp_path: Path) -> None:
    header = SessionHeader(gapwatch_version="t", host="box", source="sim", started_wall_s=1.0,
                           started_mono_ns=0, period_ms=100.0,
                           gpus=[GpuInfo(index=0), GpuInfo(index=1)])
    records: list[Record] = [_host(1.0, 30.0, 2.5), _gpu(1.0, 0, sm=None, util=80.0), _gpu(1.0, 1),
               _host(1.1, 31.0), _gpu(1.1, 0, sm=12.25), _gpu(1.1, 1, sm=0.0)]
    src = tmp_path / "run.jsonl"
    write_recording(src, header, records)
    out = tmp_path / "run.csv"
    assert main(["export", str(src), "--format", "csv", "--out", str(out)]) == 0
    back = [r for r in read_any(out).records if isinstance(r, GpuSample)]
    assert [(s.gpu, s.t_wall_s, s.sm_active_pct, s.gpu_util_pct, s.pcie_rx_bytes_per_s)
            for s in back] == [(s.gpu, s.t_wall_s, s.sm_active_pct, s.gpu_util_pct,
                                s.pcie_rx_bytes_per_s)
                               for s in records if isinstance(s, GpuSample)]
    hosts = [r for r in read_any(out).records if isinstance(r, HostSample)]
    assert [(h.t_wall_s, h.mem_used_pct, h.psi_mem_some_avg10) for h in hosts] == [
        (1.0, 30.0, 2.5), (1.1, 31.0, None)]


def test_round_trip_through_csv_gives_the_report_the_same_gaps(tmp_path: Path) -> None:
    """pageable trace -> export csv -> read_any -> report: the same gaps, kinds and times."""
    config = Config()
    original = build_report(DATA / "pageable.csv", config)
    out = tmp_path / "again.csv"
    assert main(["export", str(DATA / "pageable.csv"), "--format", "csv", "--out", str(out)]) == 0
    again = build_report(out, config)

    def key(r: object) -> list[tuple[int, str, float, float | None, float, str]]:
        return [(g.gpu, g.kind, g.start_s, g.end_s, g.duration_s, g.hint)
                for g in r.gaps]  # type: ignore[attr-defined]

    assert len(original.gaps) >= 5
    assert key(again) == key(original)
    assert [(s.state, s.t_wall_s) for s in again.states] == [
        (s.state, s.t_wall_s) for s in original.states]


def test_exporting_onto_the_input_is_refused(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "t.csv"
    src.write_bytes((DATA / "pageable.csv").read_bytes())
    assert main(["export", str(src), "--format", "csv", "--out", str(src)]) == 2
    assert "overwrite" in capsys.readouterr().err
    assert src.read_bytes() == (DATA / "pageable.csv").read_bytes()


@pytest.mark.parametrize("given", ["folder", "glob"])
def test_exporting_a_folder_onto_one_of_its_own_segments_is_refused_not_the_segment_replaced(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str) -> None:
    # `export seg --out seg/gw.000001.jsonl` passed the check (the folder is not the file) and
    # renamed the trace over the first segment: the input's records gone, and the next read
    # of the folder said "not a gapwatch recording; skipped" of it.
    folder = tmp_path / "seg"
    folder.mkdir()
    sim = simulate("pageable", seed=1, duration_s=5)
    write_recording(folder / "gw.000001.jsonl", sim.header, list(sim.records))
    before = (folder / "gw.000001.jsonl").read_bytes()
    src = str(folder) if given == "folder" else str(folder / "gw.*.jsonl")
    for fmt in ("csv", "perfetto"):
        assert main(["export", src, "--format", fmt, "--out",
                     str(folder / "gw.000001.jsonl")]) == 2
        assert "would overwrite the input" in capsys.readouterr().err
        assert (folder / "gw.000001.jsonl").read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["gw.000001.jsonl"]  # no temporary


@pytest.mark.parametrize("named", ["--log", "a --log link", "a --log glob", "[logs] paths glob"])
def test_exporting_onto_a_log_file_is_refused_not_the_log_replaced(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], named: str) -> None:
    # `export rec --log stderr.log --out stderr.log` exited 0 and renamed the trace over the
    # prover's log (it began `{"traceEvents":`): the check compared --out with the recordings
    # the export reads only.
    rec = tmp_path / "rec.jsonl"
    sim = simulate("pageable", seed=1, duration_s=5)
    write_recording(rec, sim.header, list(sim.records))
    log = tmp_path / "stderr.log"
    log.write_bytes(b"2026-11-30T10:05:19.233Z  INFO cuzk_core::engine: started\n")
    before = log.read_bytes()
    args = ["export", str(rec)]
    if named == "--log":
        args += ["--log", str(log)]
    elif named == "a --log link":
        (tmp_path / "link.log").symlink_to(log)
        args += ["--log", str(tmp_path / "link.log")]
    elif named == "a --log glob":
        args += ["--log", str(tmp_path / "std*.log")]
    else:
        config = tmp_path / "gapwatch.toml"
        config.write_text(f'[logs]\npaths = ["{tmp_path}/std*.log"]\n')
        args += ["--config", str(config)]
    for fmt in ("perfetto", "csv"):
        assert main([*args, "--format", fmt, "--out", str(log)]) == 2
        assert "would overwrite the input" in capsys.readouterr().err
        assert log.read_bytes() == before
    assert main([*args, "--out", str(tmp_path / "t.json")]) == 0  # elsewhere: written


def _gap_edges(report: object) -> list[tuple[int, int, str, float, float]]:
    return [(g.gap_id, g.gpu, g.kind, g.start_s, g.end_s)
            for g in report.gaps]  # type: ignore[attr-defined]


def _same_to_the_millisecond(a: list[tuple[int, int, str, float, float]],
                             b: list[tuple[int, int, str, float, float]]) -> None:
    assert [g[:3] for g in a] == [g[:3] for g in b]  # ids, GPUs, kinds
    for (_, _, _, s0, e0), (_, _, _, s1, e1) in zip(a, b, strict=True):
        assert abs(s1 - s0) < 0.001 and abs(e1 - e0) < 0.001


@pytest.mark.parametrize("case", ["h200-e2e/pageable", "h200-e2e/host-stall",
                                  "h200-e2e/transfer-bound", "h200-e2e/chained",
                                  "h200-copytrace/pageable"])
def test_a_real_h200_recording_read_back_from_its_csv_gives_the_same_gaps_and_states(
    tmp_path: Path, case: str,
) -> None:
    """recording -> export csv -> report: every gap's start and end within 1 ms (they were all
    100 ms off: the CSV lost each sample's source, so the GPM lag was applied where it had not
    been, or not where it had), the same ids and kinds, the same states (a GPU silent while the
    host sampler went on is NO_DATA in both: host samples have rows of their own)."""
    src = DATA / case / "rec.jsonl.gz"
    out = tmp_path / "back.csv"
    assert main(["export", str(src), "--format", "csv", "--out", str(out)]) == 0
    # A CSV has no copies: with the copy trace's pageable witness the recording's BREAKDOWN
    # comes sooner than the CSV's can (docs/export.md); without it, every state is the same.
    config = build_config({"detector": {"breakdown_pageable_witness": False}})
    original, again = build_report(src, config, workers=1), build_report(out, config, workers=1)
    assert len(original.gaps) == len(again.gaps)
    _same_to_the_millisecond(_gap_edges(original), _gap_edges(again))
    assert [(s.gpu, s.state, s.t_mono_ns) for s in again.states] == [
        (s.gpu, s.state, s.t_mono_ns) for s in original.states]


@pytest.mark.parametrize("scenario", ["pageable", "host-stall", "transfer-bound", "chained"])
def test_a_simulated_session_read_back_from_its_csv_gives_the_same_gaps(
    tmp_path: Path, scenario: str,
) -> None:
    sim = simulate(scenario, duration_s=45.0)
    src = tmp_path / "sim.jsonl"
    write_recording(src, sim.header, sim.records)
    out = tmp_path / "sim.csv"
    assert main(["export", str(src), "--format", "csv", "--out", str(out)]) == 0
    original, again = build_report(src, Config(), workers=1), build_report(out, Config(), workers=1)
    if scenario != "chained":
        assert original.gaps
    _same_to_the_millisecond(_gap_edges(original), _gap_edges(again))


def test_an_exported_row_with_a_bad_source_or_time_is_skipped_and_said(tmp_path: Path) -> None:
    """gapwatch's own columns are read as strictly as the shared ones: a source gapwatch does
    not know, a `t_mono_ns` beyond 64 bits or a flag that is not 0/1 makes a bad row, counted
    and said with its line; the other rows are read."""
    head = ",".join(COLUMN_NAMES)
    good = "10.0,0,50.0,,1e9,1e6,,,10000000000,100000000,gpm,gpm,0,63e9,,,"
    bad = ["10.1,0,50.0,,1e9,1e6,,,10100000000,100000000,nvlink,gpm,0,63e9,,,",
           f"10.2,0,50.0,,1e9,1e6,,,{2**64},100000000,gpm,gpm,0,63e9,,,",
           "10.3,0,50.0,,1e9,1e6,,,10300000000,100000000,gpm,gpm,yes,63e9,,,"]
    path = tmp_path / "x.csv"
    path.write_text("\n".join([head, good, *bad, "10.4,,,,,,40.0,,10400000000,,,,,,,,"]) + "\n")
    rec = read_any(path)
    records = list(rec.records)
    assert [type(r).__name__ for r in records] == ["GpuSample", "HostSample"]
    assert rec.counters["bad_records"] == 3
    assert any(":3: bad row (sm_source: source 'nvlink'" in p for p in rec.problems)
    assert any(":4: bad row (t_mono_ns:" in p for p in rec.problems)


@pytest.mark.parametrize("fmt", ["csv", "perfetto"])
def test_an_out_that_is_a_directory_is_one_line_exit_2_and_nothing_is_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str,
) -> None:
    """`export --out DIR` raised IsADirectoryError (a traceback, exit 1) and left DIR.part
    (1.2 MB) beside it; a missing folder and a device are refused the same way."""
    out = tmp_path / "out"
    out.mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    for target in (out, tmp_path / "missing" / "x.csv", Path("/dev/null")):
        assert main(["export", str(DATA / "pageable.csv"), "--format", fmt,
                     "--out", str(target)]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert err.startswith(f"gapwatch export: --out {target}")
    assert "is a directory; give a file name inside it" in \
        (main(["export", str(DATA / "pageable.csv"), "--format", fmt, "--out", str(out)]),
         capsys.readouterr().err)[1]
    assert sorted(p.name for p in tmp_path.iterdir()) == before and not list(out.iterdir())


def test_the_csv_exports_closing_line_counts_the_host_rows_it_wrote_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`export --format csv` said "wrote ...: 1000 rows" of a file of 2000 rows: the host
    samples' own rows were not counted."""
    res = simulate("pageable", seed=1, duration_s=5.0)
    rec = tmp_path / "r.jsonl"
    write_recording(rec, res.header, res.records)
    out = tmp_path / "r.csv"
    assert main(["export", str(rec), "--format", "csv", "--out", str(out)]) == 0
    said = capsys.readouterr().err
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    gpu = sum(1 for r in rows if r["gpu"])
    host = len(rows) - gpu
    assert gpu and host
    assert f"{gpu} GPU rows and {host} host rows" in said


@pytest.mark.parametrize("fmt", ["csv", "perfetto"])
def test_an_export_into_the_folder_it_reads_says_no_temporary_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str,
) -> None:
    """`export DIR --out DIR/x.csv` warned `1 entry not named *.jsonl or *.jsonl.gz, not
    read: .x.csv.jdu7uc6d.part`: its own temporary, gone by then. An earlier export's output
    in the folder is not a recording, said in the folder rule's words; a temporary never."""
    sim = simulate("pageable", seed=1, duration_s=5)
    write_recording(tmp_path / "gw.jsonl", sim.header, sim.records)
    assert main(["export", str(tmp_path), "--format", fmt, "--out",
                 str(tmp_path / "x.out")]) == 0
    first = capsys.readouterr().err
    assert ".part" not in first and "not read" not in first
    assert main(["export", str(tmp_path), "--format", fmt, "--out",
                 str(tmp_path / "y.out")]) == 0
    second = capsys.readouterr().err
    assert ".part" not in second
    assert "1 entry not named *.jsonl or *.jsonl.gz, not read: x.out" in second
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gw.jsonl", "x.out", "y.out"]
