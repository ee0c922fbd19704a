"""`gapwatch record --source nvml` beside a GPU benchmark: torch's CUDA checked, the recorder
started with its output in a file, stopped with SIGTERM and its output read back.

Who calls it: the bench/ scripts that watch a stand-in prover on a real GPU with gapwatch
(blind_spot_h200, restart_hole_h200). One home for what each did alike.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from evaluation.checkout_env import env_with


def cuda_missing() -> str | None:
    """Why torch cannot run CUDA work here (no torch, no device), or None when it can."""
    try:
        import torch

        if not torch.cuda.is_available():
            return "torch sees no CUDA device"
    except Exception as exc:  # noqa: BLE001 - any failure here means "cannot run"
        return str(exc)
    return None


@dataclass
class Recorder:
    """A running `gapwatch record --source nvml`: its process and the file its output goes to
    (a pipe nobody reads would stop it once full)."""

    process: subprocess.Popen[str]
    output: IO[str]

    def stop(self, timeout_s: float = 60.0) -> str:
        """SIGTERM, wait, and what it wrote (stdout and stderr together)."""
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=timeout_s)
        self.output.seek(0)
        text = self.output.read()
        self.output.close()
        return text


def start_record(checkout: Path, gpu: int, out: Path, work: Path) -> Recorder:
    """`gapwatch record --source nvml --gpus GPU --out OUT` from `checkout` (first on the
    path, the caller's PYTHONPATH after it: the carried wheels), its output in WORK."""
    output = open(work / "record.stderr", "w+")  # noqa: SIM115 - closed by Recorder.stop
    process = subprocess.Popen(
        [sys.executable, "-m", "gapwatch", "record", "--source", "nvml", "--gpus", str(gpu),
         "--out", str(out)],
        stdout=output, stderr=subprocess.STDOUT, text=True, env=env_with(checkout),
        cwd=checkout)
    return Recorder(process, output)
