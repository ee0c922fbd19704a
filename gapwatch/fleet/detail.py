"""A box's recent history, for the fleet screen's detail (Enter on a row).

Who calls it: `gapwatch.ui.fleet` (on a worker thread). Prometheus holds counters, not single
gaps: what it can give is, per minute of the last `minutes`, the idle seconds of the gaps that
closed then on each GPU, by kind, beside every verdict gapwatch gave in that minute (its cause
in words and the setting to change, with its step). That is what is shown, and the screen says
so; each gap's own hint is on the box (its dashboard, snapshots, `gapwatch report`). A box
Prometheus cannot scrape says why first (`scrape_line`: its targets API's words, from the row),
and a box whose PoSts went late, were lost or failed says so and what its PoSt advice names
(`post_line`, from the row: the minutes are idle GPU time, and a box losing blocks showed only
its GPUs' gaps there).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from gapwatch.core import fmt
from gapwatch.cuzk.why_now import NO_CAUSE
from gapwatch.fleet.client import MAX_NAME_CHARS, PromClient, PromError, name_was_cut
from gapwatch.fleet.queries import DETAIL_IDLE, DETAIL_VERDICT, more_matchers, promql_string
from gapwatch.fleet.rows import (
    FleetOptions,
    FleetRow,
    can_be,
    count_text,
    counted,
    late_count_unclear,
)

#: What the detail says it shows (its first line).
WHAT_IS_SHOWN = ("Per minute, newest first: idle seconds of the gaps that closed on each GPU, "
                 "by kind, and every cause gapwatch gave in that minute (cause; setting). "
                 "Prometheus holds counts, not single gaps: each gap's own hint is on the box "
                 "(dashboard, snapshots, gapwatch report).")


@dataclass(frozen=True, slots=True)
class Verdict:
    """A cause the box gave in a minute, in words, its setting ("none": no setting), and the
    setting with its step as the box said it (the `step` label: "raise [memory]
    safety_margin"; "" from a gapwatch before the label)."""

    cause_words: str
    setting: str
    step: str = ""

    def words(self) -> str:
        """The cause, then the step the box's headline said; "change SETTING" only from a box
        that exports no step (no direction known)."""
        if self.setting in ("", "none"):
            return fmt.visible(self.cause_words)
        change = self.step if self.step not in ("", "none") else f"change {self.setting}"
        return f"{fmt.visible(self.cause_words)}; {fmt.visible(change)}"


#: The causes a minute's line names; more are counted (`and N more causes`). A box gives one
#: or two a minute; a hostile answer gave 20,000, each looked for in the list before it was
#: added (45 s on the detail's thread) and all of them on one line.
MAX_MINUTE_VERDICTS = 8
#: The minutes the detail shows, the newest first; the rest are counted. 30 minutes of a box
#: of 16 GPUs is 480; an answer of 300,000 points at times of their own was 19.5 MB of text
#: put into one widget.
MAX_DETAIL_MINUTES = 1000


@dataclass(slots=True)
class Minute:
    """One GPU's minute: idle seconds by kind, and every cause the box gave in it (in the
    order Prometheus answered; a verdict of no cause is not one)."""

    #: The minute's end: Prometheus's point, `increase(...[1m])` over the 60 s before it.
    t_wall_s: float
    gpu: str
    idle_s: dict[str, float] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    #: The causes given in the minute past the first MAX_MINUTE_VERDICTS (counted, not said).
    more_verdicts: set[Verdict] = field(default_factory=set)

    def add(self, verdict: Verdict) -> None:
        """A cause the box gave in the minute: said once, the first MAX_MINUTE_VERDICTS of
        them; the others counted once each."""
        if verdict in self.verdicts:
            return
        if len(self.verdicts) < MAX_MINUTE_VERDICTS:
            self.verdicts.append(verdict)
        else:
            self.more_verdicts.add(verdict)

    def line(self) -> str:
        # Both ends of the minute: the range ends now, at no whole minute of the clock, and
        # each point holds the 60 s before it. Its "HH:MM" alone put the gaps that closed at
        # 00:54:20 and 00:54:57 in a line "00:55" (the point of 00:55:22): every gap a minute
        # late beside the box's own log.
        since = time.strftime("%H:%M:%S", time.localtime(self.t_wall_s - 60))
        stamp = f"{since}-{time.strftime('%H:%M:%S', time.localtime(self.t_wall_s))}"
        # The kind is a label from Prometheus like the others: made visible (it reached the
        # detail screen raw, an OSC or a bidi override in it with it).
        kinds = ", ".join(f"{fmt.visible(k)} {v:.1f}s" for k, v in
                          sorted(self.idle_s.items(), key=lambda kv: -kv[1]))
        why = " | ".join(v.words() for v in self.verdicts) or "no cause in the window"
        if self.more_verdicts:
            why += f" | and {len(self.more_verdicts)} more causes"
        return (f"{stamp} GPU{fmt.visible(self.gpu)} idle {sum(self.idle_s.values()):.1f}s "
                f"({kinds}): {why}")


def scrape_line(rows: list[FleetRow], instance: str) -> str | None:
    """Why Prometheus cannot scrape box `instance`, when and where it last tried, from its rows
    (`FleetRow.down_why`); None when it can, or when Prometheus did not say. Made visible."""
    row = next((r for r in rows if r.instance == instance and r.down_why is not None), None)
    if row is None or row.down_why is None:
        return None
    said = [f"Prometheus cannot scrape this box: {fmt.visible(row.down_why)}"]
    if row.down_last_scrape_t_wall_s is not None:
        stamp = time.localtime(row.down_last_scrape_t_wall_s)  # a year of 1..9999 (`_wall_s`)
        said.append(f"last tried {time.strftime('%Y-%m-%d %H:%M:%S', stamp)}")
    if row.down_scrape_url is not None:
        said.append(f"scraping {fmt.visible(row.down_scrape_url)}")
    return "; ".join(said)


def post_line(rows: list[FleetRow], instance: str, lookback: str) -> str | None:
    """The PoSts of box `instance` that went late or were lost in a restart, or failed, in
    the lookback, its last WinningPoSt's latency, and the setting its PoSt advice names
    (`FleetRow.post_setting`), from its rows; None when none went wrong. Made visible."""
    row = next((r for r in rows if r.instance == instance and r.post_trouble()), None)
    if row is None:
        return None
    counts = [f"{count_text(n)} {how}" for n, how in (
        (row.post_late, "went late or were lost in a restart"), (row.post_failed, "failed"))
        if counted(n)]
    said = [f"PoSt in the last {fmt.visible(lookback)}: {', '.join(counts)} (a WinningPoSt "
            "late or failed is a block lost, a WindowPoSt a partition's sectors faulted)"]
    if row.post_last_latency_s is not None:
        said.append(f"the last WinningPoSt took {row.post_last_latency_s:.1f} s")
    if late_count_unclear(row):
        said.append("its PoSt advice names different settings for its PoSts lost and late, "
                    "and the count cannot tell which these were: its gapwatch report says "
                    "what to change")
    elif row.post_setting is None:
        said.append("the box exports no PoSt advice for them: its gapwatch report says what "
                    "to change")
    elif row.post_setting == NO_CAUSE:
        said.append("its PoSt advice names no cuzk setting: its gapwatch report says why")
    else:
        said.append(f"its PoSt advice: change {fmt.visible(row.post_setting)} (its gapwatch "
                    "report says the proofs and why)")
    return "; ".join(said)


#: What the detail of a box whose name fleet holds cut says, instead of its minutes.
NAME_CUT = (f"this box's name is longer than gapwatch fleet keeps ({MAX_NAME_CHARS:,} "
            "characters; shown as its start, \"…\" and a digest of the whole): Prometheus "
            "cannot be asked about it by that name, so its minutes are not shown. Its own "
            "dashboard and `gapwatch report` have them.")


def box_lines(client: PromClient, opts: FleetOptions, instance: str,
              now_s: float | None = None) -> list[str]:
    """The detail's lines of box `instance` (a row's): its minutes (`box_detail`,
    `detail_lines`), or, for a name fleet holds cut (`client.name_was_cut`), that it is one,
    Prometheus not asked: a cut name matches no series, and the detail said "no gap closed"
    of a box with gaps. Who calls it: the fleet screen's detail (`ui.fleet`). Raises PromError
    as `box_detail` does."""
    if name_was_cut(instance):
        return [NAME_CUT]
    return detail_lines(box_detail(client, opts, instance, now_s=now_s))


def box_detail(client: PromClient, opts: FleetOptions, instance: str, minutes: int = 30,
               now_s: float | None = None) -> list[Minute]:
    """The box's minutes with idle time, newest first. Raises PromError when the idle query
    fails (the verdict query failing costs only the verdict words), ValueError for a name
    fleet holds cut (`box_lines` says so instead)."""
    if name_was_cut(instance):
        raise ValueError("a box name held cut is no name Prometheus has")
    end = time.time() if now_s is None else now_s
    start = end - minutes * 60
    # Every character PromQL's string needs escaped: a raw newline in a name was a parse error.
    quoted = promql_string(instance)
    sel_ = more_matchers(opts.selector)
    idle = client.range(DETAIL_IDLE.format(sel_=sel_, instance=quoted), start, end, 60,
                        opts.budget_s)
    out: dict[tuple[float, str], Minute] = {}
    for s in idle:
        gpu, kind = s.labels.get("gpu", "-"), s.labels.get("kind", "?")
        for t, v in s.points:
            # Only the minutes asked for: a point stamped elsewhere (1e308, -1e20) is not one
            # of them, and `time.localtime` raised OverflowError on it in `Minute.line`, out of
            # the detail's worker, which ended the whole fleet screen with a traceback.
            # A value the metric cannot have (1e308, -1e308) is none, as in the table's IDLE5m,
            # which reads the same counter (`rows.can_be`): a line of 300 digits.
            v = can_be("idle_s_5m", v)
            if v is not None and v > 0.05 and start - 60 <= t <= end + 60:
                m = out.setdefault((t, gpu), Minute(t, gpu))
                m.idle_s[kind] = v
    try:
        verdicts = client.range(DETAIL_VERDICT.format(sel_=sel_, instance=quoted),
                                start, end, 60, opts.budget_s)
    except PromError:
        verdicts = []
    for s in verdicts:
        gpu = s.labels.get("gpu", "-")
        verdict = Verdict(s.labels.get("cause_words", ""), s.labels.get("setting", ""),
                          s.labels.get("step", ""))
        if verdict.cause_words in ("", "none"):
            # The minute's "no cause" beside a cause it also had: the cause is what idled it
            # (the last label set answered was shown, "none" as often as not).
            continue
        for t, _v in s.points:
            found = out.get((t, gpu))
            if found is not None:
                found.add(verdict)
    return sorted(out.values(), key=lambda m: (-m.t_wall_s, m.gpu))


def detail_lines(minutes: list[Minute]) -> list[str]:
    """The detail's lines (the fleet screen's, under `WHAT_IS_SHOWN`): the newest
    MAX_DETAIL_MINUTES minutes, then how many more there were."""
    if not minutes:
        return ["no gap closed in the last 30 minutes"]
    lines = [m.line() for m in minutes[:MAX_DETAIL_MINUTES]]
    if len(minutes) > MAX_DETAIL_MINUTES:
        lines.append(f"(and {len(minutes) - MAX_DETAIL_MINUTES} more minutes, older: "
                     "not shown)")
    return lines
