"""The prover's settings as its own lines and `/status` show them, and which changed.

Who calls it: `gapwatch.offline.compare` (each side's settings, and the changes between them);
`gapwatch.cuzk.paths` reads `SettingsSeen` for the env knobs it advises on. Pure: fed one
`LogEvent` or `ProverStatus` at a time, bounded (a fixed set of keys, the latest value of each).

Every key is one upstream logs or serves (curio e0294b0f, cuzk unchanged since 2026-05-05; the
line and its file:line in `SOURCES`): cuzk has no endpoint that prints its configuration, so a
setting it never logs cannot be shown, and is not guessed. Env knobs: `CUZK_VALIDATE_PARTITIONS=1`
logs a line per verified job (engine.rs:533, 862); `CUZK_DISABLE_SPLIT_PROVE=1` logs nothing, and
is inferred from its one tell: GPU jobs start (TIMELINE `GPU_START`) while INFO lines of
`cuzk_core::engine` are read and not one `GPU_TIMING spawn_blocking prove_start` appears
(engine.rs:3075, 3139). Both lines are INFO: the daemon's level is `RUST_LOG`, else `[logging]
level` (default "info"; cuzk-daemon main.rs:50-61, config.rs:416-427), and at "warn" its
WARN and ERROR lines and TIMELINE (stderr, engine.rs:352) remain with no INFO line at all, so
an INFO line's absence says something only where INFO lines of its target were kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gapwatch.core.models import FieldValue, LogEvent, ProverStatus
from gapwatch.core.units import GIB
from gapwatch.core.values import is_bad_count
from gapwatch.cuzk.log_lines import (
    ANCHOR_MESSAGE,
    DISPATCHER_MESSAGE,
    GPU_THREADS_MESSAGE,
    RAYON_THREADS_MESSAGE,
)

#: Tracing message -> ((field, setting as cuzk's TOML or the log names it), ...).
STARTUP_FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "starting cuzk engine": (("pipeline_enabled", "[pipeline] enabled"),),
    "initializing GPU workers": (("num_gpus", "GPUs (num_gpus)"),
                                 ("gpu_workers_per_device", "[gpus] gpu_workers_per_device")),
    "memory budget initialized": (("total_budget_gib", "[memory] total_budget (GiB)"),),
    "starting pipeline: synthesis task + GPU workers (budget-gated)": (
        ("synth_worker_count", "synth_worker_count"),
        ("max_partitions_in_budget", "max_partitions_in_budget"),
        ("effective_lookahead", "effective_lookahead")),
    DISPATCHER_MESSAGE: (
        ("max_batch_size", "[scheduler] max_batch_size"),
        ("max_batch_wait_ms", "[scheduler] max_batch_wait_ms"),
        ("slot_size", "[pipeline] slot_size"),
        ("synthesis_concurrency", "[pipeline] synthesis_concurrency")),
    GPU_THREADS_MESSAGE: (("gpu_threads", "[gpus] gpu_threads"),),
    # `[synthesis] threads` resolved: 0 is logged as the CPU count (main.rs:95-115).
    RAYON_THREADS_MESSAGE: (
        ("rayon_threads", "[synthesis] threads (rayon_threads)"),),
    # Logged only when the pacer is on (max_gpu_queue_depth > 0, engine.rs:1455-1457).
    "GPU queue target dispatch pacer enabled": (
        ("gpu_queue_target", "[pipeline] max_gpu_queue_depth"),),
    "status HTTP server listening": (("addr", "[daemon] status_listen"),),
}

#: The startup fields that are no count or size (every other one is a Rust unsigned integer: a
#: negative value is no setting, dropped and counted, never shown as one).
NOT_COUNTS = frozenset(("pipeline_enabled", "addr"))

#: Where each startup line is written upstream (curio e0294b0f), for the docs and the output.
SOURCES: dict[str, str] = {
    "starting cuzk engine": "extern/cuzk/cuzk-core/src/engine.rs:1244",
    "initializing GPU workers": "extern/cuzk/cuzk-core/src/engine.rs:1339",
    "memory budget initialized": "extern/cuzk/cuzk-core/src/engine.rs",
    "starting pipeline: synthesis task + GPU workers (budget-gated)":
        "extern/cuzk/cuzk-core/src/engine.rs:1839",
    DISPATCHER_MESSAGE: "extern/cuzk/cuzk-core/src/engine.rs:1892",
    GPU_THREADS_MESSAGE: "extern/cuzk/cuzk-daemon/src/main.rs:85",
    RAYON_THREADS_MESSAGE: "extern/cuzk/cuzk-daemon/src/main.rs:111",
    "GPU queue target dispatch pacer enabled": "extern/cuzk/cuzk-core/src/engine.rs:1456",
    "status HTTP server listening": "extern/cuzk/cuzk-daemon/src/main.rs",
}

DEPRECATED = " is deprecated"
#: The target of the env knobs' lines (engine.rs:533, 862, 3139), as tracing prints it
#: (cuzk-daemon main.rs:58-61 `.with_target(true)`).
ENGINE_TARGET = "cuzk_core::engine"
VALIDATE_PARTITIONS = "CUZK_VALIDATE_PARTITIONS=1: validating per-partition verifier"
SPLIT_PROVE_TELL = "GPU_TIMING spawn_blocking prove_start"
#: GPU jobs picked up (GPU_PICKUP) without one GPU_START before `CUZK_DISABLE_SPLIT_PROVE=1`
#: is said.
SPLIT_PROVE_MIN_JOBS = 3


@dataclass(frozen=True, slots=True)
class ProverSettings:
    """What one side showed: each setting's latest value (as text), where it was read, the
    deprecated keys cuzk warned it ignores, and the env knobs seen or inferred."""

    values: dict[str, str] = field(default_factory=dict)
    seen_in: dict[str, str] = field(default_factory=dict)
    deprecated: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    #: Batches seen (`synthesis complete, sending to GPU batch_size>1` or a monolithic
    #: PoRep/SnapDeals `SYNTH_START kind=`): how many.
    batches: int = 0
    #: The prover's log lines (tracing) read: 0 when the side has no prover log, so that what
    #: only the log tells (a gap's cause beyond `/status`'s) is known to be missing there.
    log_lines: int = 0
    #: Startup fields that were no count (`synth_worker_count=-5`), as the log gave them (the
    #: latest of each setting): not shown as its value; and how many such fields were read.
    dropped: tuple[str, ...] = ()
    dropped_fields: int = 0
    #: The wall times of cuzk's starts the side's log shows (`starting cuzk engine`,
    #: engine.rs:1244; the startup lines replayed from before a window too), in order, and each
    #: startup setting's values with the time each was logged, a value kept where it differs
    #: from the one before: `values` holds only the last, and a side with a restart inside it
    #: is two runs (`runs_after`).
    start_times: tuple[float, ...] = ()
    history: dict[str, tuple[tuple[float, str], ...]] = field(default_factory=dict)
    #: Starts read but not kept: `start_times` holds the latest `MAX_STARTS_KEPT` (a crash
    #: loop's last start is the one to compare across).
    starts_dropped: int = 0
    #: INFO lines of `cuzk_core::engine` read (`engine_info`): 0 at `[logging] level = "warn"`
    #: or RUST_LOG=warn, where an env knob's INFO line is missing whether it is set or not.
    engine_info_lines: int = 0


#: The most starts, and values of one setting, a side keeps (`ProverSettings.start_times`,
#: `history`): a crash loop restarts thousands of times.
MAX_STARTS_KEPT = 64
MAX_VALUES_KEPT = 8


@dataclass(frozen=True, slots=True)
class Restarts:
    """cuzk's starts after a moment (a side's first busy reading: the GPU worked before them,
    so the side holds more than one run), and the settings that differed between the runs."""

    times: tuple[float, ...]
    #: Each setting that differed: its value in effect at the moment (where the log said one),
    #: then after each restart, consecutive repeats dropped.
    changed: dict[str, tuple[str, ...]]
    #: More starts than `times` may follow the moment: older ones were not kept.
    more: bool = False


def runs_after(s: ProverSettings, t0_s: float, until_s: float | None = None) -> Restarts:
    """The starts of cuzk later than `t0_s` (and before `until_s`, where a window ends: a
    `--since/--until` window holds `since <= t < until`, `TimeWindow.holds`), and the settings
    that changed across them. A side read as a window has its log's startup lines from outside
    it too (replayed for its settings): its starts after the window are not its restarts."""
    def inside(t: float) -> bool:
        return t > t0_s and (until_s is None or t < until_s)

    times = tuple(t for t in s.start_times if inside(t))
    changed: dict[str, tuple[str, ...]] = {}
    if not times:
        return Restarts(times, changed)
    # The dropped starts are the oldest: some may follow t0 when every kept one does.
    more = s.starts_dropped > 0 and min(s.start_times) > t0_s
    for setting, seen in s.history.items():
        # The value in effect at t0 (the last one logged by then), then each one logged after.
        before = [v for t, v in seen if t <= t0_s][-1:]
        values = before + [v for t, v in seen if inside(t)]
        kept = [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]]
        if len(kept) > 1:
            changed[setting] = tuple(kept)
    return Restarts(times, changed, more)


#: An env knob's value where the side's log would have shown its line and did not (`_shown`):
#: unset, or set and not used in that run: no value to compare.
NOT_SEEN = "not seen"
#: A deprecated key's value on a side whose log read cuzk's start and no warning of the key.
NOT_SET = "not set"


@dataclass(frozen=True, slots=True)
class SettingChange:
    """One setting (a startup value, an env knob, a deprecated key) as two sides show it: its
    value on each (None: that side does not show it). The one rule of whether it changed
    (`changed`) and whether it is known (`shown_by_both`), which `compare`'s table, its "what
    changed", `--markdown` and `--json` and each advice's "changed?" read."""

    setting: str
    before: str | None
    after: str | None

    @property
    def shown_by_both(self) -> bool:
        """Both sides show a value (an env knob's `NOT_SEEN` is none: its line comes only when
        cuzk acts on it)."""
        return all(v is not None and v != NOT_SEEN for v in (self.before, self.after))

    @property
    def changed(self) -> bool:
        """Shown by both, and different. A setting one side does not show is not a change:
        whether it changed is not known (it read "*synth_worker_count  -  2" and "what
        changed: ... - → 2" beside "changed? not known: not shown by both runs")."""
        return self.shown_by_both and self.before != self.after


def _text(v: FieldValue | None) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


class SettingsSeen:
    """Fed every log event and `/status` snapshot of one side; `result()` says what it showed."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.seen_in: dict[str, str] = {}
        #: What `/status` said: over the log's (the snapshots are fed as they come, among the
        #: log's events, and the prover's own figure is the one to keep).
        self.status_values: dict[str, str] = {}
        self.status_seen_in: dict[str, str] = {}
        self.deprecated: dict[str, None] = {}
        self.validate_lines = 0
        self.split_prove_lines = 0
        self.gpu_pickups = 0
        self.gpu_starts = 0
        self.tracing_lines = 0
        self.engine_info_lines = 0
        self.batches = 0
        self.dropped: dict[str, str] = {}
        self.dropped_fields = 0
        #: Start times (to the ms: one start read twice, from the recording and a --log of the
        #: same file, is one) and each startup setting's values with their times.
        self.starts: set[float] = set()
        self.starts_dropped = 0
        self.history: dict[str, list[tuple[float, str]]] = {}

    def feed_log(self, ev: LogEvent) -> None:
        if ev.kind == "timeline":
            self._timeline(ev)
            return
        if ev.kind != "tracing":
            return
        self.tracing_lines += 1
        self.engine_info_lines += engine_info(ev)
        name = ev.name
        if name == ANCHOR_MESSAGE:
            self._started(round(ev.t_wall_s, 3))
        wanted = STARTUP_FIELDS.get(name)
        if wanted is not None:
            for key, setting in wanted:
                v = ev.fields.get(key)
                if key not in NOT_COUNTS and is_bad_count(v):
                    # No count (`synth_worker_count=-5`): dropped, never shown as the setting.
                    self.dropped_fields += 1
                    self.dropped[setting] = f"{key}={v}"
                    self.values.pop(setting, None)
                    self.seen_in.pop(setting, None)
                elif v is not None:
                    self.dropped.pop(setting, None)
                    self.values[setting] = _text(v)
                    self.seen_in[setting] = f"log: {name}"
                    self._remember(setting, ev.t_wall_s, _text(v))
        elif name.endswith(DEPRECATED) or DEPRECATED + " " in name:
            key = name.split(DEPRECATED, 1)[0].strip()
            if key and len(self.deprecated) < 32:
                self.deprecated[key] = None
        elif name.startswith(VALIDATE_PARTITIONS):
            self.validate_lines += 1
        elif name == SPLIT_PROVE_TELL:
            self.split_prove_lines += 1
        elif name == "synthesis complete, sending to GPU":
            size = ev.fields.get("batch_size")
            if isinstance(size, int) and size > 1:
                self.batches += 1

    def _started(self, t_s: float) -> None:
        """A start of cuzk at `t_s`: the latest `MAX_STARTS_KEPT` kept (the first 64 of a crash
        loop of 200 pointed `compare` at the 64th start to compare across, not the last)."""
        if t_s in self.starts:
            return  # one start read twice (the recording's events and their --log file)
        self.starts.add(t_s)
        if len(self.starts) > MAX_STARTS_KEPT:
            self.starts.remove(min(self.starts))
            self.starts_dropped += 1

    def _remember(self, setting: str, t_wall_s: float, text: str) -> None:
        """`text` as `setting`'s value logged at `t_wall_s`, kept when it differs from the one
        before."""
        values = self.history.setdefault(setting, [])
        if (not values or values[-1][1] != text) and len(values) < MAX_VALUES_KEPT:
            values.append((t_wall_s, text))

    def _timeline(self, ev: LogEvent) -> None:
        if ev.name == "GPU_PICKUP":
            self.gpu_pickups += 1
        elif ev.name == "GPU_START":
            self.gpu_starts += 1
        elif ev.name == "SYNTH_START":
            kind = ev.fields.get("kind")
            if kind in ("porep-c2", "snap-update") and self.values.get(
                    "[pipeline] enabled") != "false":
                self.batches += 1

    def feed_status(self, s: ProverStatus) -> None:
        values, seen_in = self.status_values, self.status_seen_in
        if s.memory_total_bytes is not None:
            values["[memory] total_budget (GiB)"] = str(s.memory_total_bytes // GIB)
            seen_in["[memory] total_budget (GiB)"] = "/status memory.total_bytes"
        if s.workers:
            per: dict[int | None, int] = {}
            for w in s.workers:
                per[w.gpu] = per.get(w.gpu, 0) + 1
            values["[gpus] gpu_workers_per_device"] = str(max(per.values()))
            seen_in["[gpus] gpu_workers_per_device"] = "/status gpu_workers"

    def result(self) -> ProverSettings:
        env: dict[str, str] = {}
        if self.validate_lines:
            env["CUZK_VALIDATE_PARTITIONS"] = (
                f"1 (seen: {self.validate_lines} 'CUZK_VALIDATE_PARTITIONS=1' line(s))")
        if split_prove_disabled(self.gpu_pickups, self.gpu_starts, self.split_prove_lines,
                                self.engine_info_lines):
            env["CUZK_DISABLE_SPLIT_PROVE"] = (
                f"1 (inferred: {self.gpu_pickups} GPU_PICKUP, no GPU_START, no "
                f"'{SPLIT_PROVE_TELL}' line)")
        return ProverSettings({**self.values, **self.status_values},
                              {**self.seen_in, **self.status_seen_in}, tuple(self.deprecated),
                              env, self.batches, self.tracing_lines,
                              tuple(self.dropped.values()), self.dropped_fields,
                              tuple(sorted(self.starts)),
                              {k: tuple(v) for k, v in self.history.items()},
                              self.starts_dropped, self.engine_info_lines)


def info_from(ev: LogEvent, target: str) -> bool:
    """An INFO line of `target` (a line with no target is taken as one): where such lines are
    read, the filter (main.rs:54-61) keeps that target's INFO lines, so one missing says
    something."""
    return ev.level == "INFO" and ev.fields.get("target", target) == target


def engine_info(ev: LogEvent) -> bool:
    """An INFO line of cuzk's engine: the level and target of the env knobs' lines."""
    return info_from(ev, ENGINE_TARGET)


def split_prove_disabled(gpu_pickups: int, gpu_starts: int, split_prove_lines: int,
                         engine_info_lines: int) -> bool:
    """`CUZK_DISABLE_SPLIT_PROVE=1`'s tell: GPU workers pick jobs up (TIMELINE GPU_PICKUP,
    engine.rs:3023) and not one GPU_START or split-prove line comes. With the knob the worker
    proves in one synchronous call and returns (3078-3118) before the split prove's GPU_START
    (3131) and its `spawn_blocking prove_start` line (3139), which every job the split prove
    takes past its pickup writes (a partition of a job already failed gets neither, 3034-3042:
    not every job). Said only where INFO lines of the engine are read (WARN and ERROR lines
    alone come at level "warn", main.rs:54-61): the knob's "not seen" there stays "not known",
    as `CUZK_VALIDATE_PARTITIONS`'s does. Before, the tell was GPU_START lines without the
    split-prove line, which the knob never writes: it was never said of a log it was set in."""
    return (gpu_pickups >= SPLIT_PROVE_MIN_JOBS and gpu_starts == 0 and engine_info_lines > 0
            and split_prove_lines == 0)


def compared(before: ProverSettings, after: ProverSettings) -> list[SettingChange]:
    """Every setting, env knob and deprecated key either side shows, with each side's value
    (`SettingChange`; None where that side does not show it), in that order, each sorted."""
    out = [SettingChange(key, before.values.get(key), after.values.get(key))
           for key in sorted(set(before.values) | set(after.values))]
    out += [SettingChange(key, _shown(before, key), _shown(after, key))
            for key in sorted(set(before.env) | set(after.env))]
    for key in sorted(set(before.deprecated) | set(after.deprecated)):
        out.append(SettingChange(f"{key} (deprecated, ignored)", _deprecated(before, key),
                                 _deprecated(after, key)))
    return out


def changes(before: ProverSettings, after: ProverSettings) -> list[SettingChange]:
    """The settings that changed (`SettingChange.changed`: shown by both sides, different)."""
    return [c for c in compared(before, after) if c.changed]


def not_shown(before: ProverSettings, after: ProverSettings) -> list[SettingChange]:
    """The settings one side shows and the other does not: changed or not, not known."""
    return [c for c in compared(before, after) if not c.shown_by_both]


def _deprecated(s: ProverSettings, key: str) -> str | None:
    """A deprecated key on a side: "set" where cuzk warned of it, `NOT_SET` where the side's
    log read cuzk's start (its warnings come as it reads its config) and none, else None."""
    if key in s.deprecated:
        return "set"
    return NOT_SET if s.start_times or s.starts_dropped else None


#: An advised setting (`gapwatch.cuzk.advice.Advice.setting`) -> the settings a run shows it by
#: (`ProverSettings.values` or `env` keys), where that is not the setting itself: cuzk logs few
#: settings under their TOML names, and an advice's change is seen only in what it moves.
SHOWN_BY: dict[str, tuple[str, ...]] = {
    "[memory] total_budget": ("[memory] total_budget (GiB)",),
    # With total_budget = "auto" the budget is MemTotal - safety_margin (config.rs:100-104).
    "[memory] safety_margin": ("[memory] total_budget (GiB)",),
    # synth_worker_count = max(2, min(budget / 14 GiB, max_parallel_synthesis)), logged at
    # start (engine.rs:1433-1437, 1839): the cap itself is never logged.
    "[pipeline] max_parallel_synthesis": ("synth_worker_count",),
    "[synthesis] threads": ("[synthesis] threads (rayon_threads)",),
    "env CUZK_VALIDATE_PARTITIONS": ("CUZK_VALIDATE_PARTITIONS",),
    "env CUZK_DISABLE_SPLIT_PROVE": ("CUZK_DISABLE_SPLIT_PROVE",),
}
#: The env knobs `ProverSettings.env` holds: seen (or inferred) on a side, else not seen.
ENV_KNOBS = ("CUZK_VALIDATE_PARTITIONS", "CUZK_DISABLE_SPLIT_PROVE")
#: What else moves what shows an advised setting: synth_worker_count is the budget's too
#: (engine.rs:1433-1437), so with both moved the cap's change is not known.
MOVED_ALSO_BY: dict[str, tuple[str, ...]] = {
    "[pipeline] max_parallel_synthesis": ("[memory] total_budget (GiB)",),
}


@dataclass(frozen=True, slots=True)
class AdvisedChange:
    """Whether an advised setting changed between two runs, as what shows it says."""

    setting: str
    #: True or False when something that shows the setting is read on both sides; None: not
    #: known (`why_not_known` says why).
    changed: bool | None
    #: What showed it, with each side's value (None: that side does not show it).
    shown_by: tuple[SettingChange, ...]
    why_not_known: str | None = None


def _shown(s: ProverSettings, key: str) -> str | None:
    """`key`'s value on a side; an env knob's "not seen" where the side's log has the engine's
    INFO lines (its lines, INFO too, would have said it), None where it has none (no log, or
    one at level "warn")."""
    if key in ENV_KNOBS:
        if key in s.env:
            return "1"
        return NOT_SEEN if s.engine_info_lines else None
    return s.values.get(key)


def advised_change(setting: str, before: ProverSettings,
                   after: ProverSettings) -> AdvisedChange:
    """Whether `setting` (as an advice names it) changed between `before` and `after`, read
    from the settings that show it (`SHOWN_BY`, else the setting itself)."""
    shown = tuple(SettingChange(k, _shown(before, k), _shown(after, k))
                  for k in SHOWN_BY.get(setting, (setting,)))
    both = [s for s in shown if s.before is not None and s.after is not None]
    if not both:
        names = ", ".join(s.setting for s in shown)
        return AdvisedChange(setting, None, shown, f"not shown by both runs ({names})")
    moved = [s for s in both if s.before != s.after]
    if not moved:
        return AdvisedChange(setting, False, shown)
    for s in moved:
        if s.setting in ENV_KNOBS and NOT_SEEN in (s.before, s.after):
            # An env knob's line comes only when cuzk acts on it (a PoRep validated, a GPU
            # proof): "not seen" is unset, or set and not used in that run.
            return AdvisedChange(setting, None, shown,
                                 f"{s.setting} on one side only: its line shows only when "
                                 "used")
    for other in MOVED_ALSO_BY.get(setting, ()):
        was, now = before.values.get(other), after.values.get(other)
        if was is not None and now is not None and was != now:
            return AdvisedChange(setting, None, shown,
                                 f"{', '.join(s.setting for s in moved)} moves with {other} "
                                 f"too, which changed ({was} → {now})")
    return AdvisedChange(setting, True, shown)
