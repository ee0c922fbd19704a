"""A box (or a hand-made recording) with many GPUs, and GPU indices of two and three digits: the
header's health and chaining lines follow the page of GPUs it shows, so the charts, the gap table
and the log keep their rows; every index is written whole with a space after it, in the header's
cells, the health cells and the gap table, so no two GPUs read the same and no index runs into
the figure after it. Driven through Textual's pilot, reading the screen."""

from __future__ import annotations

import re
from pathlib import Path

from ui_fakes import (
    WALL0_S,
    FakeRuntime,
    add_health,
    gap,
    gpu_sample,
    h200,
    make_config,
    screen_text,
    t_ns,
)

from gapwatch.core.chaining import ChainingFigure
from gapwatch.core.health import health_cell
from gapwatch.core.models import GpuHealth, StateChange
from gapwatch.engine.store import SeriesStore
from gapwatch.ui.app import GapwatchApp

#: One compact GPU cell, whole: the index, a space, the state, busy, RX in GB/s.
#: A chaining figure of 90 % over a minute's copies, as a health cell shows it (`c 90`).
NINETY = ChainingFigure(0, 0.9, 1.0, "pcie", 60.0)
CELL = re.compile(r"[▶ ]\d+ +CHAINED +\d+% RX +[\d.]+G")


def many(tmp_path: Path, n: int, health: bool = False) -> FakeRuntime:
    """`n` GPUs, 20 s of each moving data under busy SMs (so each has a chaining figure), GPU
    `n - 1` with a gap; health readings of every GPU when `health`."""
    rt = FakeRuntime(make_config(tmp_path), gpus=[h200(g) for g in range(n)])
    for i in range(201):
        rt.store.append_gpu([gpu_sample(g, i / 10, 60.0, 8e9, 1e9) for g in range(n)])
    for g in range(n):
        rt.store.set_state(StateChange(gpu=g, t_mono_ns=t_ns(5), t_wall_s=WALL0_S + 5,
                                       state="CHAINED", busy_fraction=0.9, reason="busy"))
    rt.store.upsert_gap(gap(1, n - 1, 15.0, 15.6))
    if health:
        add_health(rt.store, gpus=tuple(range(n)), seconds=20.0)
    return rt


async def test_two_hundred_gpus_at_80x24_leave_the_charts_the_gaps_and_the_log_their_rows(
        tmp_path: Path) -> None:
    """The chaining line of every GPU was drawn under the page of six: 40 lines for 200 GPUs,
    the whole pane, the charts, the gap table and the log pushed off it."""
    rt = many(tmp_path, 200)
    assert rt.store.snapshot().chaining  # every GPU has its figure
    app = GapwatchApp(rt)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
    lines = text.splitlines()
    assert "of 200, +" in text and "g to cycle" in text
    assert sum("chaining" in line for line in lines) == 1  # the page's GPUs, one line
    assert any(line.startswith("busy %") for line in lines)
    assert any(line.startswith("time ") for line in lines)  # the gap table's heads
    assert any(line.startswith("prover log") for line in lines)
    assert lines[-1].startswith("? help  q quit")


async def _after_g(rt: FakeRuntime, presses: int, size: tuple[int, int]) -> tuple[GapwatchApp, str]:
    """The dashboard over `rt` at `size`, `g` (the next GPU) pressed `presses` times: the app
    and its screen's text. The app starts on the GPU that all presses but the last reach (the
    header's GPUs in order from the first), the last is a key press: a hundred presses, each a
    whole redraw of 200 GPUs, cost ~1.5 CPU-s and ~8 s of wall where what is pinned is the
    screen they lead to."""
    app = GapwatchApp(rt)
    if presses:
        app.gpu = rt.header.gpus[(presses - 1) % len(rt.header.gpus)].index
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        if presses:
            await pilot.press("g")
        await pilot.pause()
        return app, screen_text(app)


async def test_gpu_indices_of_three_digits_are_written_whole_and_never_as_another_gpu(
        tmp_path: Path) -> None:
    """Cells cut an index to two digits (`gpu % 100`): GPU 100's chaining read `0 chaining`,
    GPU 0's words; `{gpu:<2}` ran GPU 10 into its state (`10BREAKDOWN`) and made a cell of GPU
    108 wider than its column, the line cut in its last cell; the gap table ran GPU 199 into the
    gap's duration (`GPU1990.79s`)."""
    app, text = await _after_g(many(tmp_path, 200), 100, (120, 40))
    assert app.gpu == 100
    assert "▶100 CHAINED" in text
    assert "100 chaining" in text and "\n0 chaining" not in text
    assert " GPU199 0.60s" in text
    page = [line for line in text.splitlines() if "CHAINED" in line and "RX" in line]
    cells = [c for line in page for c in CELL.findall(line)]
    # Every cell whole, in its columns: as many as the lines hold states.
    assert len(cells) == sum(line.count("CHAINED") for line in page) > 0


def test_a_health_cell_writes_a_two_digit_index_apart_from_its_memory() -> None:
    """GPU 12 with 141 GiB used read `12141G`: the index cut to two columns, no space."""
    h = GpuHealth(gpu=12, t_mono_ns=0, t_wall_s=WALL0_S, memory_used_bytes=141 << 30,
                  memory_total_bytes=141 << 30, temperature_c=52.0, power_w=455.0,
                  power_limit_w=700.0)
    assert health_cell(12, h, NINETY, digits=2).startswith("12 141G")
    assert health_cell(100, h, NINETY, digits=3).startswith("100 141G")
    assert health_cell(0, h, NINETY) == "0 141G 52° 65% c 90"


async def test_sixteen_gpus_with_health_show_the_health_of_the_page_shown(
        tmp_path: Path) -> None:
    _app, text = await _after_g(many(tmp_path, 16, health=True), 11, (80, 24))
    shown = [line for line in text.splitlines() if "°" in line]
    assert shown and all(line.split()[0] in {"8", "9", "10", "11"} for line in shown)
    assert "11 " in " ".join(shown) and any(line.startswith("busy %")
                                            for line in text.splitlines())


def _set_states(store: SeriesStore, states: list[StateChange]) -> None:
    for state in states:
        store.set_state(state)


async def test_a_burst_of_gpus_entering_breakdown_is_drawn_once_not_once_each(
        tmp_path: Path) -> None:
    """Each GPU entering BREAKDOWN was a whole redraw of its own (a snapshot of the store and
    every widget pushed) and a bell: a replay of 256 GPUs breaking down together left the UI
    thread without a key answered for 4.5 s (`End` over an hour of states flapping, for
    longer). A burst is drawn at its first and once after its last, live or paused, with one
    bell; every GPU's BREAKDOWN is on the screen after it."""
    from gapwatch.ui.messages import StateChanged

    n = 64
    rt = many(tmp_path, n)
    rt.config = make_config(tmp_path, bell=True)
    app = GapwatchApp(rt)
    pushes = 0
    bells = 0
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        push, bell = app._push, app.bell

        def counted_push(*args: object, **kwargs: object) -> None:
            nonlocal pushes
            pushes += 1
            push(*args, **kwargs)  # type: ignore[arg-type]

        def counted_bell() -> None:
            nonlocal bells
            bells += 1
            bell()

        app._push = counted_push  # type: ignore[method-assign]
        app.bell = counted_bell  # type: ignore[method-assign]
        for paused in (False, True):
            if paused:
                await pilot.press("p")
                await pilot.pause()
            pushes = bells = 0
            states = [StateChange(gpu=g, t_mono_ns=t_ns(20), t_wall_s=WALL0_S + 20,
                                  state="BREAKDOWN", busy_fraction=0.5, reason="gaps")
                      for g in range(n)]
            # The first half in the store before the burst is drawn; the second comes while
            # it is (set at its first draw): only the draw after the burst shows them.
            for state in states[:n // 2]:
                rt.store.set_state(state)
            for state in states:
                app.post_message(StateChanged(state))
            app.call_later(_set_states, rt.store, states[n // 2:])
            await pilot.pause()
            await pilot.pause()
            assert pushes <= 3, paused
            assert bells == 1, paused
            if not paused:  # the last view drawn holds every GPU's BREAKDOWN
                assert app.view is not None
                drawn = app.view.snap.states
                assert all(drawn[g].state == "BREAKDOWN" for g in range(n)), paused
        await pilot.press("p")
        await pilot.pause()
        text = screen_text(app)
    assert len(re.findall(r"[▶ ]\d+ +BREAKDOWN", text)) >= 16
    assert "CHAINED" not in text


async def test_a_lost_gpus_cell_says_lost_not_its_last_temperature_and_power(
        tmp_path: Path) -> None:
    """A GPU that fell off the bus kept its last memory, temperature and power in the header's
    cell, as if read now (/metrics already left them out). Its cell says LOST; one GPU alone
    says it in words."""
    from gapwatch.core.models import HardwareEvent

    rt = many(tmp_path, 8, health=True)
    rt.store.append(HardwareEvent(3, t_ns(20.0), WALL0_S + 20.0, "gpu_lost", code=15))
    _app, text = await _after_g(rt, 0, (80, 24))
    cells = [line for line in text.splitlines() if "°" in line or "LOST" in line]
    assert any(re.search(r"(^| )3 LOST", line) for line in cells), cells
    assert not any(re.search(r"(^| )3 +\d+G", line) for line in cells)
    assert any(re.search(r"(^| )2 +\d+G", line) for line in cells)  # the others as they were

    one = FakeRuntime(make_config(tmp_path), gpus=[h200(0)])
    for i in range(21):
        one.store.append_gpu([gpu_sample(0, i / 10, 60.0, 8e9, 1e9)])
    add_health(one.store, gpus=(0,), seconds=2.0)
    one.store.append(HardwareEvent(0, t_ns(2.0), WALL0_S + 2.0, "gpu_lost", code=15))
    _app, text = await _after_g(one, 0, (100, 24))
    assert "LOST: NVML reads this GPU no more" in text and "°C" not in text


async def test_a_failed_row_remap_stays_in_the_header_after_the_footers_five_minutes(
        tmp_path: Path) -> None:
    """A failed row remap is a state: the footer's GPU ERROR line let it go after 5 minutes
    of data while its alert fired on; the header says it for the rest of the session (in
    words for one GPU, a flagged cell among many)."""
    from gapwatch.core.models import HardwareEvent

    one = FakeRuntime(make_config(tmp_path), gpus=[h200(0)])
    one.store.append(HardwareEvent(0, t_ns(0.5), WALL0_S + 0.5, "row_remap_failure"))
    for i in range(21):
        one.store.append_gpu([gpu_sample(0, 400 + i / 10, 60.0, 8e9, 1e9)])
    add_health(one.store, gpus=(0,), seconds=2.0)
    _app, text = await _after_g(one, 0, (100, 24))
    assert "ROW REMAP FAILED · health " in text and "GPU ERROR" not in text

    rt = many(tmp_path, 8, health=True)
    rt.store.append(HardwareEvent(3, t_ns(20.0), WALL0_S + 20.0, "row_remap_failure"))
    _app, text = await _after_g(rt, 0, (80, 24))
    cells = [line for line in text.splitlines() if "°" in line]
    assert any(re.search(r"(^| )3 +\d+G +\d+° *\d+%!c", line) for line in cells), cells
    assert not any(re.search(r"(^| )2 +\d+G +\d+° *\d+%!c", line) for line in cells)


async def test_a_row_remap_is_said_with_no_health_reading_and_named_for_the_selected_gpu(
        tmp_path: Path) -> None:
    """With no health readings (`health_every_s = 0`, a replay without them) the header showed
    the chaining figures alone: a failed remap was gone after the footer's 5 minutes and a
    pending one never shown. Among several GPUs the failed one's cell said `!` and selecting it
    named nothing."""
    from gapwatch.core.models import HardwareEvent

    rt = many(tmp_path, 4, health=False)
    rt.store.append(HardwareEvent(1, t_ns(1.0), WALL0_S + 1.0, "row_remap_failure"))
    rt.store.append(HardwareEvent(2, t_ns(1.0), WALL0_S + 1.0, "row_remap_pending"))
    _app, text = await _after_g(rt, 1, (80, 24))
    assert re.search(r"(^| )1 REMAP FAILED", text) and re.search(r"(^| )2 remap pending", text)
    assert "; ROW REMAP FAILED" in text  # GPU 1 selected: its verdict names the state

    one = FakeRuntime(make_config(tmp_path), gpus=[h200(0)])
    for i in range(21):
        one.store.append_gpu([gpu_sample(0, 400 + i / 10, 60.0, 8e9, 1e9)])
    one.store.append(HardwareEvent(0, t_ns(0.5), WALL0_S + 0.5, "row_remap_pending"))
    _app, text = await _after_g(one, 0, (100, 24))
    assert "row remap pending" in text


def test_a_power_limit_of_zero_is_no_limit_in_the_header_words() -> None:
    """A 0 W limit (no limit read) showed `450/0W`; the compact cell already took it as none."""
    from gapwatch.core.health import health_cells

    h = GpuHealth(gpu=0, t_mono_ns=0, t_wall_s=WALL0_S, power_w=450.0, power_limit_w=0.0)
    assert "450W" in health_cells(h) and not any("/0W" in c for c in health_cells(h))
    assert "450/700W" in health_cells(GpuHealth(gpu=0, t_mono_ns=0, t_wall_s=WALL0_S,
                                                power_w=450.0, power_limit_w=700.0))


def test_a_gpu_at_its_power_cap_is_not_flagged_and_one_held_down_by_heat_is() -> None:
    """`!` flagged the power cap: a loaded H200 sits at it in 40 of 53 readings, so every busy
    GPU's cell said `!`. Heat and hardware slowdowns are flagged; the cap is said in words."""
    from gapwatch.core.health import health_cell, health_cells

    def h(mask: int) -> GpuHealth:
        return GpuHealth(gpu=0, t_mono_ns=0, t_wall_s=WALL0_S, power_w=690.0,
                         power_limit_w=700.0, clocks_event_mask=mask)

    assert "%!c" not in health_cell(0, h(0x4), NINETY) and "power cap" in health_cells(h(0x4))
    assert "%!c" in health_cell(0, h(0x20), NINETY) and "%!c" in health_cell(0, h(0x24), NINETY)


async def test_the_header_flags_only_the_gpu_held_down_by_heat_not_those_at_their_cap(
        tmp_path: Path) -> None:
    """Eight busy GPUs at their power cap and GPU 5 held down by heat: only GPU 5's cell says
    `!` (the header passed its own flag to the cell, the cap's among it)."""
    rt = many(tmp_path, 8)
    add_health(rt.store, tuple(range(8)), seconds=20.0,
               throttled={g: 0x24 if g == 5 else 0x4 for g in range(8)})
    _app, text = await _after_g(rt, 0, (80, 24))
    flagged = re.findall(r"(?:^| )(\d) +\d+G +\d+° *\d+%!c", text)
    assert flagged == ["5"], text
