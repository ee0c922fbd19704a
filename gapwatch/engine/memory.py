"""Large freed allocations go back to the operating system (glibc; elsewhere nothing is done).

Who calls it: `gapwatch.cli.main`, once, before the command runs.

glibc serves an allocation of 128 KiB or more with mmap and unmaps it when it is freed, but
after the first such free it raises that threshold (up to 32 MiB) and serves later ones from
the heap, which it seldom gives back. A prover writing 1 MiB lines then grew gapwatch's resident
memory with every line although Python itself held ~12 MB of them: `record --log -` fed 5,000
such lines ended at 426 MB resident, 49 MB with the threshold held (bench/huge_lines.py). Setting
the threshold explicitly is what turns glibc's adjustment off. Allocations this large are rare
on gapwatch's hot paths (records are small), so the cost of mmap for them does not show.
"""

from __future__ import annotations

import ctypes
import platform

#: mallopt() parameter number of M_MMAP_THRESHOLD in glibc's <malloc.h>.
_M_MMAP_THRESHOLD = -3
#: glibc's default threshold, held fixed.
MMAP_THRESHOLD_BYTES = 128 * 1024


def return_large_allocations() -> bool:
    """Hold glibc's mmap threshold at its default; True when it was set."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
