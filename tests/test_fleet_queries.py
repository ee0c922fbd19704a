"""`gapwatch fleet`'s headless half against a stand-in Prometheus: rows worst first, dead boxes
kept stale, missing exports shown as "-", and every bad answer (timeout, HTTP error, hostile
JSON, a huge body) said, never raised, never taking the other columns with it."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import pytest
from fleet_fakes import EMPTY, FakeProm, Reply, box, fake_prometheus, matrix, promql, vector

from gapwatch.cli import main
from gapwatch.commands.fleet import options, table_lines
from gapwatch.fleet.client import PromClient, PromError
from gapwatch.fleet.detail import box_detail, post_line
from gapwatch.fleet.queries import JOBS_WITH_ROWS, QUERIES, render
from gapwatch.fleet.rows import (
    COLUMNS,
    MAX_COUNT,
    MAX_SECONDS,
    FleetOptions,
    FleetRow,
    cells,
    refresh,
)


def test_rows_come_worst_first_and_a_stale_box_is_kept_below_breakdown() -> None:
    with fake_prometheus() as fake:
        box(fake, "ok:9400", 2, "CHAINED")
        box(fake, "bad:9400", 1, "BREAKDOWN")
        box(fake, "gaps:9400", 1, "GAPS")
        box(fake, "dead:9400", 1, "CHAINED", up=0.0, age_s=400.0)
        rows = refresh(PromClient(fake.url), FleetOptions()).rows
    assert [(r.instance, r.gpu) for r in rows] == [
        ("bad:9400", "0"), ("dead:9400", "0"), ("gaps:9400", "0"), ("ok:9400", "0"),
        ("ok:9400", "1")]
    dead = rows[1]
    assert dead.stale and dead.state == "CHAINED" and dead.age_s == 400.0
    assert not any(r.stale for r in rows if r.instance != "dead:9400")
    assert rows[0].setting == "[memory] safety_margin" and rows[0].busy_ratio == 0.5


def test_a_box_gone_from_the_targets_is_stale_not_dropped() -> None:
    with fake_prometheus() as fake:
        box(fake, "gone:9400", 1)
        fake.replies[promql("up")] = EMPTY  # no longer a target: no `up` at all
        rows = refresh(PromClient(fake.url), FleetOptions()).rows
    assert len(rows) == 1 and rows[0].stale and rows[0].up is None


def test_a_gpu_a_live_box_no_longer_exports_is_stale_not_its_last_state_fresh() -> None:
    """A GPU gone from a live box's /metrics (lost at a restart of its gapwatch) kept its last
    state within the lookback, looking as fresh as its box: `CHAINED` for a GPU that is not
    there. The box's other GPUs stay fresh; a failed question judges none."""
    with fake_prometheus() as fake:
        box(fake, "b:9400", 2, "CHAINED")
        fake.replies[promql("exported")] = vector(({"instance": "b:9400", "gpu": "0"}, 5))
        rows = {r.gpu: r for r in refresh(PromClient(fake.url), FleetOptions()).rows}
        assert not rows["0"].stale and rows["0"].exported is True
        assert rows["1"].stale and rows["1"].exported is False and rows["1"].up == 1.0
        assert cells(rows["1"])[2] == "STALE"
        fake.replies[promql("exported")] = Reply(503, b"")
        result = refresh(PromClient(fake.url), FleetOptions())
    assert "exported" in result.errors
    assert not any(r.stale for r in result.rows) and {r.exported for r in result.rows} == {None}


def test_exports_a_box_lacks_show_as_a_dash_and_box_level_values_reach_every_gpu() -> None:
    with fake_prometheus() as fake:
        box(fake, "b:9400", 2)
        fake.replies[promql("restarts")] = vector(({"instance": "b:9400"}, 2))
        fake.replies[promql("post_last_latency_s")] = vector(({"instance": "b:9400"}, 31.5))
        rows = refresh(PromClient(fake.url), FleetOptions()).rows
    for row in rows:
        c = dict(zip(("box", "gpu", "state", "busy", "headline", "idle", "age", "setting", "gain",
                      "chain", "post", "health", "cause"), cells(row), strict=True))
        assert c["chain"] == "-" and c["idle"] == "-"
        assert c["post"] == "32s/-" and c["health"] == "R"


def test_the_setting_to_change_is_shown_with_what_it_would_gain() -> None:
    """The payoff of the verdict now beside its setting (`[memory] safety_margin 1.7x`): it was
    in `--json` only, and the screen and `--once` named a setting on every starved box without
    saying which change pays most."""
    with fake_prometheus() as fake:
        box(fake, "b:9400", 2, "BREAKDOWN")
        fake.replies[promql("payoff_gain")] = vector(
            ({"job": "gapwatch", "instance": "b:9400", "gpu": "0"}, 1.652))
        result = refresh(PromClient(fake.url), FleetOptions())
    shown = {r.gpu: cells(r) for r in result.rows}
    assert shown["0"][7:9] == ("[memory] safety_margin", "1.7x")
    assert shown["1"][8] == "-"  # no payoff exported: not known, not 1.0x
    heading = table_lines(result)[0].split()
    assert heading[heading.index("SETTING") + 1] == "GAIN"


def test_no_gain_is_shown_beside_no_setting_to_change() -> None:
    """A box exports its cause's payoff whatever the cause: a first wave's gaps, which no
    setting closes, read `none 1.5x` in the table, a gain waiting on a change that does not
    exist. The GAIN column shows `-` there; `--json` keeps the figure the box exported."""
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1, "BREAKDOWN")
        fake.replies[promql("verdict")] = vector(
            ({"job": "gapwatch", "instance": "b:9400", "gpu": "0", "state": "BREAKDOWN",
              "cause": "first_synthesis", "cause_words": "the first wave after a start",
              "setting": "none"}, 1))
        fake.replies[promql("payoff_gain")] = vector(
            ({"job": "gapwatch", "instance": "b:9400", "gpu": "0"}, 1.5))
        result = refresh(PromClient(fake.url), FleetOptions())
    (row,) = result.rows
    assert cells(row)[7:9] == ("none", "-")
    assert row.as_json()["payoff_gain"] == 1.5


def test_the_post_cell_says_posts_not_timed_beside_the_late_ones() -> None:
    """`35s/1 ?2`: one PoSt late and two more not timed in the lookback. It said `35s/1`, and
    `-/0` of a box none of whose PoSts could be timed: as if they were all on time."""
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1)
        fake.replies[promql("post_last_latency_s")] = vector(({"instance": "b:9400"}, 35.2))
        box(fake, "c:9400", 1)
        fake.replies[promql("post_late")] = vector(({"instance": "b:9400"}, 1.02),
                                                   ({"instance": "c:9400"}, 0.0))
        fake.replies[promql("post_untimed")] = vector(({"instance": "b:9400"}, 2.04),
                                                      ({"instance": "c:9400"}, 0.0))
        result = refresh(PromClient(fake.url), FleetOptions())
    rows = {r.instance: r for r in result.rows}
    assert cells(rows["b:9400"])[10] == "35s/1 ?2"
    assert rows["b:9400"].as_json()["post_untimed"] == 2.04
    assert cells(rows["c:9400"])[10] == "-/0"  # none not timed: not said


def test_the_post_cell_says_failed_posts_beside_the_late_ones() -> None:
    """`35s/0 !1`: no PoSt late, one failed in the lookback (cuzk said so: its block lost as
    a late one's is). It said `35s/0`, as if every PoSt had been on time."""
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1)
        fake.replies[promql("post_last_latency_s")] = vector(({"instance": "b:9400"}, 35.2))
        box(fake, "c:9400", 1)
        fake.replies[promql("post_late")] = vector(({"instance": "b:9400"}, 0.0),
                                                   ({"instance": "c:9400"}, 1.0))
        fake.replies[promql("post_failed")] = vector(({"instance": "b:9400"}, 1.02),
                                                     ({"instance": "c:9400"}, 0.0))
        fake.replies[promql("post_untimed")] = vector(({"instance": "b:9400"}, 2.0))
        result = refresh(PromClient(fake.url), FleetOptions())
    rows = {r.instance: r for r in result.rows}
    assert cells(rows["b:9400"])[10] == "35s/0 !1 ?2"
    assert rows["b:9400"].as_json()["post_failed"] == 1.02
    assert cells(rows["c:9400"])[10] == "-/1"  # none failed: not said


def test_a_failing_query_empties_its_column_only_and_is_named() -> None:
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1)
        fake.replies[promql("busy_ratio")] = Reply(503, json.dumps(
            {"status": "error", "errorType": "unavailable", "error": "too many queries"}
        ).encode())
        fake.replies[promql("verdict")] = Reply(body=b"<html>proxy error</html>")
        result = refresh(PromClient(fake.url), FleetOptions())
    assert result.errors["busy_ratio"] == "HTTP 503: too many queries"
    assert "not Prometheus JSON" in result.errors["verdict"]
    row = result.rows[0]
    assert row.busy_ratio is None and row.cause is None and row.state == "CHAINED"
    assert not result.rows_failed


@pytest.mark.parametrize("body", [
    b"[" * 200_000,
    json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"instance": 5}, "value": [1, "1"]}]}}).encode(),
    json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {}, "value": "1"}]}}).encode(),
    b'{"status": "success", "data": null}',
    b"\xff\xfe\x00garbage",
])
def test_hostile_json_is_said_not_raised(body: bytes) -> None:
    with fake_prometheus() as fake:
        fake.default = Reply(body=body)
        with pytest.raises(PromError):
            PromClient(fake.url).instant("up")
        result = refresh(PromClient(fake.url), FleetOptions())
    assert result.rows_failed and result.rows == [] and len(result.errors) == len(QUERIES)


def test_a_huge_answer_is_refused_after_the_cap_not_read_whole() -> None:
    with fake_prometheus() as fake:
        fake.default = Reply(body=b" " * (3 * 1024 * 1024))
        with pytest.raises(PromError, match="larger than 1 MiB"):
            PromClient(fake.url, max_bytes=1024 * 1024).instant("up")


def test_a_slow_prometheus_costs_one_refresh_budget_not_one_timeout_per_query() -> None:
    with fake_prometheus() as fake:
        fake.default = Reply(body=EMPTY.body, delay_s=0.4)
        result = refresh(PromClient(fake.url), FleetOptions(budget_s=0.2))
    assert result.rows_failed
    assert "no answer within" in result.errors["state"]
    assert all("skipped" in why for f, why in result.errors.items() if f != "state")
    assert len(fake.asked) == 1


def test_values_that_are_not_finite_are_unknown() -> None:
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1)
        fake.replies[promql("busy_ratio")] = vector(
            ({"instance": "b:9400", "gpu": "0"}, "NaN"))
        rows = refresh(PromClient(fake.url), FleetOptions()).rows
    assert rows[0].busy_ratio is None


#: Every figure the table reads, each answered with the same absurd value.
_FIGURES = ("busy_ratio", "chaining_ratio", "idle_s_5m", "payoff_gain", "post_last_latency_s",
            "post_late", "post_untimed", "post_failed", "restarts", "gpu_errors", "throttled",
            "read_share_5m", "age_s")


@pytest.mark.parametrize("value", ["1e308", "-1e308", "-0"])
def test_values_a_metric_cannot_have_are_unknown_and_every_cell_fits_its_column(
        value: str) -> None:
    """A Prometheus answering 1e308, -1e308 or -0 showed `inf%`, `-0%`, `-0.0x`, IDLE and AGE
    cells of 300 digits and a 522-character line: a busy share outside 0-100 %, a negative
    count or age, a payoff below 1 are not known, as NaN is; -0 is 0."""
    labels = {"job": "gapwatch", "instance": "b:9400", "gpu": "0"}
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1, "BREAKDOWN")
        fake.replies[promql("verdict")] = vector(
            ({**labels, "state": "BREAKDOWN", "cause": "pinned_pool", "cause_words": "pool",
              "setting": "[memory] safety_margin"}, 1))
        for field in _FIGURES:
            fake.replies[promql(field)] = vector(({**labels, "kind": "pcie_starved"}, value))
        result = refresh(PromClient(fake.url), FleetOptions())
    (row,) = result.rows
    known = {f: getattr(row, f) for f in _FIGURES if f != "idle_s_5m"}
    if value == "-0":
        # Zero where zero can be, never "-0"; a payoff of 0 (below 1) is none.
        assert known["busy_ratio"] == 0.0 and str(known["busy_ratio"]) == "0.0"
        assert known["payoff_gain"] is None and known["age_s"] == 0.0
    else:
        assert set(known.values()) == {None} and not row.idle_s_5m
    shown = cells(row)
    assert not any("inf" in c or "-0" in c or "nan" in c for c in shown)
    for text, (heading, width) in zip(shown, COLUMNS, strict=True):
        assert len(text) <= width, (heading, text)
    assert max(map(len, table_lines(result))) <= sum(w + 1 for _, w in COLUMNS)


def test_the_largest_figures_a_field_can_hold_fit_their_columns() -> None:
    """A century of seconds, a count of 2^53, a gain of 2^53: each cell in its column."""
    row = FleetRow("b:9400", "0", "BREAKDOWN", age_s=MAX_SECONDS, busy_ratio=1.0,
                   idle_s_5m={"pcie_starved": MAX_SECONDS}, setting="[memory] safety_margin",
                   payoff_gain=MAX_COUNT, post_last_latency_s=MAX_SECONDS, post_late=MAX_COUNT,
                   chaining_ratio=1.0)
    shown = dict(zip((h for h, _ in COLUMNS), cells(row), strict=True))
    assert (shown["AGE"], shown["IDLE5m"], shown["GAIN"], shown["PoSt"]) == (
        "100y", "100y S", "9Px", "100y/9P")
    assert cells(FleetRow("b", "0", age_s=86400.0, idle_s_5m={"host_stall": 1200.0}))[5:7] == (
        "20m H", "24h")


def test_label_text_from_prometheus_is_shown_not_obeyed() -> None:
    with fake_prometheus() as fake:
        box(fake, "evil\x1b[2J:9400", 1)
        rows = refresh(PromClient(fake.url), FleetOptions()).rows
    assert "\x1b" not in "".join(cells(rows[0]))


def test_a_box_detail_lists_its_minutes_with_the_verdict_then() -> None:
    with fake_prometheus() as fake:
        fake.range_replies["sum by (gpu, kind)"] = matrix(
            ({"gpu": "0", "kind": "pcie_starved"}, [(600.0, 12.5), (660.0, 0.0)]))
        fake.range_replies["last_over_time(gapwatch_gpu_verdict_info"] = matrix(
            ({"gpu": "0", "cause_words": "a/b/c copied from pageable memory",
              "setting": "[memory] safety_margin", "step": "raise [memory] safety_margin"},
             [(600.0, 1.0)]))
        minutes = box_detail(PromClient(fake.url), FleetOptions(), 'b"x:9400', now_s=700.0)
    assert len(minutes) == 1
    line = minutes[0].line()
    # The step the box's headline said, not "change": the `step` label.
    assert "GPU0 idle 12.5s (pcie_starved 12.5s): a/b/c copied from pageable memory; " \
           "raise [memory] safety_margin" in line


def test_a_box_detail_minute_of_idle_seconds_no_counter_can_have_is_none() -> None:
    """1e308 idle seconds in a minute made a detail line of 300 digits; the table's IDLE5m
    reads the same counter and calls it not known (`rows.CAN_BE`)."""
    with fake_prometheus() as fake:
        fake.range_replies["sum by (gpu, kind)"] = matrix(
            ({"gpu": "0", "kind": "pcie_starved"}, [(600.0, 1e308), (660.0, 12.5)]))
        minutes = box_detail(PromClient(fake.url), FleetOptions(), "b:9400", now_s=700.0)
    assert [m.t_wall_s for m in minutes] == [660.0]
    assert max(len(m.line()) for m in minutes) < 100


def test_a_box_detail_of_a_gapwatch_without_the_step_label_says_change_setting() -> None:
    from gapwatch.fleet.detail import Verdict

    old = Verdict("a/b/c copied from pageable memory", "[memory] safety_margin")
    assert old.words() == "a/b/c copied from pageable memory; change [memory] safety_margin"
    assert Verdict("slow copies", "none", "none").words() == "slow copies"


def test_a_box_detail_minute_is_said_by_the_60_s_it_holds_not_the_minute_after() -> None:
    """Prometheus's point at t is `increase(...[1m])`: the 60 s before t, and the range ends
    now, at no whole minute. The line said "HH:MM" of t: gaps that closed at 00:54:20 and
    00:54:57 were listed under "00:55" (the point of 00:55:22), a minute late beside the box's
    own log. It says both ends now."""
    with fake_prometheus() as fake:
        fake.range_replies["sum by (gpu, kind)"] = matrix(
            ({"gpu": "0", "kind": "host_stall"}, [(622.0, 37.3)]))
        minutes = box_detail(PromClient(fake.url), FleetOptions(), "b:9400", now_s=622.0)
    since = time.strftime("%H:%M:%S", time.localtime(562.0))
    until = time.strftime("%H:%M:%S", time.localtime(622.0))
    assert [m.line() for m in minutes] == [
        f"{since}-{until} GPU0 idle 37.3s (host_stall 37.3s): no cause in the window"]


def test_a_box_detail_minute_names_the_cause_it_had_not_the_none_beside_it() -> None:
    """A minute whose gaps came of an SRS reload, then no cause: Prometheus answers both
    verdicts of the minute, and the line says the cause. The last label set answered was
    shown, "no cause in the window" beside 19 s of idle as often as not."""
    srs = {"gpu": "0", "cause": "srs_loading", "cause_words": "cuzk loads the SRS",
           "setting": "none"}
    synth = {"gpu": "0", "cause": "waits_on_synthesis",
             "cause_words": "the GPU waits on synthesis",
             "setting": "[pipeline] max_parallel_synthesis"}
    none = {"gpu": "0", "cause": "none", "cause_words": "none", "setting": "none"}
    with fake_prometheus() as fake:
        fake.range_replies["sum by (gpu, kind)"] = matrix(
            ({"gpu": "0", "kind": "host_stall"}, [(600.0, 19.0)]))
        verdicts = matrix((srs, [(600.0, 1.0)]), (synth, [(600.0, 1.0)]),
                          (none, [(600.0, 1.0)]))
        for prefix in ("gapwatch_gpu_verdict_info", "last_over_time(gapwatch_gpu_verdict_info"):
            fake.range_replies[prefix] = verdicts
        minutes = box_detail(PromClient(fake.url), FleetOptions(), "b:9400", now_s=700.0)
    assert [m.line().partition(": ")[2] for m in minutes] == [
        "cuzk loads the SRS | the GPU waits on synthesis; change "
        "[pipeline] max_parallel_synthesis"]


def test_once_json_prints_the_rows_and_exits_1_when_prometheus_cannot_answer(
        capsys: pytest.CaptureFixture[str]) -> None:
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1, "BREAKDOWN")
        assert main(["fleet", "--prometheus", fake.url, "--once", "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["rows"][0]["state"] == "BREAKDOWN" and doc["errors"] == {}
        fake.replies.clear()
        fake.default = Reply(500, b"")
        assert main(["fleet", "--prometheus", fake.url, "--once", "--json"]) == 1
        out = capsys.readouterr()
        assert json.loads(out.out)["errors"]["state"] == "HTTP 500"
        assert f"every query ({len(QUERIES)}) to {fake.url}: HTTP 500" in out.err


def test_once_as_text_has_the_screen_columns(capsys: pytest.CaptureFixture[str]) -> None:
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1, "GAPS")
        assert main(["fleet", "--prometheus", fake.url, "--once"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("BOX") and "SETTING" in lines[0]
    assert lines[1].startswith("b:9400") and "GAPS" in lines[1]


def test_bad_flags_are_refused_with_a_reason(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fleet", "--prometheus", "ftp://x", "--once"]) == 2
    assert main(["fleet", "--prometheus", "http://x:1", "--json"]) == 2
    assert main(["fleet", "--prometheus", "http://x:1", "--once", "--selector", "a}"]) == 2
    assert main(["fleet", "--prometheus", "http://x:1", "--once", "--lookback", "1h)"]) == 2
    err = capsys.readouterr().err
    assert "http(s) URL" in err and "give --once too" in err and "label matchers" in err
    assert "a minute or more" in err


def test_fleet_once_never_loads_textual() -> None:
    code = ("import sys\nfrom gapwatch.cli import main\n"
            "main(['fleet', '--prometheus', 'http://127.0.0.1:9', '--once', '--json',"
            " '--timeout', '0.5'])\n"
            "print([m for m in sys.modules if m.split('.')[0] in ('textual', 'plotext')])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stderr


def test_a_failed_up_query_judges_no_row_stale_by_it() -> None:
    """`up` unanswered made every row stale (`up` None read as down), a row the other
    questions showed live among them: a question that failed judges nothing."""
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1, "CHAINED")
        box(fake, "dead:9400", 1, "CHAINED", up=0.0, age_s=400.0)
        fake.replies[promql("up")] = Reply(503, b"")
        result = refresh(PromClient(fake.url), FleetOptions())
    rows = {r.instance: r for r in result.rows}
    assert "up" in result.errors
    assert not rows["b:9400"].stale and rows["b:9400"].exported is True
    assert rows["dead:9400"].stale  # by its age, which was answered


def test_a_box_whose_freshness_prometheus_did_not_answer_is_never_shown_fresh() -> None:
    """A box dead for 50 minutes still has rows (the state query reaches back a lookback):
    with `up`, the scrape's age and the exports all unanswered, nothing judged it, and it
    showed its last CHAINED as fresh (`"stale": false`, `--once` exit 0). Not known is said
    so, and ranked with the stale."""
    with fake_prometheus() as fake:
        box(fake, "ok:9400", 1, "GAPS")
        box(fake, "dead:9400", 1, "CHAINED", up=0.0, age_s=3000.0)
        for field in ("up", "age_s", "exported"):
            fake.replies[promql(field)] = Reply(503, b"")
        result = refresh(PromClient(fake.url), FleetOptions())
    assert {"up", "age_s", "exported"} <= set(result.errors)
    rows = {r.instance: r for r in result.rows}
    assert rows["dead:9400"].stale is None and cells(rows["dead:9400"])[2] == "?CHAINED"
    assert rows["dead:9400"].as_json()["stale"] is None
    # Ranked with the stale, above the GAPS it may hide behind its old state.
    assert [r.instance for r in result.rows] == ["dead:9400", "ok:9400"]


def test_the_boxes_freshness_is_asked_before_the_optional_questions() -> None:
    """A slow Prometheus spent the refresh's budget on the columns first and skipped `up` and
    the scrape's age, the two questions without which no row's freshness is known."""
    order = [q.field for q in QUERIES]
    assert order[:3] == ["state", "up", "age_s"]
    assert all(not q.optional for q in QUERIES[:order.index("age_s") + 1])


def test_a_dead_boxs_gpus_are_not_said_no_longer_exported() -> None:
    """A box not scraped has all its series stale: its GPUs were each `"exported": false`, as
    a GPU lost at a restart is; only a box scraped now says that of a GPU."""
    with fake_prometheus() as fake:
        box(fake, "dead:9400", 2, "CHAINED", up=0.0, age_s=400.0)
        rows = refresh(PromClient(fake.url), FleetOptions()).rows
    assert all(r.stale and r.exported is None for r in rows)


def test_a_boxs_verdict_now_is_shown_and_a_dead_boxs_newest_not_the_last_listed() -> None:
    """The verdict query reached back a lookback: every cause a box reported in the hour came,
    and the row kept whichever Prometheus listed last ("cuzk loads the SRS" on a box whose
    /metrics said cause="none" now). A box's verdict now is asked without a lookback; a dead
    box's (none now) is the newest label set of the lookback, each with when it was last
    reported."""
    def labels(box: str) -> dict[str, str]:
        return {"job": "gapwatch", "instance": box, "gpu": "0"}

    srs = {"cause": "srs_load", "cause_words": "cuzk loads the SRS", "setting": "none"}
    none = {"cause": "none", "cause_words": "none", "setting": "none"}
    with fake_prometheus() as fake:
        box(fake, "live:9400", 1, "CHAINED")
        box(fake, "dead:9400", 1, "CHAINED", up=0.0, age_s=400.0)
        fake.replies[promql("verdict")] = vector(({**labels("live:9400"), **none}, 1))
        fake.replies[promql("verdict_last")] = vector(
            ({**labels("live:9400"), **srs}, 1_796_002_000),
            ({**labels("dead:9400"), **none}, 1_796_002_000),
            ({**labels("dead:9400"), **srs}, 1_796_000_000))
        rows = {r.instance: r for r in refresh(PromClient(fake.url), FleetOptions()).rows}
    live, dead = rows["live:9400"], rows["dead:9400"]
    assert (live.cause, live.verdict_now, live.verdict_t_wall_s) == ("none", True, None)
    assert (dead.cause, dead.verdict_now, dead.verdict_t_wall_s) == ("none", False,
                                                                     1_796_002_000)
    # The verdict now unanswered: the newest of the lookback, not said to be the last one.
    with fake_prometheus() as fake:
        box(fake, "live:9400", 1, "CHAINED")
        fake.replies[promql("verdict")] = Reply(503, b"")
        fake.replies[promql("verdict_last")] = vector(
            ({**labels("live:9400"), **srs}, 1_796_000_000),
            ({**labels("live:9400"), **none}, 1_796_002_000))
        [row] = refresh(PromClient(fake.url), FleetOptions()).rows
    assert (row.cause, row.verdict_now) == ("none", None)


def test_a_selector_of_bytes_that_are_not_utf8_is_refused_at_the_flag_not_a_traceback(
        capsys: pytest.CaptureFixture[str]) -> None:
    # `--selector $'job="\xff"'`: Python reads the byte as a lone surrogate (U+DCFF); the
    # query's form could not be encoded (UnicodeEncodeError out of urlencode: `fleet --once`
    # died with a traceback, the screen at its first refresh).
    assert main(["fleet", "--prometheus", "http://127.0.0.1:1", "--once",
                 "--selector", 'job="\udcff"']) == 2
    err = capsys.readouterr().err
    assert "--selector" in err and "UTF-8" in err and "Traceback" not in err


def test_an_unquoted_selector_value_is_refused_at_the_flag_with_the_quoted_form(
        capsys: pytest.CaptureFixture[str]) -> None:
    """`--selector job=gapwatch`, as one types it, went to Prometheus as it was: each query of
    the refresh came back as its own parse error, a dozen lines, exit 1. It is one line now,
    with the form to give; a value with a comma or `=` inside its quotes is no bare value."""
    assert main(["fleet", "--prometheus", "http://x:1", "--once", "--selector",
                 'job=gapwatch,cluster=~"prov.*"']) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(
        "PromQL quotes a matcher's value ('gapwatch' is not quoted); give --selector "
        "'job=\"gapwatch\",cluster=~\"prov.*\"'"), err

    def given(selector: str) -> str:
        args = argparse.Namespace(lookback="1h", selector=selector, stale_after=60.0,
                                  timeout=5.0)
        try:
            return options(args).selector
        except ValueError as exc:
            return str(exc).split("give --selector ")[-1]

    assert given('job="a,b=c"') == 'job="a,b=c"'
    assert given('job=gapwatch,cluster="a,b=c"') == "'job=\"gapwatch\",cluster=\"a,b=c\"'"
    assert given("job=") == "'job=\"\"'"
    # RE2's own syntax this side cannot read goes to Prometheus as before: no bare value.
    assert given('job=~"a|b",x=~"(?U)a,b=c"') == 'job=~"a|b",x=~"(?U)a,b=c"'
    # The form to give is quoted for a shell, and given only where it reads.
    assert given("job='gapwatch',cluster=x") == \
        """'job='"'"'gapwatch'"'"',cluster="x"'"""
    assert "give" not in given("job=~a,b") and "('a' is not quoted)" in given("job=~a,b")
    # A regex nested 1,000 deep was a RecursionError traceback: no bare value, on to Prometheus.
    nested = 'job=~"' + "(" * 1000 + ")" * 1000 + '"'
    assert given(nested) == nested


def _add(fake: FakeProm, field: str, *series: tuple[dict[str, str], float]) -> None:
    """`series` added to what the stand-in answers for `field`'s query."""
    old = json.loads(fake.replies.get(promql(field), EMPTY).body)["data"]["result"]
    new = json.loads(vector(*series).body)
    new["data"]["result"] = old + new["data"]["result"]
    fake.replies[promql(field)] = Reply(body=json.dumps(new).encode())


def _post_box(fake: FakeProm, instance: str, late: float, failed: float,
              settings: tuple[tuple[str, str], ...] | None, gpus: int = 1, ago_s: float | None = None,
              state: str = "CHAINED", up: float = 1.0, age_s: float = 2.0) -> None:
    """A box of `gpus` GPUs 100 % busy, CHAINED, whose PoSts went late or failed in the
    lookback (the last `ago_s` ago), with the (verdict, setting) its PoSt advice names
    (`gapwatch_proof_advice_info`; None: a gapwatch that does not export it)."""
    box(fake, instance, gpus, state, up=up, age_s=age_s)
    for field, n in (("post_late", late), ("post_failed", failed)):
        _add(fake, field, ({"instance": instance}, n))
    if ago_s is not None:
        _add(fake, "post_trouble_age_s", ({"instance": instance}, ago_s))
    if settings is not None:
        _add(fake, "post_setting", *(({"instance": instance, "verdict": v, "setting": s}, 1)
                                     for v, s in settings))


def test_one_row_of_a_box_ranks_for_its_posts_the_worst_trouble_first_saying_when() -> None:
    """The PoSt counts are the box's: set on each of its GPU rows they ranked every one
    first (two 8-GPU boxes with one late PoSt each filled rows 1-16, a BREAKDOWN box 17th).
    One row of the box ranks for them, its first GPU's, failed before late and more before
    fewer; its HEADLINE says how long ago the last went wrong; the box's other GPUs rank by
    their own state, the box's counts still in their PoSt cell."""
    with fake_prometheus() as fake:
        _post_box(fake, "post-a:9400", 1.0, 0.0, (("late", "[memory] eviction_min_idle"),), gpus=8,
                  ago_s=720.0)
        _post_box(fake, "post-b:9400", 1.0, 0.0, None, gpus=8)
        _post_box(fake, "post-c:9400", 3.0, 0.0, None, gpus=2)
        _post_box(fake, "post-d:9400", 0.0, 1.0, (("failed", "none"),), gpus=2)
        box(fake, "broken:9400", 1, "BREAKDOWN")
        rows = refresh(PromClient(fake.url), FleetOptions()).rows
    order = [(r.instance, r.gpu) for r in rows]
    assert order[:5] == [("post-d:9400", "0"), ("post-c:9400", "0"), ("post-a:9400", "0"),
                         ("post-b:9400", "0"), ("broken:9400", "0")]
    by = {(r.instance, r.gpu): r for r in rows}
    assert cells(by[("post-a:9400", "0")])[4] == "PoSt 1 late 12m ago: [memory] eviction_min_idle"
    assert cells(by[("post-b:9400", "0")])[4] == "PoSt 1 lost or late (the box's report says why)"
    other = by[("post-a:9400", "3")]
    assert cells(other)[4] == "[memory] safety_margin" and cells(other)[10] == "-/1"


def test_a_box_whose_posts_went_wrong_ranks_first_and_its_headline_says_what_to_change() -> None:
    """A box whose WinningPoSts went late (each a block lost) ranked last, its GPU CHAINED and
    100 % busy, SETTING `none`, the PoSt column past 80 columns. It ranks first now, above a
    BREAKDOWN (a lost block is worse than idle GPU time), and its HEADLINE says how many and
    the setting its PoSt advice names; a failed one's advice names none; a gapwatch that
    exports no advice says where it is read."""
    with fake_prometheus() as fake:
        box(fake, "bad:9400", 1, "BREAKDOWN")
        _post_box(fake, "late:9400", 2.02, 0.0, (("late", "none"),
                                                  ("late", "[memory] eviction_min_idle")))
        _post_box(fake, "failed:9400", 0.0, 1.0, (("failed", "none"),))
        _post_box(fake, "old:9400", 1.0, 0.0, None)
        _post_box(fake, "fine:9400", 0.0, 0.0, ())
        rows = refresh(PromClient(fake.url), FleetOptions()).rows
    by = {r.instance: r for r in rows}
    assert [r.instance for r in rows][-2:] == ["bad:9400", "fine:9400"]
    assert {r.instance for r in rows[:3]} == {"late:9400", "failed:9400", "old:9400"}
    assert cells(by["late:9400"])[4] == "PoSt 2 late: [memory] eviction_min_idle"
    assert cells(by["failed:9400"])[4] == "PoSt 1 failed: no cuzk setting"
    assert cells(by["old:9400"])[4] == "PoSt 1 lost or late (the box's report says why)"
    assert cells(by["bad:9400"])[4] == "[memory] safety_margin"
    assert by["late:9400"].as_json()["post_setting"] == "[memory] eviction_min_idle"
    assert by["late:9400"].as_json()["headline"] == "PoSt 2 late: [memory] eviction_min_idle"


def test_a_post_failed_now_is_headlined_with_the_advice_for_it_not_an_old_late_ones() -> None:
    """The box exports the advice of every PoSt its session holds (a late one of yesterday
    among them), and the query dropped the verdict, preferring any setting to `none`: a PoSt
    failed now, which no setting frees, was headlined with the old late one's setting. The
    setting is the advice's for the verdicts the lookback counted: failed, then lost and
    late; a late one's setting beside a failure none frees where both were counted."""
    old_late = ("late", "[memory] eviction_min_idle")
    with fake_prometheus() as fake:
        _post_box(fake, "failed:9400", 0.0, 1.0, (("failed", "none"), old_late))
        _post_box(fake, "both:9400", 1.0, 1.0, (("failed", "none"), old_late))
        _post_box(fake, "lost:9400", 1.0, 0.0, (("lost", "none"), ("at_risk", "[x] y")))
        _post_box(fake, "unsaid:9400", 0.0, 1.0, (old_late,))
        rows = {r.instance: r for r in refresh(PromClient(fake.url), FleetOptions()).rows}
    assert cells(rows["failed:9400"])[4] == "PoSt 1 failed: no cuzk setting"
    said = post_line(list(rows.values()), "failed:9400", "1h")
    assert said is not None and "eviction_min_idle" not in said
    assert cells(rows["both:9400"])[4] == "PoSt 1 late, 1 failed: [memory] eviction_min_idle"
    assert cells(rows["lost:9400"])[4] == "PoSt 1 lost or late: no cuzk setting"
    assert cells(rows["unsaid:9400"])[4] == "PoSt 1 failed (the box's report says why)"
    assert rows["failed:9400"].as_json()["post_advice"] == {
        "failed": ["none"], "late": ["[memory] eviction_min_idle"]}


def test_a_post_lost_now_beside_an_old_late_one_is_headlined_with_no_setting() -> None:
    """The late count takes a PoSt lost in a prover restart with the late ones, so a PoSt
    lost now beside the advice of one late hours ago (the box exports every PoSt its session
    holds) headlined `PoSt 1 late: [memory] eviction_min_idle`, the old one's setting. Where
    the lost and the late name different settings the lookback cannot tell which it counted:
    no setting is claimed. Where they name the same, it is claimed, the count said as lost or
    late."""
    eviction = "[memory] eviction_min_idle"
    with fake_prometheus() as fake:
        _post_box(fake, "lostnow:9400", 1.0, 0.0, (("lost", "none"), ("late", eviction)))
        _post_box(fake, "withfail:9400", 1.0, 1.0, (("failed", "none"), ("lost", "none"),
                                                     ("late", eviction)))
        _post_box(fake, "agree:9400", 2.0, 0.0, (("lost", eviction), ("late", eviction)))
        rows = {r.instance: r for r in refresh(PromClient(fake.url), FleetOptions()).rows}
    assert cells(rows["lostnow:9400"])[4] == "PoSt 1 lost or late (the box's report says why)"
    assert rows["lostnow:9400"].as_json()["post_setting"] is None
    said = post_line(list(rows.values()), "lostnow:9400", "1h")
    assert said is not None and "eviction_min_idle" not in said
    assert "names different settings for its PoSts lost and late" in said
    assert cells(rows["withfail:9400"])[4] == ("PoSt 1 lost or late, 1 failed (the box's report "
                                               "says why)")
    assert cells(rows["agree:9400"])[4] == f"PoSt 2 lost or late: {eviction}"


def test_a_box_detail_says_its_posts_gone_wrong_and_the_setting_its_advice_names() -> None:
    """The detail listed only the box's idle minutes: nothing of the PoSts it lost."""
    with fake_prometheus() as fake:
        _post_box(fake, "late:9400", 2.0, 1.0, (("late", "[memory] eviction_min_idle"),))
        fake.replies[promql("post_last_latency_s")] = vector(({"instance": "late:9400"}, 35.0))
        box(fake, "fine:9400", 1)
        rows = refresh(PromClient(fake.url), FleetOptions()).rows
    said = post_line(rows, "late:9400", "1h")
    assert said is not None and said.startswith(
        "PoSt in the last 1h: 2 went late or were lost in a restart, 1 failed")
    assert "the last WinningPoSt took 35.0 s" in said
    assert "its PoSt advice: change [memory] eviction_min_idle" in said
    assert post_line(rows, "fine:9400", "1h") is None


def test_a_box_with_nothing_else_to_say_has_its_health_flags_in_words_in_its_headline() -> None:
    """HLTH is past 80 columns: a CHAINED box whose prover restarted said nothing there."""
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1)
        fake.replies[promql("verdict")] = vector(
            ({"job": "gapwatch", "instance": "b:9400", "gpu": "0", "state": "CHAINED",
              "cause": "none", "cause_words": "none", "setting": "none"}, 1))
        fake.replies[promql("restarts")] = vector(({"instance": "b:9400"}, 2))
        (row,) = refresh(PromClient(fake.url), FleetOptions()).rows
    assert cells(row)[4] == "prover restarts (HLTH)"


def test_a_stopped_box_reads_down_first_its_last_state_as_last_known_never_ok_health() -> None:
    """A box whose gapwatch was stopped with a gap open read `~IDLE` (its last export the end
    of data's retraction of that gap), and HLTH `D` for 5 minutes, then `ok`, of a dead box.
    Its STATE says DOWN, its HEADLINE the last known state as such and why, and its health
    is marked stale (`~` and the flags it last had), never `ok`, never `D`."""
    with fake_prometheus() as fake:
        box(fake, "stopped:9400", 1, "IDLE", up=0.0, age_s=77.0)
        box(fake, "gone:9400", 1, "GAPS", up=0.0, age_s=700.0)
        box(fake, "live:9400", 2, "CHAINED")
        fake.replies[promql("exported")] = vector(({"instance": "live:9400", "gpu": "0"}, 5))
        fake.replies[promql("read_share_5m")] = vector(
            ({"instance": "stopped:9400", "gpu": "0"}, 0.4))
        fake.replies[promql("restarts")] = vector(({"instance": "stopped:9400"}, 0.0),
                                                  ({"instance": "gone:9400"}, 1.0))
        rows = {(r.instance, r.gpu): r for r in
                refresh(PromClient(fake.url), FleetOptions()).rows}
    stopped, gone = rows[("stopped:9400", "0")], rows[("gone:9400", "0")]
    lost_gpu = rows[("live:9400", "1")]
    assert cells(stopped)[2:5] == ("DOWN", "~50%", "last known IDLE: connection refused")
    assert stopped.health() == "~" and cells(stopped)[11] == "~"
    assert gone.health() == "~R" and cells(gone)[4].startswith("last known GAPS: connection refused")
    assert cells(lost_gpu)[2] == "STALE"
    assert cells(lost_gpu)[4] == "last known CHAINED: its box no longer exports this GPU"
    assert stopped.as_json()["state"] == "IDLE" and stopped.as_json()["health"] == "~"


def test_a_down_box_ranked_for_its_posts_says_them_and_its_last_known_figures_are_marked() -> None:
    """A box DOWN 25 minutes with one PoSt late in the lookback ranked first, above a live box
    losing PoSts now, its HEADLINE `last known GAPS: connection refused` saying nothing of the
    PoSt it ranked for, its BUSY `50%` 25 minutes old, unmarked. It ranks below the box whose
    PoSt failed, says its PoSt and when, then its last known state; its BUSY and CHAIN are
    marked last known (`~`), as its HLTH is; a row not known fresh, `?`."""
    with fake_prometheus() as fake:
        _post_box(fake, "dead:9400", 1.0, 0.0, (("late", "[memory] eviction_min_idle"),),
                  ago_s=1800.0, state="GAPS", up=0.0, age_s=1500.0)
        _post_box(fake, "post-a:9400", 2.0, 1.0, (("failed", "none"),), gpus=2)
        box(fake, "broken:9400", 1, "BREAKDOWN")
        fake.replies[promql("chaining_ratio")] = vector(
            ({"instance": "dead:9400", "gpu": "0"}, 0.25))
        rows = refresh(PromClient(fake.url), FleetOptions()).rows
    assert [(r.instance, r.gpu) for r in rows][:3] == [
        ("post-a:9400", "0"), ("dead:9400", "0"), ("broken:9400", "0")]
    dead = cells(rows[1])
    assert dead[2:5] == ("DOWN", "~50%", "PoSt 1 late 30m ago: [memory] eviction_min_idle; "
                                         "last known GAPS: connection refused")
    assert dead[9] == "~25%" and dead[11] == "~"
    assert cells(FleetRow("b", "0", stale=None, busy_ratio=0.5))[3] == "?50%"
    assert cells(FleetRow("b", "0", stale=False, busy_ratio=0.5))[3] == "50%"


#: The jobs query as a refresh asks it (the default lookback; it names no selector).
JOBS_ASKED = render(JOBS_WITH_ROWS, "", "1h")


def test_an_empty_table_names_the_selector_and_the_job_that_has_gapwatchs_rows(
        capsys: pytest.CaptureFixture[str]) -> None:
    # The scrape job named "gpu-boxes": `fleet --once` printed "(no gapwatch target in
    # Prometheus)", exit 0, naming neither the selector it used nor `--selector`.
    with fake_prometheus() as fake:
        fake.replies[JOBS_ASKED] = vector(({"job": "gpu-boxes"}, 1.0))
        assert main(["fleet", "--prometheus", fake.url, "--once"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [
        "(no gapwatch target in Prometheus matches --selector 'job=\"gapwatch\"')",
        "(gapwatch's metrics are scraped under another job name: give "
        "--selector 'job=\"gpu-boxes\"')"]


def test_an_empty_table_names_five_jobs_and_how_many_more_whatever_prometheus_answers(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The query asks for the top 5 jobs (`topk`); an answer of 20,000 series (a hostile
    Prometheus, a proxy that drops the `topk`) printed one 5.4 MB line naming every one. The
    jobs with the most boxes are named, the rest counted."""
    with fake_prometheus() as fake:
        fake.replies[JOBS_ASKED] = vector(
            *(({"job": f"j{i:02d}"}, float(i % 7)) for i in range(20)))
        assert main(["fleet", "--prometheus", fake.url, "--once"]) == 0
    assert capsys.readouterr().out.splitlines()[2] == (
        "(gapwatch's metrics are scraped under another job name: give "
        "--selector 'job=\"j06\"' or --selector 'job=\"j13\"' or --selector 'job=\"j05\"' or "
        "--selector 'job=\"j12\"' or --selector 'job=\"j19\"', and 15 more)")


def test_an_empty_table_with_no_job_of_gapwatchs_rows_asks_whether_it_is_scraped(
        capsys: pytest.CaptureFixture[str]) -> None:
    with fake_prometheus() as fake:
        assert main(["fleet", "--prometheus", fake.url, "--once", "--selector",
                     'job="x"']) == 0
        assert JOBS_ASKED in fake.asked
    assert capsys.readouterr().out.splitlines()[1:] == [
        "(no gapwatch target in Prometheus matches --selector 'job=\"x\"')",
        "(no scrape job has gapwatch's metrics: is gapwatch's /metrics scraped? docs/fleet.md)"]


def test_a_table_with_rows_never_asks_which_jobs_have_them() -> None:
    with fake_prometheus() as fake:
        box(fake, "a:9400", 1, "GAPS")
        refresh(PromClient(fake.url), FleetOptions())
        assert JOBS_ASKED not in fake.asked


def test_a_box_detail_minute_of_thousands_of_causes_is_read_at_once_and_said_in_a_bounded_line(
        ) -> None:
    """8,000 verdict series of one minute, each a cause of its own (a 1 MB answer): each was
    looked for in the minute's list before it was added, 45 s on the detail's thread for
    20,000 (quadratic; ~0.2 s for these 8,000 now, not asserted: a timing is no test), and the
    minute's line held all of them, 150,000 characters. The first causes are said, then how many
    more."""
    causes = [({"gpu": "0", "cause_words": f"cause {i}", "setting": "none"}, [(600.0, 1.0)])
              for i in range(8000)]
    with fake_prometheus() as fake:
        fake.range_replies["sum by (gpu, kind)"] = matrix(
            ({"gpu": "0", "kind": "pcie_starved"}, [(600.0, 12.5)]))
        fake.range_replies["last_over_time(gapwatch_gpu_verdict_info"] = matrix(
            *causes, *causes)  # each twice: said once
        minutes = box_detail(PromClient(fake.url, timeout_s=30), FleetOptions(budget_s=30),
                             "b:9400", now_s=700.0)
    line = minutes[0].line()
    assert line.endswith("cause 0 | cause 1 | cause 2 | cause 3 | cause 4 | cause 5 | "
                         "cause 6 | cause 7 | and 7992 more causes")


def test_a_box_detail_of_300000_minutes_shows_the_newest_and_counts_the_rest() -> None:
    """A range answer of 300,000 points, each at a time of its own within the 30 minutes
    asked, was 300,000 minutes, a detail of 19.5 MB of text put into one widget (50,000 here:
    the bound is the same, at a sixth of the suite's time). The newest
    `MAX_DETAIL_MINUTES` are shown, then how many more."""
    from gapwatch.fleet.detail import MAX_DETAIL_MINUTES, detail_lines

    points = [(100.0 + i * 1e-3, 2.0) for i in range(50_000)]
    with fake_prometheus() as fake:
        fake.range_replies["sum by (gpu, kind)"] = matrix(
            ({"gpu": "0", "kind": "pcie_starved"}, points))
        minutes = box_detail(PromClient(fake.url, timeout_s=30), FleetOptions(budget_s=30),
                             "b:9400", now_s=700.0)
    lines = detail_lines(minutes)
    assert len(lines) == MAX_DETAIL_MINUTES + 1
    assert lines[-1] == f"(and {50_000 - MAX_DETAIL_MINUTES} more minutes, older: not shown)"
    assert detail_lines([]) == ["no gap closed in the last 30 minutes"]
