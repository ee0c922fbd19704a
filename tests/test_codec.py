"""The record codec: every record reads back as it was written, in any key order; the reader is
strict and says which field was wrong; a gap has one JSON shape in every output."""

from __future__ import annotations

import gzip
from pathlib import Path

import msgspec
import pytest

from evaluation.simulate import simulate
from gapwatch.config import Config
from gapwatch.core.codec import (
    DecodeError,
    decode_json,
    decode_record,
    encode_json,
    encode_line,
    gap_json,
    gpu_line_prefix,
)
from gapwatch.core.evidence_types import HostEvidence
from gapwatch.core.models import (
    RECORD_TYPES,
    BlindSpot,
    ExitedProcess,
    Gap,
    GpuHealth,
    GpuSample,
    HardwareEvent,
    ProofTiming,
    ProverEvent,
    SessionHeader,
    StretchPart,
)
from gapwatch.offline.report import build_report, to_json
from gapwatch.sinks.recorder import write_recording
from gapwatch.sources.recording import read_recording

DATA = Path(__file__).parent / "data"
#: Real H200 recordings written by earlier gapwatch versions (keys in another order, the type
#: last): between them they hold every record type.
REAL = [DATA / "h200-copytrace/pageable/rec.jsonl.gz",
        DATA / "h200-e2e/host-stall-status/rec.jsonl.gz"]
#: Record types newer than those recordings, read back on their own below (and in the tests
#: of the part that writes them: tests/test_nvml_blind_spots.py).
NEWER_THAN_REAL: set[type] = {BlindSpot, GpuHealth, HardwareEvent, ProverEvent}


def _lines(path: Path) -> list[bytes]:
    with gzip.open(path, "rb") as f:
        return f.read().splitlines(keepends=True)


def test_every_record_type_of_real_recordings_reads_back_as_it_was_written() -> None:
    seen: set[type] = set()
    for path in REAL:
        for line in _lines(path)[1:]:
            record = decode_record(line)
            again = encode_line(record)
            assert again.startswith(b'{"type":"%s",' % record.type.encode())
            assert decode_record(again) == record
            old, new = decode_json(line), decode_json(again)
            assert {k: new[k] for k in old} == old  # nothing lost or changed
            assert set(new) - set(old) <= set(record.__struct_fields__)  # fields added since
            seen.add(type(record))
    assert seen == set(RECORD_TYPES) - NEWER_THAN_REAL


def test_a_blind_spot_reads_back_as_it_was_written() -> None:
    spot = BlindSpot(t_mono_ns=6_000_000_000, t_wall_s=1_796_000_006.5, duration_s=5.4,
                     gpus=[0, 1], exited=[ExitedProcess(4242, "cuzk", 72 << 30),
                                          ExitedProcess(77)])
    line = encode_line(spot)
    assert line.startswith(b'{"type":"blind",')
    assert decode_record(line) == spot


def test_health_and_hardware_events_read_back_as_they_were_written_with_none_kept() -> None:
    health = GpuHealth(gpu=3, t_mono_ns=1, t_wall_s=1_796_000_000.0, memory_used_bytes=60 << 30,
                       memory_total_bytes=141 << 30, temperature_c=None, power_w=451.5,
                       power_limit_w=700.0, clocks_event_mask=0x24, pcie_replay_total=None)
    xid = HardwareEvent(gpu=3, t_mono_ns=2, t_wall_s=1_796_000_000.5, kind="xid", code=79)
    for record, tag in ((health, b"health"), (xid, b"hw_event")):
        line = encode_line(record)
        assert line.startswith(b'{"type":"%s",' % tag)
        assert decode_record(line) == record
    back = decode_record(encode_line(health))
    assert isinstance(back, GpuHealth) and back.temperature_c is None
def test_a_prover_event_reads_back_as_it_was_written() -> None:
    event = ProverEvent(
        t_wall_s=1_796_000_010.5, kind="proof", level="error", message="WinningPoSt late",
        job_id="winpost-1000-0a1b2c3d", gpu=0,
        proof=ProofTiming("winning-post", queue_s=None, synth_s=2.2, gpu_wait_s=0.37, gpu_s=1.3,
                          total_s=33.9, deadline_s=30.0, verdict="late",
                          waited_behind=["worker 1: porep-1000-12 partition 4"]),
        start_s=1.0, end_s=2.0, parts=[StretchPart("down", 1.0, 1.5)])
    line = encode_line(event)
    assert line.startswith(b'{"type":"prover_event",')
    assert decode_record(line) == event


def test_a_proof_verdict_unknown_reads_back_and_recordings_before_it_still_read() -> None:
    """"unknown" (a proof gapwatch could not time) was added to `ProofVerdict`: a proof event
    written before it reads as it did; one written with it reads back; a verdict this version
    does not know (a later one's) is a bad record (counted and skipped), never a crash."""
    before = (b'{"type":"prover_event","t_wall_s":1.5,"kind":"proof","level":"info",'
              b'"message":"WinningPoSt w","job_id":"winpost-1-2","gpu":0,"proof":{"proof_kind":'
              b'"winning-post","total_s":3.9,"deadline_s":30.0,"verdict":"ok","done":true}}\n')
    old = decode_record(before)
    assert isinstance(old, ProverEvent) and old.proof is not None
    assert old.proof.verdict == "ok" and old.proof.total_s == 3.9
    unknown = msgspec.structs.replace(
        old, level="warning", proof=msgspec.structs.replace(old.proof, total_s=None,
                                                            verdict="unknown"))
    assert decode_record(encode_line(unknown)) == unknown
    with pytest.raises(DecodeError, match="verdict"):
        decode_record(before.replace(b'"verdict":"ok"', b'"verdict":"maybe"'))


def test_the_type_attribute_of_each_record_is_the_tag_it_is_written_with() -> None:
    for cls in RECORD_TYPES:
        assert cls.type == cls.__struct_config__.tag, cls
    assert SessionHeader.type == SessionHeader.__struct_config__.tag == "header"


def test_a_line_reads_the_same_whatever_the_order_of_its_keys() -> None:
    line = _lines(REAL[0])[2]
    doc = decode_json(line)
    reordered = msgspec.json.encode(dict(reversed(list(doc.items()))))
    assert reordered != line.rstrip()
    assert decode_record(reordered) == decode_record(line)


def test_a_header_reads_back_as_it_was_written(tmp_path: Path) -> None:
    sim = simulate("chained", seed=1, duration_s=1)
    path = tmp_path / "r.jsonl"
    write_recording(path, sim.header, [])
    assert path.read_bytes().startswith(b'{"type":"header",')
    assert read_recording(path).header == sim.header


GPU = ('{"type":"gpu","gpu":%s,"t_mono_ns":%s,"t_wall_s":1.5,"interval_ns":null,'
       '"sm_active_pct":%s,"gpu_util_pct":null,"pcie_rx_bytes_per_s":null,'
       '"pcie_tx_bytes_per_s":null}')


@pytest.mark.parametrize(("gpu", "mono", "sm", "where"), [
    ('"1"', "1000", "12.5", "$.gpu"),  # a number as text
    ("1.0", "1000", "12.5", "$.gpu"),  # an integer written as a float
    ("1", "1000.5", "12.5", "$.t_mono_ns"),
    ("1", "1000", '"12.5"', "$.sm_active_pct"),
    ("1", "1000", "true", "$.sm_active_pct"),
    ("1", "1000", "1" + "0" * 400, "$.sm_active_pct"),  # beyond a double
    ("256", "1000", "12.5", "$.gpu"),  # beyond any box
    ("1", "-1", "12.5", "$.t_mono_ns"),
])
def test_the_reader_is_strict_and_names_the_field_it_refused(
    gpu: str, mono: str, sm: str, where: str
) -> None:
    with pytest.raises(DecodeError, match=rf"at `\{where}`"):
        decode_record((GPU % (gpu, mono, sm)).encode())


def test_what_the_reader_accepts_of_a_hand_made_line() -> None:
    # Integers where floats go, and fields left out that have a default.
    s = decode_record((GPU % ("1", "1000", "12")).encode())
    assert s == GpuSample(gpu=1, t_mono_ns=1000, t_wall_s=1.5, interval_ns=None,
                          sm_active_pct=12.0, gpu_util_pct=None, pcie_rx_bytes_per_s=None,
                          pcie_tx_bytes_per_s=None)
    assert type(s.sm_active_pct) is float


def test_the_codec_writes_a_gpu_samples_line_with_the_prefix_the_parallel_report_skips() -> None:
    s = GpuSample(gpu=7, t_mono_ns=1, t_wall_s=1.0, interval_ns=None, sm_active_pct=None,
                  gpu_util_pct=None, pcie_rx_bytes_per_s=None, pcie_tx_bytes_per_s=None)
    assert encode_line(s).startswith(gpu_line_prefix(7))
    assert not encode_line(s).startswith(gpu_line_prefix(70))


def _gap(**kw: object) -> Gap:
    base: dict[str, object] = dict(
        gap_id=3, gpu=0, kind="pcie_starved", start_mono_ns=10, start_s=1.0, end_mono_ns=20,
        end_s=2.0, duration_s=1.0, pcie_rx_bytes_per_s=3.15e9, pcie_tx_bytes_per_s=1e6,
        link_bytes_per_s=63e9, hint="h", host=HostEvidence(mem_used_pct_max=90.0),
    )
    base.update(kw)
    return Gap(**base)  # type: ignore[arg-type]


def test_a_gaps_json_is_its_record_with_open_and_its_share_of_the_link() -> None:
    g = _gap()
    doc = gap_json(g)
    assert doc.pop("open") is False and doc.pop("link_fraction") == pytest.approx(0.05)
    assert doc == decode_json(encode_line(g))
    assert msgspec.convert(gap_json(g), Gap) == g  # the extra figures read past
    assert gap_json(_gap(end_s=None, end_mono_ns=None))["open"] is True
    assert gap_json(_gap(pcie_rx_bytes_per_s=None, pcie_tx_bytes_per_s=None))["link_fraction"] \
        is None
    assert gap_json(_gap(link_bytes_per_s=None))["link_fraction"] is None


def test_report_json_and_the_perfetto_export_give_a_gap_the_same_json(tmp_path: Path) -> None:
    from gapwatch.cli import main

    res = simulate("pageable", seed=4, duration_s=30.0, gpus=1)
    path = tmp_path / "r.jsonl"
    write_recording(path, res.header, res.records)
    report = to_json(build_report(path, Config()))
    assert report["gaps"]
    assert main(["export", str(path), "--format", "perfetto", "--out", str(tmp_path / "t.json")]) \
        == 0
    args = [e["args"] for e in decode_json((tmp_path / "t.json").read_bytes())["traceEvents"]
            if e.get("cat") == "gap" and e.get("ph") == "X"]
    assert sorted(args, key=lambda a: a["gap_id"]) == report["gaps"]


def test_output_documents_are_json_people_can_read() -> None:
    assert encode_json({"a": [1, 2.5, None]}) == b'{"a":[1,2.5,null]}'
    assert encode_json({"a": 1}, indent=2) == b'{\n  "a": 1\n}'
