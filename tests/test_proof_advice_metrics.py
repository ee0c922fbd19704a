"""`gapwatch_proof_advice_info`'s label bounds (`gapwatch.sinks.proof_advice_metrics`): every
label value from a fixed set however the advice comes, so the series count stays bounded. The
advice makes none outside them today; each bound is pinned here all the same (with all three
removed, every test that named the family still passed)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import pytest

from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.cuzk.post_advice import ProofAdvice
from gapwatch.sinks import proof_advice_metrics
from gapwatch.sinks.proof_advice_metrics import advice_labels

NO_EVENTS = cast(StoreSnapshot, SimpleNamespace(prover_events=()))


def _labels_of(monkeypatch: pytest.MonkeyPatch, *said: ProofAdvice) -> list[dict[str, str]]:
    """The labels exported where the PoSt advice says `said`."""
    monkeypatch.setattr(proof_advice_metrics, "proof_advice", lambda _troubles: list(said))
    return advice_labels(NO_EVENTS)


def _advice(kind: str = "winning-post", verdict: str = "late",
            setting: str | None = "[memory] eviction_min_idle") -> ProofAdvice:
    return ProofAdvice(kind, verdict, 1, None, None, setting, "words")


def test_a_proof_kind_outside_the_post_kinds_is_exported_as_other(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert _labels_of(monkeypatch, _advice(kind="porep-c2-sector-4711")) == [
        {"proof_kind": "other", "verdict": "late", "setting": "[memory] eviction_min_idle"}]


def test_a_setting_outside_the_advices_settings_is_exported_as_none(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert _labels_of(monkeypatch, _advice(setting="[memory] free text 12.5 GiB"),
                      _advice(verdict="failed", setting=None)) == [
        {"proof_kind": "winning-post", "verdict": "late", "setting": "none"},
        {"proof_kind": "winning-post", "verdict": "failed", "setting": "none"}]


def test_a_verdict_outside_the_advices_verdicts_is_left_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert _labels_of(monkeypatch, _advice(verdict="late, job 4711"), _advice()) == [
        {"proof_kind": "winning-post", "verdict": "late", "setting": "[memory] eviction_min_idle"}]
