"""Subcommands: one module each, `add_arguments(parser)` and `run(args, config) -> exit code`.

Who calls them: `gapwatch.cli`, which builds the parser from every module's `add_arguments`
and runs the chosen one. Thin: they parse, build what the engine or offline tools need, and print.
Modules here must not import Textual, plotext or pynvml at import time: `gapwatch --help`
imports them all. The dashboard commands import `gapwatch.ui` inside `run`.
"""
