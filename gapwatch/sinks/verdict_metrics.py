"""The current verdict on /metrics: each GPU's state, its cause and the setting to change.

Who calls it: `gapwatch.sinks.prometheus.GapwatchCollector.collect`, at every scrape. The facts
come from `gapwatch.cuzk.why_now` (one rule for /metrics and `--on-event`). The shipped alert
rules (deploy/prometheus) read these series in their annotations, and `gapwatch fleet` shows
them per box.

Families:
- `gapwatch_gpu_verdict_info{gpu,state,cause,cause_words,setting,step}` 1: an info metric.
  `step` is the setting with the way its advice moves it (`WhyNow.change_words`: `set
  [scheduler] max_batch_size = 1`; with its condition where the way rests on a value the log
  does not say: `raise [memory] safety_margin (or lower total_budget if
  not auto)`), the words the dashboard's headline says, for the alert's `why`. Every label
  value is one of a fixed set (chaining states, stall names and their words, cuzk's setting
  names, each with the steps the advice table gives it, whose set values and conditions are
  constants, "none"), so the series count stays bounded however long gapwatch runs: `step`
  follows `setting` (one step a setting, but for `[synthesis] threads`, whose step depends on
  the log read: raise or change).
- `gapwatch_gpu_verdict_payoff_ratio{gpu}`: the throughput gain of closing the cause's gaps
  over the window (absent when there is no cause).
- `gapwatch_gpu_verdict_idle_seconds{gpu}`: the cause's idle seconds in the window.
- `gapwatch_gpu_verdict_payoff_gaps{gpu}` and `gapwatch_gpu_verdict_payoff_span_seconds{gpu}`:
  what the payoff rests on, the cause's gaps and the seconds of data it is over (both absent
  with the ratio): the alert's `why` says the figure with them, as the headline and
  `--on-event` do (`WhyNow.payoff_words`).
- `gapwatch_gpu_verdict_payoff_link_limit_seconds{gpu}`: where the link's floor, not the
  gaps, set the ratio (`WhyNow.payoff_link_limit_s`), the seconds the window's PCIe bytes
  need at the link's speed (absent otherwise): the alert's `why` says `(the link's limit: its
  bytes need 24 s)` with it, as the headline does.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily, Metric

from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.cuzk.why_now import why_now


def verdict_families(snap: StoreSnapshot) -> Iterator[Metric]:
    """The verdict families for every GPU of the session."""
    info = InfoMetricFamily("gapwatch_gpu_verdict", "The GPU's chaining state now, the stall "
                            "that idled it longest in the detector's window (cause), in words, "
                            "the setting that closes it ('none' when no setting does), and "
                            "that setting with the way to move it (step: 'set [scheduler] "
                            "max_batch_size = 1').",
                            labels=["gpu"])
    payoff = GaugeMetricFamily("gapwatch_gpu_verdict_payoff_ratio", "Throughput gain expected "
                               "from closing the cause's gaps in the window (work taken as "
                               "fixed; 1.8 = 1.8x).", labels=["gpu"])
    idle = GaugeMetricFamily("gapwatch_gpu_verdict_idle_seconds", "Idle seconds of the "
                             "cause's gaps in the detector's window.", labels=["gpu"])
    gaps = GaugeMetricFamily("gapwatch_gpu_verdict_payoff_gaps", "The cause's gaps in the "
                             "window the payoff ratio rests on.", labels=["gpu"])
    span = GaugeMetricFamily("gapwatch_gpu_verdict_payoff_span_seconds", "Seconds of data the "
                             "payoff ratio is over (the detector's window, as far as it holds "
                             "data).", labels=["gpu"])
    limit = GaugeMetricFamily("gapwatch_gpu_verdict_payoff_link_limit_seconds", "Where the "
                              "link, not the gaps, set the payoff ratio: the seconds the "
                              "window's PCIe bytes need at the link's speed.", labels=["gpu"])
    for g in snap.gpus:
        why = why_now(snap, g.index)
        label = [str(g.index)]
        info.add_metric(label, {"state": why.state, "cause": why.cause,
                                "cause_words": why.cause_words or "none",
                                "setting": why.setting,
                                "step": why.change_words() or "none"})
        if why.payoff_gain is not None:
            payoff.add_metric(label, why.payoff_gain)
            # What the payoff rests on, each where known (no series where not).
            for family, value in ((gaps, why.payoff_gaps), (span, why.payoff_span_s),
                                  (limit, why.payoff_link_limit_s)):
                if value is not None:
                    family.add_metric(label, value)
        idle.add_metric(label, why.idle_s)
    yield from (info, payoff, idle, gaps, span, limit)
