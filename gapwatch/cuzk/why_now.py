"""Why a GPU is in its state now, and what to change: the current verdict's cause and setting.

Who calls it: the Prometheus exporter (`gapwatch.sinks.verdict_metrics`: the
`gapwatch_gpu_verdict` info metric that alert annotations and `gapwatch fleet` read) and the
`--on-event` hook (`gapwatch.engine.events`: the facts it hands a command). Pure: it reads a
`StoreSnapshot`.

The rule, in one home: the gaps that closed inside the GPU's chaining window (the detector's
last `window_s` of data, `core.verdict.WindowNow`) and the GPU's gap still open (as the
detector last published it: its idle time so far; the window counts it too, and a BREAKDOWN
is often entered on it), given to `cuzk.advice.advise`; the stall that idled the GPU longest
there is the cause, its first setting the one to change, and the payoff is closing those gaps
over the window (`gapwatch.core.payoff.if_closed`: the throughput gain, work taken as fixed),
the window as far as it holds data (`WindowNow.data_s`: 21 s at a BREAKDOWN entered 21 s into
a session), said with that span and the gaps it rests on (`WhyNow.payoff_words`, the rule of
`core.payoff.gain_words`): entered on 2 gaps, the figure is small and says so. Copies are
work too: the window never shrinks below the time its link needs for the PCIe bytes it
carried (`WindowNow.link_floor_s`), and a figure that floor set says so (`(the link's limit:
its bytes need 24 s)`): a transfer-bound window said ~6.1x where its link allows ~1.3x.
Every value is one of a fixed set (stall names, cuzk's setting names), so it is safe as a
Prometheus label; a stall no setting closes has setting "none". The gaps' advice alone, without
the PoSt lines every "What to change" says first (`gapwatch.cuzk.advice.with_proofs`): the
verdict is one GPU's state and the stall that idled it; a failed or late PoSt has its own
alerts and events (`gapwatch_proofs_total`, `gapwatch_proofs_late_total`, `post_failed`).
"""

from __future__ import annotations

from dataclasses import dataclass

from gapwatch.core.models import Gap
from gapwatch.core.payoff import gain_words, if_closed, span_words
from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.cuzk.advice import STALL_WORDS, advise
from gapwatch.cuzk.knobs import CHANGE, Step
from gapwatch.cuzk.prover import view_of

#: The cause and setting when the window holds no gap (nothing to explain).
NO_CAUSE = "none"


@dataclass(frozen=True, slots=True)
class WhyNow:
    """One GPU's verdict in facts: its state, the cause (a stall name and its words), the
    setting to change ("none" when no setting closes it), and the payoff (throughput gain of
    closing those gaps over the window; None when it cannot be worked out)."""

    gpu: int
    state: str
    cause: str = NO_CAUSE
    cause_words: str = ""
    setting: str = NO_CAUSE
    change: str = ""
    payoff_gain: float | None = None
    idle_s: float = 0.0
    #: Which way the advice moves the setting (`Advice.step`); None: not said.
    step: Step | None = None
    #: What the payoff rests on: the seconds of data it is over (the window's, `WindowNow.
    #: data_s`; None: not said) and the cause's gaps in them.
    payoff_span_s: float | None = None
    payoff_gaps: int | None = None
    #: The link's floor where it set the payoff (`IfClosed.link_limit_s`: the seconds the
    #: window's PCIe bytes need at the link's speed, more than closing the gaps would leave);
    #: None: the gaps set it (or no PCIe reading, no floor).
    payoff_link_limit_s: float | None = None

    def payoff_words(self, said_span_s: float | None = None, said_gaps: int | None = None,
                     gaps: bool = True) -> str:
        """`payoff ~1.58x over the last 30 s (20 gaps)`, "" when there is no figure: the
        headline's, the alert's and the event's (`core.payoff.gain_words`).

        `said_span_s`, `said_gaps`: what the line it goes into says already (the dashboard's
        verdict leads with "14 gaps (slow copies) in the last 30 s"): a span or a gap count
        it says the same is not said twice (`payoff ~1.60x (15 gaps)`, `payoff ~1.60x`); the
        line read two windows where there was one, and at 80x24 paused the repeat cut the
        payoff itself (`payoff ~1.62x over …`). `gaps` False: where the line says the span,
        the figure alone (`payoff ~1.62x`), for a line too short for the payoff's own count."""
        if self.payoff_gain is None:
            return ""
        # Whole seconds, as the alert's `why` (a Prometheus template) can say them too.
        span = None if self.payoff_span_s is None else span_words(self.payoff_span_s,
                                                                   whole_seconds=True)
        if (span is not None and said_span_s is not None
                and self.payoff_span_s is not None
                and round(self.payoff_span_s) == round(said_span_s)):
            # The line says this span already: the figure, and its count where it differs.
            n = self.payoff_gaps
            same = n is None or n == said_gaps or not gaps
            return ("payoff " + gain_words(self.payoff_gain, None, None if same else n,
                                           self.payoff_link_limit_s))
        over = None if span is None else f"the last {span}"
        return ("payoff " + gain_words(self.payoff_gain, over, self.payoff_gaps,
                                       self.payoff_link_limit_s))

    def change_words(self) -> str:
        """`set [scheduler] max_batch_size = 1`, `raise [memory] safety_margin (or lower
        total_budget if not auto)`: the setting with its step
        (`Step.words`, its condition with it), as the dashboard's headline, `line` (the
        alert's and the event's) and /metrics' `step` label all say it: one rule, so none
        says "change" where another says "raise". An advice made without a step says
        `CHANGE`'s words (no direction claimed); "" when no setting closes the cause."""
        if self.setting == NO_CAUSE:
            return ""
        return (self.step or CHANGE).words(self.setting)

    def line(self) -> str:
        """`GPU0 BREAKDOWN: a/b/c copied from pageable memory: the pinned pool could not pin;
        raise [memory] safety_margin (or lower total_budget if not auto); payoff
        ~1.80x over the last 30 s (12 gaps)`: the alert's and the event's one line (the
        alert's is made by Prometheus from the `gapwatch_gpu_verdict_info` labels, the step's
        words among them, and the payoff's gaps and span: `gapwatch.sinks.verdict_metrics`)."""
        out = f"GPU{self.gpu} {self.state}"
        if self.cause == NO_CAUSE:
            return out
        out += f": {self.cause_words}"
        if self.setting != NO_CAUSE:
            out += f"; {self.change_words()}"
        if self.payoff_gain is not None:
            out += f"; {self.payoff_words()}"
        return out


def window_gaps(snap: StoreSnapshot, gpu: int) -> tuple[list[Gap], float]:
    """The gaps of `gpu` in its chaining window: those that ended inside it and the one still
    open (retracted ones never); and the window's span in seconds of data (`WindowNow.data_s`,
    the whole window where that is not known; 0 before the detector's first window)."""
    window = snap.windows.get(gpu)
    if window is None:
        return [], 0.0
    start = window.start_wall_s
    gaps = [g for g in snap.gaps
            if g.gpu == gpu and not g.retracted and (g.end_s is None or g.end_s >= start)]
    return gaps, window.window_s if window.data_s is None else window.data_s


def why_now(snap: StoreSnapshot, gpu: int) -> WhyNow:
    """The verdict of `gpu` now (see the module docstring)."""
    state = snap.state_name(gpu)
    gaps, span_s = window_gaps(snap, gpu)
    if not gaps:
        return WhyNow(gpu, state)
    report = advise(gaps, view_of(snap.pipeline))
    by_idle: list[tuple[float, int, str, str, str, Step | None]] = [
        (a.idle_s, a.gaps, a.stall, a.setting, a.change, a.step) for a in report.advice[:1]]
    by_idle += [(n.idle_s, n.gaps, n.stall, NO_CAUSE, "", None) for n in report.no_setting[:1]]
    idle_s, n_gaps, stall, setting, change, step = max(by_idle, key=lambda t: t[0])
    window = snap.windows.get(gpu)
    pay = if_closed(None, span_s, idle_s, floor_s=None if window is None else window.link_floor_s)
    return WhyNow(gpu, state, stall, STALL_WORDS.get(stall, stall), setting, change,
                  pay.throughput_gain, idle_s, step, span_s, n_gaps, pay.link_limit_s)
