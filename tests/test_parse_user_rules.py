"""User rules from [[logs.rules]]: another prover's lines become events without code changes."""

from __future__ import annotations

import pytest

from gapwatch.config import ConfigError, build_config
from gapwatch.logs.parse import LogParser, user_rules
from gapwatch.logs.parse.user_rules import LINE_BUDGET_S, RULE_TIMEOUT_S

OTHER_PROVER = {
    "name": "myprover",
    "regex": r"^\[(?P<timestamp>[^\]]+)\] w(?P<worker>\d+) p(?P<partition>\d+) (?P<phase>\w+) "
             r"took (?P<took_ms>\d+)ms(?: on gpu (?P<gpu>\d+))?",
}


def parser_with(*rules: dict[str, str], cuzk: bool = True) -> LogParser:
    return LogParser(build_config({"logs": {"rules": list(rules), "cuzk": cuzk}}).logs)


def test_named_groups_fill_the_event() -> None:
    p = parser_with(OTHER_PROVER)
    (e,) = p.parse_line("[2026-11-30T09:06:26.5Z] w1 p7 msm took 412ms on gpu 2", "x", 5, 9.0)
    assert (e.kind, e.name, e.worker, e.partition, e.gpu) == ("user:myprover", "msm", 1, 7, 2)
    assert e.fields == {"took_ms": 412}
    assert e.time_source == "line" and e.t_wall_s == pytest.approx(1796029586.5)
    assert p.counters["kind:user:myprover"] == 1


def test_strptime_format_and_event_name_and_warning() -> None:
    p = parser_with({"name": "stall", "regex": r"^(?P<timestamp>\d+/\d+/\d+ \d+:\d+:\d+) "
                     r"host copy fell back to pageable", "timestamp_format": "%Y/%m/%d %H:%M:%S",
                     "event": "pageable_fallback", "warning": "unpinned"})
    (e,) = p.parse_line("2026/11/30 09:06:26 host copy fell back to pageable", "x", 5, 9.0)
    assert (e.name, e.warning, e.time_source) == ("pageable_fallback", "unpinned", "line")


def test_unparseable_timestamp_falls_back_and_is_counted() -> None:
    p = parser_with(OTHER_PROVER)
    (e,) = p.parse_line("[yesterday] w1 p7 msm took 412ms", "x", 5, 9.0)
    assert (e.kind, e.time_source, e.t_wall_s) == ("user:myprover", "arrival", 9.0)
    assert p.counters["bad_timestamp"] == 1


def test_unix_millisecond_timestamps_are_understood() -> None:
    p = parser_with({"name": "ms", "regex": r"^(?P<timestamp>\d{13}) (?P<phase>\w+)"})
    (e,) = p.parse_line("1796029586500 ntt", "x", 5, 9.0)
    assert e.t_wall_s == pytest.approx(1796029586.5)


def test_a_non_integer_worker_stays_visible_as_a_field() -> None:
    p = parser_with({"name": "r", "regex": r"worker=(?P<worker>\S+) (?P<phase>\w+)"})
    (e,) = p.parse_line("worker=gpu-a ntt", "x", 5, 9.0)
    assert e.worker is None and e.fields["worker"] == "gpu-a"


def test_built_in_rules_win_and_user_rules_see_what_they_leave() -> None:
    p = parser_with({"name": "any", "regex": r"(?P<phase>\w+)"})
    (t,) = p.parse_line("TIMELINE,1,GPU_START,j,worker=0", "x", 5, 9.0)
    assert t.kind == "timeline"
    (u,) = p.parse_line("something else", "x", 5, 9.0)
    assert (u.kind, u.name) == ("user:any", "something")


def test_cuzk_false_leaves_everything_to_the_user_rules() -> None:
    p = parser_with({"name": "tl", "regex": r"^TIMELINE,(?P<offset>\d+),(?P<phase>\w+)"}, cuzk=False)
    (e,) = p.parse_line("TIMELINE,1,GPU_START,j,worker=0", "x", 5, 9.0)
    assert (e.kind, e.name, e.fields) == ("user:tl", "GPU_START", {"offset": 1})
    (n,) = p.parse_line("2026-11-30T09:06:26.553439Z  INFO a: b", "x", 5, 9.0)
    assert n.kind == "unparsed"


def test_first_matching_rule_wins() -> None:
    p = parser_with({"name": "a", "regex": "x"}, {"name": "b", "regex": "x"})
    (e,) = p.parse_line("x", "s", 1, 1.0)
    assert e.kind == "user:a"


def test_a_rule_that_cannot_compile_is_a_config_error_naming_the_rule() -> None:
    with pytest.raises(ConfigError) as info:
        build_config({"logs": {"rules": [OTHER_PROVER, {"name": "broken-one", "regex": "(?P<x"}]}})
    message = str(info.value)
    assert "broken-one" in message and "logs.rules.1.regex" in message
    assert "does not compile" in message


#: A rule with nested repeats, as a user may write one: a line of `a`s that ends otherwise
#: takes it time exponential in the line's length (Python's `re` took minutes on 40 of them).
BACKTRACKS = {"name": "runaway", "regex": r"^(a|aa)+$"}


def test_a_rule_that_backtracks_without_end_gives_up_the_line_and_the_next_rule_still_reads_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The line's budget for all rules (4 rule timeouts, of wall time) is not what this pins: on
    # a loaded box the thread was off the CPU for longer than what the runaway rule left of
    # it, and the next rule never read the line (the suite failed once at load ~10).
    monkeypatch.setattr(user_rules, "LINE_BUDGET_S", 60.0)
    p = parser_with(BACKTRACKS, {"name": "tail", "regex": r"(?P<phase>tail)!$"}, cuzk=False)
    (e,) = p.parse_line("a" * 5000 + " tail!", "x", 5, 9.0)
    assert (e.kind, e.name) == ("user:tail", "tail")
    assert p.counters["rule_timeout"] == 1
    (e,) = p.parse_line("aaaa", "x", 6, 9.5)  # the rule still works on lines it can decide
    assert e.kind == "user:runaway"


def test_a_thousand_rules_that_backtrack_give_a_line_up_within_one_budget_not_a_limit_each(
) -> None:
    """The 50 ms were each rule's: a config of many rules that backtrack multiplied them (a
    64 KiB config holds ~1,300 rules: 70 s of one line). All the rules of a line have
    `LINE_BUDGET_S`; the rules after it do not read the line, which is counted once."""
    p = parser_with(*[BACKTRACKS] * 1000, {"name": "tail", "regex": r"(?P<phase>tail)!$"},
                    cuzk=False)
    (e,) = p.parse_line("a" * 5000 + " tail!", "x", 5, 9.0)
    assert e.kind == "unparsed"
    assert p.counters["rule_budget"] == 1
    assert p.counters["rule_timeout"] <= LINE_BUDGET_S / RULE_TIMEOUT_S + 1
    (e,) = p.parse_line("aaaa", "x", 6, 9.5)  # lines the rules decide are read as ever
    assert e.kind == "user:runaway"


def test_other_threads_run_while_a_rule_searches_a_hostile_line() -> None:
    """The sampler is another thread: `re` held the GIL for a whole search, so a hostile line
    stopped it; the rules' searches let it go. With a switch interval longer than the search,
    the other thread can run during it only if the search lets the GIL go."""
    import sys
    import threading

    p = parser_with(BACKTRACKS, cuzk=False)
    ticks = [0]
    searching, done = threading.Event(), threading.Event()

    def tick() -> None:
        searching.wait()
        while not done.is_set():
            ticks[0] += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.5)  # 10 x the search's limit: no preemption while it runs
    other = threading.Thread(target=tick)
    try:
        other.start()
        searching.set()  # the other thread now waits for the GIL
        before = ticks[0]
        (e,) = p.parse_line("a" * 5000 + "!", "x", 5, 9.0)  # the whole time limit
        during = ticks[0] - before
    finally:
        done.set()
        other.join()
        sys.setswitchinterval(interval)
    assert e.kind == "unparsed" and p.counters["rule_timeout"] == 1
    assert before == 0 and during > 0
