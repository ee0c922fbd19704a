"""cuzk's failures as error events: its ERROR lines, its self-check failures, its panics.

Who calls it: `gapwatch.cuzk.watch.CuzkWatch` (every log event). Pure.

Which lines (cuzk-upstream-paths.md 4.2; every one is in tests/data/cuzk-upstream/cuzk.log):
every tracing line at level ERROR (`partition GPU proving failed` / `... task panicked`,
engine.rs:656, 679; `GPU proving failed` 977, 998; `GPU prove start failed` 3282;
`partition synthesis failed` 1784; `synthesis failed` 2855; `Phase 7: C1 parse/SRS load failed`
2217; `... self-check FAILED — proof will NOT be returned to caller` 572, 771, 901, 2565;
`prove failed`, cuzk-server service.rs:164); the WARN `PoRep proof self-check FAILED — proof is
invalid` (prover.rs:261); and a panic message (`gapwatch.cuzk.panics`), one event however many
lines it had. A failed partition fails its whole job (the rest are skipped, engine.rs:1635,
3037), so the GPU idles after it: a gap that follows an error says so
(`gapwatch.core.cuzk.PipelineFacts.error_words`).
"""

from __future__ import annotations

from gapwatch.core import fmt
from gapwatch.core.models import LogEvent, ProverEvent
from gapwatch.cuzk import panics

SELF_CHECK_FAILED = "self-check FAILED"
#: sppark 0.1.14 (cuzk's Cargo.lock) is the version lotus#13634 ties to a GPU memory leak.
_OOM_NOTE = ("; cuzk pins sppark 0.1.14, which filecoin-project/lotus#13634 ties to a GPU memory "
             "leak (fixed in sppark v0.1.15): watch the process's GPU memory over days")


def is_failure(ev: LogEvent) -> bool:
    """A line that says cuzk failed (an ERROR line, a self-check FAILED, a panic)."""
    if ev.kind == panics.KIND:
        return True
    return ev.kind == "tracing" and (ev.level == "ERROR" or (
        ev.level == "WARN" and SELF_CHECK_FAILED in ev.name))


def failure_words(ev: LogEvent) -> str:
    """The failure in one line: what, which job and partition, the error."""
    if ev.kind == panics.KIND:
        message = str(ev.fields.get("message", "")).replace("\n", " | ")
        oom = _OOM_NOTE if "out of memory" in message else ""
        return fmt.visible(f"panic in {ev.fields.get('location', '?')}: {message}{oom}")
    where = "".join([f" job {ev.job_id}" if ev.job_id else "",
                     f" partition {ev.partition}" if ev.partition is not None else "",
                     f" GPU {ev.gpu}" if ev.gpu is not None else ""])
    error = ev.fields.get("error")
    return fmt.visible(f"{ev.name}{where}" + (f": {error}" if error is not None else ""))


def error_event(ev: LogEvent) -> ProverEvent | None:
    if not is_failure(ev):
        return None
    return ProverEvent(t_wall_s=ev.t_wall_s, kind="error", level="error",
                       message=failure_words(ev), job_id=ev.job_id, gpu=ev.gpu)
