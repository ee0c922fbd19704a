"""The pinned-pool and thread advice says how much only where that is safe and follows from the
log, and reads what the log already shows: the safety margin raised in steps of one partition's
pinned buffers (3 x the failing line's buffer size), never taking the budget to the PoRep SRS
plus cuzk's least synthesis workers, and not at all where the budget is at that floor; the
synthesis cap lowered to the partitions the pool did pin, and not where the pool pinned nothing
or cuzk already runs its least workers; "raise it", and which line would give the figure, where
one is missing; a failure that says the pool held buffers read as buffers pinned;
`[pipeline] max_gpu_queue_depth` as a guess where the log hides churn; the thread settings with
the values the daemon's start logged, "if unset" where none was read (cuzk-upstream-paths.md
2.3-2.4, 3.1, 3.3-3.4; cuzk-log-formats.md 1.6, 3.3)."""

from __future__ import annotations

from parsed_logs import offline_events, offline_facts
from parsed_logs import starved_gap as gap_at

from gapwatch.core.evidence_types import HostEvidence, ProverState
from gapwatch.core.models import Gap, LogEvent
from gapwatch.cuzk.advice import Advice, AdviceReport, advise
from gapwatch.cuzk.knobs import LOWER, RAISE_MARGIN, Pull
from gapwatch.cuzk.pipeline import PipelineFacts, PipelineView
from gapwatch.logs.parse import LogParser

T0 = "2026-12-05T16:18:"
#: PoRep 32G's a/b/c buffer: 130278869 constraints x 32 B.
CONSTRAINTS = 130278869
BUF = "3.882613"


def line(second: float, level: str, target: str, message: str) -> str:
    return f"{T0}{second:09.6f}Z {level:>5} {target}: {message}"


def start(budget_gib: int = 512, workers: int = 20, t: float = 36.0) -> list[str]:
    """The daemon's start as upstream writes it (by default the sim:pageable run's figures)."""
    return [
        line(t, "INFO", "cuzk_daemon", "cuzk-daemon starting"),
        line(t + 0.01, "INFO", "cuzk_daemon",
             "rayon global thread pool configured rayon_threads=96"),
        line(t + 0.02, "INFO", "cuzk_core::engine",
             f"memory budget initialized total_budget_gib={budget_gib}"),
        line(t + 0.03, "INFO", "cuzk_core::engine", "CUDA pinned memory pool initialized"),
        line(t + 0.04, "INFO", "cuzk_core::engine", "starting cuzk engine pipeline_enabled=true"),
        line(t + 0.05, "INFO", "cuzk_core::engine",
             "starting pipeline: synthesis task + GPU workers (budget-gated) configured_lookahead"
             f"=1 max_partitions_in_budget={budget_gib // 14} effective_lookahead=32 "
             f"synth_worker_count={workers} num_gpus=2"),
    ]


START = start()


def failure(second: float, pool_total_gib: str = "0", pool_free: int = 0) -> list[str]:
    """One failed pin, in upstream's three WARN lines (pinned_pool.rs:61, 202; pipeline.rs:302)."""
    return [
        line(second, "WARN", "cuzk_core::pinned_pool",
             f"cudaHostAlloc failed size_gib={BUF} cuda_err=2"),
        line(second + 0.001, "WARN", "cuzk_core::pinned_pool",
             f"pinned pool: cudaHostAlloc failed size_gib={BUF}"),
        line(second + 0.002, "WARN", "cuzk_core::pipeline",
             f"pinned pool checkout FAILED — falling back to unpinned num_constraints={CONSTRAINTS} "
             f"pool_free={pool_free} pool_total_gib={pool_total_gib}"),
    ]


def starved_gap(facts: PipelineFacts, lines: list[str]) -> Gap:
    """A pcie_starved gap of GPU 0 just after the log's last line, with what cuzk's prover
    gives it."""
    start_s = max(e.t_wall_s for e in offline_events(lines)) + 1.0
    return gap_at(facts, start_s, 60.0)


def advise_pool(lines: list[str]) -> AdviceReport:
    facts = offline_facts(lines)
    return advise([starved_gap(facts, lines)], facts.view())


def pool_advice(lines: list[str]) -> list[Advice]:
    return advise_pool(lines).advice


def by_setting(advice: list[Advice]) -> dict[str, Advice]:
    return {a.setting: a for a in advice}


# --- how much: the safety margin and the synthesis cap from the log's own figures ---

def test_the_safety_margin_is_raised_in_steps_of_one_partitions_buffers_with_each_figures_line(
        ) -> None:
    lines = [*START, *failure(38.57)]
    margin = by_setting(pool_advice(lines))["[memory] safety_margin"]
    change = margin.change
    assert change.startswith("raise it if total_budget is \"auto\" (the only case cuzk reads it")
    assert "with an explicit total_budget, lower that instead" in change
    # One partition's a/b/c, of the failing line's own buffer: 3 x 3.882613 GiB.
    assert (f"in steps of one partition's pinned buffers (3 x {BUF} GiB = 11.6 GiB, "
            f"num_constraints={CONSTRAINTS} x 32 B, 'pinned pool checkout FAILED' (WARN), "
            "pipeline.rs:302), re-measuring each with `gapwatch compare`") in change
    # No total: every worker's buffers less what the pool held counted in-use buffers twice.
    assert "by about" not in change and "a guess, no total" in change and margin.guess
    # The budget now, its line, the floor, and how many steps fit: (512 - 75) / 11.65 -> 37.
    assert "The budget is total_budget_gib=512, 'memory budget initialized', engine.rs:1198" in \
        change
    assert change.endswith("= 75 GiB: 37 step(s) fit before that floor")
    # The headline's direction is unchanged: raise it (the budget down), said with the case it
    # holds in, as the change says it (no line says whether the budget is "auto").
    assert margin.step == RAISE_MARGIN and margin.step.verb == "raise"
    assert margin.pulls == (Pull("[memory] total_budget", False),)


def _steps(change: str) -> int:
    """The step count a margin's change gives (`N step(s) fit before that floor`)."""
    return int(change.rsplit(": ", 1)[1].split(" step(s)")[0])


def test_the_margin_step_never_takes_the_budget_below_the_srs_and_two_partitions() -> None:
    """The review's 251 GiB / 17 workers was told "raise it by about 198 GiB" (a 53 GiB budget,
    below the PoRep SRS and one partition): now steps of 11.6 GiB that leave it above 75 GiB."""
    step_gib, floor_gib = 3 * float(BUF), 47 + 2 * 14
    for budget, workers in ((251, 17), (128, 9), (512, 20), (90, 6)):
        change = by_setting(pool_advice([*start(budget, workers), *failure(38.57)]))[
            "[memory] safety_margin"].change
        steps = _steps(change)
        assert budget - steps * step_gib > floor_gib, (budget, steps)
        # The most that fit: one more would reach the floor.
        assert budget - (steps + 1) * step_gib <= floor_gib, (budget, steps)
        assert "the PoRep 32G SRS (~47 GiB pinned, curio#1043) plus cuzk's least synthesis " \
               "workers (2 x 14 GiB, engine.rs:1437, memory.rs:36) = 75 GiB" in change
    assert _steps(by_setting(pool_advice([*start(251, 17), *failure(38.57)]))[
        "[memory] safety_margin"].change) == 15


def test_a_budget_at_or_below_the_floor_gets_no_margin_step_and_says_so() -> None:
    """28 GiB (the review's: one step left 5 GiB, below one partition) and 16 GiB (the amount
    was silently dropped): the margin cannot help the pool on this box."""
    for budget in (28, 16, 75):
        report = advise_pool([*start(budget, 2), *failure(38.57)])
        assert not report.advice  # nor a cap: 2 workers and an empty pool
        [said] = report.no_setting
        assert ("[memory] safety_margin is not advised: the budget (total_budget_gib="
                f"{budget}, 'memory budget initialized', engine.rs:1198) is already at or "
                "below the PoRep 32G SRS") in said.why
        assert "the margin cannot help the pool on this box" in said.why


def test_a_budget_within_one_step_of_the_floor_gets_no_margin_step() -> None:
    advice = pool_advice([*start(80, 5), *failure(38.57, "11.647839")])
    assert "[memory] safety_margin" not in by_setting(advice)
    assert any(e.startswith("[memory] safety_margin is not advised: the budget "
                            "(total_budget_gib=80, 'memory budget initialized', engine.rs:1198) "
                            f"is within one step (3 x {BUF} GiB = 11.6 GiB")
               for e in advice[0].evidence)


def test_cuzk_at_its_least_synthesis_workers_gets_no_synthesis_cap() -> None:
    """synth_worker_count = max(2, ...) (engine.rs:1437): with 2 workers no cap gives fewer."""
    advice = pool_advice([*start(200, 2), *failure(38.57, "11.647839")])
    assert "[pipeline] max_parallel_synthesis" not in by_setting(advice)
    [why] = [e for e in advice[0].evidence if "max_parallel_synthesis is not advised" in e]
    assert why == ("[pipeline] max_parallel_synthesis is not advised: cuzk already runs its "
                   "least synthesis workers (synth_worker_count=2, 'starting pipeline', "
                   "engine.rs:1839), and any cap gives at least 2 (engine.rs:1437, .max(2)): "
                   "lowering it changes nothing")


def test_a_pool_that_pinned_nothing_gets_no_synthesis_cap() -> None:
    """Not one 3.88 GiB buffer could be pinned with the pool empty: fewer partitions needing
    fewer buffers does not follow, and what they free is budget, which the pool is not in."""
    advice = pool_advice([*START, *failure(38.57), *failure(38.86)])
    assert "[pipeline] max_parallel_synthesis" not in by_setting(advice)
    [why] = [e for e in advice[0].evidence if "max_parallel_synthesis is not advised" in e]
    assert f"not even one {BUF} GiB buffer could be pinned" in why
    assert "which the pool is not in (pinned_pool.rs:127-129, 194-198)" in why


def test_a_pool_that_pinned_some_lowers_the_synthesis_cap_to_the_partitions_it_pinned() -> None:
    # 4 partitions' worth pinned (12 buffers, 46.59 GiB) before the 13th failed.
    advice = by_setting(pool_advice([*START, *failure(38.57, "46.59", 0)]))
    cap = advice["[pipeline] max_parallel_synthesis"]
    assert cap.change.startswith("lower it to about 4. A guess, what the host let the pool pin:")
    assert "46.59 GiB (pool_total_gib=46.59, 'pinned pool checkout FAILED'" in cap.change
    assert cap.change.endswith(" = 4 partitions") and cap.step == LOWER


def test_a_pool_that_pinned_one_partition_lowers_the_cap_to_cuzks_least() -> None:
    cap = by_setting(pool_advice([*START, *failure(38.57, "11.647839", 0)]))[
        "[pipeline] max_parallel_synthesis"]
    assert cap.change.startswith("lower it to about 2, cuzk's least (engine.rs:1433-1437).")


def test_without_the_figures_the_settings_say_raise_and_lower_and_which_line_gives_the_amount(
        ) -> None:
    """At WARN only the failures are written: no worker count, no budget."""
    warn_only = failure(38.57, "7.765226", 2)
    advice = by_setting(pool_advice(warn_only))
    margin = advice["[memory] safety_margin"].change
    assert margin.startswith("raise it if total_budget is \"auto\"")
    # The step is the failing line's; the budget to count the steps from is not in the log.
    assert "in steps of one partition's pinned buffers (3 x" in margin
    assert margin.endswith("the budget now is not in the log read (total_budget_gib, 'memory "
                           "budget initialized', engine.rs:1198): count the steps from it")
    assert "never take the budget to" in margin.lower() and "= 75 GiB or below" in margin
    # The cap's figures are both WARN lines': its amount needs no INFO line.
    assert advice["[pipeline] max_parallel_synthesis"].change.startswith("lower it to about 2")


def test_the_buffer_size_is_the_failing_lines_not_a_later_buffer_of_another_circuit() -> None:
    """A SnapDeals buffer (81M constraints, 2.41 GiB) pinned after the PoRep pin failed: the
    partitions the pool held are PoRep's (4), not 46.59 / 3 x 2.41 = 6."""
    snap_gib = 81_000_000 * 32 / 2**30
    snap = line(39.0, "INFO", "cuzk_core::pinned_pool",
                f"pinned pool: allocated new buffer size_gib={snap_gib} total_buffers=13 "
                f"total_gib={46.59 + snap_gib}")
    advice = by_setting(pool_advice([*START, *failure(38.57, "46.59"), snap]))
    cap = advice["[pipeline] max_parallel_synthesis"].change
    assert cap.startswith("lower it to about 4.") and cap.endswith(" = 4 partitions")
    assert f"3 buffers x {BUF} GiB, num_constraints={CONSTRAINTS} x 32 B" in cap
    assert f"(3 x {BUF} GiB = 11.6 GiB" in advice["[memory] safety_margin"].change


def test_without_a_failed_checkout_line_no_advice_cites_one() -> None:
    """Only the two cudaHostAlloc lines read: what the pool held is its INFO lines' figure
    (initialized, nothing allocated), cited as theirs, never as 'pinned pool checkout FAILED'."""
    advice = pool_advice([*START, *failure(38.57)[:2]])
    said = [a.change for a in advice] + advice[0].evidence
    assert not any("'pinned pool checkout FAILED'" in text for text in said)
    assert not any("pool_total_gib" in text for text in said)
    [why] = [e for e in advice[0].evidence if "max_parallel_synthesis is not advised" in e]
    assert "(total_gib=0, the pool's INFO lines ('CUDA pinned memory pool initialized'" in why
    assert f"size_gib={BUF}, 'cudaHostAlloc failed' (WARN), pinned_pool.rs:61" in \
        by_setting(advice)["[memory] safety_margin"].change


def test_a_failure_saying_the_pool_held_buffers_is_never_read_as_a_pool_that_pinned_none(
        ) -> None:
    """pool_total_gib=46.59 proves 12 buffers pinned, though no INFO line of the pool's was read
    (the review's: 'the pool pinned no buffer', 'pool holds 0.0 GiB in 0 buffer(s)')."""
    advice = pool_advice([*START, *failure(38.57, "46.59")])
    evidence = advice[0].evidence
    assert not any("pinned no buffer" in e or "holds 0.0 GiB" in e for e in evidence)
    assert "pool holds 46.6 GiB (buffer count not logged), 0 free" in evidence
    assert any(e.startswith("whether the pool churned before its failures is not known: a "
                            "failed checkout says it held 46.59 GiB") for e in evidence)
    # Churn could have come unseen: the churn knob is named, as a guess saying why.
    knob = by_setting(advice)["[pipeline] max_gpu_queue_depth"]
    assert knob.guess and "not visible in the lines read" in knob.guess_why


def test_a_pool_whose_buffer_count_is_not_logged_says_so_in_words_not_a_question_mark() -> None:
    """A failed checkout gives the pool's GiB and free buffers, not how many it holds: the H200
    pageable run's evidence read "pool holds 0.0 GiB in ? buffer(s), 0 free", a "?" inside a
    sentence. What was not logged is said so. (With the pool's start line read, it held 0.)"""
    no_pool_start = [text for text in START if "pinned memory pool initialized" not in text]
    for lines, words in (
            ([*no_pool_start, *failure(38.57)],
             "pool holds 0.0 GiB (buffer count not logged), 0 free"),
            ([*START, *failure(38.57, "46.59")],
             "pool holds 46.6 GiB (buffer count not logged), 0 free"),
            ([*START, *failure(38.57)], "pool holds 0.0 GiB in 0 buffer(s), 0 free")):
        evidence = pool_advice(lines)[0].evidence
        assert words in evidence, evidence
        assert not any("?" in e for e in evidence if e.startswith("pool holds")), evidence


# --- the figures of the failure's own run and daemon ---

def test_a_failure_before_a_restart_is_advised_by_its_own_runs_figures() -> None:
    """Run 1 (20 workers) failed holding 4 partitions; cuzk restarted with 4 workers. The cap is
    run 1's arithmetic (to about 4), not "below 4" of the new run's count, and the evidence says
    the run since has other figures."""
    advice = pool_advice([*START, *failure(38.57, "46.59"), *start(512, 4, t=40.0)])
    cap = by_setting(advice)["[pipeline] max_parallel_synthesis"].change
    assert cap.startswith("lower it to about 4. A guess")
    assert any(e.startswith("the pinned pool's figures are the failing run's (synth_worker_count"
                            "=20, total_budget_gib=512, as its start gave them before the "
                            "failure); cuzk started again since with synth_worker_count=4, "
                            "total_budget_gib=512") for e in advice[0].evidence)


def _two_daemons() -> list[LogEvent]:
    """A PoRep daemon (20 workers, 512 GiB) in a.log, fine; a second (2 workers, 28 GiB) in
    b.log whose pin failed, in time order as a fleet's tail reads them."""
    def own(t: float, budget: int, workers: int, listen: str) -> list[str]:
        lines = start(budget, workers, t)
        return [lines[0], line(t + 0.005, "INFO", "cuzk_daemon",
                               f"configuration loaded listen={listen}"), *lines[1:]]
    parser = LogParser(offline=True)
    events: list[LogEvent] = []
    for stream, lines in (("a.log", own(36.0, 512, 20, "127.0.0.1:9820")),
                          ("b.log", [*own(37.0, 28, 2, "127.0.0.1:9821"), *failure(38.57)])):
        for i, text in enumerate(lines):
            events += parser.parse_line(text, stream, i, 0.0)
    return sorted(events + parser.flush(), key=lambda e: e.t_wall_s)


def test_another_daemons_failure_takes_no_figure_of_the_first_daemons_start() -> None:
    facts = PipelineFacts()
    for e in _two_daemons():
        facts.feed(e)
    start_s = max(e.t_wall_s for e in _two_daemons()) + 1.0
    gap = starved_gap(facts, [line(start_s - 1.0, "INFO", "x", "y")])
    margin = by_setting(advise([gap], facts.view()).advice)["[memory] safety_margin"].change
    # Not the first daemon's 512 GiB budget (37 steps): its budget is not known here.
    assert "step(s) fit" not in margin and "total_budget_gib=512" not in margin
    assert ("the budget now is not known: the failure is another daemon's (its lines in b.log)"
            in margin)


# --- the churn knob: a guess where the log hides churn, none where the pool pinned nothing ---

def test_at_warn_max_gpu_queue_depth_is_a_guess_since_churn_is_not_visible() -> None:
    advice = pool_advice(failure(38.57, "7.765226", 2))
    knob = by_setting(advice)["[pipeline] max_gpu_queue_depth"]
    assert knob is advice[-1] and knob.guess
    assert "whether the pool churned is not visible at this log level" in knob.guess_why
    assert "run cuzk at INFO (RUST_LOG=info)" in knob.guess_why


def test_a_pool_that_pinned_nothing_in_an_info_log_did_not_churn() -> None:
    """INFO lines read, none of the pool's: it pinned no buffer, the evictor had none to free;
    said so, not "not known", and the churn knob is not advised."""
    advice = pool_advice([*START, *failure(38.57)])
    assert "[pipeline] max_gpu_queue_depth" not in by_setting(advice)
    evidence = advice[0].evidence
    assert any(e.startswith("no churn before its failures: INFO lines were read") for e in evidence)
    assert not any("is not known" in e for e in evidence)
    assert any("max_gpu_queue_depth, the guess for churn, is not advised" in e for e in evidence)


# --- the thread settings: the values the daemon's start logged ---

def _synthesis_gap() -> Gap:
    """A synthesis wait with free synthesis workers: the CPU settings are the advice."""
    state = ProverState(0.0, "cuzk", cause="waits_on_synthesis", synthesizing=4,
                        synthesis_workers=18, memory_total_bytes=None)
    return Gap(gap_id=1, gpu=0, kind="host_stall", start_mono_ns=0, start_s=1_796_000_000.0,
               end_mono_ns=10**9, end_s=1_796_000_001.0, duration_s=1.0,
               pcie_rx_bytes_per_s=1e6, pcie_tx_bytes_per_s=1e6, link_bytes_per_s=63e9,
               host=HostEvidence(), log_events=[], prover_cause="waits_on_synthesis",
               prover_states=[state], prover_evidence=[])


def thread_advice(view: PipelineView) -> dict[str, Advice]:
    return by_setting(advise([_synthesis_gap()], view).advice)


def test_the_pipeline_reads_the_thread_pools_from_the_daemons_start() -> None:
    view = offline_facts(START).view()
    # No 'set CUZK_GPU_THREADS' line before the rayon line: gpu_threads = 0 (main.rs:85-91).
    assert (view.gpu_threads, view.rayon_threads) == (0, 96)
    gpu = line(36.005, "INFO", "cuzk_daemon",
               "set CUZK_GPU_THREADS for C++ groth16_pool gpu_threads=32")
    view = offline_facts([START[0], gpu, *START[1:]]).view()
    assert (view.gpu_threads, view.rayon_threads) == (32, 96)
    # A log without the daemon's start says neither.
    view = offline_facts(failure(38.57)).view()
    assert (view.gpu_threads, view.rayon_threads) == (None, None)


def test_synthesis_threads_says_the_logged_rayon_threads() -> None:
    threads = thread_advice(PipelineView(synth_workers=18, rayon_threads=96))[
        "[synthesis] threads"]
    assert threads.change.startswith("the log says rayon_threads=96 ('rayon global thread pool "
                                     "configured rayon_threads' (main.rs:111)")
    assert "raise it above 96 if the host has more CPUs, else leave it" in threads.change


def test_synthesis_threads_without_its_line_says_if_unset() -> None:
    threads = thread_advice(PipelineView(synth_workers=18))["[synthesis] threads"]
    assert threads.change.startswith("leave it at 0 (all CPUs) if unset, or raise it if set "
                                     "lower: no 'rayon global thread pool configured")


def test_gpu_threads_already_32_or_fewer_is_not_advised() -> None:
    report = advise([_synthesis_gap()], PipelineView(synth_workers=18, gpu_threads=32))
    assert "[gpus] gpu_threads" not in by_setting(report.advice)
    assert any(e.startswith("[gpus] gpu_threads is not advised: the log says gpu_threads=32")
               for e in report.advice[0].evidence)


def test_gpu_threads_above_32_is_lowered_to_32_saying_the_logged_value() -> None:
    gpu = thread_advice(PipelineView(synth_workers=18, gpu_threads=96))["[gpus] gpu_threads"]
    assert gpu.change.startswith("32 rather than 96: the log says gpu_threads=96")
    assert gpu.pulls == (Pull("[gpus] gpu_threads", False),)


def test_gpu_threads_of_0_names_the_env_cuzk_honours_then() -> None:
    gpu = thread_advice(PipelineView(synth_workers=18, gpu_threads=0, rayon_threads=96))[
        "[gpus] gpu_threads"]
    assert gpu.change.startswith("32 rather than 0 on a many-core box: the log's start has")
    assert "unless CUZK_GPU_THREADS is set in cuzk's environment" in gpu.change


def test_gpu_threads_without_the_daemons_start_says_if_unset() -> None:
    gpu = thread_advice(PipelineView(synth_workers=18))["[gpus] gpu_threads"]
    assert gpu.change.startswith("32 on a many-core box, if it is unset (0: all CPUs, unless "
                                 "CUZK_GPU_THREADS is set")
    assert "no start of the daemon was read" in gpu.change
