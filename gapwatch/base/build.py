"""Which build of gapwatch is running: compiled with mypyc (setup.py's `COMPILED` modules) or
pure Python.

Who calls it: `gapwatch --version` (and so `.ci/run`) and the benchmarks, so that a figure
always says which build made it. It looks at where the detector was loaded from, without
importing it (this module is in the base layer, below the core).
"""

from __future__ import annotations

from importlib.machinery import EXTENSION_SUFFIXES
from importlib.util import find_spec

#: The module whose file tells the build apart: the first of setup.py's `COMPILED`.
_PROBE = "gapwatch.core.detector"


def is_compiled() -> bool:
    """True when the detection path runs as compiled code (a C extension module)."""
    spec = find_spec(_PROBE)
    origin = spec.origin if spec is not None else None
    return origin is not None and origin.endswith(tuple(EXTENSION_SUFFIXES))


def build_kind() -> str:
    """"compiled (mypyc)" or "pure Python": the words `--version` and the benchmarks print."""
    return "compiled (mypyc)" if is_compiled() else "pure Python"
