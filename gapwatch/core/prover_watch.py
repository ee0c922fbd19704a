"""What a prover's watcher is to the rest of gapwatch: fed every record, it says what the prover
did that is not a gap (`ProverEvent`: a watched proof's latency, a restart and its cost, an
error, a lost GPU job). Prover-neutral: e.g. cuzk's watcher is `gapwatch.cuzk.watch.CuzkWatch`.

Who calls it: the live session (`gapwatch.engine.session`, every record, under its lock) and
the offline detection loop (`gapwatch.offline.detect`), so that live, replayed and reported
sessions derive the same events from the same records. `notice_of` is the one rule that turns
an event into the notice the dashboard's alert line and `record`'s stderr say.
"""

from __future__ import annotations

from typing import Protocol

from gapwatch.core import fmt
from gapwatch.core.models import Notice, ProverEvent, Record


class ProverWatch(Protocol):
    def feed(self, record: Record) -> list[ProverEvent]:
        """Take any record (in data order); return the events it completed."""
        ...

    def finish(self) -> list[ProverEvent]:
        """End of data: what is still open (a proof still running is said as such)."""
        ...


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
                                  "unknown": "NOT TIMED (on time or late not known)"}


def alert_line(event: ProverEvent) -> str:
    """The footer's alert for `event`: `event_line`, a proof's verdict first (`prover proof
    LATE at HH:MM:SS: ...`). The footer is one line cut at the pane's edge, and a proof's words
    end with its verdict: at 80 columns a late WinningPoSt timed by its lower bound (`more
    than 36.0 s o…`) and one not timed at all read alike, both in the alert colour, and a
    WindowPoSt's long job id left nothing past itself."""
    proof = event.proof
    if proof is None:
        return event_line(event)
    if proof.given_up == "restart":
        verdict = "LOST in a restart"
    else:
        verdict = _ALERT_VERDICT.get(proof.verdict, proof.verdict)
        if proof.given_up is not None:
            verdict = f"GIVEN UP, {verdict}" if proof.verdict != "ok" else "GIVEN UP"
    return f"prover proof {verdict} at {fmt.clock(event.t_wall_s)}: {event.message}"
