"""Recordings: write a session as JSON Lines (optionally gzip), read it back, read trace CSVs.

Who calls it: `Recorder` is a session sink (`gapwatch record`, `watch --record`, snapshots);
`read_any` feeds `replay:FILE`, `report`, `export` and the tests.

Format (schema_version 1): line 1 is the `SessionHeader` (JSON object with `"type": "header"`);
every further line is one record (`gpu`, `host`, `log`, `gap`, `state`, `notice`; the field names
of `gapwatch.models`). `.gz` files are one gzip stream flushed with Z_SYNC_FLUSH at least every
`flush_interval_s`, so a `kill -9` loses at most the last interval and what was written still
reads (the reader stops cleanly at a truncated end and counts it).

Reading never raises for a bad line: it is skipped, counted in `Recording.counters`, and the first
few problems are kept in `Recording.problems` for the user. Only a file that cannot be opened, or
whose first line is not a header, is an error (`RecordingError`).

Trace CSVs (the layout of `shared/traces/*/README.md`: `timestamp_s,gpu` plus any subset of
`sm_active_pct,gpu_util_pct,pcie_rx_bytes_per_s,pcie_tx_bytes_per_s,host_mem_used_pct,
host_psi_mem_some_avg10`) are read into the same records. Rows whose SM and PCIe readings are all
exactly 0.0 are stale GPM readings (GPM refreshes every ~100 ms; these traces were sampled at
50 ms): they are merged into the next row's interval, never emitted as idle.
"""

from __future__ import annotations

import csv
import gzip
import io
import socket
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

import orjson
from pydantic import TypeAdapter, ValidationError

from gapwatch import __version__
from gapwatch.models import (
    SCHEMA_VERSION,
    GpuInfo,
    GpuSample,
    HostSample,
    Record,
    SessionHeader,
)

_RECORD: TypeAdapter[Record] = TypeAdapter(Record)
#: Validate one JSON line into a record (raises pydantic's ValidationError): pydantic-core's
#: validator itself, without the `TypeAdapter.validate_json` wrapper (~0.4 µs a line). Typed
#: here because pydantic-core's `validate_json` returns Any.
validate_record_line: Callable[[bytes], Record] = _RECORD.validator.validate_json
GPU_LINE_PREFIX = b'{"gpu":'
GPU_LINE_SUFFIX = b',"type":"gpu"}\n'
HOST_LINE_SUFFIX = b',"type":"host"}\n'

try:  # msgspec decodes straight into the dataclasses, ~2x faster than pydantic
    import msgspec

    _fast_gpu = msgspec.json.Decoder(GpuSample).decode
    _fast_host = msgspec.json.Decoder(HostSample).decode
    _FastError: type[Exception] = msgspec.DecodeError
except ImportError:  # optional: pydantic alone gives the same records, slower
    _fast_gpu = _fast_host = None  # type: ignore[assignment]
    _FastError = ValueError


def validate_line(line: bytes, gpu_shaped: bool) -> Record:
    """One record from one line; `gpu_shaped`: it starts with GPU_LINE_PREFIX and ends with
    GPU_LINE_SUFFIX. Raises pydantic's ValidationError (its locations start with the type).

    GPU and host sample lines (the bulk of a recording) go first through msgspec's decoder
    for their dataclass: it is strict (JSON types only; no strings for numbers, no 5.0 for an
    int, no NaN) and every line it accepts gives the record pydantic gives. What it refuses
    goes to pydantic, which accepts the lax forms and has the user's error message.
    """
    if _fast_gpu is not None:
        try:
            if gpu_shaped:
                return _fast_gpu(line)
            if line.endswith(HOST_LINE_SUFFIX):
                return _fast_host(line)
        except _FastError:
            pass
    return validate_record_line(line)


def bad_record(path: Path | str, line_no: int, exc: ValidationError) -> str:
    """The user's message for a line that is not a valid record."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{path}:{line_no}: bad record ({where}: {first['msg']})"


MAX_PROBLEMS = 20


class RecordingError(Exception):
    """The file cannot be used as a recording at all (the message is for the user)."""


class Recorder:
    """A session sink that writes every record to a JSON Lines file (gzip when `.gz`).

    Writes are buffered and flushed when `flush_interval_s` has passed since the last flush
    (checked on every record: the sampler delivers records every period) and on `close()`.
    """

    def __init__(self, path: str | Path, flush_interval_s: float = 1.0) -> None:
        self.path = Path(path)
        self._flush_interval_ns = int(flush_interval_s * 1e9)
        self._raw: IO[bytes] = open(self.path, "wb")  # noqa: SIM115 - closed in close()
        self._gz: gzip.GzipFile | None = None
        if self.path.suffix == ".gz":
            self._gz = gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=6)
        self._buf: list[bytes] = []
        self._last_flush_ns = time.monotonic_ns()
        self.records_written = 0
        self.closed = False

    def on_header(self, header: SessionHeader) -> None:
        self._buf.append(header.model_dump_json().encode() + b"\n")
        self.flush()

    def on_record(self, record: Record) -> None:
        if self.closed:
            return
        self._buf.append(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))
        self.records_written += 1
        if time.monotonic_ns() - self._last_flush_ns >= self._flush_interval_ns:
            self.flush()

    def flush(self) -> None:
        if self.closed:
            return
        data = b"".join(self._buf)
        self._buf.clear()
        if self._gz is not None:
            self._gz.write(data)
            # A sync flush ends the deflate block on a byte boundary: everything so far is
            # decodable even if the process dies before the gzip trailer is written.
            self._gz.flush(zlib.Z_SYNC_FLUSH)
        else:
            self._raw.write(data)
        self._raw.flush()
        self._last_flush_ns = time.monotonic_ns()

    def close(self) -> None:
        if self.closed:
            return
        self.flush()
        self.closed = True
        if self._gz is not None:
            self._gz.close()
        self._raw.close()


def write_recording(path: str | Path, header: SessionHeader, records: Iterable[Record]) -> int:
    """Write a whole recording at once (snapshots, CSV conversion, tests). Returns the count."""
    rec = Recorder(path)
    rec.on_header(header)
    for r in records:
        rec.on_record(r)
    rec.close()
    return rec.records_written


@dataclass
class Recording:
    """A recording being read: the header, a lazy record iterator, and what went wrong."""

    path: Path
    header: SessionHeader
    records: Iterator[Record]
    counters: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def problem(self, counter: str, message: str) -> None:
        self.counters[counter] = self.counters.get(counter, 0) + 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(message)


def _open_bytes(path: Path) -> IO[bytes]:
    try:
        raw = open(path, "rb")  # noqa: SIM115 - handed to the caller
    except OSError as exc:
        raise RecordingError(f"{path}: cannot open: {exc.strerror or exc}") from None
    magic = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
    if magic == b"\x1f\x8b":
        # typeshed types GzipFile as a BufferedIOBase, not a typing.IO; it has every method
        # the readers use (iteration, readline, read, close).
        return cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb"))
    return raw


def _records(stream: IO[bytes], recording: Recording, first_line_no: int) -> Iterator[Record]:
    """Validated records of a possibly truncated (gzip) stream; bad lines are counted, skipped.

    This is the hot loop of a long `gapwatch report` (~7 M lines for 24 h x 8 GPUs): one
    generator (no per-line inner generator), and pydantic-core's validators called directly
    (`validate_line`).
    """
    validate, prefix, suffix = validate_line, GPU_LINE_PREFIX, GPU_LINE_SUFFIX
    line_no = first_line_no
    try:
        for line in stream:
            line_no += 1
            if line[-1:] != b"\n":
                if not line.strip():
                    continue
                # The last line of a file cut by kill -9 may be half written.
                recording.problem(
                    "partial_line", f"{recording.path}:{line_no}: incomplete last line"
                )
                continue
            try:
                r = validate(line, line.startswith(prefix) and line.endswith(suffix))
            except ValidationError as exc:
                if line.strip():
                    recording.problem("bad_records", bad_record(recording.path, line_no, exc))
                continue
            yield r
    except (EOFError, zlib.error, OSError) as exc:
        recording.problem("truncated", f"{recording.path}: file ends early ({exc}); kept what read")
    finally:
        stream.close()


def open_recording(path: str | Path) -> tuple[SessionHeader, IO[bytes]]:
    """Open a JSON Lines recording: its validated header, and the byte stream positioned at
    line 2 (the caller closes it). Raises RecordingError when the header is unusable."""
    p = Path(path)
    stream = _open_bytes(p)
    try:
        first = stream.readline()
    except (EOFError, zlib.error, OSError) as exc:
        stream.close()
        raise RecordingError(f"{p}: not a readable recording ({exc})") from None
    try:
        data = orjson.loads(first)
        if not isinstance(data, dict) or data.get("type") != "header":
            raise ValueError("first line is not a gapwatch header")
        version = data.get("schema_version")
        if isinstance(version, int) and version > SCHEMA_VERSION:
            stream.close()
            raise RecordingError(
                f"{p}: written by a newer gapwatch (schema {version} > {SCHEMA_VERSION}); upgrade"
            )
        header = SessionHeader.model_validate(data)
    except (orjson.JSONDecodeError, ValueError, ValidationError) as exc:
        stream.close()
        raise RecordingError(
            f"{p}: not a gapwatch recording ({str(exc).splitlines()[0]})"
        ) from None
    return header, stream


def read_recording(path: str | Path) -> Recording:
    """Open a JSON Lines recording. Raises RecordingError when its header is unusable."""
    header, stream = open_recording(path)
    rec = Recording(path=Path(path), header=header, records=iter(()))
    rec.records = _records(stream, rec, 1)
    return rec


# --- trace CSV --------------------------------------------------------------------------------

_GPU_COLUMNS = ("sm_active_pct", "gpu_util_pct", "pcie_rx_bytes_per_s", "pcie_tx_bytes_per_s")
_HOST_COLUMNS = ("host_mem_used_pct", "host_psi_mem_some_avg10")


def _num(row: dict[str, str | None], key: str) -> float | None:
    value = row.get(key)
    if value is None or value.strip() == "":
        return None
    out = float(value)
    if out != out or out in (float("inf"), float("-inf")):  # NaN / inf: not a reading
        return None
    return out


def is_stale_gpm(sm: float | None, rx: float | None, tx: float | None) -> bool:
    """A GPM reading with no new data reads exactly 0.0 for every metric; a real interval on a
    live link never has PCIe at exactly 0 (an idle H200 reads ~1-3 MiB/s)."""
    return sm == 0.0 and rx == 0.0 and tx == 0.0


def _csv_records(stream: IO[str], rec: Recording) -> Iterator[Record]:
    reader = csv.DictReader(stream)
    last_t_ns: dict[int, int] = {}
    last_host_t_ns: int | None = None
    line_no = 1
    for row in reader:
        line_no += 1
        try:
            t_s = _num(row, "timestamp_s")
            gpu_f = _num(row, "gpu")
            if t_s is None or gpu_f is None:
                raise ValueError("timestamp_s and gpu are required")
            gpu = int(gpu_f)
            sm = _num(row, "sm_active_pct")
            util = _num(row, "gpu_util_pct")
            rx = _num(row, "pcie_rx_bytes_per_s")
            tx = _num(row, "pcie_tx_bytes_per_s")
            mem = _num(row, "host_mem_used_pct")
            psi = _num(row, "host_psi_mem_some_avg10")
        except (ValueError, TypeError) as exc:
            rec.problem("bad_records", f"{rec.path}:{line_no}: bad row ({exc})")
            continue
        t_ns = int(round(t_s * 1e9))
        prev = last_t_ns.get(gpu)
        if prev is not None and t_ns <= prev:
            rec.problem("out_of_order", f"{rec.path}:{line_no}: time goes backwards; row skipped")
            continue
        if (mem is not None or psi is not None) and (
            last_host_t_ns is None or t_ns > last_host_t_ns
        ):
            yield HostSample(
                t_mono_ns=t_ns,
                t_wall_s=t_s,
                interval_ns=None if last_host_t_ns is None else t_ns - last_host_t_ns,
                mem_used_pct=mem,
                mem_available_bytes=None,
                swap_used_bytes=None,
                cpu_busy_pct=None,
                psi_mem_some_avg10=psi,
                psi_mem_full_avg10=None,
                psi_mem_some_share=None,
                psi_mem_full_share=None,
                major_faults_per_s=None,
            )
            last_host_t_ns = t_ns
        if is_stale_gpm(sm, rx, tx):
            rec.counters["stale_gpm_rows"] = rec.counters.get("stale_gpm_rows", 0) + 1
            if prev is None:
                last_t_ns[gpu] = t_ns  # the next real reading covers from here
            continue
        last_t_ns[gpu] = t_ns
        yield GpuSample(
            gpu=gpu,
            t_mono_ns=t_ns,
            t_wall_s=t_s,
            interval_ns=None if prev is None else t_ns - prev,
            sm_active_pct=sm,
            gpu_util_pct=util,
            pcie_rx_bytes_per_s=rx,
            pcie_tx_bytes_per_s=tx,
            sm_source="trace" if sm is not None else None,
            pcie_source="trace" if rx is not None or tx is not None else None,
        )


def read_trace_csv(path: str | Path) -> Recording:
    """Read a trace CSV. The header lists the GPUs seen in the file (a first pass)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise RecordingError(f"{p}: cannot open: {exc.strerror or exc}") from None
    first = text.splitlines()[0] if text else ""
    columns = [c.strip() for c in first.split(",")]
    if "timestamp_s" not in columns or "gpu" not in columns:
        raise RecordingError(f"{p}: not a trace CSV (needs columns timestamp_s and gpu)")
    unknown = [c for c in columns if c not in ("timestamp_s", "gpu", *_GPU_COLUMNS, *_HOST_COLUMNS)]
    gpus: set[int] = set()
    t0: float | None = None
    t1: float | None = None
    for row in csv.DictReader(io.StringIO(text)):
        try:
            gpus.add(int(float(row.get("gpu") or "")))
            t = float(row.get("timestamp_s") or "")
            t0 = t if t0 is None else min(t0, t)
            t1 = t if t1 is None else max(t1, t)
        except ValueError:
            continue
    rows = max(1, text.count("\n") - 1)
    period_ms = ((t1 - t0) / rows * 1000 * max(1, len(gpus))) if t0 is not None and t1 else 100.0
    header = SessionHeader(
        gapwatch_version=__version__,
        host="(trace)",
        source=f"replay:{p}",
        started_wall_s=t0 or 0.0,
        started_mono_ns=int((t0 or 0.0) * 1e9),
        period_ms=round(period_ms, 1),
        gpus=[GpuInfo(index=i, name="(trace)", sm_source="trace", pcie_source="trace")
              for i in sorted(gpus)],
    )
    rec = Recording(path=p, header=header, records=iter(()))
    if unknown:
        rec.problem("unknown_columns", f"{p}: ignoring unknown columns {', '.join(unknown)}")
    rec.records = _csv_records(io.StringIO(text), rec)
    return rec


def read_any(path: str | Path) -> Recording:
    """Open a recording (.jsonl / .jsonl.gz) or a trace CSV, chosen by content and name."""
    p = Path(path)
    if not p.exists():
        raise RecordingError(f"{p}: no such file")
    if p.suffix.lower() == ".csv":
        return read_trace_csv(p)
    return read_recording(p)


def default_header(source: str, gpus: list[GpuInfo], period_ms: float,
                   config: dict[str, Any] | None = None) -> SessionHeader:
    """A header for a session starting now on this host."""
    return SessionHeader(
        gapwatch_version=__version__,
        host=socket.gethostname(),
        source=source,
        started_wall_s=time.time(),
        started_mono_ns=time.monotonic_ns(),
        period_ms=period_ms,
        gpus=gpus,
        config=config or {},
    )

