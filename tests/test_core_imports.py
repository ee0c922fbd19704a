"""Layering, enforced: the core never imports Textual or plotext; one module imports pynvml and
one imports psutil; headless commands run without Textual ever being loaded."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).parent.parent / "gapwatch"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


def _modules() -> dict[str, set[str]]:
    return {str(p.relative_to(PKG)): _imports(p) for p in PKG.rglob("*.py")}


def test_only_the_ui_imports_textual_or_plotext() -> None:
    offenders = {m for m, imps in _modules().items()
                 if imps & {"textual", "plotext", "textual_plotext", "rich"}
                 and not m.startswith("ui/")}
    assert offenders == set()


def test_only_sources_nvml_imports_pynvml_and_only_sources_host_imports_psutil() -> None:
    mods = _modules()
    assert {m for m, i in mods.items() if "pynvml" in i} == {"sources/nvml.py"}
    assert {m for m, i in mods.items() if "psutil" in i} <= {"sources/host.py"}


def test_headless_record_never_loads_textual(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from gapwatch.cli import main\n"
        f"rc = main(['record', '--source', 'sim:pageable', '--speed', '0', '--duration', '5',"
        f" '--out', {str(tmp_path / 'r.jsonl')!r}, '--quiet'])\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('textual', 'plotext', 'textual_plotext'))\n"
        "print(rc, bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "0 []", out.stderr


def test_cli_help_loads_no_ui_or_driver() -> None:
    code = (
        "import sys\nfrom gapwatch.cli import build_parser\nbuild_parser()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('textual', 'plotext', 'pynvml', 'psutil')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_other_headless_commands_never_load_textual(tmp_path: Path) -> None:
    data = Path(__file__).parent / "data"
    trace, log = data / "pageable.csv", data / "pageable.log"
    code = (
        "import sys, contextlib, io\n"
        "from gapwatch.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    rcs = [main(['replay', {str(trace)!r}, '--headless', '--speed', '0']),\n"
        f"           main(['report', {str(trace)!r}, '--json']),\n"
        f"           main(['export', {str(trace)!r}, '--format', 'csv',"
        f" '--out', {str(tmp_path / 'x.csv')!r}]),\n"
        f"           main(['parse', {str(log)!r}])]\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('textual', 'plotext', 'textual_plotext'))\n"
        "print(rcs, bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "[0, 0, 0, 0] []", out.stderr
