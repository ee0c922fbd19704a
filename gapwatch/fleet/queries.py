"""What `gapwatch fleet` asks Prometheus, in one table: every metric name it reads is here.

Who reads it: `gapwatch.fleet.rows` (every refresh) and the tests (which check that each name
the table calls required is on a real gapwatch's /metrics). A query marked `optional` reads a
series only some gapwatch versions export (the chaining figure, PoSt, GPU health): when
Prometheus has none, the column says "-"; renaming one is an edit of this table only.

Each PromQL text has two holes: `{sel}`, the label matchers that pick gapwatch's targets
(`--selector`, default `job="gapwatch"`; `{sel_}` where more matchers follow it:
`more_matchers`), and `{lb}`, how far back a box that stopped reporting is still remembered
(`--lookback`): `last_over_time` reaches past Prometheus's staleness markers, so a dead box
keeps its last state and is shown stale, not dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from gapwatch.core.health import GPU_ERROR_KINDS, GPU_STATE_KINDS, HELD_DOWN_REASONS
from gapwatch.cuzk.post_advice import MISSED_VERDICTS

#: How old a box's last good scrape may be (resolution of that figure once its scrapes fail:
#: `FRESH_STEP`; while its latest scrape succeeded, it is exact).
FRESH_WINDOW = "15m"
FRESH_STEP = "5s"
#: The step at which a box's PoSt counts are read for when one last went wrong.
POST_WHEN_STEP = "1m"
#: A box's latest scrape, when it succeeded: its own time, exact.
_GOOD_NOW = "(timestamp(up{{{sel}}}) and up{{{sel}}} == 1)"


@dataclass(frozen=True, slots=True)
class Query:
    """One instant query: the row field it fills, its PromQL, whether its series carry a `gpu`
    label (else the value is the box's, shown on each of its GPUs), and whether a gapwatch may
    lack it."""

    field: str
    promql: str
    per: Literal["gpu", "box"] = "gpu"
    optional: bool = False


#: The clocks-event reasons that hold a GPU below its speed under load (heat, hardware
#: slowdowns: `health.HELD_DOWN_REASONS`, as `GapwatchGpuThrottled` reads them), as a PromQL
#: regex. Not the power cap: a loaded H200 sits at it in most readings, and `T` was on every
#: busy box.
_SLOWING = "|".join(sorted(HELD_DOWN_REASONS))
#: The GPU's own errors, as the alerts and `--on-event` take them (an XID, uncorrected ECC
#: errors, the GPU lost, a failed row remap): the column counted XIDs alone, so a box whose GPU
#: fell off the bus read `ok` while the alert fired. The events by their increase over the
#: lookback, the states (a GPU lost, a failed row remap: `health.GPU_STATE_KINDS`) while their
#: count is above 0, as `GapwatchGpuLost` and `GapwatchGpuRowRemapFailed` read them.
_GPU_ERROR_EVENTS = "|".join(sorted(GPU_ERROR_KINDS - GPU_STATE_KINDS))
_GPU_ERROR_STATES = "|".join(sorted(GPU_ERROR_KINDS & GPU_STATE_KINDS))
#: The PoSt advice's verdicts of a PoSt that missed (`post_advice.MISSED_VERDICTS`), a regex.
_MISSED = "|".join(MISSED_VERDICTS)

QUERIES: tuple[Query, ...] = (
    # The rows: every (box, GPU) with a chaining state in the lookback, with its last state.
    Query("state", "last_over_time(gapwatch_gpu_chain_state{{{sel}}}[{lb}]) == 1"),
    # The box: scraped now (1), failing (0), or gone from the targets (absent); and when it
    # last answered a scrape. Asked right after the rows: without them no row's freshness is
    # known (`rows._stale`), and a slow Prometheus spends the budget on the first questions.
    Query("up", "up{{{sel}}}", per="box"),
    # The latest good scrape: the latest scrape itself when it succeeded, else the last good
    # one in the subquery's steps (to within a step). The steps alone read a box scraped every
    # second 0 to 5 s old: with `--stale-after 3` it flapped stale and fresh at each refresh.
    Query("age_s", f"time() - max by (instance) ({_GOOD_NOW} or "
          f"max_over_time({_GOOD_NOW}[{FRESH_WINDOW}:{FRESH_STEP}]))", per="box"),
    # Which of them the box exports now (no lookback: a series the box stopped exporting gets
    # a staleness marker at the next scrape): a GPU gone from a live box's /metrics (lost at a
    # restart of its gapwatch) kept its last state, fresh-looking, for the whole lookback.
    Query("exported", "count by (instance, gpu) (gapwatch_gpu_chain_state{{{sel}}})"),
    Query("busy_ratio", "last_over_time(gapwatch_gpu_busy_ratio{{{sel}}}[{lb}])"),
    # The verdict (cause, words, setting) the box exports now: `last_over_time` over the
    # lookback gave every label set of the hour, and the row kept whichever Prometheus listed
    # last ("cuzk loads the SRS" on a box whose /metrics said cause="none").
    Query("verdict", "gapwatch_gpu_verdict_info{{{sel}}}"),
    # A box that exports none now (dead: its series went stale): each label set of the
    # lookback with when it was last reported, the newest kept (`rows._set`). Its steps are
    # a minute apart: a set reported in the last minute may not be in it yet.
    Query("verdict_last",
          "max_over_time(timestamp(gapwatch_gpu_verdict_info{{{sel}}})[{lb}:1m])"),
    # The payoff of the verdict now: a gauge the box no longer exports (its gaps closed) kept
    # its old value for the lookback (2.63x on a box 100 % busy). None for a dead box.
    Query("payoff_gain", "gapwatch_gpu_verdict_payoff_ratio{{{sel}}}"),
    Query("idle_s_5m",
          "sum by (instance, gpu, kind) (increase(gapwatch_gap_seconds_total{{{sel}}}[5m]))"),
    # Exported by later gapwatch versions (the chaining figure, PoSt, GPU and prover health).
    Query("chaining_ratio", "last_over_time(gapwatch_chaining_ratio{{{sel}}}[{lb}])",
          optional=True),
    # PoSt: the latest completed WinningPoSt's latency (the proof a block reward rides on),
    # and the proofs of every kind that went late, and that could not be timed (on time or
    # late not known), in the lookback: `increase`, as restarts and XIDs. The box's own count
    # since its gapwatch started (`last_over_time`) went back to 0 when that gapwatch
    # restarted (4 late WinningPoSts minutes before read "0 late"), and kept one late a week
    # ago for good.
    Query("post_last_latency_s",
          "last_over_time(gapwatch_proof_last_seconds{{{sel_}proof_kind=\"winning-post\"}}"
          "[{lb}])", per="box", optional=True),
    # Late: each proof that went late once, still running past its deadline, ended late or
    # lost in a restart (`gapwatch_proofs_late_total`, as the alert GapwatchPoStLate counts
    # them); a gapwatch that does not export it, its proofs that ended late. Those alone read
    # "0 late" for a WinningPoSt stuck past its deadline then lost in a restart.
    Query("post_late",
          "sum by (instance) (increase(gapwatch_proofs_late_total{{{sel}}}[{lb}])) or "
          "sum by (instance) (increase(gapwatch_proofs_total{{{sel_}verdict=\"late\"}}"
          "[{lb}]))", per="box", optional=True),
    # Not timed: its begin was not read (a log followed from mid-proof, lines lost). Counted
    # apart from the late ones: "0 late" said nothing of a box whose PoSts were never timed.
    Query("post_untimed",
          "sum by (instance) (increase(gapwatch_proofs_total{{{sel_}verdict=\"unknown\"}}"
          "[{lb}]))", per="box", optional=True),
    # Failed: cuzk said so (no proof came of it, a WinningPoSt's block lost as a late one's
    # is; the alert GapwatchPoStFailed): neither late nor on time, and a box whose PoSts all
    # failed read "0 late".
    Query("post_failed",
          "sum by (instance) (increase(gapwatch_proofs_total{{{sel_}verdict=\"failed\"}}"
          "[{lb}]))", per="box", optional=True),
    # When one last went wrong (seconds ago): the latest minute step of the lookback at which
    # a late or failed count rose over the 2 minutes before it (2: a rise between two samples
    # a step apart is inside one window). Up to 2 minutes short, `PoSt 1 late 12m ago`: a
    # count of the lookback read as now.
    Query("post_trouble_age_s",
          "time() - max by (instance) (max_over_time(timestamp("
          "sum by (instance) (increase(gapwatch_proofs_late_total{{{sel}}}[2m])) > 0 or "
          "sum by (instance) (increase(gapwatch_proofs_total{{{sel_}verdict=~\"late|failed\"}}"
          f"[2m])) > 0)[{{lb}}:{POST_WHEN_STEP}]))", per="box", optional=True),
    # What to change for them: the settings the box's PoSt advice names for the PoSt that
    # failed, were lost or went late in the lookback (`gapwatch_proof_advice_info`, the
    # report's "What to change" PoSt lines as a bounded label set; "none": no cuzk setting).
    # The box's verdict is its GPUs' stall: it said `none` of a box whose WinningPoSts went
    # late behind an evicted SRS. By verdict: the box exports the advice of every PoSt its
    # session holds, and without it a PoSt failed now was headlined with the setting of one
    # late yesterday (`rows.post_setting_of` matches them to the counts).
    Query("post_setting",
          "max by (instance, verdict, setting) (last_over_time(gapwatch_proof_advice_info{{{sel_}"
          f"verdict=~\"{_MISSED}\"}}}}[{{lb}}]))", per="box", optional=True),
    # Throttled: a reason that holds the clocks down by heat or a hardware slowdown, held in
    # the last reading.
    Query("throttled",
          "max by (instance, gpu) (last_over_time(gapwatch_gpu_clocks_event_reason{{{sel_}"
          f"reason=~\"{_SLOWING}\"}}}}[{{lb}}]))",
          optional=True),
    Query("gpu_errors",
          "sum by (instance, gpu) (increase(gapwatch_gpu_hardware_events_total{{{sel_}"
          f"kind=~\"{_GPU_ERROR_EVENTS}\"}}}}[{{lb}}]) or max_over_time("
          f"gapwatch_gpu_hardware_events_total{{{{{{sel_}}kind=~\"{_GPU_ERROR_STATES}\"}}}}"
          "[{lb}]))",
          optional=True),
    # The share of the last 5 minutes the GPU was read at its period (fine samples): a GPU read
    # in holes (NVML blocked, skipped ticks) has gaps gapwatch could not see. Not judged for a
    # box whose gapwatch started less than 5 minutes ago: rate() over a younger series reads
    # its age's share (0.2 a minute after a start: D on every GPU of it).
    Query("read_share_5m",
          "sum by (instance, gpu) (rate(gapwatch_gpu_sampled_seconds_total{{{sel_}"
          "kind=\"fine\"}}[5m])) unless on (instance) "
          "(time() - gapwatch_self_process_start_time_seconds{{{sel}}} < 300)", optional=True),
    Query("restarts",
          "sum by (instance) (increase(gapwatch_prover_events_total{{{sel_}kind=\"restart\"}}"
          "[{lb}]))", per="box", optional=True),
)

#: The range query of a box's detail: idle seconds per minute by GPU and kind.
DETAIL_IDLE = ("sum by (gpu, kind) (increase(gapwatch_gap_seconds_total{{{sel_}"
               "instance=\"{instance}\"}}[1m]))")
#: ... and every verdict (cause, setting) the box gave in the same minutes: the verdict at the
#: minute's last instant alone said "no cause in the window" beside 38 s of idle, its cause (a
#: restart's SRS reload) gone from the 30 s verdict window by the minute's end.
DETAIL_VERDICT = ("last_over_time(gapwatch_gpu_verdict_info{{{sel_}instance=\"{instance}\"}}"
                  "[1m])")


def metric_names() -> set[str]:
    """Every gapwatch metric the table reads (the tests check the required ones exist)."""
    names: set[str] = set()
    for q in QUERIES:
        names.update(re.findall(r"\b(gapwatch_[a-z0-9_]+)", q.promql))
    return names


def required_names() -> set[str]:
    """The metric names of the non-optional queries."""
    return {n for q in QUERIES if not q.optional
            for n in re.findall(r"\b(gapwatch_[a-z0-9_]+)", q.promql)}


def more_matchers(sel: str) -> str:
    """The selector as the head of a longer list of matchers (the `{sel_}` hole: `{sel_}kind=
    "restart"`): with its comma, or nothing when it has no matcher. An empty `--selector` (every
    target) was spliced as `{,kind="restart"}`, which is no PromQL: six queries answered HTTP
    400 and the PoSt and HLTH columns read "-" for every box. PromQL takes a trailing comma,
    so one the operator wrote is kept as it is."""
    s = sel.strip()
    return s if not s or s.endswith(",") else f"{s},"


#: Asked only when the selector picks no box: which scrape jobs (at most `JOBS_SHOWN`) do have
#: gapwatch's rows, whatever the selector. A scrape job named other than `gapwatch` gave an
#: empty table, exit 0, naming neither the selector used nor `--selector`.
JOBS_SHOWN = 5
JOBS_WITH_ROWS = Query("jobs_with_rows",
                       f"topk({JOBS_SHOWN}, count by (job) "
                       "(last_over_time(gapwatch_gpu_chain_state[{lb}]) == 1))", per="box")


#: PromQL's own escapes (Go's) for what has one: `\\`, `"` and the controls with a letter.
_NAMED_ESCAPES = {"\\": "\\\\", '"': '\\"', "\a": "\\a", "\b": "\\b", "\f": "\\f",
                  "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def promql_string(text: str) -> str:
    """`text` as the inside of a double-quoted PromQL string, which Prometheus reads back as
    `text`: `\\` and `"` escaped, a newline, carriage return, tab and the other controls
    with a letter as `\\n`, `\\r`, `\\t` ..., every other character Python does not print
    (ESC, DEL, C1 controls, a line separator) as `\\xNN`, `\\uNNNN` or `\\UNNNNNNNN`.
    PromQL's string literals follow Go's escapes; escaped for `\\` and `"` only, a box whose
    name held a raw newline gave a detail query Prometheus refused (`unterminated quoted
    string`), and the detail never opened. Who calls it: `detail.box_detail` (a box's name),
    `rows` (a scrape job's `--selector` to give), `commands.fleet` (a bare value quoted)."""
    if text.isprintable() and "\\" not in text and '"' not in text:
        return text  # the common case, checked in C
    return "".join(_escaped(c) for c in text)


def _escaped(c: str) -> str:
    named = _NAMED_ESCAPES.get(c)
    if named is not None:
        return named
    if c.isprintable():
        return c
    code = ord(c)
    if code < 0x80:
        return f"\\x{code:02x}"  # a byte of ASCII: Go reads \xNN as that byte
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def render(q: Query, sel: str, lookback: str) -> str:
    """The query's PromQL with its holes filled: `{sel}` the selector alone, `{sel_}` the
    selector before more matchers (`more_matchers`), `{lb}` the lookback."""
    return q.promql.format(sel=sel, sel_=more_matchers(sel), lb=lookback)
