"""GPU-Util beside busy: what nvidia-smi shows held against the SMs' busy share, in seconds.

nvidia-smi's "GPU-Util" (NVML's `utilization.gpu`, `GpuSample.gpu_util_pct`) is the share of
time *any* kernel or copy ran, however few SMs the kernel used. Measured on an H200 with its SMs
idle (docs/sampling.md): pinned host-to-device copies read 99.3 %, pageable ones 15.7 % at 7.6
GB/s and 8-10 % at ~3 GB/s (the copy engine runs only while a staged chunk moves). So a GPU fed
by pinned copies that its kernels do not overlap reads busy while it computes nothing (the H200
transfer-bound run: GPU-Util 100 % against busy 22 % over its working span, 26.2 s more), and
one starved by pageable copies reads about what its SMs did (the H200 pageable trace: 64 %
against 62 %); there the gaps hide in nvidia-smi's one-second averages, not in the counter
(docs/detection.md, "GPU-Util beside busy").

The figure is GPU-Util's time-weighted average over the readings that hold it and SM activity,
over the same stretch as the busy share it is held against: offline the working span (the first
to the last busy reading, as the report's `busy`), live the detector's chaining window
(`DetectorConfig.window_s`, as the header's `busy`). What it says is the difference: the busy
time GPU-Util showed beyond the SMs' (`excess_s`), never a per-reading sum of GPU-Util over idle
readings (NVML averages over its own period, which does not line up with 100 ms readings: that
sum said 1.6 s of a host-stall run's idle time was busy where GPU-Util read less than the SMs).

A reading without both says nothing (a GPU with no SM activity reading has no figure: GPU-Util is
then all gapwatch has, and the detector marks its gaps low confidence).

Who calls it: `gapwatch.core.chaining.ChainingMeter` keeps the sums (over each reading's
interval, as the chaining figure) and makes the figure; the report (`gapwatch.offline.
report_text`, `report --json`), the dashboard's one-GPU health line and the snapshot say it.
Prover-neutral.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: Seconds of readings below which no figure is given (a share of nothing is noise).
MIN_READ_S: Final = 1.0
#: GPU-Util within this (0..1) of the busy share either way is "about the busy share", no
#: cause named: NVML's lag against the detector's gap edges moves it a few points either way (the
#: H200 host-stall run: 51 % against 50 %, while over the very same readings GPU-Util read
#: 51.4 % against the SMs' 54.3 %, and 18 of the 22 readings of each gap's closing copy read 0).
MIN_EXCESS_SHARE: Final = 0.05


@dataclass(slots=True)
class UtilSums:
    """The sums behind a `UtilFigure`, added to per reading by `ChainingMeter._add_util`."""

    #: Seconds of readings with both SM activity and GPU-Util.
    read_s: float = 0.0
    #: Of them: GPU-Util's busy seconds (each reading's interval times its GPU-Util 0..1).
    util_busy_s: float = 0.0


@dataclass(frozen=True, slots=True)
class UtilFigure:
    """One GPU's GPU-Util over a stretch: `util_share` (0..1, what nvidia-smi shows on average)
    over `read_s` seconds of readings; `window_s` the live window (None: the working span)."""

    gpu: int
    read_s: float
    util_share: float
    window_s: float | None

    @classmethod
    def of(cls, gpu: int, read_s: float, util_busy_s: float,
           window_s: float | None) -> UtilFigure | None:
        """The figure of these sums, None below `MIN_READ_S` of readings."""
        if not read_s >= MIN_READ_S:
            return None
        return cls(gpu=gpu, read_s=read_s, util_share=min(1.0, max(0.0, util_busy_s / read_s)),
                   window_s=window_s)

    def excess_s(self, busy_share: float | None) -> float | None:
        """Seconds GPU-Util showed busy beyond the SMs' `busy_share` of the same stretch (0 where
        it showed no more); None where the busy share is not known."""
        if busy_share is None:
            return None
        return max(0.0, (self.util_share - busy_share) * self.read_s)

    def cell(self) -> str:
        """`GPU-Util 97%` for the dashboard's lines (nvidia-smi's figure over the window)."""
        return f"GPU-Util {self.util_share * 100:.0f}%"

    def words(self, busy_share: float | None) -> str:
        """The report's sentence under a GPU's busy share: "GPU-Util (what nvidia-smi shows)
        100 % over the same span: 26.2 s more of it busy than the SMs (copies, or kernels on few
        SMs)"; within 5 points either way "about the busy share"; further below, "N s less busy
        than the SMs"."""
        head = (f"GPU-Util (what nvidia-smi shows) {self.util_share * 100:.0f} % over the same "
                "span")
        excess = self.excess_s(busy_share)
        if excess is None or busy_share is None:
            return head
        diff = self.util_share - busy_share
        if abs(diff) < MIN_EXCESS_SHARE:
            return f"{head}: about the busy share"
        if diff < 0:
            return f"{head}: {-diff * self.read_s:.1f} s less busy than the SMs"
        return (f"{head}: {excess:.1f} s more of it busy than the SMs (copies, or kernels on "
                "few SMs)")

    def json(self, busy_share: float | None) -> dict[str, float | None]:
        return {"read_s": self.read_s, "gpu_util_share": self.util_share,
                "busy_share": busy_share, "excess_busy_s": self.excess_s(busy_share)}
