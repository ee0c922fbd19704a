"""A PoSt in flight on the dashboard: counting up against its deadline on the footer while it
runs, an alert once past its at-risk share (before, nothing was said of it until it was late
or done: the operator learnt of a WinningPoSt at 31 s, after its block was lost)."""

from __future__ import annotations

from pathlib import Path

from ui_fakes import WALL0_S, FakeRuntime, fill_breakdown, gpu_sample, make_config, screen_text

from gapwatch.core.models import LogEvent
from gapwatch.core.prover_watch import RunningProof
from gapwatch.cuzk.watch import CuzkWatch
from gapwatch.engine.status import RuntimeStatus
from gapwatch.ui.app import GapwatchApp
from gapwatch.ui.widgets.status_footer import MAX_RUNNING_SAID, status_alerts, status_parts

WIN = "winpost-1000-1a2b3c02"


def _line(t_s: float, name: str, job: str | None = None, **fields: object) -> LogEvent:
    return LogEvent(t_wall_s=t_s, time_source="line", kind="tracing", name=name, raw=name,
                    job_id=job, fields=fields)  # type: ignore[arg-type]


def _timeline(t_s: float, name: str, job: str, **fields: object) -> LogEvent:
    return LogEvent(t_wall_s=t_s, time_source="line", kind="timeline", name=name, raw=name,
                    job_id=job, fields=fields)  # type: ignore[arg-type]


def _running(rt: FakeRuntime, until_s: float) -> None:
    """A WinningPoSt enqueued at +40 s, in synthesis from +41 s, the log going on to `until_s`."""
    rt.session.watch = CuzkWatch()
    for ev in (_line(WALL0_S + 40.0, "job enqueued", WIN, proof_kind="winning-post"),
               _timeline(WALL0_S + 41.0, "SYNTH_START", WIN, kind="winning-post"),
               _line(WALL0_S + until_s, "pinned pool buffer checked out")):
        rt.session.on_log_event(ev)


def fixed_wall() -> float:
    return WALL0_S + 60.0


async def test_a_winningpost_in_flight_counts_up_on_the_footer_against_its_deadline(
        tmp_path: Path) -> None:
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    _running(rt, until_s=52.0)
    [proof] = rt.store.running_proofs()
    assert proof.phase == "synthesis" and proof.timing.verdict == "ok"
    app = GapwatchApp(rt, wall_clock=fixed_wall)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        footer = screen_text(app).splitlines()[-2]
    assert footer.startswith(f"WinningPoSt {WIN} running 12.0 s of 30 s (synthesis)"), footer


def test_past_its_at_risk_share_it_is_an_alert_and_done_it_is_gone(tmp_path: Path) -> None:
    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    _running(rt, until_s=58.0)  # 18 s of 30: past half
    status = rt.status()
    assert [a for a in status_alerts(status) if WIN in a] == [
        f"WinningPoSt {WIN} running 18.0 s of 30 s (synthesis), AT RISK"]
    assert not [p for p in status_parts(status) if WIN in p]  # said once, as the alert
    for ev in (_timeline(WALL0_S + 58.5, "SYNTH_END", WIN, synth_ms=17500),
               _timeline(WALL0_S + 58.5, "GPU_QUEUE", WIN, monolithic=True),
               _timeline(WALL0_S + 58.6, "GPU_PICKUP", WIN, worker=0),
               _timeline(WALL0_S + 58.6, "GPU_START", WIN, worker=0),
               _timeline(WALL0_S + 59.0, "GPU_END", WIN, worker=0, gpu_ms=400),
               _line(WALL0_S + 59.1, "proof completed successfully (pipeline)",
                     total_ms=19100)):
        rt.session.on_log_event(ev)
    assert rt.store.running_proofs() == ()


def test_many_proofs_in_flight_are_said_by_name_up_to_a_few_then_counted(tmp_path: Path
                                                                          ) -> None:
    rt = FakeRuntime(make_config(tmp_path))
    rt.session.watch = CuzkWatch()
    for i in range(MAX_RUNNING_SAID + 4):
        rt.session.on_log_event(_timeline(WALL0_S + i, "SYNTH_START", f"wdpost-1000-{i}-[1]",
                                          kind="window-post"))
    parts = status_parts(rt.status())
    named = [p for p in parts if p.startswith("WindowPoSt ")]
    assert len(named) == MAX_RUNNING_SAID and "wdpost-1000-0-[1]" in named[0]  # oldest first
    assert "+4 more proofs running" in parts
    assert status_parts(RuntimeStatus(source="x", period_ms=100.0, lateness=None,
                                      gpu_sources={}))[0] == "source x"


def test_a_post_still_running_past_its_deadline_is_one_alert_not_two(tmp_path: Path) -> None:
    """Past its deadline the proof's own event says it (`still running ... LATE`): the
    running line said it again on the footer's one alert line, pushing the others off."""
    from gapwatch.engine.runtime import _prover_alert

    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    _running(rt, until_s=75.0)  # 35 s of 30
    rt.prover_alert = _prover_alert(rt.store)
    rt.prover_alert_job_id = WIN
    alerts = [a for a in status_alerts(rt.status()) if WIN in a]
    assert len(alerts) == 1 and alerts[0].startswith("prover proof LATE at ")
    assert not [p for p in status_parts(rt.status()) if WIN in p]


def test_a_post_still_running_late_stays_an_alert_after_its_event_is_no_longer_recent(
        tmp_path: Path) -> None:
    """A WindowPoSt (or a WinningPoSt stuck) still running minutes past its deadline: its
    `still running ... LATE` event left the footer's alert 5 minutes of data after it, and
    the running line of a late proof is left to that event, so the footer said nothing more
    of a proof still in flight and late. While it runs late, its running line is the alert."""
    from gapwatch.engine.runtime import _prover_alert

    rt = FakeRuntime(make_config(tmp_path))
    fill_breakdown(rt.store)
    _running(rt, until_s=75.0)  # 35 s of 30: said late at +71 s
    for s in range(61, 500):  # the data goes on, the proof never ends
        rt.store.append_gpu([gpu_sample(0, float(s), 97.0, 6e9)])
    rt.session.on_log_event(_line(WALL0_S + 499.0, "pinned pool buffer checked out"))
    rt.prover_alert = _prover_alert(rt.store)
    assert rt.prover_alert is None  # its event is 7 minutes old
    alerts = [a for a in status_alerts(rt.status()) if WIN in a]
    assert alerts == [f"WinningPoSt {WIN} running 459.0 s of 30 s (synthesis), LATE"]


def test_a_storm_of_post_events_puts_the_proofs_in_flight_in_the_store_a_few_times_not_each(
        tmp_path: Path) -> None:
    """1,000 PoSt ids that never end, past the 256 followed at once: each gives up the oldest
    (an event), and the feeder put every proof in flight in the store at each event (3 ms for
    256: 4 ms a line, 400 s for 100,000). Puts at events are one per 256 records in a storm;
    a second of data later the store holds the latest."""
    from gapwatch.cuzk.post import MAX_IN_FLIGHT

    rt = FakeRuntime(make_config(tmp_path))
    watch = rt.session.watch = CuzkWatch()
    asked = 0
    running = watch.running

    def counted() -> list[RunningProof]:
        nonlocal asked
        asked += 1
        return running()

    watch.running = counted  # type: ignore[method-assign]
    n = 1000
    for i in range(n):
        rt.session.on_log_event(_timeline(WALL0_S + 40.0, "SYNTH_START", f"winpost-1-{i:08x}",
                                          kind="winning-post"))
    assert asked <= 5  # one per 256 records (it was 745: one per event)
    rt.session.on_log_event(_line(WALL0_S + 41.0, "pinned pool buffer checked out"))
    held = rt.store.running_proofs()
    assert len(held) == MAX_IN_FLIGHT and {r.job_id for r in held} == {
        f"winpost-1-{i:08x}" for i in range(n - MAX_IN_FLIGHT, n)}
