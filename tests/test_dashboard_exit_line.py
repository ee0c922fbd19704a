"""After the dashboard ends (`demo`, `watch`, `replay`), one stderr line names the snapshot
folders it wrote: `snapshot.dir` is the current folder by default, and the demo, the README's
first command, left `gapwatch-snapshot-vm-.../` there with nothing said after `q`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gapwatch.ui as ui


class _Status:
    recording = None

    def dead_threads_text(self) -> str | None:
        return None


class _Runtime:
    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def status(self) -> _Status:
        return _Status()


class _App:
    """The dashboard as far as `start_and_show` sees it: its run writes `written` snapshots."""

    def __init__(self, written: list[Path]) -> None:
        self.written = written
        self.snapshots: list[Path] = []

    def run(self) -> int:
        self.snapshots.extend(self.written)  # as `on_snapshot_finished` does while it runs
        return 0


def _show(monkeypatch: pytest.MonkeyPatch, written: list[Path], command: str) -> None:
    def app(runtime: Any, stop: Any) -> _App:
        return _App(written)

    monkeypatch.setattr(ui, "dashboard_app", app)
    assert ui.start_and_show(_Runtime(), command) == 0  # type: ignore[arg-type]


def test_the_demo_names_the_snapshot_folder_it_left_in_the_current_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    _show(monkeypatch, [Path("gapwatch-snapshot-vm-20261205T211101Z")], "demo")
    assert capsys.readouterr().err.splitlines()[-1] == (
        "gapwatch demo: wrote snapshot folder: ./gapwatch-snapshot-vm-20261205T211101Z")


def test_many_snapshots_are_one_line_naming_the_first_and_counting_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path.parent / "snaps"
    written = [elsewhere / f"gapwatch-snapshot-box-2026120{i}T000000Z" for i in range(1, 6)]
    _show(monkeypatch, written, "replay")
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (f"gapwatch replay: wrote 5 snapshot folders: {written[0]}, {written[1]}, "
                    f"{written[2]} and 2 more in {elsewhere}")


def test_a_session_without_snapshots_says_nothing_of_them(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _show(monkeypatch, [], "watch")
    assert capsys.readouterr().err == ""
