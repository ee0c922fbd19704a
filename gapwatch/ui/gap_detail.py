"""One gap, whole: what the gap table's Enter opens (live, paused or in a replay).

The lines (`gap_detail_lines`, pure, tested as text): the gap in words (when, how long, which
GPU, its kind as an operator reads it, PCIe during it), its hint whole, the evidence (where the
prover said it waited and why), what to change with its payoff (`gapwatch.cuzk.advice`), the
copies by host memory kind (the copy trace, or the memory inferred and from what), the
partitions in flight (the prover's log lines attached to the gap, and its `/status` workers),
host pressure during it, and the prover's log lines around it. The screen (`GapDetailScreen`)
shows them in a scrolling box, following the gap while it is open (`follow`: it grows, it
closes); Esc (or Enter, or q) goes back.

Who calls it: `GapwatchApp` (Enter on the gap table), with the snapshot it shows: a paused view
keeps its snapshot, so the detail is of what is on screen.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gapwatch.core import fmt
from gapwatch.core.evidence_types import CopiesEvidence, known
from gapwatch.core.hints import before_words
from gapwatch.core.models import Gap, GpuSample, LogEvent
from gapwatch.core.payoff import IfClosed, if_closed, samples_link_floor_s
from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.cuzk.advice import advice_lines, advise
from gapwatch.cuzk.prover import view_of
from gapwatch.ui.kinds import gap_words
from gapwatch.ui.toasts import repaint_where_toasts_leave

#: Log lines shown around a gap: this long before its start and after its end, at most this many.
LOG_AROUND_S = 5.0
MAX_LOG_LINES = 40

#: A gap's GPU-Util from which the detail says a GPU-Util dashboard shows it busy (pinned
#: copies with idle SMs read 99-100 %; half is half busy, not busy).
BUSY_ON_GPU_UTIL = 90.0

_HOST_WORDS = {
    "mem_used_pct_max": ("host memory used, max", "{:.0f} %"),
    "psi_mem_some_share_max": ("tasks stalled on memory (PSI), max", "share"),
    "psi_cpu_some_share_mean": ("tasks waiting for a CPU (PSI), mean", "share"),
    "psi_mem_some_avg10_max": ("PSI some avg10, max", "{:.1f} %"),
    "major_faults_per_s_max": ("major page faults, max", "{:.0f}/s"),
    "mem_bandwidth_bytes_per_s_max": ("host memory bandwidth, max", "rate"),
    "swap_used_bytes_max": ("swap in use, max", "size"),
}


def _span_s(samples: Sequence[GpuSample]) -> float:
    return samples[-1].t_wall_s - samples[0].t_wall_s if len(samples) > 1 else 0.0


def head_lines(gap: Gap) -> list[str]:
    end = "still open" if gap.end_s is None else fmt.clock(gap.end_s, millis=True)
    return [
        f"gap {gap.gap_id} on GPU{gap.gpu}: {gap_words(gap.copies, gap.kind)} "
        f"({gap.kind}), {gap.duration_s:.2f} s idle",
        f"  from {fmt.clock(gap.start_s, millis=True)} to {end}; PCIe during it: H2D "
        f"{fmt.rate(gap.pcie_rx_bytes_per_s)}, D2H {fmt.rate(gap.pcie_tx_bytes_per_s)} of a "
        f"{fmt.rate(gap.link_bytes_per_s)} link; judged idle from "
        + ("SM activity" if gap.confidence == "high" else "utilization.gpu only (low confidence)"),
        *([f"  GPU-Util (what nvidia-smi shows) through it: {gap.gpu_util_pct:.0f} %"
           + (": a GPU-Util dashboard shows it busy" if gap.gpu_util_pct >= BUSY_ON_GPU_UTIL
              else "")]
          if gap.gpu_util_pct is not None else []),
    ]


def evidence_lines(gap: Gap, lacks: Sequence[str]) -> list[str]:
    """What the prover said about the gap; where it said nothing, why (`lacks`: what the prover
    package could not learn, `Prover.lacks`)."""
    out = ["", "evidence"]
    if gap.prover_cause:
        out.append(f"  the prover says it waited: {gap.prover_cause.replace('_', ' ')}")
    out += [f"  {e}" for e in gap.prover_evidence]
    if len(out) == 2:
        out.append("  none from the prover: " + (
            "gapwatch lacks" if lacks else "it named no wait around this gap"))
        out += [f"  - {why}" for why in lacks]
    return out


def advice_section(gap: Gap, snap: StoreSnapshot) -> list[str]:
    """What to change for this gap, with the payoff of closing it over the GPU's span in
    memory (the dashboard's history), never below what that span's PCIe bytes need at the
    gap's link (`core.payoff.samples_link_floor_s`). An open gap gets its advice too, on its
    idle time so far (`cuzk.advice` says it is still open): it is the one an operator opens
    while it happens."""
    samples = snap.gpu_samples.get(gap.gpu, ())
    span = _span_s(samples)
    # Copies are work too: never below what the span's bytes need at the gap's link.
    floor = samples_link_floor_s(samples, gap.link_bytes_per_s)

    def payoff(these: Sequence[Gap]) -> IfClosed:
        return if_closed(None, span, sum(g.duration_s for g in these), floor_s=floor)

    return ["", f"what to change (payoff over the last {span:.0f} s of this GPU)",
            *advice_lines(advise([gap], view_of(snap.pipeline), payoff))]


def copy_lines(copies: CopiesEvidence) -> list[str]:
    """The gap's copies by memory kind: those of its evidence window (the gap and the time
    before it, said), each kind's time and bytes in the gap itself where known."""
    head = "copies by host memory kind"
    if copies.kinds():
        head += f", in the gap and {before_words(copies)}"
    out = ["", head]
    kind, source = known(copies.memory_kind), known(copies.memory_kind_source)
    if kind is None and not copies.kinds() and not copies.process_list():
        return [*out, "  nothing known of the copies around it"]
    if kind:
        out.append(f"  memory behind the copies: {kind}" + (f" (from {source})" if source else ""))
    for name, k in sorted(copies.kinds().items()):
        moved = known(k.in_gap_bytes)
        in_gap = f"{k.in_gap_s:.2f} s" + (f", {fmt.size(moved)}" if moved is not None else "")
        out.append(f"  {name:<9} {k.count:>4} copies  {fmt.size(k.bytes):>10}  at "
                   f"{fmt.rate(k.bytes_per_s)}  ({in_gap} of it in the gap)")
    if not copies.kinds() and not known(copies.traced):
        out.append("  no copy trace: kind inferred, not measured")
    for p in copies.process_list():
        out.append(f"  process {p.pid} ({p.name or '?'}): pinned "
                   f"{fmt.size(p.pinned_bytes or 0)}, heap {fmt.size(p.heap_bytes or 0)}")
    return out


def partition_lines(gap: Gap) -> list[str]:
    """The partitions the prover's log named around the gap, and its workers as `/status` saw
    them last during it."""
    out = ["", "partitions in flight"]
    seen: dict[int, list[str]] = {}
    for e in gap.log_events:
        part = e.partition
        if part is not None:
            what = e.warning or e.name
            names = seen.setdefault(part, [])
            if what and what not in names:
                names.append(what)
    for part, names in sorted(seen.items()):
        out.append(f"  partition {part}: {', '.join(names[:4])}")
    if gap.prover_states:
        last = gap.prover_states[-1]
        out.append(f"  workers at the prover's last snapshot: {last.workers or '?'} "
                   "(P proving, I idle)")
    if len(out) == 2:
        out.append("  none named (no prover log or /status around it)")
    return out


def host_lines(gap: Gap) -> list[str]:
    out = ["", "host pressure during it"]
    for key, (words, form) in _HOST_WORDS.items():
        value = known(getattr(gap.host, key, None))
        if value is None:
            continue
        if form == "share":
            text = f"{value * 100:.0f} % of the time"
        elif form == "rate":
            text = fmt.rate(value)
        elif form == "size":
            text = fmt.size(value)
        else:
            text = form.format(value)
        out.append(f"  {words}: {text}")
    if len(out) == 2:
        out.append("  no host readings")
    return out


def log_lines(gap: Gap, events: Sequence[LogEvent]) -> list[str]:
    lo = gap.start_s - LOG_AROUND_S
    hi = (gap.end_s if gap.end_s is not None else gap.start_s + gap.duration_s) + LOG_AROUND_S
    near = sorted((e for e in events if lo <= e.t_wall_s <= hi), key=lambda e: e.t_wall_s)
    out = ["", f"prover log from {LOG_AROUND_S:g} s before to {LOG_AROUND_S:g} s after"]
    for e in near[-MAX_LOG_LINES:]:
        mark = ">" if gap.start_s <= e.t_wall_s <= hi - LOG_AROUND_S else " "
        tag = f"[{e.warning}] " if e.warning else ""
        out.append(f" {mark}{fmt.clock(e.t_wall_s, millis=True)} {tag}"
                   f"{fmt.visible(e.raw.rstrip())[:200]}")
    if not near:
        out.append("  no log lines in memory around it")
    return out


def gap_detail_lines(gap: Gap, snap: StoreSnapshot) -> list[str]:
    """Every line of the gap's detail (module docstring), each written out (`fmt.visible`)
    here, in one place: the lines quote outside text (a recorded log line's warning tag, the
    prover's cause, process names) that a field-by-field rule missed twice, an OSC 52 and a
    right-to-left override sent raw to the terminal."""
    lines = [*head_lines(gap), "", "hint", f"  {gap.hint or '-'}",
             *evidence_lines(gap, snap.prover_lacks), *advice_section(gap, snap),
             *copy_lines(gap.copies),
             *partition_lines(gap), *host_lines(gap), *log_lines(gap, snap.log_events)]
    return [fmt.visible(line) for line in lines]


class GapDetailScreen(ModalScreen[None]):
    """One gap whole, over the dashboard; Esc, Enter or q goes back."""

    BINDINGS = [
        Binding("escape", "close_detail", "back"),
        Binding("enter", "close_detail", "back"),
        Binding("q", "close_detail", "back"),
    ]

    def __init__(self, gap: Gap, snap: StoreSnapshot) -> None:
        super().__init__()
        #: The gap as last shown: `follow` shows its later versions.
        self.gap = gap
        self.lines = gap_detail_lines(gap, snap)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="gap-detail-scroll"):
            yield Static(self._text(), id="gap-detail-text")

    def _text(self) -> Text:
        return Text("\n".join([*self.lines, "", "esc: back to the gaps"]))

    def follow(self, snap: StoreSnapshot) -> None:
        """Show the gap as `snap` has it, where it changed (an open gap grew or closed): the
        box said `to still open`, `0.39 s idle` 6 s after the gap had closed, what it was
        when Enter opened it. The dashboard calls it with each snapshot it shows (a paused
        view's, frozen: then nothing changes); a gap no longer in it (retracted, or older than
        the history) is left as it was last seen. Where the box was scrolled to is kept."""
        latest = next((g for g in snap.gaps if g.gap_id == self.gap.gap_id), None)
        if latest is None or latest == self.gap:
            return
        self.gap = latest
        self.lines = gap_detail_lines(latest, snap)
        self.query_one("#gap-detail-text", Static).update(self._text())

    def on_mount(self) -> None:
        repaint_where_toasts_leave(self)
        self.query_one("#gap-detail-scroll").focus()

    def action_close_detail(self) -> None:
        self.dismiss(None)
