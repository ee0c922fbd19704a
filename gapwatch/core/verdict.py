"""The verdict: what a GPU's chaining state rests on now, in words, and the figures behind them.

A state is entered on one sample (`StateChange`, with the reason it was entered on) and lasts
while the window keeps meeting its rule; the window moves on. `WindowNow` is the window as of a
GPU's latest sample: the gaps in it by kind, the idle time of the starved ones, its span, the
busy share. The detector builds it (`GapDetector.window_now`), the session refreshes it in the
store about once a second and whenever a gap closes or the state changes, and every output that
says why a GPU is in its state words it here: the dashboard's verdict, snapshots' summary.md,
the report's breakdown lines (`breakdown_words`), and the detector's own reasons at entry, so
"13 pcie_starved gaps in the last 30 s" reads the same everywhere and is never a frozen count.

Pure: no clocks, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gapwatch.core import fmt
from gapwatch.core.config import DetectorConfig
from gapwatch.core.models import StateChange
from gapwatch.core.payoff import link_floor_s

STARVED = "pcie_starved"


@dataclass(frozen=True, slots=True)
class WindowNow:
    """The chaining window of one GPU as of its latest sample."""

    gpu: int
    #: Data time (ns, as the detector placed it) and wall time of the GPU's latest sample: the
    #: window's end. Its start is `window_s` earlier.
    t_mono_ns: int
    end_wall_s: float
    window_s: float
    #: Gaps in the window by kind (closed gaps ending inside it, and the open gap), kinds with
    #: none left out.
    gaps: dict[str, int] = field(default_factory=dict)
    #: Idle seconds inside the window of its pcie_starved gaps (the open one so far included).
    starved_idle_s: float = 0.0
    #: The open gap's kind, or None when none is open.
    open_kind: str | None = None
    #: Of the pcie_starved gaps, those whose copies the copy trace saw come from pageable
    #: memory (the BREAKDOWN witness, `detector.breakdown_pageable_witness`).
    pageable_gaps: int = 0
    busy_fraction: float | None = None
    #: Seconds of data the window holds: less than `window_s` in a session's first seconds
    #: (the GPU's sampled time so far); None: not known (the window's span is taken whole).
    #: What a figure "over the window" is over (`cuzk.why_now`'s payoff): at a BREAKDOWN
    #: entered 21 s into a session the window held 21 s, and the payoff worked out over 30 s
    #: understated it.
    data_s: float | None = None
    #: Bytes PCIe carried each way in the window's seconds (host-to-device: RX; each sample's
    #: rate x the time it covers, where the rate is a reading), and the link's bytes per
    #: second each way: the floor under the verdict's payoff (`link_floor_s`). None: a second
    #: of the window with data had no reading that way (its bytes are not known, never 0:
    #: a window past a sampler's last PCIe reading said its link needed nothing), or no link
    #: said.
    pcie_rx_bytes: float | None = None
    pcie_tx_bytes: float | None = None
    link_bytes_per_s: float | None = None

    @property
    def link_floor_s(self) -> float | None:
        """The shortest the window's span could be, the time the link needs for its bytes
        (`core.payoff.link_floor_s`): the floor under the verdict's payoff (`cuzk.why_now`).
        None: its bytes not known (a second of it with no PCIe reading), or no link."""
        if self.link_bytes_per_s is None:
            return None
        return link_floor_s(self.pcie_rx_bytes, self.pcie_tx_bytes, self.link_bytes_per_s)

    @property
    def start_wall_s(self) -> float:
        return self.end_wall_s - self.window_s

    @property
    def n_gaps(self) -> int:
        return sum(self.gaps.values())


def count_words(kinds: dict[str, int]) -> str:
    """`13 pcie_starved and 1 host_stall gaps` (most first; ties by name)."""
    named = [f"{n} {kind}" for kind, n in sorted(kinds.items(), key=lambda kn: (-kn[1], kn[0]))
             if n]
    total = sum(kinds.values())
    if not named:
        return "no gaps"
    listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    return f"{listed} gap{'s' if total != 1 else ''}"


def breakdown_entry_words(n_starved: int, starved_idle_s: float | None,
                          config: DetectorConfig, pageable_witness: bool = False) -> str:
    """Why BREAKDOWN was entered: the count rule, the idle rule (`starved_idle_s`), or a
    starved gap whose copies the copy trace saw come from pageable memory (`pageable_witness`:
    the measured memory kind stands in for the second gap)."""
    if pageable_witness:
        return (f"{count_words({STARVED: n_starved})} in the last {config.window_s:g} s, its "
                "copies from pageable memory (copy trace)")
    if starved_idle_s is None:
        return f"{n_starved} pcie_starved gaps in the last {config.window_s:g} s"
    return f"idle {starved_idle_s:.1f} s of the last {config.window_s:g} s in pcie_starved gaps"


def gaps_reason(kinds: dict[str, int], config: DetectorConfig) -> str:
    """Why a GPU is in GAPS and not BREAKDOWN, in words true to the gaps in the window: a lone
    pcie_starved gap is named as such, with what BREAKDOWN would take."""
    what = f"{count_words(kinds)} in the last {config.window_s:g} s"
    if kinds.get(STARVED):
        need = config.breakdown_idle_frac * config.window_s
        return (f"{what}: BREAKDOWN takes {config.breakdown_min_starved_gaps} pcie_starved "
                f"gaps, or {need:g} s idle in them")
    return f"{what}, none pcie_starved"


def window_words(state: str, window: WindowNow, config: DetectorConfig, span: bool = True,
                 witness: bool = True) -> str:
    """What `state` rests on now: the window's live count, and (`span`) its span in clock time
    and the starved gaps' idle seconds (a narrow pane leaves them out where the count says
    enough; "the last 30 s" says the span too). `witness` False leaves out the copy trace's
    clause (`, 12 with copies from pageable memory (copy trace)`): the dashboard's verdict
    drops it where its lines cannot hold it and the setting to change."""
    clocks = f"{fmt.clock(window.start_wall_s)}-{fmt.clock(window.end_wall_s)}"
    if state == "BREAKDOWN":
        starved = window.gaps.get(STARVED, 0)
        others = {k: n for k, n in window.gaps.items() if k != STARVED}
        more = f", and {count_words(others)}" if others else ""
        said = ""
        if window.pageable_gaps and witness:
            said = (", its copies from pageable memory (copy trace)" if starved == 1 else
                    f", {window.pageable_gaps} with copies from pageable memory (copy trace)")
        # The idle seconds matter where the count alone does not make BREAKDOWN (the idle
        # rule, the copy trace's witness); a narrow pane says them only then.
        idle = f" ({window.starved_idle_s:.1f} s idle)" \
            if span or starved < config.breakdown_min_starved_gaps else ""
        return (f"{count_words({STARVED: starved})}{idle} in the last {window.window_s:g} s"
                f"{', ' + clocks if span else ''}{said}{more}")
    if state == "GAPS":
        return gaps_reason(window.gaps, config) + (f" ({clocks})" if span else "")
    if state == "CHAINED":
        return f"busy, no gaps in the last {window.window_s:g} s" + (
            f" ({clocks})" if span else "")
    return ""


def verdict_words(state: StateChange | None, window: WindowNow | None,
                  config: DetectorConfig, span: bool = True, witness: bool = True) -> str:
    """The selected GPU's verdict after its name and state: since when, and what the state rests
    on now (the live window), else why it was entered. `state` None: no verdict yet.
    `witness` False: without the copy trace's witness clause (`window_words`)."""
    if state is None:
        return "no data yet"
    since = f"since {fmt.clock(state.t_wall_s)}"
    live = window_words(state.state, window, config, span, witness) \
        if window is not None else ""
    if live:
        return f"{since}: {live}"
    return f"{since}: {state.reason or 'idle gaps between GPU work'}"


def breakdown_words(n_starved: int, starved_idle_s: float, max_in_window: int,
                    entered_on: str, config: DetectorConfig) -> str:
    """A BREAKDOWN period of the report: the starved gaps inside it, the most that one window
    held, and what it was entered on."""
    return (f"{count_words({STARVED: n_starved})} ({starved_idle_s:.1f} s idle) in the period, "
            f"up to {max_in_window} in a {config.window_s:g} s window; entered on {entered_on}")
