"""Batched proofs counted and advised as what they are: a batch of 2+ PoRep or SnapDeals
requests (`[scheduler] max_batch_size` > 1) is one monolithic GPU job, a row of the partition
table that is no partition (engine.rs:2053, 2672-2713), its a/b/c synthesised with no pinned
pool (pipeline.rs:1632, 3388). The table's headline, its `pinned` column, its count of rows
synthesised unpinned and the payoff's rate say so in one voice; the SnapDeals batch advice says
that upstream synthesises only its first request; the advice on a first SRS load names the gRPC
PreloadSRS call that loads one ahead (engine.rs:3623-3657: tests/test_advice.py,
tests/test_cuzk_post.py)."""

from __future__ import annotations

import json
from pathlib import Path

from sim_recordings import record_sim, report_of

from gapwatch.core.models import FieldValue, LogEvent, ProverPartition, ProverStatus
from gapwatch.cuzk.advice import batch_setting
from gapwatch.cuzk.log_lines import SYNTH_SENT_MESSAGE
from gapwatch.cuzk.partitions import RunTimeline, derive_timeline
from gapwatch.offline.report import _partition_json
from gapwatch.offline.report_text import _partition_lines

T0 = 1_780_000_000.0


def _timeline(t: float, name: str, job: str, worker: int | None = None,
              partition: int | None = None, **fields: FieldValue) -> LogEvent:
    return LogEvent(t_wall_s=T0 + t, time_source="timeline", kind="timeline", name=name,
                    raw="", job_id=job, worker=worker, partition=partition, gpu=0,
                    fields=dict(fields))


def _sent(t: float, batch_size: int, sectors: int) -> LogEvent:
    """`synthesis complete, sending to GPU` in the batch's span (engine.rs:2746-2752): no job."""
    return LogEvent(t_wall_s=T0 + t, time_source="line", kind="tracing",
                    name=SYNTH_SENT_MESSAGE, raw="",
                    fields={"synth_ms": 3000, "circuit_id": "porep-32g",
                            "batch_size": batch_size, "sectors": sectors})


def _batches(kind: str = "porep-c2", sectors: int = 2, n: int = 3) -> list[LogEvent]:
    """`n` batch jobs of 2 requests each, one after the other on worker 0."""
    out: list[LogEvent] = []
    for i in range(n):
        job, t = f"porep-1000-{2 * i}", 10.0 * i
        out += [_timeline(t, "SYNTH_START", job, kind=kind),
                _timeline(t + 3, "SYNTH_END", job, synth_ms=3000),
                _sent(t + 3, 2, sectors),
                _timeline(t + 3, "GPU_START", job, worker=0),
                _timeline(t + 8, "GPU_END", job, worker=0, gpu_ms=5000)]
    return out


def _partition(t: float, job: str, index: int, unpinned: bool = False) -> list[LogEvent]:
    """A partition on a GPU, its synthesis's line saying `is_pinned=false` or `=true`."""
    start = _timeline(t, "GPU_START", job, worker=1, partition=index)
    end = _timeline(t + 1, "GPU_END", job, worker=1, partition=index, gpu_ms=1000)
    synth = LogEvent(t_wall_s=T0 + t - 1, time_source="line", kind="tracing",
                     name="partition synthesis complete", raw="", job_id=job,
                     partition=index, fields={"is_pinned": not unpinned},
                     warning="unpinned" if unpinned else None)
    return [synth, start, end]


def test_a_table_of_batch_jobs_counts_batch_jobs_with_their_sectors_not_partitions() -> None:
    run = derive_timeline(_batches())
    assert (run.batch_jobs, run.partition_rows, run.other_jobs) == (3, 0, 0)
    assert run.rate_unit == "batch jobs" and run.sectors_per_batch == 2
    head = _partition_lines(run)[0]
    assert head.startswith("GPU jobs (from the log): 3 batch jobs (2 sectors each), "
                           "3 synthesised unpinned;")
    assert "Partitions" not in head


def test_the_unpinned_count_is_the_pinned_columns_no_for_every_row() -> None:
    """A batch's a/b/c are never pinned (no pool on its path, pipeline.rs:1632): its cell said
    `no` while the count said 0 of them, and its JSON row `unpinned: false`."""
    events = [*_batches(n=2), *_partition(40.0, "porep-2000-0", 0),
              *_partition(45.0, "porep-2000-0", 1, unpinned=True)]
    run = derive_timeline(events)
    cells = [p.pinned_words for p in run.partitions]
    assert sorted(cells) == ["no", "no", "no", "yes"]
    assert run.unpinned == cells.count("no") == 3
    assert [_partition_json(p)["unpinned"] for p in run.partitions] == \
        [c == "no" for c in cells]
    assert _partition_lines(run)[0].startswith(
        "GPU jobs (from the log): 2 partitions, 2 batch jobs (2 sectors each), "
        "3 synthesised unpinned;")


def test_a_first_wave_partition_the_log_said_pinned_is_pinned_and_not_counted() -> None:
    """A first wave is inferred from the times (its synthesis began before its kind's first
    ended); `is_pinned=true` on its `partition synthesis complete` line is the log's word
    (pipeline.rs:2397-2402; pinned, it had a hint): the row read `no (first wave)`, and once
    counted the count said so too."""
    job = "porep-1000-0"
    said = LogEvent(t_wall_s=T0 + 2.5, time_source="line", kind="tracing",
                    name="partition synthesis complete", raw="", job_id=job, partition=1,
                    fields={"is_pinned": True})
    events = [_timeline(0.0, "SYNTH_START", job, partition=0),
              _timeline(0.5, "SYNTH_START", job, partition=1),
              _timeline(2.0, "SYNTH_END", job, partition=0, synth_ms=2000),
              _timeline(2.5, "SYNTH_END", job, partition=1, synth_ms=2000), said,
              *_partition(4.0, job, 0)[1:], *_partition(6.0, job, 1)[1:]]
    run = derive_timeline(events)
    assert [(p.partition, p.first_wave, p.pinned_words) for p in run.partitions] == \
        [(0, True, "no"), (1, False, "yes")]
    assert run.unpinned == 1


def test_a_partition_only_status_knew_is_neither_pinned_nor_unpinned() -> None:
    """/status says no `is_pinned`: the cell is `-`, the JSON null, and it is not counted."""
    st = ProverStatus(prover="p", t_mono_ns=0, t_wall_s=T0, latency_ms=1.0, uptime_s=1.0,
                      partition_counts={}, workers=[], synthesis_active=None,
                      synthesis_max=None, queue_depth=None, jobs=1,
                      partitions=[ProverPartition("porep-3000-0", 4, "done", 2000, 1000)])
    run = derive_timeline([], [st])
    [row] = run.partitions
    assert row.pinned_words == "-" and _partition_json(row)["unpinned"] is None
    assert run.unpinned == 0


def test_a_snapdeals_batch_is_no_sectors_per_hour_and_says_only_its_first_request() -> None:
    """A SnapDeals batch synthesises `reqs[0]` alone (engine.rs:2706-2713) and logs
    `sectors=0`: no sector count is claimed for it."""
    run = derive_timeline(_batches("snap-update", sectors=0))
    assert run.rate_unit == "batch jobs" and run.sectors_per_batch is None
    assert "3 batch jobs (SnapDeals: only the first request synthesised)" in \
        _partition_lines(run)[0]


def test_batches_of_several_sizes_claim_no_size() -> None:
    events = _batches(n=2) + [_sent(30.0, 3, 3)]
    run = derive_timeline(events)
    assert run.batch_sectors == {2, 3} and run.sectors_per_batch is None
    assert "2 batch jobs, " in _partition_lines(run)[0]


def test_a_table_of_partitions_keeps_its_words() -> None:
    run = derive_timeline(_partition(1.0, "porep-1-0", 0) + _partition(3.0, "porep-1-0", 1))
    assert isinstance(run, RunTimeline) and run.rate_unit == "partitions"
    assert _partition_lines(run)[0].startswith("Partitions (from the log): 2, 0 synthesised")


def test_the_batched_report_counts_batch_jobs_and_their_sectors_per_hour(tmp_path: Path
                                                                          ) -> None:
    """The simulator's `batched` run (max_batch_size = 2): its table's headline, `pinned`
    column and unpinned count agree, and its payoff is in batch jobs (and sectors) per hour,
    never partitions."""
    recording, _ = record_sim(tmp_path, "batched", 40, "--seed", "1")
    text = report_of(recording)
    [head] = [line for line in text.splitlines() if line.startswith("GPU jobs (")]
    n = int(head.split(": ")[1].split()[0])
    assert f"{n} batch jobs (2 sectors each), {n} synthesised unpinned;" in head
    assert "partitions per hour" not in text
    assert "batch jobs per hour (" in text and "sectors per hour)" in text
    doc = json.loads(report_of(recording, "--json"))
    table, payoff = doc["partitions"], doc["payoff"]
    assert table["unit"] == "batch jobs" and table["batch_jobs"] == table["count"] == n
    assert table["unpinned"] == n and all(p["unpinned"] is True for p in table["items"])
    assert payoff["rate_unit"] == "batch jobs"
    assert payoff["sectors_per_hour"] == 2 * payoff["partitions_per_hour"]


def test_the_snapdeals_batch_advice_says_only_its_first_request_is_synthesised() -> None:
    snap = batch_setting(["snap-update"])
    assert "SnapDeals batch's synthesis uses only its first request (reqs[0], " \
           "engine.rs:2706-2713)" in snap.why
    assert "2706-2713" in snap.source
    porep = batch_setting(["porep-c2"])
    assert "reqs[0]" not in porep.why and "2706-2713" not in porep.source


def test_the_batch_and_post_kinds_have_one_home_read_by_every_module() -> None:
    """The proof kinds were written out in four modules (the partition table's a frozenset of
    its own beside the advice's tuple): a kind added to one was missed by the others."""
    from gapwatch.cuzk import advice, partitions, paths, pipeline, post
    from gapwatch.offline import compare

    assert pipeline.BATCH_KINDS == ("porep-c2", "snap-update")
    assert all(m.BATCH_KINDS is pipeline.BATCH_KINDS for m in (advice, partitions, paths))
    assert all(m.POST_KINDS is pipeline.POST_KINDS
               for m in (advice, partitions, paths, compare, post))
    assert tuple(post.POST_NAMES) == pipeline.POST_KINDS
