"""One truth for gaps: every output names the same gaps, with the same ids, kinds and durations.

For each input (the H200 end-to-end recordings, with /status and with the copy trace, the two
shared H200 traces, simulated sessions), the gaps found by `gapwatch report --json` must be exactly those in:
- `gapwatch record`'s live gap lines and its closing line (replaying the input as a source),
- `gapwatch replay --headless`'s closing line,
- `/metrics` (`gapwatch_gaps_total` by kind, scraped once the data has ended),
- the Perfetto export (`gapwatch export --format perfetto`),
- a snapshot's `gaps.json` taken at the end of the session.
A gap is (id, GPU, kind, duration to the ms).
"""

from __future__ import annotations

import re
import urllib.request
from collections import Counter
from pathlib import Path

import msgspec
import pytest

from evaluation.simulate import simulate
from gapwatch.cli import main
from gapwatch.config import Config
from gapwatch.core.codec import GAP_JSON_LEFT_OUT
from gapwatch.core.models import Gap
from gapwatch.engine.runtime import build_runtime
from gapwatch.offline.perfetto import GPU_PID_BASE
from gapwatch.offline.report import build_report, to_json
from gapwatch.sinks.recorder import write_recording
from gapwatch.sinks.snapshot import GAPS_NAME, write_snapshot

DATA = Path(__file__).parent / "data"
H200 = sorted([*(DATA / "h200-e2e").glob("*/rec.jsonl.gz"),
               *(DATA / "h200-copytrace").glob("*/rec.jsonl.gz")])

GapKey = tuple[int, int, str, float]
#: What `gapwatch.core.codec.gap_json` gives: the record's fields, its type, and two figures.
GAP_JSON_KEYS = {*Gap.__struct_fields__, "type", "open", "link_fraction"} - {*GAP_JSON_LEFT_OUT}


def _key(gap_id: int, gpu: int, kind: str, duration_s: float) -> GapKey:
    return (gap_id, gpu, kind, round(duration_s, 3))


def _by_kind(gaps: set[GapKey]) -> Counter[str]:
    return Counter(kind for _id, _gpu, kind, _d in gaps)


@pytest.fixture(scope="module")
def sim_inputs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = []
    for scenario, seed, gpus in (("pageable", 4, 2), ("host-stall", 2, 1),
                                 ("transfer-bound", 5, 1)):
        res = simulate(scenario, seed=seed, duration_s=70.0, gpus=gpus)
        path = tmp_path_factory.mktemp("sim") / f"{scenario}.jsonl"
        write_recording(path, res.header, res.records)
        out.append(path)
    return out


def _report_gaps(path: Path) -> set[GapKey]:
    doc = to_json(build_report(path, Config()))
    assert all(set(g) == GAP_JSON_KEYS for g in doc["gaps"])
    return {_key(g["gap_id"], g["gpu"], g["kind"], g["duration_s"]) for g in doc["gaps"]}


def _perfetto_gaps(path: Path, out: Path) -> set[GapKey]:
    assert main(["export", str(path), "--format", "perfetto", "--out", str(out)]) == 0
    events = msgspec.json.decode(out.read_bytes())["traceEvents"]
    gaps = [e for e in events if e.get("cat") == "gap" and e.get("ph") == "X"]
    assert all(set(e["args"]) == GAP_JSON_KEYS for e in gaps)
    return {_key(e["args"]["gap_id"], int(e["pid"]) - GPU_PID_BASE, e["name"], e["args"]["duration_s"])
            for e in gaps}


def _scrape_gaps_total(url: str) -> Counter[str]:
    body = urllib.request.urlopen(url, timeout=5).read().decode()
    out: Counter[str] = Counter()
    for m in re.finditer(r'^gapwatch_gaps_total\{gpu="\d+",kind="(\w+)"\} ([\d.]+)$', body, re.M):
        out[m.group(1)] += int(float(m.group(2)))
    return +out


def _session_outputs(path: Path, tmp: Path) -> tuple[set[GapKey], Counter[str]]:
    """Replay `path` through a live runtime (the dashboard's path, headless) with /metrics on;
    return the gaps of a snapshot taken at the end and the scraped gaps_total by kind."""
    config = Config().model_copy(update={
        "prometheus": Config().prometheus.model_copy(update={"listen": "127.0.0.1:0"}),
        "snapshot": Config().snapshot.model_copy(update={"history_s": 3600.0}),
    })
    rt = build_runtime(config, f"replay:{path}", speed=0)
    rt.start()
    try:
        assert rt.wait(60)
        rt.session.close()  # end of data: settle the detector (what stop() does first)
        assert rt.exporter is not None
        scraped = _scrape_gaps_total(rt.exporter.url)
        snap_dir = write_snapshot(tmp, rt.store.snapshot(), rt.header, config, t_wall_s=0.0,
                                  reason="test")
    finally:
        rt.stop()
    gaps = msgspec.json.decode((snap_dir / GAPS_NAME).read_bytes())
    # The same JSON shape as the report's and the Perfetto export's (one function makes them).
    assert all(set(g) == GAP_JSON_KEYS for g in gaps)
    snapshot = {_key(g["gap_id"], g["gpu"], g["kind"], g["duration_s"]) for g in gaps}
    return snapshot, scraped


def _record_outputs(path: Path, out: Path, capsys: pytest.CaptureFixture[str]
                    ) -> tuple[set[GapKey], Counter[str]]:
    """`gapwatch record --source replay:FILE`: its live gap lines and its closing counts."""
    capsys.readouterr()
    assert main(["record", "--source", f"replay:{path}", "--speed", "0", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    lines = {_key(int(m[0]), int(m[1]), m[3], float(m[2]))
             for m in re.findall(r"^gap (\d+) gpu(\d+) ([\d.]+)s (\w+):", err, re.M)}
    closing = re.search(r"gaps: ([^;]*);", err.splitlines()[-1])
    assert closing is not None, err
    return lines, _parse_counts(closing.group(1))


def _replay_counts(path: Path, capsys: pytest.CaptureFixture[str]) -> Counter[str]:
    capsys.readouterr()
    assert main(["replay", str(path), "--headless", "--speed", "0"]) == 0
    closing = re.search(r"gaps: ([^;]*);", capsys.readouterr().err)
    assert closing is not None
    return _parse_counts(closing.group(1))


def _parse_counts(text: str) -> Counter[str]:
    return Counter({k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", text)})


def _check(path: Path, tmp: Path, capsys: pytest.CaptureFixture[str]) -> set[GapKey]:
    report = _report_gaps(path)
    assert _perfetto_gaps(path, tmp / "trace.json") == report
    snapshot, scraped = _session_outputs(path, tmp)
    assert snapshot == report
    assert scraped == _by_kind(report)
    lines, closing = _record_outputs(path, tmp / "again.jsonl", capsys)
    assert lines == report
    assert closing == _by_kind(report)
    assert _replay_counts(path, capsys) == _by_kind(report)
    return report


@pytest.mark.parametrize("path", H200, ids=[f"{p.parent.parent.name}/{p.parent.name}" for p in H200])
def test_h200_recordings_give_the_same_gaps_in_every_output(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _check(path, tmp_path, capsys)
    if path.parent.name == "chained":
        assert report == set()  # the workers kept the GPU busy: no gap anywhere
    else:
        assert len(report) >= 8  # a real comparison, not of two empty sets


@pytest.mark.parametrize("name", ["pageable.csv", "pinned.csv"])
def test_shared_h200_traces_give_the_same_gaps_in_every_output(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _check(DATA / name, tmp_path, capsys)
    assert (len(report) > 0) == (name == "pageable.csv")


def test_simulated_sessions_give_the_same_gaps_in_every_output(
    sim_inputs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kinds: Counter[str] = Counter()
    for k, path in enumerate(sim_inputs):
        (tmp_path / str(k)).mkdir()
        kinds += _by_kind(_check(path, tmp_path / str(k), capsys))
    assert set(kinds) >= {"pcie_starved", "host_stall", "transfer_bound"}


def test_a_live_simulated_record_says_what_report_finds_in_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The live path (simulated prover, its log parsed as it is written, late evidence
    re-publishing closed gaps) against `report` of the recording it wrote."""
    out = tmp_path / "live.jsonl"
    capsys.readouterr()
    assert main(["record", "--source", "sim:pageable", "--speed", "0", "--duration", "180",
                 "--out", str(out)]) == 0
    err = capsys.readouterr().err
    closing = re.search(r"gaps: ([^;]*);", err.splitlines()[-1])
    assert closing is not None
    lines = {_key(int(m[0]), int(m[1]), m[3], float(m[2]))
             for m in re.findall(r"^gap (\d+) gpu(\d+) ([\d.]+)s (\w+):", err, re.M)}
    report = _report_gaps(out)
    assert len(report) > 20
    assert lines == report
    assert _parse_counts(closing.group(1)) == _by_kind(report)
