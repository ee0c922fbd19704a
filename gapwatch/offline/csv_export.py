"""A recording as a CSV in the shared-trace column layout, which `read_any` reads back.

Who calls it: `gapwatch.commands.export` (`gapwatch export FILE --format csv`). Streaming: rows
are written as records arrive, so a 24 h recording needs no more memory than a short one.

Layout (one row per GPU sample, the columns of `shared/traces/*/README.md`):
`timestamp_s,gpu,sm_active_pct,gpu_util_pct,pcie_rx_bytes_per_s,pcie_tx_bytes_per_s,
host_mem_used_pct,host_psi_mem_some_avg10`. `timestamp_s` is the sample's wall time (end of its
interval); a missing reading is an empty cell, never 0. Floats are written with `repr`, so the
numbers read back bit for bit. The two host columns come from the host sample nearest in time
(within `tolerance_s`; the export command uses one sampling period); none near: empty.
Only these columns exist in the layout: a recording's other fields (sources, lateness, the rest
of the host sample, log events) are not in the CSV.
"""

from __future__ import annotations

import csv
from collections import deque
from typing import IO

from gapwatch.core.models import GpuSample, HostSample, Record

COLUMNS: tuple[str, ...] = (
    "timestamp_s", "gpu", "sm_active_pct", "gpu_util_pct", "pcie_rx_bytes_per_s",
    "pcie_tx_bytes_per_s", "host_mem_used_pct", "host_psi_mem_some_avg10",
)


def _cell(value: float | None) -> str:
    return "" if value is None else repr(float(value))


class CsvExporter:
    """Writes rows as records are added; `close()` writes what is still waiting for a host
    sample. Rows keep the order of the GPU samples."""

    def __init__(self, out: IO[str], tolerance_s: float) -> None:
        self._writer = csv.writer(out, lineterminator="\n")
        self._writer.writerow(COLUMNS)
        self._tol = tolerance_s
        self._pending: deque[GpuSample] = deque()
        self._hosts: deque[HostSample] = deque(maxlen=8)
        self.rows = 0

    def add(self, record: Record) -> None:
        if isinstance(record, GpuSample):
            self._pending.append(record)
        elif isinstance(record, HostSample):
            self._hosts.append(record)
        else:
            return
        self._drain(record.t_wall_s)

    def close(self) -> None:
        self._drain(None)

    def _drain(self, now_s: float | None) -> None:
        # A row waits until its host sample can no longer change: a host sample at or after it
        # has arrived (later ones are further away), or data has moved past the tolerance.
        latest_host = self._hosts[-1].t_wall_s if self._hosts else None
        while self._pending:
            row = self._pending[0]
            decided = (now_s is None or now_s > row.t_wall_s + self._tol
                       or (latest_host is not None and latest_host >= row.t_wall_s))
            if not decided:
                return
            self._write(self._pending.popleft())

    def _write(self, s: GpuSample) -> None:
        host = min(self._hosts, key=lambda h: abs(h.t_wall_s - s.t_wall_s), default=None)
        if host is not None and abs(host.t_wall_s - s.t_wall_s) > self._tol:
            host = None
        self._writer.writerow((
            repr(s.t_wall_s), s.gpu, _cell(s.sm_active_pct), _cell(s.gpu_util_pct),
            _cell(s.pcie_rx_bytes_per_s), _cell(s.pcie_tx_bytes_per_s),
            _cell(host.mem_used_pct if host else None),
            _cell(host.psi_mem_some_avg10 if host else None),
        ))
        self.rows += 1
