"""The PoSt advice on /metrics: what to change for the PoSt that failed, were lost, late or at
risk, as a bounded label set.

Who calls it: `gapwatch.sinks.prometheus.GapwatchCollector.collect`, at every scrape. The facts
come from the one rule every "What to change" goes through for proofs
(`gapwatch.cuzk.post_advice.proof_advice` over `gapwatch.core.prover_watch.ProofTroubles` of
the prover events the session holds, as the help screen and summary.md read them), so the box's
/metrics names the setting its report and dashboard name. `gapwatch fleet` reads it for the
box whose PoSts go wrong: its verdict (`gapwatch_gpu_verdict_info`) is one GPU's stall and says
`none` for a box whose WinningPoSts go late behind an evicted SRS.

Family:
- `gapwatch_proof_advice_info{proof_kind,verdict,setting}` 1: one series a kind of PoSt, how
  it went wrong (`failed`, `lost`, `late`, `at_risk`) and the cuzk setting the advice names
  (`[memory] eviction_min_idle`; `none` where no cuzk setting frees it: a failed or lost
  proof, a late one whose longest phase no setting shortens). Absent while no PoSt went
  wrong. Every label value is one of a fixed set (`POST_NAMES`' kinds else `other`, the four
  verdicts, `CAUSE_SETTINGS`' settings and `none`): the error's words and the proof's figures
  stay in the report, so the series count stays bounded however long gapwatch runs.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import InfoMetricFamily, Metric

from gapwatch.core.prover_watch import ProofTroubles
from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.cuzk.post import POST_NAMES
from gapwatch.cuzk.post_advice import CAUSE_SETTINGS, VERDICTS, proof_advice
from gapwatch.cuzk.why_now import NO_CAUSE

#: The label a proof kind outside cuzk's PoSt kinds is exported under (bounded).
OTHER_KIND = "other"


def advice_labels(snap: StoreSnapshot) -> list[dict[str, str]]:
    """Each (kind, verdict, setting) the PoSt advice over the session's prover events says,
    once, in the advice's order (failed first), every value from its fixed set."""
    out: list[dict[str, str]] = []
    for a in proof_advice(ProofTroubles(snap.prover_events).troubles()):
        if a.verdict not in VERDICTS:  # none other is made: bounded all the same
            continue
        # "none" where no setting is named: the verdict's word for it (`why_now.NO_CAUSE`).
        setting = a.setting if a.setting is not None else NO_CAUSE
        labels = {"proof_kind": a.proof_kind if a.proof_kind in POST_NAMES else OTHER_KIND,
                  "verdict": a.verdict,
                  "setting": setting if setting in CAUSE_SETTINGS.values() else NO_CAUSE}
        if labels not in out:
            out.append(labels)
    return out


def proof_advice_families(snap: StoreSnapshot) -> Iterator[Metric]:
    """The PoSt advice family (no series while no PoSt went wrong)."""
    info = InfoMetricFamily("gapwatch_proof_advice", "What to change for the PoSt that failed, "
                            "were lost, late or at risk, as gapwatch's report says it: the "
                            "proof kind, how it went wrong, and the cuzk setting its advice "
                            "names ('none': no cuzk setting frees it).")
    for labels in advice_labels(snap):
        info.add_metric([], labels)
    yield info
