"""The pinned-pool advice judges the cause from the host's own readings at the failure: where
MemAvailable was far above the buffer that failed to pin, or cuzk's budget is above the host's
RAM, it says so, names what else can fail cudaHostAlloc (a guess: upstream does not say), and
fits the budget to the host rather than raising a safety_margin cuzk does not read; where RAM
really was short, the safety_margin advice stays. The 'cudaHostAlloc failed' line is cited only
where it was read. The simulator's box is as short of RAM as its own failure lines say
(cuda_err=2 at the pool's first buffer), so the demo's headline still names a setting.

The H200 figures (tests/data/h200-e2e/pageable, 2026-11-30): a 125.9 GiB host, ~89 GiB
available when the pool failed at its first 1.5 GiB buffer; the same load generator's run on
the H100 host (2026-12-05) logged total_budget_gib=512, which this recording's log does not
have: it is added in front of a copy, as that run wrote it."""

from __future__ import annotations

import re
from pathlib import Path

from parsed_logs import offline_events
from parsed_logs import starved_gap as gap_at
from test_pool_thread_advice import START, failure, line, pool_advice, start, starved_gap

from evaluation.simulate import simulate
from gapwatch.config import Config
from gapwatch.core.models import HostSample, LogEvent
from gapwatch.core.units import GIB
from gapwatch.cuzk.advice import Advice, AdviceReport, advice_lines, advise
from gapwatch.cuzk.knobs import LOWER, RAISE_MARGIN, Pull
from gapwatch.cuzk.pipeline import PipelineFacts
from gapwatch.logs.parse import LogParser
from gapwatch.offline.report import build_report

PAGEABLE = Path(__file__).parent / "data" / "h200-e2e" / "pageable"
#: The budget line the H100 run of the same load generator wrote first (its stdout.log:1).
BUDGET_512 = ("2026-11-30T10:03:38.900000Z  INFO cuzk_core::engine: memory budget initialized "
              "total_budget_gib=512\n")


def _pool(advice: list[Advice]) -> list[Advice]:
    return [a for a in advice if a.stall == "pinned_pool"]


def test_a_pool_that_failed_with_ram_free_and_a_budget_above_it_is_told_not_ram(
        tmp_path: Path) -> None:
    log = tmp_path / "stdout.log"
    log.write_text(BUDGET_512 + (PAGEABLE / "stdout.log").read_text())
    r = build_report(PAGEABLE / "rec.jsonl.gz", Config(),
                     [str(log), str(PAGEABLE / "stderr.log")], workers=1)
    pool = _pool(r.advice.advice)
    assert pool, r.advice
    settings = [a.setting for a in pool]
    # Not the margin: cuzk reads it only with "auto", and a 512 GiB budget on a 125.9 GiB host
    # is not "auto"; the budget fitted to the host instead, lowered.
    assert "[memory] safety_margin" not in settings
    first = pool[0]
    assert first.setting == "[memory] total_budget" and first.step == LOWER
    assert first.pulls == (Pull("[memory] total_budget", False),)
    assert "total_budget_gib=512" in first.change and "125.9 GiB" in first.change
    assert "below this host's 125.9 GiB of RAM" in first.change
    # No step counting from 512 down: the 97 steps of which ~87 could change nothing.
    assert "step(s) fit" not in first.change
    # Not RAM, from the host's own readings at the failures, said first.
    guess = first.guess_why
    assert first.guess and guess.startswith("not RAM: "), guess
    said = re.search(r"MemAvailable was at least (\d+\.\d) GiB", guess)
    assert said is not None and 85.0 < float(said[1]) < 95.0, guess
    assert "1.5 GiB buffer" in guess
    # What else can fail a pin, as a guess, claiming nothing upstream does not say.
    assert "upstream does not say why cudaHostAlloc fails" in guess
    for other in ("container's memory limit", "LimitMEMLOCK", "cuda_err"):
        assert other in guess, (other, guess)
    assert "likeliest" not in guess
    # The log has 'checkout FAILED' lines and no 'cudaHostAlloc failed' line: none is cited.
    assert "the CUDA error is in its 'cudaHostAlloc failed' line" not in guess
    assert "no 'cudaHostAlloc failed' line was read" in guess
    text = "\n".join(advice_lines(r.advice))
    assert "safety_margin: raise" not in text and "RAM left outside" not in text


def _host(t_s: float, total_gib: float, available_gib: float) -> HostSample:
    """A host reading as the sampler writes it (`gapwatch.sources.host._meminfo`)."""
    return HostSample(t_mono_ns=int(t_s * 1e9), t_wall_s=t_s, interval_ns=100_000_000,
                      mem_used_pct=100.0 * (total_gib - available_gib) / total_gib,
                      mem_available_bytes=int(available_gib * GIB), swap_used_bytes=0,
                      cpu_busy_pct=None, psi_mem_some_avg10=None, psi_mem_full_avg10=None,
                      psi_mem_some_share=None, psi_mem_full_share=None,
                      major_faults_per_s=None)


def _facts_with_host(lines: list[str], total_gib: float, available_gib: float
                     ) -> PipelineFacts:
    """cuzk's facts from `lines`, the host reading `available_gib` of `total_gib` beside them
    (a reading every 0.1 s from a second before the first line, fed in time order with the
    lines, as a report feeds them)."""
    facts = PipelineFacts()
    t = None
    for ev in offline_events(lines):
        t = ev.t_wall_s - 1.0 if t is None else t
        while t <= ev.t_wall_s:
            facts.feed_host(_host(t, total_gib, available_gib))
            t += 0.1
        facts.feed(ev)
    return facts


def _advise_with_host(lines: list[str], total_gib: float, available_gib: float
                      ) -> AdviceReport:
    facts = _facts_with_host(lines, total_gib, available_gib)
    return advise([starved_gap(facts, lines)], facts.view())


def test_a_pool_that_failed_with_ram_short_keeps_the_safety_margin_advice() -> None:
    """A 517 GiB box, "auto" with the default 5 GiB margin (a 512 GiB budget), 2 GiB available
    when a 3.9 GiB buffer failed to pin: RAM was short, the margin advice stands."""
    first = _advise_with_host([*START, *failure(38.57)], 517.0, 2.0).advice[0]
    assert first.setting == "[memory] safety_margin" and first.step == RAISE_MARGIN
    assert first.change == pool_advice([*START, *failure(38.57)])[0].change
    assert any("MemAvailable 2.0 GiB" in e and "RAM was short" in e for e in first.evidence), \
        first.evidence
    # Its 'cudaHostAlloc failed' line was read: cited with the error it gave.
    assert "the CUDA error is in its 'cudaHostAlloc failed' line: cuda_err=2" in first.guess_why
    assert "not RAM" not in first.guess_why


def test_a_pool_that_failed_with_ram_free_under_a_budget_that_fits_names_no_margin() -> None:
    """A 1024 GiB box, a 512 GiB budget, 600 GiB available when a 3.9 GiB pin failed: not RAM,
    and the budget fits the host; the pool pinned nothing, so no cap either: no cuzk setting,
    and the words say what else to look at."""
    out = _advise_with_host([*START, *failure(38.57)], 1024.0, 600.0)
    assert not _pool(out.advice), out.advice
    (none,) = [n for n in out.no_setting if n.stall == "pinned_pool"]
    assert none.why.startswith("not RAM: "), none.why
    assert "MemAvailable was at least 600.0 GiB" in none.why
    assert "LimitMEMLOCK" in none.why and "container's memory limit" in none.why
    assert "[memory] safety_margin is not advised" in none.why


def test_a_budget_above_the_hosts_ram_is_lowered_below_it_even_where_ram_was_short() -> None:
    """A 256 GiB budget on a 200 GiB box with 1 GiB available: RAM short, but the budget is
    not "auto" (above MemTotal), so the margin changes nothing: the budget is lowered."""
    first = _advise_with_host([*start(256, 18), *failure(38.57)], 200.0, 1.0).advice[0]
    assert first.setting == "[memory] total_budget" and first.step == LOWER
    assert "below this host's 200.0 GiB of RAM" in first.change
    assert not first.guess_why.startswith("not RAM")


def test_without_a_cudahostalloc_line_none_is_cited() -> None:
    checkout = [line(38.57, "WARN", "cuzk_core::pipeline",
                     "pinned pool checkout FAILED — falling back to unpinned "
                     "num_constraints=130278869 pool_free=0 pool_total_gib=0")]
    (first, *_) = pool_advice([*START, *checkout])
    assert "the CUDA error is in its 'cudaHostAlloc failed' line" not in first.guess_why
    assert "no 'cudaHostAlloc failed' line was read" in first.guess_why


def test_the_simulated_box_is_short_of_ram_where_its_pins_fail() -> None:
    """sim:pageable's cudaHostAlloc fails with cuda_err=2 (out of memory) at the pool's first
    buffer: its host's readings then say RAM was short (below one 3.9 GiB buffer), on a box
    whose RAM is above the budget its log gives (517 GiB, "auto" with the default 5 GiB
    margin: 512), so the rule keeps the margin advice, and the demo's headline its setting."""
    run = simulate("pageable", seed=1, duration_s=40)
    hosts = [h for h in run.records if isinstance(h, HostSample)]
    parser = LogParser(offline=True)
    events = [e for i, (stream, text) in enumerate(run.log_lines)
              for e in parser.parse_line(text, stream, i, 0.0)]
    fails = [e.t_wall_s for e in events if "checkout FAILED" in e.raw]
    assert fails
    for t in fails:
        near = min(hosts, key=lambda h: abs(h.t_wall_s - t))
        assert near.mem_available_bytes is not None and near.mem_used_pct is not None
        assert near.mem_available_bytes < 3.88 * GIB, (t, near)
        total = near.mem_available_bytes / (1 - near.mem_used_pct / 100)
        assert abs(total / GIB - 517) < 0.5, total / GIB
    facts = _fed_in_order(events, hosts)
    out = advise([gap_at(facts, max(fails) + 1.0, 60.0)], facts.view()).advice
    assert out and out[0].setting == "[memory] safety_margin", out
    assert any("RAM was short" in e for e in out[0].evidence), out[0].evidence


def _feed_at(lines: list[str], hosts: list[HostSample]) -> PipelineFacts:
    """cuzk's facts from `lines` and `hosts`, fed in time order (a reading before a line of
    its moment), as a report feeds them."""
    return _fed_in_order(offline_events(lines), hosts)


def _fed_in_order(events: list[LogEvent], hosts: list[HostSample]) -> PipelineFacts:
    """cuzk's facts from `events` and `hosts`, fed in time order (a reading before a line of
    its moment), as a report feeds them."""
    facts = PipelineFacts()
    fed: list[tuple[float, int, int, HostSample | LogEvent]] = sorted(
        [*((e.t_wall_s, 1, i, e) for i, e in enumerate(events)),
         *((h.t_wall_s, 0, i, h) for i, h in enumerate(hosts))], key=lambda x: x[:3])
    for *_, r in fed:
        if isinstance(r, HostSample):
            facts.feed_host(r)
        else:
            facts.feed(r)
    return facts


def test_a_failed_pin_is_one_failure_at_the_host_not_one_per_line() -> None:
    """Upstream writes a failed pin as 'cudaHostAlloc failed' (pinned_pool.rs:64), 'pinned pool:
    cudaHostAlloc failed' (:204) and then 'pinned pool checkout FAILED' (pipeline.rs:306), one
    thread, one pin: the host is matched once for it. Three pins, two of them interleaved as two
    synthesis workers write them, are 3 failures, not 6 (the sim's report said '106
    checkout(s) FAILED', '106 cudaHostAlloc failure(s)' and '212 failure line(s)')."""
    a, b = failure(38.57), failure(38.5705)
    lines = [*START, *sorted([*a, *b]), *failure(40.0)]
    facts = _facts_with_host(lines, 517.0, 2.0)
    pool = facts.view().pool
    assert pool is not None and pool.host is not None
    assert (pool.checkout_failed, pool.alloc_failed) == (3, 3)
    assert (pool.host.read, pool.host.unread) == (3, 0), pool.host
    first = advise([starved_gap(facts, lines)], facts.view()).advice[0]
    (host,) = [e for e in first.evidence if e.startswith("the host at the failures")]
    assert "the least within 1 s of 3 failed pin(s)" in host, host


def test_a_failed_pin_with_one_of_its_lines_missing_is_still_one_failure() -> None:
    """A checkout FAILED with no 'cudaHostAlloc failed' before it (its target filtered out) is
    a failed pin; so is a 'cudaHostAlloc failed' whose checkout line never came (the log cut),
    and a checkout FAILED a second later is another pin, not that one's."""
    alloc_only = failure(38.57)[:2]
    checkout_only = failure(40.0)[2:]
    facts = _facts_with_host([*START, *alloc_only, *checkout_only], 517.0, 2.0)
    pool = facts.view().pool
    assert pool is not None and pool.host is not None
    assert (pool.host.read, pool.host.unread) == (2, 0), pool.host


def test_ram_is_not_ruled_out_while_a_failed_pin_had_no_host_reading() -> None:
    """A --log whose pins mostly failed before the recording began: 5 failures with no host
    reading within 1 s, then one with 600 GiB available. That one reading says nothing of the
    5: RAM is not ruled out, the safety_margin advice stays, and the evidence says how many
    failures had no reading."""
    lines = [*START, *(x for k in range(5) for x in failure(38.0 + k)), *failure(50.0)]
    at = offline_events(failure(50.0))[0].t_wall_s
    hosts = [_host(at - 0.5 + 0.1 * k, 1024.0, 600.0) for k in range(10)]
    facts = _feed_at(lines, hosts)
    pool = facts.view().pool
    assert pool is not None and pool.host is not None
    assert (pool.host.read, pool.host.unread) == (1, 5), pool.host
    out = advise([starved_gap(facts, lines)], facts.view())
    settings = [a.setting for a in _pool(out.advice)]
    assert "[memory] safety_margin" in settings, out
    first = _pool(out.advice)[0]
    assert "not RAM" not in first.guess_why, first.guess_why
    (host,) = [e for e in first.evidence if e.startswith("the host at the failures")]
    assert "5 more without a reading within 1 s" in host, host
    assert "RAM is not ruled out" in host and "not RAM" not in host, host


def test_a_buffer_size_read_to_six_places_is_said_in_prose_to_the_hundredth() -> None:
    """The bench's log gives `buffer_gib` as 3.882613: "a 3.882613 GiB buffer failed to pin"
    was said; the prose rounds to the hundredth (the log's own figure stays in its evidence)."""
    from gapwatch.cuzk.pin_need import _gib

    assert [_gib(x) for x in (3.882613, 1.5, 512.0, 0.0)] == ["3.88", "1.5", "512", "0"]


def test_the_reading_matched_to_a_failed_pin_is_the_nearest_within_a_second_the_earlier_of_two() -> None:
    """The nearest reading, found from the newest back (not a min over all kept): of two as
    near, the earlier; none further than `NEAR_S`; a failure after the newest reading or
    before the oldest is matched as the min over all matched it."""
    from collections import deque

    from gapwatch.cuzk.pin_host import NEAR_S, _nearest

    recent = deque([(10.0, 1.0), (10.5, 2.0), (11.0, 3.0), (11.5, 4.0)])
    assert _nearest(recent, 10.75) == (10.5, 2.0)  # 10.5 and 11.0 as near: the earlier
    assert _nearest(recent, 11.4) == (11.5, 4.0)
    assert _nearest(recent, 11.5 + NEAR_S) == (11.5, 4.0)  # exactly NEAR_S: matched
    assert _nearest(recent, 11.5 + NEAR_S + 0.01) is None
    assert _nearest(recent, 9.0) == (10.0, 1.0)
    assert _nearest(recent, 8.9) is None
    assert _nearest(deque(), 10.0) is None
