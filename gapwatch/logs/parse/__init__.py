"""Prover log lines -> `LogEvent`s on the wall clock: the `LogParser` facade and its counters.

Who calls it: `gapwatch.logs.follow.LogFollower` (live, one line at a time from the tailer threads,
under its lock), `gapwatch.commands.parse` (whole files), benchmarks and tests. Not thread-safe:
one parser holds the state that spans lines (TIMELINE anchor, worker -> GPU map, lock attribution).

Per line: strip ANSI and CR; dispatch on the first characters (cheap, before any regex):
`TIMELINE,` / `CUZK_` / a date (tracing line, or a journald/`ts` prefix that is peeled and the
remainder dispatched again); a Rust panic's first line opens a block whose message is the lines
no rule understands after it on its stream, said as one `panic` event when the next understood
line closes it (`gapwatch.cuzk.panics`; `flush` at the end of a file; followed live, `due` by the
reader's clock where no line comes); then the user rules; else an `unparsed` event (counted,
kept).

Time of an event, best first (`LogEvent.time_source`): the line's own timestamp ("line"), a
journald/`ts` prefix ("prefix"), a TIMELINE offset anchored to the `starting cuzk engine` line
("timeline"), the arrival time ("arrival"); a panic read from a file (`offline`) takes the timed
line before it ("around").

Attribution: C++ lines are emitted at once, unattributed. When the `spawn_blocking prove_start`
line that names the lock holder arrives, one extra event of kind `cuzk_partition`
(name `gpu_lock`) is emitted with worker, partition, job and the lock region's timings
(`gpu_busy_start_s`, `mutex_held_ms`, `ntt_kernels_ms`...). So nothing waits for attribution.
The pairing holds only where the C++ lines' place among the naming lines is known: one stream
(`2>&1`, the journal), or two files followed live (each line placed by its arrival); a followed
file's backlog (`parse_line(backlog=True)`) pairs only among its own lines (`LockAttributor`'s
places). A line its reader says is `apart` (`parse_line(apart=True)`: a file with no time of its
own read beside one that shows its own, `gapwatch.logs.files.read_order`, read whole offline or
as a followed backlog, `gapwatch.logs.follow`) takes no part in it: its C++ and naming lines are
marked (`log_lines.UNPLACED_FIELD`, so that a recording read again does not pair them either),
its C++ lines counted (`cpp_lines_unplaced`). A file read apart offline has its TIMELINE lines
placed by their own engine run's start line, not by the latest read (`runs_apart`, set by its
reader from the start lines kept, `start_lines`: `gapwatch.cuzk.engine_runs`).

GPU of an event, best first: a `gpu` field of the line or of its span (`gpu_worker{... gpu=G}`);
the worker's GPU, learnt from any line that names both (`pipeline GPU worker started`, the
`gpu_worker` span), so that lines naming only a worker (TIMELINE `worker=W`, `spawn_blocking
prove_start`, `FIN_TIMING finalizer`) follow it; for a line naming only a job and partition,
the GPU of the worker that picked that partition up (TIMELINE GPU_PICKUP / GPU_START). With more
than one GPU known (the worker map, or `initializing GPU workers num_gpus=N`), lock attribution
switches itself off. docs/logs.md lists what stays unattributed and why.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar

from msgspec.structs import replace

from gapwatch.config import LogsConfig
from gapwatch.core.bounds import MAX_GPU_INDEX, keep_latest, wall_s_ok
from gapwatch.core.models import READ_TIMES, FieldValue, LogEvent, TimeSource
from gapwatch.core.sizes import TEXT_CHARS, cut_text
from gapwatch.core.values import int_field
from gapwatch.cuzk import log_lines, panics
from gapwatch.cuzk.daemons import Daemons
from gapwatch.cuzk.engine_runs import RunsApart, StartLines
from gapwatch.cuzk.log_lines import (
    CONFIGURATION_LOADED_MESSAGE,
    DAEMON_STARTING_MESSAGE,
    PARTITION_KIND,
)
from gapwatch.cuzk.pipeline import PACER_TEXT_NUMBERS, numeric_text_fields
from gapwatch.logs.parse.prefixes import strip_ansi, strip_prefix
from gapwatch.logs.parse.tracing import TracingLine, parse_tracing
from gapwatch.logs.parse.user_rules import UserRules

__all__ = ["BUILT_IN_KINDS", "PARTITION_UNREAD", "TIMELINE_UNPLACED", "UNPLACED", "LogParser",
           "PARSE_CHARS", "PARTITION_NAME", "named_kinds", "user_kind"]

_V = TypeVar("_V")
PARTITION_NAME = "gpu_lock"
#: The kinds of event the built-in rules make (the user rules' are `user:NAME`, an unparsed
#: line's `unparsed`): `/metrics` counts each by name whatever else a recording names.
BUILT_IN_KINDS = frozenset(("tracing", "timeline", "chan_send", "cuzk_timing", "cuzk_ntt_h",
                            PARTITION_KIND, panics.KIND))


def user_kind(rule_name: str) -> str:
    """The kind of the events a user rule (`[[logs.rules]]`) makes."""
    return "user:" + rule_name


def named_kinds(config: LogsConfig) -> frozenset[str]:
    """Every kind this config's rules can make: the built-in rules' and its user rules'
    (`/metrics` counts each of them by name, however many made-up kinds a replay brings)."""
    return BUILT_IN_KINDS | {user_kind(r.name) for r in config.rules}


#: The counter of C++ lines that could not be placed beside the lines naming the lock holder
#: (`LogParser.parse_line(apart=True)`), so tied to no partition.
UNPLACED = log_lines.UNPLACED_COUNTER

#: The counters of TIMELINE and tracing lines naming a partition that does not read (no event
#: of theirs).
PARTITION_UNREAD = log_lines.PARTITION_UNREAD_COUNTER
TRACING_PARTITION_UNREAD = log_lines.TRACING_PARTITION_UNREAD_COUNTER

#: The counter of the TIMELINE lines of a file read apart that no start line places: their
#: engine run's start line is not known (`runs_apart`, `gapwatch.cuzk.engine_runs.placing`).
TIMELINE_UNPLACED = "timeline_lines_unplaced"


#: Streams whose own TIMELINE anchor is remembered (`LogParser._own_anchors`): the files given.
MAX_OWN_ANCHORS = 1024


#: Daemons whose worker and partition maps are remembered (`LogParser._maps_of`).
MAX_DAEMON_MAPS = 16
#: A daemon's worker -> GPU, worker -> job and (job, partition) -> GPU maps.
_WorkerMaps = tuple[dict[int, int], dict[int, str], "OrderedDict[tuple[str, int], int]"]


#: Partitions whose GPU is remembered (job, partition) -> GPU: a few jobs in flight at most.
_PART_GPU_KEPT = 4096


#: LogEvent's fields in order. The three built-in rules, once a line each, build their event
#: positionally in this order: msgspec takes positional arguments in about 60 % of the time it
#: takes keywords (tests/test_parse_fast_paths.py holds this list to LogEvent's own).
_EVENT_FIELDS = ("t_wall_s", "time_source", "kind", "name", "raw", "stream", "level", "job_id",
                 "worker", "partition", "gpu", "fields", "warning", "t_arrival_mono_ns")


#: The most characters of one line the rules read (the rest stays in `raw`, unparsed): the
#: parser works in bounded slices, so no hostile line holds the GIL (regexes run in C without
#: releasing it) long enough to stall the 100 ms sampler. cuzk's longest lines are well under
#: 1 KiB; 16 KiB costs at most a few ms, as every pattern that searches it reads it in time linear
#: in its length (tests/test_parse_linear.py checks their shape).
PARSE_CHARS = 16384


#: Workers remembered (GPU, last job): a prover has a handful; ids from junk lines must not
#: grow the maps without end.
MAX_WORKERS = 1024


def _remember(table: dict[int, _V], key: int, value: _V) -> None:
    """`table[key] = value`, forgetting the oldest entry when the table is full."""
    if key not in table and len(table) >= MAX_WORKERS:
        del table[next(iter(table))]
    table[key] = value


class Counts(dict[str, int]):
    """Counts by name; a name never counted reads 0 (as a `Counter` reads). The parser counts
    two or three times a line, and `+= 1` here costs under half what it costs on a `Counter`
    (a dict subclass with that one method: 48 ns against 110 ns in CPython 3.11)."""

    def __missing__(self, key: str) -> int:
        return 0


def _gpu(value: FieldValue) -> int | None:
    """A field as a GPU index; anything else (gpu=4096, gpu=-1) stays only in the fields."""
    n = int_field(value)
    return n if n is not None and 0 <= n <= MAX_GPU_INDEX else None


def _tracing_fields(line: TracingLine) -> dict[str, FieldValue]:
    """A tracing line's fields: its spans' (their names in `spans`), its own, its `target`; the
    pacer's quoted figures made numbers (engine.rs formats them with format!())."""
    fields: dict[str, FieldValue]
    if len(line.spans) == 1:  # the usual case: one span, its own fresh dict extended
        name, fields = line.spans[0]
        fields.update(line.fields)
        fields["spans"] = name
    elif line.spans:
        fields = {}
        for _name, span_fields in line.spans:
            fields.update(span_fields)
        fields.update(line.fields)
        fields["spans"] = ":".join([name for name, _ in line.spans])
    else:
        fields = line.fields
    if line.target is not None:
        fields["target"] = line.target
    if line.message.startswith("pacer:"):
        numeric_text_fields(fields, PACER_TEXT_NUMBERS)
    return fields


#: The lines that tell which daemon a stream is of (`gapwatch.cuzk.daemons.Daemons`).
_DAEMON_LINES = frozenset((DAEMON_STARTING_MESSAGE, CONFIGURATION_LOADED_MESSAGE))


class LogParser:
    """Stateful line parser. `parse_line` never raises on any input text."""

    def __init__(self, config: LogsConfig | None = None, *, keep_unparsed: bool = True,
                 offline: bool = False, drops_untimed: bool = False) -> None:
        cfg = config or LogsConfig()
        #: The reader drops every event timed 0 (a file's lines read without an arrival time:
        #: `gapwatch.logs.files.file_events`). A C++ timing line (`CUZK_TIMING`, `CUZK_NTT_H`:
        #: no time of its own, ~28 % of a busy log's lines) is then given as such an event
        #: without its fields (only checked to parse, and counted) where nothing else reads
        #: them: no prefix timed it and lock attribution is off (several GPUs). Its event still
        #: ends a panic's block as any parsed line does.
        self.drops_untimed = drops_untimed
        #: Reading a file, not following a log: a panic's untimestamped lines are placed by the
        #: timed lines around them ("around"), not by when they were read ("arrival").
        self.offline = offline
        #: What a line timed by its arrival says of it: "arrival" (followed live: within a
        #: poll period of its writing), or "backlog" for the line being parsed when it is one a
        #: file held when following began (`parse_line(backlog=True)`): read, not written, then.
        self._arrival_source: TimeSource = "arrival"
        #: The line being parsed cannot be placed among the other streams' lines
        #: (`parse_line(apart=True)`): it takes no part in lock attribution.
        self._apart = False
        #: Where lock attribution places the line being parsed (`LockAttributor`): None, or
        #: for a line of a followed file's backlog (`parse_line(backlog=True)`), that file:
        #: a backlog is in the order written only among its own lines.
        self._place: str | None = None
        self._panic: panics.PanicBlock | None = None
        #: The time of the latest event timed by its own line, a prefix or TIMELINE.
        self._last_timed_s: float | None = None
        self.cuzk_enabled = cfg.cuzk
        self.keep_unparsed = keep_unparsed
        self.counters = Counts()
        self._rules = UserRules(cfg.rules, self.counters)
        #: Wall time of TIMELINE offset 0: the `starting cuzk engine` line ("log"), or, until
        #: that line is read, the prover's `/status` uptime (`anchor_from_status`: "status").
        self.anchor_wall_s: float | None = None
        self.anchor_source: str | None = None
        #: Each stream's own latest start line (the latest `MAX_OWN_ANCHORS` streams): its
        #: TIMELINE lines count from it, not from another stream's (two cuzk daemons' logs,
        #: `gapwatch.cuzk.daemons`: followed live, the one anchor was the latest start line of
        #: either daemon). A stream with none (cuzk's stderr apart) takes `anchor_wall_s`.
        self._own_anchors: dict[str, float] = {}
        #: Which daemon each stream's lines are of (`gapwatch.cuzk.daemons`: another only where
        #: its listen address says so), for the worker maps below.
        self._daemons = Daemons()
        #: The `starting cuzk engine` lines read (their times), kept only where a file read
        #: apart will need them (`keep_start_lines`): None, so that a log's split parse
        #: (`gapwatch.offline.log_split`, one file) compares no list its halves read apart.
        self.start_lines: StartLines | None = None
        #: The engine runs of the file being read apart and the start line each takes (set by
        #: its reader, `gapwatch.logs.files.runs_apart`): its TIMELINE lines are placed by
        #: their own run's start line, not by the latest read. None: by the anchor.
        self.runs_apart: RunsApart | None = None
        self._worker_gpu: dict[int, int] = {}
        self._worker_job: dict[int, str] = {}
        self._part_gpu: OrderedDict[tuple[str, int], int] = OrderedDict()
        #: The three maps above are one daemon's: the first's ("", every stream that showed
        #: no start line of its own), or, where another stream showed one (another cuzk
        #: daemon, `gapwatch.cuzk.daemons`: its workers are numbered from 0 too, on its own
        #: GPU), that stream's; the others' kept here while one's are in use (`_daemon_maps`).
        self._maps_key = ""
        self._maps_of: dict[str, _WorkerMaps] = {}
        self.attributor = log_lines.LockAttributor()
        self._kind_keys: dict[str, str] = {}

    # ------------------------------------------------------------------ public API
    def parse_line(self, text: str, stream: str = "", arrival_mono_ns: int | None = None,
                   arrival_wall_s: float = 0.0, backlog: bool = False,
                   apart: bool = False) -> list[LogEvent]:
        """Parse one line (without its newline). Returns 0..2 events; never raises.
        `backlog`: the line was in its file when following began from its start (a time taken
        from its arrival is then "backlog", not "arrival"). `apart`: its reader cannot place it
        among the other streams' lines (see the module docstring): a C++ line of it is tied to
        no partition (counted `cpp_lines_unplaced`), a naming line names none."""
        self.counters["lines"] += 1
        self._arrival_source = "backlog" if backlog else "arrival"
        self._apart = apart
        self._place = stream if backlog else None
        block = self._panic
        try:
            events = self._parse(text, stream, arrival_mono_ns, arrival_wall_s)
        except Exception:  # noqa: BLE001 - a log line must never stop the tailer
            self.counters["internal_errors"] += 1
            return self._unparsed(text, stream, arrival_mono_ns, arrival_wall_s, None)
        for e in events:
            if not wall_s_ok(e.t_wall_s):
                self._arrival_times(events, arrival_wall_s)
                break
        if events:
            timed = [e.t_wall_s for e in events if e.time_source not in READ_TIMES]
            if block is not None and block is self._panic and (
                    block.stream == stream or block.ended(arrival_wall_s)):
                self._panic = None
                events.insert(0, self._panic_event(block, timed[0] if timed else None))
            if timed:
                self._last_timed_s = timed[-1]
        return events

    def flush(self) -> list[LogEvent]:
        """The end of the input (a file read whole, a follower stopping): the panic still being
        read, as its event (else nothing)."""
        block, self._panic = self._panic, None
        return [self._panic_event(block, None)] if block is not None else []

    def due(self, now_wall_s: float) -> list[LogEvent]:
        """The live reader's clock reads `now_wall_s` (the arrival clock of `parse_line`) and
        no line came: the panic being read, as its event, once it has ended by that clock
        (`PanicBlock.ended`: its `note:` line, or `panics.QUIET_S` with no line of its own,
        `panics.CONTINUE_S` while a backtrace is pending), else nothing. The event is the one
        `flush` or the next line would give (its time does not come from the line after it,
        except where nothing else places it: then it waits for `QUIET_S`). Without it a panic
        that killed the process was said only when the restarted daemon's first line came, or
        never (`gapwatch.logs.follow` calls it after each pass of the tailer)."""
        block = self._panic
        if block is None or not block.ended(now_wall_s):
            return []
        if (block.closed and now_wall_s - block.last_arrival_wall_s < panics.QUIET_S
                and self._placed_by_next_line(block)):
            return []
        self._panic = None
        return [self._panic_event(block, None)]

    @property
    def reading_panic(self) -> bool:
        """Whether a panic is being read (its block open): read without the caller's lock by the
        reader's clock (`gapwatch.logs.follow`), a reference's read being whole; a block opened
        just after is seen at the next pass."""
        return self._panic is not None

    def panic_being_read_s(self) -> float | None:
        """The time its event will have of the panic still being read (`_panic_time`, no line
        after it read yet: a backlog's panic after a timed line has that line's), or None: none
        is. Its event is not handed on yet: what waits for it beside the log must wait
        (`gapwatch.logs.follow`)."""
        block = self._panic
        return self._panic_time(block, None)[0] if block is not None else None

    def _placed_by_next_line(self, block: panics.PanicBlock) -> bool:
        """Whether `block`'s time is the line after it's (`_panic_time` with no line before)."""
        return (block.prefix_s is None and block.before_s is None
                and self._placed_around(block))

    def _placed_around(self, block: panics.PanicBlock) -> bool:
        """Whether `block` without a prefix is placed by the timed lines around it rather than
        by its arrival: read from a file, or a followed backlog (its arrival is not its time)."""
        return self.offline or block.arrival_source == "backlog"

    def _panic_time(self, block: panics.PanicBlock, after_s: float | None
                    ) -> tuple[float, TimeSource]:
        """The one rule for a panic's time and its source: a prefix on its first line; reading
        a file or a backlog, the timed line before it (else `after_s`, the one after it);
        followed live, or with neither, when its first line arrived."""
        if block.prefix_s is not None:
            return block.prefix_s, "prefix"
        if self._placed_around(block):
            around = block.before_s if block.before_s is not None else after_s
            if around is not None:
                return around, "around"
        return block.arrival_wall_s, block.arrival_source

    def _panic_event(self, block: panics.PanicBlock, after_s: float | None) -> LogEvent:
        """One event for a whole panic message, at its time (`_panic_time`)."""
        t, source = self._panic_time(block, after_s)
        self._count(panics.KIND)
        return LogEvent(
            t_wall_s=t, time_source=source, kind=panics.KIND, name=block.name(), raw=block.raw,
            stream=block.stream, level="ERROR", fields=block.fields(),
            t_arrival_mono_ns=block.arrival_mono_ns)

    def _arrival_times(self, events: list[LogEvent], arrival_wall_s: float) -> None:
        """A time gapwatch cannot place or print (year 5000, a TIMELINE offset of 1e17 ms): the
        event keeps its arrival time and says so, and is counted (in place)."""
        for i, e in enumerate(events):
            if not wall_s_ok(e.t_wall_s):
                self.counters["bad_timestamp"] += 1
                events[i] = replace(e, t_wall_s=arrival_wall_s,
                                    time_source=self._arrival_source)

    def anchor_from_status(self, epoch_wall_s: float | None) -> None:
        """Place TIMELINE offsets by the prover's `/status` (`gapwatch.cuzk.pipeline.
        timeline_epoch`) when the log's own anchor line was not read (the log was followed
        from its end, or rotated since): the anchor line, once read, wins. A later snapshot
        replaces an earlier one (a restarted daemon counts its uptime from 0 again)."""
        if epoch_wall_s is None or self.anchor_source == "log" or not wall_s_ok(epoch_wall_s):
            return
        if self.anchor_source is None:
            self.counters["timeline_anchors_status"] += 1
        self.anchor_wall_s = epoch_wall_s
        self.anchor_source = "status"

    def keep_start_lines(self) -> None:
        """Keep the `starting cuzk engine` lines read from now on (`start_lines`): the files
        read before one read apart (`gapwatch.logs.files.read_order`)."""
        if self.start_lines is None:
            self.start_lines = StartLines()

    def resume_state(self) -> tuple[object, ...] | None:
        """Everything of this parser's state that shapes the events of the lines it reads next
        (not its counters), comparable with `==`; None while a panic is being read. Two
        parsers with equal states make equal events of the same lines: the parse of one file
        in two processes (`gapwatch.offline.log_split`) checks this where its halves meet.
        `tests/test_log_split.py` names every attribute, so that one added is added here."""
        if self._panic is not None:
            return None
        return (self.offline, self.cuzk_enabled, self.keep_unparsed, self.drops_untimed,
                self._last_timed_s,
                self.anchor_wall_s, self.anchor_source, list(self._own_anchors.items()),
                None if self.start_lines is None else self.start_lines.resume_state(),
                None if self.runs_apart is None else self.runs_apart.resume_state(),
                list(self._worker_gpu.items()),
                list(self._worker_job.items()), list(self._part_gpu.items()),
                self._daemons.resume_state(), self._maps_key,
                [(k, list(g.items()), list(j.items()), list(p.items()))
                 for k, (g, j, p) in self._maps_of.items()],
                self._rules.resume_state(), self.attributor.resume_state())

    @property
    def unparsed(self) -> int:
        return self.counters["unparsed"]

    @property
    def worker_gpu(self) -> dict[int, int]:
        """Worker id -> GPU index, from `pipeline GPU worker started` lines."""
        return dict(self._worker_gpu)

    # ------------------------------------------------------------------ dispatch
    def _parse(self, text: str, stream: str, mono: int | None, wall: float) -> list[LogEvent]:
        raw = text
        text = self._normalise(text)
        if not text:
            return []
        prefix_s: float | None = None
        while True:  # at most one prefix is peeled, then the rest is dispatched
            if self.cuzk_enabled:
                out = self._builtin(text, raw, stream, mono, wall, prefix_s)
                if out is not None:
                    return out
            if prefix_s is not None:
                break
            peeled = strip_prefix(text, wall or 0.0)
            if peeled is None or not peeled[0].strip():
                break
            text, prefix_s = peeled
            self.counters["prefix_time"] += 1
        return self._unknown(text, raw, stream, mono, wall, prefix_s)

    def _normalise(self, text: str) -> str:
        """The part of a line the rules read: its head only (`PARSE_CHARS`), without colour or
        line ends; "" for a blank line (counted)."""
        if len(text) > PARSE_CHARS:
            # Only the line's head is parsed (its raw text stays whole): one regex call over a
            # 1 MiB line of fields held the GIL 156 ms and the sampler missed its ticks.
            text = text[:PARSE_CHARS]
            self.counters["parse_cut"] += 1
        if "\x1b" in text:
            text = strip_ansi(text)
            self.counters["ansi_stripped"] += 1
        if text.endswith(("\r", "\n")):
            text = text.rstrip("\r\n")
        if not text or text.isspace():
            self.counters["blank"] += 1
            return ""
        return text

    def _builtin(self, text: str, raw: str, stream: str, mono: int | None, wall: float,
                 prefix_s: float | None) -> list[LogEvent] | None:
        """The built-in rules, dispatched on the first characters (cheap, before any regex);
        None when none of them understood the line."""
        c = text[0]
        if c == "T" and text.startswith("TIMELINE,"):
            return self._timeline(text, raw, stream, mono, wall, prefix_s)
        if c == "C" and text.startswith("CUZK_"):
            return self._cuzk_cpp(text, raw, stream, mono, wall, prefix_s)
        if "0" <= c <= "9" and len(text) > 20 and text[4] == "-":
            return self._tracing(text, raw, stream, mono, wall)
        return None

    def _unknown(self, text: str, raw: str, stream: str, mono: int | None, wall: float,
                 prefix_s: float | None) -> list[LogEvent]:
        """A line no built-in rule understood: a panic's first line opens a block, the lines
        after it on its stream are its message (`gapwatch.cuzk.panics`); else the user rules."""
        if self.cuzk_enabled:
            start = panics.panic_start(text, stream, mono, wall)
            block = self._panic
            if start is not None:
                out = self.flush()
                start.prefix_s, start.before_s = prefix_s, self._last_timed_s
                start.last_arrival_wall_s = wall
                start.arrival_source = self._arrival_source
                self._panic = start
                self.counters["panic_lines"] += 1
                return out
            if block is not None and block.stream == stream and block.joins(wall):
                block.add(text)
                block.last_arrival_wall_s = wall
                self.counters["panic_lines"] += 1
                return []
        return self._user_or_unparsed(text, raw, stream, mono, wall, prefix_s)

    def _time(self, prefix_s: float | None, wall: float) -> tuple[float, TimeSource]:
        if prefix_s is not None:
            return prefix_s, "prefix"
        return wall, self._arrival_source

    def _count(self, kind: str) -> None:
        c = self.counters
        c["parsed"] += 1
        key = self._kind_keys.get(kind)
        if key is None:
            key = self._kind_keys[kind] = "kind:" + kind
        c[key] += 1

    # ------------------------------------------------------------------ built-in rules
    def _timeline(self, text: str, raw: str, stream: str, mono: int | None, wall: float,
                  prefix_s: float | None) -> list[LogEvent] | None:
        line = log_lines.parse_timeline(text)
        if line is None:
            return None
        if line.partition_unread:
            # A partition's line, which one not known: as an event its partition None made it
            # a monolithic job's to every consumer. No rule's, so a user rule's or unparsed.
            self.counters[PARTITION_UNREAD] += 1
            return None
        if self._daemons.several:
            self._daemon_maps(stream)
        source: TimeSource
        anchor = self._own_anchors.get(stream, self.anchor_wall_s) if self._own_anchors \
            else self.anchor_wall_s
        if self._apart and self.runs_apart is not None and line.offset_ms is not None:
            # Its own run's start line (a file read after every start line of the others).
            anchor = self.runs_apart.anchor_s(line.offset_ms)
            if anchor is None and prefix_s is None:
                self.counters[TIMELINE_UNPLACED] += 1
        if prefix_s is not None:
            t, source = prefix_s, "prefix"
        elif anchor is not None and line.offset_ms is not None:
            t, source = anchor + line.offset_ms / 1000.0, "timeline"
        else:
            t, source = wall, self._arrival_source
        worker = int_field(line.fields.get("worker"))
        partition = line.partition
        if worker is not None and line.job_id is not None and line.event == "GPU_START":
            _remember(self._worker_job, worker, cut_text(line.job_id, TEXT_CHARS))
        gpu = self._worker_gpu.get(worker) if worker is not None else None
        if gpu is not None and line.job_id is not None and partition is not None and \
                line.event in ("GPU_PICKUP", "GPU_START"):
            self._remember_partition_gpu(line.job_id, partition, gpu)
        kind = "chan_send" if line.event == "CHAN_SEND" else "timeline"
        self._count(kind)
        return [LogEvent(  # positional: see `_EVENT_FIELDS`
            t, source, kind, line.event, raw, stream, None, line.job_id, worker, partition, gpu,
            line.fields, None, mono,
        )]

    def _remember_partition_gpu(self, job_id: str, partition: int, gpu: int) -> None:
        key = (job_id, partition)
        self._part_gpu[key] = gpu
        self._part_gpu.move_to_end(key)
        while len(self._part_gpu) > _PART_GPU_KEPT:
            self._part_gpu.popitem(last=False)

    def _learn_worker_gpu(self, worker: int, gpu: int) -> None:
        """A line named both a worker and its GPU: remember it; a second GPU switches lock
        attribution off (in-lock C++ lines of two GPUs interleave with nothing to tell them
        apart)."""
        if self._worker_gpu.get(worker) == gpu:
            return
        _remember(self._worker_gpu, worker, gpu)
        if len(set(self._worker_gpu.values())) > 1:
            self._disable_attribution()

    def _daemon_maps(self, stream: str) -> None:
        """The worker and partition maps of the daemon whose lines `stream` holds made the
        ones in use (`_maps_key`). A second daemon's switches lock attribution off: its C++
        lines on its own stderr interleave with the first's as they arrive."""
        d = self._daemons.of_stream(stream)
        key = f"daemon {d}" if d else ""
        if key == self._maps_key:
            return
        maps = self._maps_of
        keep_latest(maps, self._maps_key, (self._worker_gpu, self._worker_job, self._part_gpu),
                    MAX_DAEMON_MAPS)
        self._worker_gpu, self._worker_job, self._part_gpu = (
            maps.pop(key) if key in maps else ({}, {}, OrderedDict()))
        self._maps_key = key
        self._disable_attribution()

    def _disable_attribution(self) -> None:
        if self.attributor.enabled:
            self.attributor.disable()
            self.counters["attribution_disabled_multi_gpu"] += 1

    def _cuzk_cpp(self, text: str, raw: str, stream: str, mono: int | None, wall: float,
                  prefix_s: float | None) -> list[LogEvent] | None:
        # A line that cannot be placed beside the naming lines is not paired with one: paired
        # in the order read, cuzk's stderr read after its stdout tied lock times to the
        # partitions of the log's end (GPU occupied 52 % for 75 %). Counted only where it
        # would have been paired (attribution on: one GPU).
        unplaced = self._apart and self.attributor.enabled
        if (self.drops_untimed and prefix_s is None and wall == 0.0
                and (unplaced or not self.attributor.enabled)):
            out = self._cuzk_cpp_untimed(text, raw, stream, mono)
            if out is not None and unplaced:
                self.counters[UNPLACED] += 1
            return out
        if text.startswith("CUZK_TIMING:"):
            parsed = log_lines.parse_cuzk_timing(text[12:])
            if parsed is None:
                return None
            name, fields = parsed
            kind = "cuzk_timing"
        elif text.startswith("CUZK_NTT_H:"):
            ntt = log_lines.parse_cuzk_ntt_h(text[11:])
            if ntt is None:
                return None
            name, fields, kind = "CUZK_NTT_H", ntt, "cuzk_ntt_h"
        else:
            return None
        t, source = self._time(prefix_s, wall)
        self._count(kind)
        events = [LogEvent(  # positional: see `_EVENT_FIELDS`
            t, source, kind, name, raw, stream, None, None, None, None, _gpu(fields.get("gpu")),
            fields, None, mono,
        )]
        if self._apart:
            fields[log_lines.UNPLACED_FIELD] = True
            if unplaced:
                self.counters[UNPLACED] += 1
        lock = self.attributor.feed_cpp(fields, mono, self._place)
        if lock is not None:
            events.append(self._lock_event(lock, stream, mono))
        return events

    def _cuzk_cpp_untimed(self, text: str, raw: str, stream: str, mono: int | None
                          ) -> list[LogEvent] | None:
        """`_cuzk_cpp` of a line whose event the reader drops (`drops_untimed`): the same
        answer and counts, its event timed 0 (as `_time` times it) without name or fields."""
        if text.startswith("CUZK_TIMING:"):
            if not log_lines.cuzk_cpp_parses(text[12:], timing=True):
                return None
            kind = "cuzk_timing"
        elif text.startswith("CUZK_NTT_H:"):
            if not log_lines.cuzk_cpp_parses(text[11:], timing=False):
                return None
            kind = "cuzk_ntt_h"
        else:
            return None
        self._count(kind)
        return [LogEvent(0.0, self._arrival_source, kind, "", raw, stream,
                         t_arrival_mono_ns=mono)]

    def _tracing(self, text: str, raw: str, stream: str, mono: int | None, wall: float
                 ) -> list[LogEvent] | None:
        line = parse_tracing(text)
        if line is None:
            return None
        if self._daemons.several:
            self._daemon_maps(stream)
        fields = _tracing_fields(line)
        partition, unread = log_lines.tracing_partition_of(fields.get("partition"))
        if unread:  # as `_timeline`'s: a partition's line, which one not known
            self.counters[TRACING_PARTITION_UNREAD] += 1
            return None
        message = line.message.rstrip()
        worker = int_field(fields.get("worker_id"))
        job = fields.get("job_id")
        # A numeric id (`job_id=12345`) was made an int: its TIMELINE lines name it as text
        # (one with a leading zero stayed text: `convert_value`).
        job_id = job if isinstance(job, str) else (
            str(job) if isinstance(job, int) and not isinstance(job, bool) else None)
        self._learn_from(message, fields, line.t_wall_s, stream)
        gpu = self._gpu_of(_gpu(fields.get("gpu")), worker, job_id, partition)
        self._count("tracing")
        events = [LogEvent(  # positional: see `_EVENT_FIELDS`
            line.t_wall_s, "line", "tracing", message, raw, stream, line.level, job_id, worker,
            partition, gpu, fields, log_lines.warning_of(text), mono,
        )]
        if message == log_lines.PROVE_START_MESSAGE:
            if self._apart:
                fields[log_lines.UNPLACED_FIELD] = True
            lock = self.attributor.feed_prove_start(
                worker, partition, line.t_wall_s, "line", mono, fields.get("prove_start_ms"),
                self._apart, self._place)
            if lock is not None:
                events.append(self._lock_event(lock, stream, mono))
        return events

    def _learn_from(self, message: str, fields: dict[str, FieldValue], t_wall_s: float,
                    stream: str) -> None:
        """What a tracing line tells the parser's state: the TIMELINE anchor (cuzk's start line,
        which also forgets the worker -> GPU maps of the run before), and whether lock
        attribution can hold (it cannot with several GPUs)."""
        if message in _DAEMON_LINES or message.startswith(log_lines.ANCHOR_MESSAGE):
            self._daemons.of_log(LogEvent(t_wall_s, "line", "tracing", message, "", stream,
                                          fields=fields))
        if message.startswith(log_lines.ANCHOR_MESSAGE):
            self.anchor_wall_s = t_wall_s
            self.anchor_source = "log"
            keep_latest(self._own_anchors, stream, t_wall_s, MAX_OWN_ANCHORS)
            if self._daemons.several:
                self._daemon_maps(stream)  # the maps its start clears are its own daemon's
            if self.start_lines is not None and not self._apart:
                self.start_lines.add(t_wall_s)
            self._worker_gpu.clear()
            self._part_gpu.clear()
            self.counters["timeline_anchors"] += 1
        elif message.startswith(log_lines.INIT_WORKERS_MESSAGE):
            n_gpus = int_field(fields.get("num_gpus"))
            if n_gpus is not None and n_gpus > 1:
                self._disable_attribution()

    def _gpu_of(self, gpu: int | None, worker: int | None, job_id: str | None,
                partition: int | None) -> int | None:
        """The line's GPU: its own field (a worker's line teaches the worker -> GPU map), else
        its worker's GPU, else its partition's."""
        if worker is not None and gpu is not None:
            # `pipeline GPU worker started worker_id gpu`, or any line in a worker's span.
            self._learn_worker_gpu(worker, gpu)
            return gpu
        if gpu is None and worker is not None:
            gpu = self._worker_gpu.get(worker)
        if gpu is None and job_id is not None and partition is not None:
            gpu = self._part_gpu.get((job_id, partition))
        return gpu

    def _lock_event(self, lock: log_lines.PartitionLock, stream: str, mono: int | None) -> LogEvent:
        self._count(PARTITION_KIND)
        worker = lock.worker
        return LogEvent(
            t_wall_s=lock.end_wall_s, time_source=lock.time_source,
            kind=PARTITION_KIND, name=PARTITION_NAME, raw="", stream=stream,
            job_id=self._worker_job.get(worker) if worker is not None else None,
            worker=worker, partition=lock.partition,
            gpu=self._worker_gpu.get(worker) if worker is not None else None,
            fields=lock.fields, t_arrival_mono_ns=mono,
        )

    # ------------------------------------------------------------------ user rules, fallback
    def _user_or_unparsed(self, text: str, raw: str, stream: str, mono: int | None,
                          wall: float, prefix_s: float | None) -> list[LogEvent]:
        if self._rules:
            m = self._rules.match(text)
            if m is not None:
                source: TimeSource
                if m.t_wall_s is not None:
                    t, source = m.t_wall_s, "line"
                else:
                    t, source = self._time(prefix_s, wall)
                if m.bad_timestamp:
                    self.counters["bad_timestamp"] += 1
                kind = user_kind(m.rule)
                self._count(kind)
                return [LogEvent(
                    t_wall_s=t, time_source=source, kind=kind, name=m.name,
                    raw=raw, stream=stream, job_id=m.job_id, worker=m.worker,
                    partition=m.partition, gpu=m.gpu, fields=m.fields, warning=m.warning,
                    t_arrival_mono_ns=mono,
                )]
        return self._unparsed(text, stream, mono, wall, prefix_s, raw=raw)

    def _unparsed(self, text: str, stream: str, mono: int | None, wall: float,
                  prefix_s: float | None, raw: str | None = None) -> list[LogEvent]:
        self.counters["unparsed"] += 1
        if not self.keep_unparsed:
            return []
        t, source = self._time(prefix_s, wall)
        return [LogEvent(
            t_wall_s=t, time_source=source, kind="unparsed", name="", raw=raw or text,
            stream=stream, t_arrival_mono_ns=mono,
        )]
