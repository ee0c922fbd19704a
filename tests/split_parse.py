"""A `--log` file parsed in two processes inside a test (`gapwatch.offline.log_split`): the
machine made to allow it, and each half the parent takes from its child counted."""

from __future__ import annotations

import pytest

from gapwatch.offline import log_split
from gapwatch.offline.gap_spool import EventSpool


def two_processes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Two CPUs and no thread in the way (the tests that call it start with none left running:
    conftest `no_stray_threads`); the list gets a 1 for every child's half taken
    (`EventSpool.adopt`)."""
    monkeypatch.setattr(log_split, "usable_cpus", lambda: 2)
    monkeypatch.setattr(log_split, "can_share_logs", lambda: True)
    adopted: list[int] = []
    adopt = EventSpool.adopt

    def counted(self: EventSpool, *args: object) -> None:
        adopted.append(1)
        adopt(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(EventSpool, "adopt", counted)
    return adopted
