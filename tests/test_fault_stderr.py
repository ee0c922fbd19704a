"""A stderr that goes away never stops monitoring: `record ... 2>&1 | head -1` (a pipe closed
after the first line) and `record ... 2>&-` (no stderr at all) both run to the end, exit 0 and
leave a whole recording. Every live line goes through one writer (gapwatch.engine.console)."""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

from faults import gapwatch_argv, records_of

from gapwatch.core.models import GpuSample
from gapwatch.engine.console import Console

#: 30 s of simulated data, as fast as possible: hundreds of live lines after the first.
RUN = ["record", "--source", "sim:pageable", "--speed", "0", "--duration", "30"]


def _covers_the_whole_run(out: Path) -> None:
    samples = [r for r in records_of(out) if isinstance(r, GpuSample)]
    assert samples[-1].t_mono_ns - samples[0].t_mono_ns >= 29e9


def test_a_stderr_pipe_closed_after_one_line_does_not_stop_record(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl.gz"
    proc = subprocess.Popen(gapwatch_argv(*RUN, "--out", str(out)), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    assert proc.stderr is not None
    first = proc.stderr.readline()
    proc.stderr.close()  # `| head -1` exits
    assert proc.wait(60) == 0
    assert first.startswith(b"gapwatch record: ")
    _covers_the_whole_run(out)


def test_record_runs_with_stderr_closed_from_the_start(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    proc = subprocess.Popen(gapwatch_argv(*RUN, "--out", str(out)), stdout=subprocess.DEVNULL,
                            preexec_fn=lambda: os.close(2))  # noqa: PLW1509 - the point
    assert proc.wait(60) == 0
    _covers_the_whole_run(out)


class _Broken(io.StringIO):
    def write(self, s: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_the_console_counts_lines_after_its_stream_is_gone_and_never_raises() -> None:
    console = Console(_Broken())
    assert console.say("one") is False
    assert console.say("two") is False
    assert console.gone and console.dropped_lines == 2


def test_the_console_writes_whole_lines() -> None:
    stream = io.StringIO()
    console = Console(stream)
    assert console.say("gap gpu0 1.2s pcie_starved")
    assert stream.getvalue() == "gap gpu0 1.2s pcie_starved\n" and not console.gone
