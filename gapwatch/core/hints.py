"""Hints: the plain words that say why a GPU idled, from what the detector saw during the gap.

Who calls it: the explainer (`gapwatch.core.explain`, which puts a hint together from these
phrases for every published gap version); the snapshot summary (`hint_cause`, `link_text`), the
sampler and the dashboard (the link's words). Pure functions over plain values.

A hint leads with the memory behind the copies when something names it (the copy trace saw the
memory kind, or the prover's log warned: `is_pinned=false`, a pinned-pool fallback): that is the
one fact a user needs, and the first thing lost when a pane or a table column is narrow. Then
what the GPU did and what PCIe did, then the likeliest cause, then host pressure; phrases are
joined by `HINT_SEP` (a host stall the prover gave a cause leads with that cause instead:
`gapwatch.core.explain.hint_of`). RX is what the GPU receives (host-to-device, "H2D"), TX what
it sends (D2H).

Partitions are named with their job (`porep-1000-3 partitions 6, 7, 8`, `parts_words`): several
jobs are in flight at once, and a number alone named another job's partition than the one the
GPU was on. At most `MAX_PARTS_NAMED`, each job id cut past `JOB_CHARS`: a hint is one line.
A `pcie_starved` gap names the partitions its own GPU took in its window whose synthesis warned
`is_pinned=false` (`EventEvidence.synthesised_unpinned`: the uploads the GPU was starved on),
not the warnings in its window: a partition warns when it is synthesised, ~20 s before a GPU
takes it from a queue all GPUs share, so those were still queued, and with several GPUs mostly
other GPUs' work. Only where no such upload is known does the hint fall back on the warnings.
Warnings the prover says it leaves unpinned by design (`UnpinnedByDesign`: cuzk's first
syntheses of a run) are said in its words, not as pageable memory to look into.

`hint_cause` gives the cause a gap's log names, without that gap's figures (durations, rates,
partition numbers): the snapshot summary groups its gaps by kind and it, so 15 near-identical
hints become one line with a count.

Copies, /proc and the link: a statement only where something measured it (the copy trace saw the
copy's memory kind), a question or a hint everywhere else, and the hint says which ("memory kind
inferred from rate: no copy trace"; /proc readings are "a hint", since memory registered with
cudaHostRegister is invisible there).
"""

from __future__ import annotations

from typing import Final

from gapwatch.core import fmt
from gapwatch.core.evidence_types import (
    CopiesEvidence,
    CopyKindEvidence,
    EventEvidence,
    HostEvidence,
    LinkDown,
    ProcessEvidence,
    known,
)
from gapwatch.core.models import POOL_FALLBACK_WARNINGS
from gapwatch.core.prover import UnpinnedByDesign

# Host pressure thresholds above which the hint mentions the host (chosen to flag real pressure,
# not background noise: PSI "some" of a few % is common on a busy box).
PSI_SHARE_PRESSURE: Final = 0.10
PSI_AVG10_PRESSURE: Final = 10.0
MEM_USED_PRESSURE_PCT: Final = 90.0
MAJOR_FAULTS_PRESSURE_PER_S: Final = 100.0
#: CPU PSI "some" share, its mean over the gap, above which the hint says runnable tasks waited
#: for a CPU: a loaded box's runnable threads wait a little most of the time, in bursts (this
#: 2-core VM under a test run: 0.4-0.75 a tick); a fifth of the gap is cores oversubscribed.
CPU_PSI_SHARE_PRESSURE: Final = 0.20
#: Between two phrases of a hint (the dashboard cuts a hint only here when a pane is short).
HINT_SEP: Final = "; "



#: A host stall's memory words: its own evidence window saw a partition synthesised unpinned,
#: or the pinned pool fail (`memory_phrases`, `hint_cause`).
PAGEABLE_SEEN_WORDS = "pageable buffers seen (is_pinned=false)"
#: A host stall the prover gave no cause, in its hint and its snapshot group alike: the advice
#: over it says "the GPU waited on the host (no cause known)" (`gapwatch.cuzk.advice`). What
#: the host held it on is the prover's to say from its facts at the gap's time (its cause, which
#: then leads the hint): a synthesis line in the gap's window told none. "synthesis did not
#: keep up with the GPU?" was said wherever one was, of the H100 pageable run's last gap with two
#: partitions synthesised and queued for the GPU before it.
NO_CAUSE_WORDS: Final = "no cause known: synthesis, a lock or the scheduler?"


#: A partition as a hint names it: its job (None: the line named none) and its number.
Part = tuple[str | None, int]
#: Partitions a hint names (the rest said as " ..."), and characters of a job id it keeps: a
#: hint is one line on the dashboard, and a job id is the log's text (cuzk's are ~20).
MAX_PARTS_NAMED: Final = 3
JOB_CHARS: Final = 40


def _partitions(events: list[EventEvidence], warning: str,
                since_s: float | None = None, earlier: bool = False) -> list[Part]:
    """Partitions named by the events carrying `warning`, each with its job, first seen first.
    With `since_s`, only those of the gap's own evidence window (`earlier` False) or only those
    before it (True)."""
    seen: list[Part] = []
    for e in events:
        p = e.partition
        if e.warning != warning or p is None:
            continue
        if since_s is not None and (e.t_s < since_s) != earlier:
            continue
        part = (known(e.job_id), p)
        if part not in seen:
            seen.append(part)
    return seen


def _uploads(events: list[EventEvidence]) -> list[Part]:
    """Partitions the gap's own GPU took in its window that were synthesised unpinned, each
    with its job, first taken first."""
    seen: list[Part] = []
    for e in events:
        p = e.partition
        if e.synthesised_unpinned is True and p is not None:
            part = (known(e.job_id), p)
            if part not in seen:
                seen.append(part)
    return seen


def _pool_failed(events: list[EventEvidence], since_s: float | None = None) -> bool:
    """Whether an event says the pinned pool failed (its fallback to pageable memory, or the
    `cudaHostAlloc` behind it); with `since_s`, only in the gap's own evidence window."""
    return any(e.warning in POOL_FALLBACK_WARNINGS
               and (since_s is None or e.t_s >= since_s) for e in events)


def _pageable_seen(events: list[EventEvidence], since_s: float | None) -> bool:
    """A host stall's pageable words (`PAGEABLE_SEEN_WORDS`): a partition unpinned, or the
    pinned pool failing, in the gap's own evidence window (from `since_s`; None: all)."""
    return bool(_partitions(events, "unpinned", since_s)) or _pool_failed(events, since_s)


def _job(job: str) -> str:
    """A job id as a hint says it: as the log gave it, cut past `JOB_CHARS`, made visible."""
    return fmt.visible(job if len(job) <= JOB_CHARS else job[:JOB_CHARS - 1] + "…")


def parts_words(ps: list[Part]) -> str:
    """`porep-1000-3 partitions 6, 7, 8`, `porep-1000-1 partition 9 and porep-1000-2
    partitions 0, 1`: partitions with their jobs (several jobs are in flight at once, so a
    number alone names none), grouped by job in the order first seen, at most
    `MAX_PARTS_NAMED` (" ..." for more). A partition whose line named no job is said by its
    number alone."""
    groups: dict[str | None, list[int]] = {}
    for job, p in ps[:MAX_PARTS_NAMED]:
        groups.setdefault(job, []).append(p)
    said = [(f"{_job(job)} " if job is not None else "")
            + ("partition " if len(nums) == 1 else "partitions ")
            + ", ".join(str(p) for p in nums) for job, nums in groups.items()]
    return fmt.and_list(said) + (" ..." if len(ps) > MAX_PARTS_NAMED else "")


def _plural(ps: list[Part]) -> str:
    return parts_words(ps) + (" was" if len(ps) == 1 else " were")


def host_pressure(host: HostEvidence) -> str:
    """Plain words for the host pressure seen during a gap, or "" when there was none."""
    bits = []
    share = known(host.psi_mem_some_share_max)
    avg10 = known(host.psi_mem_some_avg10_max)
    if share is not None and share >= PSI_SHARE_PRESSURE:
        bits.append(f"tasks stalled on memory {share * 100:.0f} % of the time (PSI)")
    elif avg10 is not None and avg10 >= PSI_AVG10_PRESSURE:
        bits.append(f"memory PSI some avg10 {avg10:.0f} %")
    used = known(host.mem_used_pct_max)
    if used is not None and used >= MEM_USED_PRESSURE_PCT:
        bits.append(f"host memory {used:.0f} % used")
    faults = known(host.major_faults_per_s_max)
    if faults is not None and faults >= MAJOR_FAULTS_PRESSURE_PER_S:
        bits.append(f"{faults:.0f} major faults/s {_faults_from(known(host.swap_used_bytes_max))}")
    bw = known(host.mem_bandwidth_bytes_per_s_max)
    if bits and bw is not None:
        bits.append(f"host memory bandwidth {fmt.rate(bw)}")
    cpu = known(host.psi_cpu_some_share_mean)
    if cpu is not None and cpu >= CPU_PSI_SHARE_PRESSURE:
        bits.append(f"runnable tasks waited for a CPU {cpu * 100:.0f} % of the time (PSI)")
    return ", ".join(bits)


def _faults_from(swap_used_bytes: float | None) -> str:
    """Where major faults read their pages from, as far as swap tells: with no swap in use
    they are file pages (a program's code, a mapped file read for the first time, such as
    cuzk's SRS, or pages the page cache let go), never swapping (seen on the H100 host, no
    swap, as a load generator exited: 6,599/s, once said "swapping?")."""
    if swap_used_bytes is None:
        return "(pages read from disk)"
    if swap_used_bytes == 0:
        return "(no swap in use: file pages read from disk)"
    return f"(swapping? {fmt.size(swap_used_bytes)} of swap in use)"


#: A pinned-pool fallback, in one phrasing. pinned_pool.rs: the pool grows on demand, outside
#: the memory budget, so a checkout fails only when pinning a new buffer (cudaHostAlloc) fails.
POOL_FALLBACK_WORDS = ("pinned pool checkout failed (cudaHostAlloc could not pin a new buffer), "
                       "fell back to pageable memory")


def activity_phrase(
    kind: str, duration_s: float, is_open: bool, confidence: str, rx: float | None,
    tx: float | None, link_bytes_per_s: float, link_down: LinkDown | None,
    quiet_below: float | None,
) -> str:
    """What the GPU did and what PCIe did meanwhile (the dominant direction)."""
    so_far = " so far" if is_open else ""
    idle = f"SMs idle {duration_s:.1f} s{so_far}"
    if confidence == "low":
        idle = f"GPU idle {duration_s:.1f} s{so_far} (utilization.gpu only)"
    if kind == "unknown":
        return f"{idle}; PCIe not measured, cause unknown"
    direction, rate = ("H2D", rx or 0.0) if (rx or 0.0) >= (tx or 0.0) else ("D2H", tx or 0.0)
    if kind == "host_stall":
        # The kind says PCIe was quiet for most of the gap; a burst can lift the average above
        # the quiet rate, and "quiet (2.6 GB/s)" would contradict itself.
        if quiet_below is not None and rate >= quiet_below:
            quiet = f"PCIe quiet most of the time ({fmt.rate(rate)} on average)"
        else:
            quiet = f"PCIe quiet ({fmt.rate(rate)})"
        return f"{idle} with {quiet}: the GPU waited on the host"
    return (f"{idle} while {direction} ran at {fmt.rate(rate)} "
            f"{link_words(rate, link_bytes_per_s, link_down)}")


#: What the first reading after a hole showed, as a gap's hint says it (`hole_phrase`).
AFTER_HOLE_WORDS: Final[dict[str | None, str]] = {
    "busy": "; the GPU worked again at the first reading after it",
    "idle": "; the first reading after it was idle again, the idle went on",
    None: "",
}


def hole_phrase(hole_after_s: float, read_after_hole: str | None = None) -> str:
    """A gap a hole in the data cut: where its end comes from, that the hole is not idle time
    (the GPU may have worked in it; busy after it is what makes the gap a gap), and what the
    first reading after the hole showed (`Gap.read_after_hole`; None: not known, nothing
    said). It said "the GPU worked again after it" of every hole: of a restart's on the H200
    too, whose next reading was idle, the next gap starting there."""
    return (f"then no readings for {hole_after_s:.1f} s (a hole in the data: the gap ends at its "
            f"last idle reading{AFTER_HOLE_WORDS.get(read_after_hole, '')})")


def _by_design(events: list[EventEvidence], since_s: float | None,
               by_design: UnpinnedByDesign | None) -> UnpinnedByDesign | None:
    """`by_design` where the gap's own `is_pinned=false` warnings are all ones the prover
    leaves unpinned by design and its pinned pool did not fail in the window (a failure never
    is); else None."""
    if by_design is None or _pool_failed(events, since_s):
        return None
    own = [e for e in events if e.warning == "unpinned" and e.partition is not None
           and (since_s is None or e.t_s >= since_s)]
    return by_design if own and all(by_design.holds(e.t_s, e.name) for e in own) else None


def memory_phrases(kind: str, events: list[EventEvidence], traced: CopiesEvidence | None,
                   since_s: float | None, by_design: UnpinnedByDesign | None = None,
                   is_open: bool = False) -> list[str]:
    """The memory behind the copies, when something names it: the copy trace (measured), the
    prover's warnings (`is_pinned=false`, a pinned-pool fallback). Warnings the prover says it
    leaves unpinned by design (`by_design`: e.g. cuzk's first syntheses of a run) are said in
    its words, not as pageable memory to look into."""
    if kind == "unknown":
        return []
    uploaded = _uploads(events)
    unpinned = _partitions(events, "unpinned", since_s)
    design = _by_design(events, since_s, by_design)
    # The GPU's own uploads (`_uploads`) where known, else the window's warnings.
    said = (f"{_plural(uploaded)} synthesised with is_pinned=false, then taken by this GPU"
            if uploaded else f"{_plural(unpinned)} synthesised with is_pinned=false"
            if unpinned else "")
    if traced is not None:
        # Measured: the copy trace saw each copy's memory kind. The log's warnings stay as
        # facts (which partitions), no longer as the question they were without the trace.
        out = [traced_copy_words(traced, kind, is_open)]
        if said and kind == "pcie_starved":
            why = f": {design.words}" if design is not None else ""
            out.append(f"{said}{why}")
        return out
    if kind == "pcie_starved":
        if said:
            why = design.words if design is not None else "a/b/c in pageable memory?"
            return [f"{said}: {why}"]
        earlier = _partitions(events, "unpinned", since_s, earlier=True) \
            if since_s is not None else []
        if earlier:
            return [f"is_pinned=false seen earlier in the run (last: {parts_words(earlier[-1:])}"
                    "): a/b/c in pageable memory?"]
        if _pool_failed(events):
            return [POOL_FALLBACK_WORDS]
    if kind == "host_stall" and _pageable_seen(events, since_s):
        # Only the gap's own: PCIe was quiet, so no copy ran slow in it; a partition unpinned
        # minutes before (cuzk's first wave always is, its pinned pool not yet grown) said
        # "pageable buffers seen" on every host stall of the run, before the prover's own
        # cause (a batch wait, a restart).
        if design is not None:
            return [f"is_pinned=false: {design.words}"]
        return [PAGEABLE_SEEN_WORDS]
    return []


#: A transfer_bound gap's fact, and the question the core asks of it where no prover said
#: more (`cause_phrases`): in words for any CUDA workload. It asked "is the next partition's
#: upload chained behind the other worker's kernels?", cuzk's words, of every workload, and of
#: cuzk's gaps beside an advice that answers it no (one mutex per GPU over the copies and the
#: kernels: the prover package's words stand there instead, `ProverView.words`).
NOT_OVERLAPPED_WORDS: Final = "copies at full speed but not overlapped with compute"
NOT_OVERLAPPED_QUESTION: Final = ("does the workload copy and compute in turn (one stream, or "
                                  "one lock held over both)?")


def cause_phrases(kind: str, events: list[EventEvidence], traced: bool, memory_said: bool,
                  prover_said: bool) -> list[str]:
    """The likeliest cause, as a question where nothing measured it. `prover_said`: the
    prover gave the gap a cause or words of its own (`ProverView`): they follow, in place of
    the question (a host stall's, a transfer_bound gap's)."""
    if kind == "pcie_starved" and not traced and not memory_said:
        return ["a slow copy: pageable memory or host memory-bandwidth contention? "
                "(memory kind inferred from rate: no copy trace)"]
    if kind == "transfer_bound" and not traced:
        return [NOT_OVERLAPPED_WORDS if prover_said
                else f"{NOT_OVERLAPPED_WORDS}: {NOT_OVERLAPPED_QUESTION}"]
    if kind == "host_stall" and not prover_said:  # else the prover's own words follow
        return [NO_CAUSE_WORDS]
    return []


def prover_leads(kind: str, prover_words: str) -> bool:
    """Whether what is said of a gap leads with the prover's cause (`prover_words`, "" for
    none): a host stall the prover gave a cause (a restart, a batch wait). PCIe was quiet, so
    no copy's memory was what the GPU waited on, and the prover's words stand instead of a
    guess. The one rule of a gap's hint (`explain.hint_of`) and of its group in the snapshot's
    summary (`hint_cause`)."""
    return kind == "host_stall" and bool(prover_words)


def hint_cause(kind: str, events: list[EventEvidence], since_s: float | None = None,
               prover_words: str = "") -> str:
    """The cause of a gap as its log names it, without that gap's figures: the same words for
    every gap of a kind that idled for the same reason (what the snapshot summary groups by).
    `since_s`: the start of the gap's own evidence window, as `memory_phrases` reads it (a host
    stall's pageable buffers are its own window's). `prover_words`: the prover's cause of the
    gap, without its figures ("" for none); where it leads the gap's hint (`prover_leads`) it
    leads here, the memory after it, as in the hint: summary.md said "synthesis did not keep up
    with the GPU?" of gaps over a restart whose hints (and "What to change") said the restart.
    A host stall without one is `NO_CAUSE_WORDS`, as its hint says."""
    if prover_leads(kind, prover_words):
        return prover_words + (f"; {PAGEABLE_SEEN_WORDS}" if _pageable_seen(events, since_s)
                               else "")
    unpinned = _partitions(events, "unpinned") or _uploads(events)
    failed = _pool_failed(events)
    if kind == "unknown":
        return "PCIe not measured, cause unknown"
    if kind == "pcie_starved":
        if unpinned:
            return "partitions synthesised with is_pinned=false: a/b/c in pageable memory?"
        if failed:
            return POOL_FALLBACK_WORDS
        return "a slow copy: pageable memory or host memory-bandwidth contention?"
    if kind == "transfer_bound":
        return NOT_OVERLAPPED_WORDS
    return NO_CAUSE_WORDS + (f"; {PAGEABLE_SEEN_WORDS}" if _pageable_seen(events, since_s)
                             else "")


# -- the copy trace, /proc and the link (issue 13) -------------------------------------------

def _streams(ids: list[int]) -> str:
    if not ids:
        return "no stream"
    shown = ", ".join(str(i) for i in ids[:3]) + (" ..." if len(ids) > 3 else "")
    return f"stream{'s' if len(ids) > 1 else ''} {shown}"


def copied_words(n_bytes: float, memory: str, bytes_per_s: float | None, where: str = "") -> str:
    """`7.5 GiB copied from pageable host memory during the gap at 3.8 GB/s`: the one phrasing
    of what the copy trace saw move (`memory`: pageable, pinned, or other; `where`: when, as
    `traced_copy_words` says it)."""
    return (f"{fmt.size(n_bytes)} copied from {memory} host memory{where} at "
            f"{fmt.rate(bytes_per_s)}")


#: The memory kinds of a gap's copies, in the order a hint names them.
_COPY_KINDS = ("pageable", "pinned", "other")
#: Of a kind's copies in a window, the share of their bytes outside the gap below which all of
#: them are the gap's (`_all_in_gap`): a copy's bytes split by time leave float crumbs.
_OUTSIDE_NONE = 1e-3


def _in_gap(e: CopyKindEvidence) -> bool:
    """Some copy of this kind ran during the gap (its time inside it, or bytes moved in it)."""
    return e.in_gap_s > 0 or bool(known(e.in_gap_bytes))


def _all_in_gap(e: CopyKindEvidence) -> bool:
    """Every copy of this kind in the window ran inside the gap: the window's figures are the
    gap's (a gap line of an older recording, its bytes in the gap not known, never is)."""
    moved = known(e.in_gap_bytes)
    return moved is not None and e.bytes - moved <= e.bytes * _OUTSIDE_NONE


def before_words(copies: CopiesEvidence) -> str:
    """`the 2 s before it`: the stretch of the evidence window before the gap, from the window's
    start and the gap's (`CopiesEvidence.gap_start_s`); where that is not known, `just before
    it`. Said by `traced_copy_words` and the gap's detail (`gapwatch.ui.gap_detail`)."""
    start, lo = known(copies.gap_start_s), known(copies.window_start_s)
    if start is None or lo is None or start <= lo:
        return "just before it"
    return f"the {round(start - lo, 1):g} s before it"


def _kinds_words(present: list[tuple[str, CopyKindEvidence]], during: bool, where: str) -> str:
    """`7.5 GiB copied from pageable host memory<where> at 3.5 GB/s and 1.0 GiB from pinned host
    memory at 54.0 GB/s`: each kind in the same words ("copied" said once), with what moved
    during the gap and its rate there (`during`), else the window's bytes and the copies' own
    rate."""
    def figures(e: CopyKindEvidence) -> tuple[float, float | None]:
        if during:
            return float(known(e.in_gap_bytes) or 0), e.in_gap_bytes_per_s
        return float(e.bytes), e.bytes_per_s

    (name, first), rest = present[0], present[1:]
    moved, rate = figures(first)
    words = copied_words(moved, name, rate, where)
    for name, e in rest:
        moved, rate = figures(e)
        words += f" and {fmt.size(moved)} from {name} host memory at {fmt.rate(rate)}"
    return words


def traced_copy_words(copies: CopiesEvidence, kind: str, is_open: bool = False) -> str:
    """What the copy trace saw, as a statement (`copies.traced` is True): what moved during the
    gap, of the memory kind that ran most of the copy time (each kind where none did); the
    window's copies before the gap said as before it (`before_words`), never as the gap's. A
    gap no traced copy ran in says so first, then what ran before it: a host stall's "PCIe
    quiet" then stands beside no copy of its own. A gap line of an older recording (what moved
    in the gap not known) says the window's figures as the gap's and the time before it.
    `is_open`: the gap still runs, and a copy is traced as it ends: one running now is not in
    the trace yet, so none is "another process's traffic?" (the demo's open starved gaps said
    so of their own copy still running)."""
    by = copies.kinds()
    mk = known(copies.memory_kind)
    other_process = kind in ("pcie_starved", "transfer_bound") and not is_open
    yet = " yet (copies are traced as they end)" if is_open else ""
    if mk is None or not by:
        if other_process:
            return "no traced copy in or just before the gap: another process's traffic?"
        return f"no traced copy in or just before the gap{yet}"
    # The memory kind is that of the copies that ran in the gap where some did
    # (`evidence.summarise_copies`): a kind named here ran in it, or none did.
    present = [(mk, by[mk])] if mk in ("pageable", "pinned") and mk in by else [
        (name, by[name]) for name in _COPY_KINDS if name in by]
    during = [(name, e) for name, e in present if _in_gap(e)]
    before = before_words(copies)
    one = present[0][1] if len(present) == 1 else None
    on = f" on {_streams(one.streams)}" if one is not None else ""
    if not during:
        # Every copy of the window ended before the gap: none is the gap's.
        head = "no traced copy during the gap" + (
            ": another process's traffic?" if other_process else yet)
        # No "pinned, yet slow" of copies that ended before it (`_kind_words` of no gap kind).
        return f"{head}; {_kinds_words(present, False, f' in {before},')}{on}" + _kind_words(
            copies, mk, "")
    if any(known(e.in_gap_bytes) is None for _, e in during):
        words = _kinds_words(present, False, f" in the gap and {before}") + on
    else:
        words = _kinds_words(during, True, " during the gap")
        if all(_all_in_gap(e) for _, e in present):
            words += on
        elif one is not None:
            words += f" ({fmt.size(one.bytes)} in copies that ran in it and {before},{on})"
        else:
            window = " and ".join(f"{fmt.size(e.bytes)} {name}" for name, e in present)
            words += f" ({window} in copies that ran in it and {before})"
    return words + _kind_words(copies, mk, kind)


def _kind_words(copies: CopiesEvidence, mk: str, kind: str) -> str:
    """What `traced_copy_words` adds after the copies, by the memory kind that ran most of
    their time: beside pageable copies the rate the GPU's pinned ones ran at lately; pinned
    copies of a starved gap ran slow, of a transfer-bound one at full speed."""
    if mk == "pageable":
        pinned_recent = known(copies.pinned_recent_bytes_per_s)
        return f"; pinned copies ran at {fmt.rate(pinned_recent)}" \
            if pinned_recent is not None else ""
    if mk == "pinned" and kind == "pcie_starved":
        return ": pinned, yet slow: link trained down or contended?"
    if mk == "pinned" and kind == "transfer_bound":
        return ": at full speed, but not overlapped with compute"
    return ""


def process_memory_words(processes: list[ProcessEvidence]) -> str:
    """The largest process on the GPU, pinned vs heap, from /proc (a hint), or ""."""
    read = [p for p in processes if p.pinned_bytes is not None or p.heap_bytes is not None]
    if not read:
        return ""
    p = max(read, key=lambda q: (q.pinned_bytes or 0) + (q.heap_bytes or 0))
    pinned, heap = p.pinned_bytes, p.heap_bytes
    name = p.name or f"pid {p.pid}"
    return (f"{name} pinned {fmt.size(pinned or 0)} / heap {fmt.size(heap or 0)} "
            "(/proc, a hint: cudaHostRegister'ed memory counts as heap)")


def link_text(gen: int | None, width: int | None, bytes_per_s: float | None) -> str:
    """`Gen3 x8 (7.9 GB/s)`: a link as trained, or its maximum."""
    shape = fmt.link_shape(gen, width)
    return f"{shape} ({fmt.rate(bytes_per_s)})" if bytes_per_s is not None else shape


def link_trained_down_words(gen: int | None, width: int | None, bytes_per_s: float | None,
                            max_gen: int | None, max_width: int | None,
                            max_bytes_per_s: float | None, moving_bytes_per_s: float) -> str:
    """The warning for a link seen below its maximum generation or width while data moved."""
    return (f"PCIe link at {link_text(gen, width, bytes_per_s)} while moving data "
            f"({fmt.rate(moving_bytes_per_s)}); its maximum is "
            f"{link_text(max_gen, max_width, max_bytes_per_s)}: check the slot, riser and BIOS "
            "PCIe settings. Gap hints now give \"% of max link\" and the trained capacity")


def _share(rate: float, link: float | None) -> str:
    f = fmt.link_fraction(rate, link)
    return f"{f * 100:.0f} %" if f is not None else "n/a %"


def link_words(rate: float, max_link_bytes_per_s: float, link_down: LinkDown | None) -> str:
    """`(N % of link)`, saying which capacity: the maximum, and the trained one when the link
    was seen trained down while data moved."""
    if link_down is None:
        return f"({_share(rate, max_link_bytes_per_s)} of link)"
    cur = link_down.bytes_per_s
    cur_pct = f"{_share(rate, cur)} of it, " if cur else ""
    trained = fmt.link_shape(link_down.gen, link_down.width)
    top = fmt.link_shape(link_down.max_gen, link_down.max_width)
    return (f"({_share(rate, max_link_bytes_per_s)} of max link; the link trained down to "
            f"{trained} = {fmt.rate(cur)}: {cur_pct}max {top})")
