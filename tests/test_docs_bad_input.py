"""docs/bad-input.md names, for each kind of bad input, the test that pins it down: every test it
names exists, so the table cannot drift from the suite unnoticed."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: `file.py::test_name`, or `::test_name` for the file last named in the same cell.
_REF = re.compile(r"`(test_\w+\.py)?::(test_\w+)`")


def _references() -> list[tuple[str, str]]:
    refs = []
    for row in (ROOT / "docs" / "bad-input.md").read_text().splitlines():
        if not row.startswith("|"):
            continue
        current = None
        for m in _REF.finditer(row):
            current = m.group(1) or current
            assert current is not None, f"a test named without its file: {row[:80]}"
            refs.append((current, m.group(2)))
    return refs


def test_every_test_the_bad_input_table_names_exists() -> None:
    refs = _references()
    assert len(refs) > 80
    missing = [f"{f}::{t}" for f, t in refs
               if not re.search(rf"^(?:async )?def {t}\(", (ROOT / "tests" / f).read_text()
                                if (ROOT / "tests" / f).exists() else "", re.M)]
    assert not missing, missing


def test_every_row_of_the_bad_input_table_names_a_test_or_a_bench() -> None:
    rows = [r for r in (ROOT / "docs" / "bad-input.md").read_text().splitlines()
            if r.startswith("| ") and not r.startswith(("| input or fault", "| ---"))]
    bare = [r[:70] for r in rows if "::test_" not in r and "bench/" not in r]
    assert not bare, bare
