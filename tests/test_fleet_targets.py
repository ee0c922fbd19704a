"""Why a stale box is stale, in Prometheus's words (its targets API, `/api/v1/targets`): a dead
box says "scrape failed: connection refused" in `--once` text and JSON; a box that is up says
nothing; the targets API failing, absent, hostile or huge leaves the rows and is named in
`errors`; every word from it is made visible and cut. (The screen and the detail:
tests/test_ui_fleet.py.)"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from fleet_fakes import EMPTY, FakeProm, Reply, box, fake_prometheus, promql, target

from gapwatch.cli import main
from gapwatch.fleet import client as fleet_client
from gapwatch.fleet.client import MAX_TARGET_TEXT_CHARS, PromClient
from gapwatch.fleet.detail import scrape_line
from gapwatch.fleet.queries import QUERIES
from gapwatch.fleet.rows import FleetOptions, FleetRow, Refresh, cells, refresh
from gapwatch.fleet.targets import NOT_A_TARGET, parse_selector

#: An OSC 52 clipboard write, a one-byte CSI, a right-to-left override.
_HOSTILE = "\x1b]52;c;ZXZpbA==\x07\x9b2J\u202e"
_RAW = ("\x1b", "\x9b", "\u202e", "\x07")


def _cause(row: FleetRow) -> str:
    return cells(row)[-1]


def _dead_and_up(fake: FakeProm) -> None:
    box(fake, "up:9400", 1, "CHAINED")
    box(fake, "dead:9400", 2, "BREAKDOWN", up=0.0, age_s=400.0)


def _answered_under(fake: FakeProm, selector: str) -> FleetOptions:
    """Options with `selector`, its queries answered as the default selector's are."""
    opts = FleetOptions(selector=selector)
    for q in QUERIES:
        if promql(q.field) in fake.replies:
            fake.replies[promql(q.field, opts)] = fake.replies[promql(q.field)]
    return opts


def _refresh(fake: FakeProm, opts: FleetOptions | None = None) -> tuple[Refresh,
                                                                        dict[str, FleetRow]]:
    result = refresh(PromClient(fake.url), opts or FleetOptions())
    return result, {r.instance: r for r in result.rows}


def test_a_dead_box_says_prometheus_reason_and_an_up_box_says_none() -> None:
    with fake_prometheus() as fake:
        _dead_and_up(fake)
        result, rows = _refresh(fake)
    dead, up = rows["dead:9400"], rows["up:9400"]
    assert result.errors == {}
    # Go's `Get "URL": dial tcp ADDR: connect: ` is what the row says already: cut away.
    assert dead.down_why == "scrape failed: connection refused"
    assert dead.down_scrape_url == "http://dead:9400/metrics"
    assert dead.down_last_scrape_t_wall_s == datetime(
        2026, 12, 4, 18, 27, 44, 617259, tzinfo=UTC).timestamp()
    assert all(r.down_why == "scrape failed: connection refused"
               for r in result.rows if r.instance == "dead:9400")  # each of its GPUs
    assert _cause(dead) == "scrape failed: connection refused"
    assert (up.down_why, up.down_scrape_url, up.down_last_scrape_t_wall_s) == (None, None, None)
    assert _cause(up) == "a/b/c copied from pageable memory"


def test_a_dead_box_says_its_reason_in_once_text_and_json(
        capsys: pytest.CaptureFixture[str]) -> None:
    with fake_prometheus() as fake:
        _dead_and_up(fake)
        assert main(["fleet", "--prometheus", fake.url, "--once"]) == 0
        text = capsys.readouterr().out.splitlines()
        assert main(["fleet", "--prometheus", fake.url, "--once", "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
    assert text[1].startswith("dead:9400") and " DOWN " in text[1]
    assert "last known BREAKDOWN: connection refused" in text[1]
    assert text[1].endswith("scrape failed: connection refused")
    assert "scrape failed" not in text[3]  # up:9400
    by_box = {r["instance"]: r for r in doc["rows"]}
    assert by_box["dead:9400"]["down_why"] == "scrape failed: connection refused"
    assert by_box["dead:9400"]["down_scrape_url"] == "http://dead:9400/metrics"
    assert by_box["up:9400"]["down_why"] is None and doc["errors"] == {}


@pytest.mark.parametrize(("health", "error", "why"), [
    ("down", 'Get "http://b:9400/metrics": context deadline exceeded',
     "scrape failed: context deadline exceeded"),
    ("down", "server returned HTTP status 500 Internal Server Error",
     "scrape failed: server returned HTTP status 500 Internal Server Error"),
    ("down", 'Get "http://b:9400/metrics": dial tcp: lookup b on 127.0.0.53:53: no such host',
     "scrape failed: lookup b on 127.0.0.53:53: no such host"),
    ("down", 'Get "http://b:9400/metrics": read tcp 127.0.0.1:38000->127.0.0.1:51895: read: '
     "connection reset by peer", "scrape failed: connection reset by peer"),
    ("down", "", "scrape failed (no error given)"),
    ("unknown", "", "not scraped yet"),
])
def test_each_of_prometheus_reasons_is_said_in_few_words(health: str, error: str,
                                                         why: str) -> None:
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1, up=0.0)
        fake.targets = [target("b:9400", health, error)]
        _result, rows = _refresh(fake)
    assert rows["b:9400"].down_why == why


def test_a_box_no_longer_a_target_says_so() -> None:
    with fake_prometheus() as fake:
        box(fake, "gone:9400", 1)
        fake.replies[promql("up")] = EMPTY
        fake.targets = []
        _result, rows = _refresh(fake)
    gone = rows["gone:9400"]
    assert gone.stale and gone.down_why == NOT_A_TARGET and gone.down_scrape_url is None


def test_a_stale_box_whose_target_is_up_says_no_reason() -> None:
    """Stale for its age alone (a scrape interval longer than --stale-after), or a GPU the box
    no longer exports: Prometheus scrapes it, and no scrape failure is claimed."""
    with fake_prometheus() as fake:
        box(fake, "slow:9400", 1, age_s=400.0)
        _result, rows = _refresh(fake)
    assert rows["slow:9400"].stale and rows["slow:9400"].down_why is None


def test_no_stale_box_no_question_to_the_targets_api() -> None:
    with fake_prometheus() as fake:
        box(fake, "up:9400", 2)
        _refresh(fake)
    assert not [q for q in fake.asked if "targets" in q]


def test_the_targets_api_is_asked_once_a_refresh_with_get() -> None:
    with fake_prometheus() as fake:
        _dead_and_up(fake)
        box(fake, "dead2:9400", 1, up=0.0)
        _refresh(fake)
    assert [q for q in fake.asked if "targets" in q] == ["GET /api/v1/targets?state=active"]


def test_the_selector_picks_the_targets_by_the_labels_it_names() -> None:
    """Another job scraping the same address (a node exporter relabelled to the box's name)
    is not gapwatch's target: its error is not the box's reason."""
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1, up=0.0)
        fake.targets.insert(0, target("b:9400", "down", "node exporter down", job="node"))
        _result, rows = _refresh(fake)
        assert rows["b:9400"].down_why == "scrape failed: connection refused"
        result, rows = _refresh(fake, _answered_under(fake, 'job=~"no.e"'))
    assert rows["b:9400"].down_why == "scrape failed: node exporter down"
    assert "down_why" not in result.errors


def test_selectors_are_read_as_promql_matchers() -> None:
    sel = parse_selector(""" job="gap\\"watch", cluster=~'prov.*' ,env!=`dev`, dc!~"x|y", """)
    assert [(m.label, m.op, m.value) for m in sel.matchers] == [
        ("job", "=", 'gap"watch'), ("cluster", "=~", "prov.*"), ("env", "!=", "dev"),
        ("dc", "!~", "x|y")]
    assert sel.label_names() == ("instance", "job", "cluster", "env", "dc")
    assert sel.picks({"job": 'gap"watch', "cluster": "proving", "dc": "z"})
    assert not sel.picks({"job": 'gap"watch', "cluster": "aprov"})  # anchored, as PromQL
    assert not sel.picks({"job": 'gap"watch', "cluster": "proving", "env": "dev"})


def test_a_selector_not_read_as_matchers_is_said_and_gives_no_reason() -> None:
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1, up=0.0)
        result, rows = _refresh(fake, _answered_under(fake, '"job"="gapwatch"'))
    assert "--selector not read as label matchers" in result.errors["down_why"]
    assert rows["b:9400"].down_why is None and not result.rows_failed
    assert not [q for q in fake.asked if "targets" in q]


@pytest.mark.parametrize(("reply", "said"), [
    # An older Prometheus or a proxy that blocks the path.
    (Reply(404, b"404 page not found\n"), "HTTP 404"),
    (Reply(403, b"<html>forbidden</html>"), "HTTP 403"),
    (Reply(503, json.dumps({"status": "error", "errorType": "unavailable",
                            "error": "too many requests"}).encode()),
     "HTTP 503: too many requests"),
    (Reply(body=b"<html>login</html>"), "not Prometheus JSON"),
    (Reply(body=b"[" * 200_000), "not Prometheus JSON"),
    (Reply(body=b'{"status": "success", "data": {"activeTargets": {"a": 1}}}'),
     "not Prometheus JSON"),
    (Reply(body=json.dumps({"status": "success", "data": {"activeTargets": [
        {"labels": {"instance": 5}, "health": "down"}]}}).encode()), "not Prometheus JSON"),
    (Reply(body=json.dumps({"status": "success", "data": {"activeTargets": [
        {"labels": {"instance": "b:9400"}, "health": ["down"]}]}}).encode()),
     "not Prometheus JSON"),
    (Reply(body=b'{"status": "error", "errorType": "internal", "error": "boom"}'),
     "Prometheus said internal: boom"),
])
def test_the_targets_api_failing_or_absent_leaves_the_rows_and_says_so(reply: Reply,
                                                                       said: str) -> None:
    with fake_prometheus() as fake:
        _dead_and_up(fake)
        fake.targets_reply = reply
        result, rows = _refresh(fake)
    assert said in result.errors["down_why"] and list(result.errors) == ["down_why"]
    assert not result.rows_failed and len(result.rows) == 3
    assert rows["dead:9400"].stale and rows["dead:9400"].down_why is None
    assert _cause(rows["dead:9400"]) == "a/b/c copied from pageable memory"


def test_the_targets_api_absent_is_named_on_stderr_and_once_still_exits_0(
        capsys: pytest.CaptureFixture[str]) -> None:
    with fake_prometheus() as fake:
        _dead_and_up(fake)
        fake.targets_reply = Reply(404, b"404 page not found\n")
        assert main(["fleet", "--prometheus", fake.url, "--once"]) == 0
    out = capsys.readouterr()
    assert "query down_why: HTTP 404" in out.err and "dead:9400" in out.out


def test_a_huge_targets_answer_is_refused_past_the_cap_and_leaves_the_rows() -> None:
    with fake_prometheus() as fake:
        _dead_and_up(fake)
        fake.targets = [target(f"t{i}:9400", "down", "x" * 1000) for i in range(2000)]
        result = refresh(PromClient(fake.url, max_bytes=1024 * 1024), FleetOptions())
    assert "larger than 1 MiB" in result.errors["down_why"] and len(result.rows) == 3


def test_more_targets_than_an_answer_may_hold_are_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fleet_client, "MAX_SERIES", 3)
    with fake_prometheus() as fake:
        _dead_and_up(fake)
        fake.targets += [target(f"t{i}:9400") for i in range(2)]
        result, _rows = _refresh(fake)
    assert result.errors["down_why"] == "answer has 4 targets (at most 3)"


def test_the_targets_question_shares_the_refresh_budget() -> None:
    """Asked last, within what the queries left of the one budget: a targets API that does
    not answer costs the reasons, and the rows are kept."""
    with fake_prometheus() as fake:
        _dead_and_up(fake)
        fake.targets_reply = Reply(body=b"{}", delay_s=1.0)
        result, rows = _refresh(fake, FleetOptions(budget_s=0.5))
    assert "no answer within" in result.errors["down_why"]
    assert rows["dead:9400"].down_why is None and not result.rows_failed


def test_hostile_reason_text_is_made_visible_and_cut(capsys: pytest.CaptureFixture[str]) -> None:
    """Every word of a target is Prometheus's: an escape, a C1 CSI, a bidi override in its
    error, health and URL are written out; a megabyte-long error is cut (said with "…"); a
    lastScrape that is not a time is unknown; a target of 5,000 labels is read for its own."""
    with fake_prometheus() as fake:
        box(fake, "b:9400", 1, up=0.0)
        evil = target("b:9400", "down", _HOSTILE + "e" * 1_000_000, last_scrape=_HOSTILE)
        evil["scrapeUrl"] = f"http://b/{_HOSTILE}"
        evil["labels"].update({f"l{i}": "v" * 100 for i in range(5000)})
        fake.targets = [evil, target("c:9400", _HOSTILE)]
        box(fake, "c:9400", 1, up=0.0)
        _result, rows = _refresh(fake)
        assert main(["fleet", "--prometheus", fake.url, "--once"]) == 0
        text = capsys.readouterr().out
        assert main(["fleet", "--prometheus", fake.url, "--once", "--json"]) == 0
        doc = capsys.readouterr().out
    b, c = rows["b:9400"], rows["c:9400"]
    assert b.down_why is not None and b.down_why.startswith(f"scrape failed: {_HOSTILE}eee")
    assert len(b.down_why) < len("scrape failed: ") + MAX_TARGET_TEXT_CHARS + 1
    assert b.down_why.endswith("e…") and b.down_last_scrape_t_wall_s is None
    assert c.down_why == f"target health {_HOSTILE}"
    for shown in (_cause(b), _cause(c), text, doc, scrape_line([b], "b:9400") or ""):
        assert not any(ch in shown for ch in _RAW), shown[:200]
    assert _cause(b).startswith("scrape failed: \\x1b]52;c;ZXZpbA==\\x07\\x9b2J\\u202eeee")
    assert json.loads(doc)["rows"][0]["down_why"].startswith(f"scrape failed: {_HOSTILE}")


def test_a_box_scraped_by_two_jobs_one_failing_is_fresh_and_says_no_reason() -> None:
    """A canary job's 404 on a box the main job scrapes every 5 s: the box's `up` was whichever
    series Prometheus listed last, so the box read stale, with the canary's error as its reason.
    Scraped by one target is scraped."""
    with fake_prometheus() as fake:
        box(fake, "a:9400", 1, "CHAINED")
        canary = {"job": "gapwatch-canary", "instance": "a:9400"}
        up = json.loads(fake.replies[promql("up")].body)
        up["data"]["result"].append({"metric": canary, "value": [0, "0"]})  # listed last
        fake.replies[promql("up")] = Reply(body=json.dumps(up).encode())
        fake.targets.append(target("a:9400", "down", "server returned HTTP status 404 Not Found",
                                   job="gapwatch-canary"))
        _result, rows = _refresh(fake)
        assert not rows["a:9400"].stale and rows["a:9400"].up == 1.0
        # Stale by its age: still no reason from a canary while its main job scrapes it.
        fake.replies[promql("age_s")] = Reply(body=json.dumps(
            {"status": "success", "data": {"resultType": "vector", "result": [
                {"metric": {"instance": "a:9400"}, "value": [0, "400"]}]}}).encode())
        _result, rows = _refresh(fake)
    assert rows["a:9400"].stale and rows["a:9400"].down_why is None


def test_a_selector_read_otherwise_here_gives_no_reason_rather_than_not_a_target() -> None:
    """A selector naming a label the series carry but the targets do not (added by
    `metric_relabel_configs`) picked no target here, and every stale box read "not a target
    of Prometheus now" while Prometheus scraped it. A box `up` names as a target gets no
    reason, and the mismatch is said."""
    with fake_prometheus() as fake:
        _dead_and_up(fake)
        opts = _answered_under(fake, 'job="gapwatch",cluster="ams"')
        result, rows = _refresh(fake, opts)
    assert rows["dead:9400"].stale and rows["dead:9400"].down_why is None
    assert "picks no target of 1 box(es) Prometheus scrapes" in result.errors["down_why"]


@pytest.mark.parametrize("selector", ['job=~"[[:alpha:]]+"', r'job=~"\\p{L}+"'])
def test_a_regex_python_reads_otherwise_than_prometheus_is_refused_not_guessed(
        selector: str) -> None:
    """RE2 reads `[[:alpha:]]` as a POSIX class, Python's re as a set and a `]` (a warning,
    then a different match): such a selector is refused for the reasons, said in `errors`."""
    with pytest.raises(ValueError, match="not a regex"):
        parse_selector(selector)


def test_a_selectors_go_escapes_are_read_as_prometheus_reads_them() -> None:
    r"""PromQL strings take Go's escapes: `\x67apwatch` is "gapwatch" there, and was
    "x67apwatch" here (no target matched, no reason said)."""
    selector = parse_selector(r'job="\x67apwatch",a="\u0041\101\t"')
    assert selector.picks({"job": "gapwatch", "a": "AA\t"})


def test_the_targets_answer_is_kept_a_while_not_asked_at_every_refresh(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A box stale for the whole lookback made every refresh (5 s) download every active
    target, up to 16 MiB: one answer now serves the refreshes of TARGETS_FOR_S."""
    with fake_prometheus() as fake:
        _dead_and_up(fake)
        client = PromClient(fake.url)
        for _ in range(3):
            assert refresh(client, FleetOptions()).rows[0].down_why is not None
        asked = [q for q in fake.asked if q.startswith("GET ") and "/targets" in q]
        monkeypatch.setattr(fleet_client, "TARGETS_FOR_S", 0.0)
        refresh(client, FleetOptions())
        asked_after = [q for q in fake.asked if q.startswith("GET ") and "/targets" in q]
    assert len(asked) == 1 and len(asked_after) == 2


def test_a_selector_regex_that_backtracks_without_end_on_a_targets_label_holds_no_refresh(
        ) -> None:
    """Prometheus matches `--selector`'s regexes with RE2, in linear time; Python's `re`
    backtracks, and `instance=~"(\\w+-?)+:9400"` took 3 s over one 38-character name (each
    character doubling it) on the refresh thread, which neither the budget nor a stop could
    cut. A regex runs under a time limit, on the targets the plain matchers leave in: a target
    it cannot decide is picked by neither answer and said; the others get their reasons."""
    hostile_box = "a" * 200 + "!"
    with fake_prometheus() as fake:
        _dead_and_up(fake)
        box(fake, hostile_box, 1, up=0.0)
        opts = _answered_under(fake, 'job="gapwatch",instance=~"(a|aa)+|dead:9400"')
        fake.targets = [*fake.targets, target(hostile_box, "down", "connection refused"),
                        target("a" * 200 + "?", "down", "", job="other")]
        result, rows = _refresh(fake, opts)
    assert rows["dead:9400"].down_why == "scrape failed: connection refused"
    assert rows[hostile_box].stale and rows[hostile_box].down_why is None  # not decided
    assert "could not tell in time" in result.errors["down_why"]
    assert "of 1 box(es)" in result.errors["down_why"]


def test_plain_matchers_decide_before_a_regex_runs() -> None:
    """A target another job scrapes is left out by `job="gapwatch"` before the regex is
    asked of its labels at all (the regex would not have decided it in time)."""
    sel = parse_selector('instance=~"(a|aa)+",job="gapwatch"')
    assert not sel.picks({"job": "other", "instance": "a" * 4000 + "!"}, deadline=0.0)
