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

What the host's own readings at the failed pins say (`gapwatch.cuzk.pin_host`; `ram_short`,
`ram_ruled_out`, `budget_above_ram`, their words in `host_words`, `not_ram_words`):
- RAM short: MemAvailable below one partition's pinned buffers at a failed pin: the advice
  below stands (and says so);
- RAM ruled out: MemAvailable at least `PLENTY_PARTITIONS` partitions' pinned buffers at every
  failed pin, each with a reading within `NEAR_S` (a reading every 100 ms is not the pin's own
  instant: a margin that wide no moment between two readings closes; a pin with no reading, one
  of a --log outside the recording, could be the one RAM failed, so any such keeps RAM in and
  the evidence says how many): no `[memory] safety_margin`, and the words lead with
  what else can fail a pin (upstream names none: the CUDA error of its line, a container's
  memory limit, which /proc/meminfo inside a container does not show, the locked-memory limit,
  which upstream's systemd unit does not set, cuzk-proving-daemon.md:122-140);
- the budget above the host's MemTotal: it is not "auto" (MemTotal - safety_margin), so cuzk
  does not read the margin: `[memory] total_budget` lowered below the host's RAM, less what the
  rest of the box holds (`budget_change`), never to the floor below, whatever RAM did.

What the advice says, and why no more (gapwatch's reading, said as a guess: upstream does not
say why cudaHostAlloc fails):
- `[memory] safety_margin`: raised in steps of one partition's pinned buffers (3 x the failing
  line's buffer size), each re-measured with `gapwatch compare`. No total follows from the log:
  a buffer in use stands for heap a/b/c already inside its partition's 14 GiB reservation
  (pinned_pool.rs:127-129, memory.rs), so "every worker's buffers less what the pool held" counts
  that memory twice, and how much RAM the host lets cuzk pin is not in any line. The steps stop
  at a floor: the budget must stay above the PoRep 32G SRS (~47 GiB pinned, curio#1043; the
  param file is 44-47 GiB) plus cuzk's least synthesis workers (2 x 14 GiB, engine.rs:1437,
  memory.rs:36), or cuzk cannot load its SRS and synthesise beside it; with the log's budget
  already at or below that floor, the margin cannot help the pool on this box (`margin_change`
  None, `margin_not_raised` says why).
- `[pipeline] max_parallel_synthesis`: lowered to the partitions the pool did pin (what the host
  let it pin then); not where the pool held nothing (`pinned_nothing`), nor where cuzk already
  runs its least synthesis workers (`pipeline.MIN_SYNTH_WORKERS`: any cap gives that many).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from gapwatch.core import fmt
from gapwatch.core.units import GIB
from gapwatch.core.values import size_field
from gapwatch.cuzk.pin_host import NEAR_S, HostAtFailures
from gapwatch.cuzk.pipeline import (
    MIN_SYNTH_WORKERS,
    POREP_PARTITION_FULL_BYTES,
    SCALAR_BYTES,
    PipelineView,
)

#: Buffers a pinned partition checks out: a, b and c (pipeline.rs:282-346).
BUFFERS_PER_PARTITION = 3
#: Partitions' worth the pool held, counted up by this much: a figure the log rounded (46.59
#: GiB for 12 buffers of 3.882613) still holds its 4 partitions.
FITS_ROUNDING = 0.01
#: The PoRep 32G SRS, pinned inside the budget: "~47 GiB" (curio#1043; the reference's 44-47
#: GiB, its upper end, so the floor errs safe).
POREP_SRS_GIB = 47.0
#: The least budget cuzk runs PoRep on: its SRS plus its least synthesis workers' partitions
#: (engine.rs:1437 `.max(2)`, memory.rs:36 14 GiB each). The margin's steps never cross it.
FLOOR_GIB = POREP_SRS_GIB + MIN_SYNTH_WORKERS * POREP_PARTITION_FULL_BYTES / GIB
FLOOR_WORDS = (f"the PoRep 32G SRS (~{POREP_SRS_GIB:.0f} GiB pinned, curio#1043) plus cuzk's "
               f"least synthesis workers ({MIN_SYNTH_WORKERS} x "
               f"{POREP_PARTITION_FULL_BYTES // GIB} GiB, engine.rs:1437, memory.rs:36) = "
               f"{FLOOR_GIB:.0f} GiB")

#: The lines each figure comes from, as the advice cites it (with the field, `_from`).
SIZE_LINE = "'cudaHostAlloc failed' (WARN), pinned_pool.rs:61"
#: The failed checkout: the buffer it asked for (`num_constraints`), what the pool held.
CHECKOUT_FAILED_LINE = "'pinned pool checkout FAILED' (WARN), pipeline.rs:302"
#: Where no failed checkout was read: the pool's size as its INFO lines left it.
POOL_INFO_LINE = ("the pool's INFO lines ('CUDA pinned memory pool initialized', 'allocated new "
                  "buffer' total_gib, pinned_pool.rs:212)")
WORKERS_LINE = "'starting pipeline', engine.rs:1839"
BUDGET_LINE = "'memory budget initialized', engine.rs:1198"
#: Where the host's figures come from.
HOST_LINE = "/proc/meminfo, the host's samples"
#: RAM was plenty when a pin failed where MemAvailable was at least this many partitions'
#: pinned buffers (3 each) at every failed pin, each read: the host samples every 100 ms, not at
#: the pin's instant, and a margin this wide is not closed between two readings.
PLENTY_PARTITIONS = 4
#: What else can fail cudaHostAlloc, said where RAM is ruled out: upstream names no cause
#: (cuzk-upstream-paths.md 2.1-2.3), so each is a place to look, not a finding.
NOT_RAM_LOOK = (
    "a container's memory limit (/proc/meminfo inside a container reads the host's RAM, not "
    "the limit: these readings cannot rule it out); the locked-memory limit cuzk runs under "
    "(ulimit -l; upstream's systemd unit sets no LimitMEMLOCK, cuzk-proving-daemon.md:122-140, "
    "and nothing upstream ties a failed pin to it); the driver")


def _num(x: float) -> str:
    """A figure as the log writes it (`3.882613`, `512`, `0`, `130278869`)."""
    return str(int(x)) if float(x).is_integer() else f"{x:.7g}"


def _gib(x: float) -> str:
    """A size in GiB as prose says it, to the hundredth at most (`1.5`, `3.88`, `512`): a
    buffer read as `3.882613` from the log was said "a 3.882613 GiB buffer". Not `fmt.size`
    (one decimal, unit chosen): the sentence multiplies it (`4 x 3 x 3.88 GiB = 46.6 GiB`),
    and 3.9 there would not give the product said."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _from(field: str, value: float, line: str) -> str:
    """`synth_worker_count=20, 'starting pipeline', engine.rs:1839`: a figure and its line."""
    return f"{field}={_num(value)}, {line}"


@dataclass(frozen=True, slots=True)
class PinNeed:
    """The log's figures for the pool's arithmetic; None where the log did not give one."""

    #: One buffer's size, GiB, of the failing line itself (`PoolState.buffer_gib`: the latest
    #: failure's `size_gib`, or its `num_constraints` x 32 B), and the words that cite it.
    buffer_gib: float | None
    buffer_from: str | None
    #: What the pool held at its latest failed checkout, GiB (`pool_total_gib`; else the size
    #: its INFO lines gave, `PoolState.total_gib`), and the line it came from.
    held_gib: float | None
    held_line: str
    #: The field `held_gib` is read from on `held_line`.
    held_field: str
    #: Synthesis workers (`synth_worker_count`).
    workers: int | None
    #: cuzk's memory budget, GiB (`total_budget_gib`).
    budget_gib: float | None
    #: Why the log's workers and budget are not the failure's own (another daemon's lines:
    #: `PoolState.failure_apart`); None: they are.
    apart: str | None = None
    #: The figures of cuzk's run since, where a start after the failure gave others (a
    #: restart): `(synth_worker_count, total_budget_gib)`; None: none did.
    since: tuple[int | None, float | None] | None = None
    #: What the host's memory readings said at the failed pins (`PoolState.host`); None:
    #: no host sample read.
    host: HostAtFailures | None = None
    #: The latest `cudaHostAlloc failed` line's CUDA error, and whether any such line was read.
    cuda_err: str | None = None
    alloc_lines: bool = False

    def since_words(self) -> str | None:
        """That the figures are the failing run's, and what the run since says, or None."""
        if self.since is None:
            return None
        workers, budget = self.since

        def said(field: str, figure: float | None) -> str:
            return f"{field}={'?' if figure is None else _num(figure)}"

        return ("the pinned pool's figures are the failing run's ("
                f"{said('synth_worker_count', self.workers)}, "
                f"{said('total_budget_gib', self.budget_gib)}, as its start gave them before the "
                f"failure); cuzk started again since with {said('synth_worker_count', workers)}"
                f", {said('total_budget_gib', budget)}: measure that run (`gapwatch compare`) "
                "before changing more")

    @property
    def partition_gib(self) -> float | None:
        """One partition's pinned a/b/c: 3 buffers."""
        return None if self.buffer_gib is None else BUFFERS_PER_PARTITION * self.buffer_gib

    @property
    def pinned_nothing(self) -> bool:
        """The pool held nothing when pinning failed: not one buffer could be pinned."""
        return self.held_gib == 0.0

    @property
    def at_least_workers(self) -> bool:
        """cuzk already runs its least synthesis workers: no cap gives fewer."""
        return self.workers is not None and self.workers <= MIN_SYNTH_WORKERS

    def _held(self) -> str:
        assert self.held_gib is not None
        return _from(self.held_field, self.held_gib, self.held_line)

    def _budget(self) -> str:
        assert self.budget_gib is not None
        return _from("total_budget_gib", self.budget_gib, BUDGET_LINE)

    def steps_left(self) -> int | None:
        """How many steps of one partition's buffers the budget takes before it would reach
        the floor (`FLOOR_GIB`): each leaves it above; None where a figure is missing."""
        step = self.partition_gib
        if step is None or self.budget_gib is None:
            return None
        if self.budget_gib <= FLOOR_GIB:
            return 0
        steps = _whole((self.budget_gib - FLOOR_GIB) / step, math.ceil)
        return None if steps is None else steps - 1

    # -- the host's RAM at the failures ---------------------------------------------------------

    @property
    def available_gib(self) -> float | None:
        """The least MemAvailable read at a failed pin, GiB; None: none read."""
        host = self.host
        least = None if host is None else host.least_available_bytes
        return None if least is None else least / GIB

    @property
    def mem_total_gib(self) -> float | None:
        """The host's MemTotal, GiB; None: no reading gave it."""
        total = None if self.host is None else self.host.mem_total_bytes
        return None if total is None else total / GIB

    @property
    def plenty_gib(self) -> float | None:
        """MemAvailable that rules RAM out (`PLENTY_PARTITIONS` partitions' buffers)."""
        step = self.partition_gib
        return None if step is None else PLENTY_PARTITIONS * step

    @property
    def ram_short(self) -> bool:
        """RAM was short at a failed pin: less available than one partition's buffers."""
        available, step = self.available_gib, self.partition_gib
        return available is not None and step is not None and available < step

    @property
    def unread(self) -> int:
        """Failed pins with no host reading within `NEAR_S` (0 where no host was read)."""
        return 0 if self.host is None else self.host.unread

    @property
    def plenty_at_read(self) -> bool:
        """RAM was plenty at every failed pin that had a reading (`PLENTY_PARTITIONS`)."""
        available, plenty = self.available_gib, self.plenty_gib
        return available is not None and plenty is not None and available >= plenty

    @property
    def ram_ruled_out(self) -> bool:
        """RAM was plenty at every failed pin, each with a reading: a pin with none (one of a
        --log before the recording began, or after it ended) could be the one RAM failed, so
        any such keeps RAM in (the margin advice stands)."""
        return self.plenty_at_read and self.unread == 0

    @property
    def budget_above_ram(self) -> bool:
        """cuzk's budget is above the host's RAM: not "auto", so the margin is not read."""
        total, budget = self.mem_total_gib, self.budget_gib
        return total is not None and budget is not None and budget > total

    def host_words(self) -> str | None:
        """The host's readings at the failed pins as evidence, with what they make of RAM;
        None where no host sample was read."""
        host = self.host
        if host is None:
            return None
        total = self.mem_total_gib
        of = f" of MemTotal {total:.1f} GiB" if total is not None else ""
        available = self.available_gib
        if available is None:
            return (f"the host's RAM at the failures is not known: no host reading within "
                    f"{NEAR_S:.0f} s of any of the {host.unread} failed pin(s)")
        assert host.least_at_s is not None
        unread = (f", {host.unread} more without a reading within {NEAR_S:.0f} s"
                  if host.unread else "")
        said = (f"the host at the failures: MemAvailable {available:.1f} GiB{of} at "
                f"{fmt.clock(host.least_at_s, millis=True)} ({HOST_LINE}; the least within "
                f"{NEAR_S:.0f} s of {host.read} failed pin(s){unread})")
        step = self.partition_gib
        if step is None:
            return said
        if self.ram_short:
            return (f"{said}: RAM was short, below one partition's pinned buffers "
                    f"({BUFFERS_PER_PARTITION} x {_gib(self.buffer_gib or 0.0)} GiB = "
                    f"{step:.1f} GiB)")
        if self.ram_ruled_out:
            return f"{said}: not RAM ({self._plenty_words()})"
        if self.plenty_at_read:
            return (f"{said}: RAM is not ruled out: plenty at the {host.read} pin(s) read "
                    f"({self._plenty_words()}), but {host.unread} failed with no reading within "
                    f"{NEAR_S:.0f} s, and RAM may have been short at any of them")
        return (f"{said}: RAM may have been short: under {PLENTY_PARTITIONS} partitions' "
                f"pinned buffers ({self.plenty_gib or 0.0:.1f} GiB), which would rule it out")

    def _plenty_words(self) -> str:
        assert self.plenty_gib is not None
        return (f"above {PLENTY_PARTITIONS} partitions' pinned buffers, {PLENTY_PARTITIONS} x "
                f"{BUFFERS_PER_PARTITION} x {_gib(self.buffer_gib or 0.0)} GiB = "
                f"{self.plenty_gib:.1f} GiB")

    def cuda_words(self) -> str:
        """Where the CUDA error is: the `cudaHostAlloc failed` line read (its `cuda_err`), or
        that none was read (upstream writes one at each failed pin)."""
        if self.alloc_lines:
            err = f": cuda_err={self.cuda_err}" if self.cuda_err is not None else ""
            return f"the CUDA error is in its 'cudaHostAlloc failed' line{err}"
        return ("no 'cudaHostAlloc failed' line was read: pinned_pool.rs:61 writes it, WARN, "
                "with cuda_err at each failed pin, so a log without it had that target "
                "filtered out, or was cut")

    def not_ram_words(self) -> str:
        """`not RAM: ...`: why the host's readings rule RAM out, and what else to look at (a
        guess: upstream does not say why cudaHostAlloc fails). Only where `ram_ruled_out`."""
        assert self.available_gib is not None
        size = f"a {_gib(self.buffer_gib)} GiB buffer" if self.buffer_gib else "a buffer"
        above = ""
        if self.budget_above_ram:
            assert self.budget_gib is not None and self.mem_total_gib is not None
            above = (f"; total_budget {_gib(self.budget_gib)} GiB is above this host's "
                     f"{self.mem_total_gib:.1f} GiB of RAM")
        return (f"not RAM: MemAvailable was at least {self.available_gib:.1f} GiB when "
                f"{size} failed to pin ({HOST_LINE}; {self._plenty_words()}){above}; "
                "upstream does not say why cudaHostAlloc fails. What else can fail a pin, to "
                f"look at: the CUDA error ({self.cuda_words()}); {NOT_RAM_LOOK}")

    def budget_change(self) -> str | None:
        """`[memory] total_budget` lowered to fit the host, where the budget is above its RAM
        (`budget_above_ram`); None where it is not, or the RAM is at or below the floor
        (`budget_not_fitted`)."""
        if not self.budget_above_ram:
            return None
        assert self.mem_total_gib is not None
        total = self.mem_total_gib
        if total <= FLOOR_GIB:
            return None
        # Where RAM was free it is no fix for the pins: said first, before the change.
        first = ("not what failed the pins (RAM was free: the guess says what else to look "
                 "at); " if self.ram_ruled_out else "")
        return (f"{first}lower it below this host's {total:.1f} GiB of RAM, less what the rest "
                f"of the box holds (not measured here), so that the budget fits the host; never to "
                f"{FLOOR_WORDS} or below. It is {self._budget()}, above MemTotal "
                f"{total:.1f} GiB ({HOST_LINE}): not \"auto\" (MemTotal - safety_margin, "
                "config.rs:100-104), so cuzk does not read [memory] safety_margin")

    def budget_not_fitted(self) -> str:
        """Why `[memory] total_budget` is not lowered below a host's RAM at or below the
        floor (`budget_change` None with `budget_above_ram`)."""
        assert self.mem_total_gib is not None
        return (f"[memory] total_budget is not advised: it is {self._budget()}, above this "
                f"host's {self.mem_total_gib:.1f} GiB of RAM ({HOST_LINE}), and a budget that "
                f"fits it would be at or below {FLOOR_WORDS}: cuzk cannot load its SRS and "
                "synthesise in it on this box")

    def margin_not_advised(self) -> str:
        """Why `[memory] safety_margin` is not advised where the host's readings rule RAM out
        or the budget is not "auto" (above the host's RAM)."""
        if self.budget_above_ram:
            assert self.mem_total_gib is not None
            return (f"[memory] safety_margin is not advised: cuzk reads it only with "
                    f"total_budget = \"auto\" (config.rs:100-104), and {self._budget()} is "
                    f"above this host's {self.mem_total_gib:.1f} GiB of RAM")
        return ("[memory] safety_margin is not advised: RAM was not short when pinning failed "
                "(the host at the failures), so a larger margin only leaves more of it free")

    def margin_change(self) -> str | None:
        """`[memory] safety_margin`'s change: in steps of one partition's buffers, never taking
        the budget to the floor; None where the log's budget leaves no step
        (`margin_not_raised`)."""
        head = ("raise it if total_budget is \"auto\" (the only case cuzk reads it: budget = "
                "MemTotal - safety_margin; with an explicit total_budget, lower that instead)")
        step = self.partition_gib
        if step is None:
            return (f"{head}, never taking the budget to {FLOOR_WORDS} or below; the step "
                    "needs, not in the log read: size_gib (" + SIZE_LINE + ") or "
                    "num_constraints (" + CHECKOUT_FAILED_LINE + ")")
        assert self.buffer_gib is not None and self.buffer_from is not None
        steps = (f"{head}, in steps of one partition's pinned buffers ({BUFFERS_PER_PARTITION} x "
                 f"{_num(self.buffer_gib)} GiB = {step:.1f} GiB, {self.buffer_from}), "
                 "re-measuring each with `gapwatch compare`; a guess, no total: a buffer in use "
                 "stands for a/b/c already inside its partition's reservation (pinned_pool.rs:"
                 "127-129, memory.rs), and how much the host lets cuzk pin is in no line")
        left = self.steps_left()
        if left is None:
            unknown = (f"not known: {self.apart}; count the steps from that daemon's "
                       f"total_budget_gib ({BUDGET_LINE})" if self.apart is not None else
                       f"not in the log read (total_budget_gib, {BUDGET_LINE}): count the "
                       "steps from it")
            return (f"{steps}. Never take the budget to {FLOOR_WORDS} or below; the budget now "
                    f"is {unknown}")
        if left <= 0:
            return None
        return (f"{steps}. The budget is {self._budget()}; it must stay above {FLOOR_WORDS}: "
                f"{left} step(s) fit before that floor")

    def margin_not_raised(self) -> str:
        """Why `[memory] safety_margin` is not advised: the budget leaves no step."""
        step = self.partition_gib
        assert step is not None and self.buffer_from is not None
        assert self.budget_gib is not None
        where = ("already at or below" if self.budget_gib <= FLOOR_GIB else
                 f"within one step ({BUFFERS_PER_PARTITION} x {_num(self.buffer_gib or 0.0)} "
                 f"GiB = {step:.1f} GiB, {self.buffer_from}) of")
        return (f"[memory] safety_margin is not advised: the budget ({self._budget()}) is "
                f"{where} {FLOOR_WORDS}: a larger margin would leave cuzk a budget it cannot "
                "load its SRS and synthesise in; the margin cannot help the pool on this box")

    def cap_change(self) -> str | None:
        """`[pipeline] max_parallel_synthesis`'s change, or None where it would change nothing
        or no number of partitions fits (`not_capped` says why)."""
        if self.pinned_nothing or self.at_least_workers:
            return None
        part = self.partition_gib
        if part is None or self.held_gib is None or self.buffer_gib is None:
            return "lower it; " + _missing((
                ("size_gib", self.buffer_gib, SIZE_LINE),
                ("pool_total_gib", self.held_gib, CHECKOUT_FAILED_LINE)))
        held = self._held()
        # A rounded figure (46.59 GiB for 12 x 3.882613) still counts its whole partitions.
        fits = _whole(self.held_gib / part + FITS_ROUNDING, int)
        if fits is None:
            return "lower it; the amount needs figures whose ratio is a number: " + held
        if self.workers is not None and fits >= self.workers:
            return (f"lower it below {self.workers} ("
                    f"{_from('synth_worker_count', self.workers, WORKERS_LINE)}): the pool "
                    f"held every worker's {BUFFERS_PER_PARTITION} buffers ({held}), so the "
                    "partitions waiting for the GPU needed the ones that failed")
        to = max(MIN_SYNTH_WORKERS, fits)
        floor = (", cuzk's least (engine.rs:1433-1437)" if fits < MIN_SYNTH_WORKERS else "")
        return (f"lower it to about {to}{floor}. A guess, what the host let the pool pin: "
                f"{_num(self.held_gib)} GiB ({held}) / ({BUFFERS_PER_PARTITION} buffers x "
                f"{_num(self.buffer_gib)} GiB, {self.buffer_from}) = {fits} partitions")

    def not_capped(self) -> str:
        """Why `[pipeline] max_parallel_synthesis` is not advised (`cap_change` None)."""
        if self.at_least_workers:
            assert self.workers is not None
            workers = _from("synth_worker_count", self.workers, WORKERS_LINE)
            return ("[pipeline] max_parallel_synthesis is not advised: cuzk already runs its "
                    f"least synthesis workers ({workers}), and any cap gives at least "
                    f"{MIN_SYNTH_WORKERS} "
                    "(engine.rs:1437, .max(2)): lowering it changes nothing")
        size = f"{_num(self.buffer_gib)} GiB " if self.buffer_gib is not None else ""
        # Where RAM is ruled out, nothing outside the budget was short either: the margin is
        # not named (it is not advised, `margin_not_advised`).
        outside = ("" if self.ram_ruled_out or self.budget_above_ram else
                   ": only RAM left outside the budget (safety_margin) is the pool's")
        return (f"[pipeline] max_parallel_synthesis is not advised: the pool held 0 GiB when "
                f"pinning failed ({self._held()}), so not even one {size}buffer "
                "could be pinned; fewer partitions in flight would need fewer buffers, but the "
                "first already failed, and what they free is budget, which the pool is not in "
                f"(pinned_pool.rs:127-129, 194-198){outside}")


def _whole(ratio: float, rounding: Callable[[float], int]) -> int | None:
    """`ratio` made whole by `rounding`, or None where it is no number (a ratio of figures
    that got past their bounds: `values.size_field` keeps them within a byte and 1 PiB, so
    the steps stay below 2^51; the advice's arithmetic must never raise, whatever it reads)."""
    return rounding(ratio) if math.isfinite(ratio) else None


def _missing(figures: tuple[tuple[str, float | None, str], ...]) -> str:
    """`the amount needs, not in the log read: pool_total_gib ('pinned pool checkout FAILED'
    (WARN), pipeline.rs:302)` for the figures that are None; "" where none is."""
    missing = [f"{name} ({line})" for name, figure, line in figures if figure is None]
    return ("the amount needs, not in the log read: " + "; ".join(missing)) if missing else ""


def pin_need(pipeline: PipelineView) -> PinNeed:
    """The figures of `pipeline` the pool's arithmetic reads."""
    pool = pipeline.pool
    failure = pool.last_failure if pool is not None else {}
    said = failure.get("pool_total_gib")
    held = size_field(said)
    held_line, held_field = CHECKOUT_FAILED_LINE, "pool_total_gib"
    if said is None and pool is not None:
        # A figure the failure gave and its bounds dropped is not known: never the INFO lines'
        # older size in its place ("the pool held 0 GiB" of a line that said 1e300).
        # No failed checkout's figure: the pool's own lines' (INFO), cited as theirs.
        held, held_line, held_field = pool.total_gib, POOL_INFO_LINE, "total_gib"
    size = pool.buffer_gib if pool is not None else None
    size_from = None
    if pool is not None and size is not None:
        if pool.buffer_constraints is not None:
            size_from = (f"num_constraints={_num(pool.buffer_constraints)} x {SCALAR_BYTES} B, "
                         f"{CHECKOUT_FAILED_LINE}")
        else:
            size_from = _from("size_gib", size, SIZE_LINE)
    now = (pipeline.synth_workers, pipeline.budget_total_bytes)
    workers, budget = now
    apart = since = None
    if pool is not None and pool.last_failure_s is not None:
        # The failure's own run's figures, not a later restart's nor another daemon's.
        workers, budget, apart = (pool.failure_workers, pool.failure_budget_bytes,
                                  pool.failure_apart)
        if apart is None and (workers, budget) != now:
            since = (now[0], None if now[1] is None else now[1] / GIB)
    cuda_err = None if pool is None or pool.cuda_err is None else str(pool.cuda_err)
    return PinNeed(size, size_from, held, held_line, held_field, workers,
                   None if budget is None else budget / GIB, apart, since,
                   None if pool is None else pool.host, cuda_err,
                   pool is not None and pool.alloc_failed > 0)
