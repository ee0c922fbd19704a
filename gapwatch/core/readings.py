"""What counts as a reading: the rules every consumer of samples shares, in one place.

Who calls it: the detector, the evidence buffer, the NVML source, the trace CSV reader, the
dashboard's busy charts (`busy_reading`, `activity_lag_ns`), and cuzk's pinned-pool facts
(`mem_total_bytes`: the host's RAM when a pin failed). Pure.

- A number that is None, NaN or negative is not a reading (`reading`): percentages and rates
  are never negative, and NaN is what a broken counter or a bad file gives.
- A GPM reading with no new data reads exactly 0.0 for every metric (`is_stale_gpm`); a real
  interval on a live link never has PCIe at exactly 0 (an idle H200 reads ~1-3 MiB/s). Such a
  reading is dropped and the next one covers its interval: it must never become idle time. After
  `GPM_MAX_EXTEND_NS` of nothing but zeros they are believed (the counters really did not move).
  The NVML source, the trace CSV reader and the detector all ask `is_stale_gpm`, so a reading
  one of them believes is never dropped by another.
- A reading is busy when its level reaches the detector's idle threshold: SM activity against
  `idle_sm_pct`, or, on a GPU that has no SM activity at all, utilization.gpu against
  `idle_util_pct` (`busy_reading`). A GPM reading describes activity that ended `gpm_lag_ms`
  before it was read (`activity_lag_ns`). The detector applies the same two rules inline in its
  hot loop (7 M samples in a 24 h report cannot afford a call each); whoever else draws or
  counts busy time calls these, so a chart and the detector agree on what busy means.
"""

from __future__ import annotations

from typing import Final

from gapwatch.core.bounds import MIN_PERIOD_MS
from gapwatch.core.config import DetectorConfig
from gapwatch.core.models import GpuSample

#: Signal sources that report SM activity: a sample of such a GPU without it is missing data,
#: and its gaps are judged on SM activity (confidence "high"), never on utilization.gpu.
SM_SOURCES: Final = ("gpm", "sim", "trace")
#: Signal sources whose all-exactly-zero readings are GPM staleness, not idleness.
GPM_LIKE_SOURCES: Final = ("gpm", "trace")
#: After this long with only "no new data" GPM readings, all-zero is believed: GPM refreshes every
#: ~100 ms, so ten refreshes that moved no counter mean the GPU really did nothing.
GPM_MAX_EXTEND_NS: Final = 1_000_000_000
#: The shortest period gapwatch samples at (ns): no reading covers much less (`interval_belied`).
SHORTEST_PERIOD_NS: Final = round(MIN_PERIOD_MS * 1_000_000)


def reports_sm(sm_source: str | None) -> bool:
    """Does a GPU whose samples come from `sm_source` report SM activity? The detector's and the
    dashboard's one rule (`SM_SOURCES`)."""
    return sm_source in SM_SOURCES


def mem_total_bytes(mem_used_pct: float | None, mem_available_bytes: float | None
                    ) -> float | None:
    """The host's MemTotal as a sample gives it: the sampler writes MemAvailable and used % =
    (MemTotal - MemAvailable) / MemTotal (`gapwatch.sources.host._meminfo`), not MemTotal
    itself, so MemTotal = MemAvailable / (1 - used / 100). None where either is no reading or
    nothing is available (the division says nothing). The closer used is to 100 %, the more a
    rounded used figure (a trace CSV's) moves it: a caller keeping one MemTotal keeps the
    sample with the most available (`gapwatch.cuzk.pin_host`)."""
    used, available = reading(mem_used_pct), reading(mem_available_bytes)
    if used is None or available is None or used >= 100.0 or not available:
        return None
    return available / (1.0 - used / 100.0)


def reading(v: float | None) -> float | None:
    """`v` if it is a usable reading, else None (None, NaN and negatives are not readings)."""
    # NaN fails v == v.
    if v is None or v != v or v < 0:
        return None
    return v


def interval_belied(interval_ns: int | None, expected_ns: int,
                    spacing_ns: int | None = None) -> bool:
    """Whether a sample's `interval_ns` is one the samples' own spacing belies: shorter than
    half the spacing they are expected at (`expected_ns`: the detector's learnt spacing, the
    samples' median; 0 where none is known) and than half the time since the sample before
    (`spacing_ns`, where known), and never less than half the shortest period gapwatch samples
    at (`bounds.MIN_PERIOD_MS`). The sampler's interval runs from the GPU's previous reading
    (`nvml`: the GPM start sample, kept across a failed or stale tick), so a reading covers at
    least the time since the sample before: 1 ns, 0 or a negative interval over samples 100 ms
    apart is no time a reading covered, and the spacing is used in its place. Both spacings
    must belie it: a reading after lines lost from a recording (a bad record dropped, a cut
    file) keeps its honest interval over the expected spacing, and the lost stretch stays
    uncovered (a hole is information); a reading 25 ms after a late one keeps its honest 25 ms
    over the time since it. None (not said) is no lie. Longer intervals are not judged here:
    each reader counts a sample back no further than the reading before.

    Who asks: the detector (`GapDetector._covered_from`, `_hole`: counted `interval_belied`),
    the chaining share (`ChainingMeter.add_sample`, no spacing known: the floor alone) and the
    link's floor over samples (`payoff.samples_link_floor_s`), so that a lying interval moves
    none of them."""
    limit = expected_ns if spacing_ns is None or spacing_ns > expected_ns else spacing_ns
    return interval_ns is not None and 2 * interval_ns < max(limit, SHORTEST_PERIOD_NS)


def is_stale_gpm(sm: float | None, rx: float | None, tx: float | None,
                 interval_ns: int | None) -> bool:
    """A GPM reading that carries no new interval, to be merged into the next reading: every
    metric read is exactly 0.0, PCIe among them (without a PCIe reading, a zero SM activity
    cannot be told from real idleness, so it is taken as idle), over less than
    `GPM_MAX_EXTEND_NS` since the interval began (`interval_ns`; None: not known, stale).
    Zeros over a longer interval are a measurement."""
    if rx is None and tx is None:
        return False
    if interval_ns is not None and interval_ns >= GPM_MAX_EXTEND_NS:
        return False
    return sm in (None, 0.0) and rx in (None, 0.0) and tx in (None, 0.0)



def busy_reading(sample: GpuSample, config: DetectorConfig, uses_sm: bool) -> bool | None:
    """Whether `sample` counts as busy by the detector's idle thresholds; None = no reading.

    Args:
        sample: one GPU reading.
        config: the detector's thresholds.
        uses_sm: the GPU reports SM activity (GPM, simulated, trace); then a sample without it is
            missing data, never judged by utilization.gpu (which counts copies as busy).
    """
    sm = reading(sample.sm_active_pct)
    if sm is not None:
        if sample.sm_source in GPM_LIKE_SOURCES and is_stale_gpm(
            sm, sample.pcie_rx_bytes_per_s, sample.pcie_tx_bytes_per_s, sample.interval_ns
        ):
            return None  # no new interval: the next reading covers it
        return sm >= config.idle_sm_pct
    if uses_sm:
        return None
    util = reading(sample.gpu_util_pct)
    return None if util is None else util >= config.idle_util_pct


def activity_lag_ns(sm_source: str | None, config: DetectorConfig) -> int:
    """How long before it was read a reading's activity ended (GPM trails by `gpm_lag_ms`)."""
    return int(config.gpm_lag_ms * 1e6) if sm_source in GPM_LIKE_SOURCES else 0
