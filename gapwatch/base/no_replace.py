"""Rename without replacing: `rename_no_replace(src, dst)` fails with EEXIST where `dst` is
anything at all (a file, a folder, a link, a dangling link), instead of replacing it.

Who calls it: `gapwatch.sinks.snapshot`, which publishes a finished snapshot folder under its
name. A plain `rename(2)` of a folder silently replaces an empty folder at the target, and a
check before it races whoever makes the name meanwhile (another gapwatch's snapshot of the
same second: its rename then failed with ENOTEMPTY and the snapshot was lost). Linux's
`renameat2(RENAME_NOREPLACE)` (3.15, glibc 2.28) decides in one step; where the call or the
filesystem lacks it (EINVAL, ENOSYS), a look with `lstat` and then `rename` is the fallback.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path

_AT_FDCWD = -100
_RENAME_NOREPLACE = 1


@cache
def _renameat2() -> Callable[..., int] | None:
    """libc's renameat2, or None where there is none (an old glibc, musl before 1.2.2)."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


def rename_no_replace(src: str | Path, dst: str | Path) -> None:
    """Rename `src` to `dst` unless something is at `dst`.

    Raises:
        OSError: EEXIST (or ENOTEMPTY, ENOTDIR from the fallback's race) where `dst` is taken;
            any other error of the rename.
    """
    fn = _renameat2()
    if fn is not None:
        if fn(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.EINVAL, errno.ENOSYS):
            raise OSError(code, os.strerror(code), str(dst))
    if os.path.lexists(dst):
        raise OSError(errno.EEXIST, os.strerror(errno.EEXIST), str(dst))
    os.rename(src, dst)
