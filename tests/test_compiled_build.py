"""The compiled build (setup.py: the report's hot path through mypyc) gives the very reports the
pure Python source gives, and the build's own list of modules stays true.

The comparison needs a compiled gapwatch installed beside this source tree: `.ci/run` installs
one (`pip install '.[test]'` compiles), the tests run against the source tree, and the installed
package is reached with `python -P` from another folder. An editable install (how the project is
developed) is pure Python on purpose, so there the comparison is skipped unless
`GAPWATCH_COMPILED_PYTHON` names an interpreter whose gapwatch is compiled.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.simulate import simulate
from gapwatch.base.build import build_kind, is_compiled
from gapwatch.core.exact import ns_to_s
from gapwatch.sinks.recorder import write_recording

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
DATA = Path(__file__).resolve().parent / "data"
sys.path.insert(0, str(BENCH))

import parse_same  # noqa: E402 - found through the path above
import report_same  # noqa: E402


def _compiled_list() -> list[str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "COMPILED" for t in node.targets):
            value = ast.literal_eval(node.value)
            assert isinstance(value, list)
            return [str(v) for v in value]
    raise AssertionError("setup.py has no COMPILED list")


def test_every_module_setup_py_compiles_exists() -> None:
    # mypyc stops at a path that does not exist, and the install then falls back to pure
    # Python without a word in pip's quiet output: a renamed module must be renamed there too.
    compiled = _compiled_list()
    assert compiled and all((ROOT / p).is_file() for p in compiled)
    assert compiled[0] == "gapwatch/core/detector.py"  # what base.build probes


@pytest.mark.parametrize("t", [
    0, 1, 999_999_999, -1_500_000_001, (1 << 53) - 1, 1 << 53, (1 << 53) + 1,
    report_same.EPOCH_NS + 914_691_409, -(report_same.EPOCH_NS + 914_691_409), (1 << 63) - 1,
])
def test_nanoseconds_become_seconds_as_python_divides_ints_on_both_sides_of_2_to_the_53(
        t: int) -> None:
    # Over the pure source both branches of ns_to_s are Python's own division; this bites where
    # ns_to_s is compiled (.ci/run-compiled): there `/` would divide doubles. In every .ci/run
    # the installed compiled build is held to it by the epoch-clock recording below.
    assert ns_to_s(t) == t / 1_000_000_000


def test_a_clock_from_the_epoch_is_where_a_double_division_rounds_differently() -> None:
    # The premise of the epoch-clock case: at these times the two divisions do differ.
    t = report_same.EPOCH_NS + 914_691_409
    assert ns_to_s(t) != float(t) / 1e9  # what compiled `int / int` would give


def _source_side_pure() -> None:
    """The comparisons below compare a compiled build with the interpreted source: skipped when
    the suite itself runs over a tree compiled in place."""
    if is_compiled():
        pytest.skip("this suite runs over a compiled tree: nothing pure to compare with")
    assert build_kind() == "pure Python"


def _compiled_python(tmp_path: Path) -> str | None:
    """An interpreter whose installed gapwatch is compiled, or None."""
    named = os.environ.get("GAPWATCH_COMPILED_PYTHON")
    python = named or sys.executable
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run(
        [python, "-P", "-c", "from gapwatch.base.build import is_compiled; print(is_compiled())"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )
    compiled = probe.returncode == 0 and probe.stdout.strip() == "True"
    if named and not compiled:
        pytest.fail(f"GAPWATCH_COMPILED_PYTHON={named}: its gapwatch is not compiled "
                    f"({probe.stdout.strip() or probe.stderr.strip()[-300:]})")
    return python if compiled else None


def _cases(tmp_path: Path) -> list[tuple[str, Path, list[Path]]]:
    """Every scenario, damaged copies (the detector's rare paths), a clock past 2**53 ns, and
    H200 recordings with their logs and `/status` snapshots."""
    cases: list[tuple[str, Path, list[Path]]] = []
    for scenario in ("chained", "pageable", "host-stall", "transfer-bound"):
        res = simulate(scenario, seed=5, duration_s=90, gpus=2,
                       status_period_s=1.0 if scenario == "pageable" else None)
        src = tmp_path / f"{scenario}.jsonl"
        write_recording(src, res.header, res.records)
        damaged = tmp_path / f"damaged-{scenario}.jsonl"
        report_same._damage(src, damaged, seed=len(scenario))
        cases += [(scenario, src, []), (f"damaged-{scenario}", damaged, [])]
    epoch = tmp_path / "epoch-pageable.jsonl"
    report_same.shift_clock(tmp_path / "pageable.jsonl", epoch)
    cases.append(("epoch-pageable", epoch, []))
    hostile = tmp_path / "hostile-pageable.jsonl"
    _hostile(tmp_path / "pageable.jsonl", hostile)
    cases.append(("hostile-pageable", hostile, []))
    for rec in (DATA / "h200-e2e" / "pageable" / "rec.jsonl.gz",
                DATA / "h200-copytrace" / "pageable" / "rec.jsonl.gz",
                DATA / "h200-cuzk-status" / "host-stall-status" / "rec.jsonl.gz"):
        if rec.exists():
            logs = [p for p in (rec.parent / "stdout.log", rec.parent / "stderr.log")
                    if p.exists()]
            cases.append((f"{rec.parent.parent.name}-{rec.parent.name}", rec, logs))
    return cases


def _hostile(src: Path, dst: Path) -> None:
    """A copy with lines no recorder writes: readings that are no readings (negative, zero with
    no PCIe), a GPU index past any box, a time past 64 bits, garbage, and a half last line."""
    lines = src.read_bytes().splitlines(keepends=True)
    gpu = next(line for line in lines[1:] if line.startswith(b'{"type":"gpu"'))
    bad = [
        gpu.replace(b'"sm_active_pct":', b'"sm_active_pct":-1.0,"x":'),
        gpu.replace(b'"gpu":0', b'"gpu":4096'),
        gpu.replace(b'"gpu":0', b'"gpu":' + b"1" + b"0" * 30),
        b'{"type":"gpu","t_mono_ns":' + b"9" * 30 + b"}\n",
        b"\x00\xff not json\n",
        b'{"type":"host","t_mono_ns":1,"t_wall_s":-5}\n',
    ]
    for i, line in enumerate(bad):
        lines.insert(200 + 300 * i, line)
    dst.write_bytes(b"".join(lines)[:-20])


@pytest.mark.slow
def test_the_compiled_build_reports_every_input_byte_for_byte_as_the_source_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _source_side_pure()
    python = _compiled_python(tmp_path)
    if python is None:
        pytest.skip("the installed gapwatch is pure Python (an editable install?): "
                    "`pip install .` builds the compiled one, as .ci/run does")
    cases = _cases(tmp_path)
    assert len(cases) >= 10
    manifest = tmp_path / "cases.json"
    manifest.write_text(json.dumps([[n, str(p), [str(x) for x in logs]] for n, p, logs in cases]))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [python, "-P", str(BENCH / "report_same.py"), "--dump", str(tmp_path / "compiled"),
         "--cases", str(manifest)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "site-packages" in run.stderr.splitlines()[0]  # "gapwatch from ...": the install
    report_same.dump(tmp_path / "pure", cases)
    # Each case in one process and in two (the workers pickle their results to the parent).
    assert report_same.compare(tmp_path / "pure", tmp_path / "compiled") == 0, \
        capsys.readouterr().out[-3000:]
    assert len(list((tmp_path / "pure").glob("*.json"))) == 2 * len(cases)
    # The comparison compares gaps, not empty documents.
    assert json.loads((tmp_path / "pure" / "pageable.w2.json").read_bytes())["gaps"]


@pytest.mark.slow
def test_the_compiled_parser_gives_every_event_and_counter_the_source_gives(
        tmp_path: Path) -> None:
    # Every log in tests/data as written, behind prefixes, coloured, cut and mutated, and lines
    # for two user rules: bench/parse_same.py's inputs, without the shared traces.
    _source_side_pure()
    python = _compiled_python(tmp_path)
    if python is None:
        pytest.skip("the installed gapwatch is pure Python (an editable install?): "
                    "`pip install .` builds the compiled one, as .ci/run does")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [python, "-P", str(BENCH / "parse_same.py"), "--dump", str(tmp_path / "compiled.txt"),
         "--no-shared"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    parse_same.dump(tmp_path / "pure.txt", shared=False)
    pure = (tmp_path / "pure.txt").read_bytes()
    assert pure.count(b'"kind":"user:other"') > 100 and pure.count(b'"type":"log"') > 10_000
    assert (tmp_path / "compiled.txt").read_bytes() == pure
