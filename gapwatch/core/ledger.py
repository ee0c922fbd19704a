"""GapLedger: the one home of the rule that turns published gap versions into "the gaps".

The detector publishes a gap several times under one `gap_id`: when it opens, while it grows,
when it closes, and again when late log lines enrich a closed gap; a gap that was still open when
the data ended is published once more as `retracted`: it was idle after the last busy period, not
a gap. One a hole in the data cut is published `retracted` at the hole and, if the GPU works
again after it, closed then (a retracted id can come back closed: it is counted then, once).
Every output that shows or counts gaps (the dashboard, the record and replay summaries,
/metrics, snapshots, `report`, the Perfetto export) must apply the same rule:

- keep the latest version of each gap id;
- drop retracted gaps entirely (never shown, never counted);
- count a gap once, when it first closes (its kind and duration are final then; a later version
  only carries richer evidence);
- flag the open gap (at most one per GPU) apart from the closed ones.

They all call this class instead of writing the rule again. Who uses it: `engine.store`
(live sessions: dashboard, snapshots, /metrics, summaries) and `offline.report` (report, export).
Pure: no I/O, no clocks, no locks (the store holds its own lock around it).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import Enum
from operator import attrgetter
from typing import Final

from gapwatch.core.models import Gap


class Change(Enum):
    """What one published version did to the ledger."""

    OPENED = "opened"  # a new gap, still open
    UPDATED = "updated"  # an open gap grew or changed kind
    CLOSED = "closed"  # a gap closed for the first time: counted now
    REVISED = "revised"  # a closed gap re-published with richer evidence (not counted again)
    RETRACTED = "retracted"  # an open gap turned out not to be one: removed
    IGNORED = "ignored"  # a late version of a gap the ledger no longer keeps (already counted)


@dataclass(slots=True)
class Tally:
    """Closed gaps of one (GPU, kind): how many, and their idle seconds."""

    count: int = 0
    seconds: float = 0.0


_start_order = attrgetter("start_s", "gpu", "gap_id")
#: Ids of forgotten closed gaps remembered, so that a late version is not counted again.
_FORGOTTEN_IDS: Final = 20_000


class GapLedger:
    """Latest version of every gap, retracted ones removed, closed ones counted once.

    Args:
        max_closed: closed gaps kept in memory (the oldest to close is dropped first); None keeps
            them all (offline reports). Tallies are never forgotten, so counts stay exact
            however long a session runs.
    """

    def __init__(self, max_closed: int | None = None) -> None:
        self._max_closed = max_closed
        self._open: dict[int, Gap] = {}
        self._closed: dict[int, Gap] = {}
        #: Ids of closed gaps that were dropped from memory, so a late version is not recounted.
        self._forgotten: set[int] = set()
        self._forgotten_order: deque[int] = deque()
        self._tally: dict[tuple[int, str], Tally] = {}
        #: Closed gaps by (GPU, prover cause): a revision that changes a gap's cause (a late
        #: snapshot or log line) moves it.
        self._cause_tally: dict[tuple[int, str], Tally] = {}
        self.version = 0

    def add(self, gap: Gap) -> Change:
        """Take one published version of a gap; say what it changed."""
        gid = gap.gap_id
        self.version += 1
        if gap.retracted:
            # Only open gaps are retracted; a retraction of anything else changes nothing.
            return Change.RETRACTED if self._open.pop(gid, None) is not None else Change.IGNORED
        if gap.end_s is None:
            if gid in self._closed or gid in self._forgotten:
                return Change.IGNORED  # an out-of-date open version of a closed gap
            change = Change.UPDATED if gid in self._open else Change.OPENED
            self._open[gid] = gap
            return change
        if gid in self._closed:
            old = self._closed[gid]
            if old.prover_cause != gap.prover_cause or old.duration_s != gap.duration_s:
                self._count_cause(old, -1)
                self._count_cause(gap, 1)
            self._closed[gid] = gap
            return Change.REVISED
        if gid in self._forgotten:
            return Change.IGNORED
        self._open.pop(gid, None)
        self._closed[gid] = gap
        tally = self._tally.get((gap.gpu, gap.kind))
        if tally is None:
            tally = self._tally[(gap.gpu, gap.kind)] = Tally()
        tally.count += 1
        tally.seconds += gap.duration_s
        self._count_cause(gap, 1)
        self._forget_oldest()
        return Change.CLOSED

    def _count_cause(self, gap: Gap, sign: int) -> None:
        if gap.prover_cause is None:
            return
        key = (gap.gpu, gap.prover_cause)
        tally = self._cause_tally.get(key)
        if tally is None:
            tally = self._cause_tally[key] = Tally()
        tally.count += sign
        tally.seconds += sign * gap.duration_s

    def _forget_oldest(self) -> None:
        limit = self._max_closed
        if limit is None:
            return
        while len(self._closed) > limit:
            self._forget(next(iter(self._closed)))  # dicts keep insertion (= close) order

    def forget_closed_before(self, t_s: float) -> None:
        """Stop keeping the closed gaps that ended before `t_s`, oldest to close first (their
        tallies stay). A live session calls it with its history's start: what no view shows
        need not be kept."""
        closed = self._closed
        while closed:
            gid = next(iter(closed))
            end_s = closed[gid].end_s
            if end_s is None or end_s >= t_s:
                return
            self._forget(gid)

    def _forget(self, gid: int) -> None:
        del self._closed[gid]
        self._forgotten.add(gid)
        self._forgotten_order.append(gid)
        # Late versions come within seconds of a close (the evidence buffer listens for 10 s of
        # data), long before this many gaps have closed since.
        while len(self._forgotten_order) > _FORGOTTEN_IDS:
            self._forgotten.discard(self._forgotten_order.popleft())

    def take_final(self, revisable: set[int]) -> list[Gap]:
        """Let go of the closed gaps whose ids are not in `revisable` (the detector's
        `revisable_gap_ids`: their last version is final), in the order they closed; their
        tallies stay, and a late version of one would be ignored. An offline report spools
        them (`gapwatch.offline.gap_spool`) instead of holding the run's gaps."""
        out = [g for gid, g in self._closed.items() if gid not in revisable]
        for g in out:
            self._forget(g.gap_id)
        return out

    # -- views ----------------------------------------------------------------------------------

    def closed(self) -> list[Gap]:
        """Closed gaps kept in memory, in start order (ties: GPU, then id)."""
        return sorted(self._closed.values(), key=_start_order)

    def open_gap(self, gap_id: int) -> Gap | None:
        """The latest version of an open gap, or None."""
        return self._open.get(gap_id)

    def closed_count(self) -> int:
        """How many closed gaps are kept in memory."""
        return len(self._closed)

    def open_gaps(self) -> list[Gap]:
        """Gaps still open (at most one per GPU), in start order."""
        return sorted(self._open.values(), key=_start_order)

    def gaps(self) -> list[Gap]:
        """Every gap shown to a user: closed and open, in start order."""
        return sorted((*self._closed.values(), *self._open.values()), key=_start_order)

    def tally(self) -> dict[tuple[int, str], Tally]:
        """Closed gaps by (GPU, kind) since the ledger started (copies)."""
        return {k: Tally(t.count, t.seconds) for k, t in self._tally.items()}

    def cause_tally(self) -> dict[tuple[int, str], Tally]:
        """Closed gaps by (GPU, prover cause) since the ledger started (copies)."""
        return {k: Tally(t.count, t.seconds) for k, t in self._cause_tally.items()}

    def counts_by_kind(self) -> dict[str, int]:
        """Closed gaps by kind over every GPU, kinds with none left out."""
        return counts_by_kind(self._tally)


def counts_by_kind(tally: dict[tuple[int, str], Tally]) -> dict[str, int]:
    """Closed gaps by kind over every GPU from a tally (`GapLedger.tally`, a store snapshot's
    `gap_tally`), in kind order, kinds with none left out: the one sum every count says."""
    out: dict[str, int] = {}
    for (_gpu, kind), t in tally.items():
        out[kind] = out.get(kind, 0) + t.count
    return {k: n for k, n in sorted(out.items()) if n}
