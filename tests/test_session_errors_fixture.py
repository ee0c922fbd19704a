"""The suite's guard (conftest `_sessions_swallow_no_errors`): a session that swallowed a part's
error fails the test that made it, unless that test expects it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TEST = '''
from gapwatch.core.models import GpuInfo, Notice
from gapwatch.engine.session import Session, default_header
from gapwatch.engine.store import SeriesStore
import pytest


GPUS = [GpuInfo(index=0, link_bytes_per_s=63e9)]


class Raising:
    def on_header(self, header): pass
    def on_record(self, record): raise RuntimeError("sink bug")
    def close(self): pass


def _feed():
    session = Session(default_header("sim", GPUS, 100.0), SeriesStore(GPUS, 0.1, history_s=5),
                      None, [Raising()])
    session.on_record(Notice(1, 1.0, "info", "hello"))
    session.close()


def test_unmarked():
    _feed()


@pytest.mark.session_errors_expected
def test_marked():
    _feed()
'''


def test_a_session_that_swallowed_an_error_fails_its_test_unless_marked(tmp_path: Path) -> None:
    root = Path(__file__).parent
    (tmp_path / "test_guard.py").write_text(TEST)
    (tmp_path / "conftest.py").write_text((root / "conftest.py").read_text())
    # pytest alone: the guard is the conftest's own, and the plugins installed beside pytest
    # (xdist, hypothesis, asyncio, Textual's snapshots: half a CPU-second of imports) play no
    # part in it.
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), "-c", "/dev/null", str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(root.parent), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    # The guard runs at teardown: the unmarked test passes its body, then errors.
    assert "ERROR test_guard.py::test_unmarked" in done.stdout, done.stdout[-2000:]
    assert "test_marked" not in done.stdout and "swallowed 2 error(s)" in done.stdout
