"""`gapwatch compare` on PoSt: the proofs that failed or were lost count, and a side that loses
more of them is never the better one for its survivors' latency (docs/compare.md)."""

from __future__ import annotations

import re
from dataclasses import replace

from gapwatch.core.models import ProofTiming, ProverEvent
from gapwatch.core.payoff import IfClosed
from gapwatch.core.track import GpuTotals
from gapwatch.cuzk.advice import AdviceReport
from gapwatch.cuzk.post_advice import ProofAdvice
from gapwatch.cuzk.settings import ProverSettings
from gapwatch.offline.compare import Comparison, Figure, Side, _slim_posts, compare, to_json
from gapwatch.offline.compare_format import format_text
from gapwatch.offline.compare_stats import judge_counts
from gapwatch.offline.compare_windows import SlimPost

SPAN_S = 2400.0
EVICTION = "[memory] eviction_min_idle"


def _side(label: str, posts: list[SlimPost]) -> Side:
    totals = [GpuTotals(gpu=0, link_bytes_per_s=6.3e10, data_s=SPAN_S, busy_s=SPAN_S,
                        active_s=SPAN_S, first_busy_s=0.0, last_busy_s=SPAN_S,
                        last_wall_s=SPAN_S, confidence="high", final_state="CHAINED")]
    return Side(label=label, path=label, log_files=[], gpus=[], totals=totals, gaps=[],
                partition_ends=None, copies=[], settings=ProverSettings(),
                advice=AdviceReport(), payoff_all=IfClosed(0.0, None, None), busy_fraction=None,
                partitions_per_hour=None, statuses=10, posts=posts)


DEADLINE_S = 30.0


def _posts(latency_s: float, failed_every: int = 0, n: int = 40) -> list[SlimPost]:
    """`n` WinningPoSts a minute apart; every `failed_every`-th one failed (none at 0); a proved
    one late past `DEADLINE_S`, as the watcher says it."""
    return [SlimPost(None, "winning-post", 60.0 * i + 30, None, "failed")
            if failed_every and i % failed_every == 0
            else SlimPost(None, "winning-post", 60.0 * i + 30, latency_s + i % 3,
                          late=latency_s + i % 3 > DEADLINE_S)
            for i in range(n)]


def _figure(c: Comparison, name: str) -> Figure:
    return next(f for f in c.figures if f.name == name)


def test_a_side_failing_half_its_winning_posts_is_worse_and_its_fast_survivors_not_better(
        ) -> None:
    # BEFORE proves every one in ~25 s; AFTER fails every second one, proving the rest in ~7 s.
    c = compare(_side("BEFORE", _posts(24.0)), _side("AFTER", _posts(6.0, failed_every=2)))
    failed = _figure(c, "PoSt failed: winning-post")
    assert (failed.before, failed.after) == (0.0, 0.5)
    assert failed.counts == ((0, 40), (20, 40))
    assert failed.test.verdict == "worse"
    latency = _figure(c, "PoSt latency s: winning-post")
    assert latency.after is not None and latency.before is not None
    assert latency.after < latency.before  # faster, of the proofs that came
    assert latency.test.verdict == "not comparable"
    [note] = [n for n in c.notes if "failed or lost" in n]
    assert "AFTER failed or lost 20 of 40, BEFORE 0 of 40" in note
    text = format_text(c)
    assert re.search(r"PoSt failed: winning-post +0 % \(0 of 40\) +50 % \(20 of 40\) +\+50 pp +worse",
                     text)
    assert "better" not in [line.split()[-1] for line in text.splitlines() if "PoSt" in line]
    [row] = [f for f in to_json(c)["figures"] if f["figure"] == "PoSt failed: winning-post"]
    assert row["before_count"] == {"failed": 0, "ended": 40}
    assert row["after_count"] == {"failed": 20, "ended": 40}
    assert row["verdict"] == "worse"


def test_faster_posts_with_no_more_failures_are_still_better() -> None:
    c = compare(_side("BEFORE", _posts(24.0, failed_every=10)),
                _side("AFTER", _posts(6.0, failed_every=10)))
    assert _figure(c, "PoSt latency s: winning-post").test.verdict == "better"
    assert _figure(c, "PoSt failed: winning-post").test.verdict == "no measurable change"
    assert not [n for n in c.notes if "failed or lost" in n]


def test_counts_too_few_to_tell_a_large_change_say_so_not_no_measurable_change() -> None:
    """0 of 8 -> 10 of 20 failed (Fisher p 0.025), 0 of 3 -> 3 of 3 (p 0.1, the least three
    PoSts a side allow): "no measurable change" beside +50 and +100 pp said the sides looked
    alike. A share above the floor the counts cannot tell is too few PoSts; within the floor,
    no measurable change; told, worse."""
    assert judge_counts((0, 8), (10, 20), "lower").verdict == "too few PoSts"
    assert judge_counts((0, 3), (3, 3), "lower").verdict == "too few PoSts"
    assert judge_counts((4, 40), (4, 40), "lower").verdict == "no measurable change"
    assert judge_counts((0, 40), (20, 40), "lower").verdict == "worse"
    before = _side("BEFORE", _posts(24.0)[:8])
    after = _side("AFTER", _posts(24.0, failed_every=2)[:20])
    text = format_text(compare(before, after))
    assert re.search(r"PoSt failed: winning-post +0 % \(0 of 8\) +50 % \(10 of 20\) +\+50 pp +"
                     r"too few PoSts", text)


def test_one_lost_post_the_counts_do_not_tell_leaves_a_4x_latency_gain_judged() -> None:
    """AFTER lost 1 WinningPoSt of 40 (a restart took it), BEFORE none (Fisher p 1.0); AFTER's
    39 proved in ~7 s against ~25 s. Any larger share, however untold, made the 4x gain "not
    comparable": only a failures' row told "worse" against the faster side voids it."""
    after = _posts(6.0)
    after[20] = SlimPost(None, "winning-post", after[20].end_s, None, "lost")
    c = compare(_side("BEFORE", _posts(24.0)), _side("AFTER", after))
    assert _figure(c, "PoSt failed: winning-post").test.verdict == "too few PoSts"
    assert _figure(c, "PoSt latency s: winning-post").test.verdict == "better"
    [note] = [n for n in c.notes if "failed or lost" in n]
    assert "AFTER failed or lost 1 of 40, BEFORE 0 of 40" in note
    assert "the failures' difference is not told (too few PoSts)" in note


def test_half_the_posts_failed_too_few_to_call_worse_still_voids_the_survivors_better() -> None:
    """0 of 8 failed against 10 of 20 (Fisher p 0.025): too few PoSts to call the failures
    worse at p < 0.01, yet not chance either: AFTER's fast survivors are not judged better,
    by latency or by late share (BEFORE's 8 all late: "100 % -> 0 % better" beside the half
    AFTER failed)."""
    c = compare(_side("BEFORE", _posts(31.0, n=8)), _side("AFTER", _posts(6.0, n=20,
                                                                            failed_every=2)))
    assert _figure(c, "PoSt failed: winning-post").test.verdict == "too few PoSts"
    assert _figure(c, "PoSt latency s: winning-post").test.verdict == "not comparable"
    late = _figure(c, "PoSt late: winning-post")
    assert late.counts == ((8, 8), (0, 20)) and late.test.verdict == "not comparable"
    [note] = [n for n in c.notes if "failed or lost" in n]
    assert "AFTER failed or lost 10 of 20, BEFORE 0 of 8" in note
    assert "not judged better than BEFORE's" in note


def test_failures_within_the_floor_void_no_latency_gain_however_small_their_p() -> None:
    """3 of 1000 -> 13 of 1000 WinningPoSts failed: 1 point apart, within the floor, so the
    failures' row says "no measurable change", yet Fisher's p 0.021 is under the voiding 0.05:
    AFTER's 4x faster survivors read "not comparable" beside a row saying the failures did not
    change. One rule with the row: it voids only where the row is "too few PoSts" (above the
    floor) or "worse" against the faster side."""
    def posts(latency_s: float, failed: int) -> list[SlimPost]:
        return [SlimPost(None, "winning-post", 2.0 * i + 1, None, "failed") if i < failed
                else SlimPost(None, "winning-post", 2.0 * i + 1, latency_s + i % 3)
                for i in range(1000)]
    c = compare(_side("BEFORE", posts(20.0, 3)), _side("AFTER", posts(5.0, 13)))
    failed = _figure(c, "PoSt failed: winning-post")
    assert failed.counts == ((3, 1000), (13, 1000))
    assert failed.test.verdict == "no measurable change"
    assert failed.test.p_value is not None and failed.test.p_value < 0.05
    assert _figure(c, "PoSt latency s: winning-post").test.verdict == "better"
    [note] = [n for n in c.notes if "failed or lost" in n]
    assert "AFTER failed or lost 13 of 1000, BEFORE 3 of 1000" in note
    assert "their verdicts stand: the failures' difference is not told (no measurable change)" \
        in note


def test_a_side_slower_but_failing_none_is_not_judged_worse_by_its_latency() -> None:
    # The rule runs both ways: BEFORE's short latency is of the half it proved.
    c = compare(_side("BEFORE", _posts(6.0, failed_every=2)), _side("AFTER", _posts(24.0)))
    assert _figure(c, "PoSt failed: winning-post").test.verdict == "better"
    assert _figure(c, "PoSt latency s: winning-post").test.verdict == "not comparable"


def _word(job: str, t: float, **proof: object) -> ProverEvent:
    return ProverEvent(t, "proof", "info", "", job_id=job,
                       proof=ProofTiming("winning-post", **proof))  # type: ignore[arg-type]


def test_a_sides_posts_keep_the_failed_and_the_lost_each_by_its_last_word() -> None:
    events = [
        _word("a", 10.0, total_s=6.0, done=False),  # running: not its last word
        _word("a", 12.0, total_s=8.0),  # proved
        _word("b", 20.0, total_s=3.0, verdict="failed", error="GPU prove start failed"),
        _word("c", 30.0, total_s=4.0, done=False, given_up="restart"),  # lost in a restart
        _word("d", 40.0, total_s=1.0, done=False),  # still running at the end: not ended
    ]
    assert _slim_posts(events) == [
        SlimPost(None, "winning-post", 12.0, 8.0, "proved"),
        SlimPost(None, "winning-post", 20.0, None, "failed"),
        SlimPost(None, "winning-post", 30.0, None, "lost"),
    ]


def _advised_eviction(side: Side, eviction_min_idle: str) -> Side:
    """`side` whose report advised `[memory] eviction_min_idle` for 4 late WinningPoSts (its
    SRS evicted between them), with the setting as its cuzk log showed it."""
    late = ProofAdvice("winning-post", "late", 4, "srs_evicted", None, EVICTION,
                       "4 WinningPoSt late: [memory] eviction_min_idle: raise it")
    return replace(side, advice=AdviceReport(proofs=[late]),
                   settings=ProverSettings(values={EVICTION: eviction_min_idle}, log_lines=50))


def test_the_payoff_judges_the_posts_advice_by_its_setting_and_the_post_figure_it_moves(
        ) -> None:
    before = _advised_eviction(_side("BEFORE", _posts(34.0)), "15s")
    after = _advised_eviction(_side("AFTER", _posts(6.0)), "10m")
    c = compare(before, after)
    [row] = to_json(c)["payoff"]["proof_advice"]
    assert row["setting"] == EVICTION and row["verdict"] == "late" and row["count"] == 4
    assert row["changed"] is True
    assert row["shown_by"] == [{"setting": EVICTION, "before": "15s", "after": "10m"}]
    assert row["figure"]["figure"] == "PoSt late: winning-post"
    assert row["figure"]["verdict"] == "better"
    payoff = format_text(c).split("Payoff:")[1]
    assert "advised no setting" not in payoff
    assert "  [memory] eviction_min_idle: 4 winning-post late (PoSt)\n" in payoff
    assert "    changed: [memory] eviction_min_idle 15s → 10m\n" in payoff
    assert "    PoSt late: winning-post: 100 % → 0 %: better\n" in payoff
    # Unchanged, it says so, and the figure still says what became of the proofs.
    same = compare(before, _advised_eviction(_side("AFTER", _posts(34.0)), "15s"))
    payoff = format_text(same).split("Payoff:")[1]
    assert "    unchanged: [memory] eviction_min_idle 15s on both\n" in payoff
    assert "    PoSt late: winning-post: 100 % → 100 %: no measurable change\n" in payoff


def test_the_late_share_is_counted_whole_and_judges_the_advice_for_late_posts() -> None:
    """BEFORE proved 4 of its 8 WinningPoSts past the deadline, its report advising `[memory]
    eviction_min_idle`; the payoff judged that advice by the mean latency of all proofs (21 ->
    20 s, "no measurable change"), and the late share was counted nowhere. It is a row of its
    own, counted whole as the failures are, and the late advice's figure."""
    before = [SlimPost(None, "winning-post", 300.0 * i + 30, 35.0 if i % 2 else 7.0,
                       late=bool(i % 2)) for i in range(8)]
    after = [SlimPost(None, "winning-post", 300.0 * i + 30, 7.0) for i in range(8)]
    c = compare(_advised_eviction(_side("BEFORE", before), "15s"),
                _advised_eviction(_side("AFTER", after), "10m"))
    late = _figure(c, "PoSt late: winning-post")
    assert late.counts == ((4, 8), (0, 8))
    assert (late.before, late.after) == (0.5, 0.0)
    assert late.test.verdict == "too few PoSts"  # Fisher p 0.077
    text = format_text(c)
    assert re.search(r"PoSt late: winning-post +50 % \(4 of 8\) +0 % \(0 of 8\) +-50 pp +"
                     r"too few PoSts", text)
    assert "    PoSt late: winning-post: 50 % → 0 %: too few PoSts\n" in text.split("Payoff:")[1]
    [row] = [f for f in to_json(c)["figures"] if f["figure"] == "PoSt late: winning-post"]
    assert row["before_count"] == {"late": 4, "ended": 8, "not_timed": 0}
    assert row["after_count"] == {"late": 0, "ended": 8, "not_timed": 0}
    # Counted whole, a late share told: 20 of 40 late against none.
    c = compare(_side("BEFORE", _posts(34.0)[:20] + _posts(6.0)[20:]), _side("AFTER", _posts(6.0)))
    assert _figure(c, "PoSt late: winning-post").test.verdict == "better"


def test_a_sides_posts_keep_whether_a_proved_one_was_late() -> None:
    events = [_word("a", 12.0, total_s=38.0, verdict="late"),
              _word("b", 20.0, total_s=8.0),
              _word("c", 30.0, total_s=40.0, verdict="failed", error="GPU prove start failed"),
              _word("d", 40.0, total_at_least_s=3.0, verdict="unknown")]  # not timed
    assert [(p.outcome, p.late) for p in _slim_posts(events)] == [
        ("proved", True), ("proved", False), ("failed", False), ("proved", None)]


def test_posts_not_timed_are_left_out_of_the_late_share_and_said_on_each_side() -> None:
    """AFTER's log was read from mid-proof for most of its PoSts: 14 of its 20 WinningPoSts
    proved not timed (verdict "unknown"), 2 of the 6 timed late; BEFORE proved 12 of 20 late,
    its report advising `[memory] eviction_min_idle` for them. Counted on time, the untimed
    made AFTER's late share 10 % (2 of 20), "-50 pp better", and the advice judged achieved by
    it: whether they were late is not known, so the share is of the 6 timed, and the head says
    how many each side left out."""
    before = _slim_posts([_word(f"b{i}", 60.0 * i + 30, total_s=35.0 if i < 12 else 8.0,
                                verdict="late" if i < 12 else "ok") for i in range(20)])
    after = _slim_posts(
        [_word(f"a{i}", 60.0 * i + 30, total_s=35.0, verdict="late") for i in range(2)]
        + [_word(f"a{i}", 60.0 * i + 30, total_s=8.0) for i in range(2, 6)]
        + [_word(f"a{i}", 60.0 * i + 30, total_at_least_s=3.0, verdict="unknown")
           for i in range(6, 20)])
    c = compare(_advised_eviction(_side("BEFORE", before), "15s"),
                _advised_eviction(_side("AFTER", after), "10m"))
    late = _figure(c, "PoSt late: winning-post")
    assert late.counts == ((12, 20), (2, 6))
    assert late.not_timed == (0, 14)
    assert late.test.verdict == "too few PoSts"  # 60 % -> 33 %, Fisher p 0.37
    text = format_text(c)
    assert re.search(r"PoSt late: winning-post +60 % \(12 of 20\) +33 % \(2 of 6\) +-27 pp +"
                     r"too few PoSts", text)
    assert "    PoSt late: winning-post: 60 % → 33 %: too few PoSts\n" in text.split("Payoff:")[1]
    head = " ".join(text.split("Settings")[0].split())
    assert ("note: PoSt late: winning-post on GPU 0: PoSts proved but not timed (their lines "
            "lost or read from mid-proof: whether late is not known) are left out of the late "
            "share: BEFORE 0 of the 20 that ended, AFTER 14 of the 20 that ended") in head
    [row] = [f for f in to_json(c)["figures"] if f["figure"] == "PoSt late: winning-post"]
    assert row["after_count"] == {"late": 2, "ended": 20, "not_timed": 14}
    # None of a side's PoSts timed: its late share is not known, not 0 % of none.
    c = compare(_side("BEFORE", before), _side("AFTER", after[6:]))
    late = _figure(c, "PoSt late: winning-post")
    assert (late.after, late.counts, late.test.verdict) == (None, ((12, 20), (0, 0)),
                                                            "too few PoSts")
