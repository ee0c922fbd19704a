"""The report's section on what the prover did besides gaps: watched proofs (PoSt) against their
deadlines, restarts and the stretch each cost, errors, lost GPU jobs, warnings. Text and JSON.

Who calls it: `gapwatch.commands.report` (text) and `gapwatch.offline.report.to_json`. Reads
`ProverEvent`s only (prover-neutral: cuzk's watcher derives them, `gapwatch.cuzk.watch`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from operator import attrgetter
from typing import Any, NamedTuple, overload

import msgspec

from gapwatch.core import fmt
from gapwatch.core.models import (
    PHASE_WORDS,
    PROVER_EVENT_KINDS,
    ProofTiming,
    ProverEvent,
    ProverEventKind,
)
from gapwatch.core.prover_watch import LastWords, ProofTroubles, Trouble, Unheard

#: Rows of each list shown in text (--json has every one kept).
MAX_ROWS = 40
#: Events of each kind an offline run keeps (and lists, in --json too); every one is counted,
#: and the summary's figures are over all. A log of a prover failing every partition for a
#: day (or 100,000 panics) held each (~0.6 KB): 90 MB for 100,000, growing with the log.
MAX_KEPT = 10_000


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _total(p: ProofTiming) -> str:
    """Its total, or ">N" when only its least is known (its begin not read)."""
    if p.total_s is None and p.total_at_least_s is not None:
        return f">{p.total_at_least_s:.1f}"
    return _s(p.total_s)


def _final(e: ProverEvent) -> bool:
    """A proof's last word (`ProofTiming.last_word`)."""
    return e.proof is not None and e.proof.last_word


class ProofCounts(NamedTuple):
    """The PoSt rows of a run (`ProofRows`): how many, and how many late, at risk, said
    without their end, not timed (verdict "unknown": never among those on time), failed."""

    rows: int = 0
    late: int = 0
    at_risk: int = 0
    given_up: int = 0
    unknown: int = 0
    failed: int = 0

    def plus(self, p: ProofTiming) -> ProofCounts:
        return ProofCounts(self.rows + 1, self.late + (p.verdict == "late"),
                           self.at_risk + (p.verdict == "at_risk"),
                           self.given_up + (p.given_up is not None),
                           self.unknown + (p.verdict == "unknown"),
                           self.failed + (p.verdict == "failed"))


class ProofRows:
    """One row per proof, the one rule for the summary's counts and the table's rows: a
    proof's last word (`core.prover_watch.LastWords`, the keeper the advice's troubles read
    too: a proof said late while running, then done, is the done one), in the order each was
    last said. A job id said again after its proof's last word is another proof: a row of its
    own, never the lost one overwritten. Every row is counted as the events come; the rows
    themselves are kept only with `keep` (the table's, of the events an offline run keeps).
    Memory besides: the proofs still running, bounded by `LastWords` (past the bound the oldest
    running one is counted as its latest word says and let go)."""

    def __init__(self, keep: bool = False) -> None:
        self._done = ProofCounts()
        #: Each running proof's latest word, tagged with its place in `_rows` (-1: none kept).
        self._words = LastWords()
        self._rows: list[ProverEvent | None] | None = [] if keep else None

    def add(self, e: ProverEvent) -> None:
        if e.kind != "proof" or e.proof is None:
            return
        at = -1 if self._rows is None else len(self._rows)
        settled = self._words.add(e, at)
        if self._rows is not None:
            if settled.replaced is not None:
                self._rows[settled.replaced] = None  # the same proof, said again: this replaces it
            self._rows.append(e)
        if settled.last is not None:
            self._done = self._done.plus(settled.last)

    def counts(self) -> ProofCounts:
        """Every row so far, those still running counted as their latest word says."""
        out = self._done
        for p in self._words.running():
            out = out.plus(p)
        return out

    def listed(self) -> list[ProverEvent]:
        """The rows kept (with `keep`), in order."""
        return [e for e in self._rows or () if e is not None]


class ProverCounts:
    """Prover events counted, none kept: every word by kind, and the PoSt proofs by their rows
    (`ProofRows`: a proof said late while running and again at its end is one). The one count
    of an offline run's events (`ProverEvents`) and of those it left out (`detect._Side`: said
    outside the report's span)."""

    __slots__ = ("by_kind", "_proofs")

    def __init__(self) -> None:
        #: Every event by kind (a proof's every word).
        self.by_kind: dict[str, int] = {}
        self._proofs = ProofRows()

    def add(self, e: ProverEvent) -> int:
        """Count `e`; how many of its kind were counted before it."""
        seen = self.by_kind.get(e.kind, 0)
        self.by_kind[e.kind] = seen + 1
        self._proofs.add(e)
        return seen

    def proofs(self) -> ProofCounts:
        """The PoSt rows' counts."""
        return self._proofs.counts()

    def by_proof(self) -> dict[str, int]:
        """The counts by kind, "proof" counting proofs (rows), not their words (last)."""
        rows = self.proofs().rows
        return {**{k: n for k, n in self.by_kind.items() if k != "proof"},
                **({"proof": rows} if rows else {})}


def _proofs(events: Iterable[ProverEvent]) -> list[ProverEvent]:
    """The rows of `events` (`ProofRows`)."""
    rows = ProofRows(keep=True)
    for e in events:
        rows.add(e)
    return rows.listed()


class ProverEvents(Sequence[ProverEvent]):
    """The prover's events of an offline run, in order, in bounded memory: every one counted
    (by kind, and the PoSt rows' verdicts: the summary's figures are over all), the first
    `MAX_KEPT` of each kind kept; as a sequence, the kept ones. Who fills it: the offline
    detection loop (`gapwatch.offline.detect`) and `parse --timeline`."""

    def __init__(self, events: Iterable[ProverEvent] = ()) -> None:
        self._kept: list[ProverEvent] = []
        #: Every event counted (`counts`: by kind; the PoSt rows), and those of each kind not
        #: kept.
        self._counted = ProverCounts()
        self.not_kept: dict[str, int] = {}
        #: The proofs that went wrong, by cause, over every event (the advice's first lines).
        self._troubles = ProofTroubles()
        #: Job ids whose latest word kept is a running proof's.
        self._kept_running: set[str | None] = set()
        #: The kinds whose count is not known, from what the watcher read (`ProverWatch.
        #: unheard`, told at the end of the run): their counts are None, never 0.
        self.unheard = Unheard()
        self.extend(events)

    @property
    def counts(self) -> dict[str, int]:
        """Every event by kind (a proof's every word)."""
        return self._counted.by_kind

    def add(self, e: ProverEvent) -> None:
        seen = self._counted.add(e)
        proof = e.kind == "proof" and e.proof is not None
        self._troubles.add(e)
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

    def proofs(self) -> ProofCounts:
        """The PoSt rows' counts over every proof event."""
        return self._counted.proofs()

    def troubles(self) -> list[Trouble]:
        """The proofs that failed, were lost, late or at risk, by cause, over every event."""
        return self._troubles.troubles()

    def in_time_order(self, kinds: tuple[str, ...]) -> list[ProverEvent]:
        """The kept events of `kinds`, by their time (equal times as derived): the lists of
        errors, restarts, lost jobs and warnings, text and JSON alike. In the order derived, a
        panic said once its message had ended came before the line that preceded it
        (`16:22:13.646` above `.594`). Not the PoSt rows: those are each proof's last word
        (`ProofRows`)."""
        return sorted((e for e in self._kept if e.kind in kinds), key=attrgetter("t_wall_s"))

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

    def __repr__(self) -> str:
        return f"ProverEvents({len(self._kept)} kept, {self.counts})"


def prover_events_of(events: Sequence[ProverEvent]) -> ProverEvents:
    """`events` as `ProverEvents` (a list: every one counted, as an offline run counts them)."""
    return events if isinstance(events, ProverEvents) else ProverEvents(events)


#: How the table says a proof said without its end (`ProofTiming.given_up`).
_GIVEN_UP = {"restart": "lost in restart", "too_many": "given up: too many in flight"}


#: The summary's counts, by kind, as it names them (`known_counts`, `summary_line`).
_COUNTED: tuple[tuple[ProverEventKind, str], ...] = (
    ("proof", "PoSt proofs"), ("restart", "restarts"), ("error", "errors"),
    ("lost_job", "lost GPU jobs"))


def known_counts(log: ProverEvents) -> dict[str, int | None]:
    """Each kind's count ("proof": PoSt rows, `ProofRows`), None where what was read could not
    give it (`ProverEvents.unheard`): `--json`'s `counts`."""
    rows = log.proofs().rows
    return {k: None if k in log.unheard.why else rows if k == "proof" else log.counts.get(k, 0)
            for k in PROVER_EVENT_KINDS}


def _not_known(unheard: Unheard) -> str:
    """The summary's words for the counts not known, grouped by why ("PoSt proofs, errors and
    lost GPU jobs not known: no cuzk log line read"), then what other readings showed."""
    by_why: dict[str, list[str]] = {}
    for kind, name in _COUNTED:
        if (why := unheard.why.get(kind)) is not None:
            by_why.setdefault(why, []).append(name)
    said = [f"{fmt.and_list(names)} not known: {why}" for why, names in by_why.items()]
    return "; ".join(said + list(unheard.shown))


def summary_line(events: Sequence[ProverEvent]) -> str:
    log = prover_events_of(events)
    t = log.proofs()
    n = {k: log.counts.get(k, 0) for k in ("restart", "error", "lost_job", "warning", "setup")}
    # Said only when some were: the line reads as before for every log that has none.
    failed = f"{t.failed} failed, " if t.failed else ""
    without = f", {t.given_up} said without their end" if t.given_up else ""
    unknown = f", {t.unknown} not timed (on time or late not known)" if t.unknown else ""
    warned = f", {n['warning']} warning(s)" if n["warning"] else ""
    setup = f", {n['setup']} setup note(s)" if n["setup"] else ""
    figures = {"proof": f"{t.rows} PoSt proof(s) ({failed}{t.late} late, {t.at_risk} at "
                        f"risk{unknown}{without})",
               "restart": f"{n['restart']} restart(s)", "error": f"{n['error']} error(s)",
               "lost_job": f"{n['lost_job']} lost GPU job(s)"}
    # A count the input could not give is not known, never 0 (a restart recorded without its
    # log read "0 restart(s)" while /proc showed the prover's pid replaced).
    known = [words for kind, words in figures.items() if kind not in log.unheard.why]
    not_known = _not_known(log.unheard)
    return (f"Prover events: {', '.join(known)}{warned}{setup}"
            + ("; " if known and not_known else "") + not_known)


def _more(listed: int, total: int, kind_not_kept: int) -> str:
    """The line after a list cut at `MAX_ROWS` rows ("" when nothing was left out)."""
    if total <= listed:
        return ""
    where = (f"--json lists the first {MAX_KEPT:,} of each kind; all are counted"
             if kind_not_kept else "--json for all")
    return f"    ... {total - listed} more ({where})"


def _unread_line(e: ProverEvent, since_s: float | None) -> str | None:
    """What a done proof's row does not show: the phases its log did not read (their lines
    before a window, or before the log's first line), as the rest of its total
    (`ProofTiming.unread`), and where they lie; None where every phase was read, the rest is
    none, or its total is not known. A late WinningPoSt of 35.0 s begun before a window read
    "queue - synth - GPU wait 0.2" under "waited for a GPU worker behind: ...", as if 0.2 s
    of GPU wait were why; its 33.1 s of synthesis (an SRS load) were before the window. A
    failed proof's phases after its failure never ran: not "not read" ("its finalize (0.0 s
    of its 2.9 s)" under every failed row)."""
    p = e.proof
    if p is None or not p.done or p.one_step or p.total_s is None:
        return None
    unread, rest_s = p.unread()
    if not unread or rest_s is None:
        return None
    began_s = e.t_wall_s - p.total_s
    where = (f": it began before the window, at {fmt.clock(began_s, millis=True)} (by its "
             "total); --since earlier reads them" if since_s is not None and began_s < since_s
             else "")
    names = fmt.and_list([PHASE_WORDS[phase] for phase in unread])
    return f"      not read: its {names} ({rest_s:.1f} s of its {p.total_s:.1f} s){where}"


def proof_lines(events: Sequence[ProverEvent], since_s: float | None = None) -> list[str]:
    """The PoSt table; `since_s`: a window's start (a proof begun before it says so)."""
    log = prover_events_of(events)
    proofs = _proofs(log)
    if not proofs:
        return []
    # In terminal cells (`fmt.cells`): wide characters and combining marks in a job id.
    jw = max(fmt.cells(fmt.visible(e.job_id or "-")) for e in proofs)
    # A `prove` column only where a proof was proved in one step (synthesis and GPU in one
    # call, its `synth`/`GPU` not known): the table reads as before for every other log.
    shown = proofs[:MAX_ROWS]
    one_step = any(e.proof is not None and e.proof.one_step for e in shown)
    prove_head = f" {'prove':>6}" if one_step else ""
    out = ["  PoSt proofs (seconds; the whole job id, never cut"
           + ("; prove: synthesis and GPU in one call, the prover's pipeline off" if one_step
              else "") + ")",
           f"    {'at (UTC)':<12} {'kind':<12} {'job':<{jw}} {'total':>7} {'queue':>6} "
           f"{'synth':>6} {'GPU wait':>8} {'GPU':>6}{prove_head} {'finalize':>8} "
           f"{'deadline':>8} verdict"]
    for e in shown:
        p = e.proof
        assert p is not None
        verdict = (p.verdict if p.done else f"{p.verdict} (running)" if p.given_up is None
                   else f"{_GIVEN_UP[p.given_up]}, {p.verdict} so far")
        prove = f" {_s(p.prove_s):>6}" if one_step else ""
        out.append(f"    {fmt.clock(e.t_wall_s, millis=True):<12} {p.proof_kind:<12} "
                   f"{fmt.fit(fmt.visible(e.job_id or '-'), jw)} {_total(p):>7} "
                   f"{_s(p.queue_s):>6} "
                   f"{_s(p.synth_s):>6} {_s(p.gpu_wait_s):>8} {_s(p.gpu_s):>6}{prove} "
                   f"{_s(p.finalize_s):>8} {_s(p.deadline_s):>8} {verdict}")
        if p.error is not None:  # why it failed, whole: the row's verdict says only "failed"
            out.append(f"      error: {fmt.visible(p.error)}")
        if (unread := _unread_line(e, since_s)) is not None:
            out.append(unread)
        if p.verdict != "ok" and p.waited_behind and p.worker_wait_s:
            out.append(f"      waited for a GPU worker behind: {p.behind_words()}")
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
    return _message_lines(title, log.in_time_order(kinds),
                          sum(log.counts.get(k, 0) for k in kinds),
                          sum(log.not_kept.get(k, 0) for k in kinds))


def prover_event_lines(events: Sequence[ProverEvent], since_s: float | None = None,
                       judged: Sequence[str] = ()) -> list[str]:
    """The report's text section ([] when the prover said nothing of the kind); `since_s`: a
    window's start; `judged`: what the proofs were judged by, where the reader would expect
    other (`PostDeadlines.said`), said under the summary."""
    log = prover_events_of(events)
    # Nothing said: no section, unless other readings show what no count could (/proc: a new
    # pid on a GPU where nothing read could count restarts).
    if not log and not log.unheard.shown:
        return []
    lines = [summary_line(log), *(f"  {line}" for line in judged)]
    lines += proof_lines(log, since_s)
    lines += _listed(log, "Restarts (and the GPU time each cost, as one stretch)",
                     ("restart", "restart_cost"))
    lines += _listed(log, "Errors", ("error",))
    lines += _listed(log, "Lost GPU jobs", ("lost_job",))
    lines += _listed(log, "Warnings (signs of failures to come)", ("warning",))
    lines += _listed(log, "The prover's setup (as its logs show it)", ("setup",))
    return [fmt.visible(line) for line in lines]


def prover_events_json(events: Sequence[ProverEvent]) -> dict[str, Any]:
    """Every event kept, by kind, as the recording writes them (plus each stretch's length and
    its cost, `ProverEvent.cost_s`: the length less any wait for work in it); `counts`: each
    kind's count, null where what was read could not give it (`known_counts`), `not_known`
    why, `shown` what other readings showed instead (`ProverEvents.unheard`);
    `not_kept`: how many of each kind were counted but not kept (only when some were)."""
    log = prover_events_of(events)
    out: dict[str, Any] = {"summary": summary_line(log), "counts": known_counts(log),
                           "not_known": dict(log.unheard.why),
                           "shown": list(log.unheard.shown)}
    for kind in ("proof", "restart", "restart_cost", "error", "lost_job", "warning", "setup"):
        rows = []
        for e in ([e for e in log if e.kind == kind] if kind == "proof"
                  else log.in_time_order((kind,))):
            row = msgspec.to_builtins(e)
            row.pop("type", None)
            if e.length_s is not None:
                row["length_s"] = e.length_s
                row["cost_s"] = e.cost_s
            rows.append(row)
        out[kind] = rows
    if log.not_kept:
        out["not_kept"] = dict(log.not_kept)
    return out
