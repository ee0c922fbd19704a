"""Rust `tracing_subscriber::fmt` lines (cuzk's stdout) and the `key=value` field syntax they use.

Who calls it: `gapwatch.logs.parse.LogParser` for lines that start with a date; `user_rules`
reuses `parse_kv` (field values are converted by `gapwatch.core.values`).

Layout (tracing-subscriber 0.3 Full formatter, ANSI already stripped):

    <RFC3339 µs>Z <LEVEL> [span{k=v ...}:]* <target>: <message>[ k=v]*

Field values as rendered by tracing: bare Display (`job_id=porep-1-2`, `error=text with spaces`),
Debug (`partition=Some(3)`, `None`, `gpus=[0, 1]`), quoted `&str` (`job_id="porep-1-2"`), ints,
bools and floats. A value runs until the next ` key=`; quoted strings and bracketed lists are
scanned to their closing character so that spaces or `=` inside them do not split them.
"""

from __future__ import annotations

import re
from typing import Final

import msgspec

from gapwatch.core.models import FieldValue
from gapwatch.core.values import NUMBER, convert_value
from gapwatch.logs.parse.prefixes import iso_to_epoch

_LEVELS = frozenset(("TRACE", "DEBUG", "INFO", "WARN", "ERROR"))
_FIRST_FIELD = re.compile(r"(?:^| )[A-Za-z_][\w.]*=")
# key=value, where value is a quoted string, a [list], or anything up to the next " key=".
# The key is a run of `[\w.]`'s part from its first `[A-Za-z_]`: a match begins only where a run
# does (`(?<![\w.])`), its other leading characters (digits, `.`, non-ASCII letters) and the
# key read possessively. Begun at each character of a run, as it was, each read on to the
# run's end: a span body of one 16 KiB word (`name{aaa...}:`) took 1.5 s of CPU.
_FIELD = re.compile(
    r'(?<![\w.])(?:[^\WA-Za-z_]|\.)*+([A-Za-z_][\w.]*+)='
    r'("(?:[^"\\]|\\.)*"|\[[^\]]*\]|.*?)(?= [A-Za-z_][\w.]*=|$)'
)
# Fields that are all one token each, `key=value key=value`: no value opens a quoted string
# or a list that could run past a space, none holds a space or a newline. For such text
# `_FIELD` finds exactly the tokens split at each space and at their first `=` (a value ends
# where the next ` key=` begins, and each token is one), so `parse_kv` splits them without
# the lazy search (tests/test_parse_fast_paths.py holds the two ways to the same fields).
_KEY = r"[A-Za-z_][\w.]*="
_TOKEN_VALUE = r'(?:"[^"\\ \n]*"|\[[^\] \n]*\]|[^ "\[\n][^ \n]*)?'
_ONE_TOKEN_FIELDS = re.compile(rf"{_KEY}{_TOKEN_VALUE}(?: {_KEY}{_TOKEN_VALUE})*")
# span{fields}: or span: (not followed by a second ':', which would make it a target a::b:).
# The body's runs are possessive (`++`, `*+`): giving back a character never lets a `}` follow
# (a run stops only at `{`, `}`, `"` or the end, and a quoted string has one end), so the
# matches are those of the plain pattern, found without trying one character at a time
# (tests/test_parse_fast_paths.py compares the two).
_SPAN = re.compile(r'([A-Za-z_]\w*)(?:\{((?:[^{}"]++|"(?:[^"\\]++|\\.)*+")*+)\})?:(?!:)')


class TracingLine(msgspec.Struct, gc=False):
    """One tracing line's parts (a Struct: made once a line, it costs a third of a dataclass)."""

    t_wall_s: float
    level: str
    spans: list[tuple[str, dict[str, FieldValue]]]
    target: str | None
    message: str
    fields: dict[str, FieldValue]


def parse_kv(s: str, pos: int = 0, out: dict[str, FieldValue] | None = None
             ) -> dict[str, FieldValue]:
    """Parse space-separated `key=value` fields from `s[pos:]` into `out` (never raises).

    This is the parser's hottest loop: one-token fields (most of cuzk's) are checked by one
    `fullmatch` and split at spaces; anything else takes one C-level `findall` pass. Text before
    the first `key=` is skipped.
    """
    fields: dict[str, FieldValue] = {} if out is None else out
    if _ONE_TOKEN_FIELDS.fullmatch(s, pos):
        for token in (s[pos:] if pos else s).split(" "):
            key, _, value = token.partition("=")
            fields[key] = convert_value(value)
        return fields
    return parse_kv_searching(s, pos, fields)


def parse_kv_searching(s: str, pos: int, fields: dict[str, FieldValue]
                       ) -> dict[str, FieldValue]:
    """`parse_kv` for any text: the `_FIELD` search (quoted strings, lists, values with spaces)."""
    # From `s[pos:]`, not `findall(s, pos)`: `_FIELD`'s lookbehind would see before `pos`, and
    # a key cut by the start is read from there, as the one-token split reads it.
    for key, value in _FIELD.findall(s[pos:] if pos else s):
        fields[key] = convert_value(value)
    return fields


#: Span bodies already parsed, and their fields: a span is written on every line inside it
#: (a partition's `synthesize_partition{job_id=.. partition=..}` on ~6 lines), so most bodies
#: were parsed before (~83 % of a busy log's). Bounded as the parser's other tables (field
#: values: `gapwatch.core.values._VALUES`; timestamps): emptied when full, a long body not kept;
#: inlined, as they are, on the parser's hot path.
_SPAN_FIELDS: dict[str, dict[str, FieldValue]] = {}
_SPAN_FIELDS_MAX: Final = 4096
_SPAN_BODY_KEPT_CHARS: Final = 256


def _span_fields(body: str) -> dict[str, FieldValue]:
    """`parse_kv(body)`, a fresh dict each time (the caller adds the line's own fields to it)."""
    kept = _SPAN_FIELDS.get(body)
    if kept is not None:
        return kept.copy()
    fields = parse_kv(body)
    if len(body) <= _SPAN_BODY_KEPT_CHARS:
        if len(_SPAN_FIELDS) >= _SPAN_FIELDS_MAX:
            _SPAN_FIELDS.clear()
        _SPAN_FIELDS[body] = fields.copy()
    return fields


def _peel_spans(rest: str) -> tuple[list[tuple[str, dict[str, FieldValue]]], str]:
    """Split `span{..}:span2:... target: msg` into the spans and what follows them.

    A chain of spans has no spaces between its members and must contain at least one `{...}`;
    a lone `word:` is the target, not a fieldless span.
    """
    spans: list[tuple[str, dict[str, FieldValue]]] = []
    pos = 0
    saw_brace = False
    n = len(rest)
    while pos < n:
        m = _SPAN.match(rest, pos)
        if m is None:
            break
        body = m.group(2)
        if body is not None:
            saw_brace = True
        spans.append((m.group(1), _span_fields(body) if body else {}))
        pos = m.end()
        if rest[pos:pos + 1] == " ":
            pos += 1
            break
    if not saw_brace:
        return [], rest
    return spans, rest[pos:]


def parse_tracing(text: str) -> TracingLine | None:
    """Parse one tracing line, or None when the line does not have tracing's layout."""
    sp = text.find(" ")
    if sp < 19:
        return None
    t_wall_s = iso_to_epoch(text[:sp])
    if t_wall_s is None:
        return None
    n = len(text)
    i = sp
    while i < n and text[i] == " ":
        i += 1
    j = text.find(" ", i)
    level = text[i:j] if j >= 0 else text[i:]
    if level not in _LEVELS:
        return None
    rest = text[j + 1:] if j >= 0 else ""
    spans, rest = _peel_spans(rest) if "{" in rest else ([], rest)
    kept = _TAILS.get(rest)
    if kept is not None:
        target, message, fields = kept
        return TracingLine(t_wall_s, level, spans, target, message, fields.copy())
    line = TracingLine(t_wall_s, level, spans, *_tail(rest))
    if len(rest) <= _TAIL_KEPT_CHARS:
        if len(_TAILS) >= _TAILS_MAX:
            _TAILS.clear()
        _TAILS[rest] = (line.target, line.message, line.fields.copy())
    return line


#: A line's tail (target, message and its own fields: what follows its spans) already parsed,
#: and its parts: cuzk writes the same tail on many lines (a partition's synthesis, inside its
#: span, is five fixed lines: `pinned pool: cudaHostAlloc failed size_gib=3.882613`), ~85 % of
#: a busy log's tracing tails. Bounded as `_SPAN_FIELDS` is: emptied when full, a long tail
#: not kept.
_TAILS: dict[str, tuple[str | None, str, dict[str, FieldValue]]] = {}
_TAILS_MAX: Final = 4096
_TAIL_KEPT_CHARS: Final = 256


def _tail(rest: str) -> tuple[str | None, str, dict[str, FieldValue]]:
    """What follows a tracing line's spans: its target (None: none), its message and its own
    fields (a fresh dict)."""
    target: str | None = None
    colon = rest.find(": ")
    if colon > 0 and " " not in rest[:colon]:
        target = rest[:colon]
        rest = rest[colon + 2:]
    elif rest.endswith(":") and " " not in rest:
        target = rest[:-1]
        rest = ""
    start = _fields_start(rest)
    if start is None:
        return target, rest, {}
    return target, rest[:start].rstrip(" "), parse_kv(rest, start)


def _fields_start(rest: str) -> int | None:
    """Where the trailing `key=value` fields begin after the message, or None.

    A `KEY=` inside the message is prose, not a field: cuzk writes
    `CUZK_VALIDATE_PARTITIONS=1: validating ...` (engine.rs), `PCE disabled via
    CUZK_DISABLE_PCE=1 — using standard synthesis` (pipeline.rs) and `... valid — likely a
    num_circuits=1 GPU proving bug` (prover.rs). tracing puts its fields after the message; a
    number or a bool it writes is one token, followed by the next ` key=` or the end. So a
    candidate whose value ends in `:`, is followed by ` —`, or is a number followed by words
    is part of the message, and the search goes on past it. (A Display value may hold spaces,
    `error=partition 3 failed`: only a value that starts as a number is judged by what follows.)
    """
    eq = rest.find("=")
    if eq < 0:
        return None
    # No candidate ends before the first `=`, and none holds a space but its first character:
    # the search may begin at the last space before it (`^` is still the text's own start).
    for m in _FIRST_FIELD.finditer(rest, max(rest.rfind(" ", 0, eq), 0)):
        at = m.start() + (1 if m.group(0)[0] == " " else 0)
        start = m.end()
        end = rest.find(" ", start)
        if end < 0:  # the last token of the line
            if rest.endswith(":"):
                continue
            return at
        if rest[end - 1] == ":":
            continue
        if _FIRST_FIELD.match(rest, end):
            return at  # the common case: another field follows
        if rest.startswith(" \u2014", end) or NUMBER.fullmatch(rest, start, end):
            continue  # `num_circuits=1 GPU proving bug`: a number does not run on in words
        return at
    return None
