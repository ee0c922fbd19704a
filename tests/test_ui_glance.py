"""The dashboard read at a glance in an 80x24 pane: every GPU on screen, the whole verdict, the
keys always there, help that scrolls and fits, the detail view, a finished replay that says so,
a mistyped log path that says so (issue 12)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_fakes import (
    LAG_S,
    WALL0_S,
    FakeRuntime,
    breakdown_with_hint,
    fill_breakdown,
    fixed_wall,
    gap,
    gpu_sample,
    h200,
    log_event,
    make_config,
    screen_text,
    screens_after_keys,
    t_ns,
)

from gapwatch.config import Config
from gapwatch.core.detector import GapDetector
from gapwatch.core.models import StateChange
from gapwatch.ui.app import GapwatchApp
from gapwatch.ui.widgets.detail_chart import DetailChart
from gapwatch.ui.widgets.help_screen import HELP, HelpScreen
from gapwatch.ui.widgets.log_pane import newest_by_time


def fleet(tmp_path: Path, n: int) -> FakeRuntime:
    """`n` GPUs: GPU0 and GPU5 in BREAKDOWN, GPU3 with host-stall GAPS, the rest CHAINED."""
    rt = FakeRuntime(make_config(tmp_path), gpus=[h200(i) for i in range(n)])
    broken = tuple(g for g in (0, 5) if g < n)
    fill_breakdown(rt.store, gpus=broken)
    for gpu in range(n):
        if gpu in broken:
            continue
        for i in range(601):
            rt.store.append_gpu([gpu_sample(gpu, i / 10, 95.0, 40e9, 1.0e9)])
        state = "GAPS" if gpu == 3 else "CHAINED"
        reason = ("1 host_stall gap in the last 30 s, none pcie_starved" if gpu == 3
                  else "busy, no gaps in the window")
        rt.store.set_state(StateChange(gpu=gpu, t_mono_ns=t_ns(50), t_wall_s=WALL0_S + 50,
                                       state=state, busy_fraction=0.97, reason=reason))  # type: ignore[arg-type]
    if n > 3:
        rt.store.upsert_gap(gap(900, 3, 47.0, 48.1, kind="host_stall", rx=2e6,
                                hint="SMs idle 1.1 s with PCIe quiet (2 MB/s): the GPU waited "
                                     "on the host; synthesis did not keep up with the GPU?"))
    return rt


async def test_eight_gpus_at_80x24_are_all_on_screen_with_the_verdict(tmp_path: Path) -> None:
    rt = fleet(tmp_path, 8)
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
    head = "\n".join(text.splitlines()[:3])
    for gpu in range(8):
        assert f"{gpu} " in head
    assert head.count("BREAKDOWN") == 2 and "GAPS" in head and "CHAINED" in head
    # What the state rests on now (five starved gaps in the window), not the three it was
    # entered on, and since when.
    assert "GPU0 BREAKDOWN since 09:07:06: 5 gaps (slow copies) in the last 30 s" \
        in " ".join(text.split())
    assert "hint:" in text
    assert "? help  q quit" in text


async def test_more_gpus_than_fit_show_a_page_and_name_the_worst_hidden_one(
    tmp_path: Path,
) -> None:
    rt = fleet(tmp_path, 16)
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "of 16, +" in text and "more: g to cycle" in text
        assert "hidden: GPU" in text
        # Twelve presses of `g`: the first eleven as where they lead (GPU 11: the page is the
        # selected GPU's, `pos // per_page`, however it was reached), the twelfth the key.
        app.gpu = 11
        await pilot.press("g")
        await pilot.pause()
        text = screen_text(app)
    assert app.gpu == 12
    assert "▶12" in text  # the page follows the selected GPU
    assert "also: GPU0 BREAKDOWN" in text  # a worse GPU than the selected one is named


async def test_at_80_columns_the_hint_keeps_to_its_lines_and_d_shows_it_whole(
    tmp_path: Path,
) -> None:
    """Two GPUs at 80x24: the hint's first phrase and where the rest is, in the header's fixed
    lines (the gap table and the log keep theirs); the detail view shows the whole hint."""
    long_hint = ("partitions 5, 6, 7 were synthesised with is_pinned=false: a/b/c in pageable "
                 "memory?; SMs idle 1.5 s while H2D ran at 2.8 GB/s (4 % of link); host: tasks "
                 "stalled on memory 39 % of the time (PSI), host memory bandwidth 175.0 GB/s")
    rt = breakdown_with_hint(tmp_path, long_hint, gpus=(0, 1))
    main, detail = await screens_after_keys(GapwatchApp(rt, wall_clock=fixed_wall), ["d"])
    assert "hint: partitions 5, 6, 7 were synthesised with is_pinned=false: a/b/c in pageable " \
           "memory?; SMs idle 1.5 s while H2D ran at 2.8 GB/s (4 % of link); … d: whole hint" \
           in flat(main)
    assert long_hint not in flat(main)
    # 2 GPU lines, their chaining figures, 3 verdict lines.
    assert main.splitlines()[6].startswith("GPU0 · last 60 s")
    assert any(line.startswith("time     GPU") for line in main.splitlines())
    assert long_hint in flat(detail)


#: The latest hint of `gapwatch demo` (`sim:pageable`) after a minute: the memory, the copy,
#: the prover's status and the host, 377 characters.
SIM_PAGEABLE_HINT = (
    "partition 6 was synthesised with is_pinned=false: a/b/c in pageable memory?; SMs idle 1.3 s "
    "while H2D ran at 4.0 GB/s (6 % of link); prover status: the wait is inside the workers "
    "(copies, the GPU mutex, CPU work): every worker of this GPU is proving; host: tasks stalled "
    "on memory 39 % of the time (PSI), host memory bandwidth 175.0 GB/s")


async def test_d_at_80x24_shows_a_demo_length_hint_whole_with_the_gap_table_and_log(
    tmp_path: Path,
) -> None:
    """Two GPUs and the SOURCE ENDED banner leave the verdict few lines: the detail view gives
    it the chart's rows (the busy plot yields, saying so) rather than cut it ("… s: a snapshot
    has it whole"); the gap table, the log and the keys keep their places."""
    rt = breakdown_with_hint(tmp_path, SIM_PAGEABLE_HINT, gpus=(0, 1))
    rt.done = True
    main, detail, back = await screens_after_keys(GapwatchApp(rt, wall_clock=fixed_wall),
                                                  ["d", "d"])
    assert SIM_PAGEABLE_HINT not in flat(main) and "SOURCE ENDED" in main
    assert SIM_PAGEABLE_HINT in flat(detail)
    assert "snapshot has it whole" not in detail
    assert "busy plot: needs 7 rows" in detail
    lines = detail.splitlines()
    assert any(line.startswith("time     GPU") for line in lines)
    assert any(line.startswith("prover log") for line in lines)
    assert lines[-1].startswith("? help  q quit")
    assert back == main  # `d` again: the main view as it was


def flat(text: str) -> str:
    """The screen's words on one line (wrapping undone)."""
    return " ".join(" ".join(line.split()) for line in text.splitlines())


async def test_footer_keys_stay_on_screen_after_a_snapshot(tmp_path: Path) -> None:
    rt = FakeRuntime(make_config(tmp_path / "a-rather-long-folder-name-for-snapshots"))
    fill_breakdown(rt.store)
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        lines = screen_text(app).splitlines()
    assert len(app.snapshots) == 1
    assert lines[-1].startswith("? help  q quit")
    assert f"snapshot: …/{app.snapshots[0].name}" in lines[-2]


async def test_help_scrolls_and_fits_80_columns(tmp_path: Path) -> None:
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    # Each page a jump, not an animated scroll waited for (~0.2 s each): what is on each page
    # is the same either way (as TEXTUAL_ANIMATIONS=none).
    app.animation_level = "none"
    assert max(len(line) for line in HELP.splitlines()) <= 72
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        first = screen_text(app)
        assert "keys" in first and "gap marks" not in first  # longer than the pane
        pages = []
        for _ in range(8):  # page by page (the help ends with the advice for the gaps so far)
            await pilot.press("pagedown")
            await pilot.pause()
            pages.append(screen_text(app))
        scrolled = "".join(pages)
    assert "gap marks" in scrolled  # the end of the help is reachable
    assert "what to change" in scrolled
    for line in HELP.splitlines():
        if line.strip():
            assert line.rstrip() in first + scrolled or line.strip() in first + scrolled


async def test_help_says_a_failed_winningpost_first_in_what_to_change(tmp_path: Path) -> None:
    """The help's "what to change" gave the gaps' advice alone (and nothing before a gap),
    while the report and the snapshot said a failed WinningPoSt first: it is said here too,
    with or without a gap, as the snapshot's summary.md says it."""
    from gapwatch.core.models import ProofTiming, ProverEvent

    failed = ProverEvent(WALL0_S + 50.0, "proof", "error", "failed",
                         job_id="winpost-1000-3c4d5e6f",
                         proof=ProofTiming("winning-post", queue_s=0.0, synth_s=2.1,
                                           total_s=2.5, deadline_s=30.0, verdict="failed",
                                           error="synthesis failed: invalid vanilla proof",
                                           cause="synthesis failed"))
    for with_gaps in (True, False):
        rt = FakeRuntime(make_config(tmp_path))
        if with_gaps:
            fill_breakdown(rt.store)
        rt.store.append(failed)
        app = GapwatchApp(rt, wall_clock=fixed_wall)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            text = app.screen.text()
        said = text.split("what to change (cuzk's settings, for the PoSt and gaps so far)\n",
                          1)[1].splitlines()
        assert said[0] == (
            "  PoSt: 1 WinningPoSt failed (no proof came of it: a WinningPoSt's block lost as a "
            "late one's): cuzk said 'synthesis failed: invalid vanilla proof' (engine.rs:2855): "
            "no cuzk setting: its synthesis returned the error (synthesize_winning_post / "
            "synthesize_window_post, pipeline.rs:2900, 3091, from its request's vanilla "
            "proofs): the error names what failed, on Curio's side of the request (its "
            "sectors' vanilla proofs) more often than cuzk's")
        assert any(" gap(s), " in line for line in said[1:]) == with_gaps


async def test_d_at_80x24_draws_the_busy_plot_with_a_0_to_100_axis(tmp_path: Path) -> None:
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("d")
        await pilot.pause()
        await pilot.pause(0.2)
        text = screen_text(app)
        assert app.query_one(DetailChart).builds >= 1
    assert "100┤" in text and "  0┤" in text
    assert "105" not in text and "-8" not in text  # no axis past 0..100
    assert "now" in text and "? help  q quit" in text


async def test_a_finished_replay_says_so_and_shows_the_open_gap_as_reported(
    tmp_path: Path,
) -> None:
    config = make_config(tmp_path)
    detector = GapDetector(config.detector, [h200(0)], period_s=0.1)
    rt = FakeRuntime(config, gpus=[h200(0)], detector=detector)
    # Busy, two starved gaps, then idle until the data ends: the last idle stretch is open.
    for i in range(300):
        s = i / 10
        idle = 10 <= s < 11.5 or 16 <= s < 17.2 or s >= 27.0
        rt.session.on_gpu_samples([gpu_sample(0, s, 0.0 if idle else 96.0,
                                              2.8e9 if idle else 30e9)])
    assert any(g.is_open for g in rt.store.snapshot().gaps)
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "so far" in screen_text(app)  # live: the open gap grows
        rt.session.finish()  # what the runtime does when the replay's file ends
        rt.done = True
        app.refresh_status()
        await pilot.pause()
        text = screen_text(app)
    assert "REPLAY ENDED" not in text  # the fake's source is sim: the banner says SOURCE ENDED
    assert "SOURCE ENDED" in text and "gaps, final: pcie_starved=2" in text
    assert "so far" not in text and "+ " not in text.split("time ")[1][:400]
    assert "retracted" in text  # the verdict says why the last idle stretch is not a gap
    assert "source ended" in text.splitlines()[-2]


async def test_a_missing_log_path_is_a_warning_in_the_footer_at_80_columns(
    tmp_path: Path,
) -> None:
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    rt.logs = {"/var/log/cuzk/stdout.lgo": "missing: no such file (waiting for it)"}
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        footer = screen_text(app).splitlines()[-2]
    assert footer.startswith("log /var/log/cuzk/stdout.lgo: missing: no such file")


async def test_a_failing_recording_is_the_first_alert_at_80_columns(tmp_path: Path) -> None:
    from gapwatch.sinks.recorder import RecordingStatus

    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    rt.recording = RecordingStatus(
        path="/data/gw.jsonl.gz", state="failing", error="No space left on device",
        failing_since_wall_s=None, write_errors=3, records_written=900, records_pending=120,
        records_dropped=0, bytes_written=1 << 20)
    rt.logs = {"/var/log/cuzk/stdout.lgo": "missing: no such file (waiting for it)"}
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        footer = screen_text(app).splitlines()[-2]
    assert footer.startswith("RECORDING FAILING: No space left on device")


async def test_a_late_post_is_the_footers_alert_at_80_columns(tmp_path: Path) -> None:
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    rt.prover_alert = ("prover proof at 09:49:00: WinningPoSt winpost-1000-1a2b3c02: 35.1 s of "
                       "its 30 s deadline; LATE")
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        footer = screen_text(app).splitlines()[-2]
    assert footer.startswith("prover proof at 09:49:00: WinningPoSt winpost-1000-1a2b3c02")


def test_the_log_pane_orders_by_time_whatever_the_arrival_order() -> None:
    events = [log_event(s, f"line at {s}") for s in (5.318, 5.239, 5.238, 5.307)]
    shown = newest_by_time(events, 3)
    assert [e.t_wall_s for e in shown] == sorted(e.t_wall_s for e in shown)
    assert shown[-1].raw == "line at 5.318"


def test_config_default_is_what_the_fleet_fixture_assumes() -> None:
    assert Config().detector.gpm_lag_ms == LAG_S * 1000


async def test_a_gpu_without_a_verdict_reads_no_data_and_outranks_a_chained_one(
    tmp_path: Path,
) -> None:
    """GPU0 chains; GPU1 has samples but no verdict yet; GPU2 went silent (NO_DATA). The header
    calls each by its own state, GPU0's verdict says chaining holds, and the "also:" line names
    the two NO_DATA GPUs, which rank above a chained one (a state mix-up fails here)."""
    rt = FakeRuntime(make_config(tmp_path), gpus=[h200(0), h200(1), h200(2)])
    for i in range(301):
        for gpu in (0, 1, 2):
            rt.store.append_gpu([gpu_sample(gpu, i / 10, 95.0, 40e9, 1.0e9)])
    rt.store.set_state(StateChange(gpu=0, t_mono_ns=t_ns(10), t_wall_s=WALL0_S + 10,
                                   state="CHAINED", busy_fraction=0.97,
                                   reason="busy, no gaps in the window"))
    rt.store.set_state(StateChange(gpu=2, t_mono_ns=t_ns(20), t_wall_s=WALL0_S + 20,
                                   state="NO_DATA", busy_fraction=None,
                                   reason="no sample from this GPU since; the other inputs go on"))
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        lines = screen_text(app).splitlines()
    assert "CHAINED" in lines[0] and "GPU0" in lines[0]
    assert "NO_DATA" in lines[1] and "GPU1" in lines[1]
    assert "NO_DATA" in lines[2] and "GPU2" in lines[2]
    assert any(line.startswith("GPU0 CHAINED since 09:06:31: busy, no gaps") for line in lines)
    also = [line for line in lines if line.startswith("also: ")]
    assert also and "GPU1 NO_DATA" in also[0] and "GPU2 NO_DATA" in also[0]


async def test_a_posts_verdict_leads_the_footers_alert_at_80_columns(tmp_path: Path) -> None:
    """The footer's alert is one line cut at the pane's edge and a proof's words end with its
    verdict: at 80 columns a WinningPoSt late by its lower bound read `... more than 36.0 s o…`,
    one not timed at all `... ? of its 30 s deadl…`, both in the alert colour, and a
    WindowPoSt's job id left nothing of its verdict. The verdict comes first: late by a lower
    bound reads LATE, a proof not timed reads NOT TIMED, never as on time."""
    from gapwatch.core.models import ProofTiming, ProverEvent
    from gapwatch.cuzk.post import proof_words
    from gapwatch.engine.runtime import _prover_alert

    cases = [
        ("winpost-1000-cafef00d", ProofTiming("winning-post", gpu_s=36.0, total_at_least_s=36.0,
                                              deadline_s=30.0, verdict="late"), "error",
         "prover proof LATE at "),
        ("wdpost-1000-3-[12 34 56 78 90 12 34 56 78 90 12 34]",
         ProofTiming("window-post", deadline_s=1800.0, verdict="unknown"), "warning",
         "prover proof NOT TIMED (on time or late not known) at "),
        # Failed (its failure line named it): the verdict, then why, within 80 columns.
        ("winpost-1000-3c4d5e6f", ProofTiming("winning-post", total_s=2.5, deadline_s=30.0,
                                              verdict="failed",
                                              error="GPU prove start failed: Unsatisfiable"),
         "error",
         "prover proof FAILED at "),
    ]
    for job, timing, level, lead in cases:
        rt = FakeRuntime(make_config(tmp_path))
        fill_breakdown(rt.store)
        rt.store.append(ProverEvent(
            t_wall_s=WALL0_S + 50.0, kind="proof", level=level,  # type: ignore[arg-type]
            message=proof_words(job, timing, True), job_id=job, proof=timing))
        rt.prover_alert = _prover_alert(rt.store)
        app = GapwatchApp(rt, wall_clock=fixed_wall)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            footer = screen_text(app).splitlines()[-2]
        assert footer.startswith(lead), footer
        assert " ok" not in footer and "0.0 s" not in footer
        assert timing.verdict != "failed" or f"{job}: GPU prove s" in footer, footer


def test_a_late_post_keeps_the_footers_alert_over_a_later_restart_warning(tmp_path: Path
                                                                          ) -> None:
    """A late WinningPoSt (an error) and then, within the alert's 5 minutes, a restart (a
    warning): the footer had only room for the latest, so the operator who looked up saw a
    restart and not the lost block. The worst stays (an error before a warning, then the
    latest), and the others are counted on the line; past the 5 minutes none is said."""
    from gapwatch.core.models import ProofTiming, ProverEvent
    from gapwatch.engine.runtime import PROVER_ALERT_S, _prover_alert

    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)  # GPU data up to WALL0_S + 60
    late = ProofTiming("winning-post", total_s=35.1, deadline_s=30.0, verdict="late")
    rt.store.append(ProverEvent(t_wall_s=WALL0_S + 10.0, kind="proof", level="error",
                                message="WinningPoSt winpost-1000-1a2b3c02: 35.1 s", proof=late,
                                job_id="winpost-1000-1a2b3c02"))
    rt.store.append(ProverEvent(t_wall_s=WALL0_S + 40.0, kind="restart", level="warning",
                                message="prover restarted"))
    rt.store.append(ProverEvent(t_wall_s=WALL0_S + 45.0, kind="restart_cost", level="warning",
                                message="restart cost 5.0 s"))
    alert = _prover_alert(rt.store)
    assert alert is not None
    assert alert.startswith("prover proof LATE at ") and "winpost-1000-1a2b3c02" in alert
    assert " (+2 more): WinningPoSt " in alert[:60]  # within an 80-column cut

    # Two errors: the latest of them; a warning alone: itself, nothing more counted.
    rt.store.append(ProverEvent(t_wall_s=WALL0_S + 50.0, kind="error", level="error",
                                message="CUDA error 700"))
    assert (_prover_alert(rt.store) or "").startswith("prover error")
    only_warning = FakeRuntime(make_config(tmp_path))
    fill_breakdown(only_warning.store)
    only_warning.store.append(ProverEvent(t_wall_s=WALL0_S + 40.0, kind="restart",
                                          level="warning", message="prover restarted"))
    assert "more)" not in (_prover_alert(only_warning.store) or "more)")

    # Past the alert's window of data, the late proof is no longer said.
    old = FakeRuntime(make_config(tmp_path))
    fill_breakdown(old.store)
    old.store.append(ProverEvent(t_wall_s=WALL0_S + 59.0 - PROVER_ALERT_S - 1.0, kind="proof",
                                 level="error", message="WinningPoSt late", proof=late))
    assert _prover_alert(old.store) is None


async def test_a_gpu_error_stays_on_the_footers_alert_line_while_recent(tmp_path: Path) -> None:
    """An XID was a toast for 8 s and then nowhere on the pane (docs/health.md promised the
    alert line): an operator who looked up a minute later saw a healthy-looking GPU. The
    latest GPU error leads the footer for 5 minutes of data, the others counted; a GPU
    warning (corrected ECC, PCIe replays) is not an alert, and an old error is not said."""
    from gapwatch.core.models import HardwareEvent
    from gapwatch.engine.runtime import PROVER_ALERT_S, gpu_error_alert

    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)  # GPU data up to WALL0_S + 60
    rt.store.append(HardwareEvent(0, t_ns(30.0), WALL0_S + 30.0, "ecc_corrected", count=5))
    assert gpu_error_alert(rt.store) is None
    rt.store.append(HardwareEvent(0, t_ns(40.0), WALL0_S + 40.0, "ecc_uncorrected", count=2))
    rt.store.append(HardwareEvent(0, t_ns(50.0), WALL0_S + 50.0, "xid", code=79))
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        footer = screen_text(app).splitlines()[-2]
    assert footer.startswith("GPU ERROR at "), footer
    assert "(+1 more): GPU 0: XID 79" in footer

    old = FakeRuntime(make_config(tmp_path))
    fill_breakdown(old.store)
    old.store.append(HardwareEvent(0, 0, WALL0_S + 59.0 - PROVER_ALERT_S - 1.0, "gpu_lost",
                                   code=15))
    assert gpu_error_alert(old.store) is None
    # An error a recording times long after its last reading held the line for good (the
    # data never reached it): recent is within 5 minutes either way.
    ahead = FakeRuntime(make_config(tmp_path))
    fill_breakdown(ahead.store)
    ahead.store.append(HardwareEvent(0, 0, WALL0_S + 60.0 + PROVER_ALERT_S + 1000.0, "xid",
                                     code=79))
    assert gpu_error_alert(ahead.store) is None


def test_a_gpu_error_is_not_pushed_off_the_alert_line_by_corrected_ecc_warnings(
        tmp_path: Path) -> None:
    """Corrected ECC warnings of a failing memory (one a GPU each reading) pushed a lost GPU
    out of the latest 256 hardware events within ~40 s of 7 GPUs' readings, and the footer's
    5-minute alert went with it."""
    from gapwatch.core.models import HardwareEvent
    from gapwatch.engine.runtime import gpu_error_alert

    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)  # GPU data up to WALL0_S + 60
    rt.store.append(HardwareEvent(3, t_ns(10.0), WALL0_S + 10.0, "gpu_lost", code=15))
    for second in range(40):
        for gpu in (0, 1, 2, 4, 5, 6, 7):
            rt.store.append(HardwareEvent(gpu, t_ns(10.0 + second), WALL0_S + 10.0 + second,
                                          "ecc_corrected", count=1))
    alert = gpu_error_alert(rt.store)
    assert alert is not None and "GPU 3: lost" in alert


async def test_a_failure_in_the_helps_advice_is_one_line_and_the_dashboard_runs_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`?` worked the advice out in the key's handler: an exception there (a bug, an input no
    bound caught) ended the dashboard, the operator's pane gone, where /metrics serves on. The
    help opens, its "what to change" says the failure in one line, and `q` closes it."""
    def broken(*_: object) -> None:
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr("gapwatch.ui.app.session_advice", broken)
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        said = app.screen.text().split("what to change", 1)[1].splitlines()[1:]
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)
        assert app.is_running
    assert said == ["  not worked out: ZeroDivisionError: float division by zero (a gapwatch "
                    "bug: please report it; the dashboard runs on)"]


async def test_a_snapshot_that_fails_inside_gapwatch_is_said_and_the_dashboard_runs_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`s` writes its folder in a thread worker, which caught only `SnapshotError` (a folder it
    cannot write): any other exception in writing summary.md and the rest ended the dashboard
    (a Textual worker's error exits the app). It is a failed snapshot, said as one; the next
    `s` is taken."""
    def broken(*_: object, **__: object) -> Path:
        raise ValueError("cannot format 'nan'")

    monkeypatch.setattr("gapwatch.ui.app.write_snapshot", broken)
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        footer = screen_text(app).splitlines()[-2]
        monkeypatch.undo()
        await pilot.press("s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.is_running
    assert footer.startswith("snapshot FAILED: ValueError: cannot format 'nan'")
    assert len(app.snapshots) == 1


#: The setting `gapwatch demo` names at 80x24 (`sim:pageable`), with its step and payoff.
DEMO_SETTING = ("; raise [memory] safety_margin (or lower total_budget if not auto) "
                "(payoff ~1.7x)")


def demo_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeRuntime:
    """GPU0 in BREAKDOWN as the demo has it: five starved gaps, each with pageable copies (the
    copy trace's witness), the setting to change, and a hint whose first phrase is longer
    than the verdict's lines have room for after the setting."""
    from dataclasses import replace

    from gapwatch.ui.widgets.gpu_header import GpuHeader

    rt = breakdown_with_hint(tmp_path, "7.0 GiB copied from pageable host memory at 2.0 GB/s on "
                             "streams 13, 14; porep-1000-11 partition 6 was synthesised with "
                             "is_pinned=false")
    window = rt.store.snapshot().windows[0]
    rt.store.set_window(replace(window, pageable_gaps=5))
    monkeypatch.setattr(GpuHeader, "_change_words", lambda self, view, gpu, gaps=True: DEMO_SETTING)
    return rt


async def test_at_80x24_the_verdict_keeps_the_setting_whole_and_no_empty_hint_label(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """explore9 #8, newcomer 04: live, the three verdict lines hold the setting and its payoff
    but no phrase of the hint: they say where it is (`d: the hint`), not an empty label
    (`hint: … d: whole hint`). Paused (one line less), whole phrases go (the copy trace's
    witness, the pointer), never the setting: it was cut mid-word (`(or low …`)."""
    rt = demo_verdict(tmp_path, monkeypatch)
    live, paused = await screens_after_keys(GapwatchApp(rt, wall_clock=fixed_wall), ["p"])
    head = flat("\n".join(live.splitlines()[2:5]))
    assert head.endswith("raise [memory] safety_margin (or lower total_budget if not auto) "
                         "(payoff ~1.7x) d: the hint")
    assert "5 with copies from pageable memory (copy trace)" in head
    assert "hint: …" not in live
    verdict = flat("\n".join(paused.splitlines()[3:5]))
    assert "PAUSED" in paused.splitlines()[2]
    assert verdict == ("GPU0 BREAKDOWN since 09:07:06: 5 gaps (slow copies) in the last 30 s; "
                       "raise [memory] safety_margin (or lower total_budget if not auto) "
                       "(payoff ~1.7x)")
    assert "…" not in verdict


async def test_three_gpus_with_the_copy_trace_at_80x24_keep_the_gap_table_and_the_log(
    tmp_path: Path,
) -> None:
    """newcomer 02: with two GPUs or more at 80x24 (a header line and a copy line more each)
    the panels under the chart took the gap table's and the log's rows, every one: the
    charts grew to 2-4 rows each. The panels under the chart yield (`under_chart_rows`): the
    selected GPU's copy line alone; the charts keep one row each, the gap table and the log
    their least rows. `g` shows the next GPU's copy line."""
    from ui_fakes import add_processes

    rt = breakdown_with_hint(tmp_path, "pageable copies", gpus=(0, 1, 2))
    for gpu in (0, 1, 2):
        add_processes(rt.store, gpu=gpu)
    main, other = await screens_after_keys(GapwatchApp(rt, wall_clock=fixed_wall), ["g"])
    lines = main.splitlines()
    assert any(line.startswith("time     GPU") for line in lines)
    assert any(line.startswith("prover log") for line in lines)
    assert [line[:8] for line in lines if line.startswith("H2D GPU")] == ["H2D GPU0"]
    assert [line[:8] for line in other.splitlines() if line.startswith("H2D GPU")] \
        == ["H2D GPU1"]
    assert sum(line.startswith(("busy %", "RX ", "TX ")) for line in lines) == 3
    # A row each first (copies, host, pipeline), then the host's, the copies', the pipeline's.
    from gapwatch.ui.app import under_chart_rows

    assert under_chart_rows(4, [2, 2, 1]) == [1, 2, 1]
    assert under_chart_rows(2, [2, 2, 1]) == [1, 1, 0]
    assert under_chart_rows(9, [2, 2, 1]) == [2, 2, 1]


def demo_why(snap: object, gpu: int) -> object:
    """`cuzk.why_now` as the demo had it at 80x24 (review6 #1): the setting with its step, and
    a payoff over the verdict's own 30 s window resting on 15 gaps (the verdict counts 5)."""
    from gapwatch.cuzk.knobs import RAISE_MARGIN
    from gapwatch.cuzk.why_now import WhyNow

    return WhyNow(gpu, "BREAKDOWN", "pinned_pool_exhausted", "slow copies",
                  "[memory] safety_margin", "raise", 1.62, 11.5, RAISE_MARGIN, 30.0, 15)


async def test_at_80x24_the_payoff_is_said_whole_live_and_paused_its_span_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """review6 #1: the verdict says its window ("5 gaps (slow copies) in the last 30 s"); the
    payoff over that same window said "over the last 30 s" again, and paused (one line less)
    it was cut inside (`payoff ~1.62x over …`), the hint's pointer gone. Now the span is said
    once, the payoff's own gap count kept live (it is not the verdict's count) with the
    pointer to the hint; paused, whole phrases go (the count, the pointer), never a cut."""
    from gapwatch.ui.widgets import gpu_header

    rt = demo_verdict(tmp_path, monkeypatch)
    monkeypatch.undo()  # the real `_change_words`, over the demo's verdict facts
    monkeypatch.setattr(gpu_header, "why_now", demo_why)
    live, paused = await screens_after_keys(GapwatchApp(rt, wall_clock=fixed_wall), ["p"])
    setting = "raise [memory] safety_margin (or lower total_budget if not auto); payoff ~1.62x"
    head = flat("\n".join(live.splitlines()[2:5]))
    assert head.endswith(f"{setting} (15 gaps) d: the hint")
    assert "over the last" not in head
    verdict = flat("\n".join(paused.splitlines()[3:5]))
    assert "PAUSED" in paused.splitlines()[2]
    # Two lines hold the verdict, the setting and the figure, not its count nor the pointer.
    assert verdict == f"GPU0 BREAKDOWN since 09:07:06: 5 gaps (slow copies) in the last 30 s; {setting}"
