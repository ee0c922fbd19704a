"""The flags that say what to do with an existing recording (`--force`, `--rotate`) and how to
keep a recording within a disk budget (`--rotate-size`, `--rotate-age`, `--keep`).

Who calls it: `gapwatch record` (beside `--out`), `gapwatch watch` and `gapwatch demo` (beside
`--record`). The policy itself (refuse, replace, rotate; the lock) lives in
`gapwatch.sinks.output_file`.
"""

from __future__ import annotations

import argparse

from gapwatch.commands import argtypes
from gapwatch.sinks.output_file import ExistsPolicy


def add_output_arguments(p: argparse.ArgumentParser, flag: str) -> None:
    """`--force` / `--rotate` beside the recording flag (`--out` for `record`, `--record` for
    the dashboards)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--force", action="store_true",
                   help=f"replace {flag} FILE if it exists (default: refuse)")
    g.add_argument("--rotate", action="store_true",
                   help=f"if {flag} FILE exists, keep it and record to the next free name "
                        "(gw.jsonl.gz -> gw.1.jsonl.gz)")
    p.add_argument("--rotate-size", type=argtypes.segment_size, default=None, metavar="SIZE",
                   help=f"record {flag} FILE as segments (gw.000001.jsonl.gz, ...), a new one "
                        "once the current one holds SIZE (1GiB, 512MiB; [record] rotate_size)")
    p.add_argument("--rotate-age", type=argtypes.segment_age, default=None, metavar="AGE",
                   help="... or once it is AGE old (1d, 6h; [record] rotate_age)")
    p.add_argument("--keep", type=argtypes.count, default=None, metavar="N",
                   help="keep the newest N segments, removing older ones of the set ([record] "
                        "keep; default: all)")


def exists_policy(args: argparse.Namespace) -> ExistsPolicy:
    """The policy the flags ask for (refuse when neither is given)."""
    return "replace" if args.force else "rotate" if args.rotate else "refuse"
