"""`gapwatch replay FILE [--speed X] [--headless] [--log LOG ...]`: a recording or a trace CSV,
through the same session, detector and dashboard as live data.

`--log LOG` reads prover log files whole and merges their events into the replay by time, as
`gapwatch report --log` does (a log that cannot be read: one line, exit 2).

`--speed 1` replays at the recorded pace (the dashboard's default), `--speed 10` ten times faster,
`--speed 0` as fast as possible (the default of `--headless`). `--headless` runs without the UI
until the file ends and prints a short summary; give it `--speed 1` to pace it as recorded (for
`--prometheus`: a Prometheus server scrapes the replayed session as if it were live).
Who calls it: `gapwatch.cli`. Headless never imports Textual.
"""

from __future__ import annotations

import argparse
from collections import Counter

from gapwatch.commands import argtypes
from gapwatch.config import Config
from gapwatch.core.models import Gap, Notice, StateChange
from gapwatch.engine.console import say
from gapwatch.engine.runtime import STARTUP_ERRORS, Runtime, build_runtime
from gapwatch.engine.stop_signals import POLL_S, StopSignals
from gapwatch.engine.summary import gap_counts_text
from gapwatch.engine.terminal import require_terminal
from gapwatch.offline.cut_end import CutBy, cut_by, data_after, idle_at_cut_end
from gapwatch.sources.recording import RecordingError
from gapwatch.sources.time_window import TimeWindow, WindowError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=argtypes.path, metavar="FILE",
                   help=argtypes.RECORDING_HELP)
    p.add_argument("--headless", action="store_true",
                   help="no dashboard: replay until the file ends, as fast as it can unless "
                        "--speed is given, then print a summary")
    argtypes.add_window(p)


def run(args: argparse.Namespace, config: Config) -> int:
    try:
        if not args.headless:
            require_terminal("replay")
        window = argtypes.window_of(args, args.file)  # (only that part read: see `report`)
        rt = build_runtime(config, f"replay:{args.file}", speed=replay_speed(args),
                           log_paths=argtypes.log_files(args.log), window=window)
    except STARTUP_ERRORS as exc:
        say(f"gapwatch replay: {exc}")
        return 2
    except (RecordingError, WindowError) as exc:  # the window's recording, or its times
        say(f"gapwatch replay: {exc}")
        return 2
    if args.headless:
        return _headless(rt, _cut_end_of(rt, args.file, window))
    from gapwatch.ui import start_and_show

    return start_and_show(rt, "replay")


def replay_speed(args: argparse.Namespace) -> float | None:
    """The pace to replay at: `--speed` when given; else as fast as it can headless (nobody
    watches it: a 2 min recording took 2 min of silence), the recorded pace on the dashboard."""
    if args.speed is not None:
        return float(args.speed)
    return 0.0 if args.headless else None


#: Warnings kept for the closing lines of a headless replay.
MAX_WARNINGS_SHOWN = 20


def _cut_end_of(rt: Runtime, path: str, window: TimeWindow | None) -> CutBy | None:
    """What cut the end of the data replayed, as `report` has it (`offline.cut_end`): a
    `--until` before the recording's data ends, else a snapshot's end; None where the data
    ended there (or no recording is replayed)."""
    if rt.replay is None:
        return None
    # The recording's header (the session's own is a new one: a replay may record itself).
    return cut_by(rt.replay.recording.header, data_after(path, window))


def _cut_end_lines(rt: Runtime, cut: CutBy | None) -> list[str]:
    """Each GPU idle at a cut end (`_cut_end_of`), the gap still open there (`offline.cut_end`,
    as `report` says it; the detector retracted it at the end of the data whatever ended it)."""
    from gapwatch.core.detector import GapDetector  # local: keeps `gapwatch --help` light

    det = rt.session.detector
    if cut is None or not isinstance(det, GapDetector):
        return []
    return [f"GPU{t.gpu}: {line}" for t in det.totals()
            if (line := idle_at_cut_end(t, cut)) is not None]


def _headless(rt: Runtime, cut: CutBy | None) -> int:
    states: Counter[str] = Counter()
    warnings: list[str] = []
    n_warnings = 0

    def listen(ev: Gap | StateChange | Notice) -> None:
        # Replay thread: only counts and keeps, no I/O.
        nonlocal n_warnings
        if isinstance(ev, StateChange):
            states[ev.state] += 1
        elif isinstance(ev, Notice) and ev.level != "info":
            n_warnings += 1
            if len(warnings) < MAX_WARNINGS_SHOWN:
                warnings.append(f"{ev.level}: {ev.message}")

    rt.session.subscribe(listen)
    with StopSignals() as stop:
        rt.start()
        try:
            while not stop.requested() and not rt.done.wait(POLL_S):
                pass
        finally:
            rt.stop()
    for line in warnings:
        say(line)
    if n_warnings > len(warnings):
        say(f"... and {n_warnings - len(warnings)} more warnings")
    gaps = gap_counts_text(rt.store.snapshot().gap_tally)
    entered = ", ".join(f"{k} x{n}" for k, n in sorted(states.items())) or "none"
    say(f"gapwatch replay: gaps: {gaps}; states entered: {entered}")
    for line in _cut_end_lines(rt, cut):
        say(f"gapwatch replay: {line}")
    dead = rt.status().dead_threads_text()
    if dead:
        say(f"gapwatch replay: gapwatch's own threads died: {dead}")
        return 1
    return 0
