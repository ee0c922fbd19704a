"""One row per box and GPU, worst first: the fleet's table, built from one round of queries.

Who calls it: `gapwatch.commands.fleet` (`--once`) and `gapwatch.ui.fleet` (every refresh, on a
worker thread). `refresh` asks every query of `gapwatch.fleet.queries.QUERIES` within one time
budget; a query that fails is named in `Refresh.errors` and its column is empty (None), the
others still fill the table; `Refresh.error_lines` says them to people, each error once. A
refresh whose row query failed keeps nothing: the caller keeps showing the previous table and
says why (the screen's footer).

A box is stale when Prometheus cannot scrape it now (`up` 0), no longer has it as a target
(`up` absent), or last scraped it more than `stale_after_s` ago: its rows keep their last
values, marked stale, and sort just below the boxes in BREAKDOWN. So is a GPU the box no longer
exports (`exported` False: a GPU lost at a restart of the box's gapwatch), however fresh the
box. When Prometheus answers neither `up` nor the scrape's age, a row's freshness is not known
(`stale` None), marked so and ranked with the stale: never shown fresh. Those two questions
are asked right after the rows', before the optional ones, so that a slow Prometheus spends
the budget on them first.

Why a box is stale is Prometheus's to say (`gapwatch.fleet.targets`): when a refresh has a
stale row, its targets API is asked once, last, within what is left of the budget, and each
stale row of a box whose scrape fails carries the reason (`down_why`, shown in the CAUSE cell).
That question failing costs the reasons only (None, and `errors["down_why"]`), never the rows.
"""

from __future__ import annotations

import math
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from gapwatch.core import fmt
from gapwatch.core.models import STATE_SEVERITY
from gapwatch.cuzk.post_advice import MISSED_VERDICTS
from gapwatch.cuzk.why_now import NO_CAUSE  # the setting a box exports when none closes its cause
from gapwatch.fleet.client import MAX_NAME_CHARS, PromClient, PromError, Series, name_was_cut
from gapwatch.fleet.queries import (
    JOBS_SHOWN,
    JOBS_WITH_ROWS,
    QUERIES,
    Query,
    promql_string,
    render,
)
from gapwatch.fleet.targets import failure_of, parse_selector, scrape_failures

#: Rank of a stale row among the states (BREAKDOWN 4, GAPS 3...): after BREAKDOWN, before GAPS.
STALE_SEVERITY = 3.5
#: Rank of a box whose PoSts went late, were lost or failed in the lookback: first, above
#: BREAKDOWN. A late or failed WinningPoSt is a block reward lost, a WindowPoSt's sectors
#: faulted: worse than any GPU time idled. Such a box ranked last (its GPUs CHAINED, 100 %
#: busy) with SETTING `none`. One row of the box ranks so (`FleetRow.post_ranks`): the counts
#: are the box's, and set on each of its GPU rows they ranked every one first (two 8-GPU boxes
#: with one late PoSt each filled rows 1-16, a BREAKDOWN box 17th).
POST_SEVERITY = 5.0
#: A GPU read at its period less than this share of the last 5 minutes is flagged `D`: a
#: tenth of its time without a fine reading hides gaps of a second or two.
READ_SHARE_LOW = 0.9


@dataclass(slots=True)
class FleetRow:
    """One GPU of one box as Prometheus last had it. None: not known (not exported, or the
    query failed)."""

    instance: str
    gpu: str
    state: str = "NO_DATA"
    #: Not fresh (True), fresh (False), or not known (None: Prometheus answered neither whether
    #: the box is scraped now nor when it last was, so its state may be an hour old).
    stale: bool | None = False
    #: Whether the box exports this GPU's state now (False: only its past is remembered; None:
    #: not known, the question failed or the row is the box's own).
    exported: bool | None = None
    up: float | None = None
    age_s: float | None = None
    busy_ratio: float | None = None
    chaining_ratio: float | None = None
    idle_s_5m: dict[str, float] = field(default_factory=dict)
    cause: str | None = None
    cause_words: str | None = None
    setting: str | None = None
    payoff_gain: float | None = None
    #: Whether `cause` and `setting` are the box's verdict now (True), the last it reported
    #: within the lookback (False: it exports none now, a dead box), or not known (None).
    verdict_now: bool | None = None
    #: When the box last reported the verdict shown, where it is not its verdict now (wall
    #: seconds, to the minute); None otherwise.
    verdict_t_wall_s: float | None = None
    post_last_latency_s: float | None = None
    #: PoSts of any kind that ended late, that could not be timed (on time or late not
    #: known), and that failed, in the lookback (`increase`: Prometheus extrapolates, so not
    #: always whole).
    post_late: float | None = None
    post_untimed: float | None = None
    post_failed: float | None = None
    #: The cuzk setting the box's PoSt advice names for its PoSts that failed, were lost or
    #: went late, of the verdicts the lookback counted (`post_setting_of`): "none" where no
    #: setting frees them; None where the box exports no advice for them (an older gapwatch,
    #: or none went wrong).
    post_setting: str | None = None
    #: What the box's PoSt advice names (`gapwatch_proof_advice_info` over the lookback), by
    #: how the PoSt went wrong: `failed`, `lost`, `late` -> the settings it names ("none":
    #: none frees it). The box exports the advice of every PoSt its session holds, hours old
    #: among them: `post_setting` takes only those of the verdicts the lookback counted.
    post_advice: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: How long ago (seconds, up to 2 minutes short: `queries`) a PoSt of the box last
    #: went late, was lost or failed in the lookback; None: not known or none did.
    post_trouble_age_s: float | None = None
    #: Whether this row is the one of its box that ranks for the box's PoSts (its first GPU
    #: row, `build_rows`): the others rank by their GPU's own state.
    post_ranks: bool = False
    throttled: float | None = None
    #: The GPUs' own errors in the lookback: XIDs, uncorrected ECC errors, GPUs lost.
    gpu_errors: float | None = None
    restarts: float | None = None
    #: The share of the last 5 minutes the GPU was read at its period (fine samples); below
    #: `READ_SHARE_LOW`, `D` in the health column: its gaps may go unseen.
    read_share_5m: float | None = None
    #: Why Prometheus has no fresh scrape of the box, in its words ("scrape failed: connection
    #: refused", "not a target of Prometheus now"); None: the row is fresh, the box's target
    #: is up, or the targets API did not say. Prometheus's text: shown through `fmt.visible`.
    down_why: str | None = None
    #: When Prometheus last tried to scrape the box (its targets API's `lastScrape`), and the
    #: URL it scrapes: set with `down_why` only, None when not known.
    down_last_scrape_t_wall_s: float | None = None
    down_scrape_url: str | None = None

    def post_trouble(self) -> bool:
        """Whether a PoSt went late (lost in a restart among them) or failed in the lookback:
        the counts as the PoSt column rounds them."""
        return any(counted(n) for n in (self.post_late, self.post_failed))

    def post_rank_key(self) -> tuple[int, int]:
        """How bad the PoSt trouble this row ranks for is, worst lowest (a sort key): failed
        ones before late ones (lost among them: a lost block either way, a failure no setting
        frees), more before fewer; (0, 0) for a row that ranks for none."""
        if not (self.post_ranks and self.post_trouble()):
            return (0, 0)
        return (-round(self.post_failed or 0.0), -round(self.post_late or 0.0))

    def severity(self) -> float:
        # A lost block first, whatever the GPUs' state or the box's freshness (`POST_SEVERITY`),
        # on the one row of the box that ranks for it.
        if self.post_ranks and self.post_trouble():
            return POST_SEVERITY
        # Freshness not known ranks as stale: its last state may be a dead box's.
        if self.stale is not False and self.state != "BREAKDOWN":
            return STALE_SEVERITY
        # The state is text from Prometheus, not a ChainState: an unknown one ranks as NO_DATA.
        for state, rank in STATE_SEVERITY.items():
            if state == self.state:
                return float(rank)
        return float(STATE_SEVERITY["NO_DATA"])

    def idle_total_s(self) -> float:
        return sum(self.idle_s_5m.values())

    def health(self) -> str:
        """`T` throttled, `X` GPU errors (XID, uncorrected ECC, GPU lost, a failed row remap),
        `R` prover restarts (in the lookback), `D` data holes (read at its period less than
        `READ_SHARE_LOW` of the last 5 minutes); `-` when none of them is exported, `ok` when
        they are and none is set. A row not fresh (stale, or not known) is never `ok`: `~`
        (stale) or `?` (not known if fresh) before the flags it last had, D not among them (a
        dead box is read in no holes: it read `D` for 5 minutes, then `ok`)."""
        holes = None if self.read_share_5m is None else self.read_share_5m < READ_SHARE_LOW
        flags = [("T", self.throttled), ("X", self.gpu_errors), ("R", self.restarts),
                 ("D", holes)]
        if self.stale is not False:
            mark = "~" if self.stale else "?"
            return mark + "".join(letter for letter, v in flags[:3] if v)
        if all(v is None for _, v in flags):
            return "-"
        return "".join(letter for letter, v in flags if v) or "ok"

    def state_word(self) -> str:
        """The STATE cell: the state, or, for a row not fresh, that first: `DOWN` (Prometheus
        cannot scrape its box, or it is no target now), `STALE` (its last good scrape too old,
        or its GPU no longer exported by a live box), the last known state in its HEADLINE
        (`headline`); `?STATE` where freshness is not known. `~IDLE` of a box stopped with a
        gap open (its last export the end of data's retraction) read as an idle box."""
        if self.stale is None:
            return f"?{self.state}"
        if not self.stale:
            return self.state
        return "DOWN" if self.up == 0.0 or self.down_why is not None else "STALE"

    def as_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__slots__}
        out["idle_s_5m"] = dict(sorted(self.idle_s_5m.items()))
        out["post_advice"] = {v: list(said) for v, said in sorted(self.post_advice.items())}
        out["health"] = self.health()
        out["headline"] = headline(self)
        # `instance` is the name as held: its start and a digest where it was cut.
        out["instance_cut"] = name_was_cut(self.instance)
        return out


@dataclass(frozen=True, slots=True)
class Refresh:
    """One round: the rows (worst first), what failed (query field -> why), when it was asked,
    and how long it took (wall, and waiting on Prometheus)."""

    rows: list[FleetRow]
    errors: dict[str, str]
    t_wall_s: float
    took_s: float
    prometheus_s: float
    #: The `--selector` asked with, and, when it picked no box, the scrape jobs that have
    #: gapwatch's rows, most boxes first (`queries.JOBS_WITH_ROWS`; None: not asked, or not
    #: answered). All the answer named: the empty table shows `JOBS_SHOWN` of them.
    selector: str = ""
    jobs_with_rows: list[str] | None = None
    #: How many boxes have a name longer than fleet keeps (`client.name_was_cut`): each its
    #: own rows, shown cut, its detail not asked (`cut_lines` says so).
    names_cut: int = 0

    def empty_lines(self) -> list[str]:
        """What an empty table says: the selector it used, and the jobs whose targets do
        have gapwatch's rows, each as the `--selector` that picks it (it said "(no gapwatch
        target in Prometheus)", exit 0, with a box scraped under job "gpu-boxes")."""
        out = [f"(no gapwatch target in Prometheus matches --selector "
               f"{fmt.visible(shlex.quote(self.selector))})"]
        if self.jobs_with_rows:
            out.append(f"(gapwatch's metrics are scraped under another job name: give "
                       f"{_picks(self.jobs_with_rows)})")
        elif self.jobs_with_rows is not None:
            out.append("(no scrape job has gapwatch's metrics: is gapwatch's /metrics "
                       "scraped? docs/fleet.md)")
        return out

    @property
    def rows_failed(self) -> bool:
        # The state query is the rows: without it, `up` alone made one "-" row per box, each
        # NO_DATA, whatever state it was in (a BREAKDOWN box among them), and `--once` exited 0
        # (a state query over the lookback is the heaviest: Prometheus's sample limit or a
        # timeout can refuse it while `up` still answers).
        return "state" in self.errors

    def error_lines(self, prometheus: str) -> list[str]:
        """What failed, one line per distinct error (`said_errors`), then the box names held
        cut (`cut_lines`): stderr of `--once` and the screen's footer say the same."""
        return said_errors(self.errors, prometheus) + self.cut_lines()

    def cut_lines(self) -> list[str]:
        """That some box names are longer than fleet keeps, and what that costs; nothing when
        none is."""
        if not self.names_cut:
            return []
        return [f"{self.names_cut} box names longer than {MAX_NAME_CHARS:,} characters are "
                "shown as their start, \"…\" and a digest of the whole (each its own rows); "
                "their detail cannot be asked"]

    def as_json(self, prometheus: str) -> dict[str, Any]:
        return {"prometheus": prometheus, "t_wall_s": self.t_wall_s, "took_s": self.took_s,
                "prometheus_s": self.prometheus_s, "errors": self.errors,
                "names_cut": self.names_cut, "rows": [r.as_json() for r in self.rows]}


def _picks(jobs: list[str]) -> str:
    """The `--selector` of each of the first `JOBS_SHOWN` jobs, and how many more there are.
    The query asks Prometheus for its top `JOBS_SHOWN` (`topk`), but gapwatch does not trust
    it to: an answer of 20,000 series was one 5.4 MB line naming every one."""
    picks = " or ".join(_selector_of(job) for job in jobs[:JOBS_SHOWN])
    more = len(jobs) - JOBS_SHOWN
    return f"{picks}, and {more:,} more" if more > 0 else picks


def _selector_of(job: str) -> str:
    """`--selector` picking scrape job `job`, as typed in a shell (PromQL's string escapes,
    the shell's quotes; a label value's controls made visible, `fmt.visible`)."""
    return "--selector " + fmt.visible(shlex.quote(f'job="{promql_string(job)}"'))


def said_errors(errors: dict[str, str], prometheus: str) -> list[str]:
    """`errors` (query field -> why) as lines, each error once: a why several queries share
    (Prometheus unreachable, an address that is no Prometheus, the budget spent) is one line
    with how many queries it hit and the address asked, in the order first met; a why of its
    own keeps its query's name (`query busy_ratio: HTTP 503: too many queries`). Each of 18
    queries said `cannot reach Prometheus` on a line of its own."""
    by_why: dict[str, list[str]] = {}
    for name, why in errors.items():
        by_why.setdefault(why, []).append(name)
    lines = []
    for why, names in by_why.items():
        if len(names) == 1:
            lines.append(f"query {names[0]}: {why}")
            continue
        which = f"every query ({len(names)})" if len(names) >= len(QUERIES) else \
            f"{len(names)} queries ({_some(names)})"
        # The address once: a why that names it already (`not_prometheus`) is not told it twice.
        where = "" if prometheus in why else f" to {prometheus}"
        lines.append(f"{which}{where}: {why}")
    return lines


def _some(names: list[str], shown: int = 4) -> str:
    """The first `shown` names, then `...`: a line, not a list of 17."""
    return ", ".join(names[:shown]) + (", ..." if len(names) > shown else "")


@dataclass(frozen=True, slots=True)
class FleetOptions:
    """`--selector`, `--lookback`, `--stale-after`, `--timeout` (the whole refresh's budget)."""

    selector: str = 'job="gapwatch"'
    lookback: str = "1h"
    stale_after_s: float = 60.0
    budget_s: float = 5.0


def refresh(client: PromClient, opts: FleetOptions,
            clock: Callable[[], float] = time.time) -> Refresh:
    """Ask every query (within `opts.budget_s` in all) and build the rows; when a row is
    stale, ask the targets API why (within the same budget)."""
    started = time.monotonic()
    answers: dict[str, list[Series]] = {}
    errors: dict[str, str] = {}
    waited = 0.0
    for q in QUERIES:
        left = _budget_left_s(opts, started)
        if left <= 0:
            errors[q.field] = _spent(opts)
            continue
        try:
            answers[q.field] = client.instant(render(q, opts.selector, opts.lookback), left)
        except PromError as exc:
            errors[q.field] = str(exc)
        waited += client.last_wait_s
    # No state answer, no rows (`Refresh.rows_failed`): boxes from `up` alone would each be
    # a NO_DATA row, a state nobody reported.
    rows = build_rows(answers, opts.stale_after_s) if "state" in answers else []
    if any(r.stale for r in rows):  # the fresh rows need no reason: not asked for them
        waited += _explain_stale(client, opts, rows, errors, started)
    jobs: list[str] | None = None
    if "state" in answers and not rows:
        jobs, waited_s = _jobs_with_rows(client, opts, started)
        waited += waited_s
    names_cut = len({r.instance for r in rows if name_was_cut(r.instance)})
    return Refresh(rows, errors, clock(), time.monotonic() - started, waited,
                   selector=opts.selector, jobs_with_rows=jobs, names_cut=names_cut)


def _jobs_with_rows(client: PromClient, opts: FleetOptions, started: float
                    ) -> tuple[list[str] | None, float]:
    """The scrape jobs whose targets have gapwatch's rows, whatever `--selector` says (None:
    not known, out of time or not answered: the empty table then names the selector alone),
    and the seconds waited on Prometheus."""
    left = _budget_left_s(opts, started)
    if left <= 0:
        return None, 0.0
    try:
        found = client.instant(render(JOBS_WITH_ROWS, opts.selector, opts.lookback), left)
    except PromError:
        return None, client.last_wait_s
    return _ranked_jobs(found), client.last_wait_s


def _ranked_jobs(found: list[Series]) -> list[str]:
    """The jobs of `found`, most boxes first as `topk` ranks them, then by name (`count by
    (job)`: one series a job). A count not read sorts last: only the order uses it."""
    ranked = sorted(found, key=lambda s: (-(s.value or 0.0), s.labels.get("job", "")))
    return [s.labels.get("job", "") for s in ranked]


def _budget_left_s(opts: FleetOptions, started: float) -> float:
    return opts.budget_s - (time.monotonic() - started)


def _spent(opts: FleetOptions) -> str:
    return f"skipped: the refresh's {opts.budget_s:g} s were spent"


def _explain_stale(client: PromClient, opts: FleetOptions, rows: list[FleetRow],
                   errors: dict[str, str], started: float) -> float:
    """Set `down_why` (and when, and where) on the stale rows from Prometheus's targets API;
    what failed goes to `errors["down_why"]` and leaves every reason None. Returns the seconds
    waited on Prometheus."""
    left = _budget_left_s(opts, started)
    if left <= 0:
        errors["down_why"] = _spent(opts)
        return 0.0
    try:
        selector = parse_selector(opts.selector)
    except ValueError as exc:  # not asked: which targets it means would be a guess
        errors["down_why"] = str(exc)
        return 0.0
    try:
        found = scrape_failures(client, selector, left)
    except PromError as exc:
        errors["down_why"] = str(exc)
        return client.last_wait_s
    by_box = found.by_box
    unmatched: set[str] = set()
    undecided: set[str] = set()
    for row in rows:
        if not row.stale:
            continue
        if row.instance in found.undecided and row.instance not in by_box:
            undecided.add(row.instance)  # not "not a target": which it is was not decided
            continue
        if row.instance not in by_box and row.up is not None:
            # Prometheus's `up` has it as a target, the selector read here picks none of its:
            # not "not a target", which would be false (regexes: Python's re here, RE2 there).
            unmatched.add(row.instance)
            continue
        failure = failure_of(by_box, row.instance)
        if failure is not None:
            row.down_why = failure.why
            row.down_last_scrape_t_wall_s = failure.last_scrape_t_wall_s
            row.down_scrape_url = failure.scrape_url
    said = []
    if unmatched:
        said.append(f"--selector, read here, picks no target of {len(unmatched)} box(es) "
                    "Prometheus scrapes: no reason said for them (its regexes are RE2's in "
                    "Prometheus, Python's here)")
    if undecided:
        said.append(f"--selector's regex could not tell in time whether it picks the targets "
                    f"of {len(undecided)} box(es): no reason said for them (Prometheus's RE2 "
                    "matches in linear time, Python's engine backtracks: a nested repeat "
                    "such as (\\w+-?)+)")
    if said:
        errors["down_why"] = "; ".join(said)
    return client.last_wait_s


def _key(s: Series) -> tuple[str, str]:
    return s.labels.get("instance", "?"), s.labels.get("gpu", "-")


def build_rows(answers: dict[str, list[Series]], stale_after_s: float) -> list[FleetRow]:
    """The rows from the answers (field -> series), worst first."""
    rows: dict[tuple[str, str], FleetRow] = {}
    for s in answers.get("state", []):
        key = _key(s)
        row = FleetRow(*key, state=s.labels.get("state", "NO_DATA"))
        # The same box and GPU twice (two jobs scraping one box, a box claiming another's
        # name): the worst state is kept. The last one in Prometheus's order won, so that a
        # BREAKDOWN answered before a CHAINED twin was never seen.
        if (had := rows.get(key)) is None or row.severity() > had.severity():
            rows[key] = row
    boxes = {inst for inst, _ in rows}
    for s in answers.get("up", []) + answers.get("age_s", []):
        inst = s.labels.get("instance", "?")
        if inst not in boxes:  # a target with no GPU row yet: the box still shows
            rows[(inst, "-")] = FleetRow(inst, "-")
            boxes.add(inst)
    by_box: dict[str, list[FleetRow]] = {}
    for row in rows.values():
        by_box.setdefault(row.instance, []).append(row)
    for q in QUERIES:
        if q.field != "state":
            _fill(q, answers.get(q.field, []), rows, by_box)
    for box_rows in by_box.values():
        # The box's PoSt counts rank one row of it: its first GPU's.
        min(box_rows, key=lambda r: _gpu_order(r.gpu)).post_ranks = True
        for row in box_rows:
            row.post_setting = post_setting_of(row)
    verdict_asked = "verdict" in answers
    for row in rows.values():
        if "exported" in answers and row.gpu != "-" and row.up == 1.0 and row.exported is None:
            # Only of a box scraped now: a dead box's series all go stale (its GPUs are not
            # "no longer exported", its box is down).
            row.exported = False
        row.stale = _stale(row, answers, stale_after_s)
        if not verdict_asked:
            # The verdict now unanswered: the newest of the lookback is shown, but whether it
            # is the box's now is not known (it read "the last it reported" of a live box).
            row.verdict_now = None
    return sorted(rows.values(), key=lambda r: (-r.severity(), r.post_rank_key(),
                                                -r.idle_total_s(), r.instance,
                                                _gpu_order(r.gpu)))


def _stale(row: FleetRow, answers: dict[str, list[Series]], stale_after_s: float
           ) -> bool | None:
    """Is the row's state not fresh, by the questions Prometheus answered: its box not scraped
    now (`up`), its last good scrape too old (`age_s`), or, its box scraped, its GPU no longer
    exported (`row.exported` False, set by `build_rows`). A question that failed judges nothing
    (a failed `up` made every row stale, a row `exported` showed live among them); with
    neither `up` nor `age_s` answered and nothing stale, freshness is not known (None): the
    state query reaches back a whole lookback, and a box dead for 50 minutes showed its last
    state as fresh."""
    judged = []
    if "up" in answers:
        judged.append(row.up != 1.0)
    if "age_s" in answers:
        judged.append(row.age_s is None or row.age_s > stale_after_s)
    if row.exported is not None:
        judged.append(not row.exported)
    if any(judged):
        return True
    return False if "up" in answers or "age_s" in answers else None


#: The verdicts of the PoSt advice the late count stands for: `gapwatch_proofs_late_total`
#: (`post_late`) counts a PoSt lost in a prover restart with the late ones, and the lookback
#: cannot tell which of them it counted.
LATE_COUNTS: tuple[str, ...] = tuple(v for v in MISSED_VERDICTS if v != "failed")


def counted(n: float | None) -> TypeGuard[float]:
    """Whether a count read from Prometheus (an `increase()`, not whole) counts one or more
    (a `TypeGuard`: a count that does is a number)."""
    return n is not None and round(n) > 0


def _setting_named(said: Sequence[str]) -> str | None:
    """The first setting named, "none" where each says none, None where none is said."""
    named = [s for s in said if s != NO_CAUSE]
    if named:
        return named[0]
    return NO_CAUSE if said else None


def late_count_unclear(row: FleetRow) -> bool:
    """Whether the row's late count may be of PoSts lost or of PoSts late, and the box's
    advice names a different setting for each: which applies is not known. The box exports
    the advice of every PoSt its session holds, so a PoSt lost now beside one late hours ago
    headlined the late one's setting (`PoSt 1 late: [memory] eviction_min_idle`)."""
    if not counted(row.post_late):
        return False
    said = {_setting_named(row.post_advice[v]) for v in LATE_COUNTS if v in row.post_advice}
    return len(said) > 1


def post_late_words(row: FleetRow) -> str:
    """What the late count is said as: `late` only where the box's advice tells its PoSts
    late and none lost, else `lost or late` (`gapwatch_proofs_late_total` takes the lost with
    the late: a box exporting no advice read `late` in its headline while its detail said
    `went late or were lost`)."""
    return "late" if "late" in row.post_advice and "lost" not in row.post_advice \
        else "lost or late"


def post_setting_of(row: FleetRow) -> str | None:
    """The setting the row's PoSt advice names for the PoSts the lookback counted: the first
    setting named for a verdict counted (failed, then lost and late, which one count holds),
    "none" where the advice of each such verdict names none, None where it says nothing of
    them or where the late count's PoSts may be lost or late and the two name different
    settings (`late_count_unclear`). The advice's other verdicts are not the lookback's (an
    old late PoSt's setting headlined a failure now)."""
    if late_count_unclear(row):
        return None
    seen = [*(("failed",) if counted(row.post_failed) else ()),
            *(LATE_COUNTS if counted(row.post_late) else ())]
    return _setting_named([s for verdict in seen for s in row.post_advice.get(verdict, ())])


def _gpu_order(gpu: str) -> tuple[int, str]:
    # ASCII digits only: `str.isdigit` also holds for "²" and other digits `int` refuses, and a
    # `gpu` label of "²" from one box raised ValueError out of the sort: `fleet --once` died
    # with a traceback and the screen never showed any row ("refresh failed").
    return (int(gpu), "") if gpu.isascii() and gpu.isdigit() else (1 << 30, gpu)


#: The most idle kinds a box-level idle answer spreads over a box's GPUs (gapwatch has four);
#: the rest are added up under "other", so that a box's rows times its kinds stays small.
MAX_BOX_KINDS = 16


#: The longest a field in seconds can be: a century (a scrape's age, a gap's seconds, a PoSt's
#: latency). Longer is no figure of a box gapwatch watched: 1e308 s was a 300-digit cell.
MAX_SECONDS = 100 * 365.25 * 86400
#: Clock skew between Prometheus and this host a scrape's age may show (negative, read as 0).
AGE_SKEW_S = 3600.0
#: The largest count a float holds exactly (2^53): a count beyond it is none.
MAX_COUNT = float(1 << 53)
#: What each field's value can be, from the metric it is read from (queries.py): a value
#: outside is not known (None), as NaN and the infinities are (`client._number`). A Prometheus
#: (or a box's exporter it scrapes) answering 1e308, -1e308 or -0 showed `inf%`, `-0%`,
#: `-0.0x`, IDLE and AGE cells of 300 digits, a 522-character line. The one bound of the
#: fleet's figures, where each enters a row (`_fill`); `-0` is read as 0.
CAN_BE: dict[str, tuple[float, float]] = {
    "up": (0.0, 1.0),  # a scrape failed or worked
    "busy_ratio": (0.0, 1.0), "chaining_ratio": (0.0, 1.0),  # shares of the time
    "throttled": (0.0, 1.0),  # a 0/1 gauge
    # Seconds read at the period per second over 5 minutes: at most 1, and half as much
    # again for rate()'s extrapolation over scrapes that jitter (only "below 0.9" is read).
    "read_share_5m": (0.0, 1.5),
    "age_s": (-AGE_SKEW_S, MAX_SECONDS),
    # Seconds of the gaps that closed in 5 minutes (a gap counts whole as it closes: more than
    # the window when it began before it), the last WinningPoSt's latency.
    "idle_s_5m": (0.0, MAX_SECONDS), "post_last_latency_s": (0.0, MAX_SECONDS),
    # How long ago a PoSt last went wrong: now less a step's time (clock skew as `age_s`).
    "post_trouble_age_s": (-AGE_SKEW_S, MAX_SECONDS),
    # Counts in the lookback (`increase` of counters: never below 0).
    "post_late": (0.0, MAX_COUNT), "post_untimed": (0.0, MAX_COUNT),
    "post_failed": (0.0, MAX_COUNT), "gpu_errors": (0.0, MAX_COUNT),
    "restarts": (0.0, MAX_COUNT),
    # Throughput after closing idle time over before (`core.payoff.if_closed`): at least 1.
    "payoff_gain": (1.0, MAX_COUNT),
    # When the box last reported a verdict: a wall time between 1970 and the year 10000.
    "verdict_last": (0.0, 253_402_300_800.0),
}


def can_be(field: str, value: float | None) -> float | None:
    """`value` of `field` where the metric can have it (`CAN_BE`), `-0` as 0; else None."""
    if value is None:
        return None
    low, high = CAN_BE.get(field, (-math.inf, math.inf))
    return value + 0.0 if low <= value <= high else None


def _bounded(field: str, series: list[Series]) -> list[Series]:
    """The series of `field` with each value outside what it can be made None (not known)."""
    if field not in CAN_BE:
        return series
    return [Series(s.labels, can_be(field, s.value), s.points) for s in series]


def _fill(q: Query, series: list[Series], rows: dict[tuple[str, str], FleetRow],
          by_box: dict[str, list[FleetRow]]) -> None:
    series = _bounded(q.field, series)
    # A box-level series (per="box", or one without a gpu label) sets its field on every GPU
    # row of its box. Set one by one, N such series on a box of N GPUs were N*N assignments
    # (20,000 of each: 94 s on the refresh thread): they are merged per box first (the last
    # one counts, as it did; idle seconds add up by kind) and each row is set once.
    per_box: dict[str, list[Series]] = {}
    for s in series:
        inst, gpu = _key(s)
        if q.per == "box" or gpu == "-":
            per_box.setdefault(inst, []).append(s)
        elif (row := rows.get((inst, gpu))) is not None:
            _set(row, q.field, s)
    for inst, group in per_box.items():
        merged = _merged(q.field, group)
        for row in by_box.get(inst, []):
            for s in merged:
                _set(row, q.field, s)


def _merged(name: str, group: list[Series]) -> list[Series]:
    """What a box's box-level series of field `name` come to: the last one (as `_set` would
    leave a row after setting them one by one), but `age_s` skips unknown values, `up` keeps
    its highest (a box scraped by one job is scraped) and idle adds up by kind."""
    if name == "idle_s_5m":
        by_kind: dict[str, float] = {}
        for s in group:
            if s.value is not None and s.value > 0:
                kind = s.labels.get("kind", "?")
                if kind not in by_kind and len(by_kind) >= MAX_BOX_KINDS:
                    kind = "other"
                by_kind[kind] = by_kind.get(kind, 0.0) + s.value
        return [Series({"kind": k}, v) for k, v in by_kind.items()]
    if name == "age_s":
        known = [s for s in group if s.value is not None]
        return known[-1:]
    if name == "post_setting":
        # Every (verdict, setting) the box's advice says: which one the row shows depends on
        # the verdicts the lookback counted (`post_setting_of`). Merged here, once a box: each
        # series was set on every row of the box, looked for in the row's settings and the
        # tuple copied to add it (3,000 on 100 rows: 6 s; quadratic in them).
        return _post_settings(group)
    if name == "up":
        # Two jobs scraping one box: scraped by one is scraped (the last in Prometheus's order
        # won, and a canary job's 404 made a box scraped every 5 s stale).
        known = [s for s in group if s.value is not None]
        return [max(known, key=lambda s: s.value or 0.0)] if known else []
    return group[-1:]


#: The settings a box's PoSt advice is read with for one verdict, in the order answered: the
#: advice names one a PoSt, of a dozen cuzk settings, so a box of any session holds a few.
MAX_POST_SETTINGS = 8


def _post_settings(group: list[Series]) -> list[Series]:
    """A box's PoSt advice series as few: each (verdict, setting) once, of the verdicts the
    query asks for (`MISSED_VERDICTS`: a hostile answer's others were listed on every row),
    the first MAX_POST_SETTINGS settings of each."""
    said: dict[str, dict[str, None]] = {}
    for s in group:
        verdict, setting = s.labels.get("verdict"), s.labels.get("setting")
        if verdict not in MISSED_VERDICTS or setting is None:
            continue
        settings = said.setdefault(verdict, {})
        if len(settings) < MAX_POST_SETTINGS:
            settings[setting] = None
    return [Series({"verdict": v, "setting": setting}) for v, settings in said.items()
            for setting in settings]


def _set_verdict(row: FleetRow, s: Series) -> None:
    row.cause = s.labels.get("cause")
    row.cause_words = s.labels.get("cause_words")
    row.setting = s.labels.get("setting")


def _set(row: FleetRow, name: str, s: Series) -> None:
    if name == "verdict":
        _set_verdict(row, s)
        row.verdict_now = True
    elif name == "verdict_last":
        # Every label set of the lookback comes, each with its last report's time: the newest
        # is the last verdict (the last one listed was, an hour-old cause among them). Only
        # for a row without a verdict now (`verdict` is asked first).
        if row.verdict_now or (row.verdict_t_wall_s is not None
                               and (s.value is None or s.value < row.verdict_t_wall_s)):
            return
        _set_verdict(row, s)
        row.verdict_now, row.verdict_t_wall_s = False, s.value
    elif name == "idle_s_5m":
        if s.value is not None and s.value > 0:
            kind = s.labels.get("kind", "?")
            row.idle_s_5m[kind] = row.idle_s_5m.get(kind, 0.0) + s.value
    elif name == "age_s" and s.value is not None:
        row.age_s = max(0.0, s.value)
    elif name == "exported":
        row.exported = True
    elif name == "post_setting":
        verdict, setting = s.labels.get("verdict"), s.labels.get("setting")
        if verdict is not None and setting is not None:
            had = row.post_advice.get(verdict, ())
            if setting not in had:
                row.post_advice[verdict] = (*had, setting)
    else:
        setattr(row, name, s.value)


#: The table's columns (heading, width) as `cells` fills them: the screen and `--once` share them.
#: What 80 columns must show comes first: the box, its state and busy share, and HEADLINE, the
#: one thing to know of it (`headline`: its PoSts gone wrong, the setting to change and its
#: gain, ...); the figures behind it follow (the screen scrolls sideways to them). SETTING,
#: PoSt and HLTH past 80 columns, a box losing blocks read `none` there.
COLUMNS: tuple[tuple[str, int], ...] = (
    ("BOX", 16), ("GPU", 3), ("STATE", 10), ("BUSY", 5), ("HEADLINE", 39), ("IDLE5m", 6),
    ("AGE", 4), ("SETTING", 34), ("GAIN", 5), ("CHAIN", 5), ("PoSt", 9), ("HLTH", 4),
    ("CAUSE", 60),
)
#: What each column says, in the columns' order: the fleet screen's `?` (docs/fleet.md has
#: the queries behind them). One entry per column (a test holds them in step).
COLUMN_LEGEND: tuple[tuple[str, str], ...] = (
    ("BOX", "Prometheus's instance (the box's gapwatch /metrics)"),
    ("GPU", "the GPU's index on its box"),
    ("STATE", "chaining state now: BREAKDOWN, GAPS, NO_DATA, IDLE, CHAINED (worst first); "
              "DOWN: Prometheus cannot scrape the box, STALE: its last scrape too old or the "
              "GPU no longer exported (HEADLINE says the last known state); ? before it: not "
              "known if fresh"),
    ("BUSY", "busy share of the detector's window; ~ before it: the box is stale, its last "
             "known share (? : not known if fresh)"),
    ("HEADLINE", "the one thing to know of the box, the first that holds: its PoSts that went "
                 "late, were lost or failed in the lookback (a block lost: such a box ranks "
                 "first) and the setting its PoSt advice names; why Prometheus cannot scrape "
                 "it; its GPU's errors; the setting to change and its gain; the cause in "
                 "words; what HLTH flags"),
    ("IDLE5m", "idle seconds in gaps over the last 5 minutes, with the top kind's letter (S "
               "starved, T transfer, H host, ? unknown)"),
    ("AGE", "how long ago Prometheus last scraped the box"),
    ("SETTING", "the cuzk setting that closes the cause (none: no setting does)"),
    ("GAIN", "throughput gain expected from changing SETTING (closing the cause's gaps); "
             "- where no setting closes them"),
    ("CHAIN", "share of host-to-device copy time that ran while the SMs were busy; ~ or ? "
              "before it as BUSY"),
    ("PoSt", "the last WinningPoSt's latency / PoSts late in the lookback; !N: N failed, ?N: "
             "N not timed"),
    ("HLTH", "T clocks held down by heat or a HW slowdown (not the power cap), X a GPU "
             "error (XID, uncorrected ECC, the GPU lost, a failed row remap), R prover "
             "restarts, D data holes (read at its period less than 90 % of the last 5 "
             "minutes); ok: none; ~ before them: the box is stale, its last known flags"),
    ("CAUSE", "the stall that idled the GPU longest in the window, in words, or why "
              "Prometheus cannot scrape the box"),
)
#: Short words for the idle column's top kind (the dashboard's letters).
_KIND_LETTER = {"pcie_starved": "S", "transfer_bound": "T", "host_stall": "H", "unknown": "?"}


def _post_cell(r: FleetRow) -> str:
    """`35s/1`: the last WinningPoSt's latency / PoSts late in the lookback; ` !1` after it:
    one more failed (cuzk said so: a WinningPoSt's block lost as a late one's is, a
    WindowPoSt's sectors faulted at its deadline, and "0 late" of a box
    whose PoSts all failed read as all on time); ` ?2`: two more could not be timed (each may
    have been late: "0 late" is not "all on time")."""
    if r.post_last_latency_s is None and r.post_late is None and r.post_untimed is None \
            and r.post_failed is None:
        return "-"
    lat = short_s(r.post_last_latency_s) if r.post_last_latency_s is not None else "-"
    late = count_text(r.post_late) if r.post_late is not None else "-"
    return f"{lat}/{late}{_said_if_any(' !', r.post_failed)}{_said_if_any(' ?', r.post_untimed)}"


def _said_if_any(mark: str, count: float | None) -> str:
    """` !2`: a count after its mark, said only when some were counted (rounded as the late
    count is: `increase` is 0 exactly when nothing was counted)."""
    return f"{mark}{count_text(count)}" if counted(count) else ""


def short_s(seconds: float) -> str:
    """Seconds in at most 4 characters, in the unit a person reads (`42s`, `15m`, `9h`, `12d`,
    `3y`): a cell of AGE, IDLE5m or PoSt fits its column for any time a field can hold
    (`MAX_SECONDS`; a day read as `86400s` did not). The unit is chosen by the figure as it
    will print, rounded: 599.6 s printed `600s` and 999.6 days `1000d` (5 characters)."""
    for unit, size, below in (("s", 1.0, 600.0), ("m", 60.0, 600.0), ("h", 3600.0, 72.0),
                              ("d", 86400.0, 1000.0)):
        if round(seconds / size) < below:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds / (365.25 * 86400):.0f}y"


def count_text(count: float, digits: int = 5) -> str:
    """A count as it is up to `digits` digits (12345 late PoSts read `12345`, never cut),
    else in thousands, millions ... in at most 4 characters (`123k`, `9P`): any count a field
    holds (`MAX_COUNT`) is a short cell."""
    if count < 10**digits - 0.5:
        return f"{count:.0f}"
    for unit, size in (("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12)):
        if count / size < 999.5:
            return f"{count / size:.0f}{unit}"
    return f"{count / 1e15:.0f}P"


def headline(r: FleetRow) -> str:
    """The one thing to know of the row, the first that holds (the HEADLINE column, what 80
    columns show of a box past its state and busy share): its PoSts gone wrong
    (`_post_headline`); why Prometheus cannot scrape its box; its GPU's own errors; the
    setting to change, with its gain; the cause in words; then what HLTH flags (clocks held
    down, prover restarts, data holes: HLTH is past 80 columns); "-". Unsanitised: `cells`
    makes it visible."""
    if r.stale:
        # A dead box ranked first for its PoSts says them, then its last known state.
        if r.post_ranks and r.post_trouble():
            return f"{_post_headline(r)}; {_stale_headline(r)}"
        return _stale_headline(r)
    if r.post_ranks and r.post_trouble():
        return _post_headline(r)
    if counted(r.gpu_errors):
        return f"GPU errors: {count_text(r.gpu_errors)} (XID, ECC, GPU lost; HLTH X)"
    if r.setting and r.setting != NO_CAUSE:
        gain = _gain_cell(r)
        return r.setting if gain == "-" else f"{r.setting} {gain}"
    if r.cause_words and r.cause_words != "none":
        return r.cause_words
    if r.cause and r.cause != NO_CAUSE:
        return r.cause
    return _health_headline(r)


def _stale_headline(r: FleetRow) -> str:
    """`last known GAPS: connection refused`: a row not fresh says its last known state as
    such (its STATE cell says DOWN or STALE) and why, in Prometheus's words (its `scrape
    failed: ` said by DOWN), or that a live box no longer exports the GPU. How long ago its
    box last answered is AGE's: said here too, the reason was cut at 80 columns."""
    if r.down_why:
        why = r.down_why.removeprefix("scrape failed: ")
    elif r.exported is False and r.up == 1.0:
        why = "its box no longer exports this GPU"
    else:
        why = "no fresh scrape"
    return f"last known {r.state}: {why}"


def _health_headline(r: FleetRow) -> str:
    """What HLTH flags other than GPU errors, in words, for a row with nothing more to say."""
    said = [words for letter, words in (("T", "clocks held down"), ("R", "prover restarts"),
                                        ("D", "data holes")) if letter in r.health()]
    return f"{', '.join(said)} (HLTH)" if said else "-"


def _post_headline(r: FleetRow) -> str:
    """`PoSt 2 late 12m ago: [memory] eviction_min_idle`: how many PoSts went late (lost in a
    restart among them: `lost or late` where the box's advice has lost ones) and failed in the
    lookback, how long ago the last did (where known: a count of the lookback read as now),
    then the setting the box's PoSt advice names, `no cuzk setting` where it names none, or,
    from a gapwatch that exports no advice or where it cannot say which of its lost and late
    PoSts were counted (`late_count_unclear`), where the advice is read."""
    said = [f"{count_text(n)} {how}" for n, how in (
        (r.post_late, post_late_words(r)), (r.post_failed, "failed"))
        if counted(n)]
    head = f"PoSt {', '.join(said)}"
    if r.post_trouble_age_s is not None:
        head += f" {_ago(r.post_trouble_age_s)} ago"
    if r.post_setting is None:
        return f"{head} (the box's report says why)"
    return f"{head}: {r.post_setting if r.post_setting != NO_CAUSE else 'no cuzk setting'}"


def _ago(seconds: float) -> str:
    """How long ago, in minutes under an hour (`3m`, `<1m`: the figure is read at minute
    steps, `180s` said a precision it has not), else as `short_s`."""
    if seconds < 30.0:
        return "<1m"
    return f"{seconds / 60:.0f}m" if seconds < 3600.0 else short_s(seconds)


def cells(r: FleetRow) -> tuple[str, ...]:
    """One row as text cells (outside text made visible, numbers rounded; "-": not known)."""
    state = r.state_word()
    busy = _last_known(r, fmt.frac_pct(r.busy_ratio)) if r.busy_ratio is not None else "-"
    chain = _last_known(r, fmt.frac_pct(r.chaining_ratio)) if r.chaining_ratio is not None \
        else "-"
    idle = "-"
    if r.idle_s_5m:
        top = max(r.idle_s_5m, key=lambda k: r.idle_s_5m[k])
        idle = f"{short_s(r.idle_total_s())} {_KIND_LETTER.get(top, '?')}"
    post = _post_cell(r)
    age = "-" if r.age_s is None else short_s(r.age_s)
    cause = r.cause_words if r.cause_words and r.cause_words != "none" else (r.cause or "-")
    # A box Prometheus cannot scrape: why, before the cause it last reported (that is old).
    cause = r.down_why or cause
    # Every label is Prometheus's text, the state's too (an unknown one is shown as it came).
    return (fmt.visible(r.instance), fmt.visible(r.gpu), fmt.visible(state), busy,
            fmt.visible(headline(r)), idle, age, fmt.visible(r.setting or "-"), _gain_cell(r),
            chain, post, r.health(), fmt.visible(cause))


def _last_known(r: FleetRow, figure: str) -> str:
    """A figure of the GPU's (BUSY, CHAIN) as read: `~50%` where the row is stale (its box's
    last, up to a lookback old), `?50%` where its freshness is not known, as HLTH marks them.
    Unmarked, a box DOWN 25 minutes read `50%` busy beside DOWN."""
    if r.stale is False:
        return figure
    return ("~" if r.stale else "?") + figure


def _gain_cell(r: FleetRow) -> str:
    """`1.7x`: what changing SETTING would gain, the payoff of the verdict now (None for a dead
    box's last one: its gaps are not known now). "-" where there is no setting to change: a
    box exports its cause's payoff whatever the cause, and `none 1.5x` (a first wave, PoSt)
    read as a gain waiting on a change that does not exist, ranking that box among those to
    fix first."""
    if r.payoff_gain is None or not r.setting or r.setting == NO_CAUSE:
        return "-"
    gain = r.payoff_gain
    return f"{gain:.1f}x" if gain < 99.95 else f"{count_text(gain, digits=4)}x"
