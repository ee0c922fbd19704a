"""The breakdown alert says why and what to change: its `why`, `cause` and `setting`
annotations read the box's own verdict (`gapwatch_gpu_verdict_info`, payoff ratio). promtool's
unit tests (deploy/prometheus/gapwatch.rules.test.yml) pin the words; here: those expectations
bite (a rule that stops reading the verdict fails them), and the series they read are the ones
gapwatch exports."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from test_export_promtool import unit_test_groups

from gapwatch.core.store_snapshot import StoreSnapshot
from gapwatch.sinks.verdict_metrics import verdict_families

DEPLOY = Path(__file__).resolve().parent.parent / "deploy" / "prometheus"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason=(
    "SKIPPED LOUDLY: promtool not found; the alert annotations were NOT tested"))


@needs_promtool
def test_an_alert_that_stops_reading_the_verdict_fails_its_promtool_test(tmp_path: Path) -> None:
    rules = (DEPLOY / "gapwatch.rules.yml").read_text()
    broken = rules.replace("gapwatch_gpu_verdict_info{", "gapwatch_gpu_verdict{")
    assert broken != rules
    (tmp_path / "gapwatch.rules.yml").write_text(broken)
    # The unit tests fed the verdict's series, after the file's preamble: the change reads
    # another series, so only they can tell it (in the others both series are absent alike).
    # The whole file is ~2.5 CPU-s of promtool, these ~0.1.
    head, *groups = unit_test_groups((DEPLOY / "gapwatch.rules.test.yml").read_text())
    fed = [g for g in groups if "series: 'gapwatch_gpu_verdict_info{" in g]
    assert fed
    (tmp_path / "t.yml").write_text(head + "".join(fed))
    assert PROMTOOL is not None
    done = subprocess.run([PROMTOOL, "test", "rules", "t.yml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert "pinned pool could not pin" in done.stdout + done.stderr


def test_the_rules_read_only_series_gapwatch_exports() -> None:
    from gapwatch.core.store_snapshot import StoreSnapshot

    rules = (DEPLOY / "gapwatch.rules.yml").read_text()
    read = set(re.findall(r"gapwatch_gpu_verdict_[a-z_]+", rules))
    snap = StoreSnapshot(0, (), {}, (), (), (), {}, ())
    exported = {m.name + ("_info" if m.type == "info" else "") for m in verdict_families(snap)}
    assert read and read <= exported, read - exported


def test_the_alerts_why_pinned_by_promtool_is_the_verdicts_own_line() -> None:
    """The alert's `why` (made by Prometheus from the verdict's labels) says what
    `WhyNow.line` says for the same facts, the setting with its step ("raise ..."), as the
    dashboard's headline does; it said "change SETTING" while the headline said "raise"."""
    from gapwatch.cuzk.knobs import RAISE
    from gapwatch.cuzk.why_now import WhyNow

    words = "a/b/c copied from pageable memory: the pinned pool could not pin"
    why = WhyNow(0, "BREAKDOWN", "pinned_pool", words, "[memory] safety_margin", "", 1.8,
                 step=RAISE, payoff_span_s=30.0, payoff_gaps=12)
    test = (DEPLOY / "gapwatch.rules.test.yml").read_text()
    assert f'setting="{why.setting}",step="{why.change_words()}"' in test
    assert f'why: "{why.line()}"' in test


def test_the_post_alerts_say_what_to_change_from_the_post_advice_gapwatch_exports(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`GapwatchPoStLate`, `...Failed` and `...AtRisk` said which box and "the report names
    the setting": the on-call person had to open gapwatch on the box to learn it. Each reads
    the box's `gapwatch_proof_advice_info` for its own verdicts (late and lost; failed; at
    risk: every verdict the advice says, each by one alert), by the label names and the `none`
    gapwatch exports; promtool's unit tests pin the words."""
    from gapwatch.cuzk.post_advice import VERDICTS, ProofAdvice
    from gapwatch.cuzk.why_now import NO_CAUSE
    from gapwatch.sinks import proof_advice_metrics

    rules = (DEPLOY / "gapwatch.rules.yml").read_text()
    by_alert = {}
    for alert in ("GapwatchPoStLate", "GapwatchPoStFailed", "GapwatchPoStAtRisk"):
        rule = rules.split(f"- alert: {alert}\n", 1)[1].split("- alert:", 1)[0]
        read = re.findall(r'gapwatch_proof_advice_info\{job="%s",instance="%s",'
                          r'verdict=~"([a-z_|]+)"\}', rule)
        assert len(read) == 1, alert
        assert 'label "proof_kind" $a' in rule and 'label "verdict" $a' in rule
        assert f'eq (label "setting" $a) "{NO_CAUSE}"' in rule
        by_alert[alert] = read[0].split("|")
    assert by_alert == {"GapwatchPoStLate": ["late", "lost"], "GapwatchPoStFailed": ["failed"],
                        "GapwatchPoStAtRisk": ["at_risk"]}
    assert sorted(v for vs in by_alert.values() for v in vs) == sorted(VERDICTS)
    # The labels the rules read are those exported (a late WinningPoSt behind an evicted SRS,
    # a failed one no setting frees), as promtool's input series name them.
    monkeypatch.setattr(proof_advice_metrics, "proof_advice", lambda _troubles: [
        ProofAdvice("winning-post", "late", 1, None, None, "[memory] eviction_min_idle", "w"),
        ProofAdvice("winning-post", "failed", 1, None, None, None, "w")])
    snap = cast(StoreSnapshot, SimpleNamespace(prover_events=()))
    test = (DEPLOY / "gapwatch.rules.test.yml").read_text()
    for labels in proof_advice_metrics.advice_labels(snap):
        series = ",".join(f'{k}="{v}"' for k, v in labels.items())
        assert f'instance="box1:9400",{series}}}' in test, series
