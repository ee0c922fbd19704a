"""The flags that say what to do with an existing recording: `--force` and `--rotate`.

Who calls it: `gapwatch record` (beside `--out`), `gapwatch watch` and `gapwatch demo` (beside
`--record`). The policy itself (refuse, replace, rotate; the lock) lives in
`gapwatch.sinks.output_file`.
"""

from __future__ import annotations

import argparse

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


def exists_policy(args: argparse.Namespace) -> ExistsPolicy:
    """The policy the flags ask for (refuse when neither is given)."""
    return "replace" if args.force else "rotate" if args.rotate else "refuse"
