"""User rules from `[[logs.rules]]`: a regex with named groups turns a prover's line into an event.

Who calls it: `gapwatch.logs.parse.LogParser`, for lines the built-in rules did not understand.

Group names with a meaning: `timestamp` (parsed with the rule's `timestamp_format`, else
ISO-8601/RFC3339 or Unix seconds), `phase` (the event name), `worker`, `partition`, `gpu` (ints),
`job_id`. Every other named group becomes a field, converted like a tracing value (`12` -> 12).
The regexes were compiled once by the config validator already (a bad one is a config error that
names the rule); here they are compiled again for use.

A rule's regex is the user's code run on outside text: one with nested repeats (`(a+)+$`)
takes time exponential in a line that almost matches. So the rules run with the `regex`
module (`re`'s syntax, its extensions too): each search is given `RULE_TIMEOUT_S`, and a line
a rule cannot decide by then is not that rule's (counted `rule_timeout`; the next rule still
looks at it, within `LINE_BUDGET_S` for all the rules of one line); and it releases the GIL
while it matches a `str`, so the sampler and the other threads run meanwhile (`re` held it for
the whole search: a hostile line stopped the process).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import regex

from gapwatch.config import UserRule
from gapwatch.core.bounds import MAX_GPU_INDEX, decimal, fits_i64, wall_s_ok
from gapwatch.core.models import FieldValue
from gapwatch.core.values import convert_value
from gapwatch.logs.parse.prefixes import iso_to_epoch

_SPECIAL = frozenset(("timestamp", "phase", "worker", "partition", "gpu", "job_id"))

#: The longest one rule may search one line (at most `PARSE_CHARS` of it): a rule that cannot
#: backtrack without end decides a 16 KiB line in well under a millisecond.
RULE_TIMEOUT_S: Final = 0.05
#: The longest all the rules together may search one line. Each rule's own limit alone let a
#: config of many rules multiply it: a 64 KiB config holds ~1,300 rules, and 1,300 rules that
#: backtrack took 70 s of one line (the log's other lines waited behind it). Once it is spent,
#: the rules not yet tried do not read the line (counted `rule_budget`, one a line).
LINE_BUDGET_S: Final = 4 * RULE_TIMEOUT_S


@dataclass(slots=True)
class UserMatch:
    rule: str
    name: str
    #: None when the rule has no timestamp group or it did not parse (`bad_timestamp` says which).
    t_wall_s: float | None
    bad_timestamp: bool
    job_id: str | None
    worker: int | None
    partition: int | None
    gpu: int | None
    fields: dict[str, FieldValue]
    warning: str | None


def _as_int(value: str | None) -> int | None:
    if value is None:
        return None
    v = value.strip()
    if v.startswith("Some(") and v.endswith(")"):
        v = v[5:-1]
    if not v.isascii():
        return None  # int() reads other scripts' digits; a log's ids are ASCII
    try:
        n = int(v)
    except ValueError:
        return None
    return n if fits_i64(n) else None


def parse_timestamp(value: str, fmt: str) -> float | None:
    """A timestamp group's text as Unix seconds, or None if it does not parse."""
    value = value.strip()
    if fmt:
        try:
            # naive = local time, aware = its own zone; year 1 or 9999 may not convert
            stamp = datetime.strptime(value, fmt).timestamp()
        except (ValueError, OverflowError, OSError):
            return None
        return stamp if wall_s_ok(stamp) else None
    iso = iso_to_epoch(value.replace(" ", "T", 1))
    if iso is not None:
        return iso if wall_s_ok(iso) else None
    try:
        number = decimal(value)  # ASCII digits only, no "1_000"
    except ValueError:
        return None
    if number > 1e17:  # nanoseconds
        number /= 1e9
    elif number > 1e14:  # microseconds
        number /= 1e6
    elif number > 1e11:  # milliseconds
        number /= 1e3
    return number if wall_s_ok(number) else None  # 1e300, NaN, negative: not a time


class UserRules:
    """The configured rules in order; `match` returns the first that matches (a search)."""

    def __init__(self, rules: list[UserRule], counters: dict[str, int] | None = None) -> None:
        """`counters`: where the searches that ran out of time (`rule_timeout`) and the lines
        that ran out of `LINE_BUDGET_S` (`rule_budget`) are counted: the parser's counters."""
        self._rules: list[tuple[UserRule, regex.Pattern[str]]] = []
        if rules:
            import regex  # only with rules: ~25 ms to import, for every command otherwise

            self._rules = [(rule, regex.compile(rule.regex)) for rule in rules]
        self._counters: dict[str, int] = counters if counters is not None else {}

    def __bool__(self) -> bool:
        return bool(self._rules)

    def resume_state(self) -> list[UserRule]:
        """The rules (they hold no other state), for `LogParser.resume_state`."""
        return [rule for rule, _regex in self._rules]

    def match(self, text: str) -> UserMatch | None:
        """The first rule whose regex finds something in `text`, as a `UserMatch`: each rule
        within `RULE_TIMEOUT_S`, all of them within `LINE_BUDGET_S`."""
        deadline = time.monotonic() + LINE_BUDGET_S
        for rule, pattern in self._rules:
            left_s = deadline - time.monotonic()
            if left_s <= 0:
                self._count("rule_budget")
                return None
            try:
                m = pattern.search(text, timeout=min(RULE_TIMEOUT_S, left_s))
            except TimeoutError:
                self._count("rule_timeout")
                continue
            if m is not None:
                return _user_match(rule, m.groupdict())
        return None

    def _count(self, name: str) -> None:
        self._counters[name] = self._counters.get(name, 0) + 1


def _user_match(rule: UserRule, groups: dict[str, str | None]) -> UserMatch:
    """What a user rule's named groups say: the special ones (timestamp, phase, job_id, worker,
    partition, gpu) as the event's own, every other group a field."""
    fields: dict[str, FieldValue] = {
        k: convert_value(v) for k, v in groups.items() if k not in _SPECIAL and v is not None
    }
    stamp: float | None = None
    bad = False
    raw_ts = groups.get("timestamp")
    if raw_ts:
        stamp = parse_timestamp(raw_ts, rule.timestamp_format)
        bad = stamp is None
    worker = _as_int(groups.get("worker"))
    partition = _as_int(groups.get("partition"))
    gpu = _as_int(groups.get("gpu"))
    if gpu is not None and not 0 <= gpu <= MAX_GPU_INDEX:
        gpu = None  # not a GPU index: kept as a field below
    # A group that should be an int but is not stays visible as a field.
    for key, parsed in (("worker", worker), ("partition", partition), ("gpu", gpu)):
        raw = groups.get(key)
        if parsed is None and raw:
            fields[key] = raw
    return UserMatch(
        rule=rule.name,
        name=groups.get("phase") or rule.event or rule.name,
        t_wall_s=stamp,
        bad_timestamp=bad,
        job_id=groups.get("job_id") or None,
        worker=worker,
        partition=partition,
        gpu=gpu,
        fields=fields,
        warning=rule.warning or None,
    )
