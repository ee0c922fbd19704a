"""`gapwatch compare` for people: text (at most 100 columns) and Markdown (a ticket, a chat).

Who calls it: `gapwatch.commands.compare`. Pure formatting of a `Comparison`; the figures,
verdicts and payoff are `gapwatch.offline.compare`'s. Paths and log text are outside text:
shown through `fmt.visible`, never obeyed by the terminal.
"""

from __future__ import annotations

import time
from typing import Any

from gapwatch.core import fmt
from gapwatch.core.payoff import gpu_time_words
from gapwatch.cuzk.settings import SettingChange
from gapwatch.offline.compare import (
    METHOD,
    Comparison,
    Figure,
    Side,
    predicted_vs_achieved,
    usable_windows,
)
from gapwatch.offline.compare_stats import Spread
from gapwatch.offline.compare_windows import ALL, POST_FAILED, POST_LATE, POST_LATENCY
from gapwatch.sources.time_window import TimeWindow

WIDTH = 100
PATH_CHARS = 60
#: A setting's value in the text table's BEFORE and AFTER columns (cut there: a log's field is
#: outside text; `--json` has it whole).
VALUE_CELLS = 18
#: Outside text in a Markdown cell or line, in cells: a table stays a table to read.
MD_CELLS = 120


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    if abs(v) >= 10_000:
        return f"{v / 1000:.0f}k"
    return f"{v:.0f}" if abs(v) >= 10 else f"{v:.1f}"


def value(f: Figure, v: float | None) -> str:
    """One value of a figure in its unit."""
    if v is None:
        return "-"
    if f.share:
        return f"{v * 100:.0f} %"
    if f.name.startswith("H2D rate"):
        return fmt.rate(v)
    return _num(v)


def _bare(f: Figure, v: float | None) -> str:
    if v is None:
        return "-"
    if f.share:
        return f"{v * 100:.0f}"
    if f.name.startswith("H2D rate"):
        gb = v / 1e9
        return f"{gb:.0f}" if gb >= 10 else f"{gb:.1f}"
    return _num(v)


def cell(f: Figure, whole: float | None, s: Spread, side: int = 0) -> str:
    """The whole-run value and the windows' median [p10-p90]; a share counted whole
    (`Figure.counts`, `side` 0 BEFORE, 1 AFTER) with its counts, "50 % (10 of 20)"."""
    if f.counts is not None and whole is not None:
        hits, n = f.counts[side]
        return f"{value(f, whole)} ({hits} of {n})"
    if s.n == 0:
        return value(f, whole)
    return f"{value(f, whole)} [{_bare(f, s.p10)}-{_bare(f, s.p90)}]"


#: The verdicts that tell a change: only beside them is a figure gone from one side to none
#: "gone" (or "new"); beside any other it is "to 0" ("from 0"): "gone  no measurable change"
#: read as a contradiction.
TOLD = ("better", "worse", "different load", "load")


def change(f: Figure) -> str:
    b, a = f.before, f.after
    if b is None or a is None:
        return "-"
    if f.share:
        return f"{(a - b) * 100:+.0f} pp"
    if b > 0 and a > 0:
        return f"×{a / b:.2f}"
    if b == a:
        return "="
    if f.test.verdict in TOLD:
        return "gone" if a == 0 else "new"
    return "to 0" if a == 0 else "from 0"


def _gpu_label(gpu: int) -> str:
    return "all GPUs" if gpu == ALL else f"GPU {gpu}"


def _path(p: str) -> str:
    return fmt.fit(fmt.visible(p), PATH_CHARS, keep_end=True, pad=False)


def _said(prefix: str, text: str) -> str:
    """Outside text after `prefix` on a line of its own (a data problem, deprecated keys, an
    env value): one line, cut to the text's width."""
    return prefix + fmt.fit(fmt.visible(text), WIDTH - fmt.cells(prefix), pad=False)


def _when(t: float | None) -> str:
    if t is None:
        return "no busy reading"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def window_words(w: TimeWindow) -> str:
    """The part of a side's recording read, in plain words: `its part up to 2026-12-05
    19:00:35 UTC (--at ...)`, `... from ... on`, `... from ... to ...`. `TimeWindow.describe`
    said "the window the start to ..." and "... to the end UTC" of an `--at` cut's sides."""
    since = None if w.since_s is None else _utc(w.since_s, "%Y-%m-%d %H:%M:%S")
    until = None if w.until_s is None else _utc(w.until_s, "%Y-%m-%d %H:%M:%S")
    if since is not None and until is not None and since[:10] == until[:10]:
        until = until[11:]  # the same day: its time alone
    said = fmt.visible(w.said)
    if since is None and until is None:
        return f"its whole recording ({said})"
    if since is None:
        return f"its part up to {until} UTC ({said})"
    if until is None:
        return f"its part from {since} UTC on ({said})"
    return f"its part from {since} to {until} UTC ({said})"


def _utc(t: float, form: str) -> str:
    """`t` as a UTC time, or the number where it names none (a hostile header's start)."""
    try:
        return time.strftime(form, time.gmtime(t))
    except (OverflowError, OSError, ValueError):
        return f"{t:g}"


def label(name: str, rate: str = "partitions/h") -> str:
    """A figure's name in the text table: idle by kind and by cause as rows under "idle s/h";
    the rate with its unit (`rate`: `Comparison.rate_label`)."""
    if name == "partitions/h":
        return rate
    if name.startswith("idle s/h, prover: "):
        return "  cause " + name.removeprefix("idle s/h, prover: ")
    if name.startswith("idle s/h: "):
        return "  " + name.removeprefix("idle s/h: ")
    if name.startswith(POST_LATENCY):
        return "PoSt s: " + name.removeprefix(POST_LATENCY)
    return name  # the PoSt shares' own names (`POST_FAILED`, `POST_LATE`) are their labels


def _side_lines(s: Side, windowed: bool) -> list[str]:
    """A side's head lines: its path, the window it was read over (`windowed`: either side
    was read over one, so a side read whole says so too), its GPUs and span."""
    out = [f"  {s.label:<6} {_path(s.path)}"]
    if s.window is not None:
        # Wrapped: two of a side's own options with dates run past the width.
        out += _wrap(window_words(s.window), first="         only ", rest="           ")
    elif windowed:
        out.append("         all of its recording (no window)")
    return [*out, f"         {len(s.totals)} GPU(s), {fmt.duration(s.span_s)} of work from "
                  f"{_when(s.start_s)}"]


def _load_line(c: Comparison) -> str:
    if not c.load_known:
        return ("load: not known (no /status on both sides): a lighter load would read as a "
                "gain")
    if c.load_differs:
        return ("load: DIFFERENT (idle for want of work changed): busy, gaps, idle, partitions "
                "not judged")
    return f"load: the same as far as /status tells ({c.load_same_words})"


def head_lines(c: Comparison) -> list[str]:
    windowed = c.before.window is not None or c.after.window is not None
    out = ["gapwatch compare", *_side_lines(c.before, windowed), *_side_lines(c.after, windowed)]
    for s in (c.before, c.after):
        if s.log_files:
            out.append(f"  {s.label} logs: {', '.join(_path(p) for p in s.log_files)}")
    nb, na = usable_windows(c)
    out.append(f"  windows of {c.window_s:g} s: BEFORE {nb}, AFTER {na}; each figure: the whole "
               "run [windows' p10-p90]")
    out.append("  " + _load_line(c))
    # Wrapped: a note names GPUs, paths and lengths (one was 122 columns wide).
    out += [line for n in c.notes for line in _wrap(n, first="  note: ", rest="        ")]
    for s in (c.before, c.after):
        out += [_said(f"  {s.label} data: ", p) for p in s.problems[:3]]
        # Wrapped, whole, as the comparison's own notes: a path in them ran past the width.
        out += [line for n in s.notes[:3] for line in _wrap(
            fmt.visible(n), first=f"  {s.label} note: ", rest="        ")]
    return out


def _setting_rows(c: Comparison) -> list[tuple[str, str, str, bool]]:
    """The table's rows, text and Markdown alike: each startup setting either side shows,
    each side's value ("-": not shown) and whether it changed (`SettingChange.changed`: shown
    by both and different; one side's "-" is not a change)."""
    b, a = c.before.settings, c.after.settings
    return [(k, b.values.get(k, "-"), a.values.get(k, "-"),
             SettingChange(k, b.values.get(k), a.values.get(k)).changed)
            for k in sorted(set(b.values) | set(a.values))]


def _not_shown_lines(c: Comparison, prefix: str = "  ") -> list[str]:
    """The settings one side does not show, said as such (never a change), wrapped."""
    if not c.settings_not_shown:
        return []
    names = ", ".join(fmt.visible(ch.setting) for ch in c.settings_not_shown)
    return _wrap(f"changed? not known: not shown by both runs: {names}", first=prefix,
                 rest=prefix + "  ")


def settings_lines(c: Comparison) -> list[str]:
    b, a = c.before.settings, c.after.settings
    rows = _setting_rows(c)
    out = ["Settings (as each side's cuzk log and /status show them; * changed, - not shown)"]
    for k, bv, av, changed in rows:
        mark = "*" if changed else " "
        out.append(f" {mark}{fmt.fit(fmt.visible(k), 38)} "
                   f"{fmt.fit(fmt.visible(bv), VALUE_CELLS, right=True)} "
                   f"{fmt.fit(fmt.visible(av), VALUE_CELLS, right=True)}")
    keys = [k for k, *_ in rows]
    for label, s in (("BEFORE", b), ("AFTER", a)):
        if s.deprecated:
            out.append(_said(f"  {label}: deprecated keys, ignored by cuzk: ",
                             ", ".join(s.deprecated)))
        for k, v in s.env.items():
            out.append(_said(f"  {label}: ", f"{k}={v}"))
        if s.dropped:
            out.append(_said(f"  {label}: {s.dropped_fields} startup field(s) no count, not "
                             "used: ", ", ".join(s.dropped)))
        if s.batches:
            out.append(f"  {label}: {s.batches} batched (monolithic, unpinned) PoRep/SnapDeals "
                       "job(s)")
    if not keys and not (b.deprecated or a.deprecated or b.env or a.env):
        out.append("  neither side shows any (no cuzk startup line, no /status)")
        return out
    out += _not_shown_lines(c)
    if not c.setting_changes:
        out.append("  no setting differs in what both sides show")
    return out


def figure_lines(c: Comparison) -> list[str]:
    out: list[str] = []
    current: int | None = None
    for f in c.figures:
        if f.gpu != current:
            current = f.gpu
            out += ["", f"{_gpu_label(f.gpu):<30}{'BEFORE':<20}{'AFTER':<20}{'change':<9}"
                    "verdict"]
        name = label(f.name, c.rate_label)
        out.append(f"  {name[:27]:<28}{cell(f, f.before, f.before_windows)[:19]:<20}"
                   f"{cell(f, f.after, f.after_windows, 1)[:19]:<20}{change(f)[:8]:<9}"
                   f"{f.test.verdict}")
    return out


def _limited_by(said: dict[str, Any]) -> tuple[tuple[int, float], ...]:
    """The GPUs whose link set a prediction (`predicted_vs_achieved`'s `link_limited_by`,
    `core.payoff.limited_by_json`) as `gpu_time_words` takes them."""
    return tuple((g["gpu"], g["link_floor_s"]) for g in said.get("link_limited_by", []))


def payoff_lines(c: Comparison) -> list[str]:
    p = predicted_vs_achieved(c)
    out = ["Payoff: what BEFORE's advice predicted, what AFTER achieved"]
    for a in p["advice"]:
        gain = a["throughput_gain"]
        # Its gaps are said at the head of the line.
        said = (gpu_time_words(gain, a["span_s"], None, a["link_limit_s"], _limited_by(a))
                if gain else None)
        out.append(f"  {a['setting']}: {a['gaps']} {a['stall'].replace('_', ' ')} gap(s),"
                   f" busy → {fmt.frac_pct(a['busy_fraction'])}, "
                   + (f"throughput {said}" if said is not None else "gain unknown"))
        out.append(_changed_line(a["changed"], a["shown_by"], a["changed_not_known_why"]))
    for x in p["proof_advice"]:
        out += _proof_advice_lines(x, c)
    if not p["advice"] and not p["proof_advice"]:
        out.append("  BEFORE's report advised no setting")
    allg = p["all_gaps"]
    if allg["throughput_gain"]:
        out.append(f"  closing every BEFORE gap: busy → {fmt.frac_pct(allg['busy_fraction'])}, "
                   "throughput " + gpu_time_words(allg["throughput_gain"], allg["span_s"],
                                                  allg["gaps"], allg["link_limit_s"],
                                                  _limited_by(allg))
                   + " (upper bound, work fixed)")
    ach = p["achieved"]
    line = (f"  achieved: busy {fmt.frac_pct(ach['busy_before'])} → "
            f"{fmt.frac_pct(ach['busy_after'])}")
    gpus_b, gpus_a = ach["gpu_counts"]
    if ach["throughput_ratio"] is not None:
        line += f", {ach['throughput_ratio']:.2f}× by {label(ach['basis'], c.rate_label)}"
        if gpus_b != gpus_a:
            line += (f" of each box: not comparable: {gpus_b} GPU(s) before, {gpus_a} after "
                     "(the GPUs changed as well as the settings)")
        elif ach["verdict"] not in (None, "better", "worse"):
            line += f": {ach['verdict']}"
    if ach["not_measured"] is not None:
        line += f"; throughput not measured: {ach['not_measured']}"
    if ach["share_of_predicted_gain"] is not None:
        line += f" ({ach['share_of_predicted_gain'] * 100:.0f} % of the predicted gain)"
        line += _above_bound(ach["share_of_predicted_gain"])
    if ach["load_differs"]:
        line += "; load differs, so not a measure of the change"
    if ach["hardware_differs"]:
        line += "; other GPUs or links, so not a measure of the change"
    out.append(line)
    out.append(_what_changed(c, p["advice_changed"]))
    return out


def _what_changed(c: Comparison, followed: bool | None) -> str:
    """What the sides show changed, under the achieved line: the gain is that change's. Where
    every advised setting is unchanged it is not the advice's, and says so."""
    moved = [f"{ch.setting} {ch.before or '-'} → {ch.after or '-'}" for ch in c.setting_changes]
    said = ("what changed: " + ", ".join(moved[:4])
            + (f" (+{len(moved) - 4} more)" if len(moved) > 4 else "")
            if moved else "no setting the sides show changed")
    if followed is False:
        said += "; not the advised settings (unchanged), so not the advice's doing"
    return "    " + fmt.visible(said)


def _proof_advice_lines(x: dict[str, Any], c: Comparison) -> list[str]:
    """A PoSt advice's setting, whether it changed, and the PoSt figure it was meant to move
    (`compare._proof_advice_payoff`)."""
    how = {"at_risk": "at risk"}.get(x["verdict"], x["verdict"])
    out = [f"  {x['setting']}: {x['count']} {x['proof_kind']} {how} (PoSt)",
           _changed_line(x["changed"], x["shown_by"], x["changed_not_known_why"])]
    f = x["figure"]
    share = f["figure"].startswith((POST_FAILED, POST_LATE))
    out.append(f"    {label(f['figure'], c.rate_label)}: {_plain(f['before'], share)} → "
               f"{_plain(f['after'], share)}: {f['verdict'] or 'on neither side'}")
    return out


def _plain(v: float | None, share: bool) -> str:
    if v is None:
        return "-"
    return f"{v * 100:.0f} %" if share else _num(v)


def _above_bound(share: float) -> str:
    """Said of a gain above "closing every BEFORE gap", which the line before calls an upper
    bound: "109 % of the predicted gain" under "(upper bound, work fixed)" read as a
    contradiction. The bound closes only BEFORE's gaps; AFTER may also have lost the idle
    under the min gap, or spent less GPU time per partition (pageable copies inside the
    kernels gone)."""
    if share <= 1:
        return ""
    return ("; above the upper bound: more changed than BEFORE's gaps (idle under the min gap, "
            "the GPU's time per partition)")


def _changed_line(changed: bool | None, shown_by: list[dict[str, str | None]],
                  why_not_known: str | None) -> str:
    """Whether an advised setting changed, and what showed it (`changed: synth_worker_count
    20 → 4`), on a line of its own under the advice; unknown is said as such, with why, never
    as unchanged."""
    both = [s for s in shown_by if s["before"] is not None and s["after"] is not None]
    if changed is None:
        return _said("    ", f"changed? not known: {why_not_known or 'not shown by both runs'}")
    if changed:
        return _said("    ", "changed: " + ", ".join(
            f"{s['setting']} {s['before']} → {s['after']}" for s in both
            if s["before"] != s["after"]))
    return _said("    ", "unchanged: " + ", ".join(f"{s['setting']} {s['before']}"
                                              for s in both) + " on both")


def format_text(c: Comparison) -> str:
    out = head_lines(c) + [""] + settings_lines(c) + figure_lines(c) + [""]
    # Within the 100 columns, whatever they say (the achieved line with a verdict, load or
    # hardware said ran to 104 and more), each wrapped under its own indent.
    for line in payoff_lines(c):
        lead = line[:len(line) - len(line.lstrip())]
        out += _wrap(line, first=lead, rest=lead + "  ")
    out += ["", *_wrap("Method: " + METHOD)]
    return "\n".join(fmt.visible(line) for line in out) + "\n"


def _wrap(text: str, width: int = WIDTH, first: str = "", rest: str = "  ") -> list[str]:
    """`text` in lines of at most `width` characters (a word longer than that alone on its
    line), the first after `first`, the others after `rest`."""
    lines: list[str] = []
    cur, words = first, 0  # the line so far, and how many words it holds
    for word in text.split():
        if words and len(cur) + 1 + len(word) > width:
            lines.append(cur)
            cur, words = rest + word, 1
        else:
            cur, words = (f"{cur} {word}" if words else cur + word), words + 1
    return [*lines, cur] if words else lines


def _md(text: str, width: int | None = MD_CELLS) -> str:
    """A cell (cut to `MD_CELLS`) or, with no width, a line whose outside text the text
    lines already cut (`_path`, `_said`): `fmt.markdown`, the one rule for Markdown."""
    return fmt.markdown(text, width)


def format_markdown(c: Comparison) -> str:
    """The same as a Markdown document: head as a list, settings and figures as tables."""
    out = ["### gapwatch compare", ""]
    out += [f"- {_md(line.strip(), None)}" for line in head_lines(c)[1:]]
    out += ["", "| setting | BEFORE | AFTER |", "| --- | --- | --- |"]
    for k, bv, av, changed in _setting_rows(c):
        star = " **changed**" if changed else ""
        out.append(f"| {_md(k)}{star} | {_md(bv)} | {_md(av)} |")
    if c.settings_not_shown:
        out += ["", f"- {_md(' '.join(x.strip() for x in _not_shown_lines(c, '')), None)}"]
    out += ["", "| GPU | figure | BEFORE | AFTER | change | verdict |",
            "| --- | --- | --- | --- | --- | --- |"]
    for f in c.figures:
        name = c.rate_label if f.name == "partitions/h" else f.name
        out.append(f"| {_gpu_label(f.gpu)} | {_md(name)} | "
                   f"{_md(cell(f, f.before, f.before_windows))} | "
                   f"{_md(cell(f, f.after, f.after_windows, 1))} | {_md(change(f))} | "
                   f"**{f.test.verdict}** |")
    # An advice's "changed:" line (indented under it in the text) as a nested item.
    out += [""] + [f"{'  ' if line.startswith('    ') else ''}- {_md(line.strip(), None)}"
                   for line in payoff_lines(c)[1:]]
    out += ["", f"_{_md(METHOD, None)}_", ""]
    return "\n".join(out)

