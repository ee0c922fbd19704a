"""One home for each display rule, and one phrasing of each fact (issues 20 and 21): rates and
sizes with their units, the share of a link, the link's shape, the link a GPU is judged
against, a GPU's state before any verdict, the look of each gap kind, counts by kind; and the
hint phrasings that used to contradict themselves or repeat."""

from __future__ import annotations

from msgspec.structs import replace

from gapwatch.core import fmt
from gapwatch.core.config import DetectorConfig
from gapwatch.core.evidence_types import (
    NO_COPIES,
    NO_HOST,
    CopiesEvidence,
    CopyKindEvidence,
    EventEvidence,
)
from gapwatch.core.explain import Evidence, GapFacts, hint_of
from gapwatch.core.hints import JOB_CHARS, PAGEABLE_SEEN_WORDS, traced_copy_words
from gapwatch.core.ledger import GapLedger, Tally, counts_by_kind
from gapwatch.core.models import GAP_KINDS, Gap, GpuInfo
from gapwatch.core.prover import ProverView, UnpinnedByDesign, UnpinnedSpan
from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.cuzk.advice import STALL_WORDS, stall_of
from gapwatch.cuzk.partitions import PartitionTiming, RunTimeline
from gapwatch.cuzk.pipeline import PipelineView
from gapwatch.engine.summary import gap_counts_text
from gapwatch.offline.report_text import _partition_lines
from gapwatch.sinks.snapshot import hint_lines
from gapwatch.ui.app import GapwatchApp
from gapwatch.ui.kinds import KINDS, kind_css, legend

LINK = 63e9


def test_a_rate_reads_with_its_unit_and_an_idle_link_in_mb_per_s() -> None:
    assert fmt.rate(4.2e9) == "4.2 GB/s"
    assert fmt.rate(0.63e9) == "0.63 GB/s"
    assert fmt.rate(2.1e6) == "2 MB/s"  # not "0.00 GB/s": an idle link still reads something
    assert fmt.rate(None) == "n/a"
    assert fmt.gbps(4.2e9) == "4.2"  # the number alone, for a column headed "GB/s"


def test_a_size_reads_in_binary_units() -> None:
    assert fmt.size(7.5 * 2**30) == "7.5 GiB"
    assert fmt.size(512 * 2**20) == "512.0 MiB"
    assert fmt.size(12) == "12 B"
    assert fmt.size(3 * 2**40) == "3.0 TiB"
    assert fmt.size(None) == "n/a"


def test_the_share_of_a_link_is_one_rule_for_the_header_the_hint_and_the_report() -> None:
    assert fmt.link_fraction(2.8e9, LINK) == 2.8e9 / LINK
    assert fmt.link_fraction(2.8e9, None) is None and fmt.link_fraction(None, LINK) is None
    assert fmt.link_pct(2.8e9, LINK) == "4%"
    hint = hint_of(GapFacts("pcie_starved", 1.2, 2.8e9, 1e6, LINK, "high"), Evidence(NO_HOST, [], NO_COPIES))
    assert "H2D ran at 2.8 GB/s (4 % of link)" in hint


def test_a_link_reads_as_generation_and_width() -> None:
    assert fmt.link_shape(5, 16) == "Gen5 x16"
    assert fmt.link_shape(None, 8) == "Gen? x8"


def test_a_gpu_whose_link_is_unknown_is_judged_against_the_default_link() -> None:
    cfg = DetectorConfig(default_link_bytes_per_s=31.5e9)
    assert cfg.link_or_default(None) == 31.5e9
    assert cfg.link_or_default(0.0) == 31.5e9
    assert cfg.link_or_default(63e9) == 63e9


def test_a_gpu_the_detector_has_not_judged_reads_no_data() -> None:
    snap = StoreSnapshot(version=0, gpus=(GpuInfo(index=0),), gpu_samples={}, host_samples=(),
                         log_events=(), gaps=(), states={}, notices=())
    assert snap.state_name(0) == "NO_DATA"


def test_counts_by_kind_are_one_sum_for_the_ledger_and_the_closing_lines() -> None:
    tally = {(0, "pcie_starved"): Tally(3, 2.0), (1, "pcie_starved"): Tally(2, 1.0),
             (1, "host_stall"): Tally(1, 0.5), (2, "unknown"): Tally(0, 0.0)}
    assert counts_by_kind(tally) == {"host_stall": 1, "pcie_starved": 5}
    assert gap_counts_text(tally) == "host_stall=1, pcie_starved=5"
    assert GapLedger().counts_by_kind() == {}


def test_every_gap_kind_has_one_look_used_by_the_legend_and_the_stylesheet() -> None:
    assert tuple(KINDS) == GAP_KINDS
    assert legend() == "S starved T transfer H host ? unknown"
    assert legend(plot=True) == "red starved, yellow transfer, magenta host"
    css = kind_css()
    for kind in GAP_KINDS:
        for widget in ("strip-chart--gap-", "gap-strip--", "gap-table--"):
            assert f".{widget}{kind} " in css
    assert GapwatchApp.CSS == css  # the app loads the rules written from the table


def test_a_host_stall_with_a_burst_says_pcie_was_quiet_most_of_the_time() -> None:
    """The kind says PCIe was quiet most of the gap; "PCIe quiet (2.6 GB/s)" contradicted it."""
    quiet = 0.01 * LINK
    burst = hint_of(GapFacts("host_stall", 1.0, 2.6e9, 1e6, LINK, "high", quiet_below_bytes_per_s=quiet), Evidence(NO_HOST, [], NO_COPIES))
    assert "with PCIe quiet most of the time (2.6 GB/s on average)" in burst
    assert "PCIe quiet (2.6 GB/s)" not in burst
    still = hint_of(GapFacts("host_stall", 1.0, 2e6, 1e6, LINK, "high", quiet_below_bytes_per_s=quiet), Evidence(NO_HOST, [], NO_COPIES))
    assert "with PCIe quiet (2 MB/s): the GPU waited on the host" in still


def test_an_earlier_warning_is_said_as_earlier_not_as_this_gaps_partition() -> None:
    """A gap with no warning in its own window cites the run's latest one: that partition is
    not this gap's, so the hint says it was seen earlier (it used to name partition 4 again and
    again for every later gap)."""
    old = EventEvidence(100.0, "synth", partition=4, warning="unpinned")
    hint = hint_of(GapFacts("pcie_starved", 1.0, 3e9, 1e6, LINK, "high", since_s=140.0), Evidence(NO_HOST, [old], NO_COPIES))
    assert "partition 4 was synthesised" not in hint
    assert hint.startswith("is_pinned=false seen earlier in the run (last: partition 4): a/b/c "
                           "in pageable memory?")
    own = hint_of(GapFacts("pcie_starved", 1.0, 3e9, 1e6, LINK, "high", since_s=99.0), Evidence(NO_HOST, [old], NO_COPIES))
    assert own.startswith("partition 4 was synthesised with is_pinned=false")


def test_a_host_stall_says_pageable_buffers_only_of_its_own_window() -> None:
    """cuzk's first wave is always unpinned (its pinned pool not yet grown): cited as "pageable
    buffers seen" on every later host stall of the run, those words led the hint of a stall
    the prover's own cause explained (a request held in the batch collector). PCIe was quiet in
    a host stall, so only a partition unpinned in its own window is said, in the hint and in
    the snapshot's grouping alike."""
    first_wave = EventEvidence(100.0, "synth", partition=4, warning="unpinned")
    later = hint_of(GapFacts("host_stall", 7.2, 1e6, 1e6, LINK, "high", since_s=140.0),
                    Evidence(NO_HOST, [first_wave], NO_COPIES))
    assert "pageable" not in later and "is_pinned" not in later
    assert later.startswith("SMs idle 7.2 s with PCIe quiet")
    own = hint_of(GapFacts("host_stall", 7.2, 1e6, 1e6, LINK, "high", since_s=99.0),
                  Evidence(NO_HOST, [first_wave], NO_COPIES))
    assert own.startswith("pageable buffers seen (is_pinned=false); SMs idle 7.2 s")
    gap = Gap(gap_id=1, gpu=0, kind="host_stall", start_mono_ns=0, start_s=142.0,
              end_mono_ns=None, end_s=149.2, duration_s=7.2, pcie_rx_bytes_per_s=1e6,
              pcie_tx_bytes_per_s=1e6, link_bytes_per_s=LINK, confidence="high", hint=later,
              log_events=[first_wave])
    assert "pageable" not in hint_lines([gap], DetectorConfig().evidence_before_s)[0]
    assert "pageable" in hint_lines([replace(gap, start_s=101.0)], 2.0)[0]
    # The pinned pool's failure likewise: an old one no longer leads every later stall.
    failed = EventEvidence(100.0, "pool", warning="pinned_pool_fallback")
    old = hint_of(GapFacts("host_stall", 7.2, 1e6, 1e6, LINK, "high", since_s=690.0),
                  Evidence(NO_HOST, [failed], NO_COPIES))
    assert "pageable" not in old
    assert "pageable" not in hint_lines([replace(gap, start_s=692.0, log_events=[failed])], 2.0)[0]
    assert "pageable" in hint_lines([replace(gap, start_s=101.0, log_events=[failed])], 2.0)[0]


def _unpinned(t_s: float, job: str, *partitions: int) -> list[EventEvidence]:
    return [EventEvidence(t_s, "partition synthesis complete", partition=p, warning="unpinned",
                          job_id=job) for p in partitions]


def test_a_hint_names_each_partition_with_its_job() -> None:
    """Several jobs are in flight at once: "partitions 6, 7, 8" were another job's than the
    partition the GPU was starting (porep-1000-3's, synthesised 2 s before, while the GPU took
    porep-1000-1's 9), and "partitions 9, 0, 1" spanned two jobs. Each is named with its job,
    grouped by job, at most three, a long job id cut: the hint is one line."""
    def starved(events: list[EventEvidence]) -> str:
        return hint_of(GapFacts("pcie_starved", 1.2, 4.1e9, 4e7, LINK, "high", since_s=99.0),
                       Evidence(NO_HOST, events, NO_COPIES))

    one_job = starved(_unpinned(100.0, "porep-1000-3", 6, 7, 8))
    assert one_job.startswith("porep-1000-3 partitions 6, 7, 8 were synthesised with "
                              "is_pinned=false: a/b/c in pageable memory?")
    two = starved(_unpinned(100.0, "porep-1000-5", 9) + _unpinned(100.5, "porep-1000-6", 0, 1))
    assert two.startswith("porep-1000-5 partition 9 and porep-1000-6 partitions 0, 1 were "
                          "synthesised with is_pinned=false")
    # The same number of two jobs is two partitions, not one.
    same = starved(_unpinned(100.0, "porep-1000-4", 9) + _unpinned(100.5, "porep-1000-5", 9))
    assert same.startswith("porep-1000-4 partition 9 and porep-1000-5 partition 9 were")
    many = starved(_unpinned(100.0, "porep-1000-4", 2, 3, 4, 5, 6))
    assert many.startswith("porep-1000-4 partitions 2, 3, 4 ... were synthesised")
    # A line that named no job: the number alone, as the log gave it.
    bare = starved([EventEvidence(100.0, "synth", partition=4, warning="unpinned")])
    assert bare.startswith("partition 4 was synthesised with is_pinned=false")
    long_job = "porep-" + "9" * 500
    cut = starved(_unpinned(100.0, long_job, 1))
    phrase = cut.split("; ")[0]
    assert phrase.startswith(long_job[:JOB_CHARS - 1] + "… partition 1 was synthesised")
    assert len(phrase) < 150
    # A warning of before the gap's window is said as earlier, with its job.
    earlier = hint_of(GapFacts("pcie_starved", 1.0, 3e9, 1e6, LINK, "high", since_s=140.0),
                      Evidence(NO_HOST, _unpinned(100.0, "porep-1000-3", 4), NO_COPIES))
    assert earlier.startswith("is_pinned=false seen earlier in the run (last: porep-1000-3 "
                              "partition 4): a/b/c in pageable memory?")


#: A restart's words, as a prover says them (cuzk's: gapwatch.cuzk.prover.prover_phrase).
RESTART_WORDS = ("prover log: cuzk restarted: the GPU waited from its old run's last work to its "
                 "new run's first")


def test_a_host_stall_the_prover_explains_leads_with_its_cause() -> None:
    """A restart gap read "pageable buffers seen (is_pinned=false); SMs idle 16.4 s ...; prover
    log: cuzk restarted ...": the pageable words led a gap PCIe was quiet in, whose cause the
    prover gave. Its cause leads now, what the GPU did next, the memory words after."""
    view = ProverView("restart", [], [], RESTART_WORDS)
    facts = GapFacts("host_stall", 16.4, 4.2e8, 6e6, LINK, "high", since_s=99.0)
    hint = hint_of(facts, Evidence(NO_HOST, _unpinned(100.0, "porep-1000-8", 0, 1), NO_COPIES,
                                   prover=view))
    assert hint.startswith(RESTART_WORDS + "; SMs idle 16.4 s with PCIe quiet")
    assert hint.endswith("; " + PAGEABLE_SEEN_WORDS)
    # Without a cause of the prover's, the memory words still lead (they are all that is said
    # of the host's side), and a pcie_starved gap's always do: its copies' memory is its cause.
    plain = hint_of(facts, Evidence(NO_HOST, _unpinned(100.0, "porep-1000-8", 0), NO_COPIES))
    assert plain.startswith(PAGEABLE_SEEN_WORDS + "; SMs idle 16.4 s")
    starved = hint_of(GapFacts("pcie_starved", 1.0, 3e9, 1e6, LINK, "high", since_s=99.0),
                      Evidence(NO_HOST, _unpinned(100.0, "porep-1000-8", 0), NO_COPIES,
                               prover=ProverView("pinned_pool", [], [], "prover log: a/b/c")))
    assert starved.startswith("porep-1000-8 partition 0 was synthesised with is_pinned=false")


def test_warnings_the_prover_leaves_unpinned_by_design_are_said_as_such() -> None:
    """A restart's new run synthesises its first wave unpinned by design (no capacity hint
    yet): said as that, not as pageable memory to look into; a warning outside the prover's
    spans, or the pinned pool failing in the window, is still said as pageable."""
    wave = UnpinnedByDesign((UnpinnedSpan(99.5, 101.0),),
                            "the new run's first syntheses, unpinned by design")
    view = ProverView("restart", [], [], RESTART_WORDS, unpinned_by_design=wave)
    facts = GapFacts("host_stall", 16.4, 4.2e8, 6e6, LINK, "high", since_s=99.0)

    def stall(events: list[EventEvidence]) -> str:
        return hint_of(facts, Evidence(NO_HOST, events, NO_COPIES, prover=view))

    first_wave = stall(_unpinned(100.0, "porep-1000-8", 0, 1))
    assert first_wave.endswith("; is_pinned=false: the new run's first syntheses, unpinned by "
                               "design")
    assert "pageable" not in first_wave
    later = stall(_unpinned(100.0, "porep-1000-8", 0) + _unpinned(102.0, "porep-1000-8", 5))
    assert later.endswith("; " + PAGEABLE_SEEN_WORDS)
    failed = stall(_unpinned(100.0, "porep-1000-8", 0)
                   + [EventEvidence(100.2, "pool", warning="pinned_pool_fallback")])
    assert failed.endswith("; " + PAGEABLE_SEEN_WORDS)
    starved = hint_of(GapFacts("pcie_starved", 1.0, 3e9, 1e6, LINK, "high", since_s=99.0),
                      Evidence(NO_HOST, _unpinned(100.0, "porep-1000-8", 0), NO_COPIES,
                               prover=view))
    assert starved.startswith("porep-1000-8 partition 0 was synthesised with is_pinned=false: "
                              "the new run's first syntheses, unpinned by design; SMs idle")


def test_copies_of_several_memory_kinds_are_said_in_the_same_words_as_one_kind() -> None:
    def kind(n_bytes: int, rate: float, stream: int) -> CopyKindEvidence:
        return CopyKindEvidence(1, n_bytes, n_bytes, 0, n_bytes / rate, [stream], rate, 1.0, 1.0,
                                n_bytes, n_bytes / rate)  # all of it during the gap

    one = CopiesEvidence(traced=True, memory_kind="pageable",
                         by_kind={"pageable": kind(9 * 2**30, 2.6e9, 13)})
    mixed = CopiesEvidence(traced=True, memory_kind="mixed", by_kind={
        "pageable": kind(int(10.5 * 2**30), 4.1e9, 13), "pinned": kind(2**30, 54e9, 14)})
    assert traced_copy_words(one, "pcie_starved").startswith(
        "9.0 GiB copied from pageable host memory during the gap at 2.6 GB/s")
    assert traced_copy_words(mixed, "pcie_starved") == (
        "10.5 GiB copied from pageable host memory during the gap at 4.1 GB/s and 1.0 GiB from "
        "pinned host memory at 54.0 GB/s")


def _partition(job: str, index: int) -> PartitionTiming:
    return PartitionTiming(job_id=job, partition=index, worker=index % 2, synth_ms=100,
                           timeline_gpu_ms=200)


def test_the_partition_table_names_the_job_and_says_what_it_left_out() -> None:
    """85 partitions of nine jobs: partition numbers repeat per job, so each row names its job;
    the table shows 50 and says that 35 more are not shown (it used to stop silently)."""
    parts = [_partition(f"porep-1000-{i // 10}", i % 10) for i in range(85)]
    run = RunTimeline(partitions=parts, sources=frozenset({"log"}), runs=frozenset({1}),
                      occupied_fraction=0.5, merged_efficiency=0.5)
    lines = _partition_lines(run)
    assert lines[1].split()[:2] == ["job", "part"]
    assert lines[2].split()[:2] == ["porep-1000-0", "0"]
    assert lines[-1].strip().startswith("... 35 more partitions not shown (first 50 of 85")
    assert len(_partition_lines(run, all_rows=True)) == 2 + 85


def test_the_partition_table_never_cuts_a_job_id_and_numbers_the_runs() -> None:
    job = "wdpost-1000-3-[1 2 3 4 5 6 7 8]"  # Curio's %d of a byte slice (cuzk_funcs.go:179)
    mono = PartitionTiming(job_id=job, partition=None, worker=0, kind="window-post", run=2)
    run = RunTimeline(partitions=[_partition("porep-1000-1", 0), mono],
                      sources=frozenset({"log"}), runs=frozenset({1, 2}),
                      occupied_fraction=0.5, merged_efficiency=0.5)
    lines = _partition_lines(run)
    assert lines[1].split()[:3] == ["run", "job", "part"]
    row = lines[3]
    assert job in row and "window-post" in row and row.rstrip().endswith(" no")


def test_a_gap_table_row_and_a_closing_line_read_the_same_kind_counts() -> None:
    ledger = GapLedger()
    for i, kind in enumerate(("pcie_starved", "pcie_starved", "host_stall")):
        ledger.add(Gap(gap_id=i + 1, gpu=0, kind=kind, start_mono_ns=i, start_s=float(i),  # type: ignore[arg-type]
                       end_mono_ns=i + 1, end_s=i + 0.5, duration_s=0.5,
                       pcie_rx_bytes_per_s=None, pcie_tx_bytes_per_s=None,
                       link_bytes_per_s=LINK))
    assert gap_counts_text(ledger.tally()) == "host_stall=1, pcie_starved=2"
    assert ledger.counts_by_kind() == counts_by_kind(ledger.tally())


def test_a_host_stall_the_prover_gave_no_cause_says_no_cause_known_whatever_synthesis_it_saw(
        ) -> None:
    """The hint named synthesis ("synthesis did not keep up with the GPU?") wherever a line of
    the gap's window mentioned one, while the advice over the same gap said "the GPU waited on
    the host (no cause known)": the H100 pageable run's last gap, two partitions synthesised and
    queued for the GPU before it (r1 F6). What a host stall waited on is the prover's to say,
    from its facts at the gap's time (its cause, which then leads the hint); without one the
    hint, the snapshot's grouped hint and the advice all say no cause is known."""
    synth = EventEvidence(100.2, "SYNTH_END", partition=0, raw="TIMELINE,28625,SYNTH_END")
    facts = GapFacts("host_stall", 1.0, 1e6, 1e6, LINK, "high", since_s=99.0)
    for events in ([synth], []):
        hint = hint_of(facts, Evidence(NO_HOST, events, NO_COPIES))
        assert "did not keep up" not in hint
        assert hint.endswith("the GPU waited on the host; no cause known: synthesis, a lock or "
                             "the scheduler?"), hint
    gap = Gap(gap_id=1, gpu=0, kind="host_stall", start_mono_ns=0, start_s=101.0,
              end_mono_ns=None, end_s=102.0, duration_s=1.0, pcie_rx_bytes_per_s=1e6,
              pcie_tx_bytes_per_s=1e6, link_bytes_per_s=LINK, confidence="high",
              hint=hint_of(facts, Evidence(NO_HOST, [synth], NO_COPIES)), log_events=[synth])
    [group, _latest] = hint_lines([gap], DetectorConfig().evidence_before_s)
    assert "no cause known" in group and "did not keep up" not in group
    assert "no cause known" in STALL_WORDS[stall_of(gap, PipelineView())]
