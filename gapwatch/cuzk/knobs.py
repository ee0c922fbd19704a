"""One setting an advice names, typed: its words, which way it is changed, and which way it
moves cuzk's knobs.

Who calls it: `gapwatch.cuzk.advice` (every setting it advises, and the rule that says where two
stalls of one report pull one knob opposite ways: `advice.conflicts`), `gapwatch.cuzk.paths` and
`gapwatch.cuzk.pool_churn` (the settings they add), `gapwatch.cuzk.why_now` (the verdict's
change in words: the dashboard's headline). Its own module: pure data, the types every one of
them shares, importing none of their rules.

The direction is typed (`Step`, `Pull`), never read back from the change's words: "raise it
above 18 (0 = 18)", "8, if it is 0" and "raise it if total_budget is \"auto\" ...; with an
explicit total_budget, lower that instead" say their direction to a person, not to a rule. The
step is the setting's own (what a one-line headline has room for: "set [scheduler]
max_batch_size = 1", and the condition where the direction rests on a value the log does not
say: "raise [memory] safety_margin (or lower total_budget if not auto)"); the
pulls are the knobs it moves, its inverse said as the knob (safety_margin raised is the budget
lowered).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple


@dataclass(frozen=True, slots=True)
class Pull:
    """Which way a setting moves one quantity of cuzk's: `knob`, as cuzk's TOML spells the key
    that sets it, raised (`up`) or lowered. A knob's inverse is said as the knob it moves:
    `[memory] safety_margin` up is `[memory] total_budget` down (cuzk reads the margin only with
    total_budget = "auto", budget = MemTotal - safety_margin, config.rs:100-104; with an explicit
    budget the advice says to lower that instead, the same way). `[pipeline] max_gpu_queue_depth`
    up is more partitions let ahead of the GPU: 0, no pacer, is the top (config.rs:328-345)."""

    knob: str
    up: bool


@dataclass(frozen=True, slots=True)
class Step:
    """Which way a setting itself is changed: raised, lowered, set to a value (as its file
    writes it), unset (an environment knob), or changed (`CHANGE`: which way depends on a
    value the advice could not read, and its words say each way: "leave it at 0 (all CPUs) if
    unset, or raise it if set lower" of `[synthesis] threads`, whose 0 is every CPU, so
    "raise" from the default gives fewer; "raise it (or, with \"auto\", lower safety_margin)"
    of `[memory] total_budget`, whose default is "auto")."""

    verb: Literal["raise", "lower", "set", "unset", "change"]
    #: The value `set` sets (`1`, `true`); None for the other verbs.
    value: str | None = None
    #: The other way and the case it holds in, where which holds rests on a value the log
    #: does not say (`[memory] safety_margin`: "or lower total_budget if not auto"): said with
    #: the step, so no one-line headline states a guess as certain. A fixed phrase of the
    #: setting's advice, never a figure: the words stay one of a bounded set (they are
    #: /metrics' `step` label). None: the step holds whatever the values.
    otherwise: str | None = None

    def words(self, setting: str) -> str:
        """`raise [memory] safety_margin (or lower total_budget if not auto)`,
        `set [scheduler] max_batch_size = 1`."""
        said = f"{self.verb} {setting}" if self.value is None else (
            f"{self.verb} {setting} = {self.value}")
        return said if self.otherwise is None else f"{said} ({self.otherwise})"


RAISE = Step("raise")
LOWER = Step("lower")
UNSET = Step("unset")
#: A change whose direction is conditional (its words say which way when): no headline claims
#: one direction for it.
CHANGE = Step("change")
#: `[memory] safety_margin` raised, said with its other way: cuzk reads the margin only with
#: total_budget = "auto" (config.rs:100-104); with an explicit budget the same change is that
#: budget lowered. The log says the budget cuzk uses (`memory budget initialized
#: total_budget_gib`), never whether it was "auto": /metrics' `step`, the alert, fleet and the
#: headline said "raise [memory] safety_margin", which changes nothing on a box with an
#: explicit budget.
RAISE_MARGIN = Step("raise", otherwise="or lower total_budget if not auto")


def set_to(value: str) -> Step:
    """The step that sets a setting to `value`, as its file writes it."""
    return Step("set", value)


class Setting(NamedTuple):
    """One setting of an advice: cuzk's key as its TOML spells it (or a service's or gapwatch's
    setting), the change in words, why it closes the stall (upstream's words, with the file),
    the files, which way the setting is changed (its step, required: every setting says one),
    and which way it moves cuzk's knobs (none for a change with no direction a rule compares:
    unsetting an env knob)."""

    setting: str
    change: str
    why: str
    source: str
    step: Step
    pulls: tuple[Pull, ...] = ()


def raises(knob: str) -> tuple[Pull, ...]:
    """The pulls of a setting that raises `knob`."""
    return (Pull(knob, True),)


def lowers(knob: str) -> tuple[Pull, ...]:
    """The pulls of a setting that lowers `knob`."""
    return (Pull(knob, False),)
