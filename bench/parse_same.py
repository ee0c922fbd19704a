"""Does the parser still say the same? Every event and counter `LogParser` gives for many inputs,
this checkout against another, byte for byte.

Usage:
    python bench/parse_same.py --before CHECKOUT      # CHECKOUT's events beside this one's
    python bench/parse_same.py --dump FILE            # this checkout's events into FILE
    python -P bench/parse_same.py --dump FILE         # the installed gapwatch's, not this tree's

The inputs, each through a fresh parser (and the real mix once more with lock attribution and
unparsed lines as `parse` runs them):
- every `*.log` under tests/data and /work/shared/traces (when present; not with `--no-shared`),
  as written, and lines made for two user rules (`[[logs.rules]]`, `USER_RULES`);
- the same lines behind the prefixes tools put in front (journald ISO and short, `ts`, epoch
  seconds), with ANSI colours and CRs, cut at random places, and mutated at random (characters
  replaced, doubled, dropped, quotes, brackets, `=` and spaces added: the rarer paths of the
  field syntax), from a fixed seed.
Each event is the record codec's JSON line, each parser's counters a sorted JSON object.
CHECKOUT is run with this venv's python and `PYTHONPATH=CHECKOUT`, reading the same files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SHARED = Path("/work/shared/traces")
PREFIXES = ("2026-11-30T09:06:26.553439+0000 host cuzk[812]: ", "Nov 30 09:06:26.553439 host "
            "cuzk[812]: ", "Nov 30 09:06:26 ", "2026-11-30 09:06:26.553439 ",
            "1796029586.553439 ")
NOISE = ' ="[]{}:,.x_9\\\n\t\u00e9-'


def _logs(shared: bool = True) -> list[Path]:
    found = sorted((ROOT / "tests" / "data").rglob("*.log"))
    if shared and SHARED.is_dir():
        found += sorted(SHARED.rglob("*.log"))
    return found


#: User rules (`[[logs.rules]]`) for the rule-driven pass: named groups, a strptime timestamp,
#: an event name and a warning; the lines they are fed are made to match, and then mutated.
USER_RULES = [
    {"name": "other", "regex": r"^\[(?P<timestamp>[^\]]+)\] w(?P<worker>\d+) p(?P<partition>\d+) "
     r"(?P<phase>\w+) took (?P<took_ms>\d+)ms(?: on gpu (?P<gpu>\d+))?"},
    {"name": "stall", "regex": r"^(?P<timestamp>\d+/\d+/\d+ \d+:\d+:\d+) host copy fell back",
     "timestamp_format": "%Y/%m/%d %H:%M:%S", "event": "pageable_fallback",
     "warning": "unpinned"},
]


def _rule_lines() -> list[str]:
    rng = random.Random(5)
    out = []
    for i in range(600):
        gpu = f" on gpu {i % 4}" if i % 3 else ""
        out.append(f"[2026-11-30T09:{i % 60:02d}:26.5Z] w{i % 7} p{i % 16} msm took {i}ms{gpu}")
        out.append(f"2026/11/30 09:{i % 60:02d}:26 host copy fell back to pageable")
        out.append(f"[yesterday] w1 p{i} ntt took {rng.randrange(10**6)}ms")
    return out


def _mutate(rng: random.Random, line: str) -> str:
    chars = list(line)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(chars) + 1)
        op = rng.randrange(4)
        if op == 0 and i < len(chars):
            chars[i] = rng.choice(NOISE)
        elif op == 1 and i < len(chars):
            chars.insert(i, chars[i])
        elif op == 2 and i < len(chars):
            del chars[i]
        else:
            chars.insert(i, rng.choice(NOISE))
    return "".join(chars)


def _variants(lines: list[str]) -> Iterator[list[str]]:
    rng = random.Random(21)
    yield lines
    for prefix in PREFIXES:
        yield [prefix + line for line in lines]
    yield ["\x1b[2m" + line[:30] + "\x1b[0m" + line[30:] + "\r" for line in lines]
    yield [line[:rng.randrange(len(line) + 1)] for line in lines]
    for _ in range(6):
        yield [_mutate(rng, line) for line in lines if line]


def dump(out: Path, shared: bool = True) -> None:
    """Every event and counter, into `out`; `shared`: the shared traces' logs too (tests say
    False: they never read /work/shared)."""
    from gapwatch.config import build_config
    from gapwatch.core.codec import encode_line
    from gapwatch.logs.parse import LogParser

    ruled = build_config({"logs": {"rules": USER_RULES}}).logs
    inputs = [(p.name, p.read_text(encoding="utf-8", errors="replace").splitlines(), None)
              for p in _logs(shared)]
    inputs.append(("user rules", _rule_lines(), ruled))
    with out.open("wb") as f:
        for name, lines, config in inputs:
            for n, variant in enumerate(_variants(lines)):
                f.write(f"# {name} variant {n}\n".encode())
                parser = LogParser(config) if config is not None else LogParser()
                for i, line in enumerate(variant):
                    for event in parser.parse_line(line, "same", i * 1000, 1796029586.0 + i):
                        f.write(encode_line(event))
                f.write(json.dumps(dict(parser.counters), sort_keys=True).encode() + b"\n")


def _digest(path: Path) -> tuple[int, str]:
    data = path.read_bytes()
    return data.count(b"\n"), hashlib.sha256(data).hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--before", type=Path)
    ap.add_argument("--dump", type=Path)
    ap.add_argument("--no-shared", action="store_true", help="leave the shared traces out")
    args = ap.parse_args()
    if args.dump is not None:
        dump(args.dump, shared=not args.no_shared)
        return
    if args.before is None:
        ap.error("--before CHECKOUT or --dump FILE")
    # The parent only: a `--dump` child runs with another checkout first on its path.
    sys.path.insert(0, str(ROOT))
    from evaluation.checkout_env import env_with

    with tempfile.TemporaryDirectory() as tmp:
        now, before = Path(tmp) / "now.jsonl", Path(tmp) / "before.jsonl"
        subprocess.run([sys.executable, __file__, "--dump", str(now)], check=True,
                       env=env_with(ROOT))
        subprocess.run([sys.executable, __file__, "--dump", str(before)], check=True,
                       env=env_with(args.before))
        (n_now, d_now), (n_before, d_before) = _digest(now), _digest(before)
        print(f"now:    {n_now} lines, sha256 {d_now}")
        print(f"before: {n_before} lines, sha256 {d_before}")
        if d_now != d_before:
            diff = subprocess.run(["diff", str(before), str(now)], capture_output=True, text=True)
            print(diff.stdout[:4000])
            sys.exit("DIFFERENT")
        print("identical")


if __name__ == "__main__":
    main()
