"""Which deadlines judge a PoSt offline: the recording's own, unless this run's config names
the key. The one rule for every offline command (`report`, `replay`, `export`, `compare`).

Live, a WinningPoSt is judged late against the recorder's `[cuzk] winning_post_deadline_s`
(an operator sets it to their chain's real margin), and the recording's header keeps the config
it ran with (`SessionHeader.config`). Offline, each PoSt was judged again against the config of
the command reading it: a recording made with 20 s, reported on a laptop without that config,
said `ok` where the box had said LATE, nothing said. Now, key by key (`POST_KEYS`):

- a key this run's config file names (`model_fields_set`: `--config`, or the file at the
  default place) judges, whatever the recording says: the user asked for it;
- else the recording's own value, where its header holds one it can be (`recorded_problem`);
- else this run's config (a recording older than the keys: as before).

Wherever the value used and the other one differ, the output says which was used (`said`).
A header value that no deadline can be (negative, NaN, 1e300, a string) is never used: the
reader says it and counts it as a bad header value (`gapwatch.sources.recording`, which drops
it with `recorded_problem`'s words), so the rule above sees none.

Who calls it: `gapwatch.sources.recording` (the header's values checked as they are read),
`gapwatch.offline.report.detect_either` (report, export, compare's sides) and
`gapwatch.engine.runtime` (replay).
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import ValidationError

from gapwatch.cuzk.config import CuzkConfig

#: The `[cuzk]` keys a PoSt is judged by (`gapwatch.cuzk.post.Deadlines`), each with the name
#: the JSON gives it (`post_deadlines`).
POST_KEYS: Final[dict[str, str]] = {
    "winning_post_deadline_s": "winning_s",
    "window_post_deadline_s": "window_s",
    "post_at_risk_share": "at_risk_share",
}
#: Where a value used came from.
PostFrom = Literal["recording", "config"]
#: The key of each PoSt kind's deadline (`ProofTiming.proof_kind`).
KEY_OF_KIND: Final[dict[str, str]] = {
    "winning-post": "winning_post_deadline_s",
    "window-post": "window_post_deadline_s",
}

#: How much of a bad header value a problem quotes (a 1 MB string is shown cut).
_QUOTE = reprlib.Repr()
_QUOTE.maxstring = _QUOTE.maxother = 40
_QUOTE.maxlevel = 2


def quoted(value: object) -> str:
    """A header value as a problem quotes it: cut, `nan` and `inf` as Python writes them."""
    return _QUOTE.repr(value)


def recorded_problem(key: str, value: object) -> str | None:
    """Why `value`, the `[cuzk] key` (one of `POST_KEYS`) of a recording's header, cannot judge
    a PoSt; None where it can. A number within the key's own bounds (`CuzkConfig`'s: the rule
    a config file is held to), never a string (`"20"`, which a config file could not give a
    float key either), a boolean, NaN or an infinity."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "not a number"
    try:
        number = float(value)  # an integer of 400 digits (the header's JSON holds any)
    except OverflowError:
        return "not a number a deadline can be"
    if not math.isfinite(number):
        return "not a finite number"
    try:
        CuzkConfig.model_validate({key: number}, strict=True)
    except ValidationError as exc:
        return str(exc.errors()[0]["msg"]).lower()
    return None


def _value_words(key: str, value: float) -> str:
    """`WinningPoSt 20 s`, `WindowPoSt 1800 s`, `at risk past 0.5 of its deadline`."""
    if key == "winning_post_deadline_s":
        return f"WinningPoSt {value:g} s"
    if key == "window_post_deadline_s":
        return f"WindowPoSt {value:g} s"
    return f"at risk past {value:g} of its deadline"


def _bare(key: str, value: float) -> str:
    """The value alone, as a parenthesis says the other one: `30 s`, `0.5`."""
    return f"{value:g}" if key == "post_at_risk_share" else f"{value:g} s"


@dataclass(frozen=True)
class PostDeadlines:
    """What an offline command judges each PoSt by (`judged_by`), and where each came from."""

    #: The `[cuzk]` section the PoSt watcher is built with: this run's, its PoSt keys as
    #: `origin` says.
    section: CuzkConfig
    #: This run's own `[cuzk]` section (its config file's, or the defaults).
    config: CuzkConfig
    #: The recording's usable value of each key (`POST_KEYS`); a key it has none of is absent.
    recorded: Mapping[str, float]
    #: Where each key's value used came from.
    origin: Mapping[str, PostFrom]

    def used(self, key: str) -> float:
        value: float = getattr(self.section, key)
        return value

    def where(self, key: str) -> str:
        """Where the value of `key` used came from, in words."""
        return ("the recording's own" if self.origin[key] == "recording"
                else "this run's config's")

    def said(self) -> str | None:
        """The line the output says where the value used and the other differ: the recording's
        used where this run's config says otherwise, and this run's config's used (its file
        names the key) where the recording says otherwise; None where they agree (or the
        recording holds none)."""
        kept, over = [], []
        for key in POST_KEYS:
            recorded = self.recorded.get(key)
            mine: float = getattr(self.config, key)
            if recorded is None or recorded == mine:
                continue
            if self.origin[key] == "recording":
                kept.append(f"{_value_words(key, recorded)} (this run's config: "
                            f"{_bare(key, mine)}; a config naming [cuzk] {key} judges by its "
                            "own)")
            else:
                over.append(f"{_value_words(key, mine)} ([cuzk] {key}; recorded with "
                            f"{_bare(key, recorded)})")
        parts = []
        if kept:
            parts.append("PoSt judged by the deadlines the recording was made with: "
                         + ", ".join(kept))
        if over:
            parts.append("PoSt judged by this run's config where it names the key: "
                         + ", ".join(over))
        return "; ".join(parts) or None

    def json(self) -> dict[str, Any]:
        """`post_deadlines` of a report's (and each compare side's) JSON: the values used,
        where each came from, the recording's (null: none it can use) and this run's
        config's."""
        return {
            **{name: self.used(key) for key, name in POST_KEYS.items()},
            "from": {name: self.origin[key] for key, name in POST_KEYS.items()},
            "recorded": {name: self.recorded.get(key) for key, name in POST_KEYS.items()},
            "config": {name: getattr(self.config, key) for key, name in POST_KEYS.items()},
        }


def recorded_section(header_config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The `[cuzk]` table of a recording's header config (`SessionHeader.config`), or none."""
    cuzk = header_config.get("cuzk")
    return cuzk if isinstance(cuzk, Mapping) else {}


def judged_by(header_config: Mapping[str, Any], config: CuzkConfig) -> PostDeadlines:
    """The deadlines a recording of header config `header_config` is judged by under this
    run's `config` (the module docstring's rule). A header value no deadline can be is taken
    as none (the reader has said it and dropped it already; checked again here, so that the
    rule never rests on the reader having run)."""
    table = recorded_section(header_config)
    recorded = {key: float(value) for key in POST_KEYS
                if (value := table.get(key)) is not None and recorded_problem(key, value) is None}
    named = config.model_fields_set
    origin: dict[str, PostFrom] = {
        key: "recording" if key in recorded and key not in named else "config"
        for key in POST_KEYS}
    update = {key: recorded[key] for key, where in origin.items() if where == "recording"}
    section = config.model_copy(update=update) if update else config
    return PostDeadlines(section=section, config=config, recorded=recorded, origin=origin)


def unlike_words(kind: str, sides: Sequence[tuple[str, PostDeadlines]]) -> str | None:
    """Where the PoSt of `kind` of labelled `sides` (`compare`'s BEFORE and AFTER) were judged
    by different deadlines: each one's, and where it came from, in words (a late share of one
    against the other's is no measure of a change); None where they were judged alike, or
    `kind` has no deadline."""
    key = KEY_OF_KIND.get(kind)
    if key is None or len({d.used(key) for _, d in sides}) < 2:
        return None
    each = ", ".join(f"{label} {_bare(key, d.used(key))} ({d.where(key)})" for label, d in sides)
    return (f"judged by different PoSt deadlines: {each}; not comparable (a config naming "
            f"[cuzk] {key} judges both by it)")
