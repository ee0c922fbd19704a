"""A prover log read twice, each line counted once: the log events a recording holds (`record
--log cuzk.log`) and the same lines read again offline from a `--log` file (`report REC --log
cuzk.log`, and `export`, `replay`, `compare`, `parse --timeline --recording`).

Who calls it: `gapwatch.offline.detect.detect_records` (`report`, `export`'s report, `compare`),
`gapwatch.logs.files.merge_by_time` (`replay`, `export`'s trace), `gapwatch.commands.parse`.
Each wraps the `--log` files' events (`LinesOnce`, iterated in their place) and asks, of each
log event the recording holds, whether the files hold it too (`LinesOnce.recorded`).

Read twice, every line was two: the pinned pool's failures said 44 for the log's 22, cuzk
"started 2 times" beside "0 restart(s)", the errors and first waves twice, `parse --timeline
--recording` a kernel utilisation of 125.5 %. Only a PoSt's `GPU_END` was passed over
(`gapwatch.cuzk.post.PostTracker.read_again`, by its job and TIMELINE offset), and a start
line (`restarts.SAME_LINE_S`, `settings` to the ms): guards of one consumer each, for one kind
of line, which stay for a file that holds its own lines twice. This is the rule for all events,
where the two copies meet.

The same line: the same text (`raw`), made into the same event (kind, name; for the event of
cuzk's GPU-lock region, which has no one line's text, its worker and partition), and
- timed by its own text in both copies (its timestamp, a journald/`ts` prefix): at the same
  time, to the bit (the same text gives the same time);
- else the nearest, the file's copy from `HOLD_S` before the recorded one to `SAME_LINE_S`
  after it: a TIMELINE line is placed by an anchor (the recording's may be `/status`'s uptime,
  the file's its `starting cuzk engine` line: a second or so apart), a panic the recording
  timed by its arrival and the file by the line before it (minutes before, after a quiet
  spell: 60 s either way counted such a panic twice).
Never the stream: the recording names the path `record` followed, the report the one it was
given (`/var/log/cuzk/cuzk.log`, `./cuzk.log`, a copy, a hard link). Never the time alone
(cuzk's stdout and stderr overlap in time, repeating nothing). Each file line stands for at most
one recorded line: a line cuzk wrote twice is two in both copies, and counts twice.

The copy kept is the file's, the recording's copy left out:
- the file's copies come from one parse of the whole file: its TIMELINE lines on one anchor (the
  log's own start line where it holds it), its panics placed by the lines around them, none
  timed by when gapwatch read it. A job's lines taken some from one copy and some from the
  other would put its phases on two anchors;
- a recording made with `--log`, reported with its log, reads as one made without `--log`
  reported with it;
- it takes bounded memory: the files' events are sorted (on disk) and can be read ahead, so a
  recorded event is decided as it comes, among the samples, wherever the file's copy falls. The
  recording cannot be read ahead without holding its samples.
The recording's events the files do not hold are all kept: lines an offline parse drops (C++
timing lines with no time of their own, unparsed lines), another log `record` followed, lines of
a file rotated away since; and the GPU lock regions `record` paired as the lines came, counted
(`locks_kept`): where the files pair none (cuzk's stderr given apart from its stdout,
`gapwatch.logs.files.read_order`), what is said of the file's unpaired lines says that these
stand in for them (`gapwatch.offline.log_span.LogSpan.notes`). A file line given a time when it
was read (`parse` times an untimed line so) is matched with nothing: its time says nothing of
when it was written.

One fact of the recording's copy is not the file's: when the live reader read the line
(`LogEvent.t_arrival_mono_ns`; the file was read whole, later). The end of a recording judges a
PoSt still in flight by that reader's clock, from when its latest line was read
(`gapwatch.cuzk.watch.CuzkWatch.finish`): given the log it followed, a WinningPoSt said LATE live
was `ok (running)` at its last line. The caller is told each such reading (`tell_lines_read`:
the file copy's stream and time), once it has fed the file's copy: a copy is mostly fed before
its recorded copy comes (at the first GPU sample past its time; the recorded copy where it
arrived), so it cannot carry the reading itself.

Memory: of the files' lines, a 64-bit key and a time for those within `HOLD_S` of the latest
given to the caller (at most `MAX_HELD`), and the events read ahead of the caller, up to
`SAME_LINE_S` past a recorded event's time (at most `MAX_AHEAD`, and `MAX_AHEAD_CHARS` of
text), with the readings to tell of those and of the line the caller holds; never a set of
every line seen. Past them (a recorded copy written more than a few minutes after its line, a
million lines a second, more than `MAX_COPIES` copies of one line not timed by its own text
within the read-ahead's minute) a line may count twice.

Cost: most recordings hold no log event (made without `--log`). A recording of the GPUs whose
header names no log followed cannot (`may_hold_log_lines`): nothing is held or looked for.
Otherwise, until the recording gives its first log event, the file lines of the last `HOLD_S`
are held (their keys) but not indexed by key, and indexed only then: a day of 8 GPUs' log (~6 M
lines, read by each worker of a split report) paid ~1.4 us a line for an index nothing asked
(~1.0 us now, the key's hash; nothing for a recording `may_hold_log_lines` rules out).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Final, Generic, Protocol, TypeVar, runtime_checkable

from gapwatch.core.models import READ_TIMES, LogEvent, SessionHeader
from gapwatch.cuzk.log_lines import PARTITION_KIND

T = TypeVar("T")

#: The farthest apart two copies of one line are placed when a copy is not timed by its own
#: text (see the module docstring): anchors a second or so apart, a panic's arrival and the
#: line before it.
SAME_LINE_S: Final = 60.0
#: How long after the latest file line read an earlier one can still be a recorded line's copy:
#: the merge feeds a file's copy by its time, the recording holds its copy where it arrived
#: (read late: a log on NFS seen every 30 s), and the read ahead runs `SAME_LINE_S` past it.
HOLD_S: Final = 300.0
#: File lines held for matching (keys and times: ~150 B each; a busy 8-GPU log writes ~70
#: lines a second, ~21,000 in `HOLD_S`), and file events read ahead of the caller (whole).
MAX_HELD: Final = 1 << 17
MAX_AHEAD: Final = 1 << 15
#: The text of the file events read ahead, at most: 32,768 lines of a MiB each were 32 GiB
#: (a report worker took 906 MB for 2,000 lines of 400 KB).
MAX_AHEAD_CHARS: Final = 32 << 20
#: Copies of one text held (a crash loop's panic every 3 s, the GPU-lock region of one worker
#: and partition each job): the oldest let go first, so that a recorded line looks through a
#: bounded list.
MAX_COPIES: Final = 128
#: Times a line's own text gives.
_OWN_TIMES: Final = ("line", "prefix")


def line_key(ev: LogEvent) -> int:
    """The line's identity as a 64-bit number (see the module docstring): its text, its
    event, and its time when its own text gives it. The text is not held (a line may be a
    MiB); a chance match of two lines needs ~2^32 held at once. Python's own hash: equal in
    one process, which is where both copies are compared (a split report's workers each
    compare all of them)."""
    own = ev.t_wall_s if ev.time_source in _OWN_TIMES else None
    return hash((ev.kind, ev.name, ev.raw, ev.worker, ev.partition, own))


#: A file line held for matching: its time, `line_key` and stream (the `--log` path). A plain
#: tuple, each one itself (two copies of a line are two): every file line makes one, and a
#: dataclass cost seven times as much to make (~0.35 us a line, a day's log ~6 M of them).
_Held = tuple[float, int, str]

#: Told of each file line fed whose recorded copy carried the time the live reader read it
#: (`LogEvent.t_arrival_mono_ns`): the file copy's stream and time, and that reading (see
#: `LinesOnce.tell_lines_read`).
LineRead = Callable[[str, float, int], None]


class LinesOnce(Generic[T]):
    """The `--log` files' items (`event_of` gives each one's event), in their order: iterate it
    in their place; `recorded` says of each log event the recording holds whether they hold
    it too (then it is left out); `paired` whether a file's event stands for a recorded one
    (kept even where the span would drop it: the recording held it). See the module
    docstring."""

    def __init__(self, items: Iterable[T], event_of: Callable[[T], LogEvent],
                 look: bool = True, since_s: float = float("-inf")) -> None:
        self._source = iter(items)
        self._event_of = event_of
        #: False: the recording cannot hold a line of them (`may_hold_log_lines`): the items
        #: are given as they come and nothing is looked for (no cost a line).
        self._look = look
        self._done = False
        #: Items read ahead (for `recorded`) that the caller has not taken yet, and their text.
        self._ahead: deque[T] = deque()
        self._ahead_chars = 0
        #: Every file line held, in the order read (time order), and those no recorded line
        #: was found to be yet, by key, oldest first.
        self._held: deque[_Held] = deque()
        self._free: dict[int, list[_Held]] = {}
        #: The latest time of a file line read (how far `recorded` has read ahead), and of one
        #: given to the caller: the merge gives a line when the recording's data reaches its
        #: time, so the recording is at least there, and a line is let go `HOLD_S` after that
        #: (after the latest line read, a line followed by minutes of silence went as the next
        #: was read ahead, before its recorded copy came: counted twice).
        self._latest_s = float("-inf")
        self._given_s = float("-inf")
        #: The recording's start: lines from before it (its startup lines, a backlog `record
        #: --from-start` read) are recorded at its start, however old: held as if of then.
        self._since_s = since_s
        #: (key, time) of the held lines a recorded line was found to be -> how many.
        self._claimed: dict[tuple[int, float], int] = {}
        #: Whether `_free` indexes the held lines: only from the recording's first log event
        #: on (`recorded`; see the module docstring).
        self._indexed = False
        #: Recorded events left out, by the stream (the `--log` path) of their file copy.
        self.found: dict[str, int] = {}
        #: The recording's GPU lock regions (`cuzk_partition`) kept, no file holding them:
        #: `record --log` paired them as the lines came, where the files read whole may not
        #: (a stderr given apart from its stdout: `LogSpan.notes` says which stand in).
        self.locks_kept = 0
        #: Whether the caller has taken every item (then it has fed them all).
        self._ended = False
        #: Who is told of the lines read live (`tell_lines_read`; None: nobody, nothing kept),
        #: and those to tell once the caller has fed them: (time, stream, reading), a heap.
        self._line_read: LineRead | None = None
        self._unfed: list[tuple[float, str, int]] = []

    def tell_lines_read(self, to: LineRead) -> None:
        """Tell `to` of each file line the caller fed whose recorded copy says when the live
        reader read it (`LogEvent.t_arrival_mono_ns`): its stream, its time (the file's copy's),
        that reading. The copy fed is the file's, which has no such time (it was read whole
        later), and the recorded copy left out held the only word of it: the end of a recording
        judges a PoSt in flight by the reader's clock from it (`CuzkWatch.finish`), and without
        it a PoSt said LATE live was `ok (running)` once its log was given.

        Told after the caller fed the line, never before: a file's copy is given where the
        recording's data reaches its time, and its recorded copy comes at its arrival, mostly
        after that (its file copy fed already: told at once), else after the file copy was read
        ahead, or given and held by the caller until its place among the records: told when the
        caller takes an item of a later time, by which it has fed this one. The items come in
        time order, and the caller holds at most the last one given, unfed (`detect_records`,
        `merge_by_time`): a line of a time before the latest given was fed; one of that time
        may be the one held, and waits (a later line fed before it is told would have moved the
        watcher's "now" past it)."""
        self._line_read = to

    def __iter__(self) -> Iterator[T]:
        if not self._look:
            yield from self._source
            return
        ahead, take, given, unfed = self._ahead, self._take, self._given, self._unfed
        while True:
            while ahead:
                item = ahead.popleft()
                self._ahead_chars -= len(self._event_of(item).raw)
                given(item)
                if unfed:  # the caller fed the item before this one
                    self._fed_before(self._event_of(item).t_wall_s)
                yield item
            # The source read here, one item at a time, until `recorded` reads ahead of it.
            for item in self._source:
                take(item, True)
                if unfed:
                    self._fed_before(self._event_of(item).t_wall_s)
                yield item
                if ahead:
                    break
            else:
                self._done = self._ended = True
                self._fed_before(math.inf)
                return

    def _read(self) -> bool:
        """One more file item into `_ahead`; False at their end."""
        if not self._done:
            for item in self._source:
                self._take(item, False)
                self._ahead.append(item)
                self._ahead_chars += len(self._event_of(item).raw)
                return True
            self._done = True
        return False

    def _given(self, item: T) -> None:
        """An item read ahead is given to the caller now (see `_given_s`)."""
        t = self._event_of(item).t_wall_s
        if t > self._given_s:
            self._given_at(t)

    def _given_at(self, t: float) -> None:
        """A line of time `t`, later than any given before, is given to the caller: the lines
        held `HOLD_S` behind it go, a second's at a time (not one at each line read)."""
        self._given_s = t
        lines = self._held
        if lines and lines[0][0] < t - (HOLD_S + 1.0):
            self._let_go()

    def _take(self, item: T, given: bool, read_times: tuple[str, ...] = READ_TIMES,
              own_times: tuple[str, ...] = _OWN_TIMES) -> None:
        """Hold a file item's line for matching (as it is read: every one, the hot path);
        `given`: to the caller at once (not read ahead)."""
        ev = self._event_of(item)
        t = ev.t_wall_s
        if t > self._latest_s:
            self._latest_s = t
        if given and t > self._given_s:
            self._given_at(t)
        source = ev.time_source
        if source in read_times:
            return  # timed when it was read: matched with nothing
        key = hash((ev.kind, ev.name, ev.raw, ev.worker, ev.partition,
                    t if source in own_times else None))  # `line_key`, inlined
        held: _Held = (t, key, ev.stream)
        lines = self._held
        lines.append(held)
        if self._indexed:
            self._index(held)
        if len(lines) > MAX_HELD:
            self._let_go()

    def _index(self, held: _Held) -> None:
        """`held` among its key's copies not found yet (the oldest past `MAX_COPIES` let go)."""
        copies = self._free.get(held[1])
        if copies is None:
            self._free[held[1]] = [held]
        else:
            copies.append(held)
            if len(copies) > MAX_COPIES:
                del copies[0]  # no longer found (let go from `_held` in its turn)

    def _index_held(self) -> None:
        """The recording's first log event: the lines held are indexed (in the order read),
        and every line from now on as it is read."""
        self._indexed = True
        for held in self._held:
            self._index(held)

    def _let_go(self) -> None:
        """Forget the lines held longer than `HOLD_S` behind the latest given to the caller (or
        past `MAX_HELD`)."""
        lines, cut = self._held, self._given_s - HOLD_S
        if cut <= self._since_s:
            cut = float("-inf")  # the recording's first `HOLD_S`: its backlog's copies to come
        if not self._indexed:  # nothing else refers to them yet
            while lines and (lines[0][0] < cut or len(lines) > MAX_HELD):
                lines.popleft()
            return
        while lines and (lines[0][0] < cut or len(lines) > MAX_HELD):
            held = lines.popleft()
            t, key, _stream = held
            copies = self._free.get(key)
            if copies is not None and _remove(copies, held):
                if not copies:
                    del self._free[key]
                continue
            n = self._claimed.get((key, t), 0)  # claimed (else let go past `MAX_COPIES`)
            if n > 1:
                self._claimed[(key, t)] = n - 1
            elif n:
                del self._claimed[(key, t)]

    def recorded(self, ev: LogEvent) -> bool:
        """Whether the recorded event `ev` is a line the files hold too: then it is left out
        (their copy counts), and counted in `found`; a lock region kept is counted in
        `locks_kept`."""
        if self._look and self._claim(ev):
            return True
        if ev.kind == PARTITION_KIND:
            self.locks_kept += 1
        return False

    def _claim(self, ev: LogEvent) -> bool:
        """Whether a file line free to be the recorded event `ev`'s copy was found: then it is
        claimed (`_claimed`) and counted in `found`."""
        t = ev.t_wall_s
        # Every file line that could be its copy read first (by time: they are sorted).
        while not self._done and self._latest_s <= t + SAME_LINE_S \
                and len(self._ahead) < MAX_AHEAD and self._ahead_chars < MAX_AHEAD_CHARS:
            self._read()
        if not self._indexed:
            self._index_held()
        if not self._free:
            return False  # no file line to be (no `--log`, or all matched)
        key = line_key(ev)
        copies = self._free.get(key)
        if not copies:
            return False
        at = 0  # own-timed: the key holds the time, and every copy is at it
        if ev.time_source not in _OWN_TIMES:
            # The nearest in time, the earlier of two as near; the file's copy up to `HOLD_S`
            # before (a panic the file places at the line before it, after minutes of quiet,
            # and the recording at its arrival), up to `SAME_LINE_S` after.
            gaps = [abs(h[0] - t) if -HOLD_S <= h[0] - t <= SAME_LINE_S else math.inf
                    for h in copies]
            at = min(range(len(gaps)), key=gaps.__getitem__)
            if gaps[at] == math.inf:
                return False
        held = copies.pop(at)
        if not copies:
            del self._free[key]
        self._claimed[(key, held[0])] = self._claimed.get((key, held[0]), 0) + 1
        self.found[held[2]] = self.found.get(held[2], 0) + 1
        read_ns = ev.t_arrival_mono_ns
        if read_ns is not None and self._line_read is not None:
            self._read_live(held, read_ns)
        return True

    def _read_live(self, held: _Held, read_ns: int) -> None:
        """The file line `held` was read live at `read_ns` (its recorded copy's arrival): told
        now if the caller has fed it (of a time before the latest given), else once it has
        (`_fed_before`)."""
        assert self._line_read is not None
        t, _key, stream = held
        if self._ended or t < self._given_s:
            self._line_read(stream, t, read_ns)
        else:
            heapq.heappush(self._unfed, (t, stream, read_ns))

    def _fed_before(self, t_s: float) -> None:
        """An item of time `t_s` is given: the caller has fed every item before it (in time
        order), and those of them read live are told."""
        unfed, tell = self._unfed, self._line_read
        while unfed and unfed[0][0] < t_s:
            t, stream, read_ns = heapq.heappop(unfed)
            if tell is not None:
                tell(stream, t, read_ns)

    def paired(self, ev: LogEvent) -> bool:
        """Whether the file's event `ev` (one of the items, still held) was found to be a
        recorded line: the recording held it, so it is fed wherever it falls."""
        return (self._look and bool(self._claimed)
                and (line_key(ev), ev.t_wall_s) in self._claimed)

    @property
    def count(self) -> int:
        """Recorded events left out, in all."""
        return sum(self.found.values())

    def notes(self) -> list[str]:
        """One line per `--log` file whose lines the recording held."""
        return [f"{n:,} events of {stream} were already in the recording (made with "
                "`record --log` of the same log): each line counted once, as the file has it"
                for stream, n in self.found.items()]


def _remove(copies: list[_Held], held: _Held) -> bool:
    """Take `held` itself (not an equal copy) out of `copies`; False when it is not there.
    The oldest, first, nearly always."""
    if copies and copies[0] is held:
        del copies[0]
        return True
    for i, h in enumerate(copies):
        if h is held:
            del copies[i]
            return True
    return False


def may_hold_log_lines(header: SessionHeader) -> bool:
    """Whether a recording can hold log events. `record` writes its config in the header, the
    logs it followed among it (`--log` joins `[logs] paths`, `gapwatch.cli`); a recording of
    the GPUs themselves (source `nvml`) that followed none holds none. Any other (the
    simulator follows a temporary log of its own, a recording written by a program, a header
    without that config) may."""
    if header.source != "nvml":
        return True
    logs = header.config.get("logs")
    return not isinstance(logs, dict) or bool(logs.get("paths", True))


def itself(ev: LogEvent) -> LogEvent:
    """A `LinesOnce` of bare events: each item is its event."""
    return ev


@runtime_checkable
class ReadOnce(Protocol):
    """Log events read through a `LinesOnce` (it, or a replay's pass over them:
    `gapwatch.offline.replay_logs.LogPass`), which `merge_by_time` asks as `detect_records`
    asks it."""

    def __iter__(self) -> Iterator[LogEvent]: ...

    def recorded(self, ev: LogEvent) -> bool: ...

    def paired(self, ev: LogEvent) -> bool: ...
