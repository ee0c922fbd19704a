"""Trace CSVs: the layout of the shared H200 traces, declared once (`COLUMNS`), read into records.

Who calls it: `gapwatch.sources.recording.read_any` (hence `replay`, `report`, `export`) for a
`.csv` file; `gapwatch.offline.csv_export` writes the same columns from the same declaration, so
writer and reader cannot drift apart.

Columns: `timestamp_s,gpu` plus any subset of the shared traces' `sm_active_pct,gpu_util_pct,
pcie_rx_bytes_per_s,pcie_tx_bytes_per_s,host_mem_used_pct,host_psi_mem_some_avg10`, then
gapwatch's own, which `export --format csv` writes so that a recording read back from its CSV
gives the same gaps to the nanosecond: `t_mono_ns`, `interval_ns`, `sm_source`, `pcie_source`,
`pcie_lower_bound`, `link_bytes_per_s` (a GPM reading is placed `gpm_lag_ms` earlier only when
its source is GPM; without the source column every reading is taken as a GPM trace's).

Without `interval_ns` (the shared traces, sampled at 50 ms), rows whose SM and PCIe readings are
all exactly 0.0 are stale GPM readings (GPM refreshes every ~100 ms): they are merged into the
next row's interval, never emitted as idle, for up to a second (`readings.GPM_MAX_EXTEND_NS`, the
sampler's own bound); after that the zeros are believed. With it (an exported recording), every
row is a sample as recorded and the detector judges staleness as it did live.

Bad input (docs/bad-input.md): a row whose `timestamp_s` is not a usable Unix time (empty,
NaN, 1e300), whose `gpu` is not a GPU index (1e30, -1, 2.5), with a number that does not parse,
a `t_mono_ns` beyond 64 bits or a source gapwatch does not know is skipped, counted in
`bad_records` and said with its line number; a UTF-8 byte order mark (spreadsheets write one) is
ignored; spaces around column names are ignored. The file is read a line at a time (plain or
gzip, `recording.open_lines`), twice (its GPUs and span for the header, then its rows), never
held whole: a line longer than `MAX_ROW_BYTES` is a bad row passed over without being held, and
each line is parsed as one CSV record, so that a stray quote or a field over the csv module's
limit is one bad row, never a traceback nor every row after it swallowed into one.
"""

from __future__ import annotations

import csv
import math
import os
import stat
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, get_args

import msgspec

from gapwatch import __version__
from gapwatch.base.gzip_stream import is_gzip
from gapwatch.core.bounds import (
    DEFAULT_PERIOD_MS,
    MAX_GPU_INDEX,
    ByteRate,
    EventRate,
    GpuPct,
    HostByteRate,
    Pct,
    Share,
    decimal,
    decimal_int,
    fits_i64,
    gpu_index,
    usable_period_ms,
    wall_s_ok,
)
from gapwatch.core.models import (
    GpuInfo,
    GpuSample,
    HostSample,
    Record,
    SessionHeader,
    SignalSource,
)
from gapwatch.core.readings import is_stale_gpm
from gapwatch.sources.gzip_lines import TOO_LONG
from gapwatch.sources.recording import LineStream, Recording, RecordingError, open_lines

#: The longest line read as a row. A row gapwatch writes is under 400 bytes (17 columns, each
#: a number written by `repr`, a source name or a flag); the shared traces' are shorter. 1 MiB
#: holds a header or row with thousands of columns gapwatch does not know, and is above the
#: csv module's field limit (128 KiB), so that a long field is said as one; a longer line is
#: no row, and is passed over as it is read (`gzip_lines.split_lines`), never held whole.
MAX_ROW_BYTES: Final = 1 << 20


def is_trace_csv(path: Path) -> bool:
    """Whether `path` is read as a trace CSV (by its name: `.csv`, any case)."""
    return path.suffix.lower() == ".csv"


def _number(text: str) -> float | None:
    out = decimal(text)  # ASCII only: "１" is not GPU 1, "1_000" is not a thousand
    return out if math.isfinite(out) else None  # NaN / inf: not a reading


def _bounded_by(kind: Any) -> Callable[[str], float | None]:
    """A reader of a number that must be within a record type's bounds (`bounds.ByteRate`,
    `Pct`...): the same bounds a JSON recording is read by, so a trace of 1e300 B/s is a bad
    row, not a rate the detector sums to infinity."""
    def read(text: str) -> float | None:
        value = _number(text)
        return None if value is None else float(msgspec.convert(value, kind))
    return read


def _integer(text: str) -> int | None:
    value = decimal_int(text)
    if not fits_i64(value):
        raise ValueError(f"{text} does not fit in 64 bits")
    return value


_SOURCES = frozenset(get_args(SignalSource))


def _source(text: str) -> str:
    if text not in _SOURCES:
        raise ValueError(f"source {text!r} is not one of {', '.join(sorted(_SOURCES))}")
    return text


def _flag(text: str) -> bool:
    if text not in ("0", "1"):
        raise ValueError(f"{text!r} is not 0 or 1")
    return text == "1"


def _float(v: float | None) -> str:
    # repr: the number reads back bit for bit.
    return "" if v is None else repr(float(v))


def _int(v: int | None) -> str:
    return "" if v is None else str(int(v))


def _text(v: str | None) -> str:
    return v or ""


def _bit(v: bool) -> str:
    return "1" if v else "0"


@dataclass(frozen=True, slots=True)
class GpuRow:
    """What a GPU row is written from: the sample and its GPU's link capacity (None: unknown)."""

    sample: GpuSample
    link_bytes_per_s: float | None


@dataclass(frozen=True, slots=True)
class Column:
    """One CSV column: its name; which rows carry it (`side`: "time" both, "gpu" GPU rows,
    "host" host rows, and GPU rows too for the shared layout's two host columns, from the
    nearest host sample); how its value is taken from the row's record (a `GpuRow` or a
    `HostSample`), written, and read back (an empty cell is None without calling `read`, which
    raises ValueError for a bad cell); whether the shared traces' layout has it."""

    name: str
    side: str
    get: Callable[[Any], Any]
    write: Callable[[Any], str]
    read: Callable[[str], Any]
    shared: bool = False


def _time_of(r: Any) -> Any:
    return r.sample if isinstance(r, GpuRow) else r


#: Every column, in file order: the shared traces' layout first (what other tools read), then
#: what an exact round trip of a recording needs.
COLUMNS: tuple[Column, ...] = (
    Column("timestamp_s", "time", lambda r: _time_of(r).t_wall_s, repr, _number, True),
    Column("gpu", "gpu", lambda r: r.sample.gpu, str, _number, True),
    Column("sm_active_pct", "gpu", lambda r: r.sample.sm_active_pct, _float, _bounded_by(GpuPct),
           True),
    Column("gpu_util_pct", "gpu", lambda r: r.sample.gpu_util_pct, _float, _bounded_by(GpuPct),
           True),
    Column("pcie_rx_bytes_per_s", "gpu", lambda r: r.sample.pcie_rx_bytes_per_s, _float,
           _bounded_by(ByteRate), True),
    Column("pcie_tx_bytes_per_s", "gpu", lambda r: r.sample.pcie_tx_bytes_per_s, _float,
           _bounded_by(ByteRate), True),
    Column("host_mem_used_pct", "host", lambda h: h.mem_used_pct, _float, _bounded_by(Pct), True),
    Column("host_psi_mem_some_avg10", "host", lambda h: h.psi_mem_some_avg10, _float,
           _bounded_by(Pct), True),
    Column("t_mono_ns", "time", lambda r: _time_of(r).t_mono_ns, str, _integer),
    Column("interval_ns", "time", lambda r: _time_of(r).interval_ns, _int, _integer),
    Column("sm_source", "gpu", lambda r: r.sample.sm_source, _text, _source),
    Column("pcie_source", "gpu", lambda r: r.sample.pcie_source, _text, _source),
    Column("pcie_lower_bound", "gpu", lambda r: r.sample.pcie_lower_bound, _bit, _flag),
    Column("link_bytes_per_s", "gpu", lambda r: r.link_bytes_per_s, _float,
           _bounded_by(HostByteRate)),
    Column("host_psi_mem_some_share", "host", lambda h: h.psi_mem_some_share, _float,
           _bounded_by(Share)),
    Column("host_major_faults_per_s", "host", lambda h: h.major_faults_per_s, _float,
           _bounded_by(EventRate)),
    Column("host_mem_bandwidth_bytes_per_s", "host", lambda h: h.mem_bandwidth_bytes_per_s,
           _float, _bounded_by(HostByteRate)),
)
COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in COLUMNS)
_BY_NAME = {c.name: c for c in COLUMNS}


def gpu_row(row: GpuRow, nearest_host: HostSample | None) -> list[str]:
    """The cells of a GPU sample's row: its own columns, and the shared layout's two host
    columns from the host sample nearest in time (None: empty)."""
    cells = []
    for c in COLUMNS:
        if c.side == "host":
            cells.append(c.write(c.get(nearest_host))
                         if c.shared and nearest_host is not None else "")
        else:
            cells.append(c.write(c.get(row)))
    return cells


def host_row(host: HostSample) -> list[str]:
    """The cells of a host sample's own row (its `gpu` cell empty): an exported recording keeps
    every host sample at its own time, as a live session fed it."""
    return [c.write(c.get(host)) if c.side in ("time", "host") else "" for c in COLUMNS]


@dataclass(frozen=True, slots=True)
class CsvRow:
    """One CSV row's values, a field per column of `COLUMNS` (missing or empty: None), read by
    that column's reader. `gpu` is None for a host row; `timestamp_s` is always a usable Unix
    time (`_row` refuses a row without one)."""

    timestamp_s: float
    gpu: int | None
    sm_active_pct: float | None
    gpu_util_pct: float | None
    pcie_rx_bytes_per_s: float | None
    pcie_tx_bytes_per_s: float | None
    host_mem_used_pct: float | None
    host_psi_mem_some_avg10: float | None
    t_mono_ns: int | None
    interval_ns: int | None
    sm_source: SignalSource | None
    pcie_source: SignalSource | None
    pcie_lower_bound: bool | None
    link_bytes_per_s: float | None
    host_psi_mem_some_share: float | None
    host_major_faults_per_s: float | None
    host_mem_bandwidth_bytes_per_s: float | None


def _row(row: dict[str, str | None]) -> CsvRow:
    """One CSV row's values by column (`CsvRow`), or ValueError saying what is wrong with it
    (the caller skips and counts)."""
    cells: dict[str, Any] = {}
    for name, column in _BY_NAME.items():
        text = row.get(name)
        text = text.strip() if text is not None else ""
        try:
            cells[name] = column.read(text) if text else None
        except (ValueError, TypeError, OverflowError) as exc:
            raise ValueError(f"{name}: {exc}") from None
    t_s, gpu_f = cells["timestamp_s"], cells["gpu"]
    if t_s is None:
        raise ValueError("timestamp_s and gpu are required")
    if not wall_s_ok(t_s):
        raise ValueError(f"timestamp_s {t_s:g} is not a usable Unix time")
    if gpu_f is not None:
        gpu = gpu_index(gpu_f)
        if gpu is None:
            raise ValueError(f"gpu {gpu_f:g} is not a GPU index (0..{MAX_GPU_INDEX})")
        cells["gpu"] = gpu
    # The one place the cells become typed: every other step reads the row's fields.
    return CsvRow(**cells)


class _SpansLines(Exception):
    """Raised when the csv module asks for a record's next line: a quote left open."""


def _alone(text: str) -> Iterator[str]:
    """`text` as the only line the csv module may read for a record: asking for another means
    a quote was left open, which must not swallow the rows after it (one stray `"` made the
    rest of a file one field, or a `field larger than field limit` traceback)."""
    yield text
    raise _SpansLines


def _cells(line: bytes) -> list[str]:
    """The cells of one line of the file, parsed as one CSV record ([] for a blank line, which
    the csv module skips). Raises ValueError saying why it is no row."""
    if line is TOO_LONG:
        raise ValueError(f"a line longer than {MAX_ROW_BYTES >> 20} MiB, more than any trace "
                         "row; passed over unread")
    text = line.decode("utf-8", errors="replace")
    try:
        return next(csv.reader(_alone(text)), [])
    except _SpansLines:
        raise ValueError("a quote left open: a row never spans lines") from None
    except csv.Error as exc:
        raise ValueError(f"not one CSV row: {exc}") from None


def _rows(lines: Iterable[bytes], columns: list[str]
          ) -> Iterator[tuple[int, CsvRow | ValueError]]:
    """(line number, row or what is wrong with it) for every data line of `lines` (the file's
    lines after its header: line 2 on). Raises what reading the file raises (a gzip cut short).
    """
    for line_no, line in enumerate(lines, 2):
        try:
            cells = _cells(line)
            if not cells:
                continue
            # Not strict, as the csv module's DictReader: a short row's missing cells are
            # empty, cells past the header's columns are ignored.
            named: dict[str, str | None] = dict(zip(columns, cells, strict=False))
            parsed: CsvRow | ValueError = _row(named)
        except (ValueError, TypeError) as exc:
            # A new exception, without the traceback: none outlives its handler (`_records`
            # of `recording` says why).
            parsed = ValueError(str(exc))
        yield line_no, parsed


def _open(p: Path) -> LineStream:
    """`p` open for its lines, each at most `MAX_ROW_BYTES`, ended by LF, CRLF or a bare CR
    (an old Mac's, a spreadsheet's "CSV (Macintosh)", or lines of both kinds in one file after
    a `cat`), as the csv module's own reading splits them. A row never spans lines: a CR inside
    quotes ends the line as a LF there does (a bad row, said). Raises RecordingError."""
    return open_lines(p, MAX_ROW_BYTES, "a trace CSV", bare_cr_ends_lines=True)


def _csv_records(p: Path, columns: list[str], rec: Recording) -> Iterator[Record]:
    """The records of the rows of `p` (opened again: the header was read from a first pass),
    a gzip file cut short counted `truncated` after every row before the cut."""
    try:
        stream = _open(p)
    except RecordingError as exc:  # gone, or replaced, since the first pass
        rec.problem("truncated", f"{exc}; its rows could not be read again")
        return
    try:
        stream.readline()  # the header
        yield from _records_of(_rows(stream, columns), columns, rec)
    except (EOFError, zlib.error, OSError) as exc:
        rec.problem("truncated", f"{p}: file ends early ({exc}); kept what read")
    finally:
        stream.close()


def _records_of(rows: Iterable[tuple[int, CsvRow | ValueError]], columns: list[str],
                rec: Recording) -> Iterator[Record]:
    """The records of parsed rows, bad ones counted and said."""
    # An exported recording (it has `interval_ns`): every row is a record as recorded, host
    # samples in rows of their own. Else a trace: host readings ride on the GPU rows.
    exact = "interval_ns" in columns
    last_t_ns: dict[int, int] = {}
    last_host_t_ns: int | None = None
    for line_no, parsed in rows:
        if isinstance(parsed, ValueError):
            rec.problem("bad_records", f"{rec.path}:{line_no}: bad row ({parsed}); skipped")
            continue
        t_s, gpu = parsed.timestamp_s, parsed.gpu
        t_ns = parsed.t_mono_ns
        if t_ns is None:
            t_ns = int(round(t_s * 1e9))
        if gpu is None:
            if not exact:
                rec.problem("bad_records",
                            f"{rec.path}:{line_no}: bad row (timestamp_s and gpu are required); "
                            "skipped")
                continue
            yield _host(parsed, t_ns, parsed.interval_ns)
            continue
        prev = last_t_ns.get(gpu)
        if prev is not None and t_ns <= prev:
            rec.problem("out_of_order", f"{rec.path}:{line_no}: time goes backwards; row skipped")
            continue
        host: HostSample | None = None
        if not exact and (parsed.host_mem_used_pct is not None
                          or parsed.host_psi_mem_some_avg10 is not None) and (
                last_host_t_ns is None or t_ns > last_host_t_ns):
            host = _host(parsed, t_ns, None if last_host_t_ns is None else t_ns - last_host_t_ns)
            last_host_t_ns = t_ns
        sm, rx, tx = parsed.sm_active_pct, parsed.pcie_rx_bytes_per_s, parsed.pcie_tx_bytes_per_s
        if not exact and is_stale_gpm(sm, rx, tx, None if prev is None else t_ns - prev):
            rec.counters["stale_gpm_rows"] = rec.counters.get("stale_gpm_rows", 0) + 1
            if prev is None:
                last_t_ns[gpu] = t_ns  # the next real reading covers from here
        else:
            last_t_ns[gpu] = t_ns
            yield _sample(parsed, gpu, t_ns, prev, exact)
        if host is not None:
            # After the GPU sample, as the sampler feeds a tick: fed first, a host sample at the
            # end of a GPU's hole would find that GPU silent (NO_DATA) before its sample came.
            yield host


def _host(row: CsvRow, t_ns: int, interval_ns: int | None) -> HostSample:
    return HostSample(
        t_mono_ns=t_ns, t_wall_s=row.timestamp_s, interval_ns=interval_ns,
        mem_used_pct=row.host_mem_used_pct, mem_available_bytes=None, swap_used_bytes=None,
        cpu_busy_pct=None, psi_mem_some_avg10=row.host_psi_mem_some_avg10,
        psi_mem_full_avg10=None, psi_mem_some_share=row.host_psi_mem_some_share,
        psi_mem_full_share=None, major_faults_per_s=row.host_major_faults_per_s,
        mem_bandwidth_bytes_per_s=row.host_mem_bandwidth_bytes_per_s,
    )  # fmt: skip


def _sample(row: CsvRow, gpu: int, t_ns: int, prev: int | None, exact: bool) -> GpuSample:
    """The row as a GPU sample: sources and interval as written where the CSV has them (an
    exported recording), else a GPM trace's with the interval since the GPU's last row."""
    sm, rx, tx = row.sm_active_pct, row.pcie_rx_bytes_per_s, row.pcie_tx_bytes_per_s
    sm_source: SignalSource | None = row.sm_source if exact else (
        "trace" if sm is not None else None)
    pcie_source: SignalSource | None = row.pcie_source if exact else (
        "trace" if rx is not None or tx is not None else None)
    interval = row.interval_ns if exact else (None if prev is None else t_ns - prev)
    return GpuSample(
        gpu=gpu, t_mono_ns=t_ns, t_wall_s=row.timestamp_s, interval_ns=interval,
        sm_active_pct=sm, gpu_util_pct=row.gpu_util_pct, pcie_rx_bytes_per_s=rx,
        pcie_tx_bytes_per_s=tx, sm_source=sm_source, pcie_source=pcie_source,
        pcie_lower_bound=bool(row.pcie_lower_bound),
    )  # fmt: skip


def read_trace_csv(path: str | Path) -> Recording:
    """Read a trace CSV. The header lists the GPUs seen in the file (a first pass; the records
    are read in a second, so a FIFO cannot be read: `files.read_any` refuses one)."""
    p = Path(path)
    stream = _open(p)
    try:
        columns = _columns(p, stream)
        scan = _Scan()
        try:
            for _line_no, parsed in _rows(stream, columns):
                scan.add(parsed)
        except (EOFError, zlib.error, OSError):
            pass  # a gzip cut short: said when the records are read
    finally:
        stream.close()
    header = SessionHeader(
        gapwatch_version=__version__,
        host="(trace)",
        source=f"replay:{p}",
        started_wall_s=scan.t0 or 0.0,
        started_mono_ns=int((scan.t0 or 0.0) * 1e9),
        period_ms=scan.period_ms(),
        gpus=[_gpu_info(i, scan.gpus[i], exact="interval_ns" in columns)
              for i in sorted(scan.gpus)],
    )
    rec = Recording(path=p, header=header, records=iter(()))
    unknown = [c for c in columns if c not in _BY_NAME]
    if unknown:
        rec.problem("unknown_columns", f"{p}: ignoring unknown columns {', '.join(unknown)}")
    rec.records = _csv_records(p, columns, rec)
    return rec


def _columns(p: Path, stream: LineStream) -> list[str]:
    """The column names of the header line (the first), names stripped. Raises
    RecordingError when it is not a trace CSV's."""
    try:
        first_line = stream.readline()
    except (EOFError, zlib.error, OSError) as exc:
        raise RecordingError(f"{p}: not a readable trace CSV ({exc})") from None
    if first_line is TOO_LONG:
        raise RecordingError(f"{p}: not a trace CSV (its first line is longer than "
                             f"{MAX_ROW_BYTES >> 20} MiB)")
    # utf-8-sig: a byte order mark (spreadsheets write one) is not part of the first name.
    text = first_line.decode("utf-8-sig", errors="replace")
    first = text.splitlines()[0] if text else ""
    columns = [c.strip() for c in first.split(",")]
    if "timestamp_s" not in columns or "gpu" not in columns:
        raise RecordingError(f"{p}: not a trace CSV (needs columns timestamp_s and gpu)")
    return columns


#: How much of a plain trace CSV's end `last_time_s` reads (a row is under 400 bytes).
TAIL_BYTES: Final = 1 << 16


def last_time_s(path: Path) -> float | None:
    """The time of a plain trace CSV's last row that names a usable one, read from its end
    (its first line for the columns, its last `TAIL_BYTES` for the rows): what a moment of it
    is resolved against (`files.data_end`), as a recording's end is. None for a gzip file (it
    cannot be read from its end), a stream, or an end that names no usable time. Never
    raises. Without it, `--since 16:18` of a CSV begun at 16:18:36 took the next day's 16:18
    and reported an empty window."""
    try:
        # Only a regular file is opened: opening a FIFO would wait for its writer.
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as f:
            head = f.readline(MAX_ROW_BYTES)
            if is_gzip(head[:2]):
                return None
            size = os.fstat(f.fileno()).st_size
            start = max(len(head), size - TAIL_BYTES)
            f.seek(start)
            tail = f.read(size - start)
    except OSError:
        return None
    columns = [c.strip() for c in head.decode("utf-8-sig", "replace").split(",")]
    if "timestamp_s" not in columns:
        return None
    at = columns.index("timestamp_s")
    lines = tail.decode("utf-8", "replace").splitlines()
    for row in csv.reader(reversed(lines[1 if start > len(head) else 0:])):
        t = _number(row[at].strip()) if len(row) > at else None
        if t is not None and wall_s_ok(t):
            return t
    return None


class _Scan:
    """What the first pass learns for the header: per GPU, its first row that names a source
    (the link and the sources of an exported recording), else its first row; the span of the
    GPU rows' times and how many there are."""

    def __init__(self) -> None:
        self.gpus: dict[int, CsvRow] = {}
        self.t0: float | None = None
        self.t1: float | None = None
        self.rows = 0

    def add(self, parsed: CsvRow | ValueError) -> None:
        """Take one parsed row (a bad one is said with its line number when the records are
        read; a host row is read with the records)."""
        if isinstance(parsed, ValueError) or parsed.gpu is None:
            return
        self.rows += 1
        seen = self.gpus.setdefault(parsed.gpu, parsed)
        if seen.sm_source is None and parsed.sm_source is not None:
            self.gpus[parsed.gpu] = parsed
        t_s = parsed.timestamp_s
        self.t0 = t_s if self.t0 is None else min(self.t0, t_s)
        self.t1 = t_s if self.t1 is None else max(self.t1, t_s)

    def period_ms(self) -> float:
        """The sampling period the rows' spacing gives, or the default one where there are too
        few rows, or all at one time (the detector learns the spacing)."""
        estimate = ((self.t1 - self.t0) / max(1, self.rows) * 1000 * max(1, len(self.gpus))
                    if self.t0 is not None and self.t1 is not None else 0.0)
        return usable_period_ms(round(estimate, 1)) or DEFAULT_PERIOD_MS


def _gpu_info(index: int, first: CsvRow, exact: bool) -> GpuInfo:
    """A GPU of the CSV: a GPM trace's, or, from an exported recording, its link and sources
    as its first row wrote them."""
    if not exact:
        return GpuInfo(index=index, name="(trace)", sm_source="trace", pcie_source="trace")
    return GpuInfo(index=index, name="(trace)", link_bytes_per_s=first.link_bytes_per_s,
                   sm_source=first.sm_source, pcie_source=first.pcie_source)
