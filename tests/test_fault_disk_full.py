"""A full disk stops the recording, never the monitoring: on a 2 MiB tmpfs filled to the brim,
`record` and the dashboard's `--record` say so (stderr / a notice, /metrics), go on sampling and
serving /metrics, and resume the recording once space returns; the file reads whole.

Mounting needs root; where it is impossible the tests are skipped LOUDLY (a warning in the
summary), never silently passed.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest
from faults import (
    Lines,
    PtyApp,
    fill,
    free_port,
    gapwatch_argv,
    metric,
    metrics_port,
    quick_config,
    records_of,
    samples_total,
    small_tmpfs,
    wait_for,
)

from gapwatch.core.models import GpuSample, Notice


def _assert_monitoring_goes_on(port: int) -> None:
    before = samples_total(port)
    wait_for("more samples while the disk is full", lambda: samples_total(port) > before + 5)
    assert metric(port, "gapwatch_recording_failing") == 1.0
    assert (metric(port, "gapwatch_recording_write_errors_total") or 0) >= 1


def _assert_recording_resumed(out: Path) -> None:
    records = records_of(out)  # no "ends early", no half line
    notices = [r for r in records if isinstance(r, Notice)]
    failed = [n for n in notices if "No space left on device" in n.message]
    assert failed, [n.message for n in notices]
    # The outage is in the file, and so are samples taken after it.
    later = [r for r in records if isinstance(r, GpuSample) and r.t_wall_s > failed[0].t_wall_s]
    assert later


@pytest.mark.slow
def test_record_on_a_full_disk_keeps_monitoring_and_resumes_when_space_returns(
        tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "fs") as fs:
        filler = fill(fs, leave_bytes=16 << 10)
        out = fs / "r.jsonl.gz"
        proc = subprocess.Popen(
            gapwatch_argv("record", "--config", str(quick_config(tmp_path)), "--source",
                          "sim:pageable", "--speed", "10", "--out", str(out), "--prometheus",
                          "127.0.0.1:0", "--quiet"),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        err = Lines(proc.stderr)
        try:
            port = metrics_port(err)
            wait_for("the write error on stderr", lambda: err.has("No space left on device"))
            _assert_monitoring_goes_on(port)
            filler.unlink()
            wait_for("the recording to resume", lambda: err.has("recording resumed"))
            assert metric(port, "gapwatch_recording_failing") == 0.0
            proc.send_signal(signal.SIGINT)
            assert proc.wait(30) == 0, err.text()
        finally:
            if proc.poll() is None:
                proc.kill()
        assert "Traceback" not in err.text()
        _assert_recording_resumed(out)


@pytest.mark.slow
def test_dashboard_recording_on_a_full_disk_keeps_drawing_and_resumes(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "fs") as fs:
        filler = fill(fs, leave_bytes=16 << 10)
        out, port = fs / "d.jsonl.gz", free_port()
        app = PtyApp("demo", "--config", str(quick_config(tmp_path)), "--speed", "4",
                     "--record", str(out), "--prometheus", f"127.0.0.1:{port}")
        try:
            wait_for("the dashboard to draw", app.drawn)
            wait_for("the recording to fail",
                     lambda: metric(port, "gapwatch_recording_failing") == 1.0)
            wait_for("the notice on screen", lambda: app.text_seen("recording failed: No space"))
            _assert_monitoring_goes_on(port)
            drawn = len(app.output)
            wait_for("the screen to keep changing", lambda: len(app.output) > drawn + 2000)
            filler.unlink()
            wait_for("the recording to resume",
                     lambda: metric(port, "gapwatch_recording_failing") == 0.0)
            app.send(b"q")
            assert app.wait() == 0
        finally:
            app.close()
        _assert_recording_resumed(out)
