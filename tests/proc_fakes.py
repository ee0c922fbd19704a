"""A fake /proc tree for the /proc readings' tests (tests/test_procmem_source.py,
tests/test_nvml_slow_readings.py): status files under a tmp root, and hidepid's EACCES."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from gapwatch.core.units import GIB as GIB  # the one definition, for the tests that use this

KIB = 1024

#: The memory lines of a real 6.x kernel's /proc/PID/status, for a prover with a 12 GiB pinned
#: pool (RssShmem) and 180 GiB of heap (RssAnon).
PROVER_STATUS = (
    "Name:\tcuzk-daemon\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nPid:\t4242\n"
    "VmPeak:\t201326592 kB\nVmSize:\t201326592 kB\nVmLck:\t       0 kB\nVmPin:\t       0 kB\n"
    "VmHWM:\t201000000 kB\nVmRSS:\t201000000 kB\nRssAnon:\t188743680 kB\n"
    "RssFile:\t   40960 kB\nRssShmem:\t12582912 kB\nVmData:\t190000000 kB\nThreads:\t96\n"
)


def fake_proc(root: Path, statuses: dict[int, str]) -> Path:
    for pid, text in statuses.items():
        d = root / "proc" / str(pid)
        d.mkdir(parents=True)
        (d / "status").write_text(text)
    return root


def deny(monkeypatch: pytest.MonkeyPatch, pid: int, code: int = errno.EACCES) -> None:
    """/proc mounted hidepid=1: another user's status answers EACCES (root would bypass a chmod,
    and the tests may run as root, so the error is injected at open(2))."""
    real_open = os.open

    def fake_open(path: str, flags: int, *args: int) -> int:
        if f"/proc/{pid}/" in str(path):
            raise OSError(code, os.strerror(code), path)
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", fake_open)
