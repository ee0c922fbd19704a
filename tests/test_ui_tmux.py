"""The dashboard in a real tmux pane at 80x24, driven as an operator drives it: keys sent with
`tmux send-keys`, the screen read with `tmux capture-pane -p` (what the operator sees, after the
terminal has drawn it). A replay of the simulator's pageable breakdown: pause, step to the next
gap, open it, back, the process panel, the help, quit.

tmux comes with the box where it is installed (`.ci/run` installs it, as it does Prometheus);
without it these tests are skipped, loudly."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from faults import ROOT, wait_for
from replay_fakes import pageable_recording

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None,
                                reason="tmux is not installed (.ci/run installs it)")


class Pane:
    """One gapwatch command in a detached tmux session of its own (its own server socket)."""

    def __init__(self, folder: Path, *args: str) -> None:
        self.base = ["tmux", "-L", f"gapwatch-test-{os.getpid()}-{id(self)}", "-f", os.devnull]
        env = f"env PYTHONPATH={ROOT} TERM=xterm-256color"
        command = " ".join([env, sys.executable, "-m", "gapwatch", *args])
        subprocess.run([*self.base, "new-session", "-d", "-x", "80", "-y", "24", "-s", "gw",
                        "-c", str(folder), command], check=True, timeout=30)

    def screen(self) -> str:
        done = subprocess.run([*self.base, "capture-pane", "-p", "-t", "gw"],
                              capture_output=True, text=True, timeout=30)
        return done.stdout

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.base, "send-keys", "-t", "gw", *keys], check=True, timeout=30)

    def shows(self, text: str) -> None:
        wait_for(f"{text!r} on the screen", lambda: text in self.screen())

    def alive(self) -> bool:
        return subprocess.run([*self.base, "has-session", "-t", "gw"],
                              capture_output=True, timeout=30).returncode == 0

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True, timeout=30)


@pytest.fixture
def replay_pane(tmp_path: Path) -> Iterator[Pane]:
    recording = pageable_recording(tmp_path)
    config = tmp_path / "c.toml"
    config.write_text(f'[snapshot]\nauto = false\ndir = "{tmp_path / "snapshots"}"\n')
    pane = Pane(tmp_path, "replay", str(recording), "--config", str(config), "--speed", "2")
    try:
        yield pane
    finally:
        pane.close()


@pytest.mark.slow
def test_an_operator_pauses_steps_to_a_gap_opens_it_and_quits(replay_pane: Pane) -> None:
    pane = replay_pane
    pane.shows("replay ")  # the position, in the status line
    pane.shows("chaining ")  # the chaining figure under the GPU line
    pane.keys("p")
    pane.shows("PAUSED")
    pane.keys("]")  # the next gap: the replay runs on to it and stays paused there
    pane.shows("slow copies (pageable)")
    assert "paused" in pane.screen()

    pane.keys("Enter")  # the gap whole
    pane.shows("judged idle from SM activity")
    assert "(pcie_starved)" in pane.screen()
    # Each Escape is waited out before the next key: a key hard on an Escape's heels reads as
    # Alt+key (the terminal's escape sequence), as it would for a fast typist.
    pane.keys("Escape")
    wait_for("the gap detail closed", lambda: "judged idle from" not in pane.screen())

    pane.keys("t")  # the processes on the GPU, in place of the gap table
    pane.shows("processes on GPU0")
    pane.keys("t")
    wait_for("the gap table back", lambda: "processes on GPU0" not in pane.screen())

    pane.keys("?")
    pane.shows("why the GPU stops being busy")
    pane.keys("Escape")
    wait_for("the help closed", lambda: "why the GPU stops" not in pane.screen())
    pane.keys("q")
    wait_for("gapwatch quit and its pane closed", lambda: not pane.alive())
