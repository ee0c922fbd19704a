"""Why Prometheus cannot scrape a box, in its own words: its targets API (`/api/v1/targets`).

Who calls it: `gapwatch.fleet.rows` (a refresh with a stale box). A box that stopped reporting
is shown stale from the queries alone; this says why: the target's `health` and `lastError`
("connection refused", "context deadline exceeded", "server returned HTTP status 500"), when
Prometheus last tried, the URL it scrapes, or that the box is no longer one of its targets.

The API filters by no label: Prometheus sends every active target, and the ones `--selector`
picks are kept here (`Selector`): each matcher (`=`, `!=`, `=~`, `!~`, a regex anchored at both
ends as PromQL's) is applied to the target's labels (a missing label is ""; one added by
`metric_relabel_configs` is on the series only, and the caller says when a box `up` names picks
no target here). A selector this cannot read (PromQL's quoted label names, a regex Python reads
otherwise than RE2) is said, and no reason is given, rather than a guess at which targets it
means. Prometheus matches with RE2, in linear time; Python's engines backtrack, and
`instance=~"(\\w+-?)+:9400"` took seconds over one 38-character name, doubling with each
character, on text any scraped target sets. So the plain matchers decide first, and a regex runs
with the `regex` module under a time limit (`MATCH_TIMEOUT_S` a label, the question's budget
in all): a target it cannot decide in time is picked by neither answer, counted
(`Failures.undecided`) and said by the caller.
"""

from __future__ import annotations

import re
import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from gapwatch.fleet.client import PromClient, Target

if TYPE_CHECKING:
    import regex

#: The longest one regex matcher may take over one label value: a linear regex decides a
#: label of 1,024 characters (`client.MAX_NAME_CHARS`) in microseconds.
MATCH_TIMEOUT_S: Final = 0.05
#: The least time the targets are matched in, when the question's budget is spent already.
MIN_MATCHING_S: Final = 0.1

#: One matcher of `--selector`: a label name, the operator, the value in "", '' or ``.
_MATCHER = re.compile(r"""\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*
                          ("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)\s*(,|$)""", re.X)
#: PromQL's escapes in a quoted value (Go's): one character, or a code in hex or octal.
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3}|.)", re.S)
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
#: What Go's scrape errors repeat of what the row says already: the URL asked (`Get "URL": `,
#: the target's `scrapeUrl`) and the socket's addresses and call (`dial tcp ADDR: connect: `,
#: `read tcp A->B: read: `). Cut away, a reason fits its column: "connection refused", not the
#: URL the column cut it after.
_SAID_ALREADY = re.compile(r'^(?:Get "[^"]*": )?(?:(?:dial|read|write) tcp\S* (?:\S+: )?)?'
                           r"(?:(?:connect|read|write): )?")
#: The reason of a box whose target Prometheus no longer has (a box taken out of its config).
NOT_A_TARGET = "not a target of Prometheus now"


class Undecided(Exception):
    """A regex matcher ran out of time on a target's label (see the module docstring)."""


@dataclass(frozen=True, slots=True)
class Matcher:
    """One label matcher: `label op value` (a regex's pattern compiled, anchored)."""

    label: str
    op: str
    value: str
    pattern: regex.Pattern[str] | None = None

    def holds(self, labels: dict[str, str], deadline: float) -> bool:
        """Whether the target's labels satisfy this matcher; `Undecided` when a regex cannot
        tell by `deadline` (monotonic) or within `MATCH_TIMEOUT_S`."""
        got = labels.get(self.label, "")  # PromQL: a missing label matches ""
        if self.pattern is None:
            return (got == self.value) == (self.op == "=")
        left = min(MATCH_TIMEOUT_S, deadline - time.monotonic())
        if left <= 0:
            raise Undecided
        try:
            found = self.pattern.fullmatch(got, timeout=left)
        except TimeoutError:
            raise Undecided from None
        return (found is not None) == (self.op == "=~")


@dataclass(frozen=True, slots=True)
class Selector:
    """`--selector` as matchers: which targets are gapwatch's."""

    matchers: tuple[Matcher, ...]
    #: The matchers in the order they are asked: the plain ones first, so that a regex runs
    #: only on a target they leave in (made once, not at each of up to 100,000 targets).
    asked: tuple[Matcher, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "asked", tuple(sorted(self.matchers,
                                                       key=lambda m: m.pattern is not None)))

    def label_names(self) -> tuple[str, ...]:
        """The labels a target must be decoded with: the box's name and what is matched."""
        return tuple(dict.fromkeys(("instance", *(m.label for m in self.matchers))))

    def picks(self, labels: dict[str, str], deadline: float = float("inf")) -> bool:
        """Whether every matcher holds, the plain ones asked first (`asked`); `Undecided` when
        a regex cannot tell in time."""
        return all(m.holds(labels, deadline) for m in self.asked)


def parse_selector(text: str) -> Selector:
    """`job="gapwatch",cluster=~"prov.*"` as a `Selector`; ValueError when it is not a list of
    such matchers (PromQL reads more: a quoted label name)."""
    matchers: list[Matcher] = []
    pos = 0
    while pos < len(text.rstrip()):
        m = _MATCHER.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"--selector not read as label matchers at {text[pos:pos + 40]!r}")
        label, op, quoted = m.group(1), m.group(2), m.group(3)
        matchers.append(_matcher(label, op, _unquoted(quoted)))
        pos = m.end()
    return Selector(tuple(matchers))


def _matcher(label: str, op: str, value: str) -> Matcher:
    if op in ("=", "!="):
        return Matcher(label, op, value)
    try:
        with warnings.catch_warnings():
            # Python warns where it reads a pattern otherwise than RE2 (Prometheus's) would:
            # `[[:alpha:]]`, a POSIX class there, a set and a `]` here.
            warnings.simplefilter("error")
            re.compile(value)
    except (re.error, Warning, RecursionError) as exc:  # a regex nested ~500 deep: recursion
        raise ValueError(f"--selector {label}{op}: not a regex this reads as Prometheus does "
                         f"({exc})") from None
    import regex  # only for a selector with a regex: ~25 ms to import

    # The same syntax as `re` (its VERSION0), with a time limit on each match.
    return Matcher(label, op, value, regex.compile(value))


def _unquoted(quoted: str) -> str:
    if quoted[0] == "`":  # a raw string: no escapes
        return quoted[1:-1]
    return _ESCAPE.sub(_unescaped, quoted[1:-1])


def _unescaped(m: re.Match[str]) -> str:
    """One escape of a PromQL string as Go reads it (`\\x67` is "g"; read as "x67", a
    selector matched no target here that Prometheus's matched)."""
    e = m.group(1)
    if len(e) == 1:
        return _ESCAPES.get(e, e)
    code = int(e[1:], 16) if e[0] in "xuU" else int(e, 8)
    return chr(code) if code <= 0x10FFFF else "\ufffd"


@dataclass(frozen=True, slots=True)
class ScrapeFailure:
    """Why Prometheus has no fresh scrape of a box: the reason in a few words ("scrape failed:
    connection refused"), when it last tried (None: not known) and the URL it scrapes (None: no
    such target)."""

    why: str
    last_scrape_t_wall_s: float | None = None
    scrape_url: str | None = None


@dataclass(slots=True)
class Failures:
    """What `scrape_failures` found: per box (`instance`) of the targets the selector picks,
    why its scrape fails (None: it is up); and the boxes of targets a regex matcher could not
    decide in time (picked by neither answer)."""

    by_box: dict[str, ScrapeFailure | None] = field(default_factory=dict)
    undecided: set[str] = field(default_factory=set)


def scrape_failures(client: PromClient, selector: Selector, timeout_s: float) -> Failures:
    """Per box (`instance`) of the targets `selector` picks: why its scrape fails, None when it
    is up. A box not in the answer is no longer a target (`failure_of`). The targets are
    matched within what is left of `timeout_s` (at least `MIN_MATCHING_S`). Raises PromError
    when the API cannot answer (absent, refused, hostile)."""
    started = time.monotonic()
    found = Failures()
    by_box = found.by_box
    targets = client.targets(selector.label_names(), timeout_s)
    deadline = max(started + timeout_s, time.monotonic() + MIN_MATCHING_S)
    for target in targets:
        try:
            if not selector.picks(target.labels, deadline):
                continue
        except Undecided:
            found.undecided.add(target.labels.get("instance", "?"))
            continue
        box = target.labels.get("instance", "?")
        # Two targets of one box (two jobs the selector picks): one scraped is the box scraped
        # (as its `up`, `rows._merged`); else the first failing one's reason.
        failure = _failure(target)
        if box not in by_box or (failure is None and by_box[box] is not None):
            by_box[box] = failure
    return found


def failure_of(by_box: dict[str, ScrapeFailure | None], box: str) -> ScrapeFailure | None:
    """The reason for `box` from `scrape_failures`: a target's, or that it is none."""
    if box not in by_box:
        return ScrapeFailure(NOT_A_TARGET)
    return by_box[box]


def _failure(t: Target) -> ScrapeFailure | None:
    if t.health == "up":
        return None
    return ScrapeFailure(_words(t), t.last_scrape_t_wall_s, t.scrape_url or None)


def _words(t: Target) -> str:
    error = _SAID_ALREADY.sub("", t.last_error, count=1)
    if t.health == "down":
        return f"scrape failed: {error}" if error else "scrape failed (no error given)"
    if t.health == "unknown" and not error:
        return "not scraped yet"
    # A health Prometheus does not send: said as it came (made visible where it is shown).
    return f"target health {t.health}" + (f": {error}" if error else "")
