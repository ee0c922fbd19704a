"""Build: the hot paths compiled with mypyc where they can be, pure Python where not.

Who runs it: pip (through pyproject's `[build-system]`), for `pip install .` and wheels. The
modules in `COMPILED` are ordinary, type-checked Python: mypyc turns the same source into C,
so the rules keep one home (the .py file) and a compiled build gives the same results: a report
in about a third of the time, the log parser at twice the rate (docs/benchmarks.md, "Part E").
Everything else stays interpreted. docs/architecture.md ("Two builds") says what a compiled
module asks of the code around it.

Pure Python, on purpose, when:
- the install is editable (`pip install -e .`): compiled modules placed beside their sources
  would shadow every later edit of them;
- `GAPWATCH_PURE=1` is set;
- compiling fails (no C compiler, no Python headers): a warning, and the pure package installs.
`gapwatch --version` says which build is running (`gapwatch.base.build.build_kind`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

#: The per-sample and per-gap path of detection (`gapwatch report`, the live session), and the
#: log parser. A module here must not be monkeypatched by tests or subclassed by interpreted
#: code; `.ci/run-compiled` runs the whole suite over them compiled.
COMPILED = [
    "gapwatch/core/detector.py",
    "gapwatch/core/track.py",
    "gapwatch/core/evidence.py",
    "gapwatch/core/hints.py",
    "gapwatch/core/readings.py",
    "gapwatch/core/ledger.py",
    "gapwatch/core/fmt.py",
    "gapwatch/core/exact.py",
    "gapwatch/offline/detect.py",
    "gapwatch/sources/recording.py",
    # The log parser: the tailer's per-line path, and `report --log`, `parse`.
    "gapwatch/logs/parse/__init__.py",
    "gapwatch/cuzk/log_lines.py",
    "gapwatch/core/values.py",
    "gapwatch/logs/parse/tracing.py",
    "gapwatch/logs/parse/prefixes.py",
    "gapwatch/cuzk/partitions.py",
    "gapwatch/logs/parse/user_rules.py",
]


def _compile_wanted() -> bool:
    if os.environ.get("GAPWATCH_PURE", "") not in ("", "0"):
        return False
    # setuptools runs `editable_wheel` for `pip install -e`; `develop` is the legacy spelling.
    if any(arg in ("editable_wheel", "develop") for arg in sys.argv):
        return False
    # pip runs this file for metadata too (`egg_info`, `dist_info`): type-checking and
    # generating C then would only be thrown away.
    return any(arg in ("bdist_wheel", "build_ext", "build", "install") for arg in sys.argv)


class OptionalBuildExt(build_ext):
    """Build the compiled modules, or none of them: a half-built set (the shared library
    missing, one module's stub present) would mix compiled and interpreted copies of a class."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # any compiler failure means "install pure"
            for output in self.get_outputs():
                Path(output).unlink(missing_ok=True)
            self.extensions = []
            print(f"WARNING: gapwatch installs as pure Python (compiling failed: {exc})",
                  file=sys.stderr)


def _extensions() -> list[Any]:
    if not _compile_wanted():
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("WARNING: gapwatch installs as pure Python (mypyc not found)", file=sys.stderr)
        return []
    try:
        return list(mypycify(COMPILED, opt_level="3", debug_level="0",
                             group_name="gapwatch_native"))
    except (Exception, SystemExit) as exc:  # mypyc exits on a type error: stay pure
        print(f"WARNING: gapwatch installs as pure Python (mypyc: {exc!r})", file=sys.stderr)
        return []


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
