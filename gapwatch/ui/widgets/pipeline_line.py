"""PipelineLine: the prover's own pipeline, one line per prover (cuzk `/status`).

Who drives it: `GapwatchApp` with the slow panels (once a second). It reads the latest snapshot
per prover from the store: partitions by state, each GPU's workers (P proving, I idle),
synthesis slots in use, the scheduler queue, and how old the snapshot is. Hidden (no height)
until a first snapshot arrives, so a session without `--cuzk-status` looks as before.
"""

from __future__ import annotations

from gapwatch.core.models import ProverStatus
from gapwatch.core.prover import worker_letters
from gapwatch.ui.view import View
from gapwatch.ui.widgets.run_lines import RunLines

#: A snapshot older than this (data time) is marked stale: polling has stopped answering.
STALE_AFTER_S = 3.0
#: Partition states as the line names them: what says where a GPU waits (synthesised
#: partitions waiting for a worker) first, then the rest in pipeline order.
_STATES = (("synth_done", "synth_done"), ("pending", "pending"), ("synthesizing", "synth"),
           ("gpu", "gpu"), ("done", "done"), ("failed", "failed"))


def pipeline_text(st: ProverStatus, age_s: float | None) -> list[tuple[str, str]]:
    """(text, style key) runs of one prover's line, the facts the gap causes rest on first
    (they must survive an 80-column cut); keys: "label", "warn", ""."""
    runs: list[tuple[str, str]] = [(f"prover {st.prover}", "label")]
    counts = st.partition_counts
    gpus = sorted({w.gpu for w in st.workers if w.gpu is not None})
    for gpu in gpus:
        runs.append((f" · GPU{gpu} ", "label"))
        runs.append((worker_letters(w for w in st.workers if w.gpu == gpu), ""))
    if not gpus and st.workers:
        runs.append((" · workers ", "label"))
        runs.append((worker_letters(st.workers), ""))
    runs.append((" · synthesis ", "label"))
    active, slots = st.synthesis_active, st.synthesis_max
    full = active is not None and slots and active >= slots
    runs.append((f"{'?' if active is None else active}/{'?' if slots is None else slots}",
                 "warn" if full and not counts.get("synth_done") else ""))
    # Every state cuzk reported; "failed" only when some partition failed.
    shown = [f"{counts[k]} {word}" for k, word in _STATES
             if k in counts and (k != "failed" or counts[k])]
    runs.append((" · parts ", "label"))
    runs.append((" ".join(shown) if shown else "n/a", ""))
    if st.queue_depth is not None:
        runs.append((" · queue ", "label"))
        runs.append((str(st.queue_depth), ""))
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
            lines.append(pipeline_text(st, age if age > 0 else None))
        self.show_lines(lines)
