"""Trace CSVs as a source: the layout of the shared H200 traces, read into gapwatch records.

Who calls it: `gapwatch.sources.recording.read_any` (hence `replay`, `report`, `export`) for a
`.csv` file; `gapwatch.offline.csv_export` writes the same layout.

Columns: `timestamp_s,gpu` plus any subset of `sm_active_pct,gpu_util_pct,pcie_rx_bytes_per_s,
pcie_tx_bytes_per_s,host_mem_used_pct,host_psi_mem_some_avg10`. Rows whose SM and PCIe readings
are all exactly 0.0 are stale GPM readings (GPM refreshes every ~100 ms; these traces were sampled
at 50 ms): they are merged into the next row's interval, never emitted as idle, for up to a
second (`readings.GPM_MAX_EXTEND_NS`, the sampler's own bound); after that the zeros are believed.

Bad input (docs/bad-input.md): a row whose `timestamp_s` is not a usable Unix time (empty,
NaN, 1e300), whose `gpu` is not a GPU index (1e30, -1, 2.5), or with a number that does not parse
is skipped, counted in `bad_records` and said with its line number; a UTF-8 byte order mark
(spreadsheets write one) is ignored; spaces around column names are ignored.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gapwatch import __version__
from gapwatch.core.bounds import (
    DEFAULT_PERIOD_MS,
    MAX_GPU_INDEX,
    gpu_index,
    usable_period_ms,
    wall_s_ok,
)
from gapwatch.core.models import GpuInfo, GpuSample, HostSample, Record, SessionHeader
from gapwatch.core.readings import is_stale_gpm
from gapwatch.sources.recording import Recording, RecordingError

_GPU_COLUMNS = ("sm_active_pct", "gpu_util_pct", "pcie_rx_bytes_per_s", "pcie_tx_bytes_per_s")
_HOST_COLUMNS = ("host_mem_used_pct", "host_psi_mem_some_avg10")


def _num(row: dict[str, str | None], key: str) -> float | None:
    value = row.get(key)
    if value is None or value.strip() == "":
        return None
    out = float(value)
    if not math.isfinite(out):  # NaN / inf: not a reading
        return None
    return out


@dataclass(frozen=True, slots=True)
class _Row:
    t_s: float
    gpu: int
    sm: float | None
    util: float | None
    rx: float | None
    tx: float | None
    mem: float | None
    psi: float | None


def _row(row: dict[str, str | None]) -> _Row:
    """One CSV row, or ValueError saying what is wrong with it (the caller skips and counts)."""
    t_s = _num(row, "timestamp_s")
    gpu_f = _num(row, "gpu")
    if t_s is None or gpu_f is None:
        raise ValueError("timestamp_s and gpu are required")
    if not wall_s_ok(t_s):
        raise ValueError(f"timestamp_s {t_s:g} is not a usable Unix time")
    gpu = gpu_index(gpu_f)
    if gpu is None:
        raise ValueError(f"gpu {gpu_f:g} is not a GPU index (0..{MAX_GPU_INDEX})")
    return _Row(t_s, gpu, _num(row, "sm_active_pct"), _num(row, "gpu_util_pct"),
                _num(row, "pcie_rx_bytes_per_s"), _num(row, "pcie_tx_bytes_per_s"),
                _num(row, "host_mem_used_pct"), _num(row, "host_psi_mem_some_avg10"))


def _rows(text: str, columns: list[str]) -> Iterator[tuple[int, _Row | ValueError]]:
    """(line number, row or what is wrong with it) for every data row of `text`."""
    reader = csv.DictReader(io.StringIO(text), fieldnames=columns)
    next(reader, None)  # the header line, read with its names stripped above
    line_no = 1
    for row in reader:
        line_no += 1
        try:
            yield line_no, _row(row)
        except (ValueError, TypeError) as exc:
            yield line_no, ValueError(str(exc))


def _csv_records(text: str, columns: list[str], rec: Recording) -> Iterator[Record]:
    last_t_ns: dict[int, int] = {}
    last_host_t_ns: int | None = None
    for line_no, parsed in _rows(text, columns):
        if isinstance(parsed, ValueError):
            rec.problem("bad_records", f"{rec.path}:{line_no}: bad row ({parsed}); skipped")
            continue
        t_s, gpu = parsed.t_s, parsed.gpu
        sm, util, rx, tx = parsed.sm, parsed.util, parsed.rx, parsed.tx
        mem, psi = parsed.mem, parsed.psi
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
        if is_stale_gpm(sm, rx, tx, None if prev is None else t_ns - prev):
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
        # utf-8-sig: a byte order mark (spreadsheets write one) is not part of the first name.
        text = p.read_text(encoding="utf-8-sig", errors="replace")
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
    rows = 0
    for _line_no, parsed in _rows(text, columns):
        if isinstance(parsed, ValueError):
            continue  # said with its line number when the records are read
        rows += 1
        gpus.add(parsed.gpu)
        t0 = parsed.t_s if t0 is None else min(t0, parsed.t_s)
        t1 = parsed.t_s if t1 is None else max(t1, parsed.t_s)
    estimate = ((t1 - t0) / max(1, rows) * 1000 * max(1, len(gpus))
                if t0 is not None and t1 is not None else 0.0)
    # Too few rows, or all at one time: no period to learn (the detector learns the spacing).
    period_ms = usable_period_ms(round(estimate, 1)) or DEFAULT_PERIOD_MS
    header = SessionHeader(
        gapwatch_version=__version__,
        host="(trace)",
        source=f"replay:{p}",
        started_wall_s=t0 or 0.0,
        started_mono_ns=int((t0 or 0.0) * 1e9),
        period_ms=period_ms,
        gpus=[GpuInfo(index=i, name="(trace)", sm_source="trace", pcie_source="trace")
              for i in sorted(gpus)],
    )
    rec = Recording(path=p, header=header, records=iter(()))
    if unknown:
        rec.problem("unknown_columns", f"{p}: ignoring unknown columns {', '.join(unknown)}")
    rec.records = _csv_records(text, columns, rec)
    return rec
