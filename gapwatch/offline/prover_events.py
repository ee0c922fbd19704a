"""The report's section on what the prover did besides gaps: watched proofs (PoSt) against their
deadlines, restarts and the stretch each cost, errors, lost GPU jobs. Text and JSON.

Who calls it: `gapwatch.commands.report` (text) and `gapwatch.offline.report.to_json`. Reads
`ProverEvent`s only (prover-neutral: cuzk's watcher derives them, `gapwatch.cuzk.watch`).
"""

from __future__ import annotations

from typing import Any

import msgspec

from gapwatch.core import fmt
from gapwatch.core.models import ProverEvent

#: Rows of each list shown in text (--json has them all).
MAX_ROWS = 40


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _final(e: ProverEvent) -> bool:
    """A proof's last word: done, or said without its end (lost in a restart, given up)."""
    return e.proof is not None and (e.proof.done or e.proof.given_up is not None)


def _proofs(events: list[ProverEvent]) -> list[ProverEvent]:
    """One row per proof: its last word (a proof said late while running, then done, is the
    done one), in the order each was last said. A job id said again after its proof's last
    word is another proof (Curio retries a PoSt lost in a restart under the same id): a row of
    its own, never the lost one overwritten."""
    rows: list[ProverEvent | None] = []
    running: dict[str | None, int] = {}
    for e in events:
        if e.kind != "proof" or e.proof is None:
            continue
        i = running.pop(e.job_id, None)
        if i is not None:
            rows[i] = None  # the same proof, said again: its later word replaces it
        if not _final(e):
            running[e.job_id] = len(rows)
        rows.append(e)
    return [e for e in rows if e is not None]


#: How the table says a proof said without its end (`ProofTiming.given_up`).
_GIVEN_UP = {"restart": "lost in restart", "too_many": "given up: too many in flight"}


def summary_line(events: list[ProverEvent]) -> str:
    proofs = _proofs(events)
    late = sum(1 for e in proofs if e.proof is not None and e.proof.verdict == "late")
    risk = sum(1 for e in proofs if e.proof is not None and e.proof.verdict == "at_risk")
    gone = sum(1 for e in proofs if e.proof is not None and e.proof.given_up is not None)
    n = {k: sum(1 for e in events if e.kind == k) for k in ("restart", "error", "lost_job")}
    # Said only when some were: the line reads as before for every log that has none.
    without = f", {gone} said without their end" if gone else ""
    return (f"Prover events: {len(proofs)} PoSt proof(s) ({late} late, {risk} at risk{without}), "
            f"{n['restart']} restart(s), {n['error']} error(s), {n['lost_job']} lost GPU job(s)")


def proof_lines(events: list[ProverEvent]) -> list[str]:
    proofs = _proofs(events)
    if not proofs:
        return []
    # In terminal cells (`fmt.cells`): wide characters and combining marks in a job id.
    jw = max(fmt.cells(fmt.visible(e.job_id or "-")) for e in proofs)
    out = ["  PoSt proofs (seconds; the whole job id, never cut)",
           f"    {'at (UTC)':<12} {'kind':<12} {'job':<{jw}} {'total':>7} {'queue':>6} "
           f"{'synth':>6} {'GPU wait':>8} {'GPU':>6} {'finalize':>8} {'deadline':>8} verdict"]
    for e in proofs[:MAX_ROWS]:
        p = e.proof
        assert p is not None
        verdict = (p.verdict if p.done else f"{p.verdict} (running)" if p.given_up is None
                   else f"{_GIVEN_UP[p.given_up]}, {p.verdict} so far")
        out.append(f"    {fmt.clock(e.t_wall_s, millis=True):<12} {p.proof_kind:<12} "
                   f"{fmt.fit(fmt.visible(e.job_id or '-'), jw)} {_s(p.total_s):>7} "
                   f"{_s(p.queue_s):>6} "
                   f"{_s(p.synth_s):>6} {_s(p.gpu_wait_s):>8} {_s(p.gpu_s):>6} "
                   f"{_s(p.finalize_s):>8} {_s(p.deadline_s):>8} {verdict}")
        if p.verdict != "ok" and p.waited_behind and p.gpu_wait_s:
            out.append(f"      waited for a GPU worker behind: {', '.join(p.waited_behind)}")
        if p.setting:
            out.append(f"      setting: {p.setting}")
    if len(proofs) > MAX_ROWS:
        out.append(f"    ... {len(proofs) - MAX_ROWS} more (--json for all)")
    return out


def _message_lines(title: str, events: list[ProverEvent]) -> list[str]:
    if not events:
        return []
    out = [f"  {title}"]
    for e in events[:MAX_ROWS]:
        out.append(f"    {fmt.clock(e.t_wall_s, millis=True)} {e.message}")
        if e.parts:
            parts = ", ".join(f"{p.name} {fmt.clock(p.start_s)}-{fmt.clock(p.end_s)} "
                              f"({p.end_s - p.start_s:.1f} s)" for p in e.parts)
            out.append(f"      parts (they may overlap): {parts}")
    if len(events) > MAX_ROWS:
        out.append(f"    ... {len(events) - MAX_ROWS} more (--json for all)")
    return out


def prover_event_lines(events: list[ProverEvent]) -> list[str]:
    """The report's text section ([] when the prover said nothing of the kind)."""
    if not events:
        return []
    restarts = [e for e in events if e.kind in ("restart", "restart_cost")]
    lines = [summary_line(events)]
    lines += proof_lines(events)
    lines += _message_lines("Restarts (and the GPU time each cost, as one stretch)", restarts)
    lines += _message_lines("Errors", [e for e in events if e.kind == "error"])
    lines += _message_lines("Lost GPU jobs", [e for e in events if e.kind == "lost_job"])
    return [fmt.visible(line) for line in lines]


def prover_events_json(events: list[ProverEvent]) -> dict[str, Any]:
    """Every event, by kind, as the recording writes them (plus each stretch's length)."""
    out: dict[str, Any] = {"summary": summary_line(events)}
    for kind in ("proof", "restart", "restart_cost", "error", "lost_job"):
        rows = []
        for e in events:
            if e.kind != kind:
                continue
            row = msgspec.to_builtins(e)
            row.pop("type", None)
            if e.length_s is not None:
                row["length_s"] = e.length_s
            rows.append(row)
        out[kind] = rows
    return out
