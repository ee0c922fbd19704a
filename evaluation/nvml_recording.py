"""`gapwatch record --source nvml` beside a GPU benchmark: torch's CUDA checked, the recorder
started with its output in a file (`watch_gpu`), stopped with SIGTERM and its output read back,
and the recording's `gapwatch report --json` (`report_json`).

Who calls it: the bench/ scripts that watch a stand-in prover on a real GPU with gapwatch
(blind_spot_h200, restart_hole_h200). One home for what each did alike.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

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


@dataclass
class Watch:
    """A GPU benchmark's `gapwatch record`, started (`watch_gpu`): its recording, in a
    temporary folder, and the recorder."""

    recording: Path
    recorder: Recorder


def watch_gpu(script: str, checkout: Path, out: Path, gpu: int, name: str) -> Watch | None:
    """`out` made, torch's CUDA checked (None, why said on stderr as `script`'s, when it
    cannot run), and `gapwatch record` started on `gpu` into a temporary `name`.jsonl.gz,
    given 3 s to open NVML before the benchmark's work begins."""
    out.mkdir(parents=True, exist_ok=True)
    missing = cuda_missing()
    if missing is not None:
        print(f"{script}: {missing}", file=sys.stderr)
        return None
    work = Path(tempfile.mkdtemp(prefix=f"gapwatch-{name}-"))
    rec = work / f"{name}.jsonl.gz"
    recorder = start_record(checkout, gpu, rec, work)
    time.sleep(3.0)
    return Watch(rec, recorder)


def report_json(checkout: Path, recording: Path, timeout_s: float) -> tuple[dict[str, Any], int]:
    """`gapwatch report --json` of `recording` from `checkout`: the document ({} when it
    failed) and the command's exit status."""
    rep = subprocess.run([sys.executable, "-m", "gapwatch", "report", str(recording), "--json"],
                         capture_output=True, text=True, env=env_with(checkout), cwd=checkout,
                         timeout=timeout_s)
    return (json.loads(rep.stdout) if rep.returncode == 0 else {}), rep.returncode
