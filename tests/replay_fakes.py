"""What the replay tests share: a recording of the simulated pageable breakdown (derived records
left out, as a replay derives them again)."""

from __future__ import annotations

from pathlib import Path

from evaluation.simulate import simulate
from gapwatch.core.models import Gap, StateChange
from gapwatch.sinks.recorder import write_recording


def pageable_recording(folder: Path, duration_s: float = 90.0) -> Path:
    """`duration_s` of `sim:pageable`, one GPU, written without its gaps and states."""
    run = simulate("pageable", duration_s=duration_s)
    path = folder / "pageable.jsonl.gz"
    write_recording(path, run.header, [r for r in run.records
                                       if not isinstance(r, Gap | StateChange)])
    return path
