"""cuzk's failures as error events: its ERROR lines, its self-check failures, its panics.

Who calls it: `gapwatch.cuzk.watch.CuzkWatch` (every log event). Pure.

Which lines (cuzk-upstream-paths.md 4.2; every one is in tests/data/cuzk-upstream/cuzk.log): every
tracing line at level ERROR (`partition GPU proving failed` / `... task panicked`, engine.rs:656,
679; `GPU proving failed` 977, 998; `GPU prove start failed` 3282; `partition synthesis failed`
1784; `synthesis failed` 2855; `Phase 7: C1 parse/SRS load failed` 2217; `... self-check FAILED —
proof will NOT be returned to caller` 572, 771, 901, 2565; `prove failed`, cuzk-server
service.rs:164); the WARN `PoRep proof self-check FAILED — proof is invalid` (prover.rs:261); the
WARN `acquire request exceeds total budget — will block until possible` (memory.rs:188: never
granted, so its job waits until cuzk restarts); and a panic message (`gapwatch.cuzk.panics`), one
event however many lines it had. A failed partition fails its whole job (the rest are skipped,
engine.rs:1635, 3037), so the GPU idles after it: a gap that follows an error says so
(`gapwatch.cuzk.pipeline.PipelineFacts.error_words`). Which lines are failures, and their words, is
one rule in `gapwatch.cuzk.pipeline` (`is_failure`, `failure_words`), used by both.
"""

from __future__ import annotations

from gapwatch.core.models import LogEvent, ProverEvent
from gapwatch.cuzk.pipeline import failure_words, is_failure

#: sppark 0.1.14 (cuzk's Cargo.lock) is the version lotus#13634 ties to a GPU memory leak.
_OOM_NOTE = ("; cuzk pins sppark 0.1.14, which filecoin-project/lotus#13634 ties to a GPU memory "
             "leak (fixed in sppark v0.1.15): watch the process's GPU memory over days")


def error_event(ev: LogEvent) -> ProverEvent | None:
    if not is_failure(ev):
        return None
    words = failure_words(ev)
    if "out of memory" in words and ev.kind == "panic":
        words += _OOM_NOTE
    return ProverEvent(t_wall_s=ev.t_wall_s, kind="error", level="error",
                       message=words, job_id=ev.job_id, gpu=ev.gpu)
