"""`gapwatch parse LOG... [--json]`: print the events gapwatch reads from prover logs.

Users check their `[[logs.rules]]` with it: every line of every file (read whole, from the start;
`-` = stdin to its end) is parsed with the configured rules and printed as one event per line
(text, or one JSON object per line with `--json`). A summary of counts goes to stderr.
`--unparsed` prints only the lines no rule understood; `--timeline` prints the derived
per-partition table and the run figures instead of the events; `--recording FILE` adds the log
events and the prover's `/status` snapshots of a gapwatch recording to the timeline, merged by
time (the table uses the snapshots where the logs are missing; a line the recording holds too,
made with `record --log` of a file given, counts once: `gapwatch.logs.once`).

Exit codes: 0 success, 2 a LOG cannot be opened (missing, a directory, unreadable: bad usage;
the other files are still parsed) or is a binary file (mostly not text: said in one line, not
printed), 1 a file failed while it was being read. Files are read as `record --log` follows them
(`gapwatch.logs.files.LogFile`): NUL padding (copytruncate) is dropped and counted, not taken
for a binary file.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from itertools import chain
from typing import TextIO

from gapwatch.commands import argtypes
from gapwatch.config import Config
from gapwatch.core import fmt
from gapwatch.core.codec import encode_json
from gapwatch.core.models import READ_TIMES, LogEvent, ProverStatus
from gapwatch.core.sizes import bounded_event
from gapwatch.cuzk.engine_runs import Placing, runs_note
from gapwatch.cuzk.log_lines import Unplaced, unplaced_note
from gapwatch.cuzk.partition_table import LONG_IDLE_S
from gapwatch.cuzk.partitions import RunTimeline, TimelineBuilder, timeline_event
from gapwatch.engine.console import OutputFailed, say
from gapwatch.logs.files import LinesRead, LogFile, ReadOrder, read_order, runs_apart
from gapwatch.logs.not_a_log import not_a_log_note, starts_like_recording
from gapwatch.logs.once import LinesOnce, itself
from gapwatch.logs.parse import (
    PARTITION_UNREAD,
    TIMELINE_UNPLACED,
    TRACING_PARTITION_UNREAD,
    UNPLACED,
    LogParser,
)
from gapwatch.logs.parse.user_rules import LINE_BUDGET_S, RULE_TIMEOUT_S
from gapwatch.offline.gap_spool import EventSpool
from gapwatch.offline.prover_events import ProverEvents, prover_event_lines


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("logs", type=argtypes.path, nargs="*", metavar="LOG",
                        help="log files to parse ('-' = stdin)")
    parser.add_argument("--json", action="store_true", help="one JSON object per event and line")
    parser.add_argument("--unparsed", action="store_true",
                        help="print only the lines no rule understood")
    parser.add_argument("--timeline", action="store_true",
                        help="print the derived per-partition timeline (cuzk) instead of events")
    parser.add_argument("--recording", type=argtypes.path, default=None, metavar="FILE",
                        help="with --timeline: also use this recording's log events and prover "
                             "/status snapshots (a line the LOG files hold too counts once)")


def _lines(path: str, log: LogFile) -> Iterator[str]:
    return log.lines(sys.stdin.fileno() if path == "-" else None)


def _unopenable(path: str) -> str | None:
    """Why `path` cannot be parsed (missing, a directory, unreadable), or None."""
    if path == "-":
        return None
    if os.path.isdir(path):
        return "is a directory"
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    return None


#: Where `parse` tells a gapwatch recording given as a LOG to go (`gapwatch.logs.not_a_log`).
RECORDING_TO_REPORT = "read it with `gapwatch report FILE`, `replay FILE` or `export FILE`"

#: How much of a file is looked at to tell a binary file from a log, and the share of that which
#: may be other than text (a log with a few odd bytes is still a log).
_SNIFF_BYTES = 8192
_MAX_NON_TEXT = 0.30


def _binary(path: str) -> str | None:
    """Why `path` looks like a binary file rather than a text log (mostly bytes that are not
    text, NUL padding left aside), or None. Only regular files are looked at (a FIFO, stdin and
    a device are read as streams)."""
    if path == "-" or not os.path.isfile(path):
        return None
    try:
        head = LogFile(path, 1).head(_SNIFF_BYTES)
    except OSError:
        return None  # said when it is read
    if not head:
        return None
    text = head.decode("utf-8", "replace")
    odd = sum(1 for c in text if c == "\ufffd" or (c < " " and c not in "\t\n\r"))
    share = odd / len(text)
    if share > _MAX_NON_TEXT:
        return f"{share:.0%} of its first {len(head)} bytes are not text"
    return None


def _first_anchor(paths: list[str], config: Config) -> float | None:
    """Wall time of the first `starting cuzk engine` line in any file.

    When stderr (TIMELINE) and stdout (tracing) are two files and the stderr one is listed first,
    its offsets would otherwise have no anchor yet.
    """
    probe = LogParser(config.logs, keep_unparsed=False)
    for path in paths:
        if path == "-" or not os.path.isfile(path):
            continue
        try:
            for line in LogFile(path, config.logs.max_line_bytes).lines():
                if "starting cuzk engine" in line:
                    probe.parse_line(line)
                    if probe.anchor_wall_s is not None:
                        return probe.anchor_wall_s
        except OSError:
            continue
    return None


def format_event(e: LogEvent) -> str:
    """One event as a readable line: time, how it was timed, kind, name, ids, fields (control
    characters made visible: the text is the log's, the terminal is the user's)."""
    if e.kind == "unparsed":
        return fmt.visible(f"{_iso(e.t_wall_s)} {e.time_source:<8} unparsed       {e.raw}")
    parts = [f"{_iso(e.t_wall_s)} {e.time_source:<8} {e.kind:<14} {e.name}"]
    for key in ("job_id", "worker", "partition", "gpu", "level", "warning"):
        value = getattr(e, key)
        if value is not None:
            parts.append(f"{key}={value}")
    shown = {"target", "worker", "worker_id", "partition", "gpu", "job_id"}
    parts.extend(f"{k}={v}" for k, v in e.fields.items() if k not in shown)
    return fmt.visible(
        "  ".join(parts[:1]) + ("  " + " ".join(parts[1:]) if len(parts) > 1 else "")
    )


def _iso(t: float) -> str:
    try:
        return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    except (OverflowError, OSError, ValueError):
        return f"{t:.6f}"


def format_timeline(run: RunTimeline) -> str:
    def ms(v: int | None) -> str:
        return "-" if v is None else str(v)

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{100 * v:.1f} %"

    # The whole job id, never cut (a WindowPoSt's id is long and holds spaces).
    # In terminal cells (`fmt.cells`): wide characters and combining marks in a job id.
    jw = max([22, *(fmt.cells(fmt.visible(p.job_id or "-")) for p in run.partitions)])
    runs = len(run.runs) > 1
    rows = [("run " if runs else "") + f"{'job_id':<{jw}} {'part':>12} worker synth_ms  "
            "gpu_ms held_ms wait_ms h2d_ntt_ms pinned source"]
    for p in run.partitions:
        part = ms(p.partition) if not p.monolithic else (p.kind or "mono")
        note = " pool failed" if p.pool_failed else " first wave" if p.first_wave else ""
        rows.append(
            (f"{p.run:>3} " if runs else "")
            + f"{fmt.fit(fmt.visible(p.job_id or '-'), jw)} {part:>12} {ms(p.worker):>6} "
            f"{ms(p.synth_ms):>8} {ms(p.timeline_gpu_ms):>7} {ms(p.mutex_held_ms):>7} "
            f"{ms(p.mutex_wait_ms):>7} {ms(p.h2d_in_ntt_ms):>10} {p.pinned_words:>6} "
            f"{p.source}{note}"
        )
    wall = run.wall_s
    rows.append("")
    rows.append(f"wall time (first GPU_START .. last GPU_END): "
                f"{'-' if wall is None else f'{wall:.3f} s'}")
    rows.append(f"GPU efficiency (merged intervals): {pct(run.merged_efficiency)}")
    rows.append(f"kernel utilisation:                {pct(run.kernel_utilisation)}")
    rows.append(f"GPU occupied (mutex held, merged): {pct(run.occupied_fraction)}")
    longest = run.longest_idle_gap_s
    rows.append(f"idle gaps between lock regions >= {LONG_IDLE_S * 1000:.0f} ms: "
                f"{run.long_idle_gaps}"
                + (f" (longest {longest:.3f} s)" if run.long_idle_gaps and longest else ""))
    negative = run.bad_durations_note()
    if negative is not None:
        rows.append(negative)
    # Every cell is the log's text or a number: shown, never obeyed (a job id held OSC
    # sequences: a window title, an OSC 52 clipboard write).
    return "\n".join(map(fmt.visible, rows))


@dataclass
class _Read:
    """What reading the files came to: the exit status (2: a file could not be opened or is
    binary, 1: reading one failed part-way) and what the reader dropped."""

    status: int = 0
    cut_lines: int = 0
    nul_bytes: int = 0
    #: The files whose C++ lines could not be placed (`logs.files.read_order`), kept to be
    #: said once the recording read with them is (`--recording`: its own lock regions may
    #: stand in for them, `_with_recording`); None: each said as it is read.
    unplaced: list[Unplaced] | None = None


def _files_events(order: ReadOrder, parser: LogParser, config: Config, read: _Read
                  ) -> Iterator[list[LogEvent]]:
    """Each line's events, file after file in `order` (and the panic a file ends in), read as
    they are asked for: a million-line log is never held. What went wrong is said on stderr
    and kept in `read`, and so are a file's C++ lines that cannot be placed beside the other
    files' (`logs.files.read_order`; kept in `read.unplaced`, where given, to be said with the
    recording's) and its TIMELINE lines that no start line of theirs places
    (`logs.files.runs_apart`)."""
    if order.apart:
        parser.keep_start_lines()
    for path in order.paths:
        log = LogFile(path, config.logs.max_line_bytes)
        runs = _runs_apart(parser, path, config) if path in order.apart else None
        before, timeline_before = parser.counters[UNPLACED], parser.counters[TIMELINE_UNPLACED]
        lines_before = dict(parser.counters)
        status = yield from _file_events(path, log, parser, path in order.apart)
        parser.runs_apart = None
        not_a_log = not_a_log_note(LinesRead.counted(path, parser.counters, lines_before),
                                   starts_like_recording(path), RECORDING_TO_REPORT)
        if not_a_log is not None and status < 2:  # one that could not be opened is said so
            say(f"gapwatch parse: {not_a_log}")
        if parser.counters[UNPLACED] > before:
            unplaced = Unplaced(path, parser.counters[UNPLACED] - before, tuple(order.placed))
            if read.unplaced is not None:
                read.unplaced.append(unplaced)
            else:
                say("gapwatch parse: " + unplaced_note(unplaced, flag=""))
        timeline = parser.counters[TIMELINE_UNPLACED] - timeline_before
        if runs is not None and runs.why_not is not None and timeline:
            say("gapwatch parse: " + runs_note(path, timeline, runs.why_not, order.placed,
                                               flag=""))
        read.status = max(read.status, status)
        read.cut_lines += log.cut_lines
        read.nul_bytes += log.nul_bytes
        if log.ends_early:
            say(f"gapwatch parse: {path}: its gzip data ends early (a copy or a compression "
                "still running?): read up to there")


def _runs_apart(parser: LogParser, path: str, config: Config) -> Placing | None:
    """`logs.files.runs_apart` of a file read apart; None where it cannot be read (said as it
    is read: `_file_events`)."""
    try:
        return runs_apart(parser, path, config)
    except OSError:
        parser.runs_apart = None
        return None


def _file_events(path: str, log: LogFile, parser: LogParser, apart: bool = False
                 ) -> Generator[list[LogEvent], None, int]:
    """Each line's events of one file (`apart`: its lines cannot be placed among the other
    files', `logs.files.read_order`); returns 2 if it cannot be opened, 1 if reading it
    failed part-way (message on stderr), else 0."""
    problem = _unopenable(path)
    if problem is not None:
        say(f"gapwatch parse: {path}: {problem}")
        return 2
    binary = _binary(path)
    if binary is not None:
        # Printed line by line it was a screen of escaped junk: say what it is instead.
        print(f"gapwatch parse: {path}: a binary file, not a text log ({binary}); skipped",
              file=sys.stderr)
        return 2
    try:
        for line in _lines(path, log):
            yield parser.parse_line(line, path, time.monotonic_ns(), time.time(),
                                    apart=apart)
        # A panic at the end of the file is its last event.
        yield parser.flush()
    except OSError as exc:  # the output's failures are `OutputFailed` (`_write`)
        say(f"gapwatch parse: {path}: cannot read: {exc.strerror or exc}")
        return 1
    return 0


class _Said:
    """What `--timeline` says besides the table: the prover's events (PoSt proofs, restarts,
    errors, lost GPU jobs) from cuzk's watcher, over the same events."""

    def __init__(self, config: Config) -> None:
        from gapwatch.cuzk.watch import CuzkWatch, deadlines_of

        # A file read at once: a line's arrival time says nothing of when it was written.
        self.watch = (CuzkWatch(deadlines_of(config.cuzk), arrival_timed=False)
                      if config.logs.cuzk else None)
        # Every one counted, the first of each kind kept: a log of a year of failures must
        # not fill memory (the watcher stopped being fed at 100,000, the rest unsaid).
        self.events = ProverEvents()
        #: TIMELINE lines the table read without their anchor (timed on arrival).
        self.unanchored = 0

    def add(self, e: LogEvent) -> None:
        if self.watch is not None:
            # Cut as a session and the report cut it: the same events say the same words.
            self.events += self.watch.feed(bounded_event(e))

    def finish(self) -> ProverEvents:
        if self.watch is not None:
            self.events += self.watch.finish()
        return self.events


def _to_timeline(events: Iterable[LogEvent], timeline: TimelineBuilder, said: _Said) -> None:
    for e in events:
        slim = timeline_event(e)  # what the report's builder gets of the same events
        if slim is not None:
            timeline.add(slim)
            if e.kind == "timeline" and e.time_source == "arrival":
                said.unanchored += 1
        said.add(e)


def _by_time(events: Iterable[LogEvent]) -> Iterator[LogEvent]:
    """The events of files read one after another (`logs.files.read_order`), one of them read
    apart, in the order of their times, as the report's are fed: the file read apart (cuzk's
    stderr) holds every engine run's TIMELINE lines, read after the whole stdout; fed as read,
    the table and the watcher saw time go back at its first run (a restart's cost "not known",
    the runs' partitions taken for one's). An event timed when it was read (`READ_TIMES`: a
    C++ line, a TIMELINE line no start line places) keeps its place after the timed event
    before it in its file, where the table pairs it. Sorted on disk (`EventSpool`): a day's
    log is never held."""
    spool = EventSpool()
    try:
        before_s: dict[str, float] = {}  # each file's latest time of its own
        for e in events:
            if e.time_source in READ_TIMES:
                spool.add(e, before_s.get(e.stream, e.t_wall_s))
            else:
                spool.add(e)
                before_s[e.stream] = e.t_wall_s
        yield from spool
    finally:
        spool.close()


def _run_figures(run: RunTimeline, unanchored: int) -> tuple[RunTimeline, list[str]]:
    """The run's figures, those that rest on the TIMELINE lines' wall times left unknown when
    some had no anchor (no `starting cuzk engine` line in the files given, or none known to be
    their engine run's: `logs.files.runs_apart`): they were timed when parse read them, and a
    log's wall time read "0.494 s" (the parse's own) for a run of ten minutes. Each row's
    durations come from the lines' own offsets: kept."""
    if not unanchored:
        return run, []
    unknown = replace(run, wall_start_s=None, wall_end_s=None, merged_efficiency=None,
                      kernel_utilisation=None, occupied_fraction=None)
    return unknown, [f"{unanchored} TIMELINE line(s) without their anchor (no `starting cuzk "
                     "engine` line in the files given, or none known to be their engine "
                     "run's: give the log that holds it, or cuzk's stdout and stderr as one "
                     "file): their "
                     "wall times are not known, so neither are the run's wall time, GPU "
                     "efficiency, kernel utilisation and GPU occupied; each row's durations "
                     "are"]


def _write(events: list[LogEvent], args: argparse.Namespace, out: TextIO) -> None:
    """Print `events`; a failure to write is the output's (`OutputFailed`), never blamed on
    the log being read (a full disk was said as "LOG: cannot read"). JSON keeps C1 and bidi
    controls escaped (`encode_json`, as every JSON output): the terminal shows them, never
    obeys them."""
    for e in events:
        if args.unparsed and e.kind != "unparsed":
            continue
        text = (encode_json(e).decode() if args.json else format_event(e)) + "\n"
        try:
            out.write(text)
        except OSError as exc:  # `| head` included: `gapwatch.cli.output_failure`, exit 0
            raise OutputFailed(exc) from None


def _with_recording(path: str, events: Iterable[LogEvent], timeline: TimelineBuilder,
                    said: _Said, read: _Read) -> bool:
    """The files' `events` (in their order) and a recording's log events and prover snapshots
    into the table, by time, as the report's detector reads them; a line both hold (the
    recording made with `record --log` of a file given) once, the file's copy, said on stderr
    (`gapwatch.logs.once`: read twice, every partition was two, the kernel utilisation
    125.5 %). False (said) when the recording is unusable."""
    from gapwatch.sources.files import read_any
    from gapwatch.sources.recording import RecordingError

    try:
        rec = read_any(path)  # a folder or a glob of segments: one session
    except RecordingError as exc:
        say(f"gapwatch parse: {exc}")
        return False
    once = LinesOnce(events, itself, since_s=rec.header.started_wall_s)
    lines = iter(once)
    head = next(lines, None)
    for r in rec.records:
        if not isinstance(r, LogEvent | ProverStatus):
            continue
        # The files' lines up to it first (one timed when it was read has no place in time:
        # it goes with the lines around it in its file).
        while head is not None and (head.t_wall_s <= r.t_wall_s
                                    or head.time_source in READ_TIMES):
            _to_timeline([head], timeline, said)
            head = next(lines, None)
        if isinstance(r, ProverStatus):
            timeline.add_status(r)
        elif not once.recorded(r):
            slim = timeline_event(r)  # as the report's builder gets them
            if slim is not None:
                timeline.add(slim)
    if head is not None:
        _to_timeline(chain((head,), lines), timeline, said)
    for unplaced in read.unplaced or ():
        say("gapwatch parse: " + unplaced_note(unplaced, flag="", recorded_locks=once.locks_kept))
    for note in once.notes():
        say(f"gapwatch parse: {note}")
    return True


def run(args: argparse.Namespace, config: Config) -> int:
    paths = argtypes.log_files(args.log, bare=args.logs)
    recording = getattr(args, "recording", None)
    if recording and not args.timeline:
        say("gapwatch parse: --recording goes with --timeline")
        return 2
    # `--json` and `--unparsed` say how events are printed; `--timeline` prints none: taking
    # them on silently printed the text table to a script that asked for JSON.
    for flag, given in (("--json", args.json), ("--unparsed", args.unparsed)):
        if given and args.timeline:
            say(f"gapwatch parse: {flag} prints the events, --timeline the partition table "
                "instead: give one of them (the table as JSON: report --json's partitions)")
            return 2
    if not paths and not recording:
        say("gapwatch parse: give at least one LOG file ('-' = stdin)")
        return 2
    parser = LogParser(config.logs, offline=True)
    # Rotated files in the order they were written, however given (`cuzk.log*` lists the
    # newest first): one parser reads them, its state from the lines before; a file with no
    # time of its own (cuzk's stderr beside its stdout) after them, apart.
    order = read_order(paths, config)
    parser.anchor_wall_s = _first_anchor(order.paths, config)
    out: TextIO = sys.stdout
    read = _Read(unplaced=[] if recording else None)
    events = _files_events(order, parser, config, read)
    if not args.timeline:
        for line_events in events:
            _write(line_events, args, out)
    else:
        timeline = TimelineBuilder()
        said = _Said(config)
        # Into the table as they are read: a million-line log must not stay in memory.
        each: Iterable[LogEvent] = (e for line_events in events for e in line_events)
        if order.apart:
            each = _by_time(each)
        if recording:
            if not _with_recording(recording, each, timeline, said, read):
                return 2
        else:
            _to_timeline(each, timeline, said)
        run, notes = _run_figures(timeline.finish(), said.unanchored)
        out.write("\n".join([format_timeline(run), *map(fmt.visible, notes)]) + "\n")
        lines = prover_event_lines(said.finish())
        if lines:
            out.write("\n" + "\n".join(lines) + "\n")
    c = parser.counters
    kinds = ", ".join(f"{k[5:]} {v}" for k, v in sorted(c.items()) if k.startswith("kind:"))
    say(f"gapwatch parse: {c['lines']} lines, {c['parsed']} events ({kinds or 'none'}), "
        f"{c['unparsed']} unparsed{_partition_unread_words(c)}, {c['blank']} blank, "
        f"{read.cut_lines} cut at "
        f"{config.logs.max_line_bytes} bytes"
        + (f", {read.nul_bytes} NUL bytes dropped" if read.nul_bytes else "")
        + _rule_time_words(c))
    return read.status


def _partition_unread_words(counters: dict[str, int]) -> str:
    """The TIMELINE and tracing lines among the unparsed that name a partition that does not
    read (`log_lines.partition_of`, `tracing_partition_of`), for the closing summary ("" when
    none): a line that reads like cuzk's, given no event, is said as such, not only as one of
    the unparsed."""
    said = [f"{n} {what} line(s)" for what, key in (("TIMELINE", PARTITION_UNREAD),
                                                      ("tracing", TRACING_PARTITION_UNREAD))
            if (n := counters.get(key, 0))]
    return f" ({' and '.join(said)} name a partition that does not read: no event of them)" \
        if said else ""


def _rule_time_words(counters: dict[str, int]) -> str:
    """What the user rules' time limits gave up, for the closing summary ("" when nothing).
    `rule_timeout` counts searches (one rule on one line), not lines: 1,300 rules giving up
    one line were said as "1300 line(s)" of a one-line log."""
    timeouts, budget = counters.get("rule_timeout", 0), counters.get("rule_budget", 0)
    words = ""
    if timeouts:
        words += (f", {timeouts} time(s) a rule could not decide a line in "
                  f"{RULE_TIMEOUT_S * 1000:.0f} ms (it backtracks: docs/logs.md, User rules)")
    if budget:
        words += (f", {budget} line(s) left unread by the later rules, the "
                  f"{LINE_BUDGET_S * 1000:.0f} ms all the rules have for a line spent")
    return words
