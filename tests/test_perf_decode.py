"""The fast decoder for GPU and host lines (msgspec) gives exactly pydantic's records, or defers.

`gapwatch.sources.recording.validate_line` tries msgspec first for lines shaped like GPU or host samples;
whatever it refuses goes to pydantic (`validate_record_line`), the authority on what a valid
record is. These tests pin that a line never reads differently because of the fast path.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from pydantic import ValidationError

from evaluation.simulate import simulate
from gapwatch.core.models import GpuSample, HostSample
from gapwatch.sinks.recorder import write_recording
from gapwatch.sources.recording import (
    GPU_LINE_PREFIX,
    GPU_LINE_SUFFIX,
    read_recording,
    validate_line,
    validate_record_line,
)

pytest.importorskip("msgspec")

GPU = (
    b'{"gpu":1,"t_mono_ns":1000,"t_wall_s":1.5,"interval_ns":%s,"sm_active_pct":%s,'
    b'"gpu_util_pct":null,"pcie_rx_bytes_per_s":null,"pcie_tx_bytes_per_s":null,'
    b'"sm_source":%s,"pcie_source":null,"pcie_lower_bound":%s,"lateness_ns":null,"type":"gpu"}\n'
)
HOST = (
    b'{"t_mono_ns":1000,"t_wall_s":1.5,"interval_ns":null,"mem_used_pct":%s,'
    b'"mem_available_bytes":null,"swap_used_bytes":null,"cpu_busy_pct":null,'
    b'"psi_mem_some_avg10":null,"psi_mem_full_avg10":null,"psi_mem_some_share":null,'
    b'"psi_mem_full_share":null,"major_faults_per_s":null,"type":"host"}\n'
)
# Lax forms pydantic accepts and msgspec refuses, values out of msgspec's range, bad values.
ODD_GPU = [
    (b"null", b"12.5", b'"sim"', b"false"),
    (b"100000000.0", b"12.5", b'"sim"', b"false"),  # an int written as a float
    (b'"100000000"', b'"12.5"', b'"sim"', b'"true"'),  # numbers as strings
    (b"null", b"1" + b"0" * 400, b'"sim"', b"false"),  # beyond a double: inf for pydantic
    (b"null", b"NaN", b'"sim"', b"false"),
    (b"null", b"true", b'"sim"', b"0"),
    (b"null", b"-0", b'"sim"', b"false"),
    (b"null", b"12.5", b'"nvml"', b"false"),  # not a SignalSource: bad
    (b"1" + b"0" * 30, b"12.5", b"null", b"false"),  # an int beyond 64 bits
    (b"null", b"[1]", b"null", b"false"),  # bad
]
ODD_HOST = [b"40.5", b"40", b'"40.5"', b"1e999", b"Infinity", b"{}", b"-3"]


def _read(line: bytes) -> object:
    """What the reader makes of a line: the record, or pydantic's error message."""
    shaped = line.startswith(GPU_LINE_PREFIX) and line.endswith(GPU_LINE_SUFFIX)
    try:
        return validate_line(line, shaped)
    except ValidationError as exc:
        return str(exc)


def _pydantic(line: bytes) -> object:
    try:
        return validate_record_line(line)
    except ValidationError as exc:
        return str(exc)


def _same(a: object, b: object) -> bool:
    # repr tells 1 from 1.0 and nan equals nan by it; == alone would not see either.
    return type(a) is type(b) and repr(a) == repr(b)


@pytest.mark.parametrize("values", ODD_GPU)
def test_odd_gpu_lines_read_as_pydantic_reads_them(values: tuple[bytes, ...]) -> None:
    line = GPU % values
    assert _same(_read(line), _pydantic(line))


@pytest.mark.parametrize("value", ODD_HOST)
def test_odd_host_lines_read_as_pydantic_reads_them(value: bytes) -> None:
    line = HOST % value
    assert _same(_read(line), _pydantic(line))


def test_a_simulated_recording_reads_as_pydantic_reads_it(tmp_path: Path) -> None:
    res = simulate("pageable", seed=5, duration_s=20.0, gpus=2)
    path = tmp_path / "sim.jsonl"
    write_recording(path, res.header, res.records)
    lines = path.read_bytes().splitlines(keepends=True)[1:]
    kinds = {type(_read(ln)) for ln in lines}
    assert {GpuSample, HostSample} <= kinds
    for ln in lines:
        assert _same(_read(ln), _pydantic(ln)), ln
    assert list(read_recording(path).records) == [_pydantic(ln) for ln in lines]


def test_field_types_match_pydantic_for_ints_written_where_floats_go() -> None:
    # orjson writes 0 (not 0.0) for an int-valued float field; both give a float.
    line = GPU % (b"null", b"0", b'"sim"', b"false")
    fast, slow = _read(line), _pydantic(line)
    assert isinstance(fast, GpuSample) and isinstance(slow, GpuSample)
    assert type(fast.sm_active_pct) is type(slow.sm_active_pct) is float
    assert orjson.dumps(fast) == orjson.dumps(slow)
