"""Shared test fixtures: keep every test hermetic (no user config, no real home)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # A developer's ~/.config/gapwatch/config.toml must never change what a test sees.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg")))


DATA = Path(__file__).parent / "data"
