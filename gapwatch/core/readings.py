"""What counts as a reading: the rules every consumer of samples shares, in one place.

Who calls it: the detector, the evidence buffer, the NVML source, the trace CSV reader. Pure.

- A number that is None, NaN or negative is not a reading (`reading`): percentages and rates
  are never negative, and NaN is what a broken counter or a bad file gives.
- A GPM reading with no new data reads exactly 0.0 for every metric (`is_stale_gpm`); a real
  interval on a live link never has PCIe at exactly 0 (an idle H200 reads ~1-3 MiB/s). Such a
  reading is dropped and the next one covers its interval: it must never become idle time.
"""

from __future__ import annotations

#: Signal sources whose all-exactly-zero readings are GPM staleness, not idleness.
GPM_LIKE_SOURCES = ("gpm", "trace")


def reading(v: float | None) -> float | None:
    """`v` if it is a usable reading, else None (None, NaN and negatives are not readings)."""
    # NaN fails v == v.
    if v is None or v != v or v < 0:
        return None
    return v


def is_stale_gpm(sm: float | None, rx: float | None, tx: float | None) -> bool:
    """A GPM reading that carries no new interval: every metric read is exactly 0.0, PCIe among
    them (without a PCIe reading, a zero SM activity cannot be told from real idleness, so it
    is taken as idle)."""
    if rx is None and tx is None:
        return False
    return sm in (None, 0.0) and rx in (None, 0.0) and tx in (None, 0.0)
