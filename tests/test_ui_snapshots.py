"""SVG snapshot tests of the dashboard (pytest-textual-snapshot). Fixed data, fixed times: the
pictures never depend on the wall clock. Update with `pytest tests/test_ui_snapshots.py
--snapshot-update` after checking the new pictures by eye (`rsvg-convert` turns an SVG from
tests/__snapshots__/ into a PNG)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
from msgspec.structs import replace
from test_ui_glance import SIM_PAGEABLE_HINT, fleet
from ui_fakes import (
    H200,
    H200_B,
    LINK,
    POWER_CAP,
    STARVED_GAPS,
    THERMAL,
    WALL0_S,
    FakeRuntime,
    add_health,
    add_processes,
    breakdown_with_hint,
    fill_breakdown,
    fill_chain_fall,
    fixed_wall,
    gap,
    make_config,
)

from gapwatch.core.evidence_types import NO_COPIES, EventEvidence, HostEvidence
from gapwatch.core.explain import Evidence, GapFacts, hint_of
from gapwatch.core.models import StateChange
from gapwatch.ui.app import GapwatchApp


def breakdown_app(tmp_path: Path, two_gpus: bool = False) -> GapwatchApp:
    rt = FakeRuntime(make_config(tmp_path), gpus=[H200, H200_B] if two_gpus else [H200])
    fill_breakdown(rt.store, gpus=(0, 1) if two_gpus else (0,))
    return GapwatchApp(rt, wall_clock=fixed_wall)


def pageable_app(tmp_path: Path) -> tuple[FakeRuntime, GapwatchApp]:
    """The breakdown data with the hints the detector writes for pageable copies: partitions
    synthesised with is_pinned=false, host memory under pressure."""
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    events = [EventEvidence(0.0, "synthesize_partition", partition=p, warning="unpinned",
                            raw="partition synthesis complete is_pinned=false") for p in (5, 6, 7)]
    host = HostEvidence(psi_mem_some_share_max=0.39, major_faults_per_s_max=154.0,
                        mem_bandwidth_bytes_per_s_max=175e9)
    for gid, (a, b) in enumerate(STARVED_GAPS, start=1):
        g = gap(gid, 0, a - 0.1, b - 0.1)
        hint = hint_of(GapFacts("pcie_starved", b - a, 2.8e9, 0.05e9, LINK, "high"), Evidence(host, events, NO_COPIES))
        rt.store.upsert_gap(replace(g, hint=hint, log_events=events))
    return rt, GapwatchApp(rt, wall_clock=fixed_wall)


def test_pageable_breakdown_at_80x24(snap_compare: Any, tmp_path: Path) -> None:
    """At 80x24: `▶GPU0 … BREAKDOWN busy 81%`, then the verdict wrapped over four lines with the
    whole hint, `partitions 5, 6, 7 were synthesised with is_pinned=false: a/b/c in pageable
    memory?` first and the host pressure last, nothing cut. The busy chart (two rows, scale
    `0-100`) drops under each of the five starved gaps, whose columns are drawn `▓`/red (never
    the busy `█`), with `S` under them in the gap row; the hole at -40..-38 s is blank (no data,
    not zero). RX/TX are on the % of link scale (41 GB/s bursts reach ▅ of a 63 GB/s link).
    Host pressure breaks between phrases; the gap table names `▶GPU0` in each row; the log is
    in time order; the footer's last line is the keys, `? help  q quit` first."""
    _, app = pageable_app(tmp_path)
    assert snap_compare(app, terminal_size=(80, 24))


def test_eight_gpus_at_80x24(snap_compare: Any, tmp_path: Path) -> None:
    """Eight GPUs in three lines of compact cells (`▶0 BREAKDOWN  81% RX  6.0G`): GPU0 and GPU5
    in BREAKDOWN, GPU3 in GAPS, the rest CHAINED. The selected GPU0's verdict and hint follow,
    then `also: GPU5 BREAKDOWN` is not needed (none is worse than GPU0). The charts are GPU0's;
    the gap table marks each row's GPU (`▶GPU0`, ` GPU5`, ` GPU3`)."""
    app = GapwatchApp(fleet(tmp_path, 8), wall_clock=fixed_wall)
    assert snap_compare(app, terminal_size=(80, 24))


def test_help_at_80x24(snap_compare: Any, tmp_path: Path) -> None:
    """`?` shows the help in a framed box 78 columns wide: the keys, the states in words, what
    the busy chart, `▓`, RX/TX and blank columns mean, the gap letters S/T/H/?; no line wraps
    into an orphan, and the box scrolls (its scroll bar on the right) to the status lines."""
    assert snap_compare(breakdown_app(tmp_path), terminal_size=(80, 24), press=["question_mark"])


def test_detail_view_at_80x24(snap_compare: Any, tmp_path: Path) -> None:
    """`d` at 80x24: the plotext busy plot of GPU0 alone (no room for the RX/TX plot), y axis
    0 / 50 / 100 (nothing below zero or above 100), the busy line dipping at each gap with red
    gap squares on the zero line, the hole at -40..-38 s not bridged, x labels -60 -45 -30 -15
    now apart from each other, and the note that `d` goes back."""
    assert snap_compare(breakdown_app(tmp_path), terminal_size=(80, 24), press=["d"])


def test_detail_view_with_a_demo_length_hint_at_80x24(snap_compare: Any, tmp_path: Path) -> None:
    """`d` at 80x24 with two GPUs, the SOURCE ENDED banner and the demo's 377-character hint:
    the verdict whole over six lines under the banner (nothing cut, no `s: a snapshot has it
    whole`), then one italic line `busy plot: needs 7 rows · the whole hint has them · d: back
    to the charts` where the plot was, the host lines, and the gap table and the log with the
    rows the plot gave up; the keys on the last line."""
    rt = breakdown_with_hint(tmp_path, SIM_PAGEABLE_HINT, gpus=(0, 1))
    rt.done = True
    assert snap_compare(GapwatchApp(rt, wall_clock=fixed_wall), terminal_size=(80, 24),
                        press=["d"])


def test_finished_replay_at_80x24(snap_compare: Any, tmp_path: Path) -> None:
    """A replay that reached the end of its file: the `REPLAY ENDED` banner under the GPU line
    with the final gap counts; GPU0 IDLE with the detector's reason (the last idle stretch,
    gap 6, retracted) and the last gap's hint; no open gap anywhere (no `+`, no `so far`); the
    footer's first line starts with `source ended`."""
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    rt.header = msgspec.structs.replace(rt.header, source="replay:rec.jsonl.gz")
    # The idle stretch at the end was an open gap until the data ended; then it was retracted.
    rt.store.upsert_gap(gap(6, 0, 58.9, None))
    rt.store.upsert_gap(replace(gap(6, 0, 58.9, 60.0), retracted=True))
    rt.store.set_state(StateChange(
        gpu=0, t_mono_ns=rt.store.snapshot().states[0].t_mono_ns + 1, t_wall_s=WALL0_S + 60,
        state="IDLE", busy_fraction=0.78,
        reason="end of data: idle after the last busy period, gap 6 retracted"))
    rt.done = True
    assert snap_compare(GapwatchApp(rt, wall_clock=fixed_wall), terminal_size=(80, 24))


def test_breakdown_at_160x48(snap_compare: Any, tmp_path: Path) -> None:
    """At 160x48 the same data uses the room: the whole hint on the verdict lines, taller charts
    (busy over 7 rows, RX and TX on the % of link scale), rules between panels, and the gap
    table beside the prover log, all five gaps listed with their hints."""
    assert snap_compare(breakdown_app(tmp_path), terminal_size=(160, 48))


def test_two_gpus_second_selected_paused_at_160x48(snap_compare: Any, tmp_path: Path) -> None:
    """Two GPUs: two header lines, the `▶` marker on GPU1 after `g`, its verdict, the charts
    titled `GPU1 · last 2 min` after `w`, and the yellow PAUSED banner after `p` saying that
    sampling and detection go on."""
    assert snap_compare(breakdown_app(tmp_path, two_gpus=True), terminal_size=(160, 48),
                        press=["g", "w", "p"])


def test_detail_view_at_160x48(snap_compare: Any, tmp_path: Path) -> None:
    """`d` at 160x48: the plotext detail chart of GPU0, busy % 0-100 on top with red gap
    squares on the zero line and the hole at -40..-38 s not bridged, RX/TX in % of the link
    below, x labels every 15 s."""
    assert snap_compare(breakdown_app(tmp_path), terminal_size=(160, 48), press=["d"])


def health_app(tmp_path: Path) -> GapwatchApp:
    """One GPU whose chaining fell from 93 % to 41 % over two minutes, its clocks held down by
    the power cap."""
    rt = FakeRuntime(make_config(tmp_path))
    fill_chain_fall(rt.store)
    add_health(rt.store, (0,), seconds=120.0, throttled={0: POWER_CAP})
    return GapwatchApp(rt, wall_clock=fixed_wall)


def test_health_and_a_chaining_fall_at_80x24(snap_compare: Any, tmp_path: Path) -> None:
    """Under the GPU line, its health in words: `health 61G/141G · 52°C · 455/700W · power cap
    · chaining 85%→41% (PCIe+SM)` (the minute before: its 10 s buckets straddle the fall); the
    power cap said but not in the warning colour, and not in the verdict (a loaded GPU sits at
    its cap in most readings: 40 of 53 on the H200 under load; heat and hardware slowdowns are
    flagged); the verdict says the fall, `chaining 85%→41%`. The header keeps its five lines."""
    assert snap_compare(health_app(tmp_path), terminal_size=(80, 24))


def test_eight_gpus_with_health_at_80x24(snap_compare: Any, tmp_path: Path) -> None:
    """Eight GPUs' health in two lines of four cells under their state cells (`0  61G 52° 65% c
    87`: memory used, temperature, power of its limit, chaining); GPU5's thermal slowdown marks
    its cell `!` in the warning colour."""
    rt = fleet(tmp_path, 8)
    add_health(rt.store, tuple(range(8)), throttled={5: THERMAL})
    assert snap_compare(GapwatchApp(rt, wall_clock=fixed_wall), terminal_size=(80, 24))


def processes_app(tmp_path: Path) -> GapwatchApp:
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    add_health(rt.store)
    add_processes(rt.store)
    return GapwatchApp(rt, wall_clock=fixed_wall)


def test_processes_panel_at_80x24(snap_compare: Any, tmp_path: Path) -> None:
    """`t` puts the processes of GPU0 where the gap table and the log were: cuzk-daemon (71 GiB
    on the GPU, 48 GiB pinned, its copies `pinned 40, pageable 6`) above python3; the charts
    and the header stay."""
    assert snap_compare(processes_app(tmp_path), press=["t"], terminal_size=(80, 24))


def test_processes_panel_at_160x48(snap_compare: Any, tmp_path: Path) -> None:
    """The same panel in a wide pane, the whole title line and the copies' column."""
    assert snap_compare(processes_app(tmp_path), press=["t"], terminal_size=(160, 48))


def test_a_selected_gaps_detail_at_80x24(snap_compare: Any, tmp_path: Path) -> None:
    """↓ ↓ selects the second newest gap (its row in reverse, the hint column's head saying
    `2/5 enter: whole gap · esc: newest`); Enter opens it whole: `gap 4 on GPU0: slow copies
    (pcie_starved), 1.50 s idle`, when, PCIe, the hint, evidence, what to change with its
    payoff, the copies, partitions, host pressure and the log lines around it, in a box that
    scrolls."""
    assert snap_compare(breakdown_app(tmp_path), terminal_size=(80, 24),
                        press=["down", "down", "enter"])


def test_a_selected_gap_in_the_table_at_160x48(snap_compare: Any, tmp_path: Path) -> None:
    """The wide table with the third newest gap selected (reverse video) and the operator's
    words in the kind column (`slow copies`)."""
    assert snap_compare(breakdown_app(tmp_path), terminal_size=(160, 48),
                        press=["down", "down", "down"])


def test_a_replay_position_at_80x24(snap_compare: Any, tmp_path: Path) -> None:
    """A replay shows where it is first in the footer's status line: `replay 09:07:21 (+1:00)
    x4`, then the source."""
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    rt.replay_words = "replay 09:07:21 (+1:00) x4"
    assert snap_compare(GapwatchApp(rt, wall_clock=fixed_wall), terminal_size=(80, 24))


def test_a_paused_replay_at_160x48(snap_compare: Any, tmp_path: Path) -> None:
    """Paused: the PAUSED banner, and the footer's `replay 09:07:21 (+1:00) paused`."""
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    rt.replay_words = "replay 09:07:21 (+1:00) paused"
    assert snap_compare(GapwatchApp(rt, wall_clock=fixed_wall), terminal_size=(160, 48),
                        press=["p"])
