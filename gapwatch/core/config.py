"""The detector's thresholds (`DetectorConfig`) and the base of every config section.

Who calls it: the detector, readings and verdict (the thresholds); `gapwatch.config` (the whole
TOML file, which this section is part of, `[detector]`) and the prover packages' own sections
(e.g. `gapwatch.cuzk.config`) build on `Section`. Pure: no files, no environment.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gapwatch.core.bounds import MAX_LINK_BYTES_PER_S, MAX_SECONDS
from gapwatch.core.models import GEN5_X16_BYTES_PER_S


class Section(BaseModel):
    """A section of the config file: frozen, an unknown key is an error, and so is a number
    that is no number (TOML's `nan`, `inf`, `-inf`, in every float setting and list): NaN
    passes every comparison a setting is checked with (`procmem_every_s = nan` was taken, and
    `window_s = inf` crashed the detector with an OverflowError). Every float setting has an
    upper bound too (`test_every_float_setting_has_an_upper_bound...`): a finite one of 300
    digits met the code turning seconds into nanoseconds (`min_gap_ms = 1e308`: an
    OverflowError traceback in the detector). No text setting holds a NUL (`_no_nul`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @field_validator("*")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        """A NUL in a text setting or a list of them is refused here, naming the key: no path,
        address or name holds one, and each call that met it raised its own traceback
        (`logs.paths`, `copytrace.socket`: `ValueError: embedded null byte`;
        `prometheus.listen`, `sim.status_listen`: `TypeError: host name must not contain
        null character`), exit 1."""
        texts = value if isinstance(value, list) else [value]
        if any(isinstance(t, str) and "\x00" in t for t in texts):
            raise ValueError("holds a NUL character (\\x00), which no path, address or name "
                             "can hold")
        return value


class DetectorConfig(Section):
    """What counts as idle, as a gap, and as a chaining breakdown."""

    #: SM activity below this (GPM) is idle.
    idle_sm_pct: float = Field(10.0, ge=0, le=100)
    #: utilization.gpu below this is idle where SM activity is unavailable (lower confidence:
    #: utilization.gpu counts copies as busy).
    idle_util_pct: float = Field(10.0, ge=0, le=100)
    #: Shortest idle stretch reported as a gap.
    min_gap_ms: float = Field(300.0, gt=0, le=MAX_SECONDS * 1000)
    #: PCIe below this fraction of link capacity (but above quiet) during a gap = pcie_starved.
    starved_below_link_frac: float = Field(0.30, gt=0, le=1)
    #: PCIe below this fraction of link capacity = quiet = host_stall.
    quiet_below_link_frac: float = Field(0.01, ge=0, le=1)
    #: Link capacity assumed when NVML cannot tell (bytes/s per direction); Gen5 x16.
    default_link_bytes_per_s: float = Field(GEN5_X16_BYTES_PER_S, gt=0, le=MAX_LINK_BYTES_PER_S)
    #: Window for the chaining state and the busy fraction. At most an hour: the detector
    #: keeps a bucket per second of it for every GPU (`window_s = 1e9` was a billion each).
    window_s: float = Field(30.0, gt=0, le=3600)
    #: BREAKDOWN when at least this many pcie_starved gaps fall in the window ...
    breakdown_min_starved_gaps: int = Field(2, ge=1)
    #: ... or when pcie_starved gaps cover at least this fraction of the window.
    breakdown_idle_frac: float = Field(0.10, gt=0, le=1)
    #: ... or when one pcie_starved gap is in the window and the copy trace saw its copies
    #: come from pageable memory: the measured memory kind stands in for the second gap (it
    #: comes seconds sooner). Off: BREAKDOWN waits for the second gap, as without a copy trace.
    breakdown_pageable_witness: bool = True
    #: How long GPM readings trail the moment they are read (ms): GPM's counters refresh about
    #: every 100 ms, so a reading describes activity that ended earlier. Measured on an H200:
    #: SM and PCIe edges arrive 64-153 ms after the workload's own clock says they happened.
    #: Gap edges are placed this much earlier; 0 turns the correction off.
    gpm_lag_ms: float = Field(100.0, ge=0, le=1000)
    #: A silence longer than this many sampling periods is "no data", never idle.
    nodata_after_periods: float = Field(3.0, ge=1.5, le=1_000_000)
    #: Prover events this long before a gap's start are attached to it as evidence.
    #: At most an hour: live, the prover's events are held this long for gaps yet to open.
    evidence_before_s: float = Field(2.0, ge=0, le=3600)

    @property
    def window_seconds(self) -> int:
        """The chaining window in whole seconds, as its per-second buckets hold it: the
        detector's busy share and the live GPU-Util beside it (`core.chaining`) are both over
        these seconds."""
        return max(1, math.ceil(self.window_s))

    def link_or_default(self, link_bytes_per_s: float | None) -> float:
        """The link capacity rates are judged against: the GPU's own (from its max generation
        and width), else `default_link_bytes_per_s`. Every consumer (detector, dashboard,
        snapshot) calls this, so a GPU whose link NVML cannot tell reads alike everywhere."""
        return link_bytes_per_s if link_bytes_per_s else self.default_link_bytes_per_s
