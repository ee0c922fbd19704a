"""The fleet's PromQL as Prometheus evaluates it: promtool's unit tests (`promql_expr_test`)
run a query of `gapwatch.fleet.queries.QUERIES`, rendered as `gapwatch fleet` sends it, over
series a box's /metrics would have written, and check what Prometheus answers. The stand-in
Prometheus of the other fleet tests answers by the query's text and cannot tell a counter's
reset from its value; the real-Prometheus test (test_fleet_prometheus_server.py) takes a
minute per story. Without promtool the test is skipped and says so in the warnings summary."""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import pytest
from fleet_fakes import promql

from gapwatch.fleet.queries import DETAIL_IDLE, DETAIL_VERDICT, QUERIES, more_matchers, render

PROMTOOL = shutil.which("promtool")
SKIP_REASON = ("SKIPPED LOUDLY: promtool not found; the fleet's PromQL was NOT evaluated "
               "(install it: apt-get install -y prometheus)")
if PROMTOOL is None:
    warnings.warn(SKIP_REASON, stacklevel=1)
pytestmark = pytest.mark.skipif(PROMTOOL is None, reason=SKIP_REASON)

BOX = 'job="gapwatch",instance="b:9400"'
#: What the PoSt and restart queries answer for box b:9400 (summed by instance).
BY_BOX = '{instance="b:9400"}'


def _promtool(folder: Path, *args: str) -> None:
    """Run promtool with `args` in `folder`; it must succeed (its output in the failure)."""
    assert PROMTOOL is not None
    done = subprocess.run([PROMTOOL, *args], cwd=folder, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _expect(tmp_path: Path, expr: str, series: dict[str, str], at: str,
            samples: list[tuple[str, float]], interval: str = "1m") -> None:
    """Prometheus answers `samples` (labels, value) to `expr` evaluated at `at` over `series`
    (series -> promtool's values, one each `interval`)."""
    inputs = "".join(f"      - series: '{name}'\n        values: '{values}'\n"
                     for name, values in series.items())
    expected = "".join(f"          - labels: '{labels}'\n            value: {value}\n"
                       for labels, value in samples)
    (tmp_path / "t.yml").write_text(
        # promtool evaluates at a multiple of `evaluation_interval` (4m3s was read at 4m).
        f"rule_files: []\nevaluation_interval: {interval}\ntests:\n  - interval: {interval}\n"
        f"    input_series:\n{inputs}"
        f"    promql_expr_test:\n      - expr: '{expr}'\n        eval_time: {at}\n"
        f"        exp_samples:\n{expected}")
    _promtool(tmp_path, "test", "rules", "t.yml")


def test_late_posts_are_those_of_the_lookback_and_survive_a_restart_of_the_boxs_gapwatch(
        tmp_path: Path) -> None:
    """Four WinningPoSts late, then the box's gapwatch restarted (its counter from 0 again):
    four late in the lookback. Read as the box's count now (`last_over_time`) it was 0."""
    _expect(tmp_path, promql("post_late"), {
        f'gapwatch_proofs_total{{{BOX},proof_kind="winning-post",verdict="late"}}':
            "0 1 2 4 0 0",
        f'gapwatch_proofs_total{{{BOX},proof_kind="winning-post",verdict="ok"}}':
            "0 3 6 9 0 2",
    }, "5m", [(BY_BOX, 4)])


def test_posts_not_timed_are_counted_apart_from_the_late_ones(tmp_path: Path) -> None:
    """A PoSt whose begin was not read is neither late nor on time: counted as not timed
    (the column said "0 late" of a box none of whose PoSts were timed)."""
    _expect(tmp_path, promql("post_untimed"), {
        f'gapwatch_proofs_total{{{BOX},proof_kind="winning-post",verdict="unknown"}}':
            "0 0 1 1 2 2",
        f'gapwatch_proofs_total{{{BOX},proof_kind="window-post",verdict="unknown"}}':
            "0 0 0 1 1 1",
        f'gapwatch_proofs_total{{{BOX},proof_kind="winning-post",verdict="late"}}':
            "0 0 0 0 0 0",
    }, "5m", [(BY_BOX, 3)])


def test_failed_posts_are_counted_apart_from_the_late_ones(tmp_path: Path) -> None:
    """A PoSt cuzk said failed is no proof (its block lost as a late one's is) and not late:
    a box whose WinningPoSts all failed read "0 late". Counted by their verdict over the
    lookback, every kind."""
    _expect(tmp_path, promql("post_failed"), {
        f'gapwatch_proofs_total{{{BOX},proof_kind="winning-post",verdict="failed"}}':
            "0 0 1 1 2 2",
        f'gapwatch_proofs_total{{{BOX},proof_kind="window-post",verdict="failed"}}':
            "0 0 0 1 1 1",
        f'gapwatch_proofs_total{{{BOX},proof_kind="winning-post",verdict="late"}}':
            "0 0 0 0 0 0",
    }, "5m", [(BY_BOX, 3)])


def test_a_box_details_minute_holds_every_verdict_the_box_gave_in_it(tmp_path: Path) -> None:
    """The SRS reloaded after a restart for the minute's first 30 s, then no cause: both
    verdicts of the minute are answered at its end. The verdict at that instant alone said
    "no cause in the window" beside the reload's idle seconds."""
    srs = f'{BOX},gpu="0",state="GAPS",cause="srs_loading",cause_words="cuzk loads the SRS",' \
        'setting="none"'
    none = f'{BOX},gpu="0",state="CHAINED",cause="none",cause_words="none",setting="none"'
    expr = DETAIL_VERDICT.format(sel_=more_matchers('job="gapwatch"'), instance="b:9400")
    _expect(tmp_path, expr, {
        f"gapwatch_gpu_verdict_info{{{srs}}}": "1 1 1 stale",
        f"gapwatch_gpu_verdict_info{{{none}}}": "_ _ _ 1 1",
    }, "60s", [(f"gapwatch_gpu_verdict_info{{{srs}}}", 1),
               (f"gapwatch_gpu_verdict_info{{{none}}}", 1)], interval="15s")


def test_late_posts_are_each_proof_that_went_late_where_the_box_exports_them(
        tmp_path: Path) -> None:
    """A WinningPoSt past its deadline then lost in a prover restart never ends: the box's
    `gapwatch_proofs_total{verdict="late"}` stays 0 and the column said "0 late" while the
    alert GapwatchPoStLate fired. `gapwatch_proofs_late_total` counts it; a box whose gapwatch
    does not export it is read as before (the test above)."""
    _expect(tmp_path, promql("post_late"), {
        f'gapwatch_proofs_late_total{{{BOX},proof_kind="winning-post"}}': "0 0 1 1 1 1",
        f'gapwatch_proofs_total{{{BOX},proof_kind="winning-post",verdict="late"}}':
            "0 0 0 0 0 0",
    }, "5m", [(BY_BOX, 1)])


@pytest.mark.parametrize("selector", ["", " ", 'job="gapwatch",', 'job="gapwatch",cluster=~"p.*"'])
def test_every_query_is_promql_whatever_selector_the_operator_gives(
        tmp_path: Path, selector: str) -> None:
    """`--selector ''` (every target: a job not named "gapwatch") was spliced as
    `{,kind="restart"}`: six of the queries answered HTTP 400, and the PoSt and HLTH columns
    read "-" for every box, a box with 6 late WinningPoSts and a restart among them. Each query
    and the detail's two, as sent, are checked by Prometheus's own parser (promtool)."""
    exprs = [render(q, selector, "1h") for q in QUERIES]
    exprs += [d.format(sel_=more_matchers(selector), instance="b:9400")
              for d in (DETAIL_IDLE, DETAIL_VERDICT)]
    rules = "".join(f"      - record: q{i}\n        expr: '{e}'\n" for i, e in enumerate(exprs))
    (tmp_path / "r.yml").write_text(f"groups:\n  - name: fleet\n    rules:\n{rules}")
    _promtool(tmp_path, "check", "rules", "r.yml")


def test_a_box_scraped_every_second_is_as_old_as_its_latest_scrape_not_a_5_s_step(
        tmp_path: Path) -> None:
    """The last good scrape was read at 5 s steps only: a box scraped every second read 0 to
    5 s old, and with `--stale-after 3` it was stale at one refresh, fresh at the next. Its
    latest scrape, when good, is its age exactly; a box whose scrapes fail now is as old as
    its last good one (here 143 s: up until 100 s, failing since)."""
    _expect(tmp_path, promql("age_s"), {f"up{{{BOX}}}": "1x300"}, "4m3s", [(BY_BOX, 0)],
            interval="1s")
    _expect(tmp_path, promql("age_s"), {f"up{{{BOX}}}": "1x100 0x200"}, "4m3s",
            [(BY_BOX, 143)], interval="1s")


def test_a_gpu_lost_or_uncorrected_ecc_is_a_gpu_error_in_the_health_column(
        tmp_path: Path) -> None:
    """The column counted XIDs alone: a box whose GPU fell off the bus (or had uncorrected ECC
    errors) read `ok` while the alerts fired. It counts the alerts' kinds, a GPU lost or a
    failed row remap while it lasts (true before the box's gapwatch started too); corrected
    ECC errors, PCIe replays and a pending row remap are not errors."""
    from gapwatch.fleet.rows import FleetRow

    _expect(tmp_path, promql("gpu_errors"), {
        f'gapwatch_gpu_hardware_events_total{{{BOX},gpu="0",kind="gpu_lost"}}': "0 0 1 1 1 1",
        # Lost before the box's gapwatch started: 1 from its first scrape (no increase).
        f'gapwatch_gpu_hardware_events_total{{{BOX},gpu="3",kind="gpu_lost"}}': "1 1 1 1 1 1",
        f'gapwatch_gpu_hardware_events_total{{{BOX},gpu="1",kind="ecc_uncorrected"}}':
            "0 0 0 3 3 3",
        f'gapwatch_gpu_hardware_events_total{{{BOX},gpu="2",kind="ecc_corrected"}}':
            "0 5 9 20 40 80",
        f'gapwatch_gpu_hardware_events_total{{{BOX},gpu="2",kind="pcie_replay"}}': "0 1 2 3 4 5",
        # Every GPU and kind is exported from the start, at 0 (`sinks.prometheus._hw_events`).
        f'gapwatch_gpu_hardware_events_total{{{BOX},gpu="2",kind="xid"}}': "0 0 0 0 0 0",
        # A failed row remap is a state too, true from the first scrape; a pending one is a
        # warning (the GPU runs on until its next reset), not an error.
        f'gapwatch_gpu_hardware_events_total{{{BOX},gpu="4",kind="row_remap_failure"}}':
            "1 1 1 1 1 1",
        f'gapwatch_gpu_hardware_events_total{{{BOX},gpu="4",kind="row_remap_pending"}}':
            "1 1 1 1 1 1",
    }, "5m", [('{instance="b:9400",gpu="0"}', 1), ('{instance="b:9400",gpu="1"}', 3),
              ('{instance="b:9400",gpu="2"}', 0), ('{instance="b:9400",gpu="3"}', 1),
              ('{instance="b:9400",gpu="4"}', 1)])
    assert FleetRow(instance="b:9400", gpu="0", gpu_errors=1.0).health() == "X"


def test_a_gpu_read_in_holes_is_flagged_d_and_one_read_every_period_is_not(
        tmp_path: Path) -> None:
    """A box whose NVML blocked or whose ticks were skipped read `ok` like one read every
    period: its gaps may have gone unseen. GPU 0 read at its period all along (60 s of fine
    samples a minute), GPU 1 half the time, its other half merged averages."""
    from gapwatch.fleet.rows import FleetRow

    _expect(tmp_path, promql("read_share_5m"), {
        f'gapwatch_gpu_sampled_seconds_total{{{BOX},gpu="0",kind="fine"}}': "0+60x10",
        f'gapwatch_gpu_sampled_seconds_total{{{BOX},gpu="0",kind="merged"}}': "0x10",
        f'gapwatch_gpu_sampled_seconds_total{{{BOX},gpu="1",kind="fine"}}': "0+30x10",
        f'gapwatch_gpu_sampled_seconds_total{{{BOX},gpu="1",kind="merged"}}': "0+30x10",
        # Started at 0: at 8m it has read 5 minutes whole.
        f'gapwatch_self_process_start_time_seconds{{{BOX}}}': "0x10",
    }, "8m", [('{instance="b:9400",gpu="0"}', 1), ('{instance="b:9400",gpu="1"}', 0.5)])
    # A box whose gapwatch started a minute ago read 0.2 (rate over a younger series): D on
    # every GPU. Not judged before it has 5 minutes.
    _expect(tmp_path, promql("read_share_5m"), {
        f'gapwatch_gpu_sampled_seconds_total{{{BOX},gpu="0",kind="fine"}}': "_x7 0 60 120",
        f'gapwatch_self_process_start_time_seconds{{{BOX}}}': "_x7 420 420 420",
    }, "8m", [])
    assert FleetRow(instance="b:9400", gpu="0", read_share_5m=1.0).health() == "ok"
    assert FleetRow(instance="b:9400", gpu="1", read_share_5m=0.5, throttled=1.0).health() \
        == "TD"
    assert FleetRow(instance="b:9400", gpu="1").health() == "-"


def test_when_a_post_last_went_wrong_is_the_minute_its_late_or_failed_count_last_rose(
        tmp_path: Path) -> None:
    """The HEADLINE's `PoSt 1 late 7m ago`: a count of the lookback was said as if now, a late
    PoSt of 50 minutes ago as one of this minute. The late count rose between 1m and 2m, the
    failed count of another box between 3m and 4m: read at the last minute step whose 2
    minutes hold the rise (3m, 5m), 7 and 5 minutes before 10m (to within 2 minutes)."""
    _expect(tmp_path, promql("post_trouble_age_s"), {
        f'gapwatch_proofs_late_total{{{BOX},proof_kind="winning-post"}}':
            "0 0 1 1 1 1 1 1 1 1 1",
        'gapwatch_proofs_total{job="gapwatch",instance="f:9400",proof_kind="winning-post",'
        'verdict="failed"}': "0 0 0 0 1 1 1 1 1 1 1",
        'gapwatch_proofs_total{job="gapwatch",instance="f:9400",proof_kind="winning-post",'
        'verdict="ok"}': "0 1 2 3 4 5 6 7 8 9 10",
    }, "10m", [(BY_BOX, 420), ('{instance="f:9400"}', 300)])


def test_the_post_advice_keeps_which_verdict_each_setting_is_for(tmp_path: Path) -> None:
    """`max by (instance, setting)` dropped the verdict: a failure's `none` and yesterday's
    late PoSt's setting came as two settings of the box, which of them the PoSt failed now
    was for not said."""
    advice = f'gapwatch_proof_advice_info{{{BOX},proof_kind="winning-post"'
    _expect(tmp_path, promql("post_setting"), {
        f'{advice},verdict="failed",setting="none"}}': "1 1 1",
        f'{advice},verdict="late",setting="[memory] eviction_min_idle"}}': "1 1 1",
        f'{advice},verdict="at_risk",setting="[memory] eviction_min_idle"}}': "1 1 1",
    }, "2m", [('{instance="b:9400",verdict="failed",setting="none"}', 1),
              ('{instance="b:9400",verdict="late",setting="[memory] eviction_min_idle"}', 1)])


def test_a_box_detail_of_a_name_with_a_newline_and_controls_is_answered_by_prometheus(
        tmp_path: Path) -> None:
    """A box whose `instance` holds a newline, a tab, a carriage return and other controls
    (relabelling can set any UTF-8): its detail's query, as `box_detail` sends it, must be
    PromQL Prometheus reads and that matches the box's series. Escaped for `\\` and `"` only,
    the raw newline is a parse error (`unterminated quoted string`): the detail never opened."""
    from fleet_fakes import fake_prometheus

    from gapwatch.fleet.client import PromClient
    from gapwatch.fleet.detail import box_detail
    from gapwatch.fleet.rows import FleetOptions

    name = 'b\n\t\r\x01\x1b\x7f\u0085"x:9400'
    with fake_prometheus() as fake:
        box_detail(PromClient(fake.url), FleetOptions(), name, now_s=700.0)
    expr = next(q for q in fake.asked if q.startswith("sum by (gpu, kind)"))
    # The series as a box exports it, in PromQL's own escapes (written out here by hand).
    written = 'b\\n\\t\\r\\x01\\x1b\\x7f\\u0085\\"x:9400'
    _expect(tmp_path, expr, {
        f'gapwatch_gap_seconds_total{{job="gapwatch",instance="{written}",gpu="0",'
        'kind="pcie_starved"}': "0 5 10 15 20",
    }, "60s", [('{gpu="0",kind="pcie_starved"}', 20)], interval="15s")
