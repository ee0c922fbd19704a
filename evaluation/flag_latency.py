"""How soon BREAKDOWN is flagged, with and without the copy trace's pageable witness.

BREAKDOWN waits for a second pcie_starved gap in the window (or 3 s of starved idle); on the
H200 ramp that came 3.0-3.4 s after the first starved gap began. With the copy trace, a starved
gap whose copies were seen coming from pageable memory stands in for the second gap
(`detector.breakdown_pageable_witness`). This replays the H200 regression recordings
(tests/data/h200-copytrace, tests/data/h200-e2e) through `report`'s detection both ways and
prints, per recording: when BREAKDOWN came after the first and the second starved gap began
(data time, so the figures are exact, not timings), what it was entered on, and the BREAKDOWN
entries of the recordings that must have none (chained, host stall, transfer-bound).

    python bench/flag_latency.py [tests/data/...]

Figures: docs/benchmarks.md ("Flag latency").
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from gapwatch.config import build_config
from gapwatch.offline.report import build_report

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
CASES = ["h200-copytrace/pageable", "h200-copytrace/chained", "h200-e2e/pageable",
         "h200-e2e/chained", "h200-e2e/host-stall", "h200-e2e/host-stall-status",
         "h200-e2e/transfer-bound"]


@dataclass(frozen=True)
class Flag:
    """When BREAKDOWN came in one recording, one way."""

    case: str
    witness: bool
    #: BREAKDOWN entries (a recording without breakage must have none).
    entries: int
    #: Seconds from the first / second starved gap's start to the first BREAKDOWN (None: no
    #: BREAKDOWN, or no such gap).
    after_first_s: float | None
    after_second_s: float | None
    reason: str
    copies: int


def flag_latency(recording: Path, witness: bool) -> Flag:
    config = build_config({"detector": {"breakdown_pageable_witness": witness}})
    report = build_report(recording, config, workers=1)
    starved = [g for g in report.gaps if g.kind == "pcie_starved"]
    entered = [s for s in report.states if s.state == "BREAKDOWN"]
    first = entered[0] if entered else None

    def after(i: int) -> float | None:
        if first is None or len(starved) <= i:
            return None
        return first.t_wall_s - starved[i].start_s

    copies = report.copies.count if report.copies else 0
    case = f"{recording.parent.parent.name}/{recording.parent.name}"
    return Flag(case, witness, len(entered), after(0), after(1),
                first.reason if first is not None else "", copies)


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:+.2f} s"


def main(argv: list[str] | None = None) -> int:
    cases = [Path(a) for a in (sys.argv[1:] if argv is None else argv)] or [DATA / c for c in CASES]
    print(f"{'recording':<28} {'witness':<8} {'copies':>6} {'BREAKDOWN':>9} "
          f"{'after 1st gap':>14} {'after 2nd gap':>14}  entered on")
    for case in cases:
        for witness in (False, True):
            f = flag_latency(case / "rec.jsonl.gz", witness)
            print(f"{f.case:<28} {'on' if witness else 'off':<8} {f.copies:>6} {f.entries:>9} "
                  f"{_s(f.after_first_s):>14} {_s(f.after_second_s):>14}  {f.reason or '-'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
