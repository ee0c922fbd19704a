"""The footer's alerts name logs that are not being read; a log `replay --log` read whole is
read, not a problem (it was shown as an alert in every replay with --log, ahead of the replay's
position)."""

from __future__ import annotations

from gapwatch.engine.status import RuntimeStatus
from gapwatch.ui.widgets.status_footer import status_alerts


def _status(logs: dict[str, str]) -> RuntimeStatus:
    return RuntimeStatus(source="replay:rec.jsonl.gz", period_ms=100.0, lateness=None,
                         gpu_sources={0: "gpm"}, logs=logs)


def test_a_log_read_whole_is_no_alert_and_a_missing_one_is() -> None:
    assert status_alerts(_status({"/var/log/cuzk.log": "read whole"})) == []
    alerts = status_alerts(_status({"/var/log/cuzk.lgo": "missing: no such file"}))
    assert len(alerts) == 1 and "cuzk.lgo" in alerts[0] and "missing" in alerts[0]
