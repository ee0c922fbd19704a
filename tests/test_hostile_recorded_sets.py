"""A recording's own names and lists reaching the live parts (`replay`, `record --source replay:`,
`/metrics`, the dashboard's store): a recording is outside input, and may name any number of
provers, partition states or processes. What the live parts hold of them stays bounded.
"""

from __future__ import annotations

import urllib.request

import msgspec
import pytest
from prometheus_client.parser import text_string_to_metric_families
from session_fakes import NoDetector, metrics_body, serving
from test_detect_unit import T0_WALL, detector, final_gaps, sample
from ui_fakes import header, log_event

from gapwatch.config import LogsConfig, UserRule
from gapwatch.core.bounds import MAX_PROVERS
from gapwatch.core.models import (
    PARTITION_STATES,
    WORKER_STATES,
    GpuInfo,
    ProcessMemory,
    ProverStatus,
    ProverWorker,
)
from gapwatch.core.proc_rounds import MAX_PROCS_PER_ROUND
from gapwatch.cuzk.restarts import RestartWatch
from gapwatch.engine.session import Session
from gapwatch.engine.store import SeriesStore
from gapwatch.logs.parse import named_kinds, user_kind
from gapwatch.sinks.metrics import MAX_LOG_KINDS
from gapwatch.sinks.prometheus import bind_exporter

WALL0_S = 1_796_000_000.0


def _status(prover: str, i: int) -> ProverStatus:
    return ProverStatus(prover=prover, t_mono_ns=i * 1_000_000, t_wall_s=WALL0_S + i / 1000,
                        latency_ms=1.0, uptime_s=float(i), partition_counts={f"made-up-{i}": 1},
                        workers=[ProverWorker(worker_id=0, gpu=0, state=f"w{i}")],
                        synthesis_active=None, synthesis_max=None, queue_depth=None, jobs=1)


def _scrape(session: Session) -> dict[str, list[dict[str, str]]]:
    return {f.name: [s.labels for s in f.samples]
            for f in text_string_to_metric_families(metrics_body(session))}


def test_a_recording_naming_thousands_of_provers_keeps_the_latest_few_on_metrics() -> None:
    """Each prover name a replayed recording held kept its latest snapshot in the store for
    good: 20,000 names were 115,000 series on /metrics (7.6 MB a scrape, growing) and as many
    pipeline lines on the dashboard; the restart watcher kept an uptime per name."""
    head = header()
    store = SeriesStore(list(head.gpus), 0.1)
    session = Session(head, store, NoDetector())  # type: ignore[arg-type]
    restarts = RestartWatch()
    for i in range(2000):
        st = _status(f"evil-{i}", i)
        session.on_record(st)
        restarts.feed_status(st)
    snap = store.snapshot()
    assert len(snap.provers) == MAX_PROVERS
    assert sorted(snap.provers) == sorted(f"evil-{i}" for i in range(2000 - MAX_PROVERS, 2000))
    assert snap.counters["provers_forgotten"] == 2000 - MAX_PROVERS
    assert len(restarts._uptime) == MAX_PROVERS
    families = _scrape(session)
    provers = {labels["prover"] for samples in families.values() for labels in samples
               if "prover" in labels}
    assert len(provers) == MAX_PROVERS


def test_made_up_partition_and_worker_states_in_a_recorded_snapshot_are_one_other_series() -> None:
    """The poller reads an unknown state as "other"; a recording's snapshot may hold any text,
    and each made-up state was a series of its own."""
    head = header()
    session = Session(head, SeriesStore(list(head.gpus), 0.1), NoDetector())  # type: ignore[arg-type]
    st = _status("p", 1)
    st = msgspec.structs.replace(st, partition_counts={
        "gpu": 2, **{f"made-up-{i}": 1 for i in range(500)}},
        workers=[ProverWorker(worker_id=i, gpu=0, state=f"w{i}") for i in range(200)])
    session.on_record(st)
    families = _scrape(session)
    parts = {s["state"]: s for s in families["gapwatch_cuzk_partitions"]}
    assert set(parts) <= {*PARTITION_STATES, "other"} and "other" in parts
    workers = {s["state"] for s in families["gapwatch_cuzk_workers"]}
    assert workers == {*WORKER_STATES, "other"}


def _log_event_counts(body: str) -> dict[str, float]:
    """`gapwatch_prover_log_events_total` by kind, as a scrape of `/metrics` gives it."""
    return {s.labels["kind"]: s.value for f in text_string_to_metric_families(body)
            if f.name == "gapwatch_prover_log_events" for s in f.samples}


def test_a_recording_of_thousands_of_made_up_log_event_kinds_adds_no_series_per_kind() -> None:
    """A log event's kind is a rule's name live, but a recording's events carry any text, and
    `replay --prometheus` counted each as a series of its own, for good: 50,000 made-up kinds
    were 50,000 series."""
    head = header()
    session = Session(head, SeriesStore(list(head.gpus), 0.1), NoDetector())  # type: ignore[arg-type]
    with serving(session) as scrape:
        session.on_record(log_event(0.5, "INFO real line"))
        for i in range(1000):
            session.on_record(msgspec.structs.replace(log_event(1.0, "x"), kind=f"k{i}"))
        counts = _log_event_counts(scrape())
    assert len(counts) == MAX_LOG_KINDS + 1 and counts["tracing"] == 1
    assert sum(counts.values()) == 1001  # every event counted, the made-up kinds beyond under other
    assert counts["other"] == 1000 - (MAX_LOG_KINDS - 1)


def _proc(pid: int, t_s: float = 1.0, gpu: int = 0) -> ProcessMemory:
    return ProcessMemory(int(t_s * 1e9), T0_WALL + t_s, gpu, pid, "cuzk", 1 << 30, 1 << 20)


def test_a_round_of_thousands_of_processes_is_bounded_in_the_store_and_in_each_gaps_evidence(
) -> None:
    """Every reading of a round was kept, and the store looked through the whole round for each
    new one: 40,000 made-up pids at one time cost `replay --headless` 57 s (2.5 s now), and each
    gap's evidence listed them all."""
    n = 3 * MAX_PROCS_PER_ROUND
    store = SeriesStore([GpuInfo(index=0)], 0.1)
    for pid in range(n):
        store.set_procmem(_proc(pid))
    store.set_procmem(_proc(0))  # a process read twice in a round is one process
    snap = store.snapshot()
    assert len(snap.procmem[0]) == MAX_PROCS_PER_ROUND
    assert snap.counters["procmem_cut"] == n - MAX_PROCS_PER_ROUND
    store.set_procmem(_proc(7, t_s=2.0))  # a newer round replaces the older
    assert [r.pid for r in store.snapshot().procmem[0]] == [7]

    det = detector()
    for pid in range(n):
        det.feed(_proc(pid, t_s=0.5))
    samples = [sample(1.0 + i / 10, 95.0 if i < 20 or i >= 30 else 0.0,
                      rx=2e6 if i < 20 or i >= 30 else 2.5e9) for i in range(50)]
    out = [(0.0, e) for s in samples for e in det.feed(s)] + [(0.0, e) for e in det.finish()]
    gaps = final_gaps(out)
    assert gaps, "the pattern makes a gap"
    for g in gaps:
        procs = g.copies.processes
        assert isinstance(procs, list) and len(procs) == MAX_PROCS_PER_ROUND


def test_more_status_urls_than_provers_followed_are_refused_at_start() -> None:
    """Provers are followed by name up to `MAX_PROVERS`: with one URL more, each poll pushed the
    least recent prover out, and a restart seen by its uptime going back was never said."""
    from gapwatch.config import build_config
    from gapwatch.engine.runtime import build_runtime
    from gapwatch.sources import SourceUnavailable

    urls = [f"http://10.0.0.{i}:9820/status" for i in range(MAX_PROVERS + 1)]
    config = build_config({"cuzk": {"status_url": urls}})
    with pytest.raises(SourceUnavailable, match=f"follows at most {MAX_PROVERS}"):
        build_runtime(config, "sim:chained", speed=1)


def test_one_reading_with_an_absurd_time_does_not_keep_every_real_round_out() -> None:
    """A round was replaced only by a later one: a single recorded reading at 2^63 ns held the
    processes panel and every gap's evidence to it for the rest of the replay."""
    store = SeriesStore([GpuInfo(index=0)], 0.1)
    store.set_procmem(ProcessMemory(2**63 - 1, T0_WALL, 0, 666, "junk", 0, 0))
    for t_s in (1.0, 2.0, 3.0):
        store.set_procmem(_proc(4242, t_s=t_s))
    assert [(r.pid, r.name) for r in store.snapshot().procmem[0]] == [(4242, "cuzk")]


def test_made_up_kinds_coming_first_do_not_push_the_built_in_kinds_under_other() -> None:
    """The first 64 kinds seen kept their own series, whichever they were: 64 made-up kinds
    before the first real line put `tracing` and `timeline` under `other`."""
    head = header()
    session = Session(head, SeriesStore(list(head.gpus), 0.1), NoDetector())  # type: ignore[arg-type]
    with serving(session) as scrape:
        for i in range(MAX_LOG_KINDS):
            session.on_record(msgspec.structs.replace(log_event(1.0, "x"), kind=f"k{i}"))
        for kind in ("tracing", "timeline", "cuzk_partition"):
            session.on_record(msgspec.structs.replace(log_event(2.0, "y"), kind=kind))
        counts = _log_event_counts(scrape())
    assert counts["tracing"] == counts["timeline"] == counts["cuzk_partition"] == 1
    assert "other" not in counts


def test_every_kind_the_built_in_rules_make_is_named_in_built_in_kinds() -> None:
    """`/metrics` keeps `BUILT_IN_KINDS` by name, whatever a recording makes up: a kind a rule
    makes and the list lacks would go under `other` behind 64 made-up ones."""
    from pathlib import Path

    from gapwatch.logs.parse import BUILT_IN_KINDS, LogParser

    data = Path(__file__).parent / "data"
    parser, kinds = LogParser(offline=True), set()
    for path in sorted(data.rglob("*.log")):
        for line in path.read_text(errors="replace").splitlines():
            kinds |= {e.kind for e in parser.parse_line(line, str(path))}
    kinds |= {e.kind for e in parser.flush()}
    made = {k for k in kinds if k != "unparsed" and not k.startswith("user:")}
    assert {"tracing", "timeline", "cuzk_timing", "cuzk_ntt_h"} <= made
    assert made <= BUILT_IN_KINDS


def test_the_configs_own_rule_kinds_are_counted_by_name_after_thousands_of_made_up_ones() -> None:
    """The built-in rules' kinds were kept by name past the bound, but a user rule's
    (`user:NAME`, from the operator's own config) fell under "other" once a replayed recording
    had brought MAX_LOG_KINDS made-up kinds first: the series the operator's alert reads
    stopped moving."""
    head = header()
    session = Session(head, SeriesStore(list(head.gpus), 0.1), NoDetector())  # type: ignore[arg-type]
    logs = LogsConfig(rules=[UserRule(name="lotus", regex=r"(?P<x>x)")])
    handle = bind_exporter("127.0.0.1:0")
    handle.serve(session, None, named_kinds(logs))
    try:
        for i in range(1000):
            session.on_record(msgspec.structs.replace(log_event(1.0, "x"), kind=f"k{i}"))
        session.on_record(msgspec.structs.replace(log_event(2.0, "x"), kind=user_kind("lotus")))
        session.on_record(msgspec.structs.replace(log_event(3.0, "x"), kind="user:made-up"))
        with urllib.request.urlopen(handle.url, timeout=5) as resp:
            counts = _log_event_counts(resp.read().decode())
    finally:
        handle.stop()
    assert counts["user:lotus"] == 1
    assert "user:made-up" not in counts and counts["other"] == 1000 - MAX_LOG_KINDS + 1
