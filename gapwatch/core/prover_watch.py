"""What a prover's watcher is to the rest of gapwatch: fed every record, it says what the prover
did that is not a gap (`ProverEvent`: a watched proof's latency, a restart and its cost, an
error, a lost GPU job). Prover-neutral: e.g. cuzk's watcher is `gapwatch.cuzk.watch.CuzkWatch`.

Who calls it: the live session (`gapwatch.engine.session`, every record, under its lock) and
the offline detection loop (`gapwatch.offline.detect`), so that live, replayed and reported
sessions derive the same events from the same records. `notice_of` is the one rule that turns
an event into the notice the dashboard's alert line and `record`'s stderr say.
"""

from __future__ import annotations

import dataclasses
import re
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from gapwatch.core import fmt
from gapwatch.core.models import Notice, ProofTiming, ProverEvent, ProverEventKind, Record


@dataclass(frozen=True, slots=True)
class Unheard:
    """What a prover's watcher could not count from what it read (`ProverWatch.unheard`): each
    event kind whose count is not known, with why (`why`: a report's count of it is None, never
    0), and what other readings showed instead (`shown`: e.g. a new pid on a GPU where nothing
    read could count restarts). Empty: every count is known. The report's prover events say it
    (`gapwatch.offline.prover_events`)."""

    why: dict[ProverEventKind, str] = field(default_factory=dict)
    shown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RunningProof:
    """A watched proof still in flight at the data's latest time: what the dashboard says of
    it while it runs (its last word is a `ProverEvent`). Never recorded: asked for."""

    job_id: str
    #: Its kind as people name it ("WinningPoSt"): the prover's watcher knows the words.
    name: str
    #: Its phases so far, the running one counting up to now, and its verdict so far.
    timing: ProofTiming
    #: The phase it is in ("queue", "synthesis", "GPU wait", "GPU", "finalize"); None: not known.
    phase: str | None = None

    @property
    def used_share(self) -> float | None:
        """How much of its deadline it has used so far (its total, else the least it can be)."""
        t = self.timing
        figure = t.judged_s
        if figure is None or not t.deadline_s:
            return None
        return figure / t.deadline_s


class ProverWatch(Protocol):
    def feed(self, record: Record) -> list[ProverEvent]:
        """Take any record (in data order); return the events it completed."""
        ...

    def at(self, t_mono_ns: int, panic_read_s: float | None) -> list[ProverEvent]:
        """The live log reader's clock reads `t_mono_ns` (the clock its lines' arrival,
        `LogEvent.t_arrival_mono_ns`, is on) and no record came (its idle pass): what waits
        on data time for a line that may never come, past its wait by then on that clock (a
        panic's other half: the process the panic killed writes none). `panic_read_s`: the
        time of a panic the reader is still reading (its event not handed on yet), which
        what waits for it must wait for, by either clock, until the next call. The data's
        time moves on by that clock too, from when its latest time was read (a PoSt whose
        lines stopped mid-proof goes late by it). Called only where every line written by
        then was read, and never in a replay or a report."""
        ...

    def line_read(self, stream: str, t_wall_s: float, read_mono_ns: int) -> None:
        """A log line fed before (of `stream`, at `t_wall_s`) without the time the live reader
        read it was read at `read_mono_ns`, on `at`'s clock: a report or a replay given the log
        its recording followed feeds the file's copy of a line, and the recording's copy, left
        out, says when it was read (`gapwatch.logs.once.LinesOnce.tell_lines_read`). What
        `finish`'s `read_by_mono_ns` moves the data's time on from, as it would from the
        recorded copy's arrival. Says nothing itself."""
        ...

    def waits(self) -> bool:
        """Whether `at` may say anything now or later (a panic's half waiting for its other, a
        proof in flight whose deadline the clock may pass): the reader's clock, ticking after
        every pass, asks first, and where nothing waits `at` may be put off to the next record
        (`Session.on_reader_clock`). Cheap, and safe to ask while another thread feeds."""
        ...

    def finish(self, read_by_mono_ns: int | None = None) -> list[ProverEvent]:
        """End of data: what is still open (a proof still running is said as such), the
        data's time first moved on by the live reader's clock where a recording's end tells it
        (`read_by_mono_ns`, as `at` moves it live; None: not told)."""
        ...

    def running(self) -> list[RunningProof]:
        """The proofs in flight at the data's latest time, the most of their deadline used
        first (asked about once a second by the dashboard)."""
        ...

    def unheard(self) -> Unheard:
        """The event kinds whose count the records fed so far could not give (no record of the
        kind that shows them was read), with why, and what other readings showed instead: a
        report's counts of those are not known, never 0."""
        ...


def went_late(event: ProverEvent) -> bool:
    """Whether `event` says a proof went late: past its deadline (still running, ended, given
    up for room), or lost in a restart (it will never complete: as late as a proof gets, what
    the alert rule `GapwatchPoStLate` and `--on-event` count, whatever its figures said). A
    failed proof is not late: it failed (`failed`), said and alerted on as such."""
    p = event.proof
    return event.kind == "proof" and p is not None and (
        p.verdict == "late" or p.given_up == "restart")


def failed(event: ProverEvent) -> bool:
    """Whether `event` says a proof failed (the prover said so: no proof came of it), what the
    alert rule `GapwatchPoStFailed` and `--on-event`'s `post_failed` count. Its last word:
    said once."""
    p = event.proof
    return event.kind == "proof" and p is not None and p.verdict == "failed"


#: Proofs still running whose latest word `LastWords` holds, of every tally of proofs by their
#: last word (the advice's `ProofTroubles`, the report's PoSt rows and counts) and of every
#: rule of a proof's first word (`ProofOnce`, `LateOnce`: /metrics and `--on-event`): one
#: bound, so that none of them counts the same proof apart from the others. Far above what is ever
#: in flight (cuzk's watcher follows 256 PoSt a daemon and says the oldest given up past that),
#: because a proof whose GPU job was lost is never said again: it stays here until let go, and
#: a proof said running while hundreds such stayed was let go (counted by that word) before its
#: own last word came, and counted again by it. ~0.5 KB a proof: 2 MB at the bound.
MAX_RUNNING_PROOFS = 4 * 1024


class Settled(NamedTuple):
    """What one event did to the proofs `LastWords` holds (`LastWords.add`)."""

    #: The tag of the same proof's earlier word, which this one replaces (None: it had none
    #: held: its first word, or not a proof's).
    replaced: int | None
    #: The last word this event settles: its own (`ProofTiming.last_word`), or the oldest
    #: running proof's latest word, let go past `MAX_RUNNING_PROOFS`; None: none.
    last: ProofTiming | None


class LastWords:
    """Each proof's latest word until its last (`ProofTiming.last_word`), by job id, in the
    order each was last said: the one keeper every tally of proofs "each once, by its last word"
    reads (`ProofTroubles`; the report's `offline.prover_events.ProofRows`), and every rule of
    "each once, at its first word" (`ProofOnce`, `LateOnce`: a word that replaces none is a
    proof's first). A job id said again
    after its proof's last word is another proof (Curio retries a PoSt lost in a restart under
    the same id). Bounded: at most `MAX_RUNNING_PROOFS` running, past that the oldest settled by
    its latest word. Each word may carry a tag of its caller's (a row's place), handed back when
    a later word of the same proof replaces it."""

    __slots__ = ("_running",)

    def __init__(self) -> None:
        self._running: OrderedDict[str | None, tuple[ProofTiming, int]] = OrderedDict()

    def add(self, e: ProverEvent, tag: int = -1) -> Settled:
        """Take any prover event (those not a proof's change nothing)."""
        p = e.proof
        if e.kind != "proof" or p is None:
            return Settled(None, None)
        before = self._running.pop(e.job_id, None)
        replaced = None if before is None else before[1]
        if p.last_word:
            return Settled(replaced, p)
        self._running[e.job_id] = (p, tag)
        if len(self._running) > MAX_RUNNING_PROOFS:
            return Settled(replaced, self._running.popitem(last=False)[1][0])
        return Settled(replaced, None)

    def running(self) -> Iterator[ProofTiming]:
        """The latest word of each proof still running, oldest first."""
        return (p for p, _tag in self._running.values())

    def __len__(self) -> int:
        return len(self._running)


def _final(event: ProverEvent) -> bool:
    """Whether `event` is its proof's last word (`ProofTiming.last_word`)."""
    return event.proof is not None and event.proof.last_word


class LateOnce:
    """Which of a proof's late words is its first: a proof is said late while it runs and
    again when it ends (its last word: done, or given up), one proof all the same. A later
    proof under its job id (Curio retries a PoSt lost in a restart under the same id) is
    another. The proofs said late and still running are kept by `LastWords` (its bound)."""

    def __init__(self) -> None:
        self._late = LastWords()

    def first(self, event: ProverEvent) -> bool:
        """Take every prover event (a proof's last word forgets it); True when it says a proof
        went late (`went_late`) and is that proof's first late word."""
        late = went_late(event)
        if event.job_id is not None and (late or _final(event)):
            replaced = self._late.add(event).replaced  # a last word forgets it, late or not
            return late and replaced is None
        return late


class ProofOnce:
    """Which of a proof's words is its first: a proof said late while it runs is said again when
    it ends (done late, failed, lost in a restart), one proof all the same, counted once where
    events are counted (`gapwatch_prover_events_total{kind="proof"}`: an alert's `increase()`
    fired twice for one late WinningPoSt). Its first word counts, at its level: a late proof
    is counted at level error the moment it goes late, not again at its end. A later proof
    under its job id (Curio retries a PoSt lost in a restart under the same id) is another.
    The proofs said while running are kept by `LastWords` (its bound)."""

    def __init__(self) -> None:
        self._running = LastWords()

    def first(self, event: ProverEvent) -> bool:
        """Take every prover event; True unless it is a later word of a proof already said
        (any event that is not a proof's is its own first word)."""
        if event.kind != "proof" or event.proof is None or event.job_id is None:
            return True
        return self._running.add(event).replaced is None


class TroubleKey(NamedTuple):
    """What a proof that went wrong is grouped by: its kind, how it went wrong ("failed",
    "lost": in flight when the prover restarted, "late", "at_risk"), and its cause as the
    prover typed it (`ProofTiming.cause`: a failed one's failure line, never its error's text:
    40 WindowPoSt failing by `synthesis failed: sector N ...` are one cause, not 40).
    `others`: the proofs of that kind and verdict whose causes came past the `MAX_TROUBLES`
    kept apart, counted together (their cause None: not one)."""

    proof_kind: str
    verdict: str
    cause: str | None
    others: bool = False


@dataclass(slots=True)
class Trouble:
    """The proofs of one `TroubleKey`: how many, the longest one's figure (its total, else the
    least it can be), the latest one's words (its setting, deadline), and the first error
    said of them (a failed one's, as an example: each proof's own is in its row), and whether
    any other said another."""

    key: TroubleKey
    count: int
    longest_s: float | None
    latest: ProofTiming
    first_error: str | None = None
    #: Whether another proof's error said other words than the first's; `numbers_differ`:
    #: only other numbers (a sector, a task id: a prover numbers what failed, and tokio's
    #: task ids differ for every panic), the same failure each time.
    errors_differ: bool = False
    numbers_differ: bool = False


#: A run of digits: errors that differ only there are one failure said of other things.
_NUMBERS = re.compile(r"\d+")

#: Causes kept apart (`ProofTroubles`), of every kind and verdict together: a prover's causes
#: are a few words of its own (cuzk: its failure lines, the settings a late proof names, its
#: phases), far fewer; past this (a recording's own words), the rest of a kind and verdict are
#: counted together.
MAX_TROUBLES = 64


def trouble_key(p: ProofTiming) -> TroubleKey | None:
    """The trouble a proof's last word says, or None (on time, not timed)."""
    if p.verdict == "failed":
        return TroubleKey(p.proof_kind, "failed", p.cause)
    if p.given_up == "restart":
        return TroubleKey(p.proof_kind, "lost", None)
    if p.verdict in ("late", "at_risk"):
        return TroubleKey(p.proof_kind, p.verdict, p.cause)
    return None


class ProofTroubles:
    """The proofs that failed, were lost in a restart, late or at risk, one `Trouble` per
    cause, each proof once by its last word (`LastWords`: a proof said late while running and
    again at its end is one; one still running at the end of the data is as its latest word
    says): what the report's "What to change" says first (`gapwatch.cuzk.post_advice`). Fed
    every prover event (the offline run's `ProverEvents`, or the events a snapshot holds).
    Bounded: the proofs running at most `MAX_RUNNING_PROOFS`, the troubles `MAX_TROUBLES`."""

    def __init__(self, events: Iterable[ProverEvent] = ()) -> None:
        self._done: dict[TroubleKey, Trouble] = {}
        self._words = LastWords()
        for e in events:
            self.add(e)

    def add(self, e: ProverEvent) -> None:
        last = self._words.add(e).last
        if last is not None:
            _tally(self._done, last)

    def troubles(self) -> list[Trouble]:
        """Every trouble so far, those still running counted as their latest word says."""
        out = {k: dataclasses.replace(t) for k, t in self._done.items()}
        for p in self._words.running():
            _tally(out, p)
        return list(out.values())


def _tally(into: dict[TroubleKey, Trouble], p: ProofTiming) -> None:
    key = trouble_key(p)
    if key is None:
        return
    if key not in into and len(into) >= MAX_TROUBLES:
        key = TroubleKey(key.proof_kind, key.verdict, None, others=True)  # counted together
    seen = into.get(key)
    figure = p.judged_s
    if seen is None:
        into[key] = Trouble(key, 1, figure, p, p.error)
        return
    seen.count += 1
    seen.latest = p
    if seen.first_error is None:
        seen.first_error = p.error
    elif p.error is not None and p.error != seen.first_error:
        if _NUMBERS.sub("#", p.error) == _NUMBERS.sub("#", seen.first_error):
            seen.numbers_differ = True
        else:
            seen.errors_differ = True
    if figure is not None and (seen.longest_s is None or figure > seen.longest_s):
        seen.longest_s = figure


def total_words(t: ProofTiming) -> str:
    """A proof's total ("36.0 s"), or the least it can be ("more than 36.0 s") when its begin
    was not read, or "?" (a proof given up said "? so far" of a total known to pass 36 s)."""
    if t.total_s is None and t.total_at_least_s is not None:
        return f"more than {t.total_at_least_s:.1f} s"
    return "?" if t.total_s is None else f"{t.total_s:.1f} s"


def running_words(proof: RunningProof) -> str:
    """`WinningPoSt winpost-1000-1a2b3c02 running 12.3 s of 30 s (synthesis)`; `more than`
    where its begin was not read; its verdict when it is at risk or late."""
    t = proof.timing
    took = total_words(t)
    limit = f" of {t.deadline_s:g} s" if t.deadline_s is not None else ""
    phase = f" ({proof.phase})" if proof.phase else ""
    verdict = {"late": ", LATE", "at_risk": ", AT RISK"}.get(t.verdict, "")
    return fmt.visible(f"{proof.name} {proof.job_id} running {took}{limit}{phase}{verdict}")


class SaidWithin:
    """Which of a watcher's words a span keeps (`from_s` to `until_s`, wall times; None: open
    on that side), in the order said: those said inside it, and a proof said after its end
    that began within it (in flight in it: its completion read after, by its total, else the
    least it can be); a restart's cost is kept where its restart is (the list and the count
    agree: the cost of a restart said before the span, its new run's first work inside it,
    listed the cost of a restart the count did not hold). The one rule of the
    report (`gapwatch.offline.detect._Side`, its span `log_span.report_span`) and of a
    windowed replay (`gapwatch.engine.session.Session.tell_within`): both read the log 5
    minutes each side of a window (for the gaps' evidence and the PoSt in flight), and the
    words said there are not the window's."""

    def __init__(self, from_s: float | None = None, until_s: float | None = None) -> None:
        self.from_s = from_s
        self.until_s = until_s
        #: Whether the last restart said was left out: its cost is then left out with it.
        self._restart_left_out = False

    def keeps(self, e: ProverEvent) -> bool:
        """Whether `e`, said now, is the span's (its restart's judgement remembered)."""
        inside = self._inside(e)
        if e.kind == "restart":
            self._restart_left_out = not inside
        elif e.kind == "restart_cost" and self._restart_left_out:
            inside = False
        return inside

    def _inside(self, e: ProverEvent) -> bool:
        if self.from_s is not None and e.t_wall_s < self.from_s:
            return False
        until = self.until_s
        if until is None or e.t_wall_s <= until:
            return True
        p = e.proof
        if p is None:
            return False
        took = p.total_s if p.total_s is not None else p.total_at_least_s
        return took is not None and e.t_wall_s - took <= until


def notice_of(event: ProverEvent, t_mono_ns: int) -> Notice | None:
    """The notice that says `event` (warnings and errors; an on-time proof is no notice)."""
    if event.level == "info":
        return None
    return Notice(t_mono_ns, event.t_wall_s, event.level, event_line(event), event.gpu)


def event_line(event: ProverEvent) -> str:
    """One line for a prover event: `prover <kind> at HH:MM:SS: <message>`."""
    return f"prover {event.kind.replace('_', ' ')} at {fmt.clock(event.t_wall_s)}: {event.message}"


#: A proof's verdict as the footer's alert leads with it (the verdict the words end with).
_ALERT_VERDICT: dict[str, str] = {"late": "LATE", "at_risk": "AT RISK",
                                  "unknown": "NOT TIMED (on time or late not known)",
                                  "failed": "FAILED"}


def where_words(event: ProverEvent) -> str:
    """`GPU 0 porep-1000-88 partition 1`: where an event happened, from its typed fields
    (`gpu`, `job_id`, `partition`); "" where none is known. Never read out of its message:
    a regex over cuzk's words was cuzk's phrasing in the core, and a daemon's log path
    holding ` GPU 1` lost that text from the path (review6 #4)."""
    lead = [f"GPU {event.gpu}"] if event.gpu is not None else []
    if event.job_id:
        lead.append(event.job_id + (f" partition {event.partition}"
                                    if event.partition is not None else ""))
    return " ".join(lead)


def alert_line(event: ProverEvent) -> str:
    """The footer's alert for `event`: `event_line`, a proof's verdict first (`prover proof
    LATE at HH:MM:SS: ...`), an error's GPU, job and partition first (`where_words`), then
    what happened (`ProverEvent.what`), its daemon last (`; daemon 127.0.0.1:9820`). The
    footer is one line cut at the pane's edge, and a proof's words end with its verdict: at 80
    columns a late WinningPoSt timed by its lower bound (`more than 36.0 s o…`) and one not
    timed at all read alike, both in the alert colour, and a WindowPoSt's long job id left
    nothing past itself; an error's daemon said before its words (as its message says it)
    left `GPU 0 porep-1000-88 partition 1: daemon 127…`, no word of what happened."""
    proof = event.proof
    if proof is None:
        if event.what is None:
            return event_line(event)
        where = where_words(event)
        daemon = f"; daemon {event.daemon}" if event.daemon else ""
        return (f"prover {event.kind.replace('_', ' ')} at {fmt.clock(event.t_wall_s)}: "
                f"{where + ': ' if where else ''}{event.what}{daemon}")
    if proof.given_up == "restart":
        verdict = "LOST in a restart"
    else:
        verdict = _ALERT_VERDICT.get(proof.verdict, proof.verdict)
        if proof.given_up is not None:
            verdict = f"GIVEN UP, {verdict}" if proof.verdict != "ok" else "GIVEN UP"
    return f"prover proof {verdict} at {fmt.clock(event.t_wall_s)}: {event.message}"
