"""The finer cause of an idle gap, from the prover's own `/status`: the classifier's rules, and
gaps detected live with snapshots polled over real HTTP from a server scripted through the
states of cuzk-status.md."""

from __future__ import annotations

import json

from cuzk_fakes import (
    DISPATCH_STALL,
    INSIDE_WORKERS,
    WAITS_ON_BUDGET,
    WAITS_ON_SYNTHESIS,
    cuzk_doc,
)
from parsed_logs import fed

from gapwatch.base.clock import FakeClock
from gapwatch.core.config import DetectorConfig
from gapwatch.core.detector import GapDetector
from gapwatch.core.models import Gap, GpuInfo, GpuSample, ProverStatus
from gapwatch.core.prover import NoProver
from gapwatch.cuzk.causes import (
    decide_cause,
    gap_state,
    snapshot_cause,
    snapshot_evidence,
    synthesis_drift,
    worker_letters,
)
from gapwatch.cuzk.pipeline import Capacity, PipelineFacts
from gapwatch.cuzk.prover import CuzkGap, CuzkProver
from gapwatch.cuzk.status import parse_status
from gapwatch.engine.session import Session, default_header
from gapwatch.engine.store import SeriesStore
from gapwatch.sources.cuzk_status import StatusPoller
from gapwatch.sources.cuzk_status_server import CuzkStatusServer


def _status(doc: dict[str, object], t: float = 10.0) -> ProverStatus:
    return parse_status(json.dumps(doc).encode(), "p", int(t * 1e9), t, 1.0)


def synthesis_capacity(st: ProverStatus) -> Capacity | None:
    """cuzk's worker count as gapwatch derives it without a log: from the budget and the
    operator's `[cuzk] max_parallel_synthesis` (cuzk's default, 18, given here)."""
    return PipelineFacts(18).capacity(st)


def test_each_snapshot_names_where_an_idle_gpu_waits() -> None:
    assert snapshot_cause(_status(WAITS_ON_SYNTHESIS), 0) == "waits_on_synthesis"
    assert snapshot_cause(_status(DISPATCH_STALL), 0) == "dispatch_stall"
    assert snapshot_cause(_status(INSIDE_WORKERS), 0) == "inside_workers"
    assert snapshot_cause(_status(cuzk_doc(done=10)), 0) == "no_work"
    # Partitions wait for the budget while synthesis workers are free.
    assert snapshot_cause(_status(WAITS_ON_BUDGET), 0, Capacity(18, "budget")) == \
        "waits_on_budget"
    # Synthesis running below its workers, nothing pending or ready: the GPU still waits on
    # it; the evidence says the workers are not the limit.
    few = _status(cuzk_doc(synthesizing=4))
    assert snapshot_cause(few, 0, Capacity(18, "budget")) == "waits_on_synthesis"
    assert "4 of 18 synthesis workers busy (14 synthesis worker(s) free" in \
        " ".join(snapshot_evidence(few, 0, "waits_on_synthesis", Capacity(18, "budget")))
    # Pending partitions, workers and budget free: only the pacer (when on) explains it.
    held = _status(cuzk_doc(pending=8, total_gib=750))
    assert snapshot_cause(held, 0, Capacity(18, "log"), pacer_on=True) == "pacer_hold"
    assert snapshot_cause(held, 0, Capacity(18, "log")) is None


def test_every_synthesis_worker_busy_is_judged_by_cuzks_worker_count_never_max_concurrent(
) -> None:
    """What the issue found on a real-shaped answer: 18 workers synthesising, 83 in
    `max_concurrent` (a 750 GiB budget), nothing in synth_done, the GPU idle."""
    st = _status(WAITS_ON_SYNTHESIS)
    assert st.synthesis_max == 83 and st.partition_counts["synthesizing"] == 18
    assert snapshot_cause(st, 0, synthesis_capacity(st)) == "waits_on_synthesis"
    said = snapshot_evidence(st, 0, "waits_on_synthesis", synthesis_capacity(st))
    assert "18 of 18 synthesis workers busy (every synthesis worker busy" in " ".join(said)
    assert any("max_concurrent=83 is the memory budget over the smallest partition" in e
               for e in said)


def test_a_worker_count_not_read_is_unknown_and_no_rule_judges_every_worker_busy_on_it(
) -> None:
    """F11: cuzk ran 3 synthesis workers (its `max_parallel_synthesis = 3`) on a 512 GiB
    budget; gapwatch started after its `starting pipeline` line and took cuzk's default cap
    (18) for it: `1/~18`, workers read free, `waits_on_budget` and `pacer_hold` said of
    snapshots whose 3 workers were all busy. Without the log's count or the operator's cap
    the count is not known, and neither rule fires (nor its opposite)."""
    short = _status(cuzk_doc(synthesizing=3, pending=6, total_gib=512, available_gib=3.5))
    assert PipelineFacts().capacity(short) is None
    assert snapshot_cause(short, 0, PipelineFacts().capacity(short)) is None
    held = _status(cuzk_doc(synthesizing=3, pending=6, total_gib=512))
    assert snapshot_cause(held, 0, PipelineFacts().capacity(held), pacer_on=True) is None
    said = " ".join(snapshot_evidence(short, 0, "waits_on_synthesis", None))
    assert "3 partition(s) synthesizing; how many synthesis workers cuzk runs is not known" \
        in said and "of 18" not in said
    # Fewer busy than cuzk's least (2 workers, whatever its cap): a worker is free.
    one = _status(cuzk_doc(synthesizing=1, pending=6, total_gib=512, available_gib=3.5))
    assert snapshot_cause(one, 0, None) == "waits_on_budget"
    # The operator's cap gives cuzk's formula its second term: 3 of 3 busy.
    assert PipelineFacts(3).capacity(short) == Capacity(3, "budget")
    assert snapshot_cause(short, 0, Capacity(3, "budget")) == "waits_on_synthesis"
    # A budget that allows no more than cuzk's least decides the count alone.
    assert PipelineFacts().capacity(_status(cuzk_doc(total_gib=30))) == Capacity(2, "budget")


def test_active_is_only_a_cross_check_and_its_drift_is_said() -> None:
    st = _status(cuzk_doc(synthesizing=16, pending=2, active=19))
    assert synthesis_drift(st) == 3
    said = snapshot_evidence(st, 0, "waits_on_synthesis", Capacity(18, "log"))
    assert any("synthesis.active=19 but 16 partition(s) synthesizing" in e for e in said)
    # The count that decides is the partitions', not active's 19 >= 18.
    assert "16 of 18 synthesis workers busy" in " ".join(said)


def test_workers_count_per_gpu_while_synthesis_is_shared() -> None:
    # GPU 0's workers both prove, GPU 1's are idle while a partition waits in synth_done.
    doc = cuzk_doc(synth_done=1, synthesizing=18, active=18,
                   workers=("proving", "proving", "idle", "idle"), gpu_of=(0, 0, 1, 1))
    st = _status(doc)
    assert snapshot_cause(st, 0) == "inside_workers"
    assert snapshot_cause(st, 1) == "dispatch_stall"
    assert gap_state(st, 1).workers == "II"
    assert worker_letters(st.workers) == "PPII"


def test_a_worker_status_shows_idle_while_it_holds_its_next_partition_is_not_free() -> None:
    """status.rs's `partition_gpu_end(job, partition, worker_id)` sets that worker idle and
    clears its partition unconditionally, and cuzk calls it in the finalizer, which runs apart
    while the worker loops back once gpu_prove_start returns (engine.rs:3139-3185, 3238): a
    worker that picked up its next partition before its previous one's finalizer ended shows
    `idle`, that partition in `gpu` named by no worker. It is not counted free: such a snapshot
    read `dispatch_stall`, the advice "a worker showed idle while partitions waited"."""
    # Worker 0 proves partition 0; worker 1, marked idle, holds partition 1 (state gpu).
    clobbered = _status(cuzk_doc(synth_done=1, gpu=2, synthesizing=4,
                                 workers=("proving", "idle")))
    assert snapshot_cause(clobbered, 0) is None
    # Every gpu partition named by its worker: the idle worker is free, a dispatch stall.
    free = _status(cuzk_doc(synth_done=1, gpu=1, synthesizing=4, workers=("proving", "idle")))
    assert snapshot_cause(free, 0) == "dispatch_stall"
    assert snapshot_evidence(free, 0, "dispatch_stall", None) == [
        "1 partition(s) in synth_done while worker(s) 1 of GPU 0 idle"]
    # Two idle on GPU 1, one unnamed gpu partition: one of them is still free, and said so.
    doc = cuzk_doc(synth_done=1, gpu=3, synthesizing=4,
                   workers=("proving", "proving", "idle", "idle"), gpu_of=(0, 0, 1, 1))
    two_idle = _status(doc)
    assert snapshot_cause(two_idle, 1) == "dispatch_stall"
    assert any("1 partition(s) in state gpu named by no worker" in e and "1 of them counted free"
               in e for e in snapshot_evidence(two_idle, 1, "dispatch_stall", None))


def test_the_logs_holds_decide_a_gap_the_snapshots_show_an_idle_worker_holding_one() -> None:
    """The log shows both workers of GPU 0 holding a partition (GPU_PICKUP .. prove_start
    returned) while a third waited in the GPU queue; /status, polled during the gap, shows
    worker 1 idle (its previous partition's finalizer ended after its pickup). The gap waited
    inside the workers: it read `dispatch_stall` from both."""
    j, t0 = "porep-1000-7", 1_778_594_400.0
    lines = ["2026-05-12T14:00:00.000000Z  INFO cuzk_core::engine: starting cuzk engine "
             "pipeline_enabled=true",
             "2026-05-12T14:00:00.050000Z  INFO cuzk_core::engine: initializing GPU workers "
             "num_gpus=1 gpu_workers_per_device=2 total_workers=2 gpus=[0]"]
    for p in range(3):
        lines.append(f"TIMELINE,{5000 + p * 100},GPU_QUEUE,{j},partition={p}")
    lines += [f"TIMELINE,6000,GPU_PICKUP,{j},worker=0,partition=0",
              f"TIMELINE,6100,GPU_PICKUP,{j},worker=1,partition=1",
              f"TIMELINE,12000,GPU_PICKUP,{j},worker=0,partition=2"]
    facts = fed(PipelineFacts(), lines)
    acc = CuzkGap(0, t0 + 10.0, facts)
    acc.add_status(_status(cuzk_doc(synth_done=1, gpu=2, workers=("proving", "idle"),
                                    job=j), t0 + 10.5))
    view = acc.view(t0 + 11.0, t0 + 10.0, "host_stall", t0 + 11.0)
    assert view.cause == "inside_workers"
    assert "prover log: the wait is inside the workers" in view.words
    assert any("both GPU workers of GPU 0 held partitions" in e for e in view.evidence)


def test_a_gaps_cause_is_the_majority_during_it_else_the_one_just_before() -> None:
    assert decide_cause({"waits_on_synthesis": 3, "dispatch_stall": 1}, None) == \
        ("waits_on_synthesis", True)
    # Ties go in PROVER_CAUSES order: the most specific first.
    assert decide_cause({"waits_on_synthesis": 1, "inside_workers": 1}, None) == \
        ("inside_workers", True)
    assert decide_cause({}, "waits_on_synthesis") == ("waits_on_synthesis", False)
    assert decide_cause({}, None) == (None, False)


def test_snapshots_after_a_gaps_end_do_not_vote_for_it() -> None:
    acc = CuzkGap(0, 10.0, PipelineFacts())
    acc.add_status(_status(WAITS_ON_SYNTHESIS, 10.5))
    # Polled after the GPU resumed, but fed before the sample that closes the gap.
    acc.add_status(_status(INSIDE_WORKERS, 11.2))
    acc.add_status(_status(INSIDE_WORKERS, 11.4))
    view = acc.view(11.0, 10.0, "host_stall", 11.0)
    assert view.cause == "waits_on_synthesis" and "as of just before" not in view.words
    assert [s.t_s for s in view.states] == [10.5]
    # Still open: all of them count.
    assert acc.view(None, 10.0, "host_stall", 11.0).cause == "inside_workers"


PERIOD_NS = 100_000_000
T0_WALL = 1_796_000_000.0


def _session() -> tuple[Session, FakeClock]:
    gpus = [GpuInfo(index=0, link_bytes_per_s=63e9, sm_source="sim", pcie_source="sim")]
    header = default_header("test", gpus, 100.0)
    det = GapDetector(DetectorConfig(), gpus, period_s=0.1, prover=CuzkProver())
    return Session(header, SeriesStore(gpus, 0.1), detector=det), FakeClock(0, T0_WALL)


def _sample(clock: FakeClock, busy: bool) -> GpuSample:
    return GpuSample(0, clock.monotonic_ns(), clock.wall_s(), PERIOD_NS,
                     95.0 if busy else 0.5, 95.0 if busy else 1.0, 2e6, 1e6, "sim", "sim")


def _final_gaps(session: Session) -> list[Gap]:
    return [g for g in session.store.snapshot().gaps if g.end_s is not None and not g.retracted]


def test_gaps_polled_over_http_get_the_cause_the_prover_states_give() -> None:
    """Busy 3 s, then a 2 s gap, three times; during each gap the server answers the state of
    one rule, and a poll at every half second goes over real HTTP into the session."""
    busy_doc = cuzk_doc(synth_done=1, synthesizing=18, active=18, workers=("proving", "idle"))
    script = [(3.0, None), (2.0, WAITS_ON_SYNTHESIS), (3.0, None), (2.0, DISPATCH_STALL),
              (3.0, None), (2.0, INSIDE_WORKERS), (3.0, None)]
    current: list[dict[str, object]] = [busy_doc]
    session, clock = _session()
    with CuzkStatusServer(lambda: current[0]) as server:
        poller = StatusPoller(server.url, 1.0, 2.0, session.on_record, session.on_notice,
                              clock=clock)
        step = 0
        for seconds, doc in script:
            for _ in range(int(seconds * 10)):
                clock.advance_ns(PERIOD_NS)
                step += 1
                session.on_gpu_samples([_sample(clock, doc is None)])
                if step % 10 == 5:  # polls at x.5 s: well inside each 2 s gap
                    current[0] = doc if doc is not None else busy_doc
                    assert poller.poll_once() is not None
    gaps = _final_gaps(session)
    assert [g.prover_cause for g in gaps] == \
        ["waits_on_synthesis", "dispatch_stall", "inside_workers"]
    assert [g.kind for g in gaps] == ["host_stall"] * 3
    assert "prover status: the GPU waits on synthesis" in gaps[0].hint
    assert "synthesis did not keep up" not in gaps[0].hint  # the prover's words, not a guess
    assert "a dispatch stall inside the prover" in gaps[1].hint
    assert "the wait is inside the workers (copies, the GPU mutex, CPU work)" in gaps[2].hint
    # The evidence keeps the states seen during the gap and in the 2 s before it.
    assert [s.workers for s in gaps[2].prover_states] == ["PI", "PI", "PP", "PP"]
    assert len(session.store.snapshot().prover_statuses) == poller.status().ok == 18


def test_a_gap_shorter_than_the_poll_period_takes_the_state_just_before_and_says_so() -> None:
    session, clock = _session()
    for i in range(40):
        clock.advance_ns(PERIOD_NS)
        busy = not 20 <= i < 26  # one 0.6 s gap between polls
        if i == 18:
            session.on_record(_status(WAITS_ON_SYNTHESIS, clock.wall_s()))
        session.on_gpu_samples([_sample(clock, busy)])
    (gap,) = _final_gaps(session)
    assert gap.prover_cause == "waits_on_synthesis"
    assert "prover status (as of just before the gap): the GPU waits on synthesis" in gap.hint


def test_without_prover_snapshots_gaps_are_as_before() -> None:
    session, clock = _session()
    for i in range(40):
        clock.advance_ns(PERIOD_NS)
        session.on_gpu_samples([_sample(clock, not 20 <= i < 26)])
    (gap,) = _final_gaps(session)
    assert gap.prover_cause is None and gap.prover_states == []
    assert gap.hint.endswith("synthesis, a lock or the scheduler?")


def test_an_srs_list_gone_empty_with_nothing_in_flight_is_an_srs_load() -> None:
    """engine.rs `detailed_status` lists no SRS entry while the SRS manager's mutex is held (a
    load), and the job is registered only once its SRS is in: /status then shows no work."""
    idle = cuzk_doc(done=10)
    loading = {**idle, "pipelines": [], "allocations": {"srs": [], "pce": []}}
    acc = CuzkGap(0, 10.0, PipelineFacts())
    acc.facts.feed_status(_status(idle, 8.0))
    for t, doc in ((8.0, idle), (10.2, loading), (10.8, loading)):
        st = _status(doc, t)
        acc.facts.feed_status(st)
        acc.add_status(st)
    view = acc.view(11.0, 10.0, "host_stall", 11.0)
    assert view.cause == "srs_loading"
    assert "allocations.srs went empty at" in view.evidence[0]
    # Empty from the start (nothing loaded yet) says nothing.
    fresh = CuzkGap(0, 10.0, PipelineFacts())
    for t in (8.0, 10.2):
        st = _status(loading, t)
        fresh.facts.feed_status(st)
        fresh.add_status(st)
    assert fresh.view(11.0, 10.0, "host_stall", 11.0).cause == "no_work"


def test_a_detector_without_a_prover_finds_the_same_gaps_and_gives_no_prover_cause() -> None:
    """Any CUDA process (NVML and the copy trace, no prover package): the gaps and their kinds
    are found the same, a status snapshot and prover log lines change nothing, and the prover
    says what it lacks."""
    gpus = [GpuInfo(index=0, link_bytes_per_s=63e9, sm_source="sim", pcie_source="sim")]
    found: dict[str, list[Gap]] = {}
    for name, prover in (("none", None), ("cuzk", CuzkProver())):
        det = GapDetector(DetectorConfig(), gpus, period_s=0.1, prover=prover)
        session = Session(default_header("test", gpus, 100.0), SeriesStore(gpus, 0.1),
                          detector=det)
        clock = FakeClock(0, T0_WALL)
        for i in range(40):
            clock.advance_ns(PERIOD_NS)
            if i == 22:
                session.on_record(_status(WAITS_ON_SYNTHESIS, clock.wall_s()))
            session.on_gpu_samples([_sample(clock, not 20 <= i < 26)])
        found[name] = _final_gaps(session)
    (plain,), (cuzk,) = found["none"], found["cuzk"]
    assert (plain.kind, plain.start_s, plain.end_s) == (cuzk.kind, cuzk.start_s, cuzk.end_s)
    assert cuzk.prover_cause == "waits_on_synthesis"
    assert plain.prover_cause is None and plain.prover_states == [] and plain.prover_evidence == []
    assert plain.hint.endswith("synthesis, a lock or the scheduler?")
    assert NoProver().facts() is None
    assert "no prover cause" in NoProver().lacks()[0]


def test_cuzk_says_which_of_its_facts_it_lacks_until_its_log_and_status_arrive() -> None:
    prover = CuzkProver()
    assert [w.split(" (")[0] for w in prover.lacks()] == \
        ["no cuzk log line read", "no cuzk /status snapshot"]
    prover.feed_status(_status(WAITS_ON_SYNTHESIS, T0_WALL))
    assert [w.split(" (")[0] for w in prover.lacks()] == ["no cuzk log line read"]
