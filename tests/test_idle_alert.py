"""A GPU idling in gaps of any kind for more than a set share of the last minutes reaches a
person, with the box's own verdict as its words: `--on-event`'s `idle_high` (a box without
Prometheus) and the rule `GapwatchGpuIdleHigh`, one threshold for both (`[alerts] idle_share`,
`idle_window_s`). Before, only BREAKDOWN ran `--on-event`: a GPU idle 40-50 % in host_stall or
transfer_bound gaps (payoff ~2x) never did, and the page that fired for host_stall gaps
(`GapwatchHostStallRatioHigh`) blamed host memory pressure while the box's verdict named cuzk's
batch collector and its setting. promtool's unit tests (gapwatch.rules.test.yml) pin the
rule's words."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
from test_on_event import _lines, _record, _recorder

from gapwatch.config import AlertsConfig
from gapwatch.core.idle_share import IdleShareWatch
from gapwatch.core.models import ChainState, Gap, GapKind, StateChange
from gapwatch.engine.events import EventHook

DEPLOY = Path(__file__).resolve().parent.parent / "deploy" / "prometheus"
#: The window `record` judges the idle share over (`[alerts] idle_window_s`): two minutes, not
#: the default ten, so a run of the simulator that crosses it is 220 s of data, not 700 s (each
#: ~1.5 CPU-s); whether and what it says does not hang on the window's length.
WINDOW_S = 120
_NS = 1_000_000_000


def _gap(end_s: float, idle_s: float, kind: GapKind = "host_stall", gpu: int = 0) -> Gap:
    start_s = end_s - idle_s
    return Gap(gap_id=int(end_s * 10), gpu=gpu, kind=kind, start_mono_ns=int(start_s * _NS),
               start_s=start_s, end_mono_ns=int(end_s * _NS), end_s=end_s, duration_s=idle_s,
               pcie_rx_bytes_per_s=None, pcie_tx_bytes_per_s=None, link_bytes_per_s=None)


def _every_30_s(from_s: float, to_s: float, idle_s: float) -> list[Gap]:
    """Gaps of `idle_s` closing every 30 s, host_stall and transfer_bound by turns."""
    kinds: tuple[GapKind, GapKind] = ("host_stall", "transfer_bound")
    n = int((to_s - from_s) // 30)
    return [_gap(from_s + 30 * (i + 1), idle_s, kinds[i % 2]) for i in range(n)]


def _state(state: ChainState, t_s: float) -> StateChange:
    return StateChange(t_mono_ns=int(t_s * _NS), t_wall_s=t_s, gpu=0, state=state,
                       busy_fraction=0.5, reason="")


def test_the_share_of_the_window_idle_in_closed_gaps_of_any_kind_is_said_once_per_crossing(
        ) -> None:
    watch = IdleShareWatch(0.25, 600.0)
    # 13 s of every 30 s idle (43 %), two kinds by turns: over a quarter of 10 min once 12
    # gaps have closed (156 s), said then and not again while it stays over.
    said = [h for g in _every_30_s(0, 1200, 13.0) if (h := watch.closed(g)) is not None]
    assert len(said) == 1
    assert said[0].t_wall_s == 360.0 and said[0].share == 156 / 600
    assert said[0].words() == "GPU0 idle 26.0 % of the last 10 min in gaps (more than 25 %)"
    # Busy for 10 min, then idle as much again: under the share in between, so said again.
    again = [h for g in _every_30_s(1800, 2400, 13.0) if (h := watch.closed(g)) is not None]
    assert [h.t_wall_s for h in again] == [2160.0]
    # A healthy GPU (3 s of 30, 10 %), and a gap still open or retracted, are never said.
    calm = IdleShareWatch(0.25, 600.0)
    assert all(calm.closed(g) is None for g in _every_30_s(0, 1200, 3.0))
    assert calm.closed(msgspec.structs.replace(_gap(1300, 500), retracted=True)) is None
    assert calm.closed(msgspec.structs.replace(_gap(1300, 500), end_s=None,
                                               end_mono_ns=None)) is None


def test_idle_high_runs_the_command_with_the_share_as_its_detail_not_in_breakdown(
        tmp_path: Path) -> None:
    """A GPU idling in BREAKDOWN has its page (`breakdown_entered`, same verdict); once it
    leaves BREAKDOWN still idling over the share, `idle_high` says so."""
    argv, out = _recorder(tmp_path)
    hook = EventHook(argv, min_interval_s=0, idle=IdleShareWatch(0.25, 600.0))
    hook.start()
    hook.listen(_state("BREAKDOWN", 1.0))
    gaps = _every_30_s(0, 1200, 13.0)
    for g in gaps[:20]:
        hook.listen(g)
    hook.listen(_state("GAPS", 601.0))
    for g in gaps[20:]:
        hook.listen(g)
    hook.stop()
    events = _lines(out)
    assert [e["GAPWATCH_EVENT"] for e in events] == ["breakdown_entered", "breakdown_left",
                                                     "idle_high"]
    idle = events[2]
    assert (idle["GAPWATCH_GPU"], idle["GAPWATCH_STATE"]) == ("0", "GAPS")
    assert idle["GAPWATCH_DETAIL"] == ("GPU0 idle 43.3 % of the last 10 min in gaps (more "
                                       "than 25 %)")
    assert idle["GAPWATCH_TIME"] == "630.000"


def test_a_gpu_that_leaves_breakdown_still_idling_is_said_again() -> None:
    """The rule's `unless gapwatch_gpu_breakdown` ends its alert during a BREAKDOWN, and
    Prometheus fires it anew once the GPU leaves it still idling; the hook said it at 360 s and
    then nothing more, the share never having fallen under the threshold."""
    watch = IdleShareWatch(0.25, 600.0)
    said: list[float] = []
    was_held = False
    for g in _every_30_s(0, 1800, 13.0):
        held = 900 <= (g.end_s or 0) < 1200
        if held and not was_held:
            watch.held(g.gpu)  # BREAKDOWN entered (`EventHook.listen`)
        was_held = held
        if (h := watch.closed(g, held=held)) is not None:
            said.append(h.t_wall_s)
    assert said == [360.0, 1200.0]


def test_a_breakdown_in_which_no_gap_closed_ends_the_idle_page_too(tmp_path: Path) -> None:
    """BREAKDOWN entered and left between two closings: the rule's alert ended while it held,
    so the next gap still over the share runs the command again."""
    argv, out = _recorder(tmp_path)
    hook = EventHook(argv, min_interval_s=0, idle=IdleShareWatch(0.25, 600.0))
    hook.start()
    gaps = _every_30_s(0, 1200, 13.0)
    for g in gaps[:20]:  # said at 360 s
        hook.listen(g)
    hook.listen(_state("BREAKDOWN", 601.0))
    hook.listen(_state("GAPS", 602.0))
    for g in gaps[20:]:
        hook.listen(g)
    hook.stop()
    events = _lines(out)
    assert [(e["GAPWATCH_EVENT"], e["GAPWATCH_TIME"]) for e in events] == [
        ("idle_high", "360.000"), ("breakdown_entered", "601.000"),
        ("breakdown_left", "602.000"), ("idle_high", "630.000")]


def test_record_says_a_gpu_idle_in_batch_wait_or_transfer_bound_gaps_with_its_verdict(
        tmp_path: Path) -> None:
    """sim:batch-wait (host_stall gaps: cuzk's batch collector holds each request) and
    sim:transfer-bound idle their GPU 40-45 %: each runs the command once, its words the
    box's verdict (the dashboard's headline, /metrics' gapwatch_gpu_verdict_info). The window
    is configured (`WINDOW_S`): the idle share over it, as over the default's."""
    seen = {}
    config = tmp_path / "alerts.toml"
    config.write_text(f"[alerts]\nidle_window_s = {WINDOW_S}\n")
    for scenario in ("batch-wait", "transfer-bound"):
        (tmp_path / scenario).mkdir()
        argv, out = _recorder(tmp_path / scenario)
        err = _record("--config", str(config), "--source", f"sim:{scenario}", "--speed", "0",
                      "--seed", "5", "--duration", str(WINDOW_S + 100), "--quiet",
                      "--out", str(tmp_path / f"{scenario}.jsonl"), "--on-event", " ".join(argv))
        assert "--on-event ran once: 1 ok" in err, err
        (event,) = _lines(out)
        assert event["GAPWATCH_EVENT"] == "idle_high"
        assert str(event["GAPWATCH_DETAIL"]).startswith("GPU0 idle ")
        seen[scenario] = event
    bw = seen["batch-wait"]
    assert (bw["GAPWATCH_CAUSE"], bw["GAPWATCH_SETTING"]) == ("batch_wait",
                                                              "[scheduler] max_batch_size")
    assert str(bw["GAPWATCH_LINE"]).startswith(
        "GPU0 GAPS: cuzk held requests in its batch collector, waiting for a batch to fill; "
        "set [scheduler] max_batch_size = 1; payoff ~")
    tb = seen["transfer-bound"]
    assert (tb["GAPWATCH_CAUSE"], tb["GAPWATCH_SETTING"]) == ("copies_not_overlapped", "none")
    assert str(tb["GAPWATCH_LINE"]).startswith(
        "GPU0 GAPS: copies at line rate, not overlapped with compute; payoff ~")


def _rule(name: str) -> str:
    rules = (DEPLOY / "gapwatch.rules.yml").read_text()
    return rules.split(f"- alert: {name}\n", 1)[1].split("- alert:", 1)[0]


def test_the_rule_pages_over_the_threshold_and_window_the_hook_reads_by_default() -> None:
    """The rule file is static YAML: its share and window are `[alerts]`'s defaults, said in
    its comment and description; a default changed alone fails here."""
    rule = _rule("GapwatchGpuIdleHigh")
    expr = rule.split("expr:", 1)[1].split("labels:", 1)[0]
    (window, share), = re.findall(r"rate\(gapwatch_gap_seconds_total\[(\d+)m\]\)\) > ([\d.]+)",
                                  expr)
    defaults = AlertsConfig()
    assert float(share) == defaults.idle_share
    assert int(window) * 60 == defaults.idle_window_s
    assert "kind=" not in expr  # gaps of any kind
    assert "unless on (job, instance, gpu) gapwatch_gpu_breakdown == 1" in expr
    assert f"idle_share and idle_window_s\n      # defaults ({defaults.idle_share:g}, " \
           f"{defaults.idle_window_s:g} s)" in (DEPLOY / "gapwatch.rules.yml").read_text()
    assert f"More than {defaults.idle_share:.0%} of the last {window}m" in rule


def test_no_page_blames_host_pressure_for_every_host_stall_gap() -> None:
    """`GapwatchHostStallRatioHigh` said "host memory pressure or CPU starvation" for any
    host_stall gap (sim:batch-wait's, host PSI 3 %): gone, its GPUs paged by
    `GapwatchGpuIdleHigh` with the verdict's words."""
    rules = (DEPLOY / "gapwatch.rules.yml").read_text()
    assert "alert: GapwatchHostStallRatioHigh" not in rules
    assert "host memory pressure or CPU starvation" not in rules


def test_the_idle_alerts_why_pinned_by_promtool_is_the_verdicts_own_line() -> None:
    """The rule's `why` (made by Prometheus from the verdict's labels) says what
    `WhyNow.line` says for the same facts, as `idle_high`'s GAPWATCH_LINE does."""
    from gapwatch.cuzk.knobs import set_to
    from gapwatch.cuzk.why_now import NO_CAUSE, WhyNow

    test = (DEPLOY / "gapwatch.rules.test.yml").read_text()
    group = test.split("alertname: GapwatchGpuIdleHigh", 1)[0].rsplit("  - interval:", 1)[1]
    for why in (WhyNow(0, "GAPS", "batch_wait", "cuzk held requests in its batch collector, "
                       "waiting for a batch to fill", "[scheduler] max_batch_size", "", 1.8,
                       step=set_to("1"), payoff_span_s=30.0, payoff_gaps=1),
                WhyNow(1, "GAPS", "copies_not_overlapped", "copies at line rate, not "
                       "overlapped with compute", NO_CAUSE, "", 1.7)):
        step = why.change_words() or NO_CAUSE
        assert (f'gpu="{why.gpu}",state="{why.state}",cause="{why.cause}",cause_words='
                f'"{why.cause_words}",setting="{why.setting}",step="{step}"') in group
        assert f'why: "{why.line()}"' in test
