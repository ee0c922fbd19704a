"""StoreSnapshot: the immutable view of a session's memory at one moment, as every reader sees it.

`gapwatch.engine.store.SeriesStore.snapshot()` builds it; the dashboard, the Prometheus collector
and snapshots read it. It lives in the core (a value over core types, no behaviour beyond the
display rules `state_name` and `busy_share`) so that the sinks and the UI can take it without
importing the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gapwatch.core.chaining import ChainingFigure
from gapwatch.core.health import GPU_LOST_KIND, STATE_WORDS
from gapwatch.core.ledger import Tally
from gapwatch.core.models import (
    BlindSpot,
    ChainState,
    CopyRecord,
    Gap,
    GpuHealth,
    GpuInfo,
    GpuSample,
    HardwareEvent,
    HostSample,
    LinkState,
    LogEvent,
    Notice,
    ProcessMemory,
    ProverEvent,
    ProverStatus,
    StateChange,
)
from gapwatch.core.util_figure import UtilFigure
from gapwatch.core.verdict import WindowNow


@dataclass(frozen=True, slots=True)
class StoreSnapshot:
    """A consistent, immutable view of the store at one moment."""

    version: int
    gpus: tuple[GpuInfo, ...]
    gpu_samples: dict[int, tuple[GpuSample, ...]]
    host_samples: tuple[HostSample, ...]
    log_events: tuple[LogEvent, ...]
    #: The gaps as the ledger has them (latest version, retracted ones gone), in start order,
    #: open gaps included (`Gap.is_open`).
    gaps: tuple[Gap, ...]
    #: Latest chaining state per GPU.
    states: dict[int, StateChange]
    notices: tuple[Notice, ...]
    counters: dict[str, int] = field(default_factory=dict)
    #: The detector's chaining window per GPU (`core.verdict.WindowNow`: live gap counts, span,
    #: busy share), refreshed about once a second of data and whenever a gap closes or the
    #: state changes (`states` only changes when the state does, so its figures go stale).
    windows: dict[int, WindowNow] = field(default_factory=dict)
    #: The latest blind spots (NVML blocked: `core.blind`), oldest first, and (count, seconds)
    #: of every one since the session started.
    blind_spots: tuple[BlindSpot, ...] = ()
    blind_total: tuple[int, float] = (0, 0.0)
    #: The prover's own status snapshots (e.g. cuzk's `/status`), oldest first, and the latest
    #: per prover.
    prover_statuses: tuple[ProverStatus, ...] = ()
    provers: dict[str, ProverStatus] = field(default_factory=dict)
    #: Closed gaps by (GPU, kind) since the session started (never forgotten).
    gap_tally: dict[tuple[int, str], Tally] = field(default_factory=dict)
    #: Closed gaps by (GPU, prover cause) since the session started.
    cause_tally: dict[tuple[int, str], Tally] = field(default_factory=dict)
    #: The copy trace's latest copies (all GPUs), oldest first.
    copies: tuple[CopyRecord, ...] = ()
    #: Latest host-memory reading of each process NVML lists, per GPU.
    procmem: dict[int, tuple[ProcessMemory, ...]] = field(default_factory=dict)
    #: Latest PCIe link state read under traffic, per GPU.
    links: dict[int, LinkState] = field(default_factory=dict)
    #: What the prover has said about its pipeline (`gapwatch.core.prover.Prover.facts`: its
    #: package's own immutable view, e.g. cuzk's synthesis workers, pinned pool, pacer, SRS
    #: loads, PoSt in flight); None: nothing known.
    pipeline: object = None
    #: What the prover package could not learn, in plain words (`Prover.lacks`: e.g. no log
    #: followed, no `/status` polled): said where a gap has no prover cause.
    prover_lacks: tuple[str, ...] = ()
    #: Latest GPU health per GPU (`GpuHealth`, every `sampler.health_every_s`).
    health: dict[int, GpuHealth] = field(default_factory=dict)
    #: The latest GPU errors and warnings (XID, ECC, PCIe replays, a GPU lost), oldest first;
    #: the latest errors alone (`health.GPU_ERROR_KINDS`; warnings of a failing memory, one a
    #: GPU a reading, pushed them out of the first); and how many of each (GPU, kind) since the
    #: session started.
    hw_events: tuple[HardwareEvent, ...] = ()
    gpu_errors: tuple[HardwareEvent, ...] = ()
    hw_counts: dict[tuple[int, str], int] = field(default_factory=dict)
    #: The chaining figure per GPU over the last minute (`gapwatch.core.chaining`); absent
    #: before any copy time was seen.
    chaining: dict[int, ChainingFigure] = field(default_factory=dict)
    #: GPU-Util per GPU over the detector's chaining window, the window `busy_share` is of
    #: (`gapwatch.core.util_figure`); absent below a second of readings with it and SM activity.
    util: dict[int, UtilFigure] = field(default_factory=dict)
    #: The prover's latest events (PoSt proofs, restarts, errors, lost GPU jobs), oldest first.
    prover_events: tuple[ProverEvent, ...] = ()

    def lost_gpus(self) -> frozenset[int]:
        """GPUs NVML lost this session (a `gpu_lost` event: fell off the bus, needs a reset):
        never read again, so their last readings are no current ones (/metrics leaves them
        out, the dashboard says "lost" in their place)."""
        return frozenset(gpu for (gpu, kind), n in self.hw_counts.items()
                         if kind == GPU_LOST_KIND and n)

    def lasting_states(self, gpu: int) -> list[str]:
        """The GPU's lasting states in words, worst first (`health.STATE_WORDS`: a memory row
        remap failed or pending): said once as events, true for the rest of the session, so
        the header keeps saying them after the footer's 5 minutes."""
        return [words for kind, words in STATE_WORDS.items() if self.hw_counts.get((gpu, kind))]

    def state_name(self, gpu: int) -> ChainState:
        """The GPU's chaining state in one word: NO_DATA until the detector has judged it. The
        dashboard, snapshots and /metrics all call this."""
        state = self.states.get(gpu)
        return state.state if state is not None else "NO_DATA"

    def busy_share(self, gpu: int) -> float | None:
        """The busy share to show for `gpu`: the live window value, else the one its last state
        change carried (before the first refresh). Header, snapshot and /metrics all use this."""
        window = self.windows.get(gpu)
        if window is not None and window.busy_fraction is not None:
            return window.busy_fraction
        state = self.states.get(gpu)
        return state.busy_fraction if state is not None else None
