"""`--log -` with the dashboard: the log pipe must not become the keyboard."""

from __future__ import annotations

import subprocess
import sys

from gapwatch.engine.terminal import detach_piped_stdin


def test_nothing_moves_without_log_from_stdin() -> None:
    assert detach_piped_stdin(["/var/log/cuzk.log"]) == 0


def _run(code: str) -> subprocess.CompletedProcess[str]:
    # A new session has no controlling terminal: /dev/tty cannot be opened, as on a box where
    # gapwatch runs from a service unit.
    return subprocess.run([sys.executable, "-c", code], input="CUZK_TIMING: a=1\n", text=True,
                          capture_output=True, timeout=30, start_new_session=True)


def test_piped_stdin_without_a_terminal_is_a_clear_error() -> None:
    out = _run(
        "from gapwatch.engine.terminal import detach_piped_stdin\n"
        "from gapwatch.sources import SourceUnavailable\n"
        "try:\n"
        "    detach_piped_stdin(['-'])\n"
        "except SourceUnavailable as e:\n"
        "    print('refused:', e)\n"
    )
    assert out.stdout.startswith("refused:"), out.stderr
    assert "gapwatch record --log -" in out.stdout


def test_demo_with_piped_log_and_no_terminal_exits_2() -> None:
    out = _run("from gapwatch.cli import main; raise SystemExit(main(['demo', '--log', '-']))")
    assert out.returncode == 2
    # With no terminal at all, the first check says so (the dashboard could not draw either).
    assert "terminal" in out.stderr and "headless" in out.stderr
