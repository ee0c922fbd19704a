"""RuntimeStatus: what the machinery itself is doing (sources, logs, recording, pollers).

`gapwatch.engine.runtime.Runtime.status()` builds it; the dashboard footer, `record`'s closing
lines and the Prometheus collector read it. It is its own module so that readers take the type
without importing the composition root.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gapwatch.base.watch import ThreadHealth, thread_label
from gapwatch.core.models import LinkState
from gapwatch.core.prover_watch import RunningProof
from gapwatch.engine.sampler import LatenessStats
from gapwatch.sinks.recorder import RecordingStatus
from gapwatch.sources.copytrace import CopyTraceStatus
from gapwatch.sources.cuzk_status import PollerStatus


@dataclass(frozen=True)
class RuntimeStatus:
    """What the dashboard footer (and `record`'s summary) shows about the machinery itself."""

    source: str
    period_ms: float
    lateness: LatenessStats | None
    gpu_sources: dict[int, str]
    logs: dict[str, str] = field(default_factory=dict)
    log_counters: dict[str, int] = field(default_factory=dict)
    recording_path: str | None = None
    #: The recording's health (writing / failing with its error / closed, records dropped);
    #: None without a recording. The footer shows `recording.error` while it is failing.
    recording: RecordingStatus | None = None
    prometheus_address: str | None = None
    done: bool = False
    #: The copy trace's reader (None when `--copytrace` is off).
    copytrace: CopyTraceStatus | None = None
    #: The latest PCIe link reading under traffic per GPU (a trained-down link changes what
    #: "% of link" means: the footer says so).
    links: dict[int, LinkState] = field(default_factory=dict)
    #: The GPU source's slow-reading counters (`NvmlSource.counters`: /proc readings and their
    #: problems, link reads); empty for other sources.
    source_counters: dict[str, int] = field(default_factory=dict)
    #: One per polled status URL (cuzk `/status`), in the order given.
    provers: list[PollerStatus] = field(default_factory=list)
    #: Where the simulated prover serves its own status, when it does.
    sim_status_url: str | None = None
    #: The source's blind spots (NVML blocked) in words: all of them summed up, and the latest
    #: while it is recent (the footer's alert); None when there is none.
    blind: str | None = None
    blind_recent: str | None = None
    #: Where a replay is (`ReplayDriver.position_words`); None for a live source.
    replay: str | None = None
    #: The worst prover warning or error while recent (a late PoSt, a restart, an error, a
    #: lost GPU job; `SeriesStore.prover_alert`), in words: the footer's alert. None when there
    #: is none.
    prover_alert: str | None = None
    #: The job that alert is of (a proof's, a lost GPU job's; None: none, or the alert is of
    #: no job): the footer leaves a late proof's running line to that alert.
    prover_alert_job_id: str | None = None
    #: The latest GPU error while recent (an XID, uncorrected ECC errors, a GPU lost;
    #: `runtime.gpu_error_alert`), in words: the footer's alert. None when there is none.
    gpu_error_alert: str | None = None
    #: The proofs the prover's watcher sees in flight (a PoSt against its deadline), the most
    #: of its deadline used first.
    running_proofs: list[RunningProof] = field(default_factory=list)
    #: Every thread the runtime started, with its deaths (the footer's alert, /metrics).
    threads: list[ThreadHealth] = field(default_factory=list)

    def dead_threads_text(self) -> str | None:
        """`sampler died 2x (TypeError(...)), restarted` for every thread that ever died; None
        when none did."""
        parts = [f"{thread_label(t.name)} died {t.deaths}x ({t.last_error}), "
                 f"{'restarted' if t.alive else 'DEAD'}" for t in self.threads if t.deaths]
        return "; ".join(parts) or None
