"""Readings a recording holds that no sampler writes (the second attack pass on the offline
readers): a sample's `interval_ns` its spacing belies, PCIe rates no link carries. Each is said
and counted, and moves neither the working span nor a gap's kind: the report is the one the
honest readings give, as a header's lies are (test_header_lies.py)."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from shared_files import sim_recording_bytes
from sim_recordings import report_of


def _recording(tmp_path: Path, name: str,
               change: Callable[[int, dict[str, Any]], None] | None = None) -> Path:
    """The simulator's pageable run, 60 s of one GPU, its `n`-th GPU sample passed to
    `change` (which edits it in place)."""
    lines = sim_recording_bytes(seed=3, duration_s=60.0).splitlines(keepends=True)
    n = 0
    for i, line in enumerate(lines):
        doc = msgspec.json.decode(line)
        if doc.get("type") == "gpu" and change is not None:
            change(n, doc)
            n += 1
            lines[i] = msgspec.json.encode(doc) + b"\n"
    path = tmp_path / name
    path.write_bytes(b"".join(lines))
    return path


def _report(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = msgspec.json.decode(report_of(path, "--json"))
    return doc


def _lying_interval(n: int, doc: dict[str, Any]) -> None:
    """Every fifth sample's interval 1 ns, every seventh's 2^63-1 ns (292 years)."""
    if n % 5 == 1:
        doc["interval_ns"] = 1
    elif n % 7 == 2:
        doc["interval_ns"] = (1 << 63) - 1


def test_a_sample_interval_its_spacing_belies_moves_no_span_and_is_said(
    tmp_path: Path,
) -> None:
    """Intervals of 1 ns over samples 100 ms apart shortened the working span (57.6 s to 47.0 s)
    and 2^63-1 ns made 49 billion seconds of copies in the chaining share, nothing said."""
    clean = _report(_recording(tmp_path, "ok.jsonl"))
    lying = _report(_recording(tmp_path, "lie.jsonl", _lying_interval))
    gpu, honest = lying["gpus"][0], clean["gpus"][0]
    assert gpu["active_s"] == pytest.approx(honest["active_s"], abs=0.05)
    assert gpu["busy_s"] == pytest.approx(honest["busy_s"], abs=0.05)
    assert lying["chaining"]["0"]["copy_s"] == pytest.approx(
        clean["chaining"]["0"]["copy_s"], rel=0.05)
    assert lying["counters"]["detector_interval_belied"] > 100
    said = [p for p in lying["problems"] if "interval_ns" in p]
    assert said and "belied by their spacing" in said[0], lying["problems"]
    assert "interval_belied" not in str(clean["counters"])


def _lines_lost(path: Path, every: int) -> tuple[Path, int]:
    """`path` with two GPU samples in a row dropped every `every` (lines lost from a recording:
    a bad record dropped, a cut file), and how many pairs: the sample after each keeps its
    honest 100 ms interval over a spacing of 300 ms, below the detector's hole (3 periods)."""
    out, n, pairs = [], 0, 0
    for line in path.read_bytes().splitlines(keepends=True):
        if b'"type":"gpu"' in line:
            n += 1
            if n > every and n % every in (1, 2):
                pairs += n % every == 1
                continue
        out.append(line)
    lost = path.with_name("lost.jsonl")
    lost.write_bytes(b"".join(out))
    return lost, pairs


def test_a_reading_after_lines_lost_keeps_its_honest_interval_and_covers_no_more(
    tmp_path: Path,
) -> None:
    """The belied rule is judged against the spacing the samples are expected at, not the time
    since the sample before: a 100 ms interval after 200 ms of lost lines is no lie, and the
    lost stretch stays uncovered (judged against the time since the sample before, it was
    believed over all 300 ms: readings made up for lines nobody read)."""
    clean = _report(_recording(tmp_path, "ok.jsonl"))
    path, pairs = _lines_lost(_recording(tmp_path, "ok.jsonl"), every=50)
    lost = _report(path)
    assert pairs > 5 and "interval_belied" not in str(lost["counters"])
    assert lost["gpus"][0]["data_s"] == pytest.approx(
        clean["gpus"][0]["data_s"] - 0.2 * pairs, abs=0.05)


def _beyond_any_link(n: int, doc: dict[str, Any]) -> None:
    """Every third sample's PCIe rates 10 TB/s, both ways (the link is 63 GB/s)."""
    if n % 3 == 0:
        doc["pcie_rx_bytes_per_s"] = doc["pcie_tx_bytes_per_s"] = 1e13


def test_pcie_rates_beyond_any_link_are_no_readings_said_and_drive_no_gap_kind(
    tmp_path: Path,
) -> None:
    """10 TB/s against a 63 GB/s link made every gap `transfer_bound` ("15869 % of link"), the
    header's true link called a lie, and nothing said of the readings."""
    clean = _report(_recording(tmp_path, "ok.jsonl"))
    lying = _report(_recording(tmp_path, "fast.jsonl", _beyond_any_link))
    assert [g["kind"] for g in lying["gaps"]] == [g["kind"] for g in clean["gaps"]]
    assert "transfer_bound" not in str(lying["gaps"]) and "15869" not in str(lying["gaps"])
    assert lying["gpus"][0]["link_bytes_per_s"] == clean["gpus"][0]["link_bytes_per_s"]
    assert "bad_header" not in lying["counters"]
    assert lying["counters"]["implausible_rate"] > 100
    said = [p for p in lying["problems"] if "implausible" in p]
    assert said and "1e+13 B/s" in said[0], lying["problems"]
    # The link's floor under the payoff is the honest readings' (10 TB/s for a third of the
    # span was a floor of 190 s over a 57.6 s span: every gain "limited by the link").
    ours, honest = (d["payoff"]["overall"]["if_closed"]["all"] for d in (lying, clean))
    assert ours["link_floor_s"] == pytest.approx(honest["link_floor_s"], rel=0.4)
    assert ours["throughput_gain"] == pytest.approx(honest["throughput_gain"], rel=0.01)


@pytest.mark.parametrize("name", ["h200-restart/restart.jsonl.gz", "h200-sampler-50ms.jsonl.gz"])
def test_real_recordings_hold_no_belied_interval(
    name: str,
) -> None:
    """A tick 25 ms after a late one holds an honest 25 ms interval over 25 ms of spacing: belied
    against the learnt 100 ms alone it opened these H200 recordings' reports with "WARNING: the
    data has problems". An interval is belied only where the time since the sample before
    belies it too."""
    doc = _report(Path(__file__).parent / "data" / name)
    assert "detector_interval_belied" not in doc["counters"]
    assert not [p for p in doc["problems"] if "interval_ns" in p]


#: The real transfer-bound H200 run (copies at 0.94 times its 63 GB/s link).
TRANSFER_BOUND = Path(__file__).parent / "data" / "h200-e2e" / "transfer-bound" / "rec.jsonl.gz"


def _thrice_after_an_idle_start(path: Path) -> Path:
    """The real transfer-bound run with every PCIe rate three times its reading (a GH200 whose
    counters take in NVLink-C2C, or a header whose link is wrong) and its first 80 GPU samples
    idle at 1 GB/s: the prover warming up, as a recording usually starts. The header's link is
    then checked against idle samples only (the first 64 spacings) and bears no lie."""
    lines = gzip.decompress(TRANSFER_BOUND.read_bytes()).splitlines(keepends=True)
    n = 0
    for i, line in enumerate(lines):
        doc = msgspec.json.decode(line)
        if doc.get("type") != "gpu":
            continue
        for key in ("pcie_rx_bytes_per_s", "pcie_tx_bytes_per_s"):
            if doc[key] is not None:
                doc[key] = 1e9 if n < 80 else doc[key] * 3
        n += 1
        lines[i] = msgspec.json.encode(doc) + b"\n"
    path.write_bytes(b"".join(lines))
    return path


@pytest.mark.skipif(not TRANSFER_BOUND.is_file(), reason="tests/data/h200-e2e not committed")
def test_pcie_rates_above_twice_the_headers_link_but_within_any_link_are_kept_wherever_they_fall(
    tmp_path: Path,
) -> None:
    """Rates above twice the header's link were dropped as implausible when the file started
    idle (the header's check saw none of them): all 18 gaps turned from transfer_bound at
    178 GB/s to pcie_starved with H2D "n/a" and the advice "pageable memory?"; the same rates
    early in the file called the header's link a lie and were kept. Only a rate beyond any link
    (`MAX_LINK_BYTES_PER_S`) is no reading, the same verdict wherever it falls."""
    doc = _report(_thrice_after_an_idle_start(tmp_path / "x3late.jsonl"))
    assert "implausible_rate" not in doc["counters"], doc["problems"]
    kinds = [g["kind"] for g in doc["gaps"]]
    assert kinds.count("transfer_bound") >= 17, kinds
    assert "pcie_starved" not in kinds[1:], kinds
    busy = [g for g in doc["gaps"] if g["kind"] == "transfer_bound"]
    # H2D (the GPU's PCIe receive) at three times the real ~59 GB/s, not "n/a".
    assert all(g["pcie_rx_bytes_per_s"] is not None and g["pcie_rx_bytes_per_s"] > 1.5e11
               for g in busy), busy
