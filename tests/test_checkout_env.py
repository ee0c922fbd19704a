"""A benchmark runs another checkout's gapwatch with that checkout first on PYTHONPATH (before,
not instead of, the caller's) and its bytecode compiled: with PYTHONDONTWRITEBYTECODE set, a
checkout without `__pycache__` compiled every module in every process it started, and a timed
comparison leaned towards the tree that had its bytecode."""

from __future__ import annotations

import os
from pathlib import Path

from evaluation.checkout_env import env_with


def test_the_checkout_comes_first_and_its_package_is_compiled(tmp_path: Path) -> None:
    package = tmp_path / "gapwatch"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "hot.py").write_text("X = 1\n")
    env = env_with(tmp_path, {"PYTHONPATH": "/deps", "PYTHONDONTWRITEBYTECODE": "1"})
    assert env["PYTHONPATH"] == os.pathsep.join([str(tmp_path), "/deps"])
    compiled = {p.name.split(".")[0] for p in (package / "__pycache__").glob("*.pyc")}
    assert compiled == {"__init__", "hot"}
