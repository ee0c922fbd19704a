"""Which processes the /proc readings (`ProcessMemory`) showed on each GPU, and when a new pid
came where another had been read: what those readings show of a prover that stopped and started
again, whatever its name. Prover-neutral: it says what was read (`GpuPids.words`) and which
process was replaced by a new one of its name (`Replaced`, `GpuPids.replaced_in`), never what
a prover makes of it.

Who calls it: cuzk's watcher (`gapwatch.cuzk.watch.CuzkWatch`, fed every reading), which says
these words where nothing it read could count restarts (no log line, no `/status` uptime, no
process of cuzk's name on a GPU: `CuzkWatch.unheard`). A report of a stand-in prover's restart
(a `python3` pid 558 gone, pid 592 new on the same GPU) said "0 restart(s)" with no log read;
now it says the count is not known and what /proc showed. And cuzk's pipeline facts
(`gapwatch.cuzk.pipeline.PipelineFacts`, fed every reading too): a gap whose idle stretch holds
a process's replacement is the restart's, whatever the process's name (that same recording's
three gaps each asked "synthesis, a lock or the scheduler?" of a process that was dead).

A process is replaced where a pid first read on a GPU after its first round has the name of a
pid read there before and no longer read: NVML stopped listing it, or /proc no longer has it
(its readings without /proc fields, NVML listing it while the driver frees its pinned memory).
One still read alive at or after the new pid's round was not replaced: a second process of the
name beside it (the replacement is taken back, `Replaced` dropped). A process is its pid and its
name: a pid read under another name is a new process (the kernel gave the pid again), the one
of the old name gone from the GPU (pid 558 `cuzk`, then 558 `other`: no new process was seen,
and the readings of `other` kept `cuzk` read alive). A reading with no name is not another
name: it is the pid's reading once /proc no longer has it (under systemd an exited process is
reaped at once, NVML listing it still), the process gone, never a new one (keyed by name alone,
a reaped cuzk read as "3 new pids" where one came, and its restart as "no longer listed by
NVML" where /proc showed it gone). Pure: the data's own times.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from gapwatch.core import fmt
from gapwatch.core.models import ProcessMemory

#: New pids kept for the words (the rest counted): a crash loop's thousands say nothing more.
MAX_NEW = 8
#: Pids remembered per GPU (the oldest read let go first).
MAX_PIDS = 64
#: Replacements kept for the gaps that hold one (the latest; a crash loop's oldest go).
MAX_REPLACED = 64


@dataclass(slots=True)
class _Seen:
    """One pid on one GPU: its name, when it was first and last read, the round (`t_mono_ns`)
    it was last read in, its last reading with /proc fields (None: none: /proc hidden from
    gapwatch) and its first reading without one after that (None: none: it had not left
    /proc)."""

    name: str
    first_s: float
    last_s: float
    last_round_ns: int
    alive_s: float | None = None
    gone_s: float | None = None


def _in_proc(r: ProcessMemory) -> bool:
    """Whether the reading found the process in /proc (either of its RSS lines read)."""
    return r.rss_shmem_bytes is not None or r.rss_anon_bytes is not None


def _process_of(pids: dict[tuple[int, str], _Seen], r: ProcessMemory) -> tuple[int, str]:
    """The process (its key: pid and name) a reading on a GPU is, `pids` that GPU's; called by
    `GpuPids.feed`. A reading with no name ("" or None: /proc no longer has the pid, or never
    let it be read) is its pid's unnamed reading, of the process of that pid read most lately:
    under systemd an exited prover is reaped at once while NVML still lists it, and that is the
    process gone, not a new one. A named reading of a pid read only unnamed so far gives that
    process its name. Only another non-empty name on a pid is another process (the kernel gave
    the pid again)."""
    name = r.name or ""
    if not name:
        latest = _latest_of_pid(pids, r.pid)
        return latest if latest is not None else (r.pid, "")
    key = (r.pid, name)
    unnamed = (r.pid, "")
    if key not in pids and unnamed in pids:
        seen = pids[key] = pids.pop(unnamed)
        seen.name = name
    return key


def _named(pids: dict[tuple[int, str], _Seen], pid: int, name: str) -> _Seen | None:
    """The process `pid` under `name` (`GpuPids._one`'s words); under "", the pid's read most
    lately (one first read unnamed was given its name later: `_process_of`). None: let go."""
    seen = pids.get((pid, name))
    if seen is not None or name:
        return seen
    key = _latest_of_pid(pids, pid)
    return None if key is None else pids[key]


def _latest_of_pid(pids: dict[tuple[int, str], _Seen], pid: int) -> tuple[int, str] | None:
    """The process of `pid` read most lately (its key), whatever its name; None: none kept."""
    return max((k for k in pids if k[0] == pid), key=lambda k: pids[k].last_s, default=None)


@dataclass(frozen=True, slots=True)
class Replaced:
    """A process on `gpu` no longer read, and a new pid of its name first read there after it:
    the old pid's last reading in /proc (`alive_s`; its last reading where /proc was never
    read) and its first without (`gone_s`, None: NVML stopped listing it first), the new pid's
    first reading (`new_s`) and round (`round_ns`)."""

    gpu: int
    name: str
    old_pid: int
    alive_s: float
    gone_s: float | None
    new_pid: int
    new_s: float
    round_ns: int

    def in_stretch(self, from_s: float, to_s: float) -> bool:
        """Whether its old process's end (`alive_s` to `gone_s`) or its new pid's first reading
        lies in [from_s, to_s]: a GPU's idle stretch holds it."""
        gone = self.gone_s if self.gone_s is not None else self.alive_s
        return (self.alive_s <= to_s and gone >= from_s) or from_s <= self.new_s <= to_s

    def words(self) -> str:
        """"pid 558 (python3), last read alive at 13:24:31.118 and gone from /proc at
        13:24:32.218; a new one, pid 592 (python3), first read at 13:24:40.718"."""
        name = f" ({self.name})" if self.name else ""
        gone = (f" and gone from /proc at {fmt.clock(self.gone_s, millis=True)}"
                if self.gone_s is not None else ", then no longer listed by NVML")
        return (f"pid {self.old_pid}{name}, last read alive at "
                f"{fmt.clock(self.alive_s, millis=True)}{gone}; a new one, pid {self.new_pid}"
                f"{name}, first read at {fmt.clock(self.new_s, millis=True)}")


@dataclass(frozen=True, slots=True)
class NewPid:
    """A pid first read on `gpu` after the GPU's first round of readings, and the pid read
    there most lately before it (None: that one was let go)."""

    gpu: int
    pid: int
    first_s: float
    before_pid: int | None
    #: Its name, and the name of the one before it (a pid is read under one name a process).
    name: str = ""
    before_name: str = ""


class GpuPids:
    """Every pid read on each GPU (bounded), and the new ones (`NewPid`, the first `MAX_NEW`
    kept, all counted)."""

    def __init__(self) -> None:
        #: Per GPU, each process read: keyed by pid and name (a pid given again to a process of
        #: another name is another process; a reading with no name is its pid's: `_process_of`).
        self._gpus: dict[int, dict[tuple[int, str], _Seen]] = {}
        #: Each GPU's first round (its readings share `t_mono_ns`): the pids already there.
        self._first_round_ns: dict[int, int] = {}
        self.new: list[NewPid] = []
        self.new_count = 0
        #: The latest processes replaced by a new pid of their name, oldest first.
        self.replaced: deque[Replaced] = deque(maxlen=MAX_REPLACED)

    def feed(self, r: ProcessMemory) -> Replaced | None:
        """Take one reading; the replacement its pid is, where it is one (else None)."""
        pids = self._gpus.setdefault(r.gpu, {})
        first_round = self._first_round_ns.setdefault(r.gpu, r.t_mono_ns)
        alive = _in_proc(r)
        key = _process_of(pids, r)
        seen = pids.get(key)
        if seen is not None:
            self._read_again(seen, r, alive)
            return None
        replaced = None
        if r.t_mono_ns != first_round:
            before = max(pids, key=lambda p: pids[p].last_s, default=None)
            self.new_count += 1
            if len(self.new) < MAX_NEW:
                self.new.append(NewPid(r.gpu, r.pid, r.t_wall_s,
                                       None if before is None else before[0], key[1],
                                       "" if before is None else before[1]))
            replaced = self._replacing(pids, r)
        if len(pids) >= MAX_PIDS:
            del pids[min(pids, key=lambda p: pids[p].last_s)]
        pids[key] = _Seen(key[1], r.t_wall_s, r.t_wall_s, r.t_mono_ns,
                          r.t_wall_s if alive else None)
        return replaced

    def _read_again(self, seen: _Seen, r: ProcessMemory, alive: bool) -> None:
        """A pid read before, read again: its marks moved on; read alive (or, /proc never read
        for it, read at all) at or after the round of a new pid said to replace it, it was not
        replaced (a second process of its name beside it)."""
        seen.last_s = max(seen.last_s, r.t_wall_s)
        seen.last_round_ns = max(seen.last_round_ns, r.t_mono_ns)
        if alive:
            seen.alive_s = r.t_wall_s if seen.alive_s is None else max(seen.alive_s, r.t_wall_s)
        elif seen.alive_s is not None and seen.gone_s is None:
            seen.gone_s = r.t_wall_s  # gone from /proc: it exited, NVML still listing it
        if self.replaced and (alive or seen.alive_s is None):
            for rep in [x for x in self.replaced if x.gpu == r.gpu and x.old_pid == r.pid
                        and x.name == seen.name and r.t_mono_ns >= x.round_ns]:
                self.replaced.remove(rep)

    def _replacing(self, pids: dict[tuple[int, str], _Seen],
                   r: ProcessMemory) -> Replaced | None:
        """The replacement a new pid is: of the pid of its name on its GPU read most lately
        and not in its round (None: none such)."""
        name = r.name or ""
        old = max((p for p, s in pids.items() if s.name == name
                   and s.last_round_ns < r.t_mono_ns), key=lambda p: pids[p].last_s, default=None)
        if old is None:
            return None
        s = pids[old]
        rep = Replaced(r.gpu, name, old[0], s.alive_s if s.alive_s is not None else s.last_s,
                       s.gone_s, r.pid, r.t_wall_s, r.t_mono_ns)
        self.replaced.append(rep)
        return rep

    def replaced_in(self, gpu: int, from_s: float, to_s: float) -> Replaced | None:
        """The latest replacement on `gpu` that [from_s, to_s] (a gap's idle stretch) holds
        (`Replaced.in_stretch`); None: none."""
        return next((x for x in reversed(self.replaced)
                     if x.gpu == gpu and x.in_stretch(from_s, to_s)), None)

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
        new = _named(pids, n.pid, n.name)
        name = f" ({new.name})" if new is not None and new.name else ""
        out = f"GPU {n.gpu} pid {n.pid}{name} first read at {fmt.clock(n.first_s)}"
        old = _named(pids, n.before_pid, n.before_name) if n.before_pid is not None else None
        if old is None:
            return out
        old_name = f" ({old.name})" if old.name else ""
        still = " (still read after it)" if old.last_s > n.first_s else ""
        return (f"{out}, pid {n.before_pid}{old_name} last read at "
                f"{fmt.clock(old.last_s)}{still}")
