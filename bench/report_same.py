"""Is the report still the same? `gapwatch report --json` of many inputs, this checkout against
another, byte for byte.

Usage:
    python bench/report_same.py --before CHECKOUT      # CHECKOUT's report beside this one's
    python bench/report_same.py --dump DIR             # this checkout's documents into DIR
    python bench/report_same.py --compare DIR_A DIR_B  # two dumps
    python -P bench/report_same.py --dump DIR          # the installed gapwatch's (-P: not this
                                                       # checkout's)

Every recording is reported in one process and in two (`build_report(..., workers=1 / 2)`; one
the parallel report does not split falls back to one process there, as `report` does; trace
CSVs are read in one process only):
- every H200 recording in tests/data (the end-to-end and copy-trace cases, without and with
  their `stdout.log` / `stderr.log`, the sampler recordings), the trace CSVs with their logs;
- both shared H200 traces (`/work/shared/traces/*/*.csv` with their logs) when present;
- the simulated worst cases: each scenario, 2 GPUs, 5 min, with `/status` snapshots for one,
  and `chained` and `pageable` with the copy trace's copies (5 a partition);
  8 GPUs x 30 min of `pageable` (bench/report_floor.py's recording), plain and gzip;
- the same simulated recordings damaged on purpose (`evaluation.documents.damage`: holes, clock
  steps, samples out of order, stale GPM zeros, NaN and missing readings, a GPU that goes
  silent), so that the detector's rarer paths are compared too.
The documents are `gapwatch.offline.report.to_json` encoded by the codec; CHECKOUT is run with
this venv's python and `PYTHONPATH=CHECKOUT` (its dependencies are this one's), reading the
same files. Generated inputs are cached under /tmp/gapwatch-same/.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve()

CACHE = Path("/tmp/gapwatch-same")
SHARED = Path("/work/shared/traces")


def _env_with(checkout: Path) -> dict[str, str]:
    """`evaluation.checkout_env.env_with`, imported in the parent process only (a `--dump`
    child runs with another checkout, and maybe its own `evaluation`, first on its path)."""
    sys.path.insert(0, str(ROOT))
    from evaluation.checkout_env import env_with

    return env_with(checkout)


def _cases() -> list[tuple[str, Path, list[Path]]]:
    """(name, input, log files) for every input; the generated ones are made here."""
    data = ROOT / "tests" / "data"
    out: list[tuple[str, Path, list[Path]]] = []
    for rec in sorted([*data.glob("h200-e2e/*/rec.jsonl.gz"),
                       *data.glob("h200-copytrace/*/rec.jsonl.gz")]):
        name = f"{rec.parent.parent.name}-{rec.parent.name}"
        out.append((name, rec, []))
        logs = [p for p in (rec.parent / "stdout.log", rec.parent / "stderr.log") if p.exists()]
        if logs:
            out.append((f"{name}+logs", rec, logs))
    for rec in sorted(data.glob("h200-sampler*.jsonl.gz")):
        out.append((rec.name, rec, []))
    for csv in sorted([*data.glob("*.csv"), *SHARED.glob("*/*.csv")]):
        where = "shared" if SHARED in csv.parents else "data"
        log = csv.with_suffix(".log")
        out.append((f"{where}-{csv.stem}", csv, []))
        if log.exists():
            out.append((f"{where}-{csv.stem}+log", csv, [log]))
    for path in _simulated():
        out.append((path.name, path, []))
    return out


def _simulated() -> list[Path]:
    CACHE.mkdir(exist_ok=True)
    made = CACHE / "done-v5"
    paths = [CACHE / f"{s}-2gpu-5m.jsonl" for s in ("chained", "pageable", "host-stall",
                                                       "transfer-bound")]
    paths += [CACHE / "pageable-status-2gpu-5m.jsonl"]
    paths += [CACHE / f"{s}-traced-2gpu-5m.jsonl" for s in ("chained", "pageable")]
    paths += [p.with_name(f"damaged-{p.name}") for p in list(paths)]
    paths += [CACHE / "epoch-pageable-2gpu-5m.jsonl"]
    floor = Path("/tmp/gapwatch-floor-30m-8gpu.jsonl")
    if not made.exists():
        subprocess.run([sys.executable, str(HERE), "--generate"], check=True, cwd=ROOT,
                       env=_env_with(ROOT))
    if not (floor.exists() and Path(f"{floor}.gz").exists()):
        subprocess.run([sys.executable, str(ROOT / "bench" / "report_floor.py"), "--generate",
                        "30", "8", str(floor)], check=True, cwd=ROOT,
                       env=_env_with(ROOT))
    return [*paths, floor, Path(f"{floor}.gz")]


def generate() -> None:
    """The simulated recordings and their damaged copies (this checkout's simulator)."""
    sys.path.insert(0, str(ROOT))
    from evaluation.documents import damage, shift_clock
    from evaluation.simulate import simulate
    from gapwatch.sinks.recorder import write_recording

    for scenario in ("chained", "pageable", "host-stall", "transfer-bound"):
        res = simulate(scenario, seed=3, duration_s=300, gpus=2)
        write_recording(CACHE / f"{scenario}-2gpu-5m.jsonl", res.header, res.records)
    res = simulate("pageable", seed=4, duration_s=300, gpus=2, status_period_s=1.0)
    write_recording(CACHE / "pageable-status-2gpu-5m.jsonl", res.header, res.records)
    for scenario in ("chained", "pageable"):  # with the copy trace, 5 copies a partition
        res = simulate(scenario, seed=5, duration_s=300, gpus=2, copies_per_partition=5)
        write_recording(CACHE / f"{scenario}-traced-2gpu-5m.jsonl", res.header, res.records)
    for p in sorted(CACHE.glob("*-2gpu-5m.jsonl")):
        if not p.name.startswith("damaged-"):
            damage(p, p.with_name(f"damaged-{p.name}"), seed=len(p.name))
    shift_clock(CACHE / "pageable-2gpu-5m.jsonl", CACHE / "epoch-pageable-2gpu-5m.jsonl")
    (CACHE / "done-v5").write_text("")


def dump(out_dir: Path, cases: list[tuple[str, Path, list[Path]]] | None = None) -> None:
    """This checkout's documents (the gapwatch on sys.path), one file per input and workers;
    `cases` (name, input, logs) default to every input `_cases` makes."""
    import gapwatch
    from gapwatch.config import Config
    from gapwatch.offline.report import build_report

    print(f"gapwatch from {Path(gapwatch.__file__).parent}", file=sys.stderr)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, path, logs in _cases() if cases is None else cases:
        for workers in (1,) if path.suffix == ".csv" else (1, 2):
            t = time.perf_counter()
            report = build_report(path, Config(), [str(p) for p in logs], workers=workers)
            (out_dir / f"{name}.w{workers}.json").write_bytes(document(report))
            print(f"  {name} w{workers}: {len(report.gaps)} gaps, "
                  f"{time.perf_counter() - t:.2f} s", file=sys.stderr)


def document(report: Any) -> bytes:
    """What is compared of a report: `report --json`'s document, every state change and the
    whole-run totals."""
    from gapwatch.core.codec import encode_json, to_plain
    from gapwatch.offline.report import to_json

    doc = to_json(report)
    doc["_states"] = to_plain(report.states)
    doc["_totals"] = [repr(t) for t in report.totals]
    return encode_json(doc, indent=1)


def read_cases(manifest: Path) -> list[tuple[str, Path, list[Path]]]:
    """Cases from a JSON file: a list of [name, input, [log, ...]]."""
    import json

    return [(name, Path(p), [Path(x) for x in logs])
            for name, p, logs in json.loads(manifest.read_text())]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, help="another checkout to compare with")
    ap.add_argument("--dump", type=Path, help="write this checkout's documents here")
    ap.add_argument("--cases", type=Path,
                    help="with --dump: only these inputs (a JSON list of [name, input, [logs]])")
    ap.add_argument("--compare", nargs=2, type=Path)
    ap.add_argument("--generate", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.generate:
        generate()
        return 0
    if args.dump:
        dump(args.dump, read_cases(args.cases) if args.cases else None)
        return 0
    if args.compare:
        return compare(*args.compare)
    if args.before is None:
        ap.error("give --before CHECKOUT, --dump DIR or --compare DIR_A DIR_B")
    _cases()  # generate the inputs once, with this checkout
    with tempfile.TemporaryDirectory() as tmp:
        for who, where in (("before", args.before.resolve()), ("now", ROOT)):
            subprocess.run([sys.executable, str(HERE), "--dump", f"{tmp}/{who}"], check=True,
                           cwd=where, env=_env_with(where))
        return compare(Path(tmp) / "before", Path(tmp) / "now")


def compare(a: Path, b: Path) -> int:
    """`evaluation.documents.compare`, imported in this (the parent) process only: a `--dump`
    child runs with another checkout first on its path."""
    sys.path.insert(0, str(ROOT))
    from evaluation.documents import compare as compare_documents

    return compare_documents(a, b)



if __name__ == "__main__":
    raise SystemExit(main())
