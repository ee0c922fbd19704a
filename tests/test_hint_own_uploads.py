"""A `pcie_starved` gap's hint names the partitions its own GPU was uploading that were
synthesised unpinned, not the ones whose `is_pinned=false` warning fell in its window: a
partition warns when it is synthesised, ~20 s before a GPU takes it from the queue all GPUs
share, so those were still queued (with several GPUs mostly other GPUs' work; with one GPU
never the partition being uploaded). The buffer's record of partitions synthesised unpinned
and not yet taken is bounded."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gapwatch.cli import main
from gapwatch.core.config import DetectorConfig
from gapwatch.core.evidence import MAX_EVENTS_KEPT, MAX_UNPINNED_KEPT, EvidenceBuffer
from gapwatch.core.evidence_types import EventEvidence
from gapwatch.core.hints import hint_cause, memory_phrases
from gapwatch.core.models import LogEvent

#: `porep-1000-6 partitions 4, 5` as a hint names partitions (`hints.parts_words`).
PARTS = re.compile(r"(porep-\d+-\d+) partitions? (\d+(?:, \d+)*)")
BEFORE_S = DetectorConfig().evidence_before_s


def _record(tmp: Path, gpus: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The last version of each gap, and the log lines, of a simulated pageable run."""
    cfg = tmp / "gw.toml"
    cfg.write_text(f"[sim]\ngpus = {gpus}\n")
    out = tmp / "rec.jsonl"
    assert main(["record", "--config", str(cfg), "--source", "sim:pageable", "--speed", "0",
                 "--seed", "5", "--duration", "90", "--quiet", "--out", str(out)]) == 0
    gaps: dict[int, dict[str, Any]] = {}
    logs = []
    for line in out.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "gap":
            gaps[rec["gap_id"]] = rec
        elif rec.get("type") == "log":
            logs.append(rec)
    return list(gaps.values()), logs


def _named(hint: str) -> set[tuple[str, int]]:
    return {(job, int(p)) for job, nums in PARTS.findall(hint) for p in nums.split(", ")}


@pytest.mark.parametrize("gpus", [1, 3])
def test_a_starved_gaps_hint_names_only_its_own_gpus_unpinned_uploads(
        tmp_path: Path, gpus: int) -> None:
    gaps, logs = _record(tmp_path, gpus)
    unpinned = {(e["job_id"], e["partition"]): e["t_wall_s"] for e in reversed(logs)
                if e.get("warning") == "unpinned"}
    naming = [g for g in gaps if g["kind"] == "pcie_starved" and _named(g["hint"])]
    assert len({g["gpu"] for g in naming}) == gpus  # every GPU's starved gaps name some
    for g in naming:
        lo, hi = g["start_s"] - BEFORE_S, g["end_s"]
        taken = {(e["job_id"], e["partition"]): e["t_wall_s"] for e in logs
                 if e.get("gpu") == g["gpu"] and e["name"] in ("GPU_PICKUP", "GPU_START")
                 and lo <= e["t_wall_s"] <= hi}
        for part in _named(g["hint"]):
            assert part in taken, (part, g["gpu"], g["hint"])
            assert unpinned.get(part, float("inf")) < taken[part], (part, g["hint"])


def _line(t: float, name: str, job: str, partition: int, gpu: int | None = None,
          warning: str | None = None) -> LogEvent:
    return LogEvent(t, "line", "timeline", name, f"{name},{job},partition={partition}",
                    job_id=job, partition=partition, gpu=gpu, warning=warning)


def test_the_record_of_unpinned_syntheses_is_bounded() -> None:
    buf = EvidenceBuffer(before_s=2.0)
    n = MAX_UNPINNED_KEPT + 1000
    for i in range(n):
        buf.add_log(_line(float(i), "SYNTH_END", f"job-{i // 10}", i % 10, warning="unpinned"))
    assert len(buf.unpinned_waiting) == MAX_UNPINNED_KEPT
    assert (f"job-{(n - 1) // 10}", (n - 1) % 10) in buf.unpinned_waiting
    assert ("job-0", 0) not in buf.unpinned_waiting  # the oldest went first


def test_an_unpinned_upload_is_kept_when_warnings_flood_the_gap() -> None:
    buf = EvidenceBuffer(before_s=2.0)
    buf.add_log(_line(0.0, "SYNTH_END", "job-a", 3, warning="unpinned"))  # long before
    acc = buf.open_gap(0, 10.0)
    for i in range(MAX_EVENTS_KEPT * 2):  # just synthesised, still queued
        buf.add_log(_line(10.0 + i / 1000, "SYNTH_END", "job-b", i, warning="unpinned"))
    buf.add_log(_line(10.5, "GPU_PICKUP", "job-a", 3, gpu=0))
    buf.add_log(_line(10.6, "GPU_START", "job-a", 3, gpu=0))  # the same upload: not again
    buf.add_log(_line(10.7, "GPU_PICKUP", "job-b", 0, gpu=1))  # another GPU's
    uploads = [(e.job_id, e.partition, e.name) for e in acc.event_list()
               if e.synthesised_unpinned is True]
    assert uploads == [("job-a", 3, "GPU_PICKUP")]


def test_the_snapshot_groups_a_gap_by_its_own_uploads_as_its_hint_names_them() -> None:
    # The upload's warning is older than the window, so no warning is among the events.
    upload = EventEvidence(10.5, "GPU_PICKUP", 0, 3, None, "GPU_PICKUP,job-a,partition=3",
                           "job-a", synthesised_unpinned=True)
    hint = memory_phrases("pcie_starved", [upload], None, 8.5)
    assert hint == ["job-a partition 3 was synthesised with is_pinned=false, then taken by "
                    "this GPU: a/b/c in pageable memory?"]
    assert hint_cause("pcie_starved", [upload], 8.5) == \
        "partitions synthesised with is_pinned=false: a/b/c in pageable memory?"
