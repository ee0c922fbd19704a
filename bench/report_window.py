"""A part of a long recording: `report --since/--until`, `compare --at`, `export --since`, timed
against the same recording's whole report.

Usage:
    python3 bench/report_window.py            # the day of 8 GPUs, windows and the whole
    python3 bench/report_window.py --no-whole # the windows only (the whole day takes minutes)

The recording and log are bench/report_memory.py's day of 8 GPUs (`/tmp/gapwatch-mem-24h-8gpu.*`,
made by it when missing: `python3 bench/report_memory.py --generate 24 8`) and its hour (for the
hour's own report beside the day's hour). Each figure is one fresh `python -m gapwatch ...`
under `/usr/bin/time` (wall and CPU seconds, start-up included, peak RSS of the largest
process), output to /dev/null; the day's recording gzipped (`/tmp/gapwatch-mem-24h-8gpu.jsonl.gz`,
made once, in members as the recorder writes them: a gzip file is inflated, not seeked, up to
a window);
the fixed loop (`for i in range(10**7): s += i`, at module
level in a fresh interpreter) before and after says how fast the box was.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DAY = Path("/tmp/gapwatch-mem-24h-8gpu")
HOUR = Path("/tmp/gapwatch-mem-1h-8gpu")


#: The fixed loop of docs/benchmarks.md, at module level in a fresh interpreter (its globals
#: are dict lookups: a loop inside a function runs ~2.5x faster and would not compare).
LOOP = "import time\nt = time.time(); s = 0\nfor i in range(10**7): s += i\nprint(time.time() - t)"


def _loop_s() -> float:
    done = subprocess.run([sys.executable, "-c", LOOP], capture_output=True, text=True,
                          check=True)
    return float(done.stdout)


def _ensure(base: Path, hours: int) -> None:
    if not (base.with_suffix(".jsonl").exists() and base.with_suffix(".log").exists()):
        subprocess.run([sys.executable, str(ROOT / "bench" / "report_memory.py"), "--generate",
                        str(hours), "8"], check=True)


def _gzipped(plain: Path) -> Path:
    """`plain` gzipped beside it, made once, as the recorder writes one: the header a gzip member
    of its own, then members of whole lines, ~1 MiB of them each, at level 6 (a window's end
    is read from the last member)."""
    gz = plain.with_name(plain.name + ".gz")
    if not gz.exists():
        part = gz.with_name(gz.name + ".part")
        with plain.open("rb") as src, part.open("wb") as dest:
            dest.write(gzip.compress(src.readline(), 6))
            while lines := src.readlines(1 << 20):
                dest.write(gzip.compress(b"".join(lines), 6))
        shutil.move(part, gz)
    return gz


def _timed(args: list[str]) -> str:
    with tempfile.NamedTemporaryFile("r") as err:
        subprocess.run(["/usr/bin/time", "-f", "%e s wall, %U+%S CPU-s, %M KB peak", "-o",
                        err.name, sys.executable, "-m", "gapwatch", *args],
                       cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
        return err.read().strip().splitlines()[-1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-whole", action="store_true", help="leave the whole day's report out")
    args = ap.parse_args()
    _ensure(DAY, 24)
    _ensure(HOUR, 1)
    rec, log = str(DAY.with_suffix(".jsonl")), str(DAY.with_suffix(".log"))
    gz = str(_gzipped(DAY.with_suffix(".jsonl")))
    out = Path(tempfile.gettempdir()) / "gapwatch-window-bench.trace.json"
    runs = [
        ["report", rec, "--since", "14:00", "--until", "15:00"],
        ["report", rec, "--log", log, "--since", "14:00", "--until", "15:00"],
        ["report", rec, "--since=-10m"],
        ["report", gz, "--since", "14:00", "--until", "15:00"],
        ["report", gz, "--since=-10m"],
        ["report", rec, "--log", log, "--since=-10m"],
        ["report", str(HOUR.with_suffix(".jsonl")), "--log", str(HOUR.with_suffix(".log"))],
        ["compare", rec, "--at", "14:00", "--span", "30m", "--before-log", log],
        ["export", rec, "--log", log, "--since", "14:00", "--until", "15:00", "--out", str(out)],
    ]
    if not args.no_whole:
        runs.append(["report", rec, "--log", log])
    print(f"loop {_loop_s():.2f} s")
    for argv in runs:
        print(f"gapwatch {' '.join(argv)}: {_timed(argv)}", flush=True)
    out.unlink(missing_ok=True)
    print(f"loop {_loop_s():.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
