"""A snapshot's summary.md tells one story: every count on it is of the span it says it covers
("Covers 2.5m of data, ..."), as its own recording's report counts them, and the hints of gaps
over a restart lead with the restart, as those gaps' hints (and "What to change" beside them)
do. Over the simulated PoSt box (`sim:post`: a late WinningPoSt and a restart every ~150 s),
run at speed 0 through the runtime the dashboard runs, longer than the snapshot keeps."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from sim_recordings import ran_to_end, report_of

from gapwatch.config import build_config
from gapwatch.core.models import ProverEvent
from gapwatch.sinks.snapshot import RECORDING_NAME, SUMMARY_NAME, history_since, write_snapshot

#: The snapshot keeps the last 150 s of a session of 330 s: two late WinningPoSts and two
#: restarts in the session, one of each in the span.
HISTORY_S = 150.0
SESSION_S = 330.0


@dataclass(frozen=True)
class Taken:
    folder: Path
    summary: str
    session_events: tuple[ProverEvent, ...]
    since_s: float


@pytest.fixture(scope="module")
def taken(tmp_path_factory: pytest.TempPathFactory) -> Taken:
    config = build_config({"snapshot": {"auto": False, "history_s": HISTORY_S}})
    rt = ran_to_end(config, "sim:post", SESSION_S)
    snap = rt.store.snapshot()
    since = history_since(snap, HISTORY_S)
    assert since is not None
    folder = write_snapshot(tmp_path_factory.mktemp("snap"), snap, rt.header, config,
                            t_wall_s=since + HISTORY_S, reason="by hand (key s)")
    return Taken(folder, (folder / SUMMARY_NAME).read_text(), snap.prover_events, since)


def _late(events: tuple[ProverEvent, ...], since_s: float) -> int:
    """The proofs said late from `since_s` on (a proof is said late while it runs and again
    at its end: one proof)."""
    return len({e.job_id for e in events if e.t_wall_s >= since_s and e.proof is not None
                and e.proof.verdict == "late"})


def test_summary_md_counts_the_late_posts_of_the_span_it_covers_as_its_recordings_report(
        taken: Taken) -> None:
    """It said "Covers 5.0m of data" beside "4 WinningPoSt late" of the whole session; the
    report of its own recording said 2."""
    assert "Covers 2.5m of data" in taken.summary
    in_session = _late(taken.session_events, 0.0)
    in_span = _late(taken.session_events, taken.since_s)
    assert in_session > in_span >= 1  # the session holds more than the span: it can tell
    said = re.search(r"^PoSt: (\d+) WinningPoSt late", taken.summary, re.M)
    assert said is not None, taken.summary
    assert int(said.group(1)) == in_span
    report = report_of(taken.folder / RECORDING_NAME)
    assert f"  PoSt: {in_span} WinningPoSt late," in report


def test_summary_md_hints_of_gaps_over_a_restart_lead_with_the_restart(taken: Taken) -> None:
    """Its Hints said "synthesis did not keep up with the GPU?; pageable buffers seen" of the
    gaps over a restart, whose own hints, and "What to change" on the same page, say cuzk
    restarted. A host stall the prover gave a cause leads with it (`core.hints.prover_leads`),
    in a gap's hint and in its group line alike."""
    hints = taken.summary.split("## Hints", 1)[1].split("\n## ", 1)[0]
    # The kind as Markdown text (`fmt.markdown`: its `_` escaped).
    groups = [line for line in hints.splitlines()
              if re.match(r"- \*\*host\\?_stall\*\*", line)]
    assert len(groups) == 1, hints
    assert re.search(r"idle: cuzk restarted: the GPU waited from its old run's last work to its "
                     r"new run's first(;|$)", groups[0]), groups[0]
    assert "synthesis did not keep up" not in groups[0]
    assert "  - latest (" in hints and "): prover log: cuzk restarted: " in hints
    change = taken.summary.split("## What to change", 1)[1].split("\n## ", 1)[0]
    assert "cuzk restarted: the GPU waited for its new run: no setting" in change
