"""The pinned-pool and thread advice says how much where the log gives the figures, and reads
what the log already shows: the safety margin raised by what the pool failed to pin (every
synthesis worker's 3 a/b/c buffers, less what the pool held), the synthesis cap lowered to the
partitions the pool did pin, and neither where a figure is missing ("raise it", and which line
would give the amount); no synthesis cap where not one buffer could be pinned;
`[pipeline] max_gpu_queue_depth` as a guess where the log at WARN hides churn; the thread
settings with the values the daemon's start logged, "if unset" where none was read
(cuzk-upstream-paths.md 2.3-2.4, 3.1, 3.3-3.4; cuzk-log-formats.md 1.6, 3.3)."""

from __future__ import annotations

from gapwatch.core.evidence_types import EventEvidence, HostEvidence, ProverState
from gapwatch.core.models import Gap, LogEvent
from gapwatch.cuzk.advice import Advice, advise
from gapwatch.cuzk.knobs import LOWER, RAISE, Pull
from gapwatch.cuzk.pipeline import PipelineFacts, PipelineView
from gapwatch.cuzk.prover import CuzkGap
from gapwatch.logs.parse import LogParser

T0 = "2026-12-05T16:18:"
BUF = "3.882613"


def line(second: float, level: str, target: str, message: str) -> str:
    return f"{T0}{second:09.6f}Z {level:>5} {target}: {message}"


#: The daemon's start as upstream writes it (the sim:pageable run's figures).
START = [
    line(36.0, "INFO", "cuzk_daemon", "cuzk-daemon starting"),
    line(36.01, "INFO", "cuzk_daemon", "rayon global thread pool configured rayon_threads=96"),
    line(36.02, "INFO", "cuzk_core::engine", "memory budget initialized total_budget_gib=512"),
    line(36.03, "INFO", "cuzk_core::engine", "CUDA pinned memory pool initialized"),
    line(36.04, "INFO", "cuzk_core::engine", "starting cuzk engine pipeline_enabled=true"),
    line(36.05, "INFO", "cuzk_core::engine",
         "starting pipeline: synthesis task + GPU workers (budget-gated) configured_lookahead=1 "
         "max_partitions_in_budget=36 effective_lookahead=32 synth_worker_count=20 num_gpus=2"),
]


def failure(second: float, pool_total_gib: str = "0", pool_free: int = 0) -> list[str]:
    """One failed pin, in upstream's three WARN lines (pinned_pool.rs:61, 202; pipeline.rs:302)."""
    return [
        line(second, "WARN", "cuzk_core::pinned_pool",
             f"cudaHostAlloc failed size_gib={BUF} cuda_err=2"),
        line(second + 0.001, "WARN", "cuzk_core::pinned_pool",
             f"pinned pool: cudaHostAlloc failed size_gib={BUF}"),
        line(second + 0.002, "WARN", "cuzk_core::pipeline",
             "pinned pool checkout FAILED — falling back to unpinned num_constraints=130278869 "
             f"pool_free={pool_free} pool_total_gib={pool_total_gib}"),
    ]


def parsed(lines: list[str]) -> list[LogEvent]:
    parser = LogParser(offline=True)
    out: list[LogEvent] = []
    for i, text in enumerate(lines):
        out += parser.parse_line(text, "stdout", i, 0.0)
    return out + parser.flush()


def facts_of(lines: list[str]) -> PipelineFacts:
    facts = PipelineFacts()
    for e in parsed(lines):
        facts.feed(e)
    return facts


def starved_gap(facts: PipelineFacts, lines: list[str]) -> Gap:
    """A pcie_starved gap of GPU 0 just after the log's last line, with what cuzk's prover
    gives it."""
    start_s = max(e.t_wall_s for e in parsed(lines)) + 1.0
    view = CuzkGap(0, start_s, facts).view(start_s + 2.0, start_s, "pcie_starved", start_s - 60.0)
    return Gap(gap_id=1, gpu=0, kind="pcie_starved", start_mono_ns=0, start_s=start_s,
               end_mono_ns=2 * 10**9, end_s=start_s + 2.0, duration_s=2.0,
               pcie_rx_bytes_per_s=2e9, pcie_tx_bytes_per_s=1e6, link_bytes_per_s=63e9,
               host=HostEvidence(),
               log_events=[EventEvidence(0.0, "", partition=3, warning="pinned_pool_fallback")],
               prover_cause=view.cause, prover_evidence=view.evidence,
               prover_facts=view.facts)


def pool_advice(lines: list[str]) -> list[Advice]:
    facts = facts_of(lines)
    return advise([starved_gap(facts, lines)], facts.view()).advice


def by_setting(advice: list[Advice]) -> dict[str, Advice]:
    return {a.setting: a for a in advice}


# --- how much: the safety margin and the synthesis cap from the log's own figures ---

def test_the_safety_margin_is_raised_by_what_the_pool_failed_to_pin_with_each_figures_line(
        ) -> None:
    lines = [*START, *failure(38.57)]
    margin = by_setting(pool_advice(lines))["[memory] safety_margin"]
    change = margin.change
    # 20 workers x 3 buffers x 3.882613 GiB = 232.96 GiB, less the 0 GiB the pool held.
    assert change.startswith("raise it by about 233 GiB if total_budget is \"auto\"")
    assert "with an explicit total_budget, lower that by as much" in change
    # 512 GiB budget - 233 GiB: the budget that leaves.
    assert "total_budget_gib=512, 'memory budget initialized', engine.rs:1198" in change
    assert "becomes about 279 GiB" in change
    assert "synth_worker_count=20, 'starting pipeline', engine.rs:1839" in change
    assert f"x 3 buffers (a, b, c) x {BUF} GiB (size_gib={BUF}, 'cudaHostAlloc failed'" in change
    assert "pool_total_gib=0, 'pinned pool checkout FAILED' (WARN), pipeline.rs:302" in change
    assert "A guess, what the pool failed to pin" in change and margin.guess
    # The headline's direction is unchanged: raise it (the budget down).
    assert margin.step == RAISE and margin.pulls == (Pull("[memory] total_budget", False),)


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
    # 232.96 - 46.59 = 186.4 GiB the pool failed to pin.
    assert advice["[memory] safety_margin"].change.startswith("raise it by about 186 GiB")


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
    assert margin.endswith("the amount needs, not in the log read: synth_worker_count "
                           "('starting pipeline', engine.rs:1839)")
    assert "by about" not in margin
    # The cap's figures are both WARN lines': its amount needs no INFO line.
    assert advice["[pipeline] max_parallel_synthesis"].change.startswith("lower it to about 2")


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
    view = facts_of(START).view()
    # No 'set CUZK_GPU_THREADS' line before the rayon line: gpu_threads = 0 (main.rs:85-91).
    assert (view.gpu_threads, view.rayon_threads) == (0, 96)
    gpu = line(36.005, "INFO", "cuzk_daemon",
               "set CUZK_GPU_THREADS for C++ groth16_pool gpu_threads=32")
    view = facts_of([START[0], gpu, *START[1:]]).view()
    assert (view.gpu_threads, view.rayon_threads) == (32, 96)
    # A log without the daemon's start says neither.
    view = facts_of(failure(38.57)).view()
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
