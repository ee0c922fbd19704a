"""The alert rules in deploy/prometheus are valid and behave as their unit tests say.

Runs the real `promtool` (Debian package `prometheus`); without it the tests are skipped with a
reason that says how to get it, so a CI log shows what was not checked.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

DEPLOY = Path(__file__).resolve().parent.parent / "deploy" / "prometheus"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None,
    reason="SKIPPED LOUDLY: promtool not found; the alert rules were NOT tested "
    "(install it: apt-get install -y prometheus)",
)
if PROMTOOL is None:  # a skip reason hides behind -rs; a warning shows in every summary
    warnings.warn("promtool not found: deploy/prometheus alert rules NOT tested", stacklevel=1)


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], cwd=DEPLOY, capture_output=True, text=True,
                          timeout=60, check=False)


@needs_promtool
def test_alert_rules_pass_their_promtool_unit_tests() -> None:
    done = _promtool("test", "rules", "gapwatch.rules.test.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@needs_promtool
def test_rules_and_scrape_config_are_valid() -> None:
    rules = _promtool("check", "rules", "gapwatch.rules.yml")
    assert rules.returncode == 0, rules.stdout + rules.stderr
    assert "19 rules found" in rules.stdout
    config = _promtool("check", "config", "prometheus.yml")
    assert config.returncode == 0, config.stdout + config.stderr


def unit_test_groups(text: str) -> list[str]:
    """A promtool rules test file cut before each of its test groups: the part before the
    first (rule files, evaluation interval, `tests:`), then one part per group."""
    return re.split(r"(?m)^(?=  - interval:)", text)


@needs_promtool
def test_a_broken_rule_expectation_fails(tmp_path: Path) -> None:
    """The harness can fail: an expectation the rules do not meet is reported as a failure."""
    (tmp_path / "gapwatch.rules.yml").write_text((DEPLOY / "gapwatch.rules.yml").read_text())
    test = (DEPLOY / "gapwatch.rules.test.yml").read_text()
    # Claim the sustained breakdown fires at 3m, before its `for: 2m` could have elapsed.
    broken = test.replace("      - eval_time: 8m\n        alertname: GapwatchBreakdownSustained",
                          "      - eval_time: 3m\n        alertname: GapwatchBreakdownSustained", 1)
    assert broken != test
    # The file's preamble and the group the change is in: promtool tests each group apart, and
    # the others pass here as in the whole file's run above (which costs ~2.5 CPU-s; this one
    # group ~0.1).
    head, *groups = unit_test_groups(broken)
    changed = [g for g, was in zip(groups, unit_test_groups(test)[1:], strict=True) if g != was]
    assert len(changed) == 1
    (tmp_path / "t.yml").write_text(head + changed[0])
    assert PROMTOOL is not None
    done = subprocess.run([PROMTOOL, "test", "rules", "t.yml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert "GapwatchBreakdownSustained" in done.stdout + done.stderr


def test_every_alert_named_in_the_issue_exists() -> None:
    rules = (DEPLOY / "gapwatch.rules.yml").read_text()
    for name in ("GapwatchBreakdownSustained", "GapwatchGpuIdleHigh",
                 "GapwatchSamplerFallingBehind", "GapwatchExporterAbsent",
                 "GapwatchRecordingFailing", "GapwatchGpuHardwareError", "GapwatchGpuThrottled",
                 "GapwatchPoStLate", "GapwatchPoStFailed", "GapwatchPoStAtRisk",
                 "GapwatchPoStNotTimed",
                 "GapwatchProverRestarted", "GapwatchProverErrors", "GapwatchProverWarning",
                 "GapwatchGpuJobLost"):
        assert f"alert: {name}" in rules
