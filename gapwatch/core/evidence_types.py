"""The evidence a gap carries, one struct per kind: host maxima, the prover's log events, the
copies (traced or inferred), the prover's snapshots, the facts its prover package decided about
it (`ProverGapFacts`); and the link seen trained down.

Who calls it: `gapwatch.core.models.Gap` (its fields), the evidence buffer that fills them
(`gapwatch.core.evidence`), the explainer and the hints that read them, and every output that
shows a gap (report, snapshots, the dashboard, the Perfetto export). The JSON of a gap (report,
snapshots, recordings) is the same as when these were dicts: each struct encodes to the same
keys in the same order, and a key a gap never had (the host maxima of a gap without evidence,
the traced figures of an untraced gap) is `UNSET`, left out of the JSON rather than `null`.
`known` reads an UNSET value as None. Frozen values, `gc=False` (no cycles), decoded leniently
from recordings: a key they do not name is ignored, a missing one is UNSET or its default.
`ProverGapFacts` is the one left out of a gap's JSON documents (`gapwatch.core.codec.gap_json`):
what it holds is said there in words, `prover_evidence`.
"""

from __future__ import annotations

from typing import Literal, TypeVar

from msgspec import UNSET, Struct, UnsetType

from gapwatch.core.bounds import Count

_T = TypeVar("_T")


def known(value: _T | UnsetType) -> _T | None:
    """An evidence value, or None where the gap never had it (UNSET)."""
    return None if isinstance(value, UnsetType) else value


class HostEvidence(Struct, frozen=True, gc=False):
    """The host's maxima during a gap (None: no reading); all UNSET: the gap had no evidence."""

    mem_used_pct_max: float | None | UnsetType = UNSET
    psi_mem_some_share_max: float | None | UnsetType = UNSET
    psi_mem_some_avg10_max: float | None | UnsetType = UNSET
    major_faults_per_s_max: float | None | UnsetType = UNSET
    mem_bandwidth_bytes_per_s_max: float | None | UnsetType = UNSET
    #: Swap in use (SwapTotal - SwapFree): 0 where the box has none or uses none, which tells
    #: major faults apart: file pages read from disk, not pages swapped back in. UNSET in
    #: a gap line of an older recording (it reads back as it was written).
    swap_used_bytes_max: float | None | UnsetType = UNSET
    #: Runnable tasks waiting for a CPU (PSI): the mean over the gap's host samples of the
    #: share of each interval (not the largest: it is bursty, 0.4-0.75 a tick on a loaded VM).
    #: UNSET in a gap line of an older recording.
    psi_cpu_some_share_mean: float | None | UnsetType = UNSET


class EventEvidence(Struct, frozen=True, gc=False):
    """A prover log event as a gap keeps it: its time, name, ids, warning, the start of its line,
    and the job it is of (`LogEvent.job_id`, as the log gives it)."""

    t_s: float
    name: str
    worker: int | None = None
    partition: int | None = None
    warning: str | None = None
    raw: str = ""
    #: The job the event is of (a partition's parent job, e.g. cuzk's `porep-1000-3`): a
    #: partition number alone names no partition once several jobs are in flight. UNSET (no
    #: key) where the line named none, and in a gap line of an older recording, which then
    #: reads back as it was written.
    job_id: str | UnsetType = UNSET
    #: True: the line is the gap's own GPU taking a partition whose synthesis warned
    #: `is_pinned=false` earlier (its first line naming a GPU since; the warning may be older
    #: than the gap's window: `EvidenceBuffer.unpinned_waiting`): the partition that GPU was
    #: uploading. UNSET on every other line, and in a gap line of an older recording.
    synthesised_unpinned: bool | UnsetType = UNSET


class CopyKindEvidence(Struct, frozen=True, gc=False):
    """The copies of one host memory kind in a gap's window: how many, their bytes (and per
    direction), their own rate (bytes / summed copy time), how long some copy of the kind ran in
    the window (`busy_s`) and in the gap (`in_gap_s`), on which streams; and what of them moved
    during the gap itself (`in_gap_bytes`, `in_gap_copy_s`): the window's figures count the
    copies of the `evidence_before_s` before the gap too, which a hint says only as before it."""

    count: int
    bytes: int
    h2d_bytes: int
    d2h_bytes: int
    copy_s: float
    streams: list[int]
    bytes_per_s: float | None
    busy_s: float
    in_gap_s: float
    #: The bytes the copies moved during the gap (each copy's by the share of its time inside
    #: the gap; one of no duration inside it, whole) and their summed copy time inside it. UNSET
    #: in a gap line of an older recording (it reads back as it was written).
    in_gap_bytes: int | UnsetType = UNSET
    in_gap_copy_s: float | UnsetType = UNSET

    @property
    def in_gap_bytes_per_s(self) -> float | None:
        """The copies' own rate during the gap (bytes / copy time inside it); None: no copy
        time inside it, or not known."""
        moved, took = known(self.in_gap_bytes), known(self.in_gap_copy_s)
        return moved / took if moved is not None and took else None


class ProcessEvidence(Struct, frozen=True, gc=False):
    """A process on the gap's GPU, as /proc read it (a hint: registered memory is invisible)."""

    pid: int
    name: str
    pinned_bytes: int | None
    heap_bytes: int | None


class CopiesEvidence(Struct, frozen=True, gc=False):
    """What the copy trace saw in a gap's window (`traced` True: every field), or, without a
    live trace, the memory kind inferred and from what (`traced` False: the first three and
    `processes`); all UNSET: the gap had no evidence."""

    traced: bool | UnsetType = UNSET
    #: "pageable", "pinned", "other", "mixed" (no kind ran 80 % of the copy time), or None.
    memory_kind: str | None | UnsetType = UNSET
    memory_kind_source: str | UnsetType = UNSET
    window_start_s: float | UnsetType = UNSET
    window_end_s: float | UnsetType = UNSET
    by_kind: dict[str, CopyKindEvidence] | UnsetType = UNSET
    streams: list[int] | UnsetType = UNSET
    pids: list[int] | UnsetType = UNSET
    pinned_recent_bytes_per_s: float | None | UnsetType = UNSET
    processes: list[ProcessEvidence] | UnsetType = UNSET
    #: The gap's start inside the window (`window_start_s` is `evidence_before_s` before it):
    #: how long before the gap the window's copies reach. UNSET in a gap line of an older
    #: recording, and without a trace.
    gap_start_s: float | UnsetType = UNSET

    def kinds(self) -> dict[str, CopyKindEvidence]:
        """The copies by memory kind ({} untraced)."""
        return known(self.by_kind) or {}

    def process_list(self) -> list[ProcessEvidence]:
        """The processes on the GPU ([] when none was read)."""
        return known(self.processes) or []


class ProverState(Struct, frozen=True, gc=False):
    """A prover status snapshot as a gap keeps it for one GPU: the stage counts of its pipeline,
    its workers' states in letters, the cause the snapshot gave and the capacity judged by."""

    t_s: float
    prover: str
    cause: str | None = None
    workers: str = ""
    pending: int | None = None
    synthesizing: int | None = None
    synth_done: int | None = None
    gpu: int | None = None
    #: Added after the first recordings with snapshots: UNSET where a recording lacks them, so
    #: that a gap read back is written back as it was.
    synthesis_workers: int | None | UnsetType = UNSET
    synthesis_workers_from: str | None | UnsetType = UNSET
    synthesis_active: int | None = None
    synthesis_max: int | None = None
    memory_available_bytes: int | None | UnsetType = UNSET
    memory_total_bytes: int | None | UnsetType = UNSET
    queue_depth: int | None = None


#: What said a gap's prover cause (`ProverGapFacts.said_by`).
CauseSaidBy = Literal["status", "log", "processes"]


class ProverGapFacts(Struct, frozen=True, gc=False, omit_defaults=True):
    """What the prover package decided about one gap, as typed facts: what its advice reads
    back (e.g. `gapwatch.cuzk.advice`). Each is set where the package decides it, beside the
    words that say it to people in `prover_evidence`; nothing reads those words back for a fact
    (a log line quoted into them, a job id, an error text, could say anything). A gap made
    before these existed has none (`Gap.prover_facts` UNSET), and none is read from its words:
    see there. Only the facts set are encoded (`omit_defaults`)."""

    #: The monolithic job (proved whole, not in partitions: e.g. cuzk's PoSt, a batch) the gap
    #: waited on, by the kind its log names (cuzk's TIMELINE `kind=porep-c2`, a monolithic
    #: worker's `proof_kind`); None: the gap waited on none.
    monolithic_kind: str | None = None
    #: That job was a proof a monolithic worker proved in one call, synthesis then GPU (e.g.
    #: cuzk with its pipeline off), not a pipelined monolithic job.
    one_call: bool = False
    #: The gap waited on a memory-budget request larger than the whole budget (it can never be
    #: granted).
    over_budget: bool = False
    #: The gap began with the pipeline empty, and the prover's batch collector held its new
    #: request for part of it (waiting for a batch to fill).
    batch_held: bool = False
    #: Of such a gap, how its new work was started, as the gap's own prover daemon ran: all at
    #: once by the free synthesis workers (`new_work_at_once`), or paced by a dispatch pacer
    #: whose queue target this is (`new_work_pacer_target`); neither: not said.
    new_work_at_once: bool = False
    new_work_pacer_target: Count | None = None
    #: The index in `prover_evidence` of the line that says whether the pinned pool churned
    #: before its failures (its churn, or that it is not known); None: no such line. An index
    #: into that list as the prover package made it: nothing may reorder or cut the list
    #: after (nothing does: `Gap.prover_evidence` is passed on whole).
    pool_churn_line: Count | None = None
    #: The partitions queued for the GPU at the gap's start were never picked up before the
    #: data ended (a recording or replay read to its end): the prover took no more work.
    queued_at_end: bool = False
    #: What said the gap's prover cause: the prover's /status ("status"), its log ("log"), or
    #: the GPU's processes, /proc and NVML's list ("processes"); None: the gap has no prover
    #: cause (or was made before this was kept). The report's GPUs line names it.
    said_by: CauseSaidBy | None = None
    #: The gap's restart is a process on its GPU replaced by a new pid of its name, which /proc
    #: alone showed, the process not known to be the prover's (not under its name: the H200
    #: stand-in is `python3`): its advice says what /proc showed, never the prover's own
    #: restart procedure.
    replaced_process: bool = False
    #: The gap is the log's dispatch stall (partitions queued through it, not taken) with no
    #: worker's holds read showing a GPU worker free (`HeldOver.free_shown`): none read at all,
    #: or only fewer workers seen holding work than the GPU has. Its words never say a worker
    #: was free. False where one was shown, or `/status` showed a worker idle.
    worker_free_unshown: bool = False


class LinkDown(Struct, frozen=True, gc=False):
    """A GPU's link as last seen trained below its maximum while data moved."""

    gen: int | None
    width: int | None
    max_gen: int | None
    max_width: int | None
    bytes_per_s: float | None


#: The evidence of a gap that had none (no accumulator): empty objects in its JSON.
NO_HOST = HostEvidence()
NO_COPIES = CopiesEvidence()
