"""How a payoff is said (`core.payoff`): the gain with the span it is over and the gaps it
closes, the span bounded where it is made: under a second said as such, one not finite or past
`MAX_SPAN_S` not said at all (1e300 s was said as a 300-digit number, NaN as `~nanx over nan
h`)."""

from __future__ import annotations

import math

import pytest

from gapwatch.core.payoff import MAX_SPAN_S, gain_words, if_closed, span_words
from gapwatch.cuzk.why_now import WhyNow


@pytest.mark.parametrize(("seconds", "said"), [
    (21.0, "21 s"), (180.0, "3.0 min"), (5.2 * 3600, "5.2 h"),
    # Under a second: "0 s" read as no span at all.
    (0.4, "0.4 s"), (0.01, "under 0.1 s"), (0.0, "under 0.1 s"),
    (MAX_SPAN_S, f"{MAX_SPAN_S / 3600:.1f} h"),
])
def test_a_span_is_said_as_a_person_says_it(seconds: float, said: str) -> None:
    assert span_words(seconds) == said


@pytest.mark.parametrize("seconds", [1e300, MAX_SPAN_S * 1.01, math.inf, math.nan, -1.0])
def test_a_span_not_finite_negative_or_absurd_has_no_words(seconds: float) -> None:
    assert span_words(seconds) is None


def test_the_live_window_is_said_in_whole_seconds_as_the_alerts_template_says_it() -> None:
    assert span_words(180.0, whole_seconds=True) == "180 s"
    assert span_words(0.4, whole_seconds=True) == "0.4 s"
    assert span_words(math.nan, whole_seconds=True) is None


@pytest.mark.parametrize(("gain", "over", "gaps", "said"), [
    (1.58, "3.3 min of GPU time", 103, "~1.58x over 3.3 min of GPU time (103 gaps)"),
    (2.0, "0.4 s", 1, "~2.00x over 0.4 s (1 gap)"),
    (2.0, None, 1, "~2.00x (1 gap)"),  # a span with no words: the figure without it
    (math.nan, "21 s", 2, "not known"),
    (math.inf, None, None, "not known"),
])
def test_a_gain_is_said_with_what_it_rests_on(gain: float, over: str | None, gaps: int | None,
                                              said: str) -> None:
    assert gain_words(gain, over, gaps) == said


@pytest.mark.parametrize("span_s", [math.nan, math.inf])
def test_a_span_that_is_not_a_number_gives_no_payoff(span_s: float) -> None:
    closed = if_closed(None, span_s, 1.0)
    assert (closed.throughput_gain, closed.busy_fraction, closed.span_s) == (None, None, 0.0)


@pytest.mark.parametrize(("span_s", "said"), [
    (0.4, "payoff ~2.00x over the last 0.4 s (1 gap)"),
    (1e300, "payoff ~2.00x (1 gap)"),
    (math.nan, "payoff ~2.00x (1 gap)"),
])
def test_the_verdicts_payoff_says_its_span_within_bounds(span_s: float, said: str) -> None:
    why = WhyNow(0, "BREAKDOWN", payoff_gain=2.0, payoff_span_s=span_s, payoff_gaps=1)
    assert why.payoff_words() == said


def test_a_gpu_with_no_idle_says_its_idle_seconds_as_a_float_in_the_json() -> None:
    """Closing no gaps summed an empty list to the int 0: the report's JSON said `"idle_s": 0`
    where it said `0.0` before (a consumer reading a number of seconds as a float)."""
    from gapwatch.offline.payoff import _closing

    closed = _closing(0.9, 10.0, 11.0, {}).if_closed_by_kind["all"]
    assert isinstance(closed.idle_s, float) and closed.idle_s == 0.0
