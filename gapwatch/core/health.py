"""GPU health and GPU errors in words: the clocks' (throttle) reasons, hardware events, a
process whose GPU memory keeps growing, the compact health text of the dashboard's header.

Who calls it: the NVML source (`gapwatch.sources.nvml`: event words for its notices, the
growth watch on each process round), the dashboard's header and processes panel, the report,
`/metrics` (reason names as labels), summary.md. Prover-neutral: nothing here knows which
program runs on the GPU. The records are `GpuHealth`, `HardwareEvent` and `ProcessMemory`
(`gapwatch.core.models`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from gapwatch.core.chaining import ChainingFigure
from gapwatch.core.models import GpuHealth, HardwareEvent

#: NVML's clocks event reasons (nvml.h `nvmlClocksEventReason*`, formerly ThrottleReasons):
#: bit -> (name for /metrics, words on screen, does it slow work down).
CLOCKS_EVENT_REASONS: Final[dict[int, tuple[str, str, bool]]] = {
    0x001: ("gpu_idle", "idle", False),
    0x002: ("applications_clocks_setting", "app clocks", False),
    0x004: ("sw_power_cap", "power cap", True),
    0x008: ("hw_slowdown", "HW slowdown", True),
    0x010: ("sync_boost", "sync boost", True),
    0x020: ("sw_thermal_slowdown", "thermal", True),
    0x040: ("hw_thermal_slowdown", "HW thermal", True),
    0x080: ("hw_power_brake_slowdown", "power brake", True),
    0x100: ("display_clocks_setting", "display clocks", False),
}

#: A process's GPU memory that grew by this much (and by `GROWTH_MIN_SHARE` of where it
#: started) over at least `GROWTH_MIN_S`, never falling back meanwhile, is a notice: a GPU
#: memory leak (e.g. sppark 0.1.14's, lotus#13634) shows as exactly this over hours.
GROWTH_MIN_BYTES: Final = 1 << 30
GROWTH_MIN_SHARE: Final = 0.10
GROWTH_MIN_S: Final = 3600.0
#: Drops smaller than this do not reset the watch (allocator churn of a healthy process).
GROWTH_SLACK_BYTES: Final = 256 << 20


#: The reasons that hold a GPU below the speed it runs at under load: heat and hardware
#: slowdowns. Not the power cap (a loaded GPU sits at it as designed: 40 of 53 readings on
#: the H200 under the chained load) nor sync boost. The alert `GapwatchGpuThrottled` and
#: `compare`'s notes read these (a test holds the rule's regex to them).
HELD_DOWN_REASONS: Final[frozenset[str]] = frozenset({
    "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_slowdown", "hw_power_brake_slowdown"})
_HELD_DOWN_WORDS: Final[frozenset[str]] = frozenset(
    words for name, words, _ in CLOCKS_EVENT_REASONS.values() if name in HELD_DOWN_REASONS)


def reasons(mask: int | None, *, slowing_only: bool = False) -> list[tuple[str, str]]:
    """The reasons set in `mask` as (metric name, words), in bit order; with `slowing_only`,
    only those that slow work down (idle and settings are not throttling)."""
    if mask is None:
        return []
    return [(name, words) for bit, (name, words, slows) in CLOCKS_EVENT_REASONS.items()
            if mask & bit and (slows or not slowing_only)]


def throttle_words(mask: int | None) -> str:
    """What holds the clocks down, in words ("power cap, thermal"); "" when nothing does."""
    return ", ".join(words for _, words in reasons(mask, slowing_only=True))


def held_down_words(mask: int | None) -> str:
    """What holds the clocks down by heat or a hardware slowdown (`HELD_DOWN_REASONS`), in
    words; "" when nothing does. What the pane flags: the power cap, where a loaded GPU sits
    in most readings, flagged every busy GPU."""
    return ", ".join(words for name, words in reasons(mask, slowing_only=True)
                     if name in HELD_DOWN_REASONS)


#: The hardware events that are errors (the work on the GPU may have failed or be wrong):
#: the alert rule `GapwatchGpuHardwareError`, `--on-event`'s `gpu_hardware_error`, the footer.
GPU_ERROR_KINDS: Final[frozenset[str]] = frozenset({"xid", "ecc_uncorrected", "gpu_lost",
                                                    "row_remap_failure"})
#: Of those, the one that is a state, not an event: a GPU lost stays lost. Counted by
#: `increase()` it never paged for a GPU lost at gapwatch's start (its counter is 1 at the
#: first scrape) and stopped paging 10 minutes after, the GPU still gone: `GapwatchGpuLost`
#: fires while the count is above 0 (the fleet's X too); the others by their increase.
GPU_LOST_KIND: Final = "gpu_lost"
#: The events that are states, said once a run per GPU when first seen and true from then on
#: (a lost GPU; a row remap pending until the next reset, or one that failed): read by their
#: count above 0, never by `increase()`, which misses a state already true at gapwatch's start.
GPU_STATE_KINDS: Final[frozenset[str]] = frozenset({GPU_LOST_KIND, "row_remap_pending",
                                                    "row_remap_failure"})

#: The lasting states a GPU's header says for as long as the session runs (the footer's GPU
#: ERROR line holds an error 5 minutes; the alerts fire while the state lasts), worst first:
#: kind -> (words, the same in at most 13 columns for a compact cell).
LASTING_STATES: Final[dict[str, tuple[str, str]]] = {
    "row_remap_failure": ("ROW REMAP FAILED", "REMAP FAILED"),
    "row_remap_pending": ("row remap pending", "remap pending"),
}
STATE_WORDS: Final[dict[str, str]] = {kind: words for kind, (words, _) in LASTING_STATES.items()}
_SHORT: Final[dict[str, str]] = dict(LASTING_STATES.values())


def short_state(words: str) -> str:
    """A lasting state's words (`STATE_WORDS`) in at most 13 columns, for a compact cell."""
    return _SHORT.get(words, words)


def event_count(ev: HardwareEvent) -> int:
    """What `ev` adds to its kind's count: its `count`, or 1 for a state (`GPU_STATE_KINDS`)
    whatever count it was recorded with: a state is true or not (a recorded 0 kept its alert
    and header quiet, a 1,000,000 read as a million errors)."""
    return 1 if ev.kind in GPU_STATE_KINDS else ev.count


def counted(ev: HardwareEvent, states_seen: set[tuple[int, str]]) -> int | None:
    """What `ev` adds to one run's (GPU, kind) count (through `StatesSeen`, which forgets the
    states seen where each run of a set begins): `event_count`, or None when it adds nothing
    and is no news: a state already seen on its GPU in this run, which `states_seen` remembers
    (50 copies of one in a recording were 50 errors and 50 lines)."""
    key = (ev.gpu, ev.kind)
    if ev.kind in GPU_STATE_KINDS:
        if key in states_seen:
            return None
        states_seen.add(key)
    return event_count(ev)


@dataclass
class StatesSeen:
    """The states (`GPU_STATE_KINDS`) seen per GPU in the run being read, forgotten where the
    next run begins: a state is news once per GPU per run (a folder of a week's runs, GPU 0
    lost Monday and again Thursday: two losses, both listed). Who uses it, so that both say
    the same: the report (`offline.detect._HealthSide`) and a session's store (`/metrics`, the
    header, the footer; `engine.store.SeriesStore.begin_run`, told by `replay`), each told the
    run of a GPU error by where the set reader's stream is (`Recording.run`), not by time: a
    run's clock may overlap the one before (stepped back at the reboot a lost GPU forces)."""

    #: The run (0: a set's first) whose states `seen` holds.
    run: int = 0
    seen: set[tuple[int, str]] = field(default_factory=set)

    def counted(self, ev: HardwareEvent, run: int = 0) -> int | None:
        """`counted` of `ev`, read in run `run`: the states seen forgotten when it is another
        run than the last error's."""
        if run != self.run:
            self.run = run
            self.seen.clear()
        return counted(ev, self.seen)


#: NVML's return codes that lose a GPU (nvml.h), in words: what a `gpu_lost` event's `code` says.
LOST_CODE_WORDS: Final[dict[int, str]] = {15: "GPU is lost", 16: "GPU requires reset",
                                          999: "unknown error"}


def event_words(ev: HardwareEvent) -> str:
    """One line for an event: the timeline, the report, the dashboard's notices."""
    if ev.kind == "gpu_lost":
        why = LOST_CODE_WORDS.get(ev.code, f"NVML error {ev.code}") if ev.code is not None \
            else "no answer"
        return (f"GPU {ev.gpu}: lost (NVML: {why}; fell off the bus or needs a reset): "
                "no more readings from it")
    if ev.kind == "xid":
        return f"GPU {ev.gpu}: XID {ev.code} (critical GPU error reported by the driver)"
    if ev.kind == "ecc_uncorrected":
        return (f"GPU {ev.gpu}: {ev.count} uncorrected ECC error{'s' * (ev.count != 1)} "
                "(memory contents lost: the work on it may be wrong)")
    if ev.kind == "ecc_corrected":
        return f"GPU {ev.gpu}: {ev.count} corrected ECC error{'s' * (ev.count != 1)}"
    if ev.kind == "row_remap_failure":
        return (f"GPU {ev.gpu}: memory row remapping failed (a row with errors could not be "
                "remapped: reset the GPU; if it fails again, the GPU needs replacing)")
    if ev.kind == "row_remap_pending":
        return (f"GPU {ev.gpu}: memory row remap pending (a row with errors is retired at the "
                "next GPU reset; until then its errors can recur: reset at the next pause)")
    return (f"GPU {ev.gpu}: {ev.count} PCIe replay{'s' * (ev.count != 1)} "
            "(link errors retried: copies slow down)")


def event_level(ev: HardwareEvent) -> str:
    """How much an event matters: "error" for XIDs, uncorrected ECC, a lost GPU and a failed
    row remap, else "warning"."""
    return "error" if ev.kind in GPU_ERROR_KINDS else "warning"


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.0f}G" if n >= 10 << 30 else f"{n / (1 << 30):.1f}G"


def health_cells(h: GpuHealth | None) -> list[str]:
    """The header's health of one GPU, most important first, each cell short: memory used of
    total, temperature, power of its limit, what throttles it. A missing reading is "?"."""
    if h is None:
        return ["health ?"]
    if h.memory_used_bytes is not None and h.memory_total_bytes:
        mem = f"{_gib(h.memory_used_bytes)}/{_gib(h.memory_total_bytes)}"
    else:
        mem = "mem ?"
    temp = "?°C" if h.temperature_c is None else f"{h.temperature_c:.0f}°C"
    power = "?" if h.power_w is None else f"{h.power_w:.0f}"
    power += "W" if h.limit_w is None else f"/{h.limit_w:.0f}W"
    cells = [mem, temp, power]
    throttle = throttle_words(h.clocks_event_mask)
    if throttle:
        cells.append(throttle)
    return cells


#: Width of one GPU's compact health cell (`health_cell`) with one-digit GPU indices: four fit
#: 80 columns with a space between, so 8 GPUs take two lines. A digit more takes a column more.
HEALTH_CELL_WIDTH: Final = 19


def health_cell(gpu: int, h: GpuHealth | None, chain: ChainingFigure | None,
                digits: int = 1, *, flagged: bool = False) -> str:
    """One GPU's health in `HEALTH_CELL_WIDTH + digits - 1` columns, `0  60G 52° 64%!c 92`: the
    GPU's index whole in `digits` columns and a space (an index cut to two digits read GPU 100
    as GPU 0, and one without the space GPU 12 with 141 GiB used as `12141G`), GPU memory used
    (GiB), temperature (°C), power as a share of its limit, `!` when heat or a hardware
    slowdown holds the clocks down (`held_down_words`: not the power cap) or the GPU is in a
    lasting bad state (`flagged`: a row remap failed or pending; the header names either for
    the selected GPU), the chaining figure (`c`, %; `-`: no copies to speak of); `?` for a
    missing reading. The help and docs/dashboard.md give the legend."""
    mem = temp = power = chain_text = "?"
    flag = "!" if flagged else " "
    if h is not None:
        if h.memory_used_bytes is not None:
            mem = f"{min(999.0, h.memory_used_bytes / (1 << 30)):.0f}"
        if h.temperature_c is not None:
            temp = f"{min(999.0, h.temperature_c):.0f}"
        if h.power_w is not None and h.limit_w is not None:
            power = f"{min(999.0, 100 * h.power_w / h.limit_w):.0f}"
        if held_down_words(h.clocks_event_mask):
            flag = "!"
    if chain is not None:  # "-": no copies to speak of (`ChainingFigure.has_copies`)
        chain_text = f"{chain.share * 100:.0f}" if chain.has_copies() else "-"
    return f"{gpu:<{digits}} {mem:>3}G{temp:>3}°{power:>3}%{flag}c{chain_text:>3}"


@dataclass(slots=True)
class _Growth:
    since_wall_s: float
    from_bytes: int
    peak_bytes: int
    said_bytes: int = 0


@dataclass(slots=True)
class MemoryGrowth:
    """Watches each (GPU, pid)'s GPU memory across process rounds and says when it grew by
    `GROWTH_MIN_BYTES` and `GROWTH_MIN_SHARE` over `GROWTH_MIN_S` without falling back (a drop
    of more than `GROWTH_SLACK_BYTES` restarts the watch). Said again only once the growth
    doubled since it was last said. Bounded: a pid absent from a GPU's round is forgotten."""

    _seen: dict[tuple[int, int], _Growth] = field(default_factory=dict)

    def round(self, gpu: int, t_wall_s: float,
              processes: list[tuple[int, str, int | None]]) -> list[str]:
        """One round of `gpu`'s processes (pid, name, GPU memory bytes or None): the words of
        each new growth notice."""
        out = []
        here = set()
        for pid, name, used in processes:
            if used is None:
                continue
            key = (gpu, pid)
            here.add(key)
            g = self._seen.get(key)
            if g is None or used < g.peak_bytes - GROWTH_SLACK_BYTES:
                self._seen[key] = _Growth(t_wall_s, used, used)
                continue
            g.peak_bytes = max(g.peak_bytes, used)
            grown = used - g.from_bytes
            if (t_wall_s - g.since_wall_s >= GROWTH_MIN_S and grown >= GROWTH_MIN_BYTES
                    and grown >= GROWTH_MIN_SHARE * max(g.from_bytes, 1)
                    and grown >= 2 * g.said_bytes):
                g.said_bytes = grown
                hours = (t_wall_s - g.since_wall_s) / 3600
                out.append(
                    f"GPU {gpu}: process {pid} ({name or '?'}) GPU memory grew "
                    f"{grown / (1 << 30):.1f} GiB over {hours:.1f} h "
                    f"({g.from_bytes / (1 << 30):.1f} -> {used / (1 << 30):.1f} GiB) and never "
                    "fell back: a GPU memory leak? It ends in out-of-memory errors")
        for key in [k for k in self._seen if k[0] == gpu and k not in here]:
            del self._seen[key]
        return out


#: GPU errors a report keeps, at most (the rest are counted).
MAX_REPORT_EVENTS: Final = 1000


@dataclass(slots=True)
class HealthStats:
    """One GPU's health over a recording: the highest readings, the power limit last seen, and
    the readings in which each slowing reason held the clocks down (the report)."""

    gpu: int
    readings: int = 0
    max_temperature_c: float | None = None
    max_power_w: float | None = None
    power_limit_w: float | None = None
    max_memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    throttled: dict[str, int] = field(default_factory=dict)
    #: Readings in which any of `HELD_DOWN_REASONS` held the clocks down (a reading held by
    #: two reasons once: 4 thermal and 4 HW slowdown are 8 of 100, not 4).
    held_readings: int = 0

    def add(self, h: GpuHealth) -> None:
        self.readings += 1
        if held_down_words(h.clocks_event_mask):
            self.held_readings += 1
        self.max_temperature_c = _max(self.max_temperature_c, h.temperature_c)
        self.max_power_w = _max(self.max_power_w, h.power_w)
        self.max_memory_used_bytes = _max(self.max_memory_used_bytes, h.memory_used_bytes)
        if h.limit_w is not None:
            self.power_limit_w = h.limit_w
        if h.memory_total_bytes is not None:
            self.memory_total_bytes = h.memory_total_bytes
        for _, words in reasons(h.clocks_event_mask, slowing_only=True):
            self.throttled[words] = self.throttled.get(words, 0) + 1

    def held_down(self) -> tuple[str, float] | None:
        """What held the clocks down by heat or a hardware slowdown (`HELD_DOWN_REASONS`, in
        words, the most frequent first) and the share of readings any of them did; None when
        none did."""
        held = sorted(((n, w) for w, n in self.throttled.items() if w in _HELD_DOWN_WORDS),
                      reverse=True)
        if not held or not self.readings:
            return None
        return ", ".join(w for _, w in held), self.held_readings / self.readings

    def words(self) -> str:
        """"GPU 0: up to 83°C, 699 of 700 W, 60.1 of 141 GiB; clocks held down: thermal in 3 of
        600 readings; clocks slowed: power cap in 412 of 600 readings"."""
        parts = []
        if self.max_temperature_c is not None:
            parts.append(f"up to {self.max_temperature_c:.0f}°C")
        if self.max_power_w is not None:
            limit = "" if self.power_limit_w is None else f" of {self.power_limit_w:.0f}"
            parts.append(f"{self.max_power_w:.0f}{limit} W")
        if self.max_memory_used_bytes is not None:
            total = ("" if self.memory_total_bytes is None
                     else f" of {self.memory_total_bytes / (1 << 30):.0f}")
            parts.append(f"{self.max_memory_used_bytes / (1 << 30):.1f}{total} GiB")
        # Readings whose every field NVML refused (NOT_SUPPORTED on a VM, say) are readings:
        # "no readings" read as if the health round never ran.
        empty = (f"no value in {self.readings} readings (NVML gave none: not supported here?)"
                 if self.readings else "no readings")
        text = f"GPU {self.gpu}: " + (", ".join(parts) or empty)
        # Heat and hardware slowdowns are "held down" (what the pane, the fleet and the alert
        # flag); the power cap, a loaded GPU's normal, and sync boost only slowed the clocks.
        for label, held in (("clocks held down", True), ("clocks slowed", False)):
            said = ", ".join(f"{w} in {n} of {self.readings} readings"
                             for w, n in self.throttled.items()
                             if (w in _HELD_DOWN_WORDS) == held)
            if said:
                text += f"; {label}: {said}"
        return text


def _max(a: float | int | None, b: float | int | None) -> Any:
    if b is None:
        return a
    return b if a is None or b > a else a
