"""The report as text for people: `gapwatch report FILE` without `--json`.

Who calls it: `gapwatch.commands.report` (prints it), tests. The JSON document of the same
report is `gapwatch.offline.report.to_json`: both read one `ReportData`, so they say the same
figures; this module only words and lays them out.
"""

from __future__ import annotations

from collections.abc import Iterable

from gapwatch.core import fmt
from gapwatch.core.blind import blind_words
from gapwatch.core.chaining import MIN_COPY_S, NO_COPIES
from gapwatch.core.config import DetectorConfig
from gapwatch.core.health import event_words
from gapwatch.core.models import GAP_KINDS, Gap
from gapwatch.core.payoff import PAYOFF_METHOD, gpu_time_words
from gapwatch.core.verdict import breakdown_words
from gapwatch.cuzk.advice import advice_lines
from gapwatch.cuzk.partitions import RunTimeline
from gapwatch.offline.copy_sums import CopyTable
from gapwatch.offline.cut_end import breakdown_at_end, cut_by, idle_at_cut_end
from gapwatch.offline.payoff import ALL, Payoff, busy_fraction
from gapwatch.offline.prover_events import prover_event_lines
from gapwatch.offline.report import TABLE_ROWS, ReportData, gaps_by_prover_cause

#: Rows of the gap and partition tables in text output (the JSON always has every row).
MAX_TABLE_ROWS = TABLE_ROWS


def _pct(v: float | None) -> str:
    return "  n/a" if v is None else f"{v * 100:4.0f} %"


def _clock(t: float) -> str:
    return fmt.clock(t, millis=True)


def format_text(r: ReportData, all_rows: bool = False,
                detector: DetectorConfig | None = None) -> str:
    """The report for people, section by section (each a named step below); paths, hints and
    problems quote text from outside: shown, never obeyed by the terminal."""
    detector = detector or DetectorConfig()
    out = _head_lines(r)
    out += ["", *_gpu_lines(r)]
    out += ["", *_gap_lines(r, all_rows)]
    out += ["", *_breakdown_lines(r, detector)]
    if r.chaining:
        out += ["", *_chaining_lines(r)]
    if r.health or r.hw_event_count:
        out += ["", *_health_lines(r)]
    if r.blind_spots:
        out += ["", *_blind_lines(r)]
    if r.copies is not None:
        out += ["", *_copy_lines(r.copies)]
    judged = r.post_deadlines.said() if r.post_deadlines is not None else None
    if said := prover_event_lines(r.prover_events,
                                  r.window.since_s if r.window is not None else None,
                                  [judged] if judged else []):
        out += ["", *said]
    if r.partitions is not None:
        out += ["", *_partition_lines(r.partitions, all_rows)]
    out += ["", *_payoff_lines(r.payoff)]
    out += ["", "What to change (cuzk's own settings; docs/advice.md)", *advice_lines(r.advice)]
    if r.prover_lacks:
        out += ["", "What gapwatch lacks (so some gaps have no prover cause, some stalls no "
                "setting)", *[f"  {why}" for why in r.prover_lacks]]
    if r.counters or r.problems:
        out += ["", *_input_lines(r)]
    return "\n".join(fmt.visible(line) for line in out) + "\n"


def _chaining_lines(r: ReportData) -> list[str]:
    """The chaining figure per GPU over the run and its worst minute."""
    out = ["Chaining (share of host-to-device copy time that ran while SMs were busy)"]
    for gpu, f in sorted(r.chaining.items()):
        if not f.has_copies():  # a share of next to no copy time is noise
            out.append(f"  GPU {gpu}: {NO_COPIES} (under {MIN_COPY_S:g} s of copy time, "
                       f"{f.basis_words()})")
            continue
        line = f"  GPU {gpu}: {f.share * 100:.0f} % of {f.copy_s:.1f} s of copies"
        worst = r.chaining_worst.get(gpu)
        if worst is not None and worst[1] < f.share - 0.05:
            line += f"; worst minute {worst[1] * 100:.0f} % from {_clock(worst[0])}"
        out.append(f"{line} ({f.basis_words()})")
    return out


def _health_lines(r: ReportData) -> list[str]:
    """GPU health over the run (highest readings, throttling) and every GPU error."""
    out = ["GPU health (highest readings) and GPU errors"]
    out += [f"  {h.words()}" for _, h in sorted(r.health.items())]
    if r.hw_event_count:
        # The errors, by kind as /metrics' gapwatch_gpu_hardware_events_total counts them: one
        # reading's 40 uncorrected ECC errors are one event; "GPU errors: 1" beside a counter
        # of 40 understated them.
        errors = sum(r.hw_errors.values())
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(r.hw_errors.items()))
        events = "" if errors == r.hw_event_count else f" in {r.hw_event_count} events"
        out.append(f"  GPU errors: {errors} ({kinds}){events}"
                   + ("" if r.hw_event_count == len(r.hw_events)
                      else f" (the first {len(r.hw_events)} events below)"))
        out += [f"    {_clock(e.t_wall_s)}  {event_words(e)}" for e in r.hw_events]
    else:
        out.append("  GPU errors: none (XID, ECC, PCIe replays, row remaps, a GPU lost)")
    return out


def _head_lines(r: ReportData) -> list[str]:
    """What was read, and the data's own problems first (they change what the rest means)."""
    h = r.header
    # The source is the recording's word for itself (a header is outside text): cut.
    source = fmt.fit(fmt.visible(h.source), SOURCE_CELLS, pad=False)
    out = [f"gapwatch report: {r.path} ({source}, {h.period_ms:g} ms period)"]
    if r.window is not None:
        out.append(f"only the {r.window.describe()}: as if the recording were cut there")
    if h.snapshot_wall_s is not None:
        out.append(f"a snapshot's recording, taken at {_clock(h.snapshot_wall_s)} while the "
                   "session went on: its end cuts the data there")
    if r.log_files:
        out.append(f"logs: {', '.join(r.log_files)}")
    if r.warnings:
        out += ["", "WARNING: the data has problems that change what this report means"]
        out += [f"  - {w}" for w in r.warnings]
    if r.notes:  # not problems: a note each (`report.said_of_input` decides which is which)
        out += ["", "Notes on the input"]
        out += [f"  - {n}" for n in r.notes]
    return out


def _gpu_lines(r: ReportData) -> list[str]:
    """One line per GPU: busy share, link, gaps by kind; the prover's own causes beneath."""
    out = ["GPUs (busy = busy share of the working span, first to last busy reading)"]
    for t in r.totals:
        parts = []
        for k in GAP_KINDS:
            tally = r.gap_tally.get((t.gpu, k))
            if tally is not None and tally.count:
                parts.append(f"{tally.count} {k} ({tally.seconds:.1f} s)")
        kinds = ", ".join(parts) or "no gaps"
        low = "  [utilization.gpu only: low confidence]" if t.confidence == "low" else ""
        out.append(f"  GPU {t.gpu}: busy {_pct(busy_fraction(t)).strip()} of {t.active_s:.1f} s "
                   f"(link {fmt.rate(t.link_bytes_per_s)}); {kinds}{low}")
        causes = gaps_by_prover_cause(r, t.gpu)
        if causes:
            sources = r.prover_cause_said_by.get(t.gpu, {})
            said = ", ".join(
                f"{v['count']:.0f} {k.replace('_', ' ')}"
                f"{_said_by_words(round(v['count']), sources.get(k, {}))}"
                for k, v in sorted(causes.items(), key=lambda kv: -kv[1]["count"]))
            # Each cause with what said it: /status snapshots, the log where only it can say
            # (a pinned-pool fallback, SRS loading, a restart), or /proc (a process on the GPU
            # replaced, of any name: "its /status or log" credited the prover with it).
            out.append(f"         where it waited (said by its /status, log or /proc): {said}")
        tail = idle_at_cut_end(t, cut_by(r.header, r.data_after))
        if tail is not None:
            out.append(f"         {tail}")
        util = r.util.get(t.gpu)
        if util is not None:  # what the operator's other tools showed beside it
            out.append(f"         {util.words(busy_fraction(t))}")
    return out


#: What said a gap's cause (`ProverGapFacts.said_by`), as the GPUs line names it.
_SAID_BY_WORDS = {"status": "/status", "log": "log", "processes": "/proc"}


def _said_by_words(count: int, sources: dict[str, int]) -> str:
    """" (/proc)" where every one of `count` gaps of a cause was said by one source, else
    " (2 log, 1 /status)" of those whose source is known; "" where none is."""
    if not sources:
        return ""
    if len(sources) == 1 and sum(sources.values()) == count:
        return f" ({_SAID_BY_WORDS.get(next(iter(sources)), '?')})"
    return " (" + ", ".join(f"{n} {_SAID_BY_WORDS.get(k, '?')}"
                            for k, n in sorted(sources.items(), key=lambda kv: -kv[1])) + ")"


def _gap_lines(r: ReportData, all_rows: bool) -> list[str]:
    """The gap table: every gap, or where there are more than `MAX_TABLE_ROWS` the longest
    of them in start order (a day's first rows were its first minute), saying so."""
    n = len(r.gaps)
    rows: Iterable[Gap] = r.gaps
    shown = n
    if not all_rows and n > MAX_TABLE_ROWS:
        rows = r.longest_gaps
        shown = len(r.longest_gaps)
    out = [f"Gaps ≥ min gap: {n}" + ("" if shown == n else
                                     f" (the {shown} longest, in time order; --all or --json "
                                     "for all)")]
    if shown:
        out.append(f"  {'GPU':>3} {'start (UTC)':<12} {'dur s':>6} {'kind':<14} {'H2D':>9} "
                   f"{'D2H':>9}  hint")
    for g in rows:
        out.append(f"  {g.gpu:>3} {_clock(g.start_s):<12} {g.duration_s:6.2f} {g.kind:<14} "
                   f"{fmt.rate(g.pcie_rx_bytes_per_s):>9} {fmt.rate(g.pcie_tx_bytes_per_s):>9}  "
                   f"{g.hint}")
    return out


def _breakdown_lines(r: ReportData, config: DetectorConfig) -> list[str]:
    """Each BREAKDOWN period: when, how long, the starved gaps it held and what it was entered
    on (the entry's count alone froze at "2 pcie_starved gaps" for a period that held 31)."""
    out = [f"Chaining breakdowns: {len(r.breakdowns)}"]
    cut = cut_by(r.header, r.data_after)
    totals = {t.gpu: t for t in r.totals}
    for b in r.breakdowns:
        if b.entered_at_end:  # no period of it read: said at the data's end, not as 0.0 s
            out.append(f"  GPU {b.gpu}: "
                       f"{breakdown_at_end(b.start_s, b.reason or '-', totals.get(b.gpu), cut)}")
            continue
        words = breakdown_words(b.starved_gaps, b.starved_idle_s, b.max_in_window,
                                b.reason or "-", config)
        out.append(f"  GPU {b.gpu}: {_clock(b.start_s)} - {_clock(b.end_s)} "
                   f"({b.duration_s:.1f} s): {words}")
    return out


def _blind_lines(r: ReportData) -> list[str]:
    """Each stretch with no readings because NVML did not answer, and why as far as known: a
    hole in the charts is not idle time, and not gapwatch hanging."""
    total = sum(b.duration_s for b in r.blind_spots)
    out = [f"Blind spots (no readings: NVML did not answer): {len(r.blind_spots)}, "
           f"{total:.1f} s in all"]
    out += [f"  {blind_words(b, r.byes)}" for b in r.blind_spots]
    return out


def _input_lines(r: ReportData) -> list[str]:
    out = ["Input: " + ", ".join(f"{k} {v}" for k, v in sorted(r.counters.items()))]
    out += [f"  {p}" for p in r.problems[:5]]
    return out


def _copy_lines(copies: CopyTable) -> list[str]:
    """The copy trace's table: copies by GPU, direction and host memory kind, with their rates."""
    lines = [f"Copies (copy trace): {copies.count}, {fmt.size(copies.bytes)}",
             f"  {'GPU':>3} {'dir':<4} {'memory':<9} {'copies':>6} {'bytes':>10} "
             f"{'rate':>9}  per copy min / median / max"]
    for row in copies.rows:
        gpu = "?" if row.gpu is None else str(row.gpu)
        lines.append(
            f"  {gpu:>3} {row.direction.upper():<4} {row.memory_kind:<9} "
            f"{row.count:>6} {fmt.size(row.bytes):>10} {fmt.rate(row.bytes_per_s):>9}  "
            f"{fmt.rate(row.rate_min_bytes_per_s)} / "
            f"{fmt.rate(row.rate_median_bytes_per_s)} / {fmt.rate(row.rate_max_bytes_per_s)}")
    whole = copies.overall
    share = whole.pageable_share_of_gap_time
    if share is not None:
        lines.append(f"  pageable copies ran during {share * 100:.0f} % of the gap time "
                     f"({whole.pageable_copy_s:.1f} s of {whole.gap_s:.1f} s)")
    return lines


#: Where the partition table's rows came from, in its title.
_PARTITION_SOURCES = {
    frozenset({"log"}): "from the log",
    frozenset({"status"}): "from the prover's /status",
}


#: Characters of a job id shown in the partition table (its end: ids differ there).
JOB_CHARS = 20
#: Cells of the recording's source named in the head.
SOURCE_CELLS = 80


def _partition_lines(run: RunTimeline, all_rows: bool = False) -> list[str]:
    """The partition table: job and partition on every row (partition numbers repeat per job),
    the first `MAX_TABLE_ROWS` unless `all_rows`, saying what it left out."""
    parts = run.partitions
    origin = _PARTITION_SOURCES.get(run.sources, "from the log and the prover's /status")
    rows = parts if all_rows else parts[:MAX_TABLE_ROWS]
    unit = run.rate_unit
    # The rows counted as what they are: a batch job is 2+ sectors' proofs on the GPU at once,
    # never a partition (its pinned cell and the count of unpinned rows are one rule's).
    head = (f"Partitions ({origin}): {len(parts)}" if unit == "partitions" else
            f"GPU jobs ({origin}): {run.units_words()}")
    # Unpinned among those whose pinning was read: "0 unpinned" of rows it was not read of
    # would say they were pinned. Not known: no `is_pinned=` line nor pool warning read of it.
    unknown = (f", {run.pinning_unknown} pinning not known (no is_pinned line read)"
               if run.pinning_unknown else "")
    lines = [f"{head}, {run.unpinned} synthesised unpinned{unknown}; "
             f"GPU occupied {_pct(run.occupied_fraction).strip()}, "
             f"merged GPU_START..END {_pct(run.merged_efficiency).strip()}"]
    negative = run.bad_durations_note()
    if negative is not None:
        lines.append(f"  {negative}")
    # The whole job id, never cut: a WindowPoSt's id is long (and holds spaces).
    # Widths in terminal cells, not characters: a job id with wide characters or combining
    # marks (`fmt.cells`) put every column after it out of line.
    jw = max([JOB_CHARS, *(fmt.cells(fmt.visible(p.job_id or "-")) for p in rows)])
    runs = len(run.runs) > 1
    lines.append("  " + ("run " if runs else "") + f"{'job':<{jw}} {'part':>12} {'worker':>6} "
                 f"{'GPU start':<12} {'synth ms':>8} {'gpu ms':>7} {'held ms':>8} "
                 f"{'wait ms':>8} {'H2D-in-NTT ms':>13} pinned")

    def v(x: int | None) -> str:
        return "-" if x is None else str(x)

    for p in rows:
        start = _clock(p.gpu_start_s) if p.gpu_start_s else "-"
        part = v(p.partition) if not p.monolithic else (p.kind or "monolithic")
        note = " (pool failed)" if p.pool_failed else " (first wave)" if p.first_wave else ""
        lines.append("  " + (f"{p.run:>3} " if runs else "")
                     + f"{fmt.fit(fmt.visible(p.job_id or '-'), jw)} {part:>12} "
                     f"{v(p.worker):>6} {start:<12} "
                     f"{v(p.synth_ms):>8} {v(p.timeline_gpu_ms):>7} {v(p.mutex_held_ms):>8} "
                     f"{v(p.mutex_wait_ms):>8} {v(p.h2d_in_ntt_ms):>13} {p.pinned_words}{note}")
    if len(rows) < len(parts):
        lines.append(f"  ... {len(parts) - len(rows)} more {unit} not shown (first "
                     f"{len(rows)} of {len(parts)}; --all or --json for all)")
    return lines


def _payoff_lines(payoff: Payoff) -> list[str]:
    lines = ["Payoff (if the gaps were closed)"]
    overall = payoff.overall
    pph, sph = payoff.partitions_per_hour, payoff.sectors_per_hour
    for kind, v in overall.if_closed_by_kind.items():
        gain = v.throughput_gain
        if v.busy_fraction is None or gain is None or v.idle_s <= 0:
            continue
        rate = f", {pph:.0f} → {pph * gain:.0f} {payoff.rate_unit} per hour" if pph else ""
        if pph and sph:
            rate += f" ({sph:.0f} → {sph * gain:.0f} sectors per hour)"
        label = "all gaps" if kind == ALL else f"{kind} gaps"
        lines.append(f"  closing {label}: busy {_pct(overall.busy_fraction).strip()} → "
                     f"{_pct(v.busy_fraction).strip()}, throughput "
                     f"{gpu_time_words(gain, v.span_s, v.gaps, v.link_limit_s, v.limited_by)}"
                     f"{rate}")
    if len(lines) == 1:
        lines.append("  nothing to gain: no gaps")
    lines.append(f"  ({PAYOFF_METHOD})")
    return lines
