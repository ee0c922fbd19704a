"""Prover logs: follow files and pipes like `tail -F` (`tail`), parse their lines into
`LogEvent`s (`parse`: cuzk's built-in rules, tracing lines, journald prefixes, user rules,
per-partition timelines), and the glue that hands parsed events to a session (`follow`).

Who uses it: the runtime (live following), `gapwatch parse`, `gapwatch report --log`.
"""
