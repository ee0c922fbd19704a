"""The code base stays lint-clean (ruff) and type-clean (mypy --strict: the package, the tests and
evaluation/), as pyproject.toml says.

Both tools run as the developer would run them, from the repository root, with the settings in
pyproject.toml, so a finding here is the same finding `ruff check` or `mypy` prints. mypy keeps
its incremental cache in the repository's `.mypy_cache` (git-ignored): cold, as in CI's fresh
clone, the type check takes several seconds; warm, about one.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run_tool(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[test]' installs it)")
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def test_ruff_finds_nothing_in_the_package_tests_and_benchmarks() -> None:
    done = _run_tool("ruff", "check", "gapwatch", "tests", "bench")
    assert done.returncode == 0, f"ruff check failed:\n{done.stdout}{done.stderr}"


@pytest.mark.slow
def test_mypy_strict_finds_nothing_in_the_package_tests_and_evaluation() -> None:
    # With no paths given, mypy checks pyproject's `files` (gapwatch, tests, evaluation).
    done = _run_tool("mypy", "--cache-dir", str(ROOT / ".mypy_cache"))
    assert done.returncode == 0, f"mypy failed:\n{done.stdout}{done.stderr}"


def test_the_package_narrows_types_instead_of_ignoring_them() -> None:
    """A `match` on a record's class or an `isinstance` narrows a union; a `# type: ignore`
    only silences the checker (third-party modules without types are named once, in
    pyproject.toml's mypy overrides)."""
    marker = "type: " + "ignore"
    found = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "gapwatch").rglob("*.py"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if marker in line]
    assert found == []
