"""The PoSt lines of "What to change" claim only what the log showed: a late proof's cause is a
phase only where what was read ranks it, a WindowPoSt is said with a WindowPoSt's consequence,
failures are one line a cause (never one an error text), and the lines past those kept apart
keep their verdict without claiming an unknown failure. The report's PoSt table says no phase
"not read" that never ran, nor a 0.0 s part."""

from __future__ import annotations

from msgspec.structs import replace

from gapwatch.core.models import ProofTiming, ProverEvent
from gapwatch.core.prover_watch import MAX_TROUBLES, ProofTroubles
from gapwatch.cuzk.post_advice import ProofAdvice, proof_advice
from gapwatch.offline.prover_events import proof_lines


def _event(p: ProofTiming, job: str = "wdpost-1000-3-12345678", t: float = 1000.0
           ) -> ProverEvent:
    return ProverEvent(t_wall_s=t, kind="proof", level="error", message="-", job_id=job,
                       proof=p)


def _advice(*proofs: ProofTiming) -> list[ProofAdvice]:
    return proof_advice(ProofTroubles([_event(p, f"job-{i}", 1000.0 + i)
                                       for i, p in enumerate(proofs)]).troubles())


def _failed_window_post(sector: int, cause: str = "synthesis failed") -> ProofTiming:
    return ProofTiming("window-post", queue_s=0.0, synth_s=5.0, total_s=5.0, deadline_s=1800.0,
                       verdict="failed",
                       error=f"{cause}: sector {sector} vanilla proof invalid", cause=cause)


def test_a_failed_windowpost_says_its_partitions_sectors_never_a_winningposts_block() -> None:
    """It read "(no proof came of it: a WinningPoSt's block lost as a late one's)"."""
    [a] = _advice(_failed_window_post(7))
    assert a.words.startswith("1 WindowPoSt failed (no proof came of it: a WindowPoSt not "
                              "proved within its deadline faults its partition's sectors): "
                              "cuzk said 'synthesis failed: sector 7 vanilla proof invalid' "
                              "(engine.rs:2855): no cuzk setting: ")
    assert "WinningPoSt" not in a.words and "block" not in a.words


def test_a_windowpost_lost_in_a_restart_says_its_partitions_sectors_never_a_block() -> None:
    lost = ProofTiming("window-post", total_at_least_s=50.0, deadline_s=1800.0, done=False,
                       given_up="restart")
    [a] = _advice(lost)
    assert a.words.startswith("1 WindowPoSt lost in a restart of cuzk (in flight when it "
                              "started again: Curio waits for it until its ProveTimeout, a "
                              "WindowPoSt not proved within its deadline faults its "
                              "partition's sectors): no cuzk setting: ")
    assert "block" not in a.words


def test_a_winningposts_failure_and_loss_still_say_its_block() -> None:
    failed = ProofTiming("winning-post", total_s=2.5, deadline_s=30.0, verdict="failed",
                         error="GPU proving failed: x", cause="GPU proving failed")
    lost = ProofTiming("winning-post", total_at_least_s=5.0, deadline_s=30.0, done=False,
                       given_up="restart")
    said = [a.words for a in _advice(failed, lost)]
    assert said[0].startswith("1 WinningPoSt failed (no proof came of it: a WinningPoSt's "
                              "block lost as a late one's): ")
    assert "Curio waits for it until its ProveTimeout, a WinningPoSt's block lost)" in said[1]


def test_forty_windowposts_failed_by_one_cause_are_one_line_with_the_first_error() -> None:
    """40 `synthesis failed: sector N ...` gave 33 lines: one an error text up to the bound,
    then one that said "its error not kept ... no upstream words" of a known failure line."""
    [a] = _advice(*[_failed_window_post(n) for n in range(40)])
    assert (a.verdict, a.count, a.cause) == ("failed", 40, "synthesis failed")
    assert a.error == "synthesis failed: sector 0 vanilla proof invalid"
    assert ("cuzk said 'synthesis failed: sector 0 vanilla proof invalid' (the first of 40; "
            "the others differ only in their numbers) (engine.rs:2855)") in a.words
    assert "no upstream words" not in a.words and "not kept" not in a.words


def test_panics_that_differ_only_in_tokios_task_ids_are_one_failure_said_so() -> None:
    """cuzk's `GPU prove start task panicked` carries tokio's JoinError, `task {id} panicked
    with message ...`, a task id of its own for every panic: three alike read "whose errors
    differ" as if three failures."""
    panics = [ProofTiming("winning-post", total_s=3.0, deadline_s=30.0, verdict="failed",
                          error=f"GPU prove start task panicked: task {n} panicked with message "
                                '"CUDA error: out of memory"',
                          cause="GPU prove start task panicked") for n in (41, 57, 73)]
    [a] = _advice(*panics)
    assert "(the first of 3; the others differ only in their numbers)" in a.words
    assert "whose errors differ" not in a.words
    other = replace(panics[2], error="GPU prove start task panicked: task 80 panicked with "
                                     'message "illegal memory access"')
    [b] = _advice(*panics[:2], other)
    assert "(the first of 3, whose errors differ: each proof's row says its own)" in b.words


def test_the_json_says_failures_grouped_whose_errors_differ_only_in_numbers_as_the_text_does(
) -> None:
    """The text said "the others differ only in their numbers"; `proof_advice`'s JSON had
    only the first error, so a reader could not tell one failure said of three tasks from one
    failure said once: `numbers_differ` (and `errors_differ`, other words) say it."""
    panics = [ProofTiming("winning-post", total_s=3.0, deadline_s=30.0, verdict="failed",
                          error=f"GPU prove start task panicked: task {n} panicked",
                          cause="GPU prove start task panicked") for n in (41, 57)]
    [a] = _advice(*panics)
    assert (a.json()["numbers_differ"], a.json()["errors_differ"]) == (True, False)
    other = replace(panics[1], error="GPU prove start task panicked: illegal memory access")
    [b] = _advice(*panics, other)
    # Other words are said first, in the text and the JSON alike.
    assert "whose errors differ" in b.words
    assert (b.json()["numbers_differ"], b.json()["errors_differ"]) == (False, True)
    [c] = _advice(panics[0], panics[0])
    assert (c.json()["numbers_differ"], c.json()["errors_differ"]) == (False, False)


def test_failures_by_two_causes_are_two_lines_each_with_its_upstream_words() -> None:
    proofs = [_failed_window_post(n) for n in range(3)]
    proofs += [_failed_window_post(n, "GPU proving failed") for n in range(2)]
    said = {(a.cause, a.count): a.words for a in _advice(*proofs)}
    assert set(said) == {("synthesis failed", 3), ("GPU proving failed", 2)}
    assert "(engine.rs:977)" in said[("GPU proving failed", 2)]


def test_one_error_said_by_every_proof_of_a_cause_is_said_once_without_a_first_of() -> None:
    same = [ProofTiming("winning-post", total_s=2.5, deadline_s=30.0, verdict="failed",
                        error="GPU prove start failed: Unsatisfiable",
                        cause="GPU prove start failed") for _ in range(3)]
    [a] = _advice(*same)
    assert "cuzk said 'GPU prove start failed: Unsatisfiable' (engine.rs:3282)" in a.words
    assert "the first of" not in a.words


def test_gpu_prove_start_failed_is_read_and_said_unwritable_by_curio_e0294b0f() -> None:
    """`GPU prove start failed` (engine.rs:3282) is still read, a later build may write it, but
    at curio e0294b0f `gpu_prove_start` fails only with bellperson's `MalformedSrs`, which
    cuzk's SupraSeal SRS never gives: the words say so and to report it upstream. (The
    simulator's `post-failed` pinned these words while it wrote that line; it writes the
    prove start's panic now, as e0294b0f does.)"""
    [a] = _advice(ProofTiming("winning-post", total_s=2.5, deadline_s=30.0, verdict="failed",
                              error="GPU prove start failed: MalformedSrs",
                              cause="GPU prove start failed"))
    assert "(engine.rs:3282): no cuzk setting: " in a.words
    assert "MalformedSrs" in a.words and "curio e0294b0f does not write this line" in a.words
    assert "report it upstream" in a.words


def test_causes_past_those_kept_apart_are_counted_together_never_said_an_unknown_failure(
        ) -> None:
    """A recording's own causes, more than gapwatch keeps apart: the rest are one line of their
    kind and verdict that says so, never "its error not kept" or "no upstream words"."""
    proofs = [ProofTiming("window-post", total_s=5.0, deadline_s=1800.0, verdict="failed",
                          error=f"odd {n}", cause=f"odd failure line {n}")
              for n in range(MAX_TROUBLES + 5)]
    said = _advice(*proofs)
    assert len(said) == MAX_TROUBLES + 1
    [rest] = [a for a in said if a.cause is None]
    assert rest.count == 5
    assert rest.words == (f"5 more WindowPoSt failed, by causes past the {MAX_TROUBLES} "
                          "gapwatch keeps apart: their causes not kept here (each proof's row "
                          "in the PoSt table, and --json, says its own)")


def test_a_phase_read_ranks_first_only_where_the_part_not_read_is_no_longer() -> None:
    """33.1 s not read beside 1.7 s of GPU read: no phase is the longest the data can rank; 0.9 s
    not read beside 1.7 s: the GPU is, whatever phase the 0.9 s was."""
    late = ProofTiming("winning-post", gpu_wait_s=0.2, gpu_s=1.7, finalize_s=0.0, total_s=35.0,
                       deadline_s=30.0, verdict="late")
    assert late.unread() == (["queue", "synthesis"], 35.0 - 1.9)
    assert late.longest_phase() is None
    short = ProofTiming("winning-post", gpu_wait_s=0.2, gpu_s=1.7, finalize_s=0.0, total_s=2.8,
                        deadline_s=30.0, verdict="at_risk")
    assert short.longest_phase() == "gpu"
    begun_unread = ProofTiming("winning-post", synth_s=3.0, gpu_wait_s=0.2, gpu_s=1.7,
                               finalize_s=0.0, total_at_least_s=40.0, deadline_s=30.0,
                               verdict="late")
    assert begun_unread.longest_phase() is None  # its queue may be of any length


def test_a_failed_proofs_phases_after_its_failure_are_never_said_not_read() -> None:
    """Each failed row of `post-failed` read "not read: its finalize (0.0 s of its 2.9 s)":
    it failed on the GPU; its finalize never ran."""
    failed = ProofTiming("winning-post", queue_s=0.0, synth_s=2.1, gpu_wait_s=0.5, gpu_s=0.3,
                         total_s=2.9, deadline_s=30.0, verdict="failed",
                         error="GPU prove start failed: Unsatisfiable",
                         cause="GPU prove start failed")
    assert failed.unread() == ([], 0.0)
    text = "\n".join(proof_lines([_event(failed, "winpost-1000-1a2b3c02")]))
    assert "not read" not in text


def test_a_phase_not_read_that_took_no_time_is_never_said() -> None:
    """Its arrival not read, its total counts from its synthesis start: its queue is no part of
    it, and "not read: its queue (0.0 s of its 4.0 s)" said nothing but noise."""
    p = ProofTiming("winning-post", synth_s=2.0, gpu_wait_s=0.3, gpu_s=1.7, finalize_s=0.0,
                    total_s=4.0, deadline_s=30.0)
    text = "\n".join(proof_lines([_event(p, "winpost-1000-1a2b3c01")]))
    assert "not read" not in text
    read_apart = ProofTiming("winning-post", synth_s=2.0, gpu_s=1.7, finalize_s=0.0,
                             total_s=6.0, deadline_s=30.0)
    text = "\n".join(proof_lines([_event(read_apart, "winpost-1000-1a2b3c01")]))
    assert "      not read: its queue and GPU wait (2.3 s of its 6.0 s)" in text
