"""The host source: memory pressure on the machine that feeds the GPUs, one `HostSample` per tick.

Who calls it: the sampler thread (`gapwatch.engine.sampler`), through the `HostSource` protocol,
right after the GPU source on every tick.

Why these fields: pageable host-to-device copies are staged through a small pinned bounce buffer
by the CPU, so they slow down when host memory bandwidth is contended or memory is short. The
detector uses them to tell `host_stall` and `pcie_starved` gaps apart and to explain them.

Sources, all read from files under an injectable `root` (tests use fake /proc and /sys trees):
- /proc/meminfo: used % ((total - available) / total, as `free`), available bytes, swap used;
- /proc/stat: CPU busy % over the interval (all CPUs; idle and iowait count as not busy);
- /proc/pressure/memory: PSI some/full avg10, and the share of the interval stalled, from the
  cumulative `total` (µs) counters, which react within one tick where avg10 lags by seconds;
- /proc/pressure/cpu: the share of the interval some runnable task waited for a CPU (its `some
  total`), and its `some avg10`: synthesis threads outnumbering the cores starve the GPU as
  surely as a slow copy;
- /proc/vmstat: major page faults per second (pgmajfault);
- /sys/fs/resctrl/mon_data/*/mbm_total_bytes: memory bandwidth of the root resctrl group (summed
  over L3 domains), where the kernel and CPU support MBM and resctrl is mounted.

Anything absent or unreadable is None, never 0. Rates need a previous reading: they are None on
the first tick, and None again after a counter went backwards (reset, remount). On a system
without /proc (not Linux) every field is None: gapwatch watches Linux proving boxes (cuzk, the
copy trace and the prover's /proc/PID/status are Linux-only), so it carries no second way to
read memory and CPU for other systems (psutil was one: a dependency that served only them).
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass

from gapwatch.config import HostConfig
from gapwatch.core.bounds import MAX_BYTES_PER_S, MAX_EVENTS_PER_S, within
from gapwatch.core.models import HostSample


@dataclass(slots=True)
class _Previous:
    """Cumulative counters of the previous tick, for the per-interval rates."""

    t_mono_ns: int
    cpu_busy: int | None
    cpu_total: int | None
    psi_some_us: int | None
    psi_full_us: int | None
    major_faults: int | None
    mbm_bytes: int | None
    cpu_psi_some_us: int | None


_NO_PREVIOUS = _Previous(0, None, None, None, None, None, None, None)


class ProcHostSource:
    """`HostSource` reading /proc and /sys under `root` ("/" in production). Construct with the
    `[host]` config section (`resctrl` turns memory-bandwidth monitoring on or off)."""

    def __init__(self, config: HostConfig | None = None, *, root: str = "/") -> None:
        resctrl = True if config is None else config.resctrl
        self._proc = os.path.join(root, "proc")
        self._meminfo = os.path.join(self._proc, "meminfo")
        self._stat = os.path.join(self._proc, "stat")
        self._psi = os.path.join(self._proc, "pressure", "memory")
        self._cpu_psi = os.path.join(self._proc, "pressure", "cpu")
        self._vmstat = os.path.join(self._proc, "vmstat")
        # The set of L3 domains does not change while resctrl stays mounted: glob once.
        pattern = os.path.join(root, "sys", "fs", "resctrl", "mon_data", "*", "mbm_total_bytes")
        self._mbm_files = sorted(glob.glob(pattern)) if resctrl else []
        self._prev: _Previous | None = None

    def read(self, t_mono_ns: int, t_wall_s: float) -> HostSample:
        mem_used_pct, available, swap_used = _meminfo(_read(self._meminfo))
        busy, total = _cpu_jiffies(_read(self._stat, 4096))  # only the first line
        some_avg10, some_us, full_avg10, full_us = _psi(_read(self._psi))
        cpu_some_avg10, cpu_some_us, _, _ = _psi(_read(self._cpu_psi))
        major = _vmstat_field(_read(self._vmstat), b"pgmajfault")
        mbm = self._mbm_total()

        prev = self._prev
        self._prev = _Previous(t_mono_ns, busy, total, some_us, full_us, major, mbm,
                               cpu_some_us)
        interval_ns = None if prev is None else t_mono_ns - prev.t_mono_ns
        if prev is None or interval_ns is None or interval_ns <= 0:
            # First tick (or a clock that did not move): no rates, never a made-up 0.
            prev, interval_ns, interval_s = _NO_PREVIOUS, None, 0.0
        else:
            interval_s = interval_ns / 1e9

        cpu_busy_pct = None
        prev_busy, prev_total = prev.cpu_busy, prev.cpu_total
        if busy is not None and total is not None and prev_busy is not None \
                and prev_total is not None and total > prev_total:
            d_busy = busy - prev_busy
            cpu_busy_pct = _pct(100.0 * d_busy / (total - prev_total))
        return HostSample(
            t_mono_ns=t_mono_ns,
            t_wall_s=t_wall_s,
            interval_ns=interval_ns,
            mem_used_pct=mem_used_pct,
            mem_available_bytes=available,
            swap_used_bytes=swap_used,
            cpu_busy_pct=cpu_busy_pct,
            psi_mem_some_avg10=_pct(some_avg10),
            psi_mem_full_avg10=_pct(full_avg10),
            psi_mem_some_share=_share(prev.psi_some_us, some_us, interval_s * 1e6),
            psi_mem_full_share=_share(prev.psi_full_us, full_us, interval_s * 1e6),
            major_faults_per_s=within(_rate(prev.major_faults, major, interval_s), 0.0,
                                      MAX_EVENTS_PER_S),
            mem_bandwidth_bytes_per_s=within(_rate(prev.mbm_bytes, mbm, interval_s), 0.0,
                                             MAX_BYTES_PER_S),
            psi_cpu_some_share=_share(prev.cpu_psi_some_us, cpu_some_us, interval_s * 1e6),
            psi_cpu_some_avg10=_pct(cpu_some_avg10),
        )

    def _mbm_total(self) -> int | None:
        if not self._mbm_files:
            return None
        total = 0
        for path in self._mbm_files:
            text = _read(path)
            # A domain may answer "Unavailable" (counter not ready, RMID recycled): then the sum
            # is not a total and the tick has no bandwidth.
            if text is None or not text.strip().isdigit():
                return None
            total += int(text)
        return total

    def close(self) -> None:
        pass


#: The name `gapwatch.engine.runtime` imports.
HostSource = ProcHostSource


def _read(path: str, limit: int = 1 << 16) -> bytes | None:
    """A small kernel file in one read(2), or None if absent or unreadable (e.g. PSI disabled:
    EOPNOTSUPP). Raw os calls: this runs every tick, and buffered text I/O doubles its cost."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


_MEMINFO_KEYS = re.compile(rb"^(MemTotal|MemAvailable|SwapTotal|SwapFree):\s+(\d+)", re.M)


def _meminfo(text: bytes | None) -> tuple[float | None, int | None, int | None]:
    """(used %, available bytes, swap used bytes) from /proc/meminfo (values in kB)."""
    if text is None:
        return None, None, None
    kib = {key: int(value) for key, value in _MEMINFO_KEYS.findall(text)}
    total, available = kib.get(b"MemTotal"), kib.get(b"MemAvailable")
    used_pct = None
    if total and available is not None:
        # A container's /proc can say more available than total.
        used_pct = _pct(100.0 * (total - available) / total)
    swap_used = None
    if b"SwapTotal" in kib and b"SwapFree" in kib:
        swap_used = (kib[b"SwapTotal"] - kib[b"SwapFree"]) * 1024
    return used_pct, None if available is None else available * 1024, swap_used


def _cpu_jiffies(text: bytes | None) -> tuple[int | None, int | None]:
    """(busy, total) jiffies of all CPUs from the `cpu` line of /proc/stat."""
    if text is None or not text.startswith(b"cpu "):
        return None, None
    fields = text.split(b"\n", 1)[0].split()[1:]
    try:
        # user nice system idle iowait irq softirq steal; guest time is already inside user.
        values = [int(v) for v in fields[:8]]
    except ValueError:
        return None, None
    if len(values) < 5:
        return None, None
    total = sum(values)
    return total - values[3] - values[4], total


def _psi(text: bytes | None) -> tuple[float | None, int | None, float | None, int | None]:
    """(some avg10, some total µs, full avg10, full total µs) from /proc/pressure/memory (or
    /proc/pressure/cpu, whose `full` line is 0 system-wide)."""
    out: dict[bytes, tuple[float | None, int | None]] = {}
    for line in (text or b"").splitlines():
        kind, *pairs = line.split()
        values = dict(p.split(b"=", 1) for p in pairs if b"=" in p)
        try:
            out[kind] = (float(values[b"avg10"]), int(values[b"total"]))
        except (KeyError, ValueError):
            continue
    some = out.get(b"some", (None, None))
    full = out.get(b"full", (None, None))  # kernels before 5.13 may lack the `full` line
    return some[0], some[1], full[0], full[1]


def _vmstat_field(text: bytes | None, name: bytes) -> int | None:
    """One counter of /proc/vmstat ("name value" lines), found without splitting ~180 lines."""
    if text is None:
        return None
    at = (b"\n" + text).find(b"\n" + name + b" ")
    if at < 0:
        return None
    value = text[at + len(name) + 1:].split(b"\n", 1)[0].strip()
    return int(value) if value.isdigit() else None


def _rate(prev: int | None, now: int | None, interval_s: float) -> float | None:
    """Per-second rate of a cumulative counter; None without two readings or if it went back."""
    if prev is None or now is None or interval_s <= 0 or now < prev:
        return None
    return (now - prev) / interval_s


def _pct(value: float | None) -> float | None:
    """A percentage, clamped to 0..100 as the recording's type reads it back (`bounds.Pct`)."""
    return None if value is None else min(100.0, max(0.0, value))


def _share(prev_us: int | None, now_us: int | None, interval_us: float) -> float | None:
    """Fraction (0..1) of the interval covered by a PSI stall counter's growth."""
    rate = _rate(prev_us, now_us, interval_us)
    return None if rate is None else min(1.0, rate)
