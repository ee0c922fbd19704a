"""GPU-Util beside the SMs: how much of the time nvidia-smi calls a GPU busy its SMs sat idle.

nvidia-smi's "GPU-Util" (NVML's `utilization.gpu`, `GpuSample.gpu_util_pct`) is the share of
time *any* kernel or copy ran. Measured on an H200 with its SMs idle (docs/sampling.md): pinned
host-to-device copies read 99.3 %, pageable ones 15.7 % at 7.6 GB/s and 8-10 % at ~3 GB/s (the
copy engine runs only while a staged chunk moves). So a GPU fed by pinned copies that its kernels
do not overlap reads busy while it computes nothing, and one starved by pageable copies reads
about what its SMs did: the shared H200 pageable recording averaged 32 % against SMs busy 33 %
(docs/detection.md, "GPU-Util beside the SMs"); there the gaps hide in nvidia-smi's one-second
averages, not in the counter. This is the figure an operator holds against the one their other
tools show: over the same readings, GPU-Util's average, the share of time the SMs were busy by
gapwatch's own rule (SM activity at or above `DetectorConfig.idle_sm_pct`, stale GPM readings
left out as the detector leaves them), and of the seconds the SMs sat idle, how many GPU-Util
counted as busy (`idle_util_s`: each idle reading's interval times its GPU-Util).

A reading without both figures says nothing (a GPU with no SM activity reading has no figure:
GPU-Util is then all gapwatch has, and the detector marks its gaps low confidence).

Who calls it: `gapwatch.core.chaining.ChainingMeter` keeps the sums (the same readings, each
over the same interval, as the chaining figure) and makes the figure; the report
(`gapwatch.offline.report_text`, `report --json`), the dashboard's header and the snapshot say it.
Prover-neutral.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: Seconds of readings below which no figure is given (a share of nothing is noise).
MIN_READ_S: Final = 1.0


@dataclass(slots=True)
class UtilSums:
    """The sums behind a `UtilFigure` (seconds of readings), added to per reading by
    `ChainingMeter.add_sample` (inline there: it is the per-sample path)."""

    #: Seconds of readings with both SM activity and GPU-Util.
    read_s: float = 0.0
    #: Of them: GPU-Util's busy seconds (each reading's interval times its GPU-Util 0..1).
    util_busy_s: float = 0.0
    #: Seconds the SMs were busy (SM activity at or above the idle threshold).
    sm_busy_s: float = 0.0
    #: Of the seconds the SMs were idle, those GPU-Util counted busy.
    idle_util_s: float = 0.0

    def plus(self, other: UtilSums) -> UtilSums:
        return UtilSums(self.read_s + other.read_s, self.util_busy_s + other.util_busy_s,
                        self.sm_busy_s + other.sm_busy_s, self.idle_util_s + other.idle_util_s)


@dataclass(frozen=True, slots=True)
class UtilFigure:
    """One GPU's GPU-Util beside its SMs over a window (`window_s` s of data; None: the whole
    run): `util_share` GPU-Util's average (0..1, what nvidia-smi shows), `sm_busy_share` the
    share of the time the SMs were busy (0..1), both over `read_s` seconds of readings;
    `idle_util_s` of the `idle_s` seconds the SMs sat idle GPU-Util counted busy."""

    gpu: int
    read_s: float
    util_share: float
    sm_busy_share: float
    idle_s: float
    idle_util_s: float
    window_s: float | None

    @classmethod
    def of(cls, gpu: int, sums: UtilSums, window_s: float | None) -> UtilFigure | None:
        """The figure of `sums`, None below `MIN_READ_S` of readings."""
        if not sums.read_s >= MIN_READ_S:
            return None
        return cls(gpu=gpu, read_s=sums.read_s, util_share=sums.util_busy_s / sums.read_s,
                   sm_busy_share=sums.sm_busy_s / sums.read_s,
                   idle_s=max(0.0, sums.read_s - sums.sm_busy_s),
                   idle_util_s=sums.idle_util_s, window_s=window_s)

    def hidden_share(self) -> float | None:
        """Of the time GPU-Util called busy, the share the SMs sat idle (None: it called none
        busy)."""
        util_s = self.util_share * self.read_s
        return self.idle_util_s / util_s if util_s > 0 else None

    def cell(self) -> str:
        """`GPU-Util 97%` for the dashboard's lines (nvidia-smi's figure over the window)."""
        return f"GPU-Util {self.util_share * 100:.0f}%"

    def words(self) -> str:
        """The report's sentence: "GPU-Util (what nvidia-smi shows) 97 % against SMs busy 60 %
        of 3597.6 s: it counted 1301.2 s of the 1386.5 s the SMs sat idle as busy"."""
        head = (f"GPU-Util (what nvidia-smi shows) {self.util_share * 100:.0f} % against SMs "
                f"busy {self.sm_busy_share * 100:.0f} % of {self.read_s:.1f} s")
        if self.idle_s <= 0:
            return f"{head}: the SMs were never idle"
        return (f"{head}: it counted {self.idle_util_s:.1f} s of the {self.idle_s:.1f} s the "
                f"SMs sat idle as busy")

    def json(self) -> dict[str, float | None]:
        return {"read_s": self.read_s, "gpu_util_share": self.util_share,
                "sm_busy_share": self.sm_busy_share, "sm_idle_s": self.idle_s,
                "sm_idle_util_busy_s": self.idle_util_s,
                "util_busy_sm_idle_share": self.hidden_share()}
