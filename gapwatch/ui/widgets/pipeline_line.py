"""PipelineLine: the prover's own pipeline, one line per prover (cuzk `/status` and its log).

Who drives it: `GapwatchApp` with the slow panels (once a second). It reads the latest snapshot
per prover from the store, and what the prover's log said (`StoreSnapshot.pipeline`):
each GPU's workers by name (`w0 idle, w1 proving`), synthesis as partitions synthesizing over
cuzk's synthesis workers (`gapwatch.cuzk.pipeline.capacity_of`: the log's `synth_worker_count`,
`~` when derived from the budget and `[cuzk] max_parallel_synthesis`; the count alone with
`(capacity not read)` where neither gives it; never `max_concurrent`, which is the budget over
the smallest partition), `active` when cuzk's counter has drifted from them, the budget when it
stops the next synthesis, partitions by state, the scheduler queue, the pinned pool when it
failed, the pacer, an SRS load or PoSt work in flight, and how old the snapshot is. Hidden (no
height) until a first snapshot arrives, so a session without `--cuzk-status` looks as before.
"""

from __future__ import annotations

from gapwatch.core.models import ProverStatus, ProverWorker
from gapwatch.core.units import GIB
from gapwatch.cuzk.causes import budget_short, synthesis_drift
from gapwatch.cuzk.pipeline import Capacity, PipelineView
from gapwatch.cuzk.prover import view_of
from gapwatch.ui.view import View
from gapwatch.ui.widgets.run_lines import RunLines

#: A snapshot older than this (data time) is marked stale: polling has stopped answering.
STALE_AFTER_S = 3.0
#: Partition states as the line names them: what says where a GPU waits (synthesised
#: partitions waiting for a worker) first, then the rest in pipeline order.
_STATES = (("synth_done", "synthesised"), ("pending", "pending"),
           ("synthesizing", "synthesizing"), ("gpu", "on GPU"), ("done", "done"),
           ("failed", "failed"))


def worker_words(workers: list[ProverWorker]) -> str:
    """`w0 idle, w1 proving`: each GPU worker by its id and state, in id order."""
    return ", ".join(f"w{w.worker_id} {w.state}" for w in sorted(workers,
                                                                 key=lambda w: w.worker_id))


def synthesis_words(busy: int | None, cap: Capacity | None) -> str:
    """`3/3` (the log's count), `3/~3` (cuzk's formula over the budget and the operator's
    cap), `3 (capacity not read)`: the count alone where the capacity is not known, never
    over a guessed one (`1/~18` of a prover running 3 workers)."""
    n = "?" if busy is None else str(busy)
    if cap is None:
        return f"{n} (capacity not read)"
    return f"{n}/{'' if cap.source == 'log' else '~'}{cap.workers}"


def pipeline_text(st: ProverStatus, age_s: float | None,
                  pipeline: PipelineView | None = None) -> list[tuple[str, str]]:
    """(text, style key) runs of one prover's line, the facts the gap causes rest on first
    (they must survive an 80-column cut); keys: "label", "warn", ""."""
    view = pipeline or PipelineView()
    runs: list[tuple[str, str]] = [(f"prover {st.prover}", "label")]
    counts = st.partition_counts
    gpus = sorted({w.gpu for w in st.workers if w.gpu is not None})
    for gpu in gpus:
        runs.append((f" · GPU{gpu} ", "label"))
        runs.append((worker_words([w for w in st.workers if w.gpu == gpu]), ""))
    if not gpus and st.workers:
        runs.append((" · workers ", "label"))
        runs.append((worker_words(list(st.workers)), ""))
    runs.append((" · synthesis ", "label"))
    busy = counts.get("synthesizing")
    cap = view.capacity(st)
    full = busy is not None and cap is not None and busy >= cap.workers
    runs.append((synthesis_words(busy, cap),
                 "warn" if full and not counts.get("synth_done") else ""))
    drift = synthesis_drift(st)
    if drift:
        runs.append((f" (active {st.synthesis_active})", "warn"))
    short = budget_short(st)
    if short is not None:
        runs.append((f" · budget {short[0] / GIB:.0f}/{short[1] / GIB:.0f} GiB", "warn"))
    # Every state cuzk reported; "failed" only when some partition failed.
    shown = [f"{counts[k]} {word}" for k, word in _STATES
             if k in counts and (k != "failed" or counts[k])]
    runs.append((" · partitions: ", "label"))
    runs.append((", ".join(shown) if shown else "n/a", ""))
    if st.queue_depth is not None:
        runs.append((" · queue ", "label"))
        runs.append((str(st.queue_depth), ""))
    pool = view.pool
    if pool is not None and (pool.checkout_failed or pool.alloc_failed):
        free = "?" if pool.free is None else pool.free
        runs.append((f" · pinned pool {free} free, {pool.checkout_failed + pool.alloc_failed}"
                     " FAILED", "warn"))
    if view.pacer_on and view.pacer:
        runs.append((f" · pacer waiting {view.pacer.get('waiting', '?')}/{view.pacer_target}",
                     ""))
    if view.srs_loading:
        runs.append((f" · SRS loading {', '.join(view.srs_loading)}", "warn"))
    if view.monolithic_in_flight:
        runs.append((f" · not in /status: {', '.join(view.monolithic_in_flight)}", ""))
    if age_s is not None and age_s > STALE_AFTER_S:
        runs.append((f" · stale {age_s:.0f} s", "warn"))
    return runs


class PipelineLine(RunLines):
    """One line per prover that answered `/status`."""

    COMPONENT_CLASSES = {"pipeline-line--label", "pipeline-line--warn"}
    STYLE_CLASSES = {"label": "pipeline-line--label", "warn": "pipeline-line--warn"}

    def show(self, view: View) -> None:
        provers = view.snap.provers
        lines = []
        for name in sorted(provers):
            st = provers[name]
            age = (view.t_end_ns - st.t_mono_ns) / 1e9
            lines.append(pipeline_text(st, age if age > 0 else None, view_of(view.snap.pipeline)))
        self.show_lines(lines)
