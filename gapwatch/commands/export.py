"""`gapwatch export FILE --format perfetto|csv [--out PATH] [--log PROVER.log ...]`.

Who calls it: `gapwatch.cli`. Headless, never imports Textual.

- `perfetto`: Chrome Trace Event JSON (Perfetto, chrome://tracing) of the recording: counters,
  the gaps and chaining states that `gapwatch report` finds (the same `build_report`, so both
  show the same gaps), the prover's phases from the recording's log events and the `--log` files
  (a line both hold drawn once: `gapwatch.logs.once`).
- `csv`: one row per GPU sample in the shared-trace column layout; `replay`/`report` read it back.

Exit status: 0 written (or stopped by a signal: nothing left behind); 2 the input is not a
recording or trace CSV, a `--log` file cannot be read, the output would overwrite the input, or
it cannot be written (one line, as every unwritable output; standard output whose reader went
away, `--out - | head`, is a quiet exit 0, as for every command: `gapwatch.cli.output_failure`).
"""

from __future__ import annotations

import argparse
import io
import os
from pathlib import Path
from typing import IO, TYPE_CHECKING, BinaryIO, cast

from gapwatch.base.quit_early import stop_signals_deferred
from gapwatch.commands import argtypes
from gapwatch.config import Config
from gapwatch.core.models import DERIVED_TYPES, SessionHeader
from gapwatch.engine.console import STDERR, StdoutBytes, say
from gapwatch.offline.progress import Progress
from gapwatch.sinks.output_file import OutputRefused, Replacement, check_replaceable
from gapwatch.sources.time_window import TimeWindow, WindowError

if TYPE_CHECKING:
    from gapwatch.offline.report import ReportData


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=argtypes.path, metavar="FILE",
                        help=argtypes.RECORDING_HELP)
    parser.add_argument("--format", choices=("perfetto", "csv"), default="perfetto",
                        help="perfetto: Chrome Trace Event JSON; csv: shared-trace layout")
    parser.add_argument("--out", type=argtypes.path, metavar="PATH", default=None,
                        help="output file ('-' = stdout; default: FILE with .trace.json / "
                             ".export.csv)")
    argtypes.add_window(parser)


def _default_out(path: Path, fmt: str) -> Path:
    # A folder given as `/` or `.` has no name to put the output beside: `with_name` raised
    # (`export / --out x.json` was a ValueError traceback, even with --out given).
    stem = path.name or "gapwatch"
    for suffix in (".gz", ".jsonl", ".csv"):
        stem = stem.removesuffix(suffix)
    return path.parent / (stem + (".trace.json" if fmt == "perfetto" else ".export.csv"))


def _reads(src: Path, dest: Path, logs: list[str]) -> bool:
    """Whether `dest` is a file the export of `src` reads or a prover log it is given: `src`
    itself, or, where `src` is a folder, a glob or `?set=ID`, one of its recordings; or one of
    `logs` (the `--log` and `[logs] paths` entries, a glob expanded as the reader expands it:
    `argtypes.glob_matches`). The same file: device and inode, a link to it too. The output is
    renamed over `dest` at the end: `export seg --out seg/gw.000001.jsonl` replaced the first
    segment of its own input with the trace (the check compared `dest` with the folder only),
    and `export rec --log stderr.log --out stderr.log` the prover's log (the check compared
    `dest` with the recordings only)."""
    from gapwatch.sources.recording_set import is_set, set_files

    try:
        out = os.stat(dest)
    except (OSError, ValueError):
        return False  # nothing there (or nothing that can be there): no input to lose
    try:
        inputs: list[str | Path] = list(set_files(src).files) if is_set(src) else [src]
    except (OSError, ValueError):
        inputs = []  # the reading says what is wrong with the recording; the logs still count
    for text in logs:
        inputs.extend(argtypes.glob_matches(text) or [text])
    for file in inputs:
        try:
            st = os.stat(file)
        except (OSError, ValueError):
            continue
        if (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino):
            return True
    return False


def _perfetto(path: Path, config: Config, logs: list[str], out: IO[bytes],
              progress: Progress | None, window: TimeWindow | None
              ) -> tuple[str, list[str], list[str]]:
    """Write the trace; return its summary, what is said of the input (`_csv`'s too) and what
    its PoSt slices were judged by where this run's config says other (`report`'s line)."""
    import copy

    from gapwatch.logs.files import merge_by_time
    from gapwatch.offline.detect import data_end_s
    from gapwatch.offline.perfetto import TraceBuilder
    from gapwatch.offline.progress import DataTime, progress_of, tell
    from gapwatch.offline.prover_events import MAX_KEPT
    from gapwatch.offline.report import build_report, logs_parsed
    from gapwatch.sources.files import data_span, read_any
    from gapwatch.sources.recording import Reading

    # The logs parsed once: the report detects with their events, and the trace shows the
    # same events (read back from their spool on disk in time order, one at a time).
    with logs_parsed(path, config, logs, progress, window) as parsed:
        # The report's own pass decides gaps and states; a second read streams the samples.
        report = build_report(path, config, logs, parsed=parsed, progress=progress,
                              window=window)
        recording = read_any(path, Reading(window=window))
        # The log lines by the report's span (its one rule: its prover events and partition
        # table are kept by it), the recorder's other records by where it wrote.
        builder = TraceBuilder(recording.header, _recorded_span(recording.header, report),
                               logs_within=report.span)
        records = recording.records if progress is None else progress_of(
            recording.records, DataTime(progress, data_span(
                path, recording.header.started_wall_s, window),
                "reading the samples for the trace"))
        # Recorded gaps and states are superseded by the report's (same samples, this version).
        kept = (r for r in records if r.type not in DERIVED_TYPES)
        if parsed is None:
            builder.extend(kept)
        else:
            # The `--log` events the report used, by its one rule (`LogSpan.used`): a log of
            # another day, which the report says is "not this recording's log", drew its
            # lines into the trace and moved its origin 207 days back.
            used = copy.deepcopy(parsed.span).used(parsed.spool, data_end_s(report.totals))
            # A window's trace shows the log lines of the window (not the daemon's start
            # read for its settings). Merged in by time, as the report's detector reads them:
            # a line the recording holds too (`record --log` of the same file) is drawn once,
            # the file's copy (`gapwatch.logs.once`); drawn twice, its phases were two slices.
            builder.extend(merge_by_time(kept, used if window is None else
                                         (e for e in used if window.holds(e.t_wall_s))))
    builder.final_gaps(report.gaps)  # drawn as the trace is written, read from the spool
    builder.extend(report.states)
    builder.extend(report.prover_events)  # PoSt, restarts, errors: derived again, as gaps
    tell(progress, "writing the trace")
    n = builder.write(out)
    unmatched = f", {builder.unmatched} unmatched phase lines" if builder.unmatched else ""
    unkept = sum(report.prover_events.not_kept.values())
    # The report keeps the first of each kind of prover event (`prover_events.MAX_KEPT`).
    unkept_said = (f", {unkept} more prover events counted but not drawn (the first "
                   f"{MAX_KEPT:,} of each kind are)" if unkept else "")
    # What the report says of its input (a log of another run, the data's own problems),
    # in its words, then what reading the samples found (less what the warnings say).
    said = [*report.warnings, *recording.problems_said(beside_report=True)]
    if builder.far_off:
        said.append(_far_off_words(builder.far_off))
    if builder.logs_left_out:
        said.append(_logs_left_out_words(builder.logs_left_out, window))
    judged = report.post_deadlines.said() if report.post_deadlines is not None else None
    return (f"{n} trace events, {len(report.gaps)} gaps{unmatched}{unkept_said}; open it in "
            "https://ui.perfetto.dev or chrome://tracing"), said, [judged] if judged else []


def _recorded_span(header: SessionHeader, report: ReportData
                   ) -> tuple[float | None, float | None]:
    """The span the recorder wrote the recording over, as far as wall times tell it: its
    start to its samples' end, a GPU's or the host's (`samples_end_s`: a GPU lost while the
    recording went on ended it at the GPU's last sample, and a notice two hours on was left
    out as one no recorder writes); None: not known on that side; both, where its wall clock
    stepped back inside it, as the report's span says."""
    from gapwatch.offline.detect import samples_end_s
    from gapwatch.offline.throughput import clock_stepped_back_s

    if clock_stepped_back_s(report.states) > 0:
        return None, None
    start = header.started_wall_s if header.started_wall_s > 0 else None
    return start, samples_end_s(report.totals, report.last_host_wall_s)


def _far_off_words(far_off: dict[str, int]) -> str:
    """"4 records timed far outside the recording (copy 2, health 1, notice 1): left out of
    the trace"."""
    from gapwatch.offline.perfetto import RECORDED_REACH_S

    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(far_off.items()))
    n = sum(far_off.values())
    return (f"{n} record{'s' * (n != 1)} timed far outside the recording ({kinds}): "
            f"more than {RECORDED_REACH_S:.0f} s from its span, as no record gapwatch writes "
            "while recording is; left out of the trace")


def _logs_left_out_words(n: int, window: TimeWindow | None) -> str:
    """"3 log lines more than 5.0m outside the recording's span (...): left out of the trace",
    the report's margin (`log_span.MARGIN_S`) in its words (`report.left_out_note`); a
    window's: outside it."""
    from gapwatch.core import fmt
    from gapwatch.offline.log_span import MARGIN_S

    lines = f"{n} log line{'s' * (n != 1)}"
    if window is not None:
        return (f"{lines} outside the window (the log read around it): left out of the "
                "trace, as of the report's prover events and partition table")
    return (f"{lines} more than {fmt.far(MARGIN_S)} outside the recording's span (its log's "
            "backlog, recorded from before it): left out of the trace, as of the report's "
            "prover events and partition table")


def _csv(path: Path, out: IO[str], window: TimeWindow | None
         ) -> tuple[str, list[str], list[str]]:
    from gapwatch.offline.csv_export import CsvExporter
    from gapwatch.sources.files import read_any
    from gapwatch.sources.recording import Reading

    recording = read_any(path, Reading(window=window))
    exporter = CsvExporter(out, tolerance_s=recording.header.period_ms / 1000.0,
                           gpus=list(recording.header.gpus))
    for record in recording.records:
        exporter.add(record)
    exporter.close()
    # Host samples have rows of their own: "1000 rows" was said of a file of 2000.
    return (f"{exporter.rows} GPU rows and {exporter.host_rows} host rows",
            recording.problems_said(), [])


def run(args: argparse.Namespace, config: Config) -> int:
    from gapwatch.sources.recording import RecordingError

    src = Path(args.file)
    try:
        window = argtypes.window_of(args, args.file)  # before any output is made
    except (RecordingError, WindowError) as exc:
        say(f"gapwatch export: {exc}")
        return 2
    dest = (
        None if args.out == "-" else Path(args.out) if args.out else _default_out(src, args.format)
    )
    # `[logs] paths` too (the config resolved holds the `--log` files after them), though an
    # offline export reads only `--log`: the prover's configured log is no file to replace
    # with a trace either.
    logs = list(dict.fromkeys([*config.logs.paths, *(args.log or [])]))
    if dest is not None and _reads(src, dest, logs):
        say(f"gapwatch export: --out {dest} would overwrite the input")
        return 2
    if dest is not None:
        # Before anything is read or created: a directory, a missing folder, a device is one
        # line and exit 2, and nothing is left behind (a directory gave a traceback and left
        # DIR.part, 1.2 MB, beside it).
        try:
            check_replaceable(dest, _default_out(src, args.format).name)
        except OutputRefused as exc:
            say(f"gapwatch export: --out {exc}")
            return 2
    # A temporary of a random name beside DEST (never one that could be planted: O_EXCL |
    # O_NOFOLLOW), renamed over it at the end: a failed export never leaves a half-written
    # trace behind, and a link at DEST is replaced, never written through.
    tmp: Replacement | None = None
    # A day's trace takes minutes: where stderr is a terminal, a line says how far.
    progress = Progress(STDERR.show, "gapwatch export") if STDERR.is_terminal() else None
    try:
        with stop_signals_deferred():  # created and in `tmp` at once: never left behind
            tmp = Replacement(dest) if dest is not None else None
        # Standard output's failures are `OutputFailed`, said by the one rule of every command
        # (`gapwatch.cli.output_failure`: `| head -c 100` exits 0 quietly, as `report | head`
        # does; it said "stdout: Broken pipe", exit 2).
        fb = tmp.file if tmp is not None else cast(BinaryIO, StdoutBytes())
        if args.format == "perfetto":
            summary, said, notes = _perfetto(src, config, argtypes.log_files(args.log), fb,
                                             progress, window)
            fb.flush()
        else:
            ft = io.TextIOWrapper(fb, encoding="utf-8", newline="")
            summary, said, notes = _csv(src, ft, window)
            ft.flush()
            ft.detach()  # the temporary (or stdout) stays open for commit()
        if tmp is not None:
            tmp.commit()
    except RecordingError as exc:
        _discard(tmp)
        say(f"gapwatch export: {exc}")
        return 2
    except OSError as exc:
        _discard(tmp)
        # An unreadable log or recording, or (to a file) an output that cannot be written.
        where = exc.filename or dest or src
        say(f"gapwatch export: {where}: {exc.strerror or exc}")
        return 2
    except BaseException:  # a stop signal (gapwatch.base.quit_early): no hidden .part left
        _discard(tmp)
        raise
    finally:
        STDERR.erase()  # no progress left on the screen
    say(f"gapwatch export: wrote {dest or 'stdout'}: {summary}")
    for line in notes:  # what the PoSt slices were judged by, where this config says other
        say(f"gapwatch export: {line}")
    for line in said:  # the report's warnings, then the reader's lines as `replay` says them
        say(f"gapwatch export: warning: {line}")
    return 0


def _discard(tmp: Replacement | None) -> None:
    if tmp is not None:
        tmp.discard()
