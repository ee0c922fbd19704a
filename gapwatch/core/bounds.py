"""Bounds on numbers that come from outside: log lines, recordings, trace CSVs, headers.

Who calls it: the log parser (`gapwatch.logs.parse`: integers in fields), the recording reader
(through the constrained types below, which `gapwatch.core.models` puts on its record fields, so
that the record codec, `gapwatch.core.codec`, refuses out-of-range values while decoding), the
trace CSV reader, every consumer of a header's period, and the copy-trace reader
(`gapwatch.sources.copytrace`: copy sizes, copy times against now, the senders' counters and how
many senders there are); the sampler config takes its period's default and bound from here.
Pure, no I/O.

Why: a number gapwatch cannot hold or print is worse than a missing one. An integer beyond 64
bits cannot be held by most JSON readers nor by Prometheus (one such log field once dropped its
event from the recording, the detector and /metrics); a timestamp of 1e300 overflows every
conversion to nanoseconds or to a date; a GPU index of 1e30 is not a GPU; a period of 0 divides
by zero. Each such value is refused where it enters, counted and said, and the rest of the input
is used. A copy of 2**63 bytes sent to the copy-trace socket (any process may write to it) used
to kill the sampler thread: the gap it fell in summed its bytes beyond 64 bits and the recorder
could not write that gap.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, TypeVar

import msgspec

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
#: No box has more GPUs than this; a larger index in a file is junk, not a GPU.
MAX_GPU_INDEX = 255
#: The longest a number of seconds may be (10 years), a flag's or a setting's. Beyond it no
#: setting means anything, and Python's own timeouts and conversions overflow: `fleet --timeout
#: 1e26` reached `socket.settimeout` and died in an `OverflowError` ("timestamp out of range for
#: platform time_t"); `sim.duration_s = 1e308` in `int(duration * 1e9)`.
MAX_SECONDS = 10 * 365.25 * 86400
#: Latest Unix time gapwatch accepts (2262-04-11): every accepted wall time converts to
#: nanoseconds within 64 bits (trace CSVs derive `t_mono_ns` from it) and to a printable date.
MAX_WALL_S = INT64_MAX / 1e9
#: The sampling period: `SamplerConfig.period_ms`'s default, what the detector assumes before two
#: samples tell the real spacing, and what a file that states no usable period is read with.
#: 100 ms matches GPM's refresh; below it GPM repeats stale intervals.
DEFAULT_PERIOD_MS = 100.0
DEFAULT_PERIOD_NS = round(DEFAULT_PERIOD_MS * 1_000_000)
#: The longest sampling period: the sampler's bound and the most a header may state.
MAX_PERIOD_MS = 60_000.0
#: The shortest: NVML's readings do not change faster (GPM refreshes every ~100 ms). A header
#: may state no less (`5e-324` ms was a period of 0 s once divided: replay's ZeroDivisionError).
MIN_PERIOD_MS = 1.0
#: The plausible per-direction capacity of one GPU's host link: PCIe Gen1 x1 (250 MB/s) is the
#: least; the most, with room, above NVLink-C2C's 450 GB/s. A header's link outside is a lie.
MIN_LINK_BYTES_PER_S = 2.5e8
MAX_LINK_BYTES_PER_S = 1e12

#: The largest host<->device copy gapwatch takes for one: a copy lands in (or comes from) one
#: GPU's memory, and no GPU holds a TiB. Summed over any gap's copies it stays far within 64
#: bits (8 M such copies would be needed to overflow).
MAX_COPY_BYTES = 1 << 40
#: The longest copy that is a copy (one cudaMemcpy of 141 GB at 1 GB/s takes 141 s).
MAX_COPY_S = 3600.0
#: How long after a copy ended it may still arrive: the library sends every ~100 ms and CUPTI
#: hands its buffers over within seconds, so a copy that ended ten minutes before it arrived
#: is not a live copy (a clock far off, or garbage: 1970 used to be accepted).
MAX_COPY_LATE_S = 600.0
#: How far in the future (by our clock) a copy may end: both clocks are this box's
#: CLOCK_REALTIME, so only a clock step between the copy and its arrival puts it ahead.
MAX_COPY_EARLY_S = 60.0
#: The largest cumulative counter (copies seen, drops, sequence number) a sender may report:
#: a million copies a second for eight years. A larger one is garbage (1.8e19 drops was read).
MAX_SENDER_COUNTER = 1 << 48
#: The most senders (prover processes) followed at once: a box runs a few provers; a flood of
#: fake ones is refused beyond this, so the reader's memory stays bounded.
MAX_SENDERS = 64
#: Linux's largest pid (PID_MAX_LIMIT): a larger or zero pid is not a process.
MAX_PID = 1 << 22

# Constrained types for record fields read from files, declared once: the record codec checks
# them while decoding. A value outside them makes the line a bad record (skipped, counted,
# said), never a record that crashes a later stage.
I64 = Annotated[int, msgspec.Meta(ge=INT64_MIN, le=INT64_MAX)]
MonoNs = Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)]
GpuIndex = Annotated[int, msgspec.Meta(ge=0, le=MAX_GPU_INDEX)]
WallS = Annotated[float, msgspec.Meta(ge=0, le=MAX_WALL_S)]
CopyBytes = Annotated[int, msgspec.Meta(ge=0, le=MAX_COPY_BYTES)]
#: A byte rate read from a file (PCIe, host memory bandwidth): no link or memory system of one
#: box moves 10 TB/s. A rate of 1e300 B/s made a GPU's link "belie" its header and summed to
#: infinity. Negative GPU rates stay allowed: the detector reads them as no reading.
MAX_BYTES_PER_S = 1e13
ByteRate = Annotated[float, msgspec.Meta(le=MAX_BYTES_PER_S)]
HostByteRate = Annotated[float, msgspec.Meta(ge=0, le=MAX_BYTES_PER_S)]
#: Host readings that are shares of something: a percentage, a share of an interval, a rate of
#: events (major faults: a million a second is already a box in trouble). The host source
#: clamps what it computes to these, so that what it writes reads back
#: (`gapwatch.sources.host`); "host memory 1.7e308 % used" was printed in 309 digits.
Pct = Annotated[float, msgspec.Meta(ge=0, le=100)]
#: A GPU's SM activity or utilization: at most 100 %; a negative one stays "no reading" (the
#: detector's rule, `core.readings`).
GpuPct = Annotated[float, msgspec.Meta(le=100)]
Share = Annotated[float, msgspec.Meta(ge=0, le=1)]
MAX_EVENTS_PER_S = 1e12
EventRate = Annotated[float, msgspec.Meta(ge=0, le=MAX_EVENTS_PER_S)]
#: A GPU's health and link readings (NVML), as far as any GPU can read: a recording's "Gen99
#: x-3 = 1e300 GB/s" link or a 1e300 degC GPU was printed in hundreds of digits. The NVML source
#: gives None for a value outside them (`within`), so that what it writes reads back.
MIN_TEMPERATURE_C, MAX_TEMPERATURE_C = -100.0, 250.0
MAX_WATTS = 100_000.0
#: The least power limit that is one (W): a limit of 0 is none read.
MIN_POWER_LIMIT_W = 1.0
MAX_MHZ = 1_000_000
MAX_MEMORY_BYTES = 1 << 56
MAX_PCIE_GEN, MAX_PCIE_WIDTH = 16, 64
Celsius = Annotated[float, msgspec.Meta(ge=MIN_TEMPERATURE_C, le=MAX_TEMPERATURE_C)]
Watts = Annotated[float, msgspec.Meta(ge=0, le=MAX_WATTS)]
Mhz = Annotated[int, msgspec.Meta(ge=0, le=MAX_MHZ)]
MemoryBytes = Annotated[int, msgspec.Meta(ge=0, le=MAX_MEMORY_BYTES)]
#: A count or bitmask that cannot be negative (ECC errors, PCIe replays, clock reasons).
Count = Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)]
#: The most errors one GPU error event stands for (`HardwareEvent.count`: ECC errors or PCIe
#: replays a counter grew by between two readings, a second or a minute apart): no GPU counts
#: four billion between two. Summed over a recording's events a count stays far within 64 bits
#: (2^31 events would be needed); two recorded events of 2^63-1 summed beyond them, and
#: `report --json` wrote an integer no JSON reader holds. A larger growth is no count read.
MAX_ERRORS_PER_EVENT = 1 << 32
ErrorCount = Annotated[int, msgspec.Meta(ge=0, le=MAX_ERRORS_PER_EVENT)]
#: A duration a program reported or gapwatch measured (a prover's uptime, a worker's busy
#: time, `/status`'s latency): never negative, below a million years (`1e999` is not one).
MAX_DURATION_S = 3e13
DurationS = Annotated[float, msgspec.Meta(ge=0, le=MAX_DURATION_S)]
DurationMs = Annotated[float, msgspec.Meta(ge=0, le=MAX_DURATION_S * 1000)]
#: A stretch a source measured (a blind spot: NVML blocked for seconds, minutes at worst).
MAX_STRETCH_S = 1e6
StretchS = Annotated[float, msgspec.Meta(ge=0, le=MAX_STRETCH_S)]
PcieGen = Annotated[int, msgspec.Meta(ge=1, le=MAX_PCIE_GEN)]
PcieWidth = Annotated[int, msgspec.Meta(ge=1, le=MAX_PCIE_WIDTH)]

#: Provers one session follows by name at once (each `--cuzk-status` URL is one, the simulator
#: "sim"; more URLs are refused at start): a recording names its own, and one naming 20,000
#: provers kept a snapshot of each in the store, 115,000 series on `/metrics` and a pipeline
#: line each on the dashboard.
MAX_PROVERS = 64

#: Characters of a process's name (its comm: at most 15 bytes, `TASK_COMM_LEN`, up to 64 for
#: a kernel thread, the kernel's escapes of control bytes at most four times that): a
#: recording's name of a megabyte went whole into every gap's hint, row and trace slice.
MAX_PROCESS_NAME = 256
ProcessName = Annotated[str, msgspec.Meta(max_length=MAX_PROCESS_NAME)]
#: What one prover snapshot (`models.ProverStatus`) holds at most: what one poll of the prover's
#: status reads (`gapwatch.cuzk.status` cuts an answer to these, counting the rest). A real
#: snapshot holds a few dozen partitions and one worker per GPU; a recorded one had no bound,
#: and 60 snapshots of 20,000 workers and partitions took a report to 860 MB.
MAX_SNAPSHOT_JOBS = 256
MAX_SNAPSHOT_PARTITIONS = 1024
MAX_SNAPSHOT_WORKERS = 256
MAX_SNAPSHOT_SRS = 256
#: Partition states a snapshot counts (`models.PARTITION_STATES` and "other", with room).
MAX_SNAPSHOT_STATES = 16
#: Characters of a snapshot's text (a job id, a proof kind, an SRS circuit, a state): a poll
#: keeps 512 of each and says how many it cut (`sizes.cut_text`), well within this.
MAX_SNAPSHOT_TEXT = 1024
SnapshotText = Annotated[str, msgspec.Meta(max_length=MAX_SNAPSHOT_TEXT)]

_K = TypeVar("_K")
_V = TypeVar("_V")


def keep_latest(by_key: dict[_K, _V], key: _K, value: _V, most: int) -> bool:
    """Put `value` at `key` as the latest one heard (moved to the end of `by_key`) and forget
    the least recently heard keys beyond `most`. True when one was forgotten (for a count):
    per-name state whose names come from outside stays bounded."""
    by_key.pop(key, None)
    by_key[key] = value
    forgot = False
    while len(by_key) > most:
        del by_key[next(iter(by_key))]
        forgot = True
    return forgot


_N = TypeVar("_N", int, float)


def within(value: _N | None, lo: _N, hi: _N) -> _N | None:
    """A reading a source got, or None when it is outside `lo..hi` (or NaN): what no hardware
    reads is no reading (NVML's all-ones "not available" sentinels; a 64-bit counter that went
    back, unwrapped, ~1e20 bytes), and what the sources write reads back within the
    recording's types."""
    return value if value is not None and lo <= value <= hi else None


def fits_i64(n: int) -> bool:
    """Does `n` fit a signed 64-bit integer (what JSON writers and Prometheus can hold)?"""
    return INT64_MIN <= n <= INT64_MAX


def wall_s_ok(t: float) -> bool:
    """Is `t` a usable Unix time: finite, not before 1970, not after `MAX_WALL_S`?"""
    return 0.0 <= t <= MAX_WALL_S  # NaN fails both comparisons


def gpu_index(value: float) -> int | None:
    """`value` as a GPU index (a whole number 0..MAX_GPU_INDEX), or None if it is not one."""
    if not (0 <= value <= MAX_GPU_INDEX) or value != math.floor(value):
        return None
    return int(value)


def usable_period_ms(period_ms: float) -> float | None:
    """A stated sampling period if it can be used (finite, 1 ms to a minute), else None."""
    if MIN_PERIOD_MS <= period_ms <= MAX_PERIOD_MS:
        return period_ms
    return None


def copy_bytes_ok(n: int) -> bool:
    """Is `n` a possible size of one copy (0..MAX_COPY_BYTES)?"""
    return 0 <= n <= MAX_COPY_BYTES


def copy_span_problem(duration_s: float) -> str | None:
    """Why a copy lasting `duration_s` cannot be one (it ends before it starts, or lasts over
    `MAX_COPY_S`); None when it can. Live copies (`copy_times_problem`) and recorded ones
    (`models.CopyRecord`) alike."""
    if duration_s < 0:
        return "it ends before it starts"
    if duration_s > MAX_COPY_S:
        return f"it lasts over {MAX_COPY_S:g} s"
    return None


def copy_times_problem(start_ns: int, end_ns: int, now_wall_s: float) -> str | None:
    """Why a live copy from `start_ns` to `end_ns` (Unix nanoseconds, as the library sends them:
    integers, since 10 ns is below a float's resolution at today's times), arriving at
    `now_wall_s`, cannot be one; None when it can."""
    if not (0 < start_ns and wall_s_ok(end_ns / 1e9)):
        return "not a usable time"
    if end_ns < start_ns:  # in nanoseconds: a copy 10 ns backwards is 0 s long as floats
        return "it ends before it starts"
    # Then the span as `models.CopyRecord` checks it (seconds as floats, subtracted): the same
    # arithmetic, so a copy let through here can never be refused there (the two differ only
    # where the times straddle a power of two of seconds, such as 2038-01-19).
    span = copy_span_problem(end_ns / 1e9 - start_ns / 1e9)
    if span is not None:
        return span
    late_s = now_wall_s - end_ns / 1e9
    if late_s > MAX_COPY_LATE_S:
        return f"it ended {late_s:.0f} s before it arrived"
    if -late_s > MAX_COPY_EARLY_S:
        return f"it ends {-late_s:.0f} s in the future"
    return None


def sender_counter_ok(n: int) -> bool:
    """Is `n` a possible cumulative counter of a copy-trace sender (0..MAX_SENDER_COUNTER)?"""
    return 0 <= n <= MAX_SENDER_COUNTER


def pid_ok(pid: int) -> bool:
    """Is `pid` a possible Linux process id?"""
    return 0 < pid <= MAX_PID


#: A number as a file writes one: ASCII digits with an optional sign, point and exponent, or the
#: words nan and inf. Python's `float` and `int` also read full-width and other scripts' digits
#: ("１" became GPU 1) and underscores ("1_000_000_000_000"); no CSV or log writer means those.
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf|infinity)",
                      re.ASCII | re.IGNORECASE)
_ASCII_SPACE = " \t\r\n\f\v"


def decimal(text: str) -> float:
    """`text` (ASCII spaces around it allowed) as a number, by the rule above. Raises
    ValueError for anything else."""
    s = text.strip(_ASCII_SPACE)
    if not _DECIMAL.fullmatch(s):
        raise ValueError(f"{text!r} is not a number")
    return float(s)


def decimal_int(text: str) -> int:
    """`text` as a whole number (`12`, `12.0`, `1.2e1`), by the rule above. Raises ValueError
    for anything else."""
    s = text.strip(_ASCII_SPACE)
    if not _DECIMAL.fullmatch(s):
        raise ValueError(f"{text!r} is not a number")
    if s.lstrip("+-").isdigit():
        return int(s)
    value = float(s)
    if not value.is_integer():
        raise ValueError(f"{text} is not an integer")
    return int(value)
