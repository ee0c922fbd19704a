"""The prover's events on `/metrics`: counted as they pass through the session, read at scrape.

Who calls it: `gapwatch.sinks.metrics.MetricsSink` (counts each `ProverEvent` under its lock)
and `gapwatch.sinks.prometheus.GapwatchCollector` (`families`, at every scrape). Prover-neutral:
what a proof kind or an event kind is comes from the events.

Families (every kind/level and every verdict start at 0 so that `increase()` works from the
first scrape; the alert rules in deploy/prometheus/gapwatch.rules.yml read them):
- `gapwatch_prover_events_total{kind,level}`: restarts (`kind="restart"`), what they cost
  (`restart_cost`), errors (failure lines, panics: one incident once, a panic and cuzk's
  `... task panicked` line for it one event, `gapwatch.cuzk.errors.Incidents`), lost GPU jobs
  (`lost_job`), warnings of failures to come (`warning`: cuzk's pinned pool churning, what
  the alert GapwatchProverWarning says), what the logs show of the prover's setup (`setup`:
  cuzk's logs of two daemons; no failure, no alert), and
  watched proofs (`proof`: each proof once, at the level of its first word, `ProofOnce`:
  `level="error"` is a late one, counted when it passed its deadline still running or, said
  first at its end, then, one lost in a restart, or a failed one; `warning` at risk or not
  timed; `info` on time);
- `gapwatch_proofs_total{proof_kind,verdict}`: watched proofs (PoSt) that ended, by verdict
  (`ok`, `at_risk`, `late`, `unknown`: one whose begin was not read, so not timed; `failed`:
  the prover said it failed, counted when its failure line is read: the alert rule
  GapwatchPoStFailed reads it);
- `gapwatch_proof_seconds{proof_kind}` (histogram): a completed proof, arrival to end (a
  failed one is not: its time is to its failure, no proof's latency; nor are its phases);
- `gapwatch_proof_phase_seconds{proof_kind,phase}` (histogram): its queue, synthesis, GPU wait,
  GPU and finalize time, or, proved in one step (the prover's pipeline off), its queue and
  prove time (synthesis and GPU in one call); a phase its lines did not say is not observed;
- `gapwatch_proof_last_seconds{proof_kind}`: the latest completed proof's latency (the fleet
  view's PoSt column);
- `gapwatch_proofs_late_total{proof_kind}`: watched proofs that went late, each once: past its
  deadline still running, ended late, or lost in a prover restart (the fleet view's PoSt
  column: `gapwatch_proofs_total{verdict="late"}` counts only those that ended, and a
  WinningPoSt stuck past its deadline then lost in a restart read "0 late" there);
- `gapwatch_prover_restart_cost_seconds_total`: GPU time restarts cost (each one stretch, less
  its new run's wait for its first job: no work, not the restart's, `ProverEvent.cost_s`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from gapwatch.core.models import PROOF_PHASES, PROOF_VERDICTS, PROVER_EVENT_KINDS, ProverEvent
from gapwatch.core.prover_watch import LateOnce, ProofOnce

#: Proof latency buckets (s): WinningPoSt's 30 s epoch and WindowPoSt's 30 min both fall on one.
PROOF_BUCKETS_S: tuple[float, ...] = (
    1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0,
)
LEVELS = ("info", "warning", "error")
#: Proof kinds always exported (cuzk's PoSt), so the histograms exist before the first proof.
KNOWN_PROOF_KINDS = ("winning-post", "window-post")


@dataclass(slots=True)
class _Histogram:
    buckets: list[int] = field(default_factory=lambda: [0] * len(PROOF_BUCKETS_S))
    count: int = 0
    sum_s: float = 0.0

    def observe(self, v: float) -> None:
        self.count += 1
        self.sum_s += v
        for i, bound in enumerate(PROOF_BUCKETS_S):
            if v <= bound:
                self.buckets[i] += 1

    def copy(self) -> _Histogram:
        return _Histogram(list(self.buckets), self.count, self.sum_s)


@dataclass(slots=True)
class ProverEventCounts:
    """What the sink counted of the prover's events (copied whole for a scrape)."""

    events: dict[tuple[str, str], int] = field(default_factory=dict)
    proofs: dict[tuple[str, str], int] = field(default_factory=dict)
    latency: dict[str, _Histogram] = field(default_factory=dict)
    phases: dict[tuple[str, str], _Histogram] = field(default_factory=dict)
    restart_cost_s: float = 0.0
    #: The latest completed proof's latency (arrival to end), per proof kind.
    last_s: dict[str, float] = field(default_factory=dict)
    #: Proofs that went late, each once (`went_late`, `LateOnce`), per proof kind.
    late: dict[str, int] = field(default_factory=dict)
    _late_once: LateOnce = field(default_factory=LateOnce)
    _proof_once: ProofOnce = field(default_factory=ProofOnce)

    def count(self, ev: ProverEvent) -> None:
        if self._proof_once.first(ev):  # a proof's later word (its end after it went late)
            key = (ev.kind, ev.level)  # is the same proof: counted once
            self.events[key] = self.events.get(key, 0) + 1
        cost = ev.cost_s  # the new run's wait for its first job is no work, not the restart
        if ev.kind == "restart_cost" and cost is not None:
            self.restart_cost_s += cost
        p = ev.proof
        if self._late_once.first(ev) and p is not None:
            self.late[p.proof_kind] = self.late.get(p.proof_kind, 0) + 1
        if ev.kind != "proof" or p is None or not p.done:
            return
        pk = (p.proof_kind, p.verdict)
        self.proofs[pk] = self.proofs.get(pk, 0) + 1
        if not p.proved:  # failed: counted by verdict, its time is no proof's latency
            return
        if p.total_s is not None:
            self.latency.setdefault(p.proof_kind, _Histogram()).observe(p.total_s)
            self.last_s[p.proof_kind] = p.total_s
        for phase, v in p.phases():
            if v is not None:
                self.phases.setdefault((p.proof_kind, phase), _Histogram()).observe(v)

    def copy(self) -> ProverEventCounts:
        return ProverEventCounts(
            dict(self.events), dict(self.proofs),
            {k: h.copy() for k, h in self.latency.items()},
            {k: h.copy() for k, h in self.phases.items()}, self.restart_cost_s,
            dict(self.last_s), dict(self.late))


def _buckets(h: _Histogram) -> list[tuple[str, float]]:
    out = [(repr(b), float(n)) for b, n in zip(PROOF_BUCKETS_S, h.buckets, strict=True)]
    out.append(("+Inf", float(h.count)))
    return out


def families(c: ProverEventCounts) -> Iterator[Metric]:
    events = CounterMetricFamily(
        "gapwatch_prover_events", "Prover events (restart, restart_cost, error, lost_job, "
        "warning: a sign of failures to come, setup: how the prover is set up, proof), by "
        "level; each proof once, at its first word (at level error: late, "
        "lost in a restart, or failed), each incident once (a panic and its task panicked "
        "line: one error).", labels=["kind", "level"])
    for kind in PROVER_EVENT_KINDS:
        for level in LEVELS:
            events.add_metric([kind, level], c.events.get((kind, level), 0))
    proof_kinds = sorted(set(KNOWN_PROOF_KINDS) | {k for k, _ in c.proofs} | set(c.latency))
    proofs = CounterMetricFamily("gapwatch_proofs", "Watched proofs (PoSt) that ended, by "
                                 "verdict against their deadline (failed: the prover said it "
                                 "failed).", labels=["proof_kind", "verdict"])
    for pk in proof_kinds:
        for verdict in PROOF_VERDICTS:
            proofs.add_metric([pk, verdict], c.proofs.get((pk, verdict), 0))
    went = CounterMetricFamily("gapwatch_proofs_late", "Watched proofs (PoSt) that went late, "
                               "each once: past its deadline still running, ended late, or "
                               "lost in a prover restart.", labels=["proof_kind"])
    for pk in sorted(set(proof_kinds) | set(c.late)):
        went.add_metric([pk], c.late.get(pk, 0))
    latency = HistogramMetricFamily("gapwatch_proof_seconds", "A completed watched proof's "
                                    "latency, arrival to end.", labels=["proof_kind"])
    phases = HistogramMetricFamily("gapwatch_proof_phase_seconds", "A completed watched "
                                   "proof's phases: queue, synthesis, gpu_wait, gpu, finalize; "
                                   "prove: synthesis and GPU in one call (pipeline off).",
                                   labels=["proof_kind", "phase"])
    for pk in proof_kinds:
        h = c.latency.get(pk, _Histogram())
        latency.add_metric([pk], _buckets(h), sum_value=h.sum_s)
        for phase in PROOF_PHASES:
            ph = c.phases.get((pk, phase), _Histogram())
            phases.add_metric([pk, phase], _buckets(ph), sum_value=ph.sum_s)
    last = GaugeMetricFamily("gapwatch_proof_last_seconds", "The latest completed watched "
                             "proof's latency, arrival to end (absent before the first).",
                             labels=["proof_kind"])
    for pk, seconds in sorted(c.last_s.items()):
        last.add_metric([pk], seconds)
    cost = CounterMetricFamily("gapwatch_prover_restart_cost_seconds", "GPU time restarts "
                               "cost: the old run's last GPU work to the new run's first, "
                               "less the new run's wait for its first job (no work).")
    cost.add_metric([], c.restart_cost_s)
    yield from (events, proofs, went, latency, phases, last, cost)
