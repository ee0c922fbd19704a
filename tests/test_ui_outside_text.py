"""Outside text on the dashboard's screen: a recording replayed in the dashboard, its prover
name, process names, blind spot and GPU name holding terminal escapes, C1 controls, bidi
overrides and Rich markup (`[/]`, `[@click=app.quit]`, `[link=...]`). Every character the
terminal would act on is shown written out (`fmt.visible`), never sent; markup is shown
literally, never parsed (no crash on `[/]`, no click action, no link, no restyle)."""

from __future__ import annotations

import io
import re
import time
import xml.dom.minidom
from pathlib import Path

import msgspec
import pytest
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text
from ui_fakes import FakeRuntime, fill_breakdown, screen_text

from evaluation.simulate import simulate
from gapwatch.config import build_config
from gapwatch.core.models import (
    BlindSpot,
    ExitedProcess,
    Gap,
    GpuInfo,
    ProcessMemory,
    ProverStatus,
    Record,
    StateChange,
)
from gapwatch.engine.runtime import build_runtime
from gapwatch.sinks.recorder import write_recording
from gapwatch.ui.app import GapwatchApp
from gapwatch.ui.widgets.text_lines import visible_row

#: An OSC 52 clipboard write, the escape that left the dashboard's screen, a one-byte CSI, a
#: right-to-left override; and markup that, parsed, would crash (`[/]`), run an action on a
#: click, link a file, or restyle the screen.
HOSTILE = ("\x1b]52;c;ZXZpbA==\x07\x1b[?1049l\x9b2J\u202e"
           "[/][@click=app.quit]Q[/][link=file:///etc/passwd]L[/link][reverse]")
#: What the terminal would act on (`fmt.visible`'s set), newlines between rows aside.
_ACTED_ON = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                       "\u202a-\u202e\u2066-\u2069]")


def hostile_recording(folder: Path) -> Path:
    """30 s of `sim:pageable` whose outside strings carry `HOSTILE`: the GPU's name, the
    prover's name (its `/status` host:port), three processes on the GPU (their names reach
    the gaps' hints), and a blind spot naming a process that exited."""
    run = simulate("pageable", duration_s=30.0, status_period_s=1.0)
    gpus = [msgspec.structs.replace(g, name=f"\x1b]0;{HOSTILE}") for g in run.header.gpus]
    header = msgspec.structs.replace(run.header, gpus=gpus)
    records: list[Record] = []
    for r in run.records:
        if isinstance(r, Gap | StateChange):
            continue  # derived again by the replay
        if isinstance(r, ProverStatus):
            r = msgspec.structs.replace(r, prover=f"prov{HOSTILE}")
        records.append(r)
        if isinstance(r, ProverStatus) and not any(isinstance(x, ProcessMemory)
                                                   for x in records):
            records += [ProcessMemory(r.t_mono_ns, r.t_wall_s, gpu=0, pid=100 + i,
                                      name=f"p{HOSTILE}", rss_shmem_bytes=1 << 30,
                                      rss_anon_bytes=1 << 20) for i in range(3)]
    last = records[-20]
    records.append(BlindSpot(last.t_mono_ns, last.t_wall_s,  # type: ignore[union-attr]
                             duration_s=2.5, source=f"nvml{HOSTILE}", gpus=[0],
                             exited=[ExitedProcess(7, f"gone{HOSTILE}", 1 << 34)]))
    records.sort(key=lambda x: getattr(x, "t_wall_s", 0.0))
    path = folder / "hostile.jsonl.gz"
    write_recording(path, header, records)
    return path


def acted_on(app: GapwatchApp) -> list[str]:
    """The screen's text segments that hold a character a terminal would act on, or carry a
    click action or a link (what parsed markup would have made)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", legacy_windows=False, safe_box=False)
    screen = app.screen._compositor.render_update(full=True)
    assert screen is not None
    found: list[str] = []
    for seg in console.render(screen):
        if seg.control:
            continue
        style = seg.style
        if _ACTED_ON.search(seg.text) or (style is not None and (
                style.link or any("click" in str(k) for k in (style.meta or {})))):
            found.append(seg.text)
    return found


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hostile_recording(tmp_path_factory.mktemp("hostile"))


async def test_escapes_and_markup_in_a_recordings_names_reach_no_terminal_through_the_dashboard(
        recording: Path) -> None:
    """The prover's line (its name), the footer's blind spot (the exited process), the GPU
    header's hint (the processes' names) and GPU name passed their text raw to the terminal:
    an OSC 52 clipboard write, `\\x1b[?1049l` and U+202E reached it, and the snapshot's SVG
    was not well-formed XML."""
    config = build_config({"snapshot": {"dir": str(recording.parent / "snapshots")}})
    rt = build_runtime(config, f"replay:{recording}", speed=0)
    rt.start()
    try:
        deadline = time.monotonic() + 20
        while not rt.done.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)
        app = GapwatchApp(rt, status_every_s=0.2)
        async with app.run_test(size=(200, 50)) as pilot:
            await pilot.pause(0.5)
            screens = {"main": acted_on(app)}
            main_text = screen_text(app)
            await pilot.press("d")  # the detail view: the whole hint in the header
            await pilot.pause(0.3)
            screens["detail"] = acted_on(app)
            await pilot.press("s")  # a snapshot: the screen as an SVG
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert app.is_running  # no markup was run (`app.quit`), none crashed the app
        assert screens == {"main": [], "detail": []}
        xml.dom.minidom.parse(str(app.snapshots[0] / "dashboard.svg"))  # well-formed
        # Shown, written out, and the markup literally.
        # (rich's `Text` drops BEL itself.)
        assert ("prover prov\\x1b]52;c;ZXZpbA==\\x1b[?1049l\\x9b2J\\u202e[/][@click=app.quit]Q[/]"
                "[link=file:///etc/passwd]L[/link][reverse] · GPU0") in main_text
        assert "▶GPU0   \\x1b]0;\\x…   BREAKDOWN" in main_text  # written out, then cut
        assert "nvml\\x1b]52" in main_text and "(gone\\x1b]52" in main_text
    finally:
        rt.stop()


def test_a_row_made_visible_keeps_its_styles_on_the_same_characters() -> None:
    row = Text("ok ")
    row.append(f"bad\x1b[?1049l{HOSTILE[:6]}", "bold red")
    row.append(" tail", "dim")
    shown = visible_row(row)
    assert shown.plain == "ok bad\\x1b[?1049l\\x1b]52;c" + " tail"
    assert [(shown.plain[s.start:s.end], str(s.style)) for s in shown.spans] == [
        ("bad\\x1b[?1049l\\x1b]52;c", "bold red"), (" tail", "dim")]
    plain = Text("nothing to write out [bold]")
    assert visible_row(plain) is plain


async def test_gpu_names_of_wide_zero_width_and_escaped_characters_keep_the_state_badge_column(
        tmp_path: Path) -> None:
    """The name was cut and padded by characters, before being written out: a name of wide
    (CJK) characters took 20 cells of its 10, combining marks and zero-width ones 5 or 9, a
    bidi override or a newline 15 once written out, and the state badge moved with each (from
    column 16 to 31) where it should hold its column whatever the GPU."""
    names = ["NVIDIA H200", "英伟达图形处理器" * 20, "e\u0301" * 300,
             "NVIDIA\u200bH200" + "\u200b" * 50, "\u202eNVIDIA H200", "a\nb\x1b[31mRED"]
    gpus = [GpuInfo(index=i, name=name, link_bytes_per_s=63e9) for i, name in enumerate(names)]
    rt = FakeRuntime(build_config({"snapshot": {"dir": str(tmp_path)}}), gpus=gpus)
    fill_breakdown(rt.store, gpus=tuple(range(len(names))))
    app = GapwatchApp(rt)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        found = acted_on(app)
    rows = [line for line in text.splitlines() if "BREAKDOWN   busy" in line]
    assert len(rows) == len(names)
    assert {cell_len(row[:row.index("BREAKDOWN")]) for row in rows} == {21}
    assert found == []
    assert "\\u202eNVI…" in text and "a\\x0abRED " in text  # written out, then cut


async def test_a_log_path_a_snapshot_folder_and_a_recorded_warning_reach_no_terminal_through_the_help_or_a_gaps_detail(  # noqa: E501
        tmp_path: Path) -> None:
    """The help screen (`?`) listed the followed logs and the snapshots written raw, and a gap's
    detail (Enter) the warning tag of a recorded log line and the prover's cause raw: an OSC
    52, `\\x1b[?1049l` and U+202E reached the terminal (the footer and the log pane wrote the
    same text out)."""
    from msgspec.structs import replace
    from ui_fakes import log_event

    from gapwatch.core.evidence_types import EventEvidence

    evil = "\x1b]52;c;ZXZpbA==\x07\x1b[?1049l\u202e"
    rt = FakeRuntime(build_config({"snapshot": {"dir": str(tmp_path / f"s{evil}")}}))
    fill_breakdown(rt.store)
    rt.logs = {f"/var/log/cuzk{evil}.log": "following"}
    newest = rt.store.snapshot().gaps[-1]
    rt.store.upsert_gap(replace(newest, prover_cause=f"pinned{evil}", log_events=[
        EventEvidence(t_s=newest.start_s, name="x", partition=7, warning=f"w{evil}")]))
    rt.store.append_log(replace(log_event(57.0, "INFO line"), warning=f"warn{evil}"))
    app = GapwatchApp(rt)
    found: dict[str, list[str]] = {}
    async with app.run_test(size=(120, 50)) as pilot:
        await pilot.pause()
        await pilot.press("s")  # a snapshot in the folder named with escapes
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.snapshots
        await pilot.press("question_mark")
        pages = []
        for page in range(8):
            await pilot.pause()
            found[f"help {page}"] = acted_on(app)
            pages.append(screen_text(app))
            await pilot.press("pagedown")
        help_text = "".join(pages)
        await pilot.press("escape")
        await pilot.press("enter")  # the newest gap, whole
        await pilot.pause()
        found["gap"] = acted_on(app)
        gap_text = screen_text(app)
    assert all(v == [] for v in found.values()), found
    assert "log cuzk\\x1b]52;c;ZXZpbA==\\x07" in help_text and "\\u202e/gapwatch-snapshot-" in help_text
    assert "pinned\\x1b]52" in gap_text and "[warn\\x1b]52" in gap_text


def raw_tabs(app: GapwatchApp) -> list[str]:
    """The screen's text segments that would send a tab to the terminal (`acted_on` leaves tabs
    aside: `fmt.visible` keeps them for the line-stream outputs)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", legacy_windows=False, safe_box=False)
    screen = app.screen._compositor.render_update(full=True)
    assert screen is not None
    return [seg.text for seg in console.render(screen) if not seg.control and "\t" in seg.text]


async def test_tabs_in_log_lines_and_a_gpu_name_reach_no_terminal_raw_and_keep_the_columns(
        tmp_path: Path) -> None:
    """A log line's tabs (a Java stack trace's `\\tat ...`) and a GPU name's went to the
    terminal raw from the rows' own strips (rich measures a tab as 0 cells): the terminal
    jumped to the next tab stop without drawing the cells it passed, so the previous screen
    showed through them (`java.lang.Errorlog atTH)` in tmux) and the line's end went past the
    pane's edge; the name's tabs moved the state badge. Now each is drawn as spaces: the
    log's up to the next stop, as rich's renderable path draws them, a fitted name's one
    each, the badge in its column."""
    from ui_fakes import log_event

    gpus = [GpuInfo(index=0, name="NVIDIA H200", link_bytes_per_s=63e9),
            GpuInfo(index=1, name="H\t\t\t200", link_bytes_per_s=63e9)]
    rt = FakeRuntime(build_config({"snapshot": {"dir": str(tmp_path)}}), gpus=gpus)
    fill_breakdown(rt.store, gpus=(0, 1))
    line = "java.lang.Error\tat\tcom.example.Foo.bar\t\tEND"
    rt.store.append_log(log_event(59.0, line))
    app = GapwatchApp(rt)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        found = raw_tabs(app)
    assert found == []
    # The tab stops counted from the row's start, its time and a space before the line.
    assert ("09:07:20.000 " + line).expandtabs(8) in text
    rows = [line for line in text.splitlines() if "BREAKDOWN   busy" in line]
    assert len(rows) == 2
    assert {cell_len(row[:row.index("BREAKDOWN")]) for row in rows} == {21}


def test_process_names_of_wide_zero_width_and_tab_characters_keep_the_panels_columns() -> None:
    """The process panel cut a name to 16 characters and padded it by characters: a name of
    CJK characters took 32 cells, combining or zero-width marks 8 or fewer, a tab up to 8, and
    every column after it (GPU memory, pinned, heap, copies) moved with it, row by row."""
    from gapwatch.ui.widgets.process_panel import process_rows

    names = ["cuzk-daemon", "証明器" * 10, "e\u0301" * 20, "a\u200b" * 30, "\u202eevil",
             "tab\there", "x" * 100, ""]
    procs = tuple(ProcessMemory(1, 1.0, gpu=0, pid=100 + i, name=name, rss_shmem_bytes=1 << 30,
                                rss_anon_bytes=1 << 30, gpu_memory_bytes=(20 - i) << 30)
                  for i, name in enumerate(names))
    rows = process_rows(procs, (), 0, copytrace=False)
    assert len(rows) == len(names)
    assert {cell_len(row[:row.index("GiB")]) for row in rows} == {32}
    assert all("\t" not in row for row in rows)
