"""Subcommands: one module each, `add_arguments(parser)` and `run(args, config) -> exit code`.

Modules here must not import Textual, plotext or pynvml at import time: `gapwatch --help`
imports them all. The dashboard commands import `gapwatch.ui` inside `run`.
"""
