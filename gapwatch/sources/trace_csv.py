"""Trace CSVs as a source: the layout of the shared H200 traces, read into gapwatch records.

Who calls it: `gapwatch.sources.recording.read_any` (hence `replay`, `report`, `export`) for a
`.csv` file; `gapwatch.offline.csv_export` writes the same layout.

Columns: `timestamp_s,gpu` plus any subset of `sm_active_pct,gpu_util_pct,pcie_rx_bytes_per_s,
pcie_tx_bytes_per_s,host_mem_used_pct,host_psi_mem_some_avg10`. Rows whose SM and PCIe readings
are all exactly 0.0 are stale GPM readings (GPM refreshes every ~100 ms; these traces were sampled
at 50 ms): they are merged into the next row's interval, never emitted as idle.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from gapwatch import __version__
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
    if out != out or out in (float("inf"), float("-inf")):  # NaN / inf: not a reading
        return None
    return out


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
