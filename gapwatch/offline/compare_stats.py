"""Is a figure's change between two runs measurable? The one test `gapwatch compare` applies.

Who calls it: `gapwatch.offline.compare` (one call per figure and GPU). Pure.

Each side gives one value per fixed window (say 1 min) of its working span; the windows of one
side are compared with the other's by the Mann-Whitney U test (two-sided, normal approximation
with the tie correction and a continuity correction): no assumption on the shape of the values,
robust to a few odd windows, and cheap (a sort) for the 1440 windows of a day. A change is said
when the test gives p < `ALPHA` *and* the means differ by more than a floor that no operator would
act on (`SHARE_FLOOR` for shares, `RELATIVE_FLOOR` of the larger mean for rates and counts):
with a day of windows, a test alone finds "significant" changes far too small to matter.
Fewer than `MIN_TEST_WINDOWS` windows on either side: too short to tell, said so; and so where
every window of one side lies past every window of the other, by more than the floor, and the
test still gives p >= `ALPHA`: the windows are too few to tell so clean a split from the drift
the widening allows for (below). Windows that overlap, their means apart by more than the
floor, the test at p >= `ALPHA`: "no measurable change" only where the windows are mixed (a
window of one side above one of the other at most `MIXED_ODDS` times as often as below: a
difference the windows of either side show among themselves), else "not shown". A difference
above the floor that the data could not tell is never said as the sides alike.

A share of events counted whole (the PoSts that failed, of those that ended: a few an hour, too
rare for windows) is judged by Fisher's exact test on the two sides' counts instead
(`judge_counts`), with the same `ALPHA` and `SHARE_FLOOR`: exact however few the events; a
share above the floor at p >= `ALPHA` is "too few PoSts" (counts vary by their number alone).

Windows next to each other are not independent (a slow stretch of the prover spans several):
the U test assumes they are, and with 5 s windows it called two runs of the very same settings
"worse" at p = 3e-5 where 60 s windows said no change. So the test's variance is widened by the
windows' own correlation from one to the next (`serial_inflation`: the lag-1 autocorrelation
pooled over both sides, each side centred on its own mean, less its known low bias where
each side has `BIAS_MIN_WINDOWS` windows; the AR(1) factor (1 + r) / (1 - r), as if each side
had that many times fewer windows), and the windows are given in time order. There, a side left
with fewer than `MIN_TEST_WINDOWS` windows so counted is "too few windows".
"""

from __future__ import annotations

from dataclasses import dataclass
from math import erfc, exp, lgamma, sqrt
from statistics import fmean
from typing import Literal

ALPHA = 0.01
SHARE_FLOOR = 0.01
RELATIVE_FLOOR = 0.05
MIN_TEST_WINDOWS = 5
#: The largest lag-1 autocorrelation taken (a factor of 199 at most).
MAX_SERIAL_R = 0.99
#: Windows a side needs for the autocorrelation's small-sample bias to be corrected, and for a
#: side of few independent windows to be "too few windows" (see `serial_inflation`).
BIAS_MIN_WINDOWS = 20
#: The most a window of one side may lie above one of the other, against below, for windows
#: the test did not tell apart to be called alike (`windows_mixed`).
MIXED_ODDS = 3.0

Verdict = Literal["better", "no measurable change", "worse", "too few windows", "too few PoSts",
                  "not shown", "different load", "load", "one side only", "no data",
                  "not comparable"]
Better = Literal["higher", "lower", "none"]
#: A change above the floor that windows which overlap did not tell from their spread: not
#: shown, which is not "no measurable change" (the sides looked alike) either.
UNTOLD: Verdict = "not shown"


@dataclass(frozen=True, slots=True)
class Spread:
    """A side's windows of one figure: how many, their median and 10th-90th percentiles."""

    n: int
    median: float | None
    p10: float | None
    p90: float | None
    mean: float | None


@dataclass(frozen=True, slots=True)
class Test:
    p_value: float | None
    #: Mean of AFTER's windows minus BEFORE's (None: a side has no window with a value).
    delta_mean: float | None
    verdict: Verdict


def spread(values: list[float]) -> Spread:
    if not values:
        return Spread(0, None, None, None, None)
    xs = sorted(values)
    return Spread(len(xs), _quantile(xs, 0.5), _quantile(xs, 0.1), _quantile(xs, 0.9), fmean(xs))


def _quantile(xs: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default), xs sorted."""
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def serial_inflation(*sides: list[float]) -> float:
    """How much wider the test's variance is made for windows that follow one another in time
    (each side's values in time order): (1 + r) / (1 - r), r the lag-1 autocorrelation pooled
    over the sides (each centred on its own mean, so a change between the sides is not taken
    for correlation), at least 0 (windows that alternate are not made to count more) and at
    most `MAX_SERIAL_R`. 1.0 where no side has two values that differ."""
    lagged = spread_sq = 0.0
    n = counted = 0
    for xs in sides:
        if len(xs) < 2:
            continue
        m = fmean(xs)
        d = [x - m for x in xs]
        lagged += sum(d[i] * d[i + 1] for i in range(len(d) - 1))
        spread_sq += sum(v * v for v in d)
        n += len(xs)
        counted += 1
    if spread_sq <= 0 or not counted:
        return 1.0
    r = lagged / spread_sq
    if min(len(xs) for xs in sides) >= BIAS_MIN_WINDOWS:
        # The estimate reads low on short series (by about (1 + 4 r) / n, Kendall's bias of
        # the lag-1 autocorrelation of an AR(1) series): 60 windows of a drift with r = 0.9
        # were called changed 20 times in 300 where 3 was the test's promise. Below
        # `BIAS_MIN_WINDOWS` the estimate is too loose to correct (10 windows: r of 0.4 read
        # as 0.66, and 1705 gaps an hour against none was "too few windows").
        r += (1 + 4 * r) / (n / counted)  # a side's length, on average
    r = min(MAX_SERIAL_R, max(0.0, r))
    return (1 + r) / (1 - r)


def _u_and_ties(a: list[float], b: list[float]) -> tuple[float, float]:
    """The Mann-Whitney U of `a` (ties counted half) and the tie term sum(t^3 - t)."""
    n1, n = len(a), len(a) + len(b)
    pooled = sorted([(v, 0) for v in a] + [(v, 1) for v in b])
    rank_a = 0.0
    ties = 0.0
    i = 0
    while i < n:
        j = i
        while j + 1 < n and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        avg = (i + j) / 2 + 1  # ranks are 1-based
        t = j - i + 1
        ties += t ** 3 - t
        rank_a += avg * sum(1 for k in range(i, j + 1) if pooled[k][1] == 0)
        i = j + 1
    return rank_a - n1 * (n1 + 1) / 2, ties


def mann_whitney_p(a: list[float], b: list[float], inflation: float = 1.0) -> float:
    """Two-sided p-value of the Mann-Whitney U test (normal approximation, tie-corrected,
    continuity-corrected), its variance multiplied by `inflation` (`serial_inflation`). 1.0
    when every value ties (nothing to tell apart)."""
    n1, n2 = len(a), len(b)
    n = n1 + n2
    u, ties = _u_and_ties(a, b)
    mu = n1 * n2 / 2
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))) * inflation
    if var <= 0:
        return 1.0
    z = (abs(u - mu) - 0.5) / sqrt(var)
    return min(1.0, erfc(max(0.0, z) / sqrt(2)))


def windows_mixed(a: list[float], b: list[float]) -> bool:
    """Whether the windows of the two sides are mixed: a window of one side lies above one of
    the other no more than `MIXED_ODDS` times as often as below (ties half each way)."""
    share = _u_and_ties(a, b)[0] / (len(a) * len(b))
    return 1 / (1 + MIXED_ODDS) <= share <= MIXED_ODDS / (1 + MIXED_ODDS)


def judge(before: list[float], after: list[float], better: Better, share: bool) -> Test:
    """The verdict on one figure from each side's window values, in time order (see the
    module docstring). `better`: which way is an improvement ("none": a load figure, said,
    never judged)."""
    if not before or not after:
        return Test(None, None, "one side only" if before or after else "no data")
    delta = fmean(after) - fmean(before)
    if len(before) < MIN_TEST_WINDOWS or len(after) < MIN_TEST_WINDOWS:
        return Test(None, delta, "too few windows")
    inflation = serial_inflation(before, after)
    shortest = min(len(before), len(after))
    if shortest >= BIAS_MIN_WINDOWS and shortest / inflation < MIN_TEST_WINDOWS:
        # So many windows, but few independent ones: a slow drift that no length of this
        # side can tell from a change.
        return Test(None, delta, "too few windows")
    p = mann_whitney_p(before, after, inflation)
    floor = SHARE_FLOOR if share else RELATIVE_FLOOR * max(abs(fmean(before)), abs(fmean(after)))
    if abs(delta) <= floor:
        return Test(p, delta, "no measurable change")
    if p >= ALPHA:
        # Every window of one side past every window of the other is as far apart as windows
        # can be: the test, widened for the windows' drift, cannot tell it from that drift
        # with so few, but "no measurable change" beside 1892 gaps an hour in every BEFORE
        # window and none in any AFTER one said the sides looked alike.
        apart = max(before) < min(after) or max(after) < min(before)
        if apart:
            return Test(p, delta, "too few windows")
        # Windows mixed (`windows_mixed`): the means' difference is one the windows of
        # either side show among themselves: the sides alike. Not mixed, the test, widened
        # for the drift, could not tell it with so few ("no measurable change" beside 1698
        # gaps an hour against none, one BEFORE window tied at 0).
        alike = windows_mixed(before, after)
        return Test(p, delta, "no measurable change" if alike else UNTOLD)
    if better == "none":
        return Test(p, delta, "load")
    up = delta > 0
    return Test(p, delta, "better" if up == (better == "higher") else "worse")


def _log_hypergeom(k: int, k_all: int, n: int, n_all: int) -> float:
    """log P(k of the first group's n are failures | k_all failures among all n_all)."""
    def log_comb(a: int, b: int) -> float:
        return lgamma(a + 1) - lgamma(b + 1) - lgamma(a - b + 1)
    return log_comb(k_all, k) + log_comb(n_all - k_all, n - k) - log_comb(n_all, n)


def fisher_p(failed_a: int, n_a: int, failed_b: int, n_b: int) -> float:
    """Two-sided p-value of Fisher's exact test of two counts of failures out of `n_a` and
    `n_b`: the chance of tables as unlikely as this one or less, the margins fixed."""
    k_all, n_all = failed_a + failed_b, n_a + n_b
    lo, hi = max(0, k_all - n_b), min(k_all, n_a)
    seen = _log_hypergeom(failed_a, k_all, n_a, n_all)
    p = sum(exp(lp) for k in range(lo, hi + 1)
            if (lp := _log_hypergeom(k, k_all, n_a, n_all)) <= seen + 1e-7)
    return min(1.0, p)


def judge_counts(before: tuple[int, int], after: tuple[int, int], better: Better) -> Test:
    """The verdict on a share counted whole on each side, (hits, of how many), by Fisher's
    exact test (see the module docstring): `delta_mean` is AFTER's share less BEFORE's."""
    (hit_b, n_b), (hit_a, n_a) = before, after
    if not n_b or not n_a:
        return Test(None, None, "one side only" if n_b or n_a else "no data")
    delta = hit_a / n_a - hit_b / n_b
    p = fisher_p(hit_b, n_b, hit_a, n_a)
    if abs(delta) <= SHARE_FLOOR:
        return Test(p, delta, "no measurable change")
    if p >= ALPHA:
        # Counts vary by their number alone: a share above the floor not told from chance is
        # told by more of them. "No measurable change" beside 0 of 8 -> 10 of 20 failed (p
        # 0.025), or 0 of 3 -> 3 of 3 (p 0.1, the least these counts allow), said the sides
        # looked alike.
        return Test(p, delta, "too few PoSts")
    if better == "none":
        return Test(p, delta, "load")
    return Test(p, delta, "better" if (delta > 0) == (better == "higher") else "worse")
