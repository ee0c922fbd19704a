"""cuzk's pinned pool churning (the evictor unpinning idle buffers, cuzk pinning new ones, over and
over) is said before its first failure and with its failures, from upstream's own lines
(tests/data/cuzk-upstream/pool-churn.log, `make_data.py`'s `pool_churn`: pinned_pool.rs:61, 187,
202, 212, 240; pipeline.rs:302); never where the log kept no INFO line of the pool
(cuzk-upstream-paths.md 2.4, and its "Blind" item 6)."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace
from parsed_logs import offline_events, offline_facts, starved_gap

from gapwatch.core.models import LogEvent, ProverEvent
from gapwatch.cuzk.advice import advice_lines, advise
from gapwatch.cuzk.log_lines import POOL_ALLOCATED_MESSAGE
from gapwatch.cuzk.pool_churn import (
    CHURN_WINDOW_S,
    MAX_SPANS,
    POOL_FREED,
    REPIN_WITHIN_S,
    PoolChurn,
)
from gapwatch.cuzk.watch import CuzkWatch

DATA = Path(__file__).parent / "data" / "cuzk-upstream"
CHURN_LOG = (DATA / "pool-churn.log").read_text().splitlines()
STAMP = "2026-05-12T21:{}Z"
POOL = " INFO cuzk_core::pinned_pool: "


def watched(lines: list[str]) -> list[ProverEvent]:
    watch = CuzkWatch()
    out: list[ProverEvent] = []
    for e in offline_events(lines):
        out += watch.feed(e)
    return out + watch.finish()


def at_warn(lines: list[str]) -> list[str]:
    """The log as cuzk writes it at `[logging] level = "warn"` (or RUST_LOG=warn): its WARN
    and ERROR lines only (cuzk-daemon main.rs:54-61)."""
    return [x for x in lines if " WARN " in x or " ERROR " in x]


def first_failure_s(lines: list[str]) -> float:
    return min(e.t_wall_s for e in offline_events(lines) if e.level == "WARN")


def test_pinned_pool_churn_is_said_before_the_first_checkout_fails() -> None:
    events = watched(CHURN_LOG)
    [warning] = [e for e in events if e.kind == "warning"]
    assert warning.level == "warning"
    # Said at the third re-pin (21:02:03), half a minute before the fourth fails (21:02:33).
    assert warning.t_wall_s < first_failure_s(CHURN_LOG) - 25
    words = warning.message
    assert words.startswith("cuzk's pinned pool churned: the evictor freed idle pinned "
                            "buffers and cuzk pinned new ones 3 times")
    assert "9 buffer(s), 34.9 GiB freed" in words
    assert "pinned_pool.rs:240, 212" in words and "no pin has failed yet" in words
    # The candidate knob is gapwatch's reading, never upstream's word: said as a guess.
    assert "a guess to measure, not upstream's claim: [pipeline] max_gpu_queue_depth = 8" in words


def test_churn_is_not_inferred_from_a_log_kept_at_warn() -> None:
    """At level "warn" the pool's INFO lines (every freed and allocated line) are gone: the
    failures alone say nothing of churn, neither that it came nor that it did not; the knob
    upstream's reference names for cudaHostAlloc failures is a guess, saying why."""
    warn_only = at_warn(CHURN_LOG)
    assert len(warn_only) == 3 and not [e for e in watched(warn_only) if e.kind == "warning"]
    facts = offline_facts(warn_only)
    evidence = facts.pool_evidence()
    assert not any("pinned pool churned" in e for e in evidence)
    [unknown] = [e for e in evidence if "churned before" in e]
    assert unknown.startswith("whether the pool churned before its failures is not known: no "
                              "INFO line of cuzk_core::pinned_pool was read")
    report = advise([starved_gap(facts, first_failure_s(CHURN_LOG) + 5)], facts.view())
    [knob] = [a for a in report.advice if a.setting == "[pipeline] max_gpu_queue_depth"]
    assert knob.guess and "is not visible at this log level" in knob.guess_why


def test_a_pinned_pool_gap_says_the_churn_that_preceded_its_failures() -> None:
    facts = offline_facts(CHURN_LOG)
    gap = starved_gap(facts, first_failure_s(CHURN_LOG) + 5)
    assert gap.prover_cause == "pinned_pool"
    [churn] = [e for e in gap.prover_evidence if "churned" in e]
    assert "4 times in 90.0s" in churn and "12 buffer(s), 46.6 GiB freed" in churn
    assert "then pinning failed, the first at 21:02:33.0" in churn
    assert "the churn preceded the failures" in churn


def test_the_advice_names_max_gpu_queue_depth_as_a_guess_where_churn_preceded_the_failures(
        ) -> None:
    facts = offline_facts(CHURN_LOG)
    report = advise([starved_gap(facts, first_failure_s(CHURN_LOG) + 5)], facts.view())
    settings = [(a.setting, a.guess) for a in report.advice]
    # The margin stays the setting to change (the verdict's first); the knob comes last.
    assert settings == [("[memory] safety_margin", True),
                        ("[pipeline] max_parallel_synthesis", True),
                        ("[pipeline] max_gpu_queue_depth", True)]
    knob = report.advice[-1]
    assert knob.change.endswith("a guess to measure, not upstream's claim")
    assert "config.rs:340-341" in knob.change and "engine.rs:1257-1265" in knob.source
    assert "not upstream's claim: measure it" in knob.guess_why
    text = "\n".join(advice_lines(report))
    assert "a guess: " in text and "the churn preceded the failures" in text


def test_with_the_pacer_on_churn_names_no_queue_depth() -> None:
    pacer = ("2026-05-12T21:00:00.040000Z  INFO cuzk_core::engine: GPU queue target dispatch "
             "pacer enabled gpu_queue_target=8")
    lines = sorted([*CHURN_LOG, pacer])
    facts = offline_facts(lines)
    report = advise([starved_gap(facts, first_failure_s(lines) + 5)], facts.view())
    assert "[pipeline] max_gpu_queue_depth" not in [a.setting for a in report.advice]
    assert any("the dispatch pacer is on (gpu_queue_target=8" in e
               for e in report.advice[0].evidence)


def cycle(minute: int, second: int, total: int) -> list[str]:
    """One re-pin cycle in upstream's lines: the evictor frees a buffer, one is pinned again
    2 s later."""
    return [f"{STAMP.format(f'{minute:02d}:{second:02d}.000000')}{POOL}{POOL_FREED} "
            "freed_gib=3.88 total_freed_gib=3.88",
            f"{STAMP.format(f'{minute:02d}:{second + 2:02d}.000000')}{POOL}{POOL_ALLOCATED_MESSAGE} "
            f"size_gib=3.88 total_buffers={total} total_gib=3.88"]


def test_one_off_evictions_and_a_pool_grown_back_after_a_lull_are_no_churn() -> None:
    # Two cycles, then a third 20 minutes later: 3 in 10 minutes never held.
    lines = [*cycle(1, 0, 1), *cycle(2, 0, 2), *cycle(22, 0, 3)]
    # Freed, then pinned again only past REPIN_WITHIN_S: the pool grew back, no cycle.
    assert REPIN_WITHIN_S < 6 * 60
    lines += [f"{STAMP.format('23:00.000000')}{POOL}{POOL_FREED} freed_gib=3.88",
              f"{STAMP.format('29:00.000000')}{POOL}{POOL_ALLOCATED_MESSAGE} total_buffers=4",
              *cycle(29, 30, 5)]
    assert not [e for e in watched(lines) if e.kind == "warning"]
    churn = PoolChurn()
    for e in offline_events(lines):
        churn.feed(e)
    assert churn.cycles == 4 and not churn.spans


def test_a_restart_counts_the_cycles_again() -> None:
    start = (f"{STAMP.format('01:30.000000')}  INFO cuzk_core::engine: starting cuzk engine "
             "pipeline_enabled=true")
    lines = [*cycle(1, 0, 1), *cycle(1, 20, 2), start, *cycle(1, 40, 1)]
    assert not [e for e in watched(lines) if e.kind == "warning"]


def test_churn_is_said_once_while_it_lasts_and_again_when_it_comes_back() -> None:
    lines = [x for i in range(10) for x in cycle(1 + i // 2, (i % 2) * 30, i + 1)]
    back = 6 + int(CHURN_WINDOW_S / 60) + 1  # minutes: after a quiet window
    lines += [x for i in range(3) for x in cycle(back + i, 0, 11 + i)]
    warnings = [e for e in watched(lines) if e.kind == "warning"]
    assert len(warnings) == 2
    churn = PoolChurn()
    for e in offline_events(lines):
        churn.feed(e)
    first, second = churn.spans
    assert (first.cycles, second.cycles) == (10, 3)


def test_a_million_churn_lines_hold_bounded_memory() -> None:
    """A hostile log: a million freed/allocated lines, churn stopping and starting again every
    few cycles. What is kept stays at the latest spans and cycles."""
    churn = PoolChurn()
    said = 0
    base = "2026-05-12T21:00:00.000000Z  INFO cuzk_core::pinned_pool: "
    # Each line is its kind's event at its own time (`replace`: 0.3 CPU-s for the million,
    # against 0.7 to build each anew; the rule reads its fields, never changes them).
    lines = [(LogEvent(t_wall_s=0.0, time_source="line", kind="tracing", name=name,
                       raw=base + name, level="INFO",
                       fields={"target": "cuzk_core::pinned_pool", "freed_gib": 3.88}), dt)
             for name, dt in ((POOL_FREED, 0.0), (POOL_ALLOCATED_MESSAGE, 1.0))]
    t = 1_778_619_600.0
    for i in range(500_000):
        # 4 cycles 10 s apart, then a quiet window: a new span each time.
        t += 10.0 if i % 4 else CHURN_WINDOW_S + 1
        for line, dt in lines:
            said += churn.feed(replace(line, t_wall_s=t + dt)) is not None
    assert churn.cycles == 500_000 and said == 125_000
    assert len(churn.spans) == MAX_SPANS
    assert len(churn._recent) <= 3  # noqa: SLF001 - the bound is the point


def test_the_churn_warning_reaches_the_alert_line_metrics_and_the_report() -> None:
    """The existing channel of the prover's warnings: the dashboard's alert line (the worst
    recent prover event), a notice to the listeners (`record`'s stderr), /metrics'
    `gapwatch_prover_events_total{kind,level}`, the report's prover events (text and JSON)."""
    from test_cuzk_events_outputs import HEADER, samples

    from gapwatch.core.config import DetectorConfig
    from gapwatch.core.models import Notice
    from gapwatch.engine.session import Session
    from gapwatch.engine.store import SeriesStore
    from gapwatch.offline.detect import detect_records
    from gapwatch.offline.report import summarise, to_json
    from gapwatch.offline.report_text import format_text
    from gapwatch.sinks.metrics import MetricsSink
    from gapwatch.sinks.prover_event_metrics import families

    metrics = MetricsSink()
    session = Session(HEADER, SeriesStore(HEADER.gpus, 0.1), sinks=[metrics], watch=CuzkWatch())
    heard: list[object] = []
    session.subscribe(heard.append)
    for e in offline_events(CHURN_LOG):
        session.on_log_event(e)
    [notice] = [n for n in heard if isinstance(n, Notice)]
    assert notice.level == "warning"
    assert notice.message.startswith("prover warning at 21:02:03: cuzk's pinned pool churned")
    found = session.store.prover_alert(300.0)
    assert found is not None and found[0].kind == "warning"
    session.finish()
    events = samples(list(families(metrics.copy_counts().prover)), "gapwatch_prover_events_total")
    assert events[(("kind", "warning"), ("level", "warning"))] == 1
    assert events[(("kind", "warning"), ("level", "error"))] == 0

    report = summarise("rec.jsonl", detect_records(HEADER, [], DetectorConfig(),
                                                   offline_events(CHURN_LOG), watch=CuzkWatch()),
                       ["pool-churn.log"])
    doc = to_json(report)["prover_events"]
    assert [w["kind"] for w in doc["warning"]] == ["warning"]
    assert doc["summary"].endswith("0 lost GPU job(s), 1 warning(s)")
    text = format_text(report)
    assert "  Warnings (signs of failures to come)" in text
