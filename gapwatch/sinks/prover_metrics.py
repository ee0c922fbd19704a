"""The prover's own pipeline on `/metrics`: cuzk `/status` snapshots, what its log says, the
gaps by the cause the prover gives, and the pollers' health.

Who calls it: `gapwatch.sinks.prometheus.GapwatchCollector.collect`, at every scrape, with the
latest snapshot per prover from the store, the store's pipeline view and cause tallies, and the
runtime's poller statuses.

Families (label `prover` = the status URL's host:port, "sim" for the simulator's own feed):
- `gapwatch_cuzk_partitions{prover,state}`: partitions of the jobs in flight by state;
- `gapwatch_cuzk_workers{prover,gpu,state}`: GPU workers by state (idle, proving);
- `gapwatch_cuzk_synthesis_workers{prover}`: how many syntheses cuzk runs (its log's
  `synth_worker_count`, else its formula over the budget); `gapwatch_cuzk_synthesis_active`
  (cuzk's counter: drifts up after failed syntheses), `gapwatch_cuzk_synthesis_max_concurrent`
  (cuzk's `max_concurrent`: the budget over the smallest partition, not a worker count);
- `gapwatch_cuzk_memory_budget_bytes{prover}`, `..._available_bytes{prover}`: cuzk's budget;
- from the log (no `prover` label: a log is not tied to a status URL): the pinned pool
  (`gapwatch_cuzk_pinned_pool_bytes`, `..._buffers`, `..._free_buffers`,
  `gapwatch_cuzk_pinned_pool_failures_total{what}`), the pacer (`gapwatch_cuzk_pacer_waiting`,
  `..._target`), `gapwatch_cuzk_srs_loading`, `gapwatch_cuzk_gpu_queue_wait_seconds` (the latest
  GPU_QUEUE -> GPU_PICKUP), `gapwatch_cuzk_budget_waits_total`;
- `gapwatch_cuzk_queue_depth{prover}`; `gapwatch_cuzk_status_timestamp_seconds{prover}`;
- `gapwatch_cuzk_status_up{prover}` (1 when the last poll answered), `..._latency_seconds`,
  `gapwatch_cuzk_status_polls_total{prover}`, `gapwatch_cuzk_status_errors_total{prover,reason}`
  (every reason starts at 0, so that `rate()` works from the first scrape).
A prover whose last poll failed has no pipeline gauges (its last snapshot is stale: the series
go absent, as a missing reading does), only `up` 0 and its error counters.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from gapwatch.core.models import PARTITION_STATES, WORKER_STATES, ProverStatus
from gapwatch.core.units import GIB
from gapwatch.cuzk.pipeline import PipelineView
from gapwatch.sources.cuzk_status import ERROR_REASONS, PollerStatus


def _gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"gapwatch_cuzk_{name}", doc, labels=labels)


def _gauges_said(rows: list[tuple[str, str, float | int | None]]) -> Iterator[Metric]:
    """One unlabelled gauge per (name, doc, value) whose value the log has said (None: absent,
    as a missing reading is)."""
    for name, doc, value in rows:
        if value is not None:
            g = _gauge(name, doc, [])
            g.add_metric([], float(value))
            yield g


def _pipeline_families(view: PipelineView) -> Iterator[Metric]:
    """What the prover's log said: pool, pacer, SRS loads, queue waits (absent until said)."""
    pool = view.pool
    waiting = view.pacer.get("waiting") if view.pacer else None
    rows: list[tuple[str, str, float | int | None]] = [
        ("pacer_target", "cuzk's dispatch pacer target ([pipeline] max_gpu_queue_depth).",
         view.pacer_target),
        ("pacer_waiting", "Synthesised partitions waiting for the GPU, as the latest 'pacer: "
         "status' line said.",
         waiting if isinstance(waiting, int | float) and not isinstance(waiting, bool) else None),
        ("srs_loading", "SRS loads in progress (loading SRS from disk, not yet loaded).",
         len(view.srs_loading)),
        ("gpu_queue_wait_seconds", "The latest partition's wait from GPU_QUEUE to GPU_PICKUP "
         "(TIMELINE).", view.last_queue_wait_s),
    ]
    if pool is not None:
        rows += [
            ("pinned_pool_bytes", "cuzk's pinned pool size (its allocated / freed lines).",
             None if pool.total_gib is None else pool.total_gib * GIB),
            ("pinned_pool_buffers", "Buffers in cuzk's pinned pool.", pool.buffers),
            ("pinned_pool_free_buffers", "Free buffers in cuzk's pinned pool (checkout, "
             "checkin lines).", pool.free),
        ]
        fails = CounterMetricFamily("gapwatch_cuzk_pinned_pool_failures",
                                    "cuzk's pinned pool failures: checkout FAILED (a/b/c "
                                    "fell back to pageable memory), cudaHostAlloc failed.",
                                    labels=["what"])
        fails.add_metric(["checkout"], pool.checkout_failed)
        fails.add_metric(["cuda_host_alloc"], pool.alloc_failed)
        yield fails
    yield from _gauges_said(rows)
    waits = CounterMetricFamily("gapwatch_cuzk_budget_waits", "cuzk's 'waiting for budget' "
                                "lines (DEBUG in memory.rs).")
    waits.add_metric([], view.budget_waits)
    yield waits


def _known(state: str, states: tuple[str, ...]) -> str:
    """A state label: one of `states` or "other". The poller writes only these, but a
    recording's snapshot may hold any text (one of 20,000 made-up states was a series each)."""
    return state if state in states else "other"


def _partition_counts(st: ProverStatus) -> dict[str, int]:
    """The snapshot's partition counts by state label (unknown ones add to "other", as
    `_known` says of a worker's), the known states first."""
    out: dict[str, int] = {}
    for known in PARTITION_STATES:
        if known in st.partition_counts:
            out[known] = st.partition_counts[known]
    for state, n in st.partition_counts.items():
        if state not in PARTITION_STATES:
            out["other"] = out.get("other", 0) + n
    return out


def prover_families(latest: dict[str, ProverStatus],
                    pollers: list[PollerStatus] | None,
                    pipeline: PipelineView | None = None) -> Iterator[Metric]:
    """Every prover family for one scrape (`pollers` None: no runtime, export what is stored).
    `pipeline`: what the prover's log said (the store's view)."""
    view = pipeline or PipelineView()
    down = {p.prover for p in pollers or () if p.state != "ok"}
    parts = _gauge("partitions", "Partitions of the prover's jobs in flight, by state "
                   "(cuzk /status).", ["prover", "state"])
    workers = _gauge("workers", "The prover's GPU workers by state (proving includes the GPU "
                     "mutex wait and tail work).", ["prover", "gpu", "state"])
    active = _gauge("synthesis_active", "cuzk's synthesis.active counter (not decremented on a "
                    "failed synthesis: partitions{state=synthesizing} is the count to trust).",
                    ["prover"])
    maxc = _gauge("synthesis_max_concurrent", "cuzk's synthesis.max_concurrent: the memory "
                  "budget over the smallest partition (status.rs), NOT how many syntheses run.",
                  ["prover"])
    workers_n = _gauge("synthesis_workers", "How many syntheses cuzk runs at once (its log's "
                       "synth_worker_count, else its formula over the memory budget).",
                       ["prover"])
    budget = _gauge("memory_budget_bytes", "cuzk's memory budget (memory.total_bytes).",
                    ["prover"])
    free = _gauge("memory_available_bytes", "cuzk's free memory budget "
                  "(memory.available_bytes).", ["prover"])
    queue = _gauge("queue_depth", "Jobs waiting in the prover's scheduler queue.", ["prover"])
    stamp = _gauge("status_timestamp_seconds", "Unix time of the latest snapshot.", ["prover"])
    for name, st in sorted(latest.items()):
        if name in down:
            continue
        for state, n in _partition_counts(st).items():
            parts.add_metric([name, state], n)
        by: dict[tuple[str, str], int] = {}
        for w in st.workers:
            key = ("" if w.gpu is None else str(w.gpu), _known(w.state, WORKER_STATES))
            by[key] = by.get(key, 0) + 1
        for gpu in sorted({k[0] for k in by}):
            for state in (*WORKER_STATES, *sorted({k[1] for k in by} - set(WORKER_STATES))):
                workers.add_metric([name, gpu, state], by.get((gpu, state), 0))
        cap = view.capacity(st)
        for fam, value in ((active, st.synthesis_active), (maxc, st.synthesis_max),
                           (workers_n, cap.workers if cap is not None else None),
                           (budget, st.memory_total_bytes), (free, st.memory_available_bytes),
                           (queue, st.queue_depth)):
            if value is not None:
                fam.add_metric([name], value)
        stamp.add_metric([name], st.t_wall_s)
    yield from (parts, workers, active, maxc, workers_n, budget, free, queue, stamp)
    yield from _pipeline_families(view)
    if pollers is None:
        return
    up = _gauge("status_up", "1 when the latest poll of the prover's /status answered.",
                ["prover"])
    latency = _gauge("status_latency_seconds", "How long the latest answered poll took.",
                     ["prover"])
    polls = CounterMetricFamily("gapwatch_cuzk_status_polls", "Polls of the prover's /status.",
                                labels=["prover"])
    errors = CounterMetricFamily("gapwatch_cuzk_status_errors",
                                 "Polls of the prover's /status that gave no snapshot, by reason "
                                 "(refused, timeout, http_404, bad_json...).",
                                 labels=["prover", "reason"])
    for p in pollers:
        up.add_metric([p.prover], 1.0 if p.state == "ok" else 0.0)
        if p.last_latency_ms is not None:
            latency.add_metric([p.prover], p.last_latency_ms / 1000.0)
        polls.add_metric([p.prover], p.polls)
        for reason in (*ERROR_REASONS, *sorted(set(p.errors) - set(ERROR_REASONS))):
            errors.add_metric([p.prover, reason], p.errors.get(reason, 0))
    yield from (up, latency, polls, errors)
