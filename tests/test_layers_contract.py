"""Layering, enforced: the core never imports Textual or plotext; one module imports pynvml and
none psutil; headless commands run without Textual ever being loaded."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from shared_files import made_once

PKG = Path(__file__).parent.parent / "gapwatch"


def _import_statements(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement in `body`, at any depth (in functions, classes, ifs, trys):
    statements only, not every expression node as `ast.walk` would (a tenth of the nodes)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                yield from _import_statements(inner)
        for part in [*getattr(node, "handlers", ()), *getattr(node, "cases", ())]:
            yield from _import_statements(part.body)


Statement = ast.Import | ast.ImportFrom


def _parsed(folder: Path) -> None:
    """Every module's import statements (`_import_statements`), as JSON in `folder`."""
    found = {str(path): [ast.unparse(node) for node in _import_statements(
        ast.parse(path.read_text()).body)] for path in PKG.rglob("*.py")}
    (folder / "imports.json").write_text(json.dumps(found))


@pytest.fixture(scope="module")
def statements(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, list[Statement]]:
    """Every module of the package's import statements, at any depth. Parsing the whole
    package is ~0.5 s of CPU (1.7 s under the suite's load), and the tests that read it land
    in different workers: the statements are found once per run (`made_once`, as the exact
    source text of each statement, `ast.unparse`) and each worker parses only those again."""
    folder = made_once(tmp_path_factory, "layers-imports", _parsed)
    found = json.loads((folder / "imports.json").read_text())
    return {Path(path): [cast(Statement, ast.parse(text).body[0]) for text in texts]
            for path, texts in found.items()}


def _imports(path: Path, statements: dict[Path, list[Statement]]) -> set[str]:
    out: set[str] = set()
    for node in statements[path]:
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


def _modules(statements: dict[Path, list[Statement]]) -> dict[str, set[str]]:
    return {str(p.relative_to(PKG)): _imports(p, statements) for p in PKG.rglob("*.py")}


def test_only_the_ui_imports_textual_or_plotext(
        statements: dict[Path, list[Statement]]) -> None:
    offenders = {m for m, imps in _modules(statements).items()
                 if imps & {"textual", "plotext", "textual_plotext", "rich"}
                 and not m.startswith("ui/")}
    assert offenders == set()


def test_only_sources_nvml_imports_pynvml_and_nothing_imports_psutil(
        statements: dict[Path, list[Statement]]) -> None:
    mods = _modules(statements)
    assert {m for m, i in mods.items() if "pynvml" in i} == {"sources/nvml.py"}
    assert {m for m, i in mods.items() if "psutil" in i} == set()  # not a dependency


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


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _import_graph(statements: dict[Path, list[Statement]]) -> dict[str, set[str]]:
    """Module -> the gapwatch modules it imports, at any depth of the file (lazy imports
    inside functions count: a cycle hidden in a function is still a cycle)."""
    names = {_module_name(p) for p in PKG.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in PKG.rglob("*.py"):
        me = _module_name(path)
        pkg = me if path.name == "__init__.py" else me.rpartition(".")[0]
        deps: set[str] = set()
        for node in statements[path]:
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                    base = ".".join([*up, base] if base else up)
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            for t in targets:
                # The deepest module this names (`from gapwatch.core import fmt` names fmt).
                while t and t not in names:
                    t = t.rpartition(".")[0]
                if t and t != me and t != "gapwatch":
                    deps.add(t)
        graph[me] = deps
    return graph


def test_the_package_has_no_import_cycle(statements: dict[Path, list[Statement]]) -> None:
    graph = _import_graph(statements)
    done: set[str] = set()
    path: list[str] = []

    def visit(m: str) -> None:
        if m in path:
            raise AssertionError("import cycle: " + " -> ".join(path[path.index(m):] + [m]))
        if m in done:
            return
        path.append(m)
        for d in sorted(graph.get(m, ())):
            visit(d)
        path.pop()
        done.add(m)

    for module in sorted(graph):
        visit(module)


def test_the_top_level_holds_only_entry_points_and_documented_subpackages() -> None:
    top = {p.name for p in PKG.iterdir() if p.name != "__pycache__"}
    packages = {p.name for p in PKG.iterdir() if (p / "__init__.py").exists()}
    assert top - packages == {"__init__.py", "__main__.py", "cli.py", "py.typed"}
    assert packages == {"base", "commands", "config", "copytrace", "core", "cuzk", "engine",
                        "fleet", "logs", "offline", "sinks", "sources", "ui"}
    for init in PKG.rglob("__init__.py"):
        if init.parent == PKG:
            continue
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and ("who use" in doc.lower() or "who call" in doc.lower()), init


def test_the_core_has_no_threads_clocks_or_hardware(
        statements: dict[Path, list[Statement]]) -> None:
    for path in (PKG / "core").glob("*.py"):
        imps = _imports(path, statements)
        assert not imps & {"threading", "time", "pynvml", "psutil", "socket", "textual"}, path
    graph = _import_graph(statements)
    for module, deps in graph.items():
        if module.startswith("gapwatch.core"):
            assert all(d.startswith("gapwatch.core") for d in deps), (module, deps)


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """Run import-linter's contracts (pyproject's `[tool.importlinter]`) over the package at
    `root` (a checkout or a copy of one)."""
    lint = Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(lint), "--no-cache", "--config", str(root / "pyproject.toml")],
                          capture_output=True, text=True, timeout=120, cwd=root,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})


def test_no_import_goes_up_the_layers() -> None:
    out = _lint_imports(PKG.parent)
    assert "Contracts: 1 kept, 0 broken." in out.stdout, out.stdout + out.stderr


def test_the_layers_contract_catches_a_lazy_import_up_the_layers(tmp_path: Path) -> None:
    """A copy of the package where the log tailer imports the session inside a function: the
    contract must break on it (the check reads imports inside functions, not only at the top)."""
    shutil.copytree(PKG, tmp_path / "gapwatch", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PKG.parent / "pyproject.toml", tmp_path / "pyproject.toml")
    tail = tmp_path / "gapwatch" / "logs" / "tail.py"
    tail.write_text(tail.read_text() + "\n\ndef _up() -> None:\n"
                    "    from gapwatch.engine.session import Session\n    del Session\n")
    out = _lint_imports(tmp_path)
    assert "1 broken" in out.stdout, out.stdout + out.stderr
    assert "gapwatch.logs.tail -> gapwatch.engine.session" in out.stdout
