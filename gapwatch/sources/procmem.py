"""/proc/PID/status of the processes NVML lists on a GPU: how much of their host memory is pinned.

Who calls it: `gapwatch.sources.nvml` only (on the sampler thread, every
`sampler.procmem_every_s`), for each PID that `nvmlDeviceGetComputeRunningProcesses` lists; it
turns each `ProcReading` into a `ProcessMemory` record and says each kind of problem once, in
the words of `problem_text`. `parse_status` is pure; `ProcStatusReader` does the one read(2).

Why these fields (measured on the H200, /work/shared/reference/copy-attribution.md): memory from
`cudaHostAlloc` (cuzk's pinned pool, torch's `pin_memory=True`) is a shared mapping of
/dev/zero, so it counts in **RssShmem**; ordinary heap is **RssAnon**, and so is memory pinned
after the fact with `cudaHostRegister`, which /proc cannot tell from heap. The pair is therefore
a hint of how much of a prover's memory is pinned, never a verdict. VmLck (mlock'ed) and VmPin
(pages pinned by drivers that account for them, such as RDMA) are recorded beside for what they
say; `bench/copytrace_h200.py` records them for the load generator's pinned and pageable runs.

What can go wrong, each giving a reading with None fields, counted in `counts` (never raised):
- `vanished`: the PID is not in /proc (the process exited between the NVML call and the read,
  or gapwatch sees another PID namespace than NVML's: a container, or /proc mounted hidepid=2);
- `denied`: /proc is mounted with hidepid=1 and the process is another user's;
- `no_rss_fields`: the kernel has no RssShmem/RssAnon lines (before Linux 4.5, some containers'
  /proc emulations such as LXCFS);
- `unreadable`: any other error reading the file.
"""

from __future__ import annotations

import errno
import os
from collections import Counter
from dataclasses import dataclass
from typing import Literal

from gapwatch.core.bounds import MAX_MEMORY_BYTES, MAX_PROCESS_NAME, within

ProcProblem = Literal["vanished", "denied", "no_rss_fields", "unreadable"]

#: The status lines read, and the ProcStatus field each fills (values are in kB).
_KIB_FIELDS = {
    b"RssShmem": "rss_shmem_bytes",
    b"RssAnon": "rss_anon_bytes",
    b"VmLck": "vm_locked_bytes",
    b"VmPin": "vm_pinned_bytes",
    b"VmRSS": "vm_rss_bytes",
}


@dataclass(frozen=True, slots=True)
class ProcStatus:
    """The memory lines of one /proc/PID/status, in bytes; None where the line is absent."""

    name: str
    rss_shmem_bytes: int | None
    rss_anon_bytes: int | None
    vm_locked_bytes: int | None
    vm_pinned_bytes: int | None
    #: VmRSS: absent for a process without an address space (a zombie, one exiting right now).
    vm_rss_bytes: int | None


@dataclass(frozen=True, slots=True)
class ProcReading:
    """One PID's reading: its status (None when it could not be read) and what went wrong."""

    pid: int
    status: ProcStatus | None
    problem: ProcProblem | None


def parse_status(text: bytes) -> ProcStatus:
    """The fields gapwatch uses from the text of /proc/PID/status ("Key:\\t  123 kB" lines)."""
    name = ""
    values: dict[str, int | None] = dict.fromkeys(_KIB_FIELDS.values())
    for line in text.split(b"\n"):
        key, sep, rest = line.partition(b":")
        if not sep:
            continue
        if key == b"Name":
            # comm, at most 15 bytes; the kernel escapes control characters itself.
            # Bounded as the recording's type reads it back (`bounds.ProcessName`).
            name = rest.strip().decode(errors="replace")[:MAX_PROCESS_NAME]
            continue
        field = _KIB_FIELDS.get(key)
        if field is None:
            continue
        parts = rest.split()
        if parts and parts[0].isdigit():
            scale = 1024 if parts[1:2] == [b"kB"] else 1
            # Bounded as the recording's type reads it back (`bounds.MemoryBytes`).
            values[field] = within(int(parts[0]) * scale, 0, MAX_MEMORY_BYTES)
    return ProcStatus(name=name, **values)


def problem_of(status: ProcStatus) -> ProcProblem | None:
    """What a parsed status cannot tell: no address space (the process is exiting: vanished),
    or a kernel that does not split RSS into anon/shmem."""
    if status.vm_rss_bytes is None:
        return "vanished"
    if status.rss_shmem_bytes is None or status.rss_anon_bytes is None:
        return "no_rss_fields"
    return None


class ProcStatusReader:
    """Reads /proc/PID/status under `root` ("/" in production; tests pass a fake tree)."""

    def __init__(self, root: str = "/") -> None:
        self._proc = os.path.join(root, "proc")
        #: Readings taken, and readings by problem ("vanished", "denied", ...).
        self.counts: Counter[str] = Counter()

    def read(self, pid: int) -> ProcReading:
        self.counts["read"] += 1
        problem: ProcProblem | None
        path = os.path.join(self._proc, str(pid), "status")
        try:
            # One read(2) of a ~1.5 KB kernel file; raw os calls, as the host source does.
            fd = os.open(path, os.O_RDONLY)
            try:
                text = os.read(fd, 1 << 16)
            finally:
                os.close(fd)
        except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
            problem = "vanished"
        except PermissionError:
            problem = "denied"
        except OSError as exc:
            # ESRCH can also come as a plain OSError from some /proc emulations.
            problem = "vanished" if exc.errno == errno.ESRCH else "unreadable"
        else:
            status = parse_status(text)
            problem = problem_of(status)
            if problem is not None:
                self.counts[problem] += 1
            return ProcReading(pid, status, problem)
        self.counts[problem] += 1
        return ProcReading(pid, None, problem)


def problem_text(problem: ProcProblem, pid: int) -> str:
    """The words said (once per kind of problem) when a PID's memory cannot be read."""
    if problem == "vanished":
        return (f"process {pid}, listed by NVML, is not in /proc: it exited, or gapwatch runs in "
                "another PID namespace than the prover (a container: run gapwatch on the host or "
                "with --pid=host) or /proc is mounted hidepid=2; its memory is shown as missing")
    if problem == "denied":
        return (f"no permission to read /proc/{pid}/status (/proc is mounted hidepid and the "
                "process is another user's): run gapwatch as that user or as root to see how "
                "much of the prover's memory is pinned")
    if problem == "no_rss_fields":
        return (f"/proc/{pid}/status has no RssShmem/RssAnon lines (a kernel before 4.5, or a "
                "container's /proc emulation): no pinned/heap hint")
    return f"/proc/{pid}/status cannot be read: its memory is shown as missing"
