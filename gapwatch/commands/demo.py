"""`gapwatch demo`: placeholder until its issue lands (it says so and exits 1)."""

from __future__ import annotations

import argparse
import sys

from gapwatch.config import Config


def run(args: argparse.Namespace, config: Config) -> int:
    print("gapwatch demo: not implemented yet", file=sys.stderr)
    return 1
