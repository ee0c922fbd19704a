"""Which processes the /proc readings (`ProcessMemory`) showed on each GPU, and when a new pid
came where another had been read: what those readings show of a prover that stopped and started
again, whatever its name. Prover-neutral: it says what was read, never that it was a restart.

Who calls it: cuzk's watcher (`gapwatch.cuzk.watch.CuzkWatch`, fed every reading), which says
these words where nothing it read could count restarts (no log line, no `/status` uptime, no
process of cuzk's name on a GPU: `CuzkWatch.unheard`). A report of a stand-in prover's restart
(a `python3` pid 558 gone, pid 592 new on the same GPU) said "0 restart(s)" with no log read;
now it says the count is not known and what /proc showed. Pure: the data's own times.
"""

from __future__ import annotations

from dataclasses import dataclass

from gapwatch.core import fmt
from gapwatch.core.models import ProcessMemory

#: New pids kept for the words (the rest counted): a crash loop's thousands say nothing more.
MAX_NEW = 8
#: Pids remembered per GPU (the oldest read let go first).
MAX_PIDS = 64


@dataclass(slots=True)
class _Seen:
    """One pid on one GPU: its name, when it was first and last read."""

    name: str
    first_s: float
    last_s: float


@dataclass(frozen=True, slots=True)
class NewPid:
    """A pid first read on `gpu` after the GPU's first round of readings, and the pid read
    there most lately before it (None: that one was let go)."""

    gpu: int
    pid: int
    first_s: float
    before_pid: int | None


class GpuPids:
    """Every pid read on each GPU (bounded), and the new ones (`NewPid`, the first `MAX_NEW`
    kept, all counted)."""

    def __init__(self) -> None:
        self._gpus: dict[int, dict[int, _Seen]] = {}
        #: Each GPU's first round (its readings share `t_mono_ns`): the pids already there.
        self._first_round_ns: dict[int, int] = {}
        self.new: list[NewPid] = []
        self.new_count = 0

    def feed(self, r: ProcessMemory) -> None:
        pids = self._gpus.setdefault(r.gpu, {})
        first_round = self._first_round_ns.setdefault(r.gpu, r.t_mono_ns)
        seen = pids.get(r.pid)
        if seen is not None:
            seen.last_s = max(seen.last_s, r.t_wall_s)
            return
        if r.t_mono_ns != first_round:
            before = max(pids, key=lambda p: pids[p].last_s, default=None)
            self.new_count += 1
            if len(self.new) < MAX_NEW:
                self.new.append(NewPid(r.gpu, r.pid, r.t_wall_s, before))
        if len(pids) >= MAX_PIDS:
            del pids[min(pids, key=lambda p: pids[p].last_s)]
        pids[r.pid] = _Seen(r.name, r.t_wall_s, r.t_wall_s)

    def words(self) -> str | None:
        """What the readings show, e.g. "/proc readings show a new pid on GPU 0: pid 592
        (python3) first read at 13:24:40, pid 558 (python3) last read at 13:24:33"; None where
        no new pid came."""
        if not self.new:
            return None
        said = [self._one(n) for n in self.new]
        more = self.new_count - len(self.new)
        tail = f" (and {more} more)" if more else ""
        n = self.new_count
        return (f"/proc readings show {'a new pid' if n == 1 else f'{n} new pids'} on a GPU: "
                f"{'; '.join(said)}{tail}")

    def _one(self, n: NewPid) -> str:
        pids = self._gpus.get(n.gpu, {})
        new = pids.get(n.pid)
        name = f" ({new.name})" if new is not None and new.name else ""
        out = f"GPU {n.gpu} pid {n.pid}{name} first read at {fmt.clock(n.first_s)}"
        old = pids.get(n.before_pid) if n.before_pid is not None else None
        if old is None:
            return out
        old_name = f" ({old.name})" if old.name else ""
        still = " (still read after it)" if old.last_s > n.first_s else ""
        return (f"{out}, pid {n.before_pid}{old_name} last read at "
                f"{fmt.clock(old.last_s)}{still}")
