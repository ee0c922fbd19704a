"""The environment a benchmark starts a checkout's processes with: the checkout first on
PYTHONPATH, then whatever the caller had there.

Who calls it: the bench/ scripts that run gapwatch from a checkout in a child process
(report_floor, report_same, parse_same, gpu_e2e, copytrace_h200, blind_spot_h200). In front of,
not instead of, the caller's PYTHONPATH: on the GPU box the dependencies travel as wheels
installed on it (the device README), and replacing it lost them.

The checkout's bytecode is compiled first, once a process: where PYTHONDONTWRITEBYTECODE is set
(the development VM sets it), a checkout without `__pycache__` (a fresh worktree to compare
against) compiled every module in every process it started, 1.2-1.4 CPU-s against 0.4 for the
report's imports, and a timed A/B leaned towards the tree with its bytecode.
"""

from __future__ import annotations

import compileall
import os
from pathlib import Path

_COMPILED: set[Path] = set()


def env_with(checkout: str | Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of `env` (default: this process's environment) with `checkout` first on
    PYTHONPATH. The checkout's `gapwatch` package is compiled to bytecode first (see above)."""
    package = Path(checkout).resolve() / "gapwatch"
    if package not in _COMPILED and package.is_dir():
        # Silent: where it cannot write (a read-only checkout), each process compiles as before.
        compileall.compile_dir(package, quiet=2)
        _COMPILED.add(package)
    out = dict(os.environ if env is None else env)
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(checkout), out.get("PYTHONPATH", "")) if p)
    return out
