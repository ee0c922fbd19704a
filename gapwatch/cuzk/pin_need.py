"""How much the pinned-pool advice changes its settings by, from the log's own figures: the
pinned memory cuzk's synthesis workers need, what the pool held when pinning failed, and what
that makes of `[memory] safety_margin` and `[pipeline] max_parallel_synthesis`.

Who calls it: `gapwatch.cuzk.advice._for_pinned_pool` (its settings' `change` and evidence).
Pure: reads a `PipelineView`, says amounts with the arithmetic and the line each figure came
from; where a figure is not in the log, says "raise it" / "lower it" and which line would give
the amount.

Upstream (curio e0294b0f; cuzk-upstream-paths.md 2.1-2.4, cuzk-log-formats.md 3.3-3.4):
- a pinned partition checks out 3 buffers, a, b and c (pipeline.rs:282-346), each the circuit's
  `num_constraints x scalar_size` bytes (PoRep 32G: 3.88 GiB, 11.6 GiB a partition), from
  synthesis until its GPU prove starts (checkin inside prove_start);
- the pool grows on demand with cudaHostAlloc and is not budget-integrated (pinned_pool.rs:
  127-129, 194-198): a failed checkout is a failed pin, its line says what the pool held then
  (`pinned pool checkout FAILED ... pool_free pool_total_gib`, WARN, pipeline.rs:302) and the
  failed pin its size (`cudaHostAlloc failed size_gib cuda_err`, WARN, pinned_pool.rs:61);
- `synth_worker_count = max(2, min(total_budget / 14 GiB, max_parallel_synthesis))`
  (engine.rs:1433-1437, logged by `starting pipeline: ... synth_worker_count`, INFO,
  engine.rs:1839);
- cuzk reads `[memory] safety_margin` only with `total_budget = "auto"`: budget = MemTotal -
  safety_margin (config.rs:100-104); the budget it uses is logged either way (`memory budget
  initialized total_budget_gib`, INFO, engine.rs:1198). So raising the margin by X lowers the
  budget by X, and with an explicit budget the same change is the budget lowered by X.

The amounts are gapwatch's guesses, said as such: upstream does not say why cudaHostAlloc fails.
The safety margin is raised by what the pool failed to pin (every synthesis worker's 3 buffers,
less what the pool held), so that much RAM stays outside the budget for the pool; the synthesis
cap is lowered to the partitions the pool did pin (what the host let it pin then). Where the pool
held nothing (not one buffer pinned), fewer partitions is no amount at all: `pinned_nothing`.
"""

from __future__ import annotations

from dataclasses import dataclass

from gapwatch.core.units import GIB
from gapwatch.core.values import size_field
from gapwatch.cuzk.pipeline import PipelineView

#: Buffers a pinned partition checks out: a, b and c (pipeline.rs:282-346).
BUFFERS_PER_PARTITION = 3
#: Partitions' worth the pool held, counted up by this much: a figure the log rounded (46.59
#: GiB for 12 buffers of 3.882613) still holds its 4 partitions.
FITS_ROUNDING = 0.01
#: cuzk runs at least this many synthesis workers whatever the cap (engine.rs:1433-1437).
MIN_SYNTH_WORKERS = 2

#: The line each figure comes from, as the advice cites it (with the field, `_from`).
SIZE_LINE = "'cudaHostAlloc failed' (WARN) or 'allocated new buffer', pinned_pool.rs:61, 212"
HELD_LINE = "'pinned pool checkout FAILED' (WARN), pipeline.rs:302"
WORKERS_LINE = "'starting pipeline', engine.rs:1839"
BUDGET_LINE = "'memory budget initialized', engine.rs:1198"


def _num(x: float) -> str:
    """A figure as the log writes it (`3.882613`, `512`, `0`)."""
    return f"{x:.7g}"


def _from(field: str, value: float, line: str) -> str:
    """`synth_worker_count=20, 'starting pipeline', engine.rs:1839`: a figure and its line."""
    return f"{field}={_num(value)}, {line}"


@dataclass(frozen=True, slots=True)
class PinNeed:
    """The log's figures for the pool's arithmetic; None where the log did not give one."""

    #: One buffer's size, GiB (`PoolState.buffer_gib`: the latest failed pin's `size_gib`).
    buffer_gib: float | None
    #: What the pool held at its latest failed checkout, GiB (`pool_total_gib`; else the size
    #: its INFO lines gave, `PoolState.total_gib`).
    held_gib: float | None
    #: Synthesis workers (`synth_worker_count`).
    workers: int | None
    #: cuzk's memory budget, GiB (`total_budget_gib`).
    budget_gib: float | None

    @property
    def partition_gib(self) -> float | None:
        """One partition's pinned a/b/c: 3 buffers."""
        return None if self.buffer_gib is None else BUFFERS_PER_PARTITION * self.buffer_gib

    @property
    def need_gib(self) -> float | None:
        """What the pool pins while every synthesis worker synthesises a pinned partition (more
        while synthesised partitions wait for the GPU: they keep theirs until prove_start)."""
        part = self.partition_gib
        return None if part is None or self.workers is None else self.workers * part

    @property
    def short_gib(self) -> float | None:
        """What the pool failed to pin: the need, less what it held."""
        need = self.need_gib
        if need is None or self.held_gib is None:
            return None
        return max(0.0, need - self.held_gib)

    @property
    def pinned_nothing(self) -> bool:
        """The pool held nothing when pinning failed: not one buffer could be pinned."""
        return self.held_gib == 0.0

    def _need_words(self) -> str:
        assert self.buffer_gib is not None and self.workers is not None
        return (f"{self.workers} workers ({_from('synth_worker_count', self.workers, WORKERS_LINE)}"
                f") x {BUFFERS_PER_PARTITION} buffers (a, b, c) x {_num(self.buffer_gib)} GiB ("
                f"{_from('size_gib', self.buffer_gib, SIZE_LINE)}) = {self.need_gib:.0f} GiB "
                "while every worker synthesises")

    def margin_change(self) -> str:
        """`[memory] safety_margin`'s change: by how much, where the log says."""
        short = self.short_gib
        if short is None or short <= 0:
            return ("raise it if total_budget is \"auto\" (the only case cuzk reads it); with "
                    "an explicit total_budget, lower that instead; " + self._margin_missing())
        assert self.held_gib is not None
        budget = ""
        if self.budget_gib is not None and self.budget_gib > short:
            budget = (f"; the budget ({_from('total_budget_gib', self.budget_gib, BUDGET_LINE)})"
                      f" becomes about {self.budget_gib - short:.0f} GiB")
        return (f"raise it by about {short:.0f} GiB if total_budget is \"auto\" (the only case "
                "cuzk reads it: budget = MemTotal - safety_margin); with an explicit "
                f"total_budget, lower that by as much{budget}. A guess, what the pool failed to "
                f"pin: {self._need_words()}, less the {_num(self.held_gib)} GiB the pool held ("
                f"{_from('pool_total_gib', self.held_gib, HELD_LINE)}), left outside the budget "
                "for the pool")

    def _margin_missing(self) -> str:
        """Which lines would give the margin's amount, of those the log did not."""
        missing = _missing((("size_gib", self.buffer_gib, SIZE_LINE),
                            ("synth_worker_count", self.workers, WORKERS_LINE),
                            ("pool_total_gib", self.held_gib, HELD_LINE)))
        if not missing:
            return ("the pool held what every synthesis worker pins: no amount follows from "
                    "the log")
        return missing

    def cap_change(self) -> str | None:
        """`[pipeline] max_parallel_synthesis`'s change, or None where the pool pinned nothing
        (no number of partitions fits in what it could pin: not advised, `not_capped`)."""
        if self.pinned_nothing:
            return None
        part = self.partition_gib
        if part is None or self.held_gib is None or self.buffer_gib is None:
            return "lower it; " + _missing((("size_gib", self.buffer_gib, SIZE_LINE),
                                            ("pool_total_gib", self.held_gib, HELD_LINE)))
        held = _from("pool_total_gib", self.held_gib, HELD_LINE)
        # A rounded figure (46.59 GiB for 12 x 3.882613) still counts its whole partitions.
        fits = int(self.held_gib / part + FITS_ROUNDING)
        if self.workers is not None and fits >= self.workers:
            return (f"lower it below {self.workers} ("
                    f"{_from('synth_worker_count', self.workers, WORKERS_LINE)}): the pool "
                    f"held every worker's {BUFFERS_PER_PARTITION} buffers ({held}), so the "
                    "partitions waiting for the GPU needed the ones that failed")
        to = max(MIN_SYNTH_WORKERS, fits)
        floor = (", cuzk's least (engine.rs:1433-1437)" if fits < MIN_SYNTH_WORKERS else "")
        return (f"lower it to about {to}{floor}. A guess, what the host let the pool pin: "
                f"{_num(self.held_gib)} GiB ({held}) / ({BUFFERS_PER_PARTITION} buffers x "
                f"{_num(self.buffer_gib)} GiB, {_from('size_gib', self.buffer_gib, SIZE_LINE)})"
                f" = {fits} partitions")

    def not_capped(self) -> str:
        """Why `[pipeline] max_parallel_synthesis` is not advised where the pool pinned
        nothing."""
        size = f"{_num(self.buffer_gib)} GiB " if self.buffer_gib is not None else ""
        return (f"[pipeline] max_parallel_synthesis is not advised: the pool held 0 GiB when "
                f"pinning failed (pool_total_gib=0, {HELD_LINE}), so not even one {size}buffer "
                "could be pinned; fewer partitions in flight would need fewer buffers, but the "
                "first already failed, and what they free is budget, which the pool is not in "
                "(pinned_pool.rs:127-129, 194-198): only RAM left outside the budget "
                "(safety_margin) is the pool's")


def _missing(figures: tuple[tuple[str, float | None, str], ...]) -> str:
    """`the amount needs, not in the log read: synth_worker_count ('starting pipeline',
    engine.rs:1839)` for the figures that are None; "" where none is."""
    missing = [f"{name} ({line})" for name, figure, line in figures if figure is None]
    return ("the amount needs, not in the log read: " + "; ".join(missing)) if missing else ""


def pin_need(pipeline: PipelineView) -> PinNeed:
    """The figures of `pipeline` the pool's arithmetic reads."""
    pool = pipeline.pool
    failure = pool.last_failure if pool is not None else {}
    held = size_field(failure.get("pool_total_gib"))
    if held is None and pool is not None:
        held = pool.total_gib  # no failed checkout's figure: the pool's own lines' (INFO)
    budget = pipeline.budget_total_bytes
    return PinNeed(pool.buffer_gib if pool is not None else None, held,
                   pipeline.synth_workers, None if budget is None else budget / GIB)
