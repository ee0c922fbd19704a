"""The environment a benchmark starts a checkout's processes with: the checkout first on
PYTHONPATH, then whatever the caller had there.

Who calls it: the bench/ scripts that run gapwatch from a checkout in a child process
(report_floor, report_same, parse_same, gpu_e2e, copytrace_h200, blind_spot_h200). In front of,
not instead of, the caller's PYTHONPATH: on the GPU box the dependencies travel as wheels
installed on it (the device README), and replacing it lost them.
"""

from __future__ import annotations

import os
from pathlib import Path


def env_with(checkout: str | Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of `env` (default: this process's environment) with `checkout` first on
    PYTHONPATH."""
    out = dict(os.environ if env is None else env)
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(checkout), out.get("PYTHONPATH", "")) if p)
    return out
