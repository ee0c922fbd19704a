"""The prover's own pipeline on `/metrics`: cuzk `/status` snapshots and the pollers' health.

Who calls it: `gapwatch.sinks.prometheus.GapwatchCollector.collect`, at every scrape, with the
latest snapshot per prover from the store and the runtime's poller statuses.

Families (label `prover` = the status URL's host:port, "sim" for the simulator's own feed):
- `gapwatch_cuzk_partitions{prover,state}`: partitions of the jobs in flight by state;
- `gapwatch_cuzk_workers{prover,gpu,state}`: GPU workers by state (idle, proving);
- `gapwatch_cuzk_synthesis_active{prover}`, `gapwatch_cuzk_synthesis_slots{prover}`;
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
from gapwatch.sources.cuzk_status import ERROR_REASONS, PollerStatus


def _gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"gapwatch_cuzk_{name}", doc, labels=labels)


def prover_families(latest: dict[str, ProverStatus],
                    pollers: list[PollerStatus] | None) -> Iterator[Metric]:
    """Every prover family for one scrape (`pollers` None: no runtime, export what is stored)."""
    down = {p.prover for p in pollers or () if p.state != "ok"}
    parts = _gauge("partitions", "Partitions of the prover's jobs in flight, by state "
                   "(cuzk /status).", ["prover", "state"])
    workers = _gauge("workers", "The prover's GPU workers by state (proving includes the GPU "
                     "mutex wait and tail work).", ["prover", "gpu", "state"])
    active = _gauge("synthesis_active", "Synthesis slots in use.", ["prover"])
    slots = _gauge("synthesis_slots", "Synthesis slots (cuzk synthesis.max_concurrent).",
                   ["prover"])
    queue = _gauge("queue_depth", "Jobs waiting in the prover's scheduler queue.", ["prover"])
    stamp = _gauge("status_timestamp_seconds", "Unix time of the latest snapshot.", ["prover"])
    for name, st in sorted(latest.items()):
        if name in down:
            continue
        for state in (*PARTITION_STATES, *sorted(set(st.partition_counts) - set(PARTITION_STATES))):
            if state in st.partition_counts:
                parts.add_metric([name, state], st.partition_counts[state])
        by: dict[tuple[str, str], int] = {}
        for w in st.workers:
            key = ("" if w.gpu is None else str(w.gpu), w.state)
            by[key] = by.get(key, 0) + 1
        for gpu in sorted({k[0] for k in by}):
            for state in (*WORKER_STATES, *sorted({k[1] for k in by} - set(WORKER_STATES))):
                workers.add_metric([name, gpu, state], by.get((gpu, state), 0))
        for fam, value in ((active, st.synthesis_active), (slots, st.synthesis_max),
                           (queue, st.queue_depth)):
            if value is not None:
                fam.add_metric([name], value)
        stamp.add_metric([name], st.t_wall_s)
    yield from (parts, workers, active, slots, queue, stamp)
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
