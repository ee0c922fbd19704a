"""A recording as a CSV in the trace-CSV layout, which `read_any` reads back.

Who calls it: `gapwatch.commands.export` (`gapwatch export FILE --format csv`). Streaming: rows
are written as records arrive, so a 24 h recording needs no more memory than a short one.

The columns are `gapwatch.sources.trace_csv.COLUMNS`, the one declaration the reader uses too:
the shared traces' layout first (`timestamp_s,gpu,sm_active_pct,gpu_util_pct,
pcie_rx_bytes_per_s,pcie_tx_bytes_per_s,host_mem_used_pct,host_psi_mem_some_avg10`), then what
an exact round trip needs (monotonic time, interval, sources, the lower-bound flag, the GPU's
link). One row per GPU sample; `timestamp_s` is the sample's wall time (end of its interval); a
missing reading is an empty cell, never 0. Floats are written with `repr`, so the numbers read
back bit for bit, and `report` of the CSV finds the same gaps as `report` of the recording. The
two host columns come from the host sample nearest in time (within `tolerance_s`; the export
command uses one sampling period); none near: empty. A recording's other records (the rest of
the host sample, log events, copies, prover snapshots) are not in the CSV, so hints that cite
them differ; the gaps do not.
"""

from __future__ import annotations

import csv
from collections import deque
from typing import IO

from gapwatch.core.models import GpuInfo, GpuSample, HostSample, Record
from gapwatch.sources.trace_csv import COLUMN_NAMES, GpuRow, gpu_row, host_row


class CsvExporter:
    """Writes rows as records are added; `close()` writes what is still waiting for a host
    sample. Rows keep the order of the GPU samples."""

    def __init__(self, out: IO[str], tolerance_s: float, gpus: list[GpuInfo] | None = None
                 ) -> None:
        self._writer = csv.writer(out, lineterminator="\n")
        self._writer.writerow(COLUMN_NAMES)
        self._tol = tolerance_s
        self._links = {g.index: g.link_bytes_per_s for g in gpus or []}
        self._pending: deque[GpuSample] = deque()
        self._hosts: deque[HostSample] = deque(maxlen=8)
        #: GPU sample rows and host sample rows written.
        self.rows = 0
        self.host_rows = 0

    def add(self, record: Record) -> None:
        if isinstance(record, GpuSample):
            self._pending.append(record)
            self._drain(record.t_wall_s)
        elif isinstance(record, HostSample):
            self._hosts.append(record)
            self._drain(record.t_wall_s)
            # Its own row too, where it came in the recording: the GPU rows before it are
            # written (they were decided by it), those after it still wait.
            self._writer.writerow(host_row(record))
            self.host_rows += 1

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
        self._writer.writerow(gpu_row(GpuRow(s, self._links.get(s.gpu)), host))
        self.rows += 1
