"""The simulator recorded and reported as a user runs them, for end-to-end tests of its
scenarios: `gapwatch record --source sim:SCENARIO --speed 0` in a process of its own (its
log parsed into the recording), then `gapwatch report` of that file (in the test's process).
Who calls it: tests/test_sim_post_failures.py, tests/test_sim_cuzk_lines.py,
tests/test_sim_batch_wait.py."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

from gapwatch.cli import main

ROOT = Path(__file__).resolve().parent.parent
#: Writes each `--on-event` call's GAPWATCH_* environment as one JSON line.
HOOK = """import json, os, sys
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({k: v for k, v in os.environ.items() if k.startswith("GAPWATCH_")})
            + "\\n")
"""


def _env(tmp_path: Path) -> dict[str, str]:
    return {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}


def record_sim(tmp_path: Path, scenario: str, duration_s: float, *flags: str,
               hook_out: Path | None = None) -> tuple[Path, str]:
    """`gapwatch record` of the simulator's `scenario` at speed 0 for `duration_s` of data
    time (`flags`: more of record's options, `--seed N`, `--config FILE`): the recording, its
    stderr.
    `hook_out`: `--on-event` writes each call's environment there (`HOOK`)."""
    out = tmp_path / f"{scenario}.jsonl"
    cmd = [sys.executable, "-m", "gapwatch", "record", "--source", f"sim:{scenario}",
           "--speed", "0", "--duration", str(duration_s), "--out", str(out), "--quiet", *flags]
    if hook_out is not None:
        (tmp_path / "hook.py").write_text(HOOK)
        cmd += ["--on-event", f"{sys.executable} {tmp_path / 'hook.py'} {hook_out}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=_env(tmp_path),
                          check=False)
    assert done.returncode == 0, done.stderr
    return out, done.stderr


def report_of(recording: Path, *flags: str) -> str:
    """`gapwatch report` of `recording` (`flags`: `--json`): its stdout. Run as the command
    line runs it (`gapwatch.cli.main`), in this process: what is pinned is the report of the
    recording, and a process of its own cost ~0.4 CPU-s of interpreter and imports a call."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["report", str(recording), *flags])
    assert status == 0
    return out.getvalue()
