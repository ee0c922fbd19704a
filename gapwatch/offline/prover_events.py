"""The report's section on what the prover did besides gaps: watched proofs (PoSt) against their
deadlines, restarts and the stretch each cost, errors, lost GPU jobs. Text and JSON.

Who calls it: `gapwatch.commands.report` (text) and `gapwatch.offline.report.to_json`. Reads
`ProverEvent`s only (prover-neutral: cuzk's watcher derives them, `gapwatch.cuzk.watch`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import msgspec

from gapwatch.core import fmt
from gapwatch.core.models import ProofTiming, ProverEvent

#: Rows of each list shown in text (--json has every one kept).
MAX_ROWS = 40
#: Events of each kind an offline run keeps (and lists, in --json too); every one is counted,
#: and the summary's figures are over all. A log of a prover failing every partition for a
#: day (or 100,000 panics) held each (~0.6 KB): 90 MB for 100,000, growing with the log.
MAX_KEPT = 10_000
#: PoSt proofs still running that the summary's tally holds (see `_ProofTally`).
MAX_RUNNING = 4 * 1024


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _final(e: ProverEvent) -> bool:
    """A proof's last word: done, or said without its end (lost in a restart, given up)."""
    return e.proof is not None and (e.proof.done or e.proof.given_up is not None)


def _proofs(events: list[ProverEvent]) -> list[ProverEvent]:
    """One row per proof: its last word (a proof said late while running, then done, is the
    done one), in the order each was last said. A job id said again after its proof's last
    word is another proof (Curio retries a PoSt lost in a restart under the same id): a row of
    its own, never the lost one overwritten."""
    rows: list[ProverEvent | None] = []
    running: dict[str | None, int] = {}
    for e in events:
        if e.kind != "proof" or e.proof is None:
            continue
        i = running.pop(e.job_id, None)
        if i is not None:
            rows[i] = None  # the same proof, said again: its later word replaces it
        if not _final(e):
            running[e.job_id] = len(rows)
        rows.append(e)
    return [e for e in rows if e is not None]


class _ProofTally:
    """`_proofs`' rows counted as the events come, in memory bounded by the proofs still
    running (a watcher follows a bounded number: `cuzk.post.MAX_IN_FLIGHT`; a proof whose
    job was lost is never said again, so past `MAX_RUNNING` the oldest running one is counted
    as its latest word says and let go): a row is counted at its last word, or at the end for
    one still running."""

    def __init__(self) -> None:
        self.rows = self.late = self.at_risk = self.given_up = 0
        self._running: OrderedDict[str | None, ProofTiming] = OrderedDict()

    def add(self, e: ProverEvent) -> None:
        p = e.proof
        if p is None:
            return
        if _final(e):
            self._running.pop(e.job_id, None)
            self._count(p)
            return
        self._running[e.job_id] = p  # its later word replaces it
        self._running.move_to_end(e.job_id)
        if len(self._running) > MAX_RUNNING:
            self._count(self._running.popitem(last=False)[1])

    def _count(self, p: ProofTiming) -> None:
        self.rows += 1
        self.late += p.verdict == "late"
        self.at_risk += p.verdict == "at_risk"
        self.given_up += p.given_up is not None

    def figures(self) -> _ProofTally:
        """The counts with the proofs still running counted (a copy: adding goes on)."""
        out = _ProofTally()
        out.rows, out.late, out.at_risk, out.given_up = (
            self.rows, self.late, self.at_risk, self.given_up)
        for p in self._running.values():
            out._count(p)
        return out


class ProverEvents(Sequence[ProverEvent]):
    """The prover's events of an offline run, in order, in bounded memory: every one counted
    (by kind, and the PoSt rows' verdicts: the summary's figures are over all), the first
    `MAX_KEPT` of each kind kept; as a sequence, the kept ones. Who fills it: the offline
    detection loop (`gapwatch.offline.detect`) and `parse --timeline`."""

    def __init__(self, events: Iterable[ProverEvent] = ()) -> None:
        self._kept: list[ProverEvent] = []
        #: Every event by kind, and those of each kind not kept.
        self.counts: dict[str, int] = {}
        self.not_kept: dict[str, int] = {}
        self._proofs = _ProofTally()
        #: Job ids whose latest word kept is a running proof's.
        self._kept_running: set[str | None] = set()
        self.extend(events)

    def add(self, e: ProverEvent) -> None:
        seen = self.counts.get(e.kind, 0)
        self.counts[e.kind] = seen + 1
        proof = e.kind == "proof" and e.proof is not None
        if proof:
            self._proofs.add(e)
        # A later word of a proof kept while running is kept past the bound too (a few: the
        # proofs in flight), so that no row kept reads "running" of a proof that ended.
        if seen < MAX_KEPT or (proof and e.job_id in self._kept_running):
            self._kept.append(e)
            if proof:
                if _final(e):
                    self._kept_running.discard(e.job_id)
                else:
                    self._kept_running.add(e.job_id)
        else:
            self.not_kept[e.kind] = self.not_kept.get(e.kind, 0) + 1

    def extend(self, events: Iterable[ProverEvent]) -> None:
        for e in events:
            self.add(e)

    def __iadd__(self, events: Iterable[ProverEvent]) -> ProverEvents:
        self.extend(events)
        return self

    def proofs(self) -> _ProofTally:
        """The PoSt rows' counts over every proof event."""
        return self._proofs.figures()

    def __iter__(self) -> Iterator[ProverEvent]:
        return iter(self._kept)

    def __len__(self) -> int:
        return len(self._kept)

    @overload
    def __getitem__(self, i: int) -> ProverEvent: ...
    @overload
    def __getitem__(self, i: slice) -> list[ProverEvent]: ...

    def __getitem__(self, i: int | slice) -> ProverEvent | list[ProverEvent]:
        return self._kept[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ProverEvents):
            return self._kept == other._kept and self.counts == other.counts
        if isinstance(other, list):
            return not self.not_kept and self._kept == other
        return NotImplemented

    def __repr__(self) -> str:
        return f"ProverEvents({len(self._kept)} kept, {self.counts})"


def prover_events_of(events: Sequence[ProverEvent]) -> ProverEvents:
    """`events` as `ProverEvents` (a list: every one counted, as an offline run counts them)."""
    return events if isinstance(events, ProverEvents) else ProverEvents(events)


#: How the table says a proof said without its end (`ProofTiming.given_up`).
_GIVEN_UP = {"restart": "lost in restart", "too_many": "given up: too many in flight"}


def summary_line(events: Sequence[ProverEvent]) -> str:
    log = prover_events_of(events)
    t = log.proofs()
    n = {k: log.counts.get(k, 0) for k in ("restart", "error", "lost_job")}
    # Said only when some were: the line reads as before for every log that has none.
    without = f", {t.given_up} said without their end" if t.given_up else ""
    return (f"Prover events: {t.rows} PoSt proof(s) ({t.late} late, {t.at_risk} at "
            f"risk{without}), {n['restart']} restart(s), {n['error']} error(s), "
            f"{n['lost_job']} lost GPU job(s)")


def _more(listed: int, total: int, kind_not_kept: int) -> str:
    """The line after a list cut at `MAX_ROWS` rows ("" when nothing was left out)."""
    if total <= listed:
        return ""
    where = (f"--json lists the first {MAX_KEPT:,} of each kind; all are counted"
             if kind_not_kept else "--json for all")
    return f"    ... {total - listed} more ({where})"


def proof_lines(events: Sequence[ProverEvent]) -> list[str]:
    log = prover_events_of(events)
    proofs = _proofs(list(log))
    if not proofs:
        return []
    # In terminal cells (`fmt.cells`): wide characters and combining marks in a job id.
    jw = max(fmt.cells(fmt.visible(e.job_id or "-")) for e in proofs)
    out = ["  PoSt proofs (seconds; the whole job id, never cut)",
           f"    {'at (UTC)':<12} {'kind':<12} {'job':<{jw}} {'total':>7} {'queue':>6} "
           f"{'synth':>6} {'GPU wait':>8} {'GPU':>6} {'finalize':>8} {'deadline':>8} verdict"]
    for e in proofs[:MAX_ROWS]:
        p = e.proof
        assert p is not None
        verdict = (p.verdict if p.done else f"{p.verdict} (running)" if p.given_up is None
                   else f"{_GIVEN_UP[p.given_up]}, {p.verdict} so far")
        out.append(f"    {fmt.clock(e.t_wall_s, millis=True):<12} {p.proof_kind:<12} "
                   f"{fmt.fit(fmt.visible(e.job_id or '-'), jw)} {_s(p.total_s):>7} "
                   f"{_s(p.queue_s):>6} "
                   f"{_s(p.synth_s):>6} {_s(p.gpu_wait_s):>8} {_s(p.gpu_s):>6} "
                   f"{_s(p.finalize_s):>8} {_s(p.deadline_s):>8} {verdict}")
        if p.verdict != "ok" and p.waited_behind and p.gpu_wait_s:
            out.append(f"      waited for a GPU worker behind: {', '.join(p.waited_behind)}")
        if p.setting:
            out.append(f"      setting: {p.setting}")
    more = _more(min(len(proofs), MAX_ROWS), log.proofs().rows, log.not_kept.get("proof", 0))
    return out + [more] if more else out


def _message_lines(title: str, events: list[ProverEvent], total: int, not_kept: int
                   ) -> list[str]:
    """A list of events (those kept) under `title`; `total`: how many there were in all."""
    if not events:
        return []
    out = [f"  {title}"]
    for e in events[:MAX_ROWS]:
        out.append(f"    {fmt.clock(e.t_wall_s, millis=True)} {e.message}")
        if e.parts:
            parts = ", ".join(f"{p.name} {fmt.clock(p.start_s)}-{fmt.clock(p.end_s)} "
                              f"({p.end_s - p.start_s:.1f} s)" for p in e.parts)
            out.append(f"      parts (they may overlap): {parts}")
    more = _more(min(len(events), MAX_ROWS), total, not_kept)
    return out + [more] if more else out


def _listed(log: ProverEvents, title: str, kinds: tuple[str, ...]) -> list[str]:
    return _message_lines(title, [e for e in log if e.kind in kinds][:MAX_ROWS],
                          sum(log.counts.get(k, 0) for k in kinds),
                          sum(log.not_kept.get(k, 0) for k in kinds))


def prover_event_lines(events: Sequence[ProverEvent]) -> list[str]:
    """The report's text section ([] when the prover said nothing of the kind)."""
    log = prover_events_of(events)
    if not log:
        return []
    lines = [summary_line(log)]
    lines += proof_lines(log)
    lines += _listed(log, "Restarts (and the GPU time each cost, as one stretch)",
                     ("restart", "restart_cost"))
    lines += _listed(log, "Errors", ("error",))
    lines += _listed(log, "Lost GPU jobs", ("lost_job",))
    return [fmt.visible(line) for line in lines]


def prover_events_json(events: Sequence[ProverEvent]) -> dict[str, Any]:
    """Every event kept, by kind, as the recording writes them (plus each stretch's length);
    `not_kept`: how many of each kind were counted but not kept (only when some were)."""
    log = prover_events_of(events)
    out: dict[str, Any] = {"summary": summary_line(log)}
    for kind in ("proof", "restart", "restart_cost", "error", "lost_job"):
        rows = []
        for e in log:
            if e.kind != kind:
                continue
            row = msgspec.to_builtins(e)
            row.pop("type", None)
            if e.length_s is not None:
                row["length_s"] = e.length_s
            rows.append(row)
        out[kind] = rows
    if log.not_kept:
        out["not_kept"] = dict(log.not_kept)
    return out
