"""tracing-subscriber lines: timestamp, level, span prefixes, target, message, k=v fields."""

from __future__ import annotations

import pytest

from gapwatch.core import values
from gapwatch.core.values import convert_value
from gapwatch.logs.parse import LogParser
from gapwatch.logs.parse.tracing import parse_kv, parse_tracing


def test_full_line_with_span_prefix() -> None:
    line = parse_tracing(
        "2026-05-12T14:14:02.010377Z  INFO gpu_worker{worker_id=1 gpu=0 job_id=porep-1234-5678 "
        "proof_kind=porep-c2 batch_size=1 partition=Some(3)}: cuzk_core::engine: GPU_TIMING "
        "hot_path pre-prove overhead worker_id=1 partition=Some(3) status_ms=0 total_overhead_ms=7")
    assert line is not None
    assert line.t_wall_s == pytest.approx(1778595242.010377)
    assert line.level == "INFO"
    assert line.spans == [("gpu_worker", {"worker_id": 1, "gpu": 0, "job_id": "porep-1234-5678",
                                          "proof_kind": "porep-c2", "batch_size": 1,
                                          "partition": 3})]
    assert line.target == "cuzk_core::engine"
    assert line.message == "GPU_TIMING hot_path pre-prove overhead"
    assert line.fields == {"worker_id": 1, "partition": 3, "status_ms": 0, "total_overhead_ms": 7}


def test_quoted_span_fields_and_nested_spans() -> None:
    line = parse_tracing(
        '2026-05-12T14:13:32.351032Z  INFO outer{a=1}:synthesize_partition{job_id="porep 1" '
        'partition=3}: cuzk_core::pipeline: attempting pinned memory synthesis buf_gib=3.88')
    assert line is not None
    assert [name for name, _ in line.spans] == ["outer", "synthesize_partition"]
    assert line.spans[1][1] == {"job_id": "porep 1", "partition": 3}
    assert line.fields == {"buf_gib": 3.88}


def test_values_with_spaces_lists_and_quoted_strings() -> None:
    fields = parse_kv('gpus=[0, 1] error=SRS file not found: /x/y job_id=wdpost-1-2-[1 2 3] '
                      'ema_waiting="7.9" note="a b=c" partition=None ok=true')
    assert fields == {"gpus": "[0, 1]", "error": "SRS file not found: /x/y",
                      "job_id": "wdpost-1-2-[1 2 3]", "ema_waiting": "7.9", "note": "a b=c",
                      "partition": None, "ok": True}


@pytest.mark.parametrize(("raw", "value"), [
    ("3", 3), ("-2", -2), ("Some(3)", 3), ("None", None), ("3.882612854242325", 3.882612854242325),
    ('"2512"', "2512"), ("28.408771233s", "28.408771233s"), ("Normal", "Normal"), ("", ""),
    ("1e3", 1000.0), ("-", "-"),
])
def test_value_conversion(raw: str, value: object) -> None:
    assert convert_value(raw) == value


def test_message_without_fields_and_level_padding() -> None:
    line = parse_tracing("2026-05-12T14:14:00.760388Z  INFO synthesize_partition{job_id=\"j\" "
                         "partition=3}: bellperson::groth16::prover::supraseal: synthesis time: "
                         "28.408771233s")
    assert line is not None
    assert line.target == "bellperson::groth16::prover::supraseal"
    assert line.message == "synthesis time: 28.408771233s" and line.fields == {}
    err = parse_tracing("2026-05-12T14:14:00.760388Z ERROR cuzk_core::engine: GPU prove start failed "
                        "error=CUDA error 2: out of memory")
    assert err is not None and err.level == "ERROR"
    assert err.fields == {"error": "CUDA error 2: out of memory"}


def test_message_colon_after_target_stays_in_the_message() -> None:
    line = parse_tracing("2026-05-12T14:14:41.002515Z  INFO cuzk_core::engine: pacer: status "
                         "total=45 gpu_proc_ms=\"3356\" bootstrap=false")
    assert line is not None
    assert (line.target, line.message) == ("cuzk_core::engine", "pacer: status")
    assert line.fields == {"total": 45, "gpu_proc_ms": "3356", "bootstrap": False}


@pytest.mark.parametrize("text", [
    "2026-05-12T14:14:41.002515Z  NOTE cuzk_core::engine: x",  # not a level
    "2026-13-12T14:14:41.002515Z  INFO cuzk_core::engine: x",  # no 13th month
    "2026-05-12T14:14:41Z",
])
def test_lines_that_only_look_like_tracing_are_rejected(text: str) -> None:
    assert parse_tracing(text) is None


def test_event_ids_come_from_span_and_event_fields() -> None:
    p = LogParser()
    (e,) = p.parse_line('2026-05-12T14:14:00.760912Z  INFO synthesize_partition{job_id="porep-1-2" '
                        "partition=3}: cuzk_core::pipeline: partition synthesis complete "
                        "partition=3 synth_ms=28413 is_pinned=true", "stdout", 1, 2.0)
    assert (e.job_id, e.partition, e.level, e.time_source) == ("porep-1-2", 3, "INFO", "line")
    assert e.fields["spans"] == "synthesize_partition"
    assert e.fields["target"] == "cuzk_core::pipeline"


def test_a_key_equals_inside_the_message_is_prose_not_the_first_field() -> None:
    # Format strings of curio e0294b0f: extern/cuzk/cuzk-core/src/engine.rs:533 and
    # pipeline.rs:1236 (the message holds `KEY=1:` / `KEY=1 —`; tracing's fields follow it).
    validate = parse_tracing(
        "2026-05-12T14:14:40.118034Z  INFO cuzk_core::engine: CUZK_VALIDATE_PARTITIONS=1: "
        "validating per-partition verifier against known-good proof job_id=porep-1234-5678")
    assert validate is not None
    assert validate.message == ("CUZK_VALIDATE_PARTITIONS=1: validating per-partition verifier "
                                "against known-good proof")
    assert validate.fields == {"job_id": "porep-1234-5678"}
    pce = parse_tracing(
        "2026-05-12T14:13:32.350001Z  INFO synthesize_partition{job_id=\"porep-1\" partition=3}: "
        "cuzk_core::pipeline: PCE disabled via CUZK_DISABLE_PCE=1 \u2014 using standard "
        "synthesis circuit_id=porep-32g")
    assert pce is not None
    assert pce.message == "PCE disabled via CUZK_DISABLE_PCE=1 \u2014 using standard synthesis"
    assert pce.fields == {"circuit_id": "porep-32g"}


def test_converted_values_are_remembered_within_a_bound_and_read_back_the_same(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(values, "_VALUES", {})
    monkeypatch.setattr(values, "_VALUES_MAX", 4)
    raws = ["3", "Some(3)", '"porep-1"', "true", "None", "2.5", "-7", "1e999", "x" * 100]
    first = [convert_value(r) for r in raws]
    again = [convert_value(r) for r in raws]
    assert again == first and [type(v) for v in again] == [type(v) for v in first]
    assert first[1] == 3 and first[4] is None and first[7] == "1e999"
    assert 0 < len(values._VALUES) <= 4  # kept, and emptied when full
    assert set(values._VALUES) <= set(raws)
    assert "x" * 100 not in values._VALUES  # long texts are converted, not kept
