"""cuzk restarts: when the daemon started again, how gapwatch knew, and what it cost the GPU.

Who calls it: `gapwatch.cuzk.watch.CuzkWatch` (every log event, `/status` snapshot and process
reading, live and offline). Pure: "now" is the data's own time.

Three signs, any one enough (cuzk-upstream-paths.md 4.4): the start lines `cuzk-daemon
starting` (cuzk-daemon/src/main.rs:63) and `starting cuzk engine` (engine.rs:1244, the TIMELINE
epoch); `/status` `uptime_secs` going back (status.rs: it counts from the tracker's creation);
a new pid of the same process name on a GPU (NVML's process list, as `ProcessMemory` readings).
Signs within `SAME_RESTART_S` of one another are one restart, but for the same sign again at
another time (a second start line is a second run: a crash loop can be faster). Only SIGINT is
handled (`received SIGINT, shutting down`, main.rs:237, 264); systemd's default SIGTERM kills
cuzk without a line, and the restart says which it was.

What a restart costs (code): the GPU idles from its last work of the old run (its last
TIMELINE `GPU_END`) to its first `GPU_START` of the new one; the parts of that stretch are the
daemon down (last GPU_END to the start line), startup (start line to the engine's), the SRS
loaded again (`loading SRS from disk` .. `SRS loaded successfully`), the pinned pool pinned
again (its `allocated new buffer` lines before that first GPU_START) and the first wave's
synthesis (first SYNTH_START to first GPU_QUEUE: partitions started before any capacity hint
existed, unpinned, pipeline.rs:176-230). Said as one stretch, with its length and parts, when
the first GPU_START of the new run arrives.

A GPU gap that spans a restart is the restart's (`RestartWatch.during`, asked by
`gapwatch.cuzk.pipeline.PipelineFacts.log_view` for each gap): from the restart to its new run's
first GPU work the GPU waits on cuzk starting again, so the SRS reload, the pool pinned again
and the first wave in that stretch are the restart's cost, not causes of their own. The latest
`MAX_KEPT` restarts are kept for it, each with how the old run ended and, once known, its cost.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from gapwatch.core import fmt
from gapwatch.core.bounds import MAX_PROVERS, keep_latest
from gapwatch.core.models import (
    LogEvent,
    ProcessMemory,
    ProverEvent,
    ProverStatus,
    StretchPart,
)

DAEMON_STARTING = "cuzk-daemon starting"
ENGINE_STARTING = "starting cuzk engine"
SIGINT = "received SIGINT, shutting down"
POOL_ALLOCATED = "pinned pool: allocated new buffer"
SRS_LOADING = "loading SRS from disk"
SRS_LOADED = "SRS loaded successfully"
#: The restart cost's part that is the SRS loaded again.
SRS_RELOADED = "SRS reloaded"
#: Signs of a restart this close together are one restart (a daemon's start lines, its first
#: `/status` answer and its pid on the GPU come within seconds; a restart loop is ~10 s apart,
#: systemd's RestartSec in upstream's unit, cuzk-proving-daemon.md:122-140).
SAME_RESTART_S = 8.0
#: The same sign this close in time is one line read twice, not a second run.
SAME_LINE_S = 0.001
#: `/status` uptime going back by less than this is jitter of the poll, not a restart.
UPTIME_SLACK_S = 2.0
#: Process names followed on the GPUs (upstream installs `cuzk`; from target/ it is
#: `cuzk-daemon`), and how many pids are remembered per GPU.
PROCESS_NAMES = ("cuzk", "cuzk-daemon")
MAX_PIDS = 64
#: Signs of one restart remembered (a start has a few: two start lines, a /status, a pid a
#: GPU). A storm of new pids within its seconds were each kept and looked through for the
#: next: 40,000 took 24 s. Past it, a sign is one more of the same restart, not remembered.
MAX_SIGNS = 16
#: SRS loads of one run said as parts of its cost (cuzk loads a few, one a circuit); more
#: are counted and said as a number (20,000 made a cost of 20,000 parts, a message of half a
#: megabyte; a lone "SRS loaded" line looked through all of them).
MAX_SRS = 16
#: Restarts kept for the gaps that span them (`RestartWatch.during`): the latest; a crash
#: loop's oldest go (a gap is matched against them newest first).
MAX_KEPT = 64
#: What a restart starts again: said with each restart, and in the advice for the gaps that
#: span one (`gapwatch.cuzk.advice`).
STARTS_AGAIN = ("its pipeline state starts again: empty pinned pool, SRS loaded on demand, a "
                "first wave synthesised unpinned")
#: How the old run ended, as the restart says it: it wrote `SIGINT`'s line, or nothing.
AFTER_SIGINT = "after 'received SIGINT, shutting down'"
KILLED = ("with no shutdown line before it (killed: systemd's default SIGTERM is not handled, "
          "main.rs:233-266)")
#: Where no line of the old run was read (a restart seen by `/status` uptime or a new pid
#: alone), or none at INFO, the level of cuzk's shutdown line (main.rs:237: a log kept at
#: `warn` never has it), a missing shutdown line says nothing: how the run ended is not known.
NOT_READ = "(how the previous run ended is not known: none of its log lines were read)"
NO_INFO = ("(how the previous run ended is not known: its log kept no INFO lines, the level "
           "of cuzk's shutdown line, main.rs:237)")


def how_it_ended(sigint: bool, last_line_s: float | None, info_seen: bool) -> tuple[str, str]:
    """How the previous run ended, in the restart's words and in a gap hint's few: after
    SIGINT's line, killed (its INFO lines read, the shutdown line not among them), or not
    known (and the hint says nothing: no line is no news)."""
    if sigint:
        return AFTER_SIGINT, "after SIGINT"
    if last_line_s is None:
        return NOT_READ, ""
    if not info_seen:
        return NO_INFO, ""
    return KILLED, "killed, no shutdown line"
#: A restart's first sign, when it is one of its start lines (the log said it).
START_LINE_SIGN = "its start line"


@dataclass(slots=True)
class Restart:
    """One restart as the gaps that span it cite it (`RestartWatch.during`)."""

    t_s: float
    #: The restart event's words: how the old run ended, its last line, what saw the restart.
    words: str
    #: How the old run ended, in a hint's few words ("" where it is not known: `how_it_ended`).
    ended: str
    #: Its signs (shared with its run while that is followed: signs seen later join).
    signs: list[str]
    #: The new run's first GPU work (None: not read, yet or at all), and the restart cost's
    #: event (its words; its length None when not known).
    first_gpu_s: float | None = None
    cost: ProverEvent | None = None

    @property
    def in_log(self) -> bool:
        """A start line said it (else only `/status` or a new pid on the GPU did)."""
        return any(s.startswith(START_LINE_SIGN) for s in self.signs)

    def until_s(self) -> float:
        """The end of the stretch it holds the GPU for: its new run's first GPU work, else
        the restart itself (a gap then is its only when it spans the restart)."""
        first = self.first_gpu_s
        return self.t_s if first is None else max(self.t_s, first)

    def detail(self) -> str:
        """Its one figure for a gap's hint: how the old run ended and what the restart cost
        (the SRS reload named as part of it)."""
        how = self.ended
        cost = self.cost
        length = cost.length_s if cost is not None else None
        if cost is None or length is None:
            return how
        srs_s = sum(p.end_s - p.start_s for p in cost.parts if p.name == SRS_RELOADED)
        srs = f", its SRS reload {srs_s:.1f} s of it" if srs_s else ""
        return "; ".join(x for x in (how, f"the restart cost the GPU {length:.1f} s{srs}") if x)

    def evidence(self) -> list[str]:
        """The facts a gap that spans it cites: the restart, then its cost (or why not)."""
        cost = self.cost
        if cost is not None:
            return [self.words, cost.message]
        return [self.words, "the new run's first GPU work not read (yet): the restart's cost is "
                            "read from the log, from the old run's last GPU work to it"]


@dataclass(slots=True)
class _Run:
    """The run that began at a restart, until its first GPU work."""

    t_s: float
    signs: list[str]
    #: The previous run's last GPU_END and last line (None: none read).
    last_gpu_end_s: float | None
    last_line_s: float | None
    sigint: bool
    #: An INFO line of the previous run was read (its shutdown line's level).
    info_seen: bool
    engine_s: float | None = None
    srs: list[tuple[float, float | None]] = field(default_factory=list)
    #: SRS loads past `MAX_SRS`, counted only.
    srs_more: int = 0
    pool_first_s: float | None = None
    pool_last_s: float | None = None
    first_synth_s: float | None = None
    first_queue_s: float | None = None
    first_wave: int = 0
    first_synth_end_s: float | None = None
    #: Its restart as the gaps cite it (`RestartWatch.kept`): its cost is written there.
    kept: Restart | None = None


class RestartWatch:
    """Finds restarts; `feed_*` return the restart events and, later, their cost."""

    def __init__(self) -> None:
        self.restarts = 0
        self._seen_run = False
        self._last_gpu_end_s: float | None = None
        self._last_line_s: float | None = None
        self._sigint = False
        #: An INFO line read since the latest start: a missing shutdown line says something.
        self._info_seen = False
        self._run: _Run | None = None
        self._last_restart_s: float | None = None
        #: The signs taken as the latest start or restart, with their times.
        self._signs: dict[str, float] = {}
        self._uptime: dict[str, float] = {}
        #: GPU -> pid -> when it was last read.
        self._pids: dict[int, dict[int, float]] = {}
        #: The latest restarts, oldest first, for the gaps that span them (`during`).
        self.kept: deque[Restart] = deque(maxlen=MAX_KEPT)

    # -- signs --------------------------------------------------------------------------------

    def feed_log(self, ev: LogEvent) -> list[ProverEvent]:
        kind = ev.kind
        if kind == "timeline":
            # Every log event goes through here (each worker of a split report feeds a day's
            # ~6 M): between a run's first GPU work and the next restart a TIMELINE line only
            # moves the marks below.
            out = self._cost_parts(ev) if self._run is not None else []
            if ev.name == "GPU_END":
                self._last_gpu_end_s = ev.t_wall_s
            # Work was done: a start line from now on starts another run. (The lines a start
            # writes before its engine's, config and budget, do not count.)
            self._seen_run = True
            self._last_line_s = ev.t_wall_s
            return out
        if kind != "tracing":
            return []
        out = []
        name = ev.name
        if name in (DAEMON_STARTING, ENGINE_STARTING):
            out += self._sign(ev.t_wall_s, f"{START_LINE_SIGN} '{name}'")
            run = self._run
            if run is not None and name == ENGINE_STARTING:
                run.engine_s = ev.t_wall_s
            self._seen_run = True
        elif name == SIGINT:
            self._sigint = True
        if not self._info_seen and ev.level == "INFO":
            self._info_seen = True
        if self._run is not None:
            out += self._cost_parts(ev)
        self._last_line_s = ev.t_wall_s
        return out

    def feed_status(self, st: ProverStatus) -> list[ProverEvent]:
        up = st.uptime_s
        if up is None:
            return []
        before = self._uptime.get(st.prover)
        keep_latest(self._uptime, st.prover, up, MAX_PROVERS)  # names from a recording: bounded
        if before is None or up >= before - UPTIME_SLACK_S:
            return []
        return self._sign(st.t_wall_s - up, f"{st.prover} /status uptime_secs went back from "
                                            f"{before:.0f} s to {up:.0f} s")

    def feed_process(self, r: ProcessMemory) -> list[ProverEvent]:
        """A reading of a process on a GPU. A new pid of cuzk's name where another was read
        before is a restart, unless one was already seen since that pid was last read (a new
        process shows on the GPU only at its first CUDA work, maybe minutes after its start
        lines)."""
        if r.name.rsplit("/", 1)[-1] not in PROCESS_NAMES:
            return []
        pids = self._pids.setdefault(r.gpu, {})
        known = r.pid in pids
        last_seen = max(pids.values(), default=None)
        if len(pids) >= MAX_PIDS and not known:
            del pids[next(iter(pids))]
        pids[r.pid] = r.t_wall_s
        if known or last_seen is None:
            return []
        sign = f"a new {r.name} pid {r.pid} on GPU {r.gpu}"
        restart = self._last_restart_s
        if restart is not None and restart >= last_seen - SAME_RESTART_S:
            self._note_run_sign(sign)
            return []
        return self._sign(r.t_wall_s, sign)

    # -- a restart ----------------------------------------------------------------------------

    def _sign(self, t_s: float, sign: str) -> list[ProverEvent]:
        last = self._last_restart_s
        # Signs close together are one restart, unless the same sign comes again later: a
        # daemon writes each start line once, so a second is another run (a crash loop faster
        # than `SAME_RESTART_S`: 360,000 runs of a storm were said as 449 restarts). The same
        # sign at the same time is the same line read twice (a recording's log events and the
        # `--log` file they were recorded from).
        before = self._signs.get(sign)
        again = before is not None and abs(t_s - before) > SAME_LINE_S
        if last is not None and abs(t_s - last) <= SAME_RESTART_S and not again:
            if before is None:
                self._remember(sign, t_s)
            return []
        self._last_restart_s = t_s
        self._signs = {sign: t_s}
        if not self._seen_run and sign.startswith(START_LINE_SIGN):
            return []  # the first start of the log: a start, not a restart
        self.restarts += 1
        run = self._run = _Run(t_s, [sign], self._last_gpu_end_s, self._last_line_s,
                               self._sigint, self._info_seen)
        self._sigint = False
        self._info_seen = False
        how, ended = how_it_ended(run.sigint, run.last_line_s, run.info_seen)
        last_line = (f"; the previous run's last line at {fmt.clock(self._last_line_s)}"
                     if self._last_line_s is not None else "")
        message = fmt.visible(f"cuzk restarted {how}{last_line}, seen by {sign}; {STARTS_AGAIN}")
        run.kept = Restart(t_s, message, ended, run.signs)
        self.kept.append(run.kept)
        return [ProverEvent(t_wall_s=t_s, kind="restart", level="warning", message=message)]

    def during(self, start_s: float, end_s: float, slack_s: float = 0.0) -> list[Restart]:
        """The restarts a gap over [start_s, end_s] spans, newest first: each whose stretch,
        from the restart to its new run's first GPU work (`Restart.until_s`), meets the gap
        (`slack_s` either side). Kept in the order seen, each stretch ending before the next
        restart: the first one wholly before the gap ends the search."""
        out: list[Restart] = []
        for r in reversed(self.kept):
            if r.t_s > end_s + slack_s:
                continue
            if r.until_s() < start_s - slack_s:
                break
            out.append(r)
        return out

    def _remember(self, sign: str, t_s: float) -> None:
        """A new sign of the latest restart (its caller knows it is new), remembered while
        fewer than `MAX_SIGNS` are (see there): memory and the time of each sign stay
        bounded."""
        if len(self._signs) < MAX_SIGNS:
            self._signs[sign] = t_s
            self._note_run_sign(sign)

    def _note_run_sign(self, sign: str) -> None:
        """`sign` among the latest run's signs (said in its cost), at most `MAX_SIGNS`."""
        run = self._run
        if run is not None and len(run.signs) < MAX_SIGNS and sign not in run.signs:
            run.signs.append(sign)

    # -- its cost -----------------------------------------------------------------------------

    def _cost_parts(self, ev: LogEvent) -> list[ProverEvent]:
        """The parts of the open run's cost this event marks (a run is open: `feed_log`), and
        its cost at the run's first GPU work."""
        run = self._run
        if run is None:
            return []
        t, name = ev.t_wall_s, ev.name
        if ev.kind == "tracing":
            self._tracing_part(run, t, name)
        elif ev.kind == "timeline":
            if name == "SYNTH_START":
                run.first_synth_s = run.first_synth_s or t
                if run.first_synth_end_s is None:
                    run.first_wave += 1
            elif name == "SYNTH_END" and run.first_synth_end_s is None:
                run.first_synth_end_s = t
            elif name == "GPU_QUEUE" and run.first_queue_s is None:
                run.first_queue_s = t
            elif name == "GPU_START":
                self._run = None
                cost = self._cost(run, t)
                if run.kept is not None:
                    run.kept.first_gpu_s, run.kept.cost = t, cost
                return [cost]
        return []

    @staticmethod
    def _tracing_part(run: _Run, t: float, name: str) -> None:
        if name.startswith(SRS_LOADING):
            if len(run.srs) < MAX_SRS:
                run.srs.append((t, None))
            else:
                run.srs_more += 1
        elif name.startswith(SRS_LOADED):
            # The latest load still open (the list is at most `MAX_SRS` long).
            for i in range(len(run.srs) - 1, -1, -1):
                if run.srs[i][1] is None:
                    run.srs[i] = (run.srs[i][0], t)
                    break
        elif name.startswith(POOL_ALLOCATED):
            run.pool_first_s = run.pool_first_s or t
            run.pool_last_s = t

    def _cost(self, run: _Run, first_gpu_s: float) -> ProverEvent:
        start = run.last_gpu_end_s if run.last_gpu_end_s is not None else run.t_s
        if start > run.t_s or first_gpu_s < run.t_s:
            return self._cost_unknown(run, first_gpu_s)
        parts = [StretchPart("down", start, run.t_s)] if start < run.t_s else []
        if run.engine_s is not None and run.engine_s > run.t_s:
            parts.append(StretchPart("startup", run.t_s, run.engine_s))
        parts += [StretchPart(SRS_RELOADED, a, b) for a, b in run.srs if b is not None]
        if run.pool_first_s is not None and run.pool_last_s is not None:
            parts.append(StretchPart("pool pinned again", run.pool_first_s, run.pool_last_s))
        if run.first_synth_s is not None and run.first_queue_s is not None:
            parts.append(StretchPart("first wave synthesis", run.first_synth_s,
                                     run.first_queue_s))
        said = ", ".join(f"{p.name} {p.end_s - p.start_s:.1f} s" for p in parts) or "no parts read"
        if run.srs_more:
            said += f", and {run.srs_more} more SRS loads"
        wave = (f"; the first wave after it: {run.first_wave} synthesis(es) started before any "
                "capacity hint existed (unpinned by design, pipeline.rs:176-230)"
                if run.first_wave else "")
        message = (f"the restart cost the GPU {first_gpu_s - start:.1f} s, "
                   f"{fmt.clock(start)} to {fmt.clock(first_gpu_s)} (its last work of the old "
                   f"run to its first of the new): {said}{wave}")
        return ProverEvent(t_wall_s=first_gpu_s, kind="restart_cost", level="warning",
                           message=message, start_s=start, end_s=first_gpu_s, parts=parts)

    @staticmethod
    def _cost_unknown(run: _Run, first_gpu_s: float) -> ProverEvent:
        """The data's time went back across the restart (a clock stepped back at boot, logs of
        two boxes or runs merged): the old run's last GPU work is after the restart, or the new
        run's first before it. Its length is not known, so none is given (it was said as
        "cost the GPU -3548.0 s", and took that much off the restart-cost counter)."""
        last = run.last_gpu_end_s
        message = fmt.visible(
            f"the restart's GPU cost is not known: the data's time went back across it (the old "
            f"run's last GPU work at {fmt.clock(last) if last is not None else '?'}, the "
            f"restart at {fmt.clock(run.t_s)}, the new run's first GPU work at "
            f"{fmt.clock(first_gpu_s)})")
        return ProverEvent(t_wall_s=first_gpu_s, kind="restart_cost", level="warning",
                           message=message)
