"""`gapwatch fleet --prometheus URL`: every proving box's GPUs in one table, from Prometheus.

Who calls it: `gapwatch.cli`. With `--once` it asks once and prints (a table, or `--json` for
scripts) and never imports Textual; without it, the Textual screen `gapwatch.ui.fleet` refreshes
every `--refresh` seconds. The queries and rows are `gapwatch.fleet` (docs/fleet.md).
Exit status of `--once`: 0 when the rows could be read, 1 when Prometheus could not answer the
row queries (the errors are in the JSON and on stderr), 2 for bad flags.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys

from gapwatch.commands import argtypes
from gapwatch.config import Config
from gapwatch.core import fmt
from gapwatch.core.codec import encode_json
from gapwatch.core.units import parse_duration
from gapwatch.engine.console import say
from gapwatch.fleet.client import PromClient
from gapwatch.fleet.layout import box_labels
from gapwatch.fleet.queries import promql_string
from gapwatch.fleet.rows import COLUMNS, FleetOptions, Refresh, cells, refresh
from gapwatch.fleet.targets import parse_selector


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prometheus", dest="prometheus_url", required=True, metavar="URL",
                   help="Prometheus that scrapes the boxes' gapwatch, e.g. http://prom:9090")
    p.add_argument("--once", action="store_true", help="ask once, print, exit (no screen)")
    p.add_argument("--json", action="store_true", help="with --once: print JSON for scripts")
    p.add_argument("--refresh", type=argtypes.positive_seconds, default=5.0, metavar="S",
                   help="seconds between refreshes of the screen (default 5)")
    p.add_argument("--timeout", type=argtypes.positive_seconds, default=5.0, metavar="S",
                   help="what one refresh may take in all before its queries are given up "
                        "(default 5)")
    p.add_argument("--selector", default='job="gapwatch"', metavar="MATCHERS",
                   help="label matchers of gapwatch's targets (default: job=\"gapwatch\")")
    p.add_argument("--lookback", default="1h", metavar="DURATION",
                   help="how long a box that stopped reporting is still listed (default 1h)")
    p.add_argument("--stale-after", type=argtypes.positive_seconds, default=60.0, metavar="S",
                   help="a box not scraped for this long is stale (default 60)")


def options(args: argparse.Namespace) -> FleetOptions:
    """The flags as `FleetOptions` (raises ValueError on a bad lookback or selector)."""
    if not re.fullmatch(r"[1-9][0-9]*(s|m|h|d|w)", args.lookback) or \
            parse_duration(args.lookback) < 60:
        raise ValueError(f"--lookback {args.lookback!r}: a duration of a minute or more, "
                         "as 30m, 1h or 2d")
    if any(c in args.selector for c in "{}\n"):
        raise ValueError(f"--selector {args.selector!r}: label matchers only, e.g. "
                         'job="gapwatch",cluster="proving"')
    bare, quoted = _bare_values(args.selector) if not _reads(args.selector) else ([], "")
    if bare:
        # PromQL quotes every value: unquoted, each of the refresh's queries was refused by
        # Prometheus in its own parse error (a dozen lines a refresh), exit 1.
        # The form to give only where it reads (`job=~a,b` quoted as `job=~"a",b` does not),
        # quoted for a shell (a `'` in it closed the quotes around it).
        give = f"; give --selector {shlex.quote(quoted)}" if _reads(quoted) else ""
        raise ValueError(f"--selector {args.selector!r}: PromQL quotes a matcher's value "
                         f"({bare[0]!r} is not quoted){give}")
    if not _utf8(args.selector):
        # Bytes of another encoding on the command line come as lone surrogates: the query's
        # form could not be encoded (a UnicodeEncodeError traceback at the first query).
        raise ValueError(f"--selector {args.selector!r}: not UTF-8 text (PromQL is UTF-8)")
    return FleetOptions(selector=args.selector, lookback=args.lookback,
                        stale_after_s=args.stale_after, budget_s=args.timeout)


#: The selector's parts: a quoted string whole (commas and `=` inside it are its own), or a
#: run of anything else up to a comma.
_PART = re.compile(r"""(?:"(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|`[^`]*`?|[^,"'`])+|(?=,)""")
#: A matcher whose value is not quoted (`job=gapwatch`, `job=`): the label, the operator, and
#: what follows it when that starts with no quote.
_BARE = re.compile(r"""\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*([^"'`\s][^"'`]*)?""")


def _bare_values(selector: str) -> tuple[list[str], str]:
    """The values of `selector` given without quotes, and the selector with them quoted (the
    form to give); nothing when every value is quoted or the text is no list of matchers."""
    bare: list[str] = []
    parts = []
    for m in _PART.finditer(selector):
        part = m.group()
        found = _BARE.fullmatch(part)
        if found is not None:
            value = (found.group(3) or "").strip()
            bare.append(value)
            part = f'{found.group(1)}{found.group(2)}"{promql_string(value)}"'
        parts.append(part)
    return bare, ",".join(p for p in parts if p) if bare else ""


def _reads(selector: str) -> bool:
    """Whether `selector` reads as quoted label matchers (`fleet.targets.parse_selector`)."""
    try:
        parse_selector(selector)
    except ValueError:
        return False
    return True


def _utf8(text: str) -> bool:
    """Whether `text` can be sent as UTF-8 (no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def run(args: argparse.Namespace, config: Config) -> int:
    del config  # fleet reads Prometheus, not a box: no config section applies
    if args.json and not args.once:
        say("gapwatch fleet: --json prints once; give --once too")
        return 2
    try:
        opts = options(args)
        client = PromClient(args.prometheus_url, timeout_s=args.timeout)
    except ValueError as exc:
        say(f"gapwatch fleet: {exc}")
        return 2
    if not args.once:
        from gapwatch.ui.fleet import run_fleet_screen

        return int(run_fleet_screen(client, opts, args.refresh))
    result = refresh(client, opts)
    for line in result.error_lines(client.base_url):
        say(f"gapwatch fleet: {line}")
    if args.json:
        # Label values are Prometheus's text: `encode_json` writes their C1 controls and bidi
        # overrides as \uXXXX (as every JSON output), so none reaches the terminal raw.
        sys.stdout.buffer.write(encode_json(result.as_json(client.base_url), indent=2) + b"\n")
    else:
        sys.stdout.write("\n".join(table_lines(result)) + "\n")
    sys.stdout.flush()
    return 1 if result.rows_failed else 0


#: The widest a `--once` text column grows to fit its cells; a longer cell ends in "…".
MAX_TEXT_CELL = 64


def table_lines(result: Refresh) -> list[str]:
    """The rows as plain text lines (`--once` without `--json`), the screen's columns, each
    as wide as its widest cell (up to MAX_TEXT_CELL). Cut to the screen's widths, cells were
    cut silently: two boxes whose names differ past 21 characters (`...example.net:9400` and
    `:9401`) printed the same, and a PoSt count of 12345 late as 1234."""
    all_cells = [cells(r) for r in result.rows]
    # In terminal cells (`fmt.cells`, `fmt.fit`): a wide character takes two.
    widths = [max([w, *(min(fmt.cells(c[i]), MAX_TEXT_CELL) for c in all_cells)])
              for i, (_, w) in enumerate(COLUMNS)]
    # Two names alike up to the cut read apart (`layout.box_labels`).
    boxes = box_labels([c[0] for c in all_cells], widths[0])
    all_cells = [(boxes[c[0]], *c[1:]) for c in all_cells]
    out = [" ".join(fmt.fit(h, w) for (h, _), w in zip(COLUMNS, widths, strict=True)).rstrip()]
    out += [" ".join(fmt.fit(c, w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in all_cells]
    if result.rows_failed:  # not "no target": Prometheus did not say (the why is on stderr)
        out.append("(rows not read: Prometheus did not answer the state query)")
    elif not result.rows:
        out += result.empty_lines()
    return out
